//! placekit's core library: the model shared by the `kubectl nodelabel`, `kubectl gpu-taint`
//! and `kubectl affinity-lint` plugins.
//!
//! Everything here except [`connect`], [`api`], [`executor::KubeNodeWriter`] and the async
//! steps of [`mutation`] is pure and unit-tested without an API server:
//!
//! - [`model`]: the one read model of nodes and pods, deserialised straight from the list
//!   pages, and Kubernetes quantities;
//! - [`suggest`]: "did you mean" suggestions by edit distance;
//! - [`validation`]: label keys and values with the API server's rules and messages;
//! - [`syntax`]: kubectl's label-change, taint and label-selector syntax;
//! - [`scheduling`]: node affinity, nodeSelector and toleration matching as the scheduler does;
//! - [`plan`]: per-node change plans, their diff and their conditional JSON Patch;
//! - [`snapshot`]: the durable before-state and outcome journal of every mutating command;
//! - [`rollback`]: the exact-match rollback planner;
//! - [`executor`]: bounded-concurrency writes with retries and journaling;
//! - [`interrupt`]: Ctrl-C, SIGTERM and SIGHUP while writes are in flight;
//! - [`proxy`]: the proxy for the API server as kubectl (Go's `httpproxy`) chooses it;
//! - [`secrets`]: the credentials no message may show, and their redaction;
//! - [`connect`]: kubectl's cluster-access flags, building a `kube::Client`;
//! - [`dependents`]: workloads whose node constraints mention a label;
//! - [`policy`]: warnings about risky node label keys;
//! - [`accelerators`]: every accelerator a node has: extended resources (whole, MIG,
//!   time-sliced/MPS), GPU Feature Discovery labels and DRA devices;
//! - [`dra`]: Dynamic Resource Allocation (ResourceSlices, DeviceClasses, ResourceClaims)
//!   counted as the scheduler counts it;
//! - [`gpu`]: GPU inventory (quantities, the scheduler's pod requests) and taint preflight;
//! - [`inventory`]: `gpu-taint status`: the accelerator inventory from a few paged lists;
//! - [`lint`]: the affinity linter (positions, workload model, rules, outputs);
//! - [`scheduler`]: the scheduler's filters in its order, its FailedScheduling message, the
//!   why-pending verdict, drift and candidate nodes, over the read model;
//! - [`nfd`]: node features in node-feature-discovery's format, for `nodelabel import`;
//! - [`complete`]: completion through kubectl (`kubectl_complete-<plugin>`);
//! - [`held_file`]: files the user named, opened once and rewritten only if unchanged;
//! - [`ui`]: output formats, colour, confirmation and progress shared by the plugins;
//! - [`overrides`]: the policy checks' overrides, one flag per thing overridden;
//! - [`targets`]: which nodes a command acts on;
//! - [`api`]: reading from the API server (paged lists, workloads, pods, cluster identity);
//! - [`mutation`]: the one pipeline every node change goes through, its policy checks,
//!   reports and undo, and the plugins' commands on top of it;
//! - [`fleet`]: the read-only commands across kubeconfig contexts, in one report;
//! - [`error`]: why a command stopped, each reason with its exit code;
//! - [`exit`]: exit codes with fixed meanings.

pub mod accelerators;
pub mod api;
pub mod complete;
pub mod connect;
pub mod dependents;
pub mod dra;
pub mod error;
pub mod executor;
pub mod exit;
pub mod fleet;
pub mod gpu;
pub mod held_file;
pub mod interrupt;
pub mod inventory;
pub mod lint;
pub mod model;
pub mod mutation;
pub mod nfd;
pub mod overrides;
pub mod plan;
pub mod policy;
pub mod proxy;
pub mod rollback;
pub mod scheduler;
pub mod scheduling;
pub mod secrets;
pub mod snapshot;
pub mod suggest;
pub mod syntax;
pub mod targets;
pub mod trust;
pub mod ui;
pub mod validation;
