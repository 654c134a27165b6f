//! Dynamic Resource Allocation (`resource.k8s.io/v1`) as the scheduler counts it, as pure
//! functions over minimal read-model types that list pages deserialise into directly.
//!
//! A DRA driver publishes its devices in ResourceSlices (per node, or for the nodes a
//! selector picks); pods get devices through ResourceClaims, which the scheduler allocates
//! and records in `status.allocation`. A device is in use when an allocated claim's results
//! name it (driver, pool, device) — the scheduler's own rule. Only the newest generation of a
//! pool counts. Partitionable devices (`consumesCounters`) are free only while the counters
//! of their pool's `sharedCounters` that they consume are left.
//!
//! What cannot be modelled without a CEL evaluator is said so, never guessed: a class or
//! request whose selectors are not the plain `device.driver == "..."` form makes
//! [`DraInventory::free_for_class`] return `None`.

pub mod allocate;
pub mod cel;

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use k8s_openapi::api::core::v1::NodeSelector;

use crate::model::dra::{
    AllocationResult, DeviceClass, DeviceRequest, DeviceTaint, DeviceTaintRule, DeviceToleration,
    ExactDeviceRequest, ResourceClaim, ResourceSlice,
};
use crate::model::pod::{PodClaimRef, PodClaimStatus};
use crate::model::quantity::parse_quantity_milli;
use crate::scheduling::{NodeFacts, terms_match};

/// One device, named as allocation results name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId {
    pub driver: String,
    pub pool: String,
    pub device: String,
}

impl From<&AllocationResult> for DeviceId {
    fn from(r: &AllocationResult) -> Self {
        DeviceId {
            driver: r.driver.clone(),
            pool: r.pool.clone(),
            device: r.device.clone(),
        }
    }
}

/// Which nodes a slice's (or device's) devices can be used from.
#[derive(Debug, Clone)]
pub enum Reach {
    Node(String),
    Selector(NodeSelector),
    AllNodes,
}

impl Reach {
    pub fn admits(&self, node: NodeFacts<'_>) -> bool {
        match self {
            Reach::Node(name) => name == node.name,
            Reach::Selector(selector) => terms_match(&selector.node_selector_terms, node),
            Reach::AllNodes => true,
        }
    }
}

/// What is kept of one published device: memory stays per device, not per slice.
#[derive(Debug, Clone)]
pub struct KeptDevice {
    pub driver: String,
    pub pool: String,
    pub name: String,
    pub reach: Reach,
    /// Shared: allocations do not use it up.
    pub shareable: bool,
    /// A GPU or another accelerator, not a channel or daemon slot of a ComputeDomain.
    pub accelerator: bool,
    /// The NoSchedule/NoExecute taints on the device: published with it, or put on by a
    /// DeviceTaintRule. A claim gets the device only if it tolerates every one.
    pub taints: Vec<KeptTaint>,
    /// counter set -> counter -> thousandths consumed.
    pub consumes: BTreeMap<String, BTreeMap<String, i128>>,
    /// Attributes by published name, for selectors and `matchAttribute`.
    pub attributes: BTreeMap<String, cel::AttributeValue>,
    /// Capacities by published name (quantities), for selectors.
    pub capacity: BTreeMap<String, String>,
}

impl KeptDevice {
    /// What a CEL selector sees of the device.
    pub fn facts(&self) -> cel::DeviceFacts<'_> {
        cel::DeviceFacts {
            driver: &self.driver,
            attributes: &self.attributes,
            capacity: &self.capacity,
            allow_multiple_allocations: self.shareable,
        }
    }

    /// The attribute `matchAttribute` names (fully qualified): published with that name, or
    /// unqualified by the driver whose domain it is.
    pub fn attribute(&self, qualified: &str) -> Option<&cel::AttributeValue> {
        if let Some(v) = self.attributes.get(qualified) {
            return Some(v);
        }
        let (domain, id) = qualified.split_once('/')?;
        (domain == self.driver)
            .then(|| self.attributes.get(id))
            .flatten()
    }
}

/// A taint on a device and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptTaint {
    pub taint: DeviceTaint,
    /// The DeviceTaintRule that put it on; `None` when the driver published it.
    pub rule: Option<String>,
}

impl std::fmt::Display for KeptTaint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.rule {
            Some(rule) => write!(f, "{} (DeviceTaintRule {rule})", self.taint),
            None => write!(f, "{} (published by the driver)", self.taint),
        }
    }
}

/// What one DeviceTaintRule does to the devices placekit sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaintRuleEffect {
    pub rule: String,
    pub taint: DeviceTaint,
    /// Devices it taints.
    pub devices: usize,
    /// Of them, devices an allocated claim uses (NoExecute evicts their pods unless the
    /// claims tolerate it).
    pub allocated: usize,
}

/// (driver, pool) -> counter set -> counter -> thousandths.
type Counters = BTreeMap<(String, String), BTreeMap<String, BTreeMap<String, i128>>>;

/// A driver's devices, the allocations against them and the shared counters of their pools,
/// indexed so that a node's devices are found without scanning every device: the per-node
/// inventory of 5,000 nodes over 8,000 devices stays linear.
#[derive(Debug, Default)]
pub struct DraInventory {
    devices: Vec<KeptDevice>,
    /// (driver, pool, device) -> index in `devices`.
    index: HashMap<(String, String, String), usize>,
    /// Whether each device is named by an allocated claim.
    allocated: Vec<bool>,
    /// Devices published for one node (`nodeName`).
    by_node: HashMap<String, Vec<usize>>,
    /// Devices reachable by a node selector or from all nodes.
    elsewhere: Vec<usize>,
    /// Shared counters in total.
    counters: Counters,
    /// Shared counters left after the allocated devices' consumption, computed once after
    /// the claims are read.
    left: OnceLock<Counters>,
    classes: Vec<DeviceClass>,
    /// The DeviceTaintRules applied, in name order.
    rules: Vec<(String, DeviceTaint, Vec<usize>)>,
    /// Compiled selectors, by expression.
    selectors: cel::SelectorCache,
    /// Each expression's answer per device, computed once: a class's selectors are asked
    /// of the same devices by every pod and every node.
    answers: std::sync::Mutex<HashMap<String, Vec<Option<SelectorAnswer>>>>,
    /// Per expression, why placekit cannot evaluate it on some device (`None`: it can).
    unsupported: std::sync::Mutex<HashMap<String, Option<String>>>,
}

type SelectorAnswer = Result<bool, cel::SelectorError>;

/// One driver's devices usable from a node that the same device classes select (whole GPUs
/// apart from MIG devices when the classes tell them apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverDevices {
    pub driver: String,
    /// The device classes whose selectors match these devices, by name; empty when none
    /// does (or none can be evaluated).
    pub classes: Vec<String>,
    pub pools: Vec<String>,
    pub total: usize,
    pub allocated: usize,
    /// Not allocated, not kept off by a taint, and not blocked by shared counters other
    /// allocations consumed.
    pub free: usize,
    /// Not allocated, but kept off by a taint (a DeviceTaintRule's, or the driver's).
    pub tainted: usize,
    /// Some devices consume shared counters (partitions of one physical device).
    pub partitionable: bool,
    /// Some devices are accelerators: false for a driver that publishes only what
    /// [`is_accelerator`] says is not one (ComputeDomain channels and daemons).
    pub accelerators: bool,
}

/// The NVIDIA DRA driver's ComputeDomain driver: its devices are IMEX channels and the
/// domain's daemon slot, which pods of a multi-node NVLink job claim beside their GPUs.
pub const COMPUTE_DOMAIN_DRIVER: &str = "compute-domain.nvidia.com";

/// Whether a published device is an accelerator. The ComputeDomain driver's devices carry
/// `type: channel` or `type: daemon`: claimable, counted for claims, but not GPUs, so
/// `status` keeps them out of the accelerators and shows them apart.
pub fn is_accelerator(driver: &str, attributes: &BTreeMap<String, serde_json::Value>) -> bool {
    if driver != COMPUTE_DOMAIN_DRIVER {
        return true;
    }
    let kind = attributes
        .get("type")
        .or_else(|| attributes.get(&format!("{COMPUTE_DOMAIN_DRIVER}/type")))
        .and_then(|v| v.get("string"))
        .and_then(serde_json::Value::as_str);
    !matches!(kind, Some("channel" | "daemon"))
}

impl DraInventory {
    /// Builds the inventory from every ResourceSlice, keeping only the newest generation of
    /// each pool (the scheduler ignores slices of older generations).
    pub fn new(slices: Vec<ResourceSlice>, classes: Vec<DeviceClass>) -> Self {
        let mut newest: BTreeMap<(String, String), i64> = BTreeMap::new();
        for s in &slices {
            let key = (s.spec.driver.clone(), s.spec.pool.name.clone());
            let g = newest.entry(key).or_insert(s.spec.pool.generation);
            *g = (*g).max(s.spec.pool.generation);
        }
        // A pool whose newest generation has fewer slices than it says is incomplete: the
        // scheduler allocates nothing from it (a driver mid-way through publishing).
        let mut seen: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
        for s in &slices {
            let key = (s.spec.driver.clone(), s.spec.pool.name.clone());
            if newest.get(&key) == Some(&s.spec.pool.generation) {
                let e = seen.entry(key).or_default();
                e.0 += 1;
                e.1 = e.1.max(s.spec.pool.resource_slice_count);
            }
        }
        for (key, (slices_seen, count)) in seen {
            if slices_seen < count {
                newest.remove(&key);
            }
        }
        let mut inventory = DraInventory {
            classes,
            ..Default::default()
        };
        for s in slices {
            let key = (s.spec.driver.clone(), s.spec.pool.name.clone());
            if newest.get(&key) != Some(&s.spec.pool.generation) {
                continue;
            }
            inventory.add_slice(s);
        }
        inventory
    }

    /// Adds one slice (of the newest generation of its pool).
    fn add_slice(&mut self, s: ResourceSlice) {
        let slice_reach = if let Some(n) = s.spec.node_name.filter(|n| !n.is_empty()) {
            Some(Reach::Node(n))
        } else if let Some(sel) = s.spec.node_selector {
            Some(Reach::Selector(sel))
        } else if s.spec.all_nodes == Some(true) {
            Some(Reach::AllNodes)
        } else {
            None
        };
        let pool_key = (s.spec.driver.clone(), s.spec.pool.name.clone());
        for set in s.spec.shared_counters {
            let entry = self
                .counters
                .entry(pool_key.clone())
                .or_default()
                .entry(set.name)
                .or_default();
            for (name, v) in set.counters {
                entry.insert(name, parse_quantity_milli(&v.value).unwrap_or(0));
            }
        }
        for d in s.spec.devices {
            let reach = match &slice_reach {
                Some(r) => r.clone(),
                None => match (d.node_name, d.node_selector, d.all_nodes) {
                    (Some(n), _, _) if !n.is_empty() => Reach::Node(n),
                    (_, Some(sel), _) => Reach::Selector(sel),
                    (_, _, Some(true)) => Reach::AllNodes,
                    _ => continue,
                },
            };
            let i = self.devices.len();
            match &reach {
                Reach::Node(n) => self.by_node.entry(n.clone()).or_default().push(i),
                _ => self.elsewhere.push(i),
            }
            self.index.insert(
                (
                    s.spec.driver.clone(),
                    s.spec.pool.name.clone(),
                    d.name.clone(),
                ),
                i,
            );
            self.devices.push(KeptDevice {
                driver: s.spec.driver.clone(),
                pool: s.spec.pool.name.clone(),
                name: d.name,
                reach,
                shareable: d.allow_multiple_allocations == Some(true),
                accelerator: is_accelerator(&s.spec.driver, &d.attributes),
                attributes: d
                    .attributes
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), cel::AttributeValue::from_json(v)?)))
                    .collect(),
                capacity: d
                    .capacity
                    .iter()
                    .map(|(k, v)| (k.clone(), v.value.clone()))
                    .collect(),
                taints: d
                    .taints
                    .into_iter()
                    .filter(DeviceTaint::keeps_claims_off)
                    .map(|taint| KeptTaint { taint, rule: None })
                    .collect(),
                consumes: d
                    .consumes_counters
                    .into_iter()
                    .map(|c| {
                        (
                            c.counter_set,
                            c.counters
                                .into_iter()
                                .map(|(k, v)| (k, parse_quantity_milli(&v.value).unwrap_or(0)))
                                .collect(),
                        )
                    })
                    .collect(),
            });
            self.allocated.push(false);
        }
    }

    /// Puts the taints of DeviceTaintRules on the devices they select, as the scheduler
    /// does before it allocates (a rule whose effect is `None` only informs).
    pub fn apply_taint_rules(&mut self, mut rules: Vec<DeviceTaintRule>) {
        rules.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for rule in rules {
            let taint = rule.spec.taint;
            // Without a selector a rule matches no device (an empty one matches all).
            let Some(selector) = rule.spec.device_selector else {
                self.rules.push((rule.metadata.name, taint, Vec::new()));
                continue;
            };
            let named = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
            let selected: Vec<usize> = match (
                named(&selector.driver),
                named(&selector.pool),
                named(&selector.device),
            ) {
                (Some(driver), Some(pool), Some(device)) => self
                    .index
                    .get(&(driver, pool, device))
                    .copied()
                    .into_iter()
                    .collect(),
                _ => (0..self.devices.len())
                    .filter(|&i| {
                        let d = &self.devices[i];
                        selector.selects(&d.driver, &d.pool, &d.name)
                    })
                    .collect(),
            };
            if taint.keeps_claims_off() {
                for &i in &selected {
                    self.devices[i].taints.push(KeptTaint {
                        taint: taint.clone(),
                        rule: Some(rule.metadata.name.clone()),
                    });
                }
            }
            self.rules.push((rule.metadata.name, taint, selected));
        }
    }

    /// What each DeviceTaintRule does, in name order (rules that select no published
    /// device included: a typo in a selector is worth seeing).
    pub fn taint_rule_effects(&self) -> Vec<TaintRuleEffect> {
        self.rules
            .iter()
            .map(|(rule, taint, selected)| TaintRuleEffect {
                rule: rule.clone(),
                taint: taint.clone(),
                devices: selected.len(),
                allocated: selected.iter().filter(|&&i| self.allocated[i]).count(),
            })
            .collect()
    }

    /// Records what an allocated claim uses (claims may be read page by page).
    pub fn add_claim(&mut self, claim: &ResourceClaim) {
        let Some(a) = &claim.status.allocation else {
            return;
        };
        for r in a
            .devices
            .results
            .iter()
            .filter(|r| r.admin_access != Some(true))
        {
            // A device of an older pool generation, or of a slice gone since, is not
            // counted: the scheduler does not offer it either.
            let key = (r.driver.clone(), r.pool.clone(), r.device.clone());
            if let Some(&i) = self.index.get(&key) {
                self.allocated[i] = true;
            }
        }
        self.left = OnceLock::new();
    }

    /// The device classes read with the slices.
    pub fn classes(&self) -> &[DeviceClass] {
        &self.classes
    }

    pub fn class(&self, name: &str) -> Option<&DeviceClass> {
        self.classes.iter().find(|c| c.metadata.name == name)
    }

    /// The class that serves extended resource `resource`, if any: of several, the newest
    /// (then the lowest name), as the scheduler picks it.
    pub fn class_serving(&self, resource: &str) -> Option<&DeviceClass> {
        self.classes
            .iter()
            .filter(|c| c.serves(resource))
            .min_by(|a, b| {
                b.metadata
                    .creation_timestamp
                    .cmp(&a.metadata.creation_timestamp)
                    .then_with(|| a.metadata.name.cmp(&b.metadata.name))
            })
    }

    /// Whether `expression` matches device `d` (by index), memoised.
    fn selector_matches(&self, expression: &str, d: usize) -> SelectorAnswer {
        let lock = || {
            self.answers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(Some(answer)) = lock()
            .get(expression)
            .and_then(|v: &Vec<Option<SelectorAnswer>>| v.get(d))
        {
            return answer.clone();
        }
        let answer = match self.selectors.get(expression).as_ref() {
            Ok(selector) => selector.matches(self.devices[d].facts()),
            Err(e) => Err(e.clone()),
        };
        let mut answers = lock();
        let row = answers
            .entry(expression.to_string())
            .or_insert_with(|| vec![None; self.devices.len()]);
        if let Some(slot) = row.get_mut(d) {
            *slot = Some(answer.clone());
        }
        answer
    }

    /// Why placekit cannot evaluate `expression` on some published device, if it cannot:
    /// it does not compile here, or calls a function placekit does not implement.
    pub fn selector_unsupported(&self, expression: &str) -> Option<String> {
        let known = self
            .unsupported
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(expression)
            .cloned();
        if let Some(known) = known {
            return known;
        }
        let why = self.first_unsupported(expression);
        self.unsupported
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(expression.to_string(), why.clone());
        why
    }

    fn first_unsupported(&self, expression: &str) -> Option<String> {
        (0..self.devices.len().max(1)).find_map(|d| {
            let answer = if self.devices.is_empty() {
                self.selectors
                    .get(expression)
                    .as_ref()
                    .as_ref()
                    .err()
                    .cloned()
                    .map(Err)
            } else {
                Some(self.selector_matches(expression, d))
            };
            match answer {
                Some(Err(e @ cel::SelectorError::Unsupported(_))) => Some(e.to_string()),
                _ => None,
            }
        })
    }

    /// Whether an allocated claim names the device.
    pub fn is_allocated(&self, id: &DeviceId) -> bool {
        self.index
            .get(&(id.driver.clone(), id.pool.clone(), id.device.clone()))
            .is_some_and(|&i| self.allocated[i])
    }

    /// Every device kept, in the order slices were read.
    pub fn devices(&self) -> &[KeptDevice] {
        &self.devices
    }

    /// Whether any device at all is published.
    pub fn has_devices(&self) -> bool {
        !self.devices.is_empty()
    }

    /// Counters left per (driver, pool) after the allocated devices' consumption.
    fn counters_left(&self) -> &Counters {
        self.left.get_or_init(|| {
            let mut left = self.counters.clone();
            for (d, _) in self
                .devices
                .iter()
                .zip(&self.allocated)
                .filter(|(d, allocated)| **allocated && !d.consumes.is_empty())
            {
                consume(&mut left, d);
            }
            left
        })
    }

    /// Per driver, the devices usable from `node`: total, allocated, and free now. Free
    /// devices are unallocated (or shareable), untainted, and — for partitions of one
    /// physical device — as many as the counters left can hold at once (smallest first).
    pub fn node_devices(&self, node: NodeFacts<'_>) -> Vec<DriverDevices> {
        self.summarize(self.reachable(node), &[])
    }

    /// The indices of the devices usable from `node`.
    fn reachable<'a>(&'a self, node: NodeFacts<'a>) -> impl Iterator<Item = usize> + 'a {
        self.by_node
            .get(node.name)
            .into_iter()
            .flatten()
            .copied()
            .chain(
                self.elsewhere
                    .iter()
                    .copied()
                    .filter(move |&i| self.devices[i].reach.admits(node)),
            )
    }

    /// Per driver, the devices usable from any of `nodes`, each counted once (a device a
    /// node selector or `allNodes` makes reachable from many nodes is still one device).
    pub fn devices_over<'a>(
        &self,
        nodes: impl IntoIterator<Item = NodeFacts<'a>>,
    ) -> Vec<DriverDevices> {
        let mut indices: Vec<usize> = nodes
            .into_iter()
            .flat_map(|n| self.reachable(n).collect::<Vec<_>>())
            .collect();
        indices.sort_unstable();
        indices.dedup();
        self.summarize(indices, &[])
    }

    /// Per driver, the devices among `here`; a device counts as free only if `tolerations`
    /// tolerate each of its taints.
    fn summarize(
        &self,
        here: impl IntoIterator<Item = usize>,
        tolerations: &[DeviceToleration],
    ) -> Vec<DriverDevices> {
        let mut per_group: BTreeMap<(&str, Vec<String>), DriverDevices> = BTreeMap::new();
        let mut partitions: Vec<(usize, (&str, Vec<String>))> = Vec::new();
        for i in here {
            let d = &self.devices[i];
            let key = (d.driver.as_str(), self.classes_of(i));
            let e = per_group
                .entry(key.clone())
                .or_insert_with(|| DriverDevices {
                    driver: d.driver.clone(),
                    classes: key.1.clone(),
                    pools: Vec::new(),
                    total: 0,
                    allocated: 0,
                    free: 0,
                    tainted: 0,
                    partitionable: false,
                    accelerators: false,
                });
            if !e.pools.contains(&d.pool) {
                e.pools.push(d.pool.clone());
            }
            e.total += 1;
            e.partitionable |= !d.consumes.is_empty();
            e.accelerators |= d.accelerator;
            if self.allocated[i] {
                e.allocated += 1;
            }
            if self.allocated[i] && !d.shareable {
                continue;
            }
            if !tolerated(&d.taints, tolerations) {
                e.tainted += 1;
                continue;
            }
            if d.consumes.is_empty() {
                e.free += 1;
            } else {
                partitions.push((i, key));
            }
        }
        if !partitions.is_empty() {
            // Partitions exclude each other through their pool's counters: count how many
            // fit together, smallest first.
            let mut left = self.counters_left().clone();
            partitions.sort_by_key(|(i, _)| {
                self.devices[*i]
                    .consumes
                    .values()
                    .flat_map(|c| c.values())
                    .sum::<i128>()
            });
            for (i, key) in partitions {
                let d = &self.devices[i];
                if fits_counters(&left, d) {
                    consume(&mut left, d);
                    if let Some(e) = per_group.get_mut(&key) {
                        e.free += 1;
                    }
                }
            }
        }
        per_group
            .into_values()
            .map(|mut d| {
                d.pools.sort();
                d
            })
            .collect()
    }

    /// The extended resources DeviceClasses serve from devices usable on `node`: (resource,
    /// devices in total, devices allocated), for rules that count extended resources the
    /// way NodeResourcesFit does on nodes whose allocatable lacks them.
    pub fn served_extended(&self, node: NodeFacts<'_>) -> Vec<(String, usize, usize)> {
        let devices = self.node_devices(node);
        self.classes
            .iter()
            .filter_map(|c| {
                let resource = c.spec.extended_resource_name.clone()?;
                let mine = devices
                    .iter()
                    .filter(|d| d.classes.contains(&c.metadata.name));
                let (total, free) = mine.fold((0, 0), |(t, f), d| (t + d.total, f + d.free));
                (total > 0).then(|| (resource, total, total - free))
            })
            .collect()
    }

    /// How many devices of `class` are free on `node` now, or `None` when placekit cannot
    /// evaluate the class's selectors (or the class does not exist).
    pub fn free_for_class(&self, class: &str, node: NodeFacts<'_>) -> Option<usize> {
        let c = self.class(class)?;
        if c.spec
            .selectors
            .iter()
            .filter_map(|s| s.cel.as_ref())
            .any(|s| self.selector_unsupported(&s.expression).is_some())
        {
            return None;
        }
        Some(
            self.node_devices(node)
                .iter()
                .filter(|d| d.classes.iter().any(|n| n == class))
                .map(|d| d.free)
                .sum(),
        )
    }

    /// The classes whose every selector matches device `i` (a selector that errors or that
    /// placekit cannot evaluate does not match).
    fn classes_of(&self, i: usize) -> Vec<String> {
        self.classes
            .iter()
            .filter(|c| {
                c.spec.selectors.iter().all(|s| {
                    s.cel.as_ref().is_some_and(|cel| {
                        matches!(self.selector_matches(&cel.expression, i), Ok(true))
                    })
                })
            })
            .map(|c| c.metadata.name.clone())
            .collect()
    }

    /// Whether `driver` publishes partitionable devices (their allocation depends on which
    /// partitions the scheduler picks: placekit does not predict it).
    pub fn is_partitionable(&self, driver: &str) -> bool {
        self.devices
            .iter()
            .any(|d| d.driver == driver && !d.consumes.is_empty())
    }
}

/// What `status` says of a DeviceTaintRule: the devices it keeps from new claims (counted
/// as not free), the pods NoExecute evicts, or a selector that matches nothing. `None` for
/// a rule whose effect only informs.
pub fn taint_rule_note(effect: &TaintRuleEffect) -> Option<String> {
    if !effect.taint.keeps_claims_off() {
        return None;
    }
    let TaintRuleEffect {
        rule,
        taint,
        devices,
        allocated,
    } = effect;
    if *devices == 0 {
        return Some(format!(
            "DeviceTaintRule {rule} ({taint}) selects no published device: check its deviceSelector"
        ));
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut note = format!(
        "DeviceTaintRule {rule} ({taint}) taints {devices} device{}: not counted as free, only claims that tolerate it get them",
        plural(*devices)
    );
    if taint.effect == "NoExecute" && *allocated > 0 {
        note.push_str(&format!(
            "; {allocated} of them allocated: the pods using them are evicted unless their claims tolerate it"
        ));
    }
    Some(note)
}

/// Whether `tolerations` tolerate every taint in `taints`.
fn tolerated(taints: &[KeptTaint], tolerations: &[DeviceToleration]) -> bool {
    taints
        .iter()
        .all(|t| tolerations.iter().any(|tol| tol.tolerates(&t.taint)))
}

fn consume(left: &mut Counters, d: &KeptDevice) {
    let Some(sets) = left.get_mut(&(d.driver.clone(), d.pool.clone())) else {
        return;
    };
    for (set, counters) in &d.consumes {
        if let Some(available) = sets.get_mut(set) {
            for (name, q) in counters {
                if let Some(a) = available.get_mut(name) {
                    *a -= q;
                }
            }
        }
    }
}

fn fits_counters(left: &Counters, d: &KeptDevice) -> bool {
    let Some(sets) = left.get(&(d.driver.clone(), d.pool.clone())) else {
        return true;
    };
    d.consumes.iter().all(|(set, counters)| {
        counters.iter().all(|(name, q)| {
            sets.get(set)
                .and_then(|s| s.get(name))
                .is_none_or(|available| *available >= *q)
        })
    })
}

/// What one node must offer for a pod's claims and DRA-backed extended resources.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimNeeds {
    /// Allocated claims and the nodes their allocation is available on.
    allocated: Vec<(String, Option<NodeSelector>)>,
    /// Claims still to allocate, in the pod's order.
    pending: Vec<PendingClaim>,
    /// Extended resources a DeviceClass serves: (resource, class, count). They need DRA
    /// devices on a node whose allocatable lacks the resource.
    extended: Vec<(String, String, i64)>,
    /// Claims the pod names that do not exist (yet).
    pub missing: Vec<MissingClaim>,
    /// Claims or requests placekit cannot model, with why.
    pub unmodelled: Vec<String>,
}

/// A claim still to allocate: what the allocator reads of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PendingClaim {
    name: String,
    requests: Vec<DeviceRequest>,
    constraints: Vec<crate::model::dra::DeviceConstraint>,
}

/// A claim the pod names that placekit did not find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingClaim {
    /// The pod's name for it (`spec.resourceClaims[].name`).
    pub name: String,
    pub why: ClaimAbsence,
}

/// Why a pod's claim was not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimAbsence {
    /// The ResourceClaim `namespace/object` is not in the list read.
    NotFound { namespace: String, object: String },
    /// Its template has not been turned into a ResourceClaim yet.
    NotGenerated { template: String },
    /// The pod's entry names neither a claim nor a template.
    Unnamed,
}

impl MissingClaim {
    /// Whether the claim may exist unseen because placekit may not list ResourceClaims:
    /// then the scheduler, not placekit, knows whether it can be allocated.
    pub fn unreadable_text(&self) -> String {
        match &self.why {
            ClaimAbsence::NotFound { namespace, object } => format!(
                "{}: ResourceClaim {namespace}/{object} could not be read (placekit may not list ResourceClaims)",
                self.name
            ),
            _ => format!("{self} (placekit may not list ResourceClaims)"),
        }
    }
}

impl std::fmt::Display for MissingClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.name)?;
        match &self.why {
            ClaimAbsence::NotFound { namespace, object } => {
                write!(f, "ResourceClaim {namespace}/{object} does not exist")
            }
            ClaimAbsence::NotGenerated { template } => write!(
                f,
                "no ResourceClaim has been generated from template {template} yet (the resourceclaim controller of kube-controller-manager creates it)"
            ),
            ClaimAbsence::Unnamed => f.write_str("names no claim"),
        }
    }
}

/// Why DRA's filter rejects a node, in the scheduler's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraFailure {
    /// An allocated claim's devices are not reachable from this node.
    NotAvailable { claim: String },
    /// The devices the claims need are not free here.
    CannotAllocate { detail: String },
}

/// One claim of a pod, as why-pending reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimState {
    /// The pod's name for it (`spec.resourceClaims[].name`), or the extended resource.
    pub name: String,
    /// The ResourceClaim object, when it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    /// `allocated`, `pending` or `missing`.
    pub state: &'static str,
    /// Per request: "2 x gpu.example.com".
    pub requests: Vec<String>,
}

impl ClaimNeeds {
    /// The needs of a pod in `namespace` with `claim_refs` (its `spec.resourceClaims`),
    /// `statuses` (its `status.resourceClaimStatuses`), extended-resource `requests`, over
    /// the cluster's `claims` and device classes.
    ///
    /// Long on purpose: one pass over the pod's claim references (named, templated,
    /// DRA-served extended resources) in the allocator's order.
    pub fn of(
        namespace: &str,
        claim_refs: &[PodClaimRef],
        statuses: &[PodClaimStatus],
        requests: &BTreeMap<String, i128>,
        claims: &[ResourceClaim],
        inventory: &DraInventory,
    ) -> (Self, Vec<ClaimState>) {
        let mut needs = ClaimNeeds::default();
        let mut states = Vec::new();
        for r in claim_refs {
            // A template whose status entry names no claim needs none (the controller
            // decided so); the scheduler skips it.
            if r.resource_claim_name.is_none()
                && statuses
                    .iter()
                    .any(|s| s.name == r.name && s.resource_claim_name.is_none())
            {
                continue;
            }
            let object = r.resource_claim_name.clone().or_else(|| {
                statuses
                    .iter()
                    .find(|s| s.name == r.name)
                    .and_then(|s| s.resource_claim_name.clone())
            });
            let found = object.as_deref().and_then(|o| {
                claims
                    .iter()
                    .find(|c| c.metadata.namespace == namespace && c.metadata.name == o)
            });
            let Some(claim) = found else {
                let why = match (&object, &r.resource_claim_template_name) {
                    (Some(o), _) => ClaimAbsence::NotFound {
                        namespace: namespace.to_string(),
                        object: o.clone(),
                    },
                    (None, Some(t)) => ClaimAbsence::NotGenerated {
                        template: t.clone(),
                    },
                    (None, None) => ClaimAbsence::Unnamed,
                };
                needs.missing.push(MissingClaim {
                    name: r.name.clone(),
                    why,
                });
                states.push(ClaimState {
                    name: r.name.clone(),
                    claim: object,
                    state: "missing",
                    requests: Vec::new(),
                });
                continue;
            };
            let described: Vec<String> = claim
                .spec
                .devices
                .requests
                .iter()
                .map(describe_request)
                .collect();
            if let Some(a) = &claim.status.allocation {
                needs
                    .allocated
                    .push((claim.metadata.name.clone(), a.node_selector.clone()));
                states.push(ClaimState {
                    name: r.name.clone(),
                    claim: Some(claim.metadata.name.clone()),
                    state: "allocated",
                    requests: described,
                });
                continue;
            }
            states.push(ClaimState {
                name: r.name.clone(),
                claim: Some(claim.metadata.name.clone()),
                state: "pending",
                requests: described,
            });
            needs.pending.push(PendingClaim {
                name: claim.metadata.name.clone(),
                requests: claim.spec.devices.requests.clone(),
                constraints: claim.spec.devices.constraints.clone(),
            });
        }
        for (resource, milli) in requests {
            if let Some(class) = inventory.class_serving(resource) {
                let count = (milli + 999) / 1000;
                needs
                    .extended
                    .push((resource.clone(), class.metadata.name.clone(), count as i64));
                states.push(ClaimState {
                    name: resource.clone(),
                    claim: None,
                    state: "extended-resource",
                    requests: vec![format!("{count} x {}", class.metadata.name)],
                });
            }
        }
        let mut unmodelled = Vec::new();
        for claim in &needs.pending {
            for req in &claim.requests {
                let alternatives: Vec<&ExactDeviceRequest> = match &req.exactly {
                    Some(e) => vec![e],
                    None => req.first_available.iter().collect(),
                };
                for alt in alternatives {
                    let what = format!("claim {}, request {}", claim.name, req.name);
                    if alt.capacity.is_some() {
                        unmodelled.push(format!("{what}: consumable capacity of shared devices"));
                    }
                    let class_selectors = inventory
                        .class(&alt.device_class_name)
                        .map(|c| c.spec.selectors.as_slice())
                        .unwrap_or_default();
                    for (whose, selector) in class_selectors
                        .iter()
                        .map(|s| (format!("device class {}", alt.device_class_name), s))
                        .chain(alt.selectors.iter().map(|s| (what.clone(), s)))
                    {
                        if let Some(why) = selector
                            .cel
                            .as_ref()
                            .and_then(|c| inventory.selector_unsupported(&c.expression))
                        {
                            unmodelled.push(format!("{whose}: {why}"));
                        }
                    }
                }
            }
        }
        for (resource, class, _) in &needs.extended {
            match inventory.class(class) {
                None => unmodelled.push(format!(
                    "extended resource {resource}: device class {class} does not exist"
                )),
                Some(c) => {
                    for selector in c.spec.selectors.iter().filter_map(|s| s.cel.as_ref()) {
                        if let Some(why) = inventory.selector_unsupported(&selector.expression) {
                            unmodelled.push(format!("device class {class}: {why}"));
                        }
                    }
                }
            }
        }
        needs.unmodelled.extend(unmodelled);
        needs.unmodelled.sort();
        needs.unmodelled.dedup();
        (needs, states)
    }

    /// Whether the pod has anything for DRA's filter to do.
    pub fn is_empty(&self) -> bool {
        self.allocated.is_empty()
            && self.pending.is_empty()
            && self.extended.is_empty()
            && self.missing.is_empty()
    }

    /// Extended resources DRA serves on a node whose allocatable lacks them: NodeResourcesFit
    /// leaves them to DRA's filter there.
    pub fn delegated(&self, resource: &str, node_allocatable: Option<i128>) -> bool {
        node_allocatable.unwrap_or(0) == 0 && self.extended.iter().any(|(r, _, _)| r == resource)
    }

    /// DRA's filter on one node: the claims still to allocate (and the extended resources
    /// DRA serves here) through the allocator, then whether the claims allocated already are
    /// available from this node.
    pub fn check(
        &self,
        node: NodeFacts<'_>,
        node_allocatable: &BTreeMap<String, i128>,
        inventory: &DraInventory,
    ) -> Result<(), DraFailure> {
        // The scheduler allocates extended resources DRA serves on a node whose allocatable
        // lacks them as one more claim, a request per resource.
        let extended: Vec<DeviceRequest> = self
            .extended
            .iter()
            .filter(|(r, _, _)| node_allocatable.get(r).copied().unwrap_or(0) == 0)
            .map(|(resource, class, count)| DeviceRequest {
                name: resource.clone(),
                exactly: Some(ExactDeviceRequest {
                    device_class_name: class.clone(),
                    count: Some(*count),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        let mut claims: Vec<allocate::ClaimSpec<'_>> = self
            .pending
            .iter()
            .map(|c| allocate::ClaimSpec {
                name: &c.name,
                requests: &c.requests,
                constraints: &c.constraints,
            })
            .collect();
        if !extended.is_empty() {
            claims.push(allocate::ClaimSpec {
                name: "(extended resources)",
                requests: &extended,
                constraints: &[],
            });
        }
        if !claims.is_empty() {
            match allocate::allocate(inventory, node, &claims) {
                allocate::Allocation::Fits => {}
                allocate::Allocation::Short(detail) | allocate::Allocation::Failed(detail) => {
                    return Err(DraFailure::CannotAllocate { detail });
                }
            }
        }
        for (claim, selector) in &self.allocated {
            if let Some(sel) = selector
                && !terms_match(&sel.node_selector_terms, node)
            {
                return Err(DraFailure::NotAvailable {
                    claim: claim.clone(),
                });
            }
        }
        Ok(())
    }
}

fn describe_request(r: &DeviceRequest) -> String {
    match (&r.exactly, r.first_available.as_slice()) {
        (Some(e), _) if e.wants_all() => format!("{}: all of {}", r.name, e.device_class_name),
        (Some(e), _) => format!("{}: {} x {}", r.name, e.wanted(), e.device_class_name),
        (None, alternatives) => format!(
            "{}: first available of {}",
            r.name,
            alternatives
                .iter()
                .map(|a| format!("{} x {}", a.wanted(), a.device_class_name))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests;
