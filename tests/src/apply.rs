//! Server-side apply (`PATCH` with `application/apply-patch+yaml`), as `kubectl apply
//! --server-side` uses it: field ownership per manager, conflicts, and the removal of fields
//! a manager stops applying.
//!
//! The test server tracks ownership of leaf fields: map entries down to values, with lists
//! as one atomic value (the real server merges lists of keyed items such as containers item
//! by item, and names such an item `[name="c"]` in a conflict). Every write through the HTTP
//! front records its field manager (`fieldManager`, else the client's user agent up to the
//! first `/`) as the owner of the fields it changed, as an `Update` entry. `managedFields`
//! is not shown.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A field's path: map keys from the object's root.
pub type FieldPath = Vec<String>;

/// Who wrote a field, as managed fields tell managers apart: by name, operation and the
/// apiVersion of the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manager {
    pub name: String,
    /// `Apply` (true) or `Update`.
    pub apply: bool,
    pub api_version: String,
}

impl Manager {
    /// How a conflict names the manager (`printManager`).
    pub fn shown(&self) -> String {
        let name = crate::apimachinery::field::go_quote(&self.name);
        if self.apply {
            name
        } else {
            format!("{name} using {}", self.api_version)
        }
    }
}

/// The managers of each field of one object.
pub type Owners = BTreeMap<FieldPath, Vec<Manager>>;

/// `.data.a`, as field paths are printed.
pub fn show_path(path: &FieldPath) -> String {
    path.iter().map(|p| format!(".{p}")).collect()
}

/// Whether a top-level or metadata field is the server's, never a manager's.
fn server_owned(path: &[String]) -> bool {
    match path {
        [top] => matches!(top.as_str(), "apiVersion" | "kind" | "status"),
        [top, ..] if top == "status" => true,
        [meta, field, ..] if meta == "metadata" => matches!(
            field.as_str(),
            "name"
                | "namespace"
                | "uid"
                | "resourceVersion"
                | "generation"
                | "creationTimestamp"
                | "deletionTimestamp"
                | "deletionGracePeriodSeconds"
                | "managedFields"
                | "selfLink"
        ),
        _ => false,
    }
}

/// The leaf fields of an object with their values: map entries down to scalars, lists and
/// empty maps.
pub fn leaves(obj: &Value) -> BTreeMap<FieldPath, Value> {
    let mut out = BTreeMap::new();
    leaves_under(obj, &mut Vec::new(), &mut |path, leaf| {
        out.insert(path.clone(), leaf.clone());
    });
    out
}

fn leaves_under(value: &Value, path: &mut FieldPath, out: &mut impl FnMut(&FieldPath, &Value)) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                path.push(key.clone());
                if !server_owned(path) {
                    leaves_under(child, path, out);
                }
                path.pop();
            }
        }
        Value::Null => {}
        leaf => out(path, leaf),
    }
}

/// The leaf fields a write changed, each with whether it is there afterwards; subtrees that
/// are equal on both sides are not walked.
pub fn changes(before: &Value, after: &Value) -> Vec<(FieldPath, bool)> {
    fn walk(
        before: Option<&Value>,
        after: Option<&Value>,
        path: &mut FieldPath,
        out: &mut Vec<(FieldPath, bool)>,
    ) {
        if before == after || server_owned(path) {
            return;
        }
        fn map(v: Option<&Value>) -> Option<&Map<String, Value>> {
            v.and_then(Value::as_object).filter(|m| !m.is_empty())
        }
        if let (Some(b), Some(a)) = (map(before), map(after)) {
            for key in b.keys().chain(a.keys().filter(|k| !b.contains_key(*k))) {
                path.push(key.clone());
                walk(b.get(key), a.get(key), path, out);
                path.pop();
            }
            return;
        }
        for (side, present) in [(before, false), (after, true)] {
            if let Some(value) = side {
                leaves_under(value, path, &mut |p, _| out.push((p.clone(), present)));
            }
        }
    }
    let mut out = Vec::new();
    walk(Some(before), Some(after), &mut Vec::new(), &mut out);
    out
}

/// Records an `Update` by `manager`: it owns what it changed, alone; what it removed has no
/// owner.
pub fn record_update(owners: &mut Owners, manager: &Manager, changes: Vec<(FieldPath, bool)>) {
    for (path, present) in changes {
        if present {
            owners.insert(path, vec![manager.clone()]);
        } else {
            owners.remove(&path);
        }
    }
}

/// One field another manager owns with a different value than the applied one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub manager: Manager,
    pub path: FieldPath,
}

/// The result of applying a configuration to a live object.
#[derive(Debug)]
pub struct Applied {
    pub object: Value,
    pub owners: Owners,
}

/// Applies `config` as `manager` to `live` (`None`: the object does not exist yet): fields
/// the manager applied before and leaves out now are removed unless someone else owns them
/// too; applied values win; a field another manager owns with another value is a conflict
/// unless `force`.
pub fn apply(
    live: Option<&Value>,
    owners: &Owners,
    config: &Value,
    manager: &Manager,
    force: bool,
) -> Result<Applied, Vec<Conflict>> {
    let applied = leaves(config);
    let current = live.map(leaves).unwrap_or_default();
    let mut conflicts = Vec::new();
    for (path, value) in &applied {
        if current.get(path).is_none_or(|v| v == value) {
            continue;
        }
        for other in owners.get(path).into_iter().flatten() {
            if other != manager {
                conflicts.push(Conflict {
                    manager: other.clone(),
                    path: path.clone(),
                });
            }
        }
    }
    if !conflicts.is_empty() && !force {
        conflicts.sort_by(|a, b| (&a.manager.name, &a.path).cmp(&(&b.manager.name, &b.path)));
        return Err(conflicts);
    }
    let mut object = live.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    let mut next = owners.clone();
    // What the manager no longer applies: dropped from its set, and from the object when
    // nobody else holds it.
    for (path, managers) in owners {
        if applied.contains_key(path) || !managers.contains(manager) {
            continue;
        }
        let others: Vec<Manager> = managers.iter().filter(|m| *m != manager).cloned().collect();
        if others.is_empty() {
            remove(&mut object, path);
            next.remove(path);
        } else {
            next.insert(path.clone(), others);
        }
    }
    merge(&mut object, config);
    for (path, value) in &applied {
        let entry = next.entry(path.clone()).or_default();
        if force || current.get(path).is_none_or(|v| v != value) {
            *entry = vec![manager.clone()];
        } else if !entry.contains(manager) {
            entry.push(manager.clone());
        }
    }
    Ok(Applied {
        object,
        owners: next,
    })
}

/// `Apply failed with 1 conflict: conflict with "m": .data.a`, or grouped by manager.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    let detail = match conflicts {
        [one] => format!(
            "conflict with {}: {}",
            one.manager.shown(),
            show_path(&one.path)
        ),
        many => {
            let mut lines = Vec::new();
            let mut last: Option<&Manager> = None;
            for c in many {
                if last != Some(&c.manager) {
                    lines.push(format!("conflicts with {}:", c.manager.shown()));
                    last = Some(&c.manager);
                }
                lines.push(format!("- {}", show_path(&c.path)));
            }
            lines.join("\n")
        }
    };
    let n = conflicts.len();
    format!(
        "Apply failed with {n} conflict{}: {detail}",
        if n == 1 { "" } else { "s" }
    )
}

fn remove(obj: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let emptied = {
        let mut at = &mut *obj;
        for key in parents {
            match at.get_mut(key) {
                Some(next) => at = next,
                None => return,
            }
        }
        at.as_object_mut().is_some_and(|map| {
            map.remove(last);
            map.is_empty()
        })
    };
    // A map the removal emptied goes too, as the applied configuration no longer has it.
    if emptied && !parents.is_empty() {
        remove(obj, parents);
    }
}

/// Maps merge key by key; anything else (lists included) is replaced.
fn merge(target: &mut Value, config: &Value) {
    match (target, config) {
        (Value::Object(t), Value::Object(c)) => {
            for (key, value) in c {
                match t.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        merge(existing, value)
                    }
                    _ => {
                        t.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (t, c) => *t = c.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(name: &str) -> Manager {
        Manager {
            name: name.into(),
            apply: true,
            api_version: "v1".into(),
        }
    }

    #[test]
    fn a_manager_drops_what_it_stops_applying_and_conflicts_with_another() {
        let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data});
        let first = apply(
            None,
            &Owners::new(),
            &cm(json!({"a": "1", "b": "2"})),
            &m("m1"),
            false,
        )
        .unwrap();
        let second = apply(
            Some(&first.object),
            &first.owners,
            &cm(json!({"a": "1"})),
            &m("m1"),
            false,
        )
        .unwrap();
        assert_eq!(second.object["data"], json!({"a": "1"}));
        let refused = apply(
            Some(&second.object),
            &second.owners,
            &cm(json!({"a": "9"})),
            &m("m2"),
            false,
        )
        .unwrap_err();
        assert_eq!(
            conflict_message(&refused),
            "Apply failed with 1 conflict: conflict with \"m1\": .data.a"
        );
        let shared = apply(
            Some(&second.object),
            &second.owners,
            &cm(json!({"a": "1", "c": "3"})),
            &m("m2"),
            false,
        )
        .unwrap();
        // m1 leaves `a`, which m2 still holds.
        let after = apply(
            Some(&shared.object),
            &shared.owners,
            &cm(json!({})),
            &m("m1"),
            false,
        )
        .unwrap();
        assert_eq!(after.object["data"], json!({"a": "1", "c": "3"}));
    }
}
