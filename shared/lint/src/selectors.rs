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
//! | Kubeflow Trainer `TrainJob` | `spec.runtimeRef`: the TrainingRuntime or ClusterTrainingRuntime whose template its pods get | the runtime names it in `used_by` |
//! | | `spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec`: what the job patches into the runtime's template (a strategic merge: `nodeSelector` merged, tolerations and required affinity terms replaced) | its `nodeSelector`, affinity and tolerations; the runtime's tolerations when it sets none |
//!
//! A flavor also names the ClusterQueues that use it (`spec.resourceGroups[].flavors[].name`),
//! and a Trainer runtime the TrainJobs that use it, so a finding says whose workloads lose
//! the node. A finished TrainJob (`Complete` or `Failed`) makes no more pods and is left out. The objects are few (flavors and queues
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
    train_jobs: Vec<TrainJob>,
}

/// What is kept of a TrainJob that has not finished.
#[derive(Debug)]
struct TrainJob {
    namespace: String,
    name: String,
    /// (kind, namespace, name) of its runtime; the namespace is empty for a
    /// ClusterTrainingRuntime.
    runtime: (String, String, String),
    /// The scheduling fields of each replicated job's patch.
    patches: Vec<PodSpec>,
}

/// How many TrainJobs a runtime's findings name before "and N more".
const TRAIN_JOBS_NAMED: usize = 3;

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
            | ("trainer.kubeflow.org", "TrainJob")
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
            ("trainer.kubeflow.org", "TrainJob") => {
                let finished = object
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|c| {
                        matches!(c["type"].as_str(), Some("Complete" | "Failed"))
                            && c["status"] == "True"
                    });
                let Some(runtime) = spec.pointer("/runtimeRef/name").and_then(Value::as_str) else {
                    return;
                };
                if finished {
                    return;
                }
                let namespace = object
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                // The CRD defaults the kind to ClusterTrainingRuntime.
                let kind = spec
                    .pointer("/runtimeRef/kind")
                    .and_then(Value::as_str)
                    .unwrap_or("ClusterTrainingRuntime")
                    .to_string();
                let runtime_namespace = if kind == "TrainingRuntime" {
                    namespace.clone()
                } else {
                    String::new()
                };
                let patches = spec["runtimePatches"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|p| {
                        p.pointer("/trainingRuntimeSpec/template/spec/replicatedJobs")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                    })
                    .filter_map(|job| {
                        let fragment = job.pointer("/template/spec/template/spec")?;
                        Some(PodSpec {
                            node_selector: serde_json::from_value(fragment["nodeSelector"].clone())
                                .unwrap_or_default(),
                            affinity: serde_json::from_value(fragment["affinity"].clone())
                                .unwrap_or_default(),
                            tolerations: serde_json::from_value(fragment["tolerations"].clone())
                                .unwrap_or_default(),
                            ..PodSpec::default()
                        })
                    })
                    .filter(|p| {
                        p.node_selector.is_some() || p.affinity.is_some() || p.tolerations.is_some()
                    })
                    .collect();
                self.train_jobs.push(TrainJob {
                    namespace,
                    name,
                    runtime: (kind, runtime_namespace, runtime.to_string()),
                    patches,
                });
            }
            _ => {}
        }
    }

    /// The objects as workloads, once every list has been read (a flavor's topology and
    /// ClusterQueues may come after it). `listed` are the workloads read from pod templates:
    /// a Trainer runtime among them is named with the TrainJobs that use it.
    pub fn into_workloads(self, listed: &mut [Workload]) -> Vec<Workload> {
        let mut out = Vec::new();
        let mut jobs_by_runtime: BTreeMap<&(String, String, String), Vec<String>> = BTreeMap::new();
        for job in &self.train_jobs {
            jobs_by_runtime
                .entry(&job.runtime)
                .or_default()
                .push(format!("TrainJob {}/{}", job.namespace, job.name));
        }
        for w in listed.iter_mut() {
            let key = (w.kind.clone(), w.namespace.clone(), w.name.clone());
            if let Some(jobs) = jobs_by_runtime.get(&key) {
                w.used_by
                    .extend(jobs.iter().take(TRAIN_JOBS_NAMED).cloned());
                if jobs.len() > TRAIN_JOBS_NAMED {
                    w.used_by
                        .push(format!("{} more TrainJobs", jobs.len() - TRAIN_JOBS_NAMED));
                }
            }
        }
        for job in &self.train_jobs {
            let runtime_tolerations: Vec<Toleration> = listed
                .iter()
                .filter(|w| {
                    (&w.kind, &w.namespace, &w.name)
                        == (&job.runtime.0, &job.runtime.1, &job.runtime.2)
                })
                .flat_map(|w| w.pod_spec.tolerations.iter().flatten().cloned())
                .collect();
            for patch in &job.patches {
                let mut spec = patch.clone();
                // Trainer merges a patch strategically: its tolerations replace the
                // runtime's; without any, the pods keep the runtime's (all its jobs', the
                // cautious side for the taint check).
                if spec.tolerations.is_none() {
                    spec.tolerations = Some(runtime_tolerations.clone());
                }
                out.push(Workload {
                    kind: "TrainJob".into(),
                    namespace: job.namespace.clone(),
                    name: job.name.clone(),
                    pod_spec: spec,
                    used_by: Vec::new(),
                });
            }
        }
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
        let w = held.into_workloads(&mut []);
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
        let w = held.into_workloads(&mut []);
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
    fn train_jobs_name_their_runtime_and_add_their_patches_constraints() {
        let mut held = HeldSelectors::default();
        let job = |name: &str, patched: bool, finished: bool| {
            let mut job = json!({"metadata": {"name": name, "namespace": "ml"},
                "spec": {"runtimeRef": {"name": "torch-distributed"}}});
            if patched {
                job["spec"]["runtimePatches"] = json!([{"manager": "example.com/ui",
                    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node",
                        "template": {"spec": {"template": {"spec": {
                            "nodeSelector": {"nvidia.com/gpu.product": "H100"}}}}}}]}}}}]);
            }
            if finished {
                job["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
            }
            job
        };
        for (name, patched, finished) in [
            ("a", true, false),
            ("b", false, false),
            ("c", false, false),
            ("d", false, false),
            ("e", false, false),
            ("done", true, true),
        ] {
            held.keep(
                "trainer.kubeflow.org",
                "TrainJob",
                &job(name, patched, finished),
            );
        }
        let runtime = Workload {
            kind: "ClusterTrainingRuntime".into(),
            namespace: String::new(),
            name: "torch-distributed".into(),
            pod_spec: PodSpec {
                tolerations: Some(vec![Toleration {
                    key: Some("nvidia.com/gpu".into()),
                    operator: Some("Exists".into()),
                    ..Toleration::default()
                }]),
                ..PodSpec::default()
            },
            used_by: Vec::new(),
        };
        let mut listed = vec![runtime];
        let w = held.into_workloads(&mut listed);
        assert_eq!(
            listed[0].used_by,
            [
                "TrainJob ml/a",
                "TrainJob ml/b",
                "TrainJob ml/c",
                "2 more TrainJobs"
            ]
        );
        assert_eq!(
            w.len(),
            1,
            "only the unfinished patched job adds constraints"
        );
        assert_eq!((w[0].kind.as_str(), w[0].name.as_str()), ("TrainJob", "a"));
        assert_eq!(
            w[0].pod_spec.node_selector.as_ref().unwrap()["nvidia.com/gpu.product"],
            "H100"
        );
        assert_eq!(
            w[0].pod_spec.tolerations.as_ref().unwrap()[0]
                .key
                .as_deref(),
            Some("nvidia.com/gpu"),
            "a patch without tolerations keeps the runtime's"
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
