//! `kubectl nodelabel <TAB>` through kubectl's own completion (`kubectl __complete`), with
//! the `kubectl_complete-nodelabel` helper on PATH: subcommands, node names and label keys
//! from the cluster, `-l` keys without a trailing space, contexts from the kubeconfig and
//! snapshot paths from the state directory. On the test API server, or on the real cluster
//! with `PLACEKIT_E2E_KUBECONFIG`.

use std::path::Path;

use placekit_testserver::harness::{Harness, kubectl_complete};
use placekit_testserver::process::Bounded as _;

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_completes_nodes_keys_contexts_and_snapshots() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let env = [
        ("KUBECONFIG", h.kubeconfig.as_path()),
        ("PLACEKIT_STATE_DIR", h.state_dir.as_path()),
    ];
    let complete = |words: &[&str]| {
        tokio::task::block_in_place(|| kubectl_complete(binary(), "nodelabel", words, &env))
    };
    let Some((subcommands, directive)) = complete(&[""]) else {
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

/// What `kubectl __complete nodelabel <words>` answers with `path` as PATH (None without
/// kubectl).
fn complete_through_kubectl(path: &str, words: &[&str]) -> Option<Vec<String>> {
    if !placekit_testserver::require::kubectl("nodelabel's completion through kubectl") {
        return None;
    }
    let out = std::process::Command::new("kubectl")
        .arg("__complete")
        .arg("nodelabel")
        .args(words)
        .env("PATH", path)
        .env("KUBECONFIG", "/nonexistent")
        .bounded_output()
        .unwrap();
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with(':'))
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
            .collect(),
    )
}

/// A krew-like layout: the plugin reached through a symlink in a bin directory on PATH.
#[cfg(unix)]
#[test]
fn completion_helper_installs_next_to_the_plugin_on_path_and_uninstalls() {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(binary(), bin.join("kubectl-nodelabel")).unwrap();
    let kubectl_dir = std::process::Command::new("sh")
        .args(["-c", "command -v kubectl"])
        .bounded_output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .and_then(|p| Path::new(&p).parent().map(|d| d.display().to_string()))
        .unwrap_or_default();
    let path = format!("{}:{kubectl_dir}:/usr/bin:/bin", bin.display());
    let run = |args: &[&str]| {
        std::process::Command::new(binary())
            .args(args)
            .env("PATH", &path)
            .bounded_output()
            .unwrap()
    };
    let helper = bin.join("kubectl_complete-nodelabel");

    let before = complete_through_kubectl(&path, &["se"]);
    if let Some(before) = &before {
        assert!(
            !before.contains(&"set".to_string()),
            "no helper yet: {before:?}"
        );
    }

    let out = run(&["completion", "kubectl", "--install"]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("installed {}", helper.display())),
        "{said}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&helper).unwrap().permissions().mode() & 0o777,
        0o755
    );
    if let Some(words) = complete_through_kubectl(&path, &["se"]) {
        assert_eq!(words, ["set"], "kubectl runs the installed helper");
    }
    // Installing again replaces placekit's own helper.
    assert!(
        run(&["completion", "kubectl", "--install"])
            .status
            .success()
    );

    let out = run(&["completion", "kubectl", "--uninstall"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!helper.exists());
    assert_eq!(
        std::fs::read_dir(&bin).unwrap().count(),
        1,
        "only the plugin left"
    );
    let out = run(&["completion", "kubectl", "--uninstall"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to remove"));

    // Someone else's file of that name is neither overwritten nor removed.
    std::fs::write(&helper, "#!/bin/sh\necho mine\n").unwrap();
    for flag in ["--install", "--uninstall"] {
        let out = run(&["completion", "kubectl", flag]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("was not written by placekit"),
            "{out:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&helper).unwrap(),
            "#!/bin/sh\necho mine\n"
        );
    }
    std::fs::remove_file(&helper).unwrap();

    // A helper left behind after the plugin is gone completes nothing, quietly.
    assert!(
        run(&["completion", "kubectl", "--install"])
            .status
            .success()
    );
    std::fs::remove_file(bin.join("kubectl-nodelabel")).unwrap();
    let out = std::process::Command::new(&helper)
        .args(["se"])
        .env("PATH", &path)
        .bounded_output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");

    // Without the plugin on PATH and without --dir: a usage error, nothing written.
    std::fs::remove_file(&helper).unwrap();
    let out = run(&["completion", "kubectl", "--install"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kubectl-nodelabel is not on PATH"));
    assert!(!helper.exists());
    let other = root.path().join("elsewhere");
    std::fs::create_dir(&other).unwrap();
    let dir = other.display().to_string();
    assert!(
        run(&["completion", "kubectl", "--install", "--dir", &dir])
            .status
            .success()
    );
    assert!(other.join("kubectl_complete-nodelabel").exists());
    // --install is for the kubectl helper; --dir needs an action.
    let out = run(&["completion", "bash", "--install"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["completion", "kubectl", "--dir", &dir]);
    assert_eq!(out.status.code(), Some(2));
}

/// Completion never holds the shell longer than its deadline (3 s): not even when the
/// context's exec credential plugin waits (for a login) while the client is built.
#[test]
fn a_credential_plugin_that_waits_costs_completion_its_deadline_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("wait-for-login");
    std::fs::write(&plugin, "#!/bin/sh\nsleep 30\n").unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: sso\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:9'}}\ncontexts:\n- name: sso\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
            plugin.display()
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = std::process::Command::new(binary())
        .args(["__complete", "set", ""])
        .env("KUBECONFIG", &kubeconfig)
        .stdin(std::process::Stdio::null())
        .bounded_output()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().last().is_some_and(|l| l.starts_with(':')),
        "{stdout}"
    );
    assert!(
        elapsed < std::time::Duration::from_secs(6),
        "completion took {elapsed:?}"
    );
}

/// Runs `script` in `shell` (`bash`, `zsh` or `fish`) with the plugin on PATH and the
/// harness's cluster, and returns what it printed. `None` (skipped by name, or failing where
/// `PLACEKIT_REQUIRE` lists `shells`) when zsh or fish is not installed.
fn in_shell(shell: &str, h: &Harness, script: &str) -> Option<String> {
    use placekit_testserver::require::{Need, tool};
    if shell != "bash"
        && !tool(
            &format!("the `kubectl nodelabel` completion in {shell}"),
            Need::Shells,
            shell,
            &["--version"],
        )
    {
        return None;
    }
    let path = format!(
        "{}:{}",
        binary().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let args: &[&str] = match shell {
        "bash" => &["--norc", "--noprofile", "-c"],
        "zsh" => &["-f", "-c"],
        _ => &["--no-config", "-c"],
    };
    let out = std::process::Command::new(shell)
        .args(args)
        .arg(script)
        .env("PATH", path)
        .env("KUBECONFIG", &h.kubeconfig)
        .env("PLACEKIT_STATE_DIR", &h.state_dir)
        .bounded_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{shell}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `source <(kubectl nodelabel completion bash)` (and zsh, fish) completes what users type,
/// `kubectl nodelabel …`, from the plugin's `__complete` and the cluster: subcommands, node
/// names, a label value after `key=` (bash replaces only the part after `=`), and
/// `key=` ready for its value (zsh: no space after it). Every other kubectl command line
/// still gets the completion kubectl had before the script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_scripts_complete_the_kubectl_form() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let bash = r#"
_previous() { COMPREPLY=(from-kubectl); }
complete -o default -F _previous kubectl
source <(kubectl-nodelabel completion bash)
t() {
    COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
    __placekit_kubectl_nodelabel
    local IFS='|'; echo "${COMPREPLY[*]}"
}
t "kubectl nodelabel se" kubectl nodelabel se
t "kubectl nodelabel set gpu-a100" kubectl nodelabel set gpu-a100
t "kubectl nodelabel set gpu-a100-1 pool=o" kubectl nodelabel set gpu-a100-1 pool = o
t "kubectl get no" kubectl get no
"#;
    let out = tokio::task::block_in_place(|| in_shell("bash", &h, bash)).unwrap();
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "set",
            "gpu-a100-1|gpu-a100-2|gpu-a100-3",
            "online",
            "from-kubectl"
        ],
        "{out}"
    );

    let zsh = r#"
typeset -A _comps
_previous() { print -r -- "from-kubectl" }
_comps[kubectl]=_previous
compdef() { _comps[$2]=$1 }
source <(kubectl-nodelabel completion zsh)
compadd() { print -r -- "${(j:|:)@}" }
_files() { print -r -- "files" }
t() { words=(${(z)1}); [[ $1 == *" " ]] && words+=(""); CURRENT=${#words}; $_comps[kubectl] }
t "kubectl nodelabel se"
t "kubectl nodelabel set gpu-a100"
t "kubectl nodelabel set gpu-a100-1 accelerator"
t "kubectl get no"
"#;
    if let Some(out) = tokio::task::block_in_place(|| in_shell("zsh", &h, zsh)) {
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            [
                "-Q|--|set",
                "-Q|--|gpu-a100-1|gpu-a100-2|gpu-a100-3",
                "-Q|-S||--|accelerator.example.com/gpu-family=",
                "from-kubectl"
            ],
            "{out}"
        );
    }

    let fish = r#"
complete -c kubectl -f -n 'test (count (commandline -opc)) -eq 1' -a from-kubectl
kubectl-nodelabel completion fish | source
for line in "kubectl nodelabel se" "kubectl nodelabel set gpu-a100" "kubectl fr"
    echo (string join '|' (complete -C $line | string replace -r '\t.*' ''))
end
"#;
    if let Some(out) = tokio::task::block_in_place(|| in_shell("fish", &h, fish)) {
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            ["set", "gpu-a100-1|gpu-a100-2|gpu-a100-3", "from-kubectl"],
            "{out}"
        );
    }
}
