//! Scheduling checks against live nodes, as pure functions: the scheduler's filters for one
//! pod on one node (why-pending), drift of running pods from their nodes' labels, and the
//! candidate analysis behind affinity-lint's `--cluster` rules.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSpec, Toleration};
use serde::{Deserialize, Serialize};

use crate::gpu::{ContainerView, format_milli, parse_quantity_milli};
use crate::scheduling::{
    NodeFacts, SCHEDULING_EFFECTS, expression_matches, node_selector_matches,
    pod_fits_node_affinity, term_matches, untolerated_taints,
};
use crate::syntax::{Taint, TaintEffect};

/// What the filters need of a node, with the requests already placed on it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// resource -> thousandths (`pods` in thousandths too).
    pub allocatable: BTreeMap<String, i128>,
    /// resource -> thousandths requested by the active pods bound to it.
    pub requested: BTreeMap<String, i128>,
    pub pod_count: usize,
}

/// A node as read from the API, minimal.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeObject {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: NodeSpecObject,
    #[serde(default)]
    pub status: NodeStatusObject,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Meta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default, rename = "ownerReferences")]
    pub owner_references: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeSpecObject {
    #[serde(default)]
    pub taints: Vec<Taint>,
    #[serde(default)]
    pub unschedulable: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeStatusObject {
    #[serde(default)]
    pub allocatable: BTreeMap<String, String>,
}

/// A pod as read from the API: full spec (affinity, tolerations), phase.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PodObject {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: PodStatusObject,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct PodStatusObject {
    #[serde(default)]
    pub phase: Option<String>,
}

impl PodObject {
    pub fn is_active(&self) -> bool {
        !matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// The pod's effective requests per resource (scheduler rule, see [`crate::gpu`]).
    pub fn requests(&self) -> BTreeMap<String, i128> {
        let view = |c: &k8s_openapi::api::core::v1::Container| ContainerView {
            resources: crate::gpu::ResourcesView {
                requests: c
                    .resources
                    .as_ref()
                    .and_then(|r| r.requests.as_ref())
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                    .unwrap_or_default(),
                limits: c
                    .resources
                    .as_ref()
                    .and_then(|r| r.limits.as_ref())
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                    .unwrap_or_default(),
            },
            restart_policy: c.restart_policy.clone(),
        };
        let pod = crate::gpu::PodView {
            spec: crate::gpu::PodSpecView {
                containers: self.spec.containers.iter().map(view).collect(),
                init_containers: self
                    .spec
                    .init_containers
                    .iter()
                    .flatten()
                    .map(view)
                    .collect(),
                overhead: self
                    .spec
                    .overhead
                    .as_ref()
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                    .unwrap_or_default(),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut names: Vec<String> = pod
            .spec
            .containers
            .iter()
            .chain(&pod.spec.init_containers)
            .flat_map(|c| {
                c.resources
                    .requests
                    .keys()
                    .chain(c.resources.limits.keys())
                    .cloned()
            })
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| {
                let r = pod.effective_request(&n);
                (n, r)
            })
            .filter(|(_, r)| *r > 0)
            .collect()
    }
}

/// Builds node infos from nodes and the active pods bound to them.
pub fn node_infos(nodes: &[NodeObject], pods: &[PodObject]) -> Vec<NodeInfo> {
    let mut requested: BTreeMap<&str, BTreeMap<String, i128>> = BTreeMap::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for pod in pods.iter().filter(|p| p.is_active()) {
        let Some(node) = pod.spec.node_name.as_deref() else {
            continue;
        };
        *counts.entry(node).or_default() += 1;
        let entry = requested.entry(node).or_default();
        for (r, q) in pod.requests() {
            *entry.entry(r).or_default() += q;
        }
    }
    nodes
        .iter()
        .map(|n| NodeInfo {
            name: n.metadata.name.clone(),
            labels: n.metadata.labels.clone(),
            taints: n.spec.taints.clone(),
            unschedulable: n.spec.unschedulable,
            allocatable: n
                .status
                .allocatable
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), parse_quantity_milli(v)?)))
                .collect(),
            requested: requested
                .get(n.metadata.name.as_str())
                .cloned()
                .unwrap_or_default(),
            pod_count: counts.get(n.metadata.name.as_str()).copied().unwrap_or(0),
        })
        .collect()
}

/// The first scheduler filter a node fails for a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "filter", rename_all = "camelCase")]
pub enum FilterFailure {
    /// NodeUnschedulable.
    Unschedulable,
    /// NodeAffinity: nodeSelector or required affinity.
    #[serde(rename_all = "camelCase")]
    NodeAffinity { detail: String },
    /// TaintToleration.
    #[serde(rename_all = "camelCase")]
    Taint { taint: String },
    /// NodeResourcesFit.
    #[serde(rename_all = "camelCase")]
    Insufficient {
        resource: String,
        requested: String,
        free: String,
    },
    /// NodeResourcesFit: pod count.
    #[serde(rename_all = "camelCase")]
    TooManyPods { limit: String },
}

impl std::fmt::Display for FilterFailure {
    /// The scheduler's event wording.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilterFailure::Unschedulable => f.write_str("node(s) were unschedulable"),
            FilterFailure::NodeAffinity { detail } => write!(
                f,
                "node(s) didn't match Pod's node affinity/selector ({detail})"
            ),
            FilterFailure::Taint { taint } => {
                write!(f, "node(s) had untolerated taint {{{taint}}}")
            }
            FilterFailure::Insufficient {
                resource,
                requested,
                free,
            } => write!(
                f,
                "Insufficient {resource} (requested {requested}, free {free})"
            ),
            FilterFailure::TooManyPods { limit } => write!(f, "Too many pods (limit {limit})"),
        }
    }
}

/// Why the node affinity does not hold: the first failing nodeSelector entry or expression.
pub fn affinity_detail(spec: &PodSpec, node: &NodeInfo) -> String {
    if let Some(sel) = &spec.node_selector {
        for (k, v) in sel {
            if node.labels.get(k) != Some(v) {
                return format!(
                    "nodeSelector {k}={v}, node has {}",
                    node.labels
                        .get(k)
                        .map(|x| format!("{k}={x}"))
                        .unwrap_or_else(|| format!("no {k}"))
                );
            }
        }
    }
    let terms = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|s| s.node_selector_terms.as_slice())
        .unwrap_or_default();
    for term in terms {
        for req in term.match_expressions.iter().flatten() {
            if expression_matches(req, &node.labels) != Some(true) {
                let values = req.values.as_deref().unwrap_or_default().join(", ");
                return format!(
                    "{} {} [{values}], node has {}",
                    req.key,
                    req.operator,
                    node.labels
                        .get(&req.key)
                        .map(|x| format!("{}={x}", req.key))
                        .unwrap_or_else(|| format!("no {}", req.key))
                );
            }
        }
    }
    "no required term matches".into()
}

/// The scheduler's filters in order for one pod on one node.
pub fn filter(
    spec: &PodSpec,
    requests: &BTreeMap<String, i128>,
    node: &NodeInfo,
) -> Result<(), FilterFailure> {
    let tolerations: &[Toleration] = spec.tolerations.as_deref().unwrap_or_default();
    if node.unschedulable {
        let tolerated = tolerations.iter().any(|t| {
            crate::scheduling::tolerates(
                t,
                &Taint::new(
                    "node.kubernetes.io/unschedulable",
                    "",
                    TaintEffect::NoSchedule,
                ),
            )
        });
        if !tolerated {
            return Err(FilterFailure::Unschedulable);
        }
    }
    if !pod_fits_node_affinity(
        spec,
        NodeFacts {
            name: &node.name,
            labels: &node.labels,
        },
    ) {
        return Err(FilterFailure::NodeAffinity {
            detail: affinity_detail(spec, node),
        });
    }
    if let Some(t) = untolerated_taints(tolerations, &node.taints, SCHEDULING_EFFECTS).first() {
        return Err(FilterFailure::Taint {
            taint: t.to_string(),
        });
    }
    let limit = node.allocatable.get("pods").copied().unwrap_or(110_000);
    if (node.pod_count as i128 + 1) * 1000 > limit {
        return Err(FilterFailure::TooManyPods {
            limit: format_milli(limit),
        });
    }
    for (resource, want) in requests {
        let free = node.allocatable.get(resource).copied().unwrap_or(0)
            - node.requested.get(resource).copied().unwrap_or(0);
        if *want > free {
            return Err(FilterFailure::Insufficient {
                resource: resource.clone(),
                requested: format_milli(*want),
                free: format_milli(free.max(0)),
            });
        }
    }
    Ok(())
}

/// A verdict of the seed's table for a Pending pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// The scheduler's evidence: didn't match node affinity, untolerated taint, Insufficient X, Too many pods.
    pub evidence: String,
    pub judgment: String,
    pub action: String,
}

/// Maps the per-node failures to the seed's table. Nodes that fail node affinity were never
/// candidates, so when some node passes affinity the verdict comes from what stopped the
/// candidates (the most common of their failures); otherwise it is the affinity verdict.
pub fn verdict(failures: &[FilterFailure]) -> Option<Verdict> {
    let candidates: Vec<&FilterFailure> = failures
        .iter()
        .filter(|f| !matches!(f, FilterFailure::NodeAffinity { .. }))
        .collect();
    let considered: Vec<&FilterFailure> = if candidates.is_empty() {
        failures.iter().collect()
    } else {
        candidates
    };
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for f in considered.iter().copied() {
        let k = match f {
            FilterFailure::NodeAffinity { .. } => "affinity",
            FilterFailure::Taint { .. } => "taint",
            FilterFailure::Insufficient { .. } => "resources",
            FilterFailure::TooManyPods { .. } => "pods",
            FilterFailure::Unschedulable => "unschedulable",
        };
        *counts.entry(k).or_default() += 1;
    }
    let (top, _) = counts
        .iter()
        .max_by_key(|(k, n)| (**n, std::cmp::Reverse(**k)))?;
    let v = |e: &str, j: &str, a: &str| Verdict {
        evidence: e.into(),
        judgment: j.into(),
        action: a.into(),
    };
    Some(match *top {
        "affinity" => v(
            "didn't match Pod's node affinity",
            "hard condition has no candidates",
            "compare expression, label key and value (kubectl nodelabel dependents, affinity-lint --cluster)",
        ),
        "taint" => v(
            "had untolerated taint",
            "missing matching toleration",
            "add the required toleration after confirming workload eligibility",
        ),
        "resources" => {
            let resource = considered
                .iter()
                .find_map(|f| match f {
                    FilterFailure::Insufficient { resource, .. } => Some(resource.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            v(
                &format!("Insufficient {resource}"),
                "candidate node capacity is already requested",
                "scale up, free legitimate workloads, or reduce replica count",
            )
        }
        "pods" => v(
            "Too many pods",
            "node pod limit reached",
            "check CNI, node limits and stray pods",
        ),
        _ => v(
            "node(s) were unschedulable",
            "candidate nodes are cordoned",
            "uncordon the nodes or add capacity",
        ),
    })
}

/// What drift needs of a pod: where it runs and its node constraints (containers and the
/// rest of the spec are skipped while reading, which keeps a 150,000-pod list cheap).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConstraintsPod {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: ConstraintsSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintsSpec {
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub affinity: Option<k8s_openapi::api::core::v1::Affinity>,
    #[serde(default)]
    pub tolerations: Option<Vec<Toleration>>,
}

impl ConstraintsPod {
    /// The constraints as a `PodSpec` for the shared matchers.
    pub fn pod_spec(&self) -> PodSpec {
        PodSpec {
            node_name: self.spec.node_name.clone(),
            node_selector: self.spec.node_selector.clone(),
            affinity: self.spec.affinity.clone(),
            tolerations: self.spec.tolerations.clone(),
            ..PodSpec::default()
        }
    }
}

/// A running pod whose node no longer satisfies its constraints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    pub namespace: String,
    pub pod: String,
    pub node: String,
    /// The failing nodeSelector entry or expression, with expected vs actual.
    pub reason: String,
}

/// Whether a running pod drifted from its node (nodeSelector, required affinity, or a
/// NoExecute taint it does not tolerate).
pub fn drift(pod: &ConstraintsPod, node: &NodeInfo) -> Option<Drift> {
    let facts = NodeFacts {
        name: &node.name,
        labels: &node.labels,
    };
    let spec = pod.pod_spec();
    let reason = if !spec
        .node_selector
        .as_ref()
        .is_none_or(|s| node_selector_matches(s, &node.labels))
        || !pod_fits_node_affinity(&spec, facts)
    {
        affinity_detail(&spec, node)
    } else if let Some(t) = untolerated_taints(
        spec.tolerations.as_deref().unwrap_or_default(),
        &node.taints,
        &[TaintEffect::NoExecute],
    )
    .first()
    {
        format!("untolerated NoExecute taint {t}")
    } else {
        return None;
    };
    Some(Drift {
        namespace: pod.metadata.namespace.clone(),
        pod: pod.metadata.name.clone(),
        node: node.name.clone(),
        reason,
    })
}

/// The nodes a pod spec may land on by affinity and selector alone.
pub fn affinity_candidates<'a>(spec: &PodSpec, nodes: &'a [NodeInfo]) -> Vec<&'a NodeInfo> {
    nodes
        .iter()
        .filter(|n| {
            pod_fits_node_affinity(
                spec,
                NodeFacts {
                    name: &n.name,
                    labels: &n.labels,
                },
            )
        })
        .collect()
}

/// Whether any term matches (for callers that only have terms).
pub fn any_term_matches(
    terms: &[k8s_openapi::api::core::v1::NodeSelectorTerm],
    node: &NodeInfo,
) -> bool {
    terms.iter().any(|t| {
        term_matches(
            t,
            NodeFacts {
                name: &node.name,
                labels: &node.labels,
            },
        )
    })
}

/// The existing key closest to `key` (edit distance <= 3), for typo suggestions.
pub fn nearest_key<'a>(key: &str, existing: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    existing
        .into_iter()
        .map(|k| (levenshtein(key, k), k))
        .filter(|(d, _)| *d > 0 && *d <= 3)
        .min()
        .map(|(_, k)| k)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(
        name: &str,
        labels: serde_json::Value,
        taints: serde_json::Value,
        gpus: &str,
    ) -> NodeObject {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}, "status": {"allocatable": {"nvidia.com/gpu": gpus, "pods": "3", "cpu": "8"}}})).unwrap()
    }

    fn pod(spec: serde_json::Value) -> PodObject {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ml"}, "spec": spec, "status": {"phase": "Pending"}})).unwrap()
    }

    #[test]
    fn filters_in_scheduler_order_and_verdicts() {
        let nodes = vec![
            node("a100", json!({"family": "a100"}), json!([]), "1"),
            node(
                "h100",
                json!({"family": "h100"}),
                json!([{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]),
                "8",
            ),
        ];
        let running = vec![serde_json::from_value::<PodObject>(json!({"metadata": {"name": "r"}, "spec": {"nodeName": "a100", "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}, "status": {"phase": "Running"}})).unwrap()];
        let infos = node_infos(&nodes, &running);
        let p = pod(
            json!({"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}),
        );
        let reqs = p.requests();
        assert_eq!(reqs["nvidia.com/gpu"], 1000);
        let a = filter(&p.spec, &reqs, &infos[0]).unwrap_err();
        assert_eq!(
            a,
            FilterFailure::Insufficient {
                resource: "nvidia.com/gpu".into(),
                requested: "1".into(),
                free: "0".into()
            }
        );
        let h = filter(&p.spec, &reqs, &infos[1]).unwrap_err();
        assert_eq!(
            h.to_string(),
            "node(s) had untolerated taint {dedicated=batch:NoSchedule}"
        );
        let affinity = pod(json!({"containers": [], "nodeSelector": {"family": "b200"}}));
        let f = filter(&affinity.spec, &BTreeMap::new(), &infos[0]).unwrap_err();
        assert!(
            f.to_string()
                .contains("nodeSelector family=b200, node has family=a100"),
            "{f}"
        );
        assert_eq!(
            verdict(&[f.clone(), f]).unwrap().evidence,
            "didn't match Pod's node affinity"
        );
        assert_eq!(
            verdict(&[a]).unwrap().evidence,
            "Insufficient nvidia.com/gpu"
        );
        assert_eq!(verdict(&[h]).unwrap().evidence, "had untolerated taint");
        let full = NodeInfo {
            pod_count: 3,
            ..infos[0].clone()
        };
        assert_eq!(
            filter(
                &affinity.spec,
                &BTreeMap::new(),
                &NodeInfo {
                    labels: [("family".to_string(), "b200".to_string())].into(),
                    ..full
                }
            )
            .unwrap_err(),
            FilterFailure::TooManyPods { limit: "3".into() }
        );
    }

    #[test]
    fn drift_and_typos() {
        let nodes = node_infos(&[node("n", json!({"family": "h100"}), json!([]), "8")], &[]);
        let p: ConstraintsPod = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [], "nodeName": "n", "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "family", "operator": "In", "values": ["a100"]}]}]}}}}})).unwrap();
        let d = drift(&p, &nodes[0]).unwrap();
        assert_eq!(d.reason, "family In [a100], node has family=h100");
        assert_eq!(
            nearest_key(
                "accelerator.example.com/gpu-famliy",
                ["accelerator.example.com/gpu-family", "zone"]
            ),
            Some("accelerator.example.com/gpu-family")
        );
        assert_eq!(nearest_key("totally-different", ["zone"]), None);
    }
}
