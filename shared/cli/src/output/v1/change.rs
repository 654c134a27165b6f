//! `kind: ChangeReport`, the wire types of what a mutating command did: one typed outcome
//! per node, the policy findings and where they stood. `mutation` builds them from its plans
//! and outcomes (`NodeReport::of`; an outcome's wire form is `From<OutcomeKind>`, here) and
//! renders them as text; their shape here is the published one.

use std::path::PathBuf;

use serde::Serialize;

use placekit_core::plan::LabelDelta;
use placekit_core::rollback::RollbackConflict;
use placekit_core::snapshot::OutcomeKind;
use placekit_core::syntax::Taint;
use placekit_lint::checks::Finding;

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
