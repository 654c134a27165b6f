//! The scheduler wing against hand-built clusters; the scheduling differential suite checks
//! the same code against kube-scheduler.

use std::collections::BTreeMap;

use super::*;
use crate::model::{Node, Pod, PodPlacement, PodSpec};
use serde_json::json;

fn node(name: &str, labels: serde_json::Value, taints: serde_json::Value, gpus: &str) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}, "status": {"allocatable": {"nvidia.com/gpu": gpus, "pods": "3", "cpu": "8"}}})).unwrap()
}

fn pod(spec: serde_json::Value) -> Pod {
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
    let running = vec![serde_json::from_value::<Pod>(json!({"metadata": {"name": "r"}, "spec": {"nodeName": "a100", "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}, "status": {"phase": "Running"}})).unwrap()];
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

fn placed(name: &str, node: &str, labels: serde_json::Value, extra: serde_json::Value) -> Pod {
    let mut spec = json!({"nodeName": node, "containers": []});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ml", "labels": labels}, "spec": spec, "status": {"phase": "Running"}})).unwrap()
}

fn zoned(name: &str, zone: Option<&str>) -> Node {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if let Some(z) = zone {
        labels["topology.kubernetes.io/zone"] = json!(z);
    }
    node(name, labels, json!([]), "8")
}

fn reasons(results: &[Result<(), Vec<FilterFailure>>]) -> Vec<String> {
    results
        .iter()
        .map(|r| match r {
            Ok(()) => "fits".to_string(),
            Err(f) => f
                .iter()
                .map(FilterFailure::scheduler_reason)
                .collect::<Vec<_>>()
                .join(" + "),
        })
        .collect()
}

fn test_pod(labels: serde_json::Value, spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ml", "labels": labels}, "spec": spec, "status": {"phase": "Pending"}})).unwrap()
}

#[test]
fn taints_come_before_node_affinity_and_resources_give_every_reason() {
    let nodes = node_infos(
        &[
            node(
                "tainted",
                json!({"family": "h100"}),
                json!([{"key": "gpu", "effect": "NoSchedule"}]),
                "8",
            ),
            node("small", json!({"family": "a100"}), json!([]), "0"),
        ],
        &[],
    );
    let p = test_pod(
        json!({}),
        json!({"nodeSelector": {"family": "a100"}, "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "100"}, "limits": {"nvidia.com/gpu": "1"}}}]}),
    );
    let results = evaluate(&p, &nodes);
    assert_eq!(
        reasons(&results),
        vec![
            "node(s) had untolerated taint(s)",
            "Insufficient cpu + Insufficient nvidia.com/gpu"
        ],
        "the taint filter runs before node affinity"
    );
    assert_eq!(
        scheduler_message(&results).unwrap(),
        "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s)."
    );
    let mut no_pods = nodes[1].clone();
    no_pods.allocatable.remove("pods");
    assert_eq!(
        filter(&PodSpec::default(), &BTreeMap::new(), &no_pods).unwrap_err(),
        FilterFailure::TooManyPods { limit: "0".into() },
        "no pods allocatable admits no pod"
    );
}

#[test]
fn the_verdict_ignores_taints_on_nodes_that_are_no_candidates() {
    let nodes = node_infos(
        &[
            node("a100", json!({"family": "a100"}), json!([]), "8"),
            node(
                "h100",
                json!({"family": "h100"}),
                json!([{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]),
                "8",
            ),
        ],
        &[],
    );
    let p = test_pod(
        json!({}),
        json!({"nodeSelector": {"family": "b200"}, "containers": []}),
    );
    let filters = PodFilters::new(&p, &nodes);
    let results: Vec<_> = nodes.iter().map(|n| filters.check(n)).collect();
    assert_eq!(reasons(&results)[1], "node(s) had untolerated taint(s)");
    assert!(!filters.is_candidate(&nodes[1]));
    assert_eq!(
        filters.verdict(&nodes, &results).unwrap().evidence,
        "didn't match Pod's node affinity"
    );
    let h100 = test_pod(
        json!({}),
        json!({"nodeSelector": {"family": "h100"}, "containers": []}),
    );
    let filters = PodFilters::new(&h100, &nodes);
    let results: Vec<_> = nodes.iter().map(|n| filters.check(n)).collect();
    assert_eq!(
        filters.verdict(&nodes, &results).unwrap().evidence,
        "had untolerated taint"
    );
}

#[test]
fn match_fields_names_restrict_the_nodes_filtered_at_all() {
    let nodes = node_infos(
        &[
            zoned("a", None),
            node("b", json!({}), json!([]), "8"),
            serde_json::from_value(json!({"metadata": {"name": "c"}, "spec": {"unschedulable": true}, "status": {"allocatable": {"pods": "3"}}})).unwrap(),
        ],
        &[],
    );
    let terms = |names: &[&str]| {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
            names.iter().map(|n| json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}], "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]})).collect::<Vec<_>>()}}}, "containers": []})
    };
    let p = test_pod(json!({}), terms(&["a", "b"]));
    assert_eq!(
        reasons(&evaluate(&p, &nodes)),
        vec![
            "fits",
            "node(s) didn't match Pod's node affinity/selector",
            "node(s) didn't satisfy plugin(s) [NodeAffinity]"
        ],
        "the cordoned node c is not named: the scheduler never filters it"
    );
    let r = evaluate(&p, &nodes);
    assert!(
        r[1].as_ref().unwrap_err()[0]
            .to_string()
            .contains("kubernetes.io/hostname Exists")
    );
    let conflict = test_pod(
        json!({}),
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a"]},
            {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}, "containers": []}),
    );
    let results = evaluate(&conflict, &nodes);
    assert_eq!(
        scheduler_message(&results).unwrap(),
        "0/3 nodes are available: pod affinity terms conflict."
    );
    assert_eq!(
        parse_scheduler_message("0/3 nodes are available: pod affinity terms conflict.")
            .unwrap()
            .1,
        [("pod affinity terms conflict".to_string(), 3)].into()
    );
}

#[test]
fn topology_spread_counts_eligible_domains_and_needs_the_key() {
    let nodes_objs = vec![
        zoned("n1", Some("z1")),
        zoned("n2", Some("z1")),
        zoned("n3", Some("z2")),
        zoned("n4", None),
    ];
    let running = vec![
        placed("r1", "n1", json!({"app": "llm"}), json!({})),
        placed("r2", "n2", json!({"app": "llm"}), json!({})),
        placed("other", "n3", json!({"app": "web"}), json!({})),
    ];
    let nodes = node_infos(&nodes_objs, &running);
    let spread = |key: &str, skew: i32, min_domains: Option<i32>| {
        let mut c = json!({"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "llm"}}});
        if let Some(m) = min_domains {
            c["minDomains"] = json!(m);
        }
        test_pod(
            json!({"app": "llm"}),
            json!({"topologySpreadConstraints": [c], "containers": []}),
        )
    };
    let zone = "topology.kubernetes.io/zone";
    // z1 has 2, z2 has 0: z1 + this one - 0 = 3 > 1.
    assert_eq!(
        reasons(&evaluate(&spread(zone, 1, None), &nodes)),
        vec![
            "node(s) didn't match pod topology spread constraints",
            "node(s) didn't match pod topology spread constraints",
            "fits",
            "node(s) didn't match pod topology spread constraints (missing required label)"
        ]
    );
    assert_eq!(
        reasons(&evaluate(&spread(zone, 3, None), &nodes))[..3],
        ["fits", "fits", "fits"]
    );
    // Hostname: n1, n2 have 1, n3 0 (n4 has a hostname too): 1 + 1 - 0 = 2 > 1.
    assert_eq!(
        reasons(&evaluate(
            &spread("kubernetes.io/hostname", 1, None),
            &nodes
        )),
        vec![
            "node(s) didn't match pod topology spread constraints",
            "node(s) didn't match pod topology spread constraints",
            "fits",
            "fits"
        ]
    );
    // minDomains above the number of domains: the minimum counts as 0.
    let single = node_infos(&nodes_objs[..2], &running[..2]);
    assert_eq!(
        reasons(&evaluate(&spread(zone, 2, None), &single)),
        vec!["fits", "fits"],
        "one domain: 2 + 1 - 2 = 1"
    );
    assert_eq!(
        reasons(&evaluate(&spread(zone, 2, Some(2)), &single)),
        vec![
            "node(s) didn't match pod topology spread constraints",
            "node(s) didn't match pod topology spread constraints"
        ],
        "minDomains 2 with one domain: 2 + 1 - 0 = 3"
    );
    // An empty selector counts no pods.
    let everything = test_pod(
        json!({"app": "llm"}),
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": zone, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}], "containers": []}),
    );
    assert_eq!(reasons(&evaluate(&everything, &nodes))[0], "fits");
    // ScheduleAnyway is no filter.
    let soft = test_pod(
        json!({"app": "llm"}),
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": zone, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "llm"}}}], "containers": []}),
    );
    assert!(evaluate(&soft, &nodes).iter().all(Result::is_ok));
}

#[test]
fn pod_anti_affinity_both_ways_and_pod_affinity() {
    let zone = "topology.kubernetes.io/zone";
    let nodes_objs = vec![
        zoned("n1", Some("z1")),
        zoned("n2", Some("z1")),
        zoned("n3", Some("z2")),
    ];
    let running = vec![
        placed("llm-0", "n1", json!({"app": "llm"}), json!({})),
        placed(
            "guard",
            "n3",
            json!({"app": "guard"}),
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "llm"}}}]}}}),
        ),
    ];
    let nodes = node_infos(&nodes_objs, &running);
    let anti = |key: &str| {
        test_pod(
            json!({"app": "llm"}),
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": key, "labelSelector": {"matchLabels": {"app": "llm"}}}]}}, "containers": []}),
        )
    };
    assert_eq!(
        reasons(&evaluate(&anti("kubernetes.io/hostname"), &nodes)),
        vec![
            "node(s) didn't match pod anti-affinity rules",
            "fits",
            "node(s) didn't satisfy existing pods anti-affinity rules"
        ]
    );
    let r = evaluate(&anti(zone), &nodes);
    assert_eq!(
        reasons(&r)[..2],
        [
            "node(s) didn't match pod anti-affinity rules",
            "node(s) didn't match pod anti-affinity rules"
        ]
    );
    assert!(
        r[1].as_ref().unwrap_err()[0]
            .to_string()
            .contains("pod ml/llm-0 matches the term and runs in topology.kubernetes.io/zone=z1")
    );
    // Another namespace is not matched by default.
    let mut other_ns = anti("kubernetes.io/hostname");
    other_ns.metadata.namespace = "web".into();
    assert_eq!(reasons(&evaluate(&other_ns, &nodes))[0], "fits");
    // Pod affinity: to a running pod's zone; the first pod of a self-selecting group goes anywhere.
    let affinity = |app: &str| {
        test_pod(
            json!({"app": "llm"}),
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": zone, "labelSelector": {"matchLabels": {"app": app}}}]}}, "containers": []}),
        )
    };
    assert_eq!(
        reasons(&evaluate(&affinity("llm"), &nodes)),
        vec!["fits", "fits", "node(s) didn't match pod affinity rules"],
        "pod affinity is checked before the running pods' anti-affinity"
    );
    let nodes_without = node_infos(&nodes_objs, &[]);
    assert!(
        evaluate(&affinity("llm"), &nodes_without)
            .iter()
            .all(Result::is_ok),
        "self-affinity: first of its group"
    );
    assert!(
        evaluate(&affinity("db"), &nodes_without)
            .iter()
            .all(|r| reasons(std::slice::from_ref(r))[0]
                == "node(s) didn't match pod affinity rules")
    );
}

#[test]
fn scheduler_messages_parse_and_sort_as_the_scheduler_does() {
    let (n, r) = parse_scheduler_message("0/12 nodes are available: 1 Insufficient nvidia.com/gpu, 10 node(s) didn't satisfy plugin(s) [NodeAffinity], 1 node(s) had untolerated taint(s). preemption: 0/12 nodes are available: 12 Preemption is not helpful for scheduling.").unwrap();
    assert_eq!(n, 12);
    assert_eq!(r["node(s) didn't satisfy plugin(s) [NodeAffinity]"], 10);
    assert_eq!(r.values().sum::<usize>(), 12);
    let results: Vec<Result<(), Vec<FilterFailure>>> = (0..11)
        .map(|i| {
            Err(vec![if i < 10 {
                FilterFailure::NotNamed
            } else {
                FilterFailure::Unschedulable
            }])
        })
        .collect();
    assert_eq!(
        scheduler_message(&results).unwrap(),
        "0/11 nodes are available: 1 node(s) were unschedulable, 10 node(s) didn't satisfy plugin(s) [NodeAffinity].",
        "sorted as strings: \"1 ...\" before \"10 ...\""
    );
    assert_eq!(scheduler_message(&[Ok(())]), None);
    assert_eq!(parse_scheduler_message("pod has unbound PVCs"), None);
}

#[test]
fn drift_names_the_failing_expression() {
    let nodes = node_infos(&[node("n", json!({"family": "h100"}), json!([]), "8")], &[]);
    let p: PodPlacement = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [], "nodeName": "n", "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "family", "operator": "In", "values": ["a100"]}]}]}}}}})).unwrap();
    let d = drift(&p, &nodes[0]).unwrap();
    assert_eq!(d.reason, "family In [a100], node has family=h100");
    assert_eq!(d.owner, None, "a bare pod has no controller");
    // A ReplicaSet's pod names its controller (not another owner).
    let owned: PodPlacement = serde_json::from_value(json!({"metadata": {"name": "llm-1", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "other"},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "llm-7d9f8", "controller": true}]},
        "spec": {"containers": [], "nodeName": "n", "nodeSelector": {"family": "a100"}}})).unwrap();
    let d = drift(&owned, &nodes[0]).unwrap();
    let owner = d.owner.expect("the controller");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("ReplicaSet", "llm-7d9f8")
    );
}

#[test]
fn kueue_admission_says_why_a_gated_pod_waits() {
    use super::verdict::kueue_admission;
    let pending = serde_json::json!({
        "metadata": {"namespace": "ml", "name": "pod-trainer-1a2b3"},
        "spec": {"queueName": "team-a"},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
            "message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed"}]}
    });
    assert_eq!(
        kueue_admission(&pending),
        "Workload ml/pod-trainer-1a2b3 (LocalQueue team-a) is not admitted: Pending: couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed"
    );
    let admitted = serde_json::json!({
        "metadata": {"namespace": "ml", "name": "w"},
        "status": {"admission": {"clusterQueue": "cq"},
            "conditions": [{"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted"}]}
    });
    assert!(kueue_admission(&admitted).contains("admitted to ClusterQueue cq"));
    let fresh = serde_json::json!({"metadata": {"namespace": "ml", "name": "w"}, "spec": {"queueName": "q"}});
    assert!(kueue_admission(&fresh).contains("has not processed it"));
}
