use std::collections::BTreeMap;

use super::*;

fn attrs(pairs: &[(&str, AttributeValue)]) -> BTreeMap<String, AttributeValue> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn caps(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// An H100 as the NVIDIA DRA driver publishes it (unqualified names in the driver's domain).
fn h100() -> (BTreeMap<String, AttributeValue>, BTreeMap<String, String>) {
    (
        attrs(&[
            ("type", AttributeValue::String("gpu".into())),
            (
                "productName",
                AttributeValue::String("NVIDIA H100 80GB HBM3".into()),
            ),
            ("architecture", AttributeValue::String("Hopper".into())),
            (
                "cudaComputeCapability",
                AttributeValue::Version("9.0.0".into()),
            ),
            ("driverVersion", AttributeValue::Version("570.124.6".into())),
            ("index", AttributeValue::Int(0)),
            (
                "resource.kubernetes.io/pcieRoot",
                AttributeValue::String("pci0000:00".into()),
            ),
        ]),
        caps(&[("memory", "80Gi")]),
    )
}

fn eval(expression: &str) -> Result<bool, SelectorError> {
    let (attributes, capacity) = h100();
    Selector::compile(expression)?.matches(DeviceFacts {
        driver: "gpu.nvidia.com",
        attributes: &attributes,
        capacity: &capacity,
        allow_multiple_allocations: false,
    })
}

#[test]
fn the_nvidia_charts_classes_and_claims_evaluate() {
    for (expression, want) in [
        ("device.driver == 'gpu.nvidia.com'", true),
        (
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
            true,
        ),
        (
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
            false,
        ),
        (
            "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'",
            true,
        ),
        (
            "device.attributes['gpu.nvidia.com'].productName.matches('H100')",
            true,
        ),
        (
            "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('a100')",
            false,
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0",
            true,
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))",
            true,
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory == quantity('80Gi')",
            true,
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory == quantity('85899345920')",
            true,
        ),
        (
            "device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('8.0.0'))",
            true,
        ),
        (
            "device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('9.0', true)) == 0",
            true,
        ),
        (
            "device.attributes['gpu.nvidia.com'].driverVersion.major() >= 550",
            true,
        ),
        ("device.attributes['gpu.nvidia.com'].index in [0, 1]", true),
        (
            "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:00'",
            true,
        ),
        (
            "cel.bind(gpu, device.attributes['gpu.nvidia.com'], gpu.type == 'gpu' && gpu.architecture == 'Hopper')",
            true,
        ),
        ("has(device.attributes['gpu.nvidia.com'].type)", true),
        ("has(device.attributes['dra.example.com'].type)", false),
        ("!has(device.attributes['gpu.nvidia.com'].parentUUID)", true),
        ("device.allowMultipleAllocations", false),
        ("sign(device.capacity['gpu.nvidia.com'].memory) == 1", true),
        (
            "sign(quantity('-1m')) == -1 && sign(quantity('0')) == 0",
            true,
        ),
    ] {
        assert_eq!(eval(expression), Ok(want), "{expression}");
    }
}

#[test]
fn a_missing_attribute_is_a_runtime_error_unless_short_circuited() {
    assert!(matches!(
        eval("device.attributes['gpu.nvidia.com'].nosuch == 'x'"),
        Err(SelectorError::Runtime(_))
    ));
    assert_eq!(
        eval("device.driver == 'other' && device.attributes['gpu.nvidia.com'].nosuch == 'x'"),
        Ok(false)
    );
    // A domain the device lacks is an empty map, so only the attribute's lookup fails.
    assert!(matches!(
        eval("device.attributes['amd.com'].family == 'MI300X'"),
        Err(SelectorError::Runtime(_))
    ));
    assert!(matches!(
        eval("device.attributes['gpu.nvidia.com'].index > 'a'"),
        Err(SelectorError::Runtime(_))
    ));
    assert!(matches!(
        eval("quantity('not a quantity') == quantity('1')"),
        Err(SelectorError::Runtime(_))
    ));
}

#[test]
fn what_placekit_does_not_implement_is_said_so() {
    assert!(matches!(
        eval("ip('10.0.0.1').family() == 4"),
        Err(SelectorError::Unsupported(_))
    ));
    assert!(matches!(
        eval("device.driver =="),
        Err(SelectorError::Unsupported(_))
    ));
}

#[test]
fn semantic_versions_order_by_precedence() {
    let v = |s: &str| Semver::parse(s, false).unwrap();
    assert!(v("1.0.0-alpha").precedence(&v("1.0.0-alpha.1")).is_lt());
    assert!(
        v("1.0.0-alpha.1")
            .precedence(&v("1.0.0-alpha.beta"))
            .is_lt()
    );
    assert!(v("1.0.0-beta.11").precedence(&v("1.0.0-rc.1")).is_lt());
    assert!(v("1.0.0-rc.1").precedence(&v("1.0.0")).is_lt());
    assert!(v("1.0.0+build").precedence(&v("1.0.0")).is_eq());
    assert!(Semver::parse("01.0.0", false).is_none());
    assert!(Semver::parse("1.0", false).is_none());
    assert_eq!(Semver::parse("v1.2", true), Some(v("1.2.0")));
}
