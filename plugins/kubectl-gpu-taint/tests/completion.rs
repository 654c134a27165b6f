//! `kubectl gpu-taint <TAB>` through kubectl's own completion: node names, the nodes'
//! taints for `release --taint`, extended resources for `status --resource`, and pool label
//! keys. On the test API server, or on the real cluster with `PLACEKIT_E2E_KUBECONFIG`.

use std::path::Path;

use placekit_testserver::harness::{Harness, kubectl_complete};

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-gpu_taint"))
}

const FIXTURE: &str = "\
apiVersion: v1
kind: Node
metadata:
  name: gpu-1
  labels: {pool: online}
spec:
  taints: [{key: dedicated, value: llm-online, effect: NoSchedule}]
status:
  capacity: {cpu: '8', nvidia.com/gpu: '8', memory: 64Gi}
  allocatable: {cpu: '8', nvidia.com/gpu: '8', memory: 64Gi}
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-2
  labels: {pool: batch}
status:
  capacity: {cpu: '8', google.com/tpu: '4'}
  allocatable: {cpu: '8', google.com/tpu: '4'}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_completes_nodes_taints_and_resources() {
    let h = Harness::start("gpu-taint", binary(), FIXTURE).await;
    let env = [("KUBECONFIG", h.kubeconfig.as_path())];
    let complete = |words: &[&str]| {
        tokio::task::block_in_place(|| kubectl_complete(binary(), "gpu-taint", words, &env))
    };
    let Some((subcommands, _)) = complete(&[""]) else {
        return;
    };
    for s in ["dedicate", "release", "status", "rollback"] {
        assert!(subcommands.contains(&s.to_string()), "{subcommands:?}");
    }
    let (nodes, _) = complete(&["dedicate", "gpu"]).unwrap();
    assert_eq!(nodes, ["gpu-1", "gpu-2"]);
    let (taints, _) = complete(&["release", "gpu-1", "--taint", ""]).unwrap();
    assert_eq!(taints, ["dedicated=llm-online:NoSchedule"]);
    let (taints, _) = complete(&["release", "gpu-1", "--taint=ded"]).unwrap();
    assert_eq!(taints, ["--taint=dedicated=llm-online:NoSchedule"]);
    let (resources, _) = complete(&["status", "--resource", ""]).unwrap();
    assert_eq!(resources, ["google.com/tpu", "nvidia.com/gpu"]);
    let (labels, directive) = complete(&["dedicate", "gpu-1", "--label", "po"]).unwrap();
    assert_eq!(labels, ["pool="]);
    assert_eq!(directive, 4 | 2);
    let (labels, _) = complete(&["release", "gpu-1", "--label", "po"]).unwrap();
    assert_eq!(labels, ["pool"]);
}
