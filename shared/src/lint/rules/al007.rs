//! AL007 extended-resource-limits.
use crate::gpu::parse_quantity_milli;
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::lint::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL007",
    name: "extended-resource-limits",
    severity: Severity::Error,
    summary: "an extended resource (GPU) with requests but no limits, or requests != limits",
    doc: "## What it does
Flags containers that request an extended resource (a domain-prefixed name outside
`kubernetes.io`, such as `nvidia.com/gpu`, `amd.com/gpu`, `nvidia.com/mig-1g.10gb`) without
the same limit.

## When it does not fire
- Requests and limits that are not quantities (placeholders such as `${GPU_COUNT}`) are
  not compared; only a missing limit is reported then.
- `kubernetes.io` resources (`cpu`, `memory`, `hugepages-*`) are not extended resources.

## Why it matters
Extended resources cannot be overcommitted: the API server rejects a request without an
equal limit, and a mismatch is an error at admission.

## Example
```yaml
resources:
  requests: {nvidia.com/gpu: \"1\"}
```

## Fix
```yaml
resources:
  requests: {nvidia.com/gpu: \"1\"}
  limits: {nvidia.com/gpu: \"1\"}
```",
};

#[derive(Debug)]
pub struct Al007;

/// A resource name that is an extended resource.
pub fn is_extended(name: &str) -> bool {
    match name.split_once('/') {
        Some((domain, _)) => !(domain == "kubernetes.io" || domain.ends_with(".kubernetes.io")),
        None => false,
    }
}

impl Rule for Al007 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let containers = spec.get("containers").map(Node::items).unwrap_or_default();
        let inits = spec
            .get("initContainers")
            .map(Node::items)
            .unwrap_or_default();
        for container in containers.iter().chain(inits) {
            let name = container.get("name").and_then(Node::as_str).unwrap_or("?");
            let Some(requests) = container.path(&["resources", "requests"]) else {
                continue;
            };
            let limits = container.path(&["resources", "limits"]);
            for (key, value) in requests.entries() {
                let Some(resource) = key.as_str().filter(|r| is_extended(r)) else {
                    continue;
                };
                let shown = value.scalar_text().unwrap_or("?");
                let limit_text = limits
                    .and_then(|l| l.get(resource))
                    .and_then(Node::scalar_text);
                let (requested, limit) = (
                    parse_quantity_milli(shown),
                    limit_text.and_then(parse_quantity_milli),
                );
                // A placeholder (`${GPUS}`, a template) is not a quantity: equal text on
                // both sides is fine, anything else cannot be judged offline.
                if limit_text.is_some() && (requested.is_none() || limit.is_none()) {
                    continue;
                }
                match limit {
                    None => out.push(
                        RawFinding::at(key, format!("container {name} requests {resource}: {shown} without a limit: extended resources need requests == limits"))
                            .with_fix(format!("limits:\n  {resource}: \"{shown}\"")),
                    ),
                    Some(l) if Some(l) != requested => out.push(RawFinding::at(
                        key,
                        format!("container {name} requests {resource}: {shown} but its limit differs: extended resources need requests == limits"),
                    )),
                    Some(_) => {}
                }
            }
        }
    }
}
