//! The state directory's snapshots: creating them, listing them for `history` and
//! `rollback --last`, and finding them by name.

use std::fs::{self};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::format::{
    ClusterIdentity, JournalRecord, SNAPSHOT_REF_SUFFIX, SNAPSHOT_SUFFIX, Snapshot, SnapshotError,
    SnapshotHeader, io_err, plugin_name,
};
use super::journal::{Journal, create_dir_private, private_options, sync_dir, write_snapshot};

/// A summary line of `history`.
#[derive(Debug, Clone)]
pub struct SnapshotSummary {
    pub path: PathBuf,
    pub snapshot: Snapshot,
}

/// A snapshot file `history` could not read.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
        // The index goes into the state directory: checked as `create` checks it, before
        // anything is written (another user's directory would decide what `rollback --last`
        // finds).
        crate::trust::check_private_dir(&self.dir).map_err(SnapshotError::Untrusted)?;
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
