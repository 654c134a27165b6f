//! The write executor: applies per-node patches with bounded concurrency, retries what is
//! transient, never retries a failed precondition, reports progress and journals outcomes.
//!
//! Outcomes never lie. Once an attempt may have reached the server without its answer
//! reaching us (a dropped connection, a timeout, a 5xx), the node's outcome is decided by
//! re-reading it and comparing it with the plan ([`placekit_core::plan::observe`]): the planned
//! values mean applied, the values read mean not applied, anything else is a conflict that
//! names what changed. If even the re-read fails, the outcome is `unknown`, never
//! `failed`. A conflict is always re-read so the report can say which key changed to what.
//!
//! The executor is generic over a [`NodeWriter`], so its retry and journaling logic is
//! tested without a server; [`KubeNodeWriter`] is the real one.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use crate::interrupt::Interrupt;
use placekit_core::plan::{NodePlan, NodeState, Observed, observe};
use placekit_core::snapshot::{Journal, OutcomeKind};

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
        /// The request may have been carried out although no success came back (a 5xx, a
        /// dropped connection, a timeout); false for a 429, which is refused unprocessed.
        maybe_applied: bool,
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

    /// Reads `node` as it is now (`None`: it does not exist).
    fn read_node(
        &self,
        node: &str,
    ) -> impl Future<Output = Result<Option<NodeState>, WriteError>> + Send;
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
    /// Nodes in a row that may exhaust their retries before the run stops: the server is
    /// gone, and every further node would only wait out its own retries.
    pub breaker: usize,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            concurrency: 16,
            max_attempts: 5,
            base_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(30),
            dry_run: false,
            breaker: 3,
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
    /// The plan the patch comes from: a re-read of the node is compared with it to decide
    /// an outcome the answers could not (`None`: no re-read, the outcome stays unknown).
    pub plan: Option<NodePlan>,
}

impl WriteItem {
    /// The write for a plan.
    pub fn from_plan(plan: &NodePlan) -> Self {
        WriteItem {
            node: plan.node().to_string(),
            patch: plan.json_patch(),
            plan: Some(plan.clone()),
        }
    }
}

/// What a run did: every node's outcome, and whether the journal kept up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// One outcome per item, in the order of the items.
    pub outcomes: Vec<NodeOutcome>,
    /// Set when the journal could not be written (a full disk): the run stopped starting
    /// writes at the first failure, and these are the nodes whose outcome is missing
    /// from the journal.
    pub journal_failure: Option<JournalFailure>,
}

/// The snapshot journal stopped accepting records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalFailure {
    /// The first write error.
    pub error: String,
    /// Written nodes whose outcome is not in the journal (rollback compares them with the
    /// live node instead of trusting a record).
    pub unrecorded: Vec<String>,
    /// `false`: every record was written and only the final flush to disk failed.
    pub during_writes: bool,
}

fn backoff(config: &ExecutorConfig, attempt: u32, retry_after: Option<Duration>) -> Duration {
    let exponential = config
        .base_backoff
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    retry_after.unwrap_or(exponential).min(config.max_backoff)
}

/// Re-reads after which an outcome is given up as unknown.
const READ_ATTEMPTS: u32 = 3;

/// What a re-read of the node says, retried a few times: an error of the check is never
/// taken as "not applied".
async fn settle<W: NodeWriter>(
    writer: &W,
    item: &WriteItem,
    config: &ExecutorConfig,
    interrupt: &Interrupt,
) -> Option<Observed> {
    let plan = item.plan.as_ref()?;
    for attempt in 1..=READ_ATTEMPTS {
        match writer.read_node(&item.node).await {
            Ok(Some(now)) => return Some(observe(plan, &now)),
            Ok(None) => {
                return Some(Observed::Changed(vec![placekit_core::plan::Difference {
                    item: "node".into(),
                    read: Some(plan.node().to_string()),
                    now: None,
                    planned: Some(plan.node().to_string()),
                }]));
            }
            Err(WriteError::Transient { retry_after, .. }) if attempt < READ_ATTEMPTS => {
                // After an interrupt the next re-read goes out at once.
                tokio::select! {
                    () = tokio::time::sleep(backoff(config, attempt, retry_after)) => {}
                    () = interrupt.reached(1) => {}
                }
            }
            Err(_) => return None,
        }
    }
    None
}

fn differences_text(differences: &[placekit_core::plan::Difference]) -> String {
    if differences.is_empty() {
        return "the node changed since it was read".into();
    }
    differences
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The outcome once the answers could not tell (`uncertain`) or a conflict needs its story.
async fn decide<W: NodeWriter>(
    writer: &W,
    item: &WriteItem,
    config: &ExecutorConfig,
    interrupt: &Interrupt,
    uncertain: bool,
    failure: (OutcomeKind, String),
) -> (OutcomeKind, Option<String>) {
    match settle(writer, item, config, interrupt).await {
        Some(Observed::Applied) if uncertain => (
            OutcomeKind::Applied,
            Some("applied by an attempt whose answer was lost (confirmed by re-reading the node)".into()),
        ),
        // Our write failed its precondition, yet the node has the planned values: someone
        // else made the same change meanwhile. Not ours to claim (or to undo later).
        Some(Observed::Applied) => (
            OutcomeKind::Conflict,
            Some(
                "someone else set the same values meanwhile; this command wrote nothing to this node".into(),
            ),
        ),
        Some(Observed::NotApplied) if failure.0 == OutcomeKind::Conflict => (
            OutcomeKind::Conflict,
            Some(
                "the node changed since it was read (another label or its taints), so nothing was written; run the command again to plan from the new state".into(),
            ),
        ),
        Some(Observed::NotApplied) => (failure.0, Some(failure.1)),
        Some(Observed::Changed(differences)) => (
            OutcomeKind::Conflict,
            Some(format!("changed by someone else: {}", differences_text(&differences))),
        ),
        None if uncertain => (
            OutcomeKind::Unknown,
            Some(format!(
                "{} and the node could not be re-read: the change may or may not have been made (rollback checks it)",
                failure.1
            )),
        ),
        None => (failure.0, Some(failure.1)),
    }
}

async fn write_one<W: NodeWriter>(
    writer: &W,
    item: &WriteItem,
    config: &ExecutorConfig,
    broken: &AtomicBool,
    interrupt: &Interrupt,
) -> NodeOutcome {
    let mut attempts = 0;
    // Set once an attempt may have reached the server without its answer reaching us.
    let mut uncertain = false;
    // Once interrupted, a write gets one more attempt, not the rest of its retries.
    let mut attempted_after_interrupt = false;
    loop {
        let interrupted_before = interrupt.is_set();
        attempts += 1;
        let result = writer
            .patch_node(&item.node, &item.patch, config.dry_run)
            .await;
        let (kind, message) = match result {
            Ok(()) if uncertain => (
                OutcomeKind::Applied,
                Some(format!("applied at attempt {attempts}")),
            ),
            Ok(()) => (OutcomeKind::Applied, None),
            // A dry run changes nothing, so its answers are the whole story.
            Err(WriteError::Conflict(m)) if config.dry_run => (OutcomeKind::Conflict, Some(m)),
            Err(e @ WriteError::Rejected { .. }) if config.dry_run || !uncertain => {
                (OutcomeKind::Failed, Some(e.to_string()))
            }
            // After an attempt that may have applied, a conflict or rejection may be the
            // answer to our own earlier write: the node decides.
            Err(e @ (WriteError::Conflict(_) | WriteError::Rejected { .. })) => {
                let stated = match e {
                    WriteError::Conflict(m) => (OutcomeKind::Conflict, m),
                    e => (OutcomeKind::Failed, e.to_string()),
                };
                decide(writer, item, config, interrupt, uncertain, stated).await
            }
            Err(WriteError::Transient {
                message,
                retry_after,
                maybe_applied,
            }) => {
                uncertain |= maybe_applied;
                attempted_after_interrupt |= interrupted_before;
                // Once the breaker is open, writes in flight stop retrying too.
                if attempts < config.max_attempts
                    && !broken.load(Ordering::SeqCst)
                    && !attempted_after_interrupt
                {
                    // An interrupt cuts the backoff short: the one attempt left is made now.
                    tokio::select! {
                        () = tokio::time::sleep(backoff(config, attempts, retry_after)) => {}
                        () = interrupt.reached(1) => {}
                    }
                    continue;
                }
                let gave_up = format!("{message} (gave up after {attempts} attempts)");
                if config.dry_run {
                    (OutcomeKind::Failed, Some(gave_up))
                } else {
                    decide(
                        writer,
                        item,
                        config,
                        interrupt,
                        uncertain,
                        (OutcomeKind::Failed, gave_up),
                    )
                    .await
                }
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

/// Applies `items` with at most `config.concurrency` writes in flight.
///
/// Every outcome is appended to `journal` (when given) as soon as it is known, then passed
/// to `on_outcome` (progress bars, live output). After the first `interrupt` no new write
/// starts, writes in flight get one more attempt at most, and the rest are reported
/// `NotAttempted`; after the second, writes still in flight are abandoned and reported
/// `Unknown`. A journal that cannot be written (a full disk) stops new writes the same way;
/// the outcomes are all returned, with the nodes the journal is missing.
/// Returns the outcomes in the order of `items`.
pub async fn execute<W: NodeWriter>(
    writer: &W,
    items: &[WriteItem],
    config: &ExecutorConfig,
    journal: Option<&mut Journal>,
    interrupt: &Interrupt,
    mut on_outcome: impl FnMut(&NodeOutcome),
) -> Execution {
    // Only this loop writes the journal (the writes themselves never touch it).
    let mut journal = journal;
    let journal_broken = AtomicBool::new(false);
    let mut journal_failure: Option<JournalFailure> = None;
    // Records an outcome; after the first failure each later outcome is still tried (the
    // failed write was cut back, so a record that fits lands), and the misses are listed.
    let mut record = |outcome: &NodeOutcome| {
        if let Some(j) = journal.as_mut()
            && let Err(e) = j.record_outcome(&outcome.node, outcome.kind, outcome.message.clone())
        {
            journal_broken.store(true, Ordering::SeqCst);
            let failure = journal_failure.get_or_insert_with(|| JournalFailure {
                error: e.to_string(),
                unrecorded: Vec::new(),
                during_writes: true,
            });
            // A node never written needs no record: rollback finds nothing of ours there.
            if outcome.attempts > 0 {
                failure.unrecorded.push(outcome.node.clone());
            }
        }
    };
    let mut results: Vec<Option<NodeOutcome>> = vec![None; items.len()];
    // The circuit breaker: nodes in a row that gave up on an unanswering server.
    let exhausted_in_a_row = AtomicUsize::new(0);
    let broken = AtomicBool::new(false);
    // Which writes were sent: after a second interrupt they are the ones left undecided.
    let started: Vec<AtomicBool> = items.iter().map(|_| AtomicBool::new(false)).collect();
    let (broken, exhausted_in_a_row, journal_broken, started) =
        (&broken, &exhausted_in_a_row, &journal_broken, &started);
    let mut stream = futures::stream::iter(items.iter().enumerate())
        .map(|(i, item)| async move {
            let not_attempted = |why: String| NodeOutcome {
                node: item.node.clone(),
                kind: OutcomeKind::NotAttempted,
                message: Some(why),
                attempts: 0,
            };
            let outcome = if let Some(signal) = interrupt.signal() {
                not_attempted(format!("the run was interrupted ({signal}) before this node"))
            } else if journal_broken.load(Ordering::SeqCst) {
                not_attempted(
                    "the snapshot journal could not be written, so no further write was started"
                        .into(),
                )
            } else if broken.load(Ordering::SeqCst) {
                not_attempted(format!(
                    "not attempted: the API server stopped answering ({} nodes in a row gave up after their retries)",
                    config.breaker
                ))
            } else {
                started[i].store(true, Ordering::SeqCst);
                write_one(writer, item, config, broken, interrupt).await
            };
            (i, outcome)
        })
        .buffer_unordered(config.concurrency.max(1));
    loop {
        let next = tokio::select! {
            // An outcome already known wins over the second interrupt.
            biased;
            next = stream.next() => next,
            // The second interrupt: stop waiting for the writes in flight.
            () = interrupt.reached(2) => break,
        };
        let Some((i, outcome)) = next else { break };
        if outcome.attempts > 0 {
            let gave_up = outcome
                .message
                .as_deref()
                .is_some_and(|m| m.contains("gave up after"));
            if gave_up {
                let n = exhausted_in_a_row.fetch_add(1, Ordering::SeqCst) + 1;
                if config.breaker > 0 && n >= config.breaker {
                    broken.store(true, Ordering::SeqCst);
                }
            } else {
                exhausted_in_a_row.store(0, Ordering::SeqCst);
            }
        }
        record(&outcome);
        on_outcome(&outcome);
        results[i] = Some(outcome);
    }
    drop(stream);
    // Left without an outcome only by a second interrupt: in flight (perhaps applied) or
    // never started.
    for ((item, slot), started) in items.iter().zip(results.iter_mut()).zip(started) {
        if slot.is_none() {
            let outcome = if started.load(Ordering::SeqCst) {
                NodeOutcome {
                    node: item.node.clone(),
                    kind: OutcomeKind::Unknown,
                    message: Some(
                        "interrupted twice while this write was in flight: it may or may not have been made (rollback checks it)"
                            .into(),
                    ),
                    attempts: 1,
                }
            } else {
                NodeOutcome {
                    node: item.node.clone(),
                    kind: OutcomeKind::NotAttempted,
                    message: Some(format!(
                        "the run was interrupted ({}) before this node",
                        interrupt.signal().unwrap_or("SIGINT")
                    )),
                    attempts: 0,
                }
            };
            record(&outcome);
            on_outcome(&outcome);
            *slot = Some(outcome);
        }
    }
    if let Some(j) = journal.as_mut()
        && let Err(e) = j.sync()
        && journal_failure.is_none()
    {
        journal_failure = Some(JournalFailure {
            error: e.to_string(),
            unrecorded: Vec::new(),
            during_writes: false,
        });
    }
    Execution {
        outcomes: results
            .into_iter()
            .map(|o| o.expect("every item yields an outcome"))
            .collect(),
        journal_failure,
    }
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
            maybe_applied: code != 429,
        },
        _ => WriteError::Rejected {
            code,
            reason,
            message,
        },
    }
}

impl NodeWriter for KubeNodeWriter {
    async fn read_node(&self, node: &str) -> Result<Option<NodeState>, WriteError> {
        let api: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(self.client.clone());
        match api.get_opt(node).await {
            Ok(Some(object)) => {
                NodeState::from_node(&object)
                    .map(Some)
                    .map_err(|e| WriteError::Rejected {
                        code: 0,
                        reason: "Unreadable".into(),
                        message: e.to_string(),
                    })
            }
            Ok(None) => Ok(None),
            Err(kube::Error::Api(status)) if status.code == 429 || status.code >= 500 => {
                Err(WriteError::Transient {
                    message: format!("{} {}: {}", status.code, status.reason, status.message),
                    retry_after: None,
                    maybe_applied: false,
                })
            }
            Err(kube::Error::Api(status)) => Err(WriteError::Rejected {
                code: status.code,
                reason: status.reason,
                message: status.message,
            }),
            Err(e) => Err(WriteError::Transient {
                message: format!("request failed: {e}"),
                retry_after: None,
                maybe_applied: false,
            }),
        }
    }

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
                maybe_applied: true,
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
                    maybe_applied: true,
                })?;
        Err(classify_status(code, &body, retry_after))
    }
}

#[cfg(test)]
mod tests;
