//! A CycloneDX 1.5 SBOM for each release archive: the crates compiled into the plugin's
//! binary for one target, read from `cargo tree -p PACKAGE --target TARGET -e normal
//! --prefix depth --format "{p}|{l}"` ([`TREE_ARGS`]). cargo tree applies the feature
//! resolver per package and target, as the build does; `cargo metadata`'s resolve graph
//! unifies features across the whole workspace (dev-dependencies included) and named crates
//! the binary does not contain. Normal dependencies only: build scripts and dev-dependencies
//! are not in the binary.
//!
//! Written here rather than with cargo-cyclonedx: the document is a projection of cargo's own
//! dependency tree (no new dependency), while that tool would add a multi-minute build to
//! every release job and to CI, which checks the SBOM of a local archive the way the README
//! tells a user to.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

/// The arguments of `cargo tree` after `-p PACKAGE --target TARGET`.
pub const TREE_ARGS: &[&str] = &[
    "--locked", "-e", "normal", "--prefix", "depth", "--format", "{p}|{l}",
];

/// A line of the tree that is not `DEPTH NAME vVERSION [(PATH)]|LICENSE [(*)]`.
#[derive(Debug, thiserror::Error)]
#[error("cargo tree line {line}: {text:?} is not DEPTH NAME vVERSION|LICENSE")]
pub struct SbomError {
    pub line: usize,
    pub text: String,
}

/// The package URL of a crate (`pkg:cargo/NAME@VERSION`), its `bom-ref` too.
pub fn purl(name: &str, version: &str) -> String {
    format!("pkg:cargo/{name}@{version}")
}

/// One crate of the tree.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Crate {
    name: String,
    version: String,
    license: Option<String>,
}

/// The SBOM of the binary in `archive`, built for `target`, from `cargo tree`'s output for
/// its package (the root, depth 0).
pub fn cyclonedx(tree: &str, target: &str, archive: &str) -> Result<Value, SbomError> {
    let mut root: Option<Crate> = None;
    let mut crates: BTreeSet<Crate> = BTreeSet::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // The purl of the last crate seen at each depth: a line's parent is the last one a
    // level up.
    let mut path: Vec<String> = Vec::new();
    for (i, text) in tree
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = || SbomError {
            line: i + 1,
            text: text.to_string(),
        };
        let digits = text.chars().take_while(char::is_ascii_digit).count();
        let depth: usize = text[..digits].parse().map_err(|_| bad())?;
        let rest = text[digits..].trim_end_matches(" (*)");
        let (package, license) = rest.split_once('|').ok_or_else(bad)?;
        let mut words = package.split_whitespace();
        let name = words.next().ok_or_else(bad)?.to_string();
        let version = words
            .next()
            .and_then(|v| v.strip_prefix('v'))
            .ok_or_else(bad)?
            .to_string();
        let license = Some(license.trim().to_string()).filter(|l| !l.is_empty());
        let id = purl(&name, &version);
        if depth > path.len() {
            return Err(bad());
        }
        path.truncate(depth);
        if let Some(parent) = path.last() {
            edges.entry(parent.clone()).or_default().insert(id.clone());
        }
        path.push(id.clone());
        edges.entry(id).or_default();
        let krate = Crate {
            name,
            version,
            license,
        };
        if depth == 0 {
            root = Some(krate);
        } else {
            crates.insert(krate);
        }
    }
    let root = root.ok_or(SbomError {
        line: 0,
        text: String::new(),
    })?;
    let component = |c: &Crate, kind: &str| {
        let mut v = json!({
            "type": kind,
            "bom-ref": purl(&c.name, &c.version),
            "name": c.name,
            "version": c.version,
            "purl": purl(&c.name, &c.version),
        });
        if let Some(license) = &c.license {
            v["licenses"] = json!([{"expression": license}]);
        }
        v
    };
    let root_purl = purl(&root.name, &root.version);
    let components: Vec<Value> = crates
        .iter()
        .filter(|c| purl(&c.name, &c.version) != root_purl)
        .map(|c| component(c, "library"))
        .collect();
    let dependencies: Vec<Value> = edges
        .iter()
        .map(|(r, on)| json!({"ref": r, "dependsOn": on}))
        .collect();
    Ok(json!({
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "version": 1,
        "metadata": {
            "component": component(&root, "application"),
            "properties": [
                {"name": "placekit:archive", "value": archive},
                {"name": "cdx:rustc:target", "value": target},
            ],
        },
        "components": components,
        "dependencies": dependencies,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree with a crate reached twice (cargo marks the repeat `(*)` and lists its
    /// dependencies once) and a workspace crate with a path.
    #[test]
    fn the_sbom_is_the_tree_with_its_edges() {
        let tree = "0app v1.0.0 (/src/app)|Apache-2.0\n\
                    1serde v1.0.1|MIT OR Apache-2.0\n\
                    2itoa v1.0.2|\n\
                    1lib v0.1.0 (/src/lib)|Apache-2.0\n\
                    2serde v1.0.1|MIT OR Apache-2.0 (*)\n";
        let bom = cyclonedx(tree, "x86_64-unknown-linux-musl", "a.tar.gz").unwrap();
        let purls: Vec<&str> = bom["components"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["purl"].as_str().unwrap())
            .collect();
        assert_eq!(
            purls,
            [
                "pkg:cargo/itoa@1.0.2",
                "pkg:cargo/lib@0.1.0",
                "pkg:cargo/serde@1.0.1"
            ]
        );
        assert_eq!(bom["metadata"]["component"]["purl"], "pkg:cargo/app@1.0.0");
        assert!(bom["components"][0].get("licenses").is_none());
        let on = |r: &str| {
            bom["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["ref"] == r)
                .unwrap()["dependsOn"]
                .clone()
        };
        assert_eq!(
            on("pkg:cargo/app@1.0.0"),
            json!(["pkg:cargo/lib@0.1.0", "pkg:cargo/serde@1.0.1"])
        );
        assert_eq!(on("pkg:cargo/lib@0.1.0"), json!(["pkg:cargo/serde@1.0.1"]));
        assert_eq!(on("pkg:cargo/serde@1.0.1"), json!(["pkg:cargo/itoa@1.0.2"]));
        let broken = cyclonedx("0app v1.0.0|MIT\n2deep v1.0.0|MIT\n", "t", "a").unwrap_err();
        assert_eq!(broken.line, 2);
    }
}
