//! Every answer is bounded before it is kept: a tower layer over the client that cuts an
//! answer's body at a cap chosen by what was asked — a list page (`limit=`) at
//! [`MAX_RESPONSE_BYTES`], any other answer (one object,
//! discovery) at [`MAX_OBJECT_BYTES`], a watch's stream at [`MAX_EVENT_BYTES`] per event
//! (the stream itself runs as long as the command) — with an error naming the server, so a
//! server answering one endless object or event stops the command instead of exhausting
//! its memory.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::future::BoxFuture;

/// The largest list answer read (a page of 10,000 pods is about 40 MB of JSON): a server
/// answering one endless page stops the command instead of exhausting its memory.
pub const MAX_RESPONSE_BYTES: usize = 512 * 1024 * 1024;

/// The largest answer read for one object or a discovery document (an object is at most
/// 1.5 MiB in etcd; an OpenAPI document a few MiB).
pub const MAX_OBJECT_BYTES: usize = 64 * 1024 * 1024;
/// The largest watch event read (one object per line).
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// An answer that went past its cap.
#[derive(Debug, thiserror::Error)]
#[error(
    "the answer of {server} went past {limit} bytes ({what}): a server answering without end is refused"
)]
pub struct TooLarge {
    pub server: String,
    pub limit: usize,
    pub what: &'static str,
}

/// How an answer is capped.
#[derive(Debug, Clone, Copy)]
enum Cap {
    Total(usize),
    PerLine(usize),
}

/// The layer's service.
pub(crate) struct Bounded<S> {
    pub(crate) inner: S,
    pub(crate) server: String,
}

impl<S, R> tower::Service<http::Request<kube::client::Body>> for Bounded<S>
where
    S: tower::Service<http::Request<kube::client::Body>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    R: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    R::Error: Into<tower::BoxError>,
{
    type Response = http::Response<BoundedBody<R>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let query = request.uri().query().unwrap_or_default();
        let (cap, what) = if crate::deadline::is_watch(&request) {
            (Cap::PerLine(MAX_EVENT_BYTES), "one watch event")
        } else if query.split('&').any(|p| p.starts_with("limit=")) {
            (Cap::Total(MAX_RESPONSE_BYTES), "one list page")
        } else {
            (Cap::Total(MAX_OBJECT_BYTES), "one object")
        };
        let server = self.server.clone();
        let answer = self.inner.call(request);
        Box::pin(async move {
            Ok(answer.await?.map(|inner| BoundedBody {
                inner: Box::pin(inner),
                cap,
                seen: 0,
                server,
                what,
            }))
        })
    }
}

/// An answer's body under its cap.
pub(crate) struct BoundedBody<R> {
    inner: Pin<Box<R>>,
    cap: Cap,
    /// Bytes so far (of the whole answer, or since the last newline of a watch).
    seen: usize,
    server: String,
    what: &'static str,
}

impl<R> std::fmt::Debug for BoundedBody<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedBody").finish_non_exhaustive()
    }
}

impl<R> http_body::Body for BoundedBody<R>
where
    R: http_body::Body<Data = bytes::Bytes>,
    R::Error: Into<tower::BoxError>,
{
    type Data = bytes::Bytes;
    type Error = tower::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let frame = match self.inner.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        if let Some(data) = frame.data_ref() {
            let limit = match self.cap {
                Cap::Total(limit) => {
                    self.seen += data.len();
                    limit
                }
                Cap::PerLine(limit) => {
                    match data.iter().position(|b| *b == b'\n') {
                        // The event that ends here, then only the bytes after the frame's
                        // last newline carry on.
                        Some(first) => {
                            if self.seen + first > limit {
                                self.seen += first;
                            } else {
                                let last = data.iter().rposition(|b| *b == b'\n').unwrap_or(first);
                                self.seen = data.len() - last - 1;
                            }
                        }
                        None => self.seen += data.len(),
                    }
                    limit
                }
            };
            if self.seen > limit {
                return Poll::Ready(Some(Err(Box::new(TooLarge {
                    server: self.server.clone(),
                    limit,
                    what: self.what,
                }))));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
