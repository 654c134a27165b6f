//! Release packaging: archives per plugin and platform (the binary, the license and, except
//! on Windows, the `kubectl_complete-<plugin>` helper that kubectl runs to complete), krew
//! `Plugin` manifests rendered with version, uri and sha256, and a validator for krew-index's
//! rules. Used by the `placekit-package` binary, the release workflow and the tests.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::Digest;

/// A plugin as krew knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginInfo {
    /// krew name = manifest file name = what users type after `kubectl`.
    pub name: &'static str,
    /// The installed binary (`kubectl-gpu_taint` for `gpu-taint`).
    pub bin: &'static str,
    pub short_description: &'static str,
    pub description: &'static str,
    pub caveats: Option<&'static str>,
}

/// The three plugins.
pub const PLUGINS: &[PluginInfo] = &[
    PluginInfo {
        name: "nodelabel",
        bin: "kubectl-nodelabel",
        short_description: "Change node labels safely, with exact rollback",
        description: "Sets and removes node labels with a snapshot written first and conditional\nwrites, so a concurrent change is reported as a conflict instead of being\noverwritten, and every change can be undone exactly with `rollback`. Shows the\nworkloads whose node affinity depends on a label before it is removed, and\nimports node features in node-feature-discovery's format.\n",
        caveats: Some(
            "Snapshots are kept in $XDG_STATE_HOME/placekit/snapshots (or the platform\nequivalent). The plugin needs get, list and patch on nodes; the dependents\nlookup needs list on workloads and pods.\n",
        ),
    },
    PluginInfo {
        name: "gpu-taint",
        bin: "kubectl-gpu_taint",
        short_description: "Dedicate and release GPU nodes exactly",
        description: "Dedicates GPU nodes with a taint and pool labels after a preflight (GPU\ncapacity registered by the device plugin, running pods that do not tolerate\nthe taint), releases them only when key, value and effect all match, and\nprints a GPU inventory (capacity, allocatable, requested, free) per node.\n",
        caveats: Some("The plugin needs get, list and patch on nodes and list on pods.\n"),
    },
    PluginInfo {
        name: "affinity-lint",
        bin: "kubectl-affinity_lint",
        short_description: "Lint workloads for node affinity mistakes",
        description: "Lints Kubernetes manifests for scheduling mistakes, above all required\nnodeSelectorTerms split into OR-ed terms, with file, line and column, a\nconcrete fix, and text, JSON, SARIF or GitHub annotation output. Works\noffline on files, directories, stdin and Helm-rendered output.\n",
        caveats: None,
    },
];

/// A release platform: krew's os/arch and the Rust target that builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    pub os: &'static str,
    pub arch: &'static str,
    pub target: &'static str,
}

impl Platform {
    pub fn exe_suffix(&self) -> &'static str {
        if self.os == "windows" { ".exe" } else { "" }
    }
}

/// The five platforms of the manifests.
pub const PLATFORMS: &[Platform] = &[
    Platform {
        os: "linux",
        arch: "amd64",
        target: "x86_64-unknown-linux-musl",
    },
    Platform {
        os: "linux",
        arch: "arm64",
        target: "aarch64-unknown-linux-musl",
    },
    Platform {
        os: "darwin",
        arch: "amd64",
        target: "x86_64-apple-darwin",
    },
    Platform {
        os: "darwin",
        arch: "arm64",
        target: "aarch64-apple-darwin",
    },
    Platform {
        os: "windows",
        arch: "amd64",
        target: "x86_64-pc-windows-msvc",
    },
];

/// The platform of this machine, if it is one of [`PLATFORMS`].
pub fn host_platform() -> Option<Platform> {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    PLATFORMS
        .iter()
        .copied()
        .find(|p| p.os == os && p.arch == arch)
}

/// `nodelabel_v0.1.0_linux_amd64.tar.gz`.
pub fn archive_name(plugin: &PluginInfo, version: &str, platform: &Platform) -> String {
    format!(
        "{}_{version}_{}_{}.tar.gz",
        plugin.name, platform.os, platform.arch
    )
}

/// Errors of packaging.
#[derive(Debug, thiserror::Error)]
pub enum PackagingError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PackagingError + '_ {
    move |source| PackagingError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Hex sha256 of a file.
pub fn sha256_file(path: &Path) -> Result<String, PackagingError> {
    let mut file = std::fs::File::open(path).map_err(io(path))?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Appends one regular file (mtime 0, so archives are reproducible).
fn append_file<W: std::io::Write>(
    tar: &mut tar::Builder<W>,
    data: &[u8],
    name: &str,
    mode: u32,
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(data.len() as u64);
    header.set_mode(mode);
    header.set_mtime(0);
    header.set_cksum();
    tar.append_data(&mut header, name, data)
}

/// Writes `<out>/<archive_name>` holding the binary (as `bin`, mode 0755), `LICENSE` and,
/// except on Windows, the kubectl completion helper (mode 0755), gzip level `level` (0-9);
/// returns its path and sha256.
pub fn build_archive(
    plugin: &PluginInfo,
    version: &str,
    platform: &Platform,
    binary: &Path,
    license: &Path,
    out: &Path,
    level: u32,
) -> Result<(PathBuf, String), PackagingError> {
    std::fs::create_dir_all(out).map_err(io(out))?;
    let path = out.join(archive_name(plugin, version, platform));
    let file = std::fs::File::create(&path).map_err(io(&path))?;
    let encoder = flate2::write::GzEncoder::new(file, flate2::Compression::new(level.min(9)));
    let mut tar = tar::Builder::new(encoder);
    tar.mode(tar::HeaderMode::Deterministic);
    let add = |tar: &mut tar::Builder<_>,
               src: &Path,
               name: &str,
               mode: u32|
     -> Result<(), PackagingError> {
        let data = std::fs::read(src).map_err(io(src))?;
        append_file(tar, &data, name, mode).map_err(io(src))
    };
    add(
        &mut tar,
        binary,
        &format!("{}{}", plugin.bin, platform.exe_suffix()),
        0o755,
    )?;
    add(&mut tar, license, "LICENSE", 0o644)?;
    if let Some(helper) = completion_helper(plugin, platform) {
        let script = placekit::complete::kubectl_helper_script(plugin.name, plugin.bin);
        append_file(&mut tar, script.as_bytes(), &helper, 0o755).map_err(io(&path))?;
    }
    let encoder = tar.into_inner().map_err(io(&path))?;
    encoder.finish().map_err(io(&path))?;
    let sha = sha256_file(&path)?;
    Ok((path, sha))
}

/// The kubectl completion helper's file name in `platform`'s archive (none on Windows, where
/// it would need to be an executable of its own).
pub fn completion_helper(plugin: &PluginInfo, platform: &Platform) -> Option<String> {
    (platform.os != "windows").then(|| placekit::complete::kubectl_helper_name(plugin.name))
}

/// The entries of a `.tar.gz` archive.
pub fn archive_entries(path: &Path) -> Result<Vec<String>, PackagingError> {
    let file = std::fs::File::open(path).map_err(io(path))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut names = Vec::new();
    for entry in archive.entries().map_err(io(path))? {
        let entry = entry.map_err(io(path))?;
        names.push(entry.path().map_err(io(path))?.display().to_string());
    }
    Ok(names)
}

/// The krew manifest of a plugin for `version`, with the sha256 of each platform's archive
/// (`shas` keyed by `os/arch`; a missing one is written as 64 zeros for the release
/// workflow to fill in).
pub fn render_manifest(
    plugin: &PluginInfo,
    version: &str,
    base_url: &str,
    shas: &BTreeMap<String, String>,
) -> String {
    let mut out = format!(
        "apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nmetadata:\n  name: {}\nspec:\n  version: {version}\n  homepage: https://github.com/placekit/placekit\n  shortDescription: {}\n  description: |\n",
        plugin.name, plugin.short_description
    );
    for line in plugin.description.lines() {
        out.push_str(&format!("    {line}\n"));
    }
    let completion = format!(
        "For `kubectl {name} <TAB>` (kubectl 1.26+, not on Windows), put the completion\nhelper on PATH next to the plugin:\n  kubectl {name} completion kubectl > \"${{KREW_ROOT:-$HOME/.krew}}/bin/{helper}\"\n  chmod +x \"${{KREW_ROOT:-$HOME/.krew}}/bin/{helper}\"\n",
        name = plugin.name,
        helper = placekit::complete::kubectl_helper_name(plugin.name),
    );
    out.push_str("  caveats: |\n");
    for line in plugin
        .caveats
        .unwrap_or_default()
        .lines()
        .chain(completion.lines())
    {
        out.push_str(&format!("    {line}\n"));
    }
    out.push_str("  platforms:\n");
    for p in PLATFORMS {
        let key = format!("{}/{}", p.os, p.arch);
        let sha = shas.get(&key).cloned().unwrap_or_else(|| "0".repeat(64));
        let helper = completion_helper(plugin, p)
            .map(|h| format!("    - from: {h}\n      to: .\n"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  - selector:\n      matchLabels:\n        os: {}\n        arch: {}\n    uri: {base_url}/{version}/{}\n    sha256: \"{sha}\"\n    bin: {}{}\n    files:\n    - from: {}{}\n      to: .\n    - from: LICENSE\n      to: .\n{helper}",
            p.os,
            p.arch,
            archive_name(plugin, version, p),
            plugin.bin,
            p.exe_suffix(),
            plugin.bin,
            p.exe_suffix(),
        ));
    }
    out
}

/// Parses a YAML document into JSON values (for tests of rendered manifests).
pub fn parse_yaml(text: &str) -> Result<serde_json::Value, String> {
    serde_yaml::from_str(text).map_err(|e| e.to_string())
}

/// Problems with a manifest under krew-index's rules (empty when valid).
pub fn validate_manifest(text: &str, file_name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let doc: serde_json::Value = match serde_yaml::from_str(text) {
        Ok(d) => d,
        Err(e) => return vec![format!("not YAML: {e}")],
    };
    if doc["apiVersion"] != "krew.googlecontainertools.github.com/v1alpha2" {
        problems.push("apiVersion must be krew.googlecontainertools.github.com/v1alpha2".into());
    }
    if doc["kind"] != "Plugin" {
        problems.push("kind must be Plugin".into());
    }
    let name = doc["metadata"]["name"].as_str().unwrap_or_default();
    if format!("{name}.yaml") != file_name {
        problems.push(format!(
            "metadata.name {name:?} must equal the file name {file_name:?} without .yaml"
        ));
    }
    let spec = &doc["spec"];
    let version = spec["version"].as_str().unwrap_or_default();
    if !version.starts_with('v') || version[1..].split('.').count() != 3 {
        problems.push(format!(
            "spec.version {version:?} must be a semantic version with a leading v"
        ));
    }
    let short = spec["shortDescription"].as_str().unwrap_or_default();
    if short.is_empty() || short.len() > 50 || short.contains('\n') {
        problems.push(format!(
            "shortDescription must be one line of at most 50 characters ({} given)",
            short.len()
        ));
    }
    let description = spec["description"].as_str().unwrap_or_default();
    if description.trim().is_empty() {
        problems.push("description is required".into());
    }
    if description.lines().any(|l| l.chars().count() > 80) {
        problems.push("description lines must be wrapped at 80 columns".into());
    }
    if description.contains("kubectl ") && description.contains("$ ") {
        problems.push("description must not contain usage examples".into());
    }
    if spec["homepage"]
        .as_str()
        .is_none_or(|h| !h.starts_with("https://"))
    {
        problems.push("homepage must be an https URL".into());
    }
    let platforms = spec["platforms"].as_array().cloned().unwrap_or_default();
    let mut seen = Vec::new();
    for (i, p) in platforms.iter().enumerate() {
        let labels = &p["selector"]["matchLabels"];
        let (os, arch) = (
            labels["os"].as_str().unwrap_or_default(),
            labels["arch"].as_str().unwrap_or_default(),
        );
        seen.push(format!("{os}/{arch}"));
        let uri = p["uri"].as_str().unwrap_or_default();
        if !uri.starts_with("https://") || !(uri.ends_with(".tar.gz") || uri.ends_with(".zip")) {
            problems.push(format!(
                "platforms[{i}].uri must be an https .tar.gz or .zip URL"
            ));
        }
        let sha = p["sha256"].as_str().unwrap_or_default();
        // krew reads YAML 1.1 (through sigs.k8s.io/yaml): an unquoted all-digit value,
        // such as the placeholder of zeros, is a number to it and fails its own check.
        let unquoted_digits = text.lines().any(|l| {
            l.trim_start()
                .strip_prefix("sha256:")
                .map(str::trim)
                .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
        });
        if unquoted_digits && i == 0 {
            problems.push(
                "a sha256 of digits only must be quoted: krew's YAML reads it as a number".into(),
            );
        }
        if sha.len() != 64
            || !sha
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        {
            problems.push(format!(
                "platforms[{i}].sha256 must be 64 lower-case hex digits"
            ));
        }
        let bin = p["bin"].as_str().unwrap_or_default();
        let expected_bin = format!(
            "kubectl-{}{}",
            name.replace('-', "_"),
            if os == "windows" { ".exe" } else { "" }
        );
        if bin != expected_bin {
            problems.push(format!(
                "platforms[{i}].bin {bin:?} must be {expected_bin:?}"
            ));
        }
        let files: Vec<&str> = p["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["from"].as_str())
            .collect();
        if !files.iter().any(|f| f.contains("LICENSE")) {
            problems.push(format!("platforms[{i}] must ship the LICENSE file"));
        }
    }
    for required in [
        "linux/amd64",
        "linux/arm64",
        "darwin/amd64",
        "darwin/arm64",
        "windows/amd64",
    ] {
        if !seen.iter().any(|s| s == required) {
            problems.push(format!("platform {required} is missing"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_manifests_are_valid_and_broken_ones_are_caught() {
        for plugin in PLUGINS {
            let text = render_manifest(
                plugin,
                "v0.1.0",
                "https://github.com/placekit/placekit/releases/download",
                &BTreeMap::new(),
            );
            assert_eq!(
                validate_manifest(&text, &format!("{}.yaml", plugin.name)),
                Vec::<String>::new(),
                "{text}"
            );
            assert!(!validate_manifest(&text, "other.yaml").is_empty());
            let broken = text.replace("bin: kubectl-", "bin: kubectl_");
            assert!(!validate_manifest(&broken, &format!("{}.yaml", plugin.name)).is_empty());
            let long = text.replace(plugin.short_description, &"x".repeat(51));
            assert!(
                validate_manifest(&long, &format!("{}.yaml", plugin.name))
                    .iter()
                    .any(|p| p.contains("shortDescription"))
            );
            // What krew's own validator rejected in the first committed manifests.
            let unquoted = text.replace(&format!("\"{}\"", "0".repeat(64)), &"0".repeat(64));
            assert!(
                validate_manifest(&unquoted, &format!("{}.yaml", plugin.name))
                    .iter()
                    .any(|p| p.contains("must be quoted")),
                "{unquoted}"
            );
            let no_windows = text.replace("os: windows", "os: plan9");
            assert!(
                validate_manifest(&no_windows, &format!("{}.yaml", plugin.name))
                    .iter()
                    .any(|p| p.contains("windows/amd64"))
            );
        }
    }
}
