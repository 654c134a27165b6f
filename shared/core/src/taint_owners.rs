//! Who owns a node's taint: the controllers that set a taint and take it off again by
//! themselves, so that removing it by hand either comes undone or pulls the rug from under
//! them. A node's taints are one atomic list in managedFields (only the last writer of the
//! whole list is recorded), so owners are known by the keys the controllers document and, for
//! the taints a managed pool adds, by the pool's labels on the node.
//!
//! Sources: the node lifecycle controller's and kubelet's taints (`k8s.io/api/core/v1`
//! well-known taints), the cloud-controller-manager's (`node.cloudprovider.kubernetes.io/*`),
//! cluster-autoscaler's (`ToBeDeletedByClusterAutoscaler`,
//! `DeletionCandidateOfClusterAutoscaler`), Karpenter's (`karpenter.sh/disrupted`,
//! `karpenter.sh/unregistered`, and v0.3x's `karpenter.sh/disruption`), GKE's GPU node pools
//! (`nvidia.com/gpu=present:NoSchedule` on nodes labelled `cloud.google.com/gke-accelerator`),
//! and the Node Readiness Controller (`readiness.k8s.io/*`). Taints the controllers' own
//! objects declare ([`DeclaredTaints`]) are theirs too: a Karpenter NodePool's template
//! (`spec.template.spec.taints`, put on every node of the pool at registration) and a
//! NodeFeatureRule's `spec.rules[].taints` (nfd-master with `-enable-taints` sets and removes
//! them on each pass).

use std::collections::BTreeMap;

use crate::syntax::Taint;

/// The taint keys the node lifecycle controller (and the kubelet) manage, with the node
/// condition or field each stands for.
const LIFECYCLE: &[(&str, &str)] = &[
    ("node.kubernetes.io/not-ready", "Ready is False"),
    ("node.kubernetes.io/unreachable", "Ready is Unknown"),
    ("node.kubernetes.io/memory-pressure", "MemoryPressure"),
    ("node.kubernetes.io/disk-pressure", "DiskPressure"),
    ("node.kubernetes.io/pid-pressure", "PIDPressure"),
    (
        "node.kubernetes.io/network-unavailable",
        "NetworkUnavailable",
    ),
    (
        "node.kubernetes.io/unschedulable",
        "spec.unschedulable (a cordon)",
    ),
];

/// Who owns a taint and sets it again, or relies on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaintOwner {
    /// The node lifecycle controller (or the kubelet) sets it while the condition holds.
    NodeLifecycle { condition: &'static str },
    /// The cloud-controller-manager: the node is not initialized yet, or is shut down.
    CloudProvider,
    /// cluster-autoscaler marked the node for deletion.
    ClusterAutoscaler,
    /// Karpenter is disrupting the node, or has not registered it yet.
    Karpenter,
    /// A GKE GPU node pool adds it to every node it creates.
    GkeGpuPool { pool: String },
    /// The Node Readiness Controller keeps it until its rule's conditions hold.
    NodeReadiness,
    /// A Karpenter NodePool's template declares it for every node of the pool.
    KarpenterNodePool { pool: String },
    /// A NodeFeatureRule declares it; nfd-master sets it on the nodes the rule matches.
    FeatureRule { rule: String },
    /// A NodeReadinessRule declares it: the Node Readiness Controller keeps it while the
    /// rule's `conditions` (`Type=Status`, joined) do not hold, always (`continuous`) or
    /// until they first hold (`bootstrap-only`).
    ReadinessRule {
        rule: String,
        conditions: String,
        continuous: bool,
    },
}

/// A NodeReadinessRule's taint and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadinessRule {
    pub taint: Taint,
    /// `Type=Status` of each condition the rule requires.
    pub conditions: Vec<String>,
    /// `enforcementMode: continuous` (else `bootstrap-only`).
    pub continuous: bool,
}

/// The taints the controllers' own objects declare, read from the cluster where served.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeclaredTaints {
    /// Each Karpenter NodePool's template taints, by pool name.
    pub nodepools: BTreeMap<String, Vec<Taint>>,
    /// Each Karpenter NodePool's template, as the labels every node it launches is sure to
    /// have, by pool name (`nodepool_labels`): a workload whose last node is taken can still
    /// get a node from a pool whose template it matches.
    pub nodepool_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// Each Karpenter NodePool's `spec.limits`, with what its nodes use now
    /// (`status.resources`), by pool name: a pool at its limits launches no node.
    pub nodepool_limits: BTreeMap<String, Vec<PoolLimit>>,
    /// Each NodeFeatureRule's taints (all its rules'), by rule name.
    pub feature_rules: BTreeMap<String, Vec<Taint>>,
    /// Each NodeReadinessRule (not in dry run), by name.
    pub readiness_rules: BTreeMap<String, ReadinessRule>,
}

impl DeclaredTaints {
    /// Adds a NodePool (`karpenter.sh/v1`) as the API server returns it.
    pub fn add_nodepool(&mut self, nodepool: &serde_json::Value) {
        let Some(name) = nodepool["metadata"]["name"].as_str() else {
            return;
        };
        let taints = parse_taints(&nodepool["spec"]["template"]["spec"]["taints"]);
        self.nodepools.insert(name.to_string(), taints);
        self.nodepool_labels
            .insert(name.to_string(), nodepool_labels(name, nodepool));
        self.nodepool_limits
            .insert(name.to_string(), nodepool_limits(nodepool));
    }

    /// Why NodePool `pool` cannot launch a node for a pod that requests `requests`
    /// (thousandths), as Karpenter's scheduler decides it: it keeps only the instance types
    /// whose capacity fits in what the pool's limits leave (the limit less what its nodes
    /// use), and a node that fits the pod has at least its requests — and some CPU and
    /// memory. A `nodes` limit is left out: Karpenter (v1.13) counts it only for static
    /// NodePools, which launch nothing for pending pods. `None` when it can, or has no
    /// limits.
    pub fn nodepool_exhausted(
        &self,
        pool: &str,
        requests: &BTreeMap<String, i128>,
    ) -> Option<String> {
        self.nodepool_limits.get(pool)?.iter().find_map(|limit| {
            let left = limit.limit - limit.used;
            let needed = match limit.resource.as_str() {
                "nodes" => 0,
                // Every node has some: an instance type of none does not exist.
                "cpu" | "memory" => requests.get(&limit.resource).copied().unwrap_or(0).max(1),
                other => requests.get(other).copied().unwrap_or(0),
            };
            (needed > 0 && left < needed).then(|| {
                format!(
                    "its limit of {} {} leaves {} ({} in use)",
                    crate::model::quantity::format_quantity(&limit.resource, limit.limit),
                    limit.resource,
                    crate::model::quantity::format_quantity(&limit.resource, left.max(0)),
                    crate::model::quantity::format_quantity(&limit.resource, limit.used),
                )
            })
        })
    }

    /// Adds a NodeFeatureRule (`nfd.k8s-sigs.io/v1alpha1`) as the API server returns it.
    pub fn add_feature_rule(&mut self, rule: &serde_json::Value) {
        let Some(name) = rule["metadata"]["name"].as_str() else {
            return;
        };
        let taints: Vec<Taint> = rule["spec"]["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|r| parse_taints(&r["taints"]))
            .collect();
        if !taints.is_empty() {
            self.feature_rules.insert(name.to_string(), taints);
        }
    }
}

impl DeclaredTaints {
    /// Adds a NodeReadinessRule (`readiness.node.x-k8s.io/v1alpha1`) as the API server
    /// returns it; one in dry run changes no taint and is left out.
    pub fn add_readiness_rule(&mut self, rule: &serde_json::Value) {
        let Some(name) = rule["metadata"]["name"].as_str() else {
            return;
        };
        let spec = &rule["spec"];
        if spec["dryRun"] == true {
            return;
        }
        let Ok(taint) = serde_json::from_value::<Taint>(spec["taint"].clone()) else {
            return;
        };
        let conditions = spec["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{}={}",
                    c["type"].as_str().unwrap_or_default(),
                    c["requiredStatus"].as_str().unwrap_or_default()
                )
            })
            .collect();
        self.readiness_rules.insert(
            name.to_string(),
            ReadinessRule {
                taint,
                conditions,
                continuous: spec["enforcementMode"] == "continuous",
            },
        );
    }
}

fn parse_taints(list: &serde_json::Value) -> Vec<Taint> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| serde_json::from_value(t.clone()).ok())
        .collect()
}

impl TaintOwner {
    /// Who, in a few words.
    pub fn name(&self) -> String {
        match self {
            TaintOwner::NodeLifecycle { .. } => "the node lifecycle controller".into(),
            TaintOwner::CloudProvider => "the cloud-controller-manager".into(),
            TaintOwner::ClusterAutoscaler => "cluster-autoscaler".into(),
            TaintOwner::Karpenter => "Karpenter".into(),
            TaintOwner::GkeGpuPool { pool } => format!("GKE (GPU node pool {pool})"),
            TaintOwner::NodeReadiness => "the Node Readiness Controller".into(),
            TaintOwner::KarpenterNodePool { pool } => format!("Karpenter (NodePool {pool})"),
            TaintOwner::FeatureRule { rule } => format!("nfd-master (NodeFeatureRule {rule})"),
            TaintOwner::ReadinessRule { rule, .. } => {
                format!("the Node Readiness Controller (NodeReadinessRule {rule})")
            }
        }
    }

    /// What removing it by hand does, and where to make the change instead.
    pub fn consequence(&self) -> String {
        match self {
            TaintOwner::NodeLifecycle { condition } => format!(
                "the node lifecycle controller sets it while {condition} and takes it off when that clears: removed by hand, it is back within seconds; fix the node's condition instead (a cordon: kubectl uncordon)"
            ),
            TaintOwner::CloudProvider => "the cloud-controller-manager takes it off when it has initialized the node (or the node runs again): removed by hand, pods land on a node whose provider fields are not set".into(),
            TaintOwner::ClusterAutoscaler => "cluster-autoscaler marked the node for deletion: removed by hand, pods land on a node it is about to delete (it sets the taint again); stop the scale-down in the autoscaler instead".into(),
            TaintOwner::Karpenter => "Karpenter set it while it disrupts or registers the node: removed by hand, pods land on a node it is about to delete or has not finished; change the NodePool's disruption settings instead".into(),
            TaintOwner::GkeGpuPool { pool } => format!(
                "GKE adds it to every node of the GPU node pool {pool}: removed by hand, it is back on the next node the pool creates, and pods without GPUs land on GPU nodes until then; change the node pool instead"
            ),
            TaintOwner::NodeReadiness => "the Node Readiness Controller keeps it until its NodeReadinessRule's conditions hold: removed by hand, it is set again; fix what the rule waits for instead".into(),
            TaintOwner::KarpenterNodePool { pool } => format!(
                "NodePool {pool} puts it on every node it launches (spec.template.spec.taints): removed by hand, it stays off this node only, and pods that do not tolerate it land here until Karpenter replaces the node; change the NodePool instead"
            ),
            TaintOwner::FeatureRule { rule } => format!(
                "NodeFeatureRule {rule} declares it and nfd-master sets it on the nodes the rule matches: removed by hand, it is back on nfd-master's next pass; change the rule instead"
            ),
            TaintOwner::ReadinessRule {
                rule,
                conditions,
                continuous,
            } => {
                let when = if *continuous {
                    format!("whenever {conditions} do not hold")
                } else {
                    format!("until {conditions} first hold on the node")
                };
                format!(
                    "NodeReadinessRule {rule} keeps it {when}: removed by hand, it is set again, and pods land on a node that is not ready for them meanwhile; fix what the rule waits for instead"
                )
            }
        }
    }
}

/// The owner of `taint` on a node with `labels`, if a controller owns it: by its key, or
/// because a controller's object in `declared` puts it there.
pub fn taint_owner(
    taint: &Taint,
    labels: &BTreeMap<String, String>,
    declared: &DeclaredTaints,
) -> Option<TaintOwner> {
    if let Some((rule, readiness)) = declared
        .readiness_rules
        .iter()
        .find(|(_, r)| r.taint.same_as(taint))
    {
        return Some(TaintOwner::ReadinessRule {
            rule: rule.clone(),
            conditions: readiness.conditions.join(", "),
            continuous: readiness.continuous,
        });
    }
    if let Some(owner) = owner_by_key(taint, labels) {
        return Some(owner);
    }
    if let Some(pool) = labels.get(crate::label_controllers::KARPENTER_NODEPOOL)
        && declared
            .nodepools
            .get(pool)
            .is_some_and(|taints| taints.iter().any(|t| t.same_as(taint)))
    {
        return Some(TaintOwner::KarpenterNodePool { pool: pool.clone() });
    }
    declared
        .feature_rules
        .iter()
        .find(|(_, taints)| taints.iter().any(|t| t.same_as(taint)))
        .map(|(rule, _)| TaintOwner::FeatureRule { rule: rule.clone() })
}

/// The owner a taint's key (and for GKE's, the node's pool labels) names.
fn owner_by_key(taint: &Taint, labels: &BTreeMap<String, String>) -> Option<TaintOwner> {
    let key = taint.key.as_str();
    if let Some((_, condition)) = LIFECYCLE.iter().find(|(k, _)| *k == key) {
        return Some(TaintOwner::NodeLifecycle { condition });
    }
    if key.starts_with("node.cloudprovider.kubernetes.io/") {
        return Some(TaintOwner::CloudProvider);
    }
    if matches!(
        key,
        "ToBeDeletedByClusterAutoscaler" | "DeletionCandidateOfClusterAutoscaler"
    ) {
        return Some(TaintOwner::ClusterAutoscaler);
    }
    if matches!(
        key,
        "karpenter.sh/disrupted" | "karpenter.sh/unregistered" | "karpenter.sh/disruption"
    ) {
        return Some(TaintOwner::Karpenter);
    }
    if key.starts_with("readiness.k8s.io/") {
        return Some(TaintOwner::NodeReadiness);
    }
    if key == "nvidia.com/gpu"
        && taint.value.as_deref() == Some("present")
        && labels.contains_key("cloud.google.com/gke-accelerator")
    {
        return Some(TaintOwner::GkeGpuPool {
            pool: labels
                .get("cloud.google.com/gke-nodepool")
                .cloned()
                .unwrap_or_else(|| "(unnamed)".into()),
        });
    }
    None
}

/// One resource a NodePool limits: the limit and what its nodes use now, in thousandths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolLimit {
    pub resource: String,
    pub limit: i128,
    pub used: i128,
}

/// A NodePool's `spec.limits` with its `status.resources` (what Karpenter counts of its
/// nodes' capacity, and `nodes`); a quantity that does not parse is left out (no limit
/// known, as none).
pub fn nodepool_limits(nodepool: &serde_json::Value) -> Vec<PoolLimit> {
    let quantity = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => crate::model::quantity::parse_quantity_milli(s),
        serde_json::Value::Number(n) => n.as_i64().map(|n| i128::from(n) * 1000),
        _ => None,
    };
    nodepool["spec"]["limits"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(resource, limit)| {
            Some(PoolLimit {
                resource: resource.clone(),
                limit: quantity(limit)?,
                used: quantity(&nodepool["status"]["resources"][resource]).unwrap_or(0),
            })
        })
        .collect()
}

/// The labels every node a NodePool launches is sure to have: its template's labels,
/// `karpenter.sh/nodepool`, and each requirement that allows one value only (`In` with one
/// value). A requirement that allows several values leaves its key out: which one a node
/// gets is not known, so a workload that needs one is not counted as served by the pool.
pub fn nodepool_labels(name: &str, nodepool: &serde_json::Value) -> BTreeMap<String, String> {
    let template = &nodepool["spec"]["template"];
    let mut labels: BTreeMap<String, String> = template["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    for requirement in template["spec"]["requirements"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let values = requirement["values"].as_array();
        if requirement["operator"] == "In"
            && let (Some(key), Some([value])) =
                (requirement["key"].as_str(), values.map(Vec::as_slice))
            && let Some(value) = value.as_str()
        {
            labels.insert(key.to_string(), value.to_string());
        }
    }
    labels.insert("karpenter.sh/nodepool".to_string(), name.to_string());
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::TaintEffect;

    fn taint(key: &str, value: Option<&str>) -> Taint {
        Taint {
            key: key.into(),
            value: value.map(str::to_string),
            effect: TaintEffect::NoSchedule,
            time_added: None,
        }
    }

    #[test]
    fn owners_by_key_and_pool() {
        let none = BTreeMap::new();
        let gke: BTreeMap<String, String> = [
            ("cloud.google.com/gke-accelerator", "nvidia-l4"),
            ("cloud.google.com/gke-nodepool", "l4-pool"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            owner_by_key(&taint("node.kubernetes.io/unreachable", None), &none),
            Some(TaintOwner::NodeLifecycle {
                condition: "Ready is Unknown"
            })
        );
        assert_eq!(
            owner_by_key(
                &taint("ToBeDeletedByClusterAutoscaler", Some("1733")),
                &none
            ),
            Some(TaintOwner::ClusterAutoscaler)
        );
        assert_eq!(
            owner_by_key(&taint("karpenter.sh/disrupted", None), &none),
            Some(TaintOwner::Karpenter)
        );
        assert_eq!(
            owner_by_key(&taint("nvidia.com/gpu", Some("present")), &gke),
            Some(TaintOwner::GkeGpuPool {
                pool: "l4-pool".into()
            })
        );
        // The same taint set by an admin on a node of no GKE GPU pool is the admin's.
        assert_eq!(
            owner_by_key(&taint("nvidia.com/gpu", Some("present")), &none),
            None
        );
        assert_eq!(owner_by_key(&taint("dedicated", Some("llm")), &gke), None);
        assert_eq!(
            owner_by_key(&taint("node.kubernetes.io/out-of-service", None), &none),
            None,
            "an admin sets out-of-service"
        );
    }

    #[test]
    fn owners_by_the_objects_that_declare_the_taint() {
        let mut declared = DeclaredTaints::default();
        declared.add_nodepool(&serde_json::json!({"metadata": {"name": "gpu-spot"},
            "spec": {"template": {"spec": {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}}}}));
        declared.add_feature_rule(&serde_json::json!({"metadata": {"name": "fpga"},
            "spec": {"rules": [{"name": "fpga", "taints": [{"key": "feature.node.kubernetes.io/fpga", "effect": "NoSchedule"}]}]}}));
        let pool: BTreeMap<String, String> =
            [("karpenter.sh/nodepool".to_string(), "gpu-spot".to_string())].into();
        let gpu = taint("nvidia.com/gpu", Some("true"));
        assert_eq!(
            taint_owner(&gpu, &pool, &declared),
            Some(TaintOwner::KarpenterNodePool {
                pool: "gpu-spot".into()
            })
        );
        // Another value, or a node of no pool: the admin's.
        assert_eq!(
            taint_owner(&taint("nvidia.com/gpu", Some("h100")), &pool, &declared),
            None
        );
        assert_eq!(taint_owner(&gpu, &BTreeMap::new(), &declared), None);
        assert_eq!(
            taint_owner(
                &taint("feature.node.kubernetes.io/fpga", None),
                &BTreeMap::new(),
                &declared
            ),
            Some(TaintOwner::FeatureRule {
                rule: "fpga".into()
            })
        );
        declared.add_readiness_rule(&serde_json::json!({"metadata": {"name": "gpu-ready"},
            "spec": {"enforcementMode": "continuous", "nodeSelector": {},
                "conditions": [{"type": "example.com/GPUReady", "requiredStatus": "True"}],
                "taint": {"key": "readiness.k8s.io/gpu-ready", "value": "pending", "effect": "NoSchedule"}}}));
        let owner = taint_owner(
            &taint("readiness.k8s.io/gpu-ready", Some("pending")),
            &BTreeMap::new(),
            &declared,
        )
        .unwrap();
        assert!(
            owner.consequence().starts_with(
                "NodeReadinessRule gpu-ready keeps it whenever example.com/GPUReady=True do not hold:"
            ),
            "{}",
            owner.consequence()
        );
    }
}

/// One taint of a node: who wrote the taint list, who owns the taint, what a hand edit does
/// (`nodelabel show`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaintProvenance {
    pub node: String,
    /// `key=value:Effect`.
    pub taint: String,
    /// The field managers that wrote the node's taints. The list is atomic, so the API
    /// server records only its last writers, not who added each taint.
    pub managers: Vec<String>,
    /// The controller that owns it, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// What happens to a hand edit, and where to make the change instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Every taint of `node` with the writers of the taint list and its owner.
pub fn taint_provenance(
    node: &k8s_openapi::api::core::v1::Node,
    declared: &DeclaredTaints,
) -> Vec<TaintProvenance> {
    let meta = &node.metadata;
    let name = meta.name.clone().unwrap_or_default();
    let labels = meta.labels.clone().unwrap_or_default();
    let managers: Vec<String> = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|e| {
            e.fields_v1
                .as_ref()
                .is_some_and(|f| f.0.pointer("/f:spec/f:taints").is_some())
        })
        .filter_map(|e| e.manager.clone())
        .fold(Vec::new(), |mut all, m| {
            if !all.contains(&m) {
                all.push(m);
            }
            all
        });
    node.spec
        .iter()
        .flat_map(|s| s.taints.iter().flatten())
        .map(|t| {
            let taint = Taint {
                key: t.key.clone(),
                value: t.value.clone().filter(|v| !v.is_empty()),
                effect: t
                    .effect
                    .parse()
                    .unwrap_or(crate::syntax::TaintEffect::NoSchedule),
                time_added: None,
            };
            let owner = taint_owner(&taint, &labels, declared);
            let note = owner.as_ref().map(TaintOwner::consequence);
            TaintProvenance {
                node: name.clone(),
                taint: taint.to_string(),
                managers: managers.clone(),
                owner: owner.as_ref().map(TaintOwner::name),
                note,
            }
        })
        .collect()
}
