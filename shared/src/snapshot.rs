//! Snapshots: the before-state of every node a command changes, made durable before the
//! first write, followed by a journal of per-node outcomes appended as the command runs.
//!
//! # Format (`placekit.dev/v2`, kind `Snapshot`)
//!
//! A snapshot is one UTF-8 file of JSON Lines, mode 0600:
//!
//! 1. line 1, the **header**: `apiVersion`, `kind: Snapshot`, `tool`, `toolVersion`,
//!    `createdAt` (RFC 3339), `context`, `server` (without userinfo), `cluster` (the
//!    cluster's identity: `server`, and where they could be read `caFingerprint`, the
//!    SHA-256 of the kubeconfig's CA certificate, and `kubeSystemUid`, the uid of the
//!    `kube-system` namespace), `commandLine`, `operation` (`set`, `remove`, `import`,
//!    `dedicate`, `release`, `rollback`), optional `rollbackOf` (the snapshot a rollback
//!    undoes) and `nodes`: for each target node its `name`, `uid`, `resourceVersion`, the
//!    full `labelsBefore` and `taintsBefore`, the planned `labelChanges` (`key`, `before`,
//!    `after`; `null` is "absent") and `taintsAdded`, `taintsRemoved`, `taintsAfter`;
//! 2. then one **record** per line, appended as things happen: `{"kind":"Outcome",
//!    "node":…, "outcome":"applied"|"conflict"|"failed"|"unknown"|"skipped"|"notAttempted",
//!    "message":…, "at":…}` and `{"kind":"RolledBack","by":<snapshot file>,"partial":bool,
//!    "at":…}` (`partial`: the rollback left something of this snapshot in place).
//!
//! `placekit.dev/v1` snapshots (no `cluster`, no `unknown`, no `partial`) are still read;
//! their cluster is known by its server URL only.
//!
//! A snapshot written elsewhere with `--backup=PATH` is indexed in the state directory by
//! a one-line `*.snapshot-ref` file holding its absolute path, so `history` and
//! `rollback --last` see it like any other.
//!
//! The header is written to a temporary file, flushed, fsync'ed and atomically renamed
//! (and the directory fsync'ed) before [`SnapshotStore::create`] returns, so the
//! before-state is on disk before any write is allowed. Journal records are written with
//! one `write` each (they survive a crash of the process) and fsync'ed in groups (every
//! [`JOURNAL_SYNC_EVERY`] records and at the end): a machine crash may lose the last few
//! outcomes, which rollback tolerates because it compares every key with the live node
//! rather than trusting the journal.
//!
//! A truncated last line (the process died mid-write) is ignored when loading, and cut off
//! (or terminated, if it is a whole record without its newline) before anything is appended
//! to the file again, so a later record never lands glued to a torn one. A record that
//! cannot be written whole (a full disk) is cut back at once, so the file stays a sequence
//! of complete lines.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One node in a snapshot: full before-state and the planned change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// Which cluster a snapshot was taken on: context names are not unique (every kind cluster
/// is `kind-kind`), so `rollback --last` and the cross-cluster guard compare these instead.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterIdentity {
    /// The API server URL, without userinfo.
    pub server: String,
    /// `sha256:<hex>` of the first CA certificate the kubeconfig trusts, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_fingerprint: Option<String>,
    /// The uid of the `kube-system` namespace, if it could be read: stable for the life of
    /// the cluster and different for a recreated one at the same URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_system_uid: Option<String>,
}

impl ClusterIdentity {
    /// Whether `self` and `other` are the same cluster: the `kube-system` uid decides when
    /// both have one; otherwise two different CA fingerprints mean different clusters, and
    /// the server URL decides the rest.
    pub fn same_cluster(&self, other: &ClusterIdentity) -> bool {
        if let (Some(a), Some(b)) = (&self.kube_system_uid, &other.kube_system_uid) {
            return a == b;
        }
        if let (Some(a), Some(b)) = (&self.ca_fingerprint, &other.ca_fingerprint)
            && a != b
        {
            return false;
        }
        normalize_server(&self.server) == normalize_server(&other.server)
    }
}

impl std::fmt::Display for ClusterIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.server)?;
        if let Some(uid) = &self.kube_system_uid {
            write!(f, ", kube-system uid {uid}")?;
        }
        Ok(())
    }
}

/// A server URL without userinfo and trailing slash, for comparing and recording.
pub fn normalize_server(server: &str) -> String {
    let without_userinfo = match server.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => server.to_string(),
    };
    without_userinfo.trim_end_matches('/').to_string()
}

/// The first line of a snapshot file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
                    .map(|a| crate::ui::shell_quote(a)),
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// Append-only handle on a snapshot's journal.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    unsynced: usize,
    /// The file's length up to its last complete line: where the next record goes, and
    /// where a record that could not be written whole is cut back to.
    len: u64,
    /// [`JOURNAL_LIMIT_ENV`]: the size at which writes fail as on a full disk.
    limit: Option<u64>,
}

impl Journal {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens an existing snapshot's journal for appending (used to mark it rolled back),
    /// first repairing a torn last line.
    pub fn open_existing(path: &Path) -> Result<Self, SnapshotError> {
        // Append mode: two processes marking the same snapshot (two rollbacks) never write
        // over each other's records.
        let mut options = OpenOptions::new();
        options.read(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // The snapshot replaced by a symlink since it was read (after the confirmation)
            // is refused, not followed into the file it points at.
            options.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
        }
        let mut file = options.open(path).map_err(io_err(path))?;
        if !file.metadata().map_err(io_err(path))?.is_file() {
            return Err(SnapshotError::Untrusted(crate::trust::Untrusted {
                path: path.display().to_string(),
                reason: "not a regular file".into(),
            }));
        }
        let len = repair_tail(&mut file).map_err(io_err(path))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            unsynced: 0,
            len,
            // The test knob exists in debug builds only (the ones the tests run).
            limit: std::env::var(JOURNAL_LIMIT_ENV)
                .ok()
                .filter(|_| cfg!(debug_assertions))
                .and_then(|v| v.parse::<u64>().ok())
                .map(|room| len + room),
        })
    }

    /// Appends one record with a single write; fsyncs every [`JOURNAL_SYNC_EVERY`] records.
    /// A record that cannot be written whole is cut back off the file before the error is
    /// returned.
    pub fn record(&mut self, record: &JournalRecord) -> Result<(), SnapshotError> {
        let mut line = serde_json::to_vec(record).expect("journal records always serialise");
        line.push(b'\n');
        // Where this record starts: the end of the file now (another process may have
        // appended since the last record).
        let start = self.file.metadata().map_or(self.len, |m| m.len());
        if let Err(e) = self.write_line(start, &line) {
            // Cutting back frees the space the torn piece took; should even that fail, the
            // next open repairs the tail.
            let _ = self.file.set_len(start);
            return Err(io_err(&self.path)(e));
        }
        self.len = start + line.len() as u64;
        self.unsynced += 1;
        if self.unsynced >= JOURNAL_SYNC_EVERY {
            self.sync()?;
        }
        Ok(())
    }

    /// Lets the file grow to `limit` bytes only, as [`JOURNAL_LIMIT_ENV`] does.
    #[cfg(test)]
    pub(crate) fn limit_size(&mut self, limit: u64) {
        self.limit = Some(limit);
    }

    fn write_line(&mut self, start: u64, line: &[u8]) -> std::io::Result<()> {
        if let Some(limit) = self.limit
            && start + line.len() as u64 > limit
        {
            let fits = usize::try_from(limit.saturating_sub(start)).unwrap_or(0);
            self.file.write_all(&line[..fits.min(line.len())])?;
            return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
        }
        self.file.write_all(line)
    }

    /// Records a node's outcome now.
    pub fn record_outcome(
        &mut self,
        node: &str,
        outcome: OutcomeKind,
        message: Option<String>,
    ) -> Result<(), SnapshotError> {
        self.record(&JournalRecord::Outcome {
            node: node.to_string(),
            outcome,
            message,
            at: now_rfc3339(),
        })
    }

    /// Makes every record so far durable.
    pub fn sync(&mut self) -> Result<(), SnapshotError> {
        self.file.sync_data().map_err(io_err(&self.path))?;
        self.unsynced = 0;
        Ok(())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if self.unsynced > 0 {
            let _ = self.file.sync_data();
        }
    }
}

/// A summary line of `history`.
#[derive(Debug, Clone)]
pub struct SnapshotSummary {
    pub path: PathBuf,
    pub snapshot: Snapshot,
}

/// A snapshot file `history` could not read.
#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    pub path: PathBuf,
    pub reason: String,
}

/// A directory of snapshots.
#[derive(Debug, Clone)]
pub struct SnapshotStore {
    dir: PathBuf,
}

impl SnapshotStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SnapshotStore { dir: dir.into() }
    }

    /// The per-user default: `$PLACEKIT_STATE_DIR` if set (tests, sandboxes), else
    /// `$XDG_STATE_HOME/placekit/snapshots`, else the platform's equivalent
    /// (`~/.local/state` on Linux, `~/Library/Application Support` on macOS,
    /// `%LOCALAPPDATA%` on Windows).
    pub fn default_dir() -> Result<PathBuf, SnapshotError> {
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(dir) = env("PLACEKIT_STATE_DIR") {
            return Ok(dir);
        }
        let base = if let Some(x) = env("XDG_STATE_HOME") {
            x
        } else if cfg!(windows) {
            env("LOCALAPPDATA").ok_or(SnapshotError::NoStateDir)?
        } else if cfg!(target_os = "macos") {
            env("HOME")
                .ok_or(SnapshotError::NoStateDir)?
                .join("Library/Application Support")
        } else {
            env("HOME")
                .ok_or(SnapshotError::NoStateDir)?
                .join(".local/state")
        };
        Ok(base.join("placekit").join("snapshots"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A new file name in this store that sorts by time and names tool, operation and context.
    pub fn new_path(&self, header: &SnapshotHeader) -> PathBuf {
        let ts = jiff::Timestamp::now();
        let stamp = format!(
            "{}{:03}Z",
            ts.strftime("%Y%m%dT%H%M%S."),
            ts.subsec_millisecond()
        );
        let context: String = header
            .context
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        let base = format!(
            "{stamp}-{}-{}-{context}",
            plugin_name(&header.tool),
            header.operation
        );
        let mut path = self.dir.join(format!("{base}{SNAPSHOT_SUFFIX}"));
        let mut n = 2;
        while path.exists() {
            path = self.dir.join(format!("{base}-{n}{SNAPSHOT_SUFFIX}"));
            n += 1;
        }
        path
    }

    /// Writes a new snapshot in this store durably and returns its journal.
    pub fn create(&self, header: &SnapshotHeader) -> Result<Journal, SnapshotError> {
        crate::trust::check_private_dir(&self.dir).map_err(SnapshotError::Untrusted)?;
        create_dir_private(&self.dir)?;
        write_snapshot(&self.new_path(header), header)
    }

    /// Writes a snapshot at a path of the user's choice (`--backup=PATH`) and indexes it in
    /// this store, so `history` and `rollback --last` find it.
    pub fn create_at(
        &self,
        path: &Path,
        header: &SnapshotHeader,
    ) -> Result<Journal, SnapshotError> {
        let journal = write_snapshot(path, header)?;
        let absolute = std::path::absolute(journal.path()).map_err(io_err(path))?;
        create_dir_private(&self.dir)?;
        let name = self.new_path(header);
        let reference = name.with_file_name(
            name.file_name()
                .map(|n| {
                    n.to_string_lossy()
                        .replace(SNAPSHOT_SUFFIX, SNAPSHOT_REF_SUFFIX)
                })
                .unwrap_or_default(),
        );
        let mut line = absolute.display().to_string().into_bytes();
        line.push(b'\n');
        let result = (|| {
            let mut file = private_options()
                .write(true)
                .create_new(true)
                .open(&reference)?;
            file.write_all(&line)?;
            file.sync_all()?;
            sync_dir(&self.dir)
        })();
        result.map_err(io_err(&reference))?;
        Ok(journal)
    }

    /// Every snapshot in the store and every `--backup` snapshot indexed in it, oldest
    /// first (by the time-stamped index name). Unreadable files are skipped; see
    /// [`SnapshotStore::list_all`] for them.
    pub fn list(&self) -> Result<Vec<Snapshot>, SnapshotError> {
        Ok(self.list_all()?.0)
    }

    /// Like [`SnapshotStore::list`], and the files that could not be read, with why.
    ///
    /// The directory must be the user's and writable by nobody else (else an error saying
    /// how to fix it), and so must every file read from it: another's file is listed as
    /// unreadable and never offered to `rollback --last`.
    pub fn list_all(&self) -> Result<(Vec<Snapshot>, Vec<Unreadable>), SnapshotError> {
        crate::trust::check_private_dir(&self.dir).map_err(SnapshotError::Untrusted)?;
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Vec::new(), Vec::new()));
            }
            Err(e) => return Err(io_err(&self.dir)(e)),
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                let name = p.to_string_lossy();
                name.ends_with(SNAPSHOT_SUFFIX) || name.ends_with(SNAPSHOT_REF_SUFFIX)
            })
            .collect();
        paths.sort();
        let (mut snapshots, mut unreadable) = (Vec::new(), Vec::new());
        for p in paths {
            let (path, loaded) = if p.to_string_lossy().ends_with(SNAPSHOT_REF_SUFFIX) {
                match crate::trust::read_regular(&p, crate::trust::MAX_REF_BYTES, true) {
                    Ok(target) => {
                        let target = PathBuf::from(target.trim_end_matches('\n'));
                        let loaded = Snapshot::load_private(&target);
                        (target, loaded)
                    }
                    Err(e) => (p.clone(), Err(SnapshotError::Untrusted(e))),
                }
            } else {
                let loaded = Snapshot::load_private(&p);
                (p, loaded)
            };
            match loaded {
                Ok(s) => snapshots.push(s),
                Err(e) => unreadable.push(Unreadable {
                    path,
                    reason: e.to_string(),
                }),
            }
        }
        Ok((snapshots, unreadable))
    }

    /// What `rollback --last` undoes: the newest snapshot taken on `cluster` (by either
    /// plugin: one stack per cluster) that is not itself a rollback and is not (fully)
    /// rolled back — so repeated `--last` walks back through history. A snapshot whose
    /// rollback was itself rolled back is in effect again and counts as not rolled back.
    /// The caller refuses one made by the other plugin, naming it.
    pub fn last_undoable(
        &self,
        tool: &str,
        cluster: &ClusterIdentity,
    ) -> Result<Snapshot, SnapshotError> {
        let all = self.list()?;
        let undone = |s: &Snapshot| {
            s.fully_rolled_back()
                && s.records
                    .iter()
                    .rev()
                    .find_map(|r| match r {
                        JournalRecord::RolledBack { by, .. } => Some(by.as_str()),
                        _ => None,
                    })
                    .is_none_or(|by| {
                        !all.iter()
                            .any(|r| r.path == Path::new(by) && r.fully_rolled_back())
                    })
        };
        all.iter()
            .rev()
            .find(|s| {
                !s.header.is_rollback() && s.header.cluster().same_cluster(cluster) && !undone(s)
            })
            .cloned()
            .ok_or_else(|| SnapshotError::NoneFound {
                tool: tool.to_string(),
                cluster: cluster.to_string(),
                dir: self.dir.clone(),
            })
    }
}

/// The name users type after `kubectl` for a tool's binary (`kubectl-gpu_taint` ->
/// `gpu-taint`), used in snapshot file names.
pub fn plugin_name(tool: &str) -> String {
    tool.strip_prefix("kubectl-")
        .unwrap_or(tool)
        .replace('_', "-")
}

/// Makes `file` end with a complete line and leaves it positioned at its end: a torn last
/// line is cut off, or, when it is a whole record that only lacks its newline, terminated.
/// Returns the file's length afterwards.
fn repair_tail(file: &mut File) -> std::io::Result<u64> {
    let len = file.seek(SeekFrom::End(0))?;
    let mut last_byte = [0u8];
    if len == 0 || {
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last_byte)?;
        last_byte[0] == b'\n'
    } {
        file.seek(SeekFrom::End(0))?;
        return Ok(len);
    }
    // Read back in chunks (the header line can be long) until the previous newline.
    let mut tail: Vec<u8> = Vec::new();
    let mut start = len;
    let line_start = loop {
        let chunk = (64 * 1024u64).min(start);
        start -= chunk;
        let mut buf = vec![0; usize::try_from(chunk).unwrap_or(0)];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        buf.extend_from_slice(&tail);
        tail = buf;
        if let Some(i) = tail.iter().rposition(|&b| b == b'\n') {
            break start + i as u64 + 1;
        }
        if start == 0 {
            break 0;
        }
    };
    let last = &tail[usize::try_from(line_start - start).unwrap_or(0)..];
    if serde_json::from_slice::<serde_json::Value>(last).is_ok() {
        file.seek(SeekFrom::End(0))?;
        file.write_all(b"\n")?;
        return Ok(len + 1);
    }
    file.set_len(line_start)?;
    file.seek(SeekFrom::Start(line_start))?;
    Ok(line_start)
}

/// Writes a snapshot header to `path` durably (temp file, fsync, rename, fsync dir), mode
/// 0600, refusing to replace an existing file, and returns its journal.
pub fn write_snapshot(path: &Path, header: &SnapshotHeader) -> Result<Journal, SnapshotError> {
    if path.exists() {
        return Err(SnapshotError::Exists {
            path: path.to_path_buf(),
        });
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    remove_stale_temp_files(&dir);
    let tmp = dir.join(format!(".{file_name}{TEMP_MARK}{}", std::process::id()));
    let mut line = serde_json::to_vec(header).expect("snapshot headers always serialise");
    line.push(b'\n');
    let result = (|| {
        let mut file = private_options().write(true).create_new(true).open(&tmp)?;
        file.write_all(&line)?;
        file.sync_all()?;
        drop(file);
        // Refuse to clobber a file created meanwhile: hard_link fails if the target exists.
        fs::hard_link(&tmp, path)?;
        fs::remove_file(&tmp)?;
        sync_dir(&dir)
    })();
    if let Err(source) = result {
        let _ = fs::remove_file(&tmp);
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            return Err(SnapshotError::Exists {
                path: path.to_path_buf(),
            });
        }
        return Err(SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        });
    }
    Journal::open_existing(path)
}

/// What marks placekit's temporary header files: `.NAME.placekit-tmp-PID`.
const TEMP_MARK: &str = ".placekit-tmp-";

/// Removes the temporary header files that a placekit killed between writing its header
/// and linking it into place left behind: only files with placekit's own mark, older than
/// ten minutes (a header is linked within milliseconds), whose process is gone — the
/// directory of a `--backup` may be shared, and a pid from another host or container
/// proves nothing alone.
fn remove_stale_temp_files(dir: &Path) {
    #[cfg(target_os = "linux")]
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix('.')
            .and_then(|n| n.rsplit_once(TEMP_MARK))
            .and_then(|(_, pid)| pid.parse::<u32>().ok());
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(600));
        if let Some(pid) = pid
            && old
            && pid != std::process::id()
            && !Path::new("/proc").join(pid.to_string()).exists()
        {
            let _ = fs::remove_file(entry.path());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = dir;
}

fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

fn create_dir_private(dir: &Path) -> Result<(), SnapshotError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(io_err(dir))
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// The current time as RFC 3339 (UTC, seconds precision, like Kubernetes timestamps).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ChangeRequest, NodeState, plan_node};
    use crate::syntax::parse_label_changes;

    fn header(nodes: usize) -> SnapshotHeader {
        let plans: Vec<NodePlan> = (0..nodes)
            .map(|i| {
                let state = NodeState {
                    name: format!("gpu-{i}"),
                    uid: format!("uid-{i}"),
                    resource_version: "1".into(),
                    labels: [("pool".to_string(), "batch".to_string())].into(),
                    taints: vec![],
                    annotations: Default::default(),
                };
                plan_node(
                    &state,
                    &ChangeRequest {
                        labels: parse_label_changes(&["pool=online"]).unwrap(),
                        overwrite: true,
                        ..Default::default()
                    },
                )
            })
            .collect();
        SnapshotHeader::new(
            "kubectl-nodelabel",
            "0.1.0",
            "kind-gpu/admin",
            &ClusterIdentity {
                server: "https://127.0.0.1:6443".into(),
                ..Default::default()
            },
            vec!["kubectl-nodelabel".into(), "set".into()],
            "set",
            &plans,
        )
    }

    #[test]
    fn create_load_and_journal() {
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::new(dir.path().join("snaps"));
        let h = header(3);
        let mut journal = store.create(&h).unwrap();
        let path = journal.path().to_path_buf();
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .contains("-nodelabel-set-kind-gpu_admin")
        );
        journal
            .record_outcome("gpu-0", OutcomeKind::Applied, None)
            .unwrap();
        journal
            .record_outcome(
                "gpu-1",
                OutcomeKind::Conflict,
                Some("testing value failed".into()),
            )
            .unwrap();
        drop(journal);
        let snap = Snapshot::load(&path).unwrap();
        assert_eq!(snap.header, h);
        assert_eq!(snap.outcome_of("gpu-0"), Some(OutcomeKind::Applied));
        assert_eq!(snap.outcome_of("gpu-1"), Some(OutcomeKind::Conflict));
        assert_eq!(snap.outcome_of("gpu-2"), None);
        assert_eq!(
            snap.outcome_counts(),
            vec![
                (Some(OutcomeKind::Applied), 1),
                (Some(OutcomeKind::Conflict), 1),
                (None, 1)
            ]
        );
        let here = ClusterIdentity {
            server: "https://127.0.0.1:6443/".into(),
            ..Default::default()
        };
        assert_eq!(
            store
                .last_undoable("kubectl-nodelabel", &here)
                .unwrap()
                .path,
            path
        );
        let elsewhere = ClusterIdentity {
            server: "https://10.0.0.1:6443".into(),
            ..Default::default()
        };
        assert!(
            store
                .last_undoable("kubectl-nodelabel", &elsewhere)
                .is_err()
        );
    }

    #[cfg(unix)]
    #[test]
    fn files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::new(dir.path().join("snaps"));
        let journal = store.create(&header(1)).unwrap();
        let mode = fs::metadata(journal.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = fs::metadata(store.dir()).unwrap().permissions().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
    }

    #[test]
    fn refuses_to_overwrite_an_explicit_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("backup.jsonl");
        write_snapshot(&path, &header(1)).unwrap();
        assert!(matches!(
            write_snapshot(&path, &header(1)),
            Err(SnapshotError::Exists { .. })
        ));
    }

    #[test]
    fn unwritable_location_is_an_error_before_anything_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-dir").join("x.jsonl");
        assert!(matches!(
            write_snapshot(&path, &header(1)),
            Err(SnapshotError::Io { .. })
        ));
    }

    #[test]
    fn torn_last_line_is_ignored_but_corruption_inside_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut journal = write_snapshot(&path, &header(2)).unwrap();
        journal
            .record_outcome("gpu-0", OutcomeKind::Applied, None)
            .unwrap();
        drop(journal);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"kind\":\"Outc").unwrap();
        let snap = Snapshot::load(&path).unwrap();
        assert_eq!(snap.records.len(), 1);
        f.write_all(
            b"\n{\"kind\":\"Outcome\",\"node\":\"gpu-1\",\"outcome\":\"applied\",\"at\":\"x\"}\n",
        )
        .unwrap();
        assert!(matches!(
            Snapshot::load(&path),
            Err(SnapshotError::Malformed { line: 3, .. })
        ));
    }

    #[test]
    fn appending_first_repairs_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        // A header longer than one read-back chunk.
        let mut journal = write_snapshot(&path, &header(900)).unwrap();
        assert!(fs::metadata(&path).unwrap().len() > 64 * 1024);
        journal
            .record_outcome("gpu-0", OutcomeKind::Applied, None)
            .unwrap();
        drop(journal);
        let mark = |path: &Path| {
            let mut j = Journal::open_existing(path).unwrap();
            j.record(&JournalRecord::RolledBack {
                by: "rb".into(),
                partial: false,
                at: "t".into(),
                left_alone: Vec::new(),
            })
            .unwrap();
        };
        // A torn record: cut off, and the new record lands on its own line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"kind\":\"Outcome\",\"node\":\"gpu-1\",\"outc")
            .unwrap();
        mark(&path);
        let snap = Snapshot::load(&path).unwrap();
        assert_eq!(snap.records.len(), 2);
        assert!(snap.fully_rolled_back());
        // A whole record missing only its newline: kept and terminated.
        f.write_all(
            b"{\"kind\":\"Outcome\",\"node\":\"gpu-1\",\"outcome\":\"applied\",\"at\":\"x\"}",
        )
        .unwrap();
        mark(&path);
        let snap = Snapshot::load(&path).unwrap();
        assert_eq!(snap.records.len(), 4);
        assert_eq!(snap.outcome_of("gpu-1"), Some(OutcomeKind::Applied));
        // Whole lines only, none empty.
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.ends_with('\n') && !text.contains("\n\n"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn temp_files_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::new(dir.path());
        let make = |name: String, age_secs: u64| {
            let path = dir.path().join(name);
            let file = File::create(&path).unwrap();
            let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age_secs);
            file.set_modified(when).unwrap();
            path
        };
        // pid_max is at most 2^22, so pid 4999999 cannot exist; pid 1 always does.
        let stale = make(format!(".x{SNAPSHOT_SUFFIX}{TEMP_MARK}4999999"), 3600);
        let fresh = make(format!(".w{SNAPSHOT_SUFFIX}{TEMP_MARK}4999999"), 5);
        let live = make(format!(".y{SNAPSHOT_SUFFIX}{TEMP_MARK}1"), 3600);
        let not_ours = make(".keep.tmp-4999999".to_string(), 3600);
        drop(store.create(&header(1)).unwrap());
        assert!(!stale.exists());
        assert!(
            fresh.exists(),
            "a file this recent may be another host's header"
        );
        assert!(live.exists());
        assert!(not_ours.exists(), "another program's temp file");
    }

    #[test]
    fn unreadable_snapshots_are_listed_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::new(dir.path());
        drop(store.create(&header(1)).unwrap());
        let broken = dir.path().join(format!("x{SNAPSHOT_SUFFIX}"));
        fs::write(&broken, "{\"apiVersion\":\"placekit.dev/v2\"\n").unwrap();
        let (readable, unreadable) = store.list_all().unwrap();
        assert_eq!(readable.len(), 1);
        assert_eq!(unreadable.len(), 1);
        assert_eq!(unreadable[0].path, broken);
        assert!(unreadable[0].reason.contains(":1:"), "{:?}", unreadable[0]);
    }

    #[test]
    fn version_1_snapshots_are_read_with_their_server_as_identity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.snapshot.jsonl");
        fs::write(
            &path,
            concat!(
                r#"{"apiVersion":"placekit.dev/v1","kind":"Snapshot","tool":"kubectl-nodelabel","toolVersion":"0.1.0","createdAt":"2026-11-29T21:40:00Z","context":"gpu-prod","server":"https://10.0.0.1:6443/","commandLine":["kubectl-nodelabel","set"],"operation":"set","nodes":[]}"#,
                "\n",
                r#"{"kind":"RolledBack","by":"x.jsonl","at":"2026-11-29T21:41:00Z"}"#,
                "\n"
            ),
        )
        .unwrap();
        let snap = Snapshot::load(&path).unwrap();
        assert_eq!(snap.header.cluster().server, "https://10.0.0.1:6443");
        assert!(snap.header.cluster().same_cluster(&ClusterIdentity {
            server: "https://10.0.0.1:6443".into(),
            ca_fingerprint: Some("sha256:ab".into()),
            kube_system_uid: Some("u".into()),
        }));
        assert!(
            snap.fully_rolled_back(),
            "an old RolledBack record has no `partial`"
        );
    }

    #[test]
    fn rejects_unknown_versions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        fs::write(&path, "{\"apiVersion\":\"placekit.dev/v9\"}\n").unwrap();
        assert!(matches!(
            Snapshot::load(&path),
            Err(SnapshotError::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn cluster_identity_prefers_the_kube_system_uid() {
        let id = |server: &str, ca: Option<&str>, uid: Option<&str>| ClusterIdentity {
            server: server.into(),
            ca_fingerprint: ca.map(Into::into),
            kube_system_uid: uid.map(Into::into),
        };
        let a = id("https://127.0.0.1:6443", Some("sha256:a"), Some("u1"));
        assert!(a.same_cluster(&id("https://127.0.0.1:6443/", Some("sha256:a"), Some("u1"))));
        assert!(
            !a.same_cluster(&id("https://127.0.0.1:6443", Some("sha256:a"), Some("u2"))),
            "a recreated cluster at the same URL"
        );
        assert!(a.same_cluster(&id("https://lb.example:443", None, Some("u1"))));
        assert!(!a.same_cluster(&id("https://127.0.0.1:6443", Some("sha256:b"), None)));
        assert!(a.same_cluster(&id("https://127.0.0.1:6443", None, None)));
        assert!(!a.same_cluster(&id("https://127.0.0.1:6444", None, None)));
        assert_eq!(
            normalize_server("https://user:secret@example.com:6443/"),
            "https://example.com:6443"
        );
    }

    #[test]
    fn last_undoable_walks_back_and_skips_rollbacks() {
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::new(dir.path().join("snaps"));
        let here = header(1).cluster();
        let first = store.create(&header(1)).unwrap().path().to_path_buf();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let backup = dir.path().join("backup.jsonl");
        let second = store
            .create_at(&backup, &header(1))
            .unwrap()
            .path()
            .to_path_buf();
        assert_eq!(
            store
                .last_undoable("kubectl-nodelabel", &here)
                .unwrap()
                .path,
            second
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
        let mut undo = header(1);
        undo.rollback_of = Some(second.display().to_string());
        let undo_path = store.create(&undo).unwrap().path().to_path_buf();
        let mark = |of: &Path, by: &Path, partial: bool| {
            Journal::open_existing(of)
                .unwrap()
                .record(&JournalRecord::RolledBack {
                    by: by.display().to_string(),
                    partial,
                    at: now_rfc3339(),
                    left_alone: Vec::new(),
                })
                .unwrap()
        };
        mark(&second, &undo_path, true);
        assert_eq!(
            store
                .last_undoable("kubectl-nodelabel", &here)
                .unwrap()
                .path,
            second,
            "a partial rollback leaves it undoable"
        );
        mark(&second, &undo_path, false);
        assert_eq!(
            store
                .last_undoable("kubectl-nodelabel", &here)
                .unwrap()
                .path,
            first
        );
        mark(&first, &undo_path, false);
        assert!(store.last_undoable("kubectl-nodelabel", &here).is_err());
        assert_eq!(store.list().unwrap().len(), 3, "the backup is indexed");
    }

    #[test]
    fn rollback_marks_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        drop(write_snapshot(&path, &header(1)).unwrap());
        Journal::open_existing(&path)
            .unwrap()
            .record(&JournalRecord::RolledBack {
                by: "other.jsonl".into(),
                partial: false,
                at: now_rfc3339(),
                left_alone: Vec::new(),
            })
            .unwrap();
        assert_eq!(
            Snapshot::load(&path).unwrap().rolled_back_by(),
            vec!["other.jsonl"]
        );
    }
}
