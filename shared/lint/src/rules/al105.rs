//! AL105 hostname-spread-too-wide (`--cluster`) finds a hostname spread that caps the
//! replicas below their count, or candidates missing a topologyKey. Judged over the
//! workload and candidate nodes `rules::cluster_workload` computes once for all the
//! `--cluster` rules.
use super::cluster_workload::{Report, Workload, names};
use crate::rule::{RuleMeta, Severity};
use crate::yaml::Node;
use placekit_core::scheduler::NodeInfo;

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

/// Flags spread constraints the candidates cannot honour: candidates without the
/// topologyKey, and a DoNotSchedule hostname spread that caps the replicas.
pub(super) fn check(w: &Workload<'_>, push: &mut Report<'_>) {
    for c in w
        .spec_node
        .get("topologySpreadConstraints")
        .map(Node::items)
        .unwrap_or_default()
    {
        let key = c
            .get("topologyKey")
            .and_then(Node::as_str)
            .unwrap_or_default();
        let hard = c
            .get("whenUnsatisfiable")
            .and_then(Node::as_str)
            .unwrap_or("DoNotSchedule")
            == "DoNotSchedule";
        let missing: Vec<&NodeInfo> = w
            .tolerated
            .iter()
            .copied()
            .filter(|n| !n.labels.contains_key(key))
            .collect();
        if !missing.is_empty() {
            push(
                META.id,
                c,
                if hard {
                    format!(
                        "candidate node(s) {} have no {key} label: with whenUnsatisfiable DoNotSchedule the scheduler places no replica there (didn't match pod topology spread constraints (missing required label))",
                        names(&missing)
                    )
                } else {
                    format!(
                        "candidate node(s) {} have no {key} label: the spread constraint ignores them",
                        names(&missing)
                    )
                },
            );
        }
        if hard && key == "kubernetes.io/hostname" {
            hostname_cap(w, c, push);
        }
    }
}

/// A hostname spread caps each node at maxSkew matching pods above the emptiest counted
/// node. The candidates a replica cannot use (an untolerated taint) still count as nodes
/// under the default nodeTaintsPolicy Ignore, and so do missing domains below minDomains:
/// the minimum stays 0 and the usable nodes take at most maxSkew replicas each. Without
/// such a node the replicas simply spread.
fn hostname_cap(w: &Workload<'_>, c: &Node, push: &mut Report<'_>) {
    let max_skew = c.get("maxSkew").and_then(Node::as_i64).unwrap_or(1).max(1);
    let honours_taints = c.get("nodeTaintsPolicy").and_then(Node::as_str) == Some("Honor");
    let counted = if honours_taints {
        w.tolerated.len()
    } else {
        w.candidates.len()
    };
    let min_domains = c.get("minDomains").and_then(Node::as_i64).unwrap_or(1);
    let pinned_at_zero = (!honours_taints && !w.tainted.is_empty())
        || usize::try_from(min_domains).is_ok_and(|m| m > counted);
    let room = i128::from(max_skew) * w.tolerated.len() as i128;
    if !pinned_at_zero || w.replicas <= room {
        return;
    }
    let why = if !honours_taints && !w.tainted.is_empty() {
        format!(
            "the candidate node(s) the pods cannot use ({}) still count as empty nodes",
            names(&w.tainted)
        )
    } else {
        format!("minDomains {min_domains} is more than the {counted} node(s) the spread counts")
    };
    push(
        META.id,
        c,
        format!(
            "{} replicas with a DoNotSchedule hostname spread (maxSkew {max_skew}) but at most {room} can be placed: {why}, so each of the {} usable node(s) takes at most {max_skew}",
            w.replicas,
            w.tolerated.len()
        ),
    );
}
