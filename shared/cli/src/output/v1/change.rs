//! `kind: ChangeReport`, the wire types of what a mutating command did: one typed outcome
//! per node, the label and taint changes, the rollback conflicts, the policy findings and
//! where they stood. Every type of the report is defined here, frozen: the model's types
//! (core's plans, taints and conflicts, the linter's findings) are converted with `From`,
//! so a refactor of the model cannot change the published shape. `mutation` builds the
//! report from its plans and outcomes (`NodeReport::of`) and renders it as text.

use std::path::PathBuf;

use serde::Serialize;

use placekit_core::snapshot::OutcomeKind;

/// What happened to one node, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    Applied,
    /// `--dry-run`: what would be written.
    Planned,
    /// Already as requested: nothing sent.
    Unchanged,
    Conflict,
    Failed,
    /// A transport error left it undecided and no re-read could decide it.
    Unknown,
    /// Not written on purpose (a rollback of a recreated or deleted node).
    Skipped,
    /// The run stopped before this node.
    NotAttempted,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Planned => "planned",
            Outcome::Unchanged => "unchanged",
            Outcome::Conflict => "conflict",
            Outcome::Failed => "failed",
            Outcome::Unknown => "unknown",
            Outcome::Skipped => "skipped",
            Outcome::NotAttempted => "notAttempted",
        }
    }

    /// Whether this outcome makes the command exit 1.
    pub fn is_problem(self) -> bool {
        matches!(
            self,
            Outcome::Conflict
                | Outcome::Failed
                | Outcome::Unknown
                | Outcome::Skipped
                | Outcome::NotAttempted
        )
    }

    /// Every outcome, in the order a summary counts them.
    pub const ORDER: [Outcome; 8] = [
        Outcome::Applied,
        Outcome::Planned,
        Outcome::Unchanged,
        Outcome::Conflict,
        Outcome::Failed,
        Outcome::Unknown,
        Outcome::Skipped,
        Outcome::NotAttempted,
    ];
}

impl From<OutcomeKind> for Outcome {
    fn from(kind: OutcomeKind) -> Self {
        match kind {
            OutcomeKind::Applied => Outcome::Applied,
            OutcomeKind::Conflict => Outcome::Conflict,
            OutcomeKind::Failed => Outcome::Failed,
            OutcomeKind::Unknown => Outcome::Unknown,
            OutcomeKind::Skipped => Outcome::Skipped,
            OutcomeKind::NotAttempted => Outcome::NotAttempted,
        }
    }
}

/// One node in a report.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    pub name: String,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub label_changes: Vec<LabelDelta>,
    pub taints_added: Vec<Taint>,
    pub taints_removed: Vec<Taint>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub annotation_changes: Vec<LabelDelta>,
    /// Rollback only: keys someone changed after the original command.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<RollbackConflict>,
}

/// What a mutating command did: the `-o json|yaml` output (`kind: ChangeReport`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub operation: String,
    /// none, client or server.
    pub dry_run: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<PathBuf>,
    /// The exact command that undoes what was applied (absent when nothing was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback_command: Option<String>,
    /// Rollback only: the exact command that also restores what was left alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overwrite_command: Option<String>,
    pub nodes: Vec<NodeReport>,
    pub warnings: Vec<String>,
    /// What makes the command exit 1 besides a node's outcome (a taint left in place
    /// because its value differs, a rollback that restored nothing it was asked to).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The signal that interrupted the writes (`SIGINT`, `SIGTERM`, `SIGHUP`): the command
    /// exits 130.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// What the policy checks found, as data: where each stood, which check, the object
    /// and nodes it is about, and its words (those of `warnings` and `problems`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<ReportedFinding>,
}

/// Where a policy finding stood in the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Standing {
    /// No override allows it: nothing was written.
    Refused,
    /// Its override (`override`) was not given: nothing was written.
    Blocking,
    /// It would have blocked; its override was given.
    Overridden,
    /// Said, and the change went on.
    Warning,
}

/// A policy finding in the report: where it stood, the flag that overrides it, and the
/// finding.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportedFinding {
    pub standing: Standing,
    /// The flag that lets the change go on despite it (`--ignore-dependents`…).
    #[serde(rename = "override", skip_serializing_if = "Option::is_none")]
    pub override_flag: Option<String>,
    #[serde(flatten)]
    pub finding: Finding,
}

/// One label key's change on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelDelta {
    pub key: String,
    /// `None`: the key did not exist.
    pub before: Option<String>,
    /// `None`: the key is removed.
    pub after: Option<String>,
}

impl From<&placekit_core::plan::LabelDelta> for LabelDelta {
    fn from(delta: &placekit_core::plan::LabelDelta) -> Self {
        LabelDelta {
            key: delta.key.clone(),
            before: delta.before.clone(),
            after: delta.after.clone(),
        }
    }
}

/// A node taint exactly as the API server stores it.
///
/// `value` and `time_added` are kept verbatim (absent stays absent) because plans assert the
/// current taint list with a JSON Patch `test`, which compares JSON structurally: a taint
/// re-serialised with `"value": ""` or a reformatted timestamp would never match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub effect: TaintEffect,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
}

impl From<&placekit_core::syntax::Taint> for Taint {
    fn from(taint: &placekit_core::syntax::Taint) -> Self {
        Taint {
            key: taint.key.clone(),
            value: taint.value.clone(),
            effect: taint.effect.into(),
            time_added: taint.time_added.clone(),
        }
    }
}

/// The three taint effects the API server accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl From<placekit_core::syntax::TaintEffect> for TaintEffect {
    fn from(effect: placekit_core::syntax::TaintEffect) -> Self {
        use placekit_core::syntax::TaintEffect as Model;
        match effect {
            Model::NoSchedule => TaintEffect::NoSchedule,
            Model::PreferNoSchedule => TaintEffect::PreferNoSchedule,
            Model::NoExecute => TaintEffect::NoExecute,
        }
    }
}

/// A key or taint that someone changed after the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollbackConflict {
    /// `label <key>` or `taint <key>:<effect>`.
    pub item: String,
    /// What the node has now (`None`: absent).
    pub found: Option<String>,
    /// What the command set and rollback expected to find (`None`: absent).
    pub expected: Option<String>,
    /// Whether `--overwrite-changes` made the rollback restore it anyway.
    pub forced: bool,
}

impl From<placekit_core::rollback::RollbackConflict> for RollbackConflict {
    fn from(conflict: placekit_core::rollback::RollbackConflict) -> Self {
        RollbackConflict {
            item: conflict.item,
            found: conflict.found,
            expected: conflict.expected,
            forced: conflict.forced,
        }
    }
}

/// One thing a check found, as data: the check, the object and nodes it is about, and its
/// words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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

impl From<placekit_lint::checks::Finding> for Finding {
    fn from(finding: placekit_lint::checks::Finding) -> Self {
        Finding {
            check: finding.check.into(),
            subject: finding.subject.map(|s| Subject {
                kind: s.kind,
                namespace: s.namespace,
                name: s.name,
            }),
            nodes: finding.nodes,
            message: finding.message,
        }
    }
}

/// The check that made a finding.
// The variants' words are the published schema's, which name the checks of placekit-lint
// they come from (not items of this crate).
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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

impl From<placekit_lint::checks::Check> for Check {
    fn from(check: placekit_lint::checks::Check) -> Self {
        use placekit_lint::checks::Check as Model;
        match check {
            Model::Dependents => Check::Dependents,
            Model::TaintLosses => Check::TaintLosses,
            Model::Evictions => Check::Evictions,
            Model::DisruptionBudgets => Check::DisruptionBudgets,
            Model::GpuOperator => Check::GpuOperator,
            Model::LabelOwners => Check::LabelOwners,
            Model::Keys => Check::Keys,
            Model::Unreadable => Check::Unreadable,
            Model::Command => Check::Command,
        }
    }
}

/// The object a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Subject {
    pub kind: String,
    /// Empty for a cluster-scoped object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}
