//! End-to-end harness for the plugins: a cluster, a kubeconfig, a private snapshot
//! directory and the plugin binary on `PATH`, run the way users run it — `kubectl <plugin>
//! ...` through kubectl's plugin lookup — or directly, with a printed notice, where kubectl
//! is not installed.
//!
//! Two back ends, one test code:
//! - by default, the in-process test API server loaded with the fixture;
//! - with `PLACEKIT_E2E_KUBECONFIG` set, a real cluster (the control plane of
//!   `tests/control-plane/cp up`, or any disposable cluster): the harness empties it of
//!   nodes and workloads, creates the fixture's objects there (nodes with their status, pods
//!   with their phase), and puts the test server in front of it as a fault-injecting reverse
//!   proxy, so the same fault, counter and concurrent-writer hooks work on real semantics.
//!   Tests against a real cluster run one at a time (a process-wide lock): they share it.
//!   `PLACEKIT_E2E_VIEWER_KUBECONFIG` gives the read-only user.
//!
//! Because the real-cluster mode deletes every node and workload, it refuses a cluster
//! without the ConfigMap `kube-system/placekit-e2e-disposable` (which `cp up` creates).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::process::Bounded as _;
use crate::real_cluster::{
    CUSTOM_RESOURCES, E2E_KUBECONFIG, E2E_SECOND_KUBECONFIG, E2E_VIEWER_KUBECONFIG, REAL_CLUSTER,
    RealCluster, SECOND_CLUSTER, create_real, dynamic_api,
};
use crate::require::Need;
use crate::{ServerConfig, TestServer};

/// A finished plugin run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Fails the test unless `run` exited with `code`, showing everything it printed.
#[track_caller]
pub fn assert_code(run: &Run, code: i32) {
    assert_eq!(run.code, code, "{}", run.all());
}

impl Run {
    pub fn from(output: Output) -> Self {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// stdout then stderr, for assertion messages.
    pub fn all(&self) -> String {
        format!(
            "--- exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// Parses stdout as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.all()))
    }
}

/// The plugin binary `file` (`kubectl-gpu_taint`) built in the target directory of the
/// running test: a workspace-level suite that spans the plugins finds them there
/// (`cargo test --workspace` builds them). `None`, with one `SKIPPED:` line, when it is not
/// built; under `PLACEKIT_REQUIRE=plugins` the suite fails instead.
pub fn built_plugin(suite: &str, file: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("the test's own path");
    let target = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test runs from target/<profile>/deps");
    let binary = target.join(format!("{file}{}", std::env::consts::EXE_SUFFIX));
    if binary.is_file() {
        return Some(binary);
    }
    crate::require::skip(
        suite,
        Need::Plugins,
        &format!("{} is not built", binary.display()),
    );
    None
}

/// One plugin, one cluster, one scratch directory.
pub struct Harness {
    /// The in-process server (None against a real cluster).
    pub server: Option<TestServer>,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub state_dir: PathBuf,
    bin_dir: PathBuf,
    plugin: String,
    kubectl: bool,
    client: kube::Client,
    /// Held while this harness uses the shared real cluster.
    _exclusive: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("plugin", &self.plugin)
            .field("kubeconfig", &self.kubeconfig)
            .field("kubectl", &self.kubectl)
            .finish_non_exhaustive()
    }
}

/// Whether plugins run through kubectl: once per process, with one `SKIPPED:` line (or the
/// failure `PLACEKIT_REQUIRE=kubectl` asks for) when kubectl is not on PATH.
fn kubectl_on_path() -> bool {
    static ON_PATH: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON_PATH.get_or_init(|| {
        crate::require::kubectl(
            "runs through `kubectl <plugin>` (the plugin binaries run directly instead)",
        )
    })
}

impl Harness {
    /// Starts a cluster with `fixture` and installs `binary` as the plugin `plugin` (e.g.
    /// "nodelabel" for `kubectl-nodelabel`): the test API server, or, with
    /// Like [`Harness::start`] with a full server configuration: always the test API server
    /// (generated clusters of any size, users of its own table).
    pub async fn local(plugin: &str, binary: &Path, config: ServerConfig) -> Self {
        let server = TestServer::start(config).await.expect("test server starts");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = server
            .write_kubeconfig(&dir.path().join("kubeconfig"), "admin")
            .expect("kubeconfig");
        let client = server.client(crate::ADMIN_TOKEN);
        Self::finish(Some(server), dir, kubeconfig, client, plugin, binary, None)
    }

    /// Against `PLACEKIT_E2E_KUBECONFIG` when set (the real cluster behind the
    /// fault-injecting proxy), else against a test API server.
    pub async fn start(plugin: &str, binary: &Path, fixture: &str) -> Self {
        let Some(path) = std::env::var_os(E2E_KUBECONFIG) else {
            return Self::local(
                plugin,
                binary,
                ServerConfig::default().with_fixture_yaml(fixture),
            )
            .await;
        };
        let exclusive = REAL_CLUSTER.clone().lock_owned().await;
        let viewer = std::env::var_os(E2E_VIEWER_KUBECONFIG).map(PathBuf::from);
        let cluster = RealCluster::connect(Path::new(&path), viewer.as_deref()).await;
        cluster.require_disposable().await;
        cluster.reset().await;
        cluster.apply_fixture(fixture).await;
        let client = cluster.client();
        let server = cluster.proxy().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = server
            .write_kubeconfig(&dir.path().join("kubeconfig"), "admin")
            .expect("kubeconfig");
        Self::finish(
            Some(server),
            dir,
            kubeconfig,
            client,
            plugin,
            binary,
            Some(exclusive),
        )
    }

    /// A cluster with `fixture` and no plugin installed, for tests of kubectl itself.
    pub async fn cluster(fixture: &str) -> Self {
        Self::start("", Path::new(""), fixture).await
    }

    /// Another cluster holding `fixture`, for the commands that read several: with
    /// `PLACEKIT_E2E_SECOND_KUBECONFIG`, that real cluster (emptied first; its own kubeconfig
    /// and credentials, no proxy); else a test API server. With a real first cluster and no
    /// second one, a test API server stands in, with a notice, unless `PLACEKIT_REQUIRE`
    /// requires `second-cluster` (CI), where that fails.
    pub async fn other_cluster(&self, fixture: &str) -> OtherCluster {
        let dir = tempfile::tempdir().expect("tempdir");
        match std::env::var_os(E2E_SECOND_KUBECONFIG) {
            Some(path) => {
                let exclusive = SECOND_CLUSTER.clone().lock_owned().await;
                let cluster = RealCluster::connect(Path::new(&path), None).await;
                cluster.require_disposable().await;
                cluster.reset().await;
                cluster.apply_fixture(fixture).await;
                let kubeconfig = dir.path().join("kubeconfig");
                std::fs::copy(&path, &kubeconfig).expect("copy the second kubeconfig");
                OtherCluster {
                    kubeconfig,
                    server: None,
                    client: cluster.client(),
                    _dir: dir,
                    _exclusive: Some(exclusive),
                }
            }
            None => {
                if self.is_real() {
                    crate::require::skip(
                        "the second cluster's half of a many-clusters test",
                        Need::SecondCluster,
                        &format!(
                            "{E2E_SECOND_KUBECONFIG} is not set; a test API server stands in for it"
                        ),
                    );
                }
                let server = TestServer::start(ServerConfig::default().with_fixture_yaml(fixture))
                    .await
                    .expect("test server starts");
                let kubeconfig = server
                    .write_kubeconfig(&dir.path().join("kubeconfig"), "admin")
                    .expect("kubeconfig");
                let client = server.client(crate::ADMIN_TOKEN);
                OtherCluster {
                    kubeconfig,
                    server: Some(server),
                    client,
                    _dir: dir,
                    _exclusive: None,
                }
            }
        }
    }

    /// Whether this harness runs against a real cluster (through the proxy).
    pub fn is_real(&self) -> bool {
        self._exclusive.is_some()
    }

    fn finish(
        server: Option<TestServer>,
        dir: tempfile::TempDir,
        kubeconfig: PathBuf,
        client: kube::Client,
        plugin: &str,
        binary: &Path,
        exclusive: Option<tokio::sync::OwnedMutexGuard<()>>,
    ) -> Self {
        let bin_dir = dir.path().join("bin");
        std::fs::create_dir_all(&bin_dir).expect("bin dir");
        let file_name = format!("kubectl-{}", plugin.replace('-', "_"));
        if !plugin.is_empty() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(binary, bin_dir.join(&file_name)).expect("symlink plugin");
            #[cfg(not(unix))]
            std::fs::copy(binary, bin_dir.join(&file_name)).expect("copy plugin");
        }
        let state_dir = dir.path().join("state");
        let kubectl = kubectl_on_path();
        Harness {
            server,
            dir,
            kubeconfig,
            state_dir,
            bin_dir,
            plugin: plugin.to_string(),
            kubectl,
            client,
            _exclusive: exclusive,
        }
    }

    /// A client with admin rights on the cluster under test.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The test server, or the fault-injecting proxy in front of the real cluster: faults,
    /// counters and concurrent writers work on both.
    pub fn server(&self) -> &TestServer {
        self.server.as_ref().expect("every harness has a server")
    }

    /// A kubeconfig for another user of the test server.
    pub fn kubeconfig_for(&self, user: &str) -> PathBuf {
        self.server()
            .write_kubeconfig(&self.dir.path().join(format!("{user}.kubeconfig")), user)
            .expect("kubeconfig")
    }

    /// Runs `kubectl <plugin> args...` with this harness's kubeconfig.
    pub async fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &self.kubeconfig.clone()).await
    }

    /// Runs with another kubeconfig.
    pub async fn run_with(&self, args: &[&str], kubeconfig: &Path) -> Run {
        let mut cmd = self.command(args);
        cmd.env("KUBECONFIG", kubeconfig);
        let output =
            tokio::task::spawn_blocking(move || cmd.bounded_output().expect("plugin runs"))
                .await
                .expect("join");
        Run::from(output)
    }

    /// Runs with extra environment variables.
    pub async fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        cmd.envs(env.iter().copied());
        let output =
            tokio::task::spawn_blocking(move || cmd.bounded_output().expect("plugin runs"))
                .await
                .expect("join");
        Run::from(output)
    }

    /// The command [`Harness::run`] runs, to spawn it and watch it (signals): `kubectl
    /// <plugin>` (or the binary itself without kubectl) with this harness's kubeconfig and
    /// state directory, no colour and no stdin.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(&self.plugin, args)
    }

    /// Installs another plugin next to this harness's (same kubeconfig and state
    /// directory: the two plugins share one undo stack per cluster).
    pub fn install_plugin(&self, plugin: &str, binary: &Path) {
        assert!(
            binary.exists(),
            "{} is not built (cargo build -p kubectl-{plugin})",
            binary.display()
        );
        let file_name = format!("kubectl-{}", plugin.replace('-', "_"));
        #[cfg(unix)]
        std::os::unix::fs::symlink(binary, self.bin_dir.join(&file_name)).expect("symlink plugin");
        #[cfg(not(unix))]
        std::fs::copy(binary, self.bin_dir.join(&file_name)).expect("copy plugin");
    }

    /// Runs `kubectl <plugin> args...` for a plugin [`Harness::install_plugin`] installed.
    pub async fn run_plugin(&self, plugin: &str, args: &[&str]) -> Run {
        let mut cmd = self.command_of(plugin, args);
        let output =
            tokio::task::spawn_blocking(move || cmd.bounded_output().expect("plugin runs"))
                .await
                .expect("join");
        Run::from(output)
    }

    fn command_of(&self, plugin: &str, args: &[&str]) -> Command {
        let path = format!(
            "{}:{}",
            self.bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = if self.kubectl {
            let mut c = Command::new("kubectl");
            c.arg(plugin);
            c
        } else {
            Command::new(
                self.bin_dir
                    .join(format!("kubectl-{}", plugin.replace('-', "_"))),
            )
        };
        cmd.args(args)
            .env("PATH", path)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("PLACEKIT_STATE_DIR", &self.state_dir)
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// Waits for a spawned [`Harness::command`] and reads its output.
    pub fn wait(child: std::process::Child) -> Run {
        Run::from(crate::process::wait_output(child, "a plugin run"))
    }

    /// Creates an object as someone else would (not counted by the hooks): in the test
    /// server's store, or on the real cluster directly (a pod's fixture phase is set through
    /// its status, as a kubelet would).
    pub async fn create(&self, object: Value) {
        if self.is_real() {
            create_real(&self.client, object).await;
        } else {
            self.server().create(object).expect("object created");
        }
    }

    /// Installs minimal CRDs (no schema, preserve-unknown-fields) for [`CUSTOM_RESOURCES`]
    /// on a real cluster and waits until discovery serves them; the test server always
    /// serves them.
    pub async fn install_crds(&self) {
        if !self.is_real() {
            return;
        }
        let crds = self.crds();
        for (group, version, plural, kind) in CUSTOM_RESOURCES {
            let crd = json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": format!("{plural}.{group}")},
                "spec": {
                    "group": group,
                    "scope": "Namespaced",
                    "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
                    "versions": [{"name": version, "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
                },
            });
            let object: DynamicObject = serde_json::from_value(crd).expect("crd");
            match crds.create(&PostParams::default(), &object).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => panic!("creating the CRD of {plural}.{group}: {e}"),
            }
        }
        self.wait_for_crds(true).await;
    }

    /// Deletes the CRDs of [`CUSTOM_RESOURCES`] (and so their objects) on a real cluster
    /// and waits until discovery no longer serves them. On the test server, which always
    /// serves them, it panics: a test of an absent CRD runs on a real cluster.
    pub async fn uninstall_crds(&self) {
        assert!(
            self.is_real(),
            "the test server always serves its custom resources"
        );
        let crds = self.crds();
        for (group, _, plural, _) in CUSTOM_RESOURCES {
            match crds
                .delete(&format!("{plural}.{group}"), &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => panic!("deleting the CRD of {plural}.{group}: {e}"),
            }
        }
        self.wait_for_crds(false).await;
    }

    fn crds(&self) -> Api<DynamicObject> {
        dynamic_api(
            &self.client,
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            None,
        )
    }

    async fn wait_for_crds(&self, served: bool) {
        for _ in 0..300 {
            let mut all = true;
            for (group, version, plural, _) in CUSTOM_RESOURCES {
                let is_served = self
                    .client
                    .list_api_group_resources(&format!("{group}/{version}"))
                    .await
                    .is_ok_and(|list| list.resources.iter().any(|r| r.name == *plural));
                all &= is_served == served;
            }
            if all {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!(
            "the custom resources' CRDs did not become {}",
            if served { "served" } else { "absent" }
        );
    }

    /// [`Harness::create`] for many objects (32 at a time on a real cluster).
    pub async fn create_all(&self, objects: Vec<Value>) {
        use futures::StreamExt as _;
        futures::stream::iter(objects)
            .map(|o| self.create(o))
            .buffer_unordered(32)
            .collect::<Vec<()>>()
            .await;
    }

    /// Applies a merge patch as someone else would (not counted by the hooks).
    pub async fn merge_patch(
        &self,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) {
        if !self.is_real() {
            self.server()
                .merge_patch(plural, namespace, name, patch)
                .expect("merge patch applied");
            return;
        }
        let resource = crate::resources::RESOURCES
            .iter()
            .find(|r| r.plural == plural)
            .expect("a resource the fixtures use");
        dynamic_api(
            &self.client,
            &resource.api_version(),
            resource.kind,
            plural,
            namespace,
        )
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap_or_else(|e| panic!("merge patch of {plural}/{name}: {e}"));
    }

    /// The scheduler's newest FailedScheduling message for a pod, without its preemption
    /// part, waiting up to 30 s for the scheduler to write one (a real cluster's scheduler;
    /// the test server has none and answers `None` at once).
    pub async fn failed_scheduling(&self, namespace: &str, pod: &str) -> Option<String> {
        if !self.is_real() {
            return None;
        }
        let events: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(self.client.clone(), namespace);
        for _ in 0..150 {
            let list = events
                .list(&ListParams::default().fields(&format!("involvedObject.name={pod}")))
                .await
                .expect("list events");
            if let Some(m) = list
                .items
                .iter()
                .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
                .filter_map(|e| e.message.clone())
                .next_back()
            {
                return Some(
                    m.split(" preemption: ")
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        panic!("no FailedScheduling event for {namespace}/{pod} within 30 s");
    }

    /// The node a pod is bound to, waiting up to 30 s for a real cluster's scheduler to bind
    /// it (at once on the test server, which has no scheduler).
    pub async fn bound_node(&self, namespace: &str, pod: &str) -> Option<String> {
        let pods: Api<k8s_openapi::api::core::v1::Pod> =
            Api::namespaced(self.client.clone(), namespace);
        for _ in 0..150 {
            let node = pods
                .get(pod)
                .await
                .expect("the pod exists")
                .spec
                .and_then(|s| s.node_name);
            if node.is_some() || !self.is_real() {
                return node;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        None
    }

    /// A node as JSON, read through the API.
    pub async fn node(&self, name: &str) -> Value {
        let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(self.client.clone());
        serde_json::to_value(api.get(name).await.expect("node exists")).expect("json")
    }

    /// A node's labels.
    pub async fn labels(&self, name: &str) -> Value {
        self.node(name).await["metadata"]["labels"].clone()
    }

    /// The snapshot files written so far, oldest first.
    pub fn snapshots(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(&self.state_dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        out.sort();
        out
    }
}

/// A second cluster of [`Harness::other_cluster`].
pub struct OtherCluster {
    /// Its admin kubeconfig (current context only).
    pub kubeconfig: PathBuf,
    /// The test API server, when it is one.
    pub server: Option<TestServer>,
    client: kube::Client,
    _dir: tempfile::TempDir,
    _exclusive: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl std::fmt::Debug for OtherCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtherCluster")
            .field("kubeconfig", &self.kubeconfig)
            .field("real", &self.server.is_none())
            .finish_non_exhaustive()
    }
}

impl OtherCluster {
    /// A client with admin rights on it.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }
}

/// One kubeconfig holding the current context of each `(name, kubeconfig)` under `name`
/// (its cluster and user renamed alike), the first current: what a user's merged kubeconfig
/// of several clusters looks like.
pub fn merge_kubeconfigs(contexts: &[(&str, &Path)]) -> String {
    let mut clusters = Vec::new();
    let mut users = Vec::new();
    let mut entries = Vec::new();
    for (name, path) in contexts {
        let text = std::fs::read_to_string(path).expect("kubeconfig readable");
        let config: Value = serde_yaml::from_str(&text).expect("kubeconfig is YAML");
        let current = config["current-context"].as_str().expect("current context");
        let context = config["contexts"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == current))
            .expect("the current context exists");
        let find = |list: &str, wanted: &Value| {
            config[list]
                .as_array()
                .and_then(|l| l.iter().find(|e| &e["name"] == wanted))
                .cloned()
                .expect("the context's entry exists")
        };
        let mut cluster = find("clusters", &context["context"]["cluster"]);
        let mut user = find("users", &context["context"]["user"]);
        cluster["name"] = json!(name);
        user["name"] = json!(name);
        clusters.push(cluster);
        users.push(user);
        entries.push(json!({"name": name, "context": {"cluster": name, "user": name}}));
    }
    serde_yaml::to_string(&json!({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": contexts.first().map(|(n, _)| *n),
        "clusters": clusters,
        "users": users,
        "contexts": entries,
    }))
    .expect("kubeconfig serialises")
}

/// What `kubectl __complete <plugin> WORDS...` answers (the call kubectl's shell completion
/// makes), with `binary`'s directory and its `kubectl_complete-<plugin>` helper (written by
/// `<binary> completion kubectl`) on PATH: the candidates' values and cobra's directive.
/// `None` when kubectl is not installed.
pub fn kubectl_complete(
    binary: &Path,
    plugin: &str,
    words: &[&str],
    env: &[(&str, &Path)],
) -> Option<(Vec<String>, u8)> {
    if !crate::require::kubectl("kubectl's completion of a plugin") {
        return None;
    }
    let helpers = tempfile::tempdir().expect("temp dir");
    let helper = helpers
        .path()
        .join(format!("kubectl_complete-{}", plugin.replace('-', "_")));
    let script = Command::new(binary)
        .args(["completion", "kubectl"])
        .bounded_output()
        .expect("the plugin runs");
    std::fs::write(&helper, &script.stdout).expect("helper written");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755))
            .expect("helper executable");
    }
    let path = format!(
        "{}:{}:{}",
        binary.parent().expect("binary dir").display(),
        helpers.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("kubectl")
        .arg("__complete")
        .arg(plugin)
        .args(words)
        .env("PATH", path)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .bounded_output()
        .expect("kubectl runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<&str> = stdout.lines().collect();
    let directive = lines
        .pop()
        .and_then(|l| l.strip_prefix(':'))
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no directive in kubectl's answer: {stdout}"));
    let values = lines
        .iter()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect();
    Some((values, directive))
}

/// The lines of the `Examples:` sections of `binary`'s help (the root and every
/// subcommand) longer than `width`: an 80-column terminal would wrap them mid-command.
pub fn long_example_lines(binary: &Path, width: usize) -> Vec<String> {
    let mut long = Vec::new();
    for (sub, text) in help_texts(binary) {
        let examples = text
            .lines()
            .skip_while(|l| !l.starts_with("Examples:"))
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with(' '));
        long.extend(
            examples
                .filter(|l| l.chars().count() > width)
                .map(|l| format!("{sub}: {l}")),
        );
    }
    long
}

/// `binary --help` and `binary SUB --help` for every subcommand its completion lists, as
/// (subcommand, text) (`""` for the root), rendered 400 columns wide so that only the
/// text's own line breaks show.
pub fn help_texts(binary: &Path) -> Vec<(String, String)> {
    let help = |args: &[&str]| {
        let out = Command::new(binary)
            .args(args)
            .env("COLUMNS", "400")
            .bounded_output()
            .expect("the plugin runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let subcommands: Vec<String> = help(&["__complete", ""])
        .lines()
        .filter(|l| !l.starts_with(':'))
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect();
    std::iter::once(String::new())
        .chain(subcommands)
        .map(|sub| {
            let args: Vec<&str> = [sub.as_str(), "--help"]
                .into_iter()
                .filter(|a| !a.is_empty())
                .collect();
            let text = help(&args);
            (sub, text)
        })
        .collect()
}
