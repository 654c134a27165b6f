//! The committed krew manifests, the krew-release-bot templates and the GitHub workflows.

use std::path::{Path, PathBuf};

use placekit_testserver::packaging::{PLATFORMS, PLUGINS, validate_manifest};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn committed_manifests_follow_krew_rules() {
    for plugin in PLUGINS {
        let file = format!("{}.yaml", plugin.name);
        let text = std::fs::read_to_string(repo().join("krew-manifests").join(&file)).unwrap();
        assert_eq!(
            validate_manifest(&text, &file),
            Vec::<String>::new(),
            "{file}"
        );
        assert!(text.contains(&format!("bin: {}\n", plugin.bin)));
    }
}

#[test]
fn release_bot_templates_render_to_valid_manifests() {
    for plugin in PLUGINS {
        let text = std::fs::read_to_string(
            repo()
                .join("krew-manifests/release-bot")
                .join(format!("{}.krew.yaml", plugin.name)),
        )
        .unwrap();
        // What krew-release-bot does: TagName, and addURIAndSha -> uri + sha256 lines.
        let rendered: String = text
            .lines()
            .map(|line| {
                let line = line.replace("{{ .TagName }}", "v1.2.3");
                match line.trim().strip_prefix("{{ addURIAndSha \"") {
                    Some(rest) => {
                        let uri = rest.split('"').next().unwrap();
                        format!("    uri: {uri}\n    sha256: {}\n", "a".repeat(64))
                    }
                    None => format!("{line}\n"),
                }
            })
            .collect();
        assert_eq!(
            validate_manifest(&rendered, &format!("{}.yaml", plugin.name)),
            Vec::<String>::new(),
            "{rendered}"
        );
        assert!(rendered.contains(&format!(
            "/v1.2.3/{}_v1.2.3_windows_amd64.tar.gz",
            plugin.name
        )));
    }
}

fn workflow(name: &str) -> (String, serde_json::Value) {
    let text = std::fs::read_to_string(repo().join(".github/workflows").join(name)).unwrap();
    let value: serde_json::Value =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{name} is not valid YAML: {e}"));
    (text, value)
}

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
                .unwrap_or_else(|| panic!("{name}: unpinned action: {line}"));
            let pinned = reference.starts_with('v') && reference[1..].split('.').count() >= 2
                || reference.len() == 40 && reference.chars().all(|c| c.is_ascii_hexdigit())
                || reference.chars().next().is_some_and(|c| c.is_ascii_digit());
            assert!(pinned, "{name}: action not pinned to a version: {line}");
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
