//! The real `kubectl` against the cluster under test — the test API server, or with
//! `PLACEKIT_E2E_KUBECONFIG` the real control plane (through the harness): every command the
//! plugins' users rely on and the checks on the server afterwards. Skipped, with a printed
//! notice, where kubectl is not installed.

use std::path::PathBuf;
use std::process::{Command, Output};

use placekit_testserver::harness::Harness;
use placekit_testserver::process::Bounded as _;

const FIXTURE: &str = include_str!("../fixtures/gpu-cluster.yaml");

fn kubectl_available() -> bool {
    placekit_testserver::require::kubectl("the real-kubectl tests of the test API server")
}

struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    fn new(h: &Harness, user: &str) -> Self {
        let kubeconfig = match user {
            "admin" => h.kubeconfig.clone(),
            other => h.kubeconfig_for(other),
        };
        Kubectl {
            kubeconfig,
            cache: h.dir.path().join("cache"),
        }
    }

    async fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("kubectl");
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", &self.cache)
            .env_remove("KUBECTL_EXTERNAL_DIFF");
        tokio::task::spawn_blocking(move || cmd.bounded_output().expect("kubectl runs"))
            .await
            .unwrap()
    }

    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

async fn setup() -> Option<Harness> {
    if !kubectl_available() {
        return None;
    }
    Some(Harness::cluster(FIXTURE).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_nodes_with_selectors_and_json() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    let table = k.ok(&["get", "nodes"]).await;
    for node in ["gpu-a100-1", "gpu-a100-2", "gpu-h100-1", "cpu-1"] {
        assert!(table.contains(node), "{table}");
    }
    let selected = k
        .ok(&[
            "get",
            "nodes",
            "-l",
            "accelerator.example.com/gpu-family in (a100,b100)",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(selected, "node/gpu-a100-1\nnode/gpu-a100-2\n");
    let json: serde_json::Value =
        serde_json::from_str(&k.ok(&["get", "nodes", "-o", "json"]).await).unwrap();
    assert_eq!(json["kind"], "List");
    assert_eq!(json["items"].as_array().unwrap().len(), 4);
    assert_eq!(json["items"][0]["kind"], "Node");
    let notin = k
        .ok(&[
            "get",
            "nodes",
            "-l",
            "!accelerator.example.com/gpu-family",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(notin, "node/cpu-1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_label_overwrite_and_remove() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    k.ok(&["label", "node", "gpu-a100-1", "power-profile=balanced"])
        .await;
    assert_eq!(h.labels("gpu-a100-1").await["power-profile"], "balanced");

    let refused = k
        .run(&["label", "node", "gpu-a100-1", "power-profile=max"])
        .await;
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("already has a value (balanced)"));
    assert_eq!(h.labels("gpu-a100-1").await["power-profile"], "balanced");

    k.ok(&[
        "label",
        "node",
        "gpu-a100-1",
        "power-profile=max",
        "--overwrite",
    ])
    .await;
    assert_eq!(h.labels("gpu-a100-1").await["power-profile"], "max");

    k.ok(&["label", "node", "gpu-a100-1", "power-profile-"])
        .await;
    assert!(h.labels("gpu-a100-1").await.get("power-profile").is_none());
    assert_eq!(
        h.labels("gpu-a100-1").await["accelerator.example.com/gpu-family"],
        "a100",
        "other labels kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_taint_add_and_remove() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    k.ok(&[
        "taint",
        "nodes",
        "gpu-a100-1",
        "dedicated=llm-online:NoSchedule",
    ])
    .await;
    let taints = h.node("gpu-a100-1").await["spec"]["taints"].clone();
    assert_eq!(
        taints,
        serde_json::json!([{"key": "dedicated", "value": "llm-online", "effect": "NoSchedule"}])
    );
    k.ok(&["taint", "nodes", "gpu-a100-1", "dedicated:NoSchedule-"])
        .await;
    assert!(h.node("gpu-a100-1").await["spec"].get("taints").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_taint_removal_ignores_the_value() {
    // The behaviour placekit's `gpu-taint release` must not copy: kubectl removes a taint
    // with the same key and effect whatever its value.
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    k.ok(&[
        "taint",
        "nodes",
        "gpu-h100-1",
        "dedicated=llm-online:NoSchedule-",
    ])
    .await;
    assert!(
        h.node("gpu-h100-1").await["spec"].get("taints").is_none(),
        "dedicated=batch was removed too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_field_selector_over_all_namespaces() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    let out = k
        .ok(&[
            "get",
            "pods",
            "-A",
            "--field-selector",
            "spec.nodeName=gpu-a100-1",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out, "pod/llm-inference-0\n");
    let bad = k
        .run(&["get", "pods", "-A", "--field-selector", "spec.foo=x"])
        .await;
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("field label not supported: spec.foo"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_can_i_follows_the_user_table() {
    let Some(h) = setup().await else {
        return;
    };
    let admin = Kubectl::new(&h, "admin");
    let viewer = Kubectl::new(&h, "viewer");
    assert_eq!(
        admin.ok(&["auth", "can-i", "patch", "nodes"]).await.trim(),
        "yes"
    );
    let no = viewer.run(&["auth", "can-i", "patch", "nodes"]).await;
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "no");
    assert_eq!(no.status.code(), Some(1));
    assert_eq!(
        viewer.ok(&["auth", "can-i", "list", "nodes"]).await.trim(),
        "yes"
    );
    let denied = viewer.run(&["label", "node", "gpu-a100-1", "x=y"]).await;
    assert!(String::from_utf8_lossy(&denied.stderr).contains(
        "nodes \"gpu-a100-1\" is forbidden: User \"viewer\" cannot patch resource \"nodes\" in API group \"\" at the cluster scope"
    ));
    assert!(h.labels("gpu-a100-1").await.get("x").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_bad_label_key_gets_the_api_server_message() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    let out = k.run(&["label", "node", "gpu-a100-1", "a/b/c=x"]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(
        "The Node \"gpu-a100-1\" is invalid: metadata.labels: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    ), "{stderr}");
}

/// `kubectl create` and `apply` validate by default: they find the `fieldValidation`
/// parameter in the server's OpenAPI v3 documents and leave unknown fields to the server,
/// which refuses them (`Strict`) or warns and drops them (`--validate=warn`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_and_apply_leave_field_validation_to_the_server() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    let file = h.dir.path().join("cm.yaml");
    let manifest = |data: &str, extra: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kubectl-fields\n  namespace: default\ndata:\n  a: {data}\n{extra}"
        )
    };
    k.run(&[
        "delete",
        "configmap",
        "kubectl-fields",
        "--ignore-not-found",
    ])
    .await;

    std::fs::write(&file, manifest("b", "bogus: 1\n")).unwrap();
    let path = file.to_str().unwrap();
    let out = k.run(&["create", "-f", path]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\""
        ),
        "{stderr}"
    );

    let out = k.run(&["create", "-f", path, "--validate=warn"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr, "Warning: unknown field \"bogus\"\n");
    let stored = k
        .ok(&["get", "configmap", "kubectl-fields", "-o", "json"])
        .await;
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert!(stored.get("bogus").is_none(), "{stored}");

    std::fs::write(&file, manifest("c", "")).unwrap();
    assert_eq!(
        k.ok(&["apply", "-f", path]).await,
        "configmap/kubectl-fields configured\n"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "configmap",
            "kubectl-fields",
            "-o",
            "jsonpath={.data.a}"
        ])
        .await,
        "c"
    );
    k.ok(&["delete", "configmap", "kubectl-fields"]).await;
}

/// `kubectl wait` lists, then watches from the list's resourceVersion until the condition
/// holds: the label set while it waits ends the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_wait_follows_a_watch_until_the_condition_holds() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    k.run(&["label", "node", "gpu-a100-1", "kubectl-wait-"])
        .await;
    let waiting = {
        let mut cmd = Command::new("kubectl");
        cmd.args([
            "wait",
            "--for=jsonpath={.metadata.labels.kubectl-wait}=ready",
            "node/gpu-a100-1",
            "--timeout=30s",
        ])
        .env("KUBECONFIG", &k.kubeconfig)
        .env("KUBECACHEDIR", &k.cache);
        tokio::task::spawn_blocking(move || cmd.bounded_output().expect("kubectl runs"))
    };
    // The wait has listed and is watching by then; a label set before the watch starts is
    // seen by the list, which would pass without a watch.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    k.ok(&["label", "node", "gpu-a100-1", "kubectl-wait=ready"])
        .await;
    let out = waiting.await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "node/gpu-a100-1 condition met\n"
    );
    k.ok(&["label", "node", "gpu-a100-1", "kubectl-wait-"])
        .await;
}

/// `kubectl get -w` prints the object, then each change the watch reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_watch_prints_each_change() {
    use std::io::BufRead as _;
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    k.run(&["label", "node", "gpu-a100-2", "kubectl-watch-"])
        .await;
    let mut child = Command::new("kubectl")
        .args([
            "get",
            "node",
            "gpu-a100-2",
            "--watch",
            "-o",
            "custom-columns=NAME:.metadata.name,WATCH:.metadata.labels.kubectl-watch",
        ])
        .env("KUBECONFIG", &k.kubeconfig)
        .env("KUBECACHEDIR", &k.cache)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                return;
            }
        }
    });
    let next = || rx.recv_timeout(std::time::Duration::from_secs(20));
    assert_eq!(
        next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["NAME", "WATCH"]
    );
    assert_eq!(
        next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["gpu-a100-2", "<none>"]
    );
    for value in ["one", "two"] {
        k.ok(&[
            "label",
            "node",
            "gpu-a100-2",
            &format!("kubectl-watch={value}"),
            "--overwrite",
        ])
        .await;
        let line = next();
        assert_eq!(
            line.as_deref()
                .map(|l| l.split_whitespace().collect::<Vec<_>>()),
            Ok(vec!["gpu-a100-2", value]),
            "stderr: {}",
            {
                let _ = child.kill();
                let mut err = String::new();
                let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
                err
            }
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    k.ok(&["label", "node", "gpu-a100-2", "kubectl-watch-"])
        .await;
}

/// `kubectl api-resources` lists what a cluster serves with its verbs (watch included),
/// `describe node` reads the node's lease from the coordination API, and `get all` finds
/// the `kubernetes` service by its category.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_discovery_leases_and_categories() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    let names = k.ok(&["api-resources", "-o", "name"]).await;
    for resource in [
        "nodes",
        "pods",
        "services",
        "leases.coordination.k8s.io",
        "customresourcedefinitions.apiextensions.k8s.io",
        "deployments.apps",
    ] {
        assert!(names.lines().any(|l| l == resource), "{resource}: {names}");
    }
    let watchable = k
        .ok(&[
            "api-resources",
            "--verbs=watch,deletecollection",
            "-o",
            "name",
        ])
        .await;
    assert!(watchable.lines().any(|l| l == "nodes"), "{watchable}");
    let describe = k.ok(&["describe", "node", "gpu-a100-1"]).await;
    assert!(
        describe.contains(
            "Lease:              Failed to get lease: leases.coordination.k8s.io \"gpu-a100-1\" not found"
        ),
        "{describe}"
    );
    let all = k.ok(&["get", "all", "-n", "default", "-o", "name"]).await;
    assert!(all.lines().any(|l| l == "service/kubernetes"), "{all}");
}

/// `kubectl apply --server-side`: the server creates, merges, drops what the manager stops
/// applying, and refuses a field another manager changed until `--force-conflicts`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_apply_owns_fields_and_reports_conflicts() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    let file = h.dir.path().join("ssa.yaml");
    let path = file.to_str().unwrap();
    let write = |data: &str| {
        std::fs::write(
            &file,
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kubectl-ssa\n  namespace: default\ndata:\n{data}"),
        )
        .unwrap()
    };
    k.run(&["delete", "configmap", "kubectl-ssa", "--ignore-not-found"])
        .await;
    let data = || async {
        k.ok(&["get", "configmap", "kubectl-ssa", "-o", "jsonpath={.data}"])
            .await
    };
    write("  a: \"1\"\n  b: \"2\"\n");
    assert_eq!(
        k.ok(&["apply", "--server-side", "-f", path]).await,
        "configmap/kubectl-ssa serverside-applied\n"
    );
    write("  a: \"1\"\n  c: \"3\"\n");
    k.ok(&["apply", "--server-side", "-f", path]).await;
    assert_eq!(data().await, r#"{"a":"1","c":"3"}"#);
    k.ok(&[
        "patch",
        "configmap",
        "kubectl-ssa",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"edited"}}"#,
    ])
    .await;
    let out = k.run(&["apply", "--server-side", "-f", path]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.starts_with(
            "error: Apply failed with 1 conflict: conflict with \"kubectl-patch\" using v1: .data.a\n"
        ),
        "{stderr}"
    );
    assert_eq!(data().await, r#"{"a":"edited","c":"3"}"#);
    k.ok(&["apply", "--server-side", "--force-conflicts", "-f", path])
        .await;
    assert_eq!(data().await, r#"{"a":"1","c":"3"}"#);
    k.ok(&["delete", "configmap", "kubectl-ssa"]).await;
}

/// kubectl's generators send protobuf: `kubectl create configmap|deployment|service|job|
/// cronjob|pdb` and `kubectl run` create what they say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_generators_and_run_create_their_objects() {
    let Some(h) = setup().await else {
        return;
    };
    let k = Kubectl::new(&h, "admin");
    let objects = [
        "configmap/gen-cm",
        "deployment/gen-deploy",
        "service/gen-svc",
        "pod/gen-pod",
        "job/gen-job",
        "cronjob/gen-cron",
        "pdb/gen-pdb",
    ];
    for o in objects {
        k.run(&["delete", o, "--ignore-not-found", "--wait=false"])
            .await;
    }
    let created = [
        k.ok(&[
            "create",
            "configmap",
            "gen-cm",
            "--from-literal=a=b",
            "--from-literal=x=y",
        ])
        .await,
        k.ok(&[
            "create",
            "deployment",
            "gen-deploy",
            "--image=registry.example.com/llm:1",
            "--replicas=2",
            "--port=8080",
        ])
        .await,
        k.ok(&["create", "service", "clusterip", "gen-svc", "--tcp=80:8080"])
            .await,
        k.ok(&[
            "run",
            "gen-pod",
            "--image=busybox",
            "--labels=app=gen",
            "--restart=Never",
            "--env=A=1",
            "--",
            "sleep",
            "10",
        ])
        .await,
        k.ok(&[
            "create",
            "job",
            "gen-job",
            "--image=busybox",
            "--",
            "echo",
            "hi",
        ])
        .await,
        k.ok(&[
            "create",
            "cronjob",
            "gen-cron",
            "--image=busybox",
            "--schedule=*/5 * * * *",
        ])
        .await,
        k.ok(&[
            "create",
            "pdb",
            "gen-pdb",
            "--selector=app=gen",
            "--min-available=50%",
        ])
        .await,
    ];
    assert_eq!(
        created.concat(),
        "configmap/gen-cm created\ndeployment.apps/gen-deploy created\nservice/gen-svc created\n\
         pod/gen-pod created\njob.batch/gen-job created\ncronjob.batch/gen-cron created\n\
         poddisruptionbudget.policy/gen-pdb created\n"
    );
    let get = |o: &'static str, path: &'static str| {
        let k = &k;
        async move { k.ok(&["get", o, "-o", &format!("jsonpath={path}")]).await }
    };
    assert_eq!(
        get("configmap/gen-cm", "{.data}").await,
        r#"{"a":"b","x":"y"}"#
    );
    assert_eq!(
        get("deployment/gen-deploy", "{.spec.replicas} {.spec.selector.matchLabels.app} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}").await,
        "2 gen-deploy registry.example.com/llm:1 8080"
    );
    assert_eq!(
        get(
            "service/gen-svc",
            "{.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.ports[0].name} {.spec.type}"
        )
        .await,
        "80 8080 80-8080 ClusterIP"
    );
    assert_eq!(
        get("pod/gen-pod", "{.spec.containers[0].args} {.spec.containers[0].env[0].value} {.spec.restartPolicy} {.metadata.labels.app}").await,
        r#"["sleep","10"] 1 Never gen"#
    );
    assert_eq!(
        get("job/gen-job", "{.spec.template.spec.containers[0].command}").await,
        r#"["echo","hi"]"#
    );
    assert_eq!(
        get("cronjob/gen-cron", "{.spec.schedule}").await,
        "*/5 * * * *"
    );
    assert_eq!(
        get(
            "pdb/gen-pdb",
            "{.spec.minAvailable} {.spec.selector.matchLabels.app}"
        )
        .await,
        "50% gen"
    );
    for o in objects {
        k.run(&[
            "delete",
            o,
            "--ignore-not-found",
            "--wait=false",
            "--grace-period=0",
            "--force",
        ])
        .await;
    }
}

/// The operators' real CRDs (`../shared/crds`: Kueue, Karpenter, NFD, the GPU operator, the
/// NVIDIA DRA driver, Trainer, Volcano, Slinky, KServe, JobSet, LeaderWorkerSet, KubeRay)
/// install on the real control plane as their users install them and become Established,
/// and the API server prunes by their schemas: a Kueue ResourceFlavor keeps its
/// `spec.nodeLabels` and loses a field written at a path the schema does not know. The
/// ground the checks of objects selecting nodes outside any pod stand on.
#[test]
fn the_operators_crds_install_and_prune_on_the_real_control_plane() {
    use placekit_testserver::real_cluster::{E2E_KUBECONFIG, real_cluster_for};
    let suite = "the operators' CRDs on the real control plane";
    let Some(kubeconfig) = real_cluster_for(suite, E2E_KUBECONFIG) else {
        return;
    };
    let Some(crds) = placekit_testserver::require::shared_crds(suite) else {
        return;
    };
    if !kubectl_available() {
        return;
    }
    let kubectl = |args: &[&str]| {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .bounded_output()
            .expect("kubectl runs");
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dir = crds.to_str().expect("a UTF-8 path");
    placekit_testserver::crds::Kubectl::new(&kubeconfig).install_crd_paths(&[dir.to_string()]);
    let files = std::fs::read_dir(&crds)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "yaml")
        })
        .count();
    let established = kubectl(&["get", "-f", dir, "-o", "name"]).lines().count();
    assert!(
        established >= files,
        "{established} CRDs from {files} files"
    );

    let flavor = r#"{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "placekit-crd-check"},
        "spec": {"nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                 "nodeSelector": {"pruned": "because the schema does not know it"}}}"#;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), flavor).unwrap();
    let path = file.path().to_str().unwrap();
    // Without client or strict server validation, as a controller's client writes: the API
    // server prunes what the schema does not know instead of refusing it.
    kubectl(&["create", "--validate=false", "-f", path]);
    let stored: serde_json::Value = serde_json::from_str(&kubectl(&[
        "get",
        "resourceflavors.kueue.x-k8s.io",
        "placekit-crd-check",
        "-o",
        "json",
    ]))
    .unwrap();
    kubectl(&["delete", "-f", path]);
    assert_eq!(
        stored["spec"]["nodeLabels"]["nvidia.com/gpu.product"],
        "NVIDIA-H100-80GB-HBM3"
    );
    assert!(
        stored["spec"].get("nodeSelector").is_none(),
        "a field the schema does not know was kept: {}",
        stored["spec"]
    );
}

/// `-o jsonpath=…` and `-o custom-columns=…` render as kubectl's do on the same JSON: the
/// nodes of the real control plane as `kubectl get nodes -o json` gives them, through the
/// renderer every placekit report uses, against `kubectl get nodes -o jsonpath=…` and
/// `-o custom-columns=…` (cells compared; kubectl pads its columns with three spaces, placekit
/// with two, as its other tables).
#[test]
fn jsonpath_and_custom_columns_render_as_kubectls_on_the_same_json() {
    use placekit_cli::ui::{OutputFormat, Ui};
    use placekit_core::jsonpath;
    use placekit_testserver::real_cluster::{E2E_KUBECONFIG, real_cluster_for};
    let suite = "-o jsonpath and custom-columns against kubectl's";
    let Some(kubeconfig) = real_cluster_for(suite, E2E_KUBECONFIG) else {
        return;
    };
    if !kubectl_available() {
        return;
    }
    let kubectl = placekit_testserver::crds::Kubectl::new(&kubeconfig);
    let nodes = r#"{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "pk-jsonpath-a",
          "labels": {"kubernetes.io/hostname": "pk-jsonpath-a", "pool": "online",
                     "topology.kubernetes.io/zone": "zone-a"}},
         "spec": {"taints": [{"key": "dedicated", "value": "llm", "effect": "NoSchedule"}]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "pk-jsonpath-b",
          "labels": {"kubernetes.io/hostname": "pk-jsonpath-b"}}}]}"#;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), nodes).unwrap();
    let path = file.path().to_str().unwrap();
    kubectl.run(&["delete", "-f", path, "--ignore-not-found"]);
    kubectl.must(&["create", "-f", path]);
    let selector = "kubernetes.io/hostname in (pk-jsonpath-a,pk-jsonpath-b)";
    let json: serde_json::Value =
        serde_json::from_str(&kubectl.must(&["get", "nodes", "-l", selector, "-o", "json"]))
            .unwrap();
    let ui = |output: OutputFormat, template: &str| Ui {
        output,
        template: Some(template.to_string()),
        no_headers: false,
        color: false,
        interactive: false,
        progress: false,
    };
    let get = |output: &str| kubectl.must(&["get", "nodes", "-l", selector, "-o", output]);
    let mut differences = Vec::new();
    for template in [
        "{.kind}",
        "{.items[*].metadata.name}",
        "{.items[0].metadata.labels.pool}",
        "{.items[*].metadata.labels['topology.kubernetes.io/zone']}",
        "{.items[*].metadata.labels['topology\\.kubernetes\\.io/zone']}",
        "{.items[*]['metadata.name']}",
        "{.items[*].metadata.labels.topology\\.kubernetes\\.io/zone}",
        "{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.taints[0].key}{\"\\n\"}{end}",
        "{.items[*].spec.taints[*].effect}",
        "{.items[1].spec}",
        "{.items[0].metadata.labels}",
    ] {
        let theirs = get(&format!("jsonpath={template}"));
        let ours = ui(OutputFormat::JsonPath, template).render_structured(&json);
        if theirs != ours {
            differences.push(format!(
                "jsonpath={template}\n kubectl: {theirs:?}\n placekit: {ours:?}"
            ));
        }
    }
    // An index past an array's end is kubectl's error (exit 1, nothing printed); a missing
    // field is not.
    for template in [
        "{.items[5].metadata.name}",
        "{.items[0].spec.taints[3].key}",
    ] {
        let (ok, out, err) = kubectl.run(&[
            "get",
            "nodes",
            "-l",
            selector,
            "-o",
            &format!("jsonpath={template}"),
        ]);
        let ours = jsonpath::Template::parse(template).unwrap().render(&json);
        if ok || !out.is_empty() || !err.contains("array index out of bounds") || ours.is_ok() {
            differences.push(format!(
                "jsonpath={template}\n kubectl: {ok} {out:?} {err:?}\n placekit: {ours:?}"
            ));
        }
    }
    let cells = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect()
    };
    for spec in [
        "NAME:.metadata.name,POOL:.metadata.labels.pool",
        "NAME:.metadata.name,TAINT:.spec.taints[0].key,ZONE:.metadata.labels.topology\\.kubernetes\\.io/zone",
        "NAME:.metadata.name,EFFECTS:.spec.taints[*].effect",
    ] {
        let theirs = get(&format!("custom-columns={spec}"));
        let ours = ui(OutputFormat::CustomColumns, spec).render_structured(&json);
        if cells(&theirs) != cells(&ours) {
            differences.push(format!(
                "custom-columns={spec}\n kubectl: {theirs:?}\n placekit: {ours:?}"
            ));
        }
    }
    kubectl.run(&["delete", "-f", path, "--ignore-not-found"]);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
