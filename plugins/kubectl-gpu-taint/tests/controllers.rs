//! `dedicate` against what else lives in a GPU cluster, on the real control plane with the
//! projects' real CRDs (`../shared/crds`, pruned and validated by the API server): a Kueue
//! ResourceFlavor whose every node a taint would keep its workloads from (neither its
//! `tolerations` nor its `nodeTaints` cover it) blocks, named with its ClusterQueue; the
//! same taint declared in the flavor's `nodeTaints` goes through; a taint on a node
//! Karpenter replaces warns that it is lost with the node and where to add it instead; a
//! taint a Kueue Workload placed there by topology-aware scheduling does not tolerate says
//! what Kueue then does (blocking for NoExecute).

use std::process::Command;

use placekit_testserver::crds::Kubectl;
use placekit_testserver::process::Bounded as _;

const OBJECTS: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: pk-gt-flavor}
spec:
  nodeLabels: {example.com/pk-gt-pool: flavored}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: pk-gt-queue}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: pk-gt-flavor
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-flavored
  labels: {example.com/pk-gt-pool: flavored}
status:
  capacity: {nvidia.com/gpu: "8"}
  allocatable: {nvidia.com/gpu: "8"}
---
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-karpenter
  labels: {karpenter.sh/nodepool: gpu-spot}
status:
  capacity: {nvidia.com/gpu: "8"}
  allocatable: {nvidia.com/gpu: "8"}
"#;

/// Runs the plugin against the suite's cluster, its state under `home`.
fn gpu_taint(kubectl: &Kubectl, home: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
        .args(args)
        .env("KUBECONFIG", kubectl.kubeconfig())
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env("PLACEKIT_STATE_DIR", home.join("state"))
        .bounded_output()
        .unwrap()
}

/// Runs the plugin: its exit code and stderr.
fn code_and_stderr(kubectl: &Kubectl, home: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = gpu_taint(kubectl, home, args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn dedicate_judges_resource_flavors_and_karpenter_nodes_on_the_real_control_plane() {
    let suite = "gpu-taint against ResourceFlavors and Karpenter nodes";
    let Some((kubectl, crds)) = Kubectl::for_suite(suite) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let must = |args: &[&str]| kubectl.must(args);
    let gpu_taint = |args: &[&str]| code_and_stderr(&kubectl, home.path(), args);
    kubectl.install_crds(
        &crds,
        &[
            "kueue.x-k8s.io_resourceflavors.yaml",
            "kueue.x-k8s.io_clusterqueues.yaml",
        ],
    );
    let objects = home.path().join("objects.yaml");
    std::fs::write(&objects, OBJECTS).unwrap();
    let objects = objects.display().to_string();
    kubectl.create_when_served(&objects, || kubectl.delete_now(&objects, true));
    let taints = |node: &str| must(&["get", "node", node, "-o", "jsonpath={.spec.taints}"]);

    // The flavor's only node, tainted against it: blocked, nothing written.
    let (code, err) = gpu_taint(&[
        "dedicate",
        "pk-gt-flavored",
        "--taint",
        "dedicated=llm:NoSchedule",
        "-y",
    ]);
    let flavor_blocked = (code, err.clone(), taints("pk-gt-flavored"));
    // Declared in the flavor's nodeTaints (Kueue admits only workloads that tolerate it):
    // the flavor keeps its node.
    must(&[
        "patch",
        "resourceflavors.kueue.x-k8s.io",
        "pk-gt-flavor",
        "--type=merge",
        "-p",
        r#"{"spec":{"nodeTaints":[{"key":"dedicated","value":"llm","effect":"NoSchedule"}]}}"#,
    ]);
    let declared = gpu_taint(&[
        "dedicate",
        "pk-gt-flavored",
        "--taint",
        "dedicated=llm:NoSchedule",
        "-y",
    ]);
    let karpenter = gpu_taint(&[
        "dedicate",
        "pk-gt-karpenter",
        "--taint",
        "dedicated=llm:NoSchedule",
        "-y",
    ]);
    let karpenter_taints = taints("pk-gt-karpenter");
    kubectl.delete_now(&objects, false);

    let (code, err, left) = flavor_blocked;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("ResourceFlavor pk-gt-flavor (used by ClusterQueue pk-gt-queue)")
            && err.contains("--ignore-dependents"),
        "{err}"
    );
    assert!(left.is_empty(), "the taint was written: {left}");
    assert_eq!(declared.0, 0, "{}", declared.1);
    assert_eq!(karpenter.0, 0, "{}", karpenter.1);
    assert!(
        karpenter.1.contains("NodePool gpu-spot")
            && karpenter.1.contains("spec.template.spec.taints"),
        "{}",
        karpenter.1
    );
    assert!(karpenter_taints.contains("dedicated"), "{karpenter_taints}");
}

/// A Workload Kueue admitted by topology-aware scheduling onto two nodes (its
/// `status.admission` in v1beta2's compressed `slices`, written with the field manager
/// Kueue's scheduler uses), tolerating only the GPU taint.
const TAS_OBJECTS: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-tas-1
  labels: {kubernetes.io/hostname: pk-gt-tas-1}
status:
  capacity: {nvidia.com/gpu: "8"}
  allocatable: {nvidia.com/gpu: "8"}
---
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-tas-2
  labels: {kubernetes.io/hostname: pk-gt-tas-2}
status:
  capacity: {nvidia.com/gpu: "8"}
  allocatable: {nvidia.com/gpu: "8"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: pk-gt-trainer, namespace: default}
spec:
  queueName: gpu
  podSets:
  - name: workers
    count: 2
    template:
      spec:
        tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
        containers: [{name: w, image: trainer, resources: {requests: {nvidia.com/gpu: "8"}}}]
"#;

const TAS_ADMISSION: &str = r#"{"status":{"admission":{"clusterQueue":"gpu","podSetAssignments":[{"name":"workers","count":2,"flavors":{"nvidia.com/gpu":"h100"},"resourceUsage":{"nvidia.com/gpu":"16"},"topologyAssignment":{"levels":["kubernetes.io/hostname"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"pk-gt-tas-","roots":["1","2"]}}],"podCounts":{"universal":1}}]}}]},"conditions":[{"type":"QuotaReserved","status":"True","reason":"QuotaReserved","message":"Quota reserved in ClusterQueue gpu","lastTransitionTime":"2026-12-07T00:00:00Z"},{"type":"Admitted","status":"True","reason":"Admitted","message":"The workload is admitted","lastTransitionTime":"2026-12-07T00:00:00Z"}]}}"#;

#[test]
fn dedicate_says_what_kueue_tas_does_with_a_workload_placed_on_the_node() {
    let suite = "gpu-taint against Kueue topology-aware Workloads";
    let Some((kubectl, crds)) = Kubectl::for_suite(suite) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let must = |args: &[&str]| kubectl.must(args);
    let gpu_taint = |args: &[&str]| code_and_stderr(&kubectl, home.path(), args);
    kubectl.install_crds(&crds, &["kueue.x-k8s.io_workloads.yaml"]);
    let objects = home.path().join("tas.yaml");
    std::fs::write(&objects, TAS_OBJECTS).unwrap();
    let objects = objects.display().to_string();
    kubectl.create_when_served(&objects, || kubectl.delete_now(&objects, true));
    must(&[
        "patch",
        "workloads.kueue.x-k8s.io",
        "pk-gt-trainer",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "--field-manager=kueue-admission",
        "-p",
        TAS_ADMISSION,
    ]);
    let taints = |node: &str| must(&["get", "node", node, "-o", "jsonpath={.spec.taints}"]);
    let dedicate = |node: &str, taint: &str, extra: &[&str]| {
        let mut args = vec!["dedicate", node, "--taint", taint, "-y"];
        args.extend(extra);
        gpu_taint(&args)
    };

    let blocked = dedicate("pk-gt-tas-1", "dedicated=llm:NoExecute", &[]);
    let blocked_left = taints("pk-gt-tas-1");
    let overridden = dedicate(
        "pk-gt-tas-1",
        "dedicated=llm:NoExecute",
        &["--ignore-dependents"],
    );
    let no_schedule = dedicate("pk-gt-tas-2", "dedicated=llm:NoSchedule", &[]);
    let tolerated = dedicate("pk-gt-tas-2", "nvidia.com/gpu=present:NoSchedule", &[]);
    kubectl.delete_now(&objects, false);

    let said = "Kueue workload default/pk-gt-trainer (placed by topology-aware scheduling; pod set workers on pk-gt-tas-1) does not tolerate dedicated=llm:NoExecute";
    assert_eq!(blocked.0, 1, "{}", blocked.1);
    assert!(
        blocked.1.contains(said)
            && blocked.1.contains("evicts and requeues the whole workload")
            && blocked.1.contains("--ignore-dependents"),
        "{}",
        blocked.1
    );
    assert!(
        blocked_left.is_empty(),
        "the taint was written: {blocked_left}"
    );
    assert_eq!(overridden.0, 0, "{}", overridden.1);
    assert!(overridden.1.contains(said), "{}", overridden.1);
    assert_eq!(no_schedule.0, 0, "{}", no_schedule.1);
    assert!(
        no_schedule.1.contains("pod set workers on pk-gt-tas-2) does not tolerate dedicated=llm:NoSchedule: its pods there keep running"),
        "{}",
        no_schedule.1
    );
    assert_eq!(tolerated.0, 0, "{}", tolerated.1);
    assert!(!tolerated.1.contains("Kueue workload"), "{}", tolerated.1);
}

/// Taints the controllers' own objects declare: a Karpenter NodePool's template taint on a
/// node of the pool, a NodeFeatureRule's taint and a NodeReadinessRule's, each written on
/// its node with the controller's field manager (`manager` is the Node Readiness
/// Controller's binary).
const DECLARED_OBJECTS: &str = r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: pk-gt-gpu-spot}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
---
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: pk-gt-fpga}
spec:
  rules:
  - name: fpga
    taints: [{key: feature.node.kubernetes.io/fpga, value: "true", effect: NoSchedule}]
    matchFeatures:
    - feature: kernel.loadedmodule
      matchExpressions: {fpga_mgr: {op: Exists}}
---
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-kp-1
  labels: {karpenter.sh/nodepool: pk-gt-gpu-spot}
status:
  capacity: {nvidia.com/gpu: "8"}
  allocatable: {nvidia.com/gpu: "8"}
---
apiVersion: readiness.node.x-k8s.io/v1alpha1
kind: NodeReadinessRule
metadata: {name: pk-gt-gpu-ready}
spec:
  enforcementMode: continuous
  conditions: [{type: example.com/GPUDriverReady, requiredStatus: "True"}]
  nodeSelector: {matchLabels: {example.com/pk-gt-readiness: "1"}}
  taint: {key: readiness.k8s.io/pk-gt-gpu-driver, value: pending, effect: NoSchedule}
---
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-nfd-1
status:
  capacity: {nvidia.com/gpu: "8"}
  allocatable: {nvidia.com/gpu: "8"}
---
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-nr-1
  labels: {example.com/pk-gt-readiness: "1"}
status:
  capacity: {nvidia.com/gpu: "8"}
  allocatable: {nvidia.com/gpu: "8"}
"#;

#[test]
fn release_refuses_taints_the_controllers_own_objects_declare() {
    let suite = "gpu-taint release against NodePools and NodeFeatureRules";
    let Some((kubectl, crds)) = Kubectl::for_suite(suite) else {
        return;
    };
    let Some(nodelabel) = placekit_testserver::harness::built_plugin(suite, "kubectl-nodelabel")
    else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let must = |args: &[&str]| kubectl.must(args);
    let gpu_taint = |args: &[&str]| code_and_stderr(&kubectl, home.path(), args);
    kubectl.install_crds(&crds, &["karpenter.sh_nodepools.yaml", "nfd-api-crds.yaml"]);
    // The Node Readiness Controller's CRD, vendored at a pinned release.
    kubectl.install_crd_paths(&[concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/crds/readiness.node.x-k8s.io_nodereadinessrules.yaml"
    )
    .to_string()]);
    let objects = home.path().join("declared.yaml");
    std::fs::write(&objects, DECLARED_OBJECTS).unwrap();
    let objects = objects.display().to_string();
    kubectl.create_when_served(&objects, || kubectl.delete_now(&objects, true));
    for (node, manager, taint) in [
        (
            "pk-gt-kp-1",
            "karpenter",
            r#"{"key":"nvidia.com/gpu","value":"true","effect":"NoSchedule"}"#,
        ),
        (
            "pk-gt-nfd-1",
            "nfd-master",
            r#"{"key":"feature.node.kubernetes.io/fpga","value":"true","effect":"NoSchedule"}"#,
        ),
        (
            "pk-gt-nr-1",
            "manager",
            r#"{"key":"readiness.k8s.io/pk-gt-gpu-driver","value":"pending","effect":"NoSchedule"}"#,
        ),
    ] {
        must(&[
            "patch",
            "node",
            node,
            "--type=merge",
            &format!("--field-manager={manager}"),
            "-p",
            &format!(r#"{{"spec":{{"taints":[{taint}]}}}}"#),
        ]);
    }
    let taints = |node: &str| must(&["get", "node", node, "-o", "jsonpath={.spec.taints}"]);
    let pool = gpu_taint(&[
        "release",
        "pk-gt-kp-1",
        "--taint",
        "nvidia.com/gpu=true:NoSchedule",
        "-y",
    ]);
    let pool_left = taints("pk-gt-kp-1");
    let rule = gpu_taint(&[
        "release",
        "pk-gt-nfd-1",
        "--taint",
        "feature.node.kubernetes.io/fpga=true:NoSchedule",
        "-y",
    ]);
    let rule_left = taints("pk-gt-nfd-1");
    let readiness = gpu_taint(&[
        "release",
        "pk-gt-nr-1",
        "--taint",
        "readiness.k8s.io/pk-gt-gpu-driver=pending:NoSchedule",
        "-y",
    ]);
    let show = Command::new(&nodelabel)
        .args(["show", "pk-gt-kp-1", "-o", "json"])
        .env("KUBECONFIG", kubectl.kubeconfig())
        .env("HOME", home.path())
        .bounded_output()
        .unwrap();
    let overridden = gpu_taint(&[
        "release",
        "pk-gt-nfd-1",
        "--taint",
        "feature.node.kubernetes.io/fpga=true:NoSchedule",
        "-y",
        "--ignore-taint-owner",
    ]);
    let overridden_left = taints("pk-gt-nfd-1");
    kubectl.delete_now(&objects, false);

    assert_eq!(pool.0, 1, "{}", pool.1);
    assert!(
        pool.1.contains("node/pk-gt-kp-1: taint nvidia.com/gpu=true:NoSchedule is Karpenter (NodePool pk-gt-gpu-spot)'s: NodePool pk-gt-gpu-spot puts it on every node it launches")
            && pool.1.contains("--ignore-taint-owner"),
        "{}",
        pool.1
    );
    assert!(pool_left.contains("nvidia.com/gpu"), "{pool_left}");
    assert_eq!(rule.0, 1, "{}", rule.1);
    assert!(
        rule.1
            .contains("is nfd-master (NodeFeatureRule pk-gt-fpga)'s")
            && rule.1.contains("change the rule instead"),
        "{}",
        rule.1
    );
    assert!(rule_left.contains("fpga"), "{rule_left}");
    assert_eq!(readiness.0, 1, "{}", readiness.1);
    assert!(
        readiness.1.contains("is the Node Readiness Controller (NodeReadinessRule pk-gt-gpu-ready)'s: NodeReadinessRule pk-gt-gpu-ready keeps it whenever example.com/GPUDriverReady=True do not hold"),
        "{}",
        readiness.1
    );
    let shown: serde_json::Value = serde_json::from_slice(&show.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&show.stderr)));
    assert_eq!(
        shown["taints"][0]["owner"], "Karpenter (NodePool pk-gt-gpu-spot)",
        "{shown:#}"
    );
    assert_eq!(shown["taints"][0]["managers"][0], "karpenter", "{shown:#}");
    assert_eq!(overridden.0, 0, "{}", overridden.1);
    assert!(!overridden_left.contains("fpga"), "{overridden_left}");
}

/// Two GPUs a DRA driver publishes for a node, one marked broken by a DeviceTaintRule, and
/// the ComputeDomain devices the NVIDIA DRA driver publishes beside them; a node whose MIG
/// reconfiguration failed.
const TAINTED_DEVICES: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-dra
  labels: {kubernetes.io/hostname: pk-gt-dra}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: pk-gt.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "pk-gt.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: pk-gt-dra-gpus}
spec:
  driver: pk-gt.example.com
  nodeName: pk-gt-dra
  pool: {name: pk-gt-dra, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
---
# A MIG reconfiguration the MIG manager reported failed, the device plugin still paused.
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-mig
  labels:
    kubernetes.io/hostname: pk-gt-mig
    nvidia.com/mig.config: all-1g.10gb
    nvidia.com/mig.config.state: failed
    nvidia.com/gpu.deploy.device-plugin: paused-for-mig-change
status:
  capacity: {nvidia.com/gpu: "8"}
  allocatable: {nvidia.com/gpu: "8"}
---
# The NVIDIA DRA driver's ComputeDomain devices: an IMEX channel and the daemon slot.
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: pk-gt-dra-compute-domain}
spec:
  driver: compute-domain.nvidia.com
  nodeName: pk-gt-dra
  pool: {name: pk-gt-dra, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: daemon-0, attributes: {type: {string: daemon}, id: {int: 0}}}
  - {name: channel-0, attributes: {type: {string: channel}, id: {int: 0}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: pk-gt-gpu1-broken}
spec:
  deviceSelector: {driver: pk-gt.example.com, device: gpu-1}
  taint: {key: example.com/unhealthy, value: xid-79, effect: NoSchedule}
"#;

#[test]
fn status_counts_tainted_devices_compute_domain_devices_and_mig_reconfiguration() {
    let suite = "gpu-taint status with a DeviceTaintRule on the real control plane";
    let Some((kubectl, _)) = Kubectl::for_suite(suite) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let objects = home.path().join("objects.yaml");
    std::fs::write(&objects, TAINTED_DEVICES).unwrap();
    let objects = objects.display().to_string();
    kubectl.delete_now(&objects, true);
    kubectl.must(&["create", "-f", &objects]);
    let status = || {
        let out = gpu_taint(
            &kubectl,
            home.path(),
            &["status", "pk-gt-dra", "-o", "json"],
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (
            out.status.code().unwrap_or(-1),
            report["nodes"][0].clone(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let tainted = status();
    let mig = gpu_taint(&kubectl, home.path(), &["status", "pk-gt-mig"]);
    kubectl.must(&["delete", "devicetaintrule", "pk-gt-gpu1-broken"]);
    let untainted = status();
    kubectl.delete_now(&objects, false);

    let (code, node, err) = tainted;
    assert_eq!(code, 0, "{err}");
    let gpus = &node["accelerators"][0];
    assert_eq!(gpus["resource"], "pk-gt.example.com", "{node}");
    assert_eq!(
        (gpus["capacity"].as_i64(), gpus["free"].as_i64()),
        (Some(2), Some(1)),
        "{node}"
    );
    assert_eq!(gpus["tainted"], 1, "{node}");
    let channels = &node["accelerators"][1];
    assert_eq!(
        (
            &channels["resource"],
            &channels["form"],
            &channels["capacity"]
        ),
        (
            &serde_json::json!("compute-domain.nvidia.com"),
            &serde_json::json!("dra-non-accelerator"),
            &serde_json::json!(2)
        ),
        "{node}"
    );
    assert!(
        node["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("1 pk-gt.example.com device tainted")),
        "{node}"
    );
    assert!(
        err.contains(
            "DeviceTaintRule pk-gt-gpu1-broken (example.com/unhealthy=xid-79:NoSchedule) taints 1 device"
        ),
        "{err}"
    );
    let (code, out) = (
        mig.status.code(),
        String::from_utf8_lossy(&mig.stdout).into_owned(),
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("pk-gt-mig")
            && l.contains("MIG reconfiguration to all-1g.10gb failed")
            && l.contains("device-plugin")),
        "{out}"
    );
    let (code, node, err) = untainted;
    assert_eq!(code, 0, "{err}");
    assert_eq!(node["accelerators"][0]["free"], 2, "{node}");
    assert!(node["accelerators"][0].get("tainted").is_none(), "{node}");
}

/// `status -w`: the table, then a node's rows again within a second of a write that
/// changes them (its allocatable, a GPU pod bound to it), and nothing for a write that
/// does not (a label outside the table).
#[test]
fn status_watch_prints_a_changed_node_within_a_second() {
    use std::time::{Duration, Instant};
    let suite = "gpu-taint status -w on the real control plane";
    let Some((kubectl, _)) = Kubectl::for_suite(suite) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let node = home.path().join("node.yaml");
    std::fs::write(
        &node,
        r#"
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-watch
  labels: {kubernetes.io/hostname: pk-gt-watch, example.com/pk-gt-watch: "1"}
status:
  capacity: {nvidia.com/gpu: "8", cpu: "8", pods: "110"}
  allocatable: {nvidia.com/gpu: "8", cpu: "8", pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: pk-gt-watch-trainer, namespace: default}
spec:
  nodeName: pk-gt-watch
  containers: [{name: c, image: registry.k8s.io/pause:3.10, resources: {limits: {nvidia.com/gpu: "2"}}}]
"#,
    )
    .unwrap();
    let node = node.display().to_string();
    kubectl.delete_now(&node, true);
    kubectl.must(&["create", "-f", &node]);
    let (mut child, received) = placekit_testserver::process::spawn_lines(
        Command::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
            .args(["status", "-l", "example.com/pk-gt-watch=1", "-w"])
            .env("KUBECONFIG", kubectl.kubeconfig())
            .env("HOME", home.path())
            .env("NO_COLOR", "1"),
    );
    let next = |within: Duration| received.recv_timeout(within).ok();
    // The table: header, the node's row (2 of 8 requested), the total.
    let table: Vec<String> = (0..3)
        .filter_map(|_| next(Duration::from_secs(30)).map(|(_, l)| l))
        .collect();
    // A label the table does not show: no row.
    kubectl.must(&["label", "node", "pk-gt-watch", "example.com/unrelated=1"]);
    let quiet = next(Duration::from_secs(2));
    // The device plugin reports a GPU gone: allocatable 8 -> 7.
    let written = Instant::now();
    kubectl.must(&[
        "patch",
        "node",
        "pk-gt-watch",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"allocatable":{"nvidia.com/gpu":"7"}}}"#,
    ]);
    let allocatable = next(Duration::from_secs(10));
    // The GPU pod finishes: its 2 GPUs are free again.
    kubectl.must(&[
        "delete",
        "pod",
        "pk-gt-watch-trainer",
        "-n",
        "default",
        "--grace-period=0",
        "--force",
    ]);
    let freed = next(Duration::from_secs(10));
    let _ = child.kill();
    let _ = child.wait();
    kubectl.delete_now(&node, false);

    assert!(
        table.len() == 3
            && table[0].starts_with("NAME")
            && table[1].starts_with("pk-gt-watch")
            && table[1].split_whitespace().nth(4) == Some("2"),
        "{table:?}"
    );
    assert_eq!(quiet, None, "a label outside the table printed a row");
    let (at, row) = allocatable.expect("no row after the allocatable changed");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        (cells[0], cells[3], cells[5]),
        ("pk-gt-watch", "7", "5"),
        "{row}"
    );
    assert!(
        at.duration_since(written) < Duration::from_secs(1),
        "the row came {:?} after the write",
        at.duration_since(written)
    );
    let (_, row) = freed.expect("no row after the GPU pod went");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((cells[4], cells[5]), ("0", "7"), "{row}");
}

/// A GPU node and a pod holding two of its GPUs, for the exporter.
const EXPORTER_OBJECTS: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: pk-gt-exp-1
  labels: {kubernetes.io/hostname: pk-gt-exp-1, example.com/pk-gt-pool: exp}
status:
  capacity: {nvidia.com/gpu: "8", cpu: "64", memory: 512Gi, pods: "110"}
  allocatable: {nvidia.com/gpu: "8", cpu: "64", memory: 512Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: pk-gt-exp-trainer, namespace: default}
spec:
  nodeName: pk-gt-exp-1
  containers: [{name: c, image: trainer, resources: {limits: {nvidia.com/gpu: "2"}}}]
"#;

/// The exporter as examples/monitoring/exporter.yaml runs it: the example's ServiceAccount,
/// ClusterRole and binding applied to the real control plane, then `serve-metrics` with that
/// account's token in the in-cluster files (no kubeconfig). Its /metrics shows the node's
/// free GPUs, and a GPU freed by a deleted pod in a later scrape (the watches, not a new
/// list); /healthz answers 200.
#[test]
fn serve_metrics_runs_in_cluster_under_the_examples_rbac_and_follows_the_cluster() {
    let suite = "gpu-taint serve-metrics on the real control plane";
    let Some((kubectl, _)) = Kubectl::for_suite(suite) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/monitoring/exporter.yaml"
    ))
    .unwrap();
    // The ServiceMonitor needs the Prometheus Operator's CRD, which this cluster lacks.
    let applied: Vec<&str> = example
        .split("\n---\n")
        .filter(|d| !d.contains("kind: ServiceMonitor"))
        .collect();
    let rbac = home.path().join("exporter.yaml");
    std::fs::write(&rbac, applied.join("\n---\n")).unwrap();
    let rbac = rbac.display().to_string();
    kubectl.run(&["create", "namespace", "monitoring"]);
    kubectl.must(&["apply", "-f", &rbac]);
    let objects = home.path().join("objects.yaml");
    std::fs::write(&objects, EXPORTER_OBJECTS).unwrap();
    let objects = objects.display().to_string();
    kubectl.create_when_served(&objects, || kubectl.delete_now(&objects, true));
    kubectl.must(&[
        "patch",
        "pod",
        "pk-gt-exp-trainer",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running"}}"#,
    ]);
    let (env, token) = kubectl.in_cluster("monitoring", "placekit-exporter", home.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut exporter = Command::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
        .args(["serve-metrics", "--listen", &format!("127.0.0.1:{port}")])
        .env_remove("KUBECONFIG")
        .env("HOME", home.path())
        .envs(env.clone())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let free_of = |body: &str| -> Option<String> {
        body.lines()
            .find(|l| {
                l.starts_with("placekit_node_accelerator_free{")
                    && l.contains("node=\"pk-gt-exp-1\"")
                    && l.contains("resource=\"nvidia.com/gpu\"")
            })
            .and_then(|l| l.rsplit(' ').next())
            .map(str::to_string)
    };
    let poll = |want: &str| -> (Option<String>, String) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let mut last = (None, String::new());
        while std::time::Instant::now() < deadline {
            if let Some((200, body)) = placekit_testserver::http_get(port, "/metrics") {
                last = (free_of(&body), body);
                if last.0.as_deref() == Some(want) {
                    break;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        last
    };
    let before = poll("6");
    let health = placekit_testserver::http_get(port, "/healthz");
    kubectl.must(&[
        "delete",
        "pod",
        "pk-gt-exp-trainer",
        "--grace-period=0",
        "--force",
    ]);
    let after = poll("8");
    // The judge (affinity-lint serve-metrics) under the same account: the example's RBAC
    // lets it read what drift and why-pending read.
    let judged =
        placekit_testserver::harness::built_plugin(suite, "kubectl-affinity_lint").map(|lint| {
            let judge_port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut judge = Command::new(lint)
                .args([
                    "serve-metrics",
                    "-A",
                    "--listen",
                    &format!("127.0.0.1:{judge_port}"),
                ])
                .env_remove("KUBECONFIG")
                .env("HOME", home.path())
                .envs(env.clone())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            let mut answer = None;
            while std::time::Instant::now() < deadline && answer.is_none() {
                answer = placekit_testserver::http_get(judge_port, "/metrics");
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            let health = placekit_testserver::http_get(judge_port, "/healthz");
            let _ = judge.kill();
            let _ = judge.wait();
            (answer, health)
        });
    let _ = exporter.kill();
    let stderr = {
        use std::io::Read as _;
        let _ = exporter.wait();
        let mut text = String::new();
        let _ = exporter.stderr.take().unwrap().read_to_string(&mut text);
        text
    };
    kubectl.delete_now(&objects, false);

    assert_eq!(before.0.as_deref(), Some("6"), "{}\n{stderr}", before.1);
    assert!(before.1.ends_with("# EOF\n"), "{}", before.1);
    assert_eq!(health, Some((200, "ok\n".to_string())), "{stderr}");
    assert_eq!(after.0.as_deref(), Some("8"), "{}\n{stderr}", after.1);
    assert!(
        stderr.contains(&format!(
            "serving /metrics and /healthz on http://127.0.0.1:{port}"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(&token), "{stderr}");
    if let Some((answer, health)) = judged {
        let (code, body) = answer.expect("the judge answers");
        assert_eq!(code, 200);
        assert!(
            body.contains("placekit_drift_pods_checked ") && body.contains("placekit_read_up 1"),
            "{body}"
        );
        assert_eq!(health, Some((200, "ok\n".to_string())));
    }
}
