//! placekit's model as pure functions, shared by the `kubectl nodelabel`, `kubectl
//! gpu-taint` and `kubectl affinity-lint` plugins. Nothing here talks to an API server, a
//! terminal or an async runtime: [`placekit-client`] reads and writes, the plugins render.
//! Files are the exception, and only through [`trust`] and [`held_file`] (the snapshot
//! store and the user's own files).
//!
//! - [`model`]: the one read model of nodes and pods, deserialised straight from the list
//!   pages, and Kubernetes quantities;
//! - [`suggest`]: "did you mean" suggestions by edit distance;
//! - [`validation`]: label keys and values with the API server's rules and messages;
//! - [`syntax`]: kubectl's label-change, taint and label-selector syntax;
//! - [`scheduling`]: node affinity, nodeSelector and toleration matching as the scheduler does;
//! - [`scheduler`]: the scheduler's filters in its order, its FailedScheduling message, the
//!   why-pending verdict, drift and candidate nodes, over the read model;
//! - [`dra`]: Dynamic Resource Allocation (ResourceSlices, DeviceClasses, ResourceClaims)
//!   counted as the scheduler counts it;
//! - [`accelerators`]: every accelerator a node has: extended resources (whole, MIG,
//!   time-sliced/MPS), GPU Feature Discovery labels and DRA devices;
//! - [`gpu`]: GPU quantities, the scheduler's pod requests, and the taint preflight;
//! - [`plan`]: per-node change plans, their diff and their conditional JSON Patch;
//! - [`snapshot`]: the durable before-state and outcome journal of every mutating command;
//! - [`rollback`]: the exact-match rollback planner;
//! - [`nfd`]: node features in node-feature-discovery's format, for `nodelabel import`;
//! - [`policy`]: warnings about risky node label keys;
//! - [`trust`]: which files may be read or written (owner, mode, no FIFO);
//! - [`held_file`]: files the user named, opened once and rewritten only if unchanged;
//! - [`text`]: strings from a cluster or file escaped for a terminal, tables, counts;
//! - [`jsonpath`]: kubectl's `-o jsonpath` templates and `-o custom-columns` over a report;
//! - [`exit`]: exit codes with fixed meanings.
//!
//! [`placekit-client`]: https://docs.rs/placekit-client

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod accelerators;
pub mod cluster;
pub mod dra;
pub mod exit;
pub mod gpu;
pub mod held_file;
pub mod jsonpath;
pub mod kueue_tas;
pub mod label_controllers;
pub mod model;
pub mod nfd;
pub mod plan;
pub mod policy;
pub mod rollback;
pub mod scheduler;
pub mod scheduling;
pub mod snapshot;
pub mod suggest;
pub mod syntax;
pub mod taint_owners;
pub mod text;
pub mod trust;
pub mod validation;
