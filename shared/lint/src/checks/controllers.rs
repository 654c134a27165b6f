//! The checks of what the controllers of a GPU cluster do with a changed label (the model is
//! [`placekit_core::label_controllers`]): the GPU operator's MIG manager and operand
//! switches, the device plugin's config, and the owners that re-apply or lose a hand-set
//! label (nfd-master, Karpenter, managed node pools, the kubelet).

use std::collections::BTreeMap;

use placekit_core::label_controllers::{
    DEVICE_PLUGIN_CONFIG, DevicePluginConfigs, GpuOperatorEffect, GpuOperatorView, LabelOwner,
    gpu_operator_effect, label_owner, replaced_by,
};

use super::{Check, Finding, Findings, node_list};
use placekit_core::model::Pod;
use placekit_core::plan::NodePlan;

/// Whether a pod uses a GPU or a MIG device of the node (an NVIDIA extended resource).
pub fn uses_nvidia_gpus(pod: &Pod) -> bool {
    pod.is_active()
        && pod.requests().iter().any(|(resource, quantity)| {
            *quantity > 0
                && resource.starts_with("nvidia.com/")
                && placekit_core::accelerators::is_accelerator(resource)
        })
}

/// The GPU operator's reactions to the plans' label changes: a change that takes GPUs from
/// running pods blocks (`--ignore-gpu-pods`), naming them and saying to drain first; one
/// on a node without GPU pods warns; a device-plugin config that is not a key of the
/// ClusterPolicy's ConfigMap is refused with the valid ones. `pods` are the active pods of
/// the changed nodes.
pub fn gpu_operator(plans: &[NodePlan], operator: &GpuOperatorView, pods: &[Pod]) -> Findings {
    let mut findings = Findings::default();
    for plan in plans {
        let node = plan.node();
        for change in &plan.label_changes {
            if !operator.acts_on(&change.key, &plan.before.labels) {
                continue;
            }
            let Some(effect) = gpu_operator_effect(
                &change.key,
                change.before.as_deref(),
                change.after.as_deref(),
            ) else {
                continue;
            };
            let what = match &change.after {
                Some(v) => format!("setting {}={v}", change.key),
                None => format!("removing {}", change.key),
            };
            if let GpuOperatorEffect::DevicePluginConfig { to } = &effect {
                match (&operator.device_plugin_configs, to) {
                    (DevicePluginConfigs::Keys {
                        config_map, keys, ..
                    }, Some(value)) if !keys.contains(value) => {
                        let text = format!(
                            "node/{node}: {DEVICE_PLUGIN_CONFIG}={value} is not a config of ConfigMap {config_map} (the ClusterPolicy's devicePlugin.config): the device plugin's config manager would refuse it; valid: {}",
                            keys.iter().cloned().collect::<Vec<_>>().join(", ")
                        );
                        findings
                            .refused
                            .push(Finding::new(Check::GpuOperator, text).on(&[node]));
                        continue;
                    }
                    (DevicePluginConfigs::Unknown(why), _) => findings.warnings.push(
                        Finding::new(
                            Check::GpuOperator,
                            format!(
                                "node/{node}: {what}: the value is not checked against the ClusterPolicy's config ConfigMap ({why})"
                            ),
                        )
                        .on(&[node]),
                    ),
                    _ => {}
                }
            }
            let gpu_pods: Vec<String> = pods
                .iter()
                .filter(|p| p.spec.node_name.as_deref() == Some(node) && uses_nvidia_gpus(p))
                .map(|p| format!("{}/{}", p.metadata.namespace, p.metadata.name))
                .collect();
            if effect.takes_gpus_from_pods() && !gpu_pods.is_empty() {
                let text = format!(
                    "node/{node}: {what}: {}; pods using its GPUs: {}; cordon and drain the node first (kubectl drain {node} --ignore-daemonsets)",
                    effect.consequence(),
                    shown(&gpu_pods),
                );
                findings
                    .gpu_blocking
                    .push(Finding::new(Check::GpuOperator, text).on(&[node]));
            } else {
                let text = format!("node/{node}: {what}: {}", effect.consequence());
                findings
                    .warnings
                    .push(Finding::new(Check::GpuOperator, text).on(&[node]));
            }
        }
    }
    findings
}

/// The owners of the changed keys: Karpenter's own keys on its nodes are refused; a key
/// another owner re-applies or loses warns, once per key and consequence with the nodes; a
/// taint added to a node Karpenter or a managed pool replaces warns that it is lost then.
pub fn owners(
    plans: &[NodePlan],
    declared: &placekit_core::taint_owners::DeclaredTaints,
) -> Findings {
    let mut findings = Findings::default();
    let mut warned: BTreeMap<(String, String), Vec<&str>> = BTreeMap::new();
    let mut tainted: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut consolidated: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for plan in plans {
        let node = plan.node();
        for taint in plan.taints_removed() {
            if let Some(owner) =
                placekit_core::taint_owners::taint_owner(&taint, &plan.before.labels, declared)
            {
                let text = format!(
                    "node/{node}: taint {taint} is {}'s: {}",
                    owner.name(),
                    owner.consequence()
                );
                findings
                    .owner_blocking
                    .push(Finding::new(Check::LabelOwners, text).on(&[node]));
            }
        }
        // A taint added with a key a controller manages: it may take it off by itself, and
        // removing it again (release, rollback) then needs the owner override.
        for taint in plan.taints_added() {
            if let Some(owner) =
                placekit_core::taint_owners::taint_owner(&taint, &plan.before.labels, declared)
            {
                let text = format!(
                    "node/{node}: taint {taint} is a taint {} manages: it may change or remove it by itself, and removing it again (release, rollback) needs --ignore-taint-owner",
                    owner.name()
                );
                findings
                    .warnings
                    .push(Finding::new(Check::LabelOwners, text).on(&[node]));
            }
        }
        // A NoExecute taint empties a Karpenter node of the pods that do not tolerate it, and
        // Karpenter consolidates an empty or underused node once the NodePool's
        // `consolidateAfter` has passed.
        if let Some(pool) = plan
            .before
            .labels
            .get(placekit_core::label_controllers::KARPENTER_NODEPOOL)
            && plan
                .taints_added()
                .iter()
                .any(|t| t.effect == placekit_core::syntax::TaintEffect::NoExecute)
        {
            consolidated.entry(pool.clone()).or_default().push(node);
        }
        if !plan.taints_added().is_empty()
            && let Some(consequence) =
                replaced_by(&plan.before.labels).and_then(|o| o.taint_consequence())
        {
            tainted.entry(consequence).or_default().push(node);
        }
        for change in &plan.label_changes {
            let Some(owner) = label_owner(&change.key, &plan.before.labels, &plan.before.nfd_keys)
            else {
                continue;
            };
            if let LabelOwner::KarpenterKey { .. } = owner {
                let text = format!(
                    "node/{node}: {}: {}; change the NodePool instead",
                    change.key,
                    owner.consequence()
                );
                findings
                    .refused
                    .push(Finding::new(Check::LabelOwners, text).on(&[node]));
                continue;
            }
            warned
                .entry((change.key.clone(), owner.consequence()))
                .or_default()
                .push(node);
        }
    }
    for (consequence, nodes) in tainted {
        let text = format!("taint on {}: {consequence}", node_list(&nodes));
        findings
            .warnings
            .push(Finding::new(Check::LabelOwners, text).on(&nodes));
    }
    for (pool, nodes) in consolidated {
        let text = format!(
            "NoExecute taint on {}: the pods that do not tolerate it are evicted, and Karpenter may then consolidate (delete) the emptied node once NodePool {pool}'s consolidateAfter has passed; to keep the node, annotate it karpenter.sh/do-not-disrupt=true",
            node_list(&nodes)
        );
        findings
            .warnings
            .push(Finding::new(Check::LabelOwners, text).on(&nodes));
    }
    for ((key, consequence), nodes) in warned {
        let text = format!("{key} on {}: {consequence}", node_list(&nodes));
        findings
            .warnings
            .push(Finding::new(Check::LabelOwners, text).on(&nodes));
    }
    findings
}

/// Kueue's reaction to an added taint on a node where it placed a Workload by
/// topology-aware scheduling ([`placekit_core::kueue_tas`]): a `NoExecute` taint one of the
/// Workload's pod sets does not tolerate evicts its pods there, and Kueue then moves them
/// to another node or evicts and requeues the whole Workload, every node of it (blocking,
/// `--ignore-dependents`); a `NoSchedule` one leaves them running, and the node counts as
/// failed for the Workload once they end (a warning).
pub fn kueue_tas(
    added: &[(String, placekit_core::syntax::Taint)],
    workloads: &[placekit_core::kueue_tas::TasWorkload],
) -> Findings {
    use placekit_core::syntax::TaintEffect;
    let mut findings = Findings::default();
    for (node, taint) in added {
        for workload in workloads {
            let pod_sets = workload.untolerating(node, taint);
            if pod_sets.is_empty() {
                continue;
            }
            let who = format!(
                "Kueue workload {}/{} (placed by topology-aware scheduling; pod set{} {} on {node})",
                workload.namespace,
                workload.name,
                if pod_sets.len() == 1 { "" } else { "s" },
                pod_sets.join(", ")
            );
            let finding = |text: String| {
                let mut finding = Finding::new(Check::TaintLosses, text).on(&[node.as_str()]);
                finding.subject = Some(super::Subject {
                    kind: "Workload".into(),
                    namespace: workload.namespace.clone(),
                    name: workload.name.clone(),
                });
                finding
            };
            if taint.effect == TaintEffect::NoExecute {
                findings.blocking.push(finding(format!(
                    "{who} does not tolerate {taint}: its pods there are evicted, and Kueue then counts the node as failed for it and moves them to another node of its topology, or evicts and requeues the whole workload on every node (TASReplaceNodeOnNodeTaints, on since Kueue 0.17)"
                )));
            } else {
                findings.warnings.push(finding(format!(
                    "{who} does not tolerate {taint}: its pods there keep running, but once they end Kueue counts the node as failed for it and moves them or evicts and requeues the whole workload; its pods assigned there and not yet scheduled are failed at once (TASReplaceNodeOnNodeTaints, on since Kueue 0.17)"
                )));
            }
        }
    }
    findings
}

/// The first few of a list, and how many more.
fn shown(items: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text: Vec<String> = items.iter().take(SHOWN).cloned().collect();
    if items.len() > SHOWN {
        text.push(format!("{} more", items.len() - SHOWN));
    }
    text.join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::tests::node;
    use super::*;
    use placekit_core::label_controllers::{MIG_CONFIG, MIG_CONFIG_STATE};
    use placekit_core::plan::{ChangeRequest, NodeState, plan_node};
    use placekit_core::syntax::LabelChange;

    fn set(state: &NodeState, key: &str, value: &str) -> NodePlan {
        plan_node(
            state,
            &ChangeRequest {
                labels: vec![LabelChange::Set {
                    key: key.into(),
                    value: value.into(),
                }],
                overwrite: true,
                ..ChangeRequest::default()
            },
        )
    }

    fn gpu_pod(name: &str, node: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}
        }))
        .unwrap()
    }

    fn with_policy() -> GpuOperatorView {
        GpuOperatorView {
            cluster_policy: Some("cluster-policy".into()),
            device_plugin_configs: DevicePluginConfigs::Keys {
                config_map: "gpu-operator/time-slicing".into(),
                keys: ["a100-x4".to_string(), "h100".to_string()].into(),
                default: None,
            },
        }
    }

    #[test]
    fn a_new_mig_config_under_gpu_pods_blocks_naming_them_and_without_pods_warns() {
        let busy = set(
            &node("gpu-1", &[(MIG_CONFIG, "all-disabled")]),
            MIG_CONFIG,
            "all-1g.10gb",
        );
        let idle = set(
            &node("gpu-2", &[(MIG_CONFIG, "all-disabled")]),
            MIG_CONFIG,
            "all-1g.10gb",
        );
        let f = gpu_operator(
            &[busy, idle],
            &with_policy(),
            &[gpu_pod("trainer-0", "gpu-1")],
        );
        assert_eq!(f.gpu_blocking.len(), 1, "{f:?}");
        assert!(f.gpu_blocking[0].message.contains("ml/trainer-0"), "{f:?}");
        assert!(
            f.gpu_blocking[0].message.contains("kubectl drain gpu-1"),
            "{f:?}"
        );
        assert_eq!(f.warnings.len(), 1, "{f:?}");
        assert!(f.warnings[0].message.starts_with("node/gpu-2"), "{f:?}");
    }

    #[test]
    fn without_the_operator_its_labels_are_plain_labels_unless_the_mig_manager_reported() {
        let plan = set(&node("gpu-1", &[]), MIG_CONFIG, "all-1g.10gb");
        let none = GpuOperatorView::default();
        assert_eq!(
            gpu_operator(std::slice::from_ref(&plan), &none, &[gpu_pod("p", "gpu-1")]),
            Findings::default()
        );
        let managed = set(
            &node("gpu-1", &[(MIG_CONFIG_STATE, "success")]),
            MIG_CONFIG,
            "all-1g.10gb",
        );
        let f = gpu_operator(&[managed], &none, &[gpu_pod("p", "gpu-1")]);
        assert_eq!(f.gpu_blocking.len(), 1, "{f:?}");
    }

    #[test]
    fn a_device_plugin_config_outside_the_configmap_is_refused_with_the_valid_ones() {
        let plan = set(&node("gpu-1", &[]), DEVICE_PLUGIN_CONFIG, "a100-x8");
        let f = gpu_operator(&[plan], &with_policy(), &[]);
        assert_eq!(f.refused.len(), 1, "{f:?}");
        assert!(
            f.refused[0].message.contains("valid: a100-x4, h100"),
            "{f:?}"
        );
        let plan = set(&node("gpu-1", &[]), DEVICE_PLUGIN_CONFIG, "a100-x4");
        let f = gpu_operator(&[plan], &with_policy(), &[gpu_pod("p", "gpu-1")]);
        assert!(f.refused.is_empty() && f.gpu_blocking.is_empty(), "{f:?}");
        assert!(f.warnings[0].message.contains("advertises"), "{f:?}");
    }

    #[test]
    fn karpenter_keys_are_refused_and_hand_set_labels_on_pool_nodes_warn_once_per_key() {
        let k1 = node("k-1", &[("karpenter.sh/nodepool", "gpu")]);
        let k2 = node("k-2", &[("karpenter.sh/nodepool", "gpu")]);
        let f = owners(
            &[set(&k1, "team", "a"), set(&k2, "team", "a")],
            &Default::default(),
        );
        assert!(f.refused.is_empty(), "{f:?}");
        assert_eq!(f.warnings.len(), 1, "{f:?}");
        assert!(
            f.warnings[0].message.contains("node/k-1, node/k-2")
                && f.warnings[0]
                    .message
                    .contains("spec.template.metadata.labels"),
            "{f:?}"
        );
        let f = owners(
            &[set(&k1, "karpenter.sh/capacity-type", "spot")],
            &Default::default(),
        );
        assert_eq!(f.refused.len(), 1, "{f:?}");
        assert!(
            owners(
                &[set(&node("plain", &[]), "team", "a")],
                &Default::default()
            )
            .is_empty()
        );
    }
}
