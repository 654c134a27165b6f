//! The resources the test API server serves, with what discovery says about them.

/// One served resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    /// API group (`""` for core).
    pub group: &'static str,
    pub version: &'static str,
    /// Plural, lower case, as in URLs and RBAC rules.
    pub plural: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Fields accepted in `fieldSelector`, besides `metadata.name` and `metadata.namespace`.
    pub fields: &'static [&'static str],
}

impl Resource {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `nodes` or `deployments.apps`: how the API server names a resource in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The error for a `fieldSelector` field this resource does not support: the words of
    /// the kind's own field label conversion (pods, nodes, events, namespaces; jobs), or of
    /// the default one every other kind uses.
    pub fn unsupported_field(&self, field: &str) -> String {
        let quote = crate::apimachinery::field::go_quote;
        match self.kind {
            "Pod" | "Node" | "Event" | "Namespace" => {
                format!("field label not supported: {field}")
            }
            "Job" => format!("field label {} not supported for Job", quote(field)),
            _ => format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                quote(field)
            ),
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Every field this resource's `fieldSelector` supports.
    pub fn supports_field(&self, field: &str) -> bool {
        field == "metadata.name"
            || (field == "metadata.namespace" && self.namespaced)
            || self.fields.contains(&field)
    }
}

const fn r(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    fields: &'static [&'static str],
) -> Resource {
    Resource {
        group,
        version,
        plural,
        kind,
        namespaced,
        short_names,
        fields,
    }
}

/// Everything served, in discovery order.
pub const RESOURCES: &[Resource] = &[
    r(
        "",
        "v1",
        "namespaces",
        "Namespace",
        false,
        &["ns"],
        &["status.phase"],
    ),
    r(
        "",
        "v1",
        "nodes",
        "Node",
        false,
        &["no"],
        &["spec.unschedulable"],
    ),
    r("", "v1", "configmaps", "ConfigMap", true, &["cm"], &[]),
    // What the scheduler's volume plugins read (VolumeBinding, VolumeZone,
    // VolumeRestrictions, NodeVolumeLimits).
    r(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        &[],
    ),
    r(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        &["pv"],
        &[],
    ),
    r("", "v1", "services", "Service", true, &["svc"], &[]),
    r(
        "",
        "v1",
        "pods",
        "Pod",
        true,
        &["po"],
        &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
    ),
    r(
        "",
        "v1",
        "events",
        "Event",
        true,
        &["ev"],
        &[
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
    ),
    r(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        true,
        &["deploy"],
        &[],
    ),
    r(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        true,
        &["sts"],
        &[],
    ),
    r("apps", "v1", "daemonsets", "DaemonSet", true, &["ds"], &[]),
    r(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        true,
        &["rs"],
        &[],
    ),
    r("batch", "v1", "jobs", "Job", true, &[], &[]),
    r("batch", "v1", "cronjobs", "CronJob", true, &["cj"], &[]),
    r(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        &[],
    ),
    r(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        &[],
    ),
    r(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
        &["sc"],
        &[],
    ),
    r(
        "storage.k8s.io",
        "v1",
        "csinodes",
        "CSINode",
        false,
        &[],
        &[],
    ),
    r(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
        &["pc"],
        &[],
    ),
    // Node heartbeats (`kubectl describe node` reads the node's lease).
    r(
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        true,
        &[],
        &[],
    ),
    // Dynamic Resource Allocation, as v1.37 serves it (GA since v1.34).
    r(
        "resource.k8s.io",
        "v1",
        "deviceclasses",
        "DeviceClass",
        false,
        &[],
        &[],
    ),
    r(
        "resource.k8s.io",
        "v1",
        "resourceslices",
        "ResourceSlice",
        false,
        &[],
        &["spec.nodeName", "spec.driver"],
    ),
    r(
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        "ResourceClaim",
        true,
        &[],
        &[],
    ),
    r(
        "resource.k8s.io",
        "v1",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        true,
        &[],
        &[],
    ),
    r(
        "resource.k8s.io",
        "v1",
        "devicetaintrules",
        "DeviceTaintRule",
        false,
        &[],
        &[],
    ),
    // Custom resources of the training and serving operators GPU clusters run, as their
    // CRDs serve them (no schema: preserve-unknown-fields), so a check that reads
    // custom resources' pod templates runs here as against a cluster with those CRDs.
    r("ray.io", "v1", "rayclusters", "RayCluster", true, &[], &[]),
    r(
        "kubeflow.org",
        "v1",
        "pytorchjobs",
        "PyTorchJob",
        true,
        &[],
        &[],
    ),
    r(
        "jobset.x-k8s.io",
        "v1alpha2",
        "jobsets",
        "JobSet",
        true,
        &[],
        &[],
    ),
    // What selects or acts on nodes outside any pod: Kueue's flavors, topologies and
    // ClusterQueues, Volcano's queues, the GPU operator's ClusterPolicy (cluster-scoped).
    r(
        "kueue.x-k8s.io",
        "v1beta2",
        "resourceflavors",
        "ResourceFlavor",
        false,
        &[],
        &[],
    ),
    r(
        "kueue.x-k8s.io",
        "v1beta2",
        "topologies",
        "Topology",
        false,
        &[],
        &[],
    ),
    r(
        "kueue.x-k8s.io",
        "v1beta2",
        "clusterqueues",
        "ClusterQueue",
        false,
        &[],
        &[],
    ),
    r(
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
        "Queue",
        false,
        &[],
        &[],
    ),
    // Volcano's gangs: a PodGroup per Job, its pods name it in an annotation.
    r(
        "scheduling.volcano.sh",
        "v1beta1",
        "podgroups",
        "PodGroup",
        true,
        &["pg", "podgroup-v1beta1"],
        &[],
    ),
    r(
        "nvidia.com",
        "v1",
        "clusterpolicies",
        "ClusterPolicy",
        false,
        &[],
        &[],
    ),
];

/// The group/versions served, for `/apis`, in kube-apiserver's order (custom resources'
/// groups last).
pub const GROUPS: &[(&str, &str)] = &[
    ("apps", "v1"),
    ("authorization.k8s.io", "v1"),
    ("batch", "v1"),
    ("policy", "v1"),
    ("apiextensions.k8s.io", "v1"),
    ("coordination.k8s.io", "v1"),
    ("storage.k8s.io", "v1"),
    ("scheduling.k8s.io", "v1"),
    ("resource.k8s.io", "v1"),
    ("ray.io", "v1"),
    ("kubeflow.org", "v1"),
    ("jobset.x-k8s.io", "v1alpha2"),
    ("kueue.x-k8s.io", "v1beta2"),
    ("scheduling.volcano.sh", "v1beta1"),
    ("nvidia.com", "v1"),
];

/// Looks a resource up by group, version and plural.
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static Resource> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// Looks a resource up by kind (for fixtures).
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static Resource> {
    RESOURCES
        .iter()
        .find(|r| r.kind == kind && r.api_version() == api_version)
}

/// Whether Kubernetes itself serves the resource (core and `*.k8s.io` groups, or none with a
/// dot), as opposed to a custom resource from a CRD.
pub fn is_built_in(r: &Resource) -> bool {
    !r.group.contains('.') || r.group.ends_with(".k8s.io")
}

/// The categories discovery lists for a resource (`kubectl get all` reads `all`).
pub fn categories(r: &Resource) -> &'static [&'static str] {
    match (r.group, r.kind) {
        ("", "Pod" | "Service")
        | ("apps", "Deployment" | "DaemonSet" | "ReplicaSet" | "StatefulSet")
        | ("batch", "Job" | "CronJob") => &["all"],
        ("apiextensions.k8s.io", _) => &["api-extensions"],
        _ => &[],
    }
}

/// The verbs discovery lists: every served resource takes them all, except that namespaces
/// cannot be deleted as a collection.
pub fn verbs(r: &Resource) -> &'static [&'static str] {
    if r.plural == "namespaces" {
        &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ]
    } else {
        &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}
