//! placekit's test API server: an in-process Kubernetes API faithful enough that the real
//! `kubectl` and the placekit plugins work against it, for tests, demos and benchmarks.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use placekit_testserver::{ServerConfig, TestServer};
//! let server = TestServer::start(ServerConfig::default().with_fixture_yaml(
//!     "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n",
//! )).await?;
//! let kubeconfig = server.write_kubeconfig(std::path::Path::new("/tmp/kubeconfig"), "admin")?;
//! # let _ = kubeconfig; Ok(()) }
//! ```
//!
//! See `tests/README.md` for the fixture format, the test hooks and what differs from a
//! real API server.
//!
//! # Parts
//!
//! - The API server: [`server`] (the HTTP front: routing, discovery, authentication, the
//!   hooks), [`state`] (what it holds), [`store`] (storage, resource versions, watches'
//!   change log), [`admission`] (decode, default, validate), [`apply`] and [`patch`] (the
//!   write algorithms), [`watch`], [`table`], [`openapi`], [`protobuf`], [`apimachinery`]
//!   (selectors, field paths and validation ported from apimachinery), [`status`] (its error
//!   bodies), [`resources`] (what it serves).
//! - The proxy in front of a real API server: [`proxy`] (faults, counters, concurrent
//!   writers on real semantics) over [`upstream`] (the connection to the real server).
//! - The real-cluster driver: [`real_cluster`] (empties a disposable cluster, loads a
//!   fixture as a kubelet would have it, starts the proxy).
//! - The end-to-end harness: [`harness`] (a cluster, a kubeconfig, a snapshot directory and
//!   the plugin on `PATH`, on the test server or a real cluster) and [`fixtures`]
//!   (generated clusters). The benchmarks are `src/bin/placekit-bench.rs`; release packaging
//!   is `cargo xtask package`.
//! - What tests need from outside: [`require`] (one mechanism: a suite that cannot run says
//!   so by name, and fails when `PLACEKIT_REQUIRE` says it must run) and [`process`] (every
//!   subprocess under a time limit).
//! - Writing tests: [`builders`] (nodes, pods and ResourceSlices in a few lines) and
//!   [`printed`] (a printed table read by column name).
//! - The published reports: [`schemas`] checks every report a plugin run prints against its
//!   JSON Schema in `docs/schemas/`.

/// What the server answers with: a whole body, or a watch's stream of events (the HTTP
/// front, the proxy and the watches share it).
pub type Body = http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, std::convert::Infallible>;

pub mod admission;
pub mod apimachinery;
pub mod apply;
pub mod builders;
pub mod control;
pub mod crds;
pub mod fixtures;
pub mod harness;
pub mod openapi;
pub mod patch;
pub mod printed;
pub mod process;
pub mod protobuf;
pub mod proxy;
pub mod real_cluster;
pub mod require;
pub mod resources;
pub mod schemas;
pub mod server;
pub mod state;
pub mod status;
pub mod store;
pub mod table;
pub mod tls;
pub mod upstream;
pub mod watch;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

pub use control::{ConcurrentWrite, Fault, FaultAction, Rule, User};
pub use fixtures::{FixtureError, Generator};
use state::State;
use store::Store;

/// The README's demo cluster (`placekit-testserver --demo`), on which its tours run.
pub const DEMO_FIXTURE: &str = include_str!("../fixtures/demo.yaml");

/// The token of the built-in admin user.
pub const ADMIN_TOKEN: &str = "placekit-admin-token";
/// The token of the built-in read-only user (get/list/watch on everything).
pub const READONLY_TOKEN: &str = "placekit-readonly-token";

/// How to start a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// YAML fixtures to load, in order.
    pub fixtures: Vec<String>,
    /// A generated cluster to load after the fixtures.
    pub generator: Option<Generator>,
    /// token -> user; by default `admin` ([`ADMIN_TOKEN`]) and `viewer` ([`READONLY_TOKEN`]).
    pub users: HashMap<String, User>,
    /// Port on 127.0.0.1 (0: a random free port).
    pub port: u16,
    /// Serve HTTPS with a generated CA (needed for kubectl to send bearer tokens).
    pub tls: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let mut users = HashMap::new();
        users.insert(ADMIN_TOKEN.to_string(), User::admin("admin"));
        users.insert(READONLY_TOKEN.to_string(), User::read_only("viewer"));
        ServerConfig {
            fixtures: Vec::new(),
            generator: None,
            users,
            port: 0,
            tls: true,
        }
    }
}

impl ServerConfig {
    pub fn with_fixture_yaml(mut self, yaml: &str) -> Self {
        self.fixtures.push(yaml.to_string());
        self
    }

    pub fn with_generator(mut self, generator: Generator) -> Self {
        self.generator = Some(generator);
        self
    }

    /// Adds a user with its own token.
    pub fn with_user(mut self, token: &str, user: User) -> Self {
        self.users.insert(token.to_string(), user);
        self
    }
}

/// A running server. Dropping it stops it.
#[derive(Debug)]
pub struct TestServer {
    address: SocketAddr,
    state: Arc<State>,
    tls: Option<tls::Tls>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    /// `"admin"`/`"viewer"` -> the token [`TestServer::write_kubeconfig`] writes.
    token_aliases: HashMap<String, String>,
}

impl TestServer {
    /// Loads the cluster and starts serving on 127.0.0.1.
    pub async fn start(config: ServerConfig) -> std::io::Result<Self> {
        let mut store = Store::new();
        for yaml in &config.fixtures {
            fixtures::load_yaml(&mut store, yaml)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
        }
        if let Some(g) = &config.generator {
            g.populate(&mut store);
        }
        let state = State::new(store, config.users);
        let mut aliases = HashMap::new();
        aliases.insert("admin".to_string(), ADMIN_TOKEN.to_string());
        aliases.insert("viewer".to_string(), READONLY_TOKEN.to_string());
        Self::serve(state, config.port, config.tls, aliases).await
    }

    /// Starts the fault engine as a reverse proxy in front of a real API server: requests
    /// are counted, faults and concurrent writers applied, and everything else forwarded
    /// with the client's own credentials. `tokens` maps `"admin"`/`"viewer"` to the real
    /// server's tokens for [`TestServer::write_kubeconfig`].
    pub async fn start_proxy(
        upstream: upstream::Upstream,
        tokens: HashMap<String, String>,
    ) -> std::io::Result<Self> {
        let mut state = State::new(Store::new(), HashMap::new());
        state.upstream = Some(upstream);
        Self::serve(state, 0, true, tokens).await
    }

    async fn serve(
        state: State,
        port: u16,
        with_tls: bool,
        token_aliases: HashMap<String, String>,
    ) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let address = listener.local_addr()?;
        let state = Arc::new(state);
        *state.address.lock().expect("address") = address.to_string();
        let tls = if with_tls {
            Some(tls::generate().map_err(std::io::Error::other)?)
        } else {
            None
        };
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(server::serve(
            state.clone(),
            listener,
            tls.as_ref().map(|t| t.server_config.clone()),
            async move {
                let _ = rx.await;
            },
        ));
        Ok(TestServer {
            address,
            state,
            tls,
            shutdown: Some(tx),
            token_aliases,
        })
    }

    /// `https://127.0.0.1:<port>` (or `http://` without TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The PEM of the CA that signed the server's certificate (TLS servers only).
    pub fn ca_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(|t| t.ca_pem.as_str())
    }

    /// A kubeconfig for the user with `token` (context and cluster `placekit-test`).
    pub fn kubeconfig_yaml(&self, token: &str) -> String {
        kubeconfig_yaml(
            &self.url(),
            token,
            self.tls.as_ref().map(|t| t.ca_pem.as_str()),
        )
    }

    /// Writes a kubeconfig for `token`; `"admin"` and `"viewer"` are shorthands for the
    /// built-in users (for a proxy: the real server's admin and viewer).
    pub fn write_kubeconfig(&self, path: &Path, token: &str) -> std::io::Result<PathBuf> {
        let token = self
            .token_aliases
            .get(token)
            .map(String::as_str)
            .unwrap_or(token);
        std::fs::write(path, self.kubeconfig_yaml(token))?;
        Ok(path.to_path_buf())
    }

    /// A `kube::Client` for `token`, without kube's built-in retries.
    pub fn client(&self, token: &str) -> kube::Client {
        self.client_as(Some(token))
    }

    /// A client with `token`, or without credentials (an anonymous request).
    pub fn client_as(&self, token: Option<&str>) -> kube::Client {
        let mut config = kube::Config::new(self.url().parse().expect("valid url"));
        config.auth_info.token = token.map(|t| t.to_string().into());
        // Faults must reach the caller as injected, not be retried away by kube's layer.
        config.default_retry = false;
        if let Some(tls) = &self.tls {
            config.root_cert = Some(vec![tls.ca_der.clone()]);
        }
        kube::Client::try_from(config).expect("client for the test server")
    }

    /// Injects a fault.
    pub fn inject(&self, fault: Fault) {
        self.state.faults.lock().expect("faults").push(fault);
    }

    /// Removes every injected fault.
    pub fn clear_faults(&self) {
        self.state.faults.lock().expect("faults").clear();
    }

    /// Makes someone else write between a client's read and its write.
    pub fn concurrent_write(&self, write: ConcurrentWrite) {
        self.state
            .concurrent_writes
            .lock()
            .expect("writers")
            .push(write);
    }

    /// Requests per verb and resource since start (or the last reset).
    pub fn counters(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.state.counters.lock().expect("counters").clone()
    }

    /// Number of requests with `verb` on `resource`.
    pub fn count(&self, verb: &str, resource: &str) -> u64 {
        self.counters()
            .get(verb)
            .and_then(|m| m.get(resource))
            .copied()
            .unwrap_or(0)
    }

    pub fn reset_counters(&self) {
        self.state.counters.lock().expect("counters").clear();
    }

    /// The stored object, as JSON (`namespace` None for cluster-scoped resources).
    pub fn object(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let resource = resources::RESOURCES.iter().find(|r| r.plural == plural)?;
        self.state
            .store
            .lock()
            .expect("store")
            .get_value(resource, namespace, name)
            .ok()
    }

    /// Answers lists in JSON even to a client that asks for protobuf first (`true`), as a
    /// server or proxy that does not speak protobuf does; `false` restores protobuf lists.
    pub fn answer_lists_in_json(&self, json: bool) {
        self.state
            .json_lists
            .store(json, std::sync::atomic::Ordering::Relaxed);
    }

    /// Creates an object directly (no hooks, no counters), and its namespace if missing.
    pub fn create(&self, object: Value) -> Result<Value, status::ApiError> {
        let api_version = object["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        let resource = resources::by_kind(&api_version, &kind).ok_or_else(|| {
            status::ApiError::bad_request(format!("unknown kind {api_version} {kind}"))
        })?;
        let ns = object["metadata"]["namespace"].as_str().map(str::to_string);
        let mut store = self.state.store.lock().expect("store");
        if resource.namespaced
            && let Some(ns) = &ns
        {
            store.ensure_namespace(ns);
        }
        store.create(resource, ns.as_deref(), object, false)
    }

    /// Applies a merge patch directly (someone else's write, outside any hook).
    pub fn merge_patch(
        &self,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<Value, status::ApiError> {
        let resource = resources::RESOURCES
            .iter()
            .find(|r| r.plural == plural)
            .ok_or_else(status::ApiError::path_not_found)?;
        self.state.store.lock().expect("store").patch(
            resource,
            namespace,
            name,
            store::PatchType::Merge,
            patch,
            false,
        )
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// A kubeconfig for a server URL and bearer token, trusting `ca_pem` when given.
pub fn kubeconfig_yaml(url: &str, token: &str, ca_pem: Option<&str>) -> String {
    use base64::Engine as _;
    let ca = ca_pem
        .map(|pem| {
            format!(
                "\n    certificate-authority-data: {}",
                base64::engine::general_purpose::STANDARD.encode(pem)
            )
        })
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: placekit-test\nclusters:\n- name: placekit-test\n  cluster:\n    server: {url}{ca}\ncontexts:\n- name: placekit-test\n  context:\n    cluster: placekit-test\n    user: placekit-test\nusers:\n- name: placekit-test\n  user:\n    token: {token}\n"
    )
}

/// One plain HTTP/1.1 GET on loopback (`127.0.0.1:port`): the status code and the body, or
/// `None` when nothing answered. For tests and benchmarks of `serve-metrics`.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let code = answer.split_whitespace().nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n")?.1.to_string();
    Some((code, body))
}
