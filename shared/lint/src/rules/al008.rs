//! AL008 spread-selector-mismatch finds a topology spread or anti-affinity labelSelector
//! that does not match the pod's own labels.
use crate::affinity::LabelSelector;
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity, UnlessSelected};
use crate::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL008",
    name: "spread-selector-mismatch",
    severity: Severity::Error,
    summary: "a topology spread or anti-affinity labelSelector that does not match the pod's own labels",
    doc: "## What it does
Flags `topologySpreadConstraints` and `podAntiAffinity` terms whose `labelSelector` does not
select the pod template's own labels (error with `DoNotSchedule` or required anti-affinity,
warning with `ScheduleAnyway` or preferred), and invalid combinations: `minDomains` with
`ScheduleAnyway` or below 1, `matchLabelKeys` repeating a key of the `labelSelector`.

## When it does not fire
- An anti-affinity term for *other* applications (a router keeping away from `app: mysql`)
  is deliberate: a podAntiAffinity term is judged only when it is evidently meant for the
  workload itself — it names one of the pod's labels with the pod's value (and misses on
  another key), a value one typo away, or the pod's value under a related key (`app: zk`
  for a pod labelled `app.kubernetes.io/name: zk`) — and no other term already selects
  the pod. Mark a deliberate case with `affinity-lint.placekit.dev/ignore: AL008`.
  A term over keys none of the pods carry is judged too when the workload has two or more
  replicas (`replicas` beside the template) and the term names the workload: a key or value
  shares a word with its name (`csi-hcloud In [controller]` in the Deployment
  `hcloud-csi-controller`). `component In [db]` in a `router` names another application.
  Either judgement is a guess, so it gives way when the term selects the pods of any other
  workload in the same input (a directory, or one stream) and namespace (every namespace
  with a `namespaceSelector`): `app In [cache-1]` in `cache-3` beside a Deployment
  `cache-1` keeps away from that sibling on purpose. Another rendering of the same object
  (kind, namespace and name) is not a sibling.
- A workload that says it runs one replica (`replicas: 1` beside its template): nothing to
  keep apart yet.
- Files in a kustomization's directory: kustomize may add labels to the template
  (`labels`, `commonLabels`), so a selector key the template lacks is not judged there.
- DaemonSets: they have no replicas to keep apart, so their anti-affinity is not judged;
  and each pod may go to its one node only, so a spread constraint cannot spread (or block)
  it, whatever it selects. Invalid fields (`minDomains`, `matchLabelKeys`) are still named.
- Pod templates without labels (nothing to compare with).
- Selector keys the pods get from their controller rather than the template: the core
  controllers' own (`pod-template-hash`, `job-name`, `statefulset.kubernetes.io/pod-name`,
  ...), and any key in a custom resource's pod template (KubeRay adds `ray.io/group`,
  Kubeflow `training.kubeflow.org/replica-type`) — except the label an operator sets to the
  object's own name, which is checked against it: `training.kubeflow.org/job-name` and the
  short `job-name` the same operator also sets (PyTorchJob, TFJob, MPIJob, XGBoostJob,
  PaddleJob, MXJob, JAXJob; a core Job's `job-name` comes from the Job controller and is
  trusted), `ray.io/cluster`
  (RayCluster), `jobset.sigs.k8s.io/jobset-name` (JobSet),
  `leaderworkerset.sigs.k8s.io/name` (LeaderWorkerSet). A worker anti-affinity copied from
  the job `nccl-all-reduce` into `nccl-tests-h100` keeps nothing apart; a name sharing no
  word with the job's (keeping away from an unrelated job) is left alone. A custom
  resource's spread constraint without a labelSelector is left to its operator too.

## Why it matters
The constraint then counts other pods, not this workload's replicas: replicas pile up on
one node or zone while the constraint looks satisfied.

## Example
```yaml
labels: {app: llm-inference}
topologySpreadConstraints:
- {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,
   labelSelector: {matchLabels: {app: llm-inferenc}}}
```

## Fix
Use the template's labels in the selector (`app: llm-inference`).",
};

#[derive(Debug)]
pub struct Al008;

/// Label keys the core controllers put on the pods they create, beside the template's.
const CONTROLLER_KEYS: &[&str] = &[
    "pod-template-hash",
    "controller-revision-hash",
    "pod-template-generation",
    "statefulset.kubernetes.io/pod-name",
    "apps.kubernetes.io/pod-index",
    "job-name",
    "controller-uid",
    "batch.kubernetes.io/job-name",
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-completion-index",
];

/// The words of a name, a label key or a value (`hcloud-csi-controller`), without the
/// domain words of well-known prefixes and without words too short to mean anything.
fn words(text: &str) -> Vec<String> {
    text.split(['.', '/', '-', '_'])
        .map(str::to_ascii_lowercase)
        .filter(|w| {
            w.len() >= 3
                && !matches!(
                    w.as_str(),
                    "kubernetes" | "k8s" | "com" | "org" | "app" | "name" | "sigs"
                )
        })
        .collect()
}

/// Whether a selector over keys the pods do not carry still speaks of this workload: a key
/// or value shares a word with the object's name (`csi-hcloud In [controller]` in the
/// Deployment `hcloud-csi-controller`). A selector of another application's labels
/// (`component: db` in a `router`) shares none.
fn names_the_workload(selector: &LabelSelector, name: &str) -> bool {
    let own = words(name);
    let written = selector
        .match_labels
        .iter()
        .flat_map(|(k, v)| [k.as_str(), v.as_str()])
        .chain(selector.expressions.iter().flat_map(|(k, _, values)| {
            std::iter::once(k.as_str()).chain(values.iter().map(String::as_str))
        }));
    written.flat_map(words).any(|w| own.contains(&w))
}

/// The namespaces a pod affinity term looks in: any with a `namespaceSelector`, the listed
/// `namespaces`, else the pod's own (`default` for a manifest without one).
fn term_namespaces(term: &Node, own: Option<&str>) -> Option<Vec<String>> {
    if term.get("namespaceSelector").is_some_and(|n| !n.is_null()) {
        return None;
    }
    let listed: Vec<String> = term
        .get("namespaces")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .filter_map(Node::as_str)
        .map(str::to_string)
        .collect();
    Some(if listed.is_empty() {
        vec![own.unwrap_or("default").to_string()]
    } else {
        listed
    })
}

/// How many pods the pod template makes, when the manifest says: `replicas` beside the
/// template (a Deployment's `spec.replicas`, a training job's `Worker.replicas`).
fn replicas(cx: &Context<'_>) -> Option<i64> {
    let path = cx.object.pod.as_ref()?.path.as_str();
    let holder = path.strip_suffix(".template.spec").or_else(|| {
        path.strip_suffix(".spec")
            .filter(|p| p.ends_with("template"))
    })?;
    let mut node = cx.object.root;
    for part in holder.split('.') {
        node = match part.split_once('[') {
            Some((key, index)) => {
                let index: usize = index.trim_end_matches(']').parse().ok()?;
                node.get(key)?.items().get(index)?
            }
            None => node.get(part)?,
        };
    }
    node.get("replicas")?.as_i64()
}

/// Whether an anti-affinity selector that does not select the pod was evidently still
/// meant for it: it names one of the pod's labels with the pod's own value (and misses on
/// another key), or a value one typo away from the pod's. A selector for another
/// application (`app: mysql` beside the pod's `app: router`) is deliberate.
fn meant_for_itself(selector: &LabelSelector, labels: &[(&str, &str)]) -> bool {
    let own = |k: &str| labels.iter().find(|(lk, _)| *lk == k).map(|(_, v)| *v);
    let written = selector
        .match_labels
        .iter()
        .map(|(k, v)| (k.as_str(), std::slice::from_ref(v)))
        .chain(
            selector
                .expressions
                .iter()
                .filter(|(_, op, _)| op == "In")
                .map(|(k, _, values)| (k.as_str(), values.as_slice())),
        );
    written.into_iter().any(|(key, values)| {
        match own(key) {
            Some(mine) => values.iter().any(|v| v == mine || one_typo_apart(v, mine)),
            // The pod's own value under a related key: `app: zk` for a pod labelled
            // `app.kubernetes.io/name: zk`.
            None => labels.iter().any(|(k, mine)| {
                mine.len() >= 2 && values.iter().any(|v| v == mine) && related_keys(key, k)
            }),
        }
    })
}

/// Label keys that name the same thing: they share a word (`app`, `name`, `component`),
/// ignoring the domain words of well-known prefixes.
fn related_keys(a: &str, b: &str) -> bool {
    let words = |k: &str| -> Vec<String> {
        k.split(['.', '/', '-', '_'])
            .map(str::to_ascii_lowercase)
            .filter(|w| !w.is_empty() && !matches!(w.as_str(), "kubernetes" | "io" | "k8s" | "x"))
            .collect()
    };
    let (a, b) = (words(a), words(b));
    a.iter().any(|w| b.contains(w))
}

/// Edit distance of at most 1 between words of four letters or more (`llm-inferenc`).
fn one_typo_apart(a: &str, b: &str) -> bool {
    if a.len().min(b.len()) < 4 || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    a.len().max(b.len()) - prefix - suffix <= 1
}

impl Rule for Al008 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    // Long on purpose: one pass over the pod's spread constraints and anti-affinity terms,
    // each case of the rule in the order its documentation gives.
    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        // Labels the pods get besides the template's: the core controllers add a few known
        // keys; a custom resource's controller may add any (KubeRay's `ray.io/group`), but
        // the job-name style label of a Kubeflow job, RayCluster, JobSet or LeaderWorkerSet
        // is known: the object's own name.
        let labels = cx.object.labels_of_pods();
        let core = cx.object.pod.as_ref().is_some_and(|p| p.core);
        let named_by_operator = cx.object.operator_name_labels();
        // kustomize (the file is in a kustomization's directory) may add any label to the
        // template with `labels`/`commonLabels`: a key the template lacks is not judged.
        let kustomized = cx.object.document.kustomize;
        let template_keys: Vec<&str> = labels.iter().map(|(k, _)| *k).collect();
        let added = |key: &str| {
            !named_by_operator.contains(&key)
                && (!core
                    || CONTROLLER_KEYS.contains(&key)
                    || (kustomized && !template_keys.contains(&key)))
        };
        for c in spec
            .get("topologySpreadConstraints")
            .map(Node::items)
            .unwrap_or_default()
        {
            let hard = c
                .get("whenUnsatisfiable")
                .and_then(Node::as_str)
                .unwrap_or("DoNotSchedule")
                == "DoNotSchedule";
            let severity = if hard {
                Severity::Error
            } else {
                Severity::Warning
            };
            let topology = c.get("topologyKey").and_then(Node::as_str).unwrap_or("?");
            // A DaemonSet's pod may go to its one node only: the spread filter sees a single
            // domain, so the constraint spreads (and blocks) nothing, whatever it selects.
            let spreads = cx.object.kind != "DaemonSet";
            match c.get("labelSelector").filter(|_| spreads) {
                Some(sel)
                    if !labels.is_empty()
                        && !LabelSelector::from_node(sel).may_select(&labels, added) =>
                {
                    out.push(
                    RawFinding::at(sel, format!("the spread constraint over {topology} selects pods that are not this workload's replicas (its labelSelector does not match the pod template's labels): it counts other pods"))
                        .with_severity(severity),
                    )
                }
                // An operator may fill the selector in (prometheus-operator's
                // additionalLabelSelectors), and matchLabelKeys can stand for it.
                None if spreads && core && c.get("matchLabelKeys").is_none() => out.push(RawFinding::at(c, format!("the spread constraint over {topology} has no labelSelector: it counts no pods and spreads nothing")).with_severity(severity)),
                _ => {}
            }
            if let Some(min) = c.get("minDomains") {
                if !hard {
                    out.push(RawFinding::at(
                        min,
                        "minDomains is only allowed with whenUnsatisfiable: DoNotSchedule",
                    ));
                } else if min.as_i64().is_none_or(|m| m < 1) {
                    out.push(RawFinding::at(min, "minDomains must be at least 1"));
                }
            }
            if let Some(keys) = c.get("matchLabelKeys") {
                let selector_keys: Vec<&str> = c
                    .path(&["labelSelector", "matchLabels"])
                    .map(Node::string_map)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect();
                for k in keys
                    .items()
                    .iter()
                    .filter_map(Node::as_str)
                    .filter(|k| selector_keys.contains(k))
                {
                    out.push(RawFinding::at(keys, format!("matchLabelKeys repeats {k}, already in labelSelector: the API server rejects it")));
                }
            }
        }
        // A DaemonSet has no replicas to keep apart: its anti-affinity is about others; nor
        // has a workload that says it runs one replica.
        let replicas = replicas(cx);
        if cx.object.kind == "DaemonSet" || labels.is_empty() || replicas.is_some_and(|n| n <= 1) {
            return;
        }
        let anti = crate::affinity::in_affinity(spec, &["podAntiAffinity"]);
        let required = anti
            .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
            .map(Node::items)
            .unwrap_or_default();
        let preferred = anti
            .and_then(|a| a.get("preferredDuringSchedulingIgnoredDuringExecution"))
            .map(Node::items)
            .unwrap_or_default();
        let terms: Vec<(&Node, Severity)> = required
            .iter()
            .map(|t| (t, Severity::Error))
            .chain(
                preferred
                    .iter()
                    .filter_map(|p| p.get("podAffinityTerm"))
                    .map(|t| (t, Severity::Warning)),
            )
            .collect();
        let selectors: Vec<(&Node, &Node, LabelSelector, Severity)> = terms
            .iter()
            .filter_map(|(t, s)| {
                let sel = t.get("labelSelector")?;
                Some((*t, sel, LabelSelector::from_node(sel), *s))
            })
            .collect();
        // When one term keeps the replicas apart, the others keep away from other pods.
        if selectors
            .iter()
            .any(|(_, _, sel, _)| sel.may_select(&labels, added))
        {
            return;
        }
        let several = replicas.is_some_and(|n| n >= 2);
        for (term, node, sel, severity) in &selectors {
            if sel.may_select(&labels, added) {
                continue;
            }
            // Whether the term names this workload is a guess: a sibling workload in the same
            // input whose pods the term selects says it keeps away from that one on purpose
            // (`pod-affinity-1` beside the pod's own `pod-affinity-3`).
            let unless_sibling = UnlessSelected {
                selector: sel.clone(),
                namespaces: term_namespaces(term, cx.object.namespace.as_deref()),
            };
            // A copy-pasted job name: the operator labels this job's pods with its own.
            let other_job = named_by_operator.iter().find_map(|key| {
                let written = sel.match_labels.iter().find(|(k, _)| k == key)?;
                (written.1 != cx.object.name && names_the_workload(sel, &cx.object.name))
                    .then_some((*key, written.1.as_str()))
            });
            if let Some((key, value)) = other_job {
                out.push(RawFinding::at(node, format!("this podAntiAffinity term selects {key}={value}, but the operator labels this {}'s pods {key}={}: its pods are not kept apart from each other", cx.object.kind, cx.object.name)).with_severity(*severity).unless_selected(unless_sibling));
            } else if meant_for_itself(sel, &labels) {
                out.push(RawFinding::at(node, "this podAntiAffinity term names this workload's labels but does not select its pods: replicas are not kept apart from each other").with_severity(*severity).unless_selected(unless_sibling));
            } else if several
                && !sel.names_any_key(&labels, added)
                && names_the_workload(sel, &cx.object.name)
            {
                out.push(RawFinding::at(node, format!("this podAntiAffinity term selects labels no pod of this workload carries (its template has {}), though it names the workload: its {} replicas are not kept apart from each other", labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "), replicas.unwrap_or(2))).with_severity(*severity).unless_selected(unless_sibling));
            }
        }
    }
}
