//! The test server's own port of the parts of `k8s.io/apimachinery` it needs to answer like
//! a real API server: the label selector grammar of `pkg/labels/selector.go` and the label
//! key/value checks of `pkg/util/validation/validation.go`, with their exact error texts.
//!
//! It is written from the Go source and deliberately shares no code with the `placekit`
//! crate: the plugins parse selectors and validate labels with placekit's own code, and a
//! test server that used the same code would agree with every bug in it. Nothing in this
//! module may import from `placekit`.
//!
//! Behaviour and message texts are those of Kubernetes v1.33, the version the server reports
//! at `/version`: later releases reworded two validation messages (see [`validation`]) and
//! accept an even run of commas before `)` in a value set (see [`selector`]).
//!
//! Checked against the Go code itself: on about 29,000 generated selectors (operators,
//! keywords, bad keys and values, Unicode, NUL bytes) and 108,000 label keys/values, this
//! port gave the same results, matches and messages as apimachinery v0.37.2 with those two
//! v1.33 differences put back.

pub mod field;
pub mod selector;
pub mod validation;

pub use selector::{Operator, ParseError, Requirement, Selector};
pub use validation::{is_dns1123_subdomain, is_qualified_name, is_valid_label_value};

#[cfg(test)]
mod tests {
    /// The point of this module is to be a second, independent implementation.
    #[test]
    fn shares_no_code_with_placekit() {
        let needle = ["placekit", "::"].concat();
        for (file, source) in [
            ("apimachinery.rs", include_str!("apimachinery.rs")),
            ("field.rs", include_str!("apimachinery/field.rs")),
            ("selector.rs", include_str!("apimachinery/selector.rs")),
            ("validation.rs", include_str!("apimachinery/validation.rs")),
        ] {
            assert!(!source.contains(&needle), "{file} uses the placekit crate");
        }
    }
}
