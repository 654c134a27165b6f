//! AL010 gpu-rollout-surge.
use crate::gpu::parse_quantity_milli;
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::lint::rules::al007::is_extended;
use crate::lint::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL010",
    name: "gpu-rollout-surge",
    severity: Severity::Warning,
    summary: "a GPU Deployment whose rolling update needs GPUs it may not have",
    doc: "## What it does
For Deployments whose containers request an extended resource (GPUs): warns when the rolling
update may surge (`maxSurge` > 0; 25% when unset), and reports an error when `maxSurge` and
`maxUnavailable` are both 0.

## Why it matters
A surge pod needs a free GPU: without headroom it stays Pending and the rollout stalls.
Both at 0 is rejected by the API server (the rollout could never progress).

## Example
```yaml
strategy: {type: RollingUpdate}   # maxSurge defaults to 25%
```

## Fix
Without GPU headroom: `rollingUpdate: {maxSurge: 0, maxUnavailable: 1}` (the seed's choice),
or reserve GPUs for the surge first.",
};

#[derive(Debug)]
pub struct Al010;

fn uses_gpu(spec: &Node) -> bool {
    spec.get("containers")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .any(|c| {
            ["requests", "limits"].iter().any(|k| {
                c.path(&["resources", k]).is_some_and(|r| {
                    r.entries().iter().any(|(name, v)| {
                        name.as_str().is_some_and(is_extended)
                            && v.scalar_text()
                                .and_then(parse_quantity_milli)
                                .is_some_and(|q| q > 0)
                    })
                })
            })
        })
}

fn is_zero(node: Option<&Node>) -> Option<bool> {
    let text = node?.scalar_text()?;
    Some(text == "0" || text == "0%")
}

impl Rule for Al010 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        if cx.object.kind != "Deployment" {
            return;
        }
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        if !uses_gpu(spec) {
            return;
        }
        let strategy = cx.object.root.path(&["spec", "strategy"]);
        if strategy.and_then(|s| s.get("type")).and_then(Node::as_str) == Some("Recreate") {
            return;
        }
        let rolling = strategy.and_then(|s| s.get("rollingUpdate"));
        let surge = rolling.and_then(|r| r.get("maxSurge"));
        let unavailable = rolling.and_then(|r| r.get("maxUnavailable"));
        let anchor = surge.or(rolling).or(strategy).unwrap_or(cx.object.root);
        match (is_zero(surge), is_zero(unavailable)) {
            (Some(true), Some(true)) => out.push(
                RawFinding::at(anchor, "maxSurge and maxUnavailable are both 0: the rollout can never progress (the API server rejects it)")
                    .with_severity(Severity::Error)
                    .with_fix("rollingUpdate: {maxSurge: 0, maxUnavailable: 1}"),
            ),
            (Some(true), _) => {}
            _ => out.push(
                RawFinding::at(
                    anchor,
                    format!(
                        "this GPU Deployment surges during rollouts (maxSurge {}): each surge pod needs a free GPU, or it stays Pending and the rollout stalls",
                        surge.and_then(Node::scalar_text).unwrap_or("25% by default")
                    ),
                )
                .with_fix("without GPU headroom: rollingUpdate: {maxSurge: 0, maxUnavailable: 1}"),
            ),
        }
    }
}
