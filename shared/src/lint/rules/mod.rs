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

use super::rule::Rule;

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
];

/// Looks a rule up by id (case-insensitive).
pub fn find(id: &str) -> Option<&'static dyn Rule> {
    RULES
        .iter()
        .copied()
        .find(|r| r.meta().id.eq_ignore_ascii_case(id))
}
