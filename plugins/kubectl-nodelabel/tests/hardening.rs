//! A run that loses its disk or is interrupted still tells the whole truth: a full disk
//! under the snapshot journal stops new writes, the report names every node's outcome and
//! what the journal misses, and the journal stays parseable through two rollbacks; SIGTERM,
//! SIGHUP and Ctrl-C stop new writes, give writes in flight one quick last attempt, and
//! exit 130 with a complete report, a second Ctrl-C at once; a server that stops answering
//! trips the circuit breaker instead of retrying every node.
//! Each test runs on the test API server, or on the real cluster behind the fault proxy
//! with `PLACEKIT_E2E_KUBECONFIG`.

use std::path::Path;
use std::time::{Duration, Instant};

use placekit_testserver::harness::{Harness, assert_code};
use placekit_testserver::process::Bounded as _;
use placekit_testserver::{Fault, FaultAction};
use serde_json::Value;

const FIXTURE: &str = include_str!("fixtures/cluster.yaml");
/// Labels the three online nodes one at a time, with a JSON report.
const SET_ONLINE_ONE_AT_A_TIME: [&str; 9] = [
    "set",
    "-l",
    "pool=online",
    "team=ml",
    "--concurrency",
    "1",
    "-y",
    "-o",
    "json",
];
/// The fixture's nodes with pool=online.
const ONLINE: [&str; 3] = ["gpu-a100-1", "gpu-a100-2", "gpu-a100-3"];

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel"))
}

async fn harness() -> Harness {
    Harness::start("nodelabel", binary(), FIXTURE).await
}

fn outcomes(report: &Value) -> Vec<(String, String)> {
    report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().to_string(),
                n["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Issue 14.3: the journal's disk fills up after the first record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_the_run_with_a_whole_report_and_a_whole_journal() {
    let h = harness().await;
    let run = h
        .run_env(
            &SET_ONLINE_ONE_AT_A_TIME,
            // Room for one outcome record and part of a second.
            &[("PLACEKIT_TEST_JOURNAL_BYTES", "150")],
        )
        .await;
    assert_code(&run, 1);
    let report = run.json();
    let outcomes = outcomes(&report);
    assert_eq!(outcomes.len(), 3, "{}", run.all());
    let applied: Vec<&str> = outcomes
        .iter()
        .filter(|(_, o)| o == "applied")
        .map(|(n, _)| n.as_str())
        .collect();
    // No write started once the journal failed; every write sent is in the report.
    assert_eq!(applied.len(), 2, "{}", run.all());
    assert_eq!(h.server().count("patch", "nodes"), 2);
    assert!(
        outcomes.iter().any(|(_, o)| o == "notAttempted"),
        "{}",
        run.all()
    );
    let problem = report["problems"][0].as_str().unwrap();
    assert!(
        problem.contains("could not be written (")
            && problem.contains("No space left on device")
            && problem.contains("no further write was started")
            && problem.contains(applied[1]),
        "{problem}"
    );
    let snapshot = report["snapshot"].as_str().unwrap().to_string();
    let text = std::fs::read_to_string(&snapshot).unwrap();
    assert!(text.ends_with('\n'), "a torn record was left: {text}");

    // `history` lists it, the missing outcomes as such.
    let history = h.run(&["history", "-o", "json"]).await;
    assert_code(&history, 0);
    let items = history.json()["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1, "{}", history.all());
    assert!(
        items[0]["outcome"]
            .as_str()
            .unwrap()
            .contains("no outcome recorded"),
        "{}",
        history.all()
    );

    // Rollback compares the unrecorded node with the cluster and restores it too.
    let undo = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&undo, 0);
    for node in ONLINE {
        assert!(h.labels(node).await.get("team").is_none(), "{node}");
    }
    // Undo the undo, then show both: the journals stay parseable.
    let rollbacks: Vec<String> = h
        .snapshots()
        .iter()
        .map(|p| p.display().to_string())
        .filter(|p| p != &snapshot)
        .collect();
    assert_eq!(rollbacks.len(), 1, "{rollbacks:?}");
    let redo = h.run(&["rollback", &rollbacks[0], "-y"]).await;
    assert_code(&redo, 0);
    for node in &applied {
        assert_eq!(h.labels(node).await["team"], "ml", "{node}");
    }
    for path in [&snapshot, &rollbacks[0]] {
        let show = h.run(&["show", path]).await;
        assert_code(&show, 0);
    }
    let history = h.run(&["history", "-o", "json"]).await;
    assert_code(&history, 0);
    let listed = history.json();
    assert_eq!(listed["items"].as_array().unwrap().len(), 3, "{listed}");
    assert_eq!(
        listed["unreadable"].as_array().unwrap().len(),
        0,
        "{listed}"
    );
}

/// Spawns a `set` over the three online nodes, one at a time, and waits until its first
/// write reached the server.
fn start_writing(h: &Harness) -> (std::process::Child, Instant) {
    let child = h
        .command(&SET_ONLINE_ONE_AT_A_TIME)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while h.server().count("patch", "nodes") == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no write started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the first answer arrive and the retry's wait begin.
    std::thread::sleep(Duration::from_millis(300));
    (child, Instant::now())
}

fn send(child: &std::process::Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .bounded_status()
        .unwrap();
    assert!(status.success());
}

/// Issue 14.4: each of SIGTERM, SIGHUP and SIGINT during a throttled write (429 with
/// Retry-After 20 s on every attempt) ends the run within seconds: one last attempt for
/// the write in flight, nothing new started, exit 130, a complete report and journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_stops_new_writes_and_exits_130_with_the_report() {
    for signal in ["TERM", "HUP", "INT"] {
        let h = harness().await;
        h.server().inject(Fault {
            times: 100,
            ..Fault::new(
                "patch",
                "nodes",
                1,
                FaultAction::Status {
                    code: 429,
                    retry_after_seconds: Some(20),
                },
            )
        });
        let (child, signalled) = tokio::task::block_in_place(|| start_writing(&h));
        send(&child, signal);
        let run = tokio::task::block_in_place(|| Harness::wait(child));
        assert!(
            signalled.elapsed() < Duration::from_secs(8),
            "SIG{signal}: took {:?}",
            signalled.elapsed()
        );
        assert_code(&run, 130);
        let report = run.json();
        assert_eq!(
            report["interrupted"],
            format!("SIG{signal}"),
            "{}",
            run.all()
        );
        let outcomes = outcomes(&report);
        assert_eq!(outcomes.len(), 3);
        let not_attempted = outcomes.iter().filter(|(_, o)| o == "notAttempted").count();
        assert_eq!(not_attempted, 2, "{}", run.all());
        // The write in flight: its first attempt and exactly one more.
        assert_eq!(h.server().count("patch", "nodes"), 2, "SIG{signal}");
        // The journal holds every outcome.
        let show = h.run(&["show", "--last", "-o", "json"]).await;
        assert_code(&show, 0);
        let records = show.json()["records"].as_array().unwrap().len();
        assert_eq!(records, 3, "{}", show.all());
        for node in ONLINE {
            assert!(h.labels(node).await.get("team").is_none(), "{node}");
        }
    }
}

/// Issue 14.4: a second Ctrl-C does not wait for a write the server holds (10 s): the run
/// ends at once, the write in flight recorded `unknown`, which rollback checks against the
/// node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_stops_waiting_at_once() {
    let h = harness().await;
    h.server().inject(Fault::new(
        "patch",
        "nodes",
        1,
        FaultAction::Delay { millis: 10_000 },
    ));
    let (child, signalled) = tokio::task::block_in_place(|| start_writing(&h));
    send(&child, "INT");
    std::thread::sleep(Duration::from_millis(300));
    send(&child, "INT");
    let run = tokio::task::block_in_place(|| Harness::wait(child));
    assert!(
        signalled.elapsed() < Duration::from_secs(4),
        "took {:?}",
        signalled.elapsed()
    );
    assert_code(&run, 130);
    let report = run.json();
    let outcomes = outcomes(&report);
    assert_eq!(outcomes[0].1, "unknown", "{}", run.all());
    assert!(outcomes[1..].iter().all(|(_, o)| o == "notAttempted"));
    assert!(
        run.stderr.contains("SIGINT (a second signal)"),
        "{}",
        run.all()
    );
    let show = h.run(&["show", "--last", "-o", "json"]).await;
    assert_code(&show, 0);
    assert_eq!(show.json()["records"].as_array().unwrap().len(), 3);
    // Whether the held write landed or not (the server drops it with the connection),
    // rollback checks the node and leaves it without the label.
    let undo = h.run(&["rollback", "--last", "-y"]).await;
    assert_code(&undo, 0);
    assert!(h.labels(ONLINE[0]).await.get("team").is_none());
}

/// Issue 14.6: when the server stops answering mid-run, three nodes in a row exhaust their
/// retries and the rest are recorded not attempted instead of each waiting out its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_answering_trips_the_breaker() {
    let h = harness().await;
    h.server().inject(Fault {
        times: 1000,
        ..Fault::new("patch", "nodes", 1, FaultAction::Drop)
    });
    // Every node of the fixture, one at a time.
    let run = h
        .run(&[
            "set",
            "-l",
            "team!=nobody",
            "probe=1",
            "--concurrency",
            "1",
            "-y",
            "-o",
            "json",
        ])
        .await;
    assert_code(&run, 1);
    let report = run.json();
    let outcomes = outcomes(&report);
    assert_eq!(outcomes.len(), 5, "{}", run.all());
    let stopped: Vec<&Value> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| {
            n["message"]
                .as_str()
                .is_some_and(|m| m.contains("the API server stopped answering"))
        })
        .collect();
    assert_eq!(stopped.len(), 2, "{}", run.all());
    // Three nodes × five attempts, and not one attempt more.
    assert_eq!(h.server().count("patch", "nodes"), 15);
}

/// An interrupted change of hundreds of nodes says what was not attempted in one line —
/// how many, and the first few names — instead of one line per node; the JSON report
/// keeps every node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_large_change_summarises_the_nodes_not_attempted() {
    let h = Harness::local(
        "nodelabel",
        binary(),
        placekit_testserver::ServerConfig::default().with_generator(
            placekit_testserver::Generator {
                nodes: 300,
                pods: 0,
                gpus_per_node: 8,
            },
        ),
    )
    .await;
    h.server().inject(Fault {
        times: 1000,
        ..Fault::new(
            "patch",
            "nodes",
            1,
            FaultAction::Status {
                code: 429,
                retry_after_seconds: Some(20),
            },
        )
    });
    let child = h
        .command(&["set", "--all", "team=ml", "--concurrency", "1", "-y"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while h.server().count("patch", "nodes") == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no write started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    send(&child, "INT");
    let run = tokio::task::block_in_place(|| Harness::wait(child));
    assert_code(&run, 130);
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("notAttempted"))
        .collect();
    // One line for the 299 nodes not attempted, and the summary's count.
    assert_eq!(lines.len(), 2, "{}", run.all());
    assert!(
        lines[0].starts_with("node/gpu-node-00001, node/gpu-node-00002, node/gpu-node-00003 and 296 more: notAttempted"),
        "{}",
        run.all()
    );
    assert!(lines[1].contains("299 notAttempted"), "{}", run.all());
    // The journal keeps every node.
    let show = h.run(&["show", "--last", "-o", "json"]).await;
    assert_eq!(show.json()["records"].as_array().unwrap().len(), 300);
}
