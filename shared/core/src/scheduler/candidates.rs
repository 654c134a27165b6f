//! The nodes a pod spec may land on by node affinity and selector alone.

use k8s_openapi::api::core::v1::NodeSelectorTerm;

use super::node_info::NodeInfo;
use crate::scheduling::{NodeConstraints, NodeFacts, pod_fits_node_affinity, term_matches};

/// The nodes a pod spec may land on by affinity and selector alone.
pub fn affinity_candidates<'a>(
    spec: &impl NodeConstraints,
    nodes: &'a [NodeInfo],
) -> Vec<&'a NodeInfo> {
    nodes
        .iter()
        .filter(|n| {
            pod_fits_node_affinity(
                spec,
                NodeFacts {
                    name: &n.name,
                    labels: &n.labels,
                },
            )
        })
        .collect()
}

/// Whether any term matches (for callers that only have terms).
pub fn any_term_matches(terms: &[NodeSelectorTerm], node: &NodeInfo) -> bool {
    terms.iter().any(|t| {
        term_matches(
            t,
            NodeFacts {
                name: &node.name,
                labels: &node.labels,
            },
        )
    })
}
