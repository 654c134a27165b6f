//! `drift -o openmetrics` and `why-pending -o openmetrics`: the reports' facts as metric
//! families (see `placekit_cli::output::openmetrics`), counted per namespace, node and
//! reason, never per pod.

use std::time::Duration;

use placekit_cli::output::openmetrics::{Family, ReadOutcome, read_families, render};
use placekit_cli::output::v1::pending::Standing;
use placekit_cli::output::v1::{PendingItem, PodOnMissingNode};
use placekit_core::scheduler::drift::{Drift, DriftKind};

/// One cluster's `drift`, for the families: `None` when it could not be read.
pub struct ClusterDrift<'a> {
    pub context: Option<&'a str>,
    pub found: Option<(&'a [Drift], usize, &'a [PodOnMissingNode])>,
    pub took: Duration,
}

/// The exposition of `drift` over one or several clusters.
pub fn drift_metrics(clusters: &[ClusterDrift<'_>]) -> String {
    let reads: Vec<ReadOutcome> = clusters
        .iter()
        .map(|c| ReadOutcome {
            context: c.context,
            ok: c.found.is_some(),
            seconds: Some(c.took.as_secs_f64()),
        })
        .collect();
    let mut families = drift_families(clusters);
    families.extend(read_families(&reads));
    render(&families)
}

/// `drift`'s own families (without the read's).
pub fn drift_families(clusters: &[ClusterDrift<'_>]) -> Vec<Family> {
    let mut checked = Family::gauge(
        "placekit_drift_pods_checked",
        "Running pods drift judged against their node.",
    );
    let mut drifted = Family::gauge(
        "placekit_drifted_pods",
        "Running pods whose node no longer satisfies their required node constraints (reason labels: they keep running) or carries a NoExecute taint they do not tolerate (reason taint: they are evicted), per namespace, node and controller (owner_kind, owner).",
    );
    let mut orphans = Family::gauge(
        "placekit_pods_on_missing_nodes",
        "Running pods bound to a node that no longer exists, per namespace.",
    );
    for cluster in clusters {
        let Some((found, pods_checked, missing)) = cluster.found else {
            continue;
        };
        let base: Vec<(&'static str, &str)> = cluster
            .context
            .map(|c| vec![("context", c)])
            .unwrap_or_default();
        checked.set(&base, pods_checked as f64);
        for d in found {
            let reason = match d.kind {
                DriftKind::Labels => "labels",
                DriftKind::Taint => "taint",
            };
            let (owner_kind, owner) = d
                .owner
                .as_ref()
                .map_or(("", ""), |o| (o.kind.as_str(), o.name.as_str()));
            let mut labels = base.clone();
            labels.extend([
                ("namespace", d.namespace.as_str()),
                ("owner_kind", owner_kind),
                ("owner", owner),
                ("node", d.node.as_str()),
                ("reason", reason),
            ]);
            drifted.add(&labels, 1.0);
        }
        for o in missing {
            let mut labels = base.clone();
            labels.push(("namespace", o.namespace.as_str()));
            orphans.add(&labels, 1.0);
        }
    }
    vec![checked, drifted, orphans]
}

/// The exposition of `why-pending` (every pending pod of the namespaces read): pending pods
/// per namespace and verdict class, and the pending members of each gang.
pub fn pending_metrics(items: &[PendingItem], took: Duration) -> String {
    let mut families = pending_families(items);
    families.extend(read_families(&[ReadOutcome {
        context: None,
        ok: true,
        seconds: Some(took.as_secs_f64()),
    }]));
    render(&families)
}

/// `why-pending`'s own families (without the read's).
pub fn pending_families(items: &[PendingItem]) -> Vec<Family> {
    let mut pending = Family::gauge(
        "placekit_pending_pods",
        "Pending pods per namespace and verdict class (the verdict's class in why-pending's report; placeable: some node fits, the scheduler has not bound it yet).",
    );
    let mut unplaceable = Family::gauge(
        "placekit_pending_pods_unplaceable",
        "Pending pods no node can take now, per namespace.",
    );
    let mut gangs = Family::gauge(
        "placekit_pending_gang_pods",
        "Pending pods of each gang (PodGroup), with whether the gang can start (satisfiable).",
    );
    let mut disagreements = Family::gauge(
        "placekit_pending_scheduler_disagreements",
        "Pending pods placekit's model finds room for while kube-scheduler's last word refused them (the model misses something: see why-pending POD).",
    );
    for item in items {
        let class =
            item.verdict
                .as_ref()
                .map(|v| v.class.as_str())
                .unwrap_or(match item.standing {
                    Some(Standing::Gated) => "gated",
                    Some(Standing::OtherScheduler { .. }) => "otherScheduler",
                    _ if item.placeable => "placeable",
                    _ => "unknown",
                });
        let namespace = item.namespace.as_str();
        pending.add(&[("namespace", namespace), ("class", class)], 1.0);
        unplaceable.add(
            &[("namespace", namespace)],
            if item.placeable { 0.0 } else { 1.0 },
        );
        if let Some(gang) = &item.gang {
            let satisfiable = match gang.satisfiable {
                Some(true) => "true",
                Some(false) => "false",
                None => "unknown",
            };
            gangs.add(
                &[("gang", gang.group.as_str()), ("satisfiable", satisfiable)],
                1.0,
            );
        }
        disagreements.add(
            &[("namespace", namespace)],
            if item.disagreement.is_some() {
                1.0
            } else {
                0.0
            },
        );
    }
    vec![pending, unplaceable, gangs, disagreements]
}
