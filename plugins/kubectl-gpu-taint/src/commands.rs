//! `kubectl gpu-taint`'s commands on top of the pipeline: dedicate (with the GPU preflight),
//! release (exact key, value and effect), and the accelerator inventory `status`
//! (see [`placekit_cli::inventory`]).

use std::collections::BTreeMap;

use placekit_cli::error::CommandError;
use placekit_cli::overrides::PolicyOverrides;
use placekit_cli::ui::{MutationArgs, Ui};
use placekit_client::api;
use placekit_client::connect::ConnectionArgs;
use placekit_client::targets::Targets;
use placekit_core::accelerators::{self, Scope};
use placekit_core::gpu;
use placekit_core::model::Node;
use placekit_core::plan::{ChangeRequest, NodePlan, plan_node};
use placekit_core::syntax::{LabelChange, Taint, TaintMatcher};

use placekit_cli::mutation::pipeline::{self, Mutation};
use placekit_cli::mutation::report::print_report;
use placekit_lint::checks::{Check, Finding, Findings};

/// `kubectl gpu-taint`'s name in snapshots and in printed commands.
pub const TOOL: &str = "kubectl-gpu_taint";
pub const COMMAND: &str = "kubectl gpu-taint";

fn input(e: impl std::fmt::Display) -> CommandError {
    CommandError::Input(e.to_string())
}

/// What `dedicate` applies.
#[derive(Debug, Clone)]
pub struct Dedication {
    pub taint: Taint,
    pub labels: Vec<LabelChange>,
    /// `--resource`: only this accelerator makes a node a GPU node; `None`: any kind.
    pub resource: Option<String>,
    pub allow_no_gpu: bool,
    pub overwrite: bool,
    /// `--ignore-dependents` (go on although workloads lose nodes they depend on),
    /// `--ignore-gpu-pods`.
    pub overrides: PolicyOverrides,
    /// `--ignore-disruption-budgets`: go on although a NoExecute taint evicts pods their
    /// PodDisruptionBudgets do not allow to go.
    pub ignore_disruption_budgets: bool,
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
    let conn = placekit_cli::ui::connect(connection).await?;
    let objects = api::fetch_node_objects(&conn.client, &targets).await?;
    if objects.is_empty() {
        return Err(input("the selector matches no node; nothing to do"));
    }
    let resource = dedication.resource.as_deref();
    let views: Vec<Node> = objects
        .iter()
        .map(placekit_cli::inventory::node_view)
        .collect::<Result<_, _>>()?;
    let dra = placekit_cli::inventory::read_dra(&conn, false).await?;
    // A resource that is on none of the nodes while a near name is: a typo, not a device
    // plugin to go and check.
    if let Some(r) = resource
        && dra.inventory.class_serving(r).is_none()
        && let Some(unknown) = gpu::unknown_resource(&views, r)
        && unknown.near.is_some()
    {
        return Err(CommandError::Input(unknown.message));
    }
    let mut findings = Findings::default();
    findings.warn_all(Check::Unreadable, dra.notes.iter().cloned());
    let primary = resource.unwrap_or(gpu::DEFAULT_RESOURCE);
    let resources = placekit_cli::inventory::resources_for(&views, resource);
    let scope = Scope {
        resource,
        class: None,
        primary,
        resources: &resources,
        label_columns: &[],
    };
    let mut without_gpu = Vec::new();
    for view in &views {
        let inventory =
            accelerators::node_inventory(view, &BTreeMap::new(), &dra.inventory, &scope);
        match crate::status::describe_accelerators(&inventory) {
            None => without_gpu.push(view.metadata.name.clone()),
            Some(described) => {
                if !ui.output.is_structured() {
                    eprintln!(
                        "{}",
                        placekit_core::text::escaped(&format!(
                            "node/{}: {described}",
                            view.metadata.name
                        ))
                    );
                }
            }
        }
    }
    if !without_gpu.is_empty() {
        let other = if resource.is_some() {
            String::new()
        } else {
            format!(
                "; and {} no other accelerator (MIG profile, shared GPU, another vendor's device or DRA device)",
                if without_gpu.len() == 1 {
                    "it has"
                } else {
                    "they have"
                }
            )
        };
        let message = format!(
            "{} ha{} no {primary} capacity: the device plugin has not registered the resource there (check the GPU device plugin DaemonSet and its logs; an empty field means the plugin is missing, not an affinity problem){other}",
            without_gpu
                .iter()
                .map(|n| format!("node/{n}"))
                .collect::<Vec<_>>()
                .join(", "),
            if without_gpu.len() == 1 { "s" } else { "ve" }
        );
        if dedication.allow_no_gpu {
            let text = format!("{message}; dedicating anyway (--allow-no-gpu)");
            findings
                .warnings
                .push(Finding::new(Check::Command, text).on(&without_gpu));
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
    mutation.apply_overrides(dedication.overrides);
    mutation.ignore_disruption_budgets = dedication.ignore_disruption_budgets;
    mutation.findings = findings;
    let report = pipeline::apply(&conn, ui, plans, mutation).await?;
    Ok(print_report(ui, &report))
}

/// The overrides `release` takes: the policy checks', and the taint owners'.
#[derive(Debug, Clone, Copy)]
pub struct ReleaseOverrides {
    pub policy: PolicyOverrides,
    /// `--ignore-taint-owner`.
    pub ignore_taint_owner: bool,
}

/// `release`: removes the taint only where key, value and effect all match (a taint with
/// the same key and effect but another value is reported and left), and the pool labels.
pub async fn release(
    connection: &ConnectionArgs,
    ui: &Ui,
    targets: Targets,
    taint: Option<Taint>,
    labels: Vec<LabelChange>,
    overrides: ReleaseOverrides,
    args: &MutationArgs,
) -> Result<u8, CommandError> {
    let conn = placekit_cli::ui::connect(connection).await?;
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
    mutation.apply_overrides(overrides.policy);
    mutation.ignore_taint_owner = overrides.ignore_taint_owner;
    mutation.findings.warn_all(
        Check::Keys,
        placekit_lint::checks::absent_removals(&request.labels, &nodes),
    );
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

/// `status`: the accelerator inventory of the targets (all nodes by default).
pub async fn status_command(
    connection: &ConnectionArgs,
    fleet: Option<&placekit_cli::fleet::Fleet>,
    ui: &Ui,
    targets: Targets,
    options: &placekit_cli::inventory::StatusOptions,
) -> Result<u8, CommandError> {
    use crate::status::{print_fleet_status, status};
    use placekit_cli::inventory::{Reading, read_status};
    let Some(fleet) = fleet else {
        let conn = placekit_cli::ui::connect(connection).await?;
        return status(&conn, ui, &targets, options).await;
    };
    let asked = std::sync::Arc::new((targets, options.clone()));
    let reads = fleet
        .read(move |conn| {
            let asked = asked.clone();
            async move { read_status(&conn, &asked.0, &asked.1, Reading::OfMany).await }
        })
        .await;
    Ok(print_fleet_status(ui, options, &reads))
}
