//! AL020 control-plane-untolerated finds a workload required to run on control-plane nodes
//! without tolerating their taint.
use crate::affinity::{required_terms, requirements};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL020",
    name: "control-plane-untolerated",
    severity: Severity::Warning,
    summary: "required to run on control-plane nodes without tolerating their taint",
    doc: "## What it does
Flags a pod that may only run on control-plane nodes (its `nodeSelector`, or every required
node-affinity term, asks for `node-role.kubernetes.io/control-plane` or
`node-role.kubernetes.io/master`) but tolerates neither control-plane taint:
`node-role.kubernetes.io/control-plane:NoSchedule` (kubeadm 1.24+, kind, most managed
distributions) nor `node-role.kubernetes.io/master:NoSchedule` (kubeadm before 1.25,
OpenShift).

## When it does not fire
- The pod tolerates either taint, or every `NoSchedule` taint (`operator: Exists` without a
  key, with no effect or `NoSchedule`).
- A term that also admits other nodes (a term without the role key: the pod can run
  elsewhere).
- `DoesNotExist`/`NotIn` on the role key: that keeps the pod off control planes.
- A kustomize patch (a workload without its selector, a pod spec without containers or a
  container without an image): it adds the affinity, and its base has the tolerations.

## Why it matters
Every node the pod may use refuses it: it stays Pending with `untolerated taint
{node-role.kubernetes.io/control-plane: }` on the control planes and `didn't match Pod's node
affinity/selector` on the rest. Clusters whose control planes are untainted (a single-node
kind or k3s cluster) hide the mistake until the manifest reaches a real one.

## Example
```yaml
nodeSelector: {node-role.kubernetes.io/control-plane: \"\"}
```

## Fix
Tolerate the control-plane taint:
```yaml
tolerations:
- {key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}
```",
};

#[derive(Debug)]
pub struct Al020;

const CONTROL_PLANE: &str = "node-role.kubernetes.io/control-plane";
const MASTER: &str = "node-role.kubernetes.io/master";

fn is_role(key: &str) -> bool {
    key == CONTROL_PLANE || key == MASTER
}

/// Whether the pod tolerates a control-plane role taint (`key:NoSchedule`, no value).
fn tolerates_role_taint(spec: &Node) -> bool {
    spec.get("tolerations")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .any(|t| {
            let field = |k: &str| t.get(k).and_then(Node::as_str).unwrap_or_default();
            let exists = field("operator") == "Exists";
            let key_ok = is_role(field("key")) || (field("key").is_empty() && exists);
            let value_ok = exists || field("value").is_empty();
            let effect_ok = matches!(field("effect"), "" | "NoSchedule");
            key_ok && value_ok && effect_ok
        })
}

impl Rule for Al020 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        // A kustomize patch that adds the affinity leaves the tolerations to its base.
        if cx.object.is_patch() || crate::podspec::app_containers(spec).is_empty() {
            return;
        }
        let selector_key = spec
            .get("nodeSelector")
            .map(Node::entries)
            .unwrap_or_default()
            .iter()
            .map(|(k, _)| k)
            .find(|k| k.as_str().is_some_and(is_role));
        let terms = required_terms(spec).map(|(_, t)| t).unwrap_or_default();
        let every_term_a_role = !terms.is_empty()
            && terms.iter().all(|term| {
                requirements(term)
                    .iter()
                    .any(|r| is_role(&r.key) && matches!(r.op.as_str(), "Exists" | "In"))
            });
        let at = match (selector_key, every_term_a_role) {
            (Some(key), _) => key,
            (None, true) => &terms[0],
            (None, false) => return,
        };
        if tolerates_role_taint(spec) {
            return;
        }
        out.push(
            RawFinding::at(
                at,
                format!(
                    "the pod may only run on control-plane nodes, and tolerates neither {CONTROL_PLANE}:NoSchedule nor {MASTER}:NoSchedule, the taints control planes carry: it stays Pending (unless the cluster's control planes are untainted, as on a single-node kind or k3s cluster)"
                ),
            )
            .with_fix(format!(
                "tolerations: [{{key: {CONTROL_PLANE}, operator: Exists, effect: NoSchedule}}]"
            )),
        );
    }
}
