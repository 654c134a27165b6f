//! `kubectl nodelabel`'s commands on top of the pipeline: set/remove, import (with
//! provenance and per-node hooks) and the `dependents` lookup.

use placekit_cli::output::PrintReport as _;
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;

use placekit_cli::error::CommandError;
use placekit_cli::overrides::PolicyOverrides;
use placekit_cli::ui::{MutationArgs, Ui};
use placekit_client::api;
use placekit_client::connect::{Connection, ConnectionArgs};
use placekit_client::targets::Targets;
use placekit_core::exit;
use placekit_core::nfd::{self, IMPORTED_LABELS_ANNOTATION, ImportRecord, NamespacePolicy, Naming};
use placekit_core::plan::{Blocker, ChangeRequest, NodePlan, NodeState, plan_node};
use placekit_core::syntax::LabelChange;
use placekit_lint::dependents::{Dependent, KeyQuery, find_dependents};

use placekit_cli::mutation::pipeline::{self, Mutation};
use placekit_cli::mutation::report::print_report;
use placekit_cli::output::v1::{self, Item, LabelDependents, NodeLabels};
use placekit_lint::checks::{Check, Finding};

/// `kubectl nodelabel`'s name in snapshots and in printed commands.
pub const TOOL: &str = "kubectl-nodelabel";
pub const COMMAND: &str = "kubectl nodelabel";

/// Hooks run at once during an import.
const HOOK_CONCURRENCY: usize = 4;

async fn read_targets(
    conn: &Connection,
    targets: &Targets,
) -> Result<Vec<NodeState>, CommandError> {
    let nodes = api::fetch_nodes(&conn.client, targets).await?;
    if nodes.is_empty() {
        return Err(CommandError::Input(
            "the selector matches no node; nothing to do".into(),
        ));
    }
    Ok(nodes)
}

/// What `set` or `remove` asks.
#[derive(Debug, Clone)]
pub struct LabelRequest {
    /// `set` or `remove`, recorded in the snapshot.
    pub operation: &'static str,
    pub changes: Vec<LabelChange>,
    /// Change a label that has another value.
    pub overwrite: bool,
    /// `--ignore-dependents`, `--ignore-gpu-pods`.
    pub overrides: PolicyOverrides,
}

/// `set` and `remove`: the label changes on the targets.
pub async fn change_labels(
    connection: &ConnectionArgs,
    ui: &Ui,
    targets: Targets,
    request: LabelRequest,
    args: &MutationArgs,
) -> Result<u8, CommandError> {
    let conn = placekit_cli::ui::connect(connection).await?;
    let nodes = read_targets(&conn, &targets).await?;
    let change = ChangeRequest {
        labels: request.changes,
        overwrite: request.overwrite,
        ..Default::default()
    };
    let plans: Vec<NodePlan> = nodes.iter().map(|n| plan_node(n, &change)).collect();
    let mut mutation = Mutation::new(TOOL, COMMAND, request.operation, args);
    mutation.apply_overrides(request.overrides);
    mutation.findings.warn_all(
        Check::Keys,
        placekit_lint::checks::absent_removals(&change.labels, &nodes),
    );
    if request.operation == "set" {
        // Typos before the confirmation: a new key near one the nodes have, a value near
        // one the key has on the cluster.
        mutation.findings.warn_all(
            Check::Keys,
            placekit_lint::checks::near_keys(&change.labels, &nodes),
        );
        let set_keys: Vec<&str> = change
            .labels
            .iter()
            .filter(|c| matches!(c, LabelChange::Set { .. }))
            .map(LabelChange::key)
            .collect();
        let values = api::label_values(&conn.client, &set_keys).await?;
        mutation.findings.warn_all(
            Check::Keys,
            placekit_lint::checks::near_values(&change.labels, &values),
        );
    }
    let report = pipeline::apply(&conn, ui, plans, mutation).await?;
    Ok(print_report(ui, &report))
}

/// Where `import` reads features.
#[derive(Debug, Clone)]
pub enum FeatureSource {
    File(PathBuf),
    Dir(PathBuf),
    Hook { path: PathBuf, timeout: Duration },
}

impl FeatureSource {
    /// The provenance name recorded for the keys this source sets.
    fn provenance(&self) -> String {
        let base = |p: &PathBuf| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.display().to_string())
        };
        match self {
            FeatureSource::File(p) => format!("file:{}", base(p)),
            FeatureSource::Dir(p) => format!("dir:{}", base(p)),
            FeatureSource::Hook { path, .. } => format!("hook:{}", nfd::hook_name(path)),
        }
    }
}

/// `import`'s options besides the source and targets.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// `--naming`; `None`: `file` for files, `hook` for hooks.
    pub naming: Option<Naming>,
    pub policy: NamespacePolicy,
    pub prune: bool,
    pub skip_invalid: bool,
    pub overwrite: bool,
    /// `--ignore-dependents` (prune labels that workloads depend on), `--ignore-gpu-pods`.
    pub overrides: PolicyOverrides,
    /// `--allow-identical-features`: a hook may print the same features for several nodes.
    pub allow_identical_features: bool,
}

/// (source name, content, the node it is for: `None` = every target).
type SourceText = (String, String, Option<String>);

fn read_files(source: &FeatureSource) -> Result<Vec<SourceText>, CommandError> {
    let input = |e: nfd::SourceError| CommandError::Input(e.to_string());
    match source {
        FeatureSource::File(file) => Ok(vec![(
            file.display().to_string(),
            nfd::read_feature_file(file).map_err(input)?,
            None,
        )]),
        FeatureSource::Dir(dir) => {
            let mut out = Vec::new();
            for (node, path) in nfd::node_files(dir).map_err(input)? {
                out.push((
                    path.display().to_string(),
                    nfd::read_feature_file(&path).map_err(input)?,
                    Some(node),
                ));
            }
            if out.is_empty() {
                return Err(CommandError::Input(format!(
                    "{}: no feature files (expected <node> or <node>.features)",
                    dir.display()
                )));
            }
            Ok(out)
        }
        FeatureSource::Hook { .. } => Ok(Vec::new()),
    }
}

/// One node's hook run: its feature text as a source, and what it wrote to stderr.
struct HookRun {
    text: SourceText,
    stderr: String,
}

/// Runs a hook once per node, a few at a time; the first failure stops the import.
async fn run_hooks(
    path: &std::path::Path,
    timeout: Duration,
    nodes: &[NodeState],
) -> Result<Vec<HookRun>, CommandError> {
    futures::stream::iter(nodes.iter().map(|n| n.name.clone()))
        .map(|node| async move {
            let output = crate::hook::run_hook(path, timeout, &node)
                .await
                .map_err(|e| CommandError::Input(e.to_string()))?;
            Ok(HookRun {
                text: (
                    format!("hook {} (node {node})", path.display()),
                    output.stdout,
                    Some(node),
                ),
                stderr: output.stderr,
            })
        })
        .buffered(HOOK_CONCURRENCY)
        .collect::<Vec<Result<HookRun, CommandError>>>()
        .await
        .into_iter()
        .collect()
}

/// Nodes a hook printed the same (non-empty) features for, in groups of two or more: it
/// runs on this machine, so identical output for different nodes usually describes this
/// machine (its CPU vendor written onto every GPU node), not the node it was given.
fn identical_outputs(runs: &[HookRun]) -> Vec<Vec<String>> {
    let mut groups: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for run in runs {
        let (_, content, node) = &run.text;
        if !content.trim().is_empty() {
            groups
                .entry(content.as_str())
                .or_default()
                .push(node.clone().unwrap_or_default());
        }
    }
    groups.into_values().filter(|g| g.len() > 1).collect()
}

/// The first lines of a hook's stderr, for a warning.
fn first_lines(text: &str) -> String {
    const SHOWN: usize = 5;
    let lines: Vec<&str> = text.lines().collect();
    let mut shown = lines
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(" | ");
    if lines.len() > SHOWN {
        shown.push_str(&format!(" (+{} more lines)", lines.len() - SHOWN));
    }
    shown
}

/// `import`: node features in NFD's local-source format, through the same pipeline as
/// `set`, with every key's source recorded so `--prune` removes only that source's keys.
///
/// Long on purpose: one sequence per source kind (file, directory, hook) folding into the
/// one change the pipeline applies.
pub async fn import(
    connection: &ConnectionArgs,
    ui: &Ui,
    source: FeatureSource,
    targets: Option<Targets>,
    options: ImportOptions,
    args: &MutationArgs,
) -> Result<u8, CommandError> {
    let now = jiff::Timestamp::now();
    let naming = match (&options.naming, &source) {
        (Some(n), _) => n.clone(),
        (None, FeatureSource::Hook { path, .. }) => Naming::Hook {
            hook_name: nfd::hook_name(path),
        },
        (None, _) => Naming::File,
    };
    // Files are read and validated before the cluster is contacted.
    let mut texts = read_files(&source)?;
    let targets = match (&source, targets) {
        (FeatureSource::Dir(_), Some(_)) => {
            return Err(CommandError::Input(
                "--dir names the nodes by its files; do not give nodes or a selector".into(),
            ));
        }
        (FeatureSource::Dir(_), None) => {
            Targets::Names(texts.iter().filter_map(|(_, _, n)| n.clone()).collect())
        }
        (_, Some(t)) => t,
        (_, None) => {
            return Err(CommandError::Input(
                "no nodes given: name nodes, or use -l/--selector or --all".into(),
            ));
        }
    };
    let conn = placekit_cli::ui::connect(connection).await?;
    let nodes = read_targets(&conn, &targets).await?;
    let mut findings = placekit_lint::checks::Findings::default();
    let mut stderr_by_node: std::collections::BTreeMap<String, String> = Default::default();
    if let FeatureSource::Hook { path, timeout } = &source {
        let runs = run_hooks(path, *timeout, &nodes).await?;
        let identical = identical_outputs(&runs);
        if !identical.is_empty() && !options.allow_identical_features {
            return Err(CommandError::Input(format!(
                "nothing was applied: hook {} printed the same features for {}. It runs on this machine, not on the nodes: check that it describes the node it is given (NODE_NAME, its first argument) rather than this machine; if the features are meant to be identical, pass --allow-identical-features",
                path.display(),
                identical
                    .iter()
                    .map(|g| g
                        .iter()
                        .map(|n| format!("node/{n}"))
                        .collect::<Vec<_>>()
                        .join(", "))
                    .collect::<Vec<_>>()
                    .join("; and for ")
            )));
        }
        for run in runs {
            if let (false, Some(node)) = (run.stderr.is_empty(), &run.text.2) {
                let text = format!(
                    "hook {} (node {node}) wrote to stderr: {}",
                    path.display(),
                    first_lines(&run.stderr)
                );
                findings
                    .warnings
                    .push(Finding::new(Check::Command, text).on(&[node]));
                stderr_by_node.insert(node.clone(), run.stderr);
            }
            texts.push(run.text);
        }
    }

    let mut parsed: Vec<(Option<String>, Vec<nfd::Feature>)> = Vec::new();
    let mut errors = Vec::new();
    for (name, content, node) in &texts {
        let (features, errs) = nfd::parse_features(name, content, &naming, &options.policy, now);
        errors.extend(errs);
        parsed.push((node.clone(), features));
    }
    if !errors.is_empty() {
        let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
        if options.skip_invalid {
            for e in &listed {
                ui.warn(&format!("skipped: {e}"));
            }
        } else {
            return Err(CommandError::Input(format!(
                "nothing was applied; invalid entries (use --skip-invalid to apply the rest):\n  {}",
                listed.join("\n  ")
            )));
        }
    }

    // A hook that complained on stderr and printed empty values (or nothing) did not read
    // what it describes: nothing is applied to that node, least of all a prune.
    let mut problems = Vec::new();
    let failed_nodes: Vec<String> = parsed
        .iter()
        .filter_map(|(node, features)| {
            let node = node.as_ref()?;
            stderr_by_node.get(node)?;
            let empty: Vec<&str> = features
                .iter()
                .filter(|f| f.value.is_empty())
                .map(|f| f.key.as_str())
                .collect();
            if features.is_empty() || !empty.is_empty() {
                problems.push(format!(
                    "node/{node}: the hook wrote to stderr and printed {}: nothing was applied to it",
                    if features.is_empty() {
                        "no features".to_string()
                    } else {
                        format!("empty values ({})", empty.join(", "))
                    }
                ));
                Some(node.clone())
            } else {
                None
            }
        })
        .collect();
    let nodes: Vec<NodeState> = nodes
        .into_iter()
        .filter(|n| !failed_nodes.contains(&n.name))
        .collect();
    if nodes.is_empty() {
        return Err(CommandError::Blocked(format!(
            "nothing was applied:\n  {}",
            problems.join("\n  ")
        )));
    }

    let provenance = source.provenance();
    for node in &nodes {
        let record = ImportRecord::parse(
            node.annotations
                .get(IMPORTED_LABELS_ANNOTATION)
                .map(String::as_str),
        );
        let tampered = record.implausible(&provenance, &options.policy);
        if !tampered.is_empty() {
            let text = format!(
                "node/{}: its {IMPORTED_LABELS_ANNOTATION} annotation claims that {provenance} imported {}, which no import can produce: tampered (the node's kubelet can write its annotations), ignored and not pruned",
                node.name,
                tampered.join(", ")
            );
            findings
                .warnings
                .push(Finding::new(Check::Command, text).on(&[&node.name]));
        }
    }
    let plans: Vec<NodePlan> = nodes
        .iter()
        .map(|node| {
            let features = parsed
                .iter()
                .find(|(n, _)| n.as_deref().is_none_or(|n| n == node.name))
                .map(|(_, f)| f.as_slice())
                .unwrap_or_default();
            import_plan(node, &provenance, features, &options)
        })
        .collect();
    let mut mutation = Mutation::new(TOOL, COMMAND, "import", args);
    mutation.apply_overrides(options.overrides);
    mutation.findings = findings;
    mutation.problems = problems;
    let report = pipeline::apply(&conn, ui, plans, mutation).await?;
    Ok(print_report(ui, &report))
}

/// One node's import: features set, the source's earlier imports pruned when asked, the
/// record updated; an existing label no import set is only changed with `--overwrite`.
pub fn import_plan(
    node: &NodeState,
    source: &str,
    features: &[nfd::Feature],
    options: &ImportOptions,
) -> NodePlan {
    let record = ImportRecord::parse(
        node.annotations
            .get(IMPORTED_LABELS_ANNOTATION)
            .map(String::as_str),
    );
    // Claims no import could have made are ignored (reported by `import`), never pruned.
    let tampered = record.implausible(source, &options.policy);
    let record = record.without(source, &tampered);
    // A label someone set by hand that already has the imported value stays theirs.
    let not_claimed = features
        .iter()
        .filter(|f| node.labels.get(&f.key) == Some(&f.value) && !record.owns(&f.key))
        .map(|f| f.key.clone())
        .collect();
    let (labels, annotation) =
        nfd::import_changes(&record, source, features, options.prune, &not_claimed);
    // An import that changes no record (a hook that printed nothing) writes no annotation.
    let record_changed = ImportRecord::parse(annotation.value()) != record;
    let request = ChangeRequest {
        labels,
        annotations: record_changed.then_some(annotation).into_iter().collect(),
        overwrite: true,
        ..Default::default()
    };
    let mut plan = plan_node(node, &request);
    // A key nfd-master owns on this node is its to write: importing it would start a fight
    // (each update re-applies the other's value), so it is left and said.
    let (owned, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut plan.label_changes)
        .into_iter()
        .partition(|d| node.nfd_keys.contains(&d.key));
    plan.label_changes = kept;
    plan.notes.extend(
        owned
            .into_iter()
            .map(|d| placekit_core::plan::Note::OwnedByNfd { key: d.key }),
    );
    if !options.overwrite {
        for d in &plan.label_changes {
            let (Some(current), Some(wanted)) = (&d.before, &d.after) else {
                continue;
            };
            if let Some(owner) = record.other_owner(source, &d.key) {
                // Another import source's key is not taken over silently.
                plan.blockers.push(Blocker::ImportedByOtherSource {
                    key: d.key.clone(),
                    owner: owner.to_string(),
                    current: current.clone(),
                    wanted: wanted.clone(),
                });
            } else if !record.owns(&d.key) {
                plan.blockers.push(Blocker::LabelHasOtherValue {
                    key: d.key.clone(),
                    current: current.clone(),
                    wanted: wanted.clone(),
                });
            }
        }
    }
    plan
}

/// `dependents KEY[=VALUE]...`: the workloads whose node constraints mention the keys, on
/// one cluster or (`fleet`) on each cluster the contexts reach.
pub async fn dependents(
    connection: &ConnectionArgs,
    fleet: Option<&placekit_cli::fleet::Fleet>,
    ui: &Ui,
    keys: &[String],
    namespace: Option<&str>,
) -> Result<u8, CommandError> {
    let queries: Vec<KeyQuery> = keys.iter().map(|k| KeyQuery::parse(k)).collect();
    // A key no label can have matches nothing: say so before asking the cluster.
    for q in &queries {
        let mut errors = placekit_core::validation::qualified_name_errors(&q.key);
        if let Some(v) = &q.value {
            errors.extend(placekit_core::validation::label_value_errors(v));
        }
        if !errors.is_empty() {
            return Err(CommandError::Input(format!(
                "invalid label key {:?}: {}",
                q.key,
                errors.join("; ")
            )));
        }
    }
    let Some(fleet) = fleet else {
        let conn = placekit_cli::ui::connect(connection).await?;
        let (found, warnings) = read_dependents(&conn, &queries, namespace, true).await?;
        for w in &warnings {
            ui.warn(w);
        }
        print_dependents(ui, &found, queries.len());
        return Ok(exit::SUCCESS);
    };
    let keys = queries.len();
    let asked = std::sync::Arc::new((queries, namespace.map(str::to_string)));
    let reads = fleet
        .read(move |conn| {
            let asked = asked.clone();
            async move { read_dependents(&conn, &asked.0, asked.1.as_deref(), false).await }
        })
        .await;
    print_fleet_dependents(ui, &reads, keys);
    Ok(placekit_cli::fleet::exit_code(&reads, |_| exit::SUCCESS))
}

/// One cluster's dependents and the warnings of its reads. A namespace that is not there is
/// an error on one cluster (`namespace_must_exist`), and just empty on one of several.
async fn read_dependents(
    conn: &Connection,
    queries: &[KeyQuery],
    namespace: Option<&str>,
    namespace_must_exist: bool,
) -> Result<(Vec<Dependent>, Vec<String>), CommandError> {
    let (workloads, warnings) = match placekit_cli::workloads::list_workloads(
        &conn.client,
        namespace,
        None,
    )
    .await
    {
        // Namespace-scoped RBAC: every namespace is the safe default for a label's
        // dependents, but what may be read is still an answer, said to be partial.
        Err(CommandError::Forbidden(why)) if namespace.is_none() => {
            let own = conn.namespace.as_str();
            let Ok((workloads, mut warnings)) =
                placekit_cli::workloads::list_workloads(&conn.client, Some(own), None).await
            else {
                return Err(CommandError::Forbidden(why));
            };
            warnings.insert(
                0,
                format!(
                    "cannot list workloads in every namespace ({why}); only namespace {own} was read, so dependents in other namespaces are not shown"
                ),
            );
            (workloads, warnings)
        }
        other => other?,
    };
    if let Some(ns) = namespace
        && namespace_must_exist
        && workloads.is_empty()
        && !api::namespace_exists(&conn.client, ns).await?
    {
        return Err(CommandError::Input(format!(
            "namespace {ns:?} not found (see `kubectl get namespaces`)"
        )));
    }
    Ok((find_dependents(&workloads, queries), warnings))
}

/// `dependents` over several clusters: a leading CONTEXT column; JSON items with `context`
/// and `server`, and every cluster read listed (with its error, if any).
fn print_fleet_dependents(
    ui: &Ui,
    reads: &[placekit_cli::fleet::ClusterRead<(Vec<Dependent>, Vec<String>)>],
    keys: usize,
) {
    use placekit_cli::fleet;
    for r in reads {
        if let Ok((_, warnings)) = &r.outcome {
            for w in warnings {
                ui.warn(&format!("context {}: {w}", r.label()));
            }
        }
    }
    if ui.output.is_structured() {
        let wire: Vec<(_, Vec<v1::Dependent>)> = reads
            .iter()
            .filter_map(|r| r.outcome.as_ref().ok().map(|(found, _)| (r, found)))
            .map(|(r, found)| (r, found.iter().map(Into::into).collect()))
            .collect();
        let items: Vec<Item<v1::Dependent>> = wire
            .iter()
            .flat_map(|(r, found)| fleet::tagged(*r, found))
            .collect();
        ui.print_report(&LabelDependents {
            items,
            contexts: Some(fleet::contexts(reads)),
        });
    } else {
        let parts: Vec<(String, Vec<Vec<String>>)> = reads
            .iter()
            .filter_map(|r| r.outcome.as_ref().ok().map(|(found, _)| (r, found)))
            .filter(|(_, found)| !found.is_empty())
            .map(|(r, found)| (r.label(), dependents_rows(found)))
            .collect();
        if parts.is_empty() {
            println!(
                "no workload depends on {} in {}",
                if keys == 1 {
                    "this label"
                } else {
                    "these labels"
                },
                placekit_core::text::count(
                    reads.iter().filter(|r| r.outcome.is_ok()).count(),
                    "cluster"
                )
            );
        } else {
            print!("{}", fleet::context_table(ui, &DEPENDENTS_HEADER, &parts));
        }
    }
    fleet::warn_failures(ui, reads);
}

const DEPENDENTS_HEADER: [&str; 5] = ["NAMESPACE", "KIND", "NAME", "CONSTRAINT", "EXPRESSION"];

fn dependents_rows(found: &[Dependent]) -> Vec<Vec<String>> {
    found
        .iter()
        .map(|d| {
            vec![
                // kubectl's word for an empty cell: a ResourceFlavor has no namespace.
                if d.namespace.is_empty() {
                    "<none>".into()
                } else {
                    d.namespace.clone()
                },
                d.kind.clone(),
                if d.used_by.is_empty() {
                    d.name.clone()
                } else {
                    format!("{} (used by {})", d.name, d.used_by.join(", "))
                },
                d.constraint.as_str().to_string(),
                d.expression.clone(),
            ]
        })
        .collect()
}

fn print_dependents(ui: &Ui, found: &[Dependent], keys: usize) {
    if ui.output.is_structured() {
        let wire: Vec<v1::Dependent> = found.iter().map(Into::into).collect();
        ui.print_report(&LabelDependents {
            items: Item::all_local(&wire),
            contexts: None,
        });
        return;
    }
    if found.is_empty() {
        println!(
            "no workload depends on {}",
            if keys == 1 {
                "this label"
            } else {
                "these labels"
            }
        );
        return;
    }
    print!("{}", ui.table(&DEPENDENTS_HEADER, &dependents_rows(found)));
}

/// `show NODE...` / `show -l SEL`: every label of the nodes with the field managers that
/// wrote it, the controller that owns it and what the GPU operator does with it. The nodes
/// come with their managedFields in one list (or a GET per named node); the GPU operator's
/// objects are read only when a node carries one of its keys.
pub async fn show_labels(
    connection: &ConnectionArgs,
    ui: &Ui,
    targets: &Targets,
) -> Result<u8, CommandError> {
    use placekit_core::label_controllers::{
        GpuOperatorView, is_gpu_operator_key, label_provenance,
    };
    let conn = placekit_cli::ui::connect(connection).await?;
    let nodes = api::fetch_node_objects(&conn.client, targets).await?;
    if nodes.is_empty() {
        return Err(CommandError::Input("the selector matches no node".into()));
    }
    let operator_keys = nodes.iter().any(|n| {
        n.metadata
            .labels
            .iter()
            .flatten()
            .any(|(k, _)| is_gpu_operator_key(k))
    });
    let operator = if operator_keys {
        let (view, unreadable) = api::gpu_operator_view(&conn.client).await?;
        for w in &unreadable {
            ui.warn(w);
        }
        view
    } else {
        GpuOperatorView::default()
    };
    let rows: Vec<_> = nodes
        .iter()
        .flat_map(|n| label_provenance(n, &operator))
        .collect();
    // The objects that declare taints are read only when a node has one.
    let tainted = nodes.iter().any(|n| {
        n.spec
            .as_ref()
            .is_some_and(|s| s.taints.iter().flatten().next().is_some())
    });
    let declared = if tainted {
        let (declared, unreadable) = api::declared_taints(&conn.client).await?;
        for w in &unreadable {
            ui.warn(w);
        }
        declared
    } else {
        placekit_core::taint_owners::DeclaredTaints::default()
    };
    let taints: Vec<_> = nodes
        .iter()
        .flat_map(|n| placekit_core::taint_owners::taint_provenance(n, &declared))
        .collect();
    if ui.output.is_structured() {
        ui.print_report(&NodeLabels {
            items: rows.iter().map(Into::into).collect(),
            taints: taints.iter().map(Into::into).collect(),
        });
        return Ok(exit::SUCCESS);
    }
    let wide = ui.output == placekit_cli::ui::OutputFormat::Wide;
    let none = || "<none>".to_string();
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![
                r.node.clone(),
                r.key.clone(),
                r.value.clone(),
                if r.managers.is_empty() {
                    none()
                } else {
                    r.managers.join(",")
                },
                r.owner.clone().unwrap_or_else(none),
            ];
            if wide {
                row.push(r.note.clone().unwrap_or_default());
            }
            row
        })
        .collect();
    let header: &[&str] = if wide {
        &["NODE", "KEY", "VALUE", "WRITTEN BY", "OWNER", "NOTE"]
    } else {
        &["NODE", "KEY", "VALUE", "WRITTEN BY", "OWNER"]
    };
    print!("{}", ui.table(header, &table));
    if !taints.is_empty() {
        let table: Vec<Vec<String>> = taints
            .iter()
            .map(|t| {
                let mut row = vec![
                    t.node.clone(),
                    t.taint.clone(),
                    if t.managers.is_empty() {
                        none()
                    } else {
                        t.managers.join(",")
                    },
                    t.owner.clone().unwrap_or_else(none),
                ];
                if wide {
                    row.push(t.note.clone().unwrap_or_default());
                }
                row
            })
            .collect();
        let header: &[&str] = if wide {
            &["NODE", "TAINT", "WRITTEN BY", "OWNER", "NOTE"]
        } else {
            &["NODE", "TAINT", "WRITTEN BY", "OWNER"]
        };
        println!();
        print!("{}", ui.table(header, &table));
    }
    Ok(exit::SUCCESS)
}
