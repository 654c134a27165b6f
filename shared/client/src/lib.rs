//! What talks to the Kubernetes API server for the placekit plugins, over placekit-core's
//! model: kubectl's cluster-access flags and kubeconfig ([`connect`], [`proxy`], [`secrets`]),
//! paged reads into the read model ([`api`]), the bounded, retrying, journaled writes
//! ([`executor`]) and what stops them ([`interrupt`]), which nodes a command acts on
//! ([`targets`]), and why a request failed ([`error`], typed, each cause kept). It prints
//! nothing and decides no exit code: notices and errors are values the application crate
//! (placekit-cli) renders.
//!
//! - [`connect`]: kubectl's cluster-access flags, building a `kube::Client`;
//! - [`proxy`]: the proxy for the API server as kubectl (Go's `httpproxy`) chooses it;
//! - [`kuberc`]: kuberc's credential plugin policy, honoured as client-go honours it;
//! - [`secrets`]: the credentials no message may show, and their redaction;
//! - [`api`]: paged lists, pods, cluster identity;
//! - [`paging`]: why following a list's pages stopped, and the bounds that stop it;
//! - [`bounded`]: every answer cut at a cap (a page, an object, a watch event);
//! - [`protobuf`]: pods and nodes listed in protobuf, decoded into the read model;
//! - [`executor`]: bounded-concurrency writes with retries and journaling;
//! - [`interrupt`]: Ctrl-C, SIGTERM and SIGHUP while writes are in flight;
//! - [`targets`]: which nodes a command acts on;
//! - [`error`]: why a request failed ([`error::ClientError`]), each cause kept typed.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod api;
pub mod bounded;
pub mod connect;
pub mod deadline;
pub mod error;
pub mod executor;
pub mod interrupt;
pub mod kuberc;
pub mod observe;
pub mod paging;
pub mod protobuf;
pub mod proxy;
pub mod secrets;
pub mod targets;
