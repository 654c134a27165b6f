//! AL010 gpu-rollout-surge.
use crate::gpu::parse_quantity_milli;
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Scope, Severity};
use crate::lint::rules::al007::is_extended;
use crate::lint::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL010",
    name: "gpu-rollout-surge",
    severity: Severity::Info,
    summary: "a GPU Deployment whose rolling update cannot progress without free GPUs",
    doc: "## What it does
For Deployments whose pods request an extended resource (GPUs, TPUs), resolves the rolling
update's `maxSurge` and `maxUnavailable` against the replica count the way the Deployment
controller does (surge rounded up, unavailable rounded down; 25% each by default) and
notes when no old pod may stop before a surge pod runs — so every rollout needs free
accelerators (1 replica with the default strategy is this case). `maxSurge: 0` with
`maxUnavailable: 0` is an error: the API server rejects it.

## When it does not fire
- `strategy: Recreate`, `replicas: 0`, or a strategy that lets an old pod stop first
  (`maxUnavailable` of at least one pod, e.g. 4 replicas with the default 25%).
- Partial objects (a kustomize patch without `spec.selector`).
- Replica counts or strategies that are not literal numbers (templates).

## Why it matters
A surge pod needs a free accelerator: without headroom (or a node autoscaler that adds
some) it stays Pending, and since no old pod may stop, the rollout stalls.

## Example
```yaml
replicas: 1
strategy: {type: RollingUpdate}   # maxSurge 25% -> 1 pod, maxUnavailable 25% -> 0 pods
```

## Fix
Without headroom: `rollingUpdate: {maxSurge: 0, maxUnavailable: 1}` (the old pod stops,
then the new one starts on its GPU), or keep one accelerator per surge pod free.",
};

#[derive(Debug)]
pub struct Al010;

/// The first extended resource the pod asks for, and how many per pod.
fn accelerator(spec: &Node) -> Option<(&str, i64)> {
    let mut found: Option<(&str, i64)> = None;
    for c in spec.get("containers").map(Node::items).unwrap_or_default() {
        let resources = c
            .path(&["resources", "limits"])
            .or_else(|| c.path(&["resources", "requests"]));
        for (name, v) in resources.map(Node::entries).unwrap_or_default() {
            let (Some(name), Some(milli)) = (
                name.as_str().filter(|n| is_extended(n)),
                v.scalar_text().and_then(parse_quantity_milli),
            ) else {
                continue;
            };
            if milli <= 0 {
                continue;
            }
            match &mut found {
                Some((n, count)) if *n == name => {
                    *count += i64::try_from(milli / 1000).unwrap_or(i64::MAX)
                }
                Some(_) => {}
                None => found = Some((name, i64::try_from(milli / 1000).unwrap_or(i64::MAX))),
            }
        }
    }
    found
}

/// An int-or-percent resolved against `replicas` (`round_up` for maxSurge).
fn resolve(node: Option<&Node>, replicas: i64, round_up: bool) -> Option<i64> {
    let text = match node {
        Some(n) => n.scalar_text()?.trim(),
        None => "25%",
    };
    match text.strip_suffix('%') {
        Some(p) => {
            let scaled = replicas * p.parse::<i64>().ok()?;
            Some(if round_up {
                (scaled + 99) / 100
            } else {
                scaled / 100
            })
        }
        None => text.parse().ok(),
    }
}

fn is_zero(node: Option<&Node>) -> bool {
    node.and_then(Node::scalar_text)
        .is_some_and(|t| t == "0" || t == "0%")
}

impl Rule for Al010 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn scope(&self) -> Scope {
        Scope::Object
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let root = cx.object.root;
        if cx.object.kind != "Deployment" || root.path(&["spec", "selector"]).is_none() {
            return;
        }
        let Some((resource, per_pod)) = cx.object.pod_spec().and_then(accelerator) else {
            return;
        };
        let strategy = root.path(&["spec", "strategy"]);
        if strategy.and_then(|s| s.get("type")).and_then(Node::as_str) == Some("Recreate") {
            return;
        }
        let rolling = strategy.and_then(|s| s.get("rollingUpdate"));
        let surge = rolling.and_then(|r| r.get("maxSurge"));
        let unavailable = rolling.and_then(|r| r.get("maxUnavailable"));
        let anchor = surge.or(rolling).or(strategy).unwrap_or(root);
        if is_zero(surge) && is_zero(unavailable) {
            out.push(
                RawFinding::at(anchor, "maxSurge and maxUnavailable are both 0: the rollout can never progress (the API server rejects it)")
                    .with_severity(Severity::Error)
                    .with_fix("rollingUpdate: {maxSurge: 0, maxUnavailable: 1}"),
            );
            return;
        }
        let replicas = match root.path(&["spec", "replicas"]) {
            None => 1,
            Some(n) => match n.as_i64() {
                Some(r) => r,
                None => return,
            },
        };
        let (Some(surge_pods), Some(unavailable_pods)) = (
            resolve(surge, replicas, true),
            resolve(unavailable, replicas, false),
        ) else {
            return;
        };
        if replicas <= 0 || surge_pods <= 0 || unavailable_pods > 0 {
            return;
        }
        let written = |n: Option<&Node>| n.and_then(Node::scalar_text).unwrap_or("25%").to_string();
        out.push(
            RawFinding::at(
                anchor,
                format!(
                    "a rollout of this {replicas}-replica Deployment needs {} free {resource} before any old pod stops (maxSurge {} = {surge_pods} pod{}, maxUnavailable {} = 0 pods): without that headroom the new pods stay Pending and the rollout stalls",
                    surge_pods * per_pod.max(1),
                    written(surge),
                    if surge_pods == 1 { "" } else { "s" },
                    written(unavailable),
                ),
            )
            .with_fix("without headroom: rollingUpdate: {maxSurge: 0, maxUnavailable: 1}"),
        );
    }
}
