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
    /// Where the node's text ends (exclusive; line and 1-based column like `line`/`col`):
    /// after a scalar's closing quote, a flow collection's bracket, or a block
    /// collection's last value. Fixes edit the text between the two.
    pub end_line: usize,
    pub end_col: usize,
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

    /// An integer as kubectl reads it: YAML 1.1 (`0x10`, `1_000`, octal `010`), or a float
    /// with no fraction (`50.0`, sent as 50).
    pub fn as_i64(&self) -> Option<i64> {
        match self.kubectl_type()? {
            Typed::Int(n) => Some(n),
            Typed::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18 => {
                Some(f as i64)
            }
            _ => None,
        }
    }

    /// What kubectl's YAML reader (go-yaml v2, YAML 1.1) makes of a scalar: a quoted one
    /// is a string; a plain one may be null, a boolean (`yes`, `on`, `true`...) or a number
    /// (`80`, `1.0`, `0x1`) — sent as such, and refused where the API wants a string.
    pub fn kubectl_type(&self) -> Option<Typed> {
        match &self.kind {
            NodeKind::Scalar { text, plain: true } => Some(yaml11_type(text)),
            NodeKind::Scalar { .. } => Some(Typed::Str),
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

/// A scalar's type as kubectl reads it (see [`Node::kubectl_type`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Typed {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str,
}

/// How go-yaml v2 resolves a plain scalar: its YAML 1.1 booleans and nulls, then — for
/// text starting with a digit, a sign or a dot — Go's base-prefixed integers (underscores
/// dropped) and floats.
fn yaml11_type(text: &str) -> Typed {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Typed::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Typed::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Typed::Bool(false);
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Typed::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Typed::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Typed::Float(f64::NAN),
        _ => {}
    }
    if !text.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '+' | '.')) {
        return Typed::Str;
    }
    let plain = text.replace('_', "");
    if let Some(n) = go_int(&plain) {
        return Typed::Int(n);
    }
    // Go's ParseFloat refuses what overflows (`1e400`): go-yaml keeps it a string.
    if is_yaml_float(&plain)
        && let Ok(f) = plain.parse::<f64>()
        && f.is_finite()
    {
        return Typed::Float(f);
    }
    Typed::Str
}

/// `strconv.ParseInt(s, 0, 64)`: an optional sign, then `0x`, `0o`, `0b` or a leading `0`
/// (octal) prefix, or decimal.
fn go_int(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(b) = lower.strip_prefix("0x") {
        (16, b)
    } else if let Some(b) = lower.strip_prefix("0o") {
        (8, b)
    } else if let Some(b) = lower.strip_prefix("0b") {
        (2, b)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let n = i64::from_str_radix(body, radix).ok()?;
    Some(if negative { -n } else { n })
}

/// go-yaml v2's float pattern: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
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
    /// The sequence, its anchor, and whether it is a flow sequence.
    Seq(Node, usize, bool),
    /// The mapping, its pending key, its anchor, an index of its keys once it is big, and
    /// whether it is a flow mapping.
    Map(Node, Option<Node>, usize, KeyIndex, bool),
}

/// Reads the source text forward only (events come in text order), keeping the line and
/// column, so looking at collections' first characters and finding quoted scalars' ends
/// stays linear.
struct Cursor<'t> {
    chars: std::iter::Peekable<std::str::Chars<'t>>,
    index: usize,
    /// 1-based line, 0-based column (saphyr's markers).
    line: usize,
    col: usize,
}

impl<'t> Cursor<'t> {
    fn new(text: &'t str) -> Self {
        Cursor {
            chars: text.chars().peekable(),
            index: 0,
            line: 1,
            col: 0,
        }
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        self.index += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 0;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn char_at(&mut self, index: usize) -> Option<char> {
        while self.index < index && self.bump().is_some() {}
        (self.index == index)
            .then(|| self.chars.peek().copied())
            .flatten()
    }

    /// Where a quoted scalar starting at `index` ends (after its closing quote): its
    /// event's span runs on over trailing blanks and comments.
    fn quoted_end(&mut self, index: usize) -> Option<(usize, usize)> {
        let quote = self.char_at(index)?;
        self.bump();
        loop {
            let c = self.bump()?;
            match (quote, c) {
                ('"', '\\') => {
                    self.bump();
                }
                ('\'', '\'') if self.chars.peek() == Some(&'\'') => {
                    self.bump();
                }
                (q, c) if q == c => return Some((self.line, self.col)),
                _ => {}
            }
        }
    }
}

/// A collection completed by its end event: a flow collection ends after its closing
/// bracket (the event's token); a block one after its last value.
fn ended(mut node: Node, flow: bool, span: &saphyr_parser::Span, line_offset: usize) -> Node {
    let last_end = match &node.kind {
        NodeKind::Seq(items) => items.last().map(|n| (n.end_line, n.end_col)),
        NodeKind::Map(entries) => entries.last().map(|(_, v)| (v.end_line, v.end_col)),
        NodeKind::Scalar { .. } => None,
    };
    // The end event's token starts at the closing bracket (its span may run on over
    // trailing blanks and comments).
    (node.end_line, node.end_col) = if flow {
        (span.start.line() + line_offset, span.start.col() + 2)
    } else {
        last_end.unwrap_or((node.line, node.col))
    };
    node
}

/// Merges `<<: *base` (or a list of mappings) into the mapping as kubectl's YAML reader
/// (go-yaml v2) does: entries are applied in order, a merge writing every key of its
/// mappings (the first of a list winning), so keys after it override what it brought.
fn resolve_merge_keys(mut node: Node) -> Result<Node, YamlError> {
    let NodeKind::Map(entries) = &mut node.kind else {
        return Ok(node);
    };
    if !entries.iter().any(|(k, _)| is_merge_key(k)) {
        return Ok(node);
    }
    // Keys compare as the strings kubectl makes of them (`gpu` and `"gpu"` are one key),
    // looked up through an index so a huge mapping is not compared pairwise.
    let mut out: Vec<(Node, Node)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut set = |key: Node, value: Node| {
        let name = key.scalar_text().unwrap_or_default().to_string();
        match index.get(&name) {
            Some(&i) => out[i] = (key, value),
            None => {
                index.insert(name, out.len());
                out.push((key, value));
            }
        }
    };
    for (key, value) in std::mem::take(entries) {
        if !is_merge_key(&key) {
            set(key, value);
            continue;
        }
        let refused = || YamlError {
            line: value.line,
            col: value.col,
            message:
                "a merge key (<<) takes a mapping or a list of mappings, which kubectl requires"
                    .into(),
        };
        let sources: Vec<Node> = match value.kind {
            NodeKind::Map(_) => vec![value],
            // Earlier mappings of the list take precedence: apply them last.
            NodeKind::Seq(ref items)
                if items.iter().all(|i| matches!(i.kind, NodeKind::Map(_))) =>
            {
                let NodeKind::Seq(items) = value.kind else {
                    unreachable!("matched as a list")
                };
                items.into_iter().rev().collect()
            }
            _ => return Err(refused()),
        };
        for source in sources {
            if let NodeKind::Map(merged) = source.kind {
                for (k, v) in merged {
                    set(k, v);
                }
            }
        }
    }
    *entries = out;
    Ok(node)
}

/// `<<`, unquoted: YAML's merge key.
fn is_merge_key(key: &Node) -> bool {
    matches!(&key.kind, NodeKind::Scalar { text, plain: true } if text == "<<")
}

/// Parses one YAML (or JSON) document. `line_offset` is added to every line, so a document
/// split out of a multi-document file reports file lines. Returns `None` for an empty
/// document.
pub fn parse_document(text: &str, line_offset: usize) -> Result<Option<Node>, YamlError> {
    parse_document_with_duplicates(text, line_offset, &mut Vec::new())
}

/// [`parse_document`], recording duplicate mapping keys in `duplicates`.
///
/// Long on purpose: one loop over the parser's events with one stack, where every event
/// kind (scalar, sequence, mapping, alias, their ends) is a branch; split, the stack would
/// be passed through each.
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
    let mut cursor = Cursor::new(text);
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
            Event::Scalar(value, style, anchor, tag) => {
                // `!!str 80` is a string however it is written.
                let string_tag = tag.as_ref().is_some_and(|t| t.suffix == "str");
                let (end_line, end_col) = match style {
                    ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => cursor
                        .quoted_end(span.start.index())
                        .unwrap_or((span.end.line(), span.end.col())),
                    _ => (span.end.line(), span.end.col()),
                };
                Some((
                    Node {
                        kind: NodeKind::Scalar {
                            text: value.into_owned(),
                            plain: style == ScalarStyle::Plain && !string_tag,
                        },
                        line,
                        col,
                        end_line: end_line + line_offset,
                        end_col: end_col + 1,
                    },
                    anchor,
                ))
            }
            Event::SequenceStart(anchor, _) => {
                stack.push(Frame::Seq(
                    Node {
                        kind: NodeKind::Seq(Vec::new()),
                        line,
                        col,
                        end_line: line,
                        end_col: col,
                    },
                    anchor,
                    cursor.char_at(span.start.index()) == Some('['),
                ));
                None
            }
            Event::MappingStart(anchor, _) => {
                stack.push(Frame::Map(
                    Node {
                        kind: NodeKind::Map(Vec::new()),
                        line,
                        col,
                        end_line: line,
                        end_col: col,
                    },
                    None,
                    anchor,
                    KeyIndex::default(),
                    cursor.char_at(span.start.index()) == Some('{'),
                ));
                None
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq(node, anchor, flow)) => {
                    Some((ended(node, flow, &span, line_offset), anchor))
                }
                _ => {
                    return Err(err(
                        span.start.line(),
                        span.start.col(),
                        "unbalanced sequence".into(),
                    ));
                }
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map(node, _, anchor, _, flow)) => Some((
                    resolve_merge_keys(ended(node, flow, &span, line_offset))?,
                    anchor,
                )),
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
                    _,
                )) => match pending.take() {
                    // sigs.k8s.io/yaml turns keys into JSON strings: a mapping or list as a
                    // key (an unfilled `{{TOKEN}}` placeholder) is refused by kubectl.
                    Some(key) if !matches!(key.kind, NodeKind::Scalar { .. }) => {
                        return Err(YamlError {
                            line: key.line,
                            col: key.col,
                            message: "a mapping or list used as a key, which kubectl refuses (an unfilled `{{...}}` placeholder?)".into(),
                        });
                    }
                    // Merge keys are applied one after the other, not duplicates.
                    Some(key) if is_merge_key(&key) => entries.push((key, node)),
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
                    && let Some(n) = self.as_i64()
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
    fn plain_scalars_are_typed_as_kubectl_reads_them() {
        use Typed::*;
        for (text, typed) in [
            ("yes", Bool(true)),
            ("On", Bool(true)),
            ("n", Bool(false)),
            ("~", Null),
            ("80", Int(80)),
            ("0x10", Int(16)),
            ("010", Int(8)),
            ("1_000", Int(1000)),
            ("-0b11", Int(-3)),
            ("50.0", Float(50.0)),
            ("1e3", Float(1000.0)),
            ("08", Float(8.0)),
            ("80gb", Str),
            ("a100", Str),
            ("1.2.3", Str),
            ("v1", Str),
            ("-", Str),
            ("1e400", Str),
        ] {
            assert_eq!(yaml11_type(text), typed, "{text}");
        }
        let doc = parse_document("a: !!str 80\nb: 80\n", 0).unwrap().unwrap();
        assert_eq!(doc.get("a").unwrap().kubectl_type(), Some(Str));
        assert_eq!(doc.get("b").unwrap().kubectl_type(), Some(Int(80)));
    }

    #[test]
    fn merge_keys_are_resolved_as_kubectl_does() {
        let doc = parse_document(
            "base: &b {cpu: '1', gpu: 1}\nx:\n  <<: *b\n  gpu: 2\ny: {a: 0, <<: [{a: 1, c: 1}, {a: 2, c: 2, d: 2}]}\n",
            0,
        )
        .unwrap()
        .unwrap()
        .to_json();
        assert_eq!(doc["x"], serde_json::json!({"cpu": "1", "gpu": "2"}));
        assert_eq!(doc["y"], serde_json::json!({"a": "1", "c": "1", "d": "2"}));
        // Two merges in one mapping apply in turn; a quoted key overrides the merged one.
        let mut duplicates = Vec::new();
        let doc = parse_document_with_duplicates(
            "a: &a {x: 1, y: 1}\nb: &b {y: 2}\nc:\n  <<: *a\n  <<: *b\n  \"x\": 3\n",
            0,
            &mut duplicates,
        )
        .unwrap()
        .unwrap()
        .to_json();
        assert_eq!(doc["c"], serde_json::json!({"x": "3", "y": "2"}));
        assert!(duplicates.is_empty(), "{duplicates:?}");
        assert!(parse_document("a:\n  <<: foo\n", 0).is_err());
    }

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
    fn nodes_know_where_their_text_ends() {
        let text = "a:\n  - x\n  - 'y z'\nb: [1, {c: d}]\ne: {f: g}  # c\nq: \"a \\\" #b\"  # c\nr: 'it''s'  \n";
        let doc = parse_document(text, 0).unwrap().unwrap();
        let end = |n: &Node| (n.end_line, n.end_col);
        let a = doc.get("a").unwrap();
        assert_eq!(
            end(a),
            (3, 10),
            "a block list ends after its last item's quote"
        );
        assert_eq!(end(&a.items()[1]), (3, 10));
        assert_eq!((a.items()[1].line, a.items()[1].col), (3, 5));
        assert_eq!(
            end(doc.get("b").unwrap()),
            (4, 15),
            "a flow list after its bracket"
        );
        assert_eq!(end(doc.get("e").unwrap()), (5, 10));
        let q = doc.get("q").unwrap();
        assert_eq!(
            (q.col, end(q)),
            (4, (6, 13)),
            "after the closing quote, escapes skipped"
        );
        assert_eq!(end(doc.get("r").unwrap()), (7, 11));
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
