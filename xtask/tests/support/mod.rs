//! What the source-reading tests (`module_circles.rs`, `long_functions.rs`) share.

/// Whether `attrs` make an item test code only (`#[cfg(test)]`, `#[cfg(any(test, ...))]`).
pub fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr.meta.require_list().is_ok_and(|list| {
                list.tokens
                    .to_string()
                    .split_whitespace()
                    .any(|t| t == "test")
            })
    })
}
