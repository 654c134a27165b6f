//! The object store: every object as its JSON bytes plus the labels and fields selectors
//! need, under one cluster-wide `resourceVersion` counter.
//!
//! Objects are kept serialised so that a page of a list is a concatenation of byte slices
//! (150,000 pods list in well under a second); they are parsed only to be changed.
//!
//! Writes follow the real API server's order of checks: the body is decoded (label and
//! annotation maps must hold strings), the namespace must exist, the object is defaulted and
//! validated ([`crate::admission`] holds those steps), then written — or, with `dryRun`,
//! answered without being written. Every write is kept as a change for watches and for
//! continued lists, and records its field manager for server-side apply.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::admission::{
    decode_body, decode_error, default_object, go_sprint, now, null_strings_to_empty,
    patch_decode_error, patch_invalid, validate,
};
use crate::apimachinery::Selector;
use crate::apimachinery::field::go_json;
use crate::apimachinery::strict::{
    FieldValidation, drop_unknown_fields, drop_unknown_fields_in_patch, strict_error,
};
use crate::apply::{Manager, Owners, changes, record_update};
pub use crate::patch::PatchType;
use crate::patch::{apply_json_patch_bytes, apply_merge_patch, apply_strategic_merge_patch};
use crate::resources::{RESOURCES, Resource};
use crate::status::ApiError;

/// The namespaces a new cluster has.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-node-lease", "kube-public", "kube-system"];

type Key = (String, String);

/// One stored object.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The object as a list item: without `apiVersion` and `kind`, which the real server
    /// leaves out of list items and [`Store::get`] puts back.
    pub json: Bytes,
    labels: BTreeMap<String, String>,
    fields: Vec<(&'static str, String)>,
}

/// A stored object (a list item) with its `kind` and `apiVersion` put back in front, as a
/// GET or a watch event shows it.
pub fn with_type_meta(resource: &Resource, item: &Bytes) -> Bytes {
    let head = format!(
        "{{\"kind\":{},\"apiVersion\":{}",
        go_json(resource.kind),
        go_json(&resource.api_version())
    );
    let mut out = Vec::with_capacity(head.len() + item.len() + 1);
    out.extend_from_slice(head.as_bytes());
    if item.len() > 2 {
        out.push(b',');
    }
    out.extend_from_slice(&item[1..]);
    Bytes::from(out)
}

impl Stored {
    /// Whether a list or watch with these selectors shows the object.
    pub fn selected(&self, labels: &Selector, fields: &FieldSelector) -> bool {
        labels.matches(&self.labels) && fields.matches(&self.fields)
    }
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
                return Err(ApiError::bad_request(resource.unsupported_field(field)));
            }
            terms.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector { terms })
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
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
    /// How many more objects the next pages hold; only for a list without selectors, as
    /// the real server can count only those.
    pub remaining: Option<usize>,
}

/// How many recent changes the store keeps for watches that start at an older
/// `resourceVersion` (the real server's watch cache holds a window too, and answers a watch
/// from before it with 410 Expired).
const EVENT_WINDOW: usize = 10_000;

/// One change, as a watch reports it.
#[derive(Debug)]
pub struct WatchEvent {
    /// The resourceVersion the change wrote.
    pub resource_version: u64,
    pub plural: &'static str,
    /// `""` for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub change: &'static str,
    /// The object after the change (for `DELETED`, as it was, at the deletion's version).
    pub object: Arc<Stored>,
    /// The object before a `MODIFIED` or `DELETED` change: a watch with a selector turns a
    /// change that moves an object into or out of the selection into `ADDED` or `DELETED`,
    /// and a list continued from before the change shows it as it was.
    pub previous: Option<Arc<Stored>>,
}

/// The changes to come, as a watch receives them.
pub type Changes = tokio::sync::broadcast::Receiver<Arc<WatchEvent>>;

/// Why a watch cannot start where it asked to.
#[derive(Debug)]
pub struct TooOld {
    pub asked: u64,
    pub oldest: u64,
}

/// All objects of the cluster.
#[derive(Debug)]
pub struct Store {
    resource_version: u64,
    tables: HashMap<&'static str, BTreeMap<Key, Arc<Stored>>>,
    /// The last [`EVENT_WINDOW`] changes, oldest first.
    events: std::collections::VecDeque<Arc<WatchEvent>>,
    /// Every change as it is written, for the watches open now.
    changes: tokio::sync::broadcast::Sender<Arc<WatchEvent>>,
    /// The host part of the next service cluster IP.
    next_service_ip: u32,
    /// Who owns which fields of each object (server-side apply), by resource and key.
    owners: HashMap<(&'static str, Key), Owners>,
    /// The field manager of the write in progress, set by the HTTP front for the length of
    /// one write under the store's lock; writes without one (fixtures) record no owner.
    pub writer: Option<Manager>,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
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

fn index(resource: &Resource, obj: &Value) -> Arc<Stored> {
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
        // An event's `source` field is its source's component, `reportingComponent` its
        // reporting controller (the event strategy's field set); a pod's unset hostNetwork
        // is false.
        let value = match (resource.kind, *f) {
            ("Event", "source") => field_value(obj, "source.component"),
            ("Event", "reportingComponent") => field_value(obj, "reportingController"),
            ("Pod", "spec.hostNetwork") if obj["spec"]["hostNetwork"].is_null() => "false".into(),
            _ => field_value(obj, f),
        };
        fields.push((f, value));
    }
    Arc::new(Stored {
        json: Bytes::from(serde_json::to_vec(&ListItem(obj)).expect("values serialise")),
        labels,
        fields,
    })
}

/// An object serialised as a list item: without `apiVersion` and `kind` (and without a copy
/// of the object to remove them from).
struct ListItem<'a>(&'a Value);

impl serde::Serialize for ListItem<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.as_object() {
            Some(map) => serializer.collect_map(
                map.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind")),
            ),
            None => self.0.serialize(serializer),
        }
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

/// Five characters for a `generateName`, from the alphabet the real server uses.
fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let uid = new_uid();
    let mut n = u64::from_str_radix(&uid.replace('-', "")[16..], 16).unwrap_or(0);
    (0..5)
        .map(|_| {
            let c = ALPHABET[(n % ALPHABET.len() as u64) as usize] as char;
            n /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    start: (String, String),
}

impl Store {
    /// An empty cluster with the namespaces every cluster has.
    pub fn new() -> Self {
        let mut tables = HashMap::new();
        for r in RESOURCES {
            tables.insert(r.plural, BTreeMap::new());
        }
        let mut store = Store {
            resource_version: 1,
            tables,
            events: std::collections::VecDeque::new(),
            changes: tokio::sync::broadcast::channel(1024).0,
            next_service_ip: 1,
            owners: HashMap::new(),
            writer: None,
        };
        for ns in SYSTEM_NAMESPACES {
            store.ensure_namespace(ns);
        }
        // The service kube-apiserver keeps for itself in every cluster.
        let services = RESOURCES
            .iter()
            .find(|r| r.plural == "services")
            .expect("services are served");
        let kubernetes = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}]}});
        store
            .create(services, Some("default"), kubernetes, false)
            .expect("the kubernetes service is valid");
        store
    }

    /// The cluster-wide resourceVersion counter.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    fn table(&self, resource: &Resource) -> &BTreeMap<Key, Arc<Stored>> {
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

    fn namespaces() -> &'static Resource {
        RESOURCES
            .iter()
            .find(|r| r.plural == "namespaces")
            .expect("namespaces are served")
    }

    /// Whether namespace `name` exists.
    pub fn has_namespace(&self, name: &str) -> bool {
        self.table(Self::namespaces())
            .contains_key(&(String::new(), name.to_string()))
    }

    /// Creates namespace `name` unless it exists (for fixtures and direct creates: the API
    /// refuses objects in a namespace that does not exist).
    pub fn ensure_namespace(&mut self, name: &str) {
        if !self.has_namespace(name) {
            let _ = self.create(
                Self::namespaces(),
                None,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
                false,
            );
        }
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
        let item = self
            .table(resource)
            .get(&Self::key(resource, namespace, name))
            .map(|s| &s.json)
            .ok_or_else(|| ApiError::not_found(resource, name))?;
        Ok(with_type_meta(resource, item))
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

    /// Deletes every object a collection DELETE selects (`namespace` None: all of them),
    /// each as [`Store::delete`] would, and answers the list of what was deleted, as at its
    /// deletion.
    pub fn delete_collection(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        labels: &Selector,
        fields: &FieldSelector,
        dry_run: bool,
        grace_period: Option<i64>,
    ) -> Result<Value, ApiError> {
        let selected: Vec<Key> = self
            .table(resource)
            .iter()
            .filter(|((ns, _), stored)| {
                namespace.is_none_or(|n| n == ns) && stored.selected(labels, fields)
            })
            .map(|(key, _)| key.clone())
            .collect();
        let mut items = Vec::with_capacity(selected.len());
        for (ns, name) in selected {
            let ns = resource.namespaced.then_some(ns.as_str());
            // Each object as it was found, except that a pod shows its deletion marks.
            let before = (resource.kind != "Pod")
                .then(|| self.get_value(resource, ns, &name))
                .transpose()?;
            let answer = self.delete(resource, ns, &name, dry_run, grace_period)?;
            let mut item = before.unwrap_or(answer);
            if let Some(fields) = item.as_object_mut() {
                fields.remove("kind");
                fields.remove("apiVersion");
            }
            items.push(item);
        }
        Ok(json!({
            "kind": resource.list_kind(),
            "apiVersion": resource.api_version(),
            "metadata": {"resourceVersion": self.resource_version.to_string()},
            "items": items,
        }))
    }

    /// What the changes to a resource after `resource_version` undo: per object, its state
    /// then (`None`: it did not exist). 410 Expired when the window of recent changes no
    /// longer reaches back there.
    fn state_at(
        &self,
        resource: &Resource,
        resource_version: u64,
    ) -> Result<BTreeMap<Key, Option<Arc<Stored>>>, ApiError> {
        let oldest = self
            .events
            .front()
            .map_or(self.resource_version, |e| e.resource_version);
        if resource_version + 1 < oldest {
            return Err(ApiError::continue_expired());
        }
        let mut undone = BTreeMap::new();
        // Newest first, so that the oldest change's "before" is what stays.
        for e in self.events.iter().rev() {
            if e.resource_version <= resource_version {
                break;
            }
            if e.plural == resource.plural {
                let before = match e.change {
                    "ADDED" => None,
                    _ => e.previous.clone(),
                };
                undone.insert((e.namespace.clone(), e.name.clone()), before);
            }
        }
        Ok(undone)
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
                    .map_err(|e| e.to_string())
                    .and_then(|b| {
                        serde_json::from_slice::<ContinueToken>(&b).map_err(|e| e.to_string())
                    })
                    .map_err(|e| {
                        ApiError::bad_request(format!(
                            "invalid continue token: continue key is not valid: {e}"
                        ))
                    })?;
                Some(decoded)
            }
            None => None,
        };
        // A continued list shows the objects as they were at its first page's version
        // (etcd reads the later pages at that revision).
        let snapshot = match &start {
            Some(token) if token.rv < self.resource_version => {
                let undone = self.state_at(resource, token.rv)?;
                (!undone.is_empty()).then(|| {
                    let mut view: BTreeMap<Key, Arc<Stored>> = table
                        .range::<Key, _>((
                            std::ops::Bound::Excluded(token.start.clone()),
                            std::ops::Bound::Unbounded,
                        ))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    for (key, before) in undone {
                        if key <= token.start {
                            continue;
                        }
                        match before {
                            Some(stored) => view.insert(key, stored),
                            None => view.remove(&key),
                        };
                    }
                    view
                })
            }
            _ => None,
        };
        let list_rv = start.as_ref().map_or(self.resource_version, |t| t.rv);
        let start = start.map(|t| t.start);
        let in_scope = |key: &Key| {
            namespace
                .filter(|_| resource.namespaced)
                .is_none_or(|ns| key.0 == ns)
        };
        let range: Box<dyn Iterator<Item = (&Key, &Arc<Stored>)>> =
            match (&start, namespace.filter(|_| resource.namespaced)) {
                _ if snapshot.is_some() => Box::new(snapshot.iter().flatten()),
                (Some(s), _) => Box::new(table.range::<Key, _>((
                    std::ops::Bound::Excluded(s.clone()),
                    std::ops::Bound::Unbounded,
                ))),
                (None, Some(ns)) => {
                    Box::new(table.range::<Key, _>((ns.to_string(), String::new())..))
                }
                (None, None) => Box::new(table.iter()),
            };
        let unfiltered = labels.is_empty() && fields.is_empty();
        let mut items = Vec::new();
        let mut last: Option<&Key> = None;
        let mut remaining = 0;
        let mut more = false;
        for (key, stored) in range {
            if !in_scope(key) {
                break;
            }
            // Like etcd's paging: once the page is full, any further object in range means
            // another page, whether or not it matches the selectors (that page may be empty).
            if limit.is_some_and(|l| items.len() >= l) {
                more = true;
                if !unfiltered {
                    break;
                }
                remaining += 1;
                continue;
            }
            if !stored.selected(labels, fields) {
                continue;
            }
            items.push(stored.json.clone());
            last = Some(key);
        }
        let continue_token = if more {
            let token = ContinueToken {
                rv: list_rv,
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
            resource_version: list_rv,
            continue_token,
            remaining: (more && unfiltered).then_some(remaining),
        })
    }

    /// Writes an object (or, with `dry_run`, only answers with it). A dry-run create has no
    /// resourceVersion yet; a dry-run update keeps `previous_rv`.
    fn commit(
        &mut self,
        resource: &Resource,
        key: Key,
        mut obj: Value,
        dry_run: bool,
        previous_rv: Option<Value>,
    ) -> Value {
        if dry_run {
            match previous_rv {
                Some(rv) => obj["metadata"]["resourceVersion"] = rv,
                None => {
                    if let Some(meta) = obj["metadata"].as_object_mut() {
                        meta.remove("resourceVersion");
                    }
                }
            }
            return obj;
        }
        self.resource_version += 1;
        obj["metadata"]["resourceVersion"] = Value::from(self.resource_version.to_string());
        let stored = index(resource, &obj);
        let previous = self
            .tables
            .get_mut(resource.plural)
            .expect("table")
            .insert(key.clone(), stored.clone());
        let change = if previous.is_some() {
            "MODIFIED"
        } else {
            "ADDED"
        };
        self.record(resource, key, change, stored, previous);
        obj
    }

    /// Gives a new service the next free address of the service range (10.0.0.0/24, the
    /// control plane's; `.1` is the `kubernetes` service's), unless it is headless, an
    /// ExternalName or asks for one.
    fn allocate_cluster_ip(&mut self, service: &mut Value, dry_run: bool) {
        let spec = &mut service["spec"];
        if spec["type"] == "ExternalName" {
            return;
        }
        let ip = match spec["clusterIP"].as_str().filter(|ip| !ip.is_empty()) {
            Some(given) => given.to_string(),
            None => {
                let ip = format!(
                    "10.0.{}.{}",
                    self.next_service_ip / 256,
                    self.next_service_ip % 256
                );
                if !dry_run {
                    self.next_service_ip += 1;
                }
                ip
            }
        };
        spec["clusterIP"] = json!(ip);
        if spec["clusterIPs"].is_null() {
            spec["clusterIPs"] = json!([ip]);
        }
    }

    /// Server-side apply of `config` by `manager` (see [`crate::apply`]): creates the object
    /// when it does not exist (the `bool` says so), else merges it into the live one.
    #[allow(clippy::too_many_arguments)] // the request's parts, as the handler has them
    pub fn apply(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
        mut config: Value,
        manager: &Manager,
        force: bool,
        dry_run: bool,
    ) -> Result<(Value, bool), ApiError> {
        if config["kind"].as_str().is_none_or(str::is_empty) {
            return Err(ApiError::bad_request(format!(
                "invalid object type: /{}, Kind=",
                config["apiVersion"].as_str().unwrap_or_default()
            )));
        }
        let given = config["metadata"]["name"].as_str().unwrap_or_default();
        if given != name {
            return Err(ApiError::name_mismatch(given, name));
        }
        let unknown =
            drop_unknown_fields(resource.group, resource.version, resource.kind, &mut config);
        if let Some(first) = unknown.first() {
            return Err(ApiError::without_reason(
                500,
                format!(
                    "failed to create typed patch object (/{name}; {}, Kind={}): .{first}: field not declared in schema",
                    if resource.group.is_empty() {
                        format!("/{}", resource.version)
                    } else {
                        resource.api_version()
                    },
                    resource.kind
                ),
            ));
        }
        let key = Self::key(resource, namespace, name);
        let live = self.get_value(resource, namespace, name).ok();
        let owners = self
            .owners
            .get(&(resource.plural, key.clone()))
            .cloned()
            .unwrap_or_default();
        let applied = crate::apply::apply(live.as_ref(), &owners, &config, manager, force)
            .map_err(|conflicts| ApiError::apply_conflicts(&conflicts))?;
        // The ownership is the apply's own; the write records no `Update`.
        let writer = self.writer.take();
        let result = match &live {
            None => self.create(resource, namespace, applied.object, dry_run),
            Some(current) => {
                // A change of ownership alone is a write too (of managedFields).
                let owners_changed = applied.owners != owners;
                self.finish_update(
                    resource,
                    namespace,
                    name,
                    current,
                    applied.object,
                    dry_run,
                    owners_changed,
                )
            }
        };
        self.writer = writer;
        let object = result?;
        if !dry_run {
            self.owners.insert((resource.plural, key), applied.owners);
        }
        Ok((object, live.is_none()))
    }

    /// Records the write in progress's field manager as the owner of what it changes.
    fn record_writer(
        &mut self,
        resource: &Resource,
        key: Key,
        before: &Value,
        after: &Value,
        dry_run: bool,
    ) {
        if let Some(manager) = self.writer.as_ref().filter(|_| !dry_run) {
            let owners = self.owners.entry((resource.plural, key)).or_default();
            record_update(owners, manager, changes(before, after));
        }
    }

    /// Removes an object for good: the deletion gets its own resourceVersion, which the
    /// `DELETED` event's object carries.
    fn remove(&mut self, resource: &Resource, key: &Key) {
        let Some(removed) = self
            .tables
            .get_mut(resource.plural)
            .expect("table")
            .remove(key)
        else {
            return;
        };
        self.owners.remove(&(resource.plural, key.clone()));
        self.resource_version += 1;
        let mut last: Value = serde_json::from_slice(&removed.json).unwrap_or(Value::Null);
        last["metadata"]["resourceVersion"] = Value::from(self.resource_version.to_string());
        let deleted = index(resource, &last);
        self.record(resource, key.clone(), "DELETED", deleted, Some(removed));
    }

    fn record(
        &mut self,
        resource: &Resource,
        (namespace, name): Key,
        change: &'static str,
        object: Arc<Stored>,
        previous: Option<Arc<Stored>>,
    ) {
        let event = Arc::new(WatchEvent {
            resource_version: self.resource_version,
            plural: resource.plural,
            namespace,
            name,
            change,
            object,
            previous,
        });
        if self.events.len() == EVENT_WINDOW {
            self.events.pop_front();
        }
        self.events.push_back(event.clone());
        // No receiver is no watch open: nothing to tell.
        let _ = self.changes.send(event);
    }

    /// The changes after `resource_version` (of every resource; the watch filters), and a
    /// receiver of the changes to come. `Err` when the window no longer reaches back there.
    pub fn changes_since(
        &self,
        resource_version: u64,
    ) -> Result<(Vec<Arc<WatchEvent>>, Changes), TooOld> {
        let oldest = self
            .events
            .front()
            .map_or(self.resource_version, |e| e.resource_version);
        if resource_version + 1 < oldest {
            return Err(TooOld {
                asked: resource_version,
                oldest,
            });
        }
        let past = self
            .events
            .iter()
            .filter(|e| e.resource_version > resource_version)
            .cloned()
            .collect();
        Ok((past, self.changes.subscribe()))
    }

    /// Every object of a resource now (in key order, in `namespace` when given), and a
    /// receiver of the changes to come: the start of a watch without a resourceVersion.
    pub fn snapshot_and_subscribe(
        &self,
        resource: &Resource,
        namespace: Option<&str>,
    ) -> (Vec<(String, Arc<Stored>)>, Changes) {
        let now = self
            .table(resource)
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|((ns, _), stored)| (ns.clone(), stored.clone()))
            .collect();
        (now, self.changes.subscribe())
    }

    /// Creates an object, filling uid, creationTimestamp, resourceVersion and namespace.
    /// `namespace` is the one of the request's URL.
    pub fn create(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        mut obj: Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        decode_body(resource, &mut obj)?;
        if !obj["metadata"].is_object() {
            obj["metadata"] = json!({});
        }
        let body_ns = obj["metadata"]["namespace"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        if resource.namespaced {
            if let (Some(url), Some(body)) = (namespace, &body_ns)
                && url != body
            {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            let ns = namespace
                .map(str::to_string)
                .or(body_ns)
                .unwrap_or_else(|| "default".to_string());
            if !self.has_namespace(&ns) {
                return Err(ApiError::not_found(Self::namespaces(), &ns));
            }
            obj["metadata"]["namespace"] = Value::from(ns);
        } else if let Some(meta) = obj["metadata"].as_object_mut() {
            // The real server drops a namespace given to a cluster-scoped object.
            meta.remove("namespace");
        }
        if obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
            && let Some(prefix) = obj["metadata"]["generateName"]
                .as_str()
                .filter(|p| !p.is_empty())
        {
            obj["metadata"]["name"] = Value::from(format!("{prefix}{}", name_suffix()));
        }
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        obj["apiVersion"] = Value::from(resource.api_version());
        obj["kind"] = Value::from(resource.kind);
        default_object(resource, &mut obj, None);
        validate(resource, &obj, true).map_err(|e| ApiError::invalid(resource, &name, e))?;
        if resource.kind == "Service" {
            self.allocate_cluster_ip(&mut obj, dry_run);
        }
        let key = Self::key(resource, obj["metadata"]["namespace"].as_str(), &name);
        if self.table(resource).contains_key(&key) {
            return Err(ApiError::already_exists(resource, &name));
        }
        obj["metadata"]["uid"] = Value::from(new_uid());
        if obj["metadata"]["creationTimestamp"].is_null() {
            obj["metadata"]["creationTimestamp"] = Value::from(now());
        }
        self.record_writer(resource, key.clone(), &Value::Null, &obj, dry_run);
        Ok(self.commit(resource, key, obj, dry_run, None))
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
        decode_body(resource, &mut obj)?;
        let current = self.get_value(resource, namespace, name)?;
        if obj["metadata"]["name"].as_str() != Some(name) {
            return Err(ApiError::name_mismatch(
                obj["metadata"]["name"].as_str().unwrap_or_default(),
                name,
            ));
        }
        if resource.namespaced
            && obj["metadata"]["namespace"].as_str().is_some_and(|ns| {
                !ns.is_empty() && Some(ns) != current["metadata"]["namespace"].as_str()
            })
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        self.check_precondition(resource, name, &current, &obj)?;
        self.finish_update(resource, namespace, name, &current, obj, dry_run, false)
    }

    /// The common end of an update and a patch: the fields a client cannot change,
    /// defaulting, validation, the write.
    #[allow(clippy::too_many_arguments)] // the write's parts
    fn finish_update(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
        current: &Value,
        mut obj: Value,
        dry_run: bool,
        always_write: bool,
    ) -> Result<Value, ApiError> {
        for immutable in ["uid", "creationTimestamp"] {
            obj["metadata"][immutable] = current["metadata"][immutable].clone();
        }
        obj["apiVersion"] = Value::from(resource.api_version());
        obj["kind"] = Value::from(resource.kind);
        if resource.namespaced {
            obj["metadata"]["namespace"] = current["metadata"]["namespace"].clone();
        } else if let Some(meta) = obj["metadata"].as_object_mut() {
            meta.remove("namespace");
        }
        default_object(resource, &mut obj, Some(current));
        validate(resource, &obj, false).map_err(|e| ApiError::invalid(resource, name, e))?;
        // An update that changes nothing is not written: the object keeps its
        // resourceVersion, as with the real server.
        let unchanged = {
            let mut new = obj.clone();
            new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
            &new == current
        };
        if unchanged && !always_write {
            return Ok(current.clone());
        }
        self.record_writer(
            resource,
            Self::key(resource, namespace, name),
            current,
            &obj,
            dry_run,
        );
        Ok(self.commit(
            resource,
            Self::key(resource, namespace, name),
            obj,
            dry_run,
            Some(current["metadata"]["resourceVersion"].clone()),
        ))
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

    /// Patches an object with a patch given as a value (as a Rust client would send it).
    pub fn patch(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        body: &Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let bytes = serde_json::to_vec(body).expect("values serialise");
        self.patch_bytes(
            resource,
            namespace,
            name,
            patch_type,
            &bytes,
            dry_run,
            FieldValidation::Ignore,
        )
        .map(|(object, _)| object)
    }

    /// Patches an object with the patch body as the client sent it (a JSON Patch `test`
    /// compares those bytes). A `metadata.resourceVersion` in the patched result that
    /// differs from the current one is a precondition failure (409), as upstream. Fields the
    /// kind does not hold are refused or dropped as `validation` says; the dropped ones are
    /// returned beside the object, for the `Warning` headers.
    #[allow(clippy::too_many_arguments)] // the request's parts, as the handler has them
    pub fn patch_bytes(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        bytes: &[u8],
        dry_run: bool,
        validation: FieldValidation,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let original: Value = serde_json::from_slice(bytes)
            .map_err(|_| ApiError::bad_request("invalid JSON patch"))?;
        let current = self.get_value(resource, namespace, name)?;
        if let Some(e) = patch_decode_error(patch_type, &original) {
            return Err(e);
        }
        // Unknown fields of a merge or strategic patch are found (and dropped) in the patch
        // itself; a JSON Patch's in the object it makes.
        let mut body = original.clone();
        let mut unknown = match patch_type {
            PatchType::Merge | PatchType::Strategic => drop_unknown_fields_in_patch(
                resource.group,
                resource.version,
                resource.kind,
                &mut body,
            ),
            PatchType::Json => Vec::new(),
        };
        let patched = match patch_type {
            PatchType::Json => {
                let text = std::str::from_utf8(bytes)
                    .map_err(|_| ApiError::bad_request("invalid JSON patch"))?;
                apply_json_patch_bytes(&current, text).map_err(|_| ApiError::patch_not_applied())?
            }
            PatchType::Merge => apply_merge_patch(&current, &body),
            PatchType::Strategic => {
                // The strategic merge patch converts the patch to the typed object first
                // (`runtime.DefaultUnstructuredConverter`): an integer cannot become a
                // string, any other non-string is an "unrecognized type".
                let bad = ["labels", "annotations"].iter().find_map(|f| {
                    body["metadata"][f]
                        .as_object()
                        .and_then(|m| m.values().find(|v| !v.is_string() && !v.is_null()))
                });
                if let Some(bad) = bad {
                    let detail = if bad.is_i64() || bad.is_u64() {
                        "cannot convert int64 to string"
                    } else {
                        "unrecognized type: string"
                    };
                    return Err(patch_invalid(go_sprint(&original), detail.into()));
                }
                apply_strategic_merge_patch(&current, &body)
            }
        };
        if let Some(e) = decode_error(&patched) {
            return Err(patch_invalid(go_json(&patched), e));
        }
        let mut patched = patched;
        let as_patched = match patch_type {
            PatchType::Json => {
                let as_patched = patched.clone();
                unknown = drop_unknown_fields(
                    resource.group,
                    resource.version,
                    resource.kind,
                    &mut patched,
                );
                Some(as_patched)
            }
            PatchType::Merge | PatchType::Strategic => None,
        };
        if validation == FieldValidation::Strict && !unknown.is_empty() {
            // A strategic merge patch is quoted as the patch map, the others as the object
            // they made.
            let value = match (patch_type, as_patched) {
                (PatchType::Strategic, _) => go_sprint(&original),
                (_, Some(as_patched)) => go_json(&as_patched),
                (_, None) => go_json(&apply_merge_patch(&current, &original)),
            };
            return Err(patch_invalid(value, strict_error(&unknown)));
        }
        null_strings_to_empty(&mut patched);
        if !patched.is_object() || !patched["metadata"].is_object() {
            return Err(ApiError::bad_request(
                "the patch removed the object's metadata",
            ));
        }
        self.check_precondition(resource, name, &current, &patched)?;
        if patched["metadata"]["name"] != current["metadata"]["name"] {
            return Err(ApiError::name_mismatch(
                patched["metadata"]["name"].as_str().unwrap_or_default(),
                name,
            ));
        }
        if patched["metadata"]["namespace"] != current["metadata"]["namespace"] {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let object =
            self.finish_update(resource, namespace, name, &current, patched, dry_run, false)?;
        Ok((object, unknown))
    }

    /// Deletes an object (`grace_period`: the request's `gracePeriodSeconds`). A pod is
    /// deleted gracefully, as the pod strategy does: it is answered with the object marked
    /// `deletionTimestamp`/`deletionGracePeriodSeconds`, and a pod bound to a node stays
    /// until the grace period is 0 (no kubelet here ends it), while an unbound or finished
    /// one is removed at once.
    pub fn delete(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
        dry_run: bool,
        grace_period: Option<i64>,
    ) -> Result<Value, ApiError> {
        let key = Self::key(resource, namespace, name);
        let current = self.get_value(resource, namespace, name)?;
        if resource.kind == "Pod" {
            let unbound = current["spec"]["nodeName"]
                .as_str()
                .is_none_or(str::is_empty);
            let finished = matches!(
                current["status"]["phase"].as_str(),
                Some("Succeeded" | "Failed")
            );
            let grace = if unbound || finished {
                0
            } else {
                grace_period
                    .or_else(|| current["spec"]["terminationGracePeriodSeconds"].as_i64())
                    .unwrap_or(30)
                    .max(0)
            };
            let mut obj = current.clone();
            // A pod already terminating keeps its deadline unless this one is shorter.
            let shorter = obj["metadata"]["deletionGracePeriodSeconds"]
                .as_i64()
                .is_none_or(|g| grace < g);
            if !shorter && grace > 0 {
                // Nothing to write: the pod keeps terminating on its earlier deadline.
                obj["apiVersion"] = Value::from(resource.api_version());
                obj["kind"] = Value::from(resource.kind);
                return Ok(obj);
            }
            if shorter {
                let at = jiff::Timestamp::now()
                    .checked_add(jiff::SignedDuration::from_secs(grace))
                    .unwrap_or_else(|_| jiff::Timestamp::now());
                obj["metadata"]["deletionTimestamp"] =
                    json!(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
                obj["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
                let generation = obj["metadata"]["generation"].as_i64().unwrap_or(0);
                obj["metadata"]["generation"] = json!(generation + 1);
            }
            obj["apiVersion"] = Value::from(resource.api_version());
            obj["kind"] = Value::from(resource.kind);
            let previous = Some(current["metadata"]["resourceVersion"].clone());
            if grace == 0 && !dry_run {
                // Gone at once: one write, the deletion (its event carries the marks).
                self.tables
                    .get_mut(resource.plural)
                    .expect("table")
                    .insert(key.clone(), index(resource, &obj));
                self.remove(resource, &key);
                obj["metadata"]["resourceVersion"] = Value::from(self.resource_version.to_string());
                return Ok(obj);
            }
            return Ok(self.commit(resource, key, obj, dry_run, previous));
        }
        if !dry_run {
            self.remove(resource, &key);
        }
        // The service storage answers with the deleted object (`ReturnDeletedObject`).
        if resource.kind == "Service" {
            let mut gone = current;
            if !dry_run {
                gone["metadata"]["resourceVersion"] =
                    Value::from(self.resource_version.to_string());
            }
            return Ok(gone);
        }
        let mut details =
            json!({"name": name, "kind": resource.plural, "uid": current["metadata"]["uid"]});
        if !resource.group.is_empty() {
            details["group"] = json!(resource.group);
        }
        Ok(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details
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
        let rv = |o: &Value| {
            o["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        };
        assert_eq!(rv(&b), rv(&a) + 1);
        assert_eq!(s.resource_version(), rv(&b));
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
        s.delete(nodes(), None, "a", true, None).unwrap();
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
        // `ValidateNode` puts the taints under `metadata`, and prints a duplicate as Go's
        // JSON of the internal type.
        assert_eq!(
            err.message(),
            "Node \"t\" is invalid: [metadata.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\", metadata.taints[2]: Duplicate value: {\"Key\":\"b\",\"Value\":\"2\",\"Effect\":\"NoSchedule\",\"TimeAdded\":null}: taints must be unique by key and effect pair]"
        );
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
        s.ensure_namespace("a");
        s.ensure_namespace("b");
        for (ns, name, node) in [("a", "p1", "n1"), ("a", "p2", "n2"), ("b", "p3", "n1")] {
            s.create(pods, Some(ns), json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Running"}}), false).unwrap();
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

    fn configmaps() -> &'static Resource {
        find("", "v1", "configmaps").unwrap()
    }

    #[test]
    fn a_new_cluster_has_the_system_namespaces_and_creates_need_one() {
        let mut s = Store::new();
        for ns in SYSTEM_NAMESPACES {
            assert!(s.has_namespace(ns), "{ns}");
        }
        let cm = json!({"metadata": {"name": "c"}});
        let err = s
            .create(configmaps(), Some("nope"), cm.clone(), true)
            .unwrap_err();
        assert_eq!(
            (err.code, err.message()),
            (404, "namespaces \"nope\" not found")
        );
        assert_eq!(
            err.body["details"],
            json!({"name": "nope", "kind": "namespaces"})
        );
        let err = s
            .create(
                configmaps(),
                Some("default"),
                json!({"metadata": {"name": "c", "namespace": "other"}}),
                false,
            )
            .unwrap_err();
        assert_eq!(err.code, 400);
        s.ensure_namespace("nope");
        assert!(s.create(configmaps(), Some("nope"), cm, false).is_ok());
        let ns = s.get_value(Store::namespaces(), None, "nope").unwrap();
        assert_eq!(
            ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "nope"
        );
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["status"]["phase"], "Active");
    }

    #[test]
    fn nodes_are_defaulted_and_keep_their_status_on_update() {
        let mut s = Store::new();
        let created = s
            .create(
                nodes(),
                None,
                json!({"metadata": {"name": "n", "namespace": "x", "labels": {}},
                       "status": {"capacity": {"nvidia.com/gpu": "8"}}}),
                false,
            )
            .unwrap();
        assert_eq!(created["spec"], json!({}));
        assert!(created["metadata"].get("namespace").is_none());
        assert!(created["metadata"].get("labels").is_none());
        assert_eq!(
            created["status"]["allocatable"],
            json!({"nvidia.com/gpu": "8"})
        );
        assert_eq!(
            created["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"],
            0
        );
        assert_eq!(created["status"]["nodeInfo"]["kubeletVersion"], "");
        let patched = s
            .patch(
                nodes(),
                None,
                "n",
                PatchType::Merge,
                &json!({"status": {"capacity": {"nvidia.com/gpu": "4"}}, "metadata": {"labels": {"a": "1"}}}),
                false,
            )
            .unwrap();
        assert_eq!(patched["status"]["capacity"]["nvidia.com/gpu"], "8");
        assert_eq!(patched["metadata"]["labels"]["a"], "1");
    }

    #[test]
    fn dry_runs_and_no_op_writes_keep_the_resource_version() {
        let mut s = Store::new();
        let dry = s.create(nodes(), None, node("a", json!({})), true).unwrap();
        assert!(dry["metadata"].get("resourceVersion").is_none());
        assert!(dry["metadata"]["uid"].is_string());
        let a = s
            .create(nodes(), None, node("a", json!({"x": "1"})), false)
            .unwrap();
        let rv = a["metadata"]["resourceVersion"].clone();
        let counter = s.resource_version();
        let label = |v: &str| json!({"metadata": {"labels": {"x": v}}});
        let dry = s
            .patch(nodes(), None, "a", PatchType::Merge, &label("2"), true)
            .unwrap();
        assert_eq!(
            (
                dry["metadata"]["resourceVersion"].clone(),
                dry["metadata"]["labels"]["x"].clone()
            ),
            (rv.clone(), json!("2"))
        );
        let same = s
            .patch(nodes(), None, "a", PatchType::Merge, &label("1"), false)
            .unwrap();
        assert_eq!(same["metadata"]["resourceVersion"], rv);
        assert_eq!(s.resource_version(), counter);
    }

    #[test]
    fn label_maps_of_the_wrong_type_are_refused_like_go_decoding() {
        let mut s = Store::new();
        let err = s
            .create(nodes(), None, node("a", json!({"x": 5})), false)
            .unwrap_err();
        assert_eq!(
            (err.code, err.message()),
            (
                400,
                "Node in version \"v1\" cannot be handled as a Node: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
            )
        );
        s.create(nodes(), None, node("a", json!({"x": "1"})), false)
            .unwrap();
        let err = s
            .patch(
                nodes(),
                None,
                "a",
                PatchType::Merge,
                &json!({"metadata": {"labels": {"y": true}}}),
                false,
            )
            .unwrap_err();
        assert_eq!((err.code, err.reason()), (422, "Invalid"));
        assert!(
            err.message()
                .starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
            "{}",
            err.message()
        );
        assert!(err.message().ends_with("\": json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string"), "{}", err.message());
        let err = s
            .patch(
                nodes(),
                None,
                "a",
                PatchType::Strategic,
                &json!({"metadata": {"labels": {"y": 5}}}),
                false,
            )
            .unwrap_err();
        assert_eq!(
            err.message(),
            " \"\" is invalid: patch: Invalid value: \"map[metadata:map[labels:map[y:5]]]\": cannot convert int64 to string"
        );
        assert_eq!(
            s.get_value(nodes(), None, "a").unwrap()["metadata"]["labels"],
            json!({"x": "1"})
        );
    }

    #[test]
    fn extended_resources_need_a_limit_equal_to_the_request() {
        let pods = find("", "v1", "pods").unwrap();
        let mut s = Store::new();
        let pod = |resources: Value| json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}});
        let err = s
            .create(
                pods,
                Some("default"),
                pod(json!({"requests": {"nvidia.com/gpu": "1"}})),
                false,
            )
            .unwrap_err();
        assert_eq!(
            err.message(),
            "Pod \"p\" is invalid: spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
        );
        let err = s
            .create(
                pods,
                Some("default"),
                pod(
                    json!({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}),
                ),
                false,
            )
            .unwrap_err();
        assert_eq!(
            err.message(),
            "Pod \"p\" is invalid: spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to nvidia.com/gpu limit of 2"
        );
        let err = s
            .create(
                pods,
                Some("default"),
                pod(json!({"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}})),
                false,
            )
            .unwrap_err();
        assert_eq!(
            err.message(),
            "Pod \"p\" is invalid: spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1500m"
        );
        for ok in [
            json!({"requests": {"cpu": "1", "memory": "1Gi"}}),
            json!({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": 1}}),
            json!({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}),
            json!({"requests": {"memory": "1024Mi"}, "limits": {"memory": "1Gi"}}),
        ] {
            s.create(pods, Some("default"), pod(ok.clone()), true)
                .unwrap_or_else(|e| panic!("{ok}: {}", e.message()));
        }
    }

    #[test]
    fn unfiltered_pages_count_what_remains_and_full_pages_continue() {
        let mut s = Store::new();
        for i in 0..5 {
            s.create(
                nodes(),
                None,
                node(&format!("n{i}"), json!({"odd": (i % 2).to_string()})),
                false,
            )
            .unwrap();
        }
        let all = s
            .list(
                nodes(),
                None,
                &Selector::default(),
                &FieldSelector::default(),
                Some(2),
                None,
            )
            .unwrap();
        assert_eq!((all.items.len(), all.remaining), (2, Some(3)));
        // A full page continues when any object follows, matching or not: after n3 comes n4,
        // so the third page is empty.
        let odd = Selector::parse("odd=1").unwrap();
        let mut token = None;
        let mut pages = Vec::new();
        loop {
            let page = s
                .list(
                    nodes(),
                    None,
                    &odd,
                    &FieldSelector::default(),
                    Some(1),
                    token.as_deref(),
                )
                .unwrap();
            assert_eq!(page.remaining, None);
            pages.push(page.items.len());
            match page.continue_token {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        assert_eq!(pages, vec![1, 1, 0]);
        let err = s
            .list(
                nodes(),
                None,
                &odd,
                &FieldSelector::default(),
                Some(1),
                Some("garbage"),
            )
            .unwrap_err();
        assert!(
            err.message()
                .starts_with("invalid continue token: continue key is not valid: ")
        );
    }

    #[test]
    fn object_names_and_annotation_keys_are_validated() {
        let mut s = Store::new();
        let err = s
            .create(nodes(), None, node("Bad_Name", json!({})), false)
            .unwrap_err();
        assert!(err.message().starts_with("Node \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{}", err.message());
        let err = s
            .create(
                find("", "v1", "namespaces").unwrap(),
                None,
                json!({"metadata": {"name": "a.b"}}),
                false,
            )
            .unwrap_err();
        assert_eq!(
            err.message(),
            "Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": must not contain dots"
        );
        let err = s
            .create(nodes(), None, json!({"metadata": {"name": "n", "annotations": {"a/b/c": "x", "Upper.Example.com/ok": "y"}}}), false)
            .unwrap_err();
        assert_eq!(err.body["details"]["causes"].as_array().unwrap().len(), 1);
        assert_eq!(
            err.body["details"]["causes"][0]["field"],
            "metadata.annotations"
        );
    }
}
