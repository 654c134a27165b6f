//! A release archive built from this plugin's binary for the host platform, and the manifest
//! rendered for it: the manifest's sha256 and bin match the archive.

use std::collections::BTreeMap;
use std::path::Path;

use placekit_testserver::packaging::{
    PLUGINS, archive_entries, build_archive, host_platform, render_manifest, sha256_file,
    validate_manifest,
};

#[test]
fn the_rendered_manifest_matches_the_host_archive() {
    let Some(platform) = host_platform() else {
        eprintln!("NOTICE: this host is not a release platform; skipping");
        return;
    };
    let plugin = PLUGINS.iter().find(|p| p.name == "nodelabel").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let license = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../LICENSE");
    let (archive, sha) = build_archive(
        plugin,
        "v0.1.0",
        &platform,
        Path::new(env!("CARGO_BIN_EXE_kubectl-nodelabel")),
        &license,
        dir.path(),
        1,
    )
    .unwrap();
    assert_eq!(sha, sha256_file(&archive).unwrap());
    let mut shas = BTreeMap::new();
    shas.insert(format!("{}/{}", platform.os, platform.arch), sha.clone());
    let manifest = render_manifest(
        plugin,
        "v0.1.0",
        "https://github.com/placekit/placekit/releases/download",
        &shas,
    );
    assert!(validate_manifest(&manifest, "nodelabel.yaml").is_empty());

    let doc: serde_json::Value = serde_yaml_like(&manifest);
    let entry = doc["spec"]["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["selector"]["matchLabels"]["os"] == platform.os
                && p["selector"]["matchLabels"]["arch"] == platform.arch
        })
        .unwrap()
        .clone();
    assert_eq!(entry["sha256"], sha);
    assert!(
        entry["uri"]
            .as_str()
            .unwrap()
            .ends_with(&archive.file_name().unwrap().to_string_lossy().to_string())
    );
    let entries = archive_entries(&archive).unwrap();
    assert!(
        entries.contains(&entry["bin"].as_str().unwrap().to_string()),
        "{entries:?}"
    );
    assert!(entries.contains(&"LICENSE".to_string()));
    // The kubectl completion helper ships beside the binary and is listed in the manifest.
    let helper = "kubectl_complete-nodelabel";
    assert!(entries.contains(&helper.to_string()), "{entries:?}");
    let files = entry["files"].as_array().unwrap();
    assert!(files.iter().any(|f| f["from"] == helper), "{files:?}");
}

/// The manifest as JSON (it is YAML; the test server crate's serde_yaml reads it).
fn serde_yaml_like(text: &str) -> serde_json::Value {
    placekit_testserver::packaging::parse_yaml(text).unwrap()
}
