//! A span-aware YAML tree: every node keeps the line and column where it starts, so lint
//! findings point at the offending field. Built in one pass from saphyr's event parser
//! (JSON is read the same way). Aliases are expanded under a size budget counted in bytes
//! of the expanded tree, so an alias bomb (many small nodes, or one huge scalar repeated) is
//! an error with a position, never an out-of-memory. Duplicate mapping keys are recorded and
//! the last value wins, as in kubectl.

use saphyr_parser::{Event, Parser, ScalarStyle};

/// Bytes a single document may expand to in memory (aliases included): about 20 bytes of
/// bookkeeping per node plus its text. Far above any real manifest, far below the memory
/// a repeated 1 MB anchored scalar would take.
pub const MAX_EXPANDED_BYTES: usize = 48 * 1024 * 1024;
/// What a node costs against [`MAX_EXPANDED_BYTES`] besides its text.
const NODE_COST: usize = size_of::<Node>();
/// Nesting depth a document may reach.
pub const MAX_DEPTH: usize = 256;

/// A YAML node with its position (1-based line and column).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub kind: NodeKind,
    pub line: usize,
    pub col: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A scalar's text; `plain` when unquoted (so `true`, `1`, `null` are typed).
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// The value of `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }

    /// The key node and value of `key` in a mapping (the key carries the field's position).
    pub fn entry(&self, key: &str) -> Option<(&Node, &Node)> {
        match &self.kind {
            NodeKind::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    /// Follows a path of mapping keys.
    pub fn path(&self, keys: &[&str]) -> Option<&Node> {
        keys.iter().try_fold(self, |node, k| node.get(k))
    }

    /// A scalar's text (`null`/`~` plain scalars are not text).
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Scalar { text, plain } if !(*plain && is_null(text)) => Some(text),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match &self.kind {
            NodeKind::Scalar { text, plain: true } => text.parse().ok(),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match &self.kind {
            NodeKind::Scalar { text, plain: true } => match text.as_str() {
                "true" | "True" | "TRUE" => Some(true),
                "false" | "False" | "FALSE" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(&self.kind, NodeKind::Scalar { text, plain: true } if is_null(text))
    }

    /// A sequence's items (empty for anything else).
    pub fn items(&self) -> &[Node] {
        match &self.kind {
            NodeKind::Seq(items) => items,
            _ => &[],
        }
    }

    /// A mapping's entries (empty for anything else).
    pub fn entries(&self) -> &[(Node, Node)] {
        match &self.kind {
            NodeKind::Map(entries) => entries,
            _ => &[],
        }
    }

    /// A mapping of strings (labels, nodeSelector), skipping non-string values.
    pub fn string_map(&self) -> Vec<(&str, &str)> {
        self.entries()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?, v.as_str().or_else(|| v.scalar_text())?)))
            .collect()
    }

    /// A scalar's raw text, typed or not.
    pub fn scalar_text(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The memory this node and its children take, as counted against the budget.
    fn cost(&self) -> usize {
        NODE_COST
            + match &self.kind {
                NodeKind::Scalar { text, .. } => text.len(),
                NodeKind::Seq(items) => items.iter().map(Node::cost).sum(),
                NodeKind::Map(entries) => entries.iter().map(|(k, v)| k.cost() + v.cost()).sum(),
            }
    }
}

fn is_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

/// A parse problem with its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {message}")]
pub struct YamlError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// A mapping key written twice: kubectl keeps the last value, so that is the one linted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    pub key: String,
    /// Where the overridden (earlier) key is.
    pub first_line: usize,
    /// Where the winning (later) key is.
    pub line: usize,
    pub col: usize,
}

/// Finds a key among a mapping's entries: a scan while the mapping is small, a hash index
/// once it is big, so a mapping of 100,000 keys is not quadratic.
#[derive(Default)]
struct KeyIndex(Option<std::collections::HashMap<String, usize>>);

impl KeyIndex {
    const SCAN_LIMIT: usize = 32;

    /// The position of `key` in `entries`, recording it as the next entry when absent.
    fn find(&mut self, entries: &[(Node, Node)], key: &Node) -> Option<usize> {
        let text = key.scalar_text()?;
        if self.0.is_none() && entries.len() >= Self::SCAN_LIMIT {
            self.0 = Some(
                entries
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (k, _))| Some((k.scalar_text()?.to_string(), i)))
                    .collect(),
            );
        }
        match &mut self.0 {
            Some(index) => match index.get(text) {
                Some(i) => Some(*i),
                None => {
                    index.insert(text.to_string(), entries.len());
                    None
                }
            },
            None => entries
                .iter()
                .position(|(k, _)| k.scalar_text() == Some(text)),
        }
    }
}

enum Frame {
    Seq(Node, usize),
    /// The mapping, its pending key, its anchor, and an index of its keys once it is big.
    Map(Node, Option<Node>, usize, KeyIndex),
}

/// Parses one YAML (or JSON) document. `line_offset` is added to every line, so a document
/// split out of a multi-document file reports file lines. Returns `None` for an empty
/// document.
pub fn parse_document(text: &str, line_offset: usize) -> Result<Option<Node>, YamlError> {
    parse_document_with_duplicates(text, line_offset, &mut Vec::new())
}

/// [`parse_document`], recording duplicate mapping keys in `duplicates`.
pub fn parse_document_with_duplicates(
    text: &str,
    line_offset: usize,
    duplicates: &mut Vec<DuplicateKey>,
) -> Result<Option<Node>, YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: std::collections::HashMap<usize, Node> = std::collections::HashMap::new();
    let mut root: Option<Node> = None;
    let mut budget = MAX_EXPANDED_BYTES;
    let err = |line: usize, col: usize, message: String| YamlError {
        line: line + line_offset,
        col: col + 1,
        message,
    };
    while let Some(event) = parser.next_event() {
        let (event, span) =
            event.map_err(|e| err(e.marker().line(), e.marker().col(), e.info().to_string()))?;
        let (line, col) = (span.start.line() + line_offset, span.start.col() + 1);
        let mut complete: Option<(Node, usize)> = match event {
            Event::Scalar(value, style, anchor, _) => Some((
                Node {
                    kind: NodeKind::Scalar {
                        text: value.into_owned(),
                        plain: style == ScalarStyle::Plain,
                    },
                    line,
                    col,
                },
                anchor,
            )),
            Event::SequenceStart(anchor, _) => {
                stack.push(Frame::Seq(
                    Node {
                        kind: NodeKind::Seq(Vec::new()),
                        line,
                        col,
                    },
                    anchor,
                ));
                None
            }
            Event::MappingStart(anchor, _) => {
                stack.push(Frame::Map(
                    Node {
                        kind: NodeKind::Map(Vec::new()),
                        line,
                        col,
                    },
                    None,
                    anchor,
                    KeyIndex::default(),
                ));
                None
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq(node, anchor)) => Some((node, anchor)),
                _ => {
                    return Err(err(
                        span.start.line(),
                        span.start.col(),
                        "unbalanced sequence".into(),
                    ));
                }
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map(node, _, anchor, _)) => Some((node, anchor)),
                _ => {
                    return Err(err(
                        span.start.line(),
                        span.start.col(),
                        "unbalanced mapping".into(),
                    ));
                }
            },
            Event::Alias(id) => {
                let target = anchors.get(&id).ok_or_else(|| {
                    err(
                        span.start.line(),
                        span.start.col(),
                        "alias to an unknown anchor".into(),
                    )
                })?;
                let size = target.cost();
                if size > budget {
                    return Err(err(
                        span.start.line(),
                        span.start.col(),
                        format!(
                            "aliases expand this document beyond {} MiB (a YAML alias bomb?)",
                            MAX_EXPANDED_BYTES >> 20
                        ),
                    ));
                }
                budget -= size;
                Some((target.clone(), 0))
            }
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd
            | Event::Nothing => None,
        };
        if let Some((node, anchor)) = complete.take() {
            let own = match &node.kind {
                NodeKind::Scalar { text, .. } => NODE_COST + text.len(),
                _ => NODE_COST,
            };
            budget = budget.checked_sub(own).ok_or_else(|| {
                err(
                    span.start.line(),
                    span.start.col(),
                    format!(
                        "document is larger than {} MiB in memory",
                        MAX_EXPANDED_BYTES >> 20
                    ),
                )
            })?;
            if stack.len() > MAX_DEPTH {
                return Err(err(
                    span.start.line(),
                    span.start.col(),
                    format!("nesting deeper than {MAX_DEPTH} levels"),
                ));
            }
            if anchor != 0 {
                anchors.insert(anchor, node.clone());
            }
            match stack.last_mut() {
                Some(Frame::Seq(
                    Node {
                        kind: NodeKind::Seq(items),
                        ..
                    },
                    _,
                )) => items.push(node),
                Some(Frame::Map(
                    Node {
                        kind: NodeKind::Map(entries),
                        ..
                    },
                    pending,
                    _,
                    index,
                )) => match pending.take() {
                    Some(key) => {
                        // kubectl (sigs.k8s.io/yaml) keeps the last of duplicate keys.
                        match index.find(entries, &key) {
                            Some(i) => {
                                duplicates.push(DuplicateKey {
                                    key: key.scalar_text().unwrap_or_default().to_string(),
                                    first_line: entries[i].0.line,
                                    line: key.line,
                                    col: key.col,
                                });
                                entries[i] = (key, node);
                            }
                            None => entries.push((key, node)),
                        }
                    }
                    None => *pending = Some(node),
                },
                Some(_) => unreachable!("frames hold their own kind"),
                None => {
                    if root.is_some() {
                        return Err(err(
                            span.start.line(),
                            span.start.col(),
                            "more than one document where one was expected".into(),
                        ));
                    }
                    root = Some(node);
                }
            }
        }
    }
    Ok(root)
}

/// Fields that Kubernetes types as integers; every other scalar is read as a string (or a
/// boolean/null), so `values: [80]` still deserialises into `Vec<String>`.
const INTEGER_FIELDS: &[&str] = &[
    "weight",
    "tolerationSeconds",
    "maxSkew",
    "minDomains",
    "replicas",
];

impl Node {
    /// This node as JSON for deserialising Kubernetes types.
    pub fn to_json(&self) -> serde_json::Value {
        self.to_json_in(None)
    }

    fn to_json_in(&self, key: Option<&str>) -> serde_json::Value {
        use serde_json::Value;
        match &self.kind {
            NodeKind::Scalar { text, plain } => {
                if *plain && is_null(text) {
                    Value::Null
                } else if let (true, Some(k)) = (*plain, key)
                    && INTEGER_FIELDS.contains(&k)
                    && let Ok(n) = text.parse::<i64>()
                {
                    Value::from(n)
                } else if *plain && let Some(b) = self.as_bool() {
                    Value::Bool(b)
                } else {
                    Value::String(text.clone())
                }
            }
            NodeKind::Seq(items) => Value::Array(items.iter().map(|i| i.to_json_in(key)).collect()),
            NodeKind::Map(entries) => Value::Object(
                entries
                    .iter()
                    .filter_map(|(k, v)| {
                        let k = k.scalar_text()?;
                        Some((k.to_string(), v.to_json_in(Some(k))))
                    })
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_types() {
        let doc = parse_document("a: 1\nb:\n  - x\n  - 'true'\nc: true\nd: ~\n", 10)
            .unwrap()
            .unwrap();
        let (key, value) = doc.entry("b").unwrap();
        assert_eq!((key.line, key.col), (12, 1));
        assert_eq!(value.items()[0].as_str(), Some("x"));
        assert_eq!((value.items()[1].line, value.items()[1].col), (14, 5));
        assert_eq!(value.items()[1].as_bool(), None, "quoted");
        assert_eq!(doc.get("a").unwrap().as_i64(), Some(1));
        assert_eq!(doc.get("c").unwrap().as_bool(), Some(true));
        assert!(doc.get("d").unwrap().is_null());
    }

    #[test]
    fn json_is_read_too() {
        let doc = parse_document("{\"kind\": \"Pod\", \"spec\": {\"x\": [1, 2]}}", 0)
            .unwrap()
            .unwrap();
        assert_eq!(doc.get("kind").unwrap().as_str(), Some("Pod"));
        assert_eq!(doc.path(&["spec", "x"]).unwrap().items().len(), 2);
    }

    #[test]
    fn errors_have_positions() {
        let e = parse_document("a: b\n  c: d: e\n", 0).unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (prev, name) in ["a", "b", "c", "d", "e", "f", "g", "h"]
            .iter()
            .zip(["b", "c", "d", "e", "f", "g", "h", "i"])
        {
            bomb.push_str(&format!("{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        let e = parse_document(&bomb, 0).unwrap_err();
        assert!(e.message.contains("alias bomb"), "{e}");
        let ok = parse_document("a: &x {k: v}\nb: *x\n", 0).unwrap().unwrap();
        assert_eq!(ok.path(&["b", "k"]).unwrap().as_str(), Some("v"));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,80}") {
            let _ = parse_document(&s, 0);
        }

        #[test]
        fn never_panics_on_yaml_punctuation(s in "[a-c:\\-\\[\\]{}&*!|>'\" \n,#0-9]{0,80}") {
            let _ = parse_document(&s, 0);
        }
    }
}
