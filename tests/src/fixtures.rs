//! Loading clusters: YAML fixtures (multi-document streams or `kind: List`) and a
//! generator of GPU clusters of any size.
//!
//! # Fixture format
//!
//! Ordinary Kubernetes manifests, as `kubectl get -o yaml` prints them: any number of
//! documents separated by `---`, or `kind: List` with `items`. Every object needs
//! `apiVersion`, `kind` and `metadata.name`; namespaced objects without a namespace go to
//! `default`. `uid`, `resourceVersion` and `creationTimestamp` are filled in; the namespaces
//! of namespaced objects are created when the fixture does not list them.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::resources::by_kind;
use crate::store::Store;

/// Errors while loading a fixture.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("fixture is not valid YAML: {0}")]
    Yaml(String),
    #[error("fixture has {api_version} {kind}, which the test server does not serve")]
    Unknown { kind: String, api_version: String },
    #[error("fixture object {name}: {message}")]
    Rejected { name: String, message: String },
}

/// Adds every object of a YAML fixture to the store.
pub fn load_yaml(store: &mut Store, text: &str) -> Result<usize, FixtureError> {
    let mut count = 0;
    for document in serde_yaml::Deserializer::from_str(text) {
        let value = Value::deserialize(document).map_err(|e| FixtureError::Yaml(e.to_string()))?;
        if value.is_null() {
            continue;
        }
        let objects = if value["kind"] == "List" {
            value["items"].as_array().cloned().unwrap_or_default()
        } else {
            vec![value]
        };
        for obj in objects {
            let api_version = obj["apiVersion"].as_str().unwrap_or_default().to_string();
            let kind = obj["kind"].as_str().unwrap_or_default().to_string();
            let resource = by_kind(&api_version, &kind).ok_or(FixtureError::Unknown {
                kind: kind.clone(),
                api_version,
            })?;
            let name = format!(
                "{kind}/{}",
                obj["metadata"]["name"].as_str().unwrap_or_default()
            );
            let ns = obj["metadata"]["namespace"].as_str().map(str::to_string);
            // A fixture need not list the namespaces of its objects: they are created.
            if resource.namespaced
                && let Some(ns) = &ns
            {
                store.ensure_namespace(ns);
            }
            store
                .create(resource, ns.as_deref(), obj, false)
                .map_err(|e| FixtureError::Rejected {
                    name,
                    message: e.message().to_string(),
                })?;
            count += 1;
        }
    }
    Ok(count)
}

/// A generated GPU cluster.
#[derive(Debug, Clone)]
pub struct Generator {
    pub nodes: usize,
    pub pods: usize,
    /// GPUs per node (`nvidia.com/gpu` capacity).
    pub gpus_per_node: u32,
}

impl Generator {
    /// Node `i`: `gpu-node-00042`, family a100 (even) or h100 (odd), zones a/b/c, pool
    /// `online` for the first half and `batch` for the rest; every 10th node is dedicated
    /// with `dedicated=gpu:NoSchedule`.
    pub fn node(&self, i: usize) -> Value {
        let name = format!("gpu-node-{i:05}");
        let family = if i.is_multiple_of(2) { "a100" } else { "h100" };
        let zone = ["zone-a", "zone-b", "zone-c"][i % 3];
        let pool = if i < self.nodes / 2 {
            "online"
        } else {
            "batch"
        };
        let mut node = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "topology.kubernetes.io/zone": zone,
                    "accelerator.example.com/gpu-family": family,
                    "accelerator.example.com/gpu-memory": "80gb",
                    "pool": pool,
                    "ops.example.com.node-restriction.kubernetes.io/llm-pool": pool,
                }
            },
            "spec": {},
            "status": {
                "capacity": {"cpu": "96", "memory": "1056Gi", "pods": "110", "nvidia.com/gpu": self.gpus_per_node.to_string()},
                "allocatable": {"cpu": "95", "memory": "1000Gi", "pods": "110", "nvidia.com/gpu": self.gpus_per_node.to_string()},
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        });
        if i.is_multiple_of(10) {
            node["spec"]["taints"] =
                json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]);
        }
        node
    }

    /// GPUs requested on node `i` when enough pods land there: a realistic mix where
    /// requests never exceed what a node offers: by `i % 5`, empty, a quarter, half,
    /// three quarters, or full.
    pub fn gpus_used_on(&self, i: usize) -> u32 {
        self.gpus_per_node * (i % 5) as u32 / 4
    }

    /// Pod `j`: in namespace `ml-<j % 8>`, bound round-robin to the nodes (the `k`-th pod
    /// of node `i` is `j = k * nodes + i`), with `app=llm-<j % 50>`, the nodeSelector of its
    /// node's GPU family and, on dedicated nodes, the toleration. The first
    /// [`Generator::gpus_used_on`] pods of a node request one GPU each, the others only
    /// CPU: no node is over-committed.
    pub fn pod(&self, j: usize) -> Value {
        let nodes = self.nodes.max(1);
        let (i, k) = (j % nodes, j / nodes);
        let node = format!("gpu-node-{i:05}");
        let gpu = if (k as u32) < self.gpus_used_on(i) {
            "1"
        } else {
            "0"
        };
        let tolerations = if i.is_multiple_of(10) {
            json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
        } else {
            json!([])
        };
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": format!("llm-{j:06}"),
                "namespace": format!("ml-{}", j % 8),
                "labels": {"app": format!("llm-{}", j % 50)}
            },
            "spec": {
                "nodeName": node,
                "nodeSelector": {"accelerator.example.com/gpu-family": if i.is_multiple_of(2) { "a100" } else { "h100" }},
                "tolerations": tolerations,
                "containers": [{"name": "server", "image": "registry.example.com/llm:1", "resources": {"requests": {"cpu": "100m", "nvidia.com/gpu": gpu}, "limits": {"nvidia.com/gpu": gpu}}}]
            },
            "status": {"phase": "Running"}
        })
    }

    /// Fills the store.
    pub fn populate(&self, store: &mut Store) {
        let nodes = crate::resources::find("", "v1", "nodes").expect("nodes");
        let pods = crate::resources::find("", "v1", "pods").expect("pods");
        let namespaces = crate::resources::find("", "v1", "namespaces").expect("namespaces");
        for ns in 0..8 {
            let _ = store.create(
                namespaces,
                None,
                json!({"metadata": {"name": format!("ml-{ns}")}}),
                false,
            );
        }
        for i in 0..self.nodes {
            store
                .create(nodes, None, self.node(i), false)
                .expect("generated nodes are valid");
        }
        for j in 0..self.pods {
            store
                .create(pods, None, self.pod(j), false)
                .expect("generated pods are valid");
        }
    }
}
