//! The Streamable HTTP transport's rules (2025-03-26 … 2025-11-25), as a pure piece a driver
//! consults: which HTTP request to make for each outbound message, what each response means, when
//! and how to resume a broken event stream, and how to end the session.
//!
//! > "Every JSON-RPC message sent from the client MUST be a new HTTP POST request to the MCP
//! > endpoint." — MCP 2025-11-25, Transports § Streamable HTTP § Sending Messages to the Server
//!
//! The driver owns sockets and timers; [`HttpRules`] owns every decision about MCP over HTTP,
//! redirects included ([`HttpRules::on_redirect`]: same-origin 307 and 308 only; RFC 9110 § 15.4).

use crate::jsonrpc::RequestId;
use crate::session::transmit::{Transmit, TransmitKind};
use crate::sse::{SseDecoder, SseEvent};
use crate::types::SUPPORTED_PROTOCOL_VERSIONS;
use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::time::Duration;

/// The header carrying the session id (header names compare case-insensitively).
pub const SESSION_ID_HEADER: &str = "Mcp-Session-Id";
/// The header carrying the negotiated protocol revision after the handshake.
pub const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";

/// Settings of the HTTP rules. Check them with [`validate`](Self::validate) before use; `Debug`
/// shows the URL without credentials or query and hides header values.
#[derive(Clone)]
pub struct HttpConfig {
    /// The MCP endpoint.
    pub url: String,
    /// Extra headers sent on every request (`Authorization`, say).
    pub headers: Vec<(String, String)>,
    /// Whether a 404 to a message carrying a session id starts a new session transparently
    /// (default true): a request that met it is resent in the new session, once per request; a
    /// notification or response is not resent. When false, or when the resent request gets a 404
    /// again, the request fails with the HTTP status and the session id is kept, so that later
    /// requests meet the 404 too.
    pub renew_expired_session: bool,
    /// How many times one response stream is resumed with `GET` + `Last-Event-ID` (default 5).
    pub max_resume_attempts: u32,
    /// The wait before resuming when the server gave no `retry` (default 1 s).
    pub default_retry: Duration,
    /// When the client opens the standalone `GET` stream on which the server sends requests and
    /// notifications unrelated to any of the client's requests (default
    /// [`StandaloneStream::WhenAnswering`]).
    pub standalone_stream: StandaloneStream,
}

/// When the client opens the standalone event stream ([`HttpRules::listen`]).
///
/// > "The client MAY issue an HTTP GET to the MCP endpoint. This can be used to open an SSE
/// > stream, allowing the server to communicate to the client, without the client first sending
/// > data via HTTP POST." / "The server MUST either return Content-Type: text/event-stream in
/// > response to this HTTP GET, or else return HTTP 405 Method Not Allowed, indicating that the
/// > server does not offer an SSE stream at this endpoint." — MCP 2025-11-25, Transports §
/// > Listening for Messages from the Server
///
/// Only in the legacy era: a modern server has no such stream (it answers the `GET` 405).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StandaloneStream {
    /// When the client declared a capability in `initialize`: it then answers requests the
    /// server may send at any time (servers built on the TypeScript SDK send a tool's
    /// `elicitation/create` there unless the tool names its own request).
    #[default]
    WhenAnswering,
    /// After every handshake.
    Always,
    /// Never: what the server sends outside a response stream is not received.
    Never,
}

impl HttpConfig {
    /// Defaults for an endpoint.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            renew_expired_session: true,
            max_resume_attempts: 5,
            default_retry: Duration::from_secs(1),
            standalone_stream: StandaloneStream::default(),
        }
    }

    /// Checks the settings a server never sees being refused: the URL is `http://` or `https://`
    /// and carries no credentials, and every extra header has a valid name and a value of visible
    /// ASCII, spaces and tabs (no other byte can go in a header unmangled), and is not one of the
    /// headers the rules set themselves.
    ///
    /// > "field-name = token", "field-value = *( field-content / obs-fold )", and "a recipient
    /// > SHOULD treat other octets in field content (obs-text) as opaque data" — RFC 7230 § 3.2
    ///
    /// Credentials in the URL (`http://user:pass@host`) are refused rather than dropped: HTTP
    /// clients do not send them, so they would be silently lost.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let lower = self.url.to_ascii_lowercase();
        let Some(rest) = lower
            .strip_prefix("http://")
            .or_else(|| lower.strip_prefix("https://"))
        else {
            return Err(ConfigError::NotHttp {
                url: redact_url(&self.url),
            });
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.contains('@') {
            return Err(ConfigError::Credentials);
        }
        if authority.is_empty() {
            return Err(ConfigError::NotHttp {
                url: redact_url(&self.url),
            });
        }
        for (name, value) in &self.headers {
            check_header(name, value)?;
            let mirrored = name.len() >= crate::headers::PARAM_HEADER_PREFIX.len()
                && name.as_bytes()[..crate::headers::PARAM_HEADER_PREFIX.len()]
                    .eq_ignore_ascii_case(crate::headers::PARAM_HEADER_PREFIX.as_bytes());
            if mirrored
                || RESERVED_HEADERS
                    .iter()
                    .any(|r| r.eq_ignore_ascii_case(name))
            {
                return Err(ConfigError::ReservedHeader { name: name.clone() });
            }
        }
        Ok(())
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &redact_url(&self.url))
            .field("headers", &RedactedHeaders(&self.headers))
            .field("renew_expired_session", &self.renew_expired_session)
            .field("max_resume_attempts", &self.max_resume_attempts)
            .field("default_retry", &self.default_retry)
            .field("standalone_stream", &self.standalone_stream)
            .finish()
    }
}

/// The headers the rules (or the body's framing) set on their own; an extra header may not
/// override them.
const RESERVED_HEADERS: &[&str] = &[
    "Content-Type",
    "Accept",
    SESSION_ID_HEADER,
    PROTOCOL_VERSION_HEADER,
    "Last-Event-ID",
    "Content-Length",
    "Transfer-Encoding",
    // The modern era mirrors the body into these (and into `Mcp-Param-*`).
    crate::headers::METHOD_HEADER,
    crate::headers::NAME_HEADER,
];

/// Why an [`HttpConfig`] cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The URL is not `http://host…` or `https://host…`.
    #[error("the MCP endpoint {url} is not an http:// or https:// URL")]
    NotHttp {
        /// The URL, without credentials or query.
        url: String,
    },
    /// The URL carries user info.
    #[error("the MCP endpoint URL carries credentials (user:password@); they would not be sent: pass an Authorization header instead")]
    Credentials,
    /// A header name is not an HTTP token.
    #[error("header name {name:?} is not a valid HTTP header name")]
    HeaderName {
        /// The name.
        name: String,
    },
    /// A header value holds a byte other than visible ASCII, space or tab (the value is not shown).
    #[error("the value of header {name} may only hold visible ASCII characters, spaces and tabs")]
    HeaderValue {
        /// The header's name.
        name: String,
    },
    /// A header the rules set themselves.
    #[error("header {name} is set by the transport and cannot be given")]
    ReservedHeader {
        /// The name.
        name: String,
    },
}

pub use crate::syntax::{is_header_name, is_header_value};

fn check_header(name: &str, value: &str) -> Result<(), ConfigError> {
    if !is_header_name(name) {
        return Err(ConfigError::HeaderName {
            name: name.to_owned(),
        });
    }
    if !is_header_value(value) {
        return Err(ConfigError::HeaderValue {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// `url` as it may appear in an error message or a log: `scheme://host:port/path`, without user
/// info (`user:password@`), query or fragment, which often carry credentials or API keys.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let rest = &rest[..end];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}{host}{path}")
}

/// Header pairs for `Debug`: names shown, values hidden.
struct RedactedHeaders<'a>(&'a [(String, String)]);

impl fmt::Debug for RedactedHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| (name, "<redacted>")))
            .finish()
    }
}

/// An HTTP method this transport uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Every client message.
    Post,
    /// Resuming a response stream.
    Get,
    /// Ending the session.
    Delete,
}

impl Method {
    /// The method's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Post => "POST",
            Method::Get => "GET",
            Method::Delete => "DELETE",
        }
    }
}

/// One HTTP request to make. `Debug` hides header values and the URL's credentials and query.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The method.
    pub method: Method,
    /// The URL.
    pub url: String,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body, for a POST.
    pub body: Option<Vec<u8>>,
}

impl HttpRequest {
    /// Checks that every header can be sent as it is (see [`is_header_name`] and
    /// [`is_header_value`]); a driver calls it before handing the request to its HTTP library.
    pub fn check(&self) -> Result<(), HttpError> {
        match self
            .headers
            .iter()
            .find(|(name, value)| !is_header_name(name) || !is_header_value(value))
        {
            Some((name, _)) => Err(HttpError::InvalidHeader {
                name: name.clone(),
                url: redact_url(&self.url),
            }),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &redact_url(&self.url))
            .field("headers", &RedactedHeaders(&self.headers))
            .field("body", &self.body.as_ref().map(Vec::len))
            .finish()
    }
}

/// What a successful response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// Nothing to read: a notification or response was accepted (202).
    None,
    /// One JSON-RPC message: read the whole body and hand it to [`Session::handle_message`].
    ///
    /// [`Session::handle_message`]: crate::Session::handle_message
    Json,
    /// An event stream: feed it to an [`SseDecoder`] as it arrives, and hand each event's
    /// message (see [`HttpRules::event_message`]) to the session.
    EventStream,
    /// A request was refused with this status and a JSON body, which may be the JSON-RPC error
    /// answering it (a modern server answers `400` with `UnsupportedProtocolVersion`,
    /// `HeaderMismatch` or invalid params, and `404` with method not found): read the body (up to
    /// [`MAX_ERROR_BODY`]) and hand it to [`HttpRules::on_error_body`].
    Refused {
        /// The HTTP status.
        status: u16,
    },
}

/// The longest the messages after an ordered one wait for its POST's status
/// ([`HttpRules::order_wait`]): 1 s.
pub const ORDER_WAIT: Duration = Duration::from_secs(1);

/// The most bytes of a refusal's JSON body read to find the JSON-RPC error in it.
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// Why a response is not usable, or a request cannot be made. Every `url` is redacted
/// ([`redact_url`]).
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
    /// [`HttpRules::check_post`] first); a notification or response is dropped.
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
    /// A redirect that is not followed ([`HttpRules::on_redirect`]): nothing was sent where it
    /// points.
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
    /// [`HttpRules::on_redirect`] about, a 3xx that redirects nowhere, such as 304, included).
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
    /// A 2xx answer to a request with neither JSON nor an event stream.
    #[error("unexpected content type {content_type:?} from {url}")]
    ContentType {
        /// What the server said.
        content_type: String,
        /// The URL.
        url: String,
    },
}

/// One message's HTTP exchange, as the rules track it from its POST through its response (and,
/// for a request's event stream, its resumptions): the session id it carried, whether its answer
/// came, how often its stream was resumed. The driver holds one per POST and hands it back to
/// the rules with everything it reads; it keeps no protocol state of its own.
#[derive(Debug, Clone)]
pub struct Exchange {
    kind: TransmitKind,
    carried: Option<String>,
    answered: bool,
    resumes: u32,
    /// A modern-era message: its stream cannot be resumed.
    modern: bool,
    /// An `initialize` request declaring at least one client capability.
    declares: bool,
    /// The URL its latest HTTP request went to.
    url: String,
    /// The URLs its redirects were followed from (normalized), oldest first.
    redirected_from: Vec<String>,
}

impl Exchange {
    /// What the exchange carries.
    pub fn kind(&self) -> &TransmitKind {
        &self.kind
    }

    /// Whether the request's answer came (reading its stream can stop).
    pub fn answered(&self) -> bool {
        self.answered
    }

    /// How often its stream was resumed.
    pub fn resumes(&self) -> u32 {
        self.resumes
    }

    /// How many redirects it followed.
    pub fn redirects(&self) -> usize {
        self.redirected_from.len()
    }

    /// The wire id of the request it carries ([`TransmitKind::Request::wire`]), if it carries
    /// one: hand what its response brings to
    /// [`Session::handle_message_for`](crate::Session::handle_message_for) with it.
    pub fn wire(&self) -> Option<RequestId> {
        match &self.kind {
            TransmitKind::Request { wire, .. } => Some(*wire),
            _ => None,
        }
    }
}

/// The standalone event stream ([`HttpRules::listen`]), as the rules follow it across its
/// reconnections: the session it belongs to, the last event id and `retry` seen, how many
/// streams in a row carried no message.
#[derive(Debug, Clone)]
pub struct Listening {
    carried: Option<String>,
    last_event_id: Option<String>,
    retry: Option<Duration>,
    /// Messages on the current stream.
    messages: u64,
    /// Streams in a row that ended without a message.
    idle_streams: u32,
}

impl Listening {
    /// How many streams in a row ended without carrying a message.
    pub fn idle_streams(&self) -> u32 {
        self.idle_streams
    }
}

/// What giving up on a request takes ([`HttpRules::on_cancel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancel {
    /// The request whose exchange (its response stream) is aborted.
    pub abort: RequestId,
    /// Whether the `notifications/cancelled` message is POSTed too.
    pub notify: bool,
}

/// What to do when a response stream ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// Nothing: the request was answered (or the stream was not for a request).
    Done,
    /// Wait `after`, then make `request` (a `GET` with `Last-Event-ID`) and read its stream.
    Resume {
        /// How long to wait first: the server's `retry`, or the default.
        after: Duration,
        /// The request to make.
        request: HttpRequest,
    },
    /// The stream ended before the answer and cannot be resumed: the request fails with this
    /// ([`HttpError::Unanswered`]).
    Failed(HttpError),
}

/// The Streamable HTTP rules for one connection. See the [module docs](self). `Debug` hides the
/// session id and header values.
#[derive(Clone)]
pub struct HttpRules {
    config: HttpConfig,
    /// The endpoint: the configured URL, or where a followed redirect moved it.
    url: String,
    /// The URL for error messages.
    redacted_url: String,
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// Requests already resent once in a new session after a 404.
    renewed: HashSet<RequestId>,
    /// Requests already resent once after a late 404 from a replaced session.
    resent: HashSet<RequestId>,
    /// The session expired and the new `initialize` has not been answered yet.
    renewing: bool,
    /// The last `initialize` answered declared a client capability.
    answering: bool,
    /// The OAuth access token's header value (`Bearer …`), sent on every request to the
    /// endpoint (and to nowhere else: a redirect is followed only within its origin).
    authorization: Option<crate::secret::Secret>,
    /// The server requests read on a request's response (their ids as JSON text), with that
    /// request: the newest [`MAX_ASKED`], so that an answer that cannot be delivered fails the
    /// request that waits on it ([`HttpRules::on_undelivered`]).
    asked: VecDeque<(String, RequestId)>,
}

/// How many server requests read on response streams [`HttpRules`] remembers (the oldest goes
/// first): as many as the session lets wait for the application
/// ([`MAX_ASKS`](crate::session::MAX_ASKS)).
pub const MAX_ASKED: usize = 64;

/// A message for the server that could not be delivered, as [`HttpRules::on_undelivered`] sees
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undelivered {
    /// What it was, for a warning (`the cancellation of request 3`, `the answer to the server's
    /// request "e1"`).
    pub what: String,
    /// The request that fails with it: the one whose response stream carried the server request
    /// this was the answer to (the server would otherwise keep it waiting).
    pub request: Option<RequestId>,
}

impl fmt::Debug for HttpRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRules")
            .field("config", &self.config)
            .field(
                "session_id",
                &self.session_id.as_ref().map(|_| "<redacted>"),
            )
            .field("protocol_version", &self.protocol_version)
            .field("renewed", &self.renewed)
            .field("renewing", &self.renewing)
            .finish()
    }
}

impl HttpRules {
    /// Rules for this endpoint. (Check the settings first with [`HttpConfig::validate`].)
    pub fn new(config: HttpConfig) -> Self {
        HttpRules {
            redacted_url: redact_url(&config.url),
            url: config.url.clone(),
            config,
            session_id: None,
            protocol_version: None,
            renewed: HashSet::new(),
            resent: HashSet::new(),
            renewing: false,
            answering: false,
            authorization: None,
            asked: VecDeque::new(),
        }
    }

    /// Sets (or, with `None`, removes) the `Authorization` header value the OAuth flow got
    /// (`Bearer …`); every request built afterwards carries it. A configured `Authorization`
    /// header ([`HttpConfig::headers`]) wins: then this one is not sent.
    ///
    /// > "authorization **MUST** be included in every HTTP request from client to server, even
    /// > if they are part of the same logical session." — MCP 2025-11-25, Token Requirements
    pub fn set_authorization(&mut self, value: Option<crate::secret::Secret>) {
        self.authorization = value;
    }

    /// Whether the settings carry an `Authorization` header of their own (the OAuth flow is
    /// then not the driver's to run).
    pub fn has_configured_authorization(&self) -> bool {
        self.config
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    }

    /// Puts the current OAuth `Authorization` value (see
    /// [`set_authorization`](Self::set_authorization)) in a request built earlier — a standalone
    /// stream's reconnection, built before the token was refreshed — replacing the one it has.
    /// A configured `Authorization` header is left as it is.
    pub fn refresh_authorization(&self, request: &mut HttpRequest) {
        if self.has_configured_authorization() {
            return;
        }
        request
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        self.push_authorization(&mut request.headers);
    }

    fn push_authorization(&self, headers: &mut Vec<(String, String)>) {
        if let Some(value) = &self.authorization {
            if !self.has_configured_authorization() {
                headers.push(("Authorization".to_owned(), value.expose().to_owned()));
            }
        }
    }

    /// The endpoint's URL as errors show it ([`redact_url`]).
    pub fn redacted_url(&self) -> &str {
        &self.redacted_url
    }

    /// The endpoint's URL: the configured one, or where a followed redirect moved it (see
    /// [`on_redirect`](Self::on_redirect)).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The settings.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The negotiated protocol revision, once the `initialize` answer was seen.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_deref()
    }

    fn headers(&self, accept: &str) -> Vec<(String, String)> {
        let mut headers = vec![("Accept".to_owned(), accept.to_owned())];
        if let Some(id) = &self.session_id {
            // > "the client MUST include it in the Mcp-Session-Id header on all of its subsequent
            // > HTTP requests" — 2025-11-25, Session Management
            headers.push((SESSION_ID_HEADER.to_owned(), id.clone()));
        }
        if let Some(v) = &self.protocol_version {
            // > "the client MUST include the MCP-Protocol-Version: <protocol-version> HTTP header
            // > on all subsequent requests" — 2025-06-18 and later, Protocol Version Header
            headers.push((PROTOCOL_VERSION_HEADER.to_owned(), v.clone()));
        }
        headers.extend(self.config.headers.iter().cloned());
        self.push_authorization(&mut headers);
        headers
    }

    /// The POST that carries one outbound message.
    ///
    /// > "The client MUST include an Accept header, listing both application/json and
    /// > text/event-stream as supported content types." — 2025-11-25
    ///
    /// A modern message carries its own headers ([`Transmit::headers`]: its version, method, name
    /// and mirrored parameters) and no session id.
    ///
    /// > "The client **MUST** include the request metadata headers on each POST request." — MCP
    /// > 2026-07-28, Streamable HTTP § Sending Messages
    pub fn post(&self, transmit: &Transmit) -> HttpRequest {
        let accept = "application/json, text/event-stream";
        let mut headers = if transmit.modern {
            let mut h = vec![("Accept".to_owned(), accept.to_owned())];
            h.extend(transmit.headers.iter().cloned());
            h.extend(self.config.headers.iter().cloned());
            self.push_authorization(&mut h);
            h
        } else {
            self.headers(accept)
        };
        headers.insert(
            0,
            ("Content-Type".to_owned(), "application/json".to_owned()),
        );
        HttpRequest {
            method: Method::Post,
            url: self.url.clone(),
            headers,
            body: Some(transmit.payload.clone()),
        }
    }

    /// Reads a response's status and headers for the message `kind` it answers.
    ///
    /// `carried_session` is the session id the request carried (as [`session_id`](Self::session_id)
    /// was when it was built). For the `initialize` request, the session id is captured from a
    /// successful response.
    ///
    /// A 404 to any message that carried the current session id (a request, and also a
    /// notification or a response) means the session is gone: with renewal on, the session is
    /// forgotten and [`HttpError::SessionExpired`] says to restart it (a request is renewed once;
    /// its second 404 is a plain status error). With renewal off the session id is kept, so that
    /// every later request meets the 404 too and fails with it, rather than going out without an
    /// id. A 404 for a session that was already replaced is [`HttpError::Resend`].
    pub fn on_response(
        &mut self,
        kind: &TransmitKind,
        carried_session: Option<&str>,
        status: u16,
        headers: &[(String, String)],
    ) -> Result<Body, HttpError> {
        let url = || self.redacted_url.clone();
        if status == 404 && carried_session.is_some() && carried_session != self.session_id() {
            // The 404 is late: the session it reports has been renewed (or is being renewed)
            // since. It says nothing about the current session.
            let again = match kind {
                TransmitKind::Request { id, .. } => self.resent.insert(*id),
                _ => true,
            };
            if again && self.config.renew_expired_session {
                return Err(HttpError::Resend { url: url() });
            }
            return Err(HttpError::Status { status, url: url() });
        }
        if status == 404 && carried_session.is_some() {
            // > "The server MAY terminate the session at any time, after which it MUST respond to
            // > requests containing that session ID with HTTP 404 Not Found." / "When a client
            // > receives HTTP 404 in response to a request containing an Mcp-Session-Id, it MUST
            // > start a new session by sending a new InitializeRequest without a session ID
            // > attached." — 2025-11-25, Session Management
            let renew = self.config.renew_expired_session
                && match kind {
                    TransmitKind::Request { id, .. } => self.renewed.insert(*id),
                    _ => true,
                };
            if renew {
                self.session_id = None;
                self.protocol_version = None;
                self.renewing = true;
                return Err(HttpError::SessionExpired { url: url() });
            }
            return Err(HttpError::Status { status, url: url() });
        }
        if !(200..300).contains(&status) {
            let json = header(headers, "content-type").is_some_and(|t| {
                t.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case("application/json")
            });
            if json
                && status != 401
                && status != 403
                && matches!(kind, TransmitKind::Request { .. })
            {
                return Ok(Body::Refused { status });
            }
            return Err(status_error(status, headers, url()));
        }
        let TransmitKind::Request { method, .. } = kind else {
            // > "If the input is a JSON-RPC response or notification: If the server accepts the
            // > input, the server MUST return HTTP status code 202 Accepted with no body."
            return Ok(Body::None);
        };
        if method == "initialize" {
            self.renewing = false;
            // > "A server using the Streamable HTTP transport MAY assign a session ID at
            // > initialization time, by including it in an Mcp-Session-Id header on the HTTP
            // > response containing the InitializeResult." — 2025-11-25
            self.session_id = header(headers, SESSION_ID_HEADER)
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| (0x21..=0x7e).contains(&b)))
                .map(str::to_owned);
        }
        let content_type = header(headers, "content-type").unwrap_or("");
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json" => Ok(Body::Json),
            "text/event-stream" => Ok(Body::EventStream),
            _ => Err(HttpError::ContentType {
                content_type: content_type.to_owned(),
                url: url(),
            }),
        }
    }

    /// The POST that carries `transmit`, and the exchange that follows its answer.
    pub fn begin(&self, transmit: &Transmit) -> (HttpRequest, Exchange) {
        let exchange = Exchange {
            kind: transmit.kind.clone(),
            carried: self.session_id.clone().filter(|_| !transmit.modern),
            answered: false,
            resumes: 0,
            modern: transmit.modern,
            declares: matches!(&transmit.kind, TransmitKind::Request { method, .. } if method == "initialize")
                && declares_capabilities(&transmit.payload),
            url: self.url.clone(),
            redirected_from: Vec::new(),
        };
        (self.post(transmit), exchange)
    }

    /// The POST that carries `transmit` again, to where its exchange's redirects led (after
    /// [`on_redirect`](Self::on_redirect) said to follow one): the same method, headers and body.
    pub fn post_again(&self, exchange: &Exchange, transmit: &Transmit) -> HttpRequest {
        HttpRequest {
            url: exchange.url.clone(),
            ..self.post(transmit)
        }
    }

    /// Reads the answer to the exchange's POST (see [`on_response`](Self::on_response)).
    pub fn on_exchange_response(
        &mut self,
        exchange: &Exchange,
        status: u16,
        headers: &[(String, String)],
    ) -> Result<Body, HttpError> {
        self.on_response(&exchange.kind, exchange.carried.as_deref(), status, headers)
    }

    /// Whether the response to the exchange's latest request (made with `method`: its POST, or a
    /// resumption `GET`) is a redirect to follow; ask before [`on_exchange_response`]
    /// (or [`on_resume_response`]). `Ok(None)`: it is not one; read the response as usual.
    /// `Ok(Some(url))`: make the same request again at `url` — for a POST,
    /// [`post_again`](Self::post_again) — and read its response in this one's place; the rules
    /// use `url` for every later request too. `Err`: a redirect not followed, which fails the
    /// request ([`HttpError::Redirect`]); nothing is sent where it points.
    ///
    /// The rule ([`redirect_target`]): only a redirect that keeps the request's method
    /// (RFC 9110 § 15.4: 307 and 308, and 301, 302 or 303 for a `GET`), to the same origin, is
    /// followed; a POST answered with 301, 302 or 303 fails, since following it would turn the
    /// POST into a GET. Each exchange follows at most [`MAX_REDIRECTS`], never to a URL it was
    /// redirected from already (a loop).
    ///
    /// > "A client SHOULD detect and intervene in cyclical redirections (i.e., "infinite"
    /// > redirection loops)." / "Note: An earlier version of this specification recommended a
    /// > maximum of five redirections" — RFC 9110 § 15.4
    ///
    /// The new URL is kept for later requests, though RFC 9110 § 15.4.8 says of a 307 that "the
    /// client ought to continue using the original target URI for future requests": the
    /// redirects followed are same-origin moves of the one MCP endpoint (a framework adding a
    /// trailing slash to `/mcp`), where asking the old URL again would only double every POST,
    /// and the session and the resumption `GET`s belong to the endpoint that answers.
    ///
    /// [`on_exchange_response`]: Self::on_exchange_response
    /// [`on_resume_response`]: Self::on_resume_response
    pub fn on_redirect(
        &mut self,
        exchange: &mut Exchange,
        method: Method,
        status: u16,
        headers: &[(String, String)],
    ) -> Result<Option<String>, HttpError> {
        let refused = |reason| HttpError::Redirect {
            status,
            url: redact_url(&exchange.url),
            reason,
        };
        let location = header(headers, "location");
        let Some(target) =
            redirect_target(method, status, location, &exchange.url).map_err(refused)?
        else {
            return Ok(None);
        };
        if exchange.redirected_from.len() >= MAX_REDIRECTS {
            return Err(refused(RedirectRefused::TooMany {
                limit: MAX_REDIRECTS,
            }));
        }
        let from = normalized(&exchange.url);
        if target == from || exchange.redirected_from.contains(&target) {
            return Err(refused(RedirectRefused::Loop {
                url: redact_url(&target),
            }));
        }
        exchange.redirected_from.push(from);
        exchange.url.clone_from(&target);
        self.redacted_url = redact_url(&target);
        self.url.clone_from(&target);
        Ok(Some(target))
    }

    /// Notes a message read from the exchange's response (a JSON body, or an event's data);
    /// returns whether the request's answer is in, so that reading can stop: a server that keeps
    /// the stream open after the answer is not waited for.
    pub fn on_exchange_message(&mut self, exchange: &mut Exchange, message: &[u8]) -> bool {
        let answers = self.observe_message(&exchange.kind, message);
        if answers
            && matches!(&exchange.kind, TransmitKind::Request { method, .. } if method == "initialize")
        {
            self.answering = exchange.declares;
        }
        exchange.answered |= answers;
        exchange.answered
    }

    /// Reads the JSON body of a refused request ([`Body::Refused`]): a JSON-RPC error answering
    /// the request is its answer (`Ok`: hand the body to the session with
    /// [`Session::handle_message_for`](crate::Session::handle_message_for), which reads the
    /// error); anything else (an error with another id, another shape, junk) leaves the status
    /// as the verdict.
    ///
    /// > "On `400 Bad Request`, the client **SHOULD** inspect the response body before falling
    /// > back: modern servers also use `400` for `UnsupportedProtocolVersionError`,
    /// > `MissingRequiredClientCapabilityError`, and header-validation failures." — MCP
    /// > 2026-07-28, Streamable HTTP § Backward Compatibility
    ///
    /// An error without an id (`null` or absent) answers it too: the server could not read the
    /// request, and this response is to this request's POST, so the request fails with the
    /// server's code and message rather than an HTTP status. (A legacy server refusing the era
    /// probe so — the TypeScript SDK's `400 {"error":{"code":-32000,"message":"Bad Request: No
    /// valid session ID provided"},"id":null}` — still means the legacy era: -32000 is no modern
    /// error.)
    ///
    /// > "If there was an error in detecting the id in the Request object (e.g. Parse
    /// > error/Invalid Request), it MUST be Null." — JSON-RPC 2.0 § 5
    pub fn on_error_body(
        &mut self,
        exchange: &mut Exchange,
        status: u16,
        body: &[u8],
    ) -> Result<(), HttpError> {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(default)]
            id: Option<serde_json::Value>,
            #[serde(default)]
            method: Option<serde::de::IgnoredAny>,
            // The shape the session reads (`{code, message?, data?}`), so that what is taken for
            // the answer is one.
            #[serde(default)]
            error: Option<crate::jsonrpc::RpcError>,
            #[serde(default)]
            result: Option<serde::de::IgnoredAny>,
        }
        let TransmitKind::Request { wire, .. } = &exchange.kind else {
            return Err(HttpError::Status {
                status,
                url: self.redacted_url.clone(),
            });
        };
        let answers = serde_json::from_slice::<Head>(body).is_ok_and(|h| {
            h.error.is_some()
                && h.result.is_none()
                && h.method.is_none()
                && h.id.as_ref().is_none_or(|id| id.as_u64() == Some(wire.0))
        });
        if answers {
            exchange.answered = true;
            return Ok(());
        }
        Err(HttpError::Status {
            status,
            url: self.redacted_url.clone(),
        })
    }

    /// The exchange's body ended (`decoder`: its event stream's; `None` for a JSON body): done,
    /// failed, or resumed (counted), as [`on_stream_end`](Self::on_stream_end) says.
    pub fn on_exchange_end(
        &self,
        exchange: &mut Exchange,
        decoder: Option<&SseDecoder>,
    ) -> StreamEnd {
        if exchange.modern && !exchange.answered && decoder.is_some() {
            // > "Resumable SSE streams via `Last-Event-ID` are not supported." — MCP 2026-07-28
            return StreamEnd::Failed(HttpError::Unanswered {
                reason: "the response stream ended before the response (a modern server's streams cannot be resumed)".into(),
                url: self.redacted_url.clone(),
            });
        }
        let plan = self.on_stream_end(&exchange.kind, exchange.answered, exchange.resumes, decoder);
        if let StreamEnd::Resume { request, .. } = &plan {
            exchange.resumes += 1;
            exchange.url.clone_from(&request.url);
        }
        plan
    }

    /// Notes a message read from the response to `kind`; returns whether it is that request's
    /// answer: a result or error with its id, or an error without an id. The `initialize` answer
    /// sets the protocol revision sent in later headers.
    pub fn observe_message(&mut self, kind: &TransmitKind, message: &[u8]) -> bool {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(default)]
            id: Option<serde_json::Value>,
            #[serde(default)]
            method: Option<serde::de::IgnoredAny>,
            #[serde(default)]
            result: Option<ResultHead>,
            #[serde(default)]
            error: Option<serde::de::IgnoredAny>,
        }
        #[derive(serde::Deserialize)]
        struct ResultHead {
            #[serde(default, rename = "protocolVersion")]
            protocol_version: Option<String>,
        }
        let TransmitKind::Request { wire, method, .. } = kind else {
            return false;
        };
        let Ok(head) = serde_json::from_slice::<Head>(message) else {
            return false;
        };
        if let (Some(_), Some(asked)) = (&head.method, &head.id) {
            // A server request on this request's stream: this request waits on its answer.
            if self.asked.len() == MAX_ASKED {
                self.asked.pop_front();
            }
            let handle = match kind {
                TransmitKind::Request { id, .. } => *id,
                _ => *wire,
            };
            self.asked.push_back((asked.to_string(), handle));
            return false;
        }
        // An error without an id (`null` or absent) on this request's response is about this
        // request (see `on_error_body`): the session takes it for its answer.
        let answers = head.method.is_none()
            && match (&head.result, &head.error, &head.id) {
                (Some(_), None, Some(id)) | (None, Some(_), Some(id)) => {
                    id.as_u64() == Some(wire.0)
                }
                (None, Some(_), None) => true,
                _ => false,
            };
        if answers && method == "initialize" {
            // Only a revision this client speaks goes into a header: the session refuses any
            // other (and disconnects), and a server's arbitrary string must not reach an HTTP
            // library unchecked.
            self.protocol_version = head
                .result
                .and_then(|r| r.protocol_version)
                .filter(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(&v.as_str()));
        }
        answers
    }

    /// A notification or response could not be delivered (no answer within its deadline, a
    /// failure status, no authorization): what to tell the application, and which request fails
    /// because of it. A cancellation or an answer to a server request is never lost silently:
    /// the server would keep working on a request given up on, or keep a request of its own
    /// waiting, and with it the client's request whose response stream carried it. Other
    /// notifications concern no request (`None`: nothing to report).
    ///
    /// > "Receivers of cancellation notifications **SHOULD**: Stop processing the cancelled
    /// > request" — MCP 2025-11-25, Utilities § Cancellation
    ///
    /// The newest server request with the answer's id is the one answered (a server may reuse
    /// an id once its request was answered).
    pub fn on_undelivered(&mut self, transmit: &Transmit) -> Option<Undelivered> {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(default)]
            id: Option<serde_json::Value>,
        }
        match &transmit.kind {
            TransmitKind::Cancellation { id } => Some(Undelivered {
                what: format!("the cancellation of request {}", id.0),
                request: None,
            }),
            TransmitKind::Response => {
                let id = serde_json::from_slice::<Head>(&transmit.payload)
                    .ok()
                    .and_then(|h| h.id)
                    .map(|id| id.to_string())
                    .unwrap_or_else(|| "null".into());
                let request = self
                    .asked
                    .iter()
                    .rposition(|(asked, _)| *asked == id)
                    .and_then(|at| self.asked.remove(at))
                    .map(|(_, request)| request);
                // The id is the server's: cut, and only its visible ASCII shown.
                let shown: String = id
                    .chars()
                    .take(64)
                    .map(|c| if c.is_ascii_graphic() { c } else { '?' })
                    .collect();
                Some(Undelivered {
                    what: format!("the answer to the server's request {shown}"),
                    request,
                })
            }
            _ => None,
        }
    }

    /// How long the messages after `kind` wait, at most, for its POST's status before they go
    /// out: `None` when they do not wait (a ping answer, a progress or roots notification: one
    /// stalled POST then holds nothing back).
    ///
    /// `notifications/initialized` is waited for, so that the server sees it before the requests
    /// that follow it; but only up to [`ORDER_WAIT`]: the rule is about what is sent first, not
    /// about the server's `202`, and a server that holds its answer must not hold the first
    /// request for a whole POST deadline.
    ///
    /// > "After successful initialization, the client **MUST** send an `initialized`
    /// > notification to indicate it is ready to begin normal operations" — MCP 2025-11-25,
    /// > Lifecycle § Initialization
    ///
    /// A cancellation is waited for in the same way, so that the server hears that a request was
    /// given up on before the requests that follow it (which may well repeat it) and before the
    /// `DELETE` that ends the session (after which the cancellation would only meet a 404).
    ///
    /// > "When a party wants to cancel an in-progress request, it sends a
    /// > `notifications/cancelled` notification" — MCP 2025-11-25, Utilities § Cancellation;
    /// > "Clients that no longer need a particular session … **SHOULD** send an HTTP DELETE to
    /// > the MCP endpoint with the `Mcp-Session-Id` header, to explicitly terminate the session"
    /// > — Transports § Session Management
    ///
    /// Each POST waited for is on a connection of its own, so only its status proves that the
    /// server read it; past [`ORDER_WAIT`] it has had ample time to, and the POST itself goes on
    /// until its own deadline.
    pub fn order_wait(kind: &TransmitKind) -> Option<Duration> {
        let ordered = match kind {
            TransmitKind::Notification { method } => method == "notifications/initialized",
            TransmitKind::Cancellation { .. } => true,
            _ => false,
        };
        ordered.then_some(ORDER_WAIT)
    }

    /// What giving up on a request means over HTTP: which exchange to abort (its response stream
    /// is closed, so the server may stop work on it) and whether the cancellation notification
    /// is POSTed too. In the legacy era (this transport's revisions) both happen.
    ///
    /// > "When a party wants to cancel an in-progress request, it sends a
    /// > `notifications/cancelled` notification" — MCP 2025-11-25, Utilities § Cancellation; and
    /// > "Disconnection SHOULD NOT be interpreted as the client cancelling its request" — Transports,
    /// > which is why closing the stream alone is not enough here.
    ///
    /// In the modern era the session sends [`TransmitKind::Abort`] instead: the stream is closed,
    /// and nothing is POSTed.
    ///
    /// > "Closing the SSE response stream **MUST** be treated by the server as cancellation of
    /// > that request." — MCP 2026-07-28, Streamable HTTP § Cancellation
    pub fn on_cancel(&self, kind: &TransmitKind) -> Option<Cancel> {
        match kind {
            TransmitKind::Cancellation { id } => Some(Cancel {
                abort: *id,
                notify: true,
            }),
            TransmitKind::Abort { id } => Some(Cancel {
                abort: *id,
                notify: false,
            }),
            _ => None,
        }
    }

    /// Whether the message `kind` may be POSTed now. While the session is being renewed (it
    /// expired, and the new `initialize` is not answered yet), anything but `initialize` would go
    /// without a session id and be refused: a request gets [`HttpError::SessionExpired`] without
    /// being sent (restart with its id, and it is sent in the new session), and a notification or
    /// response is dropped (it belonged to the old session).
    pub fn check_post(&self, kind: &TransmitKind) -> Result<(), HttpError> {
        // > "If an Mcp-Session-Id is returned by the server during initialization, clients using
        // > the Streamable HTTP transport MUST include it in the Mcp-Session-Id header on all of
        // > their subsequent HTTP requests." — 2025-11-25, Session Management
        let initialize =
            matches!(kind, TransmitKind::Request { method, .. } if method == "initialize");
        if self.renewing && !initialize {
            return Err(HttpError::SessionExpired {
                url: self.redacted_url.clone(),
            });
        }
        Ok(())
    }

    /// The JSON-RPC message an SSE event carries, if any: events named `message` (or unnamed) with
    /// data. A priming event (empty data) carries none.
    ///
    /// > "The server SHOULD immediately send an SSE event consisting of an event ID and an empty
    /// > data field in order to prime the client to reconnect" — 2025-11-25
    pub fn event_message(event: &SseEvent) -> Option<&[u8]> {
        (event.event == "message" && !event.data.trim().is_empty()).then_some(event.data.as_bytes())
    }

    /// What to do when the body for `kind` ended (`answered`: its answer arrived) after
    /// `attempts` resumptions. For an event stream, `decoder` holds the last event id and the
    /// server's `retry`; a JSON body (`None`) cannot be resumed, so an unanswered one fails.
    ///
    /// > "If the client … the SSE stream is disconnected … the client MAY resume by issuing a GET
    /// > with the Last-Event-ID header" / "the client MUST respect the retry field, waiting the
    /// > given number of milliseconds before attempting to reconnect" — 2025-11-25
    pub fn on_stream_end(
        &self,
        kind: &TransmitKind,
        answered: bool,
        attempts: u32,
        decoder: Option<&SseDecoder>,
    ) -> StreamEnd {
        if answered || !matches!(kind, TransmitKind::Request { .. }) {
            return StreamEnd::Done;
        }
        let failed = |reason: String| {
            StreamEnd::Failed(HttpError::Unanswered {
                reason,
                url: self.redacted_url().to_owned(),
            })
        };
        let Some(decoder) = decoder else {
            return failed("the JSON response did not answer the request".into());
        };
        let Some(last_id) = decoder.last_event_id() else {
            return failed(
                "the response stream ended before the response, and no event id allows resuming it"
                    .into(),
            );
        };
        // The id goes back in the Last-Event-ID header: one that cannot be sent as a header
        // value (the SSE format allows any text) makes the stream not resumable.
        if !is_header_value(last_id) {
            return failed(
                "the response stream ended before the response, and its last event id is not visible ASCII, so it cannot be resumed"
                    .into(),
            );
        }
        if attempts >= self.config.max_resume_attempts {
            return failed(format!(
                "the response stream ended before the response {} times; giving up",
                attempts + 1
            ));
        }
        StreamEnd::Resume {
            after: decoder.retry().unwrap_or(self.config.default_retry),
            request: self.event_stream_get(Some(last_id)),
        }
    }

    /// The `GET` of an event stream (a resumption, or the standalone stream), resuming after
    /// `last_event_id` when given.
    fn event_stream_get(&self, last_event_id: Option<&str>) -> HttpRequest {
        let mut headers = self.headers("text/event-stream");
        if let Some(id) = last_event_id {
            headers.push(("Last-Event-ID".to_owned(), id.to_owned()));
        }
        HttpRequest {
            method: Method::Get,
            url: self.url.clone(),
            headers,
            body: None,
        }
    }

    /// Reads the answer to a resumption `GET`: it must be a 2xx event stream.
    pub fn on_resume_response(
        &self,
        status: u16,
        headers: &[(String, String)],
    ) -> Result<(), HttpError> {
        let url = self.redacted_url.clone();
        if !(200..300).contains(&status) {
            return Err(status_error(status, headers, url));
        }
        let content_type = header(headers, "content-type").unwrap_or("");
        if content_type
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
        {
            Ok(())
        } else {
            Err(HttpError::ContentType {
                content_type: content_type.to_owned(),
                url,
            })
        }
    }

    /// The `GET` that opens the standalone event stream, when the client is to listen on one
    /// ([`HttpConfig::standalone_stream`]): after a legacy handshake (the `initialize` answer was
    /// read; a driver asks once `notifications/initialized` went out, see
    /// [`listens_after`](Self::listens_after)), never while the
    /// session is being renewed, never in the modern era. Read its answer with
    /// [`on_listen_response`](Self::on_listen_response), hand each event to
    /// [`on_listen_event`](Self::on_listen_event) and each of its messages to the session (they
    /// answer none of the client's requests), and ask [`on_listen_end`](Self::on_listen_end)
    /// when it ends.
    pub fn listen(&self) -> Option<(HttpRequest, Listening)> {
        self.listen_now()
    }

    /// Whether a driver asks [`listen`](Self::listen) once the message `kind` went out (was
    /// accepted, or waited for as long as [`order_wait`](Self::order_wait) says): after
    /// `notifications/initialized`, which ends the handshake.
    pub fn listens_after(kind: &TransmitKind) -> bool {
        matches!(kind, TransmitKind::Notification { method } if method == "notifications/initialized")
    }

    fn listen_now(&self) -> Option<(HttpRequest, Listening)> {
        let listening = Listening {
            carried: self.session_id.clone(),
            last_event_id: None,
            retry: None,
            messages: 0,
            idle_streams: 0,
        };
        Some((self.listen_request(&listening)?, listening))
    }

    fn listen_request(&self, listening: &Listening) -> Option<HttpRequest> {
        let wanted = match self.config.standalone_stream {
            StandaloneStream::Always => true,
            StandaloneStream::WhenAnswering => self.answering,
            StandaloneStream::Never => false,
        };
        if !wanted || self.renewing || self.protocol_version.is_none() {
            return None;
        }
        // A stream of a session that has since been replaced is not reopened: the new
        // handshake opens its own.
        if listening.carried != self.session_id {
            return None;
        }
        Some(self.event_stream_get(listening.last_event_id.as_deref()))
    }

    /// Reads the answer to the standalone stream's `GET`: a 2xx event stream is read; anything
    /// else (405: the server offers none; 404, another status, another content type) means no
    /// stream, and the client stops listening. Nothing of it reaches a request.
    pub fn on_listen_response(
        &self,
        status: u16,
        headers: &[(String, String)],
    ) -> Result<(), HttpError> {
        self.on_resume_response(status, headers)
    }

    /// Notes an event read from the standalone stream; returns the JSON-RPC message it carries,
    /// if any (see [`event_message`](Self::event_message)).
    pub fn on_listen_event<'e>(
        &self,
        listening: &mut Listening,
        event: &'e SseEvent,
    ) -> Option<&'e [u8]> {
        let message = Self::event_message(event)?;
        listening.messages += 1;
        Some(message)
    }

    /// The standalone stream ended (`decoder` holds its last event id and `retry`): the `GET`
    /// that reconnects (with `Last-Event-ID` when the server gave event ids), after the server's
    /// `retry` or the default wait; `None` to stop listening: the session was replaced or is being
    /// renewed, or [`HttpConfig::max_resume_attempts`] streams in a row ended without a message
    /// (a server that closes every stream at once is not reconnected to for ever).
    ///
    /// > "If the client … the SSE stream is disconnected … the client MAY resume by issuing a GET
    /// > with the Last-Event-ID header" / "the client MUST respect the retry field" — 2025-11-25
    pub fn on_listen_end(
        &self,
        listening: &mut Listening,
        decoder: &SseDecoder,
    ) -> Option<(Duration, HttpRequest)> {
        if std::mem::take(&mut listening.messages) > 0 {
            listening.idle_streams = 0;
        } else {
            listening.idle_streams += 1;
        }
        if let Some(id) = decoder.last_event_id() {
            // One that cannot be sent as a header value is not resumed from.
            listening.last_event_id = is_header_value(id).then(|| id.to_owned());
        }
        if let Some(retry) = decoder.retry() {
            listening.retry = Some(retry);
        }
        if listening.idle_streams > self.config.max_resume_attempts {
            return None;
        }
        let request = self.listen_request(listening)?;
        Some((
            listening.retry.unwrap_or(self.config.default_retry),
            request,
        ))
    }

    /// The request that ends the session, when there is one to end.
    ///
    /// > "Clients that no longer need a particular session … SHOULD send an HTTP DELETE to the MCP
    /// > endpoint with the Mcp-Session-Id header, to explicitly terminate the session." The server
    /// > MAY answer 405: that is fine. — 2025-11-25
    pub fn delete(&self) -> Option<HttpRequest> {
        self.session_id.as_ref()?;
        Some(HttpRequest {
            method: Method::Delete,
            url: self.url.clone(),
            headers: self.headers("application/json, text/event-stream"),
            body: None,
        })
    }
}

/// Whether an `initialize` request's `params.capabilities` declares anything.
fn declares_capabilities(payload: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Request {
        #[serde(default)]
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(default)]
        capabilities: Option<serde_json::Map<String, serde_json::Value>>,
    }
    serde_json::from_slice::<Request>(payload)
        .ok()
        .and_then(|r| r.params?.capabilities)
        .is_some_and(|c| !c.is_empty())
}

/// The most redirects one message's exchange follows (its POST's, and its resumptions').
pub const MAX_REDIRECTS: usize = 5;

/// Why a redirect is not followed ([`HttpError::Redirect`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedirectRefused {
    /// It points to another origin, which is sent nothing: neither the request nor its headers
    /// (`Authorization`, the session id).
    #[error("it points to another origin, {origin}")]
    CrossOrigin {
        /// The origin it points to (`scheme://host:port`: no path, user info or query).
        origin: String,
    },
    /// Following it would turn the request into a `GET` (301, 302 or 303 to a POST).
    #[error("following a {status} would turn the {method} into a GET")]
    ChangesMethod {
        /// The status.
        status: u16,
        /// The request's method.
        method: &'static str,
    },
    /// The exchange followed [`MAX_REDIRECTS`] already.
    #[error("more than {limit} redirects")]
    TooMany {
        /// The cap.
        limit: usize,
    },
    /// It points to a URL the exchange was redirected from (or to the URL itself).
    #[error("a redirect loop back to {url}")]
    Loop {
        /// That URL, redacted ([`redact_url`]).
        url: String,
    },
    /// It has no `Location` header (or one that is not visible ASCII).
    #[error("it has no Location")]
    NoLocation,
    /// Its `Location` is not an `http://` or `https://` URL without user info.
    #[error("its Location is not an http:// or https:// URL without user info")]
    BadLocation,
}

/// Where a response to a `method` request made to `current` redirects it, when the redirect
/// may be followed — the rule for one response, without the exchange's count and loop check
/// ([`HttpRules::on_redirect`]). `Ok(None)`: the status is no redirect to follow (anything but
/// 301, 302, 303, 307 and 308; a 304 or 300 is read as any other status). `Ok(Some(url))`: the
/// `Location`, resolved against `current` (RFC 3986 § 5) and without its fragment, which is never
/// sent.
///
/// > "The 307 (Temporary Redirect) status code indicates that the target resource resides
/// > temporarily under a different URI and the user agent MUST NOT change the request method if
/// > it performs an automatic redirection to that URI." (§ 15.4.8; 308 likewise, § 15.4.9) / of
/// > 301 and 302: "For historical reasons, a user agent MAY change the request method from POST
/// > to GET for the subsequent request." (§ 15.4.2, 15.4.3) / of 303: "A user agent can perform
/// > a retrieval request targeting that URI (a GET or HEAD request if using HTTP)" (§ 15.4.4)
/// > — RFC 9110
///
/// A POST is MCP's message: turned into a GET it would be lost, so 301, 302 and 303 are refused
/// for it (and 303 for a `DELETE`). A redirect to another origin is never followed, whatever
/// its status:
///
/// > "Consider removing header fields that were not automatically generated by the
/// > implementation (i.e., those present in the request because they were added by the calling
/// > context) where there are security implications; this includes but is not limited to
/// > Authorization and Cookie." — RFC 9110 § 15.4
///
/// Every header here is the application's or the session's (`Authorization`, `Mcp-Session-Id`),
/// so the request goes to the origin it was configured for, or nowhere.
pub fn redirect_target(
    method: Method,
    status: u16,
    location: Option<&str>,
    current: &str,
) -> Result<Option<String>, RedirectRefused> {
    match (status, method) {
        (307 | 308, _) | (301 | 302, Method::Get | Method::Delete) | (303, Method::Get) => {}
        (301..=303, method) => {
            return Err(RedirectRefused::ChangesMethod {
                status,
                method: method.as_str(),
            })
        }
        _ => return Ok(None),
    }
    let location = location
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .ok_or(RedirectRefused::NoLocation)?;
    let base = url::Url::parse(current).map_err(|_| RedirectRefused::BadLocation)?;
    let mut target = base
        .join(location)
        .map_err(|_| RedirectRefused::BadLocation)?;
    if !matches!(target.scheme(), "http" | "https")
        || !target.username().is_empty()
        || target.password().is_some()
    {
        return Err(RedirectRefused::BadLocation);
    }
    if target.origin() != base.origin() {
        return Err(RedirectRefused::CrossOrigin {
            origin: target.origin().ascii_serialization(),
        });
    }
    target.set_fragment(None);
    Ok(Some(target.into()))
}

/// `url` as the `url` crate writes it (lowercase scheme and host, no default port, dot segments
/// resolved), to compare with a resolved redirect target; as it is when it does not parse.
fn normalized(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_fragment(None);
            u.into()
        }
        Err(_) => url.to_owned(),
    }
}

/// The verdict on a status that is not 2xx: 401 and 403 carry their challenge (for the OAuth
/// flow), any other is just its status.
fn status_error(status: u16, headers: &[(String, String)], url: String) -> HttpError {
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

/// A header's value, by case-insensitive name.
pub fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: u64, method: &str) -> TransmitKind {
        TransmitKind::Request {
            id: RequestId(id),
            wire: RequestId(id),
            method: method.into(),
        }
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn transmit(kind: TransmitKind) -> Transmit {
        Transmit {
            payload: b"{}".to_vec(),
            kind,
            headers: Vec::new(),
            modern: false,
        }
    }

    /// The answer to `initialize` (request `id`) opens session `sid`.
    fn open_session(r: &mut HttpRules, id: u64, sid: &str) {
        r.on_response(
            &request(id, "initialize"),
            None,
            200,
            &h(&[
                ("content-type", "application/json"),
                ("mcp-session-id", sid),
            ]),
        )
        .unwrap();
    }

    fn rules() -> HttpRules {
        let mut config = HttpConfig::new("http://127.0.0.1:1/mcp");
        config
            .headers
            .push(("Authorization".into(), "Bearer t".into()));
        HttpRules::new(config)
    }

    #[test]
    fn post_headers_before_and_after_the_handshake() {
        let mut r = rules();
        let init = request(0, "initialize");
        let first = r.post(&transmit(init.clone()));
        assert_eq!(first.method, Method::Post);
        assert_eq!(
            first.headers,
            h(&[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Authorization", "Bearer t")
            ])
        );
        assert_eq!(
            r.on_response(
                &init,
                None,
                200,
                &h(&[
                    ("content-type", "application/json"),
                    ("MCP-SESSION-ID", "abc")
                ])
            ),
            Ok(Body::Json)
        );
        assert!(r.observe_message(
            &init,
            br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}"#
        ));
        let next = r.post(&transmit(request(1, "tools/list")));
        assert_eq!(
            next.headers,
            h(&[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", "abc"),
                ("MCP-Protocol-Version", "2025-06-18"),
                ("Authorization", "Bearer t")
            ])
        );
    }

    #[test]
    fn content_types_and_statuses() {
        let mut r = rules();
        let call = request(3, "tools/call");
        let ct = |v: &str| h(&[("Content-Type", v)]);
        assert_eq!(
            r.on_response(&call, None, 200, &ct("application/json; charset=utf-8")),
            Ok(Body::Json)
        );
        assert_eq!(
            r.on_response(&call, None, 200, &ct("Text/Event-Stream")),
            Ok(Body::EventStream)
        );
        assert!(matches!(
            r.on_response(&call, None, 200, &ct("text/html")),
            Err(HttpError::ContentType { .. })
        ));
        let note = TransmitKind::Notification {
            method: "notifications/initialized".into(),
        };
        assert_eq!(r.on_response(&note, None, 202, &[]), Ok(Body::None));
        assert_eq!(
            r.on_response(&TransmitKind::Response, None, 202, &[]),
            Ok(Body::None)
        );
        assert_eq!(
            r.on_response(&call, None, 500, &ct("text/html")),
            Err(HttpError::Status {
                status: 500,
                url: "http://127.0.0.1:1/mcp".into()
            })
        );
        assert_eq!(
            r.on_response(
                &call,
                None,
                307,
                &h(&[("Location", "http://evil.example/")])
            ),
            Err(HttpError::Status {
                status: 307,
                url: "http://127.0.0.1:1/mcp".into()
            })
        );
        // A 404 without a session id is just a 404.
        assert!(matches!(
            r.on_response(&call, None, 404, &[]),
            Err(HttpError::Status { status: 404, .. })
        ));
    }

    #[test]
    fn expired_session_is_renewed_once_per_request() {
        let mut r = rules();
        let init = request(0, "initialize");
        r.on_response(
            &init,
            None,
            200,
            &h(&[
                ("content-type", "application/json"),
                ("mcp-session-id", "s1"),
            ]),
        )
        .unwrap();
        let call = request(5, "tools/call");
        assert!(matches!(
            r.on_response(&call, Some("s1"), 404, &[]),
            Err(HttpError::SessionExpired { .. })
        ));
        assert_eq!(
            r.session_id(),
            None,
            "the next initialize goes without the old id"
        );
        assert!(!r
            .post(&transmit(request(6, "initialize")))
            .headers
            .iter()
            .any(|(k, _)| k == SESSION_ID_HEADER));
        open_session(&mut r, 6, "s2");
        // The same request expiring again, in the new session, fails with the status.
        assert!(matches!(
            r.on_response(&call, Some("s2"), 404, &[]),
            Err(HttpError::Status { status: 404, .. })
        ));
        assert_eq!(r.session_id(), Some("s2"), "kept: nothing renews it");
        let mut off = HttpRules::new(HttpConfig {
            renew_expired_session: false,
            ..HttpConfig::new("u")
        });
        off.session_id = Some("s".into());
        assert!(matches!(
            off.on_response(&call, Some("s"), 404, &[]),
            Err(HttpError::Status { status: 404, .. })
        ));
    }

    #[test]
    fn a_late_404_from_a_replaced_session_resends_without_renewing_again() {
        let mut r = rules();
        r.session_id = Some("s2".into());
        let call = request(7, "tools/call");
        assert!(matches!(
            r.on_response(&call, Some("s1"), 404, &[]),
            Err(HttpError::Resend { .. })
        ));
        assert_eq!(r.session_id(), Some("s2"), "the current session is kept");
        assert_eq!(r.check_post(&call), Ok(()));
        assert!(
            matches!(
                r.on_response(&call, Some("s1"), 404, &[]),
                Err(HttpError::Status { status: 404, .. })
            ),
            "once per request"
        );
        assert!(matches!(
            r.on_response(&TransmitKind::Response, Some("s1"), 404, &[]),
            Err(HttpError::Resend { .. })
        ));
    }

    #[test]
    fn priming_events_carry_no_message() {
        let mut d = SseDecoder::new();
        d.feed(b"id: e1\nretry: 500\ndata: \n\nevent: message\ndata: {\"a\":1}\n\nevent: other\ndata: x\n\n");
        let mut messages = Vec::new();
        while let Some(crate::sse::SseItem::Event(e)) = d.poll_event() {
            if let Some(m) = HttpRules::event_message(&e) {
                messages.push(m.to_vec());
            }
        }
        assert_eq!(messages, vec![b"{\"a\":1}".to_vec()]);
    }

    #[test]
    fn stream_end_resumes_with_last_event_id_after_retry() {
        let r = rules();
        let call = request(2, "tools/call");
        let mut d = SseDecoder::new();
        assert!(
            matches!(
                r.on_stream_end(&call, false, 0, Some(&d)),
                StreamEnd::Failed(_)
            ),
            "no id: cannot resume"
        );
        d.feed(b"id: event-1\nretry: 500\ndata: \n\n");
        let StreamEnd::Resume { after, request } = r.on_stream_end(&call, false, 0, Some(&d))
        else {
            panic!()
        };
        assert_eq!(after, Duration::from_millis(500));
        assert_eq!(request.method, Method::Get);
        assert_eq!(
            request.headers,
            h(&[
                ("Accept", "text/event-stream"),
                ("Authorization", "Bearer t"),
                ("Last-Event-ID", "event-1")
            ])
        );
        assert_eq!(r.on_stream_end(&call, true, 0, Some(&d)), StreamEnd::Done);
        assert!(
            matches!(
                r.on_stream_end(&call, false, 5, Some(&d)),
                StreamEnd::Failed(_)
            ),
            "bounded attempts"
        );
        assert_eq!(
            r.on_resume_response(200, &h(&[("content-type", "text/event-stream")])),
            Ok(())
        );
        assert!(r.on_resume_response(405, &[]).is_err());
    }

    #[test]
    fn the_oauth_token_goes_on_every_request_and_a_configured_header_wins() {
        let mut r = HttpRules::new(HttpConfig::new("http://127.0.0.1:1/mcp"));
        r.set_authorization(Some(crate::secret::Secret::new("Bearer one")));
        let auth = |req: &HttpRequest| -> Vec<String> {
            req.headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                .map(|(_, v)| v.clone())
                .collect()
        };
        let post = r.post(&transmit(request(1, "initialize")));
        assert_eq!(auth(&post), ["Bearer one"]);
        open_session(&mut r, 1, "s");
        assert_eq!(auth(&r.delete().unwrap()), ["Bearer one"]);
        // A request built before a refresh gets the new token, once.
        let mut old = r.post(&transmit(request(2, "tools/list")));
        r.set_authorization(Some(crate::secret::Secret::new("Bearer two")));
        r.refresh_authorization(&mut old);
        assert_eq!(auth(&old), ["Bearer two"]);
        // The application's own header is never replaced or doubled.
        let mut config = HttpConfig::new("https://mcp.example.com/mcp");
        config
            .headers
            .push(("Authorization".into(), "Bearer mine".into()));
        let mut r = HttpRules::new(config);
        r.set_authorization(Some(crate::secret::Secret::new("Bearer flow")));
        let mut post = r.post(&transmit(request(1, "initialize")));
        assert_eq!(auth(&post), ["Bearer mine"]);
        r.refresh_authorization(&mut post);
        assert_eq!(auth(&post), ["Bearer mine"]);
        // The value never shows in Debug.
        assert!(!format!("{post:?}").contains("mine"));
    }

    #[test]
    fn delete_only_with_a_session() {
        let mut r = rules();
        assert_eq!(r.delete(), None);
        open_session(&mut r, 0, "s");
        let d = r.delete().unwrap();
        assert_eq!(d.method, Method::Delete);
        assert!(d.headers.contains(&("Mcp-Session-Id".into(), "s".into())));
    }

    #[test]
    fn only_the_answer_to_the_request_counts() {
        let mut r = rules();
        let call = request(4, "tools/call");
        assert!(!r.observe_message(&call, br#"{"jsonrpc":"2.0","id":"srv","method":"ping"}"#));
        assert!(!r.observe_message(
            &call,
            br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#
        ));
        assert!(!r.observe_message(&call, br#"{"jsonrpc":"2.0","id":3,"result":{}}"#));
        assert!(r.observe_message(
            &call,
            br#"{"jsonrpc":"2.0","id":4,"error":{"code":1,"message":"x"}}"#
        ));
        assert!(r.observe_message(
            &call,
            br#"{"result":{"content":[]},"jsonrpc":"2.0","id":4}"#
        ));
    }

    #[test]
    fn a_404_to_a_notification_or_response_renews_the_session() {
        let mut r = rules();
        open_session(&mut r, 0, "s1");
        let cancel = TransmitKind::Cancellation { id: RequestId(3) };
        assert!(matches!(
            r.on_response(&cancel, Some("s1"), 404, &[]),
            Err(HttpError::SessionExpired { .. })
        ));
        assert_eq!(r.session_id(), None);
        // Until the new initialize is answered, nothing else goes out without the id.
        assert!(matches!(
            r.check_post(&request(4, "tools/call")),
            Err(HttpError::SessionExpired { .. })
        ));
        assert!(r.check_post(&TransmitKind::Response).is_err());
        assert_eq!(r.check_post(&request(5, "initialize")), Ok(()));
        open_session(&mut r, 5, "s2");
        assert_eq!(r.check_post(&request(4, "tools/call")), Ok(()));
        assert_eq!(r.session_id(), Some("s2"));
        // With renewal off the id is kept: later requests meet the 404 themselves.
        let mut off = HttpRules::new(HttpConfig {
            renew_expired_session: false,
            ..HttpConfig::new("http://h/")
        });
        off.session_id = Some("s".into());
        assert!(matches!(
            off.on_response(&TransmitKind::Response, Some("s"), 404, &[]),
            Err(HttpError::Status { status: 404, .. })
        ));
        assert_eq!(off.session_id(), Some("s"));
    }

    #[test]
    fn an_unsupported_protocol_version_never_reaches_a_header() {
        let mut r = rules();
        let init = request(0, "initialize");
        assert!(r.observe_message(
            &init,
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-06-18\u{e9}\"}}"
                .as_bytes()
        ));
        assert_eq!(r.protocol_version(), None);
        assert!(!r
            .post(&transmit(request(1, "ping")))
            .headers
            .iter()
            .any(|(k, _)| k == PROTOCOL_VERSION_HEADER));
    }

    #[test]
    fn an_event_id_that_is_not_visible_ascii_is_not_resumed_from() {
        let r = rules();
        let mut d = SseDecoder::new();
        d.feed("id: caf\u{e9}\ndata: \n\n".as_bytes());
        assert!(matches!(
            r.on_stream_end(&request(2, "tools/call"), false, 0, Some(&d)),
            StreamEnd::Failed(e) if e.to_string().contains("visible ASCII")
        ));
    }

    #[test]
    fn headers_and_urls_are_validated() {
        let ok = |url: &str, headers: &[(&str, &str)]| {
            HttpConfig {
                headers: h(headers),
                ..HttpConfig::new(url)
            }
            .validate()
        };
        assert_eq!(
            ok("http://127.0.0.1:1/mcp", &[("Authorization", "Bearer t")]),
            Ok(())
        );
        assert_eq!(
            ok("HTTPS://example.com/mcp?key=1", &[("X-A", "a\tb c")]),
            Ok(())
        );
        assert_eq!(
            ok("http://bob:hunter2@127.0.0.1/mcp", &[]),
            Err(ConfigError::Credentials)
        );
        assert!(!ConfigError::Credentials.to_string().contains("hunter2"));
        assert!(matches!(
            ok("ftp://h/", &[]),
            Err(ConfigError::NotHttp { .. })
        ));
        assert!(matches!(
            ok("http:///mcp", &[]),
            Err(ConfigError::NotHttp { .. })
        ));
        assert_eq!(
            ok("http://h/", &[("X-User", "Jos\u{e9}")]),
            Err(ConfigError::HeaderValue {
                name: "X-User".into()
            })
        );
        assert!(matches!(
            ok("http://h/", &[("X-A", "a\r\nX-B: 1")]),
            Err(ConfigError::HeaderValue { .. })
        ));
        assert!(matches!(
            ok("http://h/", &[("Bad Name", "v")]),
            Err(ConfigError::HeaderName { .. })
        ));
        assert!(matches!(
            ok("http://h/", &[("mcp-session-id", "v")]),
            Err(ConfigError::ReservedHeader { .. })
        ));
        let bad = HttpRequest {
            method: Method::Get,
            url: "http://u:p@h/mcp?k=SECRET".into(),
            headers: h(&[("Last-Event-ID", "caf\u{e9}")]),
            body: None,
        };
        assert_eq!(
            bad.check(),
            Err(HttpError::InvalidHeader {
                name: "Last-Event-ID".into(),
                url: "http://h/mcp".into()
            })
        );
    }

    #[test]
    fn urls_in_messages_lose_credentials_and_query() {
        assert_eq!(
            redact_url("http://bob:hunter2@127.0.0.1:9/mcp?key=SECRET#frag"),
            "http://127.0.0.1:9/mcp"
        );
        assert_eq!(redact_url("https://h.example"), "https://h.example");
        assert_eq!(redact_url("http://h/a@b/c"), "http://h/a@b/c");
        assert_eq!(redact_url("u:p@h/x?y"), "h/x");
    }

    #[test]
    fn debug_output_hides_header_values_and_url_secrets() {
        let mut config = HttpConfig::new("http://bob:pw@127.0.0.1/mcp?key=SECRET");
        config
            .headers
            .push(("Authorization".into(), "Bearer TOKEN".into()));
        let mut r = HttpRules::new(config.clone());
        r.session_id = Some("SESSION".into());
        let request = r.post(&transmit(request(1, "ping")));
        for text in [
            format!("{config:?}"),
            format!("{r:?}"),
            format!("{request:?}"),
        ] {
            assert!(text.contains("Authorization"), "{text}");
            for secret in ["TOKEN", "SECRET", "pw", "SESSION"] {
                assert!(!text.contains(secret), "{secret} in {text}");
            }
        }
    }

    #[test]
    fn a_401_or_403_is_a_typed_verdict_with_its_challenge() {
        let mut r = rules();
        let call = request(3, "tools/call");
        let challenge =
            r#"Bearer resource_metadata="https://x.example/.well-known/oauth-protected-resource""#;
        assert_eq!(
            r.on_response(&call, None, 401, &h(&[("WWW-Authenticate", challenge)])),
            Err(HttpError::Unauthorized {
                challenge: Some(challenge.into()),
                url: "http://127.0.0.1:1/mcp".into()
            })
        );
        let scope = r#"Bearer error="insufficient_scope", scope="files:write""#;
        assert_eq!(
            r.on_response(&call, None, 403, &h(&[("www-authenticate", scope)])),
            Err(HttpError::Forbidden {
                challenge: Some(scope.into()),
                url: "http://127.0.0.1:1/mcp".into()
            })
        );
        assert!(matches!(
            r.on_response(&call, None, 401, &[]),
            Err(HttpError::Unauthorized {
                challenge: None,
                ..
            })
        ));
        let huge = "a".repeat(100_000);
        let Err(HttpError::Unauthorized {
            challenge: Some(c), ..
        }) = r.on_response(&call, None, 401, &h(&[("WWW-Authenticate", &huge)]))
        else {
            panic!()
        };
        assert_eq!(c.len(), 4096, "bounded");
    }

    #[test]
    fn an_exchange_tracks_its_session_answer_and_resumptions() {
        let mut r = rules();
        let init = request(0, "initialize");
        let (_, ex) = r.begin(&transmit(init.clone()));
        r.on_exchange_response(
            &ex,
            200,
            &h(&[
                ("content-type", "text/event-stream"),
                ("mcp-session-id", "s1"),
            ]),
        )
        .unwrap();
        let call = request(1, "tools/call");
        let (post, mut ex) = r.begin(&transmit(call.clone()));
        assert!(post
            .headers
            .contains(&("Mcp-Session-Id".into(), "s1".into())));
        let mut d = SseDecoder::new();
        d.feed(b"id: e1\ndata: \n\n");
        assert!(!r.on_exchange_message(
            &mut ex,
            br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#
        ));
        assert!(matches!(
            r.on_exchange_end(&mut ex, Some(&d)),
            StreamEnd::Resume { .. }
        ));
        assert_eq!(ex.resumes(), 1, "counted by the exchange");
        assert!(r.on_exchange_message(&mut ex, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(ex.answered());
        assert_eq!(r.on_exchange_end(&mut ex, Some(&d)), StreamEnd::Done);
        // The session it carried decides what a 404 means, even after the rules moved on.
        assert!(matches!(
            r.on_exchange_response(&ex, 404, &[]),
            Err(HttpError::SessionExpired { .. })
        ));
    }

    #[test]
    fn a_cancellation_aborts_its_exchange_and_is_posted() {
        let r = rules();
        let id = RequestId(9);
        assert_eq!(
            r.on_cancel(&TransmitKind::Cancellation { id }),
            Some(Cancel {
                abort: id,
                notify: true
            })
        );
        assert_eq!(r.on_cancel(&TransmitKind::Response), None);
    }

    #[test]
    fn an_undelivered_answer_names_the_request_whose_stream_asked() {
        let mut r = rules();
        let call = transmit(request(5, "tools/call"));
        let (_, mut ex) = r.begin(&call);
        // A server request on the call's stream (twice the same id: the newest counts).
        assert!(!r.on_exchange_message(&mut ex, br#"{"jsonrpc":"2.0","id":"p1","method":"ping"}"#));
        let answer = |id: &str| Transmit {
            payload: format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#).into_bytes(),
            ..transmit(TransmitKind::Response)
        };
        let lost = r.on_undelivered(&answer(r#""p1""#)).unwrap();
        assert_eq!(lost.request, Some(RequestId(5)));
        assert_eq!(lost.what, r#"the answer to the server's request "p1""#);
        // Once only; an answer to a request never seen on a stream hurts no request.
        assert_eq!(r.on_undelivered(&answer(r#""p1""#)).unwrap().request, None);
        assert_eq!(r.on_undelivered(&answer("7")).unwrap().request, None);
        // A cancellation is reported, hurting no request; other notifications are not.
        let cancel = r
            .on_undelivered(&transmit(TransmitKind::Cancellation { id: RequestId(5) }))
            .unwrap();
        assert_eq!(
            (cancel.what.as_str(), cancel.request),
            ("the cancellation of request 5", None)
        );
        let note = TransmitKind::Notification {
            method: "notifications/progress".into(),
        };
        assert_eq!(r.on_undelivered(&transmit(note)), None);
        // The memory is bounded.
        for i in 0..(MAX_ASKED + 10) {
            let ask = format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#);
            r.on_exchange_message(&mut ex, ask.as_bytes());
        }
        assert_eq!(r.asked.len(), MAX_ASKED);
        assert_eq!(r.on_undelivered(&answer("0")).unwrap().request, None);
        let last = (MAX_ASKED + 9).to_string();
        assert_eq!(
            r.on_undelivered(&answer(&last)).unwrap().request,
            Some(RequestId(5))
        );
    }

    #[test]
    fn only_the_initialized_notification_and_cancellations_hold_back_what_follows() {
        let note = |method: &str| TransmitKind::Notification {
            method: method.into(),
        };
        let wait = HttpRules::order_wait;
        assert_eq!(wait(&note("notifications/initialized")), Some(ORDER_WAIT));
        assert_eq!(
            wait(&TransmitKind::Cancellation { id: RequestId(3) }),
            Some(ORDER_WAIT)
        );
        assert_eq!(wait(&note("notifications/progress")), None);
        assert_eq!(wait(&note("notifications/roots/list_changed")), None);
        assert_eq!(wait(&TransmitKind::Response), None);
        assert_eq!(wait(&TransmitKind::Abort { id: RequestId(3) }), None);
        assert_eq!(wait(&request(4, "tools/call")), None);
        assert!(ORDER_WAIT <= Duration::from_secs(1));
    }

    /// A legacy handshake whose `initialize` declared `capabilities`, answered with session `sid`.
    fn handshake(r: &mut HttpRules, capabilities: &str, sid: &str) {
        let init = Transmit {
            payload: format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{capabilities},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
            )
            .into_bytes(),
            ..transmit(request(0, "initialize"))
        };
        let (_, mut ex) = r.begin(&init);
        assert_eq!(
            r.on_exchange_response(
                &ex,
                200,
                &h(&[
                    ("content-type", "application/json"),
                    ("mcp-session-id", sid),
                ]),
            ),
            Ok(Body::Json)
        );
        assert!(r.on_exchange_message(
            &mut ex,
            br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#
        ));
    }

    fn event(data: &str) -> SseEvent {
        let mut d = SseDecoder::new();
        d.feed(format!("data: {data}\n\n").as_bytes());
        match d.poll_event() {
            Some(crate::sse::SseItem::Event(e)) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_standalone_stream_opens_after_a_handshake_that_declared_capabilities() {
        let mut r = rules();
        assert!(r.listen().is_none(), "not before the handshake");
        handshake(&mut r, "{}", "s1");
        assert!(
            r.listen().is_none(),
            "a client that answers nothing does not listen by default"
        );
        handshake(&mut r, r#"{"elicitation":{"form":{}}}"#, "s1");
        let (get, _) = r.listen().expect("listens");
        assert_eq!(get.method, Method::Get);
        assert_eq!(get.body, None);
        assert_eq!(
            get.headers,
            h(&[
                ("Accept", "text/event-stream"),
                ("Mcp-Session-Id", "s1"),
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Authorization", "Bearer t"),
            ])
        );
        // Its answer: an event stream, or nothing (405: the server offers none; any other).
        let sse = h(&[("content-type", "text/event-stream")]);
        assert_eq!(r.on_listen_response(200, &sse), Ok(()));
        assert!(r.on_listen_response(405, &[]).is_err());
        assert!(r.on_listen_response(404, &sse).is_err());
        assert!(r
            .on_listen_response(200, &h(&[("content-type", "application/json")]))
            .is_err());

        // The setting decides.
        for (setting, declared, listens) in [
            (StandaloneStream::Always, "{}", true),
            (StandaloneStream::Never, r#"{"roots":{}}"#, false),
            (StandaloneStream::WhenAnswering, r#"{"roots":{}}"#, true),
        ] {
            let mut config = HttpConfig::new("http://127.0.0.1:1/mcp");
            config.standalone_stream = setting;
            let mut r = HttpRules::new(config);
            handshake(&mut r, declared, "s");
            assert_eq!(r.listen().is_some(), listens, "{setting:?} {declared}");
        }

        // Never while the session is being renewed, and never in the modern era (no handshake).
        assert!(matches!(
            r.on_response(&request(5, "tools/list"), Some("s1"), 404, &[]),
            Err(HttpError::SessionExpired { .. })
        ));
        assert!(r.listen().is_none());
    }

    #[test]
    fn the_standalone_stream_reconnects_with_its_last_event_id_and_stops_when_idle() {
        let mut r = rules();
        handshake(&mut r, r#"{"sampling":{}}"#, "s1");
        let (_, mut listening) = r.listen().unwrap();
        // A stream with events and a `retry`: reconnect after it, from the last id.
        let mut d = SseDecoder::new();
        d.feed(b"id: 7\nretry: 300\ndata: \n\n");
        assert_eq!(
            r.on_listen_event(&mut listening, &event("")),
            None,
            "priming"
        );
        let message = event(r#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#);
        assert!(r.on_listen_event(&mut listening, &message).is_some());
        let (after, get) = r.on_listen_end(&mut listening, &d).expect("reconnects");
        assert_eq!(after, Duration::from_millis(300));
        assert!(get.headers.contains(&("Last-Event-ID".into(), "7".into())));
        assert_eq!(listening.idle_streams(), 0);
        // Streams that carry nothing: reconnected to `max_resume_attempts` times, then not.
        let empty = SseDecoder::new();
        for n in 1..=r.config().max_resume_attempts {
            let (after, get) = r.on_listen_end(&mut listening, &empty).expect("again");
            assert_eq!(after, Duration::from_millis(300), "the retry is kept");
            assert!(get.headers.contains(&("Last-Event-ID".into(), "7".into())));
            assert_eq!(listening.idle_streams(), n);
        }
        assert!(r.on_listen_end(&mut listening, &empty).is_none());

        // A stream of a session since replaced is not reopened.
        let (_, mut old) = r.listen().unwrap();
        handshake(&mut r, r#"{"sampling":{}}"#, "s2");
        assert!(r.on_listen_end(&mut old, &empty).is_none());
        assert!(r.listen().is_some(), "the new session listens anew");
    }

    // ---- redirects (RFC 9110 § 15.4) ----------------------------------------------------------

    #[test]
    fn which_redirects_are_followed_and_where_to() {
        let here = "http://127.0.0.1:1/mcp?k=v#f";
        let t = |method, status, location: Option<&str>| {
            redirect_target(method, status, location, here)
        };
        let to = |url: &str| Ok(Some(url.to_owned()));
        // 307 and 308 keep any method; a relative Location resolves against the request's URL.
        assert_eq!(
            t(Method::Post, 307, Some("/mcp/")),
            to("http://127.0.0.1:1/mcp/")
        );
        assert_eq!(
            t(Method::Post, 308, Some("mcp/v2")),
            to("http://127.0.0.1:1/mcp/v2")
        );
        assert_eq!(
            t(Method::Post, 308, Some("./a/../b?x=1#frag")),
            to("http://127.0.0.1:1/b?x=1")
        );
        assert_eq!(
            t(Method::Post, 307, Some("?q")),
            to("http://127.0.0.1:1/mcp?q")
        );
        assert_eq!(
            t(Method::Delete, 308, Some("HTTP://127.0.0.1:1/x")),
            to("http://127.0.0.1:1/x")
        );
        // 301, 302, 303 would turn a POST into a GET; a GET stays a GET.
        for status in [301, 302, 303] {
            assert_eq!(
                t(Method::Post, status, Some("/mcp/")),
                Err(RedirectRefused::ChangesMethod {
                    status,
                    method: "POST"
                })
            );
            assert_eq!(
                t(Method::Get, status, Some("/mcp/")),
                to("http://127.0.0.1:1/mcp/")
            );
        }
        assert!(t(Method::Delete, 303, Some("/")).is_err());
        assert_eq!(t(Method::Delete, 301, Some("/")), to("http://127.0.0.1:1/"));
        // Other statuses are no redirect to follow.
        for status in [200, 300, 304, 305, 306, 400] {
            assert_eq!(t(Method::Post, status, Some("/x")), Ok(None), "{status}");
        }
        // Another origin: another host, port or scheme; the default port is the same port.
        for (location, origin) in [
            ("http://localhost:1/mcp", "http://localhost:1"),
            ("http://127.0.0.1:2/mcp", "http://127.0.0.1:2"),
            ("https://127.0.0.1:1/mcp", "https://127.0.0.1:1"),
            ("//evil.example/mcp?token=SECRET", "http://evil.example"),
        ] {
            assert_eq!(
                t(Method::Post, 307, Some(location)),
                Err(RedirectRefused::CrossOrigin {
                    origin: origin.into()
                }),
                "{location}"
            );
        }
        assert_eq!(
            redirect_target(Method::Post, 308, Some("http://h:80/b"), "http://h/a"),
            to("http://h/b")
        );
        // No Location, or one that cannot be followed.
        assert_eq!(t(Method::Post, 307, None), Err(RedirectRefused::NoLocation));
        assert_eq!(
            t(Method::Post, 307, Some(" ")),
            Err(RedirectRefused::NoLocation)
        );
        for bad in [
            "ftp://127.0.0.1:1/x",
            "http://user:pw@127.0.0.1:1/x",
            "http://[::1",
            "mailto:x@y",
        ] {
            assert_eq!(
                t(Method::Post, 307, Some(bad)),
                Err(RedirectRefused::BadLocation),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_followed_redirect_moves_the_endpoint_and_counts_against_the_exchange() {
        let mut r = rules();
        let call = transmit(request(1, "tools/call"));
        let (_, mut ex) = r.begin(&call);
        let to = |l: &str| h(&[("Location", l)]);
        assert_eq!(
            r.on_redirect(&mut ex, Method::Post, 200, &[]),
            Ok(None),
            "not a redirect"
        );
        assert_eq!(
            r.on_redirect(&mut ex, Method::Post, 307, &to("/mcp/")),
            Ok(Some("http://127.0.0.1:1/mcp/".into()))
        );
        assert_eq!(ex.redirects(), 1);
        let again = r.post_again(&ex, &call);
        assert_eq!(again.url, "http://127.0.0.1:1/mcp/");
        assert_eq!(
            (again.method, &again.headers, &again.body),
            (Method::Post, &r.post(&call).headers, &Some(b"{}".to_vec())),
            "method, headers and body kept"
        );
        // From now on, every request goes there: POSTs, resumption GETs, the DELETE.
        assert_eq!(r.url(), "http://127.0.0.1:1/mcp/");
        assert_eq!(r.redacted_url(), "http://127.0.0.1:1/mcp/");
        assert_eq!(r.post(&transmit(request(2, "ping"))).url, r.url());
        let mut d = SseDecoder::new();
        d.feed(b"id: e1\ndata: \n\n");
        let StreamEnd::Resume { request, .. } = r.on_exchange_end(&mut ex, Some(&d)) else {
            panic!()
        };
        assert_eq!(request.url, "http://127.0.0.1:1/mcp/");
        open_session(&mut r, 0, "s");
        assert_eq!(r.delete().unwrap().url, "http://127.0.0.1:1/mcp/");
        // A loop: back to where it came from, or to itself.
        let err = r.on_redirect(&mut ex, Method::Get, 308, &to("/mcp"));
        assert!(
            matches!(&err, Err(HttpError::Redirect { status: 308, reason: RedirectRefused::Loop { url }, .. }) if url == "http://127.0.0.1:1/mcp"),
            "{err:?}"
        );
        let (_, mut ex) = r.begin(&call);
        assert!(matches!(
            r.on_redirect(&mut ex, Method::Post, 307, &to("/mcp/")),
            Err(HttpError::Redirect {
                reason: RedirectRefused::Loop { .. },
                ..
            })
        ));
        // At most five per exchange.
        let (_, mut ex) = r.begin(&call);
        for hop in 1..=5 {
            assert!(r
                .on_redirect(&mut ex, Method::Post, 307, &to(&format!("/hop{hop}")))
                .unwrap()
                .is_some());
        }
        assert_eq!(
            r.on_redirect(&mut ex, Method::Post, 307, &to("/hop6")),
            Err(HttpError::Redirect {
                status: 307,
                url: "http://127.0.0.1:1/hop5".into(),
                reason: RedirectRefused::TooMany { limit: 5 }
            })
        );
        // Another origin is refused and moves nothing; the error names the origin only.
        let (_, mut ex) = r.begin(&call);
        let err = r
            .on_redirect(
                &mut ex,
                Method::Post,
                307,
                &to("http://bob:pw@evil.example:8080/steal?key=SECRET"),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "HTTP 307 redirect from http://127.0.0.1:1/hop5 not followed: its Location is not an http:// or https:// URL without user info"
        );
        let err = r
            .on_redirect(
                &mut ex,
                Method::Post,
                307,
                &to("http://evil.example:8080/s?key=SECRET"),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "HTTP 307 redirect from http://127.0.0.1:1/hop5 not followed: it points to another origin, http://evil.example:8080"
        );
        assert_eq!(r.url(), "http://127.0.0.1:1/hop5");
        let err = r
            .on_redirect(&mut ex, Method::Post, 302, &to("/x"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "HTTP 302 redirect from http://127.0.0.1:1/hop5 not followed: following a 302 would turn the POST into a GET"
        );
    }
}
