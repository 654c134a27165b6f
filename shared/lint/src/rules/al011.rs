//! AL011 pdb-blocks-evictions finds a PodDisruptionBudget that allows no eviction of its
//! workload.
//!
//! A PodDisruptionBudget is judged over every pod it selects, so this rule is also a
//! [`GroupRule`] working in two steps: [`collect`] records facts about each PDB and each
//! workload while documents are linted (in parallel, one at a time), and [`judge`] matches
//! them once the whole input is read — only within one group (a directory, or one stream) and one namespace, so a PDB in
//! one kustomize base never meets a workload of another.
use std::collections::HashMap;

use super::super::affinity::LabelSelector;
use crate::finding::{Finding, ObjectRef};
use crate::rule::{Context, GroupFacts, GroupRule, RawFinding, Rule, RuleMeta, Scope, Severity};
use crate::source::Object;
use crate::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL011",
    name: "pdb-blocks-evictions",
    severity: Severity::Warning,
    summary: "a PodDisruptionBudget that allows no eviction of its workload",
    doc: "## What it does
For each PodDisruptionBudget, counts every pod it selects among the workloads of the same
input group (the files of one directory, or one stream) and namespace, and warns when no
eviction can ever be allowed: `minAvailable` at least the number of pods (a percentage is
rounded up, as the disruption controller does: 67% of 3 pods is 3), or `maxUnavailable: 0`.

A workload that a HorizontalPodAutoscaler of the same group scales is counted at the
autoscaler's `minReplicas` (1 when it is not written): the fewest pods it will run. A
budget that allows no eviction there blocks every drain while traffic is low. For
example, `minAvailable: 80%` over an autoscaler with `minReplicas: 1` needs 1 of 1.

## When it does not fire
- The selected pods cannot be counted (a DaemonSet, a custom resource): only
  `maxUnavailable: 0` and `minAvailable: 100%` are judged then.
- The PDB selects no workload of its group (it may guard pods created elsewhere).
- Every selected workload has `replicas: 0`.
- Two renderings of the same workload (kind and name) in one group count once, as the copy
  with the most pods: a second rendering is not a second workload.
- Workloads in other directories or namespaces are never counted (an object without a
  namespace counts as in `default`, where `kubectl apply` puts it unless told otherwise).

A PDB without a `selector` is flagged on its own: in `policy/v1` it selects no pod, so
it protects nothing (not when its budget allows every eviction anyway, `minAvailable: 0`
as an overlay's patch writes it or `maxUnavailable: 100%`; `maxUnavailable: 0` and
`minAvailable: 100%` are flagged: they were meant to block every eviction).

## Why it matters
No voluntary eviction is ever allowed: node drains and cluster upgrades block on these pods.
With one replica, `minAvailable: 1` is exactly this.

## Example
```yaml
spec: {minAvailable: 1, selector: {matchLabels: {app: llm-inference}}}   # replicas: 1
```

## Fix
Run more replicas than `minAvailable`, or use `maxUnavailable: 1`. A PDB that must block
(a singleton database) is marked with the annotation
`affinity-lint.placekit.dev/ignore: AL011`.",
};

/// Judged by [`judge`] over the input group; nothing to do per object.
#[derive(Debug)]
pub struct Al011;

impl Rule for Al011 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    /// What needs no other object: a budget without a selector guards no pod.
    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        if cx.object.kind != "PodDisruptionBudget" || !cx.object.api_version.starts_with("policy/")
        {
            return;
        }
        let Some(spec) = cx.object.root.get("spec") else {
            return;
        };
        // A budget that allows every eviction (`minAvailable: 0`, as an overlay's patch sets
        // it, or `maxUnavailable: 100%`) means to protect nothing: its missing selector is no
        // mistake. `maxUnavailable: 0` and `minAvailable: 100%` are the strictest budgets.
        let text = |n: &Node| n.scalar_text().map(|t| t.trim().to_string());
        let (budget, protects) = match (spec.get("minAvailable"), spec.get("maxUnavailable")) {
            (Some(min), _) => (
                Some(min),
                text(min).is_some_and(|b| !matches!(b.as_str(), "0" | "0%")),
            ),
            (None, Some(max)) => (Some(max), text(max).is_some_and(|b| b != "100%")),
            (None, None) => (None, false),
        };
        if spec.get("selector").is_none_or(Node::is_null)
            && protects
            && let Some(at) = budget
        {
            out.push(RawFinding::at(at, "this PodDisruptionBudget has no selector: it selects no pod, so no pod is protected from evictions"));
        }
    }

    fn scope(&self) -> Scope {
        Scope::Object
    }

    fn group(&self) -> Option<&dyn GroupRule> {
        Some(self)
    }
}

/// A budget: `minAvailable` or `maxUnavailable`, as a count or a percentage.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Budget {
    MinAvailable(Amount),
    MaxUnavailable(Amount),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Amount {
    Count(i64),
    Percent(i64),
}

impl Amount {
    fn parse(node: &Node) -> Option<Self> {
        let text = node.scalar_text()?.trim();
        match text.strip_suffix('%') {
            Some(p) => p.parse().ok().map(Amount::Percent),
            None => text.parse().ok().map(Amount::Count),
        }
    }

    /// The number of pods it stands for among `pods`, rounded up as the disruption
    /// controller does (`GetScaledValueFromIntOrPercent(..., roundUp=true)`).
    fn of(self, pods: i64) -> i64 {
        match self {
            Amount::Count(n) => n,
            Amount::Percent(p) => pods.saturating_mul(p).saturating_add(99) / 100,
        }
    }
}

/// A PodDisruptionBudget as the judgement needs it.
#[derive(Debug, Clone)]
struct Pdb {
    group: String,
    namespace: Option<String>,
    selector: LabelSelector,
    budget: Budget,
    /// The budget field's text, as written.
    written: String,
    file: String,
    line: usize,
    column: usize,
    object: ObjectRef,
    helm_template: Option<String>,
    source_line: Option<String>,
}

/// A pod template and how many pods of it run (`None` when that is not known offline).
#[derive(Debug, Clone)]
struct Pods {
    group: String,
    namespace: Option<String>,
    kind: String,
    name: String,
    labels: Vec<(String, String)>,
    count: Option<i64>,
    display: String,
}

/// A HorizontalPodAutoscaler: the workload it scales (by group, namespace, kind and name) and
/// the fewest pods it keeps.
#[derive(Debug, Clone)]
struct Autoscaler {
    group: String,
    namespace: Option<String>,
    kind: String,
    name: String,
    min_replicas: i64,
}

/// What the documents told about budgets and pods.
#[derive(Debug, Default)]
pub struct Facts {
    pdbs: Vec<Pdb>,
    pods: Vec<Pods>,
    /// The HorizontalPodAutoscalers: what each scales and its `minReplicas`.
    autoscaled: Vec<Autoscaler>,
}

impl Facts {
    pub fn extend(&mut self, other: Facts) {
        self.pdbs.extend(other.pdbs);
        self.pods.extend(other.pods);
        self.autoscaled.extend(other.autoscaled);
    }
}

impl GroupFacts for Facts {
    fn append(&mut self, later: Box<dyn GroupFacts>) {
        let later: Box<dyn std::any::Any> = later;
        if let Ok(later) = later.downcast::<Facts>() {
            self.extend(*later);
        }
    }
}

impl GroupRule for Al011 {
    fn new_facts(&self) -> Box<dyn GroupFacts> {
        Box::<Facts>::default()
    }

    fn collect(&self, object: &Object<'_>, group: &str, facts: &mut dyn GroupFacts) {
        let facts: &mut dyn std::any::Any = facts;
        if let Some(facts) = facts.downcast_mut::<Facts>() {
            collect(object, group, facts);
        }
    }

    fn judge(&self, facts: &dyn GroupFacts, severity: Severity) -> Vec<Finding> {
        let facts: &dyn std::any::Any = facts;
        facts
            .downcast_ref::<Facts>()
            .map(|f| judge(f, severity))
            .unwrap_or_default()
    }
}

/// How many pods of a workload run at once, when the object says.
fn pod_count(object: &Object<'_>) -> Option<i64> {
    let spec = object.root.get("spec");
    let field = |name: &str, default: i64| {
        spec.and_then(|s| s.get(name))
            .map_or(Some(default), Node::as_i64)
    };
    match object.kind.as_str() {
        "Pod" => Some(1),
        "Deployment" | "StatefulSet" | "ReplicaSet" | "ReplicationController" => {
            field("replicas", 1)
        }
        "Job" => field("parallelism", 1),
        _ => None,
    }
}

/// Records the facts one object gives (its view 0).
pub fn collect(object: &Object<'_>, group: &str, facts: &mut Facts) {
    if object.kind == "HorizontalPodAutoscaler" {
        let target = object.root.path(&["spec", "scaleTargetRef"]);
        let field = |k: &str| target.and_then(|t| t.get(k)).and_then(Node::as_str);
        // autoscaling/v2 defaults minReplicas to 1.
        let min_replicas = object
            .root
            .path(&["spec", "minReplicas"])
            .and_then(Node::as_i64)
            .unwrap_or(1);
        if let (Some(kind), Some(name)) = (field("kind"), field("name")) {
            facts.autoscaled.push(Autoscaler {
                group: group.to_string(),
                namespace: object.namespace.clone(),
                kind: kind.to_string(),
                name: name.to_string(),
                min_replicas,
            });
        }
        return;
    }
    if object.kind == "PodDisruptionBudget" {
        let Some(spec) = object.root.get("spec") else {
            return;
        };
        // policy/v1: a PDB without a selector selects no pod.
        let Some(selector) = spec.get("selector").filter(|s| !s.is_null()) else {
            return;
        };
        let (field, make): (&str, fn(Amount) -> Budget) = if spec.get("maxUnavailable").is_some() {
            ("maxUnavailable", Budget::MaxUnavailable)
        } else {
            ("minAvailable", Budget::MinAvailable)
        };
        let Some(node) = spec.get(field) else {
            return;
        };
        let Some(amount) = Amount::parse(node) else {
            return;
        };
        facts.pdbs.push(Pdb {
            group: group.to_string(),
            namespace: object.namespace.clone(),
            selector: LabelSelector::from_node(selector),
            budget: make(amount),
            written: format!("{field} {}", node.scalar_text().unwrap_or_default()),
            file: object.file.to_string(),
            line: node.line,
            column: node.col,
            object: ObjectRef {
                kind: object.kind.clone(),
                namespace: object.namespace.clone(),
                name: object.name.clone(),
            },
            helm_template: object.helm_source.map(str::to_string),
            source_line: object.document.line(node.line).map(str::to_string),
        });
        return;
    }
    // Every pod template of the object runs pods; one count covers the core kinds.
    let labels = object.pod_labels();
    if object.pod.is_none() || labels.is_empty() {
        return;
    }
    facts.pods.push(Pods {
        group: group.to_string(),
        namespace: object.namespace.clone(),
        kind: object.kind.clone(),
        name: object.name.clone(),
        labels: labels
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        count: pod_count(object),
        display: object.display(),
    });
}

/// An object's namespace for matching: one without any is applied to the current
/// namespace, `default` unless the kubeconfig says otherwise.
fn namespace(ns: &Option<String>) -> Option<&str> {
    Some(ns.as_deref().unwrap_or("default"))
}

/// The findings: every PDB against the pods of its group and namespace.
pub fn judge(facts: &Facts, severity: Severity) -> Vec<Finding> {
    let mut out = Vec::new();
    // Pods by (group, namespace), and by each of their labels within it: a budget with a
    // `matchLabels` entry looks only at the pods carrying it, so thousands of budgets and
    // workloads in one directory are not compared pairwise.
    type Place<'f> = (&'f str, Option<&'f str>);
    let mut by_place: HashMap<Place<'_>, Vec<&Pods>> = HashMap::new();
    let mut by_label: HashMap<(Place<'_>, &str, &str), Vec<&Pods>> = HashMap::new();
    for p in &facts.pods {
        let place = (p.group.as_str(), namespace(&p.namespace));
        by_place.entry(place).or_default().push(p);
        for (k, v) in &p.labels {
            by_label
                .entry((place, k.as_str(), v.as_str()))
                .or_default()
                .push(p);
        }
    }
    for pdb in &facts.pdbs {
        let place = (pdb.group.as_str(), namespace(&pdb.namespace));
        let candidates = match pdb.selector.match_labels.first() {
            Some((k, v)) => by_label.get(&(place, k.as_str(), v.as_str())),
            None => by_place.get(&place),
        };
        let selected: Vec<&Pods> = candidates
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .copied()
            .filter(|p| pdb.selector.selects(&p.labels))
            .collect();
        if selected.is_empty() {
            continue;
        }
        // Two renderings of one workload (a chart rendered twice, a base beside its overlay's
        // output) are one workload, not twice its pods: keep the copy that runs the most (an
        // unknown count, the most of all: it gives no verdict).
        let mut unique: Vec<&Pods> = Vec::new();
        for p in selected {
            match unique
                .iter_mut()
                .find(|u| u.kind == p.kind && u.name == p.name)
            {
                Some(u) => {
                    let more = |x: &Pods| x.count.map_or(i64::MAX, |c| c);
                    if more(p) > more(u) {
                        *u = p;
                    }
                }
                None => unique.push(p),
            }
        }
        let selected = unique;
        // An autoscaled workload runs as few pods as its autoscaler's minReplicas: the
        // budget is judged there, where it blocks drains first.
        let mut at_minimum = false;
        let total: Option<i64> = selected
            .iter()
            .map(|p| {
                let scaler = facts.autoscaled.iter().find(|a| {
                    a.group == p.group
                        && namespace(&a.namespace) == namespace(&p.namespace)
                        && a.kind == p.kind
                        && a.name == p.name
                });
                match scaler {
                    Some(a) => {
                        at_minimum = true;
                        Some(a.min_replicas)
                    }
                    None => p.count,
                }
            })
            .sum();
        let names = selected
            .iter()
            .map(|p| p.display.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        const MORE_REPLICAS: &str = "run more replicas than minAvailable, or use maxUnavailable: 1";
        let judged = match (&pdb.budget, total) {
            (Budget::MaxUnavailable(a), _) if a.of(total.unwrap_or(1).max(1)) == 0 => Some((
                format!(
                    "{} allows no eviction: node drains and upgrades block",
                    pdb.written
                ),
                "allow at least one pod to be unavailable: maxUnavailable: 1",
            )),
            (Budget::MinAvailable(Amount::Percent(p)), _) if *p >= 100 => Some((
                format!(
                    "{} allows no eviction: node drains and upgrades block",
                    pdb.written
                ),
                "use maxUnavailable: 1 (or a minAvailable below 100% that leaves a pod to evict)",
            )),
            (Budget::MinAvailable(a), Some(total)) if total > 0 => {
                let needed = a.of(total);
                (needed >= total).then(|| {
                    let rounded = match a {
                        Amount::Percent(_) => format!(" (rounded up to {needed})"),
                        Amount::Count(_) => String::new(),
                    };
                    let when = if at_minimum {
                        " at the HorizontalPodAutoscaler's minReplicas"
                    } else {
                        ""
                    };
                    (
                        format!(
                            "{}{rounded} with {total} pod{} ({names}){when}: no voluntary eviction is allowed, node drains block",
                            pdb.written,
                            if total == 1 { "" } else { "s" },
                        ),
                        if at_minimum {
                            "raise the autoscaler's minReplicas above minAvailable, or use maxUnavailable: 1"
                        } else {
                            MORE_REPLICAS
                        },
                    )
                })
            }
            _ => None,
        };
        if let Some((message, fix)) = judged {
            out.push(Finding {
                rule: META.id.to_string(),
                severity,
                file: pdb.file.clone(),
                line: pdb.line,
                column: pdb.column,
                object: pdb.object.clone(),
                pod_spec: None,
                message,
                fix: Some(fix.into()),
                helm_template: pdb.helm_template.clone(),
                source_line: pdb.source_line.clone(),
                fixable: None,
                edit: None,
                manual_reason: None,
                context: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up_like_the_disruption_controller() {
        assert_eq!(Amount::Percent(67).of(3), 3);
        assert_eq!(Amount::Percent(50).of(3), 2);
        assert_eq!(Amount::Percent(10).of(3), 1);
        assert_eq!(Amount::Percent(0).of(3), 0);
        assert_eq!(Amount::Count(2).of(3), 2);
    }
}
