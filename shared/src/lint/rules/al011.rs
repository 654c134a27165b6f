//! AL011 pdb-blocks-evictions.
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::lint::rules::al008::selects;
use crate::lint::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL011",
    name: "pdb-blocks-evictions",
    severity: Severity::Warning,
    summary: "a PodDisruptionBudget that allows no eviction of its workload",
    doc: "## What it does
For each PodDisruptionBudget in the input, finds the workloads it selects (same namespace,
selector matching the pod template's labels) and warns when `minAvailable` is at least the
replica count (or 100%), or `maxUnavailable` is 0.

## Why it matters
No voluntary eviction is ever allowed: node drains and cluster upgrades block on these pods.
With one replica, `minAvailable: 1` is exactly this (the seed's warning).

## Example
```yaml
spec: {minAvailable: 1, selector: {matchLabels: {app: llm-inference}}}   # replicas: 1
```

## Fix
Run more replicas than `minAvailable`, or use `maxUnavailable: 1`.",
};

#[derive(Debug)]
pub struct Al011;

fn number(node: &Node) -> Option<(i64, bool)> {
    let text = node.scalar_text()?;
    match text.strip_suffix('%') {
        Some(p) => p.parse().ok().map(|n| (n, true)),
        None => text.parse().ok().map(|n| (n, false)),
    }
}

impl Rule for Al011 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let pdb = cx.object;
        if pdb.kind != "PodDisruptionBudget" {
            return;
        }
        let Some(spec) = pdb.root.get("spec") else {
            return;
        };
        if let Some(max) = spec.get("maxUnavailable")
            && number(max).is_some_and(|(n, _)| n == 0)
        {
            out.push(RawFinding::at(
                max,
                "maxUnavailable: 0 allows no eviction: node drains and upgrades block",
            ));
            return;
        }
        let (Some(min), Some(selector)) = (spec.get("minAvailable"), spec.get("selector")) else {
            return;
        };
        let Some((wanted, percent)) = number(min) else {
            return;
        };
        for workload in cx
            .all
            .iter()
            .filter(|o| o.kind != "PodDisruptionBudget" && o.namespace == pdb.namespace)
        {
            let labels = workload.pod_labels();
            if labels.is_empty() || !selects(selector, &labels) {
                continue;
            }
            let replicas = match workload.kind.as_str() {
                "Pod" => 1,
                _ => workload
                    .root
                    .path(&["spec", "replicas"])
                    .and_then(Node::as_i64)
                    .unwrap_or(1),
            };
            let blocks = if percent {
                wanted >= 100
            } else {
                wanted >= replicas
            };
            if blocks {
                out.push(
                    RawFinding::at(
                        min,
                        format!(
                            "minAvailable {} with {} replica{} of {}: no voluntary eviction is allowed, node drains block",
                            min.scalar_text().unwrap_or("?"),
                            replicas,
                            if replicas == 1 { "" } else { "s" },
                            workload.display()
                        ),
                    )
                    .with_fix("run more replicas than minAvailable, or use maxUnavailable: 1"),
                );
            }
        }
    }
}
