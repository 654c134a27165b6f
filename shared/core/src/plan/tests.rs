//! Unit tests of the parent module.

use super::*;
use crate::syntax::{TaintEffect, parse_label_changes};
use proptest::prelude::*;

fn state(labels: &[(&str, &str)], taints: Vec<Taint>) -> NodeState {
    NodeState {
        name: "gpu-1".into(),
        uid: "uid-1".into(),
        resource_version: "7".into(),
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

fn labels_request(specs: &[&str], overwrite: bool) -> ChangeRequest {
    ChangeRequest {
        labels: parse_label_changes(specs).unwrap(),
        overwrite,
        ..Default::default()
    }
}

#[test]
fn plan_records_before_and_after() {
    let s = state(&[("pool", "batch"), ("zone", "a")], vec![]);
    let plan = plan_node(
        &s,
        &labels_request(&["pool=online", "gpu=a100", "zone-", "absent-"], true),
    );
    assert_eq!(
        plan.label_changes,
        vec![
            LabelDelta {
                key: "gpu".into(),
                before: None,
                after: Some("a100".into())
            },
            LabelDelta {
                key: "pool".into(),
                before: Some("batch".into()),
                after: Some("online".into())
            },
            LabelDelta {
                key: "zone".into(),
                before: Some("a".into()),
                after: None
            },
        ]
    );
    assert!(!plan.is_blocked());
}

#[test]
fn without_overwrite_a_different_value_blocks() {
    let s = state(&[("pool", "batch")], vec![]);
    let plan = plan_node(&s, &labels_request(&["pool=online"], false));
    assert_eq!(
        plan.blockers,
        vec![Blocker::LabelHasOtherValue {
            key: "pool".into(),
            current: "batch".into(),
            wanted: "online".into()
        }]
    );
    let same = plan_node(&s, &labels_request(&["pool=batch"], false));
    assert!(same.is_noop() && !same.is_blocked());
}

#[test]
fn json_patch_tests_every_touched_key_and_escapes_pointers() {
    let s = state(&[("a.io/x", "1"), ("other", "z")], vec![]);
    let plan = plan_node(&s, &labels_request(&["a.io/x=2", "new.io/k=v"], true));
    assert_eq!(
        plan.json_patch(),
        json!([
            {"op": "test", "path": "/metadata/labels/a.io~1x", "value": "1"},
            {"op": "replace", "path": "/metadata/labels/a.io~1x", "value": "2"},
            {"op": "test", "path": "/metadata/labels/new.io~1k", "value": null},
            {"op": "add", "path": "/metadata/labels/new.io~1k", "value": "v"},
        ])
    );
}

#[test]
fn json_patch_for_a_node_without_labels_asserts_the_map_is_absent() {
    let s = state(&[], vec![]);
    let plan = plan_node(&s, &labels_request(&["k=v"], false));
    assert_eq!(
        plan.json_patch(),
        json!([
            {"op": "test", "path": "/metadata/labels", "value": null},
            {"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
        ])
    );
}

#[test]
fn the_import_annotation_is_shown_only_when_it_changes() {
    let mut s = state(&[("pool", "batch")], vec![]);
    s.annotations.insert(
        crate::nfd::IMPORTED_LABELS_ANNOTATION.into(),
        "{\"hook:cpu\":[\"x\"]}".into(),
    );
    let plan = plan_node(&s, &labels_request(&["pool=online"], true));
    let diff = plan.render_diff();
    assert!(!diff.contains("annotation"), "{diff}");
    assert!(diff.contains("+ label pool=online"), "{diff}");
}

#[test]
fn taint_changes_assert_the_whole_list() {
    let existing = Taint {
        time_added: Some("2026-01-01T00:00:00Z".into()),
        ..Taint::new("x", "", TaintEffect::NoExecute)
    };
    let s = state(&[("a", "b")], vec![existing.clone()]);
    let new = Taint::new("dedicated", "gpu", TaintEffect::NoSchedule);
    let plan = plan_node(
        &s,
        &ChangeRequest {
            add_taints: vec![new.clone()],
            ..Default::default()
        },
    );
    assert_eq!(
        plan.json_patch(),
        json!([
            {"op": "test", "path": "/spec/taints", "value": [{"key": "x", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]},
            {"op": "add", "path": "/spec/taints", "value": [
                {"key": "x", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"},
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
            ]},
        ])
    );
    let none = state(&[], vec![]);
    let plan = plan_node(
        &none,
        &ChangeRequest {
            add_taints: vec![new],
            ..Default::default()
        },
    );
    assert_eq!(
        plan.json_patch()[0],
        json!({"op": "test", "path": "/spec/taints", "value": null})
    );
}

#[test]
fn exact_taint_removal_leaves_other_values() {
    let batch = Taint::new("dedicated", "batch", TaintEffect::NoSchedule);
    let s = state(&[], vec![batch.clone()]);
    let wanted = Taint::new("dedicated", "llm-online", TaintEffect::NoSchedule);
    let plan = plan_node(
        &s,
        &ChangeRequest {
            remove_taints: vec![TaintMatcher::exact(&wanted)],
            ..Default::default()
        },
    );
    assert!(plan.is_noop());
    assert_eq!(
        plan.notes,
        vec![Note::TaintValueMismatch {
            wanted: "dedicated=llm-online:NoSchedule".into(),
            found: batch
        }]
    );
}

#[test]
fn adding_a_taint_with_same_key_effect_needs_overwrite() {
    let batch = Taint::new("dedicated", "batch", TaintEffect::NoSchedule);
    let s = state(&[], vec![batch]);
    let wanted = Taint::new("dedicated", "gpu", TaintEffect::NoSchedule);
    let mut req = ChangeRequest {
        add_taints: vec![wanted.clone()],
        ..Default::default()
    };
    assert!(plan_node(&s, &req).is_blocked());
    req.overwrite = true;
    assert_eq!(plan_node(&s, &req).taints_after, vec![wanted]);
}

#[test]
fn diff_shows_changed_lines() {
    let s = state(&[("pool", "batch")], vec![]);
    let plan = plan_node(&s, &labels_request(&["pool=online"], true));
    let diff = plan.render_diff();
    assert!(diff.contains("- label pool=batch\n"), "{diff}");
    assert!(diff.contains("+ label pool=online\n"), "{diff}");
}

#[test]
fn applying_the_patch_gives_the_planned_state() {
    let s = state(&[("pool", "batch")], vec![]);
    let plan = plan_node(&s, &labels_request(&["pool=online", "gpu=a100"], true));
    let after = apply_to_state(&s, &plan.json_patch()).unwrap();
    assert_eq!(after.labels, plan.labels_after());
}

#[test]
fn patch_fails_when_someone_changed_the_key() {
    let s = state(&[("pool", "batch")], vec![]);
    let plan = plan_node(&s, &labels_request(&["pool=online"], true));
    let mut moved = s.clone();
    moved.labels.insert("pool".into(), "other".into());
    assert!(apply_to_state(&moved, &plan.json_patch()).is_err());
    let mut unrelated = s.clone();
    unrelated.labels.insert("unrelated".into(), "x".into());
    assert!(
        apply_to_state(&unrelated, &plan.json_patch()).is_ok(),
        "unrelated labels never conflict"
    );
}

#[test]
fn pointer_escaping_follows_rfc6901() {
    assert_eq!(escape_pointer_token("a/b~c"), "a~1b~0c");
    assert_eq!(unescape_pointer_token("a~1b~0c"), "a/b~c");
    assert_eq!(unescape_pointer_token("~01"), "~1", "~0 is decoded last");
}

proptest! {
    #[test]
    fn pointer_escaping_round_trips(s in "\\PC{0,20}") {
        prop_assert_eq!(unescape_pointer_token(&escape_pointer_token(&s)), s.clone());
        prop_assert!(!escape_pointer_token(&s).contains('/'));
    }
}

/// The import provenance annotation is the node's to write (its kubelet can): escape
/// sequences in its old value cannot erase or forge lines of the diff the admin confirms,
/// nor a line break inside it start a line of its own.
#[test]
fn cluster_strings_in_the_diff_cannot_drive_the_terminal_or_forge_lines() {
    let mut s = state(&[("pool", "batch")], vec![]);
    s.annotations.insert(
        crate::nfd::IMPORTED_LABELS_ANNOTATION.into(),
        "{}\u{1b}[2K\u{1b}[1A\r\n+ label pool=forged\u{202e}".into(),
    );
    let plan = plan_node(
        &s,
        &ChangeRequest {
            annotations: vec![LabelChange::Remove {
                key: crate::nfd::IMPORTED_LABELS_ANNOTATION.into(),
            }],
            ..labels_request(&["pool=online"], true)
        },
    );
    let diff = plan.render_diff();
    assert!(
        !diff
            .chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "{diff:?}"
    );
    assert_eq!(
        diff.lines().filter(|l| l.starts_with('+')).count(),
        2,
        "the +++ header and the one real change: {diff}"
    );
    assert!(
        diff.contains("\\x1b[2K\\x1b[1A\\x0d\\x0a+ label pool=forged\\u{202e}"),
        "{diff}"
    );
}

/// A node's annotations map exists when it has only others' annotations (every real node has
/// the kubelet's): placekit's first annotation is added to it, not written as the whole map
/// behind a `test` that the map is absent (which failed as a conflict on every real node).
#[test]
fn a_first_placekit_annotation_is_added_to_the_others_map() {
    let record = LabelChange::Set {
        key: "placekit.dev/imported-labels".into(),
        value: "{}".into(),
    };
    let request = ChangeRequest {
        annotations: vec![record],
        ..Default::default()
    };
    let mut annotated = state(&[("pool", "a")], Vec::new());
    annotated.other_annotations = true;
    let patch = plan_node(&annotated, &request).json_patch();
    assert_eq!(
        patch,
        json!([
            {"op": "test", "path": "/metadata/annotations/placekit.dev~1imported-labels", "value": null},
            {"op": "add", "path": "/metadata/annotations/placekit.dev~1imported-labels", "value": "{}"}
        ])
    );
    // Without any annotation the map itself is created, conditionally.
    let bare = plan_node(&state(&[("pool", "a")], Vec::new()), &request).json_patch();
    assert_eq!(
        bare[0],
        json!({"op": "test", "path": "/metadata/annotations", "value": null})
    );
}
