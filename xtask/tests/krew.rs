//! The krew manifests checked by krew's own code: `tests/krew/check` builds `krew` and
//! `validate-krew-manifest` from sigs.k8s.io/krew (pinned in tests/krew/go.mod, cached under
//! target/krew/), validates manifests rendered from the committed templates for freshly built
//! archives, and installs (as the README says, verbatim), runs, completes and uninstalls the
//! three plugins with the real krew.
//!
//! Needs kubectl, openssl and, unless krew is already cached for tests/krew/go.sum, Go; without
//! them it is skipped by name, or fails where `PLACEKIT_REQUIRE` requires `krew` (CI).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use placekit_testserver::process::Bounded as _;
use placekit_testserver::require::{self, Need};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn on_path(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .bounded_output()
        .is_ok_and(|o| o.status.success())
}

/// Why the check cannot run here, if it cannot.
fn missing_tool() -> Option<String> {
    if !on_path("kubectl", "version") && !on_path("kubectl", "--help") {
        return Some("kubectl is not on PATH".into());
    }
    if !on_path("openssl", "version") {
        return Some("openssl is not on PATH".into());
    }
    let go_sum = repo().join("tests/krew/go.sum");
    let key = xtask::packaging::sha256_file(&go_sum).unwrap();
    let cache = std::env::var_os("PLACEKIT_KREW_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/krew"));
    let cached = cache
        .join(format!("bin-{}", &key[..16]))
        .join("validate-krew-manifest");
    if !cached.exists() && !on_path("go", "version") {
        return Some("go is not on PATH (needed to build krew once)".into());
    }
    None
}

#[test]
fn krew_validates_installs_and_runs_the_plugins() {
    if let Some(why) = missing_tool() {
        require::skip(
            "krew's checks of the manifests (tests/krew/check)",
            Need::Krew,
            &why,
        );
        return;
    }
    // This test runs from <target>/<profile>/deps/: the plugins of a workspace build are in
    // <target>/<profile>; the script builds them there with cargo when they are missing.
    let exe = std::env::current_exe().unwrap();
    let binary_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary is in <target>/<profile>/deps");
    let started = Instant::now();
    let output = Command::new("bash")
        .arg(repo().join("tests/krew/check"))
        .arg(binary_dir)
        .current_dir(repo())
        .output_within(placekit_testserver::process::BUILD_LIMIT)
        .expect("run tests/krew/check");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "tests/krew/check failed ({}) after {:.0?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status,
        started.elapsed()
    );
    eprintln!(
        "{stderr}{stdout}tests/krew/check took {:.1?}",
        started.elapsed()
    );
}
