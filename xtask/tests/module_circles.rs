//! No import circle inside a crate: a source file that imports (a `use`, or a path written
//! out in the code) from another file of its crate must not be imported back by it, directly
//! or through others. Cargo already refuses circles between crates; this holds the same line
//! one level down, where the compiler allows them (docs/design.md: "who may import whom").
//!
//! The files are found as the compiler finds them, from each crate root's `mod` declarations;
//! test code (`#[cfg(test)]`, `tests.rs`) is left out, since tests may look anywhere. A module
//! is made of its submodules, so its own use of them is its structure, not an import; a
//! submodule's use of its ancestors is one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

mod support;
use support::is_test_only;

/// A module's path from its crate root (`["mutation", "pipeline"]`); the root is `[]`.
type ModulePath = Vec<String>;

/// One crate as its `mod` declarations draw it.
#[derive(Default)]
#[allow(missing_debug_implementations)]
struct CrateTree {
    /// Every module, inline ones included, with the file it is written in.
    modules: BTreeMap<ModulePath, PathBuf>,
    /// Each file's syntax tree and the module it is.
    files: Vec<(PathBuf, ModulePath, syn::File)>,
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl CrateTree {
    fn read(root: &Path) -> Self {
        let mut tree = Self::default();
        tree.add_file(
            root,
            Vec::new(),
            root.parent()
                .expect("a crate root has a folder")
                .to_path_buf(),
        );
        tree
    }

    /// Adds `file` as module `module`, whose child files live in `children_dir`.
    fn add_file(&mut self, file: &Path, module: ModulePath, children_dir: PathBuf) {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        self.modules.insert(module.clone(), file.to_path_buf());
        self.add_items(file, &module, &children_dir, &syntax.items);
        self.files.push((file.to_path_buf(), module, syntax));
    }

    fn add_items(
        &mut self,
        file: &Path,
        module: &ModulePath,
        children_dir: &Path,
        items: &[syn::Item],
    ) {
        for item in items {
            let syn::Item::Mod(declared) = item else {
                continue;
            };
            if is_test_only(&declared.attrs) {
                continue;
            }
            let name = declared.ident.to_string();
            let mut child = module.clone();
            child.push(name.clone());
            match &declared.content {
                Some((_, inline)) => {
                    self.modules.insert(child.clone(), file.to_path_buf());
                    self.add_items(file, &child, &children_dir.join(&name), inline);
                }
                None => {
                    let flat = children_dir.join(format!("{name}.rs"));
                    let (path, grandchildren) = if flat.is_file() {
                        (flat, children_dir.join(&name))
                    } else {
                        (
                            children_dir.join(&name).join("mod.rs"),
                            children_dir.join(&name),
                        )
                    };
                    self.add_file(&path, child, grandchildren);
                }
            }
        }
    }

    /// The file a path names, by the longest prefix of it that is a module.
    fn file_of(&self, absolute: &[String]) -> Option<&PathBuf> {
        (0..=absolute.len())
            .rev()
            .find_map(|n| self.modules.get(&absolute[..n]))
    }
}

/// The paths one file names, made absolute from its crate root.
#[allow(missing_debug_implementations)]
struct PathCollector<'a> {
    tree: &'a CrateTree,
    /// The module being read (inline modules push onto it).
    module: ModulePath,
    /// Names a `use` brought into this file, to what they name.
    aliases: BTreeMap<String, ModulePath>,
    found: Vec<ModulePath>,
}

impl PathCollector<'_> {
    fn absolute(&self, segments: &[String]) -> Option<ModulePath> {
        let first = segments.first()?;
        let mut base = self.module.clone();
        let rest = match first.as_str() {
            "crate" => {
                base.clear();
                &segments[1..]
            }
            "self" => &segments[1..],
            "super" => {
                let supers = segments.iter().take_while(|s| *s == "super").count();
                for _ in 0..supers {
                    base.pop()?;
                }
                &segments[supers..]
            }
            _ => {
                if let Some(target) = self.aliases.get(first) {
                    base = target.clone();
                    &segments[1..]
                } else {
                    let mut child = base.clone();
                    child.push(first.clone());
                    if !self.tree.modules.contains_key(&child) {
                        // Another crate's path, or an item of this module.
                        return None;
                    }
                    segments
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let mut full = prefix.clone();
                if name.ident != "self" {
                    full.push(name.ident.to_string());
                }
                self.used(&full, full.last().cloned());
            }
            syn::UseTree::Rename(rename) => {
                let mut full = prefix.clone();
                if rename.ident != "self" {
                    full.push(rename.ident.to_string());
                }
                self.used(&full, Some(rename.rename.to_string()));
            }
            syn::UseTree::Glob(_) => self.used(prefix, None),
            syn::UseTree::Group(group) => {
                for item in &group.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }

    fn used(&mut self, segments: &[String], bound_as: Option<String>) {
        if let Some(absolute) = self.absolute(segments) {
            if let Some(name) = bound_as {
                self.aliases.insert(name, absolute.clone());
            }
            self.found.push(absolute);
        }
    }
}

impl<'ast> Visit<'ast> for PathCollector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, declared: &'ast syn::ItemMod) {
        // A `mod` line is a declaration, not an import; an inline module's body is read in
        // its own module.
        if let Some((_, items)) = &declared.content {
            self.module.push(declared.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, used: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &used.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1
            && let Some(absolute) = self.absolute(&segments)
        {
            self.found.push(absolute);
        }
        syn::visit::visit_path(self, path);
    }
}

/// Each file of the crate rooted at `root`, with the files of its crate it imports from.
fn imports(root: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let tree = CrateTree::read(root);
    let mut graph = BTreeMap::new();
    for (file, module, syntax) in &tree.files {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let mut collector = PathCollector {
            tree: &tree,
            module: module.clone(),
            aliases: BTreeMap::new(),
            found: Vec::new(),
        };
        // Twice: the second pass follows names the file's own `use` lines bound, wherever
        // in the file they stand.
        collector.visit_file(syntax);
        collector.found.clear();
        collector.visit_file(syntax);
        let targets: BTreeSet<PathBuf> = collector
            .found
            .iter()
            // A module is made of its submodules: its use of them (`mod x; pub use x::Y`) is
            // its structure, not an import. A submodule's use of an ancestor (`super::`) is.
            .filter(|p| !p.starts_with(module) || p.len() == module.len())
            .filter_map(|p| tree.file_of(p))
            .filter(|target| *target != file && target.file_name().is_none_or(|n| n != "tests.rs"))
            .cloned()
            .collect();
        graph.insert(file.clone(), targets);
    }
    graph
}

/// A circle through `start`, if its imports lead back to it.
fn circle_through(
    graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
    start: &PathBuf,
) -> Option<Vec<PathBuf>> {
    let mut stack = vec![(start.clone(), vec![start.clone()])];
    let mut seen = BTreeSet::new();
    while let Some((file, trail)) = stack.pop() {
        for next in graph.get(&file).into_iter().flatten() {
            if next == start {
                return Some(trail.clone());
            }
            if seen.insert(next.clone()) {
                let mut longer = trail.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

fn crate_roots() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace");
    let mut roots = Vec::new();
    for folder in ["shared", "plugins"] {
        let mut members: Vec<PathBuf> = std::fs::read_dir(workspace.join(folder))
            .expect("the workspace's folders")
            .map(|entry| entry.expect("a folder entry").path())
            .collect();
        members.sort();
        for member in members {
            for root in ["src/lib.rs", "src/main.rs"] {
                if member.join(root).is_file() {
                    roots.push(member.join(root));
                }
            }
        }
    }
    roots.push(workspace.join("xtask/src/lib.rs"));
    roots.push(workspace.join("xtask/src/main.rs"));
    roots
}

#[test]
fn no_file_imports_one_that_imports_it_back() {
    let roots = crate_roots();
    assert!(roots.len() >= 9, "the crate roots: {roots:?}");
    let mut circles = Vec::new();
    for root in &roots {
        let graph = imports(root);
        let mut reported: BTreeSet<PathBuf> = BTreeSet::new();
        for file in graph.keys() {
            if reported.contains(file) {
                continue;
            }
            if let Some(circle) = circle_through(&graph, file) {
                reported.extend(circle.iter().cloned());
                let names: Vec<String> = circle
                    .iter()
                    .map(|f| {
                        f.strip_prefix(root.parent().unwrap())
                            .unwrap_or(f)
                            .display()
                            .to_string()
                    })
                    .collect();
                circles.push(format!("{}: {}", root.display(), names.join(" -> ")));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn a_circle_is_found() {
    // The check itself: two files that import each other are a circle.
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(dir.path().join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(
        dir.path().join("a.rs"),
        "use crate::b::B;\npub struct A(B);\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.rs"),
        "pub struct B;\nfn f() -> Option<super::a::A> { None }\n",
    )
    .unwrap();
    let graph = imports(&dir.path().join("lib.rs"));
    let circle = circle_through(&graph, &dir.path().join("a.rs")).expect("a circle");
    assert_eq!(circle.len(), 2, "{circle:?}");
    // And test code does not count.
    std::fs::write(
        dir.path().join("b.rs"),
        "pub struct B;\n#[cfg(test)]\nmod tests { use crate::a::A; }\n",
    )
    .unwrap();
    let graph = imports(&dir.path().join("lib.rs"));
    assert_eq!(circle_through(&graph, &dir.path().join("a.rs")), None);
}
