//! The rule catalogue: one rule per file, each with its documentation beside the code.

pub mod al001;
pub mod al002;
pub mod al003;
pub mod al004;
pub mod al005;
pub mod al006;
pub mod al007;
pub mod al008;
pub mod al009;
pub mod al010;
pub mod al011;
pub mod al012;
pub mod al013;
pub mod al014;
pub mod al015;
pub mod al016;
pub mod al017;
pub mod al018;
pub mod al019;
pub mod al020;
pub mod al021;
pub mod al101;
pub mod al102;
pub mod al103;
pub mod al104;
pub mod al105;
pub mod cluster;
pub mod cluster_workload;

#[cfg(test)]
mod tests;

use super::rule::{ClusterCheck, Rule, RuleMeta};

/// Every offline rule, in id order.
pub static RULES: &[&dyn Rule] = &[
    &al001::Al001,
    &al002::Al002,
    &al003::Al003,
    &al004::Al004,
    &al005::Al005,
    &al006::Al006,
    &al007::Al007,
    &al008::Al008,
    &al009::Al009,
    &al010::Al010,
    &al011::Al011,
    &al012::Al012,
    &al013::Al013,
    &al014::Al014,
    &al015::Al015,
    &al016::Al016,
    &al017::Al017,
    &al018::Al018,
    &al019::Al019,
    &al020::Al020,
    &al021::Al021,
];

/// Looks a rule up by id (case-insensitive).
pub fn find(id: &str) -> Option<&'static dyn Rule> {
    RULES
        .iter()
        .copied()
        .find(|r| r.meta().id.eq_ignore_ascii_case(id))
}

/// The checks of the `--cluster` rules, judged against the live nodes; each rule is
/// documented in its own file like the offline rules.
pub static CLUSTER_CHECKS: &[&dyn ClusterCheck] = &[&cluster::LiveRules];

/// The `--cluster` rules' documentation.
pub fn cluster_metas() -> impl Iterator<Item = &'static RuleMeta> {
    CLUSTER_CHECKS
        .iter()
        .flat_map(|c| c.metas().iter().copied())
}

/// Every rule's documentation, offline rules first, in id order.
pub fn all_metas() -> impl Iterator<Item = &'static RuleMeta> {
    RULES.iter().map(|r| r.meta()).chain(cluster_metas())
}

/// Any rule's documentation by id (case-insensitive).
pub fn meta(id: &str) -> Option<&'static RuleMeta> {
    all_metas().find(|m| m.id.eq_ignore_ascii_case(id))
}

/// The catalogue as `affinity-lint rules` prints it.
pub fn catalogue_table() -> String {
    let rows: Vec<Vec<String>> = all_metas()
        .map(|m| {
            let live = cluster_metas().any(|c| c.id == m.id);
            vec![
                m.id.to_string(),
                m.severity.as_str().to_string(),
                m.name.to_string(),
                if live {
                    format!("{} (with --cluster)", m.summary)
                } else {
                    m.summary.to_string()
                },
            ]
        })
        .collect();
    placekit_core::text::table(&["ID", "SEVERITY", "NAME", "FINDS"], &rows)
}

/// One rule's page, as `affinity-lint rules ID` prints it.
pub fn page(id: &str) -> Option<String> {
    meta(id).map(|m| {
        let live = if cluster_metas().any(|c| c.id == m.id) {
            ", with --cluster"
        } else {
            ""
        };
        format!(
            "{} {} ({}{live})\n\n{}\n",
            m.id,
            m.name,
            m.severity.as_str(),
            m.doc
        )
    })
}
