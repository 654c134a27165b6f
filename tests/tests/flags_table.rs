//! The README's table of kubectl's flags ("kubectl's flags, command by command"), walked:
//! every flag of every row is given to every command of the three plugins, against the demo
//! cluster. A command the row names must accept it (no usage error, exit code other than 2;
//! an output flag must change what is printed), and every other command of that plugin
//! must refuse it with exit 2 and a message that names it. A flag added to a command
//! without its row, or a row that promises more than the command does, fails here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use placekit_testserver::process::Bounded as _;
use placekit_testserver::require::{self, Need};
use placekit_testserver::{ADMIN_TOKEN, DEMO_FIXTURE, ServerConfig, TestServer};

const SUITE: &str = "the README's table of kubectl flags";

/// The plugins, their binaries, and each command with the arguments it runs with here.
/// `NODE` is a demo node, left out when the flag is `-l` (a selector or names, not both).
fn commands(manifest: &str, features: &str) -> Vec<(&'static str, &'static str, Vec<String>)> {
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let nodelabel = [
        ("set", "set NODE pk-flags=1 --dry-run=client".to_string()),
        ("remove", "remove NODE pool- --dry-run=client".into()),
        (
            "import",
            format!("import --file {features} NODE --dry-run=client"),
        ),
        ("rollback", "rollback --last --dry-run=client".into()),
        ("history", "history".into()),
        ("show", "show NODE".into()),
        (
            "dependents",
            "dependents accelerator.example.com/gpu-family".into(),
        ),
        ("completion", "completion bash".into()),
    ];
    let gpu_taint = [
        (
            "dedicate",
            "dedicate NODE --taint pk-flags=x:NoSchedule --dry-run=client".to_string(),
        ),
        (
            "release",
            "release NODE --taint dedicated=batch:NoSchedule --dry-run=client".into(),
        ),
        ("rollback", "rollback --last --dry-run=client".into()),
        ("status", "status".into()),
        ("history", "history".into()),
        ("show", "show --last".into()),
        ("completion", "completion bash".into()),
        ("serve-metrics", "serve-metrics --listen 127.0.0.1:0".into()),
    ];
    let affinity_lint = [
        ("lint", format!("-f {manifest}")),
        ("drift", "drift".into()),
        ("why-pending", "why-pending -n ml".into()),
        (
            "why-pending POD",
            "why-pending llm-inference-0 -n ml".into(),
        ),
        ("policy", "policy".into()),
        ("rules", "rules".into()),
        ("completion", "completion bash".into()),
        ("serve-metrics", "serve-metrics --listen 127.0.0.1:0".into()),
    ];
    let mut out = Vec::new();
    for (plugin, list) in [
        ("nodelabel", &nodelabel[..]),
        ("gpu-taint", &gpu_taint[..]),
        ("affinity-lint", &affinity_lint[..]),
    ] {
        for (name, args) in list {
            out.push((plugin, *name, words(args)));
        }
    }
    out
}

/// One row: the flag as typed, and per plugin the commands that accept it.
#[derive(Debug)]
struct Row {
    line: usize,
    flag: Vec<String>,
    accepted: BTreeMap<&'static str, Cell>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Cell {
    All,
    AllBut(Vec<String>),
    Only(Vec<String>),
}

impl Cell {
    fn parse(text: &str) -> Cell {
        let list = |s: &str| -> Vec<String> {
            s.split(',')
                .map(|w| w.trim().to_string())
                .filter(|w| !w.is_empty())
                .collect()
        };
        let text = text.trim();
        if text == "all" {
            Cell::All
        } else if let Some(rest) = text.strip_prefix("all but ") {
            Cell::AllBut(list(rest))
        } else if text == "—" {
            Cell::Only(Vec::new())
        } else {
            Cell::Only(list(text))
        }
    }

    fn accepts(&self, command: &str) -> bool {
        match self {
            Cell::All => true,
            Cell::AllBut(but) => !but.iter().any(|b| b == command),
            Cell::Only(only) => only.iter().any(|o| o == command),
        }
    }
}

/// The table's rows, from the README.
fn rows(readme: &str) -> Vec<Row> {
    let start = readme
        .find("### kubectl's flags, command by command")
        .expect("the README has the table");
    let offset = readme[..start].lines().count();
    let mut out = Vec::new();
    for (i, line) in readme[start..].lines().enumerate() {
        let Some(inner) = line.strip_prefix("| `") else {
            if !out.is_empty() && !line.starts_with('|') {
                break;
            }
            continue;
        };
        let cells: Vec<&str> = inner.split(" | ").collect();
        assert!(cells.len() >= 5, "README line {}: {line}", offset + i + 1);
        let flag = cells[0].trim_end_matches('`');
        out.push(Row {
            line: offset + i + 1,
            flag: flag.split_whitespace().map(str::to_string).collect(),
            accepted: [
                ("nodelabel", Cell::parse(cells[1])),
                ("gpu-taint", Cell::parse(cells[2])),
                ("affinity-lint", Cell::parse(cells[3])),
            ]
            .into_iter()
            .collect(),
        });
    }
    out
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs a plugin; a command that keeps running (a watch) is stopped after 3 s and counts
/// as accepted.
fn run(bin: &Path, kubeconfig: &Path, state: &Path, args: &[String]) -> Run {
    let out = Command::new("timeout")
        .arg("3")
        .arg(bin)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("PLACEKIT_STATE_DIR", state)
        .env("NO_COLOR", "1")
        .bounded_output()
        .expect("the plugin runs");
    Run {
        // timeout(1) exits 124 when it stopped the command.
        code: out.status.code().filter(|c| *c != 124),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The arguments of `command` with `flag`: the nodes left out for `-l`, the base's
/// `--dry-run=client` replaced by a `--dry-run` under test.
fn with_flag(base: &[String], flag: &[String]) -> Vec<String> {
    let first = flag.first().map_or("", String::as_str);
    let selector = first == "-l";
    let dry_run = first.starts_with("--dry-run");
    let namespace = first == "-n";
    let mut skip_value = false;
    let mut args: Vec<String> = base
        .iter()
        .filter(|a| !(selector && *a == "NODE"))
        .filter(|a| !(dry_run && *a == "--dry-run=client"))
        // The row's `-n` instead of the base's.
        .filter(|a| {
            let skip = namespace && (*a == "-n" || skip_value);
            skip_value = namespace && *a == "-n";
            !skip
        })
        .map(|a| {
            if a == "NODE" {
                "gpu-a100-1".into()
            } else {
                a.clone()
            }
        })
        .collect();
    args.extend(flag.iter().cloned());
    args
}

/// What names the flag in a refusal: `--sort-by`; for `-o wide`, `-o` or the format.
fn named(flag: &[String], stderr: &str) -> bool {
    let name = flag[0].split('=').next().unwrap_or_default();
    stderr.contains(name)
        || (name == "-o" && stderr.contains(flag[1].split('=').next().unwrap_or_default()))
}

/// Whether `text` starts with a table's header line (`NAME  RESOURCE ...`).
fn has_header(text: &str) -> bool {
    text.lines().next().is_some_and(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.len() >= 2 && words.iter().all(|w| w.chars().all(|c| !c.is_lowercase()))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_flag_of_the_readme_table_is_accepted_or_refused_as_it_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let rows = rows(&readme);
    assert!(rows.len() >= 15, "{} rows", rows.len());

    let exe = std::env::current_exe().unwrap();
    let target: PathBuf = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let bins: BTreeMap<&str, PathBuf> = [
        ("nodelabel", "kubectl-nodelabel"),
        ("gpu-taint", "kubectl-gpu_taint"),
        ("affinity-lint", "kubectl-affinity_lint"),
    ]
    .into_iter()
    .map(|(p, b)| (p, target.join(b)))
    .collect();
    if let Some(missing) = bins.values().find(|b| !b.is_file()) {
        require::skip(
            SUITE,
            Need::Plugins,
            &format!("{} is not built", missing.display()),
        );
        return;
    }
    let server = TestServer::start(ServerConfig::default().with_fixture_yaml(DEMO_FIXTURE))
        .await
        .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let kubeconfig = server
        .write_kubeconfig(&scratch.path().join("kubeconfig"), ADMIN_TOKEN)
        .unwrap();
    let state = scratch.path().join("state");
    let manifest = scratch.path().join("deployment.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: ml}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x}]}\n",
    )
    .unwrap();
    let features = scratch.path().join("features.txt");
    std::fs::write(&features, "feature.node.kubernetes.io/pk-flags=true\n").unwrap();
    let commands = commands(manifest.to_str().unwrap(), features.to_str().unwrap());
    tokio::task::block_in_place(|| {
        // A snapshot of each tool, for history, show and rollback; a state directory each, so
        // neither rollback stops at the other tool's newer change.
        for (plugin, args) in [
            ("nodelabel", "set gpu-a100-1 pk-flags=1 --yes"),
            (
                "gpu-taint",
                "dedicate gpu-a100-2 --taint pk-flags=x:NoSchedule --yes",
            ),
        ] {
            let args: Vec<String> = args.split_whitespace().map(str::to_string).collect();
            let r = run(&bins[plugin], &kubeconfig, &state.join(plugin), &args);
            assert_eq!(r.code, Some(0), "{plugin} {args:?}: {}", r.stderr);
        }
        let mut failures = Vec::new();
        for row in &rows {
            for (plugin, command, base) in &commands {
                let accepted = row.accepted[plugin].accepts(command);
                let args = with_flag(base, &row.flag);
                let state = state.join(plugin);
                let r = run(&bins[plugin], &kubeconfig, &state, &args);
                let what = format!(
                    "README line {}: `kubectl {plugin} {}`",
                    row.line,
                    args.join(" ")
                );
                if !accepted {
                    if r.code != Some(2) || !named(&row.flag, &r.stderr) {
                        failures.push(format!(
                            "{what} should be refused (exit 2, naming the flag): exit {:?}, {}",
                            r.code,
                            r.stderr.lines().next().unwrap_or_default()
                        ));
                    }
                    continue;
                }
                if r.code == Some(2) {
                    failures.push(format!(
                        "{what} should be accepted: {}",
                        r.stderr.lines().next().unwrap_or_default()
                    ));
                    continue;
                }
                // An output flag changes what is printed.
                let output = matches!(row.flag[0].as_str(), "-o" | "--no-headers");
                if output && r.code == Some(0) {
                    let plain = run(&bins[plugin], &kubeconfig, &state, &with_flag(base, &[]));
                    // Without a table (`no drift: ...`) there is no header to drop.
                    let headless = row.flag[0] == "--no-headers" && !has_header(&plain.stdout);
                    if plain.stdout == r.stdout && !headless {
                        failures.push(format!("{what} printed what it prints without the flag"));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    });
}
