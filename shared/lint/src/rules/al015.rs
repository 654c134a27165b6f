//! AL015 duplicate-key finds a mapping key written twice: kubectl applies the last value,
//! other tools the first.
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Scope, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL015",
    name: "duplicate-key",
    severity: Severity::Warning,
    summary: "a mapping key written twice: kubectl applies the last value, other tools the first",
    doc: "## What it does
Flags a mapping key that appears twice in the same mapping of an object, anywhere in it.
The rest of the linter reads the object the way kubectl applies it: the last value wins.

## When it does not fire
Keys in different mappings (`name` in two containers) are not duplicates.

## Why it matters
kubectl keeps the last value and drops the first without a word, while other tools (and
readers) see the first. A second `affinity:` added lower down silently replaces the
reviewed one — for instance with split terms that lint clean only in the copy nobody reads.

## Example
```yaml
spec:
  affinity: {nodeAffinity: ...}    # reviewed
  containers: [...]
  affinity: {nodeAffinity: ...}    # what kubectl applies
```

## Fix
Keep one of the two keys.",
};

#[derive(Debug)]
pub struct Al015;

impl Rule for Al015 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn scope(&self) -> Scope {
        Scope::Object
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        for d in &cx.object.duplicates {
            out.push(RawFinding {
                line: d.line,
                col: d.col,
                message: format!(
                    "{:?} is written twice in this mapping (first on line {}): kubectl applies this later value and drops the first",
                    d.key, d.first_line
                ),
                fix: Some(format!("remove one of the two {:?} keys", d.key)),
                severity: None,
                text_fix: None,
                no_text_fix: None,
                unless_selected: None,
            });
        }
    }
}
