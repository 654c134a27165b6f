//! AL005 unsatisfiable-term finds a required term (or nodeSelector) that no node can
//! satisfy.
use crate::affinity::{contradiction, required_terms, requirements, tuples};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL005",
    name: "unsatisfiable-term",
    severity: Severity::Error,
    summary: "a required term (or nodeSelector) that no node can satisfy",
    doc: "## What it does
Flags a required term whose expressions contradict each other (`k In [a]` with `k In [b]`,
`In` and `NotIn` of the same values, `Exists` with `DoesNotExist`, an empty `Gt`/`Lt` range),
and a `nodeSelector` that contradicts every required term.

## When it does not fire
- Requirements with a wrong shape (AL004 reports them) are not judged for contradictions.
- A contradiction between *different* terms: terms are OR-ed, so each only needs to be
  satisfiable on its own.

## Why it matters
No node can ever match: every replica stays Pending with \"didn't match Pod's node affinity\".

## Example
```yaml
- matchExpressions:
  - {key: accelerator.example.com/gpu-family, operator: In, values: [a100]}
  - {key: accelerator.example.com/gpu-family, operator: In, values: [h100]}
```

## Fix
For \"a100 or h100\" use one expression with both values: `values: [a100, h100]`.",
};

#[derive(Debug)]
pub struct Al005;

impl Rule for Al005 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let terms = required_terms(spec).map(|(_, t)| t).unwrap_or_default();
        for term in terms {
            let reqs = requirements(term);
            if let Some(why) = contradiction(&tuples(&reqs)) {
                out.push(RawFinding::at(
                    term,
                    format!("no node can satisfy this required term: {why}"),
                ));
            }
        }
        let Some(selector) = spec.get("nodeSelector") else {
            return;
        };
        let pairs = selector.string_map();
        if pairs.is_empty() || terms.is_empty() {
            return;
        }
        let selector_values: Vec<Vec<String>> =
            pairs.iter().map(|(_, v)| vec![v.to_string()]).collect();
        let all_contradict = terms.iter().all(|term| {
            let reqs = requirements(term);
            let mut combined = tuples(&reqs);
            for ((k, _), values) in pairs.iter().zip(&selector_values) {
                combined.push((k, "In", values.as_slice()));
            }
            contradiction(&combined).is_some() && contradiction(&tuples(&reqs)).is_none()
        });
        if all_contradict {
            out.push(RawFinding::at(selector, "this nodeSelector contradicts every required node affinity term: no node can satisfy both"));
        }
    }
}
