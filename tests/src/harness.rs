//! End-to-end harness for the plugins: a test API server (or a real cluster), a kubeconfig,
//! a private snapshot directory and the plugin binary on `PATH`, run the way users run it —
//! `kubectl <plugin> ...` through kubectl's plugin lookup — or directly, with a printed
//! notice, where kubectl is not installed.
//!
//! With `PLACEKIT_E2E_KUBECONFIG` set, [`Harness::start`] returns `None` for tests that
//! need the test server's hooks (faults, counters, concurrent writers) — they print why and
//! skip — and [`Harness::start_any`] runs against that cluster instead, after creating the
//! fixture's objects there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::{ServerConfig, TestServer};

/// A finished plugin run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(output: Output) -> Self {
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

fn kubectl_on_path() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Harness {
    /// Starts a test API server with `fixture` and installs `binary` as the plugin `plugin`
    /// (e.g. "nodelabel" for `kubectl-nodelabel`). `None` against a real cluster.
    pub async fn start(plugin: &str, binary: &Path, fixture: &str) -> Option<Self> {
        if std::env::var_os("PLACEKIT_E2E_KUBECONFIG").is_some() {
            eprintln!(
                "NOTICE: this test needs the test API server's hooks; skipped against PLACEKIT_E2E_KUBECONFIG"
            );
            return None;
        }
        Some(
            Self::local(
                plugin,
                binary,
                ServerConfig::default().with_fixture_yaml(fixture),
            )
            .await,
        )
    }

    /// Like [`Harness::start`] with a full server configuration.
    pub async fn local(plugin: &str, binary: &Path, config: ServerConfig) -> Self {
        let server = TestServer::start(config).await.expect("test server starts");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = server
            .write_kubeconfig(&dir.path().join("kubeconfig"), "admin")
            .expect("kubeconfig");
        let client = server.client(crate::ADMIN_TOKEN);
        Self::finish(Some(server), dir, kubeconfig, client, plugin, binary)
    }

    /// Against `PLACEKIT_E2E_KUBECONFIG` when set (creating the fixture's objects there),
    /// else against a test API server.
    pub async fn start_any(plugin: &str, binary: &Path, fixture: &str) -> Self {
        let Some(path) = std::env::var_os("PLACEKIT_E2E_KUBECONFIG") else {
            return Self::local(
                plugin,
                binary,
                ServerConfig::default().with_fixture_yaml(fixture),
            )
            .await;
        };
        let kubeconfig = PathBuf::from(path);
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&kubeconfig)
                .expect("PLACEKIT_E2E_KUBECONFIG is readable"),
            &Default::default(),
        )
        .await
        .expect("usable kubeconfig");
        let client = kube::Client::try_from(config).expect("client");
        apply_fixture(&client, fixture).await;
        let dir = tempfile::tempdir().expect("tempdir");
        Self::finish(None, dir, kubeconfig, client, plugin, binary)
    }

    fn finish(
        server: Option<TestServer>,
        dir: tempfile::TempDir,
        kubeconfig: PathBuf,
        client: kube::Client,
        plugin: &str,
        binary: &Path,
    ) -> Self {
        let bin_dir = dir.path().join("bin");
        std::fs::create_dir_all(&bin_dir).expect("bin dir");
        let file_name = format!("kubectl-{}", plugin.replace('-', "_"));
        #[cfg(unix)]
        std::os::unix::fs::symlink(binary, bin_dir.join(&file_name)).expect("symlink plugin");
        #[cfg(not(unix))]
        std::fs::copy(binary, bin_dir.join(&file_name)).expect("copy plugin");
        let state_dir = dir.path().join("state");
        let kubectl = kubectl_on_path();
        if !kubectl {
            eprintln!(
                "NOTICE: kubectl is not on PATH; running {file_name} directly instead of `kubectl {plugin}`"
            );
        }
        Harness {
            server,
            dir,
            kubeconfig,
            state_dir,
            bin_dir,
            plugin: plugin.to_string(),
            kubectl,
            client,
        }
    }

    /// A client with admin rights on the cluster under test.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The test server (panics against a real cluster: use [`Harness::start`] for such tests).
    pub fn server(&self) -> &TestServer {
        self.server
            .as_ref()
            .expect("this test needs the test API server")
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
        let path = format!(
            "{}:{}",
            self.bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = if self.kubectl {
            let mut c = Command::new("kubectl");
            c.arg(&self.plugin);
            c
        } else {
            Command::new(
                self.bin_dir
                    .join(format!("kubectl-{}", self.plugin.replace('-', "_"))),
            )
        };
        cmd.args(args)
            .env("PATH", path)
            .env("KUBECONFIG", kubeconfig)
            .env("PLACEKIT_STATE_DIR", &self.state_dir)
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null());
        let output = tokio::task::spawn_blocking(move || cmd.output().expect("plugin runs"))
            .await
            .expect("join");
        Run::from(output)
    }

    /// A node as JSON, read through the API.
    pub async fn node(&self, name: &str) -> Value {
        let api: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(self.client.clone());
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

/// Creates (or replaces) every object of a fixture on a real cluster.
async fn apply_fixture(client: &kube::Client, fixture: &str) {
    use serde::Deserialize;
    // Validate the fixture the same way the test server does before touching the cluster.
    crate::fixtures::load_yaml(&mut crate::store::Store::new(), fixture).expect("fixture loads");
    for document in serde_yaml::Deserializer::from_str(fixture) {
        let value = Value::deserialize(document).expect("yaml");
        let items = if value["kind"] == "List" {
            value["items"].as_array().cloned().unwrap_or_default()
        } else {
            vec![value]
        };
        for mut obj in items {
            let api_version = obj["apiVersion"].as_str().unwrap_or_default().to_string();
            let kind = obj["kind"].as_str().unwrap_or_default().to_string();
            let resource = crate::resources::by_kind(&api_version, &kind).expect("served kind");
            let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
            let gvk = kube::api::GroupVersionKind::gvk(group, version, &kind);
            let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, resource.plural);
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let api: kube::Api<kube::api::DynamicObject> = if resource.namespaced {
                let ns = obj["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("default")
                    .to_string();
                kube::Api::namespaced_with(client.clone(), &ns, &ar)
            } else {
                kube::Api::all_with(client.clone(), &ar)
            };
            let _ = api.delete(&name, &Default::default()).await;
            obj["status"] = Value::Null;
            let object: kube::api::DynamicObject = serde_json::from_value(obj).expect("object");
            api.create(&Default::default(), &object)
                .await
                .expect("fixture object created");
        }
    }
}
