//! Running the rules over inputs: configuration (`.affinity-lint.yaml`, `--enable`,
//! `--disable`), suppression annotations, severities, and the findings with positions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::rule::{Context, RawFinding, Severity};
use super::rules::RULES;
use super::source::{self, Document, InputError, Object, SourceFile};
use super::yaml::parse_document;

/// The config file searched upward from the first input.
pub const CONFIG_FILE: &str = ".affinity-lint.yaml";

/// Rule selection and severities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Rule id -> severity, or `None` for "off".
    pub overrides: BTreeMap<String, Option<Severity>>,
}

impl Config {
    /// Reads `rules: {AL013: off|info|warning|error}`, `disable: [..]`, `enable: [..]`.
    pub fn parse(text: &str, file: &str) -> Result<Self, InputError> {
        let fail = |line: Option<usize>, message: String| InputError {
            file: file.to_string(),
            line,
            column: None,
            message,
        };
        let root = parse_document(text, 0).map_err(|e| fail(Some(e.line), e.message))?;
        let mut config = Config::default();
        let Some(root) = root else { return Ok(config) };
        for (key, value) in root.entries() {
            match key.as_str() {
                Some("rules") => {
                    for (id, level) in value.entries() {
                        let id = id.as_str().unwrap_or_default().to_ascii_uppercase();
                        check_id(&id).map_err(|m| fail(Some(value.line), m))?;
                        let level = level.scalar_text().unwrap_or_default();
                        let severity = match level {
                            "off" | "false" => None,
                            other => Some(Severity::parse(other).ok_or_else(|| fail(Some(value.line), format!("unknown level {other:?} for {id} (use off, info, warning or error)")))?),
                        };
                        config.overrides.insert(id, severity);
                    }
                }
                Some(list @ ("disable" | "enable")) => {
                    for item in value.items() {
                        let id = item.as_str().unwrap_or_default().to_ascii_uppercase();
                        check_id(&id).map_err(|m| fail(Some(item.line), m))?;
                        let severity = if list == "disable" {
                            None
                        } else {
                            super::rules::find(&id).map(|r| r.meta().severity)
                        };
                        config.overrides.insert(id, severity);
                    }
                }
                Some(other) => {
                    return Err(fail(
                        Some(key.line),
                        format!("unknown setting {other:?} (expected rules, enable, disable)"),
                    ));
                }
                None => {}
            }
        }
        Ok(config)
    }

    /// Applies `--enable` / `--disable` lists on top.
    pub fn apply_flags(&mut self, enable: &[String], disable: &[String]) -> Result<(), String> {
        for id in enable {
            let id = id.to_ascii_uppercase();
            check_id(&id)?;
            let default = super::rules::find(&id).map(|r| r.meta().severity);
            self.overrides.insert(id, default);
        }
        for id in disable {
            let id = id.to_ascii_uppercase();
            check_id(&id)?;
            self.overrides.insert(id, None);
        }
        Ok(())
    }

    /// The severity a rule runs at, `None` when off.
    pub fn severity(&self, id: &str, default: Severity) -> Option<Severity> {
        match self.overrides.get(id) {
            Some(s) => *s,
            None => Some(default),
        }
    }

    /// Finds `.affinity-lint.yaml` in `start` or a parent directory.
    pub fn discover(start: &Path) -> Option<PathBuf> {
        let dir = if start.is_dir() {
            start.to_path_buf()
        } else {
            start.parent()?.to_path_buf()
        };
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        dir.ancestors()
            .map(|d| d.join(CONFIG_FILE))
            .find(|p| p.is_file())
    }
}

fn check_id(id: &str) -> Result<(), String> {
    if super::rules::find(id).is_some() || is_cluster_rule(id) {
        Ok(())
    } else {
        Err(format!(
            "unknown rule {id:?} (see `kubectl affinity-lint rules`)"
        ))
    }
}

fn is_cluster_rule(id: &str) -> bool {
    matches!(id, "AL101" | "AL102" | "AL103" | "AL104" | "AL105")
}

/// The object a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectRef {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

/// A finding with everything a report needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub rule: String,
    pub severity: Severity,
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub object: ObjectRef,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The Helm template the document came from (`# Source:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub helm_template: Option<String>,
}

/// The result of a run.
#[derive(Debug, Default)]
pub struct Outcome {
    pub findings: Vec<Finding>,
    pub errors: Vec<InputError>,
    pub files: usize,
    pub documents: usize,
    pub objects: usize,
    /// File name -> text, for source excerpts in text output.
    pub sources: BTreeMap<String, String>,
}

/// Lints already-read sources; with `cluster` nodes, the `--cluster` rules run too.
pub fn lint_sources(
    sources: Vec<SourceFile>,
    config: &Config,
    keep_text: bool,
    cluster: Option<&[crate::live::NodeInfo]>,
) -> Outcome {
    let mut outcome = Outcome {
        files: sources.len(),
        ..Outcome::default()
    };
    let mut parsed: Vec<(String, Vec<Document>)> = Vec::with_capacity(sources.len());
    for file in sources {
        let (docs, errors) = source::parse_file(&file);
        outcome.errors.extend(errors);
        outcome.documents += docs.len();
        if keep_text {
            outcome.sources.insert(file.name.clone(), file.text);
        }
        parsed.push((file.name, docs));
    }
    let objects: Vec<Object<'_>> = parsed
        .iter()
        .flat_map(|(name, docs)| docs.iter().flat_map(move |d| source::objects(name, d)))
        .collect();
    outcome.objects = objects.len();
    let mut raw: Vec<RawFinding> = Vec::new();
    for object in &objects {
        let ignored = object.ignored_rules();
        let cx = Context {
            object,
            all: &objects,
        };
        for rule in RULES {
            let meta = rule.meta();
            let Some(configured) = config.severity(meta.id, meta.severity) else {
                continue;
            };
            if ignored.iter().any(|i| i == meta.id) {
                continue;
            }
            raw.clear();
            rule.check(&cx, &mut raw);
            for f in raw.drain(..) {
                // A rule's own severity variant (AL008) applies unless the config changed it.
                let severity = match (f.severity, config.overrides.contains_key(meta.id)) {
                    (Some(s), false) => s,
                    _ => configured,
                };
                outcome.findings.push(Finding {
                    rule: meta.id.to_string(),
                    severity,
                    file: object.file.to_string(),
                    line: f.line,
                    column: f.col,
                    object: ObjectRef {
                        kind: object.kind.clone(),
                        namespace: object.namespace.clone(),
                        name: object.name.clone(),
                    },
                    message: f.message,
                    fix: f.fix,
                    helm_template: object.helm_source.map(str::to_string),
                });
            }
        }
    }
    if let Some(nodes) = cluster {
        outcome
            .findings
            .extend(super::cluster::check(&objects, nodes, |id, default| {
                config.severity(id, default)
            }));
    }
    outcome.findings.sort_by(|a, b| {
        (&a.file, a.line, a.column, &a.rule).cmp(&(&b.file, b.line, b.column, &b.rule))
    });
    outcome
}

/// Reads every input (files, directories, stdin) and lints it.
pub fn lint_paths(
    inputs: &[PathBuf],
    recursive: bool,
    config: &Config,
    keep_text: bool,
    cluster: Option<&[crate::live::NodeInfo]>,
) -> Outcome {
    let (paths, mut errors) = source::collect_paths(inputs, recursive);
    let mut sources = Vec::with_capacity(paths.len());
    for path in &paths {
        match source::read_source(path) {
            Ok(s) => sources.push(s),
            Err(e) => errors.push(e),
        }
    }
    let mut outcome = lint_sources(sources, config, keep_text, cluster);
    outcome.files = paths.len();
    errors.append(&mut outcome.errors);
    outcome.errors = errors;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_file_and_flags() {
        let mut c = Config::parse(
            "rules:\n  AL013: off\n  al014: error\ndisable: [AL012]\n",
            "c.yaml",
        )
        .unwrap();
        assert_eq!(c.severity("AL013", Severity::Warning), None);
        assert_eq!(c.severity("AL014", Severity::Info), Some(Severity::Error));
        assert_eq!(c.severity("AL012", Severity::Warning), None);
        assert_eq!(c.severity("AL001", Severity::Error), Some(Severity::Error));
        c.apply_flags(&["AL013".into()], &["AL001".into()]).unwrap();
        assert_eq!(
            c.severity("AL013", Severity::Warning),
            Some(Severity::Warning)
        );
        assert_eq!(c.severity("AL001", Severity::Error), None);
        assert!(Config::parse("rules: {AL999: off}\n", "c.yaml").is_err());
        assert!(Config::parse("rules: {AL001: loud}\n", "c.yaml").is_err());
        assert!(c.apply_flags(&[], &["nope".into()]).is_err());
    }
}
