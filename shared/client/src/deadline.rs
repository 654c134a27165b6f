//! kubectl's `--request-timeout`: a limit on the whole request, from sending it to the last
//! byte of its answer, as Go's `http.Client.Timeout` is. Separate connect/read/write
//! timeouts let a server that trickles a large list byte by byte hold a command for ever;
//! this layer does not. A watch is the exception: its answer is a stream that ends when the
//! server ends it (`timeoutSeconds`), so only its headers are held to the limit.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The request took longer than `--request-timeout`. Its message carries the words the
/// connection errors are recognised by ("timed out").
#[derive(Debug, thiserror::Error)]
#[error("request timed out after {0:?} (--request-timeout)")]
pub struct RequestTimedOut(pub Duration);

/// The tower service that holds each request to the limit.
#[derive(Debug, Clone)]
pub(crate) struct Deadline<S> {
    pub(crate) inner: S,
    /// `None` (`--request-timeout 0`, the default): no limit.
    pub(crate) limit: Option<Duration>,
}

/// Whether the request is a watch (`?watch=true` or `?watch=1`).
pub(crate) fn is_watch<B>(request: &http::Request<B>) -> bool {
    request.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|pair| matches!(pair, "watch=true" | "watch=1"))
    })
}

impl<S, B, R> tower::Service<http::Request<B>> for Deadline<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    R: Body<Data = Bytes> + Send + 'static,
    R::Error: Into<BoxError>,
{
    type Response = http::Response<DeadlineBody<R>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let limit = self.limit;
        let deadline = limit.map(|limit| (Instant::now() + limit, limit));
        // A watch's answer is a stream: only its headers are held to the limit.
        let body_deadline = deadline.filter(|_| !is_watch(&request));
        let answer = self.inner.call(request);
        let wrap = move |response: http::Response<R>| {
            response.map(|body| DeadlineBody {
                inner: Box::pin(body),
                deadline: body_deadline
                    .map(|(at, limit)| (Box::pin(tokio::time::sleep_until(at)), limit)),
            })
        };
        Box::pin(async move {
            let Some((at, limit)) = deadline else {
                return answer.await.map(wrap).map_err(Into::into);
            };
            match tokio::time::timeout_at(at, answer).await {
                Err(_) => Err(RequestTimedOut(limit).into()),
                Ok(answer) => answer.map(wrap).map_err(Into::into),
            }
        })
    }
}

/// An answer's body that fails once the request's deadline passes.
#[derive(Debug)]
pub(crate) struct DeadlineBody<R> {
    inner: Pin<Box<R>>,
    /// When it passes and the limit it stands for; `None` for a watch or without a limit.
    deadline: Option<(Pin<Box<Sleep>>, Duration)>,
}

impl<R> Body for DeadlineBody<R>
where
    R: Body<Data = Bytes>,
    R::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = self.inner.as_mut().poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if let Some((deadline, limit)) = self.deadline.as_mut()
            && deadline.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Some(Err(RequestTimedOut(*limit).into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;
    use tower::{Service as _, ServiceExt as _};

    /// A body that yields one byte every `every`, `count` times.
    fn trickle(
        every: Duration,
        count: usize,
    ) -> http_body_util::StreamBody<
        futures::stream::BoxStream<'static, Result<Frame<Bytes>, std::convert::Infallible>>,
    > {
        use futures::StreamExt as _;
        let stream = futures::stream::iter(0..count)
            .then(move |_| async move {
                tokio::time::sleep(every).await;
                Ok(Frame::data(Bytes::from_static(b"x")))
            })
            .boxed();
        http_body_util::StreamBody::new(stream)
    }

    async fn fetch(uri: &str, limit: Duration) -> Result<usize, BoxError> {
        let server = tower::service_fn(|_: http::Request<()>| async {
            Ok::<_, std::convert::Infallible>(http::Response::new(trickle(
                Duration::from_millis(300),
                10,
            )))
        });
        let mut client = Deadline {
            inner: server,
            limit: Some(limit),
        };
        let response = client
            .ready()
            .await?
            .call(http::Request::get(uri).body(()).unwrap())
            .await?;
        Ok(response.into_body().collect().await?.to_bytes().len())
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickled_answer_is_held_to_the_whole_request_limit() {
        let e = fetch("/api/v1/nodes", Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("timed out"), "{e}");
        assert_eq!(
            fetch("/api/v1/nodes", Duration::from_secs(5))
                .await
                .unwrap(),
            10
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_stream_is_not_cut_at_the_limit() {
        assert_eq!(
            fetch(
                "/api/v1/nodes?watch=true&resourceVersion=1",
                Duration::from_secs(1)
            )
            .await
            .unwrap(),
            10
        );
    }
}
