//! The object store: every object as its JSON bytes plus the labels and fields selectors
//! need, under one cluster-wide `resourceVersion` counter.
//!
//! Objects are kept serialised so that a page of a list is a concatenation of byte slices
//! (150,000 pods list in well under a second); they are parsed only to be changed.

use std::collections::{BTreeMap, HashMap};

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::apimachinery::{Selector, is_qualified_name, is_valid_label_value};
use crate::patch::{apply_json_patch, apply_merge_patch, apply_strategic_merge_patch};
use crate::resources::{RESOURCES, Resource};
use crate::status::{ApiError, FieldError};

/// The default (and maximum) page size when a client asks for none: unlimited, as upstream.
type Key = (String, String);

/// One stored object.
#[derive(Debug, Clone)]
pub struct Stored {
    pub json: Bytes,
    labels: BTreeMap<String, String>,
    fields: Vec<(&'static str, String)>,
}

/// A field selector: `field=value`, `field==value`, `field!=value`, comma-separated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses a selector and checks every field is supported by `resource`.
    pub fn parse(selector: &str, resource: &Resource) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for term in selector.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{selector}'; can't understand '{term}'"
                )));
            };
            let field = field.trim();
            if !resource.supports_field(field) {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector { terms })
    }

    fn matches(&self, fields: &[(&'static str, String)]) -> bool {
        self.terms.iter().all(|(field, equal, value)| {
            let actual = fields
                .iter()
                .find(|(f, _)| f == field)
                .map(|(_, v)| v.as_str())
                .unwrap_or("");
            (actual == value) == *equal
        })
    }
}

/// A page of a list.
#[derive(Debug)]
pub struct ListPage {
    pub items: Vec<Bytes>,
    pub resource_version: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// How a patch body is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
}

/// All objects of the cluster.
#[derive(Debug, Default)]
pub struct Store {
    resource_version: u64,
    tables: HashMap<&'static str, BTreeMap<Key, Stored>>,
}

fn field_value(obj: &Value, path: &str) -> String {
    let mut cur = obj;
    for part in path.split('.') {
        cur = &cur[part];
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null if path == "spec.unschedulable" => "false".into(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn index(resource: &Resource, obj: &Value) -> Stored {
    let labels = obj["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let mut fields: Vec<(&'static str, String)> = vec![
        ("metadata.name", field_value(obj, "metadata.name")),
        ("metadata.namespace", field_value(obj, "metadata.namespace")),
    ];
    for f in resource.fields {
        fields.push((f, field_value(obj, f)));
    }
    Stored {
        json: Bytes::from(serde_json::to_vec(obj).expect("values serialise")),
        labels,
        fields,
    }
}

fn new_uid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = jiff::Timestamp::now().as_nanosecond() as u64;
    let a = t ^ (n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (a >> 32) as u32,
        (a >> 16) as u16,
        a as u16 & 0xfff,
        n as u16 & 0xfff,
        n & 0xffff_ffff_ffff
    )
}

fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Field errors the API server raises for this object (labels everywhere, taints on nodes).
pub fn validate(resource: &Resource, obj: &Value) -> Result<(), Vec<FieldError>> {
    let mut errs = Vec::new();
    if obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
    {
        errs.push(FieldError {
            reason: "FieldValueRequired",
            field: "metadata.name".into(),
            value: Value::Null,
            detail: "name or generateName is required".into(),
        });
    }
    if let Some(labels) = obj["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            for msg in is_qualified_name(k) {
                errs.push(FieldError::invalid("metadata.labels", k, msg));
            }
            let v = v.as_str().unwrap_or_default();
            for msg in is_valid_label_value(v) {
                errs.push(FieldError::invalid("metadata.labels", v, msg));
            }
        }
    }
    if resource.kind == "Node"
        && let Some(taints) = obj["spec"]["taints"].as_array()
    {
        let mut seen: Vec<(String, String)> = Vec::new();
        for (i, t) in taints.iter().enumerate() {
            let key = t["key"].as_str().unwrap_or_default();
            let value = t["value"].as_str().unwrap_or_default();
            let effect = t["effect"].as_str().unwrap_or_default();
            for msg in is_qualified_name(key) {
                errs.push(FieldError::invalid(
                    format!("spec.taints[{i}].key"),
                    key,
                    msg,
                ));
            }
            let value_errs = is_valid_label_value(value);
            if !value_errs.is_empty() {
                errs.push(FieldError::invalid(
                    format!("spec.taints[{i}].value"),
                    value,
                    value_errs.join(";"),
                ));
            }
            match effect {
                "NoSchedule" | "PreferNoSchedule" | "NoExecute" => {}
                "" => errs.push(FieldError {
                    reason: "FieldValueRequired",
                    field: format!("spec.taints[{i}].effect"),
                    value: Value::Null,
                    detail: String::new(),
                }),
                other => errs.push(FieldError {
                    reason: "FieldValueNotSupported",
                    field: format!("spec.taints[{i}].effect"),
                    value: Value::from(other),
                    detail: "supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
                        .into(),
                }),
            }
            let slot = (key.to_string(), effect.to_string());
            if seen.contains(&slot) {
                errs.push(FieldError {
                    reason: "FieldValueDuplicate",
                    field: format!("spec.taints[{i}]"),
                    value: t.clone(),
                    detail: "taints must be unique by key and effect pair".into(),
                });
            }
            seen.push(slot);
        }
    }
    if errs.is_empty() { Ok(()) } else { Err(errs) }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    start: (String, String),
}

impl Store {
    pub fn new() -> Self {
        let mut tables = HashMap::new();
        for r in RESOURCES {
            tables.insert(r.plural, BTreeMap::new());
        }
        Store {
            resource_version: 1,
            tables,
        }
    }

    /// The cluster-wide resourceVersion counter.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    fn table(&self, resource: &Resource) -> &BTreeMap<Key, Stored> {
        &self.tables[resource.plural]
    }

    fn key(resource: &Resource, namespace: Option<&str>, name: &str) -> Key {
        let ns = if resource.namespaced {
            namespace.unwrap_or("default")
        } else {
            ""
        };
        (ns.to_string(), name.to_string())
    }

    /// Number of stored objects of a resource.
    pub fn count(&self, resource: &Resource) -> usize {
        self.table(resource).len()
    }

    pub fn get(
        &self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Bytes, ApiError> {
        self.table(resource)
            .get(&Self::key(resource, namespace, name))
            .map(|s| s.json.clone())
            .ok_or_else(|| ApiError::not_found(resource, name))
    }

    pub fn get_value(
        &self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        let bytes = self.get(resource, namespace, name)?;
        Ok(serde_json::from_slice(&bytes).expect("stored objects are JSON"))
    }

    /// A page of a list: `namespace` None lists all namespaces.
    pub fn list(
        &self,
        resource: &Resource,
        namespace: Option<&str>,
        labels: &Selector,
        fields: &FieldSelector,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<ListPage, ApiError> {
        let table = self.table(resource);
        let start = match continue_token.filter(|t| !t.is_empty()) {
            Some(t) => {
                let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(t)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<ContinueToken>(&b).ok())
                    .ok_or_else(|| {
                        ApiError::bad_request("continue key is not valid: illegal base64 data")
                    })?;
                Some(decoded.start)
            }
            None => None,
        };
        let range: Box<dyn Iterator<Item = (&Key, &Stored)>> =
            match (&start, namespace.filter(|_| resource.namespaced)) {
                (Some(s), _) => Box::new(table.range::<Key, _>((
                    std::ops::Bound::Excluded(s.clone()),
                    std::ops::Bound::Unbounded,
                ))),
                (None, Some(ns)) => {
                    Box::new(table.range::<Key, _>((ns.to_string(), String::new())..))
                }
                (None, None) => Box::new(table.iter()),
            };
        let mut items = Vec::new();
        let mut last: Option<&Key> = None;
        let mut more = false;
        for (key, stored) in range {
            if let Some(ns) = namespace.filter(|_| resource.namespaced)
                && key.0 != ns
            {
                break;
            }
            if !labels.matches(&stored.labels) || !fields.matches(&stored.fields) {
                continue;
            }
            if limit.is_some_and(|l| items.len() >= l) {
                more = true;
                break;
            }
            items.push(stored.json.clone());
            last = Some(key);
        }
        let continue_token = if more {
            let token = ContinueToken {
                rv: self.resource_version,
                start: last.cloned().unwrap_or_default(),
            };
            Some(
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(serde_json::to_vec(&token).expect("serialises")),
            )
        } else {
            None
        };
        Ok(ListPage {
            items,
            resource_version: self.resource_version,
            continue_token,
            remaining: None,
        })
    }

    fn commit(&mut self, resource: &Resource, key: Key, mut obj: Value, dry_run: bool) -> Value {
        let rv = if dry_run {
            self.resource_version
        } else {
            self.resource_version + 1
        };
        obj["metadata"]["resourceVersion"] = Value::from(rv.to_string());
        if !dry_run {
            self.resource_version = rv;
            let stored = index(resource, &obj);
            self.tables
                .get_mut(resource.plural)
                .expect("table")
                .insert(key, stored);
        }
        obj
    }

    /// Creates an object, filling uid, creationTimestamp, resourceVersion and namespace.
    pub fn create(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        mut obj: Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request is not a JSON object",
            ));
        }
        if obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
            && let Some(prefix) = obj["metadata"]["generateName"].as_str()
        {
            obj["metadata"]["name"] = Value::from(format!("{prefix}{}", &new_uid()[..5]));
        }
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        validate(resource, &obj).map_err(|e| ApiError::invalid(resource, &name, e))?;
        let key = Self::key(
            resource,
            namespace.or(obj["metadata"]["namespace"].as_str()),
            &name,
        );
        if self.table(resource).contains_key(&key) {
            return Err(ApiError::already_exists(resource, &name));
        }
        obj["apiVersion"] = Value::from(resource.api_version());
        obj["kind"] = Value::from(resource.kind);
        if resource.namespaced {
            obj["metadata"]["namespace"] = Value::from(key.0.clone());
        }
        obj["metadata"]["uid"] = Value::from(new_uid());
        if obj["metadata"]["creationTimestamp"].is_null() {
            obj["metadata"]["creationTimestamp"] = Value::from(now());
        }
        Ok(self.commit(resource, key, obj, dry_run))
    }

    /// Replaces an object (PUT). A non-empty `metadata.resourceVersion` is a precondition.
    pub fn update(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
        mut obj: Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let current = self.get_value(resource, namespace, name)?;
        if obj["metadata"]["name"].as_str() != Some(name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                obj["metadata"]["name"].as_str().unwrap_or_default()
            )));
        }
        self.check_precondition(resource, name, &current, &obj)?;
        obj["metadata"]["uid"] = current["metadata"]["uid"].clone();
        obj["metadata"]["creationTimestamp"] = current["metadata"]["creationTimestamp"].clone();
        obj["apiVersion"] = Value::from(resource.api_version());
        obj["kind"] = Value::from(resource.kind);
        if resource.namespaced {
            obj["metadata"]["namespace"] = current["metadata"]["namespace"].clone();
        }
        validate(resource, &obj).map_err(|e| ApiError::invalid(resource, name, e))?;
        Ok(self.commit(resource, Self::key(resource, namespace, name), obj, dry_run))
    }

    fn check_precondition(
        &self,
        resource: &Resource,
        name: &str,
        current: &Value,
        new: &Value,
    ) -> Result<(), ApiError> {
        match new["metadata"]["resourceVersion"].as_str() {
            Some(rv)
                if !rv.is_empty()
                    && Some(rv) != current["metadata"]["resourceVersion"].as_str() =>
            {
                Err(ApiError::conflict(resource, name))
            }
            _ => Ok(()),
        }
    }

    /// Patches an object. A `metadata.resourceVersion` in the patched result that differs
    /// from the current one is a precondition failure (409), as upstream.
    pub fn patch(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        body: &Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let current = self.get_value(resource, namespace, name)?;
        let patched = match patch_type {
            PatchType::Json => {
                apply_json_patch(&current, body).map_err(|_| ApiError::patch_not_applied())?
            }
            PatchType::Merge => apply_merge_patch(&current, body),
            PatchType::Strategic => apply_strategic_merge_patch(&current, body),
        };
        if !patched.is_object() || !patched["metadata"].is_object() {
            return Err(ApiError::bad_request(
                "the patch removed the object's metadata",
            ));
        }
        self.check_precondition(resource, name, &current, &patched)?;
        let mut patched = patched;
        for immutable in ["name", "namespace", "uid", "creationTimestamp"] {
            if patched["metadata"][immutable] != current["metadata"][immutable] {
                if immutable == "name" || immutable == "namespace" {
                    return Err(ApiError::bad_request(format!(
                        "metadata.{immutable}: the {immutable} of an object cannot be changed by a patch"
                    )));
                }
                patched["metadata"][immutable] = current["metadata"][immutable].clone();
            }
        }
        validate(resource, &patched).map_err(|e| ApiError::invalid(resource, name, e))?;
        Ok(self.commit(
            resource,
            Self::key(resource, namespace, name),
            patched,
            dry_run,
        ))
    }

    pub fn delete(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let key = Self::key(resource, namespace, name);
        let current = self.get_value(resource, namespace, name)?;
        if !dry_run {
            self.tables
                .get_mut(resource.plural)
                .expect("table")
                .remove(&key);
            self.resource_version += 1;
        }
        Ok(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": name, "group": resource.group, "kind": resource.plural, "uid": current["metadata"]["uid"]}
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    fn nodes() -> &'static Resource {
        find("", "v1", "nodes").unwrap()
    }

    fn node(name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": {}})
    }

    #[test]
    fn create_fills_metadata_and_bumps_the_counter() {
        let mut s = Store::new();
        let a = s
            .create(nodes(), None, node("a", json!({})), false)
            .unwrap();
        let b = s
            .create(nodes(), None, node("b", json!({})), false)
            .unwrap();
        assert_eq!(a["kind"], "Node");
        assert!(a["metadata"]["uid"].as_str().unwrap().len() == 36);
        assert_ne!(a["metadata"]["uid"], b["metadata"]["uid"]);
        assert_eq!(b["metadata"]["resourceVersion"], "3");
        assert_eq!(
            s.create(nodes(), None, node("a", json!({})), false)
                .unwrap_err()
                .code,
            409
        );
    }

    #[test]
    fn stale_resource_version_conflicts_on_put_and_patch() {
        let mut s = Store::new();
        let a = s
            .create(nodes(), None, node("a", json!({"x": "1"})), false)
            .unwrap();
        s.patch(
            nodes(),
            None,
            "a",
            PatchType::Merge,
            &json!({"metadata": {"labels": {"x": "2"}}}),
            false,
        )
        .unwrap();
        let mut stale = a.clone();
        stale["metadata"]["labels"]["x"] = json!("3");
        let err = s.update(nodes(), None, "a", stale, false).unwrap_err();
        assert_eq!((err.code, err.reason()), (409, "Conflict"));
        assert_eq!(
            err.message(),
            "Operation cannot be fulfilled on nodes \"a\": the object has been modified; please apply your changes to the latest version and try again"
        );
        let rv = a["metadata"]["resourceVersion"].as_str().unwrap();
        let err = s
            .patch(
                nodes(),
                None,
                "a",
                PatchType::Merge,
                &json!({"metadata": {"resourceVersion": rv, "labels": {"x": "4"}}}),
                false,
            )
            .unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(
            s.get_value(nodes(), None, "a").unwrap()["metadata"]["labels"]["x"],
            "2"
        );
    }

    #[test]
    fn failed_json_patch_test_is_422_and_changes_nothing() {
        let mut s = Store::new();
        s.create(nodes(), None, node("a", json!({"x": "1"})), false)
            .unwrap();
        let before = s.get(nodes(), None, "a").unwrap();
        let err = s
            .patch(
                nodes(),
                None,
                "a",
                PatchType::Json,
                &json!([
                    {"op": "test", "path": "/metadata/labels/x", "value": "9"},
                    {"op": "replace", "path": "/metadata/labels/x", "value": "2"}
                ]),
                false,
            )
            .unwrap_err();
        assert_eq!((err.code, err.reason()), (422, "Invalid"));
        assert_eq!(
            err.message(),
            "the server rejected our request due to an error in our request"
        );
        assert_eq!(s.get(nodes(), None, "a").unwrap(), before);
    }

    #[test]
    fn dry_run_leaves_nothing_behind() {
        let mut s = Store::new();
        s.create(nodes(), None, node("a", json!({})), false)
            .unwrap();
        let rv = s.resource_version();
        let out = s
            .patch(
                nodes(),
                None,
                "a",
                PatchType::Merge,
                &json!({"metadata": {"labels": {"k": "v"}}}),
                true,
            )
            .unwrap();
        assert_eq!(out["metadata"]["labels"]["k"], "v");
        s.create(nodes(), None, node("b", json!({})), true).unwrap();
        s.delete(nodes(), None, "a", true).unwrap();
        assert_eq!(s.resource_version(), rv);
        assert!(
            s.get_value(nodes(), None, "a").unwrap()["metadata"]["labels"]
                .get("k")
                .is_none()
        );
        assert!(s.get(nodes(), None, "b").is_err());
    }

    #[test]
    fn invalid_labels_and_taints_use_the_real_messages() {
        let mut s = Store::new();
        let err = s
            .create(nodes(), None, node("a", json!({"bad key": "v"})), false)
            .unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message(),
            "Node \"a\" is invalid: metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(err.body["details"]["causes"][0]["field"], "metadata.labels");
        let bad_taint = json!({"metadata": {"name": "t"}, "spec": {"taints": [
            {"key": "a", "effect": "Sometimes"},
            {"key": "b", "value": "1", "effect": "NoSchedule"},
            {"key": "b", "value": "2", "effect": "NoSchedule"}
        ]}});
        let err = s.create(nodes(), None, bad_taint, false).unwrap_err();
        assert!(err.message().starts_with("Node \"t\" is invalid: [spec.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\", spec.taints[2]: Duplicate value: "), "{}", err.message());
    }

    #[test]
    fn pagination_returns_every_item_exactly_once() {
        let mut s = Store::new();
        for i in 0..1003 {
            s.create(
                nodes(),
                None,
                node(&format!("n{i:04}"), json!({"i": (i % 3).to_string()})),
                false,
            )
            .unwrap();
        }
        let sel = Selector::parse("i in (0,1)").unwrap();
        let mut seen = Vec::new();
        let mut token: Option<String> = None;
        let mut pages = 0;
        loop {
            let page = s
                .list(
                    nodes(),
                    None,
                    &sel,
                    &FieldSelector::default(),
                    Some(100),
                    token.as_deref(),
                )
                .unwrap();
            pages += 1;
            for item in &page.items {
                let v: Value = serde_json::from_slice(item).unwrap();
                seen.push(v["metadata"]["name"].as_str().unwrap().to_string());
            }
            match page.continue_token {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        let expected: Vec<String> = (0..1003)
            .filter(|i| i % 3 != 2)
            .map(|i| format!("n{i:04}"))
            .collect();
        assert_eq!(seen, expected);
        assert_eq!(pages, 7);
    }

    #[test]
    fn field_selectors() {
        let pods = find("", "v1", "pods").unwrap();
        let mut s = Store::new();
        for (ns, name, node) in [("a", "p1", "n1"), ("a", "p2", "n2"), ("b", "p3", "n1")] {
            s.create(pods, Some(ns), json!({"metadata": {"name": name}, "spec": {"nodeName": node}, "status": {"phase": "Running"}}), false).unwrap();
        }
        let on_n1 = FieldSelector::parse("spec.nodeName=n1", pods).unwrap();
        let all = s
            .list(pods, None, &Selector::default(), &on_n1, None, None)
            .unwrap();
        assert_eq!(all.items.len(), 2);
        let in_a = s
            .list(pods, Some("a"), &Selector::default(), &on_n1, None, None)
            .unwrap();
        assert_eq!(in_a.items.len(), 1);
        let not = FieldSelector::parse("spec.nodeName!=n1,status.phase=Running", pods).unwrap();
        assert_eq!(
            s.list(pods, None, &Selector::default(), &not, None, None)
                .unwrap()
                .items
                .len(),
            1
        );
        let err = FieldSelector::parse("spec.foo=x", pods).unwrap_err();
        assert_eq!(
            (err.code, err.message()),
            (400, "field label not supported: spec.foo")
        );
        let node_fields = FieldSelector::parse("spec.unschedulable=false", nodes()).unwrap();
        s.create(nodes(), None, node("x", json!({})), false)
            .unwrap();
        assert_eq!(
            s.list(
                nodes(),
                None,
                &Selector::default(),
                &node_fields,
                None,
                None
            )
            .unwrap()
            .items
            .len(),
            1
        );
    }
}
