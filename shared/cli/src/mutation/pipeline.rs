//! The one path every change to nodes takes — set, remove, import, dedicate, release and
//! rollback alike: plan blockers → policy checks ([`placekit_lint::checks`]) → show → confirm →
//! snapshot → conditional write ([`placekit_client::executor`]) → report.

use crate::output::PrintReport as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::CommandError;
use crate::ui::{DryRun, MutationArgs, Ui};
use placekit_client::api;
use placekit_client::connect::Connection;
use placekit_client::executor::{
    ExecutorConfig, JournalFailure, KubeNodeWriter, NodeOutcome, WriteItem, execute,
};
use placekit_client::interrupt::Interrupt;
use placekit_core::cluster::ClusterIdentity;
use placekit_core::plan::NodePlan;
use placekit_core::snapshot::{Journal, SnapshotHeader, SnapshotStore};
use placekit_core::text::shell_quote;

use super::report::render_plan;
use crate::output::v1::change::{NodeReport, Outcome, Report, ReportedFinding, Standing};
use placekit_lint::checks::{self, ChangeView, Finding, Findings};

/// What a mutating command is, besides its plans.
#[derive(Debug, Clone)]
pub struct Mutation<'a> {
    /// `kubectl-nodelabel` / `kubectl-gpu_taint`: recorded in snapshots.
    pub tool: &'a str,
    /// How users type the tool (`kubectl nodelabel`), for the printed follow-up commands.
    pub command: &'a str,
    pub operation: &'a str,
    pub args: &'a MutationArgs,
    /// `--ignore-dependents`: go on despite blocking dependents (they are shown as warnings).
    pub ignore_dependents: bool,
    /// `--ignore-disruption-budgets`: go on despite evictions budgets do not allow.
    pub ignore_disruption_budgets: bool,
    /// `--ignore-gpu-pods`: go on although the GPU operator would take GPUs from pods.
    pub ignore_gpu_pods: bool,
    /// `--ignore-taint-owner` (`release`): remove a taint although a controller owns it.
    pub ignore_taint_owner: bool,
    /// The command's own findings (a GPU preflight, a rollback's conflicts).
    pub findings: Findings,
    /// Reported problems that make the command exit 1 whatever the writes do.
    pub problems: Vec<String>,
    /// Set for a rollback: the snapshot it undoes.
    pub rollback_of: Option<PathBuf>,
    /// Set for a rollback: what it undoes (command, time, context, nodes), named in the
    /// confirmation so that pressing y twice never walks silently into an older change.
    pub undoes: Option<String>,
    /// The cluster's identity, when the command already read it.
    pub cluster: Option<ClusterIdentity>,
}

impl<'a> Mutation<'a> {
    /// Sets the policy overrides the user gave.
    pub fn apply_overrides(&mut self, overrides: crate::overrides::PolicyOverrides) {
        self.ignore_dependents = overrides.ignore_dependents;
        self.ignore_gpu_pods = overrides.ignore_gpu_pods;
    }

    pub fn new(
        tool: &'a str,
        command: &'a str,
        operation: &'a str,
        args: &'a MutationArgs,
    ) -> Self {
        Mutation {
            tool,
            command,
            operation,
            args,
            ignore_dependents: false,
            ignore_disruption_budgets: false,
            ignore_gpu_pods: false,
            ignore_taint_owner: false,
            findings: Findings::default(),
            problems: Vec::new(),
            rollback_of: None,
            undoes: None,
            cluster: None,
        }
    }
}

/// Reads what the policy checks of `plans` need from the cluster, once, before any of them
/// judges: the workloads when a label changes or a restrictive taint is added; the active
/// pods of the nodes a taint or a GPU-operator key changes; the GPU operator's objects for
/// its keys; every node for an added taint; the disruption budgets (and their namespaces'
/// pods) for a NoExecute eviction. What cannot be read and is not needed to decide is a
/// warning in the view.
async fn gather(conn: &Connection, plans: &[NodePlan]) -> Result<ChangeView, CommandError> {
    let needs = checks::ViewNeeds::of(plans);
    let mut view = ChangeView::default();
    if needs.workloads {
        let changed: Vec<String> = plans.iter().map(|p| p.node().to_string()).collect();
        let (workloads, unreadable) =
            crate::workloads::list_workloads(&conn.client, None, Some(&changed)).await?;
        view.workloads = workloads;
        view.unreadable.extend(unreadable);
    }
    if !needs.pods_on.is_empty() {
        view.pods = api::active_pods_on(&conn.client, &needs.pods_on).await?;
    }
    if needs.gpu_operator {
        let (operator, unreadable) = api::gpu_operator_view(&conn.client).await?;
        view.gpu_operator = operator;
        view.unreadable.extend(unreadable);
    }
    if needs.all_nodes {
        view.all_nodes =
            api::fetch_nodes(&conn.client, &placekit_client::targets::Targets::All).await?;
    }
    if !needs.kueue_tas_on.is_empty() {
        let (listed, workloads) =
            api::kueue_tas_workloads_on(&conn.client, &needs.kueue_tas_on).await?;
        if let api::Listed::Forbidden(reason) = listed {
            view.unreadable.push(format!(
                "cannot list Kueue workloads ({reason}): whether Kueue's topology-aware scheduling moves or evicts a workload placed on the nodes is not checked"
            ));
        }
        view.kueue_tas = workloads;
    }
    if needs.declared_taints {
        let (declared, unreadable) = api::declared_taints(&conn.client).await?;
        view.declared_taints = declared;
        view.unreadable.extend(unreadable);
    }
    // Where evicted pods' replacements go is judged over the whole cluster: read only when
    // a controller replaces one (two paged lists, nodes and active pods).
    if needs.replaced_evictions(&view.pods) {
        view.cluster = Some(crate::pending::cluster_state(conn).await?.0);
        // A replacement keeps its pod's claims: their volumes (a node-local one above all)
        // decide where it can go. One paged list each, as why-pending reads them.
        if let Some(namespace) = needs.replaced_claims(&view.pods) {
            let storage = crate::pending::read_storage(conn, namespace.as_deref()).await?;
            view.unreadable.extend(storage.unreadable.iter().map(|u| {
                format!("{u}: where the replacements of evicted pods with claims go is not judged")
            }));
            view.storage = Some(storage);
        }
    }
    let evicted_namespaces = needs.evicted_namespaces(&view.pods);
    if !evicted_namespaces.is_empty() {
        view.budgets = disruption_budgets(conn, &evicted_namespaces).await?;
    }
    Ok(view)
}

/// The PodDisruptionBudgets of `namespaces` (one paged list), with the active pods of each
/// namespace where one is (to judge a budget the disruption controller has not processed);
/// `Unreadable` when the budgets may not be listed.
async fn disruption_budgets(
    conn: &Connection,
    namespaces: &[String],
) -> Result<checks::Budgets, CommandError> {
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    let budgets = match api::list_all(
        &kube::Api::<PodDisruptionBudget>::all(conn.client.clone()),
        None,
        "listing poddisruptionbudgets",
    )
    .await
    {
        Ok(b) => b,
        Err(e) if e.is_forbidden() => {
            return Ok(checks::Budgets::Unreadable(crate::error::client_message(
                &e,
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let budgets: Vec<PodDisruptionBudget> = budgets
        .into_iter()
        .filter(|b| {
            namespaces
                .iter()
                .any(|n| Some(n.as_str()) == b.metadata.namespace.as_deref())
        })
        .collect();
    let mut pods = Vec::new();
    let mut listed: Vec<&str> = Vec::new();
    for b in &budgets {
        let ns = b.metadata.namespace.as_deref().unwrap_or_default();
        if listed.contains(&ns) {
            continue;
        }
        listed.push(ns);
        api::for_each_page(
            &conn.client,
            &format!("/api/v1/namespaces/{ns}/pods"),
            Some("status.phase!=Succeeded,status.phase!=Failed"),
            None,
            api::POD_PAGE,
            |page: Vec<placekit_core::model::Pod>| pods.extend(page),
        )
        .await?;
    }
    Ok(checks::Budgets::Read { budgets, pods })
}

/// Whether a change goes on, given its policy findings and the overrides given.
#[derive(Debug)]
enum Decision {
    /// Nothing is written: `message` says why and the command that goes on anyway.
    Stop {
        message: String,
        warnings: Vec<String>,
        reported: Vec<ReportedFinding>,
    },
    /// The change goes on with these warnings (overridden blockers among them).
    Go {
        warnings: Vec<String>,
        reported: Vec<ReportedFinding>,
    },
}

/// Weighs the findings: what no override allows stops the change; each kind of blocking
/// finding stops it unless its override was given (then it is a warning, reported as
/// overridden). Every kind that stops is named at once, with the warnings, so that
/// overriding one never reveals another; the message ends with the command to run with
/// every flag needed.
fn decide(mut findings: Findings, mutation: &Mutation<'_>) -> Decision {
    if !findings.refused.is_empty() {
        let refused = std::mem::take(&mut findings.refused);
        let warnings = texts(&findings.warnings);
        let message = format!(
            "nothing was changed; {} refused change{}:\n  {}",
            refused.len(),
            if refused.len() == 1 { "" } else { "s" },
            texts(&refused).join("\n  ")
        );
        let mut reported = ReportedFinding::all(Standing::Refused, None, refused);
        reported.extend(ReportedFinding::all(
            Standing::Warning,
            None,
            findings.warnings,
        ));
        return Decision::Stop {
            message,
            warnings,
            reported,
        };
    }
    let overridable = [
        (
            std::mem::take(&mut findings.budget_blocking),
            mutation.ignore_disruption_budgets,
            "--ignore-disruption-budgets",
            "the taint would evict pods their PodDisruptionBudgets do not allow to go now",
            "to evict them anyway",
        ),
        (
            std::mem::take(&mut findings.blocking),
            mutation.ignore_dependents,
            "--ignore-dependents",
            "workloads depend on the labels or taints being changed",
            "to change them anyway",
        ),
        (
            std::mem::take(&mut findings.gpu_blocking),
            mutation.ignore_gpu_pods,
            "--ignore-gpu-pods",
            "the GPU operator would take GPUs from pods running on the node",
            "to change them anyway",
        ),
        (
            std::mem::take(&mut findings.owner_blocking),
            mutation.ignore_taint_owner,
            "--ignore-taint-owner",
            "a controller owns the taint being removed",
            "to remove it anyway",
        ),
    ];
    let mut stopped: Vec<(Vec<Finding>, &str, &str, &str)> = Vec::new();
    let mut overridden: Vec<(Finding, &str)> = Vec::new();
    for (blocking, given, flag, what, anyway) in overridable {
        if blocking.is_empty() {
            continue;
        }
        if given {
            overridden.extend(blocking.into_iter().map(|b| (b, flag)));
        } else {
            stopped.push((blocking, flag, what, anyway));
        }
    }
    let mut warnings = texts(&findings.warnings);
    warnings.extend(
        overridden
            .iter()
            .map(|(b, flag)| format!("{b} ({flag} given)")),
    );
    let mut reported: Vec<ReportedFinding> = overridden
        .into_iter()
        .map(|(b, flag)| ReportedFinding::new(Standing::Overridden, Some(flag), b))
        .collect();
    reported.extend(ReportedFinding::all(
        Standing::Warning,
        None,
        findings.warnings,
    ));
    if stopped.is_empty() {
        return Decision::Go { warnings, reported };
    }
    let flags: Vec<&str> = stopped.iter().map(|(_, flag, _, _)| *flag).collect();
    let anyway = if stopped.len() == 1 {
        stopped[0].3
    } else {
        "to go on despite all of them"
    };
    let groups: Vec<String> = stopped
        .iter()
        .map(|(blocking, _, what, _)| format!("{what}:\n  {}", texts(blocking).join("\n  ")))
        .collect();
    let message = format!(
        "nothing was changed: {}\n{anyway}: {}",
        groups.join("\nand "),
        crate::ui::rerun_with_all(mutation.command, &flags)
    );
    let mut blocking: Vec<ReportedFinding> = stopped
        .into_iter()
        .flat_map(|(blocking, flag, _, _)| {
            ReportedFinding::all(Standing::Blocking, Some(flag), blocking)
        })
        .collect();
    blocking.append(&mut reported);
    Decision::Stop {
        message,
        warnings,
        reported: blocking,
    }
}

/// Writes the snapshot of the nodes about to change (their values before, the command,
/// the cluster), in the state directory or at `--backup`: the journal the writes record
/// their outcomes in.
fn take_snapshot(
    conn: &Connection,
    mutation: &Mutation<'_>,
    cluster: &ClusterIdentity,
    changing: &[NodePlan],
) -> Result<Journal, CommandError> {
    let mut header = SnapshotHeader::new(
        mutation.tool,
        env!("CARGO_PKG_VERSION"),
        &conn.context,
        cluster,
        // `--token` on the command line is a credential like the kubeconfig's.
        std::env::args()
            .map(|a| placekit_client::secrets::redact(&a))
            .collect(),
        mutation.operation,
        changing,
    );
    header.rollback_of = mutation
        .rollback_of
        .as_ref()
        .map(|p| p.display().to_string());
    let store = SnapshotStore::new(SnapshotStore::default_dir()?);
    Ok(
        match mutation.args.backup.as_deref().filter(|p| !p.is_empty()) {
            Some(path) => store.create_at(Path::new(path), &header)?,
            None => store.create(&header)?,
        },
    )
}

fn dry_run_name(dry_run: DryRun) -> &'static str {
    match dry_run {
        DryRun::None => "none",
        DryRun::Client => "client",
        DryRun::Server => "server",
    }
}

/// Shows the plans, checks them, asks, snapshots, writes and reports. Blocked plans and
/// blocking findings stop everything before any write; unchanged nodes are reported and
/// not written.
///
/// Long on purpose: the steps share the report being built and their order is the safety
/// contract (nothing written before the snapshot; a signal counted, not fatal, only from
/// there). Each step that stands alone is its own function: `gather`, `decide`, `confirm`,
/// `preflight_warnings`, `take_snapshot`, and the executor.
pub async fn apply(
    conn: &Connection,
    ui: &Ui,
    plans: Vec<NodePlan>,
    mut mutation: Mutation<'_>,
) -> Result<Report, CommandError> {
    let blocked: Vec<String> = plans
        .iter()
        .flat_map(|p| {
            p.blockers
                .iter()
                .map(move |b| format!("node/{}: {b}", p.node()))
        })
        .collect();
    if !blocked.is_empty() {
        let message = format!(
            "nothing was changed; {} blocking problem{}:\n  {}",
            blocked.len(),
            if blocked.len() == 1 { "" } else { "s" },
            blocked.join("\n  ")
        );
        return blocked_report(ui, &mutation, &plans, message);
    }
    let (changing, unchanged): (Vec<NodePlan>, Vec<NodePlan>) =
        plans.into_iter().partition(|p| !p.is_noop());

    let mut findings = std::mem::take(&mut mutation.findings);
    // Everything the checks need is read first; then they judge, without the cluster.
    let view = gather(conn, &changing).await?;
    findings.extend(checks::judge(&changing, &view));
    // Every plan, for the report of a stopped change (copied only then).
    let all = || -> Vec<NodePlan> { changing.iter().chain(&unchanged).cloned().collect() };
    // The evictions to confirm go to the prompt; the rest is weighed now.
    let evictions = findings.confirm.take();
    let (warnings, reported) = match decide(findings, &mutation) {
        Decision::Stop {
            message,
            warnings,
            reported,
        } => {
            warn_beside_refusal(ui, &warnings);
            return blocked_report_with(ui, &mutation, &all(), message, warnings, reported);
        }
        Decision::Go { warnings, reported } => (warnings, reported),
    };

    let dry_run = mutation.args.dry_run;
    let mut report = Report {
        operation: mutation.operation.into(),
        dry_run: dry_run_name(dry_run).into(),
        snapshot: None,
        rollback_command: None,
        overwrite_command: None,
        nodes: unchanged
            .iter()
            .map(|p| NodeReport::of(p, Outcome::Unchanged, None))
            .collect(),
        warnings,
        problems: std::mem::take(&mut mutation.problems),
        interrupted: None,
        findings: reported,
    };
    for p in changing.iter().chain(&unchanged) {
        // A taint left because its value differs is the command's problem, reported once
        // there (`Mutation::problems`), not also as a warning.
        for note in p.notes.iter().filter(|n| !n.is_problem()) {
            report.warnings.push(format!("node/{}: {note}", p.node()));
        }
    }

    let left = unchanged.iter().filter(|p| left_as_is(p).is_some()).count();
    let plan_text = render_plan(ui, &changing, unchanged.len() - left, left);
    if !ui.output.is_structured() {
        print!("{plan_text}");
        for w in &report.warnings {
            ui.warn(w);
        }
    } else if needs_asking(ui, &mutation) && !changing.is_empty() {
        // The report goes to stdout once the run is over; the plan being confirmed is
        // shown now, on stderr.
        eprint!("{plan_text}");
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
        report.nodes.extend(
            changing
                .iter()
                .map(|p| NodeReport::of(p, Outcome::Planned, None)),
        );
        if !ui.output.is_structured() {
            println!("dry run (client): nothing was sent to the cluster");
        }
        return Ok(report);
    }

    api::check_permission(&conn.client, "patch", "nodes", "").await?;
    confirm(ui, &mutation, evictions.as_deref(), changing.len())?;
    let writer = KubeNodeWriter::new(conn.client.clone(), mutation.args.field_manager.clone());
    let items: Vec<WriteItem> = changing.iter().map(WriteItem::from_plan).collect();
    let config = ExecutorConfig {
        concurrency: usize::from(mutation.args.concurrency),
        dry_run: dry_run == DryRun::Server,
        ..ExecutorConfig::default()
    };
    if dry_run == DryRun::None && crate::outcome::warnings_are_errors() {
        preflight_warnings(&writer, &items, &config).await?;
    }

    let cluster = match (&mutation.cluster, dry_run) {
        (Some(c), _) => Some(c.clone()),
        (None, DryRun::None) => Some(api::cluster_identity(conn).await),
        (None, _) => None,
    };
    // From here on a signal is counted, not fatal: a kill between the snapshot and the
    // report would leave a temporary file, writes unrecorded and nothing said. (Not
    // earlier: before this point nothing is written and Ctrl-C simply ends the command.)
    let interrupt = Arc::new(Interrupt::default());
    let listener = interrupt.listen(say_signal);
    let mut journal = None;
    if let Some(cluster) = cluster.filter(|_| dry_run == DryRun::None) {
        let j = take_snapshot(conn, &mutation, &cluster, &changing)?;
        report.snapshot = Some(j.path().to_path_buf());
        if !ui.output.is_structured() {
            eprintln!("snapshot written to {}", j.path().display());
        }
        journal = Some(j);
    }

    let bar = ui.progress_bar(items.len() as u64, mutation.operation);
    let execution = execute(
        &writer,
        &items,
        &config,
        journal.as_mut(),
        &interrupt,
        |_: &NodeOutcome| bar.inc(1),
    )
    .await;
    bar.finish_and_clear();
    listener.abort();
    drop(journal);
    report.interrupted = interrupt.signal().map(str::to_string);
    if let (Some(failure), Some(path)) = (&execution.journal_failure, &report.snapshot) {
        report.problems.push(journal_failure_problem(failure, path));
    }

    for (plan, outcome) in changing.iter().zip(&execution.outcomes) {
        let reported = match (Outcome::from(outcome.kind), dry_run) {
            (Outcome::Applied, DryRun::Server) => Outcome::Planned,
            (o, _) => o,
        };
        report
            .nodes
            .push(NodeReport::of(plan, reported, outcome.message.clone()));
    }
    report.nodes.sort_by(|a, b| a.name.cmp(&b.name));
    if dry_run == DryRun::Server && !ui.output.is_structured() {
        println!("dry run (server): the API server validated every write and persisted nothing");
    }
    // The undo command is printed only when there may be something to undo.
    let maybe_changed = report
        .nodes
        .iter()
        .any(|n| matches!(n.outcome, Outcome::Applied | Outcome::Unknown));
    if let (true, Some(path)) = (maybe_changed && dry_run == DryRun::None, &report.snapshot) {
        report.rollback_command = Some(format!(
            "{} rollback {}",
            mutation.command,
            shell_quote(&path.display().to_string())
        ));
    }
    // If the terminal or the reader of the report is gone (Ctrl-C in `... | jq` stops jq
    // too), the exit code still says what happened.
    crate::ui::exit_code_if_output_breaks(report.exit_code());
    Ok(report)
}

/// What the report says when the journal could not be written: the run stopped starting
/// writes, and rollback checks the nodes the journal is missing against the cluster.
fn journal_failure_problem(failure: &JournalFailure, snapshot: &Path) -> String {
    if !failure.during_writes {
        return format!(
            "the snapshot journal {} could not be flushed to disk ({}): every outcome was written to it, but a machine crash now could lose the last ones (rollback compares every node with the cluster anyway)",
            snapshot.display(),
            failure.error
        );
    }
    let missing = match failure.unrecorded.len() {
        0 => String::new(),
        n => format!(
            "; {n} outcome{} missing from it ({}) — this report has them all, and rollback compares those nodes with the cluster",
            if n == 1 { " is" } else { "s are" },
            failure.unrecorded.join(", ")
        ),
    };
    format!(
        "the snapshot journal {} could not be written ({}), so no further write was started{missing}",
        snapshot.display(),
        failure.error
    )
}

/// Why an unchanged node was left as it is on purpose (a taint to release that has another
/// value), or `None` when it simply is as requested.
fn left_as_is(plan: &NodePlan) -> Option<String> {
    plan.notes
        .iter()
        .find(|n| n.is_problem())
        .map(ToString::to_string)
}

/// Whether the command will ask on the terminal before writing.
fn needs_asking(ui: &Ui, mutation: &Mutation<'_>) -> bool {
    ui.interactive && !mutation.args.yes && mutation.args.dry_run == DryRun::None
}

/// A change that plans or policy checks blocked: an error for text output; with `-o
/// json|yaml` also a ChangeReport on stdout (nothing written, the blocking problems in
/// `problems`), so a script reading the report sees why.
fn blocked_report(
    ui: &Ui,
    mutation: &Mutation<'_>,
    plans: &[NodePlan],
    message: String,
) -> Result<Report, CommandError> {
    blocked_report_with(ui, mutation, plans, message, Vec::new(), Vec::new())
}

/// The words of `findings`, as the text output and the report's `warnings` say them.
fn texts(findings: &[Finding]) -> Vec<String> {
    findings.iter().map(ToString::to_string).collect()
}

/// The warnings of a change that is refused or blocked, shown before the refusal (on
/// stderr; in the JSON report's `warnings`): the admin sees everything the change would
/// do before deciding on an override.
fn warn_beside_refusal(ui: &Ui, warnings: &[String]) {
    if !ui.output.is_structured() {
        for w in warnings {
            ui.warn(w);
        }
    }
}

fn blocked_report_with(
    ui: &Ui,
    mutation: &Mutation<'_>,
    plans: &[NodePlan],
    message: String,
    warnings: Vec<String>,
    findings: Vec<ReportedFinding>,
) -> Result<Report, CommandError> {
    if ui.output.is_structured() {
        ui.print_report(&Report {
            operation: mutation.operation.into(),
            dry_run: dry_run_name(mutation.args.dry_run).into(),
            snapshot: None,
            rollback_command: None,
            overwrite_command: None,
            nodes: plans
                .iter()
                .map(|p| match p.is_noop() && p.blockers.is_empty() {
                    true => NodeReport::of(p, Outcome::Unchanged, None),
                    false => NodeReport::of(
                        p,
                        Outcome::NotAttempted,
                        Some("blocked: nothing was written".into()),
                    ),
                })
                .collect(),
            warnings,
            // One entry per problem, as scripts read them, not one text with line breaks.
            problems: message
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
            interrupted: None,
            findings,
        });
    }
    Err(CommandError::Blocked(message))
}

/// Asks for confirmation (or refuses without a terminal and `--yes`).
fn confirm(
    ui: &Ui,
    mutation: &Mutation<'_>,
    evictions: Option<&str>,
    nodes: usize,
) -> Result<(), CommandError> {
    if mutation.args.dry_run != DryRun::None || mutation.args.yes {
        return Ok(());
    }
    let what = match &mutation.undoes {
        Some(undoes) => format!(
            "{} to undo {undoes}",
            placekit_core::text::count(nodes, "node")
        ),
        None => placekit_core::text::count(nodes, "node"),
    };
    if !ui.interactive {
        return Err(CommandError::NeedsConfirmation(match evictions {
            Some(extra) => format!("{what} ({extra})"),
            None => what,
        }));
    }
    // What `confirm` stands for (evictions) was just printed as a warning: not again.
    let question = match (evictions, &mutation.undoes) {
        (Some(_), _) => format!("Apply the change to {what}, evictions included (see above)?"),
        (None, Some(undoes)) => format!(
            "Undo {undoes} (writing {})?",
            placekit_core::text::count(nodes, "node")
        ),
        (None, None) => format!("Apply the change to {what}?"),
    };
    // `undoes` quotes a snapshot: escaped like every string the prompt shows.
    if ui.confirm(&placekit_core::text::escaped(&question)) {
        Ok(())
    } else {
        Err(CommandError::Declined)
    }
}

/// `--warnings-as-errors` on a write: the same patches sent with `dryRun=All` first, so a
/// warning the server gives the change (an admission policy in Warn mode) stops the
/// command before anything is written, not after.
async fn preflight_warnings(
    writer: &KubeNodeWriter,
    items: &[WriteItem],
    config: &ExecutorConfig,
) -> Result<(), CommandError> {
    let config = ExecutorConfig {
        dry_run: true,
        ..config.clone()
    };
    // Not interruptible beyond Ctrl-C's default: nothing is written here.
    let interrupt = Interrupt::default();
    execute(
        writer,
        items,
        &config,
        None,
        &interrupt,
        |_: &NodeOutcome| {},
    )
    .await;
    match crate::outcome::failing_warnings() {
        Some(n) => Err(CommandError::Blocked(format!(
            "the API server sent {} about this change (--warnings-as-errors); nothing was written",
            placekit_core::text::count(n, "warning")
        ))),
        None => Ok(()),
    }
}

/// What a signal caught during the writes does, said on stderr as it arrives. Never panics:
/// after a hangup the terminal answers writes with EIO.
fn say_signal(name: &'static str, count: usize) {
    use std::io::Write;
    let _ = if count == 1 {
        writeln!(
            std::io::stderr(),
            "{name}: finishing the writes in flight (one more attempt each), starting no new ones; send it again to stop waiting"
        )
    } else {
        writeln!(
            std::io::stderr(),
            "{name} (a second signal): not waiting for the writes in flight; they are recorded as unknown for rollback to check"
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use placekit_lint::checks::Check;

    fn finding(text: &str) -> Finding {
        Finding::new(Check::Dependents, text)
    }

    fn weigh(findings: Findings, ignore_dependents: bool) -> Decision {
        let args = MutationArgs::default();
        let mut mutation = Mutation::new("kubectl-nodelabel", "kubectl nodelabel", "remove", &args);
        mutation.ignore_dependents = ignore_dependents;
        decide(findings, &mutation)
    }

    #[test]
    fn a_blocking_finding_stops_the_change_unless_its_override_is_given() {
        let findings = Findings {
            blocking: vec![finding("Deployment ml/a requires x")],
            warnings: vec![finding("a warning")],
            ..Findings::default()
        };
        match weigh(findings.clone(), false) {
            Decision::Stop {
                message, reported, ..
            } => {
                assert!(message.starts_with("nothing was changed: workloads depend on the labels or taints being changed:\n  Deployment ml/a requires x\nto change them anyway: "), "{message}");
                assert!(message.ends_with(" --ignore-dependents"), "{message}");
                assert_eq!(reported[0].standing, Standing::Blocking);
                assert_eq!(
                    reported[0].override_flag.as_deref(),
                    Some("--ignore-dependents")
                );
                assert_eq!(reported[1].standing, Standing::Warning);
            }
            go => panic!("{go:?}"),
        }
        match weigh(findings, true) {
            Decision::Go { warnings, reported } => {
                assert_eq!(
                    warnings,
                    [
                        "a warning",
                        "Deployment ml/a requires x (--ignore-dependents given)"
                    ]
                );
                assert_eq!(reported[0].standing, Standing::Overridden);
            }
            stop => panic!("{stop:?}"),
        }
    }

    #[test]
    fn a_refused_change_stops_whatever_the_overrides() {
        let findings = Findings {
            refused: vec![finding("node/n: karpenter.sh/nodepool: owned")],
            blocking: vec![finding("blocked too")],
            ..Findings::default()
        };
        match weigh(findings, true) {
            Decision::Stop { message, .. } => assert_eq!(
                message,
                "nothing was changed; 1 refused change:\n  node/n: karpenter.sh/nodepool: owned"
            ),
            go => panic!("{go:?}"),
        }
    }

    #[test]
    fn every_kind_that_stops_is_named_at_once() {
        let findings = Findings {
            blocking: vec![finding("a dependent")],
            budget_blocking: vec![finding("a budget")],
            ..Findings::default()
        };
        match weigh(findings, false) {
            Decision::Stop { message, .. } => {
                assert!(message.contains("\nand workloads depend"), "{message}");
                assert!(
                    message.contains("to go on despite all of them: "),
                    "{message}"
                );
                assert!(
                    message.ends_with("--ignore-disruption-budgets --ignore-dependents"),
                    "{message}"
                );
            }
            go => panic!("{go:?}"),
        }
    }
}
