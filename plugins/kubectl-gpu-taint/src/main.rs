//! `kubectl gpu-taint`: dedicate GPU nodes (taint + pool labels) with a preflight, release
//! them with exactly the same key, value and effect, and show the GPU inventory. A thin
//! layer over the `placekit` core library.

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use placekit::complete::{self, Position, Slot, Source};
use placekit::connect::ConnectionArgs;
use placekit::error::{CommandError, run_to_exit_code};
use placekit::exit;
use placekit::fleet::{Fleet, FleetArgs};
use placekit::inventory::{By, StatusOptions};
use placekit::mutation::gpu::{self, COMMAND, Dedication, TOOL};
use placekit::mutation::report::print_report;
use placekit::mutation::undo::{self, RollbackArgs, SnapshotChoice};
use placekit::overrides::{DependentsOverride, EvictionOverride};
use placekit::syntax::{parse_label_changes, parse_taint, parse_taint_to_remove};
use placekit::targets::Targets;
use placekit::ui::{DisplayArgs, MutationArgs, Ui};

const EXAMPLES: &str = "\
Examples:
  # A dedicated LLM pool: taint and pool label in one conditional write
  kubectl gpu-taint dedicate gpu-a100-1 \\
      --taint dedicated=llm-online:NoSchedule \\
      --label ops.example.com.node-restriction.kubernetes.io/llm-pool=online

  # Release exactly that taint (dedicated=batch:NoSchedule is left alone)
  kubectl gpu-taint release gpu-a100-1 --taint dedicated=llm-online:NoSchedule \\
      --label ops.example.com.node-restriction.kubernetes.io/llm-pool

  # Accelerator inventory: whole, MIG, time-sliced and DRA devices per node
  kubectl gpu-taint status -l pool=online
  kubectl gpu-taint status -o json
  kubectl gpu-taint status --by namespace
  # Every cluster of the kubeconfig in one table (exit 4 if some cannot be read)
  kubectl gpu-taint status --all-contexts
  kubectl gpu-taint status --contexts 'prod-*,!prod-cn-*' -o json

  # Undo the newest change on this cluster, exactly (again: the one before it)
  kubectl gpu-taint rollback --last";

/// Dedicate GPU nodes safely and release them exactly.
#[derive(Debug, Parser)]
#[command(name = "kubectl gpu-taint", bin_name = "kubectl gpu-taint", version, about, after_help = format!("{EXAMPLES}\n\n{}", exit::EXIT_CODES_HELP))]
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
    /// Node names.
    nodes: Vec<String>,
    /// Select nodes by label selector.
    #[arg(short = 'l', long)]
    selector: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Taint GPU nodes (and set pool labels) after a preflight.
    #[command(
        after_help = "Examples:\n  kubectl gpu-taint dedicate gpu-a100-1 gpu-a100-2 \\\n      --taint dedicated=llm-online:NoSchedule \\\n      --label ops.example.com.node-restriction.kubernetes.io/llm-pool=online\n  kubectl gpu-taint dedicate -l pool=online \\\n      --taint dedicated=llm-online:NoSchedule --dry-run=client\n  # NoExecute evicts the pods that do not tolerate it; asks first\n  kubectl gpu-taint dedicate gpu-a100-1 --taint dedicated=llm-online:NoExecute"
    )]
    Dedicate {
        #[command(flatten)]
        selection: Selection,
        /// The taint, required: KEY=VALUE:EFFECT or KEY:EFFECT (NoSchedule, PreferNoSchedule,
        /// NoExecute), e.g. dedicated=gpu:NoSchedule.
        #[arg(long, required = true, value_name = "KEY=VALUE:EFFECT")]
        taint: String,
        /// Pool labels to set with the taint, KEY=VALUE.
        #[arg(long = "label", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        /// Only this accelerator makes a node a GPU node (e.g. nvidia.com/gpu, a MIG profile
        /// nvidia.com/mig-1g.10gb, amd.com/gpu, an extended resource a DRA DeviceClass
        /// serves). Default: accelerators of any kind — whole, MIG, shared or DRA devices.
        #[arg(long, value_name = "NAME")]
        resource: Option<String>,
        /// Dedicate nodes that have no accelerator (or not the --resource).
        #[arg(long)]
        allow_no_gpu: bool,
        /// Replace a taint with the same key and effect, or a label with another value.
        #[arg(long)]
        overwrite: bool,
        #[command(flatten)]
        overrides: DependentsOverride,
        #[command(flatten)]
        eviction: EvictionOverride,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Remove a taint whose key, value and effect all match, and pool labels.
    #[command(
        after_help = "Examples:\n  kubectl gpu-taint release gpu-a100-1 --taint dedicated=llm-online:NoSchedule \\\n      --label ops.example.com.node-restriction.kubernetes.io/llm-pool\n  kubectl gpu-taint release -l pool=online \\\n      --taint dedicated=llm-online:NoSchedule"
    )]
    Release {
        #[command(flatten)]
        selection: Selection,
        /// The taint to remove, matched on key, value and effect: KEY=VALUE:EFFECT or
        /// KEY:EFFECT. Without it, only the --label keys are removed.
        #[arg(
            long,
            value_name = "KEY=VALUE:EFFECT",
            required_unless_present = "labels"
        )]
        taint: Option<String>,
        /// Pool labels to remove, if present.
        #[arg(long = "label", value_name = "KEY")]
        labels: Vec<String>,
        #[command(flatten)]
        overrides: DependentsOverride,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Undo a dedicate or release recorded in a snapshot, exactly.
    #[command(
        after_help = "Examples:\n  kubectl gpu-taint rollback --last\n  kubectl gpu-taint rollback --last gpu-a100-1   # only this node of it\n  kubectl gpu-taint rollback \\\n      ~/.local/state/placekit/snapshots/<file>.snapshot.jsonl \\\n      --overwrite-changes   # also what others changed since"
    )]
    Rollback {
        #[command(flatten)]
        rollback: RollbackArgs,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Accelerator inventory per node: whole GPUs, MIG profiles, time-sliced/MPS GPUs and
    /// DRA devices, from a few paged lists.
    #[command(
        long_about = "Accelerator inventory per node, one row per node and accelerator: extended \
resources of the known vendors (nvidia.com/gpu, nvidia.com/mig-*, amd.com/gpu, gpu.intel.com/*, \
habana.ai/*, google.com/tpu, aws.amazon.com/neuron*), shown with how they are exposed (FORM: \
whole, time-slicing 8x4 = 8 physical GPUs shared 4 ways, MPS, MIG, MIG single/mixed), and DRA \
devices per driver (total, allocated to claims, free). A node with accelerators of any kind is \
a GPU node. --by namespace|pod breaks the requests down instead (-n/-A choose whose).",
        after_help = "Examples:\n  kubectl gpu-taint status\n  kubectl gpu-taint status -l pool=online -o wide   # also the pool labels\n  kubectl gpu-taint status -L nvidia.com/gpu.product -L pool\n  kubectl gpu-taint status --resource nvidia.com/gpu -o json\n  # Requests per namespace; per pod in one namespace (the runbook's script)\n  kubectl gpu-taint status --by namespace\n  kubectl gpu-taint status --by pod -n ml\n  # Where are our free H100s? Every cluster at once\n  kubectl gpu-taint status --all-contexts -L nvidia.com/gpu.product"
    )]
    Status {
        #[command(flatten)]
        selection: Selection,
        /// Only this accelerator (e.g. nvidia.com/gpu, amd.com/gpu, google.com/tpu, a MIG
        /// profile such as nvidia.com/mig-1g.10gb, or an extended resource a DRA DeviceClass
        /// serves); the flat JSON fields count it. Default: every accelerator.
        #[arg(long, value_name = "NAME")]
        resource: Option<String>,
        /// Break requested/allocated accelerators down by namespace or by pod instead of by
        /// node. `-n NAMESPACE` alone implies `--by pod`.
        #[arg(long, value_enum)]
        by: Option<By>,
        /// With --by: every namespace (the default unless -n is given).
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// A label to show as a column, as kubectl's -L (repeat or comma-separate).
        #[arg(
            short = 'L',
            long = "label-columns",
            value_name = "KEY",
            value_delimiter = ','
        )]
        label_columns: Vec<String>,
    },
    /// Print a shell's completion script, or (`kubectl`) the helper for `kubectl gpu-taint <TAB>`.
    #[command(
        after_help = "Examples:\n  # kubectl gpu-taint <TAB> (kubectl 1.26+): the helper goes next to\n  # the plugin on PATH; remove it before kubectl krew uninstall gpu-taint\n  kubectl gpu-taint completion kubectl --install\n  kubectl gpu-taint completion kubectl --uninstall\n\n  # or print it and put it on PATH yourself\n  kubectl gpu-taint completion kubectl \\\n      > ~/bin/kubectl_complete-gpu_taint\n  chmod +x ~/bin/kubectl_complete-gpu_taint\n\n  # kubectl-gpu_taint <TAB> in bash\n  source <(kubectl-gpu_taint completion bash)"
    )]
    Completion(complete::CompletionArgs),
    /// List snapshots: time, context, command, nodes, outcome, whether rolled back.
    #[command(
        after_help = "Examples:\n  kubectl gpu-taint history\n  kubectl gpu-taint history -o wide   # also the server and the operation"
    )]
    History,
    /// Print one snapshot.
    #[command(
        after_help = "Examples:\n  kubectl gpu-taint show --last\n  kubectl gpu-taint show --last -o json"
    )]
    Show {
        /// The snapshot file (see `history`).
        snapshot: Option<String>,
        /// The newest change on the current context's cluster, by either plugin, that is
        /// not a rollback and not yet rolled back (the one `rollback --last` would undo).
        #[arg(long)]
        last: bool,
    },
}

/// What `kubectl gpu-taint <TAB>` offers where the shared flags do not decide.
fn completion_source(position: &Position) -> Source {
    let command = position.path.first().map(String::as_str);
    match (command, &position.slot) {
        (_, Slot::FlagValue { id }) if id == "selector" => Source::LabelKeys { suffix: "=" },
        (Some("rollback"), Slot::Positional { id, .. }) if id == "nodes" => Source::Nodes,
        (Some("rollback" | "show"), Slot::Positional { .. }) => Source::Snapshots { tool: TOOL },
        (_, Slot::Positional { .. }) => Source::Nodes,
        (_, Slot::FlagValue { id }) => match id.as_str() {
            "taint" => Source::Taints,
            "resource" => Source::ExtendedResources,
            "labels" if command == Some("release") => Source::LabelKeys { suffix: "" },
            "labels" => Source::LabelKeys { suffix: "=" },
            "label_columns" => Source::LabelKeys { suffix: "" },
            _ => Source::Files,
        },
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

fn targets(selection: &Selection, all_by_default: bool) -> Result<Targets, CommandError> {
    let all = all_by_default && selection.nodes.is_empty() && selection.selector.is_none();
    Targets::from_args_without_all_flag(selection.nodes.clone(), selection.selector.as_deref(), all)
}

fn input(e: impl std::fmt::Display) -> CommandError {
    CommandError::Input(e.to_string())
}

/// The commands that read several contexts, for the others' refusal.
const READERS: &str = "`kubectl gpu-taint status` and `history`";

async fn run(cli: Cli, ui: &Ui) -> Result<u8, CommandError> {
    // Several clusters are read by status and history only; the rest refuse before any work.
    match &cli.command {
        Command::Status { .. } | Command::History | Command::Completion(_) => {}
        Command::Dedicate { .. } => cli.fleet.refuse("kubectl gpu-taint dedicate", READERS)?,
        Command::Release { .. } => cli.fleet.refuse("kubectl gpu-taint release", READERS)?,
        Command::Rollback { .. } => cli.fleet.refuse("kubectl gpu-taint rollback", READERS)?,
        Command::Show { .. } => cli.fleet.refuse("kubectl gpu-taint show", READERS)?,
    }
    match cli.command {
        Command::Dedicate {
            selection,
            taint,
            labels,
            resource,
            allow_no_gpu,
            overwrite,
            overrides,
            eviction,
            mutation,
        } => {
            let ignore_dependents = overrides.resolve()?;
            let taint = parse_taint(&taint).map_err(input)?;
            if let Some(bare) = labels.iter().find(|l| !l.contains('=')) {
                return Err(input(format!(
                    "--label {bare}: dedicate sets pool labels, so it takes KEY=VALUE"
                )));
            }
            let labels = parse_label_changes(&labels).map_err(input)?;
            let dedication = Dedication {
                taint,
                labels,
                resource,
                allow_no_gpu,
                overwrite,
                ignore_dependents,
                ignore_disruption_budgets: eviction.ignore_disruption_budgets,
            };
            gpu::dedicate(
                &cli.connection,
                ui,
                targets(&selection, false)?,
                dedication,
                &mutation,
            )
            .await
        }
        Command::Release {
            selection,
            taint,
            labels,
            overrides,
            mutation,
        } => {
            let ignore_dependents = overrides.resolve()?;
            let taint = taint
                .as_deref()
                .map(parse_taint_to_remove)
                .transpose()
                .map_err(input)?;
            if let Some(with_value) = labels.iter().find(|l| l.contains('=')) {
                return Err(input(format!(
                    "--label {with_value}: release removes pool labels whatever their value, so it takes the KEY alone"
                )));
            }
            let specs: Vec<String> = labels
                .iter()
                .map(|k| format!("{}-", k.trim_end_matches('-')))
                .collect();
            let labels = parse_label_changes(&specs).map_err(input)?;
            gpu::release(
                &cli.connection,
                ui,
                targets(&selection, false)?,
                taint,
                labels,
                ignore_dependents,
                &mutation,
            )
            .await
        }
        Command::Rollback { rollback, mutation } => {
            let request = rollback.request()?;
            let conn = cli.connection.connect().await?;
            let report = undo::rollback(&conn, ui, TOOL, COMMAND, request, &mutation).await?;
            Ok(print_report(ui, &report))
        }
        Command::Status {
            selection,
            resource,
            by,
            all_namespaces,
            label_columns,
        } => {
            let namespace = cli.connection.namespace.clone().filter(|_| !all_namespaces);
            let options = StatusOptions {
                resource,
                // `-n ml` alone is the runbook's per-pod script for that namespace.
                by: by.or(namespace.as_ref().map(|_| By::Pod)),
                namespace,
                label_columns,
            };
            let targets = targets(&selection, true)?;
            let fleet = Fleet::resolve(&cli.connection, &cli.fleet)?;
            gpu::status_command(&cli.connection, fleet.as_ref(), ui, targets, &options).await
        }
        Command::Completion(args) => {
            complete::run_completion(
                &args,
                <Cli as clap::CommandFactory>::command(),
                "kubectl-gpu_taint",
                "gpu-taint",
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
    }
}
