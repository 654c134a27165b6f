//! Unit tests of the parent module.

use super::*;
use placekit_core::plan::{ChangeRequest, NodeState, plan_node};
use placekit_core::syntax::parse_label_changes;
use serde_json::json;

pub(super) fn node(name: &str, labels: &[(&str, &str)]) -> NodeState {
    NodeState {
        name: name.into(),
        uid: format!("uid-{name}"),
        resource_version: "1".into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        taints: vec![],
        annotations: Default::default(),
        nfd_keys: Default::default(),
        other_annotations: false,
    }
}

fn plan(state: &NodeState, changes: &[&str]) -> NodePlan {
    plan_node(
        state,
        &ChangeRequest {
            labels: parse_label_changes(changes).unwrap(),
            overwrite: true,
            ..Default::default()
        },
    )
}

fn workload(kind: &str, name: &str, spec: serde_json::Value) -> Workload {
    Workload {
        kind: kind.into(),
        namespace: "ml".into(),
        name: name.into(),
        pod_spec: serde_json::from_value(spec).unwrap(),
        used_by: Vec::new(),
    }
}

const FAMILY: &str = "accelerator.example.com/gpu-family";

fn requires_a100() -> serde_json::Value {
    json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": FAMILY, "operator": "In", "values": ["a100"]}]}]}}}})
}

#[test]
fn blocks_only_when_a_candidate_stops_matching() {
    let a100 = node("gpu-a100-1", &[(FAMILY, "a100")]);
    let h100 = node("gpu-h100-1", &[(FAMILY, "h100")]);
    let serving = workload("Deployment", "llm-serving", requires_a100());
    let remove = |n: &NodeState| plan(n, &[&format!("{FAMILY}-")]);

    let found = dependents(&[remove(&a100)], std::slice::from_ref(&serving));
    assert_eq!(found.blocking.len(), 1, "{found:?}");
    assert!(
            found.blocking[0].message.starts_with(
                "Deployment ml/llm-serving requires accelerator.example.com/gpu-family In [a100] (required node affinity): node/gpu-a100-1 matches it now and would not after this change"
            ),
            "{found:?}"
        );

    // The h100 node was never a candidate: removing its label blocks nothing.
    assert_eq!(
        dependents(&[remove(&h100)], std::slice::from_ref(&serving)),
        Findings::default()
    );
    // A change that keeps the node matching is harmless.
    let still = workload(
        "Deployment",
        "any-gpu",
        json!({"containers": [], "nodeSelector": {"pool": "online"}}),
    );
    let pool = node("n", &[("pool", "online"), (FAMILY, "a100")]);
    assert_eq!(
        dependents(&[plan(&pool, &[&format!("{FAMILY}=h100")])], &[still]),
        Findings::default()
    );
}

#[test]
fn bound_pods_keep_running_daemonsets_lose_theirs_and_preferences_only_warn() {
    let a100 = node("gpu-a100-1", &[(FAMILY, "a100")]);
    let change = plan(&a100, &[&format!("{FAMILY}=h100")]);
    let mut bare = requires_a100();
    bare["nodeName"] = json!("gpu-a100-1");
    let mut elsewhere = requires_a100();
    elsewhere["nodeName"] = json!("gpu-a100-9");
    let prefers = json!({"containers": [], "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": FAMILY, "operator": "In", "values": ["a100"]}]}}]}}});
    let found = dependents(
        std::slice::from_ref(&change),
        &[
            workload("Pod", "trainer", bare),
            workload("Pod", "other-node", elsewhere),
            workload("DaemonSet", "dcgm", requires_a100()),
            workload("Deployment", "batch", prefers),
        ],
    );
    assert_eq!(found.blocking.len(), 1, "{found:?}");
    assert!(
        found.blocking[0]
            .message
            .contains("the DaemonSet controller would delete its pod there")
    );
    assert_eq!(found.warnings.len(), 2, "{found:?}");
    assert!(
        found.warnings[0]
            .message
            .starts_with("Pod ml/trainer runs on node/gpu-a100-1")
    );
    assert!(found.warnings[0].message.contains("it keeps running"));
    assert!(
        found.warnings[1]
            .message
            .starts_with("Deployment ml/batch prefers")
    );
}

#[test]
fn typos_on_set_are_said_and_new_values_are_not() {
    let nodes = [node(
        "gpu-a100-1",
        &[(FAMILY, "a100"), ("gpu-memory", "80gb"), ("pool", "online")],
    )];
    let changes = parse_label_changes(&[
        "accelerator.example.com/gpu-famliy=a100",
        "gpu-family=a100",
        "team=ml",
    ])
    .unwrap();
    let found = near_keys(&changes, &nodes);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].contains(&format!("did you mean {FAMILY}?")),
        "{found:?}"
    );
    assert!(
        found[1].starts_with("label gpu-family is on none"),
        "{found:?}"
    );

    let values: BTreeMap<String, BTreeSet<String>> = [
        (
            FAMILY.to_string(),
            ["a100", "h100"].map(String::from).into(),
        ),
        ("gpu-memory".into(), ["80gb".to_string()].into()),
        ("dedicated".into(), ["llm-online".to_string()].into()),
    ]
    .into();
    let changes = parse_label_changes(&[
        &format!("{FAMILY}=b200"),
        "gpu-memory=80GB",
        "dedicated=llm-onlne",
    ])
    .unwrap();
    let found = near_values(&changes, &values);
    assert_eq!(found.len(), 2, "a new GPU family is no typo: {found:?}");
    assert!(found[0].contains("did you mean 80gb?"), "{found:?}");
    assert!(found[1].contains("did you mean llm-online?"), "{found:?}");
}

#[test]
fn disruption_budgets_are_judged_like_the_eviction_api() {
    let taint = placekit_core::syntax::parse_taint("dedicated=llm:NoExecute").unwrap();
    let added = [("n".to_string(), taint)];
    let pod = |name: &str, node: &str, ready: bool| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ml", "labels": {"app": "llm"}},
                "spec": {"nodeName": node},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}}))
            .unwrap()
    };
    let pdb = |spec: serde_json::Value, status: serde_json::Value| -> PodDisruptionBudget {
        let mut spec = spec;
        spec["selector"] = json!({"matchLabels": {"app": "llm"}});
        serde_json::from_value(json!({"metadata": {"name": "llm", "namespace": "ml", "generation": 2}, "spec": spec, "status": status})).unwrap()
    };
    let blocks = |pods: &[Pod], budget: PodDisruptionBudget| {
        disruption_budget_blocks(&added, pods, &[budget])
            .budget_blocking
            .len()
    };
    let three = [
        pod("a", "n", true),
        pod("b", "n", true),
        pod("c", "m", true),
    ];
    // 50% of 3 rounds up to 2 unavailable: both pods on n may go.
    assert_eq!(
        blocks(&three, pdb(json!({"maxUnavailable": "50%"}), json!({}))),
        0
    );
    // minAvailable 2 of 3 healthy: one may go, not two.
    assert_eq!(
        blocks(&three, pdb(json!({"minAvailable": 2}), json!({}))),
        1
    );
    // A processed budget's status is what the eviction API reads.
    assert_eq!(
        blocks(
            &three,
            pdb(
                json!({"minAvailable": 2}),
                json!({"observedGeneration": 2, "disruptionsAllowed": 2, "currentHealthy": 3, "desiredHealthy": 1, "expectedPods": 3})
            )
        ),
        0
    );
    // An unready pod may go while the budget is healthy, or always with AlwaysAllow.
    let unready = [
        pod("a", "n", false),
        pod("b", "m", true),
        pod("c", "m", true),
    ];
    assert_eq!(
        blocks(&unready, pdb(json!({"minAvailable": 2}), json!({}))),
        0
    );
    assert_eq!(
        blocks(&unready, pdb(json!({"minAvailable": 3}), json!({}))),
        1
    );
    assert_eq!(
        blocks(
            &unready,
            pdb(
                json!({"minAvailable": 3, "unhealthyPodEvictionPolicy": "AlwaysAllow"}),
                json!({})
            )
        ),
        0
    );
    // A budget with neither field restricts nothing.
    assert_eq!(blocks(&three, pdb(json!({}), json!({}))), 0);
}

#[test]
fn no_execute_lists_daemonset_pods_and_asks() {
    let taint = placekit_core::syntax::parse_taint("dedicated=llm:NoExecute").unwrap();
    let pods: Vec<Pod> = vec![
            serde_json::from_value(json!({"metadata": {"name": "plugin", "namespace": "gpu-operator", "ownerReferences": [{"kind": "DaemonSet", "controller": true}]},
                "spec": {"nodeName": "n", "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}})).unwrap(),
        ];
    let found = evictions(&[("n".into(), taint)], &pods);
    assert_eq!(
        found.confirm.as_deref(),
        Some(
            "dedicated=llm:NoExecute is NoExecute: 1 running pod that does not tolerate it will be EVICTED: gpu-operator/plugin on node/n (DaemonSet pod)"
        )
    );
}

#[test]
fn a_label_change_reads_the_workloads_and_nothing_else() {
    let a100 = node("gpu-a100-1", &[(FAMILY, "a100")]);
    let needs = ViewNeeds::of(&[plan(&a100, &[&format!("{FAMILY}-")])]);
    assert!(needs.workloads);
    assert!(needs.pods_on.is_empty() && !needs.gpu_operator && !needs.all_nodes);
    assert!(needs.evicted_namespaces(&[]).is_empty());
}

#[test]
fn judge_runs_every_check_over_one_view() {
    let a100 = node("gpu-a100-1", &[(FAMILY, "a100")]);
    let view = ChangeView {
        workloads: vec![workload("Deployment", "llm-serving", requires_a100())],
        unreadable: vec!["cannot list rayclusters.ray.io: forbidden".into()],
        ..ChangeView::default()
    };
    let found = judge(&[plan(&a100, &[&format!("{FAMILY}-")])], &view);
    assert_eq!(found.blocking.len(), 1, "{found:?}");
    assert!(
        found.blocking[0]
            .message
            .starts_with("Deployment ml/llm-serving requires"),
        "{found:?}"
    );
    assert!(
        found
            .warnings
            .iter()
            .any(|w| w.message.contains("rayclusters")),
        "what could not be read is said: {found:?}"
    );
    // Budgets the checks could not list are said, not silently skipped.
    let view = ChangeView {
        budgets: Budgets::Unreadable("forbidden".into()),
        ..ChangeView::default()
    };
    let found = judge(&[plan(&a100, &["pool=online"])], &view);
    assert!(
        found.warnings.iter().any(|w| w
            .message
            .starts_with("cannot list poddisruptionbudgets (forbidden)")),
        "{found:?}"
    );
}

/// The last node a workload can use, tainted: stranded, unless a Karpenter NodePool whose
/// template the workload matches (labels it is sure to give, taints it tolerates) launches
/// another; a pool whose template it does not match, or whose taint it does not tolerate,
/// rescues nothing.
#[test]
fn a_nodepool_that_can_launch_a_node_keeps_the_last_node_from_blocking() {
    use placekit_core::syntax::{Taint, TaintEffect};
    let pool_node = node(
        "kwok-pk-1",
        &[("karpenter.sh/nodepool", "gpu"), ("pool", "v1")],
    );
    let app = workload(
        "Deployment",
        "app",
        json!({"containers": [], "nodeSelector": {"karpenter.sh/nodepool": "gpu"}}),
    );
    let taint = Taint {
        key: "dedicated".into(),
        value: Some("llm".into()),
        effect: TaintEffect::NoSchedule,
        time_added: None,
    };
    let added = [("kwok-pk-1".to_string(), taint)];
    let judge_with = |pools: &[(&str, serde_json::Value)]| {
        let mut declared = placekit_core::taint_owners::DeclaredTaints::default();
        for (_, nodepool) in pools {
            declared.add_nodepool(nodepool);
        }
        taint_losses(
            &added,
            std::slice::from_ref(&app),
            std::slice::from_ref(&pool_node),
            &declared,
        )
    };
    let nodepool = |name: &str, taints: serde_json::Value| {
        json!({"metadata": {"name": name}, "spec": {"template": {
            "metadata": {"labels": {"pool": "v1"}},
            "spec": {"taints": taints, "requirements": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}}}})
    };
    let stranded = judge_with(&[]);
    assert_eq!(stranded.blocking.len(), 1, "{stranded:?}");
    let rescued = judge_with(&[("gpu", nodepool("gpu", json!([])))]);
    assert!(rescued.blocking.is_empty(), "{rescued:?}");
    assert!(
        rescued.warnings[0]
            .message
            .contains("Karpenter's NodePool gpu launches a node for its new pods"),
        "{rescued:?}"
    );
    let other_pool = judge_with(&[("cpu", nodepool("cpu", json!([])))]);
    assert_eq!(other_pool.blocking.len(), 1, "{other_pool:?}");
    let tainted_pool = judge_with(&[(
        "gpu",
        nodepool("gpu", json!([{"key": "gpu-only", "effect": "NoSchedule"}])),
    )]);
    assert_eq!(tainted_pool.blocking.len(), 1, "{tainted_pool:?}");
}

/// A NodePool at its limits launches no node (Karpenter keeps only the instance types that
/// fit in what the limits leave): it rescues nothing, and the refusal says which limit.
/// A limit on another resource than the pods ask for, or with room left, or on `nodes`, does
/// not stop it.
#[test]
fn a_nodepool_at_its_limits_rescues_nothing() {
    use placekit_core::syntax::{Taint, TaintEffect};
    let pool_node = node("kwok-pk-1", &[("karpenter.sh/nodepool", "gpu")]);
    let app = workload(
        "Deployment",
        "app",
        json!({"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
               "nodeSelector": {"karpenter.sh/nodepool": "gpu"}}),
    );
    let added = [(
        "kwok-pk-1".to_string(),
        Taint {
            key: "dedicated".into(),
            value: Some("llm".into()),
            effect: TaintEffect::NoSchedule,
            time_added: None,
        },
    )];
    let judge_with = |limits: serde_json::Value, used: serde_json::Value| {
        let mut declared = placekit_core::taint_owners::DeclaredTaints::default();
        declared.add_nodepool(&json!({"metadata": {"name": "gpu"},
            "spec": {"limits": limits, "template": {"spec": {"requirements": []}}},
            "status": {"resources": used}}));
        taint_losses(
            &added,
            std::slice::from_ref(&app),
            std::slice::from_ref(&pool_node),
            &declared,
        )
    };
    let full = judge_with(
        json!({"nvidia.com/gpu": "8", "cpu": "1000"}),
        json!({"nvidia.com/gpu": "7", "cpu": "96", "nodes": "1"}),
    );
    assert_eq!(full.blocking.len(), 1, "{full:?}");
    assert!(
        full.blocking[0].message.contains(
            "new pods of it could not be scheduled anywhere (Karpenter's NodePool gpu would launch a node for them, but its limit of 8 nvidia.com/gpu leaves 1 (7 in use))"
        ),
        "{full:?}"
    );
    let no_cpu_left = judge_with(json!({"cpu": 96}), json!({"cpu": "96"}));
    assert_eq!(no_cpu_left.blocking.len(), 1, "{no_cpu_left:?}");
    for (limits, used) in [
        (
            json!({"nvidia.com/gpu": "8"}),
            json!({"nvidia.com/gpu": "6"}),
        ),
        (
            json!({"example.com/fpga": "1"}),
            json!({"example.com/fpga": "1"}),
        ),
        (json!({}), json!({"nvidia.com/gpu": "64"})),
        (json!({"nvidia.com/gpu": "8"}), json!({})),
        // Karpenter does not count its nodes against a dynamic pool's `nodes` limit.
        (json!({"nodes": "1"}), json!({"nodes": "1"})),
    ] {
        let room = judge_with(limits.clone(), used.clone());
        assert!(room.blocking.is_empty(), "{limits} {used}: {room:?}");
    }
}
