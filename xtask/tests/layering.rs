//! The workspace's layers, as Cargo resolves them: the model knows no terminal, async
//! runtime or client; the linter sits on the model only; the client on the model only; the
//! application crate (`placekit-cli`) on all three; the plugins on top. An arrow that points the wrong way, or a terminal crate that
//! creeps into a library through a dependency, fails here (docs/design.md draws the same
//! arrows).

use std::collections::BTreeSet;
use std::process::Command;

/// The crates each library may reach, transitively, among the workspace's own.
const LAYERS: &[(&str, &[&str])] = &[
    ("placekit-core", &[]),
    ("placekit-lint", &["placekit-core"]),
    // The client reads and writes the API; what it reads is judged above it, so it knows no
    // linter.
    ("placekit-client", &["placekit-core"]),
];

/// What only a command-line application may depend on: terminals, prompts, progress bars,
/// the argument parser by default, completion scripts.
const TERMINAL_CRATES: &[&str] = &["clap", "clap_complete", "dialoguer", "indicatif", "console"];

/// What the pure model must not reach: an async runtime or a Kubernetes client.
const CLIENT_CRATES: &[&str] = &["tokio", "kube", "kube-client", "hyper", "futures"];

/// The package names `cargo tree` reaches from `package` over normal dependencies, with the
/// default features (what a user of the library gets).
fn reached(package: &str) -> BTreeSet<String> {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--manifest-path",
            manifest,
            "--offline",
            "-p",
            package,
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != package)
        .map(str::to_string)
        .collect()
}

#[test]
fn each_library_reaches_only_the_layers_below_it() {
    let workspace: BTreeSet<&str> = [
        "placekit-cli",
        "placekit-core",
        "placekit-lint",
        "placekit-client",
        "placekit-testserver",
        "kubectl-nodelabel",
        "kubectl-gpu-taint",
        "kubectl-affinity-lint",
        "xtask",
    ]
    .into();
    for (library, allowed) in LAYERS {
        let deps = reached(library);
        let own: BTreeSet<&str> = deps
            .iter()
            .map(String::as_str)
            .filter(|d| workspace.contains(d))
            .collect();
        let allowed: BTreeSet<&str> = allowed.iter().copied().collect();
        assert_eq!(
            own, allowed,
            "{library} reaches the workspace crates {own:?}"
        );
        let terminal: Vec<&&str> = TERMINAL_CRATES
            .iter()
            .filter(|c| deps.contains(**c))
            .collect();
        assert!(
            terminal.is_empty(),
            "{library} depends on terminal crates {terminal:?}: only the plugins' UI may"
        );
    }
}

#[test]
fn the_model_knows_no_runtime_and_no_client() {
    // What this reads is what Cargo resolves: the client does reach them.
    let client = reached("placekit-client");
    assert!(
        client.contains("kube") && client.contains("tokio"),
        "{client:?}"
    );
    for library in ["placekit-core", "placekit-lint"] {
        let deps = reached(library);
        let found: Vec<&&str> = CLIENT_CRATES
            .iter()
            .filter(|c| deps.contains(**c))
            .collect();
        assert!(
            found.is_empty(),
            "{library} depends on {found:?}: the model must run without an API server or runtime"
        );
    }
}

/// Printing is the plugins' business: each library denies it at its root, so a `println!`
/// added to one fails clippy (the lint attribute is what this checks is still there).
#[test]
fn the_libraries_deny_printing() {
    for library in ["core", "lint", "client"] {
        let root = format!(
            "{}/../shared/{library}/src/lib.rs",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&root).expect("the library root reads");
        assert!(
            text.contains("#![deny(clippy::print_stdout, clippy::print_stderr)]"),
            "{root} no longer denies printing"
        );
    }
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the source folder reads") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("the source reads");
            out.push((path, text));
        }
    }
    out
}

/// The lines of `text` that are code, not comments.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

/// No facade: a crate re-exports no other placekit crate's items, so an import always names
/// the crate that defines what it imports.
#[test]
fn no_crate_re_exports_another() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for dir in [
        "shared/core/src",
        "shared/lint/src",
        "shared/client/src",
        "shared/cli/src",
        "plugins/kubectl-nodelabel/src",
        "plugins/kubectl-gpu-taint/src",
        "plugins/kubectl-affinity-lint/src",
    ] {
        for (path, text) in sources(&root.join(dir)) {
            for line in code_lines(&text) {
                if line.trim_start().starts_with("pub use placekit_") {
                    found.push(format!("{}: {}", path.display(), line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "re-exports of another crate: {found:#?}");
}

/// The client says why a request failed; which exit code that is, and what to do about it,
/// is the application's (placekit-cli's `CommandError`).
#[test]
fn the_client_decides_no_exit_code() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/client/src");
    let mut found = Vec::new();
    for (path, text) in sources(&root) {
        for line in code_lines(&text) {
            if line.contains("exit::") || line.contains("CommandError") {
                found.push(format!("{}: {}", path.display(), line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the client decides exit codes: {found:#?}"
    );
}

/// The client's messages say what happened; what the person should do next, and whether
/// anything was changed, is the application's (`placekit_cli::error::client_advice`).
#[test]
fn the_client_gives_no_advice() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/client/src");
    let advice = [
        "nothing was changed",
        "(check ",
        "(ask ",
        "(see `",
        "(is the ",
    ];
    let mut found = Vec::new();
    for (path, text) in sources(&root) {
        for line in code_lines(&text) {
            if advice.iter().any(|a| line.contains(a)) {
                found.push(format!("{}: {}", path.display(), line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "the client gives advice: {found:#?}");
}
