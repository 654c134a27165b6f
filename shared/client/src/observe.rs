//! What the plugins may want to see of each request without the client printing it:
//! kubectl's `-v=6` line (verb, URL, status, time) and the API server's `Warning` headers
//! (deprecations, admission policies in Warn mode), handed to an [`Observer`] the plugin
//! installs once ([`install`]) and every connection of the process then reports to.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

/// One answered (or failed) request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub method: String,
    pub url: String,
    /// The status code, `None` when no answer came.
    pub status: Option<u16>,
    pub elapsed: Duration,
    /// From [`Detail::Headers`]: the request's headers, credentials masked as kubectl
    /// masks them (`Authorization: Bearer <masked>`).
    pub request_headers: Vec<(String, String)>,
    /// From [`Detail::Bodies`]: the answer's headers.
    pub response_headers: Vec<(String, String)>,
    /// From [`Detail::Bodies`]: the request's body, if it had one.
    pub request_body: Option<Vec<u8>>,
}

/// How much of each request an observer wants, as kubectl's `-v` levels give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// Verb, URL, status and time (`-v=6`).
    #[default]
    Summary,
    /// And the request's headers (`-v=7`).
    Headers,
    /// And the bodies and the answer's headers (`-v=8`); an answer's body is kept up to
    /// `limit` bytes (`None`: whole, `-v=10`).
    Bodies { limit: Option<usize> },
}

/// Receives what the requests of every connection carry back.
pub trait Observer: std::fmt::Debug + Send + Sync {
    /// How much of each request to gather for [`Observer::exchange`].
    fn detail(&self) -> Detail {
        Detail::Summary
    }
    fn exchange(&self, exchange: &Exchange);
    /// From [`Detail::Bodies`], once an answer's body has been read: its start (`limit`
    /// bytes and a margin, so the observer redacts before it cuts) and its whole length.
    fn response_body(&self, _exchange: &Exchange, _start: &[u8], _length: usize) {}
    /// A `Warning` header's text, as the server wrote it (`299 - "…"` unquoted).
    fn warning(&self, text: &str);
}

/// A request's (or, at `-v=8`, an answer's) headers as shown: credentials masked
/// (`Authorization`, a challenge's parameters, cookies' values).
fn shown_headers(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            let shown = if matches!(
                *name,
                http::header::AUTHORIZATION
                    | http::header::PROXY_AUTHORIZATION
                    | http::header::WWW_AUTHENTICATE
                    | http::header::PROXY_AUTHENTICATE
            ) {
                match value.split_once(' ') {
                    Some((scheme, _)) => format!("{scheme} <masked>"),
                    None => "<masked>".to_string(),
                }
            } else if matches!(*name, http::header::SET_COOKIE | http::header::COOKIE) {
                // A session cookie is a credential too (kubectl shows it; placekit does not).
                match value.split_once('=') {
                    Some((cookie, _)) => format!("{cookie}=<masked>"),
                    None => "<masked>".to_string(),
                }
            } else {
                value
            };
            (name.as_str().to_string(), shown)
        })
        .collect()
}

static OBSERVER: OnceLock<Arc<dyn Observer>> = OnceLock::new();

/// Installs the process's observer; the first one stays.
pub fn install(observer: Arc<dyn Observer>) {
    let _ = OBSERVER.set(observer);
}

pub(crate) fn installed() -> Option<Arc<dyn Observer>> {
    OBSERVER.get().cloned()
}

/// The text of a `Warning` header value (`299 - "text"` or `299 agent "text" "date"`):
/// the quoted text with Go's escapes undone, or the value whole when it has no quotes.
pub fn warning_text(value: &str) -> String {
    let Some(start) = value.find('"') else {
        return value.to_string();
    };
    let mut out = String::new();
    let mut chars = value[start + 1..].chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '"' => break,
            c => out.push(c),
        }
    }
    out
}

/// The tower service that reports each exchange to the observer.
pub(crate) struct Observed<S> {
    pub(crate) inner: S,
    /// The server the relative request URIs go to, for the URL the observer sees.
    pub(crate) server: String,
    /// `None` when the plugin installed none: requests pass untouched.
    pub(crate) observer: Option<Arc<dyn Observer>>,
    /// What the client's inner layers add to each request (credentials masked).
    pub(crate) added_headers: Vec<(String, String)>,
}

impl<S, R> tower::Service<http::Request<kube::client::Body>> for Observed<S>
where
    S: tower::Service<http::Request<kube::client::Body>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    R: http_body::Body<Data = bytes::Bytes> + Send + 'static,
{
    type Response = http::Response<ObservedBody<R>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let Some(observer) = self.observer.clone() else {
            let answer = self.inner.call(request);
            return Box::pin(
                async move { Ok(answer.await?.map(|body| ObservedBody::passing(body))) },
            );
        };
        let detail = match observer.detail() {
            // A watch's answer runs as long as the command: never kept whole.
            Detail::Bodies { limit: None } if crate::deadline::is_watch(&request) => {
                Detail::Bodies { limit: Some(10240) }
            }
            detail => detail,
        };
        let uri = request.uri();
        let url = if uri.scheme().is_some() {
            uri.to_string()
        } else {
            format!("{}{uri}", self.server.trim_end_matches('/'))
        };
        let request_headers = match detail {
            Detail::Summary => Vec::new(),
            _ => {
                let mut headers = shown_headers(request.headers());
                headers.extend(self.added_headers.iter().cloned());
                headers
            }
        };
        // The body of a patch or a create is whole in memory: a clone is cheap.
        let request_body = match detail {
            Detail::Bodies { .. } => request.body().try_clone(),
            _ => None,
        };
        let mut exchange = Exchange {
            method: request.method().to_string(),
            url,
            status: None,
            elapsed: Duration::ZERO,
            request_headers,
            response_headers: Vec::new(),
            request_body: None,
        };
        let started = Instant::now();
        let answer = self.inner.call(request);
        Box::pin(async move {
            if let Some(body) = request_body {
                use http_body_util::BodyExt as _;
                exchange.request_body = body
                    .collect()
                    .await
                    .ok()
                    .map(|b| b.to_bytes().to_vec())
                    .filter(|b| !b.is_empty());
            }
            let result = answer.await;
            exchange.elapsed = started.elapsed();
            exchange.status = result.as_ref().ok().map(|r| r.status().as_u16());
            if let Ok(response) = &result {
                for value in response.headers().get_all(http::header::WARNING) {
                    observer.warning(&warning_text(&String::from_utf8_lossy(value.as_bytes())));
                }
                if let Detail::Bodies { .. } = detail {
                    exchange.response_headers = shown_headers(response.headers());
                }
            }
            observer.exchange(&exchange);
            let limit = match detail {
                Detail::Bodies { limit } => Some(limit),
                _ => None,
            };
            result.map(|response| {
                response.map(|body| match limit {
                    // A margin past the limit, so a secret the cut would split is still
                    // whole when the observer redacts, before it cuts.
                    Some(limit) => ObservedBody {
                        inner: Box::pin(body),
                        kept: Some(Kept {
                            observer,
                            exchange,
                            limit: limit.map(|l| l + KEPT_PAST_LIMIT),
                            start: Vec::new(),
                            length: 0,
                        }),
                    },
                    None => ObservedBody::passing(body),
                })
            })
        })
    }
}

/// Bytes kept past an observer's limit: longer than any credential placekit redacts.
const KEPT_PAST_LIMIT: usize = 16 * 1024;

/// What an answer's body has shown so far, for [`Observer::response_body`].
struct Kept {
    observer: Arc<dyn Observer>,
    exchange: Exchange,
    limit: Option<usize>,
    start: Vec<u8>,
    length: usize,
}

impl Kept {
    fn report(self) {
        self.observer
            .response_body(&self.exchange, &self.start, self.length);
    }
}

/// An answer's body, passed on as it comes; at `-v=8` and above its start is kept and
/// reported when it ends (or is dropped before).
pub(crate) struct ObservedBody<R> {
    inner: Pin<Box<R>>,
    kept: Option<Kept>,
}

impl<R> ObservedBody<R> {
    fn passing(body: R) -> Self {
        ObservedBody {
            inner: Box::pin(body),
            kept: None,
        }
    }
}

impl<R> std::fmt::Debug for ObservedBody<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObservedBody").finish_non_exhaustive()
    }
}

impl<R> Drop for ObservedBody<R> {
    fn drop(&mut self) {
        // A body dropped unread (a write's answer placekit does not need) has nothing to
        // show; one dropped part-way shows what was read.
        if let Some(kept) = self.kept.take().filter(|k| k.length > 0) {
            kept.report();
        }
    }
}

impl<R> http_body::Body for ObservedBody<R>
where
    R: http_body::Body<Data = bytes::Bytes>,
{
    type Data = bytes::Bytes;
    type Error = R::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, R::Error>>> {
        let frame = self.inner.as_mut().poll_frame(cx);
        match &frame {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(kept), Some(data)) = (self.kept.as_mut(), frame.data_ref()) {
                    kept.length += data.len();
                    let room = kept
                        .limit
                        .map_or(data.len(), |l| l.saturating_sub(kept.start.len()));
                    kept.start.extend_from_slice(&data[..room.min(data.len())]);
                }
            }
            Poll::Ready(None) => {
                if let Some(kept) = self.kept.take() {
                    kept.report();
                }
            }
            _ => {}
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers_read_as_the_server_wrote_them() {
        assert_eq!(
            warning_text(r#"299 - "node label \"gpu\" is watched by the MIG manager""#),
            r#"node label "gpu" is watched by the MIG manager"#
        );
        assert_eq!(warning_text("299 - plain"), "299 - plain");
    }
}
