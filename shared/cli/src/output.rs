//! The published report formats, one module per `apiVersion`, as types; the JSON Schemas in
//! `docs/schemas/` are generated from them ([`published_schemas`]) and a test keeps the
//! files current and every change additive (`output/tests.rs`).

use serde_json::Value;

pub mod metrics_server;
pub mod openmetrics;
pub mod v1;

/// Printing a published report (`apiVersion: placekit.dev/v1` and its `kind`) as `-o` asks,
/// through [`crate::ui::Ui::print_structured`]: here, so the output layer knows nothing of
/// the reports' types.
pub trait PrintReport {
    fn print_report<T: v1::Published>(&self, report: &T);
}

impl PrintReport for crate::ui::Ui {
    fn print_report<T: v1::Published>(&self, report: &T) {
        self.print_structured(&v1::envelope(report));
    }
}

/// Where the published schemas live, under the repository: `docs/schemas/<path>`.
pub const SCHEMA_DIR: &str = "docs/schemas";

/// Every published schema, with its path under [`SCHEMA_DIR`]: each `placekit.dev/v1` kind,
/// and the linter's `-o json` (`placekit.dev/affinity-lint/v1`).
pub fn published_schemas() -> Vec<(String, Value)> {
    let mut all: Vec<(String, Value)> = v1::schemas()
        .into_iter()
        .map(|(kind, schema)| (format!("v1/{kind}.json"), schema))
        .collect();
    all.push((
        "affinity-lint/v1.json".into(),
        v1::schema_for::<placekit_lint::structured::JsonReport>("affinity-lint/v1.json"),
    ));
    all
}

#[cfg(test)]
mod tests;
