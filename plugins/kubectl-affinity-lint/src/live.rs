//! The live half of affinity-lint: reading nodes, pods and events (paged lists only), and
//! the `drift` and `why-pending` reports.

/// Prints one line built from cluster strings (pod, node and claim names, events, label
/// values): control, bidirectional and line-break characters in them are escaped, so a
/// value cannot move the cursor or forge a line of the report.
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}", placekit_core::text::escaped(&format!($($arg)*)))
    };
}

use placekit_cli::output::PrintReport as _;
use std::collections::BTreeMap;

use placekit_cli::error::CommandError;
use placekit_cli::fleet::{self, Fleet};
use placekit_cli::output::v1::{
    self, DriftReport, Item, KueueWorkload, NodeFit, PendingEvent, PendingItem, PendingPodRef,
    PendingReport, PendingSummary, PodOnMissingNode,
};
use placekit_cli::ui::{OutputFormat, Ui};
use placekit_client::api;
use placekit_client::connect::{Connection, ConnectionArgs};
use placekit_core::exit;
use placekit_core::model::{Node, Pod, PodPlacement};
use placekit_core::scheduler::gang::{self, GangKind, PodGroup};
use placekit_core::scheduler::pending::{self, ClusterView, DraView, Standing};
use placekit_core::scheduler::{self, Drift, DriftKind, FilterFailure, NodeInfo};
use placekit_core::syntax::LabelSelector;
use placekit_lint::engine::LiveCluster;
use serde_json::Value;

/// Page size for node and pod lists.
const PAGE: u32 = 5_000;
/// Page size of drift's pod list: one request for up to 20,000 running pods, so the
/// request count does not grow with the pods of a typical namespace or cluster.
const DRIFT_PAGE: u32 = 20_000;

/// [`cluster_state`](placekit_cli::pending::cluster_state) for the live lint rules: an extended resource a DeviceClass serves
/// from DRA devices (`extendedResourceName`) counts, on a node whose allocatable lacks it,
/// as the devices behind it there (total as allocatable, those in use as requested) — what
/// the scheduler allocates such a request from.
/// Returns the nodes and what must be said about the reads ("cannot list resourceslices").
pub async fn lint_cluster_state(
    conn: &Connection,
) -> Result<(Vec<NodeInfo>, Vec<String>), CommandError> {
    let (mut nodes, _) = placekit_cli::pending::cluster_state(conn).await?;
    let dra = placekit_cli::inventory::read_dra(conn, false).await?;
    for node in &mut nodes {
        let served = dra
            .inventory
            .served_extended(placekit_core::scheduling::NodeFacts {
                name: &node.name,
                labels: &node.labels,
            });
        for (resource, total, in_use) in served {
            if node.allocatable.get(&resource).copied().unwrap_or(0) == 0 {
                node.allocatable
                    .insert(resource.clone(), total as i128 * 1000);
                node.requested.insert(resource, in_use as i128 * 1000);
            }
        }
    }
    Ok((nodes, dra.notes))
}

/// The nodes of the `--cluster` rules: of the current context, or of each cluster the
/// `--contexts` reach (those that could not be read are said on stderr, once each). Returns
/// the clusters read and the exit code the failures stand for, if any (3 when none could be
/// read, 4 when some could not).
pub async fn lint_clusters(
    connection: &ConnectionArgs,
    fleet: Option<&Fleet>,
    ui: &Ui,
    custom_kinds: &std::collections::BTreeSet<(String, String)>,
) -> Result<
    (
        Vec<LiveCluster>,
        Vec<fleet::ClusterRead<()>>,
        placekit_lint::crds::CrdSchemas,
    ),
    CommandError,
> {
    let Some(fleet) = fleet else {
        let conn = placekit_cli::ui::connect(connection).await?;
        let (nodes, notes) = lint_cluster_state(&conn).await?;
        for n in &notes {
            ui.warn(n);
        }
        let (crds, notes) = served_crds(&conn, custom_kinds).await?;
        for n in &notes {
            ui.warn(n);
        }
        return Ok((
            vec![LiveCluster {
                context: None,
                nodes,
            }],
            Vec::new(),
            crds,
        ));
    };
    let reads = fleet
        .read(|conn| async move { lint_cluster_state(&conn).await })
        .await;
    let mut clusters = Vec::new();
    let mut outcomes = Vec::new();
    for r in reads {
        let outcome = match r.outcome {
            Ok((nodes, notes)) => {
                for n in &notes {
                    ui.warn(&format!("context {}: {n}", r.contexts[0]));
                }
                clusters.push(LiveCluster {
                    context: r.contexts.first().cloned(),
                    nodes,
                });
                Ok(())
            }
            Err(f) => Err(f),
        };
        outcomes.push(fleet::ClusterRead {
            contexts: r.contexts,
            server: r.server,
            outcome,
            took: r.took,
        });
    }
    fleet::warn_failures(ui, &outcomes);
    // Over several clusters the CRDs may differ: custom resources are judged by the files'
    // CRDs only (--crd-dir, or those linted).
    Ok((clusters, outcomes, Default::default()))
}

/// The CRDs the cluster serves for the custom kinds linted, `(apiVersion, kind)`: one
/// discovery request per group version to learn each kind's resource name, then the CRD
/// itself by name (`PLURAL.GROUP`), so a request per kind in the input, not per object. A
/// kind the cluster does not serve is skipped; a CRD the user may not read is said once.
async fn served_crds(
    conn: &Connection,
    kinds: &std::collections::BTreeSet<(String, String)>,
) -> Result<(placekit_lint::crds::CrdSchemas, Vec<String>), CommandError> {
    let mut crds = placekit_lint::crds::CrdSchemas::default();
    let mut notes = Vec::new();
    let mut resources: BTreeMap<String, Option<Value>> = BTreeMap::new();
    for (api_version, kind) in kinds {
        if !api_version.contains('/') {
            continue;
        }
        if !resources.contains_key(api_version) {
            let listed = get_json(conn, &format!("/apis/{api_version}")).await?;
            resources.insert(api_version.clone(), listed);
        }
        let Some(plural) = resources[api_version]
            .as_ref()
            .and_then(|r| r["resources"].as_array())
            .into_iter()
            .flatten()
            .find(|r| {
                r["kind"] == kind.as_str() && !r["name"].as_str().unwrap_or("/").contains('/')
            })
            .and_then(|r| r["name"].as_str())
        else {
            continue;
        };
        let group = api_version.split('/').next().unwrap_or_default();
        let path =
            format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{group}");
        match get_json(conn, &path).await {
            Ok(Some(crd)) => {
                crds.add(&crd);
            }
            Ok(None) => {}
            // RBAC may refuse CRDs to a linter's reader: the files are still judged.
            Err(e) if e.is_forbidden() => {
                if notes.is_empty() {
                    notes.push(format!(
                        "cannot read customresourcedefinition {plural}.{group} (forbidden): custom resources are not judged by the cluster's CRDs (give --crd-dir)"
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok((crds, notes))
}

/// GET `path` as JSON; `None` when it is not there (404).
async fn get_json(conn: &Connection, path: &str) -> Result<Option<Value>, CommandError> {
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| CommandError::Input(e.to_string()))?;
    match conn.client.request::<Value>(request).await {
        Ok(v) => Ok(Some(v)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => Err(CommandError::from_api(e, &format!("reading {path}"))),
    }
}

/// What `drift` found on one cluster.
#[derive(Debug, Default)]
pub struct DriftFound {
    drifted: Vec<Drift>,
    checked: usize,
    /// Running pods bound to a node that is gone: nothing to check them against.
    orphans: Vec<PodOnMissingNode>,
    requests: usize,
}

/// Under `-o openmetrics`, a read the cluster did not answer still prints its exposition
/// (`placekit_read_up 0`, placekit_cli's `failed_read`) before the error; `e` is returned.
fn failed_metrics(ui: &Ui, e: CommandError, started: std::time::Instant) -> CommandError {
    if ui.output == OutputFormat::OpenMetrics && e.exit_code() == exit::CLUSTER {
        print!(
            "{}",
            placekit_cli::output::openmetrics::failed_read(started.elapsed().as_secs_f64())
        );
    }
    e
}

/// `drift`: running pods whose node no longer satisfies their constraints.
pub async fn drift(
    conn: &Connection,
    ui: &Ui,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<u8, CommandError> {
    check_selector(selector)?;
    let started = std::time::Instant::now();
    let found = match read_drift(conn, namespace, selector, true).await {
        Ok(found) => found,
        Err(e) => return Err(failed_metrics(ui, e, started)),
    };
    if ui.output == OutputFormat::OpenMetrics {
        print!(
            "{}",
            crate::metrics::drift_metrics(&[crate::metrics::ClusterDrift {
                context: None,
                found: Some((&found.drifted, found.checked, &found.orphans)),
                took: started.elapsed(),
            }])
        );
    } else if ui.output.is_structured() {
        let drifted: Vec<v1::Drift> = found.drifted.iter().map(Into::into).collect();
        ui.print_report(&DriftReport {
            pods_checked: found.checked,
            list_requests: found.requests,
            items: Item::all_local(&drifted),
            pods_on_missing_nodes: Item::all_local(&found.orphans),
            contexts: None,
        });
    } else {
        print_drift(&found.drifted, found.checked, &found.orphans, ui);
    }
    Ok(drift_exit_code(&found))
}

fn drift_exit_code(found: &DriftFound) -> u8 {
    if found.drifted.is_empty() {
        exit::SUCCESS
    } else {
        exit::PROBLEMS
    }
}

/// The selector is checked here, with the same messages as everywhere in placekit, before
/// the server's parser sees it.
fn check_selector(selector: Option<&str>) -> Result<(), CommandError> {
    if let Some(s) = selector {
        LabelSelector::parse(s).map_err(|e| CommandError::Input(e.to_string()))?;
    }
    Ok(())
}

/// `drift` over the clusters of `--contexts`/`--all-contexts`: a leading CONTEXT column, a
/// summary per cluster; JSON items with `context` and `server`, every cluster listed.
pub async fn drift_fleet(
    fleet: &Fleet,
    ui: &Ui,
    namespaces: &crate::flags::Namespaces,
    selector: Option<&str>,
) -> Result<u8, CommandError> {
    check_selector(selector)?;
    let asked = std::sync::Arc::new((namespaces.clone(), selector.map(str::to_string)));
    let reads = fleet
        .read(move |conn| {
            let asked = asked.clone();
            async move {
                let namespace = asked.0.on(&conn);
                read_drift(&conn, namespace, asked.1.as_deref(), false).await
            }
        })
        .await;
    let ok = || {
        reads
            .iter()
            .filter_map(|r| r.outcome.as_ref().ok().map(|f| (r, f)))
    };
    if ui.output == OutputFormat::OpenMetrics {
        let clusters: Vec<crate::metrics::ClusterDrift> = reads
            .iter()
            .map(|r| crate::metrics::ClusterDrift {
                context: r.contexts.first().map(String::as_str),
                found: r
                    .outcome
                    .as_ref()
                    .ok()
                    .map(|f| (f.drifted.as_slice(), f.checked, f.orphans.as_slice())),
                took: r.took,
            })
            .collect();
        print!("{}", crate::metrics::drift_metrics(&clusters));
    } else if ui.output.is_structured() {
        let mut contexts = fleet::contexts(&reads);
        for (entry, r) in contexts.iter_mut().zip(&reads) {
            if let Ok(f) = &r.outcome {
                entry.pods_checked = Some(f.checked);
                entry.drifted = Some(f.drifted.len());
            }
        }
        let drifted: Vec<(_, Vec<v1::Drift>)> = ok()
            .map(|(r, f)| (r, f.drifted.iter().map(Into::into).collect()))
            .collect();
        ui.print_report(&DriftReport {
            pods_checked: ok().map(|(_, f)| f.checked).sum::<usize>(),
            list_requests: ok().map(|(_, f)| f.requests).sum::<usize>(),
            items: drifted
                .iter()
                .flat_map(|(r, d)| fleet::tagged(*r, d))
                .collect(),
            pods_on_missing_nodes: ok()
                .flat_map(|(r, f)| fleet::tagged(r, &f.orphans))
                .collect(),
            contexts: Some(contexts),
        });
    } else {
        let parts: Vec<(String, Vec<Vec<String>>)> = ok()
            .filter(|(_, f)| !f.drifted.is_empty())
            .map(|(r, f)| (r.label(), drift_rows(&f.drifted)))
            .collect();
        if !parts.is_empty() {
            print!("{}", fleet::context_table(ui, &DRIFT_HEADER, &parts));
        }
        for (r, f) in ok() {
            let pods = placekit_core::text::count(f.checked, "running pod");
            if f.drifted.is_empty() {
                say!("{}: no drift ({pods} checked)", r.label());
            } else {
                say!("{}: {} of {pods} drifted", r.label(), f.drifted.len());
            }
            for o in &f.orphans {
                ui.warn(&format!("context {}: {}", r.label(), orphan_message(o)));
            }
        }
    }
    fleet::warn_failures(ui, &reads);
    Ok(fleet::exit_code(&reads, drift_exit_code))
}

/// What `serve-metrics` keeps of a drift read: the drifted pods, how many were checked,
/// and the pods on missing nodes.
pub async fn read_drift_for_metrics(
    conn: &Connection,
    namespace: Option<&str>,
) -> Result<(Vec<Drift>, usize, Vec<PodOnMissingNode>), CommandError> {
    let found = read_drift(conn, namespace, None, false).await?;
    Ok((found.drifted, found.checked, found.orphans))
}

/// Reads nodes and running pods and judges each pod against its node. A namespace that is
/// not there is an error on one cluster (`namespace_must_exist`), and nothing to check on
/// one of several.
async fn read_drift(
    conn: &Connection,
    namespace: Option<&str>,
    selector: Option<&str>,
    namespace_must_exist: bool,
) -> Result<DriftFound, CommandError> {
    let mut nodes: Vec<Node> = Vec::new();
    api::for_each_page(&conn.client, "/api/v1/nodes", None, None, PAGE, |p| {
        nodes.extend(p)
    })
    .await?;
    let infos = scheduler::node_infos(&nodes, &[]);
    let by_name: BTreeMap<&str, &NodeInfo> = infos.iter().map(|n| (n.name.as_str(), n)).collect();
    let collection = match namespace {
        Some(ns) => format!("/api/v1/namespaces/{ns}/pods"),
        None => "/api/v1/pods".to_string(),
    };
    let mut found = DriftFound::default();
    let requests = api::for_each_page(
        &conn.client,
        &collection,
        Some("status.phase=Running"),
        selector,
        DRIFT_PAGE,
        |page: Vec<PodPlacement>| {
            for pod in page {
                let Some(name) = pod.spec.node_name.as_deref() else {
                    continue;
                };
                let Some(node) = by_name.get(name) else {
                    found.orphans.push(PodOnMissingNode {
                        namespace: pod.metadata.namespace.clone(),
                        pod: pod.metadata.name.clone(),
                        node: name.to_string(),
                    });
                    continue;
                };
                found.checked += 1;
                if let Some(d) = scheduler::drift(&pod, node) {
                    found.drifted.push(d);
                }
            }
        },
    )
    .await?;
    found.requests = requests + 1;
    if let Some(ns) = namespace
        && namespace_must_exist
        && found.checked == 0
        && found.orphans.is_empty()
        && !api::namespace_exists(&conn.client, ns).await?
    {
        return Err(CommandError::Input(format!(
            "namespace {ns:?} not found (see `kubectl get namespaces`)"
        )));
    }
    Ok(found)
}

const DRIFT_HEADER: [&str; 4] = ["NAMESPACE", "POD", "NODE", "NO LONGER HOLDS"];

fn drift_rows(drifted: &[Drift]) -> Vec<Vec<String>> {
    drifted
        .iter()
        .map(|d| {
            vec![
                d.namespace.clone(),
                d.pod.clone(),
                d.node.clone(),
                d.reason.clone(),
            ]
        })
        .collect()
}

fn orphan_message(o: &PodOnMissingNode) -> String {
    format!(
        "pod {}/{} is Running on node {}, which no longer exists: not checked",
        o.namespace, o.pod, o.node
    )
}

fn print_drift(drifted: &[Drift], checked: usize, orphans: &[PodOnMissingNode], ui: &Ui) {
    let pods = |n: usize| placekit_core::text::count(n, "running pod");
    if drifted.is_empty() {
        match checked {
            0 => say!("no drift: no running pods to check"),
            1 => say!("no drift: 1 running pod still satisfies its node's labels and taints"),
            n => {
                say!("no drift: {n} running pods still satisfy their nodes' labels and taints")
            }
        }
    } else {
        print!("{}", ui.table(&DRIFT_HEADER, &drift_rows(drifted)));
        let by_labels = drifted
            .iter()
            .filter(|d| d.kind == DriftKind::Labels)
            .count();
        let by_taint = drifted.len() - by_labels;
        say!("{} of {} drifted:", drifted.len(), pods(checked));
        if by_labels > 0 {
            say!(
                "  by node labels ({by_labels}): they keep running (IgnoredDuringExecution), but new replicas would not land there"
            );
        }
        if by_taint > 0 {
            say!(
                "  by a NoExecute taint they do not tolerate ({by_taint}): they are evicted (after their tolerationSeconds, if any)"
            );
        }
    }
    for o in orphans {
        ui.warn(&orphan_message(o));
    }
}

/// A pod argument as a name: kubectl's forms NAME, pod/NAME, pods/NAME, po/NAME.
fn pod_name(arg: &str) -> &str {
    ["pod/", "pods/", "po/"]
        .iter()
        .find_map(|p| arg.strip_prefix(p))
        .unwrap_or(arg)
}

/// What why-pending reads beyond the nodes and pods, for the pods it judges: DRA's objects
/// when one has claims (or the cluster serves DRA-backed extended resources), the storage
/// objects when one mounts a claim or a CSI volume, the PodGroups of the gangs they name.
struct Extra {
    dra: Option<placekit_cli::inventory::DraRead>,
    storage: Option<placekit_core::model::storage::Storage>,
    groups: Vec<PodGroup>,
}

impl Extra {
    async fn read(
        conn: &Connection,
        ui: &Ui,
        pods: &[&Pod],
        namespace: Option<&str>,
        always_dra: bool,
    ) -> Result<Self, CommandError> {
        let dra = if always_dra || pods.iter().any(|p| !p.spec.resource_claims.is_empty()) {
            let dra = placekit_cli::inventory::read_dra(conn, true).await?;
            for n in &dra.notes {
                ui.warn(n);
            }
            Some(dra)
        } else {
            None
        };
        // Only a volume a filter reads (a claim, an ephemeral or inline CSI volume) is kept
        // in the read model: any left means the storage objects are needed.
        let storage = if pods.iter().any(|p| !p.spec.volumes.is_empty()) {
            Some(placekit_cli::pending::read_storage(conn, namespace).await?)
        } else {
            None
        };
        let mut kinds: Vec<GangKind> = pods
            .iter()
            .filter_map(|p| gang::gang_of(p).map(|(k, _)| k))
            .collect();
        kinds.sort();
        kinds.dedup();
        let groups = if kinds.is_empty() {
            Vec::new()
        } else {
            let (groups, notes) =
                placekit_cli::pending::read_pod_groups(conn, namespace, &kinds).await?;
            for n in &notes {
                ui.warn(n);
            }
            groups
        };
        Ok(Extra {
            dra,
            storage,
            groups,
        })
    }

    fn view<'a>(&'a self, nodes: &'a [NodeInfo], pending: &'a [Pod]) -> ClusterView<'a> {
        ClusterView {
            nodes,
            dra: self.dra.as_ref().map(|d| DraView {
                claims: &d.claims,
                inventory: &d.inventory,
                claims_forbidden: d.claims_forbidden,
            }),
            storage: self.storage.as_ref(),
            groups: &self.groups,
            pending,
        }
    }
}

/// `why-pending`: the evidence a pending-pod investigation gathers, and every node through the scheduler's filters.
///
/// Long on purpose: it reads the pod, answers "not Pending" at once, reads what the pod's
/// judgement needs, then reports the case `placekit_core::scheduler::pending::judge` found
/// (bound, another scheduler's, gated, or filtered node by node) in text or JSON.
pub async fn why_pending(
    conn: &Connection,
    ui: &Ui,
    namespace: &str,
    name: &str,
) -> Result<u8, CommandError> {
    let name = pod_name(name);
    if name.is_empty() || name.contains('/') {
        return Err(CommandError::Input(format!(
            "{name:?} is not a pod name (use NAME or pod/NAME, and -n for the namespace)"
        )));
    }
    let path = format!("/api/v1/namespaces/{namespace}/pods/{name}");
    let request = http::Request::get(&path)
        .body(Vec::new())
        .map_err(|e| CommandError::Input(e.to_string()))?;
    let raw: Value = match conn.client.request(request).await {
        Ok(v) => v,
        Err(kube::Error::Api(s)) if s.code == 404 => {
            return Err(CommandError::Input(format!(
                "pod {namespace}/{name} not found (check the name and -n)"
            )));
        }
        Err(e) => {
            return Err(CommandError::from_api(
                e,
                &format!("reading pod {namespace}/{name}"),
            ));
        }
    };
    let pod: Pod = serde_json::from_value(raw.clone())
        .map_err(|e| CommandError::Cluster(format!("unreadable pod: {e}")))?;
    let phase = pod.status.phase.clone().unwrap_or_default();
    let pod_ref = |node| PendingPodRef {
        namespace,
        name,
        phase: &phase,
        node,
    };
    if phase != "Pending" {
        let node = pod.spec.node_name.clone().unwrap_or_default();
        if ui.output.is_structured() {
            ui.print_report(&PendingReport {
                pod: Some(pod_ref(Some(&node))),
                pending: false,
                ..PendingReport::default()
            });
        } else {
            say!("pod {namespace}/{name} is {phase} on node {node}: it is not Pending");
        }
        return Ok(exit::SUCCESS);
    }
    // Pending but bound: the scheduler has done its part. Only its node is read: it must
    // exist and be Ready for the pod to start.
    if let Some(node) = pod.spec.node_name.clone().filter(|n| !n.is_empty()) {
        let found: Option<Node> = get_json(conn, &format!("/api/v1/nodes/{node}"))
            .await?
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| CommandError::Cluster(format!("unreadable node {node}: {e}")))?;
        let nodes = scheduler::node_infos(found.as_slice(), &[]);
        let judged = pending::judge(
            &pod,
            ClusterView {
                nodes: &nodes,
                dra: None,
                storage: None,
                groups: &[],
                pending: &[],
            },
        );
        if ui.output.is_structured() {
            ui.print_report(&PendingReport {
                pod: Some(pod_ref(Some(&node))),
                pending: true,
                scheduled: Some(true),
                conditions: Some(&raw["status"]["conditions"]),
                placeable: Some(judged.placeable),
                verdict: judged.verdict.as_ref().map(|v| Some(v.into())),
                standing: judged.standing.as_ref().map(Into::into),
                ..PendingReport::default()
            });
        } else if let Some(v) = &judged.verdict {
            say!("pod {namespace}/{name} is Pending and bound to node {node}");
            print_verdict(ui, v);
        } else {
            say!(
                "pod {namespace}/{name} is Pending but already scheduled to node {node}: it waits for that node's kubelet (image pulls, volumes, init containers), not for the scheduler"
            );
        }
        return Ok(if judged.placeable {
            exit::SUCCESS
        } else {
            exit::PROBLEMS
        });
    }
    let (nodes, pods) = placekit_cli::pending::cluster_state(conn).await?;
    let pending_pods: Vec<Pod> = pods
        .into_iter()
        .filter(|p| p.status.phase.as_deref() == Some("Pending"))
        .collect();
    let extra = Extra::read(conn, ui, &[&pod], Some(namespace), true).await?;
    let judged = pending::judge(&pod, extra.view(&nodes, &pending_pods));
    let standing = judged.standing.clone();
    if let Some(Standing::Gated) = standing {
        return report_gated(conn, ui, &raw, &pod, &judged, pod_ref(None)).await;
    }
    let mut events: Vec<Value> = Vec::new();
    let selector = format!("involvedObject.kind=Pod,involvedObject.name={name}");
    // By uid too: the events of an earlier pod of the same name (another uid) are not this
    // pod's. An event that names no uid cannot be told apart and is kept.
    let uid = raw["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let this_pod = |e: &Value| {
        let about = e["involvedObject"]["uid"].as_str().unwrap_or_default();
        about.is_empty() || uid.is_empty() || about == uid
    };
    api::for_each_page(
        &conn.client,
        &format!("/api/v1/namespaces/{namespace}/events"),
        Some(&selector),
        None,
        PAGE,
        |p: Vec<Value>| events.extend(p.into_iter().filter(this_pod)),
    )
    .await?;
    let fitting = judged.fitting(&nodes);
    let results: Vec<(String, Result<(), FilterFailure>)> = nodes
        .iter()
        .zip(&judged.checked)
        .map(|(n, r)| {
            (
                n.name.clone(),
                r.clone()
                    .map_err(|f| f.into_iter().next().expect("a reason")),
            )
        })
        .collect();
    let mig_hint = mig_hint(&judged.requests, &nodes, &fitting, &judged.candidates);
    let requests: BTreeMap<String, String> = judged
        .requests
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                placekit_core::model::quantity::format_quantity(k, *v),
            )
        })
        .collect();
    let nodes_judged: Vec<NodeFit> = results
        .iter()
        .zip(&judged.checked)
        .map(|((n, r), all)| match r {
            Ok(()) => NodeFit {
                name: n,
                fits: true,
                failure: None,
                reason: None,
                scheduler_reasons: None,
            },
            Err(f) => NodeFit {
                name: n,
                fits: false,
                failure: Some(f.into()),
                reason: Some(f.to_string()),
                scheduler_reasons: Some(
                    all.as_ref()
                        .err()
                        .into_iter()
                        .flatten()
                        .map(FilterFailure::scheduler_reason)
                        .collect(),
                ),
            },
        })
        .collect();
    let other_scheduler = matches!(standing, Some(Standing::OtherScheduler { .. }));
    let typed = PendingReport {
        pod: Some(pod_ref(None)),
        pending: true,
        scheduled: Some(false),
        scheduling_gates: None,
        conditions: Some(&raw["status"]["conditions"]),
        affinity: Some(&raw["spec"]["affinity"]),
        node_selector: Some(&raw["spec"]["nodeSelector"]),
        tolerations: Some(&raw["spec"]["tolerations"]),
        topology_spread_constraints: Some(&raw["spec"]["topologySpreadConstraints"]),
        requests: Some(requests),
        claims: Some(judged.claim_states.iter().map(Into::into).collect()),
        not_modelled: Some(&judged.unmodelled),
        mig_hint: Some(mig_hint),
        placeable: Some(judged.placeable),
        events: Some(
            events
                .iter()
                .map(|e| PendingEvent {
                    type_: &e["type"],
                    reason: &e["reason"],
                    message: &e["message"],
                    count: &e["count"],
                })
                .collect(),
        ),
        nodes: (!other_scheduler).then_some(nodes_judged),
        fitting_nodes: (!other_scheduler).then_some(&fitting),
        predicted_message: Some(judged.predicted_message.as_deref()),
        verdict: Some(judged.verdict.as_ref().map(Into::into)),
        workload: None,
        standing: judged.standing.as_ref().map(Into::into),
        scheduler_says: judged.scheduler_says.as_ref().map(Into::into),
        disagreement: judged.disagreement.as_deref(),
        nominated: judged.nomination.as_ref().map(Into::into),
        preemption: judged.preemption.as_ref().map(Into::into),
        gang: judged.gang.as_ref().map(Into::into),
    };
    // The text below reads the report as printed, so both say the same.
    let report = serde_json::to_value(v1::envelope(&typed)).expect("reports serialise");
    if ui.output.is_structured() {
        ui.print_report(&typed);
    } else {
        print_text(
            ui,
            namespace,
            name,
            &report,
            if other_scheduler { &[] } else { &results },
            &judged,
            &fitting,
        );
    }
    Ok(if judged.placeable {
        exit::SUCCESS
    } else {
        exit::PROBLEMS
    })
}

/// The report of a pod `spec.schedulingGates` hold; a Kueue gate's Workload says why.
async fn report_gated(
    conn: &Connection,
    ui: &Ui,
    raw: &Value,
    pod: &Pod,
    judged: &pending::Judgement,
    pod_ref: PendingPodRef<'_>,
) -> Result<u8, CommandError> {
    let (namespace, name) = (pod_ref.namespace, pod_ref.name);
    let verdict = judged.verdict.as_ref().expect("a gated pod has a verdict");
    let gates: Vec<&str> = pod
        .spec
        .scheduling_gates
        .iter()
        .map(|g| g.name.as_str())
        .collect();
    // A Kueue gate: the Workload says why the pod waits (quota, admission checks). It is
    // owned by the pod's owner, or by the pod itself (plain-pod integration).
    let workload = if gates.iter().any(|g| g.starts_with("kueue.x-k8s.io/")) {
        let mut owners: Vec<String> = raw["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["uid"].as_str().map(str::to_string))
            .collect();
        owners.extend(raw["metadata"]["uid"].as_str().map(str::to_string));
        api::kueue_workload_of(&conn.client, namespace, &owners).await?
    } else {
        None
    };
    let admission = workload.as_ref().map(scheduler::verdict::kueue_admission);
    if ui.output.is_structured() {
        ui.print_report(&PendingReport {
            pod: Some(pod_ref),
            pending: true,
            scheduled: Some(false),
            scheduling_gates: Some(gates.clone()),
            placeable: Some(false),
            verdict: Some(Some(verdict.into())),
            workload: workload
                .as_ref()
                .zip(admission.as_deref())
                .map(|(w, admission)| KueueWorkload {
                    name: &w["metadata"]["name"],
                    queue_name: &w["spec"]["queueName"],
                    cluster_queue: &w["status"]["admission"]["clusterQueue"],
                    conditions: &w["status"]["conditions"],
                    admission,
                }),
            standing: judged.standing.as_ref().map(Into::into),
            ..PendingReport::default()
        });
    } else {
        say!("pod {namespace}/{name} is Pending and not scheduled");
        say!("evidence: {}", verdict.evidence);
        if let Some(admission) = &admission {
            say!("          {admission}");
        }
        say!("judgment: {}", verdict.judgment);
        say!("action:   {}", verdict.action);
    }
    Ok(exit::PROBLEMS)
}

/// `why-pending POD -w`: after the report, follows the pod with a watch (from the version
/// of a list of just that pod, so no change is lost) and prints a line each time what the
/// scheduler says of it changes: its PodScheduled condition, its scheduling gates. Ends
/// when it is scheduled (exit 0: the node it went to) or deleted (exit 1).
pub async fn follow_pending(
    conn: &Connection,
    namespace: &str,
    name: &str,
) -> Result<u8, CommandError> {
    use futures::StreamExt as _;
    use kube::core::WatchEvent;
    let name = pod_name(name);
    let collection = format!("/api/v1/namespaces/{namespace}/pods");
    let field_selector = format!("metadata.name={name}");
    let list_pod = || async {
        let mut seen: Vec<Value> = Vec::new();
        let version = api::for_each_page_at(
            &conn.client,
            &collection,
            Some(&field_selector),
            None,
            1,
            |page: Vec<Value>| seen.extend(page),
        )
        .await?;
        Ok::<_, CommandError>((seen.into_iter().next(), version))
    };
    let (pod, mut version) = list_pod().await?;
    let Some(pod) = pod else {
        say!("pod {namespace}/{name} was deleted before it was scheduled");
        return Ok(exit::PROBLEMS);
    };
    // The pod followed: one deleted and created again under its name is another pod.
    let uid = pod["metadata"]["uid"].clone();
    let mut last = PodProgress::of(&pod);
    if let Some(done) = last.outcome(namespace, name) {
        say!("{}", done.0);
        return Ok(done.1);
    }
    let gone = || {
        say!("pod {namespace}/{name} was deleted before it was scheduled");
        Ok(exit::PROBLEMS)
    };
    // What changed since `last`; the last line and exit code once it is decided.
    let judge = |pod: &Value, last: &mut PodProgress| -> Option<u8> {
        let now = PodProgress::of(pod);
        if let Some((line, code)) = now.outcome(namespace, name) {
            say!("{line}");
            return Some(code);
        }
        for line in now.changes_since(last) {
            say!("{line}");
        }
        *last = now;
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        None
    };
    let mut restart = api::WatchRestart::default();
    loop {
        restart.started();
        let events = api::watch::<Value>(
            &conn.client,
            &collection,
            Some(&field_selector),
            None,
            &version,
        )
        .await?;
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            match event? {
                WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                    if let Some(v) = pod["metadata"]["resourceVersion"].as_str() {
                        version = v.to_string();
                    }
                    if pod["metadata"]["uid"] != uid {
                        return gone();
                    }
                    if let Some(code) = judge(&pod, &mut last) {
                        return Ok(code);
                    }
                }
                WatchEvent::Deleted(_) => return gone(),
                WatchEvent::Bookmark(mark) => version = mark.metadata.resource_version,
                WatchEvent::Error(status) if status.code == 410 => {
                    // Too old for the server: read the pod again and judge it from there.
                    let (pod, fresh) = list_pod().await?;
                    let Some(pod) = pod.filter(|p| p["metadata"]["uid"] == uid) else {
                        return gone();
                    };
                    if let Some(code) = judge(&pod, &mut last) {
                        return Ok(code);
                    }
                    version = fresh;
                    break;
                }
                WatchEvent::Error(status) => {
                    return Err(CommandError::from_api(
                        kube::Error::Api(status),
                        &format!("watching pod {namespace}/{name}"),
                    ));
                }
            }
        }
        restart.ended().await;
    }
}

/// What `why-pending -w` follows of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PodProgress {
    node: Option<String>,
    phase: String,
    gates: Vec<String>,
    /// The PodScheduled condition: (status, reason, message).
    scheduled: Option<(String, String, String)>,
}

impl PodProgress {
    fn of(pod: &Value) -> Self {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        PodProgress {
            node: pod["spec"]["nodeName"]
                .as_str()
                .filter(|n| !n.is_empty())
                .map(str::to_string),
            phase: text(&pod["status"]["phase"]),
            gates: pod["spec"]["schedulingGates"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|g| text(&g["name"]))
                .collect(),
            scheduled: pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "PodScheduled")
                .map(|c| (text(&c["status"]), text(&c["reason"]), text(&c["message"]))),
        }
    }

    /// The last line and exit code when the pod no longer waits for the scheduler.
    fn outcome(&self, namespace: &str, name: &str) -> Option<(String, u8)> {
        if let Some(node) = &self.node {
            return Some((
                format!("pod {namespace}/{name} was scheduled to node {node}"),
                exit::SUCCESS,
            ));
        }
        (!self.phase.is_empty() && self.phase != "Pending").then(|| {
            (
                format!(
                    "pod {namespace}/{name} is {} without being scheduled",
                    self.phase
                ),
                exit::PROBLEMS,
            )
        })
    }

    /// What changed since `before`, in lines.
    fn changes_since(&self, before: &PodProgress) -> Vec<String> {
        let mut out = Vec::new();
        if before.gates != self.gates {
            out.push(if self.gates.is_empty() {
                "scheduling gates removed: the scheduler considers the pod now".to_string()
            } else {
                format!("scheduling gates: {}", self.gates.join(", "))
            });
        }
        if before.scheduled != self.scheduled
            && let Some((status, reason, message)) = &self.scheduled
        {
            out.push(format!("PodScheduled={status} {reason}: {message}"));
        }
        out
    }
}

/// `why-pending` without a pod: every pending pod the scheduler has not bound (in the
/// namespace, or every namespace with `-A`; `-l` filters), judged against one read of the
/// nodes, pods and what they need (DRA, storage, PodGroups), grouped by verdict. Exit 1
/// when any cannot be placed now.
pub async fn why_pending_all(
    conn: &Connection,
    ui: &Ui,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<u8, CommandError> {
    let started = std::time::Instant::now();
    let (judged, node_count) = match judge_pending(conn, ui, namespace, selector).await {
        Ok(judged) => judged,
        Err(e) => return Err(failed_metrics(ui, e, started)),
    };
    let stuck = judged.iter().filter(|p| !p.placeable).count();
    if ui.output == OutputFormat::OpenMetrics {
        print!(
            "{}",
            crate::metrics::pending_metrics(&judged, started.elapsed())
        );
    } else if ui.output.is_structured() {
        ui.print_report(&PendingSummary { items: &judged });
    } else if judged.is_empty() {
        say!("no pending pods");
    } else {
        print_summary(ui, &judged, node_count);
        if !ui.no_headers {
            say!(
                "{} pending: {stuck} cannot be placed now; `why-pending POD -n NS` for one pod's evidence",
                placekit_core::text::count(judged.len(), "pod")
            );
        }
    }
    Ok(if stuck > 0 {
        exit::PROBLEMS
    } else {
        exit::SUCCESS
    })
}

/// Every pending pod of `namespace` (or all) matching `selector`, judged as
/// `why-pending` judges them, grouped by verdict; and how many nodes were judged against.
pub async fn judge_pending(
    conn: &Connection,
    ui: &Ui,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<(Vec<PendingItem>, usize), CommandError> {
    let selector = selector
        .map(LabelSelector::parse)
        .transpose()
        .map_err(|e| CommandError::Input(e.to_string()))?;
    let (nodes, pods) = placekit_cli::pending::cluster_state(conn).await?;
    let all_pending: Vec<Pod> = pods
        .into_iter()
        .filter(|p| p.status.phase.as_deref() == Some("Pending"))
        .collect();
    let pending: Vec<&Pod> = all_pending
        .iter()
        .filter(|p| p.spec.node_name.as_deref().unwrap_or_default().is_empty())
        .filter(|p| namespace.is_none_or(|ns| p.metadata.namespace == ns))
        .filter(|p| {
            selector
                .as_ref()
                .is_none_or(|s| s.matches(&p.metadata.labels))
        })
        .collect();
    let extra = Extra::read(conn, ui, &pending, namespace, false).await?;
    // Pods Kueue gates wait for their Workload's admission: one list of the Workloads says
    // why, for all of them.
    let kueue_gated: std::collections::BTreeSet<(String, String)> = pending
        .iter()
        .filter(|p| {
            p.spec
                .scheduling_gates
                .iter()
                .any(|g| g.name.starts_with("kueue.x-k8s.io/"))
        })
        .map(|p| (p.metadata.namespace.clone(), p.metadata.name.clone()))
        .collect();
    let workloads = if kueue_gated.is_empty() {
        Default::default()
    } else {
        api::kueue_workloads_of_pods(&conn.client, namespace, &kueue_gated).await?
    };
    let view = extra.view(&nodes, &all_pending);
    let mut judged: Vec<PendingItem> = pending
        .iter()
        .zip(pending::judge_all(&pending, view))
        .map(|(pod, j)| PendingItem {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            scheduling_gates: pod
                .spec
                .scheduling_gates
                .iter()
                .map(|g| g.name.clone())
                .collect(),
            placeable: j.placeable,
            fitting_nodes: j.checked.iter().filter(|r| r.is_ok()).count(),
            predicted_message: j.predicted_message,
            verdict: j.verdict.as_ref().map(Into::into),
            kueue_admission: workloads
                .get(&(pod.metadata.namespace.clone(), pod.metadata.name.clone()))
                .map(scheduler::verdict::kueue_admission),
            standing: j.standing.as_ref().map(Into::into),
            disagreement: j.disagreement,
            nominated: j.nomination.as_ref().map(Into::into),
            preemption: j.preemption.as_ref().map(Into::into),
            gang: j.gang.as_ref().map(Into::into),
        })
        .collect();
    // Grouped by verdict, then by namespace and name.
    let evidence = |p: &PendingItem| {
        p.verdict
            .as_ref()
            .map(|v| v.evidence.clone())
            .unwrap_or_default()
    };
    judged.sort_by(|a, b| {
        (a.placeable, evidence(a), &a.namespace, &a.name).cmp(&(
            b.placeable,
            evidence(b),
            &b.namespace,
            &b.name,
        ))
    });
    Ok((judged, nodes.len()))
}

/// The summary table: a row per pod, then a row per gang (its members placed together
/// against its minimum).
fn print_summary(ui: &Ui, judged: &[PendingItem], node_count: usize) {
    let wide = ui.output == OutputFormat::Wide;
    let rows: Vec<Vec<String>> = judged
        .iter()
        .map(|p| {
            let fits = match &p.standing {
                Some(v1::pending::Standing::OtherScheduler { .. }) => "-".to_string(),
                _ => format!("{}/{node_count}", p.fitting_nodes),
            };
            let gang_held = p.gang.as_ref().filter(|g| g.satisfiable == Some(false));
            let why = if p.placeable {
                "fits: a node passes every filter (see its events)".to_string()
            } else if let Some(g) = gang_held {
                format!(
                    "gang {} cannot start: {} of minimum {} placeable together",
                    g.group,
                    g.scheduled + g.placeable_together,
                    g.min_member.unwrap_or_default()
                )
            } else if p.disagreement.is_some() {
                "the scheduler refused it; placekit's model finds room (see why-pending POD)"
                    .to_string()
            } else {
                let why = p
                    .verdict
                    .as_ref()
                    .map(|v| v.evidence.clone())
                    .unwrap_or_else(|| "not modelled: run why-pending on the pod".into());
                match &p.kueue_admission {
                    Some(admission) => format!("{why}: {admission}"),
                    None => why,
                }
            };
            let mut row = vec![p.namespace.clone(), p.name.clone(), fits, why];
            if wide {
                row.push(
                    p.verdict
                        .as_ref()
                        .map(|v| v.action.clone())
                        .unwrap_or_default(),
                );
            }
            row
        })
        .collect();
    let mut header = vec!["NAMESPACE", "NAME", "FITS", "WHY"];
    if wide {
        header.push("ACTION");
    }
    print!("{}", ui.table(&header, &rows));
    let mut gangs: BTreeMap<&str, &v1::pending::GangJudgement> = BTreeMap::new();
    for g in judged.iter().filter_map(|p| p.gang.as_ref()) {
        gangs.entry(g.group.as_str()).or_insert(g);
    }
    if !gangs.is_empty() {
        let rows: Vec<Vec<String>> = gangs
            .values()
            .map(|g| {
                vec![
                    g.group.clone(),
                    format!("{:?}", g.kind),
                    g.min_member
                        .map(|m| m.to_string())
                        .unwrap_or_else(|| "?".into()),
                    g.scheduled.to_string(),
                    format!("{}/{}", g.placeable_together, g.pending),
                    match g.satisfiable {
                        Some(true) => "can start".to_string(),
                        Some(false) => "cannot start".to_string(),
                        None => "PodGroup not read".to_string(),
                    } + &g
                        .says
                        .as_ref()
                        .map(|s| format!(" ({s})"))
                        .unwrap_or_default(),
                ]
            })
            .collect();
        print!(
            "{}",
            ui.table(
                &[
                    "GANG",
                    "SCHEDULER",
                    "MIN",
                    "SCHEDULED",
                    "PLACEABLE",
                    "STATE"
                ],
                &rows
            )
        );
    }
}

/// A pod asking for whole NVIDIA GPUs where the candidates expose only MIG profiles: which
/// profiles they have, so the pod can ask for one.
fn mig_hint(
    requests: &BTreeMap<String, i128>,
    nodes: &[NodeInfo],
    fitting: &[&str],
    candidates: &[bool],
) -> Option<String> {
    if !fitting.is_empty() || !requests.contains_key("nvidia.com/gpu") {
        return None;
    }
    let mut profiles: BTreeMap<&str, i128> = BTreeMap::new();
    // The candidates (node affinity and nodeSelector hold) without whole GPUs: what their
    // MIG profiles have free.
    for (n, _) in nodes.iter().zip(candidates).filter(|(_, c)| **c) {
        if n.allocatable.get("nvidia.com/gpu").copied().unwrap_or(0) > 0 {
            continue;
        }
        for (r, q) in &n.allocatable {
            let free = q - n.requested.get(r).copied().unwrap_or(0);
            if r.starts_with("nvidia.com/mig-") && free > 0 {
                *profiles.entry(r.as_str()).or_default() += free;
            }
        }
    }
    (!profiles.is_empty()).then(|| {
        format!(
            "the pod asks for nvidia.com/gpu, but the nodes without it expose MIG profiles: {} (request one of them instead)",
            profiles
                .iter()
                .map(|(r, q)| format!("{r} ({} free)", placekit_core::model::quantity::format_milli(*q)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn print_text(
    ui: &Ui,
    namespace: &str,
    name: &str,
    report: &Value,
    results: &[(String, Result<(), FilterFailure>)],
    judged: &pending::Judgement,
    fitting: &[&str],
) {
    let verdict = judged.verdict.as_ref();
    say!("pod {namespace}/{name} is Pending");
    for c in report["conditions"].as_array().into_iter().flatten() {
        let line = format!(
            "  condition {}={} {}: {}",
            c["type"].as_str().unwrap_or_default(),
            c["status"].as_str().unwrap_or_default(),
            c["reason"].as_str().unwrap_or_default(),
            c["message"].as_str().unwrap_or_default()
        );
        say!("{line}");
    }
    for e in report["events"].as_array().into_iter().flatten() {
        let line = format!(
            "  event {} {}: {}",
            e["type"].as_str().unwrap_or_default(),
            e["reason"].as_str().unwrap_or_default(),
            e["message"].as_str().unwrap_or_default()
        );
        // Event messages are cluster strings: control characters escaped.
        say!("{line}");
    }
    if let Some(r) = report["requests"].as_object().filter(|r| !r.is_empty()) {
        say!(
            "  requests: {}",
            r.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for c in report["claims"].as_array().into_iter().flatten() {
        say!(
            "  claim {}{}: {}{}",
            c["name"].as_str().unwrap_or_default(),
            c["claim"]
                .as_str()
                .map(|o| format!(" (ResourceClaim {o})"))
                .unwrap_or_default(),
            c["state"].as_str().unwrap_or_default(),
            c["requests"]
                .as_array()
                .filter(|r| !r.is_empty())
                .map(|r| format!(
                    ", {}",
                    r.iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .unwrap_or_default()
        );
    }
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|(n, r)| {
            vec![
                n.clone(),
                match r {
                    Ok(()) => "fits".to_string(),
                    Err(f) => f.to_string(),
                },
            ]
        })
        .collect();
    if !rows.is_empty() {
        print!("{}", ui.table(&["NODE", "FIRST FAILING FILTER"], &rows));
    }
    if let Some(m) = report["predictedMessage"].as_str() {
        say!("placekit's model of the scheduler: {m}");
    }
    print_beyond_filters(judged);
    let not_modelled: Vec<&str> = report["notModelled"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .collect();
    if !not_modelled.is_empty() {
        say!(
            "placekit cannot model {}: whether the scheduler can allocate these claims is its word, not placekit's",
            not_modelled.join("; ")
        );
        if let Some(m) = report["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["reason"] == "FailedScheduling")
            .filter_map(|e| e["message"].as_str())
            .next_back()
        {
            say!("the scheduler says: {}", placekit_core::text::escaped(m));
        }
        if verdict.is_none() {
            return;
        }
    }
    if let Some(hint) = report["migHint"].as_str() {
        say!("hint: {hint}");
    }
    match verdict {
        Some(v) => print_verdict(ui, v),
        None if judged.disagreement.is_some() => {}
        None if judged
            .gang
            .as_ref()
            .is_some_and(|g| g.satisfiable == Some(false)) =>
        {
            say!(
                "{} node(s) fit this pod alone ({}), but its gang cannot start together",
                fitting.len(),
                fitting.join(", ")
            )
        }
        None if !fitting.is_empty() => say!(
            "{} node(s) fit now ({}): the scheduler should place it on its next attempt",
            fitting.len(),
            fitting.join(", ")
        ),
        None => say!("no node in the cluster"),
    }
}

/// What a pending pod's report says beyond the filters: the node a preemption nominated
/// and its victims, the gang judged as a group, the referee.
fn print_beyond_filters(judged: &pending::Judgement) {
    if let Some(n) = &judged.nomination {
        let victims = if n.terminating_victims.is_empty() {
            "no victim is still terminating there".to_string()
        } else {
            format!(
                "victims still terminating there: {}",
                n.terminating_victims.join(", ")
            )
        };
        say!(
            "preemption: nominated to node {}{}; {victims}",
            n.node,
            if n.node_exists {
                ""
            } else {
                " (which no longer exists)"
            }
        );
    }
    if let Some(g) = &judged.gang {
        say!(
            "gang: {} PodGroup {} (minimum {}): {} scheduled, {} of {} pending placeable together{}",
            format!("{:?}", g.kind),
            g.group,
            g.min_member
                .map(|m| m.to_string())
                .unwrap_or_else(|| "unknown: the PodGroup was not read".into()),
            g.scheduled,
            g.placeable_together,
            g.pending,
            match g.satisfiable {
                Some(true) => ": the group can start",
                Some(false) => ": the group cannot start",
                None => "",
            }
        );
        for u in &g.unplaced {
            say!("  not placeable with the others: {u}");
        }
        if let Some(says) = &g.says {
            say!("  the PodGroup says: {says}");
        }
    }
    if let Some(d) = &judged.disagreement {
        say!("referee: {d}");
    }
}

/// The verdict's three lines.
fn print_verdict(ui: &Ui, v: &scheduler::Verdict) {
    say!("evidence: {}", v.evidence);
    say!("judgment: {}", v.judgment);
    println!(
        "action:   {}",
        ui.paint(
            &placekit_core::text::escaped(&v.action),
            placekit_core::text::Color::Bold
        )
    );
}
