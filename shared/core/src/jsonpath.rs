//! kubectl's `-o jsonpath=TEMPLATE` and `-o custom-columns=SPEC` over a report, as
//! kubectl's `k8s.io/client-go/util/jsonpath` reads them, for the part scripts use: text,
//! `{.field.sub}`, `{.items[*].name}`, `{.items[0]}`, `{.labels.k8s\.io/key}` (or
//! `{.labels['k8s\.io/key']}`: as in kubectl, a quoted bracket holds a path, so a key's dots
//! are escaped there too), `{range .items[*]}…{end}`, `{"\n"}` and `{"\t"}`. Several
//! results of one expression are joined by a space; strings print bare, other values as
//! JSON. Filters (`[?(…)]`), slices and recursive descent (`..`) are refused with the
//! position, not guessed at.

use serde_json::Value;

/// A template that cannot be read, with where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("jsonpath {template:?}: {message}")]
pub struct TemplateError {
    pub template: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Field(String),
    Index(usize),
    All,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Path(Vec<Segment>),
    Range(Vec<Segment>, Vec<Piece>),
}

/// A parsed template, ready to run over any number of reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    pub fn parse(template: &str) -> Result<Template, TemplateError> {
        let fail = |message: String| TemplateError {
            template: template.to_string(),
            message,
        };
        let mut stack: Vec<(Vec<Segment>, Vec<Piece>)> = Vec::new();
        let mut pieces: Vec<Piece> = Vec::new();
        let mut rest = template;
        let mut offset = 0;
        while !rest.is_empty() {
            let Some(open) = rest.find('{') else {
                pieces.push(Piece::Text(rest.to_string()));
                break;
            };
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_string()));
            }
            let Some(close) = closing_brace(&rest[open..]) else {
                return Err(fail(format!("unclosed {{ at {}", offset + open)));
            };
            let inner = rest[open + 1..open + close].trim();
            let at = offset + open;
            if let Some(path) = inner.strip_prefix("range ") {
                stack.push((
                    parse_path(path.trim()).map_err(|m| fail(format!("{m} at {at}")))?,
                    std::mem::take(&mut pieces),
                ));
            } else if inner == "end" {
                let Some((path, outer)) = stack.pop() else {
                    return Err(fail(format!("{{end}} without {{range}} at {at}")));
                };
                let body = std::mem::replace(&mut pieces, outer);
                pieces.push(Piece::Range(path, body));
            } else if let Some(literal) = inner.strip_prefix('"').and_then(|s| s.strip_suffix('"'))
            {
                pieces.push(Piece::Text(unescape(literal)));
            } else {
                pieces.push(Piece::Path(
                    parse_path(inner).map_err(|m| fail(format!("{m} at {at}")))?,
                ));
            }
            offset += open + close + 1;
            rest = &rest[open + close + 1..];
        }
        if !stack.is_empty() {
            return Err(fail("{range} without {end}".into()));
        }
        Ok(Template { pieces })
    }

    /// The template run over `root`. Values from the report (strings from a cluster) have
    /// their control characters escaped ([`crate::text::escaped`]); the template's own text
    /// and `{"\t"}`/`{"\n"}` literals are the user's and stay as written.
    ///
    /// An error is kubectl's (an index past the end of an array); what was rendered before
    /// it is not printed, as kubectl prints nothing then.
    pub fn render(&self, root: &Value) -> Result<String, String> {
        let mut out = String::new();
        render(&self.pieces, root, &mut out)?;
        Ok(out)
    }
}

/// Where the `}` closing the `{` at the start of `text` is (quotes and brackets skipped).
fn closing_brace(text: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '}') => return Some(i),
            _ => {}
        }
    }
    None
}

fn unescape(literal: &str) -> String {
    literal
        .replace("\\n", "\n")
        .replace("\\t", "\t")
        .replace("\\r", "\r")
        .replace("\\\"", "\"")
}

fn parse_path(path: &str) -> Result<Vec<Segment>, String> {
    let path = path.strip_prefix('$').unwrap_or(path);
    if path.contains("..") {
        return Err("recursive descent (..) is not supported".into());
    }
    let mut segments = Vec::new();
    let chars: Vec<char> = path.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                let mut name = String::new();
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    name.push(chars[i]);
                    i += 1;
                }
                if name == "*" {
                    segments.push(Segment::All);
                } else if !name.is_empty() {
                    segments.push(Segment::Field(name));
                }
            }
            '[' => {
                let end = chars[i..]
                    .iter()
                    .position(|c| *c == ']')
                    .map(|p| p + i)
                    .ok_or("unclosed [")?;
                let inner: String = chars[i + 1..end].iter().collect();
                let inner = inner.trim();
                if inner == "*" {
                    segments.push(Segment::All);
                } else if let Some(key) = inner
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
                {
                    // As kubectl's: the quoted text is a path too (`['metadata.name']` is
                    // `.metadata.name`); a dot of a key is escaped (`['kubernetes\.io/os']`).
                    segments.extend(quoted_path(key).into_iter().map(Segment::Field));
                } else if let Ok(index) = inner.parse::<usize>() {
                    segments.push(Segment::Index(index));
                } else {
                    return Err(format!(
                        "[{inner}]: only [N], [*] and ['key'] are supported (no filters or slices)"
                    ));
                }
                i = end + 1;
            }
            c => return Err(format!("unexpected {c:?} (a path starts with . or [)")),
        }
    }
    Ok(segments)
}

/// The fields of a quoted bracket's text: split at each dot, `\.` kept as a dot.
fn quoted_path(text: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("never empty").extend(chars.next()),
            '.' => fields.push(String::new()),
            c => fields.last_mut().expect("never empty").push(c),
        }
    }
    fields.retain(|f| !f.is_empty());
    fields
}

/// The values `path` reaches from `root`. A missing field reaches nothing (kubectl's
/// `-o jsonpath` allows missing keys); an index past the end of an array that is there is
/// kubectl's error, `array index out of bounds: index N, length L`.
fn select<'a>(root: &'a Value, path: &[Segment]) -> Result<Vec<&'a Value>, String> {
    let mut current = vec![root];
    for segment in path {
        let mut next = Vec::new();
        for v in current {
            match (segment, v) {
                (Segment::Field(name), Value::Object(map)) => next.extend(map.get(name)),
                (Segment::Index(i), Value::Array(items)) => match items.get(*i) {
                    Some(item) => next.push(item),
                    None => {
                        return Err(format!(
                            "array index out of bounds: index {i}, length {}",
                            items.len()
                        ));
                    }
                },
                (Segment::All, Value::Array(items)) => next.extend(items),
                (Segment::All, Value::Object(map)) => next.extend(map.values()),
                _ => {}
            }
        }
        current = next;
    }
    Ok(current)
}

/// A value as kubectl prints it: strings bare, everything else as JSON.
pub fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn render(pieces: &[Piece], node: &Value, out: &mut String) -> Result<(), String> {
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Path(path) => {
                let found: Vec<String> = select(node, path)?
                    .into_iter()
                    .map(|v| crate::text::escaped(&plain(v)).into_owned())
                    .collect();
                out.push_str(&found.join(" "));
            }
            Piece::Range(path, body) => {
                for item in select(node, path)? {
                    render(body, item, out)?;
                }
            }
        }
    }
    Ok(())
}

/// One column of `-o custom-columns=HEADER:PATH,...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub header: String,
    path: Vec<Segment>,
}

/// Parses `HEADER:.path,HEADER2:.other` (a path may be written with or without braces).
pub fn parse_columns(spec: &str) -> Result<Vec<Column>, TemplateError> {
    let fail = |message: String| TemplateError {
        template: spec.to_string(),
        message,
    };
    spec.split(',')
        .map(|column| {
            let (header, path) = column
                .split_once(':')
                .ok_or_else(|| fail(format!("{column:?}: a column is HEADER:PATH")))?;
            let path = path.trim();
            let path = path
                .strip_prefix('{')
                .and_then(|p| p.strip_suffix('}'))
                .unwrap_or(path);
            Ok(Column {
                header: header.to_string(),
                path: parse_path(path).map_err(|m| fail(format!("{column:?}: {m}")))?,
            })
        })
        .collect()
}

impl Column {
    /// The cell of this column for `row`: several values joined by commas, `<none>` for none.
    pub fn cell(&self, row: &Value) -> String {
        let found: Vec<String> = select(row, &self.path)
            .unwrap_or_default()
            .into_iter()
            .map(plain)
            .collect();
        if found.is_empty() {
            "<none>".into()
        } else {
            found.join(",")
        }
    }
}

/// `--sort-by=JSONPATH`, as kubectl's: items ordered by the first value the path selects in
/// each; numbers by value, text as text, items without the field last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    spec: String,
    path: Vec<Segment>,
}

impl SortKey {
    /// Parses `.free`, `{.free}` or `{.labels['k8s\.io/pool']}`.
    pub fn parse(spec: &str) -> Result<SortKey, TemplateError> {
        let trimmed = spec.trim();
        let path = trimmed
            .strip_prefix('{')
            .and_then(|p| p.strip_suffix('}'))
            .unwrap_or(trimmed);
        if !path.starts_with('.') && !path.starts_with('$') {
            return Err(TemplateError {
                template: spec.to_string(),
                message: "a sort key is a JSONPath such as .free or '{.name}'".into(),
            });
        }
        Ok(SortKey {
            spec: spec.to_string(),
            path: parse_path(path).map_err(|message| TemplateError {
                template: spec.to_string(),
                message,
            })?,
        })
    }

    /// The key as given.
    pub fn as_str(&self) -> &str {
        &self.spec
    }

    /// How `a` and `b` order by this key.
    pub fn compare(&self, a: &Value, b: &Value) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let key = |v: &Value| {
            select(v, &self.path)
                .unwrap_or_default()
                .into_iter()
                .next()
                .cloned()
        };
        match (key(a), key(b)) {
            (None | Some(Value::Null), None | Some(Value::Null)) => Ordering::Equal,
            (None | Some(Value::Null), _) => Ordering::Greater,
            (_, None | Some(Value::Null)) => Ordering::Less,
            (Some(Value::Number(x)), Some(Value::Number(y))) => x
                .as_f64()
                .partial_cmp(&y.as_f64())
                .unwrap_or(Ordering::Equal),
            (Some(x), Some(y)) => plain(&x).cmp(&plain(&y)),
        }
    }

    /// Whether any of `items` has the field (kubectl refuses a key none has).
    pub fn found_in(&self, items: &[Value]) -> bool {
        items
            .iter()
            .any(|v| !select(v, &self.path).unwrap_or_default().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_past_the_end_is_an_error_and_a_missing_field_is_not() {
        let report = serde_json::json!({"items": [{"name": "a"}]});
        let run = |t: &str| Template::parse(t).unwrap().render(&report);
        assert_eq!(
            run("{.items[1].name}"),
            Err("array index out of bounds: index 1, length 1".to_string())
        );
        assert_eq!(run("{.items[0].missing}"), Ok(String::new()));
        assert_eq!(run("{.missing[3]}"), Ok(String::new()));
        assert_eq!(run("{range .items[*]}{.name}{end}"), Ok("a".to_string()));
    }
    use serde_json::json;

    fn run(template: &str, value: &Value) -> String {
        Template::parse(template).unwrap().render(value).unwrap()
    }

    #[test]
    fn templates_scripts_use_render_as_kubectl_does() {
        let report = json!({"kind": "GpuStatus", "items": [
            {"name": "gpu-1", "free": 2, "labels": {"k8s.io/pool": "a"}},
            {"name": "gpu-2", "free": 0, "labels": {"k8s.io/pool": "b"}},
        ]});
        assert_eq!(run("{.items[*].name}", &report), "gpu-1 gpu-2");
        assert_eq!(run("{.items[1].free}", &report), "0");
        assert_eq!(run("{.kind}", &report), "GpuStatus");
        assert_eq!(
            run(
                "{range .items[*]}{.name}{\"\\t\"}{.free}{\"\\n\"}{end}",
                &report
            ),
            "gpu-1\t2\ngpu-2\t0\n"
        );
        assert_eq!(run("{.items[0].labels['k8s\\.io/pool']}", &report), "a");
        // As kubectl's: an unescaped dot in quotes is a path step.
        assert_eq!(run("{.items[0].labels['k8s.io/pool']}", &report), "");
        assert_eq!(run("{.items[0]['labels.k8s\\.io/pool']}", &report), "a");
        assert_eq!(run("{.items[0].labels.k8s\\.io/pool}", &report), "a");
        assert_eq!(
            run("names: {$.items[*].name}", &report),
            "names: gpu-1 gpu-2"
        );
        assert_eq!(run("{.items[0].labels}", &report), r#"{"k8s.io/pool":"a"}"#);
        assert_eq!(run("{.missing}", &report), "");
        // A value cannot drive the terminal; the template's own tab and newline stay.
        let hostile = json!({"name": "a\u{1b}[2Kb\nc"});
        assert_eq!(run("{.name}{\"\\t\"}", &hostile), "a\\x1b[2Kb\\x0ac\t");
    }

    #[test]
    fn what_is_not_supported_is_refused_with_where() {
        for bad in [
            "{.items[?(@.free>0)]}",
            "{..name}",
            "{range .items[*]}{.name}",
            "{.a",
            "{end}",
        ] {
            let err = Template::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with("jsonpath "), "{bad}: {err}");
        }
    }

    #[test]
    fn custom_columns_read_each_row() {
        let columns = parse_columns("NODE:.name,FREE:{.free},POOL:.labels['pool']").unwrap();
        let row = json!({"name": "gpu-1", "free": 2});
        let cells: Vec<String> = columns.iter().map(|c| c.cell(&row)).collect();
        assert_eq!(cells, ["gpu-1", "2", "<none>"]);
        assert!(parse_columns("NODE").is_err());
    }
}

#[cfg(test)]
mod sort_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sort_keys_order_numbers_by_value_text_as_text_and_missing_last() {
        let items = [
            json!({"name": "b", "free": 10}),
            json!({"name": "a", "free": 2}),
            json!({"name": "c"}),
            json!({"name": "d", "free": 0}),
        ];
        let mut sorted = items.to_vec();
        let key = SortKey::parse(".free").unwrap();
        sorted.sort_by(|a, b| key.compare(a, b));
        let names: Vec<&str> = sorted.iter().map(|v| v["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["d", "a", "b", "c"]);
        let key = SortKey::parse("{.name}").unwrap();
        sorted.sort_by(|a, b| key.compare(a, b));
        assert_eq!(sorted[0]["name"], "a");
        assert!(key.found_in(&sorted));
        assert!(!SortKey::parse(".nope").unwrap().found_in(&sorted));
        assert!(SortKey::parse("free").is_err());
    }
}
