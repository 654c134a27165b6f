//! Behind a corporate proxy, as kubectl works there: `proxy-url` in the kubeconfig and
//! `HTTPS_PROXY`/`NO_PROXY` in the environment, through an HTTP CONNECT proxy that requires
//! credentials — in front of the test API server, or of the real cluster with
//! `PLACEKIT_E2E_KUBECONFIG` — and the proxy's password never printed.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use placekit_testserver::harness::{Harness, Run};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");
const USER: &str = "proxyuser";
const PASSWORD: &str = "pr0xy-s3cret-pass";

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
}

fn assert_code(run: &Run, code: i32) {
    assert_eq!(run.code, code, "{}", run.all());
}

/// An HTTP CONNECT proxy on 127.0.0.1 that tunnels only requests carrying
/// `Proxy-Authorization: Basic base64(USER:PASSWORD)` (else 407), counting the tunnels.
async fn connect_proxy() -> (u16, Arc<AtomicUsize>) {
    use base64::Engine as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let tunnels = Arc::new(AtomicUsize::new(0));
    let counted = tunnels.clone();
    let expected = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            let expected = expected.clone();
            let counted = counted.clone();
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
async fn a_proxy_with_credentials_in_the_kubeconfig_or_the_environment() {
    let h = Harness::start_any("nodelabel", binary(), FIXTURE).await;
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

    // HTTPS_PROXY from the environment, when the kubeconfig names none; NO_PROXY wins.
    let before = tunnels.load(Ordering::SeqCst);
    let proxy_env = format!("http://{USER}:{PASSWORD}@127.0.0.1:{port}");
    let via_env = h
        .run_env(
            &["dependents", "pool", "-A"],
            &[("HTTPS_PROXY", &proxy_env)],
        )
        .await;
    assert_code(&via_env, 0);
    assert!(
        tunnels.load(Ordering::SeqCst) > before,
        "HTTPS_PROXY is used"
    );
    let before = tunnels.load(Ordering::SeqCst);
    let bypass = h
        .run_env(
            &["dependents", "pool", "-A"],
            &[
                ("HTTPS_PROXY", &proxy_env),
                ("NO_PROXY", "localhost,127.0.0.1"),
            ],
        )
        .await;
    assert_code(&bypass, 0);
    assert_eq!(
        tunnels.load(Ordering::SeqCst),
        before,
        "NO_PROXY is honoured"
    );
}
