//! Many clusters: the read-only commands across kubeconfig contexts, concurrently, in one
//! report.
//!
//! `--contexts PATTERN[,…]` and `--all-contexts` choose contexts from the kubeconfig as
//! kubectl reads it. [`Fleet::read`] then reaches every context with its own credentials,
//! at most `--parallel-contexts` at a time: a probe (the `kube-system` namespace, within
//! `--context-timeout`) tells a live cluster from a dead or hung one and gives the cluster
//! identity the undo stack uses, so contexts naming one cluster are read once and reported
//! under all their names. Each request of the command's own reads has the same deadline.
//! The results come back in the order the contexts were given, each cluster's either the
//! command's data or why it could not be read, in kubectl's words.

use std::sync::Arc;
use std::time::Duration;

use kube::config::Kubeconfig;

use crate::error::CommandError;
use crate::output::v1::{ContextRead, Item, Origin};
use crate::ui::Ui;
use placekit_client::connect::{Connection, ConnectionArgs, parse_request_timeout};
use placekit_client::error::{ClientError, TransportCause, Unreachable};
use placekit_core::cluster::ClusterIdentity;
use placekit_core::exit;

/// How many contexts are read at once unless `--parallel-contexts` says otherwise.
pub const DEFAULT_PARALLEL: usize = 8;
/// Each context's deadline unless `--context-timeout` says otherwise: everything done for
/// it (its client built, its identity asked, every page of every list) ends within it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The flags of the read-only commands that read several clusters.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Many clusters (read-only commands)")]
pub struct FleetArgs {
    /// Read these kubeconfig contexts, in this order: names or globs (`*`, `?`),
    /// comma-separated; a leading `!` excludes (e.g. 'prod-*,!prod-cn-*').
    #[arg(
        long,
        global = true,
        value_name = "PATTERN[,PATTERN...]",
        value_delimiter = ',',
        conflicts_with = "all_contexts"
    )]
    pub contexts: Vec<String>,
    /// Read every context of the kubeconfig (as `kubectl config get-contexts` lists them).
    #[arg(long, global = true)]
    pub all_contexts: bool,
    /// With --contexts/--all-contexts: how many contexts are read at once [default: 8].
    #[arg(long, global = true, value_name = "N")]
    pub parallel_contexts: Option<usize>,
    /// With --contexts/--all-contexts: each context's deadline, e.g. 5s, 1m [default: 10s]:
    /// its credentials, its identity and its whole read (every page) end within it. A
    /// context that misses it is reported as failed; the others are not held up.
    #[arg(long, global = true, value_name = "DURATION")]
    pub context_timeout: Option<String>,
}

impl FleetArgs {
    /// Whether several contexts were asked for.
    pub fn is_set(&self) -> bool {
        self.all_contexts || !self.contexts.is_empty()
    }

    /// For the commands that write (or look at one object): these flags are refused, with
    /// why and which commands of the plugin (`readers`) take them. Writes go to one cluster
    /// at a time.
    pub fn refuse(&self, command: &str, readers: &str) -> Result<(), CommandError> {
        let flag = if self.all_contexts {
            "--all-contexts"
        } else if !self.contexts.is_empty() {
            "--contexts"
        } else if self.parallel_contexts.is_some() {
            "--parallel-contexts"
        } else if self.context_timeout.is_some() {
            "--context-timeout"
        } else {
            return Ok(());
        };
        Err(CommandError::Input(format!(
            "{command} does not take {flag}: it {} one cluster at a time (choose it with --context); {readers} read several",
            if WRITES.contains(&command.rsplit(' ').next().unwrap_or(command)) {
                "changes"
            } else {
                "reads"
            }
        )))
    }
}

/// The subcommands that write (for [`FleetArgs::refuse`]'s wording).
const WRITES: &[&str] = &[
    "set", "remove", "import", "dedicate", "release", "rollback", "prune",
];

/// A context pattern matches a name: `*` any run, `?` any one character, the rest itself.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative match with one backtrack point per `*`: linear in practice.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// The contexts `patterns` choose from `available` (the kubeconfig's, sorted by name as
/// `kubectl config get-contexts` lists them), in the order the patterns give them; each
/// context once. Patterns with a leading `!` take contexts out again. With only exclusions,
/// they are taken out of every context. A pattern that includes nothing is an error (a typo
/// must not quietly read fewer clusters).
pub fn select_contexts(
    available: &[String],
    patterns: &[String],
) -> Result<Vec<String>, CommandError> {
    let mut sorted: Vec<&String> = available.iter().collect();
    sorted.sort();
    let patterns: Vec<&str> = patterns
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect();
    if patterns.is_empty() {
        return Err(CommandError::Input(
            "--contexts needs at least one context name or pattern (or use --all-contexts)".into(),
        ));
    }
    let (excludes, includes): (Vec<&str>, Vec<&str>) =
        patterns.iter().partition(|p| p.starts_with('!'));
    let excludes: Vec<&str> = excludes.iter().map(|p| &p[1..]).collect();
    let mut chosen: Vec<String> = Vec::new();
    if includes.is_empty() {
        chosen.extend(sorted.iter().map(|s| s.to_string()));
    }
    for pattern in &includes {
        let matched: Vec<&&String> = sorted.iter().filter(|c| glob_matches(pattern, c)).collect();
        if matched.is_empty() {
            let what = if pattern.contains(['*', '?']) {
                format!("--contexts {pattern}: no context matches")
            } else {
                format!("--contexts {pattern}: context {pattern:?} was not found in the kubeconfig")
            };
            return Err(CommandError::Input(format!(
                "{what} (see `kubectl config get-contexts`)"
            )));
        }
        for c in matched {
            if !chosen.contains(c) {
                chosen.push(c.to_string());
            }
        }
    }
    chosen.retain(|c| !excludes.iter().any(|p| glob_matches(p, c)));
    if chosen.is_empty() {
        return Err(CommandError::Input(format!(
            "--contexts {}: every context is excluded",
            patterns.join(",")
        )));
    }
    Ok(chosen)
}

/// Whether `patterns` (as `--contexts` takes them) choose the context `name`, for what is
/// recorded rather than read (`history`): no pattern needs to match anything.
pub fn chooses(patterns: &[String], name: &str) -> bool {
    let patterns: Vec<&str> = patterns
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect();
    let included = patterns
        .iter()
        .filter(|p| !p.starts_with('!'))
        .peekable()
        .collect::<Vec<_>>();
    (included.is_empty() || included.iter().any(|p| glob_matches(p, name)))
        && !patterns
            .iter()
            .filter_map(|p| p.strip_prefix('!'))
            .any(|p| glob_matches(p, name))
}

/// The contexts a command reads and how.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// The context names, in the order given.
    pub contexts: Vec<String>,
    base: ConnectionArgs,
    parallel: usize,
    timeout: Duration,
}

/// The CONTEXT of the rows that total every cluster: not a name a kubeconfig context can
/// be mistaken for (`kubectl config` refuses no name, but parentheses read as a remark).
pub const ALL: &str = "(all)";

/// One cluster's part of the report: every context name that reaches it (the first reads
/// it), its server, and the command's data or why it could not be read.
#[derive(Debug)]
pub struct ClusterRead<T> {
    pub contexts: Vec<String>,
    pub server: String,
    pub outcome: Result<T, ContextFailure>,
    /// From the context's turn to its outcome (`placekit_read_duration_seconds`).
    pub took: Duration,
}

impl<T> ClusterRead<T> {
    /// The context name the report shows: the first, with the others in parentheses
    /// (control characters of a kubeconfig's names escaped: it goes to a terminal).
    pub fn label(&self) -> String {
        let label = match self.contexts.split_first() {
            Some((first, [])) => first.clone(),
            Some((first, rest)) => format!("{first} (also {})", rest.join(", ")),
            None => String::new(),
        };
        placekit_core::text::escape_controls(&label, true).into_owned()
    }
}

/// Why a context could not be read.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ContextFailure {
    /// kubectl's words: cannot reach, unauthorized, timeout, forbidden…
    pub reason: String,
    /// The exit code this failure alone would have given.
    #[serde(skip)]
    pub exit_code: u8,
}

impl ContextFailure {
    fn from_error(e: &CommandError, fleet: &Fleet) -> Self {
        // Each context's requests have the deadline of --context-timeout, not the
        // --request-timeout the one-context message points at (unless that was shorter).
        let reason = if fleet.request_timeout_is_shorter() {
            e.to_string()
        } else {
            e.to_string()
                .replace("see --request-timeout", "see --context-timeout")
        };
        ContextFailure {
            reason: placekit_core::text::escape_controls(
                &placekit_client::secrets::redact(&reason),
                true,
            )
            .into_owned(),
            exit_code: e.exit_code(),
        }
    }
}

impl Fleet {
    /// The fleet the flags ask for, or `None` for the one context of `--context`. Checked
    /// before any request: the kubeconfig, the patterns, the flags that do not go with them.
    pub fn resolve(
        connection: &ConnectionArgs,
        args: &FleetArgs,
    ) -> Result<Option<Fleet>, CommandError> {
        if !args.is_set() {
            for (given, flag) in [
                (args.parallel_contexts.is_some(), "--parallel-contexts"),
                (args.context_timeout.is_some(), "--context-timeout"),
            ] {
                if given {
                    return Err(CommandError::Input(format!(
                        "{flag} applies with --contexts or --all-contexts"
                    )));
                }
            }
            return Ok(None);
        }
        let flag = if args.all_contexts {
            "--all-contexts"
        } else {
            "--contexts"
        };
        for (given, other) in [
            (connection.context.is_some(), "--context"),
            (connection.cluster.is_some(), "--cluster"),
            (connection.user.is_some(), "--user"),
        ] {
            if given {
                return Err(CommandError::Input(format!(
                    "{flag} and {other} exclude each other: each context brings its own cluster and user"
                )));
            }
        }
        let parallel = args.parallel_contexts.unwrap_or(DEFAULT_PARALLEL);
        if parallel == 0 {
            return Err(CommandError::Input(
                "--parallel-contexts must be at least 1".into(),
            ));
        }
        let timeout = match &args.context_timeout {
            Some(t) => parse_request_timeout(t)
                .map_err(|_| {
                    CommandError::Input(format!(
                        "invalid --context-timeout {t:?}: use a number with a unit (5s, 1m), more than 0"
                    ))
                })?
                .ok_or_else(|| {
                    CommandError::Input(
                        "--context-timeout 0: every context needs a deadline, or one hung cluster would hold up the report"
                            .into(),
                    )
                })?,
            None => DEFAULT_TIMEOUT,
        };
        let kubeconfig: Kubeconfig = connection.load_kubeconfig()?;
        let available: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
        if available.is_empty() {
            return Err(CommandError::Input(format!(
                "{flag}: the kubeconfig has no contexts (see `kubectl config get-contexts`)"
            )));
        }
        let contexts = if args.all_contexts {
            select_contexts(&available, &["*".to_string()])?
        } else {
            select_contexts(&available, &args.contexts)?
        };
        Ok(Some(Fleet {
            contexts,
            base: connection.clone(),
            parallel,
            timeout,
        }))
    }

    /// Whether a `--request-timeout` shorter than the deadline was given (it then bounds
    /// each request).
    fn request_timeout_is_shorter(&self) -> bool {
        parse_request_timeout(&self.base.request_timeout)
            .ok()
            .flatten()
            .is_some_and(|t| t < self.timeout)
    }

    /// The connection flags of one context: the user's, with that context and the deadline
    /// (or a shorter `--request-timeout`).
    fn connection_args(&self, context: &str) -> ConnectionArgs {
        let own = parse_request_timeout(&self.base.request_timeout)
            .ok()
            .flatten()
            .filter(|t| *t < self.timeout);
        ConnectionArgs {
            context: Some(context.to_string()),
            request_timeout: format!("{}ms", own.unwrap_or(self.timeout).as_millis()),
            ..self.base.clone()
        }
    }

    /// Asks one cluster for its identity within the deadline.
    async fn probe(&self, conn: &Connection) -> Result<ClusterIdentity, CommandError> {
        match tokio::time::timeout(self.timeout, placekit_client::api::probe_identity(conn)).await {
            Ok(result) => result.map_err(CommandError::from),
            Err(_) => Err(CommandError::Client(ClientError::Unreachable(Box::new(
                Unreachable {
                    doing: "waiting for its first answer".into(),
                    server: Some(conn.server.clone()),
                    cause: TransportCause::Other(format!(
                        "timeout: no answer within {} (--context-timeout)",
                        humantime(self.timeout)
                    )),
                    source: None,
                },
            )))),
        }
    }

    /// Runs `read` once per cluster the contexts reach, at most `--parallel-contexts`
    /// clusters at a time, each on its own task (the clusters' answers are decoded on every
    /// core); returns each cluster's outcome in the order the contexts were given.
    ///
    /// Contexts whose kubeconfig entries are the same cluster (server, CA, proxy, TLS
    /// settings) and the same user are one read before any request. Each is then reached on
    /// its own task — building the client (which may run an exec credential plugin) within
    /// the deadline — and read at once, while its identity (the `kube-system` uid) is asked
    /// alongside within the deadline: a context that does not answer costs its own deadline
    /// and holds up no other, and the identity costs no round trip of its own. Reads with the
    /// same credentials that turn out to reach one cluster through different URLs are merged
    /// afterwards (the later read is dropped).
    pub async fn read<T, F, Fut>(&self, read: F) -> Vec<ClusterRead<T>>
    where
        F: Fn(Connection) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, CommandError>> + Send + 'static,
        T: Send + 'static,
    {
        /// Contexts whose kubeconfig names one cluster entry and one user entry alike.
        struct Group {
            contexts: Vec<String>,
            /// The cluster and user entries as written (compared, never shown).
            entries: Option<serde_json::Value>,
        }
        let kubeconfig = self.base.load_kubeconfig().ok();
        let mut groups: Vec<Group> = Vec::new();
        for context in &self.contexts {
            // Another user may be refused or see less, another proxy or TLS setting may
            // reach where this one does not: only identical entries share a read.
            let entries = kubeconfig.as_ref().and_then(|k| entries_of(k, context));
            match groups
                .iter_mut()
                .find(|g| entries.is_some() && g.entries == entries)
            {
                Some(g) => g.contexts.push(context.clone()),
                None => groups.push(Group {
                    contexts: vec![context.clone()],
                    entries,
                }),
            }
        }
        let read = Arc::new(read);
        let slots = Arc::new(tokio::sync::Semaphore::new(self.parallel));
        let tasks: Vec<_> = groups
            .iter()
            .map(|g| {
                let context = g.contexts[0].clone();
                let (fleet, read, slots) = (self.clone(), read.clone(), slots.clone());
                tokio::spawn(async move {
                    let _slot = slots.acquire_owned().await.expect("never closed");
                    let started = tokio::time::Instant::now();
                    let outcome = async {
                    // One deadline for everything done for this context, from the moment
                    // it gets its slot: building its client, its identity, every page.
                    let deadline = tokio::time::Instant::now() + fleet.timeout;
                    let conn = fleet.connect(&context).await.map_err(|e| {
                        (
                            fleet.server_of(&context),
                            ContextFailure::from_error(&e, &fleet),
                        )
                    })?;
                    let server = conn.server.clone();
                    // The identity and the read together; whichever fails first ends both
                    // (bad credentials or no answer: said as the first request found it).
                    // A server that pages forever or drips its answers costs this context
                    // what is left of its deadline, and holds up no other.
                    let whole = placekit_client::connect::with_server(server.clone(), async {
                        tokio::try_join!(fleet.probe(&conn), read(conn.clone()))
                    });
                    let both = match tokio::time::timeout_at(deadline, whole).await {
                        Ok(both) => both,
                        Err(_) => Err(CommandError::Client(ClientError::Unreachable(Box::new(Unreachable {
                            doing: "reading it".into(),
                            server: Some(server.clone()),
                            cause: TransportCause::Other(format!(
                                "timeout: its answers did not end within {} (--context-timeout)",
                                humantime(fleet.timeout)
                            )),
                            source: None,
                        })))),
                    };
                    both.map(|(identity, data)| (server.clone(), identity, data))
                        .map_err(|e| (server, ContextFailure::from_error(&e, &fleet)))
                    }
                    .await;
                    (outcome, started.elapsed())
                })
            })
            .collect();
        let mut reads: Vec<(Reached, ClusterRead<T>)> = Vec::new();
        for (group, task) in groups.into_iter().zip(tasks) {
            let (done, took) = task.await.unwrap_or_else(|e| {
                (
                    Err((
                        self.server_of(&group.contexts[0]),
                        ContextFailure {
                            reason: format!("internal error: {e}"),
                            exit_code: exit::CLUSTER,
                        },
                    )),
                    Duration::ZERO,
                )
            });
            let (key, server, outcome) = match done {
                Ok((server, identity, data)) => {
                    (Some((identity, group.entries.clone())), server, Ok(data))
                }
                Err((server, failure)) => (None, server, Err(failure)),
            };
            // The same cluster through another URL, with the same credentials: its names
            // join the first read.
            if let Some((id, entries)) = key.as_ref().filter(|(id, _)| id.kube_system_uid.is_some())
                && let Some((_, first)) = reads.iter_mut().find(|(other, _)| {
                    other.as_ref().is_some_and(|(o, e)| {
                        o.same_cluster(id)
                            && credentials(e.as_ref()) == credentials(entries.as_ref())
                    })
                })
            {
                first.contexts.extend(group.contexts);
                continue;
            }
            reads.push((
                key,
                ClusterRead {
                    contexts: group.contexts,
                    server,
                    outcome,
                    took,
                },
            ));
        }
        reads.into_iter().map(|(_, r)| r).collect()
    }

    /// Builds one context's client within the deadline, off the async workers: kube runs an
    /// exec credential plugin while building it, and a plugin waiting for a login must cost
    /// this context its deadline, not hold up the others (or the process).
    async fn connect(&self, context: &str) -> Result<Connection, CommandError> {
        match self
            .connection_args(context)
            .connect_within(self.timeout)
            .await
        {
            Some(result) => {
                let (connection, notices) = result?;
                crate::ui::say_notices(&format!("context {context}: "), &notices);
                Ok(connection)
            }
            None => Err(CommandError::Client(ClientError::Unreachable(Box::new(
                Unreachable {
                    doing: "getting credentials".into(),
                    server: Some(self.server_of(context)),
                    cause: TransportCause::Other(format!(
                        "timeout: no credentials within {} (--context-timeout; is the exec credential plugin waiting for a login?)",
                        humantime(self.timeout)
                    )),
                    source: None,
                },
            )))),
        }
    }

    /// The server a context names, for a context that could not be reached.
    fn server_of(&self, context: &str) -> String {
        self.connection_args(context)
            .load_kubeconfig()
            .ok()
            .and_then(|k| server_of(&k, context))
            .unwrap_or_default()
    }
}

/// A cluster read: its identity and the kubeconfig entries it was read with.
type Reached = Option<(ClusterIdentity, Option<serde_json::Value>)>;

/// The cluster entry (without its name) and the user entry a context names, as written
/// (compared, never shown): `{"cluster": …, "user": …}`.
fn entries_of(kubeconfig: &Kubeconfig, context: &str) -> Option<serde_json::Value> {
    let named = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)?
        .context
        .as_ref()?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == named.cluster)?
        .cluster
        .as_ref()?;
    let user = named.user.as_ref().and_then(|u| {
        kubeconfig
            .auth_infos
            .iter()
            .find(|a| &a.name == u)
            .and_then(|a| a.auth_info.as_ref())
    });
    Some(serde_json::json!({
        "cluster": serde_json::to_value(cluster).ok()?,
        "user": user.and_then(|u| serde_json::to_value(u).ok()),
    }))
}

/// The user part of [`entries_of`].
fn credentials(entries: Option<&serde_json::Value>) -> Option<&serde_json::Value> {
    entries.map(|e| &e["user"])
}

/// The server URL a context's cluster names in the kubeconfig, without userinfo.
fn server_of(kubeconfig: &Kubeconfig, context: &str) -> Option<String> {
    let cluster = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)?
        .context
        .as_ref()?
        .cluster
        .clone();
    kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == cluster)?
        .cluster
        .as_ref()?
        .server
        .as_deref()
        .map(placekit_core::cluster::normalize_server)
}

fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The exit code of a fleet report: 2 is never here (usage errors stop before any read);
/// every context failed: the worst failure's code (3 for unreachable); some failed: 4;
/// otherwise the worst of what each cluster's data says (`code`).
pub fn exit_code<T>(reads: &[ClusterRead<T>], code: impl Fn(&T) -> u8) -> u8 {
    let failed = reads.iter().filter(|r| r.outcome.is_err()).count();
    if failed > 0 && failed == reads.len() {
        return reads
            .iter()
            .filter_map(|r| r.outcome.as_ref().err())
            .map(|f| f.exit_code)
            .max()
            .unwrap_or(exit::CLUSTER);
    }
    if failed > 0 {
        return exit::SOME_CONTEXTS_UNREAD;
    }
    reads
        .iter()
        .filter_map(|r| r.outcome.as_ref().ok())
        .map(code)
        .max()
        .unwrap_or(exit::SUCCESS)
}

/// Each failed context once, on stderr, in the order given; then one line saying what the
/// exit code will mean.
pub fn warn_failures<T>(ui: &Ui, reads: &[ClusterRead<T>]) {
    let mut failed = 0;
    for r in reads {
        if let Err(f) = &r.outcome {
            failed += 1;
            ui.warn(&format!("context {}: {}", r.label(), f.reason));
        }
    }
    if failed > 0 && failed < reads.len() {
        ui.warn(&format!(
            "{} of {} could not be read; the report covers the others (exit {})",
            placekit_core::text::count(failed, "cluster"),
            reads.len(),
            exit::SOME_CONTEXTS_UNREAD
        ));
    }
}

/// Every cluster read, for a JSON/YAML report: `[{context, contexts, server, error?}]`.
pub fn contexts<T>(reads: &[ClusterRead<T>]) -> Vec<ContextRead<'_>> {
    reads
        .iter()
        .map(|r| ContextRead {
            context: r.contexts.first().map(String::as_str),
            contexts: &r.contexts,
            server: &r.server,
            error: r.outcome.as_ref().err().map(|f| f.reason.as_str()),
            ..ContextRead::default()
        })
        .collect()
}

/// [`contexts`] as JSON, for the linter's report (which is written as it goes).
pub fn contexts_json<T>(reads: &[ClusterRead<T>]) -> serde_json::Value {
    serde_json::to_value(contexts(reads)).expect("contexts serialise")
}

/// `items` of one cluster, each an [`Item`] with its context and server.
pub fn tagged<'a, T, U>(
    read: &'a ClusterRead<U>,
    items: &'a [T],
) -> impl Iterator<Item = Item<'a, T>> + 'a {
    items.iter().map(move |item| Item {
        origin: Some(Origin {
            context: read.contexts.first().map_or("", String::as_str),
            contexts: read.contexts.as_slice(),
            server: &read.server,
        }),
        item,
    })
}

/// A table with a leading CONTEXT column: each cluster's rows under its label, in order.
pub fn context_table(ui: &Ui, header: &[&str], parts: &[(String, Vec<Vec<String>>)]) -> String {
    let mut full_header = vec!["CONTEXT"];
    full_header.extend_from_slice(header);
    let rows: Vec<Vec<String>> = parts
        .iter()
        .flat_map(|(label, rows)| {
            rows.iter().map(move |r| {
                let mut row = vec![label.clone()];
                row.extend(r.iter().cloned());
                row
            })
        })
        .collect();
    ui.table(&full_header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn globs_match_like_shell_patterns() {
        assert!(glob_matches("prod-*", "prod-eu"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("p?od", "prod"));
        assert!(glob_matches("*-eu-*", "gke-eu-west"));
        assert!(!glob_matches("prod-*", "staging-prod-eu"));
        assert!(!glob_matches("prod", "prod-eu"));
        assert!(glob_matches("a*b*c", "aXbYbZc"));
        assert!(!glob_matches("a*b*c", "aXbYbZ"));
    }

    #[test]
    fn patterns_choose_in_the_order_given_and_exclusions_take_out() {
        let all = names(&["staging", "prod-us", "prod-eu", "prod-cn", "dev"]);
        assert_eq!(
            select_contexts(&all, &names(&["staging", "prod-*", "!prod-cn"])).unwrap(),
            names(&["staging", "prod-eu", "prod-us"])
        );
        // Only exclusions: out of every context, sorted by name.
        assert_eq!(
            select_contexts(&all, &names(&["!prod-*"])).unwrap(),
            names(&["dev", "staging"])
        );
        // A context named twice is read once.
        assert_eq!(
            select_contexts(&all, &names(&["dev", "d*"])).unwrap(),
            names(&["dev"])
        );
    }

    #[test]
    fn recorded_contexts_are_chosen_by_the_same_patterns() {
        let p = names(&["prod-*", "!prod-cn"]);
        assert!(chooses(&p, "prod-eu"));
        assert!(!chooses(&p, "prod-cn"));
        assert!(!chooses(&p, "dev"));
        assert!(chooses(&names(&["!dev"]), "prod"));
        assert!(chooses(&[], "any"));
    }

    #[test]
    fn a_pattern_that_chooses_nothing_is_a_usage_error() {
        let all = names(&["prod-eu", "dev"]);
        let e = select_contexts(&all, &names(&["prd-*"])).unwrap_err();
        assert_eq!(e.exit_code(), exit::USAGE);
        assert!(e.to_string().contains("no context matches"), "{e}");
        let e = select_contexts(&all, &names(&["prod"])).unwrap_err();
        assert!(e.to_string().contains("\"prod\" was not found"), "{e}");
        let e = select_contexts(&all, &names(&["*", "!*"])).unwrap_err();
        assert!(e.to_string().contains("every context is excluded"), "{e}");
        assert!(select_contexts(&all, &names(&[""])).is_err());
    }

    #[test]
    fn exit_codes_say_whether_some_contexts_were_not_read() {
        let ok = |code: u8| ClusterRead {
            contexts: vec!["a".into()],
            server: String::new(),
            outcome: Ok(code),
            took: Duration::ZERO,
        };
        let failed = || ClusterRead::<u8> {
            contexts: vec!["b".into()],
            server: String::new(),
            outcome: Err(ContextFailure {
                reason: "x".into(),
                exit_code: exit::CLUSTER,
            }),
            took: Duration::ZERO,
        };
        assert_eq!(exit_code(&[ok(0), ok(1)], |c| *c), exit::PROBLEMS);
        assert_eq!(exit_code(&[ok(0), ok(0)], |c| *c), exit::SUCCESS);
        assert_eq!(
            exit_code(&[ok(1), failed()], |c| *c),
            exit::SOME_CONTEXTS_UNREAD
        );
        assert_eq!(exit_code(&[failed(), failed()], |c| *c), exit::CLUSTER);
    }
}
