//! The differential suite: the same HTTP request sequences sent to the test API server (in
//! process) and to a real kube-apiserver (`PLACEKIT_E2E_KUBECONFIG`, for instance the control
//! plane of `tests/control-plane/cp up`), the answers normalised and compared field by field.
//!
//! Without `PLACEKIT_E2E_KUBECONFIG` the test prints a notice and returns. With it:
//!
//! ```sh
//! PLACEKIT_E2E_KUBECONFIG=admin.kubeconfig PLACEKIT_E2E_VIEWER_KUBECONFIG=viewer.kubeconfig \
//!     cargo test -p placekit-testserver --test differential -- --nocapture
//! ```
//!
//! Every sequence runs first against the test server, then against the real one; a later
//! step can use the answers of earlier steps on the same server (a continue token, the body
//! of a GET to send back stale). The suite only touches nodes named `diff-*`, the namespace
//! `diff` and the config maps in it; it deletes them at the start and at the end, so it does
//! not depend on what else the cluster holds. (A namespace is never deleted: without the
//! namespace controller it would stay `Terminating`.)
//!
//! Normalisation (what is legitimately instance-specific), applied to both sides:
//! - `metadata.uid`, `details.uid`, `metadata.creationTimestamp` and `deletionTimestamp`
//!   become placeholders;
//! - `metadata.resourceVersion` of objects becomes `rv-N`, N counting distinct values in
//!   the order they appear within the sequence on that server, so "unchanged" and "changed"
//!   are compared but not the numbers; a list's own `resourceVersion` (the cluster-wide
//!   revision, which the real server's scheduler leases move on) and its `continue` token
//!   (opaque) become placeholders, while whether they are present is compared;
//! - `metadata.managedFields` is removed (the test server does not track field managers);
//! - a name generated from a request's `generateName` (five random characters appended)
//!   becomes `<generateName>*****` wherever the answer mentions it;
//! - `/version`: `gitCommit`, `buildDate` and `goVersion` become placeholders and a
//!   `+build` suffix of `gitVersion` is dropped.
//!
//! Requests put at most one invalid entry into a label or annotation map: the real server
//! reports map entries in Go's random map order.
//!
//! Every other difference fails the test unless [`EXCEPTIONS`] lists it (a sequence
//! pattern, a field path pattern and, where only part of a text is instance-specific, the
//! part to mask); an exception that no longer matches anything fails the test too, so the
//! table and the "Differences from a real API server" section of tests/README.md stay true.

use std::collections::HashMap;

use http::{Method, Request};
use http_body_util::BodyExt as _;
use placekit_testserver::{ADMIN_TOKEN, READONLY_TOKEN, ServerConfig, TestServer};
use serde_json::{Value, json};

/// The namespace the suite owns.
const NS: &str = "diff";
/// A token no server knows.
const BOGUS_TOKEN: &str = "placekit-differential-bogus-token";

/// A difference the comparison allows, with the reason it is not fixed.
struct Exception {
    /// Sequence name pattern (`*` matches any run of characters).
    sequence: &'static str,
    /// Field path pattern, e.g. `body.message` (`*` as above).
    path: &'static str,
    /// When set, only the text from just after `.0` up to the next `.1` may differ.
    mask: Option<(&'static str, &'static str)>,
    reason: &'static str,
}

/// Documented differences (the same list as tests/README.md, "Differences from a real API
/// server"). Keep them narrow.
const EXCEPTIONS: &[Exception] = &[
    Exception {
        sequence: "merge/non-string-label-value",
        path: "body.*message",
        mask: Some(("Invalid value: \"", "\": json: cannot unmarshal")),
        reason: "the 422 quotes the whole patched object as the real server encodes it, \
                 managedFields included; the test server keeps none",
    },
    Exception {
        sequence: "json/non-string-label-value",
        path: "body.*message",
        mask: Some(("Invalid value: \"", "\": json: cannot unmarshal")),
        reason: "the 422 quotes the whole patched object as the real server encodes it, \
                 managedFields included; the test server keeps none",
    },
    Exception {
        sequence: "fields/unknown-on-patch-strict",
        path: "body.*message",
        mask: Some(("Invalid value: \"", "\": strict decoding error")),
        reason: "the 422 quotes the whole patched object as the real server encodes it, \
                 managedFields included; the test server keeps none",
    },
    Exception {
        sequence: "services/create",
        path: "body.spec.clusterIP*",
        mask: None,
        reason: "the real server picks a random free address of the service range; the test \
                 server the next one",
    },
    Exception {
        sequence: "list/continue-invalid",
        path: "body.message",
        mask: Some(("continue key is not valid: ", "\u{0}")),
        reason: "the detail is Go's base64/JSON decoder error for the bytes of the token",
    },
];

// ---------------------------------------------------------------------------------------
// Requests and sequences

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    Admin,
    Viewer,
    Bogus,
    /// No credentials at all.
    Anonymous,
}

#[derive(Debug, Clone)]
struct Req {
    method: Method,
    path: String,
    content_type: Option<&'static str>,
    /// The exact bytes to send (JSON Patch `test` compares bytes on the real server).
    body: Option<String>,
    user: User,
    /// `Accept`, when not plain JSON (kubectl's server-side printing).
    accept: Option<&'static str>,
}

impl Req {
    fn new(method: Method, path: impl Into<String>) -> Self {
        Req {
            method,
            path: path.into(),
            content_type: None,
            body: None,
            user: User::Admin,
            accept: None,
        }
    }

    /// Asks for a Table, as `kubectl get` does.
    fn table(mut self) -> Self {
        self.accept = Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
        );
        self
    }

    fn with_body(mut self, content_type: &'static str, body: impl Into<String>) -> Self {
        self.content_type = Some(content_type);
        self.body = Some(body.into());
        self
    }

    fn viewer(mut self) -> Self {
        self.user = User::Viewer;
        self
    }

    fn bogus(mut self) -> Self {
        self.user = User::Bogus;
        self
    }

    fn anonymous(mut self) -> Self {
        self.user = User::Anonymous;
        self
    }

    fn label(&self) -> String {
        let who = match self.user {
            User::Admin => "",
            User::Viewer => " (viewer)",
            User::Bogus => " (bogus token)",
            User::Anonymous => " (anonymous)",
        };
        format!("{} {}{who}", self.method, self.path)
    }
}

fn get(path: impl Into<String>) -> Req {
    Req::new(Method::GET, path)
}

fn post(path: impl Into<String>, body: Value) -> Req {
    Req::new(Method::POST, path).with_body("application/json", body.to_string())
}

fn put(path: impl Into<String>, body: Value) -> Req {
    Req::new(Method::PUT, path).with_body("application/json", body.to_string())
}

fn delete(path: impl Into<String>) -> Req {
    Req::new(Method::DELETE, path)
}

fn merge(path: impl Into<String>, body: Value) -> Req {
    Req::new(Method::PATCH, path).with_body("application/merge-patch+json", body.to_string())
}

fn strategic(path: impl Into<String>, body: Value) -> Req {
    Req::new(Method::PATCH, path)
        .with_body("application/strategic-merge-patch+json", body.to_string())
}

fn json_patch(path: impl Into<String>, body: Value) -> Req {
    json_patch_raw(path, &body.to_string())
}

/// A JSON Patch sent byte for byte as written.
fn json_patch_raw(path: impl Into<String>, body: &str) -> Req {
    Req::new(Method::PATCH, path).with_body("application/json-patch+json", body)
}

/// A server-side apply of a YAML configuration.
fn apply_yaml(path: impl Into<String>, yaml: &str) -> Req {
    Req::new(Method::PATCH, path).with_body("application/apply-patch+yaml", yaml)
}

fn node_path(name: &str) -> String {
    format!("/api/v1/nodes/{name}")
}

fn cm_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/configmaps/{name}")
}

fn node(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
}

fn tainted_node(name: &str, labels: Value, taints: Value) -> Value {
    let mut n = node(name, labels);
    n["spec"] = json!({"taints": taints});
    n
}

fn configmap(name: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": labels}, "data": data})
}

fn gpu_pod(name: &str, resources: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "server", "image": "registry.example.com/llm:1",
                                    "resources": resources}]}})
}

/// Percent-encodes a query parameter value.
fn q(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The continue token of a list answer (empty when there is none).
fn continue_of(r: &Resp) -> String {
    q(r.body["metadata"]["continue"].as_str().unwrap_or_default())
}

/// The resourceVersion of an object answer.
fn rv_of(r: &Resp) -> String {
    r.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

type Dynamic = Box<dyn Fn(&[Resp]) -> Req + Send + Sync>;

enum Step {
    Fixed(Req),
    /// Built from the answers of the earlier steps on the same server.
    Dynamic(Dynamic),
}

struct Seq {
    name: String,
    steps: Vec<Step>,
}

impl Seq {
    fn new(name: &str) -> Self {
        Seq {
            name: name.to_string(),
            steps: Vec::new(),
        }
    }

    fn send(mut self, r: Req) -> Self {
        self.steps.push(Step::Fixed(r));
        self
    }

    fn then(mut self, f: impl Fn(&[Resp]) -> Req + Send + Sync + 'static) -> Self {
        self.steps.push(Step::Dynamic(Box::new(f)));
        self
    }
}

// ---------------------------------------------------------------------------------------
// The sequences

fn sequences() -> Vec<Seq> {
    let mut s = Vec::new();
    s.extend(discovery_and_auth());
    s.extend(node_crud());
    s.extend(conflicts());
    s.extend(merge_patches());
    s.extend(strategic_patches());
    s.extend(json_patches());
    s.extend(dry_run());
    s.extend(lists());
    s.extend(validation());
    s.extend(unknown_fields());
    s.extend(watches());
    s.extend(more_resources());
    s.extend(pod_validation());
    s.extend(server_side_apply());
    s.extend(pod_tables());
    s.extend(rbac());
    s.extend(namespaces_and_pods());
    s
}

fn discovery_and_auth() -> Vec<Seq> {
    vec![
        Seq::new("version").send(get("/version")),
        Seq::new("path/unknown-resource")
            .send(get("/api/v1/foos"))
            .send(get("/api/v1/namespaces/diff/foos/x")),
        Seq::new("auth/bogus-token")
            .send(get("/api/v1/nodes").bogus())
            .send(merge(node_path("diff-any"), json!({})).bogus()),
        // No credentials: kube-apiserver authenticates system:anonymous, whom RBAC refuses
        // (403), except the public-info paths.
        Seq::new("auth/anonymous")
            .send(get("/api/v1/nodes").anonymous())
            .send(get(format!("/api/v1/namespaces/{NS}/pods/diff-x")).anonymous())
            .send(merge(node_path("diff-any"), json!({})).anonymous())
            .send(get("/api").anonymous())
            .send(get("/apis").anonymous())
            .send(get("/version").anonymous()),
    ]
}

fn node_crud() -> Vec<Seq> {
    let labels = json!({"diff": "basic", "accelerator.example.com/gpu-family": "a100",
                        "ops.example.com.node-restriction.kubernetes.io/llm-pool": "online",
                        "empty": ""});
    let taints = json!([
        {"key": "dedicated", "value": "llm-online", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "effect": "NoExecute"},
        {"key": "dedicated", "value": "llm-online", "effect": "PreferNoSchedule"}
    ]);
    vec![
        Seq::new("node/create-get-labels-taints")
            .send(post(
                "/api/v1/nodes",
                tainted_node("diff-basic", labels, taints),
            ))
            .send(get(node_path("diff-basic"))),
        // A stored taint is what Go encodes: no empty value, timeAdded in UTC to the second.
        Seq::new("node/taints-normalised")
            .send(post(
                "/api/v1/nodes",
                tainted_node(
                    "diff-taint-norm",
                    json!({}),
                    json!([{"key": "a", "value": "", "effect": "NoSchedule"},
                           {"key": "b", "value": "v", "effect": "NoExecute",
                            "timeAdded": "2026-01-02T03:04:05+02:00"}]),
                ),
            ))
            .send(merge(
                node_path("diff-taint-norm"),
                json!({"spec": {"taints": [{"key": "c", "value": "", "effect": "PreferNoSchedule",
                                            "timeAdded": "2026-03-04T05:06:07Z"}]}}),
            ))
            .send(get(node_path("diff-taint-norm"))),
        // `kubectl get nodes` (and `-o wide`): the node printer's columns.
        Seq::new("node/table-columns")
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": "diff-table-a",
                                    "labels": {"diff-table": "t", "node-role.kubernetes.io/gpu": "",
                                               "kubernetes.io/role": "worker"}},
                       "spec": {"unschedulable": true}}),
            ))
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": "diff-table-b", "labels": {"diff-table": "t"}},
                       "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                  "addresses": [{"type": "InternalIP", "address": "10.0.0.7"},
                                                {"type": "Hostname", "address": "diff-table-b"}],
                                  "nodeInfo": {"kubeletVersion": "v1.37.2", "osImage": "Ubuntu 24.04",
                                               "kernelVersion": "6.8.0", "containerRuntimeVersion": "containerd://2.1.0"}}}),
            ))
            .send(get("/api/v1/nodes?labelSelector=diff-table").table())
            .send(get("/api/v1/nodes?labelSelector=diff-table&limit=1").table())
            .send(get(node_path("diff-table-a")).table()),
        Seq::new("node/create-minimal")
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "diff-minimal"}}),
            ))
            .send(get(node_path("diff-minimal"))),
        Seq::new("node/create-with-status")
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": "diff-status", "labels": {"diff": "status"}},
                       "status": {"capacity": {"cpu": "96", "nvidia.com/gpu": "8", "pods": "110"},
                                  "allocatable": {"cpu": "95", "nvidia.com/gpu": "8", "pods": "110"},
                                  "conditions": [{"type": "Ready", "status": "True",
                                                  "reason": "KubeletReady", "message": "ready"}]}}),
            ))
            .send(get(node_path("diff-status"))),
        Seq::new("node/already-exists")
            .send(post("/api/v1/nodes", node("diff-dup", json!({"a": "1"}))))
            .send(post("/api/v1/nodes", node("diff-dup", json!({"a": "2"}))))
            .send(get(node_path("diff-dup"))),
        Seq::new("node/not-found")
            .send(get(node_path("diff-missing")))
            .send(merge(
                node_path("diff-missing"),
                json!({"metadata": {"labels": {"a": "1"}}}),
            ))
            .send(json_patch(
                node_path("diff-missing"),
                json!([{"op": "add", "path": "/metadata/labels/a", "value": "1"}]),
            ))
            .send(put(node_path("diff-missing"), node("diff-missing", json!({}))))
            .send(delete(node_path("diff-missing"))),
        Seq::new("node/delete")
            .send(post("/api/v1/nodes", node("diff-del", json!({"a": "1"}))))
            .send(delete(format!(
                "{}?gracePeriodSeconds=0",
                node_path("diff-del")
            )))
            .send(get(node_path("diff-del")))
            .send(delete(node_path("diff-del"))),
        Seq::new("node/namespace-on-cluster-scoped-object")
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": "diff-nsfield", "namespace": NS}}),
            ))
            .send(get(node_path("diff-nsfield"))),
        Seq::new("node/put")
            .send(post("/api/v1/nodes", node("diff-put", json!({"a": "1"}))))
            .send(get(node_path("diff-put")))
            .then(|r| {
                let mut body = r[1].body.clone();
                body["metadata"]["labels"]["b"] = json!("2");
                put(node_path("diff-put"), body)
            })
            .send(get(node_path("diff-put"))),
        Seq::new("node/put-without-resource-version")
            .send(post("/api/v1/nodes", node("diff-put-norv", json!({"a": "1"}))))
            .send(put(
                node_path("diff-put-norv"),
                node("diff-put-norv", json!({"a": "2"})),
            ))
            .send(get(node_path("diff-put-norv"))),
        Seq::new("node/put-name-mismatch")
            .send(post("/api/v1/nodes", node("diff-put-mm", json!({"a": "1"}))))
            .send(get(node_path("diff-put-mm")))
            .then(|r| {
                let mut body = r[1].body.clone();
                body["metadata"]["name"] = json!("diff-other");
                put(node_path("diff-put-mm"), body)
            }),
        Seq::new("node/status-ignored-on-update")
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": "diff-st", "labels": {"a": "1"}},
                       "status": {"capacity": {"nvidia.com/gpu": "8"}}}),
            ))
            .send(merge(
                node_path("diff-st"),
                json!({"metadata": {"labels": {"a": "2"}},
                       "status": {"capacity": {"nvidia.com/gpu": "4"}}}),
            ))
            .send(get(node_path("diff-st"))),
        Seq::new("configmap/create-get-patch")
            .send(post(
                format!("/api/v1/namespaces/{NS}/configmaps"),
                configmap("diff-cm-basic", json!({"diff": "basic"}), json!({"k": "v"})),
            ))
            .send(get(cm_path("diff-cm-basic")))
            .send(merge(
                cm_path("diff-cm-basic"),
                json!({"data": {"k": null, "note": "a&b<c>"}}),
            ))
            .send(get(cm_path("diff-cm-basic"))),
    ]
}

fn conflicts() -> Vec<Seq> {
    vec![
        Seq::new("conflict/put-stale-resource-version")
            .send(post("/api/v1/nodes", node("diff-conf-put", json!({"x": "1"}))))
            .send(get(node_path("diff-conf-put")))
            .send(merge(
                node_path("diff-conf-put"),
                json!({"metadata": {"labels": {"x": "2"}}}),
            ))
            .then(|r| {
                let mut stale = r[1].body.clone();
                stale["metadata"]["labels"]["x"] = json!("3");
                put(node_path("diff-conf-put"), stale)
            })
            .send(get(node_path("diff-conf-put"))),
        Seq::new("conflict/merge-patch-stale-resource-version")
            .send(post(
                "/api/v1/nodes",
                node("diff-conf-merge", json!({"x": "1"})),
            ))
            .send(merge(
                node_path("diff-conf-merge"),
                json!({"metadata": {"labels": {"x": "2"}}}),
            ))
            .then(|r| {
                merge(
                    node_path("diff-conf-merge"),
                    json!({"metadata": {"resourceVersion": rv_of(&r[0]), "labels": {"x": "3"}}}),
                )
            })
            .then(|r| {
                merge(
                    node_path("diff-conf-merge"),
                    json!({"metadata": {"resourceVersion": rv_of(&r[1]), "labels": {"x": "4"}}}),
                )
            })
            .send(get(node_path("diff-conf-merge"))),
        Seq::new("conflict/json-patch-test-resource-version")
            .send(post("/api/v1/nodes", node("diff-conf-json", json!({"x": "1"}))))
            .send(merge(
                node_path("diff-conf-json"),
                json!({"metadata": {"labels": {"x": "2"}}}),
            ))
            .then(|r| {
                json_patch(
                    node_path("diff-conf-json"),
                    json!([{"op": "test", "path": "/metadata/resourceVersion", "value": rv_of(&r[0])},
                           {"op": "replace", "path": "/metadata/labels/x", "value": "3"}]),
                )
            })
            .send(get(node_path("diff-conf-json"))),
    ]
}

fn merge_patches() -> Vec<Seq> {
    vec![
        Seq::new("merge/labels-add-change-remove")
            .send(post(
                "/api/v1/nodes",
                node("diff-merge", json!({"a": "1", "b": "2", "c": "3"})),
            ))
            .send(merge(
                node_path("diff-merge"),
                json!({"metadata": {"labels": {"a": null, "b": "20", "example.com/d": "4"}}}),
            ))
            .send(get(node_path("diff-merge"))),
        Seq::new("merge/no-op-keeps-resource-version")
            .send(post("/api/v1/nodes", node("diff-merge-noop", json!({"a": "1"}))))
            .send(merge(
                node_path("diff-merge-noop"),
                json!({"metadata": {"labels": {"a": "1"}}}),
            ))
            .send(strategic(
                node_path("diff-merge-noop"),
                json!({"metadata": {"labels": {"b": null}}}),
            ))
            .send(get(node_path("diff-merge-noop"))),
        Seq::new("merge/remove-last-label")
            .send(post("/api/v1/nodes", node("diff-merge-last", json!({"a": "1"}))))
            .send(merge(
                node_path("diff-merge-last"),
                json!({"metadata": {"labels": {"a": null}}}),
            ))
            .send(get(node_path("diff-merge-last"))),
        Seq::new("merge/taints-replace-whole-list")
            .send(post(
                "/api/v1/nodes",
                tainted_node(
                    "diff-merge-taints",
                    json!({}),
                    json!([{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]),
                ),
            ))
            .send(merge(
                node_path("diff-merge-taints"),
                json!({"spec": {"taints": [{"key": "c", "value": "x", "effect": "NoExecute"}]}}),
            ))
            .send(merge(
                node_path("diff-merge-taints"),
                json!({"spec": {"taints": null}}),
            ))
            .send(get(node_path("diff-merge-taints"))),
        Seq::new("merge/invalid-label-value")
            .send(post("/api/v1/nodes", node("diff-merge-bad", json!({"a": "1"}))))
            .send(merge(
                node_path("diff-merge-bad"),
                json!({"metadata": {"labels": {"a": "not valid", "b": "fine"}}}),
            ))
            .send(merge(
                node_path("diff-merge-bad"),
                json!({"metadata": {"labels": {"example.com/b": "x".repeat(64)}}}),
            ))
            .send(get(node_path("diff-merge-bad"))),
        Seq::new("merge/non-string-label-value")
            .send(post("/api/v1/nodes", node("diff-merge-num", json!({"a": "1"}))))
            .send(merge(
                node_path("diff-merge-num"),
                json!({"metadata": {"labels": {"b": 5}}}),
            ))
            .send(get(node_path("diff-merge-num"))),
        Seq::new("merge/rename")
            .send(post("/api/v1/nodes", node("diff-rename", json!({"a": "1"}))))
            .send(merge(
                node_path("diff-rename"),
                json!({"metadata": {"name": "diff-renamed"}}),
            ))
            .send(get(node_path("diff-rename"))),
        Seq::new("merge/annotations-html-characters")
            .send(post("/api/v1/nodes", node("diff-annot", json!({}))))
            .send(merge(
                node_path("diff-annot"),
                json!({"metadata": {"annotations": {"example.com/note": "a&b<c> \u{2028} é ~/"}}}),
            ))
            .send(get(node_path("diff-annot"))),
    ]
}

fn strategic_patches() -> Vec<Seq> {
    vec![
        Seq::new("strategic/labels")
            .send(post(
                "/api/v1/nodes",
                node("diff-smp", json!({"a": "1", "b": "2"})),
            ))
            .send(strategic(
                node_path("diff-smp"),
                json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
            ))
            .send(get(node_path("diff-smp"))),
        Seq::new("strategic/taints-as-kubectl-taint-sends")
            .send(post(
                "/api/v1/nodes",
                tainted_node(
                    "diff-smp-taint",
                    json!({}),
                    json!([{"key": "a", "effect": "NoSchedule"}]),
                ),
            ))
            .send(strategic(
                node_path("diff-smp-taint"),
                json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"},
                                           {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}),
            ))
            .send(strategic(
                node_path("diff-smp-taint"),
                json!({"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}),
            ))
            .send(get(node_path("diff-smp-taint"))),
        Seq::new("strategic/cordon-uncordon")
            .send(post("/api/v1/nodes", node("diff-cordon", json!({"diff-cordon": "1"}))))
            .send(strategic(
                node_path("diff-cordon"),
                json!({"spec": {"unschedulable": true}}),
            ))
            .send(get(format!(
                "/api/v1/nodes?labelSelector=diff-cordon&fieldSelector={}",
                q("spec.unschedulable=true")
            )))
            .send(strategic(
                node_path("diff-cordon"),
                json!({"spec": {"unschedulable": null}}),
            ))
            .send(get(format!(
                "/api/v1/nodes?labelSelector=diff-cordon&fieldSelector={}",
                q("spec.unschedulable=false")
            ))),
        Seq::new("strategic/replace-directive")
            .send(post(
                "/api/v1/nodes",
                node("diff-smp-replace", json!({"a": "1", "b": "2"})),
            ))
            .send(strategic(
                node_path("diff-smp-replace"),
                json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
            ))
            .send(get(node_path("diff-smp-replace"))),
        Seq::new("strategic/delete-directive")
            .send(post(
                "/api/v1/nodes",
                node("diff-smp-delete", json!({"a": "1", "b": "2"})),
            ))
            .send(strategic(
                node_path("diff-smp-delete"),
                json!({"metadata": {"labels": {"$patch": "delete"}}}),
            ))
            .send(get(node_path("diff-smp-delete"))),
        Seq::new("strategic/non-string-label-value")
            .send(post("/api/v1/nodes", node("diff-smp-num", json!({"a": "1"}))))
            .send(strategic(
                node_path("diff-smp-num"),
                json!({"metadata": {"labels": {"b": true}}}),
            ))
            .send(strategic(
                node_path("diff-smp-num"),
                json!({"metadata": {"annotations": {"example.com/n": 5}}}),
            ))
            .send(get(node_path("diff-smp-num"))),
    ]
}

fn json_patches() -> Vec<Seq> {
    let p = |name: &str| node_path(name);
    vec![
        // evanphx/json-patch v4 reads negative array indices from the end (`-1`: the last
        // element; for an add, the end of the longer array).
        Seq::new("json/negative-array-indices")
            .send(post(
                "/api/v1/nodes",
                tainted_node(
                    "diff-jp-neg",
                    json!({}),
                    json!([{"key": "a", "value": "1", "effect": "NoSchedule"},
                           {"key": "b", "value": "2", "effect": "NoSchedule"}]),
                ),
            ))
            .send(json_patch(
                p("diff-jp-neg"),
                json!([{"op": "add", "path": "/spec/taints/-1", "value": {"key": "c", "value": "3", "effect": "NoSchedule"}}]),
            ))
            .send(json_patch(
                p("diff-jp-neg"),
                json!([{"op": "replace", "path": "/spec/taints/-1/value", "value": "33"},
                       {"op": "remove", "path": "/spec/taints/-3"}]),
            ))
            .send(json_patch(
                p("diff-jp-neg"),
                json!([{"op": "test", "path": "/spec/taints/-2/key", "value": "c"}]),
            ))
            .send(json_patch(
                p("diff-jp-neg"),
                json!([{"op": "remove", "path": "/spec/taints/-1"}]),
            ))
            .send(get(p("diff-jp-neg"))),
        Seq::new("json/add-replace-remove-escaped-keys")
            .send(post("/api/v1/nodes", node("diff-jp", json!({"a": "1"}))))
            .send(json_patch(
                p("diff-jp"),
                json!([{"op": "add", "path": "/metadata/labels/example.com~1pool", "value": "online"}]),
            ))
            .send(json_patch(
                p("diff-jp"),
                json!([{"op": "replace", "path": "/metadata/labels/example.com~1pool", "value": "batch"},
                       {"op": "remove", "path": "/metadata/labels/a"}]),
            ))
            .send(get(p("diff-jp"))),
        Seq::new("json/test-fails")
            .send(post("/api/v1/nodes", node("diff-jp-fail", json!({"x": "1"}))))
            .send(json_patch(
                p("diff-jp-fail"),
                json!([{"op": "test", "path": "/metadata/labels/x", "value": "9"},
                       {"op": "replace", "path": "/metadata/labels/x", "value": "2"}]),
            ))
            .send(get(p("diff-jp-fail"))),
        Seq::new("json/test-passes")
            .send(post("/api/v1/nodes", node("diff-jp-pass", json!({"x": "1"}))))
            .send(json_patch(
                p("diff-jp-pass"),
                json!([{"op": "test", "path": "/metadata/labels/x", "value": "1"},
                       {"op": "replace", "path": "/metadata/labels/x", "value": "2"}]),
            ))
            .send(get(p("diff-jp-pass"))),
        Seq::new("json/test-null-on-missing-label-passes")
            .send(post("/api/v1/nodes", node("diff-jp-null", json!({"x": "1"}))))
            .send(json_patch(
                p("diff-jp-null"),
                json!([{"op": "test", "path": "/metadata/labels/y", "value": null},
                       {"op": "add", "path": "/metadata/labels/y", "value": "new"}]),
            ))
            .send(get(p("diff-jp-null"))),
        Seq::new("json/test-null-on-present-label-fails")
            .send(post(
                "/api/v1/nodes",
                node("diff-jp-nullp", json!({"x": "1"})),
            ))
            .send(json_patch(
                p("diff-jp-nullp"),
                json!([{"op": "test", "path": "/metadata/labels/x", "value": null},
                       {"op": "add", "path": "/metadata/labels/x", "value": "2"}]),
            ))
            .send(get(p("diff-jp-nullp"))),
        Seq::new("json/test-null-under-missing-map-fails")
            .send(post("/api/v1/nodes", node("diff-jp-nomap", json!({"x": "1"}))))
            .send(json_patch(
                p("diff-jp-nomap"),
                json!([{"op": "test", "path": "/metadata/annotations/a", "value": null}]),
            ))
            .send(json_patch(
                p("diff-jp-nomap"),
                json!([{"op": "test", "path": "/metadata/annotations", "value": null},
                       {"op": "add", "path": "/metadata/annotations", "value": {"example.com/a": "1"}}]),
            ))
            .send(get(p("diff-jp-nomap"))),
        Seq::new("json/test-value-on-missing-label-fails")
            .send(post("/api/v1/nodes", node("diff-jp-miss", json!({"x": "1"}))))
            .send(json_patch(
                p("diff-jp-miss"),
                json!([{"op": "test", "path": "/metadata/labels/y", "value": "1"}]),
            )),
        Seq::new("json/replace-and-remove-missing-label")
            .send(post("/api/v1/nodes", node("diff-jp-repl", json!({"x": "1"}))))
            .send(json_patch(
                p("diff-jp-repl"),
                json!([{"op": "replace", "path": "/metadata/labels/y", "value": "1"}]),
            ))
            .send(json_patch(
                p("diff-jp-repl"),
                json!([{"op": "remove", "path": "/metadata/labels/z"}]),
            ))
            .send(get(p("diff-jp-repl"))),
        Seq::new("json/not-an-array")
            .send(post("/api/v1/nodes", node("diff-jp-obj", json!({"x": "1"}))))
            .send(json_patch(
                p("diff-jp-obj"),
                json!({"op": "replace", "path": "/metadata/labels/x", "value": "2"}),
            ))
            .send(json_patch_raw(p("diff-jp-obj"), "[{\"op\": "))
            .send(json_patch(
                p("diff-jp-obj"),
                json!([{"op": "bogus", "path": "/metadata/labels/x"}]),
            )),
        Seq::new("json/tilde-and-slash-escapes")
            .send(post(
                "/api/v1/nodes",
                node("diff-jp-tilde", json!({"example.com/k": "v"})),
            ))
            .send(json_patch(
                p("diff-jp-tilde"),
                json!([{"op": "test", "path": "/metadata/labels/x~1y~0z", "value": null},
                       {"op": "test", "path": "/metadata/labels/example.com~1k", "value": "v"},
                       {"op": "add", "path": "/metadata/annotations", "value": {"example.com/path": "~/a~1b"}}]),
            ))
            .send(json_patch(
                p("diff-jp-tilde"),
                json!([{"op": "test", "path": "/metadata/annotations/example.com~1path", "value": "~/a~1b"}]),
            ))
            .send(json_patch(
                p("diff-jp-tilde"),
                json!([{"op": "add", "path": "/metadata/labels/a~0b", "value": "1"}]),
            ))
            .send(get(p("diff-jp-tilde"))),
        Seq::new("json/test-compares-bytes-html-characters")
            .send(post("/api/v1/nodes", node("diff-jp-html", json!({"i": "2"}))))
            .send(merge(
                p("diff-jp-html"),
                json!({"metadata": {"annotations": {"example.com/note": "a&b<c>"}}}),
            ))
            .send(json_patch_raw(
                p("diff-jp-html"),
                r#"[{"op":"test","path":"/metadata/annotations/example.com~1note","value":"a&b<c>"}]"#,
            ))
            .send(json_patch_raw(
                p("diff-jp-html"),
                r#"[{"op":"test","path":"/metadata/annotations/example.com~1note","value":"a\u0026b\u003cc\u003e"}]"#,
            ))
            .send(json_patch_raw(
                p("diff-jp-html"),
                r#"[{"op":"test","path":"/metadata/annotations","value":{"example.com/note":"a\u0026b\u003cc\u003e"}}]"#,
            ))
            .send(json_patch_raw(
                p("diff-jp-html"),
                r#"[{"op":"test","path":"/metadata/annotations","value":{"example.com/note":"a&b<c>"}}]"#,
            ))
            .send(json_patch_raw(
                p("diff-jp-html"),
                r#"[{"op":"test","path":"/metadata/labels/i","value":"\u0032"}]"#,
            ))
            .send(json_patch_raw(
                p("diff-jp-html"),
                r#"[{"op":"test","path":"/metadata/labels/i","value": "2" }]"#,
            ))
            .send(json_patch(
                p("diff-jp-html"),
                json!([{"op": "add", "path": "/metadata/labels/v", "value": "a&b<c>"}]),
            ))
            .send(get(p("diff-jp-html"))),
        Seq::new("json/non-string-label-value")
            .send(post("/api/v1/nodes", node("diff-jp-num", json!({"x": "1"}))))
            .send(json_patch(
                p("diff-jp-num"),
                json!([{"op": "add", "path": "/metadata/labels/y", "value": 5}]),
            ))
            .send(get(p("diff-jp-num"))),
        Seq::new("json/taints")
            .send(post(
                "/api/v1/nodes",
                tainted_node(
                    "diff-jp-taint",
                    json!({}),
                    json!([{"key": "a", "effect": "NoSchedule"}]),
                ),
            ))
            .send(json_patch(
                p("diff-jp-taint"),
                json!([{"op": "add", "path": "/spec/taints/-", "value": {"key": "b", "value": "1", "effect": "NoExecute"}},
                       {"op": "test", "path": "/spec/taints/0/key", "value": "a"}]),
            ))
            .send(json_patch(
                p("diff-jp-taint"),
                json!([{"op": "remove", "path": "/spec/taints/5"}]),
            ))
            .send(json_patch(
                p("diff-jp-taint"),
                json!([{"op": "add", "path": "/spec/taints/-", "value": {"key": "a", "value": "other", "effect": "NoSchedule"}}]),
            ))
            .send(get(p("diff-jp-taint"))),
    ]
}

fn dry_run() -> Vec<Seq> {
    let p = |name: &str| node_path(name);
    vec![
        Seq::new("dryrun/merge-patch")
            .send(post("/api/v1/nodes", node("diff-dry-merge", json!({"a": "1"}))))
            .send(merge(
                format!("{}?dryRun=All", p("diff-dry-merge")),
                json!({"metadata": {"labels": {"a": "2", "b": "3"}}}),
            ))
            .send(get(p("diff-dry-merge"))),
        Seq::new("dryrun/json-patch")
            .send(post("/api/v1/nodes", node("diff-dry-json", json!({"a": "1"}))))
            .send(json_patch(
                format!("{}?dryRun=All", p("diff-dry-json")),
                json!([{"op": "test", "path": "/metadata/labels/a", "value": "1"},
                       {"op": "replace", "path": "/metadata/labels/a", "value": "2"}]),
            ))
            .send(json_patch(
                format!("{}?dryRun=All", p("diff-dry-json")),
                json!([{"op": "test", "path": "/metadata/labels/a", "value": "2"}]),
            ))
            .send(get(p("diff-dry-json"))),
        Seq::new("dryrun/strategic-patch")
            .send(post(
                "/api/v1/nodes",
                tainted_node(
                    "diff-dry-smp",
                    json!({"a": "1"}),
                    json!([{"key": "a", "effect": "NoSchedule"}]),
                ),
            ))
            .send(strategic(
                format!("{}?dryRun=All", p("diff-dry-smp")),
                json!({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}}),
            ))
            .send(get(p("diff-dry-smp"))),
        Seq::new("dryrun/put")
            .send(post("/api/v1/nodes", node("diff-dry-put", json!({"a": "1"}))))
            .send(get(p("diff-dry-put")))
            .then(|r| {
                let mut body = r[1].body.clone();
                body["metadata"]["labels"]["a"] = json!("2");
                put(format!("{}?dryRun=All", node_path("diff-dry-put")), body)
            })
            .send(get(p("diff-dry-put"))),
        Seq::new("dryrun/create")
            .send(post(
                "/api/v1/nodes?dryRun=All",
                node("diff-dry-create", json!({"a": "1"})),
            ))
            .send(get(p("diff-dry-create")))
            .send(post(
                format!("/api/v1/namespaces/{NS}/configmaps?dryRun=All"),
                configmap("diff-cm-dry", json!({}), json!({"k": "v"})),
            ))
            .send(get(cm_path("diff-cm-dry"))),
        Seq::new("dryrun/create-invalid")
            .send(post(
                "/api/v1/nodes?dryRun=All",
                node("diff-dry-bad", json!({"bad key": "1"})),
            ))
            .send(post(
                "/api/v1/nodes?dryRun=All",
                node("diff-dry-dup", json!({})),
            ))
            .send(post("/api/v1/nodes", node("diff-dry-dup", json!({}))))
            .send(post(
                "/api/v1/nodes?dryRun=All",
                node("diff-dry-dup", json!({})),
            )),
        Seq::new("dryrun/delete-query")
            .send(post("/api/v1/nodes", node("diff-dry-del", json!({"a": "1"}))))
            .send(delete(format!(
                "{}?dryRun=All&gracePeriodSeconds=0",
                p("diff-dry-del")
            )))
            .send(get(p("diff-dry-del"))),
        Seq::new("dryrun/delete-options-body")
            .send(post("/api/v1/nodes", node("diff-dry-delb", json!({"a": "1"}))))
            .send(Req::new(Method::DELETE, p("diff-dry-delb")).with_body(
                "application/json",
                json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}).to_string(),
            ))
            .send(get(p("diff-dry-delb"))),
        Seq::new("dryrun/unsupported-values")
            .send(post("/api/v1/nodes", node("diff-dry-val", json!({"a": "1"}))))
            .send(merge(
                format!("{}?dryRun=true", p("diff-dry-val")),
                json!({"metadata": {"labels": {"a": "2"}}}),
            ))
            .send(post(
                "/api/v1/nodes?dryRun=Bogus",
                node("diff-dry-val2", json!({})),
            ))
            .send(delete(format!("{}?dryRun=yes", p("diff-dry-val"))))
            .then(|r| {
                put(
                    format!("{}?dryRun=1", node_path("diff-dry-val")),
                    r[0].body.clone(),
                )
            })
            .send(get(p("diff-dry-val"))),
        Seq::new("dryrun/create-namespace")
            .send(post(
                "/api/v1/namespaces?dryRun=All",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "diff-dry-ns"}}),
            ))
            .send(get("/api/v1/namespaces/diff-dry-ns")),
    ]
}

fn lists() -> Vec<Seq> {
    let nodes = |query: &str| get(format!("/api/v1/nodes?{query}"));
    let selector = |s: &str| nodes(&format!("labelSelector={}", q(s)));
    let mut setup = Seq::new("list/setup");
    for i in 1..=5 {
        let mut n = node(
            &format!("diff-list-{i}"),
            json!({"diff-list": "1", "i": i.to_string(),
                   "parity": if i % 2 == 0 { "even" } else { "odd" }}),
        );
        if i == 3 {
            n["spec"] = json!({"unschedulable": true,
                               "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]});
        }
        setup = setup.send(post("/api/v1/nodes", n));
    }
    let mut cm_setup = Seq::new("list/setup-configmaps");
    for i in 1..=5 {
        cm_setup = cm_setup.send(post(
            format!("/api/v1/namespaces/{NS}/configmaps"),
            configmap(
                &format!("diff-cm-{i}"),
                json!({"diff-cm": "1", "i": i.to_string()}),
                json!({"i": i.to_string()}),
            ),
        ));
    }
    let cms = |query: &str| get(format!("/api/v1/namespaces/{NS}/configmaps?{query}"));
    vec![
        setup,
        cm_setup,
        Seq::new("list/label-selectors")
            .send(selector("diff-list=1"))
            .send(selector("diff-list==1,parity=even"))
            .send(selector("diff-list,parity!=even"))
            .send(selector("diff-list,i in (1, 3,5)"))
            .send(selector("diff-list,i notin (1,3)"))
            .send(selector("diff-list,!missing"))
            .send(selector("diff-list,i>3"))
            .send(selector("diff-list,i<2"))
            .send(selector("diff-list,i in (in,notin)"))
            .send(selector("diff-list, parity in (odd) ,i>1")),
        Seq::new("list/label-selector-empty-values")
            .send(selector("diff-list,i in (1,,)"))
            .send(selector("diff-list,i notin (,,)"))
            .send(selector("diff-list,i in (,1)"))
            .send(selector("diff-list,i in (1,,,)"))
            .send(selector("diff-list,missing in ()"))
            .send(selector("diff-list,missing=")),
        Seq::new("list/label-selector-invalid")
            .send(selector("x in"))
            .send(selector("x in (a"))
            .send(selector("x in (a b)"))
            .send(selector("a/b/c=x"))
            .send(selector("a/b/c"))
            .send(selector("!a/b/c"))
            .send(selector("x=b$"))
            .send(selector("x in (a,b$,-c)"))
            .send(selector("x>a"))
            .send(selector("x>1.5"))
            .send(selector("=a"))
            .send(selector("x,"))
            .send(selector("x a"))
            .send(selector("x!a"))
            .send(selector(&format!("{}=1", "k".repeat(64))))
            .send(selector(&format!("{}/k=1", "p".repeat(254))))
            .send(selector("Example.com/k=1"))
            .send(selector(&format!("k={}", "v".repeat(64))))
            .send(selector("k=\"quoted\""))
            .send(selector("k=é")),
        Seq::new("list/field-selectors")
            .send(nodes(&format!(
                "fieldSelector={}",
                q("metadata.name=diff-list-2")
            )))
            .send(nodes(&format!(
                "fieldSelector={}",
                q("metadata.name==diff-list-2,metadata.name!=x")
            )))
            .send(nodes(&format!(
                "labelSelector=diff-list&fieldSelector={}",
                q("spec.unschedulable=true")
            )))
            .send(nodes(&format!(
                "labelSelector=diff-list&fieldSelector={}",
                q("spec.unschedulable!=true")
            )))
            .send(nodes(&format!(
                "labelSelector=diff-list&fieldSelector={}",
                q("metadata.name!=diff-list-1")
            )))
            .send(cms(&format!(
                "fieldSelector={}",
                q("metadata.name=diff-cm-3")
            )))
            .send(get(format!(
                "/api/v1/configmaps?labelSelector=diff-cm&fieldSelector={}",
                q("metadata.namespace=diff,metadata.name=diff-cm-1")
            ))),
        Seq::new("list/field-selector-invalid")
            .send(nodes(&format!("fieldSelector={}", q("spec.foo=x"))))
            .send(nodes(&format!(
                "fieldSelector={}",
                q("metadata.namespace=x")
            )))
            .send(nodes("fieldSelector=foo"))
            .send(nodes(&format!(
                "fieldSelector={}",
                q("metadata.name=a,spec.nodeName=b")
            )))
            .send(cms(&format!("fieldSelector={}", q("data.i=1")))),
        Seq::new("list/paging-nodes-limit-2")
            .send(nodes("labelSelector=diff-list&limit=2"))
            .then(|r| {
                get(format!(
                    "/api/v1/nodes?labelSelector=diff-list&limit=2&continue={}",
                    continue_of(&r[0])
                ))
            })
            .then(|r| {
                get(format!(
                    "/api/v1/nodes?labelSelector=diff-list&limit=2&continue={}",
                    continue_of(&r[1])
                ))
            }),
        Seq::new("list/paging-nodes-limit-1")
            .send(nodes("labelSelector=diff-list%2Cparity%3Dodd&limit=1"))
            .then(|r| {
                get(format!(
                    "/api/v1/nodes?labelSelector=diff-list%2Cparity%3Dodd&limit=1&continue={}",
                    continue_of(&r[0])
                ))
            })
            .then(|r| {
                get(format!(
                    "/api/v1/nodes?labelSelector=diff-list%2Cparity%3Dodd&limit=1&continue={}",
                    continue_of(&r[1])
                ))
            }),
        Seq::new("list/paging-remaining-item-count")
            .send(cms("limit=2"))
            .then(|r| {
                get(format!(
                    "/api/v1/namespaces/{NS}/configmaps?limit=2&continue={}",
                    continue_of(&r[0])
                ))
            })
            .then(|r| {
                get(format!(
                    "/api/v1/namespaces/{NS}/configmaps?limit=2&continue={}",
                    continue_of(&r[1])
                ))
            })
            .send(cms("limit=5"))
            .send(cms("limit=6")),
        Seq::new("list/paging-limit-1-with-selector")
            .send(cms("labelSelector=diff-cm&limit=1"))
            .then(|r| {
                get(format!(
                    "/api/v1/namespaces/{NS}/configmaps?labelSelector=diff-cm&limit=1&continue={}",
                    continue_of(&r[0])
                ))
            })
            .send(get(
                "/api/v1/configmaps?labelSelector=diff-cm%2Ci%20in%20(2%2C4)&limit=1",
            )),
        Seq::new("list/continue-invalid").send(cms("limit=2&continue=garbage")),
        // Later pages show the objects as they were when the first page was read: a change,
        // a deletion and a creation between pages do not show.
        Seq::new("list/paging-is-a-snapshot")
            .send(post(
                cms_path(),
                configmap("diff-pg-a", json!({"diff-pg": "1"}), json!({"v": "1"})),
            ))
            .send(post(
                cms_path(),
                configmap("diff-pg-b", json!({"diff-pg": "1"}), json!({"v": "1"})),
            ))
            .send(post(
                cms_path(),
                configmap("diff-pg-c", json!({"diff-pg": "1"}), json!({"v": "1"})),
            ))
            .send(cms("labelSelector=diff-pg&limit=1"))
            .send(merge(cm_path("diff-pg-b"), json!({"data": {"v": "2"}})))
            .send(delete(cm_path("diff-pg-c")))
            .send(post(
                cms_path(),
                configmap("diff-pg-d", json!({"diff-pg": "1"}), json!({"v": "1"})),
            ))
            .then(|r| {
                get(format!(
                    "/api/v1/namespaces/{NS}/configmaps?labelSelector=diff-pg&limit=1&continue={}",
                    continue_of(&r[3])
                ))
            })
            .then(|r| {
                get(format!(
                    "/api/v1/namespaces/{NS}/configmaps?labelSelector=diff-pg&limit=1&continue={}",
                    continue_of(&r[7])
                ))
            })
            .send(cms("labelSelector=diff-pg")),
    ]
}

fn cms_path() -> String {
    format!("/api/v1/namespaces/{NS}/configmaps")
}

fn validation() -> Vec<Seq> {
    let bad_label_key = |key: &str| post("/api/v1/nodes", node("diff-bad", json!({key: "v"})));
    let bad_label_value =
        |value: &str| post("/api/v1/nodes", node("diff-bad", json!({"k": value})));
    let taints = |t: Value| post("/api/v1/nodes", tainted_node("diff-bad", json!({}), t));
    vec![
        Seq::new("validate/label-keys")
            .send(bad_label_key("bad key"))
            .send(bad_label_key("a/b/c"))
            .send(bad_label_key("-a"))
            .send(bad_label_key("/a"))
            .send(bad_label_key("a/"))
            .send(bad_label_key("Example.com/a"))
            .send(bad_label_key(&"k".repeat(64)))
            .send(bad_label_key(&format!("{}/k", "p".repeat(254))))
            .send(bad_label_key(&format!("A{}/k", "p".repeat(253))))
            .send(bad_label_key("é"))
            .send(bad_label_key("a\tb")),
        Seq::new("validate/label-values")
            .send(bad_label_value("not valid"))
            .send(bad_label_value("a&b<c>"))
            .send(bad_label_value(&"v".repeat(64)))
            .send(bad_label_value(&format!("{}-", "v".repeat(63))))
            .send(bad_label_value(&"é".repeat(32)))
            .send(bad_label_value("-a"))
            .send(post(
                "/api/v1/nodes",
                node("diff-bad", json!({"bad key": "bad value", "k": "v"})),
            )),
        Seq::new("validate/annotation-keys")
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": "diff-bad", "annotations": {"bad key": "v", "Example.com/ok": "v"}}}),
            ))
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": "diff-bad", "annotations": {"a/b/c": "v", "x": "a&b"}}}),
            )),
        Seq::new("validate/taints")
            .send(taints(json!([{"key": "a", "effect": "Sometimes"}])))
            .send(taints(json!([
                {"key": "d", "value": "1", "effect": "NoSchedule"},
                {"key": "d", "value": "2", "effect": "NoSchedule"}
            ])))
            .send(taints(json!([{"key": "bad key", "effect": "NoSchedule"}])))
            .send(taints(json!([{"key": "k", "value": "bad value", "effect": "NoSchedule"}])))
            .send(taints(json!([{"key": "k", "value": "v"}])))
            .send(taints(json!([{"key": "", "effect": "NoExecute"}])))
            .send(taints(json!([
                {"key": "k", "value": "v", "effect": "Sometimes"},
                {"key": "k", "value": "w", "effect": "Sometimes"},
                {"key": "bad key", "effect": "NoSchedule"},
                {"key": "d", "effect": "NoSchedule"},
                {"key": "d", "value": "2", "effect": "NoSchedule"},
                {"key": "e", "value": "bad value"},
                {"key": "", "effect": "NoExecute"}
            ]))),
        Seq::new("validate/taints-on-update")
            .send(post("/api/v1/nodes", node("diff-taint-upd", json!({"a": "1"}))))
            .send(merge(
                node_path("diff-taint-upd"),
                json!({"metadata": {"labels": {"bad key": "x"}},
                       "spec": {"taints": [{"key": "a", "effect": "Sometimes"},
                                           {"key": "a", "effect": "Sometimes"}]}}),
            )),
        Seq::new("validate/object-names")
            .send(post("/api/v1/nodes", node("Bad_Name", json!({}))))
            .send(post("/api/v1/nodes", node(&"n".repeat(254), json!({}))))
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {}}),
            ))
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "Bad_Name", "labels": {"bad key": "v"}}}),
            ))
            .send(post(
                "/api/v1/namespaces",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bad.ns"}}),
            ))
            .send(post(
                "/api/v1/namespaces",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Bad"}}),
            ))
            .send(post(
                "/api/v1/namespaces",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n".repeat(64)}}),
            ))
            .send(post(
                format!("/api/v1/namespaces/{NS}/configmaps"),
                configmap("Bad_Name", json!({}), json!({})),
            ))
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"generateName": "Bad_"}}),
            ))
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"generateName": "diff-gen-", "labels": {"bad key": "v"}}}),
            )),
        Seq::new("node/generate-name")
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"generateName": "diff-gen-", "labels": {"a": "1"}}}),
            ))
            .then(|r| {
                get(node_path(
                    r[0].body["metadata"]["name"].as_str().unwrap_or("diff-gen-missing"),
                ))
            }),
        Seq::new("validate/non-string-label-value-on-create")
            .send(post("/api/v1/nodes", node("diff-bad", json!({"a": 5}))))
            .send(post("/api/v1/nodes", node("diff-bad", json!({"a": {"b": "c"}}))))
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "diff-bad", "labels": "a=b"}}),
            ))
            .send(post(
                "/api/v1/nodes",
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "diff-bad", "annotations": {"a": true}}}),
            ))
            .send(get(node_path("diff-bad"))),
        Seq::new("validate/namespace-mismatch")
            .send(post(
                format!("/api/v1/namespaces/{NS}/configmaps"),
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "diff-cm-mismatch", "namespace": "other"}}),
            ))
            .send(get(cm_path("diff-cm-mismatch"))),
    ]
}

/// `fieldValidation`: unknown fields refused (`Strict`, what kubectl sends), warned about
/// and dropped (`Warn`, the default) or dropped quietly (`Ignore`), on create, update and
/// every patch type.
fn unknown_fields() -> Vec<Seq> {
    let cms = format!("/api/v1/namespaces/{NS}/configmaps");
    let with_unknown = |name: &str| {
        let mut cm = configmap(name, json!({"k": "v"}), json!({"a": "b"}));
        cm["zed"] = json!(1);
        cm["metadata"]["bogus"] = json!({"x": 1});
        cm
    };
    let pod = {
        let mut pod = gpu_pod("diff-fv-pod", json!({}));
        pod["spec"]["containers"][0]["foo"] = json!(1);
        pod["spec"]["zz"] = json!({"a": 1});
        pod["spec"]["nodeSelector"] = json!({"any.example.com/key": "v"});
        pod
    };
    let cm1 = format!("{cms}/diff-fv-1");
    let cm2 = format!("{cms}/diff-fv-2");
    vec![
        Seq::new("fields/unknown-on-create")
            .send(post(
                format!("{cms}?fieldValidation=Strict"),
                with_unknown("diff-fv-1"),
            ))
            .send(post(cms.clone(), with_unknown("diff-fv-1")))
            .send(get(cm1.clone()))
            .send(post(
                format!("{cms}?fieldValidation=Ignore"),
                with_unknown("diff-fv-2"),
            ))
            .send(post(
                format!("{cms}?fieldValidation=Warn&dryRun=All"),
                with_unknown("diff-fv-3"),
            ))
            .send(post(
                format!("{cms}?fieldValidation=Nope"),
                with_unknown("diff-fv-4"),
            ))
            .send(post(
                format!("/api/v1/namespaces/{NS}/pods?fieldValidation=Strict&dryRun=All"),
                pod.clone(),
            ))
            .send(post(
                format!("/api/v1/namespaces/{NS}/pods?dryRun=All"),
                pod,
            )),
        Seq::new("fields/unknown-on-update")
            .send(post(
                cms.clone(),
                configmap("diff-fv-1", json!({}), json!({"a": "b"})),
            ))
            .send(put(
                format!("{cm1}?fieldValidation=Strict"),
                with_unknown("diff-fv-1"),
            ))
            .send(put(cm1.clone(), with_unknown("diff-fv-1")))
            .send(put(
                format!("{cm1}?fieldValidation=Nope"),
                with_unknown("diff-fv-1"),
            )),
        Seq::new("fields/unknown-on-patch")
            .send(post(
                cms.clone(),
                configmap("diff-fv-2", json!({}), json!({"a": "b"})),
            ))
            .send(strategic(
                format!("{cm2}?fieldValidation=Strict"),
                json!({"zed": 1, "metadata": {"foo": 2}}),
            ))
            .send(strategic(
                cm2.clone(),
                json!({"zed": 1, "metadata": {"foo": 2}}),
            ))
            .send(merge(cm2.clone(), json!({"zed": 1, "data": {"c": "d"}})))
            .send(merge(
                format!("{cm2}?fieldValidation=Ignore"),
                json!({"zed": 1, "data": {"e": "f"}}),
            ))
            .send(json_patch(
                cm2.clone(),
                json!([{"op": "add", "path": "/zed", "value": 1}]),
            ))
            .send(get(cm2.clone())),
        Seq::new("fields/unknown-on-patch-strict")
            .send(post(
                cms,
                configmap("diff-fv-1", json!({}), json!({"a": "b"})),
            ))
            .send(merge(
                format!("{cm1}?fieldValidation=Strict"),
                json!({"zed": 1, "metadata": {"foo": 2}}),
            ))
            .send(json_patch(
                format!("{cm1}?fieldValidation=Strict"),
                json!([{"op": "add", "path": "/zed", "value": 1}]),
            )),
    ]
}

/// Watches: the changes since a list's resourceVersion replayed (selection moves as
/// `ADDED`/`DELETED`), the initial `ADDED` events of a watch without one, one object by
/// field selector, node Tables (`kubectl get nodes -w`), an unparsable version. Each watch
/// ends after `timeoutSeconds=1` and its events are compared in order.
fn watches() -> Vec<Seq> {
    let watched = |name: &str, group: &str| node(name, json!({"diff-watch": group}));
    vec![
        Seq::new("watch/replay-since-list")
            .send(post("/api/v1/nodes", watched("diff-w1", "in")))
            .send(post("/api/v1/nodes", watched("diff-w2", "in")))
            .send(get("/api/v1/nodes?labelSelector=diff-watch%3Din"))
            .send(merge(node_path("diff-w1"), json!({"metadata": {"labels": {"x": "1"}}})))
            .send(merge(node_path("diff-w2"), json!({"metadata": {"labels": {"diff-watch": "out"}}})))
            .send(post("/api/v1/nodes", watched("diff-w3", "out")))
            .send(merge(node_path("diff-w3"), json!({"metadata": {"labels": {"diff-watch": "in"}}})))
            .send(delete(node_path("diff-w1")))
            .then(|answers| {
                let rv = answers[2].body["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                get(format!(
                    "/api/v1/nodes?watch=true&labelSelector=diff-watch%3Din&resourceVersion={rv}&timeoutSeconds=1"
                ))
            }),
        Seq::new("watch/initial-events")
            .send(post("/api/v1/nodes", watched("diff-w4", "initial")))
            .send(post("/api/v1/nodes", watched("diff-w5", "initial")))
            .send(get(
                "/api/v1/nodes?watch=true&labelSelector=diff-watch%3Dinitial&timeoutSeconds=1",
            ))
            .send(get(
                "/api/v1/nodes?watch=true&fieldSelector=metadata.name%3Ddiff-w5&timeoutSeconds=1",
            ))
            .send(
                get("/api/v1/nodes?watch=true&labelSelector=diff-watch%3Dinitial&timeoutSeconds=1")
                    .table(),
            )
            .send(get(format!(
                "/api/v1/namespaces/{NS}/configmaps?watch=true&labelSelector=diff-watch%3Dnone&timeoutSeconds=1"
            )))
            .send(get("/api/v1/nodes?watch=true&resourceVersion=abc&timeoutSeconds=1")),
    ]
}

/// Services (defaults, the allocated address, a missing port list), leases (the node
/// lease `kubectl describe node` reads), custom resource definitions and collection deletes.
fn more_resources() -> Vec<Seq> {
    let services = format!("/api/v1/namespaces/{NS}/services");
    let cms = format!("/api/v1/namespaces/{NS}/configmaps");
    let leases = format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/leases");
    vec![
        Seq::new("services/create")
            .send(post(
                services.clone(),
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "diff-svc"},
                       "spec": {"selector": {"app": "llm"}, "ports": [{"port": 80}, {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}]}}),
            ))
            .send(post(
                services.clone(),
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "diff-svc"},
                       "spec": {"selector": {"app": "llm"}, "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}]}}),
            ))
            .send(get(format!("{services}/diff-svc")))
            .send(post(
                services.clone(),
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "diff-svc-noports"}, "spec": {}}),
            ))
            .send(post(
                format!("{services}?dryRun=All"),
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "diff-svc-headless"},
                       "spec": {"clusterIP": "None", "selector": {"app": "llm"}}}),
            ))
            .send(delete(format!("{services}/diff-svc"))),
        Seq::new("leases/node-lease")
            .send(get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/diff-no-such-node"))
            .send(post(
                leases.clone(),
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "diff-lease"},
                       "spec": {"holderIdentity": "diff-node", "leaseDurationSeconds": 40, "renewTime": "2026-01-02T03:04:05.000000Z"}}),
            ))
            .send(get(format!("{leases}/diff-lease")))
            .send(delete(format!("{leases}/diff-lease"))),
        Seq::new("crds/missing")
            .send(get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/diff-missing.example.com")),
        Seq::new("deletecollection/by-label")
            .send(post(cms.clone(), configmap("diff-dc-1", json!({"diff-dc": "yes"}), json!({}))))
            .send(post(cms.clone(), configmap("diff-dc-2", json!({"diff-dc": "yes"}), json!({}))))
            .send(post(cms.clone(), configmap("diff-dc-3", json!({"diff-dc": "no"}), json!({}))))
            .send(delete(format!("{cms}?labelSelector=diff-dc%3Dyes&dryRun=All")))
            .send(delete(format!("{cms}?labelSelector=diff-dc%3Dyes")))
            .send(get(format!("{cms}?labelSelector=diff-dc")))
            .send(delete("/api/v1/namespaces")),
    ]
}

/// What the API server refuses of a pod on create: no containers, containers without name
/// or image, bad or duplicate names (init containers against all), unsupported policies,
/// requests over limits, bad ports.
fn pod_validation() -> Vec<Seq> {
    let pods = format!("/api/v1/namespaces/{NS}/pods?dryRun=All");
    let pod = |spec: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "diff-invalid"}, "spec": spec});
    let c = |name: &str, image: &str| json!({"name": name, "image": image});
    let mut seq = Seq::new("pods/validation");
    for spec in [
        json!({}),
        json!({"containers": [{"name": "c"}]}),
        json!({"containers": [{"image": "i"}]}),
        json!({"containers": [c("Bad_Name", "i"), c("Bad_Name", "i")]}),
        json!({"containers": [c("a.b", "i")]}),
        json!({"restartPolicy": "Sometimes", "dnsPolicy": "X",
               "containers": [{"name": "c", "image": "i", "imagePullPolicy": "Maybe"}]}),
        json!({"containers": [{"name": "c", "image": "i",
               "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}),
        json!({"containers": [{"name": "c", "image": "i",
               "ports": [{"containerPort": 0}, {"containerPort": 70000, "protocol": "FOO"}, {"containerPort": 8080}]}]}),
        json!({"containers": [c("c", " i")], "initContainers": [c("c", "j"), c("d", "j"), c("d", "")]}),
        json!({"containers": [c("c", "i"), c("d", "i")], "restartPolicy": "OnFailure"}),
    ] {
        seq = seq.send(post(pods.clone(), pod(spec)));
    }
    vec![seq]
}

/// Server-side apply: create, a manager dropping a field it stops applying, conflicts with
/// another applier and with an `Update` manager, `force`, shared ownership, and what is
/// refused (no field manager, unknown fields, another name, `force` on other patches).
fn server_side_apply() -> Vec<Seq> {
    let at = |query: &str| format!("/api/v1/namespaces/{NS}/configmaps/diff-ssa?{query}");
    let cm = |data: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: diff-ssa\n  labels: {{x: \"1\"}}\ndata:\n{data}"
        )
    };
    vec![
        Seq::new("apply/ownership")
            .send(apply_yaml(at("fieldManager=m1"), &cm("  a: \"1\"\n  b: \"2\"\n")))
            .send(apply_yaml(at("fieldManager=m1"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: diff-ssa\ndata:\n  a: \"1\"\n"))
            .send(apply_yaml(at("fieldManager=m2"), &cm("  a: \"9\"\n  c: \"3\"\n")))
            .send(apply_yaml(at("fieldManager=m2&dryRun=All"), &cm("  a: \"1\"\n  c: \"3\"\n")))
            .send(apply_yaml(at("fieldManager=m2&force=true"), &cm("  a: \"9\"\n  c: \"3\"\n")))
            .send(apply_yaml(at("fieldManager=m1"), &cm("  a: \"9\"\n")))
            .send(merge(at("fieldManager=editor"), json!({"data": {"c": "edited"}})))
            .send(apply_yaml(at("fieldManager=m2"), &cm("  a: \"9\"\n  c: \"3\"\n")))
            // One manager per conflict: with several, the real server lists the causes in
            // Go's map order.
            .send(apply_yaml(at("fieldManager=m3"), &cm("  c: \"8\"\n")))
            .send(get(at(""))),
        Seq::new("apply/refused")
            .send(apply_yaml(at(""), &cm("  a: \"1\"\n")))
            .send(apply_yaml(at("fieldManager=m1"), "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"diff-ssa\"}, \"bogus\": 1}"))
            .send(apply_yaml(at("fieldManager=m1"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n"))
            .send(apply_yaml(at("fieldManager=m1"), "apiVersion: v1\n"))
            .send(merge(at("force=true"), json!({}))),
    ]
}

/// `kubectl get pods` (and `-o wide`): the pod printer's Table for unscheduled, gated,
/// bound and terminating pods.
fn pod_tables() -> Vec<Seq> {
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    let pod = |name: &str, extra: Value| {
        let mut p = gpu_pod(name, json!({}));
        p["metadata"]["labels"] = json!({"diff-table": "pods"});
        for (k, v) in extra.as_object().into_iter().flatten() {
            p["spec"][k] = v.clone();
        }
        p
    };
    vec![
        Seq::new("table/pods")
            .send(post(
                pods.clone(),
                pod(
                    "diff-tp-unscheduled",
                    json!({"schedulerName": "diff-no-scheduler"}),
                ),
            ))
            .send(post(
                pods.clone(),
                pod(
                    "diff-tp-gated",
                    json!({"schedulingGates": [{"name": "example.com/wait"}]}),
                ),
            ))
            .send(post(
                pods.clone(),
                pod("diff-tp-bound", json!({"nodeName": "diff-no-such-node"})),
            ))
            .send(get(format!("{pods}?labelSelector=diff-table%3Dpods")).table())
            .send(get(format!("{pods}/diff-tp-bound")).table())
            .send(delete(format!("{pods}/diff-tp-bound")))
            .send(get(format!("{pods}?labelSelector=diff-table%3Dpods")).table())
            .send(delete(format!("{pods}/diff-tp-bound?gracePeriodSeconds=0"))),
    ]
}

fn rbac() -> Vec<Seq> {
    vec![
        Seq::new("rbac/viewer-writes-denied")
            .send(post("/api/v1/nodes", node("diff-rbac", json!({"a": "1"}))))
            .send(
                merge(
                    node_path("diff-rbac"),
                    json!({"metadata": {"labels": {"a": "2"}}}),
                )
                .viewer(),
            )
            .send(
                json_patch(
                    node_path("diff-rbac"),
                    json!([{"op": "add", "path": "/metadata/labels/b", "value": "1"}]),
                )
                .viewer(),
            )
            .send(delete(node_path("diff-rbac")).viewer())
            .send(put(node_path("diff-rbac"), node("diff-rbac", json!({}))).viewer())
            .send(post("/api/v1/nodes", node("diff-rbac-new", json!({}))).viewer())
            .send(
                post(
                    format!("/api/v1/namespaces/{NS}/configmaps"),
                    configmap("diff-cm-rbac", json!({}), json!({})),
                )
                .viewer(),
            )
            .send(delete(cm_path("diff-cm-missing")).viewer())
            .send(get(node_path("diff-rbac"))),
        Seq::new("rbac/group-resources")
            .send(get(format!(
                "/apis/apps/v1/namespaces/{NS}/deployments/diff-missing"
            )))
            .send(
                merge(
                    format!("/apis/apps/v1/namespaces/{NS}/deployments/diff-missing"),
                    json!({"metadata": {"labels": {"a": "1"}}}),
                )
                .viewer(),
            )
            .send(delete(format!(
                "/apis/batch/v1/namespaces/{NS}/jobs/diff-missing"
            )))
            .send(get(format!(
                "/apis/apps/v1/namespaces/{NS}/deployments?labelSelector={}",
                q("x in (a")
            )))
            .send(get(format!(
                "/apis/apps/v1/namespaces/{NS}/deployments?fieldSelector={}",
                q("spec.replicas=1")
            )))
            .send(get(format!(
                "/apis/batch/v1/namespaces/{NS}/jobs?fieldSelector={}",
                q("spec.parallelism=1")
            ))),
        Seq::new("rbac/viewer-reads-allowed")
            .send(post(
                "/api/v1/nodes",
                node("diff-rbac-read", json!({"diff-rbac-read": "1"})),
            ))
            .send(get(node_path("diff-rbac-read")).viewer())
            .send(get("/api/v1/nodes?labelSelector=diff-rbac-read").viewer())
            .send(get(node_path("diff-rbac-missing")).viewer()),
    ]
}

fn namespaces_and_pods() -> Vec<Seq> {
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    vec![
        Seq::new("namespace/missing-namespace-on-create")
            .send(post(
                "/api/v1/namespaces/diff-missing-ns/configmaps",
                configmap("diff-cm-x", json!({}), json!({})),
            ))
            .send(post(
                "/api/v1/namespaces/diff-missing-ns/pods",
                gpu_pod("diff-pod", json!({"requests": {"nvidia.com/gpu": "1"}})),
            ))
            .send(post(
                "/api/v1/namespaces/diff-missing-ns/configmaps?dryRun=All",
                configmap("diff-cm-x", json!({}), json!({})),
            ))
            .send(get("/api/v1/namespaces/diff-missing-ns/configmaps/diff-cm-x"))
            .send(get("/api/v1/namespaces/diff-missing-ns/configmaps"))
            .send(get("/api/v1/namespaces/diff-missing-ns")),
        // ownerReferences merge by uid; `$patch: delete` removes one.
        Seq::new("configmap/strategic-merge-of-owner-references-by-uid")
            .send(post(
                format!("/api/v1/namespaces/{NS}/configmaps"),
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "diff-cm-owned", "ownerReferences": [
                           {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner-a",
                            "uid": "11111111-1111-1111-1111-111111111111"}]}}),
            ))
            .send(strategic(
                cm_path("diff-cm-owned"),
                json!({"metadata": {"ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner-b",
                     "uid": "22222222-2222-2222-2222-222222222222"},
                    {"uid": "11111111-1111-1111-1111-111111111111", "name": "owner-a-renamed"}]}}),
            ))
            .send(strategic(
                cm_path("diff-cm-owned"),
                json!({"metadata": {"ownerReferences": [
                    {"uid": "22222222-2222-2222-2222-222222222222", "$patch": "delete"}]}}),
            ))
            .send(get(cm_path("diff-cm-owned"))),
        Seq::new("namespace/get-existing")
            .send(get(format!("/api/v1/namespaces/{NS}")))
            .send(get(format!("/api/v1/namespaces/{NS}/configmaps/diff-cm-missing"))),
        // What the API server adds to a pod on create (defaults, default tolerations,
        // priority, QoS class), and the pod fields a fieldSelector takes. The pods name a
        // scheduler nobody runs, so they stay Pending on the real server too.
        Seq::new("pod/defaults-and-field-selectors")
            .send(post(
                pods.clone(),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "diff-defaults"},
                       "spec": {"schedulerName": "diff-scheduler",
                                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"}],
                                "containers": [
                                    {"name": "c", "image": "registry.example.com/llm:1",
                                     "ports": [{"containerPort": 80}],
                                     "resources": {"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}},
                                    {"name": "d", "image": "busybox"}]}}),
            ))
            .send(post(
                pods.clone(),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "diff-guaranteed"},
                       "spec": {"schedulerName": "diff-scheduler", "restartPolicy": "Never",
                                "tolerations": [{"operator": "Exists"}],
                                "containers": [{"name": "c", "image": "registry.example.com/llm@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                                "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}}]}}),
            ))
            .send(post(
                pods.clone(),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "diff-besteffort"},
                       "spec": {"schedulerName": "diff-other-scheduler",
                                "containers": [{"name": "c", "image": "busybox:latest"}]}}),
            ))
            .send(get(format!("{pods}/diff-defaults")))
            .send(get(format!(
                "{pods}?fieldSelector={}",
                q("spec.schedulerName=diff-scheduler")
            )))
            .send(get(format!(
                "{pods}?fieldSelector={}",
                q("spec.schedulerName=diff-other-scheduler,spec.restartPolicy=Always")
            )))
            .send(get(format!(
                "{pods}?fieldSelector={}",
                q("spec.restartPolicy=Never,spec.hostNetwork=false")
            )))
            .send(get(format!(
                "/api/v1/namespaces/{NS}/events?fieldSelector={}",
                q("source=diff-nobody,reportingComponent=diff-nobody")
            )))
            .send(delete(format!("{pods}/diff-defaults?gracePeriodSeconds=0")))
            .send(delete(format!("{pods}/diff-guaranteed?gracePeriodSeconds=0")))
            .send(delete(format!("{pods}/diff-besteffort?gracePeriodSeconds=0"))),
        // A strategic merge patch merges keyed lists item by item: containers by name.
        Seq::new("pod/strategic-merge-of-containers-by-name")
            .send(post(
                pods.clone(),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "diff-smp-pod"},
                       "spec": {"schedulerName": "diff-scheduler",
                                "containers": [{"name": "c", "image": "busybox:1.36"},
                                               {"name": "d", "image": "busybox:1.36"}]}}),
            ))
            .send(strategic(
                format!("{pods}/diff-smp-pod"),
                json!({"spec": {"containers": [{"name": "d", "image": "busybox:1.37"}]}}),
            ))
            .send(delete(format!("{pods}/diff-smp-pod?gracePeriodSeconds=0"))),
        // A pod bound to a node is deleted gracefully: marked and kept (no kubelet ends it
        // here), until a delete with grace period 0 removes it.
        Seq::new("pod/graceful-deletion-of-a-bound-pod")
            .send(post(
                pods.clone(),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "diff-bound"},
                       "spec": {"nodeName": "diff-nowhere", "terminationGracePeriodSeconds": 45,
                                "containers": [{"name": "c", "image": "busybox:1.36"}]}}),
            ))
            .send(delete(format!("{pods}/diff-bound")))
            .send(get(format!("{pods}/diff-bound")))
            .send(delete(format!("{pods}/diff-bound?gracePeriodSeconds=60")))
            .send(delete(format!("{pods}/diff-bound?gracePeriodSeconds=5&dryRun=All")))
            .send(get(format!("{pods}/diff-bound")))
            .send(delete(format!("{pods}/diff-bound?gracePeriodSeconds=0")))
            .send(get(format!("{pods}/diff-bound"))),
        Seq::new("pod/gpu-request-without-limit")
            .send(post(
                pods.clone(),
                gpu_pod("diff-gpu", json!({"requests": {"nvidia.com/gpu": "1"}})),
            ))
            .send(post(
                pods.clone(),
                gpu_pod("diff-gpu", json!({"requests": {"nvidia.com/gpu": "1", "cpu": "1"}})),
            ))
            .send(get(format!("{pods}/diff-gpu"))),
        Seq::new("pod/gpu-request-differs-from-limit")
            .send(post(
                pods.clone(),
                gpu_pod(
                    "diff-gpu",
                    json!({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}),
                ),
            ))
            .send(post(
                pods.clone(),
                gpu_pod(
                    "diff-gpu",
                    json!({"requests": {"example.com/fpga": "2"}, "limits": {"example.com/fpga": "1"}}),
                ),
            )),
        Seq::new("pod/gpu-init-container-without-limit").send(post(
            pods.clone(),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "diff-gpu-init"},
                   "spec": {"initContainers": [{"name": "init", "image": "i",
                                                "resources": {"requests": {"nvidia.com/gpu": "1"}}}],
                            "containers": [{"name": "c", "image": "i",
                                            "resources": {"requests": {"nvidia.com/gpu": "1"},
                                                          "limits": {"nvidia.com/gpu": "1"}}}]}}),
        )),
    ]
}

// ---------------------------------------------------------------------------------------
// Running and comparing

#[derive(Debug, Clone)]
struct Resp {
    code: u16,
    body: Value,
    /// The texts of the `Warning` headers, in order.
    warnings: Vec<String>,
}

struct Backend {
    name: &'static str,
    admin: kube::Client,
    viewer: Option<kube::Client>,
    bogus: kube::Client,
    anonymous: kube::Client,
}

impl Backend {
    async fn send(&self, r: &Req) -> Resp {
        let client = match r.user {
            User::Admin => &self.admin,
            User::Viewer => self
                .viewer
                .as_ref()
                .expect("viewer sequences are skipped without a viewer"),
            User::Bogus => &self.bogus,
            User::Anonymous => &self.anonymous,
        };
        let mut builder = Request::builder().method(r.method.clone()).uri(&r.path);
        if let Some(ct) = r.content_type {
            builder = builder.header(http::header::CONTENT_TYPE, ct);
        }
        if let Some(accept) = r.accept {
            builder = builder.header(http::header::ACCEPT, accept);
        }
        let body = r.body.clone().unwrap_or_default().into_bytes();
        let request = builder
            .body(kube::client::Body::from(body))
            .expect("request");
        let response = client
            .send(request)
            .await
            .unwrap_or_else(|e| panic!("{}: {}: {e}", self.name, r.label()));
        let code = response.status().as_u16();
        let warnings = response
            .headers()
            .get_all(http::header::WARNING)
            .iter()
            .map(|w| String::from_utf8_lossy(w.as_bytes()).into_owned())
            .collect();
        let bytes = response
            .into_body()
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{}: reading the answer to {}: {e}", self.name, r.label()))
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        // A watch answers with one event per line.
        let events = || {
            text.lines()
                .map(serde_json::from_str::<Value>)
                .collect::<Result<Vec<_>, _>>()
                .ok()
                .filter(|_| r.path.contains("watch=true") && code == 200)
        };
        let body = match events() {
            Some(events) => Value::Array(events),
            None => serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(text.clone().into_owned())),
        };
        Resp {
            code,
            body,
            warnings,
        }
    }

    async fn run(&self, seq: &Seq) -> Vec<(Req, Resp)> {
        let mut answers: Vec<Resp> = Vec::new();
        let mut out = Vec::new();
        for step in &seq.steps {
            let req = match step {
                Step::Fixed(r) => r.clone(),
                Step::Dynamic(f) => f(&answers),
            };
            let resp = self.send(&req).await;
            answers.push(resp.clone());
            out.push((req, resp));
        }
        out
    }

    /// Deletes what an earlier run left behind and makes sure the namespace exists.
    async fn clean(&self) {
        let list = self.send(&get("/api/v1/nodes")).await;
        for item in list.body["items"].as_array().into_iter().flatten() {
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            if name.starts_with("diff-") {
                let r = self
                    .send(&delete(format!("{}?gracePeriodSeconds=0", node_path(name))))
                    .await;
                assert!(r.code == 200 || r.code == 404, "{}: {r:?}", self.name);
            }
        }
        let ns = self
            .send(&post(
                "/api/v1/namespaces",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
            ))
            .await;
        assert!(ns.code == 201 || ns.code == 409, "{}: {ns:?}", self.name);
        // The suite's config maps and pods (a bound pod goes only with grace period 0).
        for collection in [
            format!("/api/v1/namespaces/{NS}/configmaps"),
            format!("/api/v1/namespaces/{NS}/pods"),
        ] {
            let list = self.send(&get(collection.clone())).await;
            for item in list.body["items"].as_array().into_iter().flatten() {
                let name = item["metadata"]["name"].as_str().unwrap_or_default();
                if name.starts_with("diff-") {
                    self.send(&delete(format!("{collection}/{name}?gracePeriodSeconds=0")))
                        .await;
                }
            }
        }
        for (path, what) in [
            ("/api/v1/nodes", "diff- nodes"),
            (&*format!("/api/v1/namespaces/{NS}/pods"), "diff- pods"),
            (
                &*format!("/api/v1/namespaces/{NS}/configmaps"),
                "diff- config maps",
            ),
        ] {
            let mut left = usize::MAX;
            for _ in 0..100 {
                let list = self.send(&get(path)).await;
                left = list.body["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|i| {
                        i["metadata"]["name"]
                            .as_str()
                            .is_some_and(|n| n.starts_with("diff-"))
                    })
                    .count();
                if left == 0 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            assert_eq!(left, 0, "{}: {what} are still there", self.name);
        }
    }
}

/// The alphabet of the five characters the API server appends to a `generateName`.
const GENERATED_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// Replaces `<prefix><5 generated characters>` by `<prefix>*****` in every string.
fn mask_generated_names(v: &mut Value, prefix: &str) {
    match v {
        Value::String(s) => {
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(i) = rest.find(prefix) {
                let after = &rest[i + prefix.len()..];
                let suffix: String = after.chars().take(5).collect();
                out.push_str(&rest[..i + prefix.len()]);
                if suffix.chars().count() == 5
                    && suffix.chars().all(|c| GENERATED_ALPHABET.contains(c))
                {
                    out.push_str("*****");
                    rest = &after[suffix.len()..];
                } else {
                    rest = after;
                }
            }
            out.push_str(rest);
            *s = out;
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| mask_generated_names(i, prefix)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|i| mask_generated_names(i, prefix)),
        _ => {}
    }
}

/// Replaces the instance-specific parts of an answer (see the module documentation).
fn normalise(req: &Req, body: &mut Value, rvs: &mut HashMap<String, usize>) {
    let sent: Option<Value> = req
        .body
        .as_deref()
        .and_then(|b| serde_json::from_str(b).ok());
    if let Some(prefix) = sent
        .as_ref()
        .and_then(|b| b["metadata"]["generateName"].as_str())
        .filter(|p| !p.is_empty())
    {
        mask_generated_names(body, prefix);
    }
    normalise_answer(body, rvs);
}

fn normalise_answer(body: &mut Value, rvs: &mut HashMap<String, usize>) {
    if let Some(events) = body.as_array_mut() {
        // Only a watch's first Table event defines the columns (where Age is).
        let mut columns = Value::Null;
        for event in events {
            let object = &mut event["object"];
            let inherits = object["kind"] == "Table" && object["columnDefinitions"].is_null();
            if inherits {
                object["columnDefinitions"] = columns.clone();
            } else if object["kind"] == "Table" {
                columns = object["columnDefinitions"].clone();
            }
            normalise_answer(object, rvs);
            if inherits {
                object["columnDefinitions"] = Value::Null;
            }
        }
        return;
    }
    let Some(map) = body.as_object_mut() else {
        return;
    };
    if map.contains_key("gitVersion") {
        for k in ["gitCommit", "buildDate", "goVersion"] {
            if map.contains_key(k) {
                map.insert(k.to_string(), json!("<build>"));
            }
        }
        if let Some(v) = map.get_mut("gitVersion")
            && let Some(s) = v.as_str()
        {
            *v = json!(s.split('+').next().unwrap_or_default());
        }
        return;
    }
    if map.contains_key("items") {
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            if meta.contains_key("resourceVersion") {
                meta.insert("resourceVersion".into(), json!("<list-rv>"));
            }
            if meta.contains_key("continue") {
                meta.insert("continue".into(), json!("<continue>"));
            }
        }
        if let Some(items) = map.get_mut("items").and_then(Value::as_array_mut) {
            for item in items {
                normalise_object(item, rvs);
            }
        }
        return;
    }
    // Server-side printing: the Age cells and the list revision are instance-specific; each
    // row's object is normalised like an object.
    if map.get("kind").and_then(Value::as_str) == Some("Table") {
        let age = map["columnDefinitions"]
            .as_array()
            .and_then(|c| c.iter().position(|c| c["name"] == "Age"));
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for (k, placeholder) in [("resourceVersion", "<list-rv>"), ("continue", "<continue>")] {
                if meta.contains_key(k) {
                    meta.insert(k.into(), json!(placeholder));
                }
            }
        }
        for row in map["rows"].as_array_mut().into_iter().flatten() {
            if let (Some(i), Some(cells)) = (age, row["cells"].as_array_mut())
                && let Some(cell) = cells.get_mut(i)
            {
                *cell = json!("<age>");
            }
            normalise_object(&mut row["object"], rvs);
        }
        return;
    }
    if map.get("kind").and_then(Value::as_str) == Some("Status") {
        if let Some(uid) = map.get_mut("details").and_then(|d| d.get_mut("uid")) {
            *uid = json!("<uid>");
        }
        return;
    }
    normalise_object(body, rvs);
}

fn normalise_object(obj: &mut Value, rvs: &mut HashMap<String, usize>) {
    if let Some(prefix) = obj["metadata"]["generateName"]
        .as_str()
        .filter(|p| !p.is_empty())
        .map(str::to_string)
    {
        mask_generated_names(obj, &prefix);
    }
    // When a condition changed is as instance-specific as when the object was made.
    let conditions = obj
        .get_mut("status")
        .and_then(|s| s.get_mut("conditions"))
        .and_then(Value::as_array_mut);
    for condition in conditions.into_iter().flatten() {
        if condition["lastTransitionTime"].is_string() {
            condition["lastTransitionTime"] = json!("<timestamp>");
        }
    }
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    meta.remove("managedFields");
    for (k, placeholder) in [
        ("uid", "<uid>"),
        ("creationTimestamp", "<timestamp>"),
        ("deletionTimestamp", "<timestamp>"),
        ("generation", "<generation>"),
    ] {
        if meta.contains_key(k) {
            meta.insert(k.into(), json!(placeholder));
        }
    }
    if let Some(rv) = meta
        .get("resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        let n = rvs.len() + 1;
        let n = *rvs.entry(rv).or_insert(n);
        meta.insert("resourceVersion".into(), json!(format!("rv-{n}")));
    }
}

#[derive(Debug)]
struct Difference {
    path: String,
    test: Option<Value>,
    real: Option<Value>,
}

fn compare(path: &str, test: Option<&Value>, real: Option<&Value>, out: &mut Vec<Difference>) {
    match (test, real) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                compare(&format!("{path}.{k}"), a.get(k), b.get(k), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            for i in 0..a.len().max(b.len()) {
                compare(&format!("{path}[{i}]"), a.get(i), b.get(i), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Difference {
            path: path.to_string(),
            test: a.cloned(),
            real: b.cloned(),
        }),
    }
}

/// `*` matches any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len())
                .filter(|i| rest.is_char_boundary(*i))
                .any(|i| glob(tail, &rest[i..]))
        }
    }
}

fn mask(text: &str, (start, end): (&str, &str)) -> String {
    let Some(i) = text.find(start) else {
        return text.to_string();
    };
    let from = i + start.len();
    let to = text[from..].find(end).map_or(text.len(), |j| from + j);
    format!("{}…{}", &text[..from], &text[to..])
}

/// The exception that allows this difference, if any.
fn excused(sequence: &str, d: &Difference) -> Option<usize> {
    EXCEPTIONS.iter().position(|e| {
        if !glob(e.sequence, sequence) || !glob(e.path, &d.path) {
            return false;
        }
        match (e.mask, &d.test, &d.real) {
            (None, _, _) => true,
            (Some(m), Some(Value::String(a)), Some(Value::String(b))) => mask(a, m) == mask(b, m),
            _ => false,
        }
    })
}

fn show(v: &Option<Value>) -> String {
    match v {
        None => "<absent>".to_string(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 600 {
                format!("{}…", s.chars().take(600).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// Whose credentials a client of the real server sends.
enum Credentials<'a> {
    /// The kubeconfig's own.
    Kubeconfig,
    /// This bearer token instead.
    Token(&'a str),
    /// None at all: an anonymous request.
    Anonymous,
}

async fn real_client(path: &std::path::Path, credentials: Credentials<'_>) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    config.default_retry = false;
    match credentials {
        Credentials::Kubeconfig => {}
        Credentials::Token(t) => config.auth_info.token = Some(t.to_string().into()),
        Credentials::Anonymous => config.auth_info = Default::default(),
    }
    kube::Client::try_from(config).expect("client for the real server")
}

#[tokio::test]
async fn test_server_answers_like_the_real_api_server() {
    use placekit_testserver::real_cluster::{
        E2E_KUBECONFIG, E2E_VIEWER_KUBECONFIG, real_cluster_for,
    };
    let Some(kubeconfig) = real_cluster_for("the differential suite", E2E_KUBECONFIG) else {
        return;
    };
    // Without the viewer the viewer's sequences (and the unused-exception check they feed)
    // are skipped by name, or fail where a real cluster is required.
    let viewer_kubeconfig = real_cluster_for(
        "the differential suite's viewer sequences",
        E2E_VIEWER_KUBECONFIG,
    )
    .map(std::ffi::OsString::from);
    let real = Backend {
        name: "real",
        admin: real_client(&kubeconfig, Credentials::Kubeconfig).await,
        viewer: match &viewer_kubeconfig {
            Some(p) => Some(real_client(std::path::Path::new(p), Credentials::Kubeconfig).await),
            None => None,
        },
        bogus: real_client(&kubeconfig, Credentials::Token(BOGUS_TOKEN)).await,
        anonymous: real_client(&kubeconfig, Credentials::Anonymous).await,
    };
    let server = TestServer::start(ServerConfig::default())
        .await
        .expect("test server");
    let test = Backend {
        name: "test",
        admin: server.client(ADMIN_TOKEN),
        viewer: Some(server.client(READONLY_TOKEN)),
        bogus: server.client(BOGUS_TOKEN),
        anonymous: server.client_as(None),
    };
    test.clean().await;
    real.clean().await;

    let mut agree = 0;
    let mut excepted = 0;
    let mut differ: Vec<String> = Vec::new();
    let mut skipped = 0;
    let mut used = vec![false; EXCEPTIONS.len()];
    let all = sequences();
    for seq in &all {
        let needs_viewer = seq.steps.iter().any(|s| match s {
            Step::Fixed(r) => r.user == User::Viewer,
            Step::Dynamic(_) => false,
        });
        if needs_viewer && real.viewer.is_none() {
            println!("SKIP {}: needs PLACEKIT_E2E_VIEWER_KUBECONFIG", seq.name);
            skipped += 1;
            continue;
        }
        let from_test = test.run(seq).await;
        let from_real = real.run(seq).await;
        let (mut test_rvs, mut real_rvs) = (HashMap::new(), HashMap::new());
        let mut allowed = 0;
        let mut unexplained = 0;
        for (i, ((test_req, t), (real_req, r))) in from_test.iter().zip(&from_real).enumerate() {
            let label = test_req.label();
            let (mut t, mut r) = (t.clone(), r.clone());
            normalise(test_req, &mut t.body, &mut test_rvs);
            normalise(real_req, &mut r.body, &mut real_rvs);
            let mut diffs = Vec::new();
            compare(
                "code",
                Some(&json!(t.code)),
                Some(&json!(r.code)),
                &mut diffs,
            );
            compare("body", Some(&t.body), Some(&r.body), &mut diffs);
            compare(
                "warnings",
                Some(&json!(t.warnings)),
                Some(&json!(r.warnings)),
                &mut diffs,
            );
            for d in &diffs {
                match excused(&seq.name, d) {
                    Some(e) => {
                        used[e] = true;
                        allowed += 1;
                        println!(
                            "  excepted {} [{i}] {label}: {} ({})",
                            seq.name, d.path, EXCEPTIONS[e].reason
                        );
                    }
                    None => {
                        unexplained += 1;
                        println!(
                            "DIFF {} [{i}] {label}\n     {}\n       test: {}\n       real: {}",
                            seq.name,
                            d.path,
                            show(&d.test),
                            show(&d.real)
                        );
                    }
                }
            }
        }
        if unexplained > 0 {
            differ.push(seq.name.clone());
        } else if allowed > 0 {
            excepted += 1;
        } else {
            agree += 1;
        }
    }
    test.clean().await;
    real.clean().await;

    let compared = all.len() - skipped;
    println!(
        "differential: {agree}/{compared} request sequences agree; {excepted} documented \
         exceptions; {} differ{}",
        differ.len(),
        if differ.is_empty() {
            String::new()
        } else {
            format!(" ({})", differ.join(", "))
        }
    );
    let unused: Vec<&str> = EXCEPTIONS
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(e, _)| e.sequence)
        .collect();
    assert!(
        differ.is_empty(),
        "the test server answers differently from the real API server in: {}",
        differ.join(", ")
    );
    assert!(
        skipped > 0 || unused.is_empty(),
        "exceptions that no longer match any difference (remove them here and in tests/README.md): {unused:?}"
    );
}
