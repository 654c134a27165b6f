//! Builds release archives and renders the krew manifests.
//!
//! ```text
//! cargo build --release --locked --target x86_64-unknown-linux-musl
//! placekit-package archives --version v0.1.0 --target x86_64-unknown-linux-musl --out dist
//! placekit-package manifests --version v0.1.0 --dist dist --out krew-manifests
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use placekit_testserver::packaging::{
    PLATFORMS, PLUGINS, archive_name, build_archive, render_manifest, sha256_file,
    validate_manifest,
};

const RELEASES: &str = "https://github.com/placekit/placekit/releases/download";

#[derive(Debug, Parser)]
#[command(about = "Release archives and krew manifests for the placekit plugins")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Archive the three plugin binaries built for one target (binary + LICENSE each).
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
    /// Render the krew manifests from the archives in --dist (sha256 of each archive).
    Manifests {
        #[arg(long)]
        version: String,
        #[arg(long, default_value = "dist")]
        dist: PathBuf,
        #[arg(long, default_value = "krew-manifests")]
        out: PathBuf,
        #[arg(long, default_value = RELEASES)]
        base_url: String,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Cmd::Archives {
            version,
            target,
            binary_dir,
            out,
        } => {
            let Some(platform) = PLATFORMS.iter().find(|p| p.target == target) else {
                eprintln!(
                    "error: {target} is not a release target ({})",
                    PLATFORMS
                        .iter()
                        .map(|p| p.target)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                return ExitCode::from(2);
            };
            let dir =
                binary_dir.unwrap_or_else(|| PathBuf::from("target").join(&target).join("release"));
            for plugin in PLUGINS {
                let binary = dir.join(format!("{}{}", plugin.bin, platform.exe_suffix()));
                match build_archive(
                    plugin,
                    &version,
                    platform,
                    &binary,
                    std::path::Path::new("LICENSE"),
                    &out,
                    9,
                ) {
                    Ok((path, sha)) => println!("{sha}  {}", path.display()),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Cmd::Manifests {
            version,
            dist,
            out,
            base_url,
        } => {
            if let Err(e) = std::fs::create_dir_all(&out) {
                eprintln!("error: {}: {e}", out.display());
                return ExitCode::from(2);
            }
            for plugin in PLUGINS {
                let mut shas = BTreeMap::new();
                for p in PLATFORMS {
                    let archive = dist.join(archive_name(plugin, &version, p));
                    if archive.exists() {
                        match sha256_file(&archive) {
                            Ok(sha) => {
                                shas.insert(format!("{}/{}", p.os, p.arch), sha);
                            }
                            Err(e) => {
                                eprintln!("error: {e}");
                                return ExitCode::from(2);
                            }
                        }
                    } else {
                        eprintln!(
                            "warning: {} not found: its sha256 is left as zeros",
                            archive.display()
                        );
                    }
                }
                let text = render_manifest(plugin, &version, &base_url, &shas);
                let file = format!("{}.yaml", plugin.name);
                let problems = validate_manifest(&text, &file);
                if !problems.is_empty() {
                    eprintln!("error: {file}: {}", problems.join("; "));
                    return ExitCode::from(1);
                }
                let path = out.join(&file);
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("error: {}: {e}", path.display());
                    return ExitCode::from(2);
                }
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
    }
}
