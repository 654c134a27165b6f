//! Machine-applicable fixes: minimal text edits on the original bytes, checked before use
//! (this module), and applying them to files, round after round ([`files`]).
//!
//! A rule proposes a [`TextFix`]: edits by line and column in its document, the node the
//! fix changes, and what that node must read as afterwards. [`verify`] applies the edits to
//! the document's text, parses the result and keeps the fix only if the whole document now
//! reads exactly as the original with that one node replaced — so comments, key order,
//! quoting, indentation and every other document stay byte for byte, and an edit that
//! would mean something else is never written.

/// `--fix` and `--diff`: the rounds that apply these fixes to files.
pub mod files;

use serde_json::Value;

use super::source::Document;
use super::yaml::{Node, NodeKind, parse_document, parse_document_with_duplicates};

/// One edit: replace the text from `from` to `to` (1-based line and column, `to`
/// exclusive; equal for an insertion) with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    pub from: (usize, usize),
    pub to: (usize, usize),
    pub text: String,
}

impl TextEdit {
    /// Replaces a node's text.
    pub fn replace(node: &Node, text: impl Into<String>) -> Self {
        TextEdit {
            from: (node.line, node.col),
            to: (node.end_line, node.end_col),
            text: text.into(),
        }
    }

    pub fn insert(at: (usize, usize), text: impl Into<String>) -> Self {
        TextEdit {
            from: at,
            to: at,
            text: text.into(),
        }
    }

    /// Removes whole lines `first..=last` (their line breaks included).
    pub fn delete_lines(first: usize, last: usize) -> Self {
        TextEdit {
            from: (first, 1),
            to: (last + 1, 1),
            text: String::new(),
        }
    }
}

/// A fix as a rule proposes it.
#[derive(Debug, Clone)]
pub struct TextFix {
    /// Safe: the meaning is unchanged. Unsafe: what the scheduler does changes (needs
    /// `--unsafe-fixes`).
    pub safe: bool,
    /// What it does, e.g. "merge the 3 terms into one".
    pub title: String,
    pub edits: Vec<TextEdit>,
    /// The node the fix changes (compared by address, never dereferenced) ...
    pub target: *const Node,
    /// ... and what it must read as afterwards.
    pub expected: Value,
}

/// A verified fix in file coordinates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFix {
    pub safe: bool,
    pub title: String,
    /// Byte ranges of the file and their replacements, in order.
    pub edits: Vec<(usize, usize, String)>,
}

/// The JSON a scalar written as `text` under `key` reads as (`weight: 50` is a number,
/// `values: ["1"]` a string): how a replaced scalar is expected to read.
pub fn scalar_json(key: &str, text: &str) -> Option<Value> {
    let doc = parse_document(&format!("{key}: {text}\n"), 0).ok()??;
    Some(doc.to_json().get(key)?.clone())
}

/// The text of a node as written.
pub fn source<'d>(doc: &'d Document, node: &Node) -> Option<&'d str> {
    let start = doc.byte_at(node.line, node.col)?;
    let end = doc.byte_at(node.end_line, node.end_col)?;
    doc.text.get(start..end)
}

/// Whether a collection node is written in flow style (`[...]`, `{...}`). A block list
/// starts where its first item does, so a block list of `- {key: ...}` items starts at a
/// `{`: only a list's `[` and a mapping's `{` count.
pub fn is_flow(doc: &Document, node: &Node) -> bool {
    let opening = match node.kind {
        NodeKind::Seq(_) => '[',
        NodeKind::Map(_) => '{',
        NodeKind::Scalar { .. } => return false,
    };
    doc.line(node.line)
        .and_then(|l| l.chars().nth(node.col.saturating_sub(1)))
        .is_some_and(|c| c == opening)
}

/// Whether a list item has its lines to itself — only its `- ` before it, only blanks or
/// a comment after `end` — so deleting those lines removes exactly the item.
pub fn alone_on_lines(doc: &Document, item: &Node, end: &Node) -> bool {
    let (Some(first), Some(last)) = (doc.line(item.line), doc.line(end.end_line)) else {
        return false;
    };
    let before: String = first.chars().take(item.col.saturating_sub(1)).collect();
    let after: String = last.chars().skip(end.end_col.saturating_sub(1)).collect();
    let after = after.trim();
    before.trim() == "-" && (after.is_empty() || after.starts_with('#'))
}

/// Leading spaces of a line.
pub fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// One step of a path from the document's root.
enum Step {
    Key(String),
    Index(usize),
}

/// The path from `node` to `target` (by address).
fn path_to(node: &Node, target: *const Node, path: &mut Vec<Step>) -> bool {
    if std::ptr::eq(node, target) {
        return true;
    }
    match &node.kind {
        NodeKind::Seq(items) => items.iter().enumerate().any(|(i, item)| {
            path.push(Step::Index(i));
            path_to(item, target, path) || {
                path.pop();
                false
            }
        }),
        NodeKind::Map(entries) => entries.iter().any(|(k, v)| {
            path.push(Step::Key(k.scalar_text().unwrap_or_default().to_string()));
            path_to(v, target, path) || {
                path.pop();
                false
            }
        }),
        NodeKind::Scalar { .. } => false,
    }
}

fn replace_at(json: &mut Value, path: &[Step], value: Value) -> bool {
    let Some((first, rest)) = path.split_first() else {
        *json = value;
        return true;
    };
    let child = match first {
        Step::Key(k) => json.get_mut(k),
        Step::Index(i) => json.get_mut(*i),
    };
    child.is_some_and(|c| replace_at(c, rest, value))
}

/// The fix as byte edits of the document's text, if the edited text reads exactly as
/// intended; `None` when the edits do not apply cleanly or would mean anything else.
pub fn verify(doc: &Document, fix: &TextFix) -> Option<Vec<(usize, usize, String)>> {
    let mut edits: Vec<(usize, usize, String)> = fix
        .edits
        .iter()
        .map(|e| {
            Some((
                doc.byte_at(e.from.0, e.from.1)?,
                doc.byte_at(e.to.0, e.to.1)?,
                e.text.clone(),
            ))
        })
        .collect::<Option<_>>()?;
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    if edits.windows(2).any(|w| w[0].1 > w[1].0) || edits.iter().any(|(s, e, _)| s > e) {
        return None;
    }
    let edited = apply(&doc.text, &edits);
    // A key written twice reads as its last value: an edit must not add one that the
    // comparison below would miss.
    let mut duplicates = Vec::new();
    let after = parse_document_with_duplicates(&edited, 0, &mut duplicates)
        .ok()??
        .to_json();
    if duplicates.len() > doc.duplicates.len() {
        return None;
    }
    // JSON stays JSON: kubectl reads a document that starts with `{` as JSON.
    if serde_json::from_str::<Value>(&doc.text).is_ok()
        && serde_json::from_str::<Value>(&edited).is_err()
    {
        return None;
    }
    let mut expected = doc.root.to_json();
    let mut path = Vec::new();
    if !path_to(&doc.root, fix.target, &mut path)
        || !replace_at(&mut expected, &path, fix.expected.clone())
    {
        return None;
    }
    (after == expected).then_some(edits)
}

/// Applies sorted, non-overlapping byte edits to a text.
pub fn apply(text: &str, edits: &[(usize, usize, String)]) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for (start, end, replacement) in edits {
        out.push_str(&text[at..*start]);
        out.push_str(replacement);
        at = *end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Chunk, parse_chunk};

    fn doc(text: &str) -> Document {
        parse_chunk(
            "x.yaml",
            Chunk {
                text: text.into(),
                first_line: 0,
                byte_offset: 0,
            },
        )
        .unwrap()
        .unwrap()
    }

    #[test]
    fn a_fix_is_kept_only_if_the_text_reads_as_intended() {
        let d = doc("a: 1 # keep\nw: 0\nz: [x]\n");
        let w = d.root.get("w").unwrap();
        let good = TextFix {
            safe: true,
            title: "clamp".into(),
            edits: vec![TextEdit::replace(w, "1")],
            target: w,
            expected: scalar_json("w", "1").unwrap(),
        };
        let edits = verify(&d, &good).unwrap();
        assert_eq!(apply(&d.text, &edits), "a: 1 # keep\nw: 1\nz: [x]\n");
        let wrong = TextFix {
            expected: Value::from("2"),
            ..good.clone()
        };
        assert!(verify(&d, &wrong).is_none(), "reads as 1, not 2");
        let spills = TextFix {
            edits: vec![TextEdit::replace(w, "1\nz: [y]")],
            ..good
        };
        assert!(verify(&d, &spills).is_none(), "changes another key");
        assert_eq!(source(&d, d.root.get("z").unwrap()), Some("[x]"));
    }
}
