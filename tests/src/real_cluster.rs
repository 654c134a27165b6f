//! The real-cluster driver: a disposable cluster named by kubeconfigs (the control plane of
//! `tests/control-plane/cp up`, or any cluster that consents), emptied of nodes and
//! workloads, loaded with a fixture's objects as the API server and a kubelet would have
//! them (nodes with their status, pods with their phase), and fronted by the test server as a
//! fault-injecting proxy. The harness and the benchmarks use it; it knows nothing of them.

use std::path::Path;
use std::sync::{Arc, LazyLock};

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use serde_json::{Value, json};

use crate::TestServer;
use crate::require::Need;
use crate::upstream::Upstream;

/// The environment variable naming a real cluster's admin kubeconfig.
pub const E2E_KUBECONFIG: &str = "PLACEKIT_E2E_KUBECONFIG";
/// The environment variable naming the same cluster's read-only kubeconfig.
pub const E2E_VIEWER_KUBECONFIG: &str = "PLACEKIT_E2E_VIEWER_KUBECONFIG";
/// The environment variable naming a second real cluster's admin kubeconfig (another
/// `tests/control-plane/cp up` with its own `PLACEKIT_CP_DIR`), for the tests that read
/// several clusters at once.
pub const E2E_SECOND_KUBECONFIG: &str = "PLACEKIT_E2E_SECOND_KUBECONFIG";
/// The kubeconfig of the real cluster a real-cluster-only `suite` runs on (from
/// [`E2E_KUBECONFIG`], or `var`), `None` when it is skipped: a `SKIPPED:` line names the
/// suite and the variable, or, when `PLACEKIT_REQUIRE` requires a real cluster, the suite
/// fails ([`crate::require`]).
pub fn real_cluster_for(suite: &str, var: &str) -> Option<std::path::PathBuf> {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(path) => Some(path.into()),
        None => {
            crate::require::skip(suite, Need::RealCluster, &format!("{var} is not set"));
            None
        }
    }
}

/// The ConfigMap (in `kube-system`) by which a cluster consents to being emptied by tests.
pub const DISPOSABLE_MARKER: &str = "placekit-e2e-disposable";

/// One test at a time on the second real cluster; held for an [`OtherCluster`]'s lifetime.
pub(crate) static SECOND_CLUSTER: LazyLock<Arc<tokio::sync::Mutex<()>>> =
    LazyLock::new(|| Arc::new(tokio::sync::Mutex::new(())));

/// One test at a time on a shared real cluster; held for a harness's lifetime.
pub(crate) static REAL_CLUSTER: LazyLock<Arc<tokio::sync::Mutex<()>>> =
    LazyLock::new(|| Arc::new(tokio::sync::Mutex::new(())));

/// A real cluster named by kubeconfigs (admin, and optionally a read-only viewer): the
/// upstream the proxy forwards to, the bearer tokens the proxy's kubeconfigs carry, and a
/// direct client for set-up. Used by the harness and by the benchmarks on a real server.
pub struct RealCluster {
    upstream: Upstream,
    admin_token: String,
    viewer_token: Option<String>,
    client: kube::Client,
}

impl std::fmt::Debug for RealCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealCluster")
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

impl RealCluster {
    /// Reads the admin (and viewer) kubeconfig; both must use bearer tokens, which the
    /// proxy passes through.
    pub async fn connect(admin: &Path, viewer: Option<&Path>) -> Self {
        let (upstream, admin_token, client) = read_user(admin).await;
        let viewer_token = match viewer {
            Some(path) => Some(read_user(path).await.1),
            None => None,
        };
        RealCluster {
            upstream,
            admin_token,
            viewer_token,
            client,
        }
    }

    /// A direct admin client (not through the proxy, not counted).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// Starts the fault-injecting proxy in front of the cluster; its `"admin"`/`"viewer"`
    /// kubeconfigs carry the real tokens.
    pub async fn proxy(&self) -> TestServer {
        let mut tokens = std::collections::HashMap::new();
        tokens.insert("admin".to_string(), self.admin_token.clone());
        if let Some(v) = &self.viewer_token {
            tokens.insert("viewer".to_string(), v.clone());
        }
        TestServer::start_proxy(self.upstream.clone(), tokens)
            .await
            .expect("proxy starts")
    }

    /// Panics unless the cluster carries the disposable marker.
    pub async fn require_disposable(&self) {
        require_disposable(&self.client).await
    }

    /// Deletes every node and workload (see [`reset_cluster`]).
    pub async fn reset(&self) {
        reset_cluster(&self.client).await
    }

    /// Creates every object of a YAML fixture.
    pub async fn apply_fixture(&self, fixture: &str) {
        apply_fixture(&self.client, fixture).await
    }

    /// Creates objects, `concurrency` at a time (nodes with status, pods with their phase).
    pub async fn create_all(&self, objects: Vec<Value>, concurrency: usize) {
        use futures::StreamExt as _;
        futures::stream::iter(objects)
            .map(|o| create_real(&self.client, o))
            .buffer_unordered(concurrency.max(1))
            .collect::<Vec<()>>()
            .await;
    }
}

/// The upstream, bearer token and a direct client of a kubeconfig's current context.
async fn read_user(path: &Path) -> (Upstream, String, kube::Client) {
    use base64::Engine as _;
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let context_name = kubeconfig
        .current_context
        .clone()
        .expect("the kubeconfig has a current context");
    let context = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.clone())
        .expect("the current context exists");
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.clone())
        .expect("the context's cluster exists");
    let user = context.user.clone().unwrap_or_default();
    let token = kubeconfig
        .auth_infos
        .iter()
        .find(|a| a.name == user)
        .and_then(|a| a.auth_info.as_ref())
        // kube keeps tokens in `secrecy`'s type and serialises them as plain text.
        .and_then(|a| serde_json::to_value(a).ok())
        .and_then(|a| a["token"].as_str().map(str::to_string))
        .unwrap_or_else(|| {
            panic!(
                "{}: the e2e suites need a bearer-token user (the proxy passes it through)",
                path.display()
            )
        });
    let ca = match (
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    ) {
        (Some(data), _) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .expect("certificate-authority-data is base64"),
        ),
        (None, Some(file)) => Some(std::fs::read(file).expect("certificate-authority")),
        (None, None) => None,
    };
    let server = cluster.server.clone().expect("the cluster has a server");
    let upstream = Upstream::new(&server, ca.as_deref()).expect("usable upstream");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("usable kubeconfig");
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    (upstream, token, client)
}

async fn require_disposable(client: &kube::Client) {
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), "kube-system");
    if maps
        .get_opt(DISPOSABLE_MARKER)
        .await
        .ok()
        .flatten()
        .is_none()
    {
        panic!(
            "refusing to use this cluster: the end-to-end suites and benchmarks delete every node \
             and workload. Use a throw-away cluster (tests/control-plane/cp up) or consent with \
             `kubectl -n kube-system create configmap {DISPOSABLE_MARKER}`"
        );
    }
}

pub(crate) fn dynamic_api(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// The namespaced kinds a fixture can hold, deleted between tests.
const WORKLOADS: &[(&str, &str, &str)] = &[
    ("v1", "Pod", "pods"),
    ("v1", "Event", "events"),
    ("apps/v1", "Deployment", "deployments"),
    ("apps/v1", "StatefulSet", "statefulsets"),
    ("apps/v1", "DaemonSet", "daemonsets"),
    ("apps/v1", "ReplicaSet", "replicasets"),
    ("batch/v1", "Job", "jobs"),
    ("batch/v1", "CronJob", "cronjobs"),
    ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
    ("resource.k8s.io/v1", "ResourceClaim", "resourceclaims"),
    (
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
    ),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups"),
    // Served where GenericWorkload is on (CI's second control plane).
    ("scheduling.k8s.io/v1beta1", "PodGroup", "podgroups"),
];

/// The custom resources the test server serves (see `resources.rs`), as (group, version,
/// plural, kind): on a real cluster their CRDs come and go with
/// `Harness::install_crds`/`Harness::uninstall_crds`, and reset deletes their objects
/// when they are served.
pub const CUSTOM_RESOURCES: &[(&str, &str, &str, &str)] = &[
    ("ray.io", "v1", "rayclusters", "RayCluster"),
    ("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"),
    ("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
];

/// The cluster-scoped kinds besides nodes a fixture can hold, deleted between tests.
const CLUSTER_SCOPED: &[(&str, &str, &str)] = &[
    ("v1", "PersistentVolume", "persistentvolumes"),
    ("storage.k8s.io/v1", "StorageClass", "storageclasses"),
    ("storage.k8s.io/v1", "CSINode", "csinodes"),
    ("resource.k8s.io/v1", "ResourceSlice", "resourceslices"),
    ("resource.k8s.io/v1", "DeviceClass", "deviceclasses"),
    ("resource.k8s.io/v1", "DeviceTaintRule", "devicetaintrules"),
];

/// Empties the cluster of nodes and workloads. Namespaces stay (without a namespace
/// controller a deleted namespace would stay Terminating); pods go at once (grace 0: no
/// kubelet would ever confirm a graceful deletion).
async fn reset_cluster(client: &kube::Client) {
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let namespaces = namespaces
        .list(&ListParams::default())
        .await
        .expect("list namespaces");
    for ns in namespaces
        .items
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
    {
        for (api_version, kind, plural) in WORKLOADS {
            let api = dynamic_api(client, api_version, kind, plural, Some(ns));
            if *kind == "PodGroup" {
                // Served only where Volcano's CRD is installed, or GenericWorkload is on.
                if api.list(&ListParams::default().limit(1)).await.is_err() {
                    continue;
                }
            }
            if matches!(
                *kind,
                "ResourceClaim" | "PersistentVolumeClaim" | "PodGroup"
            ) {
                // The scheduler protects the claims it allocates, and the API server every
                // PersistentVolumeClaim and PodGroup, with a finalizer that only a controller
                // removes; no controller may be running.
                let claims = api.list(&ListParams::default()).await.expect("list claims");
                for claim in claims.items {
                    if claim
                        .metadata
                        .finalizers
                        .as_ref()
                        .is_some_and(|f| !f.is_empty())
                    {
                        let name = claim.metadata.name.clone().unwrap_or_default();
                        api.patch(
                            &name,
                            &PatchParams::default(),
                            &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
                        )
                        .await
                        .unwrap_or_else(|e| panic!("unprotecting claim {ns}/{name}: {e}"));
                    }
                }
            }
            // A collection of thousands of pods takes the server longer than its 60 s request
            // timeout; it goes on deleting after answering 504, so ask again until it is empty.
            for attempt in 1.. {
                match api.delete_collection(&now, &ListParams::default()).await {
                    Ok(_) => break,
                    Err(kube::Error::Api(e)) if e.code == 504 && attempt < 10 => continue,
                    // A pooled connection the server closed while it worked through a large
                    // collection: ask again on a new one.
                    Err(kube::Error::Service(_) | kube::Error::HyperError(_)) if attempt < 10 => {
                        continue;
                    }
                    Err(e) => panic!("deleting {plural} in {ns}: {e}"),
                }
            }
        }
    }
    for (group, version, plural, kind) in CUSTOM_RESOURCES {
        let api = dynamic_api(client, &format!("{group}/{version}"), kind, plural, None);
        match api.delete_collection(&now, &ListParams::default()).await {
            Ok(_) => {}
            // The CRD is not installed.
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => panic!("deleting {plural}.{group}: {e}"),
        }
    }
    for (api_version, kind, plural) in CLUSTER_SCOPED {
        let api = dynamic_api(client, api_version, kind, plural, None);
        if *kind == "PersistentVolume" {
            // The API server's pv-protection finalizer, which no running controller removes.
            for pv in api
                .list(&ListParams::default())
                .await
                .expect("list pvs")
                .items
            {
                let name = pv.metadata.name.clone().unwrap_or_default();
                api.patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
                )
                .await
                .unwrap_or_else(|e| panic!("unprotecting pv {name}: {e}"));
            }
        }
        api.delete_collection(&now, &ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("deleting {plural}: {e}"));
    }
    dynamic_api(client, "v1", "Node", "nodes", None)
        .delete_collection(&now, &ListParams::default())
        .await
        .expect("deleting nodes");
    // Deletion with grace 0 and no finalizers is immediate, but wait until lists agree so
    // a fixture object of the same name can be created.
    for _ in 0..100 {
        let left = dynamic_api(client, "v1", "Node", "nodes", None)
            .list(&ListParams::default().limit(1))
            .await
            .expect("list nodes");
        if left.items.is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("nodes are still there after deleting them all");
}

/// Creates every object of a fixture on a real cluster, the way kwok registers nodes:
/// nodes keep their status (capacity, allocatable; a Ready condition when the fixture gives
/// none); a pod's phase is set through its status subresource afterwards, as a kubelet
/// would; namespaces are created when missing.
async fn apply_fixture(client: &kube::Client, fixture: &str) {
    use serde::Deserialize;
    // Validate the fixture the same way the test server does before touching the cluster.
    crate::fixtures::load_yaml(&mut crate::store::Store::new(), fixture).expect("fixture loads");
    for document in serde_yaml::Deserializer::from_str(fixture) {
        let value = Value::deserialize(document).expect("yaml");
        if value.is_null() {
            continue;
        }
        let items = if value["kind"] == "List" {
            value["items"].as_array().cloned().unwrap_or_default()
        } else {
            vec![value]
        };
        for obj in items {
            create_real(client, obj).await;
        }
    }
}

pub(crate) async fn create_real(client: &kube::Client, mut obj: Value) {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default().to_string();
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    let resource = crate::resources::by_kind(&api_version, &kind).expect("served kind");
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let namespace = resource.namespaced.then(|| {
        obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string()
    });
    for field in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove(field);
        }
    }
    let api = dynamic_api(
        client,
        &api_version,
        &kind,
        resource.plural,
        namespace.as_deref(),
    );
    let status = obj.as_object_mut().and_then(|o| o.remove("status"));
    // Namespaces stay (no namespace controller would finish deleting one), and so do
    // PriorityClasses (the system ones may not be deleted): a fixture's is kept if there.
    if kind == "Namespace" || kind == "PriorityClass" {
        if api.get_opt(&name).await.expect("get namespace").is_some() {
            return;
        }
    } else if kind == "Node" {
        let mut status = status.clone().unwrap_or_else(|| json!({}));
        if status.get("conditions").is_none() {
            status["conditions"] = json!([{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "registered by the placekit e2e harness (no kubelet)"
            }]);
        }
        obj["status"] = status;
    }
    let object: DynamicObject = serde_json::from_value(obj).expect("object");
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating fixture object {kind}/{name}: {e}"));
    if kind == "ResourceClaim"
        && let Some(status) = status.clone().filter(|s| s.get("allocation").is_some())
    {
        // As the scheduler records an allocation it made.
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": status})),
        )
        .await
        .unwrap_or_else(|e| panic!("allocating claim {name}: {e}"));
    }
    if kind == "Pod"
        && let Some(status) = status.filter(|s| s.get("phase").is_some())
    {
        // The scheduler may have set conditions already; only the phase is the fixture's,
        // and the conditions when it gives them (a Ready pod, as a kubelet reports it).
        let mut patch = json!({"status": {"phase": status["phase"]}});
        if let Some(conditions) = status.get("conditions") {
            patch["status"]["conditions"] = conditions.clone();
        }
        // What the scheduler records when it serves extended resources from DRA devices.
        if let Some(extended) = status.get("extendedResourceClaimStatus") {
            patch["status"]["extendedResourceClaimStatus"] = extended.clone();
        }
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_or_else(|e| panic!("setting the phase of pod {name}: {e}"));
    }
}
