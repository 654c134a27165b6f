//! Unit tests of the parent module.

use super::*;
use proptest::prelude::*;

fn now() -> jiff::Timestamp {
    "2026-11-29T12:00:00Z".parse().unwrap()
}

fn parse(content: &str, naming: &Naming) -> (Vec<(String, String)>, Vec<String>) {
    let (f, e) = parse_features("src", content, naming, &NamespacePolicy::default(), now());
    (
        f.into_iter().map(|f| (f.key, f.value)).collect(),
        e.into_iter().map(|e| e.to_string()).collect(),
    )
}

fn kv(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

#[test]
fn runbook_hook_scenario() {
    let hook = Naming::Hook {
        hook_name: "my-script".into(),
    };
    let (features, errors) = parse(
        "net.core.somaxconn=4096\n/vm.swappiness=10\nmakocchi.dev/kernel.pid_max=4194304\n",
        &hook,
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        features,
        vec![
            kv(
                "feature.node.kubernetes.io/my-script-net.core.somaxconn",
                "4096"
            ),
            kv("feature.node.kubernetes.io/vm.swappiness", "10"),
            kv("makocchi.dev/kernel.pid_max", "4194304"),
        ]
    );
}

#[test]
fn file_naming_comments_and_defaults() {
    let (features, errors) = parse(
        "# a comment\n\navx2\n  fma3=true \nexample.com/gpu=a100\n",
        &Naming::File,
    );
    assert!(errors.is_empty());
    assert_eq!(
        features,
        vec![
            kv("feature.node.kubernetes.io/avx2", "true"),
            kv("feature.node.kubernetes.io/fma3", "true"),
            kv("example.com/gpu", "a100"),
        ]
    );
}

/// The line forms where placekit read a file otherwise than nfd-worker v0.17.3 does, found
/// by the differential against the real nfd-worker and nfd-master (`tests/tests/nfd.rs`):
/// each here as NFD reads it.
#[test]
fn line_forms_as_nfd_worker_reads_them() {
    // The key and value are not trimmed around `=`: `key = value` is no label.
    let (features, errors) = parse("spaced = padded\n", &Naming::File);
    assert!(features.is_empty());
    assert!(
        errors[0].starts_with("src:1: invalid label key \"feature.node.kubernetes.io/spaced \""),
        "{errors:?}"
    );
    // A leading `/` in a feature file is an empty prefix, which nfd-worker refuses.
    let (features, errors) = parse("/override=v\n", &Naming::File);
    assert!(features.is_empty());
    assert!(
        errors[0].starts_with("src:1: invalid label key \"/override\""),
        "{errors:?}"
    );
    // A directive starts with `# +`; `#+no-label` and `#  +no-label` are comments.
    let (features, errors) = parse("#+no-label\na=1\n#  +no-label\nb=1\n", &Naming::File);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        features,
        vec![
            kv("feature.node.kubernetes.io/a", "1"),
            kv("feature.node.kubernetes.io/b", "1")
        ]
    );
    // `+no-label` waits for the next entry read: an expired one is not read.
    let (features, _) = parse(
        "# +expiry-time=2000-01-01T00:00:00Z\n# +no-label\nold=1\n# +expiry-time=2999-01-01T00:00:00Z\nhidden=1\nshown=1\n",
        &Naming::File,
    );
    assert_eq!(features, vec![kv("feature.node.kubernetes.io/shown", "1")]);
    // An expiry is read as Go's RFC 3339: a time NFD refuses expires nothing.
    for refused in [
        "2000-01-01 00:00:00Z",
        "2000-01-01T00:00:00z",
        "2000-01-01t00:00:00Z",
        "2000-01-01T00:00Z",
        "2000-01-01",
    ] {
        let (features, errors) = parse(
            &format!("# +expiry-time={refused}\nkept=1\n"),
            &Naming::File,
        );
        assert_eq!(
            features,
            vec![kv("feature.node.kubernetes.io/kept", "1")],
            "{refused}"
        );
        assert!(
            errors[0].contains("invalid +expiry-time"),
            "{refused}: {errors:?}"
        );
    }
    for accepted in [
        " 2000-01-01T00:00:00Z",
        "2000-01-01T00:00:00.5Z",
        "2000-01-01T00:00:00,5Z",
        "2000-01-01T02:00:00+02:00",
    ] {
        let (features, errors) = parse(
            &format!("# +expiry-time={accepted}\ngone=1\n"),
            &Naming::File,
        );
        assert!(
            features.is_empty() && errors.is_empty(),
            "{accepted}: {errors:?}"
        );
    }
    // An unknown directive is reported, as NFD logs it; +no-feature changes no label.
    let (features, errors) = parse("# +foo\n# +no-feature\nx=1\n", &Naming::File);
    assert_eq!(features, vec![kv("feature.node.kubernetes.io/x", "1")]);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].contains("unknown directive \"foo\""),
        "{errors:?}"
    );
}

#[test]
fn directives() {
    let content = "# +no-label\nhidden=1\nshown=1\n# +expiry-time=2020-01-01T00:00:00Z\nold=1\n# +expiry-time=2030-01-01T00:00:00Z\nfresh=1\n";
    let (features, errors) = parse(content, &Naming::File);
    assert!(errors.is_empty());
    let keys: Vec<String> = features.into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        vec![
            "feature.node.kubernetes.io/shown",
            "feature.node.kubernetes.io/fresh"
        ]
    );
    let (_, errors) = parse("# +expiry-time=yesterday\n", &Naming::File);
    assert!(errors[0].starts_with("src:1: invalid +expiry-time"));
}

#[test]
fn kubernetes_io_is_denied_unless_allowed() {
    let (features, errors) = parse(
        "kubernetes.io/hostname=x\nnode.kubernetes.io/foo=1\nsub.feature.node.kubernetes.io/ok=1\nprofile.node.kubernetes.io/p=1\n",
        &Naming::File,
    );
    assert_eq!(errors.len(), 2);
    assert!(errors[0].starts_with(
        "src:1: label \"kubernetes.io/hostname\": namespace \"kubernetes.io\" is not allowed"
    ));
    assert_eq!(features.len(), 2);
    let policy = NamespacePolicy {
        extra_allowed: vec!["node.kubernetes.io".into()],
    };
    let (f, e) = parse_features(
        "s",
        "node.kubernetes.io/foo=1",
        &Naming::File,
        &policy,
        now(),
    );
    assert!(e.is_empty() && f.len() == 1);
}

#[test]
fn invalid_entries_have_positions() {
    let (_, errors) = parse("ok=1\nbad key=1\ngood=bad value\n", &Naming::File);
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0].starts_with("src:2: invalid label key \"feature.node.kubernetes.io/bad key\"")
    );
    assert!(errors[1].starts_with("src:3: invalid value \"bad value\""));
}

#[test]
fn later_lines_win() {
    let (features, _) = parse("a=1\na=2\n", &Naming::File);
    assert_eq!(features, vec![kv("feature.node.kubernetes.io/a", "2")]);
}

fn feature(key: &str) -> Feature {
    Feature {
        key: format!("feature.node.kubernetes.io/{key}"),
        value: "1".into(),
        line: 1,
    }
}

#[test]
fn prune_removes_only_what_the_same_source_imported() {
    use crate::syntax::LabelChange;
    let key = |k: &str| format!("feature.node.kubernetes.io/{k}");
    // hook:cpu imported cpu-model.id and old; hook:sysctl imported swappiness.
    let previous = serde_json::json!({
        "hook:cpu": [key("cpu-model.id"), key("old")],
        "hook:sysctl": [key("swappiness")],
    })
    .to_string();
    let (changes, annotation) = import_changes(
        &ImportRecord::parse(Some(&previous)),
        "hook:sysctl",
        &[feature("somaxconn")],
        true,
        &Default::default(),
    );
    assert_eq!(
        changes,
        vec![
            LabelChange::Set {
                key: key("somaxconn"),
                value: "1".into()
            },
            LabelChange::Remove {
                key: key("swappiness")
            },
        ],
        "the cpu hook's keys are not the sysctl hook's to prune"
    );
    let record = ImportRecord::parse(annotation.value());
    assert_eq!(record.by_source["hook:cpu"].len(), 2);
    assert_eq!(
        record.by_source["hook:sysctl"].iter().collect::<Vec<_>>(),
        vec![&key("somaxconn")]
    );

    // Without --prune the source keeps its earlier keys.
    let (changes, annotation) = import_changes(
        &ImportRecord::parse(Some(&previous)),
        "hook:sysctl",
        &[feature("somaxconn")],
        false,
        &Default::default(),
    );
    assert_eq!(changes.len(), 1);
    assert!(
        ImportRecord::parse(annotation.value()).by_source["hook:sysctl"]
            .contains(&key("swappiness"))
    );
}

#[test]
fn a_key_two_sources_claim_is_kept_and_legacy_records_are_read() {
    use crate::syntax::LabelChange;
    let key = |k: &str| format!("feature.node.kubernetes.io/{k}");
    let previous =
        serde_json::json!({"file:a": [key("shared")], "file:b": [key("shared")]}).to_string();
    let (changes, _) = import_changes(
        &ImportRecord::parse(Some(&previous)),
        "file:a",
        &[],
        true,
        &Default::default(),
    );
    assert!(changes.is_empty(), "file:b still claims it: {changes:?}");

    // The comma-separated record of older versions: keys of an unknown source, never
    // pruned, claimed by the source that sets them again.
    let legacy = format!("{},{}", key("a"), key("gone"));
    let (changes, annotation) = import_changes(
        &ImportRecord::parse(Some(&legacy)),
        "file:f",
        &[feature("a")],
        true,
        &Default::default(),
    );
    assert_eq!(
        changes,
        vec![LabelChange::Set {
            key: key("a"),
            value: "1".into()
        }]
    );
    let record = ImportRecord::parse(annotation.value());
    assert_eq!(
        record.by_source[UNKNOWN_SOURCE].iter().collect::<Vec<_>>(),
        vec![&key("gone")]
    );
    assert!(record.by_source["file:f"].contains(&key("a")));
    assert!(record.owns(&key("gone")) && !record.owns(&key("other")));

    // A label set by hand with the imported value is set but not claimed.
    let by_hand: std::collections::BTreeSet<String> = [key("a")].into();
    let (_, annotation) = import_changes(
        &ImportRecord::default(),
        "file:f",
        &[feature("a")],
        true,
        &by_hand,
    );
    assert!(!ImportRecord::parse(annotation.value()).owns(&key("a")));
}

#[test]
fn oversized_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    std::fs::write(&path, "a=1\n".repeat(20_000)).unwrap();
    assert!(matches!(
        read_feature_file(&path),
        Err(SourceError::TooLarge { .. })
    ));
    std::fs::write(&path, [0xff, 0xfe]).unwrap();
    assert!(matches!(
        read_feature_file(&path),
        Err(SourceError::NotText { .. })
    ));
}

#[test]
fn node_files_skip_dot_files() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["gpu-1", "gpu-2.features", ".hidden", ".gpu-3.features"] {
        std::fs::write(dir.path().join(name), "a=1").unwrap();
    }
    let nodes: Vec<String> = node_files(dir.path())
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(nodes, vec!["gpu-1", "gpu-2"]);
}

proptest! {
    #[test]
    fn never_panics(content in "\\PC{0,200}", hook in proptest::bool::ANY) {
        let naming = if hook { Naming::Hook { hook_name: "h".into() } } else { Naming::File };
        let _ = parse_features("s", &content, &naming, &NamespacePolicy::default(), now());
    }
}

#[test]
fn a_fifo_or_a_directory_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let err = read_feature_file(dir.path()).unwrap_err().to_string();
    assert!(err.contains("a directory (use --dir"), "{err}");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let err = read_feature_file(&fifo).unwrap_err().to_string();
        assert!(
            err.contains("a FIFO, socket or device, not a regular file"),
            "{err}"
        );
    }
}
