//! A release archive built for the host platform and the manifest rendered for it from the
//! committed template: the manifest's sha256, uri and bin match the archive, and the archive
//! holds the binary, the LICENSE and the kubectl completion helper the manifest lists.

use std::path::Path;

use xtask::packaging::{
    PLATFORMS, PLUGINS, Platforms, RELEASES, archive_entries, archive_name, build_archive,
    host_platform, render_template, sha256_file, template_path, validate_manifest,
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

/// `cargo binstall kubectl-<plugin>` finds the archive the release publishes and the binary
/// in it: each plugin crate's `[package.metadata.binstall]` (read back through `cargo
/// metadata`, as binstall reads the published crate), rendered for every release target and
/// for the gnu targets the static musl builds serve, names `archive_name` under the release
/// URL, and its `bin-dir` the binary `build_archive` puts at the archive's root.
#[test]
fn cargo_binstall_metadata_names_the_release_archives() {
    use placekit_testserver::process::Bounded as _;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(&repo)
        .bounded_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for plugin in PLUGINS {
        let package = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == plugin.package)
            .unwrap_or_else(|| panic!("{} is a workspace package", plugin.package));
        let version = package["version"].as_str().unwrap();
        let repository = package["repository"].as_str().unwrap();
        assert_eq!(format!("{repository}/releases/download"), RELEASES);
        let binstall = &package["metadata"]["binstall"];
        assert_eq!(binstall["pkg-fmt"], "tgz", "{}", plugin.package);
        for (target, platform) in
            PLATFORMS
                .iter()
                .map(|p| (p.target.to_string(), p))
                .chain(PLATFORMS.iter().filter_map(|p| {
                    p.target
                        .strip_suffix("-musl")
                        .map(|t| (format!("{t}-gnu"), p))
                }))
        {
            let url = binstall["overrides"][&target]["pkg-url"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: no pkg-url for {target}", plugin.package))
                .replace("{ repo }", repository)
                .replace("{ version }", version);
            assert_eq!(
                url,
                format!(
                    "{RELEASES}/v{version}/{}",
                    archive_name(plugin, &format!("v{version}"), platform)
                ),
                "{}: {target}",
                plugin.package
            );
            let bin = binstall["bin-dir"]
                .as_str()
                .unwrap()
                .replace("{ bin }", plugin.bin)
                .replace("{ binary-ext }", platform.exe_suffix());
            assert_eq!(bin, format!("{}{}", plugin.bin, platform.exe_suffix()));
        }
    }
}

/// A release checked as docs/install.md's "Verify a release" tells a user: `sha256sum
/// --ignore-missing -c SHA256SUMS` over one downloaded archive and its SBOM says OK for both
/// and fails for a changed byte; the SBOM names the plugin and exactly the crates `cargo
/// tree` shows compiled into it for that target (normal dependencies).
#[test]
fn a_local_release_verifies_as_the_readme_says() {
    use placekit_testserver::process::Bounded as _;
    use std::process::Command;
    let Some(platform) = host_platform() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for plugin in PLUGINS {
        std::fs::write(
            bin.join(format!("{}{}", plugin.bin, platform.exe_suffix())),
            "#!/bin/sh\necho stand-in\n",
        )
        .unwrap();
    }
    let dist = dir.path().join("dist");
    let xtask = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(args)
            .bounded_output()
            .unwrap();
        assert!(
            out.status.success(),
            "xtask {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let dist_arg = dist.to_str().unwrap();
    xtask(&[
        "package",
        "archives",
        "--version",
        "v0.1.0",
        "--target",
        platform.target,
        "--binary-dir",
        bin.to_str().unwrap(),
        "--out",
        dist_arg,
    ]);
    xtask(&["package", "checksums", "--dist", dist_arg]);

    // What a user downloads of one plugin: its archive, its SBOM and SHA256SUMS.
    let plugin = PLUGINS.iter().find(|p| p.name == "nodelabel").unwrap();
    let archive = archive_name(plugin, "v0.1.0", &platform);
    let sbom = format!("{archive}.cdx.json");
    let download = dir.path().join("download");
    std::fs::create_dir_all(&download).unwrap();
    for name in [archive.as_str(), sbom.as_str(), "SHA256SUMS"] {
        std::fs::copy(dist.join(name), download.join(name)).unwrap();
    }
    let check = || {
        Command::new("sha256sum")
            .args(["--ignore-missing", "-c", "SHA256SUMS"])
            .current_dir(&download)
            .bounded_output()
            .unwrap()
    };
    let out = check();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("{archive}: OK")), "{text}");
    assert!(text.contains(&format!("{sbom}: OK")), "{text}");

    // The SBOM against what the workspace says of the same build: every crate it names is
    // one Cargo.lock pins at that version; it holds the plugin's own dependencies and
    // leaves out what is never compiled into the binary (dev-dependencies, build scripts'
    // dependencies, the test server).
    let bom: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(download.join(&sbom)).unwrap()).unwrap();
    assert_eq!(bom["bomFormat"], "CycloneDX");
    assert_eq!(bom["specVersion"], "1.5");
    assert_eq!(bom["metadata"]["component"]["name"], plugin.package);
    assert_eq!(bom["metadata"]["component"]["version"], "0.1.0");
    let listed: std::collections::BTreeSet<String> = bom["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let (name, version) = (c["name"].as_str().unwrap(), c["version"].as_str().unwrap());
            assert_eq!(c["purl"], format!("pkg:cargo/{name}@{version}"));
            format!("{name}@{version}")
        })
        .collect();
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"))
        .unwrap();
    let locked: std::collections::BTreeSet<String> = lock
        .split("[[package]]")
        .filter_map(|block| {
            let field = |key: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
                    .and_then(|v| v.strip_suffix('"'))
            };
            Some(format!("{}@{}", field("name")?, field("version")?))
        })
        .collect();
    let unlocked: Vec<&String> = listed.difference(&locked).collect();
    assert!(unlocked.is_empty(), "not in Cargo.lock: {unlocked:?}");
    let names: std::collections::BTreeSet<&str> =
        listed.iter().filter_map(|c| c.split('@').next()).collect();
    for compiled in [
        "placekit-cli",
        "clap",
        "tokio",
        "kube-client",
        "k8s-openapi",
        "rustls",
    ] {
        assert!(
            names.contains(compiled),
            "{compiled} missing from {names:?}"
        );
    }
    // json-patch: kube's jsonpatch feature, which only the test server (a dev-dependency)
    // turns on; a workspace-wide resolve (`cargo metadata`) would list it.
    for never in [
        "placekit-testserver",
        "proptest",
        "rcgen",
        "cc",
        "tempfile",
        "json-patch",
    ] {
        assert!(
            !names.contains(never),
            "{never} is not compiled into the binary"
        );
    }
    assert!(
        bom["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["ref"] == "pkg:cargo/kubectl-nodelabel@0.1.0"
                && d["dependsOn"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x == "pkg:cargo/placekit-cli@0.1.0")),
        "the plugin depends on placekit-cli"
    );

    // A changed byte fails the check.
    let mut bytes = std::fs::read(download.join(&sbom)).unwrap();
    bytes.push(b' ');
    std::fs::write(download.join(&sbom), bytes).unwrap();
    let out = check();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("{sbom}: FAILED")),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
