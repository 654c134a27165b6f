//! The wording a first-time user meets, pinned: what each message says and its exit code.
//! On the test API server, or on the real cluster with `PLACEKIT_E2E_KUBECONFIG`.

use std::path::Path;

use placekit_testserver::harness::{Harness, Run};

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
}

fn expect(run: &Run, code: i32, texts: &[&str]) {
    assert_eq!(run.code, code, "{}", run.all());
    for text in texts {
        assert!(
            run.all().contains(text),
            "expected {text:?} in:\n{}",
            run.all()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_hour_messages() {
    let h = Harness::start("gpu-taint", binary(), FIXTURE).await;

    // No --all here: the message does not suggest one (clap would then offer --allow-no-gpu).
    let run = h.run(&["dedicate", "--taint", "a=b:NoSchedule"]).await;
    expect(
        &run,
        2,
        &["no nodes given: name nodes, or use -l/--selector"],
    );
    assert!(!run.all().contains("--all"), "{}", run.all());

    // A resource no node has is a typo, not every node's device plugin failing.
    let run = h.run(&["status", "--resource", "nvidia.com/gpus"]).await;
    expect(
        &run,
        2,
        &["nvidia.com/gpus is on none of the 3 nodes listed: did you mean nvidia.com/gpu?"],
    );
    assert!(!run.all().contains("device plugin"), "{}", run.all());

    // A read-only command does not say "nothing was changed".
    let run = h.run(&["status", "gpu-nope"]).await;
    expect(
        &run,
        2,
        &["node \"gpu-nope\" not found (check the name with `kubectl get nodes`)"],
    );
    assert!(!run.all().contains("nothing was changed"), "{}", run.all());

    // One node: singular; a resource's total counts the nodes that have it, and its FREE is
    // the sum of their rows' FREE.
    let run = h.run(&["status", "gpu-a100-1", "gpu-new-1"]).await;
    expect(&run, 0, &["TOTAL (1 node)  nvidia.com/gpu  8"]);
    let run = h.run(&["status", "gpu-a100-1"]).await;
    expect(&run, 0, &["TOTAL (1 node)"]);
    let json = h.run(&["status", "-o", "json"]).await.json();
    let free: i64 = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| !n["capacity"].is_null())
        .map(|n| n["free"].as_i64().unwrap())
        .sum();
    assert_eq!(json["totals"]["free"].as_i64().unwrap(), free, "{json}");

    // A taint with another value is left, and the report does not call that "as requested".
    let run = h
        .run(&[
            "release",
            "gpu-a100-2",
            "--taint",
            "dedicated=llm:NoSchedule",
            "-y",
        ])
        .await;
    expect(
        &run,
        1,
        &[
            "1 node left as it is (see the problems below)",
            "node/gpu-a100-2 unchanged\n",
            "node/gpu-a100-2: taint dedicated=batch:NoSchedule has the same key and effect as dedicated=llm:NoSchedule but another value: left in place",
        ],
    );
    assert!(!run.all().contains("already as requested"), "{}", run.all());

    // A blocked change still prints its ChangeReport with -o json.
    let run = h
        .run(&[
            "dedicate",
            "gpu-a100-2",
            "--taint",
            "dedicated=llm:NoSchedule",
            "--allow-no-gpu",
            "-y",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(run.code, 1, "{}", run.all());
    let report = run.json();
    assert_eq!(report["kind"], "ChangeReport");
    assert_eq!(report["nodes"][0]["outcome"], "notAttempted");
    let problems = report["problems"].as_array().unwrap();
    assert!(
        problems.iter().all(|p| !p.as_str().unwrap().contains('\n')),
        "one problem per entry: {report}"
    );
    assert!(
        problems.iter().any(|p| p
            .as_str()
            .unwrap()
            .contains("already exists with key dedicated and effect NoSchedule")),
        "{report}"
    );

    // Snapshots are named by the plugin users type, and the diff shows no bookkeeping.
    let run = h
        .run(&[
            "dedicate",
            "gpu-a100-1",
            "--taint",
            "dedicated=llm:NoSchedule",
            "-y",
        ])
        .await;
    expect(&run, 0, &["1 applied"]);
    assert!(!run.all().contains("annotation"), "{}", run.all());
    let snapshots = h.snapshots();
    assert_eq!(snapshots.len(), 1);
    let name = snapshots[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert!(name.contains("-gpu-taint-dedicate-"), "{name}");
    let run = h.run(&["history", "-o", "wide"]).await;
    expect(&run, 0, &["SERVER", "OPERATION", "dedicate"]);
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

/// Taints and resources as users type them: kubectl's removal form, a missing effect, a
/// mistyped resource in `dedicate`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taints_and_resources_as_users_type_them() {
    let h = Harness::start("gpu-taint", binary(), FIXTURE).await;
    let run = h
        .run(&["release", "gpu-a100-2", "--taint", "dedicated=batch", "-y"])
        .await;
    expect(
        &run,
        2,
        &["the taint to release needs its effect too: KEY=VALUE:EFFECT or KEY:EFFECT"],
    );
    let run = h
        .run(&[
            "dedicate",
            "gpu-a100-1",
            "--taint",
            "x=y:NoSchedule",
            "--resource",
            "nvidia.com/gpus",
            "-y",
        ])
        .await;
    expect(
        &run,
        2,
        &["nvidia.com/gpus is on none of the 1 node listed: did you mean nvidia.com/gpu?"],
    );
    // kubectl's removal form (trailing -) releases the same exact taint.
    let run = h
        .run(&[
            "release",
            "gpu-a100-2",
            "--taint",
            "dedicated=batch:NoSchedule-",
            "-y",
        ])
        .await;
    expect(&run, 0, &["1 applied"]);
    assert!(h.node("gpu-a100-2").await["spec"]["taints"].is_null());
}
