//! The inventory's renderings: a table per node and accelerator, `--by namespace|pod`,
//! JSON/YAML, and one report over several clusters.

use placekit_cli::fleet::{self, ClusterRead};
use placekit_cli::output::PrintReport as _;
use placekit_cli::output::v1::{GpuInventory, GpuRequests, InventoryTotals, Item, RequestsBy};
use placekit_cli::ui::{OutputFormat, Ui};
use placekit_client::targets::Targets;
use placekit_core::accelerators::{self, Form, NodeInventory, ResourceTotal, cell};
use placekit_core::exit;
use placekit_core::gpu;
use placekit_core::model::quantity::format_milli;

use placekit_cli::inventory::{By, Group, Status, StatusOptions, StatusView};
use placekit_cli::output::v1::{self, RequestRow};

/// Renders one cluster's `status`.
pub fn print_status(ui: &Ui, targets: &Targets, options: &StatusOptions, view: &StatusView) {
    match view {
        StatusView::NoNodes if !ui.output.is_structured() => {
            // As `kubectl get nodes -l ...` says it.
            eprintln!(
                "No nodes found{}",
                match targets {
                    Targets::Selector(s) => format!(" matching -l {s}"),
                    _ => String::new(),
                }
            );
        }
        // An empty report, as `kubectl get nodes -l ... -o json` prints an empty List: a
        // script reads "no nodes", not nothing.
        StatusView::NoNodes => ui.print_report(&GpuInventory {
            resource: options.resource.as_deref().unwrap_or(gpu::DEFAULT_RESOURCE),
            nodes: Vec::new(),
            totals: InventoryTotals {
                totals: Default::default(),
                by_resource: Vec::new(),
            },
            group_by: None,
            groups: None,
            contexts: None,
        }),
        StatusView::Breakdown(rows) => {
            print_breakdown(ui, options.by.unwrap_or(By::Namespace), rows, options)
        }
        StatusView::Nodes {
            primary,
            rows,
            totals,
            by_resource,
            groups,
        } => {
            if ui.output.is_structured() {
                let rows: Vec<v1::inventory::NodeInventory> = rows.iter().map(Into::into).collect();
                ui.print_report(&GpuInventory {
                    resource: primary,
                    nodes: Item::all_local(&rows),
                    totals: InventoryTotals {
                        totals: totals.into(),
                        by_resource: by_resource.iter().map(Into::into).collect(),
                    },
                    group_by: options.group_by.as_deref(),
                    groups: options
                        .group_by
                        .as_ref()
                        .map(|_| groups.iter().map(Into::into).collect()),
                    contexts: None,
                });
                return;
            }
            let header = inventory_header(ui, options);
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            let table_rows = match &options.group_by {
                None => inventory_rows(ui, rows, by_resource, options),
                Some(key) => grouped_rows(ui, key, rows, groups, by_resource, options),
            };
            print!("{}", ui.table(&header, &table_rows));
        }
    }
}

/// Renders `status` over several clusters: a leading CONTEXT column, each cluster's rows and
/// totals under its name, then the totals over all of them; `-o json|yaml` tags every item
/// with its context and server and lists each cluster read (with its error, if any).
/// Returns the exit code.
pub fn print_fleet_status(ui: &Ui, options: &StatusOptions, reads: &[ClusterRead<Status>]) -> u8 {
    for r in reads {
        if let Ok(found) = &r.outcome {
            for n in &found.notes {
                ui.warn(&format!("context {}: {n}", r.label()));
            }
        }
    }
    let ok = || {
        reads
            .iter()
            .filter_map(|r| r.outcome.as_ref().ok().map(|s| (r, &s.view)))
    };
    let primary = options
        .resource
        .clone()
        .unwrap_or_else(|| gpu::DEFAULT_RESOURCE.to_string());
    if ui.output == OutputFormat::OpenMetrics {
        let clusters: Vec<super::ClusterStatus> = reads
            .iter()
            .map(|r| super::ClusterStatus {
                context: r.contexts.first().map(String::as_str),
                view: r.outcome.as_ref().ok().map(|s| &s.view),
                read_up: r.outcome.is_ok(),
                group_by: None,
                took: r.took,
            })
            .collect();
        print!("{}", super::status_metrics(&clusters));
        fleet::warn_failures(ui, reads);
        return fleet::exit_code(reads, |_| exit::SUCCESS);
    }
    if ui.output.is_structured() {
        print_fleet_report(ui, options, reads, &primary);
        fleet::warn_failures(ui, reads);
        return fleet::exit_code(reads, |_| exit::SUCCESS);
    }
    let mut parts: Vec<(String, Vec<Vec<String>>)> = Vec::new();
    let mut empty: Vec<String> = Vec::new();
    let header: Vec<String>;
    match options.by {
        Some(by) => {
            header = breakdown_table(by, &[])
                .0
                .iter()
                .map(|h| h.to_string())
                .collect();
            for (r, view) in ok() {
                match view {
                    StatusView::Breakdown(rows) if !rows.is_empty() => {
                        parts.push((r.label(), breakdown_table(by, rows).1))
                    }
                    _ => empty.push(r.label()),
                }
            }
        }
        None => {
            header = inventory_header(ui, options);
            let mut per_cluster = Vec::new();
            for (r, view) in ok() {
                match view {
                    StatusView::Nodes {
                        rows, by_resource, ..
                    } => {
                        parts.push((r.label(), inventory_rows(ui, rows, by_resource, options)));
                        per_cluster.push(by_resource.as_slice());
                    }
                    _ => empty.push(r.label()),
                }
            }
            if parts.len() > 1 {
                let overall = accelerators::merge_totals(per_cluster);
                let total_rows: Vec<Vec<String>> = inventory_rows(ui, &[], &overall, options);
                parts.push((fleet::ALL.to_string(), total_rows));
            }
        }
    }
    for label in &empty {
        match (options.by, &options.namespace) {
            (Some(_), Some(ns)) => {
                eprintln!("context {label}: no accelerator requests found in {ns} namespace.")
            }
            (Some(_), None) => eprintln!("context {label}: no accelerator requests found."),
            (None, _) => eprintln!("context {label}: no nodes found"),
        }
    }
    if !parts.is_empty() {
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        print!("{}", fleet::context_table(ui, &header, &parts));
    }
    fleet::warn_failures(ui, reads);
    fleet::exit_code(reads, |_| exit::SUCCESS)
}

/// `status -o json|yaml` over several clusters: every item tagged with its cluster, and each
/// cluster read (its totals, warnings or error).
fn print_fleet_report(
    ui: &Ui,
    options: &StatusOptions,
    reads: &[ClusterRead<Status>],
    primary: &str,
) {
    let ok = || {
        reads
            .iter()
            .filter_map(|r| r.outcome.as_ref().ok().map(|s| (r, &s.view)))
    };
    // Every cluster read, with its totals and warnings.
    let mut contexts = fleet::contexts(reads);
    for (entry, r) in contexts.iter_mut().zip(reads) {
        if let Ok(found) = &r.outcome {
            if let StatusView::Nodes { totals, .. } = &found.view {
                entry.totals = Some(totals.into());
            }
            if !found.notes.is_empty() {
                entry.warnings = Some(&found.notes);
            }
        }
    }
    match options.by {
        Some(by) => {
            let items: Vec<Item<RequestRow>> = ok()
                .flat_map(|(r, view)| match view {
                    StatusView::Breakdown(rows) => fleet::tagged(r, rows).collect(),
                    _ => Vec::new(),
                })
                .collect();
            ui.print_report(&GpuRequests {
                by: requests_by(by),
                namespace: options.namespace.as_deref(),
                items,
                contexts: Some(contexts),
            });
        }
        None => {
            let mut wire = Vec::new();
            let mut legacy = Vec::new();
            let mut per_cluster = Vec::new();
            for (r, view) in ok() {
                if let StatusView::Nodes {
                    rows,
                    totals,
                    by_resource,
                    ..
                } = view
                {
                    let rows: Vec<v1::inventory::NodeInventory> =
                        rows.iter().map(Into::into).collect();
                    wire.push((r, rows));
                    legacy.push(totals);
                    per_cluster.push(by_resource.as_slice());
                }
            }
            let nodes = wire
                .iter()
                .flat_map(|(r, rows)| fleet::tagged(*r, rows))
                .collect();
            let by_resource = accelerators::merge_totals(per_cluster);
            ui.print_report(&GpuInventory {
                resource: primary,
                nodes,
                totals: InventoryTotals {
                    totals: (&gpu::GpuTotals::sum(legacy)).into(),
                    by_resource: by_resource.iter().map(Into::into).collect(),
                },
                group_by: None,
                groups: None,
                contexts: Some(contexts),
            });
        }
    }
}

fn requests_by(by: By) -> RequestsBy {
    match by {
        By::Namespace => RequestsBy::Namespace,
        By::Pod => RequestsBy::Pod,
    }
}

fn print_breakdown(ui: &Ui, by: By, rows: &[RequestRow], options: &StatusOptions) {
    if ui.output.is_structured() {
        ui.print_report(&GpuRequests {
            by: requests_by(by),
            namespace: options.namespace.as_deref(),
            items: Item::all_local(rows),
            contexts: None,
        });
        return;
    }
    if rows.is_empty() {
        // As `kubectl get pods -n NS` says it.
        match &options.namespace {
            Some(ns) => eprintln!("No accelerator requests found in {ns} namespace."),
            None => eprintln!("No accelerator requests found."),
        }
        return;
    }
    let (header, rows) = breakdown_table(by, rows);
    print!("{}", ui.table(&header, &rows));
}

/// The `--by` table's header and rows.
fn breakdown_table(by: By, rows: &[RequestRow]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let resource = |r: &RequestRow| {
        if r.dra {
            format!("{} (DRA)", r.resource)
        } else {
            r.resource.clone()
        }
    };
    match by {
        By::Namespace => (
            vec!["NAMESPACE", "RESOURCE", "REQUESTED", "PODS"],
            rows.iter()
                .map(|r| {
                    vec![
                        r.namespace.clone(),
                        resource(r),
                        format_milli(r.requested),
                        r.pods.unwrap_or(0).to_string(),
                    ]
                })
                .collect(),
        ),
        By::Pod => (
            vec!["NAMESPACE", "POD", "NODE", "RESOURCE", "REQUESTED"],
            rows.iter()
                .map(|r| {
                    vec![
                        r.namespace.clone(),
                        r.pod.clone().unwrap_or_default(),
                        r.node.clone().unwrap_or_else(|| "-".into()),
                        resource(r),
                        format_milli(r.requested),
                    ]
                })
                .collect(),
        ),
    }
}

/// The upper-cased last segment of a label key, as kubectl's `-L` heads its columns.
fn label_header(key: &str) -> String {
    key.rsplit('/').next().unwrap_or(key).to_ascii_uppercase()
}

/// The node table's header: `-o wide` adds the pool labels, `-L` a column per key.
pub(super) fn inventory_header(ui: &Ui, options: &StatusOptions) -> Vec<String> {
    let wide = ui.output == OutputFormat::Wide;
    let mut header: Vec<String> = [
        "NAME",
        "RESOURCE",
        "CAPACITY",
        "ALLOCATABLE",
        "REQUESTED",
        "FREE",
        "FORM",
        "ZONE",
        "TAINTS",
    ]
    .map(String::from)
    .to_vec();
    if wide {
        header.push("POOL LABELS".into());
    }
    header.extend(options.label_columns.iter().map(|k| label_header(k)));
    header.push("WARNINGS".into());
    header
}

/// `--group-by KEY`: each group's node rows, then its totals (`TOTAL pool=online (3
/// nodes)`), and the totals of all at the end.
fn grouped_rows(
    ui: &Ui,
    key: &str,
    rows: &[NodeInventory],
    groups: &[Group],
    by_resource: &[ResourceTotal],
    options: &StatusOptions,
) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut start = 0;
    for g in groups {
        let members = &rows[start..start + g.nodes];
        start += g.nodes;
        let mut group_rows = inventory_rows(ui, members, &g.by_resource, options);
        let label = match &g.value {
            Some(v) => format!("{key}={v}"),
            None => format!("no {key}"),
        };
        // The group's total rows name the group.
        for row in group_rows
            .iter_mut()
            .skip(members.iter().map(node_row_count).sum())
        {
            if let Some(first) = row.first_mut()
                && let Some(rest) = first.strip_prefix("TOTAL ")
            {
                *first = format!("TOTAL {label} {rest}");
            }
        }
        out.extend(group_rows);
    }
    let all = inventory_rows(ui, &[], by_resource, options);
    out.extend(all);
    out
}

/// How many table rows a node has (one per accelerator, one when it has none).
fn node_row_count(node: &NodeInventory) -> usize {
    node.accelerators.len().max(1)
}

/// One node's rows of the table (what `status -w` prints again when they change).
pub(super) fn node_rows(
    ui: &Ui,
    node: &NodeInventory,
    options: &StatusOptions,
) -> Vec<Vec<String>> {
    inventory_rows(ui, std::slice::from_ref(node), &[], options)
}

/// The node table's rows: one per node and accelerator, then the totals per resource.
fn inventory_rows(
    ui: &Ui,
    rows: &[NodeInventory],
    totals: &[ResourceTotal],
    options: &StatusOptions,
) -> Vec<Vec<String>> {
    let wide = ui.output == OutputFormat::Wide;
    let dash = || "-".to_string();
    let mut table_rows: Vec<Vec<String>> = Vec::new();
    for node in rows {
        let p = &node.primary;
        let common = |row: &mut Vec<String>| {
            row.push(p.zone.clone().unwrap_or_else(dash));
            row.push(if p.taints.is_empty() {
                dash()
            } else {
                p.taints.join(",")
            });
            if wide {
                row.push(if p.pool_labels.is_empty() {
                    dash()
                } else {
                    p.pool_labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                });
            }
            for k in &options.label_columns {
                row.push(node.labels.get(k).cloned().flatten().unwrap_or_default());
            }
        };
        if node.accelerators.is_empty() {
            let mut row = vec![
                p.name.clone(),
                options.resource.clone().unwrap_or_else(dash),
                dash(),
                dash(),
                format_milli(p.requested),
                dash(),
                dash(),
            ];
            common(&mut row);
            row.push(p.warnings.join("; "));
            table_rows.push(row);
            continue;
        }
        // Node-level warnings (cordoned, NotReady) go on the node's first row; each row
        // says its own resource's.
        let node_warnings: Vec<String> = p
            .warnings
            .iter()
            .filter(|w| !w.starts_with("allocatable ") && !w.starts_with("requested exceeds"))
            .cloned()
            .collect();
        for (i, a) in node.accelerators.iter().enumerate() {
            let mut row = vec![
                p.name.clone(),
                a.resource_text(),
                cell(a.figures.capacity),
                cell(a.figures.allocatable),
                cell(a.figures.requested),
                cell(a.figures.free),
                a.form_text(),
            ];
            common(&mut row);
            let mut warnings: Vec<String> = if i == 0 {
                node_warnings.clone()
            } else {
                Vec::new()
            };
            if let (Some(c), Some(al)) = (a.figures.capacity, a.figures.allocatable)
                && al < c
            {
                warnings.push(format!(
                    "allocatable {} < capacity {}",
                    format_milli(al),
                    format_milli(c)
                ));
            }
            if a.figures.free.is_some_and(|f| f < 0) {
                warnings.push("requested exceeds allocatable".into());
            }
            row.push(warnings.join("; "));
            table_rows.push(row);
        }
    }
    // `--no-headers` is for scripts counting and cutting rows: one row a node, no footer.
    let totals = if ui.no_headers { &[][..] } else { totals };
    for t in totals {
        let mut row = vec![
            format!("TOTAL ({})", placekit_core::text::count(t.nodes, "node")),
            t.resource_text(),
            cell(t.figures.capacity),
            cell(t.figures.allocatable),
            cell(t.figures.requested),
            cell(t.figures.free),
            t.physical
                .map(|p| format!("{p} physical"))
                .unwrap_or_default(),
            String::new(),
            String::new(),
        ];
        if wide {
            row.push(String::new());
        }
        row.extend(options.label_columns.iter().map(|_| String::new()));
        row.push(String::new());
        table_rows.push(row);
    }
    table_rows
}

/// Which accelerators a node has, in words, for the `dedicate` preflight: `None` when it
/// has none of any kind.
pub fn describe_accelerators(inventory: &NodeInventory) -> Option<String> {
    if inventory.accelerators.is_empty() {
        return None;
    }
    Some(
        inventory
            .accelerators
            .iter()
            .map(|a| {
                let form = a.form_text();
                let figures = format!(
                    "capacity {}, allocatable {}",
                    cell(a.figures.capacity),
                    cell(a.figures.allocatable)
                );
                if a.form == Form::Whole {
                    format!("{} {figures}", a.resource_text())
                } else {
                    format!("{} {figures} ({form})", a.resource_text())
                }
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}
