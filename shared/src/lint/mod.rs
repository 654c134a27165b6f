//! The affinity linter: YAML with positions, the workload model, the rule catalogue
//! (`rules/`, one rule per file with its documentation), configuration and output formats.

pub mod admission;
pub mod affinity;
pub mod engine;
pub mod finding;
pub mod fix;
pub mod fixer;
pub mod output;
pub mod podspec;
pub mod relax;
pub mod rule;
pub mod rules;
pub mod source;
pub mod structured;
pub mod yaml;
