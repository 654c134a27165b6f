//! End-to-end tests of `kubectl gpu-taint` on the test API server, through the installed
//! binary and kubectl's plugin lookup.

use std::path::Path;

use placekit_testserver::harness::{Harness, Run};
use placekit_testserver::{ConcurrentWrite, Fault, FaultAction, ServerConfig};
use serde_json::json;

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");
const POOL: &str = "ops.example.com.node-restriction.kubernetes.io/llm-pool";

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
}

async fn harness() -> Option<Harness> {
    Harness::start("gpu-taint", binary(), FIXTURE).await
}

fn assert_code(run: &Run, code: i32) {
    assert_eq!(run.code, code, "{}", run.all());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_scenario_dedicates_in_one_write_and_rollback_removes_exactly_that() {
    let Some(h) = harness().await else { return };
    let before = h.node("gpu-a100-1").await;
    let run = h
        .run(&[
            "dedicate",
            "gpu-a100-1",
            "--taint",
            "dedicated=llm-online:NoSchedule",
            "--label",
            &format!("{POOL}=online"),
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    assert!(
        run.stderr
            .contains("node/gpu-a100-1: nvidia.com/gpu capacity 8, allocatable 8"),
        "{}",
        run.all()
    );
    assert!(
        run.stderr.contains(
            "2 running pods do not tolerate dedicated=llm-online:NoSchedule; they keep running"
        ),
        "{}",
        run.all()
    );
    assert!(
        !run.stderr.contains("gpu-plugin-x"),
        "DaemonSet pods are not listed"
    );
    assert_eq!(
        h.server().count("patch", "nodes"),
        1,
        "taint and label in one write"
    );
    let node = h.node("gpu-a100-1").await;
    assert_eq!(
        node["spec"]["taints"],
        json!([{"key": "dedicated", "value": "llm-online", "effect": "NoSchedule"}])
    );
    assert_eq!(node["metadata"]["labels"][POOL], "online");

    let rolled = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&rolled, 0);
    let after = h.node("gpu-a100-1").await;
    assert_eq!(after["metadata"]["labels"], before["metadata"]["labels"]);
    assert!(after["spec"].get("taints").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_the_gpu_resource_is_refused_unless_allowed() {
    let Some(h) = harness().await else { return };
    let run = h
        .run(&[
            "dedicate",
            "gpu-new-1",
            "--taint",
            "dedicated=gpu:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&run, 1);
    assert!(run.stderr.contains("node/gpu-new-1 has no nvidia.com/gpu capacity: the device plugin has not registered the resource there"), "{}", run.all());
    assert!(run.stderr.contains("--allow-no-gpu"), "{}", run.all());
    assert!(h.node("gpu-new-1").await["spec"].get("taints").is_none());
    let allowed = h
        .run(&[
            "dedicate",
            "gpu-new-1",
            "--taint",
            "dedicated=gpu:NoSchedule",
            "--allow-no-gpu",
            "-y",
        ])
        .await;
    assert_code(&allowed, 0);
    assert_eq!(
        h.node("gpu-new-1").await["spec"]["taints"][0]["key"],
        "dedicated"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_execute_lists_the_pods_it_would_evict_and_needs_explicit_confirmation() {
    let Some(h) = harness().await else { return };
    let refused = h
        .run(&[
            "dedicate",
            "gpu-a100-1",
            "--taint",
            "dedicated=llm-online:NoExecute",
        ])
        .await;
    assert_code(&refused, 2);
    assert!(
        refused.stderr.contains("will be EVICTED"),
        "{}",
        refused.all()
    );
    assert!(
        refused.stderr.contains("ml/trainer on node/gpu-a100-1"),
        "{}",
        refused.all()
    );
    assert!(
        refused.stderr.contains("ml/inference on node/gpu-a100-1"),
        "{}",
        refused.all()
    );
    // The device plugin's DaemonSet pod does not tolerate a custom taint: NoExecute evicts
    // it like any other pod, so it is listed too.
    assert!(
        refused
            .stderr
            .contains("kube-system/gpu-plugin-x on node/gpu-a100-1 (DaemonSet pod)"),
        "{}",
        refused.all()
    );
    assert!(
        refused.stderr.contains("refusing to change 1 node (")
            && refused.stderr.contains("without confirmation"),
        "{}",
        refused.all()
    );
    assert!(h.node("gpu-a100-1").await["spec"].get("taints").is_none());
    let confirmed = h
        .run(&[
            "dedicate",
            "gpu-a100-1",
            "--taint",
            "dedicated=llm-online:NoExecute",
            "--yes",
        ])
        .await;
    assert_code(&confirmed, 0);
    assert_eq!(
        h.node("gpu-a100-1").await["spec"]["taints"][0]["effect"],
        "NoExecute"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_never_removes_a_taint_with_another_value() {
    let Some(h) = harness().await else { return };
    let run = h
        .run(&[
            "release",
            "gpu-a100-2",
            "--taint",
            "dedicated=llm-online:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&run, 1);
    // The mismatch is the run's problem (stdout, with the report), said once.
    let mismatch = "taint dedicated=batch:NoSchedule has the same key and effect as dedicated=llm-online:NoSchedule but another value: left in place";
    assert!(run.stdout.contains(mismatch), "{}", run.all());
    assert_eq!(run.all().matches(mismatch).count(), 1, "{}", run.all());
    assert_eq!(
        h.node("gpu-a100-2").await["spec"]["taints"],
        json!([{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}])
    );
    assert_eq!(h.server().count("patch", "nodes"), 0);

    // The exact taint is released, with its pool label.
    let exact = h
        .run(&[
            "release",
            "gpu-a100-2",
            "--taint",
            "dedicated=batch:NoSchedule",
            "--label",
            POOL,
            "-y",
        ])
        .await;
    assert_code(&exact, 0);
    let node = h.node("gpu-a100-2").await;
    assert!(node["spec"].get("taints").is_none());
    assert!(node["metadata"]["labels"].get(POOL).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_taint_removal_would_have_removed_the_other_value() {
    // The contrast for the test above: kubectl ignores the value on removal.
    let Some(h) = harness().await else { return };
    let kubeconfig = h.kubeconfig.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("kubectl")
            .args([
                "taint",
                "node",
                "gpu-a100-2",
                "dedicated=llm-online:NoSchedule-",
            ])
            .env("KUBECONFIG", kubeconfig)
            .output()
    })
    .await
    .unwrap();
    let Ok(out) = out else {
        eprintln!("NOTICE: kubectl is not on PATH; skipping the kubectl contrast test");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        h.node("gpu-a100-2").await["spec"].get("taints").is_none(),
        "kubectl removed dedicated=batch:NoSchedule"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_prints_the_known_figures() {
    let Some(h) = harness().await else { return };
    let run = h.run(&["status"]).await;
    assert_code(&run, 0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{}", run.all());
    let row = |name: &str| -> Vec<String> {
        lines
            .iter()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name}: {}", run.all()))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // trainer: max(init 4, app 2) = 4; inference: limit-only 1; finished: terminated; DaemonSet pod: none.
    assert_eq!(
        row("gpu-a100-1")[..6],
        ["gpu-a100-1", "8", "8", "5", "3", "zone-a"]
    );
    assert_eq!(
        row("gpu-a100-2")[..7],
        [
            "gpu-a100-2",
            "8",
            "6",
            "2",
            "4",
            "zone-b",
            "dedicated=batch:NoSchedule"
        ]
    );
    let a2 = lines.iter().find(|l| l.starts_with("gpu-a100-2")).unwrap();
    assert!(
        a2.contains("allocatable 6 < capacity 8") && a2.contains("cordoned"),
        "{a2}"
    );
    let new = lines.iter().find(|l| l.starts_with("gpu-new-1")).unwrap();
    assert!(
        new.contains(
            "no nvidia.com/gpu capacity: not a GPU node, or its device plugin has not registered it"
        ),
        "{new}"
    );
    assert!(
        lines.last().unwrap().starts_with("TOTAL (3 nodes)  16"),
        "{}",
        run.all()
    );

    let json = h.run(&["status", "-o", "json"]).await.json();
    assert_eq!(json["apiVersion"], "placekit.dev/v1");
    assert_eq!(json["kind"], "GpuInventory");
    assert_eq!(json["resource"], "nvidia.com/gpu");
    assert_eq!(
        json["nodes"][0],
        json!({
            "name": "gpu-a100-1", "capacity": 8, "allocatable": 8, "requested": 5, "free": 3,
            "zone": "zone-a", "taints": [], "poolLabels": {}, "warnings": []
        })
    );
    assert_eq!(json["nodes"][2]["capacity"], serde_json::Value::Null);
    assert_eq!(
        json["totals"],
        json!({"nodes": 3, "capacity": 16, "allocatable": 14, "requested": 7, "free": 7})
    );
    assert_eq!(
        h.server().count("list", "nodes"),
        2,
        "one node list per run"
    );
    assert_eq!(h.server().count("list", "pods"), 2, "one pod list per run");
    assert_eq!(h.server().count("get", "nodes"), 0);

    let wide = h
        .run(&[
            "status",
            "-o",
            "wide",
            "-l",
            "accelerator.example.com/gpu-family=a100",
        ])
        .await;
    assert!(
        wide.stdout.contains("POOL LABELS") && wide.stdout.contains(&format!("{POOL}=batch")),
        "{}",
        wide.all()
    );
    assert!(!wide.stdout.contains("gpu-new-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_taint_change_is_a_conflict_and_nothing_is_lost() {
    let Some(h) = harness().await else { return };
    h.server().concurrent_write(ConcurrentWrite::new(
        "nodes",
        "gpu-a100-1",
        json!({"spec": {"taints": [{"key": "maintenance", "effect": "NoSchedule"}]}}),
    ));
    let run = h
        .run(&[
            "dedicate",
            "gpu-a100-1",
            "--taint",
            "dedicated=gpu:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&run, 1);
    assert!(
        run.stdout.contains("node/gpu-a100-1 conflict"),
        "{}",
        run.all()
    );
    assert_eq!(
        h.node("gpu-a100-1").await["spec"]["taints"],
        json!([{"key": "maintenance", "effect": "NoSchedule"}]),
        "the other writer's taint survives"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_taint_specs_are_exit_2() {
    let Some(h) = harness().await else { return };
    for (args, expected) in [
        (
            vec![
                "dedicate",
                "gpu-a100-1",
                "--taint",
                "dedicated=gpu:Sometimes",
                "-y",
            ],
            "invalid taint effect: Sometimes",
        ),
        (
            vec![
                "dedicate",
                "gpu-a100-1",
                "--taint",
                "a=b=c:NoSchedule",
                "-y",
            ],
            "invalid taint spec: a=b=c:NoSchedule",
        ),
        (
            vec![
                "dedicate",
                "gpu-a100-1",
                "--taint",
                "dedicated=gpu:NoSchedule",
                "--label",
                "pool",
                "-y",
            ],
            "--label pool: dedicate sets pool labels, so it takes KEY=VALUE",
        ),
        (
            vec![
                "dedicate",
                "missing-node",
                "--taint",
                "dedicated=gpu:NoSchedule",
                "-y",
            ],
            "node \"missing-node\" not found",
        ),
        (
            vec!["release", "--taint", "dedicated=gpu:NoSchedule", "-y"],
            "no nodes given",
        ),
        // No silent default taint: the admin names the taint to add.
        (
            vec!["dedicate", "gpu-a100-1", "-y"],
            "the following required arguments were not provided:\n  --taint <KEY=VALUE:EFFECT>",
        ),
    ] {
        let run = h.run(&args).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.all());
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.all());
    }
    assert_eq!(h.server().count("patch", "nodes"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_on_a_generated_cluster_uses_a_few_list_calls() {
    if std::env::var_os("PLACEKIT_E2E_KUBECONFIG").is_some() {
        return;
    }
    let config = ServerConfig::default().with_generator(placekit_testserver::Generator {
        nodes: 200,
        pods: 6_000,
        gpus_per_node: 8,
    });
    let h = Harness::local("gpu-taint", binary(), config).await;
    let json = h.run(&["status", "-o", "json"]).await.json();
    assert_eq!(json["nodes"].as_array().unwrap().len(), 200);
    // 30 pods per node; nodes fill 0, 2, 4, 6 or 8 of their 8 GPUs in turn: 800 of 1,600
    // requested, none over-committed.
    assert_eq!(json["totals"]["requested"], 800);
    assert_eq!(json["totals"]["capacity"], 1600);
    let nodes = json["nodes"].as_array().unwrap();
    assert!(
        nodes.iter().all(|n| n["free"].as_i64().unwrap() >= 0),
        "{json}"
    );
    assert!(nodes.iter().any(|n| n["free"] == 0) && nodes.iter().any(|n| n["free"] == 8));
    assert_eq!(h.server().count("list", "nodes"), 1);
    assert_eq!(h.server().count("list", "pods"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stdout_exits_quietly() {
    let Some(h) = Harness::start("gpu-taint", binary(), FIXTURE).await else {
        return;
    };
    let mut child = std::process::Command::new(binary())
        .args(["status"])
        .env("KUBECONFIG", &h.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// A Deployment in `batch` whose nodeSelector requires the batch pool label.
fn batch_deployment() -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "batch-runner", "namespace": "batch"},
        "spec": {"selector": {"matchLabels": {"app": "batch-runner"}}, "template": {
            "metadata": {"labels": {"app": "batch-runner"}},
            "spec": {"nodeSelector": {POOL: "batch"},
                     "containers": [{"name": "c", "image": "registry.example.com/c:1"}]}}}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_and_dedicate_check_the_dependents_of_pool_labels_like_nodelabel() {
    let Some(h) = harness().await else { return };
    h.create(batch_deployment()).await;
    let release = [
        "release",
        "gpu-a100-2",
        "--taint",
        "dedicated=batch:NoSchedule",
        "--label",
        POOL,
        "-y",
    ];
    let blocked = h.run(&release).await;
    assert_code(&blocked, 1);
    assert!(
        blocked.stderr.contains("Deployment batch/batch-runner requires ops.example.com.node-restriction.kubernetes.io/llm-pool=batch (nodeSelector): node/gpu-a100-2 matches it now and would not after this change"),
        "{}",
        blocked.all()
    );
    assert_eq!(h.labels("gpu-a100-2").await[POOL], "batch");
    assert_eq!(h.server().count("patch", "nodes"), 0);

    let moved = h
        .run(&[
            "dedicate",
            "gpu-a100-2",
            "--taint",
            "dedicated=batch:NoSchedule",
            "--label",
            &format!("{POOL}=online"),
            "--overwrite",
            "-y",
        ])
        .await;
    assert_code(&moved, 1);
    assert!(moved.stderr.contains("use --force"), "{}", moved.all());
    assert_eq!(h.labels("gpu-a100-2").await[POOL], "batch");

    let mut forced = release.to_vec();
    forced.push("--force");
    let run = h.run(&forced).await;
    assert_code(&run, 0);
    assert!(h.labels("gpu-a100-2").await.get(POOL).is_none());
    assert!(h.node("gpu-a100-2").await["spec"].get("taints").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taint_whose_answer_was_lost_is_applied_and_rolled_back() {
    let Some(h) = harness().await else { return };
    h.server()
        .inject(Fault::new("patch", "nodes", 1, FaultAction::LoseAnswer));
    h.server().inject(Fault {
        times: 4,
        ..Fault::new(
            "patch",
            "nodes",
            2,
            FaultAction::Status {
                code: 500,
                retry_after_seconds: None,
            },
        )
    });
    let run = h
        .run(&[
            "dedicate",
            "gpu-a100-1",
            "--taint",
            "dedicated=llm-online:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    assert!(
        run.stdout
            .contains("node/gpu-a100-1 applied: applied by an attempt whose answer was lost"),
        "{}",
        run.all()
    );
    let undo = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&undo, 0);
    assert!(h.node("gpu-a100-1").await["spec"].get("taints").is_none());
}
