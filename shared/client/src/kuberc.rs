//! kuberc's credential plugin policy, as kubectl (1.35+) reads it and client-go enforces it:
//! `credentialPluginPolicy` (`AllowAll`, the default; `DenyAll`; `Allowlist`) and
//! `credentialPluginAllowlist` (entries with a `command`, or the deprecated `name`, matched
//! against the kubeconfig's exec plugin after both are resolved on `PATH`, as Go's
//! `exec.LookPath` resolves them). The file is `$KUBERC`, else `~/.kube/kuberc`;
//! `KUBERC=off` turns it off. A missing default file is no policy; one named by `$KUBERC`
//! must be readable.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Why a credential plugin may not run, or the policy cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("kuberc {file}: {message}")]
    Unreadable { file: String, message: String },
    #[error(
        "kuberc {file}: credentialPluginPolicy is DenyAll, so the exec credential plugin {command:?} may not run (as kubectl refuses it)"
    )]
    Denied { file: String, command: String },
    #[error(
        "kuberc {file}: the exec credential plugin {command:?} is not in credentialPluginAllowlist (as kubectl refuses it)"
    )]
    NotAllowed { file: String, command: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Preference {
    #[serde(default)]
    credential_plugin_policy: Option<String>,
    #[serde(default)]
    credential_plugin_allowlist: Option<Vec<AllowlistEntry>>,
}

#[derive(Debug, Default, Deserialize)]
struct AllowlistEntry {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    command: Option<String>,
}

/// The policy in force, read from the kuberc file that applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginPolicy {
    file: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    AllowAll,
    DenyAll,
    Allowlist(Vec<String>),
}

impl PluginPolicy {
    /// The policy of the kuberc file that applies (`None`: none, or `KUBERC=off`).
    pub fn load() -> Result<Option<Self>, PolicyError> {
        let env = std::env::var_os("KUBERC").filter(|v| !v.is_empty());
        if env.as_deref() == Some(std::ffi::OsStr::new("off")) {
            return Ok(None);
        }
        let (file, explicit) = match env {
            Some(path) => (PathBuf::from(path), true),
            None => match home() {
                Some(home) => (home.join(".kube").join("kuberc"), false),
                None => return Ok(None),
            },
        };
        let shown = file.display().to_string();
        let unreadable = |message: String| PolicyError::Unreadable {
            file: shown.clone(),
            message,
        };
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if !explicit && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(unreadable(e.to_string())),
        };
        Self::parse(&shown, &text).map(Some)
    }

    /// The policy of a kuberc file's text, validated as client-go validates it.
    fn parse(file: &str, text: &str) -> Result<Self, PolicyError> {
        let unreadable = |message: String| PolicyError::Unreadable {
            file: file.to_string(),
            message,
        };
        let preference: Preference =
            serde_yaml::from_str(text).map_err(|e| unreadable(e.to_string()))?;
        let allowlist = preference.credential_plugin_allowlist;
        let kind = match preference.credential_plugin_policy.as_deref().unwrap_or("") {
            "" | "AllowAll" | "DenyAll" if allowlist.is_some() => {
                return Err(unreadable(
                    "misconfigured credential plugin allowlist: the policy is not Allowlist but an allowlist is given".into(),
                ));
            }
            "" | "AllowAll" => Kind::AllowAll,
            "DenyAll" => Kind::DenyAll,
            "Allowlist" => {
                let entries = allowlist.unwrap_or_default();
                if entries.is_empty() {
                    return Err(unreadable(
                        "credentialPluginPolicy Allowlist with an empty credentialPluginAllowlist"
                            .into(),
                    ));
                }
                let mut commands = Vec::new();
                for entry in entries {
                    let command = entry
                        .command
                        .or(entry.name)
                        .filter(|c| !c.trim().is_empty())
                        .ok_or_else(|| {
                            unreadable("an empty credentialPluginAllowlist entry".into())
                        })?;
                    commands.push(command);
                }
                Kind::Allowlist(commands)
            }
            other => {
                return Err(unreadable(format!(
                    "unknown credentialPluginPolicy {other:?} (AllowAll, DenyAll or Allowlist)"
                )));
            }
        };
        Ok(PluginPolicy {
            file: file.to_string(),
            kind,
        })
    }

    /// Whether the exec plugin `command` may run under this policy: verbatim in the
    /// allowlist, or the same file once both are resolved on `PATH`.
    pub fn check(&self, command: &str) -> Result<(), PolicyError> {
        let refused = |denied: bool| {
            let (file, command) = (self.file.clone(), command.to_string());
            if denied {
                PolicyError::Denied { file, command }
            } else {
                PolicyError::NotAllowed { file, command }
            }
        };
        match &self.kind {
            Kind::AllowAll => Ok(()),
            Kind::DenyAll => Err(refused(true)),
            Kind::Allowlist(allowed) => {
                if allowed.iter().any(|a| a == command) {
                    return Ok(());
                }
                let resolved = look_path(command).ok_or_else(|| refused(false))?;
                let base = Path::new(command).file_name();
                let matches = allowed
                    .iter()
                    .filter(|a| Path::new(a.as_str()).file_name() == base)
                    .filter_map(|a| look_path(a))
                    .any(|a| a == resolved);
                if matches { Ok(()) } else { Err(refused(false)) }
            }
        }
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var_os("USERPROFILE").filter(|h| !h.is_empty()))
        .map(PathBuf::from)
}

/// Go's `exec.LookPath`: a name with a separator is taken as given (if it is a file); a
/// bare name is the first executable of that name on `PATH`. The result made absolute.
fn look_path(command: &str) -> Option<PathBuf> {
    let path = Path::new(command);
    let found = if path.components().count() > 1 || path.has_root() {
        path.is_file().then(|| path.to_path_buf())
    } else {
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(path))
            .find(|candidate| candidate.is_file())
    }?;
    std::path::absolute(found).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_read_and_judge_as_client_go_does() {
        let deny = PluginPolicy::parse("k", "credentialPluginPolicy: DenyAll\n").unwrap();
        assert!(matches!(deny.check("aws"), Err(PolicyError::Denied { .. })));
        let all = PluginPolicy::parse(
            "k",
            "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\n",
        )
        .unwrap();
        assert!(all.check("anything").is_ok());
        let list = PluginPolicy::parse(
            "k",
            "credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- command: /bin/sh\n- name: kubelogin\n",
        )
        .unwrap();
        assert!(list.check("/bin/sh").is_ok());
        assert!(list.check("kubelogin").is_ok(), "verbatim");
        assert!(matches!(
            list.check("/usr/bin/env"),
            Err(PolicyError::NotAllowed { .. })
        ));
        for bad in [
            "credentialPluginPolicy: DenyAll\ncredentialPluginAllowlist: []\n",
            "credentialPluginPolicy: Allowlist\n",
            "credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist: [{}]\n",
            "credentialPluginPolicy: Sometimes\n",
        ] {
            assert!(
                matches!(
                    PluginPolicy::parse("k", bad),
                    Err(PolicyError::Unreadable { .. })
                ),
                "{bad}"
            );
        }
    }
}
