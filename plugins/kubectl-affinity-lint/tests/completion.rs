//! `kubectl affinity-lint <TAB>` through kubectl's own completion: subcommands and file
//! names at the top, rule ids for `rules` and `--disable`, pods for `why-pending`, output
//! formats for `-o`.

use std::path::Path;

use placekit_testserver::harness::{Harness, kubectl_complete};

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-affinity_lint"))
}

const FIXTURE: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer-0, namespace: ml}
spec:
  containers: [{name: c, image: registry.example.com/c:1}]
status: {phase: Pending}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_completes_rules_files_and_pods() {
    let h = Harness::start("affinity-lint", binary(), FIXTURE).await;
    let env = [("KUBECONFIG", h.kubeconfig.as_path())];
    let complete = |words: &[&str]| {
        tokio::task::block_in_place(|| kubectl_complete(binary(), "affinity-lint", words, &env))
    };
    let Some((top, directive)) = complete(&[""]) else {
        return;
    };
    assert!(top.contains(&"rules".to_string()), "{top:?}");
    assert_eq!(directive, 0, "file names too: manifests are linted by path");
    let (rules, _) = complete(&["rules", "AL00"]).unwrap();
    assert_eq!(rules.first().map(String::as_str), Some("AL001"));
    assert!(rules.iter().all(|r| r.starts_with("AL00")), "{rules:?}");
    let (rules, _) = complete(&["--disable", "AL10"]).unwrap();
    assert!(
        rules.contains(&"AL101".to_string()),
        "cluster rules too: {rules:?}"
    );
    let (formats, _) = complete(&["-o", "s"]).unwrap();
    assert_eq!(formats, ["sarif"]);
    let (pods, _) = complete(&["why-pending", "-n", "ml", "tr"]).unwrap();
    assert_eq!(pods, ["trainer-0"]);
}
