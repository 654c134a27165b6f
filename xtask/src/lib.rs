//! `cargo xtask`: release packaging for placekit, apart from the plugins and the test server.
//! [`packaging`] builds the archives and renders the krew manifests from the committed
//! krew-release-bot templates; the `xtask` binary drives it for the release workflow
//! (`package archives`, `package manifests`) and for a krew install of a local build
//! (`krew-local`). [`sbom`] writes the CycloneDX SBOM of each archive.

pub mod packaging;
pub mod sbom;
