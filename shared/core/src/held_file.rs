//! Rewriting a file the user named, in a directory other users may be able to write.
//!
//! A file is read once: its directory is opened, the file is opened in it by name without
//! following a symlink and read through that handle, and its identity (device, inode, link
//! count, size, modification time) kept. A rewrite opens the directory again, checks that
//! the name in it is still exactly the file that was read (not followed if it is a
//! symlink), writes a temporary file created exclusively in that directory, checks once
//! more and renames it over the name relative to that directory. Whoever can write the
//! directory can swap the file for a symlink between the read and the write (to
//! `~/.bashrc`, say): the swap is seen and nothing is written, and at no point is a symlink
//! followed to another file. No descriptor is kept between the read and the write, so a
//! `--fix` over thousands of files stays within the process's open-file limit.
//!
//! A symlink the user names is resolved once, when the file is opened: its target is the
//! file read and rewritten, the link stays.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Why a held file was not rewritten.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The name no longer leads to the file that was read, or the file was edited since.
    #[error(
        "it changed on disk after it was read (replaced, moved, linked or edited); nothing was written: check it and run again"
    )]
    Changed,
    #[error("the file is read-only")]
    ReadOnly,
    #[error("not a regular file: there is nothing to write back to")]
    NotRegular,
    /// The file there is not one the caller may replace or remove.
    #[error("the file there was not written by placekit")]
    Refused,
}

/// Why a file could not be opened and read.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{size} bytes is over the {limit}-byte input limit")]
    TooLarge { size: u64, limit: u64 },
    #[error("it is not UTF-8 text")]
    NotText,
}

/// What identifies the file that was read: a swap, a new link or an edit changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    nlink: u64,
}

/// A file read once, and what identifies it, for a later rewrite.
#[derive(Debug)]
pub struct HeldFile {
    /// The file as it was opened (after resolving a symlink the user named).
    path: PathBuf,
    /// Its directory (symlinks resolved) and its name in it.
    dir: PathBuf,
    name: OsString,
    identity: Identity,
    regular: bool,
    mode: u32,
    uid: u32,
    gid: u32,
}

impl HeldFile {
    /// Opens `path` and reads it whole, at most `limit` bytes. Blocks on a FIFO until its
    /// writer opens it, as reading it would.
    pub fn open(path: &Path, limit: u64) -> Result<(HeldFile, String), OpenError> {
        let real = std::fs::canonicalize(path)?;
        let dir_path = real.parent().unwrap_or(Path::new("/")).to_path_buf();
        let name = real
            .file_name()
            .map(|n| n.to_os_string())
            .ok_or_else(|| std::io::Error::other("names no file"))?;
        let (held, file) = Self::open_in(real.clone(), dir_path, name)?;
        if held.regular && held.identity.size > limit {
            return Err(OpenError::TooLarge {
                size: held.identity.size,
                limit,
            });
        }
        let mut bytes = Vec::new();
        file.take(limit + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(OpenError::TooLarge {
                size: bytes.len() as u64,
                limit,
            });
        }
        let text = String::from_utf8(bytes).map_err(|_| OpenError::NotText)?;
        Ok((held, text))
    }

    #[cfg(unix)]
    fn open_in(
        path: PathBuf,
        dir_path: PathBuf,
        name: OsString,
    ) -> std::io::Result<(HeldFile, File)> {
        use rustix::fs::{Mode, OFlags};
        let dir = open_dir(&dir_path)?;
        // NOFOLLOW: a symlink put at the name after it was resolved is refused (ELOOP).
        let fd = rustix::fs::openat(
            &dir,
            name.as_os_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|e| {
            if e == rustix::io::Errno::LOOP {
                std::io::Error::other("it became a symlink while being opened")
            } else {
                e.into()
            }
        })?;
        let stat = rustix::fs::fstat(&fd)?;
        let held = HeldFile {
            path,
            dir: dir_path,
            name,
            identity: identity(&stat),
            regular: rustix::fs::FileType::from_raw_mode(stat.st_mode)
                == rustix::fs::FileType::RegularFile,
            mode: stat.st_mode & 0o7777,
            uid: stat.st_uid,
            gid: stat.st_gid,
        };
        Ok((held, File::from(fd)))
    }

    #[cfg(not(unix))]
    fn open_in(path: PathBuf, dir: PathBuf, name: OsString) -> std::io::Result<(HeldFile, File)> {
        let file = File::open(&path)?;
        let meta = file.metadata()?;
        let held = HeldFile {
            identity: Identity {
                dev: 0,
                ino: 0,
                size: meta.len(),
                mtime: meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or((0, 0), |d| (d.as_secs() as i64, d.subsec_nanos() as i64)),
                nlink: 1,
            },
            regular: meta.is_file(),
            mode: if meta.permissions().readonly() {
                0o444
            } else {
                0o644
            },
            uid: 0,
            gid: 0,
            path,
            dir,
            name,
        };
        Ok((held, file))
    }

    /// The file as opened (a symlink the user named resolved).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file's content with `text`, if its name still leads to the file that
    /// was read and nobody changed it since: a temporary file in the held directory with
    /// the original's mode and owner, renamed over it. A file with other hard links is
    /// rewritten in place through a handle checked to be the same file, so the links keep
    /// sharing it.
    pub fn replace(&self, text: &str) -> Result<(), ReplaceError> {
        if !self.regular {
            return Err(ReplaceError::NotRegular);
        }
        if self.mode & 0o222 == 0 {
            return Err(ReplaceError::ReadOnly);
        }
        self.replace_checked(text)
    }

    /// Whether `name` in `dir` is still the file that was read (a symlink there is not).
    #[cfg(unix)]
    fn unchanged(&self, dir: &impl std::os::fd::AsFd) -> Result<(), ReplaceError> {
        use rustix::fs::AtFlags;
        let now = match rustix::fs::statat(dir, self.name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(now) => now,
            Err(e) if e == rustix::io::Errno::NOENT => return Err(ReplaceError::Changed),
            Err(e) => return Err(std::io::Error::from(e).into()),
        };
        if identity(&now) != self.identity {
            return Err(ReplaceError::Changed);
        }
        Ok(())
    }

    #[cfg(unix)]
    fn replace_checked(&self, text: &str) -> Result<(), ReplaceError> {
        use std::io::Write as _;

        use rustix::fs::{AtFlags, Mode, OFlags};
        let dir = open_dir(&self.dir)?;
        self.unchanged(&dir)?;
        if self.identity.nlink > 1 {
            let fd = rustix::fs::openat(
                &dir,
                self.name.as_os_str(),
                OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
                Mode::empty(),
            )
            .map_err(std::io::Error::from)?;
            let opened = rustix::fs::fstat(&fd).map_err(std::io::Error::from)?;
            if identity(&opened) != self.identity {
                return Err(ReplaceError::Changed);
            }
            let mut file = File::from(fd);
            file.set_len(0)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            return Ok(());
        }
        let (file, temp) = create_exclusive_temp(&dir, &self.name)?;
        let written = (|| -> Result<(), ReplaceError> {
            let mut file = file;
            file.write_all(text.as_bytes())?;
            rustix::fs::fchmod(&file, Mode::from_raw_mode(self.mode))
                .map_err(std::io::Error::from)?;
            // Keeps the owner when allowed (root in a CI container); otherwise the file is
            // the runner's, as any editor's save would make it.
            let _ = rustix::fs::fchown(
                &file,
                Some(rustix::fs::Uid::from_raw(self.uid)),
                Some(rustix::fs::Gid::from_raw(self.gid)),
            );
            file.sync_all()?;
            // Checked once more right before the rename, which replaces the name itself
            // (never a file a symlink there would lead to).
            self.unchanged(&dir)?;
            rustix::fs::renameat(&dir, temp.as_os_str(), &dir, self.name.as_os_str())
                .map_err(std::io::Error::from)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&dir, temp.as_os_str(), AtFlags::empty());
        }
        written
    }

    #[cfg(not(unix))]
    fn replace_checked(&self, text: &str) -> Result<(), ReplaceError> {
        let now = std::fs::symlink_metadata(&self.path)?;
        if now.len() != self.identity.size {
            return Err(ReplaceError::Changed);
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let temp = dir.join(format!(
            ".{}.placekit-{}",
            self.name.to_string_lossy(),
            std::process::id()
        ));
        std::fs::write(&temp, text)?;
        std::fs::rename(&temp, &self.path).inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })?;
        Ok(())
    }
}

#[cfg(unix)]
fn open_dir(dir: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{CWD, Mode, OFlags};
    Ok(rustix::fs::openat(
        CWD,
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

#[cfg(unix)]
fn identity(stat: &rustix::fs::Stat) -> Identity {
    #[allow(clippy::unnecessary_cast)]
    Identity {
        dev: stat.st_dev as u64,
        ino: stat.st_ino as u64,
        size: stat.st_size as u64,
        mtime: (stat.st_mtime as i64, stat.st_mtime_nsec as i64),
        nlink: stat.st_nlink as u64,
    }
}

/// A new file `.NAME.placekit-RANDOM` in `dir`, created with `O_CREAT|O_EXCL` (which never
/// follows a symlink) and mode 0600 until the caller sets the mode it should have.
#[cfg(unix)]
pub fn create_exclusive_temp(
    dir: &impl std::os::fd::AsFd,
    name: &std::ffi::OsStr,
) -> std::io::Result<(File, OsString)> {
    use std::hash::{BuildHasher, Hasher};

    use rustix::fs::{Mode, OFlags};
    let mut last = None;
    for _ in 0..16 {
        // RandomState is seeded from the OS's randomness: nobody can plant the name first.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        let mut temp = OsString::from(".");
        temp.push(name);
        temp.push(format!(".placekit-{:016x}", hasher.finish()));
        match rustix::fs::openat(
            dir,
            temp.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => return Ok((File::from(fd), temp)),
            Err(e) if e == rustix::io::Errno::EXIST => last = Some(e.into()),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name was free")))
}

/// Writes `text` as `dir/name` with `mode`, replacing what is there only when `accept`
/// accepts its current content (`None`: nothing there; refused: [`ReplaceError::Refused`]): the directory is opened once, the
/// current file read without following a symlink, and the new one renamed over it in that
/// directory. For files placekit installs (the kubectl completion helper).
#[cfg(unix)]
pub fn install(
    dir: &Path,
    name: &str,
    text: &str,
    mode: u32,
    accept: impl FnOnce(Option<&[u8]>) -> bool,
) -> Result<(), ReplaceError> {
    use std::io::Write as _;

    use rustix::fs::{AtFlags, Mode};
    let dir = open_dir(dir)?;
    let current = read_existing(&dir, name)?;
    if !accept(current.as_deref()) {
        return Err(ReplaceError::Refused);
    }
    let (mut file, temp) = create_exclusive_temp(&dir, std::ffi::OsStr::new(name))?;
    let written = (|| -> Result<(), ReplaceError> {
        file.write_all(text.as_bytes())?;
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode)).map_err(std::io::Error::from)?;
        file.sync_all()?;
        rustix::fs::renameat(&dir, temp.as_os_str(), &dir, name).map_err(std::io::Error::from)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(&dir, temp.as_os_str(), AtFlags::empty());
    }
    written
}

/// Removes `dir/name` when `accept` accepts its content, read without following a symlink;
/// `Ok(false)` when there is nothing there.
#[cfg(unix)]
pub fn uninstall(
    dir: &Path,
    name: &str,
    accept: impl FnOnce(&[u8]) -> bool,
) -> Result<bool, ReplaceError> {
    use rustix::fs::AtFlags;
    let dir = open_dir(dir)?;
    let Some(current) = read_existing(&dir, name)? else {
        return Ok(false);
    };
    if !accept(&current) {
        return Err(ReplaceError::Refused);
    }
    rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(std::io::Error::from)?;
    Ok(true)
}

/// The content of `dir/name` (at most 1 MiB), `None` when absent; a symlink or anything but
/// a regular file there is refused.
#[cfg(unix)]
fn read_existing(
    dir: &impl std::os::fd::AsFd,
    name: &str,
) -> Result<Option<Vec<u8>>, ReplaceError> {
    use rustix::fs::{Mode, OFlags};
    match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    ) {
        Ok(fd) => {
            let stat = rustix::fs::fstat(&fd).map_err(std::io::Error::from)?;
            if rustix::fs::FileType::from_raw_mode(stat.st_mode)
                != rustix::fs::FileType::RegularFile
            {
                return Err(ReplaceError::NotRegular);
            }
            let mut bytes = Vec::new();
            File::from(fd).take(1 << 20).read_to_end(&mut bytes)?;
            Ok(Some(bytes))
        }
        Err(e) if e == rustix::io::Errno::NOENT => Ok(None),
        Err(e) if e == rustix::io::Errno::LOOP => Err(ReplaceError::NotRegular),
        Err(e) => Err(std::io::Error::from(e).into()),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_name_swapped_for_a_symlink_after_the_read_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "secret\n").unwrap();
        let manifest = dir.path().join("deploy.yaml");
        std::fs::write(&manifest, "a: 1\n").unwrap();
        let (held, text) = HeldFile::open(&manifest, 1 << 20).unwrap();
        assert_eq!(text, "a: 1\n");
        std::fs::remove_file(&manifest).unwrap();
        std::os::unix::fs::symlink(&victim, &manifest).unwrap();
        assert!(matches!(held.replace("a: 2\n"), Err(ReplaceError::Changed)));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret\n");
        assert!(
            std::fs::symlink_metadata(&manifest)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn an_edit_after_the_read_is_kept_and_a_clean_file_is_replaced_with_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("deploy.yaml");
        std::fs::write(&manifest, "a: 1\n").unwrap();
        std::fs::set_permissions(&manifest, std::fs::Permissions::from_mode(0o640)).unwrap();
        let (held, _) = HeldFile::open(&manifest, 1 << 20).unwrap();
        held.replace("a: 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&manifest).unwrap(), "a: 2\n");
        let meta = std::fs::symlink_metadata(&manifest).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o640);

        let (held, _) = HeldFile::open(&manifest, 1 << 20).unwrap();
        std::fs::write(&manifest, "a: 3, edited meanwhile\n").unwrap();
        assert!(matches!(held.replace("a: 4\n"), Err(ReplaceError::Changed)));
        assert_eq!(
            std::fs::read_to_string(&manifest).unwrap(),
            "a: 3, edited meanwhile\n"
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn a_symlink_named_by_the_user_has_its_target_rewritten_and_stays() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.yaml");
        std::fs::write(&target, "a: 1\n").unwrap();
        let link = dir.path().join("link.yaml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let (held, _) = HeldFile::open(&link, 1 << 20).unwrap();
        held.replace("a: 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "a: 2\n");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_hard_linked_file_is_rewritten_in_place_and_read_only_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("deploy.yaml");
        std::fs::write(&manifest, "a: 1\n").unwrap();
        let other = dir.path().join("other.yaml");
        std::fs::hard_link(&manifest, &other).unwrap();
        let (held, _) = HeldFile::open(&manifest, 1 << 20).unwrap();
        held.replace("a: 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "a: 2\n");

        std::fs::set_permissions(&manifest, std::fs::Permissions::from_mode(0o444)).unwrap();
        let (held, _) = HeldFile::open(&manifest, 1 << 20).unwrap();
        assert!(matches!(
            held.replace("a: 3\n"),
            Err(ReplaceError::ReadOnly)
        ));
    }

    #[test]
    fn install_refuses_a_planted_symlink_and_replaces_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "secret\n").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("helper")).unwrap();
        let err = install(dir.path(), "helper", "new\n", 0o755, |_| true).unwrap_err();
        assert!(matches!(err, ReplaceError::NotRegular), "{err:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret\n");
        std::fs::remove_file(dir.path().join("helper")).unwrap();
        install(dir.path(), "helper", "new\n", 0o755, |current| {
            current.is_none()
        })
        .unwrap();
        let err = install(dir.path(), "helper", "other\n", 0o755, |_| false).unwrap_err();
        assert!(matches!(err, ReplaceError::Refused), "{err:?}");
        let meta = std::fs::metadata(dir.path().join("helper")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o755);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("helper")).unwrap(),
            "new\n"
        );
        assert!(uninstall(dir.path(), "helper", |_| true).unwrap());
        assert!(!uninstall(dir.path(), "helper", |_| true).unwrap());
    }
}
