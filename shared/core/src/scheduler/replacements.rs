//! Where the pods a change evicts go next: a NoExecute taint evicts the pods that do not
//! tolerate it, their controllers create replacements, and kube-scheduler places each one
//! through the same filters as any pod. Judged here against the cluster as the change
//! leaves it (the changed nodes with their new labels and taints, the evicted pods gone
//! from them), one replacement after another, each taking room on the node it is expected
//! on, so two replacements do not both count on one free GPU.
//!
//! Which node the scheduler picks among those that fit is its scores' business; for the
//! room the next replacement sees, the one with the most of the replacement's largest
//! request left is taken (NodeResourcesFit's default, LeastAllocated). What is said is the
//! set of nodes that fit, which does not depend on that choice for the first replacement
//! of a controller, and "stays Pending" with the scheduler's own message when none does.
//!
//! A replacement keeps its pod's claims (a StatefulSet's pod comes back with its name and
//! so its PersistentVolumeClaims; a Deployment's pods share theirs): with the cluster's
//! storage read, the volume filters judge it too, so a pod on a node-local volume is said to
//! stay Pending rather than to fit elsewhere. A generic ephemeral volume's claim is made
//! anew for the replacement, and DRA claims are not followed: those are not judged here.

use std::collections::BTreeMap;

use serde::Serialize;

use super::filters::PodFilters;
use super::message::scheduler_message;
use super::node_info::{NodeInfo, PlacedPod};
use super::volumes::PodVolumes;
use crate::model::Pod;
use crate::model::pod::{VolumeSource, controller_of};
use crate::model::storage::Storage;
use crate::syntax::Taint;

/// A changed node as the change leaves it.
#[derive(Debug, Clone)]
pub struct NodeAfter {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
}

/// Where one evicted pod's replacement goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "landing")]
pub enum Landing {
    /// The replacement fits on these nodes (sorted).
    Fits { nodes: Vec<String> },
    /// No node fits: the replacement stays Pending; the scheduler's FailedScheduling
    /// message for it.
    Pending { message: String },
    /// Nothing replaces it: a bare pod, or a DaemonSet's (which is never placed again on a
    /// node whose taint it does not tolerate).
    NotReplaced,
    /// Not judged, for the reason given: it asks for DRA devices, mounts a generic
    /// ephemeral volume (whose claim is made anew), or mounts claims the storage objects of
    /// which could not be read (why-pending judges the replacement once it exists).
    NotJudged { why: &'static str },
}

/// One evicted pod and where its replacement goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replacement {
    pub namespace: String,
    pub pod: String,
    /// Its controller as a person names it: `Deployment NAME` for a ReplicaSet of a
    /// Deployment (by the `pod-template-hash` in its name), else `KIND NAME`.
    pub controller: Option<String>,
    #[serde(flatten)]
    pub landing: Landing,
}

/// The controller of `pod` as a person names it.
pub fn controller_name(pod: &Pod) -> Option<String> {
    let (kind, name) = controller_of(&pod.metadata.owner_references)?;
    if kind == "ReplicaSet"
        && let Some(hash) = pod.metadata.labels.get("pod-template-hash")
        && let Some(deployment) = name.strip_suffix(&format!("-{hash}"))
    {
        return Some(format!("Deployment {deployment}"));
    }
    Some(format!("{kind} {name}"))
}

/// Where the replacements of `evicted` go, over `nodes` (every node, with the active pods
/// bound to it, as read before the change) once `changed` apply, with the claims of those
/// that mount any judged over `storage` (`None`: not read, those are not judged).
pub fn replacements(
    evicted: &[&Pod],
    mut nodes: Vec<NodeInfo>,
    changed: &[NodeAfter],
    storage: Option<&Storage>,
) -> Vec<Replacement> {
    for after in changed {
        if let Some(node) = nodes.iter_mut().find(|n| n.name == after.name) {
            node.labels = after.labels.clone();
            node.taints = after.taints.clone();
        }
    }
    for pod in evicted {
        let Some(node) = nodes
            .iter_mut()
            .find(|n| Some(n.name.as_str()) == pod.spec.node_name.as_deref())
        else {
            continue;
        };
        let before = node.pods.len();
        node.pods
            .retain(|p| !(p.namespace == pod.metadata.namespace && p.name == pod.metadata.name));
        if node.pods.len() < before {
            node.pod_count = node.pod_count.saturating_sub(1);
            for (resource, quantity) in PlacedPod::of(pod).requests {
                if let Some(requested) = node.requested.get_mut(&resource) {
                    *requested -= quantity;
                }
            }
        }
    }
    evicted
        .iter()
        .map(|pod| {
            let landing = match controller_of(&pod.metadata.owner_references) {
                None | Some(("DaemonSet", _)) => Landing::NotReplaced,
                Some(_) => match storage_for(pod, storage) {
                    Ok(storage) => place(pod, &mut nodes, storage),
                    Err(NotJudged(why)) => Landing::NotJudged { why },
                },
            };
            Replacement {
                namespace: pod.metadata.namespace.clone(),
                pod: pod.metadata.name.clone(),
                controller: controller_name(pod),
                landing,
            }
        })
        .collect()
}

/// A replacement that is not judged here, and why.
struct NotJudged(&'static str);

/// The storage the replacement of `pod` is judged with: none when it mounts no claim
/// (inline CSI volumes aside, whose attach limits are then judged too), `NotJudged` when its
/// claims cannot be followed (DRA; a generic ephemeral volume; storage not read or
/// partly unreadable).
fn storage_for<'s>(
    pod: &Pod,
    storage: Option<&'s Storage>,
) -> Result<Option<&'s Storage>, NotJudged> {
    if !pod.spec.resource_claims.is_empty() {
        return Err(NotJudged("it asks for DRA devices"));
    }
    if pod
        .spec
        .volumes
        .iter()
        .any(|v| matches!(v.source, VolumeSource::Ephemeral))
    {
        return Err(NotJudged(
            "its generic ephemeral volume's claim is made anew",
        ));
    }
    if !PodVolumes::has_claims(pod) {
        return Ok(storage.filter(|s| s.unreadable.is_empty()));
    }
    match storage {
        Some(storage) if storage.unreadable.is_empty() => Ok(Some(storage)),
        _ => Err(NotJudged("its claims' storage objects could not be read")),
    }
}

/// Judges the replacement of `pod` (the same spec, not bound) and takes its room on the
/// node it is expected on.
fn place(pod: &Pod, nodes: &mut [NodeInfo], storage: Option<&Storage>) -> Landing {
    let mut replacement = pod.clone();
    replacement.spec.node_name = None;
    replacement.metadata.deletion_timestamp = None;
    let results: Vec<_> = {
        let mut filters = PodFilters::new(&replacement, nodes);
        if let Some(storage) = storage {
            filters = filters.with_volumes(PodVolumes::new(&replacement, nodes, Some(storage)));
        }
        nodes.iter().map(|n| filters.check(n)).collect()
    };
    let fits: Vec<usize> = results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.is_ok().then_some(i))
        .collect();
    if fits.is_empty() {
        return Landing::Pending {
            message: scheduler_message(&results).unwrap_or_default(),
        };
    }
    let placed = PlacedPod::of(&replacement);
    let largest = placed
        .requests
        .iter()
        .filter(|(r, _)| r != "pods")
        .max_by_key(|(_, q)| *q)
        .map(|(r, _)| r.clone());
    let left = |node: &NodeInfo| {
        largest.as_ref().map_or(0, |r| {
            node.allocatable.get(r).copied().unwrap_or(0)
                - node.requested.get(r).copied().unwrap_or(0)
        })
    };
    let chosen = *fits
        .iter()
        .max_by_key(|&&i| (left(&nodes[i]), std::cmp::Reverse(nodes[i].name.clone())))
        .expect("fits is not empty");
    let mut names: Vec<String> = fits.iter().map(|&i| nodes[i].name.clone()).collect();
    names.sort();
    let node = &mut nodes[chosen];
    node.pod_count += 1;
    for (resource, quantity) in &placed.requests {
        *node.requested.entry(resource.clone()).or_default() += quantity;
    }
    node.pods.push(placed);
    Landing::Fits { nodes: names }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::TaintEffect;

    fn node(name: &str, gpus: i128, used: i128) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            labels: [("pool".to_string(), "a".to_string())].into(),
            allocatable: [
                ("nvidia.com/gpu".to_string(), gpus * 1000),
                ("pods".to_string(), 110_000),
            ]
            .into(),
            requested: [("nvidia.com/gpu".to_string(), used * 1000)].into(),
            ready: true,
            ..NodeInfo::default()
        }
    }

    fn pod(name: &str, on: &str, owner: Option<(&str, &str)>) -> Pod {
        let owners = owner
            .map(|(kind, name)| {
                serde_json::json!([{"kind": kind, "name": name, "controller": true}])
            })
            .unwrap_or(serde_json::json!([]));
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ml", "ownerReferences": owners,
                         "labels": {"pod-template-hash": "abc12"}},
            "spec": {"nodeName": on, "nodeSelector": {"pool": "a"},
                     "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}
        }))
        .unwrap()
    }

    fn tainted(name: &str) -> NodeAfter {
        NodeAfter {
            name: name.into(),
            labels: [("pool".to_string(), "a".to_string())].into(),
            taints: vec![Taint {
                key: "dedicated".into(),
                value: Some("llm".into()),
                effect: TaintEffect::NoExecute,
                time_added: None,
            }],
        }
    }

    #[test]
    fn replacements_take_room_one_after_another() {
        let a = pod("a", "n1", Some(("ReplicaSet", "infer-abc12")));
        let b = pod("b", "n1", Some(("ReplicaSet", "infer-abc12")));
        let bare = pod("bare", "n1", None);
        let mut nodes = vec![node("n1", 8, 3), node("n2", 2, 1)];
        let placed = PlacedPod::of(&a);
        nodes[0].pods = vec![placed, PlacedPod::of(&b), PlacedPod::of(&bare)];
        let out = replacements(&[&a, &b, &bare], nodes, &[tainted("n1")], None);
        assert_eq!(out[0].controller.as_deref(), Some("Deployment infer"));
        assert_eq!(
            out[0].landing,
            Landing::Fits {
                nodes: vec!["n2".into()]
            }
        );
        // n2 had one GPU free; the first replacement took it.
        match &out[1].landing {
            Landing::Pending { message } => assert_eq!(
                message,
                "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s)."
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(out[2].landing, Landing::NotReplaced);
    }
}
