//! AL003 empty-term.
use crate::lint::affinity::{preferred_terms, required_terms};
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::lint::yaml::Node;

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
Add the intended expressions, or remove the term.",
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

impl Rule for Al003 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        if let Some((_, terms)) = required_terms(spec) {
            for term in terms.iter().filter(|t| empty(t)) {
                out.push(
                    RawFinding::at(
                        term,
                        "empty required node selector term: it matches no node",
                    )
                    .with_fix("add matchExpressions or remove the term"),
                );
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
