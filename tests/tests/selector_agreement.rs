//! placekit's own label selector parser and label validation (`shared/core/src/syntax/selector.rs`,
//! `shared/core/src/validation.rs`), which check user input before any write, against the test
//! server's independent port of apimachinery v0.37.2 (`tests/src/apimachinery/`), which the
//! differential suite compares with a real kube-apiserver v1.37.2.
//!
//! The two share no code (the test server must not serve placekit's answers back); this test
//! checks they agree — acceptance, every error message, and what a selector matches — on
//! generated inputs full of the cases that differ between releases (`,,`, long keys and
//! values, `%q` quoting, several errors at once).

use std::collections::BTreeMap;

use placekit_core::syntax::LabelSelector;
use placekit_core::validation::{label_value_errors, qualified_name_errors};
use placekit_testserver::apimachinery::{Selector, is_qualified_name, is_valid_label_value};

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn label_sets() -> Vec<BTreeMap<String, String>> {
    let set = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>()
    };
    vec![
        set(&[]),
        set(&[("a", "1"), ("b", "x")]),
        set(&[("a", ""), ("k", "in")]),
        set(&[("x", "-1"), ("b", "2"), ("example.com/k", "a")]),
        set(&[("k", "notin"), ("a", "10")]),
    ]
}

#[test]
fn placekit_selector_parser_agrees_with_the_apimachinery_port() {
    let long_key = "k".repeat(64);
    let long_value = "v".repeat(64);
    let long_prefix = format!("{}/k", "p".repeat(254));
    let tokens: Vec<&str> = vec![
        "a",
        "b",
        "k",
        "x",
        "in",
        "notin",
        "=",
        "==",
        "!=",
        "!",
        "(",
        ")",
        ",",
        ",,",
        ">",
        "<",
        " ",
        " ",
        "1",
        "-1",
        "10",
        "a/b",
        "a/b/c",
        "example.com/k",
        "Example.com/k",
        "/k",
        "é",
        "$",
        "&",
        "_a",
        "a_",
        "\t",
        "\u{0}",
        "\n",
        "\"q\"",
        &long_key,
        &long_value,
        &long_prefix,
    ];
    let sets = label_sets();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..30_000 {
        let n = 1 + (rng.next() % 8) as usize;
        let input: String = (0..n).map(|_| rng.pick(&tokens)).collect();
        let ours = LabelSelector::parse(&input);
        let port = Selector::parse(&input);
        match (ours, port) {
            (Ok(ours), Ok(port)) => {
                accepted += 1;
                for labels in &sets {
                    assert_eq!(
                        ours.matches(labels),
                        port.matches(labels),
                        "{input:?} on {labels:?}"
                    );
                }
            }
            (
                Err(placekit_core::syntax::SyntaxError::InvalidSelector { message, .. }),
                Err(port),
            ) => {
                rejected += 1;
                assert_eq!(message, port.0, "{input:?}");
            }
            (ours, port) => panic!("{input:?}: placekit {ours:?}, apimachinery port {port:?}"),
        }
    }
    // The generator must exercise both sides.
    assert!(
        accepted > 1_000 && rejected > 1_000,
        "{accepted} {rejected}"
    );
    for fixed in [
        "k in (a,,)",
        "k notin (,,)",
        "k in (a,,,)",
        "a/b/c=x",
        "k=a b",
    ] {
        assert_eq!(
            LabelSelector::parse(fixed)
                .map_err(|e| e.to_string())
                .is_ok(),
            Selector::parse(fixed).is_ok(),
            "{fixed}"
        );
    }
}

#[test]
fn placekit_label_validation_agrees_with_the_apimachinery_port() {
    let parts: Vec<&str> = vec![
        "a", "Z", "0", "-", "_", ".", "/", "é", " ", "\t", "example", "com", "k8s", "&", "~",
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..50_000 {
        let n = (rng.next() % 12) as usize;
        let mut text: String = (0..n).map(|_| rng.pick(&parts)).collect();
        match rng.next() % 8 {
            0 => text.push_str(&"n".repeat(60)),
            1 => text = format!("{}/{text}", "p".repeat(250)),
            _ => {}
        }
        assert_eq!(
            qualified_name_errors(&text),
            is_qualified_name(&text),
            "{text:?}"
        );
        assert_eq!(
            label_value_errors(&text),
            is_valid_label_value(&text),
            "{text:?}"
        );
    }
}
