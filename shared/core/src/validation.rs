//! Label key and value validation with exactly the API server's rules and wording.
//!
//! These functions mirror `k8s.io/apimachinery/pkg/api/validate/content` of Kubernetes
//! v1.37.2 (`IsLabelKey` — the old `IsQualifiedName` —, `IsDNS1123Subdomain`,
//! `IsLabelValue`), the release placekit's tests run as the referee: each returns the list of
//! messages the API server would produce, in the same order and with the same text (`a
//! valid label key ...`, `must be no more than 63 bytes`), so that a user sees the same
//! explanation whether placekit rejects an input up front or the server does.
//! An empty list means the input is valid.
//!
//! The checks are written as byte scans rather than regexes: they run on every key of every
//! node and every manifest, and the property tests in this module check that they agree with
//! the documented regexes.

/// Longest allowed name part of a qualified name (`prefix/name`).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest allowed label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Longest allowed DNS-1123 subdomain (the optional prefix of a qualified name).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

/// The regex the API server documents for the name part of a qualified name.
pub const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
/// The regex the API server documents for a label value.
pub const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
/// The regex the API server documents for a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

const QUALIFIED_NAME_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `EmptyError()`.
fn empty_error() -> &'static str {
    "must be non-empty"
}

/// apimachinery's `content.MaxLenError(n)`: lengths are in bytes, as Go's `len`.
fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} bytes")
}

/// apimachinery's `RegexError(msg, fmt, examples...)`, including its quirky
/// `'a',  or 'b', ` punctuation, which users will have seen in real error messages.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
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
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, anchored.
fn matches_qualified_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            is_alnum(first)
                && is_alnum(last)
                && bytes
                    .iter()
                    .all(|&b| is_alnum(b) || b == b'-' || b == b'_' || b == b'.')
        }
        _ => false,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, anchored.
fn matches_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let lower_alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            lower_alnum(first)
                && lower_alnum(last)
                && bytes.iter().all(|&b| lower_alnum(b) || b == b'-')
        }
        _ => false,
    }
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// Messages for an invalid DNS-1123 subdomain; empty when valid.
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
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

/// Messages for an invalid qualified name (a label key, a taint key); empty when valid.
///
/// Same rules, order and texts as apimachinery's `IsLabelKey` (v1.37).
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
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
                    &["MyName", "my.name", "123-abc"]
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
    if !matches_qualified_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Messages for an invalid label value; empty when valid (the empty string is valid).
///
/// Same rules and order as apimachinery's `IsValidLabelValue`.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Formats a field error the way the API server's `field.Error.Error()` does for
/// `field.Invalid`: `metadata.labels: Invalid value: "x": <detail>`, the value quoted with
/// Go's `%q` ([`go_quote`]).
pub fn invalid_field_message(field: &str, value: &str, detail: &str) -> String {
    format!("{field}: Invalid value: {}: {detail}", go_quote(value))
}

/// Go's `strconv.Quote`, which `%q` prints: `"` and `\` escaped, printable characters as
/// they are, `\a \b \f \n \r \t \v`, other control bytes as `\xNN`, other non-printable
/// characters (spaces other than ' ', format and private-use characters, ...) as `\uNNNN` or
/// `\UNNNNNNNN`. Go's idea of printable comes from the Unicode tables; this knows the
/// categories label input meets (it does not know every unassigned code point).
pub fn go_quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if go_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint`, for the characters that matter here.
fn go_printable(c: char) -> bool {
    let code = c as u32;
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() || code == 0xad {
        return false;
    }
    // Format characters (Cf), surrogates and private use.
    const NOT_PRINTABLE: &[(u32, u32)] = &[
        (0x0600, 0x0605),
        (0x061c, 0x061c),
        (0x06dd, 0x06dd),
        (0x070f, 0x070f),
        (0x0890, 0x0891),
        (0x08e2, 0x08e2),
        (0x180e, 0x180e),
        (0x200b, 0x200f),
        (0x202a, 0x202e),
        (0x2060, 0x206f),
        (0xe000, 0xf8ff),
        (0xfeff, 0xfeff),
        (0xfff9, 0xfffb),
        (0xfffe, 0xffff),
        (0x110bd, 0x110bd),
        (0x110cd, 0x110cd),
        (0x13430, 0x1343f),
        (0x1bca0, 0x1bca3),
        (0x1d173, 0x1d17a),
        (0xe0001, 0xe007f),
        (0xf0000, 0x10ffff),
    ];
    !NOT_PRINTABLE
        .iter()
        .any(|(lo, hi)| (*lo..=*hi).contains(&code))
}

/// Every field error the API server raises for a labels map, in its order (key first,
/// then value, per entry), formatted as [`invalid_field_message`].
pub fn label_map_errors<'a>(
    field: &str,
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (key, value) in labels {
        for msg in qualified_name_errors(key) {
            out.push(invalid_field_message(field, key, &msg));
        }
        for msg in label_value_errors(value) {
            out.push(invalid_field_message(field, value, &msg));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NAME_REGEX_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    #[test]
    fn valid_keys_have_no_errors() {
        for key in [
            "app",
            "kubernetes.io/hostname",
            "accelerator.example.com/gpu-family",
            "ops.example.com.node-restriction.kubernetes.io/llm-pool",
            "a",
            "A_b.C-1",
        ] {
            assert!(qualified_name_errors(key).is_empty(), "{key}");
        }
    }

    #[test]
    fn empty_prefix_message() {
        assert_eq!(
            qualified_name_errors("/gpu"),
            vec!["prefix part must be non-empty".to_string()]
        );
    }

    #[test]
    fn prefix_over_253_message() {
        let prefix = format!("{}.com", "a".repeat(250));
        let errs = qualified_name_errors(&format!("{prefix}/gpu"));
        assert_eq!(
            errs,
            vec!["prefix part must be no more than 253 bytes".to_string()]
        );
    }

    #[test]
    fn uppercase_prefix_message() {
        let errs = qualified_name_errors("Example.com/gpu");
        assert_eq!(
            errs,
            vec!["prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string()]
        );
    }

    #[test]
    fn name_over_63_message() {
        let errs = qualified_name_errors(&"a".repeat(64));
        assert_eq!(
            errs,
            vec!["name part must be no more than 63 bytes".to_string()]
        );
    }

    #[test]
    fn empty_name_reports_both_messages_like_the_api_server() {
        // IsQualifiedName appends the empty error and then the regex error.
        let errs = qualified_name_errors("example.com/");
        assert_eq!(
            errs,
            vec![
                "name part must be non-empty".to_string(),
                NAME_REGEX_MSG.to_string()
            ]
        );
    }

    #[test]
    fn bad_characters_message() {
        assert_eq!(
            qualified_name_errors("gpu family"),
            vec![NAME_REGEX_MSG.to_string()]
        );
        assert_eq!(
            qualified_name_errors("-gpu"),
            vec![NAME_REGEX_MSG.to_string()]
        );
    }

    #[test]
    fn more_than_one_slash_message() {
        assert_eq!(
            qualified_name_errors("a/b/c"),
            vec!["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()]
        );
    }

    #[test]
    fn value_over_63_message() {
        assert_eq!(
            label_value_errors(&"v".repeat(64)),
            vec!["must be no more than 63 bytes".to_string()]
        );
    }

    #[test]
    fn value_bad_character_message() {
        assert_eq!(
            label_value_errors("80 gb"),
            vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()]
        );
    }

    #[test]
    fn empty_value_is_valid() {
        assert!(label_value_errors("").is_empty());
    }

    #[test]
    fn field_error_format_matches_api_server() {
        assert_eq!(
            label_map_errors("metadata.labels", [("a b", "ok")]),
            vec![format!(
                "metadata.labels: Invalid value: \"a b\": {NAME_REGEX_MSG}"
            )]
        );
    }

    #[test]
    fn lengths_are_bytes() {
        // 32 two-byte characters are 64 bytes: too long, and not in the regex either.
        assert_eq!(
            label_value_errors(&"é".repeat(32))[0],
            "must be no more than 63 bytes"
        );
        assert_eq!(
            qualified_name_errors(&"é".repeat(32))[0],
            "name part must be no more than 63 bytes"
        );
    }

    #[test]
    fn values_are_quoted_like_go() {
        assert_eq!(go_quote("a b"), r#""a b""#);
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("a&b<c>é"), r#""a&b<c>é""#);
        assert_eq!(go_quote("\t\n\u{0}\u{7f}"), r#""\t\n\x00\x7f""#);
        assert_eq!(go_quote("\u{a0}\u{ad}\u{200b}"), r#""\u00a0\u00ad\u200b""#);
        assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
        assert_eq!(
            invalid_field_message("metadata.labels", "a\tb", "bad"),
            r#"metadata.labels: Invalid value: "a\tb": bad"#
        );
    }

    fn anchored(fmt: &str) -> regex::Regex {
        regex::Regex::new(&format!("^(?:{fmt})$")).unwrap()
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = qualified_name_errors(&s);
            let _ = label_value_errors(&s);
            let _ = dns1123_subdomain_errors(&s);
        }

        #[test]
        fn label_value_agrees_with_documented_regex(s in "[-A-Za-z0-9_. /é]{0,70}") {
            let re = anchored(LABEL_VALUE_FMT);
            let valid = re.is_match(&s) && s.len() <= LABEL_VALUE_MAX_LENGTH;
            prop_assert_eq!(label_value_errors(&s).is_empty(), valid);
        }

        #[test]
        fn qualified_name_agrees_with_documented_regexes(
            prefix in proptest::option::of("[-a-zA-Z0-9.]{0,12}"),
            name in "[-A-Za-z0-9_. ]{0,70}",
        ) {
            let key = match &prefix { Some(p) => format!("{p}/{name}"), None => name.clone() };
            let name_ok = anchored(QUALIFIED_NAME_FMT).is_match(&name) && name.len() <= QUALIFIED_NAME_MAX_LENGTH;
            let prefix_ok = prefix.as_deref().is_none_or(|p| anchored(DNS1123_SUBDOMAIN_FMT).is_match(p) && p.len() <= DNS1123_SUBDOMAIN_MAX_LENGTH);
            prop_assert_eq!(qualified_name_errors(&key).is_empty(), name_ok && prefix_ok);
        }
    }
}
