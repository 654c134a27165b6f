//! Kueue's topology-aware scheduling (TAS) as its node-failure controller sees a tainted node.
//!
//! A Workload Kueue admitted through TAS names the nodes of its pods in
//! `status.admission.podSetAssignments[].topologyAssignment` when the topology's lowest level
//! is `kubernetes.io/hostname`. Since Kueue 0.17 (`TASReplaceNodeOnNodeTaints`, beta and on),
//! a `NoSchedule` or `NoExecute` taint that one of the Workload's pod sets on the node does
//! not tolerate makes the node *unhealthy* for the Workload once its pods there have ended
//! (`TASReplaceNodeOnPodTermination`, on since 0.14): Kueue then finds another node for those
//! pods, or evicts and requeues the whole Workload when it cannot (or when another of its nodes
//! already failed). Pods assigned to the node and not yet scheduled are failed at once.
//!
//! Tolerations are the pod sets' templates' (`spec.podSets[].template.spec.tolerations`), as
//! Kueue's `classifyTaints` reads them — not the ResourceFlavor's, which Kueue injects into
//! the pods and not into the Workload. Source: Kueue's `pkg/controller/tas/node_failure_controller.go`
//! (v0.17) and the Workload CRD (`v1beta1` `domains`, `v1beta2` `slices`).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Toleration;
use serde_json::Value;

use crate::scheduling::tolerates;
use crate::syntax::{Taint, TaintEffect};

/// The topology level that names a node.
const HOSTNAME: &str = "kubernetes.io/hostname";

/// A Workload admitted by TAS with its pods placed on named nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct TasWorkload {
    pub namespace: String,
    pub name: String,
    pub pod_sets: Vec<TasPodSet>,
}

/// One pod set of a TAS Workload: the nodes its pods were assigned and their tolerations.
#[derive(Debug, Clone, PartialEq)]
pub struct TasPodSet {
    pub name: String,
    pub nodes: BTreeSet<String>,
    pub tolerations: Vec<Toleration>,
}

impl TasWorkload {
    /// The Workload as TAS placed it, in either served version; `None` when it is not
    /// admitted, is finished, or its assignments do not name nodes.
    pub fn from_workload(workload: &Value) -> Option<Self> {
        let status = &workload["status"];
        let finished = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Finished" && c["status"] == "True");
        if finished {
            return None;
        }
        let templates = workload["spec"]["podSets"].as_array();
        let pod_sets: Vec<TasPodSet> = status["admission"]["podSetAssignments"]
            .as_array()?
            .iter()
            .filter_map(|assignment| {
                let nodes = hostnames(&assignment["topologyAssignment"])?;
                let name = assignment["name"].as_str().unwrap_or("main").to_string();
                let template = templates
                    .into_iter()
                    .flatten()
                    .find(|p| p["name"].as_str().unwrap_or("main") == name);
                let tolerations = template
                    .and_then(|p| p["template"]["spec"]["tolerations"].as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|t| serde_json::from_value(t.clone()).ok())
                    .collect();
                Some(TasPodSet {
                    name,
                    nodes,
                    tolerations,
                })
            })
            .collect();
        if pod_sets.is_empty() {
            return None;
        }
        Some(TasWorkload {
            namespace: workload["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            name: workload["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            pod_sets,
        })
    }

    /// Whether any of its pod sets was placed on `node`.
    pub fn on_node(&self, node: &str) -> bool {
        self.pod_sets.iter().any(|p| p.nodes.contains(node))
    }

    /// The pod sets on `node` that do not tolerate `taint`, as Kueue classifies it: only
    /// `NoSchedule` and `NoExecute` count.
    pub fn untolerating(&self, node: &str, taint: &Taint) -> Vec<&str> {
        if taint.effect == TaintEffect::PreferNoSchedule {
            return Vec::new();
        }
        self.pod_sets
            .iter()
            .filter(|p| p.nodes.contains(node))
            .filter(|p| !p.tolerations.iter().any(|t| tolerates(t, taint)))
            .map(|p| p.name.as_str())
            .collect()
    }
}

/// The node names a topology assignment places pods on, when its lowest level is the
/// hostname: `v1beta1`'s `domains[].values` (last value) or `v1beta2`'s `slices`, whose
/// values per level are one `universal` value or `individual` roots between a common
/// prefix and suffix.
fn hostnames(assignment: &Value) -> Option<BTreeSet<String>> {
    let levels = assignment["levels"].as_array()?;
    let lowest = levels.len().checked_sub(1)?;
    if levels[lowest].as_str() != Some(HOSTNAME) {
        return None;
    }
    let mut nodes = BTreeSet::new();
    for domain in assignment["domains"].as_array().into_iter().flatten() {
        if let Some(node) = domain["values"].get(lowest).and_then(Value::as_str) {
            nodes.insert(node.to_string());
        }
    }
    for slice in assignment["slices"].as_array().into_iter().flatten() {
        let values = &slice["valuesPerLevel"][lowest];
        if let Some(node) = values["universal"].as_str() {
            nodes.insert(node.to_string());
        }
        let individual = &values["individual"];
        let prefix = individual["prefix"].as_str().unwrap_or_default();
        let suffix = individual["suffix"].as_str().unwrap_or_default();
        for root in individual["roots"].as_array().into_iter().flatten() {
            if let Some(root) = root.as_str() {
                nodes.insert(format!("{prefix}{root}{suffix}"));
            }
        }
    }
    (!nodes.is_empty()).then_some(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()),
            effect,
            time_added: None,
        }
    }

    fn workload(assignment: Value, tolerations: Value) -> Value {
        json!({
            "metadata": {"namespace": "ml", "name": "job-trainer-1a2b"},
            "spec": {"podSets": [{"name": "workers", "count": 4,
                "template": {"spec": {"tolerations": tolerations, "containers": []}}}]},
            "status": {"admission": {"clusterQueue": "gpu", "podSetAssignments": [
                {"name": "workers", "count": 4, "topologyAssignment": assignment}
            ]}}
        })
    }

    #[test]
    fn both_served_shapes_name_the_nodes_of_the_hostname_level() {
        let v1beta1 = json!({"levels": ["cloud.provider.com/rack", HOSTNAME],
            "domains": [{"values": ["rack-1", "gpu-1"], "count": 2}, {"values": ["rack-1", "gpu-2"], "count": 2}]});
        let v1beta2 = json!({"levels": [HOSTNAME], "slices": [
            {"domainCount": 2, "valuesPerLevel": [{"individual": {"prefix": "gpu-", "roots": ["1", "2"]}}], "podCounts": {"universal": 2}},
            {"domainCount": 1, "valuesPerLevel": [{"universal": "gpu-9"}], "podCounts": {"universal": 1}}
        ]});
        let a = TasWorkload::from_workload(&workload(v1beta1, json!([]))).unwrap();
        assert_eq!(
            a.pod_sets[0].nodes,
            BTreeSet::from(["gpu-1".to_string(), "gpu-2".to_string()])
        );
        let b = TasWorkload::from_workload(&workload(v1beta2, json!([]))).unwrap();
        assert!(b.on_node("gpu-1") && b.on_node("gpu-2") && b.on_node("gpu-9"));
        assert!(!b.on_node("gpu-3"));
        // A rack-level assignment names no node: Kueue does not judge nodes for it.
        let rack = json!({"levels": ["cloud.provider.com/rack"], "domains": [{"values": ["rack-1"], "count": 4}]});
        assert_eq!(TasWorkload::from_workload(&workload(rack, json!([]))), None);
    }

    #[test]
    fn untolerated_noschedule_and_noexecute_count_and_prefer_does_not() {
        let assignment =
            json!({"levels": [HOSTNAME], "domains": [{"values": ["gpu-1"], "count": 4}]});
        let w = TasWorkload::from_workload(&workload(
            assignment,
            json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]),
        ))
        .unwrap();
        let dedicated = taint("dedicated", "llm", TaintEffect::NoExecute);
        assert_eq!(w.untolerating("gpu-1", &dedicated), vec!["workers"]);
        assert!(w.untolerating("gpu-2", &dedicated).is_empty());
        let gpu = taint("nvidia.com/gpu", "present", TaintEffect::NoSchedule);
        assert!(w.untolerating("gpu-1", &gpu).is_empty());
        let prefer = taint("dedicated", "llm", TaintEffect::PreferNoSchedule);
        assert!(w.untolerating("gpu-1", &prefer).is_empty());
    }

    #[test]
    fn a_finished_or_unadmitted_workload_is_not_placed() {
        let assignment =
            json!({"levels": [HOSTNAME], "domains": [{"values": ["gpu-1"], "count": 4}]});
        let mut finished = workload(assignment, json!([]));
        finished["status"]["conditions"] = json!([{"type": "Finished", "status": "True"}]);
        assert_eq!(TasWorkload::from_workload(&finished), None);
        assert_eq!(
            TasWorkload::from_workload(&json!({"metadata": {"name": "w"}, "status": {}})),
            None
        );
    }
}
