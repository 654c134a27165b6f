//! What rules report: a rule's raw finding at a YAML node, and the finding a run reports
//! with its object, position, severity, message and fix.

use serde::Serialize;

use super::fix::{FileFix, TextFix};
use super::source::Object;
use super::yaml::Node;

/// How bad a finding is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "info" => Some(Severity::Info),
            "warning" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

/// A problem found by a rule, anchored at a node.
#[derive(Debug, Clone)]
pub struct RawFinding {
    pub line: usize,
    pub col: usize,
    pub message: String,
    /// A concrete fix (YAML or a sentence).
    pub fix: Option<String>,
    /// Overrides the rule's severity (AL008's DoNotSchedule vs ScheduleAnyway).
    pub severity: Option<Severity>,
    /// A machine-applicable fix (`--fix`, `--diff`), checked by the engine before use.
    pub text_fix: Option<TextFix>,
    /// Why a rule that fixes this kind of problem has no automatic fix for this one (the
    /// way it is written), so `--fix` can say so instead of passing it by.
    pub no_text_fix: Option<&'static str>,
    /// A finding that stands only if its selector selects no pod of the input group: it is
    /// judged once the group is read (AL008: a term that may keep away from a sibling
    /// workload written beside it).
    pub unless_selected: Option<UnlessSelected>,
}

/// The condition of a finding that stands only if no pod template of its input group (a
/// directory, or one stream) is selected.
#[derive(Debug, Clone)]
pub struct UnlessSelected {
    pub selector: crate::affinity::LabelSelector,
    /// The namespaces the selector looks in, as a pod affinity term's do: `None` for any
    /// (a `namespaceSelector`), else the names (`default` for objects without one).
    pub namespaces: Option<Vec<String>>,
}

/// Which pod template an object's view is: kind, namespace (`default` when the manifest has
/// none), name, and the pod spec's path, joined by NULs. Two renderings of one object (two
/// variants of a chart's StatefulSet in one directory) are the same template.
pub type TemplateKey = Box<str>;

/// The key of `object`'s view.
pub fn template_key(object: &Object<'_>) -> TemplateKey {
    let path = object.pod.as_ref().map_or("", |p| p.path.as_str());
    [
        object.kind.as_str(),
        object.namespace.as_deref().unwrap_or("default"),
        object.name.as_str(),
        path,
    ]
    .join("\0")
    .into()
}

/// A pod template of an input group, for [`UnlessSelected`]: whose it is and the labels of
/// its pods. Kept for every template of a group until the group is judged, so it is two
/// strings, not a map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPods {
    template: TemplateKey,
    /// `key\0value\0key\0value`.
    labels: Box<str>,
}

impl GroupPods {
    /// The pods of `object`'s view, or `None` when they carry no label as far as the
    /// manifest tells (no selector can select them).
    pub fn of(object: &Object<'_>) -> Option<Self> {
        let labels = object.labels_of_pods();
        (!labels.is_empty()).then(|| GroupPods {
            template: template_key(object),
            labels: labels
                .iter()
                .flat_map(|(k, v)| [*k, *v])
                .collect::<Vec<_>>()
                .join("\0")
                .into(),
        })
    }

    fn namespace(&self) -> &str {
        self.template.split('\0').nth(1).unwrap_or_default()
    }

    fn labels(&self) -> Vec<(&str, &str)> {
        let mut parts = self.labels.split('\0');
        std::iter::from_fn(|| Some((parts.next()?, parts.next()?))).collect()
    }
}

impl UnlessSelected {
    /// Whether the selector selects the pods of `other`, a template other than `own` (the
    /// one whose finding this is).
    pub fn selects_another(&self, own: &TemplateKey, other: &GroupPods) -> bool {
        other.template != *own
            && self
                .namespaces
                .as_ref()
                .is_none_or(|names| names.iter().any(|n| n == other.namespace()))
            && self.selector.selects(&other.labels())
    }
}

impl RawFinding {
    pub fn at(node: &Node, message: impl Into<String>) -> Self {
        RawFinding {
            line: node.line,
            col: node.col,
            message: message.into(),
            fix: None,
            severity: None,
            text_fix: None,
            no_text_fix: None,
            unless_selected: None,
        }
    }

    /// The finding stands only if no pod of the input group is selected by `condition`.
    pub fn unless_selected(mut self, condition: UnlessSelected) -> Self {
        self.unless_selected = Some(condition);
        self
    }

    pub fn with_text_fix(mut self, fix: TextFix) -> Self {
        self.text_fix = Some(fix);
        self
    }

    /// No automatic fix here, and why (the text fix the rule could not build).
    pub fn without_text_fix(mut self, why: &'static str) -> Self {
        self.no_text_fix = Some(why);
        self
    }

    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    pub fn with_severity(mut self, severity: Severity) -> Self {
        self.severity = Some(severity);
        self
    }
}

/// The object a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ObjectRef {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

/// A finding with everything a report needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub rule: String,
    pub severity: Severity,
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub object: ObjectRef,
    /// Where in the object the pod spec is (`spec.workerGroupSpecs[0].template.spec`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_spec: Option<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The Helm template the document came from (`# Source:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub helm_template: Option<String>,
    /// Whether `--fix` can apply a fix: `safe`, `unsafe` (needs `--unsafe-fixes`), or
    /// `template` (the file is Helm output: fix the template).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixable: Option<Fixable>,
    /// The source line, for text output (kept only when asked for).
    #[serde(skip)]
    pub source_line: Option<String>,
    /// The verified edits of the fix, in file bytes.
    #[serde(skip)]
    pub edit: Option<FileFix>,
    /// Why there is no automatic fix, when `fixable` is `manual`.
    #[serde(skip)]
    pub manual_reason: Option<&'static str>,
    /// With `--cluster` over several contexts: the context whose nodes the live rule read
    /// (the first name of its cluster).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// What `--fix` can do about a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Fixable {
    Safe,
    Unsafe,
    Template,
    /// The rule fixes such problems, but not written this way: by hand (the reason is in
    /// [`Finding::manual_reason`]).
    Manual,
}

/// A rule's raw finding as a reported one.
pub(crate) fn finding(
    rule: &str,
    severity: Severity,
    object: &Object<'_>,
    f: RawFinding,
    keep_source_line: bool,
) -> Finding {
    Finding {
        rule: rule.to_string(),
        severity,
        file: object.file.to_string(),
        line: f.line,
        column: f.col,
        object: ObjectRef {
            kind: object.kind.clone(),
            namespace: object.namespace.clone(),
            name: object.name.clone(),
        },
        pod_spec: object.pod.as_ref().map(|p| p.path.clone()),
        message: f.message,
        fix: f.fix,
        helm_template: object.helm_source.map(str::to_string),
        source_line: keep_source_line
            .then(|| object.document.line(f.line).map(str::to_string))
            .flatten(),
        fixable: None,
        edit: None,
        manual_reason: None,
        context: None,
    }
}
