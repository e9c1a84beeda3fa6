//! The driver's one error type.

use mcp_proto::{RequestError, RpcError, SessionError, UsageError};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

/// Everything that can go wrong when talking to an MCP server. Protocol errors, transport
/// failures, timeouts, cancellation and the server's exit stay distinct variants; a wrapped cause
/// is reachable through [`std::error::Error::source`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a JSON-RPC error.
    #[error("server error {}: {}", .0.code, .0.message)]
    Protocol(RpcError),
    /// The request got no answer within its timeout (the server was sent `notifications/cancelled`).
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The request was cancelled.
    #[error("request cancelled: {0}")]
    Cancelled(String),
    /// The server process ended (`status`), or closed its stdout and did not exit within 500 ms
    /// (`status: None`); `stderr` holds the last lines it wrote.
    #[error("{}{}", match status { Some(s) => format!("server exited ({s})"), None => "server closed its output".to_owned() }, stderr_suffix(stderr))]
    ServerExited {
        /// Its exit status, when it had exited.
        status: Option<ExitStatus>,
        /// The tail of its stderr.
        stderr: String,
    },
    /// The server process ended during the opening (as for [`ServerExited`](Self::ServerExited))
    /// after printing on its stdout only lines that are not JSON-RPC: most likely a program that
    /// is not an MCP server (a usage message, a greeting). `printed` is its first such line
    /// ([`Session::printed_only_junk`](mcp_proto::Session::printed_only_junk)), `more` how many
    /// more came.
    #[error("{} after printing {printed:?}{} on stdout — not an MCP server?{}", match status { Some(s) => format!("server exited ({s})"), None => "server closed its output".to_owned() }, more_lines(*more), stderr_suffix(stderr))]
    ExitedAfterPrinting {
        /// Its exit status, when it had exited.
        status: Option<ExitStatus>,
        /// Its first line on stdout, quoted: control characters removed, at most
        /// [`QUOTED_LINE_MAX`](mcp_proto::session::QUOTED_LINE_MAX) characters.
        printed: String,
        /// How many more lines that are not JSON-RPC it printed.
        more: u64,
        /// The tail of its stderr.
        stderr: String,
    },
    /// The connection is closed: [`close`](crate::Client::close) was called or the peer went away.
    #[error("connection closed")]
    Closed,
    /// Reading or writing the transport failed.
    #[error("transport error: {context}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The transport's outbound queue is full: the message was not sent, and the request it
    /// carried fails at once ([`Transport::send`](crate::Transport::send)). Over HTTP the
    /// connection goes on (`HttpTransportConfig::max_queued`); over stdio it is a server that
    /// stopped reading its input, past `StdioConfig::max_backlog`, and the connection fails too.
    #[error("{context}")]
    QueueFull {
        /// What is full, and how full.
        context: String,
    },
    /// An HTTP request was answered with an unexpected status.
    #[error("HTTP {status} from {url}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Http {
        /// The status code.
        status: u16,
        /// The URL requested.
        url: String,
        /// The start of the response body.
        body: String,
    },
    /// An HTTP answer broke the transport's rules (a content type that is neither JSON nor an
    /// event stream, a stream that ended without the answer and cannot be resumed, a header that
    /// cannot be sent). See [`mcp_proto::http::HttpError`].
    #[error(transparent)]
    HttpProtocol(mcp_proto::http::HttpError),
    /// The handshake failed (version refused, `initialize` error, connection lost).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A request failed in a way the protocol core reports (oversized or malformed answer, …).
    #[error(transparent)]
    Request(RequestError),
    /// The client was used wrongly (for instance, a call before `initialize`).
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// The transport's settings cannot be used (a URL with credentials, a header that cannot be
    /// sent).
    #[error(transparent)]
    Config(#[from] mcp_proto::http::ConfigError),
    /// The OAuth flow failed, or the server refused its tokens. What happened is the
    /// [`source`](std::error::Error::source), a [`mcp_proto::oauth::AuthError`] (no token or
    /// secret is in its message); this variant's own message does not repeat it, so an error
    /// chain says it once.
    #[error("authorization failed")]
    Auth(#[source] mcp_proto::oauth::AuthError),
    /// A server needs a transport this build leaves out: its cargo feature (`stdio` or `http`)
    /// is off.
    #[error(
        "this build has no {transport} transport (the driver crate's `{transport}` feature is off)"
    )]
    TransportUnavailable {
        /// The transport, which is also the feature's name: `"stdio"` or `"http"`.
        transport: &'static str,
    },
    /// The server asks for authorization (HTTP `401`) and this build has no OAuth: the driver
    /// crate's `oauth` feature is off. (With the feature on and no
    /// [`HttpTransportConfig::oauth`](crate::http::HttpTransportConfig::oauth) set, a `401` is
    /// [`Error::Http`].)
    #[error("HTTP 401 from {url}: the server asks for authorization, and this build has no OAuth (the driver crate's `oauth` feature is off)")]
    OAuthUnavailable {
        /// The URL requested.
        url: String,
    },
    /// `tools/list` pagination went wrong: a repeated cursor, more pages or more bytes than the
    /// caps.
    #[error("tools/list pagination: {0}")]
    Pagination(mcp_proto::PaginationError),
    /// The pagination of another listing (`resources/list`, `resources/templates/list`,
    /// `prompts/list`) went wrong, as [`Error::Pagination`] says.
    #[error("{method} pagination: {error}")]
    Listing {
        /// The listing's method.
        method: &'static str,
        /// What went wrong.
        error: mcp_proto::PaginationError,
    },
    /// A resource could not be read as asked: its contents over the cap, a template that does
    /// not expand.
    #[error(transparent)]
    Resource(mcp_proto::ResourceError),
    /// A skill was refused (the skills extension, SEP-2640): its entry breaks the rules, or a
    /// file read for it is not what the entry says (size, digest, frontmatter, a file outside
    /// the skill or not listed). The content is not returned.
    #[error(transparent)]
    Skill(mcp_proto::SkillError),
    /// A replayed recording cannot be read, or the client did not send what it records
    /// ([`ReplayTransport`](crate::recording::ReplayTransport)).
    #[error(transparent)]
    Replay(crate::recording::ReplayError),
}

impl Error {
    /// The message with every cause after it (`authorization failed: the token endpoint …`),
    /// each said once: for a line that has room for one text (a warning, a log record).
    pub fn chain(&self) -> String {
        chain(self)
    }
}

/// Any error's message with every cause after it ([`std::error::Error::source`]), each said once
/// (a cause whose text the line already holds is not repeated): [`Error::chain`], and the same
/// for errors that wrap one ([`SetError`](crate::SetError)). A transport library's own error
/// (isahc's, and curl's under it, with its codes such as `[7]`) is said in words instead, and not
/// itself: it stays reachable through `source()` for programs.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        if Said::is(cause) {
            break;
        }
        source = cause.source();
    }
    text
}

/// A library's error said in words: its `Display` is the words, its `source()` the library's
/// error (for programs), which [`chain`] does not print. Carried in an [`std::io::Error`] (as
/// [`Error::Io`]'s source), whose `source()` is this one's.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Said {
    /// What went wrong, in words.
    pub words: String,
    /// The library's error.
    pub cause: Box<dyn std::error::Error + Send + Sync>,
}

impl Said {
    /// Whether `e` is one, or an I/O error carrying one (shared, as [`Error::Io`]'s, or not).
    fn is(e: &(dyn std::error::Error + 'static)) -> bool {
        let io = e
            .downcast_ref::<Arc<std::io::Error>>()
            .map(|io| &**io)
            .or_else(|| e.downcast_ref::<std::io::Error>());
        e.is::<Said>()
            || io
                .and_then(|io| io.get_ref())
                .is_some_and(|inner| inner.is::<Said>())
    }
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.words)
    }
}

impl std::error::Error for Said {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.cause)
    }
}

fn more_lines(more: u64) -> String {
    match more {
        0 => String::new(),
        1 => " (and 1 more line)".to_owned(),
        n => format!(" (and {n} more lines)"),
    }
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; stderr: {}", stderr.trim_end())
    }
}

impl Error {
    #[cfg_attr(not(any(feature = "stdio", feature = "http")), allow(dead_code))]
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }
}

impl From<RequestError> for Error {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Rpc(rpc) => Error::Protocol(rpc),
            RequestError::Timeout(d) => Error::Timeout(d),
            RequestError::Cancelled(reason) => Error::Cancelled(reason),
            RequestError::Closed => Error::Closed,
            other => Error::Request(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_says_every_cause_once() {
        let auth = Error::Auth(mcp_proto::oauth::AuthError::NoResourceMetadata {
            resource: "https://mcp.example/mcp".into(),
            tried: vec!["https://mcp.example/.well-known/oauth-protected-resource".into()],
        });
        assert_eq!(auth.to_string(), "authorization failed");
        let chain = auth.chain();
        assert!(
            chain.starts_with("authorization failed: no protected resource metadata for "),
            "{chain}"
        );
        assert_eq!(chain.matches("no protected resource metadata").count(), 1);
        // No cause: the message alone.
        assert_eq!(
            Error::Timeout(Duration::from_secs(1)).chain(),
            "request timed out after 1s"
        );
    }
}
