//! The structured-parameters allocator as kube-scheduler runs it for one node: the claims a
//! pod still needs allocated, request after request, device after device, with backtracking,
//! until every request has its devices or no combination is left.
//!
//! It follows `k8s.io/dynamic-resource-allocation/structured` (v1.37):
//!
//! - a device is a candidate when it is not in use (an allocated claim names it, or this
//!   attempt took it; shared and admin-access devices excepted), the class's selectors and
//!   then the request's match it, its taints are tolerated, the shared counters of its pool
//!   still hold what it consumes, and the claim's `matchAttribute`/`distinctAttribute`
//!   constraints still hold with it;
//! - `firstAvailable` tries its alternatives in order, and the first that lets the rest of
//!   the claims be allocated wins;
//! - `allocationMode: All` wants every device of the node its selectors match, in use or
//!   not: one unusable device and the request cannot be met;
//! - the search is exhaustive (combinations, not permutations, within a request), so whether
//!   a node fits does not depend on the order devices are tried in; only which CEL runtime
//!   error is met first does, and such an error stops allocation on the node, as the
//!   scheduler's does.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use crate::model::dra::{
    DeviceClass, DeviceConstraint, DeviceRequest, DeviceSelector, DeviceToleration,
    ExactDeviceRequest,
};
use crate::scheduling::NodeFacts;

use super::cel::{AttributeValue, SelectorError};
use super::{DraInventory, tolerated};

/// How many search steps a node gets: the scheduler bounds its own search by the filter's
/// timeout; an adversarial claim cannot make placekit search forever either.
const STEP_LIMIT: usize = 200_000;

/// One claim to allocate: its name (for messages), requests and constraints.
#[derive(Debug, Clone, Copy)]
pub struct ClaimSpec<'a> {
    pub name: &'a str,
    pub requests: &'a [DeviceRequest],
    pub constraints: &'a [DeviceConstraint],
}

/// What the allocator concludes on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allocation {
    /// Every claim can be allocated here.
    Fits,
    /// No combination of devices here satisfies the claims; why, in the scheduler's terms.
    Short(String),
    /// Allocation stops with an error (a CEL runtime error, a constraint `All` cannot meet,
    /// a class that does not exist): the scheduler reports it and allocates nothing here.
    Failed(String),
}

/// A request, or one alternative of a `firstAvailable` request, ready for the search.
#[derive(Debug)]
struct Wanted<'a> {
    claim: usize,
    /// The request's name and, for an alternative, the alternative's.
    base: &'a str,
    sub: Option<&'a str>,
    class: &'a DeviceClass,
    selectors: &'a [DeviceSelector],
    /// `None`: every matching device (`allocationMode: All`).
    count: Option<usize>,
    admin: bool,
    tolerations: &'a [DeviceToleration],
    /// With `All`: the matching devices of the node, found before the search.
    all_devices: Vec<usize>,
}

impl Wanted<'_> {
    fn needed(&self) -> usize {
        self.count.unwrap_or(self.all_devices.len())
    }
}

#[derive(Debug)]
enum Slot<'a> {
    Exactly(Wanted<'a>),
    FirstAvailable(Vec<Wanted<'a>>),
}

#[derive(Debug)]
struct Constraint<'a> {
    requests: &'a [String],
    attribute: &'a str,
    distinct: bool,
    values: Vec<AttributeValue>,
}

impl Constraint<'_> {
    fn applies(&self, base: &str, sub: Option<&str>) -> bool {
        self.requests.is_empty()
            || self.requests.iter().any(|r| r == base)
            || sub.is_some_and(|s| self.requests.iter().any(|r| *r == format!("{base}/{s}")))
    }
}

/// Why the search stopped without an answer of fits or not.
enum Stop {
    Failed(String),
}

/// What one tentative allocation changed, to undo on backtracking.
struct Undo {
    device: usize,
    counters: bool,
    constraints: Vec<usize>,
}

struct Search<'a> {
    inventory: &'a DraInventory,
    /// The node's devices, in the order they are tried.
    devices: Vec<usize>,
    /// Per claim, its requests ready for the search; fixed once prepared (shared so that a
    /// request can be read while the search state changes).
    slots: Rc<Vec<Vec<Slot<'a>>>>,
    claims: &'a [ClaimSpec<'a>],
    constraints: Vec<Vec<Constraint<'a>>>,
    /// Devices taken by this attempt: by which claims, with admin access or not.
    taking: HashMap<usize, Vec<(usize, bool)>>,
    /// Counters consumed by this attempt, per device's pool: (driver, pool) -> set -> counter.
    consumed: HashMap<(String, String), BTreeMap<String, BTreeMap<String, i128>>>,
    steps: usize,
}

/// Allocates `claims` on `node` from `inventory`'s devices (each claim's requests in order,
/// then the next claim), as the scheduler's allocator does.
pub fn allocate<'a>(
    inventory: &'a DraInventory,
    node: NodeFacts<'_>,
    claims: &'a [ClaimSpec<'a>],
) -> Allocation {
    let devices: Vec<usize> = inventory.reachable(node).collect();
    let mut search = Search {
        inventory,
        devices,
        slots: Rc::new(Vec::new()),
        claims,
        constraints: Vec::new(),
        taking: HashMap::new(),
        consumed: HashMap::new(),
        steps: 0,
    };
    if let Err(Stop::Failed(e)) = search.prepare() {
        return Allocation::Failed(e);
    }
    match search.one(0, 0, None, 0, 0, false) {
        Ok(true) => Allocation::Fits,
        Ok(false) => Allocation::Short(search.why_short()),
        Err(Stop::Failed(e)) => Allocation::Failed(e),
    }
}

/// The request at (claim, request, alternative).
fn wanted_at<'s, 'a>(
    slots: &'s [Vec<Slot<'a>>],
    claim: usize,
    request: usize,
    sub: Option<usize>,
) -> &'s Wanted<'a> {
    match (&slots[claim][request], sub) {
        (Slot::Exactly(w), _) => w,
        (Slot::FirstAvailable(alternatives), Some(s)) => &alternatives[s],
        (Slot::FirstAvailable(alternatives), None) => &alternatives[0],
    }
}

impl<'a> Search<'a> {
    /// Resolves classes, builds each claim's slots and constraints, and finds the devices of
    /// `All` requests (selectors evaluated there up front, as the scheduler does).
    fn prepare(&mut self) -> Result<(), Stop> {
        let mut all_slots = Vec::new();
        for (c, claim) in self.claims.iter().enumerate() {
            let mut slots = Vec::new();
            for request in claim.requests {
                let slot = match (&request.exactly, request.first_available.as_slice()) {
                    (Some(exact), _) => {
                        Slot::Exactly(self.wanted(c, claim, &request.name, None, exact)?)
                    }
                    (None, alternatives) if !alternatives.is_empty() => Slot::FirstAvailable(
                        alternatives
                            .iter()
                            .map(|alt| self.wanted(c, claim, &request.name, Some(&alt.name), alt))
                            .collect::<Result<_, _>>()?,
                    ),
                    (None, _) => continue,
                };
                slots.push(slot);
            }
            all_slots.push(slots);
            self.constraints.push(
                claim
                    .constraints
                    .iter()
                    .filter_map(|k| {
                        let (attribute, distinct) =
                            match (&k.match_attribute, &k.distinct_attribute) {
                                (Some(a), _) => (a.as_str(), false),
                                (None, Some(a)) => (a.as_str(), true),
                                (None, None) => return None,
                            };
                        Some(Constraint {
                            requests: &k.requests,
                            attribute,
                            distinct,
                            values: Vec::new(),
                        })
                    })
                    .collect(),
            );
        }
        self.slots = Rc::new(all_slots);
        Ok(())
    }

    fn wanted(
        &self,
        claim: usize,
        spec: &ClaimSpec<'a>,
        base: &'a str,
        sub: Option<&'a str>,
        exact: &'a ExactDeviceRequest,
    ) -> Result<Wanted<'a>, Stop> {
        let name = match sub {
            Some(s) => format!("{base}/{s}"),
            None => base.to_string(),
        };
        let Some(class) = self.inventory.class(&exact.device_class_name) else {
            return Err(Stop::Failed(format!(
                "claim {}, request {name}: device class {} does not exist",
                spec.name, exact.device_class_name
            )));
        };
        let mut wanted = Wanted {
            claim,
            base,
            sub,
            class,
            selectors: &exact.selectors,
            count: (!exact.wants_all())
                .then(|| usize::try_from(exact.wanted().max(0)).unwrap_or(usize::MAX)),
            admin: exact.admin_access == Some(true),
            tolerations: &exact.tolerations,
            all_devices: Vec::new(),
        };
        if wanted.count.is_none() {
            let mut all = Vec::new();
            for &d in &self.devices {
                if self.matches(&wanted, d)? {
                    all.push(d);
                }
            }
            wanted.all_devices = all;
        }
        Ok(wanted)
    }

    /// Whether the class's selectors and then the request's match device `d`.
    fn matches(&self, wanted: &Wanted<'_>, d: usize) -> Result<bool, Stop> {
        let claim = self.claims[wanted.claim].name;
        let device = &self.inventory.devices[d];
        let id = || format!("{}/{}/{}", device.driver, device.pool, device.name);
        let class_selectors = wanted.class.spec.selectors.iter().map(|s| (true, s));
        let request_selectors = wanted.selectors.iter().map(|s| (false, s));
        let mut index = 0usize;
        let mut last_from_class = true;
        for (from_class, selector) in class_selectors.chain(request_selectors) {
            if from_class != last_from_class {
                index = 0;
                last_from_class = from_class;
            }
            let Some(cel) = &selector.cel else {
                return Err(Stop::Failed(format!(
                    "claim {claim}: selector #{index}: CEL expression empty (unsupported selector type?)"
                )));
            };
            let whose = if from_class {
                format!("class {}", wanted.class.metadata.name)
            } else {
                format!("claim {claim}")
            };
            match self.inventory.selector_matches(&cel.expression, d) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(SelectorError::Runtime(e)) => {
                    return Err(Stop::Failed(format!(
                        "{whose}: selector #{index} on device {}: CEL runtime error: {e}",
                        id()
                    )));
                }
                Err(e @ SelectorError::Unsupported(_)) => {
                    return Err(Stop::Failed(format!("{whose}: selector #{index}: {e}")));
                }
            }
            index += 1;
        }
        Ok(true)
    }

    /// Whether `d` is taken, by an allocated claim or by this attempt (shared devices never
    /// are; admin access takes nothing from others).
    fn in_use(&self, d: usize) -> bool {
        let device = &self.inventory.devices[d];
        !device.shareable
            && (self.inventory.allocated[d]
                || self
                    .taking
                    .get(&d)
                    .is_some_and(|t| t.iter().any(|(_, admin)| !admin)))
    }

    fn taken_by_claim(&self, d: usize, claim: usize) -> bool {
        self.taking
            .get(&d)
            .is_some_and(|t| t.iter().any(|(c, _)| *c == claim))
    }

    fn counters_fit(&self, d: usize) -> bool {
        let device = &self.inventory.devices[d];
        if device.consumes.is_empty() {
            return true;
        }
        let key = (device.driver.clone(), device.pool.clone());
        let Some(sets) = self.inventory.counters_left().get(&key) else {
            return true;
        };
        let consumed = self.consumed.get(&key);
        device.consumes.iter().all(|(set, counters)| {
            counters.iter().all(|(name, q)| {
                let used = consumed
                    .and_then(|c| c.get(set))
                    .and_then(|c| c.get(name))
                    .copied()
                    .unwrap_or(0);
                sets.get(set)
                    .and_then(|s| s.get(name))
                    .is_none_or(|available| *available - used >= *q)
            })
        })
    }

    fn consume(&mut self, d: usize, sign: i128) {
        let device = &self.inventory.devices[d];
        let entry = self
            .consumed
            .entry((device.driver.clone(), device.pool.clone()))
            .or_default();
        for (set, counters) in &device.consumes {
            let set = entry.entry(set.clone()).or_default();
            for (name, q) in counters {
                *set.entry(name.clone()).or_default() += sign * q;
            }
        }
    }

    /// Takes `d` for the request `wanted` if it can be: not in use, counters left, taints
    /// tolerated, constraints kept. `must` (an `All` request): a constraint it would break
    /// is an error, not a skip.
    fn take(&mut self, wanted: &Wanted<'_>, d: usize, must: bool) -> Result<Option<Undo>, Stop> {
        let device = &self.inventory.devices[d];
        if wanted.admin && !device.shareable && self.taken_by_claim(d, wanted.claim) {
            return Ok(None);
        }
        if !wanted.admin && self.in_use(d) {
            return Ok(None);
        }
        let counters = !device.consumes.is_empty();
        if counters && !self.counters_fit(d) {
            return Ok(None);
        }
        if !tolerated(&device.taints, wanted.tolerations) {
            return Ok(None);
        }
        let mut added = Vec::new();
        for (i, k) in self.constraints[wanted.claim].iter_mut().enumerate() {
            if !k.applies(wanted.base, wanted.sub) {
                continue;
            }
            let value = device.attribute(k.attribute);
            let ok = match value {
                None => false,
                Some(v) if k.distinct => !k.values.iter().any(|x| x.same_as(v)),
                Some(v) => k.values.first().is_none_or(|x| x.same_as(v)),
            };
            if !ok {
                for &j in &added {
                    let k: &mut Constraint<'_> = &mut self.constraints[wanted.claim][j];
                    k.values.pop();
                }
                if must {
                    return Err(Stop::Failed(format!(
                        "claim {}, request {}: cannot add device {}/{}/{} because a claim constraint would not be satisfied",
                        self.claims[wanted.claim].name,
                        wanted.base,
                        device.driver,
                        device.pool,
                        device.name
                    )));
                }
                return Ok(None);
            }
            if let Some(v) = value {
                k.values.push(v.clone());
            }
            added.push(i);
        }
        if counters {
            self.consume(d, 1);
        }
        self.taking
            .entry(d)
            .or_default()
            .push((wanted.claim, wanted.admin));
        Ok(Some(Undo {
            device: d,
            counters,
            constraints: added,
        }))
    }

    fn undo(&mut self, claim: usize, undo: Undo) {
        if undo.counters {
            self.consume(undo.device, -1);
        }
        if let Some(t) = self.taking.get_mut(&undo.device) {
            t.pop();
            if t.is_empty() {
                self.taking.remove(&undo.device);
            }
        }
        for j in undo.constraints {
            self.constraints[claim][j].values.pop();
        }
    }

    /// One more device for (claim, request, alternative), from position `start` on; then the
    /// next request, the next claim. `in_alternative`: already inside one alternative of a
    /// `firstAvailable` request.
    ///
    /// Long on purpose: the allocator's `allocateOne`, one recursion, kept in one piece so
    /// that it can be read beside it.
    fn one(
        &mut self,
        claim: usize,
        request: usize,
        sub: Option<usize>,
        device_index: usize,
        start: usize,
        in_alternative: bool,
    ) -> Result<bool, Stop> {
        self.steps += 1;
        if self.steps > STEP_LIMIT {
            return Err(Stop::Failed(format!(
                "placekit stopped searching after {STEP_LIMIT} device combinations (kube-scheduler gives up on a node when its filter times out)"
            )));
        }
        if claim >= self.slots.len() {
            return Ok(true);
        }
        if request >= self.slots[claim].len() {
            return self.one(claim + 1, 0, None, 0, 0, false);
        }
        if let Slot::FirstAvailable(alternatives) = &self.slots[claim][request]
            && !in_alternative
        {
            for s in 0..alternatives.len() {
                if self.one(claim, request, Some(s), 0, 0, true)? {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        let slots = Rc::clone(&self.slots);
        let wanted = wanted_at(&slots, claim, request, sub);
        let all = wanted.count.is_none();
        if all && wanted.all_devices.is_empty() {
            return Ok(false);
        }
        if device_index >= wanted.needed() {
            return self.one(claim, request + 1, None, 0, 0, false);
        }
        if all {
            // The `All` devices are fixed: try the next one and only that one.
            let d = wanted.all_devices[device_index];
            let Some(undo) = self.take(wanted, d, true)? else {
                return Ok(false);
            };
            if self.one(claim, request, sub, device_index + 1, 0, in_alternative)? {
                return Ok(true);
            }
            self.undo(claim, undo);
            return Ok(false);
        }
        for position in start..self.devices.len() {
            let d = self.devices[position];
            if !wanted.admin && self.in_use(d) {
                continue;
            }
            if !self.matches(wanted, d)? {
                continue;
            }
            let Some(undo) = self.take(wanted, d, false)? else {
                continue;
            };
            if self.one(
                claim,
                request,
                sub,
                device_index + 1,
                position + 1,
                in_alternative,
            )? {
                return Ok(true);
            }
            self.undo(claim, undo);
        }
        Ok(false)
    }

    /// Why no combination fits, in the terms of the first request that cannot be met on
    /// its own, else of a class asked for more than it has free, else of a constraint.
    fn why_short(&self) -> String {
        let mut per_class: BTreeMap<&str, (usize, Vec<usize>)> = BTreeMap::new();
        for slots in self.slots.iter() {
            for slot in slots {
                let alternatives: Vec<&Wanted<'_>> = match slot {
                    Slot::Exactly(w) => vec![w],
                    Slot::FirstAvailable(alts) => alts.iter().collect(),
                };
                let phrases: Vec<(bool, String)> = alternatives
                    .iter()
                    .map(|w| {
                        let free = self.free_for(w);
                        let short = free.len() < w.needed()
                            || (w.count.is_none()
                                && (w.all_devices.is_empty() || free.len() < w.all_devices.len()));
                        (short, self.phrase(w, &free))
                    })
                    .collect();
                if phrases.iter().all(|(short, _)| *short) {
                    let text: Vec<String> = phrases.into_iter().map(|(_, p)| p).collect();
                    return format!("needs {}", text.join(", or "));
                }
                if let Slot::Exactly(w) = slot
                    && let Some(n) = w.count
                {
                    let e = per_class.entry(&w.class.metadata.name).or_default();
                    e.0 += n;
                    for d in self.free_for(w) {
                        if !e.1.contains(&d) {
                            e.1.push(d);
                        }
                    }
                }
            }
        }
        for (class, (needed, free)) in per_class {
            if free.len() < needed {
                return format!("needs {needed} of class {class}, {} free here", free.len());
            }
        }
        if let Some(k) = self.constraints.iter().flatten().next() {
            let kind = if k.distinct {
                "distinctAttribute"
            } else {
                "matchAttribute"
            };
            return format!(
                "no combination of the free devices satisfies {kind} {}",
                k.attribute
            );
        }
        "the free devices cannot all be allocated together (they share counters)".to_string()
    }

    /// The node's devices `w` could get on its own: matching, not in use, counters left,
    /// taints tolerated.
    fn free_for(&self, w: &Wanted<'_>) -> Vec<usize> {
        self.devices
            .iter()
            .copied()
            .filter(|&d| {
                (w.admin || !self.in_use(d))
                    && matches!(self.matches(w, d), Ok(true))
                    && self.counters_fit(d)
                    && tolerated(&self.inventory.devices[d].taints, w.tolerations)
            })
            .collect()
    }

    /// "2 of class gpu.nvidia.com, 1 free here; tainted and not tolerated: …".
    fn phrase(&self, w: &Wanted<'_>, free: &[usize]) -> String {
        let class = &w.class.metadata.name;
        let selectors = if w.selectors.is_empty() {
            String::new()
        } else {
            format!(" matching claim {}'s selectors", self.claims[w.claim].name)
        };
        let asked = match w.count {
            Some(n) => n.to_string(),
            None => "all devices".to_string(),
        };
        let tainted: Vec<String> = self
            .devices
            .iter()
            .copied()
            .filter(|&d| (w.admin || !self.in_use(d)) && matches!(self.matches(w, d), Ok(true)))
            .flat_map(|d| {
                let device = &self.inventory.devices[d];
                device
                    .taints
                    .iter()
                    .filter(|t| !w.tolerations.iter().any(|tol| tol.tolerates(&t.taint)))
                    .map(move |t| format!("{}: {t}", device.name))
            })
            .collect();
        let tainted = if tainted.is_empty() {
            String::new()
        } else {
            format!("; tainted and not tolerated: {}", tainted.join(", "))
        };
        format!(
            "{asked} of class {class}{selectors}, {} free here{tainted}",
            free.len()
        )
    }
}

#[cfg(test)]
mod tests;
