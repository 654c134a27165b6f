//! `status -o openmetrics`: the inventory as metric families (see
//! `placekit_cli::output::openmetrics`): each node's accelerators by resource, form and DRA
//! class, the nodes of a pool that lack the taint the rest of their pool carries, and how
//! each cluster's read went.

use std::collections::BTreeMap;
use std::time::Duration;

use placekit_cli::inventory::Group;
use placekit_cli::inventory::StatusView;
use placekit_cli::output::openmetrics::{Family, ReadOutcome, read_families, render};
use placekit_core::accelerators::{Form, NodeInventory};

/// One cluster's `status`, for the families: its context under `--contexts`, what was
/// read (`None` when nothing could be), whether the last read succeeded, and how long it
/// took.
pub struct ClusterStatus<'a> {
    pub context: Option<&'a str>,
    pub view: Option<&'a StatusView>,
    /// `placekit_read_up`. The exporter's watches can stop while it still holds what they
    /// last saw: it serves that view with 0 here, so that a series does not vanish (and an
    /// alert's `for:` start again) over a short outage that `placekit_read_up` reports.
    pub read_up: bool,
    pub group_by: Option<&'a str>,
    pub took: Duration,
}

/// The exposition of `status` over one or several clusters.
pub fn status_metrics(clusters: &[ClusterStatus<'_>]) -> String {
    let figure = |name, help| Family::gauge(name, help);
    let mut capacity = figure(
        "placekit_node_accelerator_capacity",
        "Accelerator devices of a node (its capacity; DRA: the devices its drivers publish), by resource, form and DRA device class.",
    );
    let mut allocatable = figure(
        "placekit_node_accelerator_allocatable",
        "Accelerator devices of a node that pods can be given (allocatable).",
    );
    let mut requested = figure(
        "placekit_node_accelerator_requested",
        "Accelerator devices of a node requested by active pods (DRA: allocated to claims).",
    );
    let mut free = figure(
        "placekit_node_accelerator_free",
        "Accelerator devices of a node a new pod can still get.",
    );
    let mut undedicated = figure(
        "placekit_node_undedicated",
        "1 for a node with accelerators that lacks a NoSchedule or NoExecute taint more than half of its pool's accelerator nodes carry (the pool's dedication taint).",
    );
    let mut pool_undedicated = figure(
        "placekit_pool_undedicated_nodes",
        "Accelerator nodes of a pool without the pool's dedication taint (0 when every node has it).",
    );
    let mut reads = Vec::new();
    for cluster in clusters {
        reads.push(ReadOutcome {
            context: cluster.context,
            ok: cluster.read_up,
            seconds: Some(cluster.took.as_secs_f64()),
        });
        let Some(StatusView::Nodes { rows, groups, .. }) = cluster.view else {
            continue;
        };
        let pools = pools(rows, cluster.group_by, groups);
        let context = cluster.context.unwrap_or_default();
        for (node, pool) in rows.iter().zip(&pools) {
            let (pool_label, pool) = pool.clone().unwrap_or_default();
            for accelerator in &node.accelerators {
                if accelerator.form == Form::DraNonAccelerator {
                    continue;
                }
                let form = form_name(accelerator.form);
                let class = accelerator.device_classes.join(",");
                let mut labels: Vec<(&'static str, &str)> = Vec::new();
                if cluster.context.is_some() {
                    labels.push(("context", context));
                }
                labels.extend([
                    ("node", node.primary.name.as_str()),
                    ("pool_label", pool_label.as_str()),
                    ("pool", pool.as_str()),
                    ("resource", accelerator.resource.as_str()),
                    ("form", form),
                    ("class", class.as_str()),
                ]);
                let figures = &accelerator.figures;
                for (family, value) in [
                    (&mut capacity, figures.capacity),
                    (&mut allocatable, figures.allocatable),
                    (&mut requested, figures.requested),
                    (&mut free, figures.free),
                ] {
                    if let Some(milli) = value {
                        family.set(&labels, milli as f64 / 1000.0);
                    }
                }
            }
        }
        for (pool, missing) in dedication(rows, &pools) {
            let (pool_label, pool) = pool;
            let mut labels: Vec<(&'static str, &str)> = Vec::new();
            if cluster.context.is_some() {
                labels.push(("context", context));
            }
            labels.extend([("pool_label", pool_label.as_str()), ("pool", pool.as_str())]);
            pool_undedicated.set(&labels, missing.len() as f64);
            for (node, taint) in &missing {
                let mut labels = labels.clone();
                labels.extend([("node", node.as_str()), ("taint", taint.as_str())]);
                undedicated.set(&labels, 1.0);
            }
        }
    }
    let mut families = vec![
        capacity,
        allocatable,
        requested,
        free,
        undedicated,
        pool_undedicated,
    ];
    families.extend(read_families(&reads));
    render(&families)
}

/// The form as a label value: the JSON report's name for it.
fn form_name(form: Form) -> &'static str {
    match form {
        Form::Whole => "whole",
        Form::TimeSlicing => "timeSlicing",
        Form::Mps => "mps",
        Form::Mig => "mig",
        Form::MigSingle => "migSingle",
        Form::MigMixed => "migMixed",
        Form::Dra => "dra",
        Form::DraNonAccelerator => "draNonAccelerator",
    }
}

/// Each row's pool, `(label key, value)`: its `--group-by` group, else the first of its
/// pool labels whose name says pool (`karpenter.sh/nodepool`, `cloud.google.com/gke-nodepool`,
/// `pool`).
fn pools(
    rows: &[NodeInventory],
    group_by: Option<&str>,
    groups: &[Group],
) -> Vec<Option<(String, String)>> {
    if let Some(key) = group_by {
        return groups
            .iter()
            .flat_map(|g| {
                std::iter::repeat_n(g.value.clone().map(|v| (key.to_string(), v)), g.nodes)
            })
            .chain(std::iter::repeat(None))
            .take(rows.len())
            .collect();
    }
    rows.iter()
        .map(|row| {
            row.primary
                .pool_labels
                .iter()
                .find(|(k, _)| {
                    k.rsplit('/')
                        .next()
                        .is_some_and(|name| name.to_ascii_lowercase().contains("pool"))
                })
                .map(|(k, v)| (k.clone(), v.clone()))
        })
        .collect()
}

/// A pool: its label key and value.
type PoolKey = (String, String);

/// Per pool of at least two accelerator nodes: the taints (NoSchedule or NoExecute) that
/// more than half of them carry, and each node lacking one, with that taint.
fn dedication(
    rows: &[NodeInventory],
    pools: &[Option<PoolKey>],
) -> BTreeMap<PoolKey, Vec<(String, String)>> {
    let mut members: BTreeMap<PoolKey, Vec<&NodeInventory>> = BTreeMap::new();
    for (row, pool) in rows.iter().zip(pools) {
        if let Some(pool) = pool
            && row.has_accelerators()
        {
            members.entry(pool.clone()).or_default().push(row);
        }
    }
    let mut out = BTreeMap::new();
    for (pool, nodes) in members {
        if nodes.len() < 2 {
            continue;
        }
        let mut carried: BTreeMap<&str, usize> = BTreeMap::new();
        for node in &nodes {
            for taint in &node.primary.taints {
                if taint.ends_with(":NoSchedule") || taint.ends_with(":NoExecute") {
                    *carried.entry(taint.as_str()).or_default() += 1;
                }
            }
        }
        let dedication: Vec<&str> = carried
            .into_iter()
            .filter(|(_, n)| *n * 2 > nodes.len())
            .map(|(t, _)| t)
            .collect();
        if dedication.is_empty() {
            continue;
        }
        let missing: Vec<(String, String)> = nodes
            .iter()
            .flat_map(|node| {
                dedication
                    .iter()
                    .filter(|t| !node.primary.taints.iter().any(|have| have == *t))
                    .map(|t| (node.primary.name.clone(), t.to_string()))
            })
            .collect();
        out.insert(pool, missing);
    }
    out
}
