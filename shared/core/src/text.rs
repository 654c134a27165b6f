//! Text as every output shows it: strings from a cluster, a file or a snapshot escaped so
//! they cannot drive a terminal, tables, counts, shell quoting, and the colours a renderer
//! may ask for. Pure: whether colour is on is the caller's decision ([`Paint`]).

use unicode_width::UnicodeWidthStr as _;

/// What colours a renderer asks for; the plugins' terminal layer decides whether they show.
pub trait Paint {
    /// `text` in `color`, or unchanged when colour is off.
    fn paint(&self, text: &str, color: Color) -> String;
}

/// No colour at all: for JSON-adjacent text, tests and pipes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Paint for Plain {
    fn paint(&self, text: &str, _color: Color) -> String {
        text.to_string()
    }
}

/// Quotes a word for a shell only when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:+@=,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `1 node`, `3 nodes`: a count with its noun in the right number (nouns that take `-s`).
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Colours the plugins use.
#[derive(Debug, Clone, Copy)]
pub enum Color {
    Red,
    Green,
    Yellow,
    Bold,
    Dim,
}

/// `text` with control characters (C0 but for the line break when `keep_newlines`, DEL,
/// C1) and the bidirectional controls shown as `\xNN`/`\u{NNNN}` escapes: a string from the cluster or a file (an event
/// message, a snapshot's context, a hook's stderr) cannot move the cursor, recolour or
/// retitle the terminal.
pub fn escape_controls(text: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char =
        |c: char| (c.is_control() || is_bidi_control(c)) && !(keep_newlines && c == '\n');
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            if (c as u32) < 0x100 {
                out.push_str(&format!("\\x{:02x}", c as u32));
            } else {
                out.push_str(&format!("\\u{{{:04x}}}", c as u32));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A string from a cluster, a file or a snapshot as every text output shows it: control
/// and bidirectional characters, line breaks included, escaped ([`escape_controls`]), so a
/// value can neither drive the terminal nor start a line of its own.
pub fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    escape_controls(text, false)
}

/// The Unicode bidirectional controls (embeddings, overrides, isolates and marks): not
/// control characters to Rust, but U+202E makes a terminal show `yaml.exe` as `exe.yaml`
/// and reorders what a reviewer reads ("Trojan Source", CVE-2021-42574).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A table; every cell (data from the cluster or files) has its control characters
/// escaped.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut all: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    all.extend(rows.iter().cloned());
    let mut widths = Vec::new();
    aligned_rows(&all, &mut widths)
}

/// Rows padded as [`table`] pads them (by the columns a terminal gives each cell, so a
/// wide character counts twice), to columns at least `widths` wide; `widths` grows to
/// fit these rows, so rows printed later (a watch's) stay aligned with earlier ones. Cells
/// are escaped for a terminal.
pub fn aligned_rows(rows: &[Vec<String>], widths: &mut Vec<usize>) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| escape_controls(c, false).into_owned())
                .collect()
        })
        .collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            let n = cell.width();
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(n),
                None => widths.push(n),
            }
        }
    }
    let mut out = String::new();
    for row in &rows {
        let last = row.len().saturating_sub(1);
        for (i, cell) in row.iter().enumerate() {
            out.push_str(cell);
            if i < last {
                out.push_str(&" ".repeat(widths[i] - cell.width() + 2));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A label value in CJK or an emoji takes two terminal columns a character: the next
    /// column still starts where the header's does.
    #[test]
    fn wide_characters_keep_the_columns_aligned() {
        let out = table(
            &["NODE", "OWNER"],
            &[
                vec!["gpu-東京-1".into(), "team".into()],
                vec!["gpu-a100-1".into(), "ml".into()],
            ],
        );
        let columns: Vec<usize> = out
            .lines()
            .map(|line| {
                let at = line.rfind(' ').unwrap() + 1;
                line[..at].width()
            })
            .collect();
        assert_eq!(columns, [12, 12, 12], "{out}");
    }
}
