//! AL003 empty-term finds a node selector term with no expressions and no fields matches no
//! node.
use crate::affinity::{preferred_terms, required_terms};
use crate::fix::{TextEdit, TextFix, alone_on_lines};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::source::Document;
use crate::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL003",
    name: "empty-term",
    severity: Severity::Error,
    summary: "a node selector term with no expressions and no fields matches no node",
    doc: "## What it does
Flags a node selector term (required, or a preferred term's preference) with neither
`matchExpressions` nor `matchFields`, or with both empty.

## When it does not fire
A term with `matchFields` only (e.g. `metadata.name In [node-1]`) is not empty.

## Why it matters
An empty term matches no node. As the only required term it leaves every replica Pending;
next to other terms it is dead weight that hides a mistake.

## Example
```yaml
nodeSelectorTerms:
- matchExpressions: []
```

## Fix
Add the intended expressions, or remove the term. `--fix` removes an empty term when other
terms exist (safe: it matched nothing).",
};

#[derive(Debug)]
pub struct Al003;

fn empty(term: &Node) -> bool {
    term.get("matchExpressions")
        .map(Node::items)
        .unwrap_or_default()
        .is_empty()
        && term
            .get("matchFields")
            .map(Node::items)
            .unwrap_or_default()
            .is_empty()
}

/// Removes the lines of empty term `i` when other terms exist. Safe: a term that matches
/// no node adds nothing to an OR.
fn remove_term(doc: &Document, spec: &Node, i: usize) -> Option<TextFix> {
    let (_, terms_node) = crate::affinity::in_affinity(
        spec,
        &[
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
        ],
    )?
    .entry("nodeSelectorTerms")?;
    let term = terms_node.items().get(i)?;
    // The term must have its lines to itself: `  - matchExpressions: []  # comment`.
    if !alone_on_lines(doc, term, term) {
        return None;
    }
    let mut expected = terms_node.to_json();
    expected.as_array_mut()?.remove(i);
    Some(TextFix {
        safe: true,
        title: "remove the empty term".into(),
        edits: vec![TextEdit::delete_lines(term.line, term.end_line)],
        target: terms_node,
        expected,
    })
}

impl Rule for Al003 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        if let Some((_, terms)) = required_terms(spec) {
            let all_empty = terms.iter().all(empty);
            for (i, term) in terms.iter().enumerate().filter(|(_, t)| empty(t)) {
                let mut finding = RawFinding::at(
                    term,
                    "empty required node selector term: it matches no node",
                )
                .with_fix("add matchExpressions or remove the term");
                if !all_empty && let Some(fix) = remove_term(cx.object.document, spec, i) {
                    finding = finding.with_text_fix(fix);
                }
                out.push(finding);
            }
        }
        for (entry, _, preference) in preferred_terms(spec) {
            if preference.is_none_or(empty) {
                out.push(RawFinding::at(
                    preference.unwrap_or(entry),
                    "empty preferred term: it matches no node, its weight is never counted",
                ));
            }
        }
    }
}
