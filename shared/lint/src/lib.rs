//! The affinity linter of `kubectl affinity-lint`: YAML with positions ([`yaml`], the span
//! layer), the workload model ([`podspec`], [`affinity`]), the rule catalogue (`rules/`, one
//! rule per file with its documentation, listed in one registry), fixes as edits, and the
//! output formats; [`dependents`], the workloads whose node constraints mention a label;
//! and [`checks`], the policy checks every change `nodelabel` and `gpu-taint` make goes
//! through (what blocks, what warns), judged over one view of the cluster. Pure over
//! placekit-core: the plugins read the files or the cluster and render.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod admission;
pub mod affinity;
pub mod checks;
pub mod crds;
pub mod dependents;
pub mod engine;
pub mod finding;
pub mod fix;
pub mod output;
pub mod podspec;
pub mod relax;
pub mod rule;
pub mod rules;
pub mod selectors;
pub mod source;
pub mod structured;
pub mod yaml;
