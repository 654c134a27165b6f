//! What the plugins share about talking to a person: output format, colour, confirmation
//! prompts and progress bars. Decisions (colour on a TTY only, `NO_COLOR`, refusing to
//! mutate without a TTY or `--yes`) live here so the three plugins behave alike.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;

use placekit_core::text::{Color, Paint, escape_controls, escaped, shell_quote, table};

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// `-o/--output` for reports: what a report becomes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    /// Text with more columns (where a command has them).
    Wide,
    Json,
    Yaml,
    /// `kind/name` of each item, one per line (kubectl's `-o name`).
    Name,
    /// `jsonpath=TEMPLATE` over the JSON report ([`Output::template`]).
    JsonPath,
    /// `custom-columns=HEADER:PATH,...` over the report's items.
    CustomColumns,
    /// The report's facts as OpenMetrics text (`status`, `drift`, `why-pending`; see
    /// [`crate::output::openmetrics`]).
    OpenMetrics,
}

impl OutputFormat {
    /// Anything but the text tables: the command builds its report and [`Ui::print_structured`]
    /// renders it.
    pub fn is_structured(self) -> bool {
        !matches!(self, OutputFormat::Text | OutputFormat::Wide)
    }
}

/// `-o` as given: the format and, for `jsonpath=`/`custom-columns=`, its template, checked
/// when the flag is parsed (a bad template is a usage error before any request).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Output {
    pub format: OutputFormat,
    pub template: Option<String>,
}

/// What `-o` accepts, for its help and its error.
pub const OUTPUT_FORMATS: &str =
    "text, wide, json, yaml, name, jsonpath=TEMPLATE, custom-columns=SPEC, openmetrics";

impl std::str::FromStr for Output {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let plain = |format| {
            Ok(Output {
                format,
                template: None,
            })
        };
        match value {
            "text" => plain(OutputFormat::Text),
            "wide" => plain(OutputFormat::Wide),
            "json" => plain(OutputFormat::Json),
            "yaml" => plain(OutputFormat::Yaml),
            "name" => plain(OutputFormat::Name),
            "openmetrics" => plain(OutputFormat::OpenMetrics),
            _ => {
                if let Some(template) = value.strip_prefix("jsonpath=") {
                    placekit_core::jsonpath::Template::parse(template)
                        .map_err(|e| e.to_string())?;
                    Ok(Output {
                        format: OutputFormat::JsonPath,
                        template: Some(template.to_string()),
                    })
                } else if let Some(spec) = value.strip_prefix("custom-columns=") {
                    placekit_core::jsonpath::parse_columns(spec).map_err(|e| e.to_string())?;
                    Ok(Output {
                        format: OutputFormat::CustomColumns,
                        template: Some(spec.to_string()),
                    })
                } else {
                    Err(format!(
                        "unable to match a printer suitable for the output format {value:?}, the allowed formats are: {OUTPUT_FORMATS}"
                    ))
                }
            }
        }
    }
}

/// Parses `-o` for clap.
pub fn parse_output(value: &str) -> Result<Output, String> {
    value.parse()
}

/// `--dry-run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DryRun {
    /// Make the change.
    #[default]
    None,
    /// Compute and show the plan; send nothing.
    Client,
    /// Send every write with `dryRun=All`: admission and validation run, nothing persists.
    Server,
}

/// Flags every mutating command shares.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Change options")]
pub struct MutationArgs {
    /// Do not ask for confirmation. Without a terminal, mutating commands refuse to run
    /// unless this is given.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// none: change the cluster; client: only show the plan; server: send the writes with
    /// dryRun=All so validation runs but nothing persists.
    #[arg(long, value_enum, default_value = "none", num_args = 0..=1, default_missing_value = "client", require_equals = true)]
    pub dry_run: DryRun,
    /// Where to write the snapshot (default: the per-user state directory).
    #[arg(long, value_name = "PATH", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub backup: Option<String>,
    /// Writes in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// The field manager the writes are recorded under in the nodes' managedFields (as
    /// kubectl's --field-manager).
    #[arg(long, value_name = "NAME", default_value = "placekit", value_parser = parse_field_manager)]
    pub field_manager: String,
}

/// A `--field-manager` the API server accepts (at most 128 characters) and a URL carries as
/// it is.
fn parse_field_manager(name: &str) -> Result<String, String> {
    if name.is_empty() || name.len() > 128 {
        return Err("a field manager has 1 to 128 characters".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.:/@+".contains(*c)))
    {
        return Err(format!(
            "{c:?} is not allowed in a field manager here (letters, digits and -_.:/@+)"
        ));
    }
    Ok(name.to_string())
}

/// The command being run, as the user typed it (`kubectl nodelabel remove gpu-1 pool-`),
/// with `flag` added: what a message offering an override tells them to run.
pub fn rerun_with(command: &str, flag: &str) -> String {
    rerun_with_all(command, &[flag])
}

/// [`rerun_with`] for several flags at once (each added once).
pub fn rerun_with_all(command: &str, flags: &[&str]) -> String {
    let mut words: Vec<String> = vec![command.to_string()];
    words.extend(
        std::env::args()
            .skip(1)
            .filter(|a| !flags.contains(&a.as_str()))
            .map(|a| shell_quote(&a)),
    );
    words.extend(flags.iter().map(|f| f.to_string()));
    words.join(" ")
}

/// kubectl's flags about what the requests carry back: `-v` and `--warnings-as-errors`.
/// Apart from [`DisplayArgs`] so a command line whose `-o` is its own (affinity-lint's
/// lint) takes them too.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LogArgs {
    /// Log level, as kubectl's: 6 prints each request's verb, URL, status and time; 7 its
    /// headers; 8 the bodies (cut at 1,024 characters; 9 at 10,240; 10 whole). On stderr,
    /// credentials never shown.
    #[arg(
        short = 'v',
        long = "v",
        global = true,
        value_name = "LEVEL",
        default_value_t = 0
    )]
    pub verbosity: u8,
    /// Treat warnings from the server (deprecations, admission policies in Warn mode) as
    /// errors: exit 1 after the command when there were any.
    #[arg(long, global = true)]
    pub warnings_as_errors: bool,
}

impl LogArgs {
    /// Installs the process's request observer (`-v`, the server's warnings): every
    /// connection made after this reports to it.
    pub fn install(&self) {
        placekit_client::observe::install(std::sync::Arc::new(StderrObserver {
            level: self.verbosity,
            seen: std::sync::Mutex::default(),
        }));
        if self.warnings_as_errors {
            crate::outcome::WARNINGS_AS_ERRORS.store(true, Ordering::Relaxed);
        }
    }
}

/// Flags about presentation.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Output")]
pub struct DisplayArgs {
    /// Output format: text, wide, json, yaml, name, jsonpath=TEMPLATE (kubectl's, e.g.
    /// '{.items[*].name}'), custom-columns=HEADER:PATH,...
    #[arg(short = 'o', long, value_parser = parse_output, default_value = "text", global = true)]
    pub output: Output,
    /// Print tables without their header line (text, wide and custom-columns).
    #[arg(long, global = true)]
    pub no_headers: bool,
    #[command(flatten)]
    pub log: LogArgs,
    /// When to use colour (NO_COLOR is honoured with auto).
    #[arg(long, value_enum, default_value = "auto", global = true)]
    pub color: ColorChoice,
    /// Never show progress bars.
    #[arg(long, global = true)]
    pub no_progress: bool,
}

/// What a command prints as text, for the output flags that mean something on some
/// commands only: each refuses what it would otherwise accept and ignore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextShape {
    /// A table that `-o wide` widens.
    WideTable,
    /// A table with no wider form.
    Table,
    /// A report (a plan, a diff, a page): no header line to drop, no wider form.
    Report,
    /// Not a report at all (a shell script): text only.
    Script,
    /// A server (`serve-metrics`): it prints no report at all.
    Service,
}

/// How to talk to the person running the command.
#[derive(Debug, Clone)]
pub struct Ui {
    pub output: OutputFormat,
    /// The `jsonpath=`/`custom-columns=` template, checked when `-o` was parsed.
    pub template: Option<String>,
    /// `--no-headers`.
    pub no_headers: bool,
    pub color: bool,
    /// A person can answer a prompt (stdin and stderr are terminals).
    pub interactive: bool,
    /// Progress bars may be drawn (stderr is a terminal and not `--no-progress`).
    pub progress: bool,
}

impl Ui {
    pub fn new(display: &DisplayArgs) -> Self {
        let color = match display.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            // anstream's reading of the conventions: NO_COLOR, CLICOLOR_FORCE, CLICOLOR=0,
            // TERM=dumb, and a terminal on stdout.
            ColorChoice::Auto => {
                anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
            }
        };
        let stderr_tty = std::io::stderr().is_terminal();
        display.log.install();
        Ui {
            output: display.output.format,
            template: display.output.template.clone(),
            no_headers: display.no_headers,
            color,
            interactive: std::io::stdin().is_terminal() && stderr_tty,
            progress: stderr_tty && !display.no_progress,
        }
    }

    /// Refuses the output flags `command` (`nodelabel set`) would accept and ignore:
    /// `-o wide` without a wider table, `--no-headers` over text with no header line, any
    /// `-o` on a script.
    pub fn check_shape(
        &self,
        command: &str,
        shape: TextShape,
    ) -> Result<(), crate::error::CommandError> {
        self.check_output(command, shape, false)
    }

    /// [`Ui::check_shape`] for a command that also gives its facts as `-o openmetrics`.
    pub fn check_metrics_shape(
        &self,
        command: &str,
        shape: TextShape,
    ) -> Result<(), crate::error::CommandError> {
        self.check_output(command, shape, true)
    }

    fn check_output(
        &self,
        command: &str,
        shape: TextShape,
        metrics: bool,
    ) -> Result<(), crate::error::CommandError> {
        let refuse = |what: &str, why: &str| {
            Err(crate::error::CommandError::Input(format!(
                "{what}: `kubectl {command}` {why}"
            )))
        };
        if self.output == OutputFormat::OpenMetrics {
            return match (metrics, self.no_headers) {
                // An exporter serves them: it prints nothing to format.
                (false, _) if shape == TextShape::Service => {
                    Err(service_prints_no_report(command, "-o openmetrics"))
                }
                (false, _) => refuse(
                    "-o openmetrics",
                    "has no metrics; `gpu-taint status`, `affinity-lint drift` and `affinity-lint why-pending` give them",
                ),
                (true, true) => refuse("--no-headers", "prints no table with -o openmetrics"),
                (true, false) => Ok(()),
            };
        }
        match (shape, self.output) {
            (TextShape::Script, OutputFormat::Text) if !self.no_headers => Ok(()),
            (TextShape::Script, _) => refuse(
                "-o and --no-headers",
                "prints a shell script, in no other format",
            ),
            (TextShape::Service, OutputFormat::Text) if !self.no_headers => Ok(()),
            (TextShape::Service, _) => Err(service_prints_no_report(
                command,
                if self.no_headers && self.output == OutputFormat::Text {
                    "--no-headers"
                } else {
                    "-o"
                },
            )),
            (TextShape::Table | TextShape::Report, OutputFormat::Wide) => refuse(
                "-o wide",
                "has no wider table; -o json or -o yaml give every field",
            ),
            (TextShape::Report, OutputFormat::Text) if self.no_headers => refuse(
                "--no-headers",
                "prints no table; -o name, -o jsonpath=… or -o custom-columns=… --no-headers give one line per object",
            ),
            _ => Ok(()),
        }
    }

    /// Paints `text` with an ANSI colour when colour is on.
    pub fn paint(&self, text: &str, color: Color) -> String {
        if !self.color {
            return text.to_string();
        }
        use anstyle::{AnsiColor, Style};
        let style = match color {
            Color::Red => Style::new().fg_color(Some(AnsiColor::Red.into())),
            Color::Green => Style::new().fg_color(Some(AnsiColor::Green.into())),
            Color::Yellow => Style::new().fg_color(Some(AnsiColor::Yellow.into())),
            Color::Bold => Style::new().bold(),
            Color::Dim => Style::new().dimmed(),
        };
        format!("{style}{text}{style:#}")
    }

    /// A diff with `-` lines red and `+` lines green.
    pub fn paint_diff(&self, diff: &str) -> String {
        if !self.color {
            return diff.to_string();
        }
        diff.lines()
            .map(|l| {
                if l.starts_with("---") || l.starts_with("+++") {
                    self.paint(l, Color::Bold)
                } else if l.starts_with('-') {
                    self.paint(l, Color::Red)
                } else if l.starts_with('+') {
                    self.paint(l, Color::Green)
                } else {
                    l.to_string()
                }
            })
            .map(|l| l + "\n")
            .collect()
    }

    /// Prints a warning on stderr. Warnings quote cluster strings and files (node names,
    /// label values, hook stderr): control and bidirectional characters are escaped, line
    /// breaks too, so a value cannot forge a line that looks like the command's own; any
    /// credential of the connection is taken out.
    pub fn warn(&self, message: &str) {
        eprintln!(
            "{} {}",
            self.paint("warning:", Color::Yellow),
            escape_controls(&placekit_client::secrets::redact(message), false)
        );
    }

    /// `-n` on a command it does not narrow (`because` says why: nodes are cluster-scoped,
    /// the checks or an exporter read every namespace). kubectl ignores it silently; a user
    /// who meant to narrow the command is told.
    pub fn warn_namespace_ignored(&self, namespace: Option<&str>, command: &str, because: &str) {
        if let Some(namespace) = namespace {
            self.warn(&format!(
                "-n {namespace} is ignored by {command}: {because}"
            ));
        }
    }

    /// Asks a yes/no question on the terminal; `false` when declined or unanswerable.
    pub fn confirm(&self, prompt: &str) -> bool {
        if !self.interactive {
            return false;
        }
        dialoguer::Confirm::new()
            .with_prompt(prompt)
            .default(false)
            .interact_on(&dialoguer::console::Term::stderr())
            .unwrap_or(false)
    }

    /// A progress bar on stderr for `len` steps, hidden when progress is off or the work is
    /// too small to notice.
    pub fn progress_bar(&self, len: u64, message: &str) -> indicatif::ProgressBar {
        if !self.progress || len < 20 {
            return indicatif::ProgressBar::hidden();
        }
        let bar = indicatif::ProgressBar::new(len);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({elapsed})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_message(message.to_string());
        bar
    }

    /// Prints a serialisable value as `-o` asks: JSON, YAML, its items' names, a jsonpath
    /// template or custom columns over it.
    pub fn print_structured<T: Serialize>(&self, value: &T) {
        print!("{}", self.render_structured(value));
    }

    /// [`Ui::print_structured`]'s text.
    pub fn render_structured<T: Serialize>(&self, value: &T) -> String {
        use placekit_core::jsonpath;
        let template = self.template.as_deref().unwrap_or_default();
        match self.output {
            OutputFormat::Yaml => serde_yaml::to_string(value).expect("reports serialise"),
            OutputFormat::Name => {
                let value = serde_json::to_value(value).expect("reports serialise");
                let mut names: Vec<String> = report_items(&value)
                    .iter()
                    .filter_map(|item| item_name(&value, item))
                    .collect();
                // One line per object, as kubectl's: a node's labels are one node.
                names.dedup();
                names
                    .iter()
                    .map(|name| format!("{}\n", escaped(name)))
                    .collect()
            }
            OutputFormat::JsonPath => {
                let value = serde_json::to_value(value).expect("reports serialise");
                let parsed =
                    jsonpath::Template::parse(template).expect("checked when -o was parsed");
                match parsed.render(&value) {
                    Ok(text) => text,
                    Err(why) => {
                        // As kubectl says it; the command then exits 1, whatever it did.
                        eprintln!(
                            "error: error executing jsonpath {}: Error executing template: {why}",
                            escaped(&format!("{template:?}"))
                        );
                        crate::outcome::OUTPUT_FAILED.store(true, Ordering::SeqCst);
                        String::new()
                    }
                }
            }
            OutputFormat::CustomColumns => {
                let value = serde_json::to_value(value).expect("reports serialise");
                let columns =
                    jsonpath::parse_columns(template).expect("checked when -o was parsed");
                let header: Vec<&str> = columns.iter().map(|c| c.header.as_str()).collect();
                let rows: Vec<Vec<String>> = report_items(&value)
                    .iter()
                    .map(|item| columns.iter().map(|c| c.cell(item)).collect())
                    .collect();
                self.table(&header, &rows)
            }
            _ => format!(
                "{}\n",
                serde_json::to_string_pretty(value).expect("reports serialise")
            ),
        }
    }

    /// A table ([`table`]), without its header line under `--no-headers`.
    pub fn table(&self, header: &[&str], rows: &[Vec<String>]) -> String {
        let text = table(header, rows);
        if self.no_headers {
            text.split_once('\n')
                .map(|(_, rest)| rest.to_string())
                .unwrap_or_default()
        } else {
            text
        }
    }
}

/// The exit code when the output cannot be written any more (0 until a command knows
/// better): a mutating command sets its report's code, so a reader that went away does
/// not turn 1 or 130 into 0.
static EXIT_IF_OUTPUT_BREAKS: AtomicU8 = AtomicU8::new(0);

/// Sets the exit code used when stdout or stderr breaks from now on.
pub fn exit_code_if_output_breaks(code: u8) {
    EXIT_IF_OUTPUT_BREAKS.store(code, Ordering::SeqCst);
}

/// Makes a closed stdout (`kubectl nodelabel history | head -1`) end the program quietly
/// instead of with a "failed printing to stdout" panic: Rust ignores SIGPIPE, so `println!`
/// panics on a broken pipe; this hook turns exactly that panic (and EIO from a terminal
/// that hung up) into a silent exit: 0, or the code a mutating command set with
/// [`exit_code_if_output_breaks`] (the reader went away; nothing is left half-done by
/// output).
pub fn exit_quietly_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        // stdout closed by its reader, or the terminal gone (EIO after a hangup).
        let output_gone = message.contains("failed printing to")
            && (message.contains("Broken pipe") || message.contains("Input/output error"));
        if output_gone {
            std::process::exit(i32::from(EXIT_IF_OUTPUT_BREAKS.load(Ordering::SeqCst)));
        }
        default(info);
    }));
}

/// The rows of a report, as `-o name` and `-o custom-columns` see them: its `items`, else its
/// `nodes` (a change report), else its `clusters` (a many-clusters report), else the
/// report itself.
fn report_items(report: &serde_json::Value) -> Vec<serde_json::Value> {
    for key in ["items", "nodes", "clusters"] {
        if let Some(items) = report.get(key).and_then(|v| v.as_array()) {
            return items.clone();
        }
    }
    vec![report.clone()]
}

/// An item's name as kubectl's `-o name` prints it: `kind/name` (`deployment/llm`,
/// `node/gpu-1`), or a snapshot's file name.
fn item_name(report: &serde_json::Value, item: &serde_json::Value) -> Option<String> {
    let text =
        |v: &serde_json::Value, key: &str| v.get(key).and_then(|v| v.as_str()).map(str::to_string);
    if let (Some(kind), Some(name)) = (text(item, "kind"), text(item, "name")) {
        // `show SNAPSHOT`: the snapshot's name, as `history -o name` lists it.
        if kind == "SnapshotPage" {
            return Some(name);
        }
        return Some(format!("{}/{name}", kind.to_lowercase()));
    }
    if let Some(name) = text(item, "name") {
        // Items without a kind: pods in the pending and drift reports, nodes in the
        // change and GPU reports.
        return Some(match text(report, "kind").as_deref() {
            Some("PendingSummary" | "DriftReport") => format!("pod/{name}"),
            // A snapshot is a file in the state directory, named as `show NAME` takes it.
            Some("ClusterCheck" | "SnapshotHistory") | None => name,
            Some(_) => format!("node/{name}"),
        });
    }
    if let Some(pod) = text(item, "pod") {
        return Some(format!("pod/{pod}"));
    }
    // The rows of `nodelabel show`: a label of a node.
    if let Some(node) = text(item, "node") {
        return Some(format!("node/{node}"));
    }
    // `status --by namespace`: a namespace's requests.
    if let (Some("GpuRequests"), Some(namespace)) =
        (text(report, "kind").as_deref(), text(item, "namespace"))
    {
        return Some(format!("namespace/{namespace}"));
    }
    if let Some(path) = text(item, "path") {
        return std::path::Path::new(&path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
    }
    text(item, "context")
}

impl StderrObserver {
    /// A body as `-v=8` shows it: redacted, escaped, cut at the level's length with
    /// kubectl's `[truncated N chars]`.
    fn body_text(&self, start: &[u8], length: usize, protobuf: bool) -> String {
        let limit = match self.level {
            ..=8 => Some(1024),
            9 => Some(10240),
            _ => None,
        };
        if protobuf {
            // A protobuf answer (by its Content-Type): a hex dump, as client-go shows one
            // (nothing in it can move the terminal), its secrets overwritten first.
            let redacted = placekit_client::secrets::redact_bytes(start);
            let shown = &redacted[..limit.map_or(redacted.len(), |l| l.min(redacted.len()))];
            let cut = length.saturating_sub(shown.len());
            let dump = hex_dump(shown);
            return if cut > 0 {
                format!("\n{dump}[truncated {cut} bytes]")
            } else {
                format!("\n{dump}")
            };
        }
        // Redacted before it is cut: a secret across the cut is never printed in part.
        let text = placekit_client::secrets::redact(&String::from_utf8_lossy(start));
        let kept: String = match limit {
            Some(limit) => text.chars().take(limit).collect(),
            None => text,
        };
        let cut = match limit {
            Some(limit) if length > limit => length - limit,
            _ => 0,
        };
        let shown = escaped(&kept).into_owned();
        if cut > 0 {
            format!("{shown} [truncated {cut} chars]")
        } else {
            shown
        }
    }
}

/// Go's `hex.Dump`: offset, 16 bytes in two groups of 8, and their printable ASCII.
fn hex_dump(bytes: &[u8]) -> String {
    let mut out = String::new();
    for (row, chunk) in bytes.chunks(16).enumerate() {
        let mut hex = String::new();
        for (i, b) in chunk.iter().enumerate() {
            hex.push_str(&format!("{b:02x} "));
            if i == 7 {
                hex.push(' ');
            }
        }
        let ascii: String = chunk
            .iter()
            .map(|b| {
                if (0x20..0x7f).contains(b) {
                    *b as char
                } else {
                    '.'
                }
            })
            .collect();
        out.push_str(&format!("{:08x}  {hex:<49} |{ascii}|\n", row * 16));
    }
    out
}

/// Says on stderr, as kubectl does, what the server warns of (each text once) and, from
/// `-v=6`, each request (7: its headers; 8: the bodies).
#[derive(Debug)]
struct StderrObserver {
    level: u8,
    seen: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl placekit_client::observe::Observer for StderrObserver {
    fn detail(&self) -> placekit_client::observe::Detail {
        use placekit_client::observe::Detail;
        // kubectl's levels: 7 the request's headers; 8 the bodies, cut at 1,024
        // characters; 9 at 10,240; 10 whole.
        match self.level {
            0..=6 => Detail::Summary,
            7 => Detail::Headers,
            8 => Detail::Bodies { limit: Some(1024) },
            9 => Detail::Bodies { limit: Some(10240) },
            _ => Detail::Bodies { limit: None },
        }
    }

    fn exchange(&self, exchange: &placekit_client::observe::Exchange) {
        if self.level < 6 {
            return;
        }
        let shown = |text: &str| escaped(&placekit_client::secrets::redact(text)).into_owned();
        let status = exchange
            .status
            .map(|s| s.to_string())
            .unwrap_or_else(|| "no answer".into());
        let url = shown(&exchange.url);
        if self.level == 6 {
            eprintln!(
                "I {} {url} {status} in {} milliseconds",
                exchange.method,
                exchange.elapsed.as_millis()
            );
            return;
        }
        // One write, so the lines of concurrent requests do not interleave.
        let mut lines = vec![
            format!("I {} {url}", exchange.method),
            "I Request Headers:".into(),
        ];
        lines.extend(
            exchange
                .request_headers
                .iter()
                .map(|(name, value)| format!("I     {name}: {}", shown(value))),
        );
        if let Some(body) = &exchange.request_body {
            lines.push(format!(
                "I Request Body: {}",
                self.body_text(body, body.len(), false)
            ));
        }
        lines.push(format!(
            "I Response Status: {status} in {} milliseconds",
            exchange.elapsed.as_millis()
        ));
        if !exchange.response_headers.is_empty() {
            lines.push("I Response Headers:".into());
            lines.extend(
                exchange
                    .response_headers
                    .iter()
                    .map(|(name, value)| format!("I     {name}: {}", shown(value))),
            );
        }
        eprintln!("{}", lines.join("\n"));
    }

    fn response_body(
        &self,
        exchange: &placekit_client::observe::Exchange,
        start: &[u8],
        length: usize,
    ) {
        let protobuf = exchange.response_headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("content-type")
                && value
                    .trim_start()
                    .starts_with("application/vnd.kubernetes.protobuf")
        });
        eprintln!(
            "I Response Body: {}",
            self.body_text(start, length, protobuf)
        );
    }

    fn warning(&self, text: &str) {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.insert(text.to_string()) {
            crate::outcome::WARNINGS_SEEN.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "Warning: {}",
                escaped(&placekit_client::secrets::redact(text))
            );
        }
    }
}

impl Paint for Ui {
    fn paint(&self, text: &str, color: Color) -> String {
        Ui::paint(self, text, color)
    }
}

/// Why an exporter (`command`: `gpu-taint serve-metrics`) refuses `flag` (`-o`, `-o
/// openmetrics`, `--no-headers`): it serves its metrics over HTTP and prints nothing to format.
pub fn service_prints_no_report(command: &str, flag: &str) -> crate::error::CommandError {
    crate::error::CommandError::Input(format!(
        "{flag}: `kubectl {command}` serves its metrics over HTTP (GET /metrics) and prints no report"
    ))
}

/// Builds the client from kubectl's access flags and says on stderr what the person should
/// know about the connection (as kubectl warns), before the command's first request.
pub async fn connect(
    args: &placekit_client::connect::ConnectionArgs,
) -> Result<placekit_client::connect::Connection, placekit_client::connect::ConnectError> {
    let (connection, notices) = args.open().await?;
    say_notices("", &notices);
    Ok(connection)
}

/// Says a connection's notices on stderr, after `prefix` (`context NAME: ` for one context
/// of many), redacted and escaped.
pub fn say_notices(prefix: &str, notices: &[placekit_client::connect::ConnectNotice]) {
    for notice in notices {
        eprintln!(
            "warning: {}{}",
            escaped(prefix),
            escape_controls(&placekit_client::secrets::redact(&notice.to_string()), true)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_controls("plain", false), "plain");
        assert_eq!(
            escape_controls("ctx\u{1b}]0;pwned\u{7}", false),
            "ctx\\x1b]0;pwned\\x07"
        );
        assert_eq!(escape_controls("a\nb\r", true), "a\nb\\x0d");
        assert_eq!(escape_controls("a\nb", false), "a\\x0ab");
        assert_eq!(escape_controls("\u{9b}31m", false), "\\x9b31m");
        assert_eq!(
            escape_controls("invoice\u{202e}lmay.exe", false),
            "invoice\\u{202e}lmay.exe"
        );
        assert_eq!(
            escape_controls("a\u{2066}b\u{200f}", true),
            "a\\u{2066}b\\u{200f}"
        );
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("/tmp/a-b.jsonl"), "/tmp/a-b.jsonl");
        assert_eq!(shell_quote("pool=online"), "pool=online");
        assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn tables_align() {
        let t = table(
            &["NAME", "GPU"],
            &[
                vec!["gpu-a100-1".into(), "8".into()],
                vec!["x".into(), "16".into()],
            ],
        );
        assert_eq!(t, "NAME        GPU\ngpu-a100-1  8\nx           16\n");
    }

    #[test]
    fn no_colour_means_plain_text() {
        let ui = Ui {
            output: OutputFormat::Text,
            template: None,
            no_headers: false,
            color: false,
            interactive: false,
            progress: false,
        };
        assert_eq!(ui.paint("x", Color::Red), "x");
        assert_eq!(ui.paint_diff("- a\n+ b\n"), "- a\n+ b\n");
        assert!(!ui.confirm("really?"), "no terminal: never a yes");
        let coloured = Ui { color: true, ..ui };
        assert_eq!(coloured.paint("x", Color::Red), "\x1b[31mx\x1b[0m");
    }
}
