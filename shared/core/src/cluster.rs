//! Which cluster a kubeconfig reaches: the identity that snapshots record, that
//! `rollback` and the cross-cluster guard compare, and that reads across contexts use to
//! see two contexts of one cluster as one.

use serde::{Deserialize, Serialize};

/// Which cluster this is: context names are not unique (every kind cluster
/// is `kind-kind`), so `rollback --last` and the cross-cluster guard compare these instead.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterIdentity {
    /// The API server URL, without userinfo.
    pub server: String,
    /// `sha256:<hex>` of the first CA certificate the kubeconfig trusts, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_fingerprint: Option<String>,
    /// The uid of the `kube-system` namespace, if it could be read: stable for the life of
    /// the cluster and different for a recreated one at the same URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_system_uid: Option<String>,
}

impl ClusterIdentity {
    /// Whether `self` and `other` are the same cluster: two different CA fingerprints mean
    /// different clusters whatever else they share (the `kube-system` uid is what a server
    /// says, and a server that is not the cluster can say it); otherwise the uid decides
    /// when both have one, and the server URL decides the rest.
    pub fn same_cluster(&self, other: &ClusterIdentity) -> bool {
        if let (Some(a), Some(b)) = (&self.ca_fingerprint, &other.ca_fingerprint)
            && a != b
        {
            return false;
        }
        if let (Some(a), Some(b)) = (&self.kube_system_uid, &other.kube_system_uid) {
            return a == b;
        }
        normalize_server(&self.server) == normalize_server(&other.server)
    }
}

impl std::fmt::Display for ClusterIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.server)?;
        if let Some(uid) = &self.kube_system_uid {
            write!(f, ", kube-system uid {uid}")?;
        }
        Ok(())
    }
}

/// A server URL without userinfo and trailing slash, for comparing and recording.
pub fn normalize_server(server: &str) -> String {
    let without_userinfo = match server.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => server.to_string(),
    };
    without_userinfo.trim_end_matches('/').to_string()
}
