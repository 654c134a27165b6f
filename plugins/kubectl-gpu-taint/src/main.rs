//! `kubectl gpu-taint`: dedicate GPU nodes (taint + pool labels) with a preflight, release
//! them with exactly the same key, value and effect, and show the GPU inventory. A thin
//! layer over the `placekit` core library.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use placekit::connect::{Connection, ConnectionArgs};
use placekit::exit;
use placekit::gpu::{self, DEFAULT_RESOURCE, NodeGpu, NodeView, PodView, format_milli};
use placekit::plan::{ChangeRequest, NodePlan, Note, plan_node};
use placekit::syntax::{LabelChange, Taint, TaintMatcher, parse_label_changes, parse_taint};
use placekit::ui::{DisplayArgs, MutationArgs, OutputFormat, Ui};
use placekit::workflow::{self, MutationContext, Targets, WorkflowError};

const TOOL: &str = "kubectl-gpu_taint";
const COMMAND: &str = "kubectl gpu-taint";
const DEFAULT_TAINT: &str = "dedicated=gpu:NoSchedule";
/// Pods per list page for the inventory (a handful of requests for 150,000 pods).
const POD_PAGE: u32 = 10_000;
/// Nodes per list page (5,000 nodes in one request).
const NODE_PAGE: u32 = 5_000;
/// Above this many target nodes the preflight lists all pods once instead of per node.
const PER_NODE_POD_LISTS: usize = 10;

const EXAMPLES: &str = "\
Examples:
  # The seed runbook's dedicated pool: taint and pool label in one conditional write
  kubectl gpu-taint dedicate gpu-a100-1 --taint dedicated=llm-online:NoSchedule \\
      --label ops.example.com.node-restriction.kubernetes.io/llm-pool=online

  # Release exactly that taint (a dedicated=batch:NoSchedule taint is left alone)
  kubectl gpu-taint release gpu-a100-1 --taint dedicated=llm-online:NoSchedule \\
      --label ops.example.com.node-restriction.kubernetes.io/llm-pool

  # GPU inventory: capacity, allocatable, requested, free, zone, taints, pool labels
  kubectl gpu-taint status -l accelerator.example.com/gpu-family=a100
  kubectl gpu-taint status --resource nvidia.com/mig-1g.10gb -o json

  # Undo the last dedicate/release in this context
  kubectl gpu-taint rollback --last";

/// Dedicate GPU nodes safely and release them exactly.
#[derive(Debug, Parser)]
#[command(name = "kubectl gpu-taint", bin_name = "kubectl gpu-taint", version, about, after_help = format!("{EXAMPLES}\n\n{}", exit::EXIT_CODES_HELP))]
struct Cli {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    display: DisplayArgs,
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
    Dedicate {
        #[command(flatten)]
        selection: Selection,
        /// The taint: KEY=VALUE:EFFECT or KEY:EFFECT (NoSchedule, PreferNoSchedule, NoExecute).
        #[arg(long, default_value = DEFAULT_TAINT)]
        taint: String,
        /// Pool labels to set with the taint, KEY=VALUE.
        #[arg(long = "label", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        /// The extended resource that makes a node a GPU node.
        #[arg(long, default_value = DEFAULT_RESOURCE)]
        resource: String,
        /// Dedicate nodes where the resource is not registered.
        #[arg(long)]
        allow_no_gpu: bool,
        /// Replace a taint with the same key and effect, or a label with another value.
        #[arg(long)]
        overwrite: bool,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Remove a taint whose key, value and effect all match, and pool labels.
    Release {
        #[command(flatten)]
        selection: Selection,
        /// The taint to remove: KEY=VALUE:EFFECT or KEY:EFFECT.
        #[arg(long, default_value = DEFAULT_TAINT)]
        taint: String,
        /// Pool labels to remove, if present.
        #[arg(long = "label", value_name = "KEY")]
        labels: Vec<String>,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Undo a dedicate or release recorded in a snapshot, exactly.
    Rollback {
        snapshot: Option<String>,
        #[arg(long)]
        last: bool,
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// GPU inventory per node, from two paged lists.
    Status {
        #[command(flatten)]
        selection: Selection,
        #[arg(long, default_value = DEFAULT_RESOURCE)]
        resource: String,
    },
    /// Print a shell completion script (bash, zsh, fish, powershell).
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// List snapshots.
    History,
    /// Print one snapshot.
    Show {
        snapshot: Option<String>,
        #[arg(long)]
        last: bool,
    },
}

fn main() -> ExitCode {
    placekit::ui::exit_quietly_on_broken_pipe();
    // Parse first: --help and --version never build the async runtime or a client.
    let cli = Cli::parse();
    let ui = Ui::new(&cli.display);
    workflow::run_to_exit_code(run(cli, &ui))
}

fn targets(selection: &Selection, all_by_default: bool) -> Result<Targets, WorkflowError> {
    let all = all_by_default && selection.nodes.is_empty() && selection.selector.is_none();
    Targets::from_args(selection.nodes.clone(), selection.selector.as_deref(), all)
}

fn input(e: impl std::fmt::Display) -> WorkflowError {
    WorkflowError::Input(e.to_string())
}

fn ctx<'a>(
    operation: &'a str,
    mutation: &'a MutationArgs,
    warnings: Vec<String>,
    extra: Option<String>,
) -> MutationContext<'a> {
    MutationContext {
        tool: TOOL,
        command: COMMAND,
        operation,
        args: mutation,
        warnings,
        rollback_of: None,
        extra_confirmation: extra,
    }
}

async fn run(cli: Cli, ui: &Ui) -> Result<u8, WorkflowError> {
    match cli.command {
        Command::Dedicate {
            selection,
            taint,
            labels,
            resource,
            allow_no_gpu,
            overwrite,
            mutation,
        } => {
            let taint = parse_taint(&taint).map_err(input)?;
            let labels = parse_label_changes(&labels).map_err(input)?;
            if labels.iter().any(|l| l.value().is_none()) {
                return Err(input("--label takes KEY=VALUE for dedicate"));
            }
            let targets = targets(&selection, false)?;
            let conn = cli.connection.connect().await?;
            dedicate(
                &conn,
                ui,
                &targets,
                taint,
                labels,
                &resource,
                allow_no_gpu,
                overwrite,
                &mutation,
            )
            .await
        }
        Command::Release {
            selection,
            taint,
            labels,
            mutation,
        } => {
            let taint = parse_taint(&taint).map_err(input)?;
            let specs: Vec<String> = labels
                .iter()
                .map(|k| format!("{}-", k.trim_end_matches('-')))
                .collect();
            let labels = parse_label_changes(&specs).map_err(input)?;
            let targets = targets(&selection, false)?;
            let conn = cli.connection.connect().await?;
            let nodes = workflow::fetch_nodes(&conn.client, &targets).await?;
            let request = ChangeRequest {
                labels,
                remove_taints: vec![TaintMatcher::exact(&taint)],
                ..Default::default()
            };
            let plans: Vec<NodePlan> = nodes.iter().map(|n| plan_node(n, &request)).collect();
            let mismatches = plans
                .iter()
                .flat_map(|p| &p.notes)
                .filter(|n| matches!(n, Note::TaintValueMismatch { .. }))
                .count();
            let report = workflow::apply_plans(
                &conn,
                ui,
                plans,
                ctx("release", &mutation, Vec::new(), None),
            )
            .await?;
            let code = workflow::print_report(ui, &report);
            Ok(if mismatches > 0 {
                code.max(exit::PROBLEMS)
            } else {
                code
            })
        }
        Command::Rollback {
            snapshot,
            last,
            force,
            mutation,
        } => {
            let conn = cli.connection.connect().await?;
            let snap = workflow::resolve_snapshot(snapshot.as_deref(), last, TOOL, &conn.context)?;
            let report = workflow::rollback(
                &conn,
                ui,
                &snap,
                force,
                ctx("rollback", &mutation, Vec::new(), None),
            )
            .await?;
            Ok(workflow::print_report(ui, &report))
        }
        Command::Status {
            selection,
            resource,
        } => {
            let targets = targets(&selection, true)?;
            let conn = cli.connection.connect().await?;
            status(&conn, ui, &targets, &resource).await
        }
        Command::Completion { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(
                shell,
                &mut command,
                "kubectl-gpu_taint",
                &mut std::io::stdout(),
            );
            Ok(exit::SUCCESS)
        }
        Command::History => {
            workflow::print_history(ui, &workflow::history(TOOL)?);
            Ok(exit::SUCCESS)
        }
        Command::Show { snapshot, last } => {
            workflow::show_command(&cli.connection, ui, TOOL, snapshot.as_deref(), last)
        }
    }
}

/// The active pods on `nodes`: one list per node for a few nodes, else one paged list.
async fn pods_on(conn: &Connection, nodes: &[String]) -> Result<Vec<PodView>, WorkflowError> {
    let mut pods = Vec::new();
    if nodes.len() <= PER_NODE_POD_LISTS {
        for node in nodes {
            let selector =
                format!("spec.nodeName={node},status.phase!=Succeeded,status.phase!=Failed");
            workflow::for_each_page(
                &conn.client,
                "/api/v1/pods",
                Some(&selector),
                None,
                POD_PAGE,
                |page: Vec<PodView>| pods.extend(page),
            )
            .await?;
        }
    } else {
        workflow::for_each_page(
            &conn.client,
            "/api/v1/pods",
            Some("status.phase!=Succeeded,status.phase!=Failed"),
            None,
            POD_PAGE,
            |page: Vec<PodView>| {
                pods.extend(
                    page.into_iter()
                        .filter(|p| p.spec.node_name.as_ref().is_some_and(|n| nodes.contains(n))),
                )
            },
        )
        .await?;
    }
    Ok(pods)
}

#[allow(clippy::too_many_arguments)]
async fn dedicate(
    conn: &Connection,
    ui: &Ui,
    targets: &Targets,
    taint: Taint,
    labels: Vec<LabelChange>,
    resource: &str,
    allow_no_gpu: bool,
    overwrite: bool,
    mutation: &MutationArgs,
) -> Result<u8, WorkflowError> {
    let objects = workflow::fetch_node_objects(&conn.client, targets).await?;
    if objects.is_empty() {
        return Err(input("the selector matches no node; nothing to do"));
    }
    let mut warnings: Vec<String> = labels
        .iter()
        .flat_map(|l| placekit::policy::label_warnings(l.key()))
        .collect();

    // Preflight 1: the GPU resource is registered on every node.
    let mut without_gpu = Vec::new();
    for node in &objects {
        let view: NodeView =
            serde_json::from_value(serde_json::to_value(node).map_err(input)?).map_err(input)?;
        let row = gpu::node_gpu(&view, 0, resource);
        match (row.capacity, row.allocatable) {
            (None, _) => without_gpu.push(row.name.clone()),
            (Some(c), a) => {
                if !ui.output.is_structured() {
                    eprintln!(
                        "node/{}: {resource} capacity {}, allocatable {}",
                        row.name,
                        format_milli(c),
                        a.map(format_milli).unwrap_or_else(|| "none".into())
                    );
                }
            }
        }
    }
    if !without_gpu.is_empty() {
        let message = format!(
            "{} ha{} no {resource} capacity: the device plugin has not registered the resource there (check the GPU device plugin DaemonSet and its logs; an empty field means the plugin is missing, not an affinity problem)",
            without_gpu
                .iter()
                .map(|n| format!("node/{n}"))
                .collect::<Vec<_>>()
                .join(", "),
            if without_gpu.len() == 1 { "s" } else { "ve" }
        );
        if allow_no_gpu {
            warnings.push(format!("{message}; dedicating anyway (--allow-no-gpu)"));
        } else {
            return Err(WorkflowError::Blocked(format!(
                "nothing was changed: {message}. Use --allow-no-gpu to dedicate anyway."
            )));
        }
    }

    // Preflight 2: running pods that do not tolerate the taint.
    let names: Vec<String> = objects
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    let pods = pods_on(conn, &names).await?;
    let affected: Vec<gpu::AffectedPod> = names
        .iter()
        .flat_map(|n| gpu::untolerating_pods(&pods, n, &taint))
        .collect();
    let listed: Vec<String> = affected
        .iter()
        .map(|p| format!("{}/{} on node/{}", p.namespace, p.name, p.node))
        .collect();
    let mut extra = None;
    if !affected.is_empty() {
        if gpu::evicts(&taint) {
            let text = format!(
                "{taint} is NoExecute: {} running pod{} that do not tolerate it will be EVICTED: {}",
                affected.len(),
                if affected.len() == 1 { "" } else { "s" },
                listed.join(", ")
            );
            warnings.push(text.clone());
            extra = Some(text);
        } else {
            warnings.push(format!(
                "{} running pod{} do not tolerate {taint}; they keep running ({}), but new pods without the toleration will not schedule there: {}",
                affected.len(),
                if affected.len() == 1 { "" } else { "s" },
                taint.effect,
                listed.join(", ")
            ));
        }
    }

    let request = ChangeRequest {
        labels,
        add_taints: vec![taint],
        overwrite,
        ..Default::default()
    };
    let plans: Vec<NodePlan> = objects
        .iter()
        .map(|n| workflow::node_state(n).map(|s| plan_node(&s, &request)))
        .collect::<Result<_, _>>()?;
    let report =
        workflow::apply_plans(conn, ui, plans, ctx("dedicate", mutation, warnings, extra)).await?;
    Ok(workflow::print_report(ui, &report))
}

async fn status(
    conn: &Connection,
    ui: &Ui,
    targets: &Targets,
    resource: &str,
) -> Result<u8, WorkflowError> {
    let mut nodes: Vec<NodeView> = Vec::new();
    match targets {
        Targets::Names(_) => {
            for node in workflow::fetch_node_objects(&conn.client, targets).await? {
                nodes.push(
                    serde_json::from_value(serde_json::to_value(&node).map_err(input)?)
                        .map_err(input)?,
                );
            }
        }
        Targets::Selector(s) => {
            workflow::for_each_page(
                &conn.client,
                "/api/v1/nodes",
                None,
                Some(&s.to_string()),
                NODE_PAGE,
                |p| nodes.extend(p),
            )
            .await?;
        }
        Targets::All => {
            workflow::for_each_page(&conn.client, "/api/v1/nodes", None, None, NODE_PAGE, |p| {
                nodes.extend(p)
            })
            .await?;
        }
    }
    // One pass over the active pods, keeping only per-node sums.
    let mut requested: BTreeMap<String, i128> = BTreeMap::new();
    workflow::for_each_page(
        &conn.client,
        "/api/v1/pods",
        Some("status.phase!=Succeeded,status.phase!=Failed"),
        None,
        POD_PAGE,
        |page: Vec<PodView>| {
            for (node, r) in gpu::requested_per_node(&page, resource) {
                *requested.entry(node).or_default() += r;
            }
        },
    )
    .await?;
    let rows: Vec<NodeGpu> = nodes
        .iter()
        .map(|n| {
            gpu::node_gpu(
                n,
                requested.get(&n.metadata.name).copied().unwrap_or(0),
                resource,
            )
        })
        .collect();
    let totals = gpu::totals(&rows);
    if ui.output.is_structured() {
        ui.print_structured(&serde_json::json!({
            "apiVersion": workflow::REPORT_API_VERSION,
            "kind": "GpuInventory",
            "resource": resource,
            "nodes": rows,
            "totals": totals,
        }));
        return Ok(exit::SUCCESS);
    }
    let wide = ui.output == OutputFormat::Wide;
    let q = |v: Option<i128>| v.map(format_milli).unwrap_or_else(|| "-".into());
    let mut header = vec![
        "NAME",
        "CAPACITY",
        "ALLOCATABLE",
        "REQUESTED",
        "FREE",
        "ZONE",
        "TAINTS",
    ];
    if wide {
        header.push("POOL LABELS");
    }
    header.push("WARNINGS");
    let mut table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![
                r.name.clone(),
                q(r.capacity),
                q(r.allocatable),
                format_milli(r.requested),
                if r.capacity.is_some() {
                    format_milli(r.free)
                } else {
                    "-".into()
                },
                r.zone.clone().unwrap_or_else(|| "-".into()),
                if r.taints.is_empty() {
                    "-".into()
                } else {
                    r.taints.join(",")
                },
            ];
            if wide {
                row.push(if r.pool_labels.is_empty() {
                    "-".into()
                } else {
                    r.pool_labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                });
            }
            row.push(r.warnings.join("; "));
            row
        })
        .collect();
    let mut total = vec![
        format!("TOTAL ({} nodes)", totals.nodes),
        format_milli(totals.capacity),
        format_milli(totals.allocatable),
        format_milli(totals.requested),
        format_milli(totals.free),
        String::new(),
        String::new(),
    ];
    if wide {
        total.push(String::new());
    }
    total.push(String::new());
    table_rows.push(total);
    print!("{}", placekit::ui::table(&header, &table_rows));
    Ok(exit::SUCCESS)
}
