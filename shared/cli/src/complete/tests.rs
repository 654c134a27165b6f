//! Unit tests of the parent module.

use super::*;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[arg(short = 'o', long, global = true, value_parser = ["text", "json"])]
    output: Option<String>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Set labels.
    Set {
        #[arg(required = true)]
        args: Vec<String>,
        #[arg(short = 'l', long)]
        selector: Option<String>,
        #[arg(short = 'y', long)]
        yes: bool,
        #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "client")]
        dry_run: Option<String>,
    },
    /// Show one snapshot.
    Show { snapshot: Option<String> },
}

fn at(words: &[&str]) -> Position {
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    locate(<Cli as clap::CommandFactory>::command(), &words)
}

fn values(c: &[Candidate]) -> Vec<&str> {
    c.iter().map(|c| c.value.as_str()).collect()
}

#[test]
fn finds_subcommands_flags_values_and_positionals() {
    let p = at(&[""]);
    assert_eq!(p.slot, Slot::Subcommand);
    assert_eq!(values(&p.fixed), ["set", "show"]);
    assert_eq!(p.fixed[0].description, "Set labels");

    let p = at(&["--context", "prod", "set", "-y", "gpu-1", ""]);
    assert_eq!(p.path, ["set"]);
    assert_eq!(
        p.slot,
        Slot::Positional {
            id: "args".into(),
            earlier: vec!["gpu-1".into()]
        }
    );
    assert_eq!(p.flag("context"), Some("prod"));

    let p = at(&["set", "-l", ""]);
    assert_eq!(
        p.slot,
        Slot::FlagValue {
            id: "selector".into()
        }
    );
    let p = at(&["set", "-o", "j"]);
    assert_eq!(
        p.slot,
        Slot::FlagValue {
            id: "output".into()
        }
    );
    assert_eq!(values(&p.fixed), ["text", "json"]);
    // `--dry-run` takes its value only after `=`: the next word is positional.
    let p = at(&["set", "--dry-run", ""]);
    assert!(matches!(p.slot, Slot::Positional { .. }), "{p:?}");
    let p = at(&["set", "--output=j"]);
    assert_eq!(p.prefix, "--output=");
    assert_eq!(p.current, "j");
    let p = at(&["set", "-l", "pool=online,zo"]);
    assert_eq!(
        (p.prefix.as_str(), p.current.as_str()),
        ("pool=online,", "zo")
    );

    let p = at(&["set", "--"]);
    assert_eq!(p.slot, Slot::Flag);
    assert!(values(&p.fixed).contains(&"--selector"));
    assert!(values(&p.fixed).contains(&"--context"), "global flags too");

    let p = at(&["--kubeconfig=/tmp/k", "show", "/"]);
    assert_eq!(p.flag("kubeconfig"), Some("/tmp/k"));
    assert_eq!(
        p.slot,
        Slot::Positional {
            id: "snapshot".into(),
            earlier: vec![]
        }
    );
    assert_eq!(at(&["show", "a", ""]).slot, Slot::Nothing);
}

#[tokio::test]
async fn renders_in_cobras_protocol_and_filters_by_prefix() {
    let p = at(&["set", "-o", "j"]);
    let (c, d) = resolve(&p, Source::Fixed).await;
    assert_eq!(render(&c, d), "json\n:4\n");
    let p = at(&["set", "a"]);
    let words = vec![
        Candidate::new("accelerator=", ""),
        Candidate::new("zone=", ""),
    ];
    let (c, d) = resolve(&p, Source::Words(words)).await;
    assert_eq!(render(&c, d), "accelerator=\n:6\n");
}

/// A node name (or label value) from the cluster with a newline and a tab would become a
/// candidate line of its own; one with shell metacharacters would be inserted as they are.
#[test]
fn hostile_candidates_are_dropped_and_descriptions_escaped() {
    let candidates = vec![
        Candidate::new("gpu-1\nrm -rf ~\tx", ""),
        Candidate::new("gpu-2$(id)", ""),
        Candidate::new("gpu\u{202e}3", ""),
        Candidate::new("gpu 4", ""),
        Candidate::new("gpu-5", "node \u{1b}[2Jready\tnow\nmore"),
        Candidate::new("prod-*", "pattern"),
    ];
    assert_eq!(
        render(&candidates, 4),
        "gpu-5\tnode \\x1b[2Jready\\x09now\\x0amore\nprod-*\tpattern\n:4\n"
    );
}

#[test]
fn the_helper_calls_the_plugin() {
    assert_eq!(
        kubectl_helper_name("gpu-taint"),
        "kubectl_complete-gpu_taint"
    );
    assert!(
        kubectl_helper_script("gpu-taint", "kubectl-gpu_taint")
            .ends_with("exec kubectl-gpu_taint __complete \"$@\"\n")
    );
}
