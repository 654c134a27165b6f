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
        schema_for::<placekit_lint::structured::JsonReport>("affinity-lint/v1.json"),
    ));
    all
}

/// `T`'s JSON Schema (draft 2020-12), published at `path`, every object closed.
fn schema_for<T: schemars::JsonSchema>(path: &str) -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    schema["$id"] = Value::from(format!("https://placekit.dev/schemas/{path}"));
    close_objects(&mut schema);
    schema
}

/// Sets `additionalProperties: false` on every object schema that lists its properties and
/// says nothing of others, so a report that grows a field its type does not declare fails
/// validation. A map (`additionalProperties: {...}`) is left as it is; so is an object
/// whose fields a `oneOf`/`anyOf`/`allOf` also chooses (a flattened enum), which closing
/// would make refuse the branch's own fields.
fn close_objects(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let closable = map.contains_key("properties")
                && !map.contains_key("additionalProperties")
                && !["allOf", "oneOf", "anyOf"]
                    .iter()
                    .any(|k| map.contains_key(*k));
            if closable {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
