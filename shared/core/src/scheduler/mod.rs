//! The scheduler's model, as pure functions over the read model ([`crate::model`]): what a
//! node offers a pod ([`NodeInfo`]), the scheduler's filters in its order ([`filters`]), its
//! FailedScheduling message ([`message`]), the pending-pod runbook's verdict ([`mod@verdict`]),
//! drift of running pods from their nodes ([`mod@drift`]), and the candidate nodes behind
//! affinity-lint's `--cluster` rules.
//!
//! This wing imports the read model, the matchers of [`crate::scheduling`], DRA counting and
//! the taint syntax, and nothing above them.

pub mod candidates;
pub mod drift;
pub mod filters;
pub mod gang;
pub mod message;
pub mod node_info;
pub mod pending;
pub mod replacements;
pub mod verdict;
pub mod volumes;

#[cfg(test)]
mod pending_tests;
#[cfg(test)]
mod tests;

pub use candidates::{affinity_candidates, any_term_matches};
pub use drift::{Drift, DriftKind, drift};
pub use filters::{FilterFailure, PodFilters, affinity_detail, evaluate, filter};
pub use message::{parse_scheduler_message, scheduler_message};
pub use node_info::{BoundPods, NodeInfo, PlacedPod, node_infos};
pub use verdict::{Verdict, verdict};
pub use volumes::{PodVolumes, VolumeHold};
