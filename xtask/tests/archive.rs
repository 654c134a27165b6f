//! A release archive built for the host platform and the manifest rendered for it from the
//! committed template: the manifest's sha256, uri and bin match the archive, and the archive
//! holds the binary, the LICENSE and the kubectl completion helper the manifest lists.

use std::path::Path;

use xtask::packaging::{
    PLUGINS, Platforms, RELEASES, archive_entries, build_archive, host_platform, render_template,
    sha256_file, template_path, validate_manifest,
};

#[test]
fn the_rendered_manifest_matches_the_host_archive() {
    let Some(platform) = host_platform() else {
        eprintln!("NOTICE: this host is not a release platform; skipping");
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let plugin = PLUGINS.iter().find(|p| p.name == "nodelabel").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("kubectl-nodelabel");
    std::fs::write(&binary, "#!/bin/sh\necho stand-in\n").unwrap();
    let dist = dir.path().join("dist");
    let (archive, sha) = build_archive(
        plugin,
        "v0.1.0",
        &platform,
        &binary,
        &repo.join("LICENSE"),
        &dist,
        1,
    )
    .unwrap();
    assert_eq!(sha, sha256_file(&archive).unwrap());
    let template = std::fs::read_to_string(repo.join(template_path(plugin))).unwrap();
    let manifest = render_template(
        "nodelabel.krew.yaml",
        &template,
        "v0.1.0",
        RELEASES,
        &dist,
        Platforms::Present,
    )
    .unwrap();
    assert_eq!(
        validate_manifest(&manifest, "nodelabel.yaml", Platforms::Present),
        Vec::<String>::new()
    );

    let doc: serde_json::Value = serde_yaml::from_str(&manifest).unwrap();
    let platforms = doc["spec"]["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), 1, "only the archive built here");
    let entry = &platforms[0];
    assert_eq!(entry["selector"]["matchLabels"]["os"], platform.os);
    assert_eq!(entry["selector"]["matchLabels"]["arch"], platform.arch);
    assert_eq!(entry["sha256"], sha);
    assert_eq!(
        entry["uri"],
        format!(
            "{RELEASES}/v0.1.0/{}",
            archive.file_name().unwrap().to_string_lossy()
        )
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

/// krew requires the license in every archive and GitHub detects a license only from its
/// text: `LICENSE` is the whole Apache License 2.0 (its nine sections, not the short notice
/// that points to it), and the crates' `license` field names that license.
#[test]
fn the_license_is_the_whole_apache_license_and_the_crates_name_it() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(repo.join("LICENSE")).unwrap();
    for section in [
        "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
        "1. Definitions.",
        "2. Grant of Copyright License.",
        "3. Grant of Patent License.",
        "4. Redistribution.",
        "5. Submission of Contributions.",
        "6. Trademarks.",
        "7. Disclaimer of Warranty.",
        "8. Limitation of Liability.",
        "9. Accepting Warranty or Additional Liability.",
        "END OF TERMS AND CONDITIONS",
    ] {
        assert!(text.contains(section), "LICENSE lacks {section:?}");
    }
    let workspace = std::fs::read_to_string(repo.join("Cargo.toml")).unwrap();
    assert!(
        workspace.contains("license = \"Apache-2.0\""),
        "the workspace's license field is not Apache-2.0"
    );
}
