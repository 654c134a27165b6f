//! Standalone test API server for demos, benchmarks and end-to-end tests in other processes.
//!
//! ```text
//! placekit-testserver --nodes 5000 --pods 150000 --kubeconfig-out /tmp/placekit.kubeconfig
//! placekit-testserver --fixture tests/fixtures/gpu-cluster.yaml --port 8080
//! placekit-testserver --demo --kubeconfig-out /tmp/demo.kubeconfig   # the README's tours
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use placekit_testserver::{ADMIN_TOKEN, Generator, READONLY_TOKEN, ServerConfig, TestServer};

/// A Kubernetes API server for tests, demos and benchmarks (loopback only, in memory).
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Load the README's demo cluster (five nodes, a Deployment, running pods; the
    /// README's tours run on it as shown).
    #[arg(long)]
    demo: bool,
    /// YAML fixture files to load (multi-document or kind: List).
    #[arg(long = "fixture", value_name = "FILE")]
    fixtures: Vec<PathBuf>,
    /// Generate this many GPU nodes.
    #[arg(long, default_value_t = 0)]
    nodes: usize,
    /// Generate this many pods spread over the generated nodes.
    #[arg(long, default_value_t = 0)]
    pods: usize,
    /// GPUs per generated node.
    #[arg(long, default_value_t = 8)]
    gpus_per_node: u32,
    /// Port on 127.0.0.1 (0: random).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Write an admin kubeconfig here.
    #[arg(long, value_name = "PATH")]
    kubeconfig_out: Option<PathBuf>,
    /// Serve plain HTTP instead of HTTPS (kubectl then sends no bearer tokens).
    #[arg(long)]
    insecure_http: bool,
    /// Write a read-only kubeconfig here.
    #[arg(long, value_name = "PATH")]
    readonly_kubeconfig_out: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut config = ServerConfig {
        port: args.port,
        tls: !args.insecure_http,
        ..ServerConfig::default()
    };
    if args.demo {
        config
            .fixtures
            .push(placekit_testserver::DEMO_FIXTURE.to_string());
    }
    for path in &args.fixtures {
        match std::fs::read_to_string(path) {
            Ok(text) => config.fixtures.push(text),
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    if args.nodes > 0 {
        config.generator = Some(Generator {
            nodes: args.nodes,
            pods: args.pods,
            gpus_per_node: args.gpus_per_node,
        });
    }
    let server = match TestServer::start(config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for (path, token) in [
        (&args.kubeconfig_out, ADMIN_TOKEN),
        (&args.readonly_kubeconfig_out, READONLY_TOKEN),
    ] {
        if let Some(path) = path
            && let Err(e) = server.write_kubeconfig(path, token)
        {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    println!("listening on {}", server.url());
    let _ = tokio::signal::ctrl_c().await;
    ExitCode::SUCCESS
}
