//! AL012 no-revision-history finds a `revisionHistoryLimit: 0` that leaves nothing to roll
//! back to.
use crate::fix::{TextEdit, TextFix, scalar_json};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Scope, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL012",
    name: "no-revision-history",
    severity: Severity::Warning,
    summary: "revisionHistoryLimit: 0 leaves nothing to roll back to",
    doc: "## What it does
Flags workloads with `spec.revisionHistoryLimit: 0`.

## When it does not fire
Any `revisionHistoryLimit` above 0, or none (the default, 10). Mark a workload whose
rollbacks go through git instead with `affinity-lint.placekit.dev/ignore: AL012`.

## Why it matters
`kubectl rollout undo` needs the previous ReplicaSet (or revision); with 0 there is none, so
a canary that goes wrong cannot be rolled back.

## Example
```yaml
spec: {revisionHistoryLimit: 0}
```

## Fix
Keep a few revisions (the default is 10). `--fix --unsafe-fixes` sets 10 (unsafe: 0 may
have been chosen on purpose).",
};

#[derive(Debug)]
pub struct Al012;

impl Rule for Al012 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn scope(&self) -> Scope {
        Scope::Object
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        if let Some(limit) = cx.object.root.path(&["spec", "revisionHistoryLimit"])
            && limit.as_i64() == Some(0)
        {
            out.push(
                RawFinding::at(limit, "revisionHistoryLimit: 0 keeps no old revision: `kubectl rollout undo` has nothing to roll back to")
                    .with_fix("revisionHistoryLimit: 10")
                    .with_text_fix(TextFix {
                        // 0 may have been chosen to save objects: keeping revisions is the
                        // author's call, so the fix is unsafe.
                        safe: false,
                        title: "keep the default 10 revisions".into(),
                        edits: vec![TextEdit::replace(limit, "10")],
                        target: limit,
                        expected: scalar_json("revisionHistoryLimit", "10").unwrap_or_default(),
                    }),
            );
        }
    }
}
