//! AL004 invalid-requirement.
use crate::lint::affinity::{Req, preferred_terms, required_terms, requirements};
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::lint::yaml::Node;
use crate::scheduling::{RequirementField, requirement_problems};

pub static META: RuleMeta = RuleMeta {
    id: "AL004",
    name: "invalid-requirement",
    severity: Severity::Error,
    summary: "a node selector requirement the API server rejects",
    doc: "## What it does
Checks every node selector requirement (required and preferred) with the API server's
rules: `In`/`NotIn` need values, `Exists`/`DoesNotExist` take none, `Gt`/`Lt` take exactly one
integer, the operator must be known, the key must be a valid label key; `matchFields` only
supports `metadata.name` with `In`/`NotIn` and one value.

## Why it matters
The API server rejects the whole object: the rollout never starts.

## Example
```yaml
- {key: accelerator.example.com/gpu-memory, operator: Gt, values: [80gb]}
```

## Fix
Use `In` for strings, or a numeric label (`gpu-memory-gb: \"80\"`) with `Gt`/`Lt`.",
};

#[derive(Debug)]
pub struct Al004;

fn check_term(term: &Node, out: &mut Vec<RawFinding>) {
    for req in requirements(term) {
        report(&req, RequirementField::Expression, out);
    }
    for field in term.get("matchFields").map(Node::items).unwrap_or_default() {
        let req = Req::from_node(field);
        report(&req, RequirementField::Field, out);
    }
}

fn report(req: &Req<'_>, field: RequirementField, out: &mut Vec<RawFinding>) {
    let problems = requirement_problems(&req.to_k8s(), field);
    if !problems.is_empty() {
        out.push(RawFinding::at(
            req.node,
            format!(
                "the API server rejects `{}`: {}",
                req.render(),
                problems.join("; ")
            ),
        ));
    }
}

impl Rule for Al004 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        if let Some((_, terms)) = required_terms(spec) {
            for term in terms {
                check_term(term, out);
            }
        }
        for (_, _, preference) in preferred_terms(spec) {
            if let Some(p) = preference {
                check_term(p, out);
            }
        }
    }
}
