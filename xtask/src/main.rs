//! `cargo xtask`: release archives, krew manifests, and a krew install of a local build.
//!
//! ```text
//! cargo xtask krew-local                     # build here, archive, render dist/krew/*.yaml
//! cargo xtask package archives --version v0.1.0 --target x86_64-unknown-linux-musl --out dist
//! cargo xtask package checksums --dist dist
//! cargo xtask package manifests --version v0.1.0 --dist dist --out dist/krew-manifests
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xtask::packaging::{
    PLATFORMS, PLUGINS, PackagingError, Platform, Platforms, RELEASES, build_archive,
    host_platform, render_template, sbom_name, template_path, validate_manifest, write_checksums,
};

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    about = "placekit's own tasks: release packaging and a local krew install"
)]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Release archives and manifests (the release workflow runs these).
    #[command(subcommand)]
    Package(Package),
    /// Build the plugins for this machine (cargo build --release), archive them and render
    /// krew manifests for those archives, ready for `kubectl krew install --manifest
    /// --archive`.
    KrewLocal {
        /// Where the archives and manifests go.
        #[arg(long, default_value = "dist/krew")]
        out: PathBuf,
        /// Take the binaries from here instead of building them.
        #[arg(long)]
        binary_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum Package {
    /// Archive the three plugin binaries built for one target (binary, LICENSE and, except on
    /// Windows, the kubectl completion helper), each with its CycloneDX SBOM beside it
    /// (`<archive>.cdx.json`: the crates compiled in, from cargo's resolve graph).
    Archives {
        #[arg(long)]
        version: String,
        /// Rust target triple (one of the five release platforms).
        #[arg(long)]
        target: String,
        /// Where the binaries are (default: target/<target>/release).
        #[arg(long)]
        binary_dir: Option<PathBuf>,
        #[arg(long, default_value = "dist")]
        out: PathBuf,
    },
    /// Write <dist>/SHA256SUMS over the archives and SBOMs in --dist (sha256sum's format).
    Checksums {
        #[arg(long, default_value = "dist")]
        dist: PathBuf,
    },
    /// Render krew-manifests/<plugin>.krew.yaml with the sha256 of each archive in --dist.
    Manifests {
        #[arg(long)]
        version: String,
        #[arg(long, default_value = "dist")]
        dist: PathBuf,
        #[arg(long, default_value = "dist/krew-manifests")]
        out: PathBuf,
        #[arg(long, default_value = RELEASES)]
        base_url: String,
        /// List only the platforms whose archive is in --dist (default: all five, and a
        /// missing archive is an error).
        #[arg(long)]
        only_present: bool,
    },
}

#[derive(Debug, thiserror::Error)]
enum TaskError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Packaging(#[from] PackagingError),
    #[error("{file}: {}", problems.join("; "))]
    Invalid { file: String, problems: Vec<String> },
    #[error("{command}: {status}")]
    Build {
        command: String,
        status: std::process::ExitStatus,
    },
    #[error(transparent)]
    Sbom(#[from] xtask::sbom::SbomError),
    #[error("{0}")]
    Tree(String),
    #[error("{command}: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

impl TaskError {
    fn exit_code(&self) -> u8 {
        match self {
            TaskError::Invalid { .. } | TaskError::Build { .. } => 1,
            _ => 2,
        }
    }
}

/// The repository: the archives take its LICENSE and the manifests its templates.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repository")
        .to_path_buf()
}

fn main() -> ExitCode {
    match run(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(task: Task) -> Result<(), TaskError> {
    match task {
        Task::Package(Package::Archives {
            version,
            target,
            binary_dir,
            out,
        }) => {
            let platform = PLATFORMS
                .iter()
                .find(|p| p.target == target)
                .ok_or_else(|| {
                    TaskError::Usage(format!(
                        "{target} is not a release target ({})",
                        PLATFORMS
                            .iter()
                            .map(|p| p.target)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
            let dir =
                binary_dir.unwrap_or_else(|| PathBuf::from("target").join(&target).join("release"));
            archives(&version, platform, &dir, &out)
        }
        Task::Package(Package::Manifests {
            version,
            dist,
            out,
            base_url,
            only_present,
        }) => {
            let platforms = if only_present {
                Platforms::Present
            } else {
                Platforms::All
            };
            manifests(&version, &dist, &out, &base_url, platforms).map(|_| ())
        }
        Task::Package(Package::Checksums { dist }) => {
            let path = write_checksums(&dist)?;
            println!("{}", path.display());
            Ok(())
        }
        Task::KrewLocal { out, binary_dir } => krew_local(&out, binary_dir),
    }
}

fn archives(version: &str, platform: &Platform, dir: &Path, out: &Path) -> Result<(), TaskError> {
    for plugin in PLUGINS {
        let binary = dir.join(format!("{}{}", plugin.bin, platform.exe_suffix()));
        let (path, sha) = build_archive(
            plugin,
            version,
            platform,
            &binary,
            &repo().join("LICENSE"),
            out,
            9,
        )?;
        println!("{sha}  {}", path.display());
        let archive = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tree = cargo_tree(plugin.package, platform.target)?;
        let bom = xtask::sbom::cyclonedx(&tree, platform.target, &archive)?;
        let bom_path = out.join(sbom_name(&archive));
        let text = serde_json::to_string_pretty(&bom).expect("an SBOM serialises");
        std::fs::write(&bom_path, text + "\n").map_err(|source| PackagingError::Io {
            path: bom_path.clone(),
            source,
        })?;
        println!("{}", bom_path.display());
    }
    Ok(())
}

/// `cargo tree` of `package` for `target` ([`xtask::sbom::TREE_ARGS`]): the crates the
/// build compiles into its binary.
fn cargo_tree(package: &str, target: &str) -> Result<String, TaskError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut args = vec!["tree", "-p", package, "--target", target];
    args.extend(xtask::sbom::TREE_ARGS);
    let command = format!("{cargo} {}", args.join(" "));
    let out = std::process::Command::new(&cargo)
        .args(&args)
        .current_dir(repo())
        .output()
        .map_err(|source| TaskError::Spawn {
            command: command.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(TaskError::Tree(format!(
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Renders and validates the three manifests into `out`; returns their paths.
fn manifests(
    version: &str,
    dist: &Path,
    out: &Path,
    base_url: &str,
    platforms: Platforms,
) -> Result<Vec<PathBuf>, TaskError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PackagingError::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let mut written = Vec::new();
    for plugin in PLUGINS {
        let template_file = repo().join(template_path(plugin));
        let template = std::fs::read_to_string(&template_file).map_err(io(&template_file))?;
        let file = format!("{}.yaml", plugin.name);
        let text = render_template(
            &template_path(plugin),
            &template,
            version,
            base_url,
            dist,
            platforms,
        )?;
        let problems = validate_manifest(&text, &file, platforms);
        if !problems.is_empty() {
            return Err(TaskError::Invalid { file, problems });
        }
        let path = out.join(&file);
        std::fs::write(&path, text).map_err(io(&path))?;
        println!("{}", path.display());
        written.push(path);
    }
    Ok(written)
}

fn krew_local(out: &Path, binary_dir: Option<PathBuf>) -> Result<(), TaskError> {
    let platform = host_platform().ok_or_else(|| {
        TaskError::Usage(format!(
            "this machine ({}/{}) is not one of the release platforms",
            std::env::consts::OS,
            std::env::consts::ARCH
        ))
    })?;
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    let binary_dir = match binary_dir {
        Some(dir) => dir,
        None => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = std::process::Command::new(&cargo);
            build
                .current_dir(repo())
                .args(["build", "--release", "--locked"]);
            for plugin in PLUGINS {
                build.args(["-p", plugin.package]);
            }
            let command = format!("{cargo} build --release --locked -p ...");
            eprintln!("building the plugins: {command}");
            let status = build.status().map_err(|source| TaskError::Spawn {
                command: command.clone(),
                source,
            })?;
            if !status.success() {
                return Err(TaskError::Build { command, status });
            }
            std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| repo().join("target"))
                .join("release")
        }
    };
    // A fresh directory: an archive of an earlier build must not slip into the manifests.
    if out.exists() {
        for plugin in PLUGINS {
            for p in PLATFORMS {
                let stale = out.join(xtask::packaging::archive_name(plugin, &version, p));
                let _ = std::fs::remove_file(stale);
            }
        }
    }
    archives(&version, &platform, &binary_dir, out)?;
    write_checksums(out)?;
    manifests(&version, out, out, RELEASES, Platforms::Present)?;
    println!(
        "\nInstall with krew (from {}):",
        std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default()
    );
    for plugin in PLUGINS {
        println!(
            "  kubectl krew install --manifest={dir}/{name}.yaml --archive={dir}/{name}_{version}_{os}_{arch}.tar.gz",
            dir = out.display(),
            name = plugin.name,
            os = platform.os,
            arch = platform.arch,
        );
    }
    Ok(())
}
