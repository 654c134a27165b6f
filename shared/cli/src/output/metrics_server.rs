//! The HTTP side of the exporters (`gpu-taint serve-metrics`, `affinity-lint
//! serve-metrics`): `GET /metrics` answers what a [`MetricsSource`] renders, in OpenMetrics
//! for a scraper that accepts it and in Prometheus' text format otherwise (the same text:
//! its `# EOF` is a comment there); `GET /healthz` answers 200 while the source is healthy
//! and 503 with why not. Nothing else is served.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};

/// What an exporter serves.
pub trait MetricsSource: Send + Sync + 'static {
    /// The exposition, rendered now.
    fn exposition(&self) -> String;
    /// `Err(why)` while what is served is not being kept current.
    fn health(&self) -> Result<(), String>;
}

/// Serves `source` on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, source: Arc<dyn MetricsSource>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let source = source.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let source = source.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(source.as_ref(), &request)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Whether an `Accept` header asks for OpenMetrics: a media range
/// `application/openmetrics-text` (matched without regard to case, as media types are)
/// whose `q` is not 0.
fn accepts_openmetrics(accept: &str) -> bool {
    accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default();
        let refused = parts.any(|p| {
            p.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("q")
                    && v.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
            })
        });
        media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
    })
}

/// One request's answer: `/metrics`, `/healthz`, or 404; GET and HEAD (the headers alone),
/// 405 with `Allow` for anything else.
pub fn answer<B>(source: &dyn MetricsSource, request: &Request<B>) -> Response<Full<Bytes>> {
    let head = request.method() == Method::HEAD;
    let reply = |status: StatusCode, content_type: &str, body: String| {
        Response::builder()
            .status(status)
            .header(hyper::header::CONTENT_TYPE, content_type)
            .header(hyper::header::ALLOW, "GET, HEAD")
            .body(Full::new(if head {
                Bytes::new()
            } else {
                Bytes::from(body)
            }))
            .expect("a valid response")
    };
    let plain = "text/plain; charset=utf-8";
    if request.method() != Method::GET && !head {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            plain,
            "GET or HEAD only\n".into(),
        );
    }
    match request.uri().path() {
        "/metrics" => {
            let openmetrics = request
                .headers()
                .get(hyper::header::ACCEPT)
                .and_then(|a| a.to_str().ok())
                .is_some_and(accepts_openmetrics);
            let content_type = if openmetrics {
                "application/openmetrics-text; version=1.0.0; charset=utf-8"
            } else {
                "text/plain; version=0.0.4; charset=utf-8"
            };
            reply(StatusCode::OK, content_type, source.exposition())
        }
        "/healthz" => match source.health() {
            Ok(()) => reply(StatusCode::OK, plain, "ok\n".into()),
            Err(why) => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                plain,
                format!("{}\n", placekit_client::secrets::redact(&why)),
            ),
        },
        _ => reply(
            StatusCode::NOT_FOUND,
            plain,
            "not found: /metrics and /healthz are served\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Result<(), String>);

    impl MetricsSource for Fixed {
        fn exposition(&self) -> String {
            "# EOF\n".into()
        }
        fn health(&self) -> Result<(), String> {
            self.0.clone()
        }
    }

    fn get(path: &str, accept: Option<&str>) -> Request<()> {
        let mut request = Request::get(path);
        if let Some(a) = accept {
            request = request.header(hyper::header::ACCEPT, a);
        }
        request.body(()).unwrap()
    }

    #[test]
    fn metrics_in_the_format_asked_health_and_nothing_else() {
        let ok = Fixed(Ok(()));
        let text = answer(&ok, &get("/metrics", None));
        assert_eq!(text.status(), StatusCode::OK);
        assert_eq!(
            text.headers()[hyper::header::CONTENT_TYPE],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        let om = answer(
            &ok,
            &get(
                "/metrics",
                Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            ),
        );
        assert_eq!(
            om.headers()[hyper::header::CONTENT_TYPE],
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        assert_eq!(answer(&ok, &get("/healthz", None)).status(), StatusCode::OK);
        let down = Fixed(Err("watch ended".into()));
        assert_eq!(
            answer(&down, &get("/healthz", None)).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            answer(&ok, &get("/other", None)).status(),
            StatusCode::NOT_FOUND
        );
        let post = Request::post("/metrics").body(()).unwrap();
        let refused = answer(&ok, &post);
        assert_eq!(refused.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(refused.headers()[hyper::header::ALLOW], "GET, HEAD");
    }

    #[test]
    fn head_answers_the_headers_and_accept_is_negotiated_as_http_says() {
        use http_body_util::BodyExt as _;
        let ok = Fixed(Ok(()));
        let head = Request::head("/metrics").body(()).unwrap();
        let answered = answer(&ok, &head);
        assert_eq!(answered.status(), StatusCode::OK);
        let body = futures::executor::block_on(answered.into_body().collect())
            .unwrap()
            .to_bytes();
        assert!(body.is_empty());
        for (accept, openmetrics) in [
            ("application/openmetrics-text; version=1.0.0", true),
            (
                "Application/OpenMetrics-Text;version=1.0.0;q=0.5,*/*;q=0.1",
                true,
            ),
            ("application/openmetrics-text;q=0, text/plain", false),
            ("application/openmetrics-text; q=0.0", false),
            ("text/plain;version=0.0.4", false),
        ] {
            assert_eq!(accepts_openmetrics(accept), openmetrics, "{accept}");
        }
    }
}
