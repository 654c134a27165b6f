//! `kubectl gpu-taint status`: the accelerator inventory read from the cluster in a few paged
//! lists (nodes, active pods, and DRA's device classes, resource slices and claims when the
//! cluster serves them), never a call per node; and its renderings (a table per node and
//! accelerator, `--by namespace|pod`, JSON/YAML).

mod read;
mod render;
mod watch;

use crate::connect::Connection;
use crate::error::CommandError;
use crate::exit;
use crate::targets::Targets;
use crate::ui::Ui;

pub use read::{
    By, DraRead, NodeGroup, Reading, RequestRow, Status, StatusOptions, StatusView, node_view,
    read_dra, read_status, resources_for,
};
pub use render::{describe_accelerators, print_fleet_status, print_status};
pub use watch::watch_status;

/// `status`: the accelerator inventory of the targets (all nodes by default).
pub async fn status(
    conn: &Connection,
    ui: &Ui,
    targets: &Targets,
    options: &StatusOptions,
) -> Result<u8, CommandError> {
    let found = read_status(conn, targets, options, Reading::One).await?;
    for n in &found.notes {
        ui.warn(n);
    }
    print_status(ui, targets, options, &found.view);
    Ok(exit::SUCCESS)
}
