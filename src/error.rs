//! Errors, one enum per audience: the caller's misuse ([`UsageError`]), one request's outcome
//! ([`RequestError`]), the session's end ([`SessionError`]), and peer misbehaviour that the session
//! tolerates ([`Warning`]).

use crate::jsonrpc::{RequestId, RpcError};
use std::time::Duration;

/// The caller used the session wrongly; nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UsageError {
    /// A command other than `initialize` came before the handshake completed.
    #[error("initialize first: the session is not ready")]
    NotReady,
    /// `initialize` was called twice.
    #[error("initialize was already sent")]
    AlreadyInitialized,
    /// The session is closed or failed.
    #[error("the session is closed")]
    Closed,
    /// `cancel` named a request that is not pending.
    #[error("no pending request with id {0}")]
    UnknownRequest(RequestId),
    /// `cancel` named the `initialize` request.
    ///
    /// > "The client MUST NOT attempt to cancel its `initialize` request."
    /// > — MCP 2025-11-25, Utilities § Cancellation
    #[error("initialize cannot be cancelled")]
    CannotCancelInitialize,
    /// A tool call was asked for with a request that is not `tools/call`.
    #[error("not a tools/call request: {0:?}")]
    NotAToolCall(String),
    /// The modern era has no session to renew (its requests carry everything they need).
    #[error("the modern era has no session to renew")]
    Stateless,
    /// `respond` named a server request that is not open (cancelled, or its call ended).
    #[error("no open server request with handle {0}")]
    UnknownAsk(u64),
    /// The application's answer to a server request does not have its method's shape; the
    /// server was told the client failed (or the call failed).
    #[error("invalid answer to {method}: {reason}")]
    InvalidAnswer {
        /// The server request's method.
        method: String,
        /// What is wrong with the answer.
        reason: String,
    },
}

/// Why one request failed. Each is fatal for that request; none ends the session.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The server answered with a JSON-RPC error.
    #[error("server error: {0}")]
    Rpc(RpcError),
    /// No answer before the request's deadline (with
    /// [`Request::reset_timeout_on_progress`](crate::Request::reset_timeout_on_progress): no
    /// answer and no progress for this long); `notifications/cancelled` was sent.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The request's maximum total time passed
    /// ([`Request::reset_timeout_on_progress`](crate::Request::reset_timeout_on_progress)),
    /// however much progress it reported; `notifications/cancelled` was sent.
    #[error("request exceeded its maximum total time of {0:?}")]
    TotalTimeout(Duration),
    /// The caller cancelled the request; `notifications/cancelled` was sent.
    #[error("request cancelled: {0}")]
    Cancelled(String),
    /// The connection ended (or the session was closed) before the answer.
    #[error("connection closed before the response")]
    Closed,
    /// The answer was larger than the message limit and was discarded unread.
    #[error("message larger than the limit: {len} bytes, limit {limit}")]
    TooLarge {
        /// The message's size in bytes.
        len: u64,
        /// The limit it exceeded.
        limit: usize,
    },
    /// The answer's `result` did not have the shape its method defines.
    #[error("invalid {method} result: {reason}")]
    InvalidResult {
        /// The request's method.
        method: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The server does not speak the protocol version the request carried, and no other
    /// version both speak was left to retry with (modern era, -32022).
    #[error("{}", unsupported_text(requested, supported, ours))]
    UnsupportedVersion {
        /// The version the request carried.
        requested: String,
        /// What the server said it supports (`data.supported`).
        supported: Vec<String>,
        /// What this client speaks.
        ours: Vec<String>,
    },
    /// The server found the request's HTTP headers not matching its body (modern era, -32020).
    #[error("the server rejected the request's headers: {0}")]
    HeaderMismatch(RpcError),
    /// The request needs a client capability this client did not declare (modern era, -32021).
    #[error("the server requires client capabilities this client did not declare: {required}")]
    MissingCapability {
        /// `data.requiredCapabilities`, as sent.
        required: serde_json::Value,
        /// The server's error.
        error: RpcError,
    },
    /// The server asked for input (an input-required round) that this client cannot give: it
    /// declared no capability for these requests.
    #[error("the server asked for input this client does not provide: {}", methods.join(", "))]
    InputUnsupported {
        /// The methods of the input requests (`elicitation/create`, `sampling/createMessage`, …).
        methods: Vec<String>,
    },
    /// The call's arguments cannot be sent: a value mirrored into an HTTP header does not fit
    /// the type the tool declares for it (modern era). Nothing was sent; the model can correct
    /// its arguments.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The application could not give the input the server asked for (its handler failed, or
    /// its answer was invalid).
    #[error("the {method} the server asked for failed: {reason}")]
    InputFailed {
        /// The input request's method.
        method: String,
        /// Why.
        reason: String,
    },
    /// The server did not declare the capability this request needs (`resources`,
    /// `resources.subscribe`, `prompts`, `completions`). Nothing was sent.
    #[error("the server does not offer {capability} (needed for {method})")]
    NotOffered {
        /// The request's method.
        method: String,
        /// The capability it needs, as a path in the server's `capabilities`.
        capability: String,
    },
    /// The request has no place in the session's era (`resources/subscribe` in 2026-07-28,
    /// where `instead` carries what it did). Nothing was sent.
    #[error("{method} is not in this protocol era: {instead} replaces it")]
    NotInEra {
        /// The request's method.
        method: String,
        /// What replaces it.
        instead: &'static str,
    },
    /// The server acknowledged the subscription's listen without resource `uri`: it agreed not
    /// to send its updates (2026-07-28; the URI stays wanted, for a later listen).
    #[error("the server did not agree to send updates of {uri}")]
    SubscriptionRefused {
        /// The resource.
        uri: String,
    },
    /// The server still wanted more input after the most rounds the client allows.
    #[error("the server still required input after {limit} rounds; giving up")]
    TooManyRounds {
        /// The cap ([`Config::max_input_rounds`](crate::Config::max_input_rounds)).
        limit: u32,
    },
}

/// Why the session ended during the handshake. Every pending request fails with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The server chose a protocol revision this client does not speak.
    #[error("server chose protocol version {offered:?}, which this client does not support (supported: {})", supported.join(", "))]
    UnsupportedVersion {
        /// What the server answered.
        offered: String,
        /// What this client speaks.
        supported: Vec<String>,
    },
    /// The server answered `initialize` with an error, or its answer could not be read.
    #[error("initialize failed: {0}")]
    Initialize(RequestError),
    /// The connection ended before the handshake completed.
    #[error("the connection closed during the handshake")]
    Closed,
    /// The server ended while its era was being probed (`server/discover`, before any answer):
    /// a legacy server that exits on an unknown request. Start it again and speak the legacy era
    /// to it ([`EraChoice::Legacy`](crate::EraChoice::Legacy)).
    #[error(
        "the server ended on the era probe (server/discover): start it again in the legacy era"
    )]
    EndedOnProbe,
    /// The program is not an MCP server: during the opening it wrote only lines that are not
    /// JSON-RPC on its stdout, and did not answer within
    /// [`Config::junk_timeout`](crate::Config::junk_timeout) of the later of its first such line
    /// and the opening's last request.
    ///
    /// > "The server **MUST NOT** write anything to its stdout that is not a valid MCP message."
    /// > — MCP 2025-11-25, Transports § stdio
    #[error("{}", not_an_mcp_server_text(printed, *more, unanswered))]
    NotAnMcpServer {
        /// Its first such line: control characters removed, at most
        /// [`QUOTED_LINE_MAX`](crate::session::QUOTED_LINE_MAX) characters.
        printed: String,
        /// How many more such lines it wrote.
        more: u64,
        /// The opening's request it did not answer (`initialize`, or `server/discover`).
        unanswered: String,
    },
    /// `server/discover` failed in the modern era (forced, or after the server showed it is
    /// modern).
    #[error("server/discover failed, so the server does not speak the modern era (2026-07-28) as asked: {0}")]
    Discover(RequestError),
    /// The server and this client share no protocol version (the server may have named none).
    #[error("{}", no_common_text(theirs, ours))]
    NoCommonVersion {
        /// What the server supports.
        theirs: Vec<String>,
        /// What this client speaks (modern and legacy, or one era's when the configuration
        /// forces it).
        ours: Vec<String>,
    },
    /// The server refused the protocol version it was sent (-32022) although it lists that
    /// version, or another this client speaks, as supported, and the one retry was spent: the
    /// server contradicts itself, and its own message says what went wrong.
    #[error("{}", refused_text(requested, supported, message))]
    VersionRefused {
        /// The version the refused request carried.
        requested: String,
        /// What the server said it supports (`data.supported`).
        supported: Vec<String>,
        /// The server's error message (at most 256 characters).
        message: String,
    },
}

/// [`SessionError::NoCommonVersion`]'s text: an empty list is said as such.
fn no_common_text(theirs: &[String], ours: &[String]) -> String {
    if theirs.is_empty() {
        format!(
            "no protocol version in common: the server names no version it supports; this client speaks {}",
            ours.join(", ")
        )
    } else {
        format!(
            "no protocol version in common: the server supports {}; this client speaks {}",
            theirs.join(", "),
            ours.join(", ")
        )
    }
}

/// [`SessionError::VersionRefused`]'s text.
fn refused_text(requested: &str, supported: &[String], message: &str) -> String {
    let list = supported.join(", ");
    if supported.iter().any(|s| s == requested) {
        format!("the server refused protocol version {requested} although it lists it as supported ({list}); it said: {message:?}")
    } else {
        format!("the server refused protocol version {requested} and names {list}, which it did not accept when asked either; it said: {message:?}")
    }
}

/// [`RequestError::UnsupportedVersion`]'s text: a server that lists the version it refused, or
/// names none, is said to.
fn unsupported_text(requested: &str, supported: &[String], ours: &[String]) -> String {
    if supported.is_empty() {
        format!("the server does not support protocol version {requested} and names no version it supports (this client speaks: {})", ours.join(", "))
    } else if supported.iter().any(|s| s == requested) {
        format!("the server refused protocol version {requested} although it lists it as supported (it lists: {})", supported.join(", "))
    } else {
        format!("the server does not support protocol version {requested} (it supports: {}; this client speaks: {})", supported.join(", "), ours.join(", "))
    }
}

fn not_an_mcp_server_text(printed: &str, more: u64, unanswered: &str) -> String {
    let more = match more {
        0 => String::new(),
        1 => " (and 1 more line)".to_owned(),
        n => format!(" (and {n} more lines)"),
    };
    format!("not an MCP server: it printed {printed:?}{more} and did not answer {unanswered}")
}

/// Peer misbehaviour the session tolerated: reported, never fatal.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Warning {
    /// A line or message that is not JSON was skipped (a banner or log line on stdout, say).
    #[error("ignored a message that is not JSON ({len} bytes): {error}")]
    NotJson {
        /// Its length in bytes.
        len: usize,
        /// The parser's complaint.
        error: String,
        /// Its first bytes, lossily decoded, for the log.
        excerpt: String,
    },
    /// Well-formed JSON that is no JSON-RPC message was skipped.
    #[error("ignored a JSON value that is no JSON-RPC message: {0}")]
    NotJsonRpc(String),
    /// A response whose id matches no request this session ever sent.
    #[error("ignored a response with unknown id {0}")]
    UnknownId(String),
    /// An error response without an id (the server could not read something we sent).
    #[error("server reported an error without an id: {0}")]
    ErrorWithoutId(RpcError),
    /// A server request whose id is longer than the session echoes back was left unanswered.
    #[error(
        "left a server request unanswered: its id is {len} bytes, over the {limit}-byte limit"
    )]
    RequestIdTooLong {
        /// The id's length in bytes (as JSON).
        len: usize,
        /// The most the session echoes.
        limit: usize,
    },
    /// A message over the size limit was discarded.
    #[error("discarded a message of {len} bytes, over the {limit}-byte limit")]
    Oversized {
        /// Its length in bytes.
        len: u64,
        /// The limit.
        limit: usize,
    },
    /// A message whose text is not valid JSON text — invalid UTF-8, or a string with a lone
    /// surrogate escape (`\ud800`) — was read after its bad parts were replaced with U+FFFD
    /// (see [`text`](crate::text)): what the model reads shows U+FFFD there.
    #[error("read a message of {len} bytes after replacing {what} with U+FFFD")]
    Repaired {
        /// What was replaced.
        what: crate::text::Damage,
        /// The length in bytes of the text mended (the message, or the result in it).
        len: usize,
    },
    /// A cache hint (`ttlMs`, `cacheScope`) of a result could not be used and was ignored; the
    /// result was read all the same (see [`IgnoredHint`](crate::IgnoredHint)).
    #[error("ignored the {field} cache hint of a {method} result: {reason}")]
    CacheHintIgnored {
        /// The request's method.
        method: String,
        /// The member: `ttlMs` or `cacheScope`.
        field: &'static str,
        /// Why, with the value.
        reason: String,
    },
    /// A message for the server (a cancellation, an answer to one of its requests) could not be
    /// delivered by the transport: the server may keep working on a request given up on, or
    /// keep its own request open.
    #[error("could not deliver {what} to the server: {reason}")]
    Undelivered {
        /// What it was.
        what: String,
        /// Why it was not delivered.
        reason: String,
    },
    /// A tool whose `x-mcp-header` annotations break the rules was left out of the tool list
    /// (modern era over HTTP).
    #[error("left out tool {tool:?}: {reason}")]
    ToolRejected {
        /// The tool's name.
        tool: String,
        /// What is wrong with its annotations.
        reason: String,
    },
}
