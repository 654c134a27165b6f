//! The structured reports — versioned JSON, SARIF 2.1.0 and GitLab code quality — written as
//! the findings come, file by file (a big file document by document), so a run with tens of
//! thousands of findings never holds them all: what is kept is the input errors (JSON and
//! SARIF list them after the findings), the totals and, for GitLab, a 16-byte hash per
//! distinct finding to number identical ones.
//!
//! Each document is the one `serde_json::to_string_pretty` would print for the whole report
//! (keys in order, two-space indents), except that SARIF's run lists `tool`, `results` and
//! then `invocations`, whose success is known only at the end.

use std::collections::HashMap;
use std::io::Write;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::engine::{FileReport, Finding};
use super::output::{JSON_VERSION, Summary, context, repository_path, sarif_level, sarif_uri};
use super::rule::Severity;
use super::rules::RULES;
use super::source::InputError;

/// The structured formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structured {
    Json,
    Sarif,
    Gitlab,
}

/// A structured report being written to `out`.
#[derive(Debug)]
pub struct StructuredWriter<W: Write> {
    format: Structured,
    out: W,
    /// Elements written to the array being streamed (findings, results, issues).
    written: usize,
    errors: Vec<InputError>,
    summary: Summary,
    /// GitLab: how many identical findings came before, by a hash of what identifies one.
    seen: HashMap<[u8; 16], usize>,
}

/// `value` pretty-printed as it stands `indent` spaces deep in an enclosing document.
fn nested(value: &Value, indent: usize) -> String {
    let text = serde_json::to_string_pretty(value).expect("JSON values serialize");
    // JSON strings hold no raw newline: every line break is the printer's.
    text.replace('\n', &format!("\n{}", " ".repeat(indent)))
}

impl<W: Write> StructuredWriter<W> {
    /// Starts the report. `contexts` (JSON, with `--contexts`) lists the clusters read.
    pub fn start(
        format: Structured,
        mut out: W,
        version: &str,
        contexts: Option<&Value>,
    ) -> std::io::Result<Self> {
        match format {
            Structured::Json => {
                out.write_all(b"{\n")?;
                if let Some(contexts) = contexts {
                    writeln!(out, "  \"contexts\": {},", nested(contexts, 2))?;
                }
                out.write_all(b"  \"findings\": [")?;
            }
            Structured::Sarif => {
                let tool = json!({"driver": {
                    "name": "affinity-lint",
                    "informationUri": "https://github.com/placekit/placekit",
                    "version": version,
                    "rules": sarif_rules(),
                }});
                write!(
                    out,
                    "{{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n  \"runs\": [\n    {{\n      \"tool\": {},\n      \"results\": [",
                    nested(&tool, 6)
                )?;
            }
            Structured::Gitlab => out.write_all(b"[")?,
        }
        Ok(StructuredWriter {
            format,
            out,
            written: 0,
            errors: Vec::new(),
            summary: Summary::default(),
            seen: HashMap::new(),
        })
    }

    /// Writes one element of the streamed array, `indent` spaces deep.
    fn element(&mut self, value: &Value, indent: usize) -> std::io::Result<()> {
        let separator = if self.written == 0 { "" } else { "," };
        let pad = " ".repeat(indent);
        write!(self.out, "{separator}\n{pad}{}", nested(value, indent))?;
        self.written += 1;
        Ok(())
    }

    /// Adds what one file (or one document of a big file) yielded.
    pub fn add(&mut self, report: FileReport) -> std::io::Result<()> {
        self.summary.add(&report);
        match self.format {
            Structured::Json => {
                for f in &report.findings {
                    let value = serde_json::to_value(f).expect("findings serialize");
                    self.element(&value, 4)?;
                }
                self.errors.extend(report.errors);
            }
            Structured::Sarif => {
                for f in &report.findings {
                    self.element(&sarif_result(f), 8)?;
                }
                self.errors.extend(report.errors);
            }
            Structured::Gitlab => {
                for e in &report.errors {
                    self.element(&gitlab_input_error(e), 2)?;
                }
                for f in &report.findings {
                    let issue = gitlab_issue(f, &mut self.seen);
                    self.element(&issue, 2)?;
                }
            }
        }
        self.out.flush()
    }

    /// Ends the report (`files` were read) and returns its totals.
    pub fn finish(mut self, files: usize) -> std::io::Result<Summary> {
        self.summary.files = files;
        let close = |written: usize, indent: usize| {
            if written == 0 {
                "]".to_string()
            } else {
                format!("\n{}]", " ".repeat(indent))
            }
        };
        match self.format {
            Structured::Json => {
                let summary = serde_json::to_value(self.summary).expect("summary serialises");
                let errors = serde_json::to_value(&self.errors).expect("errors serialize");
                write!(
                    self.out,
                    "{},\n  \"inputErrors\": {},\n  \"summary\": {},\n  \"version\": \"{JSON_VERSION}\"\n}}",
                    close(self.written, 2),
                    nested(&errors, 2),
                    nested(&summary, 2)
                )?;
            }
            Structured::Sarif => {
                // Input errors (a broken document, an unrendered template) are not findings of
                // a rule: SARIF carries them as the run's error notifications.
                let invocations = json!([{
                    "executionSuccessful": self.errors.is_empty(),
                    "toolExecutionNotifications": self.errors.iter().map(sarif_notification).collect::<Vec<_>>(),
                }]);
                write!(
                    self.out,
                    "{},\n      \"invocations\": {}\n    }}\n  ],\n  \"version\": \"2.1.0\"\n}}",
                    close(self.written, 6),
                    nested(&invocations, 6)
                )?;
            }
            Structured::Gitlab => write!(self.out, "{}", close(self.written, 0))?,
        }
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(self.summary)
    }
}

/// The shape of `-o json` (`version: placekit.dev/affinity-lint/v1`), which
/// [`StructuredWriter`] writes as the findings come rather than building it: the type its
/// published JSON Schema is generated from (`docs/schemas/affinity-lint/v1.json`).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JsonReport {
    /// With `--cluster` over several contexts: every cluster read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<Value>>,
    pub findings: Vec<Finding>,
    pub input_errors: Vec<InputError>,
    pub summary: Summary,
    /// Always `placekit.dev/affinity-lint/v1`.
    pub version: String,
}

/// The SARIF rule metadata of every rule.
fn sarif_rules() -> Value {
    RULES
        .iter()
        .map(|r| {
            let m = r.meta();
            json!({
                "id": m.id,
                "name": m.name,
                "shortDescription": {"text": m.summary},
                "fullDescription": {"text": m.summary},
                "help": {"text": m.doc, "markdown": m.doc},
                "defaultConfiguration": {"level": sarif_level(m.severity)},
                "properties": {"tags": ["kubernetes", "scheduling"]},
            })
        })
        .collect()
}

/// One SARIF result, with a physical location GitHub code scanning reads.
fn sarif_result(f: &Finding) -> Value {
    let index = RULES
        .iter()
        .position(|r| r.meta().id == f.rule)
        .unwrap_or(0);
    let mut message = format!("{}{}", f.message, context(f));
    if let Some(fix) = &f.fix {
        message.push_str(&format!("\nFix:\n{fix}"));
    }
    let mut result = json!({
        "ruleId": f.rule,
        "ruleIndex": index,
        "level": sarif_level(f.severity),
        "message": {"text": message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": sarif_uri(&f.file)},
                "region": {"startLine": f.line.max(1), "startColumn": f.column.max(1)},
            },
            "logicalLocations": [{"name": format!("{}/{}", f.object.kind, f.object.name), "kind": "object"}],
        }],
    });
    // One finding per cluster at one place: code scanning must not merge them.
    if let Some(context) = &f.context {
        result["properties"] = json!({"context": context});
        result["partialFingerprints"] = json!({"placekitContext/v1": context});
    }
    result
}

fn sarif_notification(e: &InputError) -> Value {
    json!({
        "level": "error",
        "message": {"text": format!("input error: {}", e.message)},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": sarif_uri(&e.file)},
            "region": {"startLine": e.line.unwrap_or(1).max(1)},
        }}],
    })
}

/// The hash of `parts`, each ended by a NUL.
fn digest(parts: &[&str]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for p in parts {
        hash.update(p.as_bytes());
        hash.update([0]);
    }
    hash.finalize().into()
}

/// GitLab's fingerprint: 16 bytes of the hash, in hex. It stays the same when lines move
/// (rule, file, object and message, not the line).
fn fingerprint(parts: &[&str]) -> String {
    digest(parts)
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn gitlab_input_error(e: &InputError) -> Value {
    json!({
        "type": "issue",
        "description": format!("input error: {}", e.message),
        "check_name": "input-error",
        "categories": ["Bug Risk"],
        "fingerprint": fingerprint(&["input-error", &e.file, &e.message]),
        "severity": "blocker",
        "location": {"path": repository_path(&e.file), "lines": {"begin": e.line.unwrap_or(1)}},
    })
}

/// One issue of GitLab's code quality report (`artifacts: reports: codequality`).
fn gitlab_issue(f: &Finding, seen: &mut HashMap<[u8; 16], usize>) -> Value {
    let object = format!(
        "{}/{}/{}",
        f.object.kind,
        f.object.namespace.as_deref().unwrap_or_default(),
        f.object.name
    );
    // Identical findings (two empty terms in one object) are told apart by their order.
    let identity = digest(&[
        &f.rule,
        &f.file,
        &object,
        &f.message,
        f.context.as_deref().unwrap_or_default(),
    ]);
    let mut key = [0; 16];
    key.copy_from_slice(&identity[..16]);
    let count = seen.entry(key).or_insert(0);
    let occurrence = count.to_string();
    *count += 1;
    let severity = match f.severity {
        Severity::Error => "major",
        Severity::Warning => "minor",
        Severity::Info => "info",
    };
    json!({
        "type": "issue",
        "description": format!("{}{}", f.message, context(f)),
        "check_name": f.rule,
        "categories": ["Bug Risk"],
        // The context only when there is one, so one cluster's fingerprints stay as they were.
        "fingerprint": match &f.context {
            None => fingerprint(&[&f.rule, &f.file, &object, &f.message, &occurrence]),
            Some(c) => fingerprint(&[&f.rule, &f.file, &object, &f.message, &occurrence, c]),
        },
        "severity": severity,
        "location": {"path": repository_path(&f.file), "lines": {"begin": f.line.max(1)}},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ObjectRef;

    fn finding(line: usize) -> Finding {
        Finding {
            rule: "AL001".into(),
            severity: Severity::Error,
            file: "a.yaml".into(),
            line,
            column: 3,
            object: ObjectRef {
                kind: "Deployment".into(),
                namespace: Some("ml".into()),
                name: "llm".into(),
            },
            pod_spec: Some("spec.template.spec".into()),
            message: "terms are OR-ed".into(),
            fix: Some("one term".into()),
            helm_template: None,
            fixable: None,
            source_line: None,
            edit: None,
            manual_reason: None,
            context: None,
        }
    }

    fn written(format: Structured, reports: Vec<FileReport>, contexts: Option<&Value>) -> String {
        let mut out = Vec::new();
        let mut writer = StructuredWriter::start(format, &mut out, "1.2.3", contexts).unwrap();
        for r in reports {
            writer.add(r).unwrap();
        }
        writer.finish(2).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn error() -> InputError {
        InputError {
            file: "b.yaml".into(),
            line: Some(4),
            column: None,
            message: "not YAML".into(),
        }
    }

    /// The streamed JSON is byte for byte what printing the whole report at once gives.
    #[test]
    fn streamed_json_is_the_whole_report_pretty_printed() {
        for (findings, errors) in [
            (vec![], vec![]),
            (vec![finding(3), finding(9)], vec![error()]),
        ] {
            let contexts = json!([{"context": "east", "server": "https://e"}]);
            for contexts in [None, Some(&contexts)] {
                let reports = vec![
                    FileReport {
                        findings: findings.clone(),
                        documents: 1,
                        objects: 1,
                        ..FileReport::default()
                    },
                    FileReport {
                        errors: errors.clone(),
                        ..FileReport::default()
                    },
                ];
                let mut whole = json!({
                    "version": JSON_VERSION,
                    "findings": findings,
                    "inputErrors": errors,
                    "summary": {"errors": findings.len(), "warnings": 0, "infos": 0,
                        "inputErrors": errors.len(), "files": 2, "documents": 1, "objects": 1},
                });
                if let Some(c) = contexts {
                    whole["contexts"] = c.clone();
                }
                assert_eq!(
                    written(Structured::Json, reports, contexts),
                    serde_json::to_string_pretty(&whole).unwrap() + "\n"
                );
            }
        }
    }

    #[test]
    fn sarif_and_gitlab_are_valid_json_with_every_finding() {
        let reports = || {
            vec![
                FileReport {
                    findings: vec![finding(3), finding(3)],
                    errors: vec![error()],
                    ..FileReport::default()
                },
                FileReport::default(),
            ]
        };
        let sarif: Value =
            serde_json::from_str(&written(Structured::Sarif, reports(), None)).unwrap();
        let run = &sarif["runs"][0];
        assert_eq!(run["results"].as_array().unwrap().len(), 2);
        assert_eq!(run["invocations"][0]["executionSuccessful"], false);
        assert_eq!(run["tool"]["driver"]["version"], "1.2.3");
        assert_eq!(sarif["version"], "2.1.0");
        let empty: Value = serde_json::from_str(&written(Structured::Sarif, vec![], None)).unwrap();
        assert_eq!(empty["runs"][0]["results"], json!([]));
        assert_eq!(
            empty["runs"][0]["invocations"][0]["executionSuccessful"],
            true
        );

        let gitlab: Value =
            serde_json::from_str(&written(Structured::Gitlab, reports(), None)).unwrap();
        let issues = gitlab.as_array().unwrap();
        assert_eq!(issues.len(), 3);
        assert_eq!(issues[0]["check_name"], "input-error");
        // Two identical findings get different fingerprints, stable from run to run.
        assert_ne!(issues[1]["fingerprint"], issues[2]["fingerprint"]);
        let again: Value =
            serde_json::from_str(&written(Structured::Gitlab, reports(), None)).unwrap();
        assert_eq!(gitlab, again);
        assert_eq!(written(Structured::Gitlab, vec![], None), "[]\n");
    }
}
