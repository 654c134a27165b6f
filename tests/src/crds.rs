//! `kubectl` against a real control plane, for the suites that install the operators' real
//! CRDs (`../shared/crds`) and create their objects as the projects' users do.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::Bounded as _;

/// The real `kubectl`, on one kubeconfig.
#[derive(Debug, Clone)]
pub struct Kubectl {
    kubeconfig: PathBuf,
}

impl Kubectl {
    /// The real control plane (`PLACEKIT_E2E_KUBECONFIG`), the CRD directory and `kubectl`,
    /// or `None` when `suite` does not run here (a failure in CI, which requires all three).
    pub fn for_suite(suite: &str) -> Option<(Kubectl, PathBuf)> {
        let kubeconfig =
            crate::real_cluster::real_cluster_for(suite, crate::real_cluster::E2E_KUBECONFIG)?;
        let crds = crate::require::shared_crds(suite)?;
        crate::require::kubectl(suite).then(|| (Kubectl::new(&kubeconfig), crds))
    }

    pub fn new(kubeconfig: &Path) -> Self {
        Kubectl {
            kubeconfig: kubeconfig.to_path_buf(),
        }
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Runs it: (success, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .bounded_output()
            .expect("kubectl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs it and fails the test unless it succeeds; its stdout.
    pub fn must(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "kubectl {args:?}: {err}");
        out
    }

    /// What a pod of `account` (a ServiceAccount in `namespace`) runs with, written under
    /// `dir`: a token from TokenRequest, the cluster's CA and the namespace in the standard
    /// files, and the environment that points a process at them and at the API server
    /// (`KUBERNETES_SERVICE_HOST`/`PORT`, `PLACEKIT_TEST_SERVICEACCOUNT_DIR`). Returns the
    /// environment and the token.
    pub fn in_cluster(
        &self,
        namespace: &str,
        account: &str,
        dir: &Path,
    ) -> (Vec<(&'static str, String)>, String) {
        use base64::Engine as _;
        let token = self.must(&["create", "token", account, "-n", namespace]);
        let view = |path: &str| {
            self.must(&[
                "config",
                "view",
                "--raw",
                "-o",
                &format!("jsonpath={{.clusters[0].cluster.{path}}}"),
            ])
        };
        let server = view("server");
        let ca = view("certificate-authority-data");
        let files = dir.join("serviceaccount");
        std::fs::create_dir_all(&files).expect("service account directory");
        std::fs::write(files.join("token"), token.trim()).expect("token");
        std::fs::write(
            files.join("ca.crt"),
            base64::engine::general_purpose::STANDARD
                .decode(ca.trim())
                .expect("the CA is base64"),
        )
        .expect("ca.crt");
        std::fs::write(files.join("namespace"), namespace).expect("namespace");
        let url: http::Uri = server.trim().parse().expect("the server is a URL");
        let env = vec![
            (
                "KUBERNETES_SERVICE_HOST",
                url.host().expect("a host").to_string(),
            ),
            (
                "KUBERNETES_SERVICE_PORT",
                url.port_u16().expect("a port").to_string(),
            ),
            (
                "PLACEKIT_TEST_SERVICEACCOUNT_DIR",
                files.display().to_string(),
            ),
        ];
        (env, token.trim().to_string())
    }

    /// Installs `files` of the CRD directory server-side (the largest would pass the
    /// 256 KiB last-applied annotation of a client-side apply) and waits until they are
    /// Established.
    pub fn install_crds(&self, crds: &Path, files: &[&str]) {
        let paths: Vec<String> = files
            .iter()
            .map(|f| crds.join(f).display().to_string())
            .collect();
        self.install_crd_paths(&paths);
    }

    /// Installs the CRDs in `paths` (files or directories) as [`Kubectl::install_crds`]
    /// does.
    pub fn install_crd_paths(&self, paths: &[String]) {
        let mut apply = vec!["apply", "--server-side", "--force-conflicts"];
        let mut wait = vec![
            "wait",
            "--for",
            "condition=Established",
            "--timeout",
            "120s",
        ];
        for p in paths {
            apply.extend(["-f", p.as_str()]);
            wait.extend(["-f", p.as_str()]);
        }
        self.must(&apply);
        // `kubectl wait` fails at once, instead of waiting, on a CRD whose status the
        // apiextensions controller has not written yet (`.status.conditions accessor
        // error: <nil>`): retried until the deadline.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let (ok, _, err) = self.run(&wait);
            if ok {
                return;
            }
            assert!(
                err.contains("accessor error") && Instant::now() < deadline,
                "kubectl {wait:?}: {err}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Creates `file` with strict server-side validation (a field the schemas do not know
    /// fails, so the objects are what the projects' users can create), retried for a minute:
    /// a CRD just Established may not serve its kind, or publish the schema strict
    /// validation reads, for a moment. `reset` deletes what a create that stopped halfway
    /// made, before each attempt.
    pub fn create_when_served(&self, file: &str, reset: impl Fn()) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            reset();
            let (ok, _, err) = self.run(&["create", "--validate=strict", "-f", file]);
            if ok {
                return;
            }
            // A schema's refusal is final: only an unserved kind is worth waiting for.
            assert!(!err.contains(" is invalid"), "{file}: {err}");
            assert!(
                Instant::now() < deadline,
                "{file} was not created in 60 s: {err}"
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Deletes what `file` names at once: no kubelet confirms a pod's graceful deletion on
    /// the test control plane.
    pub fn delete_now(&self, file: &str, wait: bool) {
        self.run(&[
            "delete",
            "-f",
            file,
            "--ignore-not-found",
            "--grace-period=0",
            "--force",
            if wait { "--wait=true" } else { "--wait=false" },
            "--timeout=60s",
        ]);
    }
}
