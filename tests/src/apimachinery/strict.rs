//! Unknown fields, as the API server's decoder finds them (`fieldValidation`): the fields of
//! a body that the kind's Go type does not hold. `Strict` refuses them, `Warn` (the default)
//! drops them with a `Warning` header each, `Ignore` drops them quietly.
//!
//! The test server keeps objects as JSON, so it learns which fields a built-in kind holds from
//! the typed models of `k8s-openapi`: a body is decoded into the kind's type and encoded back,
//! and whatever did not survive the round trip is unknown. Custom resources and the kinds
//! the models lack are kept whole, as a CRD that preserves unknown fields keeps them.
//!
//! The models are those of Kubernetes v1.33 (the version `k8s-openapi` is built for in this
//! workspace), so a field added to a built-in kind after v1.33 is reported unknown here while
//! v1.37 accepts it; [`NEWER_FIELDS`] lists the ones a placement test might send.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::field::go_quote;

/// The `fieldValidation` directive of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    Ignore,
    /// What the API server does when the request names no directive.
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    /// Reads the query parameter; `Err` holds the value the API server does not support.
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value.unwrap_or_default() {
            "" | "Warn" => Ok(Self::Warn),
            "Ignore" => Ok(Self::Ignore),
            "Strict" => Ok(Self::Strict),
            other => Err(other.to_string()),
        }
    }

    /// The values the API server's options validation lists.
    pub const SUPPORTED: &'static [&'static str] = &["", "Ignore", "Strict", "Warn"];
}

/// Fields of built-in kinds newer than the models: `(kind, path pattern)`, `[]` standing for
/// any index. Kept when they appear, as v1.37 does.
const NEWER_FIELDS: &[(&str, &str)] = &[
    ("Pod", "spec.hostnameOverride"),
    ("Pod", "spec.containers[].restartPolicyRules"),
    ("Pod", "spec.initContainers[].restartPolicyRules"),
    ("Pod", "spec.workloadRef"),
];

/// The kind's object encoded back from its typed model, or `None` when the test server has
/// no model for it (custom resources, DRA's `resource.k8s.io/v1`) or the body does not
/// decode into it (the caller's own decoding reports that).
fn typed_round_trip(group: &str, kind: &str, obj: &Value) -> Option<Value> {
    use k8s_openapi::api::{apps, batch, coordination, core, policy};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    fn round_trip<T: DeserializeOwned + Serialize>(obj: &Value) -> Option<Value> {
        let typed = T::deserialize(obj).ok()?;
        serde_json::to_value(typed).ok()
    }
    match (group, kind) {
        ("", "Namespace") => round_trip::<core::v1::Namespace>(obj),
        ("", "Node") => round_trip::<core::v1::Node>(obj),
        ("", "ConfigMap") => round_trip::<core::v1::ConfigMap>(obj),
        ("", "Pod") => round_trip::<core::v1::Pod>(obj),
        ("", "Event") => round_trip::<core::v1::Event>(obj),
        ("", "Service") => round_trip::<core::v1::Service>(obj),
        ("apps", "Deployment") => round_trip::<apps::v1::Deployment>(obj),
        ("apps", "StatefulSet") => round_trip::<apps::v1::StatefulSet>(obj),
        ("apps", "DaemonSet") => round_trip::<apps::v1::DaemonSet>(obj),
        ("apps", "ReplicaSet") => round_trip::<apps::v1::ReplicaSet>(obj),
        ("batch", "Job") => round_trip::<batch::v1::Job>(obj),
        ("batch", "CronJob") => round_trip::<batch::v1::CronJob>(obj),
        ("policy", "PodDisruptionBudget") => round_trip::<policy::v1::PodDisruptionBudget>(obj),
        ("coordination.k8s.io", "Lease") => round_trip::<coordination::v1::Lease>(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            round_trip::<apiextensions::CustomResourceDefinition>(obj)
        }
        _ => None,
    }
}

/// Removes the fields of `obj` that its kind does not hold and returns their paths in the
/// API server's notation (`spec.containers[0].foo`), in the order of the body.
pub fn drop_unknown_fields(group: &str, version: &str, kind: &str, obj: &mut Value) -> Vec<String> {
    // The models check the type meta; the URL decides it on the server.
    let api_version = api_version(group, version);
    let known = if obj["apiVersion"] == api_version.as_str() && obj["kind"] == kind {
        typed_round_trip(group, kind, obj)
    } else {
        let mut probe = obj.clone();
        probe["apiVersion"] = Value::from(api_version);
        probe["kind"] = Value::from(kind);
        typed_round_trip(group, kind, &probe)
    };
    let Some(known) = known else {
        return Vec::new();
    };
    let mut unknown = Vec::new();
    prune(kind, obj, &known, "", "", &mut unknown);
    unknown
}

/// The unknown fields of a merge or strategic merge patch, removed from it: a patch has
/// the object's shape, so what it does not hold the patched object would not either, and a
/// patch is far smaller than the object it changes. Deletions (`null`) and the strategic
/// patch's directives (`$patch`, `$setElementOrder/…`) are not fields.
pub fn drop_unknown_fields_in_patch(
    group: &str,
    version: &str,
    kind: &str,
    patch: &mut Value,
) -> Vec<String> {
    fn fields_only(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, v)| !v.is_null() && !k.starts_with('$'))
                    .map(|(k, v)| (k.clone(), fields_only(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(fields_only).collect()),
            other => other.clone(),
        }
    }
    let mut probe = fields_only(patch);
    probe["apiVersion"] = Value::from(api_version(group, version));
    probe["kind"] = Value::from(kind);
    let Some(known) = typed_round_trip(group, kind, &probe) else {
        return Vec::new();
    };
    let mut unknown = Vec::new();
    prune(kind, patch, &known, "", "", &mut unknown);
    unknown
}

fn api_version(group: &str, version: &str) -> String {
    match group {
        "" => version.to_string(),
        g => format!("{g}/{version}"),
    }
}

/// Walks `obj` beside its round-tripped `known` twin. `pattern` is the path with indices
/// left out, to look [`NEWER_FIELDS`] up.
fn prune(
    kind: &str,
    obj: &mut Value,
    known: &Value,
    path: &str,
    pattern: &str,
    unknown: &mut Vec<String>,
) {
    match (obj, known) {
        (Value::Object(fields), Value::Object(known_fields)) => {
            let mut removed = Vec::new();
            for (key, value) in fields.iter_mut() {
                let child = join(path, key);
                let child_pattern = join(pattern, key);
                match known_fields.get(key) {
                    Some(known_value) => {
                        prune(kind, value, known_value, &child, &child_pattern, unknown)
                    }
                    // A `null` decodes to an absent optional field: nothing to tell; a
                    // `$` key is a strategic merge patch directive.
                    None if value.is_null() || key.starts_with('$') => {}
                    None if NEWER_FIELDS.contains(&(kind, child_pattern.as_str())) => {}
                    None => {
                        unknown.push(child);
                        removed.push(key.clone());
                    }
                }
            }
            for key in removed {
                fields.remove(&key);
            }
        }
        (Value::Array(items), Value::Array(known_items)) => {
            for (i, (item, known_item)) in items.iter_mut().zip(known_items).enumerate() {
                prune(
                    kind,
                    item,
                    known_item,
                    &format!("{path}[{i}]"),
                    &format!("{pattern}[]"),
                    unknown,
                );
            }
        }
        _ => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `strict decoding error: unknown field "a", unknown field "spec.b"`.
pub fn strict_error(unknown: &[String]) -> String {
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {}", go_quote(f)))
        .collect();
    format!("strict decoding error: {}", fields.join(", "))
}

/// The text of the `Warning` header for one dropped field.
pub fn warning(field: &str) -> String {
    format!("unknown field {}", go_quote(field))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_nested_unknown_fields_in_body_order_and_drops_them() {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "bogus": 2, "labels": {"any-key": "v"}},
            "spec": {"containers": [{"name": "c", "image": "i", "foo": 1}], "zz": {"a": 1},
                     "nodeSelector": {"x": "y"}, "hostnameOverride": "h"},
            "top": 1
        });
        let unknown = drop_unknown_fields("", "v1", "Pod", &mut pod);
        assert_eq!(
            unknown,
            ["metadata.bogus", "spec.containers[0].foo", "spec.zz", "top"]
        );
        assert!(pod["metadata"].get("bogus").is_none());
        assert!(pod["spec"]["containers"][0].get("foo").is_none());
        assert_eq!(pod["metadata"]["labels"]["any-key"], "v");
        assert_eq!(pod["spec"]["hostnameOverride"], "h");
        assert_eq!(
            strict_error(&unknown[..2]),
            r#"strict decoding error: unknown field "metadata.bogus", unknown field "spec.containers[0].foo""#
        );
    }

    #[test]
    fn kinds_without_a_model_keep_everything() {
        let mut cr = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {"x": 1}});
        assert!(drop_unknown_fields("ray.io", "v1", "RayCluster", &mut cr).is_empty());
        assert_eq!(cr["spec"]["x"], 1);
    }
}
