//! Writing snapshots durably: the header fsync'ed and renamed into place, the journal
//! appended one record per write, a torn tail repaired before anything is appended.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::format::{
    JOURNAL_LIMIT_ENV, JOURNAL_SYNC_EVERY, JournalRecord, OutcomeKind, SnapshotError,
    SnapshotHeader, io_err, now_rfc3339,
};

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
    /// For tests of the executor (another crate); not part of the API.
    #[doc(hidden)]
    pub fn limit_size(&mut self, limit: u64) {
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

/// Makes `file` end with a complete line and leaves it positioned at its end: a torn last
/// line is cut off, or, when it is a whole record that only lacks its newline, terminated.
/// Returns the file's length afterwards.
pub(super) fn repair_tail(file: &mut File) -> std::io::Result<u64> {
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
pub(super) const TEMP_MARK: &str = ".placekit-tmp-";

/// Removes the temporary header files that a placekit killed between writing its header
/// and linking it into place left behind: only files with placekit's own mark, older than
/// ten minutes (a header is linked within milliseconds), whose process is gone — the
/// directory of a `--backup` may be shared, and a pid from another host or container
/// proves nothing alone.
pub(super) fn remove_stale_temp_files(dir: &Path) {
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

pub(super) fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

pub(super) fn create_dir_private(dir: &Path) -> Result<(), SnapshotError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(io_err(dir))
}

pub(super) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
