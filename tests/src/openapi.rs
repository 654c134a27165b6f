//! `/openapi/v3`: what kubectl reads before it writes. `kubectl create`, `apply` and
//! `replace` validate by default (`--validate=strict`): they look up the kind's PATCH
//! operation in the group/version's OpenAPI v3 document and, when it takes the
//! `fieldValidation` parameter, leave the checking to the server (`fieldValidation=Strict`);
//! without the documents kubectl stops with "failed to download openapi".
//!
//! The documents list every path the test server serves with the operations it implements,
//! their parameters, and the patch media types it accepts. They carry no schemas: kubectl
//! then builds `apply` patches from its compiled-in types (built-in kinds) or as JSON merge
//! patches (custom resources), as it does against servers without schemas; `kubectl explain`
//! has nothing to show.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Value, json};

use crate::resources::{GROUPS, RESOURCES, Resource};

/// The group/versions with a document, as the root names them (`api/v1`, `apis/apps/v1`).
fn group_versions() -> impl Iterator<Item = (String, &'static str, &'static str)> {
    std::iter::once(("api/v1".to_string(), "", "v1")).chain(
        GROUPS
            .iter()
            .filter(|(g, _)| RESOURCES.iter().any(|r| r.group == *g))
            .map(|(g, v)| (format!("apis/{g}/{v}"), *g, *v)),
    )
}

/// `GET /openapi/v3`: where each group/version's document is, with a hash of its content
/// (kubectl caches documents by that URL).
pub fn root() -> Value {
    let mut paths = serde_json::Map::new();
    for (path, group, version) in group_versions() {
        let hash = content_hash(&document(group, version));
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
        );
    }
    json!({ "paths": paths })
}

/// `GET /openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`.
pub fn group_version(segments: &[&str]) -> Option<Value> {
    let (group, version) = match segments {
        ["api", "v1"] => ("", "v1"),
        ["apis", g, v] => (*g, *v),
        _ => return None,
    };
    group_versions()
        .any(|(_, g, v)| g == group && v == version)
        .then(|| document(group, version))
}

fn content_hash(document: &Value) -> String {
    let mut hasher = DefaultHasher::new();
    document.to_string().hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

fn document(group: &str, version: &str) -> Value {
    let mut paths = serde_json::Map::new();
    for r in RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let prefix = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let scope = if r.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let collection = format!("{prefix}{scope}/{}", r.plural);
        paths.insert(
            collection.clone(),
            json!({
                "get": operation(r, "list", &["labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "watch"]),
                "post": operation(r, "post", &["dryRun", "fieldManager", "fieldValidation"]),
            }),
        );
        let mut patch = operation(
            r,
            "patch",
            &["dryRun", "fieldManager", "fieldValidation", "force"],
        );
        patch["requestBody"] = json!({"content": patch_media_types(r)});
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({
                "get": operation(r, "get", &[]),
                "put": operation(r, "put", &["dryRun", "fieldManager", "fieldValidation"]),
                "patch": patch,
                "delete": operation(r, "delete", &["dryRun", "gracePeriodSeconds"]),
            }),
        );
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "1.37"},
        "paths": paths,
        "components": {"schemas": {}},
    })
}

fn operation(r: &Resource, action: &str, parameters: &[&str]) -> Value {
    json!({
        "operationId": format!("{action}{}", r.kind),
        "parameters": parameters.iter().map(|name| json!({
            "name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true},
        })).collect::<Vec<_>>(),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
    })
}

/// Built-in kinds take strategic merge patches; custom resources do not.
fn patch_media_types(r: &Resource) -> Value {
    let mut types = vec![
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if crate::resources::is_built_in(r) {
        types.push("application/strategic-merge-patch+json");
    }
    types
        .into_iter()
        .map(|t| (t.to_string(), json!({"schema": {}})))
        .collect::<serde_json::Map<_, _>>()
        .into()
}
