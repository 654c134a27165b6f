//! Node features in node-feature-discovery's local-source format, for `kubectl nodelabel
//! import`.
//!
//! A feature file (or a hook's standard output) holds one `key[=value]` per line; a key
//! without `=` has the value `true`. `#` starts a comment; blank lines are ignored. Two
//! directives are understood, as NFD does:
//! - `# +expiry-time=<RFC3339>`: the entries after it are ignored once that time has
//!   passed (until the next expiry directive);
//! - `# +no-label`: the next entry is not turned into a label.
//!
//! Naming (`--naming`):
//! - `file` (today's NFD feature files): `key` becomes `feature.node.kubernetes.io/key`,
//!   `ns/name` is used as is;
//! - `hook` (NFD's classic hooks): `key` becomes `feature.node.kubernetes.io/<hook>-key`,
//!   `/key` becomes `feature.node.kubernetes.io/key`, `ns/name` is used as is.
//!
//! Keys in `kubernetes.io` or `*.kubernetes.io` are denied, except
//! `[*.]feature.node.kubernetes.io` and `[*.]profile.node.kubernetes.io`, unless re-allowed
//! with `--extra-label-ns`. Every key and value is validated with the API server's rules;
//! problems are reported with source and line.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::validation::{label_value_errors, qualified_name_errors};

/// NFD rejects feature files larger than this; so does placekit, and it caps hook output.
pub const MAX_FEATURE_FILE_BYTES: usize = 64 * 1024;
/// The default namespace of feature labels.
pub const FEATURE_NAMESPACE: &str = "feature.node.kubernetes.io";
/// The annotation recording which labels `import` set on a node and from which source, so
/// `--prune` only ever removes labels the same source imported (like NFD's
/// `nfd.node.kubernetes.io/feature-labels`). Its value is a JSON object from source
/// (`file:<name>`, `dir:<name>`, `hook:<name>`) to the sorted keys that source set; an
/// older value, a comma-separated list of keys, is read as keys of an unknown source.
pub const IMPORTED_LABELS_ANNOTATION: &str = "placekit.dev/imported-labels";

/// The source name under which keys recorded before provenance existed are kept.
pub const UNKNOWN_SOURCE: &str = "";

/// Which source imported which label keys on one node (the annotation's content).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportRecord {
    pub by_source: BTreeMap<String, std::collections::BTreeSet<String>>,
}

impl ImportRecord {
    /// Reads the annotation (JSON, or the older comma-separated list).
    pub fn parse(annotation: Option<&str>) -> Self {
        let text = annotation.unwrap_or_default().trim();
        if text.starts_with('{')
            && let Ok(by_source) = serde_json::from_str(text)
        {
            return ImportRecord { by_source };
        }
        let legacy: std::collections::BTreeSet<String> = text
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_string)
            .collect();
        let mut record = ImportRecord::default();
        if !legacy.is_empty() {
            record.by_source.insert(UNKNOWN_SOURCE.to_string(), legacy);
        }
        record
    }

    /// The annotation value.
    pub fn render(&self) -> String {
        serde_json::to_string(&self.by_source).expect("string maps always serialise")
    }

    /// Whether any source imported `key`.
    pub fn owns(&self, key: &str) -> bool {
        self.by_source.values().any(|keys| keys.contains(key))
    }

    fn claimed_by_other(&self, source: &str, key: &str) -> bool {
        self.other_owner(source, key).is_some()
    }

    /// The keys `source` claims that no import could have produced: without a namespace
    /// (an import always sets one), or in one the namespace rules refuse
    /// (`node-restriction.kubernetes.io/...`). The record is a node annotation, which the
    /// node's own kubelet can write: such a claim is tampering, and `--prune` must not
    /// remove those labels with the admin's rights.
    pub fn implausible(&self, source: &str, policy: &NamespacePolicy) -> Vec<String> {
        self.by_source
            .get(source)
            .into_iter()
            .flatten()
            .filter(|k| !k.contains('/') || policy.denies(k).is_some())
            .cloned()
            .collect()
    }

    /// The record without `keys` claimed by `source`.
    pub fn without(mut self, source: &str, keys: &[String]) -> Self {
        if let Some(claimed) = self.by_source.get_mut(source) {
            claimed.retain(|k| !keys.contains(k));
        }
        self
    }

    /// The other source that imported `key`, if any.
    pub fn other_owner(&self, source: &str, key: &str) -> Option<&str> {
        self.by_source
            .iter()
            .find(|(s, keys)| s.as_str() != source && keys.contains(key))
            .map(|(s, _)| s.as_str())
    }
}

/// How keys become label names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Naming {
    File,
    Hook { hook_name: String },
}

/// One label from a feature source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feature {
    pub key: String,
    pub value: String,
    /// 1-based line in its source.
    pub line: usize,
}

/// A problem in a feature source, with its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}: {message}")]
pub struct FeatureError {
    pub source_name: String,
    pub line: usize,
    pub message: String,
}

/// Errors reading feature sources.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(
        "{path}: {size} bytes is over the {MAX_FEATURE_FILE_BYTES}-byte limit for feature files"
    )]
    TooLarge { path: String, size: u64 },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not UTF-8 text")]
    NotText { path: String },
    /// A FIFO or device would block or never end, a directory is `--dir`'s.
    #[error("{path}: {what}, not a regular file")]
    NotAFile { path: String, what: &'static str },
    #[error("hook {hook}: {message}")]
    Hook { hook: String, message: String },
}

/// Which label namespaces may be imported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespacePolicy {
    /// Namespaces re-allowed with `--extra-label-ns` (exact match).
    pub extra_allowed: Vec<String>,
}

impl NamespacePolicy {
    /// `None` when `key`'s namespace may be imported, else why not.
    pub fn denies(&self, key: &str) -> Option<String> {
        let (ns, _) = key.split_once('/')?;
        let allowed_by_default = |base: &str| ns == base || ns.ends_with(&format!(".{base}"));
        if allowed_by_default(FEATURE_NAMESPACE)
            || allowed_by_default("profile.node.kubernetes.io")
            || self.extra_allowed.iter().any(|a| a == ns)
        {
            return None;
        }
        if ns == "kubernetes.io" || ns.ends_with(".kubernetes.io") {
            return Some(format!(
                "namespace {ns:?} is not allowed: kubernetes.io namespaces are reserved (allowed: [*.]feature.node.kubernetes.io, [*.]profile.node.kubernetes.io, or --extra-label-ns {ns})"
            ));
        }
        None
    }
}

fn label_name(key: &str, naming: &Naming) -> String {
    match naming {
        Naming::File if !key.contains('/') => format!("{FEATURE_NAMESPACE}/{key}"),
        // Feature files use the hooks' format, where a leading `/` means "no hook-name
        // prefix": for a file that is the plain feature namespace too.
        Naming::File if key.starts_with('/') => format!("{FEATURE_NAMESPACE}{key}"),
        Naming::Hook { hook_name } => match key.strip_prefix('/') {
            Some(rest) => format!("{FEATURE_NAMESPACE}/{rest}"),
            None if !key.contains('/') => format!("{FEATURE_NAMESPACE}/{hook_name}-{key}"),
            None => key.to_string(),
        },
        Naming::File => key.to_string(),
    }
}

/// Parses one feature source. Returns the features (a later line for the same label wins,
/// as in NFD) and every problem found; callers apply nothing when there are problems
/// unless asked to skip invalid entries.
pub fn parse_features(
    source_name: &str,
    content: &str,
    naming: &Naming,
    policy: &NamespacePolicy,
    now: jiff::Timestamp,
) -> (Vec<Feature>, Vec<FeatureError>) {
    let mut features: Vec<Feature> = Vec::new();
    let mut errors = Vec::new();
    let mut expired = false;
    let mut skip_next = false;
    let error = |line: usize, message: String| FeatureError {
        source_name: source_name.to_string(),
        line,
        message,
    };
    for (i, raw) in content.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let directive = comment.trim();
            if let Some(value) = directive.strip_prefix("+expiry-time=") {
                match value.trim().parse::<jiff::Timestamp>() {
                    Ok(t) => expired = t <= now,
                    Err(e) => errors.push(error(
                        line_no,
                        format!("invalid +expiry-time {value:?}: {e}"),
                    )),
                }
            } else if directive == "+no-label" {
                skip_next = true;
            }
            continue;
        }
        if std::mem::take(&mut skip_next) || expired {
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (line, "true"),
        };
        let name = label_name(key, naming);
        let key_errors = qualified_name_errors(&name);
        if !key_errors.is_empty() {
            errors.push(error(
                line_no,
                format!("invalid label key {name:?}: {}", key_errors.join("; ")),
            ));
            continue;
        }
        if let Some(why) = policy.denies(&name) {
            errors.push(error(line_no, format!("label {name:?}: {why}")));
            continue;
        }
        let value_errors = label_value_errors(value);
        if !value_errors.is_empty() {
            errors.push(error(
                line_no,
                format!(
                    "invalid value {value:?} for {name}: {}",
                    value_errors.join("; ")
                ),
            ));
            continue;
        }
        features.retain(|f| f.key != name);
        features.push(Feature {
            key: name,
            value: value.to_string(),
            line: line_no,
        });
    }
    (features, errors)
}

/// Reads a feature file, refusing files over [`MAX_FEATURE_FILE_BYTES`] and non-text.
pub fn read_feature_file(path: &Path) -> Result<String, SourceError> {
    let shown = path.display().to_string();
    let io = |source| SourceError::Io {
        path: shown.clone(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.is_file() {
        return Err(SourceError::NotAFile {
            path: shown,
            what: if metadata.is_dir() {
                "a directory (use --dir for a directory of node files)"
            } else {
                "a FIFO, socket or device"
            },
        });
    }
    let size = metadata.len();
    if size > MAX_FEATURE_FILE_BYTES as u64 {
        return Err(SourceError::TooLarge { path: shown, size });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_FEATURE_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() > MAX_FEATURE_FILE_BYTES {
        return Err(SourceError::TooLarge {
            path: shown,
            size: bytes.len() as u64,
        });
    }
    String::from_utf8(bytes).map_err(|_| SourceError::NotText { path: shown })
}

/// The per-node files of a `--dir`: `<node>` or `<node>.features`, dot-files skipped (as
/// NFD skips them), sorted by node name.
pub fn node_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, SourceError> {
    let entries = std::fs::read_dir(dir).map_err(|source| SourceError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.path().is_file() {
            continue;
        }
        let node = name.strip_suffix(".features").unwrap_or(&name).to_string();
        out.push((node, entry.path()));
    }
    out.sort();
    Ok(out)
}

/// The hook to run for `--hook PATH`: a path with a directory is taken as given; a bare
/// name is the executable of that name on `PATH`, as a shell finds it, else the file of that
/// name in the current directory (where NFD users keep their hook while writing it). PATH
/// comes first, so a file in an untrusted checkout never shadows a system command. Resolved
/// here because the hook runs with a reduced environment whose `PATH` is not the user's.
pub fn resolve_hook(path: &Path) -> Result<PathBuf, SourceError> {
    let not_found = |message: String| SourceError::Hook {
        hook: path.display().to_string(),
        message,
    };
    let bare = path.components().count() == 1 && !path.has_root();
    if !bare {
        return match std::fs::metadata(path) {
            Ok(m) if m.is_file() => Ok(path.to_path_buf()),
            Ok(_) => Err(not_found("not a regular file".into())),
            Err(e) => Err(not_found(e.to_string())),
        };
    }
    let on_path = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(path))
        .find(|candidate| is_executable_file(candidate));
    if let Some(found) = on_path {
        // `--hook sysctl` with the runbook's ./sysctl beside it: which one is meant is not
        // ours to guess (PATH first would run /usr/sbin/sysctl with a node name).
        if path.is_file() {
            return Err(not_found(format!(
                "both {} on PATH and ./{} in the current directory: say which, with ./{} or the full path",
                found.display(),
                path.display(),
                path.display()
            )));
        }
        return Ok(found);
    }
    if path.is_file() {
        return Ok(Path::new(".").join(path));
    }
    if path.exists() {
        return Err(not_found(
            "not a regular file (a directory of per-node files is --dir)".into(),
        ));
    }
    Err(not_found(format!(
        "no executable {0:?} on PATH and no file {0:?} in the current directory",
        path.display().to_string()
    )))
}

/// A regular file the user may execute (any execute bit on Unix).
fn is_executable_file(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// What a hook printed: its feature list, and what it wrote to stderr (shown to the user;
/// with empty values, it makes the node an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOutput {
    pub stdout: String,
    pub stderr: String,
}

/// Runs a feature hook for one node directly (no shell) with a timeout, an output cap and
/// an environment reduced to `PATH`, `LANG` and `NODE_NAME` (the node it describes, also
/// its first argument), so no credential of the caller's environment reaches it. NFD runs
/// hooks on each node; placekit runs them on the admin's machine, once per target node, so
/// a hook must describe the node it is given rather than the machine it runs on.
/// A non-zero exit, a timeout or too much output is an error that shows its stderr.
pub async fn run_hook(
    path: &Path,
    timeout: Duration,
    node: &str,
) -> Result<HookOutput, SourceError> {
    use tokio::io::AsyncReadExt;
    let hook = format!("{} (node {node})", path.display());
    let fail = |message: String| SourceError::Hook {
        hook: hook.clone(),
        message,
    };
    let mut command = tokio::process::Command::new(path);
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C")
        .env("NODE_NAME", node)
        .arg(node)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so what it starts in the background is stopped with it.
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| fail(format!("cannot run it: {e}")))?;
    let group = ProcessGroup(child.id());
    let mut stdout = child.stdout.take().expect("piped");
    // The pipe's identity, to find a process of another session that still holds it.
    let pipe = PipeHolders::of(&stdout);
    let mut stderr = child.stderr.take().expect("piped");
    let cap = MAX_FEATURE_FILE_BYTES as u64 + 1;
    // Both pipes are drained on their own tasks so a chatty hook never blocks on a full
    // pipe, and a background child that keeps them open cannot hold the import up.
    let stdout_task = tokio::spawn(async move {
        let mut out = Vec::new();
        let _ = (&mut stdout).take(cap).read_to_end(&mut out).await;
        out
    });
    let stderr_task = tokio::spawn(async move {
        let mut err = Vec::new();
        let _ = (&mut stderr).take(cap).read_to_end(&mut err).await;
        err
    });
    let deadline = tokio::time::Instant::now() + timeout;
    let timed_out = || {
        // Not reaped: the group id cannot have been reused.
        group.kill();
        fail(format!("timed out after {timeout:?}"))
    };
    let mut stdout_task = stdout_task;
    // Whichever comes first: the hook's exit, or the end (or overflow) of its output.
    let (status, early_out) = tokio::select! {
        status = tokio::time::timeout_at(deadline, child.wait()) => match status {
            Ok(Ok(status)) => (status, None),
            Ok(Err(e)) => return Err(fail(e.to_string())),
            Err(_) => return Err(timed_out()),
        },
        out = &mut stdout_task => {
            let out = out.unwrap_or_default();
            if out.len() > MAX_FEATURE_FILE_BYTES {
                group.kill();
                return Err(fail(format!("printed more than {MAX_FEATURE_FILE_BYTES} bytes")));
            }
            match tokio::time::timeout_at(deadline, child.wait()).await {
                Ok(Ok(status)) => (status, Some(out)),
                Ok(Err(e)) => return Err(fail(e.to_string())),
                Err(_) => return Err(timed_out()),
            }
        }
    };
    // The hook has exited: what it printed is its output. A background child still holding
    // the pipes gets a moment, then the group is stopped (closing them); the group still
    // has members then, so its id is still theirs.
    let grace = Duration::from_secs(1);
    let out = match early_out {
        Some(out) => out,
        None => {
            let mut stdout_task = stdout_task;
            match tokio::time::timeout(grace, &mut stdout_task).await {
                Ok(out) => out.unwrap_or_default(),
                Err(_) => {
                    // Killing the holders closes the pipe: the reader ends with what the
                    // hook printed. A child that left the group (setsid) is found by the
                    // pipe it holds and stopped too.
                    group.kill();
                    pipe.kill_holders();
                    match tokio::time::timeout(grace, stdout_task).await {
                        Ok(Ok(out)) => out,
                        // Never a partial or empty output in its place: an import with
                        // --prune would remove every label the hook set before.
                        _ => {
                            return Err(fail(
                                "exited, but a process it started (in a session of its own) still holds its output open and could not be stopped: its output is not used"
                                    .into(),
                            ));
                        }
                    }
                }
            }
        }
    };
    let err = tokio::time::timeout(grace, stderr_task)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    if out.len() > MAX_FEATURE_FILE_BYTES {
        return Err(fail(format!(
            "printed more than {MAX_FEATURE_FILE_BYTES} bytes"
        )));
    }
    let stderr_text = String::from_utf8_lossy(&err).trim().to_string();
    if !status.success() {
        return Err(fail(format!(
            "exited with {status}{}",
            if stderr_text.is_empty() {
                String::new()
            } else {
                format!(": {stderr_text}")
            }
        )));
    }
    let stdout = String::from_utf8(out)
        .map_err(|_| fail("printed something that is not UTF-8 text".into()))?;
    Ok(HookOutput {
        stdout,
        stderr: stderr_text,
    })
}

/// The processes holding a hook's stdout pipe, found by the pipe's inode in `/proc/*/fd`
/// (Linux): a background child that called `setsid` left the hook's process group, and is
/// stopped through the pipe it still holds. Elsewhere there is nothing to find, and the
/// hook's output is then refused rather than cut short.
#[derive(Debug, Clone, Copy)]
struct PipeHolders(Option<u64>);

impl PipeHolders {
    fn of(stdout: &tokio::process::ChildStdout) -> Self {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsFd;
            PipeHolders(rustix::fs::fstat(stdout.as_fd()).ok().map(|s| s.st_ino))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = stdout;
            PipeHolders(None)
        }
    }

    fn kill_holders(self) {
        #[cfg(target_os = "linux")]
        if let Some(ino) = self.0 {
            let target = format!("pipe:[{ino}]");
            let me = std::process::id().to_string();
            for proc_dir in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let pid = proc_dir.file_name().to_string_lossy().into_owned();
                if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
                    continue;
                }
                let holds = std::fs::read_dir(proc_dir.path().join("fd"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|fd| {
                        std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == target)
                    });
                if holds {
                    let _ = std::process::Command::new("kill")
                        .args(["-KILL", &pid])
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .status();
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = self;
    }
}

/// A hook's process group (its leader's pid): killed whole, so the hook's background
/// children do not outlive it.
#[derive(Debug, Clone, Copy)]
struct ProcessGroup(Option<u32>);

impl ProcessGroup {
    /// Sends SIGKILL to the group (through `kill(1)`: no unsafe code here). A group that is
    /// already gone is fine.
    fn kill(self) {
        #[cfg(unix)]
        if let Some(pid) = self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// The hook name NFD uses for naming: the executable's file name.
pub fn hook_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The label changes and annotation of one source's import on one node: set every feature;
/// with `prune`, remove the labels this same source imported earlier that it no longer
/// reports (never a label another source still claims, never one no import set); record
/// the source's keys in [`IMPORTED_LABELS_ANNOTATION`]. Keys in `not_claimed` (labels
/// someone set by hand that already have the imported value) are set but not recorded, so
/// a later `--prune` of this source never removes them.
pub fn import_changes(
    previous: &ImportRecord,
    source: &str,
    features: &[Feature],
    prune: bool,
    not_claimed: &std::collections::BTreeSet<String>,
) -> (Vec<crate::syntax::LabelChange>, crate::syntax::LabelChange) {
    use crate::syntax::LabelChange;
    let mut record = previous.clone();
    let mut changes: Vec<LabelChange> = features
        .iter()
        .map(|f| LabelChange::Set {
            key: f.key.clone(),
            value: f.value.clone(),
        })
        .collect();
    let previous = record.by_source.remove(source).unwrap_or_default();
    let mut keys: std::collections::BTreeSet<String> = features
        .iter()
        .map(|f| f.key.clone())
        .filter(|k| !not_claimed.contains(k))
        .collect();
    for key in previous {
        if keys.contains(&key) || features.iter().any(|f| f.key == key) {
            continue;
        }
        if !prune {
            keys.insert(key);
        } else if !record.claimed_by_other(source, &key) {
            changes.push(LabelChange::Remove { key });
        }
    }
    // Keys recorded before provenance existed are claimed by the source that sets them now.
    if let Some(unknown) = record.by_source.get_mut(UNKNOWN_SOURCE) {
        unknown.retain(|k| !keys.contains(k));
        if unknown.is_empty() {
            record.by_source.remove(UNKNOWN_SOURCE);
        }
    }
    if !keys.is_empty() {
        record.by_source.insert(source.to_string(), keys);
    }
    let annotation = LabelChange::Set {
        key: IMPORTED_LABELS_ANNOTATION.to_string(),
        value: record.render(),
    };
    (changes, annotation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn now() -> jiff::Timestamp {
        "2026-11-29T12:00:00Z".parse().unwrap()
    }

    fn parse(content: &str, naming: &Naming) -> (Vec<(String, String)>, Vec<String>) {
        let (f, e) = parse_features("src", content, naming, &NamespacePolicy::default(), now());
        (
            f.into_iter().map(|f| (f.key, f.value)).collect(),
            e.into_iter().map(|e| e.to_string()).collect(),
        )
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn runbook_hook_scenario() {
        let hook = Naming::Hook {
            hook_name: "my-script".into(),
        };
        let (features, errors) = parse(
            "net.core.somaxconn=4096\n/vm.swappiness=10\nmakocchi.dev/kernel.pid_max=4194304\n",
            &hook,
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            features,
            vec![
                kv(
                    "feature.node.kubernetes.io/my-script-net.core.somaxconn",
                    "4096"
                ),
                kv("feature.node.kubernetes.io/vm.swappiness", "10"),
                kv("makocchi.dev/kernel.pid_max", "4194304"),
            ]
        );
    }

    #[test]
    fn file_naming_comments_and_defaults() {
        let (features, errors) = parse(
            "# a comment\n\navx2\n  fma3 = true \nexample.com/gpu=a100\n",
            &Naming::File,
        );
        assert!(errors.is_empty());
        assert_eq!(
            features,
            vec![
                kv("feature.node.kubernetes.io/avx2", "true"),
                kv("feature.node.kubernetes.io/fma3", "true"),
                kv("example.com/gpu", "a100"),
            ]
        );
    }

    #[test]
    fn directives() {
        let content = "# +no-label\nhidden=1\nshown=1\n# +expiry-time=2020-01-01T00:00:00Z\nold=1\n# +expiry-time=2030-01-01T00:00:00Z\nfresh=1\n";
        let (features, errors) = parse(content, &Naming::File);
        assert!(errors.is_empty());
        let keys: Vec<String> = features.into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            vec![
                "feature.node.kubernetes.io/shown",
                "feature.node.kubernetes.io/fresh"
            ]
        );
        let (_, errors) = parse("# +expiry-time=yesterday\n", &Naming::File);
        assert!(errors[0].starts_with("src:1: invalid +expiry-time"));
    }

    #[test]
    fn kubernetes_io_is_denied_unless_allowed() {
        let (features, errors) = parse(
            "kubernetes.io/hostname=x\nnode.kubernetes.io/foo=1\nsub.feature.node.kubernetes.io/ok=1\nprofile.node.kubernetes.io/p=1\n",
            &Naming::File,
        );
        assert_eq!(errors.len(), 2);
        assert!(errors[0].starts_with(
            "src:1: label \"kubernetes.io/hostname\": namespace \"kubernetes.io\" is not allowed"
        ));
        assert_eq!(features.len(), 2);
        let policy = NamespacePolicy {
            extra_allowed: vec!["node.kubernetes.io".into()],
        };
        let (f, e) = parse_features(
            "s",
            "node.kubernetes.io/foo=1",
            &Naming::File,
            &policy,
            now(),
        );
        assert!(e.is_empty() && f.len() == 1);
    }

    #[test]
    fn invalid_entries_have_positions() {
        let (_, errors) = parse("ok=1\nbad key=1\ngood=bad value\n", &Naming::File);
        assert_eq!(errors.len(), 2);
        assert!(
            errors[0]
                .starts_with("src:2: invalid label key \"feature.node.kubernetes.io/bad key\"")
        );
        assert!(errors[1].starts_with("src:3: invalid value \"bad value\""));
    }

    #[test]
    fn later_lines_win() {
        let (features, _) = parse("a=1\na=2\n", &Naming::File);
        assert_eq!(features, vec![kv("feature.node.kubernetes.io/a", "2")]);
    }

    fn feature(key: &str) -> Feature {
        Feature {
            key: format!("feature.node.kubernetes.io/{key}"),
            value: "1".into(),
            line: 1,
        }
    }

    #[test]
    fn prune_removes_only_what_the_same_source_imported() {
        use crate::syntax::LabelChange;
        let key = |k: &str| format!("feature.node.kubernetes.io/{k}");
        // hook:cpu imported cpu-model.id and old; hook:sysctl imported swappiness.
        let previous = serde_json::json!({
            "hook:cpu": [key("cpu-model.id"), key("old")],
            "hook:sysctl": [key("swappiness")],
        })
        .to_string();
        let (changes, annotation) = import_changes(
            &ImportRecord::parse(Some(&previous)),
            "hook:sysctl",
            &[feature("somaxconn")],
            true,
            &Default::default(),
        );
        assert_eq!(
            changes,
            vec![
                LabelChange::Set {
                    key: key("somaxconn"),
                    value: "1".into()
                },
                LabelChange::Remove {
                    key: key("swappiness")
                },
            ],
            "the cpu hook's keys are not the sysctl hook's to prune"
        );
        let record = ImportRecord::parse(annotation.value());
        assert_eq!(record.by_source["hook:cpu"].len(), 2);
        assert_eq!(
            record.by_source["hook:sysctl"].iter().collect::<Vec<_>>(),
            vec![&key("somaxconn")]
        );

        // Without --prune the source keeps its earlier keys.
        let (changes, annotation) = import_changes(
            &ImportRecord::parse(Some(&previous)),
            "hook:sysctl",
            &[feature("somaxconn")],
            false,
            &Default::default(),
        );
        assert_eq!(changes.len(), 1);
        assert!(
            ImportRecord::parse(annotation.value()).by_source["hook:sysctl"]
                .contains(&key("swappiness"))
        );
    }

    #[test]
    fn a_key_two_sources_claim_is_kept_and_legacy_records_are_read() {
        use crate::syntax::LabelChange;
        let key = |k: &str| format!("feature.node.kubernetes.io/{k}");
        let previous =
            serde_json::json!({"file:a": [key("shared")], "file:b": [key("shared")]}).to_string();
        let (changes, _) = import_changes(
            &ImportRecord::parse(Some(&previous)),
            "file:a",
            &[],
            true,
            &Default::default(),
        );
        assert!(changes.is_empty(), "file:b still claims it: {changes:?}");

        // The comma-separated record of older versions: keys of an unknown source, never
        // pruned, claimed by the source that sets them again.
        let legacy = format!("{},{}", key("a"), key("gone"));
        let (changes, annotation) = import_changes(
            &ImportRecord::parse(Some(&legacy)),
            "file:f",
            &[feature("a")],
            true,
            &Default::default(),
        );
        assert_eq!(
            changes,
            vec![LabelChange::Set {
                key: key("a"),
                value: "1".into()
            }]
        );
        let record = ImportRecord::parse(annotation.value());
        assert_eq!(
            record.by_source[UNKNOWN_SOURCE].iter().collect::<Vec<_>>(),
            vec![&key("gone")]
        );
        assert!(record.by_source["file:f"].contains(&key("a")));
        assert!(record.owns(&key("gone")) && !record.owns(&key("other")));

        // A label set by hand with the imported value is set but not claimed.
        let by_hand: std::collections::BTreeSet<String> = [key("a")].into();
        let (_, annotation) = import_changes(
            &ImportRecord::default(),
            "file:f",
            &[feature("a")],
            true,
            &by_hand,
        );
        assert!(!ImportRecord::parse(annotation.value()).owns(&key("a")));
    }

    #[test]
    fn oversized_files_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, "a=1\n".repeat(20_000)).unwrap();
        assert!(matches!(
            read_feature_file(&path),
            Err(SourceError::TooLarge { .. })
        ));
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_feature_file(&path),
            Err(SourceError::NotText { .. })
        ));
    }

    #[test]
    fn node_files_skip_dot_files() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["gpu-1", "gpu-2.features", ".hidden", ".gpu-3.features"] {
            std::fs::write(dir.path().join(name), "a=1").unwrap();
        }
        let nodes: Vec<String> = node_files(dir.path())
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(nodes, vec!["gpu-1", "gpu-2"]);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn hooks_run_without_a_shell_or_secrets() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let hook = dir.path().join("my-script");
        // HOME (set for the test process) stands for any inherited secret: it must not reach the hook.
        std::fs::write(
            &hook,
            "#!/bin/sh\necho \"home=${HOME:-none}\"\necho \"node=$NODE_NAME arg=$1\"\necho 'vm.swappiness=10'\n",
        )
        .unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = run_hook(&hook, Duration::from_secs(5), "gpu-1")
            .await
            .unwrap();
        assert_eq!(
            out.stdout,
            "home=none\nnode=gpu-1 arg=gpu-1\nvm.swappiness=10\n"
        );
        assert_eq!(out.stderr, "");

        let failing = dir.path().join("failing");
        std::fs::write(
            &failing,
            "#!/bin/sh\necho 'cannot read /host-proc' >&2\nexit 3\n",
        )
        .unwrap();
        std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = run_hook(&failing, Duration::from_secs(5), "gpu-1")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("exit status: 3") && err.contains("cannot read /host-proc"),
            "{err}"
        );

        let slow = dir.path().join("slow");
        std::fs::write(&slow, "#!/bin/sh\nsleep 5\n").unwrap();
        std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = run_hook(&slow, Duration::from_millis(200), "gpu-1")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("timed out"), "{err}");

        let chatty = dir.path().join("chatty");
        std::fs::write(&chatty, "#!/bin/sh\nyes a=1 | head -c 200000\n").unwrap();
        std::fs::set_permissions(&chatty, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = run_hook(&chatty, Duration::from_secs(5), "gpu-1")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 65536 bytes"), "{err}");

        // A hook that leaves a background child holding its stdout: its own output counts,
        // it is not "timed out", and the child is stopped.
        let marker = dir.path().join("still-running");
        let background = dir.path().join("background");
        std::fs::write(
            &background,
            format!(
                "#!/bin/sh\necho 'a=1'\n(sleep 3; touch {}) &\nexit 0\n",
                marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&background, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = std::time::Instant::now();
        let out = run_hook(&background, Duration::from_secs(10), "gpu-1")
            .await
            .unwrap();
        assert_eq!(out.stdout, "a=1\n");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "did not wait for the child"
        );

        // A child that left the hook's session (setsid) and holds its stdout: what the hook
        // printed is still its output, and the child is stopped through the pipe.
        let escaped = dir.path().join("escaped");
        let escaped_marker = dir.path().join("escaped-still-running");
        std::fs::write(
            &escaped,
            format!(
                "#!/bin/sh\necho 'a=1'\nsetsid sh -c 'sleep 3; touch {}' &\nexit 0\n",
                escaped_marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&escaped, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = std::time::Instant::now();
        let out = run_hook(&escaped, Duration::from_secs(10), "gpu-1").await;
        assert_eq!(
            out.unwrap().stdout,
            "a=1\n",
            "what the hook printed is kept"
        );
        assert!(started.elapsed() < Duration::from_secs(3));
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(!escaped_marker.exists(), "the setsid child was stopped");

        // A timed-out hook's grandchildren are stopped with it.
        let slow_tree = dir.path().join("slow-tree");
        std::fs::write(
            &slow_tree,
            format!(
                "#!/bin/sh\n(sleep 2; touch {}) &\nsleep 10\n",
                marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&slow_tree, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = run_hook(&slow_tree, Duration::from_millis(300), "gpu-1")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("timed out"), "{err}");
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(!marker.exists(), "a background child outlived its hook");
    }

    proptest! {
        #[test]
        fn never_panics(content in "\\PC{0,200}", hook in proptest::bool::ANY) {
            let naming = if hook { Naming::Hook { hook_name: "h".into() } } else { Naming::File };
            let _ = parse_features("s", &content, &naming, &NamespacePolicy::default(), now());
        }
    }

    #[test]
    fn a_fifo_or_a_directory_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_feature_file(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a directory (use --dir"), "{err}");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let err = read_feature_file(&fifo).unwrap_err().to_string();
            assert!(
                err.contains("a FIFO, socket or device, not a regular file"),
                "{err}"
            );
        }
    }
}
