//! Drift: running pods whose nodes no longer satisfy their constraints.

use serde::Serialize;

use super::filters::affinity_detail;
use super::node_info::NodeInfo;
use crate::model::PodPlacement;
use crate::scheduling::{
    NodeFacts, node_selector_matches, pod_fits_node_affinity, untolerated_taints,
};
use crate::syntax::TaintEffect;

/// A running pod whose node no longer satisfies its constraints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    pub namespace: String,
    pub pod: String,
    pub node: String,
    /// The failing nodeSelector entry or expression, with expected vs actual.
    pub reason: String,
    /// `labels`: the node's labels no longer satisfy the pod (it keeps running); `taint`: a
    /// NoExecute taint it does not tolerate (it is evicted).
    pub kind: DriftKind,
    /// The pod's controller (a ReplicaSet, StatefulSet, Job...), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<DriftOwner>,
}

/// The controller a drifted pod belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DriftOwner {
    pub kind: String,
    pub name: String,
}

/// Why a pod drifted, which decides what happens to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DriftKind {
    /// nodeSelector or required node affinity: IgnoredDuringExecution, it keeps running.
    Labels,
    /// An untolerated NoExecute taint: the taint manager evicts it.
    Taint,
}

/// Whether a running pod drifted from its node (nodeSelector, required affinity, or a
/// NoExecute taint it does not tolerate).
pub fn drift(pod: &PodPlacement, node: &NodeInfo) -> Option<Drift> {
    let facts = NodeFacts {
        name: &node.name,
        labels: &node.labels,
    };
    let spec = &pod.spec;
    let (reason, kind) = if !spec
        .node_selector
        .as_ref()
        .is_none_or(|s| node_selector_matches(s, &node.labels))
        || !pod_fits_node_affinity(spec, facts)
    {
        (affinity_detail(spec, node), DriftKind::Labels)
    } else if let Some(t) = untolerated_taints(
        spec.tolerations.as_deref().unwrap_or_default(),
        &node.taints,
        &[TaintEffect::NoExecute],
    )
    .first()
    {
        (format!("untolerated NoExecute taint {t}"), DriftKind::Taint)
    } else {
        return None;
    };
    Some(Drift {
        namespace: pod.metadata.namespace.clone(),
        pod: pod.metadata.name.clone(),
        node: node.name.clone(),
        reason,
        kind,
        owner: crate::model::pod::controller_of(&pod.metadata.owner_references).map(
            |(kind, name)| DriftOwner {
                kind: kind.to_string(),
                name: name.to_string(),
            },
        ),
    })
}
