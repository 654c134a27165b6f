//! `kubectl gpu-taint`'s commands on top of the pipeline: dedicate (with the GPU preflight),
//! release (exact key, value and effect), and the GPU inventory `status`.

use std::collections::BTreeMap;

use crate::api::{self, POD_PAGE};
use crate::connect::{Connection, ConnectionArgs};
use crate::error::CommandError;
use crate::exit;
use crate::gpu::{self, NodeGpu, NodeView, PodView, format_milli};
use crate::plan::{ChangeRequest, NodePlan, plan_node};
use crate::syntax::{LabelChange, Taint, TaintMatcher};
use crate::targets::Targets;
use crate::ui::{MutationArgs, OutputFormat, Ui};

use super::checks::Findings;
use super::pipeline::{self, Mutation};
use super::report::{REPORT_API_VERSION, print_report};

/// `kubectl gpu-taint`'s name in snapshots and in printed commands.
pub const TOOL: &str = "kubectl-gpu_taint";
pub const COMMAND: &str = "kubectl gpu-taint";
/// Nodes per list page (5,000 nodes in one request).
const NODE_PAGE: u32 = 5_000;

fn input(e: impl std::fmt::Display) -> CommandError {
    CommandError::Input(e.to_string())
}

fn node_view(node: &k8s_openapi::api::core::v1::Node) -> Result<NodeView, CommandError> {
    serde_json::from_value(serde_json::to_value(node).map_err(input)?).map_err(input)
}

/// What `dedicate` applies.
#[derive(Debug, Clone)]
pub struct Dedication {
    pub taint: Taint,
    pub labels: Vec<LabelChange>,
    pub resource: String,
    pub allow_no_gpu: bool,
    pub overwrite: bool,
    /// Change labels that workloads depend on.
    pub force: bool,
}

/// `dedicate`: the GPU preflight (the resource is registered on every node), then taint and
/// pool labels in one conditional write per node through the pipeline, whose checks list
/// the pods the taint keeps away or evicts.
pub async fn dedicate(
    connection: &ConnectionArgs,
    ui: &Ui,
    targets: Targets,
    dedication: Dedication,
    args: &MutationArgs,
) -> Result<u8, CommandError> {
    let conn = connection.connect().await?;
    let objects = api::fetch_node_objects(&conn.client, &targets).await?;
    if objects.is_empty() {
        return Err(input("the selector matches no node; nothing to do"));
    }
    let resource = &dedication.resource;
    let views: Vec<NodeView> = objects.iter().map(node_view).collect::<Result<_, _>>()?;
    // A resource that is on none of the nodes while a near name is: a typo, not a device
    // plugin to go and check.
    if let Some(unknown) = gpu::unknown_resource(&views, resource)
        && unknown.near.is_some()
    {
        return Err(CommandError::Input(unknown.message));
    }
    let mut findings = Findings::default();
    let mut without_gpu = Vec::new();
    for view in &views {
        let row = gpu::node_gpu(view, 0, resource);
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
        if dedication.allow_no_gpu {
            findings
                .warnings
                .push(format!("{message}; dedicating anyway (--allow-no-gpu)"));
        } else {
            return Err(CommandError::Blocked(format!(
                "nothing was changed: {message}. Use --allow-no-gpu to dedicate anyway."
            )));
        }
    }
    let request = ChangeRequest {
        labels: dedication.labels,
        add_taints: vec![dedication.taint],
        overwrite: dedication.overwrite,
        ..Default::default()
    };
    let plans: Vec<NodePlan> = objects
        .iter()
        .map(|n| api::node_state(n).map(|s| plan_node(&s, &request)))
        .collect::<Result<_, _>>()?;
    let mut mutation = Mutation::new(TOOL, COMMAND, "dedicate", args);
    mutation.force = dedication.force;
    mutation.findings = findings;
    let report = pipeline::apply(&conn, ui, plans, mutation).await?;
    Ok(print_report(ui, &report))
}

/// `release`: removes the taint only where key, value and effect all match (a taint with
/// the same key and effect but another value is reported and left), and the pool labels.
pub async fn release(
    connection: &ConnectionArgs,
    ui: &Ui,
    targets: Targets,
    taint: Option<Taint>,
    labels: Vec<LabelChange>,
    force: bool,
    args: &MutationArgs,
) -> Result<u8, CommandError> {
    let conn = connection.connect().await?;
    let nodes = api::fetch_nodes(&conn.client, &targets).await?;
    if nodes.is_empty() {
        return Err(input("the selector matches no node; nothing to do"));
    }
    let request = ChangeRequest {
        labels,
        remove_taints: taint.iter().map(TaintMatcher::exact).collect(),
        ..Default::default()
    };
    let plans: Vec<NodePlan> = nodes.iter().map(|n| plan_node(n, &request)).collect();
    let mut mutation = Mutation::new(TOOL, COMMAND, "release", args);
    mutation.force = force;
    mutation.findings.warnings = super::checks::absent_removals(&request.labels, &nodes);
    mutation.problems = plans
        .iter()
        .flat_map(|p| {
            p.notes
                .iter()
                .filter(|n| n.is_problem())
                .map(move |n| format!("node/{}: {n}", p.node()))
        })
        .collect();
    let report = pipeline::apply(&conn, ui, plans, mutation).await?;
    Ok(print_report(ui, &report))
}

/// `status`: the GPU inventory of the targets (all nodes by default).
pub async fn status_command(
    connection: &ConnectionArgs,
    ui: &Ui,
    targets: Targets,
    resource: &str,
) -> Result<u8, CommandError> {
    let conn = connection.connect().await?;
    status(&conn, ui, &targets, resource).await
}

pub async fn status(
    conn: &Connection,
    ui: &Ui,
    targets: &Targets,
    resource: &str,
) -> Result<u8, CommandError> {
    let mut nodes: Vec<NodeView> = Vec::new();
    match targets {
        Targets::Names(_) => {
            let found = match api::fetch_node_objects(&conn.client, targets).await {
                // A read-only command: "nothing was changed" would be beside the point.
                Err(CommandError::NodesNotFound(names)) => {
                    return Err(CommandError::Input(format!(
                        "node{} {} not found (check the name with `kubectl get nodes`)",
                        if names.len() == 1 { "" } else { "s" },
                        names
                            .iter()
                            .map(|n| format!("{n:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                other => other?,
            };
            for node in found {
                nodes.push(
                    serde_json::from_value(serde_json::to_value(&node).map_err(input)?)
                        .map_err(input)?,
                );
            }
        }
        Targets::Selector(s) => {
            api::for_each_page(
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
            api::for_each_page(&conn.client, "/api/v1/nodes", None, None, NODE_PAGE, |p| {
                nodes.extend(p)
            })
            .await?;
        }
    }
    if nodes.is_empty() && !ui.output.is_structured() {
        // As `kubectl get nodes -l ...` says it.
        eprintln!(
            "No nodes found{}",
            match targets {
                Targets::Selector(s) => format!(" matching -l {s}"),
                _ => String::new(),
            }
        );
        return Ok(exit::SUCCESS);
    }
    if let Some(unknown) = gpu::unknown_resource(&nodes, resource) {
        return Err(CommandError::Input(unknown.message));
    }
    // One pass over the active pods, keeping only per-node sums.
    let mut requested: BTreeMap<String, i128> = BTreeMap::new();
    api::for_each_page(
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
            "apiVersion": REPORT_API_VERSION,
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
        format!("TOTAL ({})", crate::ui::count(totals.nodes, "node")),
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
    print!("{}", crate::ui::table(&header, &table_rows));
    Ok(exit::SUCCESS)
}
