//! AL021 tpu-request-exceeds-slice finds more google.com/tpu chips than the TPU slice
//! topology the pod selects has in all.
use crate::affinity::{required_terms, requirements};
use crate::podspec::app_containers;
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::yaml::Node;
use placekit_core::model::quantity::parse_quantity_milli;

pub static META: RuleMeta = RuleMeta {
    id: "AL021",
    name: "tpu-request-exceeds-slice",
    severity: Severity::Error,
    summary: "more google.com/tpu chips than the TPU slice topology the pod selects has in all",
    doc: "## What it does
Flags a pod whose containers ask for more `google.com/tpu` chips than the whole TPU slice it
selects has: GKE labels a TPU node with its slice's topology
(`cloud.google.com/gke-tpu-topology: 2x2`, `2x2x1`), and a slice of topology `AxB` (or
`AxBxC`) has A·B (A·B·C) chips in all, over one or more nodes. The pod selects the topology
by `nodeSelector`, or by a required node-affinity requirement `In` one value.

## When it does not fire
- The request fits the slice, even when a multi-host slice spreads its chips over several
  nodes (4 per host on v4, v5p and multi-host v5e/v6e): a pod must then ask for one host's
  chips, which this rule does not judge.
- No topology, or several: the pod may land on a larger slice.
- Requests that are not numbers (templates).

## Why it matters
No node of the slice has that many chips, so the pod stays Pending with `Insufficient
google.com/tpu` on every node of it; with a node auto-provisioner, it asks for a slice that
cannot satisfy it either.

## Example
```yaml
nodeSelector:
  cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
  cloud.google.com/gke-tpu-topology: 2x2
containers:
- resources: {limits: {google.com/tpu: 8}}
```

## Fix
Ask for the chips the topology has (`google.com/tpu: 4` on a `2x2` v6e slice), or select
the topology that has the chips (`2x4` for 8).",
};

#[derive(Debug)]
pub struct Al021;

const TOPOLOGY: &str = "cloud.google.com/gke-tpu-topology";
const TPU: &str = "google.com/tpu";

/// `2x2` -> 4, `2x2x1` -> 4; `None` for anything else.
fn chips(topology: &str) -> Option<i64> {
    topology
        .split('x')
        .map(|d| d.parse::<i64>().ok().filter(|n| *n > 0))
        .try_fold(1i64, |product, d| product.checked_mul(d?))
        .filter(|_| topology.contains('x'))
}

/// The one topology the pod selects: by nodeSelector, or by a requirement `In` one value in
/// every required term.
fn selected_topology(spec: &Node) -> Option<(String, &Node)> {
    if let Some((key, value)) = spec
        .get("nodeSelector")
        .map(Node::entries)
        .unwrap_or_default()
        .iter()
        .find(|(k, _)| k.as_str() == Some(TOPOLOGY))
    {
        return value.scalar_text().map(|v| (v.to_string(), key));
    }
    let (_, terms) = required_terms(spec)?;
    let mut found: Option<(String, &Node)> = None;
    for term in terms {
        let one = requirements(term)
            .into_iter()
            .find(|r| r.key == TOPOLOGY && r.op == "In" && r.values.len() == 1)?;
        match &found {
            Some((v, _)) if *v != one.values[0] => return None,
            Some(_) => {}
            None => found = Some((one.values[0].clone(), one.node)),
        }
    }
    found
}

impl Rule for Al021 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let Some((topology, at)) = selected_topology(spec) else {
            return;
        };
        let Some(slice) = chips(&topology) else {
            return;
        };
        // What the pod asks for: each container's limit, else its request (an extended
        // resource's request equals its limit when both are set).
        let mut asked = 0i64;
        for container in app_containers(spec) {
            let of = |field: &str| {
                container
                    .path(&["resources", field, TPU])
                    .and_then(Node::scalar_text)
                    .and_then(parse_quantity_milli)
            };
            if let Some(milli) = of("limits").or_else(|| of("requests")) {
                asked += i64::try_from(milli / 1000).unwrap_or(i64::MAX);
            }
        }
        if asked > slice {
            out.push(
                RawFinding::at(
                    at,
                    format!(
                        "the pod asks for {asked} {TPU} chips, and a TPU slice of topology {topology} has {slice} in all: no node can give them, so it stays Pending"
                    ),
                )
                .with_fix(format!(
                    "ask for at most {slice} {TPU}, or select a topology with {asked} chips"
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn chips_of_a_topology() {
        assert_eq!(super::chips("2x2"), Some(4));
        assert_eq!(super::chips("2x4"), Some(8));
        assert_eq!(super::chips("2x2x1"), Some(4));
        assert_eq!(super::chips("16x16"), Some(256));
        assert_eq!(super::chips("4"), None);
        assert_eq!(super::chips("2xa"), None);
        assert_eq!(super::chips("0x2"), None);
    }
}
