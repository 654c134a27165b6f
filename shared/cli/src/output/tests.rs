//! The published schemas are the types' own, and a published schema only grows.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::{SCHEMA_DIR, published_schemas};

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(SCHEMA_DIR)
}

/// Fails when a type and its published schema differ. `UPDATE_SCHEMAS=1` rewrites the files
/// for an additive change, and refuses one that is not: that is a new `apiVersion`.
#[test]
fn published_schemas_are_current() {
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for (path, schema) in published_schemas() {
        let file = schema_dir().join(&path);
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&schema).expect("schemas serialise")
        );
        let published: Option<Value> = std::fs::read_to_string(&file)
            .ok()
            .map(|t| serde_json::from_str(&t).expect("a published schema is JSON"));
        if let Some(published) = &published {
            let breaking = breaking_changes(published, &schema);
            assert!(
                breaking.is_empty(),
                "{path}: the types changed the published schema in a way that is not additive; \
                 a script written against it would break. Keep the field (or make a new \
                 apiVersion):\n  {}",
                breaking.join("\n  ")
            );
        }
        if published.as_ref() == Some(&schema) {
            continue;
        }
        if update {
            std::fs::create_dir_all(file.parent().expect("a parent")).expect("schema dir");
            std::fs::write(&file, text).expect("write schema");
        } else {
            stale.push(path);
        }
    }
    assert!(
        stale.is_empty(),
        "published schemas differ from their types (the change is additive): run \
         `UPDATE_SCHEMAS=1 cargo test -p placekit-cli --lib output` and commit docs/schemas/: {stale:?}"
    );
}

/// Every file under docs/schemas/ is a schema the types still generate.
#[test]
fn no_published_schema_is_orphaned() {
    let generated: Vec<String> = published_schemas().into_iter().map(|(p, _)| p).collect();
    let mut orphaned = Vec::new();
    for dir in ["v1", "affinity-lint"] {
        for entry in std::fs::read_dir(schema_dir().join(dir)).expect("schema dir") {
            let name = format!(
                "{dir}/{}",
                entry.expect("entry").file_name().to_string_lossy()
            );
            if !generated.contains(&name) {
                orphaned.push(name);
            }
        }
    }
    assert!(orphaned.is_empty(), "no type generates {orphaned:?}");
}

/// What `new` drops of `old` that a reader of `old` relies on: a property, that it is
/// required, its type, a value of an enumeration or a constant, a branch of a `oneOf`.
fn breaking_changes(old: &Value, new: &Value) -> Vec<String> {
    let mut found = Vec::new();
    compare(old, old, new, new, "", &mut found);
    found
}

/// `schema` with its `$ref` into `root`'s `$defs` followed.
fn resolved<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference.trim_start_matches("#/$defs/");
            resolved(root, &root["$defs"][name])
        }
        None => schema,
    }
}

fn compare(
    old_root: &Value,
    old: &Value,
    new_root: &Value,
    new: &Value,
    at: &str,
    found: &mut Vec<String>,
) {
    let (old, new) = (resolved(old_root, old), resolved(new_root, new));
    let here = if at.is_empty() { "(the report)" } else { at };
    if old.get("type") != new.get("type") && old.get("type").is_some() {
        found.push(format!(
            "{here}: type {} became {}",
            old["type"],
            new.get("type").unwrap_or(&Value::Null)
        ));
    }
    if old.get("const").is_some() && old.get("const") != new.get("const") {
        found.push(format!("{here}: the constant {} changed", old["const"]));
    }
    for value in old["enum"].as_array().into_iter().flatten() {
        if !new["enum"]
            .as_array()
            .is_some_and(|values| values.contains(value))
        {
            found.push(format!("{here}: the value {value} is gone"));
        }
    }
    for name in old["required"].as_array().into_iter().flatten() {
        if !new["required"]
            .as_array()
            .is_some_and(|names| names.contains(name))
        {
            found.push(format!(
                "{at}.{}: no longer always present",
                name.as_str().unwrap_or("?")
            ));
        }
    }
    for (name, property) in old["properties"].as_object().into_iter().flatten() {
        let path = format!("{at}.{name}");
        match new["properties"].get(name) {
            Some(kept) => compare(old_root, property, new_root, kept, &path, found),
            None => found.push(format!("{path}: removed")),
        }
    }
    if let Some(items) = old.get("items") {
        let kept = new.get("items").unwrap_or(&Value::Null);
        compare(old_root, items, new_root, kept, &format!("{at}[]"), found);
    }
    if let Some(values) = old.get("additionalProperties").filter(|v| v.is_object()) {
        let kept = new.get("additionalProperties").unwrap_or(&Value::Null);
        compare(
            old_root,
            values,
            new_root,
            kept,
            &format!("{at}{{}}"),
            found,
        );
    }
    for branches in ["oneOf", "anyOf"] {
        let (before, after) = (old[branches].as_array(), new[branches].as_array());
        for (i, branch) in before.into_iter().flatten().enumerate() {
            match after.and_then(|a| a.get(i)) {
                Some(kept) => compare(
                    old_root,
                    branch,
                    new_root,
                    kept,
                    &format!("{at}<{branches} {i}>"),
                    found,
                ),
                None => found.push(format!("{here}: {branches} branch {i} is gone")),
            }
        }
    }
}

#[test]
fn a_new_field_is_additive_and_a_lost_or_retyped_one_is_not() {
    let old = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "outcome": {"$ref": "#/$defs/Outcome"},
            "nodes": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "outcome"],
        "$defs": {"Outcome": {"type": "string", "enum": ["applied", "failed"]}},
    });
    let mut grown = old.clone();
    grown["properties"]["message"] = json!({"type": "string"});
    grown["$defs"]["Outcome"]["enum"] = json!(["applied", "failed", "unknown"]);
    assert_eq!(breaking_changes(&old, &grown), Vec::<String>::new());

    let mut shrunk = old.clone();
    shrunk["properties"]
        .as_object_mut()
        .unwrap()
        .remove("nodes");
    shrunk["required"] = json!(["name"]);
    shrunk["$defs"]["Outcome"]["enum"] = json!(["applied"]);
    shrunk["properties"]["name"]["type"] = json!(["string", "null"]);
    assert_eq!(
        breaking_changes(&old, &shrunk),
        [
            ".outcome: no longer always present",
            ".name: type \"string\" became [\"string\",\"null\"]",
            ".nodes: removed",
            ".outcome: the value \"failed\" is gone",
        ]
    );
}

/// The schema is closed: a field the types do not declare is refused, and the head is fixed.
#[test]
fn a_schema_fixes_its_kind_and_closes_its_objects() {
    let (_, schema) = published_schemas()
        .into_iter()
        .find(|(path, _)| path == "v1/DriftReport.json")
        .expect("DriftReport is published");
    assert_eq!(
        schema["properties"]["kind"],
        json!({"const": "DriftReport"})
    );
    assert_eq!(
        schema["properties"]["apiVersion"],
        json!({"const": "placekit.dev/v1"})
    );
    assert_eq!(schema["additionalProperties"], json!(false));
    let required = schema["required"].as_array().expect("required");
    assert!(required.contains(&json!("kind")) && required.contains(&json!("items")));
}
