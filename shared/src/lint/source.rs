//! Inputs of the linter: files, directories, stdin; multi-document streams split at `---`
//! so one broken document does not hide the others; `kind: List`; Helm's `# Source:`
//! comments; and the objects found in them.

use std::path::{Path, PathBuf};

use super::yaml::{Node, parse_document};

/// Largest input file accepted (a bigger one is an error, not an out-of-memory).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// A problem reading or parsing input: always with the file and, where known, a position.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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

/// One input file's text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// As given by the user (or `<stdin>`).
    pub name: String,
    pub text: String,
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
            if recursive {
                walk(&path, recursive, files, errors);
            }
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            files.push(path);
        }
    }
}

/// Reads one input, refusing oversized, binary and non-UTF-8 files with a clear message.
pub fn read_source(path: &Path) -> Result<SourceFile, InputError> {
    use std::io::Read;
    let name = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let fail = |message: String| InputError {
        file: name.clone(),
        line: None,
        column: None,
        message,
    };
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(e.to_string()))?;
    } else {
        let size = std::fs::metadata(path)
            .map_err(|e| fail(e.to_string()))?
            .len();
        if size > MAX_FILE_BYTES {
            return Err(fail(format!(
                "{size} bytes is over the {MAX_FILE_BYTES}-byte input limit"
            )));
        }
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| fail(e.to_string()))?;
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(fail(format!(
            "input is over the {MAX_FILE_BYTES}-byte limit"
        )));
    }
    if let Some(i) = bytes.iter().position(|b| *b == 0) {
        return Err(fail(format!(
            "binary data (a NUL byte at offset {i}), not YAML or JSON"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        fail(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok(SourceFile { name, text })
}

/// One document of a file: where it starts and the Helm template it came from.
#[derive(Debug, Clone)]
pub struct Document {
    pub root: Node,
    /// The `# Source: chart/templates/x.yaml` comment before it, if any.
    pub helm_source: Option<String>,
}

/// Splits a file into documents at `---` lines and parses each on its own, so a broken
/// document is reported and the others are still linted.
pub fn parse_file(file: &SourceFile) -> (Vec<Document>, Vec<InputError>) {
    let mut docs = Vec::new();
    let mut errors = Vec::new();
    let mut start_line = 0;
    let mut chunk = String::new();
    let flush = |chunk: &mut String,
                 start_line: usize,
                 docs: &mut Vec<Document>,
                 errors: &mut Vec<InputError>| {
        if chunk.trim().is_empty() {
            chunk.clear();
            return;
        }
        let helm_source = chunk
            .lines()
            .map(str::trim)
            .take_while(|l| l.is_empty() || l.starts_with('#'))
            .find_map(|l| l.strip_prefix("# Source:").map(|s| s.trim().to_string()));
        match parse_document(chunk, start_line) {
            Ok(Some(root)) => docs.push(Document { root, helm_source }),
            Ok(None) => {}
            Err(e) => errors.push(InputError {
                file: file.name.clone(),
                line: Some(e.line),
                column: Some(e.col),
                message: format!("YAML: {}", e.message),
            }),
        }
        chunk.clear();
    };
    for (i, line) in file.text.split_inclusive('\n').enumerate() {
        let is_separator =
            line.starts_with("---") && line[3..].trim().chars().next().is_none_or(|c| c == '#');
        if is_separator {
            flush(&mut chunk, start_line, &mut docs, &mut errors);
            start_line = i + 1;
            continue;
        }
        if chunk.is_empty() {
            start_line = i;
        }
        chunk.push_str(line);
    }
    flush(&mut chunk, start_line, &mut docs, &mut errors);
    (docs, errors)
}

/// A Kubernetes object found in the input.
#[derive(Debug, Clone)]
pub struct Object<'a> {
    pub file: &'a str,
    pub helm_source: Option<&'a str>,
    pub kind: String,
    pub api_version: String,
    pub name: String,
    pub namespace: Option<String>,
    pub root: &'a Node,
}

impl<'a> Object<'a> {
    /// `Deployment ml/llm-inference`.
    pub fn display(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// The pod template (`metadata` + `spec`) of a workload, or the Pod itself.
    pub fn pod_template(&self) -> Option<&'a Node> {
        let root: &'a Node = self.root;
        match self.kind.as_str() {
            "Pod" => Some(root),
            "CronJob" => root.path(&["spec", "jobTemplate", "spec", "template"]),
            _ => root
                .path(&["spec", "template"])
                .filter(|t| t.get("spec").is_some()),
        }
    }

    /// The pod spec of a workload.
    pub fn pod_spec(&self) -> Option<&'a Node> {
        self.pod_template().and_then(|t| t.get("spec"))
    }

    /// The pod template's labels.
    pub fn pod_labels(&self) -> Vec<(&'a str, &'a str)> {
        self.pod_template()
            .and_then(|t| t.path(&["metadata", "labels"]))
            .map(Node::string_map)
            .unwrap_or_default()
    }

    /// Rules suppressed by `affinity-lint.placekit.dev/ignore` on the object or its template.
    pub fn ignored_rules(&self) -> Vec<String> {
        let mut out = Vec::new();
        for meta in [
            self.root.get("metadata"),
            self.pod_template().and_then(|t| t.get("metadata")),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(list) = meta
                .path(&["annotations", IGNORE_ANNOTATION])
                .and_then(Node::as_str)
            {
                out.extend(
                    list.split(',')
                        .map(|s| s.trim().to_ascii_uppercase())
                        .filter(|s| !s.is_empty()),
                );
            }
        }
        out
    }
}

/// The suppression annotation.
pub const IGNORE_ANNOTATION: &str = "affinity-lint.placekit.dev/ignore";

/// The objects of a document (`kind: List` items included).
pub fn objects<'a>(file: &'a str, doc: &'a Document) -> Vec<Object<'a>> {
    let mut out = Vec::new();
    let mut visit = |node: &'a Node| {
        let (Some(kind), Some(name)) = (
            node.get("kind").and_then(Node::as_str),
            node.path(&["metadata", "name"])
                .and_then(Node::as_str)
                .or(Some("")),
        ) else {
            return;
        };
        out.push(Object {
            file,
            helm_source: doc.helm_source.as_deref(),
            kind: kind.to_string(),
            api_version: node
                .get("apiVersion")
                .and_then(Node::as_str)
                .unwrap_or_default()
                .to_string(),
            name: name.to_string(),
            namespace: node
                .path(&["metadata", "namespace"])
                .and_then(Node::as_str)
                .map(str::to_string),
            root: node,
        });
    };
    if doc
        .root
        .get("kind")
        .and_then(Node::as_str)
        .is_some_and(|k| k == "List" || k.ends_with("List"))
    {
        for item in doc.root.get("items").map(Node::items).unwrap_or_default() {
            visit(item);
        }
    } else {
        visit(&doc.root);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> SourceFile {
        SourceFile {
            name: "x.yaml".into(),
            text: text.into(),
        }
    }

    #[test]
    fn documents_keep_file_lines_and_helm_sources() {
        let f = file(
            "---\n# Source: chart/templates/a.yaml\nkind: Pod\nmetadata:\n  name: a\n---\nkind: Pod\nmetadata: {name: b}\n",
        );
        let (docs, errors) = parse_file(&f);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(docs.len(), 2);
        assert_eq!(
            docs[0].helm_source.as_deref(),
            Some("chart/templates/a.yaml")
        );
        assert_eq!(docs[0].root.get("kind").unwrap().line, 3);
        assert_eq!(docs[1].root.get("kind").unwrap().line, 7);
    }

    #[test]
    fn a_broken_document_does_not_hide_the_others() {
        let f = file(
            "kind: Pod\nmetadata: {name: a}\n---\nkind: [unclosed\n---\nkind: Pod\nmetadata: {name: c}\n",
        );
        let (docs, errors) = parse_file(&f);
        assert_eq!(docs.len(), 2);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].line, Some(5), "{errors:?}");
    }

    #[test]
    fn lists_expand_to_objects() {
        let f = file(
            "kind: List\nitems:\n- kind: Pod\n  metadata: {name: a, namespace: ml}\n- kind: Deployment\n  metadata: {name: b}\n",
        );
        let (docs, _) = parse_file(&f);
        let objs = objects("x.yaml", &docs[0]);
        assert_eq!(
            objs.iter().map(Object::display).collect::<Vec<_>>(),
            vec!["Pod ml/a", "Deployment b"]
        );
    }

    #[test]
    fn binary_and_oversized_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("x.yaml");
        std::fs::write(&bin, b"kind: Pod\0\x01").unwrap();
        assert!(
            read_source(&bin)
                .unwrap_err()
                .message
                .contains("binary data")
        );
        std::fs::write(&bin, [0xc3, 0x28]).unwrap();
        assert!(read_source(&bin).unwrap_err().message.contains("not UTF-8"));
    }
}
