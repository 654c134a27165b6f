//! End-to-end tests of `kubectl nodelabel` on the test API server, through the installed
//! binary and kubectl's plugin lookup.

use std::path::Path;

use placekit_testserver::harness::{Harness, Run, assert_code};
use placekit_testserver::{ConcurrentWrite, Fault, FaultAction};
use serde_json::json;

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");
const FAMILY: &str = "accelerator.example.com/gpu-family";

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
}

async fn harness() -> Harness {
    Harness::start("nodelabel", binary(), FIXTURE).await
}

/// The snapshot path printed after "undo with: kubectl nodelabel rollback ".
fn undo_path(run: &Run) -> String {
    run.stdout
        .lines()
        .find_map(|l| l.strip_prefix("undo with: kubectl nodelabel rollback "))
        .unwrap_or_else(|| panic!("no undo command printed:\n{}", run.all()))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_with_selector_snapshots_all_three_and_the_printed_undo_works() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let backup = h.dir.path().join("before.jsonl");
    let backup_arg = format!("--backup={}", backup.display());
    let run = h
        .run(&[
            "set",
            "-l",
            "pool=online",
            &format!("{FAMILY}=a100"),
            "--overwrite",
            &backup_arg,
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    for node in ["gpu-a100-1", "gpu-a100-2", "gpu-a100-3"] {
        assert_eq!(h.labels(node).await[FAMILY], "a100", "{node}");
    }
    assert_eq!(h.labels("gpu-h100-1").await[FAMILY], "h100", "not selected");

    let text = std::fs::read_to_string(&backup).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["apiVersion"], "placekit.dev/v2");
    let nodes = header["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0]["labelsBefore"][FAMILY], "v100");
    assert_eq!(
        nodes[0]["labelsBefore"]["power-profile"], "balanced",
        "the full before-state"
    );
    assert!(nodes[2]["labelsBefore"].get(FAMILY).is_none());
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("\"outcome\":\"applied\""))
            .count(),
        3,
        "journal"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    let undo = undo_path(&run);
    assert_eq!(undo, backup.display().to_string());
    let rolled = h.run(&["rollback", &undo, "-y"]).await;
    assert_code(&rolled, 0);
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "v100");
    assert!(h.labels("gpu-a100-3").await.get(FAMILY).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_overwrite_nothing_changes_and_every_blocker_is_named() {
    let h = harness().await;
    let run = h
        .run(&["set", "-l", "pool=online", &format!("{FAMILY}=a100"), "-y"])
        .await;
    assert_code(&run, 1);
    assert!(
        run.stderr.contains(
            "node/gpu-a100-1: label accelerator.example.com/gpu-family is \"v100\", not \"a100\""
        ),
        "{}",
        run.all()
    );
    assert!(
        run.stderr.contains(
            "node/gpu-a100-2: label accelerator.example.com/gpu-family is \"v100\", not \"a100\""
        ),
        "{}",
        run.all()
    );
    assert!(
        !run.stderr.contains("gpu-a100-3:"),
        "the absent key is not a blocker"
    );
    assert!(
        h.labels("gpu-a100-3").await.get(FAMILY).is_none(),
        "nothing changed, not even the unblocked node"
    );
    assert_eq!(h.server().count("patch", "nodes"), 0);
    assert!(h.snapshots().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_writer_makes_one_node_a_conflict_and_keeps_its_value() {
    let h = harness().await;
    h.server().concurrent_write(ConcurrentWrite::new(
        "nodes",
        "gpu-a100-2",
        json!({"metadata": {"labels": {FAMILY: "h200"}}}),
    ));
    let run = h
        .run(&[
            "set",
            "-l",
            "pool=online",
            &format!("{FAMILY}=a100"),
            "--overwrite",
            "-y",
        ])
        .await;
    assert_code(&run, 1);
    assert!(
        run.stdout.contains("node/gpu-a100-2 conflict"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout.contains("2 applied, 1 conflict"),
        "{}",
        run.all()
    );
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "a100");
    assert_eq!(h.labels("gpu-a100-3").await[FAMILY], "a100");
    assert_eq!(
        h.labels("gpu-a100-2").await[FAMILY],
        "h200",
        "the other writer's value survives"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_last_is_exact_reports_conflicts_and_can_be_rolled_back() {
    let h = harness().await;
    assert_code(
        &h.run(&[
            "set",
            "-l",
            "pool=online",
            &format!("{FAMILY}=a100"),
            "power-profile-",
            "--overwrite",
            "--ignore-dependents",
            "-y",
        ])
        .await,
        0,
    );
    // Someone changes one key afterwards.
    h.merge_patch(
        "nodes",
        None,
        "gpu-a100-2",
        &json!({"metadata": {"labels": {FAMILY: "h200"}}}),
    )
    .await;

    let run = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&run, 1);
    assert!(run.stderr.contains("node/gpu-a100-2: label accelerator.example.com/gpu-family is \"h200\", but the snapshot's command set \"a100\""), "{}", run.all());
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "v100");
    assert_eq!(h.labels("gpu-a100-1").await["power-profile"], "balanced");
    assert!(h.labels("gpu-a100-3").await.get(FAMILY).is_none());
    assert_eq!(h.labels("gpu-a100-2").await[FAMILY], "h200", "left alone");

    // --overwrite-changes restores it (from the original snapshot, not the rollback's).
    let first = h.snapshots()[0].display().to_string();
    let forced = h
        .run(&["rollback", &first, "--overwrite-changes", "-y"])
        .await;
    assert_code(&forced, 0);
    assert_eq!(h.labels("gpu-a100-2").await[FAMILY], "v100");

    // The last rollback can itself be rolled back, by naming its snapshot (`--last` never
    // picks a rollback: repeated `--last` walks back through history instead).
    let last_rollback = h.snapshots().last().unwrap().display().to_string();
    let again = h.run(&["rollback", &last_rollback, "-y"]).await;
    assert_code(&again, 0);
    assert_eq!(h.labels("gpu-a100-2").await[FAMILY], "h200");

    let shown = h.run(&["show", &first]).await;
    assert_code(&shown, 0);
    assert!(
        shown
            .stdout
            .contains("label accelerator.example.com/gpu-family: \"v100\" -> \"a100\""),
        "{}",
        shown.all()
    );
    assert!(shown.stdout.contains("undone by:"), "{}", shown.all());
    let history = h.run(&["history", "-o", "json"]).await;
    let items = history.json()["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 4);
    assert!(
        !items[0]["rolledBackBy"].as_array().unwrap().is_empty(),
        "the set is marked rolled back"
    );
}

async fn ten_nodes() -> Harness {
    let fixture: String = (0..10)
        .map(|i| format!("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n{i:02}\n  labels: {{pool: online, {FAMILY}: v100}}\nspec: {{}}\n"))
        .collect();
    Harness::start("nodelabel", binary(), &fixture).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_on_the_third_of_ten_writes_fails_only_that_node_and_rollback_restores_the_nine() {
    let h = ten_nodes().await;
    // Writes in order (--concurrency 1): the 3rd answers 500, then its retries lose the connection.
    h.server().inject(Fault::new(
        "patch",
        "nodes",
        3,
        FaultAction::Status {
            code: 500,
            retry_after_seconds: None,
        },
    ));
    h.server().inject(Fault {
        times: 4,
        ..Fault::new("patch", "nodes", 4, FaultAction::Drop)
    });
    let run = h
        .run(&[
            "set",
            "--all",
            &format!("{FAMILY}=a100"),
            "--overwrite",
            "--concurrency",
            "1",
            "-y",
        ])
        .await;
    assert_code(&run, 1);
    assert!(run.stdout.contains("node/n02 failed"), "{}", run.all());
    assert!(run.stdout.contains("9 applied, 1 failed"), "{}", run.all());
    let journal = std::fs::read_to_string(&h.snapshots()[0]).unwrap();
    assert_eq!(
        journal
            .lines()
            .filter(|l| l.contains("\"outcome\":\"applied\""))
            .count(),
        9
    );
    assert_eq!(
        journal
            .lines()
            .filter(|l| l.contains("\"outcome\":\"failed\""))
            .count(),
        1
    );
    assert_eq!(h.labels("n02").await[FAMILY], "v100");

    h.server().reset_counters();
    let rolled = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&rolled, 0);
    assert!(rolled.stdout.contains("9 applied"), "{}", rolled.all());
    assert_eq!(
        h.server().count("patch", "nodes"),
        9,
        "exactly the nine are restored"
    );
    for i in 0..10 {
        assert_eq!(h.labels(&format!("n{i:02}")).await[FAMILY], "v100");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transient_fault_is_retried_and_two_lists_plus_one_write_per_node_is_all_it_takes() {
    let h = ten_nodes().await;
    h.server().inject(Fault::new(
        "patch",
        "nodes",
        3,
        FaultAction::Status {
            code: 503,
            retry_after_seconds: Some(1),
        },
    ));
    let run = h
        .run(&[
            "set",
            "-l",
            "pool=online",
            &format!("{FAMILY}=a100"),
            "--overwrite",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    assert!(run.stdout.contains("10 applied"), "{}", run.all());
    // The targets, and the values the key has on the cluster (for "did you mean"): one
    // list each, whatever the number of nodes.
    assert_eq!(h.server().count("list", "nodes"), 2);
    assert_eq!(
        h.server().count("patch", "nodes"),
        11,
        "ten writes and one retry"
    );
    assert_eq!(h.server().count("get", "nodes"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_key_a_required_constraint_needs_requires_force_and_dependents_lists_it() {
    let h = harness().await;
    // gpu-a100-2 (v100) was never a candidate of llm-inference (it requires a100): its
    // family label is nobody's dependency.
    let not_a_candidate = h
        .run(&["remove", "gpu-a100-2", &format!("{FAMILY}-"), "-y"])
        .await;
    assert_code(&not_a_candidate, 0);
    assert!(
        !not_a_candidate.stderr.contains("llm-inference"),
        "{}",
        not_a_candidate.all()
    );

    // gpu-a100-1 becomes a candidate; then removing the family label would take it away.
    let pool = "ops.example.com.node-restriction.kubernetes.io/llm-pool";
    assert_code(
        &h.run(&[
            "set",
            "gpu-a100-1",
            &format!("{pool}=online"),
            &format!("{FAMILY}=a100"),
            "--overwrite",
            "-y",
        ])
        .await,
        0,
    );
    let run = h
        .run(&["remove", "gpu-a100-1", &format!("{FAMILY}-"), "-y"])
        .await;
    assert_code(&run, 1);
    assert!(run.stderr.contains("Deployment ml/llm-inference requires accelerator.example.com/gpu-family In [a100] (required node affinity): node/gpu-a100-1 matches it now and would not after this change; new pods of it could no longer be scheduled there"), "{}", run.all());
    // The message names the exact command that overrides the check, and only that check.
    assert!(
        run.stderr.contains(&format!(
            "to change them anyway: kubectl nodelabel remove gpu-a100-1 {FAMILY}- -y --ignore-dependents"
        )),
        "{}",
        run.all()
    );
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "a100");
    // The report says the same as data: which check blocked, about which workload and
    // nodes, and the flag that overrides it.
    let json = h
        .run(&[
            "remove",
            "gpu-a100-1",
            &format!("{FAMILY}-"),
            "-y",
            "-o",
            "json",
        ])
        .await;
    assert_code(&json, 1);
    let report = json.json();
    let blocking: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["standing"] == "blocking")
        .collect();
    assert_eq!(blocking.len(), 1, "{}", json.all());
    assert_eq!(blocking[0]["check"], "dependents");
    assert_eq!(blocking[0]["override"], "--ignore-dependents");
    assert_eq!(
        blocking[0]["subject"],
        serde_json::json!({"kind": "Deployment", "namespace": "ml", "name": "llm-inference"})
    );
    assert_eq!(blocking[0]["nodes"], serde_json::json!(["gpu-a100-1"]));
    assert!(
        blocking[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("Deployment ml/llm-inference requires"),
        "{}",
        json.all()
    );
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "a100");

    // The retired catch-all is refused (usage, exit 2) with the flags that replace it.
    let retired = h
        .run(&["remove", "gpu-a100-1", FAMILY, "--force", "-y"])
        .await;
    assert_code(&retired, 2);
    for flag in [
        "--ignore-dependents",
        "--overwrite-changes",
        "--other-cluster",
    ] {
        assert!(retired.stderr.contains(flag), "{}", retired.all());
    }
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "a100");

    let forced = h
        .run(&[
            "remove",
            "gpu-a100-1",
            FAMILY,
            "--ignore-dependents",
            "-y",
            "-o",
            "json",
        ])
        .await;
    assert_code(&forced, 0);
    assert!(h.labels("gpu-a100-1").await.get(FAMILY).is_none());
    let overridden = &forced.json()["findings"][0];
    assert_eq!(overridden["standing"], "overridden", "{}", forced.all());
    assert_eq!(overridden["override"], "--ignore-dependents");

    // A preferred dependency only warns.
    let preferred = h
        .run(&["remove", "gpu-a100-1", "power-profile-", "-y"])
        .await;
    assert_code(&preferred, 0);
    assert!(
        preferred.stderr.contains(
            "warning: Deployment ml/llm-inference prefers power-profile In [balanced] (preferred node affinity): node/gpu-a100-1 would no longer match"
        ),
        "{}",
        preferred.all()
    );

    let dependents = h.run(&["dependents", FAMILY, "power-profile", "-A"]).await;
    assert_code(&dependents, 0);
    let lines: Vec<&str> = dependents.stdout.lines().collect();
    assert!(
        lines[0].starts_with("NAMESPACE  KIND"),
        "{}",
        dependents.all()
    );
    assert!(lines[1].starts_with("ml         Deployment  llm-inference  required    accelerator.example.com/gpu-family In [a100]"), "{}", dependents.all());
    assert!(
        lines[2].starts_with(
            "ml         Deployment  llm-inference  preferred   power-profile In [balanced]"
        ),
        "{}",
        dependents.all()
    );
    let json = h
        .run(&["dependents", &format!("{FAMILY}=a100"), "-o", "json"])
        .await
        .json();
    assert_eq!(json["items"][0]["constraint"], "required");
    assert_eq!(json["items"][0]["kind"], "Deployment");
}

/// A pod of a controller placekit does not list (a RayCluster's worker, a PyTorchJob's
/// replica), bound to `node`, requiring `gpu-family In [family]`.
fn owned_pod(
    name: &str,
    owner_kind: &str,
    owner: &str,
    node: &str,
    family: &str,
) -> serde_json::Value {
    let api_version = match owner_kind {
        "RayCluster" => "ray.io/v1",
        _ => "kubeflow.org/v1",
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "ownerReferences": [{
            "apiVersion": api_version, "kind": owner_kind, "name": owner,
            "uid": "6a1b2c3d-0000-4000-8000-000000000001", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {
            "nodeName": node,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": FAMILY, "operator": "In", "values": [family]}]}]}}},
            "containers": [{"name": "worker", "image": "x"}]
        },
        "status": {"phase": "Running"}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_of_custom_resources_are_dependents_under_their_owner() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    // Three workers of one RayCluster on gpu-h100-1 (family h100), one PyTorchJob replica.
    for i in 0..3 {
        h.create(owned_pod(
            &format!("raycluster-worker-{i}"),
            "RayCluster",
            "raycluster",
            "gpu-h100-1",
            "h100",
        ))
        .await;
    }
    h.create(owned_pod(
        "pytorchjob-worker-0",
        "PyTorchJob",
        "finetune",
        "gpu-h100-1",
        "h100",
    ))
    .await;
    let dependents = h.run(&["dependents", FAMILY, "-A"]).await;
    assert_code(&dependents, 0);
    let rows = table_rows(&dependents);
    assert!(
        rows.contains(&format!(
            "ml RayCluster raycluster required {FAMILY} In [h100]"
        )),
        "{}",
        dependents.all()
    );
    assert!(
        rows.contains(&format!(
            "ml PyTorchJob finetune required {FAMILY} In [h100]"
        )),
        "{}",
        dependents.all()
    );
    assert_eq!(
        rows.iter().filter(|r| r.contains("RayCluster")).count(),
        1,
        "three workers with one spec are one line: {}",
        dependents.all()
    );
    // Removing the label the workers require is blocked: the RayCluster recreates them from
    // the same spec, and they could no longer land there.
    let run = h
        .run(&["remove", "gpu-h100-1", &format!("{FAMILY}-"), "-y"])
        .await;
    assert_code(&run, 1);
    assert!(
        run.stderr.contains(&format!("RayCluster ml/raycluster requires {FAMILY} In [h100] (required node affinity): node/gpu-h100-1 matches it now and would not after this change")),
        "{}",
        run.all()
    );
    assert_eq!(h.labels("gpu-h100-1").await[FAMILY], "h100");
}

/// A table's lines with columns separated by one space.
fn table_rows(run: &Run) -> Vec<String> {
    run.stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// A pod template requiring `gpu-family In [family]`.
fn template_requiring(family: &str) -> serde_json::Value {
    json!({"spec": {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": FAMILY, "operator": "In", "values": [family]}]}]}}},
        "containers": [{"name": "worker", "image": "x"}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resource_templates_are_dependents_even_scaled_to_zero() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    h.install_crds().await;
    // A RayCluster whose h100 worker group is scaled to zero: no pod, yet its next worker
    // depends on the label. A JobSet and a PyTorchJob whose templates require h100; the
    // PyTorchJob's running replica is reported once, under the job.
    h.create(json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ml"},
        "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "head", "image": "x"}]}}},
                 "workerGroupSpecs": [{"groupName": "h100", "replicas": 0, "minReplicas": 0, "template": template_requiring("h100")}]}}))
        .await;
    h.create(json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {"template": template_requiring("h100")}}}]}}))
        .await;
    h.create(json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "finetune", "namespace": "ml"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": template_requiring("h100")}}}}))
        .await;
    h.create(owned_pod(
        "finetune-worker-0",
        "PyTorchJob",
        "finetune",
        "gpu-h100-1",
        "h100",
    ))
    .await;
    let dependents = h.run(&["dependents", FAMILY, "-A"]).await;
    assert_code(&dependents, 0);
    let rows = table_rows(&dependents);
    for owner in ["RayCluster rc", "JobSet train", "PyTorchJob finetune"] {
        let row = format!("ml {owner} required {FAMILY} In [h100]");
        assert_eq!(
            rows.iter().filter(|r| **r == row).count(),
            1,
            "{row} once:\n{}",
            dependents.all()
        );
    }
    let run = h
        .run(&["remove", "gpu-h100-1", &format!("{FAMILY}-"), "-y"])
        .await;
    assert_code(&run, 1);
    for owner in [
        "RayCluster ml/rc",
        "JobSet ml/train",
        "PyTorchJob ml/finetune",
    ] {
        assert!(
            run.stderr.contains(&format!("{owner} requires {FAMILY} In [h100] (required node affinity): node/gpu-h100-1 matches it now")),
            "{owner}: {}",
            run.all()
        );
    }
    assert_eq!(h.labels("gpu-h100-1").await[FAMILY], "h100");
    // RBAC that does not allow listing RayClusters: said once, the rest still judged.
    h.server().inject(Fault::new(
        "list",
        "rayclusters",
        1,
        FaultAction::Status {
            code: 403,
            retry_after_seconds: None,
        },
    ));
    let dependents = h.run(&["dependents", FAMILY, "-A"]).await;
    assert_code(&dependents, 0);
    assert_eq!(
        dependents.stderr.matches("cannot list rayclusters").count(),
        1,
        "{}",
        dependents.all()
    );
    assert!(
        dependents.stdout.contains("JobSet") && dependents.stdout.contains("PyTorchJob"),
        "{}",
        dependents.all()
    );
    if h.is_real() {
        // Without the CRDs, the running pod still counts, under its owner; nothing fails.
        h.uninstall_crds().await;
        h.create(owned_pod(
            "rc-worker-0",
            "RayCluster",
            "rc",
            "gpu-h100-1",
            "h100",
        ))
        .await;
        let dependents = h.run(&["dependents", FAMILY, "-A"]).await;
        assert_code(&dependents, 0);
        assert!(
            dependents.stdout.contains("RayCluster") && !dependents.stdout.contains("JobSet"),
            "{}",
            dependents.all()
        );
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_follows_the_runbook_hook_scenario_and_prunes_only_its_own_labels() {
    use std::os::unix::fs::PermissionsExt;
    let h = harness().await;
    let hook = h.dir.path().join("my-script");
    let write_hook = |body: &str| {
        std::fs::write(&hook, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write_hook(
        "echo net.core.somaxconn=4096\necho /vm.swappiness=10\necho makocchi.dev/kernel.pid_max=4194304\n",
    );
    let hook_arg = hook.display().to_string();
    let run = h
        .run(&["import", "--hook", &hook_arg, "gpu-a100-1", "-y"])
        .await;
    assert_code(&run, 0);
    let labels = h.labels("gpu-a100-1").await;
    assert_eq!(
        labels["feature.node.kubernetes.io/my-script-net.core.somaxconn"],
        "4096"
    );
    assert_eq!(labels["feature.node.kubernetes.io/vm.swappiness"], "10");
    assert_eq!(labels["makocchi.dev/kernel.pid_max"], "4194304");

    // A kubernetes.io key is refused and nothing is applied.
    write_hook("echo kubernetes.io/arch=arm64\necho /vm.overcommit=1\n");
    let refused = h
        .run(&["import", "--hook", &hook_arg, "gpu-a100-1", "-y"])
        .await;
    assert_code(&refused, 2);
    assert!(
        refused.stderr.contains("hook ")
            && refused.stderr.contains(
                ":1: label \"kubernetes.io/arch\": namespace \"kubernetes.io\" is not allowed"
            ),
        "{}",
        refused.all()
    );
    assert!(
        h.labels("gpu-a100-1")
            .await
            .get("feature.node.kubernetes.io/vm.overcommit")
            .is_none()
    );

    // --prune removes what the first import set and is gone now, never other labels.
    write_hook("echo /vm.swappiness=60\n");
    let pruned = h
        .run(&["import", "--hook", &hook_arg, "gpu-a100-1", "--prune", "-y"])
        .await;
    assert_code(&pruned, 0);
    let labels = h.labels("gpu-a100-1").await;
    assert_eq!(labels["feature.node.kubernetes.io/vm.swappiness"], "60");
    assert!(
        labels
            .get("feature.node.kubernetes.io/my-script-net.core.somaxconn")
            .is_none()
    );
    assert!(labels.get("makocchi.dev/kernel.pid_max").is_none());
    assert_eq!(
        labels["power-profile"], "balanced",
        "labels it did not import are untouched"
    );
    assert_eq!(labels[FAMILY], "v100");
    let annotations = h.node("gpu-a100-1").await["metadata"]["annotations"].clone();
    assert_eq!(
        annotations["placekit.dev/imported-labels"],
        r#"{"hook:my-script":["feature.node.kubernetes.io/vm.swappiness"]}"#
    );

    // The import is rolled back like any change, annotation included.
    assert_code(&h.run(&["rollback", "--last", "-y"]).await, 0);
    assert_eq!(
        h.labels("gpu-a100-1").await["makocchi.dev/kernel.pid_max"],
        "4194304"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_from_a_directory_of_node_files() {
    let h = harness().await;
    let dir = h.dir.path().join("features");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("gpu-a100-1.features"), "# cpu\ncpu-avx2\n").unwrap();
    std::fs::write(
        dir.join("gpu-a100-2"),
        "cpu-avx512=true\n# +no-label\nsecret=1\n",
    )
    .unwrap();
    std::fs::write(dir.join(".ignored"), "x=1\n").unwrap();
    let run = h
        .run(&["import", "--dir", &dir.display().to_string(), "-y"])
        .await;
    assert_code(&run, 0);
    assert_eq!(
        h.labels("gpu-a100-1").await["feature.node.kubernetes.io/cpu-avx2"],
        "true"
    );
    assert_eq!(
        h.labels("gpu-a100-2").await["feature.node.kubernetes.io/cpu-avx512"],
        "true"
    );
    assert!(
        h.labels("gpu-a100-2")
            .await
            .get("feature.node.kubernetes.io/secret")
            .is_none()
    );
    std::fs::write(dir.join("no-such-node"), "a=1\n").unwrap();
    let missing = h
        .run(&["import", "--dir", &dir.display().to_string(), "-y"])
        .await;
    assert_code(&missing, 2);
    assert!(
        missing.stderr.contains("node \"no-such-node\" not found"),
        "{}",
        missing.all()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_dry_run_changes_nothing_and_shows_the_same_diff() {
    let h = harness().await;
    let args = [
        "set",
        "gpu-a100-1",
        &format!("{FAMILY}=a100"),
        "zone-owner=ml",
        "--overwrite",
        "-y",
    ];
    let mut dry: Vec<&str> = args.to_vec();
    dry.push("--dry-run=server");
    let dry_run = h.run(&dry).await;
    assert_code(&dry_run, 0);
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "v100");
    assert!(
        h.snapshots().is_empty(),
        "a server dry run writes no snapshot"
    );
    assert_eq!(
        h.server().count("patch", "nodes"),
        1,
        "the write was sent with dryRun=All"
    );

    let mut client_args: Vec<&str> = args.to_vec();
    client_args.push("--dry-run=client");
    let client_run = h.run(&client_args).await;
    assert_eq!(
        h.server().count("patch", "nodes"),
        1,
        "a client dry run sends nothing"
    );

    let real = h.run(&args).await;
    assert_code(&real, 0);
    let diff = |r: &Run| {
        r.stdout
            .lines()
            .filter(|l| l.starts_with(['-', '+', ' ']))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(!diff(&real).is_empty());
    assert_eq!(diff(&dry_run), diff(&real));
    assert_eq!(diff(&client_run), diff(&real));
    assert_eq!(h.labels("gpu-a100-1").await[FAMILY], "a100");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_user_gets_a_permission_error_before_any_write() {
    let h = harness().await;
    let viewer = h.kubeconfig_for("viewer");
    let run = h
        .run_with(&["set", "gpu-a100-1", "x=y", "-y"], &viewer)
        .await;
    assert_code(&run, 3);
    assert!(run.stderr.contains("you are not allowed to patch nodes: missing RBAC permission verb=\"patch\" resource=\"nodes\""), "{}", run.all());
    assert_eq!(h.server().count("patch", "nodes"), 0);
    assert!(h.snapshots().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_exit_2_with_no_write() {
    let h = harness().await;
    let cases: &[(&[&str], &str)] = &[
        (
            &["set", "gpu-a100-1", "bad key=x", "-y"],
            "invalid label key",
        ),
        (
            &["set", "gpu-a100-1", "a/b/c=x", "-y"],
            "a valid label key must consist of alphanumeric characters",
        ),
        (
            &["set", "gpu-a100-1", "k=bad value", "-y"],
            "invalid label value",
        ),
        (
            &["set", "gpu-a100-1", "k=v", "k-", "-y"],
            "can not both modify and remove a label",
        ),
        (
            &["set", "no-such-node", "k=v", "-y"],
            "node \"no-such-node\" not found",
        ),
        (
            &["set", "-l", "pool in (online", "k=v", "-y"],
            "unable to parse requirement",
        ),
        (
            &["set", "gpu-a100-1", "-l", "pool=online", "k=v", "-y"],
            "cannot be combined",
        ),
        (
            &["rollback", "/nonexistent/snapshot.jsonl", "-y"],
            "/nonexistent/snapshot.jsonl",
        ),
    ];
    for (args, expected) in cases {
        let run = h.run(args).await;
        assert_eq!(run.code, 2, "{args:?}\n{}", run.all());
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.all());
        assert!(!run.stderr.contains("panicked"), "{}", run.all());
    }
    assert_eq!(h.server().count("patch", "nodes"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_or_yes_it_refuses() {
    let h = harness().await;
    let run = h.run(&["set", "gpu-a100-1", "k=v"]).await;
    assert_code(&run, 2);
    assert!(
        run.stderr
            .contains("refusing to change 1 node without confirmation"),
        "{}",
        run.all()
    );
    assert!(h.labels("gpu-a100-1").await.get("k").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_report_follows_the_schema() {
    let h = harness().await;
    let run = h
        .run(&[
            "set",
            "gpu-a100-3",
            &format!("{FAMILY}=a100"),
            "-y",
            "-o",
            "json",
        ])
        .await;
    assert_code(&run, 0);
    let report = run.json();
    assert_eq!(report["apiVersion"], "placekit.dev/v1");
    assert_eq!(report["kind"], "ChangeReport");
    assert_eq!(report["operation"], "set");
    assert_eq!(report["dryRun"], "none");
    assert_eq!(report["nodes"][0]["name"], "gpu-a100-3");
    assert_eq!(report["nodes"][0]["outcome"], "applied");
    assert_eq!(
        report["nodes"][0]["labelChanges"][0],
        json!({"key": FAMILY, "before": null, "after": "a100"})
    );
    assert!(
        report["snapshot"]
            .as_str()
            .unwrap()
            .ends_with(".snapshot.jsonl")
    );
    assert!(
        report["rollbackCommand"]
            .as_str()
            .unwrap()
            .starts_with("kubectl nodelabel rollback ")
    );
}

/// Runs the plugin on a pseudo-terminal (util-linux `script`), typing `answer` at the prompt.
fn run_on_tty(h: &Harness, args: &str, answer: &str) -> Option<(i32, String)> {
    use std::io::Write;
    if !placekit_testserver::require::tool(
        "nodelabel's confirmation on a terminal",
        placekit_testserver::require::Need::Script,
        "script",
        &["--version"],
    ) {
        return None;
    }
    let command = format!("{} {args}", binary().display());
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("KUBECONFIG", &h.kubeconfig)
        .env("PLACEKIT_STATE_DIR", &h.state_dir)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Give the prompt time to appear, then answer.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    stdin.write_all(answer.as_bytes()).unwrap();
    drop(stdin);
    let out = placekit_testserver::process::wait_output(child, "the plugin");
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_it_asks_and_respects_the_answer() {
    let h = harness().await;
    let h = std::sync::Arc::new(h);
    let h2 = h.clone();
    let Some((code, screen)) =
        tokio::task::spawn_blocking(move || run_on_tty(&h2, "set gpu-a100-1 team=ml", "n"))
            .await
            .unwrap()
    else {
        return;
    };
    assert!(screen.contains("Apply the change to 1 node?"), "{screen}");
    assert_eq!(code, 1, "{screen}");
    assert!(screen.contains("aborted: nothing was changed"), "{screen}");
    assert!(h.labels("gpu-a100-1").await.get("team").is_none());

    let h3 = h.clone();
    let (code, screen) =
        tokio::task::spawn_blocking(move || run_on_tty(&h3, "set gpu-a100-1 team=ml", "y"))
            .await
            .unwrap()
            .unwrap();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("node/gpu-a100-1 applied"), "{screen}");
    assert_eq!(h.labels("gpu-a100-1").await["team"], "ml");
}

/// `set` with a typo'd key or value says "did you mean" before the confirmation; a new
/// value that is no typo of another (a new GPU family) is set without a word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_says_did_you_mean_for_near_keys_and_values() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let typo = "accelerator.example.com/gpu-famliy";
    // Without --yes and a terminal: refused, and the hint is already on screen.
    let asked = h.run(&["set", "gpu-a100-1", &format!("{typo}=a100")]).await;
    assert_code(&asked, 2);
    assert!(
        asked.stderr.contains(&format!(
            "label {typo} is on none of the 1 node targeted, which have {FAMILY}: did you mean {FAMILY}?"
        )),
        "{}",
        asked.all()
    );
    assert!(h.labels("gpu-a100-1").await.get(typo).is_none());

    let value = h
        .run(&["set", "gpu-a100-3", &format!("{FAMILY}=V100"), "-y"])
        .await;
    assert_code(&value, 0);
    assert!(
        value.stderr.contains(&format!(
            "{FAMILY}=V100: no node has this value, and nodes have {FAMILY}=v100: did you mean v100?"
        )),
        "{}",
        value.all()
    );
    let new_family = h
        .run(&[
            "set",
            "gpu-a100-3",
            &format!("{FAMILY}=b200"),
            "--overwrite",
            "-y",
        ])
        .await;
    assert_code(&new_family, 0);
    assert!(
        !new_family.stderr.contains("did you mean"),
        "{}",
        new_family.all()
    );
}
