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

mod format;
mod journal;
mod store;

pub use format::{
    ClusterIdentity, JOURNAL_LIMIT_ENV, JOURNAL_SYNC_EVERY, JournalRecord, OutcomeKind,
    READABLE_SNAPSHOT_VERSIONS, SNAPSHOT_API_VERSION, SNAPSHOT_REF_SUFFIX, SNAPSHOT_SUFFIX,
    Snapshot, SnapshotError, SnapshotHeader, SnapshotNode, normalize_server, now_rfc3339,
    plugin_name,
};
pub use journal::{Journal, write_snapshot};
pub use store::{SnapshotStore, SnapshotSummary, Unreadable};

#[cfg(test)]
mod tests;
