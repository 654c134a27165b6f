//! The wording a first-time user meets, pinned: a hook named as it is in the current
//! directory, `/key` in a feature file, a missing hook, snapshot names.
//! On the test API server, or on the real cluster with `PLACEKIT_E2E_KUBECONFIG`.

use std::path::Path;

use placekit_testserver::harness::Harness;

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_files_and_snapshot_names_as_users_write_them() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let dir = h.dir.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let hook = dir.join("my-script");
    std::fs::write(&hook, "#!/bin/sh\necho /cpu-model.id=6\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();

    // `--hook ./my-script` in the directory that holds it (a bare name is looked up on
    // PATH only, as a shell does).
    let run = tokio::task::block_in_place(|| {
        Harness::wait(
            h.command(&["import", "--hook", "./my-script", "gpu-a100-1", "-y"])
                .current_dir(&dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        )
    });
    assert_eq!(run.code, 0, "{}", run.all());
    assert_eq!(
        h.labels("gpu-a100-1").await["feature.node.kubernetes.io/cpu-model.id"],
        "6"
    );

    // A hook that is nowhere says where it was looked for, before anything is read.
    let run = h
        .run(&["import", "--hook", "no-such-hook-xyz", "gpu-a100-1", "-y"])
        .await;
    assert_eq!(run.code, 2, "{}", run.all());
    assert!(
        run.stderr
            .contains("no executable \"no-such-hook-xyz\" on PATH"),
        "{}",
        run.all()
    );

    // `/key` in a feature file is an empty prefix, which nfd-worker refuses (checked against
    // the real one, tests/tests/real_controllers.rs): an invalid entry, with its line.
    let file = dir.join("features.txt");
    std::fs::write(&file, "/vm.swappiness=10\nplain=1\n").unwrap();
    let path = file.display().to_string();
    let run = h
        .run(&["import", "--file", &path, "gpu-a100-2", "-y"])
        .await;
    assert_eq!(run.code, 2, "{}", run.all());
    assert!(
        run.stderr.contains(&format!(
            "{path}:1: invalid label key \"/vm.swappiness\": prefix part must be non-empty"
        )),
        "{}",
        run.all()
    );
    let run = h
        .run(&[
            "import",
            "--file",
            &path,
            "gpu-a100-2",
            "--skip-invalid",
            "-y",
        ])
        .await;
    assert_eq!(run.code, 0, "{}", run.all());
    let labels = h.labels("gpu-a100-2").await;
    assert!(labels["feature.node.kubernetes.io/vm.swappiness"].is_null());
    assert_eq!(labels["feature.node.kubernetes.io/plain"], "1");

    // Snapshots are named after the plugin as typed after `kubectl`.
    for s in h.snapshots() {
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        assert!(name.contains("-nodelabel-import-"), "{name}");
    }
}

#[test]
fn examples_fit_an_80_column_terminal() {
    let long = placekit_testserver::harness::long_example_lines(binary(), 80);
    assert!(
        long.is_empty(),
        "example lines over 80 columns:\n{}",
        long.join("\n")
    );
}

/// A key that is on none of the nodes is probably a typo: said, with the near key. Keys and
/// namespaces `dependents` cannot match are input errors, not "no workload depends".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typos_are_named_with_what_was_meant() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let run = h
        .run(&[
            "remove",
            "gpu-a100-1",
            "accelerator.example.com/gpu-famly",
            "--yes",
        ])
        .await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(
        run.stderr.contains(
            "label accelerator.example.com/gpu-famly is on none of the 1 node targeted: nothing to remove (did you mean accelerator.example.com/gpu-family?)"
        ),
        "{}",
        run.all()
    );
    let run = h.run(&["dependents", "gpu family"]).await;
    assert_eq!(run.code, 2, "{}", run.all());
    assert!(
        run.stderr.contains("invalid label key \"gpu family\""),
        "{}",
        run.all()
    );
    let run = h
        .run(&["dependents", "pool", "-n", "no-such-namespace"])
        .await;
    assert_eq!(run.code, 2, "{}", run.all());
    assert!(
        run.stderr
            .contains("namespace \"no-such-namespace\" not found"),
        "{}",
        run.all()
    );
    let run = h.run(&["dependents", "pool"]).await;
    assert!(
        run.stdout.contains("this label") || run.stdout.contains("NAMESPACE"),
        "{}",
        run.all()
    );
}

/// Reserved-prefix warnings say what NodeRestriction and the kubelet really do: a role
/// label is the admin's (no kubelet may set it), the kubelet's own labels are the kubelet's,
/// and an isolation key a node may set on itself is said to be one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserved_prefix_warnings_follow_node_restriction() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let warned = |run: &placekit_testserver::harness::Run| -> Vec<String> {
        run.stderr
            .lines()
            .filter(|l| l.starts_with("warning:"))
            .map(str::to_string)
            .collect()
    };
    let run = h
        .run(&[
            "set",
            "gpu-a100-1",
            "node-role.kubernetes.io/gpu=",
            "--dry-run=client",
        ])
        .await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(warned(&run).is_empty(), "{}", run.all());
    let run = h
        .run(&[
            "set",
            "gpu-a100-1",
            "topology.kubernetes.io/zone=zone-x",
            "--overwrite",
            "--dry-run=client",
        ])
        .await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(
        warned(&run).iter().any(|w| w.contains(
            "topology.kubernetes.io/zone is one of the kubelet's own labels: the kubelet sets it on its own Node"
        )),
        "{}",
        run.all()
    );
    let run = h
        .run(&[
            "set",
            "gpu-a100-1",
            "example.kubernetes.io/tier=gold",
            "--dry-run=client",
        ])
        .await;
    assert!(
        warned(&run).iter().any(|w| w.contains(
            "example.kubernetes.io/tier is in the example.kubernetes.io namespace, reserved for Kubernetes' own labels: use a domain of your own (e.g. example.com/tier)"
        )),
        "{}",
        run.all()
    );
}

/// A long command line is shortened in `history`'s table (it would push the other columns
/// off the screen) and kept whole in `-o wide` and JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_shortens_long_commands_in_the_table_only() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let labels: Vec<String> = (0..12)
        .map(|i| format!("ops.example.com/feature-{i:02}=enabled-with-a-long-value"))
        .collect();
    let mut args = vec!["set", "gpu-a100-1"];
    args.extend(labels.iter().map(String::as_str));
    args.push("-y");
    let run = h.run(&args).await;
    assert_eq!(run.code, 0, "{}", run.all());
    let full = format!("set gpu-a100-1 {} -y", labels.join(" "));
    assert!(full.len() > 200);

    let table = h.run(&["history"]).await;
    let row = table.stdout.lines().nth(1).expect("one row");
    // 80 characters of the command, the last an ellipsis.
    let shown = format!("{}… ", &full[..79]);
    assert!(row.contains(&shown), "{row}");
    assert!(!row.contains(&full[..80]), "{row}");
    let wide = h.run(&["history", "-o", "wide"]).await;
    assert!(wide.stdout.contains(&full), "{}", wide.all());
    let json = h.run(&["history", "-o", "json"]).await;
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["items"][0]["command"], full.as_str());
}

/// `-n` on a command about nodes changes nothing (nodes are cluster-scoped, the checks read
/// every namespace): kubectl ignores it silently, placekit says so; `dependents` uses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_on_a_node_command_is_said_to_be_ignored() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let run = h
        .run(&[
            "set",
            "gpu-a100-1",
            "team=ml",
            "-n",
            "ml",
            "--dry-run=client",
        ])
        .await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(
        run.stderr.contains(
            "warning: -n ml is ignored by nodelabel set: nodes are cluster-scoped, and the checks read the workloads of every namespace"
        ),
        "{}",
        run.all()
    );
    let run = h
        .run(&["dependents", "kubernetes.io/hostname", "-n", "ml"])
        .await;
    assert!(!run.stderr.contains("is ignored"), "{}", run.all());
}
