//! Who depends on a node label: workloads whose `nodeSelector` or node affinity mentions it.
//!
//! Before a label is removed or changed, `kubectl nodelabel` shows these workloads: their
//! new replicas may no longer schedule. Removing a key that a *required* constraint (a
//! `nodeSelector` entry or a required affinity expression) depends on needs `--ignore-dependents`.

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// A workload with its pod template's spec (for an object that selects nodes outside any
/// pod, such as a Kueue ResourceFlavor, the constraint its controller puts on the pods it
/// places: see [`crate::selectors`]).
#[derive(Debug, Clone)]
pub struct Workload {
    pub kind: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
    pub pod_spec: PodSpec,
    /// Who else loses what this object loses (the ClusterQueues that use a flavor).
    pub used_by: Vec<String>,
}

impl Workload {
    /// How findings name it: `Deployment ml/server`, `ResourceFlavor h100` (cluster-scoped),
    /// with the objects that use it: `ResourceFlavor h100 (used by ClusterQueue team-a)`.
    pub fn reference(&self) -> String {
        let mut out = if self.namespace.is_empty() {
            format!("{} {}", self.kind, self.name)
        } else {
            format!("{} {}/{}", self.kind, self.namespace, self.name)
        };
        if !self.used_by.is_empty() {
            out.push_str(&format!(" (used by {})", self.used_by.join(", ")));
        }
        out
    }

    /// What losing a node it requires means, in the user's words.
    pub fn lost_node_consequence(&self) -> &'static str {
        match self.kind.as_str() {
            "DaemonSet" => "the DaemonSet controller would delete its pod there",
            "ResourceFlavor" => {
                "Kueue would no longer place the workloads it admits to this flavor there"
            }
            "Queue" => "Volcano would no longer place the queue's pods there",
            _ => "new pods of it could no longer be scheduled there",
        }
    }
}

/// How a workload depends on a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Constraint {
    /// `spec.nodeSelector`: required.
    NodeSelector,
    /// `requiredDuringSchedulingIgnoredDuringExecution`.
    Required,
    /// `preferredDuringSchedulingIgnoredDuringExecution`.
    Preferred,
}

impl Constraint {
    /// Whether new pods cannot schedule without the key.
    pub fn is_required(self) -> bool {
        !matches!(self, Constraint::Preferred)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Constraint::NodeSelector => "nodeSelector",
            Constraint::Required => "required",
            Constraint::Preferred => "preferred",
        }
    }
}

/// One workload's dependency on one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dependent {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The objects that use it (the ClusterQueues of a ResourceFlavor).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub used_by: Vec<String>,
    pub key: String,
    pub constraint: Constraint,
    /// The constraint as written, e.g. `accelerator.example.com/gpu-family In [a100]`.
    pub expression: String,
}

/// A key asked about, optionally with a value (`KEY=VALUE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyQuery {
    pub key: String,
    pub value: Option<String>,
}

impl KeyQuery {
    /// Parses `KEY` or `KEY=VALUE`.
    pub fn parse(s: &str) -> Self {
        match s.split_once('=') {
            Some((k, v)) => KeyQuery {
                key: k.to_string(),
                value: Some(v.to_string()),
            },
            None => KeyQuery {
                key: s.to_string(),
                value: None,
            },
        }
    }
}

/// A pod spec reduced to what the checks read (node selector, affinity, tolerations, node
/// name): what is kept per workload and bare pod stays small whatever the containers hold.
pub fn scheduling_only(spec: PodSpec) -> PodSpec {
    PodSpec {
        node_selector: spec.node_selector,
        affinity: spec.affinity,
        tolerations: spec.tolerations,
        node_name: spec.node_name,
        ..PodSpec::default()
    }
}

/// Whether a controller owns this object (then its owner is the workload to report).
pub fn has_controller(meta: &ObjectMeta) -> bool {
    controller(meta).is_some()
}

/// The controller ownerReference of an object, if any.
pub fn controller(
    meta: &ObjectMeta,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// The workload kinds placekit lists itself, with their API groups: an object a controller
/// of one of these owns is judged through its owner's template.
pub const LISTED_KINDS: &[(&str, &str)] = &[
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "ReplicaSet"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
];

/// Whether an object's controller is a workload placekit lists (so its owner's template
/// stands for it). An object controlled by anything else — a RayCluster, a PyTorchJob, a
/// JobSet, a LeaderWorkerSet, an Argo Workflow, a KServe InferenceService — is judged by
/// its own spec.
pub fn controlled_by_listed_kind(meta: &ObjectMeta) -> bool {
    controller(meta).is_some_and(|o| {
        LISTED_KINDS
            .iter()
            .any(|(api_version, kind)| o.kind == *kind && o.api_version == *api_version)
    })
}

/// Pods whose controller placekit does not list, as one workload per owner and distinct
/// node constraints (200 RayCluster workers are one line), named by their owner as the
/// ownerReference names it (`RayCluster ml/raycluster`). A controller recreates such pods
/// from the same spec, so they are judged as a workload template, not as running pods.
pub fn group_by_owner(pods: Vec<(ObjectMeta, PodSpec)>) -> Vec<Workload> {
    let mut groups = OwnerGroups::default();
    for (meta, spec) in pods {
        groups.add(&meta, spec);
    }
    groups.into_workloads()
}

/// [`group_by_owner`] as pods come, page by page: one workload per owner and distinct
/// node constraints, whatever the number of pods.
#[derive(Debug, Default)]
pub struct OwnerGroups {
    seen: std::collections::BTreeSet<(String, String, String, String)>,
    workloads: Vec<Workload>,
}

impl OwnerGroups {
    /// Adds a pod (one without a controller is ignored).
    pub fn add(&mut self, meta: &ObjectMeta, mut spec: PodSpec) {
        let Some(owner) = controller(meta) else {
            return;
        };
        spec.node_name = None;
        let constraints =
            serde_json::to_string(&(&spec.node_selector, &spec.affinity, &spec.tolerations))
                .unwrap_or_default();
        let namespace = meta.namespace.clone().unwrap_or_default();
        if self.seen.insert((
            owner.kind.clone(),
            namespace.clone(),
            owner.name.clone(),
            constraints,
        )) {
            self.workloads.push(Workload {
                kind: owner.kind.clone(),
                namespace,
                name: owner.name.clone(),
                pod_spec: spec,
                used_by: Vec::new(),
            });
        }
    }

    pub fn into_workloads(self) -> Vec<Workload> {
        self.workloads
    }
}

/// The pod templates of a custom resource read from the cluster (a RayCluster's head and
/// every worker group, a PyTorchJob's replica specs, ...), as workloads named after the
/// resource: a worker group scaled to zero has no pod, yet its next pod depends on the
/// node's labels. Templates with the same node constraints are one workload.
pub fn custom_resource_workloads(object: &serde_json::Value) -> Vec<Workload> {
    let text = |path: &str| {
        object
            .pointer(path)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (kind, api_version) = (text("/kind"), text("/apiVersion"));
    // JSON is YAML: the linter's model finds the templates where its table says they are.
    let Ok(Some(root)) = crate::yaml::parse_document(&object.to_string(), 0) else {
        return Vec::new();
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for found in crate::podspec::pod_specs(&kind, &api_version, &root) {
        let mut spec_json = found.spec.to_json();
        if let Some(fields) = spec_json.as_object_mut() {
            // Argo's spec-like templates carry fields a PodSpec does not know; only the
            // scheduling ones matter here.
            fields.retain(|k, _| {
                matches!(
                    k.as_str(),
                    "nodeSelector" | "affinity" | "tolerations" | "nodeName"
                )
            });
            fields.insert("containers".into(), serde_json::Value::Array(Vec::new()));
        }
        let Ok(spec) = serde_json::from_value::<PodSpec>(spec_json) else {
            continue;
        };
        let constraints =
            serde_json::to_string(&(&spec.node_selector, &spec.affinity, &spec.tolerations))
                .unwrap_or_default();
        if seen.insert(constraints) {
            out.push(Workload {
                kind: kind.clone(),
                namespace: text("/metadata/namespace"),
                name: text("/metadata/name"),
                pod_spec: spec,
                used_by: Vec::new(),
            });
        }
    }
    out
}

/// Every dependency of `workloads` on the keys of `queries`, sorted by namespace, kind, name.
///
/// With a value, an `In`/`NotIn` expression counts only if it lists the value, and a
/// `nodeSelector` entry only if it equals it; `Exists`, `DoesNotExist`, `Gt` and `Lt`
/// always count, since they depend on the key itself.
pub fn find_dependents(workloads: &[Workload], queries: &[KeyQuery]) -> Vec<Dependent> {
    let mut out = Vec::new();
    for w in workloads {
        let mut push = |key: &str, constraint: Constraint, expression: String| {
            out.push(Dependent {
                kind: w.kind.clone(),
                namespace: w.namespace.clone(),
                name: w.name.clone(),
                used_by: w.used_by.clone(),
                key: key.to_string(),
                constraint,
                expression,
            });
        };
        for q in queries {
            if let Some(selector) = &w.pod_spec.node_selector
                && let Some(v) = selector.get(&q.key)
                && q.value.as_ref().is_none_or(|want| want == v)
            {
                push(&q.key, Constraint::NodeSelector, format!("{}={v}", q.key));
            }
            let Some(affinity) = w
                .pod_spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
            else {
                continue;
            };
            let required = affinity
                .required_during_scheduling_ignored_during_execution
                .iter()
                .flat_map(|s| s.node_selector_terms.iter())
                .map(|t| (Constraint::Required, t));
            let preferred = affinity
                .preferred_during_scheduling_ignored_during_execution
                .iter()
                .flatten()
                .map(|p| (Constraint::Preferred, &p.preference));
            for (constraint, term) in required.chain(preferred) {
                for req in term.match_expressions.iter().flatten() {
                    if req.key != q.key {
                        continue;
                    }
                    let values = req.values.as_deref().unwrap_or_default();
                    let relevant = match (&q.value, req.operator.as_str()) {
                        (Some(v), "In" | "NotIn") => values.contains(v),
                        _ => true,
                    };
                    if relevant {
                        let shown = if values.is_empty() {
                            String::new()
                        } else {
                            format!(" [{}]", values.join(", "))
                        };
                        push(
                            &q.key,
                            constraint,
                            format!("{} {}{shown}", req.key, req.operator),
                        );
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| {
        (&a.namespace, &a.kind, &a.name, &a.key, a.constraint).cmp(&(
            &b.namespace,
            &b.kind,
            &b.name,
            &b.key,
            b.constraint,
        ))
    });
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn workload(kind: &str, name: &str, spec: serde_json::Value) -> Workload {
        Workload {
            kind: kind.into(),
            namespace: "ml".into(),
            name: name.into(),
            pod_spec: serde_json::from_value(spec).unwrap(),
            used_by: Vec::new(),
        }
    }

    fn runbook_deployment() -> Workload {
        workload(
            "Deployment",
            "llm-inference",
            json!({
                "containers": [],
                "affinity": {"nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "ops.example.com.node-restriction.kubernetes.io/llm-pool", "operator": "In", "values": ["online"]},
                        {"key": "accelerator.example.com/gpu-family", "operator": "In", "values": ["a100"]}
                    ]}]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 80, "preference": {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}}
                    ]
                }}
            }),
        )
    }

    #[test]
    fn finds_required_and_preferred_dependencies() {
        let workloads = vec![
            runbook_deployment(),
            workload(
                "Pod",
                "debug",
                json!({"containers": [], "nodeSelector": {"accelerator.example.com/gpu-family": "h100"}}),
            ),
            workload("Job", "unrelated", json!({"containers": []})),
        ];
        let found = find_dependents(
            &workloads,
            &[
                KeyQuery::parse("accelerator.example.com/gpu-family"),
                KeyQuery::parse("topology.kubernetes.io/zone"),
            ],
        );
        let summary: Vec<(String, &str, String)> = found
            .iter()
            .map(|d| {
                (
                    format!("{}/{}", d.kind, d.name),
                    d.constraint.as_str(),
                    d.expression.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    "Deployment/llm-inference".into(),
                    "required",
                    "accelerator.example.com/gpu-family In [a100]".into()
                ),
                (
                    "Deployment/llm-inference".into(),
                    "preferred",
                    "topology.kubernetes.io/zone In [zone-a]".into()
                ),
                (
                    "Pod/debug".into(),
                    "nodeSelector",
                    "accelerator.example.com/gpu-family=h100".into()
                ),
            ]
        );
        assert!(found[0].constraint.is_required() && !found[1].constraint.is_required());
    }

    #[test]
    fn a_value_narrows_the_match() {
        let workloads = vec![
            runbook_deployment(),
            workload(
                "Pod",
                "debug",
                json!({"containers": [], "nodeSelector": {"accelerator.example.com/gpu-family": "h100"}}),
            ),
        ];
        let found = find_dependents(
            &workloads,
            &[KeyQuery::parse("accelerator.example.com/gpu-family=h100")],
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "debug");
    }
}
