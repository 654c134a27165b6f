//! `kubectl affinity-lint`: lint workloads for scheduling mistakes — above all required
//! `nodeSelectorTerms` split into OR-ed terms — with positions, fixes and CI outputs.
//! Needs no cluster. A thin layer over the `placekit` core library: [`flags`] turns the
//! command line into settings, [`run`] lints, [`live`] reads the cluster for `--cluster`,
//! `drift` and `why-pending`.

mod flags;
mod help;
mod live;
mod metrics;
mod run;
mod serve;

use std::process::ExitCode;

use placekit_cli::complete;
use placekit_cli::error::{self, CommandError, block_on};
use placekit_cli::fleet::Fleet;
use placekit_cli::ui::{TextShape, Ui};

use flags::{Cli, Mode};

fn main() -> ExitCode {
    placekit_cli::ui::exit_quietly_on_broken_pipe();
    if let Some(code) = complete::intercept(flags::command, flags::completion_source) {
        return code;
    }
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&flags::command().get_matches())
    {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    error::exit_code(dispatch(&cli))
}

/// Runs what the flags ask for; the exit code, or why the command stopped. Only the
/// commands that call a cluster start an async runtime.
fn dispatch(cli: &Cli) -> Result<u8, CommandError> {
    match flags::resolve(cli)? {
        Mode::Rules(id) => rules(id.as_deref()),
        Mode::Policy(yaml) => {
            run::write_out(&yaml, false);
            Ok(placekit_core::exit::SUCCESS)
        }
        Mode::Completion(args) => {
            complete::run_completion(
                &args,
                flags::command(),
                "kubectl-affinity_lint",
                "affinity-lint",
            )?;
            Ok(placekit_core::exit::SUCCESS)
        }
        Mode::ServeMetrics {
            log,
            namespaces,
            listen,
            interval,
        } => {
            cli.fleet.refuse(
                "kubectl affinity-lint serve-metrics",
                "`kubectl affinity-lint --cluster` and `drift`",
            )?;
            let ui = Ui::new(&placekit_cli::ui::DisplayArgs {
                log,
                ..Default::default()
            });
            block_on(async {
                let conn = placekit_cli::ui::connect(&cli.connection).await?;
                let namespace = namespaces.on(&conn).map(str::to_string);
                serve::serve_metrics(&conn, &ui, namespace.as_deref(), listen, interval).await
            })
        }
        Mode::Drift {
            display,
            namespaces,
            selector,
        } => {
            let ui = Ui::new(&display);
            ui.check_metrics_shape("affinity-lint drift", TextShape::Table)?;
            block_on(async {
                match Fleet::resolve(&cli.connection, &cli.fleet)? {
                    Some(fleet) => {
                        live::drift_fleet(&fleet, &ui, &namespaces, selector.as_deref()).await
                    }
                    None => {
                        let conn = placekit_cli::ui::connect(&cli.connection).await?;
                        let namespace = namespaces.on(&conn);
                        live::drift(&conn, &ui, namespace, selector.as_deref()).await
                    }
                }
            })
        }
        Mode::WhyPending {
            display,
            pod,
            all_namespaces,
            selector,
            watch,
        } => {
            cli.fleet.refuse(
                "kubectl affinity-lint why-pending",
                "`kubectl affinity-lint --cluster` and `drift`",
            )?;
            let ui = Ui::new(&display);
            // One pod's report has a node table; the summary of every pending pod widens.
            match &pod {
                Some(_) => ui.check_shape("affinity-lint why-pending POD", TextShape::Table)?,
                None => {
                    ui.check_metrics_shape("affinity-lint why-pending", TextShape::WideTable)?
                }
            }
            block_on(async {
                let conn = placekit_cli::ui::connect(&cli.connection).await?;
                match &pod {
                    Some(pod) if watch => {
                        live::why_pending(&conn, &ui, &conn.namespace, pod).await?;
                        live::follow_pending(&conn, &conn.namespace, pod).await
                    }
                    Some(pod) => live::why_pending(&conn, &ui, &conn.namespace, pod).await,
                    None => {
                        let namespace = (!all_namespaces).then_some(conn.namespace.as_str());
                        live::why_pending_all(&conn, &ui, namespace, selector.as_deref()).await
                    }
                }
            })
        }
        Mode::Lint(settings) => run::run(&settings, &cli.connection, &cli.fleet),
    }
}

/// `rules [ID]`: the catalogue, or one rule's page.
fn rules(id: Option<&str>) -> Result<u8, CommandError> {
    let page = match id {
        None => Some(placekit_lint::rules::catalogue_table()),
        Some(id) => placekit_lint::rules::page(id),
    };
    match page {
        Some(text) => {
            run::write_out(&text, false);
            Ok(placekit_core::exit::SUCCESS)
        }
        None => Err(CommandError::Input(format!(
            "unknown rule {:?}; `kubectl affinity-lint rules` lists them",
            id.unwrap_or_default()
        ))),
    }
}
