//! Parsers for what users type: kubectl's label-change syntax (`k=v`, `k-`), taint syntax
//! (`k=v:Effect`, `k:Effect`, and their removal forms) and label selectors (the full
//! grammar of `k8s.io/apimachinery/pkg/labels`).
//!
//! All parsers validate with the API server's rules (see [`crate::validation`]) and report
//! the offending input with the API server's wording, so nothing invalid ever reaches a
//! write. None of them panics on any input (property-tested).

mod labels;
mod selector;
mod taints;

pub use labels::{LabelChange, parse_label_changes};
pub use selector::{LabelSelector, Requirement, SelectorOperator};
pub use taints::{
    Taint, TaintEffect, TaintMatcher, TaintSpec, parse_taint, parse_taint_specs,
    parse_taint_to_remove,
};

/// Everything that can be wrong with a label change, taint or selector typed by a user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// `k=v=w` and friends.
    #[error("invalid label spec: {0}")]
    InvalidLabelSpec(String),
    /// Neither `k=v` nor `k-`.
    #[error("unknown label spec: {0} (expected KEY=VALUE to set or KEY- to remove)")]
    UnknownLabelSpec(String),
    /// The key of a label change fails the API server's qualified-name rules.
    #[error("invalid label key in {spec:?}: {}", .messages.join("; "))]
    InvalidLabelKey { spec: String, messages: Vec<String> },
    /// The value of a label change fails the API server's label-value rules.
    #[error("invalid label value: {spec:?}: {}", .messages.join(";"))]
    InvalidLabelValue { spec: String, messages: Vec<String> },
    /// `k=v` and `k-` in one command.
    #[error("can not both modify and remove a label in the same command: {0}")]
    SetAndRemove(String),
    /// `k=a` and `k=b` in one command.
    #[error("label {key} is given twice with different values ({first:?} and {second:?})")]
    ConflictingValues {
        key: String,
        first: String,
        second: String,
    },
    /// A taint spec kubectl would reject (`invalid taint spec: ...`).
    #[error("invalid taint spec: {spec}{}", .detail.as_deref().map(|d| format!(", {d}")).unwrap_or_default())]
    InvalidTaintSpec {
        spec: String,
        detail: Option<String>,
    },
    /// An effect other than NoSchedule, PreferNoSchedule, NoExecute.
    #[error(
        "invalid taint effect: {0}, unsupported taint effect (expected NoSchedule, PreferNoSchedule or NoExecute)"
    )]
    InvalidTaintEffect(String),
    /// Two taints to add with the same key and effect.
    #[error("duplicated taints with the same key and effect: {0}")]
    DuplicateTaint(String),
    /// A label selector that does not parse; the message is the API server's.
    #[error("invalid label selector {selector:?}: {message}")]
    InvalidSelector { selector: String, message: String },
}
