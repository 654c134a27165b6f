//! What why-pending reads: the cluster's nodes with the active pods bound to them
//! ([`cluster_state`], also where a change's evicted pods go), and beyond nodes, pods and
//! DRA, only when a pod judged needs it: the
//! storage objects behind its claims (one paged list each of PersistentVolumeClaims,
//! PersistentVolumes, StorageClasses and CSINodes) and its gang's PodGroups (one list per
//! PodGroup kind its pods name, where the cluster serves it). Never a call per pod.

use crate::error::CommandError;
use placekit_client::api::{self, Listed};
use placekit_client::connect::Connection;
use placekit_core::model::storage::{Claim, CsiNode, Storage, StorageClass, Volume};
use placekit_core::model::{Node, Pod};
use placekit_core::scheduler::gang::{GangKind, PodGroup};
use placekit_core::scheduler::{BoundPods, NodeInfo};
use serde_json::Value;

/// Page size of the storage and PodGroup lists.
const PAGE: u32 = 500;
/// Page size of the whole cluster's node and pod lists ([`cluster_state`]).
const CLUSTER_PAGE: u32 = 5_000;

/// Reads the claims (of `namespace`, or every namespace), every PersistentVolume,
/// StorageClass and CSINode. A list RBAC forbids is kept in `unreadable`: the volume
/// filters are then not predicted for the pods that need it.
pub async fn read_storage(
    conn: &Connection,
    namespace: Option<&str>,
) -> Result<Storage, CommandError> {
    let mut claims: Vec<Claim> = Vec::new();
    let mut volumes: Vec<Volume> = Vec::new();
    let mut classes: Vec<StorageClass> = Vec::new();
    let mut csi_nodes: Vec<CsiNode> = Vec::new();
    let mut unreadable = Vec::new();
    let claims_at = match namespace {
        Some(ns) => format!("/api/v1/namespaces/{ns}/persistentvolumeclaims"),
        None => "/api/v1/persistentvolumeclaims".to_string(),
    };
    let listed = [
        api::for_each_page_if_served(&conn.client, &claims_at, PAGE, |p: Vec<Claim>| {
            claims.extend(p)
        })
        .await?,
        api::for_each_page_if_served(
            &conn.client,
            "/api/v1/persistentvolumes",
            PAGE,
            |p: Vec<Volume>| volumes.extend(p),
        )
        .await?,
        api::for_each_page_if_served(
            &conn.client,
            "/apis/storage.k8s.io/v1/storageclasses",
            PAGE,
            |p: Vec<StorageClass>| classes.extend(p),
        )
        .await?,
    ];
    for l in listed {
        if let Listed::Forbidden(message) = l {
            unreadable.push(message);
        }
    }
    // CSINodes only limit attachments: without them no limit is known, as for the
    // scheduler on a node without one.
    if let Listed::Forbidden(message) = api::for_each_page_if_served(
        &conn.client,
        "/apis/storage.k8s.io/v1/csinodes",
        PAGE,
        |p: Vec<CsiNode>| csi_nodes.extend(p),
    )
    .await?
    {
        unreadable.push(message);
    }
    // Attach limits count the volumes of every pod on a node, whatever its namespace: with
    // limits published, the claims of every namespace are read where RBAC allows it.
    let limited = csi_nodes.iter().any(|n| {
        n.spec
            .drivers
            .iter()
            .any(|d| d.allocatable.as_ref().is_some_and(|a| a.count.is_some()))
    });
    if namespace.is_some() && limited {
        let mut all: Vec<Claim> = Vec::new();
        if let Listed::Read(_) = api::for_each_page_if_served(
            &conn.client,
            "/api/v1/persistentvolumeclaims",
            PAGE,
            |p: Vec<Claim>| all.extend(p),
        )
        .await?
        {
            claims = all;
        }
    }
    let mut storage = Storage::new(claims, volumes, classes, csi_nodes);
    storage.unreadable = unreadable;
    Ok(storage)
}

/// Where each kind's PodGroups are served.
fn collection(kind: GangKind, namespace: Option<&str>) -> String {
    let (group_version, plural) = match kind {
        GangKind::Volcano => ("scheduling.volcano.sh/v1beta1", "podgroups"),
        GangKind::Kai => ("scheduling.run.ai/v2alpha2", "podgroups"),
        GangKind::Coscheduling => ("scheduling.x-k8s.io/v1alpha1", "podgroups"),
        GangKind::Kubernetes => ("scheduling.k8s.io/v1beta1", "podgroups"),
    };
    match namespace {
        Some(ns) => format!("/apis/{group_version}/namespaces/{ns}/{plural}"),
        None => format!("/apis/{group_version}/{plural}"),
    }
}

/// Reads the PodGroups of `kinds` (of `namespace`, or every namespace). A kind the cluster
/// does not serve has none; one RBAC forbids is said in the notes.
pub async fn read_pod_groups(
    conn: &Connection,
    namespace: Option<&str>,
    kinds: &[GangKind],
) -> Result<(Vec<PodGroup>, Vec<String>), CommandError> {
    let mut groups = Vec::new();
    let mut notes = Vec::new();
    for kind in kinds {
        let listed = api::for_each_page_if_served(
            &conn.client,
            &collection(*kind, namespace),
            PAGE,
            |page: Vec<Value>| groups.extend(page.iter().map(|g| pod_group(*kind, g))),
        )
        .await?;
        if let Listed::Forbidden(message) = listed {
            notes.push(message);
        }
    }
    Ok((groups, notes))
}

/// A PodGroup object of `kind`, as its scheduler writes it.
fn pod_group(kind: GangKind, object: &Value) -> PodGroup {
    let text = |v: &Value| v.as_str().map(str::to_string);
    let min_member = match kind {
        GangKind::Kubernetes => &object["spec"]["schedulingPolicy"]["gang"]["minCount"],
        _ => &object["spec"]["minMember"],
    }
    .as_i64()
    .unwrap_or(1);
    let queue = text(&object["spec"]["queue"]);
    let phase = text(&object["status"]["phase"]);
    // The condition that says why the group waits: Volcano's and coscheduling's
    // `Unschedulable`, KAI's scheduling conditions, Kubernetes' `PodGroupInitiallyScheduled`.
    let conditions = object["status"]["conditions"]
        .as_array()
        .into_iter()
        .chain(object["status"]["schedulingConditions"].as_array())
        .flatten();
    let waiting = conditions
        .filter(|c| {
            matches!(
                c["type"].as_str(),
                Some("Unschedulable" | "PodGroupInitiallyScheduled" | "UnschedulableOnNodePool")
            ) || c["reason"].as_str() == Some("Unschedulable")
        })
        .filter(|c| c["type"] != "PodGroupInitiallyScheduled" || c["status"] == "False")
        .filter_map(|c| {
            let reason = c["reason"].as_str().unwrap_or_default();
            let message = c["message"].as_str().unwrap_or_default();
            (!reason.is_empty() || !message.is_empty()).then(|| {
                if message.is_empty() {
                    reason.to_string()
                } else {
                    format!("{reason}: {message}")
                }
            })
        })
        .next_back();
    let says = match (phase, waiting) {
        (Some(p), Some(w)) => Some(format!("phase {p}; {w}")),
        (Some(p), None) => Some(format!("phase {p}")),
        (None, w) => w,
    };
    PodGroup {
        kind,
        namespace: text(&object["metadata"]["namespace"]).unwrap_or_default(),
        name: text(&object["metadata"]["name"]).unwrap_or_default(),
        min_member,
        queue,
        says,
    }
}

/// Nodes and active pods, from two paged lists; returns the node infos and the pending pods
/// (the others live on in their nodes' infos).
pub async fn cluster_state(conn: &Connection) -> Result<(Vec<NodeInfo>, Vec<Pod>), CommandError> {
    let mut nodes: Vec<Node> = Vec::new();
    api::for_each_page(
        &conn.client,
        "/api/v1/nodes",
        None,
        None,
        CLUSTER_PAGE,
        |p| nodes.extend(p),
    )
    .await?;
    // Each page is folded into its nodes as it arrives; only the pending pods are kept
    // whole (what is judged), so memory follows the nodes and what the inter-pod filters
    // keep of each bound pod, not 150,000 whole pods.
    let mut bound = BoundPods::default();
    let mut pending: Vec<Pod> = Vec::new();
    api::for_each_page(
        &conn.client,
        "/api/v1/pods",
        Some("status.phase!=Succeeded,status.phase!=Failed"),
        None,
        CLUSTER_PAGE,
        |page: Vec<Pod>| {
            for pod in page {
                bound.add(&pod);
                if pod.status.phase.as_deref() == Some("Pending") {
                    pending.push(pod);
                }
            }
        },
    )
    .await?;
    Ok((bound.into_node_infos(&nodes), pending))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_schedulers_pod_group_says_its_minimum_and_why_it_waits() {
        let volcano = pod_group(
            GangKind::Volcano,
            &json!({"metadata": {"name": "train", "namespace": "ml"},
                "spec": {"minMember": 4, "queue": "research"},
                "status": {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True",
                    "reason": "NotEnoughResources", "message": "3/4 tasks in gang unschedulable"}]}}),
        );
        assert_eq!(volcano.min_member, 4);
        assert_eq!(volcano.queue.as_deref(), Some("research"));
        assert_eq!(
            volcano.says.as_deref(),
            Some("phase Pending; NotEnoughResources: 3/4 tasks in gang unschedulable")
        );
        let kubernetes = pod_group(
            GangKind::Kubernetes,
            &json!({"metadata": {"name": "g", "namespace": "ml"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 8}}},
                "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False",
                    "reason": "Unschedulable", "message": "minCount (8) cannot be satisfied"}]}}),
        );
        assert_eq!(kubernetes.min_member, 8);
        assert_eq!(
            kubernetes.says.as_deref(),
            Some("Unschedulable: minCount (8) cannot be satisfied")
        );
        assert_eq!(
            collection(GangKind::Kai, Some("ml")),
            "/apis/scheduling.run.ai/v2alpha2/namespaces/ml/podgroups"
        );
    }
}
