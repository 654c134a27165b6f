//! The three patch types the API server accepts, with its semantics:
//!
//! - JSON Patch (RFC 6902) as evanphx/json-patch v4 applies it, including its `test`
//!   quirk: testing a missing member against `null` succeeds;
//! - JSON merge patch (RFC 7386);
//! - strategic merge patch, for what kubectl sends: maps merge (`null` deletes), lists are
//!   replaced whole (true for `spec.taints`, which has no merge key) and `$`-directives
//!   (`$setElementOrder/...`, `$retainKeys`, `$patch`) are dropped. Lists with merge keys
//!   (containers by name, ...) are replaced rather than merged: a documented difference.

use serde_json::{Map, Value};

/// Why a JSON Patch did not apply (the server hides this text behind a generic 422).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError(pub String);

fn parse_pointer(path: &str) -> Result<Vec<String>, PatchError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| PatchError(format!("invalid path {path:?}")))?;
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

/// The container of the last token, like evanphx's `findObject`.
fn parent_mut<'a>(doc: &'a mut Value, tokens: &[String]) -> Option<&'a mut Value> {
    let mut cur = doc;
    for t in &tokens[..tokens.len().saturating_sub(1)] {
        cur = match cur {
            Value::Object(m) => m.get_mut(t)?,
            Value::Array(a) => a.get_mut(t.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn get<'a>(container: &'a Value, key: &str) -> Option<&'a Value> {
    match container {
        Value::Object(m) => m.get(key),
        Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    }
}

fn add(container: &mut Value, key: &str, value: Value, path: &str) -> Result<(), PatchError> {
    match container {
        Value::Object(m) => {
            m.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(a) => {
            if key == "-" {
                a.push(value);
                return Ok(());
            }
            let i: usize = key
                .parse()
                .map_err(|_| PatchError(format!("add operation: invalid index in {path}")))?;
            if i > a.len() {
                return Err(PatchError(format!(
                    "add operation: index out of bounds: {path}"
                )));
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(PatchError(format!(
            "add operation does not apply: doc is missing path: {path}"
        ))),
    }
}

fn remove(container: &mut Value, key: &str, path: &str) -> Result<Value, PatchError> {
    let missing = || {
        PatchError(format!(
            "remove operation does not apply: doc is missing path: {path}"
        ))
    };
    match container {
        Value::Object(m) => m.remove(key).ok_or_else(missing),
        Value::Array(a) => {
            let i: usize = key.parse().map_err(|_| missing())?;
            if i >= a.len() {
                return Err(missing());
            }
            Ok(a.remove(i))
        }
        _ => Err(missing()),
    }
}

/// Applies an RFC 6902 patch with evanphx/json-patch v4 semantics.
pub fn apply_json_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops = patch
        .as_array()
        .ok_or_else(|| PatchError("a JSON Patch must be an array".into()))?;
    let mut doc = doc.clone();
    for op in ops {
        let kind = op["op"].as_str().unwrap_or_default();
        let path = op["path"].as_str().unwrap_or_default();
        let tokens = parse_pointer(path)?;
        match kind {
            "test" => {
                if tokens.is_empty() {
                    if doc != op["value"] {
                        return Err(PatchError(format!(
                            "testing value {path} failed: test failed"
                        )));
                    }
                    continue;
                }
                let parent = parent_mut(&mut doc, &tokens).ok_or_else(|| {
                    PatchError(format!(
                        "test operation does not apply: is missing path: {path}"
                    ))
                })?;
                let expected = op.get("value").unwrap_or(&Value::Null);
                match get(parent, tokens.last().expect("non-empty")) {
                    None | Some(Value::Null) if expected.is_null() => {}
                    Some(actual) if actual == expected => {}
                    _ => {
                        return Err(PatchError(format!(
                            "testing value {path} failed: test failed"
                        )));
                    }
                }
            }
            "add" | "replace" => {
                let value = op
                    .get("value")
                    .cloned()
                    .ok_or_else(|| PatchError(format!("{kind} operation has no value")))?;
                if tokens.is_empty() {
                    doc = value;
                    continue;
                }
                let parent = parent_mut(&mut doc, &tokens).ok_or_else(|| {
                    PatchError(format!(
                        "{kind} operation does not apply: doc is missing path: {path}"
                    ))
                })?;
                let key = tokens.last().expect("non-empty");
                if kind == "replace" {
                    if get(parent, key).is_none() {
                        return Err(PatchError(format!(
                            "replace operation does not apply: doc is missing key: {path}"
                        )));
                    }
                    remove(parent, key, path)?;
                }
                add(parent, key, value, path)?;
            }
            "remove" => {
                let parent = parent_mut(&mut doc, &tokens)
                    .filter(|_| !tokens.is_empty())
                    .ok_or_else(|| {
                        PatchError(format!(
                            "remove operation does not apply: doc is missing path: {path}"
                        ))
                    })?;
                remove(parent, tokens.last().expect("non-empty"), path)?;
            }
            "move" | "copy" => {
                let from = op["from"].as_str().unwrap_or_default();
                let from_tokens = parse_pointer(from)?;
                let source_parent = parent_mut(&mut doc, &from_tokens)
                    .filter(|_| !from_tokens.is_empty())
                    .ok_or_else(|| {
                        PatchError(format!(
                            "{kind} operation does not apply: doc is missing from path: {from}"
                        ))
                    })?;
                let from_key = from_tokens.last().expect("non-empty");
                let value = if kind == "move" {
                    remove(source_parent, from_key, from)?
                } else {
                    get(source_parent, from_key).cloned().ok_or_else(|| {
                        PatchError(format!(
                            "copy operation does not apply: doc is missing from path: {from}"
                        ))
                    })?
                };
                let parent = parent_mut(&mut doc, &tokens)
                    .filter(|_| !tokens.is_empty())
                    .ok_or_else(|| PatchError(format!("{kind} operation does not apply: doc is missing destination path: {path}")))?;
                add(parent, tokens.last().expect("non-empty"), value, path)?;
            }
            other => return Err(PatchError(format!("Unexpected kind: {other}"))),
        }
    }
    Ok(doc)
}

/// RFC 7386 JSON merge patch.
pub fn apply_merge_patch(doc: &Value, patch: &Value) -> Value {
    merge(doc, patch, false)
}

/// Strategic merge patch, as far as kubectl's label/annotate/taint/cordon patches need.
pub fn apply_strategic_merge_patch(doc: &Value, patch: &Value) -> Value {
    merge(doc, patch, true)
}

fn merge(doc: &Value, patch: &Value, strategic: bool) -> Value {
    let Value::Object(patch_map) = patch else {
        return patch.clone();
    };
    let mut out: Map<String, Value> = match doc {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    for (k, v) in patch_map {
        if strategic && k.starts_with('$') {
            continue;
        }
        if v.is_null() {
            out.remove(k);
        } else {
            let merged = merge(out.get(k).unwrap_or(&Value::Null), v, strategic);
            out.insert(k.clone(), merged);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn test_null_passes_on_a_missing_member_like_the_api_server() {
        let doc = json!({"metadata": {"labels": {"a": "1"}}});
        let ok = json!([{"op": "test", "path": "/metadata/labels/b", "value": null}]);
        assert!(apply_json_patch(&doc, &ok).is_ok());
        let present = json!([{"op": "test", "path": "/metadata/labels/a", "value": null}]);
        assert!(apply_json_patch(&doc, &present).is_err());
        let no_parent = json!([{"op": "test", "path": "/metadata/annotations/x", "value": null}]);
        assert!(apply_json_patch(&doc, &no_parent).is_err());
        let missing_map = json!([{"op": "test", "path": "/metadata/annotations", "value": null}]);
        assert!(apply_json_patch(&doc, &missing_map).is_ok());
    }

    #[test]
    fn rfc6902_operations() {
        let doc = json!({"a": {"b~c": 1, "d/e": 2}, "l": [1, 2]});
        let patch = json!([
            {"op": "test", "path": "/a/b~0c", "value": 1},
            {"op": "replace", "path": "/a/d~1e", "value": 3},
            {"op": "add", "path": "/l/-", "value": 4},
            {"op": "add", "path": "/l/0", "value": 0},
            {"op": "remove", "path": "/l/1"},
            {"op": "copy", "from": "/a/d~1e", "path": "/c"},
            {"op": "move", "from": "/c", "path": "/m"},
        ]);
        assert_eq!(
            apply_json_patch(&doc, &patch).unwrap(),
            json!({"a": {"b~c": 1, "d/e": 3}, "l": [0, 2, 4], "m": 3})
        );
        assert!(
            apply_json_patch(&doc, &json!([{"op": "replace", "path": "/zz", "value": 1}])).is_err()
        );
        assert!(apply_json_patch(&doc, &json!([{"op": "remove", "path": "/zz"}])).is_err());
        assert!(
            apply_json_patch(
                &doc,
                &json!([{"op": "test", "path": "/a/b~0c", "value": 2}])
            )
            .is_err()
        );
        assert!(apply_json_patch(&doc, &json!([{"op": "bogus", "path": "/a"}])).is_err());
    }

    #[test]
    fn merge_patches() {
        let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"taints": [{"key": "x"}]}});
        let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}}, "spec": {"taints": [{"key": "y"}]}, "$setElementOrder/x": []});
        assert_eq!(
            apply_strategic_merge_patch(&doc, &patch),
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"taints": [{"key": "y"}]}})
        );
        assert!(
            apply_merge_patch(&doc, &patch)
                .get("$setElementOrder/x")
                .is_some()
        );
    }
}
