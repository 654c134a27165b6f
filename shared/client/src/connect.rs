//! kubectl-compatible cluster access: the flags every plugin shares, turned into a
//! `kube::Client` through kube's own kubeconfig loading (exec plugins, client certificates,
//! bearer tokens and TLS all work as in kubectl).
//!
//! Credentials never leave kube's config types: [`Connection`] keeps only the context
//! name and server URL for display, and errors are rendered without the config's content.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::secrets::{Secrets, redact, secrets};
use kube::config::{KubeConfigOptions, Kubeconfig};
use placekit_core::cluster::{ClusterIdentity, normalize_server};

/// Errors while building a client.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(
        "invalid --request-timeout {0:?}: use a number with a unit (1s, 2m, 3h) or 0 for no timeout"
    )]
    BadTimeout(String),
    #[error("cannot load kubeconfig: {0}")]
    Kubeconfig(String),
    /// `--kubeconfig` names a file that is not there (kubectl: exit 1 with "stat ...: no
    /// such file or directory"); the flag is the user's to fix.
    #[error("--kubeconfig {0}: no such file")]
    MissingKubeconfig(PathBuf),
    /// No kubeconfig file, no service account of a pod, no `--server`.
    #[error(
        "no configuration: no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config), not running in a pod with a service account, and no --server"
    )]
    NoConfiguration,
    /// Access flags that contradict each other.
    #[error("{0}")]
    Flags(String),
    /// `--context`, `--cluster` or `--user` names nothing in the kubeconfig.
    #[error("{what} {name:?} was not found in the kubeconfig")]
    NotFound { what: &'static str, name: String },
    /// kubectl refuses it too: skipping verification makes the CA meaningless.
    #[error(
        "cluster {0:?}: specifying a root certificates file with the insecure flag is not allowed"
    )]
    InsecureWithCa(String),
    #[error("cannot create a client for {server}: {message}")]
    Client { server: String, message: String },
    /// kuberc's credential plugin policy refuses the kubeconfig's exec plugin.
    #[error(transparent)]
    PluginPolicy(#[from] crate::kuberc::PolicyError),
}

/// The cluster-access flags of kubectl, shared by all placekit plugins.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(
    feature = "clap",
    command(next_help_heading = "Cluster access (as in kubectl)")
)]
pub struct ConnectionArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, a colon-separated list, or ~/.kube/config).
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "PATH"))]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "NAME"))]
    pub context: Option<String>,
    /// The kubeconfig cluster to use.
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "NAME"))]
    pub cluster: Option<String>,
    /// The kubeconfig user to use.
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "NAME"))]
    pub user: Option<String>,
    /// The namespace scope for this request.
    #[cfg_attr(
        feature = "clap",
        arg(short = 'n', long, global = true, value_name = "NAMESPACE")
    )]
    pub namespace: Option<String>,
    /// Username to impersonate for the operation (a user or a service account,
    /// `system:serviceaccount:NS:NAME`).
    #[cfg_attr(feature = "clap", arg(long = "as", global = true, value_name = "USER"))]
    pub as_user: Option<String>,
    /// Group to impersonate for the operation; repeat it for several groups.
    #[cfg_attr(
        feature = "clap",
        arg(long = "as-group", global = true, value_name = "GROUP")
    )]
    pub as_group: Vec<String>,
    /// UID to impersonate for the operation.
    #[cfg_attr(
        feature = "clap",
        arg(long = "as-uid", global = true, value_name = "UID")
    )]
    pub as_uid: Option<String>,
    /// Bearer token for authentication to the API server (replaces the user's credentials).
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "TOKEN"))]
    pub token: Option<String>,
    /// The address and port of the Kubernetes API server.
    #[cfg_attr(
        feature = "clap",
        arg(short = 's', long, global = true, value_name = "URL")
    )]
    pub server: Option<String>,
    /// Path to a cert file for the certificate authority.
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "PATH"))]
    pub certificate_authority: Option<PathBuf>,
    /// Path to a client certificate file for TLS.
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "PATH"))]
    pub client_certificate: Option<PathBuf>,
    /// Path to a client key file for TLS.
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "PATH"))]
    pub client_key: Option<PathBuf>,
    /// Do not check the server's certificate (insecure: anyone in between can read and
    /// change the requests).
    #[cfg_attr(feature = "clap", arg(long, global = true))]
    pub insecure_skip_tls_verify: bool,
    /// Server name to use for server certificate validation (default: the server's host).
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "NAME"))]
    pub tls_server_name: Option<String>,
    /// The longest a single server request may take, up to its answer's last byte (0: no
    /// limit), e.g. 30s, 1m. A watch's stream is not cut by it.
    #[cfg_attr(
        feature = "clap",
        arg(long, global = true, value_name = "DURATION", default_value = "0")
    )]
    pub request_timeout: String,
}

/// The API server of this process's connection, for messages about requests to it.
static SERVER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

tokio::task_local! {
    /// The API server the current task talks to, when a command reads several clusters at
    /// once (the fleet commands): its messages name that server, not the first one connected.
    static TASK_SERVER: String;
}

/// Runs `work` with [`current_server`] answering `server` inside it.
pub async fn with_server<T>(server: String, work: impl Future<Output = T>) -> T {
    TASK_SERVER.scope(server, work).await
}

/// An error text with every configured secret taken out ([`redact`]), and an exec plugin's
/// failure in kubectl's words: kube quotes the plugin's command line (arguments,
/// environment values) and its whole output (the token on stdout); kubectl says `getting
/// credentials: exec: executable X failed with exit code N` and shows only the plugin's
/// stderr. That stderr is shown too, redacted.
pub fn redact_exec(message: &str) -> String {
    let blank = redact;
    let command = secrets()
        .exec_command
        .clone()
        .unwrap_or_else(|| "the credential plugin".to_string());
    // The plugin's output did not parse: kube quotes it, token and all.
    if let Some(at) = message.find("failed to parse auth exec output") {
        return format!(
            "{}getting credentials: exec: the output of {command} is not a valid ExecCredential (not shown: it may hold credentials)",
            blank(&message[..at])
        );
    }
    let Some(at) = message.find("auth exec command") else {
        return blank(message);
    };
    let prefix = &message[..at];
    let code = message
        .split("exit status: ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .filter(|c| !c.is_empty());
    let Some(code) = code else {
        return format!(
            "{prefix}getting credentials: exec: the output of {command} is not a valid ExecCredential (not shown: it may hold credentials)"
        );
    };
    let stderr = message
        .rfind("stderr: \"")
        .map(|i| &message[i + 9..])
        .and_then(|rest| rest.rfind('"').map(|end| &rest[..end]))
        .map(|escaped| {
            escaped
                .replace("\\n", "\n")
                .replace("\\\"", "\"")
                .replace("\\\\", "\\")
        })
        .map(|text| blank(text.trim()))
        .unwrap_or_default();
    let mut out = format!(
        "{prefix}getting credentials: exec: executable {command} failed with exit code {code}"
    );
    if !stderr.is_empty() {
        out.push_str(&format!(
            ": {}",
            stderr.chars().take(2000).collect::<String>()
        ));
    }
    out
}

/// The server URL (without userinfo) this task's requests go to: the one this process
/// connected to, or inside [`with_server`] that one.
pub fn current_server() -> Option<String> {
    TASK_SERVER
        .try_with(Clone::clone)
        .ok()
        .or_else(|| SERVER.get().cloned())
}

/// What the person should know about a connection before its first request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectNotice {
    /// The server is plain `http://`: the user's credentials are not sent, as kubectl does.
    #[error(
        "the server is plain http://, so the credentials of user {user:?} are not sent (as kubectl does); requests go unauthenticated"
    )]
    CredentialsNotSent { user: String },
}

/// A ready client and what to show of it.
#[derive(Clone)]
pub struct Connection {
    pub client: kube::Client,
    /// The context name (or `in-cluster`), recorded in snapshots.
    pub context: String,
    /// The API server URL without userinfo, recorded in snapshots.
    pub server: String,
    /// What identifies the cluster without asking it: the server and the CA's fingerprint.
    /// [`crate::api::cluster_identity`] adds the `kube-system` uid.
    pub cluster: ClusterIdentity,
    /// The namespace from `-n` or the context.
    pub namespace: String,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("context", &self.context)
            .field("server", &self.server)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// The headers the client's own layers add to every request after the observer has seen
/// it, for `-v=7`: the credentials' scheme (never their value) and impersonation.
fn added_headers(auth: &kube::config::AuthInfo) -> Vec<(String, String)> {
    let mut added = Vec::new();
    // In kube's order: basic credentials win over a token; an exec plugin or an auth
    // provider gives a bearer token (or a client certificate, which no header shows).
    if auth.username.is_some() && auth.password.is_some() {
        added.push(("authorization".to_string(), "Basic <masked>".to_string()));
    } else if auth.token.is_some()
        || auth.token_file.is_some()
        || auth.exec.is_some()
        || auth.auth_provider.is_some()
    {
        added.push(("authorization".to_string(), "Bearer <masked>".to_string()));
    }
    if let Some(user) = &auth.impersonate {
        added.push(("impersonate-user".to_string(), user.clone()));
    }
    for group in auth.impersonate_groups.iter().flatten() {
        added.push(("impersonate-group".to_string(), group.clone()));
    }
    if let Some(uid) = &auth.impersonate_uid {
        added.push(("impersonate-uid".to_string(), uid.clone()));
    }
    added
}

/// The layer that sets a request's `Authorization` header, taken out of the configuration
/// so it can be stacked above [`crate::secrets::LearnCredentials`] (kube would put it
/// inside its own stack, out of reach). Only a bearer or basic credential moves; a client
/// certificate (from the kubeconfig or an exec plugin) stays in the configuration, where
/// the TLS connector reads it, and kube adds no header for it.
fn own_auth_layer(
    mut config: kube::Config,
) -> Result<(kube::Config, Option<kube::client::middleware::AuthLayer>), kube::Error> {
    use kube::client::ConfigExt as _;
    let auth = config.auth_layer()?;
    if auth.is_some() {
        let info = &mut config.auth_info;
        info.auth_provider = None;
        info.username = None;
        info.password = None;
        info.token = None;
        info.token_file = None;
        info.exec = None;
    }
    Ok((config, auth))
}

/// Parses kubectl's `--request-timeout`: a bare integer is seconds; otherwise a Go
/// duration made of `<number><unit>` parts (`h`, `m`, `s`, `ms`, `us`, `ns`). `0` means no
/// timeout. Not `kube::core::Duration`'s parser: it panics on a value past `Duration::MAX`
/// (`mul_f64`, `+=`), and a flag typed by a person must be refused, not crash.
pub fn parse_request_timeout(s: &str) -> Result<Option<Duration>, ConnectError> {
    let bad = || ConnectError::BadTimeout(s.to_string());
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Ok((secs > 0).then(|| Duration::from_secs(secs)));
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit_secs = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            // U+00B5 is the micro sign, U+03BC the Greek mu: Go takes both.
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = total
            .checked_add(Duration::try_from_secs_f64(number * unit_secs).map_err(|_| bad())?)
            .ok_or_else(bad)?;
    }
    Ok((!total.is_zero()).then_some(total))
}

impl ConnectionArgs {
    fn options(&self) -> KubeConfigOptions {
        KubeConfigOptions {
            context: self.context.clone(),
            cluster: self.cluster.clone(),
            user: self.user.clone(),
        }
    }

    /// Reads the kubeconfig the way kubectl (client-go) does: `--kubeconfig`, else the files
    /// `$KUBECONFIG` names, merged in order (a named file that does not exist is skipped),
    /// else `~/.kube/config`; and when none of those exists, the pod's service account
    /// ([`in_cluster`]), so a CronJob or a CI runner pod needs no kubeconfig. With nothing
    /// at all, an empty configuration: `--server` (and `--token`) can still make one.
    pub fn load_kubeconfig(&self) -> Result<Kubeconfig, ConnectError> {
        let read = |path: &Path| {
            Kubeconfig::read_from(path).map_err(|e| ConnectError::Kubeconfig(e.to_string()))
        };
        if let Some(path) = &self.kubeconfig {
            if !path.exists() {
                return Err(ConnectError::MissingKubeconfig(path.clone()));
            }
            return read(path);
        }
        if let Some(value) = std::env::var_os("KUBECONFIG") {
            let paths: Vec<PathBuf> = std::env::split_paths(&value)
                .filter(|p| !p.as_os_str().is_empty())
                .collect();
            let existing: Vec<&PathBuf> = paths.iter().filter(|p| p.exists()).collect();
            if !existing.is_empty() {
                let mut merged = Kubeconfig::default();
                for path in existing {
                    merged = merged
                        .merge(read(path)?)
                        .map_err(|e| ConnectError::Kubeconfig(e.to_string()))?;
                }
                return Ok(merged);
            }
            if !paths.is_empty() {
                return Ok(self.without_kubeconfig());
            }
        }
        match home_kubeconfig() {
            Some(path) if path.exists() => read(&path),
            _ => Ok(self.without_kubeconfig()),
        }
    }

    /// No kubeconfig file: the pod's service account when running in one and no flag
    /// names a server, else nothing (flags alone, or [`ConnectError::NoConfiguration`]).
    fn without_kubeconfig(&self) -> Kubeconfig {
        if self.server.is_none()
            && let Some(config) = in_cluster(&service_account_dir())
        {
            return config;
        }
        Kubeconfig::default()
    }

    /// The flag combinations kubectl refuses.
    fn check_flags(&self) -> Result<(), ConnectError> {
        if self.insecure_skip_tls_verify && self.certificate_authority.is_some() {
            return Err(ConnectError::Flags(
                "--insecure-skip-tls-verify and --certificate-authority: specifying a root certificates file with the insecure flag is not allowed".into(),
            ));
        }
        if self.as_user.is_none() && (!self.as_group.is_empty() || self.as_uid.is_some()) {
            return Err(ConnectError::Flags(
                "--as-group and --as-uid need --as: requesting uid or groups without impersonating a user is not allowed".into(),
            ));
        }
        Ok(())
    }

    /// The access flags kubectl lays over the selected context (client-go's overrides):
    /// `--server`, `--certificate-authority`, `--insecure-skip-tls-verify`,
    /// `--tls-server-name` on its cluster; `--token`, `--client-certificate`,
    /// `--client-key` and the impersonation flags on its user. Without a kubeconfig,
    /// `--server` makes a context of its own.
    fn apply_flags(&self, kubeconfig: &mut Kubeconfig, context: &str) {
        use kube::config::{AuthInfo, Cluster, Context, NamedAuthInfo, NamedCluster, NamedContext};
        if self.server.is_some() && !kubeconfig.contexts.iter().any(|c| c.name == context) {
            kubeconfig.clusters.push(NamedCluster {
                name: FLAGS_NAME.into(),
                other: Default::default(),
                cluster: Some(Cluster::default()),
            });
            kubeconfig.auth_infos.push(NamedAuthInfo {
                name: FLAGS_NAME.into(),
                other: Default::default(),
                auth_info: Some(AuthInfo::default()),
            });
            kubeconfig.contexts.push(NamedContext {
                name: context.to_string(),
                other: Default::default(),
                context: Some(Context {
                    cluster: FLAGS_NAME.into(),
                    user: Some(FLAGS_NAME.into()),
                    ..Context::default()
                }),
            });
            if kubeconfig.current_context.is_none() {
                kubeconfig.current_context = Some(context.to_string());
            }
        }
        let (cluster, user) = self.selected(kubeconfig, context);
        let touches_cluster = self.server.is_some()
            || self.certificate_authority.is_some()
            || self.insecure_skip_tls_verify
            || self.tls_server_name.is_some();
        if touches_cluster
            && let Some(cluster) = cluster
                .and_then(|n| kubeconfig.clusters.iter_mut().find(|c| c.name == n))
                .and_then(|c| c.cluster.as_mut())
        {
            if let Some(server) = &self.server {
                cluster.server = Some(server.clone());
            }
            if let Some(ca) = &self.certificate_authority {
                cluster.certificate_authority = Some(ca.display().to_string());
                cluster.certificate_authority_data = None;
            }
            if self.insecure_skip_tls_verify {
                // As client-go: the flag drops the kubeconfig's CA rather than refuse both.
                cluster.insecure_skip_tls_verify = Some(true);
                cluster.certificate_authority = None;
                cluster.certificate_authority_data = None;
            }
            if let Some(name) = &self.tls_server_name {
                cluster.tls_server_name = Some(name.clone());
            }
        }
        let touches_user = self.token.is_some()
            || self.client_certificate.is_some()
            || self.client_key.is_some()
            || self.as_user.is_some()
            || !self.as_group.is_empty()
            || self.as_uid.is_some();
        if !touches_user {
            return;
        }
        let user = user.unwrap_or_else(|| FLAGS_NAME.to_string());
        if !kubeconfig.auth_infos.iter().any(|a| a.name == user) {
            kubeconfig.auth_infos.push(NamedAuthInfo {
                name: user.clone(),
                other: Default::default(),
                auth_info: Some(AuthInfo::default()),
            });
            if let Some(c) = kubeconfig
                .contexts
                .iter_mut()
                .find(|c| c.name == context)
                .and_then(|c| c.context.as_mut())
                && c.user.is_none()
            {
                c.user = Some(user.clone());
            }
        }
        let Some(auth) = kubeconfig
            .auth_infos
            .iter_mut()
            .find(|a| a.name == user)
            .map(|a| a.auth_info.get_or_insert_with(AuthInfo::default))
        else {
            return;
        };
        if let Some(token) = &self.token {
            // The token is the credential: no exec plugin, auth provider, token file or
            // password of the kubeconfig's user competes with it.
            auth.token = Some(token.clone().into());
            auth.token_file = None;
            auth.exec = None;
            auth.auth_provider = None;
            auth.username = None;
            auth.password = None;
        }
        if let Some(cert) = &self.client_certificate {
            auth.client_certificate = Some(cert.display().to_string());
            auth.client_certificate_data = None;
        }
        if let Some(key) = &self.client_key {
            auth.client_key = Some(key.display().to_string());
            auth.client_key_data = None;
        }
        if let Some(as_user) = &self.as_user {
            auth.impersonate = Some(as_user.clone());
        }
        if !self.as_group.is_empty() {
            auth.impersonate_groups = Some(self.as_group.clone());
        }
        if let Some(uid) = &self.as_uid {
            auth.impersonate_uid = Some(uid.clone());
        }
    }

    /// The context name that will be used (for snapshot names and `--last`).
    pub fn context_name(&self, kubeconfig: &Kubeconfig) -> String {
        self.context
            .clone()
            .or_else(|| kubeconfig.current_context.clone())
            .unwrap_or_else(|| "default".to_string())
    }

    /// The cluster and user names the context (and `--cluster`/`--user`) select.
    fn selected(&self, kubeconfig: &Kubeconfig, context: &str) -> (Option<String>, Option<String>) {
        let found = kubeconfig
            .contexts
            .iter()
            .find(|c| c.name == context)
            .and_then(|c| c.context.as_ref());
        (
            self.cluster
                .clone()
                .or_else(|| found.map(|c| c.cluster.clone())),
            self.user
                .clone()
                .or_else(|| found.and_then(|c| c.user.clone())),
        )
    }

    /// Notes every secret of the selected user and cluster, so no message shows them.
    fn remember_secrets(&self, kubeconfig: &Kubeconfig, context: &str) {
        use base64::Engine as _;
        use secrecy::ExposeSecret;
        let (cluster, user) = self.selected(kubeconfig, context);
        let mut secrets = Secrets::default();
        let auth = user
            .and_then(|u| kubeconfig.auth_infos.iter().find(|a| a.name == u))
            .and_then(|a| a.auth_info.as_ref());
        // PEM bodies line by line, in case some error quotes part of a key.
        let pem_lines = |text: &str| -> Vec<String> {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("-----"))
                .map(str::to_string)
                .collect()
        };
        if let Some(auth) = auth {
            if let Some(exec) = &auth.exec {
                secrets.exec_command = exec.command.clone();
                secrets
                    .values
                    .extend(secret_args(exec.args.as_deref().unwrap_or_default()));
                for pair in exec.env.iter().flatten() {
                    let name = pair.get("name").map(String::as_str).unwrap_or_default();
                    if let Some(value) = pair.get("value")
                        && (secret_name(name) || looks_like_a_token(value))
                    {
                        secrets.values.push(value.clone());
                    }
                }
            }
            for secret in [&auth.token, &auth.password, &auth.client_key_data]
                .into_iter()
                .flatten()
            {
                secrets.values.push(secret.expose_secret().to_string());
            }
            if let Some(data) = &auth.client_key_data
                && let Ok(pem) =
                    base64::engine::general_purpose::STANDARD.decode(data.expose_secret().trim())
            {
                secrets
                    .values
                    .extend(pem_lines(&String::from_utf8_lossy(&pem)));
            }
            if let Some(provider) = &auth.auth_provider {
                secrets.values.extend(
                    provider
                        .config
                        .iter()
                        .filter(|(k, v)| secret_name(k) || looks_like_a_token(v))
                        .map(|(_, v)| v.clone()),
                );
            }
            let file =
                |path: &Option<String>| path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
            if let Some(text) = file(&auth.client_key) {
                secrets.values.extend(pem_lines(&text));
            }
            if let Some(token) = file(&auth.token_file) {
                secrets.values.push(token.trim().to_string());
            }
        }
        let selected_cluster = cluster
            .and_then(|c| kubeconfig.clusters.iter().find(|n| n.name == c))
            .and_then(|c| c.cluster.as_ref());
        // Proxy credentials, from the kubeconfig's proxy-url or the environment.
        let proxies = selected_cluster
            .and_then(|c| c.proxy_url.clone())
            .into_iter()
            .chain(
                ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"]
                    .iter()
                    .filter_map(|v| std::env::var(v).ok()),
            );
        for proxy in proxies {
            // With or without a scheme (`alice:pw@proxy:3128` is a proxy to Go and kubectl).
            secrets
                .userinfos
                .extend(crate::proxy::userinfo_in_urls(&proxy));
            secrets.values.extend(crate::proxy::credentials(&proxy));
        }
        let server = selected_cluster.and_then(|c| c.server.clone());
        if let Some(userinfo) = server.as_deref().and_then(url_userinfo) {
            secrets.values.push(userinfo.to_string());
            secrets.userinfos.push(format!("{userinfo}@"));
            if let Some((_, password)) = userinfo.split_once(':') {
                secrets.values.push(password.to_string());
            }
        }
        // Also as Rust's `{:?}` quotes them (kube's messages do): `"` and `\` escaped.
        let escaped: Vec<String> = secrets
            .values
            .iter()
            .map(|v| format!("{v:?}").trim_matches('"').to_string())
            .filter(|e| !secrets.values.contains(e))
            .collect();
        secrets.values.extend(escaped);
        crate::secrets::remember(secrets);
    }

    /// Leaves the selected user's credentials out when the server is plain `http://`, as
    /// kubectl does (client-go reads a user's identity only for TLS transports): a bearer
    /// token or password must not cross the network in clear text. Returns the user whose
    /// credentials were left out.
    fn drop_credentials_over_plain_http(
        &self,
        kubeconfig: &mut Kubeconfig,
        context: &str,
    ) -> Option<String> {
        let (cluster, user) = self.selected(kubeconfig, context);
        let plain_http = cluster
            .and_then(|c| kubeconfig.clusters.iter().find(|n| n.name == c))
            .and_then(|c| c.cluster.as_ref())
            .and_then(|c| c.server.as_deref())
            .is_some_and(|s| s.to_ascii_lowercase().starts_with("http://"));
        if !plain_http {
            return None;
        }
        let user = user?;
        let entry = kubeconfig.auth_infos.iter_mut().find(|a| a.name == user)?;
        let auth = entry.auth_info.as_mut()?;
        let has_credentials = auth.token.is_some()
            || auth.token_file.is_some()
            || auth.password.is_some()
            || auth.client_key.is_some()
            || auth.client_key_data.is_some()
            || auth.exec.is_some()
            || auth.auth_provider.is_some();
        *auth = kube::config::AuthInfo::default();
        has_credentials.then_some(user)
    }

    /// What kubectl checks before any request: the named context, cluster and user exist,
    /// and a cluster does not both skip TLS verification and name a CA.
    fn check_names_and_tls(
        &self,
        kubeconfig: &Kubeconfig,
        context: &str,
    ) -> Result<(), ConnectError> {
        let found = kubeconfig.contexts.iter().find(|c| c.name == context);
        if (self.context.is_some() || kubeconfig.current_context.is_some())
            && found.is_none()
            && !(self.cluster.is_some() && self.user.is_some())
        {
            return Err(ConnectError::NotFound {
                what: "context",
                name: context.to_string(),
            });
        }
        let cluster_name = self.cluster.clone().or_else(|| {
            found
                .and_then(|c| c.context.as_ref())
                .map(|c| c.cluster.clone())
        });
        if let Some(name) = &self.cluster
            && !kubeconfig.clusters.iter().any(|c| &c.name == name)
        {
            return Err(ConnectError::NotFound {
                what: "cluster",
                name: name.clone(),
            });
        }
        if let Some(name) = &self.user
            && !kubeconfig.auth_infos.iter().any(|u| &u.name == name)
        {
            return Err(ConnectError::NotFound {
                what: "user",
                name: name.clone(),
            });
        }
        if let Some(cluster) = cluster_name
            .as_ref()
            .and_then(|n| kubeconfig.clusters.iter().find(|c| &c.name == n))
            .and_then(|c| c.cluster.as_ref())
            && cluster.insecure_skip_tls_verify == Some(true)
            && (cluster.certificate_authority.is_some()
                || cluster.certificate_authority_data.is_some())
        {
            return Err(ConnectError::InsecureWithCa(
                cluster_name.unwrap_or_default(),
            ));
        }
        Ok(())
    }

    /// [`ConnectionArgs::open`] within `deadline`, off the async workers: kube runs an
    /// exec credential plugin while building the client, and one waiting for a login must
    /// cost the caller the deadline, not hold it (or the process) up. `None` when the
    /// deadline passed first.
    pub async fn connect_within(
        &self,
        deadline: Duration,
    ) -> Option<Result<(Connection, Vec<ConnectNotice>), ConnectError>> {
        let args = self.clone();
        let handle = tokio::runtime::Handle::current();
        let building = tokio::task::spawn_blocking(move || handle.block_on(args.open()));
        match tokio::time::timeout(deadline, building).await {
            Ok(Ok(result)) => Some(result),
            Ok(Err(join)) => Some(Err(ConnectError::Kubeconfig(format!(
                "building the client failed: {join}"
            )))),
            Err(_) => None,
        }
    }

    /// Builds the client, with what the person should be told about it (the plugins print
    /// the notices on stderr before anything else). Nothing here touches the network: the
    /// first request does.
    pub async fn open(&self) -> Result<(Connection, Vec<ConnectNotice>), ConnectError> {
        let mut notices = Vec::new();
        let timeout = parse_request_timeout(&self.request_timeout)?;
        let mut kubeconfig = self.load_kubeconfig()?;
        let context = self.context_name(&kubeconfig);
        if kubeconfig.contexts.is_empty() && self.server.is_none() {
            return Err(ConnectError::NoConfiguration);
        }
        self.apply_flags(&mut kubeconfig, &context);
        self.check_flags()?;
        self.check_names_and_tls(&kubeconfig, &context)?;
        self.remember_secrets(&kubeconfig, &context);
        if let Some(user) = self.drop_credentials_over_plain_http(&mut kubeconfig, &context) {
            notices.push(ConnectNotice::CredentialsNotSent { user });
        }
        let mut config = kube_config(kubeconfig, &self.options())?;
        // kuberc's credential plugin policy, as client-go enforces it: checked before any
        // request could run the plugin.
        if let Some(exec) = &config.auth_info.exec
            && let Some(policy) = crate::kuberc::PluginPolicy::load()?
        {
            policy.check(exec.command.as_deref().unwrap_or_default())?;
        }
        // kubectl's limit is on the whole request (Go's `http.Client.Timeout`): the
        // `Deadline` layer below holds each request to it, up to its answer's last byte. A
        // connection that cannot even be opened (TLS included) in that time fails as early;
        // kube's own connect, read and write limits stay otherwise (a server that accepts
        // and never answers TLS still fails after 30 s without --request-timeout).
        if let Some(t) = timeout {
            config.connect_timeout = Some(config.connect_timeout.map_or(t, |c| c.min(t)));
        }
        if let Some(ns) = &self.namespace {
            config.default_namespace = ns.clone();
        }
        // placekit's executor owns retries (it honours Retry-After, counts attempts and
        // journals them); kube's own retry layer would hide 429/503/504 from it.
        config.default_retry = false;
        let server = normalize_server(&config.cluster_url.to_string());
        let _ = SERVER.set(server.clone());
        let cluster = ClusterIdentity {
            server: server.clone(),
            ca_fingerprint: config
                .root_cert
                .as_ref()
                .and_then(|certs| certs.first())
                .map(|der| ca_fingerprint(der)),
            kube_system_uid: None,
        };
        let namespace = config.default_namespace.clone();
        let client_error = |e: kube::Error| ConnectError::Client {
            server: server.clone(),
            message: redact_exec(&e.to_string()),
        };
        let observer = crate::observe::installed();
        let added_headers = added_headers(&config.auth_info);
        let (config, auth) = own_auth_layer(config).map_err(client_error)?;
        let client = kube::client::ClientBuilder::try_from(config)
            .map_err(client_error)?
            // Every credential sent is noted for redaction: the layer sits under the
            // `Authorization` header's, so it sees what an exec plugin or auth provider gave.
            .with_layer(&tower::layer::layer_fn(
                crate::secrets::LearnCredentials::new,
            ))
            .with_layer(&tower::util::option_layer(auth))
            .with_layer(&tower::layer::layer_fn(|inner| crate::deadline::Deadline {
                inner,
                limit: timeout,
            }))
            // No answer is kept past its cap: a page, an object, a watch event.
            .with_layer(&tower::layer::layer_fn(|inner| crate::bounded::Bounded {
                inner,
                server: server.clone(),
            }))
            // Each request reports its exchange (a timed-out one too) and the server's
            // warnings to the plugin.
            .with_layer(&tower::layer::layer_fn(|inner| crate::observe::Observed {
                inner,
                server: server.clone(),
                observer: observer.clone(),
                added_headers: added_headers.clone(),
            }))
            .build();
        Ok((
            Connection {
                client,
                context,
                server,
                cluster,
                namespace,
            },
            notices,
        ))
    }
}

/// The cluster, user and context a configuration made from flags alone uses.
const FLAGS_NAME: &str = "placekit-flags";

/// Where a pod's service account is mounted. Debug builds (the test suites') read
/// `PLACEKIT_TEST_SERVICEACCOUNT_DIR` to move it; a release build never does, so nothing in
/// a pod's environment can point placekit at other credentials.
fn service_account_dir() -> PathBuf {
    const MOUNTED: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    #[cfg(debug_assertions)]
    if let Some(dir) = std::env::var_os("PLACEKIT_TEST_SERVICEACCOUNT_DIR") {
        return PathBuf::from(dir);
    }
    PathBuf::from(MOUNTED)
}

/// `~/.kube/config` (`%USERPROFILE%` on Windows, as client-go looks).
fn home_kubeconfig() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var_os("USERPROFILE").filter(|h| !h.is_empty()))?;
    Some(PathBuf::from(home).join(".kube").join("config"))
}

/// client-go's in-cluster configuration: `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`,
/// the service account's CA and token (read from its file at each use, so a rotated token
/// is picked up) and its namespace, as a context named `in-cluster`. `None` outside a pod:
/// either variable unset or no token file.
pub fn in_cluster(dir: &Path) -> Option<Kubeconfig> {
    use kube::config::{AuthInfo, Cluster, Context, NamedAuthInfo, NamedCluster, NamedContext};
    let host = std::env::var("KUBERNETES_SERVICE_HOST")
        .ok()
        .filter(|h| !h.is_empty())?;
    let port = std::env::var("KUBERNETES_SERVICE_PORT")
        .ok()
        .filter(|p| !p.is_empty())?;
    let token = dir.join("token");
    if !token.is_file() {
        return None;
    }
    // An IPv6 address gets its brackets, as net.JoinHostPort gives them.
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let ca = dir.join("ca.crt");
    let namespace = std::fs::read_to_string(dir.join("namespace"))
        .ok()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    let name = "in-cluster".to_string();
    Some(Kubeconfig {
        clusters: vec![NamedCluster {
            name: name.clone(),
            other: Default::default(),
            cluster: Some(Cluster {
                server: Some(format!("https://{host}:{port}")),
                certificate_authority: ca.is_file().then(|| ca.display().to_string()),
                ..Cluster::default()
            }),
        }],
        auth_infos: vec![NamedAuthInfo {
            name: name.clone(),
            other: Default::default(),
            auth_info: Some(AuthInfo {
                token_file: Some(token.display().to_string()),
                ..AuthInfo::default()
            }),
        }],
        contexts: vec![NamedContext {
            name: name.clone(),
            other: Default::default(),
            context: Some(Context {
                cluster: name.clone(),
                user: Some(name.clone()),
                namespace,
                ..Context::default()
            }),
        }],
        current_context: Some(name),
        ..Kubeconfig::default()
    })
}

/// The client configuration of the selected context, as kube's loader builds it (server,
/// namespace, CA bundle, TLS settings, the user and its exec plugin's cluster info) but for
/// the proxy, which is chosen as kubectl chooses it ([`crate::proxy`]): kube's loader reads
/// `HTTPS_PROXY` for every server, judges `NO_PROXY` against the proxy's own host, refuses
/// a proxy without a scheme and a `NO_PROXY` with an empty entry, all of which kubectl
/// accepts or does otherwise.
fn kube_config(
    kubeconfig: Kubeconfig,
    options: &KubeConfigOptions,
) -> Result<kube::Config, ConnectError> {
    use kube::config::KubeconfigError;
    let fail = |e: KubeconfigError| ConnectError::Kubeconfig(redact_exec(&e.to_string()));
    let context_name = options
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or(KubeconfigError::CurrentContextNotSet)
        .map_err(fail)?;
    let context = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.clone())
        .ok_or_else(|| fail(KubeconfigError::LoadContext(context_name.clone())))?;
    let cluster_name = options.cluster.clone().unwrap_or(context.cluster.clone());
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| fail(KubeconfigError::LoadClusterOfContext(cluster_name.clone())))?;
    // client-go does not fail on an empty or missing user, nor does kube.
    let mut auth_info = options
        .user
        .as_ref()
        .or(context.user.as_ref())
        .and_then(|user| kubeconfig.auth_infos.iter().find(|u| &u.name == user))
        .and_then(|u| u.auth_info.clone())
        .unwrap_or_default();
    if let Some(exec) = &mut auth_info.exec
        && exec.provide_cluster_info
    {
        exec.cluster = Some((&cluster).try_into().map_err(fail)?);
    }
    let server = cluster
        .server
        .clone()
        .ok_or(KubeconfigError::MissingClusterUrl)
        .map_err(fail)?;
    let cluster_url: http::Uri = server
        .parse()
        .map_err(|e| fail(KubeconfigError::ParseClusterUrl(e)))?;
    let mut config = kube::Config::new(cluster_url.clone());
    config.default_namespace = context
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    config.root_cert = certificate_authority(&cluster)?;
    config.accept_invalid_certs = cluster.insecure_skip_tls_verify.unwrap_or(false);
    config.disable_compression = cluster.disable_compression.unwrap_or(false);
    config.tls_server_name = cluster.tls_server_name.clone();
    config.auth_info = auth_info;
    // A `proxy-url` in the kubeconfig is used for every request, as client-go does;
    // otherwise the environment's, for this server.
    let proxy = match cluster.proxy_url.as_deref().filter(|p| !p.is_empty()) {
        Some(proxy) => crate::proxy::parse_proxy(proxy).map(Some),
        None => crate::proxy::from_env().proxy_for(&cluster_url),
    };
    config.proxy_url = proxy.map_err(|e| ConnectError::Kubeconfig(redact(&e.to_string())))?;
    Ok(config)
}

/// The cluster's CA certificates (`certificate-authority-data`, else the file named by
/// `certificate-authority`), DER-encoded.
fn certificate_authority(
    cluster: &kube::config::Cluster,
) -> Result<Option<Vec<Vec<u8>>>, ConnectError> {
    use base64::Engine as _;
    let pem = match (&cluster.certificate_authority_data, &cluster.certificate_authority) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| {
                ConnectError::Kubeconfig(format!(
                    "failed to load the certificate authority: certificate-authority-data is not base64: {e}"
                ))
            })?,
        (None, Some(file)) => std::fs::read(file).map_err(|e| {
            ConnectError::Kubeconfig(format!(
                "failed to load the certificate authority: reading {file}: {e}"
            ))
        })?,
        (None, None) => return Ok(None),
    };
    let certs: Vec<Vec<u8>> = pem::parse_many(&pem)
        .map_err(|e| {
            ConnectError::Kubeconfig(format!("failed to parse the certificate authority: {e}"))
        })?
        .into_iter()
        .filter(|p| p.tag() == "CERTIFICATE")
        .map(pem::Pem::into_contents)
        .collect();
    Ok(Some(certs))
}

/// Whether a flag or variable name says its value is a credential (`--token`,
/// `VAULT_TOKEN`, `client-secret`, `id-token`, `password`, `api-key`).
fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["token", "secret", "password", "passwd", "credential", "key"]
        .iter()
        .any(|w| name.contains(w))
}

/// A value long and random enough to be a token even under an innocent name; short
/// ordinary words (`eks`, `get-token`, `us-east-1`) stay readable in messages.
fn looks_like_a_token(value: &str) -> bool {
    value.len() >= 16 && !value.contains(char::is_whitespace)
}

/// The exec plugin arguments to blank: values of credential flags (`--token=X`,
/// `--password X`), and anything that looks like a token.
fn secret_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut next_is_secret = false;
    for arg in args {
        if std::mem::take(&mut next_is_secret) {
            out.push(arg.clone());
            continue;
        }
        match arg.strip_prefix('-').map(|a| a.trim_start_matches('-')) {
            Some(flag) => match flag.split_once('=') {
                Some((name, value)) if secret_name(name) || looks_like_a_token(value) => {
                    out.push(value.to_string());
                }
                Some(_) => {}
                None => next_is_secret = secret_name(flag),
            },
            None if looks_like_a_token(arg) => out.push(arg.clone()),
            None => {}
        }
    }
    out
}

/// The `user:password` part of a URL, if any.
fn url_userinfo(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    authority.rsplit_once('@').map(|(userinfo, _)| userinfo)
}

/// `sha256:<hex>` of a DER certificate.
fn ca_fingerprint(der: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(der);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "clap")]
    use clap::Parser;

    #[cfg(feature = "clap")]
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        connection: ConnectionArgs,
    }

    #[test]
    fn timeouts_like_kubectl() {
        assert_eq!(parse_request_timeout("0").unwrap(), None);
        // Too large to add up is a bad flag, not a panic.
        assert!(parse_request_timeout("10000000000000000000s10000000000000000000s").is_err());
        assert_eq!(
            parse_request_timeout("5").unwrap(),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            parse_request_timeout("1m30s").unwrap(),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            parse_request_timeout("250ms").unwrap(),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse_request_timeout("1s500000us").unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_request_timeout("2000000000ns").unwrap(),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_request_timeout("1.5h").unwrap(),
            Some(Duration::from_secs(5400))
        );
        for bad in ["", "abc", "5x", "-1s", "1m-"] {
            assert!(parse_request_timeout(bad).is_err(), "{bad}");
        }
    }

    #[cfg(feature = "clap")]
    #[test]
    fn flags_parse_like_kubectl() {
        let cli = Cli::parse_from([
            "x",
            "--kubeconfig",
            "/tmp/k",
            "--context",
            "ctx",
            "--cluster",
            "c",
            "--user",
            "u",
            "-n",
            "ml",
            "--request-timeout",
            "10s",
        ]);
        assert_eq!(cli.connection.context.as_deref(), Some("ctx"));
        assert_eq!(cli.connection.namespace.as_deref(), Some("ml"));
        assert_eq!(cli.connection.request_timeout, "10s");
    }

    const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
current-context: test
clusters:
- name: test
  cluster:
    server: http://127.0.0.1:1
contexts:
- name: test
  context:
    cluster: test
    user: admin
    namespace: ml
users:
- name: admin
  user:
    token: super-secret-token
"#;

    #[tokio::test]
    async fn builds_a_client_without_leaking_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, KUBECONFIG).unwrap();
        let args = ConnectionArgs {
            kubeconfig: Some(path),
            request_timeout: "5s".into(),
            ..Default::default()
        };
        let (conn, _) = args.open().await.unwrap();
        assert_eq!(conn.context, "test");
        assert_eq!(conn.namespace, "ml");
        assert_eq!(conn.server, "http://127.0.0.1:1");
        let shown = format!("{conn:?} {args:?}");
        assert!(!shown.contains("super-secret-token"), "{shown}");
    }

    #[test]
    fn only_credential_looking_exec_arguments_are_blanked() {
        let args: Vec<String> = [
            "eks",
            "get-token",
            "--region",
            "us-east-1",
            "--token",
            "abc",
            "--password=hunter2",
            "--cluster-name=prod",
            "AKIAEXAMPLEEXAMPLE1234",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            secret_args(&args),
            ["abc", "hunter2", "AKIAEXAMPLEEXAMPLE1234"]
        );
        assert!(secret_name("VAULT_TOKEN") && secret_name("client-secret"));
        assert!(!secret_name("AWS_PROFILE") && !looks_like_a_token("prod"));
    }

    #[tokio::test]
    async fn missing_kubeconfig_is_a_clear_error() {
        let args = ConnectionArgs {
            kubeconfig: Some("/nonexistent/placekit/config".into()),
            request_timeout: "0".into(),
            ..Default::default()
        };
        let err = args.open().await.unwrap_err();
        assert!(matches!(err, ConnectError::MissingKubeconfig(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "--kubeconfig /nonexistent/placekit/config: no such file"
        );
    }
}
