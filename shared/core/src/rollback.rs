//! The rollback planner: from a snapshot node and the node as it is now, what to restore.
//!
//! For every label key and taint the snapshot changed:
//! - if the node still has exactly what the command set, restore the before-value (or
//!   remove it if it did not exist before);
//! - if it already has the before-value, there is nothing to do;
//! - otherwise someone changed it since: a **conflict**, reported with the value found and
//!   the value expected, and left alone unless `overwrite_changes` (`--overwrite-changes`), which restores the before-value.
//!
//! A node whose uid changed was deleted and recreated: it is skipped.
//!
//! Every node of the snapshot is compared with the live node, whatever outcome the journal
//! recorded: a lost answer can leave a change made that the journal calls failed, and the
//! key-by-key comparison is exact, so it is safe. The recorded outcome only changes what a
//! difference means: for a node recorded as applied, unknown or without an outcome (the
//! run died mid-flight), a value that is neither the one set nor the one before is a
//! conflict; for a node recorded as not written (conflict, failed, skipped, not attempted),
//! it is someone else's change and not ours to report or to force — only the values this
//! command would have set are restored.

use serde::Serialize;

use crate::plan::{LabelDelta, NodePlan, NodeState};
use crate::snapshot::{OutcomeKind, SnapshotNode};
use crate::syntax::Taint;

/// A key or taint that someone changed after the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollbackConflict {
    /// `label <key>` or `taint <key>:<effect>`.
    pub item: String,
    /// What the node has now (`None`: absent).
    pub found: Option<String>,
    /// What the command set and rollback expected to find (`None`: absent).
    pub expected: Option<String>,
    /// Whether `--overwrite-changes` made the rollback restore it anyway.
    pub forced: bool,
}

/// What rollback does with one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum NodeRollback {
    /// Write `plan` (which may be a no-op if everything is already restored or in conflict).
    #[serde(rename_all = "camelCase")]
    Restore {
        plan: Box<NodePlan>,
        conflicts: Vec<RollbackConflict>,
    },
    /// The node's uid differs from the snapshot: it was deleted and recreated.
    #[serde(rename_all = "camelCase")]
    Recreated {
        node: String,
        snapshot_uid: String,
        current_uid: String,
    },
    /// The node no longer exists.
    #[serde(rename_all = "camelCase")]
    Missing { node: String },
    /// The journal shows the original command wrote nothing to this node.
    #[serde(rename_all = "camelCase")]
    NothingApplied { node: String, outcome: OutcomeKind },
}

impl NodeRollback {
    pub fn node(&self) -> &str {
        match self {
            NodeRollback::Restore { plan, .. } => plan.node(),
            NodeRollback::Recreated { node, .. }
            | NodeRollback::Missing { node }
            | NodeRollback::NothingApplied { node, .. } => node,
        }
    }

    /// Conflicts left in place (not forced).
    pub fn open_conflicts(&self) -> impl Iterator<Item = &RollbackConflict> {
        let conflicts: &[RollbackConflict] = match self {
            NodeRollback::Restore { conflicts, .. } => conflicts,
            _ => &[],
        };
        conflicts.iter().filter(|c| !c.forced)
    }
}

fn taint_slot(t: &Taint) -> String {
    format!("taint {}:{}", t.key, t.effect)
}

/// Plans the rollback of one snapshot node against its current state.
pub fn plan_node_rollback(
    snap: &SnapshotNode,
    outcome: Option<OutcomeKind>,
    current: Option<&NodeState>,
    force: bool,
) -> NodeRollback {
    let Some(current) = current else {
        return NodeRollback::Missing {
            node: snap.name.clone(),
        };
    };
    if current.uid != snap.uid {
        return NodeRollback::Recreated {
            node: snap.name.clone(),
            snapshot_uid: snap.uid.clone(),
            current_uid: current.uid.clone(),
        };
    }

    let mut conflicts = Vec::new();
    let label_changes = restore_map(
        "label",
        &snap.label_changes,
        &current.labels,
        force,
        &mut conflicts,
    );
    let annotation_changes = restore_map(
        "annotation",
        &snap.annotation_changes,
        &current.annotations,
        force,
        &mut conflicts,
    );

    let mut taints = current.taints.clone();
    let same_slot = |a: &Taint, b: &Taint| a.key == b.key && a.effect == b.effect;
    // Undo additions first, so that a value replaced under --overwrite (recorded as one
    // removal plus one addition of the same key and effect) is restored, not a conflict.
    for added in &snap.taints_added {
        if let Some(i) = taints.iter().position(|t| t.same_as(added)) {
            taints.remove(i);
        } else if let Some(i) = taints.iter().position(|t| same_slot(t, added)) {
            conflicts.push(RollbackConflict {
                item: taint_slot(added),
                found: Some(taints[i].to_string()),
                expected: Some(added.to_string()),
                forced: force,
            });
            if force {
                taints.remove(i);
            }
        }
    }
    for removed in &snap.taints_removed {
        if taints.iter().any(|t| t.same_as(removed)) {
            continue;
        }
        if let Some(i) = taints.iter().position(|t| same_slot(t, removed)) {
            conflicts.push(RollbackConflict {
                item: taint_slot(removed),
                found: Some(taints[i].to_string()),
                expected: None,
                forced: force,
            });
            if force {
                taints[i] = removed.clone();
            }
        } else {
            taints.push(removed.clone());
        }
    }

    let plan = NodePlan {
        before: current.clone(),
        label_changes,
        taints_after: taints,
        annotation_changes,
        blockers: Vec::new(),
        notes: Vec::new(),
    };
    match outcome {
        Some(
            outcome @ (OutcomeKind::Conflict
            | OutcomeKind::Failed
            | OutcomeKind::Skipped
            | OutcomeKind::NotAttempted),
        ) => {
            // Recorded as not written: differences are someone else's. Restore only what
            // this command evidently set (the journal was wrong), never by an override.
            if force {
                return plan_node_rollback(snap, Some(outcome), Some(current), false);
            }
            if plan.is_noop() {
                NodeRollback::NothingApplied {
                    node: snap.name.clone(),
                    outcome,
                }
            } else {
                NodeRollback::Restore {
                    plan: Box::new(plan),
                    conflicts: Vec::new(),
                }
            }
        }
        _ => NodeRollback::Restore {
            plan: Box::new(plan),
            conflicts,
        },
    }
}

/// The deltas that restore one string map, recording conflicts (see the module docs).
fn restore_map(
    what: &str,
    deltas: &[LabelDelta],
    current: &std::collections::BTreeMap<String, String>,
    force: bool,
    conflicts: &mut Vec<RollbackConflict>,
) -> Vec<LabelDelta> {
    let mut out = Vec::new();
    for delta in deltas {
        let now = current.get(&delta.key).cloned();
        let restore = if now == delta.after {
            true
        } else if now == delta.before {
            false
        } else {
            conflicts.push(RollbackConflict {
                item: format!("{what} {}", delta.key),
                found: now.clone(),
                expected: delta.after.clone(),
                forced: force,
            });
            force
        };
        if restore {
            out.push(LabelDelta {
                key: delta.key.clone(),
                before: now,
                after: delta.before.clone(),
            });
        }
    }
    out
}

/// What a rollback of `node` would write that the API server refuses — a snapshot edited
/// by hand — as `node/NAME: ...` messages, checked before anything is written.
pub fn restore_problems(node: &SnapshotNode) -> Vec<String> {
    let restored = node
        .label_changes
        .iter()
        .filter_map(|d| Some((d.key.as_str(), d.before.as_deref()?)));
    let taints = node
        .taints_before
        .iter()
        .map(|t| (t.key.as_str(), t.value_str()));
    // A node name goes into the request path: `gpu-2/proxy/configz` would make a rollback
    // GET the node's proxy with the user's credentials. Checked as the API server checks
    // a node's name (a DNS subdomain), before anything else about the node.
    let name_errors = crate::validation::dns1123_subdomain_errors(&node.name);
    if !name_errors.is_empty() {
        return vec![format!(
            "node name {:?}: {}",
            node.name,
            name_errors.join("; ")
        )];
    }
    crate::validation::label_map_errors("metadata.labels", restored)
        .into_iter()
        .chain(crate::validation::label_map_errors("spec.taints", taints))
        .map(|e| format!("node/{}: {e}", node.name))
        .collect()
}

/// The warnings `set` gives for the keys a rollback restores (a `kubernetes.io/hostname`
/// put back by hand, an isolation key outside node-restriction...).
pub fn restore_warnings(node: &SnapshotNode) -> Vec<String> {
    node.label_changes
        .iter()
        .filter(|d| d.before.is_some())
        .flat_map(|d| crate::policy::label_warnings(&d.key))
        .map(|w| format!("node/{}: {w}", node.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ChangeRequest, apply_to_state, plan_node};
    use crate::syntax::{TaintEffect, TaintMatcher, parse_label_changes};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn node(labels: &[(&str, &str)], taints: Vec<Taint>) -> NodeState {
        NodeState {
            name: "gpu-1".into(),
            uid: "uid-1".into(),
            resource_version: "10".into(),
            annotations: BTreeMap::new(),
            nfd_keys: Default::default(),
            other_annotations: false,
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            taints,
        }
    }

    /// Runs a command on `before`, returning its snapshot node and the node after it.
    fn run(before: &NodeState, request: &ChangeRequest) -> (SnapshotNode, NodeState) {
        let plan = plan_node(before, request);
        let after = apply_to_state(before, &plan.json_patch()).unwrap();
        (SnapshotNode::from(&plan), after)
    }

    fn set(specs: &[&str]) -> ChangeRequest {
        ChangeRequest {
            labels: parse_label_changes(specs).unwrap(),
            overwrite: true,
            ..Default::default()
        }
    }

    fn restore(rb: &NodeRollback) -> (&NodePlan, &[RollbackConflict]) {
        match rb {
            NodeRollback::Restore { plan, conflicts } => (plan, conflicts),
            other => panic!("expected restore, got {other:?}"),
        }
    }

    #[test]
    fn table() {
        struct Case {
            name: &'static str,
            /// Change made by someone else after the command.
            meddle: fn(&mut NodeState),
            force: bool,
            /// Expected labels after the rollback is applied.
            expect_labels: &'static [(&'static str, &'static str)],
            expect_conflicts: usize,
        }
        let cases = [
            Case {
                name: "restore",
                meddle: |_| {},
                force: false,
                expect_labels: &[("pool", "batch"), ("zone", "a")],
                expect_conflicts: 0,
            },
            Case {
                name: "already restored",
                meddle: |n| {
                    n.labels.insert("pool".into(), "batch".into());
                    n.labels.remove("gpu");
                    n.labels.insert("zone".into(), "a".into());
                },
                force: false,
                expect_labels: &[("pool", "batch"), ("zone", "a")],
                expect_conflicts: 0,
            },
            Case {
                name: "conflict: value changed by someone else",
                meddle: |n| {
                    n.labels.insert("pool".into(), "training".into());
                },
                force: false,
                expect_labels: &[("pool", "training"), ("zone", "a")],
                expect_conflicts: 1,
            },
            Case {
                name: "conflict: key removed by someone else",
                meddle: |n| {
                    n.labels.remove("gpu");
                    n.labels.remove("pool");
                },
                force: false,
                expect_labels: &[("zone", "a")],
                expect_conflicts: 1,
            },
            Case {
                name: "force restores conflicting keys",
                meddle: |n| {
                    n.labels.insert("pool".into(), "training".into());
                    n.labels.insert("gpu".into(), "h100".into());
                },
                force: true,
                expect_labels: &[("pool", "batch"), ("zone", "a")],
                expect_conflicts: 2,
            },
            Case {
                name: "unrelated labels are kept",
                meddle: |n| {
                    n.labels.insert("unrelated".into(), "x".into());
                },
                force: false,
                expect_labels: &[("pool", "batch"), ("unrelated", "x"), ("zone", "a")],
                expect_conflicts: 0,
            },
        ];
        for case in cases {
            let before = node(&[("pool", "batch"), ("zone", "a")], vec![]);
            let (snap, mut now) = run(&before, &set(&["pool=online", "gpu=a100", "zone-"]));
            (case.meddle)(&mut now);
            let rb = plan_node_rollback(&snap, Some(OutcomeKind::Applied), Some(&now), case.force);
            let (plan, conflicts) = restore(&rb);
            assert_eq!(conflicts.len(), case.expect_conflicts, "{}", case.name);
            assert!(
                conflicts.iter().all(|c| c.forced == case.force),
                "{}",
                case.name
            );
            let restored = apply_to_state(&now, &plan.json_patch()).unwrap();
            let expected: BTreeMap<String, String> = case
                .expect_labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(restored.labels, expected, "{}", case.name);
        }
    }

    #[test]
    fn conflict_reports_found_and_expected() {
        let before = node(&[("pool", "batch")], vec![]);
        let (snap, mut now) = run(&before, &set(&["pool=online"]));
        now.labels.insert("pool".into(), "training".into());
        let rb = plan_node_rollback(&snap, Some(OutcomeKind::Applied), Some(&now), false);
        assert_eq!(
            rb.open_conflicts().cloned().collect::<Vec<_>>(),
            vec![RollbackConflict {
                item: "label pool".into(),
                found: Some("training".into()),
                expected: Some("online".into()),
                forced: false
            }]
        );
    }

    #[test]
    fn node_recreated_is_skipped() {
        let before = node(&[("pool", "batch")], vec![]);
        let (snap, mut now) = run(&before, &set(&["pool=online"]));
        now.uid = "uid-2".into();
        assert!(matches!(
            plan_node_rollback(&snap, Some(OutcomeKind::Applied), Some(&now), true),
            NodeRollback::Recreated { .. }
        ));
        assert!(matches!(
            plan_node_rollback(&snap, Some(OutcomeKind::Applied), None, true),
            NodeRollback::Missing { .. }
        ));
    }

    #[test]
    fn every_node_is_compared_whatever_its_recorded_outcome() {
        let before = node(&[("pool", "batch")], vec![]);
        let (snap, after) = run(&before, &set(&["pool=online"]));
        let mut someone_else = before.clone();
        someone_else.labels.insert("pool".into(), "training".into());
        for outcome in [
            OutcomeKind::Conflict,
            OutcomeKind::Failed,
            OutcomeKind::Skipped,
            OutcomeKind::NotAttempted,
        ] {
            // Really not written: nothing to undo.
            assert!(matches!(
                plan_node_rollback(&snap, Some(outcome), Some(&before), false),
                NodeRollback::NothingApplied { .. }
            ));
            // Someone else's value is neither reported nor forced.
            for force in [false, true] {
                assert!(matches!(
                    plan_node_rollback(&snap, Some(outcome), Some(&someone_else), force),
                    NodeRollback::NothingApplied { .. }
                ));
            }
            // The journal said not written, but the node has the command's value (a lost
            // answer): restored.
            let rb = plan_node_rollback(&snap, Some(outcome), Some(&after), false);
            let (plan, conflicts) = restore(&rb);
            assert_eq!(plan.labels_after()["pool"], "batch", "{outcome:?}");
            assert!(conflicts.is_empty());
        }
        let rb = plan_node_rollback(&snap, Some(OutcomeKind::Unknown), Some(&after), false);
        assert_eq!(restore(&rb).0.labels_after()["pool"], "batch");
        // Unknown outcome (the run died): compared key by key; here the write never landed.
        let rb = plan_node_rollback(&snap, None, Some(&before), false);
        let (plan, conflicts) = restore(&rb);
        assert!(plan.is_noop() && conflicts.is_empty());
    }

    #[test]
    fn taints_round_trip_including_overwritten_values() {
        let old = Taint {
            time_added: Some("2026-01-01T00:00:00Z".into()),
            ..Taint::new("dedicated", "batch", TaintEffect::NoSchedule)
        };
        let keep = Taint::new("other", "", TaintEffect::NoExecute);
        let before = node(&[], vec![old.clone(), keep.clone()]);
        let request = ChangeRequest {
            add_taints: vec![Taint::new("dedicated", "gpu", TaintEffect::NoSchedule)],
            overwrite: true,
            ..Default::default()
        };
        let (snap, now) = run(&before, &request);
        let rb = plan_node_rollback(&snap, Some(OutcomeKind::Applied), Some(&now), false);
        let (plan, conflicts) = restore(&rb);
        assert!(conflicts.is_empty());
        let restored = apply_to_state(&now, &plan.json_patch()).unwrap();
        assert_eq!(restored.taints.len(), 2);
        assert!(restored.taints.contains(&old) && restored.taints.contains(&keep));
    }

    #[test]
    fn taint_changed_by_someone_else_is_a_conflict() {
        let before = node(&[], vec![]);
        let request = ChangeRequest {
            add_taints: vec![Taint::new("dedicated", "gpu", TaintEffect::NoSchedule)],
            ..Default::default()
        };
        let (snap, mut now) = run(&before, &request);
        now.taints = vec![Taint::new("dedicated", "batch", TaintEffect::NoSchedule)];
        let rb = plan_node_rollback(&snap, Some(OutcomeKind::Applied), Some(&now), false);
        let (plan, conflicts) = restore(&rb);
        assert!(plan.is_noop());
        assert_eq!(
            conflicts[0].found.as_deref(),
            Some("dedicated=batch:NoSchedule")
        );
        let forced = plan_node_rollback(&snap, Some(OutcomeKind::Applied), Some(&now), true);
        assert!(restore(&forced).0.taints_after.is_empty());
    }

    fn arb_labels() -> impl Strategy<Value = BTreeMap<String, String>> {
        proptest::collection::btree_map("[a-d]", "[xyz]{0,2}", 0..4)
    }

    fn arb_taints() -> impl Strategy<Value = Vec<Taint>> {
        proptest::collection::vec(("[a-c]", "[xy]{0,1}", 0..3usize), 0..3).prop_map(|v| {
            let mut out: Vec<Taint> = Vec::new();
            for (k, val, e) in v {
                let effect = [
                    TaintEffect::NoSchedule,
                    TaintEffect::PreferNoSchedule,
                    TaintEffect::NoExecute,
                ][e];
                if !out.iter().any(|t| t.key == k && t.effect == effect) {
                    out.push(Taint::new(k, val, effect));
                }
            }
            out
        })
    }

    proptest! {
        /// A plan applied and then rolled back yields the original labels and taints.
        #[test]
        fn apply_then_rollback_is_identity(
            labels in arb_labels(),
            taints in arb_taints(),
            sets in proptest::collection::btree_map("[a-e]", "[xyz]{1,2}", 0..3),
            removes in proptest::collection::btree_set("[a-e]", 0..2),
            add_taints in arb_taints(),
            remove_taints in proptest::collection::vec(("[a-c]", "[xy]{0,1}", 0..3usize), 0..2),
            annotation in proptest::option::of("[a-z]{1,3}"),
        ) {
            let before = node(&[], taints);
            let before = NodeState {
                labels,
                annotations: [("placekit.dev/imported-labels".to_string(), "old".to_string())].into(),
                ..before
            };
            let mut specs: Vec<String> = sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
            specs.extend(removes.iter().filter(|k| !sets.contains_key(*k)).map(|k| format!("{k}-")));
            let annotation_key = "placekit.dev/imported-labels".to_string();
            let request = ChangeRequest {
                labels: parse_label_changes(&specs).unwrap(),
                annotations: vec![match annotation {
                    Some(value) => crate::syntax::LabelChange::Set { key: annotation_key, value },
                    None => crate::syntax::LabelChange::Remove { key: annotation_key },
                }],
                add_taints,
                remove_taints: remove_taints.into_iter().map(|(k, v, e)| TaintMatcher {
                    key: k,
                    value: Some(v),
                    effect: Some([TaintEffect::NoSchedule, TaintEffect::PreferNoSchedule, TaintEffect::NoExecute][e]),
                }).collect(),
                overwrite: true,
            };
            let (snap, after) = run(&before, &request);
            let rb = plan_node_rollback(&snap, Some(OutcomeKind::Applied), Some(&after), false);
            let (plan, conflicts) = restore(&rb);
            prop_assert!(conflicts.is_empty());
            let restored = apply_to_state(&after, &plan.json_patch()).unwrap();
            prop_assert_eq!(&restored.labels, &before.labels);
            prop_assert_eq!(&restored.annotations, &before.annotations);
            let mut got = restored.taints.clone();
            let mut want = before.taints.clone();
            got.sort_by_key(|t| t.to_string());
            want.sort_by_key(|t| t.to_string());
            prop_assert_eq!(got, want);
        }
    }
}
