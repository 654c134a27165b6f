//! What a node offers a pod: its labels, taints, allocatable and what the active pods bound
//! to it already request, and those pods as the inter-pod filters see them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodAffinityTerm;
use serde::Serialize;

use crate::model::pod::HostPort;
use crate::model::quantity::parse_quantity_milli;
use crate::model::{Node, Pod, PodSpec};
use crate::syntax::Taint;

/// What the filters need of a node, with the requests already placed on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// resource -> thousandths (`pods` in thousandths too).
    pub allocatable: BTreeMap<String, i128>,
    /// resource -> thousandths requested by the active pods bound to it.
    pub requested: BTreeMap<String, i128>,
    pub pod_count: usize,
    /// Its Ready condition is not False or Unknown (a node that reports none, as a test
    /// fixture's, is not called not ready).
    #[serde(skip)]
    pub ready: bool,
    /// The active pods bound to it, as the inter-pod filters (PodTopologySpread,
    /// InterPodAffinity) see them. Empty when the caller read no pods (drift).
    #[serde(skip)]
    pub pods: Vec<PlacedPod>,
}

/// A pod bound to a node, as the scheduler's inter-pod filters see it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlacedPod {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// Being deleted (`deletionTimestamp` set): topology spread no longer counts it.
    pub terminating: bool,
    /// Its required pod anti-affinity terms: they keep *other* pods out of its domain.
    pub anti_affinity: Vec<PodAffinityTerm>,
    /// The host ports it holds on the node (NodePorts).
    pub host_ports: Vec<HostPort>,
    /// The claims its volumes name, in its namespace (VolumeRestrictions,
    /// NodeVolumeLimits).
    pub claims: Vec<String>,
    /// Its inline CSI volumes' drivers, one entry a volume (NodeVolumeLimits).
    pub inline_csi: Vec<String>,
    /// `spec.priority` (0 when not set): who a preemption may evict.
    pub priority: i32,
    /// Its effective requests (thousandths), as the node counts them: what evicting it
    /// frees. A list, not a map: a pod asks for two or three resources, and 150,000 bound
    /// pods are kept this way.
    pub requests: Vec<(String, i128)>,
    /// The gang it belongs to, by its scheduler's marks.
    pub gang: Option<(super::gang::GangKind, String)>,
}

impl PlacedPod {
    /// The inter-pod view of a pod read from the API.
    pub fn of(pod: &Pod) -> Self {
        PlacedPod {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            labels: pod.metadata.labels.clone(),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            anti_affinity: required_pod_terms(&pod.spec, true).to_vec(),
            host_ports: pod.spec.host_ports(),
            claims: pod
                .spec
                .volume_claims(&pod.metadata.name)
                .map(|c| c.name)
                .collect(),
            inline_csi: pod
                .spec
                .volumes
                .iter()
                .filter_map(|v| match &v.source {
                    crate::model::pod::VolumeSource::Csi { driver } => Some(driver.clone()),
                    _ => None,
                })
                .collect(),
            priority: pod.spec.priority.unwrap_or(0),
            requests: pod
                .requests()
                .into_iter()
                .filter(|(r, _)| !pod.extended_resource_served_by_dra(r))
                .collect(),
            gang: super::gang::gang_of(pod),
        }
    }
}

/// The pod's required pod affinity (`anti == false`) or anti-affinity terms.
pub(super) fn required_pod_terms(spec: &PodSpec, anti: bool) -> &[PodAffinityTerm] {
    let affinity = spec.affinity.as_ref();
    let terms = if anti {
        affinity
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
    } else {
        affinity
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
    };
    terms.map(Vec::as_slice).unwrap_or_default()
}

/// Builds node infos from nodes and the active pods bound to them.
pub fn node_infos(nodes: &[Node], pods: &[Pod]) -> Vec<NodeInfo> {
    let mut bound = BoundPods::default();
    for pod in pods {
        bound.add(pod);
    }
    bound.into_node_infos(nodes)
}

/// The active pods bound to each node, folded in a pod at a time as list pages arrive:
/// what the node infos keep of them (requests, count, the inter-pod filters' view), so a
/// caller need not keep 150,000 pods to judge a few pending ones.
#[derive(Debug, Default)]
pub struct BoundPods {
    requested: BTreeMap<String, BTreeMap<String, i128>>,
    counts: BTreeMap<String, usize>,
    placed: BTreeMap<String, Vec<PlacedPod>>,
}

impl BoundPods {
    /// Counts `pod` on its node if it is active and bound.
    pub fn add(&mut self, pod: &Pod) {
        if !pod.is_active() {
            return;
        }
        let Some(node) = pod.spec.node_name.as_deref() else {
            return;
        };
        *self.counts.entry(node.to_string()).or_default() += 1;
        self.placed
            .entry(node.to_string())
            .or_default()
            .push(PlacedPod::of(pod));
        let entry = self.requested.entry(node.to_string()).or_default();
        for (r, q) in pod.requests() {
            // Devices DRA allocated are counted by their claims, not against allocatable.
            if pod.extended_resource_served_by_dra(&r) {
                continue;
            }
            *entry.entry(r).or_default() += q;
        }
    }

    /// The node infos of `nodes` with the pods added.
    pub fn into_node_infos(mut self, nodes: &[Node]) -> Vec<NodeInfo> {
        nodes
            .iter()
            .map(|n| NodeInfo {
                name: n.metadata.name.clone(),
                labels: n.metadata.labels.clone(),
                taints: n.spec.taints.clone(),
                unschedulable: n.spec.unschedulable,
                allocatable: n
                    .status
                    .allocatable
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), parse_quantity_milli(v)?)))
                    .collect(),
                requested: self
                    .requested
                    .remove(n.metadata.name.as_str())
                    .unwrap_or_default(),
                pod_count: self
                    .counts
                    .get(n.metadata.name.as_str())
                    .copied()
                    .unwrap_or(0),
                ready: !n
                    .status
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status != "True"),
                pods: self
                    .placed
                    .remove(n.metadata.name.as_str())
                    .unwrap_or_default(),
            })
            .collect()
    }
}
