//! Cluster access as kubectl (client-go) has it: `$KUBECONFIG` files that do not exist are
//! skipped, a pod's service account is used when there is no kubeconfig, and the access
//! flags (`--server`, `--token`, `--certificate-authority`, `--insecure-skip-tls-verify`,
//! `--tls-server-name`, `--as`...) reach a cluster without any kubeconfig and override
//! the one there is. Each run is the installed binary with a scratch `HOME`, so nothing of
//! the machine's own configuration takes part.

use std::path::Path;
use std::process::Command;

use placekit_testserver::process::Bounded as _;
use placekit_testserver::{
    ADMIN_TOKEN, DEMO_FIXTURE, READONLY_TOKEN, ServerConfig, TestServer, kubeconfig_yaml,
};

/// Runs `kubectl-nodelabel` with only `env` of the caller's environment beyond `PATH`.
fn run(home: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    run_plugin(
        Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel")),
        home,
        env,
        args,
    )
}

/// The real control plane's kubeconfig, when `suite` runs here (kubectl on PATH too).
fn real_control_plane(suite: &str) -> Option<std::path::PathBuf> {
    use placekit_testserver::real_cluster::{E2E_KUBECONFIG, real_cluster_for};
    let kubeconfig = real_cluster_for(suite, E2E_KUBECONFIG)?;
    placekit_testserver::require::kubectl(suite).then_some(kubeconfig)
}

/// Runs the plugin `binary` as [`run`] does.
fn run_plugin(
    binary: &Path,
    home: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> (i32, String, String) {
    let mut command = Command::new(binary);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env("PLACEKIT_STATE_DIR", home.join("state"));
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.bounded_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn demo() -> TestServer {
    TestServer::start(ServerConfig {
        tls: true,
        ..ServerConfig::default().with_fixture_yaml(DEMO_FIXTURE)
    })
    .await
    .unwrap()
}

/// The server's CA written where a `--certificate-authority` can name it.
fn ca_file(server: &TestServer, dir: &Path) -> std::path::PathBuf {
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, server.ca_pem().unwrap()).unwrap();
    ca
}

const DEPENDENTS: [&str; 3] = ["dependents", "accelerator.example.com/gpu-family", "-A"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_files_that_do_not_exist_are_skipped_like_client_go() {
    let server = demo().await;
    let home = tempfile::tempdir().unwrap();
    let real = home.path().join("real.kubeconfig");
    server.write_kubeconfig(&real, ADMIN_TOKEN).unwrap();
    let missing = home.path().join("gone.kubeconfig");
    let list = format!("{}:{}", missing.display(), real.display());
    let (code, out, err) = tokio::task::block_in_place(|| {
        run(home.path(), &[("KUBECONFIG", list.as_str())], &DEPENDENTS)
    });
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Deployment  llm-inference"), "{out}");

    // Only missing files, no ~/.kube/config, not in a pod: a usage error that says so.
    let only_missing = missing.display().to_string();
    let (code, out, err) = tokio::task::block_in_place(|| {
        run(
            home.path(),
            &[("KUBECONFIG", only_missing.as_str())],
            &DEPENDENTS,
        )
    });
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("no configuration"), "{err}");

    // `--kubeconfig` naming a missing file stays an error, as kubectl has it.
    let (code, _, err) = tokio::task::block_in_place(|| {
        run(
            home.path(),
            &[],
            &["--kubeconfig", only_missing.as_str(), "dependents", "pool"],
        )
    });
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no such file"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_service_account_is_used_without_a_kubeconfig() {
    let server = demo().await;
    let home = tempfile::tempdir().unwrap();
    let account = home.path().join("serviceaccount");
    std::fs::create_dir_all(&account).unwrap();
    std::fs::write(account.join("token"), ADMIN_TOKEN).unwrap();
    std::fs::write(account.join("ca.crt"), server.ca_pem().unwrap()).unwrap();
    std::fs::write(account.join("namespace"), "ml").unwrap();
    let port = server.address().port().to_string();
    let account_dir = account.display().to_string();
    let env = [
        ("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
        ("KUBERNETES_SERVICE_PORT", port.as_str()),
        ("PLACEKIT_TEST_SERVICEACCOUNT_DIR", account_dir.as_str()),
    ];
    // The namespace of the service account scopes a namespaced read, as in kubectl.
    let (code, out, err) = tokio::task::block_in_place(|| {
        run(
            home.path(),
            &env,
            &["dependents", "accelerator.example.com/gpu-family"],
        )
    });
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("llm-inference"), "{out}");

    // A token the server does not know: the service account is what was used.
    std::fs::write(account.join("token"), "not-a-token").unwrap();
    let (code, out, err) = tokio::task::block_in_place(|| run(home.path(), &env, &DEPENDENTS));
    assert_eq!(code, 3, "{out}{err}");
    assert!(!err.contains("not-a-token"), "{err}");

    // Without the token file this is not a pod: no configuration.
    std::fs::remove_file(account.join("token")).unwrap();
    let (code, _, err) = tokio::task::block_in_place(|| run(home.path(), &env, &DEPENDENTS));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no configuration"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_flags_reach_a_cluster_without_a_kubeconfig_and_override_one() {
    let server = demo().await;
    let home = tempfile::tempdir().unwrap();
    let ca = ca_file(&server, home.path());
    let url = server.url();
    let ca_path = ca.display().to_string();

    // Flags alone: server, token and CA.
    let flags = |token: &str| {
        vec![
            "--server".to_string(),
            url.clone(),
            "--token".to_string(),
            token.to_string(),
            "--certificate-authority".to_string(),
            ca_path.clone(),
        ]
    };
    let args = |extra: Vec<String>| -> Vec<String> {
        extra
            .into_iter()
            .chain(DEPENDENTS.iter().map(|s| s.to_string()))
            .collect()
    };
    let run_args = |env: &[(&str, &str)], args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tokio::task::block_in_place(|| run(home.path(), env, &args))
    };
    let (code, out, err) = run_args(&[], args(flags(ADMIN_TOKEN)));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Deployment  llm-inference"), "{out}");

    // A wrong token is refused by the server (exit 3) and never shown.
    let (code, out, err) = run_args(&[], args(flags("wrong-token-8c1e")));
    assert_eq!(code, 3, "{out}{err}");
    assert!(!format!("{out}{err}").contains("wrong-token-8c1e"), "{err}");

    // Without the CA the server's certificate is unknown; --insecure-skip-tls-verify
    // accepts it; both together are refused as kubectl refuses them.
    let no_ca = vec![
        "--server".to_string(),
        url.clone(),
        "--token".to_string(),
        ADMIN_TOKEN.to_string(),
    ];
    let (code, _, err) = run_args(&[], args(no_ca.clone()));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("certificate"), "{err}");
    let mut insecure = no_ca.clone();
    insecure.push("--insecure-skip-tls-verify".into());
    let (code, out, err) = run_args(&[], args(insecure.clone()));
    assert_eq!(code, 0, "{out}{err}");
    let mut both = insecure;
    both.extend(["--certificate-authority".to_string(), ca_path.clone()]);
    let (code, _, err) = run_args(&[], args(both));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not allowed"), "{err}");

    // Over a kubeconfig: --token replaces its user's credentials, --server its cluster's
    // address. The kubeconfig's own user is read-only and its server refuses connections.
    let config = home.path().join("config");
    std::fs::write(
        &config,
        kubeconfig_yaml("https://127.0.0.1:1", READONLY_TOKEN, server.ca_pem()),
    )
    .unwrap();
    let kubeconfig = config.display().to_string();
    let env = [("KUBECONFIG", kubeconfig.as_str())];
    let (code, _, err) = run_args(&env, args(vec![]));
    assert_eq!(code, 3, "the kubeconfig's own server refuses: {err}");
    let (code, out, err) = run_args(&env, args(vec!["--server".to_string(), url.clone()]));
    assert_eq!(code, 0, "{out}{err}");

    // --tls-server-name: the certificate is checked against that name instead.
    let (code, _, err) = run_args(
        &env,
        args(vec![
            "--server".to_string(),
            url.clone(),
            "--tls-server-name".to_string(),
            "not-the-server.example".to_string(),
        ]),
    );
    assert_eq!(code, 3, "{err}");

    // --as-group without --as is refused before any request.
    let (code, _, err) = run_args(
        &env,
        args(vec!["--as-group".to_string(), "system:masters".to_string()]),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--as"), "{err}");
}

/// A token given as a flag is a credential: it is not written into the snapshot a change
/// leaves, nor shown in what the command prints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_flag_never_reaches_a_snapshot() {
    let server = demo().await;
    let home = tempfile::tempdir().unwrap();
    let ca = ca_file(&server, home.path());
    let (url, ca) = (server.url(), ca.display().to_string());
    let (code, out, err) = tokio::task::block_in_place(|| {
        run(
            home.path(),
            &[],
            &[
                "--server",
                &url,
                "--token",
                ADMIN_TOKEN,
                "--certificate-authority",
                &ca,
                "set",
                "cpu-1",
                "team=infra",
                "--yes",
            ],
        )
    });
    assert_eq!(code, 0, "{out}{err}");
    let mut snapshots = 0;
    for entry in std::fs::read_dir(home.path().join("state")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(!text.contains(ADMIN_TOKEN), "{}: {text}", path.display());
        snapshots += usize::from(text.contains("\"team\""));
    }
    assert!(snapshots >= 1, "no snapshot of the change was written");
    assert!(!format!("{out}{err}").contains(ADMIN_TOKEN));
}

/// `--as` reaches kube-apiserver as kubectl sends it: the admin impersonating a user with
/// no binding is forbidden (exit 3, the user named), and `--as-group` adds the group the
/// read-only viewer's ClusterRoleBinding names, so the same user reads.
#[test]
fn impersonation_is_judged_by_the_real_api_server() {
    use placekit_testserver::real_cluster::{E2E_KUBECONFIG, real_cluster_for};
    let Some(kubeconfig) =
        real_cluster_for("impersonation on the real control plane", E2E_KUBECONFIG)
    else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig.display().to_string();
    let env = [("KUBECONFIG", kubeconfig.as_str())];
    let as_user = |user: &str, extra: &[&str]| {
        let mut args = vec!["--as", user];
        args.extend_from_slice(extra);
        args.extend_from_slice(&DEPENDENTS);
        run(home.path(), &env, &args)
    };
    let (code, out, err) = as_user("placekit-nobody", &[]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains("placekit-nobody") && err.contains("forbidden"),
        "{err}"
    );
    let (code, out, err) = as_user("placekit-nobody", &["--as-group", "placekit:viewers"]);
    assert_eq!(code, 0, "{out}{err}");
}

const WARN_POLICY: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: placekit-test-warn-label}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["nodes"]}
  validations:
  - expression: "!has(object.metadata.labels) || !('placekit-warn' in object.metadata.labels)"
    message: "placekit-warn is watched by the MIG manager"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: placekit-test-warn-label}
spec:
  policyName: placekit-test-warn-label
  validationActions: [Warn]
---
apiVersion: v1
kind: Node
metadata: {name: placekit-warn-node}
"#;

/// An admission policy in Warn mode answers a label change with a `Warning` header:
/// placekit says it on stderr as kubectl does (`Warning: …`), and `--warnings-as-errors`
/// makes the command exit 1 before anything is written: the patches go to the server with
/// `dryRun=All` first, and its warning stops them there.
#[test]
fn server_warnings_are_shown_and_can_fail_the_command() {
    let suite = "server warnings on the real control plane";
    let Some(kubeconfig) = real_control_plane(suite) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let manifest = home.path().join("policy.yaml");
    std::fs::write(&manifest, WARN_POLICY).unwrap();
    let kubectl = |args: &[&str]| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .bounded_output()
            .unwrap()
    };
    let manifest_path = manifest.display().to_string();
    let applied = kubectl(&["apply", "-f", &manifest_path]);
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let kubeconfig_text = kubeconfig.display().to_string();
    let env = [("KUBECONFIG", kubeconfig_text.as_str())];
    // The policy takes effect once the API server has compiled it.
    let mut warned = None;
    for attempt in 0..40 {
        let label = format!("placekit-warn=v{attempt}");
        let (code, out, err) = run(
            home.path(),
            &env,
            &["set", "placekit-warn-node", &label, "--overwrite", "--yes"],
        );
        assert_eq!(code, 0, "{out}{err}");
        if err.lines().any(|l| {
            l.starts_with("Warning: ") && l.ends_with("placekit-warn is watched by the MIG manager")
        }) {
            warned = Some(attempt);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let warned = warned.expect("the policy's warning never reached stderr");
    let label = format!("placekit-warn=v{}", warned + 100);
    let (code, out, err) = run(
        home.path(),
        &env,
        &[
            "set",
            "placekit-warn-node",
            &label,
            "--overwrite",
            "--yes",
            "--warnings-as-errors",
        ],
    );
    let node = kubectl(&[
        "get",
        "node",
        "placekit-warn-node",
        "-o",
        "jsonpath={.metadata.labels.placekit-warn}",
    ]);
    kubectl(&["delete", "-f", &manifest_path, "--wait=false"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("placekit-warn is watched"), "{err}");
    assert!(err.contains("--warnings-as-errors"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&node.stdout),
        format!("v{warned}"),
        "the server's dry run drew the warning, so the change was not made"
    );
}

/// `--field-manager` names who wrote the labels in the node's managedFields, as kubectl's
/// does (kube-apiserver records it; the test server does not show managedFields); a name the
/// API server or a URL would not take is a usage error before any request.
#[test]
fn the_field_manager_is_the_one_given() {
    let home = tempfile::tempdir().unwrap();
    let (code, _, err) = run(
        home.path(),
        &[],
        &["set", "n", "k=v", "--yes", "--field-manager", "two words"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("field manager"), "{err}");

    use placekit_testserver::real_cluster::{E2E_KUBECONFIG, real_cluster_for};
    let suite = "--field-manager on the real control plane";
    let Some(kubeconfig) = real_cluster_for(suite, E2E_KUBECONFIG) else {
        return;
    };
    if !placekit_testserver::require::kubectl(suite) {
        return;
    }
    let kubectl = |args: &[&str]| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .bounded_output()
            .unwrap()
    };
    let node = home.path().join("node.yaml");
    std::fs::write(
        &node,
        "apiVersion: v1\nkind: Node\nmetadata: {name: placekit-manager-node}\n",
    )
    .unwrap();
    let node = node.display().to_string();
    kubectl(&["apply", "-f", &node]);
    let kubeconfig_text = kubeconfig.display().to_string();
    let env = [("KUBECONFIG", kubeconfig_text.as_str())];
    let (code, out, err) = run(
        home.path(),
        &env,
        &[
            "set",
            "placekit-manager-node",
            "team=infra",
            "--overwrite",
            "--yes",
            "--field-manager=gpu-admins",
        ],
    );
    let managed = kubectl(&[
        "get",
        "node",
        "placekit-manager-node",
        "--show-managed-fields",
        "-o",
        "json",
    ]);
    kubectl(&["delete", "node", "placekit-manager-node", "--wait=false"]);
    assert_eq!(code, 0, "{out}{err}");
    let managed: serde_json::Value = serde_json::from_slice(&managed.stdout).unwrap();
    let owner = managed["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["fieldsV1"]["f:metadata"]["f:labels"]["f:team"].is_object())
        .map(|m| m["manager"].clone());
    assert_eq!(owner, Some(serde_json::json!("gpu-admins")), "{managed}");
}

const CRON_RBAC: &str = r#"apiVersion: v1
kind: Namespace
metadata: {name: pk-cron}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reporter, namespace: pk-cron}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reporter, namespace: pk-cron}
rules:
- apiGroups: ["", "apps", "batch"]
  resources: [pods, deployments, statefulsets, daemonsets, replicasets, jobs, cronjobs]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reporter, namespace: pk-cron}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reporter}
subjects: [{kind: ServiceAccount, name: reporter, namespace: pk-cron}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: pk-cron-nodes}
rules:
- {apiGroups: [""], resources: [nodes], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pk-cron-nodes}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pk-cron-nodes}
subjects: [{kind: ServiceAccount, name: reporter, namespace: pk-cron}]
"#;

const CRON_OBJECTS: &str = r#"apiVersion: v1
kind: Node
metadata: {name: pk-cron-node, labels: {pk-cron/pool: a}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: model, namespace: pk-cron}
spec:
  replicas: 0
  selector: {matchLabels: {app: model}}
  template:
    metadata: {labels: {app: model}}
    spec:
      nodeSelector: {pk-cron/pool: a}
      containers: [{name: c, image: registry.k8s.io/pause:3.10}]
---
apiVersion: v1
kind: Pod
metadata: {name: drifted, namespace: pk-cron}
spec:
  nodeName: pk-cron-node
  nodeSelector: {pk-cron/pool: b}
  containers: [{name: c, image: registry.k8s.io/pause:3.10}]
"#;

/// A CronJob's run, as a pod runs it: no kubeconfig, the service account's token, CA and
/// namespace in the standard files, `KUBERNETES_SERVICE_HOST/PORT` set, against the real
/// control plane, under a ServiceAccount whose Role reads workloads in its own namespace
/// only (and a ClusterRole the nodes). `affinity-lint drift` reads the pod's namespace, as
/// kubectl would, and finds the drifted pod; `nodelabel dependents` (every namespace by
/// default) answers for the namespace it may read and says that is all it read.
#[test]
fn a_cronjob_with_a_namespaced_service_account_gets_answers() {
    let suite = "a CronJob-shaped run on the real control plane";
    let Some(kubeconfig) = real_control_plane(suite) else {
        return;
    };
    let lint =
        Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel")).with_file_name("kubectl-affinity_lint");
    if !lint.is_file() {
        placekit_testserver::require::skip(
            suite,
            placekit_testserver::require::Need::Plugins,
            &format!("{} is not built", lint.display()),
        );
        return;
    }
    let kubectl = placekit_testserver::crds::Kubectl::new(&kubeconfig);
    let home = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = home.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let rbac = write("rbac.yaml", CRON_RBAC);
    let objects = write("objects.yaml", CRON_OBJECTS);
    kubectl.must(&["apply", "-f", &rbac]);
    kubectl.run(&[
        "delete",
        "-f",
        &objects,
        "--ignore-not-found",
        "--grace-period=0",
        "--force",
    ]);
    kubectl.must(&["create", "-f", &objects]);
    // No kubelet here: the pod is marked Running as a kubelet would.
    kubectl.must(&[
        "patch",
        "pod",
        "drifted",
        "-n",
        "pk-cron",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running"}}"#,
    ]);
    let (env, token) = kubectl.in_cluster("pk-cron", "reporter", home.path());
    let server = format!("https://{}:{}", env[0].1, env[1].1);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let (code, out, err) = run_plugin(&lint, home.path(), &env, &["drift"]);
    let (code_all, _, err_all) = run_plugin(&lint, home.path(), &env, &["drift", "-A"]);
    let (dep_code, dep_out, dep_err) = run(home.path(), &env, &["dependents", "pk-cron/pool"]);
    // -v=6 on the real control plane: each request's verb, URL, status and time, no token.
    let (_, _, logged) = run(home.path(), &env, &["dependents", "pk-cron/pool", "-v=6"]);
    let requests: Vec<&str> = logged.lines().filter(|l| l.starts_with("I GET ")).collect();
    kubectl.run(&[
        "delete",
        "-f",
        &objects,
        "--ignore-not-found",
        "--grace-period=0",
        "--force",
    ]);

    assert_eq!(code, 1, "drift finds the pod: {out}{err}");
    assert!(
        out.contains("drifted") && out.contains("pk-cron-node"),
        "{out}"
    );
    assert!(!format!("{out}{err}").contains(token.trim()));
    // Every namespace is what this account may not list: kubectl's answer too.
    assert_eq!(code_all, 3, "{err_all}");
    assert!(err_all.contains("forbidden"), "{err_all}");

    assert!(
        requests.len() >= 3
            && requests
                .iter()
                .all(|l| l.contains(server.trim()) && l.ends_with(" milliseconds")),
        "{logged}"
    );
    assert!(
        requests
            .iter()
            .any(|l| l.contains("/namespaces/pk-cron/pods") && l.contains(" 200 in ")),
        "{logged}"
    );
    assert!(!logged.contains(token.trim()), "{logged}");
    assert_eq!(dep_code, 0, "{dep_out}{dep_err}");
    assert!(
        dep_out.contains("model") && dep_out.contains("drifted"),
        "{dep_out}"
    );
    assert!(
        dep_err.contains("only namespace pk-cron was read"),
        "{dep_err}"
    );
}
