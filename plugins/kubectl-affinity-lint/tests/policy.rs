//! `kubectl affinity-lint policy` on a real kube-apiserver (CEL needs the real thing; the
//! test API server does not evaluate admission policies). Runs when
//! `PLACEKIT_E2E_KUBECONFIG` names a disposable cluster (CI starts one with `cp up`), through
//! the real kubectl: the policy is piped into `kubectl apply -f -` as the README shows,
//! bound to one labelled test namespace so nothing else on the cluster is affected, and
//! every manifest is tried with `kubectl apply --dry-run=server`. The linter and the
//! policy must agree on every case both cover.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A namespace of its own per run: without kube-controller-manager (the test control plane
/// runs none) a deleted namespace stays Terminating, so a name is never reused.
fn namespace() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        format!("affinity-lint-policy-{stamp}")
    })
}

struct Cluster {
    kubeconfig: PathBuf,
    bin: tempfile::TempDir,
}

impl Cluster {
    fn from_env() -> Option<Self> {
        let kubeconfig = placekit_testserver::real_cluster::real_cluster_for(
            "the admission policy suite (CEL needs a real kube-apiserver)",
            placekit_testserver::real_cluster::E2E_KUBECONFIG,
        )?;
        // The plugin on PATH, as krew installs it.
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(
            env!("CARGO_BIN_EXE_kubectl-affinity_lint"),
            bin.path().join("kubectl-affinity_lint"),
        )
        .unwrap();
        Some(Cluster { kubeconfig, bin })
    }

    /// Runs a shell command line with kubectl and the plugin on PATH.
    fn sh(&self, script: &str, stdin: Option<&str>) -> (i32, String, String) {
        let mut child = Command::new("sh")
            .args(["-c", script])
            .env("KUBECONFIG", &self.kubeconfig)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    self.bin.path().display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(text) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        }
        let out = placekit_testserver::process::wait_output(child, "the plugin");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    /// `kubectl apply --dry-run=server`: (admitted, stderr).
    fn admits(&self, manifest: &str) -> (bool, String) {
        let (code, _, err) = self.sh("kubectl apply --dry-run=server -f -", Some(manifest));
        (code == 0, err)
    }

    /// Whether the linter flags any of the policy's rules, or AL004 and AL018 (what the
    /// API server refuses by itself).
    fn linter_flags(&self, manifest: &str) -> bool {
        let (_, out, err) = self.sh(
            "kubectl affinity-lint -f - -o json --enable AL001,AL003,AL004,AL006,AL007,AL018",
            Some(manifest),
        );
        let json: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
        json["findings"].as_array().unwrap().iter().any(|f| {
            ["AL001", "AL003", "AL004", "AL006", "AL007", "AL018"]
                .contains(&f["rule"].as_str().unwrap())
        })
    }

    /// Applies the policy with `args` and waits until it judges requests.
    fn apply_policy(&self, args: &str, canary_rejected: impl Fn(&Self) -> bool) {
        let (code, out, err) = self.sh(
            &format!(
                "kubectl affinity-lint policy {args} --namespace-selector {ns}=true | kubectl apply -f -",
                ns = namespace()
            ),
            None,
        );
        assert_eq!(code, 0, "{out}{err}");
        // A new binding takes effect within a few seconds.
        let started = Instant::now();
        while !canary_rejected(self) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the policy never took effect"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Never leave the policy behind: other suites run on the same cluster.
        self.sh(
            &format!("kubectl delete validatingadmissionpolicybinding,validatingadmissionpolicy affinity-lint.placekit.dev --ignore-not-found; kubectl delete namespace {} --ignore-not-found --wait=false", namespace()),
            None,
        );
    }
}

fn examples(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    std::fs::read_to_string(path)
        .unwrap()
        .replace("namespace: ml", &format!("namespace: {}", namespace()))
}

/// A Deployment in the test namespace with this pod spec (indented 6).
fn deployment(name: &str, pod_spec: &str, annotations: &str) -> String {
    let spec: String = pod_spec.lines().map(|l| format!("      {l}\n")).collect();
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  replicas: 2\n  strategy: {{type: Recreate}}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n{annotations}    spec:\n{spec}",
        ns = namespace()
    )
}

fn required(terms: &str) -> String {
    format!(
        "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n{terms}containers: [{{name: c, image: registry.example.com/c:1}}]\n"
    )
}

const SPLIT: &str = "      - matchExpressions: [{key: pool, operator: In, values: [online]}]\n      - matchExpressions: [{key: family, operator: In, values: [a100]}]\n";

#[test]
fn the_policy_and_the_linter_agree() {
    let Some(cluster) = Cluster::from_env() else {
        return;
    };
    let (code, out, err) = cluster.sh(
        &format!(
            "kubectl create namespace {ns} && kubectl label namespace {ns} {ns}=true",
            ns = namespace()
        ),
        None,
    );
    assert_eq!(code, 0, "{out}{err}");
    let split = deployment("split", &required(SPLIT), "");
    cluster.apply_policy("", |c| !c.admits(&split).0);
    // By default the annotation, which the workload's author writes, exempts nothing.
    let ignore = "      annotations: {affinity-lint.placekit.dev/ignore: AL001}\n";
    let self_exempted = deployment("self-exempted", &required(SPLIT), ignore);
    let (admitted, err) = cluster.admits(&self_exempted);
    assert!(!admitted, "the annotation exempted a workload by default");
    assert!(
        err.contains("only the cluster admin can exempt a workload"),
        "{err}"
    );
    // Generated with --allow-ignore-annotation, it exempts, as in the linter.
    cluster.apply_policy("--allow-ignore-annotation", |c| {
        c.admits(&self_exempted).0 && !c.admits(&split).0
    });

    // The runbook's two Deployments.
    let (admitted, err) = cluster.admits(&examples("llm-inference-split-terms.yaml"));
    assert!(!admitted);
    assert!(
        err.contains("denied request: AL001 split-required-terms")
            && err.contains("(Deployment llm-inference;"),
        "{err}"
    );
    assert!(cluster.admits(&examples("llm-inference.yaml")).0);

    let gpu = |requests: &str, limits: &str| {
        format!(
            "containers:\n- name: c\n  image: x\n  resources: {{requests: {{{requests}}}, limits: {{{limits}}}}}\n"
        )
    };
    let preferred = |weight: &str| {
        format!(
            "affinity:\n  nodeAffinity:\n    preferredDuringSchedulingIgnoredDuringExecution:\n    - weight: {weight}\n      preference: {{matchExpressions: [{{key: zone, operator: In, values: [a]}}]}}\ncontainers: [{{name: c, image: x}}]\n"
        )
    };
    let cases: Vec<(&str, String, bool)> = vec![
        ("AL001 split terms", split.clone(), true),
        (
            "a real OR over the same key",
            deployment(
                "same-key",
                &required(
                    "      - matchExpressions: [{key: family, operator: In, values: [a100]}]\n      - matchExpressions: [{key: family, operator: In, values: [h100]}]\n",
                ),
                "",
            ),
            false,
        ),
        (
            "one term",
            deployment(
                "one-term",
                &required(
                    "      - matchExpressions: [{key: pool, operator: In, values: [online]}, {key: family, operator: In, values: [a100]}]\n",
                ),
                "",
            ),
            false,
        ),
        (
            "alternative evidence",
            deployment(
                "evidence",
                &required(
                    "      - matchExpressions: [{key: feature.node.kubernetes.io/pci-10de.present, operator: In, values: ['true']}]\n      - matchExpressions: [{key: nvidia.com/gpu.present, operator: Exists}]\n",
                ),
                "",
            ),
            false,
        ),
        (
            "AL001 exempted by the annotation",
            deployment("exempt", &required(SPLIT), ignore),
            false,
        ),
        (
            "a deprecated label OR-ed with its replacement",
            deployment(
                "alias",
                &required(
                    "      - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}, {key: pool, operator: In, values: [online]}]\n      - matchExpressions: [{key: beta.kubernetes.io/os, operator: In, values: [linux]}, {key: pool, operator: In, values: [online]}]\n",
                ),
                "",
            ),
            false,
        ),
        (
            "AL001 exempted among other rules, separated by spaces",
            deployment(
                "exempt-spaces",
                &required(SPLIT),
                "      annotations: {affinity-lint.placekit.dev/ignore: 'AL003 al001'}\n",
            ),
            false,
        ),
        (
            "AL001 not exempted by a longer word",
            deployment(
                "exempt-prefix",
                &required(SPLIT),
                "      annotations: {affinity-lint.placekit.dev/ignore: NOT-AL001}\n",
            ),
            true,
        ),
        (
            "AL003 an empty term among others",
            deployment(
                "empty",
                &required(
                    "      - matchExpressions: [{key: pool, operator: In, values: [online]}]\n      - matchExpressions: []\n",
                ),
                "",
            ),
            true,
        ),
        (
            "AL006 weight 0",
            deployment("weight-0", &preferred("0"), ""),
            true,
        ),
        (
            "a weight of 50",
            deployment("weight-50", &preferred("50"), ""),
            false,
        ),
        (
            "a weight of 50.0, which kubectl sends as 50",
            deployment("weight-float", &preferred("50.0"), ""),
            false,
        ),
        (
            "a weight of 0x10, which kubectl sends as 16",
            deployment("weight-hex", &preferred("0x10"), ""),
            false,
        ),
        (
            "AL004 values: [true], which kubectl sends as a boolean",
            deployment(
                "unquoted-true",
                &required(
                    "      - matchExpressions: [{key: nvidia.com/gpu.present, operator: In, values: [true]}]\n",
                ),
                "",
            ),
            true,
        ),
        (
            "AL004 a nodeSelector value of yes",
            deployment(
                "selector-yes",
                "nodeSelector: {gpu: yes}\ncontainers: [{name: c, image: x}]\n",
                "",
            ),
            true,
        ),
        (
            "AL018 anti-affinity beside the template's spec",
            deployment("beside-spec", "containers: [{name: c, image: x}]\n", "").replace(
                "    spec:\n",
                "    affinity:\n      podAntiAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n        - {labelSelector: {matchLabels: {app: beside-spec}}, topologyKey: kubernetes.io/hostname}\n    spec:\n",
            ),
            true,
        ),
        (
            "AL018 a misspelled field in a toleration",
            deployment(
                "toleration-typo",
                "tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationseconds: 30}]\ncontainers: [{name: c, image: x}]\n",
                "",
            ),
            true,
        ),
        (
            "AL007 a GPU without a limit",
            deployment(
                "no-limit",
                "containers:\n- name: c\n  image: x\n  resources: {requests: {nvidia.com/gpu: 1}}\n",
                "",
            ),
            true,
        ),
        (
            "AL007 a limit that differs",
            deployment(
                "other-limit",
                &gpu("nvidia.com/gpu: 1", "nvidia.com/gpu: 2"),
                "",
            ),
            true,
        ),
        (
            "requests == limits",
            deployment(
                "equal",
                &gpu("nvidia.com/gpu: 1", "nvidia.com/gpu: '1'"),
                "",
            ),
            false,
        ),
        (
            "AL001 in a Pod",
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: {}}}\nspec:\n{}",
                namespace(),
                required(SPLIT)
                    .lines()
                    .map(|l| format!("  {l}\n"))
                    .collect::<String>()
            ),
            true,
        ),
        (
            "AL001 in a CronJob",
            format!(
                "apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: cj, namespace: {}}}\nspec:\n  schedule: '0 * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n{}",
                namespace(),
                required(SPLIT)
                    .lines()
                    .map(|l| format!("          {l}\n"))
                    .collect::<String>()
            ),
            true,
        ),
    ];
    let mut disagreements = Vec::new();
    for (what, manifest, flagged) in &cases {
        let linter = cluster.linter_flags(manifest);
        let (admitted, err) = cluster.admits(manifest);
        assert_eq!(linter, *flagged, "{what}: the linter");
        if linter == admitted {
            disagreements.push(format!(
                "{what}: linter flags {linter}, server admits {admitted}: {err}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    eprintln!(
        "policy: the linter and the API server agree on {}/{} cases",
        cases.len(),
        cases.len()
    );

    // Objects that predate the policy keep working: a split Deployment (created while
    // exempted) can lose its exemption, be scaled and be relabelled, since its template does
    // not change; pods a controller owns are its owner's business.
    let ns = namespace();
    let old = deployment("predates", &required(SPLIT), "").replace(
        "  name: predates\n",
        "  name: predates\n  annotations: {affinity-lint.placekit.dev/ignore: AL001}\n",
    );
    let (code, out, err) = cluster.sh("kubectl apply -f -", Some(&old));
    assert_eq!(code, 0, "{out}{err}");
    for update in [
        format!("kubectl -n {ns} annotate deployment predates affinity-lint.placekit.dev/ignore-"),
        format!("kubectl -n {ns} scale deployment predates --replicas 3"),
        format!("kubectl -n {ns} label deployment predates team=ml"),
    ] {
        let (code, out, err) = cluster.sh(&update, None);
        assert_eq!(code, 0, "{update}: {out}{err}");
    }
    let (code, _, err) = cluster.sh(
        &format!("kubectl -n {ns} patch deployment predates --type merge -p '{{\"spec\":{{\"template\":{{\"metadata\":{{\"labels\":{{\"v\":\"2\"}}}}}}}}}}'"),
        None,
    );
    assert_ne!(code, 0, "a template change is judged");
    assert!(err.contains("AL001"), "{err}");
    let owned = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: owned\n  namespace: {ns}\n  ownerReferences: [{{apiVersion: v1, kind: ConfigMap, name: mine, uid: 6e0b4bd2-9bd5-4f8c-8e5c-0f7f8c1e9a11, controller: true}}]\nspec:\n{}",
        required(SPLIT)
            .lines()
            .map(|l| format!("  {l}\n"))
            .collect::<String>()
    );
    let (admitted, err) = cluster.admits(&owned);
    assert!(
        !admitted && err.contains("AL001"),
        "an ownerReference a person writes does not exempt: {err}"
    );
    // A made-up ReplicaSet owner (any client can write one, with any uid) does not
    // exempt a person's pod: the exemption keys on who sends it.
    let fake_owner = owned.replace(
        "apiVersion: v1, kind: ConfigMap, name: mine",
        "apiVersion: apps/v1, kind: ReplicaSet, name: rs",
    );
    let (admitted, err) = cluster.admits(&fake_owner);
    assert!(
        !admitted && err.contains("AL001"),
        "a made-up controller ownerReference does not exempt: {err}"
    );
    // The same pod from the ReplicaSet controller (its service account, impersonated).
    let (code, out, err) = cluster.sh(
        "kubectl create --dry-run=server --as system:serviceaccount:kube-system:replicaset-controller -f -",
        Some(&fake_owner),
    );
    assert_eq!(
        code, 0,
        "a controller's pod is not judged again: {out}{err}"
    );
    // Gated, patched, ungated: node affinity added to a pod while it has a scheduling
    // gate is judged like a create.
    let gated = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gated\n  namespace: {ns}\nspec:\n  schedulingGates: [{{name: example.com/hold}}]\n  containers: [{{name: c, image: x}}]\n"
    );
    let (code, out, err) = cluster.sh("kubectl apply -f -", Some(&gated));
    assert_eq!(code, 0, "{out}{err}");
    let affinity = serde_json::json!({"spec": {"affinity": serde_json::from_str::<serde_json::Value>(
        r#"{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"accelerator.example.com/gpu-family","operator":"In","values":["a100"]}]},
            {"matchExpressions":[{"key":"pool","operator":"In","values":["online"]}]}]}}}"#).unwrap()}});
    let (code, _, err) = cluster.sh(
        &format!("kubectl -n {ns} patch pod gated --type merge -p '{affinity}'"),
        None,
    );
    assert_ne!(code, 0, "split terms patched into a gated pod are judged");
    assert!(err.contains("AL001"), "{err}");

    // Warn instead of Deny: admitted, and kubectl prints the rule.
    let warned = |err: &str| {
        err.contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'affinity-lint.placekit.dev'",
        ) && err.contains("AL001 split-required-terms")
    };
    cluster.apply_policy("--action warn", |c| {
        warned(&c.sh("kubectl apply --dry-run=server -f -", Some(&split)).2)
    });
    let (code, out, err) = cluster.sh("kubectl apply --dry-run=server -f -", Some(&split));
    assert_eq!(code, 0, "admitted: {out}{err}");
    assert!(warned(&err), "{err}");
}
