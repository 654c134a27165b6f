//! The command line: clap's definitions of the flags and subcommands, their help and
//! examples, and what `<TAB>` offers where the shared flags do not decide.

use crate::commands::TOOL;
use clap::{Args, Parser, Subcommand};
use placekit_cli::command::CommandRow;
use placekit_cli::complete::{self, Position, Slot, Source};
use placekit_cli::fleet::FleetArgs;
use placekit_cli::inventory::By;
use placekit_cli::mutation::undo::RollbackArgs;
use placekit_cli::overrides::{DependentsOverride, EvictionOverride, TaintOwnerOverride};
use placekit_cli::ui::{DisplayArgs, MutationArgs, TextShape};
use placekit_client::connect::ConnectionArgs;
use placekit_core::exit;

pub const EXAMPLES: &str = "\
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
    /// Node names.
    pub nodes: Vec<String>,
    /// Select nodes by label selector.
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
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
        after_help = "Examples:\n  kubectl gpu-taint release gpu-a100-1 --taint dedicated=llm-online:NoSchedule \\\n      --label ops.example.com.node-restriction.kubernetes.io/llm-pool\n  kubectl gpu-taint release -l pool=online \\\n      --taint dedicated=llm-online:NoSchedule\n  # A taint a controller owns (cluster-autoscaler here) needs the override\n  kubectl gpu-taint release gpu-a100-1 \\\n      --taint ToBeDeletedByClusterAutoscaler:NoSchedule --ignore-taint-owner"
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
        taint_owner: TaintOwnerOverride,
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
devices per driver and DeviceClass (a row per set of classes whose CEL selectors match them, so \
whole GPUs, MIG devices and IMEX channels are counted apart; total, allocated to claims, free; a device a DeviceTaintRule or its driver \
taints is not free, and WARNINGS say so; ComputeDomain channels are shown apart, not as \
accelerators). WARNINGS also say a pending or failed MIG reconfiguration. A node with \
accelerators of any kind is a GPU node. --by namespace|pod breaks the requests down instead \
(-n/-A choose whose).",
        after_help = "Examples:\n  kubectl gpu-taint status\n  kubectl gpu-taint status -l pool=online -o wide   # also the pool labels\n  kubectl gpu-taint status -L nvidia.com/gpu.product -L pool\n  kubectl gpu-taint status --resource nvidia.com/gpu -o json\n  # MIG devices of the NVIDIA DRA driver, apart from its whole GPUs\n  kubectl gpu-taint status --class mig.nvidia.com\n  # Requests per namespace; per pod in one namespace (the runbook's script)\n  kubectl gpu-taint status --by namespace\n  kubectl gpu-taint status --by pod -n ml\n  # Where are our free H100s? Every cluster at once\n  kubectl gpu-taint status --all-contexts -L nvidia.com/gpu.product\n  # Watch a pool drain and fill: its rows again each time they change\n  kubectl gpu-taint status -l pool=online -w\n  # Free GPUs per Karpenter NodePool, the least free nodes first\n  kubectl gpu-taint status --free-only --sort-by .free \\\n      --group-by karpenter.sh/nodepool"
    )]
    Status {
        #[command(flatten)]
        selection: Selection,
        /// Only this accelerator (e.g. nvidia.com/gpu, amd.com/gpu, google.com/tpu, a MIG
        /// profile such as nvidia.com/mig-1g.10gb, or an extended resource a DRA DeviceClass
        /// serves); the flat JSON fields count it. Default: every accelerator.
        #[arg(long, value_name = "NAME")]
        resource: Option<String>,
        /// Only the DRA devices this DeviceClass's selectors match (e.g. gpu.nvidia.com for
        /// whole GPUs, mig.nvidia.com for MIG devices).
        #[arg(long, value_name = "DEVICECLASS")]
        class: Option<String>,
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
        /// Order the nodes by a field of their JSON (kubectl's --sort-by): a JSONPath such as
        /// .free, .name, .zone or '{.accelerators[0].free}'.
        #[arg(long, value_name = "JSONPATH")]
        sort_by: Option<String>,
        /// Only nodes with a free accelerator (a device or extended resource left to claim).
        #[arg(long)]
        free_only: bool,
        /// Group the nodes by a label's value (a pool: karpenter.sh/nodepool,
        /// cloud.google.com/gke-nodepool...), each group followed by its totals.
        #[arg(long, value_name = "LABEL")]
        group_by: Option<String>,
        /// After the table, print a node's rows again each time they change (allocatable,
        /// requests, cordon, taints), from watches of the nodes and pods, until interrupted
        /// (kubectl's -w). Table output only (the default or -o wide), one cluster.
        #[arg(short = 'w', long)]
        watch: bool,
    },
    /// Serve the inventory's metrics (those of status -o openmetrics) on /metrics, kept
    /// current from watches of the nodes and pods, with /healthz: an exporter for
    /// Prometheus, in a Deployment (examples/monitoring/exporter.yaml) or on a host.
    #[command(
        name = "serve-metrics",
        long_about = "Serve the inventory's metrics (those of `status -o openmetrics`: accelerators per node, pool, \
resource, form and DRA class; GPU nodes without their pool's dedication taint) on GET /metrics, kept \
current from watches of the nodes and pods as `status -w` keeps its table: listed once, then \
followed from the version the lists ended at, resumed from the last version seen, listed again \
when the server says the version is too old. Memory is what that keeps: the nodes and the \
accelerator requests of their pods. GET /healthz answers 200 while the watches follow the \
cluster and 503 (with the error) while they are being restarted after a growing pause \
(meanwhile /metrics serves what they last saw, with placekit_read_up 0). \
A scraper that accepts application/openmetrics-text gets it; others get Prometheus' text \
format (the same text). In a pod, the service account's credentials are used (RBAC: list and \
watch nodes and pods, list the resource.k8s.io objects). Runs until interrupted.",
        after_help = "Examples:\n  kubectl gpu-taint serve-metrics\n  curl -s http://127.0.0.1:9402/metrics | grep placekit_node_accelerator_free\n  # in a pod (examples/monitoring/exporter.yaml): every node, all interfaces\n  kubectl-gpu_taint serve-metrics --listen 0.0.0.0:9402"
    )]
    ServeMetrics {
        #[command(flatten)]
        selection: Selection,
        /// The address to serve on.
        #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:9402")]
        listen: std::net::SocketAddr,
        /// Only this accelerator (as status --resource).
        #[arg(long, value_name = "NAME")]
        resource: Option<String>,
        /// The label whose value is a node's pool (as status --group-by); default: the
        /// node's first pool label.
        #[arg(long, value_name = "LABEL")]
        pool_label: Option<String>,
    },
    /// Print a shell's completion script, or (`kubectl`) the helper for `kubectl gpu-taint <TAB>`.
    #[command(
        after_help = "Examples:\n  # kubectl gpu-taint <TAB> (kubectl 1.26+): the helper goes next to\n  # the plugin on PATH; remove it before kubectl krew uninstall gpu-taint\n  kubectl gpu-taint completion kubectl --install\n  kubectl gpu-taint completion kubectl --uninstall\n\n  # or print it and put it on PATH yourself\n  kubectl gpu-taint completion kubectl \\\n      > ~/bin/kubectl_complete-gpu_taint\n  chmod +x ~/bin/kubectl_complete-gpu_taint\n\n  # without the helper, in bash: kubectl gpu-taint <TAB> (and the binary),\n  # after kubectl's own completion (zsh alike; fish: ... fish | source)\n  source <(kubectl gpu-taint completion bash)"
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

impl Command {
    /// The command's row: what is checked before it runs ([`CommandRow::admit`]).
    pub fn row(&self) -> CommandRow {
        use TextShape::{Report, Script, Service, WideTable};
        match self {
            Command::Dedicate { .. } => CommandRow::new("dedicate", Report).on_nodes(),
            Command::Release { .. } => CommandRow::new("release", Report).on_nodes(),
            Command::Rollback { .. } => CommandRow::new("rollback", Report).on_nodes(),
            Command::Show { .. } => CommandRow::new("show", Report).on_nodes(),
            Command::Status { .. } => CommandRow::new("status", WideTable)
                .many_contexts()
                .metrics(),
            Command::History => CommandRow::new("history", WideTable).many_contexts(),
            Command::Completion(_) => CommandRow::new("completion", Script).many_contexts(),
            Command::ServeMetrics { .. } => CommandRow::new("serve-metrics", Service)
                .ignores_namespace(
                    "the exporter counts the accelerators of every namespace's pods",
                ),
        }
    }
}

/// What `kubectl gpu-taint <TAB>` offers where the shared flags do not decide.
pub fn completion_source(position: &Position) -> Source {
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
