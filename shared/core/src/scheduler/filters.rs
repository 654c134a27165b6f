//! The scheduler's filters for one pod on one node, in the scheduler's order, with the
//! PreFilter state of the inter-pod filters computed once per pod.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PodAffinityTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde::Serialize;

use super::node_info::{NodeInfo, required_pod_terms};
use crate::model::quantity::{format_milli, format_quantity};
use crate::model::{Pod, PodSpec};
use crate::scheduling::{
    NodeConstraints, NodeFacts, SCHEDULING_EFFECTS, expression_matches, field_matches,
    label_selector_is_empty, label_selector_matches, pod_fits_node_affinity, required_node_terms,
    untolerated_taints,
};
use crate::syntax::{Taint, TaintEffect};

/// Why a node is not feasible for a pod: one reason of the scheduler's first failing filter
/// (the NodeResourcesFit filter can give several, one per missing resource).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "filter", rename_all = "camelCase")]
pub enum FilterFailure {
    /// NodeAffinity's PreFilter: every required term names its nodes (`matchFields`
    /// `metadata.name In`, as DaemonSet pods do) and none names this one. The scheduler runs
    /// no filter on such a node.
    NotNamed,
    /// NodeAffinity's PreFilter: the terms name no node in common.
    NamedNodesConflict,
    /// NodeUnschedulable.
    Unschedulable,
    /// TaintToleration.
    #[serde(rename_all = "camelCase")]
    Taint { taint: String },
    /// NodeAffinity: nodeSelector or required affinity.
    #[serde(rename_all = "camelCase")]
    NodeAffinity { detail: String },
    /// NodeResourcesFit: pod count.
    #[serde(rename_all = "camelCase")]
    TooManyPods { limit: String },
    /// NodeResourcesFit.
    #[serde(rename_all = "camelCase")]
    Insufficient {
        resource: String,
        requested: String,
        free: String,
    },
    /// PodTopologySpread (a `DoNotSchedule` constraint).
    #[serde(rename_all = "camelCase")]
    TopologySpread {
        topology_key: String,
        /// The node lacks the constraint's topology key.
        missing_label: bool,
        detail: String,
    },
    /// InterPodAffinity: the pod's required pod affinity.
    #[serde(rename_all = "camelCase")]
    PodAffinity { detail: String },
    /// InterPodAffinity: the pod's own required anti-affinity.
    #[serde(rename_all = "camelCase")]
    PodAntiAffinity { detail: String },
    /// InterPodAffinity: a running pod's required anti-affinity keeps this pod out.
    #[serde(rename_all = "camelCase")]
    ExistingPodAntiAffinity { detail: String },
    /// DynamicResources: an allocated claim's devices are not reachable from this node.
    #[serde(rename_all = "camelCase")]
    ClaimNotAvailable { claim: String },
    /// DynamicResources: the devices the pod's claims (or DRA-served extended resources)
    /// need are not free here.
    #[serde(rename_all = "camelCase")]
    CannotAllocateClaims { detail: String },
    /// A PreFilter that stops the pod before any node is looked at (VolumeBinding's
    /// `pod has unbound immediate PersistentVolumeClaims`, a missing claim): every node
    /// fails with the same message.
    #[serde(rename_all = "camelCase")]
    PreFilter { plugin: String, message: String },
    /// NodePorts: a host port the pod asks for is taken on the node.
    #[serde(rename_all = "camelCase")]
    NodePorts { ports: String },
    /// The volume filters: VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone.
    #[serde(rename_all = "camelCase")]
    Volume {
        plugin: String,
        /// The scheduler's reason string.
        reason: String,
        detail: String,
    },
}

impl FilterFailure {
    /// The scheduler's own reason string, as counted in its FailedScheduling message
    /// ("0/5 nodes are available: 2 node(s) had untolerated taint(s), ...").
    pub fn scheduler_reason(&self) -> String {
        match self {
            FilterFailure::NotNamed => "node(s) didn't satisfy plugin(s) [NodeAffinity]".into(),
            FilterFailure::NamedNodesConflict => "pod affinity terms conflict".into(),
            FilterFailure::Unschedulable => "node(s) were unschedulable".into(),
            FilterFailure::PreFilter { message, .. } => message.clone(),
            FilterFailure::NodePorts { .. } => {
                "node(s) didn't have free ports for the requested pod ports".into()
            }
            FilterFailure::Volume { reason, .. } => reason.clone(),
            FilterFailure::Taint { .. } => "node(s) had untolerated taint(s)".into(),
            FilterFailure::NodeAffinity { .. } => {
                "node(s) didn't match Pod's node affinity/selector".into()
            }
            FilterFailure::TooManyPods { .. } => "Too many pods".into(),
            FilterFailure::Insufficient { resource, .. } => format!("Insufficient {resource}"),
            FilterFailure::TopologySpread {
                missing_label: true,
                ..
            } => "node(s) didn't match pod topology spread constraints (missing required label)"
                .into(),
            FilterFailure::TopologySpread { .. } => {
                "node(s) didn't match pod topology spread constraints".into()
            }
            FilterFailure::PodAffinity { .. } => "node(s) didn't match pod affinity rules".into(),
            FilterFailure::PodAntiAffinity { .. } => {
                "node(s) didn't match pod anti-affinity rules".into()
            }
            FilterFailure::ExistingPodAntiAffinity { .. } => {
                "node(s) didn't satisfy existing pods anti-affinity rules".into()
            }
            FilterFailure::ClaimNotAvailable { .. } => {
                "resourceclaim not available on the node".into()
            }
            FilterFailure::CannotAllocateClaims { .. } => "cannot allocate all claims".into(),
        }
    }
}

impl std::fmt::Display for FilterFailure {
    /// The scheduler's event wording, with placekit's detail.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilterFailure::NotNamed => f.write_str(
                "node(s) didn't satisfy plugin(s) [NodeAffinity] (the required terms name other nodes in matchFields metadata.name)",
            ),
            FilterFailure::NamedNodesConflict => f.write_str(
                "pod affinity terms conflict (the required terms' matchFields metadata.name have no node in common)",
            ),
            FilterFailure::Unschedulable => f.write_str("node(s) were unschedulable"),
            FilterFailure::PreFilter { message, .. } => f.write_str(message),
            FilterFailure::NodePorts { ports } => {
                write!(f, "{} ({ports} taken)", self.scheduler_reason())
            }
            FilterFailure::Volume { reason, detail, .. } => write!(f, "{reason} ({detail})"),
            FilterFailure::NodeAffinity { detail } => write!(
                f,
                "node(s) didn't match Pod's node affinity/selector ({detail})"
            ),
            FilterFailure::Taint { taint } => {
                write!(f, "node(s) had untolerated taint {{{taint}}}")
            }
            FilterFailure::Insufficient {
                resource,
                requested,
                free,
            } => write!(
                f,
                "Insufficient {resource} (requested {requested}, free {free})"
            ),
            FilterFailure::TooManyPods { limit } => write!(f, "Too many pods (limit {limit})"),
            FilterFailure::TopologySpread { detail, .. } => write!(f, "{} ({detail})", self.scheduler_reason()),
            FilterFailure::PodAffinity { detail }
            | FilterFailure::PodAntiAffinity { detail }
            | FilterFailure::ExistingPodAntiAffinity { detail }
            | FilterFailure::CannotAllocateClaims { detail } => {
                write!(f, "{} ({detail})", self.scheduler_reason())
            }
            FilterFailure::ClaimNotAvailable { claim } => write!(
                f,
                "{} (claim {claim} is allocated to devices other nodes reach)",
                self.scheduler_reason()
            ),
        }
    }
}

/// Why the node affinity does not hold: the first failing nodeSelector entry or expression
/// (of the terms whose `matchFields` admit the node).
pub fn affinity_detail(spec: &impl NodeConstraints, node: &NodeInfo) -> String {
    if let Some(sel) = spec.node_selector() {
        for (k, v) in sel {
            if node.labels.get(k) != Some(v) {
                return format!(
                    "nodeSelector {k}={v}, node has {}",
                    node.labels
                        .get(k)
                        .map(|x| format!("{k}={x}"))
                        .unwrap_or_else(|| format!("no {k}"))
                );
            }
        }
    }
    let terms = required_node_terms(spec).unwrap_or_default();
    let mut named_elsewhere = false;
    for term in terms {
        if !term
            .match_fields
            .iter()
            .flatten()
            .all(|r| field_matches(r, &node.name) == Some(true))
        {
            named_elsewhere = true;
            continue;
        }
        for req in term.match_expressions.iter().flatten() {
            if expression_matches(req, &node.labels) != Some(true) {
                let values = req.values.as_deref().unwrap_or_default().join(", ");
                return format!(
                    "{} {} [{values}], node has {}",
                    req.key,
                    req.operator,
                    node.labels
                        .get(&req.key)
                        .map(|x| format!("{}={x}", req.key))
                        .unwrap_or_else(|| format!("no {}", req.key))
                );
            }
        }
    }
    if named_elsewhere {
        "no required term's matchFields metadata.name admits this node".into()
    } else {
        "no required term matches".into()
    }
}

/// The node-local filters in the scheduler's order — NodeUnschedulable, TaintToleration,
/// NodeAffinity, NodePorts, NodeResourcesFit — giving every reason of the first one that fails (empty
/// when the node passes them all).
fn local_failures(
    spec: &PodSpec,
    requests: &BTreeMap<String, i128>,
    node: &NodeInfo,
) -> Vec<FilterFailure> {
    let tolerations: &[Toleration] = spec.tolerations.as_deref().unwrap_or_default();
    if node.unschedulable {
        let tolerated = tolerations.iter().any(|t| {
            crate::scheduling::tolerates(
                t,
                &Taint::new(
                    "node.kubernetes.io/unschedulable",
                    "",
                    TaintEffect::NoSchedule,
                ),
            )
        });
        if !tolerated {
            return vec![FilterFailure::Unschedulable];
        }
    }
    if let Some(t) = untolerated_taints(tolerations, &node.taints, SCHEDULING_EFFECTS).first() {
        return vec![FilterFailure::Taint {
            taint: t.to_string(),
        }];
    }
    if !pod_fits_node_affinity(
        spec,
        NodeFacts {
            name: &node.name,
            labels: &node.labels,
        },
    ) {
        return vec![FilterFailure::NodeAffinity {
            detail: affinity_detail(spec, node),
        }];
    }
    if let Some(f) = port_failure(spec, node) {
        return vec![f];
    }
    resource_failures(requests, node)
}

/// NodePorts: the pod's host ports against those the node's pods hold.
fn port_failure(spec: &PodSpec, node: &NodeInfo) -> Option<FilterFailure> {
    let wanted = spec.host_ports();
    if wanted.is_empty() {
        return None;
    }
    let taken: Vec<String> = wanted
        .iter()
        .filter_map(|w| {
            let holder = node
                .pods
                .iter()
                .find(|p| p.host_ports.iter().any(|h| h.conflicts(w)))?;
            Some(format!("{w} by pod {}/{}", holder.namespace, holder.name))
        })
        .collect();
    (!taken.is_empty()).then(|| FilterFailure::NodePorts {
        ports: taken.join(", "),
    })
}

/// NodeResourcesFit: the pod count (a node without `pods` allocatable admits none, as
/// `GetAllowedPodNumber` reads it), then every requested resource the node lacks — cpu,
/// memory, ephemeral-storage, then the others — each one a reason of its own.
fn resource_failures(requests: &BTreeMap<String, i128>, node: &NodeInfo) -> Vec<FilterFailure> {
    let mut out = Vec::new();
    let limit = node.allocatable.get("pods").copied().unwrap_or(0);
    if (node.pod_count as i128 + 1) * 1000 > limit {
        out.push(FilterFailure::TooManyPods {
            limit: format_milli(limit),
        });
    }
    let rank = |r: &str| match r {
        "cpu" => 0,
        "memory" => 1,
        "ephemeral-storage" => 2,
        _ => 3,
    };
    let mut wanted: Vec<(&String, &i128)> = requests.iter().filter(|(_, q)| **q > 0).collect();
    wanted.sort_by_key(|(r, _)| (rank(r), r.as_str()));
    for (resource, want) in wanted {
        let free = node.allocatable.get(resource).copied().unwrap_or(0)
            - node.requested.get(resource).copied().unwrap_or(0);
        if *want > free {
            out.push(FilterFailure::Insufficient {
                resource: resource.clone(),
                requested: format_quantity(resource, *want),
                free: format_quantity(resource, free.max(0)),
            });
        }
    }
    out
}

/// The node-local filters for one pod on one node, in the scheduler's order
/// (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit): the first failing
/// one. The inter-pod filters need the other nodes too: see [`PodFilters`].
pub fn filter(
    spec: &PodSpec,
    requests: &BTreeMap<String, i128>,
    node: &NodeInfo,
) -> Result<(), FilterFailure> {
    match local_failures(spec, requests, node).into_iter().next() {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// Which nodes NodeAffinity's PreFilter lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Named {
    All,
    Only(BTreeSet<String>),
    Conflict,
}

/// NodeAffinity's PreFilter: when *every* required term has `matchFields metadata.name In`,
/// only the nodes they name are filtered at all (the union over terms of the intersection
/// within a term); the others fail as "didn't satisfy plugin(s) [NodeAffinity]".
fn named_nodes(spec: &PodSpec) -> Named {
    let terms = required_node_terms(spec).unwrap_or_default();
    if terms.is_empty() {
        return Named::All;
    }
    let mut union: BTreeSet<String> = BTreeSet::new();
    for term in terms {
        let mut names: Option<BTreeSet<String>> = None;
        for r in term.match_fields.iter().flatten() {
            if r.key == "metadata.name" && r.operator == "In" {
                let s: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
                names = Some(match names {
                    None => s,
                    Some(n) => n.intersection(&s).cloned().collect(),
                });
            }
        }
        match names {
            None => return Named::All,
            Some(n) => union.extend(n),
        }
    }
    if union.is_empty() {
        Named::Conflict
    } else {
        Named::Only(union)
    }
}

/// A pod affinity term as the scheduler evaluates it (`AffinityTerm`).
#[derive(Debug, Clone)]
struct AffinityTerm {
    namespaces: BTreeSet<String>,
    /// `namespaceSelector: {}`: every namespace. A non-empty namespace selector needs the
    /// namespaces' labels, which placekit does not read: it selects no namespace here.
    all_namespaces: bool,
    selector: Option<LabelSelector>,
    topology_key: String,
}

impl AffinityTerm {
    /// `term` of a pod in namespace `owner`: without namespaces and namespaceSelector it
    /// applies to the owner's namespace.
    fn new(term: &PodAffinityTerm, owner: &str) -> Self {
        let namespaces: BTreeSet<String> = if term.namespaces.as_ref().is_none_or(Vec::is_empty)
            && term.namespace_selector.is_none()
        {
            [owner.to_string()].into()
        } else {
            term.namespaces.iter().flatten().cloned().collect()
        };
        AffinityTerm {
            namespaces,
            all_namespaces: label_selector_is_empty(term.namespace_selector.as_ref()),
            selector: term.label_selector.clone(),
            topology_key: term.topology_key.clone(),
        }
    }

    fn matches(&self, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        (self.all_namespaces || self.namespaces.contains(namespace))
            && label_selector_matches(self.selector.as_ref(), labels)
    }
}

/// One `DoNotSchedule` topology spread constraint with its per-domain counts (the
/// scheduler's PodTopologySpread PreFilter state).
#[derive(Debug, Clone)]
struct Spread {
    key: String,
    max_skew: i64,
    self_match: bool,
    counts: BTreeMap<String, i64>,
    /// The smallest count over the eligible domains (0 with fewer domains than minDomains).
    min: i64,
}

/// The scheduler's filters for one pod over a cluster: the node-local ones plus the
/// PreFilter state of the inter-pod ones (PodTopologySpread, InterPodAffinity), computed
/// once over all nodes, as the scheduler does at the start of a scheduling cycle.
#[derive(Debug, Clone)]
pub struct PodFilters<'a> {
    pub(super) spec: &'a PodSpec,
    namespace: &'a str,
    labels: &'a BTreeMap<String, String>,
    requests: BTreeMap<String, i128>,
    named: Named,
    spread: Vec<Spread>,
    affinity_terms: Vec<AffinityTerm>,
    anti_terms: Vec<AffinityTerm>,
    /// (key, value) -> pods matching all affinity terms in that domain.
    affinity_counts: BTreeMap<(String, String), i64>,
    /// (key, value) -> one pod matching an anti-affinity term in that domain.
    anti_pods: BTreeMap<(String, String), String>,
    /// (key, value) -> one running pod whose anti-affinity excludes this pod from it.
    excluded_by: BTreeMap<(String, String), String>,
    /// DynamicResources: the pod's claims and DRA-served extended resources, and the
    /// cluster's devices. `None` when the caller read no DRA objects.
    dra: Option<(crate::dra::ClaimNeeds, &'a crate::dra::DraInventory)>,
    /// The volume plugins' state. `None` when the caller read no storage objects.
    volumes: Option<super::volumes::PodVolumes<'a>>,
}

impl<'a> PodFilters<'a> {
    /// The state for `pod` (not bound: it must not be among the nodes' pods) over `nodes`.
    ///
    /// Long on purpose: the PreFilter state of PodTopologySpread and InterPodAffinity, each
    /// one pass over the nodes' pods, as the scheduler computes it at a cycle's start.
    pub fn new(pod: &'a Pod, nodes: &[NodeInfo]) -> Self {
        let spec = &pod.spec;
        let namespace = pod.metadata.namespace.as_str();
        let labels = &pod.metadata.labels;
        let facts = |n: &'_ NodeInfo| {
            pod_fits_node_affinity(
                spec,
                NodeFacts {
                    name: &n.name,
                    labels: &n.labels,
                },
            )
        };

        // PodTopologySpread.
        let constraints: Vec<_> = spec
            .topology_spread_constraints
            .iter()
            .flatten()
            .filter(|c| c.when_unsatisfiable == "DoNotSchedule")
            .collect();
        let mut spread: Vec<Spread> = constraints
            .iter()
            .map(|c| {
                let selector = spread_selector(c, labels);
                Spread {
                    key: c.topology_key.clone(),
                    max_skew: i64::from(c.max_skew),
                    self_match: label_selector_matches(selector.as_ref(), labels),
                    counts: BTreeMap::new(),
                    min: 0,
                }
            })
            .collect();
        let selectors: Vec<Option<LabelSelector>> = constraints
            .iter()
            .map(|c| spread_selector(c, labels))
            .collect();
        for n in nodes {
            if !constraints
                .iter()
                .all(|c| n.labels.contains_key(&c.topology_key))
            {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.node_affinity_policy.as_deref().unwrap_or("Honor") == "Honor" && !facts(n) {
                    continue;
                }
                if c.node_taints_policy.as_deref() == Some("Honor")
                    && !untolerated_taints(
                        spec.tolerations.as_deref().unwrap_or_default(),
                        &n.taints,
                        SCHEDULING_EFFECTS,
                    )
                    .is_empty()
                {
                    continue;
                }
                let count = if label_selector_is_empty(selectors[i].as_ref()) {
                    0
                } else {
                    n.pods
                        .iter()
                        .filter(|p| {
                            !p.terminating
                                && p.namespace == namespace
                                && label_selector_matches(selectors[i].as_ref(), &p.labels)
                        })
                        .count() as i64
                };
                *spread[i]
                    .counts
                    .entry(n.labels[&c.topology_key].clone())
                    .or_default() += count;
            }
        }
        for (s, c) in spread.iter_mut().zip(&constraints) {
            s.min = if (s.counts.len() as i64) < i64::from(c.min_domains.unwrap_or(1)) {
                0
            } else {
                s.counts
                    .values()
                    .copied()
                    .min()
                    .unwrap_or(i64::from(i32::MAX))
            };
        }

        // InterPodAffinity.
        let affinity_terms: Vec<AffinityTerm> = required_pod_terms(spec, false)
            .iter()
            .map(|t| AffinityTerm::new(t, namespace))
            .collect();
        let anti_terms: Vec<AffinityTerm> = required_pod_terms(spec, true)
            .iter()
            .map(|t| AffinityTerm::new(t, namespace))
            .collect();
        let mut affinity_counts: BTreeMap<(String, String), i64> = BTreeMap::new();
        let mut anti_pods: BTreeMap<(String, String), String> = BTreeMap::new();
        let mut excluded_by: BTreeMap<(String, String), String> = BTreeMap::new();
        for n in nodes {
            for p in &n.pods {
                let who = format!("{}/{}", p.namespace, p.name);
                if !affinity_terms.is_empty()
                    && affinity_terms
                        .iter()
                        .all(|t| t.matches(&p.namespace, &p.labels))
                {
                    for t in &affinity_terms {
                        if let Some(v) = n.labels.get(&t.topology_key) {
                            *affinity_counts
                                .entry((t.topology_key.clone(), v.clone()))
                                .or_default() += 1;
                        }
                    }
                }
                for t in &anti_terms {
                    if t.matches(&p.namespace, &p.labels)
                        && let Some(v) = n.labels.get(&t.topology_key)
                    {
                        anti_pods
                            .entry((t.topology_key.clone(), v.clone()))
                            .or_insert_with(|| who.clone());
                    }
                }
                for term in &p.anti_affinity {
                    let t = AffinityTerm::new(term, &p.namespace);
                    if t.matches(namespace, labels)
                        && let Some(v) = n.labels.get(&t.topology_key)
                    {
                        excluded_by
                            .entry((t.topology_key.clone(), v.clone()))
                            .or_insert_with(|| who.clone());
                    }
                }
            }
        }
        PodFilters {
            spec,
            namespace,
            labels,
            requests: pod.requests(),
            named: named_nodes(spec),
            spread,
            affinity_terms,
            anti_terms,
            affinity_counts,
            anti_pods,
            excluded_by,
            dra: None,
            volumes: None,
        }
    }

    /// Adds the volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
    /// VolumeZone: after NodeResourcesFit, before PodTopologySpread) over `storage`.
    pub fn with_volumes(mut self, volumes: super::volumes::PodVolumes<'a>) -> Self {
        self.volumes = Some(volumes);
        self
    }

    /// What stops the pod before any node: a volume PreFilter's message.
    pub fn pre_filter_hold(&self) -> Option<&super::volumes::VolumeHold> {
        self.volumes.as_ref().and_then(|v| v.hold())
    }

    /// Adds DRA's filter (the scheduler runs it after InterPodAffinity) with the pod's
    /// claim needs over `inventory`.
    pub fn with_dra(
        mut self,
        needs: crate::dra::ClaimNeeds,
        inventory: &'a crate::dra::DraInventory,
    ) -> Self {
        self.dra = Some((needs, inventory));
        self
    }

    /// The pod's effective requests.
    pub fn requests(&self) -> &BTreeMap<String, i128> {
        &self.requests
    }

    /// Every reason of the first filter `node` fails, in the scheduler's order (the
    /// PreFilters that stop every node, NodeUnschedulable, TaintToleration, NodeAffinity,
    /// NodePorts, NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
    /// VolumeZone, PodTopologySpread, InterPodAffinity, DynamicResources); `Ok` when the
    /// node is feasible.
    pub fn check(&self, node: &NodeInfo) -> Result<(), Vec<FilterFailure>> {
        if let Some(hold) = self.pre_filter_hold() {
            return Err(vec![FilterFailure::PreFilter {
                plugin: hold.plugin.clone(),
                message: hold.message.clone(),
            }]);
        }
        match &self.named {
            Named::Conflict => return Err(vec![FilterFailure::NamedNodesConflict]),
            Named::Only(names) if !names.contains(&node.name) => {
                return Err(vec![FilterFailure::NotNamed]);
            }
            _ => {}
        }
        let local = match &self.dra {
            // NodeResourcesFit leaves an extended resource that a DeviceClass serves to DRA
            // on a node whose allocatable lacks it.
            Some((needs, _)) => {
                let mut requests = self.requests.clone();
                requests.retain(|r, _| !needs.delegated(r, node.allocatable.get(r).copied()));
                local_failures(self.spec, &requests, node)
            }
            None => local_failures(self.spec, &self.requests, node),
        };
        if !local.is_empty() {
            return Err(local);
        }
        if let Some(volumes) = &self.volumes {
            let failures = volumes.check(node);
            if !failures.is_empty() {
                return Err(failures
                    .into_iter()
                    .map(|f| FilterFailure::Volume {
                        plugin: f.plugin().into(),
                        reason: f.scheduler_reason().into(),
                        detail: f.detail(),
                    })
                    .collect());
            }
        }
        if let Some(f) = self.spread_failure(node) {
            return Err(vec![f]);
        }
        if let Some(f) = self.inter_pod_failure(node) {
            return Err(vec![f]);
        }
        if let Some((needs, inventory)) = &self.dra {
            let facts = NodeFacts {
                name: &node.name,
                labels: &node.labels,
            };
            match needs.check(facts, &node.allocatable, inventory) {
                Ok(()) => {}
                Err(crate::dra::DraFailure::NotAvailable { claim }) => {
                    return Err(vec![FilterFailure::ClaimNotAvailable { claim }]);
                }
                Err(crate::dra::DraFailure::CannotAllocate { detail }) => {
                    return Err(vec![FilterFailure::CannotAllocateClaims { detail }]);
                }
            }
        }
        Ok(())
    }

    /// Whether the node is a candidate at all: named by the required terms' `matchFields`
    /// (when they all name nodes), and satisfying the nodeSelector and required affinity.
    pub fn is_candidate(&self, node: &NodeInfo) -> bool {
        match &self.named {
            Named::Conflict => false,
            Named::Only(names) if !names.contains(&node.name) => false,
            _ => pod_fits_node_affinity(
                self.spec,
                NodeFacts {
                    name: &node.name,
                    labels: &node.labels,
                },
            ),
        }
    }

    fn spread_failure(&self, node: &NodeInfo) -> Option<FilterFailure> {
        for s in &self.spread {
            let Some(value) = node.labels.get(&s.key) else {
                return Some(FilterFailure::TopologySpread {
                    topology_key: s.key.clone(),
                    missing_label: true,
                    detail: format!("node has no {} label", s.key),
                });
            };
            let matching = s.counts.get(value).copied().unwrap_or(0);
            let skew = matching + i64::from(s.self_match) - s.min;
            if skew > s.max_skew {
                return Some(FilterFailure::TopologySpread {
                    topology_key: s.key.clone(),
                    missing_label: false,
                    detail: format!(
                        "{}={value} has {matching} matching pod(s){}, the emptiest domain {}: skew {skew} > maxSkew {}",
                        s.key,
                        if s.self_match { " + this one" } else { "" },
                        s.min,
                        s.max_skew
                    ),
                });
            }
        }
        None
    }

    fn inter_pod_failure(&self, node: &NodeInfo) -> Option<FilterFailure> {
        if !self.affinity_terms.is_empty() {
            let mut all_present = true;
            for t in &self.affinity_terms {
                match node.labels.get(&t.topology_key) {
                    None => {
                        return Some(FilterFailure::PodAffinity {
                            detail: format!("node has no {} label", t.topology_key),
                        });
                    }
                    Some(v) => {
                        if self
                            .affinity_counts
                            .get(&(t.topology_key.clone(), v.clone()))
                            .is_none_or(|c| *c <= 0)
                        {
                            all_present = false;
                        }
                    }
                }
            }
            // The first pod of a group that selects itself may go anywhere while no pod
            // anywhere matches the terms.
            let self_affinity = self
                .affinity_terms
                .iter()
                .all(|t| t.matches(self.namespace, self.labels));
            let first_of_group = self.affinity_counts.is_empty() && self_affinity;
            if !(all_present || first_of_group) {
                return Some(FilterFailure::PodAffinity {
                    detail: "no pod matching every required pod affinity term runs in this node's topology domain(s)".into(),
                });
            }
        }
        for t in &self.anti_terms {
            if let Some(v) = node.labels.get(&t.topology_key)
                && let Some(who) = self.anti_pods.get(&(t.topology_key.clone(), v.clone()))
            {
                return Some(FilterFailure::PodAntiAffinity {
                    detail: format!(
                        "pod {who} matches the term and runs in {}={v}",
                        t.topology_key
                    ),
                });
            }
        }
        for (k, v) in &node.labels {
            if let Some(who) = self.excluded_by.get(&(k.clone(), v.clone())) {
                return Some(FilterFailure::ExistingPodAntiAffinity {
                    detail: format!(
                        "the anti-affinity of pod {who} excludes this pod from {k}={v}"
                    ),
                });
            }
        }
        None
    }
}

/// A spread constraint's selector with `matchLabelKeys` merged in (the pod's values for
/// those keys), as the scheduler builds it.
fn spread_selector(
    c: &k8s_openapi::api::core::v1::TopologySpreadConstraint,
    pod_labels: &BTreeMap<String, String>,
) -> Option<LabelSelector> {
    let mut selector = c.label_selector.clone()?;
    let extra: Vec<LabelSelectorRequirement> = c
        .match_label_keys
        .iter()
        .flatten()
        .filter_map(|k| {
            pod_labels.get(k).map(|v| LabelSelectorRequirement {
                key: k.clone(),
                operator: "In".into(),
                values: Some(vec![v.clone()]),
            })
        })
        .collect();
    if !extra.is_empty() {
        selector
            .match_expressions
            .get_or_insert_with(Vec::new)
            .extend(extra);
    }
    Some(selector)
}

/// The per-node results for a pod over a cluster, in node order.
pub fn evaluate(pod: &Pod, nodes: &[NodeInfo]) -> Vec<Result<(), Vec<FilterFailure>>> {
    let filters = PodFilters::new(pod, nodes);
    nodes.iter().map(|n| filters.check(n)).collect()
}
