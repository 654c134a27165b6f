//! CustomResourceDefinition schemas, for judging a custom resource as the API server does:
//! a field its structural schema does not declare is pruned when the object is created
//! (and refused by `kubectl apply`'s strict validation), unless the schema keeps unknown
//! fields there (`x-kubernetes-preserve-unknown-fields`).
//!
//! The schemas come from the user's own files (`--crd-dir DIR`): a chart's `crds/`, or
//! `kubectl get crd -o yaml` saved once.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::yaml::{Node, NodeKind};

/// The CRDs read, by (API group, kind), each version's `openAPIV3Schema`.
#[derive(Debug, Default, Clone)]
pub struct CrdSchemas {
    by_kind: BTreeMap<(String, String), BTreeMap<String, Value>>,
}

/// What the API server does with fields a CRD does not declare: a CRD migrated from
/// `v1beta1` with `spec.preserveUnknownFields: true` keeps them all.
const KEEPS_EVERYTHING: &str = "x-placekit-keeps-unknown-fields";

impl CrdSchemas {
    /// Reads every `.yaml`, `.yml` and `.json` file under `dir` (recursively) and keeps the
    /// CustomResourceDefinitions among their documents. A file that is not YAML is an error
    /// naming it; documents of other kinds are skipped.
    pub fn load_dir(dir: &Path) -> Result<Self, String> {
        let mut schemas = CrdSchemas::default();
        let mut pending = vec![dir.to_path_buf()];
        let mut files = Vec::new();
        while let Some(d) = pending.pop() {
            let entries =
                std::fs::read_dir(&d).map_err(|e| format!("--crd-dir {}: {e}", d.display()))?;
            for entry in entries {
                let path = entry
                    .map_err(|e| format!("--crd-dir {}: {e}", d.display()))?
                    .path();
                // A symlink to a directory is not followed (no loops), as the lint's walk.
                let link =
                    std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
                if path.is_dir() {
                    if !link {
                        pending.push(path);
                    }
                } else if path
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
                {
                    files.push(path);
                }
            }
        }
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("--crd-dir: {}: {e}", file.display()))?;
            for document in serde_yaml::Deserializer::from_str(&text) {
                let value: Value = serde::Deserialize::deserialize(document)
                    .map_err(|e| format!("--crd-dir: {}: {e}", file.display()))?;
                schemas.add(&value);
            }
        }
        Ok(schemas)
    }

    /// Adds the CRDs among the documents of `text` (a file linted: charts ship their CRDs
    /// beside the resources). A document that is not YAML is skipped: the lint reports it.
    pub fn add_from_text(&mut self, text: &str) {
        if !text.contains("CustomResourceDefinition") {
            return;
        }
        for document in serde_yaml::Deserializer::from_str(text) {
            match <Value as serde::Deserialize>::deserialize(document) {
                Ok(value) => {
                    self.add(&value);
                }
                Err(_) => return,
            }
        }
    }

    /// Keeps `document` if it is a CustomResourceDefinition (`apiextensions.k8s.io/v1`);
    /// returns whether it was.
    pub fn add(&mut self, document: &Value) -> bool {
        // `kubectl get crd -o yaml` prints a List.
        if document["kind"]
            .as_str()
            .is_some_and(|k| k.ends_with("List"))
        {
            let mut any = false;
            for item in document["items"].as_array().into_iter().flatten() {
                any |= self.add(item);
            }
            return any;
        }
        if document["kind"] != "CustomResourceDefinition" {
            return false;
        }
        let spec = &document["spec"];
        let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str())
        else {
            return false;
        };
        let keeps_everything = spec["preserveUnknownFields"] == true;
        let mut versions = BTreeMap::new();
        // A version the API server does not serve (`served: false`) judges no object.
        for version in spec["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["served"] != false)
        {
            if let (Some(name), Some(schema)) = (
                version["name"].as_str(),
                version.pointer("/schema/openAPIV3Schema"),
            ) {
                let mut schema = schema.clone();
                if keeps_everything {
                    schema[KEEPS_EVERYTHING] = Value::Bool(true);
                }
                versions.insert(name.to_string(), schema);
            }
        }
        // A CRD without a schema per version says nothing of its fields.
        if !versions.is_empty() {
            self.by_kind
                .entry((group.to_string(), kind.to_string()))
                .or_default()
                .extend(versions);
        }
        true
    }

    /// Adds the CRDs of `other` for kinds not read yet.
    pub fn add_missing(&mut self, other: CrdSchemas) {
        for (key, versions) in other.by_kind {
            let mine = self.by_kind.entry(key).or_default();
            for (version, schema) in versions {
                mine.entry(version).or_insert(schema);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_kind.is_empty()
    }

    /// How many CRDs were read.
    pub fn len(&self) -> usize {
        self.by_kind.len()
    }

    /// Whether the schema of `kind` at `api_version` declares nothing under its `spec`
    /// (the whole object, or its spec, kept as unknown fields): it then says nothing about
    /// where a pod template's scheduling fields belong.
    pub fn declares_nothing(&self, api_version: &str, kind: &str) -> bool {
        let Some(schema) = self.schema(api_version, kind) else {
            return false;
        };
        let open = |s: &Value| {
            s[KEEPS_EVERYTHING] == true
                || (s["x-kubernetes-preserve-unknown-fields"] == true
                    && s["properties"].as_object().is_none_or(|p| p.is_empty()))
        };
        open(schema) || schema.pointer("/properties/spec").is_none_or(open)
    }

    /// The schema of `kind` at `api_version` (`group/version`), if its CRD was read.
    pub fn schema(&self, api_version: &str, kind: &str) -> Option<&Value> {
        let (group, version) = api_version.split_once('/')?;
        self.by_kind
            .get(&(group.to_string(), kind.to_string()))?
            .get(version)
    }
}

/// The `(apiVersion, kind)` of the custom resources among the documents of `text` (an API
/// group with a dot: not a core or built-in kind), for reading their CRDs from a cluster.
pub fn custom_kinds(text: &str) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct TypeMeta {
        #[serde(default)]
        api_version: Option<String>,
        #[serde(default)]
        kind: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Items {
        #[serde(default)]
        items: Vec<TypeMeta>,
    }
    let custom = |meta: TypeMeta, out: &mut Vec<(String, String)>| {
        if let (Some(api_version), Some(kind)) = (meta.api_version, meta.kind)
            && api_version
                .split_once('/')
                .is_some_and(|(group, _)| group.contains('.') && !group.ends_with(".k8s.io"))
        {
            out.push((api_version, kind));
        }
    };
    let mut out = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let Ok(value) = <serde_yaml::Value as serde::Deserialize>::deserialize(document) else {
            break;
        };
        let is_list = value
            .get("kind")
            .and_then(serde_yaml::Value::as_str)
            .is_some_and(|k| k.ends_with("List"));
        if is_list {
            if let Ok(list) = serde_yaml::from_value::<Items>(value) {
                for item in list.items {
                    custom(item, &mut out);
                }
            }
        } else if let Ok(meta) = serde_yaml::from_value::<TypeMeta>(value) {
            custom(meta, &mut out);
        }
    }
    out
}

/// The fields of `object` that `schema` does not declare, as (path, the key's node): the
/// API server prunes them on create. `metadata`, `apiVersion` and `kind` are the API
/// server's own, not the schema's.
pub fn undeclared<'a>(object: &'a Node, schema: &Value) -> Vec<(String, &'a Node)> {
    let mut out = Vec::new();
    if schema[KEEPS_EVERYTHING] == true {
        return out;
    }
    for (key, value) in object.entries() {
        let Some(name) = key.as_str() else { continue };
        if matches!(name, "metadata" | "apiVersion" | "kind") {
            continue;
        }
        walk(key, value, name.to_string(), schema, &mut out);
    }
    out
}

/// Judges the field `key: value` at `path` against the schema of its parent (`parent`).
fn walk<'a>(
    key: &'a Node,
    value: &'a Node,
    path: String,
    parent: &Value,
    out: &mut Vec<(String, &'a Node)>,
) {
    let Some(name) = key.as_str() else { return };
    // A strategic-merge directive of a kustomize patch (`$patch`, `$retainKeys`).
    if name.starts_with('$') {
        return;
    }
    let declared = parent
        .pointer("/properties")
        .and_then(|p| p.get(name))
        .or_else(|| parent.get("additionalProperties").filter(|a| a.is_object()));
    let Some(schema) = declared else {
        let kept = parent["x-kubernetes-preserve-unknown-fields"] == true
            || parent["additionalProperties"] == true;
        if !kept {
            out.push((path, key));
        }
        return;
    };
    value_against(value, path, schema, out);
}

/// Walks a value against its own schema.
fn value_against<'a>(
    value: &'a Node,
    path: String,
    schema: &Value,
    out: &mut Vec<(String, &'a Node)>,
) {
    match &value.kind {
        NodeKind::Map(_) => {
            for (k, v) in value.entries() {
                let Some(name) = k.as_str() else { continue };
                walk(k, v, format!("{path}.{name}"), schema, out);
            }
        }
        NodeKind::Seq(_) => {
            if let Some(items) = schema.get("items") {
                for (i, item) in value.items().iter().enumerate() {
                    value_against(item, format!("{path}[{i}]"), items, out);
                }
            }
        }
        NodeKind::Scalar { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn undeclared_fields_are_those_the_schema_neither_declares_nor_keeps() {
        let mut crds = CrdSchemas::default();
        assert!(crds.add(&json!({"kind": "CustomResourceDefinition", "spec": {
            "group": "example.com", "names": {"kind": "Trainer"},
            "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "template": {"type": "object", "properties": {
                        "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "spec": {"type": "object", "properties": {
                            "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}}}}}},
                    "replicas": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}})));
        assert!(!crds.add(&json!({"kind": "Deployment"})));
        let schema = crds.schema("example.com/v1", "Trainer").unwrap();
        assert!(crds.schema("example.com/v2", "Trainer").is_none());
        let text = "apiVersion: example.com/v1\nkind: Trainer\nmetadata: {name: t}\nspec:\n  template:\n    metadata: {labels: {a: b}}\n    affinity: {}\n    spec:\n      nodeSelector: {gpu: h100}\n      tolerations: []\n  replicas:\n  - {name: a, zone: b}\n  extra: {anything: 1}\n";
        let root = crate::yaml::parse_document(text, 0).unwrap().unwrap();
        let paths: Vec<String> = undeclared(&root, schema)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            paths,
            [
                "spec.template.affinity",
                "spec.template.spec.tolerations",
                "spec.replicas[0].zone"
            ]
        );
    }

    #[test]
    fn lists_patches_and_crds_that_keep_everything() {
        let crd = |kind: &str, keep: bool| {
            json!({"kind": "CustomResourceDefinition", "spec": {
                "group": "example.com", "names": {"kind": kind}, "preserveUnknownFields": keep,
                "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "properties": {}}}}}}]}})
        };
        let mut crds = CrdSchemas::default();
        // `kubectl get crd -o yaml` prints a List.
        assert!(crds.add(&json!({"kind": "List", "items": [crd("A", false), crd("B", true)]})));
        assert_eq!(crds.len(), 2);
        let object = |kind: &str| {
            crate::yaml::parse_document(
                &format!("apiVersion: example.com/v1\nkind: {kind}\nspec:\n  affinity: {{}}\n  $patch: replace\n"),
                0,
            )
            .unwrap()
            .unwrap()
        };
        let a = object("A");
        let paths: Vec<String> = undeclared(&a, crds.schema("example.com/v1", "A").unwrap())
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(paths, ["spec.affinity"], "a patch directive is not a field");
        let b = object("B");
        assert!(undeclared(&b, crds.schema("example.com/v1", "B").unwrap()).is_empty());
        assert_eq!(
            custom_kinds(
                "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: example.com/v1, kind: A}\n- {apiVersion: apps/v1, kind: Deployment}\n"
            ),
            [("example.com/v1".to_string(), "A".to_string())]
        );
    }
}
