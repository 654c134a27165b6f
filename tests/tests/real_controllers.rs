//! placekit's predictions about the controllers of a GPU cluster, checked against those
//! controllers running: a control plane started with `tests/control-plane/cp up --with
//! kwok,nfd,kueue,karpenter` (kube-controller-manager with the deployment, replicaset,
//! statefulset, daemonset, taint-eviction, garbage-collector and job controllers; kwok
//! keeping its nodes Ready and running the pods bound to them; nfd-master, and nfd-worker
//! describing node `nfd-node` from this machine and from the features directory the tests
//! write; Kueue with its webhooks; Karpenter with its kwok provider). Each test asserts what
//! placekit said and then what the controller, or kube-scheduler, did.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use placekit_testserver::crds::Kubectl;
use placekit_testserver::harness::built_plugin;
use placekit_testserver::process::Bounded as _;
use placekit_testserver::require;

/// The node nfd-worker describes (`cp up --with nfd`).
const NFD_NODE: &str = "nfd-node";

/// The cluster with controllers, and a scratch home for placekit's state.
struct Controllers {
    kubectl: Kubectl,
    features: PathBuf,
    home: tempfile::TempDir,
}

impl Controllers {
    fn for_suite(suite: &str) -> Option<Self> {
        let (kubeconfig, features) = require::controllers(suite)?;
        require::kubectl(suite).then(|| Controllers {
            kubectl: Kubectl::new(&kubeconfig),
            features,
            home: tempfile::tempdir().unwrap(),
        })
    }

    /// The cluster and the built plugins `names` (`kubectl-nodelabel`), in that order, or
    /// `None` when `suite` is skipped for want of one.
    fn with_plugins(suite: &str, names: &[&str]) -> Option<(Self, Vec<PathBuf>)> {
        let cluster = Self::for_suite(suite)?;
        let plugins: Option<Vec<PathBuf>> = names.iter().map(|n| built_plugin(suite, n)).collect();
        Some((cluster, plugins?))
    }

    /// Runs a plugin (`kubectl-nodelabel`): exit code, stdout, stderr.
    fn plugin(&self, binary: &Path, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(binary)
            .args(args)
            .env("KUBECONFIG", self.kubectl.kubeconfig())
            .env("HOME", self.home.path())
            .env("NO_COLOR", "1")
            .env("PLACEKIT_STATE_DIR", self.home.path().join("state"))
            .bounded_output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn labels(&self, node: &str) -> BTreeMap<String, String> {
        let json = self
            .kubectl
            .must(&["get", "node", node, "-o", "jsonpath={.metadata.labels}"]);
        serde_json::from_str(&json).unwrap_or_default()
    }

    /// Waits until `done` holds on `node`'s labels; what they were when it held, or `None`
    /// after `seconds`.
    fn wait_labels(
        &self,
        node: &str,
        seconds: u64,
        done: impl Fn(&BTreeMap<String, String>) -> bool,
    ) -> Option<(BTreeMap<String, String>, Duration)> {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(seconds) {
            let labels = self.labels(node);
            if done(&labels) {
                return Some((labels, started.elapsed()));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        None
    }
}

/// `nodelabel remove` of a label nfd-master owns (it came from a features file nfd-worker
/// reads): `show` names nfd-master as its owner, the removal warns that nfd-master puts it
/// back, and nfd-master does, with the file's value.
#[test]
fn nfd_master_restores_the_label_nodelabel_said_it_would() {
    let suite = "nodelabel against the running nfd-master";
    let Some((cluster, plugins)) = Controllers::with_plugins(suite, &["kubectl-nodelabel"]) else {
        return;
    };
    let nodelabel = &plugins[0];
    let key = "feature.node.kubernetes.io/pk-owned-gpu";
    let file = cluster.features.join("pk-owned");
    std::fs::write(&file, "pk-owned-gpu=a100\n").unwrap();
    let published = cluster.wait_labels(NFD_NODE, 60, |l| {
        l.get(key).map(String::as_str) == Some("a100")
    });
    let show = cluster.plugin(nodelabel, &["show", NFD_NODE]);
    let removed = cluster.plugin(nodelabel, &["remove", NFD_NODE, key, "--yes"]);
    let restored = cluster.wait_labels(NFD_NODE, 60, |l| {
        l.get(key).map(String::as_str) == Some("a100")
    });
    std::fs::remove_file(&file).unwrap();
    let gone = cluster.wait_labels(NFD_NODE, 60, |l| !l.contains_key(key));

    assert!(published.is_some(), "nfd-master never set {key}");
    let (code, out, err) = show;
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.contains(key))
        .unwrap_or_else(|| panic!("show lists no {key}:\n{out}"));
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        columns,
        [NFD_NODE, key, "a100", "nfd-master", "nfd-master"],
        "{out}"
    );
    let (code, out, err) = removed;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("node/nfd-node applied"), "{out}");
    assert!(
        err.contains(&format!(
            "warning: {key} on node/nfd-node: nfd-master owns it and re-applies its own value at its next update"
        )),
        "{err}"
    );
    let (_, took) = restored.expect("nfd-master did not put the label back within 60 s");
    eprintln!("nfd-master restored {key} {took:?} after the removal");
    assert!(
        gone.is_some(),
        "nfd-master kept {key} after its file was removed"
    );
}

/// One line form of NFD's local-source format and the token its label keys carry.
struct Form {
    name: &'static str,
    content: &'static str,
}

/// Every line form the local source reads, one file each, its keys marked `pkd<N>-`.
const FORMS: &[Form] = &[
    Form {
        name: "key=value",
        content: "pkd01-plain=v1\n",
    },
    Form {
        name: "a bare key is true",
        content: "pkd02-bare\n",
    },
    Form {
        name: "spaces around =",
        content: "pkd03-spaced = padded\n",
    },
    Form {
        name: "a leading / (empty prefix)",
        content: "/pkd04-slash=v\n",
    },
    Form {
        name: "a namespace of one's own",
        content: "example.com/pkd05-ns=v\n",
    },
    Form {
        name: "kubernetes.io is denied",
        content: "kubernetes.io/pkd06-denied=v\n",
    },
    Form {
        name: "a feature.node.kubernetes.io sub-namespace",
        content: "gpu.feature.node.kubernetes.io/pkd07-sub=v\n",
    },
    Form {
        name: "profile.node.kubernetes.io",
        content: "profile.node.kubernetes.io/pkd08-profile=v\n",
    },
    Form {
        name: "another kubernetes.io sub-namespace",
        content: "node.kubernetes.io/pkd09-node=v\n",
    },
    Form {
        name: "a value with a space",
        content: "pkd10-badvalue=has space\n",
    },
    Form {
        name: "an empty value",
        content: "pkd11-empty=\n",
    },
    Form {
        name: "= inside the value",
        content: "pkd12-eq=a=b\n",
    },
    Form {
        name: "a value of 64 characters",
        content: "pkd13-long=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
    },
    Form {
        name: "a key twice: the last wins",
        content: "pkd14-dup=1\npkd14-dup=2\n",
    },
    Form {
        name: "+no-label skips the next entry only",
        content: "# +no-label\npkd15-nolabel=v\npkd15-after=v\n",
    },
    Form {
        name: "#+no-label is a comment",
        content: "#+no-label\npkd16-nospace=v\n",
    },
    Form {
        name: "an expiry passed",
        content: "# +expiry-time=2000-01-01T00:00:00Z\npkd17-expired=v\n",
    },
    Form {
        name: "an expiry to come",
        content: "# +expiry-time=2999-01-01T00:00:00Z\npkd18-future=v\n",
    },
    Form {
        name: "+no-label waits past expired entries",
        content: "# +expiry-time=2000-01-01T00:00:00Z\n# +no-label\npkd19-a=v\n# +expiry-time=2999-01-01T00:00:00Z\npkd19-b=v\npkd19-c=v\n",
    },
    Form {
        name: "an expiry that is no time",
        content: "# +expiry-time=tomorrow\npkd20-badexpiry=v\n",
    },
    Form {
        name: "CRLF line ends",
        content: "pkd21-crlf=v\r\n",
    },
    Form {
        name: "indented, with a trailing tab",
        content: "   pkd22-indented=v\t\n",
    },
    Form {
        name: "capitals and dots",
        content: "pkd23-Upper=Value_1.x\n",
    },
    Form {
        name: "a dynamic @ value",
        content: "pkd24-dyn=@cpu.model.vendor_id\n",
    },
    Form {
        name: "an unknown directive",
        content: "# +foo\npkd25-unknown=v\n",
    },
    Form {
        name: "a comment after the value",
        content: "pkd26-hash=v # comment\n",
    },
    Form {
        name: "#  +no-label (two spaces) is a comment",
        content: "#  +no-label\npkd27-twospace=v\n",
    },
    Form {
        name: "an expiry with an offset",
        content: "# +expiry-time=2000-01-01T00:00:00+00:00\npkd28-offset=v\n",
    },
    Form {
        name: "an expiry of a date alone",
        content: "# +expiry-time=2000-01-01\npkd29-dateonly=v\n",
    },
    Form {
        name: "trailing spaces",
        content: "pkd30-trail=v   \n",
    },
    Form {
        name: "an expiry with a space for T",
        content: "# +expiry-time=2000-01-01 00:00:00Z\npkd31-spacetime=v\n",
    },
    Form {
        name: "an expiry with a small z",
        content: "# +expiry-time=2000-01-01T00:00:00z\npkd32-lowerz=v\n",
    },
    Form {
        name: "an expiry without seconds",
        content: "# +expiry-time=2000-01-01T00:00Z\npkd33-nosec=v\n",
    },
    Form {
        name: "an expiry with a fraction",
        content: "# +expiry-time=2000-01-01T00:00:00.5Z\npkd34-frac=v\n",
    },
    Form {
        name: "a space after expiry-time=",
        content: "# +expiry-time= 2000-01-01T00:00:00Z\npkd35-spaced=v\n",
    },
    Form {
        name: "a byte-order mark",
        content: "\u{feff}pkd36-bom=v\n",
    },
    Form {
        name: "+no-label with a value",
        content: "# +no-label=yes\npkd37-hidden=v\npkd37-shown=v\n",
    },
    Form {
        name: "an indented directive",
        content: "  # +no-label\npkd38-hidden=v\npkd38-shown=v\n",
    },
];

/// `nodelabel import --file F` against nfd-worker reading the same F from its features
/// directory (nfd-master then labelling the node): for every line form, the same labels,
/// byte for byte. A differential: it found nine of these 38 forms placekit read otherwise
/// (spaces around `=`, a leading `/`, `#+no-label` and `#  +no-label`, `+no-label` before an
/// expired entry, `# +no-label=yes`, three expiries Go's RFC 3339 refuses), now read as NFD
/// reads them.
#[test]
fn import_reads_a_feature_file_as_nfd_worker_does() {
    let suite = "nodelabel import against nfd-worker";
    let Some((cluster, plugins)) = Controllers::with_plugins(suite, &["kubectl-nodelabel"]) else {
        return;
    };
    let nodelabel = &plugins[0];
    let dir = cluster.home.path().join("forms");
    std::fs::create_dir(&dir).unwrap();
    // placekit imports onto a node of its own (dry run): none of the forms' labels on it.
    let target = "pk-nfd-import";
    let node = dir.join("node.json");
    std::fs::write(
        &node,
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": target}})
            .to_string(),
    )
    .unwrap();
    cluster
        .kubectl
        .must(&["apply", "-f", &node.display().to_string()]);
    let file_of = |i: usize| format!("pkd-form{:02}", i + 1);
    // The sentinel last: the discovery pass that reads it has read every file before it.
    let sentinel = "feature.node.kubernetes.io/pkd-sentinel";
    for (i, form) in FORMS.iter().enumerate() {
        std::fs::write(dir.join(file_of(i)), form.content).unwrap();
        std::fs::write(cluster.features.join(file_of(i)), form.content).unwrap();
    }
    std::fs::write(cluster.features.join("pkd-sentinel"), "pkd-sentinel=1\n").unwrap();
    let nfd = cluster
        .wait_labels(NFD_NODE, 60, |l| l.contains_key(sentinel))
        .map(|(labels, _)| labels);
    let mut placekit: Vec<BTreeMap<String, String>> = Vec::new();
    for (i, form) in FORMS.iter().enumerate() {
        let path = dir.join(file_of(i)).display().to_string();
        let (code, out, err) = cluster.plugin(
            nodelabel,
            &[
                "import",
                "--file",
                &path,
                target,
                "--skip-invalid",
                "--dry-run=client",
                "-o",
                "json",
            ],
        );
        assert_eq!(code, 0, "{}: {err}", form.name);
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        let mut labels = BTreeMap::new();
        for node in report["nodes"].as_array().unwrap() {
            for change in node["labelChanges"].as_array().unwrap() {
                if let Some(value) = change["after"].as_str() {
                    labels.insert(
                        change["key"].as_str().unwrap().to_string(),
                        value.to_string(),
                    );
                }
            }
        }
        placekit.push(labels);
    }
    for i in 0..FORMS.len() {
        std::fs::remove_file(cluster.features.join(file_of(i))).unwrap();
    }
    std::fs::remove_file(cluster.features.join("pkd-sentinel")).unwrap();
    cluster.kubectl.must(&["delete", "node", target]);

    let nfd = nfd.expect("nfd-master never applied the sentinel file");
    let mut disagreements = Vec::new();
    for (i, form) in FORMS.iter().enumerate() {
        let token = format!("pkd{:02}-", i + 1);
        let by_nfd: BTreeMap<String, String> = nfd
            .iter()
            .filter(|(k, _)| k.contains(&token))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if by_nfd != placekit[i] {
            disagreements.push(format!(
                "{} ({:?}): nfd {by_nfd:?}, placekit {:?}",
                form.name, form.content, placekit[i]
            ));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} forms read otherwise than nfd-worker:\n{}",
        disagreements.len(),
        FORMS.len(),
        disagreements.join("\n")
    );
}

/// A node kwok keeps Ready, with `gpus` GPUs, in pool `pool`.
fn kwok_node(name: &str, pool: &str, gpus: u32) -> serde_json::Value {
    let resources = serde_json::json!({
        "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpus.to_string()
    });
    serde_json::json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {"kubernetes.io/hostname": name, "pool": pool}
        },
        "status": {"capacity": resources, "allocatable": resources}
    })
}

/// The pods of `app` in `default`: name, node (empty when unbound) and phase.
fn pods_of(kubectl: &Kubectl, app: &str) -> Vec<(String, String, String)> {
    // Every namespace: each scenario's app label is its own.
    let out = kubectl.must(&[
        "get",
        "pods",
        "-A",
        "-l",
        &format!("app={app}"),
        "-o",
        "json",
    ]);
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap().to_string(),
                p["spec"]["nodeName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                p["status"]["phase"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

/// Waits until `done` holds of the app's pods; them, or what they were after `seconds`.
fn wait_pods(
    kubectl: &Kubectl,
    app: &str,
    seconds: u64,
    done: impl Fn(&[(String, String, String)]) -> bool,
) -> (bool, Vec<(String, String, String)>) {
    let started = Instant::now();
    loop {
        let pods = pods_of(kubectl, app);
        if done(&pods) {
            return (true, pods);
        }
        if started.elapsed() > Duration::from_secs(seconds) {
            return (false, pods);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `gpu-taint dedicate` with a NoExecute taint says where the evicted pods of a Deployment
/// go: the taint-eviction controller evicts them, the Deployment's ReplicaSet replaces them,
/// kube-scheduler places the replacements, kwok runs them. Once on the one node with a free
/// GPU, as said; then, with no GPU left, Pending, with the message the scheduler then
/// writes, and why-pending agrees with the scheduler.
#[test]
fn evicted_pods_come_back_where_dedicate_said() {
    let suite = "gpu-taint dedicate against the taint-eviction and ReplicaSet controllers";
    let Some((cluster, plugins)) =
        Controllers::with_plugins(suite, &["kubectl-gpu_taint", "kubectl-affinity_lint"])
    else {
        return;
    };
    let [gpu_taint, affinity_lint] = &plugins[..] else {
        unreachable!("two plugins asked for")
    };
    let kubectl = &cluster.kubectl;
    let dir = cluster.home.path();
    let app = "pk-ev-infer";
    // A namespace of its own, deleted at the end: the namespace controller removes what it
    // holds, as on a cluster.
    let ns = "pk-ev";
    let nodes = ["pk-ev-a", "pk-ev-b", "pk-ev-c"];
    let objects = dir.join("objects.json");
    let mut items: Vec<serde_json::Value> =
        nodes.iter().map(|n| kwok_node(n, "pk-ev", 1)).collect();
    items.push(
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    );
    items.push(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": app, "namespace": ns},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {
                    "nodeSelector": {"pool": "pk-ev"},
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "infer", "image": "example/infer",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
                }
            }
        }
    }));
    std::fs::write(
        &objects,
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    let objects = objects.display().to_string();
    kubectl.must(&["apply", "-f", &objects]);
    let running = |pods: &[(String, String, String)]| {
        pods.len() == 2
            && pods
                .iter()
                .all(|(_, node, phase)| !node.is_empty() && phase == "Running")
    };
    let (started, before) = wait_pods(kubectl, app, 60, running);
    let dedicate = |node: &str, extra: &[&str]| {
        let mut args = vec!["dedicate", node, "--taint", "pk-ev=llm:NoExecute", "-y"];
        args.extend(extra);
        cluster.plugin(gpu_taint, &args)
    };

    // One pod's node tainted: its replacement fits only on the node with the free GPU.
    let first = before
        .first()
        .map(|(_, node, _)| node.clone())
        .unwrap_or_default();
    let spare = nodes
        .iter()
        .find(|n| !before.iter().any(|(_, node, _)| node == *n))
        .map(|n| n.to_string())
        .unwrap_or_default();
    let moved = dedicate(&first, &[]);
    let (moved_back, after_move) = wait_pods(kubectl, app, 90, |pods| {
        running(pods) && pods.iter().all(|(_, node, _)| node != &first)
    });

    // Another: no GPU is left for its replacement, which stays Pending.
    let second = after_move
        .iter()
        .map(|(_, node, _)| node.clone())
        .find(|n| n != &spare)
        .unwrap_or_default();
    let stuck = dedicate(&second, &["--ignore-dependents"]);
    let (one_pending, after_stuck) = wait_pods(kubectl, app, 90, |pods| {
        pods.len() == 2 && pods.iter().any(|(_, node, _)| node.is_empty())
    });
    let pending = after_stuck
        .iter()
        .find(|(_, node, _)| node.is_empty())
        .map(|(name, _, _)| name.clone())
        .unwrap_or_default();
    // The scheduler's word, once it has tried.
    let mut scheduler_says = String::new();
    for _ in 0..60 {
        scheduler_says = kubectl
            .run(&[
                "get",
                "pod",
                &pending,
                "-n",
                ns,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
            ])
            .1;
        if !scheduler_says.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let why = cluster.plugin(
        affinity_lint,
        &["why-pending", &pending, "-n", ns, "-o", "json"],
    );
    kubectl.must(&["delete", "namespace", ns, "--wait=false"]);
    kubectl.must(&[
        "delete",
        "node",
        "pk-ev-a",
        "pk-ev-b",
        "pk-ev-c",
        "--wait=false",
    ]);

    // The namespace controller empties the namespace (the Deployment, its ReplicaSet and
    // pods, through the garbage collector and kwok) and then removes it.
    let namespace_gone = (0..120).any(|_| {
        let (found, _, _) = kubectl.run(&["get", "namespace", ns]);
        !found || {
            std::thread::sleep(Duration::from_millis(500));
            false
        }
    });

    eprintln!(
        "before {before:?}\nafter the first dedicate {after_move:?}\nafter the second {after_stuck:?}\nthe scheduler says: {scheduler_says}"
    );
    assert!(started, "the Deployment's pods never ran: {before:?}");
    let (code, _, err) = moved;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            "warning: Deployment {ns}/{app}: the replacement of its evicted pod fits on node/{spare} after the change"
        )),
        "{err}"
    );
    assert!(
        moved_back,
        "the replacement did not run elsewhere: {after_move:?}"
    );
    assert!(
        after_move.iter().any(|(_, node, _)| node == &spare),
        "said node/{spare}, went to {after_move:?}"
    );
    let (code, _, err) = stuck;
    assert_eq!(code, 0, "{err}");
    assert!(
        one_pending,
        "no replacement stayed Pending: {after_stuck:?}"
    );
    let said = err
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!(
                "warning: Deployment {ns}/{app}: the replacement of its evicted pod will stay Pending: "
            ))
        })
        .unwrap_or_else(|| panic!("dedicate did not say the replacement stays Pending:\n{err}"));
    let scheduler_filters = scheduler_says
        .split(" preemption:")
        .next()
        .unwrap_or_default();
    assert_eq!(
        said, scheduler_filters,
        "the scheduler said: {scheduler_says}"
    );
    let (code, out, err) = why;
    assert_eq!(code, 1, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["schedulerSays"]["message"], scheduler_says.as_str());
    assert!(report["disagreement"].is_null(), "{out}");
    assert_eq!(report["verdict"]["class"], "taint", "{out}");
    assert!(
        namespace_gone,
        "namespace {ns} was not removed within 60 s of its deletion"
    );
}

/// A StatefulSet's pod whose volume is local to its node: `gpu-taint dedicate` with a
/// NoExecute taint says its replacement stays Pending, with the message kube-scheduler then
/// writes — the taint-eviction controller evicts the pod, the StatefulSet controller makes it
/// again under its name with the same claim, and the scheduler finds the volume's node
/// tainted and no other node its PersistentVolume allows.
#[test]
fn a_statefulset_pod_on_a_local_volume_stays_pending_as_dedicate_said() {
    let suite = "gpu-taint dedicate against the taint-eviction and StatefulSet controllers";
    let Some((cluster, plugins)) = Controllers::with_plugins(suite, &["kubectl-gpu_taint"]) else {
        return;
    };
    let gpu_taint = &plugins[0];
    let kubectl = &cluster.kubectl;
    let app = "pk-sts-db";
    let claim = format!("data-{app}-0");
    let nodes = ["pk-sts-a", "pk-sts-b"];
    let mut items: Vec<serde_json::Value> =
        nodes.iter().map(|n| kwok_node(n, "pk-sts", 1)).collect();
    items.extend([
        serde_json::json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "pk-sts-local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer"
        }),
        // Bound ahead, as a local-volume provisioner and the volume binder leave it.
        serde_json::json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "pk-sts-pv"},
            "spec": {
                "capacity": {"storage": "100Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "pk-sts-local",
                "claimRef": {"namespace": "default", "name": claim},
                "local": {"path": "/mnt/nvme0"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["pk-sts-a"]}
                ]}]}}
            }
        }),
        serde_json::json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": "default",
                         "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "pk-sts-local",
                "volumeName": "pk-sts-pv",
                "resources": {"requests": {"storage": "100Gi"}}
            }
        }),
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": app, "namespace": "default"},
            "spec": {
                "replicas": 1,
                "serviceName": app,
                "selector": {"matchLabels": {"app": app}},
                "template": {
                    "metadata": {"labels": {"app": app}},
                    "spec": {
                        "nodeSelector": {"pool": "pk-sts"},
                        "terminationGracePeriodSeconds": 0,
                        "containers": [{"name": "db", "image": "example/vector-db",
                                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]
                    }
                },
                "volumeClaimTemplates": [{
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "pk-sts-local",
                             "resources": {"requests": {"storage": "100Gi"}}}
                }]
            }
        }),
    ]);
    let objects = cluster.home.path().join("objects.json");
    std::fs::write(
        &objects,
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    kubectl.must(&["apply", "-f", &objects.display().to_string()]);
    let on_a = |pods: &[(String, String, String)]| {
        pods.len() == 1 && pods[0].1 == "pk-sts-a" && pods[0].2 == "Running"
    };
    let (started, before) = wait_pods(kubectl, app, 60, on_a);
    let uid_of = || {
        kubectl
            .run(&[
                "get",
                "pod",
                &format!("{app}-0"),
                "-n",
                "default",
                "-o",
                "jsonpath={.metadata.uid}",
            ])
            .1
    };
    let first_uid = uid_of();
    let dedicated = cluster.plugin(
        gpu_taint,
        &[
            "dedicate",
            "pk-sts-a",
            "--taint",
            "pk-sts=db:NoExecute",
            "-y",
        ],
    );
    // The replacement: the same name, a new uid, and the scheduler's word on it.
    let mut scheduler_says = String::new();
    let mut replaced = false;
    for _ in 0..120 {
        let uid = uid_of();
        replaced = !uid.is_empty() && uid != first_uid;
        if replaced {
            scheduler_says = kubectl
                .run(&[
                    "get",
                    "pod",
                    &format!("{app}-0"),
                    "-n",
                    "default",
                    "-o",
                    "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
                ])
                .1;
            if !scheduler_says.is_empty() {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let after = pods_of(kubectl, app);
    kubectl.must(&[
        "delete",
        "statefulset",
        app,
        "-n",
        "default",
        "--wait=false",
    ]);
    // No controller here removes the protection finalizers once nothing uses them.
    let unprotected = r#"{"metadata":{"finalizers":null}}"#;
    kubectl.must(&["delete", "pvc", &claim, "-n", "default", "--wait=false"]);
    kubectl.must(&[
        "patch",
        "pvc",
        &claim,
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        unprotected,
    ]);
    kubectl.must(&["delete", "pv", "pk-sts-pv", "--wait=false"]);
    kubectl.must(&[
        "patch",
        "pv",
        "pk-sts-pv",
        "--type",
        "merge",
        "-p",
        unprotected,
    ]);
    kubectl.must(&["delete", "storageclass", "pk-sts-local", "--wait=false"]);
    kubectl.must(&["delete", "node", "pk-sts-a", "pk-sts-b", "--wait=false"]);

    eprintln!("before {before:?}\nafter {after:?}\nthe scheduler says: {scheduler_says}");
    assert!(
        started,
        "the StatefulSet's pod never ran on its volume's node: {before:?}"
    );
    let (code, _, err) = dedicated;
    assert_eq!(code, 0, "{err}");
    let said = err
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!(
                "warning: StatefulSet default/{app}: the replacement of its evicted pod will stay Pending: "
            ))
        })
        .unwrap_or_else(|| panic!("dedicate did not say the replacement stays Pending:\n{err}"));
    assert!(replaced, "the pod was not replaced: {after:?}");
    assert!(
        after.iter().all(|(_, node, _)| node.is_empty()),
        "the replacement was placed: {after:?}"
    );
    let scheduler_filters = scheduler_says
        .split(" preemption:")
        .next()
        .unwrap_or_default();
    assert_eq!(
        said, scheduler_filters,
        "the scheduler said: {scheduler_says}"
    );
}

const KUEUE_OBJECTS: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: pk-kq-flavor}
spec:
  nodeLabels: {pool: pk-kq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: pk-kq-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: pk-kq-flavor
      resources: [{name: nvidia.com/gpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: pk-kq-lq, namespace: default}
spec:
  clusterQueue: pk-kq-cq
"#;

/// A Job of `name` in Kueue's queue, asking one GPU.
fn kueue_job(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "pk-kq-lq"}},
        "spec": {
            "parallelism": 1, "completions": 1,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "train", "image": "example/train",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
                }
            }
        }
    })
}

/// Kueue itself, with its webhooks: it admits a Job to the ResourceFlavor whose
/// `nodeLabels` select a node, and `nodelabel remove` of that label is refused for the
/// flavor. With the override, Kueue still admits the next Job by quota — Kueue does not
/// look at nodes — and injects the flavor's nodeSelector, so its pod stays Pending, as the
/// refusal said ("could not be scheduled anywhere"). A pod Kueue gates for want of quota:
/// why-pending quotes the condition Kueue wrote on its Workload.
#[test]
fn kueue_admits_and_holds_where_placekit_says() {
    let suite = "nodelabel and why-pending against the running Kueue";
    let Some((cluster, plugins)) =
        Controllers::with_plugins(suite, &["kubectl-nodelabel", "kubectl-affinity_lint"])
    else {
        return;
    };
    let [nodelabel, affinity_lint] = &plugins[..] else {
        unreachable!("two plugins asked for")
    };
    let kubectl = &cluster.kubectl;
    let dir = cluster.home.path();
    let apply = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let path = path.display().to_string();
        // A just-installed CRD or webhook may refuse for a moment.
        let mut last = String::new();
        for _ in 0..60 {
            let (ok, _, err) = kubectl.run(&["apply", "-f", &path]);
            if ok {
                return;
            }
            last = err;
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("kubectl apply {name}: {last}");
    };
    apply("node.json", &kwok_node("pk-kq-a", "pk-kq", 4).to_string());
    apply("kueue.yaml", KUEUE_OBJECTS);
    apply("job1.json", &kueue_job("pk-kq-job1").to_string());
    let workload_of = |job: &str| -> serde_json::Value {
        let out = kubectl.must(&[
            "get",
            "workloads.kueue.x-k8s.io",
            "-n",
            "default",
            "-o",
            "json",
        ]);
        let list: serde_json::Value = serde_json::from_str(&out).unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| {
                w["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|o| o["name"] == job)
            })
            .cloned()
            .unwrap_or_default()
    };
    let admitted_flavor = |job: &str| {
        workload_of(job)["status"]["admission"]["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"]
            .as_str()
            .map(str::to_string)
    };
    let wait = |seconds: u64, done: &mut dyn FnMut() -> bool| {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(seconds) {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        false
    };
    let job1_admitted = wait(60, &mut || admitted_flavor("pk-kq-job1").is_some());
    let job1_flavor = admitted_flavor("pk-kq-job1");
    let job1_ran = wait(60, &mut || {
        pods_of(kubectl, "pk-kq-job1")
            .iter()
            .any(|(_, node, _)| node == "pk-kq-a")
    });

    let refused = cluster.plugin(nodelabel, &["remove", "pk-kq-a", "pool-", "--yes"]);
    let kept = cluster.labels("pk-kq-a").get("pool").cloned();
    let overridden = cluster.plugin(
        nodelabel,
        &["remove", "pk-kq-a", "pool-", "--yes", "--ignore-dependents"],
    );
    apply("job2.json", &kueue_job("pk-kq-job2").to_string());
    let job2_admitted = wait(60, &mut || admitted_flavor("pk-kq-job2").is_some());
    let mut job2_pod = (String::new(), String::new());
    wait(60, &mut || {
        let pods = pods_of(kubectl, "pk-kq-job2");
        let Some((name, _, _)) = pods.first() else {
            return false;
        };
        let says = kubectl
            .run(&[
                "get",
                "pod",
                name,
                "-n",
                "default",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
            ])
            .1;
        job2_pod = (name.clone(), says.clone());
        !says.is_empty()
    });

    // A pod asking more than the ClusterQueue ever has: gated by Kueue, with its reason.
    apply(
        "big.json",
        &serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "pk-kq-big", "namespace": "default",
                         "labels": {"kueue.x-k8s.io/queue-name": "pk-kq-lq"}},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "big", "image": "example/big",
                                     "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
        })
        .to_string(),
    );
    let gate_condition = || -> String {
        let out = kubectl.must(&[
            "get",
            "workloads.kueue.x-k8s.io",
            "-n",
            "default",
            "-o",
            "json",
        ]);
        let list: serde_json::Value = serde_json::from_str(&out).unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| {
                w["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|o| o["kind"] == "Pod" && o["name"] == "pk-kq-big")
            })
            .flat_map(|w| {
                w["status"]["conditions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .find(|c| c["type"] == "QuotaReserved" && c["status"] == "False")
            .and_then(|c| c["message"].as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let mut kueue_says = String::new();
    wait(60, &mut || !gate_condition().is_empty());
    kueue_says.push_str(&gate_condition());
    let gates = kubectl
        .run(&[
            "get",
            "pod",
            "pk-kq-big",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec.schedulingGates}",
        ])
        .1;
    let why = cluster.plugin(
        affinity_lint,
        &["why-pending", "pk-kq-big", "-n", "default"],
    );

    for (kind, name) in [
        ("job", "pk-kq-job1"),
        ("job", "pk-kq-job2"),
        ("pod", "pk-kq-big"),
    ] {
        kubectl.run(&[
            "delete",
            kind,
            name,
            "-n",
            "default",
            "--wait=false",
            "--cascade=background",
        ]);
    }
    kubectl.run(&[
        "delete",
        "-f",
        &dir.join("kueue.yaml").display().to_string(),
        "--wait=false",
    ]);
    kubectl.run(&["delete", "node", "pk-kq-a", "--wait=false"]);

    eprintln!(
        "job1 admitted to {job1_flavor:?}; job2's pod: {job2_pod:?}; Kueue on pk-kq-big: {kueue_says}"
    );
    assert!(
        job1_admitted,
        "Kueue never admitted the first Job: {}",
        workload_of("pk-kq-job1")
    );
    assert_eq!(job1_flavor.as_deref(), Some("pk-kq-flavor"));
    assert!(job1_ran, "the first Job's pod never ran on pk-kq-a");
    let (code, out, err) = refused;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("ResourceFlavor pk-kq-flavor") && err.contains("ClusterQueue pk-kq-cq"),
        "{err}"
    );
    assert!(err.contains("--ignore-dependents"), "{err}");
    assert_eq!(kept.as_deref(), Some("pk-kq"), "the label was removed");
    let (code, out, err) = overridden;
    assert_eq!(code, 0, "{out}{err}");
    assert!(job2_admitted, "Kueue did not admit the second Job by quota");
    let (pod, says) = job2_pod;
    assert!(
        says.contains("didn't match Pod's node affinity/selector"),
        "the second Job's pod {pod} was placed, or not said why: {says}"
    );
    assert!(gates.contains("kueue.x-k8s.io/admission"), "{gates}");
    assert!(
        !kueue_says.is_empty(),
        "Kueue wrote no QuotaReserved=False condition"
    );
    let (code, out, err) = why;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&kueue_says),
        "why-pending does not quote Kueue ({kueue_says}):\n{out}"
    );
    // Both of the gates Kueue v0.17 puts on the pods it manages, each with who lifts it.
    assert!(
        out.contains("kueue.x-k8s.io/topology: Kueue removes it at admission"),
        "{out}"
    );
}

const KARPENTER_OBJECTS: &str = r#"
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: pk-kp}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: pk-kp}
spec:
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: Never
    budgets: [{nodes: "100%"}]
  template:
    metadata:
      labels: {pool: pk-kp-v1}
    spec:
      expireAfter: Never
      # Only this test's pods tolerate it: Karpenter launches nodes for nobody else's.
      taints: [{key: pk-kp, value: only, effect: NoSchedule}]
      requirements:
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: pk-kp}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pk-kp-app, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: pk-kp-app}}
  template:
    metadata: {labels: {app: pk-kp-app}}
    spec:
      nodeSelector: {karpenter.sh/nodepool: pk-kp}
      tolerations: [{key: pk-kp, operator: Exists}]
      terminationGracePeriodSeconds: 0
      containers: [{name: app, image: example/app, resources: {requests: {cpu: "1"}}}]
"#;

/// Karpenter itself, with its kwok provider: it launches a node for a pending pod of its
/// NodePool; `nodelabel set` of a hand label and `gpu-taint dedicate` there warn that the
/// label and the taint are lost when the node is replaced (and the dedicate is not refused
/// for taking the Deployment's only node: the pool launches others); a change of the
/// NodePool's template drifts the node, Karpenter replaces it, and the new node has
/// neither.
#[test]
fn karpenter_replaces_the_node_and_loses_what_placekit_said() {
    let suite = "nodelabel and gpu-taint against the running Karpenter";
    let Some((cluster, plugins)) =
        Controllers::with_plugins(suite, &["kubectl-nodelabel", "kubectl-gpu_taint"])
    else {
        return;
    };
    let [nodelabel, gpu_taint] = &plugins[..] else {
        unreachable!("two plugins asked for")
    };
    let kubectl = &cluster.kubectl;
    let objects = cluster.home.path().join("karpenter.yaml");
    std::fs::write(&objects, KARPENTER_OBJECTS).unwrap();
    let objects = objects.display().to_string();
    kubectl.must(&["apply", "-f", &objects]);
    let nodes_of_pool = || -> Vec<(String, BTreeMap<String, String>, String)> {
        let out = kubectl.must(&[
            "get",
            "nodes",
            "-l",
            "karpenter.sh/nodepool=pk-kp",
            "-o",
            "json",
        ]);
        let list: serde_json::Value = serde_json::from_str(&out).unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["metadata"]["deletionTimestamp"].is_null())
            .map(|n| {
                (
                    n["metadata"]["name"].as_str().unwrap().to_string(),
                    serde_json::from_value(n["metadata"]["labels"].clone()).unwrap_or_default(),
                    n["spec"]["taints"].to_string(),
                )
            })
            .collect()
    };
    let (launched, pods) = wait_pods(kubectl, "pk-kp-app", 90, |pods| {
        pods.len() == 1 && pods[0].2 == "Running"
    });
    let node = pods
        .first()
        .map(|(_, node, _)| node.clone())
        .unwrap_or_default();
    let set = cluster.plugin(nodelabel, &["set", &node, "example.com/team=ml", "--yes"]);
    let dedicate = cluster.plugin(
        gpu_taint,
        &[
            "dedicate",
            &node,
            "--taint",
            "pk-kp-dedicated=llm:NoSchedule",
            "--allow-no-gpu",
            "-y",
        ],
    );
    let before = nodes_of_pool();
    kubectl.must(&[
        "patch",
        "nodepool",
        "pk-kp",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"template":{"metadata":{"labels":{"pool":"pk-kp-v2"}}}}}"#,
    ]);
    let started = Instant::now();
    let mut after = Vec::new();
    while started.elapsed() < Duration::from_secs(180) {
        after = nodes_of_pool();
        if !after.is_empty()
            && after.iter().all(|(name, labels, _)| {
                name != &node && labels.get("pool").map(String::as_str) == Some("pk-kp-v2")
            })
        {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let took = started.elapsed();
    kubectl.run(&["delete", "-f", &objects, "--wait=false"]);

    assert!(
        launched,
        "Karpenter launched no node the pod ran on: {pods:?}"
    );
    let (code, out, err) = set;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains(&format!(
            "example.com/team on node/{node}: the node belongs to Karpenter's NodePool pk-kp: the label is lost when the node is replaced"
        )),
        "{err}"
    );
    let (code, out, err) = dedicate;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("the node belongs to Karpenter's NodePool pk-kp: the taint is not in its template and is lost when the node is replaced"),
        "{err}"
    );
    // The Deployment's only node taken, but not stranded: the NodePool launches another
    // (this was refused as "could not be scheduled anywhere" before the real Karpenter
    // showed otherwise).
    assert!(
        err.contains("Karpenter's NodePool pk-kp launches a node for its new pods"),
        "{err}"
    );
    assert!(
        before.iter().any(|(name, labels, taints)| name == &node
            && labels.get("example.com/team").map(String::as_str) == Some("ml")
            && taints.contains("pk-kp-dedicated")),
        "the label and taint were not on the node: {before:?}"
    );
    eprintln!(
        "Karpenter replaced node/{node} {took:?} after the NodePool's template changed: {after:?}"
    );
    let (replacement, labels, taints) = after
        .iter()
        .find(|(name, _, _)| name != &node)
        .unwrap_or_else(|| panic!("Karpenter did not replace node/{node} within 180 s: {after:?}"));
    assert!(
        after.iter().all(|(name, _, _)| name != &node),
        "node/{node} is still there: {after:?}"
    );
    assert_eq!(labels.get("pool").map(String::as_str), Some("pk-kp-v2"));
    assert!(
        !labels.contains_key("example.com/team"),
        "node/{replacement} kept the hand label: {labels:?}"
    );
    assert!(
        !taints.contains("pk-kp-dedicated"),
        "node/{replacement} kept the dedicated taint: {taints}"
    );
}

/// Karpenter at its NodePool's limits launches no node: `gpu-taint dedicate` of the one node
/// a Deployment can use is refused — the pool would launch a node for its pods, but its cpu
/// limit leaves nothing — and with the override, a new pod of the Deployment stays Pending
/// while Karpenter says its limits leave no instance type, as said.
#[test]
fn karpenter_at_its_limits_launches_nothing_as_dedicate_said() {
    let suite = "gpu-taint against the running Karpenter at its NodePool's limits";
    let Some((cluster, plugins)) = Controllers::with_plugins(suite, &["kubectl-gpu_taint"]) else {
        return;
    };
    let gpu_taint = &plugins[0];
    let kubectl = &cluster.kubectl;
    let objects = cluster.home.path().join("karpenter-limits.yaml");
    std::fs::write(&objects, KARPENTER_OBJECTS.replace("pk-kp", "pk-kl")).unwrap();
    let objects = objects.display().to_string();
    kubectl.must(&["apply", "-f", &objects]);
    let (launched, pods) = wait_pods(kubectl, "pk-kl-app", 90, |pods| {
        pods.len() == 1 && pods[0].2 == "Running"
    });
    let node = pods
        .first()
        .map(|(_, node, _)| node.clone())
        .unwrap_or_default();
    // The pool's cpu limit set to what its one node has: no other node fits in it.
    let mut used = String::new();
    for _ in 0..60 {
        used = kubectl
            .run(&[
                "get",
                "nodepool",
                "pk-kl",
                "-o",
                "jsonpath={.status.resources.cpu}",
            ])
            .1;
        if !used.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    kubectl.must(&[
        "patch",
        "nodepool",
        "pk-kl",
        "--type",
        "merge",
        "-p",
        &format!(r#"{{"spec":{{"limits":{{"cpu":"{used}"}}}}}}"#),
    ]);
    let mut args = vec![
        "dedicate",
        node.as_str(),
        "--taint",
        "pk-kl-dedicated=llm:NoSchedule",
        "--allow-no-gpu",
        "-y",
    ];
    let refused = cluster.plugin(gpu_taint, &args);
    args.push("--ignore-dependents");
    let forced = cluster.plugin(gpu_taint, &args);
    kubectl.must(&[
        "scale",
        "deployment",
        "pk-kl-app",
        "-n",
        "default",
        "--replicas",
        "2",
    ]);
    // Karpenter's own word on the new pod: the event it writes when its NodePool's limits
    // leave no instance type.
    let karpenter_says = "all available instance types exceed limits for nodepool (NodePool=pk-kl)";
    let mut said = false;
    let started = Instant::now();
    while !said && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_secs(1));
        // The new pod's events only (an earlier run's pod had another name).
        let pending: Vec<String> = pods_of(kubectl, "pk-kl-app")
            .into_iter()
            .filter(|(_, node, _)| node.is_empty())
            .map(|(name, _, _)| name)
            .collect();
        said = pending.iter().any(|pod| {
            kubectl
                .run(&[
                    "get",
                    "events",
                    "-n",
                    "default",
                    "--field-selector",
                    &format!("involvedObject.kind=Pod,involvedObject.name={pod}"),
                    "-o",
                    "jsonpath={.items[*].message}",
                ])
                .1
                .contains(karpenter_says)
        });
    }
    let after: Vec<String> = kubectl
        .must(&[
            "get",
            "nodes",
            "-l",
            "karpenter.sh/nodepool=pk-kl",
            "-o",
            "name",
        ])
        .lines()
        .map(str::to_string)
        .collect();
    let pods_after = pods_of(kubectl, "pk-kl-app");
    kubectl.run(&["delete", "-f", &objects, "--wait=false"]);

    assert!(
        launched,
        "Karpenter launched no node the pod ran on: {pods:?}"
    );
    assert!(
        !used.is_empty(),
        "the NodePool never counted its node's cpu"
    );
    let (code, out, err) = refused;
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        err.contains(&format!(
            "new pods of it could not be scheduled anywhere (Karpenter's NodePool pk-kl would launch a node for them, but its limit of {used} cpu leaves 0 ({used} in use))"
        )),
        "{err}"
    );
    let (code, out, err) = forced;
    assert_eq!(code, 0, "{out}{err}");
    assert!(said, "Karpenter never said: {karpenter_says}");
    assert_eq!(after.len(), 1, "Karpenter launched another node: {after:?}");
    assert!(
        pods_after.iter().any(|(_, node, _)| node.is_empty()),
        "the new pod was placed: {pods_after:?}"
    );
}
