//! The lint run: the files (and with `--cluster` the live nodes) through the rules, the
//! report streamed in the chosen format, and `--fix`/`--diff`.

use placekit_cli::error::CommandError;
use placekit_cli::fleet::{self, ClusterRead, Fleet};
use placekit_cli::ui::Ui;
use placekit_core::exit;
use placekit_lint::engine::{FileReport, Outcome, Settings, lint_paths_streaming};
use placekit_lint::fix::files::{self as fixer, FixMode};
use placekit_lint::output;
use placekit_lint::rule::Severity;
use placekit_lint::structured::{Structured, StructuredWriter};

use crate::flags::{Diff, Format, LintSettings};
use crate::live;

/// Lints the files (against the live clusters too with `--cluster`/`--contexts`); the exit
/// code says what was found, and whether some contexts could not be read.
pub fn run(
    cli: &LintSettings,
    connection: &placekit_client::connect::ConnectionArgs,
    fleet_args: &fleet::FleetArgs,
) -> Result<u8, CommandError> {
    let ui = Ui::new(&cli.display);
    // CRDs shipped in the input itself (a chart's crds/ beside its resources) count as
    // --crd-dir's do; with --cluster, the kinds of the input say which CRDs to read from
    // the cluster.
    let mut crds = cli.crds.clone();
    let mut custom_kinds: std::collections::BTreeSet<(String, String)> = Default::default();
    let (paths, _) = placekit_lint::source::collect_paths(&cli.files, cli.recursive);
    // Regular files only: a FIFO (`-f <(...)`) is read once, by the lint.
    // and what the lint refuses as too large is not read here either.
    let regular = |p: &&std::path::PathBuf| {
        std::fs::metadata(p)
            .is_ok_and(|m| m.is_file() && m.len() <= placekit_lint::source::MAX_FILE_BYTES)
    };
    for path in paths.iter().filter(regular) {
        if let Ok(text) = std::fs::read_to_string(path) {
            crds.add_from_text(&text);
            if cli.live {
                custom_kinds.extend(placekit_lint::crds::custom_kinds(&text));
            }
        }
    }
    let (clusters, contexts) = if cli.live {
        let (clusters, contexts, served) = placekit_cli::error::block_on(async {
            let fleet = Fleet::resolve(connection, fleet_args)?;
            live::lint_clusters(connection, fleet.as_ref(), &ui, &custom_kinds).await
        })?;
        // What the cluster serves comes first: a CRD among the files (or --crd-dir) never
        // replaces the schema the API server applies; the files' fill in the kinds it
        // does not serve.
        let mut merged = served;
        merged.add_missing(crds);
        crds = merged;
        (clusters, contexts)
    } else {
        (Vec::new(), Vec::new())
    };
    // Every context failed: there is nothing to check the files against.
    if !contexts.is_empty() && clusters.is_empty() {
        return Ok(fleet::exit_code(&contexts, |_| exit::SUCCESS));
    }
    let settings = Settings {
        config: &cli.config,
        keep_source_lines: cli.output == Format::Text,
        clusters: &clusters,
        jobs: cli.jobs,
        contents: None,
        crds: &crds,
    };
    let code = match cli.fix {
        Some(fix_mode) => fix(cli, fix_mode, &settings, &ui, &contexts)?,
        None => lint_streaming(cli, &settings, &ui, &contexts)?,
    };
    // Some contexts could not be read: the report is incomplete (input errors still say 2).
    if fleet::exit_code(&contexts, |_| exit::SUCCESS) == exit::SOME_CONTEXTS_UNREAD
        && code != exit::USAGE
    {
        return Ok(exit::SOME_CONTEXTS_UNREAD);
    }
    Ok(code)
}

/// The report is printed file by file as the files are done (a big file document by
/// document), in every format, so a monorepo's report starts at once and its findings are
/// never all held in memory.
fn lint_streaming(
    cli: &LintSettings,
    settings: &Settings<'_>,
    ui: &Ui,
    contexts: &[ClusterRead<()>],
) -> Result<u8, CommandError> {
    let summary = match structured(cli.output) {
        Some(format) => {
            let contexts = (!contexts.is_empty()).then(|| fleet::contexts_json(contexts));
            let stdout = std::io::BufWriter::new(std::io::stdout().lock());
            let mut failed = None;
            let result = StructuredWriter::start(
                format,
                stdout,
                env!("CARGO_PKG_VERSION"),
                contexts.as_ref(),
            )
            .and_then(|mut writer| {
                let files =
                    lint_paths_streaming(&cli.files, cli.recursive, settings, &mut |report| {
                        if failed.is_none()
                            && let Err(e) = writer.add(report)
                        {
                            failed = Some(e);
                        }
                    });
                match failed {
                    Some(e) => Err(e),
                    None => writer.finish(files),
                }
            });
            match result {
                Ok(summary) => summary,
                // A closed stdout (`| head`) ends quietly; the exit code still says what was found.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(exit::USAGE),
                Err(e) => return Err(CommandError::Input(format!("writing the report: {e}"))),
            }
        }
        None => {
            let mut summary = output::Summary::default();
            let mut out = Output::default();
            summary.files =
                lint_paths_streaming(&cli.files, cli.recursive, settings, &mut |report| {
                    summary.add(&report);
                    out.write(&match cli.output {
                        Format::Github => output::github_file(&report),
                        _ => output::text_file(&report, ui),
                    });
                });
            if cli.output == Format::Text {
                out.write(&output::text_summary(&summary));
            }
            summary
        }
    };
    Ok(if summary.input_errors > 0 {
        exit::USAGE
    } else if summary.failing(cli.fail_on) > 0 {
        exit::PROBLEMS
    } else {
        exit::SUCCESS
    })
}

/// The structured format of `output`, if it is one.
fn structured(output: Format) -> Option<Structured> {
    match output {
        Format::Json => Some(Structured::Json),
        Format::Sarif => Some(Structured::Sarif),
        Format::Gitlab => Some(Structured::Gitlab),
        Format::Text | Format::Github => None,
    }
}

/// Stdout written piece by piece: once it is closed (`| head`) the rest is dropped
/// quietly, and another write error is said once.
#[derive(Default)]
struct Output {
    broken: bool,
}

impl Output {
    fn write(&mut self, text: &str) {
        use std::io::Write;
        if self.broken || text.is_empty() {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
        {
            self.broken = true;
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                eprintln!("error: writing the report: {e}");
            }
        }
    }
}

/// Renders the report in the chosen format, on stdout (or stderr when stdout carries the
/// fixed stream).
/// With `--contexts`, the JSON report lists every cluster read (and why one could not be).
fn print_report(
    cli: &LintSettings,
    outcome: &Outcome,
    ui: &Ui,
    to_stderr: bool,
    contexts: &[ClusterRead<()>],
) {
    let rendered = match structured(cli.output) {
        Some(format) => {
            let contexts = (!contexts.is_empty()).then(|| fleet::contexts_json(contexts));
            let mut bytes = Vec::new();
            let report = FileReport {
                errors: outcome.errors.clone(),
                findings: outcome.findings.clone(),
                documents: outcome.documents,
                objects: outcome.objects,
            };
            StructuredWriter::start(
                format,
                &mut bytes,
                env!("CARGO_PKG_VERSION"),
                contexts.as_ref(),
            )
            .and_then(|mut writer| {
                writer.add(report)?;
                writer.finish(outcome.files)
            })
            .expect("writing to memory does not fail");
            String::from_utf8(bytes).expect("JSON is UTF-8")
        }
        None if cli.output == Format::Github => output::github_report(outcome),
        None => output::text_report(outcome, ui),
    };
    write_out(&rendered, to_stderr);
}

/// Writes to stdout (a closed stdout, `| head`, ends quietly) or stderr.
pub fn write_out(text: &str, to_stderr: bool) {
    use std::io::Write;
    let result = if to_stderr {
        std::io::stderr().lock().write_all(text.as_bytes())
    } else {
        std::io::stdout().lock().write_all(text.as_bytes())
    };
    if let Err(e) = result
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("error: writing the report: {e}");
    }
}

fn exit_code(outcome: &Outcome, fail_on: Severity) -> u8 {
    if !outcome.errors.is_empty() {
        exit::USAGE
    } else if output::failing(&outcome.findings, fail_on) > 0 {
        exit::PROBLEMS
    } else {
        exit::SUCCESS
    }
}

/// `--fix` / `--diff`: fix, then report what was fixed and what is left; exit codes as
/// without them, computed on what is left (for `--diff`, 1 also when there is a diff).
fn fix(
    cli: &LintSettings,
    (mode, Diff(diff)): (FixMode, Diff),
    settings: &Settings<'_>,
    ui: &Ui,
    contexts: &[ClusterRead<()>],
) -> Result<u8, CommandError> {
    let stdin_input = cli.files.iter().any(|f| f.as_os_str() == "-");
    let stdin = if stdin_input {
        let mut text = String::new();
        let limit = placekit_lint::source::MAX_FILE_BYTES;
        // One byte past the limit tells an oversized stream from one that fits.
        match std::io::Read::read_to_string(
            &mut std::io::Read::take(std::io::stdin(), limit + 1),
            &mut text,
        ) {
            Ok(_) if text.len() as u64 > limit => {
                return Err(CommandError::Input(format!(
                    "<stdin>: input is over the {limit}-byte limit; nothing was fixed"
                )));
            }
            Ok(_) => Some(text),
            Err(e) => return Err(CommandError::Input(format!("reading stdin: {e}"))),
        }
    } else {
        None
    };
    let outcome = fixer::fix(&cli.files, cli.recursive, settings, stdin.clone(), mode);
    let summary = outcome.summary(mode, diff);
    let stdin_fixed = outcome
        .changed
        .get(fixer::STDIN)
        .map(|(_, after)| after.clone());
    if diff {
        // Piped, the diff is the patch itself (`| git apply`); on a terminal the manifests'
        // text in it is escaped like every other string from a file.
        let patch = outcome.diff();
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            let shown: String = patch
                .split_inclusive('\n')
                .map(|l| {
                    let (text, end) = l.strip_suffix('\n').map_or((l, ""), |t| (t, "\n"));
                    format!("{}{end}", placekit_core::text::escaped(text))
                })
                .collect();
            write_out(&shown, false);
        } else {
            write_out(&patch, false);
        }
        write_out(&summary, true);
        let code = exit_code(&outcome.remaining, cli.fail_on);
        return Ok(if code == exit::SUCCESS && !outcome.changed.is_empty() {
            exit::PROBLEMS
        } else {
            code
        });
    }
    write_out(&summary, true);
    if stdin_input {
        // The fixed stream (or the unchanged one) on stdout; the report on stderr.
        write_out(
            stdin_fixed
                .as_deref()
                .or(stdin.as_deref())
                .unwrap_or_default(),
            false,
        );
        print_report(cli, &outcome.remaining, ui, true, contexts);
    } else {
        print_report(cli, &outcome.remaining, ui, false, contexts);
    }
    if !outcome.write_errors.is_empty() {
        return Ok(exit::USAGE);
    }
    Ok(exit_code(&outcome.remaining, cli.fail_on))
}
