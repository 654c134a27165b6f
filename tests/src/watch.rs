//! Watches (`?watch=true` on a collection): a chunked stream of `{"type": …, "object": …}`
//! lines, as kube-apiserver sends them to `kubectl get -w`, `kubectl wait`, `rollout
//! status` and informers.
//!
//! - Without a `resourceVersion` (or with `0`) the stream starts with an `ADDED` event per
//!   object selected now, in key order; with one, it replays the changes after it from the
//!   store's window of recent changes, and a version older than the window is answered with
//!   an `ERROR` event (410 Expired), as a compacted history is.
//! - A change that moves an object into or out of a selector's selection is `ADDED` or
//!   `DELETED` for that watch, as the watch cache reports it.
//! - `timeoutSeconds` ends the stream; without it the server ends it after 30 minutes (the
//!   real server picks 30–60). A watcher that falls 1,024 changes behind is cut off.
//! - With server-side printing (`kubectl get nodes -w`), each event holds a one-row node
//!   Table; only the first carries the column definitions.
//! - `sendInitialEvents=true` with `allowWatchBookmarks=true` ends the initial events with
//!   the `k8s.io/initial-events-end` bookmark (the watch-list protocol).

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};

use crate::Body;
use crate::apimachinery::Selector;
use crate::resources::Resource;
use crate::status::ApiError;
use crate::store::{FieldSelector, Store, Stored, WatchEvent, with_type_meta};

/// How long a watch without `timeoutSeconds` lasts.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// What a watch request asks for.
#[derive(Debug)]
pub struct Watch {
    pub resource: &'static Resource,
    /// The namespace of a namespaced URL; `None` for all namespaces.
    pub namespace: Option<String>,
    pub labels: Selector,
    pub fields: FieldSelector,
    /// Node Tables instead of objects (server-side printing).
    pub table: bool,
    pub timeout: Option<Duration>,
    /// The `k8s.io/initial-events-end` bookmark after the initial events.
    pub initial_events_bookmark: bool,
}

/// Starts a watch: what is sent first is decided under the store's lock, so no change falls
/// between the initial events and the followed ones.
pub fn start(
    store: &Mutex<Store>,
    watch: Watch,
    resource_version: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    let from = match resource_version.unwrap_or_default() {
        "" | "0" => None,
        rv => Some(rv.parse::<u64>().map_err(|e| {
            ApiError::without_reason(
                500,
                format!(
                    "resourceVersion: Invalid value: {}: strconv.ParseUint: parsing {}: {}",
                    crate::apimachinery::field::go_quote(rv),
                    crate::apimachinery::field::go_quote(rv),
                    if e.to_string().contains("too large") {
                        "value out of range"
                    } else {
                        "invalid syntax"
                    }
                ),
            )
        })?),
    };
    let mut first: Vec<Bytes> = Vec::new();
    let mut encoder = Encoder {
        resource: watch.resource,
        table: watch.table,
        columns_sent: false,
    };
    let changes = {
        let store = store.lock().expect("store");
        match from {
            None => {
                let (now, changes) =
                    store.snapshot_and_subscribe(watch.resource, watch.namespace.as_deref());
                for (_, stored) in now
                    .iter()
                    .filter(|(_, stored)| stored.selected(&watch.labels, &watch.fields))
                {
                    first.push(encoder.event(Seen {
                        change: "ADDED",
                        object: stored,
                        resource_version: None,
                    }));
                }
                if watch.initial_events_bookmark {
                    first.push(encoder.bookmark(store.resource_version()));
                }
                Some(changes)
            }
            Some(rv) => match store.changes_since(rv) {
                Ok((past, changes)) => {
                    for e in &past {
                        if let Some(seen) = watch.sees(e) {
                            first.push(encoder.event(seen));
                        }
                    }
                    Some(changes)
                }
                Err(too_old) => {
                    first.push(error_event(&format!(
                        "too old resource version: {} ({})",
                        too_old.asked, too_old.oldest
                    )));
                    None
                }
            },
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        for line in first {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        let Some(mut changes) = changes else {
            return;
        };
        let deadline = tokio::time::sleep(watch.timeout.unwrap_or(DEFAULT_TIMEOUT));
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = tx.closed() => return,
                change = changes.recv() => match change {
                    Ok(e) => {
                        if let Some(seen) = watch.sees(&e)
                            && tx.send(encoder.event(seen)).await.is_err()
                        {
                            return;
                        }
                    }
                    // Fallen behind or shut down: the client watches again.
                    Err(_) => return,
                },
            }
        }
    });
    let lines = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|line| (Ok::<_, std::convert::Infallible>(Frame::data(line)), rx))
    });
    Ok(Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(StreamBody::new(lines).boxed_unsync())
        .expect("valid response"))
}

impl Watch {
    /// What this watch reports of a change, if anything: the event type, the object, and
    /// the version to put on it when it is not the object's own.
    fn sees<'e>(&self, e: &'e WatchEvent) -> Option<Seen<'e>> {
        if e.plural != self.resource.plural
            || self.namespace.as_ref().is_some_and(|ns| *ns != e.namespace)
        {
            return None;
        }
        let now = e.object.selected(&self.labels, &self.fields);
        let seen = |change, object| Seen {
            change,
            object,
            resource_version: None,
        };
        match (e.change, &e.previous) {
            ("MODIFIED", Some(previous)) => {
                match (previous.selected(&self.labels, &self.fields), now) {
                    (true, true) => Some(seen("MODIFIED", &e.object)),
                    (false, true) => Some(seen("ADDED", &e.object)),
                    // The object as this watch last saw it, at the change's version (the
                    // watch cache's `convertToWatchEvent`).
                    (true, false) => Some(Seen {
                        change: "DELETED",
                        object: previous,
                        resource_version: Some(e.resource_version),
                    }),
                    (false, false) => None,
                }
            }
            (change, _) if now => Some(seen(change, &e.object)),
            _ => None,
        }
    }
}

/// One event as a watch sends it.
struct Seen<'e> {
    change: &'static str,
    object: &'e Stored,
    resource_version: Option<u64>,
}

struct Encoder {
    resource: &'static Resource,
    table: bool,
    columns_sent: bool,
}

impl Encoder {
    fn event(&mut self, seen: Seen<'_>) -> Bytes {
        let change = seen.change;
        let mut object = with_type_meta(self.resource, &seen.object.json);
        if let Some(rv) = seen.resource_version {
            let mut value: Value = serde_json::from_slice(&object).unwrap_or(Value::Null);
            value["metadata"]["resourceVersion"] = Value::from(rv.to_string());
            object = Bytes::from(serde_json::to_vec(&value).expect("values serialise"));
        }
        if self.table && crate::table::printable(self.resource.kind) {
            let value: Value = serde_json::from_slice(&object).unwrap_or(Value::Null);
            let metadata = json!({"resourceVersion": value["metadata"]["resourceVersion"]});
            let mut table = crate::table::table(
                self.resource.kind,
                &[value],
                metadata,
                jiff::Timestamp::now(),
            );
            if self.columns_sent {
                table["columnDefinitions"] = Value::Null;
            }
            self.columns_sent = true;
            return line(&json!({"type": change, "object": table}));
        }
        let mut out = Vec::with_capacity(object.len() + 40);
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(change.as_bytes());
        out.extend_from_slice(b"\",\"object\":");
        out.extend_from_slice(&object);
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    }

    fn bookmark(&self, resource_version: u64) -> Bytes {
        line(&json!({"type": "BOOKMARK", "object": {
            "kind": self.resource.kind,
            "apiVersion": self.resource.api_version(),
            "metadata": {
                "resourceVersion": resource_version.to_string(),
                "annotations": {"k8s.io/initial-events-end": "true"},
            },
        }}))
    }
}

fn error_event(message: &str) -> Bytes {
    line(&json!({"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Expired", "code": 410,
    }}))
}

fn line(value: &Value) -> Bytes {
    let mut out = serde_json::to_vec(value).expect("values serialise");
    out.push(b'\n');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    fn nodes() -> &'static Resource {
        find("", "v1", "nodes").unwrap()
    }

    async fn lines(response: Response<Body>) -> Vec<Value> {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn watch(labels: &str) -> Watch {
        Watch {
            resource: nodes(),
            namespace: None,
            labels: Selector::parse(labels).unwrap(),
            fields: FieldSelector::default(),
            table: false,
            timeout: Some(Duration::from_millis(50)),
            initial_events_bookmark: false,
        }
    }

    #[tokio::test]
    async fn replays_changes_and_turns_selection_moves_into_added_and_deleted() {
        let store = Mutex::new(Store::new());
        let node = |name: &str, pool: &str| {
            json!({"apiVersion": "v1", "kind": "Node",
                   "metadata": {"name": name, "labels": {"pool": pool}}})
        };
        let start = {
            let mut s = store.lock().unwrap();
            s.create(nodes(), None, node("a", "gpu"), false).unwrap();
            s.resource_version()
        };
        {
            let mut s = store.lock().unwrap();
            s.create(nodes(), None, node("b", "gpu"), false).unwrap();
            let patch = json!({"metadata": {"labels": {"pool": "cpu"}}});
            s.patch(
                nodes(),
                None,
                "a",
                crate::store::PatchType::Merge,
                &patch,
                false,
            )
            .unwrap();
            s.delete(nodes(), None, "b", false, None).unwrap();
        }
        let events = lines(start_watch(&store, "pool=gpu", Some(start))).await;
        let seen: Vec<(&str, &str)> = events
            .iter()
            .map(|e| {
                (
                    e["type"].as_str().unwrap(),
                    e["object"]["metadata"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(seen, [("ADDED", "b"), ("DELETED", "a"), ("DELETED", "b")]);
        // Moved out of the selection: reported as it was, at the change's version.
        assert_eq!(events[1]["object"]["metadata"]["labels"]["pool"], "gpu");
        assert_ne!(
            events[1]["object"]["metadata"]["resourceVersion"],
            events[0]["object"]["metadata"]["resourceVersion"]
        );
        assert_eq!(events[0]["object"]["kind"], "Node");
        let initial = lines(start_watch(&store, "", None)).await;
        assert_eq!(initial.len(), 1);
        assert_eq!(initial[0]["type"], "ADDED");
        assert_eq!(initial[0]["object"]["metadata"]["labels"]["pool"], "cpu");
    }

    fn start_watch(store: &Mutex<Store>, labels: &str, rv: Option<u64>) -> Response<Body> {
        let rv = rv.map(|v| v.to_string());
        start(store, watch(labels), rv.as_deref()).unwrap()
    }
}
