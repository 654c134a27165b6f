//! `kubectl nodelabel <TAB>` through kubectl's own completion (`kubectl __complete`), with
//! the `kubectl_complete-nodelabel` helper on PATH: subcommands, node names and label keys
//! from the cluster, `-l` keys without a trailing space, contexts from the kubeconfig and
//! snapshot paths from the state directory. On the test API server, or on the real cluster
//! with `PLACEKIT_E2E_KUBECONFIG`.

use std::path::Path;

use placekit_testserver::harness::{Harness, kubectl_complete};

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_completes_nodes_keys_contexts_and_snapshots() {
    let h = Harness::start_any("nodelabel", binary(), FIXTURE).await;
    let env = [
        ("KUBECONFIG", h.kubeconfig.as_path()),
        ("PLACEKIT_STATE_DIR", h.state_dir.as_path()),
    ];
    let complete = |words: &[&str]| {
        tokio::task::block_in_place(|| kubectl_complete(binary(), "nodelabel", words, &env))
    };
    let Some((subcommands, directive)) = complete(&[""]) else {
        eprintln!("NOTICE: kubectl is not installed; skipping");
        return;
    };
    assert!(subcommands.contains(&"set".to_string()), "{subcommands:?}");
    assert!(!subcommands.contains(&"__complete".to_string()));
    assert_eq!(directive, 4, "no file names after `kubectl nodelabel`");

    let (nodes, _) = complete(&["set", "gpu-a100"]).unwrap();
    assert_eq!(nodes, ["gpu-a100-1", "gpu-a100-2", "gpu-a100-3"]);
    // After node names, label keys to set, ready for their value.
    let (keys, directive) = complete(&["set", "gpu-a100-1", "accelerator"]).unwrap();
    assert_eq!(keys, ["accelerator.example.com/gpu-family="]);
    assert_eq!(directive, 4 | 2, "no space after `key=`");
    let (keys, _) = complete(&["remove", "gpu-a100-1", "power"]).unwrap();
    assert_eq!(keys, ["power-profile-"]);
    let (keys, _) = complete(&["set", "-l", "po"]).unwrap();
    assert_eq!(keys, ["pool=", "power-profile="]);
    // After `key=`, the values the nodes have.
    let (values, directive) = complete(&["set", "-l", "pool="]).unwrap();
    assert_eq!(values, ["pool=batch", "pool=cpu", "pool=online"]);
    assert_eq!(directive, 4);
    let (values, _) = complete(&["set", "gpu-a100-1", "pool=o"]).unwrap();
    assert_eq!(values, ["pool=online"]);
    // In a list, the part after the last comma.
    let (more, _) = complete(&["set", "-l", "pool=online,topo"]).unwrap();
    assert_eq!(more, ["pool=online,topology.kubernetes.io/zone="]);
    let (keys, _) = complete(&["dependents", "topology"]).unwrap();
    assert_eq!(keys, ["topology.kubernetes.io/zone"]);

    let (flags, _) = complete(&["set", "--ov"]).unwrap();
    assert_eq!(flags, ["--overwrite"]);
    let (contexts, _) = complete(&["--context", ""]).unwrap();
    assert!(!contexts.is_empty(), "the kubeconfig's contexts");

    // Snapshot paths, newest first.
    let run = h.run(&["set", "gpu-a100-1", "team=ml", "-y"]).await;
    assert_eq!(run.code, 0, "{}", run.all());
    let (snapshots, directive) = complete(&["rollback", ""]).unwrap();
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");
    assert!(snapshots[0].ends_with(".snapshot.jsonl"), "{snapshots:?}");
    assert_eq!(directive & 32, 32, "kept newest first");

    // An unreachable cluster completes nothing, quickly, and says nothing.
    let broken = h.dir.path().join("unreachable");
    std::fs::write(
        &broken,
        std::fs::read_to_string(&h.kubeconfig)
            .unwrap()
            .replace("https://", "https://unreachable.invalid."),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (nothing, _) = tokio::task::block_in_place(|| {
        kubectl_complete(
            binary(),
            "nodelabel",
            &["set", ""],
            &[("KUBECONFIG", &broken)],
        )
    })
    .unwrap();
    assert!(nothing.is_empty(), "{nothing:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
}
