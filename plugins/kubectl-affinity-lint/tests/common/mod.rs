//! Helpers the affinity-lint test binaries share: running the binary in a directory, and
//! snapshots in `tests/snapshots/` (`UPDATE_SNAPSHOTS=1` rewrites them after an intended
//! change; review the diff).

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubectl-affinity_lint")
}

/// Runs the binary in `dir` (with `stdin` piped when given): exit code, stdout, stderr.
pub fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    let out = placekit_testserver::process::wait_output(child, "the plugin");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

pub fn assert_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    // Only UPDATE_SNAPSHOTS=1 rewrites; any other value (an empty one too) is refused, so a
    // stray variable can never turn the comparison off.
    let update = match std::env::var_os("UPDATE_SNAPSHOTS") {
        None => false,
        Some(v) if v == "1" => true,
        Some(v) => panic!(
            "UPDATE_SNAPSHOTS is set to {v:?}: only UPDATE_SNAPSHOTS=1 rewrites the snapshots; unset it to compare them"
        ),
    };
    if update {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}: run with UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    assert_eq!(actual, expected, "snapshot {name} differs");
}
