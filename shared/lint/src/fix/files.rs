//! `--fix` and `--diff`: apply the verified fixes of a lint run, lint again, repeat while
//! fixes apply (a merge can make room for another fix), and say what changed and what is
//! left. Every input file is opened and read once, before the first lint, and held
//! ([`HeldFile`]): every round lints those texts, and a fixed file is written only at the
//! end, through its held directory, and only if it is still the file that was read (a
//! manifest swapped for a symlink meanwhile is never written through); stdin's fixed text
//! goes back to the caller.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::engine::{Finding, Fixable, Outcome, Settings, lint_paths};
use crate::fix::apply;
use crate::source::{InputFile, MAX_FILE_BYTES, collect_paths};
use placekit_core::held_file::HeldFile;

/// Rounds of fix-then-lint before giving up on fixes that keep appearing.
const MAX_ROUNDS: usize = 5;

/// The name stdin's text goes by.
pub const STDIN: &str = "<stdin>";

/// Which fixes to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixMode {
    pub unsafe_fixes: bool,
    /// Write the fixed files (`--fix`), or only report (`--diff`).
    pub write: bool,
}

/// A fix that was applied.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Applied {
    pub file: String,
    pub line: usize,
    pub rule: String,
    pub title: String,
}

/// What a fix run did.
#[derive(Debug, Default)]
pub struct FixOutcome {
    /// The lint of the fixed text: what is left.
    pub remaining: Outcome,
    pub applied: Vec<Applied>,
    /// File name -> (original text, fixed text), for files that changed.
    pub changed: BTreeMap<String, (String, String)>,
    /// Problems writing a fixed file.
    pub write_errors: Vec<String>,
    /// Per file, the rounds of fixes applied.
    history: BTreeMap<String, Vec<Round>>,
}

impl FixOutcome {
    /// A line of a file's fixed text as the line of the file before the fixes (for
    /// `--diff`, whose fixed text is never written).
    pub fn line_before_fixes(&self, file: &str, line: usize) -> usize {
        self.history
            .get(file)
            .map_or(line, |rounds| original_line(rounds, line))
    }

    /// Findings left that an unsafe fix would solve (`--unsafe-fixes`).
    pub fn unsafe_left(&self) -> usize {
        self.remaining
            .findings
            .iter()
            .filter(|f| f.fixable == Some(Fixable::Unsafe))
            .count()
    }

    /// The unified diff of every changed file, with git's `a/` and `b/` prefixes.
    /// What `--fix` (`mode.write`) or `--diff` tells on stderr: each fix made or that would
    /// be made, each write that failed, each finding left for a Helm template or for a hand,
    /// and the count. `diff`: lines are those of the files as they are (not yet fixed).
    /// File names, titles and reasons are escaped: a file name from a pull request cannot
    /// drive the terminal.
    pub fn summary(&self, mode: FixMode, diff: bool) -> String {
        let verb = if mode.write { "fixed" } else { "would fix" };
        let mut summary = String::new();
        for a in &self.applied {
            summary.push_str(&format!(
                "{}:{}: {verb} {}: {}\n",
                placekit_core::text::escaped(&a.file),
                a.line,
                a.rule,
                placekit_core::text::escaped(&a.title)
            ));
        }
        for e in &self.write_errors {
            summary.push_str(&format!(
                "error: not fixed: {}\n",
                placekit_core::text::escaped(e)
            ));
        }
        let left = |kind: Fixable| {
            self.remaining
                .findings
                .iter()
                .filter(move |f| f.fixable == Some(kind))
        };
        for f in left(Fixable::Template) {
            summary.push_str(&format!(
                "{}:{}: not edited: {} is Helm output; fix the template {}\n",
                placekit_core::text::escaped(&f.file),
                f.line,
                f.rule,
                placekit_core::text::escaped(f.helm_template.as_deref().unwrap_or("?"))
            ));
        }
        let manual: Vec<&Finding> = left(Fixable::Manual).collect();
        for f in &manual {
            // With --fix the file on disk is the fixed one; --diff speaks of the file as it is.
            let line = if diff {
                self.line_before_fixes(&f.file, f.line)
            } else {
                f.line
            };
            summary.push_str(&format!(
                "{}:{}: no automatic fix for {}: {}; apply the suggested change by hand\n",
                placekit_core::text::escaped(&f.file),
                line,
                f.rule,
                f.manual_reason.unwrap_or("not in this layout")
            ));
        }
        let unsafe_left = self.unsafe_left();
        let mut notes = Vec::new();
        if unsafe_left > 0 && !mode.unsafe_fixes {
            notes.push(format!("{unsafe_left} more with --unsafe-fixes"));
        }
        if !manual.is_empty() {
            notes.push(format!("{} to fix by hand", manual.len()));
        }
        summary.push_str(&format!(
            "{verb} {} in {}{}\n",
            placekit_core::text::count(self.applied.len(), "problem"),
            placekit_core::text::count(self.changed.len(), "file"),
            notes.iter().map(|n| format!("; {n}")).collect::<String>()
        ));
        summary
    }

    pub fn diff(&self) -> String {
        let mut out = String::new();
        for (name, (before, after)) in &self.changed {
            let diff = similar::TextDiff::from_lines(before, after);
            out.push_str(
                &diff
                    .unified_diff()
                    .context_radius(3)
                    // `a/` and `b/` as git writes them, so `git apply` and `patch -p1`
                    // find the file from the repository's root.
                    .header(&prefixed("a", name), &prefixed("b", name))
                    .to_string(),
            );
        }
        out
    }
}

/// `a/deploy/x.yaml` for a relative path (as git writes it); an absolute one as it is.
fn prefixed(side: &str, name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("{side}/{name}")
    }
}

/// Lints, fixes and lints again. `stdin` is stdin's text when `-` is an input.
pub fn fix(
    inputs: &[PathBuf],
    recursive: bool,
    settings: &Settings<'_>,
    stdin: Option<String>,
    mode: FixMode,
) -> FixOutcome {
    let mut contents: BTreeMap<String, String> = BTreeMap::new();
    let mut originals: BTreeMap<String, String> = BTreeMap::new();
    if let Some(text) = stdin {
        originals.insert(STDIN.into(), text.clone());
        contents.insert(STDIN.into(), text);
    }
    // Each file is read once, here, and held: no round reads it again by name, and the
    // write goes to the file that was read or nowhere.
    let mut held: BTreeMap<String, HeldFile> = BTreeMap::new();
    let mut unreadable: BTreeMap<String, String> = BTreeMap::new();
    let mut read_errors = Vec::new();
    let (paths, _) = collect_paths(inputs, recursive);
    for path in paths.iter().filter(|p| p.as_os_str() != "-") {
        let name = InputFile::new(path.clone()).name;
        match HeldFile::open(path, MAX_FILE_BYTES) {
            Ok((file, text)) => {
                originals.insert(name.clone(), text.clone());
                contents.insert(name.clone(), text);
                held.insert(name, file);
            }
            // The lint reports why it cannot be read; nothing of it is fixed.
            Err(e) => {
                unreadable.insert(name, e.to_string());
            }
        }
    }
    let mut applied = Vec::new();
    // Per file, the rounds of fixes applied to it so far.
    let mut history: BTreeMap<String, Vec<Round>> = BTreeMap::new();
    let mut remaining = Outcome::default();
    for round in 0..=MAX_ROUNDS {
        let run = Settings {
            contents: Some(&contents),
            ..*settings
        };
        remaining = lint_paths(inputs, recursive, &run);
        if round == MAX_ROUNDS {
            break;
        }
        let mut by_file: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
        for f in &remaining.findings {
            if f.edit.as_ref().is_some_and(|e| e.safe || mode.unsafe_fixes) {
                by_file.entry(f.file.as_str()).or_default().push(f);
            }
        }
        if by_file.is_empty() {
            break;
        }
        let mut progressed = false;
        for (name, findings) in by_file {
            // Only a text read above (or stdin) is fixed: a finding in a file that could not
            // be opened, or that a lint read under another name, is left as it is.
            let Some(text) = contents.get(name).cloned() else {
                if let Some(e) = unreadable.remove(name) {
                    read_errors.push(format!("{name}: {e}"));
                }
                continue;
            };
            let (edits, chosen) = non_conflicting(&findings);
            if edits.is_empty() {
                continue;
            }
            let fixed = apply(&text, &edits);
            progressed |= fixed != text;
            // A fix of a later round was found in the text earlier rounds edited: its line
            // is said as the file had it.
            let rounds = history.entry(name.to_string()).or_default();
            applied.extend(chosen.into_iter().map(|f| Applied {
                file: f.file.clone(),
                line: original_line(rounds, f.line),
                rule: f.rule.clone(),
                title: f.edit.as_ref().map(|e| e.title.clone()).unwrap_or_default(),
            }));
            rounds.push(Round {
                before: text,
                after: fixed.clone(),
                edits,
            });
            contents.insert(name.to_string(), fixed);
        }
        if !progressed {
            break;
        }
    }
    let mut changed: BTreeMap<String, (String, String)> = contents
        .iter()
        .filter_map(|(name, after)| {
            let before = originals.remove(name)?;
            (&before != after).then(|| (name.clone(), (before, after.clone())))
        })
        .collect();
    let mut write_errors = read_errors;
    if mode.write {
        let mut unwritten = Vec::new();
        for (name, (_, after)) in &changed {
            if name == STDIN {
                continue;
            }
            let written = match held.get(name) {
                Some(file) => file.replace(after).map_err(|e| e.to_string()),
                None => Err("it was not read as a file".to_string()),
            };
            if let Err(e) = written {
                write_errors.push(format!("{name}: {e}"));
                unwritten.push(name.clone());
            }
        }
        // What could not be written was not fixed: the report is about what is on disk.
        if !unwritten.is_empty() {
            applied.retain(|a| !unwritten.contains(&a.file));
            for name in &unwritten {
                if let Some((before, _)) = changed.remove(name) {
                    contents.insert(name.clone(), before);
                }
            }
            let run = Settings {
                contents: Some(&contents),
                ..*settings
            };
            remaining = lint_paths(inputs, recursive, &run);
        }
    }
    FixOutcome {
        remaining,
        applied,
        changed,
        write_errors,
        history,
    }
}

/// One round of fixes applied to a file: the text before, the edits (byte ranges of that
/// text and their replacements, in order) and the text after.
#[derive(Debug)]
struct Round {
    before: String,
    edits: Vec<(usize, usize, String)>,
    after: String,
}

/// Line `line` (1-based) of the text after `rounds`, as the line of the original text it
/// comes from: each round's edits are undone in turn, a line inside a replacement going
/// back to where the replaced text started.
fn original_line(rounds: &[Round], line: usize) -> usize {
    let mut line = line;
    for round in rounds.iter().rev() {
        let Some(mut offset) = line_start(&round.after, line) else {
            return line;
        };
        let mut delta: isize = 0;
        for (start, end, text) in &round.edits {
            let start_after = start.saturating_add_signed(delta);
            if offset < start_after {
                break;
            }
            if offset < start_after + text.len() {
                offset = start_after;
                break;
            }
            delta += text.len() as isize - (end - start) as isize;
        }
        line = line_of(&round.before, offset.saturating_add_signed(-delta));
    }
    line
}

/// The byte offset where 1-based line `line` of `text` starts.
fn line_start(text: &str, line: usize) -> Option<usize> {
    if line <= 1 {
        return Some(0);
    }
    text.match_indices('\n').nth(line - 2).map(|(i, _)| i + 1)
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The edits of the fixes that do not touch each other (in file order; a fix loses to an
/// earlier one it would overlap, and is retried in the next round).
fn non_conflicting<'f>(
    findings: &[&'f Finding],
) -> (Vec<(usize, usize, String)>, Vec<&'f Finding>) {
    let mut sorted: Vec<&Finding> = findings.to_vec();
    sorted.sort_by_key(|f| f.edit.as_ref().and_then(|e| e.edits.first()).map(|e| e.0));
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let mut edits = Vec::new();
    let mut chosen = Vec::new();
    for f in sorted {
        let Some(fix) = &f.edit else { continue };
        // Touching counts: two insertions at one place would interleave.
        let clashes = fix
            .edits
            .iter()
            .any(|(s, e, _)| taken.iter().any(|(ts, te)| s <= te && ts <= e));
        if clashes {
            continue;
        }
        taken.extend(fix.edits.iter().map(|(s, e, _)| (*s, *e)));
        edits.extend(fix.edits.iter().cloned());
        chosen.push(f);
    }
    edits.sort_by_key(|(s, e, _)| (*s, *e));
    (edits, chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_an_edited_text_are_said_as_the_original_had_them() {
        // Round 1 removes line 2 ("b"); round 2 finds "c" on line 2: it was line 3.
        let round = |before: &str, edits: Vec<(usize, usize, String)>| Round {
            after: apply(before, &edits),
            before: before.to_string(),
            edits,
        };
        let first = round("a\nb\nc\nd\n", vec![(2, 4, String::new())]);
        assert_eq!(first.after, "a\nc\nd\n");
        assert_eq!(original_line(std::slice::from_ref(&first), 2), 3);
        assert_eq!(original_line(std::slice::from_ref(&first), 1), 1);
        // Round 2 inserts a line before "d": "d" (line 4 now) was line 4 originally.
        let second = round(&first.after, vec![(4, 4, "x\n".into())]);
        assert_eq!(second.after, "a\nc\nx\nd\n");
        let rounds = [first, second];
        assert_eq!(original_line(&rounds, 4), 4);
        assert_eq!(original_line(&rounds, 2), 3);
        assert_eq!(original_line(&[], 7), 7);
    }
}
