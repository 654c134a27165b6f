//! Undo: `rollback` (exact-match, through the same pipeline as every change), and the
//! snapshot history it walks: `history` and `show`.
//!
//! Undo is one stack per cluster, across both plugins: `rollback --last` takes the newest
//! snapshot taken on *this cluster* (by identity, not context name) that is not itself a
//! rollback and not fully rolled back ([`SnapshotStore::last_undoable`]), so repeated
//! `--last` walks back through history; when the other plugin made it, `--last` stops and
//! names it. A rollback that left only keys others changed since counts as done. A
//! snapshot named by path that was taken on another cluster is refused unless
//! `--other-cluster`.

use crate::output::PrintReport as _;
use serde::Serialize;

use crate::error::CommandError;
use crate::ui::{MutationArgs, Ui};
use placekit_client::api;
use placekit_client::connect::{Connection, ConnectionArgs};
use placekit_core::exit;
use placekit_core::rollback::{
    NodeRollback, RollbackConflict, plan_node_rollback, restore_problems, restore_warnings,
};
use placekit_core::snapshot::{
    ClusterIdentity, Journal, JournalRecord, OutcomeKind, Snapshot, SnapshotStore, Unreadable,
    now_rfc3339,
};

use super::pipeline::{self, Mutation};
use crate::output::v1::HistoryEntry;
use crate::output::v1::change::{NodeReport, Outcome, Report};
use crate::output::v1::{SnapshotHistory, SnapshotPage};
use crate::overrides::{RollbackOverrides, RollbackSettings};
use placekit_client::targets::Targets;
use placekit_core::text::shell_quote;
use placekit_lint::checks::{Check, Finding, Findings};

/// Which snapshot a `rollback` or `show` names.
#[derive(Debug, Clone, Copy)]
pub enum SnapshotChoice<'a> {
    Path(&'a str),
    Last,
}

impl<'a> SnapshotChoice<'a> {
    /// From `[SNAPSHOT | --last]`.
    pub fn from_args(path: Option<&'a str>, last: bool) -> Result<Self, CommandError> {
        match (path, last) {
            (Some(p), false) => Ok(SnapshotChoice::Path(p)),
            (None, true) => Ok(SnapshotChoice::Last),
            (Some(_), true) => Err(CommandError::Input(
                "give a SNAPSHOT path or --last, not both".into(),
            )),
            (None, false) => Err(CommandError::Input("give a SNAPSHOT path or --last".into())),
        }
    }

    fn load(self, tool: &str, cluster: &ClusterIdentity) -> Result<Snapshot, CommandError> {
        Ok(match self {
            // Absolute, so the `RolledBack` and `rollbackOf` records match the index's paths.
            SnapshotChoice::Path(p) => Snapshot::load(&resolve_snapshot(p)?)?,
            SnapshotChoice::Last => {
                let top = SnapshotStore::new(SnapshotStore::default_dir()?)
                    .last_undoable(tool, cluster)?;
                // One stack per cluster: the other plugin's newer change is named, never
                // skipped silently.
                if top.header.tool != tool {
                    return Err(CommandError::UndoOrder(format!(
                        "the newest change on this cluster not yet undone was made by kubectl {}: `{}` of {} on context {}, {}; undo it first with `kubectl {} rollback --last` (or name an older snapshot of this plugin: see `kubectl {} history`); nothing was changed",
                        placekit_core::snapshot::plugin_name(&top.header.tool),
                        top.header.user_command(),
                        top.header.created_at,
                        top.header.context,
                        placekit_core::text::count(top.header.nodes.len(), "node"),
                        placekit_core::snapshot::plugin_name(&top.header.tool),
                        placekit_core::snapshot::plugin_name(tool),
                    )));
                }
                top
            }
        })
    }
}

fn conflict_warning(node: &str, c: &RollbackConflict, overwrite_command: &str) -> String {
    let shown = placekit_core::plan::quoted_or_absent;
    format!(
        "node/{node}: {} is {}, but the snapshot's command set {}: someone changed it since{}",
        c.item,
        shown(&c.found),
        shown(&c.expected),
        if c.forced {
            "; restoring anyway (--overwrite-changes)".to_string()
        } else {
            format!("; left alone (`{overwrite_command}` restores it)")
        }
    )
}

/// What `rollback` is asked: which snapshot, which of its nodes, with which overrides.
#[derive(Debug, Clone)]
pub struct RollbackRequest<'a> {
    pub choice: SnapshotChoice<'a>,
    /// `NODE...` or `-l SEL`; `None`: every node of the snapshot.
    pub only: Option<Targets>,
    pub overrides: RollbackSettings,
}

/// `rollback`'s arguments, the same in both plugins.
#[derive(Debug, Clone, clap::Args)]
pub struct RollbackArgs {
    /// The snapshot file (see `history`).
    #[arg(value_name = "SNAPSHOT")]
    pub snapshot: Option<String>,
    /// Restore only these nodes of the snapshot (NAME or node/NAME).
    #[arg(value_name = "NODE")]
    pub nodes: Vec<String>,
    /// Restore only the snapshot's nodes that match this label selector now.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// The newest change on the current context's cluster, by either plugin, that is not a
    /// rollback and not yet rolled back (repeat it to walk back through history).
    #[arg(long)]
    pub last: bool,
    #[command(flatten)]
    pub overrides: RollbackOverrides,
}

impl RollbackArgs {
    /// Resolves the arguments before any work: with `--last`, every positional word is a
    /// node.
    pub fn request(&self) -> Result<RollbackRequest<'_>, CommandError> {
        let overrides = self.overrides.resolve()?;
        let (path, nodes): (Option<&str>, Vec<String>) = match (self.last, &self.snapshot) {
            (true, Some(first)) => (
                None,
                std::iter::once(first.clone())
                    .chain(self.nodes.iter().cloned())
                    .collect(),
            ),
            _ => (self.snapshot.as_deref(), self.nodes.clone()),
        };
        let choice = SnapshotChoice::from_args(path, self.last)?;
        let only = if nodes.is_empty() && self.selector.is_none() {
            None
        } else {
            Some(Targets::from_args_without_all_flag(
                nodes,
                self.selector.as_deref(),
                false,
            )?)
        };
        Ok(RollbackRequest {
            choice,
            only,
            overrides,
        })
    }
}

/// `rollback [SNAPSHOT | --last] [NODE... | -l SEL]`: restores what a snapshot changed,
/// exactly (see [`placekit_core::rollback`]), on every node of the snapshot or only `only`, and
/// records in the original snapshot that (and whether fully) it was rolled back.
///
/// Partial (the snapshot stays on top of the undo stack): a write that failed, was not
/// attempted or has an unknown outcome, or a node outside `only` that still differs from
/// the snapshot. Keys someone changed since and that the rollback left alone do not make
/// it partial: they are recorded as left alone, listed by `history`/`show`, and
/// `rollback SNAPSHOT --overwrite-changes` restores them.
///
/// Long on purpose: one sequence (read the snapshot and the nodes, plan, judge conflicts,
/// confirm, write, record the outcome), each step the next one's input.
pub async fn rollback(
    conn: &Connection,
    ui: &Ui,
    tool: &str,
    command: &str,
    request: RollbackRequest<'_>,
    args: &MutationArgs,
) -> Result<Report, CommandError> {
    let RollbackRequest {
        choice,
        only,
        overrides,
    } = request;
    let cluster = api::cluster_identity(conn).await;
    let snapshot = choice.load(tool, &cluster)?;
    // A hand-edited snapshot is refused before any write, not half restored.
    let problems: Vec<String> = snapshot
        .header
        .nodes
        .iter()
        .flat_map(restore_problems)
        .collect();
    if !problems.is_empty() {
        return Err(CommandError::Input(format!(
            "the snapshot {} holds values the API server refuses (edited by hand?): {}; nothing was changed",
            snapshot.path.display(),
            problems.join("; ")
        )));
    }
    let taken_on = snapshot.header.cluster();
    if !overrides.other_cluster && !taken_on.same_cluster(&cluster) {
        return Err(CommandError::OtherCluster {
            snapshot: snapshot.path.display().to_string(),
            taken_on: taken_on.to_string(),
            context: conn.context.clone(),
            current: cluster.to_string(),
        });
    }
    let selected = selected_nodes(conn, &snapshot, only.as_ref()).await?;
    let overwrite_command = format!(
        "{command} rollback {} --overwrite-changes",
        shell_quote(&snapshot.path.display().to_string())
    );
    let names = snapshot
        .header
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .collect();
    let current = api::read_nodes(&conn.client, names).await?;

    let mut plans = Vec::new();
    let mut conflicts_by_node: Vec<(String, Vec<RollbackConflict>)> = Vec::new();
    let mut skipped = Vec::new();
    // Nodes outside the selection that still have something to restore.
    let mut not_selected_left = 0;
    let mut findings = Findings::default();
    for (node, (_, now)) in snapshot.header.nodes.iter().zip(&current) {
        let rollback = plan_node_rollback(
            node,
            snapshot.outcome_of(&node.name),
            now.as_ref(),
            overrides.overwrite_changes,
        );
        if !selected.as_ref().is_none_or(|s| s.contains(&node.name)) {
            if matches!(&rollback, NodeRollback::Restore { plan, .. } if !plan.is_noop()) {
                not_selected_left += 1;
            }
            continue;
        }
        findings.warn_all(Check::Command, restore_warnings(node));
        match rollback {
            NodeRollback::Restore { plan, conflicts } => {
                for c in &conflicts {
                    findings.warnings.push(
                        Finding::new(
                            Check::Command,
                            conflict_warning(plan.node(), c, &overwrite_command),
                        )
                        .on(&[plan.node()]),
                    );
                }
                if !conflicts.is_empty() {
                    conflicts_by_node.push((plan.node().to_string(), conflicts));
                }
                plans.push(*plan);
            }
            NodeRollback::Recreated { node, snapshot_uid, current_uid } => {
                skipped.push(NodeReport::without_plan(
                    &node,
                    Outcome::Skipped,
                    format!("deleted and recreated since the snapshot (uid {snapshot_uid} -> {current_uid}): not restored"),
                ));
            }
            NodeRollback::Missing { node } => skipped.push(NodeReport::without_plan(
                &node,
                Outcome::Skipped,
                "no longer exists: not restored".into(),
            )),
            NodeRollback::NothingApplied { node, outcome } => findings.warnings.push(
                Finding::new(
                    Check::Command,
                    format!(
                        "node/{node}: the original command did not change it (recorded {}, and the node does not have its values): nothing to undo",
                        outcome.as_str()
                    ),
                )
                .on(&[&node]),
            ),
        }
    }
    let mut mutation = Mutation::new(tool, command, "rollback", args);
    mutation.apply_overrides(overrides.policy);
    mutation.ignore_disruption_budgets = overrides.ignore_disruption_budgets;
    mutation.ignore_taint_owner = overrides.ignore_taint_owner;
    mutation.findings = findings;
    mutation.rollback_of = Some(snapshot.path.clone());
    mutation.cluster = Some(cluster);
    mutation.undoes = Some(undo_description(&snapshot, selected.as_ref()));
    if !ui.output.is_structured() {
        println!(
            "undoing {}",
            placekit_core::text::escaped(mutation.undoes.as_deref().unwrap_or_default())
        );
        for s in &skipped {
            ui.warn(&format!(
                "node/{}: {}",
                s.name,
                s.message.as_deref().unwrap_or_default()
            ));
        }
    }
    let mut report = pipeline::apply(conn, ui, plans, mutation).await?;
    for (node, conflicts) in conflicts_by_node {
        if let Some(n) = report.nodes.iter_mut().find(|n| n.name == node) {
            n.conflicts = conflicts.into_iter().map(Into::into).collect();
        }
    }
    report.nodes.extend(skipped);
    report.nodes.sort_by(|a, b| a.name.cmp(&b.name));
    // A node deleted or recreated since has nothing left to restore, so it does not keep
    // the snapshot on the undo stack; nor do keys someone else changed since.
    let left_alone: Vec<String> = report
        .nodes
        .iter()
        .flat_map(|n| {
            n.conflicts.iter().filter(|c| !c.forced).map(move |c| {
                format!(
                    "node/{}: {} is {}, expected {}",
                    n.name,
                    c.item,
                    placekit_core::plan::quoted_or_absent(&c.found),
                    placekit_core::plan::quoted_or_absent(&c.expected)
                )
            })
        })
        .collect();
    let partial = not_selected_left > 0
        || report.nodes.iter().any(|n| {
            matches!(
                n.outcome,
                Outcome::Conflict | Outcome::Failed | Outcome::Unknown | Outcome::NotAttempted
            )
        });
    if !left_alone.is_empty() {
        report.overwrite_command = Some(overwrite_command);
    }
    if not_selected_left > 0 && !ui.output.is_structured() {
        println!(
            "{} of the snapshot not selected still to restore: it stays on the undo stack",
            placekit_core::text::count(not_selected_left, "node")
        );
    }
    if args.dry_run == crate::ui::DryRun::None {
        let by = match &report.snapshot {
            Some(path) => path.display().to_string(),
            // Nothing had to be written: record that the undo is complete (or not).
            None => "(nothing to write)".to_string(),
        };
        Journal::open_existing(&snapshot.path)?.record(&JournalRecord::RolledBack {
            by,
            partial,
            at: now_rfc3339(),
            left_alone,
        })?;
    }
    Ok(report)
}

/// The snapshot's nodes a rollback restores: `None` for all of them. A named node the
/// snapshot does not hold is an input error; a selector is matched against the nodes'
/// current labels (one paged list).
async fn selected_nodes(
    conn: &Connection,
    snapshot: &Snapshot,
    only: Option<&Targets>,
) -> Result<Option<std::collections::BTreeSet<String>>, CommandError> {
    let in_snapshot: std::collections::BTreeSet<String> = snapshot
        .header
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .collect();
    let chosen: std::collections::BTreeSet<String> = match only {
        None | Some(Targets::All) => return Ok(None),
        Some(Targets::Names(names)) => {
            let foreign: Vec<&String> =
                names.iter().filter(|n| !in_snapshot.contains(*n)).collect();
            if !foreign.is_empty() {
                return Err(CommandError::Input(format!(
                    "{} not in the snapshot {} (its nodes: {}); nothing was changed",
                    foreign
                        .iter()
                        .map(|n| format!("node/{n}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    snapshot.path.display(),
                    in_snapshot.iter().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
            names.iter().cloned().collect()
        }
        Some(selector @ Targets::Selector(_)) => api::fetch_nodes(&conn.client, selector)
            .await?
            .into_iter()
            .map(|n| n.name)
            .filter(|n| in_snapshot.contains(n))
            .collect(),
    };
    if chosen.is_empty() {
        return Err(CommandError::Input(format!(
            "the selector matches none of the nodes of the snapshot {}; nothing was changed",
            snapshot.path.display()
        )));
    }
    Ok(Some(chosen))
}

/// What a rollback undoes, for its confirmation: the command, when, where and how many
/// nodes (`kubectl nodelabel set -l pool=online team=ml` of 2026-12-01T10:00:00Z on
/// context kind-gpu, 3 nodes).
fn undo_description(
    snapshot: &Snapshot,
    selected: Option<&std::collections::BTreeSet<String>>,
) -> String {
    let h = &snapshot.header;
    let nodes = match selected {
        Some(s) if s.len() < h.nodes.len() => {
            format!(
                "{} of its {}",
                s.len(),
                placekit_core::text::count(h.nodes.len(), "node")
            )
        }
        _ => placekit_core::text::count(h.nodes.len(), "node"),
    };
    format!(
        "`{}` of {} on context {}, {nodes}",
        h.user_command(),
        h.created_at,
        h.context
    )
}

/// `show SNAPSHOT | --last`: resolves `--last` against the kubeconfig's cluster (server and
/// CA, without contacting it) and prints the snapshot.
pub async fn show(
    connection: &ConnectionArgs,
    ui: &Ui,
    tool: &str,
    choice: SnapshotChoice<'_>,
) -> Result<u8, CommandError> {
    let cluster = match choice {
        SnapshotChoice::Last => crate::ui::connect(connection).await?.cluster,
        SnapshotChoice::Path(_) => ClusterIdentity::default(),
    };
    print_snapshot(ui, &choice.load(tool, &cluster)?);
    Ok(exit::SUCCESS)
}

/// `history`: every snapshot of `tool`, oldest first, and the files that could not be read.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub entries: Vec<HistoryEntry>,
    pub unreadable: Vec<Unreadable>,
}

/// `history`: every snapshot of `tool`, oldest first, and the snapshot files that could not
/// be read (a damaged file is listed with why, never hidden). An unreadable file is listed
/// under `tool` unless its name says it belongs to the other plugin. With `--contexts`, only
/// the snapshots taken through the contexts the patterns choose (`--all-contexts`, like no
/// flag, lists every cluster's).
pub fn history(tool: &str, fleet: &crate::fleet::FleetArgs) -> Result<History, CommandError> {
    let store = SnapshotStore::new(SnapshotStore::default_dir()?);
    let (snapshots, unreadable) = store.list_all()?;
    let unreadable = unreadable
        .into_iter()
        .filter(|u| {
            let name = u
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mine = format!("-{}-", placekit_core::snapshot::plugin_name(tool));
            name.contains(&mine)
                || !["-nodelabel-", "-gpu-taint-"]
                    .iter()
                    .any(|t| name.contains(t))
        })
        .collect();
    let entries = snapshots
        .into_iter()
        .filter(|s| s.header.tool == tool)
        .filter(|s| crate::fleet::chooses(&fleet.contexts, &s.header.context))
        .map(|s| HistoryEntry {
            created_at: s.header.created_at.clone(),
            context: s.header.context.clone(),
            server: s.header.cluster().server,
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
                .map(|(k, n)| format!("{n} {}", k.map_or("no outcome recorded", |k| k.as_str())))
                .collect::<Vec<_>>()
                .join(", "),
            rolled_back: if s.rolled_back_by().is_empty() {
                "no"
            } else if s.fully_rolled_back() {
                "yes"
            } else {
                "partly"
            }
            .into(),
            rolled_back_by: s.rolled_back_by().iter().map(|p| p.to_string()).collect(),
            left_alone: s.left_alone().to_vec(),
            name: snapshot_name(&s.path),
            path: s.path.clone(),
        })
        .collect();
    Ok(History {
        entries,
        unreadable,
    })
}

/// A snapshot's name: its file name, which `show NAME` and `rollback NAME` take.
fn snapshot_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Prints `history` as a table or JSON/YAML.
pub fn print_history(ui: &Ui, history: &History) {
    let entries = &history.entries;
    if ui.output.is_structured() {
        ui.print_report(&SnapshotHistory {
            items: entries,
            unreadable: history.unreadable.iter().map(Into::into).collect(),
        });
        return;
    }
    for u in &history.unreadable {
        ui.warn(&format!(
            "unreadable snapshot {}: {}",
            u.path.display(),
            u.reason
        ));
    }
    if entries.is_empty() {
        if history.unreadable.is_empty() {
            println!("no snapshots yet");
        } else {
            println!("no readable snapshots");
        }
        return;
    }
    // `-o wide` adds where and what: the server and the operation.
    let wide = ui.output == crate::ui::OutputFormat::Wide;
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let mut row = vec![e.created_at.clone(), e.context.clone()];
            if wide {
                row.extend([e.server.clone(), e.operation.clone()]);
            }
            row.extend([
                if wide {
                    e.command.clone()
                } else {
                    shorten(&e.command, COMMAND_COLUMN)
                },
                e.nodes.to_string(),
                e.outcome.clone(),
                match e.left_alone.len() {
                    0 => e.rolled_back.clone(),
                    n => format!("{}, {n} left alone", e.rolled_back),
                },
                // The snapshot's name keeps the table in a terminal; `rollback NAME` and
                // `show NAME` find it in the state directory. `-o wide` shows the path.
                if wide {
                    e.path.display().to_string()
                } else {
                    e.name.clone()
                },
            ]);
            row
        })
        .collect();
    let mut header = vec!["TIME", "CONTEXT"];
    if wide {
        header.extend(["SERVER", "OPERATION"]);
    }
    header.extend(["COMMAND", "NODES", "OUTCOME", "ROLLED BACK", "SNAPSHOT"]);
    print!("{}", ui.table(&header, &rows));
}

/// Whether `given` names a snapshot: a file that is there, or a bare name `history` shows
/// that is in the state directory (`show` takes nodes otherwise).
pub fn names_snapshot(given: &str) -> bool {
    std::path::Path::new(given).is_file()
        || given.ends_with(placekit_core::snapshot::SNAPSHOT_SUFFIX)
        || resolve_snapshot(given).is_ok_and(|p| p.is_file())
}

/// A SNAPSHOT argument: a path as given, or the bare name `history` shows (no directory
/// part, no such file here), which is looked up in the state directory.
fn resolve_snapshot(given: &str) -> Result<std::path::PathBuf, CommandError> {
    let path = std::path::Path::new(given);
    let bare = path.components().count() == 1 && !path.exists();
    let path = if bare {
        SnapshotStore::default_dir()?.join(given)
    } else {
        path.to_path_buf()
    };
    std::path::absolute(&path).map_err(|e| CommandError::Input(format!("snapshot {given}: {e}")))
}

/// The widest COMMAND `history` shows in its table (`-o wide` and JSON show it whole).
const COMMAND_COLUMN: usize = 80;

/// `text` cut to `width` characters, the last an ellipsis, when longer.
fn shorten(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// Prints one snapshot (`show`).
pub fn print_snapshot(ui: &Ui, snapshot: &Snapshot) {
    if ui.output.is_structured() {
        ui.print_report(&SnapshotPage {
            name: snapshot_name(&snapshot.path),
            header: &snapshot.header,
            records: &snapshot.records,
        });
        return;
    }
    let h = &snapshot.header;
    // A snapshot is a file: what it says is shown with its control characters escaped.
    macro_rules! println {
        ($($arg:tt)*) => {
            std::println!("{}", placekit_core::text::escaped(&format!($($arg)*)))
        };
    }
    println!("snapshot:  {}", snapshot.path.display());
    println!(
        "created:   {} by {} {}",
        h.created_at, h.tool, h.tool_version
    );
    println!("context:   {} ({})", h.context, h.cluster());
    // As users type it (`kubectl nodelabel set ...`), not the binary's path.
    let args = h
        .command_line
        .iter()
        .skip(1)
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    println!(
        "command:   kubectl {} {args}",
        placekit_core::snapshot::plugin_name(&h.tool)
    );
    if let Some(of) = &h.rollback_of {
        println!("undoes:    {of}");
    }
    for by in snapshot.rolled_back_by() {
        println!("undone by: {by}");
    }
    for left in snapshot.left_alone() {
        println!("left alone (changed since): {left}");
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
        let changes = [
            ("label", &node.label_changes),
            ("annotation", &node.annotation_changes),
        ];
        for (what, deltas) in changes {
            for d in deltas {
                println!(
                    "  {what} {}: {} -> {}",
                    d.key,
                    show(&d.before),
                    show(&d.after)
                );
            }
        }
        for t in &node.taints_added {
            println!("  taint added: {t}");
        }
        for t in &node.taints_removed {
            println!("  taint removed: {t}");
        }
    }
}
