//! Labels as a GPU cluster's controllers use them, on the real control plane with the
//! projects' real CRDs (`../shared/crds`): the API server validates and prunes every object
//! below by its project's schema, so a field placekit read at the wrong path would be gone
//! and the test would fail. No controller runs: placekit predicts from the objects, which is
//! what an admin needs before the change.
//!
//! - a Kueue ResourceFlavor (its `nodeLabels` and its Topology's level labels, the
//!   ClusterQueue using it), a Volcano Queue's node groups, and the templates of a Trainer
//!   runtime (named with the TrainJob that uses it), a TrainJob's runtime patch, a Volcano
//!   Job, a Slinky NodeSet at 0 replicas, an LLMInferenceService and a DisaggregatedSet are
//!   dependents: removing what they select blocks, naming them;
//! - the GPU operator's labels: a new `nvidia.com/mig.config` under a GPU pod blocks (named,
//!   with the drain to run first) until `--ignore-gpu-pods`; a device-plugin config that is
//!   not a key of the ClusterPolicy's ConfigMap is refused with the valid ones;
//!   a valid one warns of what the node will advertise; operands switched off under a GPU
//!   pod block; a change blocked twice over says both at once, with one command carrying
//!   both overrides;
//! - Karpenter's own keys are refused on its nodes; a hand-set label there (or on a GKE
//!   node pool's node) warns that it is lost on replacement; a key nfd-master owns warns
//!   that it is re-applied.
//!
//! Every refusal leaves the node as it was.

use std::path::PathBuf;
use std::process::Command;

use placekit_testserver::crds::Kubectl;
use placekit_testserver::process::Bounded as _;

/// The CRDs these tests install.
const CRDS: &[&str] = &[
    "kueue.x-k8s.io_resourceflavors.yaml",
    "kueue.x-k8s.io_topologies.yaml",
    "kueue.x-k8s.io_clusterqueues.yaml",
    "scheduling.volcano.sh_queues.yaml",
    "nvidia.com_clusterpolicies.yaml",
    "trainer.kubeflow.org_trainingruntimes.yaml",
    "trainer.kubeflow.org_trainjobs.yaml",
    "batch.volcano.sh_jobs.yaml",
    "slinky.slurm.net_nodesets.yaml",
    "serving.kserve.io_llminferenceservices.minimal.yaml",
    "disaggregatedset.x-k8s.io_disaggregatedsets.yaml",
];

const GPU_NODE: &str = "pk-ctl-h100";
const KARPENTER_NODE: &str = "pk-ctl-karpenter";
const GKE_NODE: &str = "pk-ctl-gke";
const PRODUCT: &str = "nvidia.com/gpu.product";
/// A value no other suite's node has: the flavor below selects only this suite's node.
const PRODUCT_VALUE: &str = "PK-CTL-H100";
const BLOCK: &str = "example.com/topology-block";

/// The GPU operator's namespace, created once and never deleted: without the namespace
/// controller (no controller manager runs) a deleted namespace stays Terminating.
const OPERATOR_NAMESPACE: &str = "pk-ctl-operator";

const OBJECTS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: pk-ctl-device-plugin-config, namespace: pk-ctl-operator}
data:
  a100-x4: "version: v1\nsharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}\n"
  h100-x2: "version: v1\nsharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}\n"
---
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata: {name: pk-ctl-cluster-policy}
spec:
  daemonsets: {}
  dcgm: {}
  dcgmExporter: {}
  devicePlugin:
    config: {name: pk-ctl-device-plugin-config, default: h100-x2}
  driver: {}
  gfd: {}
  nodeStatusExporter: {}
  operator: {}
  toolkit: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: pk-ctl-topology}
spec:
  levels:
  - nodeLabel: example.com/topology-block
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: pk-ctl-h100}
spec:
  nodeLabels: {nvidia.com/gpu.product: PK-CTL-H100}
  topologyName: pk-ctl-topology
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: pk-ctl-team-a}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: pk-ctl-h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: pk-ctl-nlp}
spec:
  weight: 1
  affinity:
    nodeGroupAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [pk-ctl-group]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: pk-ctl-torch, namespace: default}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                nodeSelector: {nvidia.com/gpu.product: PK-CTL-H100}
                containers: [{name: node, image: pytorch/pytorch}]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: pk-ctl-train, namespace: default}
spec:
  runtimeRef: {name: pk-ctl-torch, kind: TrainingRuntime}
  runtimePatches:
  - manager: example.com/pk-ctl-launcher
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template:
              spec:
                template:
                  spec:
                    nodeSelector: {example.com/pk-ctl-rack: r1}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pk-ctl-volcano, namespace: default}
spec:
  queue: pk-ctl-nlp
  tasks:
  - name: worker
    replicas: 1
    template:
      spec:
        nodeSelector: {nvidia.com/gpu.product: PK-CTL-H100}
        containers: [{name: worker, image: pytorch/pytorch}]
---
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: pk-ctl-slurm, namespace: default}
spec:
  controllerRef: {name: slurm}
  replicas: 0
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: PK-CTL-H100}
---
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: pk-ctl-llm, namespace: default}
spec:
  model: {uri: "hf://meta-llama/Llama-3.1-8B-Instruct"}
  template:
    nodeSelector: {nvidia.com/gpu.product: PK-CTL-H100}
    containers: [{name: main, image: vllm/vllm-openai}]
---
apiVersion: disaggregatedset.x-k8s.io/v1
kind: DisaggregatedSet
metadata: {name: pk-ctl-disaggregated, namespace: default}
spec:
  roles:
  - name: prefill
    spec:
      leaderWorkerTemplate:
        workerTemplate:
          spec:
            nodeSelector: {nvidia.com/gpu.product: PK-CTL-H100}
            containers: [{name: worker, image: vllm/vllm-openai}]
  - name: decode
    spec:
      leaderWorkerTemplate:
        workerTemplate:
          spec:
            containers: [{name: worker, image: vllm/vllm-openai}]
---
apiVersion: v1
kind: Node
metadata:
  name: pk-ctl-h100
  labels:
    kubernetes.io/hostname: pk-ctl-h100
    nvidia.com/gpu.product: PK-CTL-H100
    example.com/topology-block: b1
    volcano.sh/nodegroup-name: pk-ctl-group
    nvidia.com/mig.config: all-disabled
    example.com/pk-ctl-rack: r1
  annotations:
    nfd.node.kubernetes.io/feature-labels: pci-10de.present
status:
  capacity: {nvidia.com/gpu: "8", pods: "110", cpu: "64"}
  allocatable: {nvidia.com/gpu: "8", pods: "110", cpu: "64"}
---
apiVersion: v1
kind: Node
metadata:
  name: pk-ctl-karpenter
  labels:
    kubernetes.io/hostname: pk-ctl-karpenter
    karpenter.sh/nodepool: gpu-spot
---
apiVersion: v1
kind: Node
metadata:
  name: pk-ctl-gke
  labels:
    kubernetes.io/hostname: pk-ctl-gke
    cloud.google.com/gke-nodepool: pk-ctl-a3-pool
---
apiVersion: v1
kind: Pod
metadata: {name: pk-ctl-trainer, namespace: default}
spec:
  nodeName: pk-ctl-h100
  containers:
  - name: train
    image: pytorch/pytorch
    resources: {limits: {nvidia.com/gpu: "1"}}
"#;

struct Cluster {
    kubectl: Kubectl,
    home: tempfile::TempDir,
    objects: PathBuf,
}

impl Cluster {
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        self.kubectl.run(args)
    }

    fn must(&self, args: &[&str]) -> String {
        self.kubectl.must(args)
    }

    fn nodelabel(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
            .args(args)
            .env("KUBECONFIG", self.kubectl.kubeconfig())
            .env("HOME", self.home.path())
            .env("NO_COLOR", "1")
            .env("PLACEKIT_STATE_DIR", self.home.path().join("state"))
            .bounded_output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn label(&self, node: &str, key: &str) -> String {
        let path = format!("jsonpath={{.metadata.labels.{}}}", key.replace('.', "\\."));
        self.must(&["get", "node", node, "-o", &path])
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kubectl
            .delete_now(&self.objects.display().to_string(), false);
    }
}

/// The real control plane with the CRDs and the objects above, or `None` when the suite
/// does not run here (a failure in CI, where the control plane and CRDs are required).
fn cluster(suite: &str) -> Option<Cluster> {
    let (kubectl, crds) = Kubectl::for_suite(suite)?;
    let home = tempfile::tempdir().unwrap();
    let objects = home.path().join("objects.yaml");
    std::fs::write(&objects, OBJECTS).unwrap();
    let cluster = Cluster {
        kubectl,
        home,
        objects,
    };
    cluster.kubectl.install_crds(&crds, CRDS);
    let objects = cluster.objects.display().to_string();
    cluster.kubectl.delete_now(&objects, true);
    if !cluster.run(&["get", "namespace", OPERATOR_NAMESPACE]).0 {
        cluster.must(&["create", "namespace", OPERATOR_NAMESPACE]);
    }
    cluster
        .kubectl
        .create_when_served(&objects, || cluster.kubectl.delete_now(&objects, true));
    Some(cluster)
}

#[test]
fn controllers_of_a_gpu_cluster_on_the_real_control_plane() {
    let Some(cluster) = cluster("label controllers on the real control plane") else {
        return;
    };

    // Who wrote each label and who owns it: nfd-master's label written under its own field
    // manager, as nfd-master's client sends it (the node's annotation already lists it).
    cluster.must(&[
        "label",
        "node",
        GPU_NODE,
        "feature.node.kubernetes.io/pci-10de.present=true",
        "--overwrite",
        "--field-manager=nfd-master",
    ]);
    // cluster-autoscaler's deletion mark, written under its own field manager.
    cluster.must(&[
        "taint",
        "node",
        GPU_NODE,
        "ToBeDeletedByClusterAutoscaler=1733500000:NoSchedule",
        "--overwrite",
        "--field-manager=cluster-autoscaler",
    ]);
    let (code, out, err) = cluster.nodelabel(&["show", GPU_NODE, KARPENTER_NODE, "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = |node: &str, key: &str| {
        shown["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["node"] == node && r["key"] == key)
            .unwrap_or_else(|| panic!("no {node} {key} in {out}"))
            .clone()
    };
    let nfd = row(GPU_NODE, "feature.node.kubernetes.io/pci-10de.present");
    assert_eq!(nfd["managers"], serde_json::json!(["nfd-master"]), "{out}");
    assert_eq!(nfd["owner"], "nfd-master", "{out}");
    let mig = row(GPU_NODE, "nvidia.com/mig.config");
    assert!(
        mig["note"].as_str().unwrap().contains("repartitions"),
        "{out}"
    );
    assert_eq!(row(GPU_NODE, "kubernetes.io/hostname")["owner"], "kubelet");
    // The taint with the writer of the taint list and its owner.
    let taint = shown["taints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["node"] == GPU_NODE
                && t["taint"] == "ToBeDeletedByClusterAutoscaler=1733500000:NoSchedule"
        })
        .unwrap_or_else(|| panic!("no taint row in {out}"))
        .clone();
    assert_eq!(
        taint["managers"],
        serde_json::json!(["cluster-autoscaler"]),
        "{out}"
    );
    assert_eq!(taint["owner"], "cluster-autoscaler", "{out}");
    assert!(
        taint["note"]
            .as_str()
            .unwrap()
            .contains("a node it is about to delete"),
        "{out}"
    );
    cluster.must(&["taint", "node", GPU_NODE, "ToBeDeletedByClusterAutoscaler-"]);
    assert_eq!(
        row(KARPENTER_NODE, "karpenter.sh/nodepool")["owner"],
        "Karpenter (NodePool gpu-spot)"
    );
    // `-o name`: each node once, as kubectl names it.
    let (code, out, err) = cluster.nodelabel(&["show", GPU_NODE, KARPENTER_NODE, "-o", "name"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("node/{GPU_NODE}\nnode/{KARPENTER_NODE}\n"));
    let (code, out, err) = cluster.nodelabel(&["show", GPU_NODE]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().any(
            |l| l.contains("feature.node.kubernetes.io/pci-10de.present")
                && l.contains("nfd-master")
        ),
        "{out}"
    );

    // Who depends on the product label: the flavor (with its ClusterQueue) and the runtime,
    // although no pod selects it.
    let (code, out, err) = cluster.nodelabel(&["dependents", PRODUCT, "-A", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let items = report["items"].as_array().unwrap();
    let flavor = items
        .iter()
        .find(|d| d["kind"] == "ResourceFlavor" && d["name"] == "pk-ctl-h100")
        .unwrap_or_else(|| panic!("no flavor in {out}"));
    assert_eq!(
        flavor["usedBy"],
        serde_json::json!(["ClusterQueue pk-ctl-team-a"])
    );
    let runtime = items
        .iter()
        .find(|d| d["kind"] == "TrainingRuntime" && d["name"] == "pk-ctl-torch")
        .unwrap_or_else(|| panic!("no runtime in {out}"));
    assert_eq!(
        runtime["usedBy"],
        serde_json::json!(["TrainJob default/pk-ctl-train"])
    );
    // Each template read at the path its CRD's schema gives (a wrong path would have been
    // pruned by the API server, and the object would not be listed).
    for (kind, name) in [
        ("TrainingRuntime", "pk-ctl-torch"),
        ("Job", "pk-ctl-volcano"),
        ("NodeSet", "pk-ctl-slurm"),
        ("LLMInferenceService", "pk-ctl-llm"),
        ("DisaggregatedSet", "pk-ctl-disaggregated"),
    ] {
        assert!(
            items.iter().any(|d| d["kind"] == kind && d["name"] == name),
            "no {kind} {name} in {out}"
        );
    }

    // Removing what the flavor selects (its node label, a Topology level) blocks.
    for key in [PRODUCT, BLOCK] {
        let (code, _, err) = cluster.nodelabel(&["remove", GPU_NODE, &format!("{key}-"), "--yes"]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("ResourceFlavor pk-ctl-h100 (used by ClusterQueue pk-ctl-team-a)")
                && err.contains("Kueue would no longer place"),
            "{err}"
        );
        assert!(err.contains("--ignore-dependents"), "{err}");
        assert!(
            !cluster.label(GPU_NODE, key).is_empty(),
            "{key} was removed"
        );
    }
    assert_eq!(cluster.label(GPU_NODE, PRODUCT), PRODUCT_VALUE);
    // What a TrainJob's runtime patch adds to its runtime's template.
    let (code, _, err) =
        cluster.nodelabel(&["remove", GPU_NODE, "example.com/pk-ctl-rack-", "--yes"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("TrainJob default/pk-ctl-train"), "{err}");
    assert_eq!(cluster.label(GPU_NODE, "example.com/pk-ctl-rack"), "r1");
    // A Volcano Queue's node group.
    let (code, _, err) = cluster.nodelabel(&[
        "set",
        GPU_NODE,
        "volcano.sh/nodegroup-name=other",
        "--overwrite",
        "--yes",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("Queue pk-ctl-nlp") && err.contains("Volcano would no longer place"),
        "{err}"
    );
    assert_eq!(
        cluster.label(GPU_NODE, "volcano.sh/nodegroup-name"),
        "pk-ctl-group"
    );

    // A new MIG config under a GPU pod: blocked, the pod named, the drain to run first.
    let mig = [
        "set",
        GPU_NODE,
        "nvidia.com/mig.config=all-1g.10gb",
        "--overwrite",
        "--yes",
    ];
    let (code, _, err) = cluster.nodelabel(&mig);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("default/pk-ctl-trainer")
            && err.contains("repartition")
            && err.contains(&format!("kubectl drain {GPU_NODE}"))
            && err.contains("--ignore-gpu-pods"),
        "{err}"
    );
    assert_eq!(
        cluster.label(GPU_NODE, "nvidia.com/mig.config"),
        "all-disabled"
    );
    let mut overridden = mig.to_vec();
    overridden.push("--ignore-gpu-pods");
    let (code, _, err) = cluster.nodelabel(&overridden);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("--ignore-gpu-pods given"), "{err}");
    assert_eq!(
        cluster.label(GPU_NODE, "nvidia.com/mig.config"),
        "all-1g.10gb"
    );

    // A device-plugin config the ClusterPolicy's ConfigMap does not have is refused.
    let (code, _, err) = cluster.nodelabel(&[
        "set",
        GPU_NODE,
        "nvidia.com/device-plugin.config=h100-x8",
        "--yes",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("{OPERATOR_NAMESPACE}/pk-ctl-device-plugin-config"))
            && err.contains("valid: a100-x4, h100-x2"),
        "{err}"
    );
    assert_eq!(
        cluster.label(GPU_NODE, "nvidia.com/device-plugin.config"),
        ""
    );

    // A valid one: made, with a warning of what the node will advertise.
    let (code, _, err) = cluster.nodelabel(&[
        "set",
        GPU_NODE,
        "nvidia.com/device-plugin.config=a100-x4",
        "--yes",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("the device plugin would restart with config \"a100-x4\""),
        "{err}"
    );
    assert_eq!(
        cluster.label(GPU_NODE, "nvidia.com/device-plugin.config"),
        "a100-x4"
    );

    // The GPU operator's operands switched off under a GPU pod: blocked like a MIG change.
    let (code, _, err) = cluster.nodelabel(&[
        "set",
        GPU_NODE,
        "nvidia.com/gpu.deploy.operands=false",
        "--yes",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("default/pk-ctl-trainer")
            && err.contains("take every operand off the node")
            && err.contains("--ignore-gpu-pods"),
        "{err}"
    );
    assert_eq!(
        cluster.label(GPU_NODE, "nvidia.com/gpu.deploy.operands"),
        ""
    );

    // Blocked twice over (a flavor's label removed, a MIG change under a GPU pod): both
    // said at once, and the one command to run carries both overrides.
    let (code, _, err) = cluster.nodelabel(&[
        "set",
        GPU_NODE,
        "nvidia.com/mig.config=all-2g.20gb",
        &format!("{PRODUCT}-"),
        "--overwrite",
        "--yes",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("ResourceFlavor pk-ctl-h100") && err.contains("default/pk-ctl-trainer"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.contains("--ignore-dependents") && l.contains("--ignore-gpu-pods")),
        "{err}"
    );
    assert_eq!(cluster.label(GPU_NODE, PRODUCT), PRODUCT_VALUE);
    assert_eq!(
        cluster.label(GPU_NODE, "nvidia.com/mig.config"),
        "all-1g.10gb"
    );

    // nfd-master's own key: a warning that it comes back, and the change is made.
    let (code, _, err) = cluster.nodelabel(&[
        "set",
        GPU_NODE,
        "feature.node.kubernetes.io/pci-10de.present=false",
        "--overwrite",
        "--yes",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("nfd-master owns it"), "{err}");

    // `import` leaves a key nfd-master owns (it would re-apply its own value) and imports
    // the rest.
    let features = cluster.home.path().join("features");
    std::fs::write(&features, "pci-10de.present=true\ngpu-extra=1\n").unwrap();
    let features = features.display().to_string();
    let (code, _, err) = cluster.nodelabel(&[
        "import",
        "--file",
        &features,
        GPU_NODE,
        "--overwrite",
        "--yes",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("owned by nfd-master"), "{err}");
    assert_eq!(
        cluster.label(GPU_NODE, "feature.node.kubernetes.io/pci-10de.present"),
        "false",
        "import fought nfd-master"
    );
    assert_eq!(
        cluster.label(GPU_NODE, "feature.node.kubernetes.io/gpu-extra"),
        "1"
    );

    // Karpenter: its own key refused; a hand-set label warned as lost on replacement.
    let (code, _, err) = cluster.nodelabel(&[
        "set",
        KARPENTER_NODE,
        "karpenter.sh/capacity-type=spot",
        "--yes",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Karpenter's own label"), "{err}");
    assert_eq!(
        cluster.label(KARPENTER_NODE, "karpenter.sh/capacity-type"),
        ""
    );
    let (code, _, err) = cluster.nodelabel(&["set", KARPENTER_NODE, "team=infra", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("NodePool gpu-spot") && err.contains("spec.template.metadata.labels"),
        "{err}"
    );
    assert_eq!(cluster.label(KARPENTER_NODE, "team"), "infra");

    // A GKE node pool's node: the same warning, naming the pool and where to set it.
    let (code, _, err) = cluster.nodelabel(&["set", GKE_NODE, "team=infra", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("GKE node pool pk-ctl-a3-pool") && err.contains("--node-labels"),
        "{err}"
    );
    assert_eq!(cluster.label(GKE_NODE, "team"), "infra");
}
