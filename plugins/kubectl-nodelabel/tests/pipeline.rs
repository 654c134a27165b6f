//! End-to-end tests of the one mutation pipeline and the undo model, through `kubectl
//! nodelabel`: deduplicated targets, dependents for every command (import --prune
//! included), import provenance and per-node hooks, outcomes decided by re-reading after
//! lost answers, conflict messages, and `rollback --last` as a per-cluster stack.
//! Each test runs on the test API server, or on the real cluster with
//! `PLACEKIT_E2E_KUBECONFIG`.

use std::path::Path;

use placekit_testserver::builders::node;
use placekit_testserver::harness::{Harness, Run, assert_code};
use placekit_testserver::{ConcurrentWrite, Fault, FaultAction, ServerConfig};
use serde_json::json;

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");
const FAMILY: &str = "accelerator.example.com/gpu-family";

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
}

async fn harness() -> Harness {
    Harness::start("nodelabel", binary(), FIXTURE).await
}

fn assert_has(run: &Run, text: &str) {
    assert!(
        run.all().contains(text),
        "expected {text:?} in:\n{}",
        run.all()
    );
}

#[cfg(unix)]
fn write_hook(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn feature(key: &str) -> String {
    format!("feature.node.kubernetes.io/{key}")
}

/// Behaviour 3: a node named twice (and as node/NAME) is planned and written once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_named_twice_is_written_once_and_the_undo_works() {
    let h = harness().await;
    let run = h
        .run(&[
            "set",
            "gpu-a100-1",
            "gpu-a100-1",
            "node/gpu-a100-1",
            "team=ml",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    assert_has(&run, "1 applied");
    assert!(!run.all().contains("conflict"), "{}", run.all());
    assert_eq!(h.server().count("patch", "nodes"), 1);
    assert_eq!(h.labels("gpu-a100-1").await["team"], "ml");
    let undo = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&undo, 0);
    assert!(h.labels("gpu-a100-1").await.get("team").is_none());
}

/// Behaviour 1: `--prune` removes only the keys its own source imported, and a removal a
/// workload's required constraint depends on is blocked like in `remove`.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_prune_removes_only_its_own_sources_keys_and_checks_dependents() {
    let h = harness().await;
    let cpu = h.dir.path().join("cpu");
    let sysctl = h.dir.path().join("sysctl");
    write_hook(&cpu, "echo /cpu-model.id=6\n");
    write_hook(&sysctl, "echo /vm.swappiness=10\n");
    for hook in [&cpu, &sysctl] {
        let run = h
            .run(&[
                "import",
                "--hook",
                &hook.display().to_string(),
                "gpu-a100-1",
                "-y",
            ])
            .await;
        assert_code(&run, 0);
    }
    h.create(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cpu-tuned", "namespace": "ml"},
        "spec": {"selector": {"matchLabels": {"app": "cpu-tuned"}}, "template": {
            "metadata": {"labels": {"app": "cpu-tuned"}},
            "spec": {"nodeSelector": {feature("cpu-model.id"): "6"},
                     "containers": [{"name": "c", "image": "registry.example.com/c:1"}]}}}
    }))
    .await;

    // The sysctl hook now reports another key: its old key goes, the cpu hook's stays.
    write_hook(&sysctl, "echo /vm.overcommit=1\n");
    let run = h
        .run(&[
            "import",
            "--hook",
            &sysctl.display().to_string(),
            "gpu-a100-1",
            "--prune",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    let labels = h.labels("gpu-a100-1").await;
    assert!(labels.get(feature("vm.swappiness")).is_none(), "{labels}");
    assert_eq!(labels[feature("vm.overcommit")], "1");
    assert_eq!(
        labels[feature("cpu-model.id")],
        "6",
        "another source's key is kept"
    );

    // The cpu hook stops reporting cpu-model.id, which the Deployment requires: blocked.
    write_hook(&cpu, "echo /cpu-model.family=25\n");
    let cpu_arg = cpu.display().to_string();
    let blocked = h
        .run(&["import", "--hook", &cpu_arg, "gpu-a100-1", "--prune", "-y"])
        .await;
    assert_code(&blocked, 1);
    assert_has(
        &blocked,
        "Deployment ml/cpu-tuned requires feature.node.kubernetes.io/cpu-model.id=6 (nodeSelector): node/gpu-a100-1 matches it now and would not after this change",
    );
    assert_has(
        &blocked,
        &format!(
            "to change them anyway: kubectl nodelabel import --hook {cpu_arg} gpu-a100-1 --prune -y --ignore-dependents"
        ),
    );
    assert_eq!(h.labels("gpu-a100-1").await[feature("cpu-model.id")], "6");

    let forced = h
        .run(&[
            "import",
            "--hook",
            &cpu_arg,
            "gpu-a100-1",
            "--prune",
            "--ignore-dependents",
            "-y",
        ])
        .await;
    assert_code(&forced, 0);
    assert!(
        h.labels("gpu-a100-1")
            .await
            .get(feature("cpu-model.id"))
            .is_none()
    );
    let record: serde_json::Value = serde_json::from_str(
        h.node("gpu-a100-1").await["metadata"]["annotations"]["placekit.dev/imported-labels"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["hook:cpu"], json!([feature("cpu-model.family")]));
    assert_eq!(record["hook:sysctl"], json!([feature("vm.overcommit")]));
}

/// Behaviour 8: a hook runs once per node with that node's name, and saying the same thing
/// for every node is called out.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_runs_once_per_node_with_its_name() {
    let h = harness().await;
    let hook = h.dir.path().join("whoami");
    write_hook(&hook, "echo \"/node=$NODE_NAME\"\necho \"/arg=$1\"\n");
    let hook_arg = hook.display().to_string();
    let run = h
        .run(&["import", "--hook", &hook_arg, "-l", "pool=online", "-y"])
        .await;
    assert_code(&run, 0);
    for node in ["gpu-a100-1", "gpu-a100-2", "gpu-a100-3"] {
        let labels = h.labels(node).await;
        assert_eq!(labels[feature("node")], node);
        assert_eq!(labels[feature("arg")], node);
    }
    assert!(!run.stderr.contains("the same features"), "{}", run.all());

    // The same features for several nodes: refused (this machine's facts written onto
    // every node), unless they are meant to be identical.
    write_hook(&hook, "echo /vm.swappiness=10\n");
    let same = h
        .run(&["import", "--hook", &hook_arg, "-l", "pool=online", "-y"])
        .await;
    assert_code(&same, 2);
    assert_has(
        &same,
        "printed the same features for node/gpu-a100-1, node/gpu-a100-2, node/gpu-a100-3. It runs on this machine, not on the nodes",
    );
    assert!(
        h.labels("gpu-a100-1")
            .await
            .get(feature("vm.swappiness"))
            .is_none()
    );
    let meant = h
        .run(&[
            "import",
            "--hook",
            &hook_arg,
            "-l",
            "pool=online",
            "--allow-identical-features",
            "-y",
        ])
        .await;
    assert_code(&meant, 0);
    assert_eq!(h.labels("gpu-a100-1").await[feature("vm.swappiness")], "10");
}

/// A hook whose reads failed: its stderr is shown per node, and a node it printed empty
/// values (or nothing) for while complaining gets nothing applied — least of all a prune —
/// while the other nodes are imported; exit 1.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_complains_and_prints_empty_values_fails_that_node_only() {
    let h = harness().await;
    let hook = h.dir.path().join("sysctl");
    write_hook(
        &hook,
        "if [ \"$1\" = gpu-a100-2 ]; then echo 'sysctl: cannot read /proc/sys/net/core/somaxconn' >&2; echo /net.core.somaxconn=; else echo \"/net.core.somaxconn=4096\"; echo \"/host=$1\"; echo 'note: read from cache' >&2; fi\n",
    );
    let hook_arg = hook.display().to_string();
    let run = h
        .run(&[
            "import",
            "--hook",
            &hook_arg,
            "gpu-a100-1",
            "gpu-a100-2",
            "-y",
        ])
        .await;
    assert_code(&run, 1);
    assert_has(
        &run,
        &format!(
            "hook {hook_arg} (node gpu-a100-2) wrote to stderr: sysctl: cannot read /proc/sys/net/core/somaxconn"
        ),
    );
    assert_has(
        &run,
        &format!("hook {hook_arg} (node gpu-a100-1) wrote to stderr: note: read from cache"),
    );
    assert_has(
        &run,
        &format!(
            "node/gpu-a100-2: the hook wrote to stderr and printed empty values ({}): nothing was applied to it",
            feature("net.core.somaxconn")
        ),
    );
    assert_eq!(
        h.labels("gpu-a100-1").await[feature("net.core.somaxconn")],
        "4096"
    );
    assert!(
        h.labels("gpu-a100-2")
            .await
            .get(feature("net.core.somaxconn"))
            .is_none()
    );
}

/// A bare hook name found both on PATH and in the current directory is refused, naming
/// both (the runbook's ./sysctl beside /usr/sbin/sysctl).
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_hook_name_on_path_and_here_is_refused() {
    let h = harness().await;
    let here = h.dir.path().join("work");
    std::fs::create_dir_all(&here).unwrap();
    let bin = h.dir.path().join("pathbin");
    std::fs::create_dir_all(&bin).unwrap();
    write_hook(&here.join("features"), "echo /a=1\n");
    write_hook(&bin.join("features"), "echo /a=2\n");
    let mut cmd = h.command(&["import", "--hook", "features", "gpu-a100-1", "-y"]);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The plugin's own directory stays first, so kubectl still finds it.
    let plugin_dir = h.dir.path().join("bin");
    cmd.current_dir(&here)
        .env("PATH", format!("{}:{path}", plugin_dir.display()));
    let run = Harness::wait(
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    assert_code(&run, 2);
    assert_has(
        &run,
        &format!(
            "both {}/features on PATH and ./features in the current directory: say which, with ./features or the full path",
            bin.display()
        ),
    );
    assert!(h.labels("gpu-a100-1").await.get(feature("a")).is_none());
}

/// A bare hook name runs from PATH only: a file of that name in the current directory (a
/// shared directory where another user planted it) is not run unless written ./NAME, and a
/// hook other users can write is refused.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_is_run_from_path_or_as_written_and_never_writable_by_others() {
    use std::os::unix::fs::PermissionsExt;
    let h = harness().await;
    let here = h.dir.path().join("shared-dir");
    std::fs::create_dir_all(&here).unwrap();
    write_hook(&here.join("gpu-detect"), "echo /planted=1\n");
    let run_in = |args: &[&str]| {
        let mut cmd = h.command(args);
        cmd.current_dir(&here);
        Harness::wait(
            cmd.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        )
    };
    let bare = run_in(&["import", "--hook", "gpu-detect", "gpu-a100-1", "-y"]);
    assert_code(&bare, 2);
    assert_has(
        &bare,
        "no executable \"gpu-detect\" on PATH; the file in the current directory is run only when named ./gpu-detect",
    );
    assert!(
        h.labels("gpu-a100-1")
            .await
            .get(feature("planted"))
            .is_none()
    );
    // Written ./NAME it runs, unless others may write it.
    let hook = here.join("gpu-detect");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o777)).unwrap();
    let writable = run_in(&["import", "--hook", "./gpu-detect", "gpu-a100-1", "-y"]);
    assert_code(&writable, 2);
    assert_has(&writable, "can be written by other users (mode 777)");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&here, std::fs::Permissions::from_mode(0o777)).unwrap();
    let open_dir = run_in(&["import", "--hook", "./gpu-detect", "gpu-a100-1", "-y"]);
    assert_code(&open_dir, 2);
    assert_has(
        &open_dir,
        "can be written by other users (mode 777), who could replace it",
    );
    std::fs::set_permissions(&here, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ok = run_in(&["import", "--hook", "./gpu-detect", "gpu-a100-1", "-y"]);
    assert_code(&ok, 0);
    assert_eq!(h.labels("gpu-a100-1").await[feature("planted")], "1");
}

/// A key another import source owns is not taken over without --overwrite.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_another_import_source_owns_is_a_conflict() {
    let h = harness().await;
    let first = h.dir.path().join("first");
    let second = h.dir.path().join("second");
    write_hook(&first, "echo /cpu.vendor=AMD\n");
    write_hook(&second, "echo /cpu.vendor=Intel\n");
    let (first_arg, second_arg) = (first.display().to_string(), second.display().to_string());
    assert_code(
        &h.run(&["import", "--hook", &first_arg, "gpu-a100-1", "-y"])
            .await,
        0,
    );
    let taken = h
        .run(&["import", "--hook", &second_arg, "gpu-a100-1", "-y"])
        .await;
    assert_code(&taken, 1);
    assert_has(
        &taken,
        &format!(
            "label {} is \"AMD\", imported by hook:first, not \"Intel\" (use --overwrite to take it over)",
            feature("cpu.vendor")
        ),
    );
    assert_eq!(h.labels("gpu-a100-1").await[feature("cpu.vendor")], "AMD");
    let over = h
        .run(&[
            "import",
            "--hook",
            &second_arg,
            "gpu-a100-1",
            "--overwrite",
            "-y",
        ])
        .await;
    assert_code(&over, 0);
    assert_eq!(h.labels("gpu-a100-1").await[feature("cpu.vendor")], "Intel");
}

/// Behaviour 10: a conflict says which key changed to what; nothing applied, no undo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_names_the_key_and_both_values_and_offers_no_undo() {
    let h = harness().await;
    h.server().concurrent_write(ConcurrentWrite::new(
        "nodes",
        "gpu-a100-2",
        json!({"metadata": {"labels": {FAMILY: "h200"}}}),
    ));
    let run = h
        .run(&[
            "set",
            "gpu-a100-2",
            &format!("{FAMILY}=a100"),
            "--overwrite",
            "-y",
        ])
        .await;
    assert_code(&run, 1);
    assert_has(
        &run,
        "node/gpu-a100-2 conflict: changed by someone else: label accelerator.example.com/gpu-family was \"v100\" when read and is \"h200\" now (this command would set \"a100\")",
    );
    assert!(!run.stdout.contains("undo with:"), "{}", run.all());
    assert!(
        !run.all().contains("the server rejected our request"),
        "{}",
        run.all()
    );
}

/// Behaviour 11: an answer lost in transit, then errors on every retry: a re-read decides
/// the change was made, so it is reported applied and rolled back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_followed_by_errors_is_decided_by_reading_the_node() {
    let h = harness().await;
    h.server()
        .inject(Fault::new("patch", "nodes", 1, FaultAction::LoseAnswer));
    h.server().inject(Fault {
        times: 4,
        ..Fault::new(
            "patch",
            "nodes",
            2,
            FaultAction::Status {
                code: 503,
                retry_after_seconds: Some(0),
            },
        )
    });
    let run = h
        .run(&[
            "set",
            "-l",
            "pool=online",
            &format!("{FAMILY}=a100"),
            "--overwrite",
            "--concurrency",
            "1",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    assert_has(&run, "3 applied");
    assert_has(&run, "applied by an attempt whose answer was lost");
    let undo = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&undo, 0);
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "v100");
    assert_eq!(h.labels("gpu-a100-2").await[FAMILY], "v100");
    assert!(h.labels("gpu-a100-3").await.get(FAMILY).is_none());
}

/// Behaviour 11, when even the re-read fails: the outcome is unknown (exit 1), never
/// "failed", and rollback still restores the node because it compares every node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecidable_write_is_unknown_and_rollback_still_restores_it() {
    let h = harness().await;
    h.server()
        .inject(Fault::new("patch", "nodes", 1, FaultAction::LoseAnswer));
    h.server().inject(Fault {
        times: 4,
        ..Fault::new("patch", "nodes", 2, FaultAction::Drop)
    });
    h.server().inject(Fault {
        times: 3,
        ..Fault::new("get", "nodes", 1, FaultAction::Drop)
    });
    let run = h.run(&["set", "-l", "pool=cpu", "team=ml", "-y"]).await;
    assert_code(&run, 1);
    assert_has(&run, "node/cpu-1 unknown");
    assert_has(&run, "undo with:");
    assert_eq!(h.labels("cpu-1").await["team"], "ml", "the change was made");
    let undo = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&undo, 0);
    assert!(h.labels("cpu-1").await.get("team").is_none());
}

/// Behaviours 4 and 5: `rollback --last` picks the newest snapshot of *this* cluster (two
/// clusters with the same context name), `--backup` snapshots included; another cluster's
/// snapshot is refused unless forced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_last_is_per_cluster_and_sees_backups() {
    let a = harness().await;
    let b = Harness::local(
        "nodelabel",
        binary(),
        ServerConfig::default().with_fixture_yaml(FIXTURE),
    )
    .await;
    // Same state directory, same context name ("placekit-test"), two clusters.
    assert_code(&a.run(&["set", "gpu-a100-1", "team=a", "-y"]).await, 0);
    let backup = a.dir.path().join("before-b.jsonl");
    let on_b = a
        .run_with(
            &[
                "set",
                "gpu-a100-1",
                "team=b",
                &format!("--backup={}", backup.display()),
                "-y",
            ],
            &b.kubeconfig,
        )
        .await;
    assert_code(&on_b, 0);
    let undo = a.run(&["rollback", "--last", "-y"]).await;
    assert_code(&undo, 0);
    assert!(
        a.labels("gpu-a100-1").await.get("team").is_none(),
        "A's change undone"
    );
    assert_eq!(b.labels("gpu-a100-1").await["team"], "b", "B untouched");

    // B's snapshot, named on A: refused, nothing written.
    let backup_arg = backup.display().to_string();
    let refused = a.run(&["rollback", &backup_arg, "-y"]).await;
    assert_code(&refused, 2);
    assert_has(&refused, "was taken on another cluster");

    // On B, --last finds the --backup snapshot.
    let undo_b = a
        .run_with(&["rollback", "--last", "-y"], &b.kubeconfig)
        .await;
    assert_code(&undo_b, 0);
    assert!(b.labels("gpu-a100-1").await.get("team").is_none());
    let history = a.run(&["history", "-o", "json"]).await;
    assert_eq!(history.json()["items"].as_array().unwrap().len(), 4);
}

/// Behaviour 6: undo is a stack. A rollback whose only leftovers are keys someone changed
/// since counts as done: it prints the exact command that restores them anyway, `history`
/// lists them, and the next `--last` walks back to the change before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_last_walks_back_past_what_others_changed_since() {
    let h = harness().await;
    assert_code(
        &h.run(&["set", "-l", "pool=online", "team=ml", "-y"]).await,
        0,
    );
    assert_code(
        &h.run(&[
            "set",
            "-l",
            "pool=online",
            &format!("{FAMILY}=a100"),
            "--overwrite",
            "-y",
        ])
        .await,
        0,
    );
    let family_change = h.snapshots().last().unwrap().display().to_string();
    h.merge_patch(
        "nodes",
        None,
        "gpu-a100-2",
        &json!({"metadata": {"labels": {FAMILY: "h200"}}}),
    )
    .await;

    let partial = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&partial, 1);
    assert_has(
        &partial,
        &format!(
            "restore what was left alone with: kubectl nodelabel rollback {family_change} --overwrite-changes"
        ),
    );
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "v100");
    assert_eq!(h.labels("gpu-a100-2").await[FAMILY], "h200");
    let history = h.run(&["history", "-o", "json"]).await;
    let entry = history.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == family_change.as_str())
        .cloned()
        .unwrap();
    assert_eq!(entry["rolledBack"], "yes", "{entry}");
    assert_eq!(
        entry["leftAlone"][0],
        format!("node/gpu-a100-2: label {FAMILY} is \"h200\", expected \"a100\""),
        "{entry}"
    );
    let text = h.run(&["history"]).await;
    assert_has(&text, "yes, 1 left alone");

    // The next --last walks back to the change before: someone else's value stays.
    let earlier = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&earlier, 0);
    for node in ["gpu-a100-1", "gpu-a100-2", "gpu-a100-3"] {
        assert!(h.labels(node).await.get("team").is_none(), "{node}");
    }
    assert_eq!(h.labels("gpu-a100-2").await[FAMILY], "h200");
    let nothing = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&nothing, 2);
    assert_has(&nothing, "nothing to undo");

    // The printed command still finishes it, on demand.
    let finished = h
        .run(&["rollback", &family_change, "--overwrite-changes", "-y"])
        .await;
    assert_code(&finished, 0);
    assert_eq!(h.labels("gpu-a100-2").await[FAMILY], "v100");
}

/// `rollback SNAPSHOT NODE...` and `-l SEL` restore only those nodes; the snapshot stays on
/// the undo stack until every node is restored, and the confirmation names what is undone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_of_some_nodes_keeps_the_rest_on_the_stack() {
    let h = harness().await;
    assert_code(
        &h.run(&["set", "-l", "pool=online", "team=ml", "-y"]).await,
        0,
    );
    let change = h.snapshots().last().unwrap().display().to_string();

    // Without a terminal and --yes, the refusal names the change it would undo.
    let refused = h.run(&["rollback", "--last"]).await;
    assert_code(&refused, 2);
    assert_has(
        &refused,
        "3 nodes to undo `kubectl nodelabel set -l pool=online team=ml -y` of ",
    );
    assert_has(&refused, "on context ");

    let one = h.run(&["rollback", &change, "gpu-a100-1", "-y"]).await;
    assert_code(&one, 0);
    assert_has(&one, "1 of its 3 nodes");
    assert!(h.labels("gpu-a100-1").await.get("team").is_none());
    assert_eq!(h.labels("gpu-a100-2").await["team"], "ml");
    // A node the snapshot does not hold is refused before anything is written.
    let foreign = h.run(&["rollback", &change, "cpu-1", "-y"]).await;
    assert_code(&foreign, 2);
    assert_has(&foreign, "node/cpu-1 not in the snapshot");

    // --last still offers it (two nodes left), here by selector.
    let zone = h
        .run(&[
            "rollback",
            "--last",
            "-l",
            "topology.kubernetes.io/zone=zone-b",
            "-y",
        ])
        .await;
    assert_code(&zone, 0);
    assert!(h.labels("gpu-a100-2").await.get("team").is_none());
    assert_eq!(h.labels("gpu-a100-3").await["team"], "ml");
    let rest = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&rest, 0);
    assert!(h.labels("gpu-a100-3").await.get("team").is_none());
    let nothing = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&nothing, 2);
}

/// Behaviour 10: a rollback that restores nothing it was asked to exits 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_that_restores_nothing_exits_1() {
    let h = harness().await;
    assert_code(&h.run(&["set", "cpu-1", "team=ml", "-y"]).await, 0);
    // The node is deleted and recreated with the label (another uid).
    let api: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(h.client());
    api.delete("cpu-1", &Default::default()).await.unwrap();
    h.create(
        node("cpu-1")
            .label("pool", "cpu")
            .label("team", "ml")
            .build(),
    )
    .await;
    let run = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&run, 1);
    assert_has(
        &run,
        "node/cpu-1 skipped: deleted and recreated since the snapshot",
    );
    assert_eq!(h.labels("cpu-1").await["team"], "ml");
}

/// Snapshots written before the format's version 2 (no cluster identity) are still read
/// and rolled back, matched to the cluster by their server URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_snapshot_is_still_rolled_back() {
    let h = harness().await;
    assert_code(&h.run(&["set", "cpu-1", "team=ml", "-y"]).await, 0);
    let path = h.snapshots().last().unwrap().clone();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut header: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(header["apiVersion"], "placekit.dev/v2");
    header["apiVersion"] = json!("placekit.dev/v1");
    header.as_object_mut().unwrap().remove("cluster");
    lines[0] = header.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();

    let undo = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&undo, 0);
    assert!(h.labels("cpu-1").await.get("team").is_none());
}

/// A snapshot edited by hand is checked before the rollback writes anything: a value the
/// API server refuses stops it whole (exit 2, nothing changed), and a restored key that
/// `set` warns about is warned about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edited_snapshot_is_validated_before_any_write() {
    let h = harness().await;
    assert_code(
        &h.run(&["set", "cpu-1", "pool=gpu", "--overwrite", "-y"])
            .await,
        0,
    );
    let path = h.snapshots().last().unwrap().clone();
    let original = std::fs::read_to_string(&path).unwrap();
    let edit = |from: &str, to: &str| {
        let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
        let mut header: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        let delta = header["nodes"][0]["labelChanges"][0].clone();
        assert_eq!(delta["before"], from, "{header}");
        header["nodes"][0]["labelChanges"][0] =
            json!({"key": delta["key"], "before": to, "after": delta["after"]});
        lines[0] = header.to_string();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    };
    edit("cpu", "not a valid value!");
    let run = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&run, 2);
    assert_has(
        &run,
        "holds values the API server refuses (edited by hand?)",
    );
    assert_has(&run, "nothing was changed");
    assert_eq!(h.labels("cpu-1").await["pool"], "gpu", "not written");

    edit("cpu", "cpu");
    let run = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&run, 0);
    assert_has(&run, "workload-isolation");
    assert_eq!(h.labels("cpu-1").await["pool"], "cpu");
}
