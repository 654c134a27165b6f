//! The rows of `why-pending`'s reports (`PendingReport`, `PendingSummary`) as wire types: the
//! verdict, each node's failing filter, where the pod stands, the scheduler's word, a
//! preemption's nomination and what one would do, a gang's judgement, the pod's claims.
//! Converted with `From` from the scheduler wing's types, so a refactor of the model cannot
//! change the published shape.

use serde::Serialize;

use placekit_core::scheduler::{filters, gang, pending, verdict};

/// A verdict of the pending-pod runbook's table for a Pending pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// What kind of verdict, in one stable word for scripts and metrics: `affinity`,
    /// `taint`, `resources`, `pods`, `unschedulable`, `spread`, `podAffinity`,
    /// `antiAffinity`, `existingAntiAffinity`, `claims`, `claimNotAvailable`, `preFilter`,
    /// `ports`, `volumes`, `claimMissing`; `gated`, `otherScheduler`, `boundNodeMissing`,
    /// `boundNodeNotReady`, `nominated`, `gang`.
    pub class: String,
    /// The scheduler's evidence: didn't match node affinity, untolerated taint, Insufficient X, Too many pods.
    pub evidence: String,
    pub judgment: String,
    pub action: String,
}

impl From<&verdict::Verdict> for Verdict {
    fn from(v: &verdict::Verdict) -> Self {
        Verdict {
            class: v.class.clone(),
            evidence: v.evidence.clone(),
            judgment: v.judgment.clone(),
            action: v.action.clone(),
        }
    }
}

/// Why a node is not feasible for a pod: one reason of the scheduler's first failing filter
/// (the NodeResourcesFit filter can give several, one per missing resource).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "filter", rename_all = "camelCase")]
pub enum FilterFailure {
    /// NodeAffinity's PreFilter: every required term names its nodes (`matchFields`
    /// `metadata.name In`, as DaemonSet pods do) and none names this one. The scheduler runs
    /// no filter on such a node.
    NotNamed,
    /// NodeAffinity's PreFilter: the terms name no node in common.
    NamedNodesConflict,
    /// NodeUnschedulable.
    Unschedulable,
    /// TaintToleration.
    #[serde(rename_all = "camelCase")]
    Taint { taint: String },
    /// NodeAffinity: nodeSelector or required affinity.
    #[serde(rename_all = "camelCase")]
    NodeAffinity { detail: String },
    /// NodeResourcesFit: pod count.
    #[serde(rename_all = "camelCase")]
    TooManyPods { limit: String },
    /// NodeResourcesFit.
    #[serde(rename_all = "camelCase")]
    Insufficient {
        resource: String,
        requested: String,
        free: String,
    },
    /// PodTopologySpread (a `DoNotSchedule` constraint).
    #[serde(rename_all = "camelCase")]
    TopologySpread {
        topology_key: String,
        /// The node lacks the constraint's topology key.
        missing_label: bool,
        detail: String,
    },
    /// InterPodAffinity: the pod's required pod affinity.
    #[serde(rename_all = "camelCase")]
    PodAffinity { detail: String },
    /// InterPodAffinity: the pod's own required anti-affinity.
    #[serde(rename_all = "camelCase")]
    PodAntiAffinity { detail: String },
    /// InterPodAffinity: a running pod's required anti-affinity keeps this pod out.
    #[serde(rename_all = "camelCase")]
    ExistingPodAntiAffinity { detail: String },
    /// DynamicResources: an allocated claim's devices are not reachable from this node.
    #[serde(rename_all = "camelCase")]
    ClaimNotAvailable { claim: String },
    /// DynamicResources: the devices the pod's claims (or DRA-served extended resources)
    /// need are not free here.
    #[serde(rename_all = "camelCase")]
    CannotAllocateClaims { detail: String },
    /// A PreFilter that stops the pod before any node is looked at (VolumeBinding's
    /// `pod has unbound immediate PersistentVolumeClaims`, a missing claim): every node
    /// fails with the same message.
    #[serde(rename_all = "camelCase")]
    PreFilter { plugin: String, message: String },
    /// NodePorts: a host port the pod asks for is taken on the node.
    #[serde(rename_all = "camelCase")]
    NodePorts { ports: String },
    /// The volume filters: VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone.
    #[serde(rename_all = "camelCase")]
    Volume {
        plugin: String,
        /// The scheduler's reason string.
        reason: String,
        detail: String,
    },
}

impl From<&filters::FilterFailure> for FilterFailure {
    fn from(failure: &filters::FilterFailure) -> Self {
        use filters::FilterFailure as Model;
        match failure.clone() {
            Model::NotNamed => FilterFailure::NotNamed,
            Model::NamedNodesConflict => FilterFailure::NamedNodesConflict,
            Model::Unschedulable => FilterFailure::Unschedulable,
            Model::Taint { taint } => FilterFailure::Taint { taint },
            Model::NodeAffinity { detail } => FilterFailure::NodeAffinity { detail },
            Model::TooManyPods { limit } => FilterFailure::TooManyPods { limit },
            Model::Insufficient {
                resource,
                requested,
                free,
            } => FilterFailure::Insufficient {
                resource,
                requested,
                free,
            },
            Model::TopologySpread {
                topology_key,
                missing_label,
                detail,
            } => FilterFailure::TopologySpread {
                topology_key,
                missing_label,
                detail,
            },
            Model::PodAffinity { detail } => FilterFailure::PodAffinity { detail },
            Model::PodAntiAffinity { detail } => FilterFailure::PodAntiAffinity { detail },
            Model::ExistingPodAntiAffinity { detail } => {
                FilterFailure::ExistingPodAntiAffinity { detail }
            }
            Model::ClaimNotAvailable { claim } => FilterFailure::ClaimNotAvailable { claim },
            Model::CannotAllocateClaims { detail } => {
                FilterFailure::CannotAllocateClaims { detail }
            }
            Model::PreFilter { plugin, message } => FilterFailure::PreFilter { plugin, message },
            Model::NodePorts { ports } => FilterFailure::NodePorts { ports },
            Model::Volume {
                plugin,
                reason,
                detail,
            } => FilterFailure::Volume {
                plugin,
                reason,
                detail,
            },
        }
    }
}

/// Where a pending pod stands before any filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "standing", rename_all = "camelCase")]
pub enum Standing {
    /// `spec.nodeName` is set: the scheduler has done its part (or was bypassed).
    #[serde(rename_all = "camelCase")]
    Bound {
        node: String,
        /// `exists`, `missing` or `notReady`.
        node_state: String,
    },
    /// `spec.schedulerName` names a scheduler other than kube-scheduler's default profile:
    /// kube-scheduler never looks at it.
    #[serde(rename_all = "camelCase")]
    OtherScheduler { scheduler: String },
    /// `spec.schedulingGates` hold it.
    Gated,
    /// Judged node by node.
    Filtered,
}

impl From<&pending::Standing> for Standing {
    fn from(standing: &pending::Standing) -> Self {
        match standing {
            pending::Standing::Bound { node, node_state } => Standing::Bound {
                node: node.clone(),
                node_state: (*node_state).to_string(),
            },
            pending::Standing::OtherScheduler { scheduler } => Standing::OtherScheduler {
                scheduler: scheduler.clone(),
            },
            pending::Standing::Gated => Standing::Gated,
            pending::Standing::Filtered => Standing::Filtered,
        }
    }
}

/// The PodScheduled condition when it says the pod was not scheduled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerSays {
    /// `Unschedulable`, `SchedulerError`, ...
    pub reason: String,
    pub message: String,
}

impl From<&pending::SchedulerSays> for SchedulerSays {
    fn from(says: &pending::SchedulerSays) -> Self {
        SchedulerSays {
            reason: says.reason.clone(),
            message: says.message.clone(),
        }
    }
}

/// A preemption's nomination: the node it made room on, and the victims still leaving it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Nomination {
    pub node: String,
    /// Lower-priority pods on that node being deleted (`namespace/name`).
    pub terminating_victims: Vec<String>,
    /// Whether the nominated node exists.
    pub node_exists: bool,
}

impl From<&pending::Nomination> for Nomination {
    fn from(n: &pending::Nomination) -> Self {
        Nomination {
            node: n.node.clone(),
            terminating_victims: n.terminating_victims.clone(),
            node_exists: n.node_exists,
        }
    }
}

/// What a preemption would do for a pod no node fits now: the node the scheduler's
/// PostFilter would pick and the lower-priority pods it would evict there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionWouldHelp {
    pub node: String,
    /// `namespace/name (priority N)` of each victim.
    pub victims: Vec<String>,
}

impl From<&pending::PreemptionWouldHelp> for PreemptionWouldHelp {
    fn from(p: &pending::PreemptionWouldHelp) -> Self {
        PreemptionWouldHelp {
            node: p.node.clone(),
            victims: p.victims.clone(),
        }
    }
}

/// A gang judged as a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GangJudgement {
    pub kind: GangKind,
    /// `namespace/name` of the PodGroup.
    pub group: String,
    /// Its minimum (`minMember` / `minCount`); `None` when the PodGroup was not read.
    pub min_member: Option<i64>,
    /// The group's pods already bound.
    pub scheduled: usize,
    /// The group's pending pods.
    pub pending: usize,
    /// How many of the pending ones the nodes can take at once, each placed where it fits
    /// with the ones before it counted.
    pub placeable_together: usize,
    /// The pending pods that do not fit once the others are placed, with why.
    pub unplaced: Vec<String>,
    /// The group can start: scheduled + placeable together reaches its minimum.
    pub satisfiable: Option<bool>,
    /// What the PodGroup's status says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub says: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
}

impl From<&pending::GangJudgement> for GangJudgement {
    fn from(g: &pending::GangJudgement) -> Self {
        GangJudgement {
            kind: g.kind.into(),
            group: g.group.clone(),
            min_member: g.min_member,
            scheduled: g.scheduled,
            pending: g.pending,
            placeable_together: g.placeable_together,
            unplaced: g.unplaced.clone(),
            satisfiable: g.satisfiable,
            says: g.says.clone(),
            queue: g.queue.clone(),
        }
    }
}

/// Which scheduler a gang's PodGroup belongs to, and how its pods name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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

impl From<gang::GangKind> for GangKind {
    fn from(kind: gang::GangKind) -> Self {
        match kind {
            gang::GangKind::Volcano => GangKind::Volcano,
            gang::GangKind::Kai => GangKind::Kai,
            gang::GangKind::Coscheduling => GangKind::Coscheduling,
            gang::GangKind::Kubernetes => GangKind::Kubernetes,
        }
    }
}

/// One claim of a pod, as why-pending reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimState {
    /// The pod's name for it (`spec.resourceClaims[].name`), or the extended resource.
    pub name: String,
    /// The ResourceClaim object, when it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    /// `allocated`, `pending` or `missing`.
    pub state: String,
    /// Per request: "2 x gpu.example.com".
    pub requests: Vec<String>,
}

impl From<&placekit_core::dra::ClaimState> for ClaimState {
    fn from(c: &placekit_core::dra::ClaimState) -> Self {
        ClaimState {
            name: c.name.clone(),
            claim: c.claim.clone(),
            state: c.state.to_string(),
            requests: c.requests.clone(),
        }
    }
}
