//! `-o openmetrics` across the plugins: `gpu-taint status`, `affinity-lint drift` and
//! `affinity-lint why-pending` on the demo cluster, each exposition checked by Prometheus'
//! own promtool (`check metrics`, built from tests/metrics/go.mod) and read back for the
//! facts the cluster holds: free GPUs per node, a pool node without its pool's dedication
//! taint, pods drifted by a NoExecute taint, pending pods by verdict class and gang.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use placekit_testserver::DEMO_FIXTURE;
use placekit_testserver::harness::{Harness, assert_code, built_plugin};
use placekit_testserver::require;
use serde_json::json;

const SUITE: &str = "the OpenMetrics suite";

/// `promtool check metrics` over `text`: its exit code and what it said.
fn promtool_check(promtool: &Path, text: &str) -> (i32, String) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("promtool ends");
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Runs promtool with `args`; its output when it fails.
fn promtool_ok(promtool: &Path, args: &[&str]) {
    let out = Command::new(promtool)
        .args(args)
        .output()
        .expect("promtool");
    assert!(
        out.status.success(),
        "promtool {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every `placekit_…` family `text` (rules, queries) names is documented in docs/metrics.md.
fn assert_documented(root: &Path, text: &str, what: &str) {
    let documented =
        std::fs::read_to_string(root.join("docs/metrics.md")).expect("docs/metrics.md");
    let named: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("placekit_"))
        .collect();
    assert!(!named.is_empty(), "{what} names no placekit family");
    for family in named {
        assert!(
            documented.contains(&format!("`{family}`")),
            "{family}, in {what}, is not documented in docs/metrics.md"
        );
    }
}

/// The sample lines of `text` for `family` whose labels include every `labels` pair.
fn samples<'a>(text: &'a str, family: &str, labels: &[(&str, &str)]) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")) || l.starts_with(&format!("{family} ")))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_drift_and_why_pending_expose_what_prometheus_reads() {
    let Some(gpu_taint) = built_plugin(SUITE, "kubectl-gpu_taint") else {
        return;
    };
    let Some(affinity_lint) = built_plugin(SUITE, "kubectl-affinity_lint") else {
        return;
    };
    let Some(promtool) = require::promtool(SUITE) else {
        return;
    };
    // The demo's Volcano PodGroup is created once its CRD is served (a real cluster needs
    // it installed first).
    let pod_group = "- apiVersion: scheduling.volcano.sh/v1beta1\n  kind: PodGroup\n  metadata: {name: training, namespace: research}\n  spec: {minMember: 4, queue: default}\n  status: {phase: Pending}\n";
    assert!(
        DEMO_FIXTURE.contains(pod_group),
        "the demo's PodGroup moved"
    );
    let h = Harness::start(
        "gpu-taint",
        &gpu_taint,
        &DEMO_FIXTURE.replace(pod_group, ""),
    )
    .await;
    if h.is_real()
        && let Some((kubectl, crds)) = placekit_testserver::crds::Kubectl::for_suite(SUITE)
    {
        kubectl.install_crds(&crds, &["scheduling.volcano.sh_podgroups.yaml"]);
    }
    h.create(
        json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "training", "namespace": "research"},
        "spec": {"minMember": 4, "queue": "default"}}),
    )
    .await;
    h.install_plugin("affinity-lint", &affinity_lint);
    // Two of the three online nodes dedicated: the third lacks its pool's taint. A
    // NoExecute taint on the H100 node its running pods do not tolerate: they drifted.
    for node in ["gpu-a100-1", "gpu-a100-2"] {
        h.merge_patch(
            "nodes",
            None,
            node,
            &json!({"spec": {"taints": [{"key": "dedicated", "value": "llm", "effect": "NoSchedule"}]}}),
        )
        .await;
    }
    h.merge_patch(
        "nodes",
        None,
        "gpu-h100-1",
        &json!({"spec": {"taints": [{"key": "pk-metrics", "value": "drain", "effect": "NoExecute"}]}}),
    )
    .await;

    let status = h.run(&["status", "-o", "openmetrics"]).await;
    assert_code(&status, 0);
    let drift = h
        .run_plugin("affinity-lint", &["drift", "-A", "-o", "openmetrics"])
        .await;
    assert_code(&drift, 1);
    let pending = h
        .run_plugin("affinity-lint", &["why-pending", "-A", "-o", "openmetrics"])
        .await;
    for (what, run) in [
        ("status", &status),
        ("drift", &drift),
        ("why-pending", &pending),
    ] {
        assert!(run.stdout.ends_with("# EOF\n"), "{what}: {}", run.all());
        let (code, said) = promtool_check(&promtool, &run.stdout);
        assert_eq!(
            code, 0,
            "{what}: promtool check metrics: {said}\n{}",
            run.stdout
        );
    }

    let text = &status.stdout;
    let free = samples(
        text,
        "placekit_node_accelerator_free",
        &[
            ("node", "gpu-a100-3"),
            ("resource", "nvidia.com/gpu"),
            ("form", "whole"),
        ],
    );
    assert_eq!(free.len(), 1, "{text}");
    assert!(free[0].ends_with(" 8"), "{text}");
    let undedicated = samples(
        text,
        "placekit_node_undedicated",
        &[
            ("node", "gpu-a100-3"),
            ("pool", "online"),
            ("taint", "dedicated=llm:NoSchedule"),
        ],
    );
    assert_eq!(undedicated.len(), 1, "{text}");
    assert_eq!(
        samples(
            text,
            "placekit_pool_undedicated_nodes",
            &[("pool", "online")]
        ),
        vec![
            "placekit_pool_undedicated_nodes{pool_label=\"ops.example.com.node-restriction.kubernetes.io/llm-pool\",pool=\"online\"} 1"
        ],
        "{text}"
    );
    assert_eq!(
        samples(text, "placekit_read_up", &[]),
        vec!["placekit_read_up 1"]
    );

    let text = &drift.stdout;
    let drifted = samples(
        text,
        "placekit_drifted_pods",
        &[("node", "gpu-h100-1"), ("reason", "taint")],
    );
    assert!(!drifted.is_empty(), "{text}");
    assert!(!text.contains("pod=\""), "no pod-level series: {text}");

    let text = &pending.stdout;
    assert_eq!(
        samples(
            text,
            "placekit_pending_pods",
            &[("namespace", "ml"), ("class", "affinity")]
        ),
        vec!["placekit_pending_pods{namespace=\"ml\",class=\"affinity\"} 1"],
        "{text}"
    );
    assert!(
        !samples(
            text,
            "placekit_pending_gang_pods",
            &[("gang", "research/training")]
        )
        .is_empty(),
        "{text}"
    );

    // Elsewhere -o openmetrics is refused before any request, naming what gives metrics.
    let refused = h.run(&["history", "-o", "openmetrics"]).await;
    assert_code(&refused, 2);
    assert!(
        refused
            .stderr
            .contains("-o openmetrics: `kubectl gpu-taint history` has no metrics"),
        "{}",
        refused.all()
    );
    // The exporter has metrics, over HTTP: it is told so, not sent elsewhere for them.
    let refused = h.run(&["serve-metrics", "-o", "openmetrics"]).await;
    assert_code(&refused, 2);
    assert!(
        refused.stderr.contains(
            "-o openmetrics: `kubectl gpu-taint serve-metrics` serves its metrics over HTTP (GET /metrics) and prints no report"
        ),
        "{}",
        refused.all()
    );
}

/// The example alerting rules (examples/monitoring/prometheusrule.yaml): valid rules to
/// `promtool check rules`, firing as tests/metrics/alerts.test.yaml says on series written
/// as the exporters and `-o openmetrics` write them, and naming only placekit families
/// docs/metrics.md documents.
#[test]
fn the_alerting_rules_check_and_fire_as_their_tests_say() {
    let Some(promtool) = require::promtool(SUITE) else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let rule: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(root.join("examples/monitoring/prometheusrule.yaml"))
            .expect("the PrometheusRule"),
    )
    .expect("yaml");
    assert_eq!(rule["kind"], "PrometheusRule");
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("rules.yaml");
    let groups = serde_yaml::to_string(&serde_json::json!({
        "groups": serde_json::to_value(&rule["spec"]["groups"]).expect("groups")
    }))
    .expect("yaml");
    std::fs::write(&rules, &groups).expect("write");
    let tests = dir.path().join("alerts.test.yaml");
    let text = std::fs::read_to_string(root.join("tests/metrics/alerts.test.yaml"))
        .expect("the rule tests");
    std::fs::write(
        &tests,
        text.replace("  - RULES", &format!("  - {}", rules.display())),
    )
    .expect("write");
    promtool_ok(
        &promtool,
        &["check", "rules", rules.to_str().expect("path")],
    );
    promtool_ok(&promtool, &["test", "rules", tests.to_str().expect("path")]);
    assert_documented(&root, &groups, "the alerting rules");
}

/// The example Grafana dashboard (examples/monitoring/grafana-dashboard.json): every panel's
/// query is PromQL Prometheus accepts (`promtool check rules` over them as recording rules)
/// and names only placekit families docs/metrics.md documents.
#[test]
fn the_dashboard_queries_are_promql_over_documented_families() {
    let Some(promtool) = require::promtool(SUITE) else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("examples/monitoring/grafana-dashboard.json"))
            .expect("the dashboard"),
    )
    .expect("json");
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .collect();
    assert!(exprs.len() >= 10, "{exprs:?}");
    let rules: Vec<serde_json::Value> = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| serde_json::json!({"record": format!("dashboard:panel_{i}"), "expr": e}))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("dashboard.rules.yaml");
    std::fs::write(
        &file,
        serde_yaml::to_string(
            &serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]}),
        )
        .expect("yaml"),
    )
    .expect("write");
    promtool_ok(&promtool, &["check", "rules", file.to_str().expect("path")]);
    assert_documented(&root, &exprs.join("\n"), "the dashboard");
}

/// `binary serve-metrics ARGS` on a free port of 127.0.0.1, and that port.
fn exporter_command(binary: &Path, kubeconfig: &Path, args: &[&str]) -> (Command, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut command = Command::new(binary);
    command
        .arg("serve-metrics")
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("KUBECONFIG", kubeconfig);
    (command, port)
}

/// A running exporter, stopped when dropped.
struct Exporter {
    child: std::process::Child,
    port: u16,
}

impl Exporter {
    fn start(binary: &Path, kubeconfig: &Path, args: &[&str]) -> Self {
        let (mut command, port) = exporter_command(binary, kubeconfig, args);
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve-metrics runs");
        Exporter { child, port }
    }

    /// Scrapes until a sample line of `family` with `labels` ends in ` value` (20 s at
    /// most): that line, or the last exposition when none came.
    fn wait_for(
        &self,
        family: &str,
        labels: &[(&str, &str)],
        value: &str,
    ) -> Result<String, String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut last = String::new();
        while std::time::Instant::now() < deadline {
            if let Some((200, body)) = placekit_testserver::http_get(self.port, "/metrics") {
                if let Some(line) = samples(&body, family, labels)
                    .into_iter()
                    .find(|l| l.ends_with(&format!(" {value}")))
                {
                    return Ok(line.to_string());
                }
                last = body;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        Err(last)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Both exporters scraped while the cluster changes: `affinity-lint serve-metrics` shows a
/// pod that goes pending (no node has the GPUs it asks for) and a pod that drifts (its node
/// takes a NoExecute taint it does not tolerate) in a later scrape; `gpu-taint
/// serve-metrics` shows the GPUs a deleted pod frees. Every exposition passes promtool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exporters_follow_the_cluster_as_it_changes() {
    let Some(gpu_taint) = built_plugin(SUITE, "kubectl-gpu_taint") else {
        return;
    };
    let Some(affinity_lint) = built_plugin(SUITE, "kubectl-affinity_lint") else {
        return;
    };
    let Some(promtool) = require::promtool(SUITE) else {
        return;
    };
    let h = Harness::start(
        "gpu-taint",
        &gpu_taint,
        include_str!("../fixtures/fleet-east.yaml"),
    )
    .await;
    let judge = Exporter::start(&affinity_lint, &h.kubeconfig, &["-A", "--interval", "1s"]);
    let inventory = Exporter::start(&gpu_taint, &h.kubeconfig, &[]);
    let free = |value: &str| {
        tokio::task::block_in_place(|| {
            inventory.wait_for(
                "placekit_node_accelerator_free",
                &[("node", "east-a100-1"), ("resource", "nvidia.com/gpu")],
                value,
            )
        })
    };
    let before = free("5");
    assert!(before.is_ok(), "{before:?}");

    // A pod no node can take: 16 GPUs.
    h.create(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "too-big", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"limits": {"nvidia.com/gpu": "16"}}}]}}))
        .await;
    // The running trainer's node takes a NoExecute taint it does not tolerate.
    h.merge_patch(
        "nodes",
        None,
        "east-a100-1",
        &json!({"spec": {"taints": [{"key": "pk-metrics", "value": "drain", "effect": "NoExecute"}]}}),
    )
    .await;
    let pending = tokio::task::block_in_place(|| {
        judge.wait_for(
            "placekit_pending_pods",
            &[("namespace", "ml"), ("class", "resources")],
            "1",
        )
    });
    assert!(pending.is_ok(), "{pending:?}");
    let drifted = tokio::task::block_in_place(|| {
        judge.wait_for(
            "placekit_drifted_pods",
            &[
                ("namespace", "ml"),
                ("node", "east-a100-1"),
                ("reason", "taint"),
            ],
            "1",
        )
    });
    assert!(drifted.is_ok(), "{drifted:?}");

    // The trainer goes: its 3 GPUs are free in a later scrape of the inventory.
    kube::Api::<k8s_openapi::api::core::v1::Pod>::namespaced(h.client(), "ml")
        .delete(
            "trainer-east",
            &kube::api::DeleteParams {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
        )
        .await
        .expect("the trainer deleted");
    let after = free("8");
    assert!(after.is_ok(), "{after:?}");

    for exporter in [&judge, &inventory] {
        let (code, body) =
            placekit_testserver::http_get(exporter.port, "/metrics").expect("a scrape");
        assert_eq!(code, 200);
        let (code, said) = promtool_check(&promtool, &body);
        assert_eq!(code, 0, "{said}\n{body}");
        assert_eq!(
            placekit_testserver::http_get(exporter.port, "/healthz"),
            Some((200, "ok\n".to_string()))
        );
    }
}

/// One cluster that does not answer: `-o openmetrics` still prints its exposition,
/// `placekit_read_up 0` and the attempt's duration, then says why on stderr (exit 3), so a
/// cron job feeding a textfile collector records the failure and PlacekitClusterNotRead
/// can fire. It printed nothing before.
#[test]
fn a_cluster_that_does_not_answer_is_read_up_zero() {
    let Some(gpu_taint) = built_plugin(SUITE, "kubectl-gpu_taint") else {
        return;
    };
    let Some(affinity_lint) = built_plugin(SUITE, "kubectl-affinity_lint") else {
        return;
    };
    let Some(promtool) = require::promtool(SUITE) else {
        return;
    };
    // A port nothing listens on: the connection is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster: {{server: \"http://127.0.0.1:{port}\"}}\ncontexts:\n- name: gone\n  context: {{cluster: gone, user: nobody}}\ncurrent-context: gone\nusers:\n- name: nobody\n  user: {{}}\n"
        ),
    )
    .unwrap();
    for (binary, args) in [
        (&gpu_taint, &["status", "-o", "openmetrics"][..]),
        (&affinity_lint, &["drift", "-A", "-o", "openmetrics"][..]),
        (
            &affinity_lint,
            &["why-pending", "-A", "-o", "openmetrics"][..],
        ),
    ] {
        let out = Command::new(binary)
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .env("HOME", dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stdout}{stderr}");
        assert!(
            stdout.lines().any(|l| l == "placekit_read_up 0")
                && stdout.contains("placekit_read_duration_seconds ")
                && stdout.ends_with("# EOF\n"),
            "{args:?}: {stdout}"
        );
        assert!(stderr.contains("connection refused"), "{args:?}: {stderr}");
        let (code, said) = promtool_check(&promtool, &stdout);
        assert_eq!(code, 0, "{args:?}: promtool: {said}\n{stdout}");
    }
}

/// An exporter's stderr until it says it serves (20 s at most), then stopped.
fn exporter_start_up(binary: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let (mut command, _) = exporter_command(binary, kubeconfig, args);
    let (mut child, received) = placekit_testserver::process::spawn_stderr_lines(&mut command);
    let mut said = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        let Ok((_, line)) = received.recv_timeout(left) else {
            break;
        };
        said.push_str(&line);
        said.push('\n');
        if line.starts_with("serving /metrics") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    said
}

/// What an exporter would ignore or cannot do is said before it serves, as the commands
/// say it: a `-n` that narrows nothing (the inventory counts every namespace's pods), a
/// `--resource` no node offers (a typo passes for an empty pool otherwise; a pool at zero
/// still serves), and `-o`, `--no-headers` and a negative `--interval` refused with why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exporters_say_what_they_ignore_and_refuse_what_they_cannot_do() {
    let Some(gpu_taint) = built_plugin(SUITE, "kubectl-gpu_taint") else {
        return;
    };
    let Some(affinity_lint) = built_plugin(SUITE, "kubectl-affinity_lint") else {
        return;
    };
    let h = Harness::start("gpu-taint", &gpu_taint, DEMO_FIXTURE).await;
    h.install_plugin("affinity-lint", &affinity_lint);

    let said =
        tokio::task::block_in_place(|| exporter_start_up(&gpu_taint, &h.kubeconfig, &["-n", "ml"]));
    assert!(
        said.contains(
            "warning: -n ml is ignored by gpu-taint serve-metrics: the exporter counts the accelerators of every namespace's pods"
        ) && said.contains("serving /metrics"),
        "{said}"
    );
    let said = tokio::task::block_in_place(|| {
        exporter_start_up(
            &gpu_taint,
            &h.kubeconfig,
            &["--resource", "nvidia.com/gpus"],
        )
    });
    assert!(
        said.contains("warning: --resource nvidia.com/gpus: its families stay empty until a node offers it (nvidia.com/gpus is on none of the ")
            && said.contains(" nodes listed: did you mean nvidia.com/gpu?)\n")
            && said.contains("serving /metrics"),
        "{said}"
    );
    let said = tokio::task::block_in_place(|| {
        exporter_start_up(&gpu_taint, &h.kubeconfig, &["--resource", "nvidia.com/gpu"])
    });
    assert!(!said.contains("warning"), "{said}");

    for (args, refusal) in [
        (
            &["serve-metrics", "-o", "json"][..],
            "-o: `kubectl affinity-lint serve-metrics` serves its metrics over HTTP (GET /metrics) and prints no report",
        ),
        (
            &["serve-metrics", "-o", "openmetrics"],
            "-o openmetrics: `kubectl affinity-lint serve-metrics` serves its metrics over HTTP (GET /metrics) and prints no report",
        ),
        (
            &["serve-metrics", "--no-headers"],
            "--no-headers: `kubectl affinity-lint serve-metrics` serves its metrics over HTTP (GET /metrics) and prints no report",
        ),
        (
            &["serve-metrics", "--interval", "-5s"],
            "invalid --interval \"-5s\": use a duration of at least 1s (30s, 2m)",
        ),
    ] {
        let refused = h.run_plugin("affinity-lint", args).await;
        assert_code(&refused, 2);
        assert!(
            refused.stderr.contains(refusal),
            "{args:?}: {}",
            refused.all()
        );
    }
}
