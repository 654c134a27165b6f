//! Matching as the kube-scheduler does it: a node against a pod's `nodeSelector` and required
//! node affinity, and a pod's tolerations against a node's taints.
//!
//! Semantics follow `k8s.io/component-helpers/scheduling/corev1` and the scheduler's
//! NodeAffinity and TaintToleration filters:
//! - `nodeSelectorTerms` are OR-ed; the expressions and fields inside one term are AND-ed;
//! - a term with neither `matchExpressions` nor `matchFields` matches no node;
//! - a term with an invalid requirement matches no node (the scheduler drops it);
//! - `NotIn` and `DoesNotExist` hold on a node without the key;
//! - `Gt`/`Lt` compare integers and fail when the label is missing or not an integer;
//! - `matchFields` supports `metadata.name` with `In`/`NotIn` and exactly one value.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::syntax::{Taint, TaintEffect};
use crate::validation::{label_value_errors, qualified_name_errors};

/// The parts of a pod spec node affinity reads. A workload template's full `PodSpec` and a
/// listed pod's [`crate::model::PodSpec`] both have them, so one matcher serves both.
pub trait NodeConstraints {
    fn node_selector(&self) -> Option<&BTreeMap<String, String>>;
    fn affinity(&self) -> Option<&Affinity>;
}

impl NodeConstraints for PodSpec {
    fn node_selector(&self) -> Option<&BTreeMap<String, String>> {
        self.node_selector.as_ref()
    }
    fn affinity(&self) -> Option<&Affinity> {
        self.affinity.as_ref()
    }
}

impl NodeConstraints for crate::model::pod::PlacementSpec {
    fn node_selector(&self) -> Option<&BTreeMap<String, String>> {
        self.node_selector.as_ref()
    }
    fn affinity(&self) -> Option<&Affinity> {
        self.affinity.as_deref()
    }
}

impl NodeConstraints for crate::model::PodSpec {
    fn node_selector(&self) -> Option<&BTreeMap<String, String>> {
        self.node_selector.as_ref()
    }
    fn affinity(&self) -> Option<&Affinity> {
        self.affinity.as_deref()
    }
}

/// What the scheduler sees of a node for affinity: its name and labels.
#[derive(Debug, Clone, Copy)]
pub struct NodeFacts<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

/// Problems the API server would reject in a node selector requirement (empty when valid).
/// `field` says whether it sits in `matchExpressions` or `matchFields`.
pub fn requirement_problems(req: &NodeSelectorRequirement, field: RequirementField) -> Vec<String> {
    let mut out = Vec::new();
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if values.is_empty() {
                out.push("must be specified when `operator` is 'In' or 'NotIn'".to_string());
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                out.push(
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'".to_string(),
                );
            }
        }
        "Gt" | "Lt" => {
            if values.len() != 1 {
                out.push("must be specified single value when `operator` is 'Lt' or 'Gt'".to_string());
            } else if values[0].parse::<i64>().is_err() {
                out.push(format!("{:?} must be an integer for 'Gt' and 'Lt'", values[0]));
            }
        }
        other => out.push(format!(
            "Unsupported value: {other:?}: supported values: \"DoesNotExist\", \"Exists\", \"Gt\", \"In\", \"Lt\", \"NotIn\""
        )),
    }
    match field {
        RequirementField::Expression => {
            out.extend(qualified_name_errors(&req.key));
            if matches!(req.operator.as_str(), "In" | "NotIn") {
                for v in values {
                    out.extend(label_value_errors(v));
                }
            }
        }
        RequirementField::Field => {
            if req.key != "metadata.name" {
                out.push(format!(
                    "Unsupported value: {:?}: supported values: \"metadata.name\"",
                    req.key
                ));
            }
            if !matches!(req.operator.as_str(), "In" | "NotIn") {
                out.push(format!(
                    "Unsupported value: {:?}: supported values: \"In\", \"NotIn\"",
                    req.operator
                ));
            } else if values.len() != 1 {
                out.push("must be only one value when `operator` is 'In' or 'NotIn' for node field selector".to_string());
            }
        }
    }
    out
}

/// Where a node selector requirement sits in its term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequirementField {
    Expression,
    Field,
}

/// Whether one `matchExpressions` requirement holds for these labels. `None` when the
/// requirement is invalid (the scheduler then ignores the whole term).
pub fn expression_matches(
    req: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> Option<bool> {
    if !requirement_problems(req, RequirementField::Expression).is_empty() {
        return None;
    }
    let values = req.values.as_deref().unwrap_or_default();
    let actual = labels.get(&req.key);
    Some(match req.operator.as_str() {
        "In" => actual.is_some_and(|v| values.contains(v)),
        "NotIn" => actual.is_none_or(|v| !values.contains(v)),
        "Exists" => actual.is_some(),
        "DoesNotExist" => actual.is_none(),
        "Gt" | "Lt" => {
            let bound: i64 = values[0].parse().ok()?;
            match actual.and_then(|v| v.parse::<i64>().ok()) {
                Some(a) if req.operator == "Gt" => a > bound,
                Some(a) => a < bound,
                None => false,
            }
        }
        _ => return None,
    })
}

/// Whether one `matchFields` requirement holds for this node name; `None` when invalid.
pub fn field_matches(req: &NodeSelectorRequirement, node_name: &str) -> Option<bool> {
    if !requirement_problems(req, RequirementField::Field).is_empty() {
        return None;
    }
    let value = req.values.as_deref().and_then(<[String]>::first)?;
    Some((req.operator == "In") == (value == node_name))
}

/// Whether a node satisfies one term: all expressions and fields hold; an empty term or one
/// with an invalid requirement matches nothing.
pub fn term_matches(term: &NodeSelectorTerm, node: NodeFacts<'_>) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions
        .iter()
        .all(|r| expression_matches(r, node.labels) == Some(true))
        && fields
            .iter()
            .all(|r| field_matches(r, node.name) == Some(true))
}

/// Whether a node satisfies a list of terms (OR-ed). An empty list matches nothing, as the
/// API server requires at least one term.
pub fn terms_match(terms: &[NodeSelectorTerm], node: NodeFacts<'_>) -> bool {
    terms.iter().any(|t| term_matches(t, node))
}

/// Whether a node's labels satisfy a `nodeSelector` map (every entry must be equal).
pub fn node_selector_matches(
    selector: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The pod's required node affinity terms (OR-ed), `None` when it has no required affinity.
pub fn required_node_terms(spec: &impl NodeConstraints) -> Option<&[NodeSelectorTerm]> {
    spec.affinity()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|s| s.node_selector_terms.as_slice())
}

/// The scheduler's NodeAffinity filter: `nodeSelector` AND required node affinity.
pub fn pod_fits_node_affinity(spec: &impl NodeConstraints, node: NodeFacts<'_>) -> bool {
    if let Some(selector) = spec.node_selector()
        && !node_selector_matches(selector, node.labels)
    {
        return false;
    }
    required_node_terms(spec).is_none_or(|terms| terms_match(terms, node))
}

/// `Toleration.ToleratesTaint`: effect (empty matches all), key (empty with `Exists`
/// matches all), then `Equal` (the default) compares values and `Exists` ignores them.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect.as_str()
    {
        return false;
    }
    if let Some(key) = toleration.key.as_deref().filter(|k| !k.is_empty())
        && key != taint.key
    {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "" | "Equal" => toleration.value.as_deref().unwrap_or("") == taint.value_str(),
        "Exists" => true,
        _ => false,
    }
}

/// The taints with one of `effects` that no toleration tolerates, in node order.
pub fn untolerated_taints<'a>(
    tolerations: &[Toleration],
    taints: &'a [Taint],
    effects: &[TaintEffect],
) -> Vec<&'a Taint> {
    taints
        .iter()
        .filter(|t| effects.contains(&t.effect))
        .filter(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
        .collect()
}

/// A `metav1.LabelSelector` against a pod's labels, as `LabelSelectorAsSelector` reads it
/// for inter-pod affinity and topology spread: no selector (`None`) selects nothing, an empty
/// one everything; `matchLabels` entries and `matchExpressions` are AND-ed; `NotIn` and
/// `DoesNotExist` hold without the key. A selector the API server would reject (an `In`
/// without values, an unknown operator) selects nothing.
pub fn label_selector_matches(
    selector: Option<&LabelSelector>,
    labels: &BTreeMap<String, String>,
) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    if let Some(m) = &selector.match_labels
        && !m.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let actual = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => !values.is_empty() && actual.is_some_and(|v| values.contains(v)),
            "NotIn" => !values.is_empty() && actual.is_none_or(|v| !values.contains(v)),
            "Exists" => values.is_empty() && actual.is_some(),
            "DoesNotExist" => values.is_empty() && actual.is_none(),
            _ => false,
        }
    })
}

/// Whether a selector has no requirement at all (`{}`: it selects every pod). Topology spread
/// counts no pods for such a selector (`countPodsMatchSelector` skips an empty selector).
pub fn label_selector_is_empty(selector: Option<&LabelSelector>) -> bool {
    selector.is_some_and(|s| {
        s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
            && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
    })
}

/// The effects the scheduler's TaintToleration filter enforces.
pub const SCHEDULING_EFFECTS: &[TaintEffect] = &[TaintEffect::NoSchedule, TaintEffect::NoExecute];

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector};

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn term(exprs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: Some(exprs),
            match_fields: None,
        }
    }

    fn node<'a>(name: &'a str, l: &'a BTreeMap<String, String>) -> NodeFacts<'a> {
        NodeFacts { name, labels: l }
    }

    #[test]
    fn expressions_in_a_term_are_anded() {
        let l = labels(&[("pool", "online"), ("family", "a100")]);
        let t = term(vec![
            req("pool", "In", &["online"]),
            req("family", "In", &["h100"]),
        ]);
        assert!(!term_matches(&t, node("n", &l)));
    }

    #[test]
    fn terms_are_ored() {
        let l = labels(&[("family", "a100")]);
        let terms = vec![
            term(vec![req("pool", "In", &["online"])]),
            term(vec![req("family", "In", &["a100"])]),
        ];
        assert!(terms_match(&terms, node("n", &l)));
    }

    #[test]
    fn empty_term_matches_nothing() {
        let l = labels(&[("a", "b")]);
        assert!(!term_matches(&NodeSelectorTerm::default(), node("n", &l)));
        assert!(!term_matches(&term(vec![]), node("n", &l)));
        assert!(!terms_match(&[], node("n", &l)));
    }

    #[test]
    fn notin_and_does_not_exist_match_nodes_without_the_key() {
        let l = labels(&[]);
        assert_eq!(
            expression_matches(&req("k", "NotIn", &["a"]), &l),
            Some(true)
        );
        assert_eq!(
            expression_matches(&req("k", "DoesNotExist", &[]), &l),
            Some(true)
        );
        assert_eq!(expression_matches(&req("k", "In", &["a"]), &l), Some(false));
        assert_eq!(
            expression_matches(&req("k", "Exists", &[]), &l),
            Some(false)
        );
    }

    #[test]
    fn gt_lt_compare_integers() {
        let l = labels(&[("mem", "80"), ("bad", "80gb")]);
        assert_eq!(
            expression_matches(&req("mem", "Gt", &["40"]), &l),
            Some(true)
        );
        assert_eq!(
            expression_matches(&req("mem", "Gt", &["100"]), &l),
            Some(false)
        );
        assert_eq!(
            expression_matches(&req("mem", "Lt", &["100"]), &l),
            Some(true)
        );
        assert_eq!(
            expression_matches(&req("mem", "Gt", &["9"]), &l),
            Some(true),
            "not a string compare"
        );
        assert_eq!(
            expression_matches(&req("bad", "Gt", &["1"]), &l),
            Some(false)
        );
        assert_eq!(
            expression_matches(&req("missing", "Lt", &["1"]), &l),
            Some(false)
        );
        assert_eq!(expression_matches(&req("mem", "Gt", &["x"]), &l), None);
        assert_eq!(expression_matches(&req("mem", "Gt", &["1", "2"]), &l), None);
    }

    #[test]
    fn invalid_requirement_drops_the_term() {
        let l = labels(&[("k", "a")]);
        let t = term(vec![req("k", "In", &[])]);
        assert!(!term_matches(&t, node("n", &l)));
        let t = term(vec![req("k", "Exists", &["a"])]);
        assert!(!term_matches(&t, node("n", &l)));
        let t = term(vec![req("k", "Like", &["a"])]);
        assert!(!term_matches(&t, node("n", &l)));
    }

    #[test]
    fn match_fields_metadata_name() {
        let l = labels(&[]);
        let t = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![req("metadata.name", "In", &["gpu-1"])]),
        };
        assert!(term_matches(&t, node("gpu-1", &l)));
        assert!(!term_matches(&t, node("gpu-2", &l)));
        let not_in = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![req("metadata.name", "NotIn", &["gpu-1"])]),
        };
        assert!(term_matches(&not_in, node("gpu-2", &l)));
        let bad = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![req("metadata.labels", "In", &["x"])]),
        };
        assert!(!term_matches(&bad, node("x", &l)));
    }

    #[test]
    fn pod_needs_selector_and_affinity() {
        let l = labels(&[("pool", "online"), ("family", "a100")]);
        let mut spec = PodSpec {
            node_selector: Some(labels(&[("pool", "online")])),
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: vec![term(vec![req("family", "In", &["a100"])])],
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(pod_fits_node_affinity(&spec, node("n", &l)));
        spec.node_selector = Some(labels(&[("pool", "batch")]));
        assert!(!pod_fits_node_affinity(&spec, node("n", &l)));
        assert!(pod_fits_node_affinity(&PodSpec::default(), node("n", &l)));
    }

    fn tol(
        key: Option<&str>,
        op: Option<&str>,
        value: Option<&str>,
        effect: Option<&str>,
    ) -> Toleration {
        Toleration {
            key: key.map(Into::into),
            operator: op.map(Into::into),
            value: value.map(Into::into),
            effect: effect.map(Into::into),
            toleration_seconds: None,
        }
    }

    #[test]
    fn toleration_rules() {
        let taint = Taint::new("dedicated", "llm-online", TaintEffect::NoSchedule);
        assert!(tolerates(
            &tol(
                Some("dedicated"),
                Some("Equal"),
                Some("llm-online"),
                Some("NoSchedule")
            ),
            &taint
        ));
        assert!(
            tolerates(
                &tol(Some("dedicated"), None, Some("llm-online"), None),
                &taint
            ),
            "default Equal, any effect"
        );
        assert!(!tolerates(
            &tol(Some("dedicated"), Some("Equal"), Some("batch"), None),
            &taint
        ));
        assert!(!tolerates(
            &tol(
                Some("dedicated"),
                Some("Equal"),
                Some("llm-online"),
                Some("NoExecute")
            ),
            &taint
        ));
        assert!(tolerates(
            &tol(Some("dedicated"), Some("Exists"), None, None),
            &taint
        ));
        assert!(
            tolerates(&tol(None, Some("Exists"), None, None), &taint),
            "empty key + Exists tolerates all"
        );
        assert!(!tolerates(
            &tol(Some("other"), Some("Exists"), None, None),
            &taint
        ));
    }

    #[test]
    fn label_selectors_as_the_scheduler_reads_them() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
        let l = labels(&[("app", "llm"), ("tier", "gpu")]);
        assert!(
            !label_selector_matches(None, &l),
            "no selector selects nothing"
        );
        let empty = LabelSelector::default();
        assert!(label_selector_matches(Some(&empty), &l));
        assert!(label_selector_is_empty(Some(&empty)));
        assert!(!label_selector_is_empty(None));
        let expr = |key: &str, op: &str, values: &[&str]| LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        };
        let sel = LabelSelector {
            match_labels: Some(labels(&[("app", "llm")])),
            match_expressions: Some(vec![
                expr("tier", "In", &["gpu", "cpu"]),
                expr("canary", "DoesNotExist", &[]),
                expr("team", "NotIn", &["a"]),
            ]),
        };
        assert!(label_selector_matches(Some(&sel), &l));
        assert!(!label_selector_is_empty(Some(&sel)));
        assert!(!label_selector_matches(
            Some(&sel),
            &labels(&[("app", "web"), ("tier", "gpu")])
        ));
        let bad = LabelSelector {
            match_expressions: Some(vec![expr("app", "In", &[])]),
            ..Default::default()
        };
        assert!(
            !label_selector_matches(Some(&bad), &l),
            "invalid selects nothing"
        );
        let exists = LabelSelector {
            match_expressions: Some(vec![expr("tier", "Exists", &[])]),
            ..Default::default()
        };
        assert!(label_selector_matches(Some(&exists), &l));
        assert!(!label_selector_matches(Some(&exists), &labels(&[])));
    }

    #[test]
    fn untolerated_filters_by_effect() {
        let taints = vec![
            Taint::new("a", "1", TaintEffect::NoSchedule),
            Taint::new("b", "", TaintEffect::PreferNoSchedule),
            Taint::new("c", "", TaintEffect::NoExecute),
        ];
        let tolerations = vec![tol(Some("a"), Some("Exists"), None, None)];
        let left: Vec<&str> = untolerated_taints(&tolerations, &taints, SCHEDULING_EFFECTS)
            .iter()
            .map(|t| t.key.as_str())
            .collect();
        assert_eq!(left, vec!["c"]);
    }
}
