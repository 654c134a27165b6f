//! why-pending against kube-scheduler's whole truth: volumes (a missing claim, an unbound
//! Immediate claim, a bound volume in another zone, a WaitForFirstConsumer class that
//! provisions elsewhere), host ports, pod-level resources, a pod bound to a node that does
//! not exist, another scheduler's pod and its Volcano gang, and the scheduler's own word as
//! the referee. On the test server and, with `PLACEKIT_E2E_KUBECONFIG`, on kube-apiserver
//! with the real kube-scheduler, whose FailedScheduling message the prediction must match.

use std::path::Path;

use placekit_testserver::harness::{Harness, assert_code};
use serde_json::{Value, json};

const NODES: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-a
    labels: {kubernetes.io/hostname: gpu-a, topology.kubernetes.io/zone: zone-a}
  spec: {}
  status: {allocatable: {nvidia.com/gpu: "8", pods: "110", cpu: "8", memory: 64Gi}}
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-b
    labels: {kubernetes.io/hostname: gpu-b, topology.kubernetes.io/zone: zone-b}
  spec: {}
  status: {allocatable: {nvidia.com/gpu: "8", pods: "110", cpu: "8", memory: 64Gi}}
- apiVersion: v1
  kind: Namespace
  metadata: {name: ml}
"#;

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-affinity_lint"))
}

async fn harness() -> Harness {
    Harness::start("affinity-lint", binary(), NODES).await
}

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "main", "image": "x"}]);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": spec})
}

fn with_claim(name: &str, claim: &str) -> Value {
    pod(
        name,
        json!({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}),
    )
}

fn class(name: &str, mode: &str, extra: Value) -> Value {
    let mut c = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name}, "provisioner": "csi.example.com",
        "volumeBindingMode": mode
    });
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(extra.clone());
    }
    c
}

fn claim(name: &str, class: &str, volume: Option<&str>) -> Value {
    let mut c = json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class,
                 "resources": {"requests": {"storage": "10Gi"}}}
    });
    if let Some(v) = volume {
        // Bound as the PV controller binds: the volume named, the binding completed.
        c["spec"]["volumeName"] = json!(v);
        c["metadata"]["annotations"] = json!({"pv.kubernetes.io/bind-completed": "yes"});
    }
    c
}

/// why-pending on `pod` as JSON, exit 1; its prediction is the scheduler's message (on a
/// real cluster, the FailedScheduling event it wrote).
async fn refused(h: &Harness, pod: &str) -> Value {
    let scheduler = h.failed_scheduling("ml", pod).await;
    let run = h.run(&["why-pending", pod, "-n", "ml", "-o", "json"]).await;
    assert_code(&run, 1);
    let report = run.json();
    if let Some(said) = scheduler {
        let predicted = report["predictedMessage"].as_str().unwrap_or_default();
        assert!(
            !predicted.is_empty() && said.starts_with(predicted.trim_end_matches('.')),
            "{pod}: the scheduler says {said:?}, placekit predicts {predicted:?}"
        );
    }
    assert_eq!(report["placeable"], false, "{report}");
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_missing_or_unbound_stops_the_pod_before_any_node() {
    let h = harness().await;
    h.create(with_claim("no-claim", "model-cache")).await;
    let report = refused(&h, "no-claim").await;
    assert_eq!(
        report["predictedMessage"],
        "0/2 nodes are available: persistentvolumeclaim \"model-cache\" not found."
    );
    assert_eq!(
        report["verdict"]["evidence"],
        "persistentvolumeclaim \"model-cache\" not found"
    );

    h.create(class("standard", "Immediate", json!({}))).await;
    h.create(claim("scratch", "standard", None)).await;
    h.create(with_claim("unbound", "scratch")).await;
    let report = refused(&h, "unbound").await;
    assert_eq!(
        report["predictedMessage"],
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    );
    let text = h.run(&["why-pending", "unbound", "-n", "ml"]).await;
    assert_code(&text, 1);
    assert!(
        text.stdout
            .contains("evidence: pod has unbound immediate PersistentVolumeClaims")
            && !text.stdout.contains("fit now"),
        "{}",
        text.all()
    );
    // The summary says the same, in one read of the storage objects.
    let all = h.run(&["why-pending", "-n", "ml", "-o", "json"]).await;
    assert_code(&all, 1);
    let items = all.json()["items"].clone();
    for name in ["no-claim", "unbound"] {
        let item = items
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {items}"));
        assert_eq!(item["placeable"], false, "{item}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_volume_reachable_only_in_another_zone_keeps_the_pod_off() {
    let h = harness().await;
    h.create(class("zonal", "WaitForFirstConsumer", json!({})))
        .await;
    h.create(json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": "cache-pv", "labels": {"topology.kubernetes.io/zone": "zone-b"}},
        "spec": {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": "zonal",
                 "claimRef": {"namespace": "ml", "name": "cache"},
                 "csi": {"driver": "csi.example.com", "volumeHandle": "vol-1"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}]}]}}}
    }))
    .await;
    h.create(claim("cache", "zonal", Some("cache-pv"))).await;
    h.create(pod(
        "server",
        json!({
            "nodeSelector": {"topology.kubernetes.io/zone": "zone-a"},
            "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}}]
        }),
    ))
    .await;
    let report = refused(&h, "server").await;
    assert_eq!(
        report["predictedMessage"],
        "0/2 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity, 1 node(s) didn't match Pod's node affinity/selector."
    );
    assert_eq!(
        report["verdict"]["evidence"],
        "node(s) didn't match PersistentVolume's node affinity"
    );
    let a = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "gpu-a")
        .unwrap()
        .clone();
    assert_eq!(a["failure"]["filter"], "volume");
    assert_eq!(a["failure"]["plugin"], "VolumeBinding");
    assert!(
        a["reason"].as_str().unwrap().contains("cache-pv"),
        "the volume is named: {a}"
    );

    // A WaitForFirstConsumer class that provisions only in zone-b: gpu-a cannot get one.
    h.create(class(
        "zone-b-only",
        "WaitForFirstConsumer",
        json!({"allowedTopologies": [{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": ["zone-b"]}]}]}),
    ))
    .await;
    h.create(claim("fresh", "zone-b-only", None)).await;
    h.create(pod(
        "trainer",
        json!({
            "nodeSelector": {"topology.kubernetes.io/zone": "zone-a"},
            "volumes": [{"name": "fresh", "persistentVolumeClaim": {"claimName": "fresh"}}]
        }),
    ))
    .await;
    let report = refused(&h, "trainer").await;
    assert_eq!(
        report["predictedMessage"],
        "0/2 nodes are available: 1 node(s) didn't find available persistent volumes to bind, 1 node(s) didn't match Pod's node affinity/selector."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_port_taken_on_every_node_is_said() {
    let h = harness().await;
    for (name, node, spec) in [
        (
            "holder-a",
            "gpu-a",
            json!({"containers": [{"name": "main", "image": "x", "ports": [{"containerPort": 8000, "hostPort": 8000}]}]}),
        ),
        (
            "holder-b",
            "gpu-b",
            json!({"hostNetwork": true, "containers": [{"name": "main", "image": "x", "ports": [{"containerPort": 8000}]}]}),
        ),
    ] {
        let mut p = pod(name, spec);
        p["spec"]["nodeName"] = json!(node);
        h.create(p).await;
    }
    h.create(pod(
        "server",
        json!({"hostNetwork": true, "containers": [{"name": "main", "image": "x", "ports": [{"containerPort": 8000}]}]}),
    ))
    .await;
    let report = refused(&h, "server").await;
    assert_eq!(
        report["predictedMessage"],
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."
    );
    assert_eq!(
        report["verdict"]["evidence"],
        "didn't have free ports for the requested pod ports"
    );
    let text = h.run(&["why-pending", "server", "-n", "ml"]).await;
    assert!(
        text.stdout.contains("8000/TCP by pod ml/holder-a"),
        "{}",
        text.all()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_level_resources_are_what_the_scheduler_counts() {
    let h = harness().await;
    h.create(pod(
        "big",
        json!({
            "resources": {"requests": {"cpu": "12"}, "limits": {"cpu": "12"}},
            "containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}]
        }),
    ))
    .await;
    let report = refused(&h, "big").await;
    assert_eq!(report["requests"]["cpu"], "12");
    assert_eq!(
        report["predictedMessage"],
        "0/2 nodes are available: 2 Insufficient cpu."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_bound_to_a_node_that_does_not_exist_waits_forever() {
    let h = harness().await;
    let mut p = pod("ghost", json!({}));
    p["spec"]["nodeName"] = json!("gpu-gone");
    h.create(p).await;
    let run = h
        .run(&["why-pending", "ghost", "-n", "ml", "-o", "json"])
        .await;
    assert_code(&run, 1);
    let report = run.json();
    assert_eq!(report["standing"]["standing"], "bound");
    assert_eq!(report["standing"]["nodeState"], "missing");
    let text = h.run(&["why-pending", "ghost", "-n", "ml"]).await;
    assert_code(&text, 1);
    assert!(
        text.stdout
            .contains("evidence: bound to node gpu-gone, which does not exist"),
        "{}",
        text.all()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_schedulers_gang_is_judged_as_a_group_never_as_fits() {
    let h = harness().await;
    if h.is_real()
        && let Some((kubectl, crds)) =
            placekit_testserver::crds::Kubectl::for_suite("why-pending on a Volcano gang")
    {
        kubectl.install_crds(&crds, &["scheduling.volcano.sh_podgroups.yaml"]);
    }
    h.create(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"minMember": 4, "queue": "default"}
    }))
    .await;
    for i in 0..4 {
        h.create(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("train-{i}"), "namespace": "ml",
                         "annotations": {"scheduling.k8s.io/group-name": "train"}},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "image": "x",
                "resources": {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}}]}
        }))
        .await;
    }
    let run = h
        .run(&["why-pending", "train-0", "-n", "ml", "-o", "json"])
        .await;
    assert_code(&run, 1);
    let report = run.json();
    assert_eq!(report["standing"]["standing"], "otherScheduler");
    assert_eq!(report["standing"]["scheduler"], "volcano");
    assert_eq!(report["placeable"], false);
    assert_eq!(report["gang"]["group"], "ml/train");
    assert_eq!(report["gang"]["minMember"], 4);
    assert_eq!(report["gang"]["pending"], 4);
    assert_eq!(
        report["gang"]["placeableTogether"], 2,
        "two nodes of 8 GPUs take two of the 8-GPU pods"
    );
    assert_eq!(report["gang"]["satisfiable"], false);
    let text = h.run(&["why-pending", "train-0", "-n", "ml"]).await;
    assert!(
        text.stdout
            .contains("evidence: schedulerName volcano: not kube-scheduler's")
            && text.stdout.contains("(minimum 4): 0 scheduled, 2 of 4 pending placeable together: the group cannot start")
            && !text.stdout.contains("fit now"),
        "{}",
        text.all()
    );
    let all = h.run(&["why-pending", "-n", "ml"]).await;
    assert_code(&all, 1);
    assert!(
        all.stdout.contains("ml/train") && all.stdout.contains("cannot start"),
        "one row for the gang: {}",
        all.all()
    );
}

/// A refusal placekit does not model (pod anti-affinity through a non-empty
/// namespaceSelector: the namespaces' labels are not read), so the model finds room where
/// the scheduler refused: the scheduler's word wins, both are said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedulers_refusal_is_never_contradicted() {
    let h = harness().await;
    h.create(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-db", "labels": {"team": "db"}}}))
        .await;
    for node in ["gpu-a", "gpu-b"] {
        h.create(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("db-{node}"), "namespace": "team-db", "labels": {"app": "db"}},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "x"}]}
        }))
        .await;
    }
    let mut p = pod(
        "apart",
        json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "db"}},
            "namespaceSelector": {"matchLabels": {"team": "db"}},
            "topologyKey": "kubernetes.io/hostname"}]}}}),
    );
    if !h.is_real() {
        // What kube-scheduler writes of it (on kube-apiserver, it writes this itself).
        p["status"] = json!({"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."}]});
    }
    h.create(p).await;
    if let Some(said) = h.failed_scheduling("ml", "apart").await {
        assert!(
            said.contains("didn't match pod anti-affinity rules"),
            "{said}"
        );
        // The condition follows the event; wait until the pod carries it.
        for _ in 0..50 {
            let run = h
                .run(&["why-pending", "apart", "-n", "ml", "-o", "json"])
                .await;
            if run.json()["schedulerSays"].is_object() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
    let run = h
        .run(&["why-pending", "apart", "-n", "ml", "-o", "json"])
        .await;
    assert_code(&run, 1);
    let report = run.json();
    assert_eq!(report["placeable"], false, "{report}");
    assert_eq!(report["schedulerSays"]["reason"], "Unschedulable");
    assert!(
        report["schedulerSays"]["message"]
            .as_str()
            .unwrap()
            .contains("didn't match pod anti-affinity rules"),
        "{report}"
    );
    assert!(
        report["disagreement"]
            .as_str()
            .unwrap()
            .contains("2 node(s) passing every filter it models (gpu-a, gpu-b)"),
        "{report}"
    );
    let text = h.run(&["why-pending", "apart", "-n", "ml"]).await;
    assert_code(&text, 1);
    assert!(
        text.stdout
            .contains("referee: the scheduler refused the pod")
            && !text.stdout.contains("the scheduler should place it"),
        "{}",
        text.all()
    );
}

/// Kubernetes' own gangs (`scheduling.k8s.io/v1beta1` PodGroup, GenericWorkload): on the
/// second real control plane, which CI starts with the gate and the API version, against
/// kube-scheduler's GangScheduling plugin. Real-cluster only: the test server does not serve
/// that group version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_pod_group_that_cannot_reach_its_minimum_is_said_as_the_scheduler_says() {
    use placekit_testserver::real_cluster::{E2E_SECOND_KUBECONFIG, real_cluster_for};
    if real_cluster_for(
        "why-pending on a scheduling.k8s.io gang (the second control plane, GenericWorkload on)",
        E2E_SECOND_KUBECONFIG,
    )
    .is_none()
    {
        return;
    }
    let h = harness().await;
    let other = h.other_cluster(NODES).await;
    let client = other.client();
    let create = |object: Value| {
        let client = client.clone();
        async move {
            let api_version = object["apiVersion"].as_str().unwrap().to_string();
            let kind = object["kind"].as_str().unwrap().to_string();
            let plural = if kind == "Pod" { "pods" } else { "podgroups" };
            let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
            let resource = kube::api::ApiResource {
                group: group.into(),
                version: version.into(),
                api_version: api_version.clone(),
                kind,
                plural: plural.into(),
            };
            let api: kube::Api<kube::api::DynamicObject> =
                kube::Api::namespaced_with(client, "ml", &resource);
            api.create(
                &kube::api::PostParams::default(),
                &serde_json::from_value(object).unwrap(),
            )
            .await
            .expect("created");
        }
    };
    create(
        json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}}),
    )
    .await;
    for i in 0..4 {
        create(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("train-{i}"), "namespace": "ml"},
            "spec": {"schedulingGroup": {"podGroupName": "train"},
                "containers": [{"name": "main", "image": "x", "resources": {
                    "requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}}]}}))
        .await;
    }
    // kube-scheduler's word on the group first.
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(other.client(), "ml");
    let mut said = None;
    for _ in 0..150 {
        let pod = pods.get("train-0").await.expect("the pod");
        said = pod
            .status
            .and_then(|s| s.conditions)
            .into_iter()
            .flatten()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
            .and_then(|c| c.message);
        if said.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let said = said.expect("kube-scheduler refused the gang within 30 s");
    assert!(said.contains("minCount (4) cannot be satisfied"), "{said}");
    let run = h
        .run_with(
            &["why-pending", "train-0", "-n", "ml", "-o", "json"],
            &other.kubeconfig,
        )
        .await;
    assert_code(&run, 1);
    let report = run.json();
    assert_eq!(report["gang"]["kind"], "Kubernetes");
    assert_eq!(report["gang"]["minMember"], 4);
    assert_eq!(report["gang"]["placeableTogether"], 2);
    assert_eq!(report["gang"]["satisfiable"], false);
    assert!(
        report["gang"]["says"]
            .as_str()
            .unwrap_or_default()
            .contains("minCount (4) cannot be satisfied"),
        "{report}"
    );
    assert_eq!(
        report["verdict"]["evidence"],
        "gang ml/train cannot start: 2 of minimum 4 placeable together"
    );
    assert!(report["disagreement"].is_null(), "{report}");
}

/// A preemptor: kube-scheduler evicts a lower-priority pod to make room and nominates its
/// node; the victim stays Terminating (no kubelet here confirms its end). why-pending names
/// the node and the victim, not "Insufficient nvidia.com/gpu".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preemptor_names_its_nominated_node_and_the_victim_still_terminating() {
    let h = harness().await;
    h.create(
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "placekit-urgent"}, "value": 1000}),
    )
    .await;
    let gpus = json!({"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}});
    let mut victim = pod(
        "batch",
        json!({"containers": [{"name": "main", "image": "x", "resources": gpus}]}),
    );
    victim["spec"]["nodeName"] = json!("gpu-a");
    victim["status"] = json!({"phase": "Running"});
    let mut urgent = pod(
        "urgent",
        json!({"priorityClassName": "placekit-urgent", "priority": 1000,
            "nodeSelector": {"kubernetes.io/hostname": "gpu-a"},
            "containers": [{"name": "main", "image": "x", "resources": gpus}]}),
    );
    if !h.is_real() {
        // What kube-scheduler does on kube-apiserver (below), written by hand: the victim
        // deleted (Terminating: no kubelet ends it), the preemptor nominated.
        victim["metadata"]["deletionTimestamp"] = json!("2026-12-06T00:00:00Z");
        urgent["status"] = json!({"phase": "Pending", "nominatedNodeName": "gpu-a"});
    }
    h.create(victim).await;
    h.create(urgent).await;
    if h.is_real() {
        // kube-scheduler preempts: it deletes the victim and nominates gpu-a.
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(h.client(), "ml");
        let mut nominated = None;
        for _ in 0..150 {
            nominated = pods
                .get("urgent")
                .await
                .expect("the pod")
                .status
                .and_then(|s| s.nominated_node_name);
            if nominated.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        assert_eq!(
            nominated.as_deref(),
            Some("gpu-a"),
            "kube-scheduler nominated"
        );
    }
    let run = h
        .run(&["why-pending", "urgent", "-n", "ml", "-o", "json"])
        .await;
    assert_code(&run, 1);
    let report = run.json();
    assert_eq!(report["nominated"]["node"], "gpu-a", "{report}");
    assert_eq!(
        report["nominated"]["terminatingVictims"],
        json!(["ml/batch"]),
        "{report}"
    );
    assert_eq!(
        report["verdict"]["evidence"],
        "preemption: nominated to node gpu-a"
    );
    let text = h.run(&["why-pending", "urgent", "-n", "ml"]).await;
    assert!(
        text.stdout
            .contains("it waits for 1 victim(s) still terminating there: ml/batch"),
        "{}",
        text.all()
    );
}

/// The NVIDIA DRA driver's node as it publishes it: two whole H100s and three MIG devices of
/// an A100, and the chart's two DeviceClasses, which tell them apart by the `type` attribute.
fn nvidia_dra_node(allocated: &[&str]) -> Vec<Value> {
    let gpu = |i: u32| {
        json!({"name": format!("gpu-{i}"), "attributes": {
            "type": {"string": "gpu"}, "uuid": {"string": format!("GPU-{i}")},
            "productName": {"string": "NVIDIA H100 80GB HBM3"}, "architecture": {"string": "Hopper"},
            "cudaComputeCapability": {"version": "9.0.0"}, "driverVersion": {"version": "570.124.6"}},
            "capacity": {"memory": {"value": "80Gi"}}})
    };
    let mig = |j: u32, profile: &str, memory: &str| {
        json!({"name": format!("gpu-2-mig-{}-{j}", profile.replace('.', "")), "attributes": {
            "type": {"string": "mig"}, "parentUUID": {"string": "GPU-2"}, "profile": {"string": profile},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"}, "architecture": {"string": "Ampere"},
            "cudaComputeCapability": {"version": "8.0.0"}, "driverVersion": {"version": "570.124.6"}},
            "capacity": {"memory": {"value": memory}}})
    };
    let class = |name: &str, kind: &str| {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": format!(
                "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{kind}'")}}]}})
    };
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "dra-a", "labels": {"kubernetes.io/hostname": "dra-a"}},
            "spec": {}, "status": {"allocatable": {"pods": "110", "cpu": "8", "memory": "64Gi"}}}),
        class("gpu.nvidia.com", "gpu"),
        class("mig.nvidia.com", "mig"),
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "dra-a-gpu.nvidia.com"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": "dra-a",
                "pool": {"name": "dra-a", "generation": 1, "resourceSliceCount": 1},
                "devices": [gpu(0), gpu(1), mig(0, "3g.40gb", "40Gi"), mig(1, "2g.20gb", "20Gi"), mig(2, "1g.10gb", "10Gi")]}}),
    ];
    if !allocated.is_empty() {
        objects.push(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "taken", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": allocated.len()}}]}},
            "status": {"allocation": {"devices": {"results": allocated.iter().map(|d| json!(
                    {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "dra-a", "device": d})).collect::<Vec<_>>()},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["dra-a"]}]}]}}}}));
    }
    objects
}

/// A pod on `dra-a` with one claim of `requests`.
fn dra_pod(name: &str, devices: Value) -> Vec<Value> {
    vec![
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": format!("{name}-gpus"), "namespace": "ml"}, "spec": {"devices": devices}}),
        pod(
            name,
            json!({"nodeSelector": {"kubernetes.io/hostname": "dra-a"},
                "resourceClaims": [{"name": "gpus", "resourceClaimName": format!("{name}-gpus")}],
                "containers": [{"name": "main", "image": "x", "resources": {"claims": [{"name": "gpus"}]}}]}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dra_claims_with_cel_selectors_are_judged_as_the_scheduler_allocates() {
    let h = harness().await;
    h.create_all(nvidia_dra_node(&["gpu-0", "gpu-1"])).await;
    // Two H100s by product name, both allocated: the scheduler cannot allocate.
    h.create_all(dra_pod("two-h100", json!({"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "count": 2,
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.matches('H100')"}}]}}]})))
    .await;
    let report = refused(&h, "two-h100").await;
    let text = report.to_string();
    assert!(
        text.contains("cannot allocate all claims")
            && text.contains("needs 2 of class gpu.nvidia.com matching claim two-h100-gpus's selectors, 0 free here")
            && !text.contains("cannot model"),
        "{report}"
    );
    // Three whole GPUs where the driver publishes two and three MIG devices: the class
    // counts the whole ones.
    h.create_all(dra_pod(
        "three-gpus",
        json!({"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "count": 3}}]}),
    ))
    .await;
    let report = refused(&h, "three-gpus").await;
    assert!(
        report
            .to_string()
            .contains("needs 3 of class gpu.nvidia.com, 0 free here"),
        "{report}"
    );
    // H100s first, else a MIG device with at least 40Gi: the second alternative fits.
    h.create_all(dra_pod("first-available", json!({"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu.nvidia.com",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.matches('H100')"}}]},
        {"name": "mig40", "deviceClassName": "mig.nvidia.com",
            "selectors": [{"cel": {"expression": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"}}]}]}]})))
    .await;
    if h.is_real() {
        assert_eq!(
            h.bound_node("ml", "first-available").await.as_deref(),
            Some("dra-a"),
            "the scheduler allocates the 3g.40gb"
        );
    } else {
        let run = h
            .run(&["why-pending", "first-available", "-n", "ml", "-o", "json"])
            .await;
        assert_code(&run, 0);
        assert_eq!(run.json()["placeable"], true, "{}", run.all());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpu_status_counts_whole_gpus_apart_from_mig_devices() {
    let h = harness().await;
    h.create_all(nvidia_dra_node(&["gpu-0"])).await;
    let Some(gpu_taint) =
        placekit_testserver::harness::built_plugin("pending_truth", "kubectl-gpu_taint")
    else {
        return;
    };
    h.install_plugin("gpu-taint", &gpu_taint);
    let run = h
        .run_plugin("gpu-taint", &["status", "dra-a", "-o", "json"])
        .await;
    assert_code(&run, 0);
    let report = run.json();
    let rows = report["nodes"][0]["accelerators"]
        .as_array()
        .unwrap()
        .clone();
    let row = |class: &str| {
        rows.iter()
            .find(|r| r["deviceClasses"] == json!([class]))
            .unwrap_or_else(|| panic!("a row of class {class} in {rows:?}"))
            .clone()
    };
    assert_eq!(
        (
            row("gpu.nvidia.com")["capacity"].clone(),
            row("gpu.nvidia.com")["free"].clone()
        ),
        (json!(2), json!(1)),
        "{report}"
    );
    assert_eq!(
        (
            row("mig.nvidia.com")["capacity"].clone(),
            row("mig.nvidia.com")["free"].clone()
        ),
        (json!(3), json!(3)),
        "{report}"
    );
    let run = h
        .run_plugin(
            "gpu-taint",
            &["status", "dra-a", "--class", "mig.nvidia.com"],
        )
        .await;
    assert_code(&run, 0);
    assert!(
        run.stdout.contains("gpu.nvidia.com (DRA: mig.nvidia.com)")
            && !run.stdout.contains("gpu.nvidia.com (DRA) "),
        "{}",
        run.all()
    );
    // A class the cluster does not have is said, with the one meant.
    let run = h
        .run_plugin(
            "gpu-taint",
            &["status", "dra-a", "--class", "mig.nvidia.co"],
        )
        .await;
    assert!(
        run.stderr.contains(
            "--class mig.nvidia.co: no DeviceClass of that name (did you mean mig.nvidia.com?)"
        ),
        "{}",
        run.all()
    );
}
