//! Taints: the model stored in snapshots and plans, and kubectl's taint syntax
//! (`key=value:Effect`, `key:Effect`, removal forms `key=value:Effect-`, `key:Effect-`, `key-`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::SyntaxError;
use crate::validation::{label_value_errors, qualified_name_errors};

/// The three taint effects the API server accepts.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

impl fmt::Display for TaintEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaintEffect {
    type Err = SyntaxError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "NoSchedule" => Ok(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Ok(TaintEffect::PreferNoSchedule),
            "NoExecute" => Ok(TaintEffect::NoExecute),
            other => Err(SyntaxError::InvalidTaintEffect(other.to_string())),
        }
    }
}

/// A node taint exactly as the API server stores it.
///
/// `value` and `time_added` are kept verbatim (absent stays absent) because plans assert the
/// current taint list with a JSON Patch `test`, which compares JSON structurally: a taint
/// re-serialised with `"value": ""` or a reformatted timestamp would never match.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub effect: TaintEffect,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
}

impl Taint {
    /// A taint without `timeAdded`; an empty value is stored as absent, as the API server does.
    pub fn new(key: impl Into<String>, value: impl Into<String>, effect: TaintEffect) -> Self {
        let value = value.into();
        Taint {
            key: key.into(),
            value: (!value.is_empty()).then_some(value),
            effect,
            time_added: None,
        }
    }

    /// The value, with absent read as empty (the API server treats them alike).
    pub fn value_str(&self) -> &str {
        self.value.as_deref().unwrap_or("")
    }

    /// Same key, value and effect (`timeAdded` ignored): the identity `release` uses.
    pub fn same_as(&self, other: &Taint) -> bool {
        self.key == other.key
            && self.value_str() == other.value_str()
            && self.effect == other.effect
    }
}

impl fmt::Display for Taint {
    /// kubectl's notation: `key=value:Effect`, or `key:Effect` without a value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value_str() {
            "" => write!(f, "{}:{}", self.key, self.effect),
            v => write!(f, "{}={}:{}", self.key, v, self.effect),
        }
    }
}

/// Which existing taints a removal selects.
///
/// Unlike `kubectl taint ... key=value:Effect-`, which ignores the value, a matcher built
/// from a spec with a value only selects taints with exactly that value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaintMatcher {
    pub key: String,
    /// `None`: any value (the spec gave none).
    pub value: Option<String>,
    /// `None`: any effect (`key-`).
    pub effect: Option<TaintEffect>,
}

impl TaintMatcher {
    /// The exact matcher for one taint: key, value and effect must all be equal.
    pub fn exact(taint: &Taint) -> Self {
        TaintMatcher {
            key: taint.key.clone(),
            value: Some(taint.value_str().to_string()),
            effect: Some(taint.effect),
        }
    }

    pub fn matches(&self, taint: &Taint) -> bool {
        self.key == taint.key
            && self.effect.is_none_or(|e| e == taint.effect)
            && self.value.as_deref().is_none_or(|v| v == taint.value_str())
    }

    /// Same key and effect but another value: the case `kubectl taint ...-` would remove
    /// and placekit reports as a mismatch instead.
    pub fn mismatches(&self, taint: &Taint) -> bool {
        self.key == taint.key
            && self.effect.is_none_or(|e| e == taint.effect)
            && !self.matches(taint)
    }
}

impl fmt::Display for TaintMatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key)?;
        // An exact matcher of a taint without a value reads as kubectl writes that taint.
        if let Some(v) = self.value.as_deref().filter(|v| !v.is_empty()) {
            write!(f, "={v}")?;
        }
        if let Some(e) = self.effect {
            write!(f, ":{e}")?;
        }
        Ok(())
    }
}

/// One taint argument: add a taint, or remove the taints a matcher selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaintSpec {
    Add(Taint),
    Remove(TaintMatcher),
}

/// Splits `key[=value][:Effect]` with kubectl's rules; the effect is optional here.
fn parse_parts(spec: &str) -> Result<(String, Option<String>, Option<TaintEffect>), SyntaxError> {
    let invalid = |detail: Option<String>| SyntaxError::InvalidTaintSpec {
        spec: spec.to_string(),
        detail,
    };
    let parts: Vec<&str> = spec.split(':').collect();
    let (key_value, effect) = match parts.as_slice() {
        [kv] => (*kv, None),
        [kv, effect] => (*kv, Some(effect.parse::<TaintEffect>()?)),
        _ => return Err(invalid(None)),
    };
    let kv: Vec<&str> = key_value.split('=').collect();
    let (key, value) = match kv.as_slice() {
        [key] => (*key, None),
        [key, value] => {
            let errs = label_value_errors(value);
            if !errs.is_empty() {
                return Err(invalid(Some(errs.join("; "))));
            }
            (*key, Some(value.to_string()))
        }
        _ => return Err(invalid(None)),
    };
    let errs = qualified_name_errors(key);
    if !errs.is_empty() {
        return Err(invalid(Some(errs.join("; "))));
    }
    Ok((key.to_string(), value, effect))
}

/// Parses one taint to add: `key=value:Effect` or `key:Effect` (the effect is required).
/// The taint a release removes: as [`parse_taint`], also accepting kubectl's removal form
/// with a trailing `-` (`key=value:Effect-`), and saying what is missing otherwise.
pub fn parse_taint_to_remove(spec: &str) -> Result<Taint, SyntaxError> {
    let spec = spec.strip_suffix('-').unwrap_or(spec);
    match parse_parts(spec)? {
        (key, value, Some(effect)) => Ok(Taint::new(key, value.unwrap_or_default(), effect)),
        _ => Err(SyntaxError::InvalidTaintSpec {
            spec: spec.to_string(),
            detail: Some(
                "the taint to release needs its effect too: KEY=VALUE:EFFECT or KEY:EFFECT (only the taint with that key, value and effect is removed)".into(),
            ),
        }),
    }
}

pub fn parse_taint(spec: &str) -> Result<Taint, SyntaxError> {
    match parse_parts(spec)? {
        (key, value, Some(effect)) => Ok(Taint::new(key, value.unwrap_or_default(), effect)),
        _ => Err(SyntaxError::InvalidTaintSpec {
            spec: spec.to_string(),
            detail: Some("a taint to add needs an effect: KEY[=VALUE]:EFFECT".into()),
        }),
    }
}

/// Parses kubectl taint arguments: additions and removals (`...-`). Two additions with the
/// same key and effect are rejected, as kubectl does.
pub fn parse_taint_specs<S: AsRef<str>>(specs: &[S]) -> Result<Vec<TaintSpec>, SyntaxError> {
    let mut out: Vec<TaintSpec> = Vec::with_capacity(specs.len());
    for spec in specs {
        let spec = spec.as_ref();
        if let Some(body) = spec.strip_suffix('-') {
            let (key, value, effect) = parse_parts(body)?;
            out.push(TaintSpec::Remove(TaintMatcher { key, value, effect }));
        } else {
            let taint = parse_taint(spec)?;
            let duplicate = out.iter().any(|s| {
                matches!(s, TaintSpec::Add(t) if t.key == taint.key && t.effect == taint.effect)
            });
            if duplicate {
                return Err(SyntaxError::DuplicateTaint(taint.to_string()));
            }
            out.push(TaintSpec::Add(taint));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_kubectl_forms() {
        assert_eq!(
            parse_taint("dedicated=llm-online:NoSchedule").unwrap(),
            Taint::new("dedicated", "llm-online", TaintEffect::NoSchedule)
        );
        assert_eq!(
            parse_taint("gpu:NoExecute").unwrap(),
            Taint::new("gpu", "", TaintEffect::NoExecute)
        );
        assert_eq!(
            parse_taint_specs(&["dedicated=llm-online:NoSchedule-", "gpu:NoExecute-", "x-"])
                .unwrap(),
            vec![
                TaintSpec::Remove(TaintMatcher {
                    key: "dedicated".into(),
                    value: Some("llm-online".into()),
                    effect: Some(TaintEffect::NoSchedule)
                }),
                TaintSpec::Remove(TaintMatcher {
                    key: "gpu".into(),
                    value: None,
                    effect: Some(TaintEffect::NoExecute)
                }),
                TaintSpec::Remove(TaintMatcher {
                    key: "x".into(),
                    value: None,
                    effect: None
                }),
            ]
        );
    }

    #[test]
    fn rejects_bad_specs_with_kubectl_wording() {
        assert_eq!(
            parse_taint("a=b:Sometimes").unwrap_err().to_string(),
            "invalid taint effect: Sometimes, unsupported taint effect (expected NoSchedule, PreferNoSchedule or NoExecute)"
        );
        assert_eq!(
            parse_taint("a=b=c:NoSchedule").unwrap_err().to_string(),
            "invalid taint spec: a=b=c:NoSchedule"
        );
        assert_eq!(
            parse_taint("a:b:NoSchedule").unwrap_err().to_string(),
            "invalid taint spec: a:b:NoSchedule"
        );
        assert!(
            parse_taint("a b=c:NoSchedule")
                .unwrap_err()
                .to_string()
                .starts_with(
                    "invalid taint spec: a b=c:NoSchedule, name part must consist of alphanumeric"
                )
        );
        assert!(
            parse_taint("dedicated=gpu").is_err(),
            "effect is required to add"
        );
        assert!(matches!(
            parse_taint_specs(&["a=b:NoSchedule", "a=c:NoSchedule"]),
            Err(SyntaxError::DuplicateTaint(_))
        ));
    }

    #[test]
    fn exact_matcher_requires_the_value() {
        let wanted = Taint::new("dedicated", "llm-online", TaintEffect::NoSchedule);
        let other = Taint::new("dedicated", "batch", TaintEffect::NoSchedule);
        let m = TaintMatcher::exact(&wanted);
        assert!(m.matches(&wanted));
        assert!(!m.matches(&other));
        assert!(m.mismatches(&other));
        assert!(!m.mismatches(&Taint::new("dedicated", "batch", TaintEffect::NoExecute)));
    }

    #[test]
    fn serialises_like_the_api_server() {
        let t = Taint::new("gpu", "", TaintEffect::NoSchedule);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"key":"gpu","effect":"NoSchedule"}"#
        );
        assert_eq!(t.to_string(), "gpu:NoSchedule");
    }

    proptest! {
        #[test]
        fn never_panics(specs in proptest::collection::vec("\\PC{0,24}", 0..4)) {
            let _ = parse_taint_specs(&specs);
        }

        #[test]
        fn display_round_trips(key in "[a-z][a-z0-9./-]{0,8}[a-z0-9]", value in "([a-z0-9]{0,6})", e in 0..3usize) {
            let effect = [TaintEffect::NoSchedule, TaintEffect::PreferNoSchedule, TaintEffect::NoExecute][e];
            let taint = Taint::new(key, value, effect);
            if let Ok(parsed) = parse_taint(&taint.to_string()) {
                prop_assert_eq!(parsed, taint);
            }
        }
    }
}
