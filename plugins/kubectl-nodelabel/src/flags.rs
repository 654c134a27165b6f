//! The command line: clap's definitions of the flags and subcommands, their help and
//! examples, and what `<TAB>` offers where the shared flags do not decide.

use crate::commands::TOOL;
use clap::{Args, Parser, Subcommand};
use placekit_cli::command::CommandRow;
use placekit_cli::complete::{self, Position, Slot, Source};
use placekit_cli::fleet::FleetArgs;
use placekit_cli::mutation::undo::RollbackArgs;
use placekit_cli::overrides::DependentsOverride;
use placekit_cli::ui::{DisplayArgs, MutationArgs, TextShape};
use placekit_client::connect::ConnectionArgs;
use placekit_core::exit;
use std::path::PathBuf;

pub const EXAMPLES: &str = "\
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
pub struct Cli {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    #[command(flatten)]
    pub display: DisplayArgs,
    #[command(flatten)]
    pub fleet: FleetArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Selection {
    /// Select nodes by label selector (kubectl syntax: k=v, k!=v, k in (a,b), k, !k).
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// Select every node.
    #[arg(long, conflicts_with = "selector")]
    pub all: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set (KEY=VALUE) or remove (KEY-) labels on nodes.
    #[command(
        long_about = "Set (KEY=VALUE) or remove (KEY-) labels on nodes, with a snapshot first and \
conditional writes (rollback restores exactly what was there). Before the first write every \
node is checked: a label a workload's required constraint needs (Deployments to DaemonSets, \
pods of any controller, Kueue ResourceFlavors and their ClusterQueues, Volcano Queues, Trainer \
runtimes and TrainJobs, NodeSets, LLMInferenceServices...) blocks until --ignore-dependents; a \
new nvidia.com/mig.config or GPU operands switched off under GPU pods blocks until \
--ignore-gpu-pods; a device-plugin.config the ClusterPolicy's ConfigMap lacks and Karpenter's \
own keys are refused. Labels nfd-master, Karpenter, a managed node pool or the kubelet own \
warn that they come back or are lost. A blocked change shows every finding at once.",
        after_help = "Examples:\n  kubectl nodelabel set gpu-a100-1 gpu-a100-2 \\\n      accelerator.example.com/gpu-family=a100 --overwrite\n  kubectl nodelabel set -l pool=online \\\n      accelerator.example.com/gpu-memory=80gb power-profile- --overwrite\n  kubectl nodelabel set --all team=ml --dry-run=client\n  # Repartition MIG on a drained node (the MIG manager acts on the label)\n  kubectl nodelabel set gpu-h100-1 nvidia.com/mig.config=all-1g.10gb --overwrite\n  # Time-slice a node's GPUs with a config the ClusterPolicy's ConfigMap holds\n  kubectl nodelabel set gpu-a100-1 nvidia.com/device-plugin.config=a100-x4"
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
        after_help = "Examples:\n  # kubectl nodelabel <TAB> (kubectl 1.26+): the helper goes next to\n  # the plugin on PATH; remove it before kubectl krew uninstall nodelabel\n  kubectl nodelabel completion kubectl --install\n  kubectl nodelabel completion kubectl --uninstall\n\n  # or print it and put it on PATH yourself\n  kubectl nodelabel completion kubectl \\\n      > ~/bin/kubectl_complete-nodelabel\n  chmod +x ~/bin/kubectl_complete-nodelabel\n\n  # without the helper, in bash: kubectl nodelabel <TAB> (and the binary),\n  # after kubectl's own completion (zsh alike; fish: ... fish | source)\n  source <(kubectl nodelabel completion bash)"
    )]
    Completion(complete::CompletionArgs),
    /// List snapshots: time, context, command, nodes, outcome, whether rolled back.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel history\n  kubectl nodelabel history -o wide   # also the server and the operation\n  kubectl nodelabel history -o json"
    )]
    History,
    /// Print one snapshot, or every label of nodes with who wrote it, who owns it and what
    /// acts on it.
    #[command(
        after_help = "A SNAPSHOT (a path, or a name `history` shows) prints that snapshot; nodes (NAME,\nnode/NAME or -l) print their labels: the field managers that wrote each one (from\nmanagedFields: kubelet, nfd-master, karpenter, kubectl-label, placekit...), the\ncontroller that owns it (nfd-master re-applies its keys, a Karpenter or managed-pool\nnode loses hand-set labels when replaced, the kubelet re-applies its own) and what the\nGPU operator does with it.\n\nExamples:\n  kubectl nodelabel show --last\n  kubectl nodelabel show --last -o json\n  kubectl nodelabel show ~/.local/state/placekit/snapshots/<file>.snapshot.jsonl\n  kubectl nodelabel show gpu-a100-1   # who set each label; will it come back?\n  kubectl nodelabel show -l pool=online -o json"
    )]
    Show {
        /// The snapshot file or name (see `history`), or the nodes whose labels to show.
        #[arg(value_name = "SNAPSHOT|NODE")]
        args: Vec<String>,
        /// The newest change on the current context's cluster, by either plugin, that is
        /// not a rollback and not yet rolled back (the one `rollback --last` would undo).
        #[arg(long)]
        last: bool,
        /// Show the labels of the nodes this label selector matches.
        #[arg(short = 'l', long, conflicts_with = "last")]
        selector: Option<String>,
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
        /// file: key -> feature.node.kubernetes.io/key (as nfd-worker names them); hook: key ->
        /// feature.node.kubernetes.io/<hook>-key, /key -> feature.node.kubernetes.io/key.
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
        /// All namespaces: the default unless -n is given, unlike kubectl's reads, since a
        /// workload anywhere may depend on a node label. Credentials that may list in
        /// their own namespace only get that namespace's answer, with a warning.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
}

impl Command {
    /// The command's row: what is checked before it runs ([`CommandRow::admit`]).
    pub fn row(&self) -> CommandRow {
        use TextShape::{Report, Script, Table, WideTable};
        match self {
            Command::Set { .. } => CommandRow::new("set", Report).on_nodes(),
            Command::Remove { .. } => CommandRow::new("remove", Report).on_nodes(),
            Command::Import { .. } => CommandRow::new("import", Report).on_nodes(),
            Command::Rollback { .. } => CommandRow::new("rollback", Report).on_nodes(),
            // A node's labels are a wide table; a snapshot's page is checked when it is shown.
            Command::Show { .. } => CommandRow::new("show", WideTable).on_nodes(),
            Command::History => CommandRow::new("history", WideTable).many_contexts(),
            Command::Dependents { .. } => CommandRow::new("dependents", Table).many_contexts(),
            Command::Completion(_) => CommandRow::new("completion", Script).many_contexts(),
        }
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum NamingArg {
    File,
    Hook,
}

/// What `kubectl nodelabel <TAB>` offers where the shared flags do not decide.
pub fn completion_source(position: &Position) -> Source {
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
