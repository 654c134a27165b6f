//! The `--cluster` rules (AL101–AL105): the offline findings' manifests checked against
//! live nodes. Pure: they take the node infos the caller read (two paged lists).

use std::collections::{BTreeMap, BTreeSet};

use super::al010;
use crate::finding::{Finding, finding};
use crate::rule::{ClusterCheck, RawFinding, RuleMeta, Severity};
use crate::source::Object;
use crate::yaml::Node;
use placekit_core::model::PodSpec;
use placekit_core::model::quantity::format_milli;
use placekit_core::scheduler::{NodeInfo, affinity_candidates};
use placekit_core::scheduling::{SCHEDULING_EFFECTS, untolerated_taints};
use placekit_core::suggest::nearest_key;

/// AL101–AL105, judged together: they share each workload's candidate nodes.
#[derive(Debug)]
pub struct LiveRules;

impl ClusterCheck for LiveRules {
    fn metas(&self) -> &'static [&'static RuleMeta] {
        static METAS: [&RuleMeta; 5] = [
            &super::al101::META,
            &super::al102::META,
            &super::al103::META,
            &super::al104::META,
            &super::al105::META,
        ];
        &METAS
    }

    fn check(
        &self,
        objects: &[Object<'_>],
        nodes: &[NodeInfo],
        enabled: &dyn Fn(&str, Severity) -> Option<Severity>,
    ) -> Vec<Finding> {
        check(objects, nodes, enabled)
    }
}

/// Why no node is a candidate, when one requirement alone holds on no node: the first
/// such (nodeSelector entries, then each required term's expressions), the values the nodes
/// have for its key, and the one the manifest probably meant (`80GB` for `80gb`).
/// `None` when each holds somewhere and only their combination fails.
fn why_no_candidate(spec: &PodSpec, nodes: &[NodeInfo]) -> Option<String> {
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

fn names(nodes: &[&NodeInfo]) -> String {
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
fn free_on(nodes: &[&NodeInfo], resource: &str) -> i128 {
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

/// Extended-resource requests of one pod (thousandths), as the scheduler counts them.
fn extended_requests(spec: &PodSpec) -> BTreeMap<String, i128> {
    spec.requests()
        .into_iter()
        .filter(|(name, _)| super::al007::is_extended(name))
        .collect()
}

/// Runs AL101–AL105 for every workload against `nodes`. `enabled` filters rule ids.
fn check(
    objects: &[Object<'_>],
    nodes: &[NodeInfo],
    enabled: impl Fn(&str, Severity) -> Option<Severity>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let all_keys: BTreeSet<&str> = nodes
        .iter()
        .flat_map(|n| n.labels.keys().map(String::as_str))
        .collect();
    for object in objects {
        let Some(spec_node) = object.pod_spec() else {
            continue;
        };
        if object.kind == "DaemonSet" {
            continue;
        }
        let ignored = object.ignored_rules();
        let mut push = |id: &str, at: &Node, message: String| {
            let default = LiveRules
                .metas()
                .iter()
                .find(|m| m.id == id)
                .map_or(Severity::Error, |m| m.severity);
            let Some(severity) = enabled(id, default) else {
                return;
            };
            if ignored.iter().any(|i| i == id) {
                return;
            }
            out.push(finding(
                id,
                severity,
                object,
                RawFinding::at(at, message),
                false,
            ));
        };
        let spec = pod_spec_of(spec_node);

        // AL102: keys no node has.
        let mut required_keys: Vec<(&Node, String)> = spec_node
            .get("nodeSelector")
            .map(Node::entries)
            .unwrap_or_default()
            .iter()
            .filter_map(|(k, _)| Some((k, k.as_str()?.to_string())))
            .collect();
        if let Some((_, terms)) = crate::affinity::required_terms(spec_node) {
            for term in terms {
                for req in crate::affinity::requirements(term) {
                    if matches!(req.op.as_str(), "In" | "Exists" | "Gt" | "Lt") {
                        required_keys.push((req.node, req.key.clone()));
                    }
                }
            }
        }
        let mut typo = false;
        for (at, key) in &required_keys {
            if !all_keys.contains(key.as_str()) {
                typo = true;
                let hint = nearest_key(key, all_keys.iter().copied())
                    .map(|k| format!("; did you mean {k}?"))
                    .unwrap_or_default();
                push(
                    "AL102",
                    at,
                    format!("no node has the label key {key}{hint}"),
                );
            }
        }

        // AL101: no candidate.
        let candidates = affinity_candidates(&spec, nodes);
        let anchor = crate::affinity::in_affinity(spec_node, &["nodeAffinity"])
            .or_else(|| spec_node.get("nodeSelector"))
            .unwrap_or(spec_node);
        let constrained = spec.node_selector.is_some()
            || spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .is_some();
        if constrained && candidates.is_empty() {
            if !typo {
                push(
                    "AL101",
                    anchor,
                    format!(
                        "no node of {} satisfies the nodeSelector and required node affinity: replicas stay Pending (didn't match Pod's node affinity){}",
                        nodes.len(),
                        why_no_candidate(&spec, nodes)
                            .map(|why| format!("; {why}"))
                            .unwrap_or_default()
                    ),
                );
            }
            continue;
        }

        // AL103: every candidate has an untolerated taint.
        let tolerations = spec.tolerations.clone().unwrap_or_default();
        let (tolerated, tainted): (Vec<&NodeInfo>, Vec<&NodeInfo>) =
            candidates.iter().partition(|n| {
                untolerated_taints(&tolerations, &n.taints, SCHEDULING_EFFECTS).is_empty()
            });
        if !candidates.is_empty() && tolerated.is_empty() {
            let first = untolerated_taints(&tolerations, &tainted[0].taints, SCHEDULING_EFFECTS)[0]
                .to_string();
            push(
                "AL103",
                spec_node.get("tolerations").unwrap_or(anchor),
                format!(
                    "every candidate node ({}) has a taint the pod does not tolerate (e.g. {first}): replicas stay Pending",
                    names(&tainted)
                ),
            );
            continue;
        }

        let replicas = match object.kind.as_str() {
            "Pod" => 1,
            _ => object
                .root
                .path(&["spec", "replicas"])
                .and_then(Node::as_i64)
                .unwrap_or(1),
        } as i128;

        // AL104: GPUs.
        let mut short = false;
        for (resource, per_pod) in extended_requests(&spec) {
            let free = free_on(&tolerated, &resource);
            if per_pod * replicas > free {
                short = true;
                push(
                    "AL104",
                    spec_node.get("containers").unwrap_or(spec_node),
                    format!(
                        "{replicas} replicas x {} {resource} = {} but the {} candidate node(s) have {} free: some replicas will stay Pending (Insufficient {resource})",
                        format_milli(per_pod),
                        format_milli(per_pod * replicas),
                        tolerated.len(),
                        format_milli(free)
                    ),
                );
            }
        }

        // AL010: a rollout that needs free accelerators the candidates do not have.
        if let Some(need) = al010::headroom(object).filter(|_| !short && object.view == 0) {
            let free = free_on(&tolerated, need.resource);
            let needed = i128::from(need.needed) * 1000;
            if free < needed {
                push(
                    "AL010",
                    need.anchor,
                    format!(
                        "a rollout of this Deployment needs {} free {} before any old pod stops ({}), but the {} candidate node(s) have {}: the new pods stay Pending and the rollout stalls",
                        need.needed,
                        need.resource,
                        need.why,
                        tolerated.len(),
                        format_milli(free)
                    ),
                );
            }
        }

        // AL105: spread constraints.
        for c in spec_node
            .get("topologySpreadConstraints")
            .map(Node::items)
            .unwrap_or_default()
        {
            let key = c
                .get("topologyKey")
                .and_then(Node::as_str)
                .unwrap_or_default();
            let hard = c
                .get("whenUnsatisfiable")
                .and_then(Node::as_str)
                .unwrap_or("DoNotSchedule")
                == "DoNotSchedule";
            let missing: Vec<&NodeInfo> = tolerated
                .iter()
                .copied()
                .filter(|n| !n.labels.contains_key(key))
                .collect();
            if !missing.is_empty() {
                push(
                    "AL105",
                    c,
                    if hard {
                        format!(
                            "candidate node(s) {} have no {key} label: with whenUnsatisfiable DoNotSchedule the scheduler places no replica there (didn't match pod topology spread constraints (missing required label))",
                            names(&missing)
                        )
                    } else {
                        format!(
                            "candidate node(s) {} have no {key} label: the spread constraint ignores them",
                            names(&missing)
                        )
                    },
                );
            }
            // A hostname spread caps each node at maxSkew matching pods above the emptiest
            // counted node. The candidates a replica cannot use (an untolerated taint) still
            // count as nodes under the default nodeTaintsPolicy Ignore, and so do missing
            // domains below minDomains: the minimum stays 0 and the usable nodes take at most
            // maxSkew replicas each. Without such a node the replicas simply spread.
            if hard && key == "kubernetes.io/hostname" {
                let max_skew = c.get("maxSkew").and_then(Node::as_i64).unwrap_or(1).max(1);
                let honours_taints =
                    c.get("nodeTaintsPolicy").and_then(Node::as_str) == Some("Honor");
                let counted = if honours_taints {
                    tolerated.len()
                } else {
                    candidates.len()
                };
                let min_domains = c.get("minDomains").and_then(Node::as_i64).unwrap_or(1);
                let pinned_at_zero = (!honours_taints && !tainted.is_empty())
                    || usize::try_from(min_domains).is_ok_and(|m| m > counted);
                let room = i128::from(max_skew) * tolerated.len() as i128;
                if pinned_at_zero && replicas > room {
                    let why = if !honours_taints && !tainted.is_empty() {
                        format!(
                            "the candidate node(s) the pods cannot use ({}) still count as empty nodes",
                            names(&tainted)
                        )
                    } else {
                        format!(
                            "minDomains {min_domains} is more than the {counted} node(s) the spread counts"
                        )
                    };
                    push(
                        "AL105",
                        c,
                        format!(
                            "{replicas} replicas with a DoNotSchedule hostname spread (maxSkew {max_skew}) but at most {room} can be placed: {why}, so each of the {} usable node(s) takes at most {max_skew}",
                            tolerated.len()
                        ),
                    );
                }
            }
        }
    }
    out
}
