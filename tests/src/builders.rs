//! Builders for the objects a test puts in a cluster: a node with its labels, taints and
//! accelerators, a pod with its requests and placement, a ResourceSlice as a DRA driver
//! publishes it. Each builds the JSON [`crate::harness::Harness::create`] takes, so a new
//! cluster shape is a few lines, on the test server and on the real control plane alike.
//!
//! ```
//! use placekit_testserver::builders::{node, pod};
//! let a100 = node("gpu-a100-1")
//!     .label("accelerator.example.com/gpu-family", "a100")
//!     .gpus("nvidia.com/gpu", 8)
//!     .taint("dedicated", "batch", "NoSchedule")
//!     .build();
//! let trainer = pod("ml", "trainer").on("gpu-a100-1").request("nvidia.com/gpu", "2").build();
//! assert_eq!(a100["status"]["allocatable"]["nvidia.com/gpu"], "8");
//! assert_eq!(trainer["spec"]["nodeName"], "gpu-a100-1");
//! ```

use serde_json::{Map, Value, json};

/// A Node.
#[derive(Debug, Clone)]
pub struct NodeBuilder {
    name: String,
    labels: Map<String, Value>,
    taints: Vec<Value>,
    capacity: Map<String, Value>,
    allocatable: Map<String, Value>,
    unschedulable: bool,
}

/// A node named `name`, schedulable, with no labels, taints or resources.
pub fn node(name: &str) -> NodeBuilder {
    NodeBuilder {
        name: name.into(),
        labels: Map::new(),
        taints: Vec::new(),
        capacity: Map::new(),
        allocatable: Map::new(),
        unschedulable: false,
    }
}

impl NodeBuilder {
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// A taint (`effect`: `NoSchedule`, `PreferNoSchedule`, `NoExecute`; an empty value is
    /// a taint without one).
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        let mut taint = json!({"key": key, "effect": effect});
        if !value.is_empty() {
            taint["value"] = value.into();
        }
        self.taints.push(taint);
        self
    }

    /// `count` devices of an extended resource, in capacity and allocatable alike.
    pub fn gpus(self, resource: &str, count: u32) -> Self {
        self.resource(resource, &count.to_string(), &count.to_string())
    }

    /// A resource with its capacity and allocatable (`cpu`, `memory`, `pods`, a device).
    pub fn resource(mut self, resource: &str, capacity: &str, allocatable: &str) -> Self {
        self.capacity.insert(resource.into(), capacity.into());
        self.allocatable.insert(resource.into(), allocatable.into());
        self
    }

    /// Cordoned (`spec.unschedulable`).
    pub fn cordoned(mut self) -> Self {
        self.unschedulable = true;
        self
    }

    pub fn build(self) -> Value {
        let mut node = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": self.labels},
            "spec": {},
            "status": {"capacity": self.capacity, "allocatable": self.allocatable},
        });
        if !self.taints.is_empty() {
            node["spec"]["taints"] = Value::Array(self.taints);
        }
        if self.unschedulable {
            node["spec"]["unschedulable"] = true.into();
        }
        node
    }
}

/// A Pod with one container.
#[derive(Debug, Clone)]
pub struct PodBuilder {
    namespace: String,
    name: String,
    labels: Map<String, Value>,
    node: Option<String>,
    requests: Map<String, Value>,
    node_selector: Map<String, Value>,
    tolerations: Vec<Value>,
    phase: String,
    ready: bool,
    owner: Option<(String, String)>,
}

/// A pod `namespace/name`, Pending and unbound, requesting nothing.
pub fn pod(namespace: &str, name: &str) -> PodBuilder {
    PodBuilder {
        namespace: namespace.into(),
        name: name.into(),
        labels: Map::new(),
        node: None,
        requests: Map::new(),
        node_selector: Map::new(),
        tolerations: Vec::new(),
        phase: "Pending".into(),
        ready: false,
        owner: None,
    }
}

impl PodBuilder {
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Bound to `node` and Running there.
    pub fn on(mut self, node: &str) -> Self {
        self.node = Some(node.into());
        self.phase = "Running".into();
        self
    }

    /// A request of its container (limits equal, as extended resources require).
    pub fn request(mut self, resource: &str, quantity: &str) -> Self {
        self.requests.insert(resource.into(), quantity.into());
        self
    }

    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.node_selector.insert(key.into(), value.into());
        self
    }

    /// A toleration of `key` (`Exists` when `value` is empty, else `Equal`).
    pub fn tolerates(mut self, key: &str, value: &str, effect: &str) -> Self {
        let mut toleration = json!({"key": key, "effect": effect});
        if value.is_empty() {
            toleration["operator"] = "Exists".into();
        } else {
            toleration["operator"] = "Equal".into();
            toleration["value"] = value.into();
        }
        self.tolerations.push(toleration);
        self
    }

    /// Its `Ready` condition true (what a disruption budget counts as healthy).
    pub fn ready(mut self) -> Self {
        self.ready = true;
        self
    }

    pub fn phase(mut self, phase: &str) -> Self {
        self.phase = phase.into();
        self
    }

    /// Controlled by `kind/name` (a ReplicaSet, a DaemonSet...).
    pub fn owned_by(mut self, kind: &str, name: &str) -> Self {
        self.owner = Some((kind.into(), name.into()));
        self
    }

    pub fn build(self) -> Value {
        let mut container = json!({"name": "main", "image": "registry.example.com/app:1"});
        if !self.requests.is_empty() {
            container["resources"] = json!({"requests": self.requests, "limits": self.requests});
        }
        let mut pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": self.labels},
            "spec": {"containers": [container]},
            "status": {"phase": self.phase},
        });
        if let Some(node) = self.node {
            pod["spec"]["nodeName"] = node.into();
        }
        if self.ready {
            pod["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        }
        if !self.node_selector.is_empty() {
            pod["spec"]["nodeSelector"] = Value::Object(self.node_selector);
        }
        if !self.tolerations.is_empty() {
            pod["spec"]["tolerations"] = Value::Array(self.tolerations);
        }
        if let Some((kind, name)) = self.owner {
            let api_version = if kind == "ReplicaSet" || kind == "DaemonSet" {
                "apps/v1"
            } else {
                "batch/v1"
            };
            pod["metadata"]["ownerReferences"] = json!([{
                "apiVersion": api_version, "kind": kind, "name": name,
                "uid": format!("uid-{name}"), "controller": true,
            }]);
        }
        pod
    }
}

/// A ResourceSlice of `resource.k8s.io/v1`, as a DRA driver publishes one per node and pool.
#[derive(Debug, Clone)]
pub struct SliceBuilder {
    driver: String,
    pool: String,
    node: String,
    generation: i64,
    slices_in_pool: i64,
    devices: Vec<Value>,
}

/// The slice `driver` publishes for `node`'s pool (named after the node, as node-local
/// drivers name it), generation 1, one slice in the pool, no devices yet.
pub fn resource_slice(driver: &str, node: &str) -> SliceBuilder {
    SliceBuilder {
        driver: driver.into(),
        pool: node.into(),
        node: node.into(),
        generation: 1,
        slices_in_pool: 1,
        devices: Vec::new(),
    }
}

impl SliceBuilder {
    /// A device with string attributes (`productName`, `type`...).
    pub fn device(mut self, name: &str, attributes: &[(&str, &str)]) -> Self {
        let attributes: Map<String, Value> = attributes
            .iter()
            .map(|(k, v)| (k.to_string(), json!({"string": v})))
            .collect();
        self.devices
            .push(json!({"name": name, "attributes": attributes}));
        self
    }

    /// `count` devices `gpu-0`… with no attributes.
    pub fn devices(mut self, count: usize) -> Self {
        for i in 0..count {
            self = self.device(&format!("gpu-{i}"), &[]);
        }
        self
    }

    /// The pool's generation and how many slices it says it has (a driver mid-way through
    /// publishing has fewer than it says).
    pub fn pool(mut self, generation: i64, slices_in_pool: i64) -> Self {
        self.generation = generation;
        self.slices_in_pool = slices_in_pool;
        self
    }

    pub fn build(self) -> Value {
        let name = format!("{}-{}", self.node, self.driver.replace('.', "-"));
        json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {
                "driver": self.driver,
                "nodeName": self.node,
                "pool": {
                    "name": self.pool,
                    "generation": self.generation,
                    "resourceSliceCount": self.slices_in_pool,
                },
                "devices": self.devices,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_names_its_pool_after_its_node() {
        let slice = resource_slice("gpu.example.com", "gpu-dra-1")
            .devices(2)
            .build();
        assert_eq!(slice["spec"]["pool"]["name"], "gpu-dra-1");
        assert_eq!(slice["spec"]["devices"][1]["name"], "gpu-1");
        assert_eq!(slice["metadata"]["name"], "gpu-dra-1-gpu-example-com");
    }

    #[test]
    fn a_pod_tolerates_and_is_owned() {
        let p = pod("ml", "web-1")
            .tolerates("dedicated", "", "NoSchedule")
            .owned_by("ReplicaSet", "web")
            .build();
        assert_eq!(p["spec"]["tolerations"][0]["operator"], "Exists");
        assert_eq!(p["metadata"]["ownerReferences"][0]["apiVersion"], "apps/v1");
        assert_eq!(p["status"]["phase"], "Pending");
    }
}
