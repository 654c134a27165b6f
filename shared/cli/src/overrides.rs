//! The overrides of the mutating commands' policy checks, one flag per thing overridden,
//! resolved into settings before any work.

use crate::error::CommandError;

/// The one override of the policy checks that every mutating command has. Each override
/// does one thing; the retired `--force`, which did several at once, is refused with the
/// flags that replace it ([`DependentsOverride::resolve`]).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Overrides")]
pub struct DependentsOverride {
    /// Go on although workloads depend on the change: a label their required constraints
    /// need, the last node they can use, lost to a taint they do not tolerate, or a node
    /// where Kueue placed a Workload by topology-aware scheduling, given a NoExecute taint
    /// it does not tolerate (Kueue moves or requeues it). The blocking findings are shown
    /// as warnings.
    #[arg(long)]
    pub ignore_dependents: bool,
    /// Go on although the GPU operator would take GPUs from pods running on the node: a new
    /// `nvidia.com/mig.config` (the MIG manager repartitions the GPUs) or operands switched
    /// off (`nvidia.com/gpu.deploy.…`). Drain the node first instead when you can.
    #[arg(long)]
    pub ignore_gpu_pods: bool,
    /// Retired (it did several things at once): refused with the flags that replace it.
    #[arg(long, hide = true)]
    pub force: bool,
}

/// What `--force` did, and the flag that now does each part.
pub const FORCE_REPLACEMENTS: &[(&str, &str)] = &[
    (
        "--ignore-dependents",
        "go on although workloads depend on the change",
    ),
    (
        "--overwrite-changes",
        "rollback: also restore keys someone changed after the command",
    ),
    (
        "--other-cluster",
        "rollback: roll back a snapshot taken on another cluster",
    ),
];

/// The overrides of the policy checks every mutating command has, once resolved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PolicyOverrides {
    pub ignore_dependents: bool,
    pub ignore_gpu_pods: bool,
}

impl DependentsOverride {
    /// The overrides given; the retired `--force` is a usage error (exit 2) naming the flags
    /// that replace it.
    pub fn resolve(&self) -> Result<PolicyOverrides, CommandError> {
        if self.force {
            return Err(CommandError::Input(format!(
                "--force is no longer accepted: it did several things at once. Give the override you mean:\n{}",
                FORCE_REPLACEMENTS
                    .iter()
                    .map(|(flag, what)| format!("  {flag:<21} {what}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )));
        }
        Ok(PolicyOverrides {
            ignore_dependents: self.ignore_dependents,
            ignore_gpu_pods: self.ignore_gpu_pods,
        })
    }
}

/// The override of the taint-owner check, for `release` and `rollback`: a taint a
/// controller owns (the node lifecycle controller, cluster-autoscaler, Karpenter, a GKE GPU
/// pool, the Node Readiness Controller) is not removed without it.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Overrides")]
pub struct TaintOwnerOverride {
    /// Remove the taint although a controller owns it: it sets it again, or relies on it
    /// (a node about to be deleted, a condition not cleared).
    #[arg(long)]
    pub ignore_taint_owner: bool,
}

/// The override of the disruption-budget check, for the commands that can add a NoExecute
/// taint (`dedicate`, `rollback`).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Overrides")]
pub struct EvictionOverride {
    /// Go on although an added NoExecute taint evicts pods that a PodDisruptionBudget does
    /// not allow to go now (what `kubectl drain` would wait for).
    #[arg(long)]
    pub ignore_disruption_budgets: bool,
}

/// A rollback's overrides, one per thing overridden.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Overrides")]
pub struct RollbackOverrides {
    #[command(flatten)]
    pub dependents: DependentsOverride,
    #[command(flatten)]
    pub eviction: EvictionOverride,
    #[command(flatten)]
    pub taint_owner: TaintOwnerOverride,
    /// Also restore keys that someone changed after the command (left alone and listed
    /// otherwise).
    #[arg(long)]
    pub overwrite_changes: bool,
    /// Roll back a snapshot taken on another cluster than the current context's.
    #[arg(long)]
    pub other_cluster: bool,
}

/// [`RollbackOverrides`] once resolved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RollbackSettings {
    pub policy: PolicyOverrides,
    pub ignore_disruption_budgets: bool,
    pub ignore_taint_owner: bool,
    pub overwrite_changes: bool,
    pub other_cluster: bool,
}

impl RollbackOverrides {
    pub fn resolve(&self) -> Result<RollbackSettings, CommandError> {
        Ok(RollbackSettings {
            policy: self.dependents.resolve()?,
            ignore_disruption_budgets: self.eviction.ignore_disruption_budgets,
            ignore_taint_owner: self.taint_owner.ignore_taint_owner,
            overwrite_changes: self.overwrite_changes,
            other_cluster: self.other_cluster,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn force_is_refused_with_its_replacements() {
        let refused = DependentsOverride {
            force: true,
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert_eq!(refused.exit_code(), placekit_core::exit::USAGE);
        for (flag, _) in FORCE_REPLACEMENTS {
            assert!(refused.to_string().contains(flag), "{refused}");
        }
    }
}
