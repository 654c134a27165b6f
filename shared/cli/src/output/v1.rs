//! The reports of `apiVersion: placekit.dev/v1`, as types: what `-o json|yaml` (and
//! `jsonpath`, `custom-columns`, `name`) print. The JSON Schema of each kind is generated
//! from these types and published in `docs/schemas/v1/`; `published_schemas_are_current`
//! fails when the types and the published files differ, and refuses a change that is not
//! additive (a field removed, renamed or retyped, a value of an enumeration dropped): a
//! script written against `v1` keeps working, and a breaking change is a new module, `v2`.
//!
//! Every type of a report is a wire type of this module and its submodules (`change.rs`,
//! `pending.rs`, `inventory.rs`), converted from the model with `From`, so a refactor of the
//! model cannot change a published shape. One exception: `SnapshotPage` prints the snapshot
//! file's header and records as stored (`placekit_core::snapshot`), a format versioned by the
//! file's own `apiVersion`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pub mod change;
pub mod inventory;
pub mod pending;

use change::Report as ChangeReport;
use inventory::{NodeInventory, ResourceTotal};
use pending::{
    ClaimState, FilterFailure, GangJudgement, Nomination, PreemptionWouldHelp, SchedulerSays,
    Standing, Verdict,
};

use placekit_core::snapshot::{JournalRecord, SnapshotHeader};

/// The `apiVersion` of every report.
pub const API_VERSION: &str = "placekit.dev/v1";

/// A report kind: its fields, and the `kind` it is printed with.
pub trait Published: Serialize + JsonSchema {
    const KIND: &'static str;
}

/// A report as printed: `apiVersion` and `kind`, then the report's own fields.
#[derive(Debug, Serialize)]
pub struct Envelope<'a, T> {
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub kind: &'static str,
    #[serde(flatten)]
    pub report: &'a T,
}

/// `report` with its `apiVersion` and `kind`.
pub fn envelope<T: Published>(report: &T) -> Envelope<'_, T> {
    Envelope {
        api_version: API_VERSION,
        kind: T::KIND,
        report,
    }
}

/// The JSON Schema of `T` as printed: its fields, with `apiVersion` and `kind` fixed and
/// required. Objects admit no field the types do not declare, so a report that grows a
/// field without its type growing fails validation.
pub fn schema_of<T: Published>() -> Value {
    let mut schema = schema_for::<T>(&format!("v1/{}.json", T::KIND));
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut head = serde_json::Map::new();
    head.insert(
        "apiVersion".into(),
        serde_json::json!({"const": API_VERSION}),
    );
    head.insert("kind".into(), serde_json::json!({"const": T::KIND}));
    head.extend(properties);
    schema["properties"] = Value::Object(head);
    let mut required = vec![Value::from("apiVersion"), Value::from("kind")];
    required.extend(schema["required"].as_array().cloned().unwrap_or_default());
    schema["required"] = Value::Array(required);
    schema
}

/// Every published kind and its schema, in the order the docs list them.
pub fn schemas() -> Vec<(&'static str, Value)> {
    fn entry<T: Published>() -> (&'static str, Value) {
        (T::KIND, schema_of::<T>())
    }
    vec![
        entry::<ChangeReport>(),
        entry::<SnapshotHistory>(),
        entry::<SnapshotPage>(),
        entry::<LabelDependents>(),
        entry::<NodeLabels>(),
        entry::<GpuInventory>(),
        entry::<GpuRequests>(),
        entry::<DriftReport>(),
        entry::<PendingReport>(),
        entry::<PendingSummary>(),
    ]
}

impl Published for ChangeReport {
    const KIND: &'static str = "ChangeReport";
}

/// Where an item of a report over several clusters (`--contexts`) comes from; absent from a
/// report over one cluster.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Origin<'a> {
    /// The first kubeconfig context that reaches the cluster.
    pub context: &'a str,
    /// Every context that reaches it.
    pub contexts: &'a [String],
    /// The API server's URL.
    pub server: &'a str,
}

/// One item of a report, with its cluster when the report spans several.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Item<'a, T> {
    #[serde(flatten)]
    pub origin: Option<Origin<'a>>,
    #[serde(flatten)]
    pub item: &'a T,
}

impl<'a, T> Item<'a, T> {
    /// An item of a report over one cluster.
    pub fn local(item: &'a T) -> Self {
        Item { origin: None, item }
    }

    /// Each of `items`, of a report over one cluster.
    pub fn all_local(items: &'a [T]) -> Vec<Self> {
        items.iter().map(Item::local).collect()
    }
}

/// One cluster a report over several clusters (`--contexts`) read, or failed to.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextRead<'a> {
    /// The first kubeconfig context that reaches the cluster (`null` if none).
    pub context: Option<&'a str>,
    pub contexts: &'a [String],
    pub server: &'a str,
    /// Why the cluster could not be read; the report holds nothing of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
    /// `status`: the cluster's totals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub totals: Option<GpuTotals>,
    /// What the read could not see (a kind it may not list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<&'a [String]>,
    /// `drift`: the running pods checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pods_checked: Option<usize>,
    /// `drift`: how many of them drifted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drifted: Option<usize>,
}

/// `history`: the snapshots, oldest first, and the files that could not be read.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SnapshotHistory<'a> {
    pub items: &'a [HistoryEntry],
    pub unreadable: Vec<Unreadable>,
}

impl Published for SnapshotHistory<'_> {
    const KIND: &'static str = "SnapshotHistory";
}

/// `show SNAPSHOT`: the snapshot file's header and records, as stored (the file's own
/// `apiVersion` is the header's).
#[derive(Debug, Serialize, JsonSchema)]
pub struct SnapshotPage<'a> {
    /// The snapshot's name, which `show NAME` and `rollback NAME` take (`-o name` prints it).
    pub name: String,
    pub header: &'a SnapshotHeader,
    pub records: &'a [JournalRecord],
}

impl Published for SnapshotPage<'_> {
    const KIND: &'static str = "SnapshotPage";
}

/// `nodelabel dependents`: the workloads (and objects outside pods) whose node constraints
/// mention the keys.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LabelDependents<'a> {
    pub items: Vec<Item<'a, Dependent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<ContextRead<'a>>>,
}

impl Published for LabelDependents<'_> {
    const KIND: &'static str = "LabelDependents";
}

/// One workload's dependency on one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dependent {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The objects that use it (the ClusterQueues of a ResourceFlavor).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub used_by: Vec<String>,
    pub key: String,
    pub constraint: Constraint,
    /// The constraint as written, e.g. `accelerator.example.com/gpu-family In [a100]`.
    pub expression: String,
}

impl From<&placekit_lint::dependents::Dependent> for Dependent {
    fn from(dependent: &placekit_lint::dependents::Dependent) -> Self {
        use placekit_lint::dependents::Constraint as Model;
        Dependent {
            kind: dependent.kind.clone(),
            namespace: dependent.namespace.clone(),
            name: dependent.name.clone(),
            used_by: dependent.used_by.clone(),
            key: dependent.key.clone(),
            constraint: match dependent.constraint {
                Model::NodeSelector => Constraint::NodeSelector,
                Model::Required => Constraint::Required,
                Model::Preferred => Constraint::Preferred,
            },
            expression: dependent.expression.clone(),
        }
    }
}

/// How a workload depends on a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Constraint {
    /// `spec.nodeSelector`: required.
    NodeSelector,
    /// `requiredDuringSchedulingIgnoredDuringExecution`.
    Required,
    /// `preferredDuringSchedulingIgnoredDuringExecution`.
    Preferred,
}

/// `nodelabel show NODE`: every label with who wrote it and who owns it, and every taint
/// with who wrote the taint list and who owns the taint.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NodeLabels {
    pub items: Vec<LabelProvenance>,
    /// The nodes' taints (absent when they have none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<TaintProvenance>,
}

impl Published for NodeLabels {
    const KIND: &'static str = "NodeLabels";
}

/// `gpu-taint status`: a row per node with its accelerators, and the totals.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuInventory<'a> {
    /// The resource the flat fields of a node and of the totals count.
    pub resource: &'a str,
    pub nodes: Vec<Item<'a, NodeInventory>>,
    pub totals: InventoryTotals,
    /// `--group-by`: the label key, and its groups in the order of `nodes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_by: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<NodeGroup>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<ContextRead<'a>>>,
}

impl Published for GpuInventory<'_> {
    const KIND: &'static str = "GpuInventory";
}

/// The totals of `status`: the flat fields count the report's `resource`; `byResource` every
/// accelerator resource.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InventoryTotals {
    #[serde(flatten)]
    pub totals: GpuTotals,
    pub by_resource: Vec<ResourceTotal>,
}

/// How `status --by` sums requests.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RequestsBy {
    Namespace,
    Pod,
}

/// `gpu-taint status --by namespace|pod`: accelerator requests, summed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GpuRequests<'a> {
    pub by: RequestsBy,
    /// `-n`: the namespace read (`null`: every namespace).
    pub namespace: Option<&'a str>,
    pub items: Vec<Item<'a, RequestRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<ContextRead<'a>>>,
}

impl Published for GpuRequests<'_> {
    const KIND: &'static str = "GpuRequests";
}

/// `affinity-lint drift`: running pods whose node no longer satisfies them.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftReport<'a> {
    pub pods_checked: usize,
    pub list_requests: usize,
    pub items: Vec<Item<'a, Drift>>,
    /// Running pods bound to a node that is gone (`namespace`, `pod`, `node`).
    pub pods_on_missing_nodes: Vec<Item<'a, PodOnMissingNode>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<ContextRead<'a>>>,
}

impl Published for DriftReport<'_> {
    const KIND: &'static str = "DriftReport";
}

/// A running pod whose node no longer satisfies its constraints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
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
    /// The pod's controller (a ReplicaSet, StatefulSet, Job...), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<DriftOwner>,
}

impl From<&placekit_core::scheduler::drift::Drift> for Drift {
    fn from(drift: &placekit_core::scheduler::drift::Drift) -> Self {
        use placekit_core::scheduler::drift::DriftKind as Model;
        Drift {
            namespace: drift.namespace.clone(),
            pod: drift.pod.clone(),
            node: drift.node.clone(),
            reason: drift.reason.clone(),
            kind: match drift.kind {
                Model::Labels => DriftKind::Labels,
                Model::Taint => DriftKind::Taint,
            },
            owner: drift.owner.as_ref().map(|o| DriftOwner {
                kind: o.kind.clone(),
                name: o.name.clone(),
            }),
        }
    }
}

/// The controller a drifted pod belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DriftOwner {
    pub kind: String,
    pub name: String,
}

/// Why a pod drifted, which decides what happens to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DriftKind {
    /// nodeSelector or required node affinity: IgnoredDuringExecution, it keeps running.
    Labels,
    /// An untolerated NoExecute taint: the taint manager evicts it.
    Taint,
}

/// A running pod bound to a node that no longer exists.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PodOnMissingNode {
    pub namespace: String,
    pub pod: String,
    pub node: String,
}

/// The pod `why-pending POD` judged.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingPodRef<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub phase: &'a str,
    /// The node it is bound to, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<&'a str>,
}

/// `affinity-lint why-pending POD`. A pod that is not Pending has `pending: false` and
/// nothing more; one bound to a node has `scheduled: true` and its conditions; one held by
/// scheduling gates has them and the verdict; otherwise every field says what the scheduler
/// sees. Fields that quote the pod (`affinity`, `nodeSelector`, `tolerations`,
/// `topologySpreadConstraints`, `conditions`) are as the API server returned them, `null`
/// when the pod has none.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingReport<'a> {
    pub pod: Option<PendingPodRef<'a>>,
    pub pending: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduling_gates: Option<Vec<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<&'a Value>,
    /// The pod's effective requests, as quantities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claims: Option<Vec<ClaimState>>,
    /// What placekit cannot model for this pod (it then does not say the pod fits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_modelled: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mig_hint: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placeable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<PendingEvent<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<NodeFit<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fitting_nodes: Option<&'a [&'a str]>,
    /// The FailedScheduling message the scheduler would give now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_message: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Option<Verdict>>,
    /// A pod Kueue gates: its Workload and what it says of admission.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<KueueWorkload<'a>>,
    /// Where the pod stands before any filter: bound (to a node that exists, is missing or
    /// not Ready), another scheduler's, gated, or judged node by node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standing: Option<Standing>,
    /// The PodScheduled condition, when the scheduler said the pod was not scheduled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_says: Option<SchedulerSays>,
    /// placekit's model finds room where the scheduler's last word refused: both are said
    /// and the pod is not called placeable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disagreement: Option<&'a str>,
    /// The node a preemption nominated, and the victims still terminating there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nominated: Option<Nomination>,
    /// No node fits, but the scheduler's preemption would make room: where and whom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption: Option<PreemptionWouldHelp>,
    /// The gang the pod belongs to, judged as a group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang: Option<GangJudgement>,
}

impl Published for PendingReport<'_> {
    const KIND: &'static str = "PendingReport";
}

/// An event of the pod, as the API server returned its fields.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingEvent<'a> {
    #[serde(rename = "type")]
    pub type_: &'a Value,
    pub reason: &'a Value,
    pub message: &'a Value,
    pub count: &'a Value,
}

/// One node judged for the pod: it fits, or the scheduler's first failing filter.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeFit<'a> {
    pub name: &'a str,
    pub fits: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FilterFailure>,
    /// The failure in the scheduler's event wording, with placekit's detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every failing filter's reason, as the scheduler counts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_reasons: Option<Vec<String>>,
}

/// The Kueue Workload of a gated pod, its fields as the API server returned them.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KueueWorkload<'a> {
    pub name: &'a Value,
    pub queue_name: &'a Value,
    pub cluster_queue: &'a Value,
    pub conditions: &'a Value,
    pub admission: &'a str,
}

/// `affinity-lint why-pending` without a pod: every pending pod, judged.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingSummary<'a> {
    pub items: &'a [PendingItem],
}

impl Published for PendingSummary<'_> {
    const KIND: &'static str = "PendingSummary";
}

/// One pending pod as `why-pending` without a pod judges it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingItem {
    pub namespace: String,
    pub name: String,
    pub scheduling_gates: Vec<String>,
    /// Some node passes every filter placekit models, and nothing it cannot model is asked.
    pub placeable: bool,
    pub fitting_nodes: usize,
    pub predicted_message: Option<String>,
    pub verdict: Option<Verdict>,
    /// For a pod Kueue gates: what its Workload says of its admission.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kueue_admission: Option<String>,
    /// Where the pod stands before any filter (another scheduler's, gated, judged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standing: Option<Standing>,
    /// placekit's model finds room where the scheduler's last word refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disagreement: Option<String>,
    /// The node a preemption nominated, and the victims still terminating there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nominated: Option<Nomination>,
    /// No node fits, but the scheduler's preemption would make room: where and whom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption: Option<PreemptionWouldHelp>,
    /// The gang the pod belongs to, judged as a group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang: Option<GangJudgement>,
}

/// One row of `history`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub created_at: String,
    pub context: String,
    pub server: String,
    pub operation: String,
    pub command: String,
    pub nodes: usize,
    pub outcome: String,
    /// `no`, `yes` or `partly`.
    pub rolled_back: String,
    pub rolled_back_by: Vec<String>,
    /// What the newest rollback left alone because someone changed it since.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_alone: Vec<String>,
    /// The snapshot's name, which `show NAME` and `rollback NAME` take (`-o name` prints it).
    pub name: String,
    pub path: std::path::PathBuf,
}

/// One `--group-by` group: the nodes whose label has one value (or lacks it).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroup {
    /// The label's value; `None` for the nodes without the label.
    pub value: Option<String>,
    pub nodes: usize,
    /// The group's totals per resource.
    pub by_resource: Vec<ResourceTotal>,
}

/// One line of `--by namespace|pod`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestRow {
    pub namespace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The extended resource, or the DRA driver.
    pub resource: String,
    /// DRA devices allocated to the pod's (or namespace's) claims.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dra: bool,
    #[serde(serialize_with = "placekit_core::model::quantity::units")]
    pub requested: i128,
    /// `--by namespace`: how many pods (or claims, for DRA) it sums.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pods: Option<usize>,
}

/// Totals of a status table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuTotals {
    pub nodes: usize,
    #[serde(serialize_with = "placekit_core::model::quantity::units")]
    pub capacity: i128,
    #[serde(serialize_with = "placekit_core::model::quantity::units")]
    pub allocatable: i128,
    #[serde(serialize_with = "placekit_core::model::quantity::units")]
    pub requested: i128,
    #[serde(serialize_with = "placekit_core::model::quantity::units")]
    pub free: i128,
}

impl From<&placekit_core::gpu::GpuTotals> for GpuTotals {
    fn from(totals: &placekit_core::gpu::GpuTotals) -> Self {
        GpuTotals {
            nodes: totals.nodes,
            capacity: totals.capacity,
            allocatable: totals.allocatable,
            requested: totals.requested,
            free: totals.free,
        }
    }
}

/// A snapshot file `history` could not read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Unreadable {
    pub path: std::path::PathBuf,
    pub reason: String,
}

impl From<&placekit_core::snapshot::Unreadable> for Unreadable {
    fn from(file: &placekit_core::snapshot::Unreadable) -> Self {
        Unreadable {
            path: file.path.clone(),
            reason: file.reason.clone(),
        }
    }
}

/// One label of a node: who wrote it, who owns it, what acts on it (`nodelabel show`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelProvenance {
    pub node: String,
    pub key: String,
    pub value: String,
    /// The field managers that wrote it, from the node's managedFields (`kubelet`,
    /// `nfd-master`, `karpenter`, `kubectl-label`, `placekit`...), as the API server recorded
    /// them.
    pub managers: Vec<String>,
    /// The controller that owns it, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// What happens to a hand edit, or what a controller does when it changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl From<&placekit_core::label_controllers::LabelProvenance> for LabelProvenance {
    fn from(label: &placekit_core::label_controllers::LabelProvenance) -> Self {
        LabelProvenance {
            node: label.node.clone(),
            key: label.key.clone(),
            value: label.value.clone(),
            managers: label.managers.clone(),
            owner: label.owner.clone(),
            note: label.note.clone(),
        }
    }
}

/// One taint of a node: who wrote the taint list, who owns the taint, what a hand edit does
/// (`nodelabel show`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaintProvenance {
    pub node: String,
    /// `key=value:Effect`.
    pub taint: String,
    /// The field managers that wrote the node's taints. The list is atomic, so the API
    /// server records only its last writers, not who added each taint.
    pub managers: Vec<String>,
    /// The controller that owns it, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// What happens to a hand edit, and where to make the change instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl From<&placekit_core::taint_owners::TaintProvenance> for TaintProvenance {
    fn from(taint: &placekit_core::taint_owners::TaintProvenance) -> Self {
        TaintProvenance {
            node: taint.node.clone(),
            taint: taint.taint.clone(),
            managers: taint.managers.clone(),
            owner: taint.owner.clone(),
            note: taint.note.clone(),
        }
    }
}

/// `T`'s JSON Schema (draft 2020-12), published at `path`, every object closed.
pub(super) fn schema_for<T: JsonSchema>(path: &str) -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    schema["$id"] = Value::from(format!("https://placekit.dev/schemas/{path}"));
    close_objects(&mut schema);
    schema
}

/// Sets `additionalProperties: false` on every object schema that lists its properties and
/// says nothing of others, so a report that grows a field its type does not declare fails
/// validation. A map (`additionalProperties: {...}`) is left as it is; so is an object
/// whose fields a `oneOf`/`anyOf`/`allOf` also chooses (a flattened enum), which closing
/// would make refuse the branch's own fields.
fn close_objects(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let closable = map.contains_key("properties")
                && !map.contains_key("additionalProperties")
                && !["allOf", "oneOf", "anyOf"]
                    .iter()
                    .any(|k| map.contains_key(*k));
            if closable {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}
