//! AL013 tolerate-everything.
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::lint::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL013",
    name: "tolerate-everything",
    severity: Severity::Warning,
    summary: "a toleration with operator Exists and no key tolerates every taint",
    doc: "## What it does
Flags tolerations with `operator: Exists` and no `key`.

## When it does not fire
- DaemonSets: cluster agents (CNI, DNS caches, CSI drivers, device plugins, log shippers)
  must run on every node, tainted or not, so tolerating everything is right for them.
- Pods of the `system-node-critical` or `system-cluster-critical` priority classes, for the
  same reason.
- Pods bound to a node with `nodeName` (debug pods): the scheduler never places them.

## Why it matters
They tolerate every taint: dedicated GPU pools, `NoExecute` evictions for unreachable nodes,
maintenance taints. The workload lands where dedicated taints were meant to keep it out.

## Example
```yaml
tolerations:
- operator: Exists
```

## Fix
Tolerate the taint you mean (or, for an agent that is not a DaemonSet, mark it with
`affinity-lint.placekit.dev/ignore: AL013`):
```yaml
tolerations:
- {key: dedicated, operator: Equal, value: llm-online, effect: NoSchedule}
```",
};

#[derive(Debug)]
pub struct Al013;

impl Rule for Al013 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let critical = spec
            .get("priorityClassName")
            .and_then(Node::as_str)
            .is_some_and(|p| p == "system-node-critical" || p == "system-cluster-critical");
        // A pod bound with `nodeName` never meets the scheduler: it runs on the node it
        // names (a debug pod), whatever the taints keep others from.
        let bound = spec.get("nodeName").and_then(Node::as_str).is_some();
        if cx.object.kind == "DaemonSet" || critical || bound {
            return;
        }
        for t in spec.get("tolerations").map(Node::items).unwrap_or_default() {
            let key = t.get("key").and_then(Node::as_str).unwrap_or_default();
            if key.is_empty() && t.get("operator").and_then(Node::as_str) == Some("Exists") {
                let effect = t.get("effect").and_then(Node::as_str);
                out.push(RawFinding::at(
                    t,
                    match effect {
                        Some(e) => format!("this toleration tolerates every {e} taint, dedicated pools included"),
                        None => "this toleration tolerates every taint: dedicated pools and NoExecute evictions included".to_string(),
                    },
                ));
            }
        }
    }
}
