//! Scheduling checks against live nodes, as pure functions: the scheduler's filters for one
//! pod on one node (why-pending), drift of running pods from their nodes' labels, and the
//! candidate analysis behind affinity-lint's `--cluster` rules.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PodAffinityTerm, PodSpec, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde::{Deserialize, Serialize};

use crate::gpu::{ContainerView, format_milli, parse_quantity_milli};
use crate::scheduling::{
    NodeFacts, SCHEDULING_EFFECTS, expression_matches, field_matches, label_selector_is_empty,
    label_selector_matches, node_selector_matches, pod_fits_node_affinity, required_node_terms,
    term_matches, untolerated_taints,
};
use crate::syntax::{Taint, TaintEffect};

/// What the filters need of a node, with the requests already placed on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// resource -> thousandths (`pods` in thousandths too).
    pub allocatable: BTreeMap<String, i128>,
    /// resource -> thousandths requested by the active pods bound to it.
    pub requested: BTreeMap<String, i128>,
    pub pod_count: usize,
    /// The active pods bound to it, as the inter-pod filters (PodTopologySpread,
    /// InterPodAffinity) see them. Empty when the caller read no pods (drift).
    #[serde(skip)]
    pub pods: Vec<PlacedPod>,
}

/// A pod bound to a node, as the scheduler's inter-pod filters see it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlacedPod {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// Being deleted (`deletionTimestamp` set): topology spread no longer counts it.
    pub terminating: bool,
    /// Its required pod anti-affinity terms: they keep *other* pods out of its domain.
    pub anti_affinity: Vec<PodAffinityTerm>,
}

impl PlacedPod {
    /// The inter-pod view of a pod read from the API.
    pub fn of(pod: &PodObject) -> Self {
        PlacedPod {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            labels: pod.metadata.labels.clone(),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            anti_affinity: required_pod_terms(&pod.spec, true).to_vec(),
        }
    }
}

/// The pod's required pod affinity (`anti == false`) or anti-affinity terms.
fn required_pod_terms(spec: &PodSpec, anti: bool) -> &[PodAffinityTerm] {
    let affinity = spec.affinity.as_ref();
    let terms = if anti {
        affinity
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
    } else {
        affinity
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
    };
    terms.map(Vec::as_slice).unwrap_or_default()
}

/// A node as read from the API, minimal.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeObject {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: NodeSpecObject,
    #[serde(default)]
    pub status: NodeStatusObject,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Meta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default, rename = "ownerReferences")]
    pub owner_references: Vec<serde_json::Value>,
    #[serde(default, rename = "deletionTimestamp")]
    pub deletion_timestamp: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeSpecObject {
    #[serde(default)]
    pub taints: Vec<Taint>,
    #[serde(default)]
    pub unschedulable: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeStatusObject {
    #[serde(default)]
    pub allocatable: BTreeMap<String, String>,
}

/// A pod as read from the API: full spec (affinity, tolerations), phase.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PodObject {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: PodStatusObject,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatusObject {
    #[serde(default)]
    pub phase: Option<String>,
    /// The claims generated from the pod's ResourceClaimTemplates.
    #[serde(default)]
    pub resource_claim_statuses: Vec<crate::dra::PodClaimStatus>,
    /// Extended resources the scheduler allocated from DRA devices.
    #[serde(default)]
    pub extended_resource_claim_status: Option<crate::gpu::ExtendedResourceClaimStatusView>,
}

impl PodObject {
    /// The pod's `spec.resourceClaims`.
    pub fn claim_refs(&self) -> Vec<crate::dra::PodClaimRef> {
        self.spec
            .resource_claims
            .iter()
            .flatten()
            .map(|c| crate::dra::PodClaimRef {
                name: c.name.clone(),
                resource_claim_name: c.resource_claim_name.clone(),
                resource_claim_template_name: c.resource_claim_template_name.clone(),
            })
            .collect()
    }

    /// Whether the scheduler served `resource` from DRA devices for this (bound) pod.
    fn served_by_dra(&self, resource: &str) -> bool {
        self.status
            .extended_resource_claim_status
            .as_ref()
            .is_some_and(|s| s.serves(resource))
    }

    pub fn is_active(&self) -> bool {
        !matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// The pod's effective requests per resource (scheduler rule, see [`crate::gpu`]).
    pub fn requests(&self) -> BTreeMap<String, i128> {
        let view = |c: &k8s_openapi::api::core::v1::Container| ContainerView {
            resources: crate::gpu::ResourcesView {
                requests: c
                    .resources
                    .as_ref()
                    .and_then(|r| r.requests.as_ref())
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                    .unwrap_or_default(),
                limits: c
                    .resources
                    .as_ref()
                    .and_then(|r| r.limits.as_ref())
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                    .unwrap_or_default(),
            },
            restart_policy: c.restart_policy.clone(),
        };
        let pod = crate::gpu::PodView {
            spec: crate::gpu::PodSpecView {
                containers: self.spec.containers.iter().map(view).collect(),
                init_containers: self
                    .spec
                    .init_containers
                    .iter()
                    .flatten()
                    .map(view)
                    .collect(),
                overhead: self
                    .spec
                    .overhead
                    .as_ref()
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                    .unwrap_or_default(),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut names: Vec<String> = pod
            .spec
            .containers
            .iter()
            .chain(&pod.spec.init_containers)
            .flat_map(|c| {
                c.resources
                    .requests
                    .keys()
                    .chain(c.resources.limits.keys())
                    .cloned()
            })
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| {
                let r = pod.effective_request(&n);
                (n, r)
            })
            .filter(|(_, r)| *r > 0)
            .collect()
    }
}

/// Builds node infos from nodes and the active pods bound to them.
pub fn node_infos(nodes: &[NodeObject], pods: &[PodObject]) -> Vec<NodeInfo> {
    let mut requested: BTreeMap<&str, BTreeMap<String, i128>> = BTreeMap::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut placed: BTreeMap<&str, Vec<PlacedPod>> = BTreeMap::new();
    for pod in pods.iter().filter(|p| p.is_active()) {
        let Some(node) = pod.spec.node_name.as_deref() else {
            continue;
        };
        *counts.entry(node).or_default() += 1;
        placed.entry(node).or_default().push(PlacedPod::of(pod));
        let entry = requested.entry(node).or_default();
        for (r, q) in pod.requests() {
            // Devices DRA allocated are counted by their claims, not against allocatable.
            if pod.served_by_dra(&r) {
                continue;
            }
            *entry.entry(r).or_default() += q;
        }
    }
    nodes
        .iter()
        .map(|n| NodeInfo {
            name: n.metadata.name.clone(),
            labels: n.metadata.labels.clone(),
            taints: n.spec.taints.clone(),
            unschedulable: n.spec.unschedulable,
            allocatable: n
                .status
                .allocatable
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), parse_quantity_milli(v)?)))
                .collect(),
            requested: requested
                .get(n.metadata.name.as_str())
                .cloned()
                .unwrap_or_default(),
            pod_count: counts.get(n.metadata.name.as_str()).copied().unwrap_or(0),
            pods: placed.remove(n.metadata.name.as_str()).unwrap_or_default(),
        })
        .collect()
}

/// Why a node is not feasible for a pod: one reason of the scheduler's first failing filter
/// (the NodeResourcesFit filter can give several, one per missing resource).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
}

impl FilterFailure {
    /// The scheduler's own reason string, as counted in its FailedScheduling message
    /// ("0/5 nodes are available: 2 node(s) had untolerated taint(s), ...").
    pub fn scheduler_reason(&self) -> String {
        match self {
            FilterFailure::NotNamed => "node(s) didn't satisfy plugin(s) [NodeAffinity]".into(),
            FilterFailure::NamedNodesConflict => "pod affinity terms conflict".into(),
            FilterFailure::Unschedulable => "node(s) were unschedulable".into(),
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
pub fn affinity_detail(spec: &PodSpec, node: &NodeInfo) -> String {
    if let Some(sel) = &spec.node_selector {
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
/// NodeAffinity, NodeResourcesFit — giving every reason of the first one that fails (empty
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
    resource_failures(requests, node)
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
                requested: crate::gpu::format_quantity(resource, *want),
                free: crate::gpu::format_quantity(resource, free.max(0)),
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
    spec: &'a PodSpec,
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
}

impl<'a> PodFilters<'a> {
    /// The state for `pod` (not bound: it must not be among the nodes' pods) over `nodes`.
    pub fn new(pod: &'a PodObject, nodes: &[NodeInfo]) -> Self {
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
        }
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

    /// Every reason of the first filter `node` fails, in the scheduler's order
    /// (NodeAffinity's PreFilter, NodeUnschedulable, TaintToleration, NodeAffinity,
    /// NodeResourcesFit, PodTopologySpread, InterPodAffinity); `Ok` when the node is
    /// feasible.
    pub fn check(&self, node: &NodeInfo) -> Result<(), Vec<FilterFailure>> {
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

    /// The runbook table's verdict when no node fits (see [`verdict`]). A node that is no
    /// candidate counts as a node affinity failure even when an earlier filter (a taint, a
    /// cordon) stopped it first: the verdict is about what would make the pod schedulable.
    pub fn verdict(
        &self,
        nodes: &[NodeInfo],
        results: &[Result<(), Vec<FilterFailure>>],
    ) -> Option<Verdict> {
        if results.iter().any(Result::is_ok) {
            return None;
        }
        let failures: Vec<FilterFailure> = nodes
            .iter()
            .zip(results)
            .filter_map(|(n, r)| {
                let first = r.as_ref().err()?.first()?.clone();
                let affinity_class = matches!(
                    first,
                    FilterFailure::NodeAffinity { .. }
                        | FilterFailure::NotNamed
                        | FilterFailure::NamedNodesConflict
                );
                Some(if affinity_class || self.is_candidate(n) {
                    first
                } else {
                    FilterFailure::NodeAffinity {
                        detail: affinity_detail(self.spec, n),
                    }
                })
            })
            .collect();
        verdict(&failures)
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
pub fn evaluate(pod: &PodObject, nodes: &[NodeInfo]) -> Vec<Result<(), Vec<FilterFailure>>> {
    let filters = PodFilters::new(pod, nodes);
    nodes.iter().map(|n| filters.check(n)).collect()
}

/// The scheduler's FailedScheduling message for these per-node results, without its
/// preemption part ("0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 4 node(s)
/// didn't match Pod's node affinity/selector."): each reason with the number of nodes
/// giving it, sorted as strings as the scheduler sorts them. `None` when a node fits.
pub fn scheduler_message(results: &[Result<(), Vec<FilterFailure>>]) -> Option<String> {
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for r in results {
        for f in r.as_ref().err()? {
            *reasons.entry(f.scheduler_reason()).or_default() += 1;
        }
    }
    let head = format!("0/{} nodes are available:", results.len());
    if !results.is_empty()
        && results.iter().all(|r| {
            matches!(
                r.as_ref().err().map(Vec::as_slice),
                Some([FilterFailure::NamedNodesConflict])
            )
        })
    {
        return Some(format!("{head} pod affinity terms conflict."));
    }
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    if parts.is_empty() {
        return Some(head);
    }
    Some(format!("{head} {}.", parts.join(", ")))
}

/// Per-reason node counts of a FailedScheduling message ("0/5 nodes are available: 2 X, 3
/// Y. preemption: ..."): the number of nodes and the reasons, without the preemption part.
/// `None` when the text is not such a message.
pub fn parse_scheduler_message(message: &str) -> Option<(usize, BTreeMap<String, usize>)> {
    let rest = message.strip_prefix("0/")?;
    let (total, rest) = rest.split_once(" nodes are available:")?;
    let total: usize = total.parse().ok()?;
    let body = rest
        .split(" preemption: ")
        .next()
        .unwrap_or_default()
        .trim();
    let body = body.strip_suffix('.').unwrap_or(body);
    let mut reasons = BTreeMap::new();
    for part in body.split(", ").filter(|p| !p.is_empty()) {
        match part.split_once(' ') {
            Some((n, reason)) if n.parse::<usize>().is_ok() => {
                *reasons.entry(reason.to_string()).or_default() += n.parse::<usize>().ok()?;
            }
            // A PreFilter rejection: one reason for every node.
            _ => {
                *reasons.entry(part.to_string()).or_default() += total;
            }
        }
    }
    Some((total, reasons))
}

/// A verdict of the pending-pod runbook's table for a Pending pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// The scheduler's evidence: didn't match node affinity, untolerated taint, Insufficient X, Too many pods.
    pub evidence: String,
    pub judgment: String,
    pub action: String,
}

/// Maps the per-node failures to the runbook's table. Nodes that fail node affinity (or that
/// the pod's `matchFields` do not name) were never candidates, so when some node passes
/// affinity the verdict comes from what stopped the candidates (the most common of their
/// failures); otherwise it is the affinity verdict.
pub fn verdict(failures: &[FilterFailure]) -> Option<Verdict> {
    let not_candidate = |f: &FilterFailure| {
        matches!(
            f,
            FilterFailure::NodeAffinity { .. }
                | FilterFailure::NotNamed
                | FilterFailure::NamedNodesConflict
        )
    };
    let candidates: Vec<&FilterFailure> = failures.iter().filter(|f| !not_candidate(f)).collect();
    let considered: Vec<&FilterFailure> = if candidates.is_empty() {
        failures.iter().collect()
    } else {
        candidates
    };
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for f in considered.iter().copied() {
        let k = match f {
            FilterFailure::NodeAffinity { .. }
            | FilterFailure::NotNamed
            | FilterFailure::NamedNodesConflict => "affinity",
            FilterFailure::Taint { .. } => "taint",
            FilterFailure::Insufficient { .. } => "resources",
            FilterFailure::TooManyPods { .. } => "pods",
            FilterFailure::Unschedulable => "unschedulable",
            FilterFailure::TopologySpread { .. } => "spread",
            FilterFailure::PodAffinity { .. } => "podAffinity",
            FilterFailure::PodAntiAffinity { .. } => "antiAffinity",
            FilterFailure::ExistingPodAntiAffinity { .. } => "existingAntiAffinity",
            FilterFailure::ClaimNotAvailable { .. } => "claimNotAvailable",
            FilterFailure::CannotAllocateClaims { .. } => "claims",
        };
        *counts.entry(k).or_default() += 1;
    }
    let (top, _) = counts
        .iter()
        .max_by_key(|(k, n)| (**n, std::cmp::Reverse(**k)))?;
    let v = |e: &str, j: &str, a: &str| Verdict {
        evidence: e.into(),
        judgment: j.into(),
        action: a.into(),
    };
    Some(match *top {
        "affinity" => v(
            "didn't match Pod's node affinity",
            "hard condition has no candidates",
            "compare expression, label key and value (kubectl nodelabel dependents, affinity-lint --cluster)",
        ),
        "taint" => v(
            "had untolerated taint",
            "missing matching toleration",
            "add the required toleration after confirming workload eligibility",
        ),
        "resources" => {
            let resource = considered
                .iter()
                .find_map(|f| match f {
                    FilterFailure::Insufficient { resource, .. } => Some(resource.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            v(
                &format!("Insufficient {resource}"),
                "candidate node capacity is already requested",
                "scale up, free legitimate workloads, or reduce replica count",
            )
        }
        "pods" => v(
            "Too many pods",
            "node pod limit reached",
            "check CNI, node limits and stray pods",
        ),
        "spread" => v(
            "didn't match pod topology spread constraints",
            "another replica here would exceed maxSkew, or candidates lack the topology key",
            "add capacity in the emptiest topology domains, label the candidates with the key, or relax maxSkew / whenUnsatisfiable: ScheduleAnyway",
        ),
        "podAffinity" => v(
            "didn't match pod affinity rules",
            "no pod the required pod affinity names runs in a candidate's domain",
            "check that the pods the rule names run (and their labels), or make the rule preferred",
        ),
        "antiAffinity" => v(
            "didn't match pod anti-affinity rules",
            "every candidate's domain already runs a pod the pod's own anti-affinity excludes",
            "add nodes (or domains) for the extra replica, reduce replicas, or make the rule preferred",
        ),
        "claims" => v(
            "cannot allocate all claims",
            "no candidate node has enough free devices of the claimed device class (DRA)",
            "free devices (finished pods' claims keep theirs until deleted), add nodes whose DRA driver publishes the class's devices, or ask for fewer (kubectl gpu-taint status shows devices per node)",
        ),
        "claimNotAvailable" => v(
            "resourceclaim not available on the node",
            "a claim of the pod is already allocated to devices the candidate nodes cannot reach",
            "schedule the pod where its claim's devices are, or delete the claim so it is allocated anew",
        ),
        "existingAntiAffinity" => v(
            "didn't satisfy existing pods anti-affinity rules",
            "running pods' anti-affinity keeps this pod out of the candidates' domains",
            "check the anti-affinity of the pods on the candidate nodes (kubectl get pods -o wide)",
        ),
        _ => v(
            "node(s) were unschedulable",
            "candidate nodes are cordoned",
            "uncordon the nodes or add capacity",
        ),
    })
}

/// What drift needs of a pod: where it runs and its node constraints (containers and the
/// rest of the spec are skipped while reading, which keeps a 150,000-pod list cheap).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConstraintsPod {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: ConstraintsSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintsSpec {
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub affinity: Option<k8s_openapi::api::core::v1::Affinity>,
    #[serde(default)]
    pub tolerations: Option<Vec<Toleration>>,
}

impl ConstraintsPod {
    /// The constraints as a `PodSpec` for the shared matchers.
    pub fn pod_spec(&self) -> PodSpec {
        PodSpec {
            node_name: self.spec.node_name.clone(),
            node_selector: self.spec.node_selector.clone(),
            affinity: self.spec.affinity.clone(),
            tolerations: self.spec.tolerations.clone(),
            ..PodSpec::default()
        }
    }
}

/// A running pod whose node no longer satisfies its constraints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    pub namespace: String,
    pub pod: String,
    pub node: String,
    /// The failing nodeSelector entry or expression, with expected vs actual.
    pub reason: String,
    /// `labels`: the node's labels no longer satisfy the pod (it keeps running); `taint`: a
    /// NoExecute taint it does not tolerate (it is evicted).
    pub kind: DriftKind,
}

/// Why a pod drifted, which decides what happens to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DriftKind {
    /// nodeSelector or required node affinity: IgnoredDuringExecution, it keeps running.
    Labels,
    /// An untolerated NoExecute taint: the taint manager evicts it.
    Taint,
}

/// Whether a running pod drifted from its node (nodeSelector, required affinity, or a
/// NoExecute taint it does not tolerate).
pub fn drift(pod: &ConstraintsPod, node: &NodeInfo) -> Option<Drift> {
    let facts = NodeFacts {
        name: &node.name,
        labels: &node.labels,
    };
    let spec = pod.pod_spec();
    let (reason, kind) = if !spec
        .node_selector
        .as_ref()
        .is_none_or(|s| node_selector_matches(s, &node.labels))
        || !pod_fits_node_affinity(&spec, facts)
    {
        (affinity_detail(&spec, node), DriftKind::Labels)
    } else if let Some(t) = untolerated_taints(
        spec.tolerations.as_deref().unwrap_or_default(),
        &node.taints,
        &[TaintEffect::NoExecute],
    )
    .first()
    {
        (format!("untolerated NoExecute taint {t}"), DriftKind::Taint)
    } else {
        return None;
    };
    Some(Drift {
        namespace: pod.metadata.namespace.clone(),
        pod: pod.metadata.name.clone(),
        node: node.name.clone(),
        reason,
        kind,
    })
}

/// The nodes a pod spec may land on by affinity and selector alone.
pub fn affinity_candidates<'a>(spec: &PodSpec, nodes: &'a [NodeInfo]) -> Vec<&'a NodeInfo> {
    nodes
        .iter()
        .filter(|n| {
            pod_fits_node_affinity(
                spec,
                NodeFacts {
                    name: &n.name,
                    labels: &n.labels,
                },
            )
        })
        .collect()
}

/// Whether any term matches (for callers that only have terms).
pub fn any_term_matches(
    terms: &[k8s_openapi::api::core::v1::NodeSelectorTerm],
    node: &NodeInfo,
) -> bool {
    terms.iter().any(|t| {
        term_matches(
            t,
            NodeFacts {
                name: &node.name,
                labels: &node.labels,
            },
        )
    })
}

/// The existing key closest to `key` (edit distance <= 3), for typo suggestions.
pub fn nearest_key<'a>(key: &str, existing: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    existing
        .into_iter()
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, _)| *d > 0 && *d <= 3)
        .min()
        .map(|(_, k)| k)
}

/// The edit distance (insertions, deletions, substitutions) between two strings.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(
        name: &str,
        labels: serde_json::Value,
        taints: serde_json::Value,
        gpus: &str,
    ) -> NodeObject {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}, "status": {"allocatable": {"nvidia.com/gpu": gpus, "pods": "3", "cpu": "8"}}})).unwrap()
    }

    fn pod(spec: serde_json::Value) -> PodObject {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ml"}, "spec": spec, "status": {"phase": "Pending"}})).unwrap()
    }

    #[test]
    fn filters_in_scheduler_order_and_verdicts() {
        let nodes = vec![
            node("a100", json!({"family": "a100"}), json!([]), "1"),
            node(
                "h100",
                json!({"family": "h100"}),
                json!([{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]),
                "8",
            ),
        ];
        let running = vec![serde_json::from_value::<PodObject>(json!({"metadata": {"name": "r"}, "spec": {"nodeName": "a100", "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}, "status": {"phase": "Running"}})).unwrap()];
        let infos = node_infos(&nodes, &running);
        let p = pod(
            json!({"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}),
        );
        let reqs = p.requests();
        assert_eq!(reqs["nvidia.com/gpu"], 1000);
        let a = filter(&p.spec, &reqs, &infos[0]).unwrap_err();
        assert_eq!(
            a,
            FilterFailure::Insufficient {
                resource: "nvidia.com/gpu".into(),
                requested: "1".into(),
                free: "0".into()
            }
        );
        let h = filter(&p.spec, &reqs, &infos[1]).unwrap_err();
        assert_eq!(
            h.to_string(),
            "node(s) had untolerated taint {dedicated=batch:NoSchedule}"
        );
        let affinity = pod(json!({"containers": [], "nodeSelector": {"family": "b200"}}));
        let f = filter(&affinity.spec, &BTreeMap::new(), &infos[0]).unwrap_err();
        assert!(
            f.to_string()
                .contains("nodeSelector family=b200, node has family=a100"),
            "{f}"
        );
        assert_eq!(
            verdict(&[f.clone(), f]).unwrap().evidence,
            "didn't match Pod's node affinity"
        );
        assert_eq!(
            verdict(&[a]).unwrap().evidence,
            "Insufficient nvidia.com/gpu"
        );
        assert_eq!(verdict(&[h]).unwrap().evidence, "had untolerated taint");
        let full = NodeInfo {
            pod_count: 3,
            ..infos[0].clone()
        };
        assert_eq!(
            filter(
                &affinity.spec,
                &BTreeMap::new(),
                &NodeInfo {
                    labels: [("family".to_string(), "b200".to_string())].into(),
                    ..full
                }
            )
            .unwrap_err(),
            FilterFailure::TooManyPods { limit: "3".into() }
        );
    }

    fn placed(
        name: &str,
        node: &str,
        labels: serde_json::Value,
        extra: serde_json::Value,
    ) -> PodObject {
        let mut spec = json!({"nodeName": node, "containers": []});
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ml", "labels": labels}, "spec": spec, "status": {"phase": "Running"}})).unwrap()
    }

    fn zoned(name: &str, zone: Option<&str>) -> NodeObject {
        let mut labels = json!({"kubernetes.io/hostname": name});
        if let Some(z) = zone {
            labels["topology.kubernetes.io/zone"] = json!(z);
        }
        node(name, labels, json!([]), "8")
    }

    fn reasons(results: &[Result<(), Vec<FilterFailure>>]) -> Vec<String> {
        results
            .iter()
            .map(|r| match r {
                Ok(()) => "fits".to_string(),
                Err(f) => f
                    .iter()
                    .map(FilterFailure::scheduler_reason)
                    .collect::<Vec<_>>()
                    .join(" + "),
            })
            .collect()
    }

    fn test_pod(labels: serde_json::Value, spec: serde_json::Value) -> PodObject {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ml", "labels": labels}, "spec": spec, "status": {"phase": "Pending"}})).unwrap()
    }

    #[test]
    fn taints_come_before_node_affinity_and_resources_give_every_reason() {
        let nodes = node_infos(
            &[
                node(
                    "tainted",
                    json!({"family": "h100"}),
                    json!([{"key": "gpu", "effect": "NoSchedule"}]),
                    "8",
                ),
                node("small", json!({"family": "a100"}), json!([]), "0"),
            ],
            &[],
        );
        let p = test_pod(
            json!({}),
            json!({"nodeSelector": {"family": "a100"}, "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "100"}, "limits": {"nvidia.com/gpu": "1"}}}]}),
        );
        let results = evaluate(&p, &nodes);
        assert_eq!(
            reasons(&results),
            vec![
                "node(s) had untolerated taint(s)",
                "Insufficient cpu + Insufficient nvidia.com/gpu"
            ],
            "the taint filter runs before node affinity"
        );
        assert_eq!(
            scheduler_message(&results).unwrap(),
            "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s)."
        );
        let mut no_pods = nodes[1].clone();
        no_pods.allocatable.remove("pods");
        assert_eq!(
            filter(&PodSpec::default(), &BTreeMap::new(), &no_pods).unwrap_err(),
            FilterFailure::TooManyPods { limit: "0".into() },
            "no pods allocatable admits no pod"
        );
    }

    #[test]
    fn the_verdict_ignores_taints_on_nodes_that_are_no_candidates() {
        let nodes = node_infos(
            &[
                node("a100", json!({"family": "a100"}), json!([]), "8"),
                node(
                    "h100",
                    json!({"family": "h100"}),
                    json!([{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]),
                    "8",
                ),
            ],
            &[],
        );
        let p = test_pod(
            json!({}),
            json!({"nodeSelector": {"family": "b200"}, "containers": []}),
        );
        let filters = PodFilters::new(&p, &nodes);
        let results: Vec<_> = nodes.iter().map(|n| filters.check(n)).collect();
        assert_eq!(reasons(&results)[1], "node(s) had untolerated taint(s)");
        assert!(!filters.is_candidate(&nodes[1]));
        assert_eq!(
            filters.verdict(&nodes, &results).unwrap().evidence,
            "didn't match Pod's node affinity"
        );
        let h100 = test_pod(
            json!({}),
            json!({"nodeSelector": {"family": "h100"}, "containers": []}),
        );
        let filters = PodFilters::new(&h100, &nodes);
        let results: Vec<_> = nodes.iter().map(|n| filters.check(n)).collect();
        assert_eq!(
            filters.verdict(&nodes, &results).unwrap().evidence,
            "had untolerated taint"
        );
    }

    #[test]
    fn match_fields_names_restrict_the_nodes_filtered_at_all() {
        let nodes = node_infos(
            &[
                zoned("a", None),
                node("b", json!({}), json!([]), "8"),
                serde_json::from_value(json!({"metadata": {"name": "c"}, "spec": {"unschedulable": true}, "status": {"allocatable": {"pods": "3"}}})).unwrap(),
            ],
            &[],
        );
        let terms = |names: &[&str]| {
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
                names.iter().map(|n| json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}], "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]})).collect::<Vec<_>>()}}}, "containers": []})
        };
        let p = test_pod(json!({}), terms(&["a", "b"]));
        assert_eq!(
            reasons(&evaluate(&p, &nodes)),
            vec![
                "fits",
                "node(s) didn't match Pod's node affinity/selector",
                "node(s) didn't satisfy plugin(s) [NodeAffinity]"
            ],
            "the cordoned node c is not named: the scheduler never filters it"
        );
        let r = evaluate(&p, &nodes);
        assert!(
            r[1].as_ref().unwrap_err()[0]
                .to_string()
                .contains("kubernetes.io/hostname Exists")
        );
        let conflict = test_pod(
            json!({}),
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["a"]},
                {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}, "containers": []}),
        );
        let results = evaluate(&conflict, &nodes);
        assert_eq!(
            scheduler_message(&results).unwrap(),
            "0/3 nodes are available: pod affinity terms conflict."
        );
        assert_eq!(
            parse_scheduler_message("0/3 nodes are available: pod affinity terms conflict.")
                .unwrap()
                .1,
            [("pod affinity terms conflict".to_string(), 3)].into()
        );
    }

    #[test]
    fn topology_spread_counts_eligible_domains_and_needs_the_key() {
        let nodes_objs = vec![
            zoned("n1", Some("z1")),
            zoned("n2", Some("z1")),
            zoned("n3", Some("z2")),
            zoned("n4", None),
        ];
        let running = vec![
            placed("r1", "n1", json!({"app": "llm"}), json!({})),
            placed("r2", "n2", json!({"app": "llm"}), json!({})),
            placed("other", "n3", json!({"app": "web"}), json!({})),
        ];
        let nodes = node_infos(&nodes_objs, &running);
        let spread = |key: &str, skew: i32, min_domains: Option<i32>| {
            let mut c = json!({"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "llm"}}});
            if let Some(m) = min_domains {
                c["minDomains"] = json!(m);
            }
            test_pod(
                json!({"app": "llm"}),
                json!({"topologySpreadConstraints": [c], "containers": []}),
            )
        };
        let zone = "topology.kubernetes.io/zone";
        // z1 has 2, z2 has 0: z1 + this one - 0 = 3 > 1.
        assert_eq!(
            reasons(&evaluate(&spread(zone, 1, None), &nodes)),
            vec![
                "node(s) didn't match pod topology spread constraints",
                "node(s) didn't match pod topology spread constraints",
                "fits",
                "node(s) didn't match pod topology spread constraints (missing required label)"
            ]
        );
        assert_eq!(
            reasons(&evaluate(&spread(zone, 3, None), &nodes))[..3],
            ["fits", "fits", "fits"]
        );
        // Hostname: n1, n2 have 1, n3 0 (n4 has a hostname too): 1 + 1 - 0 = 2 > 1.
        assert_eq!(
            reasons(&evaluate(
                &spread("kubernetes.io/hostname", 1, None),
                &nodes
            )),
            vec![
                "node(s) didn't match pod topology spread constraints",
                "node(s) didn't match pod topology spread constraints",
                "fits",
                "fits"
            ]
        );
        // minDomains above the number of domains: the minimum counts as 0.
        let single = node_infos(&nodes_objs[..2], &running[..2]);
        assert_eq!(
            reasons(&evaluate(&spread(zone, 2, None), &single)),
            vec!["fits", "fits"],
            "one domain: 2 + 1 - 2 = 1"
        );
        assert_eq!(
            reasons(&evaluate(&spread(zone, 2, Some(2)), &single)),
            vec![
                "node(s) didn't match pod topology spread constraints",
                "node(s) didn't match pod topology spread constraints"
            ],
            "minDomains 2 with one domain: 2 + 1 - 0 = 3"
        );
        // An empty selector counts no pods.
        let everything = test_pod(
            json!({"app": "llm"}),
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": zone, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}], "containers": []}),
        );
        assert_eq!(reasons(&evaluate(&everything, &nodes))[0], "fits");
        // ScheduleAnyway is no filter.
        let soft = test_pod(
            json!({"app": "llm"}),
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": zone, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "llm"}}}], "containers": []}),
        );
        assert!(evaluate(&soft, &nodes).iter().all(Result::is_ok));
    }

    #[test]
    fn pod_anti_affinity_both_ways_and_pod_affinity() {
        let zone = "topology.kubernetes.io/zone";
        let nodes_objs = vec![
            zoned("n1", Some("z1")),
            zoned("n2", Some("z1")),
            zoned("n3", Some("z2")),
        ];
        let running = vec![
            placed("llm-0", "n1", json!({"app": "llm"}), json!({})),
            placed(
                "guard",
                "n3",
                json!({"app": "guard"}),
                json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "llm"}}}]}}}),
            ),
        ];
        let nodes = node_infos(&nodes_objs, &running);
        let anti = |key: &str| {
            test_pod(
                json!({"app": "llm"}),
                json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": key, "labelSelector": {"matchLabels": {"app": "llm"}}}]}}, "containers": []}),
            )
        };
        assert_eq!(
            reasons(&evaluate(&anti("kubernetes.io/hostname"), &nodes)),
            vec![
                "node(s) didn't match pod anti-affinity rules",
                "fits",
                "node(s) didn't satisfy existing pods anti-affinity rules"
            ]
        );
        let r = evaluate(&anti(zone), &nodes);
        assert_eq!(
            reasons(&r)[..2],
            [
                "node(s) didn't match pod anti-affinity rules",
                "node(s) didn't match pod anti-affinity rules"
            ]
        );
        assert!(
            r[1].as_ref().unwrap_err()[0].to_string().contains(
                "pod ml/llm-0 matches the term and runs in topology.kubernetes.io/zone=z1"
            )
        );
        // Another namespace is not matched by default.
        let mut other_ns = anti("kubernetes.io/hostname");
        other_ns.metadata.namespace = "web".into();
        assert_eq!(reasons(&evaluate(&other_ns, &nodes))[0], "fits");
        // Pod affinity: to a running pod's zone; the first pod of a self-selecting group goes anywhere.
        let affinity = |app: &str| {
            test_pod(
                json!({"app": "llm"}),
                json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": zone, "labelSelector": {"matchLabels": {"app": app}}}]}}, "containers": []}),
            )
        };
        assert_eq!(
            reasons(&evaluate(&affinity("llm"), &nodes)),
            vec!["fits", "fits", "node(s) didn't match pod affinity rules"],
            "pod affinity is checked before the running pods' anti-affinity"
        );
        let nodes_without = node_infos(&nodes_objs, &[]);
        assert!(
            evaluate(&affinity("llm"), &nodes_without)
                .iter()
                .all(Result::is_ok),
            "self-affinity: first of its group"
        );
        assert!(
            evaluate(&affinity("db"), &nodes_without)
                .iter()
                .all(|r| reasons(std::slice::from_ref(r))[0]
                    == "node(s) didn't match pod affinity rules")
        );
    }

    #[test]
    fn scheduler_messages_parse_and_sort_as_the_scheduler_does() {
        let (n, r) = parse_scheduler_message("0/12 nodes are available: 1 Insufficient nvidia.com/gpu, 10 node(s) didn't satisfy plugin(s) [NodeAffinity], 1 node(s) had untolerated taint(s). preemption: 0/12 nodes are available: 12 Preemption is not helpful for scheduling.").unwrap();
        assert_eq!(n, 12);
        assert_eq!(r["node(s) didn't satisfy plugin(s) [NodeAffinity]"], 10);
        assert_eq!(r.values().sum::<usize>(), 12);
        let results: Vec<Result<(), Vec<FilterFailure>>> = (0..11)
            .map(|i| {
                Err(vec![if i < 10 {
                    FilterFailure::NotNamed
                } else {
                    FilterFailure::Unschedulable
                }])
            })
            .collect();
        assert_eq!(
            scheduler_message(&results).unwrap(),
            "0/11 nodes are available: 1 node(s) were unschedulable, 10 node(s) didn't satisfy plugin(s) [NodeAffinity].",
            "sorted as strings: \"1 ...\" before \"10 ...\""
        );
        assert_eq!(scheduler_message(&[Ok(())]), None);
        assert_eq!(parse_scheduler_message("pod has unbound PVCs"), None);
    }

    #[test]
    fn drift_and_typos() {
        let nodes = node_infos(&[node("n", json!({"family": "h100"}), json!([]), "8")], &[]);
        let p: ConstraintsPod = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [], "nodeName": "n", "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "family", "operator": "In", "values": ["a100"]}]}]}}}}})).unwrap();
        let d = drift(&p, &nodes[0]).unwrap();
        assert_eq!(d.reason, "family In [a100], node has family=h100");
        assert_eq!(
            nearest_key(
                "accelerator.example.com/gpu-famliy",
                ["accelerator.example.com/gpu-family", "zone"]
            ),
            Some("accelerator.example.com/gpu-family")
        );
        assert_eq!(nearest_key("totally-different", ["zone"]), None);
    }
}
