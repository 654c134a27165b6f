//! Completion through kubectl: since kubectl 1.26, `kubectl nodelabel <TAB>` runs an
//! executable named `kubectl_complete-nodelabel` from PATH with the words typed after the
//! plugin's name, and prints what it answers in cobra's `__complete` protocol: one
//! candidate per line (`value<TAB>description`), then `:<directive>`. placekit ships that
//! executable as a two-line script ([`kubectl_helper_script`]) that calls the plugin's
//! hidden `__complete` command, answered here.
//!
//! [`locate`] is pure: it walks the words through the plugin's clap command tree (global
//! flags, `--flag=value`, short flags with attached values, `--`) and says what the last
//! word is: a subcommand, a flag, a flag's value or the n-th positional argument. The
//! plugin maps that to a [`Source`]; [`resolve`] fetches dynamic values (node names, label
//! keys, taints, extended resources, namespaces, pods) from the cluster of the flags typed
//! so far, with a short timeout, and never fails: a cluster that cannot be reached just
//! completes nothing.

use std::time::Duration;

use clap::{Arg, Command};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, ListParams};

mod kubectl_form;

use placekit_client::connect::ConnectionArgs;
use placekit_core::snapshot::SnapshotStore;

/// cobra's `ShellCompDirective` bits, as kubectl's completion scripts read them.
pub mod directive {
    /// Let the shell complete file names.
    pub const DEFAULT: u8 = 0;
    /// Something went wrong: complete nothing.
    pub const ERROR: u8 = 1;
    /// Do not add a space after the completion (`key=` goes on with its value).
    pub const NO_SPACE: u8 = 2;
    /// Do not fall back to file names.
    pub const NO_FILE_COMP: u8 = 4;
    /// Keep the candidates in the order given.
    pub const KEEP_ORDER: u8 = 32;
}

/// How long completion waits for the cluster: a prompt must never hang.
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(3);
/// Nodes read for completion; enough to name them on any cluster a person types names for.
const NODES_READ: u32 = 1000;

/// The executable kubectl runs to complete `kubectl <plugin> ...`, installed on PATH as
/// `kubectl_complete-<plugin>` (dashes in the plugin name become underscores).
pub fn kubectl_helper_script(plugin: &str, binary: &str) -> String {
    // Without the plugin (uninstalled, helper left behind) it completes nothing, quietly:
    // an error at every <TAB> would only garble the prompt.
    format!(
        "{}\n# Installed by `kubectl {plugin} completion kubectl --install`, removed by `... --uninstall`.\ncommand -v {binary} >/dev/null 2>&1 || exit 0\nexec {binary} __complete \"$@\"\n",
        helper_marker(plugin)
    )
}

/// The first two lines of every helper placekit writes, old or new: what `--install` may
/// overwrite and `--uninstall` may remove. Anything else at that path is someone else's.
fn helper_marker(plugin: &str) -> String {
    format!(
        "#!/bin/sh\n# kubectl (1.26+) runs this to complete `kubectl {plugin} ...`; keep it on PATH."
    )
}

/// The file name of the completion helper for `plugin` (`gpu-taint` ->
/// `kubectl_complete-gpu_taint`).
pub fn kubectl_helper_name(plugin: &str) -> String {
    format!("kubectl_complete-{}", plugin.replace('-', "_"))
}

/// What `completion` prints: a shell's completion script for the plugin's own binary and, for
/// bash, zsh and fish, for the `kubectl <plugin> …` form too (`kubectl_form.rs`); or
/// (`kubectl`) the `kubectl_complete-<plugin>` helper that makes `kubectl <plugin> <TAB>`
/// complete through kubectl's own completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionTarget {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
    /// The `kubectl_complete-<plugin>` helper, to put on PATH.
    Kubectl,
}

/// Prints the completion script of `target` for `binary` (`kubectl-nodelabel`), which kubectl
/// runs as the plugin `plugin` (`nodelabel`).
pub fn print_completion(target: CompletionTarget, mut cmd: Command, binary: &str, plugin: &str) {
    use clap_complete::Shell;
    let shell = match target {
        CompletionTarget::Kubectl => {
            print!("{}", kubectl_helper_script(plugin, binary));
            return;
        }
        CompletionTarget::Bash => Shell::Bash,
        CompletionTarget::Zsh => Shell::Zsh,
        CompletionTarget::Fish => Shell::Fish,
        CompletionTarget::Powershell => Shell::PowerShell,
        CompletionTarget::Elvish => Shell::Elvish,
    };
    clap_complete::generate(shell, &mut cmd, binary, &mut std::io::stdout());
    // And the form users type, `kubectl <plugin> <TAB>` (bash, zsh and fish).
    print!("{}", kubectl_form::script(target, plugin, binary));
}

/// `completion`, the same in every plugin: print a shell's script or the kubectl helper, or
/// install the helper where kubectl finds it (and remove it again).
#[derive(Debug, Clone, clap::Args)]
pub struct CompletionArgs {
    #[arg(value_enum)]
    pub shell: CompletionTarget,
    /// Write the `kubectl_complete-<plugin>` helper next to the plugin that kubectl finds on
    /// PATH (krew's bin directory after `kubectl krew install`) instead of printing it.
    #[arg(long, conflicts_with = "uninstall")]
    pub install: bool,
    /// Remove the helper that --install wrote (run it before `kubectl krew uninstall`).
    #[arg(long)]
    pub uninstall: bool,
    /// The directory for --install/--uninstall (default: the one holding the plugin on PATH).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

/// Why the helper could not be installed or removed; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error(
        "--install and --uninstall are for the kubectl helper: `completion kubectl --install` (a {0} script is printed: redirect it where your shell reads completions)"
    )]
    NotKubectl(&'static str),
    #[error("--dir goes with --install or --uninstall")]
    DirAlone,
    #[error(
        "{binary} is not on PATH, so kubectl cannot run it either: install the plugin first, or name the directory with --dir"
    )]
    NotOnPath { binary: String },
    #[error(
        "the kubectl completion helper is a shell script: kubectl on Windows cannot run it; completion of the binary itself works (`{binary} completion powershell`)"
    )]
    Windows { binary: String },
    #[error(
        "{} exists and was not written by placekit: {} (remove it yourself if it is stale)",
        path.display(),
        if *.installing { "not overwritten" } else { "not removed" }
    )]
    NotOurs {
        path: std::path::PathBuf,
        installing: bool,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The directory of the first executable `binary` on `path` (a `PATH` value), the one kubectl
/// runs for the plugin.
pub fn plugin_dir_on_path(binary: &str, path: &std::ffi::OsStr) -> Option<std::path::PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .find(|dir| is_executable(&dir.join(binary)))
}

fn is_executable(file: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        file.is_file()
    }
}

/// What `completion` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelperOutcome {
    Printed,
    Installed(std::path::PathBuf),
    Removed(std::path::PathBuf),
    /// `--uninstall` found no helper there.
    Absent(std::path::PathBuf),
}

/// Runs `completion`: prints the script, or installs/removes the kubectl helper of `plugin`
/// (whose binary is `binary`) and says where on stdout.
pub fn run_completion(
    args: &CompletionArgs,
    cmd: Command,
    binary: &str,
    plugin: &str,
) -> Result<HelperOutcome, HelperError> {
    let outcome = completion_action(args, cmd, binary, plugin)?;
    match &outcome {
        HelperOutcome::Printed => {}
        HelperOutcome::Installed(path) => println!(
            "installed {}: `kubectl {plugin} <TAB>` completes through kubectl 1.26+ (remove it with `kubectl {plugin} completion kubectl --uninstall`)",
            path.display()
        ),
        HelperOutcome::Removed(path) => println!("removed {}", path.display()),
        HelperOutcome::Absent(path) => {
            println!(
                "no completion helper at {}: nothing to remove",
                path.display()
            )
        }
    }
    Ok(outcome)
}

fn completion_action(
    args: &CompletionArgs,
    cmd: Command,
    binary: &str,
    plugin: &str,
) -> Result<HelperOutcome, HelperError> {
    if !args.install && !args.uninstall {
        if args.dir.is_some() {
            return Err(HelperError::DirAlone);
        }
        print_completion(args.shell, cmd, binary, plugin);
        return Ok(HelperOutcome::Printed);
    }
    let shell = match args.shell {
        CompletionTarget::Kubectl => None,
        CompletionTarget::Bash => Some("bash"),
        CompletionTarget::Zsh => Some("zsh"),
        CompletionTarget::Fish => Some("fish"),
        CompletionTarget::Powershell => Some("powershell"),
        CompletionTarget::Elvish => Some("elvish"),
    };
    if let Some(shell) = shell {
        return Err(HelperError::NotKubectl(shell));
    }
    if cfg!(windows) {
        return Err(HelperError::Windows {
            binary: binary.to_string(),
        });
    }
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => plugin_dir_on_path(binary, &std::env::var_os("PATH").unwrap_or_default())
            .ok_or_else(|| HelperError::NotOnPath {
                binary: binary.to_string(),
            })?,
    };
    install_helper(&dir, plugin, binary, args.uninstall)
}

/// Writes or removes the helper in `dir` through [`placekit_core::held_file`]: the directory opened
/// once, a symlink or non-file at the helper's name refused, the new script created
/// exclusively under a random name and renamed over it, so a file planted in a directory
/// others can write is never followed, truncated or chmod-ed by path.
#[cfg(unix)]
fn install_helper(
    dir: &std::path::Path,
    plugin: &str,
    binary: &str,
    uninstall: bool,
) -> Result<HelperOutcome, HelperError> {
    use placekit_core::held_file::{self, ReplaceError};
    let name = kubectl_helper_name(plugin);
    let path = dir.join(&name);
    let marker = helper_marker(plugin);
    let ours = |bytes: &[u8]| bytes.starts_with(marker.as_bytes());
    let failed = |e: ReplaceError, installing: bool| match e {
        // Something else at the helper's name (a file of someone else's, a symlink, a
        // FIFO) is left alone.
        ReplaceError::Refused | ReplaceError::NotRegular => HelperError::NotOurs {
            path: path.clone(),
            installing,
        },
        ReplaceError::Io(source) => HelperError::Io {
            path: path.clone(),
            source,
        },
        other => HelperError::Io {
            path: path.clone(),
            source: std::io::Error::other(other.to_string()),
        },
    };
    if uninstall {
        return match held_file::uninstall(dir, &name, ours) {
            Ok(true) => Ok(HelperOutcome::Removed(path)),
            Ok(false) => Ok(HelperOutcome::Absent(path)),
            Err(e) => Err(failed(e, false)),
        };
    }
    // Written beside and renamed over: kubectl never runs a half-written helper.
    held_file::install(
        dir,
        &name,
        &kubectl_helper_script(plugin, binary),
        0o755,
        |current| current.is_none_or(ours),
    )
    .map_err(|e| failed(e, true))?;
    Ok(HelperOutcome::Installed(path))
}

#[cfg(not(unix))]
fn install_helper(
    _dir: &std::path::Path,
    _plugin: &str,
    binary: &str,
    _uninstall: bool,
) -> Result<HelperOutcome, HelperError> {
    Err(HelperError::Windows {
        binary: binary.to_string(),
    })
}

/// One completion candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub value: String,
    pub description: String,
}

impl Candidate {
    pub fn new(value: impl Into<String>, description: impl Into<String>) -> Self {
        Candidate {
            value: value.into(),
            description: description.into(),
        }
    }
}

/// What kind of word is being completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// A subcommand of the command reached (or its positional argument).
    Subcommand,
    /// A flag (the word starts with `-`).
    Flag,
    /// The value of the flag with this id (after `--flag` or in `--flag=`).
    FlagValue { id: String },
    /// A positional argument with this id; `earlier` are the positional words before it.
    Positional { id: String, earlier: Vec<String> },
    /// Nothing more is expected.
    Nothing,
}

/// Where the last word stands.
#[derive(Debug, Clone)]
pub struct Position {
    /// Subcommand names from the root (`["set"]`).
    pub path: Vec<String>,
    pub slot: Slot,
    /// The word being completed, without a `--flag=` prefix.
    pub current: String,
    /// What to put before each candidate (`--flag=` when completing in that form).
    pub prefix: String,
    /// Flags with values typed so far, by id (the connection flags matter).
    pub flags: Vec<(String, String)>,
    /// Candidates that need no cluster: subcommands, flags, possible values.
    pub fixed: Vec<Candidate>,
    /// At a subcommand, the command also takes positional arguments (files): the shell may
    /// complete file names too.
    pub files_too: bool,
}

impl Position {
    /// The value typed for the flag with `id`, if any.
    pub fn flag(&self, id: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(i, _)| i == id)
            .map(|(_, v)| v.as_str())
    }
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values() && !arg.is_require_equals_set()
}

fn about(text: Option<&clap::builder::StyledStr>) -> String {
    text.map(|s| s.to_string().lines().next().unwrap_or_default().to_string())
        .unwrap_or_default()
}

fn possible_values(arg: &Arg) -> Vec<Candidate> {
    arg.get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| Candidate::new(v.get_name(), about(v.get_help())))
        .collect()
}

fn flag_candidates(cmd: &Command) -> Vec<Candidate> {
    let mut out = Vec::new();
    for arg in cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
    {
        let help = about(arg.get_help());
        if let Some(long) = arg.get_long() {
            out.push(Candidate::new(format!("--{long}"), help.clone()));
        }
        if let Some(short) = arg.get_short() {
            out.push(Candidate::new(format!("-{short}"), help));
        }
    }
    out.push(Candidate::new("--help", "Print help"));
    out
}

fn find_long<'c>(cmd: &'c Command, name: &str) -> Option<&'c Arg> {
    cmd.get_arguments().find(|a| {
        a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|al| al.contains(&name))
    })
}

fn find_short(cmd: &Command, c: char) -> Option<&Arg> {
    cmd.get_arguments().find(|a| a.get_short() == Some(c))
}

/// Walks `words` (everything typed after the plugin's name; the last is the one being
/// completed, possibly empty) through `cmd`.
pub fn locate(mut cmd: Command, words: &[String]) -> Position {
    // Building propagates global flags into every subcommand.
    cmd.build();
    let (current, typed) = match words.split_last() {
        Some((last, rest)) => (last.clone(), rest),
        None => (String::new(), &[][..]),
    };
    let mut node = &cmd;
    let mut path = Vec::new();
    let mut flags = Vec::new();
    let mut positionals: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    let mut only_positionals = false;
    for word in typed {
        if let Some(id) = pending.take() {
            flags.push((id, word.clone()));
            continue;
        }
        if !only_positionals && word == "--" {
            only_positionals = true;
        } else if !only_positionals && let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if let Some(arg) = find_long(node, name) {
                let id = arg.get_id().to_string();
                match value {
                    Some(v) => flags.push((id, v.to_string())),
                    None if takes_value(arg) => pending = Some(id),
                    None => flags.push((id, String::new())),
                }
            }
        } else if !only_positionals && word.len() > 1 && word.starts_with('-') {
            // `-y`, `-lpool=x`, `-o json`, `-Ay`.
            for (i, c) in word[1..].char_indices() {
                let Some(arg) = find_short(node, c) else {
                    break;
                };
                let id = arg.get_id().to_string();
                if takes_value(arg) {
                    let rest = &word[1 + i + c.len_utf8()..];
                    if rest.is_empty() {
                        pending = Some(id);
                    } else {
                        flags.push((id, rest.trim_start_matches('=').to_string()));
                    }
                    break;
                }
                flags.push((id, String::new()));
            }
        } else if positionals.is_empty()
            && let Some(sub) = node
                .get_subcommands()
                .find(|s| s.get_name() == word || s.get_all_aliases().any(|a| a == word))
        {
            path.push(sub.get_name().to_string());
            node = sub;
        } else {
            positionals.push(word.clone());
        }
    }
    let mut position = Position {
        path,
        slot: Slot::Nothing,
        current: current.clone(),
        prefix: String::new(),
        flags,
        fixed: Vec::new(),
        files_too: false,
    };
    if let Some(id) = pending {
        let arg = node.get_arguments().find(|a| a.get_id() == id.as_str());
        position.fixed = arg.map(possible_values).unwrap_or_default();
        position.slot = Slot::FlagValue { id };
        return after_last_comma(position);
    }
    if !only_positionals && current.starts_with('-') {
        if let Some((name, value)) = current.strip_prefix("--").and_then(|l| l.split_once('='))
            && let Some(arg) = find_long(node, name)
        {
            position.prefix = format!("--{name}=");
            position.current = value.to_string();
            position.fixed = possible_values(arg);
            position.slot = Slot::FlagValue {
                id: arg.get_id().to_string(),
            };
            return after_last_comma(position);
        }
        position.fixed = flag_candidates(node);
        position.slot = Slot::Flag;
        return position;
    }
    let subcommands: Vec<Candidate> = node
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| Candidate::new(s.get_name(), about(s.get_about())))
        .collect();
    if positionals.is_empty() && !subcommands.is_empty() {
        position.fixed = subcommands;
        position.files_too = node.get_arguments().any(Arg::is_positional);
        position.slot = Slot::Subcommand;
        return position;
    }
    let mut args: Vec<&Arg> = node.get_arguments().filter(|a| a.is_positional()).collect();
    args.sort_by_key(|a| a.get_index().unwrap_or(usize::MAX));
    let arg = args.get(positionals.len()).copied().or_else(|| {
        args.last()
            .copied()
            .filter(|a| a.get_num_args().is_some_and(|n| n.max_values() > 1))
    });
    if let Some(arg) = arg {
        position.fixed = possible_values(arg);
        position.slot = Slot::Positional {
            id: arg.get_id().to_string(),
            earlier: positionals,
        };
    }
    position
}

/// A flag value that is a comma-separated list (`-l pool=online,zo`, `--disable
/// AL001,AL0`): the part after the last comma is completed, the rest kept in front.
fn after_last_comma(mut position: Position) -> Position {
    if let Some((head, tail)) = position.current.rsplit_once(',') {
        position.prefix = format!("{}{head},", position.prefix);
        position.current = tail.to_string();
    }
    position
}

/// Where the candidates of a word come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Only [`Position::fixed`] (subcommands, flags, possible values).
    Fixed,
    /// File names, completed by the shell.
    Files,
    /// Node names.
    Nodes,
    /// Node label keys, each followed by `suffix` (`=` to go on with a value, `-` to
    /// remove).
    LabelKeys {
        suffix: &'static str,
    },
    /// Node names and label keys followed by `suffix`: words that can be either.
    NodesOrLabelKeys {
        suffix: &'static str,
    },
    /// The nodes' taints as `key=value:Effect`.
    Taints,
    /// Extended resources the nodes offer (`nvidia.com/gpu`).
    ExtendedResources,
    Namespaces,
    /// Pods in the namespace of `-n` (or the context's).
    Pods,
    Contexts,
    Clusters,
    Users,
    /// Snapshot files of this tool in the state directory, newest first.
    Snapshots {
        tool: &'static str,
    },
    /// Words known in advance (rule ids).
    Words(Vec<Candidate>),
}

/// The source of the flags every plugin shares; `None` for the plugin to decide.
pub fn common_source(position: &Position) -> Option<Source> {
    match &position.slot {
        Slot::Subcommand | Slot::Flag | Slot::Nothing => Some(Source::Fixed),
        Slot::FlagValue { id } => match id.as_str() {
            "kubeconfig" => Some(Source::Files),
            "context" | "contexts" => Some(Source::Contexts),
            "cluster" => Some(Source::Clusters),
            "user" => Some(Source::Users),
            "namespace" => Some(Source::Namespaces),
            _ if !position.fixed.is_empty() => Some(Source::Fixed),
            _ => None,
        },
        Slot::Positional { .. } => (!position.fixed.is_empty()).then_some(Source::Fixed),
    }
}

/// The connection flags typed so far, with completion's short timeout.
fn connection_of(position: &Position) -> ConnectionArgs {
    let flag = |id: &str| position.flag(id).map(str::to_string);
    ConnectionArgs {
        kubeconfig: flag("kubeconfig").map(Into::into),
        context: flag("context"),
        cluster: flag("cluster"),
        user: flag("user"),
        namespace: flag("namespace"),
        as_user: flag("as_user"),
        as_group: flag("as_group").into_iter().collect(),
        as_uid: flag("as_uid"),
        token: flag("token"),
        server: flag("server"),
        certificate_authority: flag("certificate_authority").map(Into::into),
        client_certificate: flag("client_certificate").map(Into::into),
        client_key: flag("client_key").map(Into::into),
        insecure_skip_tls_verify: position.flag("insecure_skip_tls_verify").is_some(),
        tls_server_name: flag("tls_server_name"),
        request_timeout: format!("{}s", CLUSTER_TIMEOUT.as_secs()),
    }
}

fn sorted_unique(mut values: Vec<Candidate>) -> Vec<Candidate> {
    values.sort_by(|a, b| a.value.cmp(&b.value));
    values.dedup_by(|a, b| a.value == b.value);
    values
}

/// Builds the client within completion's deadline, off the runtime's thread: kube runs an
/// exec credential plugin while building it, and one waiting for a login must cost the
/// shell at most the deadline, like every request completion makes.
async fn connect_within_deadline(
    args: &ConnectionArgs,
) -> Option<placekit_client::connect::Connection> {
    // Completion never prints: a notice about the connection is for the command itself.
    args.connect_within(CLUSTER_TIMEOUT)
        .await?
        .ok()
        .map(|(connection, _notices)| connection)
}

async fn nodes(args: &ConnectionArgs) -> Vec<Node> {
    let Some(conn) = connect_within_deadline(args).await else {
        return Vec::new();
    };
    let api: Api<Node> = Api::all(conn.client);
    let listed = tokio::time::timeout(
        CLUSTER_TIMEOUT,
        api.list(&ListParams::default().limit(NODES_READ)),
    )
    .await;
    match listed {
        Ok(Ok(list)) => list.items,
        _ => Vec::new(),
    }
}

/// Label keys with `suffix`; once the word has `key=`, the values that key has on the nodes.
fn label_keys_or_values(nodes: &[Node], suffix: &str, current: &str) -> Vec<Candidate> {
    let Some((key, _)) = current.split_once('=').filter(|_| suffix == "=") else {
        return label_keys(nodes, suffix);
    };
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for node in nodes {
        if let Some(value) = node.metadata.labels.as_ref().and_then(|l| l.get(key)) {
            *counts.entry(value.as_str()).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|(value, n)| {
            Candidate::new(
                format!("{key}={value}"),
                format!("on {}", placekit_core::text::count(n, "node")),
            )
        })
        .collect()
}

fn label_keys(nodes: &[Node], suffix: &str) -> Vec<Candidate> {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for node in nodes {
        for key in node
            .metadata
            .labels
            .iter()
            .flatten()
            .map(|(k, _)| k.as_str())
        {
            *counts.entry(key).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|(key, n)| {
            Candidate::new(
                format!("{key}{suffix}"),
                format!("label on {n} node{}", if n == 1 { "" } else { "s" }),
            )
        })
        .collect()
}

fn node_names(nodes: &[Node]) -> Vec<Candidate> {
    nodes
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .map(|name| Candidate::new(name, "node"))
        .collect()
}

/// The candidates of `source` at `position`, and cobra's directive. Never fails.
///
/// Long on purpose: one arm per kind of completion (nodes, keys, values, snapshots,
/// contexts, files...), each a read and a filter.
pub async fn resolve(position: &Position, source: Source) -> (Vec<Candidate>, u8) {
    // `--contexts prod-*,!prod-c<TAB>`: an exclusion completes the name after its `!`.
    let excluding;
    let position = match position.current.strip_prefix('!') {
        Some(rest) if matches!(&position.slot, Slot::FlagValue { id } if id == "contexts") => {
            excluding = Position {
                prefix: format!("{}!", position.prefix),
                current: rest.to_string(),
                ..position.clone()
            };
            &excluding
        }
        _ => position,
    };
    let args = connection_of(position);
    let none = directive::NO_FILE_COMP;
    let (candidates, directive) = match source {
        Source::Fixed if position.files_too => (position.fixed.clone(), directive::DEFAULT),
        Source::Fixed => (position.fixed.clone(), none),
        Source::Files => (Vec::new(), directive::DEFAULT),
        Source::Words(words) => (words, none),
        Source::Nodes => (node_names(&nodes(&args).await), none),
        Source::LabelKeys { suffix } => (
            label_keys_or_values(&nodes(&args).await, suffix, &position.current),
            none,
        ),
        Source::NodesOrLabelKeys { suffix } => {
            let nodes = nodes(&args).await;
            let mut all = node_names(&nodes);
            all.extend(label_keys_or_values(&nodes, suffix, &position.current));
            (all, none)
        }
        Source::Taints => {
            let mut taints = Vec::new();
            for node in nodes(&args).await {
                for t in node.spec.and_then(|s| s.taints).unwrap_or_default() {
                    let value = t.value.map(|v| format!("={v}")).unwrap_or_default();
                    taints.push(Candidate::new(
                        format!("{}{value}:{}", t.key, t.effect),
                        "taint on a node",
                    ));
                }
            }
            (taints, none)
        }
        Source::ExtendedResources => {
            let mut names = Vec::new();
            for node in nodes(&args).await {
                let allocatable = node.status.and_then(|s| s.allocatable).unwrap_or_default();
                names.extend(
                    allocatable
                        .into_keys()
                        .filter(|k| k.contains('/') && !k.starts_with("hugepages-"))
                        .map(|k| Candidate::new(k, "extended resource")),
                );
            }
            (names, none)
        }
        Source::Namespaces => {
            let names = match connect_within_deadline(&args).await {
                Some(conn) => {
                    let api: Api<Namespace> = Api::all(conn.client);
                    match tokio::time::timeout(
                        CLUSTER_TIMEOUT,
                        api.list_metadata(&ListParams::default()),
                    )
                    .await
                    {
                        Ok(Ok(list)) => list
                            .items
                            .into_iter()
                            .filter_map(|n| n.metadata.name)
                            .map(|n| Candidate::new(n, "namespace"))
                            .collect(),
                        _ => Vec::new(),
                    }
                }
                None => Vec::new(),
            };
            (names, none)
        }
        Source::Pods => {
            let names = match connect_within_deadline(&args).await {
                Some(conn) => {
                    let api: Api<Pod> = Api::namespaced(conn.client, &conn.namespace);
                    match tokio::time::timeout(
                        CLUSTER_TIMEOUT,
                        api.list(&ListParams::default().limit(NODES_READ)),
                    )
                    .await
                    {
                        Ok(Ok(list)) => list
                            .items
                            .into_iter()
                            .filter_map(|p| {
                                let phase = p.status.and_then(|s| s.phase).unwrap_or_default();
                                p.metadata.name.map(|n| Candidate::new(n, phase))
                            })
                            .collect(),
                        _ => Vec::new(),
                    }
                }
                None => Vec::new(),
            };
            (names, none)
        }
        Source::Contexts | Source::Clusters | Source::Users => {
            let names = match args.load_kubeconfig() {
                Ok(k) => match source {
                    Source::Contexts => k.contexts.into_iter().map(|c| c.name).collect(),
                    Source::Clusters => k.clusters.into_iter().map(|c| c.name).collect(),
                    _ => k.auth_infos.into_iter().map(|u| u.name).collect::<Vec<_>>(),
                },
                Err(_) => Vec::new(),
            };
            (
                names.into_iter().map(|n| Candidate::new(n, "")).collect(),
                none,
            )
        }
        Source::Snapshots { tool } => {
            let snapshots = SnapshotStore::default_dir()
                .ok()
                .map(SnapshotStore::new)
                .and_then(|s| s.list().ok())
                .unwrap_or_default();
            let candidates = snapshots
                .into_iter()
                .rev()
                .filter(|s| s.header.tool == tool)
                .map(|s| {
                    Candidate::new(
                        s.path.display().to_string(),
                        format!(
                            "{} {} ({})",
                            s.header.created_at, s.header.operation, s.header.context
                        ),
                    )
                })
                .collect();
            // Newest first, as listed: the shell must not re-sort them.
            (candidates, none | directive::KEEP_ORDER)
        }
    };
    let candidates = if matches!(position.slot, Slot::Flag | Slot::Subcommand)
        || directive & directive::KEEP_ORDER != 0
    {
        candidates
    } else {
        sorted_unique(candidates)
    };
    let matching: Vec<Candidate> = candidates
        .into_iter()
        .filter(|c| c.value.starts_with(&position.current))
        .map(|c| Candidate {
            value: format!("{}{}", position.prefix, c.value),
            description: c.description,
        })
        .collect();
    // `key=` goes on with its value: no space after it.
    let directive = if !matching.is_empty() && matching.iter().all(|c| c.value.ends_with('=')) {
        directive | directive::NO_SPACE
    } else {
        directive
    };
    (matching, directive)
}

/// cobra's output: one `value<TAB>description` line per candidate, then `:<directive>`.
/// Candidates come from the cluster (node names, label values, namespaces): one whose value
/// holds whitespace, a control or bidirectional character or a shell metacharacter is
/// dropped — a newline and tab in a node name would otherwise become a candidate of its own,
/// and the shell would insert what it says — and descriptions are escaped.
pub fn render(candidates: &[Candidate], directive: u8) -> String {
    let mut out = String::new();
    for c in candidates.iter().filter(|c| insertable(&c.value)) {
        let description = placekit_core::text::escaped(&c.description).replace('\t', " ");
        if description.is_empty() {
            out.push_str(&c.value);
        } else {
            out.push_str(&format!("{}\t{description}", c.value));
        }
        out.push('\n');
    }
    out.push_str(&format!(":{directive}\n"));
    out
}

/// Whether a candidate can be put on a command line as it is.
fn insertable(value: &str) -> bool {
    !value.is_empty()
        && placekit_core::text::escaped(value) == value
        && !value
            .chars()
            .any(|c| c.is_whitespace() || "`$;|&<>()'\"\\".contains(c))
}

/// Answers `<plugin> __complete WORDS...` when that is how the process was called (the
/// helper kubectl runs): `Some(exit code)` when it did, `None` to go on normally. `source`
/// maps a position the shared flags do not cover to its candidates.
pub fn intercept(
    cmd: impl FnOnce() -> Command,
    source: impl FnOnce(&Position) -> Source,
) -> Option<std::process::ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("__complete") {
        return None;
    }
    let position = locate(cmd(), &args[1..]);
    let source = common_source(&position).unwrap_or_else(|| source(&position));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let (candidates, directive) = match runtime {
        Ok(rt) => {
            let resolved = rt.block_on(resolve(&position, source));
            // A credential plugin still waiting (for a login) on a blocking thread must not
            // hold the shell: the runtime is not waited for.
            rt.shutdown_background();
            resolved
        }
        Err(_) => (Vec::new(), directive::ERROR),
    };
    print!("{}", render(&candidates, directive));
    Some(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests;
