//! The one read model of the cluster's objects: nodes and pods as every command reads them
//! from the paged lists, and the quantities they carry. Nothing here talks to the API server
//! and nothing here imports from the rest of the library except the taint syntax.
//!
//! The DRA objects (ResourceSlices, DeviceClasses, ResourceClaims) are read straight into
//! [`crate::dra`]'s types; workloads' templates keep k8s-openapi's full `PodSpec`, which the
//! linter and the dependents check need whole.

pub mod node;
pub mod pod;
pub mod quantity;

pub use node::Node;
pub use pod::{Container, Pod, PodSpec};
