//! `why-pending` on a pod Kueue holds, on the real control plane with Kueue's real Workload
//! CRD (`../shared/crds`): the pod carries Kueue's admission gate, the Workload its
//! plain-pod integration makes is owned by the pod, and its `QuotaReserved` condition says
//! why it waits. No Kueue runs: the Workload's status is written as Kueue writes it.

use std::process::Command;

use placekit_testserver::crds::Kubectl;
use placekit_testserver::process::Bounded as _;

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: pk-kueue-trainer
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  schedulingGates: [{name: kueue.x-k8s.io/admission}]
  containers:
  - name: train
    image: pytorch/pytorch
    resources: {limits: {nvidia.com/gpu: "8"}}
"#;

/// Runs the plugin against the suite's cluster: (exit code, stdout, stderr).
fn affinity_lint(
    kubectl: &Kubectl,
    home: &std::path::Path,
    args: &[&str],
) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-affinity_lint"))
        .args(args)
        .env("KUBECONFIG", kubectl.kubeconfig())
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .bounded_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const WAITING: &str = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed";

#[test]
fn why_pending_says_what_kueue_holds_a_gated_pod_for() {
    let suite = "why-pending on a Kueue-gated pod on the real control plane";
    let Some((kubectl, crds)) = Kubectl::for_suite(suite) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    kubectl.install_crds(&crds, &["kueue.x-k8s.io_workloads.yaml"]);
    let pod = dir.path().join("pod.yaml");
    std::fs::write(&pod, POD).unwrap();
    let pod = pod.display().to_string();
    kubectl.delete_now(&pod, true);
    kubectl.must(&["create", "-f", &pod]);
    let uid = kubectl.must(&[
        "get",
        "pod",
        "pk-kueue-trainer",
        "-n",
        "default",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    // The Workload Kueue's plain-pod integration makes: owned by the pod.
    let workload = serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "pod-pk-kueue-trainer-1a2b3", "namespace": "default",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "pk-kueue-trainer", "uid": uid, "controller": true}]},
        "spec": {"queueName": "team-a", "podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"containers": [{"name": "train", "image": "pytorch/pytorch",
                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}]}
    });
    let workload_file = dir.path().join("workload.json");
    std::fs::write(&workload_file, workload.to_string()).unwrap();
    let workload_file = workload_file.display().to_string();
    kubectl.create_when_served(&workload_file, || kubectl.delete_now(&workload_file, true));
    let status = serde_json::json!({"status": {"conditions": [{
        "type": "QuotaReserved", "status": "False", "reason": "Pending", "message": WAITING,
        "lastTransitionTime": "2026-12-03T10:00:00Z"}]}});
    kubectl.must(&[
        "patch",
        "workloads.kueue.x-k8s.io",
        "pod-pk-kueue-trainer-1a2b3",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);

    let run = |args: &[&str]| affinity_lint(&kubectl, dir.path(), args);
    let text = run(&["why-pending", "pk-kueue-trainer", "-n", "default"]);
    let json = run(&[
        "why-pending",
        "pk-kueue-trainer",
        "-n",
        "default",
        "-o",
        "json",
    ]);
    // Every pending pod at once: one list of the Workloads says it for each gated pod.
    let summary = run(&["why-pending", "-A"]);
    let summary_json = run(&["why-pending", "-n", "default", "-o", "json"]);
    kubectl.delete_now(&workload_file, false);
    kubectl.delete_now(&pod, false);

    let (code, out, err) = text;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("kueue.x-k8s.io/admission")
            && out.contains(
                "Workload default/pod-pk-kueue-trainer-1a2b3 (LocalQueue team-a) is not admitted"
            )
            && out.contains(WAITING),
        "{out}"
    );
    let (code, out, err) = json;
    assert_eq!(code, 1, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["workload"]["name"], "pod-pk-kueue-trainer-1a2b3");
    assert_eq!(report["workload"]["conditions"][0]["message"], WAITING);
    let (code, out, err) = summary;
    assert_eq!(code, 1, "{err}");
    assert!(
        out.lines().any(|l| l.contains("pk-kueue-trainer")
            && l.contains("scheduling gates: kueue.x-k8s.io/admission")
            && l.contains(
                "Workload default/pod-pk-kueue-trainer-1a2b3 (LocalQueue team-a) is not admitted"
            )
            && l.contains(WAITING)),
        "{out}"
    );
    let (code, out, err) = summary_json;
    assert_eq!(code, 1, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let item = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "pk-kueue-trainer")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        item["kueueAdmission"]
            .as_str()
            .is_some_and(|a| a.contains(WAITING)),
        "{out}"
    );
}

/// A GPU an admin marked broken with a DeviceTaintRule, on a node that publishes two.
const TAINTED_DEVICES: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: pk-dtr-node
  labels: {kubernetes.io/hostname: pk-dtr-node}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady, message: no kubelet}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: pk-dtr.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "pk-dtr.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: pk-dtr-node-gpus}
spec:
  driver: pk-dtr.example.com
  nodeName: pk-dtr-node
  pool: {name: pk-dtr-node, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: pk-dtr-gpu0-broken}
spec:
  deviceSelector: {driver: pk-dtr.example.com, pool: pk-dtr-node, device: gpu-0}
  taint: {key: example.com/unhealthy, value: ecc, effect: NoSchedule}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: pk-dtr-two, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: pk-dtr.example.com, count: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: pk-dtr-two, namespace: default}
spec:
  containers: [{name: c, image: registry.k8s.io/pause:3.10, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimName: pk-dtr-two}]
"#;

#[test]
fn why_pending_counts_devices_a_device_taint_rule_taints() {
    let suite = "why-pending with a DeviceTaintRule on the real control plane";
    let Some((kubectl, _)) = Kubectl::for_suite(suite) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects.yaml");
    std::fs::write(&objects, TAINTED_DEVICES).unwrap();
    let objects = objects.display().to_string();
    // The scheduler protects a claim it allocated with a finalizer only the resource claim
    // controller removes, and none runs here.
    let release_claim = || {
        kubectl.run(&[
            "patch",
            "resourceclaim",
            "pk-dtr-two",
            "-n",
            "default",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ])
    };
    release_claim();
    kubectl.delete_now(&objects, true);
    kubectl.must(&["create", "-f", &objects]);
    // The scheduler's own verdict first: it must have tried and failed.
    let mut scheduler_said = String::new();
    for _ in 0..100 {
        scheduler_said = kubectl.must(&[
            "get",
            "events",
            "-n",
            "default",
            "--field-selector",
            "involvedObject.name=pk-dtr-two,reason=FailedScheduling",
            "-o",
            "jsonpath={.items[*].message}",
        ]);
        if !scheduler_said.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let run = |args: &[&str]| affinity_lint(&kubectl, dir.path(), args);
    let tainted = run(&["why-pending", "pk-dtr-two", "-n", "default"]);
    // Without the rule both devices are free: the scheduler binds the pod.
    kubectl.must(&["delete", "devicetaintrule", "pk-dtr-gpu0-broken"]);
    let mut bound = String::new();
    for _ in 0..100 {
        bound = kubectl.must(&[
            "get",
            "pod",
            "pk-dtr-two",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec.nodeName}",
        ]);
        if !bound.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    kubectl.delete_now(&objects, false);
    release_claim();

    assert!(
        scheduler_said.contains("cannot allocate all claims"),
        "the scheduler: {scheduler_said}"
    );
    assert_eq!(
        bound, "pk-dtr-node",
        "the scheduler binds once the rule is gone"
    );
    let (code, out, err) = tainted;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("cannot allocate all claims")
            && out.contains("1 free here")
            && out.contains(
                "gpu-0: example.com/unhealthy=ecc:NoSchedule (DeviceTaintRule pk-dtr-gpu0-broken)"
            ),
        "{out}"
    );
}

/// `why-pending POD -w`: the report, then what the scheduler says as it changes, until the
/// pod is scheduled (exit 0) — here once a node gets the label the pod selects.
#[test]
fn why_pending_watch_follows_a_pod_until_it_is_scheduled() {
    use std::time::Duration;
    let suite = "why-pending -w on the real control plane";
    let Some((kubectl, _)) = Kubectl::for_suite(suite) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects.yaml");
    std::fs::write(
        &objects,
        r#"
apiVersion: v1
kind: Node
metadata:
  name: pk-wp-node
  labels: {kubernetes.io/hostname: pk-wp-node}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady, message: no kubelet}]
---
apiVersion: v1
kind: Pod
metadata: {name: pk-wp-waiter, namespace: default}
spec:
  nodeSelector: {example.com/pk-wp-pool: ready}
  containers: [{name: c, image: registry.k8s.io/pause:3.10}]
"#,
    )
    .unwrap();
    let objects = objects.display().to_string();
    kubectl.delete_now(&objects, true);
    kubectl.must(&["create", "-f", &objects]);
    // The scheduler's first verdict, before following.
    for _ in 0..100 {
        let said = kubectl.must(&[
            "get",
            "pod",
            "pk-wp-waiter",
            "-n",
            "default",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].reason}",
        ]);
        if said == "Unschedulable" {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (mut child, received) = placekit_testserver::process::spawn_lines(
        Command::new(env!("CARGO_BIN_EXE_kubectl-affinity_lint"))
            .args(["why-pending", "pk-wp-waiter", "-n", "default", "-w"])
            .env("KUBECONFIG", kubectl.kubeconfig())
            .env("HOME", dir.path())
            .env("NO_COLOR", "1"),
    );
    // The report first (it ends with the verdict's action).
    let mut report = Vec::new();
    while let Ok((_, line)) = received.recv_timeout(Duration::from_secs(30)) {
        let done = line.starts_with("action:");
        report.push(line);
        if done {
            break;
        }
    }
    kubectl.must(&[
        "label",
        "node",
        "pk-wp-node",
        "example.com/pk-wp-pool=ready",
    ]);
    let mut followed = Vec::new();
    while let Ok((_, line)) = received.recv_timeout(Duration::from_secs(60)) {
        followed.push(line);
    }
    let status = child.wait().unwrap();
    kubectl.delete_now(&objects, false);

    assert!(
        report
            .iter()
            .any(|l| l.contains("didn't match Pod's node affinity/selector")),
        "{report:#?}"
    );
    assert_eq!(
        followed.last().map(String::as_str),
        Some("pod default/pk-wp-waiter was scheduled to node pk-wp-node"),
        "{followed:#?}"
    );
    assert_eq!(status.code(), Some(0));
}

/// A Kueue Workload whose pod set's anti-affinity sits beside the template's `spec`.
const MISPLACED_IN_WORKLOAD: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: pk-al018-trainer, namespace: default}
spec:
  queueName: team-a
  podSets:
  - name: main
    count: 2
    template:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {labelSelector: {matchLabels: {app: trainer}}, topologyKey: kubernetes.io/hostname}
      spec:
        containers: [{name: train, image: pytorch/pytorch}]
"#;

/// `--crd-dir` and `--cluster`: a custom resource judged by its real CRD's structural schema
/// (Kueue's Workload, `../shared/crds`), from a directory or as the cluster serves it. AL018
/// says the misplaced anti-affinity is pruned; the real
/// API server, given the CRD, does prune it (created without strict validation, the field
/// is gone), and refuses it under kubectl's strict validation.
#[test]
fn crds_judge_a_custom_resource_as_the_api_server_prunes_it() {
    let suite = "affinity-lint --crd-dir on the real control plane";
    let Some((kubectl, crds)) = Kubectl::for_suite(suite) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let crd_dir = dir.path().join("crds");
    std::fs::create_dir(&crd_dir).unwrap();
    std::fs::copy(
        crds.join("kueue.x-k8s.io_workloads.yaml"),
        crd_dir.join("workloads.yaml"),
    )
    .unwrap();
    let manifest = dir.path().join("workload.yaml");
    std::fs::write(&manifest, MISPLACED_IN_WORKLOAD).unwrap();
    let manifest = manifest.display().to_string();
    let crd_dir = crd_dir.display().to_string();
    let with_crds = affinity_lint(
        &kubectl,
        dir.path(),
        &["-f", &manifest, "--crd-dir", &crd_dir, "-o", "json"],
    );
    let without = affinity_lint(&kubectl, dir.path(), &["-f", &manifest, "-o", "json"]);
    let empty_dir = dir.path().join("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    let no_crds = affinity_lint(
        &kubectl,
        dir.path(),
        &[
            "-f",
            &manifest,
            "--crd-dir",
            &empty_dir.display().to_string(),
        ],
    );

    kubectl.install_crds(&crds, &["kueue.x-k8s.io_workloads.yaml"]);
    // With --cluster, the CRD the cluster serves (discovery lists a just-Established CRD
    // within moments).
    let mut served = (0, String::new(), String::new());
    for _ in 0..30 {
        served = affinity_lint(
            &kubectl,
            dir.path(),
            &["-f", &manifest, "--cluster", "-o", "json"],
        );
        if served.1.contains("AL018") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    kubectl.delete_now(&manifest, true);
    // A just-Established CRD may not be served for a moment.
    let (mut strict_ok, mut strict_err) = (false, String::new());
    for _ in 0..60 {
        let (ok, _, err) = kubectl.run(&["create", "-f", &manifest]);
        (strict_ok, strict_err) = (ok, err);
        if strict_ok || !strict_err.contains("no matches for kind") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let (mut lenient_ok, mut lenient_err) = (false, String::new());
    for _ in 0..30 {
        let (ok, _, err) = kubectl.run(&["create", "--validate=false", "-f", &manifest]);
        (lenient_ok, lenient_err) = (ok, err);
        if lenient_ok {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let (_, stored, get_err) = kubectl.run(&[
        "get",
        "workloads.kueue.x-k8s.io",
        "pk-al018-trainer",
        "-n",
        "default",
        "-o",
        "json",
    ]);
    kubectl.delete_now(&manifest, false);

    let (code, out, err) = with_crds;
    assert_eq!(code, 1, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let found: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "AL018")
        .collect();
    assert_eq!(found.len(), 1, "{out}");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("`spec.podSets[0].template.affinity` is not in the CustomResourceDefinition's schema for Workload"),
        "{out}"
    );
    let (_, out, _) = without;
    assert!(
        !out.contains("AL018"),
        "without the CRD nothing is known: {out}"
    );
    let (code, out, err) = served;
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("`spec.podSets[0].template.affinity` is not in the CustomResourceDefinition's schema for Workload"),
        "--cluster did not read the served CRD: {out}{err}"
    );
    let (code, _, err) = no_crds;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no CustomResourceDefinition there"), "{err}");
    // What the API server does with it.
    assert!(!strict_ok, "kubectl's strict validation let it through");
    assert!(
        strict_err.contains("unknown field \"spec.podSets[0].template.affinity\""),
        "{strict_err}"
    );
    assert!(lenient_ok, "{lenient_err}");
    let stored: serde_json::Value = serde_json::from_str(&stored)
        .unwrap_or_else(|e| panic!("{e}: {get_err}; the create said {lenient_err}"));
    assert!(
        stored["spec"]["podSets"][0]["template"]
            .get("affinity")
            .is_none(),
        "not pruned: {stored}"
    );
}
