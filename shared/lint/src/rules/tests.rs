//! Per-rule snapshot tests: every rule has a fixture next to it
//! (`rules/fixtures/<id>.yaml`, cases that must be flagged and close cases that must not),
//! and the findings of that rule alone on it are compared with `rules/snapshots/<id>.snap`.
//! The `--cluster` rules read the cluster from `rules/fixtures/<id>.cluster.yaml` (nodes and
//! running pods as the API server returns them).
//!
//! After an intended change of a rule's findings, `UPDATE_SNAPSHOTS=1 cargo test -p
//! placekit --lib lint::rules` rewrites the snapshots; the diff is then reviewed like code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::all_metas;
use crate::engine::{Config, LiveCluster, Settings, lint_paths};
use placekit_core::model::{Node, Pod};
use placekit_core::scheduler::node_infos;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules")
}

/// The cluster of a `--cluster` rule's fixture: its nodes and pods.
fn cluster(path: &Path) -> Option<LiveCluster> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut nodes: Vec<Node> = Vec::new();
    let mut pods: Vec<Pod> = Vec::new();
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value: serde_json::Value =
            serde::Deserialize::deserialize(document).expect("cluster fixture is YAML");
        match value["kind"].as_str() {
            Some("Node") => nodes.push(serde_json::from_value(value).expect("a node")),
            Some("Pod") => pods.push(serde_json::from_value(value).expect("a pod")),
            other => panic!(
                "{}: a cluster fixture holds Nodes and Pods, not {other:?}",
                path.display()
            ),
        }
    }
    Some(LiveCluster {
        context: None,
        nodes: node_infos(&nodes, &pods),
    })
}

/// The findings of rule `id` alone on its fixture, one line each, and the number of objects
/// the fixture holds.
fn snapshot(id: &str) -> (String, usize, usize) {
    let lower = id.to_ascii_lowercase();
    let fixture = dir().join("fixtures").join(format!("{lower}.yaml"));
    assert!(
        fixture.is_file(),
        "{id} has no fixture at {}",
        fixture.display()
    );
    let mut config = Config::default();
    let others: Vec<String> = all_metas()
        .filter(|m| m.id != id)
        .map(|m| m.id.to_string())
        .collect();
    config
        .apply_flags(&[id.to_string()], &others)
        .expect("known rules");
    let clusters: Vec<LiveCluster> =
        cluster(&dir().join("fixtures").join(format!("{lower}.cluster.yaml")))
            .into_iter()
            .collect();
    let outcome = lint_paths(
        &[fixture],
        false,
        &Settings {
            config: &config,
            keep_source_lines: false,
            clusters: &clusters,
            jobs: 1,
            contents: None,
            crds: &Default::default(),
        },
    );
    assert!(outcome.errors.is_empty(), "{id}: {:?}", outcome.errors);
    let mut out = String::new();
    let mut flagged = std::collections::BTreeSet::new();
    for f in &outcome.findings {
        flagged.insert((
            f.object.kind.clone(),
            f.object.namespace.clone(),
            f.object.name.clone(),
        ));
        let object = match &f.object.namespace {
            Some(ns) => format!("{}/{ns}/{}", f.object.kind, f.object.name),
            None => format!("{}/{}", f.object.kind, f.object.name),
        };
        let _ = writeln!(
            out,
            "{}:{} {} {} {object}: {}",
            f.line,
            f.column,
            f.rule,
            f.severity.as_str(),
            f.message
        );
        if let Some(fix) = &f.fix {
            for line in fix.lines() {
                let _ = writeln!(out, "    fix: {line}");
            }
        }
    }
    (out, flagged.len(), outcome.objects)
}

/// Whether the snapshots are rewritten: only with `UPDATE_SNAPSHOTS=1`. Any other value
/// (an empty one left in a CI environment included) is refused, so a stray variable can
/// never turn the comparison off.
fn rewrite_snapshots(value: Option<&std::ffi::OsStr>) -> Result<bool, String> {
    match value.map(|v| v.to_str()) {
        None => Ok(false),
        Some(Some("1")) => Ok(true),
        Some(other) => Err(format!(
            "UPDATE_SNAPSHOTS is set to {other:?}: only UPDATE_SNAPSHOTS=1 rewrites the snapshots; unset it to compare them"
        )),
    }
}

#[test]
fn only_update_snapshots_1_rewrites_snapshots() {
    use std::ffi::OsStr;
    assert_eq!(rewrite_snapshots(None), Ok(false));
    assert_eq!(rewrite_snapshots(Some(OsStr::new("1"))), Ok(true));
    for stray in ["", "0", "true", "yes"] {
        assert!(
            rewrite_snapshots(Some(OsStr::new(stray))).is_err(),
            "{stray:?}"
        );
    }
}

#[test]
fn every_rule_flags_its_fixture_as_its_snapshot_says() {
    let update = rewrite_snapshots(std::env::var_os("UPDATE_SNAPSHOTS").as_deref())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for meta in all_metas() {
        let (found, flagged, objects) = snapshot(meta.id);
        // A fixture shows the rule firing and a close case where it must not.
        if flagged == 0 || flagged >= objects {
            failures.push(format!(
                "{}: the fixture must hold flagged and unflagged objects ({flagged} of {objects} flagged)",
                meta.id
            ));
        }
        let path = dir()
            .join("snapshots")
            .join(format!("{}.snap", meta.id.to_ascii_lowercase()));
        if update {
            std::fs::write(&path, &found).expect("snapshot written");
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        if expected != found {
            failures.push(format!(
                "{}: findings differ from {}\n--- expected\n{expected}--- found\n{found}",
                meta.id,
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
