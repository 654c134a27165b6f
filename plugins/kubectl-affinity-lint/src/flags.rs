//! The command line: clap's parsed flags, and the one step that turns them into validated
//! settings ([`resolve`]) before any work, so every flag combination is refused with a usage
//! error (exit 2) before a file is read or a cluster is called.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use placekit_cli::complete::{self, Candidate, Position, Slot, Source};
use placekit_cli::error::CommandError;
use placekit_cli::fleet::FleetArgs;
use placekit_cli::ui::{
    ColorChoice, DisplayArgs, LogArgs, Output, parse_output, service_prints_no_report,
};
use placekit_client::connect::ConnectionArgs;
use placekit_lint::admission;
use placekit_lint::engine::Config;
use placekit_lint::fix::files::FixMode;
use placekit_lint::rule::Severity;

use crate::help;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Sarif,
    Github,
    /// GitLab code quality JSON (`artifacts: reports: codequality`).
    Gitlab,
}

/// Lint Kubernetes workloads for scheduling mistakes.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl affinity-lint",
    bin_name = "kubectl affinity-lint",
    version,
    about,
    after_help = help::AFTER_HELP,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Files, directories or - for stdin (YAML or JSON, multi-document, kind: List).
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// More files, as pre-commit and other tools pass them (the same as -f).
    #[arg(value_name = "FILE")]
    pub paths: Vec<PathBuf>,
    /// Recurse into directories.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Judge custom resources by the CustomResourceDefinitions in this directory (a chart's
    /// crds/, or `kubectl get crd NAME -o yaml` saved there): a scheduling field their
    /// schema does not declare is pruned by the API server (AL018).
    #[arg(long, value_name = "DIR")]
    pub crd_dir: Option<PathBuf>,
    /// Apply the safe fixes in place (minimal edits: comments, order, quoting and other
    /// documents stay as they were), then report what is left. Stdin: the fixed stream goes
    /// to stdout, the report to stderr.
    #[arg(long, conflicts_with = "diff")]
    pub fix: bool,
    /// Print the fixes as a unified diff instead of writing them.
    #[arg(long)]
    pub diff: bool,
    /// With --fix/--diff, also apply fixes that change what the scheduler does (AL001's
    /// merge, AL012).
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Documents linted at once (0: one per core). The report's order does not depend on it.
    #[arg(short = 'j', long, value_name = "N", default_value_t = 0)]
    pub jobs: usize,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: Format,
    /// The lowest severity that makes the exit code 1.
    #[arg(long, value_enum, default_value = "warning")]
    pub fail_on: Severity,
    /// Rules to turn on (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    pub enable: Vec<String>,
    /// Rules to turn off (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    pub disable: Vec<String>,
    /// The configuration file (default: .affinity-lint.yaml upward from the first input).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// When to use colour.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// Also check the manifests against the live cluster's nodes (rules AL101-AL105). (The
    /// kubeconfig cluster is chosen with --kube-cluster in this plugin.)
    #[arg(long = "cluster", id = "check_cluster")]
    pub cluster: bool,
    #[command(flatten)]
    pub connection: ConnectionArgs,
    #[command(flatten)]
    pub fleet: FleetArgs,
    #[command(flatten)]
    pub log: LogArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a shell's completion script, or (`kubectl`) the helper for `kubectl affinity-lint <TAB>`.
    #[command(
        after_help = "Examples:\n  # kubectl affinity-lint <TAB> (kubectl 1.26+): the helper goes next to\n  # the plugin on PATH; remove it before kubectl krew uninstall affinity-lint\n  kubectl affinity-lint completion kubectl --install\n  kubectl affinity-lint completion kubectl --uninstall\n\n  # or print it and put it on PATH yourself\n  kubectl affinity-lint completion kubectl \\\n      > ~/bin/kubectl_complete-affinity_lint\n  chmod +x ~/bin/kubectl_complete-affinity_lint\n\n  # without the helper, in bash: kubectl affinity-lint <TAB> (and the binary),\n  # after kubectl's own completion (zsh alike; fish: ... fish | source)\n  source <(kubectl affinity-lint completion bash)"
    )]
    Completion(complete::CompletionArgs),
    /// Running pods whose node no longer satisfies their nodeSelector or required affinity.
    #[command(long_about = help::DRIFT_ABOUT)]
    Drift {
        /// All namespaces (without it, as kubectl: -n, else the context's namespace).
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// Only pods matching this label selector.
        #[arg(short = 'l', long)]
        selector: Option<String>,
        /// Output format: text, wide, json, yaml, name, jsonpath=TEMPLATE,
        /// custom-columns=HEADER:PATH,...
        #[arg(short = 'o', long, value_parser = parse_output, default_value = "text")]
        output: Output,
        /// Print tables without their header line.
        #[arg(long)]
        no_headers: bool,
    },
    /// Explain why a pod is Pending: evidence and every node through the scheduler's filters.
    #[command(long_about = help::WHY_PENDING_ABOUT)]
    WhyPending {
        /// The pending pod's name (its namespace with -n); without it, every pending pod of
        /// the namespace (or of all namespaces with -A), grouped by why.
        pod: Option<String>,
        /// Without POD: every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// Without POD: only pods matching this label selector.
        #[arg(short = 'l', long)]
        selector: Option<String>,
        /// With POD: after the report, follow the pod (a watch, kubectl's -w): print what the
        /// scheduler says each time it changes, its gates as they go, and stop when it is
        /// scheduled (exit 0) or deleted (exit 1).
        #[arg(short = 'w', long)]
        watch: bool,
        /// Output format: text, wide, json, yaml, name, jsonpath=TEMPLATE,
        /// custom-columns=HEADER:PATH,...
        #[arg(short = 'o', long, value_parser = parse_output, default_value = "text")]
        output: Output,
        /// Print tables without their header line.
        #[arg(long)]
        no_headers: bool,
    },
    /// Serve drift's and why-pending's metrics (those of -o openmetrics) on /metrics, judged
    /// again every --interval, with /healthz: an exporter for Prometheus.
    #[command(
        name = "serve-metrics",
        long_about = "Serve drift's and why-pending's metrics (those of `drift -o openmetrics` and \
`why-pending -o openmetrics`: drifted pods per namespace, node and reason; pending pods per \
namespace and verdict class; gangs that cannot start) on GET /metrics, with GET /healthz. \
Judging a pending pod needs the whole scheduling view, so both are read and judged again \
every --interval (one read each, as the commands make); what is kept between judgements is \
their families, not the cluster. /healthz answers 503 while the last judgement failed (the \
one before is still served, with placekit_read_up 0). The namespaces are drift's: -A for \
all, -n, else the context's (a pod's own in a pod). The inventory's metrics are gpu-taint \
serve-metrics'. Runs until interrupted.",
        after_help = "Examples:\n  kubectl affinity-lint serve-metrics -A\n  kubectl affinity-lint serve-metrics -n ml --interval 30s \\\n      --listen 127.0.0.1:9403"
    )]
    ServeMetrics {
        /// All namespaces (without it, as kubectl: -n, else the context's namespace).
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// The address to serve on.
        #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:9403")]
        listen: std::net::SocketAddr,
        /// How often drift and the pending pods are judged again (e.g. 30s, 2m).
        // A value that starts with `-` (`-5s`) is taken as the value, to be refused as a
        // duration, not as an unknown flag.
        #[arg(
            long,
            value_name = "DURATION",
            default_value = "60s",
            allow_hyphen_values = true
        )]
        interval: String,
        /// Refused, with why: the exporter prints no report (drift and why-pending take -o).
        #[arg(short = 'o', long, hide = true, value_name = "FORMAT")]
        output: Option<String>,
        /// Refused, with why (as -o).
        #[arg(long, hide = true)]
        no_headers: bool,
    },
    /// Print a ValidatingAdmissionPolicy and its binding that enforce AL001, AL003, AL006
    /// and AL007 in the cluster (apply with `| kubectl apply -f -`).
    #[command(long_about = help::POLICY_ABOUT)]
    Policy {
        /// What the API server does with a violation: Deny, Warn, Audit (comma-separated;
        /// Deny and Warn exclude each other).
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "deny",
            ignore_case = true
        )]
        action: Vec<admission::Action>,
        /// Only in namespaces matching this label selector (e.g. `policy=enforce`).
        #[arg(long, value_name = "SELECTOR")]
        namespace_selector: Option<String>,
        /// Let the annotation affinity-lint.placekit.dev/ignore exempt a workload from the
        /// policy. Off by default: the workload's author writes it, so anyone who may create
        /// a workload could exempt it.
        #[arg(long)]
        allow_ignore_annotation: bool,
    },
    /// List the rules, or show one rule's documentation.
    Rules {
        /// A rule id, e.g. AL001.
        rule: Option<String>,
    },
}

/// Rule ids with their summaries, for completion.
fn rule_ids() -> Vec<Candidate> {
    placekit_lint::rules::all_metas()
        .map(|m| Candidate::new(m.id, m.summary))
        .collect()
}

/// What `kubectl affinity-lint <TAB>` offers where the shared flags do not decide.
pub fn completion_source(position: &Position) -> Source {
    let command = position.path.first().map(String::as_str);
    match (command, &position.slot) {
        (Some("rules"), Slot::Positional { .. }) => Source::Words(rule_ids()),
        (Some("why-pending"), Slot::Positional { .. }) => Source::Pods,
        (None, Slot::Positional { .. }) => Source::Files,
        (_, Slot::FlagValue { id }) => match id.as_str() {
            "enable" | "disable" => Source::Words(rule_ids()),
            "files" | "config" => Source::Files,
            _ => Source::Fixed,
        },
        _ => Source::Fixed,
    }
}

/// The command line: `--cluster` is the live check here (see the README), so kubectl's
/// `--cluster NAME` becomes `--kube-cluster NAME` in this plugin.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command().mut_arg("cluster", |a| a.long("kube-cluster"))
}

/// The namespaces a namespaced read covers, as kubectl chooses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    /// `-A`.
    All,
    /// `-n NAME`.
    Given(String),
    /// Neither: the context's namespace (`default` when it names none; a pod's own inside
    /// a pod), which each cluster of `--contexts` has its own of.
    Context,
}

impl Namespaces {
    /// The namespace to read on `conn` (`None`: every one).
    pub fn on<'a>(&'a self, conn: &'a placekit_client::connect::Connection) -> Option<&'a str> {
        match self {
            Namespaces::All => None,
            Namespaces::Given(ns) => Some(ns),
            Namespaces::Context => Some(&conn.namespace),
        }
    }
}

/// What to do, once the flags are checked.
#[derive(Debug)]
pub enum Mode {
    /// `rules [ID]`: the catalogue or one rule's page.
    Rules(Option<String>),
    /// `policy`: the admission policy's YAML.
    Policy(String),
    Completion(complete::CompletionArgs),
    Drift {
        display: DisplayArgs,
        namespaces: Namespaces,
        selector: Option<String>,
    },
    ServeMetrics {
        log: LogArgs,
        namespaces: Namespaces,
        listen: std::net::SocketAddr,
        interval: std::time::Duration,
    },
    WhyPending {
        display: DisplayArgs,
        pod: Option<String>,
        /// `None`: every namespace (`-A`).
        all_namespaces: bool,
        selector: Option<String>,
        /// `-w`: follow the pod until it is scheduled.
        watch: bool,
    },
    Lint(Box<LintSettings>),
}

/// The lint run's settings: inputs, configuration, output and what to do with fixes.
#[derive(Debug)]
pub struct LintSettings {
    pub files: Vec<PathBuf>,
    pub recursive: bool,
    pub output: Format,
    pub fail_on: Severity,
    pub config: Config,
    pub jobs: usize,
    pub display: DisplayArgs,
    /// `--fix` or `--diff`: how fixes are applied, and whether they are only shown.
    pub fix: Option<(FixMode, Diff)>,
    /// `--cluster`, or `--contexts`/`--all-contexts`, which imply it: check the files
    /// against the live nodes too.
    pub live: bool,
    /// `--crd-dir`: the schemas custom resources are judged by.
    pub crds: placekit_lint::crds::CrdSchemas,
}

/// Whether `--diff` shows the fixes instead of writing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Diff(pub bool);

/// Turns the parsed flags into what to do; every refusal is a usage error.
///
/// Long on purpose: one arm per mode, each refusing the flags that mode does not take before
/// it settles what the mode runs with, so every refusal is in one place.
pub fn resolve(cli: &Cli) -> Result<Mode, CommandError> {
    let display = |output: &Output, no_headers: bool| DisplayArgs {
        output: output.clone(),
        no_headers,
        color: cli.color,
        log: cli.log.clone(),
        ..DisplayArgs::default()
    };
    match &cli.command {
        Some(Command::Rules { rule }) => return Ok(Mode::Rules(rule.clone())),
        Some(Command::Policy {
            action,
            namespace_selector,
            allow_ignore_annotation,
        }) => {
            let exemptions = if *allow_ignore_annotation {
                admission::Exemptions::Annotation
            } else {
                admission::Exemptions::AdminOnly
            };
            return policy(action, namespace_selector.as_deref(), exemptions).map(Mode::Policy);
        }
        Some(Command::Completion(args)) => return Ok(Mode::Completion(args.clone())),
        Some(Command::Drift {
            all_namespaces,
            selector,
            output,
            no_headers,
        }) => {
            return Ok(Mode::Drift {
                display: display(output, *no_headers),
                namespaces: match (all_namespaces, &cli.connection.namespace) {
                    (true, _) => Namespaces::All,
                    (false, Some(ns)) => Namespaces::Given(ns.clone()),
                    (false, None) => Namespaces::Context,
                },
                selector: selector.clone(),
            });
        }
        Some(Command::ServeMetrics {
            all_namespaces,
            listen,
            interval,
            output,
            no_headers,
        }) => {
            const SERVE_METRICS: &str = "affinity-lint serve-metrics";
            match (output.as_deref(), no_headers) {
                (Some("openmetrics"), _) => {
                    return Err(service_prints_no_report(SERVE_METRICS, "-o openmetrics"));
                }
                (Some(_), _) => return Err(service_prints_no_report(SERVE_METRICS, "-o")),
                (None, true) => {
                    return Err(service_prints_no_report(SERVE_METRICS, "--no-headers"));
                }
                (None, false) => {}
            }
            let interval = placekit_client::connect::parse_request_timeout(interval)
                .ok()
                .flatten()
                .filter(|d| *d >= std::time::Duration::from_secs(1))
                .ok_or_else(|| {
                    CommandError::Input(format!(
                        "invalid --interval {interval:?}: use a duration of at least 1s (30s, 2m)"
                    ))
                })?;
            return Ok(Mode::ServeMetrics {
                log: cli.log.clone(),
                namespaces: match (all_namespaces, &cli.connection.namespace) {
                    (true, _) => Namespaces::All,
                    (false, Some(ns)) => Namespaces::Given(ns.clone()),
                    (false, None) => Namespaces::Context,
                },
                listen: *listen,
                interval,
            });
        }
        Some(Command::WhyPending {
            pod,
            all_namespaces,
            selector,
            watch,
            output,
            no_headers,
        }) => {
            if pod.is_some() && (*all_namespaces || selector.is_some()) {
                return Err(CommandError::Input(
                    "why-pending POD judges one pod: -A and -l are for every pending pod (leave out POD)".into(),
                ));
            }
            if *watch && pod.is_none() {
                return Err(CommandError::Input(
                    "-w/--watch follows one pod: name it (why-pending POD -w)".into(),
                ));
            }
            if *watch && output.format.is_structured() {
                return Err(CommandError::Input(
                    "-w/--watch prints lines as the pod changes: use the default output".into(),
                ));
            }
            return Ok(Mode::WhyPending {
                display: display(output, *no_headers),
                pod: pod.clone(),
                all_namespaces: *all_namespaces,
                selector: selector.clone(),
                watch: *watch,
            });
        }
        None => {}
    }
    let files: Vec<PathBuf> = cli.files.iter().chain(&cli.paths).cloned().collect();
    if files.is_empty() {
        return Err(usage(
            "no input: give -f PATH (a file, a directory with -R, or - for stdin)",
        ));
    }
    if cli.diff && cli.output != Format::Text {
        return Err(usage(format!(
            "--diff prints a unified diff, not a {} report (use --fix -o {0}, or lint without --diff)",
            cli.output
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default()
        )));
    }
    if cli.unsafe_fixes && !(cli.fix || cli.diff) {
        return Err(usage("--unsafe-fixes applies with --fix or --diff"));
    }
    let config = load_config(cli.config.as_deref(), &files, &cli.enable, &cli.disable)?;
    let crds = match &cli.crd_dir {
        Some(dir) => {
            let crds = placekit_lint::crds::CrdSchemas::load_dir(dir).map_err(usage)?;
            if crds.is_empty() {
                return Err(usage(format!(
                    "--crd-dir {}: no CustomResourceDefinition there (apiextensions.k8s.io/v1, kind: CustomResourceDefinition)",
                    dir.display()
                )));
            }
            crds
        }
        None => Default::default(),
    };
    // --contexts/--all-contexts check the files against each cluster: they imply --cluster.
    // The timing flags without --contexts are refused by `Fleet::resolve`, as elsewhere.
    let fleet_flags = cli.fleet.is_set()
        || cli.fleet.parallel_contexts.is_some()
        || cli.fleet.context_timeout.is_some();
    Ok(Mode::Lint(Box::new(LintSettings {
        files,
        recursive: cli.recursive,
        output: cli.output,
        fail_on: cli.fail_on,
        config,
        jobs: cli.jobs,
        display: display(&Output::default(), false),
        fix: (cli.fix || cli.diff).then_some((
            FixMode {
                unsafe_fixes: cli.unsafe_fixes,
                write: cli.fix,
            },
            Diff(cli.diff),
        )),
        live: cli.cluster || fleet_flags,
        crds,
    })))
}

fn usage(message: impl Into<String>) -> CommandError {
    CommandError::Input(message.into())
}

/// `policy`'s YAML, once its flags are checked.
fn policy(
    actions: &[admission::Action],
    namespace_selector: Option<&str>,
    exemptions: admission::Exemptions,
) -> Result<String, CommandError> {
    if actions.contains(&admission::Action::Deny) && actions.contains(&admission::Action::Warn) {
        return Err(usage(
            "--action: Deny and Warn exclude each other (the API server refuses the binding)",
        ));
    }
    let mut actions = actions.to_vec();
    actions.dedup();
    let namespaces = namespace_selector
        .map(admission::namespace_selector)
        .transpose()
        .map_err(|e| usage(format!("--namespace-selector: {e}")))?;
    Ok(admission::policy_yaml(
        &actions,
        namespaces.as_deref(),
        exemptions,
    ))
}

/// The configuration: `--config`, or the file found upward from the first input, with
/// `--enable`/`--disable` on top.
fn load_config(
    explicit: Option<&std::path::Path>,
    files: &[PathBuf],
    enable: &[String],
    disable: &[String],
) -> Result<Config, CommandError> {
    let path = match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => files
            .iter()
            .find(|f| f.as_os_str() != "-")
            .and_then(|f| Config::discover(f)),
    };
    let mut config = match &path {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).map_err(|e| usage(format!("{}: {e}", p.display())))?;
            Config::parse(&text, &p.display().to_string()).map_err(|e| usage(e.to_string()))?
        }
        None => Config::default(),
    };
    config
        .apply_flags(enable, disable)
        .map_err(|e| usage(e.to_string()))?;
    Ok(config)
}
