//! Inputs of the linter: files, directories, stdin, read one document at a time;
//! multi-document streams split at `---` so one broken document does not hide the others;
//! `kind: List`; Helm's `# Source:` comments; and the objects found in them, one view per
//! pod spec.

use std::path::{Path, PathBuf};

use super::podspec::{PodSpecRef, pod_specs};
use super::relax::relax_indentation;
use super::yaml::{DuplicateKey, Node, NodeKind, parse_document_with_duplicates};

/// Largest input file accepted (a bigger one is an error, not an out-of-memory).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// A problem reading or parsing input: always with the file and, where known, a position.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputError {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.file, self.message),
            (Some(l), None) => write!(f, "{}:{l}: {}", self.file, self.message),
            _ => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Expands `-f` arguments into files: a file as is, a directory's `.yaml`/`.yml`/`.json`
/// files (recursively with `recursive`), `-` for stdin. Sorted within each directory.
pub fn collect_paths(inputs: &[PathBuf], recursive: bool) -> (Vec<PathBuf>, Vec<InputError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            files.push(input.clone());
            continue;
        }
        match std::fs::metadata(input) {
            Ok(m) if m.is_dir() => walk(input, recursive, &mut files, &mut errors),
            Ok(_) => files.push(input.clone()),
            Err(e) => errors.push(InputError {
                file: input.display().to_string(),
                line: None,
                column: None,
                message: e.to_string(),
            }),
        }
    }
    // A file named twice (`-f a.yaml -f ./a.yaml`, or inside a directory also given) is
    // linted, and fixed, once.
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| {
        f.as_os_str() == "-" || seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
    });
    (files, errors)
}

fn walk(dir: &Path, recursive: bool, files: &mut Vec<PathBuf>, errors: &mut Vec<InputError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(InputError {
                file: dir.display().to_string(),
                line: None,
                column: None,
                message: e.to_string(),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            // As `kubectl apply -R`: a symlink to a directory is not followed (no loops, no
            // file reported under a second name); symlinks to files are read.
            let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
            if recursive && !link {
                walk(&path, recursive, files, errors);
            }
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            // A FIFO, socket or device named like a manifest in a walked directory would
            // hang or flood the linter: only regular files (or links to them) are read.
            // A FIFO named on the command line (`-f <(...)`) is read, as kubectl does.
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => files.push(path),
                Ok(_) => errors.push(InputError {
                    file: path.display().to_string(),
                    line: None,
                    column: None,
                    message: "not a regular file: skipped".into(),
                }),
                Err(e) => errors.push(InputError {
                    file: path.display().to_string(),
                    line: None,
                    column: None,
                    message: e.to_string(),
                }),
            }
        }
    }
}

/// Where a file's documents come from: a path, or stdin (`-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    pub path: PathBuf,
    /// As shown in findings: the path as given, or `<stdin>`.
    pub name: String,
    /// Files of one group see each other's PodDisruptionBudgets: the directory a file is
    /// in (so a kustomize base's `pdb.yaml` meets its `deployment.yaml`), or the stream.
    pub group: String,
    /// The text to lint instead of reading the path (stdin read once, a file being fixed).
    pub content: Option<std::sync::Arc<str>>,
    /// In a kustomization's directory: kustomize reads it (YAML 1.2, so `yes` is a string
    /// it writes back quoted), not kubectl.
    pub kustomize: bool,
}

/// The names kustomize looks for in a directory.
const KUSTOMIZATION_FILES: &[&str] = &["kustomization.yaml", "kustomization.yml", "Kustomization"];

impl InputFile {
    pub fn new(path: PathBuf) -> Self {
        if path.as_os_str() == "-" {
            return InputFile {
                path,
                name: "<stdin>".into(),
                group: "<stdin>".into(),
                content: None,
                kustomize: false,
            };
        }
        // `./deploy/a.yaml` is shown as `deploy/a.yaml`, as code scanning and GitLab
        // expect repository-relative paths.
        let shown = path.strip_prefix(".").unwrap_or(&path);
        let name = if shown.as_os_str().is_empty() {
            path.display().to_string()
        } else {
            shown.display().to_string()
        };
        // A regular file's group is its directory, however the path was spelled (`a.yaml`
        // and `./b.yaml` are together); a pipe (`<(helm template ...)`) is a group alone.
        let (group, kustomize) = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => {
                let parent = path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                let kustomize = KUSTOMIZATION_FILES.iter().any(|k| parent.join(k).is_file());
                let group = std::fs::canonicalize(parent)
                    .unwrap_or_else(|_| parent.to_path_buf())
                    .display()
                    .to_string();
                (group, kustomize)
            }
            _ => (name.clone(), false),
        };
        InputFile {
            path,
            name,
            group,
            content: None,
            kustomize,
        }
    }
}

/// One `---`-separated document of a file, not yet parsed.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub text: String,
    /// 0-based file line of the chunk's first line.
    pub first_line: usize,
    /// Where the chunk starts in the file, in bytes.
    pub byte_offset: usize,
}

/// Reads an input one document at a time, so memory holds one document, never the file:
/// `emit` gets each chunk as soon as its `---` (or the end) is read. Oversized, binary and
/// non-UTF-8 input is refused with a clear message (documents already emitted must then be
/// dropped by the caller).
pub fn read_chunks(file: &InputFile, mut emit: impl FnMut(Chunk)) -> Result<(), InputError> {
    use std::io::BufRead;
    let fail = |message: String| InputError {
        file: file.name.clone(),
        line: None,
        column: None,
        message,
    };
    let reader: Box<dyn BufRead + '_> = if let Some(text) = &file.content {
        Box::new(text.as_bytes())
    } else if file.path.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let metadata = std::fs::metadata(&file.path).map_err(|e| fail(e.to_string()))?;
        if metadata.is_dir() {
            return Err(fail(
                "is a directory (give -R to lint the files in it)".into(),
            ));
        }
        // A pipe (`-f <(helm template ...)`) has no size: the byte count below limits it.
        if metadata.is_file() && metadata.len() > MAX_FILE_BYTES {
            return Err(fail(format!(
                "{} bytes is over the {MAX_FILE_BYTES}-byte input limit",
                metadata.len()
            )));
        }
        let f = std::fs::File::open(&file.path).map_err(|e| fail(e.to_string()))?;
        Box::new(std::io::BufReader::with_capacity(64 * 1024, f))
    };
    // One byte past the limit is read, so an endless line (`-f /dev/zero`) stops there.
    let mut reader = std::io::Read::take(reader, MAX_FILE_BYTES + 1);
    let mut chunk = Chunk {
        text: String::new(),
        first_line: 0,
        byte_offset: 0,
    };
    let mut bytes = Vec::new();
    let mut offset: u64 = 0;
    let mut line_no = 0;
    loop {
        bytes.clear();
        let n = reader
            .read_until(b'\n', &mut bytes)
            .map_err(|e| fail(e.to_string()))?;
        if n == 0 {
            break;
        }
        if offset + n as u64 > MAX_FILE_BYTES {
            return Err(fail(format!(
                "input is over the {MAX_FILE_BYTES}-byte limit"
            )));
        }
        if let Some(i) = bytes.iter().position(|b| *b == 0) {
            return Err(fail(format!(
                "binary data (a NUL byte at offset {}), not YAML or JSON",
                offset + i as u64
            )));
        }
        let mut line = std::str::from_utf8(&bytes).map_err(|e| {
            fail(format!(
                "not UTF-8 text (invalid byte at offset {})",
                offset + e.valid_up_to() as u64
            ))
        })?;
        offset += n as u64;
        // A byte-order mark is not text: columns and fixes count from after it.
        if line_no == 0
            && let Some(rest) = line.strip_prefix('\u{feff}')
        {
            line = rest;
        }
        let is_separator =
            line.starts_with("---") && line[3..].trim().chars().next().is_none_or(|c| c == '#');
        if is_separator {
            let next = Chunk {
                text: String::new(),
                first_line: line_no + 1,
                byte_offset: offset as usize,
            };
            if !chunk.text.trim().is_empty() {
                emit(std::mem::replace(&mut chunk, next));
            } else {
                chunk = next;
            }
        } else {
            if chunk.text.is_empty() {
                chunk.first_line = line_no;
                chunk.byte_offset = offset as usize - line.len();
            }
            chunk.text.push_str(line);
        }
        line_no += 1;
    }
    if !chunk.text.trim().is_empty() {
        emit(chunk);
    }
    Ok(())
}

/// One parsed document: its tree, the text it came from (for comments and source lines),
/// the Helm template it was rendered from, and the duplicate keys in it.
#[derive(Debug, Clone)]
pub struct Document {
    pub root: Node,
    /// The `# Source: chart/templates/x.yaml` comment before it, if any.
    pub helm_source: Option<String>,
    pub duplicates: Vec<DuplicateKey>,
    pub text: String,
    /// 0-based file line of the text's first line.
    pub first_line: usize,
    /// Where the text starts in the file, in bytes.
    pub byte_offset: usize,
    /// Read only after re-indenting (kubectl's leniency): positions are the relaxed
    /// text's, so no fix edits this document.
    pub relaxed: bool,
    /// Read by kustomize (its file is in a kustomization's directory), see
    /// [`InputFile::kustomize`].
    pub kustomize: bool,
    /// Byte offset of each line in `text`, so a source line is found without a scan
    /// (text output stays linear in the findings).
    line_starts: Vec<usize>,
}

impl Document {
    /// The text of 1-based file line `line`, if it is in this document.
    pub fn line(&self, line: usize) -> Option<&str> {
        let index = line.checked_sub(1)?.checked_sub(self.first_line)?;
        let start = *self.line_starts.get(index)?;
        let end = self
            .line_starts
            .get(index + 1)
            .copied()
            .unwrap_or(self.text.len());
        Some(self.text[start..end].trim_end_matches(['\n', '\r']))
    }

    /// The line break the document uses (`\r\n` when its first line ends so).
    pub fn newline(&self) -> &'static str {
        match self.text.find('\n') {
            Some(i) if i > 0 && self.text.as_bytes()[i - 1] == b'\r' => "\r\n",
            _ => "\n",
        }
    }

    /// The byte offset in `text` of 1-based file line `line`, 1-based character column
    /// `col`; the line after the last is the end of the text.
    pub fn byte_at(&self, line: usize, col: usize) -> Option<usize> {
        let index = line.checked_sub(1)?.checked_sub(self.first_line)?;
        let Some(start) = self.line_starts.get(index).copied() else {
            return (index == self.line_starts.len() && col == 1).then_some(self.text.len());
        };
        let end = self
            .line_starts
            .get(index + 1)
            .copied()
            .unwrap_or(self.text.len());
        let line_text = &self.text[start..end];
        let chars = col.checked_sub(1)?;
        match line_text.char_indices().nth(chars) {
            Some((i, _)) => Some(start + i),
            None => (line_text.chars().count() == chars).then_some(end),
        }
    }
}

/// Parses a chunk. Input kubectl reads but strict YAML refuses (see [`relax_indentation`])
/// is parsed again relaxed; an unrendered Helm or Go template is named as such.
pub fn parse_chunk(file: &str, chunk: Chunk) -> Result<Option<Document>, InputError> {
    let helm_source = chunk
        .text
        .lines()
        .map(str::trim)
        .take_while(|l| l.is_empty() || l.starts_with('#'))
        .find_map(|l| l.strip_prefix("# Source:").map(str::trim))
        // What Helm writes: `# Source: CHART/templates/FILE`, one path without blanks (a
        // hand-written `# Source: copied from ...` is not Helm output).
        .filter(|s| s.contains("/templates/") && !s.contains(char::is_whitespace))
        .map(str::to_string);
    let mut duplicates = Vec::new();
    let mut relaxed = None;
    let parsed =
        match parse_document_with_duplicates(&chunk.text, chunk.first_line, &mut duplicates) {
            Err(strict) => match relax_indentation(&chunk.text) {
                Some(text) => {
                    duplicates.clear();
                    let parsed =
                        parse_document_with_duplicates(&text, chunk.first_line, &mut duplicates)
                            .map_err(|_| strict);
                    relaxed = Some(text);
                    parsed
                }
                None => Err(strict),
            },
            ok => ok,
        };
    // It parsed, but as YAML it means nothing: the chart must be rendered first.
    if let Ok(Some(root)) = &parsed {
        let parsed_text = relaxed.as_deref().unwrap_or(&chunk.text);
        if let Some(at) = template_action_line(parsed_text, chunk.first_line, root) {
            return Err(InputError {
                file: file.to_string(),
                line: Some(at),
                column: None,
                message: "an unrendered Helm/Go template (`{{ ... }}`): render it first, e.g. `helm template`, and lint the output".into(),
            });
        }
    }
    let relaxed = relaxed.is_some();
    match parsed {
        Ok(Some(root)) => Ok(Some(Document {
            root,
            helm_source,
            duplicates,
            line_starts: std::iter::once(0)
                .chain(chunk.text.match_indices('\n').map(|(i, _)| i + 1))
                .filter(|i| *i < chunk.text.len())
                .collect(),
            text: chunk.text,
            first_line: chunk.first_line,
            byte_offset: chunk.byte_offset,
            relaxed,
            kustomize: false,
        })),
        Ok(None) => Ok(None),
        Err(e) => {
            let message = match template_line(&chunk.text) {
                Some(at) => format!(
                    "YAML: {} (this is an unrendered Helm/Go template: `{{{{` at line {}; render it first, e.g. `helm template`, and lint the output)",
                    e.message,
                    chunk.first_line + at + 1
                ),
                None => format!("YAML: {}", e.message),
            };
            Err(InputError {
                file: file.to_string(),
                line: Some(e.line),
                column: Some(e.col),
                message,
            })
        }
    }
}

/// The 0-based line of the first Go template action outside comments.
fn template_line(text: &str) -> Option<usize> {
    text.lines().position(has_go_action)
}

/// How a Go template action starts (`{{ .x }}`, `{{- if }}`, `{{ end }}`); a bare
/// `{{TOKEN}}` placeholder is not one.
const GO_ACTIONS: &[&str] = &[
    ".",
    "$",
    "include ",
    "template ",
    "if ",
    "else",
    "end",
    "range ",
    "with ",
    "define ",
    "toYaml",
    "tpl ",
    "printf ",
    "default ",
    "quote ",
    "required ",
    "/*",
];

/// Whether a line holds a Go template action outside a comment.
fn has_go_action(line: &str) -> bool {
    let comment = comment_start(line);
    line.match_indices("{{")
        .filter(|(i, _)| comment.is_none_or(|c| *i < c))
        .any(|(i, _)| {
            let action = line[i + 2..].trim_start_matches('-').trim_start();
            GO_ACTIONS.iter().any(|a| action.starts_with(a))
        })
}

/// The line (1-based, in the file) of a Helm template action in a document that parsed
/// as YAML, if it has one: a Go action where YAML has structure (`replicas: {{ $n }}`
/// reads as a flow mapping), or an action on Helm's own objects and functions in a plain
/// scalar (`image: repo:{{ .Chart.AppVersion }}`). Text in quoted and block scalars is
/// data, whatever it looks like: a PrometheusRule's `description: '{{ $labels.pod }} is
/// down'`, Alertmanager's `{{ define "x" }}` in a block scalar, Argo's
/// `{{inputs.parameters.x}}`, and rendered output that carries Helm's words as text
/// (`linkerd install`'s `{{ .Release.Namespace }}` in a ConfigMap's block scalar).
fn template_action_line(text: &str, first_line: usize, root: &Node) -> Option<usize> {
    /// Helm's own objects (`.Values.x`, `$.Release.Name`) and functions, as words of the
    /// action (not of the text after it: `{{ $labels.x }} is missing required labels`).
    fn helm_action(action: &str) -> bool {
        const OBJECTS: &[&str] = &[
            "Values",
            "Release",
            "Chart",
            "Capabilities",
            "Files",
            "Template",
        ];
        const FUNCTIONS: &[&str] = &[
            "include", "tpl", "toYaml", "fromYaml", "required", "nindent", "lookup",
        ];
        action
            .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '|'))
            .any(|word| {
                FUNCTIONS.contains(&word)
                    || word
                        .trim_start_matches('$')
                        .strip_prefix('.')
                        .and_then(|w| w.split('.').next())
                        .is_some_and(|object| OBJECTS.contains(&object))
            })
    }
    if !text.contains("{{") {
        return None;
    }
    let mut scalars = Vec::new();
    scalar_spans(root, &mut scalars);
    // The scalar a position is in, and whether it is plain (not quoted, not a block).
    let scalar_at = |line: usize, col: usize| {
        scalars
            .iter()
            .find(|&&(start, end, _)| start <= (line, col) && (line, col) < end)
            .map(|&(_, _, plain)| plain)
    };
    text.lines().enumerate().find_map(|(index, l)| {
        let line = first_line + index + 1;
        let comment = comment_start(l);
        l.match_indices("{{")
            .filter(|(i, _)| comment.is_none_or(|c| *i < c))
            .any(|(i, _)| {
                let rest = &l[i + 2..];
                let action = rest[..rest.find("}}").unwrap_or(rest.len())]
                    .trim_start_matches('-')
                    .trim_start();
                let go = GO_ACTIONS.iter().any(|a| action.starts_with(a));
                // Node columns count characters, not bytes.
                let column = l[..i].chars().count() + 1;
                match scalar_at(line, column) {
                    // Text in quotes or a block scalar is data, whatever it looks like:
                    // rendered output (`linkerd install`) carries Helm's words there.
                    Some(false) => false,
                    Some(true) => helm_action(action),
                    None => go || helm_action(action),
                }
            })
            .then_some(line)
    })
}

/// A scalar's text from (line, column) to (end line, end column), and whether it is plain.
type Span = ((usize, usize), (usize, usize), bool);

/// Every scalar's span.
fn scalar_spans(node: &Node, out: &mut Vec<Span>) {
    match &node.kind {
        NodeKind::Scalar { plain, .. } => {
            out.push(((node.line, node.col), (node.end_line, node.end_col), *plain))
        }
        NodeKind::Seq(items) => items.iter().for_each(|n| scalar_spans(n, out)),
        NodeKind::Map(entries) => entries.iter().for_each(|(k, v)| {
            scalar_spans(k, out);
            scalar_spans(v, out);
        }),
    }
}

/// Where a line's comment starts (a `#` at the start or after a blank), ignoring quotes:
/// good enough to skip `{{` written in a comment.
fn comment_start(line: &str) -> Option<usize> {
    line.match_indices('#')
        .map(|(i, _)| i)
        .find(|&i| i == 0 || line[..i].ends_with([' ', '\t']))
}

/// Labels an operator puts on every pod of the object with the object's own name as the
/// value, by the object's kind. The Kubeflow training operator sets the short `job-name` too
/// (its older label, still on the pods and still copied into selectors).
const OPERATOR_NAME_LABELS: &[(&[&str], &[&str])] = &[
    (
        &[
            "PyTorchJob",
            "TFJob",
            "MPIJob",
            "XGBoostJob",
            "PaddleJob",
            "MXJob",
            "JAXJob",
        ],
        &["training.kubeflow.org/job-name", "job-name"],
    ),
    (&["RayCluster"], &["ray.io/cluster"]),
    (&["JobSet"], &["jobset.sigs.k8s.io/jobset-name"]),
    (&["LeaderWorkerSet"], &["leaderworkerset.sigs.k8s.io/name"]),
];

/// A Kubernetes object found in the input, seen through one of its pod specs: an object
/// with several (a RayCluster's head and workers) is linted once per pod spec.
#[derive(Debug, Clone)]
pub struct Object<'a> {
    pub file: &'a str,
    pub helm_source: Option<&'a str>,
    pub kind: String,
    pub api_version: String,
    pub name: String,
    pub namespace: Option<String>,
    pub root: &'a Node,
    /// The pod spec this view is about, if the object has any.
    pub pod: Option<PodSpecRef<'a>>,
    /// Which of the object's views this is: object-level rules run on view 0 only.
    pub view: usize,
    pub document: &'a Document,
    /// Duplicate keys inside this object.
    pub duplicates: Vec<&'a DuplicateKey>,
}

impl<'a> Object<'a> {
    /// `Deployment ml/llm-inference`.
    pub fn display(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// The pod spec of this view.
    pub fn pod_spec(&self) -> Option<&'a Node> {
        self.pod.as_ref().map(|p| p.spec)
    }

    /// The pod template's labels.
    pub fn pod_labels(&self) -> Vec<(&'a str, &'a str)> {
        self.pod
            .as_ref()
            .and_then(|p| p.metadata)
            .and_then(|m| m.get("labels"))
            .map(Node::string_map)
            .unwrap_or_default()
    }

    /// The labels an operator sets on the pods of this view to the object's own name, beside
    /// the template's (none for core kinds and unnamed objects).
    pub fn operator_name_labels(&self) -> &'static [&'static str] {
        let core = self.pod.as_ref().is_some_and(|p| p.core);
        if core || self.name.is_empty() {
            return &[];
        }
        OPERATOR_NAME_LABELS
            .iter()
            .find(|(kinds, _)| kinds.contains(&self.kind.as_str()))
            .map_or(&[], |(_, keys)| *keys)
    }

    /// The labels the pods of this view carry as far as the manifest tells: the template's,
    /// and the labels their operator sets to the object's name (a PyTorchJob's pods carry
    /// `training.kubeflow.org/job-name: <its name>`).
    pub fn labels_of_pods(&self) -> Vec<(&str, &str)> {
        let mut labels = self.pod_labels();
        for key in self.operator_name_labels() {
            if !labels.iter().any(|(k, _)| k == key) {
                labels.push((key, self.name.as_str()));
            }
        }
        labels
    }

    /// Whether the object is evidently part of an OpenShift payload: in an `openshift-*`
    /// namespace, annotated for the release payload (`include.release.openshift.io/*`,
    /// `release.openshift.io/*`, `capability.openshift.io/*`), of an `*.openshift.io` API
    /// group, or an OLM ClusterServiceVersion. OpenShift still taints its control planes
    /// `node-role.kubernetes.io/master`, so what is retired elsewhere is current there.
    pub fn openshift_payload(&self) -> bool {
        let namespace = self.namespace.as_deref().unwrap_or_default();
        let group = self.api_version.split('/').next().unwrap_or_default();
        let annotated = self
            .root
            .path(&["metadata", "annotations"])
            .map(Node::string_map)
            .unwrap_or_default()
            .iter()
            .any(|(key, _)| {
                [
                    "include.release.openshift.io/",
                    "release.openshift.io/",
                    "capability.openshift.io/",
                ]
                .iter()
                .any(|prefix| key.starts_with(prefix))
            });
        namespace == "openshift"
            || namespace.starts_with("openshift-")
            || annotated
            || group.ends_with(".openshift.io")
            || (self.kind == "ClusterServiceVersion" && group == "operators.coreos.com")
    }

    /// Whether this view is a kustomize patch rather than an object to apply: a workload
    /// without its selector, or a container without an image (both required by the API
    /// server). A patch carries only what it changes, so what it leaves out says nothing.
    pub fn is_patch(&self) -> bool {
        let workload = matches!(
            self.kind.as_str(),
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
        );
        (workload && self.root.path(&["spec", "selector"]).is_none())
            || self.pod_spec().is_some_and(|spec| {
                spec.get("containers")
                    .map(Node::items)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.get("image").is_none())
            })
    }

    /// Rules suppressed by `affinity-lint.placekit.dev/ignore` on the object or its template.
    pub fn ignored_rules(&self) -> Vec<String> {
        let mut out = Vec::new();
        for meta in [
            self.root.get("metadata"),
            self.pod.as_ref().and_then(|p| p.metadata),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(list) = meta
                .path(&["annotations", IGNORE_ANNOTATION])
                .and_then(Node::as_str)
            {
                // Separated by commas, spaces or semicolons; the admission policy splits
                // the same way.
                out.extend(
                    list.split([',', ';', ' ', '\t', '\n'])
                        .map(str::to_ascii_uppercase)
                        .filter(|s| !s.is_empty()),
                );
            }
        }
        out
    }

    /// The comments on 1-based file line `line` and on the comment-only lines right above
    /// it: where authors say what a construct is meant to do.
    pub fn comments_at(&self, line: usize) -> Vec<&'a str> {
        let mut out = Vec::new();
        if let Some(text) = self.document.line(line)
            && let Some(i) = text.find(" #")
        {
            out.push(text[i + 2..].trim());
        }
        let mut above = line;
        while above > 1 {
            above -= 1;
            match self.document.line(above).map(str::trim_start) {
                Some(l) if l.starts_with('#') => out.push(l.trim_start_matches('#').trim()),
                _ => break,
            }
        }
        out
    }
}

/// The suppression annotation.
pub const IGNORE_ANNOTATION: &str = "affinity-lint.placekit.dev/ignore";

/// The objects of a document (`kind: List` items included), one view per pod spec.
pub fn objects<'a>(file: &'a str, doc: &'a Document) -> Vec<Object<'a>> {
    let mut roots: Vec<&'a Node> = Vec::new();
    if doc
        .root
        .get("kind")
        .and_then(Node::as_str)
        .is_some_and(|k| k == "List" || k.ends_with("List"))
    {
        roots.extend(doc.root.get("items").map(Node::items).unwrap_or_default());
    } else {
        roots.push(&doc.root);
    }
    // Where each object starts (line and column: a minified JSON List is one line).
    let starts: Vec<(usize, usize)> = roots.iter().map(|r| (r.line, r.col)).collect();
    let mut out = Vec::new();
    for (i, node) in roots.iter().enumerate() {
        let Some(kind) = node.get("kind").and_then(Node::as_str) else {
            continue;
        };
        // An object named by the server (`generateName: gpu-`) is shown as `gpu-`, as
        // kubectl shows it before creation.
        let name = node
            .path(&["metadata", "name"])
            .or_else(|| node.path(&["metadata", "generateName"]))
            .and_then(Node::as_str)
            .unwrap_or_default();
        let api_version = node
            .get("apiVersion")
            .and_then(Node::as_str)
            .unwrap_or_default();
        // A duplicate belongs to the object whose lines it is in (items of a List follow
        // each other).
        let end = starts.get(i + 1).copied().unwrap_or((usize::MAX, 0));
        let duplicates: Vec<&DuplicateKey> = doc
            .duplicates
            .iter()
            .filter(|d| (i == 0 || (d.line, d.col) >= starts[i]) && (d.line, d.col) < end)
            .collect();
        let specs = pod_specs(kind, api_version, node);
        let views: Vec<Option<PodSpecRef<'a>>> = if specs.is_empty() {
            vec![None]
        } else {
            specs.into_iter().map(Some).collect()
        };
        for (view, pod) in views.into_iter().enumerate() {
            out.push(Object {
                file,
                helm_source: doc.helm_source.as_deref(),
                kind: kind.to_string(),
                api_version: api_version.to_string(),
                name: name.to_string(),
                namespace: node
                    .path(&["metadata", "namespace"])
                    .and_then(Node::as_str)
                    .map(str::to_string),
                root: node,
                pod,
                view,
                document: doc,
                duplicates: if view == 0 {
                    duplicates.clone()
                } else {
                    Vec::new()
                },
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(text: &str) -> (Vec<Document>, Vec<InputError>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.yaml");
        std::fs::write(&path, text).unwrap();
        let file = InputFile::new(path);
        let mut docs = Vec::new();
        let mut errors = Vec::new();
        read_chunks(&file, |c| match parse_chunk("x.yaml", c) {
            Ok(Some(d)) => docs.push(d),
            Ok(None) => {}
            Err(e) => errors.push(e),
        })
        .unwrap();
        (docs, errors)
    }

    #[test]
    fn documents_keep_file_lines_and_helm_sources() {
        let (docs, errors) = chunks(
            "---\n# Source: chart/templates/a.yaml\nkind: Pod\nmetadata:\n  name: a\n---\nkind: Pod\nmetadata: {name: b}\n",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(docs.len(), 2);
        assert_eq!(
            docs[0].helm_source.as_deref(),
            Some("chart/templates/a.yaml")
        );
        assert_eq!(docs[0].root.get("kind").unwrap().line, 3);
        assert_eq!(docs[0].line(3), Some("kind: Pod"));
        assert_eq!(docs[1].root.get("kind").unwrap().line, 7);
    }

    #[test]
    fn a_broken_document_does_not_hide_the_others() {
        let (docs, errors) = chunks(
            "kind: Pod\nmetadata: {name: a}\n---\nkind: [unclosed\n---\nkind: Pod\nmetadata: {name: c}\n",
        );
        assert_eq!(docs.len(), 2);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].line, Some(5), "{errors:?}");
    }

    #[test]
    fn unrendered_templates_are_named() {
        let (_, errors) =
            chunks("kind: Deployment\nspec:\n  replicas: {{ .Values.replicas }}\n  x: [\n");
        assert!(
            errors[0].message.contains("unrendered Helm/Go template"),
            "{errors:?}"
        );
        assert!(errors[0].message.contains("line 3"), "{errors:?}");
    }

    #[test]
    fn go_templates_that_are_data_are_not_helm_templates() {
        // A PrometheusRule's annotations, an env value, Alertmanager's templates in a
        // block scalar, Argo's placeholders: YAML strings that kubectl applies as they are.
        let data = "kind: PrometheusRule\nspec:\n  groups:\n  - rules:\n    - annotations:\n        description: 'Pod {{ $labels.pod }} is down'\n        missing: '{{ $labels.instance }} is missing required labels, include them'\n        zh: '服务器内存使用率过高，当前值：{{ $value }}'\n        summary: \"{{ .Labels.job }}\"\n---\nkind: ConfigMap\ndata:\n  t.tmpl: |\n    {{ define \"slack.text\" }}\n    {{ range .Alerts }}{{ .Annotations.summary }}{{ end }}\n    {{ end }}\n---\nkind: Pod\nspec:\n  containers:\n  - env: [{name: F, value: '{{ .Time }} {{ .Msg }}'}]  # {{ not this }}\n    args: [\"{{inputs.parameters.x}}\"]\n";
        let (docs, errors) = chunks(data);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(docs.len(), 3);
        // Rendered output that carries Helm's words as data (`linkerd install`): in a block
        // scalar, in quoted strings. kubectl applies it as it is.
        let rendered = "kind: ConfigMap\ndata:\n  values: |\n    namespace: {{ .Release.Namespace }}\n    image: {{ .Values.image | quote }}\n---\nkind: Pod\nspec:\n  containers:\n  - image: \"{{ .Values.image }}\"\n    args: ['--ns={{ .Release.Namespace }}', \"{{ include \\\"x\\\" . }}\"]\n";
        let (docs, errors) = chunks(rendered);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(docs.len(), 2);
        // Helm's own objects in a plain scalar, and an action where YAML has structure.
        for (text, line) in [
            (
                "kind: Pod\nmetadata:\n  name: x\n  labels: {{- include \"l\" . | nindent 4 }}\n",
                4,
            ),
            ("kind: Pod\nspec:\n  replicas: {{ $n }}\n", 3),
            (
                "kind: Pod\nspec:\n  image: repo:{{ .Chart.AppVersion }}\n",
                3,
            ),
        ] {
            let (_, errors) = chunks(text);
            assert_eq!(errors.len(), 1, "{text}");
            assert!(
                errors[0].message.contains("unrendered Helm/Go template"),
                "{errors:?}"
            );
            assert_eq!(errors[0].line, Some(line), "{text}");
        }
    }

    #[test]
    fn lists_expand_to_objects_and_duplicates_go_to_their_item() {
        let (docs, _) = chunks(
            "kind: List\nitems:\n- kind: Pod\n  metadata: {name: a, namespace: ml}\n- kind: Deployment\n  metadata: {name: b}\n  spec: {replicas: 1, replicas: 2}\n",
        );
        let objs = objects("x.yaml", &docs[0]);
        assert_eq!(
            objs.iter().map(Object::display).collect::<Vec<_>>(),
            vec!["Pod ml/a", "Deployment b"]
        );
        assert!(objs[0].duplicates.is_empty());
        assert_eq!(objs[1].duplicates.len(), 1);
        assert_eq!(
            objs[1].root.path(&["spec", "replicas"]).unwrap().as_i64(),
            Some(2),
            "the last wins"
        );
    }

    #[test]
    fn binary_and_non_utf8_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("x.yaml");
        let read = |bytes: &[u8]| {
            std::fs::write(&bin, bytes).unwrap();
            read_chunks(&InputFile::new(bin.clone()), |_| {})
                .unwrap_err()
                .message
        };
        assert!(read(b"kind: Pod\0\x01").contains("binary data"));
        assert!(read(&[b'a', b'\n', 0xc3, 0x28]).contains("offset 2"));
        assert!(
            read_chunks(&InputFile::new(dir.path().to_path_buf()), |_| {})
                .unwrap_err()
                .message
                .contains("is a directory")
        );
    }
}

#[cfg(all(test, unix))]
mod walk_tests {
    use super::*;

    #[test]
    fn a_fifo_named_like_a_manifest_is_skipped_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), "kind: Pod\n").unwrap();
        let fifo = dir.path().join("b.yaml");
        placekit_core::trust::make_fifo(&fifo);
        let (files, errors) = collect_paths(&[dir.path().to_path_buf()], true);
        assert_eq!(files, vec![dir.path().join("a.yaml")]);
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].message.contains("not a regular file"),
            "{errors:?}"
        );
    }
}
