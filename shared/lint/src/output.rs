//! Reports of a lint run: compiler-style text and GitHub workflow-command annotations here;
//! versioned JSON, SARIF 2.1.0 and GitLab code quality, written as the findings come, in
//! [`super::structured`].

use super::engine::{FileReport, Finding, Outcome};
use super::rule::Severity;
use super::source::InputError;
// A manifest from a pull request or a chart must not drive the reviewer's terminal.
use placekit_core::text::{Color, Paint, escaped};

/// The `version` of the JSON report.
pub const JSON_VERSION: &str = "placekit.dev/affinity-lint/v1";

/// The totals a report ends with, added up as files are reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    pub input_errors: usize,
    pub files: usize,
    pub documents: usize,
    pub objects: usize,
}

impl Summary {
    pub fn of(outcome: &Outcome) -> Self {
        let mut summary = Summary {
            files: outcome.files,
            documents: outcome.documents,
            objects: outcome.objects,
            input_errors: outcome.errors.len(),
            ..Summary::default()
        };
        summary.count_findings(&outcome.findings);
        summary
    }

    /// Adds one file's report (the number of files is known at the end).
    pub fn add(&mut self, report: &FileReport) {
        self.documents += report.documents;
        self.objects += report.objects;
        self.input_errors += report.errors.len();
        self.count_findings(&report.findings);
    }

    fn count_findings(&mut self, findings: &[Finding]) {
        for f in findings {
            match f.severity {
                Severity::Error => self.errors += 1,
                Severity::Warning => self.warnings += 1,
                Severity::Info => self.infos += 1,
            }
        }
    }

    /// Findings at or above `fail_on`.
    pub fn failing(&self, fail_on: Severity) -> usize {
        match fail_on {
            Severity::Error => self.errors,
            Severity::Warning => self.errors + self.warnings,
            Severity::Info => self.errors + self.warnings + self.infos,
        }
    }
}

/// Where the core kinds keep their pod spec: not worth repeating in text output.
const CORE_POD_SPEC_PATHS: &[&str] = &[
    "spec",
    "spec.template.spec",
    "spec.jobTemplate.spec.template.spec",
    "template.spec",
];

/// `Deployment ml/llm-inference`.
pub(super) fn object_name(f: &Finding) -> String {
    match &f.object.namespace {
        Some(ns) => format!("{} {ns}/{}", f.object.kind, f.object.name),
        None => format!("{} {}", f.object.kind, f.object.name),
    }
}

/// What the CI formats add to a message so it stands alone: the object, the pod spec of a
/// custom resource, and the Helm template the file was rendered from.
pub(super) fn context(f: &Finding) -> String {
    let mut parts = vec![object_name(f)];
    if let Some(context) = &f.context {
        parts.push(format!("context {context}"));
    }
    if let Some(path) = f
        .pod_spec
        .as_deref()
        .filter(|p| !CORE_POD_SPEC_PATHS.contains(p))
    {
        parts.push(format!("pod spec at {path}"));
    }
    if let Some(t) = &f.helm_template {
        parts.push(format!("Helm template {t}"));
    }
    format!(" ({})", parts.join(", "))
}

/// Compiler-style text: `file:line:col: severity[ID]: message`, the source line with a
/// caret, the object, and the fix.
pub fn text_report(outcome: &Outcome, ui: &dyn Paint) -> String {
    text_items(&outcome.errors, &outcome.findings, ui) + &text_summary(&Summary::of(outcome))
}

/// One file's part of the text report, printed as soon as the file is done.
pub fn text_file(report: &FileReport, ui: &dyn Paint) -> String {
    text_items(&report.errors, &report.findings, ui)
}

/// Input errors, then findings.
fn text_items(errors: &[InputError], findings: &[Finding], ui: &dyn Paint) -> String {
    errors
        .iter()
        .map(|e| text_input_error(e, ui))
        .chain(findings.iter().map(|f| text_finding(f, ui)))
        .collect()
}

fn text_input_error(e: &InputError, ui: &dyn Paint) -> String {
    format!(
        "{}: {}\n",
        ui.paint("input error", Color::Red),
        escaped(&e.to_string())
    )
}

fn text_finding(f: &Finding, ui: &dyn Paint) -> String {
    let mut out = String::new();
    let label = format!("{}[{}]", f.severity.as_str(), f.rule);
    let painted = match f.severity {
        Severity::Error => ui.paint(&label, Color::Red),
        Severity::Warning => ui.paint(&label, Color::Yellow),
        Severity::Info => ui.paint(&label, Color::Bold),
    };
    // A live rule over several clusters says whose nodes it read.
    let on = f
        .context
        .as_ref()
        .map(|c| format!("context {}: ", escaped(c)))
        .unwrap_or_default();
    out.push_str(&format!(
        "{}:{}:{}: {painted}: {on}{}\n",
        escaped(&f.file),
        f.line,
        f.column,
        escaped(&f.message)
    ));
    if let Some(line) = &f.source_line {
        let line = escaped(line);
        let gutter = f.line.to_string().len();
        out.push_str(&format!(
            "{:gutter$} |\n{} | {}\n{:gutter$} | {}{}\n",
            "",
            f.line,
            line,
            "",
            " ".repeat(f.column.saturating_sub(1)),
            ui.paint("^", Color::Red)
        ));
    }
    out.push_str(&format!("  = object: {}", escaped(&object_name(f))));
    if let Some(path) = f
        .pod_spec
        .as_deref()
        .filter(|p| !CORE_POD_SPEC_PATHS.contains(p))
    {
        out.push_str(&format!(", pod spec at {}", escaped(path)));
    }
    if let Some(t) = &f.helm_template {
        out.push_str(&format!(" (Helm template {})", escaped(t)));
    }
    out.push('\n');
    if let Some(fix) = &f.fix {
        // The fix's own line breaks are its layout; each line is escaped.
        if fix.contains('\n') {
            out.push_str("  = fix:\n");
            for l in fix.lines() {
                out.push_str(&format!("      {}\n", escaped(l)));
            }
        } else {
            out.push_str(&format!("  = fix: {}\n", escaped(fix)));
        }
    }
    out.push('\n');
    out
}

/// The text report's last line: `1 error, 0 warnings, 0 infos in 3 objects of 2 files`.
pub fn text_summary(s: &Summary) -> String {
    let count = placekit_core::text::count;
    format!(
        "{}, {}, {} in {} of {}{}\n",
        count(s.errors, "error"),
        count(s.warnings, "warning"),
        count(s.infos, "info"),
        count(s.objects, "object"),
        count(s.files, "file"),
        if s.input_errors == 0 {
            String::new()
        } else {
            format!("; {}", count(s.input_errors, "input error"))
        }
    )
}

pub(super) fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A file as CI systems want it: relative to the directory the linter runs in (the
/// repository's root in CI) when it is inside it, as given otherwise. `-f $CI_PROJECT_DIR/x`
/// reports `x`.
pub(super) fn repository_path(file: &str) -> String {
    let path = std::path::Path::new(file);
    if path.is_absolute()
        && let Ok(cwd) = std::env::current_dir()
        && let Ok(relative) = path.strip_prefix(&cwd)
    {
        return relative.to_string_lossy().into_owned();
    }
    file.to_string()
}

/// A SARIF `artifactLocation.uri`: the repository path percent-encoded (a space or `#`
/// would break the URI); a path outside the repository as a `file://` URI.
pub(super) fn sarif_uri(file: &str) -> String {
    let path = repository_path(file).replace('\\', "/");
    let mut encoded = String::new();
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                encoded.push(byte as char)
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    if encoded.starts_with('/') {
        format!("file://{encoded}")
    } else {
        encoded
    }
}

/// A workflow command's data: `%`, CR and LF as GitHub decodes them; other control and
/// bidirectional characters escaped, as the job log renders terminal escapes.
fn escape_data(s: &str) -> String {
    let s = s
        .chars()
        .map(|c| match c {
            '\r' | '\n' => c.to_string(),
            c => escaped(&c.to_string()).into_owned(),
        })
        .collect::<String>();
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions workflow commands (`::error file=...,line=...::message`).
pub fn github_report(outcome: &Outcome) -> String {
    github_items(&outcome.errors, &outcome.findings)
}

/// One file's workflow commands, printed as soon as the file is done.
pub fn github_file(report: &FileReport) -> String {
    github_items(&report.errors, &report.findings)
}

/// Input errors, then findings.
fn github_items(errors: &[InputError], findings: &[Finding]) -> String {
    errors
        .iter()
        .map(github_input_error)
        .chain(findings.iter().map(github_finding))
        .collect()
}

fn github_input_error(e: &InputError) -> String {
    format!(
        "::error file={},line={},title=input error::{}\n",
        escape_property(&repository_path(&e.file)),
        e.line.unwrap_or(1),
        escape_data(&e.message)
    )
}

fn github_finding(f: &Finding) -> String {
    let command = match f.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    format!(
        "::{command} file={},line={},col={},title={}::{}\n",
        escape_property(&repository_path(&f.file)),
        f.line,
        f.column,
        escape_property(&format!("{} {}", f.rule, object_name(f))),
        escape_data(&format!("{}{}", f.message, context(f)))
    )
}

/// Findings at or above `fail_on`.
pub fn failing(findings: &[Finding], fail_on: Severity) -> usize {
    findings.iter().filter(|f| f.severity >= fail_on).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sarif_uris_are_encoded_and_relative() {
        assert_eq!(
            sarif_uri("deploy/my app#1.yaml"),
            "deploy/my%20app%231.yaml"
        );
        let cwd = std::env::current_dir().unwrap();
        let inside = cwd.join("deploy/x.yaml");
        assert_eq!(sarif_uri(inside.to_str().unwrap()), "deploy/x.yaml");
        assert_eq!(repository_path(inside.to_str().unwrap()), "deploy/x.yaml");
        assert_eq!(sarif_uri("/elsewhere/x.yaml"), "file:///elsewhere/x.yaml");
    }

    #[test]
    fn github_escaping() {
        assert_eq!(escape_data("a%b\nc"), "a%25b%0Ac");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }
}
