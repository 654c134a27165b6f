//! `kubectl nodelabel`: set and remove node labels with a snapshot first and exact-match
//! rollback, import node features in node-feature-discovery's format, and show who depends
//! on a label. A thin layer over the `placekit` core library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use placekit::connect::{Connection, ConnectionArgs};
use placekit::dependents::{Dependent, KeyQuery, find_dependents};
use placekit::exit;
use placekit::nfd::{self, IMPORTED_LABELS_ANNOTATION, NamespacePolicy, Naming};
use placekit::plan::{Blocker, ChangeRequest, NodePlan, NodeState, plan_node};
use placekit::syntax::{LabelChange, parse_label_changes};
use placekit::ui::{DisplayArgs, MutationArgs, Ui};
use placekit::workflow::{self, MutationContext, Targets, WorkflowError};

const TOOL: &str = "kubectl-nodelabel";
const COMMAND: &str = "kubectl nodelabel";

const EXAMPLES: &str = "\
Examples:
  # Label the online A100 pool (snapshot first; prints the command that undoes it)
  kubectl nodelabel set -l pool=online accelerator.example.com/gpu-family=a100 --overwrite

  # The seed runbook's labels on one node, without saving labels by hand first
  kubectl nodelabel set NODE ops.example.com.node-restriction.kubernetes.io/llm-pool=online \\
      accelerator.example.com/gpu-family=a100 accelerator.example.com/gpu-memory=80gb --overwrite

  # Undo the last change in this context, exactly
  kubectl nodelabel rollback --last

  # Who would stop scheduling if the label went away?
  kubectl nodelabel dependents accelerator.example.com/gpu-family -A

  # Import node features written by a hook (NFD's classic hook naming)
  kubectl nodelabel import --hook /etc/kubernetes/node-feature-discovery/source.d/my-script NODE";

/// Set and remove node labels safely: snapshot first, conditional writes, exact rollback.
#[derive(Debug, Parser)]
#[command(name = "kubectl nodelabel", bin_name = "kubectl nodelabel", version, about, after_help = format!("{EXAMPLES}\n\n{}", exit::EXIT_CODES_HELP))]
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
    /// Select nodes by label selector (kubectl syntax: k=v, k!=v, k in (a,b), k, !k).
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Select every node.
    #[arg(long, conflicts_with = "selector")]
    all: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Set (KEY=VALUE) or remove (KEY-) labels on nodes.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel set gpu-a100-1 gpu-a100-2 accelerator.example.com/gpu-family=a100\n  kubectl nodelabel set -l pool=online accelerator.example.com/gpu-memory=80gb power-profile- --overwrite\n  kubectl nodelabel set --all team=ml --dry-run=client"
    )]
    Set {
        /// Node names, then KEY=VALUE to set and KEY- to remove (kubectl label syntax).
        #[arg(required = true, value_name = "NODE|KEY=VALUE|KEY-")]
        args: Vec<String>,
        #[command(flatten)]
        selection: Selection,
        /// Change labels that already have another value.
        #[arg(long)]
        overwrite: bool,
        /// Remove labels that required scheduling constraints of workloads depend on.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Remove labels from nodes (keys contain '/' or end with '-'; other words are node names).
    #[command(
        after_help = "Examples:\n  kubectl nodelabel remove gpu-a100-1 accelerator.example.com/gpu-memory\n  kubectl nodelabel remove -l pool=online power-profile- --force"
    )]
    Remove {
        /// Node names and label keys.
        #[arg(required = true, value_name = "NODE|KEY")]
        args: Vec<String>,
        #[command(flatten)]
        selection: Selection,
        /// Remove even if required scheduling constraints of workloads depend on the key.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Undo a change recorded in a snapshot, exactly.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel rollback --last\n  kubectl nodelabel rollback ~/.local/state/placekit/snapshots/20261129T214000.123Z-kubectl-nodelabel-set-prod.snapshot.jsonl --force"
    )]
    Rollback {
        /// The snapshot file.
        snapshot: Option<String>,
        /// The newest snapshot of this tool for the current context.
        #[arg(long)]
        last: bool,
        /// Also restore keys someone changed after the command.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Print a shell completion script (bash, zsh, fish, powershell).
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// List snapshots: time, context, command, nodes, outcome, whether rolled back.
    History,
    /// Print one snapshot.
    Show {
        snapshot: Option<String>,
        #[arg(long)]
        last: bool,
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
        /// An executable run directly (no shell) whose output is the feature list.
        #[arg(long, value_name = "EXECUTABLE", group = "source")]
        hook: Option<PathBuf>,
        /// Target nodes (for --file and --hook).
        nodes: Vec<String>,
        #[command(flatten)]
        selection: Selection,
        /// file: key -> feature.node.kubernetes.io/key; hook: key -> feature.node.kubernetes.io/<hook>-key.
        #[arg(long, value_enum)]
        naming: Option<NamingArg>,
        /// Re-allow a kubernetes.io label namespace.
        #[arg(long, value_name = "NAMESPACE")]
        extra_label_ns: Vec<String>,
        /// Remove labels a previous import set that no longer appear.
        #[arg(long)]
        prune: bool,
        /// Apply the valid entries and report the invalid ones instead of applying nothing.
        #[arg(long)]
        skip_invalid: bool,
        /// Change existing labels that an earlier import did not set.
        #[arg(long)]
        overwrite: bool,
        /// How long a hook may run.
        #[arg(long, default_value = "10s", value_name = "DURATION")]
        hook_timeout: String,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Show the workloads whose nodeSelector or node affinity mentions a label.
    #[command(
        after_help = "Examples:\n  kubectl nodelabel dependents accelerator.example.com/gpu-family -A\n  kubectl nodelabel dependents accelerator.example.com/gpu-family=a100 -n ml"
    )]
    Dependents {
        #[arg(required = true, value_name = "KEY[=VALUE]")]
        keys: Vec<String>,
        /// All namespaces (the default unless -n is given).
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum NamingArg {
    File,
    Hook,
}

fn main() -> ExitCode {
    placekit::ui::exit_quietly_on_broken_pipe();
    // Parse first: --help and --version never build the async runtime or a client.
    let cli = Cli::parse();
    let ui = Ui::new(&cli.display);
    workflow::run_to_exit_code(run(cli, &ui))
}

async fn connect(args: &ConnectionArgs) -> Result<Connection, WorkflowError> {
    Ok(args.connect().await?)
}

fn ctx<'a>(
    operation: &'a str,
    mutation: &'a MutationArgs,
    warnings: Vec<String>,
) -> MutationContext<'a> {
    MutationContext {
        tool: TOOL,
        command: COMMAND,
        operation,
        args: mutation,
        warnings,
        rollback_of: None,
        extra_confirmation: None,
    }
}

async fn run(cli: Cli, ui: &Ui) -> Result<u8, WorkflowError> {
    match cli.command {
        Command::Set {
            args,
            selection,
            overwrite,
            force,
            mutation,
        } => {
            let (names, specs): (Vec<String>, Vec<String>) = args
                .into_iter()
                .partition(|a| !a.contains('=') && !a.ends_with('-'));
            let changes =
                parse_label_changes(&specs).map_err(|e| WorkflowError::Input(e.to_string()))?;
            if changes.is_empty() {
                return Err(WorkflowError::Input(
                    "no label changes given: use KEY=VALUE to set and KEY- to remove".into(),
                ));
            }
            label_command(
                &cli.connection,
                ui,
                names,
                selection,
                changes,
                overwrite,
                force,
                "set",
                &mutation,
            )
            .await
        }
        Command::Remove {
            args,
            selection,
            force,
            mutation,
        } => {
            let (keys, names): (Vec<String>, Vec<String>) = args.into_iter().partition(|a| {
                a.contains('/') || a.ends_with('-') || selection.selector.is_some() || selection.all
            });
            let specs: Vec<String> = keys
                .iter()
                .map(|k| format!("{}-", k.trim_end_matches('-')))
                .collect();
            let changes =
                parse_label_changes(&specs).map_err(|e| WorkflowError::Input(e.to_string()))?;
            if changes.is_empty() {
                return Err(WorkflowError::Input(
                    "no label keys given: keys contain '/' or end with '-' (e.g. pool-)".into(),
                ));
            }
            label_command(
                &cli.connection,
                ui,
                names,
                selection,
                changes,
                false,
                force,
                "remove",
                &mutation,
            )
            .await
        }
        Command::Rollback {
            snapshot,
            last,
            force,
            mutation,
        } => {
            let conn = connect(&cli.connection).await?;
            let snap = workflow::resolve_snapshot(snapshot.as_deref(), last, TOOL, &conn.context)?;
            let report =
                workflow::rollback(&conn, ui, &snap, force, ctx("rollback", &mutation, vec![]))
                    .await?;
            Ok(workflow::print_report(ui, &report))
        }
        Command::Completion { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(
                shell,
                &mut command,
                "kubectl-nodelabel",
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
        Command::Import {
            file,
            dir,
            hook,
            nodes,
            selection,
            naming,
            extra_label_ns,
            prune,
            skip_invalid,
            overwrite,
            hook_timeout,
            mutation,
        } => {
            let source = ImportSource {
                file,
                dir,
                hook,
                naming,
                hook_timeout,
            };
            let options = ImportOptions {
                policy: NamespacePolicy {
                    extra_allowed: extra_label_ns,
                },
                prune,
                skip_invalid,
                overwrite,
            };
            import(
                &cli.connection,
                ui,
                source,
                nodes,
                selection,
                options,
                &mutation,
            )
            .await
        }
        Command::Dependents {
            keys,
            all_namespaces,
        } => {
            let conn = connect(&cli.connection).await?;
            let namespace = if all_namespaces {
                None
            } else {
                cli.connection.namespace.as_deref()
            };
            let queries: Vec<KeyQuery> = keys.iter().map(|k| KeyQuery::parse(k)).collect();
            let (workloads, warnings) = workflow::list_workloads(&conn.client, namespace).await?;
            for w in &warnings {
                ui.warn(w);
            }
            let found = find_dependents(&workloads, &queries);
            print_dependents(ui, &found);
            Ok(exit::SUCCESS)
        }
    }
}

fn print_dependents(ui: &Ui, found: &[Dependent]) {
    if ui.output.is_structured() {
        ui.print_structured(&serde_json::json!({
            "apiVersion": workflow::REPORT_API_VERSION, "kind": "LabelDependents", "items": found
        }));
        return;
    }
    if found.is_empty() {
        println!("no workload depends on these labels");
        return;
    }
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|d| {
            vec![
                d.namespace.clone(),
                d.kind.clone(),
                d.name.clone(),
                d.constraint.as_str().to_string(),
                d.expression.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        placekit::ui::table(
            &["NAMESPACE", "KIND", "NAME", "CONSTRAINT", "EXPRESSION"],
            &rows
        )
    );
}

/// Dependents of the keys these plans remove or change, and whether a removal breaks a
/// required constraint.
async fn dependents_of_plans(
    conn: &Connection,
    plans: &[NodePlan],
) -> Result<(Vec<String>, Vec<String>), WorkflowError> {
    let mut removed: Vec<String> = Vec::new();
    let mut changed: Vec<String> = Vec::new();
    for p in plans {
        for d in &p.label_changes {
            match (&d.before, &d.after) {
                (Some(_), None) if !removed.contains(&d.key) => removed.push(d.key.clone()),
                (Some(_), Some(_)) if !changed.contains(&d.key) => changed.push(d.key.clone()),
                _ => {}
            }
        }
    }
    if removed.is_empty() && changed.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let (workloads, mut warnings) = workflow::list_workloads(&conn.client, None).await?;
    let queries: Vec<KeyQuery> = removed
        .iter()
        .chain(&changed)
        .map(|k| KeyQuery::parse(k))
        .collect();
    let mut blocking = Vec::new();
    for d in find_dependents(&workloads, &queries) {
        let line = format!(
            "{}/{} in namespace {} depends on {} ({}: {}): new replicas may no longer schedule",
            d.kind,
            d.name,
            d.namespace,
            d.key,
            d.constraint.as_str(),
            d.expression
        );
        if removed.contains(&d.key) && d.constraint.is_required() {
            blocking.push(line);
        } else {
            warnings.push(line);
        }
    }
    Ok((warnings, blocking))
}

#[allow(clippy::too_many_arguments)]
async fn label_command(
    connection: &ConnectionArgs,
    ui: &Ui,
    names: Vec<String>,
    selection: Selection,
    changes: Vec<LabelChange>,
    overwrite: bool,
    force: bool,
    operation: &str,
    mutation: &MutationArgs,
) -> Result<u8, WorkflowError> {
    let targets = Targets::from_args(names, selection.selector.as_deref(), selection.all)?;
    let conn = connect(connection).await?;
    let nodes = workflow::fetch_nodes(&conn.client, &targets).await?;
    if nodes.is_empty() {
        return Err(WorkflowError::Input(
            "the selector matches no node; nothing to do".into(),
        ));
    }
    let request = ChangeRequest {
        labels: changes.clone(),
        overwrite,
        ..Default::default()
    };
    let plans: Vec<NodePlan> = nodes.iter().map(|n| plan_node(n, &request)).collect();
    let mut warnings: Vec<String> = changes
        .iter()
        .filter(|c| c.value().is_some())
        .flat_map(|c| placekit::policy::label_warnings(c.key()))
        .collect();
    let (dependents, blocking) = dependents_of_plans(&conn, &plans).await?;
    warnings.extend(dependents);
    if !blocking.is_empty() {
        if force {
            warnings.extend(blocking.into_iter().map(|b| format!("{b} (--force given)")));
        } else {
            return Err(WorkflowError::Blocked(format!(
                "nothing was changed: required scheduling constraints depend on the label{} being removed:\n  {}\nuse --force to remove anyway",
                if blocking.len() == 1 { "" } else { "s" },
                blocking.join("\n  ")
            )));
        }
    }
    let report =
        workflow::apply_plans(&conn, ui, plans, ctx(operation, mutation, warnings)).await?;
    Ok(workflow::print_report(ui, &report))
}

struct ImportSource {
    file: Option<PathBuf>,
    dir: Option<PathBuf>,
    hook: Option<PathBuf>,
    naming: Option<NamingArg>,
    hook_timeout: String,
}

struct ImportOptions {
    policy: NamespacePolicy,
    prune: bool,
    skip_invalid: bool,
    overwrite: bool,
}

async fn import(
    connection: &ConnectionArgs,
    ui: &Ui,
    source: ImportSource,
    names: Vec<String>,
    selection: Selection,
    options: ImportOptions,
    mutation: &MutationArgs,
) -> Result<u8, WorkflowError> {
    let input = |e: nfd::SourceError| WorkflowError::Input(e.to_string());
    let now = jiff::Timestamp::now();
    let naming_for = |default_hook: Option<String>| match (source.naming, default_hook) {
        (Some(NamingArg::File), _) | (None, None) => Naming::File,
        (Some(NamingArg::Hook), Some(h)) | (None, Some(h)) => Naming::Hook { hook_name: h },
        (Some(NamingArg::Hook), None) => Naming::Hook {
            hook_name: "local".into(),
        },
    };
    // (source name, content, nodes it applies to: None = the command's targets)
    let mut sources: Vec<(String, String, Option<String>)> = Vec::new();
    let naming;
    if let Some(file) = &source.file {
        sources.push((
            file.display().to_string(),
            nfd::read_feature_file(file).map_err(input)?,
            None,
        ));
        naming = naming_for(None);
    } else if let Some(dir) = &source.dir {
        if !names.is_empty() || selection.selector.is_some() || selection.all {
            return Err(WorkflowError::Input(
                "--dir names the nodes by its files; do not give nodes or a selector".into(),
            ));
        }
        for (node, path) in nfd::node_files(dir).map_err(input)? {
            sources.push((
                path.display().to_string(),
                nfd::read_feature_file(&path).map_err(input)?,
                Some(node),
            ));
        }
        if sources.is_empty() {
            return Err(WorkflowError::Input(format!(
                "{}: no feature files (expected <node> or <node>.features)",
                dir.display()
            )));
        }
        naming = naming_for(None);
    } else if let Some(hook) = &source.hook {
        let timeout = placekit::connect::parse_request_timeout(&source.hook_timeout)
            .map_err(|e| WorkflowError::Input(e.to_string()))?
            .unwrap_or(Duration::from_secs(10));
        let output = nfd::run_hook(hook, timeout).await.map_err(input)?;
        sources.push((format!("hook {}", hook.display()), output, None));
        naming = naming_for(Some(nfd::hook_name(hook)));
    } else {
        return Err(WorkflowError::Input(
            "give one of --file, --dir or --hook".into(),
        ));
    }

    let mut parsed: Vec<(Option<String>, Vec<nfd::Feature>)> = Vec::new();
    let mut errors = Vec::new();
    for (name, content, node) in &sources {
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
            return Err(WorkflowError::Input(format!(
                "nothing was applied; invalid entries (use --skip-invalid to apply the rest):\n  {}",
                listed.join("\n  ")
            )));
        }
    }

    let conn = connect(connection).await?;
    let targets = match &source.dir {
        Some(_) => Targets::Names(parsed.iter().filter_map(|(n, _)| n.clone()).collect()),
        None => Targets::from_args(names, selection.selector.as_deref(), selection.all)?,
    };
    let nodes = workflow::fetch_nodes(&conn.client, &targets).await?;
    let plans: Vec<NodePlan> = nodes
        .iter()
        .map(|node| {
            let features = parsed
                .iter()
                .find(|(n, _)| n.as_deref().is_none_or(|n| n == node.name))
                .map(|(_, f)| f.as_slice())
                .unwrap_or_default();
            import_plan(node, features, &options)
        })
        .collect();
    let report =
        workflow::apply_plans(&conn, ui, plans, ctx("import", mutation, Vec::new())).await?;
    Ok(workflow::print_report(ui, &report))
}

/// One node's import: features set, earlier imports pruned when asked, the record updated;
/// an existing label the import does not own is only changed with --overwrite.
fn import_plan(node: &NodeState, features: &[nfd::Feature], options: &ImportOptions) -> NodePlan {
    let previous = node
        .annotations
        .get(IMPORTED_LABELS_ANNOTATION)
        .map(String::as_str);
    let owned: Vec<&str> = previous.unwrap_or_default().split(',').collect();
    let (labels, annotation) = nfd::import_changes(previous, features, options.prune);
    let request = ChangeRequest {
        labels,
        annotations: vec![annotation],
        overwrite: true,
        ..Default::default()
    };
    let mut plan = plan_node(node, &request);
    if !options.overwrite {
        for d in &plan.label_changes {
            if let (Some(current), Some(wanted)) = (&d.before, &d.after)
                && !owned.contains(&d.key.as_str())
            {
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
