//! The MCP client session: a pure state machine. See [`Session`].
//!
//! This file keeps the public loop (inputs, commands, outputs) and the pending-request table; the
//! rules live one concern a file:
//! - [`request`]: what a request is, how it is built, and how its answer is decoded;
//! - `dispatch`: what the server sent, classified and handed to the right place (answers, server
//!   requests, notifications, junk);
//! - `legacy`: the `initialize` handshake of the legacy era (2024-11-05 … 2025-11-25) and its
//!   renewal.

mod dispatch;
mod legacy;
mod pending;
pub mod request;

pub use dispatch::{MAX_ECHOED_ID, MAX_ECHOED_METHOD};
pub use pending::TimerFor;
use pending::{Pending, PendingTable};
use request::Timeout;
pub use request::{CallTool, ListTools, Method, Reply, Request};

use crate::error::{RequestError, SessionError, UsageError, Warning};
use crate::framing::{Frame, LineFramer, DEFAULT_FRAME_LIMIT};
use crate::jsonrpc::{self, RequestId};
use crate::types::{Implementation, InitializeResult};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

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

/// Whom a transport failure hits, as the session decided it ([`Session::handle_undeliverable`],
/// [`Session::handle_expired`]): the driver hands its own error (an HTTP status, an I/O error) to
/// these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Casualties {
    /// The request that fails with the transport's error (no event comes for it).
    pub request: Option<RequestId>,
    /// The session ended because of it: the `Closed` outcomes that follow have this cause.
    pub session: bool,
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
    pending: PendingTable,
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
                pending: PendingTable::default(),
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
        self.core.pending.get(&id)?.deadline()
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

    /// A transport discarded a message over its own limit (an HTTP body, an SSE event), found on
    /// the response to `request` when it knows which: the same rule as for an oversized line
    /// applies (a warning; that request, or else the only pending one, fails with
    /// [`RequestError::TooLarge`] at once).
    pub fn handle_oversized(
        &mut self,
        len: u64,
        limit: usize,
        request: Option<RequestId>,
        now: Instant,
    ) {
        self.core.last_received = Some(now);
        let target = match request {
            Some(id) => Some(id).filter(|id| self.core.pending.contains_key(id)),
            None => self.core.only_pending(),
        };
        self.core.oversized(len, limit, target);
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
        for id in self.core.pending.due(now) {
            let Some(p) = self.core.pending.get(&id) else {
                continue;
            };
            let after = p.timeout.unwrap_or_default();
            let reason = format!("timed out after {}", fmt_duration(after));
            self.core.abandon(id, reason, RequestError::Timeout(after));
        }
    }

    // ---- commands ------------------------------------------------------------------------------

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

    /// The transport could not deliver request `id` (an HTTP error status, a refused connection,
    /// a full queue): the session stops waiting for it without telling the server, which never
    /// saw it, and says who the failure hits. No event comes for `id` itself: the driver gives
    /// its waiter the transport's own error. When `id` is the `initialize` of a handshake (first
    /// or renewal), the session fails ([`Event::Failed`]) and what is pending ends with
    /// [`RequestError::Closed`] events, which the driver reports with the same error.
    pub fn handle_undeliverable(&mut self, id: RequestId) -> Casualties {
        if self.core.pending.remove(&id).is_none() {
            return Casualties::default();
        }
        let session = self.core.init_id == Some(id) && self.core.state == State::Initializing;
        if session {
            self.core
                .fail(SessionError::Initialize(RequestError::Closed));
        }
        Casualties {
            request: Some(id),
            session,
        }
    }

    /// The transport's session expired (over HTTP: a 404 to a message that carried its id;
    /// `expired` is the request that met it, `None` for a notification or response): renew it
    /// ([`restart`](Self::restart)). When it cannot be renewed (the first handshake is not done,
    /// or the session is closed), `expired` fails with the transport's error, or — when no
    /// request met it — the session closes, since it has no usable transport session.
    pub fn handle_expired(&mut self, expired: Option<RequestId>, now: Instant) -> Casualties {
        if self.restart(expired, now).is_ok() {
            return Casualties::default();
        }
        match expired {
            Some(id) => Casualties {
                request: self.core.pending.remove(&id).map(|_| id),
                session: false,
            },
            None => {
                self.close();
                Casualties {
                    request: None,
                    session: true,
                }
            }
        }
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
        self.poll_timer().map(|(at, _)| at)
    }

    /// The next timer and what it is for (see [`poll_timeout`](Self::poll_timeout)).
    pub fn poll_timer(&self) -> Option<(Instant, TimerFor)> {
        let (at, id) = self.core.pending.next_deadline()?;
        Some((at, TimerFor::Request(id)))
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
        let mut pending = Pending::new(
            request.method,
            payload,
            request.decoder,
            timeout,
            id.0,
            timeout.and_then(|t| now.checked_add(t)),
        );
        pending.unsent = !transmit;
        self.pending.insert(id, pending);
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
            // The server knows the request by the id it went out with.
            let params = json!({ "requestId": pending.wire(), "reason": reason });
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
        for (id, _) in self.pending.take_all() {
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
        for (id, _) in self.pending.take_all() {
            if Some(id) != self.init_id {
                self.events.push_back(Event::Response {
                    id,
                    result: Err(RequestError::Closed),
                });
            }
        }
    }

    /// Request `id` got its outcome.
    fn complete(&mut self, id: RequestId, outcome: Result<Reply, RequestError>) {
        if self.pending.remove(&id).is_none() {
            return;
        }
        if self.init_id == Some(id) {
            return self.complete_initialize(outcome);
        }
        self.events.push_back(Event::Response {
            id,
            result: outcome,
        });
    }
}

fn fmt_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
