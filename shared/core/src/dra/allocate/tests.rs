//! The allocator on the NVIDIA DRA driver's slice shape: whole GPUs and the MIG devices of
//! a third GPU, partitioned through shared counters, with the chart's two DeviceClasses.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::model::dra::{ResourceClaim, ResourceSlice};

const DRIVER: &str = "gpu.nvidia.com";

fn gpu(name: &str, product: &str, memory: &str, index: i64) -> Value {
    json!({"name": name,
        "attributes": {"type": {"string": "gpu"}, "productName": {"string": product},
            "index": {"int": index}, "cudaComputeCapability": {"version": "9.0.0"},
            "uuid": {"string": format!("GPU-{name}")}},
        "capacity": {"memory": {"value": memory}}})
}

fn mig(name: &str, profile: &str, memory: &str, parent: i64, share: &str) -> Value {
    json!({"name": name,
        "attributes": {"type": {"string": "mig"}, "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "profile": {"string": profile}, "parentIndex": {"int": parent}},
        "capacity": {"memory": {"value": memory}},
        "consumesCounters": [{"counterSet": "gpu-2-counters", "counters": {"memory": {"value": share}}}]})
}

/// Node n1: two whole H100s and three MIG devices of an A100 (two 3g.40gb and a 7g.80gb
/// that excludes them through the shared counter).
fn inventory(allocated: &[&str]) -> DraInventory {
    let slice: ResourceSlice =
        serde_json::from_value(json!({"spec": {"driver": DRIVER, "nodeName": "n1",
        "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "sharedCounters": [{"name": "gpu-2-counters", "counters": {"memory": {"value": "80Gi"}}}],
        "devices": [
            gpu("gpu-0", "NVIDIA H100 80GB HBM3", "80Gi", 0),
            gpu("gpu-1", "NVIDIA H100 80GB HBM3", "80Gi", 1),
            mig("gpu-2-mig-3g-0", "3g.40gb", "40Gi", 2, "40Gi"),
            mig("gpu-2-mig-3g-1", "3g.40gb", "40Gi", 2, "40Gi"),
            mig("gpu-2-mig-7g", "7g.80gb", "80Gi", 2, "80Gi"),
        ]}}))
        .unwrap();
    let class = |name: &str, kind: &str| {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression":
            format!("device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'")}}]}}))
        .unwrap()
    };
    let mut inventory = DraInventory::new(
        vec![slice],
        vec![
            class("gpu.nvidia.com", "gpu"),
            class("mig.nvidia.com", "mig"),
        ],
    );
    for device in allocated {
        let claim: ResourceClaim =
            serde_json::from_value(json!({"status": {"allocation": {"devices": {"results": [
            {"request": "r", "driver": DRIVER, "pool": "n1", "device": device}]}}}}))
            .unwrap();
        inventory.add_claim(&claim);
    }
    inventory
}

fn claim(spec: Value) -> ResourceClaim {
    serde_json::from_value(
        json!({"metadata": {"name": "c", "namespace": "ml"}, "spec": {"devices": spec}}),
    )
    .unwrap()
}

fn on_n1(inventory: &DraInventory, claims: &[ResourceClaim]) -> Allocation {
    let labels = BTreeMap::new();
    let specs: Vec<ClaimSpec<'_>> = claims
        .iter()
        .map(|c| ClaimSpec {
            name: &c.metadata.name,
            requests: &c.spec.devices.requests,
            constraints: &c.spec.devices.constraints,
        })
        .collect();
    allocate(
        inventory,
        NodeFacts {
            name: "n1",
            labels: &labels,
        },
        &specs,
    )
}

fn exactly(class: &str, count: i64, selectors: &[&str]) -> Value {
    json!({"deviceClassName": class, "count": count,
        "selectors": selectors.iter().map(|e| json!({"cel": {"expression": e}})).collect::<Vec<_>>()})
}

#[test]
fn the_gpu_class_counts_whole_gpus_apart_from_mig_devices() {
    let inv = inventory(&[]);
    let two =
        claim(json!({"requests": [{"name": "gpu", "exactly": exactly("gpu.nvidia.com", 2, &[])}]}));
    assert_eq!(on_n1(&inv, &[two]), Allocation::Fits);
    let three =
        claim(json!({"requests": [{"name": "gpu", "exactly": exactly("gpu.nvidia.com", 3, &[])}]}));
    assert_eq!(
        on_n1(&inv, &[three]),
        Allocation::Short("needs 3 of class gpu.nvidia.com, 2 free here".into()),
        "five devices of the driver, two of them whole GPUs"
    );
    let migs =
        claim(json!({"requests": [{"name": "mig", "exactly": exactly("mig.nvidia.com", 2, &[])}]}));
    assert_eq!(
        on_n1(&inv, &[migs]),
        Allocation::Fits,
        "the two 3g.40gb halves"
    );
    let migs =
        claim(json!({"requests": [{"name": "mig", "exactly": exactly("mig.nvidia.com", 3, &[])}]}));
    assert!(
        matches!(on_n1(&inv, &[migs]), Allocation::Short(_)),
        "the 7g.80gb excludes both halves through the shared counter"
    );
}

#[test]
fn claims_select_by_product_memory_and_compute_capability() {
    let h100 = "device.attributes['gpu.nvidia.com'].productName.matches('H100')";
    let two_h100 = claim(
        json!({"requests": [{"name": "gpu", "exactly": exactly("gpu.nvidia.com", 2, &[h100])}]}),
    );
    assert_eq!(
        on_n1(&inventory(&[]), std::slice::from_ref(&two_h100)),
        Allocation::Fits
    );
    assert_eq!(
        on_n1(&inventory(&["gpu-0", "gpu-1"]), &[two_h100]),
        Allocation::Short(
            "needs 2 of class gpu.nvidia.com matching claim c's selectors, 0 free here".into()
        )
    );
    let big = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0";
    let sm90 =
        "device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('9.0.0')) >= 0";
    let c = claim(
        json!({"requests": [{"name": "gpu", "exactly": exactly("gpu.nvidia.com", 1, &[big, sm90])}]}),
    );
    assert_eq!(on_n1(&inventory(&["gpu-0"]), &[c]), Allocation::Fits);
}

#[test]
fn first_available_takes_the_first_alternative_that_fits() {
    let alternatives = json!({"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu.nvidia.com", "count": 2,
            "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.matches('H100')"}}]},
        {"name": "a100", "deviceClassName": "mig.nvidia.com", "count": 1,
            "selectors": [{"cel": {"expression": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"}}]}]}]});
    let c = claim(alternatives);
    assert_eq!(
        on_n1(&inventory(&["gpu-0"]), std::slice::from_ref(&c)),
        Allocation::Fits,
        "the 7g.80gb"
    );
    let Allocation::Short(why) = on_n1(&inventory(&["gpu-0", "gpu-2-mig-3g-0"]), &[c]) else {
        panic!("neither alternative fits");
    };
    assert_eq!(
        why,
        "needs 2 of class gpu.nvidia.com matching claim c's selectors, 1 free here, or 1 of class mig.nvidia.com matching claim c's selectors, 0 free here"
    );
}

#[test]
fn match_attribute_keeps_devices_of_one_value_together() {
    // Two requests for the same product: both H100s share it; an H100 and a MIG device of
    // the A100 do not.
    let same = json!({"requests": [
            {"name": "a", "exactly": exactly("gpu.nvidia.com", 1, &[])},
            {"name": "b", "exactly": exactly("mig.nvidia.com", 1, &[])}],
        "constraints": [{"requests": ["a", "b"], "matchAttribute": "gpu.nvidia.com/productName"}]});
    assert_eq!(
        on_n1(&inventory(&[]), &[claim(same)]),
        Allocation::Short("no combination of the free devices satisfies matchAttribute gpu.nvidia.com/productName".into())
    );
    let gpus = json!({"requests": [{"name": "a", "exactly": exactly("gpu.nvidia.com", 2, &[])}],
        "constraints": [{"matchAttribute": "gpu.nvidia.com/productName"}]});
    assert_eq!(on_n1(&inventory(&[]), &[claim(gpus)]), Allocation::Fits);
    let distinct = json!({"requests": [{"name": "a", "exactly": exactly("gpu.nvidia.com", 2, &[])}],
        "constraints": [{"distinctAttribute": "gpu.nvidia.com/productName"}]});
    assert!(matches!(
        on_n1(&inventory(&[]), &[claim(distinct)]),
        Allocation::Short(_)
    ));
}

#[test]
fn all_mode_admin_access_and_several_claims() {
    let all = claim(
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]}),
    );
    assert_eq!(
        on_n1(&inventory(&[]), std::slice::from_ref(&all)),
        Allocation::Fits
    );
    assert_eq!(
        on_n1(&inventory(&["gpu-1"]), std::slice::from_ref(&all)),
        Allocation::Short("needs all devices of class gpu.nvidia.com, 1 free here".into())
    );
    let admin = claim(
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2, "adminAccess": true}}]}),
    );
    assert_eq!(
        on_n1(&inventory(&["gpu-0", "gpu-1"]), &[admin]),
        Allocation::Fits,
        "monitoring reaches GPUs in use"
    );
    // Two claims of one GPU each take both; a third finds none.
    let one = || {
        claim(json!({"requests": [{"name": "gpu", "exactly": exactly("gpu.nvidia.com", 1, &[])}]}))
    };
    assert_eq!(on_n1(&inventory(&[]), &[one(), one()]), Allocation::Fits);
    assert_eq!(
        on_n1(&inventory(&[]), &[one(), one(), one()]),
        Allocation::Short("needs 3 of class gpu.nvidia.com, 2 free here".into())
    );
}

#[test]
fn a_runtime_error_stops_allocation_and_an_unknown_class_fails() {
    let missing = claim(
        json!({"requests": [{"name": "gpu", "exactly": exactly("gpu.nvidia.com", 1,
        &["device.attributes['gpu.nvidia.com'].nosuch == 'x'"])}]}),
    );
    let Allocation::Failed(why) = on_n1(&inventory(&[]), &[missing]) else {
        panic!("a CEL runtime error is not a fit");
    };
    assert!(why.contains("CEL runtime error"), "{why}");
    let unknown = claim(
        json!({"requests": [{"name": "gpu", "exactly": exactly("nosuch.example.com", 1, &[])}]}),
    );
    assert_eq!(
        on_n1(&inventory(&[]), &[unknown]),
        Allocation::Failed(
            "claim c, request gpu: device class nosuch.example.com does not exist".into()
        )
    );
}
