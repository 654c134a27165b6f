//! One mechanism for what a test needs from outside the repository: a real cluster, a
//! second one, kubectl, krew, promtool, util-linux `script`, the built plugins, the
//! operators' CRDs in `../shared/crds`, the SARIF schema, zsh and fish. A suite that cannot run for want of one says so by
//! name on the process's stderr (`SKIPPED: <suite>: <why>`, shown by the README's test
//! command even when every test passes), and fails instead when [`REQUIRE`] names that
//! need: CI lists what its machine provides, so nothing there passes by doing nothing.

use std::path::PathBuf;
use std::process::Command;

/// The variable that lists the needs that must be met: comma-separated names of [`Need`]
/// (`kubectl,krew,script`), or `all`.
pub const REQUIRE: &str = "PLACEKIT_REQUIRE";

/// Something a test needs from outside the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A real, disposable cluster (`PLACEKIT_E2E_KUBECONFIG`; its read-only viewer,
    /// `PLACEKIT_E2E_VIEWER_KUBECONFIG`, where a suite compares both).
    RealCluster,
    /// A second real cluster (`PLACEKIT_E2E_SECOND_KUBECONFIG`) for the many-clusters tests.
    SecondCluster,
    /// `kubectl` on `PATH`.
    Kubectl,
    /// krew, built from `tests/krew/go.mod` (Go and the module proxy).
    Krew,
    /// Prometheus' promtool, built from `tests/metrics/go.mod` (Go and the module proxy).
    Promtool,
    /// util-linux `script`, which gives a command a terminal.
    Script,
    /// The plugin binaries, built by `cargo build --workspace`.
    Plugins,
    /// The operators' CRDs in `../shared/crds`.
    SharedCrds,
    /// The SARIF 2.1.0 schema, fetched by `.ci/run`.
    SarifSchema,
    /// zsh and fish, for the completion scripts (bash is always there).
    Shells,
    /// A real cluster with the controllers of a GPU cluster running against it
    /// (`tests/control-plane/cp up --with kwok,nfd,kueue,karpenter`): its admin kubeconfig in
    /// `PLACEKIT_E2E_CONTROLLERS_KUBECONFIG`, nfd-worker's features directory in
    /// `PLACEKIT_E2E_NFD_FEATURES_DIR`.
    Controllers,
}

impl Need {
    /// Every need, in the order `PLACEKIT_REQUIRE=all` lists them.
    pub const ALL: [Need; 11] = [
        Need::RealCluster,
        Need::SecondCluster,
        Need::Kubectl,
        Need::Krew,
        Need::Promtool,
        Need::Script,
        Need::Plugins,
        Need::SharedCrds,
        Need::SarifSchema,
        Need::Shells,
        Need::Controllers,
    ];

    /// Its name in [`REQUIRE`].
    pub fn name(self) -> &'static str {
        match self {
            Need::RealCluster => "real-cluster",
            Need::SecondCluster => "second-cluster",
            Need::Kubectl => "kubectl",
            Need::Krew => "krew",
            Need::Promtool => "promtool",
            Need::Script => "script",
            Need::Plugins => "plugins",
            Need::SharedCrds => "shared-crds",
            Need::SarifSchema => "sarif-schema",
            Need::Shells => "shells",
            Need::Controllers => "controllers",
        }
    }

    /// How to provide it.
    pub fn how(self) -> &'static str {
        match self {
            Need::RealCluster => {
                "set PLACEKIT_E2E_KUBECONFIG (tests/control-plane/cp up --kubeconfig-out FILE writes one)"
            }
            Need::SecondCluster => {
                "set PLACEKIT_E2E_SECOND_KUBECONFIG (a second control plane: PLACEKIT_CP_DIR=DIR tests/control-plane/cp up)"
            }
            Need::Kubectl => "install kubectl on PATH",
            Need::Krew => "install Go (krew is built from tests/krew/go.mod)",
            Need::Promtool => "install Go (promtool is built from tests/metrics/go.mod)",
            Need::Script => "install util-linux (script)",
            Need::Plugins => "cargo build --workspace",
            Need::SharedCrds => "lay the project's shared/ folder beside the repository",
            Need::SarifSchema => {
                "run .ci/run once (it fetches target/sarif-schema/sarif-2.1.0.json)"
            }
            Need::Shells => "install zsh and fish (apt-get install zsh fish)",
            Need::Controllers => {
                "start a control plane with controllers (tests/control-plane/cp up --with kwok,nfd,kueue,karpenter ...; docs/testing.md) and set PLACEKIT_E2E_CONTROLLERS_KUBECONFIG and PLACEKIT_E2E_NFD_FEATURES_DIR"
            }
        }
    }
}

/// The needs `value` (of [`REQUIRE`]) names; an unknown name is an error, so that a typo
/// cannot turn a requirement off.
pub fn parse(value: &str) -> Result<Vec<Need>, String> {
    let mut needs = Vec::new();
    for word in value.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if word == "all" {
            needs.extend(Need::ALL);
            continue;
        }
        match Need::ALL.iter().find(|n| n.name() == word) {
            Some(n) => needs.push(*n),
            None => {
                return Err(format!(
                    "{REQUIRE} names {word:?}, which is not a need: all, {}",
                    Need::ALL.map(Need::name).join(", ")
                ));
            }
        }
    }
    Ok(needs)
}

/// Whether [`REQUIRE`] says `need` must be met here. Panics on an unknown name.
pub fn required(need: Need) -> bool {
    let value = std::env::var(REQUIRE).unwrap_or_default();
    parse(&value)
        .unwrap_or_else(|e| panic!("{e}"))
        .contains(&need)
}

/// `suite` cannot run because `need` is not met (`why` says what is missing): a failure
/// naming both when [`REQUIRE`] requires it, else a `SKIPPED:` line on the process's
/// stderr.
pub fn skip(suite: &str, need: Need, why: &str) {
    if required(need) {
        panic!(
            "{suite} cannot run: {why}, and {REQUIRE} requires {} ({})",
            need.name(),
            need.how()
        );
    }
    report(&format!(
        "SKIPPED: {suite}: {why} ({}: {})\n",
        need.name(),
        need.how()
    ));
}

/// Whether `program` runs (`program args...` exits 0); if not, `suite` is skipped for
/// `need` (or fails, when required).
pub fn tool(suite: &str, need: Need, program: &str, args: &[&str]) -> bool {
    use crate::process::Bounded as _;
    let runs = Command::new(program)
        .args(args)
        .bounded_output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        skip(suite, need, &format!("{program} is not installed"));
    }
    runs
}

/// Whether kubectl is on `PATH`; if not, `suite` is skipped (or fails, when required).
pub fn kubectl(suite: &str) -> bool {
    tool(suite, Need::Kubectl, "kubectl", &["version", "--client"])
}

/// Prometheus' promtool, built from `tests/metrics/go.mod` when missing (cached under
/// `target/metrics/`), or `None` when `suite` is skipped for want of Go.
pub fn promtool(suite: &str) -> Option<PathBuf> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("metrics/promtool");
    let built = Command::new(&script).arg("--path").output();
    match built {
        Ok(out) if out.status.success() => Some(PathBuf::from(
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        )),
        Ok(out) => {
            skip(
                suite,
                Need::Promtool,
                &format!(
                    "tests/metrics/promtool could not build it: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            );
            None
        }
        Err(e) => {
            skip(
                suite,
                Need::Promtool,
                &format!("tests/metrics/promtool: {e}"),
            );
            None
        }
    }
}

/// The cluster with controllers (`cp up --with kwok,nfd`): its admin kubeconfig and
/// nfd-worker's features directory, or `None` when `suite` is skipped for want of them.
pub fn controllers(suite: &str) -> Option<(PathBuf, PathBuf)> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    match (
        var("PLACEKIT_E2E_CONTROLLERS_KUBECONFIG"),
        var("PLACEKIT_E2E_NFD_FEATURES_DIR"),
    ) {
        (Some(kubeconfig), Some(features)) => Some((kubeconfig.into(), features.into())),
        _ => {
            skip(
                suite,
                Need::Controllers,
                "PLACEKIT_E2E_CONTROLLERS_KUBECONFIG or PLACEKIT_E2E_NFD_FEATURES_DIR is not set",
            );
            None
        }
    }
}

/// The directory of the operators' CRDs (`../shared/crds` beside the repository), or `None`
/// when `suite` is skipped for want of it.
pub fn shared_crds(suite: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/crds");
    if dir.join("README.md").is_file() {
        Some(dir)
    } else {
        skip(
            suite,
            Need::SharedCrds,
            &format!("{} does not exist", dir.display()),
        );
        None
    }
}

/// Writes `line` to the process's stderr itself (a duplicate of fd 2, sharing its offset
/// when it is a file), past the test harness's capture of the test's output.
fn report(line: &str) {
    #[cfg(unix)]
    let direct = {
        use std::io::Write as _;
        use std::os::fd::AsFd as _;
        std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .and_then(|fd| std::fs::File::from(fd).write_all(line.as_bytes()))
    };
    #[cfg(not(unix))]
    let direct: std::io::Result<()> = Err(std::io::Error::other("no fd"));
    if direct.is_err() {
        eprint!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_require_list_names_needs_or_all() {
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(
            parse("kubectl, script").unwrap(),
            vec![Need::Kubectl, Need::Script]
        );
        assert_eq!(parse("all").unwrap(), Need::ALL.to_vec());
        let typo = parse("kubect1").unwrap_err();
        assert!(
            typo.contains("\"kubect1\"") && typo.contains("real-cluster"),
            "{typo}"
        );
    }
}
