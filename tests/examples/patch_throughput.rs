//! How many small PATCH requests per second the test API server answers on loopback, so
//! that plugin benchmarks measure the plugins and not the server.
//!
//! ```text
//! cargo run --release -p placekit-testserver --example patch_throughput -- [REQUESTS] [CONCURRENCY]
//! ```
//!
//! Client and server share this process and the machine's cores, so the figure is a lower
//! bound for the server alone.

use std::time::Instant;

use futures::StreamExt;
use placekit_testserver::{ADMIN_TOKEN, Generator, ServerConfig, TestServer};

async fn run(tls: bool, requests: usize, concurrency: usize) -> f64 {
    let nodes = 1_000;
    let server = TestServer::start(ServerConfig {
        tls,
        ..ServerConfig::default().with_generator(Generator {
            nodes,
            pods: 0,
            gpus_per_node: 8,
        })
    })
    .await
    .expect("server starts");
    let client = server.client(ADMIN_TOKEN);
    let started = Instant::now();
    let results: Vec<u16> = futures::stream::iter(0..requests)
        .map(|i| {
            let client = client.clone();
            async move {
                let body = format!(r#"{{"metadata":{{"labels":{{"bench":"v{i}"}}}}}}"#);
                let request =
                    http::Request::patch(format!("/api/v1/nodes/gpu-node-{:05}", i % nodes))
                        .header("content-type", "application/merge-patch+json")
                        .body(kube::client::Body::from(body.into_bytes()))
                        .expect("request");
                match client.send(request).await {
                    Ok(r) => r.status().as_u16(),
                    Err(_) => 0,
                }
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let elapsed = started.elapsed().as_secs_f64();
    let ok = results.iter().filter(|c| **c == 200).count();
    assert_eq!(ok, requests, "every PATCH answered 200");
    assert_eq!(server.count("patch", "nodes"), requests as u64);
    requests as f64 / elapsed
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let requests: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let concurrency: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
    for tls in [false, true] {
        let rate = run(tls, requests, concurrency).await;
        println!(
            "{} PATCH requests over {}, concurrency {concurrency}: {rate:.0} requests/s",
            requests,
            if tls { "HTTPS" } else { "HTTP" }
        );
    }
}
