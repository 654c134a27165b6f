//! What the test server holds and what its request handlers share: the store, users,
//! faults, concurrent writers, counters, the upstream of the proxy mode, a request's verb and
//! why a request failed.

use std::collections::HashMap;
use std::sync::Mutex;

use http::Method;
use serde_json::Value;

use crate::control::{ConcurrentWrite, Counters, Fault, FaultAction, User};
use crate::status::ApiError;
use crate::store::Store;
use crate::upstream::Upstream;

/// Everything the server holds.
#[derive(Debug)]
pub struct State {
    pub store: Mutex<Store>,
    /// Bearer token -> user. Empty: authentication off, every request is an admin.
    pub users: HashMap<String, User>,
    pub faults: Mutex<Vec<Fault>>,
    pub concurrent_writes: Mutex<Vec<ConcurrentWrite>>,
    pub counters: Mutex<Counters>,
    /// `host:port`, for discovery.
    pub address: Mutex<String>,
    /// A real API server to forward to: the test server is then a fault-injecting reverse
    /// proxy, and its own store is unused.
    pub upstream: Option<Upstream>,
    /// Lists answered in JSON even to a client that asks for protobuf first, as a server or
    /// proxy that does not speak protobuf answers ([`crate::TestServer::answer_lists_in_json`]).
    pub json_lists: std::sync::atomic::AtomicBool,
}

impl State {
    pub fn new(store: Store, users: HashMap<String, User>) -> Self {
        State {
            store: Mutex::new(store),
            users,
            faults: Mutex::new(Vec::new()),
            concurrent_writes: Mutex::new(Vec::new()),
            counters: Mutex::new(Counters::new()),
            address: Mutex::new(String::new()),
            upstream: None,
            json_lists: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub(crate) fn count(&self, verb: &str, resource: &str) {
        *self
            .counters
            .lock()
            .expect("counters")
            .entry(verb.to_string())
            .or_default()
            .entry(resource.to_string())
            .or_default() += 1;
    }

    /// The fault to apply to this request, if any. Every fault counts every matching
    /// request, even when another one fires on it.
    pub(crate) fn fault_for(&self, verb: &str, resource: &str) -> Option<FaultAction> {
        self.faults
            .lock()
            .expect("faults")
            .iter_mut()
            .filter_map(|f| f.observe(verb, resource))
            .reduce(|first, _| first)
    }

    /// The merge patch someone else applies before this write to `resource`/`name`, if any.
    pub(crate) fn concurrent_write_for(&self, resource: &str, name: &str) -> Option<Value> {
        self.concurrent_writes
            .lock()
            .expect("writers")
            .iter_mut()
            .filter_map(|w| w.observe(resource, name).then(|| w.merge_patch.clone()))
            .reduce(|first, _| first)
    }
}

pub(crate) enum Failure {
    Api(ApiError),
    Drop,
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Api(e)
    }
}

/// The RBAC verb of a request, as kube-apiserver names it (the counters and faults use it).
pub(crate) fn verb_for(method: &Method, has_name: bool, watch: bool) -> &'static str {
    match (method, has_name) {
        (&Method::GET, _) if watch => "watch",
        (&Method::GET, true) => "get",
        (&Method::GET, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "unknown",
    }
}
