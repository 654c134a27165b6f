//! Which nodes a command acts on, from kubectl-style arguments.

use placekit_core::syntax::LabelSelector;

/// Why the arguments do not name the nodes to act on; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetsError {
    #[error("{arg:?} is not a node: expected NAME or node/NAME, not a {kind}")]
    NotANode { arg: String, kind: String },
    #[error("{arg:?}: empty node name")]
    EmptyName { arg: String },
    #[error(transparent)]
    Selector(#[from] placekit_core::syntax::SyntaxError),
    #[error("no nodes given: name nodes, or use -l/--selector{or_all}")]
    NoneGiven { or_all: &'static str },
    #[error("node names ({}) cannot be combined with -l/--selector{or_all}", .names.join(", "))]
    NamesAndSelector {
        names: Vec<String>,
        or_all: &'static str,
    },
    #[error("--all and -l/--selector are mutually exclusive")]
    AllAndSelector,
}

/// Which nodes a command acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    /// Named nodes, each once, in the order first given.
    Names(Vec<String>),
    Selector(LabelSelector),
    All,
}

/// A node argument as a name: `node/NAME` and `nodes/NAME` (what `kubectl get nodes -o name`
/// prints) are accepted like kubectl accepts them.
pub fn node_name(arg: &str) -> Result<String, TargetsError> {
    let name = match arg.split_once('/') {
        Some(("node" | "nodes" | "no", name)) => name,
        Some((kind, _)) => {
            return Err(TargetsError::NotANode {
                arg: arg.to_string(),
                kind: kind.to_string(),
            });
        }
        None => arg,
    };
    if name.is_empty() {
        return Err(TargetsError::EmptyName {
            arg: arg.to_string(),
        });
    }
    Ok(name.to_string())
}

impl Targets {
    /// Builds targets from kubectl-style arguments, rejecting ambiguous combinations.
    /// Repeated names are kept once: a node is planned and written once per command.
    pub fn from_args(
        names: Vec<String>,
        selector: Option<&str>,
        all: bool,
    ) -> Result<Self, TargetsError> {
        Self::build(names, selector, all, " or --all")
    }

    /// Like [`Targets::from_args`] for a command without an `--all` flag (`all`: the
    /// command's own default when nothing is named), whose messages must not suggest one.
    pub fn from_args_without_all_flag(
        names: Vec<String>,
        selector: Option<&str>,
        all: bool,
    ) -> Result<Self, TargetsError> {
        Self::build(names, selector, all, "")
    }

    /// Whether a node with `name` and `labels` is among the targets.
    pub fn admits_node(
        &self,
        name: &str,
        labels: &std::collections::BTreeMap<String, String>,
    ) -> bool {
        match self {
            Targets::Names(names) => names.iter().any(|n| n == name),
            Targets::Selector(s) => s.matches(labels),
            Targets::All => true,
        }
    }

    fn build(
        names: Vec<String>,
        selector: Option<&str>,
        all: bool,
        or_all: &'static str,
    ) -> Result<Self, TargetsError> {
        match (names.is_empty(), selector, all) {
            (false, None, false) => {
                let mut unique: Vec<String> = Vec::with_capacity(names.len());
                for arg in &names {
                    let name = node_name(arg)?;
                    if !unique.contains(&name) {
                        unique.push(name);
                    }
                }
                Ok(Targets::Names(unique))
            }
            (true, Some(s), false) => LabelSelector::parse(s)
                .map(Targets::Selector)
                .map_err(TargetsError::from),
            (true, None, true) => Ok(Targets::All),
            (true, None, false) => Err(TargetsError::NoneGiven { or_all }),
            (false, _, _) => Err(TargetsError::NamesAndSelector { names, or_all }),
            (true, Some(_), true) => Err(TargetsError::AllAndSelector),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_follow_kubectl_rules() {
        assert_eq!(
            Targets::from_args(vec!["a".into()], None, false).unwrap(),
            Targets::Names(vec!["a".into()])
        );
        assert_eq!(
            Targets::from_args(vec![], None, true).unwrap(),
            Targets::All
        );
        assert!(matches!(
            Targets::from_args(vec![], Some("pool=online"), false).unwrap(),
            Targets::Selector(_)
        ));
        for (names, sel, all) in [
            (vec!["a".to_string()], Some("x=y"), false),
            (vec![], Some("x=y"), true),
            (vec![], None, false),
            (vec!["pod/a".to_string()], None, false),
            (vec!["node/".to_string()], None, false),
        ] {
            assert!(Targets::from_args(names, sel, all).is_err());
        }
        assert!(
            Targets::from_args(vec![], Some("a in"), false)
                .unwrap_err()
                .to_string()
                .contains("unable to parse requirement")
        );
    }

    #[test]
    fn a_command_without_all_does_not_suggest_it() {
        let err = Targets::from_args_without_all_flag(vec![], None, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no nodes given: name nodes, or use -l/--selector"
        );
        let err = Targets::from_args(vec![], None, false).unwrap_err();
        assert!(err.to_string().ends_with("-l/--selector or --all"), "{err}");
    }

    #[test]
    fn names_are_deduplicated_and_node_prefixes_accepted() {
        assert_eq!(
            Targets::from_args(
                vec!["a".into(), "node/a".into(), "nodes/b".into(), "a".into()],
                None,
                false
            )
            .unwrap(),
            Targets::Names(vec!["a".into(), "b".into()])
        );
    }
}
