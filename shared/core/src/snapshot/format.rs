//! The snapshot format: header, journal records, reading a snapshot back, and the
//! cluster identity a snapshot is taken on.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::cluster::{ClusterIdentity, normalize_server};
use crate::plan::{LabelDelta, NodePlan};
use crate::syntax::Taint;

/// The `apiVersion` of the snapshot format written now.
pub const SNAPSHOT_API_VERSION: &str = "placekit.dev/v2";
/// Older versions still read.
pub const READABLE_SNAPSHOT_VERSIONS: [&str; 2] = ["placekit.dev/v1", SNAPSHOT_API_VERSION];
/// Journal records between two fsyncs.
pub const JOURNAL_SYNC_EVERY: usize = 64;
/// File name suffix of snapshots.
pub const SNAPSHOT_SUFFIX: &str = ".snapshot.jsonl";
/// File name suffix of the index entries of `--backup=PATH` snapshots in the state directory.
pub const SNAPSHOT_REF_SUFFIX: &str = ".snapshot-ref";
/// For tests of a full disk: a journal may grow by this many bytes once opened; the write
/// that would cross the limit writes what fits and fails with "No space left on device",
/// as a write to a full file system does. Unset in normal use.
pub const JOURNAL_LIMIT_ENV: &str = "PLACEKIT_TEST_JOURNAL_BYTES";

/// Errors of the snapshot store.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(
        "cannot determine a state directory for snapshots: set XDG_STATE_HOME or HOME, or pass --backup=PATH"
    )]
    NoStateDir,
    #[error("snapshot {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("snapshot {path} already exists; choose another --backup path")]
    Exists { path: PathBuf },
    #[error("snapshot {path}:{line}: {message}")]
    Malformed {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A state directory, snapshot or index file placekit must not trust (another user's,
    /// writable by others, a symlink, not a regular file, too large).
    #[error("not trusted: {0}")]
    Untrusted(#[source] crate::trust::Untrusted),
    #[error("snapshot {path} has apiVersion {found:?}; this placekit reads {SNAPSHOT_API_VERSION}")]
    UnsupportedVersion { path: PathBuf, found: String },
    #[error(
        "nothing to undo: no snapshot taken on this cluster ({cluster}) that is not a rollback and not already rolled back, in {dir} (see `kubectl {} history`)",
        plugin_name(tool)
    )]
    NoneFound {
        tool: String,
        cluster: String,
        dir: PathBuf,
    },
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One node in a snapshot: full before-state and the planned change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotNode {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub labels_before: std::collections::BTreeMap<String, String>,
    pub taints_before: Vec<Taint>,
    pub label_changes: Vec<LabelDelta>,
    pub taints_added: Vec<Taint>,
    pub taints_removed: Vec<Taint>,
    pub taints_after: Vec<Taint>,
    /// placekit-owned annotations before (only those; see `plan::PLACEKIT_ANNOTATION_PREFIX`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations_before: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotation_changes: Vec<LabelDelta>,
}

impl From<&NodePlan> for SnapshotNode {
    fn from(plan: &NodePlan) -> Self {
        SnapshotNode {
            name: plan.before.name.clone(),
            uid: plan.before.uid.clone(),
            resource_version: plan.before.resource_version.clone(),
            labels_before: plan.before.labels.clone(),
            taints_before: plan.before.taints.clone(),
            label_changes: plan.label_changes.clone(),
            taints_added: plan.taints_added(),
            taints_removed: plan.taints_removed(),
            taints_after: plan.taints_after.clone(),
            annotations_before: plan.before.annotations.clone(),
            annotation_changes: plan.annotation_changes.clone(),
        }
    }
}

/// The first line of a snapshot file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotHeader {
    pub api_version: String,
    pub kind: String,
    pub tool: String,
    pub tool_version: String,
    pub created_at: String,
    pub context: String,
    pub server: String,
    /// Absent in `placekit.dev/v1` snapshots (see [`SnapshotHeader::cluster`]).
    #[serde(default, rename = "cluster", skip_serializing_if = "Option::is_none")]
    pub cluster_identity: Option<ClusterIdentity>,
    pub command_line: Vec<String>,
    pub operation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_of: Option<String>,
    pub nodes: Vec<SnapshotNode>,
}

impl SnapshotHeader {
    /// The command as the user typed it (`kubectl nodelabel set -l pool=online ...`), not
    /// the binary's path.
    pub fn user_command(&self) -> String {
        std::iter::once(format!("kubectl {}", plugin_name(&self.tool)))
            .chain(
                self.command_line
                    .iter()
                    .skip(1)
                    .map(|a| crate::text::shell_quote(a)),
            )
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A header for `plans` with the current time; plans that write nothing are left out.
    pub fn new(
        tool: &str,
        tool_version: &str,
        context: &str,
        cluster: &ClusterIdentity,
        command_line: Vec<String>,
        operation: &str,
        plans: &[NodePlan],
    ) -> Self {
        let cluster = ClusterIdentity {
            server: normalize_server(&cluster.server),
            ..cluster.clone()
        };
        SnapshotHeader {
            api_version: SNAPSHOT_API_VERSION.to_string(),
            kind: "Snapshot".to_string(),
            tool: tool.to_string(),
            tool_version: tool_version.to_string(),
            created_at: now_rfc3339(),
            context: context.to_string(),
            server: cluster.server.clone(),
            cluster_identity: Some(cluster),
            command_line,
            operation: operation.to_string(),
            rollback_of: None,
            nodes: plans
                .iter()
                .filter(|p| !p.is_noop())
                .map(SnapshotNode::from)
                .collect(),
        }
    }

    /// The cluster this snapshot was taken on (for v1 snapshots: its server URL only).
    pub fn cluster(&self) -> ClusterIdentity {
        self.cluster_identity
            .clone()
            .unwrap_or_else(|| ClusterIdentity {
                server: normalize_server(&self.server),
                ..ClusterIdentity::default()
            })
    }

    /// Whether this snapshot records a rollback.
    pub fn is_rollback(&self) -> bool {
        self.rollback_of.is_some()
    }
}

/// What happened to one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OutcomeKind {
    /// The write was accepted.
    Applied,
    /// A precondition failed: someone else changed a touched key or the taints.
    Conflict,
    /// The write failed for another reason (after retries, for transient errors) and a
    /// re-read showed the node unchanged.
    Failed,
    /// An attempt ended in a transport error and no re-read could tell whether the change
    /// was made: rollback compares this node like an applied one.
    Unknown,
    /// Nothing was sent (nothing to do, or filtered out).
    Skipped,
    /// The run stopped (Ctrl-C, fatal error) before this node was attempted.
    NotAttempted,
}

impl OutcomeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Applied => "applied",
            OutcomeKind::Conflict => "conflict",
            OutcomeKind::Failed => "failed",
            OutcomeKind::Unknown => "unknown",
            OutcomeKind::Skipped => "skipped",
            OutcomeKind::NotAttempted => "notAttempted",
        }
    }
}

/// A journal line after the header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind")]
pub enum JournalRecord {
    #[serde(rename_all = "camelCase")]
    Outcome {
        node: String,
        outcome: OutcomeKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        at: String,
    },
    #[serde(rename_all = "camelCase")]
    RolledBack {
        by: String,
        /// The rollback left part of this snapshot's change in place (failed or unknown
        /// writes, nodes it was not asked to restore): `rollback --last` still offers this
        /// snapshot. Keys someone changed since, left alone, do not make it partial.
        #[serde(default)]
        partial: bool,
        at: String,
        /// What the rollback left alone because someone changed it since (`node/N: label K
        /// is "x", expected "y"`): listed by `history` and `show`; `rollback SNAPSHOT
        /// --overwrite-changes` restores it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_alone: Vec<String>,
    },
}

/// A loaded snapshot: header and journal.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub path: PathBuf,
    pub header: SnapshotHeader,
    pub records: Vec<JournalRecord>,
}

impl Snapshot {
    /// The last recorded outcome of a node, if any.
    pub fn outcome_of(&self, node: &str) -> Option<OutcomeKind> {
        self.records.iter().rev().find_map(|r| match r {
            JournalRecord::Outcome {
                node: n, outcome, ..
            } if n == node => Some(*outcome),
            _ => None,
        })
    }

    /// The snapshots of rollbacks that undid this one.
    pub fn rolled_back_by(&self) -> Vec<&str> {
        self.records
            .iter()
            .filter_map(|r| match r {
                JournalRecord::RolledBack { by, .. } => Some(by.as_str()),
                _ => None,
            })
            .collect()
    }

    /// What the newest rollback of this snapshot left alone (changed since by others).
    pub fn left_alone(&self) -> &[String] {
        self.records
            .iter()
            .rev()
            .find_map(|r| match r {
                JournalRecord::RolledBack { left_alone, .. } => Some(left_alone.as_slice()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Whether the newest rollback of this snapshot restored all of it.
    pub fn fully_rolled_back(&self) -> bool {
        self.records
            .iter()
            .rev()
            .find_map(|r| match r {
                JournalRecord::RolledBack { partial, .. } => Some(!partial),
                _ => None,
            })
            .unwrap_or(false)
    }

    /// Count of nodes per last recorded outcome, in a fixed order, then (`None`) the nodes
    /// with no outcome recorded (the run died or its journal could not be written).
    pub fn outcome_counts(&self) -> Vec<(Option<OutcomeKind>, usize)> {
        let mut last = std::collections::HashMap::new();
        for r in &self.records {
            if let JournalRecord::Outcome { node, outcome, .. } = r {
                last.insert(node.as_str(), *outcome);
            }
        }
        let kinds = [
            Some(OutcomeKind::Applied),
            Some(OutcomeKind::Conflict),
            Some(OutcomeKind::Failed),
            Some(OutcomeKind::Unknown),
            Some(OutcomeKind::Skipped),
            Some(OutcomeKind::NotAttempted),
            None,
        ];
        kinds
            .iter()
            .map(|&k| {
                let n = self
                    .header
                    .nodes
                    .iter()
                    .filter(|node| last.get(node.name.as_str()).copied() == k)
                    .count();
                (k, n)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Loads a snapshot file.
    /// Reads a snapshot the user named: a regular file (not a FIFO or device, no symlink at
    /// its name) of bounded size.
    pub fn load(path: &Path) -> Result<Self, SnapshotError> {
        Self::load_checked(path, false)
    }

    /// Reads a snapshot found in the state directory: also the user's own and writable by
    /// nobody else.
    pub fn load_private(path: &Path) -> Result<Self, SnapshotError> {
        Self::load_checked(path, true)
    }

    fn load_checked(path: &Path, own: bool) -> Result<Self, SnapshotError> {
        let file = crate::trust::open_regular(path, crate::trust::MAX_SNAPSHOT_BYTES, own)
            .map_err(SnapshotError::Untrusted)?;
        let mut lines = BufReader::new(file).lines().enumerate().peekable();
        let malformed = |line: usize, message: String| SnapshotError::Malformed {
            path: path.to_path_buf(),
            line,
            message,
        };
        let (_, first) = lines
            .next()
            .ok_or_else(|| malformed(1, "empty file".into()))?;
        let first = first.map_err(io_err(path))?;
        let version: serde_json::Value =
            serde_json::from_str(&first).map_err(|e| malformed(1, e.to_string()))?;
        let found = version["apiVersion"].as_str().unwrap_or_default();
        if !READABLE_SNAPSHOT_VERSIONS.contains(&found) {
            return Err(SnapshotError::UnsupportedVersion {
                path: path.to_path_buf(),
                found: found.to_string(),
            });
        }
        let header: SnapshotHeader =
            serde_json::from_value(version).map_err(|e| malformed(1, e.to_string()))?;
        let mut records = Vec::new();
        while let Some((i, line)) = lines.next() {
            let line = line.map_err(io_err(path))?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str(&line) {
                Ok(r) => records.push(r),
                // A torn final line from a crash mid-append: everything before it counts.
                Err(_) if lines.peek().is_none() => break,
                Err(e) => return Err(malformed(i + 1, e.to_string())),
            }
        }
        Ok(Snapshot {
            path: path.to_path_buf(),
            header,
            records,
        })
    }
}

/// The current time as RFC 3339 (UTC, seconds precision, like Kubernetes timestamps).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The name users type after `kubectl` for a tool's binary (`kubectl-gpu_taint` ->
/// `gpu-taint`), used in snapshot file names.
pub fn plugin_name(tool: &str) -> String {
    tool.strip_prefix("kubectl-")
        .unwrap_or(tool)
        .replace('_', "-")
}
