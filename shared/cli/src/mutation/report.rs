//! What a mutating command did: the `ChangeReport` printed as text or `-o json|yaml`, with
//! one typed outcome per node, and the plan shown before confirmation.

use crate::output::PrintReport as _;

use crate::output::v1::change::{NodeReport, Outcome, Report, ReportedFinding, Standing};
use crate::ui::Ui;
use placekit_core::exit;
use placekit_core::plan::{NodePlan, quoted_or_absent as shown};
use placekit_core::text::Color;
use placekit_core::text::escaped;
use placekit_lint::checks::Finding;

/// How many node diffs to print before summarising the rest.
const DIFFS_SHOWN: usize = 10;

impl NodeReport {
    pub fn of(plan: &NodePlan, outcome: Outcome, message: Option<String>) -> Self {
        NodeReport {
            name: plan.node().to_string(),
            outcome,
            message,
            label_changes: plan.label_changes.iter().map(Into::into).collect(),
            taints_added: plan.taints_added().iter().map(Into::into).collect(),
            taints_removed: plan.taints_removed().iter().map(Into::into).collect(),
            annotation_changes: plan.annotation_changes.iter().map(Into::into).collect(),
            conflicts: Vec::new(),
        }
    }

    /// A node with no plan (a rollback's skipped node).
    pub fn without_plan(name: &str, outcome: Outcome, message: String) -> Self {
        NodeReport {
            name: name.to_string(),
            outcome,
            message: Some(message),
            label_changes: Vec::new(),
            taints_added: Vec::new(),
            taints_removed: Vec::new(),
            annotation_changes: Vec::new(),
            conflicts: Vec::new(),
        }
    }
}

impl ReportedFinding {
    pub fn new(standing: Standing, override_flag: Option<&str>, finding: Finding) -> Self {
        ReportedFinding {
            standing,
            override_flag: override_flag.map(str::to_string),
            finding: finding.into(),
        }
    }

    /// Each of `findings`, standing alike.
    pub fn all(
        standing: Standing,
        override_flag: Option<&str>,
        findings: Vec<Finding>,
    ) -> Vec<Self> {
        findings
            .into_iter()
            .map(|f| ReportedFinding::new(standing, override_flag, f))
            .collect()
    }
}

impl Report {
    /// 130 when interrupted; else 0 when every node is applied, unchanged or planned and
    /// nothing else went wrong; 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted.is_some() {
            return exit::INTERRUPTED;
        }
        let bad = !self.problems.is_empty()
            || self
                .nodes
                .iter()
                .any(|n| n.outcome.is_problem() || n.conflicts.iter().any(|c| !c.forced));
        if bad { exit::PROBLEMS } else { exit::SUCCESS }
    }

    pub fn count(&self, outcome: Outcome) -> usize {
        self.nodes.iter().filter(|n| n.outcome == outcome).count()
    }
}

/// The plans about to be written: up to ten diffs, then counts of the rest, of the nodes
/// already as requested and of those `left` as they are on purpose (a taint to release
/// that has another value).
pub fn render_plan(ui: &Ui, changing: &[NodePlan], unchanged: usize, left: usize) -> String {
    let mut out = String::new();
    for plan in changing.iter().take(DIFFS_SHOWN) {
        out.push_str(&ui.paint_diff(&plan.render_diff()));
    }
    if changing.len() > DIFFS_SHOWN {
        let more = changing.len() - DIFFS_SHOWN;
        out.push_str(&format!(
            "... and {more} more node{} (see -o json for every node's plan)\n",
            if more == 1 { "" } else { "s" }
        ));
    }
    if unchanged > 0 {
        out.push_str(&format!(
            "{unchanged} node{} already as requested\n",
            if unchanged == 1 { " is" } else { "s are" }
        ));
    }
    if left > 0 {
        out.push_str(&format!(
            "{} left as {} (see the problems below)\n",
            placekit_core::text::count(left, "node"),
            if left == 1 { "it is" } else { "they are" }
        ));
    }
    out
}

/// How many names a summarised list of nodes shows.
const NAMES_SHOWN: usize = 3;

/// Prints a report as text (or JSON/YAML) and returns the exit code.
pub fn print_report(ui: &Ui, report: &Report) -> u8 {
    if ui.output.is_structured() {
        ui.print_report(report);
        return report.exit_code();
    }
    // Hundreds of nodes an interruption left alone are one line, as kubectl shortens long
    // lists: how many, and the first few names.
    let not_attempted: Vec<&str> = report
        .nodes
        .iter()
        .filter(|n| n.outcome == Outcome::NotAttempted && n.conflicts.is_empty())
        .map(|n| n.name.as_str())
        .collect();
    let summarise_not_attempted = not_attempted.len() > NAMES_SHOWN;
    for n in &report.nodes {
        if summarise_not_attempted && n.outcome == Outcome::NotAttempted && n.conflicts.is_empty() {
            continue;
        }
        let outcome = match n.outcome {
            Outcome::Applied => ui.paint("applied", Color::Green),
            Outcome::Unchanged | Outcome::Planned => n.outcome.as_str().to_string(),
            other => ui.paint(other.as_str(), Color::Red),
        };
        if n.outcome == Outcome::Unchanged && report.nodes.len() > DIFFS_SHOWN {
            continue;
        }
        // Node names, messages (a server's or a hook's) and values are the cluster's.
        let name = escaped(&n.name);
        match &n.message {
            Some(m) => println!("node/{name} {outcome}: {}", escaped(m)),
            None => println!("node/{name} {outcome}"),
        }
        for c in &n.conflicts {
            println!(
                "  conflict: {} is {}, expected {}{}",
                escaped(&c.item),
                escaped(&shown(&c.found)),
                escaped(&shown(&c.expected)),
                if c.forced {
                    " (restored with --overwrite-changes)"
                } else {
                    " (left alone)"
                }
            );
        }
    }
    if summarise_not_attempted {
        let first: Vec<String> = not_attempted[..NAMES_SHOWN]
            .iter()
            .map(|n| format!("node/{}", escaped(n)))
            .collect();
        println!(
            "{} and {} more: {} (every node is in the snapshot: show --last -o json)",
            first.join(", "),
            not_attempted.len() - NAMES_SHOWN,
            ui.paint(Outcome::NotAttempted.as_str(), Color::Red)
        );
    }
    let summary: Vec<String> = Outcome::ORDER
        .iter()
        .filter_map(|&o| {
            let n = report.count(o);
            (n > 0).then(|| format!("{n} {}", o.as_str()))
        })
        .collect();
    if !summary.is_empty() {
        println!("{}", summary.join(", "));
    }
    for p in &report.problems {
        println!("{}", ui.paint(&escaped(p), Color::Red));
    }
    if let Some(signal) = &report.interrupted {
        println!(
            "{}",
            ui.paint(
                &format!("interrupted by {signal}: the nodes not attempted were left as they are"),
                Color::Red
            )
        );
    }
    if let Some(cmd) = &report.overwrite_command {
        println!("restore what was left alone with: {}", escaped(cmd));
    }
    if let Some(cmd) = &report.rollback_command {
        println!("undo with: {}", escaped(cmd));
    }
    report.exit_code()
}
