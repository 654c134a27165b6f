//! kubectl's YAML reader (libyaml's rules, via go-yaml) accepts two things strict YAML 1.2
//! parsers refuse, and both appear in real manifests: a flow collection closed (or
//! continued) left of its key's indentation —
//!
//! ```yaml
//!   args: ["--a",
//!     "--b"
//! ]
//! ```
//!
//! — and a multi-line quoted scalar whose continuation lines are not indented. In both,
//! leading whitespace of a continuation line carries no meaning (flow collections ignore
//! it, quoted scalars fold it away), so indenting such lines changes no value. When the
//! strict parse fails, [`relax_indentation`] does exactly that and the document is parsed
//! again; line numbers stay the same.

/// The text with continuation lines of flow collections and quoted scalars indented past
/// the line that opened them, or `None` when no line needed it.
pub fn relax_indentation(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 64);
    let mut changed = false;
    let mut state = Scan::default();
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let body = line.trim_start_matches(' ');
        // A key after sequence dashes (`- args: [`) is as indented as its column.
        let key_indent = indent + (body.len() - strip_dashes(body).len());
        if let Some(parent) = state.block_parent {
            if body.trim().is_empty() || indent > parent {
                out.push_str(line);
                continue;
            }
            state.block_parent = None;
        }
        match state.open_indent {
            Some(opened) if state.continues() && indent <= opened && !body.trim().is_empty() => {
                out.push_str(&" ".repeat(opened + 1));
                out.push_str(body);
                changed = true;
            }
            _ => out.push_str(line),
        }
        state.scan_line(body, key_indent);
    }
    changed.then_some(out)
}

/// Where the scan is between lines.
#[derive(Debug, Default)]
struct Scan {
    flow_depth: usize,
    quote: Option<char>,
    /// Indentation of the line that opened the current flow collection or quoted scalar.
    open_indent: Option<usize>,
    /// Inside a block scalar (`|`, `>`) whose key line has this indentation.
    block_parent: Option<usize>,
}

impl Scan {
    fn continues(&self) -> bool {
        self.flow_depth > 0 || self.quote.is_some()
    }

    fn scan_line(&mut self, body: &str, indent: usize) {
        // The last non-blank character before this one, and whether a blank came after it.
        let mut previous: Option<char> = None;
        let mut after_blank = false;
        let mut chars = body.trim_end_matches(['\n', '\r']).chars().peekable();
        while let Some(c) = chars.next() {
            match self.quote {
                Some('"') => match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => self.quote = None,
                    _ => {}
                },
                Some(_) => {
                    if c == '\'' {
                        if chars.peek() == Some(&'\'') {
                            chars.next();
                        } else {
                            self.quote = None;
                        }
                    }
                }
                None => {
                    let starts_value = previous.is_none_or(|p| ":-[{,?".contains(p));
                    match c {
                        '#' if previous.is_none() || after_blank => break,
                        '"' | '\'' if starts_value => {
                            self.quote = Some(c);
                            self.open_if_outermost(indent);
                        }
                        '[' | '{' if starts_value || self.flow_depth > 0 => {
                            self.open_if_outermost(indent);
                            self.flow_depth += 1;
                        }
                        ']' | '}' if self.flow_depth > 0 => self.flow_depth -= 1,
                        _ => {}
                    }
                }
            }
            after_blank = c.is_whitespace();
            if !after_blank {
                previous = Some(c);
            }
        }
        if !self.continues() {
            self.open_indent = None;
            if opens_block_scalar(body) {
                self.block_parent = Some(indent);
            }
        }
    }

    fn open_if_outermost(&mut self, indent: usize) {
        if self.flow_depth == 0 {
            self.open_indent.get_or_insert(indent);
        }
    }
}

/// `body` without its leading sequence dashes (`- - x` -> `x`).
fn strip_dashes(body: &str) -> &str {
    let mut rest = body;
    while let Some(after) = rest.strip_prefix("- ") {
        rest = after.trim_start_matches(' ');
    }
    rest
}

/// Whether the line ends with a block scalar header (`key: |`, `- >-`, `key: &a |2 # c`,
/// `key: !!binary |`): the lines after it are text, not YAML to scan.
fn opens_block_scalar(body: &str) -> bool {
    let code = match body.find(" #") {
        Some(i) => &body[..i],
        None => body,
    };
    let mut tokens = code.split_whitespace().rev();
    let Some(last) = tokens.next() else {
        return false;
    };
    let is_header = |t: &str| {
        let mut chars = t.chars();
        matches!(chars.next(), Some('|' | '>'))
            && chars.all(|c| c.is_ascii_digit() || c == '-' || c == '+')
    };
    if !is_header(last) {
        return false;
    }
    // What precedes it: anchors and tags, then a key (`x:`), a dash, or nothing.
    tokens
        .find(|t| !t.starts_with('&') && !t.starts_with('!'))
        .is_none_or(|t| t.ends_with(':') || t == "-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_document;

    fn reparsed(text: &str) -> serde_json::Value {
        assert!(
            parse_document(text, 0).is_err(),
            "strict parse should fail: {text}"
        );
        let relaxed = relax_indentation(text).expect("relaxed");
        parse_document(&relaxed, 0)
            .unwrap_or_else(|e| panic!("{e}: {relaxed}"))
            .unwrap()
            .to_json()
    }

    #[test]
    fn flow_collections_closed_left_of_their_key() {
        let v = reparsed("spec:\n  args: [\"a\",\n    \"b\"\n]\n  x: 1\n");
        assert_eq!(v["spec"]["args"], serde_json::json!(["a", "b"]));
        assert_eq!(v["spec"]["x"], "1");
        let v = reparsed("a:\n  b: {x: 1,\n  y: 2\n}\n");
        assert_eq!(v["a"]["b"]["y"], "2");
    }

    #[test]
    fn quoted_scalars_continued_at_any_indentation() {
        let v = reparsed("spec:\n  command: \"foo\n  bar\"\n  x: 'it''s\nfine'\n");
        assert_eq!(v["spec"]["command"], "foo bar");
        assert_eq!(v["spec"]["x"], "it's fine");
    }

    #[test]
    fn keys_after_dashes_and_block_headers_with_comments_anchors_and_tags() {
        let v = reparsed("- args: [\"a\",\n  \"b\"]\n  x: 1\n");
        assert_eq!(v[0]["args"], serde_json::json!(["a", "b"]));
        let text = "a: [1,\n2]\nb: | # JSON\n  {\n  \"k\": 1\n  }\nc: &x !!str >-\n  [text\n";
        let v = reparsed(text);
        assert_eq!(v["b"], "{\n\"k\": 1\n}\n", "block text unchanged");
        assert_eq!(v["c"], "[text");
        assert!(opens_block_scalar("- |"));
        assert!(opens_block_scalar("key: |2-"));
        assert!(!opens_block_scalar("key: a|"));
        assert!(!opens_block_scalar("key: \"|\""));
    }

    #[test]
    fn block_scalars_comments_and_plain_text_are_left_alone() {
        let text = "a: |\n  [not flow\n  \"not quoted\nb: don't [x] # it's a comment [\nc: 1\n";
        assert!(parse_document(text, 0).is_ok());
        assert_eq!(relax_indentation(text), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_keeps_the_line_count(s in "[a-c:\\-\\[\\]{}|>#'\" \n,]{0,80}") {
            if let Some(relaxed) = relax_indentation(&s) {
                proptest::prop_assert_eq!(relaxed.lines().count(), s.lines().count());
            }
        }
    }
}
