//! AL008 spread-selector-mismatch.
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::lint::yaml::Node;

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

/// Whether a metav1.LabelSelector (as written) selects `labels`.
pub fn selects(selector: &Node, labels: &[(&str, &str)]) -> bool {
    let get = |k: &str| labels.iter().find(|(lk, _)| *lk == k).map(|(_, v)| *v);
    let match_labels = selector
        .get("matchLabels")
        .map(Node::string_map)
        .unwrap_or_default();
    if !match_labels.iter().all(|(k, v)| get(k) == Some(*v)) {
        return false;
    }
    selector
        .get("matchExpressions")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .all(|e| {
            let key = e.get("key").and_then(Node::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .map(Node::items)
                .unwrap_or_default()
                .iter()
                .filter_map(Node::scalar_text)
                .collect();
            match e.get("operator").and_then(Node::as_str).unwrap_or_default() {
                "In" => get(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => get(key).is_none_or(|v| !values.contains(&v)),
                "Exists" => get(key).is_some(),
                "DoesNotExist" => get(key).is_none(),
                _ => false,
            }
        })
}

impl Rule for Al008 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let labels = cx.object.pod_labels();
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
            match c.get("labelSelector") {
                Some(sel) if !labels.is_empty() && !selects(sel, &labels) => out.push(
                    RawFinding::at(sel, format!("the spread constraint over {topology} selects pods that are not this workload's replicas (its labelSelector does not match the pod template's labels): it counts other pods"))
                        .with_severity(severity),
                ),
                None => out.push(RawFinding::at(c, format!("the spread constraint over {topology} has no labelSelector: it counts no pods and spreads nothing")).with_severity(severity)),
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
        let anti = spec.path(&["affinity", "podAntiAffinity"]);
        let required = anti
            .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
            .map(Node::items)
            .unwrap_or_default();
        let preferred = anti
            .and_then(|a| a.get("preferredDuringSchedulingIgnoredDuringExecution"))
            .map(Node::items)
            .unwrap_or_default();
        let terms = required.iter().map(|t| (t, Severity::Error)).chain(
            preferred
                .iter()
                .filter_map(|p| p.get("podAffinityTerm"))
                .map(|t| (t, Severity::Warning)),
        );
        for (term, severity) in terms {
            if let Some(sel) = term.get("labelSelector")
                && !labels.is_empty()
                && !selects(sel, &labels)
            {
                out.push(RawFinding::at(sel, "this podAntiAffinity term selects pods that are not this workload's replicas: replicas are not kept apart from each other").with_severity(severity));
            }
        }
    }
}
