//! `kubectl nodelabel`: set and remove node labels with a snapshot first and exact-match
//! rollback, import node features in node-feature-discovery's format, and show who depends
//! on a label. A thin layer over the `placekit` core library.

mod commands;
mod flags;
mod hook;

use std::process::ExitCode;
use std::time::Duration;

use crate::commands::{COMMAND, FeatureSource, ImportOptions, LabelRequest, TOOL};
use clap::Parser;
use placekit_cli::complete;
use placekit_cli::error::{CommandError, run_to_exit_code};
use placekit_cli::fleet::Fleet;
use placekit_cli::mutation::report::print_report;
use placekit_cli::mutation::undo::{self, SnapshotChoice};
use placekit_cli::ui::{TextShape, Ui};
use placekit_client::targets::Targets;
use placekit_core::exit;
use placekit_core::nfd::{NamespacePolicy, Naming};
use placekit_core::syntax::parse_label_changes;

use flags::{Cli, Command, NamingArg, Selection, completion_source};

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

fn input(e: impl std::fmt::Display) -> CommandError {
    CommandError::Input(e.to_string())
}

fn targets(names: Vec<String>, selection: &Selection) -> Result<Targets, CommandError> {
    Ok(Targets::from_args(
        names,
        selection.selector.as_deref(),
        selection.all,
    )?)
}

/// Runs the command the user chose. What is checked before any command runs is read from
/// the command's row ([`Command::row`]).
///
/// Long on purpose: one arm per subcommand, each resolving its flags and calling its
/// command; long because the plugin has that many commands, not because an arm does much.
async fn run(cli: Cli, ui: &Ui) -> Result<u8, CommandError> {
    cli.command.row().admit(
        "nodelabel",
        "`kubectl nodelabel dependents` and `history`",
        ui,
        &cli.fleet,
        cli.connection.namespace.as_deref(),
    )?;
    match cli.command {
        Command::Set {
            args,
            selection,
            overwrite,
            overrides,
            mutation,
        } => {
            let overrides = overrides.resolve()?;
            let (names, specs): (Vec<String>, Vec<String>) = args
                .into_iter()
                .partition(|a| !a.contains('=') && !a.ends_with('-'));
            let changes = parse_label_changes(&specs).map_err(input)?;
            if changes.is_empty() {
                return Err(input(
                    "no label changes given: use KEY=VALUE to set and KEY- to remove",
                ));
            }
            let targets = targets(names, &selection)?;
            let request = LabelRequest {
                operation: "set",
                changes,
                overwrite,
                overrides,
            };
            commands::change_labels(&cli.connection, ui, targets, request, &mutation).await
        }
        Command::Remove {
            args,
            selection,
            overrides,
            mutation,
        } => {
            let overrides = overrides.resolve()?;
            let (keys, names): (Vec<String>, Vec<String>) = args.into_iter().partition(|a| {
                (a.contains('/') && !a.starts_with("node/") && !a.starts_with("nodes/"))
                    || a.ends_with('-')
                    || selection.selector.is_some()
                    || selection.all
            });
            let specs: Vec<String> = keys
                .iter()
                .map(|k| format!("{}-", k.trim_end_matches('-')))
                .collect();
            let changes = parse_label_changes(&specs).map_err(input)?;
            if changes.is_empty() {
                return Err(input(
                    "no label keys given: keys contain '/' or end with '-' (e.g. pool-)",
                ));
            }
            let targets = targets(names, &selection)?;
            let request = LabelRequest {
                operation: "remove",
                changes,
                overwrite: false,
                overrides,
            };
            commands::change_labels(&cli.connection, ui, targets, request, &mutation).await
        }
        Command::Rollback { rollback, mutation } => {
            let request = rollback.request()?;
            let conn = placekit_cli::ui::connect(&cli.connection).await?;
            let report = undo::rollback(&conn, ui, TOOL, COMMAND, request, &mutation).await?;
            Ok(print_report(ui, &report))
        }
        Command::Completion(args) => {
            complete::run_completion(
                &args,
                <Cli as clap::CommandFactory>::command(),
                "kubectl-nodelabel",
                "nodelabel",
            )?;
            Ok(exit::SUCCESS)
        }
        Command::History => {
            undo::print_history(ui, &undo::history(TOOL, &cli.fleet)?);
            Ok(exit::SUCCESS)
        }
        Command::Show {
            args,
            last,
            selector,
        } => {
            // One argument that names a snapshot (or --last) is a snapshot; nodes otherwise.
            let snapshot = match args.as_slice() {
                [one] if selector.is_none() && undo::names_snapshot(one) => Some(one.as_str()),
                [] if selector.is_none() => None,
                _ if last => {
                    return Err(input("give a SNAPSHOT or --last, not nodes with --last"));
                }
                _ => {
                    let targets = Targets::from_args(args, selector.as_deref(), false)?;
                    return commands::show_labels(&cli.connection, ui, &targets).await;
                }
            };
            ui.check_shape("nodelabel show SNAPSHOT", TextShape::Report)?;
            let choice = SnapshotChoice::from_args(snapshot, last)?;
            undo::show(&cli.connection, ui, TOOL, choice).await
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
            overrides,
            allow_identical_features,
            hook_timeout,
            mutation,
        } => {
            let overrides = overrides.resolve()?;
            let source = match (file, dir, hook) {
                (Some(f), None, None) => FeatureSource::File(f),
                (None, Some(d), None) => FeatureSource::Dir(d),
                (None, None, Some(path)) => FeatureSource::Hook {
                    timeout: placekit_client::connect::parse_request_timeout(&hook_timeout)
                        .map_err(input)?
                        .unwrap_or(Duration::from_secs(10)),
                    path: placekit_core::nfd::resolve_hook(&path).map_err(input)?,
                },
                _ => return Err(input("give one of --file, --dir or --hook")),
            };
            let given = !nodes.is_empty() || selection.selector.is_some() || selection.all;
            let targets = given.then(|| targets(nodes, &selection)).transpose()?;
            let naming = naming.map(|n| match (n, &source) {
                (NamingArg::File, _) => Naming::File,
                (NamingArg::Hook, FeatureSource::Hook { path, .. }) => Naming::Hook {
                    hook_name: placekit_core::nfd::hook_name(path),
                },
                (NamingArg::Hook, _) => Naming::Hook {
                    hook_name: "local".into(),
                },
            });
            let options = ImportOptions {
                naming,
                policy: NamespacePolicy {
                    extra_allowed: extra_label_ns,
                },
                prune,
                skip_invalid,
                overwrite,
                overrides,
                allow_identical_features,
            };
            commands::import(&cli.connection, ui, source, targets, options, &mutation).await
        }
        Command::Dependents {
            keys,
            all_namespaces,
        } => {
            let namespace = if all_namespaces {
                None
            } else {
                cli.connection.namespace.as_deref()
            };
            let fleet = Fleet::resolve(&cli.connection, &cli.fleet)?;
            commands::dependents(&cli.connection, fleet.as_ref(), ui, &keys, namespace).await
        }
    }
}
