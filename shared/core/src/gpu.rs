//! GPU inventory and preflight, as pure functions over the read model ([`crate::model`]):
//! per-node capacity/allocatable/requested/free of one resource, and the pods a new taint
//! would leave untolerated.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::quantity::{format_milli, optional_units, parse_quantity_milli, units};
use crate::model::{Node, Pod};

use crate::scheduling::tolerates;
use crate::syntax::{Taint, TaintEffect};

/// The default GPU resource.
pub const DEFAULT_RESOURCE: &str = "nvidia.com/gpu";

/// One row of `gpu-taint status`. Quantities are kept in thousandths and serialised in units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeGpu {
    pub name: String,
    /// `None` (JSON `null`): the resource is not in the node's capacity.
    #[serde(serialize_with = "optional_units")]
    pub capacity: Option<i128>,
    #[serde(serialize_with = "optional_units")]
    pub allocatable: Option<i128>,
    #[serde(serialize_with = "units")]
    pub requested: i128,
    /// allocatable - requested (negative when overcommitted).
    #[serde(serialize_with = "units")]
    pub free: i128,
    pub zone: Option<String>,
    /// Non-system taints (not `node.kubernetes.io/*` / `node.cloudprovider.kubernetes.io/*`).
    pub taints: Vec<String>,
    /// Labels whose key mentions a pool or dedication.
    pub pool_labels: BTreeMap<String, String>,
    pub warnings: Vec<String>,
}

/// Totals of a status table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuTotals {
    pub nodes: usize,
    #[serde(serialize_with = "units")]
    pub capacity: i128,
    #[serde(serialize_with = "units")]
    pub allocatable: i128,
    #[serde(serialize_with = "units")]
    pub requested: i128,
    #[serde(serialize_with = "units")]
    pub free: i128,
}

fn is_pool_key(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key).to_ascii_lowercase();
    name.contains("pool") || name.contains("dedicated")
}

fn is_system_taint(t: &Taint) -> bool {
    t.key.starts_with("node.kubernetes.io/")
        || t.key.starts_with("node.cloudprovider.kubernetes.io/")
}

/// Sums the effective requests of active pods per node name.
pub fn requested_per_node<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    resource: &str,
) -> BTreeMap<String, i128> {
    let mut out: BTreeMap<String, i128> = BTreeMap::new();
    for pod in pods {
        if !pod.is_active() {
            continue;
        }
        if let Some(node) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
            let r = pod.effective_request(resource);
            if r != 0 {
                *out.entry(node.to_string()).or_default() += r;
            }
        }
    }
    out
}

/// One node's row.
pub fn node_gpu(node: &Node, requested: i128, resource: &str) -> NodeGpu {
    let q = |m: &BTreeMap<String, String>| m.get(resource).and_then(|v| parse_quantity_milli(v));
    let capacity = q(&node.status.capacity);
    let allocatable = q(&node.status.allocatable);
    let mut warnings = Vec::new();
    match (capacity, allocatable) {
        (None, _) => warnings.push(format!(
            "no {resource} capacity: not a GPU node, or its device plugin has not registered it"
        )),
        (Some(c), Some(a)) if a < c => warnings.push(format!(
            "allocatable {} < capacity {}",
            format_milli(a),
            format_milli(c)
        )),
        _ => {}
    }
    if node.spec.unschedulable {
        warnings.push("cordoned (unschedulable)".into());
    }
    let ready = node.status.conditions.iter().find(|c| c.type_ == "Ready");
    if ready.is_some_and(|c| c.status != "True") {
        warnings.push("NotReady".into());
    }
    if let Some(mig) = crate::label_controllers::mig_reconfiguration(&node.metadata.labels) {
        warnings.push(mig);
    }
    if allocatable.is_some_and(|a| requested > a) {
        warnings.push("requested exceeds allocatable".into());
    }
    NodeGpu {
        name: node.metadata.name.clone(),
        capacity,
        allocatable,
        requested,
        free: allocatable.unwrap_or(0) - requested,
        zone: node
            .metadata
            .labels
            .get("topology.kubernetes.io/zone")
            .cloned(),
        taints: node
            .spec
            .taints
            .iter()
            .filter(|t| !is_system_taint(t))
            .map(ToString::to_string)
            .collect(),
        pool_labels: node
            .metadata
            .labels
            .iter()
            .filter(|(k, _)| is_pool_key(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        warnings,
    }
}

/// Totals over rows (nodes without the resource count as zero).
pub fn totals(rows: &[NodeGpu]) -> GpuTotals {
    GpuTotals {
        nodes: rows.len(),
        capacity: rows.iter().filter_map(|r| r.capacity).sum(),
        allocatable: rows.iter().filter_map(|r| r.allocatable).sum(),
        requested: rows.iter().map(|r| r.requested).sum(),
        // Free as in the rows: a node without the resource shows no free amount, and its
        // (impossible) requests must not make the total negative.
        free: rows
            .iter()
            .filter(|r| r.capacity.is_some())
            .map(|r| r.free)
            .sum(),
    }
}

impl GpuTotals {
    /// The sum of several clusters' totals.
    pub fn sum<'a>(totals: impl IntoIterator<Item = &'a GpuTotals>) -> GpuTotals {
        totals
            .into_iter()
            .fold(GpuTotals::default(), |a, t| GpuTotals {
                nodes: a.nodes + t.nodes,
                capacity: a.capacity + t.capacity,
                allocatable: a.allocatable + t.allocatable,
                requested: a.requested + t.requested,
                free: a.free + t.free,
            })
    }
}

/// A resource that no node of a command's targets has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownResource {
    /// What to tell the user.
    pub message: String,
    /// The closest extended resource the nodes do have: `resource` is probably a typo.
    pub near: Option<String>,
}

/// When no node of `nodes` has `resource` at all: why, with the closest extended resource
/// the nodes do have (a typo such as `nvidia.com/gpus`), instead of blaming every node's
/// device plugin.
pub fn unknown_resource(nodes: &[Node], resource: &str) -> Option<UnknownResource> {
    if nodes.is_empty()
        || nodes.iter().any(|n| {
            n.status.capacity.contains_key(resource) || n.status.allocatable.contains_key(resource)
        })
    {
        return None;
    }
    let mut offered: Vec<&str> = nodes
        .iter()
        .flat_map(|n| n.status.capacity.keys())
        .map(String::as_str)
        .filter(|k| k.contains('/') && !k.starts_with("hugepages-"))
        .collect();
    offered.sort_unstable();
    offered.dedup();
    let near = crate::suggest::nearest_key(resource, offered.iter().copied());
    let hint = match near {
        Some(near) => format!(": did you mean {near}?"),
        None if offered.is_empty() => {
            " (they offer no extended resource: is the device plugin installed?)".into()
        }
        None => format!(" (they offer {})", offered.join(", ")),
    };
    Some(UnknownResource {
        message: format!(
            "{resource} is on none of the {} listed{hint}",
            crate::text::count(nodes.len(), "node")
        ),
        near: near.map(str::to_string),
    })
}

/// A pod on a node that a new taint does not tolerate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AffectedPod {
    pub namespace: String,
    pub name: String,
    pub node: String,
    /// A DaemonSet's pod: evicted by a NoExecute taint it does not tolerate like any other
    /// (the NVIDIA device plugin tolerates only `nvidia.com/gpu`), and not recreated there.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub daemon_set: bool,
}

/// The active pods bound to `node` that do not tolerate `taint`. Mirror pods are left out
/// (the kubelet runs their static pods whatever the taints). DaemonSet pods count only when
/// the taint evicts: a NoSchedule taint leaves running pods alone, and node agents are not
/// the workloads a NoSchedule dedication is about; a NoExecute taint evicts them too.
pub fn untolerating_pods(pods: &[Pod], node: &str, taint: &Taint) -> Vec<AffectedPod> {
    pods.iter()
        .filter(|p| p.is_active() && p.spec.node_name.as_deref() == Some(node))
        .filter(|p| !p.is_mirror_pod() && (evicts(taint) || !p.is_daemonset_pod()))
        .filter(|p| !p.spec.tolerations().iter().any(|t| tolerates(t, taint)))
        .map(|p| AffectedPod {
            namespace: p.metadata.namespace.clone(),
            name: p.metadata.name.clone(),
            node: node.to_string(),
            daemon_set: p.is_daemonset_pod(),
        })
        .collect()
}

/// The pods on `node` that `taint` evicts (NoExecute, not tolerated), as views.
pub fn evicted_pods<'a>(pods: &'a [Pod], node: &str, taint: &Taint) -> Vec<&'a Pod> {
    if !evicts(taint) {
        return Vec::new();
    }
    pods.iter()
        .filter(|p| p.is_active() && p.spec.node_name.as_deref() == Some(node))
        .filter(|p| !p.is_mirror_pod())
        .filter(|p| !p.spec.tolerations().iter().any(|t| tolerates(t, taint)))
        .collect()
}

/// Whether a taint evicts pods that do not tolerate it.
pub fn evicts(taint: &Taint) -> bool {
    taint.effect == TaintEffect::NoExecute
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ml"}, "spec": spec, "status": {"phase": "Running"}})).unwrap()
    }

    #[test]
    fn node_rows_and_totals() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "gpu-1", "labels": {"topology.kubernetes.io/zone": "zone-a", "ops.example.com.node-restriction.kubernetes.io/llm-pool": "online"}},
            "spec": {"unschedulable": true, "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "7"}, "conditions": [{"type": "Ready", "status": "False"}]}
        }))
        .unwrap();
        let pods = vec![
            pod(json!({"nodeName": "gpu-1", "containers": [{"resources": {"requests": {"nvidia.com/gpu": "2"}}}]})),
            serde_json::from_value(json!({"spec": {"nodeName": "gpu-1", "containers": [{"resources": {"requests": {"nvidia.com/gpu": "3"}}}]}, "status": {"phase": "Succeeded"}})).unwrap(),
        ];
        let requested = requested_per_node(&pods, "nvidia.com/gpu");
        let row = node_gpu(&node, requested["gpu-1"], "nvidia.com/gpu");
        assert_eq!(
            (row.capacity, row.allocatable, row.requested, row.free),
            (Some(8000), Some(7000), 2000, 5000)
        );
        assert_eq!(row.taints, vec!["dedicated=gpu:NoSchedule"]);
        assert_eq!(row.zone.as_deref(), Some("zone-a"));
        assert_eq!(row.pool_labels.len(), 1);
        assert_eq!(
            row.warnings,
            vec![
                "allocatable 7 < capacity 8",
                "cordoned (unschedulable)",
                "NotReady"
            ]
        );
        let no_plugin: Node = serde_json::from_value(json!({"metadata": {"name": "cpu"}})).unwrap();
        let cpu = node_gpu(&no_plugin, 0, "nvidia.com/gpu");
        assert_eq!(cpu.capacity, None);
        assert!(cpu.warnings[0].contains("device plugin has not registered"));
        assert_eq!(
            totals(&[row, cpu]),
            GpuTotals {
                nodes: 2,
                capacity: 8000,
                allocatable: 7000,
                requested: 2000,
                free: 5000
            }
        );
    }

    #[test]
    fn untolerating_pods_skip_mirrors_and_tolerating_pods_and_count_daemonsets_when_evicted() {
        let taint = Taint::new("dedicated", "llm-online", TaintEffect::NoExecute);
        let pods: Vec<Pod> = vec![
            serde_json::from_value(json!({"metadata": {"name": "a", "namespace": "x"}, "spec": {"nodeName": "n"}})).unwrap(),
            serde_json::from_value(json!({"metadata": {"name": "ds", "ownerReferences": [{"kind": "DaemonSet", "controller": true}]}, "spec": {"nodeName": "n"}})).unwrap(),
            serde_json::from_value(json!({"metadata": {"name": "mirror", "annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {"nodeName": "n"}})).unwrap(),
            serde_json::from_value(json!({"metadata": {"name": "tol"}, "spec": {"nodeName": "n", "tolerations": [{"key": "dedicated", "operator": "Exists"}]}})).unwrap(),
            serde_json::from_value(json!({"metadata": {"name": "elsewhere"}, "spec": {"nodeName": "m"}})).unwrap(),
            serde_json::from_value(json!({"metadata": {"name": "done"}, "spec": {"nodeName": "n"}, "status": {"phase": "Failed"}})).unwrap(),
        ];
        let affected = untolerating_pods(&pods, "n", &taint);
        assert_eq!(
            affected
                .iter()
                .map(|p| (p.name.as_str(), p.daemon_set))
                .collect::<Vec<_>>(),
            vec![("a", false), ("ds", true)],
            "NoExecute evicts a DaemonSet's pod that does not tolerate it"
        );
        assert!(evicts(&taint));
        let no_schedule = Taint::new("dedicated", "llm-online", TaintEffect::NoSchedule);
        assert_eq!(
            untolerating_pods(&pods, "n", &no_schedule)
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>(),
            vec!["a"]
        );
    }
}
