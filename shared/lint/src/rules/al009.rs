//! AL009 preference-never-holds finds a preferred term that can never hold given the
//! required terms.
use crate::affinity::{
    contradiction, preferred_terms, render_term, required_terms, requirements, tuples,
};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL009",
    name: "preference-never-holds",
    severity: Severity::Warning,
    summary: "a preferred term that can never hold given the required terms",
    doc: "## What it does
Flags a preferred node affinity term that contradicts every required term: no node the pod
may run on can satisfy the preference.

## When it does not fire
- A preference that holds on some node allowed by at least one required term.
- A preference that contradicts itself (AL005's kind of problem, reported there for
  required terms).

## Why it matters
The weight is wasted and the intent (prefer zone-a, prefer H100) silently never applies.

## Example
```yaml
required: gpu-family In [a100]
preferred: gpu-family In [h100]   # never true on an allowed node
```

## Fix
Prefer something the required terms allow, or move the choice into the required terms.",
};

#[derive(Debug)]
pub struct Al009;

impl Rule for Al009 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let Some((_, terms)) = required_terms(spec) else {
            return;
        };
        if terms.is_empty() {
            return;
        }
        for (entry, _, preference) in preferred_terms(spec) {
            let Some(preference) = preference else {
                continue;
            };
            let preferred = requirements(preference);
            if preferred.is_empty() || contradiction(&tuples(&preferred)).is_some() {
                continue;
            }
            let never = terms.iter().all(|t| {
                let required = requirements(t);
                let mut combined = tuples(&required);
                combined.extend(tuples(&preferred));
                contradiction(&tuples(&required)).is_none() && contradiction(&combined).is_some()
            });
            if never {
                out.push(RawFinding::at(
                    entry,
                    format!("the preference ({}) can never hold on a node the required terms allow: its weight is wasted", render_term(&preferred)),
                ));
            }
        }
    }
}
