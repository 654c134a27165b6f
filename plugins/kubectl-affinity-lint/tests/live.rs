//! affinity-lint against a live cluster (the test API server): `--cluster` rules, `drift`
//! and `why-pending`, through `kubectl affinity-lint` via PATH.

use std::path::Path;

use placekit_testserver::harness::{Harness, assert_code};
use placekit_testserver::{Rule, ServerConfig, User};
use serde_json::{Value, json};

const CLUSTER: &str = include_str!("fixtures/live-cluster.yaml");

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-affinity_lint"))
}

fn manifests() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/live-manifests.yaml")
        .display()
        .to_string()
}

async fn harness() -> Harness {
    Harness::start("affinity-lint", binary(), CLUSTER).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_rules_find_exactly_the_expected_problems() {
    let h = harness().await;
    let run = h
        .run(&["-f", &manifests(), "--cluster", "-o", "json"])
        .await;
    assert_code(&run, 1);
    let report = run.json();
    let mut found: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().unwrap().starts_with("AL1") || f["rule"] == "AL010")
        .map(|f| {
            (
                f["object"]["name"].as_str().unwrap().to_string(),
                f["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            ("near-value".into(), "AL101".into()),
            ("no-candidate".into(), "AL101".into()),
            ("rollout-stalls".into(), "AL010".into()),
            ("spread".into(), "AL105".into()),
            ("tainted".into(), "AL103".into()),
            ("too-many-gpus".into(), "AL104".into()),
            ("typo".into(), "AL102".into()),
        ]
    );
    // Each at the severity its rule page gives, AL010's live part too.
    for f in report["findings"].as_array().unwrap() {
        let expected = match f["rule"].as_str().unwrap() {
            "AL010" | "AL104" | "AL105" => "warning",
            "AL101" | "AL102" | "AL103" => "error",
            _ => continue,
        };
        assert_eq!(f["severity"], expected, "{f}");
    }
    let message = |name: &str, rule: &str| -> String {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["object"]["name"] == name && f["rule"] == rule)
            .unwrap()["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        message("typo", "AL102"),
        "no node has the label key accelerator.example.com/gpu-famliy; did you mean accelerator.example.com/gpu-family?"
    );
    // AL101 names the expression no node satisfies, the values the nodes have, and the
    // near one.
    assert_eq!(
        message("no-candidate", "AL101"),
        "no node of 5 satisfies the nodeSelector and required node affinity: replicas stay Pending (didn't match Pod's node affinity); accelerator.example.com/gpu-family In [b200] holds on no node (the nodes have a100 on 3, h100 on 1)"
    );
    assert_eq!(
        message("near-value", "AL101"),
        "no node of 5 satisfies the nodeSelector and required node affinity: replicas stay Pending (didn't match Pod's node affinity); nodeSelector accelerator.example.com/gpu-family: A100 holds on no node (the nodes have a100 on 3, h100 on 1; did you mean a100?)"
    );
    assert!(
        message("tainted", "AL103").contains("h100-batch")
            && message("tainted", "AL103").contains("dedicated=batch:NoSchedule")
    );
    assert!(
        message("too-many-gpus", "AL104")
            .contains("5 replicas x 2 nvidia.com/gpu = 10 but the 3 candidate node(s) have 8 free"),
        "{}",
        message("too-many-gpus", "AL104")
    );
    assert!(
        message("rollout-stalls", "AL010").contains(
            "needs 12 free nvidia.com/gpu before any old pod stops (maxSurge 3 = 3 pods, maxUnavailable 0 = 0 pods), but the 1 candidate node(s) have 8"
        ),
        "{}",
        message("rollout-stalls", "AL010")
    );
    let spreads: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["object"]["name"] == "spread")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        spreads
            .iter()
            .any(|m| m.contains("a100-noplugin have no topology.kubernetes.io/zone label")),
        "{spreads:?}"
    );
    // 4 replicas over 3 untainted hosts with maxSkew 1 are placed 2, 1, 1: no finding (it
    // was once a false alarm).
    assert!(
        !spreads.iter().any(|m| m.contains("hostname spread")),
        "{spreads:?}"
    );
    assert_eq!(h.server().count("list", "nodes"), 1);
    assert_eq!(h.server().count("list", "pods"), 1);
}

async fn pending(h: &Harness, pod: &str) -> Value {
    let run = h.run(&["why-pending", pod, "-n", "ml", "-o", "json"]).await;
    // 1: the pod cannot be placed now.
    assert_code(&run, 1);
    run.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_pending_gives_the_runbooks_verdicts() {
    let h = harness().await;
    let affinity = pending(&h, "pending-affinity").await;
    assert_eq!(affinity["kind"], "PendingReport");
    assert_eq!(
        affinity["verdict"]["evidence"],
        "didn't match Pod's node affinity"
    );
    assert_eq!(affinity["events"][0]["reason"], "FailedScheduling");
    assert_eq!(affinity["conditions"][0]["reason"], "Unschedulable");
    let a100 = affinity["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "a100-free")
        .unwrap();
    assert_eq!(a100["failure"]["filter"], "nodeAffinity");
    assert!(a100["reason"].as_str().unwrap().contains("nodeSelector accelerator.example.com/gpu-family=b200, node has accelerator.example.com/gpu-family=a100"));

    let taint = pending(&h, "pending-taint").await;
    assert_eq!(taint["verdict"]["evidence"], "had untolerated taint");
    assert_eq!(
        taint["verdict"]["action"],
        "add the required toleration after confirming workload eligibility"
    );

    let gpu = pending(&h, "pending-gpu").await;
    assert_eq!(gpu["verdict"]["evidence"], "Insufficient nvidia.com/gpu");
    assert_eq!(gpu["requests"]["nvidia.com/gpu"], "16");
    let free = gpu["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "a100-free")
        .unwrap();
    assert_eq!(
        free["failure"],
        json!({"filter": "insufficient", "resource": "nvidia.com/gpu", "requested": "16", "free": "8"})
    );

    let pods = pending(&h, "pending-pods").await;
    assert_eq!(pods["verdict"]["evidence"], "Too many pods");

    let text = h.run(&["why-pending", "pending-taint", "-n", "ml"]).await;
    assert!(
        text.stdout.contains("h100-batch")
            && text
                .stdout
                .contains("node(s) had untolerated taint {dedicated=batch:NoSchedule}"),
        "{}",
        text.all()
    );
    let running = h.run(&["why-pending", "occupant", "-n", "ml"]).await;
    assert_code(&running, 0);
    assert!(
        running
            .stdout
            .contains("is Running on node a100-full: it is not Pending")
    );
    let missing = h.run(&["why-pending", "nope", "-n", "ml"]).await;
    assert_code(&missing, 2);
}

fn drift_pod(i: usize, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("llm-{i:05}"), "namespace": "ml", "labels": {"app": "llm-inference"}},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "x"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "accelerator.example.com/gpu-family", "operator": "In", "values": ["a100"]}]}
            ]}}}
        },
        "status": {"phase": "Running"}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_finds_pods_whose_node_changed_in_a_constant_number_of_requests() {
    let mut requests = Vec::new();
    for pods in [100, 10_000] {
        let h = harness().await;
        h.create_all(
            (0..pods)
                .map(|i| drift_pod(i, if i % 2 == 0 { "a100-free" } else { "a100-full" }))
                .collect(),
        )
        .await;
        // The runbook's situation: a node's gpu-family label changed after scheduling.
        h.merge_patch(
            "nodes",
            None,
            "a100-free",
            &json!({"metadata": {"labels": {"accelerator.example.com/gpu-family": "h100"}}}),
        )
        .await;
        h.server().reset_counters();
        let run = h
            .run(&["drift", "-A", "-l", "app=llm-inference", "-o", "json"])
            .await;
        assert_code(&run, 1);
        let report = run.json();
        assert_eq!(report["kind"], "DriftReport");
        assert_eq!(report["podsChecked"], pods);
        let items = report["items"].as_array().unwrap();
        assert_eq!(items.len(), pods / 2);
        assert!(items.iter().all(|d| d["node"] == "a100-free"));
        assert_eq!(
            items[0]["reason"],
            "accelerator.example.com/gpu-family In [a100], node has accelerator.example.com/gpu-family=h100"
        );
        let counters = h.server().counters();
        let total: u64 = counters.values().flat_map(|m| m.values()).sum();
        requests.push(total);
    }
    assert_eq!(
        requests[0], requests[1],
        "requests for 100 and 10,000 pods: {requests:?}"
    );
    assert!(requests[0] <= 3, "{requests:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_permission_to_list_nodes_the_missing_permission_is_named() {
    if std::env::var_os("PLACEKIT_E2E_KUBECONFIG").is_some() {
        return;
    }
    let config = ServerConfig::default()
        .with_fixture_yaml(CLUSTER)
        .with_user(
            "pods-only-token",
            User {
                name: "pods-only".into(),
                rules: vec![Rule {
                    verbs: vec!["get".into(), "list".into()],
                    resources: vec!["pods".into(), "events".into()],
                }],
            },
        );
    let h = Harness::local("affinity-lint", binary(), config).await;
    let kubeconfig = h.kubeconfig_for("pods-only-token");
    for args in [
        vec!["drift", "-A"],
        vec!["why-pending", "pending-gpu", "-n", "ml"],
        vec!["-f", "x.yaml", "--cluster"],
    ] {
        let run = h.run_with(&args, &kubeconfig).await;
        assert_code(&run, 3);
        assert!(run.stderr.contains("User \"pods-only\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"), "{args:?}: {}", run.all());
    }
}

/// drift's wording, pinned: the two kinds of drift say what happens to the pods (labels:
/// they keep running; a NoExecute taint: they are evicted), pods on deleted nodes are
/// named instead of skipped silently, an unknown namespace and a bad selector are input
/// errors in placekit's own words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_says_what_happens_to_each_kind_of_drifted_pod() {
    let h = harness().await;
    let mut gone = drift_pod(3, "gpu-deleted-1");
    gone["metadata"]["name"] = json!("llm-on-deleted-node");
    h.create_all(vec![
        drift_pod(1, "a100-free"),
        drift_pod(2, "a100-full"),
        gone,
    ])
    .await;
    h.merge_patch(
        "nodes",
        None,
        "a100-free",
        &json!({"metadata": {"labels": {"accelerator.example.com/gpu-family": "h100"}}}),
    )
    .await;
    h.merge_patch(
        "nodes",
        None,
        "a100-full",
        &json!({"spec": {"taints": [{"key": "maintenance", "value": "now", "effect": "NoExecute"}]}}),
    )
    .await;
    let run = h
        .run(&["drift", "-n", "ml", "-l", "app=llm-inference"])
        .await;
    assert_code(&run, 1);
    for text in [
        "2 of 2 running pods drifted:",
        "by node labels (1): they keep running (IgnoredDuringExecution), but new replicas would not land there",
        "by a NoExecute taint they do not tolerate (1): they are evicted",
        "untolerated NoExecute taint maintenance=now:NoExecute",
        "pod ml/llm-on-deleted-node is Running on node gpu-deleted-1, which no longer exists: not checked",
    ] {
        assert!(
            run.all().contains(text),
            "expected {text:?} in:\n{}",
            run.all()
        );
    }
    let json = h
        .run(&["drift", "-n", "ml", "-l", "app=llm-inference", "-o", "json"])
        .await
        .json();
    assert_eq!(json["podsOnMissingNodes"][0]["node"], "gpu-deleted-1");
    assert_eq!(json["items"][0]["kind"], "labels");

    let run = h.run(&["drift", "-n", "no-such-namespace"]).await;
    assert_code(&run, 2);
    assert!(
        run.stderr
            .contains("namespace \"no-such-namespace\" not found"),
        "{}",
        run.all()
    );
    let run = h.run(&["drift", "-A", "-l", "app in (x"]).await;
    assert_code(&run, 2);
    assert!(
        run.stderr.contains(
            "invalid label selector \"app in (x\": unable to parse requirement: found '', expected: ',' or ')'"
        ),
        "{}",
        run.all()
    );
    let run = h.run(&["why-pending", "pod/no-such-pod", "-n", "ml"]).await;
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("pod ml/no-such-pod not found"),
        "{}",
        run.all()
    );
}

const ACCELERATORS: &str = include_str!("../../kubectl-gpu-taint/tests/fixtures/accelerators.yaml");

fn claim(name: &str, count: i64) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": count}}]}}
    })
}

fn claiming_pod(name: &str, claim: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "resourceClaims": [{"name": "gpus", "resourceClaimName": claim}],
            "containers": [{"name": "main", "image": "x", "resources": {"claims": [{"name": "gpus"}]}}]
        }
    })
}

fn extended_pod(name: &str, gpus: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [{"name": "main", "image": "x", "resources": {
            "requests": {"example.com/gpu": gpus}, "limits": {"example.com/gpu": gpus}}}]}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_pending_explains_claims_the_devices_cannot_serve_as_the_scheduler_does() {
    let h = Harness::start("affinity-lint", binary(), ACCELERATORS).await;
    // Two devices wanted; gpu-dra-1 has none free, gpu-dra-2 one.
    h.create(claim("needs-two-gpus", 2)).await;
    h.create(claiming_pod("needs-two", "needs-two-gpus")).await;
    // A classic request served from DRA devices, more than are free.
    h.create(extended_pod("legacy-two", "2")).await;
    for pod in ["needs-two", "legacy-two"] {
        let scheduler = h.failed_scheduling("ml", pod).await;
        let run = h.run(&["why-pending", pod, "-n", "ml", "-o", "json"]).await;
        assert_code(&run, 1);
        let report = run.json();
        assert_eq!(
            report["predictedMessage"], "0/6 nodes are available: 6 cannot allocate all claims.",
            "{pod}: {report}"
        );
        if let Some(message) = scheduler {
            assert_eq!(
                report["predictedMessage"],
                message.as_str(),
                "{pod}: the scheduler's own words"
            );
        }
        assert_eq!(
            report["verdict"]["evidence"], "cannot allocate all claims",
            "{report}"
        );
        let dra2 = report["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == "gpu-dra-2")
            .unwrap();
        assert_eq!(
            dra2["failure"],
            json!({"filter": "cannotAllocateClaims", "detail": "needs 2 of class gpu.example.com, 1 free here"}),
            "{pod}: {report}"
        );
    }
    let text = h.run(&["why-pending", "needs-two", "-n", "ml"]).await;
    assert_code(&text, 1);
    assert!(
        text.stdout.contains(
            "claim gpus (ResourceClaim needs-two-gpus): pending, gpu: 2 x gpu.example.com"
        ) && text
            .stdout
            .contains("cannot allocate all claims (needs 2 of class gpu.example.com, 0 free here)")
            && !text.stdout.contains("fit now"),
        "{}",
        text.all()
    );

    // One device: gpu-dra-2 fits, and the real scheduler binds it there.
    h.create(claim("needs-one-gpu", 1)).await;
    h.create(claiming_pod("needs-one", "needs-one-gpu")).await;
    let run = h.run(&["why-pending", "needs-one", "-n", "ml"]).await;
    assert_code(&run, 0);
    if h.is_real() {
        assert_eq!(
            h.bound_node("ml", "needs-one").await.as_deref(),
            Some("gpu-dra-2"),
            "the scheduler placed it where placekit said"
        );
    } else {
        assert!(
            run.stdout.contains("1 node(s) fit now (gpu-dra-2)"),
            "{}",
            run.all()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_pending_names_the_mig_profiles_of_nodes_without_whole_gpus() {
    let h = Harness::start("affinity-lint", binary(), ACCELERATORS).await;
    h.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "whole-gpu", "namespace": "ml"},
        "spec": {
            "nodeSelector": {"nvidia.com/mig.strategy": "mixed"},
            "containers": [{"name": "main", "image": "x", "resources": {
                "requests": {"nvidia.com/gpu": "1", "memory": "32Gi"}, "limits": {"nvidia.com/gpu": "1", "memory": "32Gi"}}}]
        }
    }))
    .await;
    h.failed_scheduling("ml", "whole-gpu").await;
    let run = h.run(&["why-pending", "whole-gpu", "-n", "ml"]).await;
    assert_code(&run, 1);
    assert!(
        run.stdout.contains("hint: the pod asks for nvidia.com/gpu, but the nodes without it expose MIG profiles: nvidia.com/mig-1g.10gb (12 free), nvidia.com/mig-2g.20gb (4 free), nvidia.com/mig-3g.40gb (4 free)"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout
            .contains("requests: memory=32Gi, nvidia.com/gpu=1"),
        "{}",
        run.all()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn al104_counts_an_extended_resource_a_device_class_serves_as_its_free_devices() {
    let h = Harness::start("affinity-lint", binary(), ACCELERATORS).await;
    let dir = tempfile::tempdir().unwrap();
    let deployment = |name: &str, replicas: u32, resource: &str| {
        format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: ml}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: main
        image: x
        resources: {{requests: {{{resource}: \"1\"}}, limits: {{{resource}: \"1\"}}}}
"
        )
    };
    let path = dir.path().join("deploy.yaml");
    std::fs::write(
        &path,
        [
            // One H100 is free (gpu-dra-2): one replica fits, three do not.
            deployment("one-dra-gpu", 1, "example.com/gpu"),
            deployment("three-dra-gpus", 3, "example.com/gpu"),
            // 12 of 14 MIG 1g.10gb slices are free.
            deployment("twelve-mig-slices", 12, "nvidia.com/mig-1g.10gb"),
            deployment("thirteen-mig-slices", 13, "nvidia.com/mig-1g.10gb"),
        ]
        .join("---\n"),
    )
    .unwrap();
    let run = h
        .run(&["-f", path.to_str().unwrap(), "--cluster", "-o", "json"])
        .await;
    let report = run.json();
    let al104: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "AL104")
        .map(|f| {
            (
                f["object"]["name"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        al104.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        vec!["three-dra-gpus", "thirteen-mig-slices"],
        "{}",
        run.all()
    );
    assert!(
        al104[0]
            .1
            .contains("3 replicas x 1 example.com/gpu = 3 but the 6 candidate node(s) have 1 free"),
        "{}",
        al104[0].1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_pending_without_permission_to_list_claims_does_not_call_them_missing() {
    if std::env::var_os("PLACEKIT_E2E_KUBECONFIG").is_some() {
        return;
    }
    let config = ServerConfig::default()
        .with_fixture_yaml(ACCELERATORS)
        .with_user(
            "no-claims-token",
            User {
                name: "no-claims".into(),
                rules: vec![Rule {
                    verbs: vec!["get".into(), "list".into()],
                    resources: vec![
                        "nodes".into(),
                        "pods".into(),
                        "events".into(),
                        "deviceclasses".into(),
                        "resourceslices".into(),
                    ],
                }],
            },
        );
    let h = Harness::local("affinity-lint", binary(), config).await;
    h.create(claim("needs-one-gpu", 1)).await;
    h.create(claiming_pod("needs-one", "needs-one-gpu")).await;
    let run = h
        .run_with(
            &["why-pending", "needs-one", "-n", "ml"],
            &h.kubeconfig_for("no-claims-token"),
        )
        .await;
    assert_code(&run, 1);
    assert!(
        run.stderr.contains("cannot list resourceclaims")
            && run.stdout.contains("claim gpus (ResourceClaim needs-one-gpu): unreadable")
            && run.stdout.contains("placekit cannot model gpus: ResourceClaim ml/needs-one-gpu could not be read (placekit may not list ResourceClaims)")
            && !run.stdout.contains("fit now")
            && !run.stdout.contains("resource claim missing"),
        "{}",
        run.all()
    );
}

/// why-pending quotes only this pod's events (by uid: an earlier pod of the same name is
/// another pod), and a cluster string's control characters are escaped, not sent to the
/// terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_pending_matches_events_by_uid_and_escapes_them() {
    let h = harness().await;
    let event = |name: &str, uid: &str, message: &str| {
        json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "ml"},
            "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "pending-taint", "uid": uid},
            "reason": "FailedScheduling", "type": "Warning", "message": message,
            "firstTimestamp": "2026-12-01T00:00:00Z", "lastTimestamp": "2026-12-01T00:00:00Z", "count": 1})
    };
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(h.client(), "ml");
    let uid = api
        .get("pending-taint")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    h.create(event(
        "pending-taint.old",
        "00000000-0000-4000-8000-000000000000",
        "EARLIER POD of the same name",
    ))
    .await;
    h.create(event(
        "pending-taint.now",
        &uid,
        "0/4 nodes are available: \u{1b}]0;pwned\u{7}\u{1b}[2J",
    ))
    .await;
    let text = h.run(&["why-pending", "pending-taint", "-n", "ml"]).await;
    assert!(!text.stdout.contains("EARLIER POD"), "{}", text.all());
    assert!(
        text.stdout.contains("\\x1b]0;pwned\\x07\\x1b[2J"),
        "{}",
        text.all()
    );
    assert!(!text.stdout.contains('\u{1b}'), "{}", text.all());
}

/// AL004 says what the API server answers for the placement fields it validates, word for
/// word: each form is linted, and on a real cluster (`PLACEKIT_E2E_KUBECONFIG`) created
/// with a server-side dry run, whose refusal must carry the same text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn al004_says_what_the_api_server_answers() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, PostParams};
    let h = harness().await;
    let table: &[(&str, &str)] = &[
        (
            "tolerations: [{key: k, operator: Exists, value: v}]",
            "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
        ),
        (
            "tolerations: [{operator: Equal, value: v}]",
            "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        ),
        (
            "tolerations: [{key: k, operator: Equal, value: v, effect: NoSchedule, tolerationSeconds: 30}]",
            "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
        (
            "tolerations: [{key: k, operator: Exists, tolerationSeconds: 30}]",
            "spec.tolerations[0].effect: Invalid value: \"\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
        (
            "tolerations: [{key: k, operator: Equal, value: v, effect: NoShedule}]",
            "spec.tolerations[0].effect: Unsupported value: \"NoShedule\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
        ),
        // Numeric operators: refused without the alpha feature gate (a warning: some
        // clusters turn it on).
        (
            "tolerations: [{key: k, operator: Gt, value: '5', effect: NoSchedule}]",
            "spec.tolerations[0].operator: Unsupported value: \"Gt\": supported values: \"Equal\", \"Exists\", \"Lt\", \"Gt\"",
        ),
        (
            "tolerations: [{key: k, operator: Equals, value: v}]",
            "spec.tolerations[0].operator: Unsupported value: \"Equals\": supported values: \"Equal\", \"Exists\"",
        ),
        (
            "affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: x}}}]}}",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
        ),
        (
            "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: x}}, topologyKey: ''}]}}",
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
        ),
        (
            "affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{podAffinityTerm: {labelSelector: {matchLabels: {app: x}}, topologyKey: kubernetes.io/hostname}}]}}",
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
        ),
        (
            "affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 101, podAffinityTerm: {labelSelector: {matchLabels: {app: x}}, topologyKey: kubernetes.io/hostname}}]}}",
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100",
        ),
        (
            "topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: x}}}]",
            "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        ),
        (
            "topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedulee, labelSelector: {matchLabels: {app: x}}}]",
            "spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"DoNotSchedulee\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
        ),
        (
            "topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, labelSelector: {matchLabels: {app: x}}}]",
            "spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
        ),
        (
            "topologySpreadConstraints: [{maxSkew: 1, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: x}}}]",
            "spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty",
        ),
    ];
    let pods: Api<Pod> = Api::namespaced(h.client(), "ml");
    for (i, (field, answer)) in table.iter().enumerate() {
        let manifest = format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: al004-{i}, namespace: ml, labels: {{app: x}}}}\nspec:\n  containers: [{{name: c, image: x}}]\n  {field}\n"
        );
        let path = h.dir.path().join(format!("al004-{i}.yaml"));
        std::fs::write(&path, &manifest).unwrap();
        let run = h
            .run(&[
                "-f",
                path.to_str().unwrap(),
                "-o",
                "json",
                "--enable",
                "AL004",
            ])
            .await;
        let report = run.json();
        let said: Vec<&str> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "AL004")
            .map(|f| f["message"].as_str().unwrap())
            .collect();
        // The API server's words, and for a gated form what would let it through.
        assert_eq!(said.len(), 1, "{field}: {said:?}");
        assert!(
            said[0].starts_with(&format!("the API server rejects it: {answer}")),
            "{field}: {said:?}"
        );
        if h.is_real() {
            let pod: Pod = serde_yaml::from_str(&manifest).unwrap();
            let refused = pods
                .create(
                    &PostParams {
                        dry_run: true,
                        ..Default::default()
                    },
                    &pod,
                )
                .await
                .expect_err(field);
            assert!(
                refused.to_string().contains(answer),
                "{field}: the API server said {refused}"
            );
        }
    }
    // What the API server accepts is no finding.
    for field in [
        "tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]",
        "tolerations: [{operator: Exists, effect: NoSchedule}]",
        "tolerations: [{key: k, value: v, effect: NoSchedule}]",
    ] {
        let path = h.dir.path().join("al004-ok.yaml");
        std::fs::write(
            &path,
            format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: ok, namespace: ml}}\nspec:\n  containers: [{{name: c, image: x}}]\n  {field}\n"),
        )
        .unwrap();
        let run = h.run(&["-f", path.to_str().unwrap(), "-o", "json"]).await;
        assert!(!run.stdout.contains("AL004"), "{field}: {}", run.all());
    }
}

/// `why-pending` without a pod: every pending pod of the namespace the scheduler has not
/// bound, judged against one read of the cluster and grouped by why; a pod held by
/// scheduling gates (Kueue's admission gate) is said to be held, not to fit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_pending_without_a_pod_summarises_every_pending_pod() {
    let h = harness().await;
    let run = h.run(&["why-pending", "-n", "ml", "-o", "json"]).await;
    assert_code(&run, 1);
    let report = run.json();
    assert_eq!(report["kind"], "PendingSummary");
    let why: std::collections::BTreeMap<String, String> = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["verdict"]["evidence"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(why["pending-affinity"], "didn't match Pod's node affinity");
    assert_eq!(why["pending-taint"], "had untolerated taint");
    assert_eq!(why["pending-gpu"], "Insufficient nvidia.com/gpu");
    assert_eq!(why["pending-pods"], "Too many pods");
    assert_eq!(
        why["gated-trainer"],
        "scheduling gates: kueue.x-k8s.io/admission"
    );
    assert!(
        !why.contains_key("occupant"),
        "a running pod is not pending: {why:?}"
    );

    let text = h.run(&["why-pending", "-n", "ml"]).await;
    assert_code(&text, 1);
    assert!(text.stdout.starts_with("NAMESPACE  NAME"), "{}", text.all());
    assert!(
        text.stdout
            .contains("5 pods pending: 5 cannot be placed now"),
        "{}",
        text.all()
    );
    let gated = h
        .run(&["why-pending", "-n", "ml", "-l", "app=trainer", "-o", "name"])
        .await;
    assert_code(&gated, 1);
    assert_eq!(gated.stdout, "pod/gated-trainer\n");

    // One gated pod: held, exit 1, no node judged.
    let one = h.run(&["why-pending", "gated-trainer", "-n", "ml"]).await;
    assert_code(&one, 1);
    assert!(
        one.stdout
            .contains("evidence: scheduling gates: kueue.x-k8s.io/admission")
            && one
                .stdout
                .contains("Kueue removes it when it admits the workload"),
        "{}",
        one.all()
    );

    let none = h.run(&["why-pending", "-n", "default"]).await;
    assert_code(&none, 0);
    assert_eq!(none.stdout, "no pending pods\n");
    let both = h.run(&["why-pending", "gated-trainer", "-A"]).await;
    assert_code(&both, 2);
}

/// A server's warnings are said on affinity-lint's live commands as on the other plugins',
/// and `--warnings-as-errors` turns a clean answer into exit 1 (it was accepted and ignored
/// here). The test API server, which can add a `Warning` header to any answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warnings_as_errors_holds_for_drift_and_why_pending() {
    use placekit_testserver::{Fault, FaultAction};
    let h = Harness::local(
        "affinity-lint",
        binary(),
        ServerConfig::default().with_fixture_yaml(CLUSTER),
    )
    .await;
    h.server().inject(Fault {
        times: 1000,
        ..Fault::new(
            "list",
            "nodes",
            1,
            FaultAction::Warn {
                text: "nodes are read by an admission policy in Warn mode".into(),
            },
        )
    });
    let said = "Warning: nodes are read by an admission policy in Warn mode";
    for args in [
        vec!["drift", "-A", "-l", "app=none"],
        vec!["why-pending", "-n", "default"],
    ] {
        let run = h.run(&args).await;
        assert_code(&run, 0);
        assert!(run.stderr.contains(said), "{}", run.all());
        let mut strict = args.clone();
        strict.push("--warnings-as-errors");
        let run = h.run(&strict).await;
        assert_code(&run, 1);
        assert!(
            run.stderr.contains("(--warnings-as-errors)"),
            "{}",
            run.all()
        );
    }
}

/// A reader RBAC refuses CustomResourceDefinitions (a linter's service account often is one)
/// still gets the files judged under `--cluster`: the refusal is said once, and custom
/// resources are judged without the cluster's schemas. It stopped the whole command (exit 3)
/// before: the refusal was never recognised as one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_rbac_refuses_is_said_and_the_files_are_still_judged() {
    use placekit_testserver::{Fault, FaultAction};
    let h = Harness::local(
        "affinity-lint",
        binary(),
        ServerConfig::default().with_fixture_yaml(CLUSTER),
    )
    .await;
    h.server().inject(Fault {
        times: 1000,
        ..Fault::new(
            "get",
            "customresourcedefinitions",
            1,
            FaultAction::Status {
                code: 403,
                retry_after_seconds: None,
            },
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ray.yaml");
    std::fs::write(
        &path,
        "apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: ray, namespace: default}
spec:
  headGroupSpec:
    template:
      spec:
        containers: [{name: head, image: rayproject/ray}]
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
              - matchExpressions: [{key: pool, operator: In, values: [train]}]
              - matchExpressions: [{key: gpu, operator: In, values: [a100]}]
",
    )
    .unwrap();
    let run = h
        .run(&["-f", path.to_str().unwrap(), "--cluster", "-o", "json"])
        .await;
    assert_code(&run, 1);
    let report = run.json();
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(rules.contains(&"AL001"), "{}", run.all());
    assert!(
        run.stderr.contains(
            "cannot read customresourcedefinition rayclusters.ray.io (forbidden): custom resources are not judged by the cluster's CRDs (give --crd-dir)"
        ),
        "{}",
        run.all()
    );
}
