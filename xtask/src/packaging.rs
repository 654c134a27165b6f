//! Release packaging: archives per plugin and platform (the binary, the license and, except
//! on Windows, the `kubectl_complete-<plugin>` helper that kubectl runs to complete), krew
//! `Plugin` manifests rendered from the committed krew-release-bot templates
//! (`krew-manifests/<plugin>.krew.yaml`) with version, uri and sha256, and a validator for
//! krew-index's rules. Used by `cargo xtask`, the release workflow and the tests.

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
    /// The cargo package that builds it.
    pub package: &'static str,
}

/// The three plugins.
pub const PLUGINS: &[PluginInfo] = &[
    PluginInfo {
        name: "nodelabel",
        bin: "kubectl-nodelabel",
        package: "kubectl-nodelabel",
    },
    PluginInfo {
        name: "gpu-taint",
        bin: "kubectl-gpu_taint",
        package: "kubectl-gpu-taint",
    },
    PluginInfo {
        name: "affinity-lint",
        bin: "kubectl-affinity_lint",
        package: "kubectl-affinity-lint",
    },
];

/// Where the release archives are published; templates name archives under it.
pub const RELEASES: &str = "https://github.com/placekit/placekit/releases/download";

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
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{}: not found; a manifest never carries a placeholder checksum (build the archive, or render only the archives present with --only-present)",
        .0.display()
    )]
    ArchiveMissing(PathBuf),
    #[error("no archive of {plugin} {version} in {}", dist.display())]
    NoArchives {
        plugin: String,
        version: String,
        dist: PathBuf,
    },
    #[error("{template}: line {line}: {message}")]
    Template {
        template: String,
        line: usize,
        message: String,
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

/// The SBOM file published beside an archive: `<archive>.cdx.json`.
pub fn sbom_name(archive: &str) -> String {
    format!("{archive}.cdx.json")
}

/// Writes `<dist>/SHA256SUMS` over the archives and their SBOMs in `dist`, in `sha256sum`'s
/// format and name order, so that `sha256sum --ignore-missing -c SHA256SUMS` checks whatever a
/// user downloaded of them.
pub fn write_checksums(dist: &Path) -> Result<PathBuf, PackagingError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PackagingError::Io { path, source }
    };
    let mut names: Vec<String> = std::fs::read_dir(dist)
        .map_err(io(dist))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tar.gz") || n.ends_with(".cdx.json"))
        .collect();
    names.sort();
    let mut text = String::new();
    for name in &names {
        text.push_str(&format!("{}  {name}\n", sha256_file(&dist.join(name))?));
    }
    let path = dist.join("SHA256SUMS");
    std::fs::write(&path, text).map_err(io(&path))?;
    Ok(path)
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
        let script = placekit_cli::complete::kubectl_helper_script(plugin.name, plugin.bin);
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
    (platform.os != "windows").then(|| placekit_cli::complete::kubectl_helper_name(plugin.name))
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

/// Which platforms a rendered manifest lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platforms {
    /// Every platform of the template; a missing archive is an error (a release).
    All,
    /// Those whose archive is in the directory (a local build for this machine).
    Present,
}

/// The committed template of `plugin`, relative to the repository.
pub fn template_path(plugin: &PluginInfo) -> String {
    format!("krew-manifests/{}.krew.yaml", plugin.name)
}

/// Renders a krew-release-bot template as the bot does (`{{ .TagName }}` is `version`;
/// `{{ addURIAndSha "URL" .TagName }}` becomes `uri:` and `sha256:` lines), taking each
/// sha256 from the archive named by the URL's last segment in `dist`, and with URLs under
/// `base_url` instead of [`RELEASES`]. Leading comment lines are dropped.
pub fn render_template(
    template_name: &str,
    template: &str,
    version: &str,
    base_url: &str,
    dist: &Path,
    platforms: Platforms,
) -> Result<String, PackagingError> {
    const TAG: &str = "{{ .TagName }}";
    let error = |line: usize, message: &str| PackagingError::Template {
        template: template_name.to_string(),
        line: line + 1,
        message: message.to_string(),
    };
    let mut head = String::new();
    // Each platform's lines, and whether its archive is there.
    let mut blocks: Vec<(String, bool)> = Vec::new();
    let mut in_platforms = false;
    for (n, line) in template.lines().enumerate() {
        if head.is_empty() && line.starts_with('#') {
            continue;
        }
        if line == "  platforms:" {
            in_platforms = true;
        } else if in_platforms && line.starts_with("  - ") {
            blocks.push((String::new(), true));
        }
        let Some((block, present)) = blocks.last_mut() else {
            if line.contains("addURIAndSha") {
                return Err(error(n, "addURIAndSha outside spec.platforms"));
            }
            head.push_str(&line.replace(TAG, version));
            head.push('\n');
            continue;
        };
        if !line.trim_start().starts_with("{{ addURIAndSha ") {
            block.push_str(&line.replace(TAG, version));
            block.push('\n');
            continue;
        }
        let url = line
            .trim()
            .strip_prefix("{{ addURIAndSha \"")
            .and_then(|rest| rest.split_once("\" .TagName }}"))
            .map(|(url, _)| url.replace(TAG, version))
            .ok_or_else(|| error(n, "expected {{ addURIAndSha \"URL\" .TagName }}"))?;
        let Some(path) = url.strip_prefix(RELEASES) else {
            return Err(error(n, &format!("the URL must start with {RELEASES}")));
        };
        let url = format!("{}{path}", base_url.trim_end_matches('/'));
        let archive = dist.join(url.rsplit('/').next().unwrap_or_default());
        if !archive.exists() {
            if platforms == Platforms::All {
                return Err(PackagingError::ArchiveMissing(archive));
            }
            *present = false;
            continue;
        }
        let sha = sha256_file(&archive)?;
        let indent = &line[..line.len() - line.trim_start().len()];
        // Quoted: krew reads YAML 1.1, where a sha256 of digits only is a number.
        block.push_str(&format!("{indent}uri: {url}\n{indent}sha256: \"{sha}\"\n"));
    }
    let blocks: Vec<String> = blocks
        .into_iter()
        .filter_map(|(block, present)| present.then_some(block))
        .collect();
    if blocks.is_empty() {
        return Err(PackagingError::NoArchives {
            plugin: template_name.to_string(),
            version: version.to_string(),
            dist: dist.to_path_buf(),
        });
    }
    Ok(head + &blocks.concat())
}

/// Problems with a manifest under krew-index's rules (empty when valid); with
/// [`Platforms::Present`], a manifest for some platforms only (a local build) is valid.
pub fn validate_manifest(text: &str, file_name: &str, expected: Platforms) -> Vec<String> {
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
    let caveats = spec["caveats"].as_str().unwrap_or_default();
    if !caveats.contains("list") {
        problems.push("caveats must state the RBAC the plugin needs".into());
    }
    // krew prints each caveat line behind " | ": 77 characters fill an 80-column terminal.
    if caveats.lines().any(|l| l.chars().count() > 77) {
        problems.push(
            "caveat lines must be wrapped at 77 columns (krew prints them behind \" | \")".into(),
        );
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
    let required: &[&str] = match expected {
        Platforms::All => &[
            "linux/amd64",
            "linux/arm64",
            "darwin/amd64",
            "darwin/arm64",
            "windows/amd64",
        ],
        Platforms::Present => &[],
    };
    if platforms_array_empty(&doc) {
        problems.push("spec.platforms must list at least one platform".into());
    }
    for required in required {
        if !seen.iter().any(|s| s == required) {
            problems.push(format!("platform {required} is missing"));
        }
    }
    problems
}

fn platforms_array_empty(doc: &serde_json::Value) -> bool {
    doc["spec"]["platforms"]
        .as_array()
        .is_none_or(|p| p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(plugin: &PluginInfo) -> String {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        std::fs::read_to_string(repo.join(template_path(plugin))).unwrap()
    }

    /// Fake archives for `platforms` of every plugin in a fresh directory.
    fn dist(platforms: &[Platform]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for plugin in PLUGINS {
            for p in platforms {
                std::fs::write(
                    dir.path().join(archive_name(plugin, "v1.2.3", p)),
                    format!("{} {}", plugin.name, p.target),
                )
                .unwrap();
            }
        }
        dir
    }

    #[test]
    fn templates_render_to_valid_manifests_and_broken_ones_are_caught() {
        let all = dist(PLATFORMS);
        for plugin in PLUGINS {
            let file = format!("{}.yaml", plugin.name);
            let text = render_template(
                &file,
                &template(plugin),
                "v1.2.3",
                RELEASES,
                all.path(),
                Platforms::All,
            )
            .unwrap();
            assert_eq!(
                validate_manifest(&text, &file, Platforms::All),
                Vec::<String>::new(),
                "{text}"
            );
            assert!(!text.starts_with('#'), "the template's comment is dropped");
            assert!(!text.contains("{{"), "{text}");
            let linux = archive_name(plugin, "v1.2.3", &PLATFORMS[0]);
            assert!(text.contains(&format!(
                "    uri: {RELEASES}/v1.2.3/{linux}\n    sha256: \"{}\"\n",
                sha256_file(&all.path().join(&linux)).unwrap()
            )));
            assert!(!validate_manifest(&text, "other.yaml", Platforms::All).is_empty());
            let broken = text.replace("bin: kubectl-", "bin: kubectl_");
            assert!(!validate_manifest(&broken, &file, Platforms::All).is_empty());
            let short = text
                .lines()
                .find_map(|l| l.strip_prefix("  shortDescription: "))
                .unwrap();
            let long = text.replace(short, &"x".repeat(51));
            assert!(
                validate_manifest(&long, &file, Platforms::All)
                    .iter()
                    .any(|p| p.contains("shortDescription"))
            );
            let no_windows = text.replace("os: windows", "os: plan9");
            assert!(
                validate_manifest(&no_windows, &file, Platforms::All)
                    .iter()
                    .any(|p| p.contains("windows/amd64"))
            );
            // What krew's own validator rejected in the first manifests.
            let sha = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("sha256: "))
                .unwrap();
            let digits = text.replace(sha, &"1".repeat(64));
            assert!(
                validate_manifest(&digits, &file, Platforms::All)
                    .iter()
                    .any(|p| p.contains("must be quoted")),
                "{digits}"
            );
        }
    }

    #[test]
    fn a_release_needs_every_archive_and_a_local_build_lists_what_it_has() {
        let linux = dist(&PLATFORMS[..1]);
        let plugin = &PLUGINS[1];
        let file = format!("{}.yaml", plugin.name);
        let error = render_template(
            &file,
            &template(plugin),
            "v1.2.3",
            RELEASES,
            linux.path(),
            Platforms::All,
        )
        .unwrap_err();
        assert!(
            matches!(&error, PackagingError::ArchiveMissing(p) if p.ends_with("gpu-taint_v1.2.3_linux_arm64.tar.gz")),
            "{error}"
        );
        let text = render_template(
            &file,
            &template(plugin),
            "v1.2.3",
            "https://127.0.0.1:8443/",
            linux.path(),
            Platforms::Present,
        )
        .unwrap();
        assert_eq!(text.matches("  - selector:").count(), 1, "{text}");
        assert!(
            text.contains("uri: https://127.0.0.1:8443/v1.2.3/gpu-taint_v1.2.3_linux_amd64.tar.gz")
        );
        assert!(text.contains("- from: kubectl_complete-gpu_taint"));
        assert_eq!(
            validate_manifest(&text, &file, Platforms::Present),
            Vec::<String>::new()
        );
        assert!(!validate_manifest(&text, &file, Platforms::All).is_empty());
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            render_template(
                &file,
                &template(plugin),
                "v1.2.3",
                RELEASES,
                empty.path(),
                Platforms::Present
            ),
            Err(PackagingError::NoArchives { .. })
        ));
    }
}
