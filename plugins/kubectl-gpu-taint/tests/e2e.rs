//! End-to-end tests of `kubectl gpu-taint` on the test API server, through the installed
//! binary and kubectl's plugin lookup.

use std::path::Path;

use placekit_testserver::builders::pod;
use placekit_testserver::harness::{Harness, Run, assert_code};
use placekit_testserver::printed::PrintedTable;
use placekit_testserver::process::Bounded as _;
use placekit_testserver::{ConcurrentWrite, Fault, FaultAction, ServerConfig};
use serde_json::json;

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");
const POOL: &str = "ops.example.com.node-restriction.kubernetes.io/llm-pool";

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
}

async fn harness() -> Harness {
    Harness::start("gpu-taint", binary(), FIXTURE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runbook_scenario_dedicates_in_one_write_and_rollback_removes_exactly_that() {
    let h = harness().await;
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
    let h = harness().await;
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
    let h = harness().await;
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
    let h = harness().await;
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
    let h = harness().await;
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
            .bounded_output()
    })
    .await
    .unwrap();
    let Ok(out) = out else {
        placekit_testserver::require::skip(
            "gpu-taint's contrast with kubectl taint",
            placekit_testserver::require::Need::Kubectl,
            "kubectl is not on PATH",
        );
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
    let h = harness().await;
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
        row("gpu-a100-1")[..8],
        [
            "gpu-a100-1",
            "nvidia.com/gpu",
            "8",
            "8",
            "5",
            "3",
            "whole",
            "zone-a"
        ]
    );
    assert_eq!(
        row("gpu-a100-2")[2..9],
        [
            "8",
            "6",
            "2",
            "4",
            "whole",
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
            "no accelerator: not a GPU node, or its device plugin or DRA driver has not registered one"
        ),
        "{new}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("TOTAL (2 nodes)  nvidia.com/gpu  16"),
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
            "zone": "zone-a", "taints": [], "poolLabels": {}, "warnings": [],
            "accelerators": [{"resource": "nvidia.com/gpu", "form": "whole", "capacity": 8,
                "allocatable": 8, "requested": 5, "free": 3}]
        })
    );
    assert_eq!(json["nodes"][2]["capacity"], serde_json::Value::Null);
    assert_eq!(
        json["totals"],
        json!({"nodes": 3, "capacity": 16, "allocatable": 14, "requested": 7, "free": 7,
            "byResource": [{"resource": "nvidia.com/gpu", "form": "whole", "nodes": 2, "capacity": 16,
                "allocatable": 14, "requested": 7, "free": 7}]})
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
    let h = harness().await;
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
    let h = harness().await;
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
    let h = Harness::start("gpu-taint", binary(), FIXTURE).await;
    let mut child = std::process::Command::new(binary())
        .args(["status"])
        .env("KUBECONFIG", &h.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = tokio::task::spawn_blocking(move || {
        placekit_testserver::process::wait_output(child, "the plugin")
    })
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
    let h = harness().await;
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
    assert!(
        moved.stderr.contains(&format!("to change them anyway: kubectl gpu-taint dedicate gpu-a100-2 --taint dedicated=batch:NoSchedule --label {POOL}=online --overwrite -y --ignore-dependents")),
        "{}",
        moved.all()
    );
    assert_eq!(h.labels("gpu-a100-2").await[POOL], "batch");

    let mut forced = release.to_vec();
    forced.push("--ignore-dependents");
    let run = h.run(&forced).await;
    assert_code(&run, 0);
    assert!(h.labels("gpu-a100-2").await.get(POOL).is_none());
    assert!(h.node("gpu-a100-2").await["spec"].get("taints").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taint_whose_answer_was_lost_is_applied_and_rolled_back() {
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

const ACCELERATORS: &str = include_str!("fixtures/accelerators.yaml");

/// The FIGURES of the status row for `node` and `resource` (the RESOURCE column as
/// printed), read by column name.
fn status_row(run: &Run, node: &str, resource: &str) -> Vec<String> {
    PrintedTable::parse(&run.stdout, "NAME")
        .row(&[("NAME", node), ("RESOURCE", resource)])
        .cells(&FIGURES)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// The figures of a status row, in the order the table prints them.
const FIGURES: [&str; 5] = ["CAPACITY", "ALLOCATABLE", "REQUESTED", "FREE", "FORM"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_mig_time_sliced_and_dra_accelerators() {
    let h = Harness::start("gpu-taint", binary(), ACCELERATORS).await;
    let run = h.run(&["status"]).await;
    assert_code(&run, 0);
    assert_eq!(
        status_row(&run, "gpu-a100-1", "nvidia.com/gpu"),
        ["8", "8", "3", "5", "whole"]
    );
    // MIG mixed: no whole GPU, the profiles by name; not "not a GPU node".
    assert_eq!(
        status_row(&run, "gpu-mig-1", "nvidia.com/gpu"),
        ["0", "0", "0", "0", "MIG mixed"]
    );
    assert_eq!(
        status_row(&run, "gpu-mig-1", "nvidia.com/mig-1g.10gb"),
        ["14", "14", "2", "12", "MIG"]
    );
    assert_eq!(
        status_row(&run, "gpu-mig-1", "nvidia.com/mig-3g.40gb")[0],
        "4"
    );
    // Time-slicing: 32 = 8 physical GPUs shared 4 ways.
    assert_eq!(
        status_row(&run, "gpu-ts-1", "nvidia.com/gpu"),
        ["32", "32", "4", "28", "time-slicing 8x4"]
    );
    // DRA: both devices of gpu-dra-1 allocated to the trainer's claim; one of gpu-dra-2 to
    // the claim the scheduler made for a classic example.com/gpu request.
    assert_eq!(
        status_row(&run, "gpu-dra-1", "gpu.example.com (DRA)"),
        ["2", "2", "2", "0", "DRA"]
    );
    assert_eq!(
        status_row(&run, "gpu-dra-2", "gpu.example.com (DRA)"),
        ["2", "2", "1", "1", "DRA"]
    );
    // Only the node without any accelerator is called "not a GPU node".
    let not_gpu: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("not a GPU node"))
        .collect();
    assert!(
        not_gpu.len() == 1 && not_gpu[0].starts_with("cpu-1"),
        "{}",
        run.all()
    );
    let cpu = run.stdout.lines().find(|l| l.starts_with("cpu-1")).unwrap();
    assert!(cpu.contains("no accelerator"), "{cpu}");
    let total = |resource: &str| -> Vec<String> {
        run.stdout
            .lines()
            .find(|l| l.starts_with("TOTAL") && l.contains(&format!(" {resource} ")))
            .unwrap_or_else(|| panic!("no total for {resource}: {}", run.all()))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let dra_total = total("gpu.example.com");
    assert!(
        dra_total
            .join(" ")
            .contains("(2 nodes) gpu.example.com (DRA) 4 4 3 1"),
        "{dra_total:?}"
    );
    let gpu_total = total("nvidia.com/gpu");
    assert!(
        gpu_total
            .join(" ")
            .contains("(2 nodes) nvidia.com/gpu 40 40 7 33 16 physical"),
        "{gpu_total:?}"
    );

    let json = h.run(&["status", "-o", "json"]).await.json();
    let node = |name: &str| {
        json["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {json}"))
            .clone()
    };
    let ts = node("gpu-ts-1");
    assert_eq!(ts["accelerators"][0]["form"], "time-slicing");
    assert_eq!(ts["accelerators"][0]["physical"], 8);
    assert_eq!(ts["accelerators"][0]["replicas"], 4);
    let dra = node("gpu-dra-1");
    assert_eq!(
        dra["accelerators"][0],
        json!({"resource": "gpu.example.com", "form": "dra", "capacity": 2, "allocatable": 2,
               "requested": 2, "free": 0, "pools": ["gpu-dra-1"], "deviceClasses": ["gpu.example.com"],
               "servesExtendedResources": ["example.com/gpu"]})
    );
    assert_eq!(dra["warnings"], json!([]));
    let mig = node("gpu-mig-1");
    assert_eq!(mig["accelerators"].as_array().unwrap().len(), 4);
    assert_eq!(mig["accelerators"][1]["migConfig"], "all-balanced");
    // A few paged lists, never a call per node.
    assert_eq!(h.server().count("list", "nodes"), 2);
    assert_eq!(h.server().count("list", "pods"), 2);
    assert_eq!(h.server().count("list", "resourceslices"), 2);
    assert_eq!(h.server().count("list", "resourceclaims"), 2);
    assert_eq!(h.server().count("get", "nodes"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_of_an_extended_resource_served_by_dra_counts_its_devices() {
    let h = Harness::start("gpu-taint", binary(), ACCELERATORS).await;
    let run = h
        .run(&["status", "--resource", "example.com/gpu", "-o", "json"])
        .await;
    assert_code(&run, 0);
    let json = run.json();
    let node = |name: &str| {
        json["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .cloned()
            .unwrap()
    };
    let d2 = node("gpu-dra-2");
    assert_eq!(
        (&d2["capacity"], &d2["requested"], &d2["free"]),
        (&json!(2), &json!(1), &json!(1)),
        "{json}"
    );
    assert_eq!(json["totals"]["free"], 1);
    // MIG profile narrowed: only its rows.
    let mig = h
        .run(&["status", "--resource", "nvidia.com/mig-1g.10gb"])
        .await;
    assert_code(&mig, 0);
    assert_eq!(
        status_row(&mig, "gpu-mig-1", "nvidia.com/mig-1g.10gb")[0..4],
        ["14", "14", "2", "12"]
    );
    assert!(!mig.stdout.contains("mig-3g.40gb"), "{}", mig.all());
    let a100 = mig
        .stdout
        .lines()
        .find(|l| l.starts_with("gpu-a100-1"))
        .unwrap();
    assert!(
        a100.contains("no nvidia.com/mig-1g.10gb capacity (it has nvidia.com/gpu)"),
        "{a100}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_by_namespace_and_pod_breaks_requests_down() {
    let h = Harness::start("gpu-taint", binary(), ACCELERATORS).await;
    let by_ns = h.run(&["status", "--by", "namespace"]).await;
    assert_code(&by_ns, 0);
    let lines: Vec<&str> = by_ns.stdout.lines().collect();
    assert!(lines[0].starts_with("NAMESPACE"), "{}", by_ns.all());
    let cells = |l: &&str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let rows: Vec<String> = lines[1..].iter().map(cells).collect();
    assert_eq!(
        rows,
        vec![
            "batch nvidia.com/gpu 3 1",
            "batch gpu.example.com (DRA) 1 1",
            "ml nvidia.com/gpu 4 1",
            "ml nvidia.com/mig-1g.10gb 2 1",
            "ml gpu.example.com (DRA) 2 1",
        ],
        "{}",
        by_ns.all()
    );
    // -n alone is the runbook's per-pod script for that namespace.
    let by_pod = h.run(&["status", "-n", "ml"]).await;
    assert_code(&by_pod, 0);
    let rows: Vec<String> = by_pod.stdout.lines().skip(1).map(|l| cells(&l)).collect();
    assert_eq!(
        rows,
        vec![
            "ml mig-job gpu-mig-1 nvidia.com/mig-1g.10gb 2",
            "ml trainer gpu-dra-1 gpu.example.com (DRA) 2",
            "ml ts-infer gpu-ts-1 nvidia.com/gpu 4",
        ],
        "{}",
        by_pod.all()
    );
    let json = h
        .run(&["status", "--by", "pod", "-A", "-o", "json"])
        .await
        .json();
    assert_eq!(json["kind"], "GpuRequests");
    assert_eq!(json["items"].as_array().unwrap().len(), 5, "{json}");
    // Named nodes: only the pods (and claims) on them.
    let on_nodes = h
        .run(&["status", "--by", "pod", "gpu-dra-1", "gpu-a100-1"])
        .await;
    assert_code(&on_nodes, 0);
    let rows: Vec<String> = on_nodes.stdout.lines().skip(1).map(|l| cells(&l)).collect();
    assert_eq!(
        rows,
        vec![
            "batch a100-job gpu-a100-1 nvidia.com/gpu 3",
            "ml trainer gpu-dra-1 gpu.example.com (DRA) 2",
        ],
        "{}",
        on_nodes.all()
    );
    let empty = h.run(&["status", "-n", "default"]).await;
    assert_code(&empty, 0);
    assert!(
        empty
            .stderr
            .contains("No accelerator requests found in default namespace."),
        "{}",
        empty.all()
    );
    // -L adds label columns as kubectl does.
    let labelled = h
        .run(&[
            "status",
            "-L",
            "nvidia.com/gpu.product",
            "-l",
            "pool=online",
        ])
        .await;
    assert_code(&labelled, 0);
    assert!(
        labelled
            .stdout
            .lines()
            .next()
            .unwrap()
            .contains("GPU.PRODUCT"),
        "{}",
        labelled.all()
    );
    assert!(
        labelled.stdout.contains("NVIDIA-A100-SXM4-80GB"),
        "{}",
        labelled.all()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedicate_accepts_mig_time_sliced_and_dra_nodes_and_refuses_a_node_without_any() {
    let h = Harness::start("gpu-taint", binary(), ACCELERATORS).await;
    let run = h
        .run(&[
            "dedicate",
            "gpu-mig-1",
            "gpu-ts-1",
            "gpu-dra-1",
            "--taint",
            "dedicated=llm:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    for expected in [
        "node/gpu-mig-1: nvidia.com/gpu capacity 0, allocatable 0 (MIG mixed); nvidia.com/mig-1g.10gb capacity 14, allocatable 14 (MIG)",
        "node/gpu-ts-1: nvidia.com/gpu capacity 32, allocatable 32 (time-slicing 8x4)",
        "node/gpu-dra-1: gpu.example.com (DRA) capacity 2, allocatable 2 (DRA)",
    ] {
        assert!(run.stderr.contains(expected), "{expected}: {}", run.all());
    }
    for node in ["gpu-mig-1", "gpu-ts-1", "gpu-dra-1"] {
        assert_eq!(h.node(node).await["spec"]["taints"][0]["key"], "dedicated");
    }
    let refused = h
        .run(&[
            "dedicate",
            "cpu-1",
            "--taint",
            "dedicated=llm:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&refused, 1);
    assert!(
        refused.stderr.contains("node/cpu-1 has no nvidia.com/gpu capacity")
            && refused.stderr.contains("it has no other accelerator (MIG profile, shared GPU, another vendor's device or DRA device)"),
        "{}",
        refused.all()
    );
    // --resource narrows: a MIG-only node has no whole GPU to dedicate.
    let narrowed = h
        .run(&[
            "dedicate",
            "gpu-mig-1",
            "--taint",
            "other=x:NoSchedule",
            "--resource",
            "amd.com/gpu",
            "-y",
        ])
        .await;
    assert_code(&narrowed, 1);
    assert!(
        narrowed
            .stderr
            .contains("node/gpu-mig-1 has no amd.com/gpu capacity"),
        "{}",
        narrowed.all()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_without_permission_to_list_dra_objects_says_so_once_and_goes_on() {
    if std::env::var_os("PLACEKIT_E2E_KUBECONFIG").is_some() {
        return;
    }
    let config = ServerConfig::default()
        .with_fixture_yaml(ACCELERATORS)
        .with_user(
            "no-dra-token",
            placekit_testserver::User {
                name: "no-dra".into(),
                rules: vec![placekit_testserver::Rule {
                    verbs: vec!["get".into(), "list".into()],
                    resources: vec!["nodes".into(), "pods".into()],
                }],
            },
        );
    let h = Harness::local("gpu-taint", binary(), config).await;
    let run = h
        .run_with(&["status"], &h.kubeconfig_for("no-dra-token"))
        .await;
    assert_code(&run, 0);
    assert_eq!(
        run.stderr.matches("warning:").count(),
        1,
        "one warning: {}",
        run.all()
    );
    assert!(
        run.stderr.contains("cannot list deviceclasses")
            && run.stderr.contains("DRA devices are not counted"),
        "{}",
        run.all()
    );
    assert_eq!(
        status_row(&run, "gpu-ts-1", "nvidia.com/gpu"),
        ["32", "32", "4", "28", "time-slicing 8x4"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taint_that_takes_a_workloads_last_node_blocks_and_says_did_you_mean() {
    let h = Harness::start("gpu-taint", binary(), FIXTURE).await;
    // Only gpu-a100-1 is in zone-a: the Deployment's one candidate. It tolerates
    // dedicated=llm-online:NoSchedule.
    h.create(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "zone-a-llm", "namespace": "ml"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "zone-a-llm"}},
            "template": {"metadata": {"labels": {"app": "zone-a-llm"}}, "spec": {
                "nodeSelector": {"topology.kubernetes.io/zone": "zone-a"},
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "llm-online", "effect": "NoSchedule"}],
                "containers": [{"name": "server", "image": "x"}]}}}
    }))
    .await;
    // A device-plugin-like DaemonSet on the A100 nodes that tolerates only nvidia.com/gpu.
    h.create(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "gpu-device-plugin", "namespace": "ml"},
        "spec": {"selector": {"matchLabels": {"app": "gpu-device-plugin"}},
            "template": {"metadata": {"labels": {"app": "gpu-device-plugin"}}, "spec": {
                "nodeSelector": {"accelerator.example.com/gpu-family": "a100"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{"name": "plugin", "image": "x"}]}}}
    }))
    .await;
    let typo = h
        .run(&[
            "dedicate",
            "gpu-a100-1",
            "--taint",
            "dedicated=llm-onlne:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&typo, 1);
    assert!(
        typo.stderr.contains("Deployment ml/zone-a-llm does not tolerate dedicated=llm-onlne:NoSchedule, and node/gpu-a100-1 is the only node it can use now: new pods of it could not be scheduled anywhere; did you mean dedicated=llm-online:NoSchedule (the workload tolerates it)?"),
        "{}",
        typo.all()
    );
    assert!(
        typo.stderr.contains("to change them anyway: kubectl gpu-taint dedicate gpu-a100-1 --taint dedicated=llm-onlne:NoSchedule -y --ignore-dependents"),
        "{}",
        typo.all()
    );
    assert!(h.node("gpu-a100-1").await["spec"].get("taints").is_none());

    // The taint it tolerates: no block; the DaemonSet is named with the toleration to add.
    let right = h
        .run(&[
            "dedicate",
            "gpu-a100-1",
            "--taint",
            "dedicated=llm-online:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&right, 0);
    assert!(
        right.stderr.contains("DaemonSet ml/gpu-device-plugin selects node/gpu-a100-1 and does not tolerate dedicated=llm-online:NoSchedule: its pods there keep running, but one that goes (e.g. on the DaemonSet's next rollout) is not recreated there; to keep it there, add to its pod template the toleration {key: dedicated, operator: Equal, value: llm-online, effect: NoSchedule}"),
        "{}",
        right.all()
    );
    assert!(!right.stderr.contains("zone-a-llm"), "{}", right.all());
}

/// One undo stack per cluster across both plugins: after `gpu-taint dedicate --label`,
/// `nodelabel rollback --last` stops and names the dedicate with the command that undoes
/// it, instead of silently undoing an older nodelabel change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_last_never_skips_the_other_plugins_newer_change() {
    let h = Harness::start("gpu-taint", binary(), FIXTURE).await;
    h.install_plugin(
        "nodelabel",
        &binary().with_file_name(format!("kubectl-nodelabel{}", std::env::consts::EXE_SUFFIX)),
    );
    let older = h
        .run_plugin("nodelabel", &["set", "gpu-new-1", "team=ml", "-y"])
        .await;
    assert_code(&older, 0);
    let dedicate = h
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
    assert_code(&dedicate, 0);

    let refused = h
        .run_plugin("nodelabel", &["rollback", "--last", "-y"])
        .await;
    assert_code(&refused, 2);
    assert!(
        refused.stderr.contains(&format!(
            "the newest change on this cluster not yet undone was made by kubectl gpu-taint: `kubectl gpu-taint dedicate gpu-a100-1 --taint dedicated=llm-online:NoSchedule --label {POOL}=online -y`"
        )) && refused
            .stderr
            .contains("undo it first with `kubectl gpu-taint rollback --last`"),
        "{}",
        refused.all()
    );
    assert_eq!(
        h.labels("gpu-new-1").await["team"],
        "ml",
        "nothing was undone"
    );

    // In order: the dedicate, then the older label change.
    assert_code(&h.run(&["rollback", "--last", "-y"]).await, 0);
    assert!(h.node("gpu-a100-1").await["spec"].get("taints").is_none());
    assert_code(
        &h.run_plugin("nodelabel", &["rollback", "--last", "-y"])
            .await,
        0,
    );
    assert!(h.labels("gpu-new-1").await.get("team").is_none());
}

/// A Ready pod of `app` on `node`, owned by a ReplicaSet.
fn serving_pod(name: &str, app: &str, node: &str) -> serde_json::Value {
    pod("ml", name)
        .label("app", app)
        .owned_by("ReplicaSet", &format!("{app}-5d4f"))
        .on(node)
        .ready()
        .build()
}

/// A NoExecute dedicate evicts pods; one that a PodDisruptionBudget does not allow to go
/// blocks (as `kubectl drain` waits for it), with the exact command that goes on anyway. A
/// budget that allows the eviction does not block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_execute_respects_pod_disruption_budgets() {
    let h = Harness::start("gpu-taint", binary(), FIXTURE).await;
    h.create(serving_pod("llm-0", "llm", "gpu-a100-1")).await;
    h.create(serving_pod("llm-1", "llm", "gpu-a100-2")).await;
    h.create(
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "llm", "namespace": "ml"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "llm"}}}}),
    )
    .await;
    let args = [
        "dedicate",
        "gpu-a100-1",
        "--taint",
        "dedicated=llm:NoExecute",
        "--allow-no-gpu",
        "-y",
    ];
    let blocked = h.run(&args).await;
    assert_code(&blocked, 1);
    assert!(
        blocked.stderr.contains("PodDisruptionBudget ml/llm (maxUnavailable: 0; 2 of 2 pods healthy, 2 needed) allows 0 disruptions now: evicting ml/llm-0 on node/gpu-a100-1 would break it")
            && blocked.stderr.contains("to evict them anyway: kubectl gpu-taint dedicate gpu-a100-1 --taint dedicated=llm:NoExecute --allow-no-gpu -y --ignore-disruption-budgets"),
        "{}",
        blocked.all()
    );
    assert!(h.node("gpu-a100-1").await["spec"].get("taints").is_none());

    // A budget that allows one disruption lets the eviction go.
    h.merge_patch(
        "poddisruptionbudgets",
        Some("ml"),
        "llm",
        &json!({"spec": {"maxUnavailable": 1}}),
    )
    .await;
    let allowed = h.run(&args).await;
    assert_code(&allowed, 0);
    assert!(
        !allowed.stderr.contains("PodDisruptionBudget"),
        "{}",
        allowed.all()
    );
    assert_code(&h.run(&["rollback", "--last", "-y"]).await, 0);

    // The override goes on, saying what it overrode.
    h.merge_patch(
        "poddisruptionbudgets",
        Some("ml"),
        "llm",
        &json!({"spec": {"maxUnavailable": 0}}),
    )
    .await;
    let mut forced = args.to_vec();
    forced.push("--ignore-disruption-budgets");
    let run = h.run(&forced).await;
    assert_code(&run, 0);
    assert!(
        run.stderr.contains("(--ignore-disruption-budgets given)"),
        "{}",
        run.all()
    );
    assert_eq!(
        h.node("gpu-a100-1").await["spec"]["taints"][0]["effect"],
        "NoExecute"
    );
}

/// Taints a controller owns are not released without `--ignore-taint-owner`: cluster-
/// autoscaler's deletion mark, Karpenter's disruption taint, the node lifecycle controller's
/// condition taint, and the taint a GKE GPU node pool adds to its nodes (an admin's own
/// taint with the same key elsewhere is the admin's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_refuses_a_taint_a_controller_owns() {
    let h = harness().await;
    let node = |name: &str, labels: serde_json::Value, taint: serde_json::Value| {
        serde_json::json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": [taint]},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}})
    };
    h.create(node("ca-1", serde_json::json!({}),
        serde_json::json!({"key": "ToBeDeletedByClusterAutoscaler", "value": "1733500000", "effect": "NoSchedule"}))).await;
    h.create(node(
        "kp-1",
        serde_json::json!({"karpenter.sh/nodepool": "gpu"}),
        serde_json::json!({"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}),
    ))
    .await;
    h.create(node("gke-l4-1", serde_json::json!({"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-nodepool": "l4-pool"}),
        serde_json::json!({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}))).await;
    h.create(node(
        "lc-1",
        serde_json::json!({}),
        serde_json::json!({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}),
    ))
    .await;
    h.create(node(
        "ccm-1",
        serde_json::json!({}),
        serde_json::json!({"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}),
    ))
    .await;
    h.create(node(
        "own-1",
        serde_json::json!({}),
        serde_json::json!({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}),
    ))
    .await;
    for (node, taint, owner) in [
        (
            "ca-1",
            "ToBeDeletedByClusterAutoscaler=1733500000:NoSchedule",
            "cluster-autoscaler's",
        ),
        ("kp-1", "karpenter.sh/disrupted:NoSchedule", "Karpenter's"),
        (
            "lc-1",
            "node.kubernetes.io/unreachable:NoExecute",
            "the node lifecycle controller's",
        ),
        (
            "ccm-1",
            "node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule",
            "the cloud-controller-manager's",
        ),
        (
            "gke-l4-1",
            "nvidia.com/gpu=present:NoSchedule",
            "GKE (GPU node pool l4-pool)'s",
        ),
    ] {
        let run = h.run(&["release", node, "--taint", taint, "-y"]).await;
        assert_code(&run, 1);
        assert!(
            run.stderr
                .contains(&format!("node/{node}: taint {taint} is {owner}"))
                && run.stderr.contains("--ignore-taint-owner"),
            "{}",
            run.all()
        );
        assert!(
            h.node(node).await["spec"]["taints"]
                .as_array()
                .is_some_and(|t| t.len() == 1)
        );
    }
    assert_eq!(h.server().count("patch", "nodes"), 0);
    // The admin's own taint of the same key, on a node of no GKE GPU pool, goes.
    let run = h
        .run(&[
            "release",
            "own-1",
            "--taint",
            "nvidia.com/gpu=present:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    // With the override, said as overridden, and done.
    let run = h
        .run(&[
            "release",
            "ca-1",
            "--taint",
            "ToBeDeletedByClusterAutoscaler=1733500000:NoSchedule",
            "-y",
            "--ignore-taint-owner",
        ])
        .await;
    assert_code(&run, 0);
    assert!(
        run.stderr.contains("(--ignore-taint-owner given)"),
        "{}",
        run.all()
    );
    assert!(h.node("ca-1").await["spec"].get("taints").is_none());
    // Rolled back, the owner's taint is back as it was.
    assert_code(&h.run(&["rollback", "--last", "-y"]).await, 0);
    assert_eq!(
        h.node("ca-1").await["spec"]["taints"][0]["value"],
        "1733500000"
    );

    // A taint added with a key a controller manages is said; its rollback is a removal of
    // an owner's taint like a release, refused without the override and done with it.
    let taint = "ToBeDeletedByClusterAutoscaler=1733600000:NoSchedule";
    let run = h.run(&["dedicate", "own-1", "--taint", taint, "-y"]).await;
    assert_code(&run, 0);
    assert!(
        run.stderr.contains(&format!(
            "node/own-1: taint {taint} is a taint cluster-autoscaler manages"
        )),
        "{}",
        run.all()
    );
    let run = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&run, 1);
    assert!(run.stderr.contains("--ignore-taint-owner"), "{}", run.all());
    assert_eq!(
        h.node("own-1").await["spec"]["taints"][0]["key"],
        "ToBeDeletedByClusterAutoscaler"
    );
    let run = h
        .run(&["rollback", "--last", "-y", "--ignore-taint-owner"])
        .await;
    assert_code(&run, 0);
    assert!(h.node("own-1").await["spec"].get("taints").is_none());
}

/// A NoExecute dedicate of a Karpenter node says that Karpenter may consolidate the node it
/// empties, and how to keep it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_execute_dedicate_of_a_karpenter_node_warns_of_consolidation() {
    let h = harness().await;
    h.create(serde_json::json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "kp-gpu-1", "labels": {"karpenter.sh/nodepool": "gpu-spot"}},
        "spec": {},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}}))
        .await;
    let run = h
        .run(&[
            "dedicate",
            "kp-gpu-1",
            "--taint",
            "dedicated=llm:NoExecute",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    assert!(
        run.stderr.contains("Karpenter may then consolidate (delete) the emptied node once NodePool gpu-spot's consolidateAfter has passed")
            && run.stderr.contains("karpenter.sh/do-not-disrupt=true"),
        "{}",
        run.all()
    );
    // NoSchedule evicts nothing: no such warning.
    let run = h
        .run(&[
            "dedicate",
            "kp-gpu-1",
            "--taint",
            "other=x:NoSchedule",
            "-y",
        ])
        .await;
    assert_code(&run, 0);
    assert!(!run.stderr.contains("consolidate"), "{}", run.all());
}

/// A StatefulSet's pod on a node-local volume, and a Deployment's pod beside it.
const LOCAL_VOLUME: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: pk-lv-a
    labels: {kubernetes.io/hostname: pk-lv-a, pool: pk-lv}
  status:
    capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "2"}
    allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "2"}
- apiVersion: v1
  kind: Node
  metadata:
    name: pk-lv-b
    labels: {kubernetes.io/hostname: pk-lv-b, pool: pk-lv}
  status:
    capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "2"}
    allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "2"}
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: pk-local-nvme}
  provisioner: kubernetes.io/no-provisioner
  volumeBindingMode: WaitForFirstConsumer
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pk-lv-pv}
  spec:
    capacity: {storage: 100Gi}
    accessModes: [ReadWriteOnce]
    storageClassName: pk-local-nvme
    claimRef: {namespace: default, name: data-vector-db-0}
    local: {path: /mnt/nvme0}
    nodeAffinity:
      required:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: kubernetes.io/hostname, operator: In, values: [pk-lv-a]}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata:
    name: data-vector-db-0
    namespace: default
    annotations: {pv.kubernetes.io/bind-completed: "yes"}
  spec:
    accessModes: [ReadWriteOnce]
    storageClassName: pk-local-nvme
    volumeName: pk-lv-pv
    resources: {requests: {storage: 100Gi}}
- apiVersion: v1
  kind: Pod
  metadata:
    name: vector-db-0
    namespace: default
    ownerReferences:
    - {apiVersion: apps/v1, kind: StatefulSet, name: vector-db, uid: 0b7c3f4e-5d6a-4b8c-9e1f-2a3b4c5d6e7f, controller: true}
  spec:
    nodeName: pk-lv-a
    nodeSelector: {pool: pk-lv}
    containers:
    - name: db
      image: example/vector-db
      resources: {limits: {nvidia.com/gpu: "1"}}
    volumes:
    - name: data
      persistentVolumeClaim: {claimName: data-vector-db-0}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: embed-7d9f8-x2x4q
    namespace: default
    labels: {pod-template-hash: 7d9f8}
    ownerReferences:
    - {apiVersion: apps/v1, kind: ReplicaSet, name: embed-7d9f8, uid: 1c8d4a5f-6e7b-4c9d-8f2a-3b4c5d6e7f80, controller: true}
  spec:
    nodeName: pk-lv-a
    nodeSelector: {pool: pk-lv}
    containers:
    - name: embed
      image: example/embed
      resources: {limits: {nvidia.com/gpu: "1"}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: scratch-5c6d7-q8w2e
    namespace: default
    labels: {pod-template-hash: 5c6d7}
    ownerReferences:
    - {apiVersion: apps/v1, kind: ReplicaSet, name: scratch-5c6d7, uid: 2d9e5b6a-7f8c-4dae-9b3c-4c5d6e7f8091, controller: true}
  spec:
    nodeName: pk-lv-a
    containers:
    - name: scratch
      image: example/scratch
    volumes:
    - name: tmp
      ephemeral:
        volumeClaimTemplate:
          spec:
            accessModes: [ReadWriteOnce]
            storageClassName: pk-local-nvme
            resources: {requests: {storage: 10Gi}}
  status: {phase: Running}
"#;

/// A replacement keeps its pod's claims: a NoExecute dedicate of the node a StatefulSet's
/// pod has its local volume on says the replacement stays Pending (the volume's node
/// affinity leaves it no other node), with the scheduler's message, while the Deployment's
/// pod beside it fits on the other node. One whose generic ephemeral volume's claim is made
/// anew is said not to be judged, rather than left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_on_a_node_local_volume_stays_pending_as_said() {
    let h = Harness::start("gpu-taint", binary(), LOCAL_VOLUME).await;
    let run = h
        .run(&[
            "dedicate",
            "pk-lv-a",
            "--taint",
            "pk-lv=db:NoExecute",
            "--yes",
        ])
        .await;
    assert_code(&run, 0);
    assert!(
        run.stderr.contains(
            "warning: StatefulSet default/vector-db: the replacement of its evicted pod will stay Pending: 0/2 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity, 1 node(s) had untolerated taint(s)."
        ),
        "{}",
        run.all()
    );
    assert!(
        run.stderr.contains(
            "warning: Deployment default/embed: the replacement of its evicted pod fits on node/pk-lv-b after the change"
        ),
        "{}",
        run.all()
    );
    assert!(
        run.stderr.contains(
            "warning: Deployment default/scratch: where the replacement of its evicted pod goes is not judged (its generic ephemeral volume's claim is made anew); `kubectl affinity-lint why-pending` judges it once it exists"
        ),
        "{}",
        run.all()
    );
}
