//! `--fix`, `--diff` and `--unsafe-fixes` through the binary: the diffs are pinned in
//! `tests/snapshots/` (`UPDATE_SNAPSHOTS=1` rewrites them after an intended change), the
//! fixed files lint clean of what was fixed, and nothing but the fixed lines changes.

mod common;

use common::{assert_snapshot, run_in};
use std::path::{Path, PathBuf};

use placekit_testserver::process::Bounded as _;
use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs in `dir`: (exit code, stdout, stderr).
fn run(dir: &Path, args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    run_in(dir, args, stdin.map(str::as_bytes))
}

/// A scratch directory holding a copy of `source` as `name`.
fn scratch(source: &Path, name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(source, dir.path().join(name)).unwrap();
    dir
}

fn rules(dir: &Path, file: &str) -> Vec<String> {
    let (_, out, _) = run(dir, &["-f", file, "-o", "json", "--fail-on", "info"], None);
    let json: Value = serde_json::from_str(&out).unwrap();
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_runbook_split_terms_diff_is_pinned_and_needs_unsafe_fixes() {
    let dir = scratch(
        &fixture("../../examples/llm-inference-split-terms.yaml"),
        "split.yaml",
    );
    let (code, out, err) = run(dir.path(), &["-f", "split.yaml", "--diff"], None);
    assert_eq!(code, 1, "AL001 is still there");
    assert_eq!(
        out, "",
        "the merge is unsafe: no diff without --unsafe-fixes"
    );
    assert!(
        err.contains("would fix 0 problems in 0 files; 1 more with --unsafe-fixes"),
        "{err}"
    );
    let (code, out, err) = run(
        dir.path(),
        &["-f", "split.yaml", "--diff", "--unsafe-fixes"],
        None,
    );
    assert_eq!(code, 1, "a diff is pending");
    assert_snapshot("split-terms.diff", &out);
    assert!(
        err.contains("would fix AL001: merge the 3 terms into one"),
        "{err}"
    );
    let original = std::fs::read_to_string(dir.path().join("split.yaml")).unwrap();
    assert_eq!(
        original,
        std::fs::read_to_string(fixture("../../examples/llm-inference-split-terms.yaml")).unwrap(),
        "--diff writes nothing"
    );
}

#[test]
fn fixing_the_runbook_example_gives_its_correct_deployment() {
    let dir = scratch(
        &fixture("../../examples/llm-inference-split-terms.yaml"),
        "split.yaml",
    );
    let (code, _, err) = run(dir.path(), &["-f", "split.yaml", "--fix"], None);
    assert_eq!(code, 1, "{err}");
    assert!(
        rules(dir.path(), "split.yaml").contains(&"AL001".to_string()),
        "unsafe: not applied"
    );
    let (code, _, err) = run(
        dir.path(),
        &["-f", "split.yaml", "--fix", "--unsafe-fixes"],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(!rules(dir.path(), "split.yaml").contains(&"AL001".to_string()));
    // The merged Deployment reads exactly as the runbook's correct one.
    let read = |p: &Path| {
        serde_json::to_value(
            serde_yaml::from_str::<serde_yaml::Value>(&std::fs::read_to_string(p).unwrap())
                .unwrap(),
        )
        .unwrap()
    };
    let fixed = read(&dir.path().join("split.yaml"));
    let correct = read(&fixture("../../examples/llm-inference.yaml"));
    let terms =
        "/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution";
    assert_eq!(fixed.pointer(terms), correct.pointer(terms));
}

#[test]
fn a_file_with_comments_and_documents_changes_only_in_the_fixed_lines() {
    let source = fixture("tests/fixtures/fix/comments-and-documents.yaml");
    let dir = scratch(&source, "multi.yaml");
    let (code, out, _) = run(dir.path(), &["-f", "multi.yaml", "--diff"], None);
    assert_eq!(code, 1);
    assert_snapshot("comments-and-documents.diff", &out);
    let (code, _, err) = run(dir.path(), &["-f", "multi.yaml", "--fix"], None);
    assert_eq!(
        code, 1,
        "computed on what is left: AL001 (unsafe, not applied) {err}"
    );
    let before = std::fs::read_to_string(&source).unwrap();
    let after = std::fs::read_to_string(dir.path().join("multi.yaml")).unwrap();
    let diff = similar::TextDiff::from_lines(&before, &after);
    let changed: Vec<String> = diff
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| format!("{}{}", c.tag(), c.value()))
        .collect();
    assert_eq!(
        changed,
        [
            "-            - matchExpressions: []\n",
            "-          - weight: 0\n",
            "+          - weight: 1\n",
            "-          - weight: \"150\"\n",
            "+          - weight: 100\n",
            "-        resources: {requests: {nvidia.com/gpu: 1}}\n",
            "+        resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}\n",
            "+            amd.com/gpu: \"2\"\n",
            "+          limits:\n",
            "+            nvidia.com/mig-1g.10gb: 1\n",
        ],
        "comments, quoting and the other documents are untouched"
    );
    let left = rules(dir.path(), "multi.yaml");
    for fixed in ["AL003", "AL006", "AL007"] {
        assert!(!left.contains(&fixed.to_string()), "{fixed} left: {left:?}");
    }
    assert!(
        left.contains(&"AL001".to_string()) && left.contains(&"AL012".to_string()),
        "unsafe ones stay: {left:?}"
    );
    // The second run has nothing safe left to do.
    let (_, _, err) = run(dir.path(), &["-f", "multi.yaml", "--fix"], None);
    assert!(
        err.contains("fixed 0 problems in 0 files; 2 more with --unsafe-fixes"),
        "{err}"
    );
}

#[test]
fn stdin_prints_the_fixed_stream_and_reports_on_stderr() {
    let input = "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources:\n      requests: {nvidia.com/gpu: 1}   # one\n";
    let (code, out, err) = run(
        Path::new("."),
        &["-f", "-", "--fix", "-o", "json"],
        Some(input),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("{input}      limits: {{nvidia.com/gpu: 1}}\n"));
    assert!(err.contains("<stdin>:8: fixed AL007"), "{err}");
    assert!(
        err.contains("\"findings\": []"),
        "the report goes to stderr: {err}"
    );
}

#[test]
fn helm_output_is_not_edited_and_points_at_its_template() {
    let dir = tempfile::tempdir().unwrap();
    let text = "---\n# Source: chart/templates/deployment.yaml\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {nvidia.com/gpu: 1}}\n";
    std::fs::write(dir.path().join("rendered.yaml"), text).unwrap();
    let (code, _, err) = run(dir.path(), &["-f", "rendered.yaml", "--fix"], None);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "not edited: AL007 is Helm output; fix the template chart/templates/deployment.yaml"
        ),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("rendered.yaml")).unwrap(),
        text
    );
}

const GPU_POD: &str = "kind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: x\n    resources:\n      requests:\n        nvidia.com/gpu: 1\n";

#[test]
fn json_stays_json_and_crlf_stays_crlf() {
    let dir = tempfile::tempdir().unwrap();
    let json = r#"{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}"#;
    std::fs::write(dir.path().join("pod.json"), json).unwrap();
    std::fs::write(dir.path().join("crlf.yaml"), GPU_POD.replace('\n', "\r\n")).unwrap();
    let (code, _, err) = run(
        dir.path(),
        &["-f", "pod.json", "-f", "crlf.yaml", "--fix"],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let fixed: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("pod.json")).unwrap())
            .expect("still JSON");
    assert_eq!(
        fixed["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        "1"
    );
    let crlf = std::fs::read_to_string(dir.path().join("crlf.yaml")).unwrap();
    assert!(
        crlf.ends_with("      limits:\r\n        nvidia.com/gpu: 1\r\n"),
        "{crlf:?}"
    );
    assert_eq!(
        crlf.matches('\n').count(),
        crlf.matches("\r\n").count(),
        "no bare LF"
    );
}

#[test]
fn a_file_named_twice_is_fixed_once_and_a_symlink_fixes_its_target() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("real.yaml"), GPU_POD).unwrap();
    std::os::unix::fs::symlink("real.yaml", dir.path().join("link.yaml")).unwrap();
    let (code, _, err) = run(
        dir.path(),
        &[
            "-f",
            "link.yaml",
            "-f",
            "./real.yaml",
            "-f",
            "real.yaml",
            "--fix",
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("fixed 1 problem in 1 file"), "{err}");
    assert!(
        std::fs::symlink_metadata(dir.path().join("link.yaml"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    let real = std::fs::read_to_string(dir.path().join("real.yaml")).unwrap();
    assert!(real.contains("limits:"), "{real}");
}

#[test]
fn a_read_only_file_is_not_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.yaml");
    std::fs::write(&path, GPU_POD).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let (code, out, err) = run(dir.path(), &["-f", "ro.yaml", "--fix"], None);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not fixed: ro.yaml: the file is read-only"),
        "{err}"
    );
    // Nothing is claimed fixed, and the report is about what is still on disk.
    assert!(!err.contains("fixed AL007"), "{err}");
    assert!(err.contains("fixed 0 problems in 0 files"), "{err}");
    assert!(
        out.contains("error[AL007]") && out.contains("1 error,"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), GPU_POD);
}

#[test]
fn a_byte_order_mark_does_not_shift_columns_or_fixes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bom.yaml"), format!("\u{feff}{GPU_POD}")).unwrap();
    let (_, out, _) = run(dir.path(), &["-f", "bom.yaml", "-o", "json"], None);
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["findings"][0]["column"], 9, "{json}");
    let (code, _, err) = run(dir.path(), &["-f", "bom.yaml", "--fix"], None);
    assert_eq!(code, 0, "{err}");
    let fixed = std::fs::read_to_string(dir.path().join("bom.yaml")).unwrap();
    assert!(
        fixed.starts_with('\u{feff}') && fixed.contains("limits:"),
        "{fixed}"
    );
}

/// The layouts of split terms found in real manifests are merged, each edited only where
/// the terms meet; one that cannot be rewritten is named, not passed by.
#[test]
fn split_terms_in_common_layouts_are_merged() {
    let pod = |terms: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n{terms}  containers: [{{name: c, image: x}}]\n"
        )
    };
    let cases = [
        (
            "compact items under block lists",
            "        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: a, operator: In, values: [x]}\n        - matchExpressions:\n          - {key: b, operator: In, values: [h100]}\n",
            "        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: a, operator: In, values: [x]}\n          - {key: b, operator: In, values: [h100]}\n",
        ),
        (
            "one flow list",
            "        nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In, values: [x]}]}, {matchExpressions: [{key: b, operator: In, values: [h100]}]}]\n",
            "        nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In, values: [x]}, {key: b, operator: In, values: [h100]}]}]\n",
        ),
        (
            "a dash followed by three spaces, quoted keys, a comment on a later term",
            "        nodeSelectorTerms:\n        -   \"matchExpressions\":\n            - key: a\n              operator: In\n              values: [x]\n        -   'matchExpressions':   # the GPU\n            - key: b\n              operator: In\n              values: [h100]\n",
            "        nodeSelectorTerms:\n        -   \"matchExpressions\":\n            - key: a\n              operator: In\n              values: [x]\n        # the GPU\n            - key: b\n              operator: In\n              values: [h100]\n",
        ),
    ];
    for (what, before, after) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.yaml"), pod(before)).unwrap();
        let (code, _, err) = run(
            dir.path(),
            &["-f", "p.yaml", "--fix", "--unsafe-fixes"],
            None,
        );
        assert_eq!(code, 0, "{what}: {err}");
        assert!(err.contains("fixed AL001"), "{what}: {err}");
        let fixed = std::fs::read_to_string(dir.path().join("p.yaml")).unwrap();
        assert_eq!(fixed, pod(after), "{what}");
        assert!(rules(dir.path(), "p.yaml").is_empty(), "{what}");
    }
    // An empty term among them: AL001 names itself as a fix by hand.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.yaml"),
        pod("        nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In, values: [x]}]}, {matchFields: [{key: metadata.name, operator: In, values: [n1]}]}, {matchExpressions: [{key: b, operator: In, values: [h100]}]}]\n"),
    )
    .unwrap();
    let (code, _, err) = run(
        dir.path(),
        &["-f", "p.yaml", "--diff", "--unsafe-fixes"],
        None,
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("p.yaml:8: no automatic fix for AL001:") && err.contains("; 1 to fix by hand"),
        "{err}"
    );
    let (_, out, _) = run(dir.path(), &["-f", "p.yaml", "-o", "json"], None);
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["findings"][0]["fixable"], "manual", "{json}");
}

/// A fix applied in a later round (it touched an earlier one) is said at the line the file
/// has it on, not the line of the partly fixed text.
#[test]
fn fixes_of_later_rounds_name_the_lines_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: a, operator: In, values: [x]}]\n        - matchExpressions: []\n        - matchExpressions: []\n  containers: [{name: c, image: x}]\n",
    )
    .unwrap();
    let (code, _, err) = run(dir.path(), &["-f", "p.yaml", "--diff"], None);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("p.yaml:10: would fix AL003") && err.contains("p.yaml:11: would fix AL003"),
        "{err}"
    );
}

/// Another user who can write the manifest's directory swaps `deploy.yaml` for a symlink to
/// a file of the victim's between placekit's read and its write. The race is won
/// deterministically: the second input is a FIFO, so the linter is held after it has read
/// `deploy.yaml` (inputs are read in order) until the test, having swapped the file, writes
/// the FIFO. The victim's file is untouched, the symlink is not followed, nothing is
/// claimed fixed, and the exit code says a file could not be written.
#[test]
fn a_manifest_swapped_for_a_symlink_after_it_was_read_is_not_written_through() {
    use std::io::Write as _;
    use std::sync::mpsc;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let victim = home.path().join(".bashrc");
    let bashrc = "export PATH=$HOME/bin:$PATH\n";
    std::fs::write(&victim, bashrc).unwrap();
    let manifest = dir.path().join("deploy.yaml");
    std::fs::write(&manifest, GPU_POD).unwrap();
    let fifo = dir.path().join("later.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .bounded_status()
        .expect("mkfifo runs");
    assert!(made.success());
    let child = std::process::Command::new(common::bin())
        .args(["-f", "deploy.yaml", "-f", "later.yaml", "--fix"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (opened, wait_opened) = mpsc::channel();
    let (go, wait_go) = mpsc::channel::<()>();
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || {
            // Returns once the linter has opened the FIFO's read end.
            let mut end = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            opened.send(()).unwrap();
            wait_go.recv().unwrap();
            end.write_all(b"kind: ConfigMap\nmetadata:\n  name: c\n")
                .unwrap();
        }
    });
    if wait_opened.recv_timeout(Duration::from_secs(60)).is_err() {
        let mut child = child;
        let _ = child.kill();
        panic!("the linter never opened the FIFO");
    }
    std::fs::remove_file(&manifest).unwrap();
    std::os::unix::fs::symlink(&victim, &manifest).unwrap();
    go.send(()).unwrap();
    writer.join().unwrap();
    let out = placekit_testserver::process::wait_output(child, "the plugin");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), bashrc, "{err}");
    assert!(
        std::fs::symlink_metadata(&manifest)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the planted symlink is left as it is: {err}"
    );
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: not fixed: deploy.yaml: it changed on disk after it was read"),
        "{err}"
    );
    assert!(err.contains("fixed 0 problems in 0 files"), "{err}");
}
