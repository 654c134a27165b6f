//! The policy checks every change to a node goes through, whatever the command: this is
//! where to read what happens when a label is added, removed or changed, or a taint added
//! — what *blocks* (exit 1, nothing written, one named override to go on) and what only
//! warns.
//!
//! | Check | Blocks | Warns | Override |
//! |---|---|---|---|
//! | [`dependents`] | a workload's required constraint selects the node now and would not after | a bare pod bound there (keeps running); a preferred term that stops matching | `--ignore-dependents` |
//! | [`taint_losses`] | a workload loses *every* node it can use now to an added taint | it loses some (candidates left named); a DaemonSet that loses the node (consequence and toleration to add); "did you mean" for a near toleration | `--ignore-dependents` |
//! | [`disruption_budget_blocks`] | a NoExecute eviction the eviction API would refuse (budget without a disruption to spare) | — | `--ignore-disruption-budgets` |
//! | [`evictions`] | — | running pods an added taint keeps away; NoExecute evictions (must be confirmed) | `--yes` confirms |
//! | [`controllers::gpu_operator`] | a new `nvidia.com/mig.config`, or GPU operands switched off (`gpu.deploy.operands=false`, `gpu.deploy.device-plugin` off), on a node where pods use its GPUs (named, with the drain to run first) | the same on a node without GPU pods; a new device-plugin config (what the node advertises may change) | `--ignore-gpu-pods` |
//! | [`controllers::gpu_operator`] | refused: a `nvidia.com/device-plugin.config` that is not a key of the ClusterPolicy's config ConfigMap (the valid ones listed) | — | none |
//! | [`controllers::owners`] | refused: Karpenter's own keys (`karpenter.sh/…`) on a node it manages | a key nfd-master owns (re-applied); a label or taint on a Karpenter or managed-pool node (lost on replacement, with where to set it); a kubelet label | — |
//! | [`key_warnings`] | — | isolation-like keys outside `node-restriction.kubernetes.io/`, reserved namespaces | — |
//! | [`absent_removals`], [`near_keys`], [`near_values`] | — | a removed key no target has; a new key or value near an existing one ("did you mean") | — |
//!
//! - **Dependents**: a workload depends on a node's labels through its `nodeSelector` and
//!   required node affinity. A node that was never a candidate is not a dependent, and a
//!   change that keeps the node matching is harmless. For a DaemonSet a lost node means its
//!   pod there is deleted by its controller; for other workloads, new replicas can no longer
//!   land there. A bare pod already running on the node keeps running (required affinity
//!   is IgnoredDuringExecution). Workloads are the core kinds' templates, the templates of
//!   the custom resources the cluster serves (a scaled-to-zero worker group counts), and
//!   pods of any other controller, grouped under their owner.
//! - **Taints against workloads**: a workload template (or a custom resource's pods) whose
//!   required constraints select a node that does not tolerate the added taint loses that
//!   node.
//! - **Disruption budgets**: judged as the eviction API does (see
//!   [`disruption_budget_blocks`]), since `kubectl drain` waits for what it refuses.
//!
//! All of them are pure functions over plans and one [`ChangeView`] of the cluster, so they
//! are unit-tested without a server: the `placekit` crate's `mutation::pipeline` reads the view ([`ViewNeeds`]
//! says what), then [`judge`] runs every check over it.

use std::collections::{BTreeMap, BTreeSet};

use crate::dependents::{Constraint, KeyQuery, Workload, find_dependents};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use placekit_core::gpu::{AffectedPod, evicts, untolerating_pods};
use placekit_core::model::Pod;
use placekit_core::plan::{NodePlan, NodeState};
use placekit_core::scheduling::{
    NodeFacts, SCHEDULING_EFFECTS, pod_fits_node_affinity, terms_match, untolerated_taints,
};
use placekit_core::syntax::{LabelChange, Taint, TaintEffect};

/// The check that made a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Check {
    /// A workload's node constraints and the labels changed ([`dependents`]).
    Dependents,
    /// A workload and the nodes an added taint takes from it ([`taint_losses`]).
    TaintLosses,
    /// Running pods an added taint keeps away or evicts ([`evictions`]).
    Evictions,
    /// Evictions against PodDisruptionBudgets ([`disruption_budget_blocks`]).
    DisruptionBudgets,
    /// What the GPU operator does with the keys changed ([`controllers::gpu_operator`]).
    GpuOperator,
    /// Who owns a label or taint: Karpenter, a managed pool, nfd-master, the kubelet
    /// ([`controllers::owners`]).
    LabelOwners,
    /// The keys and values set: reserved namespaces, isolation-like keys, near typos, a
    /// removed key no node has.
    Keys,
    /// Something the checks needed and could not read.
    Unreadable,
    /// The command's own checks (a GPU preflight, a rollback's conflicts).
    Command,
}

/// The object a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Subject {
    pub kind: String,
    /// Empty for a cluster-scoped object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

/// One thing a check found, as data: the check, the object and nodes it is about, and its
/// words. Where it stands (refused, blocking, a warning) is the [`Findings`] list holding
/// it; the text output, the confirmation and the report render it from here.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub check: Check,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// The nodes it concerns, when it names some.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    pub message: String,
}

impl Finding {
    pub fn new(check: Check, message: impl Into<String>) -> Self {
        Finding {
            check,
            subject: None,
            nodes: Vec::new(),
            message: message.into(),
        }
    }

    /// About `workload`.
    pub fn about(mut self, workload: &Workload) -> Self {
        self.subject = Some(Subject {
            kind: workload.kind.clone(),
            namespace: workload.namespace.clone(),
            name: workload.name.clone(),
        });
        self
    }

    /// Concerning `nodes`.
    pub fn on<S: AsRef<str>>(mut self, nodes: &[S]) -> Self {
        self.nodes = nodes.iter().map(|n| n.as_ref().to_string()).collect();
        self
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What the checks found: blocking problems stop the command before anything is written
/// (unless forced), warnings are shown with the plan, and `confirm` must be confirmed
/// explicitly (it is part of the prompt and of the refusal without a terminal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Changes no override allows (a device-plugin config the ClusterPolicy does not have,
    /// Karpenter's own label on its node): nothing is written.
    pub refused: Vec<Finding>,
    /// Workloads that depend on what changes (`--ignore-dependents` goes on).
    pub blocking: Vec<Finding>,
    /// Evictions a PodDisruptionBudget does not allow (`--ignore-disruption-budgets`).
    pub budget_blocking: Vec<Finding>,
    /// GPU-operator reactions that take GPUs from running pods (`--ignore-gpu-pods`).
    pub gpu_blocking: Vec<Finding>,
    /// Taints removed that a controller owns (`--ignore-taint-owner`).
    pub owner_blocking: Vec<Finding>,
    pub warnings: Vec<Finding>,
    /// The evictions to confirm, as the prompt says them.
    pub confirm: Option<String>,
}

impl Findings {
    pub fn is_empty(&self) -> bool {
        *self == Findings::default()
    }

    pub fn extend(&mut self, other: Findings) {
        self.refused.extend(other.refused);
        self.blocking.extend(other.blocking);
        self.gpu_blocking.extend(other.gpu_blocking);
        self.owner_blocking.extend(other.owner_blocking);
        self.budget_blocking.extend(other.budget_blocking);
        self.warnings.extend(other.warnings);
        self.confirm = match (self.confirm.take(), other.confirm) {
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (a, b) => a.or(b),
        };
    }

    /// Adds warnings of `check` from their words.
    pub fn warn_all(&mut self, check: Check, texts: impl IntoIterator<Item = String>) {
        self.warnings
            .extend(texts.into_iter().map(|t| Finding::new(check, t)));
    }
}

/// What the checks of a change read from the cluster, gathered once before they judge
/// ([`ViewNeeds`] says what to read; `mutation::pipeline` reads it).
#[derive(Debug, Default)]
pub struct ChangeView {
    /// Every workload (templates, custom resources' pods, bare pods).
    pub workloads: Vec<Workload>,
    /// The active pods of the nodes that gain a restrictive taint or change a GPU-operator
    /// key.
    pub pods: Vec<Pod>,
    /// The GPU operator's objects, when a change touches one of its keys.
    pub gpu_operator: placekit_core::label_controllers::GpuOperatorView,
    /// Every node of the cluster, when a taint is added (a workload's last candidate may be
    /// the node changed).
    pub all_nodes: Vec<NodeState>,
    /// The disruption budgets, when a NoExecute taint evicts pods.
    pub budgets: Budgets,
    /// Kueue's topology-aware Workloads with pods on the nodes that gain a restrictive
    /// taint (none when Kueue is not installed).
    pub kueue_tas: Vec<placekit_core::kueue_tas::TasWorkload>,
    /// The taints NodePools and NodeFeatureRules declare, when a taint is removed.
    pub declared_taints: placekit_core::taint_owners::DeclaredTaints,
    /// Every node with the active pods bound to it, when a NoExecute taint evicts pods a
    /// controller replaces: where the replacements go is judged over it.
    pub cluster: Option<Vec<placekit_core::scheduler::NodeInfo>>,
    /// The storage objects behind the claims of the replaced pods, when one mounts a claim:
    /// a replacement keeps its pod's claims, so a node-local volume keeps it where it was.
    pub storage: Option<placekit_core::model::storage::Storage>,
    /// What could not be read (a kind placekit may not list): said as a warning.
    pub unreadable: Vec<String>,
}

/// The PodDisruptionBudgets an eviction is judged against.
#[derive(Debug, Default)]
pub enum Budgets {
    /// Nothing is evicted: none were read.
    #[default]
    NotNeeded,
    /// The budgets of the namespaces of evicted pods, and those namespaces' active pods.
    Read {
        budgets: Vec<PodDisruptionBudget>,
        pods: Vec<Pod>,
    },
    /// The budgets may not be listed (the reason).
    Unreadable(String),
}

/// What a change's checks need read, decided from its plans alone.
#[derive(Debug, Default)]
pub struct ViewNeeds {
    pub workloads: bool,
    /// The nodes whose active pods are needed, sorted.
    pub pods_on: Vec<String>,
    pub gpu_operator: bool,
    pub all_nodes: bool,
    /// The nodes that gain a restrictive taint, whose Kueue TAS Workloads are needed.
    pub kueue_tas_on: Vec<String>,
    /// A taint is removed (the objects that declare taints tell whose it is) or added (the
    /// NodePools' templates tell where a workload can still get a node).
    pub declared_taints: bool,
    added: Vec<(String, Taint)>,
}

impl ViewNeeds {
    pub fn of(plans: &[NodePlan]) -> Self {
        let added = added_restrictive_taints(plans);
        let operator_nodes: Vec<String> = gpu_operator_nodes(plans);
        let mut pods_on: Vec<String> = added.iter().map(|(n, _)| n.clone()).collect();
        pods_on.extend(operator_nodes.iter().cloned());
        pods_on.sort_unstable();
        pods_on.dedup();
        ViewNeeds {
            // The workloads are listed once, for the label check and the taint check alike.
            workloads: changes_labels(plans) || !added.is_empty(),
            pods_on,
            gpu_operator: !operator_nodes.is_empty(),
            all_nodes: !added.is_empty(),
            kueue_tas_on: {
                let mut nodes: Vec<String> = added.iter().map(|(n, _)| n.clone()).collect();
                nodes.dedup();
                nodes
            },
            // A removed taint: whose it is. An added one: the NodePools that can still
            // launch a node for a workload whose last node it takes.
            declared_taints: plans.iter().any(|p| !p.taints_removed().is_empty())
                || !added.is_empty(),
            added,
        }
    }

    /// Whether an added NoExecute taint evicts a pod that a controller replaces, once
    /// `pods` are read: the whole cluster's nodes and pods are needed to say where the
    /// replacement goes.
    pub fn replaced_evictions(&self, pods: &[Pod]) -> bool {
        evicted_by(&self.added, pods).iter().any(|p| {
            placekit_core::model::pod::controller_of(&p.metadata.owner_references)
                .is_some_and(|(kind, _)| kind != "DaemonSet")
        })
    }

    /// Whether a pod an added NoExecute taint evicts, that a controller replaces, mounts a
    /// PersistentVolumeClaim, once `pods` are read: the storage objects are needed to judge
    /// where its replacement can go. `Some` with the claims' namespace when they are all in
    /// one, `Some(None)` for every namespace.
    pub fn replaced_claims(&self, pods: &[Pod]) -> Option<Option<String>> {
        let mut namespaces: Vec<&str> = evicted_by(&self.added, pods)
            .into_iter()
            .filter(|p| {
                placekit_core::model::pod::controller_of(&p.metadata.owner_references)
                    .is_some_and(|(kind, _)| kind != "DaemonSet")
                    && placekit_core::scheduler::volumes::PodVolumes::has_claims(p)
            })
            .map(|p| p.metadata.namespace.as_str())
            .collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        match namespaces.as_slice() {
            [] => None,
            [one] => Some(Some(one.to_string())),
            _ => Some(None),
        }
    }

    /// The namespaces of the pods an added NoExecute taint evicts, once `pods` are read:
    /// their budgets are needed.
    pub fn evicted_namespaces(&self, pods: &[Pod]) -> Vec<String> {
        let mut namespaces: Vec<String> = evicted_by(&self.added, pods)
            .into_iter()
            .map(|p| p.metadata.namespace.clone())
            .collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        namespaces
    }
}

/// The pods the `added` taints evict (NoExecute, not tolerated), each once.
fn evicted_by<'p>(added: &[(String, Taint)], pods: &'p [Pod]) -> Vec<&'p Pod> {
    let mut evicted: Vec<&Pod> = added
        .iter()
        .flat_map(|(node, taint)| placekit_core::gpu::evicted_pods(pods, node, taint))
        .collect();
    evicted.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    evicted.dedup_by(|a, b| {
        a.metadata.namespace == b.metadata.namespace && a.metadata.name == b.metadata.name
    });
    evicted
}

/// The nodes whose plans change a key the GPU operator acts on.
fn gpu_operator_nodes(plans: &[NodePlan]) -> Vec<String> {
    plans
        .iter()
        .filter(|p| {
            p.label_changes
                .iter()
                .any(|c| placekit_core::label_controllers::is_gpu_operator_key(&c.key))
        })
        .map(|p| p.node().to_string())
        .collect()
}

/// Every policy check of a change, over what was read for it: the keys set, the dependents
/// of changed labels, the label owners, the GPU operator's reactions, and for an added
/// restrictive taint the evictions, the workloads that lose nodes and the budgets.
pub fn judge(plans: &[NodePlan], view: &ChangeView) -> Findings {
    let mut findings = Findings::default();
    findings.warn_all(Check::Keys, key_warnings(plans));
    findings.warn_all(Check::Unreadable, view.unreadable.iter().cloned());
    if changes_labels(plans) {
        findings.extend(dependents(plans, &view.workloads));
    }
    findings.extend(controllers::owners(plans, &view.declared_taints));
    if !gpu_operator_nodes(plans).is_empty() {
        findings.extend(controllers::gpu_operator(
            plans,
            &view.gpu_operator,
            &view.pods,
        ));
    }
    let added = added_restrictive_taints(plans);
    if !added.is_empty() {
        findings.extend(evictions(&added, &view.pods));
        if let Some(nodes) = &view.cluster {
            findings.extend(replacements(
                plans,
                &evicted_by(&added, &view.pods),
                nodes,
                view.storage.as_ref(),
            ));
        }
        findings.extend(taint_losses(
            &added,
            &view.workloads,
            &view.all_nodes,
            &view.declared_taints,
        ));
        findings.extend(controllers::kueue_tas(&added, &view.kueue_tas));
    }
    match &view.budgets {
        Budgets::NotNeeded => {}
        Budgets::Read { budgets, pods } => {
            findings.extend(disruption_budget_blocks(&added, pods, budgets));
        }
        Budgets::Unreadable(reason) => findings.warnings.push(Finding::new(
            Check::Unreadable,
            format!(
                "cannot list poddisruptionbudgets ({reason}): the evictions are not checked against them"
            ),
        )),
    }
    findings
}

/// Whether any plan changes a label: a removal or a new value can take a node away from a
/// required constraint, and so can an added key (`NotIn`, `DoesNotExist`).
pub fn changes_labels(plans: &[NodePlan]) -> bool {
    plans.iter().any(|p| !p.label_changes.is_empty())
}

/// The taints the plans add that can keep pods away (NoSchedule, NoExecute).
pub fn added_restrictive_taints(plans: &[NodePlan]) -> Vec<(String, Taint)> {
    plans
        .iter()
        .flat_map(|p| {
            p.taints_added()
                .into_iter()
                .filter(|t| t.effect != TaintEffect::PreferNoSchedule)
                .map(|t| (p.node().to_string(), t))
        })
        .collect()
}

/// Keys asked to be removed that none of the target nodes has: probably a typo (kubectl
/// says `label "x" not found`). Each warning names the closest key the nodes do have.
pub fn absent_removals(changes: &[LabelChange], nodes: &[NodeState]) -> Vec<String> {
    let present: BTreeSet<&str> = nodes
        .iter()
        .flat_map(|n| n.labels.keys().map(String::as_str))
        .collect();
    changes
        .iter()
        .filter_map(|c| match c {
            LabelChange::Remove { key } if !present.contains(key.as_str()) => Some(key),
            _ => None,
        })
        .map(|key| {
            let hint = placekit_core::suggest::nearest_key(key, present.iter().copied())
                .map(|near| format!(" (did you mean {near}?)"))
                .unwrap_or_default();
            format!(
                "label {key} is on none of the {} targeted: nothing to remove{hint}",
                placekit_core::text::count(nodes.len(), "node")
            )
        })
        .collect()
}

/// Whether `typed` is probably a typo of `known`: the same text but for case, or a small
/// edit distance for its length (one edit from 5 characters, two from 8) — short values
/// such as `a100` and `h100` are different values, not typos of each other.
fn looks_like_typo(typed: &str, known: &str) -> bool {
    if typed == known {
        return false;
    }
    if typed.eq_ignore_ascii_case(known) {
        return true;
    }
    let len = typed.chars().count().min(known.chars().count());
    let allowed = match len {
        0..=4 => 0,
        5..=7 => 1,
        _ => 2,
    };
    placekit_core::suggest::edit_distance(typed, known) <= allowed
}

/// Keys `set` adds that none of the target nodes has while a near key is there: probably
/// a typo (`gpu-famliy` for `gpu-family`), or the right name under another prefix
/// (`gpu-family` for `accelerator.example.com/gpu-family`). Shown before the confirmation.
pub fn near_keys(changes: &[LabelChange], nodes: &[NodeState]) -> Vec<String> {
    let present: BTreeSet<&str> = nodes
        .iter()
        .flat_map(|n| n.labels.keys().map(String::as_str))
        .collect();
    let name = |k: &str| k.rsplit_once('/').map_or(k, |(_, n)| n).to_string();
    changes
        .iter()
        .filter_map(|c| match c {
            LabelChange::Set { key, .. } if !present.contains(key.as_str()) => Some(key),
            _ => None,
        })
        .filter_map(|key| {
            let near: Vec<&str> = present
                .iter()
                .copied()
                .filter(|k| looks_like_typo(key, k) || (name(k) == name(key) && *k != key))
                .collect();
            (!near.is_empty()).then(|| {
                format!(
                    "label {key} is on none of the {} targeted, which have {}: did you mean {}? (set adds it as a new key)",
                    placekit_core::text::count(nodes.len(), "node"),
                    near.join(", "),
                    near.join(" or ")
                )
            })
        })
        .collect()
}

/// Values `set` gives a key that no node of the cluster has for it while a near value is
/// there (`80GB` for `80gb`, `llm-onlne` for `llm-online`). `values` holds every value
/// each key has on the cluster's nodes.
pub fn near_values(
    changes: &[LabelChange],
    values: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    changes
        .iter()
        .filter_map(|c| match c {
            LabelChange::Set { key, value } => Some((key, value)),
            LabelChange::Remove { .. } => None,
        })
        .filter_map(|(key, value)| {
            let known = values.get(key)?;
            if known.contains(value) {
                return None;
            }
            let near: Vec<&str> = known
                .iter()
                .map(String::as_str)
                .filter(|v| looks_like_typo(value, v))
                .collect();
            (!near.is_empty()).then(|| {
                format!(
                    "{key}={value}: no node has this value, and nodes have {key}={}: did you mean {}?",
                    near.join(", "),
                    near.join(" or ")
                )
            })
        })
        .collect()
}

/// Warnings about the label keys the plans set.
pub fn key_warnings(plans: &[NodePlan]) -> Vec<String> {
    let mut keys: Vec<&str> = plans
        .iter()
        .flat_map(|p| &p.label_changes)
        .filter(|d| d.after.is_some())
        .map(|d| d.key.as_str())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .flat_map(placekit_core::policy::label_warnings)
        .collect()
}

fn node_list(nodes: &[&str]) -> String {
    const SHOWN: usize = 3;
    let mut text: Vec<String> = nodes
        .iter()
        .take(SHOWN)
        .map(|n| format!("node/{n}"))
        .collect();
    if nodes.len() > SHOWN {
        text.push(format!("{} more", nodes.len() - SHOWN));
    }
    text.join(", ")
}

/// How a workload's constraints mention the changed keys, for the message.
fn constraint_text(workload: &Workload, keys: &[String], required: bool) -> String {
    let queries: Vec<KeyQuery> = keys.iter().map(|k| KeyQuery::parse(k)).collect();
    let mut parts: Vec<String> = find_dependents(std::slice::from_ref(workload), &queries)
        .into_iter()
        .filter(|d| d.constraint.is_required() == required)
        .map(|d| {
            let place = match d.constraint {
                Constraint::NodeSelector => "nodeSelector",
                Constraint::Required => "required node affinity",
                Constraint::Preferred => "preferred node affinity",
            };
            format!("{} ({place})", d.expression)
        })
        .collect();
    parts.dedup();
    if parts.is_empty() {
        "its node constraints".into()
    } else {
        parts.join(", ")
    }
}

/// The dependents of the plans' label changes (see the module docs for the rule).
pub fn dependents(plans: &[NodePlan], workloads: &[Workload]) -> Findings {
    let mut findings = Findings::default();
    let changing: Vec<&NodePlan> = plans
        .iter()
        .filter(|p| !p.label_changes.is_empty())
        .collect();
    if changing.is_empty() {
        return findings;
    }
    for w in workloads {
        let spec = &w.pod_spec;
        let has_required = spec.node_selector.as_ref().is_some_and(|s| !s.is_empty())
            || placekit_core::scheduling::required_node_terms(spec).is_some();
        let preferred: Vec<_> = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|p| p.iter().map(|t| t.preference.clone()).collect())
            .unwrap_or_default();
        if !has_required && preferred.is_empty() {
            continue;
        }
        let bound_to = spec.node_name.as_deref().filter(|_| w.kind == "Pod");
        // The nodes this workload loses, by kind of loss, and the keys that cause it.
        let mut lost_required: Vec<&str> = Vec::new();
        let mut kept_running: Vec<&str> = Vec::new();
        let mut lost_preferred: Vec<&str> = Vec::new();
        let mut keys: BTreeSet<String> = BTreeSet::new();
        for plan in &changing {
            let name = plan.node();
            if bound_to.is_some_and(|n| n != name) {
                continue;
            }
            let before = NodeFacts {
                name,
                labels: &plan.before.labels,
            };
            let after_labels = plan.labels_after();
            let after = NodeFacts {
                name,
                labels: &after_labels,
            };
            let mut touched = false;
            if has_required
                && pod_fits_node_affinity(spec, before)
                && !pod_fits_node_affinity(spec, after)
            {
                touched = true;
                if bound_to.is_some() {
                    kept_running.push(name);
                } else {
                    lost_required.push(name);
                }
            }
            if !preferred.is_empty()
                && preferred
                    .iter()
                    .any(|t| terms_match(std::slice::from_ref(t), before))
                && !preferred
                    .iter()
                    .any(|t| terms_match(std::slice::from_ref(t), after))
            {
                touched = true;
                lost_preferred.push(name);
            }
            if touched {
                for d in &plan.label_changes {
                    keys.insert(d.key.clone());
                }
            }
        }
        let keys: Vec<String> = keys.into_iter().collect();
        let who = w.reference();
        if !lost_required.is_empty() {
            let consequence = w.lost_node_consequence();
            let text = format!(
                "{who} requires {}: {} match{} it now and would not after this change; {consequence}",
                constraint_text(w, &keys, true),
                node_list(&lost_required),
                if lost_required.len() == 1 { "es" } else { "" },
            );
            findings.blocking.push(
                Finding::new(Check::Dependents, text)
                    .about(w)
                    .on(&lost_required),
            );
        }
        if !kept_running.is_empty() {
            let text = format!(
                "{who} runs on {} and requires {}, which it would no longer match: it keeps running (required node affinity is IgnoredDuringExecution) but could not be scheduled there again",
                node_list(&kept_running),
                constraint_text(w, &keys, true),
            );
            findings.warnings.push(
                Finding::new(Check::Dependents, text)
                    .about(w)
                    .on(&kept_running),
            );
        }
        if !lost_preferred.is_empty() {
            let text = format!(
                "{who} prefers {}: {} would no longer match; the scheduler will favour other nodes for its new pods (running pods stay)",
                constraint_text(w, &keys, false),
                node_list(&lost_preferred),
            );
            findings.warnings.push(
                Finding::new(Check::Dependents, text)
                    .about(w)
                    .on(&lost_preferred),
            );
        }
    }
    findings
}

/// The nodes of `pods`, each once, in order.
fn nodes_of(pods: &[AffectedPod]) -> Vec<String> {
    let mut nodes: Vec<String> = pods.iter().map(|p| p.node.clone()).collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

fn pod_list(pods: &[AffectedPod]) -> String {
    pods.iter()
        .map(|p| {
            format!(
                "{}/{} on node/{}{}",
                p.namespace,
                p.name,
                p.node,
                if p.daemon_set { " (DaemonSet pod)" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Workloads that lose nodes to the taints the plans add: for each workload (templates and
/// the pods of custom resources; bare pods are [`evictions`]' business), its candidates now
/// — nodes its required constraints select and whose NoSchedule/NoExecute taints it
/// tolerates — against the same nodes with the added taints. `nodes` is every node of the
/// cluster (a workload's last candidate may be the one node changed).
pub fn taint_losses(
    added: &[(String, Taint)],
    workloads: &[Workload],
    nodes: &[NodeState],
    declared: &placekit_core::taint_owners::DeclaredTaints,
) -> Findings {
    let mut findings = Findings::default();
    let mut new_taints: BTreeMap<&str, Vec<&Taint>> = BTreeMap::new();
    for (node, taint) in added {
        new_taints.entry(node.as_str()).or_default().push(taint);
    }
    for w in workloads.iter().filter(|w| w.kind != "Pod") {
        let spec = &w.pod_spec;
        let tolerations = spec.tolerations.as_deref().unwrap_or_default();
        let is_candidate = |n: &NodeState| {
            pod_fits_node_affinity(
                spec,
                NodeFacts {
                    name: &n.name,
                    labels: &n.labels,
                },
            ) && untolerated_taints(tolerations, &n.taints, SCHEDULING_EFFECTS).is_empty()
        };
        // The changed nodes first (a few): most workloads lose none of them, and only those
        // that do are judged over every node.
        let mut lost: Vec<(&str, &Taint)> = Vec::new();
        for n in nodes
            .iter()
            .filter(|n| new_taints.contains_key(n.name.as_str()))
        {
            if !is_candidate(n) {
                continue;
            }
            let untolerated = new_taints[n.name.as_str()].iter().copied().find(|t| {
                SCHEDULING_EFFECTS.contains(&t.effect)
                    && !tolerations
                        .iter()
                        .any(|x| placekit_core::scheduling::tolerates(x, t))
            });
            if let Some(t) = untolerated {
                lost.push((n.name.as_str(), t));
            }
        }
        if lost.is_empty() {
            continue;
        }
        let candidates = nodes.iter().filter(|n| is_candidate(n)).count();
        let who = w.reference();
        let taints: BTreeSet<String> = lost.iter().map(|(_, t)| t.to_string()).collect();
        let taint_text = taints.into_iter().collect::<Vec<_>>().join(", ");
        let lost_nodes: Vec<&str> = lost.iter().map(|(n, _)| *n).collect();
        let hint = near_tolerations(tolerations, lost.iter().map(|(_, t)| *t));
        if w.kind == "DaemonSet" {
            let (t, consequence) = (
                lost[0].1,
                if evicts(lost[0].1) {
                    "its pods there are evicted now and not recreated"
                } else {
                    "its pods there keep running, but one that goes (e.g. on the DaemonSet's next rollout) is not recreated there"
                },
            );
            let text = format!(
                "{who} selects {} and does not tolerate {taint_text}: {consequence}; to keep it there, add to its pod template the toleration {}{hint}",
                node_list(&lost_nodes),
                toleration_for(t),
            );
            findings.warnings.push(
                Finding::new(Check::TaintLosses, text)
                    .about(w)
                    .on(&lost_nodes),
            );
            continue;
        }
        let remaining = candidates - lost.len();
        // A Karpenter NodePool whose nodes the workload can use launches one for its pods:
        // the last node taken strands nothing (checked against the running Karpenter) —
        // unless the pool is at its limits.
        let (pool, at_limits) = if remaining == 0 {
            nodepool_rescue(spec, tolerations, declared)
        } else {
            (None, String::new())
        };
        let only = || {
            format!(
                "{who} does not tolerate {taint_text}, and {} {} the only node{} it can use now",
                node_list(&lost_nodes),
                if lost.len() == 1 { "is" } else { "are" },
                if lost.len() == 1 { "" } else { "s" },
            )
        };
        let (text, blocks) = match pool {
            Some(pool) => (
                format!(
                    "{}; Karpenter's NodePool {pool} launches a node for its new pods (its template has no such taint){hint}",
                    only()
                ),
                false,
            ),
            None if remaining == 0 => (
                format!(
                    "{}: new pods of it could not be scheduled anywhere{at_limits}{hint}",
                    only()
                ),
                true,
            ),
            None => (
                format!(
                    "{who} does not tolerate {taint_text} and loses {}: {remaining} of its {candidates} candidate nodes remain{hint}",
                    node_list(&lost_nodes),
                ),
                false,
            ),
        };
        let finding = Finding::new(Check::TaintLosses, text)
            .about(w)
            .on(&lost_nodes);
        if blocks {
            findings.blocking.push(finding);
        } else {
            findings.warnings.push(finding);
        }
    }
    findings
}

/// The Karpenter NodePool that launches a node for the pods of a workload left with no
/// node (its template's labels select it, its taints are tolerated, its limits leave room),
/// and the pools that would but for their limits, said as a parenthesis per pool.
fn nodepool_rescue<'a>(
    spec: &k8s_openapi::api::core::v1::PodSpec,
    tolerations: &[k8s_openapi::api::core::v1::Toleration],
    declared: &'a placekit_core::taint_owners::DeclaredTaints,
) -> (Option<&'a String>, String) {
    let pools: Vec<&String> = declared
        .nodepool_labels
        .iter()
        .filter(|(name, labels)| {
            let taints = declared.nodepools.get(*name).map(Vec::as_slice);
            pod_fits_node_affinity(spec, NodeFacts { name, labels })
                && untolerated_taints(tolerations, taints.unwrap_or_default(), SCHEDULING_EFFECTS)
                    .is_empty()
        })
        .map(|(name, _)| name)
        .collect();
    if pools.is_empty() {
        return (None, String::new());
    }
    let requests = pod_requests(spec);
    let (open, full): (Vec<&String>, Vec<&String>) = pools
        .into_iter()
        .partition(|name| declared.nodepool_exhausted(name, &requests).is_none());
    let at_limits = full
        .iter()
        .filter_map(|name| {
            let why = declared.nodepool_exhausted(name, &requests)?;
            Some(format!(
                " (Karpenter's NodePool {name} would launch a node for them, but {why})"
            ))
        })
        .collect();
    (open.first().copied(), at_limits)
}

/// A pod template's effective requests, in thousandths, as the scheduler counts them.
fn pod_requests(spec: &k8s_openapi::api::core::v1::PodSpec) -> BTreeMap<String, i128> {
    serde_json::to_value(spec)
        .ok()
        .and_then(|v| serde_json::from_value::<placekit_core::model::pod::PodSpec>(v).ok())
        .map(|spec| spec.requests())
        .unwrap_or_default()
}

/// What a PodDisruptionBudget allows now, as the disruption controller and the eviction API
/// judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Budget {
    healthy: i64,
    desired_healthy: i64,
    allowed: i64,
}

/// From the budget's status when the disruption controller has processed its current
/// generation; otherwise computed from its spec over the pods it selects now (expected =
/// the pods it selects, percentages rounded up as the controller does). A budget with
/// neither `minAvailable` nor `maxUnavailable` allows everything.
fn budget(pdb: &PodDisruptionBudget, selected: &[&Pod]) -> Option<Budget> {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let spec = pdb.spec.as_ref()?;
    if let Some(status) = &pdb.status
        && status.observed_generation.is_some()
        && status.observed_generation >= pdb.metadata.generation
        && let (Some(healthy), Some(desired_healthy), Some(allowed)) = (
            status.current_healthy,
            status.desired_healthy,
            status.disruptions_allowed,
        )
    {
        return Some(Budget {
            healthy: i64::from(healthy),
            desired_healthy: i64::from(desired_healthy),
            allowed: i64::from(allowed),
        });
    }
    let expected = selected.len() as i64;
    let healthy = selected.iter().filter(|p| p.is_healthy()).count() as i64;
    let scaled = |v: &IntOrString| match v {
        IntOrString::Int(n) => Some(i64::from(*n)),
        IntOrString::String(s) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .map(|p| (p * expected + 99) / 100),
    };
    let desired_healthy = match (&spec.max_unavailable, &spec.min_available) {
        (Some(max), _) => expected - scaled(max)?,
        (None, Some(min)) => scaled(min)?,
        (None, None) => return None,
    };
    Some(Budget {
        healthy,
        desired_healthy,
        allowed: (healthy - desired_healthy).max(0),
    })
}

/// Evictions by added NoExecute taints that a PodDisruptionBudget does not allow, as the
/// eviction API (and so `kubectl drain`) would refuse them: a Ready pod needs a disruption
/// the budget allows (each evicted pod takes one); a pod that is not Ready may go when the
/// budget is healthy or its `unhealthyPodEvictionPolicy` is `AlwaysAllow`. `pods` are the
/// active pods of the budgets' namespaces.
pub fn disruption_budget_blocks(
    added: &[(String, Taint)],
    pods: &[Pod],
    budgets: &[PodDisruptionBudget],
) -> Findings {
    let mut findings = Findings::default();
    let mut evicted: Vec<(&str, &Pod)> = Vec::new();
    for (node, taint) in added {
        for p in placekit_core::gpu::evicted_pods(pods, node, taint) {
            if !evicted.iter().any(|(_, e)| std::ptr::eq(*e, p)) {
                evicted.push((node.as_str(), p));
            }
        }
    }
    for pdb in budgets {
        let namespace = pdb.metadata.namespace.as_deref().unwrap_or_default();
        let Some(spec) = &pdb.spec else { continue };
        let selects = |p: &Pod| {
            p.metadata.namespace == namespace
                && placekit_core::scheduling::label_selector_matches(
                    spec.selector.as_ref(),
                    &p.metadata.labels,
                )
        };
        let hit: Vec<&(&str, &Pod)> = evicted.iter().filter(|(_, p)| selects(p)).collect();
        if hit.is_empty() {
            continue;
        }
        let selected: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.is_active() && selects(p))
            .collect();
        let Some(b) = budget(pdb, &selected) else {
            continue;
        };
        let always_allow = spec.unhealthy_pod_eviction_policy.as_deref() == Some("AlwaysAllow");
        let mut left = b.allowed;
        let mut refused: Vec<String> = Vec::new();
        for (node, p) in hit {
            let may_go = if p.is_healthy() {
                left -= 1;
                left >= 0
            } else {
                always_allow || b.healthy >= b.desired_healthy
            };
            if !may_go {
                refused.push(format!("{namespace}/{} on node/{node}", p.metadata.name));
            }
        }
        if refused.is_empty() {
            continue;
        }
        let rule = match (&spec.max_unavailable, &spec.min_available) {
            (Some(v), _) => format!("maxUnavailable: {}", int_or_string(v)),
            (None, Some(v)) => format!("minAvailable: {}", int_or_string(v)),
            (None, None) => String::new(),
        };
        let name = pdb.metadata.name.clone().unwrap_or_default();
        let text = format!(
            "PodDisruptionBudget {namespace}/{} ({rule}; {} of {} pods healthy, {} needed) allows {} disruption{} now: evicting {} would break it, and `kubectl drain` would wait rather than evict {}",
            name,
            b.healthy,
            selected.len(),
            b.desired_healthy,
            b.allowed,
            if b.allowed == 1 { "" } else { "s" },
            refused.join(", "),
            if refused.len() == 1 { "it" } else { "them" },
        );
        let mut finding = Finding::new(Check::DisruptionBudgets, text);
        finding.subject = Some(Subject {
            kind: "PodDisruptionBudget".into(),
            namespace: namespace.to_string(),
            name,
        });
        findings.budget_blocking.push(finding);
    }
    findings
}

fn int_or_string(v: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString) -> String {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    match v {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// "; did you mean K=V:E (the workload tolerates it)?" when a toleration names the taint's
/// key with another value (a typo such as llm-onlne for llm-online) or another effect.
fn near_tolerations<'a>(
    tolerations: &[k8s_openapi::api::core::v1::Toleration],
    taints: impl Iterator<Item = &'a Taint>,
) -> String {
    let mut near: BTreeSet<String> = BTreeSet::new();
    for t in taints {
        for x in tolerations {
            if x.key.as_deref() != Some(t.key.as_str()) {
                continue;
            }
            let value = x.value.clone().unwrap_or_default();
            let effect = x.effect.clone().unwrap_or_default();
            if x.operator.as_deref() == Some("Exists") {
                if !effect.is_empty() && effect != t.effect.to_string() {
                    near.insert(format!("{}:{effect}", t.key));
                }
                continue;
            }
            let taint_value = t.value.clone().unwrap_or_default();
            let value_near = value != taint_value
                && placekit_core::suggest::nearest_key(&taint_value, [value.as_str()]).is_some();
            let effect_differs = !effect.is_empty() && effect != t.effect.to_string();
            if value_near || (value == taint_value && effect_differs) {
                let shown_effect = if effect.is_empty() {
                    t.effect.to_string()
                } else {
                    effect
                };
                near.insert(if value.is_empty() {
                    format!("{}:{shown_effect}", t.key)
                } else {
                    format!("{}={value}:{shown_effect}", t.key)
                });
            }
        }
    }
    if near.is_empty() {
        String::new()
    } else {
        format!(
            "; did you mean {} (the workload tolerates it)?",
            near.into_iter().collect::<Vec<_>>().join(" or ")
        )
    }
}

/// The toleration that tolerates exactly `taint`, as YAML flow.
fn toleration_for(taint: &Taint) -> String {
    match taint.value.as_deref().filter(|v| !v.is_empty()) {
        None => format!(
            "{{key: {}, operator: Exists, effect: {}}}",
            taint.key, taint.effect
        ),
        Some(value) => format!(
            "{{key: {}, operator: Equal, value: {value}, effect: {}}}",
            taint.key, taint.effect
        ),
    }
}

/// Running pods that do not tolerate the taints the plans add.
pub fn evictions(added: &[(String, Taint)], pods: &[Pod]) -> Findings {
    let mut findings = Findings::default();
    let mut confirm = Vec::new();
    let mut by_taint: BTreeMap<String, (Taint, Vec<AffectedPod>)> = BTreeMap::new();
    for (node, taint) in added {
        let entry = by_taint
            .entry(taint.to_string())
            .or_insert_with(|| (taint.clone(), Vec::new()));
        entry.1.extend(untolerating_pods(pods, node, taint));
    }
    for (taint, affected) in by_taint.values() {
        if affected.is_empty() {
            continue;
        }
        let count = format!(
            "{} running pod{}",
            affected.len(),
            if affected.len() == 1 { "" } else { "s" }
        );
        if evicts(taint) {
            let text = format!(
                "{taint} is NoExecute: {count} that do{} not tolerate it will be EVICTED: {}",
                if affected.len() == 1 { "es" } else { "" },
                pod_list(affected)
            );
            confirm.push(text.clone());
            findings
                .warnings
                .push(Finding::new(Check::Evictions, text).on(&nodes_of(affected)));
        } else {
            let text = format!(
                "{count} do{} not tolerate {taint}; they keep running ({}), but new pods without the toleration will not schedule there: {}",
                if affected.len() == 1 { "es" } else { "" },
                taint.effect,
                pod_list(affected)
            );
            findings
                .warnings
                .push(Finding::new(Check::Evictions, text).on(&nodes_of(affected)));
        }
    }
    if !confirm.is_empty() {
        findings.confirm = Some(confirm.join("\n"));
    }
    findings
}

/// Where the replacements of evicted pods go, one finding per controller: the nodes they
/// fit on, or that they stay Pending, with the scheduler's message
/// (`placekit_core::scheduler::replacements`).
pub fn replacements(
    plans: &[NodePlan],
    evicted_pods: &[&Pod],
    nodes: &[placekit_core::scheduler::NodeInfo],
    storage: Option<&placekit_core::model::storage::Storage>,
) -> Findings {
    use placekit_core::scheduler::replacements::{Landing, NodeAfter, replacements};
    let changed: Vec<NodeAfter> = plans
        .iter()
        .map(|p| NodeAfter {
            name: p.node().to_string(),
            labels: p.labels_after(),
            taints: p.taints_after.clone(),
        })
        .collect();
    let mut by_controller: BTreeMap<(String, String), Vec<(String, Landing)>> = BTreeMap::new();
    for r in replacements(evicted_pods, nodes.to_vec(), &changed, storage) {
        let Some(controller) = r.controller else {
            continue;
        };
        by_controller
            .entry((r.namespace.clone(), controller))
            .or_default()
            .push((r.pod, r.landing));
    }
    let mut findings = Findings::default();
    for ((namespace, controller), pods) in by_controller {
        let (kind, name) = controller.split_once(' ').unwrap_or((&controller, ""));
        let evicted = pods.len();
        let mut fit_on: Vec<&str> = Vec::new();
        let mut pending: Vec<&str> = Vec::new();
        let mut judged = 0;
        for (_, landing) in &pods {
            match landing {
                Landing::Fits { nodes } => {
                    judged += 1;
                    fit_on.extend(nodes.iter().map(String::as_str));
                }
                Landing::Pending { message } => {
                    judged += 1;
                    pending.push(message);
                }
                Landing::NotReplaced | Landing::NotJudged { .. } => {}
            }
        }
        if judged == 0 {
            // Said rather than left out: the other controllers' replacements are placed, and
            // a silence here would read as "nothing to say".
            if let Some(why) = pods.iter().find_map(|(_, landing)| match landing {
                Landing::NotJudged { why } => Some(*why),
                _ => None,
            }) {
                let (theirs, goes) = if evicted == 1 {
                    ("the replacement of its evicted pod", "goes")
                } else {
                    ("the replacements of its evicted pods", "go")
                };
                let on = nodes_of_evicted(&pods, evicted_pods, &namespace);
                findings.warnings.push(
                    Finding::new(
                        Check::Evictions,
                        format!(
                            "{kind} {namespace}/{name}: where {theirs} {goes} is not judged ({why}); `kubectl affinity-lint why-pending` judges it once it exists"
                        ),
                    )
                    .on(&on),
                );
            }
            continue;
        }
        fit_on.sort_unstable();
        fit_on.dedup();
        let nodes_list = |nodes: &[&str]| {
            const SHOWN: usize = 5;
            let mut shown: Vec<String> = nodes
                .iter()
                .take(SHOWN)
                .map(|n| format!("node/{n}"))
                .collect();
            if nodes.len() > SHOWN {
                shown.push(format!("{} more", nodes.len() - SHOWN));
            }
            shown.join(", ")
        };
        let (theirs, fit) = if evicted == 1 {
            ("the replacement of its evicted pod".to_string(), "fits")
        } else {
            (
                format!("the replacements of its {evicted} evicted pods"),
                "fit",
            )
        };
        let text = match (pending.first(), fit_on.is_empty()) {
            (None, _) => format!(
                "{kind} {namespace}/{name}: {theirs} {fit} on {} after the change",
                nodes_list(&fit_on)
            ),
            (Some(message), true) => {
                format!("{kind} {namespace}/{name}: {theirs} will stay Pending: {message}")
            }
            (Some(message), false) => format!(
                "{kind} {namespace}/{name}: of {theirs}, {} will stay Pending ({message}); the others fit on {}",
                pending.len(),
                nodes_list(&fit_on)
            ),
        };
        let on = nodes_of_evicted(&pods, evicted_pods, &namespace);
        findings
            .warnings
            .push(Finding::new(Check::Evictions, text).on(&on));
    }
    findings
}

/// The nodes the evicted `pods` (of one controller, in `namespace`) are on, sorted.
fn nodes_of_evicted<T>(
    pods: &[(String, T)],
    evicted_pods: &[&Pod],
    namespace: &str,
) -> Vec<String> {
    let mut on: Vec<String> = pods
        .iter()
        .filter_map(|(pod, _)| {
            evicted_pods
                .iter()
                .find(|p| p.metadata.namespace == namespace && &p.metadata.name == pod)
                .and_then(|p| p.spec.node_name.clone())
        })
        .collect();
    on.sort_unstable();
    on.dedup();
    on
}

pub mod controllers;

#[cfg(test)]
mod tests;
