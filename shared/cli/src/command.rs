//! What the application checks of a plugin's command before it runs, read from one row per
//! command ([`CommandRow`]) instead of a match per question: whether it may read several
//! contexts, the shape of its text output (`-o` is checked against it), whether it reads
//! every namespace whatever `-n` says (so a `-n` is said to be ignored, and why).

use crate::error::CommandError;
use crate::fleet::FleetArgs;
use crate::ui::{TextShape, Ui};

/// One command of a plugin, as the checks before it runs see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandRow {
    /// The subcommand's name (`dedicate`, `status`).
    pub name: &'static str,
    /// What its text output looks like, which decides the `-o` formats it takes.
    pub shape: TextShape,
    /// It takes `--contexts`/`--all-contexts` (the others refuse them before any work).
    pub many_contexts: bool,
    /// It prints `-o openmetrics` too.
    pub metrics: bool,
    /// Why a `-n` does not narrow what it reads (nodes are cluster-scoped; an exporter
    /// counts every namespace's pods), when it does not: the `-n` is said to be ignored.
    pub ignores_namespace: Option<&'static str>,
}

impl CommandRow {
    /// A command of one cluster, not on nodes, without metrics.
    pub const fn new(name: &'static str, shape: TextShape) -> Self {
        CommandRow {
            name,
            shape,
            many_contexts: false,
            metrics: false,
            ignores_namespace: None,
        }
    }

    pub const fn many_contexts(self) -> Self {
        CommandRow {
            many_contexts: true,
            ..self
        }
    }

    pub const fn metrics(self) -> Self {
        CommandRow {
            metrics: true,
            ..self
        }
    }

    /// It acts on nodes, which are cluster-scoped, and its checks read the workloads of
    /// every namespace.
    pub const fn on_nodes(self) -> Self {
        self.ignores_namespace(
            "nodes are cluster-scoped, and the checks read the workloads of every namespace",
        )
    }

    /// It reads every namespace whatever `-n` says, for the reason given.
    pub const fn ignores_namespace(self, because: &'static str) -> Self {
        CommandRow {
            ignores_namespace: Some(because),
            ..self
        }
    }

    /// The checks every command of `plugin` passes before any work: the fleet flags refused
    /// where the command reads one cluster (naming `readers`, the commands that read
    /// several), `-o` against its output's shape, and a `-n` it ignores said.
    pub fn admit(
        &self,
        plugin: &str,
        readers: &str,
        ui: &Ui,
        fleet: &FleetArgs,
        namespace: Option<&str>,
    ) -> Result<(), CommandError> {
        let what = format!("{plugin} {}", self.name);
        if !self.many_contexts {
            fleet.refuse(&format!("kubectl {what}"), readers)?;
        }
        if self.metrics {
            ui.check_metrics_shape(&what, self.shape)?;
        } else {
            ui.check_shape(&what, self.shape)?;
        }
        if let Some(because) = self.ignores_namespace {
            ui.warn_namespace_ignored(namespace, &what, because);
        }
        Ok(())
    }
}
