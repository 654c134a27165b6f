//! Objects kubectl writes as protobuf: its typed clients send `kubectl create configmap`,
//! `create deployment`, `create service`, `create job`, `create cronjob`, `create pdb`,
//! `create namespace` and `kubectl run` as `application/vnd.kubernetes.protobuf`. This
//! decodes them into the JSON the store keeps, from tables of the fields of each message
//! (numbers as in k8s.io/api's `generated.proto`, v1.37).
//!
//! Zero scalars are left out, as the JSON encoding's `omitempty` does; nested messages are
//! kept even when empty (`resources: {}`), as Go encodes a struct field; a zero time is
//! `null`. A field the tables do not list is skipped when it holds a zero (Go writes every
//! field that is not a pointer) and refused otherwise, with its number and message, so
//! nothing a client sent disappears unnoticed.

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// How a field's value is encoded.
#[derive(Clone, Copy)]
pub(super) enum Ty {
    Str,
    Int,
    Bool,
    Msg(&'static Msg),
    MapStr,
    MapBytes,
    /// `map<string, Quantity>`.
    MapQuantity,
    IntOrString,
    Time,
    /// A message JSON writes inline (a Volume's `VolumeSource`): its fields are the
    /// enclosing object's.
    Inline(&'static Msg),
}

pub(super) struct Field {
    pub(super) number: u64,
    pub(super) name: &'static str,
    pub(super) ty: Ty,
    pub(super) repeated: bool,
}

pub(super) struct Msg {
    pub(super) name: &'static str,
    pub(super) fields: &'static [Field],
}

const fn f(number: u64, name: &'static str, ty: Ty) -> Field {
    Field {
        number,
        name,
        ty,
        repeated: false,
    }
}

const fn rep(number: u64, name: &'static str, ty: Ty) -> Field {
    Field {
        number,
        name,
        ty,
        repeated: true,
    }
}

use Ty::{Bool, Int, IntOrString, MapBytes, MapQuantity, MapStr, Str, Time};

static OBJECT_META: Msg = Msg {
    name: "ObjectMeta",
    fields: &[
        f(1, "name", Str),
        f(2, "generateName", Str),
        f(3, "namespace", Str),
        f(5, "uid", Str),
        f(6, "resourceVersion", Str),
        f(7, "generation", Int),
        f(8, "creationTimestamp", Time),
        f(9, "deletionTimestamp", Time),
        f(11, "labels", MapStr),
        f(12, "annotations", MapStr),
        rep(13, "ownerReferences", Ty::Msg(&OWNER_REFERENCE)),
        rep(14, "finalizers", Str),
    ],
};

static OWNER_REFERENCE: Msg = Msg {
    name: "OwnerReference",
    fields: &[
        f(1, "kind", Str),
        f(3, "name", Str),
        f(4, "uid", Str),
        f(5, "apiVersion", Str),
        f(6, "controller", Bool),
        f(7, "blockOwnerDeletion", Bool),
    ],
};

static LABEL_SELECTOR_REQUIREMENT: Msg = Msg {
    name: "LabelSelectorRequirement",
    fields: &[
        f(1, "key", Str),
        f(2, "operator", Str),
        rep(3, "values", Str),
    ],
};

static LABEL_SELECTOR: Msg = Msg {
    name: "LabelSelector",
    fields: &[
        f(1, "matchLabels", MapStr),
        rep(2, "matchExpressions", Ty::Msg(&LABEL_SELECTOR_REQUIREMENT)),
    ],
};

static CONTAINER_PORT: Msg = Msg {
    name: "ContainerPort",
    fields: &[
        f(1, "name", Str),
        f(2, "hostPort", Int),
        f(3, "containerPort", Int),
        f(4, "protocol", Str),
        f(5, "hostIP", Str),
    ],
};

static ENV_VAR: Msg = Msg {
    name: "EnvVar",
    fields: &[f(1, "name", Str), f(2, "value", Str)],
};

static RESOURCE_REQUIREMENTS: Msg = Msg {
    name: "ResourceRequirements",
    fields: &[f(1, "limits", MapQuantity), f(2, "requests", MapQuantity)],
};

static CONTAINER: Msg = Msg {
    name: "Container",
    fields: &[
        f(1, "name", Str),
        f(2, "image", Str),
        rep(3, "command", Str),
        rep(4, "args", Str),
        f(5, "workingDir", Str),
        rep(6, "ports", Ty::Msg(&CONTAINER_PORT)),
        rep(7, "env", Ty::Msg(&ENV_VAR)),
        f(8, "resources", Ty::Msg(&RESOURCE_REQUIREMENTS)),
        f(13, "terminationMessagePath", Str),
        f(14, "imagePullPolicy", Str),
        f(16, "stdin", Bool),
        f(17, "stdinOnce", Bool),
        f(18, "tty", Bool),
        f(20, "terminationMessagePolicy", Str),
        f(24, "restartPolicy", Str),
    ],
};

static PVC_VOLUME_SOURCE: Msg = Msg {
    name: "PersistentVolumeClaimVolumeSource",
    fields: &[f(1, "claimName", Str), f(2, "readOnly", Bool)],
};

static CSI_VOLUME_SOURCE: Msg = Msg {
    name: "CSIVolumeSource",
    fields: &[f(1, "driver", Str)],
};

/// Only that it is there: the claim template is not encoded.
static EPHEMERAL_VOLUME_SOURCE: Msg = Msg {
    name: "EphemeralVolumeSource",
    fields: &[],
};

static VOLUME_SOURCE: Msg = Msg {
    name: "VolumeSource",
    fields: &[
        f(10, "persistentVolumeClaim", Ty::Msg(&PVC_VOLUME_SOURCE)),
        f(28, "csi", Ty::Msg(&CSI_VOLUME_SOURCE)),
        f(29, "ephemeral", Ty::Msg(&EPHEMERAL_VOLUME_SOURCE)),
    ],
};

static VOLUME: Msg = Msg {
    name: "Volume",
    fields: &[
        f(1, "name", Str),
        f(2, "volumeSource", Ty::Inline(&VOLUME_SOURCE)),
    ],
};

static POD_SCHEDULING_GROUP: Msg = Msg {
    name: "PodSchedulingGroup",
    fields: &[f(1, "podGroupName", Str)],
};

static TOLERATION: Msg = Msg {
    name: "Toleration",
    fields: &[
        f(1, "key", Str),
        f(2, "operator", Str),
        f(3, "value", Str),
        f(4, "effect", Str),
        f(5, "tolerationSeconds", Int),
    ],
};

static POD_SPEC: Msg = Msg {
    name: "PodSpec",
    fields: &[
        rep(1, "volumes", Ty::Msg(&VOLUME)),
        rep(2, "containers", Ty::Msg(&CONTAINER)),
        f(3, "restartPolicy", Str),
        f(4, "terminationGracePeriodSeconds", Int),
        f(5, "activeDeadlineSeconds", Int),
        f(6, "dnsPolicy", Str),
        f(7, "nodeSelector", MapStr),
        f(8, "serviceAccountName", Str),
        f(9, "serviceAccount", Str),
        f(10, "nodeName", Str),
        f(11, "hostNetwork", Bool),
        f(16, "hostname", Str),
        f(17, "subdomain", Str),
        f(18, "affinity", Ty::Msg(&AFFINITY)),
        f(19, "schedulerName", Str),
        rep(20, "initContainers", Ty::Msg(&CONTAINER)),
        rep(22, "tolerations", Ty::Msg(&TOLERATION)),
        f(24, "priorityClassName", Str),
        f(25, "priority", Int),
        f(29, "runtimeClassName", Str),
        f(30, "enableServiceLinks", Bool),
        f(31, "preemptionPolicy", Str),
        f(32, "overhead", MapQuantity),
        rep(
            33,
            "topologySpreadConstraints",
            Ty::Msg(&TOPOLOGY_SPREAD_CONSTRAINT),
        ),
        rep(38, "schedulingGates", Ty::Msg(&NAME_ONLY)),
        rep(39, "resourceClaims", Ty::Msg(&POD_RESOURCE_CLAIM)),
        f(40, "resources", Ty::Msg(&RESOURCE_REQUIREMENTS)),
        f(43, "schedulingGroup", Ty::Msg(&POD_SCHEDULING_GROUP)),
    ],
};

static NODE_SELECTOR_REQUIREMENT: Msg = Msg {
    name: "NodeSelectorRequirement",
    fields: &[
        f(1, "key", Str),
        f(2, "operator", Str),
        rep(3, "values", Str),
    ],
};

static NODE_SELECTOR_TERM: Msg = Msg {
    name: "NodeSelectorTerm",
    fields: &[
        rep(1, "matchExpressions", Ty::Msg(&NODE_SELECTOR_REQUIREMENT)),
        rep(2, "matchFields", Ty::Msg(&NODE_SELECTOR_REQUIREMENT)),
    ],
};

static NODE_SELECTOR: Msg = Msg {
    name: "NodeSelector",
    fields: &[rep(1, "nodeSelectorTerms", Ty::Msg(&NODE_SELECTOR_TERM))],
};

static PREFERRED_SCHEDULING_TERM: Msg = Msg {
    name: "PreferredSchedulingTerm",
    fields: &[
        f(1, "weight", Int),
        f(2, "preference", Ty::Msg(&NODE_SELECTOR_TERM)),
    ],
};

static NODE_AFFINITY: Msg = Msg {
    name: "NodeAffinity",
    fields: &[
        f(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            Ty::Msg(&NODE_SELECTOR),
        ),
        rep(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            Ty::Msg(&PREFERRED_SCHEDULING_TERM),
        ),
    ],
};

static POD_AFFINITY_TERM: Msg = Msg {
    name: "PodAffinityTerm",
    fields: &[
        f(1, "labelSelector", Ty::Msg(&LABEL_SELECTOR)),
        rep(2, "namespaces", Str),
        f(3, "topologyKey", Str),
        f(4, "namespaceSelector", Ty::Msg(&LABEL_SELECTOR)),
        rep(5, "matchLabelKeys", Str),
        rep(6, "mismatchLabelKeys", Str),
    ],
};

static WEIGHTED_POD_AFFINITY_TERM: Msg = Msg {
    name: "WeightedPodAffinityTerm",
    fields: &[
        f(1, "weight", Int),
        f(2, "podAffinityTerm", Ty::Msg(&POD_AFFINITY_TERM)),
    ],
};

/// `PodAffinity` and `PodAntiAffinity`.
static POD_AFFINITY: Msg = Msg {
    name: "PodAffinity",
    fields: &[
        rep(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            Ty::Msg(&POD_AFFINITY_TERM),
        ),
        rep(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            Ty::Msg(&WEIGHTED_POD_AFFINITY_TERM),
        ),
    ],
};

static AFFINITY: Msg = Msg {
    name: "Affinity",
    fields: &[
        f(1, "nodeAffinity", Ty::Msg(&NODE_AFFINITY)),
        f(2, "podAffinity", Ty::Msg(&POD_AFFINITY)),
        f(3, "podAntiAffinity", Ty::Msg(&POD_AFFINITY)),
    ],
};

static TOPOLOGY_SPREAD_CONSTRAINT: Msg = Msg {
    name: "TopologySpreadConstraint",
    fields: &[
        f(1, "maxSkew", Int),
        f(2, "topologyKey", Str),
        f(3, "whenUnsatisfiable", Str),
        f(4, "labelSelector", Ty::Msg(&LABEL_SELECTOR)),
        f(5, "minDomains", Int),
        f(6, "nodeAffinityPolicy", Str),
        f(7, "nodeTaintsPolicy", Str),
        rep(8, "matchLabelKeys", Str),
    ],
};

/// `PodSchedulingGate`.
static NAME_ONLY: Msg = Msg {
    name: "PodSchedulingGate",
    fields: &[f(1, "name", Str)],
};

static POD_RESOURCE_CLAIM: Msg = Msg {
    name: "PodResourceClaim",
    fields: &[
        f(1, "name", Str),
        f(3, "resourceClaimName", Str),
        f(4, "resourceClaimTemplateName", Str),
    ],
};

/// `PodCondition` and `NodeCondition`.
static CONDITION: Msg = Msg {
    name: "Condition",
    fields: &[
        f(1, "type", Str),
        f(2, "status", Str),
        f(5, "reason", Str),
        f(6, "message", Str),
    ],
};

static POD_RESOURCE_CLAIM_STATUS: Msg = Msg {
    name: "PodResourceClaimStatus",
    fields: &[f(1, "name", Str), f(2, "resourceClaimName", Str)],
};

static CONTAINER_EXTENDED_RESOURCE_REQUEST: Msg = Msg {
    name: "ContainerExtendedResourceRequest",
    fields: &[
        f(1, "containerName", Str),
        f(2, "resourceName", Str),
        f(3, "requestName", Str),
    ],
};

static POD_EXTENDED_RESOURCE_CLAIM_STATUS: Msg = Msg {
    name: "PodExtendedResourceClaimStatus",
    fields: &[
        rep(
            1,
            "requestMappings",
            Ty::Msg(&CONTAINER_EXTENDED_RESOURCE_REQUEST),
        ),
        f(2, "resourceClaimName", Str),
    ],
};

static POD_STATUS: Msg = Msg {
    name: "PodStatus",
    fields: &[
        f(1, "phase", Str),
        rep(2, "conditions", Ty::Msg(&CONDITION)),
        f(5, "hostIP", Str),
        f(6, "podIP", Str),
        f(9, "qosClass", Str),
        f(11, "nominatedNodeName", Str),
        rep(
            15,
            "resourceClaimStatuses",
            Ty::Msg(&POD_RESOURCE_CLAIM_STATUS),
        ),
        f(
            18,
            "extendedResourceClaimStatus",
            Ty::Msg(&POD_EXTENDED_RESOURCE_CLAIM_STATUS),
        ),
    ],
};

static TAINT: Msg = Msg {
    name: "Taint",
    fields: &[
        f(1, "key", Str),
        f(2, "value", Str),
        f(3, "effect", Str),
        f(4, "timeAdded", Time),
    ],
};

static NODE_SPEC: Msg = Msg {
    name: "NodeSpec",
    fields: &[
        f(1, "podCIDR", Str),
        f(3, "providerID", Str),
        f(4, "unschedulable", Bool),
        rep(5, "taints", Ty::Msg(&TAINT)),
    ],
};

static NODE_ADDRESS: Msg = Msg {
    name: "NodeAddress",
    fields: &[f(1, "type", Str), f(2, "address", Str)],
};

static NODE_STATUS: Msg = Msg {
    name: "NodeStatus",
    fields: &[
        f(1, "capacity", MapQuantity),
        f(2, "allocatable", MapQuantity),
        f(3, "phase", Str),
        rep(4, "conditions", Ty::Msg(&CONDITION)),
        rep(5, "addresses", Ty::Msg(&NODE_ADDRESS)),
    ],
};

/// A status the test server does not decode from a request (the server writes it).
static EMPTY_STATUS: Msg = Msg {
    name: "status",
    fields: &[],
};

/// A Node, as the test server lists nodes in protobuf.
pub(super) static NODE: Msg = Msg {
    name: "Node",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&NODE_SPEC)),
        f(3, "status", Ty::Msg(&NODE_STATUS)),
    ],
};

pub(super) static POD: Msg = Msg {
    name: "Pod",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&POD_SPEC)),
        f(3, "status", Ty::Msg(&POD_STATUS)),
    ],
};

static POD_TEMPLATE_SPEC: Msg = Msg {
    name: "PodTemplateSpec",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&POD_SPEC)),
    ],
};

static CONFIG_MAP: Msg = Msg {
    name: "ConfigMap",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "data", MapStr),
        f(3, "binaryData", MapBytes),
        f(4, "immutable", Bool),
    ],
};

static NAMESPACE_SPEC: Msg = Msg {
    name: "NamespaceSpec",
    fields: &[rep(1, "finalizers", Str)],
};

static NAMESPACE: Msg = Msg {
    name: "Namespace",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&NAMESPACE_SPEC)),
        f(3, "status", Ty::Msg(&EMPTY_STATUS)),
    ],
};

static SERVICE_PORT: Msg = Msg {
    name: "ServicePort",
    fields: &[
        f(1, "name", Str),
        f(2, "protocol", Str),
        f(3, "port", Int),
        f(4, "targetPort", IntOrString),
        f(5, "nodePort", Int),
        f(6, "appProtocol", Str),
    ],
};

static SERVICE_SPEC: Msg = Msg {
    name: "ServiceSpec",
    fields: &[
        rep(1, "ports", Ty::Msg(&SERVICE_PORT)),
        f(2, "selector", MapStr),
        f(3, "clusterIP", Str),
        f(4, "type", Str),
        rep(5, "externalIPs", Str),
        f(7, "sessionAffinity", Str),
        f(10, "externalName", Str),
        rep(18, "clusterIPs", Str),
    ],
};

static LOAD_BALANCER_STATUS: Msg = Msg {
    name: "LoadBalancerStatus",
    fields: &[],
};

static SERVICE_STATUS: Msg = Msg {
    name: "ServiceStatus",
    fields: &[f(1, "loadBalancer", Ty::Msg(&LOAD_BALANCER_STATUS))],
};

static SERVICE: Msg = Msg {
    name: "Service",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&SERVICE_SPEC)),
        f(3, "status", Ty::Msg(&SERVICE_STATUS)),
    ],
};

static DEPLOYMENT_STRATEGY: Msg = Msg {
    name: "DeploymentStrategy",
    fields: &[f(1, "type", Str)],
};

static DEPLOYMENT_SPEC: Msg = Msg {
    name: "DeploymentSpec",
    fields: &[
        f(1, "replicas", Int),
        f(2, "selector", Ty::Msg(&LABEL_SELECTOR)),
        f(3, "template", Ty::Msg(&POD_TEMPLATE_SPEC)),
        f(4, "strategy", Ty::Msg(&DEPLOYMENT_STRATEGY)),
        f(5, "minReadySeconds", Int),
        f(6, "revisionHistoryLimit", Int),
        f(7, "paused", Bool),
        f(9, "progressDeadlineSeconds", Int),
    ],
};

static DEPLOYMENT: Msg = Msg {
    name: "Deployment",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&DEPLOYMENT_SPEC)),
        f(3, "status", Ty::Msg(&EMPTY_STATUS)),
    ],
};

static JOB_SPEC: Msg = Msg {
    name: "JobSpec",
    fields: &[
        f(1, "parallelism", Int),
        f(2, "completions", Int),
        f(3, "activeDeadlineSeconds", Int),
        f(4, "selector", Ty::Msg(&LABEL_SELECTOR)),
        f(5, "manualSelector", Bool),
        f(6, "template", Ty::Msg(&POD_TEMPLATE_SPEC)),
        f(7, "backoffLimit", Int),
        f(8, "ttlSecondsAfterFinished", Int),
        f(9, "completionMode", Str),
        f(10, "suspend", Bool),
    ],
};

static JOB: Msg = Msg {
    name: "Job",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&JOB_SPEC)),
        f(3, "status", Ty::Msg(&EMPTY_STATUS)),
    ],
};

static JOB_TEMPLATE_SPEC: Msg = Msg {
    name: "JobTemplateSpec",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&JOB_SPEC)),
    ],
};

static CRON_JOB_SPEC: Msg = Msg {
    name: "CronJobSpec",
    fields: &[
        f(1, "schedule", Str),
        f(2, "startingDeadlineSeconds", Int),
        f(3, "concurrencyPolicy", Str),
        f(4, "suspend", Bool),
        f(5, "jobTemplate", Ty::Msg(&JOB_TEMPLATE_SPEC)),
        f(6, "successfulJobsHistoryLimit", Int),
        f(7, "failedJobsHistoryLimit", Int),
        f(8, "timeZone", Str),
    ],
};

static CRON_JOB: Msg = Msg {
    name: "CronJob",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&CRON_JOB_SPEC)),
        f(3, "status", Ty::Msg(&EMPTY_STATUS)),
    ],
};

static PDB_SPEC: Msg = Msg {
    name: "PodDisruptionBudgetSpec",
    fields: &[
        f(1, "minAvailable", IntOrString),
        f(2, "selector", Ty::Msg(&LABEL_SELECTOR)),
        f(3, "maxUnavailable", IntOrString),
        f(4, "unhealthyPodEvictionPolicy", Str),
    ],
};

static PDB: Msg = Msg {
    name: "PodDisruptionBudget",
    fields: &[
        f(1, "metadata", Ty::Msg(&OBJECT_META)),
        f(2, "spec", Ty::Msg(&PDB_SPEC)),
        f(3, "status", Ty::Msg(&EMPTY_STATUS)),
    ],
};

/// The message of each kind the decoder knows, by apiVersion and kind.
fn message(api_version: &str, kind: &str) -> Option<&'static Msg> {
    Some(match (api_version, kind) {
        ("v1", "ConfigMap") => &CONFIG_MAP,
        ("v1", "Namespace") => &NAMESPACE,
        ("v1", "Pod") => &POD,
        ("v1", "Service") => &SERVICE,
        ("apps/v1", "Deployment") => &DEPLOYMENT,
        ("batch/v1", "Job") => &JOB,
        ("batch/v1", "CronJob") => &CRON_JOB,
        ("policy/v1", "PodDisruptionBudget") => &PDB,
        _ => return None,
    })
}

/// One field as read off the wire.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn read_fields(buf: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, String> {
    let truncated = || "truncated protobuf message".to_string();
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < buf.len() {
        let key = super::varint(buf, &mut pos).ok_or_else(truncated)?;
        match key & 7 {
            0 => out.push((
                key >> 3,
                Wire::Varint(super::varint(buf, &mut pos).ok_or_else(truncated)?),
            )),
            2 => {
                let len = usize::try_from(super::varint(buf, &mut pos).ok_or_else(truncated)?)
                    .map_err(|_| truncated())?;
                let end = pos.checked_add(len).ok_or_else(truncated)?;
                out.push((
                    key >> 3,
                    Wire::Bytes(buf.get(pos..end).ok_or_else(truncated)?),
                ));
                pos = end;
            }
            other => return Err(format!("unsupported protobuf wire type {other}")),
        }
    }
    Ok(out)
}

fn text(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "invalid UTF-8 in a protobuf string".into())
}

fn decode(msg: &Msg, buf: &[u8]) -> Result<Value, String> {
    let mut out = Map::new();
    for (number, wire) in read_fields(buf)? {
        let Some(field) = msg.fields.iter().find(|f| f.number == number) else {
            // Go's encoder writes every field that is not a pointer, zero or not: a zero is
            // what JSON leaves out, anything else would be lost.
            match wire {
                Wire::Varint(0) => continue,
                Wire::Bytes([]) => continue,
                _ => {
                    return Err(format!(
                        "field {number} of {} is not decoded by the test server",
                        msg.name
                    ));
                }
            }
        };
        if let (Ty::Inline(inner), Wire::Bytes(b)) = (field.ty, &wire) {
            if let Value::Object(fields) = decode(inner, b)? {
                out.extend(fields);
            }
            continue;
        }
        let value = value(field, wire)?;
        let Some(value) = value else { continue };
        if field.repeated {
            match out
                .entry(field.name)
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(items) => items.push(value),
                _ => unreachable!("repeated fields are arrays"),
            }
        } else if let (Some(Value::Object(existing)), Value::Object(entry)) =
            (out.get_mut(field.name), &value)
            && matches!(field.ty, MapStr | MapBytes | MapQuantity)
        {
            // Each map entry comes as its own field.
            existing.extend(entry.clone());
        } else {
            out.insert(field.name.to_string(), value);
        }
    }
    Ok(Value::Object(out))
}

/// A field's JSON value; `None` for a zero scalar (left out, as `omitempty` does).
fn value(field: &Field, wire: Wire<'_>) -> Result<Option<Value>, String> {
    let kept = |zero: bool, v: Value| (!zero || field.repeated).then_some(v);
    Ok(match (field.ty, wire) {
        (Str, Wire::Bytes(b)) => kept(b.is_empty(), Value::from(text(b)?)),
        (Int, Wire::Varint(v)) => kept(v == 0, json!(v as i64)),
        (Bool, Wire::Varint(v)) => kept(v == 0, json!(v != 0)),
        (Ty::Msg(msg), Wire::Bytes(b)) => Some(decode(msg, b)?),
        (MapStr | MapBytes | MapQuantity, Wire::Bytes(b)) => {
            let mut key = String::new();
            let mut val = Value::from("");
            for (n, w) in read_fields(b)? {
                match (n, w) {
                    (1, Wire::Bytes(k)) => key = text(k)?,
                    (2, Wire::Bytes(v)) => {
                        val = match field.ty {
                            MapBytes => {
                                Value::from(base64::engine::general_purpose::STANDARD.encode(v))
                            }
                            // Quantity: 1 string.
                            MapQuantity => Value::from(quantity(v)?),
                            _ => Value::from(text(v)?),
                        }
                    }
                    _ => return Err(format!("bad map entry in {}", field.name)),
                }
            }
            let mut entry = Map::new();
            entry.insert(key, val);
            Some(Value::Object(entry))
        }
        (IntOrString, Wire::Bytes(b)) => {
            // IntOrString: 1 type (0 int, 1 string), 2 intVal, 3 strVal.
            let (mut is_string, mut int, mut string) = (false, 0i64, String::new());
            for (n, w) in read_fields(b)? {
                match (n, w) {
                    (1, Wire::Varint(t)) => is_string = t == 1,
                    (2, Wire::Varint(v)) => int = v as i64,
                    (3, Wire::Bytes(s)) => string = text(s)?,
                    _ => return Err("bad IntOrString".into()),
                }
            }
            Some(if is_string {
                Value::from(string)
            } else {
                json!(int as i32)
            })
        }
        (Time, Wire::Bytes(b)) => {
            let mut seconds = 0i64;
            for (n, w) in read_fields(b)? {
                if let (1, Wire::Varint(s)) = (n, w) {
                    seconds = s as i64;
                }
            }
            Some(if seconds == 0 {
                Value::Null
            } else {
                jiff::Timestamp::from_second(seconds)
                    .map(|t| Value::from(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()))
                    .unwrap_or(Value::Null)
            })
        }
        _ => return Err(format!("field {} has the wrong wire type", field.name)),
    })
}

fn quantity(bytes: &[u8]) -> Result<String, String> {
    for (n, w) in read_fields(bytes)? {
        if let (1, Wire::Bytes(s)) = (n, w) {
            return text(s);
        }
    }
    Ok(String::new())
}

/// Decodes a protobuf request body (`k8s\0` and a `runtime.Unknown`) into the object's JSON.
pub fn decode_object(body: &[u8]) -> Result<Value, String> {
    let envelope = body
        .strip_prefix(super::MAGIC)
        .ok_or("the body does not start with the protobuf magic number")?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (n, w) in read_fields(envelope)? {
        match (n, w) {
            // runtime.TypeMeta: 1 apiVersion, 2 kind.
            (1, Wire::Bytes(meta)) => {
                for (m, v) in read_fields(meta)? {
                    match (m, v) {
                        (1, Wire::Bytes(v)) => api_version = text(v)?,
                        (2, Wire::Bytes(v)) => kind = text(v)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(r)) => raw = r,
            _ => {}
        }
    }
    let msg = message(&api_version, &kind).ok_or_else(|| {
        format!("the test server does not decode {kind} ({api_version}) from protobuf")
    })?;
    let mut object = decode(msg, raw)?;
    object["apiVersion"] = Value::from(api_version);
    object["kind"] = Value::from(kind);
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ld(field: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![((field << 3) | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
        let meta = [ld(1, b"v1"), ld(2, kind.as_bytes())].concat();
        [super::super::MAGIC, &ld(1, &meta), &ld(2, raw)].concat()
    }

    #[test]
    fn zero_fields_are_skipped_and_unknown_values_refused() {
        // ConfigMap{metadata{name "c", selfLink ""}, data{"a": "b"}, immutable false}.
        let meta = [ld(1, b"c"), ld(4, b"")].concat();
        let entry = [ld(1, b"a"), ld(2, b"b")].concat();
        let raw = [ld(1, &meta), ld(2, &entry), vec![4 << 3, 0]].concat();
        let cm = decode_object(&envelope("ConfigMap", &raw)).unwrap();
        assert_eq!(
            cm,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}})
        );
        let meta = [ld(1, b"c"), ld(4, b"/api/v1/x")].concat();
        let err = decode_object(&envelope("ConfigMap", &ld(1, &meta))).unwrap_err();
        assert_eq!(
            err,
            "field 4 of ObjectMeta is not decoded by the test server"
        );
        let err = decode_object(&envelope("Secret", &[])).unwrap_err();
        assert_eq!(
            err,
            "the test server does not decode Secret (v1) from protobuf"
        );
    }
}
