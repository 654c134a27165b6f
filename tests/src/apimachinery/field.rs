//! Rendering of `field.Error` (`pkg/util/validation/field`) and of an aggregate of them
//! (`pkg/util/errors`), as far as the selector parser needs: `Invalid` errors only.

use std::fmt;

/// Where an error points. The selector parser has no root path (Go's nil `*field.Path`,
/// printed `<nil>`); `NewRequirement` builds `key`, `values`, `values[0]`, `values[0][k]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Path {
    Nil,
    Field(String),
}

impl Path {
    pub fn child(name: &str) -> Self {
        Path::Field(name.to_string())
    }

    /// `path[index]` (Go's `Path.Index`).
    pub fn index(&self, index: usize) -> Self {
        self.subscript(&index.to_string())
    }

    /// `path[key]` (Go's `Path.Key`; the key is printed as is, unquoted).
    pub fn key(&self, key: &str) -> Self {
        self.subscript(key)
    }

    fn subscript(&self, sub: &str) -> Self {
        match self {
            // Subscripting the nil path gives a root that is only a subscript.
            Path::Nil => Path::Field(format!("[{sub}]")),
            Path::Field(p) => Path::Field(format!("{p}[{sub}]")),
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Nil => f.write_str("<nil>"),
            Path::Field(p) => f.write_str(p),
        }
    }
}

/// The bad value of an error: a string is printed with `%q`, a list of strings as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    Str(String),
    List(Vec<String>),
}

/// A `field.Invalid` error: `<path>: Invalid value: <value>: <detail>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidError {
    pub path: Path,
    pub value: BadValue,
    pub detail: String,
}

impl InvalidError {
    pub fn new(path: Path, value: BadValue, detail: impl Into<String>) -> Self {
        InvalidError {
            path,
            value,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for InvalidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = match &self.value {
            BadValue::Str(s) => go_quote(s),
            BadValue::List(list) => go_json(list),
        };
        write!(f, "{}: Invalid value: {value}", self.path)?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Go's `json.Marshal`: like serde_json (object keys sorted, as Go sorts map keys), plus
/// Go's HTML-safe escapes of `<`, `>`, `&` and the line and paragraph separators.
pub fn go_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value)
        .expect("values serialise")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// `field.ErrorList.ToAggregate().Error()`: duplicates (by message) dropped, one error as
/// itself, several as `[a, b]`. `None` for an empty list.
pub fn aggregate(errors: &[InvalidError]) -> Option<String> {
    let mut messages: Vec<String> = Vec::new();
    for e in errors {
        let m = e.to_string();
        if !messages.contains(&m) {
            messages.push(m);
        }
    }
    match messages.len() {
        0 => None,
        1 => messages.pop(),
        _ => Some(format!("[{}]", messages.join(", "))),
    }
}

/// Go's `strconv.Quote` (what `%q` prints for a string): `"` and `\` escaped, printable
/// characters as they are, `\a \b \f \n \r \t \v`, other ASCII controls as `\xNN`, other
/// non-printable characters as `\uNNNN` / `\UNNNNNNNN`.
///
/// Go decides "printable" with the Unicode tables (`unicode.IsPrint`); this port knows the
/// control, space, format and private-use ranges but not every unassigned code point, which
/// Go would also escape.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if go_is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint` (letters, marks, numbers, punctuation,
/// symbols and the ASCII space).
fn go_is_print(c: char) -> bool {
    let u = c as u32;
    if u <= 0xff {
        // Latin-1 exactly as Go's table: 0x20-0x7e, 0xa1-0xff except the soft hyphen.
        return (0x20..=0x7e).contains(&u) || ((0xa1..=0xff).contains(&u) && u != 0xad);
    }
    if c.is_whitespace() || c.is_control() {
        return false;
    }
    let format_or_private = [
        0x0600..=0x0605,
        0x061c..=0x061c,
        0x06dd..=0x06dd,
        0x070f..=0x070f,
        0x0890..=0x0891,
        0x08e2..=0x08e2,
        0x180e..=0x180e,
        0x200b..=0x200f,
        0x2028..=0x202e,
        0x2060..=0x206f,
        0xd800..=0xdfff,
        0xe000..=0xf8ff,
        0xfeff..=0xfeff,
        0xfff9..=0xfffb,
        0xfffe..=0xffff,
        0x110bd..=0x110bd,
        0x110cd..=0x110cd,
        0x13430..=0x1343f,
        0x1bca0..=0x1bca3,
        0x1d173..=0x1d17a,
        0xe0001..=0xe007f,
        0xf0000..=0x10ffff,
    ];
    !format_or_private.iter().any(|r| r.contains(&u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_like_go() {
        assert_eq!(go_quote("a b"), r#""a b""#);
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("\t\n\u{0}\u{1b}\u{7f}"), r#""\t\n\x00\x1b\x7f""#);
        assert_eq!(go_quote("é✓"), "\"é✓\"");
        assert_eq!(go_quote("\u{a0}\u{ad}\u{85}"), r#""\u00a0\u00ad\u0085""#);
        assert_eq!(go_quote("\u{200b}\u{2028}"), r#""\u200b\u2028""#);
        assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
    }

    #[test]
    fn paths_and_aggregates() {
        let values = Path::child("values");
        assert_eq!(values.index(0).key("k").to_string(), "values[0][k]");
        assert_eq!(Path::Nil.to_string(), "<nil>");
        let e = |p: Path, v: &str| InvalidError::new(p, BadValue::Str(v.into()), "bad");
        assert_eq!(aggregate(&[]), None);
        assert_eq!(
            aggregate(&[e(Path::Nil, "x")]).unwrap(),
            r#"<nil>: Invalid value: "x": bad"#
        );
        assert_eq!(
            aggregate(&[
                e(values.clone(), "x"),
                e(values.clone(), "x"),
                e(values, "y")
            ])
            .unwrap(),
            r#"[values: Invalid value: "x": bad, values: Invalid value: "y": bad]"#
        );
        let list = InvalidError::new(
            Path::child("values"),
            BadValue::List(vec!["a".into(), "b".into()]),
            "exact-match compatibility requires one single value",
        );
        assert_eq!(
            list.to_string(),
            r#"values: Invalid value: ["a","b"]: exact-match compatibility requires one single value"#
        );
    }
}
