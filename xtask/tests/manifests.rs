//! The committed krew-release-bot templates and the GitHub workflows.

use std::path::{Path, PathBuf};

use xtask::packaging::{PLATFORMS, PLUGINS, template_path};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The committed manifests are the krew-release-bot templates and nothing else: no file that
/// looks installable while carrying a placeholder checksum.
#[test]
fn the_only_committed_manifests_are_templates_without_checksums() {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("krew-manifests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = PLUGINS
        .iter()
        .map(|p| {
            template_path(p)
                .trim_start_matches("krew-manifests/")
                .to_string()
        })
        .collect();
    expected.sort();
    assert_eq!(names, expected);
    for plugin in PLUGINS {
        let text = std::fs::read_to_string(repo().join(template_path(plugin))).unwrap();
        assert!(!text.contains("sha256:"), "{}", template_path(plugin));
        assert_eq!(
            text.matches("{{ addURIAndSha ").count(),
            PLATFORMS.len(),
            "{}",
            template_path(plugin)
        );
    }
}

/// What the release workflow and krew-release-bot are told matches the repository.
#[test]
fn the_release_workflow_packages_with_xtask_and_the_templates() {
    let (text, value) = workflow("release.yml");
    assert!(
        !text.contains("placekit-package"),
        "packaging moved to cargo xtask"
    );
    assert!(text.contains("cargo xtask package archives"));
    assert!(text.contains("cargo xtask package manifests"));
    let template = value["jobs"]["krew-index"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|s| s["with"]["krew_template_file"].as_str())
        .unwrap()
        .to_string();
    for plugin in PLUGINS {
        let path = template.replace("${{ matrix.plugin }}", plugin.name);
        assert_eq!(path, template_path(plugin));
        assert!(repo().join(&path).exists(), "{path}");
    }
}

fn workflow(name: &str) -> (String, serde_json::Value) {
    let text = std::fs::read_to_string(repo().join(".github/workflows").join(name)).unwrap();
    let value: serde_json::Value =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{name} is not valid YAML: {e}"));
    (text, value)
}

/// Every action is pinned to a full commit hash, or says beside it why not (the comment
/// zizmor reads, with the reason above it); tests/workflows/check runs zizmor itself.
#[test]
fn workflows_are_valid_and_pin_their_actions() {
    for name in ["ci.yml", "release.yml"] {
        let (text, value) = workflow(name);
        assert!(
            value["jobs"].as_object().is_some_and(|j| !j.is_empty()),
            "{name} has jobs"
        );
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("- uses:") || l.starts_with("uses:"))
        {
            let reference = line
                .split('@')
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .unwrap_or_else(|| panic!("{name}: unpinned action: {line}"));
            let hash = reference.len() == 40 && reference.chars().all(|c| c.is_ascii_hexdigit());
            let justified = line.ends_with("# zizmor: ignore[unpinned-uses]");
            assert!(
                hash || justified,
                "{name}: action not pinned to a commit hash: {line}"
            );
        }
    }
}

#[test]
fn the_release_matrix_covers_the_manifest_platforms() {
    let (_, value) = workflow("release.yml");
    let matrix = value["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap();
    let mut targets: Vec<(String, String, String)> = matrix
        .iter()
        .map(|m| {
            (
                m["os"].as_str().unwrap().into(),
                m["arch"].as_str().unwrap().into(),
                m["target"].as_str().unwrap().into(),
            )
        })
        .collect();
    targets.sort();
    let mut expected: Vec<(String, String, String)> = PLATFORMS
        .iter()
        .map(|p| (p.os.into(), p.arch.into(), p.target.into()))
        .collect();
    expected.sort();
    assert_eq!(targets, expected);
}
