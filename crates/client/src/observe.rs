//! What the plugins may want to see of each request without the client printing it:
//! kubectl's `-v=6` line (verb, URL, status, time) and the API server's `Warning` headers
//! (deprecations, admission policies in Warn mode), handed to an [`Observer`] the plugin
//! installs once ([`install`]) and every connection of the process then reports to.

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
}

/// Receives what the requests of every connection carry back.
pub trait Observer: std::fmt::Debug + Send + Sync {
    fn exchange(&self, exchange: &Exchange);
    /// A `Warning` header's text, as the server wrote it (`299 - "…"` unquoted).
    fn warning(&self, text: &str);
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
}

impl<S, B, R> tower::Service<http::Request<B>> for Observed<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let Some(observer) = self.observer.clone() else {
            return Box::pin(self.inner.call(request));
        };
        let method = request.method().to_string();
        let uri = request.uri();
        let url = if uri.scheme().is_some() {
            uri.to_string()
        } else {
            format!("{}{uri}", self.server.trim_end_matches('/'))
        };
        let started = Instant::now();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await;
            let status = result.as_ref().ok().map(|r| r.status().as_u16());
            if let Ok(response) = &result {
                for value in response.headers().get_all(http::header::WARNING) {
                    observer.warning(&warning_text(&String::from_utf8_lossy(value.as_bytes())));
                }
            }
            observer.exchange(&Exchange {
                method,
                url,
                status,
                elapsed: started.elapsed(),
            });
            result
        })
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
