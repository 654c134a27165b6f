//! Many clusters: the read-only commands of all three plugins across kubeconfig contexts, in
//! one merged report. Two clusters — the harness's and [`Harness::other_cluster`] (two real
//! control planes in CI) — plus a context whose server accepts connections and never
//! answers, and one whose credentials the server refuses, all in one kubeconfig.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use placekit_testserver::harness::{
    Harness, OtherCluster, Run, assert_code, built_plugin, merge_kubeconfigs,
};
use serde_json::Value;

const EAST: &str = include_str!("../fixtures/fleet-east.yaml");
const WEST: &str = include_str!("../fixtures/fleet-west.yaml");
const FAMILY: &str = "accelerator.example.com/gpu-family";

/// A server that accepts connections and never answers: a cluster behind a hung VPN.
fn hung_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    format!("https://{address}")
}

struct Fleet {
    h: Harness,
    west: OtherCluster,
    /// The gpu-taint binary (completion runs it directly).
    gpu_taint: PathBuf,
}

/// east (and east-alias, the same cluster), west, hung (never answers) and badtoken (east's
/// server with a token it refuses), in the harness's kubeconfig; the three plugins
/// installed. `None` (the suite skipped, or failed under `PLACEKIT_REQUIRE`) when the
/// plugins are not built.
async fn fleet() -> Option<Fleet> {
    const SUITE: &str = "the many-clusters suite";
    let gpu_taint = built_plugin(SUITE, "kubectl-gpu_taint")?;
    let nodelabel = built_plugin(SUITE, "kubectl-nodelabel")?;
    let affinity_lint = built_plugin(SUITE, "kubectl-affinity_lint")?;
    let h = Harness::start("gpu-taint", &gpu_taint, EAST).await;
    h.install_plugin("nodelabel", &nodelabel);
    h.install_plugin("affinity-lint", &affinity_lint);
    let west = h.other_cluster(WEST).await;
    let east = h.dir.path().join("east.kubeconfig");
    std::fs::copy(&h.kubeconfig, &east).expect("copy");
    let mut merged: Value = serde_yaml::from_str(&merge_kubeconfigs(&[
        ("east", &east),
        ("east-alias", &east),
        ("west", &west.kubeconfig),
        ("hung", &east),
        ("badtoken", &east),
    ]))
    .expect("yaml");
    merged["clusters"][3]["cluster"] = serde_json::json!({
        "server": hung_server(), "insecure-skip-tls-verify": true
    });
    merged["users"][4]["user"] = serde_json::json!({"token": "not-a-valid-token"});
    std::fs::write(&h.kubeconfig, serde_yaml::to_string(&merged).expect("yaml")).expect("write");
    Some(Fleet { h, west, gpu_taint })
}

/// The `contexts` of a JSON report, in its order.
fn contexts_read(run: &Run) -> Vec<String> {
    json(run)["contexts"]
        .as_array()
        .expect("contexts")
        .iter()
        .map(|c| c["context"].as_str().expect("context").to_string())
        .collect()
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.all()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_all_contexts_lists_both_clusters_and_names_the_dead_ones_within_the_deadline() {
    let Some(f) = fleet().await else { return };
    let started = Instant::now();
    let run =
        f.h.run(&["status", "--all-contexts", "--context-timeout", "2s"])
            .await;
    let elapsed = started.elapsed();
    assert_code(&run, 4);
    // Every node of both clusters, under its context; east once, with its alias named.
    let row = |context: &str, node: &str| {
        run.stdout.lines().any(|l| {
            let cells: Vec<&str> = l.split("  ").filter(|c| !c.trim().is_empty()).collect();
            cells.first().map(|c| c.trim()) == Some(context)
                && cells.get(1).map(|c| c.trim()) == Some(node)
        })
    };
    assert!(run.stdout.starts_with("CONTEXT "), "{}", run.all());
    for node in ["east-a100-1", "east-a100-2"] {
        assert!(row("east (also east-alias)", node), "{node}: {}", run.all());
    }
    assert!(row("west", "west-h100-1"), "{}", run.all());
    assert_eq!(
        run.stdout.matches("east-a100-1").count(),
        1,
        "{}",
        run.all()
    );
    // Totals per cluster and over all of them: 16 + 4 GPUs, 3 + 1 requested.
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("(all)") && l.contains("TOTAL (3 nodes)") && l.contains(" 20 ")),
        "{}",
        run.all()
    );
    // The dead contexts once each, in kubectl's words, and what exit 4 means.
    assert!(
        run.stderr
            .contains("warning: context hung: cannot reach the cluster at https://127.0.0.1:")
            // The probe's deadline or the request's, whichever fires first: both say it.
            && run.stderr.lines().any(|l| l.contains("context hung:")
                && l.contains("timeout")
                && l.contains("--context-timeout")),
        "{}",
        run.all()
    );
    assert!(
        run.stderr
            .contains("warning: context badtoken: unauthorized"),
        "{}",
        run.all()
    );
    assert!(
        run.stderr
            .contains("2 clusters of 4 could not be read; the report covers the others (exit 4)"),
        "{}",
        run.all()
    );
    // The hung cluster cost its deadline, not more (and did not hold up the others).
    assert!(
        elapsed < Duration::from_secs(2) + Duration::from_secs(4),
        "took {elapsed:?}"
    );

    let run =
        f.h.run(&[
            "status",
            "--all-contexts",
            "--context-timeout",
            "2s",
            "-o",
            "json",
        ])
        .await;
    assert_code(&run, 4);
    let report = json(&run);
    let nodes = report["nodes"].as_array().expect("nodes");
    let of = |context: &str| -> Vec<&str> {
        nodes
            .iter()
            .filter(|n| n["context"] == context)
            .map(|n| n["name"].as_str().unwrap())
            .collect()
    };
    assert_eq!(of("east"), ["east-a100-1", "east-a100-2"], "{report:#}");
    assert_eq!(of("west"), ["west-h100-1"], "{report:#}");
    assert_eq!(
        nodes[0]["contexts"],
        serde_json::json!(["east", "east-alias"])
    );
    assert!(nodes.iter().all(|n| {
        n["server"]
            .as_str()
            .is_some_and(|s| s.starts_with("https://"))
    }));
    assert_eq!(report["totals"]["capacity"], 20, "{report:#}");
    assert_eq!(report["totals"]["requested"], 4, "{report:#}");
    let contexts = report["contexts"].as_array().expect("contexts");
    let failed: Vec<&str> = contexts
        .iter()
        .filter(|c| c["error"].is_string())
        .map(|c| c["context"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["badtoken", "hung"], "{report:#}");
    drop(f.west);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_naming_one_cluster_are_read_once_and_patterns_choose_in_order() {
    let Some(f) = fleet().await else { return };
    f.h.server().reset_counters();
    let run =
        f.h.run(&["status", "--contexts", "west,east*", "-o", "json"])
            .await;
    assert_code(&run, 0);
    assert_eq!(contexts_read(&run), ["west", "east"], "{}", run.all());
    // east and east-alias: one probe each (the identity), one node list for the cluster.
    assert_eq!(
        f.h.server().count("list", "nodes"),
        1,
        "{:?}",
        f.h.server().counters()
    );

    // Exclusions; a pattern that matches nothing is a usage error before any request.
    let run =
        f.h.run(&["status", "--contexts", "*,!hung,!badtoken,!east-alias"])
            .await;
    assert_code(&run, 0);
    assert!(!run.stdout.contains("also"), "{}", run.all());
    for (args, message) in [
        (
            vec!["status", "--contexts", "prd-*"],
            "--contexts prd-*: no context matches (see `kubectl config get-contexts`)",
        ),
        (
            vec!["status", "--contexts", "esat"],
            "context \"esat\" was not found in the kubeconfig",
        ),
        (
            vec!["status", "--all-contexts", "--context", "east"],
            "--all-contexts and --context exclude each other",
        ),
        (
            vec!["status", "--context-timeout", "5s"],
            "--context-timeout applies with --contexts or --all-contexts",
        ),
        (
            vec!["status", "--all-contexts", "--context-timeout", "0"],
            "every context needs a deadline",
        ),
    ] {
        f.h.server().reset_counters();
        let run = f.h.run(&args).await;
        assert_code(&run, 2);
        assert!(run.stderr.contains(message), "{args:?}: {}", run.all());
        assert!(
            f.h.server().counters().is_empty(),
            "{args:?}: {:?}",
            f.h.server().counters()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lint_cluster_reports_al101_for_the_cluster_where_no_node_fits_and_nothing_for_the_other() {
    let Some(f) = fleet().await else { return };
    let deploy = f.h.dir.path().join("deploy.yaml");
    std::fs::write(
        &deploy,
        format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: llm, namespace: ml}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: llm}}}}
  template:
    metadata: {{labels: {{app: llm}}}}
    spec:
      nodeSelector:
        {FAMILY}: a100
      containers:
      - name: server
        image: registry.example.com/llm:1
        resources: {{limits: {{nvidia.com/gpu: 2}}}}
"
        ),
    )
    .unwrap();
    let file = deploy.to_str().unwrap();
    let run =
        f.h.run_plugin(
            "affinity-lint",
            &["-f", file, "--cluster", "--contexts", "east,west"],
        )
        .await;
    assert_code(&run, 1);
    let findings: Vec<&str> = run.stdout.lines().filter(|l| l.contains("[AL1")).collect();
    assert_eq!(findings.len(), 1, "{}", run.all());
    assert!(
        findings[0].contains("error[AL101]: context west: "),
        "{}",
        run.all()
    );
    // The live rules read one context at a time; the files' own rules speak once.
    let run =
        f.h.run_plugin(
            "affinity-lint",
            &[
                "-f",
                file,
                "--all-contexts",
                "--context-timeout",
                "2s",
                "-o",
                "json",
            ],
        )
        .await;
    assert_code(&run, 4);
    let report = json(&run);
    let live: Vec<(&str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().unwrap().starts_with("AL1"))
        .map(|f| (f["rule"].as_str().unwrap(), f["context"].as_str().unwrap()))
        .collect();
    assert_eq!(live, [("AL101", "west")], "{report:#}");
    assert!(
        run.stderr.contains("warning: context hung:"),
        "{}",
        run.all()
    );
    let sarif =
        f.h.run_plugin(
            "affinity-lint",
            &["-f", file, "--contexts", "west", "-o", "sarif"],
        )
        .await;
    assert_code(&sarif, 1);
    let sarif = json(&sarif);
    let result = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "AL101")
        .cloned()
        .expect("AL101 in SARIF");
    assert_eq!(result["properties"]["context"], "west");
    assert!(
        result["message"]["text"]
            .as_str()
            .unwrap()
            .contains("context west")
    );
    // Every context unreadable: nothing to lint against, exit 3.
    let run =
        f.h.run_plugin(
            "affinity-lint",
            &["-f", file, "--contexts", "hung", "--context-timeout", "1s"],
        )
        .await;
    assert_code(&run, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_and_dependents_across_contexts() {
    let Some(f) = fleet().await else { return };
    let run =
        f.h.run_plugin("affinity-lint", &["drift", "-A", "--contexts", "east,west"])
            .await;
    assert_code(&run, 1);
    assert!(
        run.stdout.lines().any(|l| l.starts_with("west ")
            && l.contains("trainer-west")
            && l.contains("west-h100-1")),
        "{}",
        run.all()
    );
    assert!(!run.stdout.contains("trainer-east"), "{}", run.all());
    assert!(
        run.stdout
            .contains("east: no drift (1 running pod checked)"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout.contains("west: 1 of 1 running pod drifted"),
        "{}",
        run.all()
    );
    let run =
        f.h.run_plugin(
            "affinity-lint",
            &[
                "drift",
                "-A",
                "--all-contexts",
                "--context-timeout",
                "2s",
                "-o",
                "json",
            ],
        )
        .await;
    assert_code(&run, 4);
    let report = json(&run);
    assert_eq!(report["items"][0]["context"], "west", "{report:#}");
    assert_eq!(report["items"].as_array().unwrap().len(), 1, "{report:#}");

    let run =
        f.h.run_plugin(
            "nodelabel",
            &["dependents", FAMILY, "-A", "--contexts", "east,west"],
        )
        .await;
    assert_code(&run, 0);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("east ") && l.contains("Deployment") && l.contains("llm-east")),
        "{}",
        run.all()
    );
    let run =
        f.h.run_plugin(
            "nodelabel",
            &[
                "dependents",
                FAMILY,
                "-A",
                "--all-contexts",
                "--context-timeout",
                "2s",
                "-o",
                "json",
            ],
        )
        .await;
    assert_code(&run, 4);
    let report = json(&run);
    assert!(
        report["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["context"] == "east" && i["name"] == "llm-east"),
        "{report:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_commands_refuse_the_flags_and_write_nothing() {
    let Some(f) = fleet().await else { return };
    let before = f.h.node("east-a100-1").await;
    for (plugin, args, command) in [
        (
            "gpu-taint",
            vec![
                "dedicate",
                "east-a100-1",
                "--taint",
                "dedicated=llm:NoSchedule",
                "-y",
                "--all-contexts",
            ],
            "kubectl gpu-taint dedicate does not take --all-contexts: it changes one cluster at a time",
        ),
        (
            "gpu-taint",
            vec![
                "release",
                "east-a100-1",
                "--taint",
                "dedicated=llm:NoSchedule",
                "-y",
                "--contexts",
                "east",
            ],
            "kubectl gpu-taint release does not take --contexts",
        ),
        (
            "gpu-taint",
            vec!["rollback", "--last", "-y", "--all-contexts"],
            "kubectl gpu-taint rollback does not take --all-contexts",
        ),
        (
            "nodelabel",
            vec!["set", "east-a100-1", "team=ml", "-y", "--contexts", "e*"],
            "kubectl nodelabel set does not take --contexts",
        ),
        (
            "nodelabel",
            vec!["remove", "east-a100-1", "team-", "-y", "--all-contexts"],
            "kubectl nodelabel remove does not take --all-contexts",
        ),
        (
            "affinity-lint",
            vec!["why-pending", "x", "--all-contexts"],
            "kubectl affinity-lint why-pending does not take --all-contexts: it reads one cluster at a time",
        ),
    ] {
        let run = if plugin == "gpu-taint" {
            f.h.run(&args).await
        } else {
            f.h.run_plugin(plugin, &args).await
        };
        assert_code(&run, 2);
        assert!(run.stderr.contains(command), "{args:?}: {}", run.all());
    }
    assert_eq!(f.h.node("east-a100-1").await, before);
    assert!(f.h.snapshots().is_empty(), "{:?}", f.h.snapshots());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_lists_the_snapshots_of_the_contexts_chosen() {
    let Some(f) = fleet().await else { return };
    // A change on east and one on west, each through its own context.
    for context in ["east", "west"] {
        let node = if context == "east" {
            "east-a100-2"
        } else {
            "west-h100-1"
        };
        let run =
            f.h.run(&[
                "--context",
                context,
                "dedicate",
                node,
                "--taint",
                "dedicated=llm:NoSchedule",
                "-y",
            ])
            .await;
        assert_code(&run, 0);
    }
    let contexts = |run: &Run| -> Vec<String> {
        json(run)["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["context"].as_str().unwrap().to_string())
            .collect()
    };
    let all = f.h.run(&["history", "--all-contexts", "-o", "json"]).await;
    assert_code(&all, 0);
    assert_eq!(contexts(&all), ["east", "west"]);
    let west =
        f.h.run(&["history", "--contexts", "w*", "-o", "json"])
            .await;
    assert_eq!(contexts(&west), ["west"]);
    let not_west =
        f.h.run(&["history", "--contexts", "!west", "-o", "json"])
            .await;
    assert_eq!(contexts(&not_west), ["east"]);
    // The west change is on the west cluster (its own credentials were used).
    let node: k8s_openapi::api::core::v1::Node = kube::Api::all(f.west.client())
        .get("west-h100-1")
        .await
        .unwrap();
    assert!(
        node.spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .iter()
            .any(|t| t.key == "dedicated")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_come_from_every_file_of_a_kubeconfig_list() {
    let Some(f) = fleet().await else { return };
    // west alone in a second file, as KUBECONFIG=a:b merges them.
    let second = f.h.dir.path().join("second.kubeconfig");
    std::fs::write(
        &second,
        merge_kubeconfigs(&[("west-2", &f.west.kubeconfig)]),
    )
    .unwrap();
    let list = format!("{}:{}", f.h.kubeconfig.display(), second.display());
    let run =
        f.h.run_env(
            &["status", "--contexts", "east,west-2", "-o", "json"],
            &[("KUBECONFIG", &list)],
        )
        .await;
    assert_code(&run, 0);
    assert_eq!(contexts_read(&run), ["east", "west-2"], "{}", run.all());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_completes_context_names_and_patterns() {
    let Some(f) = fleet().await else { return };
    let env = [("KUBECONFIG", f.h.kubeconfig.as_path())];
    let complete = |words: &[&str]| {
        tokio::task::block_in_place(|| {
            placekit_testserver::harness::kubectl_complete(&f.gpu_taint, "gpu-taint", words, &env)
        })
    };
    let Some((contexts, _)) = complete(&["status", "--contexts", "e"]) else {
        return;
    };
    assert_eq!(contexts, ["east", "east-alias"]);
    // After a comma and after `!`: the rest of the word is kept in front.
    let (contexts, _) = complete(&["status", "--contexts", "west,!east"]).unwrap();
    assert_eq!(contexts, ["west,!east", "west,!east-alias"]);
    let (flags, _) = complete(&["status", "--all-con"]).unwrap();
    assert_eq!(flags, ["--all-contexts"]);
}

/// A context whose exec credential plugin waits (for a login that never comes) costs its
/// deadline and holds up neither the other contexts nor the end of the command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_plugin_that_waits_costs_only_its_deadline() {
    let Some(f) = fleet().await else { return };
    let mut config: Value =
        serde_yaml::from_str(&std::fs::read_to_string(&f.h.kubeconfig).unwrap()).unwrap();
    config["users"].as_array_mut().unwrap().push(
        serde_json::json!({"name": "waiting", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "sleep",
            "args": ["60"],
            "interactiveMode": "Never",
        }}}),
    );
    config["contexts"].as_array_mut().unwrap().push(
        serde_json::json!({"name": "login", "context": {"cluster": "west", "user": "waiting"}}),
    );
    std::fs::write(&f.h.kubeconfig, serde_yaml::to_string(&config).unwrap()).unwrap();
    let started = Instant::now();
    let run =
        f.h.run(&[
            "status",
            "--contexts",
            "east,login",
            "--context-timeout",
            "2s",
        ])
        .await;
    let elapsed = started.elapsed();
    assert_code(&run, 4);
    assert!(run.stdout.contains("east-a100-1"), "{}", run.all());
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("context login:") && l.contains("timeout")),
        "{}",
        run.all()
    );
    assert!(elapsed < Duration::from_secs(2 + 5), "took {elapsed:?}");
}
