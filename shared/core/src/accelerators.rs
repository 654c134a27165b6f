//! One accelerator model built from what the cluster says, as pure functions: extended
//! resources of the known vendors (whole GPUs, MIG profiles, time-sliced or MPS-shared GPUs
//! and the other vendors' devices), the GPU Feature Discovery labels that describe them, and
//! DRA devices (see [`crate::dra`]). A node with accelerators of any of these kinds is a GPU
//! node; `gpu-taint status`, the `dedicate` preflight and `why-pending` all read it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::dra::{DraInventory, DriverDevices};
use crate::gpu::{NodeGpu, node_gpu};
use crate::model::quantity::{format_milli, parse_quantity_milli};
use crate::model::{Node, Pod};
use crate::scheduling::NodeFacts;

/// GPU Feature Discovery's labels (the NVIDIA GPU operator sets them on every GPU node).
pub mod gfd {
    pub const PRODUCT: &str = "nvidia.com/gpu.product";
    pub const MEMORY: &str = "nvidia.com/gpu.memory";
    pub const COUNT: &str = "nvidia.com/gpu.count";
    pub const REPLICAS: &str = "nvidia.com/gpu.replicas";
    pub const SHARING_STRATEGY: &str = "nvidia.com/gpu.sharing-strategy";
    pub const MIG_STRATEGY: &str = "nvidia.com/mig.strategy";
    pub const MIG_CONFIG: &str = "nvidia.com/mig.config";
    pub const MIG_CAPABLE: &str = "nvidia.com/mig.capable";
}

/// Whether an extended resource is an accelerator of a known vendor: NVIDIA GPUs, MIG
/// profiles and renamed shared GPUs, AMD and Intel GPUs, Habana Gaudi, Google TPUs, AWS
/// Neuron. Intel's auxiliary resources (millicores, memory, tiles) are not devices.
pub fn is_accelerator(resource: &str) -> bool {
    let Some((vendor, name)) = resource.split_once('/') else {
        return false;
    };
    match vendor {
        "nvidia.com" => name == "gpu" || name == "gpu.shared" || name.starts_with("mig-"),
        "amd.com" => name == "gpu",
        "gpu.intel.com" => !matches!(name, "millicores" | "memory.max" | "tiles"),
        "habana.ai" => true,
        "google.com" => name == "tpu",
        "aws.amazon.com" => name.starts_with("neuron"),
        _ => false,
    }
}

/// How an accelerator row's devices are exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// Whole devices through a device plugin.
    Whole,
    /// GPUs shared by time-slicing: the resource counts replicas of each physical GPU.
    TimeSlicing,
    /// GPUs shared through MPS: likewise replicas.
    Mps,
    /// A MIG profile (`nvidia.com/mig-1g.10gb`), mixed strategy.
    Mig,
    /// `nvidia.com/gpu` under the MIG single strategy: each one a MIG slice.
    MigSingle,
    /// `nvidia.com/gpu` at 0 on a mixed-strategy MIG node: the GPUs are its mig-* rows.
    MigMixed,
    /// Devices a DRA driver publishes in ResourceSlices.
    Dra,
    /// DRA devices that are not accelerators (the ComputeDomain driver's IMEX channels and
    /// daemon slots): counted, shown after the accelerators, never taken for GPUs.
    DraNonAccelerator,
}

impl Form {
    fn is_shared(self) -> bool {
        matches!(self, Form::TimeSlicing | Form::Mps)
    }

    /// Devices of a DRA driver (rows named by the driver).
    pub fn is_dra(self) -> bool {
        matches!(self, Form::Dra | Form::DraNonAccelerator)
    }

    /// Where totals list the form: extended resources, DRA accelerators, then the DRA
    /// devices that are not accelerators, apart.
    fn rank(self) -> u8 {
        match self {
            Form::Dra => 1,
            Form::DraNonAccelerator => 2,
            _ => 0,
        }
    }
}

/// The four figures of a row or a total, in thousandths (serialised in units).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Figures {
    #[serde(serialize_with = "crate::model::quantity::optional_units")]
    pub capacity: Option<i128>,
    #[serde(serialize_with = "crate::model::quantity::optional_units")]
    pub allocatable: Option<i128>,
    /// Requested by active pods (extended resources) or allocated to claims (DRA).
    #[serde(serialize_with = "crate::model::quantity::optional_units")]
    pub requested: Option<i128>,
    /// What a new pod can still get.
    #[serde(serialize_with = "crate::model::quantity::optional_units")]
    pub free: Option<i128>,
}

impl Figures {
    /// `count` devices of which `in_use` are taken and `free` can still be allocated.
    pub fn devices(count: usize, in_use: usize, free: usize) -> Self {
        let n = |x: usize| Some(x as i128 * 1000);
        Figures {
            capacity: n(count),
            allocatable: n(count),
            requested: n(in_use),
            free: n(free),
        }
    }

    fn add(&mut self, other: &Figures) {
        let add =
            |x: &mut Option<i128>, y: Option<i128>| *x = Some(x.unwrap_or(0) + y.unwrap_or(0));
        add(&mut self.capacity, other.capacity);
        add(&mut self.allocatable, other.allocatable);
        add(&mut self.requested, other.requested);
        add(&mut self.free, other.free);
    }
}

/// One kind of accelerator on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accelerator {
    /// The extended resource, or the DRA driver's name.
    pub resource: String,
    pub form: Form,
    #[serde(flatten)]
    pub figures: Figures,
    /// Physical GPUs behind shared replicas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub physical: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mig_config: Option<String>,
    /// DRA: the driver's pools seen from this node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<String>,
    /// DRA: some devices are partitions consuming shared counters.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partitionable: bool,
    /// DRA: the device classes whose selectors match the devices of this row (a row per
    /// set of classes: whole GPUs apart from MIG devices), and the extended resources they
    /// serve to pods that ask for them the classic way.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_classes: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub serves_extended_resources: Vec<String>,
    /// DRA: unallocated devices a taint keeps from claims that do not tolerate it (a
    /// DeviceTaintRule's, or the driver's); not counted as free.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tainted: Option<usize>,
}

impl Accelerator {
    /// The FORM column: `whole`, `time-slicing 8x4`, `MIG`, `DRA`...
    pub fn form_text(&self) -> String {
        let base = match self.form {
            Form::Whole => "whole".to_string(),
            Form::TimeSlicing => "time-slicing".to_string(),
            Form::Mps => "MPS".to_string(),
            Form::Mig => "MIG".to_string(),
            Form::MigSingle => "MIG single".to_string(),
            Form::MigMixed => "MIG mixed".to_string(),
            Form::Dra if self.partitionable => "DRA partitionable".to_string(),
            Form::Dra => "DRA".to_string(),
            Form::DraNonAccelerator => "DRA, not an accelerator".to_string(),
        };
        match (self.physical, self.replicas) {
            (Some(p), Some(r)) if self.form.is_shared() => format!("{base} {p}x{r}"),
            _ => base,
        }
    }

    /// The RESOURCE column: DRA rows name the driver as such, and the classes that select
    /// their devices.
    pub fn resource_text(&self) -> String {
        dra_resource_text(&self.resource, self.form, &self.device_classes)
    }
}

/// `gpu.nvidia.com (DRA: mig.nvidia.com)`: a DRA driver and the classes selecting the
/// devices counted; other resources as they are. A class named after its driver, the
/// drivers' own convention for their main class, is not repeated.
pub fn dra_resource_text(resource: &str, form: Form, classes: &[String]) -> String {
    match (form.is_dra(), classes) {
        (false, _) => resource.to_string(),
        (true, []) => format!("{resource} (DRA)"),
        (true, [only]) if only == resource => format!("{resource} (DRA)"),
        (true, classes) => format!("{resource} (DRA: {})", classes.join(", ")),
    }
}

/// A node's row group: the legacy one-resource figures (flattened, as `-o json` always had
/// them) and every accelerator the node has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeInventory {
    #[serde(flatten)]
    pub primary: NodeGpu,
    pub accelerators: Vec<Accelerator>,
    /// `-L KEY` columns (absent labels as `null`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, Option<String>>,
}

impl NodeInventory {
    /// Whether the node has accelerators of any kind.
    /// Whether some accelerator of the node has a device free (`--free-only`).
    pub fn has_free_accelerator(&self) -> bool {
        self.accelerators
            .iter()
            .any(|a| a.form != Form::DraNonAccelerator && a.figures.free.is_some_and(|f| f > 0))
    }

    pub fn has_accelerators(&self) -> bool {
        self.accelerators
            .iter()
            .any(|a| a.form != Form::DraNonAccelerator)
    }
}

/// The accelerator resources among `nodes`' capacity and allocatable.
pub fn accelerator_resources(nodes: &[Node]) -> BTreeSet<String> {
    nodes
        .iter()
        .flat_map(|n| n.status.capacity.keys().chain(n.status.allocatable.keys()))
        .filter(|r| is_accelerator(r))
        .cloned()
        .collect()
}

/// One active, bound pod's effective requests of the resources `counted` accepts, with its
/// node: `None` when it asks for none (most pods). A request DRA serves is not counted
/// against the node (see [`requested_per_node`]).
pub fn pod_requests(
    pod: &Pod,
    counted: impl Fn(&str) -> bool,
) -> Option<(String, BTreeMap<String, i128>)> {
    if !pod.is_active() {
        return None;
    }
    let node = pod.spec.node_name.as_deref().filter(|n| !n.is_empty())?;
    let requests: BTreeMap<String, i128> = pod
        .requests()
        .into_keys()
        .filter(|r| counted(r) && !pod.extended_resource_served_by_dra(r))
        .map(|r| {
            let q = pod.effective_request(&r);
            (r, q)
        })
        .filter(|(_, q)| *q != 0)
        .collect();
    (!requests.is_empty()).then(|| (node.to_string(), requests))
}

/// Sums the effective requests of `resources` by the active pods, per node. A request that
/// DRA serves (the pod's `status.extendedResourceClaimStatus` maps it to a claim) is counted
/// as that claim's devices, not against the node's allocatable.
pub fn requested_per_node<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    resources: &BTreeSet<String>,
    into: &mut BTreeMap<String, BTreeMap<String, i128>>,
) {
    for pod in pods {
        if let Some((node, requests)) = pod_requests(pod, |r| resources.contains(r)) {
            let sums = into.entry(node).or_default();
            for (resource, q) in requests {
                *sums.entry(resource).or_default() += q;
            }
        }
    }
}

fn label_u32(node: &Node, key: &str) -> Option<u32> {
    node.metadata.labels.get(key)?.trim().parse().ok()
}

/// The rows of one node's extended-resource accelerators.
fn extended_rows(
    node: &Node,
    requested: &BTreeMap<String, i128>,
    resources: &BTreeSet<String>,
) -> Vec<Accelerator> {
    let labels = &node.metadata.labels;
    let mig_strategy = labels.get(gfd::MIG_STRATEGY).map(String::as_str);
    let mut out = Vec::new();
    for resource in resources {
        let q =
            |m: &BTreeMap<String, String>| m.get(resource).and_then(|v| parse_quantity_milli(v));
        let capacity = q(&node.status.capacity);
        let allocatable = q(&node.status.allocatable);
        if capacity.is_none() && allocatable.is_none() {
            continue;
        }
        let req = requested.get(resource).copied().unwrap_or(0);
        let mut row = Accelerator {
            resource: resource.clone(),
            form: Form::Whole,
            figures: Figures {
                capacity,
                allocatable,
                requested: Some(req),
                free: Some(allocatable.unwrap_or(0) - req),
            },
            physical: None,
            replicas: None,
            product: None,
            mig_config: None,
            pools: Vec::new(),
            partitionable: false,
            device_classes: Vec::new(),
            serves_extended_resources: Vec::new(),
            tainted: None,
        };
        if let Some(profile) = resource.strip_prefix("nvidia.com/mig-") {
            row.form = Form::Mig;
            row.product = Some(profile.to_string());
            row.mig_config = labels.get(gfd::MIG_CONFIG).cloned();
        } else if resource == "nvidia.com/gpu" || resource == "nvidia.com/gpu.shared" {
            row.product = labels.get(gfd::PRODUCT).cloned();
            let replicas = label_u32(node, gfd::REPLICAS).filter(|r| *r > 1);
            if let Some(replicas) = replicas {
                let strategy = labels
                    .get(gfd::SHARING_STRATEGY)
                    .map(|s| s.to_ascii_lowercase());
                row.form = if strategy.as_deref() == Some("mps") {
                    Form::Mps
                } else {
                    Form::TimeSlicing
                };
                row.replicas = Some(replicas);
                row.physical = label_u32(node, gfd::COUNT)
                    .or_else(|| capacity.map(|c| (c / 1000 / i128::from(replicas)) as u32));
            } else if mig_strategy == Some("single") {
                row.form = Form::MigSingle;
                row.mig_config = labels.get(gfd::MIG_CONFIG).cloned();
            } else if mig_strategy == Some("mixed") && capacity.unwrap_or(0) == 0 {
                row.form = Form::MigMixed;
                row.mig_config = labels.get(gfd::MIG_CONFIG).cloned();
            }
        }
        out.push(row);
    }
    out
}

/// The rows of one node's DRA devices, per driver.
fn dra_rows(node: &Node, dra: &DraInventory) -> Vec<Accelerator> {
    let facts = NodeFacts {
        name: &node.metadata.name,
        labels: &node.metadata.labels,
    };
    let mut rows: Vec<Accelerator> = dra
        .node_devices(facts)
        .into_iter()
        .map(|d: DriverDevices| {
            let classes: Vec<&crate::model::dra::DeviceClass> = d
                .classes
                .iter()
                .filter_map(|name| dra.class(name))
                .collect();
            Accelerator {
                resource: d.driver.clone(),
                form: if d.accelerators {
                    Form::Dra
                } else {
                    Form::DraNonAccelerator
                },
                figures: Figures::devices(d.total, d.allocated, d.free),
                physical: None,
                replicas: None,
                product: None,
                mig_config: None,
                pools: d.pools,
                partitionable: d.partitionable,
                device_classes: classes.iter().map(|c| c.metadata.name.clone()).collect(),
                serves_extended_resources: classes
                    .iter()
                    .filter_map(|c| c.spec.extended_resource_name.clone())
                    .collect(),
                tainted: (d.tainted > 0).then_some(d.tainted),
            }
        })
        .collect();
    // What is not an accelerator comes last, apart.
    rows.sort_by_key(|a| a.form.rank());
    rows
}

/// What `status` was asked to count.
#[derive(Debug, Clone)]
pub struct Scope<'a> {
    /// `--resource`: only this resource's rows (and the DRA devices of a class serving it).
    pub resource: Option<&'a str>,
    /// `--class`: only the DRA devices this DeviceClass selects.
    pub class: Option<&'a str>,
    /// The resource of the flat legacy fields (`--resource`, else `nvidia.com/gpu`).
    pub primary: &'a str,
    /// Every accelerator resource counted.
    pub resources: &'a BTreeSet<String>,
    /// `-L` keys.
    pub label_columns: &'a [String],
}

/// One node's inventory.
pub fn node_inventory(
    node: &Node,
    requested: &BTreeMap<String, i128>,
    dra: &DraInventory,
    scope: &Scope<'_>,
) -> NodeInventory {
    let mut accelerators = extended_rows(node, requested, scope.resources);
    accelerators.extend(dra_rows(node, dra));
    // The DRA devices of the class that serves the asked-for extended resource.
    let served_by = scope
        .resource
        .and_then(|r| dra.class_serving(r))
        .map(|c| c.metadata.name.clone());
    if let Some(resource) = scope.resource {
        accelerators.retain(|a| {
            a.resource == resource
                || (a.form.is_dra()
                    && served_by
                        .as_ref()
                        .is_some_and(|class| a.device_classes.contains(class)))
        });
    }
    if let Some(class) = scope.class {
        accelerators.retain(|a| a.form.is_dra() && a.device_classes.iter().any(|c| c == class));
    }
    let mut primary = node_gpu(
        node,
        requested.get(scope.primary).copied().unwrap_or(0),
        scope.primary,
    );
    let missing = primary.capacity.is_none();
    if missing {
        // Not "not a GPU node" when it has accelerators of another kind.
        primary
            .warnings
            .retain(|w| !w.contains("capacity: not a GPU node"));
        let dra_served = served_by.as_ref().and_then(|class| {
            accelerators
                .iter()
                .find(|a| a.form.is_dra() && a.device_classes.contains(class))
        });
        if let Some(devices) = dra_served {
            // The extended resource is allocated from DRA devices here: count them.
            primary.capacity = devices.figures.capacity;
            primary.allocatable = devices.figures.allocatable;
            primary.requested = devices.figures.requested.unwrap_or(0);
            primary.free = devices.figures.free.unwrap_or(0);
        } else {
            let others: Vec<String> = extended_rows(node, requested, scope.resources)
                .into_iter()
                .chain(dra_rows(node, dra))
                .filter(|a| a.form != Form::DraNonAccelerator)
                .map(|a| a.resource_text())
                .collect();
            if others.is_empty() {
                primary.warnings.insert(
                    0,
                    if scope.resource.is_some() {
                        format!(
                            "no {} capacity: not a GPU node, or its device plugin has not registered it",
                            scope.primary
                        )
                    } else {
                        "no accelerator: not a GPU node, or its device plugin or DRA driver has not registered one".to_string()
                    },
                );
            } else if scope.resource.is_some() {
                primary.warnings.insert(
                    0,
                    format!(
                        "no {} capacity (it has {})",
                        scope.primary,
                        others.join(", ")
                    ),
                );
            }
        }
    }
    for a in &accelerators {
        if let Some(n) = a.tainted {
            let devices = if n == 1 { "device" } else { "devices" };
            primary.warnings.push(format!(
                "{n} {} {devices} tainted (not free to claims that do not tolerate it)",
                a.resource
            ));
        }
    }
    let labels = scope
        .label_columns
        .iter()
        .map(|k| (k.clone(), node.metadata.labels.get(k).cloned()))
        .collect();
    NodeInventory {
        primary,
        accelerators,
        labels,
    }
}

/// Totals of one resource (or DRA driver) over the nodes that have it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTotal {
    pub resource: String,
    pub form: Form,
    pub nodes: usize,
    #[serde(flatten)]
    pub figures: Figures,
    /// Where some nodes share GPUs: the physical GPUs behind the resource (whole ones count
    /// as themselves, shared ones as GPU Feature Discovery's `gpu.count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub physical: Option<u64>,
    /// DRA: the device classes selecting the devices totalled (a total per set of classes).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub device_classes: Vec<String>,
}

impl ResourceTotal {
    /// The RESOURCE column of a totals row.
    pub fn resource_text(&self) -> String {
        dra_resource_text(&self.resource, self.form, &self.device_classes)
    }
}

/// Totals per resource over several clusters' totals, in the same order as
/// [`totals_by_resource`]: figures, nodes and physical GPUs add up.
pub fn merge_totals<'a>(
    clusters: impl IntoIterator<Item = &'a [ResourceTotal]>,
) -> Vec<ResourceTotal> {
    let mut out: BTreeMap<(u8, String, Vec<String>), ResourceTotal> = BTreeMap::new();
    for t in clusters.into_iter().flatten() {
        let key = (t.form.rank(), t.resource.clone(), t.device_classes.clone());
        match out.get_mut(&key) {
            None => {
                out.insert(key, t.clone());
            }
            Some(sum) => {
                sum.nodes += t.nodes;
                sum.figures.add(&t.figures);
                sum.physical = match (sum.physical, t.physical) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
                };
            }
        }
    }
    out.into_values().collect()
}

/// Totals per resource: extended resources first (by name), then DRA drivers. Shared
/// replicas and whole GPUs of one resource are totalled together; `physical` says how many
/// physical GPUs that is.
pub fn totals_by_resource(nodes: &[NodeInventory]) -> Vec<ResourceTotal> {
    type Key = (u8, String, Vec<String>);
    let mut out: BTreeMap<Key, ResourceTotal> = BTreeMap::new();
    let mut physical: BTreeMap<Key, Vec<Option<u64>>> = BTreeMap::new();
    let mut shared: BTreeSet<Key> = BTreeSet::new();
    for a in nodes.iter().flat_map(|n| &n.accelerators) {
        let rank = a.form.rank();
        let key: Key = (rank, a.resource.clone(), a.device_classes.clone());
        let t = out.entry(key.clone()).or_insert_with(|| ResourceTotal {
            resource: a.resource.clone(),
            form: if a.form.is_dra() { a.form } else { Form::Whole },
            nodes: 0,
            figures: Figures::default(),
            physical: None,
            device_classes: a.device_classes.clone(),
        });
        // A mixed-strategy MIG node's nvidia.com/gpu at 0 is not a node with GPUs of it.
        if a.form != Form::MigMixed {
            t.nodes += 1;
        }
        t.figures.add(&a.figures);
        physical.entry(key.clone()).or_default().push(match a.form {
            Form::Whole => a.figures.capacity.map(|c| (c / 1000).max(0) as u64),
            Form::TimeSlicing | Form::Mps => a.physical.map(u64::from),
            Form::MigMixed => Some(0),
            Form::Mig | Form::MigSingle | Form::Dra | Form::DraNonAccelerator => None,
        });
        if a.form.is_shared() {
            shared.insert(key);
        }
    }
    // Physical GPUs only where some are shared (whole ones count as themselves) and every
    // node says how many it has.
    for (key, t) in out.iter_mut() {
        if shared.contains(key) {
            let counts = &physical[key];
            if counts.iter().all(Option::is_some) {
                t.physical = Some(
                    counts
                        .iter()
                        .flatten()
                        .fold(0u64, |a, b| a.saturating_add(*b)),
                );
            }
        }
    }
    out.into_values().collect()
}

/// Renders thousandths for a table cell (`-` when absent).
pub fn cell(v: Option<i128>) -> String {
    v.map(format_milli).unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::dra::{DeviceClass, ResourceClaim, ResourceSlice};
    use serde_json::json;

    fn node(v: serde_json::Value) -> Node {
        serde_json::from_value(v).unwrap()
    }

    fn scope<'a>(resource: Option<&'a str>, resources: &'a BTreeSet<String>) -> Scope<'a> {
        Scope {
            resource,
            class: None,
            primary: resource.unwrap_or("nvidia.com/gpu"),
            resources,
            label_columns: &[],
        }
    }

    #[test]
    fn known_vendors_are_accelerators() {
        for r in [
            "nvidia.com/gpu",
            "nvidia.com/mig-1g.10gb",
            "nvidia.com/gpu.shared",
            "amd.com/gpu",
            "gpu.intel.com/i915",
            "habana.ai/gaudi",
            "google.com/tpu",
            "aws.amazon.com/neuroncore",
        ] {
            assert!(is_accelerator(r), "{r}");
        }
        for r in [
            "cpu",
            "gpu.intel.com/millicores",
            "example.com/foo",
            "nvidia.com/foo",
        ] {
            assert!(!is_accelerator(r), "{r}");
        }
    }

    #[test]
    fn mig_mixed_node_shows_its_profiles_and_is_a_gpu_node() {
        let n = node(
            json!({"metadata": {"name": "mig-1", "labels": {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-balanced"}},
            "status": {"capacity": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "4"},
                       "allocatable": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "4"}}}),
        );
        let resources = accelerator_resources(std::slice::from_ref(&n));
        let requested: BTreeMap<String, i128> =
            [("nvidia.com/mig-1g.10gb".to_string(), 2000)].into();
        let inv = node_inventory(
            &n,
            &requested,
            &DraInventory::default(),
            &scope(None, &resources),
        );
        let forms: Vec<(String, Form, String)> = inv
            .accelerators
            .iter()
            .map(|a| (a.resource.clone(), a.form, cell(a.figures.free)))
            .collect();
        assert_eq!(
            forms,
            vec![
                ("nvidia.com/gpu".into(), Form::MigMixed, "0".into()),
                ("nvidia.com/mig-1g.10gb".into(), Form::Mig, "12".into()),
                ("nvidia.com/mig-3g.40gb".into(), Form::Mig, "4".into()),
            ]
        );
        assert!(
            inv.primary.warnings.is_empty(),
            "{:?}",
            inv.primary.warnings
        );
    }

    #[test]
    fn time_sliced_gpus_say_physical_times_replicas() {
        let n = node(
            json!({"metadata": {"name": "ts-1", "labels": {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.count": "8"}},
            "status": {"capacity": {"nvidia.com/gpu": "32"}, "allocatable": {"nvidia.com/gpu": "32"}}}),
        );
        let resources = accelerator_resources(std::slice::from_ref(&n));
        let inv = node_inventory(
            &n,
            &BTreeMap::new(),
            &DraInventory::default(),
            &scope(None, &resources),
        );
        let a = &inv.accelerators[0];
        assert_eq!(
            (a.form, a.physical, a.replicas),
            (Form::TimeSlicing, Some(8), Some(4))
        );
        assert_eq!(a.form_text(), "time-slicing 8x4");
    }

    #[test]
    fn dra_node_is_a_gpu_node_and_serves_its_extended_resource() {
        let n = node(json!({"metadata": {"name": "dra-1"}, "status": {"capacity": {"cpu": "8"}}}));
        let slice: ResourceSlice = serde_json::from_value(json!({"spec": {"driver": "gpu.example.com", "nodeName": "dra-1",
            "pool": {"name": "dra-1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}})).unwrap();
        let class: DeviceClass = serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}], "extendedResourceName": "example.com/gpu"}})).unwrap();
        let mut dra = DraInventory::new(vec![slice], vec![class]);
        let claim: ResourceClaim = serde_json::from_value(json!({"status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "dra-1", "device": "gpu-0"}]}}}})).unwrap();
        dra.add_claim(&claim);
        let resources = BTreeSet::new();
        let inv = node_inventory(&n, &BTreeMap::new(), &dra, &scope(None, &resources));
        assert!(inv.has_accelerators());
        assert!(
            inv.primary.warnings.is_empty(),
            "{:?}",
            inv.primary.warnings
        );
        let a = &inv.accelerators[0];
        assert_eq!(
            (
                a.resource_text(),
                cell(a.figures.capacity),
                cell(a.figures.requested),
                cell(a.figures.free)
            ),
            (
                "gpu.example.com (DRA)".into(),
                "2".into(),
                "1".into(),
                "1".into()
            )
        );
        assert_eq!(a.serves_extended_resources, vec!["example.com/gpu"]);
        // --resource example.com/gpu: counted from the devices, not "missing".
        let narrowed = node_inventory(
            &n,
            &BTreeMap::new(),
            &dra,
            &scope(Some("example.com/gpu"), &resources),
        );
        assert_eq!(
            (
                narrowed.primary.capacity,
                narrowed.primary.requested,
                narrowed.primary.free
            ),
            (Some(2000), 1000, 1000)
        );
        assert!(
            narrowed.primary.warnings.is_empty(),
            "{:?}",
            narrowed.primary.warnings
        );
    }

    #[test]
    fn compute_domain_channels_are_shown_apart_not_as_accelerators() {
        let n =
            node(json!({"metadata": {"name": "gb200-1"}, "status": {"capacity": {"cpu": "8"}}}));
        let slices: Vec<ResourceSlice> = serde_json::from_value(json!([
            {"spec": {"driver": "gpu.nvidia.com", "nodeName": "gb200-1",
                "pool": {"name": "gb200-1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}]}},
            {"spec": {"driver": "compute-domain.nvidia.com", "nodeName": "gb200-1",
                "pool": {"name": "gb200-1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "daemon-0", "attributes": {"type": {"string": "daemon"}, "id": {"int": 0}}},
                            {"name": "channel-0", "attributes": {"type": {"string": "channel"}, "id": {"int": 0}}}]}}
        ]))
        .unwrap();
        let dra = DraInventory::new(slices.clone(), vec![]);
        let resources = BTreeSet::new();
        let inv = node_inventory(&n, &BTreeMap::new(), &dra, &scope(None, &resources));
        let rows: Vec<(String, String)> = inv
            .accelerators
            .iter()
            .map(|a| (a.resource.clone(), a.form_text()))
            .collect();
        assert_eq!(
            rows,
            vec![
                ("gpu.nvidia.com".to_string(), "DRA".to_string()),
                (
                    "compute-domain.nvidia.com".to_string(),
                    "DRA, not an accelerator".to_string()
                ),
            ]
        );
        let totals = totals_by_resource(std::slice::from_ref(&inv));
        assert_eq!(
            totals
                .iter()
                .map(|t| (t.resource.as_str(), t.form))
                .collect::<Vec<_>>(),
            vec![
                ("gpu.nvidia.com", Form::Dra),
                ("compute-domain.nvidia.com", Form::DraNonAccelerator)
            ]
        );
        // A node with only channels is not a GPU node.
        let only_channels = DraInventory::new(slices[1..].to_vec(), vec![]);
        let inv = node_inventory(
            &n,
            &BTreeMap::new(),
            &only_channels,
            &scope(None, &resources),
        );
        assert!(!inv.has_accelerators());
        assert!(
            inv.primary.warnings[0].starts_with("no accelerator"),
            "{:?}",
            inv.primary.warnings
        );
    }

    #[test]
    fn a_node_without_accelerators_is_named_so_and_totals_add_up() {
        let cpu =
            node(json!({"metadata": {"name": "cpu-1"}, "status": {"capacity": {"cpu": "8"}}}));
        let gpu = node(
            json!({"metadata": {"name": "gpu-1"}, "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}}),
        );
        let resources = accelerator_resources(&[cpu.clone(), gpu.clone()]);
        let s = scope(None, &resources);
        let rows = vec![
            node_inventory(&cpu, &BTreeMap::new(), &DraInventory::default(), &s),
            node_inventory(
                &gpu,
                &[("nvidia.com/gpu".to_string(), 3000)].into(),
                &DraInventory::default(),
                &s,
            ),
        ];
        assert!(rows[0].primary.warnings[0].starts_with("no accelerator"));
        let totals = totals_by_resource(&rows);
        assert_eq!(totals.len(), 1);
        assert_eq!((totals[0].nodes, totals[0].figures.free), (1, Some(5000)));
    }
}
