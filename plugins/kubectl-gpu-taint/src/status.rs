//! `kubectl gpu-taint status`: the inventory `placekit_cli::inventory` reads, rendered (a
//! table per node and accelerator, `--by namespace|pod`, JSON/YAML, several clusters) and
//! followed with `-w`.

mod metrics;
mod render;
mod serve;
mod watch;

use placekit_cli::error::CommandError;
use placekit_cli::inventory::{Reading, StatusOptions, read_status};
use placekit_cli::output::openmetrics::failed_read;
use placekit_cli::ui::{OutputFormat, Ui};
use placekit_client::connect::Connection;
use placekit_client::targets::Targets;
use placekit_core::exit;

pub use metrics::{ClusterStatus, status_metrics};
pub use render::{describe_accelerators, print_fleet_status, print_status};
pub use serve::serve_metrics;
pub use watch::watch_status;

/// `status`: the accelerator inventory of the targets (all nodes by default).
pub async fn status(
    conn: &Connection,
    ui: &Ui,
    targets: &Targets,
    options: &StatusOptions,
) -> Result<u8, CommandError> {
    let started = std::time::Instant::now();
    let found = match read_status(conn, targets, options, Reading::One).await {
        Ok(found) => found,
        // The cluster could not be read: the exposition says so (placekit_read_up 0).
        Err(e) if ui.output == OutputFormat::OpenMetrics && e.exit_code() == exit::CLUSTER => {
            print!("{}", failed_read(started.elapsed().as_secs_f64()));
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    for n in &found.notes {
        ui.warn(n);
    }
    if ui.output == OutputFormat::OpenMetrics {
        print!(
            "{}",
            status_metrics(&[ClusterStatus {
                context: None,
                view: Some(&found.view),
                read_up: true,
                group_by: options.group_by.as_deref(),
                took: started.elapsed(),
            }])
        );
        return Ok(exit::SUCCESS);
    }
    print_status(ui, targets, options, &found.view);
    Ok(exit::SUCCESS)
}
