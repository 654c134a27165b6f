//! The write executor: applies per-node patches with bounded concurrency, retries what is
//! transient, never retries a failed precondition, reports progress and journals outcomes.
//!
//! The executor is generic over a [`NodeWriter`], so its retry and journaling logic is
//! tested without a server; [`KubeNodeWriter`] is the real one.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use crate::snapshot::{Journal, OutcomeKind, SnapshotError};

/// How a single write attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The patch's `test` failed (422) or the server answered 409 Conflict: someone else
    /// changed what the plan asserted. Never retried.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A permanent rejection (403, 404, 422 Invalid, other 4xx). Never retried.
    #[error("{reason} ({code}): {message}")]
    Rejected {
        code: u16,
        reason: String,
        message: String,
    },
    /// Worth retrying: 429, 5xx, a reset connection, a timeout.
    #[error("{message}")]
    Transient {
        message: String,
        /// The server's `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
}

/// Something that can send one node's patch.
pub trait NodeWriter: Sync {
    /// Sends `patch` (a JSON Patch array) for `node`; `dry_run` sends `dryRun=All`.
    fn patch_node(
        &self,
        node: &str,
        patch: &Value,
        dry_run: bool,
    ) -> impl Future<Output = Result<(), WriteError>> + Send;
}

/// Retry and concurrency settings.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// Writes in flight at once.
    pub concurrency: usize,
    /// Attempts per node for transient failures (1 = no retry).
    pub max_attempts: u32,
    /// First backoff; doubles per attempt.
    pub base_backoff: Duration,
    /// Upper bound of a backoff and of an honoured `Retry-After`.
    pub max_backoff: Duration,
    /// Send `dryRun=All`.
    pub dry_run: bool,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            concurrency: 16,
            max_attempts: 5,
            base_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(30),
            dry_run: false,
        }
    }
}

/// The result for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOutcome {
    pub node: String,
    pub kind: OutcomeKind,
    /// Why it failed or conflicted.
    pub message: Option<String>,
    /// Attempts made (0 when not attempted).
    pub attempts: u32,
}

/// One node's write.
#[derive(Debug, Clone)]
pub struct WriteItem {
    pub node: String,
    /// The conditional patch to send.
    pub patch: Value,
    /// A patch of `test` operations asserting the planned result. When a retry of this
    /// write fails its precondition, it is sent with `dryRun=All`: if it passes, an earlier
    /// attempt was applied and only its answer was lost, so the node counts as applied.
    pub verify: Option<Value>,
}

impl WriteItem {
    /// The write for a plan, with its verification patch.
    pub fn from_plan(plan: &crate::plan::NodePlan) -> Self {
        WriteItem {
            node: plan.node().to_string(),
            patch: plan.json_patch(),
            verify: Some(plan.verify_patch()),
        }
    }
}

/// Errors that stop the executor itself (not per-node failures).
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    #[error("cannot record the outcome in the snapshot journal: {0}")]
    Journal(#[from] SnapshotError),
}

fn backoff(config: &ExecutorConfig, attempt: u32, retry_after: Option<Duration>) -> Duration {
    let exponential = config
        .base_backoff
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    retry_after.unwrap_or(exponential).min(config.max_backoff)
}

async fn write_one<W: NodeWriter>(
    writer: &W,
    item: &WriteItem,
    config: &ExecutorConfig,
) -> NodeOutcome {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let (kind, message) = match writer
            .patch_node(&item.node, &item.patch, config.dry_run)
            .await
        {
            Ok(()) => (OutcomeKind::Applied, None),
            Err(WriteError::Conflict(m)) => {
                if attempts > 1 && !config.dry_run && answer_was_lost(writer, item).await {
                    (
                        OutcomeKind::Applied,
                        Some("applied by an earlier attempt whose answer was lost".to_string()),
                    )
                } else {
                    (OutcomeKind::Conflict, Some(m))
                }
            }
            Err(e @ WriteError::Rejected { .. }) => (OutcomeKind::Failed, Some(e.to_string())),
            Err(WriteError::Transient {
                message,
                retry_after,
            }) => {
                if attempts < config.max_attempts {
                    tokio::time::sleep(backoff(config, attempts, retry_after)).await;
                    continue;
                }
                (
                    OutcomeKind::Failed,
                    Some(format!("{message} (gave up after {attempts} attempts)")),
                )
            }
        };
        return NodeOutcome {
            node: item.node.clone(),
            kind,
            message,
            attempts,
        };
    }
}

/// After a retry failed its precondition: whether the node already is in the planned state
/// (an earlier attempt was applied but its answer never arrived).
async fn answer_was_lost<W: NodeWriter>(writer: &W, item: &WriteItem) -> bool {
    match &item.verify {
        Some(verify) => writer.patch_node(&item.node, verify, true).await.is_ok(),
        None => false,
    }
}

/// Applies `items` with at most `config.concurrency` writes in flight.
///
/// Every outcome is appended to `journal` (when given) as soon as it is known, then passed
/// to `on_outcome` (progress bars, live output). Once `stop` is set (Ctrl-C), no new write
/// starts; writes in flight finish and the rest are reported `NotAttempted`.
/// Returns the outcomes in the order of `items`.
pub async fn execute<W: NodeWriter>(
    writer: &W,
    items: &[WriteItem],
    config: &ExecutorConfig,
    journal: Option<&mut Journal>,
    stop: &AtomicBool,
    mut on_outcome: impl FnMut(&NodeOutcome),
) -> Result<Vec<NodeOutcome>, ExecutorError> {
    let journal = Mutex::new(journal);
    let record = |outcome: &NodeOutcome| -> Result<(), ExecutorError> {
        if let Some(j) = journal.lock().expect("journal lock").as_mut() {
            j.record_outcome(&outcome.node, outcome.kind, outcome.message.clone())?;
        }
        Ok(())
    };
    let mut results: Vec<Option<NodeOutcome>> = vec![None; items.len()];
    let mut stream = futures::stream::iter(items.iter().enumerate())
        .map(|(i, item)| async move {
            let outcome = if stop.load(Ordering::SeqCst) {
                NodeOutcome {
                    node: item.node.clone(),
                    kind: OutcomeKind::NotAttempted,
                    message: Some("the run was interrupted before this node".into()),
                    attempts: 0,
                }
            } else {
                write_one(writer, item, config).await
            };
            (i, outcome)
        })
        .buffer_unordered(config.concurrency.max(1));
    while let Some((i, outcome)) = stream.next().await {
        record(&outcome)?;
        on_outcome(&outcome);
        results[i] = Some(outcome);
    }
    if let Some(j) = journal.lock().expect("journal lock").as_mut() {
        j.sync()?;
    }
    Ok(results
        .into_iter()
        .map(|o| o.expect("every item yields an outcome"))
        .collect())
}

/// Writes nodes through a `kube::Client` with JSON Patch, reading status and `Retry-After`
/// from the raw response.
#[derive(Clone)]
pub struct KubeNodeWriter {
    client: kube::Client,
    field_manager: String,
}

impl std::fmt::Debug for KubeNodeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeNodeWriter")
            .field("field_manager", &self.field_manager)
            .finish_non_exhaustive()
    }
}

impl KubeNodeWriter {
    pub fn new(client: kube::Client, field_manager: impl Into<String>) -> Self {
        KubeNodeWriter {
            client,
            field_manager: field_manager.into(),
        }
    }
}

/// The API server's message for a JSON Patch that does not apply.
pub const PATCH_NOT_APPLIED_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// Classifies an HTTP error answer (a `Status` body) as the executor needs it.
pub fn classify_status(code: u16, body: &[u8], retry_after: Option<Duration>) -> WriteError {
    let status: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let message = status["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(500).collect());
    let reason = status["reason"].as_str().unwrap_or_default().to_string();
    // The API server answers a JSON Patch that does not apply (a failed `test`, a missing
    // path) with `NewGenericServerResponse(422, ...)`: reason Invalid, the fixed message
    // below and no `details.causes`, unlike a validation failure (`Node "x" is invalid`,
    // with causes). placekit's patches only fail to apply when the node changed under them,
    // so that answer is a conflict.
    let no_causes = status["details"]["causes"]
        .as_array()
        .is_none_or(|c| c.is_empty());
    let test_failed = code == 422
        && no_causes
        && (message.starts_with(PATCH_NOT_APPLIED_MESSAGE)
            || message.contains("testing value")
            || message.contains("test operation"));
    match code {
        409 => WriteError::Conflict(message),
        _ if test_failed => WriteError::Conflict(message),
        429 | 500..=599 => WriteError::Transient {
            message: format!("{code} {reason}: {message}"),
            retry_after,
        },
        _ => WriteError::Rejected {
            code,
            reason,
            message,
        },
    }
}

impl NodeWriter for KubeNodeWriter {
    async fn patch_node(&self, node: &str, patch: &Value, dry_run: bool) -> Result<(), WriteError> {
        let mut uri = format!("/api/v1/nodes/{node}?fieldManager={}", self.field_manager);
        if dry_run {
            uri.push_str("&dryRun=All");
        }
        let body = serde_json::to_vec(patch).expect("patches always serialise");
        let request = http::Request::patch(uri)
            .header(http::header::CONTENT_TYPE, "application/json-patch+json")
            .header(http::header::ACCEPT, "application/json")
            .body(kube::client::Body::from(body))
            .map_err(|e| WriteError::Rejected {
                code: 0,
                reason: "BadRequest".into(),
                message: e.to_string(),
            })?;
        let response = self
            .client
            .send(request)
            .await
            .map_err(|e| WriteError::Transient {
                message: format!("request failed: {e}"),
                retry_after: None,
            })?;
        let code = response.status().as_u16();
        if (200..300).contains(&code) {
            return Ok(());
        }
        let retry_after = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body =
            response
                .into_body()
                .collect_bytes()
                .await
                .map_err(|e| WriteError::Transient {
                    message: format!("reading the answer failed: {e}"),
                    retry_after: None,
                })?;
        Err(classify_status(code, &body, retry_after))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Snapshot, SnapshotHeader, write_snapshot};
    use std::collections::HashMap;
    use std::sync::atomic::AtomicUsize;

    /// Answers each node's attempts from a script; records concurrency.
    struct Scripted {
        script: Mutex<HashMap<String, Vec<Result<(), WriteError>>>>,
        in_flight: AtomicUsize,
        max_in_flight: AtomicUsize,
        calls: AtomicUsize,
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
            }
        }
    }

    impl NodeWriter for Scripted {
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
        })
    }

    fn items(n: usize) -> Vec<WriteItem> {
        (0..n)
            .map(|i| WriteItem {
                node: format!("n{i}"),
                patch: Value::Array(vec![]),
                verify: None,
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
        let stop = AtomicBool::new(false);
        let outcomes = execute(&writer, &items(4), &config, None, &stop, |_| {})
            .await
            .unwrap();
        let kinds: Vec<(OutcomeKind, u32)> =
            outcomes.iter().map(|o| (o.kind, o.attempts)).collect();
        assert_eq!(
            kinds,
            vec![
                (OutcomeKind::Applied, 3),
                (OutcomeKind::Conflict, 1),
                (OutcomeKind::Failed, 1),
                (OutcomeKind::Failed, 3),
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

    #[tokio::test(start_paused = true)]
    async fn honours_retry_after() {
        let writer = Scripted::new(vec![("n0", vec![transient(Some(7)), Ok(())])]);
        let start = tokio::time::Instant::now();
        let stop = AtomicBool::new(false);
        execute(
            &writer,
            &items(1),
            &ExecutorConfig::default(),
            None,
            &stop,
            |_| {},
        )
        .await
        .unwrap();
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
        let stop = AtomicBool::new(false);
        let mut seen = 0;
        execute(&writer, &items(40), &config, None, &stop, |_| seen += 1)
            .await
            .unwrap();
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
        let stop = AtomicBool::new(false);
        let outcomes = execute(&writer, &items(10), &config, None, &stop, |o| {
            if o.node == "n2" {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .await
        .unwrap();
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
    async fn every_outcome_is_journaled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let header = SnapshotHeader::new("t", "0", "ctx", "srv", vec![], "set", &[]);
        let mut journal = write_snapshot(&path, &header).unwrap();
        let writer = Scripted::new(vec![
            ("n0", vec![]),
            ("n1", vec![Err(WriteError::Conflict("x".into()))]),
            ("n2", vec![]),
        ]);
        let stop = AtomicBool::new(false);
        execute(
            &writer,
            &items(3),
            &ExecutorConfig::default(),
            Some(&mut journal),
            &stop,
            |_| {},
        )
        .await
        .unwrap();
        drop(journal);
        let snap = Snapshot::load(&path).unwrap();
        assert_eq!(snap.outcome_of("n0"), Some(OutcomeKind::Applied));
        assert_eq!(snap.outcome_of("n1"), Some(OutcomeKind::Conflict));
        assert_eq!(snap.outcome_of("n2"), Some(OutcomeKind::Applied));
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
}
