//! `kubectl gpu-taint status`: the accelerator inventory read from the cluster in a few paged
//! lists (nodes, active pods, and DRA's device classes, resource slices and claims when the
//! cluster serves them), never a call per node. `gpu-taint` renders it (its `status`
//! module); why-pending reads DRA's objects through it.

mod read;

pub use read::{
    By, DraRead, Group, Reading, Status, StatusOptions, StatusView, counted_resources, node_view,
    nodes_view, read_dra, read_status, resources_for,
};
