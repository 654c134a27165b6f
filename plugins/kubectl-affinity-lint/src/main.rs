//! `kubectl affinity-lint`: lint workloads for scheduling mistakes — above all required
//! `nodeSelectorTerms` split into OR-ed terms — with positions, fixes and CI outputs.
//! Needs no cluster. A thin layer over the `placekit` core library.

mod live;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use placekit::complete::{self, Candidate, Position, Slot, Source};
use placekit::connect::ConnectionArgs;
use placekit::exit;
use placekit::fleet::{self, ClusterRead, Fleet, FleetArgs};
use placekit::lint::admission;
use placekit::lint::engine::{Config, FileReport, Outcome, Settings, lint_paths_streaming};
use placekit::lint::fixer::{self, FixMode};
use placekit::lint::output::{self, Structured, StructuredWriter};
use placekit::lint::rule::Severity;
use placekit::ui::{ColorChoice, DisplayArgs, OutputFormat, Ui};

const AFTER_HELP: &str = "\
Examples:
  # A Deployment whose three required conditions were split into OR-ed terms
  kubectl affinity-lint -f examples/llm-inference-split-terms.yaml

  # A chart's rendered output, in CI, as GitHub annotations
  helm template ./chart | kubectl affinity-lint -f - -o github

  # A directory tree, SARIF for code scanning, failing only on errors
  kubectl affinity-lint -f manifests/ -R -o sarif --fail-on error >lint.sarif

  # What a rule checks, why, an example and the fix
  kubectl affinity-lint rules AL001

  # Show the fixes as a diff; apply them (merging split terms is an unsafe fix)
  kubectl affinity-lint -f examples/llm-inference-split-terms.yaml --diff \\
      --unsafe-fixes
  kubectl affinity-lint -f manifests/ -R --fix

  # GitLab code quality report
  kubectl affinity-lint -f manifests/ -R -o gitlab > gl-code-quality-report.json

  # Enforce the single-object rules in the cluster (ValidatingAdmissionPolicy)
  kubectl affinity-lint policy | kubectl apply -f -

  # The same manifests against the live nodes (AL101-AL105: no candidate,
  # typo'd keys, tainted candidates, not enough free GPUs, impossible spread)
  kubectl affinity-lint -f deploy.yaml --cluster
  # ... against every production cluster at once (one report, a CONTEXT each)
  kubectl affinity-lint -f deploy.yaml --contexts 'prod-*'

  # Running pods whose node no longer satisfies their affinity (a constant
  # number of paged list calls, never one call per pod)
  kubectl affinity-lint drift -A -l app=llm-inference
  kubectl affinity-lint drift -A --all-contexts --context-timeout 5s

  # Why is this pod Pending? Every node through the scheduler's filters
  kubectl affinity-lint why-pending llm-inference-0 -n ml -o json

Suppress a rule on one object with the annotation
  affinity-lint.placekit.dev/ignore: \"AL013,AL014\"
on the object or its pod template; configure rules in .affinity-lint.yaml (found upward from \
the first input, or --config):
  rules: {AL014: off, AL010: error}

Exit codes:
  0  no finding at or above --fail-on
  1  findings at or above --fail-on
  2  input errors (unreadable files, broken YAML); other documents are still linted
  3  the cluster was unreachable or forbidden (--cluster, drift, why-pending)
  4  with --contexts/--all-contexts: some contexts could not be read; the
     others' results are printed";

/// `policy --help`.
const POLICY_ABOUT: &str = "\
Print a ValidatingAdmissionPolicy (CEL, admissionregistration.k8s.io/v1, Kubernetes 1.30+) \
and its binding that enforce the single-object rules in the cluster: AL001 (required terms \
split over different keys, with the linter's alternative-evidence exception), AL003 (an \
empty term), AL006 (a weight outside 1..100) and AL007 (an extended resource without an \
equal limit), for Pods, PodTemplates and the pod templates of Deployments, StatefulSets, \
DaemonSets, ReplicaSets, ReplicationControllers, Jobs and CronJobs. Messages name the rule. \
A workload is exempted by the annotation the linter honours, \
affinity-lint.placekit.dev/ignore: \"AL001\", on the object or its pod template.

Examples:
  # Reject split-term workloads cluster-wide
  kubectl affinity-lint policy | kubectl apply -f -

  # Roll out gently: admit with a warning (kubectl prints it) and audit it
  kubectl affinity-lint policy --action warn,audit | kubectl apply -f -

  # Only in namespaces labelled policy=enforce
  kubectl affinity-lint policy --namespace-selector policy=enforce |
      kubectl apply -f -

  # Remove it
  kubectl delete validatingadmissionpolicybinding,validatingadmissionpolicy \\
      affinity-lint.placekit.dev";

/// `drift --help`.
const DRIFT_ABOUT: &str = "\
Running pods whose node no longer satisfies their nodeSelector or required node affinity \
(IgnoredDuringExecution: they keep running, new replicas would not land there), or whose \
tolerations no longer cover the node's NoExecute taints (those are evicted), from one node \
list and one paged pod list.

Checked against a real kube-scheduler v1.37.2 in placekit's test suite: after \
changing the labels, taints or cordon of 105 nodes under 168 running pods, drift listed \
exactly the 32 pods whose pinned copy the scheduler refused by node affinity or an \
untolerated taint (168/168 agree; NoSchedule taints and cordons, which do not evict, are not \
drift).";

/// `why-pending --help`: what is modelled, and how well it agrees with the real scheduler.
const WHY_PENDING_ABOUT: &str = "\
Explain why a pod is Pending: the evidence a pending-pod investigation gathers (conditions, \
affinity, nodeSelector, tolerations, topology spread, requests, events), every node through \
kube-scheduler's filters in the scheduler's order with each node's first failing filter, \
the FailedScheduling message the scheduler would write (predictedMessage), and a verdict \
with the action to take. A pod that is Pending but already bound to a node \
(spec.nodeName) is reported as scheduled: it waits for the kubelet, not the scheduler.

Modelled, in kube-scheduler's order (v1.37 default profile): NodeAffinity's PreFilter \
(required terms that all name nodes with matchFields metadata.name), NodeUnschedulable, \
TaintToleration (NoSchedule and NoExecute), NodeAffinity (nodeSelector and required \
terms), NodeResourcesFit (pod count, then every missing resource incl. nvidia.com/gpu), \
PodTopologySpread (DoNotSchedule constraints: maxSkew, minDomains, matchLabelKeys, \
nodeAffinityPolicy, nodeTaintsPolicy) and InterPodAffinity (required pod affinity, the \
pod's own required anti-affinity, the running pods' anti-affinity), then DynamicResources \
(DRA, resource.k8s.io/v1): each claim's state (allocated, pending, missing), an allocated \
claim's node selector, and whether the devices a pending claim (or an extended resource a \
DeviceClass serves) needs are free on the node, per device class whose selector is \
device.driver == \"...\" (\"cannot allocate all claims\"). Claims whose classes or \
requests use other CEL selectors are named as not modelled and the scheduler's own \
FailedScheduling message is quoted instead of a prediction. Not modelled: host \
ports (NodePorts), volumes, scheduler extenders and custom \
profiles, nominated nodes and preemption; a non-empty namespaceSelector in a pod \
(anti-)affinity term selects no namespace here (placekit does not read namespaces).

Exit codes: 0 when the pod is scheduled or a node fits now, 1 when it cannot be placed now \
(no node fits, a claim is missing, or its claims cannot be modelled), 2 usage, 3 cluster.

Checked against a real kube-scheduler v1.37.2 in placekit's test suite \
(520 generated cases): 520/520 decisions (bound node feasible, unschedulable exactly when \
no node is) and 352/352 per-reason node counts of the FailedScheduling message agree; \
why-pending's predicted message equals the scheduler's for 45/45 sampled pending pods.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
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
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    /// Files, directories or - for stdin (YAML or JSON, multi-document, kind: List).
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    files: Vec<PathBuf>,
    /// More files, as pre-commit and other tools pass them (the same as -f).
    #[arg(value_name = "FILE")]
    paths: Vec<PathBuf>,
    /// Recurse into directories.
    #[arg(short = 'R', long)]
    recursive: bool,
    /// Apply the safe fixes in place (minimal edits: comments, order, quoting and other
    /// documents stay as they were), then report what is left. Stdin: the fixed stream goes
    /// to stdout, the report to stderr.
    #[arg(long, conflicts_with = "diff")]
    fix: bool,
    /// Print the fixes as a unified diff instead of writing them.
    #[arg(long)]
    diff: bool,
    /// With --fix/--diff, also apply fixes that change what the scheduler does (AL001's
    /// merge, AL012).
    #[arg(long)]
    unsafe_fixes: bool,
    /// Documents linted at once (0: one per core). The report's order does not depend on it.
    #[arg(short = 'j', long, value_name = "N", default_value_t = 0)]
    jobs: usize,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: Format,
    /// The lowest severity that makes the exit code 1.
    #[arg(long, value_enum, default_value = "warning")]
    fail_on: Severity,
    /// Rules to turn on (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    enable: Vec<String>,
    /// Rules to turn off (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    disable: Vec<String>,
    /// The configuration file (default: .affinity-lint.yaml upward from the first input).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// When to use colour.
    #[arg(long, value_enum, default_value = "auto")]
    color: ColorChoice,
    /// Also check the manifests against the live cluster's nodes (rules AL101-AL105). (The
    /// kubeconfig cluster is chosen with --kube-cluster in this plugin.)
    #[arg(long = "cluster", id = "check_cluster")]
    cluster: bool,
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    fleet: FleetArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a shell's completion script, or (`kubectl`) the helper for `kubectl affinity-lint <TAB>`.
    #[command(
        after_help = "Examples:\n  # kubectl affinity-lint <TAB> (kubectl 1.26+): the helper goes next to\n  # the plugin on PATH; remove it before kubectl krew uninstall affinity-lint\n  kubectl affinity-lint completion kubectl --install\n  kubectl affinity-lint completion kubectl --uninstall\n\n  # or print it and put it on PATH yourself\n  kubectl affinity-lint completion kubectl \\\n      > ~/bin/kubectl_complete-affinity_lint\n  chmod +x ~/bin/kubectl_complete-affinity_lint\n\n  # kubectl-affinity_lint <TAB> in bash\n  source <(kubectl-affinity_lint completion bash)"
    )]
    Completion(complete::CompletionArgs),
    /// Running pods whose node no longer satisfies their nodeSelector or required affinity.
    #[command(long_about = DRIFT_ABOUT)]
    Drift {
        /// All namespaces (default unless -n is given).
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// Only pods matching this label selector.
        #[arg(short = 'l', long)]
        selector: Option<String>,
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// Explain why a pod is Pending: evidence and every node through the scheduler's filters.
    #[command(long_about = WHY_PENDING_ABOUT)]
    WhyPending {
        /// The pending pod's name (its namespace with -n).
        pod: String,
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// Print a ValidatingAdmissionPolicy and its binding that enforce AL001, AL003, AL006
    /// and AL007 in the cluster (apply with `| kubectl apply -f -`).
    #[command(long_about = POLICY_ABOUT)]
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
    },
    /// List the rules, or show one rule's documentation.
    Rules {
        /// A rule id, e.g. AL001.
        rule: Option<String>,
    },
}

/// Rule ids with their summaries, for completion.
fn rule_ids() -> Vec<Candidate> {
    placekit::lint::rules::all_metas()
        .map(|m| Candidate::new(m.id, m.summary))
        .collect()
}

/// What `kubectl affinity-lint <TAB>` offers where the shared flags do not decide.
fn completion_source(position: &Position) -> Source {
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

fn main() -> ExitCode {
    placekit::ui::exit_quietly_on_broken_pipe();
    if let Some(code) = complete::intercept(command, completion_source) {
        return code;
    }
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match &cli.command {
        Some(Command::Rules { rule }) => return rules(rule.as_deref()),
        Some(Command::Policy {
            action,
            namespace_selector,
        }) => {
            if action.contains(&admission::Action::Deny)
                && action.contains(&admission::Action::Warn)
            {
                eprintln!(
                    "error: --action: Deny and Warn exclude each other (the API server refuses the binding)"
                );
                return ExitCode::from(exit::USAGE);
            }
            let mut actions = action.clone();
            actions.dedup();
            let namespaces = match namespace_selector
                .as_deref()
                .map(admission::namespace_selector)
            {
                Some(Err(e)) => {
                    eprintln!("error: --namespace-selector: {e}");
                    return ExitCode::from(exit::USAGE);
                }
                Some(Ok(s)) => Some(s),
                None => None,
            };
            write_out(
                &admission::policy_yaml(&actions, namespaces.as_deref()),
                false,
            );
            return ExitCode::SUCCESS;
        }
        Some(Command::Completion(args)) => {
            return match complete::run_completion(
                args,
                command(),
                "kubectl-affinity_lint",
                "affinity-lint",
            ) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(exit::USAGE)
                }
            };
        }
        Some(Command::Drift {
            all_namespaces,
            selector,
            output,
        }) => {
            let ui = Ui::new(&DisplayArgs {
                output: *output,
                color: cli.color,
                ..DisplayArgs::default()
            });
            let namespace = if *all_namespaces {
                None
            } else {
                cli.connection.namespace.clone()
            };
            let selector = selector.clone();
            return placekit::error::run_to_exit_code(async {
                match Fleet::resolve(&cli.connection, &cli.fleet)? {
                    Some(fleet) => {
                        live::drift_fleet(&fleet, &ui, namespace.as_deref(), selector.as_deref())
                            .await
                    }
                    None => {
                        let conn = cli.connection.connect().await?;
                        live::drift(&conn, &ui, namespace.as_deref(), selector.as_deref()).await
                    }
                }
            });
        }
        Some(Command::WhyPending { pod, output }) => {
            let ui = Ui::new(&DisplayArgs {
                output: *output,
                color: cli.color,
                ..DisplayArgs::default()
            });
            return placekit::error::run_to_exit_code(async {
                cli.fleet.refuse(
                    "kubectl affinity-lint why-pending",
                    "`kubectl affinity-lint --cluster` and `drift`",
                )?;
                let conn = cli.connection.connect().await?;
                live::why_pending(&conn, &ui, &conn.namespace, pod).await
            });
        }
        None => {}
    }
    let mut cli = cli;
    let positional = std::mem::take(&mut cli.paths);
    cli.files.extend(positional);
    if cli.files.is_empty() {
        eprintln!("error: no input: give -f PATH (a file, a directory with -R, or - for stdin)");
        return ExitCode::from(exit::USAGE);
    }
    if cli.diff && cli.output != Format::Text {
        eprintln!(
            "error: --diff prints a unified diff, not a {} report (use --fix -o {0}, or lint without --diff)",
            cli.output
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default()
        );
        return ExitCode::from(exit::USAGE);
    }
    if cli.unsafe_fixes && !(cli.fix || cli.diff) {
        eprintln!("error: --unsafe-fixes applies with --fix or --diff");
        return ExitCode::from(exit::USAGE);
    }
    let config = match load_config(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let ui = Ui::new(&DisplayArgs {
        color: cli.color,
        ..DisplayArgs::default()
    });
    // --contexts/--all-contexts check the files against each cluster: they imply --cluster.
    // The timing flags without --contexts are refused by `Fleet::resolve`, as elsewhere.
    let fleet_flags = cli.fleet.is_set()
        || cli.fleet.parallel_contexts.is_some()
        || cli.fleet.context_timeout.is_some();
    let (clusters, contexts) = if cli.cluster || fleet_flags {
        let state = placekit::error::block_on(async {
            let fleet = Fleet::resolve(&cli.connection, &cli.fleet)?;
            live::lint_clusters(&cli.connection, fleet.as_ref(), &ui).await
        });
        match state {
            Ok(read) => read,
            Err(e) => {
                eprintln!(
                    "error: {}",
                    placekit::ui::escape_controls(&placekit::connect::redact(&e.to_string()), true)
                );
                return ExitCode::from(e.exit_code());
            }
        }
    } else {
        (Vec::new(), Vec::new())
    };
    // Every context failed: there is nothing to check the files against.
    if !contexts.is_empty() && clusters.is_empty() {
        return ExitCode::from(fleet::exit_code(&contexts, |_| exit::SUCCESS));
    }
    let settings = Settings {
        config: &config,
        keep_source_lines: cli.output == Format::Text,
        clusters: &clusters,
        jobs: cli.jobs,
        contents: None,
    };
    let code = if cli.fix || cli.diff {
        fix(&cli, &settings, &ui, &contexts)
    } else {
        lint_streaming(&cli, &settings, &ui, &contexts)
    };
    // Some contexts could not be read: the report is incomplete (input errors still say 2).
    if fleet::exit_code(&contexts, |_| exit::SUCCESS) == exit::SOME_CONTEXTS_UNREAD
        && code != ExitCode::from(exit::USAGE)
    {
        return ExitCode::from(exit::SOME_CONTEXTS_UNREAD);
    }
    code
}

/// The report is printed file by file as the files are done (a big file document by
/// document), in every format, so a monorepo's report starts at once and its findings are
/// never all held in memory.
fn lint_streaming(
    cli: &Cli,
    settings: &Settings<'_>,
    ui: &Ui,
    contexts: &[ClusterRead<()>],
) -> ExitCode {
    let summary = match structured(cli.output) {
        Some(format) => {
            let contexts = (!contexts.is_empty()).then(|| fleet::contexts_json(contexts));
            let stdout = std::io::BufWriter::new(std::io::stdout().lock());
            let mut failed = None;
            let result = StructuredWriter::start(
                format,
                stdout,
                env!("CARGO_PKG_VERSION"),
                contexts.as_ref(),
            )
            .and_then(|mut writer| {
                let files =
                    lint_paths_streaming(&cli.files, cli.recursive, settings, &mut |report| {
                        if failed.is_none()
                            && let Err(e) = writer.add(report)
                        {
                            failed = Some(e);
                        }
                    });
                match failed {
                    Some(e) => Err(e),
                    None => writer.finish(files),
                }
            });
            match result {
                Ok(summary) => summary,
                // A closed stdout (`| head`) ends quietly; the exit code still says what was found.
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::BrokenPipe {
                        eprintln!("error: writing the report: {e}");
                    }
                    return ExitCode::from(exit::USAGE);
                }
            }
        }
        None => {
            let mut summary = output::Summary::default();
            let mut out = Output::default();
            summary.files =
                lint_paths_streaming(&cli.files, cli.recursive, settings, &mut |report| {
                    summary.add(&report);
                    out.write(&match cli.output {
                        Format::Github => output::github_file(&report),
                        _ => output::text_file(&report, ui),
                    });
                });
            if cli.output == Format::Text {
                out.write(&output::text_summary(&summary));
            }
            summary
        }
    };
    if summary.input_errors > 0 {
        ExitCode::from(exit::USAGE)
    } else if summary.failing(cli.fail_on) > 0 {
        ExitCode::from(exit::PROBLEMS)
    } else {
        ExitCode::SUCCESS
    }
}

/// The structured format of `output`, if it is one.
fn structured(output: Format) -> Option<Structured> {
    match output {
        Format::Json => Some(Structured::Json),
        Format::Sarif => Some(Structured::Sarif),
        Format::Gitlab => Some(Structured::Gitlab),
        Format::Text | Format::Github => None,
    }
}

/// Stdout written piece by piece: once it is closed (`| head`) the rest is dropped
/// quietly, and another write error is said once.
#[derive(Default)]
struct Output {
    broken: bool,
}

impl Output {
    fn write(&mut self, text: &str) {
        use std::io::Write;
        if self.broken || text.is_empty() {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
        {
            self.broken = true;
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                eprintln!("error: writing the report: {e}");
            }
        }
    }
}

/// Renders the report in the chosen format, on stdout (or stderr when stdout carries the
/// fixed stream).
/// With `--contexts`, the JSON report lists every cluster read (and why one could not be).
fn print_report(
    cli: &Cli,
    outcome: &Outcome,
    ui: &Ui,
    to_stderr: bool,
    contexts: &[ClusterRead<()>],
) {
    let rendered = match structured(cli.output) {
        Some(format) => {
            let contexts = (!contexts.is_empty()).then(|| fleet::contexts_json(contexts));
            let mut bytes = Vec::new();
            let report = FileReport {
                errors: outcome.errors.clone(),
                findings: outcome.findings.clone(),
                documents: outcome.documents,
                objects: outcome.objects,
            };
            StructuredWriter::start(
                format,
                &mut bytes,
                env!("CARGO_PKG_VERSION"),
                contexts.as_ref(),
            )
            .and_then(|mut writer| {
                writer.add(report)?;
                writer.finish(outcome.files)
            })
            .expect("writing to memory does not fail");
            String::from_utf8(bytes).expect("JSON is UTF-8")
        }
        None if cli.output == Format::Github => output::github_report(outcome),
        None => output::text_report(outcome, ui),
    };
    write_out(&rendered, to_stderr);
}

/// Writes to stdout (a closed stdout, `| head`, ends quietly) or stderr.
fn write_out(text: &str, to_stderr: bool) {
    use std::io::Write;
    let result = if to_stderr {
        std::io::stderr().lock().write_all(text.as_bytes())
    } else {
        std::io::stdout().lock().write_all(text.as_bytes())
    };
    if let Err(e) = result
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("error: writing the report: {e}");
    }
}

fn exit_code(outcome: &Outcome, fail_on: Severity) -> ExitCode {
    if !outcome.errors.is_empty() {
        ExitCode::from(exit::USAGE)
    } else if output::failing(&outcome.findings, fail_on) > 0 {
        ExitCode::from(exit::PROBLEMS)
    } else {
        ExitCode::SUCCESS
    }
}

/// `--fix` / `--diff`: fix, then report what was fixed and what is left; exit codes as
/// without them, computed on what is left (for `--diff`, 1 also when there is a diff).
fn fix(cli: &Cli, settings: &Settings<'_>, ui: &Ui, contexts: &[ClusterRead<()>]) -> ExitCode {
    let stdin_input = cli.files.iter().any(|f| f.as_os_str() == "-");
    let stdin = if stdin_input {
        let mut text = String::new();
        let limit = placekit::lint::source::MAX_FILE_BYTES;
        // One byte past the limit tells an oversized stream from one that fits.
        match std::io::Read::read_to_string(
            &mut std::io::Read::take(std::io::stdin(), limit + 1),
            &mut text,
        ) {
            Ok(_) if text.len() as u64 > limit => {
                eprintln!(
                    "error: <stdin>: input is over the {limit}-byte limit; nothing was fixed"
                );
                return ExitCode::from(exit::USAGE);
            }
            Ok(_) => Some(text),
            Err(e) => {
                eprintln!("error: reading stdin: {e}");
                return ExitCode::from(exit::USAGE);
            }
        }
    } else {
        None
    };
    let mode = FixMode {
        unsafe_fixes: cli.unsafe_fixes,
        write: cli.fix,
    };
    let outcome = fixer::fix(&cli.files, cli.recursive, settings, stdin.clone(), mode);
    let summary = outcome.summary(mode, cli.diff);
    let stdin_fixed = outcome
        .changed
        .get(fixer::STDIN)
        .map(|(_, after)| after.clone());
    if cli.diff {
        write_out(&outcome.diff(), false);
        write_out(&summary, true);
        let code = exit_code(&outcome.remaining, cli.fail_on);
        return if code == ExitCode::SUCCESS && !outcome.changed.is_empty() {
            ExitCode::from(exit::PROBLEMS)
        } else {
            code
        };
    }
    write_out(&summary, true);
    if stdin_input {
        // The fixed stream (or the unchanged one) on stdout; the report on stderr.
        write_out(
            stdin_fixed
                .as_deref()
                .or(stdin.as_deref())
                .unwrap_or_default(),
            false,
        );
        print_report(cli, &outcome.remaining, ui, true, contexts);
    } else {
        print_report(cli, &outcome.remaining, ui, false, contexts);
    }
    if !outcome.write_errors.is_empty() {
        return ExitCode::from(exit::USAGE);
    }
    exit_code(&outcome.remaining, cli.fail_on)
}

/// The command line: `--cluster` is the live check here (see the README), so kubectl's
/// `--cluster NAME` becomes `--kube-cluster NAME` in this plugin.
fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command().mut_arg("cluster", |a| a.long("kube-cluster"))
}

fn load_config(cli: &Cli) -> Result<Config, String> {
    let path = match &cli.config {
        Some(p) => Some(p.clone()),
        None => cli
            .files
            .iter()
            .find(|f| f.as_os_str() != "-")
            .and_then(|f| Config::discover(f)),
    };
    let mut config = match &path {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            Config::parse(&text, &p.display().to_string()).map_err(|e| e.to_string())?
        }
        None => Config::default(),
    };
    config
        .apply_flags(&cli.enable, &cli.disable)
        .map_err(|e| e.to_string())?;
    Ok(config)
}

fn rules(id: Option<&str>) -> ExitCode {
    let page = match id {
        None => Some(placekit::lint::rules::catalogue_table()),
        Some(id) => placekit::lint::rules::page(id),
    };
    match page {
        Some(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        None => {
            eprintln!(
                "error: unknown rule {:?}; `kubectl affinity-lint rules` lists them",
                id.unwrap_or_default()
            );
            ExitCode::from(exit::USAGE)
        }
    }
}
