//! AL018 misplaced-scheduling-field finds a scheduling field where the API has none:
//! refused by kubectl apply, dropped for other clients.
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Scope, Severity};
use crate::yaml::{Node, NodeKind};
use placekit_core::suggest::nearest_key;

pub static META: RuleMeta = RuleMeta {
    id: "AL018",
    name: "misplaced-scheduling-field",
    severity: Severity::Error,
    summary: "a scheduling field where the API has none: refused by kubectl apply, dropped for other clients",
    doc: "## What it does
Flags scheduling fields written where the object's schema has no such field, as the API
server's field validation judges them:

- `affinity`, `nodeSelector`, `tolerations`, `topologySpreadConstraints`, `nodeName`,
  `schedulerName`, `priorityClassName` or `schedulingGates` beside a pod template's `spec`
  (a pod template has only `metadata` and `spec`), in a core workload's `spec` (a
  Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob has no such field), and
  beside the pod templates of the custom resources whose templates the linter knows (a
  RayCluster's head and worker groups, a PyTorchJob's replicas, a JobSet's jobs, a
  LeaderWorkerSet's templates...);
- a field inside `affinity`, a toleration, a topology spread constraint or a scheduling
  gate that the Kubernetes API does not have (`requiredDuringScheduling`,
  `matchExpression`, `topologykey`...), with the field it most likely meant.

With `--crd-dir DIR` (the CustomResourceDefinitions in a directory: a chart's `crds/`, or
`kubectl get crd NAME -o yaml` saved there), a CRD among the files linted, or with
`--cluster` the CRD the cluster serves, a custom resource of a kind defined there is
judged by its CRD's structural schema instead: a scheduling field (or a field under one) that
the schema does not declare, and does not keep with `x-kubernetes-preserve-unknown-fields`,
is pruned by the API server, wherever it is written. With `--cluster`, the CRD the cluster
serves wins over one among the files (the API server applies its own); a version a CRD
does not serve (`served: false`) judges nothing; and a CRD that declares nothing under its
`spec` (everything kept with `x-kubernetes-preserve-unknown-fields`) does not replace the
linter's table for a kind whose templates it knows: such a CRD beside the files cannot
silence the rule.

## When it does not fire
Only the paths whose schema is known: a core kind's own, and the pod templates of the
custom resources in the linter's table. Any other place in a custom resource may have a
field of that name in its CRD, and an operator's own spec-like types may extend the core
ones (prometheus-operator's spread constraints take `additionalLabelSelectors`). Keys a
template engine fills in (`{{ }}`, `${ }`) are not judged.

## Why it matters
`kubectl apply` validates fields strictly and refuses the whole object (`unknown field
\"spec.template.affinity\"`). Clients that do not ask for strict validation (Helm, Argo CD,
operators) get the object created with the field dropped, and so does every custom
resource, whose structural schema prunes what it does not declare: the constraint never
takes effect, and nothing says so. The pods are placed as if it were not written.

## Example
```yaml
spec:
  template:
    affinity:            # beside spec: refused, or dropped
      podAntiAffinity: ...
    spec:
      containers: ...
```

## Fix
Move the field into the pod spec (`spec.template.spec.affinity`), or correct its name.",
};

#[derive(Debug)]
pub struct Al018;

/// The pod spec's fields that decide placement: written beside a template's `spec`, or in a
/// workload's own `spec`, they are misplaced.
const SCHEDULING: &[&str] = &[
    "affinity",
    "nodeSelector",
    "tolerations",
    "topologySpreadConstraints",
    "nodeName",
    "schedulerName",
    "priorityClassName",
    "schedulingGates",
];

/// A type of the scheduling API and its fields (Kubernetes v1.37, `kubectl explain`).
#[derive(Debug, Clone, Copy)]
enum Type {
    Affinity,
    NodeAffinity,
    NodeSelector,
    NodeSelectorTerm,
    NodeSelectorRequirement,
    PreferredSchedulingTerm,
    PodAffinity,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
    LabelSelector,
    LabelSelectorRequirement,
    Toleration,
    TopologySpreadConstraint,
    SchedulingGate,
}

impl Type {
    fn name(self) -> &'static str {
        match self {
            Type::Affinity => "affinity",
            Type::NodeAffinity => "nodeAffinity",
            Type::NodeSelector => "a node selector",
            Type::NodeSelectorTerm => "a node selector term",
            Type::NodeSelectorRequirement => "a node selector requirement",
            Type::PreferredSchedulingTerm => "a preferred scheduling term",
            Type::PodAffinity => "pod (anti-)affinity",
            Type::PodAffinityTerm => "a pod affinity term",
            Type::WeightedPodAffinityTerm => "a weighted pod affinity term",
            Type::LabelSelector => "a label selector",
            Type::LabelSelectorRequirement => "a label selector requirement",
            Type::Toleration => "a toleration",
            Type::TopologySpreadConstraint => "a topology spread constraint",
            Type::SchedulingGate => "a scheduling gate",
        }
    }

    /// The fields, and the type of those the rule walks into (`None`: a scalar, a string
    /// map or a list of strings).
    fn fields(self) -> &'static [(&'static str, Option<(Type, bool)>)] {
        // (field, Some((type, is a list of it)))
        match self {
            Type::Affinity => &[
                ("nodeAffinity", Some((Type::NodeAffinity, false))),
                ("podAffinity", Some((Type::PodAffinity, false))),
                ("podAntiAffinity", Some((Type::PodAffinity, false))),
            ],
            Type::NodeAffinity => &[
                (
                    "requiredDuringSchedulingIgnoredDuringExecution",
                    Some((Type::NodeSelector, false)),
                ),
                (
                    "preferredDuringSchedulingIgnoredDuringExecution",
                    Some((Type::PreferredSchedulingTerm, true)),
                ),
            ],
            Type::NodeSelector => &[("nodeSelectorTerms", Some((Type::NodeSelectorTerm, true)))],
            Type::NodeSelectorTerm => &[
                (
                    "matchExpressions",
                    Some((Type::NodeSelectorRequirement, true)),
                ),
                ("matchFields", Some((Type::NodeSelectorRequirement, true))),
            ],
            Type::NodeSelectorRequirement | Type::LabelSelectorRequirement => {
                &[("key", None), ("operator", None), ("values", None)]
            }
            Type::PreferredSchedulingTerm => &[
                ("weight", None),
                ("preference", Some((Type::NodeSelectorTerm, false))),
            ],
            Type::PodAffinity => &[
                (
                    "requiredDuringSchedulingIgnoredDuringExecution",
                    Some((Type::PodAffinityTerm, true)),
                ),
                (
                    "preferredDuringSchedulingIgnoredDuringExecution",
                    Some((Type::WeightedPodAffinityTerm, true)),
                ),
            ],
            Type::PodAffinityTerm => &[
                ("labelSelector", Some((Type::LabelSelector, false))),
                ("namespaces", None),
                ("topologyKey", None),
                ("namespaceSelector", Some((Type::LabelSelector, false))),
                ("matchLabelKeys", None),
                ("mismatchLabelKeys", None),
            ],
            Type::WeightedPodAffinityTerm => &[
                ("weight", None),
                ("podAffinityTerm", Some((Type::PodAffinityTerm, false))),
            ],
            Type::LabelSelector => &[
                ("matchLabels", None),
                (
                    "matchExpressions",
                    Some((Type::LabelSelectorRequirement, true)),
                ),
            ],
            Type::Toleration => &[
                ("key", None),
                ("operator", None),
                ("value", None),
                ("effect", None),
                ("tolerationSeconds", None),
            ],
            Type::TopologySpreadConstraint => &[
                ("maxSkew", None),
                ("topologyKey", None),
                ("whenUnsatisfiable", None),
                ("labelSelector", Some((Type::LabelSelector, false))),
                ("minDomains", None),
                ("nodeAffinityPolicy", None),
                ("nodeTaintsPolicy", None),
                ("matchLabelKeys", None),
            ],
            Type::SchedulingGate => &[("name", None)],
        }
    }
}

/// Text a template engine fills in.
fn templated(text: &str) -> bool {
    text.contains("{{") || text.contains("${") || text.contains("$(")
}

/// What happens to the unknown field at `path`, in the API server's words and the user's.
fn consequence(core: bool, path: &str) -> String {
    if core {
        format!(
            "kubectl apply refuses the object (strict decoding error: unknown field \"{path}\"), and a client that does not validate strictly (Helm, Argo CD, --validate=false) has the field dropped, so the pods are placed without it"
        )
    } else {
        format!(
            "the custom resource's schema prunes it when the object is created (kubectl apply refuses it: unknown field \"{path}\"), so the operator's pods are placed without it"
        )
    }
}

/// Checks `node` as a value of `ty` (each item, for a list).
fn walk(node: &Node, ty: Type, list: bool, at: &str, core: bool, out: &mut Vec<RawFinding>) {
    if list {
        let at = format!("{at}[]");
        for item in node.items() {
            walk(item, ty, false, &at, core, out);
        }
        return;
    }
    if !matches!(node.kind, NodeKind::Map(_)) {
        return; // AL004 says what is wrong with a shape.
    }
    let fields = ty.fields();
    for (key, value) in node.entries() {
        let Some(name) = key.as_str() else { continue };
        // A template engine's key, a YAML merge key, or a kustomize patch's directive
        // (`$patch: delete`, `$retainKeys`).
        if templated(name) || name.starts_with("<<") || name.starts_with('$') {
            continue;
        }
        match fields.iter().find(|(f, _)| *f == name) {
            Some((_, Some((inner, is_list)))) => {
                walk(value, *inner, *is_list, &format!("{at}.{name}"), core, out);
            }
            Some((_, None)) => {}
            None => {
                // A typo, another case, or the start of a long name
                // (`requiredDuringScheduling`).
                let meant = nearest_key(name, fields.iter().map(|(f, _)| *f))
                    .or_else(|| {
                        fields.iter().map(|(f, _)| *f).find(|f| {
                            f.eq_ignore_ascii_case(name)
                                || (name.len() >= 8
                                    && f.to_ascii_lowercase()
                                        .starts_with(&name.to_ascii_lowercase()))
                        })
                    })
                    .map(|f| format!(" (did you mean `{f}`?)"))
                    .unwrap_or_default();
                let known: Vec<&str> = fields.iter().map(|(f, _)| *f).collect();
                let path = format!("{at}.{name}");
                out.push(RawFinding::at(
                    key,
                    format!(
                        "`{path}` is not a field of {} ({}){meant}: {}",
                        ty.name(),
                        known.join(", "),
                        consequence(core, &path)
                    ),
                ));
            }
        }
    }
}

/// Scheduling fields among a map's keys where the schema has none.
fn misplaced(node: &Node, at: &str, what: &str, into: &str, core: bool, out: &mut Vec<RawFinding>) {
    for (key, _) in node.entries() {
        let Some(name) = key.as_str() else { continue };
        if SCHEDULING.contains(&name) {
            let path = format!("{at}.{name}");
            out.push(RawFinding::at(
                key,
                format!(
                    "`{path}` is not a field of {what}: {}; move it to `{into}.{name}`",
                    consequence(core, &path)
                ),
            ));
        }
    }
}

/// The scheduling fields of a custom resource its CRD's schema does not declare: a
/// scheduling field's name, or anything under one.
fn pruned(
    object: &crate::source::Object<'_>,
    schema: &serde_json::Value,
    out: &mut Vec<RawFinding>,
) {
    for (path, key) in crate::crds::undeclared(object.root, schema) {
        let scheduling = path
            .split(['.', '['])
            .any(|segment| SCHEDULING.contains(&segment));
        if !scheduling {
            continue;
        }
        out.push(RawFinding::at(
            key,
            format!(
                "`{path}` is not in the CustomResourceDefinition's schema for {} ({}): the API server prunes it when the object is created (kubectl apply refuses it: unknown field \"{path}\"), so the operator never sees it and its pods are placed without it",
                object.kind, object.api_version
            ),
        ));
    }
}

impl Rule for Al018 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let object = cx.object;
        // A custom resource whose CRD was given is judged by its schema, wherever the
        // scheduling fields are (and not again by the table's templates).
        // A CRD that declares nothing under its spec (everything kept as unknown fields)
        // says nothing either way: a kind the table knows is still judged by the table, so
        // such a CRD among the files cannot silence the rule.
        if let Some(schema) = cx.crds.schema(&object.api_version, &object.kind)
            && !(object.pod.is_some()
                && cx.crds.declares_nothing(&object.api_version, &object.kind))
        {
            if object.view == 0 {
                pruned(object, schema, out);
            }
            return;
        }
        let Some(pod) = object.pod.as_ref() else {
            return;
        };
        let core = pod.core;
        if let Some(template) = pod.template {
            let at = pod.path.strip_suffix(".spec").unwrap_or(&pod.path);
            misplaced(
                template,
                at,
                "a pod template (metadata, spec)",
                &pod.path,
                core,
                out,
            );
        }
        // A core workload's own spec (a Deployment's `spec.affinity`).
        if core && cx.object.view == 0 {
            let workload_spec = match cx.object.kind.as_str() {
                "Pod" | "PodTemplate" => None,
                "CronJob" => cx
                    .object
                    .root
                    .path(&["spec", "jobTemplate", "spec"])
                    .map(|s| (s, "spec.jobTemplate.spec")),
                _ => cx.object.root.get("spec").map(|s| (s, "spec")),
            };
            if let Some((spec, at)) = workload_spec {
                misplaced(
                    spec,
                    at,
                    &format!("a {} spec", cx.object.kind),
                    &pod.path,
                    core,
                    out,
                );
            }
        }
        // Inside a pod spec whose type is the core PodSpec (a core kind's, or a pod template
        // in the table): an operator's own spec-like type may extend the fields
        // (prometheus-operator's spread constraints add `additionalLabelSelectors`).
        if !core && pod.template.is_none() {
            return;
        }
        let spec = pod.spec;
        let at = &pod.path;
        if let Some(affinity) = spec.get("affinity") {
            walk(
                affinity,
                Type::Affinity,
                false,
                &format!("{at}.affinity"),
                core,
                out,
            );
        }
        if let Some(tolerations) = spec.get("tolerations") {
            walk(
                tolerations,
                Type::Toleration,
                true,
                &format!("{at}.tolerations"),
                core,
                out,
            );
        }
        if let Some(spread) = spec.get("topologySpreadConstraints") {
            walk(
                spread,
                Type::TopologySpreadConstraint,
                true,
                &format!("{at}.topologySpreadConstraints"),
                core,
                out,
            );
        }
        if let Some(gates) = spec.get("schedulingGates") {
            walk(
                gates,
                Type::SchedulingGate,
                true,
                &format!("{at}.schedulingGates"),
                core,
                out,
            );
        }
    }

    fn scope(&self) -> Scope {
        Scope::PodSpec
    }
}
