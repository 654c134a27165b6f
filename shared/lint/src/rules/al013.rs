//! AL013 tolerate-everything finds a toleration with operator Exists and no key tolerates
//! every taint.
use std::collections::BTreeSet;

use crate::affinity::{Req, required_terms, requirements};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::yaml::Node;

const HOSTNAME: &str = "kubernetes.io/hostname";
/// The role labels of control-plane nodes, current and retired (kubeadm before 1.24).
const CONTROL_PLANE_ROLES: &[&str] = &[
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
];

/// Whether the pod can only go to one node, which it names: a `nodeSelector` on the hostname,
/// or required terms that each name the same single node (`kubernetes.io/hostname In [n]` or
/// `matchFields metadata.name In [n]`).
fn pinned_to_one_node(spec: &Node) -> bool {
    if spec
        .get("nodeSelector")
        .and_then(|s| s.get(HOSTNAME))
        .is_some()
    {
        return true;
    }
    let Some((_, terms)) = required_terms(spec) else {
        return false;
    };
    let mut named: BTreeSet<String> = BTreeSet::new();
    for term in terms {
        let fields: Vec<Req<'_>> = term
            .get("matchFields")
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .map(Req::from_node)
            .collect();
        let one = requirements(term).into_iter().chain(fields).find(|r| {
            (r.key == HOSTNAME || r.key == "metadata.name") && r.op == "In" && r.values.len() == 1
        });
        match one {
            Some(r) => named.insert(r.values[0].clone()),
            None => return false,
        };
    }
    named.len() == 1
}

/// Whether the pod asks for control-plane nodes: its `nodeSelector` names a control-plane
/// role label, or every required term requires one (`Exists` or `In`).
fn on_control_plane(spec: &Node) -> bool {
    let selector = spec.get("nodeSelector");
    if CONTROL_PLANE_ROLES
        .iter()
        .any(|k| selector.and_then(|s| s.get(k)).is_some())
    {
        return true;
    }
    let Some((_, terms)) = required_terms(spec) else {
        return false;
    };
    !terms.is_empty()
        && terms.iter().all(|t| {
            requirements(t).iter().any(|r| {
                CONTROL_PLANE_ROLES.contains(&r.key.as_str())
                    && matches!(r.op.as_str(), "Exists" | "In")
            })
        })
}

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
- Pods pinned to one node by name (every required node-affinity term names the same single
  `kubernetes.io/hostname` or `metadata.name`, or a `nodeSelector` names the hostname):
  node health checks and per-node repair Jobs mean to run on that node whatever its taints.
- Pods placed on the control plane (a `nodeSelector` on `node-role.kubernetes.io/control-plane`
  or `node-role.kubernetes.io/master`, or every required term asking for one of them):
  tolerating the control plane's taints is the point there.

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
        // So does a pod pinned by name to one node (a node health check), and a pod placed
        // on the control plane, whose taints it must tolerate to run there at all.
        if cx.object.kind == "DaemonSet"
            || critical
            || bound
            || pinned_to_one_node(spec)
            || on_control_plane(spec)
        {
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
