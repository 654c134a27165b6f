//! Inputs, output formats and bad input of `kubectl affinity-lint`, through the binary.
//! Text output of the main cases is pinned in `tests/snapshots/` (set
//! `UPDATE_SNAPSHOTS=1` to rewrite them after an intended change, then review the diff).

mod common;

use common::{assert_snapshot, run_in};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use placekit_testserver::process::Bounded as _;
use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubectl-affinity_lint")
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn text_output_of_the_runbook_split_terms_is_pinned() {
    let dir = examples();
    let (code, out, _) = run_in(&dir, &["-f", "llm-inference-split-terms.yaml"], None);
    assert_eq!(code, 1);
    assert_snapshot("split-terms.txt", &out);
    let (code, out, _) = run_in(&dir, &["-f", "llm-inference.yaml"], None);
    assert_eq!(code, 0);
    assert_snapshot("clean.txt", &out);
}

#[test]
fn github_annotations_are_pinned() {
    let (code, out, _) = run_in(
        &examples(),
        &["-f", "llm-inference-split-terms.yaml", "-o", "github"],
        None,
    );
    assert_eq!(code, 1);
    assert_snapshot("split-terms.github.txt", &out);
}

#[test]
fn sarif_has_rule_metadata_and_physical_locations() {
    let (code, out, _) = run_in(
        &examples(),
        &["-f", "llm-inference-split-terms.yaml", "-o", "sarif"],
        None,
    );
    assert_eq!(code, 1);
    let sarif = json(&out);
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "affinity-lint");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 21);
    assert!(
        rules[0]["help"]["markdown"]
            .as_str()
            .unwrap()
            .contains("## Fix")
    );
    let result = &run["results"][0];
    assert_eq!(result["ruleId"], "AL001");
    assert_eq!(result["ruleIndex"], 0);
    assert_eq!(result["level"], "error");
    let location = &result["locations"][0]["physicalLocation"];
    assert_eq!(
        location["artifactLocation"]["uri"],
        "llm-inference-split-terms.yaml"
    );
    assert!(location["region"]["startLine"].as_u64().unwrap() > 1);
    assert_eq!(location["region"]["startColumn"], 13);
}

#[test]
fn sarif_validates_against_the_official_schema_where_it_can_be_had() {
    // The schema ships in the npm package @microsoft/sarif-multitool-linux; CI fetches it
    // into target/sarif-schema/ when npm is available (see .ci/run). Without it, skip.
    let schema_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/sarif-schema/sarif-2.1.0.json");
    let Ok(text) = std::fs::read_to_string(&schema_path) else {
        placekit_testserver::require::skip(
            "SARIF validation against the official schema (the structural test above still runs)",
            placekit_testserver::require::Need::SarifSchema,
            &format!("{} not found", schema_path.display()),
        );
        return;
    };
    let schema: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        schema["title"].as_str().map(|t| t.contains("SARIF")),
        Some(true)
    );
    let (_, out, _) = run_in(
        &examples(),
        &["-f", "llm-inference-split-terms.yaml", "-o", "sarif"],
        None,
    );
    let sarif = json(&out);
    // Required properties of the top-level object, a run, a tool driver and a result.
    for (object, definition) in [
        (&sarif, None),
        (&sarif["runs"][0], Some("run")),
        (&sarif["runs"][0]["tool"]["driver"], Some("toolComponent")),
        (&sarif["runs"][0]["results"][0], Some("result")),
    ] {
        let def = match definition {
            Some(d) => &schema["definitions"][d],
            None => &schema,
        };
        for required in def["required"].as_array().into_iter().flatten() {
            let key = required.as_str().unwrap();
            assert!(
                object.get(key).is_some(),
                "{definition:?} lacks required {key}"
            );
        }
        for key in object.as_object().unwrap().keys() {
            assert!(
                def["properties"].get(key).is_some(),
                "{definition:?} has unknown property {key}"
            );
        }
    }
}

#[test]
fn inputs_directories_stdin_json_lists_helm_and_custom_resources() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b");
    std::fs::create_dir_all(&nested).unwrap();
    let tolerate_all = "  template:\n    metadata: {labels: {app: x}}\n    spec:\n      containers: [{name: c, image: x}]\n      tolerations: [{operator: Exists}]\n";
    std::fs::write(
        dir.path().join("top.yaml"),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: top}}\nspec:\n{tolerate_all}"
        ),
    )
    .unwrap();
    std::fs::write(nested.join("deep.yml"), format!("# Source: chart/templates/rollout.yaml\napiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {{name: deep}}\nspec:\n{tolerate_all}")).unwrap();
    std::fs::write(nested.join("notes.txt"), "not yaml: [").unwrap();
    std::fs::write(nested.join("list.json"), r#"{"kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [], "tolerations": [{"operator": "Exists"}]}}]}"#).unwrap();

    let (_, out, _) = run_in(dir.path(), &["-f", ".", "-o", "json"], None);
    let names: Vec<String> = json(&out)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["object"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["top"], "without -R only the top directory");

    let (code, out, _) = run_in(dir.path(), &["-f", ".", "-R", "-o", "json"], None);
    assert_eq!(code, 1);
    let report = json(&out);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 3, "{out}");
    let rollout = findings
        .iter()
        .find(|f| f["object"]["kind"] == "Rollout")
        .unwrap();
    assert_eq!(rollout["helmTemplate"], "chart/templates/rollout.yaml");
    assert!(findings.iter().any(|f| f["object"]["kind"] == "Pod"));
    assert_eq!(report["summary"]["files"], 3);

    let stdin = std::fs::read(examples().join("llm-inference-split-terms.yaml")).unwrap();
    let (code, out, _) = run_in(dir.path(), &["-f", "-", "-o", "json"], Some(&stdin));
    assert_eq!(code, 1);
    assert_eq!(json(&out)["findings"][0]["file"], "<stdin>");
}

#[test]
fn a_malformed_document_is_reported_and_the_others_are_still_linted() {
    let dir = tempfile::tempdir().unwrap();
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: []\n  tolerations: [{operator: Exists}]\n---\nkind: Pod\nmetadata: [unclosed\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: c}\nspec:\n  containers: []\n  tolerations: [{operator: Exists}]\n";
    std::fs::write(dir.path().join("mixed.yaml"), text).unwrap();
    let (code, out, _) = run_in(dir.path(), &["-f", "mixed.yaml", "-o", "json"], None);
    assert_eq!(code, 2);
    let report = json(&out);
    assert_eq!(report["findings"].as_array().unwrap().len(), 2);
    let error = &report["inputErrors"][0];
    assert_eq!(error["file"], "mixed.yaml");
    assert_eq!(error["line"], 10, "{error}");
    let (_, text_out, _) = run_in(dir.path(), &["-f", "mixed.yaml"], None);
    assert!(
        text_out.starts_with("input error: mixed.yaml:10:"),
        "{text_out}"
    );
}

#[test]
fn bad_input_is_a_clear_error_with_exit_2_and_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut bomb = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n",
    );
    for (prev, name) in ["a", "b", "c", "d", "e", "f", "g", "h"]
        .iter()
        .zip(["b", "c", "d", "e", "f", "g", "h", "i"])
    {
        bomb.push_str(&format!("  {name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
    }
    std::fs::write(dir.path().join("bomb.yaml"), bomb).unwrap();
    std::fs::write(
        dir.path().join("binary.yaml"),
        [0x7f, b'E', b'L', b'F', 0, 1, 2],
    )
    .unwrap();
    std::fs::write(dir.path().join("garbage.yaml"), "{{{{ ]]] : : :\n\t\u{1}").unwrap();
    let cases = [
        ("bomb.yaml", "alias bomb"),
        ("binary.yaml", "binary data"),
        ("garbage.yaml", "garbage.yaml:1:"),
        ("missing.yaml", "missing.yaml"),
    ];
    for (file, expected) in cases {
        let (code, out, err) = run_in(dir.path(), &["-f", file], None);
        assert_eq!(code, 2, "{file}: {out}{err}");
        assert!(out.contains(expected), "{file}: {out}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A file over the input limit is refused without being read into memory.
    let big = dir.path().join("big.yaml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(100 * 1024 * 1024).unwrap();
    let (code, out, _) = run_in(dir.path(), &["-f", "big.yaml"], None);
    assert_eq!(code, 2);
    assert!(out.contains("over the 67108864-byte input limit"), "{out}");
    let (code, _, err) = run_in(dir.path(), &[], None);
    assert_eq!(code, 2);
    assert!(err.contains("no input"));
}

#[test]
fn a_directory_of_ten_thousand_files() {
    let dir = tempfile::tempdir().unwrap();
    let many = dir.path().join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..10_000 {
        std::fs::write(
            many.join(format!("p{i:05}.yaml")),
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec: {{containers: []}}\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(many.join("p00042.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [], tolerations: [{operator: Exists}]}\n").unwrap();
    let (code, out, _) = run_in(dir.path(), &["-f", "many", "-o", "json"], None);
    assert_eq!(code, 1);
    let report = json(&out);
    assert_eq!(report["summary"]["files"], 10_000);
    assert_eq!(report["findings"].as_array().unwrap().len(), 1);
}

#[test]
fn a_closed_stdout_exits_quietly() {
    let mut child = Command::new(bin())
        .args(["-f", "llm-inference-split-terms.yaml"])
        .current_dir(examples())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = placekit_testserver::process::wait_output(child, "the plugin");
    assert!(
        String::from_utf8_lossy(&out.stderr).is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn completions_are_generated_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let (code, out, err) = run_in(&examples(), &["completion", shell], None);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains("kubectl-affinity_lint"), "{shell}");
    }
}

#[test]
fn examples_fit_an_80_column_terminal() {
    let binary = Path::new(env!("CARGO_BIN_EXE_kubectl-affinity_lint"));
    let long = placekit_testserver::harness::long_example_lines(binary, 80);
    assert!(
        long.is_empty(),
        "example lines over 80 columns:\n{}",
        long.join("\n")
    );
}

/// Text output is printed file by file as files are done: a report over a monorepo starts
/// before its last file is read. The second file here is a pipe nobody writes to until the
/// first file's finding has been printed.
#[test]
fn text_output_streams_file_by_file() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    std::fs::copy(
        examples().join("llm-inference-split-terms.yaml"),
        first.join("split.yaml"),
    )
    .unwrap();
    let pipe = second.join("pipe.yaml");
    let made = Command::new("mkfifo").arg(&pipe).bounded_status().unwrap();
    assert!(made.success());
    // A FIFO found by walking a directory is skipped (it could hang the linter); one named
    // on the command line is read, as `kubectl apply -f <(...)` reads it.
    let mut child = Command::new(bin())
        .arg("-R")
        .arg("-f")
        .arg(&first)
        .arg("-f")
        .arg(&pipe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The pipe is written when the test says so, or after 20 s: a linter that printed only
    // at the end fails the test instead of hanging it.
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let content = std::fs::read(examples().join("llm-inference-split-terms.yaml")).unwrap();
    let writer = std::thread::spawn(move || {
        let timed_out = wait
            .recv_timeout(std::time::Duration::from_secs(20))
            .is_err();
        let mut pipe = std::fs::OpenOptions::new().write(true).open(&pipe).unwrap();
        pipe.write_all(&content).unwrap();
        timed_out
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first_line = String::new();
    stdout.read_line(&mut first_line).unwrap();
    let _ = go.send(());
    assert!(
        !writer.join().unwrap(),
        "nothing was printed before the second file was read"
    );
    assert!(
        first_line.contains("a/split.yaml:") && first_line.contains("error[AL001]"),
        "{first_line}"
    );
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(rest.contains("b/pipe.yaml:"), "{rest}");
    assert!(
        rest.ends_with("2 errors, 0 warnings, 0 infos in 2 objects of 2 files\n"),
        "{rest}"
    );

    // Walking the directory with the FIFO in it: reported and skipped, never waited on.
    let walked = Command::new(bin())
        .args(["-R", "-f"])
        .arg(dir.path())
        .bounded_output()
        .unwrap();
    let out = String::from_utf8_lossy(&walked.stdout);
    assert!(
        out.contains("input error: ") && out.contains("b/pipe.yaml: not a regular file: skipped"),
        "{out}"
    );
    assert_eq!(walked.status.code(), Some(2), "an input error: {out}");
}

/// `-R` walks directories as `kubectl apply -R` does: a symlink to a directory is not
/// followed (no loop, no file reported twice), a symlink to a file is read.
#[test]
fn recursion_does_not_follow_directory_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let deploy = dir.path().join("deploy");
    std::fs::create_dir_all(&deploy).unwrap();
    std::fs::copy(
        examples().join("llm-inference-split-terms.yaml"),
        deploy.join("split.yaml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&deploy, deploy.join("loop")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::copy(
        examples().join("llm-inference-split-terms.yaml"),
        outside.path().join("shared.yaml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("shared.yaml"),
        dir.path().join("ext.yaml"),
    )
    .unwrap();
    let (code, out, err) = run_in(dir.path(), &["-R", "-f", ".", "-o", "json"], None);
    assert_eq!(code, 1, "{err}");
    let json = json(&out);
    let files: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "AL001")
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["deploy/split.yaml", "ext.yaml"], "{json}");
}

/// Only Helm's own `# Source: CHART/templates/FILE` marks Helm output; a hand-written
/// `# Source:` note does not stop a fix.
#[test]
fn a_hand_written_source_comment_is_not_helm_output() {
    let dir = tempfile::tempdir().unwrap();
    let text = "# Source: copied from the vendor's docs\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {nvidia.com/gpu: 1}}\n";
    std::fs::write(dir.path().join("pod.yaml"), text).unwrap();
    let (code, _, err) = run_in(dir.path(), &["-f", "pod.yaml", "--fix"], None);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("fixed AL007"), "{err}");
    let (_, out, _) = run_in(
        dir.path(),
        &["-f", "-", "-o", "json"],
        Some(b"# Source: gpu/templates/pod.yaml\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: 1}}}]\n"),
    );
    assert_eq!(
        json(&out)["findings"][0]["helmTemplate"],
        "gpu/templates/pod.yaml"
    );
}

/// A manifest from a pull request or a chart must not drive the reviewer's terminal: its
/// file name, object name, source line and fix reach the text report (and the `--fix`
/// summary and GitHub annotations) with control and bidirectional characters escaped.
#[test]
fn hostile_strings_in_a_manifest_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let name = "ev\u{1b}[31mil\u{202e}lmay.yaml";
    std::fs::write(
        dir.path().join(name),
        "kind: Pod\nmetadata:\n  name: \"p\\e]0;pwned\\a\\u202e\\nforged\"\nspec:\n  containers:\n  - name: \"c\\e[2J\"\n    image: x\n    resources:\n      requests:\n        nvidia.com/gpu: 1 # \u{1b}[2J\n",
    )
    .unwrap();
    let raw = |text: &str| {
        text.chars()
            .any(|c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
    };
    let (_, out, _) = run_in(dir.path(), &["-f", "."], None);
    assert!(
        out.contains("Pod p\\x1b]0;pwned\\x07\\u{202e}\\x0aforged"),
        "{out}"
    );
    assert!(out.contains("nvidia.com/gpu: 1 # \\x1b[2J"), "{out}");
    // The fix last: it edits the file.
    for args in [
        vec!["-f", "."],
        vec!["-f", ".", "-o", "github"],
        vec!["-f", ".", "--fix"],
    ] {
        let (code, out, err) = run_in(dir.path(), &args, None);
        assert!(code <= 2, "{args:?}: {code} {err}");
        assert!(!raw(&out), "{args:?} stdout: {out:?}");
        assert!(!raw(&err), "{args:?} stderr: {err:?}");
        assert!(
            out.contains("ev\\x1b[31mil\\u{202e}lmay.yaml")
                || err.contains("ev\\x1b[31mil\\u{202e}lmay.yaml"),
            "{args:?}: {out} {err}"
        );
    }
}

/// A CRD among the files linted that declares nothing (a preserve-unknown-fields schema,
/// its only version not even served) cannot silence AL018 on a kind whose templates the
/// linter knows: the misplaced nodeSelector beside a RayCluster's head pod spec is found
/// with or without it.
#[test]
fn a_crd_in_the_input_that_declares_nothing_does_not_silence_a_rule() {
    let dir = tempfile::tempdir().unwrap();
    let ray = "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: r, namespace: ml}\nspec:\n  headGroupSpec:\n    rayStartParams: {}\n    template:\n      nodeSelector: {pool: gpu}\n      spec:\n        containers: [{name: head, image: ray}]\n";
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: rayclusters.ray.io}\nspec:\n  group: ray.io\n  names: {kind: RayCluster, plural: rayclusters}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: false\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";
    std::fs::write(dir.path().join("ray.yaml"), ray).unwrap();
    let alone = Command::new(bin())
        .args(["-f", dir.path().to_str().unwrap(), "-o", "json"])
        .output()
        .unwrap();
    let count = |out: &std::process::Output| {
        json(&String::from_utf8_lossy(&out.stdout))["findings"]
            .as_array()
            .map(|f| f.iter().filter(|f| f["rule"] == "AL018").count())
            .unwrap_or(0)
    };
    assert_eq!(
        count(&alone),
        1,
        "{}",
        String::from_utf8_lossy(&alone.stdout)
    );
    std::fs::write(dir.path().join("crd.yaml"), crd).unwrap();
    let beside = Command::new(bin())
        .args(["-f", dir.path().to_str().unwrap(), "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        count(&beside),
        1,
        "{}",
        String::from_utf8_lossy(&beside.stdout)
    );
    // Served, and still declaring nothing: the table judges.
    std::fs::write(
        dir.path().join("crd.yaml"),
        crd.replace("served: false", "served: true"),
    )
    .unwrap();
    let served = Command::new(bin())
        .args(["-f", dir.path().to_str().unwrap(), "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        count(&served),
        1,
        "{}",
        String::from_utf8_lossy(&served.stdout)
    );
}
