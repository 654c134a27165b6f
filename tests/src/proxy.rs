//! The fault engine in front of a real kube-apiserver: a reverse proxy that counts requests,
//! injects faults, lost answers and concurrent writers, and otherwise forwards every request
//! unchanged (the client's own bearer token included) and returns the real answer.
//!
//! A real server has no hooks for "drop the connection on the third PATCH" or "someone else
//! writes between your read and your write"; this puts them on top of real semantics, so the
//! end-to-end fault matrix runs against the real thing too.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

use crate::Body;
use crate::control::FaultAction;
use crate::state::{Failure, State, verb_for};
use crate::status::ApiError;
use crate::upstream::Upstream;

/// Headers passed through in each direction; everything else (hop-by-hop headers,
/// `Host`, `Content-Length`) is the proxy's own business.
const REQUEST_HEADERS: &[&str] = &[
    "authorization",
    "content-type",
    "accept",
    "user-agent",
    "impersonate-user",
    "impersonate-group",
];
const RESPONSE_HEADERS: &[&str] = &["content-type", "retry-after", "warning", "audit-id"];

/// What a request is about, for the counters, faults and concurrent writers: the same
/// (verb, plural) pairs the emulating server uses, for any resource the real server has.
#[derive(Debug, PartialEq, Eq)]
pub struct ResourceRequest {
    pub verb: &'static str,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// `None` for paths that are not a resource (discovery, `/version`, `/openapi`, health).
pub fn classify(method: &Method, segments: &[&str], watch: bool) -> Option<ResourceRequest> {
    let rest = match segments {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(name.to_string()), None),
        [plural, name, sub] => (*plural, Some(name.to_string()), Some(sub.to_string())),
        _ => return None,
    };
    Some(ResourceRequest {
        verb: verb_for(method, name.is_some(), watch),
        plural: plural.to_string(),
        namespace,
        name,
        subresource,
    })
}

/// Serves one request by forwarding it, with the test hooks applied on the way.
pub(crate) async fn forward(
    state: &Arc<State>,
    upstream: &Upstream,
    req: Request<Incoming>,
    segments: &[&str],
    watch: bool,
) -> Result<Response<Body>, Failure> {
    let target = classify(req.method(), segments, watch);
    let mut lose_answer = false;
    if let Some(target) = &target {
        state.count(target.verb, &target.plural);
        match state.fault_for(target.verb, &target.plural) {
            Some(FaultAction::Status {
                code,
                retry_after_seconds,
            }) => return Err(Failure::Api(ApiError::injected(code, retry_after_seconds))),
            Some(FaultAction::Drop) => {
                // The whole request is read first, as the emulating server does.
                let _ = req.into_body().collect().await;
                return Err(Failure::Drop);
            }
            Some(FaultAction::Delay { millis }) => {
                tokio::time::sleep(Duration::from_millis(millis)).await
            }
            Some(FaultAction::LoseAnswer) => lose_answer = true,
            Some(FaultAction::EchoCredentials) => {
                return Err(Failure::Api(ApiError::echoing_credentials(
                    &crate::server::sent_credentials(&req),
                )));
            }
            // Warnings are the real server's own behind the proxy.
            Some(FaultAction::Warn { .. }) | None => {}
        }
    } else if req.method() == Method::GET {
        state.count("get", "discovery");
    }

    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?
        .to_bytes();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());

    if let Some(target) = &target
        && matches!(target.verb, "update" | "patch")
        && target.subresource.is_none()
        && let Some(name) = &target.name
        && let Some(merge_patch) = state.concurrent_write_for(&target.plural, name)
    {
        // Someone else's write lands between the client's read and this write.
        let path = parts.uri.path().to_string();
        let mut other = Request::builder()
            .method(Method::PATCH)
            .uri(path)
            .header(http::header::HOST, upstream.authority())
            .header(http::header::CONTENT_TYPE, "application/merge-patch+json");
        if let Some(auth) = parts.headers.get(http::header::AUTHORIZATION) {
            other = other.header(http::header::AUTHORIZATION, auth);
        }
        let other = other
            .body(Full::new(Bytes::from(
                serde_json::to_vec(&merge_patch).expect("serialisable"),
            )))
            .expect("valid request");
        let answer = upstream
            .send(other)
            .await
            .map_err(|e| ApiError::upstream(&e))?;
        if !answer.status().is_success() {
            return Err(Failure::Api(ApiError::upstream(&format!(
                "the concurrent write failed upstream: {} {}",
                answer.status(),
                String::from_utf8_lossy(answer.body())
            ))));
        }
    }

    let mut forwarded = Request::builder()
        .method(parts.method.clone())
        .uri(path_and_query)
        .header(http::header::HOST, upstream.authority());
    for name in REQUEST_HEADERS {
        for value in parts.headers.get_all(*name) {
            forwarded = forwarded.header(*name, value);
        }
    }
    let forwarded = forwarded.body(Full::new(body)).expect("valid request");
    let answer = upstream
        .open(forwarded)
        .await
        .map_err(|e| ApiError::upstream(&e))?;
    if lose_answer {
        // The real server made the change; the client never hears of it.
        return Err(Failure::Drop);
    }
    let (answer_parts, answer_body) = answer.into_parts();
    let body = if watch {
        // A watch's events are passed on as they come; the stream ends where the real
        // server's does (or breaks).
        let frames = futures::stream::unfold(answer_body, |mut body| async move {
            match body.frame().await {
                Some(Ok(frame)) => Some((Ok::<_, std::convert::Infallible>(frame), body)),
                _ => None,
            }
        });
        http_body_util::StreamBody::new(frames).boxed_unsync()
    } else {
        let whole = answer_body
            .collect()
            .await
            .map_err(|e| ApiError::upstream(&e))?
            .to_bytes();
        Full::new(whole).boxed_unsync()
    };
    let mut response = Response::builder().status(answer_parts.status);
    for name in RESPONSE_HEADERS {
        for value in answer_parts.headers.get_all(*name) {
            response = response.header(*name, value);
        }
    }
    Ok(response.body(body).unwrap_or_else(|_| {
        let mut r = Response::new(Full::new(Bytes::new()).boxed_unsync());
        *r.status_mut() = StatusCode::BAD_GATEWAY;
        r
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(path: &str) -> Vec<&str> {
        path.trim_matches('/').split('/').collect()
    }

    #[test]
    fn resource_requests_are_classified_like_the_emulating_server() {
        let c = |m: Method, p: &str| classify(&m, &segments(p), false);
        let patch = c(Method::PATCH, "/api/v1/nodes/gpu-1").expect("resource");
        assert_eq!((patch.verb, patch.plural.as_str()), ("patch", "nodes"));
        assert_eq!(patch.name.as_deref(), Some("gpu-1"));
        let list = c(Method::GET, "/api/v1/namespaces/ml/pods").expect("resource");
        assert_eq!((list.verb, list.plural.as_str()), ("list", "pods"));
        assert_eq!(list.namespace.as_deref(), Some("ml"));
        let status = c(Method::PATCH, "/api/v1/namespaces/ml/pods/p/status").expect("resource");
        assert_eq!(status.subresource.as_deref(), Some("status"));
        let ns = c(Method::GET, "/api/v1/namespaces/ml").expect("resource");
        assert_eq!(
            (ns.verb, ns.plural.as_str(), ns.name.as_deref()),
            ("get", "namespaces", Some("ml"))
        );
        let review = c(
            Method::POST,
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        )
        .expect("resource");
        assert_eq!(
            (review.verb, review.plural.as_str()),
            ("create", "selfsubjectaccessreviews")
        );
        assert_eq!(c(Method::GET, "/api/v1"), None);
        assert_eq!(c(Method::GET, "/apis"), None);
        assert_eq!(c(Method::GET, "/version"), None);
    }
}
