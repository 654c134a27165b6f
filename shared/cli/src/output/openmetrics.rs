//! `-o openmetrics`: what a report says as metric families in the OpenMetrics text format,
//! for node-exporter's textfile collector, a push to a Pushgateway, or a scrape.
//!
//! Every family is a gauge (a command reads the cluster once; nothing it says is a count of
//! events since a start, so nothing is a counter), named `placekit_…` in base units, with
//! bounded labels: nodes, resources, classes, pools, namespaces and workloads, never pods.
//! The text is also the Prometheus 0.0.4 format (no `info` or `stateset` type, no
//! exemplars), so `promtool check metrics` reads it as Prometheus' own parsers do.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One metric family: its name, help, and samples by label set.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    name: &'static str,
    help: &'static str,
    /// `# UNIT`, when the name ends in it (`seconds`).
    unit: Option<&'static str>,
    /// Label sets, each as ordered pairs, and their values; a label set given twice adds.
    samples: BTreeMap<Vec<(&'static str, String)>, f64>,
}

impl Family {
    /// A gauge; `name` must be `placekit_` and snake case (checked in debug builds).
    pub fn gauge(name: &'static str, help: &'static str) -> Self {
        debug_assert!(
            name.starts_with("placekit_")
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{name}"
        );
        Family {
            name,
            help,
            unit: None,
            samples: BTreeMap::new(),
        }
    }

    /// With `# UNIT unit` (the name must end in `_unit`).
    pub fn unit(mut self, unit: &'static str) -> Self {
        debug_assert!(self.name.ends_with(&format!("_{unit}")), "{}", self.name);
        self.unit = Some(unit);
        self
    }

    /// Sets the sample of `labels` (empty values are written too: a label's absence and
    /// its empty value are the same series to Prometheus).
    pub fn set(&mut self, labels: &[(&'static str, &str)], value: f64) {
        self.samples.insert(key(labels), value);
    }

    /// Adds `value` to the sample of `labels` (counting pods per workload and reason).
    pub fn add(&mut self, labels: &[(&'static str, &str)], value: f64) {
        *self.samples.entry(key(labels)).or_insert(0.0) += value;
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "# TYPE {} gauge", self.name);
        if let Some(unit) = self.unit {
            let _ = writeln!(out, "# UNIT {} {unit}", self.name);
        }
        let _ = writeln!(out, "# HELP {} {}", self.name, escape_help(self.help));
        for (labels, value) in &self.samples {
            out.push_str(self.name);
            if !labels.is_empty() {
                out.push('{');
                for (i, (name, value)) in labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{name}=\"{}\"", escape_label(value));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", number(*value));
        }
    }
}

fn key(labels: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    labels.iter().map(|(k, v)| (*k, (*v).to_string())).collect()
}

/// The families of one report, rendered in order and ended with `# EOF`. A family without
/// samples is left out (its `# TYPE` alone says nothing).
pub fn render(families: &[Family]) -> String {
    let mut out = String::new();
    for family in families.iter().filter(|f| !f.is_empty()) {
        family.render(&mut out);
    }
    out.push_str("# EOF\n");
    out
}

/// A label value as OpenMetrics writes it: `\`, `"` and a line feed escaped. Strings from
/// the cluster reach the scraper only this way.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A value as Prometheus writes one: an integer without a fraction, else the shortest form.
fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// How one read of one cluster went: `placekit_read_duration_seconds` and `placekit_read_up`
/// (1 read, 0 not), labelled by context under `--contexts`.
pub fn read_families(reads: &[ReadOutcome<'_>]) -> Vec<Family> {
    let mut duration = Family::gauge(
        "placekit_read_duration_seconds",
        "How long placekit took to read the cluster for this report.",
    )
    .unit("seconds");
    let mut up = Family::gauge(
        "placekit_read_up",
        "1 when the cluster was read for this report, 0 when it could not be (a report then holds nothing of it; an exporter serves what it read last).",
    );
    for read in reads {
        let labels: Vec<(&'static str, &str)> = read
            .context
            .map(|c| vec![("context", c)])
            .unwrap_or_default();
        if let Some(seconds) = read.seconds {
            duration.set(&labels, seconds);
        }
        up.set(&labels, if read.ok { 1.0 } else { 0.0 });
    }
    vec![duration, up]
}

/// One cluster's read, for [`read_families`].
#[derive(Debug, Clone, Copy)]
pub struct ReadOutcome<'a> {
    /// The context's name under `--contexts`; `None` for the one cluster of a plain run.
    pub context: Option<&'a str>,
    pub ok: bool,
    pub seconds: Option<f64>,
}

/// The exposition of a one-cluster report whose read failed: `placekit_read_up 0` and how
/// long the attempt took, so that a one-shot `-o openmetrics` (a cron job feeding a textfile
/// collector) records that the cluster could not be read instead of printing nothing.
pub fn failed_read(seconds: f64) -> String {
    render(&read_families(&[ReadOutcome {
        context: None,
        ok: false,
        seconds: Some(seconds),
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_render_as_openmetrics_with_escaped_labels_and_an_eof() {
        let mut free = Family::gauge("placekit_node_accelerator_free", "Free devices.");
        free.set(&[("node", "gpu-1"), ("resource", "nvidia.com/gpu")], 5.0);
        free.set(&[("node", "we\"ird\\\nnode"), ("resource", "x")], 0.5);
        let empty = Family::gauge("placekit_node_undedicated", "Nodes.");
        let mut took = Family::gauge("placekit_read_duration_seconds", "Took.").unit("seconds");
        took.set(&[], 1.25);
        assert_eq!(
            render(&[free, empty, took]),
            "# TYPE placekit_node_accelerator_free gauge\n\
             # HELP placekit_node_accelerator_free Free devices.\n\
             placekit_node_accelerator_free{node=\"gpu-1\",resource=\"nvidia.com/gpu\"} 5\n\
             placekit_node_accelerator_free{node=\"we\\\"ird\\\\\\nnode\",resource=\"x\"} 0.5\n\
             # TYPE placekit_read_duration_seconds gauge\n\
             # UNIT placekit_read_duration_seconds seconds\n\
             # HELP placekit_read_duration_seconds Took.\n\
             placekit_read_duration_seconds 1.25\n\
             # EOF\n"
        );
    }

    #[test]
    fn adding_counts_per_label_set() {
        let mut pods = Family::gauge("placekit_drifted_pods", "Pods.");
        pods.add(&[("workload", "a")], 1.0);
        pods.add(&[("workload", "a")], 1.0);
        pods.add(&[("workload", "b")], 1.0);
        assert!(render(&[pods]).contains("placekit_drifted_pods{workload=\"a\"} 2\n"));
    }
}
