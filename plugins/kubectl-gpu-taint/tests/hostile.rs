//! A hostile or broken API server cannot hold or exhaust the tool: one that answers every
//! list page with a new `continue` token, one that repeats its token, one that drips its
//! answer a byte at a time (each byte resets a request's read timeout). Alone, the page
//! cap and the repeated-token check stop the command; across contexts, everything done for
//! a context is under its one deadline (--context-timeout) and the others are reported.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use placekit_testserver::harness::{Harness, assert_code, merge_kubeconfigs};
use serde_json::Value;

const EAST: &str = include_str!("../../../tests/fixtures/fleet-east.yaml");

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
}

#[derive(Clone, Copy)]
enum Hostile {
    /// Every list page has items and a new continue token.
    PagesForever,
    /// Every list page has the same continue token.
    SameToken,
    /// A list answer's body arrives a byte every 200 ms, forever.
    Drips,
    /// A list answer's body never ends (a megabyte at a time, as fast as it is read).
    HugePage,
    /// A list page of 300,000 empty items to a `limit=500` request (1 MiB of JSON that would
    /// take gigabytes as pods).
    TinyItems,
    /// The answer to a single object (a node read by name) never ends.
    EndlessObject,
    /// A protobuf list answer whose first 2 MiB are small fields before any list, in
    /// frames of 64 bytes (a continue-token scan that restarts each frame is quadratic).
    ProtobufPrefix,
    /// Lists are empty; a watch's first event never ends.
    EndlessEvent,
    /// Every request is refused (401) with a message that echoes the kubeconfig's token (what
    /// a server that saw it would echo; plain HTTP sends none), after a TAB (a byte below
    /// 0x0a that once made -v=8 take the body for protobuf and dump it unredacted).
    EchoToken,
}

/// A plain-HTTP server answering the probe (`kube-system`) as a cluster does, 404 to
/// anything else but lists, and lists the hostile way.
fn hostile_server(mode: Hostile) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream, mode));
        }
    });
    format!("http://{address}")
}

/// The pages the hostile servers have answered, for continue tokens that never repeat.
static NEXT_PAGE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn serve(stream: std::net::TcpStream, mode: Hostile) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut stream = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut authorization = String::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header == "\r\n" {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("authorization")
            {
                authorization = value.trim().to_string();
            }
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("/")
            .to_string();
        let answer = |stream: &mut std::net::TcpStream, code: &str, body: &str| {
            let _ = write!(
                stream,
                "HTTP/1.1 {code}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        };
        if matches!(mode, Hostile::EchoToken) {
            answer(
                &mut stream,
                "401 Unauthorized",
                &format!(
                    r#"{{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401,"message":"request with credentials [Bearer s3cr3t-echoed-token-4711]\t is not allowed{authorization}"}}"#
                ),
            );
        } else if matches!(mode, Hostile::EndlessObject) && path.starts_with("/api/v1/nodes/") {
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            );
            let start = r#"{"metadata":{"name":"gpu-"#;
            let _ = write!(stream, "{:x}\r\n{start}\r\n", start.len());
            let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, "x".repeat(1 << 20));
            while stream.write_all(chunk.as_bytes()).is_ok() {}
            return;
        } else if path.starts_with("/api/v1/namespaces/kube-system") {
            answer(
                &mut stream,
                "200 OK",
                r#"{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system","uid":"hostile-uid"}}"#,
            );
        } else if matches!(mode, Hostile::EndlessEvent) && path.contains("watch=") {
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            );
            let start = r#"{"type":"ADDED","object":{"metadata":{"name":"gpu-"#;
            let _ = write!(stream, "{:x}\r\n{start}\r\n", start.len());
            let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, "x".repeat(1 << 20));
            while stream.write_all(chunk.as_bytes()).is_ok() {}
            return;
        } else if path.contains("limit=") {
            // Counted across connections: the client asks for the next page while it
            // decodes one, on a second connection when the first is still busy.
            let page = NEXT_PAGE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            match mode {
                Hostile::TinyItems => {
                    let items = vec!["{}"; 300_000].join(",");
                    answer(
                        &mut stream,
                        "200 OK",
                        &format!(
                            r#"{{"kind":"List","apiVersion":"v1","metadata":{{}},"items":[{items}]}}"#
                        ),
                    );
                }
                Hostile::EndlessEvent | Hostile::EndlessObject | Hostile::EchoToken => answer(
                    &mut stream,
                    "200 OK",
                    r#"{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}"#,
                ),
                Hostile::ProtobufPrefix => {
                    // k8s\0, then runtime.Unknown field 5 (unknown to it) over and over:
                    // 2-byte fields, 2 MiB of them, sent 64 bytes at a time.
                    let mut body = b"k8s\0".to_vec();
                    while body.len() < 2 << 20 {
                        body.extend_from_slice(&[0x28, 0x01]);
                    }
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.kubernetes.protobuf\r\nTransfer-Encoding: chunked\r\n\r\n"
                    );
                    for frame in body.chunks(64) {
                        let _ = write!(stream, "{:x}\r\n", frame.len());
                        let _ = stream.write_all(frame);
                        let _ = write!(stream, "\r\n");
                        let _ = stream.flush();
                    }
                    let _ = write!(stream, "0\r\n\r\n");
                }
                Hostile::PagesForever | Hostile::SameToken => {
                    let token = match mode {
                        Hostile::SameToken => "same".to_string(),
                        _ => format!("page-{page}"),
                    };
                    answer(
                        &mut stream,
                        "200 OK",
                        &format!(
                            r#"{{"kind":"List","apiVersion":"v1","metadata":{{"continue":"{token}"}},"items":[]}}"#
                        ),
                    );
                }
                Hostile::HugePage => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    );
                    let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, " ".repeat(1 << 20));
                    let _ = write!(stream, "b\r\n{{\"items\":[ \r\n");
                    while stream.write_all(chunk.as_bytes()).is_ok() {}
                    return;
                }
                Hostile::Drips => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    );
                    loop {
                        if write!(stream, "1\r\n \r\n").is_err() || stream.flush().is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
            }
        } else {
            answer(
                &mut stream,
                "404 Not Found",
                r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#,
            );
        }
    }
}

/// The harness's cluster as `east`, and hostile servers as the other contexts.
async fn with_hostile(contexts: &[(&str, Hostile)]) -> Harness {
    let h = Harness::start("gpu-taint", binary(), EAST).await;
    let east = h.dir.path().join("east.kubeconfig");
    std::fs::copy(&h.kubeconfig, &east).expect("copy");
    let mut entries = vec![("east", east.as_path())];
    entries.extend(contexts.iter().map(|(name, _)| (*name, east.as_path())));
    let mut merged: Value = serde_yaml::from_str(&merge_kubeconfigs(&entries)).expect("yaml");
    for (i, (_, mode)) in contexts.iter().enumerate() {
        merged["clusters"][i + 1]["cluster"] =
            serde_json::json!({ "server": hostile_server(*mode) });
        merged["users"][i + 1]["user"] = serde_json::json!({});
    }
    std::fs::write(&h.kubeconfig, serde_yaml::to_string(&merged).expect("yaml")).expect("write");
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_pages_forever_or_drips_costs_its_context_its_budget_only() {
    let h = with_hostile(&[
        ("pager", Hostile::PagesForever),
        ("dripper", Hostile::Drips),
    ])
    .await;
    let started = Instant::now();
    let run = h
        .run(&[
            "status",
            "--contexts",
            "east,pager,dripper",
            "--context-timeout",
            "1s",
        ])
        .await;
    let elapsed = started.elapsed();
    assert_code(&run, 4);
    assert!(
        run.stdout.contains("east-a100-1"),
        "east is reported: {}",
        run.all()
    );
    // Pages that never end cost the context its deadline; an answer dripped a byte at a
    // time is cut there too (by the deadline or by the request's own limit, which is the
    // same: whichever fires first says so).
    for (context, said) in [
        (
            "pager",
            "its answers did not end within 1s (--context-timeout)",
        ),
        ("dripper", "--context-timeout"),
    ] {
        assert!(
            run.stderr
                .lines()
                .any(|l| l.contains(&format!("warning: context {context}:"))
                    && l.contains("timeout")
                    && (l.contains(said) || l.contains("continue token"))),
            "{context}: {}",
            run.all()
        );
    }
    assert!(
        run.stderr
            .contains("2 clusters of 3 could not be read; the report covers the others (exit 4)"),
        "{}",
        run.all()
    );
    // The deadline bounds the whole read: the pager's pages no longer cost six deadlines.
    assert!(elapsed < Duration::from_secs(4), "took {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_continue_token_stops_the_command_at_once() {
    let h = with_hostile(&[("same", Hostile::SameToken)]).await;
    let started = Instant::now();
    let run = h.run(&["status", "--context", "same"]).await;
    assert_code(&run, 3);
    assert!(
        run.stderr
            .contains("the API server gave the same continue token twice; stopped"),
        "{}",
        run.all()
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Every command's text output (the sibling plugins as `cargo test --workspace` builds
/// them), with hostile strings planted in a node annotation, a pod
/// condition and an event message (and a file name for the linter): no raw control or
/// bidirectional character reaches the terminal, and no value starts a line of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_raw_control_byte_reaches_the_terminal_from_any_command() {
    let h = Harness::start(
        "gpu-taint",
        binary(),
        include_str!("fixtures/hostile-strings.yaml"),
    )
    .await;
    let sibling =
        |name: &str| binary().with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    h.install_plugin("nodelabel", &sibling("kubectl-nodelabel"));
    h.install_plugin("affinity-lint", &sibling("kubectl-affinity_lint"));
    let features = h.dir.path().join("features.txt");
    std::fs::write(&features, "gpu=true\n").unwrap();
    let manifest = h.dir.path().join("ev\u{1b}[31mil\u{202e}.yaml");
    std::fs::write(
        &manifest,
        "kind: Pod\nmetadata: {name: \"p\\e]0;x\\a\", namespace: ml}\nspec:\n  nodeSelector: {pool: \"gpu\\u202e\"}\n  containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: 1}}}]\n",
    )
    .unwrap();
    let manifest = manifest.to_str().unwrap().to_string();
    let features = features.to_str().unwrap().to_string();
    let runs: Vec<(&str, Vec<&str>)> = vec![
        ("nodelabel", vec!["set", "gpu-1", "team=ml", "--dry-run"]),
        (
            "nodelabel",
            vec![
                "import",
                "gpu-1",
                "--file",
                &features,
                "--prune",
                "--dry-run",
            ],
        ),
        ("nodelabel", vec!["dependents", "pool", "-A"]),
        ("gpu-taint", vec!["status"]),
        ("gpu-taint", vec!["status", "-o", "wide"]),
        (
            "gpu-taint",
            vec![
                "dedicate",
                "gpu-1",
                "--taint",
                "dedicated=llm:NoSchedule",
                "--dry-run",
            ],
        ),
        ("affinity-lint", vec!["why-pending", "trainer", "-n", "ml"]),
        ("affinity-lint", vec!["drift", "-A"]),
        ("affinity-lint", vec!["-f", &manifest]),
        ("affinity-lint", vec!["-f", &manifest, "--cluster"]),
    ];
    for (plugin, args) in runs {
        let run = h.run_plugin(plugin, &args).await;
        assert!(
            run.code >= 0 && run.code <= 4,
            "{plugin} {args:?}: {}",
            run.all()
        );
        for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            let raw: Vec<char> = text
                .chars()
                .filter(|c| {
                    (c.is_control() && *c != '\n')
                        || ('\u{202a}'..='\u{202e}').contains(c)
                        || ('\u{2066}'..='\u{2069}').contains(c)
                })
                .collect();
            assert!(
                raw.is_empty(),
                "{plugin} {args:?} {stream}: {raw:?} in {text}"
            );
            for line in text.lines() {
                assert!(
                    !line.starts_with("+ label forged")
                        && !line.starts_with("forged")
                        && line != "node/gpu-1 applied",
                    "{plugin} {args:?} {stream}: a value forged the line {line:?}"
                );
            }
        }
    }
}

/// One endless page: the command stops at the answer limit (512 MiB) with exit 3, instead of
/// reading until memory runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_page_stops_at_the_answer_limit() {
    let h = with_hostile(&[("huge", Hostile::HugePage)]).await;
    let run = h.run(&["status", "--context", "huge"]).await;
    assert_code(&run, 3);
    assert!(
        run.stderr.contains(
            "went past 536870912 bytes (one list page): a server answering without end is refused"
        ),
        "{}",
        run.all()
    );
}

/// Each bound, against the server that would break it: the command ends quickly with an
/// error naming the bound and the server, and nothing is built from what is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_is_bounded_before_it_is_kept() {
    for (mode, args, said, within, names_server) in [
        (
            Hostile::TinyItems,
            vec!["status"],
            "listing nodes: the API server answered 300000 items to a page of at most 5000: refused",
            Duration::from_secs(10),
            false,
        ),
        (
            Hostile::EndlessObject,
            vec![
                "dedicate",
                "gpu-1",
                "--taint",
                "dedicated=llm:NoSchedule",
                "--dry-run",
            ],
            "went past 67108864 bytes (one object)",
            Duration::from_secs(20),
            true,
        ),
        (
            Hostile::ProtobufPrefix,
            vec!["status"],
            "protobuf answer is not a list placekit reads",
            Duration::from_secs(10),
            false,
        ),
        (
            Hostile::EndlessEvent,
            vec!["status", "-w"],
            "went past 16777216 bytes (one watch event)",
            Duration::from_secs(20),
            true,
        ),
    ] {
        let h = with_hostile(&[("hostile", mode)]).await;
        let mut all = args.clone();
        all.extend(["--context", "hostile"]);
        let started = Instant::now();
        let run = h.run(&all).await;
        let elapsed = started.elapsed();
        assert_ne!(run.code, 0, "{args:?}: {}", run.all());
        assert!(
            run.stderr.contains(said) && (!names_server || run.stderr.contains("127.0.0.1")),
            "{args:?}: {}",
            run.all()
        );
        assert!(elapsed < within, "{args:?} took {elapsed:?}");
    }
}

/// A server that echoes the credentials it was sent, with a TAB in its answer: at -v=8 (and
/// in the error) the token is never shown, in text or in a hex dump.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_echoing_the_token_never_gets_it_printed() {
    let h = with_hostile(&[("echo", Hostile::EchoToken)]).await;
    let mut kubeconfig: Value =
        serde_yaml::from_str(&std::fs::read_to_string(&h.kubeconfig).unwrap()).unwrap();
    kubeconfig["users"][1]["user"] = serde_json::json!({"token": "s3cr3t-echoed-token-4711"});
    std::fs::write(&h.kubeconfig, serde_yaml::to_string(&kubeconfig).unwrap()).unwrap();
    for level in ["6", "8", "10"] {
        let run = h
            .run(&["status", "--context", "echo", &format!("-v={level}")])
            .await;
        assert_ne!(run.code, 0);
        assert!(
            !run.all().contains("s3cr3t-echoed-token-4711"),
            "-v={level}: {}",
            run.all()
        );
        assert!(
            run.all().contains("[redacted]"),
            "-v={level}: {}",
            run.all()
        );
    }
}

/// Tokens learnt while running: an exec credential plugin's and an auth provider's
/// command's are in no kubeconfig, only in the requests sent. A server that echoes the
/// credentials it got (over TLS, where they are sent) never gets them printed, at any -v,
/// in the error or in a dump.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_learnt_while_running_is_never_printed() {
    use placekit_testserver::{ADMIN_TOKEN, Fault, FaultAction, ServerConfig};
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::local(
        "gpu-taint",
        binary(),
        ServerConfig::default().with_fixture_yaml(EAST),
    )
    .await;
    // Each issues the test server's admin token, which the kubeconfig then no longer holds.
    let exec = h.dir.path().join("exec-plugin");
    std::fs::write(
        &exec,
        format!(
            "#!/bin/sh\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{ADMIN_TOKEN}\"}}}}'\n"
        ),
    )
    .unwrap();
    let gcloud = h.dir.path().join("gcloud");
    std::fs::write(
        &gcloud,
        format!(
            "#!/bin/sh\necho '{{\"credential\":{{\"access_token\":\"{ADMIN_TOKEN}\",\"token_expiry\":\"2999-01-01T00:00:00Z\"}}}}'\n"
        ),
    )
    .unwrap();
    for script in [&exec, &gcloud] {
        std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let users = [
        (
            "exec",
            serde_json::json!({"exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": exec.display().to_string(),
                "interactiveMode": "Never",
            }}),
        ),
        (
            "auth-provider",
            serde_json::json!({"auth-provider": {"name": "gcp", "config": {
                "cmd-path": gcloud.display().to_string(),
                "cmd-args": "config config-helper --format=json",
                "token-key": "{.credential.access_token}",
                "expiry-key": "{.credential.token_expiry}",
            }}}),
        ),
    ];
    let original = std::fs::read_to_string(&h.kubeconfig).unwrap();
    for (kind, user) in users {
        let mut kubeconfig: Value = serde_yaml::from_str(&original).unwrap();
        kubeconfig["users"][0]["user"] = user;
        let written = serde_yaml::to_string(&kubeconfig).unwrap();
        assert!(!written.contains(ADMIN_TOKEN), "{written}");
        std::fs::write(&h.kubeconfig, written).unwrap();
        // The credential works: the token reached the server from the plugin.
        let run = h.run_env(&["status"], &[("KUBERC", "off")]).await;
        assert_code(&run, 0);
        h.server().inject(Fault {
            times: 1000,
            ..Fault::new("list", "nodes", 1, FaultAction::EchoCredentials)
        });
        for level in ["0", "6", "8", "10"] {
            let run = h
                .run_env(&["status", &format!("-v={level}")], &[("KUBERC", "off")])
                .await;
            assert_ne!(run.code, 0, "{kind} -v={level}: {}", run.all());
            assert!(
                !run.all().contains(ADMIN_TOKEN),
                "{kind} -v={level}: {}",
                run.all()
            );
            assert!(
                run.all()
                    .contains("request with credentials [Bearer [redacted]] is forbidden"),
                "{kind} -v={level}: {}",
                run.all()
            );
        }
        h.server().clear_faults();
    }
}

/// An API server that stops answering the exporter once it has listed the inventory (its
/// watches refused, its lists after the first too) does not empty the exporter: `/healthz`
/// says 503 with the error, and `/metrics` serves the inventory last read with
/// `placekit_read_up 0`, so a series does not vanish (and an alert's `for:` start again) over
/// an outage that `placekit_read_up` reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exporter_keeps_the_last_inventory_while_the_server_fails() {
    use placekit_testserver::{Fault, FaultAction, ServerConfig, http_get};
    let h = Harness::local(
        "gpu-taint",
        binary(),
        ServerConfig::default().with_fixture_yaml(EAST),
    )
    .await;
    let refused = FaultAction::Status {
        code: 500,
        retry_after_seconds: None,
    };
    // The first list of nodes (the exporter's start) is answered; every watch and every
    // list after it is refused.
    h.server().inject(Fault {
        times: 100_000,
        ..Fault::new("watch", "nodes", 1, refused.clone())
    });
    h.server().inject(Fault {
        times: 100_000,
        ..Fault::new("list", "nodes", 2, refused)
    });
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut exporter = std::process::Command::new(binary())
        .args(["serve-metrics", "--listen", &format!("127.0.0.1:{port}")])
        .env("KUBECONFIG", &h.kubeconfig)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve-metrics runs");
    let scrape = |path: &str, until: &dyn Fn(u16, &str) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut last = (0, String::new());
        while Instant::now() < deadline {
            if let Some((code, body)) = http_get(port, path) {
                if until(code, &body) {
                    return Ok((code, body));
                }
                last = (code, body);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(last)
    };
    let unhealthy = tokio::task::block_in_place(|| {
        // Past the first pause (1 s): the list again was refused too.
        std::thread::sleep(Duration::from_millis(1500));
        scrape("/healthz", &|code, _| code == 503)
    });
    let metrics = tokio::task::block_in_place(|| scrape("/metrics", &|code, _| code == 200));
    let _ = exporter.kill();
    let _ = exporter.wait();
    let (_, said) = unhealthy.expect("/healthz answers 503 while the server fails");
    assert!(said.contains("the watches stopped"), "{said}");
    let (_, body) = metrics.expect("/metrics answers");
    assert!(body.lines().any(|l| l == "placekit_read_up 0"), "{body}");
    assert!(
        body.contains("placekit_node_accelerator_free{node=\"east-a100-1\""),
        "the last inventory is still served:\n{body}"
    );
    assert!(
        h.server().count("list", "nodes") >= 2,
        "the list again was tried"
    );
}
