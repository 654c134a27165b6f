//! `kubectl gpu-taint status`: the accelerator inventory read from the cluster in a few paged
//! lists (nodes, active pods, and DRA's device classes, resource slices and claims when the
//! cluster serves them), never a call per node; and its renderings (a table per node and
//! accelerator, `--by namespace|pod`, JSON/YAML).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::accelerators::{self, Form, NodeInventory, ResourceTotal, Scope, cell};
use crate::api::{self, Listed, POD_PAGE};
use crate::connect::Connection;
use crate::dra::{self, DeviceClass, DraInventory, ResourceClaim, ResourceSlice};
use crate::error::CommandError;
use crate::exit;
use crate::fleet::{self, ClusterRead};
use crate::gpu;
use crate::model::quantity::format_milli;
use crate::model::{Node, Pod};
use crate::scheduling::NodeFacts;
use crate::targets::Targets;
use crate::ui::REPORT_API_VERSION;
use crate::ui::{OutputFormat, Ui};

/// Nodes per list page (5,000 nodes in one request).
const NODE_PAGE: u32 = 5_000;
/// DRA objects per list page.
const DRA_PAGE: u32 = 5_000;

/// `--by`: whose requests the breakdown lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    Namespace,
    Pod,
}

/// What `status` was asked.
#[derive(Debug, Clone, Default)]
pub struct StatusOptions {
    /// `--resource`: only this accelerator.
    pub resource: Option<String>,
    /// `--by`: a breakdown of requests instead of the node table.
    pub by: Option<By>,
    /// `-n` (with `--by`): only this namespace's requests; `None` lists every namespace.
    pub namespace: Option<String>,
    /// `-L KEY`: label columns.
    pub label_columns: Vec<String>,
}

/// DRA as read from the cluster: the inventory and what the user must be told about it.
#[derive(Debug, Default)]
pub struct DraRead {
    pub inventory: DraInventory,
    /// Claims, only when asked for (`--by`, why-pending).
    pub claims: Vec<ResourceClaim>,
    /// "cannot list resourceslices: ..." — said once, the rest goes on.
    pub notes: Vec<String>,
    /// RBAC forbids listing ResourceClaims: a pod's claims cannot be judged.
    pub claims_forbidden: bool,
    pub requests: usize,
}

/// Reads device classes, resource slices and (allocated) claims. A cluster that does not
/// serve `resource.k8s.io/v1` has no DRA devices; one where RBAC forbids the lists gets a
/// note. Claims are listed only when slices exist or `keep_claims` asks for them.
pub async fn read_dra(conn: &Connection, keep_claims: bool) -> Result<DraRead, CommandError> {
    let mut out = DraRead::default();
    let mut classes: Vec<DeviceClass> = Vec::new();
    let note = |listed: Listed, out: &mut DraRead, consequence: &str| -> bool {
        match listed {
            Listed::Read(n) => {
                out.requests += n;
                true
            }
            Listed::NotServed => {
                out.requests += 1;
                false
            }
            Listed::Forbidden(message) => {
                out.requests += 1;
                out.notes.push(format!("{message}: {consequence}"));
                false
            }
        }
    };
    let listed = api::for_each_page_if_served(
        &conn.client,
        &format!("{}/deviceclasses", dra::API),
        DRA_PAGE,
        |p: Vec<DeviceClass>| classes.extend(p),
    )
    .await?;
    if !note(listed, &mut out, "DRA devices are not counted") {
        // Not served (no DRA on this cluster), or forbidden (said once).
        return Ok(out);
    }
    let mut slices: Vec<ResourceSlice> = Vec::new();
    let listed = api::for_each_page_if_served(
        &conn.client,
        &format!("{}/resourceslices", dra::API),
        DRA_PAGE,
        |p: Vec<ResourceSlice>| slices.extend(p),
    )
    .await?;
    let slices_read = note(listed, &mut out, "DRA devices are not counted");
    let any_slices = !slices.is_empty();
    out.inventory = DraInventory::new(slices, classes);
    if !slices_read {
        return Ok(out);
    }
    if !any_slices && !keep_claims {
        return Ok(out);
    }
    let mut claims: Vec<ResourceClaim> = Vec::new();
    let inventory = &mut out.inventory;
    let listed = api::for_each_page_if_served(
        &conn.client,
        &format!("{}/resourceclaims", dra::API),
        DRA_PAGE,
        |p: Vec<ResourceClaim>| {
            for claim in p {
                inventory.add_claim(&claim);
                // Only what a breakdown or why-pending needs is kept.
                if keep_claims {
                    claims.push(claim);
                }
            }
        },
    )
    .await?;
    out.claims_forbidden = !note(
        listed,
        &mut out,
        "which DRA devices are allocated is unknown (they show as free)",
    );
    out.claims = claims;
    Ok(out)
}

/// Reads the target nodes as [`Node`]s.
async fn read_nodes(conn: &Connection, targets: &Targets) -> Result<Vec<Node>, CommandError> {
    let mut nodes: Vec<Node> = Vec::new();
    match targets {
        Targets::Names(_) => {
            let found = match api::fetch_node_objects(&conn.client, targets).await {
                // A read-only command: "nothing was changed" would be beside the point.
                Err(CommandError::NodesNotFound(names)) => {
                    return Err(CommandError::Input(format!(
                        "node{} {} not found (check the name with `kubectl get nodes`)",
                        if names.len() == 1 { "" } else { "s" },
                        names
                            .iter()
                            .map(|n| format!("{n:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                other => other?,
            };
            for node in found {
                nodes.push(node_view(&node)?);
            }
        }
        Targets::Selector(s) => {
            api::for_each_page(
                &conn.client,
                "/api/v1/nodes",
                None,
                Some(&s.to_string()),
                NODE_PAGE,
                |p| nodes.extend(p),
            )
            .await?;
        }
        Targets::All => {
            api::for_each_page(&conn.client, "/api/v1/nodes", None, None, NODE_PAGE, |p| {
                nodes.extend(p)
            })
            .await?;
        }
    }
    Ok(nodes)
}

/// A typed Node as the read model.
pub fn node_view(node: &k8s_openapi::api::core::v1::Node) -> Result<Node, CommandError> {
    Node::from_typed(node).map_err(|e| CommandError::Input(e.to_string()))
}

/// One line of `--by namespace|pod`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRow {
    pub namespace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The extended resource, or the DRA driver.
    pub resource: String,
    /// DRA devices allocated to the pod's (or namespace's) claims.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dra: bool,
    #[serde(serialize_with = "crate::model::quantity::units")]
    pub requested: i128,
    /// `--by namespace`: how many pods (or claims, for DRA) it sums.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pods: Option<usize>,
}

/// A `--by` line's identity: namespace, pod and node (per pod), resource.
type BreakdownKey = (String, Option<String>, Option<String>, String);

/// What `status` found on one cluster, before it is rendered.
#[derive(Debug)]
pub struct Status {
    /// "cannot list resourceslices: ..." — said once per cluster; the rest goes on.
    pub notes: Vec<String>,
    pub view: StatusView,
}

/// The two reports of `status`.
#[derive(Debug)]
pub enum StatusView {
    /// No node matched the targets.
    NoNodes,
    /// `--by namespace|pod`: requests, sorted.
    Breakdown(Vec<RequestRow>),
    /// One row per node and accelerator, with totals.
    Nodes {
        /// The resource the flat (legacy) fields count.
        primary: String,
        rows: Vec<NodeInventory>,
        totals: gpu::GpuTotals,
        by_resource: Vec<ResourceTotal>,
    },
}

/// How a cluster's reads are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// One cluster: a named node that is not there, or a `--resource` no node has, is the
    /// user's mistake (exit 2).
    One,
    /// One of several clusters: nodes and resources differ from cluster to cluster, so a
    /// name that is not there is just not listed.
    OfMany,
}

/// `status`: the accelerator inventory of the targets (all nodes by default).
pub async fn status(
    conn: &Connection,
    ui: &Ui,
    targets: &Targets,
    options: &StatusOptions,
) -> Result<u8, CommandError> {
    let found = read_status(conn, targets, options, Reading::One).await?;
    for n in &found.notes {
        ui.warn(n);
    }
    print_status(ui, targets, options, &found.view);
    Ok(exit::SUCCESS)
}

/// Reads what `status` shows for one cluster.
pub async fn read_status(
    conn: &Connection,
    targets: &Targets,
    options: &StatusOptions,
    reading: Reading,
) -> Result<Status, CommandError> {
    let nodes = match (targets, reading) {
        (Targets::Names(names), Reading::OfMany) => {
            let mut all = read_nodes(conn, &Targets::All).await?;
            all.retain(|n| names.contains(&n.metadata.name));
            all
        }
        _ => read_nodes(conn, targets).await?,
    };
    if nodes.is_empty() {
        return Ok(Status {
            notes: Vec::new(),
            view: StatusView::NoNodes,
        });
    }
    let dra = read_dra(conn, options.by.is_some()).await?;
    let notes = dra.notes.clone();
    let resource = options.resource.as_deref();
    if let Some(r) = resource
        && reading == Reading::One
        && dra.inventory.class_serving(r).is_none()
        && let Some(unknown) = gpu::unknown_resource(&nodes, r)
    {
        return Err(CommandError::Input(unknown.message));
    }
    let mut resources = accelerators::accelerator_resources(&nodes);
    if let Some(r) = resource {
        resources.insert(r.to_string());
    }
    let primary = resource.unwrap_or(gpu::DEFAULT_RESOURCE).to_string();
    // The flat legacy fields count the primary resource even when it is not an accelerator
    // of a known vendor.
    resources.insert(primary.clone());
    let mut requested: BTreeMap<String, BTreeMap<String, i128>> = BTreeMap::new();
    let mut breakdown: BTreeMap<BreakdownKey, (i128, usize)> = BTreeMap::new();
    let mut pod_nodes: BTreeMap<(String, String), String> = BTreeMap::new();
    let wanted_ns = options.namespace.as_deref();
    // With NODE... or -l, the breakdown counts the pods on those nodes only.
    let target_nodes: Option<BTreeSet<&str>> = (!matches!(targets, Targets::All))
        .then(|| nodes.iter().map(|n| n.metadata.name.as_str()).collect());
    api::for_each_page(
        &conn.client,
        "/api/v1/pods",
        Some("status.phase!=Succeeded,status.phase!=Failed"),
        None,
        POD_PAGE,
        |page: Vec<Pod>| {
            accelerators::requested_per_node(&page, &resources, &mut requested);
            let Some(by) = options.by else { return };
            for pod in &page {
                let Some(node) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) else {
                    continue;
                };
                if wanted_ns.is_some_and(|ns| ns != pod.metadata.namespace)
                    || target_nodes.as_ref().is_some_and(|t| !t.contains(node))
                {
                    continue;
                }
                pod_nodes.insert(
                    (pod.metadata.namespace.clone(), pod.metadata.name.clone()),
                    node.to_string(),
                );
                for r in &resources {
                    if resource.is_some_and(|x| x != r) || pod.extended_resource_served_by_dra(r) {
                        continue;
                    }
                    let q = pod.effective_request(r);
                    if q == 0 {
                        continue;
                    }
                    let key = match by {
                        By::Namespace => (pod.metadata.namespace.clone(), None, None, r.clone()),
                        By::Pod => (
                            pod.metadata.namespace.clone(),
                            Some(pod.metadata.name.clone()),
                            Some(node.to_string()),
                            r.clone(),
                        ),
                    };
                    let e = breakdown.entry(key).or_default();
                    e.0 += q;
                    e.1 += 1;
                }
            }
        },
    )
    .await?;
    if let Some(by) = options.by {
        let served_driver = resource
            .and_then(|r| dra.inventory.class_serving(r))
            .and_then(DeviceClass::driver);
        let mut rows: Vec<RequestRow> = breakdown
            .into_iter()
            .map(|((namespace, pod, node, resource), (q, n))| RequestRow {
                namespace,
                pod,
                node,
                resource,
                dra: false,
                requested: q,
                pods: (by == By::Namespace).then_some(n),
            })
            .collect();
        // With a node selection, a claim counts when a pod on those nodes holds it.
        let claims = dra.claims.iter().filter(|c| {
            target_nodes.is_none()
                || c.reserved_pods()
                    .any(|p| pod_nodes.contains_key(&(c.metadata.namespace.clone(), p.to_string())))
        });
        rows.extend(dra_request_rows(
            claims,
            by,
            wanted_ns,
            resource.map(|_| served_driver.as_deref()),
            &pod_nodes,
        ));
        rows.sort_by(|a, b| {
            (&a.namespace, &a.pod, a.dra, &a.resource).cmp(&(
                &b.namespace,
                &b.pod,
                b.dra,
                &b.resource,
            ))
        });
        return Ok(Status {
            notes,
            view: StatusView::Breakdown(rows),
        });
    }
    let empty = BTreeMap::new();
    let scope = Scope {
        resource,
        primary: &primary,
        resources: &resources,
        label_columns: &options.label_columns,
    };
    let rows: Vec<NodeInventory> = nodes
        .iter()
        .map(|n| {
            accelerators::node_inventory(
                n,
                requested.get(&n.metadata.name).unwrap_or(&empty),
                &dra.inventory,
                &scope,
            )
        })
        .collect();
    let legacy: Vec<gpu::NodeGpu> = rows.iter().map(|r| r.primary.clone()).collect();
    let totals = gpu::totals(&legacy);
    let mut by_resource = accelerators::totals_by_resource(&rows);
    // DRA devices a node selector or allNodes makes reachable from many nodes are one
    // device each in the totals, not one per node.
    let over = dra.inventory.devices_over(nodes.iter().map(|n| NodeFacts {
        name: &n.metadata.name,
        labels: &n.metadata.labels,
    }));
    for t in by_resource.iter_mut().filter(|t| t.form == Form::Dra) {
        if let Some(d) = over.iter().find(|d| d.driver == t.resource) {
            t.figures = accelerators::Figures::devices(d.total, d.allocated, d.free);
        }
    }
    Ok(Status {
        notes,
        view: StatusView::Nodes {
            primary,
            rows,
            totals,
            by_resource,
        },
    })
}

/// Renders one cluster's `status`.
pub fn print_status(ui: &Ui, targets: &Targets, options: &StatusOptions, view: &StatusView) {
    match view {
        StatusView::NoNodes if !ui.output.is_structured() => {
            // As `kubectl get nodes -l ...` says it.
            eprintln!(
                "No nodes found{}",
                match targets {
                    Targets::Selector(s) => format!(" matching -l {s}"),
                    _ => String::new(),
                }
            );
        }
        StatusView::NoNodes => {}
        StatusView::Breakdown(rows) => {
            print_breakdown(ui, options.by.unwrap_or(By::Namespace), rows, options)
        }
        StatusView::Nodes {
            primary,
            rows,
            totals,
            by_resource,
        } => {
            if ui.output.is_structured() {
                let mut totals = serde_json::to_value(totals).expect("totals serialise");
                totals["byResource"] = serde_json::to_value(by_resource).expect("totals serialise");
                ui.print_structured(&serde_json::json!({
                    "apiVersion": REPORT_API_VERSION,
                    "kind": "GpuInventory",
                    "resource": primary,
                    "nodes": rows,
                    "totals": totals,
                }));
                return;
            }
            let header = inventory_header(ui, options);
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            print!(
                "{}",
                crate::ui::table(&header, &inventory_rows(ui, rows, by_resource, options))
            );
        }
    }
}

/// Renders `status` over several clusters: a leading CONTEXT column, each cluster's rows and
/// totals under its name, then the totals over all of them; `-o json|yaml` tags every item
/// with its context and server and lists each cluster read (with its error, if any).
/// Returns the exit code.
pub fn print_fleet_status(ui: &Ui, options: &StatusOptions, reads: &[ClusterRead<Status>]) -> u8 {
    for r in reads {
        if let Ok(found) = &r.outcome {
            for n in &found.notes {
                ui.warn(&format!("context {}: {n}", r.label()));
            }
        }
    }
    let ok = || {
        reads
            .iter()
            .filter_map(|r| r.outcome.as_ref().ok().map(|s| (r, &s.view)))
    };
    let primary = options
        .resource
        .clone()
        .unwrap_or_else(|| gpu::DEFAULT_RESOURCE.to_string());
    if ui.output.is_structured() {
        // Every cluster read, with its totals and warnings.
        let mut contexts = fleet::contexts_json(reads);
        for (entry, r) in contexts.as_array_mut().into_iter().flatten().zip(reads) {
            if let Ok(found) = &r.outcome {
                if let StatusView::Nodes { totals, .. } = &found.view {
                    entry["totals"] = serde_json::to_value(totals).expect("totals serialise");
                }
                if !found.notes.is_empty() {
                    entry["warnings"] = serde_json::json!(found.notes);
                }
            }
        }
        match options.by {
            Some(by) => {
                let items: Vec<fleet::Tagged<RequestRow>> = ok()
                    .flat_map(|(r, view)| match view {
                        StatusView::Breakdown(rows) => fleet::tagged(r, rows).collect(),
                        _ => Vec::new(),
                    })
                    .collect();
                ui.print_structured(&fleet::Report {
                    head: serde_json::json!({
                        "apiVersion": REPORT_API_VERSION,
                        "kind": "GpuRequests",
                        "by": match by { By::Namespace => "namespace", By::Pod => "pod" },
                        "namespace": options.namespace,
                        "contexts": contexts,
                    }),
                    lists: vec![("items", items)],
                });
            }
            None => {
                let mut nodes = Vec::new();
                let mut legacy = Vec::new();
                let mut per_cluster = Vec::new();
                for (r, view) in ok() {
                    if let StatusView::Nodes {
                        rows,
                        totals,
                        by_resource,
                        ..
                    } = view
                    {
                        nodes.extend(fleet::tagged(r, rows));
                        legacy.push(totals);
                        per_cluster.push(by_resource.as_slice());
                    }
                }
                let mut totals =
                    serde_json::to_value(gpu::GpuTotals::sum(legacy)).expect("totals serialise");
                totals["byResource"] =
                    serde_json::to_value(accelerators::merge_totals(per_cluster))
                        .expect("totals serialise");
                ui.print_structured(&fleet::Report {
                    head: serde_json::json!({
                        "apiVersion": REPORT_API_VERSION,
                        "kind": "GpuInventory",
                        "resource": primary,
                        "totals": totals,
                        "contexts": contexts,
                    }),
                    lists: vec![("nodes", nodes)],
                });
            }
        }
        fleet::warn_failures(ui, reads);
        return fleet::exit_code(reads, |_| exit::SUCCESS);
    }
    let mut parts: Vec<(String, Vec<Vec<String>>)> = Vec::new();
    let mut empty: Vec<String> = Vec::new();
    let header: Vec<String>;
    match options.by {
        Some(by) => {
            header = breakdown_table(by, &[])
                .0
                .iter()
                .map(|h| h.to_string())
                .collect();
            for (r, view) in ok() {
                match view {
                    StatusView::Breakdown(rows) if !rows.is_empty() => {
                        parts.push((r.label(), breakdown_table(by, rows).1))
                    }
                    _ => empty.push(r.label()),
                }
            }
        }
        None => {
            header = inventory_header(ui, options);
            let mut per_cluster = Vec::new();
            for (r, view) in ok() {
                match view {
                    StatusView::Nodes {
                        rows, by_resource, ..
                    } => {
                        parts.push((r.label(), inventory_rows(ui, rows, by_resource, options)));
                        per_cluster.push(by_resource.as_slice());
                    }
                    _ => empty.push(r.label()),
                }
            }
            if parts.len() > 1 {
                let overall = accelerators::merge_totals(per_cluster);
                let total_rows: Vec<Vec<String>> = inventory_rows(ui, &[], &overall, options);
                parts.push((fleet::ALL.to_string(), total_rows));
            }
        }
    }
    for label in &empty {
        match (options.by, &options.namespace) {
            (Some(_), Some(ns)) => {
                eprintln!("context {label}: no accelerator requests found in {ns} namespace.")
            }
            (Some(_), None) => eprintln!("context {label}: no accelerator requests found."),
            (None, _) => eprintln!("context {label}: no nodes found"),
        }
    }
    if !parts.is_empty() {
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        print!("{}", fleet::context_table(&header, &parts));
    }
    fleet::warn_failures(ui, reads);
    fleet::exit_code(reads, |_| exit::SUCCESS)
}

/// DRA devices per namespace or pod, from the allocated claims (a pod's claims are those
/// reserved for it). `driver_filter`: `Some(x)` with `--resource` (only the driver of the
/// class serving it, none when no class does).
fn dra_request_rows<'a>(
    claims: impl IntoIterator<Item = &'a ResourceClaim>,
    by: By,
    namespace: Option<&str>,
    driver_filter: Option<Option<&str>>,
    pod_nodes: &BTreeMap<(String, String), String>,
) -> Vec<RequestRow> {
    let mut sums: BTreeMap<(String, Option<String>, String), (usize, usize)> = BTreeMap::new();
    for claim in claims {
        let Some(allocation) = &claim.status.allocation else {
            continue;
        };
        if namespace.is_some_and(|ns| ns != claim.metadata.namespace) {
            continue;
        }
        let mut per_driver: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &allocation.devices.results {
            if driver_filter.is_some_and(|d| d != Some(r.driver.as_str())) {
                continue;
            }
            *per_driver.entry(r.driver.as_str()).or_default() += 1;
        }
        let owners: Vec<Option<String>> = match by {
            By::Namespace => vec![None],
            By::Pod => claim.reserved_pods().map(|p| Some(p.to_string())).collect(),
        };
        for owner in owners {
            for (driver, n) in &per_driver {
                let e = sums
                    .entry((
                        claim.metadata.namespace.clone(),
                        owner.clone(),
                        driver.to_string(),
                    ))
                    .or_default();
                e.0 += n;
                e.1 += 1;
            }
        }
    }
    sums.into_iter()
        .map(|((namespace, pod, driver), (devices, claims))| RequestRow {
            node: pod
                .as_ref()
                .and_then(|p| pod_nodes.get(&(namespace.clone(), p.clone())).cloned()),
            namespace,
            pod,
            resource: driver,
            dra: true,
            requested: devices as i128 * 1000,
            pods: (by == By::Namespace).then_some(claims),
        })
        .collect()
}

fn print_breakdown(ui: &Ui, by: By, rows: &[RequestRow], options: &StatusOptions) {
    if ui.output.is_structured() {
        ui.print_structured(&serde_json::json!({
            "apiVersion": REPORT_API_VERSION,
            "kind": "GpuRequests",
            "by": match by { By::Namespace => "namespace", By::Pod => "pod" },
            "namespace": options.namespace,
            "items": rows,
        }));
        return;
    }
    if rows.is_empty() {
        // As `kubectl get pods -n NS` says it.
        match &options.namespace {
            Some(ns) => eprintln!("No accelerator requests found in {ns} namespace."),
            None => eprintln!("No accelerator requests found."),
        }
        return;
    }
    let (header, rows) = breakdown_table(by, rows);
    print!("{}", crate::ui::table(&header, &rows));
}

/// The `--by` table's header and rows.
fn breakdown_table(by: By, rows: &[RequestRow]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let resource = |r: &RequestRow| {
        if r.dra {
            format!("{} (DRA)", r.resource)
        } else {
            r.resource.clone()
        }
    };
    match by {
        By::Namespace => (
            vec!["NAMESPACE", "RESOURCE", "REQUESTED", "PODS"],
            rows.iter()
                .map(|r| {
                    vec![
                        r.namespace.clone(),
                        resource(r),
                        format_milli(r.requested),
                        r.pods.unwrap_or(0).to_string(),
                    ]
                })
                .collect(),
        ),
        By::Pod => (
            vec!["NAMESPACE", "POD", "NODE", "RESOURCE", "REQUESTED"],
            rows.iter()
                .map(|r| {
                    vec![
                        r.namespace.clone(),
                        r.pod.clone().unwrap_or_default(),
                        r.node.clone().unwrap_or_else(|| "-".into()),
                        resource(r),
                        format_milli(r.requested),
                    ]
                })
                .collect(),
        ),
    }
}

/// The upper-cased last segment of a label key, as kubectl's `-L` heads its columns.
fn label_header(key: &str) -> String {
    key.rsplit('/').next().unwrap_or(key).to_ascii_uppercase()
}

/// The node table's header: `-o wide` adds the pool labels, `-L` a column per key.
fn inventory_header(ui: &Ui, options: &StatusOptions) -> Vec<String> {
    let wide = ui.output == OutputFormat::Wide;
    let mut header: Vec<String> = [
        "NAME",
        "RESOURCE",
        "CAPACITY",
        "ALLOCATABLE",
        "REQUESTED",
        "FREE",
        "FORM",
        "ZONE",
        "TAINTS",
    ]
    .map(String::from)
    .to_vec();
    if wide {
        header.push("POOL LABELS".into());
    }
    header.extend(options.label_columns.iter().map(|k| label_header(k)));
    header.push("WARNINGS".into());
    header
}

/// The node table's rows: one per node and accelerator, then the totals per resource.
fn inventory_rows(
    ui: &Ui,
    rows: &[NodeInventory],
    totals: &[ResourceTotal],
    options: &StatusOptions,
) -> Vec<Vec<String>> {
    let wide = ui.output == OutputFormat::Wide;
    let dash = || "-".to_string();
    let mut table_rows: Vec<Vec<String>> = Vec::new();
    for node in rows {
        let p = &node.primary;
        let common = |row: &mut Vec<String>| {
            row.push(p.zone.clone().unwrap_or_else(dash));
            row.push(if p.taints.is_empty() {
                dash()
            } else {
                p.taints.join(",")
            });
            if wide {
                row.push(if p.pool_labels.is_empty() {
                    dash()
                } else {
                    p.pool_labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                });
            }
            for k in &options.label_columns {
                row.push(node.labels.get(k).cloned().flatten().unwrap_or_default());
            }
        };
        if node.accelerators.is_empty() {
            let mut row = vec![
                p.name.clone(),
                options.resource.clone().unwrap_or_else(dash),
                dash(),
                dash(),
                format_milli(p.requested),
                dash(),
                dash(),
            ];
            common(&mut row);
            row.push(p.warnings.join("; "));
            table_rows.push(row);
            continue;
        }
        // Node-level warnings (cordoned, NotReady) go on the node's first row; each row
        // says its own resource's.
        let node_warnings: Vec<String> = p
            .warnings
            .iter()
            .filter(|w| !w.starts_with("allocatable ") && !w.starts_with("requested exceeds"))
            .cloned()
            .collect();
        for (i, a) in node.accelerators.iter().enumerate() {
            let mut row = vec![
                p.name.clone(),
                a.resource_text(),
                cell(a.figures.capacity),
                cell(a.figures.allocatable),
                cell(a.figures.requested),
                cell(a.figures.free),
                a.form_text(),
            ];
            common(&mut row);
            let mut warnings: Vec<String> = if i == 0 {
                node_warnings.clone()
            } else {
                Vec::new()
            };
            if let (Some(c), Some(al)) = (a.figures.capacity, a.figures.allocatable)
                && al < c
            {
                warnings.push(format!(
                    "allocatable {} < capacity {}",
                    format_milli(al),
                    format_milli(c)
                ));
            }
            if a.figures.free.is_some_and(|f| f < 0) {
                warnings.push("requested exceeds allocatable".into());
            }
            row.push(warnings.join("; "));
            table_rows.push(row);
        }
    }
    for t in totals {
        let mut row = vec![
            format!("TOTAL ({})", crate::ui::count(t.nodes, "node")),
            if t.form == Form::Dra {
                format!("{} (DRA)", t.resource)
            } else {
                t.resource.clone()
            },
            cell(t.figures.capacity),
            cell(t.figures.allocatable),
            cell(t.figures.requested),
            cell(t.figures.free),
            t.physical
                .map(|p| format!("{p} physical"))
                .unwrap_or_default(),
            String::new(),
            String::new(),
        ];
        if wide {
            row.push(String::new());
        }
        row.extend(options.label_columns.iter().map(|_| String::new()));
        row.push(String::new());
        table_rows.push(row);
    }
    table_rows
}

/// Which accelerators a node has, in words, for the `dedicate` preflight: `None` when it
/// has none of any kind.
pub fn describe_accelerators(inventory: &NodeInventory) -> Option<String> {
    if inventory.accelerators.is_empty() {
        return None;
    }
    Some(
        inventory
            .accelerators
            .iter()
            .map(|a| {
                let form = a.form_text();
                let figures = format!(
                    "capacity {}, allocatable {}",
                    cell(a.figures.capacity),
                    cell(a.figures.allocatable)
                );
                if a.form == Form::Whole {
                    format!("{} {figures}", a.resource_text())
                } else {
                    format!("{} {figures} ({form})", a.resource_text())
                }
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The accelerator resources to count for nodes (those they carry, plus `extra`).
pub fn resources_for(nodes: &[Node], extra: Option<&str>) -> BTreeSet<String> {
    let mut resources = accelerators::accelerator_resources(nodes);
    resources.extend(extra.map(str::to_string));
    resources
}
