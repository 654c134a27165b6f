//! Why a request to the API server failed, each cause kept typed ([`ClientError`]): an
//! answer of the API server whole, a transport error in kubectl's words ([`TransportCause`]),
//! a connection that could not be made. The messages say what happened, never what to do:
//! exit codes and what the person should do next belong to the application
//! (`placekit_cli::error::CommandError`, which adds its advice to these messages).

use crate::connect::ConnectError;

/// Why a request to the API server, or the reading of its answer, failed. The cli crate's
/// `CommandError` carries it whole and gives it its exit code.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Named nodes that do not exist.
    #[error("{}", missing_nodes_message(.0))]
    NodesNotFound(Vec<String>),
    /// A permission check (SelfSubjectAccessReview) said no.
    #[error(
        "you are not allowed to {verb} {resource}: missing RBAC permission verb={verb:?} resource={resource:?} group={group:?}"
    )]
    Denied {
        verb: String,
        resource: String,
        group: String,
    },
    /// The request never got an answer: the cause in the words kubectl users know
    /// (`connection refused`, `no such host`, `x509: certificate signed by unknown
    /// authority`), with the server it was for.
    #[error(transparent)]
    Unreachable(Box<Unreachable>),
    /// The API server answered with an error (RBAC, credentials, a refused request, an
    /// answer that could not be read): the answer is kept whole as the cause, with its
    /// status code and reason ([`ClientError::status_code`]).
    #[error(transparent)]
    Api(Box<ApiError>),
    /// The kubeconfig, the flags or the credentials could not give a client.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// A list's pages could not be followed to the end (too many, a repeated token, too
    /// large, not a list).
    #[error("{doing}: {source}")]
    Paging {
        doing: String,
        #[source]
        source: crate::paging::PageError,
    },
    /// A node whose labels or taints could not be read into a plan's state.
    #[error("unreadable node {node}: {source}")]
    UnreadableNode {
        node: String,
        #[source]
        source: serde_json::Error,
    },
}

/// A request that got no answer, or none within its deadline.
#[derive(Debug, thiserror::Error)]
#[error("cannot reach the cluster{} while {doing}: {cause}", server.as_deref().map(|s| format!(" at {s}")).unwrap_or_default())]
pub struct Unreachable {
    pub doing: String,
    pub server: Option<String>,
    pub cause: TransportCause,
    /// The transport error, when a request failed (not when a deadline passed).
    #[source]
    pub source: Option<kube::Error>,
}

/// An error answer of the API server, with what the command was doing.
#[derive(Debug, thiserror::Error)]
#[error("{}", api_message(.doing, .source))]
pub struct ApiError {
    pub doing: String,
    #[source]
    pub source: kube::Error,
}

fn missing_nodes_message(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    format!(
        "node{} {} not found",
        if names.len() == 1 { "" } else { "s" },
        quoted.join(", ")
    )
}

impl ClientError {
    /// A kube error with the verb/resource it was about: an answer of the API server is kept
    /// whole as the cause ([`ClientError::Api`]); a request that got no answer is
    /// [`ClientError::Unreachable`], with the transport error as its cause.
    pub fn from_api(e: kube::Error, doing: &str) -> ClientError {
        match e {
            kube::Error::Api(_) | kube::Error::SerdeError(_) => {
                ClientError::Api(Box::new(ApiError {
                    doing: doing.to_string(),
                    source: e,
                }))
            }
            source => ClientError::Unreachable(Box::new(Unreachable {
                doing: doing.to_string(),
                server: crate::connect::current_server(),
                cause: transport_cause(&source),
                source: Some(source),
            })),
        }
    }

    /// The HTTP status the API server answered with, when it answered.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            ClientError::Api(e) => match &e.source {
                kube::Error::Api(status) => Some(status.code),
                _ => None,
            },
            _ => None,
        }
    }

    /// RBAC denies it: a 403 answer, or a permission check that said no.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, ClientError::Denied { .. }) || self.status_code() == Some(403)
    }
}

/// An error answer of the API server in words: what was refused, while doing what.
fn api_message(doing: &str, error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if status.code == 403 => {
            format!("forbidden while {doing}: {}", status.message)
        }
        kube::Error::Api(status) if status.code == 401 => {
            format!("unauthorized while {doing}: {}", status.message)
        }
        kube::Error::Api(status) if status.code == 400 => {
            format!("while {doing}: {}", status.message)
        }
        kube::Error::Api(status) => format!(
            "the API server answered {} {} while {doing}: {}",
            status.code, status.reason, status.message
        ),
        // An answer came but could not be read: not a connection problem.
        other => format!("cannot read the API server's answer while {doing}: {other}"),
    }
}

impl ApiError {
    /// The server refused a request it saw without credentials (`system:anonymous`).
    pub fn anonymous(&self) -> bool {
        matches!(&self.source, kube::Error::Api(status)
            if status.code == 403 && status.message.contains("User \"system:anonymous\""))
    }
}

/// Why a request got no answer, in the words kubectl users know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportCause {
    #[error("connect: connection refused")]
    ConnectionRefused,
    #[error("lookup failed: no such host")]
    NoSuchHost,
    #[error(
        "tls: failed to verify certificate: x509: certificate is not valid for the server's name"
    )]
    NameMismatch,
    #[error("tls: failed to verify certificate: x509: certificate has expired or is not yet valid")]
    Expired,
    #[error("timeout awaiting the server's answer")]
    Timeout,
    /// A CA of the same name that did not sign it (BadSignature) is as unknown.
    #[error("tls: failed to verify certificate: x509: certificate signed by unknown authority")]
    UnknownAuthority,
    #[error("connection reset by peer")]
    Reset,
    #[error("the request is too long for the server")]
    TooLong,
    /// Anything else: the innermost cause's own words (credentials redacted).
    #[error("{0}")]
    Other(String),
}

/// Why a request got no answer, from the innermost causes of the error chain, in kubectl's
/// words where there are some; never the request or the configuration (no credentials).
pub fn transport_cause(error: &(dyn std::error::Error + 'static)) -> TransportCause {
    let mut chain = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        chain.push(crate::connect::redact_exec(&e.to_string()));
        next = e.source();
    }
    let all = chain.join(": ").to_ascii_lowercase();
    let known = [
        (
            &["connection refused"][..],
            TransportCause::ConnectionRefused,
        ),
        (
            &[
                "failed to lookup address",
                "name or service not known",
                "nodename nor servname",
                "no such host",
            ][..],
            TransportCause::NoSuchHost,
        ),
        (
            &[
                "notvalidforname",
                "not valid for name",
                "certificate is not valid for",
            ][..],
            TransportCause::NameMismatch,
        ),
        (&["expired", "notvalidyet"][..], TransportCause::Expired),
        (
            &["timed out", "deadline has elapsed", "timeout"][..],
            TransportCause::Timeout,
        ),
        (
            &[
                "unknownissuer",
                "unknown issuer",
                "unknown ca",
                "badsignature",
                "invalid peer certificate",
            ][..],
            TransportCause::UnknownAuthority,
        ),
        (&["connection reset"][..], TransportCause::Reset),
        (&["uri too long"][..], TransportCause::TooLong),
    ];
    for (needles, cause) in known {
        if needles.iter().any(|n| all.contains(n)) {
            return cause;
        }
    }
    // The innermost cause says most; the outer ones ("client error (Connect)") wrap it.
    TransportCause::Other(chain.last().cloned().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_nodes_are_named() {
        assert_eq!(
            ClientError::NodesNotFound(vec!["a".into(), "b".into()]).to_string(),
            "nodes \"a\", \"b\" not found"
        );
    }

    /// An answer of the API server stays typed: whoever handles it reads the status code and
    /// reason from the cause, and the message is kubectl's.
    #[test]
    fn an_api_answer_is_kept_as_the_cause() {
        use std::error::Error as _;
        let answer = |code: u16, reason: &str| {
            kube::Error::Api(
                kube::core::Status::failure("nodes is forbidden: User \"u\" cannot list", reason)
                    .with_code(code)
                    .boxed(),
            )
        };
        let forbidden = ClientError::from_api(answer(403, "Forbidden"), "listing nodes");
        assert_eq!(forbidden.status_code(), Some(403));
        assert!(forbidden.is_forbidden());
        assert_eq!(
            forbidden.to_string(),
            "forbidden while listing nodes: nodes is forbidden: User \"u\" cannot list"
        );
        let cause = forbidden.source().expect("the kube error is the cause");
        match cause.downcast_ref::<kube::Error>() {
            Some(kube::Error::Api(status)) => assert_eq!(status.reason, "Forbidden"),
            other => panic!("not the API answer: {other:?}"),
        }
        let bad_request = ClientError::from_api(answer(400, "BadRequest"), "patching node/a");
        assert_eq!(bad_request.status_code(), Some(400));
        assert!(!bad_request.is_forbidden());
        let conflict = ClientError::from_api(answer(409, "Conflict"), "patching node/a");
        assert_eq!(
            conflict.to_string(),
            "the API server answered 409 Conflict while patching node/a: nodes is forbidden: User \"u\" cannot list"
        );
    }
}
