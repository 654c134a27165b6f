//! AL002 term-omits-key finds a required term omits a key that every other term constrains.
use crate::affinity::{keys, marked_as_or, required_terms};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL002",
    name: "term-omits-key",
    severity: Severity::Warning,
    summary: "a required term omits a key that every other term constrains",
    doc: "## What it does
Flags a required node selector term that leaves out a key all the other terms constrain.

## When it does not fire
- Two terms over disjoint keys (that is AL001's case, or deliberate alternative evidence).
- A symmetric OR: every term leaves out a key some other term constrains (`master` in one
  term, `control-plane` in the other, both beside `kubernetes.io/os`; not master OR
  worker; key absent OR key=value beside a shared key). Each term stands for its own
  kind of node: the OR is the design. A slip is one-sided: a term that lacks what the others
  all share while they lack nothing of it.
- A term with no expressions (AL003).
- A deprecated well-known label and its replacement (`beta.kubernetes.io/os` and
  `kubernetes.io/os`, ...) count as one key, so terms that differ only in which of the two
  they use are not missing anything.
- An OR marked as deliberate with a comment, as for AL001 (`nodeSelectorTerms:   # any of:
  ...`), or with `affinity-lint.placekit.dev/ignore: AL002` on the workload.

## Why it matters
Terms are OR-ed, so the term without the key admits nodes the others exclude: a term
`family In [h100]` next to terms `family In [a100], pool In [online]` lets H100 nodes of any
pool in.

## Example
```yaml
nodeSelectorTerms:
- matchExpressions: [{key: pool, operator: In, values: [online]}, {key: family, operator: In, values: [a100]}]
- matchExpressions: [{key: family, operator: In, values: [h100]}]
```

## Fix
Add the missing key to the term (`pool In [online]`), or drop it from all terms if it is
really optional.",
};

#[derive(Debug)]
pub struct Al002;

impl Rule for Al002 {
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
        if marked_as_or(cx.object, key_node, terms) {
            return;
        }
        let key_sets: Vec<_> = terms.iter().map(keys).collect();
        if symmetric(&key_sets) {
            return;
        }
        if terms.len() < 3 {
            // With two terms a missing key is either AL001 (disjoint) or a subset; check pairs.
            if terms.len() == 2 {
                let (a, b) = (&key_sets[0], &key_sets[1]);
                if a.is_disjoint(b) {
                    return;
                }
                for (term, mine, other) in [(&terms[0], a, b), (&terms[1], b, a)] {
                    let missing: Vec<&String> = other.difference(mine).collect();
                    if !missing.is_empty() && !mine.is_empty() {
                        out.push(message(term, &missing));
                    }
                }
            }
            return;
        }
        for (i, term) in terms.iter().enumerate() {
            let others: Vec<_> = key_sets
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, k)| k)
                .collect();
            let common = others.iter().skip(1).fold(others[0].clone(), |acc, k| {
                acc.intersection(k).cloned().collect()
            });
            let missing: Vec<&String> = common
                .iter()
                .filter(|k| !key_sets[i].contains(*k))
                .collect();
            if !missing.is_empty() && !key_sets[i].is_empty() {
                out.push(message(term, &missing));
            }
        }
    }
}

/// Whether every term leaves out some key another term constrains: each term describes its
/// own kind of node, so none is a narrower copy that lost a key.
fn symmetric(key_sets: &[std::collections::BTreeSet<String>]) -> bool {
    key_sets.iter().enumerate().all(|(i, mine)| {
        key_sets
            .iter()
            .enumerate()
            .any(|(j, other)| j != i && other.difference(mine).next().is_some())
    })
}

fn message(term: &crate::yaml::Node, missing: &[&String]) -> RawFinding {
    let list: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
    RawFinding::at(
        term,
        format!(
            "this term does not constrain {} while the other terms do: as terms are OR-ed, it admits nodes the others exclude",
            list.join(", ")
        ),
    )
    .with_fix(format!("add the expression{} for {} to this term", if list.len() == 1 { "" } else { "s" }, list.join(", ")))
}
