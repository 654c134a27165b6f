//! What placekit trusts on this machine: the user's own files. The state directory and the
//! snapshots in it change what a rollback writes to a cluster with the user's rights, so
//! they must be the user's and writable by nobody else — checked as ssh checks
//! `~/.ssh` — and every read is bounded and of a regular file, so a planted FIFO, device or
//! huge file cannot hang or exhaust a command.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The largest snapshot placekit reads (a 5,000-node change is a few MB).
pub const MAX_SNAPSHOT_BYTES: u64 = 64 * 1024 * 1024;
/// The largest `.snapshot-ref` index file (one absolute path).
pub const MAX_REF_BYTES: u64 = 4096;

/// Why a file or directory is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct Untrusted {
    pub path: String,
    pub reason: String,
}

fn untrusted(path: &Path, reason: impl Into<String>) -> Untrusted {
    Untrusted {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// A directory of the user's that nobody else can write (after following symlinks: a
/// state directory linked elsewhere is judged where it leads). A directory that does not
/// exist yet passes: placekit creates it 0700.
pub fn check_private_dir(dir: &Path) -> Result<(), Untrusted> {
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(untrusted(dir, e.to_string())),
    };
    if !meta.is_dir() {
        return Err(untrusted(dir, "not a directory"));
    }
    check_owner_and_mode(dir, &meta, "chmod 700")
}

#[cfg(unix)]
fn check_owner_and_mode(path: &Path, meta: &std::fs::Metadata, fix: &str) -> Result<(), Untrusted> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(untrusted(
            path,
            format!(
                "owned by uid {}, not by you (uid {me}): placekit trusts only your own files here; move it away and let placekit create its own",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(untrusted(
            path,
            format!(
                "writable by {} (mode {:o}): anyone who can write it can make a rollback change your clusters; fix it with `{fix} {}`",
                if meta.mode() & 0o002 != 0 {
                    "everyone"
                } else {
                    "its group"
                },
                meta.mode() & 0o7777,
                path.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owner_and_mode(_: &Path, _: &std::fs::Metadata, _: &str) -> Result<(), Untrusted> {
    Ok(())
}

/// Opens a file to read without following a symlink at its name, and only if it is a
/// regular file of at most `max_bytes` (and, with `own`, the user's and writable by nobody
/// else). Checked on the open file, so what was checked is what is read.
pub fn open_regular(path: &Path, max_bytes: u64, own: bool) -> Result<File, Untrusted> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NOFOLLOW: a symlink at the name is refused (ELOOP); O_NONBLOCK: opening a FIFO
        // does not wait for a writer (it is then refused as not a regular file).
        options.custom_flags(
            (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32,
        );
    }
    let file = options.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            return untrusted(path, "a symbolic link: not followed");
        }
        untrusted(path, e.to_string())
    })?;
    let meta = file
        .metadata()
        .map_err(|e| untrusted(path, e.to_string()))?;
    if !meta.is_file() {
        return Err(untrusted(path, "not a regular file"));
    }
    if meta.len() > max_bytes {
        return Err(untrusted(
            path,
            format!(
                "{} bytes, more than the {max_bytes} placekit reads",
                meta.len()
            ),
        ));
    }
    if own {
        check_owner_and_mode(path, &meta, "chmod 600")?;
    }
    Ok(file)
}

/// Reads a whole file through [`open_regular`], never more than `max_bytes`.
pub fn read_regular(path: &Path, max_bytes: u64, own: bool) -> Result<String, Untrusted> {
    let file = open_regular(path, max_bytes, own)?;
    let mut text = String::new();
    file.take(max_bytes)
        .read_to_string(&mut text)
        .map_err(|e| untrusted(path, e.to_string()))?;
    Ok(text)
}

/// A FIFO at `path`, for tests of what must not wait on one.
#[cfg(unix)]
#[doc(hidden)]
pub fn make_fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn others_writable_dirs_and_odd_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = check_private_dir(&state).unwrap_err();
        assert!(refused.reason.contains("writable by everyone"), "{refused}");
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        check_private_dir(&state).unwrap();
        // A link to a directory others can write is judged where it leads.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o775)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&open, &link).unwrap();
        assert!(
            check_private_dir(&link)
                .unwrap_err()
                .reason
                .contains("its group")
        );

        let file = state.join("s.jsonl");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_regular(&file, 10, true).unwrap(), "x");
        assert!(
            read_regular(&file, 0, true)
                .unwrap_err()
                .reason
                .contains("more than")
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(read_regular(&file, 10, true).is_err());
        assert!(
            read_regular(&file, 10, false).is_ok(),
            "a named file need not be private"
        );
        let sym = state.join("sym.jsonl");
        std::os::unix::fs::symlink(&file, &sym).unwrap();
        assert!(
            read_regular(&sym, 10, false)
                .unwrap_err()
                .reason
                .contains("symbolic link")
        );
        let fifo = state.join("fifo.jsonl");
        make_fifo(&fifo);
        assert!(
            read_regular(&fifo, 10, false)
                .unwrap_err()
                .reason
                .contains("not a regular file"),
            "a FIFO is refused, not waited on"
        );
    }
}
