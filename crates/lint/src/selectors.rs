//! Node selection held outside any pod template: objects that decide which nodes a
//! workload may use although no pod, and no pod template, names the label. A queued Kueue
//! Job has no pod that selects the flavor's `nodeLabels` (Kueue injects them only at
//! admission), so a check that reads pods alone calls the label unused.
//!
//! Each object becomes a [`Workload`] whose pod spec holds the constraint its controller
//! puts on the pods it places, so the dependents check, the taint check and `nodelabel
//! dependents` judge it like any template:
//!
//! | Object | What selects nodes | Read as |
//! |---|---|---|
//! | Kueue `ResourceFlavor` | `spec.nodeLabels` (the nodeSelector Kueue injects at admission) | `nodeSelector` |
//! | | `spec.topologyName` → the `Topology`'s `spec.levels[].nodeLabel` (topology-aware scheduling places only on nodes with every level label) | required affinity: each level label `Exists` |
//! | | `spec.tolerations` (injected) and `spec.nodeTaints` (the flavor's nodes' taints, which its workloads must tolerate to be admitted) | tolerations |
//! | Volcano `Queue` | `spec.affinity.nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution`: node groups, the nodes labelled `volcano.sh/nodegroup-name` | required affinity `volcano.sh/nodegroup-name In [groups]` |
//!
//! A flavor also names the ClusterQueues that use it (`spec.resourceGroups[].flavors[].name`),
//! so a finding says whose workloads lose the node. The objects are few (flavors and queues
//! per cluster, not per node), so they are kept whole until every list has been read.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec,
    Toleration,
};
use serde_json::Value;

use crate::dependents::Workload;

/// The label Volcano's nodegroup plugin reads a node's group from.
pub const VOLCANO_NODE_GROUP_LABEL: &str = "volcano.sh/nodegroup-name";

/// What is kept of the selector-holding objects while the lists are read.
#[derive(Debug, Default)]
pub struct HeldSelectors {
    flavors: Vec<Flavor>,
    /// Topology name → its levels' node labels.
    topologies: BTreeMap<String, Vec<String>>,
    /// Flavor name → the ClusterQueues that name it.
    queues_by_flavor: BTreeMap<String, BTreeSet<String>>,
    volcano_queues: Vec<(String, Vec<String>)>,
}

#[derive(Debug)]
struct Flavor {
    name: String,
    node_labels: BTreeMap<String, String>,
    tolerations: Vec<Toleration>,
    topology: Option<String>,
}

/// Whether `kind` of `api_group` holds node selection outside any pod template.
pub fn holds_selection(api_group: &str, kind: &str) -> bool {
    matches!(
        (api_group, kind),
        (
            "kueue.x-k8s.io",
            "ResourceFlavor" | "Topology" | "ClusterQueue"
        ) | ("scheduling.volcano.sh", "Queue")
    )
}

impl HeldSelectors {
    /// Keeps what `object` (one listed item of `kind` in `api_group`) contributes.
    pub fn keep(&mut self, api_group: &str, kind: &str, object: &Value) {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let spec = &object["spec"];
        match (api_group, kind) {
            ("kueue.x-k8s.io", "ResourceFlavor") => {
                let node_labels = spec["nodeLabels"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect();
                let mut tolerations: Vec<Toleration> =
                    serde_json::from_value(spec["tolerations"].clone()).unwrap_or_default();
                // The flavor's nodes carry these taints and Kueue admits to the flavor only
                // workloads that tolerate them: its pods there tolerate exactly these.
                for taint in spec["nodeTaints"].as_array().into_iter().flatten() {
                    let text = |f: &str| taint[f].as_str().map(str::to_string);
                    tolerations.push(Toleration {
                        key: text("key"),
                        operator: Some("Equal".into()),
                        value: Some(text("value").unwrap_or_default()),
                        effect: text("effect"),
                        toleration_seconds: None,
                    });
                }
                self.flavors.push(Flavor {
                    name,
                    node_labels,
                    tolerations,
                    topology: spec["topologyName"].as_str().map(str::to_string),
                });
            }
            ("kueue.x-k8s.io", "Topology") => {
                let levels = spec["levels"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l["nodeLabel"].as_str().map(str::to_string))
                    .collect();
                self.topologies.insert(name, levels);
            }
            ("kueue.x-k8s.io", "ClusterQueue") => {
                let flavors = spec["resourceGroups"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|g| g["flavors"].as_array().into_iter().flatten())
                    .filter_map(|f| f["name"].as_str());
                for flavor in flavors {
                    self.queues_by_flavor
                        .entry(flavor.to_string())
                        .or_default()
                        .insert(name.clone());
                }
            }
            ("scheduling.volcano.sh", "Queue") => {
                let groups: Vec<String> = spec
                    .pointer("/affinity/nodeGroupAffinity/requiredDuringSchedulingIgnoredDuringExecution")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|g| g.as_str().map(str::to_string))
                    .collect();
                if !groups.is_empty() {
                    self.volcano_queues.push((name, groups));
                }
            }
            _ => {}
        }
    }

    /// The objects as workloads, once every list has been read (a flavor's topology and
    /// ClusterQueues may come after it).
    pub fn into_workloads(self) -> Vec<Workload> {
        let mut out = Vec::new();
        for flavor in self.flavors {
            let levels = flavor
                .topology
                .as_ref()
                .and_then(|t| self.topologies.get(t))
                .cloned()
                .unwrap_or_default();
            let affinity = (!levels.is_empty()).then(|| {
                required(
                    levels
                        .into_iter()
                        .map(|key| NodeSelectorRequirement {
                            key,
                            operator: "Exists".into(),
                            values: None,
                        })
                        .collect(),
                )
            });
            out.push(Workload {
                kind: "ResourceFlavor".into(),
                namespace: String::new(),
                used_by: self
                    .queues_by_flavor
                    .get(&flavor.name)
                    .into_iter()
                    .flatten()
                    .map(|q| format!("ClusterQueue {q}"))
                    .collect(),
                name: flavor.name,
                pod_spec: PodSpec {
                    node_selector: Some(flavor.node_labels),
                    affinity,
                    tolerations: Some(flavor.tolerations),
                    ..PodSpec::default()
                },
            });
        }
        for (name, groups) in self.volcano_queues {
            out.push(Workload {
                kind: "Queue".into(),
                namespace: String::new(),
                name,
                used_by: Vec::new(),
                pod_spec: PodSpec {
                    affinity: Some(required(vec![NodeSelectorRequirement {
                        key: VOLCANO_NODE_GROUP_LABEL.into(),
                        operator: "In".into(),
                        values: Some(groups),
                    }])),
                    ..PodSpec::default()
                },
            });
        }
        out
    }
}

/// A required node affinity of one term holding `requirements`.
fn required(requirements: Vec<NodeSelectorRequirement>) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(requirements),
                    match_fields: None,
                }],
            }),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        ..Affinity::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_flavor_selects_by_its_node_labels_and_topology_levels_and_names_its_queues() {
        let mut held = HeldSelectors::default();
        held.keep(
            "kueue.x-k8s.io",
            "ClusterQueue",
            &json!({"metadata": {"name": "team-a"}, "spec": {"resourceGroups": [
                {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "h100", "resources": []}]}]}}),
        );
        held.keep(
            "kueue.x-k8s.io",
            "ResourceFlavor",
            &json!({"metadata": {"name": "h100"}, "spec": {
                "nodeLabels": {"nvidia.com/gpu.product": "H100"},
                "nodeTaints": [{"key": "dedicated", "value": "llm", "effect": "NoSchedule"}],
                "topologyName": "dc"}}),
        );
        held.keep(
            "kueue.x-k8s.io",
            "Topology",
            &json!({"metadata": {"name": "dc"}, "spec": {"levels": [{"nodeLabel": "cloud.provider.com/topology-block"}, {"nodeLabel": "kubernetes.io/hostname"}]}}),
        );
        let w = held.into_workloads();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].used_by, ["ClusterQueue team-a"]);
        let spec = &w[0].pod_spec;
        assert_eq!(
            spec.node_selector.as_ref().unwrap()["nvidia.com/gpu.product"],
            "H100"
        );
        let terms = &spec
            .affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()
            .node_selector_terms;
        let keys: Vec<&str> = terms[0]
            .match_expressions
            .iter()
            .flatten()
            .map(|r| r.key.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "cloud.provider.com/topology-block",
                "kubernetes.io/hostname"
            ]
        );
        let toleration = &spec.tolerations.as_ref().unwrap()[0];
        assert_eq!(toleration.key.as_deref(), Some("dedicated"));
        assert_eq!(toleration.value.as_deref(), Some("llm"));
    }

    #[test]
    fn a_volcano_queue_selects_its_node_groups_and_one_without_affinity_nothing() {
        let mut held = HeldSelectors::default();
        held.keep(
            "scheduling.volcano.sh",
            "Queue",
            &json!({"metadata": {"name": "nlp"}, "spec": {"affinity": {"nodeGroupAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": ["group-a", "group-b"]}}}}),
        );
        held.keep(
            "scheduling.volcano.sh",
            "Queue",
            &json!({"metadata": {"name": "default"}, "spec": {"weight": 1}}),
        );
        let w = held.into_workloads();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].name, "nlp");
        let json = serde_json::to_value(&w[0].pod_spec).unwrap();
        assert_eq!(
            json["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                [0]["matchExpressions"][0],
            json!({"key": VOLCANO_NODE_GROUP_LABEL, "operator": "In", "values": ["group-a", "group-b"]})
        );
    }

    #[test]
    fn only_the_selector_kinds_of_their_own_groups_hold_selection() {
        assert!(holds_selection("kueue.x-k8s.io", "ResourceFlavor"));
        assert!(holds_selection("scheduling.volcano.sh", "Queue"));
        assert!(!holds_selection("example.com", "Queue"));
        assert!(!holds_selection("kueue.x-k8s.io", "Workload"));
    }
}
