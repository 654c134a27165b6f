//! Why paging through a list stopped short of its end ([`PageError`]), and the bounds that
//! stop it: a server that answers `continue` forever, repeats a token, sends an endless page
//! or more items than the page's limit costs the command an error, not its memory or time.

use crate::bounded::MAX_RESPONSE_BYTES;
use crate::protobuf;

/// The most list pages followed for one collection: more than any real cluster needs (5
/// million nodes at 500 a page), few enough that a server answering `continue` forever
/// stops the command instead of holding it.
pub const MAX_PAGES: usize = 10_000;

/// Why paging through a collection stopped.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error(transparent)]
    Api(kube::Error),
    #[error(
        "the API server answered {MAX_PAGES} pages and still gave a continue token; stopped (is a proxy or server broken?)"
    )]
    TooManyPages,
    #[error(
        "the API server gave the same continue token twice; stopped instead of asking for the same page forever"
    )]
    RepeatedToken,
    #[error("the API server's answer is over {MAX_RESPONSE_BYTES} bytes; stopped")]
    TooLarge,
    #[error(
        "the API server answered {got} items to a page of at most {asked}: refused (a server that ignores the limit could exhaust memory with tiny items)"
    )]
    TooManyItems { asked: u32, got: usize },
    #[error("the API server's answer is not a list: {0}")]
    NotAList(#[source] serde_json::Error),
    #[error("the API server's protobuf answer is not a list placekit reads: {0}")]
    NotAProtobufList(#[source] protobuf::DecodeError),
}
