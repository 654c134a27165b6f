//! The README's tours, run as written: every ```` ```console ```` block of README.md and
//! then of every page under docs/ ([`TOUR_PAGES`] in that order, then the others by name),
//! in order, against the demo cluster the README starts (`placekit-testserver --demo`),
//! with the plugins found by kubectl on PATH. Each `$ ` line (with its `\` continuations) is run by
//! bash from the repository root; what follows it up to the next `$ ` is the output it must
//! print (stdout and stderr as a terminal shows them), allowing for:
//!
//! - time stamps in snapshot names (`20261129T221144.490Z`) and the snapshot directory
//!   (shown as `~/.local/state/placekit/snapshots`);
//! - a line `...`, which stands for any number of lines;
//! - a confirmation answered `y` (`Apply the change to 3 nodes? [y/N] y`): there is no
//!   terminal here, so the command runs with `--yes` and the prompt line is not expected.
//!
//! A block preceded by `<!-- readme-test: skip (why) -->` is not run (it needs a real API
//! server's admission, tested elsewhere). Set `PLACEKIT_README_PRINT=1` to print what each
//! command printed, normalised, for updating the README.

use std::path::{Path, PathBuf};
use std::process::Command;

use placekit_testserver::process::Bounded as _;
use placekit_testserver::require::{self, Need};
use placekit_testserver::{ADMIN_TOKEN, DEMO_FIXTURE, ServerConfig, TestServer};

const PLUGINS: [&str; 3] = [
    "kubectl-nodelabel",
    "kubectl-gpu_taint",
    "kubectl-affinity_lint",
];
const SHOWN_STATE_DIR: &str = "~/.local/state/placekit/snapshots";

/// The pages whose console blocks continue one another on one demo cluster, in the order
/// a reader takes them; any other page under docs/ runs after them, by name.
const TOUR_PAGES: [&str; 4] = [
    "README.md",
    "docs/nodelabel.md",
    "docs/affinity-lint.md",
    "docs/gpu-taint.md",
];

/// Every documentation page with console blocks, in the order the tours run: README.md, the
/// tour pages, then every other `docs/*.md` (so a new page cannot be left out).
fn pages(root: &Path) -> Vec<String> {
    let mut pages: Vec<String> = TOUR_PAGES.iter().map(|p| p.to_string()).collect();
    let mut others: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ reads")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .filter(|page| !pages.contains(page))
        .collect();
    others.sort();
    pages.extend(others);
    pages
}

/// One command of a block and the output the README shows for it.
#[derive(Debug)]
struct Step {
    /// The page the command is on.
    page: String,
    /// Its line on that page.
    line: usize,
    command: String,
    expected: Vec<String>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the repository")
        .to_path_buf()
}

/// The console blocks of `readme`, each as its steps, without the skipped ones.
fn console_blocks(readme: &str) -> Vec<Vec<Step>> {
    let mut blocks = Vec::new();
    let mut lines = readme.lines().enumerate().peekable();
    let mut skip_next = false;
    while let Some((_, line)) = lines.next() {
        if line.trim_start().starts_with("<!-- readme-test: skip") {
            skip_next = true;
            continue;
        }
        if line.trim() != "```console" {
            continue;
        }
        let mut steps: Vec<Step> = Vec::new();
        for (i, line) in lines.by_ref() {
            if line.trim() == "```" {
                break;
            }
            if let Some(command) = line.strip_prefix("$ ") {
                steps.push(Step {
                    page: String::new(),
                    line: i + 1,
                    command: command.to_string(),
                    expected: Vec::new(),
                });
            } else if let Some(step) = steps.last_mut() {
                // A continued command line, or output.
                if step.expected.is_empty() && step.command.ends_with('\\') {
                    step.command.push('\n');
                    step.command.push_str(line);
                } else {
                    step.expected.push(line.to_string());
                }
            }
        }
        if !std::mem::take(&mut skip_next) {
            blocks.push(steps);
        }
    }
    blocks
}

/// Time stamps in snapshot file names, as `<time>`.
fn without_times(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    let stamp = |b: &[u8]| {
        b.len() >= 20
            && b[..8].iter().all(u8::is_ascii_digit)
            && b[8] == b'T'
            && b[9..15].iter().all(u8::is_ascii_digit)
            && b[15] == b'.'
            && b[16..19].iter().all(u8::is_ascii_digit)
            && b[19] == b'Z'
    };
    while i < bytes.len() {
        if stamp(&bytes[i..]) {
            out.push_str("<time>");
            i += 20;
        } else {
            let c = line[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Whether `actual` is `expected`, where a `...` line matches any number of lines.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| a == first && matches(rest, more)),
    }
}

/// The demo cluster and the plugins as `cargo test --workspace` builds them (next to this
/// test's directory); `None`, with a notice, when the plugins or kubectl are missing.
struct Demo {
    _server: TestServer,
    target: PathBuf,
    scratch: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Demo {
    async fn start() -> Option<Demo> {
        let exe = std::env::current_exe().unwrap();
        let target = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
        let missing: Vec<&str> = PLUGINS
            .iter()
            .copied()
            .filter(|p| !target.join(p).is_file())
            .collect();
        if !missing.is_empty() {
            require::skip(
                "the README's console blocks",
                Need::Plugins,
                &format!("not built in {}: {missing:?}", target.display()),
            );
            return None;
        }
        if !require::kubectl("the README's console blocks") {
            return None;
        }
        let server = TestServer::start(ServerConfig::default().with_fixture_yaml(DEMO_FIXTURE))
            .await
            .unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let kubeconfig = server
            .write_kubeconfig(&scratch.path().join("demo.kubeconfig"), ADMIN_TOKEN)
            .unwrap();
        Some(Demo {
            _server: server,
            target,
            scratch,
            kubeconfig,
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_tours_print_what_they_show() {
    let root = repo_root();
    let mut blocks = Vec::new();
    for page in pages(&root) {
        let text = std::fs::read_to_string(root.join(&page)).unwrap();
        let found = console_blocks(&text);
        if TOUR_PAGES.contains(&page.as_str()) {
            assert!(!found.is_empty(), "{page} has no console block any more");
        }
        blocks.extend(found.into_iter().map(|steps| {
            steps
                .into_iter()
                .map(|step| Step {
                    page: page.clone(),
                    ..step
                })
                .collect::<Vec<_>>()
        }));
    }
    assert!(blocks.len() >= 6, "console blocks found: {}", blocks.len());

    let Some(demo) = Demo::start().await else {
        return;
    };
    let (target, scratch, kubeconfig) = (&demo.target, &demo.scratch, &demo.kubeconfig);
    let state = scratch.path().join("snapshots");
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for plugin in PLUGINS {
        std::fs::copy(target.join(plugin), bin.join(plugin)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let print = std::env::var_os("PLACEKIT_README_PRINT").is_some();
    let mut failures = Vec::new();
    for step in blocks.iter().flatten() {
        let answered = step.expected.iter().any(|l| l.ends_with("[y/N] y"));
        let command = if answered {
            format!("{} --yes", step.command)
        } else {
            step.command.clone()
        };
        let expected: Vec<String> = step
            .expected
            .iter()
            .filter(|l| !l.ends_with("[y/N] y"))
            .map(|l| without_times(l))
            .collect();
        let out = tokio::task::block_in_place(|| {
            Command::new("bash")
                .arg("-c")
                .arg(format!("{command} 2>&1"))
                .current_dir(&root)
                .env("PATH", &path)
                .env("KUBECONFIG", kubeconfig)
                .env("PLACEKIT_STATE_DIR", &state)
                .env("NO_COLOR", "1")
                .env_remove("PLACEKIT_E2E_KUBECONFIG")
                .stdin(std::process::Stdio::null())
                .bounded_output()
                .unwrap()
        });
        let actual: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .replace(&state.display().to_string(), SHOWN_STATE_DIR)
            .lines()
            .map(without_times)
            .collect();
        if print {
            println!("$ {}\n{}\n", step.command, actual.join("\n"));
        }
        if !matches(&expected, &actual) {
            failures.push(format!(
                "{}:{}: `{}`\n--- the page shows\n{}\n--- it printed\n{}",
                step.page,
                step.line,
                step.command,
                expected.join("\n"),
                actual.join("\n")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn blocks_steps_and_wildcards_parse_as_documented() {
    let readme = "text\n```console\n$ kubectl a \\\n    --flag\nout 1\n...\nApply? [y/N] y\n$ kubectl b\n```\n<!-- readme-test: skip (x) -->\n```console\n$ skipped\n```\n";
    let blocks = console_blocks(readme);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0][0].command, "kubectl a \\\n    --flag");
    assert_eq!(blocks[0][0].expected, ["out 1", "...", "Apply? [y/N] y"]);
    assert_eq!(blocks[0][1].command, "kubectl b");
    let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches(
        &lines(&["a", "...", "d"]),
        &lines(&["a", "b", "c", "d"])
    ));
    assert!(matches(&lines(&["a", "..."]), &lines(&["a"])));
    assert!(!matches(&lines(&["a", "d"]), &lines(&["a", "b", "d"])));
    assert_eq!(
        without_times("x/20261129T221144.490Z-nodelabel-set"),
        "x/<time>-nodelabel-set"
    );
}

/// The `kubectl <plugin> ...` examples of `help` (`\` continuations joined). Examples that
/// pipe, redirect or name files and nodes the demo cluster does not have are left out.
fn runnable_examples(help: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current: Option<String> = None;
    for line in help.lines() {
        let text = line.trim();
        if let Some(cmd) = current.as_mut() {
            cmd.push(' ');
            cmd.push_str(text.trim_end_matches('\\').trim());
            if !text.ends_with('\\') {
                commands.push(current.take().expect("set"));
            }
            continue;
        }
        if text.starts_with("kubectl ") && line.starts_with("  ") {
            let body = text.split("   #").next().unwrap_or(text).trim();
            if body.ends_with('\\') {
                current = Some(body.trim_end_matches('\\').trim().to_string());
            } else {
                commands.push(body.to_string());
            }
        }
    }
    // The demo kubeconfig has one context: patterns naming a fleet's contexts match none.
    const NOT_ON_THE_DEMO: [&str; 13] = [
        "'prod-",
        "|",
        ">",
        "NODE",
        "<file>",
        "deploy.yaml",
        "manifests/",
        "~/",
        "/etc/",
        "features",
        "./",
        "kubectl delete",
        "kubectl apply",
    ];
    commands
        .into_iter()
        .filter(|c| !NOT_ON_THE_DEMO.iter().any(|p| c.contains(p)))
        .collect()
}

/// Every example in the plugins' `--help` that can run on the demo cluster runs as written:
/// no usage error (exit 2) and no cluster error (exit 3). Commands that change nodes run
/// with `--dry-run=client`, read-only ones as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_examples_run_on_the_demo_cluster() {
    let Some(demo) = Demo::start().await else {
        return;
    };
    let (target, scratch, kubeconfig) = (&demo.target, &demo.scratch, &demo.kubeconfig);
    let path = format!(
        "{}:{}",
        target.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let root = repo_root();
    let mut ran = 0;
    let mut failures = Vec::new();
    for plugin in PLUGINS {
        let texts: Vec<String> = placekit_testserver::harness::help_texts(&target.join(plugin))
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        let mut examples: Vec<String> = texts.iter().flat_map(|t| runnable_examples(t)).collect();
        examples.dedup();
        for example in examples {
            let writes = ["set", "remove", "import", "dedicate", "release", "rollback"]
                .iter()
                .any(|w| example.split_whitespace().nth(2) == Some(w));
            let command = if writes && !example.contains("--dry-run") {
                format!("{example} --dry-run=client")
            } else {
                example.clone()
            };
            // A watch (or the exporter) runs until interrupted: it must print, then keep
            // watching (serving) for 5 s (`timeout` ends it with 124).
            let serves = example.split_whitespace().any(|w| w == "serve-metrics");
            let watches = serves
                || example
                    .split_whitespace()
                    .any(|w| w == "-w" || w == "--watch");
            let command = if watches {
                format!("timeout 5 {command}")
            } else {
                command
            };
            let out = tokio::task::block_in_place(|| {
                Command::new("bash")
                    .arg("-c")
                    .arg(&command)
                    .current_dir(&root)
                    .env("PATH", &path)
                    .env("KUBECONFIG", kubeconfig)
                    .env("PLACEKIT_STATE_DIR", scratch.path().join("state"))
                    .env("NO_COLOR", "1")
                    .env_remove("PLACEKIT_E2E_KUBECONFIG")
                    .stdin(std::process::Stdio::null())
                    .bounded_output()
                    .unwrap()
            });
            ran += 1;
            let mut code = out.status.code().unwrap_or(-1);
            // The exporter says where it serves, on stderr.
            let printed = if serves {
                String::from_utf8_lossy(&out.stderr).contains("serving /metrics")
            } else {
                !out.stdout.is_empty()
            };
            if watches && code == 124 && printed {
                code = 0;
            }
            // `rollback --last` with nothing to undo is the one input error that is right.
            let nothing_to_undo = String::from_utf8_lossy(&out.stderr).contains("nothing to undo");
            if (code == 2 && !nothing_to_undo) || code == 3 || code < 0 {
                failures.push(format!(
                    "`{command}` exited {code}:\n{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(ran >= 20, "only {ran} examples found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
