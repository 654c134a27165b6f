//! The scheduler's FailedScheduling message: rendered from per-node results, and parsed back
//! into per-reason node counts.

use std::collections::BTreeMap;

use super::filters::FilterFailure;

/// The scheduler's FailedScheduling message for these per-node results, without its
/// preemption part ("0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 4 node(s)
/// didn't match Pod's node affinity/selector."): each reason with the number of nodes
/// giving it, sorted as strings as the scheduler sorts them. `None` when a node fits.
pub fn scheduler_message(results: &[Result<(), Vec<FilterFailure>>]) -> Option<String> {
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for r in results {
        for f in r.as_ref().err()? {
            *reasons.entry(f.scheduler_reason()).or_default() += 1;
        }
    }
    let head = format!("0/{} nodes are available:", results.len());
    // A PreFilter rejection is one message for every node, not counted per node.
    if let Some(Err(first)) = results.first()
        && let [FilterFailure::PreFilter { message, .. }] = first.as_slice()
    {
        return Some(format!("{head} {message}."));
    }
    if !results.is_empty()
        && results.iter().all(|r| {
            matches!(
                r.as_ref().err().map(Vec::as_slice),
                Some([FilterFailure::NamedNodesConflict])
            )
        })
    {
        return Some(format!("{head} pod affinity terms conflict."));
    }
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    if parts.is_empty() {
        return Some(head);
    }
    Some(format!("{head} {}.", parts.join(", ")))
}

/// Per-reason node counts of a FailedScheduling message ("0/5 nodes are available: 2 X, 3
/// Y. preemption: ..."): the number of nodes and the reasons, without the preemption part.
/// `None` when the text is not such a message.
pub fn parse_scheduler_message(message: &str) -> Option<(usize, BTreeMap<String, usize>)> {
    let rest = message.strip_prefix("0/")?;
    let (total, rest) = rest.split_once(" nodes are available:")?;
    let total: usize = total.parse().ok()?;
    // The reasons end at the first ". ": what follows is the PostFilter's part
    // (`preemption: ...`, or the bare `not found` of a PostFilter that found no state after
    // a PreFilter rejection). No reason string holds ". ".
    let rest = rest.trim();
    let body = match rest.split_once(". ") {
        Some((reasons, _)) => reasons,
        None => rest.strip_suffix('.').unwrap_or(rest),
    };
    let mut reasons = BTreeMap::new();
    for part in body.split(", ").filter(|p| !p.is_empty()) {
        match part.split_once(' ') {
            Some((n, reason)) if n.parse::<usize>().is_ok() => {
                *reasons.entry(reason.to_string()).or_default() += n.parse::<usize>().ok()?;
            }
            // A PreFilter rejection: one reason for every node.
            _ => {
                *reasons.entry(part.to_string()).or_default() += total;
            }
        }
    }
    Some((total, reasons))
}
