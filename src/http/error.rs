//! The verdicts on responses: what a successful one carries ([`Body`]), why one is not usable
//! ([`HttpError`]), and the reading of a status that is not 2xx.

use super::redirect::RedirectRefused;
use super::wire::header;

/// What a successful response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    /// Nothing to read: a notification or response was accepted (202).
    None,
    /// One JSON-RPC message: read the whole body and hand it to [`Session::handle_message`].
    ///
    /// [`Session::handle_message`]: crate::Session::handle_message
    Json,
    /// An event stream: feed it to an [`SseDecoder`] as it arrives, and hand each event's
    /// message (see [`HttpRules::event_message`]) to the session.
    ///
    /// [`SseDecoder`]: crate::sse::SseDecoder
    /// [`HttpRules::event_message`]: crate::http::HttpRules::event_message
    EventStream,
    /// A request was refused with this status and a JSON body, which may be the JSON-RPC error
    /// answering it (a modern server answers `400` with `UnsupportedProtocolVersion`,
    /// `HeaderMismatch` or invalid params, and `404` with method not found): read the body (up to
    /// [`MAX_ERROR_BODY`]) and hand it to `HttpRules::on_error_body`.
    ///
    Refused {
        /// The HTTP status.
        status: u16,
    },
}

/// The most bytes of a refusal's JSON body read to find the JSON-RPC error in it.
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// Why a response is not usable, or a request cannot be made. Every `url` is redacted
/// ([`redact_url`](crate::http::redact_url)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The server forgot the session (404 to a message that carried its id), or it is being
    /// renewed: restart the session ([`Session::restart`](crate::Session::restart)) with the
    /// request's id, if the message was a request, and that request will be sent again.
    #[error("HTTP session expired at {url}")]
    SessionExpired {
        /// The URL.
        url: String,
    },
    /// A header value (from the server, say) cannot be sent; the request was not made.
    #[error("header {name} of a request to {url} is not visible ASCII; the request was not sent")]
    InvalidHeader {
        /// The header's name.
        name: String,
        /// The URL.
        url: String,
    },
    /// The message met a session that a renewal has already replaced (its 404 came late): a
    /// request is to be POSTed again as it is, in the current session (once; see
    /// `HttpRules::check_post` first); a notification or response is dropped.
    ///
    #[error("HTTP request to {url} met a session already replaced")]
    Resend {
        /// The URL.
        url: String,
    },
    /// 401: the server wants credentials (or others), with its `WWW-Authenticate` challenge
    /// (cut at 4 KiB).
    ///
    /// > "When authorization is required and not yet proven by the client, servers MUST respond
    /// > with HTTP 401 Unauthorized." — MCP 2025-11-25, Authorization § Error Handling
    #[error("HTTP 401 from {url}: authorization required")]
    Unauthorized {
        /// The `WWW-Authenticate` header, when sent.
        challenge: Option<String>,
        /// The URL.
        url: String,
    },
    /// 403: the credentials lack a permission; an `insufficient_scope` challenge names the scope.
    ///
    /// > "When a client makes a request with an access token with insufficient scope, the server
    /// > SHOULD respond with: HTTP 403 Forbidden status code, WWW-Authenticate header with the
    /// > Bearer scheme and additional parameters: error="insufficient_scope"" — MCP 2025-11-25,
    /// > Authorization § Scope Challenge Handling
    #[error("HTTP 403 from {url}: forbidden")]
    Forbidden {
        /// The `WWW-Authenticate` header, when sent.
        challenge: Option<String>,
        /// The URL.
        url: String,
    },
    /// A redirect that is not followed (`HttpRules::on_redirect`): nothing was sent where it
    /// points.
    ///
    #[error("HTTP {status} redirect from {url} not followed: {reason}")]
    Redirect {
        /// The redirect's status.
        status: u16,
        /// The URL that answered with it.
        url: String,
        /// Why it is not followed.
        reason: RedirectRefused,
    },
    /// Any other unexpected status (a redirect the driver did not ask
    /// `HttpRules::on_redirect` about, a 3xx that redirects nowhere, such as 304, included).
    ///
    #[error("HTTP {status} from {url}")]
    Status {
        /// The status code.
        status: u16,
        /// The URL.
        url: String,
    },
    /// The response ended without the request's answer and cannot be resumed.
    #[error("{reason} ({url})")]
    Unanswered {
        /// What happened.
        reason: String,
        /// The URL.
        url: String,
    },
    /// A message (a JSON body, an event) longer than the exchange's limit.
    #[error("a message of {} bytes from the server, over the limit of {limit}", len.map_or_else(|| "more than that".to_owned(), |l| l.to_string()))]
    TooLarge {
        /// Its length, as far as it was read (unknown for an event: it is not buffered).
        len: Option<u64>,
        /// The limit.
        limit: usize,
    },
    /// A 2xx answer to a request with neither JSON nor an event stream.
    #[error("unexpected content type {content_type:?} from {url}")]
    ContentType {
        /// What the server said.
        content_type: String,
        /// The URL.
        url: String,
    },
}

/// The verdict on a status that is not 2xx: 401 and 403 carry their challenge (for the OAuth
/// flow), any other is just its status.
pub(super) fn status_error<K: AsRef<str>, V: AsRef<str>>(
    status: u16,
    headers: &[(K, V)],
    url: String,
) -> HttpError {
    const MAX_CHALLENGE: usize = 4096;
    let challenge = || {
        header(headers, "www-authenticate").map(|v| {
            let mut end = v.len().min(MAX_CHALLENGE);
            while !v.is_char_boundary(end) {
                end -= 1;
            }
            v[..end].to_owned()
        })
    };
    match status {
        401 => HttpError::Unauthorized {
            challenge: challenge(),
            url,
        },
        403 => HttpError::Forbidden {
            challenge: challenge(),
            url,
        },
        _ => HttpError::Status { status, url },
    }
}
