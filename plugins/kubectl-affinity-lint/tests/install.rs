//! After installation (the three binaries in a directory on PATH, which is what
//! `cargo install` and `kubectl krew install` do), `kubectl plugin list` shows all three and
//! their `--help` works through kubectl. Needs kubectl and the workspace's other binaries
//! (built by `cargo test --workspace`); skips with a notice otherwise.

use std::path::Path;
use std::process::Command;

use placekit_testserver::process::Bounded as _;
use placekit_testserver::require::{self, Need};

#[test]
fn kubectl_plugin_list_shows_all_three_and_help_works() {
    if !require::kubectl("kubectl plugin list with the three plugins") {
        return;
    }
    let here = Path::new(env!("CARGO_BIN_EXE_kubectl-affinity_lint"));
    let build_dir = here.parent().unwrap();
    let binaries = [
        "kubectl-nodelabel",
        "kubectl-gpu_taint",
        "kubectl-affinity_lint",
    ];
    if binaries.iter().any(|b| !build_dir.join(b).exists()) {
        require::skip(
            "kubectl plugin list with the three plugins",
            Need::Plugins,
            "the other plugin binaries are not built",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for b in binaries {
        std::fs::copy(build_dir.join(b), dir.path().join(b)).unwrap();
    }
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let kubectl = |args: &[&str]| {
        let out = Command::new("kubectl")
            .args(args)
            .env("PATH", &path)
            .bounded_output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (_, list, _) = kubectl(&["plugin", "list"]);
    for b in binaries {
        assert!(
            list.contains(&dir.path().join(b).display().to_string()),
            "{b} not listed:\n{list}"
        );
    }
    for (plugin, text) in [
        ("nodelabel", "Exit codes:"),
        ("gpu-taint", "Exit codes:"),
        ("affinity-lint", "Exit codes:"),
    ] {
        let (ok, out, err) = kubectl(&[plugin, "--help"]);
        assert!(ok, "kubectl {plugin} --help failed: {err}");
        assert!(out.contains(text), "{plugin}: {out}");
        assert!(
            out.contains(&format!("kubectl {plugin}")),
            "{plugin} help names the command as users type it"
        );
    }
    let (ok, out, _) = kubectl(&["nodelabel", "completion", "bash"]);
    assert!(ok && out.contains("complete"), "{out}");
}
