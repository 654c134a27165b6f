//! The rows of `gpu-taint status`'s `GpuInventory` as wire types: a node's legacy figures
//! and its accelerators, and the totals per resource. Converted with `From` from core's
//! inventory, so a refactor of the model cannot change the published shape.

use std::collections::BTreeMap;

use serde::Serialize;

use placekit_core::accelerators as model;
use placekit_core::model::quantity::{optional_units, units};

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

impl From<&model::NodeInventory> for NodeInventory {
    fn from(node: &model::NodeInventory) -> Self {
        let p = &node.primary;
        NodeInventory {
            primary: NodeGpu {
                name: p.name.clone(),
                capacity: p.capacity,
                allocatable: p.allocatable,
                requested: p.requested,
                free: p.free,
                zone: p.zone.clone(),
                taints: p.taints.clone(),
                pool_labels: p.pool_labels.clone(),
                warnings: p.warnings.clone(),
            },
            accelerators: node.accelerators.iter().map(Into::into).collect(),
            labels: node.labels.clone(),
        }
    }
}

/// One row of `gpu-taint status`. Quantities are kept in thousandths and serialised in units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeGpu {
    pub name: String,
    /// `None` (JSON `null`): the resource is not in the node's capacity.
    #[serde(serialize_with = "optional_units")]
    pub capacity: Option<i128>,
    #[serde(serialize_with = "optional_units")]
    pub allocatable: Option<i128>,
    #[serde(serialize_with = "units")]
    pub requested: i128,
    /// allocatable - requested (negative when overcommitted).
    #[serde(serialize_with = "units")]
    pub free: i128,
    pub zone: Option<String>,
    /// Non-system taints (not `node.kubernetes.io/*` / `node.cloudprovider.kubernetes.io/*`).
    pub taints: Vec<String>,
    /// Labels whose key mentions a pool or dedication.
    pub pool_labels: BTreeMap<String, String>,
    pub warnings: Vec<String>,
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

impl From<model::Form> for Form {
    fn from(form: model::Form) -> Self {
        match form {
            model::Form::Whole => Form::Whole,
            model::Form::TimeSlicing => Form::TimeSlicing,
            model::Form::Mps => Form::Mps,
            model::Form::Mig => Form::Mig,
            model::Form::MigSingle => Form::MigSingle,
            model::Form::MigMixed => Form::MigMixed,
            model::Form::Dra => Form::Dra,
            model::Form::DraNonAccelerator => Form::DraNonAccelerator,
        }
    }
}

/// The four figures of a row or a total, in thousandths (serialised in units).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Figures {
    #[serde(serialize_with = "optional_units")]
    pub capacity: Option<i128>,
    #[serde(serialize_with = "optional_units")]
    pub allocatable: Option<i128>,
    /// Requested by active pods (extended resources) or allocated to claims (DRA).
    #[serde(serialize_with = "optional_units")]
    pub requested: Option<i128>,
    /// What a new pod can still get.
    #[serde(serialize_with = "optional_units")]
    pub free: Option<i128>,
}

impl From<&model::Figures> for Figures {
    fn from(f: &model::Figures) -> Self {
        Figures {
            capacity: f.capacity,
            allocatable: f.allocatable,
            requested: f.requested,
            free: f.free,
        }
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

impl From<&model::Accelerator> for Accelerator {
    fn from(a: &model::Accelerator) -> Self {
        Accelerator {
            resource: a.resource.clone(),
            form: a.form.into(),
            figures: (&a.figures).into(),
            physical: a.physical,
            replicas: a.replicas,
            product: a.product.clone(),
            mig_config: a.mig_config.clone(),
            pools: a.pools.clone(),
            partitionable: a.partitionable,
            device_classes: a.device_classes.clone(),
            serves_extended_resources: a.serves_extended_resources.clone(),
            tainted: a.tainted,
        }
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

impl From<&model::ResourceTotal> for ResourceTotal {
    fn from(t: &model::ResourceTotal) -> Self {
        ResourceTotal {
            resource: t.resource.clone(),
            form: t.form.into(),
            nodes: t.nodes,
            figures: (&t.figures).into(),
            physical: t.physical,
            device_classes: t.device_classes.clone(),
        }
    }
}
