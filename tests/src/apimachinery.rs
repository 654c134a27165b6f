//! The test server's own port of the parts of `k8s.io/apimachinery` it needs to answer like
//! a real API server: the label selector grammar of `pkg/labels/selector.go` and the label
//! key/value checks of `pkg/util/validation/validation.go`, with their exact error texts.
//!
//! It is written from the Go source and deliberately shares no code with the `placekit`
//! crate: the plugins parse selectors and validate labels with placekit's own code, and a
//! test server that used the same code would agree with every bug in it. Nothing in this
//! module may import from `placekit`.
//!
//! Behaviour and message texts are those of Kubernetes v1.37 (apimachinery v0.37.2), the
//! version the server reports at `/version` and the one `tests/control-plane` runs, which
//! the differential suite (`tests/tests/differential.rs`) compares it with.
//!
//! An earlier check against the Go code itself (about 29,000 generated selectors —
//! operators, keywords, bad keys and values, Unicode, NUL bytes — and 108,000 label
//! keys/values) found the same results, matches and messages as apimachinery v0.37.2 except
//! for the two v1.33 behaviours this port kept then (the `a qualified name` wording and the
//! `,,` error) and no longer keeps.

pub mod field;
pub mod selector;
pub mod strict;
pub mod validation;

pub use selector::{Operator, ParseError, Requirement, Selector};
pub use validation::{
    is_dns1123_subdomain, is_qualified_name, is_valid_label_value, name_is_dns_label,
    name_is_dns_subdomain,
};

#[cfg(test)]
mod tests {
    /// The point of this module is to be a second, independent implementation.
    #[test]
    fn shares_no_code_with_placekit() {
        // Built at run time, so this test's own source does not hold them.
        let needles = ["_core", "_client", "_lint", "_cli"].map(|c| ["placekit", c].concat());
        for (file, source) in [
            ("apimachinery.rs", include_str!("apimachinery.rs")),
            ("field.rs", include_str!("apimachinery/field.rs")),
            ("selector.rs", include_str!("apimachinery/selector.rs")),
            ("validation.rs", include_str!("apimachinery/validation.rs")),
            ("strict.rs", include_str!("apimachinery/strict.rs")),
        ] {
            for needle in &needles {
                assert!(!source.contains(needle.as_str()), "{file} uses {needle}");
            }
        }
    }
}
