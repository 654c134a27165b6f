//! Connection problems in the words kubectl users know, with the server named, the exit
//! code of the README's table, and never a credential: refused port, unknown host, a CA
//! that does not sign the server's certificate, a server that never answers; and the
//! mistakes that are the user's to fix (exit 2): an unknown --context/--cluster/--user,
//! insecure-skip-tls-verify together with a CA, a selector too long for a request.

use std::path::Path;
use std::process::Command;

use placekit_testserver::process::Bounded as _;
use placekit_testserver::{ServerConfig, TestServer, kubeconfig_yaml};

const TOKEN: &str = "placekit-secret-token-7f3a";

/// Runs with a scratch state directory and checks the token never shows.
fn run(kubeconfig: &Path, args: &[&str]) -> (i32, String) {
    let state = tempfile::tempdir().unwrap();
    let (code, all, _) = run_in_state(kubeconfig, state.path(), args);
    assert!(!all.contains(TOKEN), "the token leaked: {all}");
    (code, all)
}

fn write(dir: &Path, name: &str, yaml: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, yaml).unwrap();
    path
}

#[test]
fn unreachable_servers_are_described_like_kubectl_does() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = write(
        dir.path(),
        "refused",
        &kubeconfig_yaml(&format!("https://127.0.0.1:{port}"), TOKEN, None),
    );
    let (code, out) = run(&refused, &["dependents", "pool"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains(&format!(
            "cannot reach the cluster at https://127.0.0.1:{port} while"
        )) && out.contains("connect: connection refused"),
        "{out}"
    );

    let unknown = write(
        dir.path(),
        "unknown",
        &kubeconfig_yaml("https://placekit-nowhere.invalid:6443", TOKEN, None),
    );
    let (code, out) = run(&unknown, &["dependents", "pool"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("no such host"), "{out}");

    // A server that accepts and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let hold = std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().take(8).collect();
        std::thread::sleep(std::time::Duration::from_secs(5));
        drop(held);
    });
    let timeout = write(
        dir.path(),
        "silent",
        &kubeconfig_yaml(&format!("https://127.0.0.1:{silent_port}"), TOKEN, None),
    );
    let started = std::time::Instant::now();
    let (code, out) = run(&timeout, &["--request-timeout", "1s", "dependents", "pool"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("timeout awaiting the server's answer"),
        "{out}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "it gave up in time"
    );
    drop(hold);
}

/// `--request-timeout` limits the whole request, as kubectl's does (Go's
/// `http.Client.Timeout`): a server that answers at once and then trickles its body a byte
/// every 200 ms is given up on at the limit, not after the 10 s the body takes (a limit per
/// read never fires on it).
#[test]
fn request_timeout_limits_the_whole_request_not_each_read() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut buf = [0u8; 1024];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let body = format!("{{\"kind\":\"APIVersions\"{}}}", " ".repeat(48));
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                for byte in body.bytes() {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    if stream.write_all(&[byte]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let trickle = write(
        dir.path(),
        "trickle",
        &kubeconfig_yaml(&format!("http://127.0.0.1:{port}"), TOKEN, None),
    );
    let started = std::time::Instant::now();
    let (code, out) = run(&trickle, &["--request-timeout", "1s", "dependents", "pool"]);
    let took = started.elapsed();
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("timeout awaiting the server's answer"),
        "{out}"
    );
    assert!(
        took < std::time::Duration::from_secs(5),
        "it gave up at the limit, not when the body ended: {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_that_did_not_sign_the_server_is_named() {
    let tls = || ServerConfig {
        tls: true,
        ..ServerConfig::default()
    };
    let server = TestServer::start(tls()).await.unwrap();
    let other = TestServer::start(tls()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The other server's CA, this server's URL.
    let yaml = other
        .kubeconfig_yaml(TOKEN)
        .replace(&other.url(), &server.url());
    let path = write(dir.path(), "wrong-ca", &yaml);
    let result = tokio::task::spawn_blocking(move || run(&path, &["dependents", "pool"]))
        .await
        .unwrap();
    let (code, out) = result;
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("x509: certificate signed by unknown authority"),
        "{out}"
    );
}

#[test]
fn configuration_mistakes_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "config",
        &kubeconfig_yaml(
            "https://127.0.0.1:1",
            TOKEN,
            Some("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
        ),
    );
    for (flag, what) in [
        ("--context", "context"),
        ("--cluster", "cluster"),
        ("--user", "user"),
    ] {
        let (code, out) = run(&config, &[flag, "nope", "dependents", "pool"]);
        assert_eq!(code, 2, "{flag}: {out}");
        assert!(
            out.contains(&format!("{what} \"nope\" was not found in the kubeconfig")),
            "{out}"
        );
    }
    let insecure = std::fs::read_to_string(&config).unwrap().replace(
        "    server: https://127.0.0.1:1",
        "    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true",
    );
    let insecure = write(dir.path(), "insecure", &insecure);
    let (code, out) = run(&insecure, &["dependents", "pool"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("specifying a root certificates file with the insecure flag is not allowed"),
        "{out}"
    );
    let long = format!("pool={}", "x".repeat(130_000));
    let (code, out) = run(&config, &["set", "-l", &long, "k=v"]);
    assert_eq!(code, 2, "{}", &out[..out.len().min(300)]);
    assert!(
        out.contains("the selector is 130005 bytes"),
        "{}",
        &out[..out.len().min(300)]
    );
}

#[test]
fn a_failing_exec_plugin_shows_no_credential() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("credential-plugin");
    std::fs::write(
        &plugin,
        "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"STDOUT-TOKEN-5ec\"}}'\necho \"login expired; vault token $VAULT_TOKEN\" >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster: {{server: \"https://127.0.0.1:1\"}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      args: [\"--password=ARG-SECRET-9\"]\n      env: [{{name: VAULT_TOKEN, value: ENV-SECRET-7}}]\n      interactiveMode: Never\n",
        plugin.display()
    );
    let path = write(dir.path(), "exec", &config);
    let (code, out) = run(&path, &["dependents", "pool"]);
    assert_eq!(code, 3, "{out}");
    for secret in ["STDOUT-TOKEN-5ec", "ARG-SECRET-9", "ENV-SECRET-7"] {
        assert!(!out.contains(secret), "{secret} leaked: {out}");
    }
    assert!(
        out.contains(&format!(
            "getting credentials: exec: executable {} failed with exit code 1",
            plugin.display()
        )) && out.contains("login expired; vault token [redacted]"),
        "{out}"
    );
}

/// Runs with a state directory, returning exit code, stdout+stderr and every file the run
/// left in the state directory (snapshots, index entries).
fn run_in_state(kubeconfig: &Path, state: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("NO_COLOR", "1")
        .env("PLACEKIT_STATE_DIR", state)
        .bounded_output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files = String::new();
    for entry in std::fs::read_dir(state).into_iter().flatten().flatten() {
        files.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
    }
    (out.status.code().unwrap_or(-1), all, files)
}

fn assert_no_secret(secrets: &[&str], what: &str, text: &str) {
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{secret} leaked into {what}: {text}"
        );
    }
}

/// The credential-leak suite: secrets planted in every place a kubeconfig holds them (the
/// server URL's userinfo, the token, an inline client key, a client key file, an exec
/// plugin's output, arguments and environment), each driven through its failure path and
/// a successful change, and no output, report or snapshot file may contain any of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credential_reaches_output_reports_or_snapshots() {
    use base64::Engine as _;
    use std::os::unix::fs::PermissionsExt;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let server = TestServer::start(
        ServerConfig::default().with_fixture_yaml(include_str!("fixtures/cluster.yaml")),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let admin = placekit_testserver::ADMIN_TOKEN;
    let url_password = "URL-PASSWORD-4411";
    let key_body = "S3CR3TKEYBODYc2VjcmV0a2V5Ym9keQ";
    let secrets = [
        admin,
        url_password,
        key_body,
        "KEYDATA-SECRET-22",
        "EXEC-OUT-TOKEN-8",
        "EXEC-ARG-SECRET-3",
        "EXEC-ENV-SECRET-5",
    ];

    // 1. A successful change through a server URL with userinfo: the report (-o json),
    //    the snapshot, `history` and `show` carry the server without it.
    let with_userinfo = server
        .kubeconfig_yaml(admin)
        .replace("https://", &format!("https://alice:{url_password}@"));
    let config = write(dir.path(), "userinfo", &with_userinfo);
    let (code, out, files) = tokio::task::spawn_blocking({
        let (config, state) = (config.clone(), state.clone());
        move || {
            run_in_state(
                &config,
                &state,
                &["set", "gpu-a100-1", "team=ml", "-y", "-o", "json"],
            )
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}");
    assert!(files.contains("\"server\":\"https://127.0.0.1:"), "{files}");
    assert_no_secret(&secrets, "the report", &out);
    assert_no_secret(&secrets, "the snapshot", &files);
    for args in [
        &["history"][..],
        &["show", "--last"][..],
        &["history", "-o", "json"][..],
    ] {
        let (code, out, _) = tokio::task::spawn_blocking({
            let (config, state) = (config.clone(), state.clone());
            move || run_in_state(&config, &state, args)
        })
        .await
        .unwrap();
        assert_eq!(code, 0, "{args:?}: {out}");
        assert_no_secret(&secrets, "history/show", &out);
    }

    // 2. A client key that is not a key, inline and as a file, on a refused port.
    let key_file = dir.path().join("client.key");
    std::fs::write(
        &key_file,
        format!("-----BEGIN PRIVATE KEY-----\n{key_body}\n-----END PRIVATE KEY-----\n"),
    )
    .unwrap();
    let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let user_with = |credentials: &str| {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster: {{server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user:\n{credentials}"
        )
    };
    let inline_key = user_with(&format!(
        "    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(cert),
        b64("-----BEGIN PRIVATE KEY-----\nKEYDATA-SECRET-22\n-----END PRIVATE KEY-----\n")
    ));
    let key_from_file = user_with(&format!(
        "    client-certificate-data: {}\n    client-key: {}\n",
        b64(cert),
        key_file.display()
    ));
    // 3. An exec plugin that prints something that is not an ExecCredential, with the
    //    token in it, and one that prints a credential of an unknown kind.
    let plugin = dir.path().join("plugin");
    std::fs::write(
        &plugin,
        "#!/bin/sh\necho \"not json EXEC-OUT-TOKEN-8 $VAULT\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exec = user_with(&format!(
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      args: [\"--secret=EXEC-ARG-SECRET-3\"]\n      env: [{{name: VAULT, value: EXEC-ENV-SECRET-5}}]\n      interactiveMode: Never\n",
        plugin.display()
    ));
    for (name, yaml) in [
        ("inline-key", inline_key),
        ("key-file", key_from_file),
        ("exec", exec),
    ] {
        let config = write(dir.path(), name, &yaml);
        for args in [
            &["dependents", "pool"][..],
            &["set", "gpu-a100-1", "team=x", "-y"][..],
        ] {
            let (code, out, files) = tokio::task::spawn_blocking({
                let (config, state) = (config.clone(), state.clone());
                move || run_in_state(&config, &state, args)
            })
            .await
            .unwrap();
            assert!(code == 2 || code == 3, "{name} {args:?}: {out}");
            assert_no_secret(&secrets, name, &out);
            assert_no_secret(&secrets, "the state directory", &files);
        }
    }

    // 4. A token for a plain-http server is not sent at all, as kubectl does not send it.
    let plain = TestServer::start(ServerConfig {
        tls: false,
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let config = write(dir.path(), "plain", &plain.kubeconfig_yaml(admin));
    let (code, out, _) = tokio::task::spawn_blocking({
        let state = state.clone();
        move || run_in_state(&config, &state, &["dependents", "pool"])
    })
    .await
    .unwrap();
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains(
            "the server is plain http://, so the credentials of user \"placekit-test\" are not sent"
        ),
        "{out}"
    );
    // As kube-apiserver answers a request without credentials: system:anonymous, forbidden.
    assert!(
        out.contains("User \"system:anonymous\" cannot list")
            && out.contains("the server saw no credentials")
            && out.contains("no workload or pod could be listed, so nothing that depends on the nodes was checked"),
        "{out}"
    );
    assert_no_secret(&secrets, "plain http", &out);
}

/// kuberc's credential plugin policy, honoured as client-go honours it: DenyAll, or an
/// allowlist without the kubeconfig's exec plugin, refuses it before it runs (it would
/// leave a marker); the plugin allowed, or `KUBERC=off`, it runs.
#[test]
fn kubercs_credential_plugin_policy_is_honoured() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let plugin = dir.path().join("credential-plugin");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\ntouch {}\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"t\"}}}}'\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster: {{server: \"https://127.0.0.1:1\"}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
        plugin.display()
    );
    let kubeconfig = write(dir.path(), "exec", &config);
    let run_with = |kuberc: &str| {
        let _ = std::fs::remove_file(&marker);
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["dependents", "pool", "--request-timeout", "2s"])
            .env("NO_COLOR", "1")
            .env("KUBERC", kuberc)
            .bounded_output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            marker.exists(),
        )
    };
    let deny = write(
        dir.path(),
        "deny",
        "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: DenyAll\n",
    );
    let (code, err, ran) = run_with(deny.to_str().unwrap());
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("credentialPluginPolicy is DenyAll, so the exec credential plugin"),
        "{err}"
    );
    assert!(!ran, "the plugin must not run");
    let other = write(
        dir.path(),
        "other",
        "credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- command: /bin/true\n",
    );
    let (code, err, ran) = run_with(other.to_str().unwrap());
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("is not in credentialPluginAllowlist"), "{err}");
    assert!(!ran);
    let allowed = write(
        dir.path(),
        "allowed",
        &format!(
            "credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- command: {}\n",
            plugin.display()
        ),
    );
    // Allowed (or kuberc off): the plugin runs, and the unreachable server is what fails.
    for kuberc in [allowed.to_str().unwrap(), "off"] {
        let (_, err, ran) = run_with(kuberc);
        assert!(ran, "KUBERC={kuberc}: {err}");
        assert!(!err.contains("credentialPlugin"), "{err}");
    }
}
