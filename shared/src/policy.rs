//! Warnings about label keys that are legal but risky to set on nodes.
//!
//! - **Isolation outside `node-restriction.kubernetes.io/`.** The NodeRestriction admission
//!   plugin stops a kubelet from setting labels under `node-restriction.kubernetes.io/`
//!   (and `*.node-restriction.kubernetes.io/`) on its own Node; any other key can be set by
//!   the node itself, so a compromised node could attract a workload isolated by that key.
//!   A key is treated as an isolation key when its name says so (`pool`, `dedicated`,
//!   `tenant`, `isolation`, `reserved`, `team`): a heuristic, hence a warning.
//! - **Keys in `kubernetes.io` / `k8s.io` namespaces** belong to kubelets and controllers,
//!   which may overwrite or remove them (`node-restriction.kubernetes.io`,
//!   `feature.node.kubernetes.io` and `profile.node.kubernetes.io` excepted).

/// Words in a key's name that mark it as used for workload isolation.
const ISOLATION_WORDS: &[&str] = &[
    "pool",
    "dedicated",
    "tenant",
    "isolation",
    "reserved",
    "team",
];

fn in_namespace(prefix: &str, ns: &str) -> bool {
    prefix == ns || prefix.ends_with(&format!(".{ns}"))
}

/// Warnings for setting `key` on a node (empty when none).
pub fn label_warnings(key: &str) -> Vec<String> {
    let (prefix, name) = key.split_once('/').unwrap_or(("", key));
    let mut out = Vec::new();
    let protected = in_namespace(prefix, "node-restriction.kubernetes.io");
    let lower = name.to_ascii_lowercase();
    if !protected && ISOLATION_WORDS.iter().any(|w| lower.contains(w)) {
        out.push(format!(
            "{key} looks like a workload-isolation label but is outside node-restriction.kubernetes.io/: a node's own kubelet can set it, so a compromised node could attract the workload (use e.g. example.com.node-restriction.kubernetes.io/{name})"
        ));
    }
    let owned = ["kubernetes.io", "k8s.io"]
        .iter()
        .any(|ns| in_namespace(prefix, ns));
    let allowed = protected
        || in_namespace(prefix, "feature.node.kubernetes.io")
        || in_namespace(prefix, "profile.node.kubernetes.io");
    if owned && !allowed {
        out.push(format!(
            "{key} is in the {prefix} namespace, which kubelets and controllers own: they may overwrite or remove it"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_about_unprotected_isolation_keys() {
        assert_eq!(label_warnings("pool").len(), 1);
        assert_eq!(label_warnings("example.com/llm-pool").len(), 1);
        assert!(
            label_warnings("ops.example.com.node-restriction.kubernetes.io/llm-pool").is_empty()
        );
        assert!(label_warnings("accelerator.example.com/gpu-family").is_empty());
    }

    #[test]
    fn warns_about_kubernetes_owned_namespaces() {
        assert_eq!(label_warnings("kubernetes.io/hostname").len(), 1);
        assert_eq!(label_warnings("topology.kubernetes.io/zone").len(), 1);
        assert_eq!(label_warnings("node.k8s.io/x").len(), 1);
        assert!(label_warnings("feature.node.kubernetes.io/cpu-avx2").is_empty());
        assert!(label_warnings("node-restriction.kubernetes.io/gpu").is_empty());
    }
}
