//! Every report a plugin prints is checked against its published JSON Schema
//! (`docs/schemas/`): [`check_reports`] runs on the output of every subprocess the suites
//! wait for ([`crate::process`]), so each `-o json|yaml` an end-to-end test asks for is
//! validated without the test saying so.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

/// The published schemas, by their path under `docs/schemas/` (`v1/GpuInventory.json`).
fn validators() -> &'static HashMap<String, jsonschema::Validator> {
    static VALIDATORS: OnceLock<HashMap<String, jsonschema::Validator>> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/schemas");
        let mut all = HashMap::new();
        for dir in ["v1", "affinity-lint"] {
            let entries = std::fs::read_dir(root.join(dir))
                .unwrap_or_else(|e| panic!("the published schemas in {}: {e}", root.display()));
            for entry in entries {
                let path = entry.expect("a schema file").path();
                let text = std::fs::read_to_string(&path).expect("a schema file reads");
                let schema: Value = serde_json::from_str(&text).expect("a schema is JSON");
                let validator = jsonschema::validator_for(&schema)
                    .unwrap_or_else(|e| panic!("{} is not a schema: {e}", path.display()));
                let name = path.file_name().expect("a name").to_string_lossy();
                all.insert(format!("{dir}/{name}"), validator);
            }
        }
        all
    })
}

/// The schema a printed document claims: `placekit.dev/v1` and its `kind`, or the linter's
/// `version`. `None` for anything else (a kubectl object, a jsonpath's result).
fn schema_of(document: &Value) -> Option<String> {
    if document["apiVersion"] == "placekit.dev/v1" {
        let kind = document["kind"].as_str().unwrap_or("<no kind>");
        return Some(format!("v1/{kind}.json"));
    }
    if document["version"] == "placekit.dev/affinity-lint/v1" && document.get("findings").is_some()
    {
        return Some("affinity-lint/v1.json".into());
    }
    None
}

/// The JSON or YAML documents of `stdout`, when it is wholly made of them (a watch prints
/// one per change); empty when it is text.
fn documents(stdout: &str) -> Vec<Value> {
    let trimmed = stdout.trim_start();
    if trimmed.starts_with('{') {
        let parsed: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(stdout)
            .into_iter::<Value>()
            .collect();
        return parsed.unwrap_or_default();
    }
    if trimmed.starts_with("apiVersion: placekit.dev/") {
        use serde::Deserialize;
        let parsed: Result<Vec<Value>, _> = serde_yaml::Deserializer::from_str(stdout)
            .map(Value::deserialize)
            .collect();
        return parsed.unwrap_or_default();
    }
    Vec::new()
}

/// Panics, naming the schema and every violation, when a report in `stdout` does not
/// match its published schema, or claims a kind that has none.
pub fn check_reports(stdout: &str) {
    for document in documents(stdout) {
        let Some(schema) = schema_of(&document) else {
            continue;
        };
        let Some(validator) = validators().get(&schema) else {
            panic!("a report claims docs/schemas/{schema}, which is not published:\n{stdout}");
        };
        let errors: Vec<String> = validator
            .iter_errors(&document)
            .map(|e| format!("at {}: {e}", e.instance_path()))
            .collect();
        if errors.is_empty() {
            continue;
        }
        let report = serde_json::to_string_pretty(&document).unwrap_or_default();
        panic!(
            "the report does not match docs/schemas/{schema} ({} violations):\n  {}\n--- report\n{}",
            errors.len(),
            errors[..errors.len().min(10)].join("\n  "),
            report.chars().take(4000).collect::<String>()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_with_a_field_its_schema_lacks_fails() {
        let report =
            r#"{"apiVersion": "placekit.dev/v1", "kind": "NodeLabels", "items": [], "extra": 1}"#;
        let failed = std::panic::catch_unwind(|| check_reports(report));
        assert!(failed.is_err(), "an undeclared field must fail");
        check_reports(r#"{"apiVersion": "placekit.dev/v1", "kind": "NodeLabels", "items": []}"#);
    }

    #[test]
    fn a_kind_without_a_schema_fails_and_other_json_is_left_alone() {
        let unknown = r#"{"apiVersion": "placekit.dev/v1", "kind": "Nonesuch"}"#;
        assert!(std::panic::catch_unwind(|| check_reports(unknown)).is_err());
        check_reports(r#"{"apiVersion": "v1", "kind": "Node"}"#);
        check_reports("gpu-a100-1\n");
    }

    #[test]
    fn yaml_and_a_watchs_stream_are_each_checked() {
        let bad = "apiVersion: placekit.dev/v1\nkind: NodeLabels\nitems: 3\n";
        assert!(std::panic::catch_unwind(|| check_reports(bad)).is_err());
        let stream = "{\"apiVersion\": \"placekit.dev/v1\", \"kind\": \"NodeLabels\", \"items\": []}\n{\"apiVersion\": \"placekit.dev/v1\", \"kind\": \"NodeLabels\"}\n";
        assert!(std::panic::catch_unwind(|| check_reports(stream)).is_err());
    }
}
