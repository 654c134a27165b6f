//! The pending-pod runbook's verdict: which filter stopped the candidates, what it means and
//! what to do.

use std::collections::BTreeMap;

use serde::Serialize;

use super::filters::{FilterFailure, PodFilters, affinity_detail};
use super::node_info::NodeInfo;

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

/// Maps the per-node failures to the runbook's table. Nodes that fail node affinity (or that
/// the pod's `matchFields` do not name) were never candidates, so when some node passes
/// affinity the verdict comes from what stopped the candidates (the most common of their
/// failures); otherwise it is the affinity verdict.
pub fn verdict(failures: &[FilterFailure]) -> Option<Verdict> {
    let not_candidate = |f: &FilterFailure| {
        matches!(
            f,
            FilterFailure::NodeAffinity { .. }
                | FilterFailure::NotNamed
                | FilterFailure::NamedNodesConflict
        )
    };
    let candidates: Vec<&FilterFailure> = failures.iter().filter(|f| !not_candidate(f)).collect();
    let considered: Vec<&FilterFailure> = if candidates.is_empty() {
        failures.iter().collect()
    } else {
        candidates
    };
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for f in considered.iter().copied() {
        let k = match f {
            FilterFailure::NodeAffinity { .. }
            | FilterFailure::NotNamed
            | FilterFailure::NamedNodesConflict => "affinity",
            FilterFailure::Taint { .. } => "taint",
            FilterFailure::Insufficient { .. } => "resources",
            FilterFailure::TooManyPods { .. } => "pods",
            FilterFailure::Unschedulable => "unschedulable",
            FilterFailure::TopologySpread { .. } => "spread",
            FilterFailure::PodAffinity { .. } => "podAffinity",
            FilterFailure::PodAntiAffinity { .. } => "antiAffinity",
            FilterFailure::ExistingPodAntiAffinity { .. } => "existingAntiAffinity",
            FilterFailure::ClaimNotAvailable { .. } => "claimNotAvailable",
            FilterFailure::CannotAllocateClaims { .. } => "claims",
            FilterFailure::PreFilter { .. } => "preFilter",
            FilterFailure::NodePorts { .. } => "ports",
            FilterFailure::Volume { .. } => "volumes",
        };
        *counts.entry(k).or_default() += 1;
    }
    let (top, _) = counts
        .iter()
        .max_by_key(|(k, n)| (**n, std::cmp::Reverse(**k)))?;
    let v = |e: &str, j: &str, a: &str| Verdict {
        class: (*top).to_string(),
        evidence: e.into(),
        judgment: j.into(),
        action: a.into(),
    };
    Some(match *top {
        "affinity" => v(
            "didn't match Pod's node affinity",
            "hard condition has no candidates",
            "compare expression, label key and value (kubectl nodelabel dependents, affinity-lint --cluster)",
        ),
        "taint" => v(
            "had untolerated taint",
            "missing matching toleration",
            "add the required toleration after confirming workload eligibility",
        ),
        "resources" => {
            let resource = considered
                .iter()
                .find_map(|f| match f {
                    FilterFailure::Insufficient { resource, .. } => Some(resource.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            v(
                &format!("Insufficient {resource}"),
                "candidate node capacity is already requested",
                "scale up, free legitimate workloads, or reduce replica count",
            )
        }
        "pods" => v(
            "Too many pods",
            "node pod limit reached",
            "check CNI, node limits and stray pods",
        ),
        "spread" => v(
            "didn't match pod topology spread constraints",
            "another replica here would exceed maxSkew, or candidates lack the topology key",
            "add capacity in the emptiest topology domains, label the candidates with the key, or relax maxSkew / whenUnsatisfiable: ScheduleAnyway",
        ),
        "podAffinity" => v(
            "didn't match pod affinity rules",
            "no pod the required pod affinity names runs in a candidate's domain",
            "check that the pods the rule names run (and their labels), or make the rule preferred",
        ),
        "antiAffinity" => v(
            "didn't match pod anti-affinity rules",
            "every candidate's domain already runs a pod the pod's own anti-affinity excludes",
            "add nodes (or domains) for the extra replica, reduce replicas, or make the rule preferred",
        ),
        "claims" => v(
            "cannot allocate all claims",
            "no candidate node has enough free devices of the claimed device class (DRA): the others are allocated, or tainted and not tolerated by the claim",
            "free devices (finished pods' claims keep theirs until deleted); for tainted devices, fix the device and delete its DeviceTaintRule, or tolerate the taint in the claim's request (spec.devices.requests[].exactly.tolerations); or add nodes whose DRA driver publishes the class's devices, or ask for fewer (kubectl gpu-taint status shows devices per node)",
        ),
        "claimNotAvailable" => v(
            "resourceclaim not available on the node",
            "a claim of the pod is already allocated to devices the candidate nodes cannot reach",
            "schedule the pod where its claim's devices are, or delete the claim so it is allocated anew",
        ),
        "preFilter" => {
            let message = considered
                .iter()
                .find_map(|f| match f {
                    FilterFailure::PreFilter { message, .. } => Some(message.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            v(
                &message,
                "the pod's PersistentVolumeClaims stop it before any node is looked at: a claim is missing, being deleted, lost, or of an Immediate class and not bound yet",
                "create the claim, or check why it is not bound (kubectl describe pvc: the provisioner's events, a matching PersistentVolume, its StorageClass)",
            )
        }
        "ports" => v(
            "didn't have free ports for the requested pod ports",
            "every candidate already runs a pod holding the host port (hostPort or hostNetwork) the pod asks for",
            "free the port on a candidate (move or stop the pod holding it), add a node, or drop the hostPort / hostNetwork",
        ),
        "volumes" => {
            let reason = considered
                .iter()
                .find_map(|f| match f {
                    FilterFailure::Volume { reason, .. } => Some(reason.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            v(
                &reason,
                "the pod's volumes keep it off the candidates: a bound PersistentVolume reachable only elsewhere (its node affinity or zone), no volume to bind or provision here, a ReadWriteOncePod claim in use, or the node's CSI attach limit",
                "run the pod where its volume is (the PersistentVolume's nodeAffinity and zone labels), or recreate the claim where the pod may run; for ReadWriteOncePod, stop the pod using the claim",
            )
        }
        "existingAntiAffinity" => v(
            "didn't satisfy existing pods anti-affinity rules",
            "running pods' anti-affinity keeps this pod out of the candidates' domains",
            "check the anti-affinity of the pods on the candidate nodes (kubectl get pods -o wide)",
        ),
        _ => v(
            "node(s) were unschedulable",
            "candidate nodes are cordoned",
            "uncordon the nodes or add capacity",
        ),
    })
}

impl PodFilters<'_> {
    /// The runbook table's verdict when no node fits (see [`verdict`]). A node that is no
    /// candidate counts as a node affinity failure even when an earlier filter (a taint, a
    /// cordon) stopped it first: the verdict is about what would make the pod schedulable.
    pub fn verdict(
        &self,
        nodes: &[NodeInfo],
        results: &[Result<(), Vec<FilterFailure>>],
    ) -> Option<Verdict> {
        if results.iter().any(Result::is_ok) {
            return None;
        }
        let failures: Vec<FilterFailure> = nodes
            .iter()
            .zip(results)
            .filter_map(|(n, r)| {
                let first = r.as_ref().err()?.first()?.clone();
                let affinity_class = matches!(
                    first,
                    FilterFailure::NodeAffinity { .. }
                        | FilterFailure::NotNamed
                        | FilterFailure::NamedNodesConflict
                );
                Some(if affinity_class || self.is_candidate(n) {
                    first
                } else {
                    FilterFailure::NodeAffinity {
                        detail: affinity_detail(self.spec, n),
                    }
                })
            })
            .collect();
        verdict(&failures)
    }
}

/// A pod held by `spec.schedulingGates`: the scheduler leaves it in its gated queue and runs
/// no filter until every gate is gone, whatever the nodes offer. `None` without gates.
pub fn gated(pod: &crate::model::Pod) -> Option<Verdict> {
    let gates: Vec<&str> = pod
        .spec
        .scheduling_gates
        .iter()
        .map(|g| g.name.as_str())
        .collect();
    if gates.is_empty() {
        return None;
    }
    // Kueue v0.17 gates each pod it manages with both (checked on the running Kueue; its
    // pod controller's `prepare` and the TAS topology ungater remove the second).
    let owner = |gate: &str| -> &'static str {
        match gate {
            "kueue.x-k8s.io/topology" => {
                "Kueue removes it at admission, or under topology-aware scheduling once the pod is given its topology domain"
            }
            g if g.starts_with("kueue.x-k8s.io/") => {
                "Kueue removes it when it admits the workload (see its Workload's conditions and the ClusterQueue's quota)"
            }
            _ => "the controller that added it removes it when the pod may run",
        }
    };
    let owners: Vec<String> = gates.iter().map(|g| format!("{g}: {}", owner(g))).collect();
    Some(Verdict {
        class: "gated".into(),
        evidence: format!("scheduling gates: {}", gates.join(", ")),
        judgment: "the scheduler does not consider the pod until every scheduling gate is removed; no node is judged".into(),
        action: owners.join("; "),
    })
}

/// What Kueue's Workload says about a gated pod's admission, from its conditions (read as
/// the API server returns them): admitted or not, its ClusterQueue, and the reason Kueue
/// gives (`couldn't assign flavors to pod set main: insufficient unused quota ...`). Strings
/// are the cluster's; the caller escapes them for a terminal.
pub fn kueue_admission(workload: &serde_json::Value) -> String {
    let name = format!(
        "Workload {}/{}",
        workload["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default(),
        workload["metadata"]["name"].as_str().unwrap_or_default()
    );
    let queue = workload["spec"]["queueName"].as_str().unwrap_or_default();
    let condition = |kind: &str| {
        workload["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
    };
    let said = |c: &serde_json::Value| {
        let reason = c["reason"].as_str().unwrap_or_default();
        let message = c["message"].as_str().unwrap_or_default();
        match (reason.is_empty(), message.is_empty()) {
            (_, false) if !reason.is_empty() => format!("{reason}: {message}"),
            (_, false) => message.to_string(),
            (false, true) => reason.to_string(),
            (true, true) => String::new(),
        }
    };
    if let Some(admitted) = condition("Admitted").filter(|c| c["status"] == "True") {
        let cluster_queue = workload["status"]["admission"]["clusterQueue"]
            .as_str()
            .unwrap_or_default();
        return format!(
            "{name} is admitted to ClusterQueue {cluster_queue} ({}): Kueue removes the gate next",
            said(admitted)
        );
    }
    let waiting = match condition("QuotaReserved") {
        Some(c) if c["status"] == "True" => format!(
            "quota is reserved; waiting for its admission checks ({})",
            said(c)
        ),
        Some(c) => format!("not admitted: {}", said(c)),
        None if queue.is_empty() => "not admitted and names no LocalQueue".to_string(),
        None => "not admitted yet: Kueue has not processed it (is Kueue running?)".to_string(),
    };
    let queue = if queue.is_empty() {
        String::new()
    } else {
        format!(" (LocalQueue {queue})")
    };
    format!("{name}{queue} is {waiting}")
}

/// A pod whose ResourceClaims do not exist yet: DynamicResources' PreFilter stops it before
/// any node is filtered. `None` when every claim exists.
pub fn claims_missing(missing: &[crate::dra::MissingClaim]) -> Option<Verdict> {
    let listed: Vec<String> = missing.iter().map(ToString::to_string).collect();
    (!missing.is_empty()).then(|| Verdict {
        class: "claimMissing".into(),
        evidence: format!("resource claim missing: {}", listed.join("; ")),
        judgment: "the scheduler waits for the pod's ResourceClaim to exist before it considers any node".into(),
        action: "create the claim, or run the resourceclaim controller (kube-controller-manager) that generates it from the template".into(),
    })
}
