//! The one judgement of a pending pod, for `why-pending POD` and `why-pending -A` alike: who
//! schedules it (kube-scheduler, or another scheduler whose PodGroup speaks for it), whether
//! it is bound already (to a node that exists and is Ready?), held by gates, stopped by a
//! PreFilter, or judged node by node through every filter of the default profile; then the
//! scheduler's own word (its PodScheduled condition) as the referee the verdict may not
//! contradict, the node a preemption nominated and its victims, and the gang it belongs to.

use std::collections::BTreeMap;

use serde::Serialize;

use super::filters::{FilterFailure, PodFilters};
use super::gang::{GangKind, PodGroup, gang_of};
use super::node_info::NodeInfo;
use super::verdict::{self, Verdict};
use super::volumes::PodVolumes;
use crate::dra::{ClaimNeeds, ClaimState, DraInventory, MissingClaim};
use crate::model::Pod;
use crate::model::dra::ResourceClaim;
use crate::model::storage::Storage;

/// kube-scheduler's default profile.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// What a judgement reads of the cluster, gathered before any pod is judged.
#[derive(Debug, Clone, Copy)]
pub struct ClusterView<'a> {
    /// Every node, with the active pods bound to it.
    pub nodes: &'a [NodeInfo],
    /// DRA's objects, when the cluster serves them and they were read.
    pub dra: Option<DraView<'a>>,
    /// The storage objects, when a pod judged mounts a claim.
    pub storage: Option<&'a Storage>,
    /// The gangs' PodGroups that were read (Volcano, KAI, coscheduling, `scheduling.k8s.io`).
    pub groups: &'a [PodGroup],
    /// Every pending pod read (the other members of a gang are among them).
    pub pending: &'a [Pod],
}

/// DRA's objects as read.
#[derive(Debug, Clone, Copy)]
pub struct DraView<'a> {
    pub claims: &'a [ResourceClaim],
    pub inventory: &'a DraInventory,
    /// RBAC forbids listing ResourceClaims: a claim cannot be told missing from unreadable.
    pub claims_forbidden: bool,
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
        node_state: &'static str,
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

/// The PodScheduled condition when it says the pod was not scheduled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerSays {
    /// `Unschedulable`, `SchedulerError`, ...
    pub reason: String,
    pub message: String,
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

/// What a preemption would do for a pod no node fits now: the node the scheduler's
/// PostFilter would pick and the lower-priority pods it would evict there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionWouldHelp {
    pub node: String,
    /// `namespace/name (priority N)` of each victim.
    pub victims: Vec<String>,
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

/// The judgement of one pending pod.
#[derive(Debug, Clone, Default)]
pub struct Judgement {
    pub standing: Option<Standing>,
    /// The pod's effective requests.
    pub requests: BTreeMap<String, i128>,
    /// Per node (in `nodes` order): `Ok`, or every reason of the first failing filter.
    /// Empty unless the pod was judged node by node.
    pub checked: Vec<Result<(), Vec<FilterFailure>>>,
    /// Per node: a candidate (named and passing node affinity).
    pub candidates: Vec<bool>,
    pub verdict: Option<Verdict>,
    /// Some node passes every filter, nothing unmodelled is asked, and the scheduler has
    /// not refused it since.
    pub placeable: bool,
    /// The FailedScheduling message the scheduler would give now.
    pub predicted_message: Option<String>,
    pub unmodelled: Vec<String>,
    pub missing: Vec<MissingClaim>,
    pub claim_states: Vec<ClaimState>,
    /// The PodScheduled condition, when it says not scheduled.
    pub scheduler_says: Option<SchedulerSays>,
    /// The model finds a node where the scheduler's last word refused: both are said.
    pub disagreement: Option<String>,
    pub nomination: Option<Nomination>,
    /// No node fits, but evicting lower-priority pods would make room (and the pod may
    /// preempt): where and whom.
    pub preemption: Option<PreemptionWouldHelp>,
    pub gang: Option<GangJudgement>,
}

impl Judgement {
    /// The nodes that pass every filter.
    pub fn fitting<'n>(&self, nodes: &'n [NodeInfo]) -> Vec<&'n str> {
        nodes
            .iter()
            .zip(&self.checked)
            .filter(|(_, r)| r.is_ok())
            .map(|(n, _)| n.name.as_str())
            .collect()
    }
}

/// The PodScheduled condition of a pod that the scheduler refused.
pub fn scheduler_says(pod: &Pod) -> Option<SchedulerSays> {
    pod.status
        .conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .map(|c| SchedulerSays {
            reason: c.reason.clone().unwrap_or_default(),
            message: c.message.clone().unwrap_or_default(),
        })
}

/// Judges one pending, unbound-or-bound pod against the cluster view.
pub fn judge(pod: &Pod, view: ClusterView<'_>) -> Judgement {
    judge_with(pod, view, &mut Gangs::new())
}

/// Every pod of `pods` judged, each gang simulated once for all its members (a 512-pod gang
/// is placed once, not once per member).
pub fn judge_all(pods: &[&Pod], view: ClusterView<'_>) -> Vec<Judgement> {
    let mut gangs = Gangs::new();
    pods.iter()
        .map(|pod| judge_with(pod, view, &mut gangs))
        .collect()
}

/// The gangs judged so far, by kind, namespace and name.
type Gangs = BTreeMap<(GangKind, String, String), GangJudgement>;

/// A gang's judgement, from `gangs` when one of its members was judged before.
fn gang_once(
    pod: &Pod,
    view: ClusterView<'_>,
    kind: GangKind,
    name: &str,
    gangs: &mut Gangs,
) -> GangJudgement {
    gangs
        .entry((kind, pod.metadata.namespace.clone(), name.to_string()))
        .or_insert_with(|| judge_gang(pod, view, kind, name))
        .clone()
}

/// [`judge`], with the gangs judged so far.
///
/// Long on purpose: one sequence, in the order the questions are asked of a pending pod
/// (bound? whose scheduler? gated? the filters; then the nomination, preemption, the gang,
/// the referee).
fn judge_with(pod: &Pod, view: ClusterView<'_>, gangs: &mut Gangs) -> Judgement {
    let mut j = Judgement {
        requests: pod.requests(),
        scheduler_says: scheduler_says(pod),
        ..Judgement::default()
    };
    if let Some(node) = pod.spec.node_name.clone().filter(|n| !n.is_empty()) {
        let found = view.nodes.iter().find(|n| n.name == node);
        let node_state = match found {
            None => "missing",
            Some(n) if !n.ready => "notReady",
            Some(_) => "exists",
        };
        j.verdict = match node_state {
            "missing" => Some(Verdict {
            class: "boundNodeMissing".into(),
                evidence: format!("bound to node {node}, which does not exist"),
                judgment: "spec.nodeName names a node the cluster does not have: no kubelet will ever run the pod, and the scheduler never looks at a pod with a nodeName".into(),
                action: "delete the pod (its controller makes a new one the scheduler places), or create the node; do not set spec.nodeName by hand".into(),
            }),
            "notReady" => Some(Verdict {
            class: "boundNodeNotReady".into(),
                evidence: format!("bound to node {node}, which is not Ready"),
                judgment: "the pod waits for that node's kubelet, which is not reporting Ready".into(),
                action: "fix the node (kubectl describe node), or delete the pod so its controller recreates it elsewhere".into(),
            }),
            _ => None,
        };
        j.placeable = node_state == "exists";
        j.standing = Some(Standing::Bound { node, node_state });
        return j;
    }
    let scheduler = pod
        .spec
        .scheduler_name
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_SCHEDULER.into());
    let gang = gang_of(pod);
    if scheduler != DEFAULT_SCHEDULER {
        let group = gang
            .as_ref()
            .and_then(|(kind, name)| find_group(view, pod, *kind, name));
        j.verdict = Some(Verdict {
            class: "otherScheduler".into(),
            evidence: format!("schedulerName {scheduler}: not kube-scheduler's"),
            judgment: format!(
                "kube-scheduler never looks at this pod; {scheduler} decides where it runs, so no prediction is made from kube-scheduler's filters"
            ),
            action: match group {
                Some(g) => format!(
                    "see what {scheduler} says of its PodGroup {}/{} ({}) and its queue; is {scheduler} running?",
                    g.namespace,
                    g.name,
                    g.kind.resource()
                ),
                None => format!(
                    "check that {scheduler} runs and what it says of the pod (its events, its PodGroup or queue)"
                ),
            },
        });
        if let Some((kind, name)) = &gang {
            j.gang = Some(gang_once(pod, view, *kind, name, gangs));
        }
        j.standing = Some(Standing::OtherScheduler { scheduler });
        return j;
    }
    if let Some(v) = verdict::gated(pod) {
        j.verdict = Some(v);
        j.standing = Some(Standing::Gated);
        return j;
    }
    j.standing = Some(Standing::Filtered);
    let (filters, needs) = filters_for(pod, view);
    let (unmodelled, missing, states) = needs;
    j.unmodelled = unmodelled;
    j.missing = missing;
    j.claim_states = states;
    j.checked = view.nodes.iter().map(|n| filters.check(n)).collect();
    j.candidates = view.nodes.iter().map(|n| filters.is_candidate(n)).collect();
    j.predicted_message = super::message::scheduler_message(&j.checked);
    j.verdict = filters.verdict(view.nodes, &j.checked);
    if let Some(held) = verdict::claims_missing(&j.missing) {
        j.verdict = Some(held);
    }
    let fits = j.checked.iter().any(Result::is_ok);
    j.placeable = fits && j.missing.is_empty() && j.unmodelled.is_empty();
    if let Some(node) = pod
        .status
        .nominated_node_name
        .clone()
        .filter(|n| !n.is_empty())
    {
        let n = nomination(pod, view.nodes, node);
        if !j.placeable && n.node_exists {
            j.verdict = Some(nominated_verdict(&n));
        }
        j.nomination = Some(n);
    }
    if !fits && j.nomination.is_none() && j.missing.is_empty() && j.unmodelled.is_empty() {
        j.preemption = preemption(pod, view.nodes, &filters, &j.checked);
        if let (Some(p), Some(v)) = (&j.preemption, j.verdict.as_mut()) {
            v.judgment = format!(
                "{}; preemption would help: the scheduler may evict {} on {} (lower priority) to place it",
                v.judgment,
                p.victims.join(", "),
                p.node
            );
        }
    }
    if let Some((kind, name)) = &gang {
        let g = gang_once(pod, view, *kind, name, gangs);
        // A gang whose PodGroup was not read cannot be said to start: its scheduler holds
        // the pods until the group exists and its minimum can run, so neither is a fit.
        if g.satisfiable != Some(true) {
            j.placeable = false;
            if j.verdict.is_none() {
                j.verdict = Some(gang_verdict(&g));
            }
        }
        j.gang = Some(g);
    }
    // The referee: the scheduler refused the pod and the model finds room. The model may
    // miss what the scheduler sees (an extender, a custom profile, a filter not modelled),
    // or the cluster changed since; either way the pod is not called placeable. (A gang
    // that cannot start explains a refusal of a pod that fits alone: no disagreement.)
    if let Some(says) = &j.scheduler_says
        && j.placeable
        && says.reason == "Unschedulable"
    {
        j.placeable = false;
        let fitting: Vec<&str> = view
            .nodes
            .iter()
            .zip(&j.checked)
            .filter(|(_, r)| r.is_ok())
            .map(|(n, _)| n.name.as_str())
            .collect();
        j.disagreement = Some(format!(
            "the scheduler refused the pod (PodScheduled=False {}), while placekit's model finds {} node(s) passing every filter it models ({}): the scheduler decides. It may see what placekit does not model (an extender, a custom profile), or the cluster changed since it tried; its next attempt will tell",
            says.reason,
            fitting.len(),
            fitting.join(", ")
        ));
    }
    j
}

/// The verdict on a preemptor waiting for the room it made.
fn nominated_verdict(n: &Nomination) -> Verdict {
    let waiting = if n.terminating_victims.is_empty() {
        "no victim is left terminating there: the scheduler binds the pod on its next attempt, or nominates again".to_string()
    } else {
        format!(
            "it waits for {} victim(s) still terminating there: {}",
            n.terminating_victims.len(),
            n.terminating_victims.join(", ")
        )
    };
    Verdict {
            class: "nominated".into(),
        evidence: format!("preemption: nominated to node {}", n.node),
        judgment: format!(
            "the scheduler preempted lower-priority pods on {} to make room for this pod; {waiting}",
            n.node
        ),
        action: "wait for the victims to terminate; one that stays Terminating is held by a finalizer, a long grace period or an unreachable kubelet (kubectl get pod VICTIM -o yaml)".into(),
    }
}

/// The verdict on a pod that fits alone but whose gang cannot start.
fn gang_verdict(g: &GangJudgement) -> Verdict {
    let Some(min) = g.min_member else {
        return Verdict {
            class: "gang".into(),
            evidence: format!(
                "gang {}: its PodGroup ({}) was not read",
                g.group,
                g.kind.resource()
            ),
            judgment: "the pod belongs to a gang whose minimum placekit cannot see; its scheduler binds the group only when the PodGroup exists and its minimum can run at once".into(),
            action: "check that the PodGroup exists and what its status says (kubectl get podgroups -n NAMESPACE), and that you may read it".into(),
        };
    };
    Verdict {
            class: "gang".into(),
        evidence: format!(
            "gang {} cannot start: {} of minimum {} placeable together",
            g.group,
            g.scheduled + g.placeable_together,
            min
        ),
        judgment: "the pod fits a node alone, but its gang's scheduler binds the group only when its minimum can run at once".into(),
        action: "add capacity for the whole group (kubectl gpu-taint status shows the free GPUs), lower the PodGroup's minimum, or make the pods smaller".into(),
    }
}

type ClaimJudgement = (Vec<String>, Vec<MissingClaim>, Vec<ClaimState>);

/// The pod's filters over the view: DRA's when it has claims (or DRA-served extended
/// resources), the volume plugins' when it mounts claims. Returns what cannot be modelled,
/// the claims missing and each claim's state.
fn filters_for<'a>(pod: &'a Pod, view: ClusterView<'a>) -> (PodFilters<'a>, ClaimJudgement) {
    let mut filters = PodFilters::new(pod, view.nodes);
    let mut unmodelled = Vec::new();
    let mut missing = Vec::new();
    let mut states = Vec::new();
    if let Some(dra) = view.dra {
        let (needs, claim_states) = ClaimNeeds::of(
            &pod.metadata.namespace,
            &pod.spec.resource_claims,
            &pod.status.resource_claim_statuses,
            &pod.requests(),
            dra.claims,
            dra.inventory,
        );
        states = claim_states;
        unmodelled = needs.unmodelled.clone();
        missing = needs.missing.clone();
        if dra.claims_forbidden {
            // Not missing: unreadable. Whether the scheduler can allocate them is its word.
            unmodelled.extend(missing.drain(..).map(|m| m.unreadable_text()));
            for state in states.iter_mut().filter(|c| c.state == "missing") {
                state.state = "unreadable";
            }
        }
        if !needs.is_empty() {
            filters = filters.with_dra(needs, dra.inventory);
        }
    } else if !pod.spec.resource_claims.is_empty() {
        unmodelled.push("the pod's resource claims (DRA objects were not read)".into());
    }
    if PodVolumes::has_claims(pod) {
        match view.storage {
            Some(storage) if storage.unreadable.is_empty() => {
                filters = filters.with_volumes(PodVolumes::new(pod, view.nodes, Some(storage)));
            }
            Some(storage) => unmodelled.extend(
                storage
                    .unreadable
                    .iter()
                    .map(|u| format!("the pod's PersistentVolumeClaims ({u})")),
            ),
            None => unmodelled
                .push("the pod's PersistentVolumeClaims (storage objects were not read)".into()),
        }
    } else if pod
        .spec
        .volumes
        .iter()
        .any(|v| matches!(v.source, crate::model::pod::VolumeSource::Csi { .. }))
        && let Some(storage) = view.storage
    {
        filters = filters.with_volumes(PodVolumes::new(pod, view.nodes, Some(storage)));
    }
    (filters, (unmodelled, missing, states))
}

/// DefaultPreemption's PostFilter, in short: on each node that fails only for resources
/// (an Unschedulable status: a request over the node's whole allocatable cannot be helped),
/// every lower-priority pod that is not terminating removed, the filters run again, then the
/// victims reprieved from the highest priority down while the pod still fits. The node with
/// the fewest victims (then the lowest highest-victim priority) wins. Disruption budgets,
/// which the scheduler weighs in choosing victims, are not read.
fn preemption(
    pod: &Pod,
    nodes: &[NodeInfo],
    filters: &PodFilters<'_>,
    checked: &[Result<(), Vec<FilterFailure>>],
) -> Option<PreemptionWouldHelp> {
    if pod.spec.preemption_policy.as_deref() == Some("Never") {
        return None;
    }
    let priority = pod.spec.priority.unwrap_or(0);
    let requests = pod.requests();
    let mut best: Option<(usize, i32, String, Vec<String>)> = None;
    for (node, result) in nodes.iter().zip(checked) {
        let Err(failures) = result else { continue };
        let resources_only = failures.iter().all(|f| match f {
            FilterFailure::TooManyPods { .. } => true,
            FilterFailure::Insufficient { resource, .. } => {
                requests.get(resource).copied().unwrap_or(0)
                    <= node.allocatable.get(resource).copied().unwrap_or(0)
            }
            _ => false,
        });
        if !resources_only {
            continue;
        }
        let mut lower: Vec<usize> = node
            .pods
            .iter()
            .enumerate()
            .filter(|(_, p)| p.priority < priority && !p.terminating)
            .map(|(i, _)| i)
            .collect();
        if lower.is_empty() {
            continue;
        }
        let without = |evicted: &[usize]| {
            let mut n = node.clone();
            for i in evicted {
                let p = &node.pods[*i];
                n.pod_count -= 1;
                for (r, q) in &p.requests {
                    *n.requested.entry(r.clone()).or_default() -= q;
                }
            }
            n.pods = node
                .pods
                .iter()
                .enumerate()
                .filter(|(i, _)| !evicted.contains(i))
                .map(|(_, p)| p.clone())
                .collect();
            n
        };
        if filters.check(&without(&lower)).is_err() {
            continue;
        }
        // Reprieve the most important first: whoever can stay, stays.
        lower.sort_by_key(|i| std::cmp::Reverse(node.pods[*i].priority));
        let mut victims: Vec<usize> = lower.clone();
        for i in lower {
            let kept: Vec<usize> = victims.iter().copied().filter(|v| *v != i).collect();
            if filters.check(&without(&kept)).is_ok() {
                victims = kept;
            }
        }
        let top = victims
            .iter()
            .map(|i| node.pods[*i].priority)
            .max()
            .unwrap_or(i32::MIN);
        let named: Vec<String> = victims
            .iter()
            .map(|i| {
                let p = &node.pods[*i];
                format!("{}/{} (priority {})", p.namespace, p.name, p.priority)
            })
            .collect();
        let candidate = (victims.len(), top, node.name.clone(), named);
        if best
            .as_ref()
            .is_none_or(|b| (candidate.0, candidate.1) < (b.0, b.1))
        {
            best = Some(candidate);
        }
    }
    best.map(|(_, _, node, victims)| PreemptionWouldHelp { node, victims })
}

/// The nominated node and the lower-priority pods still terminating there.
fn nomination(pod: &Pod, nodes: &[NodeInfo], node: String) -> Nomination {
    let priority = pod.spec.priority.unwrap_or(0);
    let on = nodes.iter().find(|n| n.name == node);
    Nomination {
        terminating_victims: on
            .map(|n| {
                n.pods
                    .iter()
                    .filter(|p| p.terminating && p.priority < priority)
                    .map(|p| format!("{}/{}", p.namespace, p.name))
                    .collect()
            })
            .unwrap_or_default(),
        node_exists: on.is_some(),
        node,
    }
}

fn find_group<'v>(
    view: ClusterView<'v>,
    pod: &Pod,
    kind: GangKind,
    name: &str,
) -> Option<&'v PodGroup> {
    view.groups
        .iter()
        .find(|g| g.kind == kind && g.name == name && g.namespace == pod.metadata.namespace)
}

/// The gang of `pod` as a group: its members among the pending pods and on the nodes, and
/// how many of the pending ones the nodes can take together (each placed on the first node
/// that fits it, its requests then counted there), against the group's minimum.
fn judge_gang(pod: &Pod, view: ClusterView<'_>, kind: GangKind, name: &str) -> GangJudgement {
    let namespace = pod.metadata.namespace.as_str();
    let member = |p: &Pod| {
        p.metadata.namespace == namespace && gang_of(p).is_some_and(|(k, n)| k == kind && n == name)
    };
    let mut members: Vec<&Pod> = view
        .pending
        .iter()
        .filter(|p| member(p) && p.spec.node_name.as_deref().unwrap_or_default().is_empty())
        .collect();
    if !members.iter().any(|p| p.metadata.name == pod.metadata.name) {
        members.push(pod);
    }
    members.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let scheduled = view
        .pending
        .iter()
        .filter(|p| member(p) && !p.spec.node_name.as_deref().unwrap_or_default().is_empty())
        .count()
        + view
            .nodes
            .iter()
            .flat_map(|n| &n.pods)
            .filter(|p| {
                p.namespace == namespace
                    && view.pending.iter().all(|q| q.metadata.name != p.name)
                    && p.gang
                        .as_ref()
                        .is_some_and(|(k, n)| *k == kind && n == name)
            })
            .count();
    let mut nodes: Vec<NodeInfo> = view.nodes.to_vec();
    let mut placed = 0;
    let mut unplaced = Vec::new();
    for m in &members {
        let (filters, _) = filters_for(
            m,
            ClusterView {
                nodes: &nodes,
                ..view
            },
        );
        let results: Vec<_> = nodes.iter().map(|n| filters.check(n)).collect();
        let chosen = results.iter().position(Result::is_ok);
        match chosen {
            Some(i) => {
                placed += 1;
                let n = &mut nodes[i];
                n.pod_count += 1;
                for (r, q) in m.requests() {
                    *n.requested.entry(r).or_default() += q;
                }
                let mut placed_pod = super::node_info::PlacedPod::of(m);
                placed_pod.gang = Some((kind, name.to_string()));
                n.pods.push(placed_pod);
            }
            None => unplaced.push(format!(
                "{}: {}",
                m.metadata.name,
                super::message::scheduler_message(&results).unwrap_or_default()
            )),
        }
    }
    let group = find_group(view, pod, kind, name);
    let min_member = group.map(|g| g.min_member);
    GangJudgement {
        kind,
        group: format!("{namespace}/{name}"),
        min_member,
        scheduled,
        pending: members.len(),
        placeable_together: placed,
        unplaced,
        satisfiable: min_member.map(|min| (scheduled + placed) as i64 >= min),
        says: group.and_then(|g| g.says.clone()),
        queue: group.and_then(|g| g.queue.clone()),
    }
}
