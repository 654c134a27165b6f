//! Warnings about label keys that are legal but risky to set on nodes, judged by what the
//! NodeRestriction admission plugin lets a node's own kubelet set on its Node:
//!
//! - never a key under `[*.]node-restriction.kubernetes.io/`;
//! - in the `[*.]kubernetes.io` and `[*.]k8s.io` namespaces, only the kubelet's own
//!   well-known labels (hostname, os, arch, instance type, zone, region) and keys under
//!   `[*.]kubelet.kubernetes.io/` and `[*.]node.kubernetes.io/`;
//! - any other key.
//!
//! The warnings:
//!
//! - **Isolation a node could join.** A key a node may set on itself, whose name says it
//!   isolates workloads (`pool`, `dedicated`, `tenant`, `isolation`, `reserved`, `team`: a
//!   heuristic, hence a warning): a compromised node could attract the isolated workload.
//!   `node-role.kubernetes.io/*` and other reserved keys are not: no kubelet may set them.
//! - **The kubelet's own labels**: the kubelet sets them on its Node (cloud node
//!   controllers keep zone, region and instance type up to date), so a value set by hand
//!   may be overwritten.
//! - **Other `kubernetes.io`/`k8s.io` keys** are reserved for Kubernetes' own labels, but
//!   for `node-role.kubernetes.io/*` (the convention `kubectl get nodes` shows as ROLES)
//!   and node-feature-discovery's `feature.node.kubernetes.io` and
//!   `profile.node.kubernetes.io`.

/// Words in a key's name that mark it as used for workload isolation.
const ISOLATION_WORDS: &[&str] = &[
    "pool",
    "dedicated",
    "tenant",
    "isolation",
    "reserved",
    "team",
];

/// The labels a kubelet sets on its own Node (k8s.io/kubelet's well-known labels), which
/// NodeRestriction lets it set although they are in reserved namespaces.
pub(crate) const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

fn in_namespace(prefix: &str, ns: &str) -> bool {
    prefix == ns || prefix.ends_with(&format!(".{ns}"))
}

fn reserved(prefix: &str) -> bool {
    in_namespace(prefix, "kubernetes.io") || in_namespace(prefix, "k8s.io")
}

/// Whether the NodeRestriction admission plugin lets a node's own kubelet set `key` on its
/// Node.
pub fn node_may_set(key: &str) -> bool {
    let prefix = key.split_once('/').map_or("", |(p, _)| p);
    if in_namespace(prefix, "node-restriction.kubernetes.io") {
        return false;
    }
    if reserved(prefix) {
        return KUBELET_LABELS.contains(&key)
            || in_namespace(prefix, "kubelet.kubernetes.io")
            || in_namespace(prefix, "node.kubernetes.io");
    }
    true
}

/// Warnings for setting `key` on a node (empty when none).
pub fn label_warnings(key: &str) -> Vec<String> {
    let (prefix, name) = key.split_once('/').unwrap_or(("", key));
    let mut out = Vec::new();
    let lower = name.to_ascii_lowercase();
    if node_may_set(key) && ISOLATION_WORDS.iter().any(|w| lower.contains(w)) {
        out.push(format!(
            "{key} looks like a workload-isolation label but is outside node-restriction.kubernetes.io/: a node's own kubelet can set it, so a compromised node could attract the workload (use e.g. example.com.node-restriction.kubernetes.io/{name})"
        ));
    }
    if KUBELET_LABELS.contains(&key) {
        out.push(format!(
            "{key} is one of the kubelet's own labels: the kubelet sets it on its own Node (and cloud node controllers keep zone, region and instance type up to date), so a value set by hand may be overwritten"
        ));
    } else if reserved(prefix)
        && !in_namespace(prefix, "node-restriction.kubernetes.io")
        && !in_namespace(prefix, "kubelet.kubernetes.io")
        && !in_namespace(prefix, "node.kubernetes.io")
        && prefix != "node-role.kubernetes.io"
    {
        out.push(format!(
            "{key} is in the {prefix} namespace, reserved for Kubernetes' own labels: use a domain of your own (e.g. example.com/{name})"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_about_isolation_keys_a_node_may_set_on_itself() {
        assert_eq!(label_warnings("pool").len(), 1);
        assert_eq!(label_warnings("example.com/llm-pool").len(), 1);
        assert!(
            label_warnings("ops.example.com.node-restriction.kubernetes.io/llm-pool").is_empty()
        );
        assert!(label_warnings("accelerator.example.com/gpu-family").is_empty());
        // [*.]node.kubernetes.io is a namespace kubelets may set (NodeRestriction allows it).
        assert!(
            label_warnings("example.node.kubernetes.io/pool")[0].contains("workload-isolation")
        );
    }

    #[test]
    fn node_role_is_an_admins_label_no_kubelet_may_set() {
        // NodeRestriction refuses kubernetes.io labels outside the kubelet's own set, so
        // node-role.kubernetes.io/* is the admin's: no isolation or ownership warning.
        assert!(
            label_warnings("node-role.kubernetes.io/gpu").is_empty(),
            "{:?}",
            label_warnings("node-role.kubernetes.io/gpu")
        );
        assert!(label_warnings("node-role.kubernetes.io/gpu-pool").is_empty());
        assert!(!node_may_set("node-role.kubernetes.io/gpu"));
    }

    #[test]
    fn the_kubelets_own_labels_are_said_to_be_the_kubelets() {
        for key in [
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "node.kubernetes.io/instance-type",
            "kubernetes.io/arch",
        ] {
            let w = label_warnings(key);
            assert_eq!(w.len(), 1, "{key}: {w:?}");
            assert!(
                w[0].contains("the kubelet sets it on its own Node"),
                "{w:?}"
            );
            assert!(node_may_set(key));
        }
    }

    #[test]
    fn other_reserved_namespaces_are_for_kubernetes_own_labels() {
        let w = label_warnings("node.k8s.io/x");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("reserved for Kubernetes"), "{w:?}");
        assert!(label_warnings("example.kubernetes.io/x")[0].contains("reserved for Kubernetes"));
        // Node feature discovery's namespaces, and node-restriction, are meant for this.
        assert!(label_warnings("feature.node.kubernetes.io/cpu-avx2").is_empty());
        assert!(label_warnings("profile.node.kubernetes.io/x").is_empty());
        assert!(label_warnings("node-restriction.kubernetes.io/gpu").is_empty());
        assert!(!node_may_set("node-restriction.kubernetes.io/gpu"));
        assert!(!node_may_set("example.kubernetes.io/x"));
        assert!(node_may_set("kubelet.kubernetes.io/x"));
        assert!(node_may_set("example.com/x"));
    }
}
