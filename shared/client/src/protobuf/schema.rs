//! The fields of the Kubernetes messages the read model takes from protobuf list pages: each
//! field's number (facts from k8s.io/api's `generated.proto`, v1.37, as kube-rs's `k8s-pb`
//! generates them: the tests check every number here against it), its JSON name and how
//! its JSON is written. A field not listed is skipped on the wire without being decoded,
//! which is what makes a 10,000-pod page cheap: env, volumes, probes, managedFields and
//! status of containers are never read.

/// How a field's value is encoded, and which JSON it stands for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Str,
    Bool,
    /// Any varint integer (int32 or int64; negatives are sign-extended on the wire).
    Int,
    Message(&'static Message),
    /// `metav1.Time`: seconds and nanos; JSON shows RFC 3339 to the second, in UTC, and a
    /// zero time as null (read as absent).
    Time,
    /// `map<string, string>`: each entry is its own field occurrence (1 key, 2 value).
    MapStr,
    /// `map<string, Quantity>`: a `resource.Quantity` is a message whose field 1 is the
    /// string JSON shows.
    MapQuantity,
}

/// What JSON shows of a field whose value is zero, given how Go declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Zero {
    /// A value field with `omitempty`: Go's protobuf encoder writes it even when zero, JSON
    /// leaves it out, so a zero scalar is skipped.
    Omit,
    /// A pointer: on the wire exactly when JSON has it, zero or not (`tolerationSeconds: 0`
    /// is not an absent one).
    Pointer,
    /// A value field without `omitempty`: JSON always has it, so one the wire lacks (an
    /// empty list) is given its zero.
    Keep,
}

#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) number: u32,
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) repeated: bool,
    pub(crate) zero: Zero,
    /// A message JSON writes inline (Go's embedded struct with `json:",inline"`: a
    /// Volume's `VolumeSource`): its fields read as the enclosing message's.
    pub(crate) inline: bool,
}

#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) name: &'static str,
    /// At most 64 (the decoder keeps which were seen in one word), in field-number order.
    pub(crate) fields: &'static [Field],
    /// Fields left out on purpose that a reading type may still declare (k8s-openapi's
    /// `ObjectMeta` declares `managedFields`): they read as absent. Only debug builds check.
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    pub(crate) left_out: &'static [&'static str],
}

impl Message {
    pub(crate) fn field(&self, number: u32) -> Option<(usize, &'static Field)> {
        self.fields
            .iter()
            .enumerate()
            .find(|(_, f)| f.number == number)
    }
}

const fn f(number: u32, name: &'static str, kind: Kind) -> Field {
    Field {
        number,
        name,
        kind,
        repeated: matches!(kind, MapStr | MapQuantity),
        zero: Zero::Omit,
        inline: false,
    }
}

/// A message JSON writes inline.
const fn inline(number: u32, name: &'static str, message: &'static Message) -> Field {
    Field {
        inline: true,
        ..f(number, name, Kind::Message(message))
    }
}

/// A pointer field.
const fn ptr(number: u32, name: &'static str, kind: Kind) -> Field {
    Field {
        zero: Zero::Pointer,
        ..f(number, name, kind)
    }
}

/// A field JSON always shows.
const fn keep(number: u32, name: &'static str, kind: Kind) -> Field {
    Field {
        zero: Zero::Keep,
        ..f(number, name, kind)
    }
}

/// A repeated field (JSON omits an empty one).
const fn rep(number: u32, name: &'static str, kind: Kind) -> Field {
    Field {
        repeated: true,
        ..f(number, name, kind)
    }
}

use Kind::{Bool, Int, MapQuantity, MapStr, Str, Time};

const fn msg(m: &'static Message) -> Kind {
    Kind::Message(m)
}

// meta/v1

pub(crate) static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    left_out: &[],
    fields: &[
        keep(1, "kind", Str),
        keep(3, "name", Str),
        keep(4, "uid", Str),
        keep(5, "apiVersion", Str),
        ptr(6, "controller", Bool),
        ptr(7, "blockOwnerDeletion", Bool),
    ],
};

pub(crate) static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    left_out: &["selfLink", "managedFields"],
    fields: &[
        f(1, "name", Str),
        f(2, "generateName", Str),
        f(3, "namespace", Str),
        f(5, "uid", Str),
        f(6, "resourceVersion", Str),
        f(7, "generation", Int),
        f(8, "creationTimestamp", Time),
        ptr(9, "deletionTimestamp", Time),
        ptr(10, "deletionGracePeriodSeconds", Int),
        f(11, "labels", MapStr),
        f(12, "annotations", MapStr),
        rep(13, "ownerReferences", msg(&OWNER_REFERENCE)),
        rep(14, "finalizers", Str),
    ],
};

pub(crate) static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    name: "LabelSelectorRequirement",
    left_out: &[],
    fields: &[
        keep(1, "key", Str),
        keep(2, "operator", Str),
        rep(3, "values", Str),
    ],
};

pub(crate) static LABEL_SELECTOR: Message = Message {
    name: "LabelSelector",
    left_out: &[],
    fields: &[
        f(1, "matchLabels", MapStr),
        rep(2, "matchExpressions", msg(&LABEL_SELECTOR_REQUIREMENT)),
    ],
};

/// A `Status`, what an error answers in protobuf.
pub(crate) static STATUS: Message = Message {
    name: "Status",
    left_out: &[],
    fields: &[
        f(2, "status", Str),
        f(3, "message", Str),
        f(4, "reason", Str),
        f(6, "code", Int),
    ],
};

// core/v1: scheduling constraints

pub(crate) static NODE_SELECTOR_REQUIREMENT: Message = Message {
    name: "NodeSelectorRequirement",
    left_out: &[],
    fields: &[
        keep(1, "key", Str),
        keep(2, "operator", Str),
        rep(3, "values", Str),
    ],
};

pub(crate) static NODE_SELECTOR_TERM: Message = Message {
    name: "NodeSelectorTerm",
    left_out: &[],
    fields: &[
        rep(1, "matchExpressions", msg(&NODE_SELECTOR_REQUIREMENT)),
        rep(2, "matchFields", msg(&NODE_SELECTOR_REQUIREMENT)),
    ],
};

pub(crate) static NODE_SELECTOR: Message = Message {
    name: "NodeSelector",
    left_out: &[],
    fields: &[Field {
        repeated: true,
        ..keep(1, "nodeSelectorTerms", msg(&NODE_SELECTOR_TERM))
    }],
};

pub(crate) static PREFERRED_SCHEDULING_TERM: Message = Message {
    name: "PreferredSchedulingTerm",
    left_out: &[],
    fields: &[
        keep(1, "weight", Int),
        keep(2, "preference", msg(&NODE_SELECTOR_TERM)),
    ],
};

pub(crate) static NODE_AFFINITY: Message = Message {
    name: "NodeAffinity",
    left_out: &[],
    fields: &[
        ptr(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            msg(&NODE_SELECTOR),
        ),
        rep(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            msg(&PREFERRED_SCHEDULING_TERM),
        ),
    ],
};

pub(crate) static POD_AFFINITY_TERM: Message = Message {
    name: "PodAffinityTerm",
    left_out: &[],
    fields: &[
        ptr(1, "labelSelector", msg(&LABEL_SELECTOR)),
        rep(2, "namespaces", Str),
        keep(3, "topologyKey", Str),
        ptr(4, "namespaceSelector", msg(&LABEL_SELECTOR)),
        rep(5, "matchLabelKeys", Str),
        rep(6, "mismatchLabelKeys", Str),
    ],
};

pub(crate) static WEIGHTED_POD_AFFINITY_TERM: Message = Message {
    name: "WeightedPodAffinityTerm",
    left_out: &[],
    fields: &[
        keep(1, "weight", Int),
        keep(2, "podAffinityTerm", msg(&POD_AFFINITY_TERM)),
    ],
};

/// `PodAffinity` and `PodAntiAffinity` have the same fields.
pub(crate) static POD_AFFINITY: Message = Message {
    name: "PodAffinity",
    left_out: &[],
    fields: &[
        rep(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            msg(&POD_AFFINITY_TERM),
        ),
        rep(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            msg(&WEIGHTED_POD_AFFINITY_TERM),
        ),
    ],
};

pub(crate) static AFFINITY: Message = Message {
    name: "Affinity",
    left_out: &[],
    fields: &[
        ptr(1, "nodeAffinity", msg(&NODE_AFFINITY)),
        ptr(2, "podAffinity", msg(&POD_AFFINITY)),
        ptr(3, "podAntiAffinity", msg(&POD_AFFINITY)),
    ],
};

pub(crate) static TOLERATION: Message = Message {
    name: "Toleration",
    left_out: &[],
    fields: &[
        f(1, "key", Str),
        f(2, "operator", Str),
        f(3, "value", Str),
        f(4, "effect", Str),
        ptr(5, "tolerationSeconds", Int),
    ],
};

pub(crate) static TOPOLOGY_SPREAD_CONSTRAINT: Message = Message {
    name: "TopologySpreadConstraint",
    left_out: &[],
    fields: &[
        keep(1, "maxSkew", Int),
        keep(2, "topologyKey", Str),
        keep(3, "whenUnsatisfiable", Str),
        ptr(4, "labelSelector", msg(&LABEL_SELECTOR)),
        ptr(5, "minDomains", Int),
        ptr(6, "nodeAffinityPolicy", Str),
        ptr(7, "nodeTaintsPolicy", Str),
        rep(8, "matchLabelKeys", Str),
    ],
};

// core/v1: Pod

pub(crate) static RESOURCE_REQUIREMENTS: Message = Message {
    name: "ResourceRequirements",
    left_out: &[],
    fields: &[f(1, "limits", MapQuantity), f(2, "requests", MapQuantity)],
};

pub(crate) static CONTAINER_PORT: Message = Message {
    name: "ContainerPort",
    left_out: &[],
    fields: &[
        f(1, "name", Str),
        f(2, "hostPort", Int),
        keep(3, "containerPort", Int),
        f(4, "protocol", Str),
        f(5, "hostIP", Str),
    ],
};

pub(crate) static CONTAINER: Message = Message {
    name: "Container",
    left_out: &[],
    fields: &[
        keep(1, "name", Str),
        f(2, "image", Str),
        rep(6, "ports", msg(&CONTAINER_PORT)),
        f(8, "resources", msg(&RESOURCE_REQUIREMENTS)),
        ptr(24, "restartPolicy", Str),
    ],
};

pub(crate) static PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE: Message = Message {
    name: "PersistentVolumeClaimVolumeSource",
    left_out: &[],
    fields: &[keep(1, "claimName", Str), f(2, "readOnly", Bool)],
};

pub(crate) static CSI_VOLUME_SOURCE: Message = Message {
    name: "CSIVolumeSource",
    left_out: &[],
    fields: &[keep(1, "driver", Str)],
};

/// Read only for whether it is there: its claim template is not decoded.
pub(crate) static EPHEMERAL_VOLUME_SOURCE: Message = Message {
    name: "EphemeralVolumeSource",
    left_out: &[],
    fields: &[],
};

pub(crate) static VOLUME_SOURCE: Message = Message {
    name: "VolumeSource",
    left_out: &[],
    fields: &[
        ptr(
            10,
            "persistentVolumeClaim",
            msg(&PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE),
        ),
        ptr(28, "csi", msg(&CSI_VOLUME_SOURCE)),
        ptr(29, "ephemeral", msg(&EPHEMERAL_VOLUME_SOURCE)),
    ],
};

pub(crate) static VOLUME: Message = Message {
    name: "Volume",
    left_out: &[],
    fields: &[
        keep(1, "name", Str),
        inline(2, "volumeSource", &VOLUME_SOURCE),
    ],
};

pub(crate) static POD_SCHEDULING_GROUP: Message = Message {
    name: "PodSchedulingGroup",
    left_out: &[],
    fields: &[ptr(1, "podGroupName", Str)],
};

pub(crate) static POD_RESOURCE_CLAIM: Message = Message {
    name: "PodResourceClaim",
    left_out: &[],
    fields: &[
        keep(1, "name", Str),
        ptr(3, "resourceClaimName", Str),
        ptr(4, "resourceClaimTemplateName", Str),
    ],
};

pub(crate) static POD_SCHEDULING_GATE: Message = Message {
    name: "PodSchedulingGate",
    left_out: &[],
    fields: &[keep(1, "name", Str)],
};

pub(crate) static POD_SPEC: Message = Message {
    name: "PodSpec",
    left_out: &[],
    fields: &[
        rep(1, "volumes", msg(&VOLUME)),
        rep(2, "containers", msg(&CONTAINER)),
        f(7, "nodeSelector", MapStr),
        f(8, "serviceAccountName", Str),
        f(10, "nodeName", Str),
        f(11, "hostNetwork", Bool),
        ptr(18, "affinity", msg(&AFFINITY)),
        f(19, "schedulerName", Str),
        rep(20, "initContainers", msg(&CONTAINER)),
        rep(22, "tolerations", msg(&TOLERATION)),
        f(24, "priorityClassName", Str),
        ptr(25, "priority", Int),
        ptr(31, "preemptionPolicy", Str),
        f(32, "overhead", MapQuantity),
        rep(
            33,
            "topologySpreadConstraints",
            msg(&TOPOLOGY_SPREAD_CONSTRAINT),
        ),
        rep(38, "schedulingGates", msg(&POD_SCHEDULING_GATE)),
        rep(39, "resourceClaims", msg(&POD_RESOURCE_CLAIM)),
        ptr(40, "resources", msg(&RESOURCE_REQUIREMENTS)),
        // v1.37 (k8s-pb 0.9 predates it: the number is generated.proto's).
        ptr(43, "schedulingGroup", msg(&POD_SCHEDULING_GROUP)),
    ],
};

pub(crate) static POD_CONDITION: Message = Message {
    name: "PodCondition",
    left_out: &[],
    fields: &[
        keep(1, "type", Str),
        keep(2, "status", Str),
        f(5, "reason", Str),
        f(6, "message", Str),
    ],
};

pub(crate) static POD_RESOURCE_CLAIM_STATUS: Message = Message {
    name: "PodResourceClaimStatus",
    left_out: &[],
    fields: &[keep(1, "name", Str), ptr(2, "resourceClaimName", Str)],
};

pub(crate) static CONTAINER_EXTENDED_RESOURCE_REQUEST: Message = Message {
    name: "ContainerExtendedResourceRequest",
    left_out: &[],
    fields: &[
        keep(1, "containerName", Str),
        keep(2, "resourceName", Str),
        keep(3, "requestName", Str),
    ],
};

pub(crate) static POD_EXTENDED_RESOURCE_CLAIM_STATUS: Message = Message {
    name: "PodExtendedResourceClaimStatus",
    left_out: &[],
    fields: &[
        Field {
            repeated: true,
            ..keep(
                1,
                "requestMappings",
                msg(&CONTAINER_EXTENDED_RESOURCE_REQUEST),
            )
        },
        keep(2, "resourceClaimName", Str),
    ],
};

pub(crate) static POD_STATUS: Message = Message {
    name: "PodStatus",
    left_out: &[],
    fields: &[
        f(1, "phase", Str),
        rep(2, "conditions", msg(&POD_CONDITION)),
        f(11, "nominatedNodeName", Str),
        rep(15, "resourceClaimStatuses", msg(&POD_RESOURCE_CLAIM_STATUS)),
        ptr(
            18,
            "extendedResourceClaimStatus",
            msg(&POD_EXTENDED_RESOURCE_CLAIM_STATUS),
        ),
    ],
};

pub(crate) static POD: Message = Message {
    name: "Pod",
    left_out: &[],
    fields: &[
        f(1, "metadata", msg(&OBJECT_META)),
        f(2, "spec", msg(&POD_SPEC)),
        f(3, "status", msg(&POD_STATUS)),
    ],
};

// core/v1: Node

pub(crate) static TAINT: Message = Message {
    name: "Taint",
    left_out: &[],
    fields: &[
        keep(1, "key", Str),
        f(2, "value", Str),
        keep(3, "effect", Str),
        ptr(4, "timeAdded", Time),
    ],
};

pub(crate) static NODE_SPEC: Message = Message {
    name: "NodeSpec",
    left_out: &[],
    fields: &[
        f(3, "providerID", Str),
        f(4, "unschedulable", Bool),
        rep(5, "taints", msg(&TAINT)),
    ],
};

pub(crate) static NODE_CONDITION: Message = Message {
    name: "NodeCondition",
    left_out: &[],
    fields: &[keep(1, "type", Str), keep(2, "status", Str)],
};

pub(crate) static NODE_STATUS: Message = Message {
    name: "NodeStatus",
    left_out: &[],
    fields: &[
        f(1, "capacity", MapQuantity),
        f(2, "allocatable", MapQuantity),
        rep(4, "conditions", msg(&NODE_CONDITION)),
    ],
};

pub(crate) static NODE: Message = Message {
    name: "Node",
    left_out: &[],
    fields: &[
        f(1, "metadata", msg(&OBJECT_META)),
        f(2, "spec", msg(&NODE_SPEC)),
        f(3, "status", msg(&NODE_STATUS)),
    ],
};

/// Every message, for the tests (numbers against k8s-pb, at most 64 fields each).
#[cfg(test)]
pub(crate) static ALL: &[&Message] = &[
    &OWNER_REFERENCE,
    &OBJECT_META,
    &LABEL_SELECTOR_REQUIREMENT,
    &LABEL_SELECTOR,
    &STATUS,
    &NODE_SELECTOR_REQUIREMENT,
    &NODE_SELECTOR_TERM,
    &NODE_SELECTOR,
    &PREFERRED_SCHEDULING_TERM,
    &NODE_AFFINITY,
    &POD_AFFINITY_TERM,
    &WEIGHTED_POD_AFFINITY_TERM,
    &POD_AFFINITY,
    &AFFINITY,
    &TOLERATION,
    &TOPOLOGY_SPREAD_CONSTRAINT,
    &RESOURCE_REQUIREMENTS,
    &CONTAINER_PORT,
    &CONTAINER,
    &PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE,
    &CSI_VOLUME_SOURCE,
    &EPHEMERAL_VOLUME_SOURCE,
    &VOLUME_SOURCE,
    &VOLUME,
    &POD_SCHEDULING_GROUP,
    &POD_RESOURCE_CLAIM,
    &POD_SCHEDULING_GATE,
    &POD_SPEC,
    &POD_CONDITION,
    &POD_RESOURCE_CLAIM_STATUS,
    &CONTAINER_EXTENDED_RESOURCE_REQUEST,
    &POD_EXTENDED_RESOURCE_CLAIM_STATUS,
    &POD_STATUS,
    &POD,
    &TAINT,
    &NODE_SPEC,
    &NODE_CONDITION,
    &NODE_STATUS,
    &NODE,
];
