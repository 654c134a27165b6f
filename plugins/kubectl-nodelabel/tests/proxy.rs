//! Behind a corporate proxy, as kubectl works there: `proxy-url` in the kubeconfig and
//! `HTTPS_PROXY`/`NO_PROXY` in the environment as Go reads them, through an HTTP CONNECT
//! proxy that requires credentials — in front of the test API server, or of the real
//! cluster with `PLACEKIT_E2E_KUBECONFIG` — and the proxy's password never printed.
//!
//! Go (so kubectl) never sends a request for a loopback address through the environment's
//! proxy, so the environment cases address the server by a name only the proxy knows
//! (`kube-api.placekit.test`, which it maps to the server), and the proxy listens on
//! another loopback address (127.0.0.2): a request that should not reach the proxy cannot
//! reach the server by accident either.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use placekit_testserver::harness::{Harness, Run, assert_code};
use placekit_testserver::process::Bounded as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");
const USER: &str = "proxyuser";
const PASSWORD: &str = "pr0xy-s3cret-pass";

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
}

/// The name of the API server that only the proxy resolves.
const PROXIED_NAME: &str = "kube-api.placekit.test";

/// An HTTP CONNECT proxy on `address` that tunnels only requests carrying
/// `Proxy-Authorization: Basic base64(user:password)` (else 407), counting the tunnels; a
/// CONNECT to [`PROXIED_NAME`] goes to `server` (`host:port`).
async fn connect_proxy_at(
    address: &str,
    user: &'static str,
    password: &'static str,
    server: String,
) -> (u16, Arc<AtomicUsize>) {
    use base64::Engine as _;
    let listener = tokio::net::TcpListener::bind(format!("{address}:0"))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let tunnels = Arc::new(AtomicUsize::new(0));
    let counted = tunnels.clone();
    let expected = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            let expected = expected.clone();
            let counted = counted.clone();
            let server = server.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read_exact(&mut byte).await.is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let target = head
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("CONNECT "))
                    .and_then(|l| l.split_whitespace().next())
                    .unwrap_or_default()
                    .to_string();
                let authorized = head.lines().any(|l| {
                    l.split_once(':').is_some_and(|(name, value)| {
                        name.eq_ignore_ascii_case("proxy-authorization")
                            && value.trim().split_once(' ').is_some_and(|(scheme, cred)| {
                                scheme.eq_ignore_ascii_case("basic") && cred == expected
                            })
                    })
                });
                if target.is_empty() || !authorized {
                    let _ = client
                        .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"proxy\"\r\nContent-Length: 0\r\n\r\n")
                        .await;
                    return;
                }
                let target = match target.rsplit_once(':') {
                    Some((PROXIED_NAME, _)) => server,
                    _ => target,
                };
                let Ok(mut upstream) = tokio::net::TcpStream::connect(&target).await else {
                    let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let _ = client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await;
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    (port, tunnels)
}

/// A proxy on 127.0.0.1 for the kubeconfig's `proxy-url`.
async fn connect_proxy() -> (u16, Arc<AtomicUsize>) {
    connect_proxy_at("127.0.0.1", USER, PASSWORD, String::new()).await
}

/// The harness's kubeconfig with its server addressed as `https://PROXIED_NAME:PORT` (the
/// certificate still checked against the real address, with `tls-server-name`), and the
/// real `host:port`.
fn by_proxied_name(h: &Harness) -> (std::path::PathBuf, String) {
    let text = std::fs::read_to_string(&h.kubeconfig).unwrap();
    let mut config: serde_json::Value = serde_yaml::from_str(&text).unwrap();
    let server: http::Uri = config["clusters"][0]["cluster"]["server"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let host = server.host().unwrap().to_string();
    let port = server.port_u16().unwrap_or(443);
    config["clusters"][0]["cluster"]["server"] = format!("https://{PROXIED_NAME}:{port}").into();
    config["clusters"][0]["cluster"]["tls-server-name"] = host.clone().into();
    let path = h.dir.path().join("by-name.kubeconfig");
    std::fs::write(&path, serde_yaml::to_string(&config).unwrap()).unwrap();
    (path, format!("{host}:{port}"))
}

/// Runs with another kubeconfig and extra environment variables.
async fn run_env_with(h: &Harness, args: &[&str], kubeconfig: &Path, env: &[(&str, &str)]) -> Run {
    let mut cmd = h.command(args);
    cmd.env("KUBECONFIG", kubeconfig).envs(env.iter().copied());
    tokio::task::spawn_blocking(move || Run::from(cmd.bounded_output().expect("plugin runs")))
        .await
        .expect("join")
}

/// The harness's kubeconfig with `proxy-url` added to its cluster.
fn with_proxy_url(h: &Harness, proxy: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(&h.kubeconfig).unwrap();
    let mut config: serde_json::Value = serde_yaml::from_str(&text).unwrap();
    config["clusters"][0]["cluster"]["proxy-url"] = proxy.into();
    let path = h.dir.path().join("proxied.kubeconfig");
    std::fs::write(&path, serde_yaml::to_string(&config).unwrap()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_with_credentials_in_the_kubeconfig() {
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let (port, tunnels) = connect_proxy().await;

    let kubeconfig = with_proxy_url(&h, &format!("http://{USER}:{PASSWORD}@127.0.0.1:{port}"));
    let run = h.run_with(&["dependents", "pool", "-A"], &kubeconfig).await;
    assert_code(&run, 0);
    assert!(tunnels.load(Ordering::SeqCst) >= 1, "through the proxy");

    // Wrong password: the proxy's answer, in words, without the password.
    let wrong = with_proxy_url(
        &h,
        &format!("http://{USER}:wrong-{PASSWORD}@127.0.0.1:{port}"),
    );
    let refused = h.run_with(&["dependents", "pool", "-A"], &wrong).await;
    assert_ne!(refused.code, 0, "{}", refused.all());
    assert!(!refused.all().contains(PASSWORD), "{}", refused.all());
}

/// `HTTPS_PROXY` as Go reads it: without a scheme (`user:pw@host:port`, a two-letter
/// password), judged for the API server's host (not the proxy's), with `NO_PROXY`'s empty
/// entries skipped and its suffixes matched against the server; loopback servers never
/// proxied; the password in no message, however short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_proxy_and_no_proxy_as_go_reads_them() {
    const SHORT_USER: &str = "al";
    const SHORT_PASSWORD: &str = "pw";
    let h = Harness::start("nodelabel", binary(), FIXTURE).await;
    let (kubeconfig, server) = by_proxied_name(&h);
    let (port, tunnels) = connect_proxy_at("127.0.0.2", SHORT_USER, SHORT_PASSWORD, server).await;
    let schemeless = format!("{SHORT_USER}:{SHORT_PASSWORD}@127.0.0.2:{port}");
    let args = ["dependents", "pool", "-A", "--request-timeout", "10s"];

    let via = run_env_with(&h, &args, &kubeconfig, &[("HTTPS_PROXY", &schemeless)]).await;
    assert_code(&via, 0);
    let through = tunnels.load(Ordering::SeqCst);
    assert!(through >= 1, "through the proxy");

    // NO_PROXY names the server's domain (among empty entries and a name that would
    // match the proxy's own host, which kube's loader checked instead): direct, so the
    // name does not resolve and the proxy sees nothing.
    let bypass = run_env_with(
        &h,
        &args,
        &kubeconfig,
        &[
            ("HTTPS_PROXY", &schemeless),
            ("NO_PROXY", " ,,.placekit.test,,"),
        ],
    )
    .await;
    assert_ne!(bypass.code, 0, "{}", bypass.all());
    assert_eq!(
        tunnels.load(Ordering::SeqCst),
        through,
        "NO_PROXY is judged against the server: {}",
        bypass.all()
    );
    let excluding_the_proxy = run_env_with(
        &h,
        &args,
        &kubeconfig,
        &[
            ("HTTPS_PROXY", &schemeless),
            ("NO_PROXY", "127.0.0.2,localhost"),
        ],
    )
    .await;
    assert_code(&excluding_the_proxy, 0);
    let through_again = tunnels.load(Ordering::SeqCst);
    assert!(
        through_again > through,
        "a NO_PROXY naming the proxy does not exclude the server"
    );

    // The harness's own kubeconfig addresses the server at a loopback address: direct.
    let loopback = h.run_env(&args, &[("HTTPS_PROXY", &schemeless)]).await;
    assert_code(&loopback, 0);
    assert_eq!(
        tunnels.load(Ordering::SeqCst),
        through_again,
        "loopback is never proxied"
    );

    // A wrong short password and an unparsable proxy: refused in words, no credentials.
    let wrong = format!("{SHORT_USER}:px@127.0.0.2:{port}");
    let refused = run_env_with(&h, &args, &kubeconfig, &[("HTTPS_PROXY", &wrong)]).await;
    assert_ne!(refused.code, 0, "{}", refused.all());
    let bad = format!("{SHORT_USER}:{SHORT_PASSWORD}@proxy host:{port}");
    let unparsable = run_env_with(&h, &args, &kubeconfig, &[("HTTPS_PROXY", &bad)]).await;
    assert_ne!(unparsable.code, 0, "{}", unparsable.all());
    assert!(
        unparsable.all().contains("[redacted]@proxy host"),
        "{}",
        unparsable.all()
    );
    for run in [&via, &bypass, &refused, &unparsable] {
        for secret in [
            format!("{SHORT_USER}:{SHORT_PASSWORD}@"),
            format!("{SHORT_USER}:px@"),
        ] {
            assert!(!run.all().contains(&secret), "{}", run.all());
        }
    }
}
