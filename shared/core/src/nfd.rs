//! Node features in node-feature-discovery's local-source format, for `kubectl nodelabel
//! import`.
//!
//! A feature file (or a hook's standard output) holds one `key[=value]` per line, read as
//! nfd-worker's local source reads it (checked line form by line form against nfd-worker
//! and nfd-master v0.17.3 on a real control plane): each line is trimmed, then split at its
//! first `=`, and the key and value are taken as they are (`key = value` is the key `key `,
//! which no label may have); a key without `=` has the value `true`. A line starting with
//! `#` is a comment, blank lines are ignored, and a comment starting with `# +` is a
//! directive:
//! - `# +expiry-time=<RFC3339>`: the entries after it are ignored once that time has
//!   passed (until the next expiry directive); the time is read as Go's `time.RFC3339` reads
//!   it, so `2030-01-01 00:00:00Z` is an invalid directive (and expires nothing);
//! - `# +no-label`: the next entry read is not turned into a label (an expired entry is not
//!   read: the next one after it is skipped);
//! - `# +no-feature`: NFD's, about its raw features; no label changes;
//! - any other is an invalid directive, reported (NFD logs it as an error and reads on).
//!
//! `#+no-label` (no space) is a plain comment, as for NFD.
//!
//! Naming (`--naming`):
//! - `file` (today's NFD feature files): `key` becomes `feature.node.kubernetes.io/key`,
//!   `ns/name` is used as is, and `/key` is an invalid key (nfd-worker ignores it);
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
        // A `/key` stays as it is, with its empty prefix: nfd-worker refuses the name, and
        // so does the validation below.
        Naming::File if !key.contains('/') => format!("{FEATURE_NAMESPACE}/{key}"),
        Naming::Hook { hook_name } => match key.strip_prefix('/') {
            Some(rest) => format!("{FEATURE_NAMESPACE}/{rest}"),
            None if !key.contains('/') => format!("{FEATURE_NAMESPACE}/{hook_name}-{key}"),
            None => key.to_string(),
        },
        Naming::File => key.to_string(),
    }
}

/// How a directive starts, after the line is trimmed (`#+no-label` is a comment).
const DIRECTIVE_PREFIX: &str = "# +";

/// `text` as Go's `time.Parse(time.RFC3339, text)` reads it, which is how NFD reads an
/// expiry: `T` and `Z` in capitals, seconds required, a fraction after them allowed (with
/// `.` or `,`), an offset `±hh:mm`. jiff alone reads more (a space for `T`), and a time
/// NFD refuses must expire nothing here either.
fn go_rfc3339(text: &str) -> Option<jiff::Timestamp> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range.clone())
            .is_some_and(|d| d.len() == range.len() && d.iter().all(u8::is_ascii_digit))
    };
    let shape = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !shape {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix(['.', ',']) {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return None;
        }
        rest = &fraction[end..];
    }
    let offset = rest.as_bytes();
    let offset_ok = rest == "Z"
        || matches!(offset, [b'+' | b'-', h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()));
    if !offset_ok {
        return None;
    }
    text.replacen(',', ".", 1).parse().ok()
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
        if line.starts_with('#') {
            let Some(directive) = line.strip_prefix(DIRECTIVE_PREFIX) else {
                continue;
            };
            let (name, value) = match directive.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (directive, None),
            };
            match (name, value) {
                ("expiry-time", Some(value)) => match go_rfc3339(value.trim()) {
                    Some(t) => expired = t < now,
                    None => errors.push(error(
                        line_no,
                        format!("invalid +expiry-time {value:?}: not an RFC 3339 time (2030-01-01T00:00:00Z)"),
                    )),
                },
                ("expiry-time", None) => errors.push(error(
                    line_no,
                    "invalid directive: write it as '# +expiry-time=<RFC 3339 time>'".into(),
                )),
                ("no-label", _) => skip_next = true,
                ("no-feature", _) => {}
                (other, _) => errors.push(error(
                    line_no,
                    format!("unknown directive {other:?} (known: expiry-time, no-label, no-feature)"),
                )),
            }
            continue;
        }
        // An expired entry is not read: a `+no-label` before it waits for the next one.
        if expired || std::mem::take(&mut skip_next) {
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, "true"));
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
/// name is the executable of that name on `PATH`, as a shell finds it, and only there: a
/// file of that name in the current directory is written `./NAME` (a shell would not run
/// it either; another user could have planted it in a shared directory). Resolved here
/// because the hook runs with a reduced environment whose `PATH` is not the user's. A hook
/// that other users can write, or whose directory they can write (without the sticky bit),
/// is refused: it would run as the admin whatever they put there.
pub fn resolve_hook(path: &Path) -> Result<PathBuf, SourceError> {
    let not_found = |message: String| SourceError::Hook {
        hook: path.display().to_string(),
        message,
    };
    let bare = path.components().count() == 1 && !path.has_root();
    let found = if bare {
        let on_path = std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(path))
            .find(|candidate| is_executable_file(candidate));
        match on_path {
            // `--hook sysctl` with the runbook's ./sysctl beside it: which one is meant is
            // not ours to guess (PATH first would run /usr/sbin/sysctl with a node name).
            Some(found) if path.is_file() => {
                return Err(not_found(format!(
                    "both {} on PATH and ./{} in the current directory: say which, with ./{} or the full path",
                    found.display(),
                    path.display(),
                    path.display()
                )));
            }
            Some(found) => found,
            None if path.is_file() => {
                return Err(not_found(format!(
                    "no executable {0:?} on PATH; the file in the current directory is run only when named ./{0}",
                    path.display().to_string()
                )));
            }
            None if path.exists() => {
                return Err(not_found(
                    "not a regular file (a directory of per-node files is --dir)".into(),
                ));
            }
            None => {
                return Err(not_found(format!(
                    "no executable {:?} on PATH",
                    path.display().to_string()
                )));
            }
        }
    } else {
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => path.to_path_buf(),
            Ok(_) => return Err(not_found("not a regular file".into())),
            Err(e) => return Err(not_found(e.to_string())),
        }
    };
    if let Some(why) = writable_by_others(&found) {
        return Err(not_found(why));
    }
    Ok(found)
}

/// Why other users could change what `hook` runs: the file writable by group or others,
/// or its directory (without the sticky bit, which keeps them from replacing the file).
fn writable_by_others(hook: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(hook).ok()?.permissions().mode();
        if mode & 0o022 != 0 {
            return Some(format!(
                "{} can be written by other users (mode {:o}): refused, as it would run as you; chmod go-w it",
                hook.display(),
                mode & 0o7777
            ));
        }
        let dir = match hook.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let dir_mode = std::fs::metadata(&dir).ok()?.permissions().mode();
        if dir_mode & 0o022 != 0 && dir_mode & 0o1000 == 0 {
            return Some(format!(
                "its directory {} can be written by other users (mode {:o}), who could replace it: refused; move the hook",
                dir.display(),
                dir_mode & 0o7777
            ));
        }
        None
    }
    #[cfg(not(unix))]
    {
        let _ = hook;
        None
    }
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
mod tests;
