//! The DRA objects (`resource.k8s.io/v1`) as placekit reads them: ResourceSlices,
//! DeviceClasses and ResourceClaims, with the fields the scheduler's counting needs,
//! deserialised straight from the list pages. [`crate::dra`] counts them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::NodeSelector;
use serde::Deserialize;

/// The API group/version DRA is served as (GA, Kubernetes 1.34+).
pub const API: &str = "/apis/resource.k8s.io/v1";

/// The versions of `resource.k8s.io` placekit reads, newest first: v1 (1.34+), v1beta2
/// (1.33, the same shape) and v1beta1 (1.32, devices under `basic` and requests without
/// `exactly`), converted to v1's shape as they are read.
pub const VERSIONS: [&str; 3] = ["v1", "v1beta2", "v1beta1"];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectName {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    /// RFC 3339, which orders as text.
    #[serde(default)]
    pub creation_timestamp: Option<String>,
}

/// A ResourceSlice: one driver's devices in one pool, for one node or a set of nodes.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourceSlice {
    #[serde(default)]
    pub metadata: ObjectName,
    #[serde(default)]
    pub spec: ResourceSliceSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSliceSpec {
    #[serde(default)]
    pub driver: String,
    #[serde(default)]
    pub pool: Pool,
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub node_selector: Option<NodeSelector>,
    #[serde(default)]
    pub all_nodes: Option<bool>,
    #[serde(default)]
    pub per_device_node_selection: Option<bool>,
    #[serde(default)]
    pub devices: Vec<Device>,
    #[serde(default)]
    pub shared_counters: Vec<CounterSet>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pool {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub generation: i64,
    #[serde(default)]
    pub resource_slice_count: i64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub attributes: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub capacity: BTreeMap<String, CounterValue>,
    #[serde(default)]
    pub consumes_counters: Vec<CounterConsumption>,
    /// With `perDeviceNodeSelection`: the node this device is on.
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub all_nodes: Option<bool>,
    #[serde(default)]
    pub node_selector: Option<NodeSelector>,
    /// The device may be allocated to several claims at once (shared).
    #[serde(default)]
    pub allow_multiple_allocations: Option<bool>,
    /// Device taints: a NoSchedule or NoExecute one keeps claims that do not tolerate it
    /// away (placekit counts such a device as not free).
    #[serde(default)]
    pub taints: Vec<DeviceTaint>,
    /// `resource.k8s.io/v1beta1`: the device's fields, one level down.
    #[serde(default)]
    pub basic: Option<Box<Device>>,
}

impl Device {
    /// The device in v1's shape: a v1beta1 `basic` device's fields moved up.
    pub fn into_current(self) -> Device {
        match self.basic {
            Some(basic) => Device {
                name: self.name,
                basic: None,
                ..*basic
            },
            None => self,
        }
    }
}

impl ResourceSlice {
    /// The slice in v1's shape (see [`Device::into_current`]).
    pub fn into_current(mut self) -> ResourceSlice {
        self.spec.devices = self
            .spec
            .devices
            .into_iter()
            .map(Device::into_current)
            .collect();
        self
    }
}

/// A device taint, published in a slice or put on by a [`DeviceTaintRule`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct DeviceTaint {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub effect: String,
}

impl DeviceTaint {
    /// NoSchedule and NoExecute keep claims that do not tolerate them off the device;
    /// `None` is informational.
    pub fn keeps_claims_off(&self) -> bool {
        self.effect == "NoSchedule" || self.effect == "NoExecute"
    }
}

impl std::fmt::Display for DeviceTaint {
    /// kubectl's taint notation: `key=value:Effect`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.value.as_deref().filter(|v| !v.is_empty()) {
            Some(v) => write!(f, "{}={v}:{}", self.key, self.effect),
            None => write!(f, "{}:{}", self.key, self.effect),
        }
    }
}

/// A request's toleration of device taints (`exactly.tolerations`), matched as the
/// scheduler matches them: key (empty with `Exists` = every key), value under `Equal`, and
/// effect (empty = every effect).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct DeviceToleration {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub operator: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub effect: Option<String>,
}

impl DeviceToleration {
    pub fn tolerates(&self, taint: &DeviceTaint) -> bool {
        let effect_ok = self
            .effect
            .as_deref()
            .is_none_or(|e| e.is_empty() || e == taint.effect);
        let exists = self.operator.as_deref() == Some("Exists");
        // An empty key is only valid with `Exists` (the API server checks).
        let key_ok = self.key.is_empty() || self.key == taint.key;
        let value_ok =
            exists || self.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("");
        effect_ok && key_ok && value_ok
    }
}

/// A DeviceTaintRule: one taint on every device its selector picks (an admin marking a
/// broken GPU, or a driver draining a pool).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DeviceTaintRule {
    #[serde(default)]
    pub metadata: ObjectName,
    #[serde(default)]
    pub spec: DeviceTaintRuleSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintRuleSpec {
    /// Absent, no device; present, the devices its fields name (a field left out: any).
    #[serde(default)]
    pub device_selector: Option<DeviceTaintSelector>,
    #[serde(default)]
    pub taint: DeviceTaint,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct DeviceTaintSelector {
    #[serde(default)]
    pub driver: Option<String>,
    #[serde(default)]
    pub pool: Option<String>,
    #[serde(default)]
    pub device: Option<String>,
}

impl DeviceTaintSelector {
    pub fn selects(&self, driver: &str, pool: &str, device: &str) -> bool {
        let matches = |want: &Option<String>, have: &str| {
            want.as_deref().is_none_or(|w| w.is_empty() || w == have)
        };
        matches(&self.driver, driver) && matches(&self.pool, pool) && matches(&self.device, device)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CounterValue {
    #[serde(default)]
    pub value: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CounterSet {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub counters: BTreeMap<String, CounterValue>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterConsumption {
    #[serde(default)]
    pub counter_set: String,
    #[serde(default)]
    pub counters: BTreeMap<String, CounterValue>,
}

/// A DeviceClass: which devices a request of the class may get, and the extended resource
/// it serves (a pod's plain `example.com/gpu: 1` allocated from DRA devices).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DeviceClass {
    #[serde(default)]
    pub metadata: ObjectName,
    #[serde(default)]
    pub spec: DeviceClassSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassSpec {
    #[serde(default)]
    pub selectors: Vec<DeviceSelector>,
    #[serde(default)]
    pub extended_resource_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct DeviceSelector {
    #[serde(default)]
    pub cel: Option<CelSelector>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct CelSelector {
    #[serde(default)]
    pub expression: String,
}

/// The implicit extended resource every DeviceClass serves:
/// `deviceclass.resource.kubernetes.io/<class name>`.
pub const IMPLICIT_EXTENDED_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

impl DeviceClass {
    /// The driver every device of this class comes from, when the class's selectors are
    /// exactly one `device.driver == "NAME"` (the form DRA drivers ship). `None` when the
    /// selectors say more than that (placekit evaluates no other CEL).
    pub fn driver(&self) -> Option<String> {
        match self.spec.selectors.as_slice() {
            [DeviceSelector { cel: Some(cel) }] => driver_of_expression(&cel.expression),
            _ => None,
        }
    }

    /// Whether a pod's request of `resource` is served by this class.
    pub fn serves(&self, resource: &str) -> bool {
        self.spec.extended_resource_name.as_deref() == Some(resource)
            || resource.strip_prefix(IMPLICIT_EXTENDED_PREFIX) == Some(&self.metadata.name)
    }
}

/// `device.driver == "gpu.example.com"` (either quote, any spacing) -> the driver.
fn driver_of_expression(expression: &str) -> Option<String> {
    let rest = expression
        .trim()
        .strip_prefix("device.driver")?
        .trim_start();
    let rest = rest.strip_prefix("==")?.trim();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = rest.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.is_empty() && !inner.contains(quote) && !inner.contains('\\'))
        .then(|| inner.to_string())
}

/// A ResourceClaim: the requests, and what the scheduler allocated.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourceClaim {
    #[serde(default)]
    pub metadata: ObjectName,
    #[serde(default)]
    pub spec: ResourceClaimSpec,
    #[serde(default)]
    pub status: ResourceClaimStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourceClaimSpec {
    #[serde(default)]
    pub devices: DeviceClaim,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct DeviceClaim {
    #[serde(default)]
    pub requests: Vec<DeviceRequest>,
    #[serde(default)]
    pub constraints: Vec<DeviceConstraint>,
}

/// A constraint across a claim's requests: every device of `requests` (all when empty)
/// has the same value of `matchAttribute`, or pairwise different values of
/// `distinctAttribute`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceConstraint {
    #[serde(default)]
    pub requests: Vec<String>,
    #[serde(default)]
    pub match_attribute: Option<String>,
    #[serde(default)]
    pub distinct_attribute: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRequest {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub exactly: Option<ExactDeviceRequest>,
    #[serde(default)]
    pub first_available: Vec<ExactDeviceRequest>,
    /// `resource.k8s.io/v1beta1`: `exactly`'s fields, inline in the request.
    #[serde(flatten)]
    pub inline: InlineRequest,
}

/// A v1beta1 request's own fields (v1 keeps them in `exactly`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InlineRequest {
    #[serde(default)]
    pub device_class_name: Option<String>,
    #[serde(default)]
    pub allocation_mode: Option<String>,
    #[serde(default)]
    pub count: Option<i64>,
    #[serde(default)]
    pub selectors: Vec<DeviceSelector>,
    #[serde(default)]
    pub tolerations: Vec<DeviceToleration>,
    #[serde(default)]
    pub admin_access: Option<bool>,
}

impl DeviceRequest {
    /// The request in v1's shape: a v1beta1 request's inline fields as `exactly`.
    pub fn into_current(self) -> DeviceRequest {
        match (
            &self.exactly,
            self.first_available.is_empty(),
            &self.inline.device_class_name,
        ) {
            (None, true, Some(class)) if !class.is_empty() => {
                let inline = self.inline.clone();
                DeviceRequest {
                    name: self.name.clone(),
                    exactly: Some(ExactDeviceRequest {
                        name: String::new(),
                        device_class_name: class.clone(),
                        allocation_mode: inline.allocation_mode,
                        count: inline.count,
                        selectors: inline.selectors,
                        tolerations: inline.tolerations,
                        admin_access: inline.admin_access,
                        capacity: None,
                    }),
                    first_available: Vec::new(),
                    inline: InlineRequest::default(),
                }
            }
            _ => self,
        }
    }
}

/// `exactly`, or one alternative of `firstAvailable` (same fields).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExactDeviceRequest {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub device_class_name: String,
    #[serde(default)]
    pub allocation_mode: Option<String>,
    #[serde(default)]
    pub count: Option<i64>,
    #[serde(default)]
    pub selectors: Vec<DeviceSelector>,
    #[serde(default)]
    pub tolerations: Vec<DeviceToleration>,
    /// Admin access: the device is reachable for monitoring even while others use it.
    #[serde(default)]
    pub admin_access: Option<bool>,
    /// Consumable capacity asked of a shared device (`capacity.requests`): placekit does
    /// not model how much of a device's capacity others consumed.
    #[serde(default)]
    pub capacity: Option<serde_json::Value>,
}

impl ExactDeviceRequest {
    /// `All` (every matching device of a node) rather than a count.
    pub fn wants_all(&self) -> bool {
        self.allocation_mode.as_deref() == Some("All")
    }

    /// The count asked for (1 by default, as the API server defaults it).
    pub fn wanted(&self) -> i64 {
        self.count.unwrap_or(1)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimStatus {
    #[serde(default)]
    pub allocation: Option<Allocation>,
    #[serde(default)]
    pub reserved_for: Vec<ConsumerReference>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Allocation {
    #[serde(default)]
    pub devices: AllocatedDevices,
    #[serde(default)]
    pub node_selector: Option<NodeSelector>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AllocatedDevices {
    #[serde(default)]
    pub results: Vec<AllocationResult>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllocationResult {
    #[serde(default)]
    pub request: String,
    #[serde(default)]
    pub driver: String,
    #[serde(default)]
    pub pool: String,
    #[serde(default)]
    pub device: String,
    /// Admin access (monitoring, maintenance) does not take the device from others.
    #[serde(default)]
    pub admin_access: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConsumerReference {
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub name: String,
}

impl ResourceClaim {
    /// The claim in v1's shape (see [`DeviceRequest::into_current`]).
    pub fn into_current(mut self) -> ResourceClaim {
        self.spec.devices.requests = self
            .spec
            .devices
            .requests
            .into_iter()
            .map(DeviceRequest::into_current)
            .collect();
        self
    }

    pub fn is_allocated(&self) -> bool {
        self.status.allocation.is_some()
    }

    /// The pods the claim is reserved for (`reservedFor` entries of resource `pods`).
    pub fn reserved_pods(&self) -> impl Iterator<Item = &str> {
        self.status
            .reserved_for
            .iter()
            .filter(|r| r.resource == "pods")
            .map(|r| r.name.as_str())
    }
}
