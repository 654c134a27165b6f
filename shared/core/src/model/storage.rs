//! The storage objects the scheduler's volume filters read, as placekit reads them:
//! PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes, each with only
//! the fields VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits use.
//! Read only when a pending pod mounts a claim (or an inline CSI volume).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::NodeSelector;
use serde::Deserialize;

use super::quantity::quantity_map;

/// Object metadata as the storage objects need it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub deletion_timestamp: Option<String>,
}

/// A PersistentVolumeClaim.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Claim {
    #[serde(default)]
    pub metadata: StorageMeta,
    #[serde(default)]
    pub spec: ClaimSpec,
    #[serde(default)]
    pub status: ClaimStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimSpec {
    /// The PersistentVolume it is bound to (or being bound to).
    #[serde(default)]
    pub volume_name: Option<String>,
    /// `None`: the cluster's default class was not set at creation; `""`: no class.
    #[serde(default)]
    pub storage_class_name: Option<String>,
    #[serde(default)]
    pub access_modes: Vec<String>,
    #[serde(default)]
    pub resources: ClaimResources,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ClaimResources {
    #[serde(default, deserialize_with = "quantity_map")]
    pub requests: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ClaimStatus {
    /// `Pending`, `Bound`, `Lost`.
    #[serde(default)]
    pub phase: Option<String>,
}

impl Claim {
    pub fn is_bound(&self) -> bool {
        self.spec
            .volume_name
            .as_deref()
            .is_some_and(|v| !v.is_empty())
    }

    /// ReadWriteOncePod: one pod in the whole cluster may use it.
    pub fn is_read_write_once_pod(&self) -> bool {
        self.spec
            .access_modes
            .iter()
            .any(|m| m == "ReadWriteOncePod")
    }

    /// The claim's storage class: `""` for none.
    pub fn class(&self) -> &str {
        self.spec.storage_class_name.as_deref().unwrap_or_default()
    }
}

/// A PersistentVolume.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Volume {
    #[serde(default)]
    pub metadata: StorageMeta,
    #[serde(default)]
    pub spec: VolumeSpec,
    #[serde(default)]
    pub status: VolumeStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeSpec {
    #[serde(default)]
    pub storage_class_name: Option<String>,
    #[serde(default)]
    pub node_affinity: Option<VolumeNodeAffinity>,
    #[serde(default)]
    pub claim_ref: Option<ClaimRef>,
    #[serde(default)]
    pub access_modes: Vec<String>,
    #[serde(default, deserialize_with = "quantity_map")]
    pub capacity: BTreeMap<String, String>,
    #[serde(default)]
    pub csi: Option<CsiSource>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct VolumeNodeAffinity {
    #[serde(default)]
    pub required: Option<NodeSelector>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRef {
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiSource {
    #[serde(default)]
    pub driver: String,
    #[serde(default)]
    pub volume_handle: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct VolumeStatus {
    /// `Available`, `Bound`, `Released`, `Failed`, `Pending`.
    #[serde(default)]
    pub phase: Option<String>,
}

impl Volume {
    pub fn class(&self) -> &str {
        self.spec.storage_class_name.as_deref().unwrap_or_default()
    }
}

/// A StorageClass.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageClass {
    #[serde(default)]
    pub metadata: StorageMeta,
    #[serde(default)]
    pub provisioner: String,
    /// `Immediate` (the default) or `WaitForFirstConsumer`.
    #[serde(default)]
    pub volume_binding_mode: Option<String>,
    #[serde(default)]
    pub allowed_topologies: Vec<TopologySelectorTerm>,
}

impl StorageClass {
    pub fn waits_for_first_consumer(&self) -> bool {
        self.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer")
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySelectorTerm {
    #[serde(default)]
    pub match_label_expressions: Vec<TopologyRequirement>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct TopologyRequirement {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub values: Vec<String>,
}

/// A CSINode: how many volumes of each CSI driver the node can attach.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CsiNode {
    #[serde(default)]
    pub metadata: StorageMeta,
    #[serde(default)]
    pub spec: CsiNodeSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CsiNodeSpec {
    #[serde(default)]
    pub drivers: Vec<CsiNodeDriver>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CsiNodeDriver {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub allocatable: Option<CsiAllocatable>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CsiAllocatable {
    #[serde(default)]
    pub count: Option<i64>,
}

/// The storage objects of a cluster a pending pod's volumes lead to: its claims (by
/// namespace and name), their volumes and classes, and the CSINodes.
#[derive(Debug, Clone, Default)]
pub struct Storage {
    pub claims: BTreeMap<(String, String), Claim>,
    pub volumes: BTreeMap<String, Volume>,
    pub classes: BTreeMap<String, StorageClass>,
    /// node -> driver -> the most volumes it can attach.
    pub attach_limits: BTreeMap<String, BTreeMap<String, i64>>,
    /// What could not be read (`cannot list persistentvolumes: forbidden`): the filters
    /// that need it are not predicted.
    pub unreadable: Vec<String>,
}

impl Storage {
    pub fn new(
        claims: Vec<Claim>,
        volumes: Vec<Volume>,
        classes: Vec<StorageClass>,
        csi_nodes: Vec<CsiNode>,
    ) -> Self {
        Storage {
            claims: claims
                .into_iter()
                .map(|c| ((c.metadata.namespace.clone(), c.metadata.name.clone()), c))
                .collect(),
            volumes: volumes
                .into_iter()
                .map(|v| (v.metadata.name.clone(), v))
                .collect(),
            classes: classes
                .into_iter()
                .map(|c| (c.metadata.name.clone(), c))
                .collect(),
            attach_limits: csi_nodes
                .into_iter()
                .map(|n| {
                    let limits = n
                        .spec
                        .drivers
                        .into_iter()
                        .filter_map(|d| Some((d.name, d.allocatable?.count?)))
                        .collect();
                    (n.metadata.name, limits)
                })
                .collect(),
            unreadable: Vec::new(),
        }
    }

    pub fn claim(&self, namespace: &str, name: &str) -> Option<&Claim> {
        self.claims.get(&(namespace.to_string(), name.to_string()))
    }
}
