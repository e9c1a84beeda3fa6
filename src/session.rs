//! The MCP client session: a pure state machine. See [`Session`].

use crate::error::{RequestError, SessionError, UsageError, Warning};
use crate::framing::{Frame, LineFramer, DEFAULT_FRAME_LIMIT};
use crate::jsonrpc::{self, Incoming, RawMessage, RequestId, RpcError};
use crate::types::{
    CallToolResult, Implementation, InitializeParams, InitializeResult, ListToolsResult,
    LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// The longest server request id (as JSON text, in bytes) the session answers; a request with a
/// longer one is left unanswered, so that a server cannot make the client echo huge ids.
pub const MAX_ECHOED_ID: usize = 256;
/// The longest method name quoted back in a -32601 "Method not found" answer.
pub const MAX_ECHOED_METHOD: usize = 128;

/// The default per-request timeout: 60 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Session settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Sent as `clientInfo` in `initialize`.
    pub client_info: Implementation,
    /// The largest message accepted, in bytes (default 64 MiB). A longer line is discarded through
    /// its newline without being buffered; the request it answers fails with
    /// [`RequestError::TooLarge`] when it can be told which one it is.
    pub frame_limit: usize,
    /// The timeout of a request that sets none (default [`DEFAULT_TIMEOUT`]; `None`: no timeout).
    pub default_timeout: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            client_info: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            frame_limit: DEFAULT_FRAME_LIMIT,
            default_timeout: Some(DEFAULT_TIMEOUT),
        }
    }
}

/// The protocol era a session speaks. The era is a value the session consults when it builds a
/// request or reads a result, so that the modern, handshake-less era (2026-07-28) fits beside the
/// legacy one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: an `initialize` handshake opens the session.
    Legacy,
}

/// Where the session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum State {
    /// Created; `initialize` not yet sent.
    New,
    /// `initialize` sent, its answer awaited.
    Initializing,
    /// The handshake completed; requests may be sent.
    Ready,
    /// Closed, ended by the peer, or failed. Nothing more is sent.
    Closed,
}

/// A request to send: a method, its params, and its own timeout.
#[derive(Debug, Clone)]
pub struct Request {
    method: String,
    params: Option<Value>,
    expect: Expect,
    timeout: Timeout,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Timeout {
    Default,
    After(Duration),
    Never,
}

/// How a response's `result` is decoded.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Initialize,
    ListTools,
    CallTool,
    Raw,
}

impl Request {
    /// Any request, by method name; its result is handed back as raw JSON ([`Reply::Raw`]).
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Request {
            method: method.into(),
            params,
            expect: Expect::Raw,
            timeout: Timeout::Default,
        }
    }

    /// `tools/list` for one page: the first page with `None`, else the previous page's `nextCursor`.
    /// Its reply is [`Reply::Tools`].
    pub fn list_tools(cursor: Option<&str>) -> Self {
        let params = cursor.map(|c| json!({ "cursor": c }));
        Request {
            expect: Expect::ListTools,
            ..Request::new("tools/list", params)
        }
    }

    /// `tools/call` with the model's raw arguments (`null` becomes `{}`). Its reply is
    /// [`Reply::ToolCall`].
    ///
    /// > "arguments: { [key: string]: unknown }" — MCP 2025-11-25 schema, `CallToolRequestParams`
    pub fn call_tool(name: &str, arguments: Value) -> Self {
        let arguments = if arguments.is_null() {
            json!({})
        } else {
            arguments
        };
        Request {
            expect: Expect::CallTool,
            ..Request::new(
                "tools/call",
                Some(json!({ "name": name, "arguments": arguments })),
            )
        }
    }

    /// Sets this request's timeout, replacing the session default.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Timeout::After(timeout);
        self
    }

    /// This request never times out.
    pub fn no_timeout(mut self) -> Self {
        self.timeout = Timeout::Never;
        self
    }

    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }
}

/// The guard on following `nextCursor` across `tools/list` pages: cursors are opaque, so a server
/// that repeats one, never stops paging, or sends more than the application keeps, must not keep a
/// client listing (and buffering) forever. Cursors are remembered by a 64-bit hash, so memory grows
/// by 8 bytes a page whatever the server sends.
#[derive(Debug, Clone)]
pub struct Pagination {
    seen: HashSet<u64>,
    pages: usize,
    max_pages: usize,
    bytes: usize,
    max_bytes: usize,
}

/// Why a listing stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PaginationError {
    /// The server sent a cursor it had sent before (the cursor's start is kept for the message).
    #[error("the server repeated cursor {0:?}")]
    RepeatedCursor(String),
    /// The server sent more pages than the cap.
    #[error("more than {0} pages of tools")]
    TooManyPages(usize),
    /// The pages together hold more than the cap, in bytes.
    #[error("the tools listed exceed {0} bytes")]
    TooLarge(usize),
}

impl Pagination {
    /// A guard allowing at most `max_pages` pages (and any number of bytes).
    pub fn new(max_pages: usize) -> Self {
        Pagination {
            seen: HashSet::new(),
            pages: 0,
            max_pages,
            bytes: 0,
            max_bytes: usize::MAX,
        }
    }

    /// Also allows at most `max_bytes` of items across all pages.
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Call before requesting each page: fails once the cap is reached.
    pub fn admit(&mut self) -> Result<(), PaginationError> {
        if self.pages >= self.max_pages {
            return Err(PaginationError::TooManyPages(self.max_pages));
        }
        self.pages += 1;
        Ok(())
    }

    /// Call with each page's `nextCursor` and the size of its items: the cursor to request next
    /// (`None`: that was the last page), or an error for a cursor seen before or for items past
    /// the byte cap.
    pub fn follow(
        &mut self,
        next_cursor: Option<String>,
        page_bytes: usize,
    ) -> Result<Option<String>, PaginationError> {
        self.bytes = self.bytes.saturating_add(page_bytes);
        if self.bytes > self.max_bytes {
            return Err(PaginationError::TooLarge(self.max_bytes));
        }
        match next_cursor {
            None => Ok(None),
            Some(c) if !self.seen.insert(hash(&c)) => Err(PaginationError::RepeatedCursor(
                c.chars().take(80).collect(),
            )),
            Some(c) => Ok(Some(c)),
        }
    }
}

fn hash(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    // Fixed keys: deterministic, as the core must be. A crafted collision only ends a listing early.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// A decoded successful answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reply {
    /// A `tools/list` page.
    Tools(ListToolsResult),
    /// A `tools/call` result (which may still report `isError`).
    ToolCall(CallToolResult),
    /// The result of any other request, as sent.
    Raw(Value),
}

/// Something the session tells its driver.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// The handshake completed: requests may now be sent.
    Ready,
    /// The handshake failed; the session is closed.
    Failed(SessionError),
    /// A request ended: answered, failed, timed out or cancelled. Each request id gets exactly one.
    Response {
        /// The request's id, as returned by the command that sent it.
        id: RequestId,
        /// Its outcome.
        result: Result<Reply, RequestError>,
    },
    /// The server said its tool list changed (`notifications/tools/list_changed`).
    ToolsListChanged,
    /// The server misbehaved in a way the session tolerated.
    Warning(Warning),
    /// The connection ended or [`Session::close`] was called; the session is closed.
    Closed,
}

/// What one outbound message is, so that a transport can treat it right (HTTP expects an answer
/// to a request, and 202 to anything else).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransmitKind {
    /// A request; its answer comes back as an [`Event::Response`] (or [`Event::Ready`]).
    Request {
        /// Its id.
        id: RequestId,
        /// Its method.
        method: String,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: String,
    },
    /// `notifications/cancelled` for request `id`: a transport may also abort that request's
    /// exchange (over HTTP, its response stream).
    Cancellation {
        /// The request given up on.
        id: RequestId,
    },
    /// An answer to a server request (a ping reply, a -32601 rejection).
    Response,
}

/// One outbound message: compact JSON, without a line end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The serialized JSON-RPC message. It contains no newline; over stdio, write it and then `\n`.
    pub payload: Vec<u8>,
    /// What it is.
    pub kind: TransmitKind,
}

/// Counters of what the session tolerated or handled on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Server notifications dropped (all but `notifications/tools/list_changed`).
    pub notifications_dropped: u64,
    /// Server `ping` requests answered.
    pub pings_answered: u64,
    /// Server requests rejected with -32601.
    pub requests_rejected: u64,
    /// Responses to requests that were cancelled, timed out or already answered, dropped silently.
    pub late_responses: u64,
    /// Messages skipped: not JSON, not JSON-RPC, unknown ids, oversized.
    pub messages_ignored: u64,
}

#[derive(Debug)]
struct Pending {
    method: String,
    /// The request as sent, kept to resend it after [`Session::restart`].
    payload: Vec<u8>,
    /// To be transmitted once the renewed session is ready: it met the expired session, or it
    /// was sent while the session was being renewed. The server has not seen it.
    unsent: bool,
    expect: Expect,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
}

/// An MCP client session as a pure state machine: bytes and time in; frames and events out.
///
/// It performs no I/O, spawns nothing and never reads the clock: every input takes `now`. It never
/// panics on anything a server sends.
///
/// # The loop
/// ```
/// use mcp_proto::{Config, Event, Session};
/// use std::time::Instant;
///
/// let mut session = Session::new(Config::default());
/// session.initialize(Instant::now()).unwrap();
/// // After every input or command, drain the outputs, in this order:
/// while let Some(t) = session.poll_transmit() {
///     // write t.payload and then b"\n" to the server's stdin
/// #   let _ = t;
/// }
/// while let Some(event) = session.poll_event() {
///     // hand events to whoever waits for them
/// #   let _ = event;
/// }
/// let _wake_at = session.poll_timeout(); // arm one timer; on expiry call handle_timeout(now)
/// // Then wait for bytes (handle_bytes), end of stream (handle_eof) or the timer, and repeat.
/// ```
///
/// # Method kinds
/// - getters: [`state`](Self::state), [`server_info`](Self::server_info), [`stats`](Self::stats), …
/// - inputs: [`handle_bytes`](Self::handle_bytes) (a newline-delimited stream, as over stdio),
///   [`handle_message`](Self::handle_message) (one whole message, as an HTTP body or an SSE event's
///   data), [`handle_eof`](Self::handle_eof), [`handle_timeout`](Self::handle_timeout)
/// - commands: [`initialize`](Self::initialize), [`send`](Self::send) (with
///   [`list_tools`](Self::list_tools) and [`call_tool`](Self::call_tool) as shorthands),
///   [`cancel`](Self::cancel), [`close`](Self::close); each returns at once, a request's id
///   identifies its later [`Event::Response`]
/// - outputs: [`poll_transmit`](Self::poll_transmit), [`poll_event`](Self::poll_event),
///   [`poll_timeout`](Self::poll_timeout)
#[derive(Debug)]
pub struct Session {
    framer: LineFramer,
    core: Core,
}

/// Everything but the framer, so that frames can be handled while the framer is borrowed.
#[derive(Debug)]
struct Core {
    config: Config,
    era: Era,
    state: State,
    next_id: u64,
    init_id: Option<RequestId>,
    init: Option<InitializeResult>,
    pending: BTreeMap<RequestId, Pending>,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
    /// When the last message from the server arrived.
    last_received: Option<Instant>,
}

impl Session {
    /// A new session; nothing is sent until [`initialize`](Self::initialize).
    pub fn new(config: Config) -> Self {
        Session {
            framer: LineFramer::new(config.frame_limit),
            core: Core {
                config,
                era: Era::Legacy,
                state: State::New,
                next_id: 0,
                init_id: None,
                init: None,
                pending: BTreeMap::new(),
                transmits: VecDeque::new(),
                events: VecDeque::new(),
                stats: Stats::default(),
                last_received: None,
            },
        }
    }

    // ---- getters -------------------------------------------------------------------------------

    /// Where the session is in its life.
    pub fn state(&self) -> State {
        self.core.state
    }

    /// Whether the handshake completed and the session is open.
    pub fn is_ready(&self) -> bool {
        self.core.state == State::Ready
    }

    /// The protocol era.
    pub fn era(&self) -> Era {
        self.core.era
    }

    /// The server's `initialize` answer, once the handshake completed.
    pub fn initialize_result(&self) -> Option<&InitializeResult> {
        self.core.init.as_ref()
    }

    /// The server's identity (`serverInfo`), once the handshake completed.
    pub fn server_info(&self) -> Option<&Implementation> {
        self.core.init.as_ref().map(|i| &i.server_info)
    }

    /// The server's capabilities, once the handshake completed.
    pub fn server_capabilities(&self) -> Option<&Value> {
        self.core.init.as_ref().map(|i| &i.capabilities)
    }

    /// The server's instructions for the model, when it gave any.
    pub fn instructions(&self) -> Option<&str> {
        self.core.init.as_ref()?.instructions.as_deref()
    }

    /// The negotiated protocol revision, once the handshake completed.
    pub fn protocol_version(&self) -> Option<&str> {
        self.core.init.as_ref().map(|i| i.protocol_version.as_str())
    }

    /// The number of requests awaiting an answer.
    pub fn pending_requests(&self) -> usize {
        self.core.pending.len()
    }

    /// Whether request `id` is awaiting an answer.
    pub fn is_pending(&self, id: RequestId) -> bool {
        self.core.pending.contains_key(&id)
    }

    /// When request `id` times out, if it is pending and has a timeout. A driver whose callers
    /// each wait for their own request arms this, so each timeout fires on time whoever else waits.
    pub fn deadline(&self, id: RequestId) -> Option<Instant> {
        self.core.pending.get(&id)?.deadline
    }

    /// Bytes buffered for an incomplete line (at most the frame limit).
    pub fn buffered_len(&self) -> usize {
        self.framer.buffered_len()
    }

    /// When the last message from the server arrived (as given to the `handle_*` inputs): for a
    /// driver's keep-alive or idle decisions.
    pub fn last_received(&self) -> Option<Instant> {
        self.core.last_received
    }

    /// Counters of what the session handled on its own.
    pub fn stats(&self) -> Stats {
        self.core.stats
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.core.config
    }

    // ---- inputs --------------------------------------------------------------------------------

    /// Feeds bytes of a newline-delimited stream (stdio), in chunks of any size.
    pub fn handle_bytes(&mut self, bytes: &[u8], now: Instant) {
        let core = &mut self.core;
        self.framer
            .feed(bytes, |frame| core.handle_frame(frame, now));
    }

    /// Feeds one whole message (an HTTP response body, or the data of one SSE event). A message
    /// over the frame limit is discarded like an oversized line.
    pub fn handle_message(&mut self, message: &[u8], now: Instant) {
        let frame = if message.len() > self.framer.limit() {
            Frame::Oversized {
                len: message.len() as u64,
                id_hint: None,
            }
        } else {
            Frame::Line(message)
        };
        self.core.handle_frame(frame, now);
    }

    /// The stream ended: a final message without its newline is still delivered, then every pending
    /// request fails with [`RequestError::Closed`] and the session closes.
    pub fn handle_eof(&mut self, now: Instant) {
        let core = &mut self.core;
        self.framer.finish(|frame| core.handle_frame(frame, now));
        self.core.shut(Some(SessionError::Closed));
    }

    /// Fails every request whose deadline is at or before `now`
    /// ([`RequestError::Timeout`]), and queues `notifications/cancelled` for each.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<RequestId> = self
            .core
            .pending
            .iter()
            .filter(|(_, p)| p.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            let Some(p) = self.core.pending.get(&id) else {
                continue;
            };
            let after = p.timeout.unwrap_or_default();
            let reason = format!("timed out after {}", fmt_duration(after));
            self.core.abandon(id, reason, RequestError::Timeout(after));
        }
    }

    // ---- commands ------------------------------------------------------------------------------

    /// Starts the handshake: queues `initialize` offering the latest legacy revision.
    ///
    /// > "The initialization phase MUST be the first interaction between client and server."
    /// > — MCP 2025-11-25, Lifecycle § Initialization
    pub fn initialize(&mut self, now: Instant) -> Result<RequestId, UsageError> {
        match self.core.state {
            State::New => {}
            State::Closed => return Err(UsageError::Closed),
            State::Initializing | State::Ready => return Err(UsageError::AlreadyInitialized),
        }
        Ok(self.initialize_inner(now))
    }

    fn initialize_inner(&mut self, now: Instant) -> RequestId {
        let params = InitializeParams {
            protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
            capabilities: json!({}),
            client_info: self.core.config.client_info.clone(),
        };
        let params = serde_json::to_value(params).expect("InitializeParams serializes");
        let request = Request {
            expect: Expect::Initialize,
            ..Request::new("initialize", Some(params))
        };
        let id = self.core.enqueue(request, now, true);
        self.core.init_id = Some(id);
        self.core.state = State::Initializing;
        id
    }

    /// Sends a request. Fails with [`UsageError::NotReady`] before the handshake completed.
    ///
    /// While the session is being renewed ([`restart`](Self::restart)), the request is accepted
    /// and waits, pending but not transmitted (its timeout runs), until the new session is ready.
    pub fn send(&mut self, request: Request, now: Instant) -> Result<RequestId, UsageError> {
        match self.core.state {
            State::Ready => Ok(self.core.enqueue(request, now, true)),
            State::Initializing if self.core.init.is_some() => {
                Ok(self.core.enqueue(request, now, false))
            }
            State::Closed => Err(UsageError::Closed),
            State::New | State::Initializing => Err(UsageError::NotReady),
        }
    }

    /// Requests one page of tools; see [`Request::list_tools`].
    pub fn list_tools(
        &mut self,
        cursor: Option<&str>,
        now: Instant,
    ) -> Result<RequestId, UsageError> {
        self.send(Request::list_tools(cursor), now)
    }

    /// Calls a tool with the model's raw arguments; see [`Request::call_tool`].
    pub fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        now: Instant,
    ) -> Result<RequestId, UsageError> {
        self.send(Request::call_tool(name, arguments), now)
    }

    /// Gives up on a pending request: it fails with [`RequestError::Cancelled`], the server is sent
    /// `notifications/cancelled {requestId, reason}`, and a late answer is dropped silently.
    ///
    /// > "When a party wants to cancel an in-progress request, it sends a `notifications/cancelled`
    /// > notification" — MCP 2025-11-25, Utilities § Cancellation
    pub fn cancel(&mut self, id: RequestId, reason: &str) -> Result<(), UsageError> {
        if self.core.init_id == Some(id) && self.core.state == State::Initializing {
            return Err(UsageError::CannotCancelInitialize);
        }
        if !self.core.pending.contains_key(&id) {
            return Err(UsageError::UnknownRequest(id));
        }
        self.core.abandon(
            id,
            reason.to_owned(),
            RequestError::Cancelled(reason.to_owned()),
        );
        Ok(())
    }

    /// The transport could not deliver request `id` (an HTTP error status, a refused connection):
    /// stop waiting for it without telling the server, which never saw it. It ends with
    /// [`RequestError::Closed`] (for `initialize`, the session fails). Returns whether it was pending.
    pub fn abort(&mut self, id: RequestId) -> bool {
        if !self.core.pending.contains_key(&id) {
            return false;
        }
        self.core.complete(id, Err(RequestError::Closed));
        true
    }

    /// The transport's session is gone (over HTTP: a 404 to a message that carried a session id),
    /// so start a new one: a fresh `initialize` is queued. `expired` is the request that met the
    /// expired session (`None` when a notification or response did): it is marked to be sent
    /// again, with its id, deadline and waiter unchanged, once the new session is ready. Other
    /// pending requests are not resent: they were accepted and are being answered on their own
    /// (over HTTP, on their own response streams), and sending them again would run them twice.
    /// Requests sent during the renewal wait for it (see [`send`](Self::send)).
    ///
    /// > "When a client receives HTTP 404 in response to a request containing an `Mcp-Session-Id`,
    /// > it MUST start a new session by sending a new `InitializeRequest` without a session ID
    /// > attached." — MCP 2025-11-25, Transports § Session Management
    ///
    /// Calling it while a restart is already under way starts nothing new, but still marks
    /// `expired` for resending.
    pub fn restart(&mut self, expired: Option<RequestId>, now: Instant) -> Result<(), UsageError> {
        let renewing = match self.core.state {
            State::Ready => false,
            State::Initializing if self.core.init.is_some() => true,
            State::Initializing | State::New => return Err(UsageError::NotReady),
            State::Closed => return Err(UsageError::Closed),
        };
        if let Some(p) = expired.and_then(|id| self.core.pending.get_mut(&id)) {
            p.unsent = true;
        }
        if !renewing {
            self.initialize_inner(now);
        }
        Ok(())
    }

    /// Closes the session: pending requests fail with [`RequestError::Closed`], nothing more is
    /// sent, and [`Event::Closed`] follows. Messages already queued stay queued for the driver to
    /// flush. Closing twice does nothing.
    pub fn close(&mut self) {
        self.core.shut(None);
    }

    // ---- outputs -------------------------------------------------------------------------------

    /// The next message to send, in order.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.core.transmits.pop_front()
    }

    /// The next event, in order.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.core.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called: the earliest deadline of a
    /// pending request.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.core.pending.values().filter_map(|p| p.deadline).min()
    }
}

impl Core {
    /// Adds a pending request; `transmit`: queue it for sending now (else it waits, unsent, for
    /// the renewed session).
    fn enqueue(&mut self, request: Request, now: Instant, transmit: bool) -> RequestId {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        let timeout = match request.timeout {
            Timeout::Default => self.config.default_timeout,
            Timeout::After(d) => Some(d),
            Timeout::Never => None,
        };
        let payload = jsonrpc::encode_request(id, &request.method, request.params.as_ref());
        if transmit {
            self.transmits.push_back(Transmit {
                payload: payload.clone(),
                kind: TransmitKind::Request {
                    id,
                    method: request.method.clone(),
                },
            });
        }
        self.pending.insert(
            id,
            Pending {
                payload,
                unsent: !transmit,
                method: request.method,
                expect: request.expect,
                deadline: timeout.and_then(|t| now.checked_add(t)),
                timeout,
            },
        );
        id
    }

    fn notify(&mut self, method: &str, params: Option<Value>) {
        self.transmits.push_back(Transmit {
            payload: jsonrpc::encode_notification(method, params.as_ref()),
            kind: TransmitKind::Notification {
                method: method.to_owned(),
            },
        });
    }

    /// Stops waiting for `id`: fails it with `error` and, unless it is `initialize`, tells the server.
    fn abandon(&mut self, id: RequestId, reason: String, error: RequestError) {
        if self.init_id == Some(id) && self.state == State::Initializing {
            // "The client MUST NOT attempt to cancel its initialize request." — 2025-11-25
            self.pending.remove(&id);
            self.fail(SessionError::Initialize(error));
            return;
        }
        let Some(pending) = self.pending.remove(&id) else {
            return;
        };
        // A request the server has not seen (waiting for a renewed session) needs no cancelling.
        if self.state != State::Closed && !pending.unsent {
            let params = json!({ "requestId": id, "reason": reason });
            self.transmits.push_back(Transmit {
                payload: jsonrpc::encode_notification("notifications/cancelled", Some(&params)),
                kind: TransmitKind::Cancellation { id },
            });
        }
        self.events.push_back(Event::Response {
            id,
            result: Err(error),
        });
    }

    /// Ends the session; `error` applies only if the handshake had not completed.
    fn shut(&mut self, error: Option<SessionError>) {
        match self.state {
            State::Closed => return,
            State::Initializing => {
                if let Some(e) = error {
                    self.fail(e);
                    return;
                }
            }
            State::New | State::Ready => {}
        }
        self.state = State::Closed;
        for (id, _) in std::mem::take(&mut self.pending) {
            if Some(id) != self.init_id || self.init.is_some() {
                self.events.push_back(Event::Response {
                    id,
                    result: Err(RequestError::Closed),
                });
            }
        }
        self.events.push_back(Event::Closed);
    }

    /// The handshake failed: the session closes with `error`.
    fn fail(&mut self, error: SessionError) {
        self.state = State::Closed;
        self.events.push_back(Event::Failed(error));
        // Requests kept across a restart end with the session.
        for (id, _) in std::mem::take(&mut self.pending) {
            if Some(id) != self.init_id {
                self.events.push_back(Event::Response {
                    id,
                    result: Err(RequestError::Closed),
                });
            }
        }
    }

    fn handle_frame(&mut self, frame: Frame<'_>, now: Instant) {
        self.last_received = Some(now);
        match frame {
            Frame::Line(line) => self.handle_message(line),
            Frame::Oversized { len, id_hint } => self.handle_oversized(len, id_hint.as_deref()),
        }
    }

    /// A message over the limit was discarded. Fail the request it answers when that can be told:
    /// its id was readable, or only one request is pending.
    fn handle_oversized(&mut self, len: u64, id_hint: Option<&str>) {
        self.stats.messages_ignored += 1;
        let limit = self.config.frame_limit;
        let target = id_hint
            .and_then(|id| id.parse::<u64>().ok())
            .map(RequestId)
            .filter(|id| self.pending.contains_key(id))
            .or_else(|| match (id_hint, self.pending.len()) {
                // An id that is not one of ours: a server request, or a stray answer.
                (Some(_), _) => None,
                (None, 1) => self.pending.keys().next().copied(),
                (None, _) => None,
            });
        self.events
            .push_back(Event::Warning(Warning::Oversized { len, limit }));
        if let Some(id) = target {
            self.complete(id, Err(RequestError::TooLarge { len, limit }));
        }
    }

    fn handle_message(&mut self, message: &[u8]) {
        // A BOM or surrounding whitespace around a whole message is tolerated.
        let message = message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message);
        let trimmed = message.trim_ascii_start();
        if trimmed.first() == Some(&b'[') {
            // > "MCP implementations MAY support sending JSON-RPC batches, but MUST support
            // > receiving JSON-RPC batches." — MCP 2025-03-26, Transports
            match serde_json::from_slice::<Vec<&RawValue>>(trimmed) {
                Ok(items) if items.is_empty() => {
                    self.ignore(Warning::NotJsonRpc("an empty batch".into()))
                }
                Ok(items) => {
                    for item in items {
                        self.handle_one(item.get().as_bytes());
                    }
                }
                Err(e) => self.not_json(message, &e),
            }
        } else {
            self.handle_one(message);
        }
    }

    fn handle_one(&mut self, message: &[u8]) {
        if self.fast_response(message) {
            return;
        }
        let raw = match serde_json::from_slice::<RawMessage<'_>>(message) {
            Ok(raw) => raw,
            Err(e) if e.is_data() => {
                return self.ignore(Warning::NotJsonRpc(e.to_string()));
            }
            Err(e) => return self.not_json(message, &e),
        };
        match raw.classify() {
            Incoming::Request { id, method } => self.handle_server_request(id, &method),
            Incoming::Notification { method } => {
                if method == "notifications/tools/list_changed" {
                    self.events.push_back(Event::ToolsListChanged);
                } else {
                    self.stats.notifications_dropped += 1;
                }
            }
            Incoming::Result { id, result } => {
                if let Some(own) = self.own_pending(id) {
                    let outcome = self.decode(own, result);
                    self.complete(own, outcome);
                }
            }
            Incoming::Error {
                id: Some(id),
                error,
            } => {
                if let Some(own) = self.own_pending(id) {
                    self.complete(own, Err(RequestError::Rpc(error)));
                }
            }
            Incoming::Error { id: None, error } => self.ignore(Warning::ErrorWithoutId(error)),
            Incoming::Invalid(reason) => self.ignore(Warning::NotJsonRpc(reason.into())),
        }
    }

    /// The fast path for the common case: an answer to a pending request whose id shows at the
    /// message's start or end is parsed once, straight into its result type, instead of once as an
    /// envelope and again as a result. Anything else (and any doubt) takes the general path, which
    /// gives the same outcome for what the fast path accepts.
    fn fast_response(&mut self, message: &[u8]) -> bool {
        #[derive(serde::Deserialize)]
        struct Answer<T> {
            id: u64,
            #[serde(default = "Option::default")]
            result: Option<T>,
            #[serde(default)]
            method: Option<serde::de::IgnoredAny>,
            #[serde(default)]
            error: Option<serde::de::IgnoredAny>,
        }
        fn parse<T: serde::de::DeserializeOwned>(message: &[u8], id: RequestId) -> Option<T> {
            let a: Answer<T> = serde_json::from_slice(message).ok()?;
            if a.id != id.0 || a.method.is_some() || a.error.is_some() {
                return None;
            }
            a.result
        }
        let Some(id) = crate::framing::peek_id(message)
            .and_then(|id| id.parse::<u64>().ok())
            .map(RequestId)
        else {
            return false;
        };
        let reply = match self.pending.get(&id).map(|p| p.expect) {
            Some(Expect::CallTool) => parse(message, id).map(Reply::ToolCall),
            Some(Expect::ListTools) => parse(message, id).map(Reply::Tools),
            Some(Expect::Raw) => parse::<Value>(message, id)
                .filter(|v| !v.is_null())
                .map(Reply::Raw),
            Some(Expect::Initialize) | None => None,
        };
        match reply {
            Some(reply) => {
                self.complete(id, Ok(reply));
                true
            }
            None => false,
        }
    }

    /// Resolves a response id to a pending request of ours. Answers to requests no longer pending
    /// are counted and dropped silently; ids we never sent are reported.
    fn own_pending(&mut self, id: &RawValue) -> Option<RequestId> {
        match jsonrpc::parse_own_id(id) {
            Some(own) if self.pending.contains_key(&own) => Some(own),
            // > "receivers … MAY ignore the response" to a cancelled request — 2025-11-25
            Some(own) if own.0 < self.next_id => {
                self.stats.late_responses += 1;
                None
            }
            _ => {
                let id: String = id.get().chars().take(MAX_ECHOED_ID).collect();
                self.ignore(Warning::UnknownId(id));
                None
            }
        }
    }

    /// > "The receiver MUST promptly respond with an empty response" to `ping`
    /// > — MCP 2025-11-25, Utilities § Ping.
    ///
    /// Any other request gets -32601, as this client declares no capabilities.
    ///
    /// What goes back is bounded whatever the server sends: a request whose id is longer than
    /// [`MAX_ECHOED_ID`] bytes is left unanswered (with a warning), and a method name is quoted in
    /// the -32601 message only up to [`MAX_ECHOED_METHOD`] bytes.
    fn handle_server_request(&mut self, id: &RawValue, method: &str) {
        if id.get().len() > MAX_ECHOED_ID {
            return self.ignore(Warning::RequestIdTooLong {
                len: id.get().len(),
                limit: MAX_ECHOED_ID,
            });
        }
        let outcome = if method == "ping" {
            self.stats.pings_answered += 1;
            Ok(json!({}))
        } else {
            self.stats.requests_rejected += 1;
            Err(RpcError {
                code: jsonrpc::METHOD_NOT_FOUND,
                message: if method.len() <= MAX_ECHOED_METHOD {
                    format!("Method not found: {method}")
                } else {
                    "Method not found".to_owned()
                },
                data: None,
            })
        };
        if self.state == State::Closed {
            return;
        }
        self.transmits.push_back(Transmit {
            payload: jsonrpc::encode_response(id, outcome),
            kind: TransmitKind::Response,
        });
    }

    fn decode(&self, id: RequestId, result: &RawValue) -> Result<Reply, RequestError> {
        let Some(p) = self.pending.get(&id) else {
            return Err(RequestError::Closed);
        };
        let invalid = |e: serde_json::Error| RequestError::InvalidResult {
            method: p.method.clone(),
            reason: e.to_string(),
        };
        let json = result.get();
        match p.expect {
            // Decoded again in `complete`; here only its shape is checked.
            Expect::Initialize => serde_json::from_str(json).map(Reply::Raw).map_err(invalid),
            Expect::ListTools => serde_json::from_str(json)
                .map(Reply::Tools)
                .map_err(invalid),
            Expect::CallTool => serde_json::from_str(json)
                .map(Reply::ToolCall)
                .map_err(invalid),
            Expect::Raw => serde_json::from_str(json).map(Reply::Raw).map_err(invalid),
        }
    }

    /// Request `id` got its outcome.
    fn complete(&mut self, id: RequestId, outcome: Result<Reply, RequestError>) {
        let Some(pending) = self.pending.remove(&id) else {
            return;
        };
        if pending.expect == Expect::Initialize {
            return self.complete_initialize(outcome);
        }
        self.events.push_back(Event::Response {
            id,
            result: outcome,
        });
    }

    fn complete_initialize(&mut self, outcome: Result<Reply, RequestError>) {
        let result = outcome.and_then(|reply| match reply {
            Reply::Raw(v) => serde_json::from_value::<InitializeResult>(v).map_err(|e| {
                RequestError::InvalidResult {
                    method: "initialize".into(),
                    reason: e.to_string(),
                }
            }),
            _ => unreachable!("initialize results decode as Reply::Raw"),
        });
        let init = match result {
            Ok(init) => init,
            Err(e) => return self.fail(SessionError::Initialize(e)),
        };
        // > "If the client does not support the version in the server's response, it SHOULD
        // > disconnect." — MCP 2025-11-25, Lifecycle § Version Negotiation
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
            return self.fail(SessionError::UnsupportedVersion {
                offered: init.protocol_version,
                supported: SUPPORTED_PROTOCOL_VERSIONS
                    .iter()
                    .map(|v| v.to_string())
                    .collect(),
            });
        }
        let restarted = self.init.is_some();
        self.init = Some(init);
        self.state = State::Ready;
        // > "After successful initialization, the client MUST send an initialized notification"
        self.notify("notifications/initialized", None);
        if restarted {
            // A new session after the old one expired: the requests that met the expiry, and
            // those sent during the renewal, go out now; the others stay on their streams.
            for (id, p) in self.pending.iter_mut().filter(|(_, p)| p.unsent) {
                p.unsent = false;
                self.transmits.push_back(Transmit {
                    payload: p.payload.clone(),
                    kind: TransmitKind::Request {
                        id: *id,
                        method: p.method.clone(),
                    },
                });
            }
        } else {
            self.events.push_back(Event::Ready);
        }
    }

    fn not_json(&mut self, message: &[u8], error: &serde_json::Error) {
        let excerpt = String::from_utf8_lossy(&message[..message.len().min(80)]).into_owned();
        self.ignore(Warning::NotJson {
            len: message.len(),
            error: error.to_string(),
            excerpt,
        });
    }

    fn ignore(&mut self, warning: Warning) {
        self.stats.messages_ignored += 1;
        self.events.push_back(Event::Warning(warning));
    }
}

fn fmt_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
