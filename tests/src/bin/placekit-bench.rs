//! Side-by-side benchmarks of the placekit plugins against the in-process test API server,
//! or with `--kubeconfig` against a real, disposable cluster (`tests/control-plane/cp up`).
//!
//! ```text
//! cargo build --release --workspace
//! target/release/placekit-bench nodelabel --nodes 1000
//! target/release/placekit-bench nodelabel --nodes 1000 --kubeconfig /tmp/cp.kubeconfig
//! ```
//!
//! Each run reports wall time and the API requests the command made, next to the kubectl
//! command that does the same job by hand. On the test server the requests come from its
//! counters. On a real server the timed run talks to the server directly, and a second,
//! identical run through the counting reverse proxy gives the requests (the proxy's own
//! connections would otherwise be timed too).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use clap::{Parser, Subcommand};
use placekit_testserver::real_cluster::RealCluster;
use placekit_testserver::{Generator, ServerConfig, TestServer};

#[derive(Debug, Parser)]
#[command(about = "Benchmarks of the placekit plugins on the test API server")]
struct Cli {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// `kubectl nodelabel set -l ... --overwrite` vs `kubectl label nodes -l ... --overwrite`.
    Nodelabel {
        #[arg(long, default_value_t = 1000)]
        nodes: usize,
        /// The plugin binary (default: next to this benchmark binary).
        #[arg(long)]
        plugin: Option<PathBuf>,
        /// A real, disposable cluster's admin kubeconfig instead of the test server.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
    },
    /// `kubectl affinity-lint` over the precision corpus (tests/precision/): every finding
    /// against its recorded verdict, true and false positives per rule.
    Precision {
        /// The corpus: the files of tests/precision/corpus.tsv, fetched at their commits.
        #[arg(long)]
        corpus: PathBuf,
        /// The verdicts (default: tests/precision/verdicts.tsv of this checkout).
        #[arg(long)]
        verdicts: Option<PathBuf>,
        /// Which linter the verdicts are for (`after` is this one).
        #[arg(long, default_value = "after")]
        linter: String,
        #[arg(long)]
        plugin: Option<PathBuf>,
    },
    /// `kubectl affinity-lint` on N Deployment documents vs plain serde deserialization.
    Lint {
        #[arg(long, default_value_t = 10_000)]
        documents: usize,
        /// Size of the large-input run, in MB.
        #[arg(long, default_value_t = 63)]
        large_mb: usize,
        #[arg(long)]
        plugin: Option<PathBuf>,
    },
    /// `kubectl affinity-lint drift -A` on a generated cluster: wall, peak memory, requests,
    /// next to the runbook's script (one list, then one GET per pod).
    Drift {
        #[arg(long, default_value_t = 5000)]
        nodes: usize,
        #[arg(long, default_value_t = 150_000)]
        pods: usize,
        #[arg(long)]
        plugin: Option<PathBuf>,
        /// A real, disposable cluster's admin kubeconfig instead of the test server.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
    },
    /// The policy checks of a change on a generated cluster that also serves a GPU
    /// platform's objects (ResourceFlavors, ClusterQueues, a Topology, Volcano Queues, a
    /// ClusterPolicy): `nodelabel remove` of a key every pod of the node requires
    /// (dependents), `gpu-taint dedicate` with a NoExecute taint (pods, workloads, taints,
    /// disruption budgets) and `nodelabel set` of a new MIG config (the GPU operator's
    /// checks), all `--dry-run=client`: wall time, peak memory and the requests by verb and
    /// resource.
    Checks {
        #[arg(long, default_value_t = 5000)]
        nodes: usize,
        #[arg(long, default_value_t = 20_000)]
        pods: usize,
        /// The nodelabel binary (default: next to this benchmark binary).
        #[arg(long)]
        nodelabel: Option<PathBuf>,
        /// The gpu-taint binary (default: next to this benchmark binary).
        #[arg(long)]
        gpu_taint: Option<PathBuf>,
    },
    /// `kubectl gpu-taint status --all-contexts` over several test API servers vs one
    /// single-context run per cluster, in turn; then with one more context that never
    /// answers.
    Fleet {
        /// How many clusters (test API servers, one context each).
        #[arg(long, default_value_t = 8)]
        clusters: usize,
        #[arg(long, default_value_t = 1000)]
        nodes: usize,
        #[arg(long, default_value_t = 10_000)]
        pods: usize,
        /// The fleet run's `--context-timeout` (the hung context costs this).
        #[arg(long, default_value = "5s")]
        context_timeout: String,
        /// Added to every request, as the round trip to a cluster in another region adds it
        /// (0: the servers answer at once, and the runs compete for this machine's cores
        /// with the servers themselves).
        #[arg(long, default_value_t = 50)]
        latency_ms: u64,
        #[arg(long)]
        plugin: Option<PathBuf>,
    },
    /// Decoding saved list pages (`curl -H 'Accept: application/vnd.kubernetes.protobuf'`
    /// or JSON) into the read model, as the commands do: time per page, items per second.
    Decode {
        /// Pod or node list pages, each a whole answer body.
        files: Vec<PathBuf>,
        /// The read model type: pod, placement (drift's) or node.
        #[arg(long, default_value = "pod")]
        into: String,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
    /// `kubectl gpu-taint serve-metrics` on a generated cluster: the time to its first
    /// healthy answer, each scrape's time, the series, and its peak memory.
    Exporter {
        #[arg(long, default_value_t = 5000)]
        nodes: usize,
        #[arg(long, default_value_t = 150_000)]
        pods: usize,
        #[arg(long, default_value_t = 10)]
        scrapes: usize,
        /// The judge instead: `affinity-lint serve-metrics -A` (drift and pending pods).
        #[arg(long)]
        judge: bool,
        #[arg(long)]
        plugin: Option<PathBuf>,
    },
    /// `kubectl gpu-taint status` on a generated cluster: wall time, peak memory, requests.
    GpuStatus {
        #[arg(long, default_value_t = 5000)]
        nodes: usize,
        #[arg(long, default_value_t = 150_000)]
        pods: usize,
        /// Of the nodes, how many also publish DRA devices (a ResourceSlice each).
        #[arg(long, default_value_t = 0)]
        dra_nodes: usize,
        /// DRA devices per DRA node.
        #[arg(long, default_value_t = 8)]
        devices_per_node: usize,
        /// ResourceClaims, each allocated one DRA device (at most dra-nodes x devices).
        #[arg(long, default_value_t = 0)]
        claims: usize,
        #[arg(long)]
        plugin: Option<PathBuf>,
        /// A real, disposable cluster's admin kubeconfig instead of the test server.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
    },
}

struct Measured {
    seconds: f64,
    /// Peak resident memory of the command in KiB (Linux: VmHWM polled from /proc).
    peak_kib: Option<u64>,
    requests: String,
    total_requests: u64,
    ok: bool,
    code: Option<i32>,
}

/// Runs a command to its end: its output, wall seconds and peak resident memory in KiB.
fn run_watched(
    mut cmd: Command,
    stdout: std::process::Stdio,
) -> (std::process::Output, f64, Option<u64>) {
    let started = Instant::now();
    let child = cmd
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("command runs");
    let status_path = format!("/proc/{}/status", child.id());
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let watcher = {
        let peak = peak.clone();
        std::thread::spawn(move || {
            // VmHWM is the peak so far; polling until the process is gone keeps the last value.
            while let Ok(text) = std::fs::read_to_string(&status_path) {
                if let Some(kib) = text
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                {
                    peak.fetch_max(kib, std::sync::atomic::Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let output = child.wait_with_output().expect("command runs");
    let seconds = started.elapsed().as_secs_f64();
    let _ = watcher.join();
    let peak_kib = Some(peak.load(std::sync::atomic::Ordering::Relaxed)).filter(|p| *p > 0);
    (output, seconds, peak_kib)
}

fn measure(server: &TestServer, cmd: Command) -> Measured {
    server.reset_counters();
    let (output, seconds, peak_kib) = run_watched(cmd, std::process::Stdio::null());
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    }
    let counters = server.counters();
    let mut parts = Vec::new();
    let mut total = 0;
    for (verb, resources) in &counters {
        for (resource, n) in resources {
            parts.push(format!("{n} {verb} {resource}"));
            total += n;
        }
    }
    Measured {
        seconds,
        peak_kib,
        requests: parts.join(", "),
        total_requests: total,
        ok: output.status.success(),
        code: output.status.code(),
    }
}

/// The cluster a benchmark runs on.
struct Cluster {
    /// The test server, or the counting proxy in front of the real server.
    counting: TestServer,
    /// The kubeconfig the counted run uses.
    counting_kubeconfig: PathBuf,
    /// The real server's own kubeconfig, for the timed run (None: the test server).
    direct_kubeconfig: Option<PathBuf>,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// A generated cluster: on the test server, or created on the real one behind
    /// `kubeconfig` (emptied first; it must carry the disposable marker).
    async fn generate(generator: Generator, kubeconfig: Option<&Path>) -> Self {
        let plain = |i: usize| generator.node(i);
        Self::generate_with(generator.clone(), kubeconfig, &plain, Vec::new()).await
    }

    /// [`Cluster::generate`] with the real server's nodes made by `node` (the test server
    /// always uses the generator's own).
    async fn generate_with(
        generator: Generator,
        kubeconfig: Option<&Path>,
        node: &(dyn Fn(usize) -> serde_json::Value + Sync),
        extra: Vec<serde_json::Value>,
    ) -> Self {
        let extra_count = extra.len();
        let dir = tempfile::tempdir().expect("tempdir");
        let started = Instant::now();
        let (counting, direct_kubeconfig) = match kubeconfig {
            None => {
                let server =
                    TestServer::start(ServerConfig::default().with_generator(generator.clone()))
                        .await
                        .expect("server starts");
                for object in extra {
                    server.create(object).expect("generated objects are valid");
                }
                (server, None)
            }
            Some(path) => {
                let real = RealCluster::connect(path, None).await;
                real.require_disposable().await;
                real.reset().await;
                let namespaces = (0..8)
                    .map(|i| serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ml-{i}")}}))
                    .collect();
                real.create_all(namespaces, 8).await;
                real.create_all((0..generator.nodes).map(node).collect(), 64)
                    .await;
                real.create_all((0..generator.pods).map(|j| generator.pod(j)).collect(), 64)
                    .await;
                real.create_all(extra, 64).await;
                (real.proxy().await, Some(path.to_path_buf()))
            }
        };
        eprintln!(
            "{} {} nodes, {} pods and {extra_count} other objects in {:.1} s",
            if direct_kubeconfig.is_some() {
                "created on the real server:"
            } else {
                "generated on the test server:"
            },
            generator.nodes,
            generator.pods,
            started.elapsed().as_secs_f64()
        );
        let counting_kubeconfig = counting
            .write_kubeconfig(&dir.path().join("kubeconfig"), "admin")
            .expect("kubeconfig");
        Cluster {
            counting,
            counting_kubeconfig,
            direct_kubeconfig,
            _dir: dir,
        }
    }

    fn is_real(&self) -> bool {
        self.direct_kubeconfig.is_some()
    }

    /// Runs the command built by `command(kubeconfig, round)` and measures it: timed and
    /// counted in one run on the test server; timed directly, then counted through the
    /// proxy in a second round, on a real server.
    fn measure(&self, command: impl Fn(&Path, usize) -> Command) -> Measured {
        match &self.direct_kubeconfig {
            None => measure(&self.counting, command(&self.counting_kubeconfig, 0)),
            Some(direct) => {
                let mut timed = measure(&self.counting, command(direct, 0));
                let counted = measure(&self.counting, command(&self.counting_kubeconfig, 1));
                timed.requests = counted.requests;
                timed.total_requests = counted.total_requests;
                timed.ok &= counted.ok;
                timed
            }
        }
    }

    fn name(&self) -> &'static str {
        if self.is_real() {
            "the real kube-apiserver"
        } else {
            "the test API server"
        }
    }
}

/// The protobuf floor of a command's lists on a real server: the same collections, field
/// selectors and page sizes, fetched as protobuf in a tight loop and discarded (no item is
/// decoded, only each page's continue token): what a client can do at best. Measured in
/// the same run as the command, in `rounds` rounds of floor, JSON floor and command one
/// after the other (the server's own pace drifts with its garbage collector); the fastest
/// of each is kept.
async fn protobuf_floor(
    kubeconfig: &Path,
    lists: &[(&str, Option<&str>, u32)],
    rounds: usize,
    command: impl Fn() -> Command,
) -> Floors {
    let mut floors = Floors {
        protobuf: (f64::MAX, 0, 0),
        json: (f64::MAX, 0, 0),
        command: f64::MAX,
    };
    let fastest = |a: (f64, usize, usize), b: (f64, usize, usize)| if b.0 < a.0 { b } else { a };
    for _ in 0..rounds {
        floors.protobuf = fastest(
            floors.protobuf,
            floor(kubeconfig, lists, 1, placekit_client::protobuf::ACCEPT).await,
        );
        floors.json = fastest(
            floors.json,
            floor(kubeconfig, lists, 1, "application/json").await,
        );
        let cmd = command();
        let (output, seconds, _) =
            tokio::task::spawn_blocking(move || run_watched(cmd, std::process::Stdio::null()))
                .await
                .expect("join");
        assert!(
            output.status.code().is_some_and(|c| c <= 1),
            "the command failed"
        );
        floors.command = floors.command.min(seconds);
    }
    floors
}

/// `plugin args` measured on `cluster` (wall, peak memory, requests) and, on a real cluster,
/// the floors of its `lists` next to it ([`protobuf_floor`]).
async fn measure_with_floor(
    cluster: Cluster,
    plugin: PathBuf,
    args: &'static [&'static str],
    lists: &[(&str, Option<&str>, u32)],
) -> (Measured, Option<Floors>) {
    let direct = cluster.direct_kubeconfig.clone();
    let command = move |kubeconfig: &Path| {
        let mut c = Command::new(&plugin);
        c.args(args).env("KUBECONFIG", kubeconfig);
        c
    };
    let timed = command.clone();
    let measured =
        tokio::task::spawn_blocking(move || cluster.measure(|kubeconfig, _| timed(kubeconfig)))
            .await
            .expect("join");
    let floors = match &direct {
        Some(path) => Some(protobuf_floor(path, lists, 3, || command(path)).await),
        None => None,
    };
    (measured, floors)
}

/// The floors of a command's lists in both encodings, and the command's fastest run.
struct Floors {
    protobuf: (f64, usize, usize),
    json: (f64, usize, usize),
    command: f64,
}

/// [`protobuf_floor`] in one encoding.
async fn floor(
    kubeconfig: &Path,
    lists: &[(&str, Option<&str>, u32)],
    rounds: usize,
    accept: &str,
) -> (f64, usize, usize) {
    use http_body_util::BodyExt as _;
    let client = RealCluster::connect(kubeconfig, None).await.client();
    let mut best = f64::MAX;
    let (mut requests, mut bytes) = (0, 0);
    for _ in 0..rounds {
        let started = Instant::now();
        (requests, bytes) = (0, 0);
        for (collection, selector, limit) in lists {
            let mut token: Option<String> = None;
            loop {
                let mut uri = format!("{collection}?limit={limit}");
                if let Some(s) = selector {
                    uri.push_str(&format!(
                        "&fieldSelector={}",
                        s.replace('!', "%21")
                            .replace('=', "%3D")
                            .replace(',', "%2C")
                    ));
                }
                if let Some(t) = &token {
                    uri.push_str(&format!("&continue={t}"));
                }
                let request = http::Request::get(&uri)
                    .header(http::header::ACCEPT, accept)
                    .body(kube::client::Body::empty())
                    .expect("request");
                let response = client.send(request).await.expect("list");
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .expect("body")
                    .to_bytes();
                requests += 1;
                bytes += body.len();
                let next = if accept == "application/json" {
                    #[derive(serde::Deserialize)]
                    struct Meta {
                        #[serde(rename = "continue", default)]
                        continue_: Option<String>,
                    }
                    #[derive(serde::Deserialize)]
                    struct List {
                        metadata: Meta,
                    }
                    serde_json::from_slice::<List>(&body)
                        .expect("a JSON list")
                        .metadata
                        .continue_
                        .filter(|c| !c.is_empty())
                } else {
                    placekit_client::protobuf::continue_token(&body).expect("a protobuf list")
                };
                match next {
                    Some(t) => token = Some(t),
                    None => break,
                }
            }
        }
        best = best.min(started.elapsed().as_secs_f64());
    }
    (best, requests, bytes)
}

/// Prints a command's time beside the protobuf floor of its lists (and the JSON floor,
/// for comparison: what reading in JSON cannot go below).
fn print_floor(floors: Floors) {
    let (floor, requests, bytes) = floors.protobuf;
    let (json, _, json_bytes) = floors.json;
    let command = floors.command;
    println!(
        "fastest of 3 rounds: the command {command:.2} s; the protobuf floor of the same lists ({requests} requests, {:.1} MB) {floor:.2} s: ratio {:.2}; the JSON floor ({:.1} MB) {json:.2} s",
        bytes as f64 / 1e6,
        command / floor,
        json_bytes as f64 / 1e6
    );
}

/// DRA objects for the last `dra_nodes` generated nodes: a DeviceClass, one ResourceSlice
/// per node with `devices` devices, and `claims` ResourceClaims (spread over the generated
/// namespaces) each allocated one device, as the scheduler records it.
/// What a GPU platform keeps besides its workloads, for the checks of a change: 50 Kueue
/// ResourceFlavors selecting by the generator's GPU-family label (one with a Topology), 10
/// ClusterQueues using them, 5 Volcano Queues and the GPU operator's ClusterPolicy.
fn platform_objects() -> Vec<serde_json::Value> {
    use serde_json::json;
    let mut out = vec![
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
            "metadata": {"name": "datacenter"},
            "spec": {"levels": [{"nodeLabel": "topology.kubernetes.io/zone"}, {"nodeLabel": "kubernetes.io/hostname"}]}}),
        json!({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": {"devicePlugin": {"config": {"name": "time-slicing-config"}}}}),
    ];
    for i in 0..50 {
        let family = ["a100", "h100", "l4"][i % 3];
        out.push(
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": format!("flavor-{i:02}")},
            "spec": {"nodeLabels": {"accelerator.example.com/gpu-family": family},
                     "topologyName": if i == 0 { Some("datacenter") } else { None }}}),
        );
    }
    for q in 0..10 {
        out.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": format!("team-{q}")},
            "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                "flavors": (0..5).map(|f| json!({"name": format!("flavor-{:02}", q * 5 + f),
                    "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}]})).collect::<Vec<_>>()}]}}));
    }
    for q in 0..5 {
        out.push(json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": format!("volcano-{q}")},
            "spec": {"affinity": {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [format!("group-{q}")]}}}}));
    }
    out
}

fn dra_objects(
    generator: &Generator,
    dra_nodes: usize,
    devices: usize,
    claims: usize,
) -> Vec<serde_json::Value> {
    use serde_json::json;
    let driver = "gpu.example.com";
    let first = generator.nodes - dra_nodes;
    let node_name = |i: usize| {
        generator.node(first + i)["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mut out = vec![
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{driver}\"")}}]}}),
    ];
    for i in 0..dra_nodes {
        let node = node_name(i);
        out.push(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": format!("{node}-{driver}")},
            "spec": {"driver": driver, "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": (0..devices).map(|d| json!({"name": format!("gpu-{d}"),
                    "attributes": {"model": {"string": "H100"}}, "capacity": {"memory": {"value": "80Gi"}}})).collect::<Vec<_>>()}}));
    }
    for j in 0..claims.min(dra_nodes * devices) {
        let node = node_name(j / devices);
        out.push(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": format!("claim-{j:05}"), "namespace": format!("ml-{}", j % 8)},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver, "count": 1}}]}},
            "status": {"allocation": {
                "devices": {"results": [{"request": "gpu", "driver": driver, "pool": node, "device": format!("gpu-{}", j % devices)}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}));
    }
    out
}

/// N Deployments like the runbook's; every 10th has its required terms split (AL001).
fn lint_corpus(documents: usize) -> String {
    lint_corpus_split_every(documents, 10)
}

/// N Deployments like the runbook's; every `every`-th has its required terms split (AL001).
fn lint_corpus_split_every(documents: usize, every: usize) -> String {
    let mut out = String::with_capacity(documents * 1400);
    for i in 0..documents {
        let terms = if i % every == 0 {
            "            - matchExpressions:\n              - {key: ops.example.com.node-restriction.kubernetes.io/llm-pool, operator: In, values: [online]}\n            - matchExpressions:\n              - {key: accelerator.example.com/gpu-family, operator: In, values: [a100]}\n"
        } else {
            "            - matchExpressions:\n              - {key: ops.example.com.node-restriction.kubernetes.io/llm-pool, operator: In, values: [online]}\n              - {key: accelerator.example.com/gpu-family, operator: In, values: [a100]}\n"
        };
        out.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: llm-{i}\n  namespace: ml-{}\n  labels: {{app: llm-{i}, team: ml}}\nspec:\n  replicas: 2\n  strategy:\n    type: RollingUpdate\n    rollingUpdate: {{maxUnavailable: 1, maxSurge: 0}}\n  selector:\n    matchLabels: {{app: llm-{i}}}\n  template:\n    metadata:\n      labels: {{app: llm-{i}}}\n    spec:\n      tolerations:\n      - {{key: dedicated, operator: Equal, value: llm-online, effect: NoSchedule}}\n      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n{terms}          preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 80\n            preference:\n              matchExpressions:\n              - {{key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}}\n      topologySpreadConstraints:\n      - maxSkew: 1\n        topologyKey: kubernetes.io/hostname\n        whenUnsatisfiable: DoNotSchedule\n        labelSelector:\n          matchLabels: {{app: llm-{i}}}\n      containers:\n      - name: server\n        image: registry.example.com/llm:{i}\n        args: [\"--model\", \"/models/llm-{i}\"]\n        ports:\n        - {{name: http, containerPort: 8000}}\n        resources:\n          requests: {{cpu: \"4\", memory: 32Gi, nvidia.com/gpu: \"1\"}}\n          limits: {{cpu: \"8\", memory: 48Gi, nvidia.com/gpu: \"1\"}}\n        readinessProbe:\n          httpGet: {{path: /health, port: http}}\n          periodSeconds: 10\n",
            i % 8
        ));
    }
    out
}

/// Prints a scale run against the performance targets in the README (< 2 s, < 300 MiB).
fn print_scale(title: &str, m: &Measured) {
    println!("{title}");
    println!("wall time:   {:.3} s (target < 2 s)", m.seconds);
    match m.peak_kib {
        Some(kib) => println!(
            "peak memory: {:.1} MiB (target < 300 MiB)",
            kib as f64 / 1024.0
        ),
        None => println!("peak memory: not measurable here (no /proc)"),
    }
    println!("requests:    {} ({} in all)", m.requests, m.total_requests);
}

/// Lints the corpus and holds every finding against the verdicts recorded for `linter`
/// (columns: linter, file, rule, line, object, verdict `true`/`false`, reason).
fn precision(plugin: &Path, corpus: &Path, verdicts: &Path, linter: &str) -> ExitCode {
    use std::collections::BTreeMap;
    let text = std::fs::read_to_string(verdicts).expect("verdicts readable");
    let mut judged: BTreeMap<(String, String, u64), bool> = BTreeMap::new();
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 6 || cols[0] != linter {
            continue;
        }
        let line_no: u64 = cols[3].parse().expect("line number");
        judged.insert(
            (cols[1].to_string(), cols[2].to_string(), line_no),
            cols[5] == "true",
        );
    }
    let output = Command::new(plugin)
        .args(["-R", "-f", corpus.to_str().expect("utf-8 path")])
        .args(["-o", "json", "--fail-on", "info"])
        .output()
        .expect("affinity-lint runs");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    // rule -> (true, false, unjudged)
    let mut per_rule: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for f in report["findings"].as_array().into_iter().flatten() {
        let file = Path::new(f["file"].as_str().unwrap_or_default())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let rule = f["rule"].as_str().unwrap_or_default().to_string();
        let key = (file, rule.clone(), f["line"].as_u64().unwrap_or(0));
        let entry = per_rule.entry(rule).or_default();
        match judged.get(&key) {
            Some(true) => entry.0 += 1,
            Some(false) => entry.1 += 1,
            None => {
                entry.2 += 1;
                println!("unjudged: {} {} line {}", key.0, key.1, key.2);
            }
        }
        seen.insert(key);
    }
    for key in judged.keys().filter(|k| !seen.contains(*k)) {
        println!(
            "judged but not found any more: {} {} line {}",
            key.0, key.1, key.2
        );
    }
    let summary = &report["summary"];
    println!(
        "{} files, {} objects, {} input errors",
        summary["files"], summary["objects"], summary["inputErrors"]
    );
    println!(
        "{:<7} {:>5} {:>6} {:>9}",
        "RULE", "TRUE", "FALSE", "UNJUDGED"
    );
    let (mut t, mut f, mut u) = (0, 0, 0);
    for (rule, (tp, fp, unjudged)) in &per_rule {
        println!("{rule:<7} {tp:>5} {fp:>6} {unjudged:>9}");
        (t, f, u) = (t + tp, f + fp, u + unjudged);
    }
    println!(
        "{:<7} {t:>5} {f:>6} {u:>9}   precision {:.0}%",
        "all",
        if t + f == 0 {
            100.0
        } else {
            100.0 * t as f64 / (t + f) as f64
        }
    );
    if u == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `status --contexts` over `clusters` test API servers against one run per context in turn,
/// then with one of them replaced by a hung context (accepts, never answers).
async fn fleet(
    plugin: PathBuf,
    clusters: usize,
    nodes: usize,
    pods: usize,
    context_timeout: &str,
    latency_ms: u64,
) -> ExitCode {
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let mut servers = Vec::new();
    for i in 0..clusters {
        let server = TestServer::start(ServerConfig::default().with_generator(Generator {
            nodes,
            pods,
            gpus_per_node: 8,
        }))
        .await
        .expect("server starts");
        if latency_ms > 0 {
            server.inject(placekit_testserver::Fault {
                times: u64::MAX,
                ..placekit_testserver::Fault::new(
                    "*",
                    "*",
                    1,
                    placekit_testserver::FaultAction::Delay { millis: latency_ms },
                )
            });
        }
        let path = server
            .write_kubeconfig(&dir.path().join(format!("c{i}.kubeconfig")), "admin")
            .expect("kubeconfig");
        servers.push((format!("cluster-{i}"), path, server));
    }
    eprintln!(
        "{clusters} test API servers of {nodes} nodes and {pods} pods each in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let hung = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let hung_url = format!("https://{}", hung.local_addr().expect("address"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in hung.incoming().flatten() {
            held.push(stream);
        }
    });
    let named: Vec<(&str, &Path)> = servers
        .iter()
        .map(|(n, p, _)| (n.as_str(), p.as_path()))
        .chain(servers.first().map(|(_, p, _)| ("hung", p.as_path())))
        .collect();
    let mut merged: serde_json::Value =
        serde_yaml::from_str(&placekit_testserver::harness::merge_kubeconfigs(&named))
            .expect("yaml");
    merged["clusters"][clusters]["cluster"] =
        serde_json::json!({"server": hung_url, "insecure-skip-tls-verify": true});
    let kubeconfig = dir.path().join("fleet.kubeconfig");
    std::fs::write(&kubeconfig, serde_yaml::to_string(&merged).expect("yaml")).expect("write");
    let run = |args: Vec<String>| {
        let kubeconfig = kubeconfig.clone();
        let plugin = plugin.clone();
        move || {
            let mut c = Command::new(&plugin);
            c.args(&args).env("KUBECONFIG", &kubeconfig);
            run_watched(c, std::process::Stdio::null())
        }
    };
    let mut singles = Vec::new();
    for (name, _, _) in &servers {
        let args = vec![
            "status".into(),
            "-o".into(),
            "json".into(),
            "--context".into(),
            name.clone(),
        ];
        let (output, seconds, _) = tokio::task::spawn_blocking(run(args)).await.expect("join");
        if !output.status.success() {
            eprintln!("{}", String::from_utf8_lossy(&output.stderr));
            return ExitCode::FAILURE;
        }
        singles.push(seconds);
    }
    let sequential: f64 = singles.iter().sum();
    let slowest = singles.iter().copied().fold(0.0, f64::max);
    let pattern = "cluster-*".to_string();
    // One of the clusters hung: the last one's name stands for the hung context.
    let with_hung_pattern = format!("cluster-*,!cluster-{},hung", clusters - 1);
    let fleet_args = |pattern: String| {
        vec![
            "status".into(),
            "-o".into(),
            "json".into(),
            "--contexts".into(),
            pattern,
            "--context-timeout".into(),
            context_timeout.to_string(),
        ]
    };
    let (output, together, peak) = tokio::task::spawn_blocking(run(fleet_args(pattern)))
        .await
        .expect("join");
    let all_read = output.status.success();
    let (hung_output, with_hung, _) =
        tokio::task::spawn_blocking(run(fleet_args(with_hung_pattern)))
            .await
            .expect("join");
    let deadline = placekit_client::connect::parse_request_timeout(context_timeout)
        .ok()
        .flatten()
        .map_or(0.0, |d| d.as_secs_f64());
    println!(
        "kubectl gpu-taint status -o json over {clusters} clusters of {nodes} nodes and {pods} pods (test API servers in one process on this machine, {latency_ms} ms added to each request)"
    );
    println!(
        "one context at a time: {sequential:.2} s in all, slowest {slowest:.2} s (each: {})",
        singles
            .iter()
            .map(|s| format!("{s:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "--contexts 'cluster-*':  {together:.2} s ({:.2}x the slowest single context, target <= 1.5x; {:.1}x faster than in turn), peak memory {}, exit {}",
        together / slowest,
        sequential / together,
        peak.map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
        output.status.code().unwrap_or(-1)
    );
    println!(
        "one of them hung:       {with_hung:.2} s (target <= deadline {deadline:.1} s + slowest {slowest:.2} s = {:.2} s), exit {} (4: some contexts could not be read)",
        deadline + slowest,
        hung_output.status.code().unwrap_or(-1)
    );
    let on_target = together <= 1.5 * slowest && with_hung <= deadline + slowest;
    if all_read && hung_output.status.code() == Some(4) && on_target {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs `serve-metrics ARGS` against `kubeconfig`: the time until /healthz answers 200, then
/// `scrapes` scrapes of /metrics timed one by one, and the process's peak memory.
fn exporter(
    plugin: &Path,
    args: &[&str],
    kubeconfig: &Path,
    nodes: usize,
    pods: usize,
    scrapes: usize,
) -> ExitCode {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let get = |path: &str| placekit_testserver::http_get(port, path);
    let started = Instant::now();
    let mut child = Command::new(plugin)
        .arg("serve-metrics")
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("KUBECONFIG", kubeconfig)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve-metrics runs");
    let status_path = format!("/proc/{}/status", child.id());
    let peak = || -> Option<u64> {
        std::fs::read_to_string(&status_path)
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    let ready = loop {
        if let Some((200, _)) = get("/healthz") {
            break Some(started.elapsed().as_secs_f64());
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut times = Vec::new();
    let mut body = String::new();
    for _ in 0..scrapes {
        let t = Instant::now();
        if let Some((200, text)) = get("/metrics") {
            times.push(t.elapsed().as_secs_f64());
            body = text;
        }
    }
    let peak_kib = peak();
    let _ = child.kill();
    let _ = child.wait();
    println!(
        "{} serve-metrics {} on {nodes} nodes and {pods} pods of the test API server",
        plugin.file_name().unwrap_or_default().to_string_lossy(),
        args.join(" ")
    );
    match ready {
        Some(s) => println!("ready:       {s:.2} s (first list and watches; target < 2 s)"),
        None => println!("ready:       never (120 s)"),
    }
    times.sort_by(f64::total_cmp);
    if let (Some(first), Some(last)) = (times.first(), times.last()) {
        println!(
            "scrape:      {:.3} s median, {first:.3}-{last:.3} s over {} scrapes ({} bytes, {} series)",
            times[times.len() / 2],
            times.len(),
            body.len(),
            body.lines().filter(|l| !l.starts_with('#')).count()
        );
    }
    match peak_kib {
        Some(kib) => println!(
            "peak memory: {:.1} MiB (target < 300 MiB)",
            kib as f64 / 1024.0
        ),
        None => println!("peak memory: not measurable here (no /proc)"),
    }
    if ready.is_some() && times.len() == scrapes {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default()
        .join(name)
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.bench {
        Bench::Nodelabel {
            nodes,
            plugin,
            kubeconfig,
        } => bench_nodelabel(nodes, plugin, kubeconfig).await,
        Bench::Precision {
            corpus,
            verdicts,
            linter,
            plugin,
        } => {
            let plugin = plugin.unwrap_or_else(|| sibling("kubectl-affinity_lint"));
            let verdicts = verdicts.unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("precision/verdicts.tsv")
            });
            precision(&plugin, &corpus, &verdicts, &linter)
        }
        Bench::Lint {
            documents,
            large_mb,
            plugin,
        } => bench_lint(documents, large_mb, plugin),
        Bench::Drift {
            nodes,
            pods,
            plugin,
            kubeconfig,
        } => bench_drift(nodes, pods, plugin, kubeconfig).await,
        Bench::Checks {
            nodes,
            pods,
            nodelabel,
            gpu_taint,
        } => bench_checks(nodes, pods, nodelabel, gpu_taint).await,
        Bench::Fleet {
            clusters,
            nodes,
            pods,
            context_timeout,
            latency_ms,
            plugin,
        } => {
            let plugin = plugin.unwrap_or_else(|| sibling("kubectl-gpu_taint"));
            fleet(plugin, clusters, nodes, pods, &context_timeout, latency_ms).await
        }
        Bench::Decode {
            files,
            into,
            rounds,
        } => bench_decode(files, into, rounds),
        Bench::Exporter {
            nodes,
            pods,
            scrapes,
            judge,
            plugin,
        } => {
            let plugin = plugin.unwrap_or_else(|| {
                sibling(if judge {
                    "kubectl-affinity_lint"
                } else {
                    "kubectl-gpu_taint"
                })
            });
            let generator = Generator {
                nodes,
                pods,
                gpus_per_node: 8,
            };
            let cluster = Cluster::generate(generator, None).await;
            let kubeconfig = cluster.counting_kubeconfig.clone();
            let args: &'static [&'static str] = if judge { &["-A"] } else { &[] };
            tokio::task::spawn_blocking(move || {
                exporter(&plugin, args, &kubeconfig, nodes, pods, scrapes)
            })
            .await
            .expect("join")
        }
        Bench::GpuStatus {
            nodes,
            pods,
            dra_nodes,
            devices_per_node,
            claims,
            plugin,
            kubeconfig,
        } => {
            bench_gpu_status(
                nodes,
                pods,
                dra_nodes,
                devices_per_node,
                claims,
                plugin,
                kubeconfig,
            )
            .await
        }
    }
}

/// `kubectl nodelabel set -l ... --overwrite` against `kubectl label nodes` on a generated cluster.
async fn bench_nodelabel(
    nodes: usize,
    plugin: Option<PathBuf>,
    kubeconfig: Option<PathBuf>,
) -> ExitCode {
    let plugin = plugin.unwrap_or_else(|| sibling("kubectl-nodelabel"));
    let cluster = Cluster::generate(
        Generator {
            nodes,
            pods: 0,
            gpus_per_node: 8,
        },
        kubeconfig.as_deref(),
    )
    .await;
    let state = tempfile::tempdir().expect("tempdir");
    let cluster = std::sync::Arc::new(cluster);
    // Each round sets another value, so the counted round writes as much as the
    // timed one.
    let ours = {
        let cluster = cluster.clone();
        let state = state.path().join("state");
        tokio::task::spawn_blocking(move || {
            cluster.measure(|kubeconfig, round| {
                let mut c = Command::new(&plugin);
                c.args([
                    "set",
                    "-l",
                    "kubernetes.io/os=linux",
                    &format!("bench.example.com/run=placekit-{round}"),
                    "--overwrite",
                    "-y",
                    "--no-progress",
                ])
                .env("KUBECONFIG", kubeconfig)
                .env("PLACEKIT_STATE_DIR", &state);
                c
            })
        })
        .await
        .expect("join")
    };
    let theirs = match Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
    {
        Ok(o) if o.status.success() => {
            let cluster = cluster.clone();
            let cache = state.path().join("cache");
            Some(
                tokio::task::spawn_blocking(move || {
                    cluster.measure(|kubeconfig, round| {
                        let mut c = Command::new("kubectl");
                        c.args([
                            "label",
                            "nodes",
                            "-l",
                            "kubernetes.io/os=linux",
                            &format!("bench.example.com/run=kubectl-{round}"),
                            "--overwrite",
                        ])
                        .env("KUBECONFIG", kubeconfig)
                        .env("KUBECACHEDIR", &cache);
                        c
                    })
                })
                .await
                .expect("join"),
            )
        }
        _ => {
            eprintln!("kubectl is not on PATH: no comparison");
            None
        }
    };

    println!(
        "labelling {nodes} nodes of {} (one label, --overwrite)",
        cluster.name()
    );
    println!("{:<48} {:>8}  {:>8}  requests", "command", "wall s", "ok");
    println!(
        "{:<48} {:>8.3}  {:>8}  {} ({} in all)",
        "kubectl nodelabel set -l ... --overwrite -y",
        ours.seconds,
        ours.ok,
        ours.requests,
        ours.total_requests
    );
    if let Some(t) = &theirs {
        println!(
            "{:<48} {:>8.3}  {:>8}  {} ({} in all)",
            "kubectl label nodes -l ... --overwrite", t.seconds, t.ok, t.requests, t.total_requests
        );
        println!("speed-up: {:.1}x", t.seconds / ours.seconds);
    }
    if ours.ok && theirs.as_ref().is_none_or(|t| t.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `kubectl affinity-lint` on one file, on one file per document, on a large file and on a dense one, next to plain serde deserialization.
fn bench_lint(documents: usize, large_mb: usize, plugin: Option<PathBuf>) -> ExitCode {
    let plugin = plugin.unwrap_or_else(|| sibling("kubectl-affinity_lint"));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("deployments.yaml");
    let text = lint_corpus(documents);
    std::fs::write(&path, &text).expect("corpus written");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{documents} Deployment documents, {:.1} MB ({} split into OR-ed terms), {cores} cores",
        text.len() as f64 / 1e6,
        documents / 10
    );
    let started = Instant::now();
    let mut parsed = 0usize;
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value: serde_json::Value = serde::Deserialize::deserialize(doc).expect("valid YAML");
        parsed += usize::from(value.is_object());
    }
    let serde_secs = started.elapsed().as_secs_f64();
    println!(
        "plain serde_yaml deserialization (in process, 1 core): {serde_secs:.3} s ({parsed} documents)"
    );
    // The same documents as one file each.
    let split = dir.path().join("split");
    std::fs::create_dir(&split).expect("dir");
    for (i, doc) in text.split("---\n").filter(|d| !d.is_empty()).enumerate() {
        std::fs::write(split.join(format!("d{i:05}.yaml")), doc).expect("file written");
    }
    let run = |what: &str, input: &Path, jobs: usize, format: &str| {
        let mut cmd = Command::new(&plugin);
        cmd.args([
            "-R",
            "-f",
            input.to_str().expect("utf-8 path"),
            "-o",
            format,
        ])
        .args(["-j", &jobs.to_string()]);
        let (output, secs, peak) = run_watched(cmd, std::process::Stdio::piped());
        let findings = match format {
            "json" => serde_json::from_slice::<serde_json::Value>(&output.stdout)
                .expect("JSON report")["findings"]
                .as_array()
                .map(|f| f.iter().filter(|f| f["rule"] == "AL001").count())
                .unwrap_or(0),
            _ => String::from_utf8_lossy(&output.stdout)
                .matches("error[AL001]")
                .count(),
        };
        println!(
            "{what:<34} {format:<4} -j {}: {secs:.3} s, peak {}, {findings} AL001",
            if jobs == 0 {
                "all".to_string()
            } else {
                jobs.to_string()
            },
            peak.map_or("n/a".to_string(), |k| format!(
                "{:.0} MiB",
                k as f64 / 1024.0
            )),
        );
        (secs, findings)
    };
    let (one_core, _) = run("one file", &path, 1, "json");
    let (all_cores, al001) = run("one file", &path, 0, "json");
    let (_, text_al001) = run("one file", &path, 0, "text");
    let (files_one_core, _) = run(&format!("{documents} files"), &split, 1, "json");
    let (files_all_cores, files_al001) = run(&format!("{documents} files"), &split, 0, "json");
    println!(
        "speed-up from {cores} cores: {:.2}x (one file), {:.2}x ({documents} files); lint/serde: {:.2}x (target < 1 s, <= 2x serde)",
        one_core / all_cores,
        files_one_core / files_all_cores,
        all_cores / serde_secs,
    );
    // A large input: peak memory must not follow its size.
    let per_doc = text.len() / documents.max(1);
    let large_docs = (large_mb * 1_000_000) / per_doc.max(1);
    let large = dir.path().join("large.yaml");
    std::fs::write(&large, lint_corpus(large_docs)).expect("large corpus written");
    println!(
        "large input: {large_docs} documents, {:.1} MB (target: peak < 100 MB)",
        std::fs::metadata(&large).map(|m| m.len()).unwrap_or(0) as f64 / 1e6
    );
    let (_, large_al001) = run("large file", &large, 0, "json");
    run("large file", &large, 0, "text");
    // The same size with a finding in every document: what the report holds must not
    // follow the number of findings either, in any format.
    std::fs::write(&large, lint_corpus_split_every(large_docs, 1)).expect("dense corpus written");
    println!(
        "dense findings: {large_docs} documents, {:.1} MB, an AL001 in every one (target: peak < 100 MB in every format)",
        std::fs::metadata(&large).map(|m| m.len()).unwrap_or(0) as f64 / 1e6
    );
    let mut dense_ok = true;
    for format in ["text", "json", "sarif", "gitlab", "github"] {
        let mut cmd = Command::new(&plugin);
        cmd.args(["-f", large.to_str().expect("utf-8 path"), "-o", format]);
        let (output, secs, peak) = run_watched(cmd, std::process::Stdio::piped());
        let stdout = String::from_utf8_lossy(&output.stdout);
        let findings = match format {
            "text" => stdout.matches("error[AL001]").count(),
            "github" => stdout.matches("::error ").count(),
            _ => {
                let report: serde_json::Value =
                    serde_json::from_str(&stdout).expect("a JSON report");
                match format {
                    "json" => report["findings"].as_array().map_or(0, Vec::len),
                    "sarif" => report["runs"][0]["results"].as_array().map_or(0, Vec::len),
                    _ => report.as_array().map_or(0, Vec::len),
                }
            }
        };
        dense_ok &= findings == large_docs;
        println!(
            "dense file                         {format:<6} -j all: {secs:.3} s, peak {}, {findings} findings, {:.0} MB of report",
            peak.map_or("n/a".to_string(), |k| format!(
                "{:.0} MiB",
                k as f64 / 1024.0
            )),
            output.stdout.len() as f64 / 1e6,
        );
    }
    let expected = documents / 10;
    if al001 == expected
        && text_al001 == expected
        && files_al001 == expected
        && large_al001 == large_docs.div_ceil(10)
        && dense_ok
    {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `kubectl affinity-lint drift -A` on a generated cluster where every 100th node drifted.
async fn bench_drift(
    nodes: usize,
    pods: usize,
    plugin: Option<PathBuf>,
    kubeconfig: Option<PathBuf>,
) -> ExitCode {
    let plugin = plugin.unwrap_or_else(|| sibling("kubectl-affinity_lint"));
    let generator = Generator {
        nodes,
        pods,
        gpus_per_node: 8,
    };
    // Some drift to find: every 100th node has changed its gpu-family since its
    // pods were scheduled (patched on the test server, created so on a real one).
    let drifted_family = |i: usize| if i.is_multiple_of(2) { "h100" } else { "a100" };
    let drifted = |i: usize| {
        let mut node = generator.node(i);
        if i.is_multiple_of(100) {
            node["metadata"]["labels"]["accelerator.example.com/gpu-family"] =
                serde_json::json!(drifted_family(i));
        }
        node
    };
    let cluster = Cluster::generate_with(
        generator.clone(),
        kubeconfig.as_deref(),
        &drifted,
        Vec::new(),
    )
    .await;
    if !cluster.is_real() {
        for i in (0..nodes).step_by(100) {
            cluster
                .counting
                .merge_patch(
                    "nodes",
                    None,
                    &format!("gpu-node-{i:05}"),
                    &serde_json::json!({"metadata": {"labels": {"accelerator.example.com/gpu-family": drifted_family(i)}}}),
                )
                .expect("node exists");
        }
    }
    let (m, floor) = measure_with_floor(
        cluster,
        plugin,
        &["drift", "-A", "-o", "json"],
        &[
            ("/api/v1/nodes", None, 5000),
            ("/api/v1/pods", Some("status.phase=Running"), 20_000),
        ],
    )
    .await;
    print_scale(
        &format!("kubectl affinity-lint drift -A on {nodes} nodes and {pods} running pods"),
        &m,
    );
    println!(
        "the runbook's script: 1 list + 1 GET per pod = {} requests: {:.0}x more",
        pods + 1,
        (pods + 1) as f64 / m.total_requests.max(1) as f64
    );
    if let Some(floors) = floor {
        print_floor(floors);
    }
    // Exit 1 means drift was found: the run did its job.
    if matches!(m.code, Some(0 | 1)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The policy checks of three `--dry-run=client` changes on a cluster that serves a GPU platform's objects.
async fn bench_checks(
    nodes: usize,
    pods: usize,
    nodelabel: Option<PathBuf>,
    gpu_taint: Option<PathBuf>,
) -> ExitCode {
    let nodelabel = nodelabel.unwrap_or_else(|| sibling("kubectl-nodelabel"));
    let gpu_taint = gpu_taint.unwrap_or_else(|| sibling("kubectl-gpu_taint"));
    let generator = Generator {
        nodes,
        pods,
        gpus_per_node: 8,
    };
    let plain = |i: usize| generator.node(i);
    let cluster = Cluster::generate_with(generator.clone(), None, &plain, platform_objects()).await;
    let runs: [(&str, PathBuf, Vec<&str>); 3] = [
        (
            "kubectl nodelabel remove gpu-node-00000 accelerator.example.com/gpu-family- --dry-run=client -y",
            nodelabel.clone(),
            vec![
                "remove",
                "gpu-node-00000",
                "accelerator.example.com/gpu-family-",
                "--dry-run=client",
                "-y",
            ],
        ),
        (
            "kubectl gpu-taint dedicate gpu-node-00000 --taint dedicated=llm:NoExecute --dry-run=client -y",
            gpu_taint,
            vec![
                "dedicate",
                "gpu-node-00000",
                "--taint",
                "dedicated=llm:NoExecute",
                "--dry-run=client",
                "-y",
            ],
        ),
        (
            "kubectl nodelabel set gpu-node-00000 nvidia.com/mig.config=all-1g.10gb --overwrite --dry-run=client -y",
            nodelabel,
            vec![
                "set",
                "gpu-node-00000",
                "nvidia.com/mig.config=all-1g.10gb",
                "--overwrite",
                "--dry-run=client",
                "-y",
            ],
        ),
    ];
    let cluster = std::sync::Arc::new(cluster);
    for (title, plugin, args) in runs {
        let cluster = cluster.clone();
        let args: Vec<String> = args.into_iter().map(str::to_string).collect();
        let m = tokio::task::spawn_blocking(move || {
            cluster.measure(|kubeconfig, _| {
                let mut c = Command::new(&plugin);
                c.args(&args).env("KUBECONFIG", kubeconfig);
                c
            })
        })
        .await
        .expect("join");
        // Exit 1 (blocked by the checks) is the measured outcome, not a failure.
        print_scale(
            &format!(
                "{title} on {nodes} nodes and {pods} pods (exit {:?})",
                m.code
            ),
            &m,
        );
    }
    ExitCode::SUCCESS
}

/// Saved list pages decoded into the read model, the best of `rounds` each.
fn bench_decode(files: Vec<PathBuf>, into: String, rounds: usize) -> ExitCode {
    fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> usize {
        if body.starts_with(b"k8s\0") {
            placekit_client::protobuf::decode_page::<T>(body)
                .expect("a protobuf list page")
                .items
                .len()
        } else {
            #[derive(serde::Deserialize)]
            struct List<T> {
                items: Vec<T>,
            }
            serde_json::from_slice::<List<T>>(body)
                .expect("a JSON list page")
                .items
                .len()
        }
    }
    for file in files {
        let body = std::fs::read(&file).expect("readable");
        let mut best = f64::MAX;
        let mut items = 0;
        for _ in 0..rounds {
            let started = Instant::now();
            items = match into.as_str() {
                "node" => decode::<placekit_core::model::Node>(&body),
                "placement" => decode::<placekit_core::model::PodPlacement>(&body),
                _ => decode::<placekit_core::model::Pod>(&body),
            };
            best = best.min(started.elapsed().as_secs_f64());
        }
        println!(
            "{}: {:.1} MB, {items} items into {into}: {:.1} ms ({:.0} items/s)",
            file.display(),
            body.len() as f64 / 1e6,
            best * 1e3,
            items as f64 / best
        );
    }
    ExitCode::SUCCESS
}

/// `kubectl gpu-taint status -o json` on a generated cluster, DRA devices and claims included.
async fn bench_gpu_status(
    nodes: usize,
    pods: usize,
    dra_nodes: usize,
    devices_per_node: usize,
    claims: usize,
    plugin: Option<PathBuf>,
    kubeconfig: Option<PathBuf>,
) -> ExitCode {
    let plugin = plugin.unwrap_or_else(|| sibling("kubectl-gpu_taint"));
    let generator = Generator {
        nodes,
        pods,
        gpus_per_node: 8,
    };
    let plain = |i: usize| generator.node(i);
    let dra = dra_objects(&generator, dra_nodes.min(nodes), devices_per_node, claims);
    let cluster =
        Cluster::generate_with(generator.clone(), kubeconfig.as_deref(), &plain, dra).await;
    let name = cluster.name();
    let (m, floor) = measure_with_floor(
        cluster,
        plugin,
        &["status", "-o", "json"],
        &[
            ("/api/v1/nodes", None, 5000),
            ("/apis/resource.k8s.io/v1/deviceclasses", None, 5000),
            ("/apis/resource.k8s.io/v1/resourceslices", None, 5000),
            (
                "/api/v1/pods",
                Some("status.phase!=Succeeded,status.phase!=Failed"),
                10_000,
            ),
        ],
    )
    .await;
    print_scale(
        &format!(
            "kubectl gpu-taint status -o json on {nodes} nodes ({dra_nodes} with {devices_per_node} DRA devices each), {pods} pods and {claims} claims of {name}"
        ),
        &m,
    );
    if let Some(floors) = floor {
        print_floor(floors);
    }
    if m.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
