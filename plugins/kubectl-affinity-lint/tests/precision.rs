//! Precision on real-world shapes, through the binary's JSON output: each false-positive
//! class seen on public manifests has a fixture that must lint clean of it, and each miss a
//! fixture that must be flagged — exactly the (rule, line) pairs listed here. The fixtures
//! are written for this test (`tests/fixtures/precision/`), not copied from any project.

use std::path::{Path, PathBuf};
use std::process::Command;

use placekit_testserver::process::Bounded as _;
use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubectl-affinity_lint")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/precision")
        .join(name)
}

fn lint(args: &[&str]) -> (i32, Value) {
    let out = Command::new(bin())
        .args(args)
        .args(["-o", "json", "--fail-on", "info"])
        .bounded_output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout} {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), json)
}

fn findings(json: &Value) -> Vec<(String, u64)> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Writes `text` to `rel` under `root`, creating its directories.
fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn assert_findings(name: &str, expected: &[(&str, u64)]) -> Value {
    let path = fixture(name);
    let (code, json) = lint(&["-f", path.to_str().unwrap()]);
    assert_eq!(json["inputErrors"], serde_json::json!([]), "{name}");
    let expected: Vec<(String, u64)> = expected.iter().map(|(r, l)| (r.to_string(), *l)).collect();
    assert_eq!(findings(&json), expected, "{name}: {json:#}");
    assert_eq!(code, if expected.is_empty() { 0 } else { 1 }, "{name}");
    json
}

#[test]
fn al001_an_or_of_alternative_evidence_or_marked_as_meant_is_not_flagged() {
    assert_findings("fp-al001-alternative-evidence.yaml", &[]);
}

#[test]
fn an_or_of_a_deprecated_label_and_its_replacement_is_not_flagged() {
    assert_findings("fp-al001-label-aliases.yaml", &[]);
}

#[test]
fn a_comment_that_calls_the_or_a_bug_does_not_silence_al001() {
    assert_findings("miss-or-called-a-bug.yaml", &[("AL001", 19), ("AL014", 20)]);
}

#[test]
fn go_templates_that_are_data_are_linted_not_refused() {
    // The Deployment after them is linted: its GPU request without a limit is found.
    assert_findings("fp-go-templates-as-data.yaml", &[("AL007", 49)]);
}

#[test]
fn values_kubectl_sends_as_booleans_or_numbers_are_flagged_and_whole_weights_are_not() {
    let json = assert_findings(
        "miss-unquoted-values.yaml",
        &[("AL004", 10), ("AL004", 12), ("AL004", 18), ("AL004", 19)],
    );
    assert!(
        json.to_string().contains("read by kubectl as a boolean"),
        "{json}"
    );
}

#[test]
fn argo_containers_scripts_and_container_sets_are_checked() {
    let json = assert_findings(
        "miss-argo-containers.yaml",
        &[("AL007", 20), ("AL007", 26), ("AL007", 38)],
    );
    assert_eq!(json["findings"][0]["object"]["name"], "train-", "{json}");
    assert_eq!(
        json["findings"][0]["podSpec"], "spec.templates[1]",
        "{json}"
    );
}

#[test]
fn al008_anti_affinity_against_other_applications_is_not_flagged() {
    assert_findings("fp-al008-other-applications.yaml", &[]);
}

#[test]
fn al013_cluster_agents_may_tolerate_everything() {
    assert_findings("fp-al013-cluster-agents.yaml", &[]);
}

#[test]
fn al007_placeholders_are_not_said_to_lack_a_limit() {
    assert_findings("fp-al007-placeholders.yaml", &[]);
}

#[test]
fn al010_speaks_only_when_a_rollout_needs_free_gpus() {
    assert_findings("fp-al010-rollouts-that-progress.yaml", &[]);
}

#[test]
fn controller_labels_revisions_policies_provider_pools_and_autoscaled_pdbs_are_not_flagged() {
    assert_findings("fp-controller-labels-and-copies.yaml", &[]);
}

#[test]
fn placement_in_kubevirt_strimzi_kserve_scylla_rook_and_nim_is_linted() {
    let json = assert_findings(
        "miss-placement-kinds.yaml",
        &[
            ("AL001", 19),
            ("AL004", 34),
            ("AL004", 49),
            ("AL007", 62),
            ("AL001", 79),
            ("AL004", 97),
            ("AL007", 109),
        ],
    );
    let paths: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["podSpec"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        paths,
        [
            "spec.template.spec",
            "spec",
            "spec.kafka.template.pod",
            "spec.predictor",
            "spec.datacenter.racks[0].placement",
            "spec.placement.mon",
            "spec",
        ]
    );
}

#[test]
fn pod_templates_of_custom_resources_are_linted_with_their_path() {
    let json = assert_findings(
        "miss-custom-resources.yaml",
        &[
            ("AL007", 29),
            ("AL001", 45),
            ("AL014", 47),
            ("AL013", 70),
            ("AL006", 90),
            ("AL007", 112),
            ("AL008", 135),
        ],
    );
    let paths: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["podSpec"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "spec.workerGroupSpecs[1].template.spec",
            "spec.pytorchReplicaSpecs.Worker.template.spec",
            "spec.pytorchReplicaSpecs.Worker.template.spec",
            "spec.leaderWorkerTemplate.workerTemplate.spec",
            "spec.templates[1]",
            "spec.tasks[0].template.spec",
            "spec.template.spec",
        ]
    );
    assert_eq!(json["summary"]["objects"], 7, "an object is counted once");
}

#[test]
fn pdb_percentages_round_up_and_count_every_selected_pod() {
    let json = assert_findings(
        "miss-pdb-percentage.yaml",
        &[("AL011", 26), ("AL011", 71), ("AL011", 80), ("AL011", 87)],
    );
    let fixes: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fix"].as_str().unwrap())
        .collect();
    assert!(fixes[1].contains("run more replicas"), "{fixes:?}");
    assert!(fixes[2].contains("maxUnavailable: 1"), "{fixes:?}");
    assert!(!fixes[2].contains("replicas"), "{fixes:?}");
    assert!(fixes[3].contains("below 100%"), "{fixes:?}");
    let messages: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        messages[0].contains("67% (rounded up to 3) with 3 pods"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("3 pods (Deployment infra/api-a, Deployment infra/api-b)"),
        "{messages:?}"
    );
}

#[test]
fn shapes_the_api_server_rejects_are_named() {
    let json = assert_findings(
        "miss-shapes.yaml",
        &[("AL004", 18), ("AL004", 48), ("AL006", 50)],
    );
    let text = json.to_string();
    assert!(text.contains("must be a mapping with nodeSelectorTerms, not a list"));
    assert!(text.contains("values must be a list"));
    assert!(text.contains("not the string \\\"50\\\""));
    assert!(
        !text.contains("AL005"),
        "no follow-up contradiction from a misread value"
    );
}

#[test]
fn duplicate_keys_are_reported_and_the_last_value_is_linted() {
    let json = assert_findings(
        "miss-duplicate-keys.yaml",
        &[("AL015", 27), ("AL001", 30), ("AL014", 32)],
    );
    assert!(json.to_string().contains("first on line 17"));
}

#[test]
fn yaml_that_kubectl_reads_is_linted() {
    assert_findings("lenient-yaml.yaml", &[("AL013", 26)]);
}

#[test]
fn a_pdb_meets_only_the_workloads_of_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| write_file(dir.path(), rel, text);
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: ml}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x}]}\n";
    let pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: ml}\nspec:\n  minAvailable: 1\n  selector: {matchLabels: {app: web}}\n";
    write("a/deployment.yaml", deployment);
    write("b/pdb.yaml", pdb);
    let root = dir.path().to_str().unwrap();
    let (_, json) = lint(&["-R", "-f", root]);
    assert_eq!(
        findings(&json),
        [],
        "another directory's workload is not this PDB's"
    );
    write("b/deployment.yaml", deployment);
    let (_, json) = lint(&["-R", "-f", root]);
    assert_eq!(
        findings(&json),
        [("AL011".to_string(), 5)],
        "the same directory's is"
    );
    // The same directory however the paths are spelled.
    let (_, json) = lint(&[
        "-f",
        dir.path().join("b/deployment.yaml").to_str().unwrap(),
        "-f",
        dir.path().join("b/./pdb.yaml").to_str().unwrap(),
    ]);
    assert_eq!(findings(&json), [("AL011".to_string(), 5)]);
    write(
        "b/deployment.yaml",
        &deployment.replace("namespace: ml", "namespace: other"),
    );
    let (_, json) = lint(&["-R", "-f", root]);
    assert_eq!(findings(&json), [], "another namespace's is not");
}

/// AL008's guess that an anti-affinity term meant its own workload (a value one typo from
/// the pod's) gives way to a sibling workload in the same directory whose pods the term
/// selects: `pod-affinity-3` keeping away from `pod-affinity-1`, as a public tutorial does.
#[test]
fn an_anti_affinity_aimed_at_a_sibling_in_the_same_directory_is_not_a_typo() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| write_file(dir.path(), rel, text);
    let deployment = |name: &str, away_from: Option<&str>| {
        let anti = away_from.map_or(String::new(), |other| format!("      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector: {{matchExpressions: [{{key: app, operator: In, values: [{other}]}}]}}\n            topologyKey: kubernetes.io/hostname\n"));
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  replicas: 3\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n{anti}      containers: [{{name: redis, image: redis}}]\n"
        )
    };
    write(
        "a/pod-affinity-3.yaml",
        &deployment("pod-affinity-3", Some("pod-affinity-1")),
    );
    let root = dir.path().to_str().unwrap();
    let (code, json) = lint(&["-R", "-f", root]);
    assert_eq!(
        (code, findings(&json)),
        (1, vec![("AL008".to_string(), 13)]),
        "alone, the selected value reads as a typo of the workload's own"
    );
    write("a/pod-affinity-1.yaml", &deployment("pod-affinity-1", None));
    let (code, json) = lint(&["-R", "-f", root]);
    assert_eq!((code, findings(&json)), (0, vec![]), "{json}");
    // Another directory's workload is not a sibling.
    std::fs::create_dir(dir.path().join("b")).unwrap();
    std::fs::rename(
        dir.path().join("a/pod-affinity-1.yaml"),
        dir.path().join("b/pod-affinity-1.yaml"),
    )
    .unwrap();
    let (_, json) = lint(&["-R", "-f", root]);
    assert_eq!(findings(&json), [("AL008".to_string(), 13)]);
    // Both in one stream, in either order.
    let both = format!(
        "{}---\n{}",
        deployment("pod-affinity-1", None),
        deployment("pod-affinity-3", Some("pod-affinity-1"))
    );
    write("c/both.yaml", &both);
    let (_, json) = lint(&["-f", dir.path().join("c/both.yaml").to_str().unwrap()]);
    assert_eq!(findings(&json), []);
    // A finding judged with its group keeps its place in the file's order.
    let spread = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      topologySpreadConstraints:\n      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: wbe}}}\n      containers: [{name: c, image: x}]\n";
    let mixed = format!(
        "{}---\n{spread}",
        deployment("pod-affinity-3", Some("pod-affinity-1"))
    );
    write("d/mixed.yaml", &mixed);
    let (_, json) = lint(&["-f", dir.path().join("d/mixed.yaml").to_str().unwrap()]);
    let lines: Vec<u64> = findings(&json).into_iter().map(|(_, line)| line).collect();
    assert_eq!(lines.len(), 2, "{json}");
    assert!(lines[0] < lines[1], "in file order: {lines:?}");
}

#[test]
fn the_report_does_not_depend_on_the_number_of_workers() {
    let dir = fixture("");
    let dir = dir.to_str().unwrap();
    let one = lint(&["-R", "-f", dir, "-j", "1"]).1;
    let three = lint(&["-R", "-f", dir, "-j", "3"]).1;
    assert_eq!(one, three);
    assert!(findings(&one).len() > 10);
}

#[test]
fn a_repeated_large_anchored_scalar_is_refused_by_its_expanded_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.yaml");
    let big = "x".repeat(1 << 20);
    let mut text = format!("kind: ConfigMap\nmetadata: {{name: bomb}}\na: &a \"{big}\"\nb: [");
    for _ in 0..1000 {
        text.push_str("*a, ");
    }
    text.push_str("*a]\n---\nkind: Pod\nmetadata: {name: ok}\nspec:\n  tolerations: [{operator: Exists}]\n  containers: [{name: c, image: x}]\n");
    std::fs::write(&path, text).unwrap();
    let (code, json) = lint(&["-f", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    let error = json["inputErrors"][0]["message"].as_str().unwrap();
    assert!(error.contains("alias bomb"), "{error}");
    assert_eq!(
        findings(&json),
        [("AL013".to_string(), 9)],
        "the next document is still linted"
    );
}

/// What kustomize reads is read as kustomize reads it: `yes` in a patch, or in a file
/// beside a kustomization, stays a string (YAML 1.2); `true` does not. A placeholder in a
/// requirement is not judged; a PDB and a workload without a namespace meet in `default`;
/// a mapping used as a key is refused as kubectl refuses it.
#[test]
fn kustomize_inputs_placeholders_default_namespaces_and_complex_keys() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| write_file(dir.path(), rel, text);
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ui}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: ui}}\n  template:\n    metadata: {labels: {app: ui}}\n    spec:\n      nodeSelector: {tainted: yes, gpu: true}\n      containers: [{name: ui, image: registry.example.com/ui:1}]\n";
    let patch = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ui}\nspec:\n  template:\n    spec:\n      nodeSelector: {tainted: yes}\n";
    write("plain/deployment.yaml", deployment);
    write(
        "overlay/kustomization.yaml",
        "resources: [deployment.yaml]\n",
    );
    write("overlay/deployment.yaml", deployment);
    write("patch/deployment.yaml", patch);
    write(
        "placeholder/pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: gpu.example.com/memory, operator: Gt, values: [\"${MIN_GPU_MIB}\"]}]\n  containers: [{name: c, image: x}]\n",
    );
    write(
        "pdb/all.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n    spec:\n      containers: [{name: api, image: registry.example.com/api:1}]\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: api, namespace: default}\nspec:\n  minAvailable: 1\n  selector: {matchLabels: {app: api}}\n",
    );
    write(
        "secret/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  token: {{HF_TOKEN}}\n",
    );
    let (code, json) = lint(&["-R", "-f", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{json:#}");
    let root = format!("{}/", dir.path().display());
    let found: Vec<(String, String, u64)> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["file"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches(&root)
                    .to_string(),
                f["rule"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(String, String, u64)> = [
        ("overlay/deployment.yaml", "AL004", 10),
        ("pdb/all.yaml", "AL011", 16),
        ("plain/deployment.yaml", "AL004", 10),
        ("plain/deployment.yaml", "AL004", 10),
    ]
    .iter()
    .map(|(f, r, l)| (f.to_string(), r.to_string(), *l))
    .collect();
    assert_eq!(found, expected, "{json:#}");
    // In the kustomization only `true` is a boolean; outside it `yes` is one too.
    let messages: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(messages[0].contains("`true`"), "{messages:?}");
    assert!(
        messages[2].contains("`yes`") && messages[3].contains("`true`"),
        "{messages:?}"
    );
    let errors = json["inputErrors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{json:#}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("a mapping or list used as a key"),
        "{json:#}"
    );
}

/// A chart that ships its CRD beside its resources: the custom resource is judged by that
/// CRD's schema (AL018 on a scheduling field it prunes), and a field the schema keeps
/// (`x-kubernetes-preserve-unknown-fields`) is not flagged.
#[test]
fn a_crd_in_the_input_judges_its_custom_resources() {
    let dir = tempfile::tempdir().unwrap();
    write_file(
        dir.path(),
        "chart/crds/databases.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: databases.example.com}\nspec:\n  group: example.com\n  names: {kind: Database, plural: databases}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              members: {type: integer}\n              podSpec:\n                type: object\n                properties:\n                  podTemplate: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
    );
    write_file(
        dir.path(),
        "chart/templates/db.yaml",
        "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: shop}\nspec:\n  members: 3\n  podSpec:\n    affinity:\n      podAntiAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n        - {labelSelector: {matchLabels: {app: orders}}, topologyKey: kubernetes.io/hostname}\n    podTemplate:\n      affinity: {}\n",
    );
    let (code, json) = lint(&["-R", "-f", dir.path().to_str().unwrap()]);
    assert_eq!(findings(&json), [("AL018".to_string(), 7)], "{json:#}");
    assert!(
        json["findings"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("`spec.podSpec.affinity` is not in the CustomResourceDefinition's schema for Database"),
        "{json:#}"
    );
    assert_eq!(code, 1);
}
