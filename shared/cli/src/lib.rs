//! What the three placekit plugins share above the model and the client: talking to a
//! person ([`ui`]: output formats, colour, prompts, progress, connection notices), the
//! checks before a command runs ([`command`]), shell completion ([`complete`]), the one pipeline every node change goes through
//! ([`mutation`]), the GPU inventory ([`inventory`]), reads across kubeconfig contexts
//! ([`fleet`]), the published reports' types and schemas ([`output`]), the policy overrides ([`overrides`]) and how a command's error becomes its
//! exit code ([`error`]). Each plugin's commands live in that plugin.
//!
//! The layers below it are their own crates (docs/design.md draws them):
//!
//! - `placekit-core`: the model as pure functions (syntax, validation, the read model, the
//!   scheduler's filters, DRA and accelerators, plans, snapshots, rollback);
//! - `placekit-lint`: the affinity linter and the dependents of a label;
//! - `placekit-client`: connecting, paged reads (pods and nodes in protobuf), the write
//!   executor, why a command stopped.
//!
//! Nothing of theirs is re-exported here: an import names the crate that defines it
//! (`placekit_core::syntax`, `placekit_client::api`, `placekit_lint::engine`).

pub mod command;
pub mod complete;
pub mod error;
pub mod fleet;
pub mod inventory;
pub mod mutation;
pub mod outcome;
pub mod output;
pub mod overrides;
pub mod pending;
pub mod ui;
pub mod workloads;
