//! GPU inventory and preflight, as pure functions over minimal node and pod views:
//! quantities, the scheduler's effective pod request (init containers and sidecars counted
//! the way the scheduler counts them), per-node capacity/allocatable/requested/free, and the
//! pods a new taint would leave untolerated.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::scheduling::tolerates;
use crate::syntax::{Taint, TaintEffect};

/// The default GPU resource.
pub const DEFAULT_RESOURCE: &str = "nvidia.com/gpu";

/// Parses a Kubernetes quantity (`8`, `500m`, `1.5`, `2k`, `1Gi`, `1e3`) into thousandths
/// of a unit. `None` for anything the API server would reject.
pub fn parse_quantity_milli(s: &str) -> Option<i128> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let (mul_num, mul_den): (i128, i128) = match suffix {
        "" => (1, 1),
        "n" => (1, 1_000_000_000),
        "u" => (1, 1_000_000),
        "m" => (1, 1_000),
        "k" => (1_000, 1),
        "M" => (1_000_000, 1),
        "G" => (1_000_000_000, 1),
        "T" => (1_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000, 1),
        "Ki" => (1 << 10, 1),
        "Mi" => (1 << 20, 1),
        "Gi" => (1 << 30, 1),
        "Ti" => (1 << 40, 1),
        "Pi" => (1 << 50, 1),
        "Ei" => (1 << 60, 1),
        e if e.starts_with(['e', 'E']) => {
            let exp: u32 = e[1..].parse().ok().filter(|x: &u32| *x <= 18)?;
            (10i128.pow(exp), 1)
        }
        _ => return None,
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    let negative = int_part.starts_with('-');
    let int_digits = int_part.strip_prefix(['+', '-']).unwrap_or(int_part);
    if int_digits.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_digits.chars().all(|c| c.is_ascii_digit())
        || !frac_part.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let frac_digits = frac_part.len().min(18) as u32;
    let scale = 10i128.pow(frac_digits);
    let int_value: i128 = if int_digits.is_empty() {
        0
    } else {
        int_digits.parse().ok()?
    };
    let frac_value: i128 = if frac_digits == 0 {
        0
    } else {
        frac_part[..frac_digits as usize].parse().ok()?
    };
    let scaled = int_value.checked_mul(scale)?.checked_add(frac_value)?;
    // value = scaled / scale * mul_num / mul_den, in thousandths, rounded up like the API server.
    let numerator = scaled.checked_mul(mul_num)?.checked_mul(1000)?;
    let denominator = scale.checked_mul(mul_den)?;
    let value = (numerator + denominator - 1).div_euclid(denominator);
    Some(if negative { -value } else { value })
}

/// Renders thousandths as a plain number (`8`, `0.5`).
pub fn format_milli(milli: i128) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        let s = format!("{:.3}", milli as f64 / 1000.0);
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Renders thousandths of `resource` in its own units, as kubectl shows quantities:
/// memory-like resources (`memory`, `ephemeral-storage`, `hugepages-*`) with the largest
/// binary suffix that divides them (`32Gi`, `512Mi`, else bytes), cpu in millicores when
/// fractional (`500m`), anything else as a plain number.
pub fn format_quantity(resource: &str, milli: i128) -> String {
    let memory_like = resource == "memory"
        || resource == "ephemeral-storage"
        || resource.starts_with("hugepages-");
    if memory_like && milli % 1000 == 0 {
        let bytes = milli / 1000;
        if bytes != 0 {
            for (suffix, shift) in [
                ("Ei", 60),
                ("Pi", 50),
                ("Ti", 40),
                ("Gi", 30),
                ("Mi", 20),
                ("Ki", 10),
            ] {
                let unit = 1i128 << shift;
                if bytes % unit == 0 {
                    return format!("{}{suffix}", bytes / unit);
                }
            }
        }
        return bytes.to_string();
    }
    if resource == "cpu" && milli % 1000 != 0 {
        return format!("{milli}m");
    }
    format_milli(milli)
}

/// What the inventory needs of a container.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerView {
    #[serde(default)]
    pub resources: ResourcesView,
    /// `Always` marks a sidecar init container.
    #[serde(default)]
    pub restart_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourcesView {
    #[serde(default)]
    pub requests: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: BTreeMap<String, String>,
}

impl ContainerView {
    /// The container's request of `resource` in thousandths; an extended resource given only
    /// as a limit is requested at the limit (the API server defaults it so).
    pub fn request(&self, resource: &str) -> i128 {
        self.resources
            .requests
            .get(resource)
            .or_else(|| self.resources.limits.get(resource))
            .and_then(|q| parse_quantity_milli(q))
            .unwrap_or(0)
    }
}

/// What the inventory needs of a pod (deserialised straight from the API's JSON, so a list
/// of 150,000 pods never holds more than this).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PodView {
    #[serde(default)]
    pub metadata: PodMetaView,
    #[serde(default)]
    pub spec: PodSpecView,
    #[serde(default)]
    pub status: PodStatusView,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMetaView {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub owner_references: Vec<OwnerView>,
    #[serde(default)]
    pub deletion_timestamp: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct OwnerView {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub controller: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpecView {
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub containers: Vec<ContainerView>,
    #[serde(default)]
    pub init_containers: Vec<ContainerView>,
    #[serde(default)]
    pub overhead: BTreeMap<String, String>,
    #[serde(default)]
    pub tolerations: Vec<k8s_openapi::api::core::v1::Toleration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatusView {
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub conditions: Vec<PodConditionView>,
    /// Extended resources the scheduler allocated from DRA devices (a DeviceClass with
    /// `extendedResourceName`): the claim it made and which requests it serves.
    #[serde(default)]
    pub extended_resource_claim_status: Option<ExtendedResourceClaimStatusView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct PodConditionView {
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub status: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtendedResourceClaimStatusView {
    #[serde(default)]
    pub resource_claim_name: String,
    #[serde(default)]
    pub request_mappings: Vec<RequestMappingView>,
}

impl ExtendedResourceClaimStatusView {
    /// Whether the claim serves the pod's requests of `resource`.
    pub fn serves(&self, resource: &str) -> bool {
        self.request_mappings
            .iter()
            .any(|m| m.resource_name == resource)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestMappingView {
    #[serde(default)]
    pub container_name: String,
    #[serde(default)]
    pub resource_name: String,
    #[serde(default)]
    pub request_name: String,
}

impl PodView {
    /// Running or pending: it holds its requests on its node.
    /// Ready and not being deleted: what the disruption controller counts as healthy.
    pub fn is_healthy(&self) -> bool {
        self.metadata.deletion_timestamp.is_none()
            && self
                .status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    }

    pub fn is_active(&self) -> bool {
        !matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// Whether the scheduler served this pod's `resource` from DRA devices: the request is
    /// then counted as its claim's devices, not against the node's allocatable.
    pub fn extended_resource_served_by_dra(&self, resource: &str) -> bool {
        self.status
            .extended_resource_claim_status
            .as_ref()
            .is_some_and(|s| s.serves(resource))
    }

    /// A DaemonSet's pod (it tolerates by design and is not evicted by taints it tolerates).
    pub fn is_daemonset_pod(&self) -> bool {
        self.metadata
            .owner_references
            .iter()
            .any(|o| o.kind == "DaemonSet" && o.controller == Some(true))
    }

    /// A static pod's API mirror.
    pub fn is_mirror_pod(&self) -> bool {
        self.metadata
            .annotations
            .contains_key("kubernetes.io/config.mirror")
    }

    /// The scheduler's effective request of `resource`, in thousandths:
    /// `max(sum(app containers) + sum(sidecars), max over init containers of the init
    /// container's request plus the sidecars started before it) + overhead`.
    pub fn effective_request(&self, resource: &str) -> i128 {
        let apps: i128 = self
            .spec
            .containers
            .iter()
            .map(|c| c.request(resource))
            .sum();
        let mut sidecars = 0;
        let mut init_peak = 0;
        for init in &self.spec.init_containers {
            let r = init.request(resource);
            if init.restart_policy.as_deref() == Some("Always") {
                sidecars += r;
                init_peak = init_peak.max(sidecars);
            } else {
                init_peak = init_peak.max(sidecars + r);
            }
        }
        let overhead = self
            .spec
            .overhead
            .get(resource)
            .and_then(|q| parse_quantity_milli(q))
            .unwrap_or(0);
        (apps + sidecars).max(init_peak) + overhead
    }
}

/// What the inventory needs of a node.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeView {
    #[serde(default)]
    pub metadata: NodeMetaView,
    #[serde(default)]
    pub spec: NodeSpecView,
    #[serde(default)]
    pub status: NodeStatusView,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeMetaView {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeSpecView {
    #[serde(default)]
    pub taints: Vec<Taint>,
    #[serde(default)]
    pub unschedulable: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeStatusView {
    #[serde(default)]
    pub capacity: BTreeMap<String, String>,
    #[serde(default)]
    pub allocatable: BTreeMap<String, String>,
    #[serde(default)]
    pub conditions: Vec<ConditionView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConditionView {
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub status: String,
}

/// Serialises thousandths as a JSON number of units (an integer when whole).
pub(crate) fn units<S: serde::Serializer>(milli: &i128, s: S) -> Result<S::Ok, S::Error> {
    if milli % 1000 == 0 {
        s.serialize_i64((milli / 1000) as i64)
    } else {
        s.serialize_f64(*milli as f64 / 1000.0)
    }
}

/// [`units`], `null` when absent.
pub(crate) fn optional_units<S: serde::Serializer>(
    milli: &Option<i128>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match milli {
        Some(m) => units(m, s),
        None => s.serialize_none(),
    }
}

/// One row of `gpu-taint status`. Quantities are kept in thousandths and serialised in units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
    pods: impl IntoIterator<Item = &'a PodView>,
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
pub fn node_gpu(node: &NodeView, requested: i128, resource: &str) -> NodeGpu {
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
pub fn unknown_resource(nodes: &[NodeView], resource: &str) -> Option<UnknownResource> {
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
    let near = crate::live::nearest_key(resource, offered.iter().copied());
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
            crate::ui::count(nodes.len(), "node")
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
pub fn untolerating_pods(pods: &[PodView], node: &str, taint: &Taint) -> Vec<AffectedPod> {
    pods.iter()
        .filter(|p| p.is_active() && p.spec.node_name.as_deref() == Some(node))
        .filter(|p| !p.is_mirror_pod() && (evicts(taint) || !p.is_daemonset_pod()))
        .filter(|p| !p.spec.tolerations.iter().any(|t| tolerates(t, taint)))
        .map(|p| AffectedPod {
            namespace: p.metadata.namespace.clone(),
            name: p.metadata.name.clone(),
            node: node.to_string(),
            daemon_set: p.is_daemonset_pod(),
        })
        .collect()
}

/// The pods on `node` that `taint` evicts (NoExecute, not tolerated), as views.
pub fn evicted_pods<'a>(pods: &'a [PodView], node: &str, taint: &Taint) -> Vec<&'a PodView> {
    if !evicts(taint) {
        return Vec::new();
    }
    pods.iter()
        .filter(|p| p.is_active() && p.spec.node_name.as_deref() == Some(node))
        .filter(|p| !p.is_mirror_pod())
        .filter(|p| !p.spec.tolerations.iter().any(|t| tolerates(t, taint)))
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

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity_milli("8"), Some(8000));
        assert_eq!(parse_quantity_milli("500m"), Some(500));
        assert_eq!(parse_quantity_milli("1.5"), Some(1500));
        assert_eq!(parse_quantity_milli("2k"), Some(2_000_000));
        assert_eq!(parse_quantity_milli("1Ki"), Some(1_024_000));
        assert_eq!(parse_quantity_milli("1e3"), Some(1_000_000));
        assert_eq!(
            parse_quantity_milli("0.0001"),
            Some(1),
            "rounded up like the API server"
        );
        for bad in ["", "x", "1x", "1.2.3", "--1", "e3"] {
            assert_eq!(parse_quantity_milli(bad), None, "{bad}");
        }
        assert_eq!(format_milli(8000), "8");
        assert_eq!(format_milli(500), "0.5");
        assert_eq!(format_quantity("memory", (32i128 << 30) * 1000), "32Gi");
        assert_eq!(format_quantity("memory", 1_500_000), "1500");
        assert_eq!(
            format_quantity("hugepages-2Mi", (2i128 << 20) * 1000),
            "2Mi"
        );
        assert_eq!(format_quantity("cpu", 500), "500m");
        assert_eq!(format_quantity("cpu", 2000), "2");
        assert_eq!(format_quantity("nvidia.com/gpu", 4000), "4");
    }

    fn pod(spec: serde_json::Value) -> PodView {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ml"}, "spec": spec, "status": {"phase": "Running"}})).unwrap()
    }

    #[test]
    fn init_containers_count_the_way_the_scheduler_counts_them() {
        let p = pod(json!({
            "nodeName": "n",
            "containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}, {"resources": {"limits": {"nvidia.com/gpu": "1"}}}],
            "initContainers": [{"resources": {"requests": {"nvidia.com/gpu": "4"}}}]
        }));
        assert_eq!(p.effective_request("nvidia.com/gpu"), 4000, "max(2, 4)");
        let sidecar = pod(json!({
            "containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}],
            "initContainers": [
                {"restartPolicy": "Always", "resources": {"requests": {"nvidia.com/gpu": "1"}}},
                {"resources": {"requests": {"nvidia.com/gpu": "2"}}}
            ],
            "overhead": {"nvidia.com/gpu": "0"}
        }));
        assert_eq!(
            sidecar.effective_request("nvidia.com/gpu"),
            3000,
            "max(1 + 1 sidecar, 1 sidecar + 2 init)"
        );
    }

    #[test]
    fn node_rows_and_totals() {
        let node: NodeView = serde_json::from_value(json!({
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
        let no_plugin: NodeView =
            serde_json::from_value(json!({"metadata": {"name": "cpu"}})).unwrap();
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
        let pods: Vec<PodView> = vec![
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

    proptest::proptest! {
        #[test]
        fn quantity_parser_never_panics(s in "\\PC{0,20}") {
            let _ = parse_quantity_milli(&s);
        }
    }
}
