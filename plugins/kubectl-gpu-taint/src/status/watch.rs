//! `status -w`: the inventory table, then a node's rows again each time they change, as
//! `kubectl get -w` prints an object again. Built on the watch API, not polling: one list of
//! the nodes and one of the active pods give the starting state and the resourceVersions
//! the two watches start from, so no change between the lists and the watches is lost.
//!
//! What is kept is what the table needs: the target nodes, and per pod that asks for an
//! accelerator, its node and requests (a pod without one costs nothing). A node's rows are
//! printed again only when their text changes: the kubelet's heartbeats and pods that ask
//! for no accelerator print nothing. DRA devices are counted as the first read found them
//! (the watch covers nodes and pods). A watch resumes from the last resourceVersion it saw
//! (an event's or a bookmark's), so nothing is printed twice; one that ends at once is
//! started again after a growing pause.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::StreamExt as _;
use kube::core::WatchEvent;
use serde_json::Value;

use super::render::{inventory_header, node_rows, print_status};
use placekit_cli::error::CommandError;
use placekit_cli::inventory::{StatusOptions, StatusView, counted_resources, nodes_view, read_dra};
use placekit_cli::ui::Ui;
use placekit_client::api::{self, POD_PAGE};
use placekit_client::connect::Connection;
use placekit_client::targets::Targets;
use placekit_core::accelerators::{self, Scope};
use placekit_core::model::{Node, Pod};
use placekit_core::text::aligned_rows;

/// The pods `status` counts: those that hold their resources.
const ACTIVE_PODS: &str = "status.phase!=Succeeded,status.phase!=Failed";

/// One pod's accelerator requests and the node they are counted on.
type Requests = (String, BTreeMap<String, i128>);

/// What the watch keeps: the target nodes and, per node, its pods' accelerator requests.
#[derive(Default)]
pub(super) struct Watched {
    pub(super) nodes: BTreeMap<String, Node>,
    /// Per pod (namespace, name) that asks for an accelerator and is bound.
    pods: HashMap<(String, String), Requests>,
    /// Per node, the sum of its pods' requests.
    pub(super) requested: BTreeMap<String, BTreeMap<String, i128>>,
    node_version: String,
    pod_version: String,
}

/// What `status -w` has printed: each node's rows, and the columns' widths so far (changed
/// rows line up under the table).
#[derive(Default)]
struct Printer {
    printed: BTreeMap<String, Vec<Vec<String>>>,
    widths: Vec<usize>,
}

/// The inventory a watch keeps current, shared with whoever reads it (the exporter's
/// scrapes) while the watch applies events.
pub(super) type Shared = std::sync::Arc<std::sync::Mutex<Watched>>;

/// Locks the shared inventory (a poisoned lock still holds the last state).
pub(super) fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Watched> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `status -w`: prints the table, then each node's rows again when they change, until
/// interrupted. A watch the server ends is resumed from the last version seen; one whose
/// version is too old (410 Gone) starts over from new lists, printing what changed.
pub async fn watch_status(
    conn: &Connection,
    ui: &Ui,
    targets: &Targets,
    options: &StatusOptions,
) -> Result<u8, CommandError> {
    let dra = read_dra(conn, false).await?;
    for n in &dra.notes {
        ui.warn(n);
    }
    let mut watched = Watched::default();
    list(conn, targets, options, &mut watched, Names::MustExist).await?;
    let mut printer = Printer::default();
    let nodes: Vec<Node> = watched.nodes.values().cloned().collect();
    let view = nodes_view(&nodes, &watched.requested, &dra.inventory, options)?;
    let header = inventory_header(ui, options);
    let _ = aligned_rows(std::slice::from_ref(&header), &mut printer.widths);
    if let StatusView::Nodes {
        rows, by_resource, ..
    } = &view
    {
        for row in rows {
            let printed = node_rows(ui, row, options);
            let _ = aligned_rows(&printed, &mut printer.widths);
            printer.printed.insert(row.primary.name.clone(), printed);
        }
        // The totals' first cell (`TOTAL (12 nodes)`) can be the widest; `--no-headers`
        // prints one row per node and no totals, so they do not widen it there.
        if !ui.no_headers {
            let totals: Vec<Vec<String>> = by_resource
                .iter()
                .map(|t| {
                    vec![format!(
                        "TOTAL ({})",
                        placekit_core::text::count(t.nodes, "node")
                    )]
                })
                .collect();
            let _ = aligned_rows(&totals, &mut printer.widths);
        }
    }
    print_status(ui, targets, options, &view);
    let shared: Shared = std::sync::Arc::new(std::sync::Mutex::new(watched));
    follow(conn, targets, options, &shared, |watched, changed| {
        print_changed(ui, &mut printer, watched, changed, &dra.inventory, options)
    })
    .await?;
    Ok(placekit_core::exit::SUCCESS)
}

/// Keeps `shared` current from watches of the target nodes and the active pods, from the
/// versions its lists ended at, calling `changed` with the nodes each event may have changed
/// (under the lock). A watch the server ends is resumed from the last version seen (an
/// event's or a bookmark's); one too old for the server (410 Gone) starts over from new
/// lists, reporting every node then or before. Returns only with an error.
pub(super) async fn follow(
    conn: &Connection,
    targets: &Targets,
    options: &StatusOptions,
    shared: &Shared,
    mut changed: impl FnMut(&Watched, BTreeSet<String>),
) -> Result<(), CommandError> {
    let label_selector = match targets {
        Targets::Selector(s) => Some(s.to_string()),
        _ => None,
    };
    let mut restart = api::WatchRestart::default();
    loop {
        restart.started();
        let (node_version, pod_version) = {
            let w = lock(shared);
            (w.node_version.clone(), w.pod_version.clone())
        };
        let nodes = api::watch::<Value>(
            &conn.client,
            "/api/v1/nodes",
            None,
            label_selector.as_deref(),
            &node_version,
        )
        .await?;
        let pods = api::watch::<Value>(
            &conn.client,
            "/api/v1/pods",
            Some(ACTIVE_PODS),
            None,
            &pod_version,
        )
        .await?;
        // Either watch ending (the server's timeout) ends both: they resume together.
        let ended = || futures::stream::once(async { Ok(Change::Ended) });
        let mut events = std::pin::pin!(futures::stream::select(
            nodes
                .map(|e| e.map(|e| Change::Node(Box::new(e))))
                .chain(ended()),
            pods.map(|e| e.map(|e| Change::Pod(Box::new(e))))
                .chain(ended()),
        ));
        let mut gone = false;
        while let Some(event) = events.next().await {
            let (event, of_nodes) = match event? {
                Change::Ended => break,
                Change::Node(event) => (*event, true),
                Change::Pod(event) => (*event, false),
            };
            if let WatchEvent::Error(status) = event {
                // Too old for the server (410): listed again below.
                gone = status.code == 410;
                if gone {
                    break;
                }
                return Err(watch_error(status));
            }
            let mut watched = lock(shared);
            let nodes = if of_nodes {
                let (event, version) = typed::<Node>(event)?;
                watched.node_version = version.unwrap_or(std::mem::take(&mut watched.node_version));
                watched.node_event(event, targets)
            } else {
                let (event, version) = typed::<Pod>(event)?;
                watched.pod_version = version.unwrap_or(std::mem::take(&mut watched.pod_version));
                watched.pod_event(event, options)
            };
            changed(&watched, nodes);
        }
        if gone {
            // Too old for the server: list again and say what changed meanwhile.
            let mut fresh = Watched::default();
            list(conn, targets, options, &mut fresh, Names::MayBeGone).await?;
            let mut watched = lock(shared);
            let nodes: BTreeSet<String> = watched
                .nodes
                .keys()
                .chain(fresh.nodes.keys())
                .cloned()
                .collect();
            *watched = fresh;
            changed(&watched, nodes);
        }
        restart.ended().await;
    }
}

/// A watch event's object read into the view type `T`, with the resourceVersion it carries:
/// a watch resumed from the last one seen replays nothing.
fn typed<T: serde::de::DeserializeOwned>(
    event: WatchEvent<Value>,
) -> Result<(WatchEvent<T>, Option<String>), CommandError> {
    let read = |v: Value| -> Result<(T, Option<String>), CommandError> {
        let version = v["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_string);
        let object = serde_json::from_value(v)
            .map_err(|e| CommandError::Cluster(format!("unreadable watch event: {e}")))?;
        Ok((object, version))
    };
    Ok(match event {
        WatchEvent::Added(v) => {
            let (o, version) = read(v)?;
            (WatchEvent::Added(o), version)
        }
        WatchEvent::Modified(v) => {
            let (o, version) = read(v)?;
            (WatchEvent::Modified(o), version)
        }
        WatchEvent::Deleted(v) => {
            let (o, version) = read(v)?;
            (WatchEvent::Deleted(o), version)
        }
        WatchEvent::Bookmark(mark) => {
            let version = Some(mark.metadata.resource_version.clone());
            (WatchEvent::Bookmark(mark), version)
        }
        WatchEvent::Error(status) => (WatchEvent::Error(status), None),
    })
}

/// Whether named nodes must all exist: on the first list (a typo is the user's), not on a
/// list after the watch lost its place (a node deleted meanwhile is said to be gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Names {
    MustExist,
    MayBeGone,
}

/// An error a watch reported (other than its version being too old).
fn watch_error(status: Box<kube::core::Status>) -> CommandError {
    CommandError::from_api(kube::Error::Api(status), "watching nodes and pods")
}

/// A change from one of the two watches.
enum Change {
    Node(Box<WatchEvent<Value>>),
    Pod(Box<WatchEvent<Value>>),
    /// A watch ended.
    Ended,
}

/// Lists the target nodes and the active pods into `watched`, with their versions.
pub(super) async fn list(
    conn: &Connection,
    targets: &Targets,
    options: &StatusOptions,
    watched: &mut Watched,
    names: Names,
) -> Result<(), CommandError> {
    let label_selector = match targets {
        Targets::Selector(s) => Some(s.to_string()),
        _ => None,
    };
    let mut nodes: Vec<Node> = Vec::new();
    watched.node_version = api::for_each_page_at(
        &conn.client,
        "/api/v1/nodes",
        None,
        label_selector.as_deref(),
        5_000,
        |page: Vec<Node>| {
            nodes.extend(
                page.into_iter()
                    .filter(|n| targets.admits_node(&n.metadata.name, &n.metadata.labels)),
            )
        },
    )
    .await?;
    if let (Targets::Names(names), Names::MustExist) = (targets, names) {
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| !nodes.iter().any(|node| &node.metadata.name == *n))
            .collect();
        if !missing.is_empty() {
            return Err(CommandError::Input(format!(
                "node{} {} not found (check the name with `kubectl get nodes`)",
                if missing.len() == 1 { "" } else { "s" },
                missing
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    watched.nodes = nodes
        .into_iter()
        .map(|n| (n.metadata.name.clone(), n))
        .collect();
    let counted = counted(options);
    let pods = &mut watched.pods;
    watched.pod_version = api::for_each_page_at(
        &conn.client,
        "/api/v1/pods",
        Some(ACTIVE_PODS),
        None,
        POD_PAGE,
        |page: Vec<Pod>| {
            for pod in page {
                if let Some(requests) = accelerators::pod_requests(&pod, &counted) {
                    pods.insert(
                        (pod.metadata.namespace.clone(), pod.metadata.name.clone()),
                        requests,
                    );
                }
            }
        },
    )
    .await?;
    watched.requested = BTreeMap::new();
    for (node, requests) in watched.pods.values() {
        add(&mut watched.requested, node, requests, 1);
    }
    Ok(())
}

/// Which resources a pod's requests are counted for: every accelerator, and `--resource`
/// (or `nvidia.com/gpu`) whatever it is, as `status` counts them.
fn counted(options: &StatusOptions) -> impl Fn(&str) -> bool + use<> {
    let primary = options
        .resource
        .clone()
        .unwrap_or_else(|| placekit_core::gpu::DEFAULT_RESOURCE.to_string());
    move |r: &str| accelerators::is_accelerator(r) || r == primary
}

/// Adds (`sign` 1) or takes away (-1) one pod's requests from its node's sum.
fn add(
    into: &mut BTreeMap<String, BTreeMap<String, i128>>,
    node: &str,
    requests: &BTreeMap<String, i128>,
    sign: i128,
) {
    let sums = into.entry(node.to_string()).or_default();
    for (r, q) in requests {
        *sums.entry(r.clone()).or_default() += sign * q;
    }
    sums.retain(|_, q| *q != 0);
    if sums.is_empty() {
        into.remove(node);
    }
}

impl Watched {
    /// Applies a node event; returns the nodes whose rows may have changed.
    fn node_event(&mut self, event: WatchEvent<Node>, targets: &Targets) -> BTreeSet<String> {
        match event {
            WatchEvent::Added(node) | WatchEvent::Modified(node) => {
                let name = node.metadata.name.clone();
                if !targets.admits_node(&name, &node.metadata.labels) {
                    return BTreeSet::new();
                }
                self.nodes.insert(name.clone(), node);
                BTreeSet::from([name])
            }
            WatchEvent::Deleted(node) => {
                let name = node.metadata.name.clone();
                self.nodes.remove(&name);
                BTreeSet::from([name])
            }
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => BTreeSet::new(),
        }
    }

    /// Applies a pod event; returns the nodes whose sums changed.
    fn pod_event(&mut self, event: WatchEvent<Pod>, options: &StatusOptions) -> BTreeSet<String> {
        let (pod, deleted) = match event {
            WatchEvent::Added(pod) | WatchEvent::Modified(pod) => (pod, false),
            WatchEvent::Deleted(pod) => (pod, true),
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => return BTreeSet::new(),
        };
        let key = (pod.metadata.namespace.clone(), pod.metadata.name.clone());
        let now = if deleted {
            None
        } else {
            accelerators::pod_requests(&pod, counted(options))
        };
        let before = self.pods.remove(&key);
        let mut changed = BTreeSet::new();
        if let Some((node, requests)) = &before {
            add(&mut self.requested, node, requests, -1);
            changed.insert(node.clone());
        }
        if let Some((node, requests)) = now {
            add(&mut self.requested, &node, &requests, 1);
            changed.insert(node.clone());
            self.pods.insert(key, (node, requests));
        }
        changed
    }
}

/// Prints the rows of each of `nodes` whose text changed since last printed; a node gone
/// from the targets is said to be gone once.
fn print_changed(
    ui: &Ui,
    printer: &mut Printer,
    watched: &Watched,
    nodes: BTreeSet<String>,
    dra: &placekit_core::dra::DraInventory,
    options: &StatusOptions,
) {
    // Most events (heartbeats, pods without accelerators) change no node's rows.
    if nodes.is_empty() {
        return;
    }
    let all: Vec<Node> = watched.nodes.values().cloned().collect();
    let (resources, primary) = counted_resources(&all, options);
    let scope = Scope {
        resource: options.resource.as_deref(),
        class: options.class.as_deref(),
        primary: &primary,
        resources: &resources,
        label_columns: &options.label_columns,
    };
    let empty = BTreeMap::new();
    let mut out: Vec<Vec<String>> = Vec::new();
    for name in nodes {
        let Some(node) = watched.nodes.get(&name) else {
            if printer.printed.remove(&name).is_some() {
                let mut row = vec![String::new(); inventory_header(ui, options).len()];
                row[0] = name.clone();
                if let Some(last) = row.last_mut() {
                    *last = "node deleted, or no longer selected".into();
                }
                out.push(row);
            }
            continue;
        };
        let inventory = accelerators::node_inventory(
            node,
            watched.requested.get(&name).unwrap_or(&empty),
            dra,
            &scope,
        );
        let rows = node_rows(ui, &inventory, options);
        if printer.printed.get(&name) != Some(&rows) {
            out.extend(rows.iter().cloned());
            printer.printed.insert(name, rows);
        }
    }
    if !out.is_empty() {
        print!("{}", aligned_rows(&out, &mut printer.widths));
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str, gpus: &str, phase: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ml"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
            "status": {"phase": phase}}))
        .unwrap()
    }

    #[test]
    fn pod_events_keep_each_nodes_sum_and_say_which_nodes_changed() {
        let options = StatusOptions::default();
        let mut w = Watched::default();
        let changed = w.pod_event(WatchEvent::Added(pod("a", "n1", "2", "Running")), &options);
        assert_eq!(changed, BTreeSet::from(["n1".to_string()]));
        w.pod_event(WatchEvent::Added(pod("b", "n1", "1", "Running")), &options);
        assert_eq!(w.requested["n1"]["nvidia.com/gpu"], 3000);
        // Applied twice (a watch resumed from an older bookmark): the same sums.
        w.pod_event(
            WatchEvent::Modified(pod("b", "n1", "1", "Running")),
            &options,
        );
        assert_eq!(w.requested["n1"]["nvidia.com/gpu"], 3000);
        // A pod that finished holds nothing; the last one gone empties the node's sums.
        w.pod_event(
            WatchEvent::Modified(pod("a", "n1", "2", "Succeeded")),
            &options,
        );
        assert_eq!(w.requested["n1"]["nvidia.com/gpu"], 1000);
        let changed = w.pod_event(
            WatchEvent::Deleted(pod("b", "n1", "1", "Running")),
            &options,
        );
        assert_eq!(changed, BTreeSet::from(["n1".to_string()]));
        assert!(!w.requested.contains_key("n1"));
        // A pod without accelerators costs nothing and changes nothing.
        let cpu: Pod = serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "ml"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}, "status": {"phase": "Running"}}))
        .unwrap();
        assert!(w.pod_event(WatchEvent::Added(cpu), &options).is_empty());
        assert!(w.pods.is_empty());
    }
}
