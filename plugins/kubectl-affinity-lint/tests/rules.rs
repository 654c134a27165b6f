//! Every rule through the installed binary's JSON output: for each, a case that must be
//! flagged and a close case that must not. Run as `kubectl affinity-lint` through kubectl's
//! plugin lookup where kubectl is present.

use std::path::{Path, PathBuf};
use std::process::Command;

use placekit_testserver::process::Bounded as _;
use serde_json::Value;

struct Linter {
    dir: tempfile::TempDir,
    kubectl: bool,
}

impl Linter {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            env!("CARGO_BIN_EXE_kubectl-affinity_lint"),
            bin.join("kubectl-affinity_lint"),
        )
        .unwrap();
        #[cfg(not(unix))]
        std::fs::copy(
            env!("CARGO_BIN_EXE_kubectl-affinity_lint"),
            bin.join("kubectl-affinity_lint"),
        )
        .unwrap();
        let kubectl = placekit_testserver::require::kubectl(
            "the rule tests through `kubectl affinity-lint` (kubectl-affinity_lint runs directly instead)",
        );
        Linter { dir, kubectl }
    }

    fn write(&self, name: &str, yaml: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, yaml).unwrap();
        path
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let bin = self.dir.path().join("bin");
        let mut cmd = if self.kubectl {
            let mut c = Command::new("kubectl");
            c.arg("affinity-lint");
            c
        } else {
            Command::new(bin.join("kubectl-affinity_lint"))
        };
        let out = cmd
            .args(args)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("NO_COLOR", "1")
            .current_dir(self.dir.path())
            .bounded_output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    /// Lints YAML and returns (exit code, findings as (rule, line)).
    fn lint(&self, yaml: &str) -> (i32, Vec<(String, usize)>, Value) {
        let path = self.write("input.yaml", yaml);
        let (code, stdout, stderr) = self.run(&[
            "-f",
            path.to_str().unwrap(),
            "-o",
            "json",
            "--fail-on",
            "info",
        ]);
        let json: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout} {stderr}"));
        let findings = json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["rule"].as_str().unwrap().to_string(),
                    f["line"].as_u64().unwrap() as usize,
                )
            })
            .collect();
        (code, findings, json)
    }
}

fn rules_of(findings: &[(String, usize)]) -> Vec<&str> {
    findings.iter().map(|(r, _)| r.as_str()).collect()
}

fn deployment(pod_spec: &str) -> String {
    let indented: String = pod_spec.lines().map(|l| format!("      {l}\n")).collect();
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: ml\nspec:\n  replicas: 2\n  strategy: {{type: Recreate}}\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata:\n      labels: {{app: d}}\n    spec:\n{indented}"
    )
}

const CONTAINER: &str = "containers: [{name: c, image: x}]\n";

fn required(terms: &str) -> String {
    deployment(&format!(
        "{CONTAINER}affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n{terms}"
    ))
}

#[test]
fn runbook_deployment_is_clean_and_its_split_form_is_al001_at_node_selector_terms() {
    let l = Linter::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let clean = root.join("llm-inference.yaml");
    let (code, out, _) = l.run(&["-f", clean.to_str().unwrap(), "-o", "json"]);
    assert_eq!(code, 0, "{out}");
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["findings"], serde_json::json!([]));
    assert_eq!(json["version"], "placekit.dev/affinity-lint/v1");

    let split = root.join("llm-inference-split-terms.yaml");
    let (code, out, _) = l.run(&["-f", split.to_str().unwrap(), "-o", "json"]);
    assert_eq!(code, 1);
    let json: Value = serde_json::from_str(&out).unwrap();
    let f = &json["findings"][0];
    assert_eq!(f["rule"], "AL001");
    assert_eq!(f["severity"], "error");
    let text = std::fs::read_to_string(&split).unwrap();
    let expected_line = text
        .lines()
        .position(|l| l.trim() == "nodeSelectorTerms:")
        .unwrap()
        + 1;
    assert_eq!(f["line"], expected_line);
    assert_eq!(f["column"], 13);
    assert_eq!(
        f["object"],
        serde_json::json!({"kind": "Deployment", "namespace": "ml", "name": "llm-inference"})
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(fix.starts_with("nodeSelectorTerms:\n- matchExpressions:\n  - key: ops.example.com.node-restriction.kubernetes.io/llm-pool"), "{fix}");
    assert_eq!(
        fix.matches("- key:").count(),
        3,
        "the merged term holds all three expressions"
    );
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("OR (accelerator.example.com/gpu-family In [a100]) OR")
    );
}

#[test]
fn al001_deliberate_or_over_the_same_keys_is_not_flagged() {
    let l = Linter::new();
    let or = required(
        "      - matchExpressions: [{key: family, operator: In, values: [a100]}, {key: mem, operator: In, values: [80gb]}]\n      - matchExpressions: [{key: family, operator: In, values: [h100]}, {key: mem, operator: In, values: [80gb]}]\n",
    );
    let (code, f, _) = l.lint(&or);
    assert_eq!((code, rules_of(&f)), (0, vec![]));
    let split = required(
        "      - matchExpressions: [{key: family, operator: In, values: [a100]}]\n      - matchExpressions: [{key: mem, operator: In, values: [80gb]}]\n",
    );
    assert_eq!(rules_of(&l.lint(&split).1), vec!["AL001"]);
}

/// One fact from two label sources (GPU Feature Discovery on any cluster, GKE's own label on
/// GKE) is an OR of sources: meant. Two different facts stay AL001, whatever their sources.
#[test]
fn al001_one_property_from_two_label_sources_is_not_flagged() {
    let l = Linter::new();
    let sources = required(
        "      # GFD clusters\n      - matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}]\n      # GKE managed GPU nodes\n      - matchExpressions: [{key: cloud.google.com/gke-accelerator, operator: In, values: [nvidia-h100-80gb]}]\n",
    );
    let (code, f, _) = l.lint(&sources);
    assert_eq!((code, rules_of(&f)), (0, vec![]));
    let karpenter = required(
        "      - matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-A100-SXM4-80GB]}, {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]\n      - matchExpressions: [{key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [a100]}, {key: topology.ebs.csi.aws.com/zone, operator: In, values: [us-east-1a]}]\n",
    );
    let (code, f, _) = l.lint(&karpenter);
    assert_eq!((code, rules_of(&f)), (0, vec![]));
    // GPU model OR zone: two properties, not two sources of one.
    let split = required(
        "      - matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}]\n      - matchExpressions: [{key: topology.gke.io/zone, operator: In, values: [us-central1-a]}]\n",
    );
    assert_eq!(rules_of(&l.lint(&split).1), vec!["AL001"]);
    // The admission policy counts keys as the linter does.
    let (code, policy, _) = l.run(&["policy"]);
    assert_eq!(code, 0);
    assert!(
        policy.contains("'cloud.google.com/gke-accelerator': 'nvidia.com/gpu.product'"),
        "{policy}"
    );
}

/// A required anti-affinity term over a label no pod of a 2-replica Deployment carries,
/// though it names the workload: both replicas may share a node. A term about another
/// application's pods, or a single replica, is left alone.
#[test]
fn al008_anti_affinity_over_labels_the_replicas_do_not_carry() {
    let l = Linter::new();
    let deployment = |name: &str, replicas: u32, selector: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: kube-system}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector:\n              matchExpressions:\n              - {selector}\n            topologyKey: kubernetes.io/hostname\n      containers: [{{name: c, image: x}}]\n"
        )
    };
    let hcloud = deployment(
        "hcloud-csi-controller",
        2,
        "{key: csi-hcloud, operator: In, values: [controller]}",
    );
    let (code, f, json) = l.lint(&hcloud);
    assert_eq!((code, rules_of(&f)), (1, vec!["AL008"]), "{json}");
    let message = json["findings"][0]["message"].as_str().unwrap();
    assert!(message.contains("app=hcloud-csi-controller"), "{message}");
    assert!(message.contains("its 2 replicas"), "{message}");
    // One replica: nothing to keep apart.
    let single = deployment(
        "hcloud-csi-controller",
        1,
        "{key: csi-hcloud, operator: In, values: [controller]}",
    );
    assert_eq!(l.lint(&single).0, 0);
    // Another application's pods: deliberate.
    let router = deployment("router", 3, "{key: component, operator: In, values: [db]}");
    assert_eq!(l.lint(&router).0, 0);
}

/// A held-out public StatefulSet (a kustomize base whose kustomization adds `app`): one
/// replica has nothing to keep apart, and in a kustomization's directory the template may
/// gain labels, so a selector key the template lacks is not judged. Two replicas of the file
/// on its own are still flagged.
#[test]
fn al008_leaves_single_replicas_and_kustomize_bases_alone() {
    let l = Linter::new();
    let statefulset = |replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: ais-proxy}}\nspec:\n  replicas: {replicas}\n  serviceName: ais-proxy\n  selector: {{matchLabels: {{type: proxy}}}}\n  template:\n    metadata:\n      labels: {{type: proxy}}\n    spec:\n      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector:\n              matchExpressions:\n              - {{key: app, operator: In, values: [ais]}}\n              - {{key: type, operator: In, values: [proxy]}}\n            topologyKey: kubernetes.io/hostname\n      containers: [{{name: c, image: x}}]\n"
        )
    };
    assert_eq!(l.lint(&statefulset(1)).0, 0);
    assert_eq!(rules_of(&l.lint(&statefulset(3)).1), vec!["AL008"]);
    // The same file in a kustomize base.
    l.write(
        "kustomization.yaml",
        "resources: [input.yaml]\nlabels:\n- pairs: {app: ais}\n  includeSelectors: true\n",
    );
    assert_eq!(l.lint(&statefulset(3)).0, 0);
}

/// The job-name label of a Kubeflow job is the job's own name: a worker anti-affinity copied
/// from another job selects that job's pods, and the two workers may share a node.
#[test]
fn al008_a_training_job_selecting_another_jobs_name() {
    let l = Linter::new();
    let mpijob = |name: &str, selected: &str| {
        format!(
            "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {{name: {name}}}\nspec:\n  mpiReplicaSpecs:\n    Launcher:\n      replicas: 1\n      template:\n        spec:\n          containers: [{{name: l, image: x}}]\n    Worker:\n      replicas: 2\n      template:\n        spec:\n          affinity:\n            podAntiAffinity:\n              requiredDuringSchedulingIgnoredDuringExecution:\n              - labelSelector:\n                  matchLabels:\n                    training.kubeflow.org/job-name: {selected}\n                    training.kubeflow.org/replica-type: worker\n                topologyKey: kubernetes.io/hostname\n          containers: [{{name: w, image: x, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]\n"
        )
    };
    let (code, f, json) = l.lint(&mpijob("nccl-tests-h100", "nccl-all-reduce"));
    assert_eq!((code, rules_of(&f)), (1, vec!["AL008"]), "{json}");
    let message = json["findings"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("training.kubeflow.org/job-name=nccl-all-reduce")
            && message.contains("MPIJob's pods training.kubeflow.org/job-name=nccl-tests-h100"),
        "{message}"
    );
    assert_eq!(l.lint(&mpijob("nccl-all-reduce", "nccl-all-reduce")).0, 0);
    // Keeping away from an unrelated job by name is left alone.
    assert_eq!(l.lint(&mpijob("resnet-train", "nccl-all-reduce")).0, 0);
}

/// Misses of the held-out corpus: tolerations of retired or misspelled taint keys (AL016), a
/// GPU written without a value (AL007), a budget without a selector (AL011).
#[test]
fn tolerations_of_retired_keys_empty_gpu_quantities_and_selectorless_budgets() {
    let l = Linter::new();
    let tolerating =
        |tolerations: &str| deployment(&format!("{CONTAINER}tolerations:\n{tolerations}"));
    let retired = tolerating(
        "- {key: node.alpha.kubernetes.io/notReady, operator: Exists, effect: NoExecute, tolerationSeconds: 30}\n- {key: node.alpha.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 30}\n",
    );
    let (code, f, json) = l.lint(&retired);
    assert_eq!((code, rules_of(&f)), (1, vec!["AL016", "AL016"]), "{json}");
    assert!(
        json["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("nodes are tainted node.kubernetes.io/not-ready")
    );
    // Old and new keys side by side serve old and new clusters.
    let both = tolerating(
        "- {key: node.alpha.kubernetes.io/notReady, operator: Exists, effect: NoExecute}\n- {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute}\n",
    );
    assert_eq!(l.lint(&both).0, 0);
    let typo = tolerating("- {key: nvidia/gpu, operator: Exists, effect: NoSchedule}\n");
    assert_eq!(rules_of(&l.lint(&typo).1), vec!["AL016"]);

    let empty_gpu = deployment(
        "containers:\n- name: w\n  image: x\n  resources:\n    requests: {nvidia.com/gpu: }\n    limits: {nvidia.com/gpu: }\n",
    );
    let (code, f, json) = l.lint(&empty_gpu);
    assert_eq!((code, rules_of(&f)), (1, vec!["AL007", "AL007"]), "{json}");
    assert!(
        json["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("without a value")
    );

    let pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: vllm-pdb}\nspec:\n  maxUnavailable: 1\n";
    let (code, f, _) = l.lint(pdb);
    assert_eq!((code, rules_of(&f)), (1, vec!["AL011"]));
    let selecting = format!("{pdb}  selector: {{matchLabels: {{app: vllm}}}}\n");
    assert_eq!(l.lint(&selecting).0, 0);
    // An overlay's patch that opens the budget up (held-out: Knative's PDB patches).
    let patch = pdb.replace("maxUnavailable: 1", "minAvailable: 0");
    assert_eq!(l.lint(&patch).0, 0);
}

#[test]
fn al002_a_term_omitting_a_shared_key() {
    let l = Linter::new();
    let bad = required(
        "      - matchExpressions: [{key: family, operator: In, values: [a100]}, {key: mem, operator: In, values: [80gb]}]\n      - matchExpressions: [{key: family, operator: In, values: [h100]}]\n",
    );
    let (_, f, _) = l.lint(&bad);
    assert_eq!(rules_of(&f), vec!["AL002"]);
    let good = required(
        "      - matchExpressions: [{key: family, operator: In, values: [a100, h100]}, {key: mem, operator: In, values: [80gb]}]\n",
    );
    assert!(l.lint(&good).1.is_empty());
}

#[test]
fn al003_empty_terms() {
    let l = Linter::new();
    let (_, f, _) = l.lint(&required("      - matchExpressions: []\n"));
    assert_eq!(rules_of(&f), vec!["AL003"]);
    let (_, f, _) = l.lint(&required(
        "      - matchFields: [{key: metadata.name, operator: In, values: [gpu-1]}]\n",
    ));
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn al004_requirements_the_api_server_rejects() {
    let l = Linter::new();
    for bad in [
        "{key: mem, operator: Gt, values: [80gb]}",
        "{key: pool, operator: In}",
        "{key: pool, operator: Exists, values: [x]}",
        "{key: pool, operator: Like, values: [x]}",
        "{key: 'bad key', operator: In, values: [x]}",
    ] {
        let (_, f, _) = l.lint(&required(&format!("      - matchExpressions: [{bad}]\n")));
        assert!(rules_of(&f).contains(&"AL004"), "{bad}: {f:?}");
    }
    let (_, f, _) = l.lint(&required(
        "      - matchExpressions: [{key: mem, operator: Gt, values: ['79']}]\n",
    ));
    assert!(f.is_empty(), "{f:?}");
    let (_, f, _) = l.lint(&required(
        "      - matchFields: [{key: metadata.labels, operator: In, values: [x]}]\n",
    ));
    assert_eq!(rules_of(&f), vec!["AL004"]);
}

#[test]
fn al005_unsatisfiable_terms_and_node_selectors() {
    let l = Linter::new();
    let (_, f, _) = l.lint(&required("      - matchExpressions: [{key: family, operator: In, values: [a100]}, {key: family, operator: In, values: [h100]}]\n"));
    assert_eq!(rules_of(&f), vec!["AL005"]);
    let (_, f, _) = l.lint(&required("      - matchExpressions: [{key: family, operator: In, values: [a100, h100]}, {key: family, operator: NotIn, values: [h100]}]\n"));
    assert!(f.is_empty(), "{f:?}");
    let with_selector = deployment(&format!(
        "{CONTAINER}nodeSelector: {{family: h100}}\naffinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{{key: family, operator: In, values: [a100]}}]\n"
    ));
    assert_eq!(rules_of(&l.lint(&with_selector).1), vec!["AL005"]);
    let compatible = with_selector.replace("family: h100", "family: a100");
    assert!(l.lint(&compatible).1.is_empty());
}

#[test]
fn al006_weights() {
    let l = Linter::new();
    let pref = |w: &str| {
        deployment(&format!(
            "{CONTAINER}affinity:\n  nodeAffinity:\n    preferredDuringSchedulingIgnoredDuringExecution:\n    - weight: {w}\n      preference: {{matchExpressions: [{{key: zone, operator: In, values: [a]}}]}}\n"
        ))
    };
    assert_eq!(rules_of(&l.lint(&pref("0")).1), vec!["AL006"]);
    assert_eq!(rules_of(&l.lint(&pref("101")).1), vec!["AL006"]);
    assert!(l.lint(&pref("100")).1.is_empty());
}

#[test]
fn al007_extended_resources_need_equal_limits() {
    let l = Linter::new();
    let res = |r: &str| {
        deployment(&format!(
            "containers:\n- name: c\n  image: x\n  resources: {r}\n"
        ))
    };
    assert_eq!(
        rules_of(&l.lint(&res("{requests: {nvidia.com/gpu: '1'}}")).1),
        vec!["AL007"]
    );
    assert_eq!(
        rules_of(
            &l.lint(&res(
                "{requests: {nvidia.com/gpu: '2'}, limits: {nvidia.com/gpu: '1'}}"
            ))
            .1
        ),
        vec!["AL007"]
    );
    assert!(
        l.lint(&res(
            "{requests: {nvidia.com/gpu: '1', cpu: '2'}, limits: {nvidia.com/gpu: '1'}}"
        ))
        .1
        .is_empty()
    );
    assert!(
        l.lint(&res("{requests: {cpu: '2'}}")).1.is_empty(),
        "cpu is not an extended resource"
    );
}

#[test]
fn al008_spread_selectors_must_select_the_replicas() {
    let l = Linter::new();
    let spread = |sel: &str, when: &str| {
        deployment(&format!(
            "{CONTAINER}topologySpreadConstraints:\n- {{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: {when}, labelSelector: {{matchLabels: {{app: {sel}}}}}}}\n"
        ))
    };
    let (_, f, json) = l.lint(&spread("other", "DoNotSchedule"));
    assert_eq!(rules_of(&f), vec!["AL008"]);
    assert_eq!(json["findings"][0]["severity"], "error");
    let (_, _, json) = l.lint(&spread("other", "ScheduleAnyway"));
    assert_eq!(json["findings"][0]["severity"], "warning");
    assert!(l.lint(&spread("d", "DoNotSchedule")).1.is_empty());
    let min_domains = deployment(&format!(
        "{CONTAINER}topologySpreadConstraints:\n- {{maxSkew: 1, minDomains: 3, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {{matchLabels: {{app: d}}}}}}\n"
    ));
    assert_eq!(rules_of(&l.lint(&min_domains).1), vec!["AL008"]);
    // A DaemonSet's pod is bound to its one node: no spread constraint can spread it, so
    // a selector for other pods (or none) is no finding; invalid fields still are.
    let daemonset = |constraint: &str| {
        deployment(&format!(
            "{CONTAINER}topologySpreadConstraints:\n- {constraint}\n"
        ))
        .replace("kind: Deployment", "kind: DaemonSet")
        .replace("  replicas: 2\n  strategy: {type: Recreate}\n", "")
    };
    for constraint in [
        "{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: other}}}",
        "{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}",
    ] {
        let (_, f, json) = l.lint(&daemonset(constraint));
        assert!(f.is_empty(), "{constraint}: {json:#}");
    }
    let (_, f, _) = l.lint(&daemonset(
        "{maxSkew: 1, minDomains: 2, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: d}}}",
    ));
    assert_eq!(rules_of(&f), vec!["AL008"]);
}

#[test]
fn al009_preferences_that_can_never_hold() {
    let l = Linter::new();
    let doc = |pref: &str| {
        deployment(&format!(
            "{CONTAINER}affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{{key: family, operator: In, values: [a100]}}]\n    preferredDuringSchedulingIgnoredDuringExecution:\n    - weight: 50\n      preference: {{matchExpressions: [{{key: family, operator: In, values: [{pref}]}}]}}\n"
        ))
    };
    assert_eq!(rules_of(&l.lint(&doc("h100")).1), vec!["AL009"]);
    assert!(l.lint(&doc("a100")).1.is_empty());
}

#[test]
fn al010_gpu_rollouts() {
    let l = Linter::new();
    let gpu = "containers:\n- name: c\n  image: x\n  resources: {requests: {nvidia.com/gpu: '1'}, limits: {nvidia.com/gpu: '1'}}\n";
    let with_strategy = |s: &str| deployment(gpu).replace("strategy: {type: Recreate}", s);
    // Offline, a surge alone is not a finding: free GPUs are a fact of the cluster.
    assert!(
        l.lint(&with_strategy("strategy: {type: RollingUpdate}"))
            .1
            .is_empty()
    );
    let (_, _, json) = l.lint(&with_strategy(
        "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}",
    ));
    assert_eq!(json["findings"][0]["severity"], "error");
    assert!(
        l.lint(&with_strategy(
            "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}"
        ))
        .1
        .is_empty()
    );
    assert!(
        l.lint(&deployment(CONTAINER).replace(
            "strategy: {type: Recreate}",
            "strategy: {type: RollingUpdate}"
        ))
        .1
        .is_empty(),
        "no GPU"
    );
    let (_, f, _) = l.lint(&deployment(CONTAINER).replace(
        "strategy: {type: Recreate}",
        "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}",
    ));
    assert_eq!(
        rules_of(&f),
        vec!["AL010"],
        "both 0 is refused with or without GPUs"
    );
}

#[test]
fn al011_pdbs_that_block_drains() {
    let l = Linter::new();
    let pdb = |min: &str, replicas: u32| {
        format!(
            "{}---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: p, namespace: ml}}\nspec:\n  minAvailable: {min}\n  selector: {{matchLabels: {{app: d}}}}\n",
            deployment(CONTAINER).replace("replicas: 2", &format!("replicas: {replicas}"))
        )
    };
    let (_, f, _) = l.lint(&pdb("1", 1));
    assert_eq!(rules_of(&f), vec!["AL011"]);
    assert_eq!(rules_of(&l.lint(&pdb("'100%'", 3)).1), vec!["AL011"]);
    assert!(l.lint(&pdb("1", 2)).1.is_empty());
}

#[test]
fn al012_al013_al014() {
    let l = Linter::new();
    let history =
        deployment(CONTAINER).replace("replicas: 2", "replicas: 2\n  revisionHistoryLimit: 0");
    assert_eq!(rules_of(&l.lint(&history).1), vec!["AL012"]);
    assert!(
        l.lint(&history.replace("revisionHistoryLimit: 0", "revisionHistoryLimit: 3"))
            .1
            .is_empty()
    );

    let tolerate_all = deployment(&format!("{CONTAINER}tolerations: [{{operator: Exists}}]\n"));
    assert_eq!(rules_of(&l.lint(&tolerate_all).1), vec!["AL013"]);
    let keyed = deployment(&format!(
        "{CONTAINER}tolerations: [{{key: dedicated, operator: Exists}}]\n"
    ));
    assert!(l.lint(&keyed).1.is_empty());

    let (_, f, json) = l.lint(&required(
        "      - matchExpressions: [{key: llm-pool, operator: In, values: [online]}]\n",
    ));
    assert_eq!(rules_of(&f), vec!["AL014"]);
    assert_eq!(json["findings"][0]["severity"], "info");
    assert!(l.lint(&required("      - matchExpressions: [{key: ops.example.com.node-restriction.kubernetes.io/llm-pool, operator: In, values: [online]}]\n")).1.is_empty());
}

#[test]
fn suppression_and_configuration() {
    let l = Linter::new();
    let tolerate_all = deployment(&format!("{CONTAINER}tolerations: [{{operator: Exists}}]\n"));
    let annotated = tolerate_all.replace(
        "  name: d\n",
        "  name: d\n  annotations: {affinity-lint.placekit.dev/ignore: 'AL013'}\n",
    );
    assert!(l.lint(&annotated).1.is_empty());
    let on_template = tolerate_all.replace("      labels: {app: d}\n", "      labels: {app: d}\n      annotations: {affinity-lint.placekit.dev/ignore: 'al013, AL001'}\n");
    assert!(l.lint(&on_template).1.is_empty());

    let path = l.write("in.yaml", &tolerate_all);
    let p = path.to_str().unwrap();
    assert_eq!(l.run(&["-f", p, "--disable", "AL013"]).0, 0);
    assert_eq!(
        l.run(&["-f", p, "--fail-on", "error"]).0,
        0,
        "a warning does not fail with --fail-on error"
    );
    assert_eq!(l.run(&["-f", p]).0, 1);
    l.write(".affinity-lint.yaml", "rules:\n  AL013: error\n");
    let (code, out, _) = l.run(&["-f", p, "-o", "json", "--fail-on", "error"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("\"severity\": \"error\""));
    let (code, _, err) = l.run(&["-f", p, "--disable", "AL999"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown rule \"AL999\""));
}

#[test]
fn rules_subcommand_prints_documentation() {
    let l = Linter::new();
    let (code, out, _) = l.run(&["rules"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 27);
    // The `--cluster` rules are documented like the offline ones.
    let ids = (1..=21).chain(101..=105).map(|n| format!("AL{n:03}"));
    for id in ids {
        let (code, out, _) = l.run(&["rules", &id]);
        assert_eq!(code, 0);
        for section in [
            "## What it does",
            "## When it does not fire",
            "## Why it matters",
            "## Example",
            "## Fix",
        ] {
            assert!(out.contains(section), "{id}: {section}");
        }
    }
    assert_eq!(l.run(&["rules", "AL999"]).0, 2);
    let (_, out, _) = l.run(&["rules", "al103"]);
    assert!(
        out.starts_with("AL103 tainted-candidates (error, with --cluster)\n\n## What it does\n"),
        "{out}"
    );
}
