//! What a rule is and what it reports.

use super::finding::Finding;
pub use super::finding::{RawFinding, Severity, UnlessSelected};
use super::source::Object;

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

/// Everything a rule may look at: one view of an object (the object and one of its pod
/// specs). Rules that judge several objects together (AL011) collect facts per object and
/// are judged by the engine over a whole input group.
#[derive(Debug)]
pub struct Context<'a> {
    pub object: &'a Object<'a>,
    /// The CustomResourceDefinitions given (`--crd-dir`).
    pub crds: &'a crate::crds::CrdSchemas,
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
    /// The rule's judgement of objects together, for a rule that compares objects of one
    /// input group (AL011: a budget against the workloads it selects).
    fn group(&self) -> Option<&dyn GroupRule> {
        None
    }
}

/// A judgement over the objects of one input group (a directory, or one stream). Documents
/// are linted in parallel, so the rule collects facts object by object into facts of its
/// own type, the engine appends them in input order, and the rule judges them once the
/// group's last file is read.
pub trait GroupRule: Sync {
    /// Facts of no object yet.
    fn new_facts(&self) -> Box<dyn GroupFacts>;
    /// Records what one object (its view 0) tells.
    fn collect(&self, object: &Object<'_>, group: &str, facts: &mut dyn GroupFacts);
    /// The findings over everything the group's objects told.
    fn judge(&self, facts: &dyn GroupFacts, severity: Severity) -> Vec<Finding>;
}

/// Rules judged against a live cluster's nodes (`--cluster`): they share the candidate
/// nodes of each workload, so one check judges them all and documents each in [`Self::metas`].
pub trait ClusterCheck: Sync {
    /// The documentation of every rule the check reports.
    fn metas(&self) -> &'static [&'static RuleMeta];
    /// Findings for every workload among `objects` against `nodes`; `enabled` gives a
    /// rule's configured severity from its id and default, `None` when it is off.
    fn check(
        &self,
        objects: &[Object<'_>],
        nodes: &[placekit_core::scheduler::NodeInfo],
        enabled: &dyn Fn(&str, Severity) -> Option<Severity>,
    ) -> Vec<Finding>;
}

/// A group rule's facts: whatever type the rule keeps (it downcasts to it).
pub trait GroupFacts: std::any::Any + Send + std::fmt::Debug {
    /// Appends facts collected later in input order (of the same rule).
    fn append(&mut self, later: Box<dyn GroupFacts>);
}
