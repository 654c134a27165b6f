//! kubectl's label-change syntax: `key=value` sets, `key-` removes.

use super::SyntaxError;
use crate::validation::{label_value_errors, qualified_name_errors};

/// One requested label change, validated.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LabelChange {
    /// Set `key` to `value` (the empty string is a valid value).
    Set { key: String, value: String },
    /// Remove `key` if present.
    Remove { key: String },
}

impl LabelChange {
    /// The label key this change touches.
    pub fn key(&self) -> &str {
        match self {
            LabelChange::Set { key, .. } | LabelChange::Remove { key } => key,
        }
    }

    /// The value after the change (`None` for a removal).
    pub fn value(&self) -> Option<&str> {
        match self {
            LabelChange::Set { value, .. } => Some(value),
            LabelChange::Remove { .. } => None,
        }
    }
}

/// Parses kubectl label arguments (`k=v`, `k-`) into validated changes, rejecting every
/// input kubectl or the API server would reject, plus two mistakes kubectl lets through
/// silently: the same key set to two values, and a key both set and removed.
///
/// The result keeps the order of the arguments, without duplicates.
pub fn parse_label_changes<S: AsRef<str>>(specs: &[S]) -> Result<Vec<LabelChange>, SyntaxError> {
    let mut changes: Vec<LabelChange> = Vec::with_capacity(specs.len());
    for spec in specs {
        let spec = spec.as_ref();
        let change = if spec.contains('=') {
            let mut parts = spec.split('=');
            let (Some(key), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(SyntaxError::InvalidLabelSpec(spec.to_string()));
            };
            let messages = label_value_errors(value);
            if !messages.is_empty() {
                return Err(SyntaxError::InvalidLabelValue {
                    spec: spec.to_string(),
                    messages,
                });
            }
            LabelChange::Set {
                key: key.to_string(),
                value: value.to_string(),
            }
        } else if let Some(key) = spec.strip_suffix('-') {
            LabelChange::Remove {
                key: key.to_string(),
            }
        } else {
            return Err(SyntaxError::UnknownLabelSpec(spec.to_string()));
        };
        let messages = qualified_name_errors(change.key());
        if !messages.is_empty() {
            return Err(SyntaxError::InvalidLabelKey {
                spec: spec.to_string(),
                messages,
            });
        }
        if let Some(previous) = changes.iter().find(|c| c.key() == change.key()) {
            match (previous, &change) {
                (a, b) if a == b => continue,
                (LabelChange::Set { value: first, .. }, LabelChange::Set { value: second, .. }) => {
                    return Err(SyntaxError::ConflictingValues {
                        key: change.key().to_string(),
                        first: first.clone(),
                        second: second.clone(),
                    });
                }
                _ => return Err(SyntaxError::SetAndRemove(change.key().to_string())),
            }
        }
        changes.push(change);
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(k: &str, v: &str) -> LabelChange {
        LabelChange::Set {
            key: k.into(),
            value: v.into(),
        }
    }

    #[test]
    fn parses_the_runbook_command() {
        let changes = parse_label_changes(&[
            "ops.example.com.node-restriction.kubernetes.io/llm-pool=online",
            "accelerator.example.com/gpu-family=a100",
            "accelerator.example.com/gpu-memory-",
            "empty=",
        ])
        .unwrap();
        assert_eq!(
            changes,
            vec![
                set(
                    "ops.example.com.node-restriction.kubernetes.io/llm-pool",
                    "online"
                ),
                set("accelerator.example.com/gpu-family", "a100"),
                LabelChange::Remove {
                    key: "accelerator.example.com/gpu-memory".into()
                },
                set("empty", ""),
            ]
        );
    }

    #[test]
    fn rejects_what_kubectl_rejects() {
        assert_eq!(
            parse_label_changes(&["a=b=c"]),
            Err(SyntaxError::InvalidLabelSpec("a=b=c".into()))
        );
        assert_eq!(
            parse_label_changes(&["a"]),
            Err(SyntaxError::UnknownLabelSpec("a".into()))
        );
        assert!(matches!(
            parse_label_changes(&["a=b c"]),
            Err(SyntaxError::InvalidLabelValue { .. })
        ));
        assert!(matches!(
            parse_label_changes(&["a/b/c=x"]),
            Err(SyntaxError::InvalidLabelKey { .. })
        ));
        assert!(matches!(
            parse_label_changes(&["=x"]),
            Err(SyntaxError::InvalidLabelKey { .. })
        ));
    }

    #[test]
    fn set_and_remove_same_key_is_an_error() {
        assert_eq!(
            parse_label_changes(&["a=b", "a-"]),
            Err(SyntaxError::SetAndRemove("a".into()))
        );
        assert_eq!(
            parse_label_changes(&["a-", "a=b"]),
            Err(SyntaxError::SetAndRemove("a".into()))
        );
    }

    #[test]
    fn conflicting_values_are_an_error_but_repeats_are_not() {
        assert!(matches!(
            parse_label_changes(&["a=b", "a=c"]),
            Err(SyntaxError::ConflictingValues { .. })
        ));
        assert_eq!(
            parse_label_changes(&["a=b", "a=b"]).unwrap(),
            vec![set("a", "b")]
        );
    }

    #[test]
    fn error_message_names_the_input() {
        let err = parse_label_changes(&["gpu=a 100"]).unwrap_err().to_string();
        assert!(
            err.starts_with("invalid label value: \"gpu=a 100\": a valid label must be"),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn never_panics(specs in proptest::collection::vec("\\PC{0,20}", 0..4)) {
            let _ = parse_label_changes(&specs);
        }

        #[test]
        fn valid_specs_round_trip(key in "[a-z][a-z0-9]{0,10}", value in "([a-z0-9]{0,10})") {
            let parsed = parse_label_changes(&[format!("{key}={value}")]).unwrap();
            prop_assert_eq!(parsed, vec![set(&key, &value)]);
        }
    }
}
