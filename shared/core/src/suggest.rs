//! "Did you mean" suggestions: the nearest existing key by edit distance.

/// The existing key closest to `key` (edit distance <= 3), for typo suggestions.
pub fn nearest_key<'a>(key: &str, existing: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    existing
        .into_iter()
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, _)| *d > 0 && *d <= 3)
        .min()
        .map(|(_, k)| k)
}

/// The edit distance (insertions, deletions, substitutions) between two strings.
pub fn edit_distance(a: &str, b: &str) -> usize {
    strsim::levenshtein(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_key_and_a_stranger_finds_none() {
        assert_eq!(
            nearest_key(
                "accelerator.example.com/gpu-famliy",
                ["accelerator.example.com/gpu-family", "zone"]
            ),
            Some("accelerator.example.com/gpu-family")
        );
        assert_eq!(nearest_key("totally-different", ["zone"]), None);
    }
}
