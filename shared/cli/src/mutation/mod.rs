//! Every change placekit makes to nodes, and its undo.
//!
//! One pipeline ([`pipeline::apply`]) serves set, remove, import (incl. prune), dedicate,
//! release and rollback alike:
//!
//! 1. targets, deduplicated ([`placekit_client::targets`]), are read ([`placekit_client::api`]);
//! 2. each command plans its change per node ([`placekit_core::plan`], [`placekit_core::rollback`]);
//! 3. the same policy checks run for every command ([`placekit_lint::checks`], pure over
//!    a view of the cluster the pipeline gathers: dependents of removed or
//!    changed labels, risky keys, pods kept away or evicted by added taints);
//! 4. the plan is shown, confirmed, snapshotted ([`placekit_core::snapshot`]) and written with
//!    conditional patches ([`placekit_client::executor`]);
//! 5. the outcome of every node is reported ([`report`]).
//!
//! [`undo`] is rollback, history and show. The two plugins' commands on top of the pipeline
//! live in their plugins (`kubectl-nodelabel/src/commands.rs`, `kubectl-gpu-taint/src/commands.rs`).

pub mod pipeline;
pub mod report;
pub mod undo;
