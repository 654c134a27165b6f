//! `kubectl gpu-taint`: dedicate GPU nodes (taint + pool labels) with a preflight, release
//! them with exactly the same key, value and effect, and show the GPU inventory. A thin
//! layer over the `placekit` core library.

mod commands;
mod flags;
mod status;

use std::process::ExitCode;

use crate::commands::{COMMAND, Dedication, TOOL};
use clap::Parser;
use placekit_cli::complete;
use placekit_cli::error::{CommandError, run_to_exit_code};
use placekit_cli::fleet::Fleet;
use placekit_cli::inventory::{By, StatusOptions};
use placekit_cli::mutation::report::print_report;
use placekit_cli::mutation::undo::{self, SnapshotChoice};
use placekit_cli::ui::Ui;
use placekit_client::targets::Targets;
use placekit_core::exit;
use placekit_core::syntax::{parse_label_changes, parse_taint, parse_taint_to_remove};

use flags::{Cli, Command, Selection, completion_source};

fn main() -> ExitCode {
    placekit_cli::ui::exit_quietly_on_broken_pipe();
    if let Some(code) =
        complete::intercept(<Cli as clap::CommandFactory>::command, completion_source)
    {
        return code;
    }
    // Parse first: --help and --version never build the async runtime or a client.
    let cli = Cli::parse();
    let ui = Ui::new(&cli.display);
    run_to_exit_code(run(cli, &ui))
}

fn targets(selection: &Selection, all_by_default: bool) -> Result<Targets, CommandError> {
    let all = all_by_default && selection.nodes.is_empty() && selection.selector.is_none();
    Ok(Targets::from_args_without_all_flag(
        selection.nodes.clone(),
        selection.selector.as_deref(),
        all,
    )?)
}

fn input(e: impl std::fmt::Display) -> CommandError {
    CommandError::Input(e.to_string())
}

/// The commands that read several contexts, for the others' refusal.
const READERS: &str = "`kubectl gpu-taint status` and `history`";

/// Runs the command the user chose. What is checked before any command runs is read from
/// the command's row ([`Command::row`]).
///
/// Long on purpose: one arm per subcommand, each resolving its flags and calling its
/// command; long because the plugin has that many commands, not because an arm does much.
async fn run(cli: Cli, ui: &Ui) -> Result<u8, CommandError> {
    cli.command.row().admit(
        "gpu-taint",
        READERS,
        ui,
        &cli.fleet,
        cli.connection.namespace.as_deref(),
    )?;
    match cli.command {
        Command::Dedicate {
            selection,
            taint,
            labels,
            resource,
            allow_no_gpu,
            overwrite,
            overrides,
            eviction,
            mutation,
        } => {
            let overrides = overrides.resolve()?;
            let taint = parse_taint(&taint).map_err(input)?;
            if let Some(bare) = labels.iter().find(|l| !l.contains('=')) {
                return Err(input(format!(
                    "--label {bare}: dedicate sets pool labels, so it takes KEY=VALUE"
                )));
            }
            let labels = parse_label_changes(&labels).map_err(input)?;
            let dedication = Dedication {
                taint,
                labels,
                resource,
                allow_no_gpu,
                overwrite,
                overrides,
                ignore_disruption_budgets: eviction.ignore_disruption_budgets,
            };
            commands::dedicate(
                &cli.connection,
                ui,
                targets(&selection, false)?,
                dedication,
                &mutation,
            )
            .await
        }
        Command::Release {
            selection,
            taint,
            labels,
            overrides,
            taint_owner,
            mutation,
        } => {
            let overrides = overrides.resolve()?;
            let taint = taint
                .as_deref()
                .map(parse_taint_to_remove)
                .transpose()
                .map_err(input)?;
            if let Some(with_value) = labels.iter().find(|l| l.contains('=')) {
                return Err(input(format!(
                    "--label {with_value}: release removes pool labels whatever their value, so it takes the KEY alone"
                )));
            }
            let specs: Vec<String> = labels
                .iter()
                .map(|k| format!("{}-", k.trim_end_matches('-')))
                .collect();
            let labels = parse_label_changes(&specs).map_err(input)?;
            commands::release(
                &cli.connection,
                ui,
                targets(&selection, false)?,
                taint,
                labels,
                commands::ReleaseOverrides {
                    policy: overrides,
                    ignore_taint_owner: taint_owner.ignore_taint_owner,
                },
                &mutation,
            )
            .await
        }
        Command::Rollback { rollback, mutation } => {
            let request = rollback.request()?;
            let conn = placekit_cli::ui::connect(&cli.connection).await?;
            let report = undo::rollback(&conn, ui, TOOL, COMMAND, request, &mutation).await?;
            Ok(print_report(ui, &report))
        }
        Command::Status {
            selection,
            resource,
            class,
            by,
            all_namespaces,
            label_columns,
            sort_by,
            free_only,
            group_by,
            watch,
        } => {
            let namespace = cli.connection.namespace.clone().filter(|_| !all_namespaces);
            let options = StatusOptions {
                resource,
                class,
                // `-n ml` alone is the runbook's per-pod script for that namespace.
                by: by.or(namespace.as_ref().map(|_| By::Pod)),
                namespace,
                label_columns,
                sort_by: sort_by
                    .as_deref()
                    .map(placekit_core::jsonpath::SortKey::parse)
                    .transpose()
                    .map_err(|e| input(format!("--sort-by: {e}")))?,
                free_only,
                group_by,
            };
            let table_only = [
                ("--sort-by", options.sort_by.is_some()),
                ("--free-only", options.free_only),
                ("--group-by", options.group_by.is_some()),
                ("-L/--label-columns", !options.label_columns.is_empty()),
                ("-o wide", ui.output == placekit_cli::ui::OutputFormat::Wide),
                (
                    "-o openmetrics",
                    ui.output == placekit_cli::ui::OutputFormat::OpenMetrics,
                ),
            ];
            if let (Some(_), Some((flag, _))) =
                (options.by, table_only.iter().find(|(_, given)| *given))
            {
                return Err(input(format!(
                    "{flag} shapes the node table: it cannot be combined with --by or -n, which print a table of namespaces or pods"
                )));
            }
            let targets = targets(&selection, true)?;
            let fleet = Fleet::resolve(&cli.connection, &cli.fleet)?;
            if fleet.is_some() && options.group_by.is_some() {
                return Err(input(
                    "--group-by groups one cluster's nodes: it cannot be combined with --contexts or --all-contexts",
                ));
            }
            if watch {
                if options.by.is_some() {
                    return Err(input(
                        "-w/--watch prints the node table: it cannot be combined with --by or -n",
                    ));
                }
                if fleet.is_some() {
                    return Err(input(
                        "-w/--watch watches one cluster: it cannot be combined with --contexts or --all-contexts",
                    ));
                }
                if ui.output.is_structured() {
                    return Err(input(
                        "-w/--watch prints table rows: use the default output or -o wide",
                    ));
                }
                if options.free_only || options.group_by.is_some() {
                    return Err(input(
                        "-w/--watch prints each node that changes: it cannot be combined with --free-only or --group-by",
                    ));
                }
                let conn = placekit_cli::ui::connect(&cli.connection).await?;
                return status::watch_status(&conn, ui, &targets, &options).await;
            }
            commands::status_command(&cli.connection, fleet.as_ref(), ui, targets, &options).await
        }
        Command::ServeMetrics {
            selection,
            listen,
            resource,
            pool_label,
        } => {
            let options = StatusOptions {
                resource,
                group_by: pool_label,
                ..StatusOptions::default()
            };
            let targets = targets(&selection, true)?;
            let conn = placekit_cli::ui::connect(&cli.connection).await?;
            status::serve_metrics(&conn, ui, &targets, &options, listen).await
        }
        Command::Completion(args) => {
            complete::run_completion(
                &args,
                <Cli as clap::CommandFactory>::command(),
                "kubectl-gpu_taint",
                "gpu-taint",
            )?;
            Ok(exit::SUCCESS)
        }
        Command::History => {
            undo::print_history(ui, &undo::history(TOOL, &cli.fleet)?);
            Ok(exit::SUCCESS)
        }
        Command::Show { snapshot, last } => {
            let choice = SnapshotChoice::from_args(snapshot.as_deref(), last)?;
            undo::show(&cli.connection, ui, TOOL, choice).await
        }
    }
}
