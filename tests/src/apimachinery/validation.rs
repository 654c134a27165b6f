//! `k8s.io/apimachinery` validation: `IsQualifiedName` (label keys, taint keys, annotation
//! keys), `IsValidLabelValue`, `IsDNS1123Subdomain` and `IsDNS1123Label`, each returning the
//! list of messages the API server puts after `Invalid value: "...": `; an empty list means
//! valid.
//!
//! The texts are Kubernetes v1.37's, where two generations of these functions live side by
//! side and the API server uses both:
//! - label keys and values go through `pkg/api/validate/content` (`IsLabelKey`,
//!   `IsLabelValue`): more than one `/` is `a valid label key ...`, and length limits read
//!   `must be no more than 63 bytes` (also for the DNS subdomain prefix of a key);
//! - object names go through `pkg/util/validation` (`NameIsDNSSubdomain`, `NameIsDNSLabel`),
//!   whose length limits still read `must be no more than 253 characters`.
//!
//! The Go code matches regular expressions; the same languages are checked here by hand
//! (Go's `$` matches only at the very end, so a trailing newline is never accepted).
//! Lengths are in bytes, as Go's `len`.

/// Longest name part of a qualified name.
const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
/// Longest DNS-1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;

/// `EmptyError()`.
fn empty_error() -> &'static str {
    "must be non-empty"
}

/// `content.MaxLenError(length)` (label keys and values).
fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} bytes")
}

/// `validation.MaxLenError(length)` of `pkg/util/validation` (object names).
fn max_len_error_characters(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `RegexError(msg, re, examples...)`. Each example is followed by `', '` and joined with
/// `' or '`, which is where upstream's double spaces (`'MyName',  or 'my.name'`) come from.
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{re}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(re);
    out.push_str("')");
    out
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`: non-empty, alphanumeric at both ends,
/// `-`, `_`, `.` allowed inside.
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`.
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let lower_alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            lower_alnum(first)
                && lower_alnum(last)
                && b.iter().all(|c| lower_alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

/// `^<dns1123 label>(\.<dns1123 label>)*$`.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `IsDNS1123Subdomain`.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `maskTrailingDash`: a `generateName` may end in `-` (Go's code drops the last two bytes
/// and appends `a`).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let mut cut = name.len() - 2;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}a", &name[..cut])
    } else {
        name.to_string()
    }
}

/// `NameIsDNSSubdomain(name, prefix)`: the names of nodes, pods, config maps and most
/// other objects (`prefix`: a `generateName`).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    let name = if prefix {
        mask_trailing_dash(name)
    } else {
        name.to_string()
    };
    let mut errs = Vec::new();
    if name.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error_characters(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(&name) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `NameIsDNSLabel(name, prefix)`: namespace names.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    let name = if prefix {
        mask_trailing_dash(name)
    } else {
        name.to_string()
    };
    let mut errs = Vec::new();
    if name.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error_characters(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(&name) {
        if matches_dns1123_subdomain(&name) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsQualifiedName`: an optional DNS-1123 subdomain prefix and `/`, then a name of at most
/// 63 characters. Label keys and taint keys are qualified names.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"],
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"],
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`: empty, or a qualified name's name part; at most 63 characters.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const PREFIX_REGEX: &str = "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn valid_qualified_names() {
        for key in [
            "a",
            "A",
            "1",
            "a.b_c-D",
            "kubernetes.io/hostname",
            "accelerator.example.com/gpu-family",
            "ops.example.com.node-restriction.kubernetes.io/llm-pool",
            "a/b",
            "0-x/Y_z",
        ] {
            assert_eq!(is_qualified_name(key), Vec::<String>::new(), "{key}");
        }
        let longest_name = "n".repeat(63);
        assert!(is_qualified_name(&longest_name).is_empty());
        let longest_prefix = format!("{}.{}/k", "a".repeat(63), "b".repeat(189));
        assert_eq!(longest_prefix.len(), 255);
        assert!(is_qualified_name(&longest_prefix).is_empty());
    }

    #[test]
    fn invalid_qualified_names_with_the_exact_messages() {
        assert_eq!(
            is_qualified_name(""),
            vec![
                "name part must be non-empty".to_string(),
                NAME_REGEX.to_string()
            ]
        );
        assert_eq!(is_qualified_name("bad key"), vec![NAME_REGEX.to_string()]);
        assert_eq!(is_qualified_name("-a"), vec![NAME_REGEX.to_string()]);
        assert_eq!(is_qualified_name("a_"), vec![NAME_REGEX.to_string()]);
        assert_eq!(is_qualified_name("é"), vec![NAME_REGEX.to_string()]);
        assert_eq!(is_qualified_name("a\n"), vec![NAME_REGEX.to_string()]);
        assert_eq!(
            is_qualified_name(&"n".repeat(64)),
            vec!["name part must be no more than 63 bytes".to_string()]
        );
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert_eq!(
            is_qualified_name("a/"),
            vec![
                "name part must be non-empty".to_string(),
                NAME_REGEX.to_string()
            ]
        );
        assert_eq!(
            is_qualified_name("Example.com/a"),
            vec![PREFIX_REGEX.to_string()]
        );
        assert_eq!(is_qualified_name("a..b/c"), vec![PREFIX_REGEX.to_string()]);
        assert_eq!(
            is_qualified_name(&format!("{}/k", "a".repeat(254))),
            vec!["prefix part must be no more than 253 bytes".to_string()]
        );
        assert_eq!(
            is_qualified_name(&format!("A{}/k", "a".repeat(253))),
            vec![
                "prefix part must be no more than 253 bytes".to_string(),
                PREFIX_REGEX.to_string()
            ]
        );
        assert_eq!(
            is_qualified_name("EX/bad key"),
            vec![PREFIX_REGEX.to_string(), NAME_REGEX.to_string()]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec!["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()]
        );
    }

    #[test]
    fn label_values_with_the_exact_messages() {
        for value in ["", "a", "a100", "A-b_c.d", "0", &"v".repeat(63)] {
            assert_eq!(is_valid_label_value(value), Vec::<String>::new(), "{value}");
        }
        assert_eq!(
            is_valid_label_value("bad value"),
            vec![VALUE_REGEX.to_string()]
        );
        assert_eq!(is_valid_label_value("a/b"), vec![VALUE_REGEX.to_string()]);
        assert_eq!(is_valid_label_value("_a"), vec![VALUE_REGEX.to_string()]);
        assert_eq!(is_valid_label_value("a."), vec![VALUE_REGEX.to_string()]);
        assert_eq!(
            is_valid_label_value(&"v".repeat(64)),
            vec!["must be no more than 63 bytes".to_string()]
        );
        assert_eq!(
            is_valid_label_value(&format!("{}-", "v".repeat(63))),
            vec![
                "must be no more than 63 bytes".to_string(),
                VALUE_REGEX.to_string()
            ]
        );
        // Bytes, not characters: 32 two-byte characters are 64 bytes.
        assert_eq!(
            is_valid_label_value(&"é".repeat(32)),
            vec![
                "must be no more than 63 bytes".to_string(),
                VALUE_REGEX.to_string()
            ]
        );
    }

    #[test]
    fn object_names_say_characters() {
        assert!(name_is_dns_subdomain("gpu-a100-1.example", false).is_empty());
        assert_eq!(
            name_is_dns_subdomain(&"n".repeat(254), false),
            vec!["must be no more than 253 characters".to_string()]
        );
        assert_eq!(
            name_is_dns_subdomain("Bad_Name", false),
            vec![PREFIX_REGEX.trim_start_matches("prefix part ").to_string()]
        );
        assert!(name_is_dns_subdomain("gpu-", true).is_empty());
        assert!(!name_is_dns_subdomain("gpu-", false).is_empty());
        assert!(name_is_dns_label("ml", false).is_empty());
        assert_eq!(
            name_is_dns_label("bad.ns", false),
            vec!["must not contain dots".to_string()]
        );
        assert_eq!(
            name_is_dns_label("Bad", false),
            vec!["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
        assert_eq!(
            name_is_dns_label(&"n".repeat(64), false),
            vec!["must be no more than 63 characters".to_string()]
        );
    }

    #[test]
    fn dns1123_subdomains() {
        for ok in ["a", "example.com", "a-b.c-d", "0.1", &"a".repeat(253)] {
            assert!(is_dns1123_subdomain(ok).is_empty(), "{ok}");
        }
        for bad in ["", "A", "a.", ".a", "a..b", "-a", "a-", "a_b", "a.-b"] {
            assert_eq!(
                is_dns1123_subdomain(bad),
                vec![PREFIX_REGEX.trim_start_matches("prefix part ").to_string()],
                "{bad}"
            );
        }
        assert_eq!(
            is_dns1123_subdomain(&"a".repeat(254)),
            vec!["must be no more than 253 bytes".to_string()]
        );
    }
}
