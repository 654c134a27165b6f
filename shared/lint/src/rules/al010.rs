//! AL010 gpu-rollout-surge finds a GPU Deployment whose rolling update cannot progress
//! (maxSurge and maxUnavailable 0; with --cluster: no free GPUs for the surge).
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Scope, Severity};
use crate::rules::al007::is_extended;
use crate::source::Object;
use crate::yaml::Node;
use placekit_core::model::quantity::parse_quantity_milli;

pub static META: RuleMeta = RuleMeta {
    id: "AL010",
    name: "gpu-rollout-surge",
    severity: Severity::Warning,
    summary: "a GPU Deployment whose rolling update cannot progress (maxSurge and maxUnavailable 0; with --cluster: no free GPUs for the surge)",
    doc: "## What it does
- For any Deployment, offline: an error when `maxSurge` and `maxUnavailable` are both 0
  (the API server rejects it: the rollout could never progress).

For Deployments whose pods request an extended resource (GPUs, TPUs):
- with `--cluster`, resolves `maxSurge` and `maxUnavailable` against the replica count the
  way the Deployment controller does (surge rounded up, unavailable rounded down; 25% each
  by default) and, when no old pod may stop before a surge pod runs (1 replica with the
  default strategy is this case), warns if the candidate nodes do not have the free
  accelerators the surge pods need.

## When it does not fire
- Offline, a surge alone is not reported: whether a free GPU (or a node autoscaler) is
  there is a fact of the cluster, not of the manifest. Run with `--cluster` to check it.
- `strategy: Recreate`, `replicas: 0`, or a strategy that lets an old pod stop first
  (`maxUnavailable` of at least one pod, e.g. 4 replicas with the default 25%).
- Partial objects (a kustomize patch without `spec.selector`), and replica counts or
  strategies that are not literal numbers (templates).

## Why it matters
A surge pod needs a free accelerator: without headroom it stays Pending, and since no old
pod may stop, the rollout stalls.

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
    for c in crate::podspec::app_containers(spec) {
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
            let scaled = replicas.checked_mul(p.parse::<i64>().ok()?)?;
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

/// What a rolling update of a GPU Deployment needs before any old pod may stop.
#[derive(Debug)]
pub struct Headroom<'a> {
    /// Where to point: the strategy, or the object.
    pub anchor: &'a Node,
    pub resource: &'a str,
    /// Accelerators the surge pods need, in units.
    pub needed: i64,
    /// `maxSurge 25% = 1 pod, maxUnavailable 25% = 0 pods`.
    pub why: String,
}

/// The free accelerators a rollout of this Deployment needs before any old pod stops, when
/// no old pod may stop first; `None` when the rollout can progress without headroom.
pub fn headroom<'a>(object: &Object<'a>) -> Option<Headroom<'a>> {
    let root = object.root;
    if object.kind != "Deployment" || root.path(&["spec", "selector"]).is_none() {
        return None;
    }
    let (resource, per_pod) = object.pod_spec().and_then(accelerator)?;
    let strategy = root.path(&["spec", "strategy"]);
    if strategy.and_then(|s| s.get("type")).and_then(Node::as_str) == Some("Recreate") {
        return None;
    }
    let rolling = strategy.and_then(|s| s.get("rollingUpdate"));
    let surge = rolling.and_then(|r| r.get("maxSurge"));
    let unavailable = rolling.and_then(|r| r.get("maxUnavailable"));
    let replicas = match root.path(&["spec", "replicas"]) {
        None => 1,
        Some(n) => n.as_i64()?,
    };
    let surge_pods = resolve(surge, replicas, true)?;
    let unavailable_pods = resolve(unavailable, replicas, false)?;
    if replicas <= 0 || surge_pods <= 0 || unavailable_pods > 0 {
        return None;
    }
    let written = |n: Option<&Node>| n.and_then(Node::scalar_text).unwrap_or("25%").to_string();
    Some(Headroom {
        anchor: surge.or(rolling).or(strategy).unwrap_or(root),
        resource,
        needed: surge_pods.saturating_mul(per_pod.max(1)),
        why: format!(
            "maxSurge {} = {surge_pods} pod{}, maxUnavailable {} = 0 pods",
            written(surge),
            if surge_pods == 1 { "" } else { "s" },
            written(unavailable)
        ),
    })
}

impl Rule for Al010 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn scope(&self) -> Scope {
        Scope::Object
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        // Both 0 is refused by the API server for any Deployment, GPUs or not.
        let root = cx.object.root;
        if cx.object.kind != "Deployment" {
            return;
        }
        let strategy = root.path(&["spec", "strategy"]);
        let rolling = strategy.and_then(|s| s.get("rollingUpdate"));
        let surge = rolling.and_then(|r| r.get("maxSurge"));
        let unavailable = rolling.and_then(|r| r.get("maxUnavailable"));
        if is_zero(surge) && is_zero(unavailable) {
            out.push(
                RawFinding::at(surge.or(rolling).unwrap_or(root), "maxSurge and maxUnavailable are both 0: the rollout can never progress (the API server rejects it)")
                    .with_severity(Severity::Error)
                    .with_fix("rollingUpdate: {maxSurge: 0, maxUnavailable: 1}"),
            );
        }
    }
}

/// With `--cluster`: flags a Deployment whose rollout needs more free accelerators (its
/// surge) than the tolerated candidates have.
pub(super) fn check_live(
    w: &super::cluster_workload::Workload<'_>,
    push: &mut super::cluster_workload::Report<'_>,
) {
    let Some(need) = headroom(w.object).filter(|_| w.object.view == 0) else {
        return;
    };
    let free = super::cluster_workload::free_on(&w.tolerated, need.resource);
    let needed = i128::from(need.needed) * 1000;
    if free < needed {
        push(
            META.id,
            need.anchor,
            format!(
                "a rollout of this Deployment needs {} free {} before any old pod stops ({}), but the {} candidate node(s) have {}: the new pods stay Pending and the rollout stalls",
                need.needed,
                need.resource,
                need.why,
                w.tolerated.len(),
                placekit_core::model::quantity::format_milli(free)
            ),
        );
    }
}
