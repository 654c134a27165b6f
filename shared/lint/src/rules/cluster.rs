//! The driver of the `--cluster` rules (AL101–AL105, and AL010's live part): for each pod
//! spec it computes one [`Workload`] (`rules::cluster_workload`) and runs each rule's
//! `check` over it, in the order that lets one finding explain the next. Pure: it takes the
//! node infos the caller read (two paged lists).

use std::collections::BTreeSet;

use super::al010;
use super::cluster_workload::Workload;
use crate::finding::{Finding, finding};
use crate::rule::{ClusterCheck, RawFinding, RuleMeta, Severity};
use crate::source::Object;
use crate::yaml::Node;
use placekit_core::scheduler::NodeInfo;

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

/// Runs AL101–AL105 (and AL010's live part) for every workload against `nodes`, each rule
/// in its own file over the workload's shared [`Workload`]. `enabled` filters rule ids.
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
        let mut push = |id: &'static str, at: &Node, message: String| {
            let default = LiveRules
                .metas()
                .iter()
                .chain([&&al010::META])
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
        let workload = Workload::new(object, spec_node, nodes, &all_keys);
        // A key no node has (AL102) explains an empty candidate set better than AL101.
        let typo = super::al102::check(&workload, &mut push);
        // Without a candidate, or with every candidate tainted, nothing else can be judged.
        if super::al101::check(&workload, typo, &mut push)
            || super::al103::check(&workload, &mut push)
        {
            continue;
        }
        let short = super::al104::check(&workload, &mut push);
        // A Deployment short of accelerators for its replicas is not judged again for its
        // rollout's surge.
        if !short {
            al010::check_live(&workload, &mut push);
        }
        super::al105::check(&workload, &mut push);
    }
    out
}
