//! Who acts on, owns or loses a node label besides the pods that select it: the controllers
//! of a GPU cluster, as pure functions over what the cluster says. The checks of a change
//! (`placekit_lint::checks`) judge every label change against this model.
//!
//! | Controller | Keys | When the key is set, changed or removed | In the user's words |
//! |---|---|---|---|
//! | NVIDIA MIG manager (GPU operator) | `nvidia.com/mig.config` | a new value (or its removal) makes it pause the GPU operands on the node and repartition the GPUs | every pod using a GPU or MIG device there loses it: cordon and drain first |
//! | NVIDIA GPU operator | `nvidia.com/gpu.deploy.operands`, `nvidia.com/gpu.deploy.<operand>` | `false` (or the key removed) takes the operand's DaemonSet off the node; `operands=false` takes them all | without the device plugin the node's GPUs stop being allocatable |
//! | NVIDIA device plugin config manager | `nvidia.com/device-plugin.config` | must name a key of the ConfigMap `ClusterPolicy.spec.devicePlugin.config.name`; the plugin restarts with that config | a valid value can change what the node advertises (8 GPUs become 32 time-sliced replicas); another is refused by the config manager |
//! | nfd-master | the keys the node's `nfd.node.kubernetes.io/feature-labels` annotation lists | re-applied with its own value at its next update | a hand edit does not last: change the NodeFeature, NodeFeatureRule or features file |
//! | Karpenter | every label of a node with `karpenter.sh/nodepool` | the node's labels come from the NodePool's template when it registers | a hand-set label is gone when the node is replaced; `karpenter.sh/…` keys are Karpenter's own |
//! | Managed node pools (GKE, EKS, AKS) | every label of a node with the pool's well-known label | the node is recreated from the pool's configuration on upgrade or repair | a hand-set label is gone then: set it in the node pool's labels |
//! | kubelet | its well-known labels (`kubernetes.io/hostname`, `os`, `arch`, the instance type and zone it reads from the cloud; `crate::policy`'s list) | re-applied when the kubelet registers again | a hand edit lasts until the kubelet restarts |
//!
//! Node selection held outside any pod (Kueue ResourceFlavors, Volcano Queues) is
//! `placekit_lint::selectors`: those objects are judged as the pods their controllers place.

use std::collections::{BTreeMap, BTreeSet};

/// The MIG manager's instruction.
pub const MIG_CONFIG: &str = "nvidia.com/mig.config";
/// The MIG manager's report of the last reconfiguration (`pending`, `success`, `failed`).
pub const MIG_CONFIG_STATE: &str = "nvidia.com/mig.config.state";
/// Every GPU-operator operand on the node at once.
pub const DEPLOY_OPERANDS: &str = "nvidia.com/gpu.deploy.operands";
/// One operand per key: `nvidia.com/gpu.deploy.device-plugin`, `….driver`, ….
pub const DEPLOY_PREFIX: &str = "nvidia.com/gpu.deploy.";
/// The device plugin's config, a key of the ClusterPolicy's config ConfigMap.
pub const DEVICE_PLUGIN_CONFIG: &str = "nvidia.com/device-plugin.config";
/// nfd-master's record of the labels it owns on a node.
pub const NFD_FEATURE_LABELS_ANNOTATION: &str = "nfd.node.kubernetes.io/feature-labels";
/// The namespace nfd-master leaves out of the keys it records.
pub const NFD_DEFAULT_NAMESPACE: &str = "feature.node.kubernetes.io";
/// A Karpenter node's NodePool.
pub const KARPENTER_NODEPOOL: &str = "karpenter.sh/nodepool";

/// The operands whose loss takes the node's GPUs away from pods.
const GPU_OPERANDS: &[&str] = &["device-plugin", "driver", "container-toolkit"];

/// Managed node pools by the label that names a node's pool.
const MANAGED_POOLS: &[(&str, &str, &str)] = &[
    (
        "cloud.google.com/gke-nodepool",
        "GKE node pool",
        "the node pool's Kubernetes labels (gcloud container node-pools update --node-labels)",
    ),
    (
        "eks.amazonaws.com/nodegroup",
        "EKS managed node group",
        "the node group's labels (aws eks update-nodegroup-config --labels)",
    ),
    (
        "kubernetes.azure.com/agentpool",
        "AKS agent pool",
        "the agent pool's node labels (az aks nodepool update --labels)",
    ),
];

/// What the cluster says about the GPU operator, read once per command when a change
/// touches one of its keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuOperatorView {
    /// The ClusterPolicy's name when one exists: the operator acts on its labels.
    pub cluster_policy: Option<String>,
    pub device_plugin_configs: DevicePluginConfigs,
}

/// The device plugin configs a node may name, from the ClusterPolicy's ConfigMap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DevicePluginConfigs {
    /// The ClusterPolicy names no config ConfigMap (or there is no ClusterPolicy).
    #[default]
    NotSet,
    Keys {
        /// `namespace/name` of the ConfigMap.
        config_map: String,
        keys: BTreeSet<String>,
        /// `spec.devicePlugin.config.default`: the config of a node without the label.
        default: Option<String>,
    },
    /// Named but not readable here (why, in the user's words).
    Unknown(String),
}

impl GpuOperatorView {
    /// Whether the operator acts on `key` on a node with `labels`: with a ClusterPolicy, or
    /// for the MIG config on a node where the MIG manager has reported a state (it may run
    /// without the operator).
    pub fn acts_on(&self, key: &str, labels: &BTreeMap<String, String>) -> bool {
        self.cluster_policy.is_some()
            || (key == MIG_CONFIG && labels.contains_key(MIG_CONFIG_STATE))
    }
}

/// Whether `key` is one the GPU operator's components act on (the checks read the operator's
/// objects only when a change touches one).
pub fn is_gpu_operator_key(key: &str) -> bool {
    key == MIG_CONFIG || key == DEVICE_PLUGIN_CONFIG || key.starts_with(DEPLOY_PREFIX)
}

/// What the GPU operator's components do when a label changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuOperatorEffect {
    /// The MIG manager repartitions the node's GPUs (to `to`, or back to its default).
    MigRepartition { to: Option<String> },
    /// The operator takes operands off the node: `None` for all of them
    /// (`gpu.deploy.operands=false`), else the one named.
    OperandsOff { operand: Option<String> },
    /// The device plugin restarts with another config.
    DevicePluginConfig { to: Option<String> },
}

impl GpuOperatorEffect {
    /// Whether the effect takes GPUs from the pods running on the node.
    pub fn takes_gpus_from_pods(&self) -> bool {
        match self {
            GpuOperatorEffect::MigRepartition { .. } => true,
            GpuOperatorEffect::OperandsOff { operand: None } => true,
            GpuOperatorEffect::OperandsOff {
                operand: Some(operand),
            } => GPU_OPERANDS.contains(&operand.as_str()),
            GpuOperatorEffect::DevicePluginConfig { .. } => false,
        }
    }

    /// What happens, in the user's words.
    pub fn consequence(&self) -> String {
        match self {
            GpuOperatorEffect::MigRepartition { to } => format!(
                "the MIG manager would pause the GPU operands and repartition the node's GPUs{}, taking their GPU and MIG devices from the pods that use them",
                to.as_deref()
                    .map(|v| format!(" to {v:?}"))
                    .unwrap_or_default()
            ),
            GpuOperatorEffect::OperandsOff { operand: None } => {
                "the GPU operator would take every operand off the node (the device plugin too): its GPUs stop being allocatable".into()
            }
            GpuOperatorEffect::OperandsOff {
                operand: Some(operand),
            } => format!(
                "the GPU operator would take its {operand} off the node{}",
                if GPU_OPERANDS.contains(&operand.as_str()) {
                    ": its GPUs stop being allocatable"
                } else {
                    ""
                }
            ),
            GpuOperatorEffect::DevicePluginConfig { to } => format!(
                "the device plugin would restart with {}: what the node advertises may change (time-sliced replicas, MIG strategy)",
                to.as_deref()
                    .map(|v| format!("config {v:?}"))
                    .unwrap_or_else(|| "its default config".into())
            ),
        }
    }
}

/// What changing `key` from `before` to `after` makes the GPU operator's components do, if
/// anything (an unchanged value does nothing).
pub fn gpu_operator_effect(
    key: &str,
    before: Option<&str>,
    after: Option<&str>,
) -> Option<GpuOperatorEffect> {
    if before == after {
        return None;
    }
    let off = |v: Option<&str>| v.is_none_or(|v| v == "false");
    match key {
        MIG_CONFIG => Some(GpuOperatorEffect::MigRepartition {
            to: after.map(str::to_string),
        }),
        DEVICE_PLUGIN_CONFIG => Some(GpuOperatorEffect::DevicePluginConfig {
            to: after.map(str::to_string),
        }),
        // Without the key the operands run (the operator's default): only `false` is off.
        DEPLOY_OPERANDS if after == Some("false") && before != Some("false") => {
            Some(GpuOperatorEffect::OperandsOff { operand: None })
        }
        DEPLOY_OPERANDS => None,
        // An operand key is the operator's own switch: on a node where it was on, `false`
        // or its removal takes the operand off.
        _ => {
            let operand = key.strip_prefix(DEPLOY_PREFIX)?;
            (operand != "operands" && off(after) && before == Some("true")).then(|| {
                GpuOperatorEffect::OperandsOff {
                    operand: Some(operand.to_string()),
                }
            })
        }
    }
}

/// Who owns a node's label and re-applies or loses it, besides whoever set it by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelOwner {
    /// nfd-master re-applies it at its next update.
    Nfd,
    /// Karpenter's own key (`karpenter.sh/…`) on a node it manages.
    KarpenterKey { node_pool: String },
    /// A label on a node Karpenter manages: gone when the node is replaced.
    Karpenter { node_pool: String },
    /// A label on a node of a managed pool: gone when the node is recreated.
    ManagedPool {
        kind: &'static str,
        pool: String,
        edit: &'static str,
    },
    /// The kubelet sets it again when it registers.
    Kubelet,
}

impl LabelOwner {
    /// What happens to a hand edit of the key, and where to make the change instead.
    pub fn consequence(&self) -> String {
        match self {
            LabelOwner::Nfd => "nfd-master owns it and re-applies its own value at its next update: change the NodeFeature, NodeFeatureRule or features file that produces it instead".into(),
            LabelOwner::KarpenterKey { node_pool } => format!(
                "it is Karpenter's own label (NodePool {node_pool}): Karpenter sets it and tracks the node by it"
            ),
            LabelOwner::Karpenter { node_pool } => format!(
                "the node belongs to Karpenter's NodePool {node_pool}: the label is lost when the node is replaced; to keep it, set it in the NodePool's spec.template.metadata.labels"
            ),
            LabelOwner::ManagedPool { kind, pool, edit } => format!(
                "the node belongs to the {kind} {pool}: the label is lost when the node is recreated (upgrade, repair, scale-down); to keep it, set it in {edit}"
            ),
            LabelOwner::Kubelet => "the kubelet sets it when it registers: a hand edit lasts until the kubelet restarts".into(),
        }
    }
}

/// The keys nfd-master records as its own in the node's annotation (a comma-separated list
/// whose keys in the default namespace are written without it).
pub fn nfd_owned_keys(annotation: Option<&str>) -> BTreeSet<String> {
    annotation
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|k| {
            if k.contains('/') {
                k.to_string()
            } else {
                format!("{NFD_DEFAULT_NAMESPACE}/{k}")
            }
        })
        .collect()
}

/// Whether `key` is in Karpenter's own domain (`karpenter.sh` and its subdomains).
fn karpenter_domain(key: &str) -> bool {
    key.split_once('/')
        .is_some_and(|(domain, _)| domain == "karpenter.sh" || domain.ends_with(".karpenter.sh"))
}

/// Who owns `key` on a node with these labels and nfd-owned keys (the first that applies:
/// a re-applying owner before a pool that loses it).
pub fn label_owner(
    key: &str,
    labels: &BTreeMap<String, String>,
    nfd_keys: &BTreeSet<String>,
) -> Option<LabelOwner> {
    if nfd_keys.contains(key) {
        return Some(LabelOwner::Nfd);
    }
    // The labels the kubelet sets on its own Node when it registers.
    if crate::policy::KUBELET_LABELS.contains(&key) {
        return Some(LabelOwner::Kubelet);
    }
    match replaced_by(labels)? {
        LabelOwner::Karpenter { node_pool } if karpenter_domain(key) => {
            Some(LabelOwner::KarpenterKey { node_pool })
        }
        // The pool's own label is the pool's, not a hand-set one.
        LabelOwner::ManagedPool { .. }
            if MANAGED_POOLS.iter().any(|(label, _, _)| *label == key) =>
        {
            None
        }
        owner => Some(owner),
    }
}

/// Who recreates a node with these labels from a template, losing what was set on it by
/// hand: Karpenter (its NodePool) or a managed node pool.
pub fn replaced_by(labels: &BTreeMap<String, String>) -> Option<LabelOwner> {
    if let Some(pool) = labels.get(KARPENTER_NODEPOOL) {
        return Some(LabelOwner::Karpenter {
            node_pool: pool.clone(),
        });
    }
    MANAGED_POOLS.iter().find_map(|(label, kind, edit)| {
        labels.get(*label).map(|pool| LabelOwner::ManagedPool {
            kind,
            pool: pool.clone(),
            edit,
        })
    })
}

impl LabelOwner {
    /// What happens to a taint set by hand on a node this owner replaces.
    pub fn taint_consequence(&self) -> Option<String> {
        match self {
            LabelOwner::Karpenter { node_pool } => Some(format!(
                "the node belongs to Karpenter's NodePool {node_pool}: the taint is not in its template and is lost when the node is replaced; to keep it, add it to the NodePool's spec.template.spec.taints"
            )),
            LabelOwner::ManagedPool { kind, pool, .. } => Some(format!(
                "the node belongs to the {kind} {pool}: the taint is lost when the node is recreated; to keep it, set it in the pool's node taints"
            )),
            _ => None,
        }
    }
}

impl LabelOwner {
    /// Who, in a table cell: `nfd-master`, `Karpenter (NodePool gpu)`, `kubelet`.
    pub fn name(&self) -> String {
        match self {
            LabelOwner::Nfd => "nfd-master".into(),
            LabelOwner::KarpenterKey { node_pool } | LabelOwner::Karpenter { node_pool } => {
                format!("Karpenter (NodePool {node_pool})")
            }
            LabelOwner::ManagedPool { kind, pool, .. } => format!("{kind} {pool}"),
            LabelOwner::Kubelet => "kubelet".into(),
        }
    }
}

/// The MIG manager's state on a node, for `gpu-taint status`: a reconfiguration pending or
/// failed, and the operands it paused (`nvidia.com/gpu.deploy.<operand>=paused-for-mig-change`),
/// during which the node's GPUs may not be allocatable. `None` when there is nothing to say.
pub fn mig_reconfiguration(labels: &BTreeMap<String, String>) -> Option<String> {
    let target = labels
        .get(MIG_CONFIG)
        .map(|c| format!(" to {c}"))
        .unwrap_or_default();
    let paused: Vec<&str> = labels
        .iter()
        .filter(|(_, v)| v.as_str() == "paused-for-mig-change")
        .filter_map(|(k, _)| k.strip_prefix(DEPLOY_PREFIX))
        .collect();
    let state = match labels.get(MIG_CONFIG_STATE).map(String::as_str) {
        Some("pending") => Some(format!("MIG reconfiguration{target} pending")),
        Some("failed") => Some(format!(
            "MIG reconfiguration{target} failed ({MIG_CONFIG_STATE}=failed; see the MIG manager's log)"
        )),
        _ => None,
    };
    match (state, paused.is_empty()) {
        (None, true) => None,
        (Some(state), true) => Some(state),
        (state, false) => Some(format!(
            "{}operands paused for a MIG change ({}): its GPUs may not be allocatable until it completes",
            state.map(|s| format!("{s}; ")).unwrap_or_default(),
            paused.join(", ")
        )),
    }
}

/// One label of a node: who wrote it, who owns it, what acts on it (`nodelabel show`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelProvenance {
    pub node: String,
    pub key: String,
    pub value: String,
    /// The field managers that wrote it, from the node's managedFields (`kubelet`,
    /// `nfd-master`, `karpenter`, `kubectl-label`, `placekit`...), as the API server recorded
    /// them.
    pub managers: Vec<String>,
    /// The controller that owns it, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// What happens to a hand edit, or what a controller does when it changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Every label of `node` with its writers (managedFields), its owner and what acts on it.
pub fn label_provenance(
    node: &k8s_openapi::api::core::v1::Node,
    operator: &GpuOperatorView,
) -> Vec<LabelProvenance> {
    let meta = &node.metadata;
    let name = meta.name.clone().unwrap_or_default();
    let labels = meta.labels.clone().unwrap_or_default();
    let nfd_keys = nfd_owned_keys(
        meta.annotations
            .as_ref()
            .and_then(|a| a.get(NFD_FEATURE_LABELS_ANNOTATION))
            .map(String::as_str),
    );
    // Which managers' field sets name each label (`f:metadata` → `f:labels` → `f:KEY`).
    let mut managers: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for entry in meta.managed_fields.iter().flatten() {
        let Some(fields) = entry.fields_v1.as_ref() else {
            continue;
        };
        let Some(written) = fields
            .0
            .pointer("/f:metadata/f:labels")
            .and_then(|l| l.as_object())
        else {
            continue;
        };
        for key in written.keys().filter_map(|k| k.strip_prefix("f:")) {
            if let Some((key, _)) = labels.get_key_value(key) {
                let manager = entry.manager.clone().unwrap_or_default();
                let list = managers.entry(key.as_str()).or_default();
                if !list.contains(&manager) {
                    list.push(manager);
                }
            }
        }
    }
    labels
        .iter()
        .map(|(key, value)| {
            let owner = label_owner(key, &labels, &nfd_keys);
            let acts = operator
                .acts_on(key, &labels)
                .then(|| gpu_operator_role(key, operator))
                .flatten();
            LabelProvenance {
                node: name.clone(),
                key: key.clone(),
                value: value.clone(),
                managers: managers.remove(key.as_str()).unwrap_or_default(),
                owner: owner.as_ref().map(LabelOwner::name),
                note: acts.or_else(|| owner.map(|o| o.consequence())),
            }
        })
        .collect()
}

/// What the GPU operator does with `key`, for a listing.
fn gpu_operator_role(key: &str, operator: &GpuOperatorView) -> Option<String> {
    Some(match key {
        MIG_CONFIG => {
            "the MIG manager's instruction: a new value repartitions the node's GPUs (drain first)"
                .into()
        }
        MIG_CONFIG_STATE => "the MIG manager's report of the last reconfiguration".into(),
        DEPLOY_OPERANDS => "the GPU operator's switch for every operand on the node".into(),
        DEVICE_PLUGIN_CONFIG => match &operator.device_plugin_configs {
            DevicePluginConfigs::Keys { config_map, .. } => {
                format!("the device plugin's config, a key of ConfigMap {config_map}")
            }
            _ => "the device plugin's config".into(),
        },
        _ => format!(
            "the GPU operator's switch for its {} on the node",
            key.strip_prefix(DEPLOY_PREFIX)?
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mig_state_says_pending_failed_and_paused_operands() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            mig_reconfiguration(&labels(&[
                (MIG_CONFIG, "all-1g.10gb"),
                (MIG_CONFIG_STATE, "success")
            ])),
            None
        );
        let pending = mig_reconfiguration(&labels(&[
            (MIG_CONFIG, "all-1g.10gb"),
            (MIG_CONFIG_STATE, "pending"),
            (
                "nvidia.com/gpu.deploy.device-plugin",
                "paused-for-mig-change",
            ),
        ]))
        .unwrap();
        assert!(
            pending.starts_with("MIG reconfiguration to all-1g.10gb pending; operands paused")
                && pending.contains("device-plugin"),
            "{pending}"
        );
        assert!(
            mig_reconfiguration(&labels(&[(MIG_CONFIG_STATE, "failed")]))
                .unwrap()
                .contains("failed")
        );
    }

    #[test]
    fn provenance_reads_the_managers_of_each_label_and_its_owner() {
        let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "gpu-1",
                "labels": {"kubernetes.io/hostname": "gpu-1", "feature.node.kubernetes.io/pci-10de.present": "true",
                           "nvidia.com/mig.config": "all-disabled", "team": "ml"},
                "annotations": {NFD_FEATURE_LABELS_ANNOTATION: "pci-10de.present"},
                "managedFields": [
                    {"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/hostname": {}}}}},
                    {"manager": "nfd-master", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:feature.node.kubernetes.io/pci-10de.present": {}}}}},
                    {"manager": "placekit", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}, "f:nvidia.com/mig.config": {}}}}}
                ]
            }
        }))
        .unwrap();
        let operator = GpuOperatorView {
            cluster_policy: Some("cluster-policy".into()),
            ..GpuOperatorView::default()
        };
        let rows = label_provenance(&node, &operator);
        let row = |k: &str| rows.iter().find(|r| r.key == k).unwrap();
        assert_eq!(row("kubernetes.io/hostname").managers, ["kubelet"]);
        assert_eq!(
            row("kubernetes.io/hostname").owner.as_deref(),
            Some("kubelet")
        );
        let nfd = row("feature.node.kubernetes.io/pci-10de.present");
        assert_eq!(nfd.managers, ["nfd-master"]);
        assert_eq!(nfd.owner.as_deref(), Some("nfd-master"));
        assert!(
            row("nvidia.com/mig.config")
                .note
                .as_deref()
                .unwrap()
                .contains("repartitions")
        );
        assert_eq!(row("team").managers, ["placekit"]);
        assert!(row("team").owner.is_none() && row("team").note.is_none());
    }

    #[test]
    fn mig_config_changes_repartition_and_unchanged_values_do_nothing() {
        assert_eq!(
            gpu_operator_effect(MIG_CONFIG, Some("all-disabled"), Some("all-1g.10gb")),
            Some(GpuOperatorEffect::MigRepartition {
                to: Some("all-1g.10gb".into())
            })
        );
        assert!(gpu_operator_effect(MIG_CONFIG, Some("x"), Some("x")).is_none());
        assert!(
            gpu_operator_effect(MIG_CONFIG, Some("x"), None)
                .unwrap()
                .takes_gpus_from_pods()
        );
    }

    #[test]
    fn operands_off_takes_gpus_but_turning_them_on_does_not() {
        let all_off = gpu_operator_effect(DEPLOY_OPERANDS, None, Some("false")).unwrap();
        assert!(all_off.takes_gpus_from_pods());
        assert!(gpu_operator_effect(DEPLOY_OPERANDS, Some("false"), Some("true")).is_none());
        let plugin_off = gpu_operator_effect(
            "nvidia.com/gpu.deploy.device-plugin",
            Some("true"),
            Some("false"),
        )
        .unwrap();
        assert!(plugin_off.takes_gpus_from_pods());
        assert!(
            !gpu_operator_effect("nvidia.com/gpu.deploy.dcgm-exporter", Some("true"), None)
                .unwrap()
                .takes_gpus_from_pods()
        );
        // A key that was never on is not the operator's switch being turned off.
        assert!(
            gpu_operator_effect("nvidia.com/gpu.deploy.device-plugin", None, Some("false"))
                .is_none()
        );
    }

    #[test]
    fn nfd_keys_read_with_and_without_the_default_namespace() {
        let keys = nfd_owned_keys(Some("pci-10de.present,nvidia.com/gpu.family, cpu-model.id"));
        assert!(keys.contains("feature.node.kubernetes.io/pci-10de.present"));
        assert!(keys.contains("nvidia.com/gpu.family"));
        assert!(keys.contains("feature.node.kubernetes.io/cpu-model.id"));
        assert!(nfd_owned_keys(None).is_empty());
    }

    #[test]
    fn owners_in_order_nfd_kubelet_karpenter_managed_pools() {
        let none = BTreeSet::new();
        let karpenter: BTreeMap<String, String> =
            [(KARPENTER_NODEPOOL.to_string(), "gpu".to_string())].into();
        assert_eq!(
            label_owner("team", &karpenter, &none),
            Some(LabelOwner::Karpenter {
                node_pool: "gpu".into()
            })
        );
        assert_eq!(
            label_owner("karpenter.sh/capacity-type", &karpenter, &none),
            Some(LabelOwner::KarpenterKey {
                node_pool: "gpu".into()
            })
        );
        let gke: BTreeMap<String, String> = [(
            "cloud.google.com/gke-nodepool".to_string(),
            "a3".to_string(),
        )]
        .into();
        assert!(matches!(
            label_owner("team", &gke, &none),
            Some(LabelOwner::ManagedPool { pool, .. }) if pool == "a3"
        ));
        assert_eq!(
            label_owner("kubernetes.io/hostname", &gke, &none),
            Some(LabelOwner::Kubelet)
        );
        assert_eq!(label_owner("team", &BTreeMap::new(), &none), None);
        let nfd = nfd_owned_keys(Some("pci-10de.present"));
        assert_eq!(
            label_owner("feature.node.kubernetes.io/pci-10de.present", &gke, &nfd),
            Some(LabelOwner::Nfd)
        );
    }
}
