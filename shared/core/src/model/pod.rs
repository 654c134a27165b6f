//! A pod as placekit reads it: the fields every command uses, deserialised straight from the
//! list pages (a 10,000-pod page never holds env, volumes or probes), and the scheduler's
//! effective request computed once for everyone.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, Toleration, TopologySpreadConstraint};
use serde::Deserialize;

use super::quantity::{parse_quantity_milli, quantity_map};

/// A pod: what gpu status, the taint preflight, dependents, why-pending, drift and the live
/// lint rules need of it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Pod {
    #[serde(default)]
    pub metadata: PodMeta,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: PodStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub owner_references: Vec<OwnerReference>,
    #[serde(default)]
    pub deletion_timestamp: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct OwnerReference {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub controller: Option<bool>,
}

/// The controller among `owners` (`controller: true`), as `kind` and `name`.
pub fn controller_of(owners: &[OwnerReference]) -> Option<(&str, &str)> {
    owners
        .iter()
        .find(|o| o.controller == Some(true))
        .map(|o| (o.kind.as_str(), o.name.as_str()))
}

/// The placement-relevant part of a pod spec. The linter reads a workload's template into
/// this type too, so a template and a running pod are judged by the same code.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Boxed: most pods have none, and a list page holds 10,000 pods.
    #[serde(default)]
    pub affinity: Option<Box<Affinity>>,
    #[serde(default)]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default)]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    #[serde(default)]
    pub containers: Vec<Container>,
    #[serde(default)]
    pub init_containers: Vec<Container>,
    #[serde(default, deserialize_with = "quantity_map")]
    pub overhead: BTreeMap<String, String>,
    /// `spec.resourceClaims`.
    #[serde(default)]
    pub resource_claims: Vec<PodClaimRef>,
    /// `spec.schedulingGates`: while any is left the scheduler does not consider the pod.
    #[serde(default)]
    pub scheduling_gates: Vec<SchedulingGate>,
    /// `spec.schedulerName`: `default-scheduler` when the API server defaulted it.
    #[serde(default)]
    pub scheduler_name: Option<String>,
    /// `spec.priority`, resolved by the API server from the PriorityClass.
    #[serde(default)]
    pub priority: Option<i32>,
    /// `spec.preemptionPolicy`: `Never` keeps the pod from preempting others.
    #[serde(default)]
    pub preemption_policy: Option<String>,
    /// `spec.hostNetwork`: the containers' ports are the node's.
    #[serde(default)]
    pub host_network: bool,
    /// `spec.resources`: pod-level requests and limits (cpu, memory, hugepages), which
    /// replace the containers' sum for those resources.
    #[serde(default)]
    pub resources: Option<Resources>,
    /// `spec.volumes`: those a volume filter reads (claims, ephemeral and inline CSI
    /// volumes); the others (a service account's projected token, emptyDir, configMap) are
    /// not kept, so a list of 150,000 pods holds nothing for them.
    #[serde(default, deserialize_with = "scheduling_volumes")]
    pub volumes: Vec<Volume>,
    /// `spec.schedulingGroup` (v1.37, GenericWorkload): the `scheduling.k8s.io` PodGroup
    /// whose gang the pod belongs to.
    #[serde(default)]
    pub scheduling_group: Option<SchedulingGroup>,
}

/// `spec.schedulingGroup`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingGroup {
    #[serde(default)]
    pub pod_group_name: Option<String>,
}

/// A pod volume as the scheduler's volume filters read it: the claim it names (a
/// PersistentVolumeClaim, or the one a generic ephemeral volume makes, `POD-VOLUME`), or the
/// CSI driver of an inline CSI volume. Every other kind of volume is left out.
/// Read through a projection of the API's shape (`{name, persistentVolumeClaim: {...}}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(from = "RawVolume")]
pub struct Volume {
    pub name: String,
    pub source: VolumeSource,
}

/// What a [`Volume`] is, as far as scheduling goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum VolumeSource {
    /// `persistentVolumeClaim.claimName`.
    Claim { claim_name: String, read_only: bool },
    /// `ephemeral`: the claim `POD-VOLUME` the ephemeral volume controller creates.
    Ephemeral,
    /// `csi`: an inline CSI volume of `driver`.
    Csi { driver: String },
    /// Anything else (emptyDir, configMap, secret, hostPath...): no volume filter reads it.
    #[default]
    Other,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawVolume {
    #[serde(default)]
    name: String,
    #[serde(default)]
    persistent_volume_claim: Option<RawClaimSource>,
    #[serde(default)]
    ephemeral: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    csi: Option<RawCsiSource>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawClaimSource {
    #[serde(default)]
    claim_name: String,
    #[serde(default)]
    read_only: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct RawCsiSource {
    #[serde(default)]
    driver: String,
}

impl From<RawVolume> for Volume {
    fn from(raw: RawVolume) -> Self {
        let source = if let Some(c) = raw.persistent_volume_claim {
            VolumeSource::Claim {
                claim_name: c.claim_name,
                read_only: c.read_only,
            }
        } else if raw.ephemeral.is_some() {
            VolumeSource::Ephemeral
        } else if let Some(c) = raw.csi {
            VolumeSource::Csi { driver: c.driver }
        } else {
            VolumeSource::Other
        };
        Volume {
            name: raw.name,
            source,
        }
    }
}

/// `spec.volumes` without the volumes no filter reads.
fn scheduling_volumes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Volume>, D::Error> {
    let mut volumes = Vec::<Volume>::deserialize(d)?;
    volumes.retain(|v| v.source != VolumeSource::Other);
    Ok(volumes)
}

/// A container port as NodePorts reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    #[serde(default)]
    pub host_port: i32,
    #[serde(default)]
    pub container_port: i32,
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default, rename = "hostIP")]
    pub host_ip: Option<String>,
}

/// One of `spec.schedulingGates` (Kueue's admission gate, a topology gate, ...).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct SchedulingGate {
    #[serde(default)]
    pub name: String,
}

/// A port a pod takes on its node (NodePorts' `HostPortInfo` entry).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostPort {
    pub port: i32,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
    /// `0.0.0.0` when not given: every address of the node.
    pub host_ip: String,
}

impl HostPort {
    /// Whether two pods' ports collide on a node: the same port and protocol, and the same
    /// address or either on every address (NodePorts' `CheckConflict`).
    pub fn conflicts(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.host_ip == other.host_ip
                || self.host_ip == "0.0.0.0"
                || other.host_ip == "0.0.0.0")
    }
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.port, self.protocol)?;
        if self.host_ip != "0.0.0.0" {
            write!(f, " on {}", self.host_ip)?;
        }
        Ok(())
    }
}

/// A claim a pod's volume names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodVolumeClaim {
    pub name: String,
    /// Made by the ephemeral volume controller for the pod (`POD-VOLUME`).
    pub ephemeral: bool,
}

/// The same pod read only for where it runs and what constrains it: what drift reads of every
/// running pod of a cluster (150,000 of them), without containers, status or annotations.
/// Its fields have [`Pod`]'s names and types, so a list page deserialises into either.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PodPlacement {
    #[serde(default)]
    pub metadata: PlacementMeta,
    #[serde(default)]
    pub spec: PlacementSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct PlacementMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    /// For the workload a drifted pod belongs to (its controller).
    #[serde(default, rename = "ownerReferences")]
    pub owner_references: Vec<OwnerReference>,
}

/// [`PodSpec`]'s placement fields.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSpec {
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Boxed: most pods have none, and a list page holds 10,000 pods.
    #[serde(default)]
    pub affinity: Option<Box<Affinity>>,
    #[serde(default)]
    pub tolerations: Option<Vec<Toleration>>,
}

/// What placekit needs of a container: its resources, and whether it is a sidecar.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    #[serde(default)]
    pub resources: Resources,
    /// `Always` marks a sidecar init container.
    #[serde(default)]
    pub restart_policy: Option<String>,
    /// `ports`: those with a `hostPort` take it on the node.
    #[serde(default)]
    pub ports: Vec<ContainerPort>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Resources {
    #[serde(default, deserialize_with = "quantity_map")]
    pub requests: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "quantity_map")]
    pub limits: BTreeMap<String, String>,
}

impl Container {
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

/// A pod's `spec.resourceClaims` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodClaimRef {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub resource_claim_name: Option<String>,
    #[serde(default)]
    pub resource_claim_template_name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub conditions: Vec<PodCondition>,
    /// The claims generated from the pod's ResourceClaimTemplates.
    #[serde(default)]
    pub resource_claim_statuses: Vec<PodClaimStatus>,
    /// Extended resources the scheduler allocated from DRA devices (a DeviceClass with
    /// `extendedResourceName`): the claim it made and which requests it serves.
    #[serde(default)]
    pub extended_resource_claim_status: Option<ExtendedResourceClaimStatus>,
    /// The node a preemption made room on for this pod.
    #[serde(default)]
    pub nominated_node_name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct PodCondition {
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub status: String,
    /// `Unschedulable`, `SchedulerError`, ... on PodScheduled.
    #[serde(default)]
    pub reason: Option<String>,
    /// The scheduler's own words (`0/3 nodes are available: ...`).
    #[serde(default)]
    pub message: Option<String>,
}

/// A pod's `status.resourceClaimStatuses` entry: the claim generated from a template.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodClaimStatus {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub resource_claim_name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtendedResourceClaimStatus {
    #[serde(default)]
    pub resource_claim_name: String,
    #[serde(default)]
    pub request_mappings: Vec<RequestMapping>,
}

impl ExtendedResourceClaimStatus {
    /// Whether the claim serves the pod's requests of `resource`.
    pub fn serves(&self, resource: &str) -> bool {
        self.request_mappings
            .iter()
            .any(|m| m.resource_name == resource)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestMapping {
    #[serde(default)]
    pub container_name: String,
    #[serde(default)]
    pub resource_name: String,
    #[serde(default)]
    pub request_name: String,
}

impl Pod {
    /// Ready and not being deleted: what the disruption controller counts as healthy.
    pub fn is_healthy(&self) -> bool {
        self.metadata.deletion_timestamp.is_none()
            && self
                .status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    }

    /// Running or pending: it holds its requests on its node.
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

    /// See [`PodSpec::effective_request`].
    pub fn effective_request(&self, resource: &str) -> i128 {
        self.spec.effective_request(resource)
    }

    /// See [`PodSpec::requests`].
    pub fn requests(&self) -> BTreeMap<String, i128> {
        self.spec.requests()
    }
}

impl PodSpec {
    /// The scheduler's effective request of `resource`, in thousandths:
    /// `max(sum(app containers) + sum(sidecars), max over init containers of the init
    /// container's request plus the sidecars started before it) + overhead`.
    pub fn effective_request(&self, resource: &str) -> i128 {
        let apps: i128 = self.containers.iter().map(|c| c.request(resource)).sum();
        let mut sidecars = 0;
        let mut init_peak = 0;
        for init in &self.init_containers {
            let r = init.request(resource);
            if init.restart_policy.as_deref() == Some("Always") {
                sidecars += r;
                init_peak = init_peak.max(sidecars);
            } else {
                init_peak = init_peak.max(sidecars + r);
            }
        }
        let overhead = self
            .overhead
            .get(resource)
            .and_then(|q| parse_quantity_milli(q))
            .unwrap_or(0);
        let containers = match self.pod_level_request(resource) {
            Some(pod_level) => pod_level,
            None => (apps + sidecars).max(init_peak),
        };
        containers + overhead
    }

    /// The pod-level request of `resource` (`spec.resources`), which replaces the
    /// containers' sum for the resources pod-level resources support (cpu, memory,
    /// hugepages-*): requests, or the limit where the request is not given (the API server
    /// defaults one from the other).
    fn pod_level_request(&self, resource: &str) -> Option<i128> {
        let supported = matches!(resource, "cpu" | "memory") || resource.starts_with("hugepages-");
        if !supported {
            return None;
        }
        let r = self.resources.as_ref()?;
        r.requests
            .get(resource)
            .or_else(|| r.limits.get(resource))
            .and_then(|q| parse_quantity_milli(q))
    }

    /// The host ports the pod takes on its node, as NodePorts collects them: the ports with
    /// a `hostPort` of its sidecars (init containers with `restartPolicy: Always`) and its
    /// containers; other init containers' ports are not held (on a `hostNetwork` pod the API
    /// server sets `hostPort` to the container port).
    pub fn host_ports(&self) -> Vec<HostPort> {
        self.init_containers
            .iter()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"))
            .chain(&self.containers)
            .flat_map(|c| &c.ports)
            .filter_map(|p| {
                let port = if p.host_port > 0 {
                    p.host_port
                } else if self.host_network {
                    p.container_port
                } else {
                    0
                };
                (port > 0).then(|| HostPort {
                    port,
                    protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                    host_ip: p
                        .host_ip
                        .clone()
                        .filter(|ip| !ip.is_empty())
                        .unwrap_or_else(|| "0.0.0.0".into()),
                })
            })
            .collect()
    }

    /// The claims the pod's volumes name, in volume order: a PersistentVolumeClaim's name,
    /// or `POD-VOLUME` for a generic ephemeral volume.
    pub fn volume_claims<'a>(
        &'a self,
        pod_name: &'a str,
    ) -> impl Iterator<Item = PodVolumeClaim> + 'a {
        self.volumes.iter().filter_map(move |v| match &v.source {
            VolumeSource::Claim { claim_name, .. } => Some(PodVolumeClaim {
                name: claim_name.clone(),
                ephemeral: false,
            }),
            VolumeSource::Ephemeral => Some(PodVolumeClaim {
                name: format!("{pod_name}-{}", v.name),
                ephemeral: true,
            }),
            _ => None,
        })
    }

    /// The effective request of every resource any container names, in thousandths; zero
    /// requests left out.
    pub fn requests(&self) -> BTreeMap<String, i128> {
        let mut names: Vec<&String> = self
            .containers
            .iter()
            .chain(&self.init_containers)
            .flat_map(|c| c.resources.requests.keys().chain(c.resources.limits.keys()))
            .chain(
                self.resources
                    .iter()
                    .flat_map(|r| r.requests.keys().chain(r.limits.keys())),
            )
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| (n.clone(), self.effective_request(n)))
            .filter(|(_, r)| *r > 0)
            .collect()
    }

    /// The tolerations, empty when none are given.
    pub fn tolerations(&self) -> &[Toleration] {
        self.tolerations.as_deref().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
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
}
