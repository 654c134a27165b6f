//! AL016 toleration-matches-no-taint finds a toleration for a retired or misspelled
//! well-known taint key: it matches no taint.
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL016",
    name: "toleration-matches-no-taint",
    severity: Severity::Warning,
    summary: "a toleration for a retired or misspelled well-known taint key: it matches no taint",
    doc: "## What it does
Flags tolerations whose key is a well-known taint key as it was once spelled, or misspelled,
when the pod does not also tolerate the key nodes carry today:
- `node.alpha.kubernetes.io/notReady` and `node.alpha.kubernetes.io/unreachable`, replaced by
  `node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable` (Kubernetes 1.13 taints
  nodes only with the new keys), and `node.kubernetes.io/notReady`;
- a GPU vendor's resource name without its domain (`nvidia/gpu` for `nvidia.com/gpu`,
  `amd/gpu` for `amd.com/gpu`);
- `node-role.kubernetes.io/master`, the control-plane taint kubeadm applied until 1.24 and
  dropped in 1.25 for `node-role.kubernetes.io/control-plane` (OpenShift still uses it: the
  finding says so, and the fix adds the current key rather than replacing the old one). A
  DaemonSet meant for every node that tolerates only the master taint skips every
  control-plane node of a current cluster.

## When it does not fire
- The master taint in an OpenShift payload, where control planes still carry it: an object
  in an `openshift-*` namespace, annotated for the release payload
  (`include.release.openshift.io/*`, `release.openshift.io/*`, `capability.openshift.io/*`),
  of an `*.openshift.io` API group, or an OLM ClusterServiceVersion.
- The pod tolerates the current key too (manifests that serve old and new clusters list
  both), or tolerates every taint of the toleration's effect (`operator: Exists` without a
  key, with no effect or the same one: a key-less `Exists` for `NoSchedule` does not cover
  the `NoExecute` not-ready taint).
- Any other key: a taint an admin invented is the admin's to name.

## Why it matters
A toleration that matches no taint does nothing: a pod meant to ride out a node outage is
evicted after the default 300 seconds (the DefaultTolerationSeconds admission plugin adds
those), and a pod meant for tainted GPU nodes is kept off them.

## Example
```yaml
tolerations:
- {key: node.alpha.kubernetes.io/notReady, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
```

## Fix
Use the current key:
```yaml
- {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
```",
};

#[derive(Debug)]
pub struct Al016;

/// Taint keys as they were once spelled (or are often misspelled), with the key nodes carry.
const RETIRED_KEYS: &[(&str, &str)] = &[
    (
        "node.alpha.kubernetes.io/notReady",
        "node.kubernetes.io/not-ready",
    ),
    (
        "node.alpha.kubernetes.io/unreachable",
        "node.kubernetes.io/unreachable",
    ),
    (
        "node.kubernetes.io/notReady",
        "node.kubernetes.io/not-ready",
    ),
    ("nvidia/gpu", "nvidia.com/gpu"),
    ("amd/gpu", "amd.com/gpu"),
    (
        "node-role.kubernetes.io/master",
        "node-role.kubernetes.io/control-plane",
    ),
];

/// The master taint is retired, not misspelled: kubeadm 1.24 added the control-plane taint
/// beside it and 1.25 dropped it, while OpenShift still taints its control plane with it.
/// So the finding says where it still matches, and the fix adds a toleration.
const ROLE_RETIRED: &str = "node-role.kubernetes.io/master";

impl Rule for Al016 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let tolerations = spec.get("tolerations").map(Node::items).unwrap_or_default();
        fn key_of(t: &Node) -> &str {
            t.get("key").and_then(Node::as_str).unwrap_or_default()
        }
        fn effect_of(t: &Node) -> &str {
            t.get("effect").and_then(Node::as_str).unwrap_or_default()
        }
        // A key-less `Exists` tolerates every taint of its effect (of every effect when it
        // names none): the retired key's toleration is then harmless where the effects agree.
        let tolerated_anyway = |t: &Node| {
            tolerations.iter().any(|all| {
                key_of(all).is_empty()
                    && all.get("operator").and_then(Node::as_str) == Some("Exists")
                    && (effect_of(all).is_empty() || effect_of(all) == effect_of(t))
            })
        };
        for t in tolerations {
            let Some((old, current)) = RETIRED_KEYS.iter().find(|(old, _)| *old == key_of(t))
            else {
                continue;
            };
            if tolerated_anyway(t) || tolerations.iter().any(|other| key_of(other) == *current) {
                continue;
            }
            // OpenShift taints its control planes with the master key today: its own
            // payloads tolerate exactly that, by design.
            if *old == ROLE_RETIRED && cx.object.openshift_payload() {
                continue;
            }
            let at = t.get("key").unwrap_or(t);
            if *old == ROLE_RETIRED {
                let effect = match effect_of(t) {
                    "" => String::new(),
                    e => format!(", effect: {e}"),
                };
                // The same transition's label: a nodeSelector on it matches no kubeadm 1.24+
                // node, so tolerating both taints alone would still leave the pod Pending.
                let selects_master = spec
                    .get("nodeSelector")
                    .and_then(|s| s.get(ROLE_RETIRED))
                    .is_some();
                let label = if selects_master {
                    format!(
                        "; its nodeSelector also requires the {old} label, which kubeadm stopped setting in 1.24: select {current} too (a required node-affinity term for each key), or the pod matches no current control plane"
                    )
                } else {
                    String::new()
                };
                out.push(
                    RawFinding::at(
                        at,
                        format!(
                            "this toleration's key {old} matches no taint of a kubeadm 1.25+ control-plane node: those are tainted {current} (kubeadm dropped the master taint in 1.25; OpenShift keeps it), so the pod stays off current control planes; tolerate both keys{label}"
                        ),
                    )
                    .with_fix(format!(
                        "- {{key: {current}, operator: Exists{effect}}}"
                    )),
                );
                continue;
            }
            out.push(
                RawFinding::at(
                    at,
                    format!(
                        "this toleration's key {old} matches no taint: nodes are tainted {current}"
                    ),
                )
                .with_fix(format!("key: {current}")),
            );
        }
    }
}
