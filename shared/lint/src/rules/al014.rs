//! AL014 unprotected-isolation-key finds a required isolation key outside
//! node-restriction.kubernetes.io/.
use crate::affinity::{required_terms, requirements};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL014",
    name: "unprotected-isolation-key",
    severity: Severity::Info,
    summary: "a required isolation key outside node-restriction.kubernetes.io/",
    doc: "## What it does
Notes required node constraints (`nodeSelector`, required affinity) on isolation-like keys
(`pool`, `dedicated`, `tenant`...) outside `node-restriction.kubernetes.io/`.

## When it does not fire
- Keys under `[*.]node-restriction.kubernetes.io/`, and keys that do not look like an
  isolation key (`pool`, `dedicated`, `tenant`, ...).
- Keys no kubelet may set on its own Node either: `node-role.kubernetes.io/*` and other keys
  in the `kubernetes.io`/`k8s.io` namespaces but for the kubelet's own labels and
  `[*.]kubelet.kubernetes.io/`, `[*.]node.kubernetes.io/`.
- Preferred terms (they do not isolate anything).
- Node-pool labels of cloud providers' node provisioning (`cloud.google.com/gke-nodepool`,
  `eks.amazonaws.com/nodegroup`, `karpenter.sh/nodepool`, `kubernetes.azure.com/agentpool`,
  AKS's bare `agentpool`):
  the provider sets them and a workload has no protected alternative.
Turn it off for clusters without the NodeRestriction admission plugin in
`.affinity-lint.yaml`: `rules: {AL014: off}`.

## Why it matters
A node's own kubelet may set any label outside `[*.]node-restriction.kubernetes.io/` and the
reserved `kubernetes.io`/`k8s.io` namespaces, so a compromised node could label itself into
the pool and attract the workload. The NodeRestriction admission plugin forbids kubelets
from setting keys under that prefix.

## Example
```yaml
- {key: llm-pool, operator: In, values: [online]}
```

## Fix
```yaml
- {key: ops.example.com.node-restriction.kubernetes.io/llm-pool, operator: In, values: [online]}
```",
};

#[derive(Debug)]
pub struct Al014;

/// Label domains of cloud providers' node provisioning (GKE, EKS, AKS, Karpenter): the
/// provider sets these on the nodes it creates, and a workload has no protected
/// alternative to select its node pool with.
const PROVIDER_DOMAINS: &[&str] = &[
    "cloud.google.com",
    "eks.amazonaws.com",
    "karpenter.sh",
    "karpenter.k8s.aws",
    "kubernetes.azure.com",
];

/// Node-pool labels providers set without a domain (AKS's `agentpool`).
const PROVIDER_KEYS: &[&str] = &["agentpool"];

fn isolation_warning(key: &str) -> Option<String> {
    if PROVIDER_KEYS.contains(&key)
        || key
            .split_once('/')
            .is_some_and(|(domain, _)| PROVIDER_DOMAINS.contains(&domain))
    {
        return None;
    }
    placekit_core::policy::label_warnings(key)
        .into_iter()
        .find(|w| w.contains("workload-isolation"))
}

impl Rule for Al014 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        for (key, _) in spec
            .get("nodeSelector")
            .map(Node::entries)
            .unwrap_or_default()
        {
            if let Some(w) = key.as_str().and_then(isolation_warning) {
                out.push(RawFinding::at(key, w));
            }
        }
        for term in required_terms(spec).map(|(_, t)| t).unwrap_or_default() {
            for req in requirements(term) {
                if let Some(w) = isolation_warning(&req.key) {
                    out.push(RawFinding::at(req.node, w));
                }
            }
        }
    }
}
