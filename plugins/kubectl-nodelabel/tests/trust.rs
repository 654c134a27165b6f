//! What placekit trusts on this machine: only the user's own state. A state directory
//! others can write is refused (as ssh refuses such a `~/.ssh`), a snapshot planted there
//! is never rolled back, odd files (FIFOs, symlinks) never hang or redirect a command, and a
//! snapshot's node names are checked before any request.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use placekit_testserver::harness::{Harness, assert_code};
use placekit_testserver::process::Bounded as _;

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_directory_others_can_write_is_refused_before_any_write() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    assert_code(&h.run(&["set", "cpu-1", "team=ml", "-y"]).await, 0);
    chmod(&h.state_dir, 0o777);

    let history = h.run(&["history"]).await;
    assert_code(&history, 2);
    assert!(
        history.stderr.contains("writable by everyone")
            && history
                .stderr
                .contains(&format!("chmod 700 {}", h.state_dir.display())),
        "{}",
        history.all()
    );
    let undo = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&undo, 2);
    assert_eq!(h.labels("cpu-1").await["team"], "ml", "nothing undone");
    let set = h
        .run(&["set", "cpu-1", "team=infra", "--overwrite", "-y"])
        .await;
    assert_code(&set, 2);
    assert_eq!(h.labels("cpu-1").await["team"], "ml", "nothing written");

    chmod(&h.state_dir, 0o700);
    assert_code(&h.run(&["rollback", "--last", "-y"]).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_others_can_write_or_a_fifo_is_never_taken() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    assert_code(&h.run(&["set", "cpu-1", "team=ml", "-y"]).await, 0);
    let mine = h.snapshots().last().unwrap().clone();
    // A planted copy with the newest name, writable by everyone, that would remove the
    // label; and a FIFO named like a snapshot, which would hang a plain read.
    let planted = h
        .state_dir
        .join("99991231T000000.000Z-nodelabel-set-planted.snapshot.jsonl");
    std::fs::copy(&mine, &planted).unwrap();
    chmod(&planted, 0o666);
    let fifo = h
        .state_dir
        .join("99991231T000001.000Z-nodelabel-set-fifo.snapshot.jsonl");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .bounded_status()
            .unwrap()
            .success()
    );

    let history = h.run(&["history"]).await;
    assert_code(&history, 0);
    assert!(
        history.stderr.contains("writable by everyone")
            && history.stderr.contains("not a regular file"),
        "{}",
        history.all()
    );
    // --last takes the user's own snapshot, never the planted one.
    let undo = h.run(&["rollback", "--last", "-y", "-o", "json"]).await;
    assert_code(&undo, 0);
    let report = undo.json();
    assert!(
        report["snapshot"].as_str().is_some(),
        "the rollback wrote its own snapshot: {report}"
    );
    assert!(h.labels("cpu-1").await.get("team").is_none());
    let text = std::fs::read_to_string(&mine).unwrap();
    assert!(text.contains("\"RolledBack\""), "the user's own was undone");
    let planted_text = std::fs::read_to_string(&planted).unwrap();
    assert!(
        !planted_text.contains("\"RolledBack\""),
        "the planted one was not touched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_names_in_a_snapshot_are_checked_before_any_request() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    assert_code(&h.run(&["set", "cpu-1", "team=ml", "-y"]).await, 0);
    let path = h.snapshots().last().unwrap().clone();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut header: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    header["nodes"][0]["name"] = "cpu-1/proxy/configz".into();
    lines[0] = header.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    h.server().reset_counters();
    let run = h
        .run(&["rollback", &path.display().to_string(), "-y"])
        .await;
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("node name \"cpu-1/proxy/configz\""),
        "{}",
        run.all()
    );
    assert_eq!(h.server().count("get", "nodes"), 0, "no node was read");
}

/// `placekit.dev/imported-labels` is a node annotation its kubelet can write: a claim that
/// a hook imported `node-restriction.kubernetes.io/quarantined` (which NodeRestriction
/// keeps the kubelet from touching) is reported as tampered and never pruned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_ignores_claims_no_import_could_have_made() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let hook = h.dir.path().join("x");
    std::fs::write(&hook, "#!/bin/sh\necho /gpu.ok=true\n").unwrap();
    chmod(&hook, 0o755);
    let quarantine = "node-restriction.kubernetes.io/quarantined";
    h.merge_patch(
        "nodes",
        None,
        "cpu-1",
        &serde_json::json!({"metadata": {
            "labels": {quarantine: "true", "team": "ml"},
            "annotations": {"placekit.dev/imported-labels": serde_json::json!({"hook:x": [quarantine, "team"]}).to_string()}}}),
    )
    .await;
    let run = h
        .run(&[
            "import",
            "--hook",
            &hook.display().to_string(),
            "cpu-1",
            "--prune",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    assert!(
        run.stderr.contains(&format!(
            "node/cpu-1: its placekit.dev/imported-labels annotation claims that hook:x imported {quarantine}, team, which no import can produce: tampered"
        )),
        "{}",
        run.all()
    );
    let labels = h.labels("cpu-1").await;
    assert_eq!(labels[quarantine], "true", "the quarantine stays");
    assert_eq!(labels["team"], "ml");
    assert_eq!(labels["feature.node.kubernetes.io/gpu.ok"], "true");
}

/// A snapshot's context and command line are the file's words: `history` and `show`
/// escape their control characters instead of sending them to the terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_and_show_escape_control_characters_from_snapshots() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    assert_code(&h.run(&["set", "cpu-1", "team=ml", "-y"]).await, 0);
    let path = h.snapshots().last().unwrap().clone();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut header: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    header["context"] = "prod\u{1b}]0;owned\u{7}".into();
    header["commandLine"][1] = "set\u{1b}[2J".into();
    lines[0] = header.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    for args in [vec!["history"], vec!["show", path.to_str().unwrap()]] {
        let run = h.run(&args).await;
        assert_code(&run, 0);
        assert!(!run.stdout.contains('\u{1b}'), "{}", run.all());
        assert!(
            run.stdout.contains("prod\\x1b]0;owned\\x07"),
            "{}",
            run.all()
        );
    }
}
