//! AL017 retired-node-role-and finds a required term needs both the retired master role
//! label and the control-plane one.
use crate::affinity::{Req, required_terms, requirements};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL017",
    name: "retired-node-role-and",
    severity: Severity::Error,
    summary: "a required term needs both the retired master role label and the control-plane one",
    doc: "## What it does
Flags a required node constraint that needs a node to carry both
`node-role.kubernetes.io/master` and `node-role.kubernetes.io/control-plane`: in one
required node-affinity term, or in the `nodeSelector` together with a term (the scheduler
ANDs the two).

kubeadm labelled control-plane nodes `node-role.kubernetes.io/master` until 1.20, both keys
from 1.20 to 1.23, and only `node-role.kubernetes.io/control-plane` since 1.24 (the master
taint followed in 1.25, see AL016). A manifest written during the transition that requires
both keys in one term, where it meant either, matches no node of a current kubeadm, kind or
managed cluster: a DaemonSet runs nowhere, a Deployment stays Pending.

## When it does not fire
- The keys are in different terms (OR-ed: the usual way to reach old and new control
  planes), or one of them is a `DoesNotExist`/`NotIn` requirement.
- A `nodeSelector` or a term that needs only one of the keys. Distributions that still set
  `node-role.kubernetes.io/master` (OpenShift, k3s, RKE2 set both keys on their control
  planes, so on them the AND matches; the finding says so) are why a single retired key is
  not flagged.

## Why it matters
The pod's required constraint is never satisfiable on the clusters most of the ecosystem
runs, and nothing says so: the DaemonSet reports 0 desired pods, the Deployment's pods sit
in Pending with `didn't match Pod's node affinity/selector`.

## Example
```yaml
nodeSelectorTerms:
- matchExpressions:
  - {key: node-role.kubernetes.io/master, operator: Exists}
  - {key: node-role.kubernetes.io/control-plane, operator: Exists}
```

## Fix
One term per key, OR-ed:
```yaml
nodeSelectorTerms:
- matchExpressions:
  - {key: node-role.kubernetes.io/control-plane, operator: Exists}
- matchExpressions:
  - {key: node-role.kubernetes.io/master, operator: Exists}
```",
};

#[derive(Debug)]
pub struct Al017;

const MASTER: &str = "node-role.kubernetes.io/master";
const CONTROL_PLANE: &str = "node-role.kubernetes.io/control-plane";

/// Whether a requirement needs the key on the node (`Exists`, `In`; not `NotIn`, not
/// `DoesNotExist`).
fn needs(req: &Req<'_>, key: &str) -> bool {
    req.key == key && matches!(req.op.as_str(), "Exists" | "In" | "Gt" | "Lt")
}

impl Rule for Al017 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        // The nodeSelector's keys, with where they are written.
        let selector: Vec<(&str, &Node)> = spec
            .get("nodeSelector")
            .map(Node::entries)
            .unwrap_or_default()
            .iter()
            .filter_map(|(k, _)| k.as_str().map(|s| (s, k)))
            .collect();
        let in_selector = |key: &str| selector.iter().find(|(k, _)| *k == key).map(|(_, n)| *n);
        let message = |where_: &str| {
            format!(
                "{where_} needs both {MASTER} and {CONTROL_PLANE}: kubeadm removed the master label in 1.24, so no kubeadm, kind or managed-cluster node carries both and the pod is placed nowhere (only OpenShift, k3s and RKE2 control planes carry both); put each key in its own term, OR-ed"
            )
        };
        let terms = required_terms(spec).map(|(_, t)| t).unwrap_or_default();
        if terms.is_empty() {
            if let (Some(master), Some(_)) = (in_selector(MASTER), in_selector(CONTROL_PLANE)) {
                out.push(RawFinding::at(master, message("the nodeSelector")));
            }
            return;
        }
        for term in terms {
            let reqs = requirements(term);
            let master = reqs
                .iter()
                .find(|r| needs(r, MASTER))
                .map(|r| r.node)
                .or_else(|| in_selector(MASTER));
            let control_plane = reqs.iter().any(|r| needs(r, CONTROL_PLANE))
                || in_selector(CONTROL_PLANE).is_some();
            if let (Some(at), true) = (master, control_plane) {
                let where_ = if reqs.iter().any(|r| needs(r, MASTER))
                    && reqs.iter().any(|r| needs(r, CONTROL_PLANE))
                {
                    "this required term"
                } else {
                    "this required term with the nodeSelector"
                };
                out.push(RawFinding::at(at, message(where_)));
            }
        }
    }
}
