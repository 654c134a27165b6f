//! The mutation workflow shared by `kubectl nodelabel` and `kubectl gpu-taint`: read the
//! target nodes (one paged list or one GET per named node), plan, show the diff, check
//! permission, confirm, snapshot, write with the executor, report; and rollback, history
//! and show on top of the same pieces.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, PostParams};
use serde::Serialize;

use crate::connect::{ConnectError, Connection};
use crate::executor::{
    ExecutorConfig, ExecutorError, KubeNodeWriter, NodeOutcome, WriteItem, execute,
};
use crate::exit;
use crate::plan::{LabelDelta, NodePlan, NodeState};
use crate::rollback::{NodeRollback, RollbackConflict, plan_node_rollback};
use crate::snapshot::{
    Journal, JournalRecord, OutcomeKind, Snapshot, SnapshotError, SnapshotHeader, SnapshotStore,
    now_rfc3339, write_snapshot,
};
use crate::syntax::{LabelSelector, Taint};
use crate::ui::{Color, DryRun, MutationArgs, Ui};

/// The version of the report schema printed by `-o json|yaml`.
pub const REPORT_API_VERSION: &str = "placekit.dev/v1";

/// Why a command stopped. Each maps to one of the fixed exit codes.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    /// Bad arguments or input; nothing was changed.
    #[error("{0}")]
    Input(String),
    /// Named nodes that do not exist; nothing was changed.
    #[error("{}", missing_nodes_message(.0))]
    NodesNotFound(Vec<String>),
    /// Plans blocked (e.g. a different value without --overwrite); nothing was changed.
    #[error("{0}")]
    Blocked(String),
    /// No terminal to confirm on and no --yes; nothing was changed.
    #[error(
        "refusing to change {0} without confirmation: there is no terminal to ask on; re-run with --yes after checking the plan (or --dry-run=client to see it)"
    )]
    NeedsConfirmation(String),
    /// The person answered no.
    #[error("aborted: nothing was changed")]
    Declined,
    /// RBAC denies what the command needs; nothing was changed.
    #[error("{0}")]
    Forbidden(String),
    /// The cluster cannot be reached or the kubeconfig is unusable.
    #[error("{0}")]
    Cluster(String),
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The snapshot could not be written (so nothing was changed) or read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error(transparent)]
    Executor(#[from] ExecutorError),
}

fn missing_nodes_message(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    format!(
        "node{} {} not found; nothing was changed (check the name with `kubectl get nodes`)",
        if names.len() == 1 { "" } else { "s" },
        quoted.join(", ")
    )
}

impl WorkflowError {
    /// The exit code this error stands for.
    pub fn exit_code(&self) -> u8 {
        match self {
            WorkflowError::Input(_)
            | WorkflowError::NodesNotFound(_)
            | WorkflowError::NeedsConfirmation(_)
            | WorkflowError::Snapshot(_) => exit::USAGE,
            WorkflowError::Blocked(_) | WorkflowError::Declined | WorkflowError::Executor(_) => {
                exit::PROBLEMS
            }
            WorkflowError::Forbidden(_) | WorkflowError::Cluster(_) | WorkflowError::Connect(_) => {
                exit::CLUSTER
            }
        }
    }
}

/// Runs a plugin's async work on a runtime built only now (after argument parsing, so
/// `--help` and `--version` never build one) and turns the result into the fixed exit code,
/// printing the error, if any, the way every plugin does.
pub fn run_to_exit_code(
    work: impl Future<Output = Result<u8, WorkflowError>>,
) -> std::process::ExitCode {
    match block_on(work) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(e.exit_code())
        }
    }
}

/// Runs async work on a multi-thread runtime built for it.
pub fn block_on<T>(
    work: impl Future<Output = Result<T, WorkflowError>>,
) -> Result<T, WorkflowError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| WorkflowError::Cluster(format!("cannot start the async runtime: {e}")))?
        .block_on(work)
}

/// Turns a kube error into a workflow error with the verb/resource it was about.
pub fn api_error(e: kube::Error, doing: &str) -> WorkflowError {
    match e {
        kube::Error::Api(status) if status.code == 403 => WorkflowError::Forbidden(format!(
            "forbidden while {doing}: {} (ask for the missing RBAC permission; nothing was changed)",
            status.message
        )),
        kube::Error::Api(status) if status.code == 401 => WorkflowError::Cluster(format!(
            "unauthorized while {doing}: {} (check the credentials of the kubeconfig context)",
            status.message
        )),
        kube::Error::Api(status) if status.code == 400 => {
            WorkflowError::Input(format!("while {doing}: {}", status.message))
        }
        kube::Error::Api(status) => WorkflowError::Cluster(format!(
            "the API server answered {} {} while {doing}: {}",
            status.code, status.reason, status.message
        )),
        other => WorkflowError::Cluster(format!("cannot reach the cluster while {doing}: {other}")),
    }
}

/// Which nodes a command acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    Names(Vec<String>),
    Selector(LabelSelector),
    All,
}

impl Targets {
    /// Builds targets from kubectl-style arguments, rejecting ambiguous combinations.
    pub fn from_args(
        names: Vec<String>,
        selector: Option<&str>,
        all: bool,
    ) -> Result<Self, WorkflowError> {
        match (names.is_empty(), selector, all) {
            (false, None, false) => Ok(Targets::Names(names)),
            (true, Some(s), false) => LabelSelector::parse(s)
                .map(Targets::Selector)
                .map_err(|e| WorkflowError::Input(e.to_string())),
            (true, None, true) => Ok(Targets::All),
            (true, None, false) => Err(WorkflowError::Input(
                "no nodes given: name nodes, or use -l/--selector or --all".into(),
            )),
            (false, _, _) => Err(WorkflowError::Input(format!(
                "node names ({}) cannot be combined with -l/--selector or --all",
                names.join(", ")
            ))),
            (true, Some(_), true) => Err(WorkflowError::Input(
                "--all and -l/--selector are mutually exclusive".into(),
            )),
        }
    }
}

/// Page size of node lists.
const PAGE: u32 = 500;

/// Reads the target nodes: one GET per named node (bounded concurrency) or one paged list.
/// Named nodes that do not exist are an error listing all of them.
pub async fn fetch_node_objects(
    client: &kube::Client,
    targets: &Targets,
) -> Result<Vec<Node>, WorkflowError> {
    let api: Api<Node> = Api::all(client.clone());
    match targets {
        Targets::Names(names) => {
            let results: Vec<(String, Result<Option<Node>, kube::Error>)> =
                futures::stream::iter(names.iter().cloned())
                    .map(|name| {
                        let api = api.clone();
                        async move {
                            let r = api.get_opt(&name).await;
                            (name, r)
                        }
                    })
                    .buffered(16)
                    .collect()
                    .await;
            let mut found = Vec::new();
            let mut missing = Vec::new();
            for (name, r) in results {
                match r.map_err(|e| api_error(e, &format!("reading node {name}")))? {
                    Some(node) => found.push(node),
                    None => missing.push(name),
                }
            }
            if !missing.is_empty() {
                return Err(WorkflowError::NodesNotFound(missing));
            }
            Ok(found)
        }
        Targets::Selector(selector) => {
            list_all(&api, Some(&selector.to_string()), "listing nodes").await
        }
        Targets::All => list_all(&api, None, "listing nodes").await,
    }
}

/// [`fetch_node_objects`], as the states plans are made from.
pub async fn fetch_nodes(
    client: &kube::Client,
    targets: &Targets,
) -> Result<Vec<NodeState>, WorkflowError> {
    fetch_node_objects(client, targets)
        .await?
        .iter()
        .map(node_state)
        .collect()
}

/// A node's plan state, or an error naming the unreadable node.
pub fn node_state(node: &Node) -> Result<NodeState, WorkflowError> {
    NodeState::from_node(node).map_err(|e| {
        WorkflowError::Cluster(format!(
            "unreadable node {}: {e}",
            node.metadata.name.as_deref().unwrap_or_default()
        ))
    })
}

/// Lists every object with `limit`/`continue` paging.
pub async fn list_all<K>(
    api: &Api<K>,
    label_selector: Option<&str>,
    doing: &str,
) -> Result<Vec<K>, WorkflowError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut params = ListParams::default().limit(PAGE);
    if let Some(s) = label_selector.filter(|s| !s.is_empty()) {
        params = params.labels(s);
    }
    let mut out = Vec::new();
    loop {
        let page = api.list(&params).await.map_err(|e| api_error(e, doing))?;
        out.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => return Ok(out),
        }
    }
}

/// Asks the API server whether the current user may `verb` `resource` (SelfSubjectAccessReview).
pub async fn check_permission(
    client: &kube::Client,
    verb: &str,
    resource: &str,
    group: &str,
) -> Result<(), WorkflowError> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.to_string()),
                resource: Some(resource.to_string()),
                group: Some(group.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = api
        .create(&PostParams::default(), &review)
        .await
        .map_err(|e| api_error(e, &format!("checking permission to {verb} {resource}")))?;
    if answer.status.is_some_and(|s| s.allowed) {
        Ok(())
    } else {
        Err(WorkflowError::Forbidden(format!(
            "you are not allowed to {verb} {resource}: missing RBAC permission verb={verb:?} resource={resource:?} group={group:?}; nothing was changed"
        )))
    }
}

/// One node in a report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    pub name: String,
    /// applied, conflict, failed, skipped, notAttempted, unchanged, planned (dry run).
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub label_changes: Vec<LabelDelta>,
    pub taints_added: Vec<Taint>,
    pub taints_removed: Vec<Taint>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub annotation_changes: Vec<LabelDelta>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<RollbackConflict>,
}

/// What a mutating command did: the `-o json|yaml` output (`kind: ChangeReport`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub api_version: String,
    pub kind: String,
    pub operation: String,
    /// none, client or server.
    pub dry_run: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback_command: Option<String>,
    pub nodes: Vec<NodeReport>,
    pub warnings: Vec<String>,
}

impl Report {
    /// 0 when every node is applied, unchanged or planned; 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        let bad = self.nodes.iter().any(|n| {
            matches!(n.outcome.as_str(), "conflict" | "failed" | "notAttempted")
                || n.conflicts.iter().any(|c| !c.forced)
        });
        if bad { exit::PROBLEMS } else { exit::SUCCESS }
    }

    fn count(&self, outcome: &str) -> usize {
        self.nodes.iter().filter(|n| n.outcome == outcome).count()
    }
}

fn node_report(plan: &NodePlan, outcome: &str, message: Option<String>) -> NodeReport {
    NodeReport {
        name: plan.node().to_string(),
        outcome: outcome.to_string(),
        message,
        label_changes: plan.label_changes.clone(),
        taints_added: plan.taints_added(),
        taints_removed: plan.taints_removed(),
        annotation_changes: plan.annotation_changes.clone(),
        conflicts: Vec::new(),
    }
}

/// Everything a mutating command needs besides its plans.
#[derive(Debug, Clone)]
pub struct MutationContext<'a> {
    /// `kubectl-nodelabel` / `kubectl-gpu_taint`: recorded in snapshots.
    pub tool: &'a str,
    /// How users type the tool (`kubectl nodelabel`), for the printed undo command.
    pub command: &'a str,
    pub operation: &'a str,
    pub args: &'a MutationArgs,
    /// Warnings to show with the plan (dependents, risky keys, preflight).
    pub warnings: Vec<String>,
    /// Set for a rollback: the snapshot it undoes.
    pub rollback_of: Option<PathBuf>,
    /// What must be confirmed beyond the plan itself (e.g. NoExecute evictions).
    pub extra_confirmation: Option<String>,
}

/// Shows the plans, asks, snapshots, writes and reports. Blocked plans stop everything
/// before any write; unchanged nodes are reported and not written.
pub async fn apply_plans(
    conn: &Connection,
    ui: &Ui,
    plans: Vec<NodePlan>,
    ctx: MutationContext<'_>,
) -> Result<Report, WorkflowError> {
    let blocked: Vec<String> = plans
        .iter()
        .flat_map(|p| {
            p.blockers
                .iter()
                .map(move |b| format!("node/{}: {b}", p.node()))
        })
        .collect();
    if !blocked.is_empty() {
        return Err(WorkflowError::Blocked(format!(
            "nothing was changed; {} blocking problem{}:\n  {}",
            blocked.len(),
            if blocked.len() == 1 { "" } else { "s" },
            blocked.join("\n  ")
        )));
    }
    let (changing, unchanged): (Vec<NodePlan>, Vec<NodePlan>) =
        plans.into_iter().partition(|p| !p.is_noop());
    let dry_run = ctx.args.dry_run;
    let mut report = Report {
        api_version: REPORT_API_VERSION.into(),
        kind: "ChangeReport".into(),
        operation: ctx.operation.into(),
        dry_run: match dry_run {
            DryRun::None => "none",
            DryRun::Client => "client",
            DryRun::Server => "server",
        }
        .into(),
        snapshot: None,
        rollback_command: None,
        nodes: unchanged
            .iter()
            .map(|p| node_report(p, "unchanged", None))
            .collect(),
        warnings: ctx.warnings.clone(),
    };
    for p in changing.iter().chain(&unchanged) {
        for note in &p.notes {
            report.warnings.push(format!("node/{}: {note}", p.node()));
        }
    }

    if !ui.output.is_structured() {
        show_plan(ui, &changing, unchanged.len());
        for w in &report.warnings {
            ui.warn(w);
        }
    }
    if changing.is_empty() {
        if !ui.output.is_structured() {
            println!("nothing to change");
        }
        return Ok(report);
    }
    if dry_run == DryRun::Client {
        report
            .nodes
            .extend(changing.iter().map(|p| node_report(p, "planned", None)));
        if !ui.output.is_structured() {
            println!("dry run (client): nothing was sent to the cluster");
        }
        return Ok(report);
    }

    check_permission(&conn.client, "patch", "nodes", "").await?;

    let what = format!(
        "{} node{}",
        changing.len(),
        if changing.len() == 1 { "" } else { "s" }
    );
    if dry_run == DryRun::None && !ctx.args.yes {
        let question = match &ctx.extra_confirmation {
            Some(extra) => format!("{extra}\nApply the change to {what}?"),
            None => format!("Apply the change to {what}?"),
        };
        if !ui.interactive {
            let what = match &ctx.extra_confirmation {
                Some(extra) => format!("{what} ({extra})"),
                None => what,
            };
            return Err(WorkflowError::NeedsConfirmation(what));
        }
        if !ui.confirm(&question) {
            return Err(WorkflowError::Declined);
        }
    }

    let mut journal: Option<Journal> = None;
    if dry_run == DryRun::None {
        let mut header = SnapshotHeader::new(
            ctx.tool,
            env!("CARGO_PKG_VERSION"),
            &conn.context,
            &conn.server,
            std::env::args().collect(),
            ctx.operation,
            &changing,
        );
        header.rollback_of = ctx.rollback_of.as_ref().map(|p| p.display().to_string());
        let j = match ctx.args.backup.as_deref().filter(|p| !p.is_empty()) {
            Some(path) => write_snapshot(Path::new(path), &header)?,
            None => SnapshotStore::new(SnapshotStore::default_dir()?).create(&header)?,
        };
        let path = j.path().to_path_buf();
        report.rollback_command = Some(format!(
            "{} rollback {}",
            ctx.command,
            shell_quote(&path.display().to_string())
        ));
        report.snapshot = Some(path);
        if !ui.output.is_structured() {
            eprintln!(
                "snapshot written to {}",
                report.snapshot.as_ref().expect("set").display()
            );
        }
        journal = Some(j);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.store(true, Ordering::SeqCst);
                eprintln!("interrupted: finishing the writes in flight, starting no new ones");
            }
        })
    };
    let writer = KubeNodeWriter::new(conn.client.clone(), "placekit");
    let items: Vec<WriteItem> = changing.iter().map(WriteItem::from_plan).collect();
    let config = ExecutorConfig {
        concurrency: usize::from(ctx.args.concurrency),
        dry_run: dry_run == DryRun::Server,
        ..ExecutorConfig::default()
    };
    let bar = ui.progress_bar(items.len() as u64, ctx.operation);
    let outcomes = execute(
        &writer,
        &items,
        &config,
        journal.as_mut(),
        &stop,
        |_: &NodeOutcome| bar.inc(1),
    )
    .await;
    bar.finish_and_clear();
    watcher.abort();
    let outcomes = outcomes?;
    drop(journal);

    for (plan, outcome) in changing.iter().zip(&outcomes) {
        let name = match (outcome.kind, dry_run) {
            (OutcomeKind::Applied, DryRun::Server) => "planned",
            (kind, _) => kind.as_str(),
        };
        report
            .nodes
            .push(node_report(plan, name, outcome.message.clone()));
    }
    report.nodes.sort_by(|a, b| a.name.cmp(&b.name));

    if let (Some(original), DryRun::None) = (&ctx.rollback_of, dry_run)
        && let Some(snapshot) = &report.snapshot
    {
        Journal::open_existing(original)?.record(&JournalRecord::RolledBack {
            by: snapshot.display().to_string(),
            at: now_rfc3339(),
        })?;
    }
    Ok(report)
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-:+@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// How many node diffs to print before summarising the rest.
const DIFFS_SHOWN: usize = 10;

fn show_plan(ui: &Ui, changing: &[NodePlan], unchanged: usize) {
    for plan in changing.iter().take(DIFFS_SHOWN) {
        print!("{}", ui.paint_diff(&plan.render_diff()));
    }
    if changing.len() > DIFFS_SHOWN {
        println!(
            "... and {} more node{} (see -o json for every node's plan)",
            changing.len() - DIFFS_SHOWN,
            if changing.len() - DIFFS_SHOWN == 1 {
                ""
            } else {
                "s"
            }
        );
    }
    if unchanged > 0 {
        println!(
            "{unchanged} node{} already as requested",
            if unchanged == 1 { " is" } else { "s are" }
        );
    }
}

/// Prints a report as text (or JSON/YAML) and returns the exit code.
pub fn print_report(ui: &Ui, report: &Report) -> u8 {
    if ui.output.is_structured() {
        ui.print_structured(report);
        return report.exit_code();
    }
    for n in &report.nodes {
        let outcome = match n.outcome.as_str() {
            "applied" => ui.paint("applied", Color::Green),
            "unchanged" | "planned" => n.outcome.clone(),
            other => ui.paint(other, Color::Red),
        };
        if matches!(n.outcome.as_str(), "unchanged") && report.nodes.len() > DIFFS_SHOWN {
            continue;
        }
        match &n.message {
            Some(m) => println!("node/{} {outcome}: {m}", n.name),
            None => println!("node/{} {outcome}", n.name),
        }
        for c in n.conflicts.iter() {
            println!(
                "  conflict: {} is {}, expected {}{}",
                c.item,
                c.found
                    .as_deref()
                    .map(|v| format!("{v:?}"))
                    .unwrap_or_else(|| "absent".into()),
                c.expected
                    .as_deref()
                    .map(|v| format!("{v:?}"))
                    .unwrap_or_else(|| "absent".into()),
                if c.forced {
                    " (restored with --force)"
                } else {
                    " (left alone; --force restores it)"
                }
            );
        }
    }
    let summary: Vec<String> = [
        "applied",
        "planned",
        "unchanged",
        "conflict",
        "failed",
        "notAttempted",
    ]
    .iter()
    .filter_map(|o| {
        let n = report.count(o);
        (n > 0).then(|| format!("{n} {o}"))
    })
    .collect();
    if !summary.is_empty() {
        println!("{}", summary.join(", "));
    }
    if let Some(cmd) = &report.rollback_command {
        println!("undo with: {cmd}");
    }
    report.exit_code()
}

/// `rollback`: restores what a snapshot changed, exactly (see [`crate::rollback`]).
pub async fn rollback(
    conn: &Connection,
    ui: &Ui,
    snapshot: &Snapshot,
    force: bool,
    ctx: MutationContext<'_>,
) -> Result<Report, WorkflowError> {
    let names: Vec<String> = snapshot
        .header
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .collect();
    let api: Api<Node> = Api::all(conn.client.clone());
    let current: Vec<(String, Option<NodeState>)> = futures::stream::iter(names)
        .map(|name| {
            let api = api.clone();
            async move {
                let node = api.get_opt(&name).await;
                (name, node)
            }
        })
        .buffered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|(name, r)| {
            let node = r.map_err(|e| api_error(e, &format!("reading node {name}")))?;
            let state = node
                .map(|n| NodeState::from_node(&n))
                .transpose()
                .map_err(|e| WorkflowError::Cluster(format!("unreadable node {name}: {e}")))?;
            Ok((name, state))
        })
        .collect::<Result<_, WorkflowError>>()?;

    let mut plans = Vec::new();
    let mut conflicts_by_node: Vec<(String, Vec<RollbackConflict>)> = Vec::new();
    let mut warnings = ctx.warnings.clone();
    for node in &snapshot.header.nodes {
        let now = current
            .iter()
            .find(|(n, _)| *n == node.name)
            .and_then(|(_, s)| s.as_ref());
        match plan_node_rollback(node, snapshot.outcome_of(&node.name), now, force) {
            NodeRollback::Restore { plan, conflicts } => {
                if !conflicts.is_empty() {
                    conflicts_by_node.push((plan.node().to_string(), conflicts));
                }
                plans.push(*plan);
            }
            NodeRollback::Recreated { node, snapshot_uid, current_uid } => warnings.push(format!(
                "node/{node} was deleted and recreated since the snapshot (uid {snapshot_uid} -> {current_uid}): skipped"
            )),
            NodeRollback::Missing { node } => warnings.push(format!("node/{node} no longer exists: skipped")),
            NodeRollback::NothingApplied { node, outcome } => warnings.push(format!(
                "node/{node} was not changed by that command (outcome {}): nothing to undo",
                outcome.as_str()
            )),
        }
    }
    if !ui.output.is_structured() {
        for (node, conflicts) in &conflicts_by_node {
            for c in conflicts {
                ui.warn(&format!(
                    "node/{node}: {} is {}, but the snapshot's command set {}: someone changed it since{}",
                    c.item,
                    c.found.as_deref().map(|v| format!("{v:?}")).unwrap_or_else(|| "absent".into()),
                    c.expected.as_deref().map(|v| format!("{v:?}")).unwrap_or_else(|| "absent".into()),
                    if c.forced { "; restoring anyway (--force)" } else { "; left alone (use --force to restore it)" }
                ));
            }
        }
    }
    let ctx = MutationContext {
        warnings,
        rollback_of: Some(snapshot.path.clone()),
        ..ctx
    };
    let mut report = apply_plans(conn, ui, plans, ctx).await?;
    for (node, conflicts) in conflicts_by_node {
        if let Some(n) = report.nodes.iter_mut().find(|n| n.name == node) {
            n.conflicts = conflicts;
        }
    }
    Ok(report)
}

/// Loads the snapshot a rollback/show names: a path, or `--last` for this tool and context.
pub fn resolve_snapshot(
    path: Option<&str>,
    last: bool,
    tool: &str,
    context: &str,
) -> Result<Snapshot, WorkflowError> {
    match (path, last) {
        (Some(p), false) => Ok(Snapshot::load(Path::new(p))?),
        (None, true) => {
            Ok(SnapshotStore::new(SnapshotStore::default_dir()?).latest(tool, context)?)
        }
        (Some(_), true) => Err(WorkflowError::Input(
            "give a SNAPSHOT path or --last, not both".into(),
        )),
        (None, false) => Err(WorkflowError::Input(
            "give a SNAPSHOT path or --last".into(),
        )),
    }
}

/// `show SNAPSHOT | --last`: resolves `--last` against the kubeconfig's current context
/// (without contacting the cluster) and prints the snapshot.
pub fn show_command(
    connection: &crate::connect::ConnectionArgs,
    ui: &Ui,
    tool: &str,
    snapshot: Option<&str>,
    last: bool,
) -> Result<u8, WorkflowError> {
    let context = if last {
        let kubeconfig = connection.load_kubeconfig()?;
        connection.context_name(&kubeconfig)
    } else {
        String::new()
    };
    let snap = resolve_snapshot(snapshot, last, tool, &context)?;
    print_snapshot(ui, &snap);
    Ok(exit::SUCCESS)
}

/// One row of `history`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub created_at: String,
    pub context: String,
    pub operation: String,
    pub command: String,
    pub nodes: usize,
    pub outcome: String,
    pub rolled_back_by: Vec<String>,
    pub path: PathBuf,
}

/// `history`: every snapshot of `tool`, oldest first.
pub fn history(tool: &str) -> Result<Vec<HistoryEntry>, WorkflowError> {
    let store = SnapshotStore::new(SnapshotStore::default_dir()?);
    Ok(store
        .list()?
        .into_iter()
        .filter(|s| s.header.tool == tool)
        .map(|s| HistoryEntry {
            created_at: s.header.created_at.clone(),
            context: s.header.context.clone(),
            operation: s.header.operation.clone(),
            command: s
                .header
                .command_line
                .iter()
                .skip(1)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
            nodes: s.header.nodes.len(),
            outcome: s
                .outcome_counts()
                .iter()
                .map(|(k, n)| format!("{n} {}", k.as_str()))
                .collect::<Vec<_>>()
                .join(", "),
            rolled_back_by: s.rolled_back_by().iter().map(|p| p.to_string()).collect(),
            path: s.path.clone(),
        })
        .collect())
}

/// Prints `history` as a table or JSON/YAML.
pub fn print_history(ui: &Ui, entries: &[HistoryEntry]) {
    if ui.output.is_structured() {
        ui.print_structured(&serde_json::json!({
            "apiVersion": REPORT_API_VERSION, "kind": "SnapshotHistory", "items": entries
        }));
        return;
    }
    if entries.is_empty() {
        println!("no snapshots yet");
        return;
    }
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                e.created_at.clone(),
                e.context.clone(),
                e.operation.clone(),
                e.nodes.to_string(),
                e.outcome.clone(),
                if e.rolled_back_by.is_empty() {
                    "no".into()
                } else {
                    "yes".into()
                },
                e.path.display().to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        crate::ui::table(
            &[
                "TIME",
                "CONTEXT",
                "OPERATION",
                "NODES",
                "OUTCOME",
                "ROLLED BACK",
                "SNAPSHOT"
            ],
            &rows
        )
    );
}

/// Prints one snapshot (`show`).
pub fn print_snapshot(ui: &Ui, snapshot: &Snapshot) {
    if ui.output.is_structured() {
        ui.print_structured(
            &serde_json::json!({"header": snapshot.header, "records": snapshot.records}),
        );
        return;
    }
    let h = &snapshot.header;
    println!("snapshot:  {}", snapshot.path.display());
    println!(
        "created:   {} by {} {}",
        h.created_at, h.tool, h.tool_version
    );
    println!("context:   {} ({})", h.context, h.server);
    println!("command:   {}", h.command_line.join(" "));
    if let Some(of) = &h.rollback_of {
        println!("undoes:    {of}");
    }
    for by in snapshot.rolled_back_by() {
        println!("undone by: {by}");
    }
    for node in &h.nodes {
        let outcome = snapshot
            .outcome_of(&node.name)
            .map(OutcomeKind::as_str)
            .unwrap_or("no outcome recorded");
        println!("node/{} (uid {}): {outcome}", node.name, node.uid);
        let show = |v: &Option<String>| {
            v.as_deref()
                .map(|v| format!("{v:?}"))
                .unwrap_or_else(|| "(absent)".into())
        };
        for d in &node.label_changes {
            println!(
                "  label {}: {} -> {}",
                d.key,
                show(&d.before),
                show(&d.after)
            );
        }
        for d in &node.annotation_changes {
            println!(
                "  annotation {}: {} -> {}",
                d.key,
                show(&d.before),
                show(&d.after)
            );
        }
        for t in &node.taints_added {
            println!("  taint added: {t}");
        }
        for t in &node.taints_removed {
            println!("  taint removed: {t}");
        }
    }
}

/// Lists every workload that can carry node constraints (Deployments, StatefulSets,
/// DaemonSets, ReplicaSets, Jobs, CronJobs and bare Pods) in `namespace` or all namespaces.
/// Objects owned by a controller are skipped (their owner is listed). A kind the user may
/// not list is reported as a warning, not an error: the lookup shows what it can see.
pub async fn list_workloads(
    client: &kube::Client,
    namespace: Option<&str>,
) -> Result<(Vec<crate::dependents::Workload>, Vec<String>), WorkflowError> {
    use crate::dependents::{Workload, has_controller};
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
    use k8s_openapi::api::batch::v1::{CronJob, Job};
    use k8s_openapi::api::core::v1::Pod;

    fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }

    let mut workloads = Vec::new();
    let mut warnings = Vec::new();
    macro_rules! collect {
        ($kind:ty, $name:literal, |$o:ident| $spec:expr) => {
            match list_all(
                &api::<$kind>(client, namespace),
                None,
                concat!("listing ", $name),
            )
            .await
            {
                Ok(items) => {
                    for $o in items {
                        if has_controller(&$o.metadata) {
                            continue;
                        }
                        if let Some(spec) = $spec {
                            workloads.push(Workload {
                                kind: <$kind as k8s_openapi::Resource>::KIND.to_string(),
                                namespace: $o.metadata.namespace.clone().unwrap_or_default(),
                                name: $o.metadata.name.clone().unwrap_or_default(),
                                pod_spec: spec,
                            });
                        }
                    }
                }
                Err(WorkflowError::Forbidden(m)) => {
                    warnings.push(format!("cannot list {}: {m}", $name))
                }
                Err(e) => return Err(e),
            }
        };
    }
    collect!(Deployment, "deployments", |o| o
        .spec
        .and_then(|s| s.template.spec));
    collect!(StatefulSet, "statefulsets", |o| o
        .spec
        .and_then(|s| s.template.spec));
    collect!(DaemonSet, "daemonsets", |o| o
        .spec
        .and_then(|s| s.template.spec));
    collect!(ReplicaSet, "replicasets", |o| o
        .spec
        .and_then(|s| s.template)
        .and_then(|t| t.spec));
    collect!(Job, "jobs", |o| o.spec.and_then(|s| s.template.spec));
    collect!(CronJob, "cronjobs", |o| o
        .spec
        .and_then(|s| s.job_template.spec)
        .and_then(|j| j.template.spec));
    collect!(Pod, "pods", |o| o.spec);
    Ok((workloads, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_follow_kubectl_rules() {
        assert_eq!(
            Targets::from_args(vec!["a".into()], None, false).unwrap(),
            Targets::Names(vec!["a".into()])
        );
        assert_eq!(
            Targets::from_args(vec![], None, true).unwrap(),
            Targets::All
        );
        assert!(matches!(
            Targets::from_args(vec![], Some("pool=online"), false).unwrap(),
            Targets::Selector(_)
        ));
        for (names, sel, all) in [
            (vec!["a".to_string()], Some("x=y"), false),
            (vec![], Some("x=y"), true),
            (vec![], None, false),
        ] {
            let err = Targets::from_args(names, sel, all).unwrap_err();
            assert_eq!(err.exit_code(), exit::USAGE);
        }
        assert!(
            Targets::from_args(vec![], Some("a in"), false)
                .unwrap_err()
                .to_string()
                .contains("unable to parse requirement")
        );
    }

    #[test]
    fn exit_codes_are_fixed() {
        assert_eq!(
            WorkflowError::NodesNotFound(vec!["x".into()]).exit_code(),
            exit::USAGE
        );
        assert_eq!(
            WorkflowError::Forbidden("x".into()).exit_code(),
            exit::CLUSTER
        );
        assert_eq!(
            WorkflowError::Blocked("x".into()).exit_code(),
            exit::PROBLEMS
        );
        assert_eq!(
            WorkflowError::NeedsConfirmation("x".into()).exit_code(),
            exit::USAGE
        );
        assert_eq!(
            WorkflowError::NodesNotFound(vec!["a".into(), "b".into()]).to_string(),
            "nodes \"a\", \"b\" not found; nothing was changed (check the name with `kubectl get nodes`)"
        );
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("/tmp/a-b.jsonl"), "/tmp/a-b.jsonl");
        assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
    }
}

/// A page of a list read into a minimal view type.
#[derive(Debug, serde::Deserialize)]
struct ViewList<T> {
    #[serde(default = "Vec::new")]
    items: Vec<T>,
    #[serde(default)]
    metadata: ViewListMeta,
}

#[derive(Debug, Default, serde::Deserialize)]
struct ViewListMeta {
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
}

/// Percent-encodes a query value.
fn encode_query(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Pages through a collection (`/api/v1/pods`, `/api/v1/nodes`...) reading each item into a
/// minimal view type `T` and handing every page to `on_page`, so memory stays proportional
/// to one page whatever the cluster's size. Returns the number of list requests made.
pub async fn for_each_page<T: serde::de::DeserializeOwned>(
    client: &kube::Client,
    collection: &str,
    field_selector: Option<&str>,
    label_selector: Option<&str>,
    page_size: u32,
    mut on_page: impl FnMut(Vec<T>),
) -> Result<usize, WorkflowError> {
    let mut continue_token: Option<String> = None;
    let mut requests = 0;
    loop {
        let mut uri = format!("{collection}?limit={page_size}");
        if let Some(f) = field_selector.filter(|f| !f.is_empty()) {
            uri.push_str(&format!("&fieldSelector={}", encode_query(f)));
        }
        if let Some(l) = label_selector.filter(|l| !l.is_empty()) {
            uri.push_str(&format!("&labelSelector={}", encode_query(l)));
        }
        if let Some(c) = &continue_token {
            uri.push_str(&format!("&continue={}", encode_query(c)));
        }
        let request = http::Request::get(&uri)
            .body(Vec::new())
            .map_err(|e| WorkflowError::Input(e.to_string()))?;
        let page: ViewList<T> = client
            .request(request)
            .await
            .map_err(|e| api_error(e, &format!("listing {collection}")))?;
        requests += 1;
        on_page(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => continue_token = Some(c),
            None => return Ok(requests),
        }
    }
}
