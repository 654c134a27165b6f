//! The volume plugins, NodePorts, pod-level resources and the pending judgement (another
//! scheduler, bound pods, the referee, nominations, gangs) over hand-built clusters; the
//! end-to-end suite `pending_truth` checks the same cases against kube-scheduler.

use serde_json::{Value, json};

use super::gang::{GangKind, PodGroup, gang_of};
use super::pending::{ClusterView, Standing, judge};
use super::*;
use crate::model::storage::{Claim, CsiNode, Storage, StorageClass, Volume};
use crate::model::{Node, Pod};

fn node(name: &str, zone: &str) -> Node {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "status": {"allocatable": {"nvidia.com/gpu": "8", "pods": "110", "cpu": "8"}}}),
    )
    .unwrap()
}

fn pod(name: &str, spec: Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ml"}, "spec": spec, "status": {"phase": "Pending"}})).unwrap()
}

fn with_claim(name: &str, claim: &str) -> Pod {
    pod(
        name,
        json!({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}),
    )
}

fn claim(name: &str, class: &str, volume: Option<&str>, modes: &[&str]) -> Claim {
    let mut c = json!({"metadata": {"name": name, "namespace": "ml"},
        "spec": {"storageClassName": class, "accessModes": modes, "resources": {"requests": {"storage": "10Gi"}}}});
    if let Some(v) = volume {
        c["spec"]["volumeName"] = json!(v);
        c["metadata"]["annotations"] = json!({"pv.kubernetes.io/bind-completed": "yes"});
    }
    serde_json::from_value(c).unwrap()
}

fn volume(name: &str, extra: Value) -> Volume {
    let mut v = json!({"metadata": {"name": name}, "spec": {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "zonal"}});
    if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
        for (k, x) in extra {
            v.insert(k.clone(), x.clone());
        }
    }
    serde_json::from_value(v).unwrap()
}

fn class(name: &str, mode: &str, provisioner: &str) -> StorageClass {
    serde_json::from_value(
        json!({"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode}),
    )
    .unwrap()
}

fn view<'a>(nodes: &'a [NodeInfo], storage: &'a Storage, pending: &'a [Pod]) -> ClusterView<'a> {
    ClusterView {
        nodes,
        dra: None,
        storage: Some(storage),
        groups: &[],
        pending,
    }
}

fn first_failures(j: &pending::Judgement) -> Vec<String> {
    j.checked
        .iter()
        .map(|r| match r {
            Ok(()) => "fits".to_string(),
            Err(f) => f[0].scheduler_reason(),
        })
        .collect()
}

#[test]
fn a_missing_bound_volume_stops_the_pod_in_volume_zones_prefilter() {
    let nodes = node_infos(&[node("a", "z1")], &[]);
    let storage = Storage::new(
        vec![claim("c", "zonal", Some("gone"), &["ReadWriteOnce"])],
        vec![],
        vec![class("zonal", "WaitForFirstConsumer", "csi.example.com")],
        vec![],
    );
    let p = with_claim("p", "c");
    let j = judge(&p, view(&nodes, &storage, &[]));
    assert_eq!(
        j.predicted_message.as_deref(),
        Some("0/1 nodes are available: persistentvolume \"gone\" not found.")
    );
    assert!(!j.placeable);
}

#[test]
fn a_read_write_once_pod_claim_in_use_fails_every_node() {
    let holder: Pod = serde_json::from_value(json!({"metadata": {"name": "holder", "namespace": "ml"},
        "spec": {"nodeName": "a", "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]},
        "status": {"phase": "Running"}})).unwrap();
    let nodes = node_infos(&[node("a", "z1"), node("b", "z1")], &[holder]);
    let storage = Storage::new(
        vec![claim("c", "zonal", Some("pv"), &["ReadWriteOncePod"])],
        vec![volume("pv", json!({}))],
        vec![],
        vec![],
    );
    let p = with_claim("p", "c");
    let j = judge(&p, view(&nodes, &storage, &[]));
    assert_eq!(
        first_failures(&j),
        vec![
            "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";
            2
        ]
    );
}

#[test]
fn the_csi_attach_limit_counts_distinct_volumes_on_the_node() {
    let attached: Pod = serde_json::from_value(json!({"metadata": {"name": "old", "namespace": "ml"},
        "spec": {"nodeName": "a", "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "old"}}]},
        "status": {"phase": "Running"}})).unwrap();
    let nodes = node_infos(&[node("a", "z1"), node("b", "z1")], &[attached]);
    let csi = |handle: &str| json!({"spec": {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"], "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": handle}}});
    let limits: Vec<CsiNode> = ["a", "b"]
        .iter()
        .map(|n| serde_json::from_value(json!({"metadata": {"name": n}, "spec": {"drivers": [{"name": "ebs.csi.aws.com", "allocatable": {"count": 1}}]}})).unwrap())
        .collect();
    let storage = Storage::new(
        vec![
            claim("old", "", Some("pv-old"), &["ReadWriteOnce"]),
            claim("new", "", Some("pv-new"), &["ReadWriteOnce"]),
        ],
        vec![
            volume("pv-old", csi("vol-1")),
            volume("pv-new", csi("vol-2")),
        ],
        vec![],
        limits,
    );
    let p = with_claim("p", "new");
    let j = judge(&p, view(&nodes, &storage, &[]));
    assert_eq!(
        first_failures(&j),
        vec!["node(s) exceed max volume count", "fits"]
    );
    // The same volume the node already has attached is no new one.
    let shared = with_claim("q", "old");
    let j = judge(&shared, view(&nodes, &storage, &[]));
    assert_eq!(first_failures(&j), vec!["fits", "fits"]);
}

#[test]
fn volume_zone_compares_a_bound_volumes_zone_with_the_nodes() {
    let nodes = node_infos(&[node("a", "z1"), node("b", "z2")], &[]);
    let storage = Storage::new(
        vec![claim("c", "zonal", Some("pv"), &["ReadWriteOnce"])],
        vec![volume(
            "pv",
            json!({"metadata": {"name": "pv", "labels": {"topology.kubernetes.io/zone": "z2__z3"}}}),
        )],
        vec![],
        vec![],
    );
    let j = judge(&with_claim("p", "c"), view(&nodes, &storage, &[]));
    assert_eq!(
        first_failures(&j),
        vec!["node(s) had no available volume zone", "fits"]
    );
}

#[test]
fn an_unbound_delayed_claim_binds_a_fitting_volume_or_is_provisioned() {
    let nodes = node_infos(&[node("a", "z1"), node("b", "z2")], &[]);
    let local = |zone: &str| {
        json!({"spec": {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}}})
    };
    let storage = Storage::new(
        vec![claim("c", "local", None, &["ReadWriteOnce"])],
        vec![volume("pv-z2", local("z2"))],
        vec![class(
            "local",
            "WaitForFirstConsumer",
            "kubernetes.io/no-provisioner",
        )],
        vec![],
    );
    let j = judge(&with_claim("p", "c"), view(&nodes, &storage, &[]));
    assert_eq!(
        first_failures(&j),
        vec![
            "node(s) didn't find available persistent volumes to bind",
            "fits"
        ]
    );
    assert!(j.placeable);
}

#[test]
fn host_ports_conflict_by_port_protocol_and_address() {
    let tcp = |ip: &str| crate::model::pod::HostPort {
        port: 80,
        protocol: "TCP".into(),
        host_ip: ip.into(),
    };
    assert!(tcp("0.0.0.0").conflicts(&tcp("10.0.0.1")));
    assert!(tcp("10.0.0.1").conflicts(&tcp("0.0.0.0")));
    assert!(!tcp("10.0.0.1").conflicts(&tcp("10.0.0.2")));
    let udp = crate::model::pod::HostPort {
        protocol: "UDP".into(),
        ..tcp("0.0.0.0")
    };
    assert!(!udp.conflicts(&tcp("0.0.0.0")));
    // An init container's port is released before the containers start; a sidecar's is not.
    let p = pod(
        "p",
        json!({"initContainers": [
            {"name": "init", "ports": [{"containerPort": 1, "hostPort": 1}]},
            {"name": "sidecar", "restartPolicy": "Always", "ports": [{"containerPort": 2, "hostPort": 2}]}],
          "containers": [{"name": "c", "ports": [{"containerPort": 3}]}]}),
    );
    let ports: Vec<i32> = p.spec.host_ports().iter().map(|h| h.port).collect();
    assert_eq!(ports, vec![2]);
}

#[test]
fn pod_level_requests_replace_the_containers_sum_for_cpu_and_memory_only() {
    let p = pod(
        "p",
        json!({"resources": {"requests": {"cpu": "4"}, "limits": {"memory": "8Gi"}},
          "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}}],
          "overhead": {"cpu": "100m"}}),
    );
    let r = p.requests();
    assert_eq!(r["cpu"], 4100);
    assert_eq!(r["memory"], 8 * 1024 * 1024 * 1024 * 1000);
    assert_eq!(r["nvidia.com/gpu"], 1000);
}

#[test]
fn a_pod_of_another_scheduler_is_never_predicted() {
    let nodes = node_infos(&[node("a", "z1")], &[]);
    let storage = Storage::default();
    let p = pod("p", json!({"schedulerName": "kai-scheduler"}));
    let j = judge(&p, view(&nodes, &storage, &[]));
    assert_eq!(
        j.standing,
        Some(Standing::OtherScheduler {
            scheduler: "kai-scheduler".into()
        })
    );
    assert!(!j.placeable && j.checked.is_empty());
}

#[test]
fn a_bound_pod_waits_for_its_node_which_must_exist_and_be_ready() {
    let mut not_ready = node("sick", "z1");
    not_ready.status.conditions = vec![crate::model::node::NodeCondition {
        type_: "Ready".into(),
        status: "Unknown".into(),
    }];
    let nodes = node_infos(&[node("a", "z1"), not_ready], &[]);
    let storage = Storage::default();
    for (bound, state, placeable) in [
        ("a", "exists", true),
        ("sick", "notReady", false),
        ("gone", "missing", false),
    ] {
        let p = pod("p", json!({"nodeName": bound}));
        let j = judge(&p, view(&nodes, &storage, &[]));
        assert_eq!(
            j.standing,
            Some(Standing::Bound {
                node: bound.into(),
                node_state: state
            })
        );
        assert_eq!(j.placeable, placeable, "{bound}");
    }
}

#[test]
fn a_preemptor_names_its_nominated_node_and_the_victims_leaving_it() {
    let victim: Pod = serde_json::from_value(json!({"metadata": {"name": "batch", "namespace": "ml", "deletionTimestamp": "2026-12-06T00:00:00Z"},
        "spec": {"nodeName": "a", "priority": 0}, "status": {"phase": "Running"}})).unwrap();
    let nodes = node_infos(&[node("a", "z1")], &[victim]);
    let storage = Storage::default();
    let mut p = pod("p", json!({"priority": 1000}));
    p.status.nominated_node_name = Some("a".into());
    let j = judge(&p, view(&nodes, &storage, &[]));
    let n = j.nomination.expect("a nomination");
    assert_eq!(n.node, "a");
    assert_eq!(n.terminating_victims, vec!["ml/batch"]);
}

#[test]
fn the_schedulers_refusal_wins_over_the_model() {
    let nodes = node_infos(&[node("a", "z1")], &[]);
    let storage = Storage::default();
    let mut p = pod("p", json!({}));
    p.status.conditions = vec![crate::model::pod::PodCondition {
        type_: "PodScheduled".into(),
        status: "False".into(),
        reason: Some("Unschedulable".into()),
        message: Some("0/1 nodes are available: 1 node(s) didn't satisfy plugin(s) [X].".into()),
    }];
    let j = judge(&p, view(&nodes, &storage, &[]));
    assert!(!j.placeable);
    assert!(
        j.disagreement
            .unwrap()
            .contains("1 node(s) passing every filter it models (a)")
    );
}

#[test]
fn a_gang_is_placed_together_against_its_minimum() {
    let nodes = node_infos(&[node("a", "z1"), node("b", "z2")], &[]);
    let storage = Storage::default();
    let member = |i: usize| {
        serde_json::from_value::<Pod>(json!({"metadata": {"name": format!("w-{i}"), "namespace": "ml",
            "labels": {"scheduling.x-k8s.io/pod-group": "g"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": "Pending"}}))
        .unwrap()
    };
    let pending: Vec<Pod> = (0..3).map(member).collect();
    assert_eq!(
        gang_of(&pending[0]),
        Some((GangKind::Coscheduling, "g".to_string()))
    );
    let groups = [PodGroup {
        kind: GangKind::Coscheduling,
        namespace: "ml".into(),
        name: "g".into(),
        min_member: 3,
        queue: None,
        says: None,
    }];
    let view = ClusterView {
        groups: &groups,
        ..view(&nodes, &storage, &pending)
    };
    let j = judge(&pending[0], view);
    let g = j.gang.expect("a gang");
    assert_eq!((g.pending, g.placeable_together), (3, 2));
    assert_eq!(g.satisfiable, Some(false));
    assert!(
        !j.placeable,
        "the pod fits alone, but its gang cannot start"
    );
    assert_eq!(g.unplaced.len(), 1);
}

#[test]
fn a_prefilter_rejection_parses_with_its_postfilter_tail() {
    // What kube-scheduler v1.37.2 writes when VolumeBinding's PreFilter rejects the pod: the
    // DynamicResources PostFilter finds no state and says `not found`, no `preemption:`.
    let (n, reasons) = parse_scheduler_message(
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found",
    )
    .unwrap();
    assert_eq!(n, 2);
    assert_eq!(
        reasons,
        [(
            "pod has unbound immediate PersistentVolumeClaims".to_string(),
            2
        )]
        .into()
    );
}

#[test]
fn preemption_would_evict_the_fewest_lower_priority_pods() {
    let running = |name: &str, node: &str, gpus: &str, priority: i32| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "batch"},
            "spec": {"nodeName": node, "priority": priority, "containers": [{"name": "c",
                "resources": {"requests": {"nvidia.com/gpu": gpus}}}]},
            "status": {"phase": "Running"}}))
        .unwrap()
    };
    // a: two low-priority 4-GPU pods; b: one low 8-GPU pod and nothing else. The pod needs
    // 8: b costs one victim, a two.
    let pods = vec![
        running("a-1", "a", "4", 0),
        running("a-2", "a", "4", 0),
        running("b-1", "b", "8", 0),
    ];
    let nodes = node_infos(&[node("a", "z1"), node("b", "z1")], &pods);
    let storage = Storage::default();
    let wants = |priority: i32, policy: Option<&str>| {
        let mut p = pod(
            "p",
            json!({"priority": priority, "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}),
        );
        p.spec.preemption_policy = policy.map(str::to_string);
        p
    };
    let j = judge(&wants(1000, None), view(&nodes, &storage, &[]));
    let p = j.preemption.expect("preemption helps");
    assert_eq!(p.node, "b");
    assert_eq!(p.victims, vec!["batch/b-1 (priority 0)"]);
    assert!(
        j.verdict
            .unwrap()
            .judgment
            .contains("preemption would help")
    );
    // Equal priority, or preemptionPolicy Never: no one is evicted for it.
    assert!(
        judge(&wants(0, None), view(&nodes, &storage, &[]))
            .preemption
            .is_none()
    );
    assert!(
        judge(&wants(1000, Some("Never")), view(&nodes, &storage, &[]))
            .preemption
            .is_none()
    );
}

#[test]
fn judging_every_pod_at_once_places_each_gang_once_with_the_same_answer() {
    let nodes = node_infos(&[node("a", "z1"), node("b", "z2")], &[]);
    let storage = Storage::default();
    let pending: Vec<Pod> = (0..4)
        .map(|i| {
            serde_json::from_value(json!({"metadata": {"name": format!("w-{i}"), "namespace": "ml",
                "annotations": {"scheduling.k8s.io/group-name": "g"}},
                "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]},
                "status": {"phase": "Pending"}}))
            .unwrap()
        })
        .collect();
    let pods: Vec<&Pod> = pending.iter().collect();
    let view = view(&nodes, &storage, &pending);
    let all = pending::judge_all(&pods, view);
    for (pod, together) in pods.iter().zip(&all) {
        let alone = judge(pod, view);
        assert_eq!(together.gang, alone.gang);
        assert_eq!(together.gang.as_ref().unwrap().placeable_together, 2);
    }
}

#[test]
fn a_gang_whose_pod_group_was_not_read_is_never_called_placeable() {
    let nodes = node_infos(&[node("a", "z1")], &[]);
    let storage = Storage::default();
    let p: Pod = serde_json::from_value(json!({"metadata": {"name": "w", "namespace": "ml",
        "labels": {"scheduling.x-k8s.io/pod-group": "g"}},
        "spec": {"containers": [{"name": "c"}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": []}}]},
        "status": {"phase": "Pending"}}))
    .unwrap();
    assert!(
        p.spec.volumes.is_empty(),
        "only the volumes a filter reads are kept"
    );
    let j = judge(&p, view(&nodes, &storage, &[]));
    assert!(!j.placeable);
    assert!(
        j.verdict
            .unwrap()
            .evidence
            .contains("its PodGroup (podgroups.scheduling.x-k8s.io) was not read")
    );
}
