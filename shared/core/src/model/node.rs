//! A node as placekit reads it: labels, taints, cordon, capacity, allocatable and
//! conditions, deserialised straight from the list pages.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::syntax::Taint;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Node {
    #[serde(default)]
    pub metadata: NodeMeta,
    #[serde(default)]
    pub spec: NodeSpec,
    #[serde(default)]
    pub status: NodeStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeSpec {
    #[serde(default)]
    pub taints: Vec<Taint>,
    #[serde(default)]
    pub unschedulable: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeStatus {
    #[serde(default)]
    pub capacity: BTreeMap<String, String>,
    #[serde(default)]
    pub allocatable: BTreeMap<String, String>,
    #[serde(default)]
    pub conditions: Vec<NodeCondition>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeCondition {
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub status: String,
}

impl Node {
    /// The read model of a typed Node, for the commands that read whole Node objects (the
    /// mutation pipeline snapshots them). Fields are copied; only the taints go through
    /// their JSON form, so `value` and `timeAdded` stay verbatim as in [`crate::plan`].
    pub fn from_typed(node: &k8s_openapi::api::core::v1::Node) -> Result<Self, serde_json::Error> {
        let spec = node.spec.as_ref();
        let status = node.status.as_ref();
        let quantities = |m: Option<
            &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
        >| {
            m.into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.0.clone()))
                .collect()
        };
        Ok(Node {
            metadata: NodeMeta {
                name: node.metadata.name.clone().unwrap_or_default(),
                labels: node.metadata.labels.clone().unwrap_or_default(),
            },
            spec: NodeSpec {
                taints: match spec.and_then(|s| s.taints.as_ref()) {
                    Some(taints) => serde_json::from_value(serde_json::to_value(taints)?)?,
                    None => Vec::new(),
                },
                unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            },
            status: NodeStatus {
                capacity: quantities(status.and_then(|s| s.capacity.as_ref())),
                allocatable: quantities(status.and_then(|s| s.allocatable.as_ref())),
                conditions: status
                    .and_then(|s| s.conditions.as_ref())
                    .into_iter()
                    .flatten()
                    .map(|c| NodeCondition {
                        type_: c.type_.clone(),
                        status: c.status.clone(),
                    })
                    .collect(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed path and the list-page path read the same node the same way.
    #[test]
    fn a_typed_node_reads_as_its_json_does() {
        let json = serde_json::json!({
            "metadata": {"name": "gpu-1", "labels": {"a": "b"}},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"}]},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "7"}, "conditions": [{"type": "Ready", "status": "True"}]}
        });
        let typed: k8s_openapi::api::core::v1::Node = serde_json::from_value(json.clone()).unwrap();
        let from_typed = Node::from_typed(&typed).unwrap();
        let from_json: Node = serde_json::from_value(json).unwrap();
        assert_eq!(format!("{from_typed:?}"), format!("{from_json:?}"));
    }
}
