//! AL102 unknown-label-key (`--cluster`) finds a key in a required constraint exists on no
//! node (typo?). Judged over the workload and candidate nodes `rules::cluster_workload`
//! computes once for all the `--cluster` rules.
use super::cluster_workload::{Report, Workload};
use crate::rule::{RuleMeta, Severity};
use crate::yaml::Node;
use placekit_core::suggest::nearest_key;

pub static META: RuleMeta = RuleMeta {
    id: "AL102",
    name: "unknown-label-key",
    severity: Severity::Error,
    summary: "a key in a required constraint exists on no node (typo?)",
    doc: "## What it does
With `--cluster`, flags a label key in a `nodeSelector` or in a required node affinity
expression (`In`, `Exists`, `Gt`, `Lt`) that no live node carries, and names the nearest key
the nodes do carry.

## When it does not fire
- `NotIn` and `DoesNotExist` expressions: a key no node has satisfies them.
- Preferred affinity: a preference for a missing key only costs a score.

## Why it matters
A misspelled key (`topology.kubernetes.io/zones`, `nvidia.com/gpu-product`) matches no node,
so every replica stays Pending with `didn't match Pod's node affinity/selector`.

## Example
```yaml
nodeSelector:
  nvidia.com/gpu-product: NVIDIA-A100-SXM4-80GB
```

## Fix
Use the key the nodes carry, here `nvidia.com/gpu.product`.",
};

/// Flags each required key (nodeSelector, `In`/`Exists`/`Gt`/`Lt` expressions) no node has,
/// with the nearest key the nodes do have; whether there was one.
pub(super) fn check(w: &Workload<'_>, push: &mut Report<'_>) -> bool {
    let mut required_keys: Vec<(&Node, String)> = w
        .spec_node
        .get("nodeSelector")
        .map(Node::entries)
        .unwrap_or_default()
        .iter()
        .filter_map(|(k, _)| Some((k, k.as_str()?.to_string())))
        .collect();
    if let Some((_, terms)) = crate::affinity::required_terms(w.spec_node) {
        for term in terms {
            for req in crate::affinity::requirements(term) {
                if matches!(req.op.as_str(), "In" | "Exists" | "Gt" | "Lt") {
                    required_keys.push((req.node, req.key.clone()));
                }
            }
        }
    }
    let mut typo = false;
    for (at, key) in &required_keys {
        if !w.all_keys.contains(key.as_str()) {
            typo = true;
            let hint = nearest_key(key, w.all_keys.iter().copied())
                .map(|k| format!("; did you mean {k}?"))
                .unwrap_or_default();
            push(
                META.id,
                at,
                format!("no node has the label key {key}{hint}"),
            );
        }
    }
    typo
}
