//! Server-side printing (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), what
//! `kubectl get` asks for: the columns of kube-apiserver's printers, for nodes and pods
//! (`kubectl get nodes|pods` and `-o wide`). Other resources answer their plain list and
//! kubectl falls back to its `NAME AGE` columns.

use serde_json::{Value, json};

/// Whether the request asks for a Table (kubectl lists it first in `Accept`).
pub fn wants_table(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',')
            .next()
            .is_some_and(|first| first.contains("as=Table") && first.contains("g=meta.k8s.io"))
    })
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const ADDRESSES_DESCRIPTION: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

/// The node printer's columns: (name, format, description, priority).
const NODE_COLUMNS: &[(&str, &str, &str, u8)] = &[
    ("Name", "name", NAME_DESCRIPTION, 0),
    ("Status", "", "The status of the node", 0),
    ("Roles", "", "The roles of the node", 0),
    ("Age", "", AGE_DESCRIPTION, 0),
    ("Version", "", "Kubelet Version reported by the node.", 0),
    ("Internal-IP", "", ADDRESSES_DESCRIPTION, 1),
    ("External-IP", "", ADDRESSES_DESCRIPTION, 1),
    (
        "OS-Image",
        "",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        1,
    ),
    (
        "Kernel-Version",
        "",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        1,
    ),
    (
        "Container-Runtime",
        "",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        1,
    ),
];

/// The pod printer's columns.
const POD_COLUMNS: &[(&str, &str, &str, u8)] = &[
    ("Name", "name", NAME_DESCRIPTION, 0),
    (
        "Ready",
        "",
        "The aggregate readiness state of this pod for accepting traffic.",
        0,
    ),
    (
        "Status",
        "",
        "The aggregate status of the containers in this pod.",
        0,
    ),
    (
        "Restarts",
        "",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        0,
    ),
    ("Age", "", AGE_DESCRIPTION, 0),
    (
        "IP",
        "",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        1,
    ),
    (
        "Node",
        "",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        1,
    ),
    (
        "Nominated Node",
        "",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
        1,
    ),
    (
        "Readiness Gates",
        "",
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        1,
    ),
];

/// Whether the test server prints this kind as a Table.
pub fn printable(kind: &str) -> bool {
    matches!(kind, "Node" | "Pod")
}

/// A Table of stored objects of a [`printable`] kind, with the list's metadata.
pub fn table(kind: &str, objects: &[Value], metadata: Value, now: jiff::Timestamp) -> Value {
    let (columns, cells): (_, fn(&Value, jiff::Timestamp) -> Vec<Value>) = match kind {
        "Pod" => (POD_COLUMNS, pod_cells),
        _ => (NODE_COLUMNS, node_cells),
    };
    let columns: Vec<Value> = columns
        .iter()
        .map(|(name, format, description, priority)| {
            json!({"name": name, "type": "string", "format": format,
                   "description": description, "priority": priority})
        })
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let mut row = json!({
                "cells": cells(object, now),
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                           "metadata": object["metadata"]},
            });
            if kind == "Pod" {
                // `podSuccessConditions` / `podFailedConditions`.
                let done = match object["status"]["phase"].as_str() {
                    Some("Succeeded") => Some(("Succeeded", "The pod has completed successfully.")),
                    Some("Failed") => Some(("Failed", "The pod failed.")),
                    _ => None,
                };
                if let Some((reason, message)) = done {
                    row["conditions"] = json!([{"type": "Completed", "status": "True",
                                                "reason": reason, "message": message}]);
                }
            }
            row
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
           "columnDefinitions": columns, "rows": rows})
}

fn age(object: &Value, now: jiff::Timestamp) -> String {
    object["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or_else(
            || "<unknown>".to_string(),
            |created| human_duration(now.duration_since(created)),
        )
}

/// `printPod`: ready containers of all (restartable init containers count), the status the
/// container states give (waiting and terminated reasons, `Init:` while initialising,
/// `Terminating`, `SchedulingGated`), restarts, age; then IP, node, nominated node and
/// readiness gates.
fn pod_cells(pod: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let spec = &pod["spec"];
    let status = &pod["status"];
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let phase = text(&status["phase"]);
    let mut reason = match status["reason"].as_str() {
        Some(r) if !r.is_empty() => r.to_string(),
        _ => phase.clone(),
    };
    if list(&status["conditions"])
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let init_specs = list(&spec["initContainers"]);
    let restartable = |name: &Value| {
        init_specs
            .iter()
            .any(|c| c["name"] == *name && c["restartPolicy"] == "Always")
    };
    let total = list(&spec["containers"]).len()
        + init_specs
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut restartable_restarts = 0;
    let mut initializing = false;
    let init_statuses = list(&status["initContainerStatuses"]);
    for (i, c) in init_statuses.iter().enumerate() {
        let count = c["restartCount"].as_i64().unwrap_or(0);
        restarts += count;
        if restartable(&c["name"]) {
            restartable_restarts += count;
        }
        let terminated = &c["state"]["terminated"];
        let waiting = &c["state"]["waiting"];
        if terminated.is_object() && terminated["exitCode"].as_i64().unwrap_or(0) == 0 {
            continue;
        }
        if restartable(&c["name"]) && c["started"] == true {
            if c["ready"] == true {
                ready += 1;
            }
            continue;
        }
        reason = if terminated.is_object() {
            format!("Init:{}", terminated_reason(terminated))
        } else if waiting["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty() && r != "PodInitializing")
        {
            format!("Init:{}", text(&waiting["reason"]))
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }
    let initialized = list(&status["conditions"])
        .iter()
        .any(|c| c["type"] == "Initialized" && c["status"] == "True");
    if !initializing || initialized {
        restarts = restartable_restarts;
        let mut running = false;
        let mut error_reason = String::new();
        for c in list(&status["containerStatuses"]).iter().rev() {
            restarts += c["restartCount"].as_i64().unwrap_or(0);
            let waiting = &c["state"]["waiting"];
            let terminated = &c["state"]["terminated"];
            if waiting["reason"].as_str().is_some_and(|r| !r.is_empty()) {
                reason = text(&waiting["reason"]);
            } else if terminated.is_object() {
                reason = terminated_reason(terminated);
                if terminated["exitCode"].as_i64().unwrap_or(0) != 0 {
                    error_reason = reason.clone();
                }
            } else if c["ready"] == true && c["state"]["running"].is_object() {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" {
            let pod_ready = list(&status["conditions"])
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            if running && pod_ready {
                reason = "Running".into();
            } else if !error_reason.is_empty() {
                reason = error_reason;
            } else if running {
                reason = "NotReady".into();
            }
        }
    }
    let terminal = matches!(phase.as_str(), "Succeeded" | "Failed");
    if pod["metadata"]["deletionTimestamp"].is_string() {
        if status["reason"] == "NodeLost" {
            reason = "Unknown".into();
        } else if !terminal {
            reason = "Terminating".into();
        }
    }
    let or_none = |s: String| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s
        }
    };
    let ip = list(&status["podIPs"])
        .first()
        .map(|p| text(&p["ip"]))
        .unwrap_or_default();
    let gates = list(&spec["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = list(&status["conditions"]);
        let passed = gates
            .iter()
            .filter(|g| {
                conditions
                    .iter()
                    .any(|c| c["type"] == g["conditionType"] && c["status"] == "True")
            })
            .count();
        format!("{passed}/{}", gates.len())
    };
    vec![
        json!(text(&pod["metadata"]["name"])),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts.to_string()),
        json!(age(pod, now)),
        json!(or_none(ip)),
        json!(or_none(text(&spec["nodeName"]))),
        json!(or_none(text(&status["nominatedNodeName"]))),
        json!(readiness_gates),
    ]
}

/// `printNode`: status from the Ready condition (and SchedulingDisabled), roles from the
/// `node-role.kubernetes.io/*` and `kubernetes.io/role` labels, age, kubelet version, the
/// first internal and external address, and the node info.
fn node_cells(node: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut status: Vec<String> = Vec::new();
    let conditions = node["status"]["conditions"].as_array();
    if let Some(ready) = conditions
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
    {
        status.push(if ready["status"] == "True" {
            "Ready".into()
        } else {
            "NotReady".into()
        });
    }
    if status.is_empty() {
        status.push("Unknown".into());
    }
    if node["spec"]["unschedulable"] == true {
        status.push("SchedulingDisabled".into());
    }
    let mut roles: Vec<String> = node["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) => Some(role.to_string()),
            None if k == "kubernetes.io/role" => v.as_str().map(str::to_string),
            None => None,
        })
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort();
    roles.dedup();
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    };
    let age = age(node, now);
    let address = |kind: &str| {
        node["status"]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["type"] == kind)
            .map_or_else(|| "<none>".to_string(), |a| text(&a["address"]))
    };
    let info = &node["status"]["nodeInfo"];
    let or_unknown = |v: &Value| match v.as_str() {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => "<unknown>".to_string(),
    };
    vec![
        json!(text(&node["metadata"]["name"])),
        json!(status.join(",")),
        json!(roles),
        json!(age),
        json!(text(&info["kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(or_unknown(&info["osImage"])),
        json!(or_unknown(&info["kernelVersion"])),
        json!(or_unknown(&info["containerRuntimeVersion"])),
    ]
}

/// What a terminated container state says: its reason, else the signal, else the exit code.
fn terminated_reason(terminated: &Value) -> String {
    match terminated["reason"].as_str() {
        Some(r) if !r.is_empty() => r.to_string(),
        _ => match terminated["signal"].as_i64().filter(|s| *s != 0) {
            Some(signal) => format!("Signal:{signal}"),
            None => format!("ExitCode:{}", terminated["exitCode"].as_i64().unwrap_or(0)),
        },
    }
}

/// apimachinery's `duration.HumanDuration`: `45s`, `5m3s`, `3h20m`, `2d5h`, `3y10d`.
pub fn human_duration(d: jiff::SignedDuration) -> String {
    let seconds = d.as_secs();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_kubectl_prints_them() {
        let d = jiff::SignedDuration::from_secs;
        for (secs, text) in [
            (-5, "<invalid>"),
            (0, "0s"),
            (119, "119s"),
            (5 * 60 + 3, "5m3s"),
            (10 * 60, "10m"),
            (3 * 3600 + 20 * 60, "3h20m"),
            (30 * 3600, "30h"),
            (2 * 86400 + 5 * 3600, "2d5h"),
            (30 * 86400, "30d"),
            ((3 * 365 + 10) * 86400, "3y10d"),
        ] {
            assert_eq!(human_duration(d(secs)), text, "{secs}");
        }
    }

    #[test]
    fn kubectl_asks_for_a_table_first() {
        assert!(wants_table(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        )));
        assert!(!wants_table(Some("application/json")));
        assert!(!wants_table(None));
    }
}
