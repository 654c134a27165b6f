//! No function of the product over 150 lines unless the comment above it says why it is one
//! piece: a line starting `Long on purpose:` (docs/design.md: "the size of a function"). A
//! long function is not forbidden, an unexplained one is: the reader who meets 200 lines
//! learns at once whether to look for the seams or to read it as one sequence.
//!
//! Every Rust file under the crates' `src/` folders counts (the test server and the
//! benchmark too: they are run by hand and read as much); test code (`#[cfg(test)]` modules,
//! `tests.rs`, `tests/` folders) is left out.

use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

mod support;
use support::is_test_only;

/// Longer than this, a function says why.
const MOST_LINES: usize = 150;

/// What a function's comment says when its length is its design.
const WHY: &str = "Long on purpose:";

/// A function over [`MOST_LINES`] lines whose comment does not say [`WHY`].
#[derive(Debug)]
struct Unexplained {
    name: String,
    /// 1-based, the line of `fn`.
    line: usize,
    lines: usize,
}

struct LongFunctions<'a> {
    /// The file's lines, to read the comment above a function (a `//` comment is not in the
    /// syntax tree).
    source: Vec<&'a str>,
    found: Vec<Unexplained>,
}

impl LongFunctions<'_> {
    fn judge(&mut self, name: &syn::Ident, sig: &syn::Signature, body: &syn::Block) {
        let first = sig.fn_token.span().start().line;
        let last = body.brace_token.span.close().end().line;
        let lines = last + 1 - first;
        if lines > MOST_LINES && !self.explained(first) {
            self.found.push(Unexplained {
                name: name.to_string(),
                line: first,
                lines,
            });
        }
    }

    /// Whether the comment and attributes right above line `first` (1-based) say why.
    fn explained(&self, first: usize) -> bool {
        self.source[..first.saturating_sub(1)]
            .iter()
            .rev()
            .map(|line| line.trim())
            .take_while(|line| {
                line.starts_with("//") || line.starts_with("#[") || line.ends_with(")]")
            })
            .any(|line| line.contains(WHY))
    }
}

impl<'ast> Visit<'ast> for LongFunctions<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_test_only(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        if is_test_only(&function.attrs) {
            return;
        }
        self.judge(&function.sig.ident, &function.sig, &function.block);
        syn::visit::visit_item_fn(self, function);
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        if is_test_only(&function.attrs) {
            return;
        }
        self.judge(&function.sig.ident, &function.sig, &function.block);
        syn::visit::visit_impl_item_fn(self, function);
    }

    fn visit_trait_item_fn(&mut self, function: &'ast syn::TraitItemFn) {
        if let Some(body) = &function.default {
            self.judge(&function.sig.ident, &function.sig, body);
        }
        syn::visit::visit_trait_item_fn(self, function);
    }
}

fn unexplained(text: &str) -> Vec<Unexplained> {
    let syntax = syn::parse_file(text).unwrap_or_else(|e| panic!("not Rust: {e}"));
    let mut visitor = LongFunctions {
        source: text.lines().collect(),
        found: Vec::new(),
    };
    visitor.visit_file(&syntax);
    visitor.found
}

/// The Rust files of every crate's `src/` folder, test files apart.
fn product_files() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace");
    let mut sources: Vec<PathBuf> = vec![workspace.join("tests/src"), workspace.join("xtask/src")];
    for folder in ["shared", "plugins"] {
        for member in std::fs::read_dir(workspace.join(folder)).expect("a crates folder") {
            let src = member.expect("a folder entry").path().join("src");
            if src.is_dir() {
                sources.push(src);
            }
        }
    }
    let mut files = Vec::new();
    while let Some(dir) = sources.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a folder entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if path.is_dir() {
                if name != "tests" {
                    sources.push(path);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_long_function_says_why_it_is_one_piece() {
    let files = product_files();
    assert!(files.len() > 100, "the product's files: {}", files.len());
    let mut report = Vec::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for f in unexplained(&text) {
            report.push(format!(
                "{}:{}: fn {} is {} lines",
                file.display(),
                f.line,
                f.name,
                f.lines
            ));
        }
    }
    assert!(
        report.is_empty(),
        "functions over {MOST_LINES} lines whose comment does not say `{WHY}` why they are one piece (split them, or say why):\n{}",
        report.join("\n")
    );
}

#[test]
fn a_long_function_is_found_and_its_reason_read() {
    // The check itself: a 151-line function is found, until a comment says why; a test
    // module's is never counted.
    let body = "    let _x = 1;\n".repeat(149);
    let long = format!("fn long() {{\n{body}}}\n");
    let found = unexplained(&long);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].name.as_str(), found[0].lines), ("long", 151));
    let explained =
        format!("/// Does one thing.\n///\n/// {WHY} one step per line.\n#[inline]\n{long}");
    assert!(unexplained(&explained).is_empty());
    // A reason two items up is not this function's.
    let elsewhere = format!("// {WHY} not this one.\nconst A: u8 = 1;\n\n{long}");
    assert_eq!(unexplained(&elsewhere).len(), 1);
    let short = format!("fn short() {{\n{}}}\n", "    let _x = 1;\n".repeat(148));
    assert!(unexplained(&short).is_empty());
    let in_tests = format!("#[cfg(test)]\nmod tests {{\n{long}}}\n");
    assert!(unexplained(&in_tests).is_empty());
    let in_impl = format!("struct S;\nimpl S {{\n{long}}}\n");
    assert_eq!(unexplained(&in_impl).len(), 1);
}
