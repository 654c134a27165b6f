//! The workload every `--cluster` rule (AL101–AL105, AL010's live part) judges: its pod
//! spec in the read model, its candidate and tolerated nodes among the live ones, computed
//! once per pod spec by the driver (`rules::cluster`), and the helpers the rules share to
//! say why no node fits. Pure, and it knows no rule.

use std::collections::{BTreeMap, BTreeSet};

use crate::source::Object;
use crate::yaml::Node;
use placekit_core::model::PodSpec;
use placekit_core::scheduler::{NodeInfo, affinity_candidates};
use placekit_core::scheduling::{SCHEDULING_EFFECTS, untolerated_taints};

/// Why no node is a candidate, when one requirement alone holds on no node: the first
/// such (nodeSelector entries, then each required term's expressions), the values the nodes
/// have for its key, and the one the manifest probably meant (`80GB` for `80gb`).
/// `None` when each holds somewhere and only their combination fails.
pub(super) fn why_no_candidate(spec: &PodSpec, nodes: &[NodeInfo]) -> Option<String> {
    use placekit_core::scheduling::{expression_matches, required_node_terms};
    let mut culprits: Vec<(String, String, Vec<String>)> = Vec::new();
    for (key, value) in spec.node_selector.iter().flatten() {
        if !nodes.iter().any(|n| n.labels.get(key) == Some(value)) {
            culprits.push((
                format!("nodeSelector {key}: {value}"),
                key.clone(),
                vec![value.clone()],
            ));
        }
    }
    for term in required_node_terms(spec).unwrap_or_default() {
        for req in term.match_expressions.iter().flatten() {
            if !nodes
                .iter()
                .any(|n| expression_matches(req, &n.labels) == Some(true))
            {
                let values = req.values.clone().unwrap_or_default();
                let rendered = match req.operator.as_str() {
                    "Exists" | "DoesNotExist" => format!("{} {}", req.key, req.operator),
                    _ => format!("{} {} [{}]", req.key, req.operator, values.join(", ")),
                };
                culprits.push((rendered, req.key.clone(), values));
            }
        }
    }
    let (rendered, key, wanted) = culprits.into_iter().next()?;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for n in nodes {
        if let Some(v) = n.labels.get(&key) {
            *counts.entry(v.as_str()).or_default() += 1;
        }
    }
    if counts.is_empty() {
        return Some(format!("{rendered} holds on no node (no node has {key})"));
    }
    let mut by_count: Vec<(&str, usize)> = counts.iter().map(|(v, n)| (*v, *n)).collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    const SHOWN: usize = 5;
    let mut have: Vec<String> = by_count
        .iter()
        .take(SHOWN)
        .map(|(v, n)| format!("{v} on {n}"))
        .collect();
    if by_count.len() > SHOWN {
        have.push(format!("{} more values", by_count.len() - SHOWN));
    }
    // The same value in another case first, then a typo of one or two characters.
    let near = wanted.iter().find_map(|w| {
        counts
            .keys()
            .find(|v| v.eq_ignore_ascii_case(w) && *v != w)
            .or_else(|| {
                counts.keys().find(|v| {
                    let d = placekit_core::suggest::edit_distance(w, v);
                    d > 0 && d <= 2 && d < w.len().max(v.len()) / 2
                })
            })
    });
    Some(format!(
        "{rendered} holds on no node (the nodes have {}{})",
        have.join(", "),
        near.map(|v| format!("; did you mean {v}?"))
            .unwrap_or_default()
    ))
}

/// The first five node names, and how many more.
pub(super) fn names(nodes: &[&NodeInfo]) -> String {
    let mut shown: Vec<&str> = nodes.iter().take(5).map(|n| n.name.as_str()).collect();
    if nodes.len() > 5 {
        let more = format!("and {} more", nodes.len() - 5);
        return format!("{}, {more}", shown.join(", "));
    }
    if shown.is_empty() {
        shown.push("none");
    }
    shown.join(", ")
}

/// Free allocatable `resource` (thousandths) over `nodes`.
pub(super) fn free_on(nodes: &[&NodeInfo], resource: &str) -> i128 {
    nodes
        .iter()
        .map(|n| {
            (n.allocatable.get(resource).copied().unwrap_or(0)
                - n.requested.get(resource).copied().unwrap_or(0))
            .max(0)
        })
        .sum()
}

/// The pod spec as the cluster rules judge it, read from the manifest into the read model
/// (one field at a time, so one malformed field does not hide the others): the app
/// containers where the kind keeps them (KServe's `model`, a NIMService's own spec).
pub fn pod_spec_of(spec: &Node) -> PodSpec {
    fn field<T: serde::de::DeserializeOwned>(spec: &Node, key: &str) -> Option<T> {
        serde_json::from_value(spec.get(key)?.to_json()).ok()
    }
    let containers = |nodes: &mut dyn Iterator<Item = &Node>| {
        nodes
            .filter_map(|c| serde_json::from_value(c.to_json()).ok())
            .collect()
    };
    PodSpec {
        node_selector: field(spec, "nodeSelector"),
        affinity: crate::affinity::affinity_of(spec)
            .and_then(|a| serde_json::from_value(a.to_json()).ok()),
        tolerations: field(spec, "tolerations"),
        containers: containers(&mut crate::podspec::app_containers(spec).into_iter()),
        init_containers: containers(
            &mut spec
                .get("initContainers")
                .map(Node::items)
                .unwrap_or_default()
                .iter(),
        ),
        overhead: field(spec, "overhead").unwrap_or_default(),
        ..PodSpec::default()
    }
}

/// What every `--cluster` rule judges one workload by, computed once: its pod spec in the
/// read model, the live nodes it may go to, and which of those it tolerates.
pub(super) struct Workload<'w> {
    pub object: &'w Object<'w>,
    /// The pod spec as written (findings point into it).
    pub spec_node: &'w Node,
    pub spec: PodSpec,
    pub nodes: &'w [NodeInfo],
    /// Every label key of the nodes.
    pub all_keys: &'w BTreeSet<&'w str>,
    /// The nodes the nodeSelector and required node affinity allow.
    pub candidates: Vec<&'w NodeInfo>,
    /// The candidates without a taint the pod does not tolerate.
    pub tolerated: Vec<&'w NodeInfo>,
    pub tainted: Vec<&'w NodeInfo>,
    /// Where a finding about node selection points: the node affinity, else the
    /// nodeSelector, else the pod spec.
    pub anchor: &'w Node,
    /// Pods the workload runs (`replicas`, 1 for a Pod).
    pub replicas: i128,
}

impl<'w> Workload<'w> {
    pub(super) fn new(
        object: &'w Object<'w>,
        spec_node: &'w Node,
        nodes: &'w [NodeInfo],
        all_keys: &'w BTreeSet<&'w str>,
    ) -> Self {
        let spec = pod_spec_of(spec_node);
        let candidates = affinity_candidates(&spec, nodes);
        let tolerations = spec.tolerations.clone().unwrap_or_default();
        let (tolerated, tainted): (Vec<&NodeInfo>, Vec<&NodeInfo>) =
            candidates.iter().partition(|n| {
                untolerated_taints(&tolerations, &n.taints, SCHEDULING_EFFECTS).is_empty()
            });
        let anchor = crate::affinity::in_affinity(spec_node, &["nodeAffinity"])
            .or_else(|| spec_node.get("nodeSelector"))
            .unwrap_or(spec_node);
        let replicas = match object.kind.as_str() {
            "Pod" => 1,
            _ => object
                .root
                .path(&["spec", "replicas"])
                .and_then(Node::as_i64)
                .unwrap_or(1),
        } as i128;
        Workload {
            object,
            spec_node,
            spec,
            nodes,
            all_keys,
            candidates,
            tolerated,
            tainted,
            anchor,
            replicas,
        }
    }
}

/// Where the `--cluster` rules report a finding: rule id, the node it points at, message.
pub(super) type Report<'r> = dyn FnMut(&'static str, &Node, String) + 'r;
