//! AL001 split-required-terms.
use crate::lint::affinity::{keys, merged_term_yaml, render_term, required_terms, requirements};
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL001",
    name: "split-required-terms",
    severity: Severity::Error,
    summary: "required nodeSelectorTerms split into terms over different keys: they are OR-ed",
    doc: "## What it does
Flags required node affinity whose `nodeSelectorTerms` hold several terms that constrain
different keys (at least two terms share no key).

## Why it matters
Terms are OR-ed; only the expressions inside one term are AND-ed. What was meant as
\"online pool AND A100 AND 80 GB\" becomes \"online pool OR A100 OR 80 GB\": the model lands on
any node matching one condition, typically the wrong GPU. A deliberate OR over the same
keys (`a100` or `h100` in two terms with the same keys) is not flagged.

## Example
```yaml
nodeSelectorTerms:
- matchExpressions: [{key: pool, operator: In, values: [online]}]
- matchExpressions: [{key: accelerator.example.com/gpu-family, operator: In, values: [a100]}]
```

## Fix
Put every expression in one term:
```yaml
nodeSelectorTerms:
- matchExpressions:
  - {key: pool, operator: In, values: [online]}
  - {key: accelerator.example.com/gpu-family, operator: In, values: [a100]}
```",
};

#[derive(Debug)]
pub struct Al001;

impl Rule for Al001 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let Some((key_node, terms)) = required_terms(spec) else {
            return;
        };
        if terms.len() < 2 {
            return;
        }
        let key_sets: Vec<_> = terms.iter().map(keys).collect();
        let disjoint_pair = key_sets.iter().enumerate().any(|(i, a)| {
            !a.is_empty()
                && key_sets[i + 1..]
                    .iter()
                    .any(|b| !b.is_empty() && a.is_disjoint(b))
        });
        if !disjoint_pair {
            return;
        }
        let rendered: Vec<String> = terms
            .iter()
            .map(|t| format!("({})", render_term(&requirements(t))))
            .collect();
        let all: Vec<_> = terms.iter().flat_map(requirements).collect();
        out.push(
            RawFinding::at(
                key_node,
                format!(
                    "{} nodeSelectorTerms constrain different keys and are OR-ed: the scheduler accepts any node matching {}; if every condition is required, they belong in one term",
                    terms.len(),
                    rendered.join(" OR ")
                ),
            )
            .with_fix(merged_term_yaml(&all)),
        );
    }
}
