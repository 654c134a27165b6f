//! kubectl's scripting output on `gpu-taint status`: `--no-headers` prints one row a node
//! (no header, no TOTAL footer), `-o name` the nodes, `-o jsonpath` and `-o custom-columns`
//! what the template asks of the `placekit.dev/v1` report.

use std::process::Command;

use placekit_testserver::process::Bounded as _;
use placekit_testserver::{ADMIN_TOKEN, DEMO_FIXTURE, ServerConfig, TestServer};

/// The demo cluster and an admin kubeconfig for it (kept in the returned directory).
async fn demo() -> (TestServer, tempfile::TempDir, std::path::PathBuf) {
    let server = TestServer::start(ServerConfig::default().with_fixture_yaml(DEMO_FIXTURE))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = server
        .write_kubeconfig(&dir.path().join("kubeconfig"), ADMIN_TOKEN)
        .unwrap();
    (server, dir, kubeconfig)
}

/// `gpu-taint status ARGS` against `kubeconfig`: (exit code, stdout, stderr).
fn status(kubeconfig: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    tokio::task::block_in_place(|| {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("status")
            .args(args)
            .env("NO_COLOR", "1")
            .bounded_output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_prints_what_scripts_ask_for() {
    let (_server, _dir, kubeconfig) = demo().await;
    let run = |args: &[&str]| {
        let (code, out, err) = status(&kubeconfig, args);
        assert_eq!(code, 0, "{err}");
        out
    };
    let rows = run(&["--no-headers"]);
    assert_eq!(rows.lines().count(), 5, "{rows}");
    assert!(
        !rows.contains("TOTAL") && !rows.contains("ALLOCATABLE"),
        "{rows}"
    );
    assert!(rows.starts_with("cpu-1 "), "{rows}");
    assert_eq!(
        run(&["-o", "name"]),
        "node/cpu-1\nnode/gpu-a100-1\nnode/gpu-a100-2\nnode/gpu-a100-3\nnode/gpu-h100-1\n"
    );
    // --by namespace lists namespaces, --by pod pods.
    assert_eq!(
        run(&["--by", "namespace", "-o", "name"]),
        "namespace/batch\nnamespace/ml\n"
    );
    assert!(
        run(&["--by", "pod", "-o", "name"]).starts_with("pod/"),
        "pods by name"
    );
    assert_eq!(
        run(&[
            "-o",
            "jsonpath={range .nodes[*]}{.name}{\"\\t\"}{.free}{\"\\n\"}{end}"
        ]),
        "cpu-1\t0\ngpu-a100-1\t2\ngpu-a100-2\t0\ngpu-a100-3\t8\ngpu-h100-1\t4\n"
    );
    assert_eq!(
        run(&["-o", "custom-columns=NODE:.name,FREE:.free", "--no-headers"]),
        "cpu-1       0\ngpu-a100-1  2\ngpu-a100-2  0\ngpu-a100-3  8\ngpu-h100-1  4\n"
    );
}

/// `-v=6` prints each request as kubectl does (verb, URL, status, time) on stderr, never
/// the token; without it, nothing; 7 adds the request's headers, 8 the answers' headers and
/// bodies (cut at 1,024 characters), 10 the whole bodies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbosity_six_logs_each_request() {
    let (server, _dir, kubeconfig) = demo().await;
    let stderr = |extra: &[&str]| {
        tokio::task::block_in_place(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .arg("status")
                .args(extra)
                .bounded_output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0));
            String::from_utf8_lossy(&out.stderr).into_owned()
        })
    };
    let log = stderr(&["-v=6"]);
    let nodes = format!("I GET {}/api/v1/nodes?limit=", server.url());
    assert!(
        log.lines()
            .any(|l| l.starts_with(&nodes) && l.contains(" 200 in ")),
        "{log}"
    );
    assert!(
        log.lines().filter(|l| l.starts_with("I GET ")).count() >= 3,
        "{log}"
    );
    assert!(!log.contains(ADMIN_TOKEN), "{log}");
    assert_eq!(stderr(&[]), "");

    // 7: each request's headers, the credentials' scheme only.
    let log = stderr(&["-v=7"]);
    assert!(log.contains("I Request Headers:"), "{log}");
    assert!(
        log.contains("I     authorization: Bearer <masked>"),
        "{log}"
    );
    assert!(log.contains("I Response Status: 200 in "), "{log}");
    assert!(!log.contains("Response Body"), "{log}");
    assert!(!log.contains(ADMIN_TOKEN), "{log}");
    // 8: the answers' headers and bodies, cut at 1,024 characters as kubectl cuts them; the
    // node list comes in protobuf, shown as client-go shows it: a hex dump.
    let log = stderr(&["-v=8"]);
    let dump = |log: &str| -> String {
        let start = log
            .find("I Response Body: \n00000000  6b 38 73 00 0a 0e 0a 02  76 31 12 08 4e 6f 64 65  |k8s.....v1..Node|")
            .unwrap_or_else(|| panic!("{log}"));
        log[start..]
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("I "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let nodes_body = dump(&log);
    assert_eq!(nodes_body.lines().count(), 64 + 1, "{nodes_body}");
    assert!(nodes_body.ends_with(" bytes]"), "{nodes_body}");
    assert!(
        log.contains("I     content-type: application/vnd.kubernetes.protobuf"),
        "{log}"
    );
    assert!(
        log.contains("I     content-type: application/json"),
        "{log}"
    );
    assert!(!log.contains(ADMIN_TOKEN), "{log}");
    // 10: whole.
    let log = stderr(&["-v=10"]);
    let nodes_body = dump(&log);
    assert!(!nodes_body.contains("[truncated"), "{nodes_body}");
    assert!(nodes_body.lines().count() > 64, "{nodes_body}");
    drop(server);
}

/// `--sort-by` orders the nodes by a field of their JSON, `--free-only` keeps the nodes with
/// a free accelerator, `--group-by LABEL` groups them with each group's totals; a key no node
/// has, and these flags with `--by`, are refused (exit 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_sorts_filters_and_groups_nodes() {
    let (_server, _dir, kubeconfig) = demo().await;
    let run = |args: &[&str]| status(&kubeconfig, args);
    let (code, out, err) = run(&["--sort-by", "{.free}", "--free-only", "-o", "name"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "node/gpu-a100-1\nnode/gpu-h100-1\nnode/gpu-a100-3\n");
    let (code, out, err) = run(&[
        "--group-by",
        "topology.kubernetes.io/zone",
        "--free-only",
        "--sort-by",
        ".name",
    ]);
    assert_eq!(code, 0, "{err}");
    let firsts: Vec<&str> = out
        .lines()
        .map(|l| l.split("  ").next().unwrap_or_default())
        .collect();
    assert_eq!(
        firsts,
        [
            "NAME",
            "gpu-a100-1",
            "gpu-h100-1",
            "TOTAL topology.kubernetes.io/zone=zone-a (2 nodes)",
            "gpu-a100-3",
            "TOTAL topology.kubernetes.io/zone=zone-c (1 node)",
            "TOTAL (3 nodes)",
        ],
        "{out}"
    );
    let zone_a = out.lines().nth(3).unwrap();
    assert_eq!(
        zone_a.split_whitespace().collect::<Vec<_>>()[4..9],
        ["nvidia.com/gpu", "16", "16", "10", "6"],
        "{zone_a}"
    );
    let (code, out, err) = run(&["--group-by", "topology.kubernetes.io/zone", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["groupBy"], "topology.kubernetes.io/zone");
    assert_eq!(report["groups"][0]["value"], "zone-a");
    assert_eq!(report["groups"][0]["nodes"], 2);
    assert_eq!(report["groups"][0]["byResource"][0]["free"], 6);
    let (code, _, err) = run(&["--sort-by", ".nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--sort-by .nope: no node has that field"),
        "{err}"
    );
    let (code, _, err) = run(&["--by", "namespace", "--group-by", "pool"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--group-by"), "{err}");
    // Columns of the node table are refused, not ignored, on the namespace and pod tables.
    for (args, flag) in [
        (&["-n", "ml", "-L", "pool"][..], "-L/--label-columns"),
        (&["--by", "namespace", "-o", "wide"][..], "-o wide"),
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(flag), "{err}");
    }
}

/// The k9s plugins file (`examples/k9s/plugins.yaml`): each entry has what k9s requires, and
/// its command, run as k9s runs it (its `sh -c` line with the selected object's NAME,
/// NAMESPACE and CONTEXT, the three plugins found by kubectl on PATH, `less` as a pager that
/// prints), shows what it promises.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k9s_plugins_run_the_commands_they_promise() {
    if !placekit_testserver::require::kubectl("the k9s plugins file") {
        return;
    }
    let (_server, dir, kubeconfig) = demo().await;
    let file = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/k9s/plugins.yaml"
    ))
    .unwrap();
    let plugins: serde_json::Value = serde_yaml::from_str(&file).unwrap();
    let plugins = plugins["plugins"].as_object().expect("a plugins: map");
    // kubectl finds the plugins on PATH; `less` prints what it is given.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let built = std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"));
    for name in [
        "kubectl-gpu_taint",
        "kubectl-nodelabel",
        "kubectl-affinity_lint",
    ] {
        let target = built.with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        assert!(
            target.exists(),
            "{} is not built (cargo build --workspace)",
            target.display()
        );
        std::os::unix::fs::symlink(&target, bin.join(name)).unwrap();
    }
    let less = bin.join("less");
    std::fs::write(&less, "#!/bin/sh\nexec cat\n").unwrap();
    std::fs::set_permissions(&less, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let context: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&kubeconfig).unwrap()).unwrap();
    let context = context["current-context"].as_str().unwrap().to_string();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut shown = std::collections::BTreeMap::new();
    for (id, plugin) in plugins {
        for required in ["shortCut", "description", "scopes", "command"] {
            assert!(plugin.get(required).is_some(), "{id}: no {required}");
        }
        let scope = plugin["scopes"][0].as_str().unwrap();
        let (name, namespace) = match scope {
            "nodes" => ("gpu-a100-1", ""),
            "pods" => ("llm-inference-0", "ml"),
            other => panic!("{id}: scope {other} has no test object"),
        };
        let args: Vec<String> = plugin["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let out = tokio::task::block_in_place(|| {
            Command::new(plugin["command"].as_str().unwrap())
                .args(&args)
                .env("PATH", &path)
                .env("KUBECONFIG", &kubeconfig)
                .env("NAME", name)
                .env("NAMESPACE", namespace)
                .env("CONTEXT", &context)
                .env("NO_COLOR", "1")
                .bounded_output()
                .unwrap()
        });
        assert_eq!(out.status.code(), Some(0), "{id}: {out:?}");
        shown.insert(
            id.clone(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        );
    }
    assert!(
        shown["placekit-gpu-status"]
            .lines()
            .any(|l| l.starts_with("gpu-a100-1") && l.contains("nvidia.com/gpu")),
        "{shown:#?}"
    );
    assert!(
        shown["placekit-label-owners"].contains("kubernetes.io/hostname"),
        "{shown:#?}"
    );
    assert!(
        shown["placekit-why-pending"].contains("pod ml/llm-inference-0 is Pending"),
        "{shown:#?}"
    );
}

/// A selector that matches no node is an empty report in JSON, as `kubectl get nodes -l …
/// -o json` prints an empty List, so a script reads "no nodes" rather than nothing; the
/// table says it on stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_matching_node_is_an_empty_report() {
    let (_server, _dir, kubeconfig) = demo().await;
    let (code, out, err) =
        tokio::task::block_in_place(|| status(&kubeconfig, &["-l", "pool=nope", "-o", "json"]));
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["kind"], "GpuInventory");
    assert_eq!(report["nodes"], serde_json::json!([]));
    assert_eq!(report["totals"]["nodes"], 0);
    let (code, out, err) =
        tokio::task::block_in_place(|| status(&kubeconfig, &["-l", "pool=nope"]));
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(
        err.contains("No nodes found matching -l pool=nope"),
        "{err}"
    );
}
