//! Change plans: from a node's current state and the requested label/taint changes to a
//! per-node plan, rendered as a diff for people and as a conditional JSON Patch for the API.
//!
//! # The conditional write
//!
//! Every touched label key is asserted with a JSON Patch `test` before it is changed:
//! `{"op":"test","path":"/metadata/labels/<key>","value":"<current>"}` for a key that has a
//! value, and `"value": null` for a key that must still be absent. The API server applies
//! JSON Patch with evanphx/json-patch v4, whose `test` succeeds on a missing member when the
//! expected value is `null`, so "still absent" is asserted per key and an unrelated label
//! change by someone else never causes a conflict. (A server that follows RFC 6902 to the
//! letter fails such a test instead: that is a reported conflict, never an overwrite.)
//! When a node has no labels at all, the API server omits the map, so the plan asserts
//! `/metadata/labels` is null and adds the whole map.
//!
//! When taints change, the whole current taint list is asserted (`/spec/taints`, or `null`
//! when the node has none) and replaced: taints are a list without per-key addressing, so a
//! concurrent taint change to the same node is a conflict by design.
//!
//! No `resourceVersion` precondition is used: status heartbeats bump it every few seconds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::syntax::{LabelChange, Taint, TaintMatcher};

/// What placekit reads of a node before changing it, and stores in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeState {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub taints: Vec<Taint>,
    /// Only the annotations placekit owns (prefix [`PLACEKIT_ANNOTATION_PREFIX`]), such as
    /// the record of imported labels; other annotations are never read or written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The label keys nfd-master records as its own (its `feature-labels` annotation): read
    /// to warn that a hand edit will not last, never written, never in a snapshot.
    #[serde(skip)]
    pub nfd_keys: std::collections::BTreeSet<String>,
    /// The node has annotations placekit does not own (the kubelet's, nfd-master's...): the
    /// annotations map exists even when [`Self::annotations`] is empty, so a patch adds a key
    /// to it rather than creating it.
    #[serde(skip)]
    pub other_annotations: bool,
}

/// Annotations under this prefix belong to placekit.
pub const PLACEKIT_ANNOTATION_PREFIX: &str = "placekit.dev/";

impl NodeState {
    /// Reads the fields placekit needs from a Node object as the API returns it.
    ///
    /// Taints are taken from the JSON form so that `value` and `timeAdded` stay verbatim.
    pub fn from_node(node: &k8s_openapi::api::core::v1::Node) -> Result<Self, serde_json::Error> {
        let taints = match node.spec.as_ref().and_then(|s| s.taints.as_ref()) {
            Some(taints) => serde_json::from_value(serde_json::to_value(taints)?)?,
            None => Vec::new(),
        };
        Ok(NodeState {
            name: node.metadata.name.clone().unwrap_or_default(),
            uid: node.metadata.uid.clone().unwrap_or_default(),
            resource_version: node.metadata.resource_version.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints,
            annotations: node
                .metadata
                .annotations
                .iter()
                .flatten()
                .filter(|(k, _)| k.starts_with(PLACEKIT_ANNOTATION_PREFIX))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            other_annotations: node
                .metadata
                .annotations
                .iter()
                .flatten()
                .any(|(k, _)| !k.starts_with(PLACEKIT_ANNOTATION_PREFIX)),
            nfd_keys: crate::label_controllers::nfd_owned_keys(
                node.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(crate::label_controllers::NFD_FEATURE_LABELS_ANNOTATION))
                    .map(String::as_str),
            ),
        })
    }
}

/// What a command asks to change on every target node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeRequest {
    pub labels: Vec<LabelChange>,
    /// Changes to placekit-owned annotations (always applied, no `--overwrite` needed).
    pub annotations: Vec<LabelChange>,
    pub add_taints: Vec<Taint>,
    pub remove_taints: Vec<TaintMatcher>,
    /// Allow changing a label that already has another value, or replacing the value of a
    /// taint with the same key and effect (kubectl's `--overwrite`).
    pub overwrite: bool,
}

/// One label key's change on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelDelta {
    pub key: String,
    /// `None`: the key did not exist.
    pub before: Option<String>,
    /// `None`: the key is removed.
    pub after: Option<String>,
}

/// Why a node's plan cannot be applied as asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Blocker {
    /// The key has another value and `--overwrite` was not given.
    #[serde(rename_all = "camelCase")]
    LabelHasOtherValue {
        key: String,
        current: String,
        wanted: String,
    },
    /// A taint with the same key and effect but another value exists and `--overwrite` was
    /// not given.
    #[serde(rename_all = "camelCase")]
    TaintHasOtherValue { existing: Taint, wanted: Taint },
    /// Another import source (per the node's provenance record) owns the key and
    /// `--overwrite` was not given.
    #[serde(rename_all = "camelCase")]
    ImportedByOtherSource {
        key: String,
        owner: String,
        current: String,
        wanted: String,
    },
}

impl std::fmt::Display for Blocker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Blocker::LabelHasOtherValue {
                key,
                current,
                wanted,
            } => write!(
                f,
                "label {key} is {current:?}, not {wanted:?} (use --overwrite to change it)"
            ),
            Blocker::ImportedByOtherSource {
                key,
                owner,
                current,
                wanted,
            } => write!(
                f,
                "label {key} is {current:?}, imported by {owner}, not {wanted:?} (use --overwrite to take it over)"
            ),
            Blocker::TaintHasOtherValue { existing, wanted } => write!(
                f,
                "taint {existing} already exists with key {} and effect {} (use --overwrite to replace it with {wanted})",
                existing.key, existing.effect
            ),
        }
    }
}

/// Something worth telling the user that does not stop the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Note {
    /// A taint to remove was asked with a value, and the node has the same key and effect
    /// with another value: left in place (unlike `kubectl taint ...-`).
    #[serde(rename_all = "camelCase")]
    TaintValueMismatch { wanted: String, found: Taint },
    /// A taint to remove is not on the node.
    #[serde(rename_all = "camelCase")]
    TaintNotPresent { wanted: String },
    /// `import` leaves a key nfd-master owns on the node: nfd-master would re-apply its own
    /// value, so the two would fight.
    #[serde(rename_all = "camelCase")]
    OwnedByNfd { key: String },
}

impl Note {
    /// A note that is the command's problem (exit 1), not a warning: a taint asked to be
    /// released that has another value is left in place.
    pub fn is_problem(&self) -> bool {
        matches!(self, Note::TaintValueMismatch { .. })
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::TaintValueMismatch { wanted, found } => write!(
                f,
                "taint {found} has the same key and effect as {wanted} but another value: left in place"
            ),
            Note::TaintNotPresent { wanted } => write!(f, "taint {wanted} is not present"),
            Note::OwnedByNfd { key } => write!(
                f,
                "{key} is owned by nfd-master (the node's nfd.node.kubernetes.io/feature-labels): not imported, since nfd-master would re-apply its own value; change it where nfd-master's features come from"
            ),
        }
    }
}

/// The plan for one node: what changes, what blocks it, and the state it was computed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePlan {
    /// The state the plan was computed from (the snapshot's before-state).
    pub before: NodeState,
    /// Label keys that actually change, in key order.
    pub label_changes: Vec<LabelDelta>,
    /// The full taint list after the change (equal to `before.taints` when untouched).
    pub taints_after: Vec<Taint>,
    /// Placekit-owned annotation keys that change, in key order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotation_changes: Vec<LabelDelta>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<Blocker>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
}

impl NodePlan {
    pub fn node(&self) -> &str {
        &self.before.name
    }

    pub fn taints_changed(&self) -> bool {
        self.taints_after != self.before.taints
    }

    /// Nothing to write on this node.
    pub fn is_noop(&self) -> bool {
        self.label_changes.is_empty()
            && self.annotation_changes.is_empty()
            && !self.taints_changed()
    }

    pub fn is_blocked(&self) -> bool {
        !self.blockers.is_empty()
    }

    /// Taints in the plan's result that were not there before.
    pub fn taints_added(&self) -> Vec<Taint> {
        self.taints_after
            .iter()
            .filter(|t| !self.before.taints.contains(t))
            .cloned()
            .collect()
    }

    /// Taints there before that the plan removes.
    pub fn taints_removed(&self) -> Vec<Taint> {
        self.before
            .taints
            .iter()
            .filter(|t| !self.taints_after.contains(t))
            .cloned()
            .collect()
    }

    /// The labels after the change.
    pub fn labels_after(&self) -> BTreeMap<String, String> {
        apply_deltas(&self.before.labels, &self.label_changes)
    }

    /// The placekit-owned annotations after the change.
    pub fn annotations_after(&self) -> BTreeMap<String, String> {
        apply_deltas(&self.before.annotations, &self.annotation_changes)
    }

    /// The conditional JSON Patch (RFC 6902) that applies this plan; see the module docs.
    pub fn json_patch(&self) -> Value {
        let mut ops: Vec<Value> = Vec::new();
        map_patch_ops(
            &mut ops,
            "/metadata/labels",
            !self.before.labels.is_empty(),
            &self.label_changes,
        );
        // Only placekit's annotations are read, so the map may exist with none of them.
        map_patch_ops(
            &mut ops,
            "/metadata/annotations",
            !self.before.annotations.is_empty() || self.before.other_annotations,
            &self.annotation_changes,
        );
        if self.taints_changed() {
            let current = if self.before.taints.is_empty() {
                Value::Null
            } else {
                json!(self.before.taints)
            };
            ops.push(json!({"op": "test", "path": "/spec/taints", "value": current}));
            if self.taints_after.is_empty() {
                ops.push(json!({"op": "remove", "path": "/spec/taints"}));
            } else {
                ops.push(json!({"op": "add", "path": "/spec/taints", "value": self.taints_after}));
            }
        }
        Value::Array(ops)
    }

    /// A per-node diff of labels and taints (unified format, changed lines only with a
    /// little context), for the confirmation prompt and `--dry-run`.
    pub fn render_diff(&self) -> String {
        // placekit's own bookkeeping annotation is shown only when this plan changes it:
        // as an unchanged context line it would only clutter every diff.
        let no_annotations = BTreeMap::new();
        let (annotations_before, annotations_after) = if self.annotation_changes.is_empty() {
            (no_annotations.clone(), no_annotations)
        } else {
            (self.before.annotations.clone(), self.annotations_after())
        };
        let before = render_state(
            &self.before.labels,
            &self.before.taints,
            &annotations_before,
        );
        let after = render_state(&self.labels_after(), &self.taints_after, &annotations_after);
        let diff = similar::TextDiff::from_lines(&before, &after);
        let mut out = String::new();
        // Every string here is the cluster's (a node's kubelet can write its own labels and
        // annotations): escaped, so none can erase or forge a line of this or another
        // node's diff above the confirmation prompt.
        let node = crate::text::escaped(self.node());
        let _ = writeln!(out, "--- node/{node} (current)");
        let _ = writeln!(out, "+++ node/{node} (planned)");
        for group in diff.grouped_ops(1) {
            for op in group {
                for change in diff.iter_changes(&op) {
                    let sign = match change.tag() {
                        similar::ChangeTag::Delete => '-',
                        similar::ChangeTag::Insert => '+',
                        similar::ChangeTag::Equal => ' ',
                    };
                    let _ = write!(out, "{sign} {}", change.value());
                }
            }
        }
        out
    }
}

fn render_state(
    labels: &BTreeMap<String, String>,
    taints: &[Taint],
    annotations: &BTreeMap<String, String>,
) -> String {
    use crate::text::escaped;
    let mut out = String::new();
    for (k, v) in labels {
        let _ = writeln!(out, "label {}={}", escaped(k), escaped(v));
    }
    for t in taints {
        let _ = writeln!(out, "taint {}", escaped(&t.to_string()));
    }
    for (k, v) in annotations {
        let _ = writeln!(out, "annotation {}={}", escaped(k), escaped(v));
    }
    out
}

fn apply_deltas(
    base: &BTreeMap<String, String>,
    deltas: &[LabelDelta],
) -> BTreeMap<String, String> {
    let mut out = base.clone();
    for delta in deltas {
        match &delta.after {
            Some(v) => out.insert(delta.key.clone(), v.clone()),
            None => out.remove(&delta.key),
        };
    }
    out
}

/// The conditional operations for one string map (`/metadata/labels` or
/// `/metadata/annotations`): a `test` per touched key, then `add`/`replace`/`remove`; for a
/// map the API server omits (empty), a `test` that it is still absent and one `add` of it.
fn map_patch_ops(ops: &mut Vec<Value>, root: &str, map_exists: bool, deltas: &[LabelDelta]) {
    if deltas.is_empty() {
        return;
    }
    if !map_exists {
        let added: BTreeMap<&str, &str> = deltas
            .iter()
            .filter_map(|d| d.after.as_deref().map(|v| (d.key.as_str(), v)))
            .collect();
        if added.is_empty() {
            return;
        }
        ops.push(json!({"op": "test", "path": root, "value": null}));
        ops.push(json!({"op": "add", "path": root, "value": added}));
        return;
    }
    for delta in deltas {
        let path = format!("{root}/{}", escape_pointer_token(&delta.key));
        ops.push(json!({"op": "test", "path": path, "value": delta.before}));
        match (&delta.before, &delta.after) {
            (None, Some(v)) => ops.push(json!({"op": "add", "path": path, "value": v})),
            (Some(_), Some(v)) => ops.push(json!({"op": "replace", "path": path, "value": v})),
            (_, None) => ops.push(json!({"op": "remove", "path": path})),
        }
    }
}

/// The deltas that turn `current` into the requested values of `changes`.
fn map_deltas(current: &BTreeMap<String, String>, changes: &[LabelChange]) -> Vec<LabelDelta> {
    let mut out: Vec<LabelDelta> = changes
        .iter()
        .filter_map(|c| {
            let before = current.get(c.key()).cloned();
            let after = c.value().map(str::to_string);
            (before != after).then(|| LabelDelta {
                key: c.key().to_string(),
                before,
                after,
            })
        })
        .collect();
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// Escapes one JSON Pointer reference token (RFC 6901): `~` becomes `~0`, `/` becomes `~1`.
pub fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Reverses [`escape_pointer_token`].
pub fn unescape_pointer_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// One touched item whose live value is neither what the plan read nor what it wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// `label <key>`, `annotation <key>`, `taints` or `uid`.
    pub item: String,
    /// The value the plan was made from (`None`: absent).
    pub read: Option<String>,
    /// The value on the node now (`None`: absent).
    pub now: Option<String>,
    /// The value the plan writes (`None`: absent).
    pub planned: Option<String>,
}

/// A label value for messages: quoted, or `absent`.
pub fn quoted_or_absent(value: &Option<String>) -> String {
    value
        .as_deref()
        .map(|v| format!("{v:?}"))
        .unwrap_or_else(|| "absent".into())
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = quoted_or_absent;
        write!(
            f,
            "{} was {} when read and is {} now (this command would set {})",
            self.item,
            show(&self.read),
            show(&self.now),
            show(&self.planned)
        )
    }
}

/// What a fresh read of a node says about a plan's write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// Every touched item has the planned value: the write was made.
    Applied,
    /// Every touched item still has the value read: the write was not made.
    NotApplied,
    /// Someone else changed a touched item (or recreated the node).
    Changed(Vec<Difference>),
}

fn taints_text(taints: &[Taint]) -> String {
    let mut shown: Vec<String> = taints.iter().map(ToString::to_string).collect();
    shown.sort();
    shown.join(",")
}

/// Compares a node as it is now with a plan: was it applied, not applied, or changed by
/// someone else (and what)? Pure: the executor uses it after a lost answer or a conflict.
pub fn observe(plan: &NodePlan, now: &NodeState) -> Observed {
    if now.uid != plan.before.uid {
        return Observed::Changed(vec![Difference {
            item: "uid (the node was deleted and recreated)".into(),
            read: Some(plan.before.uid.clone()),
            now: Some(now.uid.clone()),
            planned: Some(plan.before.uid.clone()),
        }]);
    }
    let mut applied = true;
    let mut untouched = true;
    let mut differences = Vec::new();
    // Items still as read while others are as planned: only a concurrent writer mixes them.
    let mut not_planned = Vec::new();
    let mut compare =
        |item: String, read: Option<String>, live: Option<String>, planned: Option<String>| {
            applied &= live == planned;
            untouched &= live == read;
            let difference = Difference {
                item,
                read,
                now: live,
                planned,
            };
            if difference.now != difference.read && difference.now != difference.planned {
                differences.push(difference);
            } else if difference.now != difference.planned {
                not_planned.push(difference);
            }
        };
    for (what, deltas, live) in [
        ("label", &plan.label_changes, &now.labels),
        ("annotation", &plan.annotation_changes, &now.annotations),
    ] {
        for d in deltas {
            compare(
                format!("{what} {}", d.key),
                d.before.clone(),
                live.get(&d.key).cloned(),
                d.after.clone(),
            );
        }
    }
    if plan.taints_changed() {
        let text = |t: &[Taint]| Some(taints_text(t)).filter(|s| !s.is_empty());
        compare(
            "taints".into(),
            text(&plan.before.taints),
            text(&now.taints),
            text(&plan.taints_after),
        );
    }
    if applied {
        Observed::Applied
    } else if untouched {
        Observed::NotApplied
    } else if differences.is_empty() {
        Observed::Changed(not_planned)
    } else {
        Observed::Changed(differences)
    }
}

/// Plans one node. Never fails: problems are recorded as blockers so that a command can
/// list every blocking node/key at once before changing anything.
pub fn plan_node(state: &NodeState, request: &ChangeRequest) -> NodePlan {
    let mut label_changes = Vec::new();
    let mut blockers = Vec::new();
    let mut notes = Vec::new();

    for change in &request.labels {
        let key = change.key();
        let current = state.labels.get(key).cloned();
        match (current, change.value()) {
            (None, None) => {}
            (Some(cur), Some(wanted)) if cur == wanted => {}
            (Some(cur), Some(wanted)) if !request.overwrite => {
                blockers.push(Blocker::LabelHasOtherValue {
                    key: key.to_string(),
                    current: cur,
                    wanted: wanted.to_string(),
                });
            }
            (before, after) => label_changes.push(LabelDelta {
                key: key.to_string(),
                before,
                after: after.map(str::to_string),
            }),
        }
    }
    label_changes.sort_by(|a, b| a.key.cmp(&b.key));

    let mut taints = state.taints.clone();
    for matcher in &request.remove_taints {
        let before_len = taints.len();
        for t in taints.iter().filter(|t| matcher.mismatches(t)) {
            notes.push(Note::TaintValueMismatch {
                wanted: matcher.to_string(),
                found: t.clone(),
            });
        }
        taints.retain(|t| !matcher.matches(t));
        if taints.len() == before_len && !notes.iter().any(|n| matches!(n, Note::TaintValueMismatch { wanted, .. } if *wanted == matcher.to_string())) {
            notes.push(Note::TaintNotPresent {
                wanted: matcher.to_string(),
            });
        }
    }
    for wanted in &request.add_taints {
        match taints
            .iter()
            .position(|t| t.key == wanted.key && t.effect == wanted.effect)
        {
            Some(i) if taints[i].same_as(wanted) => {}
            Some(i) if request.overwrite => taints[i] = wanted.clone(),
            Some(i) => blockers.push(Blocker::TaintHasOtherValue {
                existing: taints[i].clone(),
                wanted: wanted.clone(),
            }),
            None => taints.push(wanted.clone()),
        }
    }

    NodePlan {
        before: state.clone(),
        label_changes,
        taints_after: taints,
        annotation_changes: map_deltas(&state.annotations, &request.annotations),
        blockers,
        notes,
    }
}

/// Why a JSON Patch does not apply to a node's state (the API server's words where it has
/// them).
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("patch is not an array")]
    NotAnArray,
    #[error("an operation without {0}")]
    Incomplete(&'static str),
    #[error("testing value {0} failed")]
    TestFailed(String),
    #[error("unexpected op {0}")]
    UnexpectedOp(String),
    #[error("unexpected path {0}")]
    UnexpectedPath(String),
    #[error("doc is missing path: {0}")]
    MissingPath(String),
    #[error("doc is missing key: {0}")]
    MissingKey(String),
    #[error("{0}: a label or annotation value is not a string")]
    NotAString(String),
    #[error("{path}: {source}")]
    BadValue {
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

/// Applies a JSON Patch made by [`NodePlan::json_patch`] to a node's labels and taints, with
/// the API server's semantics for the operations placekit emits. Used to check plans in
/// tests and to predict the result of a write.
pub fn apply_to_state(state: &NodeState, patch: &Value) -> Result<NodeState, PatchError> {
    let mut labels: Option<BTreeMap<String, String>> =
        (!state.labels.is_empty()).then(|| state.labels.clone());
    let mut annotations: Option<BTreeMap<String, String>> =
        (!state.annotations.is_empty()).then(|| state.annotations.clone());
    let mut taints: Option<Vec<Taint>> = (!state.taints.is_empty()).then(|| state.taints.clone());
    for op in patch.as_array().ok_or(PatchError::NotAnArray)? {
        let kind = op["op"].as_str().ok_or(PatchError::Incomplete("op"))?;
        let path = op["path"].as_str().ok_or(PatchError::Incomplete("path"))?;
        let value = &op["value"];
        if path == "/spec/taints" {
            match kind {
                "test" => {
                    let expected: Option<Vec<Taint>> = serde_json::from_value(value.clone())
                        .map_err(|source| PatchError::BadValue {
                            path: path.to_string(),
                            source,
                        })?;
                    if expected != taints {
                        return Err(PatchError::TestFailed(path.to_string()));
                    }
                }
                "add" | "replace" => {
                    taints = Some(serde_json::from_value(value.clone()).map_err(|source| {
                        PatchError::BadValue {
                            path: path.to_string(),
                            source,
                        }
                    })?)
                }
                "remove" => taints = None,
                other => return Err(PatchError::UnexpectedOp(other.to_string())),
            }
            continue;
        }
        let (map, root) = if path.starts_with("/metadata/labels") {
            (&mut labels, "/metadata/labels")
        } else if path.starts_with("/metadata/annotations") {
            (&mut annotations, "/metadata/annotations")
        } else {
            return Err(PatchError::UnexpectedPath(path.to_string()));
        };
        apply_map_op(map, root, kind, path, value)?;
    }
    Ok(NodeState {
        labels: labels.unwrap_or_default(),
        annotations: annotations.unwrap_or_default(),
        taints: taints.unwrap_or_default(),
        ..state.clone()
    })
}

fn apply_map_op(
    map: &mut Option<BTreeMap<String, String>>,
    root: &str,
    kind: &str,
    path: &str,
    value: &Value,
) -> Result<(), PatchError> {
    if path == root {
        return match kind {
            "test" if value.is_null() && map.is_none() => Ok(()),
            "test" => Err(PatchError::TestFailed(path.to_string())),
            "add" => {
                *map = Some(serde_json::from_value(value.clone()).map_err(|source| {
                    PatchError::BadValue {
                        path: path.to_string(),
                        source,
                    }
                })?);
                Ok(())
            }
            other => Err(PatchError::UnexpectedOp(other.to_string())),
        };
    }
    let token = path
        .strip_prefix(root)
        .and_then(|t| t.strip_prefix('/'))
        .ok_or_else(|| PatchError::UnexpectedPath(path.to_string()))?;
    let key = unescape_pointer_token(token);
    let map = map
        .as_mut()
        .ok_or_else(|| PatchError::MissingPath(path.to_string()))?;
    match kind {
        "test" => {
            let actual = map
                .get(&key)
                .map(|v| Value::from(v.as_str()))
                .unwrap_or(Value::Null);
            if actual != *value {
                return Err(PatchError::TestFailed(path.to_string()));
            }
        }
        "add" | "replace" => {
            if kind == "replace" && !map.contains_key(&key) {
                return Err(PatchError::MissingKey(path.to_string()));
            }
            let v = value
                .as_str()
                .ok_or_else(|| PatchError::NotAString(path.to_string()))?;
            map.insert(key, v.to_string());
        }
        "remove" => {
            map.remove(&key)
                .ok_or_else(|| PatchError::MissingKey(path.to_string()))?;
        }
        other => return Err(PatchError::UnexpectedOp(other.to_string())),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
