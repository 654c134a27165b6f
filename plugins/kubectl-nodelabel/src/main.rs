//! `kubectl nodelabel`: set and remove node labels with a snapshot first and exact-match
//! rollback, import node features in node-feature-discovery's format, and show who depends
//! on a label. A thin layer over the `placekit` core library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use placekit::complete::{self, Position, Slot, Source};
use placekit::connect::ConnectionArgs;
use placekit::error::{CommandError, run_to_exit_code};
use placekit::exit;
use placekit::fleet::{Fleet, FleetArgs};
use placekit::mutation::labels::{self, COMMAND, FeatureSource, ImportOptions, LabelRequest, TOOL};
use placekit::mutation::report::print_report;
use placekit::mutation::undo::{self, RollbackArgs, SnapshotChoice};
use placekit::nfd::{NamespacePolicy, Naming};
use placekit::overrides::DependentsOverride;
use placekit::syntax::parse_label_changes;
use placekit::targets::Targets;
use placekit::ui::{DisplayArgs, MutationArgs, Ui};

const EXAMPLES: &str = "\
Examples:
  # Label the online A100 pool (snapshot first; prints how to undo it)
  kubectl nodelabel set -l pool=online \\
      accelerator.example.com/gpu-family=a100 --overwrite

  # Pool, GPU family and memory labels on one node: no saving labels by hand
  kubectl nodelabel set NODE \\
      ops.example.com.node-restriction.kubernetes.io/llm-pool=online \\
      accelerator.example.com/gpu-family=a100 \\
      accelerator.example.com/gpu-memory=80gb --overwrite

  # Undo the newest change on this cluster, exactly (again: the one before it)
  kubectl nodelabel rollback --last

  # Who would stop scheduling if the label went away?
  kubectl nodelabel dependents accelerator.example.com/gpu-family -A

  # Import node features written by a hook (NFD's classic hook naming)
  kubectl nodelabel import --hook \\
      /etc/kubernetes/node-feature-discovery/source.d/my-script NODE";

/// Set and remove node labels safely: snapshot first, conditional writes, exact rollback.
#[derive(Debug, Parser)]
#[command(name = "kubectl nodelabel", bin_name = "kubectl nodelabel", version, about, after_help = format!("{EXAMPLES}\n\n{}", exit::EXIT_CODES_HELP))]
struct Cli {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    display: DisplayArgs,
    #[command(flatten)]
    fleet: FleetArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct Selection {
    /// Select nodes by label selector (kubectl syntax: k=v, k!=v, k in (a,b), k, !k).
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Select every node.
    #[arg(long, conflicts_with = "selector")]
    all: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Set (KEY=VALUE) or remove (KEY-) labels on nodes.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel set gpu-a100-1 gpu-a100-2 \\\n      accelerator.example.com/gpu-family=a100 --overwrite\n  kubectl nodelabel set -l pool=online \\\n      accelerator.example.com/gpu-memory=80gb power-profile- --overwrite\n  kubectl nodelabel set --all team=ml --dry-run=client"
    )]
    Set {
        /// Node names (NAME or node/NAME), then KEY=VALUE to set and KEY- to remove
        /// (kubectl label syntax).
        #[arg(required = true, value_name = "NODE|KEY=VALUE|KEY-")]
        args: Vec<String>,
        #[command(flatten)]
        selection: Selection,
        /// Change labels that already have another value.
        #[arg(long)]
        overwrite: bool,
        #[command(flatten)]
        overrides: DependentsOverride,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Remove labels from nodes (keys contain '/' or end with '-'; other words are node names).
    #[command(
        after_help = "Examples:\n  kubectl nodelabel remove gpu-a100-1 accelerator.example.com/gpu-memory\n  kubectl nodelabel remove -l pool=online power-profile- --ignore-dependents"
    )]
    Remove {
        /// Node names and label keys.
        #[arg(required = true, value_name = "NODE|KEY")]
        args: Vec<String>,
        #[command(flatten)]
        selection: Selection,
        #[command(flatten)]
        overrides: DependentsOverride,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Undo a change recorded in a snapshot, exactly.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel rollback --last\n  kubectl nodelabel rollback --last gpu-a100-1   # only this node of it\n  kubectl nodelabel rollback \\\n      ~/.local/state/placekit/snapshots/<file>.snapshot.jsonl \\\n      --overwrite-changes   # also what others changed since"
    )]
    Rollback {
        #[command(flatten)]
        rollback: RollbackArgs,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Print a shell's completion script, or (`kubectl`) the helper for `kubectl nodelabel <TAB>`.
    #[command(
        after_help = "Examples:\n  # kubectl nodelabel <TAB> (kubectl 1.26+): the helper goes next to\n  # the plugin on PATH; remove it before kubectl krew uninstall nodelabel\n  kubectl nodelabel completion kubectl --install\n  kubectl nodelabel completion kubectl --uninstall\n\n  # or print it and put it on PATH yourself\n  kubectl nodelabel completion kubectl \\\n      > ~/bin/kubectl_complete-nodelabel\n  chmod +x ~/bin/kubectl_complete-nodelabel\n\n  # kubectl-nodelabel <TAB> in bash\n  source <(kubectl-nodelabel completion bash)"
    )]
    Completion(complete::CompletionArgs),
    /// List snapshots: time, context, command, nodes, outcome, whether rolled back.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel history\n  kubectl nodelabel history -o wide   # also the server and the operation\n  kubectl nodelabel history -o json"
    )]
    History,
    /// Print one snapshot.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel show --last\n  kubectl nodelabel show --last -o json\n  kubectl nodelabel show ~/.local/state/placekit/snapshots/<file>.snapshot.jsonl"
    )]
    Show {
        /// The snapshot file (see `history`).
        snapshot: Option<String>,
        /// The newest change on the current context's cluster, by either plugin, that is
        /// not a rollback and not yet rolled back (the one `rollback --last` would undo).
        #[arg(long)]
        last: bool,
    },
    /// Import node features in node-feature-discovery's local-source format.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel import --file features.txt gpu-a100-1\n  kubectl nodelabel import --dir ./features --prune\n  kubectl nodelabel import --hook ./my-script -l pool=online"
    )]
    Import {
        /// A feature file for the target nodes.
        #[arg(long, value_name = "FILE", group = "source")]
        file: Option<PathBuf>,
        /// A directory of per-node files (<node> or <node>.features).
        #[arg(long, value_name = "DIR", group = "source")]
        dir: Option<PathBuf>,
        /// An executable run directly (no shell) once per target node, with NODE_NAME and
        /// the node's name as its first argument; its output is that node's feature list.
        #[arg(long, value_name = "EXECUTABLE", group = "source")]
        hook: Option<PathBuf>,
        /// Target nodes (for --file and --hook).
        nodes: Vec<String>,
        #[command(flatten)]
        selection: Selection,
        /// file: key -> feature.node.kubernetes.io/key; hook: key -> feature.node.kubernetes.io/<hook>-key.
        #[arg(long, value_enum)]
        naming: Option<NamingArg>,
        /// Re-allow a kubernetes.io label namespace.
        #[arg(long, value_name = "NAMESPACE")]
        extra_label_ns: Vec<String>,
        /// Remove labels a previous import from the same source (file, directory or hook
        /// name) set that no longer appear.
        #[arg(long)]
        prune: bool,
        /// Apply the valid entries and report the invalid ones instead of applying nothing.
        #[arg(long)]
        skip_invalid: bool,
        /// Change existing labels that an earlier import did not set.
        #[arg(long)]
        overwrite: bool,
        #[command(flatten)]
        overrides: DependentsOverride,
        /// Accept a hook that prints the same features for several nodes (refused
        /// otherwise: a hook runs on this machine and may describe it instead of the node).
        #[arg(long)]
        allow_identical_features: bool,
        /// How long a hook may run.
        #[arg(long, default_value = "10s", value_name = "DURATION")]
        hook_timeout: String,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Show the workloads whose nodeSelector or node affinity mentions a label.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel dependents accelerator.example.com/gpu-family -A\n  kubectl nodelabel dependents accelerator.example.com/gpu-family=a100 -n ml\n  # Which clusters run a workload this label change would break?\n  kubectl nodelabel dependents accelerator.example.com/gpu-family -A \\\n      --contexts 'prod-*'"
    )]
    Dependents {
        /// Label keys, or KEY=VALUE for the workloads that need that value.
        #[arg(required = true, value_name = "KEY[=VALUE]")]
        keys: Vec<String>,
        /// All namespaces (the default unless -n is given).
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum NamingArg {
    File,
    Hook,
}

/// What `kubectl nodelabel <TAB>` offers where the shared flags do not decide.
fn completion_source(position: &Position) -> Source {
    let command = position.path.first().map(String::as_str);
    match (command, &position.slot) {
        (_, Slot::FlagValue { id }) if id == "selector" => Source::LabelKeys { suffix: "=" },
        (Some("set"), Slot::Positional { .. }) => Source::NodesOrLabelKeys { suffix: "=" },
        (Some("remove"), Slot::Positional { .. }) => Source::NodesOrLabelKeys { suffix: "-" },
        (Some("import"), Slot::Positional { .. }) => Source::Nodes,
        (Some("dependents"), Slot::Positional { .. }) => Source::LabelKeys { suffix: "" },
        (Some("rollback"), Slot::Positional { id, .. }) if id == "nodes" => Source::Nodes,
        (Some("rollback" | "show"), Slot::Positional { .. }) => Source::Snapshots { tool: TOOL },
        // --file, --dir, --hook, --backup.
        (_, Slot::FlagValue { .. }) => Source::Files,
        _ => Source::Fixed,
    }
}

fn main() -> ExitCode {
    placekit::ui::exit_quietly_on_broken_pipe();
    if let Some(code) =
        complete::intercept(<Cli as clap::CommandFactory>::command, completion_source)
    {
        return code;
    }
    // Parse first: --help and --version never build the async runtime or a client.
    let cli = Cli::parse();
    let ui = Ui::new(&cli.display);
    run_to_exit_code(run(cli, &ui))
}

fn input(e: impl std::fmt::Display) -> CommandError {
    CommandError::Input(e.to_string())
}

fn targets(names: Vec<String>, selection: &Selection) -> Result<Targets, CommandError> {
    Targets::from_args(names, selection.selector.as_deref(), selection.all)
}

async fn run(cli: Cli, ui: &Ui) -> Result<u8, CommandError> {
    // Several clusters are read by dependents and history only; the rest refuse before any
    // work.
    let refuse = |command: &str| {
        cli.fleet.refuse(
            &format!("kubectl nodelabel {command}"),
            "`kubectl nodelabel dependents` and `history`",
        )
    };
    match &cli.command {
        Command::Dependents { .. } | Command::History | Command::Completion(_) => {}
        Command::Set { .. } => refuse("set")?,
        Command::Remove { .. } => refuse("remove")?,
        Command::Import { .. } => refuse("import")?,
        Command::Rollback { .. } => refuse("rollback")?,
        Command::Show { .. } => refuse("show")?,
    }
    match cli.command {
        Command::Set {
            args,
            selection,
            overwrite,
            overrides,
            mutation,
        } => {
            let ignore_dependents = overrides.resolve()?;
            let (names, specs): (Vec<String>, Vec<String>) = args
                .into_iter()
                .partition(|a| !a.contains('=') && !a.ends_with('-'));
            let changes = parse_label_changes(&specs).map_err(input)?;
            if changes.is_empty() {
                return Err(input(
                    "no label changes given: use KEY=VALUE to set and KEY- to remove",
                ));
            }
            let targets = targets(names, &selection)?;
            let request = LabelRequest {
                operation: "set",
                changes,
                overwrite,
                ignore_dependents,
            };
            labels::change_labels(&cli.connection, ui, targets, request, &mutation).await
        }
        Command::Remove {
            args,
            selection,
            overrides,
            mutation,
        } => {
            let ignore_dependents = overrides.resolve()?;
            let (keys, names): (Vec<String>, Vec<String>) = args.into_iter().partition(|a| {
                (a.contains('/') && !a.starts_with("node/") && !a.starts_with("nodes/"))
                    || a.ends_with('-')
                    || selection.selector.is_some()
                    || selection.all
            });
            let specs: Vec<String> = keys
                .iter()
                .map(|k| format!("{}-", k.trim_end_matches('-')))
                .collect();
            let changes = parse_label_changes(&specs).map_err(input)?;
            if changes.is_empty() {
                return Err(input(
                    "no label keys given: keys contain '/' or end with '-' (e.g. pool-)",
                ));
            }
            let targets = targets(names, &selection)?;
            let request = LabelRequest {
                operation: "remove",
                changes,
                overwrite: false,
                ignore_dependents,
            };
            labels::change_labels(&cli.connection, ui, targets, request, &mutation).await
        }
        Command::Rollback { rollback, mutation } => {
            let request = rollback.request()?;
            let conn = cli.connection.connect().await?;
            let report = undo::rollback(&conn, ui, TOOL, COMMAND, request, &mutation).await?;
            Ok(print_report(ui, &report))
        }
        Command::Completion(args) => {
            complete::run_completion(
                &args,
                <Cli as clap::CommandFactory>::command(),
                "kubectl-nodelabel",
                "nodelabel",
            )?;
            Ok(exit::SUCCESS)
        }
        Command::History => {
            undo::print_history(ui, &undo::history(TOOL, &cli.fleet)?);
            Ok(exit::SUCCESS)
        }
        Command::Show { snapshot, last } => {
            let choice = SnapshotChoice::from_args(snapshot.as_deref(), last)?;
            undo::show(&cli.connection, ui, TOOL, choice).await
        }
        Command::Import {
            file,
            dir,
            hook,
            nodes,
            selection,
            naming,
            extra_label_ns,
            prune,
            skip_invalid,
            overwrite,
            overrides,
            allow_identical_features,
            hook_timeout,
            mutation,
        } => {
            let ignore_dependents = overrides.resolve()?;
            let source = match (file, dir, hook) {
                (Some(f), None, None) => FeatureSource::File(f),
                (None, Some(d), None) => FeatureSource::Dir(d),
                (None, None, Some(path)) => FeatureSource::Hook {
                    timeout: placekit::connect::parse_request_timeout(&hook_timeout)
                        .map_err(input)?
                        .unwrap_or(Duration::from_secs(10)),
                    path: placekit::nfd::resolve_hook(&path).map_err(input)?,
                },
                _ => return Err(input("give one of --file, --dir or --hook")),
            };
            let given = !nodes.is_empty() || selection.selector.is_some() || selection.all;
            let targets = given.then(|| targets(nodes, &selection)).transpose()?;
            let naming = naming.map(|n| match (n, &source) {
                (NamingArg::File, _) => Naming::File,
                (NamingArg::Hook, FeatureSource::Hook { path, .. }) => Naming::Hook {
                    hook_name: placekit::nfd::hook_name(path),
                },
                (NamingArg::Hook, _) => Naming::Hook {
                    hook_name: "local".into(),
                },
            });
            let options = ImportOptions {
                naming,
                policy: NamespacePolicy {
                    extra_allowed: extra_label_ns,
                },
                prune,
                skip_invalid,
                overwrite,
                ignore_dependents,
                allow_identical_features,
            };
            labels::import(&cli.connection, ui, source, targets, options, &mutation).await
        }
        Command::Dependents {
            keys,
            all_namespaces,
        } => {
            let namespace = if all_namespaces {
                None
            } else {
                cli.connection.namespace.as_deref()
            };
            let fleet = Fleet::resolve(&cli.connection, &cli.fleet)?;
            labels::dependents(&cli.connection, fleet.as_ref(), ui, &keys, namespace).await
        }
    }
}
