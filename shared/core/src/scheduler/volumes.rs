//! The scheduler's volume plugins for one pod, as kube-scheduler v1.37 runs them:
//! the PreFilter checks that stop a pod before any node is looked at (a claim that does not
//! exist, is being deleted or lost, an unbound claim of an `Immediate` class), then per node
//! VolumeRestrictions (ReadWriteOncePod), NodeVolumeLimits (CSI attach limits from
//! CSINodes), VolumeBinding (a bound volume's node affinity; an unbound
//! `WaitForFirstConsumer` claim's matching volume or provisioning topology) and VolumeZone.
//! The messages are the scheduler's own.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::node_info::NodeInfo;
use crate::model::Pod;
use crate::model::quantity::parse_quantity_milli;
use crate::model::storage::{Claim, Storage, StorageClass, Volume};
use crate::scheduling::{NodeFacts, terms_match};

/// The annotation the PV controller sets once a claim is fully bound; a claim that names a
/// volume without it is still being bound (the scheduler counts it as unbound Immediate).
const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// The annotation that once named a claim's class, read before `storageClassName`.
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// A class whose volumes are created by hand: nothing is provisioned for its claims.
const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// The labels VolumeZone compares, beta first as the scheduler lists them.
const ZONE_LABELS: [&str; 4] = [
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// Why the volume plugins stop a pod before any node: the PreFilter's message, for every
/// node at once (`UnschedulableAndUnresolvable`: preemption cannot help).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeHold {
    /// The plugin whose PreFilter stops it (VolumeRestrictions, VolumeBinding, VolumeZone).
    pub plugin: String,
    /// The scheduler's words (`pod has unbound immediate PersistentVolumeClaims`).
    pub message: String,
    /// The claims behind it.
    pub claims: Vec<String>,
}

/// A per-node failure of a volume filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeFailure {
    /// VolumeRestrictions: a ReadWriteOncePod claim another pod uses.
    ReadWriteOncePod { claim: String, used_by: String },
    /// NodeVolumeLimits.
    MaxVolumeCount {
        driver: String,
        attached: usize,
        new: usize,
        limit: i64,
    },
    /// VolumeBinding: a bound claim's volume does not exist.
    VolumeMissing { claim: String, volume: String },
    /// VolumeBinding: a bound volume's node affinity excludes the node.
    VolumeNodeAffinity {
        claim: String,
        volume: String,
        /// The first requirement the node does not meet, with what it has.
        unmet: String,
    },
    /// VolumeBinding: an unbound `WaitForFirstConsumer` claim finds no volume here and
    /// cannot be provisioned here.
    NoVolumeToBind { claim: String, why: String },
    /// VolumeZone: a bound volume's zone or region label is not the node's.
    VolumeZone {
        volume: String,
        key: String,
        zones: String,
    },
}

impl VolumeFailure {
    /// The scheduler's reason string.
    pub fn scheduler_reason(&self) -> &'static str {
        match self {
            VolumeFailure::ReadWriteOncePod { .. } => {
                "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
            }
            VolumeFailure::MaxVolumeCount { .. } => "node(s) exceed max volume count",
            VolumeFailure::VolumeMissing { .. } => {
                "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
            }
            VolumeFailure::VolumeNodeAffinity { .. } => {
                "node(s) didn't match PersistentVolume's node affinity"
            }
            VolumeFailure::NoVolumeToBind { .. } => {
                "node(s) didn't find available persistent volumes to bind"
            }
            VolumeFailure::VolumeZone { .. } => "node(s) had no available volume zone",
        }
    }

    /// The plugin that gives it.
    pub fn plugin(&self) -> &'static str {
        match self {
            VolumeFailure::ReadWriteOncePod { .. } => "VolumeRestrictions",
            VolumeFailure::MaxVolumeCount { .. } => "NodeVolumeLimits",
            VolumeFailure::VolumeZone { .. } => "VolumeZone",
            _ => "VolumeBinding",
        }
    }

    /// placekit's detail: which claim, volume, label or driver.
    pub fn detail(&self) -> String {
        match self {
            VolumeFailure::ReadWriteOncePod { claim, used_by } => {
                format!("claim {claim} is ReadWriteOncePod and pod {used_by} uses it")
            }
            VolumeFailure::MaxVolumeCount {
                driver,
                attached,
                new,
                limit,
            } => format!(
                "{driver}: {attached} volume(s) attached + {new} new > {limit} the CSINode allows"
            ),
            VolumeFailure::VolumeMissing { claim, volume } => {
                format!("claim {claim} is bound to PersistentVolume {volume}, which does not exist")
            }
            VolumeFailure::VolumeNodeAffinity {
                claim,
                volume,
                unmet,
            } => format!("PersistentVolume {volume} of claim {claim} needs {unmet}"),
            VolumeFailure::NoVolumeToBind { claim, why } => format!("claim {claim}: {why}"),
            VolumeFailure::VolumeZone { volume, key, zones } => {
                format!("PersistentVolume {volume} is in {key}={zones}")
            }
        }
    }
}

/// A claim of the pod, as VolumeBinding sorts them.
#[derive(Debug, Clone)]
enum PodClaim<'a> {
    Bound {
        claim: &'a Claim,
        volume: Option<&'a Volume>,
    },
    /// Unbound, of a `WaitForFirstConsumer` class: bound or provisioned for the node chosen.
    Delayed {
        claim: &'a Claim,
        class: &'a StorageClass,
    },
}

/// The volume plugins' state for one pod (their PreFilter), computed once.
#[derive(Debug, Clone)]
pub struct PodVolumes<'a> {
    namespace: &'a str,
    pod_name: &'a str,
    hold: Option<VolumeHold>,
    claims: Vec<PodClaim<'a>>,
    /// ReadWriteOncePod claims and the pod that already uses each.
    read_write_once: Vec<(String, String)>,
    /// The CSI volumes the pod would attach: (driver, volume id).
    csi: BTreeSet<(String, String)>,
    storage: Option<&'a Storage>,
}

/// The class a claim names: the beta annotation first, then `storageClassName`.
fn claim_class(claim: &Claim) -> &str {
    claim
        .metadata
        .annotations
        .get(BETA_CLASS)
        .map(String::as_str)
        .unwrap_or_else(|| claim.class())
}

fn fully_bound(claim: &Claim) -> bool {
    claim.is_bound() && claim.metadata.annotations.contains_key(BIND_COMPLETED)
}

impl<'a> PodVolumes<'a> {
    /// The state for `pod` against the cluster's storage objects and the pods on `nodes`
    /// (who already uses a ReadWriteOncePod claim). `storage` is `None` when it was not
    /// read: then a pod with claims is not judged here (the caller says so).
    pub fn new(pod: &'a Pod, nodes: &[NodeInfo], storage: Option<&'a Storage>) -> Self {
        let namespace = pod.metadata.namespace.as_str();
        let mut state = PodVolumes {
            namespace,
            pod_name: pod.metadata.name.as_str(),
            hold: None,
            claims: Vec::new(),
            read_write_once: Vec::new(),
            csi: BTreeSet::new(),
            storage,
        };
        for v in &pod.spec.volumes {
            if let crate::model::pod::VolumeSource::Csi { driver } = &v.source {
                state.csi.insert((
                    driver.clone(),
                    format!("{}/{}/{}", namespace, pod.metadata.name, v.name),
                ));
            }
        }
        let Some(storage) = storage else {
            return state;
        };
        let mut immediate = Vec::new();
        for wanted in pod.spec.volume_claims(&pod.metadata.name) {
            let hold = |message: String| {
                Some(VolumeHold {
                    plugin: "VolumeBinding".into(),
                    message,
                    claims: vec![wanted.name.clone()],
                })
            };
            let Some(claim) = storage.claim(namespace, &wanted.name) else {
                state.hold = hold(if wanted.ephemeral {
                    format!(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim {:?}",
                        wanted.name
                    )
                } else {
                    format!("persistentvolumeclaim {:?} not found", wanted.name)
                });
                // VolumeRestrictions' PreFilter, before VolumeBinding's, finds a missing
                // claim first, with the same words.
                if let (false, Some(h)) = (wanted.ephemeral, state.hold.as_mut()) {
                    h.plugin = "VolumeRestrictions".into();
                }
                return state;
            };
            if claim.status.phase.as_deref() == Some("Lost") {
                state.hold = hold(format!(
                    "persistentvolumeclaim {:?} bound to non-existent persistentvolume {:?}",
                    wanted.name,
                    claim.spec.volume_name.clone().unwrap_or_default()
                ));
                return state;
            }
            if claim.metadata.deletion_timestamp.is_some() {
                state.hold = hold(format!(
                    "persistentvolumeclaim {:?} is being deleted",
                    wanted.name
                ));
                return state;
            }
            if claim.is_read_write_once_pod() {
                let user = nodes.iter().flat_map(|n| &n.pods).find(|p| {
                    p.namespace == namespace
                        && p.name != pod.metadata.name
                        && p.claims.contains(&wanted.name)
                });
                if let Some(user) = user {
                    state.read_write_once.push((
                        wanted.name.clone(),
                        format!("{}/{}", user.namespace, user.name),
                    ));
                }
            }
            if fully_bound(claim) {
                let volume_name = claim.spec.volume_name.as_deref().unwrap_or_default();
                let volume = storage.volumes.get(volume_name);
                if volume.is_none() {
                    // VolumeZone's PreFilter reads every bound claim's volume and stops the
                    // pod there (before VolumeBinding's Filter could say it per node).
                    state.hold = Some(VolumeHold {
                        plugin: "VolumeZone".into(),
                        message: format!("persistentvolume {volume_name:?} not found"),
                        claims: vec![wanted.name.clone()],
                    });
                    return state;
                }
                if let Some(csi) = volume.and_then(|v| v.spec.csi.as_ref()) {
                    state
                        .csi
                        .insert((csi.driver.clone(), csi.volume_handle.clone()));
                }
                state.claims.push(PodClaim::Bound { claim, volume });
                continue;
            }
            let class = storage
                .classes
                .get(claim_class(claim))
                .filter(|_| !claim_class(claim).is_empty());
            match class {
                Some(class) if class.waits_for_first_consumer() && !claim.is_bound() => {
                    if storage
                        .attach_limits
                        .values()
                        .any(|d| d.contains_key(&class.provisioner))
                    {
                        // A new volume of the provisioner's driver, unique to this claim.
                        state.csi.insert((
                            class.provisioner.clone(),
                            format!("{namespace}/{}", wanted.name),
                        ));
                    }
                    state.claims.push(PodClaim::Delayed { claim, class });
                }
                _ => immediate.push(wanted.name.clone()),
            }
        }
        if !immediate.is_empty() {
            state.hold = Some(VolumeHold {
                plugin: "VolumeBinding".into(),
                message: "pod has unbound immediate PersistentVolumeClaims".into(),
                claims: immediate,
            });
        }
        state
    }

    /// Whether the pod mounts any claim.
    pub fn has_claims(pod: &Pod) -> bool {
        pod.spec.volume_claims(&pod.metadata.name).next().is_some()
    }

    /// What stops the pod before any node is looked at.
    pub fn hold(&self) -> Option<&VolumeHold> {
        self.hold.as_ref()
    }

    /// VolumeRestrictions, NodeVolumeLimits, VolumeBinding and VolumeZone on `node`, in
    /// that order: every reason of the first that fails.
    pub fn check(&self, node: &NodeInfo) -> Vec<VolumeFailure> {
        if let Some((claim, used_by)) = self.read_write_once.first() {
            return vec![VolumeFailure::ReadWriteOncePod {
                claim: claim.clone(),
                used_by: used_by.clone(),
            }];
        }
        if let Some(f) = self.volume_limit(node) {
            return vec![f];
        }
        let binding = self.binding(node);
        if !binding.is_empty() {
            return binding;
        }
        self.zone(node).into_iter().collect()
    }

    /// NodeVolumeLimits: per CSI driver the node's CSINode limits, the distinct volumes its
    /// pods attach plus the pod's new ones.
    fn volume_limit(&self, node: &NodeInfo) -> Option<VolumeFailure> {
        let storage = self.storage?;
        let limits = storage.attach_limits.get(&node.name)?;
        if self.csi.is_empty() {
            return None;
        }
        let mut attached: BTreeSet<(String, String)> = BTreeSet::new();
        for p in &node.pods {
            for name in &p.claims {
                let Some(volume) = storage
                    .claim(&p.namespace, name)
                    .and_then(|c| c.spec.volume_name.as_deref())
                    .and_then(|v| storage.volumes.get(v))
                else {
                    continue;
                };
                if let Some(csi) = &volume.spec.csi {
                    attached.insert((csi.driver.clone(), csi.volume_handle.clone()));
                }
            }
            for (i, driver) in p.inline_csi.iter().enumerate() {
                attached.insert((driver.clone(), format!("{}/{}/{i}", p.namespace, p.name)));
            }
        }
        for (driver, limit) in limits {
            let on_node = attached.iter().filter(|(d, _)| d == driver).count();
            let new = self
                .csi
                .iter()
                .filter(|v| v.0 == *driver && !attached.contains(*v))
                .count();
            if new > 0 && (on_node + new) as i64 > *limit {
                return Some(VolumeFailure::MaxVolumeCount {
                    driver: driver.clone(),
                    attached: on_node,
                    new,
                    limit: *limit,
                });
            }
        }
        None
    }

    /// VolumeBinding's Filter: bound volumes' node affinity, then unbound delayed claims'
    /// matching volumes or provisioning.
    fn binding(&self, node: &NodeInfo) -> Vec<VolumeFailure> {
        let facts = NodeFacts {
            name: &node.name,
            labels: &node.labels,
        };
        let mut node_conflict = None;
        let mut missing = None;
        for c in &self.claims {
            let PodClaim::Bound { claim, volume } = c else {
                continue;
            };
            let name = claim.metadata.name.clone();
            let volume_name = claim.spec.volume_name.clone().unwrap_or_default();
            match volume {
                None => {
                    missing = Some(VolumeFailure::VolumeMissing {
                        claim: name,
                        volume: volume_name,
                    });
                    break;
                }
                Some(v) => {
                    let terms = v
                        .spec
                        .node_affinity
                        .as_ref()
                        .and_then(|a| a.required.as_ref())
                        .map(|r| r.node_selector_terms.as_slice());
                    if let Some(terms) = terms.filter(|t| !terms_match(t, facts)) {
                        node_conflict = Some(VolumeFailure::VolumeNodeAffinity {
                            claim: name,
                            volume: volume_name,
                            unmet: unmet_requirement(terms, node),
                        });
                        break;
                    }
                }
            }
        }
        let mut out: Vec<VolumeFailure> = node_conflict.into_iter().collect();
        if let Some(unbound) = self.delayed(node) {
            out.push(unbound);
        }
        out.extend(missing);
        out
    }

    /// An unbound `WaitForFirstConsumer` claim: a claim another node was selected for
    /// (`volume.kubernetes.io/selected-node`) fits only there; otherwise an available volume
    /// of its class that fits (size, access modes, node affinity), each volume chosen once;
    /// otherwise provisioning by the class, which `kubernetes.io/no-provisioner` never does
    /// and `allowedTopologies` limits to the nodes it names.
    fn delayed(&self, node: &NodeInfo) -> Option<VolumeFailure> {
        let storage = self.storage?;
        let facts = NodeFacts {
            name: &node.name,
            labels: &node.labels,
        };
        let mut chosen: BTreeSet<&str> = BTreeSet::new();
        let mut delayed: Vec<(&Claim, &StorageClass)> = self
            .claims
            .iter()
            .filter_map(|c| match c {
                PodClaim::Delayed { claim, class } => Some((*claim, *class)),
                PodClaim::Bound { .. } => None,
            })
            .collect();
        // The smallest claims pick first, as the scheduler sorts them.
        delayed.sort_by_key(|(c, _)| claim_size(c));
        for (claim, class) in delayed {
            let name = claim.metadata.name.clone();
            if let Some(selected) = claim
                .metadata
                .annotations
                .get("volume.kubernetes.io/selected-node")
            {
                if *selected != node.name {
                    return Some(VolumeFailure::NoVolumeToBind {
                        claim: name,
                        why: format!("being provisioned for node {selected}"),
                    });
                }
                continue;
            }
            let found = storage.volumes.values().find(|v| {
                !chosen.contains(v.metadata.name.as_str())
                    && volume_fits(v, claim, claim_class(claim))
                    && v.spec
                        .node_affinity
                        .as_ref()
                        .and_then(|a| a.required.as_ref())
                        .is_none_or(|r| terms_match(&r.node_selector_terms, facts))
            });
            if let Some(v) = found {
                chosen.insert(v.metadata.name.as_str());
                continue;
            }
            if class.provisioner.is_empty() || class.provisioner == NO_PROVISIONER {
                return Some(VolumeFailure::NoVolumeToBind {
                    claim: name,
                    why: format!(
                        "no available PersistentVolume of class {} fits it on this node, and the class provisions none ({})",
                        class.metadata.name, class.provisioner
                    ),
                });
            }
            if !class.allowed_topologies.is_empty()
                && !class.allowed_topologies.iter().any(|term| {
                    term.match_label_expressions.iter().all(|r| {
                        node.labels
                            .get(&r.key)
                            .is_some_and(|v| r.values.contains(v))
                    })
                })
            {
                let allowed: Vec<String> = class
                    .allowed_topologies
                    .iter()
                    .flat_map(|t| &t.match_label_expressions)
                    .map(|r| format!("{} in [{}]", r.key, r.values.join(", ")))
                    .collect();
                return Some(VolumeFailure::NoVolumeToBind {
                    claim: name,
                    why: format!(
                        "StorageClass {} provisions only where {}",
                        class.metadata.name,
                        allowed.join(" or ")
                    ),
                });
            }
        }
        None
    }

    /// VolumeZone: on a node with any zone or region label, every bound volume's zone and
    /// region labels must hold the node's value (a volume's `a__b` names several zones).
    fn zone(&self, node: &NodeInfo) -> Option<VolumeFailure> {
        if !ZONE_LABELS.iter().any(|k| node.labels.contains_key(*k)) {
            return None;
        }
        for c in &self.claims {
            let PodClaim::Bound {
                volume: Some(v), ..
            } = c
            else {
                continue;
            };
            for key in ZONE_LABELS {
                let Some(zones) = v.metadata.labels.get(key) else {
                    continue;
                };
                let ga = key.replace(
                    "failure-domain.beta.kubernetes.io",
                    "topology.kubernetes.io",
                );
                let value = node.labels.get(key).or_else(|| node.labels.get(&ga));
                let set: BTreeSet<&str> = zones.split("__").map(str::trim).collect();
                if value.is_none_or(|v| !set.contains(v.as_str())) {
                    return Some(VolumeFailure::VolumeZone {
                        volume: v.metadata.name.clone(),
                        key: key.to_string(),
                        zones: zones.clone(),
                    });
                }
            }
        }
        None
    }

    /// `namespace/pod`, for messages.
    pub fn pod(&self) -> String {
        format!("{}/{}", self.namespace, self.pod_name)
    }
}

fn claim_size(claim: &Claim) -> i128 {
    claim
        .spec
        .resources
        .requests
        .get("storage")
        .and_then(|q| parse_quantity_milli(q))
        .unwrap_or(0)
}

/// Whether an unbound volume can take the claim (`FindMatchingVolume`, in short): its
/// class, not bound to another claim, big enough, every access mode the claim asks for.
fn volume_fits(volume: &Volume, claim: &Claim, class: &str) -> bool {
    let for_claim =
        volume.spec.claim_ref.as_ref().is_none_or(|r| {
            r.namespace == claim.metadata.namespace && r.name == claim.metadata.name
        });
    let available = matches!(volume.status.phase.as_deref(), None | Some("Available"))
        || volume.spec.claim_ref.is_some();
    let capacity = volume
        .spec
        .capacity
        .get("storage")
        .and_then(|q| parse_quantity_milli(q))
        .unwrap_or(0);
    let modes: BTreeMap<&str, ()> = volume
        .spec
        .access_modes
        .iter()
        .map(|m| (m.as_str(), ()))
        .collect();
    volume.class() == class
        && for_claim
        && available
        && volume.metadata.deletion_timestamp.is_none()
        && capacity >= claim_size(claim)
        && claim
            .spec
            .access_modes
            .iter()
            .all(|m| modes.contains_key(m.as_str()))
}

/// The first requirement of the first term that `node` does not meet, as the node affinity
/// detail says it (`topology.kubernetes.io/zone In [zone-d], node has
/// topology.kubernetes.io/zone=zone-a`).
fn unmet_requirement(
    terms: &[k8s_openapi::api::core::v1::NodeSelectorTerm],
    node: &NodeInfo,
) -> String {
    for term in terms {
        for r in term.match_expressions.iter().flatten() {
            if crate::scheduling::expression_matches(r, &node.labels) != Some(true) {
                let values = r.values.as_deref().unwrap_or_default().join(", ");
                let has = node
                    .labels
                    .get(&r.key)
                    .map(|v| format!("{}={v}", r.key))
                    .unwrap_or_else(|| format!("no {}", r.key));
                return format!("{} {} [{values}], node has {has}", r.key, r.operator);
            }
        }
        for r in term.match_fields.iter().flatten() {
            if crate::scheduling::field_matches(r, &node.name) != Some(true) {
                let values = r.values.as_deref().unwrap_or_default().join(", ");
                return format!("{} {} [{values}]", r.key, r.operator);
            }
        }
    }
    "a node its nodeAffinity selects".into()
}
