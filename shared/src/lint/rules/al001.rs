//! AL001 split-required-terms.
use crate::lint::affinity::{
    Req, keys, merged_term_yaml, render_term, required_terms, requirements,
};
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
any node matching one condition, typically the wrong GPU.

## When it does not fire
- A real OR over the same keys (`a100` or `h100` in two terms with the same keys).
- An OR of alternative evidence: every term is one presence check — `Exists`, `In` over
  values like `\"true\"`, a `*.present` key, or a node-feature-discovery fact
  (`feature.node.kubernetes.io/...`) — such as \"an NVIDIA PCI device OR an NVIDIA CPU OR
  `nvidia.com/gpu.present`\". Each is enough on its own, so the OR is what was meant.
- An OR the author marked as deliberate with a comment on the `nodeSelectorTerms:` line,
  on a term, or on the comment lines right above them, that says so: `any of`, `either`,
  `alternative`, `OR-ed`/`ORed`, or `OR` in capitals:
  ```yaml
  nodeSelectorTerms:   # any of: GPU nodes of either vendor
  ```
  (or the annotation `affinity-lint.placekit.dev/ignore: AL001` on the workload).

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
        if !disjoint_pair || alternative_evidence(terms) {
            return;
        }
        let mut marked = cx.object.comments_at(key_node.line);
        for term in terms {
            marked.extend(cx.object.comments_at(term.line));
        }
        if marked.iter().any(|c| says_or(c)) {
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

/// Values that say "this feature is there".
const TRUE_VALUES: &[&str] = &["true", "True", "TRUE", "1", "yes", "enabled", "present"];

/// A requirement that only checks that a feature is there, not which pool or model.
fn presence_check(req: &Req<'_>) -> bool {
    let discovered = req.key.starts_with("feature.node.kubernetes.io/")
        || req.key.ends_with(".present")
        || req.key.ends_with("/present");
    match req.op.as_str() {
        "Exists" => true,
        "In" => discovered || req.values.iter().all(|v| TRUE_VALUES.contains(&v.as_str())),
        _ => false,
    }
}

/// Every term is one presence check: alternative evidence for the same fact, OR-ed on
/// purpose.
fn alternative_evidence(terms: &[crate::lint::yaml::Node]) -> bool {
    terms.iter().all(|term| {
        let reqs = requirements(term);
        reqs.len() == 1
            && term.get("matchFields").is_none_or(|f| f.items().is_empty())
            && presence_check(&reqs[0])
    })
}

/// A comment that says the terms are alternatives.
fn says_or(comment: &str) -> bool {
    let words: Vec<&str> = comment
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    // "no alternatives", "not OR-ed": a negation just before the word takes it back.
    let negated = |i: usize| {
        words[i.saturating_sub(2)..i].iter().any(|w| {
            ["no", "not", "never", "without", "none"].contains(&w.to_ascii_lowercase().as_str())
        })
    };
    words.iter().enumerate().any(|(i, w)| {
        let lower = w.to_ascii_lowercase();
        (*w == "OR"
            || ["ored", "or-ed", "either"].contains(&lower.as_str())
            || lower.starts_with("alternative"))
            && !negated(i)
    }) || words.windows(2).enumerate().any(|(i, p)| {
        p[0].eq_ignore_ascii_case("any") && p[1].eq_ignore_ascii_case("of") && !negated(i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_that_mark_an_or() {
        for yes in [
            "any of these",
            "Either vendor",
            "alternative labels",
            "terms are ORed",
            "OR-ed on purpose",
            "GPU OR CPU",
        ] {
            assert!(says_or(yes), "{yes}");
        }
        for no in [
            "the model needs an A100",
            "or",
            "colored nodes",
            "operator",
            "ignored",
        ] {
            assert!(!says_or(no), "{no}");
        }
    }
}
