//! `serve-metrics`: `status -o openmetrics` as an exporter. The inventory is listed once and
//! then kept current from the watches `status -w` uses (resumed from the last version seen,
//! listed again on 410 Gone), so memory is what `status -w` keeps: the target nodes and, per
//! node, the accelerator requests of its pods. `GET /metrics` renders the families from that
//! state under a short lock; `GET /healthz` answers 200 while the watches follow the
//! cluster and 503 with the last error while they are being restarted (meanwhile
//! `/metrics` serves what they last saw, with `placekit_read_up 0`).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::metrics::{ClusterStatus, status_metrics};
use super::watch::{Names, Shared, Watched, follow, list, lock};
use placekit_cli::error::CommandError;
use placekit_cli::inventory::{StatusOptions, nodes_view, read_dra};
use placekit_cli::output::metrics_server::{self, MetricsSource};
use placekit_cli::ui::Ui;
use placekit_client::connect::Connection;
use placekit_client::targets::Targets;
use placekit_core::dra::DraInventory;
use placekit_core::model::Node;

/// How the watches stand, for `/healthz` and `placekit_read_up`.
#[derive(Debug, Default)]
struct Health {
    /// The last error that ended the watches, until they follow the cluster again.
    error: Option<String>,
    /// How long the last full list took.
    listed_in: Duration,
}

/// What every request reads.
struct Served {
    inventory: Shared,
    health: Mutex<Health>,
    dra: DraInventory,
    options: StatusOptions,
}

/// Serves the inventory's metrics on `listen` until interrupted.
pub async fn serve_metrics(
    conn: &Connection,
    ui: &Ui,
    targets: &Targets,
    options: &StatusOptions,
    listen: SocketAddr,
) -> Result<u8, CommandError> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| CommandError::Input(format!("--listen {listen}: {e}")))?;
    let dra = read_dra(conn, false).await?;
    for n in &dra.notes {
        ui.warn(n);
    }
    let started = Instant::now();
    let mut watched = Watched::default();
    list(conn, targets, options, &mut watched, Names::MustExist).await?;
    // `status --resource` refuses a resource no node has; an exporter serves on, since a
    // pool scaled to zero or a MIG profile not configured yet has none today, but a typo
    // (`nvidia.com/gpus`) must not pass for an empty pool.
    if let Some(resource) = &options.resource
        && dra.inventory.class_serving(resource).is_none()
    {
        let nodes: Vec<Node> = watched.nodes.values().cloned().collect();
        if let Some(unknown) = placekit_core::gpu::unknown_resource(&nodes, resource) {
            ui.warn(&format!(
                "--resource {resource}: its families stay empty until a node offers it ({})",
                unknown.message
            ));
        }
    }
    let served = Arc::new(Served {
        inventory: Arc::new(Mutex::new(watched)),
        health: Mutex::new(Health {
            error: None,
            listed_in: started.elapsed(),
        }),
        dra: dra.inventory,
        options: options.clone(),
    });
    let address = listener.local_addr().unwrap_or(listen);
    eprintln!(
        "serving /metrics and /healthz on http://{address} ({} watched)",
        placekit_core::text::count(lock(&served.inventory).nodes.len(), "node")
    );
    tokio::spawn(keep_current(
        conn.clone(),
        targets.clone(),
        served.clone(),
        ui.clone(),
    ));
    metrics_server::serve(listener, served).await;
    Ok(placekit_core::exit::SUCCESS)
}

/// Follows the cluster for ever: when the watches end with an error (the API server
/// restarting, RBAC changed), `/healthz` says so, and after a growing pause (1 s to 30 s) the
/// inventory is listed again and followed from there.
async fn keep_current(conn: Connection, targets: Targets, served: Arc<Served>, ui: Ui) {
    let mut pause = Duration::from_secs(1);
    loop {
        let outcome = follow(
            &conn,
            &targets,
            &served.options,
            &served.inventory,
            |_, _| {},
        )
        .await;
        if let Err(e) = outcome {
            ui.warn(&format!(
                "the watches stopped, restarting them in {pause:?}: {e}"
            ));
            health(&served).error = Some(placekit_client::secrets::redact(&e.to_string()));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(30));
        let started = Instant::now();
        let mut fresh = Watched::default();
        match list(
            &conn,
            &targets,
            &served.options,
            &mut fresh,
            Names::MayBeGone,
        )
        .await
        {
            Ok(()) => {
                *lock(&served.inventory) = fresh;
                let mut health = health(&served);
                health.error = None;
                health.listed_in = started.elapsed();
                pause = Duration::from_secs(1);
            }
            Err(e) => {
                ui.warn(&format!("listing the inventory again: {e}"));
                health(&served).error = Some(placekit_client::secrets::redact(&e.to_string()));
            }
        }
    }
}

fn health(served: &Served) -> std::sync::MutexGuard<'_, Health> {
    served
        .health
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl MetricsSource for Served {
    fn exposition(&self) -> String {
        let (error, listed_in) = {
            let h = health(self);
            (h.error.clone(), h.listed_in)
        };
        let (nodes, requested): (Vec<Node>, _) = {
            let watched = lock(&self.inventory);
            (
                watched.nodes.values().cloned().collect(),
                watched.requested.clone(),
            )
        };
        let view = nodes_view(&nodes, &requested, &self.dra, &self.options).ok();
        status_metrics(&[ClusterStatus {
            context: None,
            // What the watches last saw, while they are restarted too (read_up says so).
            view: view.as_ref(),
            read_up: error.is_none() && view.is_some(),
            group_by: self.options.group_by.as_deref(),
            took: listed_in,
        }])
    }

    fn health(&self) -> Result<(), String> {
        match &health(self).error {
            None => Ok(()),
            Some(e) => Err(format!("the watches stopped and are being restarted: {e}")),
        }
    }
}
