//! Why a command stopped, each reason with its fixed exit code ([`CommandError`]), and how a
//! plugin's `main` turns a command's result into that code and says why it stopped. A
//! request's failure comes from placekit-client typed ([`ClientError`]) and is kept whole
//! as the cause; its exit code, and what the person should do about it ([`client_advice`]),
//! are decided here.

use placekit_client::connect::ConnectError;
use placekit_client::error::{ClientError, TransportCause};
use placekit_client::targets::TargetsError;
use placekit_core::exit;
use placekit_core::snapshot::SnapshotError;

/// Why a command stopped. Each maps to one of the fixed exit codes ([`CommandError::exit_code`]).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Bad arguments or input; nothing was changed.
    #[error("{0}")]
    Input(String),
    /// The arguments do not name the nodes to act on; nothing was changed.
    #[error(transparent)]
    Targets(#[from] TargetsError),
    /// Plans or policy checks blocked the change; nothing was changed.
    #[error("{0}")]
    Blocked(String),
    /// No terminal to confirm on and no --yes; nothing was changed.
    #[error(
        "refusing to change {0} without confirmation: there is no terminal to ask on; re-run with --yes after checking the plan (or --dry-run=client to see it)"
    )]
    NeedsConfirmation(String),
    /// The person answered no.
    #[error("aborted: nothing was changed")]
    Declined,
    /// A snapshot of another cluster was named without `--other-cluster`.
    #[error(
        "{snapshot} was taken on another cluster ({taken_on}); the current context {context:?} points at {current}: nothing was changed (switch with --context, or pass --other-cluster to roll it back here anyway)"
    )]
    OtherCluster {
        snapshot: String,
        taken_on: String,
        context: String,
        current: String,
    },
    /// `rollback --last` (or `show --last`) found the other plugin's change on top of the
    /// cluster's undo stack; nothing was changed.
    #[error("{0}")]
    UndoOrder(String),
    /// RBAC denies what the command needs; nothing was changed.
    #[error("{0}")]
    Forbidden(String),
    /// The API server answered with something the command cannot go on from.
    #[error("{0}")]
    Cluster(String),
    /// A request to the API server failed (no answer, an error answer, no connection):
    /// the client's error, kept whole as the cause, and what to do about it.
    #[error("{0}{advice}", advice = client_advice(.0))]
    Client(#[from] ClientError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The snapshot could not be written (so nothing was changed) or read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// `completion --install/--uninstall` could not write or remove the helper
    /// (`complete::HelperError`, kept whole as the cause).
    #[error("{0}")]
    Completion(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<ConnectError> for CommandError {
    fn from(e: ConnectError) -> Self {
        CommandError::Client(ClientError::Connect(e))
    }
}

impl CommandError {
    /// The exit code this error stands for.
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Client(e) => client_exit_code(e),
            CommandError::Input(_)
            | CommandError::Targets(_)
            | CommandError::NeedsConfirmation(_)
            | CommandError::OtherCluster { .. }
            | CommandError::UndoOrder(_)
            | CommandError::Snapshot(_)
            | CommandError::Completion(_) => exit::USAGE,
            CommandError::Blocked(_) | CommandError::Declined => exit::PROBLEMS,
            CommandError::Forbidden(_) | CommandError::Cluster(_) | CommandError::Runtime(_) => {
                exit::CLUSTER
            }
        }
    }

    /// A kube error with the verb/resource it was about ([`ClientError::from_api`]).
    pub fn from_api(e: kube::Error, doing: &str) -> CommandError {
        CommandError::Client(ClientError::from_api(e, doing))
    }

    /// The HTTP status the API server answered with, when it answered.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            CommandError::Client(e) => e.status_code(),
            _ => None,
        }
    }

    /// RBAC denies it: a 403 answer, or a permission check that said no.
    pub fn is_forbidden(&self) -> bool {
        match self {
            CommandError::Forbidden(_) => true,
            CommandError::Client(e) => e.is_forbidden(),
            _ => false,
        }
    }

    /// The request got no answer (or none within its deadline).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, CommandError::Client(ClientError::Unreachable(_)))
    }
}

/// A request's failure as an exit code: named nodes missing and a request the server
/// refused as malformed (400) are the user's input; everything else is the cluster's.
fn client_exit_code(e: &ClientError) -> u8 {
    match e {
        ClientError::Connect(c) if connect_is_usage(c) => exit::USAGE,
        ClientError::NodesNotFound(_) => exit::USAGE,
        ClientError::Api(_) if e.status_code() == Some(400) => exit::USAGE,
        ClientError::Denied { .. }
        | ClientError::Unreachable(_)
        | ClientError::Api(_)
        | ClientError::Connect(_)
        | ClientError::Paging { .. }
        | ClientError::UnreadableNode { .. } => exit::CLUSTER,
    }
}

/// Bad flags, and a kubeconfig entry the flags name that is not there or cannot be used as
/// written, are the user's to fix (exit 2); an unreadable kubeconfig or a client that cannot
/// be built stays with the cluster errors (exit 3).
fn connect_is_usage(e: &ConnectError) -> bool {
    matches!(
        e,
        ConnectError::BadTimeout(_)
            | ConnectError::MissingKubeconfig(_)
            | ConnectError::NoConfiguration
            | ConnectError::Flags(_)
            | ConnectError::NotFound { .. }
            | ConnectError::InsecureWithCa(_)
    )
}

/// A request's failure as the person reads it: the client's message and [`client_advice`].
pub fn client_message(e: &ClientError) -> String {
    format!("{e}{}", client_advice(e))
}

/// What the person should do about a request's failure, and whether anything was changed,
/// as the tail of its message (empty when the failure says enough).
pub fn client_advice(e: &ClientError) -> &'static str {
    match e {
        ClientError::NodesNotFound(_) => {
            "; nothing was changed (check the name with `kubectl get nodes`)"
        }
        ClientError::Denied { .. } => "; nothing was changed",
        ClientError::Api(api) if api.anonymous() => {
            " (the server saw no credentials: check the user of the kubeconfig context, and that the server is https://; nothing was changed)"
        }
        ClientError::Api(_) => match e.status_code() {
            Some(403) => " (ask for the missing RBAC permission; nothing was changed)",
            Some(401) => " (check the credentials of the kubeconfig context)",
            _ => "",
        },
        ClientError::Unreachable(u) => match u.cause {
            TransportCause::ConnectionRefused => {
                " (is the API server running, and are the host and port right?)"
            }
            TransportCause::NoSuchHost => " (check the server address in the kubeconfig)",
            TransportCause::Timeout => " (Client.Timeout exceeded; see --request-timeout)",
            TransportCause::UnknownAuthority => " (check certificate-authority in the kubeconfig)",
            TransportCause::TooLong => " (a very long selector?)",
            TransportCause::NameMismatch
            | TransportCause::Expired
            | TransportCause::Reset
            | TransportCause::Other(_) => "",
        },
        ClientError::Connect(ConnectError::NotFound { .. }) => {
            " (see `kubectl config get-contexts`)"
        }
        ClientError::Connect(ConnectError::InsecureWithCa(_)) => {
            " (remove insecure-skip-tls-verify or the certificate authority)"
        }
        ClientError::Connect(_)
        | ClientError::Paging { .. }
        | ClientError::UnreadableNode { .. } => "",
    }
}

/// Runs async work on a multi-thread runtime built for it.
pub fn block_on<T>(work: impl Future<Output = Result<T, CommandError>>) -> Result<T, CommandError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CommandError::Runtime)?;
    let result = runtime.block_on(work);
    // Work left behind — an exec credential plugin a context's deadline gave up on — must
    // not keep the finished command waiting.
    runtime.shutdown_background();
    result
}

impl From<crate::complete::HelperError> for CommandError {
    fn from(e: crate::complete::HelperError) -> Self {
        CommandError::Completion(Box::new(e))
    }
}

/// Runs a plugin's async work on a runtime built only now (after argument parsing, so
/// `--help` and `--version` never build one) and turns the result into the fixed exit code,
/// printing the error, if any, the way every plugin does.
pub fn run_to_exit_code(
    work: impl Future<Output = Result<u8, CommandError>>,
) -> std::process::ExitCode {
    exit_code(block_on(work))
}

/// The fixed exit code of a command's result, printing the error, if any; a command that
/// succeeded but drew server warnings under `--warnings-as-errors` exits 1.
pub fn exit_code(result: Result<u8, CommandError>) -> std::process::ExitCode {
    match result {
        // The report's rendering failed (said already): 1, as kubectl's.
        Ok(exit::SUCCESS) if crate::outcome::output_failed() => {
            std::process::ExitCode::from(exit::PROBLEMS)
        }
        Ok(code) => match crate::outcome::failing_warnings() {
            Some(n) if code == exit::SUCCESS => {
                eprintln!(
                    "error: the server sent {} (--warnings-as-errors)",
                    placekit_core::text::count(n, "warning")
                );
                std::process::ExitCode::from(exit::PROBLEMS)
            }
            _ => std::process::ExitCode::from(code),
        },
        Err(e) => report(&e),
    }
}

/// Says why the command stopped, on stderr, and returns its exit code. The last stop before
/// the terminal: no configured secret gets past it, and no control character from a cluster
/// string or a file.
pub fn report(e: &CommandError) -> std::process::ExitCode {
    eprintln!(
        "error: {}",
        placekit_core::text::escape_controls(
            &placekit_client::secrets::redact(&e.to_string()),
            true
        )
    );
    std::process::ExitCode::from(e.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_fixed() {
        let client = |e| CommandError::Client(e);
        assert_eq!(
            client(ClientError::NodesNotFound(vec!["x".into()])).exit_code(),
            exit::USAGE
        );
        assert_eq!(
            CommandError::Forbidden("x".into()).exit_code(),
            exit::CLUSTER
        );
        assert_eq!(
            client(ClientError::Denied {
                verb: "patch".into(),
                resource: "nodes".into(),
                group: String::new()
            })
            .exit_code(),
            exit::CLUSTER
        );
        assert_eq!(
            CommandError::Blocked("x".into()).exit_code(),
            exit::PROBLEMS
        );
        assert_eq!(
            CommandError::NeedsConfirmation("x".into()).exit_code(),
            exit::USAGE
        );
        assert_eq!(
            CommandError::from(TargetsError::AllAndSelector).exit_code(),
            exit::USAGE
        );
    }

    #[test]
    fn an_api_answer_decides_the_exit_code_by_its_status() {
        let answer = |code: u16, reason: &str| {
            kube::Error::Api(
                kube::core::Status::failure("refused", reason)
                    .with_code(code)
                    .boxed(),
            )
        };
        let forbidden = CommandError::from_api(answer(403, "Forbidden"), "listing nodes");
        assert!(forbidden.is_forbidden());
        assert_eq!(forbidden.exit_code(), exit::CLUSTER);
        let bad_request = CommandError::from_api(answer(400, "BadRequest"), "patching node/a");
        assert_eq!(bad_request.exit_code(), exit::USAGE);
        assert!(!bad_request.is_forbidden());
    }

    /// The client says what happened; the advice, and whether anything was changed, is
    /// added here, so the person reads the same whole message as before the split.
    #[test]
    fn the_advice_is_the_applications() {
        let answer = |code: u16, message: &str| {
            kube::Error::Api(
                kube::core::Status::failure(message, "Forbidden")
                    .with_code(code)
                    .boxed(),
            )
        };
        let cases = [
            (
                CommandError::Client(ClientError::NodesNotFound(vec!["a".into()])),
                "node \"a\" not found",
                "node \"a\" not found; nothing was changed (check the name with `kubectl get nodes`)",
            ),
            (
                CommandError::from_api(
                    answer(403, "nodes is forbidden: User \"u\""),
                    "listing nodes",
                ),
                "forbidden while listing nodes: nodes is forbidden: User \"u\"",
                "forbidden while listing nodes: nodes is forbidden: User \"u\" (ask for the missing RBAC permission; nothing was changed)",
            ),
            (
                CommandError::from_api(
                    answer(403, "nodes is forbidden: User \"system:anonymous\""),
                    "listing nodes",
                ),
                "forbidden while listing nodes: nodes is forbidden: User \"system:anonymous\"",
                "forbidden while listing nodes: nodes is forbidden: User \"system:anonymous\" (the server saw no credentials: check the user of the kubeconfig context, and that the server is https://; nothing was changed)",
            ),
            (
                CommandError::from_api(answer(401, "Unauthorized"), "listing nodes"),
                "unauthorized while listing nodes: Unauthorized",
                "unauthorized while listing nodes: Unauthorized (check the credentials of the kubeconfig context)",
            ),
            (
                CommandError::Client(ClientError::Unreachable(Box::new(
                    placekit_client::error::Unreachable {
                        doing: "listing nodes".into(),
                        server: Some("https://127.0.0.1:1".into()),
                        cause: TransportCause::ConnectionRefused,
                        source: None,
                    },
                ))),
                "cannot reach the cluster at https://127.0.0.1:1 while listing nodes: connect: connection refused",
                "cannot reach the cluster at https://127.0.0.1:1 while listing nodes: connect: connection refused (is the API server running, and are the host and port right?)",
            ),
        ];
        for (error, fact, said) in cases {
            let CommandError::Client(client) = &error else {
                unreachable!("a client error")
            };
            assert_eq!(client.to_string(), fact);
            assert_eq!(error.to_string(), said);
            assert_eq!(client_message(client), said);
        }
    }
}
