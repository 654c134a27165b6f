//! HTTP front: routing, authentication, RBAC, fault injection and the Kubernetes REST
//! conventions (discovery, list envelopes, `Status` errors).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::apimachinery::Selector;
use crate::apimachinery::field::{go_json, go_quote};
use crate::apimachinery::strict::{FieldValidation, drop_unknown_fields, strict_error, warning};
use crate::apply::Manager;
use crate::control::{ConcurrentWrite, Fault, FaultAction, User};
use crate::resources::{GROUPS, RESOURCES, Resource, find};
use crate::state::{Failure, State, verb_for};
use crate::status::{ApiError, FieldError, FieldValue};
use crate::store::{FieldSelector, PatchType};

/// What the job storage tells a client that deletes a Job without a propagation policy.
const JOB_DELETION_WARNING: &str = "child pods are preserved by default when jobs are deleted; \
     set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to \
     suppress this warning";

/// Largest request body accepted (the real server's limit is 3 MiB for most requests).
const MAX_BODY: usize = 3 * 1024 * 1024;

pub use crate::Body;

/// The answer to a request, or an instruction to drop the connection.
pub type Outcome = Result<Response<Body>, DroppedConnection>;

/// Returned to hyper to close the connection without an answer (an injected fault).
#[derive(Debug)]
pub struct DroppedConnection;

impl std::fmt::Display for DroppedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by fault injection")
    }
}

impl std::error::Error for DroppedConnection {}

fn json_response(code: u16, body: Bytes) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body).boxed_unsync())
        .expect("valid response")
}

fn protobuf_response(body: Vec<u8>) -> Response<Body> {
    Response::builder()
        .status(StatusCode::OK)
        .header(
            http::header::CONTENT_TYPE,
            crate::protobuf::lists::MEDIA_TYPE,
        )
        .body(Full::new(Bytes::from(body)).boxed_unsync())
        .expect("valid response")
}

fn value_response(code: u16, value: &Value) -> Response<Body> {
    json_response(
        code,
        Bytes::from(serde_json::to_vec(value).expect("serialisable")),
    )
}

fn error_response(e: &ApiError) -> Response<Body> {
    // A request turned away for load: kube-apiserver's priority-and-fairness (and
    // max-in-flight) filter answers with Go's `http.Error`, plain text, not a Status.
    let r = if e.code == 429 {
        let mut r = Response::new(
            Full::new(Bytes::from_static(
                b"Too many requests, please try again later.\n",
            ))
            .boxed_unsync(),
        );
        *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        let headers = r.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        headers.insert(
            http::header::X_CONTENT_TYPE_OPTIONS,
            http::HeaderValue::from_static("nosniff"),
        );
        r
    } else {
        value_response(e.code, &e.body)
    };
    let mut r = with_warnings(r, &e.warnings);
    if let Some(s) = e.retry_after {
        r.headers_mut().insert(
            http::header::RETRY_AFTER,
            s.to_string().parse().expect("digits"),
        );
    }
    r
}

/// A create or update body's fields the kind does not hold: refused under `Strict` (the
/// decoder's 400), else dropped; those to warn about are returned.
fn check_unknown_fields(
    resource: &Resource,
    body: &mut Value,
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let unknown = drop_unknown_fields(resource.group, resource.version, resource.kind, body);
    if validation == FieldValidation::Strict && !unknown.is_empty() {
        return Err(ApiError::cannot_decode(resource, &strict_error(&unknown)));
    }
    Ok(warnings_under(validation, unknown))
}

/// The dropped fields to warn about: all of them under `Warn`, none under `Ignore`.
fn warnings_under(validation: FieldValidation, dropped: Vec<String>) -> Vec<String> {
    if validation == FieldValidation::Warn {
        dropped.iter().map(|field| warning(field)).collect()
    } else {
        Vec::new()
    }
}

/// The `labelSelector` and `fieldSelector` of a list, watch or collection delete; `name`
/// adds `metadata.name=<name>`.
fn selectors(
    query: &HashMap<String, String>,
    resource: &Resource,
    name: Option<&str>,
) -> Result<(Selector, FieldSelector), ApiError> {
    let labels = match query.get("labelSelector") {
        // The list handler answers `errors.NewBadRequest(err.Error())`.
        Some(s) => Selector::parse(s).map_err(|e| ApiError::bad_request(e.0))?,
        None => Selector::default(),
    };
    let by_name = name.map(|n| format!("metadata.name={n}"));
    let fields = match (query.get("fieldSelector"), by_name) {
        (Some(s), Some(n)) => FieldSelector::parse(&format!("{s},{n}"), resource)?,
        (Some(s), None) => FieldSelector::parse(s, resource)?,
        (None, Some(n)) => FieldSelector::parse(&n, resource)?,
        (None, None) => FieldSelector::default(),
    };
    Ok((labels, fields))
}

/// Adds a `Warning: 299 - "…"` header per text, as the API server's warning recorder does.
fn with_warnings(mut response: Response<Body>, warnings: &[String]) -> Response<Body> {
    for warning in warnings {
        let text = format!("299 - {}", go_quote(warning));
        if let Ok(value) = http::HeaderValue::from_str(&text) {
            response.headers_mut().append(http::header::WARNING, value);
        }
    }
    response
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'+', _) => out.push(b' '),
            (b'%', Some(b)) => {
                out.push(b);
                i += 2;
            }
            (b, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(query: Option<&str>) -> HashMap<String, String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// A request for a resource, once the path is understood.
struct Target {
    resource: &'static Resource,
    namespace: Option<String>,
    name: Option<String>,
}

fn discovery_resources(group: &str, version: &str) -> Value {
    let mut resources: Vec<Value> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .map(|r| {
            let mut resource = json!({
                "name": r.plural,
                "singularName": r.kind.to_lowercase(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": crate::resources::verbs(r),
                "shortNames": r.short_names,
                "categories": crate::resources::categories(r),
            });
            // Empty lists are left out, as the real server's encoder omits them.
            if let Some(fields) = resource.as_object_mut() {
                fields.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
            }
            resource
        })
        .collect();
    if group == "authorization.k8s.io" {
        resources.push(json!({"name": "selfsubjectaccessreviews", "singularName": "selfsubjectaccessreview", "namespaced": false, "kind": "SelfSubjectAccessReview", "verbs": ["create"]}));
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

/// `GOOS/GOARCH` of this machine, as a Go build would report it.
fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    format!("{}/{arch}", std::env::consts::OS)
}

/// Every value of a repeated query parameter, in order.
fn query_values(query: Option<&str>, key: &str) -> Vec<String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter_map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k) == key).then(|| percent_decode(v))
        })
        .collect()
}

/// Whether a write is a dry run: `dryRun` may only be `All` (`ValidateDryRun`); anything
/// else is the real server's 422 on the request's options (`PatchOptions` ...).
fn parse_dry_run(values: &[String], options_kind: &str) -> Result<bool, ApiError> {
    if values.iter().all(|v| v == "All") {
        return Ok(!values.is_empty());
    }
    Err(ApiError::invalid_kind(
        "meta.k8s.io",
        options_kind,
        "",
        vec![FieldError::not_supported(
            "dryRun",
            FieldValue::Rendered(go_json(values)),
            &["All"],
        )],
    ))
}

fn discovery(state: &State, segments: &[&str]) -> Option<Value> {
    let address = state.address.lock().expect("address").clone();
    Some(match segments {
        // The release the server follows (that of tests/control-plane); the build metadata
        // after `+` says it is this emulator, which semver ranks equal to v1.37.2.
        ["version"] => json!({
            "major": "1", "minor": "37", "emulationMajor": "1", "emulationMinor": "37",
            "minCompatibilityMajor": "1", "minCompatibilityMinor": "36",
            "gitVersion": "v1.37.2+placekit-testserver",
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "1970-01-01T00:00:00Z", "goVersion": "none (placekit-testserver)",
            "compiler": "gc", "platform": platform()
        }),
        ["api"] => {
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]})
        }
        ["api", "v1"] => discovery_resources("", "v1"),
        ["apis"] => {
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": GROUPS.iter().map(|(g, v)| json!({
            "name": g,
            "versions": [{"groupVersion": format!("{g}/{v}"), "version": v}],
            "preferredVersion": {"groupVersion": format!("{g}/{v}"), "version": v},
        })).collect::<Vec<_>>()})
        }
        ["apis", g, v] if GROUPS.contains(&(g, v)) => discovery_resources(g, v),
        ["openapi", "v3"] => crate::openapi::root(),
        ["openapi", "v3", rest @ ..] => crate::openapi::group_version(rest)?,
        _ => return None,
    })
}

fn parse_target(segments: &[&str]) -> Option<Target> {
    let (group, version, rest) = match segments {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let t = |plural: &str, namespace: Option<&str>, name: Option<&str>| {
        find(group, version, plural).map(|resource| Target {
            resource,
            namespace: namespace.map(str::to_string),
            name: name.map(str::to_string),
        })
    };
    match rest {
        ["namespaces", ns, plural] => t(plural, Some(ns), None).filter(|t| t.resource.namespaced),
        ["namespaces", ns, plural, name] => {
            t(plural, Some(ns), Some(name)).filter(|t| t.resource.namespaced)
        }
        [plural] => t(plural, None, None),
        [plural, name] => t(plural, None, Some(name)).filter(|t| !t.resource.namespaced),
        _ => None,
    }
}

/// The user kube-apiserver's anonymous authenticator makes of a request without credentials:
/// authenticated, but granted nothing beyond the public-info paths, so it is refused with 403
/// Forbidden (a wrong token is 401 Unauthorized).
fn anonymous() -> &'static User {
    static ANONYMOUS: std::sync::LazyLock<User> = std::sync::LazyLock::new(|| User {
        name: ANONYMOUS_USER.into(),
        rules: Vec::new(),
    });
    &ANONYMOUS
}

const ANONYMOUS_USER: &str = "system:anonymous";

fn authenticate<'a>(
    state: &'a State,
    req: &Request<Incoming>,
) -> Result<Option<&'a User>, ApiError> {
    if state.users.is_empty() {
        return Ok(None);
    }
    let Some(header) = req.headers().get(http::header::AUTHORIZATION) else {
        return Ok(Some(anonymous()));
    };
    let token = header
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(ApiError::unauthorized)?;
    state
        .users
        .get(token.trim())
        .map(Some)
        .ok_or_else(ApiError::unauthorized)
}

/// The `Authorization` header a request carried, as sent (for a fault that echoes it).
pub(crate) fn sent_credentials(req: &Request<Incoming>) -> String {
    req.headers()
        .get(http::header::AUTHORIZATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default()
}

async fn read_bytes(body: Incoming) -> Result<Bytes, ApiError> {
    Ok(Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?
        .to_bytes())
}

async fn read_body(body: Incoming) -> Result<Value, ApiError> {
    let bytes = read_bytes(body).await?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("error decoding the request body: {e}")))
}

/// The media type of a request's body, without parameters.
fn media_type(req: &Request<Incoming>) -> String {
    req.headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// An object sent to be created or replaced: JSON, or protobuf as kubectl's typed clients
/// send it.
fn decode_object(content_type: &str, bytes: &[u8]) -> Result<Value, ApiError> {
    let decoded = if content_type == "application/vnd.kubernetes.protobuf" {
        crate::protobuf::objects::decode_object(bytes)
    } else {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    };
    decoded.map_err(|e| ApiError::bad_request(format!("error decoding the request body: {e}")))
}

/// A list's `metadata`: its revision, and the paging state.
fn list_metadata(page: &crate::store::ListPage) -> Value {
    let mut metadata = json!({"resourceVersion": page.resource_version.to_string()});
    if let Some(c) = &page.continue_token {
        metadata["continue"] = Value::from(c.as_str());
    }
    if let Some(n) = page.remaining {
        metadata["remainingItemCount"] = Value::from(n);
    }
    metadata
}

fn list_envelope(resource: &Resource, page: crate::store::ListPage) -> Bytes {
    let metadata = list_metadata(&page);
    let head = format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
        resource.list_kind(),
        resource.api_version(),
        metadata
    );
    let total: usize = head.len() + page.items.iter().map(|i| i.len() + 1).sum::<usize>() + 2;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(head.as_bytes());
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.extend_from_slice(b"]}");
    Bytes::from(out)
}

/// Serves one request.
pub async fn handle(state: Arc<State>, req: Request<Incoming>) -> Outcome {
    match route(&state, req).await {
        Ok(r) => Ok(r),
        Err(Failure::Api(e)) => Ok(error_response(&e)),
        Err(Failure::Drop) => Err(DroppedConnection),
    }
}

async fn route(state: &Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, Failure> {
    let path = req.uri().path().to_string();
    let query = parse_query(req.uri().query());
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();

    if segments.first() == Some(&"placekit-test") {
        return admin(state, req, &segments[1..])
            .await
            .map_err(Failure::Api);
    }
    let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    if let Some(upstream) = &state.upstream {
        return crate::proxy::forward(state, upstream, req, &segments, watch).await;
    }
    let user = authenticate(state, &req)?;
    // `kubectl get` asks for server-side printing (nodes only; other lists fall back).
    let table = crate::table::wants_table(
        req.headers()
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    // Pods and nodes are listed in protobuf to a client that asks for it first.
    let protobuf = !state.json_lists.load(std::sync::atomic::Ordering::Relaxed)
        && crate::protobuf::lists::wants_protobuf(
            req.headers()
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
        );
    // system:public-info-viewer: what RBAC lets anyone read; discovery needs a login.
    let public = matches!(
        segments.as_slice(),
        ["version"] | ["healthz"] | ["livez"] | ["readyz"]
    );
    if user.is_some_and(|u| u.name == ANONYMOUS_USER)
        && !public
        && parse_target(&segments).is_none()
    {
        let verb = req.method().as_str().to_ascii_lowercase();
        return Err(ApiError::forbidden_path(ANONYMOUS_USER, &verb, &path).into());
    }

    if req.method() == Method::GET
        && let Some(doc) = discovery(state, &segments)
    {
        state.count("get", "discovery");
        return Ok(value_response(200, &doc));
    }
    if segments
        == [
            "apis",
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
        ]
        && req.method() == Method::POST
    {
        return self_subject_access_review(state, req, user).await;
    }

    let target = parse_target(&segments).ok_or_else(ApiError::path_not_found)?;
    let verb = verb_for(req.method(), target.name.is_some(), watch);
    let resource = target.resource;
    state.count(verb, resource.plural);

    let action = state.fault_for(verb, resource.plural);
    let req = injected_fault(action.as_ref(), req).await?;

    if let Some(u) = user
        && !u.can(verb, resource.plural)
    {
        let ns = target.namespace.as_deref().filter(|_| resource.namespaced);
        return Err(
            ApiError::forbidden(&u.name, verb, resource, ns, target.name.as_deref()).into(),
        );
    }
    let call = Call::new(target, verb, query, table, protobuf, &req)?;
    let answer = match verb {
        "get" => get_object(state, &call),
        "watch" => watch_objects(state, &call),
        "list" => list_objects(state, &call),
        "create" => create_object(state, req, &call).await,
        "update" | "patch" => update_or_patch_object(state, req, &call).await,
        "delete" | "deletecollection" => delete_objects(state, req, call).await,
        _ => Err(ApiError::method_not_allowed().into()),
    };
    // A lost answer and a warning apply to every answer, as a network and an admission
    // webhook do.
    match action {
        Some(FaultAction::LoseAnswer) => Err(Failure::Drop),
        Some(FaultAction::Warn { text }) => {
            answer.map(|r| with_warnings(r, std::slice::from_ref(&text)))
        }
        _ => answer,
    }
}

/// A SelfSubjectAccessReview, answered from the user table (JSON or protobuf body).
async fn self_subject_access_review(
    state: &Arc<State>,
    req: Request<Incoming>,
    user: Option<&User>,
) -> Result<Response<Body>, Failure> {
    state.count("create", "selfsubjectaccessreviews");
    let bytes = read_bytes(req.into_body()).await?;
    let mut review = match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) => v,
        Err(_) => crate::protobuf::decode_self_subject_access_review(&bytes).ok_or_else(|| {
            ApiError::bad_request("error decoding the SelfSubjectAccessReview body")
        })?,
    };
    let attrs = &review["spec"]["resourceAttributes"];
    let verb = attrs["verb"].as_str().unwrap_or_default();
    let resource = attrs["resource"].as_str().unwrap_or_default();
    let allowed = user.is_none_or(|u| u.can(verb, resource));
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    review["kind"] = json!("SelfSubjectAccessReview");
    review["status"] = if allowed {
        json!({"allowed": true, "reason": "allowed by the placekit test server's user table"})
    } else {
        json!({"allowed": false})
    };
    Ok(value_response(201, &review))
}

/// The fault injected for this request before it is served: an error, a dropped
/// connection or a delay. Faults that change the answer (a lost answer, a warning) apply
/// after it.
async fn injected_fault(
    action: Option<&FaultAction>,
    req: Request<Incoming>,
) -> Result<Request<Incoming>, Failure> {
    match action {
        Some(FaultAction::Status {
            code,
            retry_after_seconds,
        }) => Err(Failure::Api(ApiError::injected(
            *code,
            *retry_after_seconds,
        ))),
        Some(FaultAction::Drop) => {
            // Read the whole request first: the client has then certainly sent it and cannot
            // know whether it was processed, which is the case worth testing.
            let _ = read_bytes(req.into_body()).await;
            Err(Failure::Drop)
        }
        Some(FaultAction::Delay { millis }) => {
            tokio::time::sleep(Duration::from_millis(*millis)).await;
            Ok(req)
        }
        Some(FaultAction::EchoCredentials) => Err(Failure::Api(ApiError::echoing_credentials(
            &sent_credentials(&req),
        ))),
        Some(FaultAction::LoseAnswer | FaultAction::Warn { .. }) | None => Ok(req),
    }
}

/// A request to an object or a collection, authenticated and authorized: what each verb's
/// handler reads.
struct Call {
    target: Target,
    verb: &'static str,
    query: HashMap<String, String>,
    /// Server-side printing asked for (`kubectl get`).
    table: bool,
    /// Lists asked for in protobuf.
    protobuf: bool,
    /// The options' kind an option's error names (`CreateOptions`, `PatchOptions`...).
    options_kind: &'static str,
    /// `dryRun` as the query gives it (a delete may give it in its body instead).
    dry_run_values: Vec<String>,
    /// The query's `dryRun` of a create, update or patch.
    dry_run: bool,
    field_validation: FieldValidation,
    /// The field manager of a write (reads have none): `fieldManager`, else the user agent
    /// up to its first `/`.
    writer: Option<Manager>,
}

impl Call {
    fn new(
        target: Target,
        verb: &'static str,
        query: HashMap<String, String>,
        table: bool,
        protobuf: bool,
        req: &Request<Incoming>,
    ) -> Result<Self, Failure> {
        let dry_run_values = query_values(req.uri().query(), "dryRun");
        let options_kind = match verb {
            "create" => "CreateOptions",
            "update" => "UpdateOptions",
            "patch" => "PatchOptions",
            _ => "DeleteOptions",
        };
        let writes = matches!(verb, "create" | "update" | "patch");
        let dry_run = if writes {
            parse_dry_run(&dry_run_values, options_kind)?
        } else {
            false // a delete's comes from its DeleteOptions body or the query
        };
        let field_validation = if writes {
            FieldValidation::parse(query.get("fieldValidation").map(String::as_str)).map_err(
                |bad| {
                    ApiError::invalid_kind(
                        "meta.k8s.io",
                        options_kind,
                        "",
                        vec![FieldError::not_supported(
                            "fieldValidation",
                            FieldValue::Str(bad),
                            FieldValidation::SUPPORTED,
                        )],
                    )
                },
            )?
        } else {
            FieldValidation::Ignore
        };
        let writer = writes.then(|| Manager {
            name: query
                .get("fieldManager")
                .filter(|m| !m.is_empty())
                .cloned()
                .unwrap_or_else(|| {
                    req.headers()
                        .get(http::header::USER_AGENT)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|ua| ua.split('/').next())
                        .unwrap_or("unknown")
                        .to_string()
                }),
            apply: false,
            api_version: target.resource.api_version(),
        });
        Ok(Self {
            target,
            verb,
            query,
            table,
            protobuf,
            options_kind,
            dry_run_values,
            dry_run,
            field_validation,
            writer,
        })
    }

    fn namespace(&self) -> Option<&str> {
        self.target.namespace.as_deref()
    }

    fn flag(&self, name: &str) -> bool {
        self.query
            .get(name)
            .is_some_and(|v| v == "true" || v == "1")
    }
}

fn get_object(state: &Arc<State>, call: &Call) -> Result<Response<Body>, Failure> {
    let resource = call.target.resource;
    let name = call.target.name.as_deref().expect("named");
    let bytes = state
        .store
        .lock()
        .expect("store")
        .get(resource, call.namespace(), name)?;
    if call.table && crate::table::printable(resource.kind) {
        let object: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let metadata = json!({"resourceVersion": object["metadata"]["resourceVersion"]});
        let answer =
            crate::table::table(resource.kind, &[object], metadata, jiff::Timestamp::now());
        return Ok(value_response(200, &answer));
    }
    Ok(json_response(200, bytes))
}

fn watch_objects(state: &Arc<State>, call: &Call) -> Result<Response<Body>, Failure> {
    let resource = call.target.resource;
    // A watch of one object's URL (deprecated) is a watch of its name.
    let (labels, fields) = selectors(&call.query, resource, call.target.name.as_deref())?;
    let watch = crate::watch::Watch {
        resource,
        namespace: call
            .namespace()
            .filter(|_| resource.namespaced)
            .map(str::to_string),
        labels,
        fields,
        table: call.table,
        timeout: call
            .query
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .map(Duration::from_secs),
        initial_events_bookmark: call.flag("sendInitialEvents") && call.flag("allowWatchBookmarks"),
    };
    crate::watch::start(
        &state.store,
        watch,
        call.query.get("resourceVersion").map(String::as_str),
    )
    .map_err(Failure::Api)
}

fn list_objects(state: &Arc<State>, call: &Call) -> Result<Response<Body>, Failure> {
    let resource = call.target.resource;
    let (labels, fields) = selectors(&call.query, resource, None)?;
    let limit = call
        .query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let page = state.store.lock().expect("store").list(
        resource,
        call.namespace().filter(|_| resource.namespaced),
        &labels,
        &fields,
        limit,
        call.query.get("continue").map(String::as_str),
    )?;
    if call.table && crate::table::printable(resource.kind) {
        let objects: Vec<Value> = page
            .items
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap_or(Value::Null))
            .collect();
        let answer = crate::table::table(
            resource.kind,
            &objects,
            list_metadata(&page),
            jiff::Timestamp::now(),
        );
        return Ok(value_response(200, &answer));
    }
    let encoded = call
        .protobuf
        .then(|| crate::protobuf::lists::list(resource.kind, &list_metadata(&page), &page.items))
        .flatten();
    match encoded {
        Some(body) => Ok(protobuf_response(body)),
        None => Ok(json_response(200, list_envelope(resource, page))),
    }
}

async fn create_object(
    state: &Arc<State>,
    req: Request<Incoming>,
    call: &Call,
) -> Result<Response<Body>, Failure> {
    let resource = call.target.resource;
    let content_type = media_type(&req);
    let bytes = read_bytes(req.into_body()).await?;
    let mut body = decode_object(&content_type, &bytes)?;
    let unknown = check_unknown_fields(resource, &mut body, call.field_validation)?;
    let mut store = state.store.lock().expect("store");
    store.writer = call.writer.clone();
    let created = store.create(resource, call.namespace(), body, call.dry_run);
    store.writer = None;
    Ok(with_warnings(value_response(201, &created?), &unknown))
}

/// A PUT, or a PATCH of any of the four patch types (server-side apply apart).
async fn update_or_patch_object(
    state: &Arc<State>,
    req: Request<Incoming>,
    call: &Call,
) -> Result<Response<Body>, Failure> {
    let resource = call.target.resource;
    let ns = call.namespace();
    let name = call
        .target
        .name
        .clone()
        .ok_or_else(ApiError::method_not_allowed)?;
    let content_type = media_type(&req);
    let force = call.flag("force");
    if call.verb == "patch" && content_type == "application/apply-patch+yaml" {
        return server_side_apply(state, req, call, &name, force).await;
    }
    if force {
        return Err(ApiError::invalid_kind(
            "meta.k8s.io",
            call.options_kind,
            "",
            vec![FieldError::forbidden(
                "force",
                "may not be specified for non-apply patch",
            )],
        )
        .into());
    }
    let patch_type = if call.verb == "patch" {
        Some(match content_type.as_str() {
            "application/json-patch+json" => PatchType::Json,
            "application/merge-patch+json" => PatchType::Merge,
            "application/strategic-merge-patch+json" => PatchType::Strategic,
            _ => return Err(ApiError::unsupported_media_type().into()),
        })
    } else {
        None
    };
    let bytes = read_bytes(req.into_body()).await?;
    let mut body = match patch_type {
        Some(_) => Value::Null,
        None => decode_object(&content_type, &bytes)?,
    };
    let mut unknown = match patch_type {
        Some(_) => Vec::new(),
        None => check_unknown_fields(resource, &mut body, call.field_validation)?,
    };
    let mut store = state.store.lock().expect("store");
    if let Some(merge) = state.concurrent_write_for(resource.plural, &name) {
        store.patch(resource, ns, &name, PatchType::Merge, &merge, false)?;
    }
    store.writer = call.writer.clone();
    let result = match patch_type {
        Some(t) => store
            .patch_bytes(
                resource,
                ns,
                &name,
                t,
                &bytes,
                call.dry_run,
                call.field_validation,
            )
            .map(|(object, dropped)| {
                unknown = warnings_under(call.field_validation, dropped);
                object
            }),
        None => store.update(resource, ns, &name, body, call.dry_run),
    };
    store.writer = None;
    Ok(with_warnings(value_response(200, &result?), &unknown))
}

async fn server_side_apply(
    state: &Arc<State>,
    req: Request<Incoming>,
    call: &Call,
    name: &str,
    force: bool,
) -> Result<Response<Body>, Failure> {
    let resource = call.target.resource;
    let manager = call
        .query
        .get("fieldManager")
        .filter(|m| !m.is_empty())
        .ok_or_else(|| {
            ApiError::invalid_kind(
                "meta.k8s.io",
                "PatchOptions",
                "",
                vec![FieldError::required(
                    "fieldManager",
                    "is required for apply patch",
                )],
            )
        })?;
    let bytes = read_bytes(req.into_body()).await?;
    let config: Value = serde_yaml::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let manager = Manager {
        name: manager.clone(),
        apply: true,
        api_version: resource.api_version(),
    };
    let (object, created) = state.store.lock().expect("store").apply(
        resource,
        call.namespace(),
        name,
        config,
        &manager,
        force,
        call.dry_run,
    )?;
    Ok(value_response(if created { 201 } else { 200 }, &object))
}

/// A DELETE of one object or of a collection; its `DeleteOptions` come in the body
/// (kubectl) or in the query.
async fn delete_objects(
    state: &Arc<State>,
    req: Request<Incoming>,
    call: Call,
) -> Result<Response<Body>, Failure> {
    let resource = call.target.resource;
    let ns = call.namespace();
    if call.verb == "deletecollection" && resource.plural == "namespaces" {
        return Err(ApiError::method_not_allowed().into());
    }
    let bytes = read_bytes(req.into_body()).await?;
    let options = serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null);
    let grace_period = options["gracePeriodSeconds"].as_i64().or_else(|| {
        call.query
            .get("gracePeriodSeconds")
            .and_then(|g| g.parse::<i64>().ok())
    });
    let values = match serde_json::from_slice::<Value>(&bytes) {
        Ok(options) if !bytes.is_empty() => options["dryRun"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default(),
        _ => call.dry_run_values.clone(),
    };
    let dry_run = parse_dry_run(&values, call.options_kind)?;
    // The job storage warns before it looks the job up, found or not.
    let orphans_pods = resource.group == "batch"
        && resource.kind == "Job"
        && options["propagationPolicy"].is_null()
        && !call.query.contains_key("propagationPolicy");
    let warnings = if orphans_pods {
        vec![JOB_DELETION_WARNING.to_string()]
    } else {
        Vec::new()
    };
    let mut store = state.store.lock().expect("store");
    let status = match call.target.name.as_deref() {
        Some(name) => store.delete(resource, ns, name, dry_run, grace_period),
        None => {
            let (labels, fields) = selectors(&call.query, resource, None)?;
            store.delete_collection(
                resource,
                ns.filter(|_| resource.namespaced),
                &labels,
                &fields,
                dry_run,
                grace_period,
            )
        }
    }
    .map_err(|e| e.with_warnings(warnings.clone()))?;
    Ok(with_warnings(value_response(200, &status), &warnings))
}

/// Test-control endpoints under `/placekit-test/` (no authentication; loopback only):
/// `POST faults`, `POST concurrent-writes`, `GET counters`, `DELETE counters`.
async fn admin(
    state: &Arc<State>,
    req: Request<Incoming>,
    segments: &[&str],
) -> Result<Response<Body>, ApiError> {
    match (req.method().clone(), segments) {
        (Method::POST, ["faults"]) => {
            let fault: Fault = serde_json::from_value(read_body(req.into_body()).await?)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            state.faults.lock().expect("faults").push(fault);
            Ok(value_response(201, &json!({"ok": true})))
        }
        (Method::GET, ["faults"]) => Ok(value_response(
            200,
            &json!(*state.faults.lock().expect("faults")),
        )),
        (Method::POST, ["concurrent-writes"]) => {
            let w: ConcurrentWrite = serde_json::from_value(read_body(req.into_body()).await?)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            state.concurrent_writes.lock().expect("writers").push(w);
            Ok(value_response(201, &json!({"ok": true})))
        }
        (Method::GET, ["counters"]) => Ok(value_response(
            200,
            &json!(*state.counters.lock().expect("counters")),
        )),
        (Method::DELETE, ["counters"]) => {
            state.counters.lock().expect("counters").clear();
            Ok(value_response(200, &json!({"ok": true})))
        }
        _ => Err(ApiError::path_not_found()),
    }
}

/// Serves connections on `listener` (over TLS when `tls` is given) until `shutdown` resolves.
pub async fn serve(
    state: Arc<State>,
    listener: tokio::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let state = state.clone();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| handle(state.clone(), req));
                    let builder = hyper::server::conn::http1::Builder::new();
                    match acceptor {
                        Some(acceptor) => {
                            if let Ok(tls_stream) = acceptor.accept(stream).await {
                                let _ = builder
                                    .serve_connection(hyper_util::rt::TokioIo::new(tls_stream), service)
                                    .await;
                            }
                        }
                        None => {
                            let _ = builder
                                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                                .await;
                        }
                    }
                });
            }
        }
    }
}
