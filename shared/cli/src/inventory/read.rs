//! Reading the inventory: nodes, active pods and DRA objects in a few paged lists, reduced
//! page by page to what is kept per node.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::CommandError;
use crate::output::v1::{NodeGroup, RequestRow};
use placekit_client::api::{self, Listed, POD_PAGE};
use placekit_client::connect::Connection;
use placekit_client::error::ClientError;
use placekit_client::targets::Targets;
use placekit_core::accelerators::{self, NodeInventory, ResourceTotal, Scope};
use placekit_core::dra::DraInventory;
use placekit_core::gpu;
use placekit_core::model::dra::{self, DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice};
use placekit_core::model::{Node, Pod};
use placekit_core::scheduling::NodeFacts;

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
    /// `--class`: only the DRA devices this DeviceClass selects.
    pub class: Option<String>,
    /// `--by`: a breakdown of requests instead of the node table.
    pub by: Option<By>,
    /// `-n` (with `--by`): only this namespace's requests; `None` lists every namespace.
    pub namespace: Option<String>,
    /// `-L KEY`: label columns.
    pub label_columns: Vec<String>,
    /// `--sort-by=JSONPATH`: the nodes ordered by a field of their JSON (`.free`, `.name`).
    pub sort_by: Option<placekit_core::jsonpath::SortKey>,
    /// `--free-only`: only nodes with a free accelerator.
    pub free_only: bool,
    /// `--group-by KEY`: the nodes grouped by a label's value, each group with its totals.
    pub group_by: Option<String>,
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

/// Reads device classes, resource slices and (allocated) claims, in the newest version of
/// `resource.k8s.io` the server serves (v1, else v1beta2 on 1.33, else v1beta1 on 1.32:
/// the first a list of DeviceClasses answers, so a v1 cluster costs no extra request), all
/// converted to v1's shape. A cluster that serves none has no DRA devices; one where RBAC
/// forbids the lists gets a note. Claims are listed only when slices exist or
/// `keep_claims` asks for them.
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
    let mut served = None;
    let mut listed = Listed::NotServed;
    for version in dra::VERSIONS {
        listed = api::for_each_page_if_served(
            &conn.client,
            &format!("/apis/resource.k8s.io/{version}/deviceclasses"),
            DRA_PAGE,
            |p: Vec<DeviceClass>| classes.extend(p),
        )
        .await?;
        if !matches!(listed, Listed::NotServed) {
            served = Some(version);
            break;
        }
        // Each version not served costs its request; the last is counted by `note`.
        if Some(&version) != dra::VERSIONS.last() {
            out.requests += 1;
        }
    }
    let api_path = format!("/apis/resource.k8s.io/{}", served.unwrap_or("v1"));
    if !note(listed, &mut out, "DRA devices are not counted") {
        // Not served (no DRA on this cluster), or forbidden (said once).
        return Ok(out);
    }
    let mut slices: Vec<ResourceSlice> = Vec::new();
    let listed = api::for_each_page_if_served(
        &conn.client,
        &format!("{api_path}/resourceslices"),
        DRA_PAGE,
        |p: Vec<ResourceSlice>| slices.extend(p.into_iter().map(ResourceSlice::into_current)),
    )
    .await?;
    let slices_read = note(listed, &mut out, "DRA devices are not counted");
    let any_slices = !slices.is_empty();
    out.inventory = DraInventory::new(slices, classes);
    if !slices_read {
        return Ok(out);
    }
    if any_slices {
        // Taints an admin or a driver puts on devices through rules: the scheduler
        // allocates a tainted device only to a claim that tolerates it.
        // Served as v1 once GA (1.37), v1beta2 in 1.36, v1alpha3 behind a gate before.
        let mut rules: Vec<DeviceTaintRule> = Vec::new();
        for version in ["v1", "v1beta2", "v1alpha3"] {
            let listed = api::for_each_page_if_served(
                &conn.client,
                &format!("/apis/resource.k8s.io/{version}/devicetaintrules"),
                DRA_PAGE,
                |p: Vec<DeviceTaintRule>| rules.extend(p),
            )
            .await?;
            let not_served = matches!(listed, Listed::NotServed);
            note(
                listed,
                &mut out,
                "devices a DeviceTaintRule taints may show as free",
            );
            if !not_served {
                break;
            }
        }
        out.inventory.apply_taint_rules(rules);
    }
    if !any_slices && !keep_claims {
        return Ok(out);
    }
    let mut claims: Vec<ResourceClaim> = Vec::new();
    let inventory = &mut out.inventory;
    let listed = api::for_each_page_if_served(
        &conn.client,
        &format!("{api_path}/resourceclaims"),
        DRA_PAGE,
        |p: Vec<ResourceClaim>| {
            for claim in p.into_iter().map(ResourceClaim::into_current) {
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
                Err(ClientError::NodesNotFound(names)) => {
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
        /// With `--group-by`: the groups, in the order of `rows` (each a run of them).
        groups: Vec<Group>,
    },
}

/// One `--group-by` group as read: the nodes whose label has one value (or lacks it), and
/// their totals per resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The label's value; `None` for the nodes without the label.
    pub value: Option<String>,
    pub nodes: usize,
    pub by_resource: Vec<ResourceTotal>,
}

impl From<&Group> for NodeGroup {
    fn from(group: &Group) -> Self {
        NodeGroup {
            value: group.value.clone(),
            nodes: group.nodes,
            by_resource: group.by_resource.iter().map(Into::into).collect(),
        }
    }
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

/// Reads what `status` shows for one cluster.
///
/// Long on purpose: the nodes, DRA's objects and the active pods are read in that order and
/// folded page by page into what is kept per node; the steps share that state.
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
    let mut notes = dra.notes.clone();
    notes.extend(
        dra.inventory
            .taint_rule_effects()
            .iter()
            .filter_map(placekit_core::dra::taint_rule_note),
    );
    if let Some(class) = options.class.as_deref()
        && dra.inventory.class(class).is_none()
    {
        let known: Vec<&str> = dra
            .inventory
            .classes()
            .iter()
            .map(|c| c.metadata.name.as_str())
            .collect();
        notes.push(
            match placekit_core::suggest::nearest_key(class, known.iter().copied()) {
                Some(near) => {
                    format!("--class {class}: no DeviceClass of that name (did you mean {near}?)")
                }
                None if known.is_empty() => {
                    format!("--class {class}: the cluster has no DeviceClass")
                }
                None => format!(
                    "--class {class}: no DeviceClass of that name (there are: {})",
                    known.join(", ")
                ),
            },
        );
    }
    let resource = options.resource.as_deref();
    if let Some(r) = resource
        && reading == Reading::One
        && dra.inventory.class_serving(r).is_none()
        && let Some(unknown) = gpu::unknown_resource(&nodes, r)
    {
        return Err(CommandError::Input(unknown.message));
    }
    let (resources, _) = counted_resources(&nodes, options);
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
    Ok(Status {
        notes,
        view: nodes_view(&nodes, &requested, &dra.inventory, options)?,
    })
}

/// The accelerator resources `status` counts on `nodes`, and the one its flat (legacy)
/// fields count.
pub fn counted_resources(nodes: &[Node], options: &StatusOptions) -> (BTreeSet<String>, String) {
    let resource = options.resource.as_deref();
    let mut resources = accelerators::accelerator_resources(nodes);
    if let Some(r) = resource {
        resources.insert(r.to_string());
    }
    let primary = resource.unwrap_or(gpu::DEFAULT_RESOURCE).to_string();
    // The flat legacy fields count the primary resource even when it is not an accelerator
    // of a known vendor.
    resources.insert(primary.clone());
    (resources, primary)
}

/// The node table of `status` from what was read: a row group per node, the totals, and
/// the totals per resource (pure).
pub fn nodes_view(
    nodes: &[Node],
    requested: &BTreeMap<String, BTreeMap<String, i128>>,
    dra: &DraInventory,
    options: &StatusOptions,
) -> Result<StatusView, CommandError> {
    let (resources, primary) = counted_resources(nodes, options);
    let empty = BTreeMap::new();
    let scope = Scope {
        resource: options.resource.as_deref(),
        class: options.class.as_deref(),
        primary: &primary,
        resources: &resources,
        label_columns: &options.label_columns,
    };
    // Each node with what it is grouped and ordered by.
    let mut kept: Vec<(Option<String>, NodeInventory, &Node)> = nodes
        .iter()
        .map(|n| {
            let group = options
                .group_by
                .as_ref()
                .and_then(|k| n.metadata.labels.get(k).cloned());
            let inventory = accelerators::node_inventory(
                n,
                requested.get(&n.metadata.name).unwrap_or(&empty),
                dra,
                &scope,
            );
            (group, inventory, n)
        })
        .filter(|(_, inventory, _)| !options.free_only || inventory.has_free_accelerator())
        .collect();
    if let Some(key) = &options.sort_by {
        let json: Vec<serde_json::Value> = kept
            .iter()
            .map(|(_, r, _)| serde_json::to_value(r).expect("a node's inventory serialises"))
            .collect();
        if !json.is_empty() && !key.found_in(&json) {
            // As kubectl refuses a key no object has.
            return Err(CommandError::Input(format!(
                "--sort-by {}: no node has that field (the fields are those of -o json's nodes[], e.g. .name, .free, .zone, .accelerators[0].free)",
                key.as_str()
            )));
        }
        let mut order: Vec<usize> = (0..kept.len()).collect();
        order.sort_by(|&a, &b| key.compare(&json[a], &json[b]));
        let mut slots: Vec<Option<(Option<String>, NodeInventory, &Node)>> =
            kept.into_iter().map(Some).collect();
        kept = order.into_iter().filter_map(|i| slots[i].take()).collect();
    }
    if options.group_by.is_some() {
        // Stable: the sort order holds within a group; nodes without the label last.
        kept.sort_by(|a, b| match (&a.0, &b.0) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
    }
    let mut groups: Vec<Group> = Vec::new();
    if options.group_by.is_some() {
        for (value, _, _) in &kept {
            match groups.last_mut() {
                Some(g) if &g.value == value => g.nodes += 1,
                _ => groups.push(Group {
                    value: value.clone(),
                    nodes: 1,
                    by_resource: Vec::new(),
                }),
            }
        }
        let mut start = 0;
        for g in &mut groups {
            let members: Vec<NodeInventory> = kept[start..start + g.nodes]
                .iter()
                .map(|(_, r, _)| r.clone())
                .collect();
            g.by_resource = accelerators::totals_by_resource(&members);
            start += g.nodes;
        }
    }
    let nodes: Vec<&Node> = kept.iter().map(|(_, _, n)| *n).collect();
    let rows: Vec<NodeInventory> = kept.into_iter().map(|(_, r, _)| r).collect();
    let legacy: Vec<gpu::NodeGpu> = rows.iter().map(|r| r.primary.clone()).collect();
    let totals = gpu::totals(&legacy);
    let mut by_resource = accelerators::totals_by_resource(&rows);
    // DRA devices a node selector or allNodes makes reachable from many nodes are one
    // device each in the totals, not one per node.
    let over = dra.devices_over(nodes.iter().map(|n| NodeFacts {
        name: &n.metadata.name,
        labels: &n.metadata.labels,
    }));
    for t in by_resource.iter_mut().filter(|t| t.form.is_dra()) {
        if let Some(d) = over
            .iter()
            .find(|d| d.driver == t.resource && d.classes == t.device_classes)
        {
            t.figures = accelerators::Figures::devices(d.total, d.allocated, d.free);
        }
    }
    Ok(StatusView::Nodes {
        primary,
        rows,
        totals,
        by_resource,
        groups,
    })
}

/// The accelerator resources to count for nodes (those they carry, plus `extra`).
pub fn resources_for(nodes: &[Node], extra: Option<&str>) -> BTreeSet<String> {
    let mut resources = accelerators::accelerator_resources(nodes);
    resources.extend(extra.map(str::to_string));
    resources
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
