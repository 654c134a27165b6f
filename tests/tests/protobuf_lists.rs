//! Both encodings of the same lists read into the same model: pods and nodes listed in
//! JSON and in protobuf (`Accept: application/vnd.kubernetes.protobuf`), from the test
//! server and from a real kube-apiserver (`PLACEKIT_E2E_KUBECONFIG`), decoded into the read
//! model's types (the ones the commands keep) and compared item by item.
//!
//! The objects carry every field the read model takes from a pod or a node: owner
//! references, node and pod (anti-)affinity, tolerations with `tolerationSeconds: 0`,
//! topology spread, sidecars, resource claims, scheduling gates, taints with `timeAdded`,
//! capacity and conditions.

use placekit_client::protobuf;
use placekit_core::model::{Node, Pod, PodPlacement};
use placekit_testserver::real_cluster::{E2E_KUBECONFIG, RealCluster, real_cluster_for};
use placekit_testserver::{ServerConfig, TestServer};
use serde_json::{Value, json};

const NAMESPACE: &str = "pk-proto";

fn objects() -> Vec<Value> {
    let selector = json!({"matchLabels": {"app": "llm"},
        "matchExpressions": [{"key": "tier", "operator": "Exists"}]});
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "pk-proto-1",
            "labels": {"pk-proto": "yes", "nvidia.com/gpu.product": "NVIDIA-A100", "empty": ""}},
          "spec": {"unschedulable": true, "taints": [
              {"key": "dedicated", "value": "llm", "effect": "NoSchedule"},
              {"key": "gpu", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]},
          "status": {"capacity": {"nvidia.com/gpu": "8", "cpu": "96", "pods": "110"},
            "allocatable": {"nvidia.com/gpu": "8", "cpu": "95500m", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
              "message": "ready", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "pk-proto-2",
            "labels": {"pk-proto": "yes"}}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "llm-0", "namespace": NAMESPACE,
            "labels": {"app": "llm"}, "annotations": {"note": "x"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "llm-abc",
              "uid": "6a1f7c5e-0000-4000-8000-000000000001", "controller": true}]},
          "spec": {"nodeName": "pk-proto-1",
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"},
            "volumes": [
              {"name": "cache", "persistentVolumeClaim": {"claimName": "model-cache", "readOnly": true}},
              {"name": "scratch", "emptyDir": {}},
              {"name": "tmp", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}}},
              {"name": "secrets", "csi": {"driver": "secrets-store.csi.k8s.io"}}],
            "hostNetwork": true,
            "resources": {"requests": {"cpu": "2"}, "limits": {"memory": "8Gi"}},
            "containers": [{"name": "server", "image": "vllm:1",
              "ports": [{"containerPort": 8000, "hostPort": 8000, "protocol": "TCP"},
                        {"containerPort": 9000, "protocol": "UDP", "hostIP": "10.0.0.1"}],
              "env": [{"name": "A", "value": "B"}],
              "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "500m", "nvidia.com/gpu": "2"}}}],
            "initContainers": [{"name": "proxy", "image": "envoy:1", "restartPolicy": "Always"}],
            "affinity": {
              "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                  {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100", "NVIDIA-H100"]}]},
                  {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["pk-proto-1"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5,
                  "preference": {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z"]}]}}]},
              "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector,
                  "topologyKey": "kubernetes.io/hostname", "namespaces": [NAMESPACE]}],
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10,
                  "podAffinityTerm": {"topologyKey": "zone", "namespaceSelector": {}}}]}},
            "tolerations": [
              {"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"},
              {"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
              "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector, "minDomains": 2,
              "nodeAffinityPolicy": "Honor"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]},
          "status": {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated", "namespace": NAMESPACE},
          "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "containers": [{"name": "c", "image": "i"}]}}),
    ]
}

async fn answer(client: &kube::Client, path: &str, accept: &str) -> (String, bytes::Bytes) {
    use http_body_util::BodyExt as _;
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    let content_type = response.headers()[http::header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_string();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (content_type, body)
}

#[derive(serde::Deserialize)]
struct JsonList<T> {
    items: Vec<T>,
}

/// The items of `path` read from both encodings, as `Debug` text: JSON's, then protobuf's.
async fn both<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    client: &kube::Client,
    path: &str,
) -> (Vec<String>, Vec<String>) {
    let (_, json) = answer(client, path, "application/json").await;
    let (content_type, proto) = answer(client, path, protobuf::ACCEPT).await;
    assert_eq!(
        content_type,
        protobuf::MEDIA_TYPE,
        "{path} is answered in protobuf"
    );
    let from_json: JsonList<T> = serde_json::from_slice(&json).unwrap();
    let from_protobuf: protobuf::Page<T> = protobuf::decode_page(&proto).unwrap();
    let text = |items: Vec<T>| items.iter().map(|i| format!("{i:?}")).collect::<Vec<_>>();
    (text(from_json.items), text(from_protobuf.items))
}

/// Compares the lists, again while the server is still writing them (a scheduler's
/// condition between the two requests): equal once in ten tries.
async fn compare(client: &kube::Client, server: &str) {
    let pods = format!("/api/v1/namespaces/{NAMESPACE}/pods");
    let nodes = "/api/v1/nodes?labelSelector=pk-proto";
    for attempt in 1..=10 {
        let (pods_json, pods_proto) = both::<Pod>(client, &pods).await;
        let (placements_json, placements_proto) = both::<PodPlacement>(client, &pods).await;
        let (nodes_json, nodes_proto) = both::<Node>(client, nodes).await;
        assert_eq!(pods_json.len(), 2, "{server}: {pods_json:?}");
        assert_eq!(nodes_json.len(), 2, "{server}: {nodes_json:?}");
        if pods_json == pods_proto
            && placements_json == placements_proto
            && nodes_json == nodes_proto
        {
            return;
        }
        if attempt == 10 {
            for (json, proto) in [
                (pods_json, pods_proto),
                (placements_json, placements_proto),
                (nodes_json, nodes_proto),
            ] {
                for (j, p) in json.iter().zip(&proto) {
                    assert_eq!(j, p, "{server}: JSON (left) and protobuf (right) differ");
                }
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}

#[tokio::test]
async fn pods_and_nodes_read_the_same_from_protobuf_and_json_on_the_test_server() {
    let server = TestServer::start(ServerConfig::default()).await.unwrap();
    for object in objects() {
        server.create(object).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = server
        .write_kubeconfig(&dir.path().join("kubeconfig"), "admin")
        .unwrap();
    let real = RealCluster::connect(&kubeconfig, None).await;
    compare(&real.client(), "the test server").await;
}

#[tokio::test]
async fn pods_and_nodes_read_the_same_from_protobuf_and_json_on_kube_apiserver() {
    let suite = "protobuf and JSON lists on kube-apiserver";
    let Some(kubeconfig) = real_cluster_for(suite, E2E_KUBECONFIG) else {
        return;
    };
    let kubectl = placekit_testserver::crds::Kubectl::new(&kubeconfig);
    // Pods and nodes of an earlier run go first; the namespace stays (without the
    // namespace controller a deleted one would stay Terminating).
    let clean = || {
        let pods = [
            "delete",
            "pods",
            "--all",
            "-n",
            NAMESPACE,
            "--grace-period=0",
        ];
        kubectl.run(&[&pods[..], &["--force"]].concat());
        kubectl.run(&["delete", "nodes", "-l", "pk-proto", "--ignore-not-found"]);
    };
    clean();
    kubectl.run(&["create", "namespace", NAMESPACE]);
    let real = RealCluster::connect(&kubeconfig, None).await;
    real.create_all(objects().split_off(1), 1).await;
    compare(&real.client(), "kube-apiserver").await;
    clean();
}

/// A server that answers JSON to a client asking for protobuf first (a proxy, an older
/// server) is read as JSON: the commands print the same, and `-v=8` shows which encoding
/// came back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answering_json_is_read_as_json() {
    let suite = "protobuf lists and their JSON fallback through the plugins";
    let (Some(gpu_taint), Some(affinity_lint)) = (
        placekit_testserver::harness::built_plugin(suite, "kubectl-gpu_taint"),
        placekit_testserver::harness::built_plugin(suite, "kubectl-affinity_lint"),
    ) else {
        return;
    };
    let generator = placekit_testserver::fixtures::Generator {
        nodes: 30,
        pods: 400,
        gpus_per_node: 8,
    };
    let server = TestServer::start(ServerConfig::default().with_generator(generator))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = server
        .write_kubeconfig(&dir.path().join("kubeconfig"), "admin")
        .unwrap();
    let run = |binary: &std::path::Path, args: &[&str]| {
        let output = std::process::Command::new(binary)
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .unwrap();
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        (
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    // Each command, and what its output must hold (the last node; every pod checked).
    let commands: [(&std::path::Path, &[&str], &str); 2] = [
        (
            &gpu_taint,
            &["status", "-o", "json", "-v=8"],
            "gpu-node-00029",
        ),
        (
            &affinity_lint,
            &["drift", "-A", "-o", "json", "-v=8"],
            "\"podsChecked\": 400",
        ),
    ];
    for (binary, args, marker) in commands {
        let (from_protobuf, log) = run(binary, args);
        assert!(
            log.contains("content-type: application/vnd.kubernetes.protobuf"),
            "{log}"
        );
        server.answer_lists_in_json(true);
        let (from_json, log) = run(binary, args);
        server.answer_lists_in_json(false);
        assert!(
            !log.contains("content-type: application/vnd.kubernetes.protobuf"),
            "{log}"
        );
        assert!(
            log.contains("accept: application/vnd.kubernetes.protobuf, application/json"),
            "{log}"
        );
        assert!(from_protobuf.contains(marker), "{from_protobuf}");
        assert_eq!(from_protobuf, from_json, "{args:?}");
    }
}
