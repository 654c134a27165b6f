//! Users and permissions, fault injection, concurrent writers and request counters.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A bearer-token user with simple verb x resource permissions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub name: String,
    pub rules: Vec<Rule>,
}

/// Allows `verbs` on `resources` (plural names); `*` matches anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub resources: Vec<String>,
}

impl User {
    /// Every verb on every resource.
    pub fn admin(name: &str) -> Self {
        User {
            name: name.into(),
            rules: vec![Rule {
                verbs: vec!["*".into()],
                resources: vec!["*".into()],
            }],
        }
    }

    /// get, list and watch on every resource.
    pub fn read_only(name: &str) -> Self {
        User {
            name: name.into(),
            rules: vec![Rule {
                verbs: vec!["get".into(), "list".into(), "watch".into()],
                resources: vec!["*".into()],
            }],
        }
    }

    pub fn can(&self, verb: &str, resource: &str) -> bool {
        let has = |list: &[String], x: &str| list.iter().any(|v| v == "*" || v == x);
        self.rules
            .iter()
            .any(|r| has(&r.verbs, verb) && has(&r.resources, resource))
    }
}

/// What an injected fault does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum FaultAction {
    /// Answer with this status code (a real `Status` body; 429 carries `Retry-After`).
    #[serde(rename_all = "camelCase")]
    Status {
        code: u16,
        #[serde(default)]
        retry_after_seconds: Option<u32>,
    },
    /// Close the connection without an answer (the request is not processed).
    Drop,
    /// Process the request, then close the connection without an answer: the change is
    /// made but the client cannot know it.
    LoseAnswer,
    /// Wait, then serve the request normally.
    #[serde(rename_all = "camelCase")]
    Delay { millis: u64 },
    /// Serve the request normally, with this `Warning` header on the answer (a deprecation,
    /// an admission policy in Warn mode).
    Warn { text: String },
    /// Refuse with 403 and a message quoting the `Authorization` header the request
    /// carried, as a server (or an authenticating webhook's error) that echoes credentials
    /// does: a client must never print what it sent.
    EchoCredentials,
}

/// Fire `action` on the `nth` (1-based) request matching `verb` and `resource`, and on the
/// `times - 1` matching requests after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    /// get, list, create, update, patch, delete, or `*`.
    pub verb: String,
    /// Plural resource name, or `*`.
    pub resource: String,
    pub nth: u64,
    #[serde(default = "one")]
    pub times: u64,
    pub action: FaultAction,
    /// Matching requests seen so far.
    #[serde(default)]
    pub seen: u64,
    /// Times it fired.
    #[serde(default)]
    pub fired: u64,
}

fn one() -> u64 {
    1
}

impl Fault {
    pub fn new(verb: &str, resource: &str, nth: u64, action: FaultAction) -> Self {
        Fault {
            verb: verb.into(),
            resource: resource.into(),
            nth,
            times: 1,
            action,
            seen: 0,
            fired: 0,
        }
    }

    fn matches(&self, verb: &str, resource: &str) -> bool {
        (self.verb == "*" || self.verb == verb)
            && (self.resource == "*" || self.resource == resource)
    }

    /// Counts a request; returns the action if this one is hit.
    pub fn observe(&mut self, verb: &str, resource: &str) -> Option<FaultAction> {
        if !self.matches(verb, resource) {
            return None;
        }
        self.seen += 1;
        if self.seen >= self.nth && self.fired < self.times {
            self.fired += 1;
            return Some(self.action.clone());
        }
        None
    }
}

/// Someone else's write landing between a client's read and its write: before the `nth`
/// write (patch or update) to `resource`/`name`, `mergePatch` is applied to the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConcurrentWrite {
    pub resource: String,
    #[serde(default)]
    pub namespace: Option<String>,
    pub name: String,
    #[serde(default = "one")]
    pub nth: u64,
    pub merge_patch: Value,
    #[serde(default)]
    pub seen: u64,
    #[serde(default)]
    pub fired: bool,
}

impl ConcurrentWrite {
    pub fn new(resource: &str, name: &str, merge_patch: Value) -> Self {
        ConcurrentWrite {
            resource: resource.into(),
            namespace: None,
            name: name.into(),
            nth: 1,
            merge_patch,
            seen: 0,
            fired: false,
        }
    }

    /// Counts a write; true when the concurrent write must happen now.
    pub fn observe(&mut self, resource: &str, name: &str) -> bool {
        if self.fired || self.resource != resource || self.name != name {
            return false;
        }
        self.seen += 1;
        if self.seen == self.nth {
            self.fired = true;
            return true;
        }
        false
    }
}

/// Requests per `verb` and `resource` (`discovery` for discovery paths).
pub type Counters = BTreeMap<String, BTreeMap<String, u64>>;
