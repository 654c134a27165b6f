//! Unit tests of the parent module.

use super::*;
use placekit_core::snapshot::{JournalRecord, Snapshot, SnapshotHeader, write_snapshot};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

/// Answers each node's attempts from a script; records concurrency.
struct Scripted {
    script: Mutex<HashMap<String, Vec<Result<(), WriteError>>>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    calls: AtomicUsize,
    live: Mutex<HashMap<String, NodeState>>,
}

impl Scripted {
    fn new(script: Vec<(&str, Vec<Result<(), WriteError>>)>) -> Self {
        Scripted {
            script: Mutex::new(
                script
                    .into_iter()
                    .map(|(n, r)| (n.to_string(), r))
                    .collect(),
            ),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            live: Mutex::new(HashMap::new()),
        }
    }

    /// What a re-read of `node` returns (unset: the re-read fails).
    fn with_live(self, node: &str, state: NodeState) -> Self {
        self.live.lock().unwrap().insert(node.to_string(), state);
        self
    }
}

impl NodeWriter for Scripted {
    async fn read_node(&self, node: &str) -> Result<Option<NodeState>, WriteError> {
        match self.live.lock().unwrap().get(node) {
            Some(state) => Ok(Some(state.clone())),
            None => Err(WriteError::Transient {
                message: "request failed: connection refused".into(),
                retry_after: None,
                maybe_applied: false,
            }),
        }
    }

    async fn patch_node(
        &self,
        node: &str,
        _patch: &Value,
        _dry_run: bool,
    ) -> Result<(), WriteError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(10)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let mut script = self.script.lock().unwrap();
        let answers = script.get_mut(node).expect("scripted node");
        if answers.is_empty() {
            Ok(())
        } else {
            answers.remove(0)
        }
    }
}

fn transient(retry_after: Option<u64>) -> Result<(), WriteError> {
    Err(WriteError::Transient {
        message: "503".into(),
        retry_after: retry_after.map(Duration::from_secs),
        maybe_applied: true,
    })
}

fn items(n: usize) -> Vec<WriteItem> {
    (0..n)
        .map(|i| WriteItem {
            node: format!("n{i}"),
            patch: Value::Array(vec![]),
            plan: None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn retries_transient_failures_but_never_preconditions() {
    let writer = Scripted::new(vec![
        ("n0", vec![transient(None), transient(Some(2)), Ok(())]),
        (
            "n1",
            vec![Err(WriteError::Conflict(
                "testing value /metadata/labels/pool failed".into(),
            ))],
        ),
        (
            "n2",
            vec![Err(WriteError::Rejected {
                code: 403,
                reason: "Forbidden".into(),
                message: "no".into(),
            })],
        ),
        ("n3", vec![transient(None); 10]),
    ]);
    let config = ExecutorConfig {
        max_attempts: 3,
        ..Default::default()
    };
    let stop = Interrupt::default();
    let outcomes = execute(&writer, &items(4), &config, None, &stop, |_| {})
        .await
        .outcomes;
    let kinds: Vec<(OutcomeKind, u32)> = outcomes.iter().map(|o| (o.kind, o.attempts)).collect();
    assert_eq!(
        kinds,
        vec![
            (OutcomeKind::Applied, 3),
            (OutcomeKind::Conflict, 1),
            (OutcomeKind::Failed, 1),
            (OutcomeKind::Unknown, 3),
        ]
    );
    assert!(
        outcomes[3]
            .message
            .as_deref()
            .unwrap()
            .contains("gave up after 3 attempts")
    );
}

fn plan_for(node: &str) -> NodePlan {
    let state = NodeState {
        name: node.into(),
        uid: "u".into(),
        resource_version: "1".into(),
        labels: [("pool".to_string(), "batch".to_string())].into(),
        taints: vec![],
        annotations: Default::default(),
        nfd_keys: Default::default(),
        other_annotations: false,
    };
    placekit_core::plan::plan_node(
        &state,
        &placekit_core::plan::ChangeRequest {
            labels: placekit_core::syntax::parse_label_changes(&["pool=online"]).unwrap(),
            overwrite: true,
            ..Default::default()
        },
    )
}

fn with_pool(plan: &NodePlan, value: &str) -> NodeState {
    let mut state = plan.before.clone();
    state.labels.insert("pool".into(), value.into());
    state
}

#[tokio::test(start_paused = true)]
async fn a_reread_decides_what_the_answers_could_not() {
    let plans: Vec<NodePlan> = (0..5).map(|i| plan_for(&format!("n{i}"))).collect();
    let conflict = || Err(WriteError::Conflict("testing value failed".into()));
    let writer = Scripted::new(vec![
        // The first answer was lost, the retry found the change made.
        ("n0", vec![transient(None), conflict()]),
        // Every attempt failed in transit, but the first was made.
        ("n1", vec![transient(None); 10]),
        // Every attempt failed and the node is as read: not applied.
        ("n2", vec![transient(None); 10]),
        // Nothing can be read back: unknown, never "failed".
        ("n3", vec![transient(None); 10]),
        // A plain conflict is re-read to say what changed.
        ("n4", vec![conflict()]),
    ])
    .with_live("n0", with_pool(&plans[0], "online"))
    .with_live("n1", with_pool(&plans[1], "online"))
    .with_live("n2", with_pool(&plans[2], "batch"))
    .with_live("n4", with_pool(&plans[4], "h200"));
    let config = ExecutorConfig {
        max_attempts: 3,
        ..Default::default()
    };
    let items: Vec<WriteItem> = plans.iter().map(WriteItem::from_plan).collect();
    let stop = Interrupt::default();
    let outcomes = execute(&writer, &items, &config, None, &stop, |_| {})
        .await
        .outcomes;
    let kinds: Vec<OutcomeKind> = outcomes.iter().map(|o| o.kind).collect();
    assert_eq!(
        kinds,
        vec![
            OutcomeKind::Applied,
            OutcomeKind::Applied,
            OutcomeKind::Failed,
            OutcomeKind::Unknown,
            OutcomeKind::Conflict,
        ]
    );
    assert_eq!(
        outcomes[4].message.as_deref(),
        Some(
            "changed by someone else: label pool was \"batch\" when read and is \"h200\" now (this command would set \"online\")"
        )
    );
}

#[tokio::test(start_paused = true)]
async fn honours_retry_after() {
    let writer = Scripted::new(vec![("n0", vec![transient(Some(7)), Ok(())])]);
    let start = tokio::time::Instant::now();
    let stop = Interrupt::default();
    execute(
        &writer,
        &items(1),
        &ExecutorConfig::default(),
        None,
        &stop,
        |_| {},
    )
    .await;
    assert!(
        start.elapsed() >= Duration::from_secs(7),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn bounded_concurrency() {
    let writer = Scripted::new(
        (0..40)
            .map(|i| (Box::leak(format!("n{i}").into_boxed_str()) as &str, vec![]))
            .collect(),
    );
    let config = ExecutorConfig {
        concurrency: 4,
        ..Default::default()
    };
    let stop = Interrupt::default();
    let mut seen = 0;
    execute(&writer, &items(40), &config, None, &stop, |_| seen += 1).await;
    assert_eq!(seen, 40);
    assert_eq!(writer.max_in_flight.load(Ordering::SeqCst), 4);
}

#[tokio::test(start_paused = true)]
async fn stop_leaves_the_rest_not_attempted() {
    let writer = Scripted::new(
        (0..10)
            .map(|i| (Box::leak(format!("n{i}").into_boxed_str()) as &str, vec![]))
            .collect(),
    );
    let config = ExecutorConfig {
        concurrency: 1,
        ..Default::default()
    };
    let stop = Interrupt::default();
    let outcomes = execute(&writer, &items(10), &config, None, &stop, |o| {
        if o.node == "n2" {
            stop.trigger("SIGINT");
        }
    })
    .await
    .outcomes;
    let applied = outcomes
        .iter()
        .filter(|o| o.kind == OutcomeKind::Applied)
        .count();
    assert!((3..10).contains(&applied), "{applied}");
    assert!(
        outcomes
            .iter()
            .skip(applied)
            .all(|o| o.kind == OutcomeKind::NotAttempted)
    );
    assert_eq!(writer.calls.load(Ordering::SeqCst), applied);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_stopped_answering_opens_the_breaker() {
    let unreachable = || -> Vec<Result<(), WriteError>> {
        (0..5)
            .map(|_| {
                Err(WriteError::Transient {
                    message: "connection refused".into(),
                    retry_after: None,
                    maybe_applied: false,
                })
            })
            .collect()
    };
    let writer = Scripted::new(
        (0..10)
            .map(|i| {
                (
                    Box::leak(format!("n{i}").into_boxed_str()) as &str,
                    unreachable(),
                )
            })
            .collect(),
    );
    let config = ExecutorConfig {
        concurrency: 1,
        ..Default::default()
    };
    let stop = Interrupt::default();
    let outcomes = execute(&writer, &items(10), &config, None, &stop, |_| {})
        .await
        .outcomes;
    let gave_up = outcomes.iter().filter(|o| o.attempts > 0).count();
    assert_eq!(gave_up, 3, "{outcomes:?}");
    assert!(outcomes[3..].iter().all(|o| {
        o.kind == OutcomeKind::NotAttempted
            && o.message
                .as_deref()
                .is_some_and(|m| m.contains("stopped answering"))
    }));
    assert_eq!(
        writer.calls.load(Ordering::SeqCst),
        15,
        "3 nodes x 5 attempts, then none"
    );
}

#[tokio::test(start_paused = true)]
async fn every_outcome_is_journaled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut journal = write_snapshot(&path, &journal_header()).unwrap();
    let writer = Scripted::new(vec![
        ("n0", vec![]),
        ("n1", vec![Err(WriteError::Conflict("x".into()))]),
        ("n2", vec![]),
    ]);
    let stop = Interrupt::default();
    execute(
        &writer,
        &items(3),
        &ExecutorConfig::default(),
        Some(&mut journal),
        &stop,
        |_| {},
    )
    .await;
    drop(journal);
    let snap = Snapshot::load(&path).unwrap();
    assert_eq!(snap.outcome_of("n0"), Some(OutcomeKind::Applied));
    assert_eq!(snap.outcome_of("n1"), Some(OutcomeKind::Conflict));
    assert_eq!(snap.outcome_of("n2"), Some(OutcomeKind::Applied));
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_leaves_one_quick_attempt_and_starts_nothing_new() {
    let throttled = || (0..5).map(|_| transient(Some(20))).collect::<Vec<_>>();
    let writer = Scripted::new(vec![("n0", throttled()), ("n1", vec![]), ("n2", vec![])]);
    let config = ExecutorConfig {
        concurrency: 1,
        ..Default::default()
    };
    let interrupt = std::sync::Arc::new(Interrupt::default());
    let start = tokio::time::Instant::now();
    let signal = {
        let interrupt = interrupt.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            interrupt.trigger("SIGINT");
        })
    };
    let run = execute(&writer, &items(3), &config, None, &interrupt, |_| {}).await;
    signal.await.unwrap();
    // Without the interrupt: 4 waits of 20 s (Retry-After). With it: the wait in
    // progress is cut short and one last attempt made.
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(run.outcomes[0].attempts, 2, "{:?}", run.outcomes[0]);
    assert_eq!(run.outcomes[0].kind, OutcomeKind::Unknown);
    for o in &run.outcomes[1..] {
        assert_eq!(o.kind, OutcomeKind::NotAttempted);
        assert!(o.message.as_deref().unwrap().contains("SIGINT"), "{o:?}");
    }
    assert_eq!(writer.calls.load(Ordering::SeqCst), 2);
}

/// Never answers: a write that hangs until the run gives up on it.
struct Hanging;

impl NodeWriter for Hanging {
    async fn patch_node(&self, _: &str, _: &Value, _: bool) -> Result<(), WriteError> {
        std::future::pending().await
    }

    async fn read_node(&self, _: &str) -> Result<Option<NodeState>, WriteError> {
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_second_interrupt_records_writes_in_flight_as_unknown_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut journal = write_snapshot(&path, &journal_header()).unwrap();
    let interrupt = std::sync::Arc::new(Interrupt::default());
    let signals = {
        let interrupt = interrupt.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            interrupt.trigger("SIGTERM");
            tokio::time::sleep(Duration::from_secs(1)).await;
            interrupt.trigger("SIGINT");
        })
    };
    let config = ExecutorConfig {
        concurrency: 2,
        ..Default::default()
    };
    let run = execute(
        &Hanging,
        &items(3),
        &config,
        Some(&mut journal),
        &interrupt,
        |_| {},
    )
    .await;
    signals.await.unwrap();
    drop(journal);
    let kinds: Vec<OutcomeKind> = run.outcomes.iter().map(|o| o.kind).collect();
    assert_eq!(
        kinds,
        [
            OutcomeKind::Unknown,
            OutcomeKind::Unknown,
            OutcomeKind::NotAttempted
        ]
    );
    assert_eq!(interrupt.signal(), Some("SIGTERM"));
    // The journal has every outcome, the in-flight ones as unknown.
    let snap = Snapshot::load(&path).unwrap();
    assert_eq!(snap.outcome_of("n0"), Some(OutcomeKind::Unknown));
    assert_eq!(snap.outcome_of("n1"), Some(OutcomeKind::Unknown));
    assert_eq!(snap.outcome_of("n2"), Some(OutcomeKind::NotAttempted));
}

#[tokio::test(start_paused = true)]
async fn a_full_journal_stops_new_writes_and_names_what_it_misses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut journal = write_snapshot(&path, &journal_header()).unwrap();
    let header_len = std::fs::metadata(&path).unwrap().len();
    // Room for two records and part of a third.
    journal.limit_size(header_len + 150);
    let writer = Scripted::new(
        (0..6)
            .map(|i| (["n0", "n1", "n2", "n3", "n4", "n5"][i], vec![]))
            .collect(),
    );
    let config = ExecutorConfig {
        concurrency: 1,
        ..Default::default()
    };
    let run = execute(
        &writer,
        &items(6),
        &config,
        Some(&mut journal),
        &Interrupt::default(),
        |_| {},
    )
    .await;
    drop(journal);
    let failure = run.journal_failure.expect("the journal filled up");
    assert!(
        failure.error.contains("No space left on device"),
        "{failure:?}"
    );
    let snap = Snapshot::load(&path).unwrap();
    let recorded: Vec<&str> = snap
        .records
        .iter()
        .filter_map(|r| match r {
            JournalRecord::Outcome { node, .. } => Some(node.as_str()),
            _ => None,
        })
        .collect();
    // What the journal misses is exactly what the failure names, and no write
    // started after the first failure.
    let applied: Vec<&str> = run
        .outcomes
        .iter()
        .filter(|o| o.kind == OutcomeKind::Applied)
        .map(|o| o.node.as_str())
        .collect();
    assert_eq!(applied.len(), writer.calls.load(Ordering::SeqCst));
    assert!(applied.len() < 6, "{applied:?}");
    // The written nodes the journal misses (one never written needs no record).
    let missing: Vec<&str> = run
        .outcomes
        .iter()
        .filter(|o| o.attempts > 0 && !recorded.contains(&o.node.as_str()))
        .map(|o| o.node.as_str())
        .collect();
    assert_eq!(missing, failure.unrecorded);
    assert!(!missing.is_empty());
    // The file is whole lines only: the torn record was cut back.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
}

fn journal_header() -> SnapshotHeader {
    SnapshotHeader::new(
        "kubectl-nodelabel",
        "0.1.0",
        "ctx",
        &placekit_core::cluster::ClusterIdentity::default(),
        vec![],
        "set",
        &[],
    )
}

#[test]
fn classifies_api_answers() {
    let test_failed_upstream = br#"{"kind":"Status","status":"Failure","message":"the server rejected our request due to an error in our request","reason":"Invalid","details":{},"code":422}"#;
    assert!(matches!(
        classify_status(422, test_failed_upstream, None),
        WriteError::Conflict(_)
    ));
    let invalid = br#"{"kind":"Status","status":"Failure","message":"Node \"n\" is invalid: metadata.labels: Invalid value: \"a b\": x","reason":"Invalid","details":{"name":"n","kind":"Node","causes":[{"reason":"FieldValueInvalid","message":"x","field":"metadata.labels"}]},"code":422}"#;
    assert!(matches!(
        classify_status(422, invalid, None),
        WriteError::Rejected { code: 422, .. }
    ));
    let test_failed = br#"{"kind":"Status","message":"the server rejected our request due to an error in our request: testing value /metadata/labels/pool failed: test failed","reason":"Invalid","code":422}"#;
    assert!(matches!(
        classify_status(422, test_failed, None),
        WriteError::Conflict(_)
    ));
    assert!(matches!(
        classify_status(409, b"{}", None),
        WriteError::Conflict(_)
    ));
    assert!(matches!(
        classify_status(429, b"{}", Some(Duration::from_secs(1))),
        WriteError::Transient {
            retry_after: Some(_),
            ..
        }
    ));
    assert!(matches!(
        classify_status(503, b"not json", None),
        WriteError::Transient { .. }
    ));
    assert!(matches!(
        classify_status(403, b"{}", None),
        WriteError::Rejected { code: 403, .. }
    ));
}

#[test]
fn backoff_doubles_and_is_capped() {
    let c = ExecutorConfig {
        base_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(1),
        ..Default::default()
    };
    assert_eq!(backoff(&c, 1, None), Duration::from_millis(100));
    assert_eq!(backoff(&c, 2, None), Duration::from_millis(200));
    assert_eq!(backoff(&c, 10, None), Duration::from_secs(1));
    assert_eq!(
        backoff(&c, 1, Some(Duration::from_secs(60))),
        Duration::from_secs(1)
    );
}
