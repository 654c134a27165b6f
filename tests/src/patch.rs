//! The three patch types the API server accepts, with its semantics:
//!
//! - JSON Patch (RFC 6902) as evanphx/json-patch v4 applies it, with its quirks: `test`
//!   against `null` succeeds on a missing member; `test` compares scalars by their bytes —
//!   the bytes the client sent against the object as Go encodes it (`&`, `<`, `>` as
//!   `\u0026`, `\u003c`, `\u003e`), so `"a&b"` does not test equal to a stored `a&b` while
//!   `"a\u0026b"` does, and `"\u0032"` is not `"2"`; `replace` of a missing object member
//!   adds it;
//! - JSON merge patch (RFC 7386);
//! - strategic merge patch, for what kubectl sends: maps merge (`null` deletes), lists with
//!   a merge key merge item by item (containers and env by name, ports by containerPort,
//!   ownerReferences by uid, ...), other lists are replaced whole (true for `spec.taints`
//!   and tolerations, which have none), `$patch: replace` and `$patch: delete` in a map or
//!   a keyed item are honoured and the other `$`-directives (`$setElementOrder/...`,
//!   `$retainKeys`) are dropped.

use std::collections::BTreeMap;

/// How a patch body is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
}

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::apimachinery::field::go_json;

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

/// An array index as evanphx/json-patch v4 reads it (`SupportNegativeIndices`): `-1` is the
/// last element, counted from the end of an array `len` long.
fn array_index(key: &str, len: usize) -> Option<usize> {
    let i: i64 = key.parse().ok()?;
    let len = i64::try_from(len).ok()?;
    if i < -len {
        return None;
    }
    usize::try_from(if i < 0 { i + len } else { i }).ok()
}

/// The container of the last token, like evanphx's `findObject`.
fn parent_mut<'a>(doc: &'a mut Value, tokens: &[String]) -> Option<&'a mut Value> {
    let mut cur = doc;
    for t in &tokens[..tokens.len().saturating_sub(1)] {
        cur = match cur {
            Value::Object(m) => m.get_mut(t)?,
            Value::Array(a) => {
                let i = array_index(t, a.len())?;
                a.get_mut(i)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

fn get<'a>(container: &'a Value, key: &str) -> Option<&'a Value> {
    match container {
        Value::Object(m) => m.get(key),
        Value::Array(a) => array_index(key, a.len()).and_then(|i| a.get(i)),
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
            key.parse::<i64>()
                .map_err(|_| PatchError(format!("add operation: invalid index in {path}")))?;
            // An add counts from the end of the array it makes, one longer: `-1` appends.
            let i = array_index(key, a.len() + 1)
                .ok_or_else(|| PatchError(format!("add operation: index out of bounds: {path}")))?;
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
            let i = array_index(key, a.len()).ok_or_else(missing)?;
            if i >= a.len() {
                return Err(missing());
            }
            Ok(a.remove(i))
        }
        _ => Err(missing()),
    }
}

/// One operation of a JSON Patch, its members kept as the bytes the client sent.
type Operation = BTreeMap<String, Box<RawValue>>;

fn member_str(op: &Operation, key: &str) -> String {
    op.get(key)
        .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
        .unwrap_or_default()
}

/// evanphx's `lazyNode.equal`: objects by their members, arrays element by element, and
/// everything else by the bytes, the document's as Go's encoder writes them.
fn equal_as_go(doc: &Value, raw: &RawValue) -> bool {
    match doc {
        Value::Object(members) => {
            let Ok(other) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(raw.get())
            else {
                return false;
            };
            members.len() == other.len()
                && members.iter().all(|(k, v)| match other.get(k) {
                    None => false,
                    Some(o) if v.is_null() || o.get() == "null" => v.is_null() && o.get() == "null",
                    Some(o) => equal_as_go(v, o),
                })
        }
        Value::Array(items) => {
            let Ok(other) = serde_json::from_str::<Vec<Box<RawValue>>>(raw.get()) else {
                return false;
            };
            items.len() == other.len() && items.iter().zip(&other).all(|(v, o)| equal_as_go(v, o))
        }
        scalar => go_json(scalar) == raw.get(),
    }
}

/// Applies an RFC 6902 patch with evanphx/json-patch v4 semantics (see the module
/// documentation); the patch as a value, sent as serde_json writes it.
pub fn apply_json_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    apply_json_patch_bytes(doc, &patch.to_string())
}

/// Applies an RFC 6902 patch given as the bytes the client sent.
pub fn apply_json_patch_bytes(doc: &Value, patch: &str) -> Result<Value, PatchError> {
    let ops: Vec<Operation> = serde_json::from_str(patch)
        .map_err(|e| PatchError(format!("a JSON Patch must be an array of objects: {e}")))?;
    let mut doc = doc.clone();
    for op in &ops {
        let kind = member_str(op, "op");
        let path = member_str(op, "path");
        let tokens = parse_pointer(&path)?;
        let value = || -> Result<Value, PatchError> {
            let raw = op
                .get("value")
                .ok_or_else(|| PatchError(format!("{kind} operation has no value")))?;
            serde_json::from_str(raw.get()).map_err(|e| PatchError(e.to_string()))
        };
        match kind.as_str() {
            "test" => {
                let expected = op.get("value").filter(|v| v.get() != "null");
                if tokens.is_empty() {
                    if !expected.is_some_and(|e| equal_as_go(&doc, e)) {
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
                let actual =
                    get(parent, tokens.last().expect("non-empty")).filter(|v| !v.is_null());
                let ok = match (actual, expected) {
                    (None, None) => true,
                    (Some(a), Some(e)) => equal_as_go(a, e),
                    _ => false,
                };
                if !ok {
                    return Err(PatchError(format!(
                        "testing value {path} failed: test failed"
                    )));
                }
            }
            "add" | "replace" => {
                let value = value()?;
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
                // v4's `replace` looks the member up with a `get` that cannot fail on an
                // object, so a missing member is simply added; an array index must exist.
                if kind == "replace" && parent.is_array() {
                    if get(parent, key).is_none() {
                        return Err(PatchError(format!(
                            "replace operation does not apply: doc is missing key: {path}"
                        )));
                    }
                    remove(parent, key, &path)?;
                }
                add(parent, key, value, &path)?;
            }
            "remove" => {
                let parent = parent_mut(&mut doc, &tokens)
                    .filter(|_| !tokens.is_empty())
                    .ok_or_else(|| {
                        PatchError(format!(
                            "remove operation does not apply: doc is missing path: {path}"
                        ))
                    })?;
                remove(parent, tokens.last().expect("non-empty"), &path)?;
            }
            "move" | "copy" => {
                let from = member_str(op, "from");
                let from_tokens = parse_pointer(&from)?;
                let source_parent = parent_mut(&mut doc, &from_tokens)
                    .filter(|_| !from_tokens.is_empty())
                    .ok_or_else(|| {
                        PatchError(format!(
                            "{kind} operation does not apply: doc is missing from path: {from}"
                        ))
                    })?;
                let from_key = from_tokens.last().expect("non-empty");
                let value = if kind == "move" {
                    remove(source_parent, from_key, &from)?
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
                add(parent, tokens.last().expect("non-empty"), value, &path)?;
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
    let directive = patch_map.get("$patch").and_then(Value::as_str);
    let mut out: Map<String, Value> = match (doc, directive) {
        // `$patch: replace` makes the patch's map the whole new value.
        (_, Some("replace")) if strategic => Map::new(),
        (Value::Object(m), _) => m.clone(),
        _ => Map::new(),
    };
    for (k, v) in patch_map {
        if strategic && k.starts_with('$') {
            continue;
        }
        let delete_directive =
            strategic && v.get("$patch").and_then(Value::as_str) == Some("delete");
        if v.is_null() || delete_directive {
            out.remove(k);
        } else if let (true, Some(key), Value::Array(items)) = (strategic, merge_key(k), v) {
            let merged = merge_list_by_key(out.get(k).unwrap_or(&Value::Null), items, key);
            out.insert(k.clone(), merged);
        } else {
            let merged = merge(out.get(k).unwrap_or(&Value::Null), v, strategic);
            out.insert(k.clone(), merged);
        }
    }
    Value::Object(out)
}

/// The `patchMergeKey` of the lists the served kinds hold, by field name (each name means
/// one list type in Pod, Node, ConfigMap and the workloads): a strategic merge patch
/// merges their items by it. Lists without one (`tolerations`, `spec.taints`) are replaced.
fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "ports" => "containerPort",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "ownerReferences" => "uid",
        "conditions" | "addresses" => "type",
        "hostAliases" => "ip",
        "topologySpreadConstraints" => "topologyKey",
        _ => return None,
    })
}

/// Merges a patch's list into the object's by `key`: an item with the key of an existing one
/// is merged into it (strategically), `$patch: delete` removes it, a new one is added. The
/// order is apimachinery's `normalizeElementOrder`: the patch's items in the patch's order,
/// the items it does not mention in their order, the two interleaved by their places in the
/// object's list (a new item goes after the existing ones it meets).
fn merge_list_by_key(doc: &Value, patch: &[Value], key: &str) -> Value {
    let original: Vec<Value> = doc.as_array().cloned().unwrap_or_default();
    let place = |id: &Value| original.iter().position(|o| o.get(key) == Some(id));
    let mut mentioned: Vec<Value> = Vec::new();
    let mut deleted: Vec<&Value> = Vec::new();
    for item in patch {
        let Some(id) = item.get(key) else {
            mentioned.push(item.clone());
            continue;
        };
        if item.get("$patch").and_then(Value::as_str) == Some("delete") {
            deleted.push(id);
            continue;
        }
        let base = place(id).map_or(Value::Null, |i| original[i].clone());
        mentioned.push(merge(&base, item, true));
    }
    let is_mentioned = |o: &Value| {
        o.get(key)
            .is_some_and(|id| deleted.contains(&id) || patch.iter().any(|p| p.get(key) == Some(id)))
    };
    let untouched: Vec<Value> = original
        .iter()
        .filter(|o| !is_mentioned(o))
        .cloned()
        .collect();
    let mut out = Vec::with_capacity(untouched.len() + mentioned.len());
    let (mut i, mut j) = (0, 0);
    while i < untouched.len() && j < mentioned.len() {
        let left = untouched[i].get(key).and_then(&place);
        let right = mentioned[j].get(key).and_then(&place);
        let take_left = match (left, right) {
            (Some(l), Some(r)) => l < r,
            (Some(_), None) => true,
            _ => false,
        };
        if take_left {
            out.push(untouched[i].clone());
            i += 1;
        } else {
            out.push(mentioned[j].clone());
            j += 1;
        }
    }
    out.extend_from_slice(&untouched[i..]);
    out.extend_from_slice(&mentioned[j..]);
    Value::Array(out)
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
            apply_json_patch(
                &doc,
                &json!([{"op": "replace", "path": "/zz/y", "value": 1}])
            )
            .is_err()
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
        // v4: `replace` of a missing object member adds it; of a missing index fails.
        assert_eq!(
            apply_json_patch(
                &doc,
                &json!([{"op": "replace", "path": "/a/new", "value": 1}])
            )
            .unwrap()["a"]["new"],
            1
        );
        assert!(
            apply_json_patch(
                &doc,
                &json!([{"op": "replace", "path": "/l/5", "value": 1}])
            )
            .is_err()
        );
    }

    #[test]
    fn test_compares_the_bytes_sent_with_the_go_encoding() {
        let doc = json!({"a": "x&y<z>", "n": "2", "m": {"k": "x&y"}});
        let test = |raw: &str| apply_json_patch_bytes(&doc, raw).is_ok();
        assert!(!test(r#"[{"op":"test","path":"/a","value":"x&y<z>"}]"#));
        assert!(test(
            r#"[{"op":"test","path":"/a","value":"x\u0026y\u003cz\u003e"}]"#
        ));
        assert!(test(r#"[{"op":"test","path":"/n","value": "2" }]"#));
        assert!(!test(r#"[{"op":"test","path":"/n","value":"\u0032"}]"#));
        assert!(test(
            r#"[{"op":"test","path":"/m","value":{"k":"x\u0026y"}}]"#
        ));
        assert!(!test(r#"[{"op":"test","path":"/m","value":{"k":"x&y"}}]"#));
        assert!(test(r#"[{"op":"test","path":"/missing","value":null}]"#));
    }

    #[test]
    fn strategic_patch_directives_on_maps() {
        let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let replaced = apply_strategic_merge_patch(
            &doc,
            &json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
        );
        assert_eq!(replaced, json!({"metadata": {"labels": {"c": "3"}}}));
        let deleted = apply_strategic_merge_patch(
            &doc,
            &json!({"metadata": {"labels": {"$patch": "delete"}}}),
        );
        assert_eq!(deleted, json!({"metadata": {}}));
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
