//! What a rule is and what it reports.

use serde::Serialize;

use super::fix::TextFix;
use super::source::Object;
use super::yaml::Node;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, clap::ValueEnum)]
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

/// A rule's identity and documentation (shown by `affinity-lint rules ID`).
#[derive(Debug, Clone, Copy)]
pub struct RuleMeta {
    /// Stable id, e.g. `AL001`.
    pub id: &'static str,
    /// Short kebab-case name.
    pub name: &'static str,
    pub severity: Severity,
    /// One line.
    pub summary: &'static str,
    /// Markdown with the sections "What it does", "Why it matters", "Example", "Fix".
    pub doc: &'static str,
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
        }
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

/// Everything a rule may look at: one view of an object (the object and one of its pod
/// specs). Rules that judge several objects together (AL011) collect facts per object and
/// are judged by the engine over a whole input group.
#[derive(Debug)]
pub struct Context<'a> {
    pub object: &'a Object<'a>,
}

/// What a rule looks at, so an object with several pod specs is judged once per pod spec
/// by pod-spec rules and once in all by object rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    PodSpec,
    Object,
}

/// A lint rule.
pub trait Rule: Sync {
    fn meta(&self) -> &'static RuleMeta;
    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>);
    fn scope(&self) -> Scope {
        Scope::PodSpec
    }
}
