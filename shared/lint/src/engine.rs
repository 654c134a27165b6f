//! Running the rules over inputs: configuration (`.affinity-lint.yaml`, `--enable`,
//! `--disable`), suppression annotations, severities, the findings with positions, and the
//! streaming, parallel run over files.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use std::sync::{Mutex, mpsc};

pub use super::finding::{Finding, Fixable, ObjectRef};
use super::finding::{GroupPods, TemplateKey, finding, template_key};
use super::fix::{FileFix, TextFix};
use super::rule::{
    Context, GroupFacts, GroupRule, RawFinding, RuleMeta, Scope, Severity, UnlessSelected,
};
use super::rules::{CLUSTER_CHECKS, RULES};
use super::source::{self, Chunk, Document, InputError, InputFile};
use super::yaml::parse_document;

/// The config file searched upward from the first input.
pub const CONFIG_FILE: &str = ".affinity-lint.yaml";

/// Rule selection and severities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Rule id -> severity, or `None` for "off".
    pub overrides: BTreeMap<String, Option<Severity>>,
}

impl Config {
    /// Reads `rules: {AL013: off|info|warning|error}`, `disable: [..]`, `enable: [..]`.
    pub fn parse(text: &str, file: &str) -> Result<Self, InputError> {
        let fail = |line: Option<usize>, message: String| InputError {
            file: file.to_string(),
            line,
            column: None,
            message,
        };
        let root = parse_document(text, 0).map_err(|e| fail(Some(e.line), e.message))?;
        let mut config = Config::default();
        let Some(root) = root else { return Ok(config) };
        for (key, value) in root.entries() {
            match key.as_str() {
                Some("rules") => {
                    for (id, level) in value.entries() {
                        let id = id.as_str().unwrap_or_default().to_ascii_uppercase();
                        check_id(&id).map_err(|e| fail(Some(value.line), e.to_string()))?;
                        let level = level.scalar_text().unwrap_or_default();
                        let severity = match level {
                            "off" | "false" => None,
                            other => Some(Severity::parse(other).ok_or_else(|| fail(Some(value.line), format!("unknown level {other:?} for {id} (use off, info, warning or error)")))?),
                        };
                        config.overrides.insert(id, severity);
                    }
                }
                Some(list @ ("disable" | "enable")) => {
                    for item in value.items() {
                        let id = item.as_str().unwrap_or_default().to_ascii_uppercase();
                        check_id(&id).map_err(|e| fail(Some(item.line), e.to_string()))?;
                        // `enable` turns the rule on at its own severities (see
                        // `apply_flags`); `disable` turns it off.
                        if list == "enable" {
                            if config.overrides.get(&id) == Some(&None) {
                                config.overrides.remove(&id);
                            }
                        } else {
                            config.overrides.insert(id, None);
                        }
                    }
                }
                Some(other) => {
                    return Err(fail(
                        Some(key.line),
                        format!("unknown setting {other:?} (expected rules, enable, disable)"),
                    ));
                }
                None => {}
            }
        }
        Ok(config)
    }

    /// Applies `--enable` / `--disable` lists on top.
    pub fn apply_flags(
        &mut self,
        enable: &[String],
        disable: &[String],
    ) -> Result<(), UnknownRule> {
        // Enabling turns a rule back on as configured (or at its own severities): it must not
        // pin the rule's default and so replace the severities a rule gives per finding
        // (AL010's frozen rollout is an error, its other findings warnings).
        for id in enable {
            let id = id.to_ascii_uppercase();
            check_id(&id)?;
            if self.overrides.get(&id) == Some(&None) {
                self.overrides.remove(&id);
            }
        }
        for id in disable {
            let id = id.to_ascii_uppercase();
            check_id(&id)?;
            self.overrides.insert(id, None);
        }
        Ok(())
    }

    /// The severity a rule runs at, `None` when off.
    pub fn severity(&self, id: &str, default: Severity) -> Option<Severity> {
        match self.overrides.get(id) {
            Some(s) => *s,
            None => Some(default),
        }
    }

    /// Finds `.affinity-lint.yaml` in `start` or a parent directory.
    pub fn discover(start: &Path) -> Option<PathBuf> {
        let dir = if start.is_dir() {
            start.to_path_buf()
        } else {
            start.parent()?.to_path_buf()
        };
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        dir.ancestors()
            .map(|d| d.join(CONFIG_FILE))
            .find(|p| p.is_file())
    }
}

/// A rule id that names no rule, offline or `--cluster`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown rule {id:?} (see `kubectl affinity-lint rules`)")]
pub struct UnknownRule {
    pub id: String,
}

fn check_id(id: &str) -> Result<&'static RuleMeta, UnknownRule> {
    super::rules::meta(id).ok_or_else(|| UnknownRule { id: id.to_string() })
}

/// The result of a run.
#[derive(Debug, Default)]
pub struct Outcome {
    pub findings: Vec<Finding>,
    pub errors: Vec<InputError>,
    pub files: usize,
    pub documents: usize,
    pub objects: usize,
}

/// How a run is set up.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    pub config: &'a Config,
    /// Keep each finding's source line (for text output).
    pub keep_source_lines: bool,
    /// With the nodes of the cluster (or, with `--contexts`, of each cluster), the
    /// `--cluster` rules run too, once per cluster.
    pub clusters: &'a [LiveCluster],
    /// Worker threads; 0 for one per core.
    pub jobs: usize,
    /// Texts to lint instead of the files (or stdin) of these names: what `--fix` has
    /// edited so far, and stdin read once.
    pub contents: Option<&'a BTreeMap<String, String>>,
    /// `--crd-dir`: the schemas custom resources are judged by (AL018).
    pub crds: &'a crate::crds::CrdSchemas,
}

/// One cluster's nodes for the `--cluster` rules.
#[derive(Debug, Clone, Default)]
pub struct LiveCluster {
    /// The context named in the findings, when several clusters are read.
    pub context: Option<String>,
    pub nodes: Vec<placekit_core::scheduler::NodeInfo>,
}

/// What linting one document yields.
#[derive(Debug, Default)]
struct DocumentResult {
    findings: Vec<Finding>,
    error: Option<InputError>,
    documents: usize,
    objects: usize,
    facts: GroupFactsSet,
}

/// The rules that also judge the objects of an input group together.
fn group_rules() -> impl Iterator<Item = (&'static RuleMeta, &'static dyn GroupRule)> {
    RULES.iter().filter_map(|r| Some((r.meta(), r.group()?)))
}

/// What is judged once an input group is read: every group rule's facts (in the order of
/// [`group_rules`]), the findings that stand only if no pod of the group is selected, and the
/// labels of the group's pods.
#[derive(Debug)]
struct GroupFactsSet {
    rules: Vec<Box<dyn GroupFacts>>,
    conditional: Vec<(Finding, UnlessSelected, TemplateKey)>,
    /// Each pod template of the group and the labels of its pods.
    pods: Vec<GroupPods>,
}

impl Default for GroupFactsSet {
    fn default() -> Self {
        GroupFactsSet {
            rules: group_rules().map(|(_, rule)| rule.new_facts()).collect(),
            conditional: Vec::new(),
            pods: Vec::new(),
        }
    }
}

impl GroupFactsSet {
    /// Appends facts collected later in input order.
    fn append(&mut self, later: GroupFactsSet) {
        for (facts, later) in self.rules.iter_mut().zip(later.rules) {
            facts.append(later);
        }
        self.conditional.extend(later.conditional);
        self.pods.extend(later.pods);
    }

    /// The conditional findings whose selector selects none of the group's pods.
    fn standing(&mut self) -> impl Iterator<Item = Finding> + '_ {
        let pods = &self.pods;
        self.conditional
            .drain(..)
            .filter_map(move |(finding, unless, own)| {
                (!pods.iter().any(|other| unless.selects_another(&own, other))).then_some(finding)
            })
    }
}

/// Lints one document: parse, objects, every rule on every view.
fn lint_chunk(file: &InputFile, chunk: Chunk, settings: &Settings<'_>) -> DocumentResult {
    let mut result = DocumentResult::default();
    let document = match source::parse_chunk(&file.name, chunk) {
        Ok(Some(mut d)) => {
            d.kustomize = file.kustomize;
            d
        }
        Ok(None) => return result,
        Err(e) => {
            result.error = Some(e);
            return result;
        }
    };
    result.documents = 1;
    let objects = source::objects(&file.name, &document);
    result.objects = objects.iter().filter(|o| o.view == 0).count();
    let config = settings.config;
    let mut raw: Vec<RawFinding> = Vec::new();
    for object in &objects {
        let ignored = object.ignored_rules();
        let cx = Context {
            object,
            crds: settings.crds,
        };
        let ignores = |id: &str| ignored.iter().any(|i| i == id);
        result.facts.pods.extend(GroupPods::of(object));
        if object.view == 0 {
            for ((meta, rule), facts) in group_rules().zip(&mut result.facts.rules) {
                if !ignores(meta.id) {
                    rule.collect(object, &file.group, facts.as_mut());
                }
            }
        }
        for rule in RULES {
            let meta = rule.meta();
            if rule.scope() == Scope::Object && object.view != 0 {
                continue;
            }
            let Some(configured) = config.severity(meta.id, meta.severity) else {
                continue;
            };
            if ignores(meta.id) {
                continue;
            }
            raw.clear();
            rule.check(&cx, &mut raw);
            for mut f in raw.drain(..) {
                // A rule's own severity variant (AL008) applies unless the config changed it.
                let severity = match (f.severity, config.overrides.contains_key(meta.id)) {
                    (Some(s), false) => s,
                    _ => configured,
                };
                let text_fix = f.text_fix.take();
                let no_text_fix = f.no_text_fix;
                let unless_selected = f.unless_selected.take();
                let mut found = finding(meta.id, severity, object, f, settings.keep_source_lines);
                attach_fix(&mut found, &document, text_fix);
                if found.fixable.is_none()
                    && let Some(why) = no_text_fix
                {
                    // Helm output is fixed in its template, whatever the layout here.
                    if document.helm_source.is_some() {
                        found.fixable = Some(Fixable::Template);
                    } else {
                        found.fixable = Some(Fixable::Manual);
                        found.manual_reason = Some(why);
                    }
                }
                match unless_selected {
                    Some(unless) => {
                        result
                            .facts
                            .conditional
                            .push((found, unless, template_key(object)))
                    }
                    None => result.findings.push(found),
                }
            }
        }
    }
    for live in settings.clusters {
        let mut cluster: Vec<Finding> = CLUSTER_CHECKS
            .iter()
            .flat_map(|check| {
                check.check(&objects, &live.nodes, &|id, default| {
                    config.severity(id, default)
                })
            })
            .collect();
        for f in &mut cluster {
            if settings.keep_source_lines {
                f.source_line = document.line(f.line).map(str::to_string);
            }
            f.context.clone_from(&live.context);
        }
        result.findings.extend(cluster);
    }
    result
}

/// Checks a rule's proposed fix against the document; a fix for Helm output is only
/// pointed at (the template is what to edit), one for relaxed YAML is dropped.
fn attach_fix(finding: &mut Finding, document: &Document, fix: Option<TextFix>) {
    let Some(fix) = fix else { return };
    if document.helm_source.is_some() {
        finding.fixable = Some(Fixable::Template);
        return;
    }
    if document.relaxed {
        finding.fixable = Some(Fixable::Manual);
        finding.manual_reason = Some(
            "the document's indentation is read leniently, as kubectl reads it; --fix edits only strict YAML",
        );
        return;
    }
    let Some(edits) = super::fix::verify(document, &fix) else {
        finding.fixable = Some(Fixable::Manual);
        finding.manual_reason = Some(
            "the edit would not read back as exactly the intended object here (anchors, merge keys or an unusual layout)",
        );
        return;
    };
    finding.fixable = Some(if fix.safe {
        Fixable::Safe
    } else {
        Fixable::Unsafe
    });
    finding.edit = Some(FileFix {
        safe: fix.safe,
        title: fix.title,
        edits: edits
            .into_iter()
            .map(|(s, e, t)| (s + document.byte_offset, e + document.byte_offset, t))
            .collect(),
    });
}

/// Files up to this size are read by the worker that lints them; bigger ones (and
/// stdin) are split into documents by the reading thread and shared among the workers.
const WHOLE_FILE_BYTES: u64 = 1 << 20;

/// Work for a lint worker.
enum Job {
    /// Read and lint a small file.
    File(usize),
    /// Lint one document of a big file.
    Document(usize, usize, Chunk),
}

/// What one input yields, handed over in the report's order: its input errors, its
/// findings sorted by position, and what was read.
#[derive(Debug, Default)]
pub struct FileReport {
    pub errors: Vec<InputError>,
    pub findings: Vec<Finding>,
    pub documents: usize,
    pub objects: usize,
}

/// Reads every input and lints it, collecting the whole report (for JSON, SARIF and
/// GitLab output, and for `--fix`); see [`lint_paths_streaming`].
pub fn lint_paths(inputs: &[PathBuf], recursive: bool, settings: &Settings<'_>) -> Outcome {
    let mut outcome = Outcome::default();
    let files = lint_paths_streaming(inputs, recursive, settings, &mut |report| {
        outcome.errors.extend(report.errors);
        outcome.findings.extend(report.findings);
        outcome.documents += report.documents;
        outcome.objects += report.objects;
    });
    outcome.files = files;
    // One order for every collected report: AL011's findings among their file's.
    outcome.findings.sort_by(|a, b| {
        (&a.file, a.line, a.column, &a.rule).cmp(&(&b.file, b.line, b.column, &b.rule))
    });
    outcome
}

/// A worker's or reader's news for the thread that puts the report in order.
enum Done {
    /// One document linted.
    Document(usize, usize, DocumentResult),
    /// A file read to its end (or refused part-way): how many documents it had.
    Read(usize, usize, Option<InputError>),
}

/// A file whose results are arriving.
#[derive(Default)]
struct Arriving {
    /// Known once the file has been read to its end.
    documents: Option<usize>,
    /// Documents linted so far.
    received: usize,
    /// Linted documents not yet reported, by index.
    pending: BTreeMap<usize, DocumentResult>,
    /// Documents already reported (a big file is reported as it is read).
    reported: usize,
    /// The group rules' facts of the reported documents, in document order.
    facts: Vec<GroupFactsSet>,
    read_error: Option<InputError>,
}

impl Arriving {
    fn complete(&self) -> bool {
        self.documents == Some(self.received)
    }

    /// The next document in order, if it has been linted: its report, its facts kept.
    fn next_document(&mut self) -> Option<FileReport> {
        let mut result = self.pending.remove(&self.reported)?;
        self.reported += 1;
        self.facts.push(std::mem::take(&mut result.facts));
        Some(document_report(result))
    }
}

/// Reads every input (files, directories, stdin) and lints it, streaming: files are read
/// one document at a time and the documents linted by one worker per core, so memory
/// holds a few documents, never the input. Many small files are spread over the workers
/// whole; a big file's documents are. Each file's report is handed to `emit` as soon as it
/// and every file before it (by name) are done: text output starts before the input
/// ends, and its order does not depend on timing. Returns the number of files.
pub fn lint_paths_streaming(
    inputs: &[PathBuf],
    recursive: bool,
    settings: &Settings<'_>,
    emit: &mut dyn FnMut(FileReport),
) -> usize {
    let (paths, path_errors) = source::collect_paths(inputs, recursive);
    if !path_errors.is_empty() {
        emit(FileReport {
            errors: path_errors,
            ..FileReport::default()
        });
    }
    let files: Vec<InputFile> = paths
        .into_iter()
        .map(|path| {
            let mut file = InputFile::new(path);
            file.content = settings
                .contents
                .and_then(|c| c.get(&file.name))
                .map(|t| std::sync::Arc::from(t.as_str()));
            file
        })
        .collect();
    // Small files are linted whole by one worker and reported whole; a big one (or stdin) is
    // read a document at a time, its documents linted by every worker and reported as they
    // come in order, so neither its text nor its findings are ever all in memory.
    let whole: Vec<bool> = files
        .iter()
        .map(|file| match &file.content {
            Some(text) => text.len() as u64 <= WHOLE_FILE_BYTES,
            None => {
                file.path.as_os_str() != "-"
                    && std::fs::metadata(&file.path)
                        .is_ok_and(|m| m.is_file() && m.len() <= WHOLE_FILE_BYTES)
            }
        })
        .collect();
    let jobs = match settings.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let (job_sender, job_receiver) = mpsc::sync_channel::<Job>(jobs * 4);
    // Unbounded: results are small next to the documents, and a worker must never wait
    // for the thread that orders them (which may be waiting for an earlier file).
    let (done_sender, done_receiver) = mpsc::channel::<Done>();
    let read =
        |file_index: usize, done: &mpsc::Sender<Done>, emit: &mut dyn FnMut(usize, Chunk)| {
            let mut documents = 0;
            let outcome = source::read_chunks(&files[file_index], |chunk| {
                emit(documents, chunk);
                documents += 1;
            });
            let _ = done.send(Done::Read(file_index, documents, outcome.err()));
        };
    std::thread::scope(|scope| {
        // Only the workers hold the receiver: should they all stop (a panic), it is dropped
        // and the reading thread's next send fails instead of waiting forever.
        let job_receiver = std::sync::Arc::new(Mutex::new(job_receiver));
        for _ in 0..jobs {
            let job_receiver = job_receiver.clone();
            let done = done_sender.clone();
            let (files, read) = (&files, &read);
            scope.spawn(move || {
                let record = |file_index: usize, doc_index: usize, chunk: Chunk| {
                    let result = lint_chunk(&files[file_index], chunk, settings);
                    let _ = done.send(Done::Document(file_index, doc_index, result));
                };
                loop {
                    let next = job_receiver.lock().expect("no worker panics").recv();
                    match next {
                        Ok(Job::Document(file_index, doc_index, chunk)) => {
                            record(file_index, doc_index, chunk)
                        }
                        Ok(Job::File(file_index)) => {
                            read(file_index, &done, &mut |doc_index, chunk| {
                                record(file_index, doc_index, chunk)
                            })
                        }
                        Err(_) => return,
                    }
                }
            });
        }
        drop(job_receiver);
        let (files, read, done, whole) = (&files, &read, done_sender.clone(), &whole);
        scope.spawn(move || {
            for (file_index, &whole) in whole.iter().enumerate() {
                // A send fails only when every worker has stopped: the scope then re-raises
                // their panic.
                if whole {
                    if job_sender.send(Job::File(file_index)).is_err() {
                        break;
                    }
                } else {
                    read(file_index, &done, &mut |doc_index, chunk| {
                        let _ = job_sender.send(Job::Document(file_index, doc_index, chunk));
                    });
                }
            }
        });
        drop(done_sender);
        put_in_order(files, whole, settings, done_receiver, emit);
    });
    files.len()
}

/// Gathers the results of the workers and hands the reports to `emit` in the order of the
/// files' names: a small file's (`whole`) once it and the files before it are done, a big
/// file's document by document as soon as the documents before them are. AL011 judges a
/// PodDisruptionBudget over every pod of its group (directory or stream), so its findings
/// follow the group's last file.
fn put_in_order(
    files: &[InputFile],
    whole: &[bool],
    settings: &Settings<'_>,
    done: mpsc::Receiver<Done>,
    emit: &mut dyn FnMut(FileReport),
) {
    let group_severities: Vec<Option<Severity>> = group_rules()
        .map(|(meta, _)| settings.config.severity(meta.id, meta.severity))
        .collect();
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| files[a].name.cmp(&files[b].name));
    // Each group's files in name order: its facts are put together in that order (and in
    // document order within a file), so AL011's messages never depend on timing.
    let mut group_files: HashMap<&str, Vec<usize>> = HashMap::new();
    for &index in &order {
        group_files
            .entry(&files[index].group)
            .or_default()
            .push(index);
    }
    let mut unfinished_in_group: HashMap<&str, usize> =
        group_files.iter().map(|(g, f)| (*g, f.len())).collect();
    let mut file_facts: Vec<Vec<GroupFactsSet>> = (0..files.len()).map(|_| Vec::new()).collect();
    // File index -> the group rules' findings for the group that file ends.
    let mut group_findings: HashMap<usize, Vec<Finding>> = HashMap::new();
    let mut arriving: Vec<Arriving> = (0..files.len()).map(|_| Arriving::default()).collect();
    let mut next = 0;
    for news in done {
        let file_index = match news {
            Done::Document(file_index, doc_index, result) => {
                arriving[file_index].pending.insert(doc_index, result);
                arriving[file_index].received += 1;
                file_index
            }
            Done::Read(file_index, documents, error) => {
                arriving[file_index].documents = Some(documents);
                arriving[file_index].read_error = error;
                file_index
            }
        };
        if arriving[file_index].complete() {
            let group = files[file_index].group.as_str();
            let file = &mut arriving[file_index];
            // A small file refused part-way (binary, too big) is reported, not half-linted.
            if file.read_error.is_none() || !whole[file_index] {
                let rest = file
                    .pending
                    .values_mut()
                    .map(|r| std::mem::take(&mut r.facts));
                let mut facts = std::mem::take(&mut file.facts);
                facts.extend(rest);
                file_facts[file_index] = facts;
            }
            let unfinished = unfinished_in_group
                .get_mut(group)
                .expect("every group counted");
            *unfinished -= 1;
            if *unfinished == 0 {
                let mut facts = GroupFactsSet::default();
                for &index in &group_files[group] {
                    for part in std::mem::take(&mut file_facts[index]) {
                        facts.append(part);
                    }
                }
                let mut findings: Vec<Finding> = facts.standing().collect();
                findings.extend(
                    group_rules()
                        .zip(&facts.rules)
                        .zip(&group_severities)
                        .filter_map(|(((_, rule), facts), severity)| {
                            Some(rule.judge(facts.as_ref(), (*severity)?))
                        })
                        .flatten(),
                );
                if let (false, Some(&last)) = (findings.is_empty(), group_files[group].last()) {
                    findings.sort_by(|a, b| {
                        (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column))
                    });
                    group_findings.insert(last, findings);
                }
            }
        }
        while let Some(&index) = order.get(next) {
            let file = &mut arriving[index];
            if !whole[index] {
                while let Some(report) = file.next_document() {
                    emit(report);
                }
            }
            if !file.complete() {
                break;
            }
            let mut report = file_report(std::mem::take(file), whole[index]);
            // The group's judgements follow its last file, in file order: a one-file group
            // (stdin, a lone file) keeps its findings by line.
            if let Some(findings) = group_findings.remove(&index) {
                report.findings.extend(findings);
                report.findings.sort_by(|a, b| {
                    (&a.file, a.line, a.column, &a.rule).cmp(&(&b.file, b.line, b.column, &b.rule))
                });
            }
            emit(report);
            next += 1;
        }
    }
}

/// One document's report, its findings by position.
fn document_report(result: DocumentResult) -> FileReport {
    let mut report = FileReport {
        documents: result.documents,
        objects: result.objects,
        findings: result.findings,
        errors: result.error.into_iter().collect(),
    };
    report
        .findings
        .sort_by(|a, b| (a.line, a.column, &a.rule).cmp(&(b.line, b.column, &b.rule)));
    report
}

/// What is left of a complete file's report: its (remaining) documents' results in order,
/// its findings by position, and its read error. A small file refused part-way reports only
/// the error; a big one has reported what it linted as it went, and ends with the error.
fn file_report(file: Arriving, whole: bool) -> FileReport {
    let mut report = FileReport::default();
    if whole && file.read_error.is_some() {
        report.errors.extend(file.read_error);
        return report;
    }
    for (_, result) in file.pending {
        report.documents += result.documents;
        report.objects += result.objects;
        report.findings.extend(result.findings);
        report.errors.extend(result.error);
    }
    report.errors.extend(file.read_error);
    report
        .findings
        .sort_by(|a, b| (a.line, a.column, &a.rule).cmp(&(b.line, b.column, &b.rule)));
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_file_and_flags() {
        let mut c = Config::parse(
            "rules:\n  AL013: off\n  al014: error\ndisable: [AL012]\n",
            "c.yaml",
        )
        .unwrap();
        assert_eq!(c.severity("AL013", Severity::Warning), None);
        assert_eq!(c.severity("AL014", Severity::Info), Some(Severity::Error));
        assert_eq!(c.severity("AL012", Severity::Warning), None);
        assert_eq!(c.severity("AL001", Severity::Error), Some(Severity::Error));
        c.apply_flags(&["AL013".into()], &["AL001".into()]).unwrap();
        assert_eq!(
            c.severity("AL013", Severity::Warning),
            Some(Severity::Warning)
        );
        assert_eq!(c.severity("AL001", Severity::Error), None);
        assert!(Config::parse("rules: {AL999: off}\n", "c.yaml").is_err());
        assert!(Config::parse("rules: {AL001: loud}\n", "c.yaml").is_err());
        assert_eq!(
            c.apply_flags(&[], &["nope".into()]),
            Err(UnknownRule { id: "NOPE".into() })
        );
        // Enabling a `--cluster` rule runs it at its own severity (it once turned it off).
        c.apply_flags(&["al104".into()], &[]).unwrap();
        assert_eq!(
            c.severity("AL104", Severity::Warning),
            Some(Severity::Warning)
        );
    }
}
