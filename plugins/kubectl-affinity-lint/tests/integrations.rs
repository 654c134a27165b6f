//! The CI integrations, run the way their ecosystems run them: the pre-commit hook's entry
//! on a git repository's staged files, the GitHub Action's script with a locally built
//! release archive, and GitLab's code-quality format.

use std::path::{Path, PathBuf};
use std::process::Command;

use placekit_testserver::process::Bounded as _;
use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kubectl-affinity_lint")
}

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::to_value(serde_yaml::from_str::<serde_yaml::Value>(&text).unwrap()).unwrap()
}

fn split_terms() -> String {
    std::fs::read_to_string(repo_file("examples/llm-inference-split-terms.yaml")).unwrap()
}

fn correct() -> String {
    std::fs::read_to_string(repo_file("examples/llm-inference.yaml")).unwrap()
}

#[test]
fn gitlab_code_quality_has_the_required_fields_and_stable_fingerprints() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), split_terms()).unwrap();
    let run = || {
        let out = Command::new(bin())
            .args(["-f", "a.yaml", "-o", "gitlab"])
            .current_dir(dir.path())
            .bounded_output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let report = run();
    let issues = report.as_array().unwrap();
    assert!(!issues.is_empty());
    for issue in issues {
        assert!(issue["description"].as_str().is_some_and(|d| !d.is_empty()));
        assert!(
            issue["check_name"]
                .as_str()
                .is_some_and(|c| c.starts_with("AL"))
        );
        assert!(issue["fingerprint"].as_str().is_some_and(|f| f.len() >= 16));
        assert!(
            ["info", "minor", "major", "critical", "blocker"]
                .contains(&issue["severity"].as_str().unwrap()),
            "{issue}"
        );
        assert_eq!(issue["location"]["path"], "a.yaml");
        assert!(issue["location"]["lines"]["begin"].as_u64().unwrap() >= 1);
    }
    let al001 = issues
        .iter()
        .find(|i| i["check_name"] == "AL001")
        .unwrap()
        .clone();
    assert_eq!(al001["severity"], "major");
    let mut fingerprints: Vec<&str> = issues
        .iter()
        .map(|i| i["fingerprint"].as_str().unwrap())
        .collect();
    fingerprints.sort();
    fingerprints.dedup();
    assert_eq!(
        fingerprints.len(),
        issues.len(),
        "each issue its own fingerprint"
    );
    // A line added above moves the finding, not its fingerprint.
    std::fs::write(
        dir.path().join("a.yaml"),
        format!("# moved\n{}", split_terms()),
    )
    .unwrap();
    let moved = run();
    let again = moved
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["check_name"] == "AL001")
        .unwrap();
    assert_eq!(again["fingerprint"], al001["fingerprint"]);
    assert_eq!(
        again["location"]["lines"]["begin"].as_u64().unwrap(),
        al001["location"]["lines"]["begin"].as_u64().unwrap() + 1
    );
}

/// A git repository with files, some staged.
fn git_repo(files: &[(&str, &str)], staged: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .bounded_output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let mut add = vec!["add"];
    add.extend(staged);
    git(&add);
    dir
}

/// What pre-commit runs for a hook: `entry args... staged-files-of-its-types`.
fn run_hook(hook: &Value, repo: &Path) -> (i32, String) {
    let staged = Command::new("git")
        .args(["diff", "--cached", "--name-only"])
        .current_dir(repo)
        .bounded_output()
        .unwrap();
    let types: Vec<&str> = hook["types_or"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let exclude = hook["exclude"]
        .as_str()
        .map(|e| regex::Regex::new(e).unwrap());
    let files: Vec<String> = String::from_utf8_lossy(&staged.stdout)
        .lines()
        .filter(|f| exclude.as_ref().is_none_or(|e| !e.is_match(f)))
        .filter(|f| {
            let ext = Path::new(f)
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("");
            (types.contains(&"yaml") && matches!(ext, "yaml" | "yml"))
                || (types.contains(&"json") && ext == "json")
        })
        .map(str::to_string)
        .collect();
    if files.is_empty() {
        return (0, String::new());
    }
    let entry: Vec<&str> = hook["entry"].as_str().unwrap().split_whitespace().collect();
    // The binary as installed: on PATH under the name the entry uses.
    let bin_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(bin(), bin_dir.path().join(entry[0])).unwrap();
    let out = Command::new(bin_dir.path().join(entry[0]))
        .args(&entry[1..])
        .args(
            hook["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap()),
        )
        .args(&files)
        .current_dir(repo)
        .env("NO_COLOR", "1")
        .bounded_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn the_pre_commit_hook_lints_the_staged_manifests() {
    let hooks = yaml(&repo_file(".pre-commit-hooks.yaml"));
    let hook = hooks
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "affinity-lint")
        .unwrap()
        .clone();
    for field in ["id", "name", "entry", "language"] {
        assert!(hook[field].is_string(), "pre-commit requires {field}");
    }
    let (split, good) = (split_terms(), correct());
    let files = [
        ("split.yaml", split.as_str()),
        ("good.yaml", good.as_str()),
        ("notes.md", "not a manifest"),
    ];
    let repo = git_repo(&files, &["split.yaml", "good.yaml", "notes.md"]);
    // A chart's templates are not YAML until rendered: the hook leaves them out.
    std::fs::create_dir_all(repo.path().join("chart/templates")).unwrap();
    std::fs::write(
        repo.path().join("chart/templates/deployment.yaml"),
        "kind: Deployment\nspec:\n  replicas: {{ .Values.replicas }}\n",
    )
    .unwrap();
    Command::new("git")
        .args(["add", "chart"])
        .current_dir(repo.path())
        .bounded_status()
        .unwrap();
    let (code, out) = run_hook(&hook, repo.path());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("split.yaml:31:13: error[AL001]"), "{out}");
    let repo = git_repo(&files, &["good.yaml", "notes.md"]);
    let (code, out) = run_hook(&hook, repo.path());
    assert_eq!(code, 0, "only the staged files are linted: {out}");

    // The fixing hook applies the safe fixes to the staged file.
    let fixer = hooks
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "affinity-lint-fix")
        .unwrap()
        .clone();
    let no_limit = correct().replace(
        "            memory: 48Gi\n            nvidia.com/gpu: \"1\"\n",
        "            memory: 48Gi\n",
    );
    assert_ne!(
        no_limit,
        correct(),
        "the fixture changed: adjust the replacement"
    );
    let repo = git_repo(&[("gpu.yaml", &no_limit)], &["gpu.yaml"]);
    let (code, out) = run_hook(&fixer, repo.path());
    assert!(out.contains("fixed AL007"), "{out}");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn the_github_action_is_valid_and_its_script_runs() {
    let action = yaml(&repo_file("action.yml"));
    assert!(action["name"].is_string() && action["description"].is_string());
    assert_eq!(action["runs"]["using"], "composite");
    for step in action["runs"]["steps"].as_array().unwrap() {
        assert!(
            step["uses"].is_string() || (step["run"].is_string() && step["shell"].is_string()),
            "a composite step needs `uses`, or `run` with `shell`: {step}"
        );
    }
    let run_step = action["runs"]["steps"][0]["run"].as_str().unwrap();
    assert!(run_step.contains("$GITHUB_ACTION_PATH/action/run.sh"));
    assert!(
        action["runs"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))),
        "uploads SARIF to code scanning"
    );

    // A release archive as the release workflow builds it, and the script on it.
    let work = tempfile::tempdir().unwrap();
    let staging = work.path().join("staging");
    std::fs::create_dir(&staging).unwrap();
    std::fs::copy(bin(), staging.join("kubectl-affinity_lint")).unwrap();
    std::fs::copy(repo_file("LICENSE"), staging.join("LICENSE")).unwrap();
    let archive = work.path().join("affinity-lint_v0.1.0_linux_amd64.tar.gz");
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .args([
            "-C",
            staging.to_str().unwrap(),
            "kubectl-affinity_lint",
            "LICENSE",
        ])
        .bounded_status()
        .unwrap();
    assert!(tar.success());
    let manifests = work.path().join("deploy");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(manifests.join("split.yaml"), split_terms()).unwrap();
    // The Action's default is the whole repository: a chart's templates are skipped.
    std::fs::create_dir_all(work.path().join("chart/templates")).unwrap();
    std::fs::write(
        work.path().join("chart/templates/deployment.yaml"),
        "kind: Deployment\nspec:\n  replicas: {{ .Values.replicas }}\n",
    )
    .unwrap();
    let sarif = work.path().join("out.sarif");
    let out = Command::new("bash")
        .arg(repo_file("action/run.sh"))
        .current_dir(work.path())
        .env("AFFINITY_LINT_ARCHIVE", &archive)
        .env("AFFINITY_LINT_FILES", ".")
        .env("AFFINITY_LINT_FAIL_ON", "error")
        .env("AFFINITY_LINT_SARIF", &sarif)
        .bounded_output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("::error file=deploy/split.yaml,line=31"),
        "{stdout}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    assert_eq!(report["version"], "2.1.0");
    let result = &report["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "AL001");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "deploy/split.yaml",
        "repository-relative, no ./"
    );

    // Paths with spaces, one per line; and a bad fail-on leaves a valid, empty report.
    std::fs::create_dir(work.path().join("my deploy")).unwrap();
    std::fs::write(work.path().join("my deploy/split.yaml"), split_terms()).unwrap();
    let run = |files: &str, fail_on: &str| {
        let out = Command::new("bash")
            .arg(repo_file("action/run.sh"))
            .current_dir(work.path())
            .env("AFFINITY_LINT_ARCHIVE", &archive)
            .env("AFFINITY_LINT_FILES", files)
            .env("AFFINITY_LINT_FAIL_ON", fail_on)
            .env("AFFINITY_LINT_SARIF", &sarif)
            .bounded_output()
            .unwrap();
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            report,
        )
    };
    let (code, stdout, report) = run("my deploy/split.yaml\ndeploy", "error");
    assert_eq!(code, Some(1), "{stdout}");
    let uris: Vec<&str> = report["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(
        uris,
        ["deploy/split.yaml", "my%20deploy/split.yaml"],
        "{report}"
    );
    let (code, stdout, report) = run("deploy", "critical");
    assert_eq!(code, Some(2));
    assert!(
        stdout.contains("::error title=affinity-lint::the fail-on input must be"),
        "{stdout}"
    );
    assert_eq!(report["runs"][0]["results"], serde_json::json!([]));

    // The archive is checked against SHA256SUMS before anything in it runs: a tampered
    // archive (or one the sums do not list) is refused, with a valid empty report.
    let sha = Command::new("sha256sum")
        .arg(&archive)
        .bounded_output()
        .unwrap();
    let digest = String::from_utf8_lossy(&sha.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let name = "affinity-lint_v0.1.0_linux_amd64.tar.gz";
    let verify = |sums: &str| {
        let file = work.path().join("SHA256SUMS");
        std::fs::write(&file, sums).unwrap();
        let out = Command::new("bash")
            .arg(repo_file("action/run.sh"))
            .current_dir(work.path())
            .env("AFFINITY_LINT_ARCHIVE", &archive)
            .env("AFFINITY_LINT_SHA256SUMS", &file)
            .env("AFFINITY_LINT_FILES", "deploy")
            .env("AFFINITY_LINT_SARIF", &sarif)
            .bounded_output()
            .unwrap();
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            report,
        )
    };
    let (code, stdout, _) = verify(&format!("{digest}  {name}\n"));
    assert_eq!(code, Some(1), "checked and run: {stdout}");
    let tampered = format!("{}  {name}\n", "0".repeat(64));
    let (code, stdout, report) = verify(&tampered);
    assert_eq!(code, Some(2), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "::error title=affinity-lint::{name} does not match the release's SHA256SUMS"
        )),
        "{stdout}"
    );
    assert_eq!(report["runs"][0]["results"], serde_json::json!([]));
    let (code, stdout, _) = verify(&format!("{digest}  other.tar.gz\n"));
    assert_eq!(code, Some(2), "{stdout}");
    assert!(
        stdout.contains("is not in the release's SHA256SUMS"),
        "{stdout}"
    );
}

#[test]
fn ci_formats_carry_input_errors_templates_and_the_object() {
    let dir = tempfile::tempdir().unwrap();
    // A chart template that happens to parse as YAML is still a template.
    std::fs::write(
        dir.path().join("template.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include \"x.fullname\" . }}\nspec:\n  replicas: {{ .Values.replicas }}\n",
    )
    .unwrap();
    // Helm output on stdin: the template it came from is named in every format.
    let rendered = format!(
        "---\n# Source: chart/templates/deployment.yaml\n{}",
        split_terms()
    );
    std::fs::write(dir.path().join("rendered.yaml"), &rendered).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(bin())
            .args(args)
            .current_dir(dir.path())
            .bounded_output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, sarif) = run(&["-f", "template.yaml", "-f", "rendered.yaml", "-o", "sarif"]);
    assert_eq!(code, Some(2));
    let sarif: Value = serde_json::from_str(&sarif).unwrap();
    let invocation = &sarif["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    let note = &invocation["toolExecutionNotifications"][0];
    assert!(
        note["message"]["text"]
            .as_str()
            .unwrap()
            .contains("unrendered Helm/Go template"),
        "{note}"
    );
    let message = sarif["runs"][0]["results"][0]["message"]["text"]
        .as_str()
        .unwrap();
    assert!(
        message.contains(
            "(Deployment ml/llm-inference, Helm template chart/templates/deployment.yaml)"
        ),
        "{message}"
    );
    let (_, github) = run(&["-f", "rendered.yaml", "-o", "github"]);
    assert!(
        github.contains("title=AL001 Deployment ml/llm-inference::"),
        "{github}"
    );
    assert!(
        github.contains("Helm template chart/templates/deployment.yaml"),
        "{github}"
    );
    // Argo's own {{...}} placeholders are not Go templates.
    std::fs::write(
        dir.path().join("argo.yaml"),
        "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {generateName: x-}\nspec:\n  entrypoint: main\n  templates:\n  - name: main\n    container:\n      image: \"{{inputs.parameters.image}}\"\n",
    )
    .unwrap();
    assert_eq!(run(&["-f", "argo.yaml"]).0, Some(0));
}

#[test]
fn policy_actions_are_case_insensitive_and_exclusive() {
    let run = |args: &[&str]| Command::new(bin()).args(args).bounded_output().unwrap();
    let warn = run(&["policy", "--action", "Warn,Audit"]);
    assert!(warn.status.success());
    assert!(String::from_utf8_lossy(&warn.stdout).contains("validationActions: [Warn, Audit]"));
    let both = run(&["policy", "--action", "deny,warn"]);
    assert_eq!(both.status.code(), Some(2));
}
