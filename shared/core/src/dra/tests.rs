//! Unit tests of the parent module.

use super::*;
use crate::model::dra::{DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice};
use serde_json::json;
use std::collections::BTreeMap;

fn slice(v: serde_json::Value) -> ResourceSlice {
    serde_json::from_value(v).unwrap()
}

fn facts<'a>(name: &'a str, labels: &'a BTreeMap<String, String>) -> NodeFacts<'a> {
    NodeFacts { name, labels }
}

#[test]
fn class_driver_reads_only_the_plain_driver_test() {
    let class = |e: &str| -> DeviceClass {
        serde_json::from_value(
            json!({"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": e}}]}}),
        )
        .unwrap()
    };
    assert_eq!(
        class("device.driver == \"gpu.example.com\"")
            .driver()
            .as_deref(),
        Some("gpu.example.com")
    );
    assert_eq!(
        class("device.driver=='gpu.example.com'")
            .driver()
            .as_deref(),
        Some("gpu.example.com")
    );
    assert_eq!(
        class("device.driver == \"a\" && device.attributes[\"x\"].y").driver(),
        None
    );
    assert_eq!(class("true").driver(), None);
}

#[test]
fn devices_allocated_free_and_older_pool_generations() {
    let slices = vec![
        slice(
            json!({"spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 2, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}),
        ),
        slice(
            json!({"spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "old-0"}, {"name": "old-1"}, {"name": "old-2"}]}}),
        ),
    ];
    let mut inv = DraInventory::new(slices, vec![]);
    let claim: ResourceClaim =
        serde_json::from_value(json!({"status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-1"}]}}}}))
        .unwrap();
    inv.add_claim(&claim);
    let labels = BTreeMap::new();
    assert_eq!(
        inv.node_devices(facts("n1", &labels)),
        vec![DriverDevices {
            driver: "gpu.example.com".into(),
            classes: vec![],
            pools: vec!["n1".into()],
            total: 2,
            allocated: 1,
            free: 1,
            tainted: 0,
            partitionable: false,
            accelerators: true
        }]
    );
    assert!(inv.node_devices(facts("n2", &labels)).is_empty());
}

#[test]
fn partitions_are_free_only_while_their_shared_counters_last() {
    // One 40 GiB GPU published whole and as two 20 GiB partitions.
    let s = slice(
        json!({"spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}],
        "devices": [
            {"name": "gpu-0", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]},
            {"name": "gpu-0-a", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "20Gi"}}}]},
            {"name": "gpu-0-b", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "20Gi"}}}]}
        ]}}),
    );
    let mut inv = DraInventory::new(vec![s], vec![]);
    let labels = BTreeMap::new();
    assert_eq!(
        inv.node_devices(facts("n1", &labels))[0].free,
        2,
        "the whole GPU and its halves exclude each other: at most two devices at once"
    );
    let claim: ResourceClaim =
        serde_json::from_value(json!({"status": {"allocation": {"devices": {"results": [
            {"request": "r", "driver": "gpu.example.com", "pool": "p", "device": "gpu-0-a"}]}}}}))
        .unwrap();
    inv.add_claim(&claim);
    let d = &inv.node_devices(facts("n1", &labels))[0];
    assert_eq!(
        (d.total, d.allocated, d.free, d.partitionable),
        (3, 1, 1, true),
        "the whole GPU no longer fits; the other half does"
    );
}

#[test]
fn admin_access_shared_and_tainted_devices_and_incomplete_pools() {
    let s = slice(
        json!({"spec": {"driver": "d", "nodeName": "n1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "watched"}, {"name": "shared", "allowMultipleAllocations": true},
                        {"name": "tainted", "taints": [{"key": "unhealthy", "effect": "NoSchedule"}]}, {"name": "plain"}]}}),
    );
    // A pool that says it has two slices and shows one: the scheduler skips it.
    let incomplete = slice(
        json!({"spec": {"driver": "d", "nodeName": "n1", "pool": {"name": "half", "generation": 1, "resourceSliceCount": 2},
            "devices": [{"name": "x"}]}}),
    );
    let mut inv = DraInventory::new(vec![s, incomplete], vec![]);
    inv.add_claim(
        &serde_json::from_value(json!({"status": {"allocation": {"devices": {"results": [
            {"request": "r", "driver": "d", "pool": "p", "device": "watched", "adminAccess": true},
            {"request": "r", "driver": "d", "pool": "p", "device": "shared"}]}}}}))
        .unwrap(),
    );
    let labels = BTreeMap::new();
    let d = &inv.node_devices(facts("n1", &labels))[0];
    assert_eq!(
        (d.total, d.allocated, d.free, d.pools.clone()),
        (4, 1, 3, vec!["p".to_string()]),
        "admin access takes nothing; a shared device stays free; a tainted one is not free"
    );
}

#[test]
fn a_device_many_nodes_reach_is_one_device_in_totals() {
    let s = slice(
        json!({"spec": {"driver": "net.example.com", "allNodes": true,
            "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "a"}, {"name": "b"}]}}),
    );
    let inv = DraInventory::new(vec![s], vec![]);
    let labels = BTreeMap::new();
    assert_eq!(inv.node_devices(facts("n1", &labels))[0].total, 2);
    assert_eq!(inv.node_devices(facts("n2", &labels))[0].total, 2);
    assert_eq!(
        inv.devices_over([facts("n1", &labels), facts("n2", &labels)])[0].total,
        2
    );
}

#[test]
fn allocation_mode_all_needs_every_device_of_the_node() {
    let s = slice(
        json!({"spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}),
    );
    let class: DeviceClass = serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}})).unwrap();
    let mut inv = DraInventory::new(vec![s], vec![class]);
    let all = claim_of(json!({"metadata": {"name": "all", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "All"}}]}}}));
    let refs = vec![PodClaimRef {
        name: "gpus".into(),
        resource_claim_name: Some("all".into()),
        resource_claim_template_name: None,
    }];
    let labels = BTreeMap::new();
    let (needs, _) = ClaimNeeds::of(
        "ml",
        &refs,
        &[],
        &BTreeMap::new(),
        std::slice::from_ref(&all),
        &inv,
    );
    assert_eq!(
        needs.check(facts("n1", &labels), &BTreeMap::new(), &inv),
        Ok(())
    );
    assert!(
        needs
            .check(facts("n2", &labels), &BTreeMap::new(), &inv)
            .is_err(),
        "no device there"
    );
    inv.add_claim(
        &serde_json::from_value(json!({"status": {"allocation": {"devices": {"results": [
            {"request": "r", "driver": "gpu.example.com", "pool": "p", "device": "gpu-0"}]}}}}))
        .unwrap(),
    );
    assert_eq!(
        needs.check(facts("n1", &labels), &BTreeMap::new(), &inv),
        Err(DraFailure::CannotAllocate {
            detail: "needs all devices of class gpu.example.com, 1 free here".into()
        })
    );
}

#[test]
fn node_selector_slices_reach_the_nodes_they_select() {
    let s = slice(
        json!({"spec": {"driver": "net.example.com", "pool": {"name": "rack-1", "generation": 1, "resourceSliceCount": 1},
            "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["1"]}]}]},
            "devices": [{"name": "nic-0"}]}}),
    );
    let inv = DraInventory::new(vec![s], vec![]);
    let rack1: BTreeMap<String, String> = [("rack".to_string(), "1".to_string())].into();
    let other = BTreeMap::new();
    assert_eq!(inv.node_devices(facts("a", &rack1)).len(), 1);
    assert!(inv.node_devices(facts("b", &other)).is_empty());
}

fn claim_of(v: serde_json::Value) -> ResourceClaim {
    serde_json::from_value(v).unwrap()
}

#[test]
fn claim_needs_check_devices_allocations_and_say_what_they_cannot_model() {
    let slice = slice(
        json!({"spec": {"driver": "gpu.example.com", "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}),
    );
    let simple: DeviceClass = serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}})).unwrap();
    let cel: DeviceClass = serde_json::from_value(json!({"metadata": {"name": "big-gpu"},
            "spec": {"selectors": [{"cel": {"expression": "device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0"}}]}})).unwrap();
    let claims = vec![
        claim_of(json!({"metadata": {"name": "two", "namespace": "ml"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}]}}})),
        claim_of(json!({"metadata": {"name": "three", "namespace": "ml"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 3}}]}}})),
        claim_of(json!({"metadata": {"name": "elsewhere", "namespace": "ml"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
                "status": {"allocation": {"devices": {"results": []},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}})),
        claim_of(json!({"metadata": {"name": "big", "namespace": "ml"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "big-gpu"}}]}}})),
    ];
    let inv = DraInventory::new(vec![slice], vec![simple, cel]);
    let labels = BTreeMap::new();
    let n1 = facts("n1", &labels);
    let refs = |name: &str| {
        vec![PodClaimRef {
            name: "gpus".into(),
            resource_claim_name: Some(name.into()),
            resource_claim_template_name: None,
        }]
    };
    let needs =
        |name: &str| ClaimNeeds::of("ml", &refs(name), &[], &BTreeMap::new(), &claims, &inv);
    let (two, states) = needs("two");
    assert_eq!(states[0].state, "pending");
    assert_eq!(states[0].requests, vec!["gpu: 2 x gpu.example.com"]);
    assert_eq!(two.check(n1, &BTreeMap::new(), &inv), Ok(()));
    let (three, _) = needs("three");
    assert_eq!(
        three.check(n1, &BTreeMap::new(), &inv),
        Err(DraFailure::CannotAllocate {
            detail: "needs 3 of class gpu.example.com, 2 free here".into()
        })
    );
    let (elsewhere, _) = needs("elsewhere");
    assert_eq!(
        elsewhere.check(n1, &BTreeMap::new(), &inv),
        Err(DraFailure::NotAvailable {
            claim: "elsewhere".into()
        })
    );
    // The class reads a capacity these devices do not publish: a CEL runtime error, which
    // stops the scheduler's allocation on the node.
    let (big, _) = needs("big");
    assert!(big.unmodelled.is_empty(), "{:?}", big.unmodelled);
    let Err(DraFailure::CannotAllocate { detail }) = big.check(n1, &BTreeMap::new(), &inv) else {
        panic!("a runtime error must not fit");
    };
    assert!(
        detail.starts_with(
            "class big-gpu: selector #0 on device gpu.example.com/n1/gpu-0: CEL runtime error"
        ),
        "{detail}"
    );
    let template = vec![PodClaimRef {
        name: "gpus".into(),
        resource_claim_name: None,
        resource_claim_template_name: Some("gpu-template".into()),
    }];
    let (missing, states) = ClaimNeeds::of("ml", &template, &[], &BTreeMap::new(), &claims, &inv);
    assert_eq!(states[0].state, "missing");
    assert_eq!(
        missing.missing[0].why,
        ClaimAbsence::NotGenerated {
            template: "gpu-template".into()
        }
    );
    assert!(
        missing.missing[0]
            .to_string()
            .contains("no ResourceClaim has been generated from template gpu-template yet")
    );
    // Not found because placekit may not list claims: said as unreadable, not absent.
    let named = [PodClaimRef {
        name: "gpu".into(),
        resource_claim_name: Some("gpu-claim".into()),
        resource_claim_template_name: None,
    }];
    let (needs, _) = ClaimNeeds::of("ml", &named, &[], &BTreeMap::new(), &claims, &inv);
    assert_eq!(
        needs.missing[0].to_string(),
        "gpu: ResourceClaim ml/gpu-claim does not exist"
    );
    assert_eq!(
        needs.missing[0].unreadable_text(),
        "gpu: ResourceClaim ml/gpu-claim could not be read (placekit may not list ResourceClaims)"
    );
}

#[test]
fn classes_serve_their_extended_resource_and_the_implicit_one() {
    let class: DeviceClass = serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"}, "spec": {"extendedResourceName": "example.com/gpu"}})).unwrap();
    assert!(class.serves("example.com/gpu"));
    assert!(class.serves("deviceclass.resource.kubernetes.io/gpu.example.com"));
    assert!(!class.serves("nvidia.com/gpu"));
}

#[test]
fn device_taint_rules_keep_devices_from_claims_that_do_not_tolerate_them() {
    let s = slice(
        json!({"spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}),
    );
    let class: DeviceClass = serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}})).unwrap();
    let rule = |v: serde_json::Value| -> DeviceTaintRule { serde_json::from_value(v).unwrap() };
    let mut inv = DraInventory::new(vec![s], vec![class]);
    inv.apply_taint_rules(vec![
        rule(json!({"metadata": {"name": "gpu0-broken"}, "spec": {
            "deviceSelector": {"driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"},
            "taint": {"key": "example.com/unhealthy", "value": "ecc", "effect": "NoSchedule"}}})),
        rule(json!({"metadata": {"name": "typo"}, "spec": {
            "deviceSelector": {"driver": "gpu.example.org"},
            "taint": {"key": "k", "effect": "NoExecute"}}})),
        rule(json!({"metadata": {"name": "info"}, "spec": {
            "deviceSelector": {}, "taint": {"key": "k", "effect": "None"}}})),
        rule(json!({"metadata": {"name": "no-selector"}, "spec": {
            "taint": {"key": "k", "effect": "NoSchedule"}}})),
    ]);
    let labels = BTreeMap::new();
    let n1 = facts("n1", &labels);
    let d = &inv.node_devices(n1)[0];
    assert_eq!((d.total, d.free, d.tainted), (2, 1, 1));
    let notes: Vec<String> = inv
        .taint_rule_effects()
        .iter()
        .filter_map(taint_rule_note)
        .collect();
    assert_eq!(
        notes,
        vec![
            "DeviceTaintRule gpu0-broken (example.com/unhealthy=ecc:NoSchedule) taints 1 device: not counted as free, only claims that tolerate it get them",
            "DeviceTaintRule no-selector (k:NoSchedule) selects no published device: check its deviceSelector",
            "DeviceTaintRule typo (k:NoExecute) selects no published device: check its deviceSelector",
        ]
    );
    let claims = vec![
        claim_of(json!({"metadata": {"name": "plain", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}]}}})),
        claim_of(json!({"metadata": {"name": "tolerant", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2,
                "tolerations": [{"key": "example.com/unhealthy", "operator": "Equal", "value": "ecc", "effect": "NoSchedule"}]}}]}}})),
        claim_of(
            json!({"metadata": {"name": "wrong-value", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2,
                "tolerations": [{"key": "example.com/unhealthy", "value": "thermal"}]}}]}}}),
        ),
        claim_of(
            json!({"metadata": {"name": "everything", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2,
                "tolerations": [{"operator": "Exists"}]}}]}}}),
        ),
    ];
    let check = |name: &str| {
        let refs = vec![PodClaimRef {
            name: "gpus".into(),
            resource_claim_name: Some(name.into()),
            resource_claim_template_name: None,
        }];
        let (needs, _) = ClaimNeeds::of("ml", &refs, &[], &BTreeMap::new(), &claims, &inv);
        needs.check(n1, &BTreeMap::new(), &inv)
    };
    let refused = Err(DraFailure::CannotAllocate {
        detail: "needs 2 of class gpu.example.com, 1 free here; tainted and not tolerated: gpu-0: example.com/unhealthy=ecc:NoSchedule (DeviceTaintRule gpu0-broken)".into(),
    });
    assert_eq!(check("plain"), refused);
    assert_eq!(check("tolerant"), Ok(()));
    assert_eq!(check("wrong-value"), refused, "Equal compares the value");
    assert_eq!(
        check("everything"),
        Ok(()),
        "Exists with no key tolerates all"
    );
}

#[test]
fn v1beta1_slices_and_claims_are_read_in_v1s_shape() {
    // resource.k8s.io/v1beta1 (Kubernetes 1.32): device fields under `basic`, request
    // fields inline.
    let s: ResourceSlice = serde_json::from_value(json!({"spec": {"driver": "gpu.example.com", "nodeName": "n1",
        "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "LATEST-GPU-MODEL"}},
                                                 "capacity": {"memory": {"value": "80Gi"}}}},
                    {"name": "gpu-1", "basic": {"attributes": {"model": {"string": "OLD-GPU-MODEL"}}}}]}}))
    .unwrap();
    let class: DeviceClass =
        serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}))
        .unwrap();
    let inv = DraInventory::new(vec![s.into_current()], vec![class]);
    let claim = claim_of(json!({"metadata": {"name": "latest", "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com", "count": 1,
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'"}}]}]}}}))
    .into_current();
    let exact = claim.spec.devices.requests[0].exactly.as_ref().unwrap();
    assert_eq!(
        (exact.device_class_name.as_str(), exact.wanted()),
        ("gpu.example.com", 1)
    );
    let refs = vec![PodClaimRef {
        name: "gpu".into(),
        resource_claim_name: Some("latest".into()),
        resource_claim_template_name: None,
    }];
    let labels = BTreeMap::new();
    let (needs, _) = ClaimNeeds::of(
        "ml",
        &refs,
        &[],
        &BTreeMap::new(),
        std::slice::from_ref(&claim),
        &inv,
    );
    assert_eq!(
        needs.check(facts("n1", &labels), &BTreeMap::new(), &inv),
        Ok(())
    );
    let two = claim_of(json!({"metadata": {"name": "latest", "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2,
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'"}}]}]}}}))
    .into_current();
    let (needs, _) = ClaimNeeds::of(
        "ml",
        &refs,
        &[],
        &BTreeMap::new(),
        std::slice::from_ref(&two),
        &inv,
    );
    assert!(
        needs
            .check(facts("n1", &labels), &BTreeMap::new(), &inv)
            .is_err(),
        "one device has the model"
    );
}
