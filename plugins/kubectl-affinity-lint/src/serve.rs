//! `serve-metrics`: `drift` and `why-pending` as an exporter. Judging a pending pod needs the
//! whole scheduling view (nodes, pods, volumes, claims, PodGroups), and a drifted pod the
//! running pods' placements, so each is read and judged again every `--interval` (one read
//! each, as the commands make; the families of the last judgement are kept, not the cluster)
//! and `/metrics` serves the last judgement. `/healthz` answers 503 while the last attempt
//! failed (the previous judgement is still served, with `placekit_read_up` 0).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use placekit_cli::error::CommandError;
use placekit_cli::output::metrics_server::{self, MetricsSource};
use placekit_cli::output::openmetrics::{Family, ReadOutcome, read_families, render};
use placekit_cli::ui::Ui;
use placekit_client::connect::Connection;

use crate::metrics::{ClusterDrift, drift_families, pending_families};

/// The last judgement.
#[derive(Default)]
struct Judged {
    families: Vec<Family>,
    /// How long the last successful judgement's reads took.
    took: Duration,
    /// Why the last attempt failed, until one succeeds.
    error: Option<String>,
}

struct Served(Mutex<Judged>);

impl Served {
    fn judged(&self) -> std::sync::MutexGuard<'_, Judged> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl MetricsSource for Served {
    fn exposition(&self) -> String {
        let judged = self.judged();
        let mut families = judged.families.clone();
        families.extend(read_families(&[ReadOutcome {
            context: None,
            ok: judged.error.is_none(),
            seconds: Some(judged.took.as_secs_f64()),
        }]));
        render(&families)
    }

    fn health(&self) -> Result<(), String> {
        match &self.judged().error {
            None => Ok(()),
            Some(e) => Err(format!("the last judgement failed: {e}")),
        }
    }
}

/// Serves drift's and why-pending's metrics for `namespace` (`None`: every one) on
/// `listen`, judged again every `interval`, until interrupted. The first judgement is made
/// before anything is served, so a scrape never sees an empty state.
pub async fn serve_metrics(
    conn: &Connection,
    ui: &Ui,
    namespace: Option<&str>,
    listen: SocketAddr,
    interval: Duration,
) -> Result<u8, CommandError> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| CommandError::Input(format!("--listen {listen}: {e}")))?;
    let served = Arc::new(Served(Mutex::new(judge(conn, ui, namespace).await?)));
    let address = listener.local_addr().unwrap_or(listen);
    eprintln!(
        "serving /metrics and /healthz on http://{address} (drift and pending pods of {}, judged every {})",
        namespace.map_or("every namespace".to_string(), |n| format!("namespace {n}")),
        humantime(interval)
    );
    let again = {
        let (conn, ui, served) = (conn.clone(), ui.clone(), served.clone());
        let namespace = namespace.map(str::to_string);
        async move {
            loop {
                tokio::time::sleep(interval).await;
                match judge(&conn, &ui, namespace.as_deref()).await {
                    Ok(judged) => *served.judged() = judged,
                    Err(e) => {
                        ui.warn(&format!("judging drift and pending pods again: {e}"));
                        served.judged().error =
                            Some(placekit_client::secrets::redact(&e.to_string()));
                    }
                }
            }
        }
    };
    tokio::spawn(again);
    metrics_server::serve(listener, served).await;
    Ok(placekit_core::exit::SUCCESS)
}

/// One judgement: drift's read and why-pending's, their families.
async fn judge(
    conn: &Connection,
    ui: &Ui,
    namespace: Option<&str>,
) -> Result<Judged, CommandError> {
    let started = Instant::now();
    let found = crate::live::read_drift_for_metrics(conn, namespace).await?;
    let (pending, _) = crate::live::judge_pending(conn, ui, namespace, None).await?;
    let mut families = drift_families(&[ClusterDrift {
        context: None,
        found: Some((found.0.as_slice(), found.1, found.2.as_slice())),
        took: Duration::ZERO,
    }]);
    families.extend(pending_families(&pending));
    Ok(Judged {
        families,
        took: started.elapsed(),
        error: None,
    })
}

/// `90s` as `1m30s`, `60s` as `1m`.
fn humantime(d: Duration) -> String {
    let secs = d.as_secs();
    match (secs / 60, secs % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}
