//! Gangs: the pods a PodGroup of another scheduler (Volcano, KAI, coscheduling) or of
//! Kubernetes' own `scheduling.k8s.io` names, placed together or not at all; which group a
//! pod belongs to, by the marks each scheduler puts on its pods.

use serde::Serialize;

use crate::model::Pod;

/// Which scheduler a gang's PodGroup belongs to, and how its pods name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
pub enum GangKind {
    /// `scheduling.volcano.sh` PodGroup; pods carry the `scheduling.k8s.io/group-name`
    /// annotation.
    Volcano,
    /// KAI scheduler's `scheduling.run.ai` PodGroup; pods carry the `pod-group-name`
    /// annotation (or label).
    Kai,
    /// The scheduler-plugins coscheduling `scheduling.x-k8s.io` PodGroup; pods carry the
    /// `scheduling.x-k8s.io/pod-group` label.
    Coscheduling,
    /// Kubernetes' own `scheduling.k8s.io` PodGroup (GenericWorkload); pods name it in
    /// `spec.schedulingGroup.podGroupName`.
    Kubernetes,
}

impl GangKind {
    /// The resource of its PodGroups, as `plural.group`.
    pub fn resource(self) -> &'static str {
        match self {
            GangKind::Volcano => "podgroups.scheduling.volcano.sh",
            GangKind::Kai => "podgroups.scheduling.run.ai",
            GangKind::Coscheduling => "podgroups.scheduling.x-k8s.io",
            GangKind::Kubernetes => "podgroups.scheduling.k8s.io",
        }
    }
}

/// A gang's PodGroup, as its scheduler publishes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodGroup {
    pub kind: GangKind,
    pub namespace: String,
    pub name: String,
    /// `minMember` (`spec.schedulingPolicy.gang.minCount` for Kubernetes' own).
    pub min_member: i64,
    /// The queue it waits in (Volcano, KAI).
    pub queue: Option<String>,
    /// What the group's status says (phase, an `Unschedulable` condition's reason and
    /// message): cluster strings, escaped at the edge.
    pub says: Option<String>,
}

/// The gang `pod` belongs to, by the marks each scheduler puts on its pods.
pub fn gang_of(pod: &Pod) -> Option<(GangKind, String)> {
    let meta = &pod.metadata;
    if let Some(g) = pod
        .spec
        .scheduling_group
        .as_ref()
        .and_then(|g| g.pod_group_name.clone())
    {
        return Some((GangKind::Kubernetes, g));
    }
    if let Some(g) = meta.labels.get("scheduling.x-k8s.io/pod-group") {
        return Some((GangKind::Coscheduling, g.clone()));
    }
    if let Some(g) = meta.annotations.get("scheduling.k8s.io/group-name") {
        return Some((GangKind::Volcano, g.clone()));
    }
    // KAI's pod-grouper writes it as an annotation (and a label on the pods it groups).
    meta.annotations
        .get("pod-group-name")
        .or_else(|| meta.labels.get("pod-group-name"))
        .map(|g| (GangKind::Kai, g.clone()))
}
