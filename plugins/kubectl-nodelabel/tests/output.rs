//! kubectl's scripting output on nodelabel's reads: `-o name`, `-o jsonpath=…`,
//! `-o custom-columns=…`, `--no-headers`; and `history` naming each snapshot by its file
//! name, which `show` and `rollback` accept as it is.

use std::path::Path;
use std::process::Command;

use placekit_testserver::process::Bounded as _;
use placekit_testserver::{ADMIN_TOKEN, DEMO_FIXTURE, ServerConfig, TestServer};

fn run(kubeconfig: &Path, state: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("NO_COLOR", "1")
        .env("PLACEKIT_STATE_DIR", state)
        .bounded_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The demo cluster, and a scratch directory holding its kubeconfig.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_print_what_scripts_ask_for() {
    let (_server, dir, kubeconfig) = demo().await;
    let state = dir.path().join("state");
    let run = |args: &[&str]| tokio::task::block_in_place(|| run(&kubeconfig, &state, args));
    let key = "accelerator.example.com/gpu-family";

    let (code, out, err) = run(&["dependents", key, "-A", "-o", "name"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "deployment/llm-inference\npod/llm-inference-0\n");

    let (code, out, err) = run(&[
        "dependents",
        key,
        "-A",
        "-o",
        "jsonpath={range .items[*]}{.namespace}/{.name}{\"\\n\"}{end}",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "ml/llm-inference\nml/llm-inference-0\n");

    let (code, out, err) = run(&[
        "dependents",
        key,
        "-A",
        "-o",
        "custom-columns=WHO:.name,HOW:.constraint",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "WHO              HOW\nllm-inference    required\nllm-inference-0  required\n"
    );

    let (code, out, err) = run(&["dependents", key, "-A", "--no-headers"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(!out.contains("NAMESPACE"), "{out}");

    // A template that cannot be read is a usage error before any request.
    let (code, _, err) = run(&["dependents", key, "-o", "jsonpath={.items[?(@.x)]}"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no filters"), "{err}");
    let (code, _, err) = run(&["dependents", key, "-o", "table"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("jsonpath=TEMPLATE"), "{err}");

    // history: the name, not the path, in the table; the name works for show and rollback.
    let (code, _, err) = run(&["set", "cpu-1", "team=infra", "--yes"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&["history"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains(&state.display().to_string()), "{out}");
    let (_, names, _) = run(&["history", "-o", "name"]);
    let name = names.lines().next().expect("one snapshot").to_string();
    assert!(
        name.ends_with(".snapshot.jsonl") && !name.contains('/'),
        "{name}"
    );
    assert!(out.contains(&name), "{out}");
    // The JSON carries the same name for scripts.
    let (_, by_path, _) = run(&["history", "-o", "jsonpath={.items[0].name}"]);
    assert_eq!(by_path, name);
    // An index past the end is kubectl's error: exit 1, nothing on stdout.
    let (code, out, err) = run(&["history", "-o", "jsonpath={.items[7].name}"]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.contains("error executing jsonpath \"{.items[7].name}\": Error executing template: array index out of bounds: index 7, length 1"),
        "{err}"
    );
    let (_, wide, _) = run(&["history", "-o", "wide"]);
    assert!(
        wide.contains(&state.join(&name).display().to_string()),
        "{wide}"
    );
    let (code, out, err) = run(&["show", &name]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("team"), "{out}");
    // A snapshot page is one object: -o name prints its name, as history lists it.
    let (code, shown, err) = run(&["show", &name, "-o", "name"]);
    assert_eq!(
        (code, shown.as_str()),
        (0, format!("{name}\n").as_str()),
        "{err}"
    );
    let (code, _, err) = run(&["rollback", &name, "--yes"]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = run(&["dependents", "team", "-A", "-o", "json"]);
    assert!(out.contains("\"items\": []"), "{out}");
}

/// Colour follows the conventions anstream reads, as kubectl's and cargo's do: off in a
/// pipe, on with `CLICOLOR_FORCE=1`, off again with `NO_COLOR` (which wins) or
/// `--color never`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colour_follows_clicolor_force_and_no_color() {
    let (_server, dir, kubeconfig) = demo().await;
    let plan = |env: &[(&str, &str)], extra: &[&str]| {
        tokio::task::block_in_place(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .args(["set", "gpu-a100-1", "colour=1", "--dry-run=client"])
                .args(extra)
                .env_remove("NO_COLOR")
                .env_remove("CLICOLOR_FORCE")
                .env_remove("CLICOLOR")
                .env("PLACEKIT_STATE_DIR", dir.path().join("state"))
                .envs(env.iter().copied())
                .bounded_output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0));
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    };
    let coloured = |text: &str| text.contains("\x1b[");
    assert!(!coloured(&plan(&[], &[])), "a pipe gets no colour");
    let forced = plan(&[("CLICOLOR_FORCE", "1")], &[]);
    assert!(
        forced.contains("\x1b[32m+ label colour=1\x1b[0m"),
        "{forced:?}"
    );
    assert!(!coloured(&plan(
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
        &[]
    )));
    assert!(!coloured(&plan(
        &[("CLICOLOR_FORCE", "1")],
        &["--color", "never"]
    )));
    assert!(coloured(&plan(&[], &["--color", "always"])));
}
