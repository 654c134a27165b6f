//! The one read model of the cluster's objects: nodes, pods, storage and DRA objects as every command
//! reads them from the paged lists, and the quantities they carry. Nothing here talks to the
//! API server, and nothing here imports from the rest of the library but the taint syntax.
//!
//! Workloads' templates keep k8s-openapi's full `PodSpec`, which the linter and the
//! dependents check need whole; the scheduler's matchers take either through
//! [`crate::scheduling::NodeConstraints`].

pub mod dra;
pub mod node;
pub mod pod;
pub mod quantity;
pub mod storage;

pub use node::Node;
pub use pod::{Container, Pod, PodPlacement, PodSpec};
