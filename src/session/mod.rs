//! The MCP client session: a pure state machine. See [`Session`].
//!
//! This file keeps the public loop (inputs, commands, outputs) and the pending-request table; the
//! rules live one concern a file:
//! - [`request`]: what a request is, how it is built, and how its answer is decoded;
//! - `transmit`: what goes out ([`Transmit`], [`TransmitKind`]), a leaf the HTTP rules read
//!   without depending on the session;
//! - `dispatch`: what the server sent, classified and handed to the right place (answers, server
//!   requests, notifications, junk);
//! - `opening`: where the opening is (one enum), and every transition of it: the legacy
//!   handshake, the modern era's `server/discover`, the probe that finds out which era a server
//!   speaks and its race with `initialize` (drawn as a table there), the renewal, the close;
//! - `legacy`: the legacy era's (2024-11-05 … 2025-11-25) `initialize`: its params, reading its
//!   answer, and what goes out once a renewed session is ready;
//! - `modern`: the stateless era (2026-07-28): `server/discover`, the per-request `_meta`,
//!   `resultType`, version retries and input-required rounds.

mod asks;
mod dispatch;
mod legacy;
mod modern;
pub(crate) mod offered;
mod opening;
mod pending;
pub mod request;
mod tasks;
pub(crate) mod transmit;

pub use asks::{
    AskId, ListKind, LogMessage, Progress, ServerRequest, MAX_ASKS, MAX_INPUT_REQUESTS,
};
pub use dispatch::{MAX_ECHOED_ID, MAX_ECHOED_METHOD};
pub use modern::MAX_REMEMBERED_TOOLS;
pub use pending::TimerFor;
use pending::{Pending, PendingTable};
pub use request::{
    CallTool, CallToolAsTask, CancelTask, Complete, Discover, GetPrompt, GetSkill, GetTask,
    GetTaskResult, ListPrompts, ListResourceTemplates, ListResources, ListSkills, ListTasks,
    ListTools, Method, ReadDirectory, ReadResource, Reply, Request, UpdateTask,
};
use request::{Params, Timeout};
pub use transmit::{Transmit, TransmitKind};

use crate::error::{RequestError, SessionError, UsageError, Warning};
use crate::framing::{LineFramer, DEFAULT_FRAME_LIMIT};
use crate::jsonrpc::{self, RequestId};
use crate::types::{Implementation, InitializeResult};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The default per-request timeout: 60 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the era probe waits for an answer before it also sends `initialize` (default 2 s);
/// see [`Config::probe_timeout`].
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a program that writes only lines that are not JSON-RPC on its stdout during the
/// opening gets to answer before it is found not to be an MCP server (default 3 s); see
/// [`Config::junk_timeout`].
pub const DEFAULT_JUNK_TIMEOUT: Duration = Duration::from_secs(3);

/// The most characters of a line quoted in [`SessionError::NotAnMcpServer`] (the rest becomes
/// `…`).
pub const QUOTED_LINE_MAX: usize = 80;

/// The most input-required rounds one request goes through (default 10, as the TypeScript,
/// Python, Go and C# SDKs allow).
pub const DEFAULT_MAX_INPUT_ROUNDS: u32 = 10;

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
    /// Which era to speak (default [`EraChoice::Auto`]: find out).
    pub era: EraChoice,
    /// With [`EraChoice::Auto`], how long `server/discover` waits for an answer before
    /// `initialize` is sent as well (default [`DEFAULT_PROBE_TIMEOUT`]). The probe still counts
    /// after that: whichever answer settles the era first wins (see [`EraChoice::Auto`]), so a
    /// short probe timeout costs a slow modern server nothing, and a legacy server that ignores
    /// the probe waits only this long.
    pub probe_timeout: Duration,
    /// The most input-required rounds one request goes through before it fails with
    /// [`RequestError::TooManyRounds`] (default [`DEFAULT_MAX_INPUT_ROUNDS`]).
    pub max_input_rounds: u32,
    /// Over a stream (stdio): once the program has written a line that is not JSON-RPC during
    /// the opening, and nothing that is, how long the opening's last request waits for an answer
    /// — counted from the later of that line and the request — before the opening fails with
    /// [`SessionError::NotAnMcpServer`], quoting the line (default [`DEFAULT_JUNK_TIMEOUT`];
    /// `None`: only the request's own timeout). A program that prints nothing yet (a slow
    /// starter) is not concerned, nor one that prints a banner and then answers, nor one that
    /// sent anything that is JSON-RPC.
    pub junk_timeout: Option<Duration>,
    /// What carries the messages; over HTTP the modern era mirrors request fields into headers
    /// ([`Transmit::headers`]) and cancels by closing the response stream.
    pub transport: TransportKind,
    /// What the application answers for the server (default: nothing; see
    /// [`ClientCapabilities`](crate::ClientCapabilities)). Declared in `initialize` (legacy era)
    /// and in every request's `_meta` (modern era); the server's requests for anything else are
    /// refused by the session.
    pub capabilities: crate::capabilities::ClientCapabilities,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            client_info: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            frame_limit: DEFAULT_FRAME_LIMIT,
            default_timeout: Some(DEFAULT_TIMEOUT),
            era: EraChoice::Auto,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            max_input_rounds: DEFAULT_MAX_INPUT_ROUNDS,
            junk_timeout: Some(DEFAULT_JUNK_TIMEOUT),
            transport: TransportKind::Stream,
            capabilities: crate::capabilities::ClientCapabilities::default(),
        }
    }
}

/// What carries a session's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TransportKind {
    /// A byte stream of newline-delimited messages (stdio, a socket).
    #[default]
    Stream,
    /// Streamable HTTP: one POST per message.
    Http,
}

/// The protocol era a session speaks. The era is a value the session consults when it builds a
/// request or reads a result: the rules of each live in their own module, behind one seam.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: an `initialize` handshake opens the session.
    Legacy,
    /// 2026-07-28 and later: stateless; every request carries the protocol version, the client's
    /// identity and capabilities in its `_meta`. No handshake, no ping, no session.
    Modern,
}

/// Which era a session speaks ([`Config::era`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EraChoice {
    /// Find out, as the spec says a dual-era client does: `server/discover` first; a discover
    /// result, or a recognised modern error, means modern; any other answer (an error, a result
    /// that is no discover result, an HTTP refusal) means legacy, and `initialize` follows on the
    /// same connection. With no answer within [`Config::probe_timeout`], `initialize` is sent
    /// too and the first answer that settles the era wins: the late discover result of a slow
    /// modern server, or the `initialize` result of a legacy server that ignores the probe.
    ///
    /// > "The server returns any other error, or does not respond within a reasonable timeout:
    /// > the server is legacy. Fall back to the `initialize` handshake." / "The fallback **MUST
    /// > NOT** be keyed to one specific error code" — MCP 2026-07-28, stdio § Backward
    /// > Compatibility
    #[default]
    Auto,
    /// The legacy era only: `initialize` first, as before 2026-07-28.
    Legacy,
    /// The modern era only: `server/discover` first; a server that is not modern fails the
    /// opening.
    Modern,
    /// Remembered from an earlier connection to the same server: try the legacy era first, and
    /// probe for the modern one only if `initialize` is refused with a JSON-RPC error.
    ///
    /// > "Clients **SHOULD** cache the result … and **MAY** persist it across restarts of the
    /// > same server configuration, re-probing if the cached assumption later fails." — MCP
    /// > 2026-07-28, Versioning
    LegacyFirst,
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
    /// The server said a list changed (`notifications/{tools,resources,prompts}/list_changed`).
    ListChanged(ListKind),
    /// The server asks the application something (its capability is declared): answer it with
    /// [`Session::respond`]. In the modern era these are the input requests of a call's
    /// input-required round; the call goes on when all are answered.
    ServerRequest {
        /// Its handle, for the answer.
        ask: AskId,
        /// What it asks.
        request: ServerRequest,
    },
    /// A server request is no longer open (the server cancelled it, or the call it belonged to
    /// ended): drop its handler; an answer would be refused.
    ServerRequestCancelled {
        /// Its handle.
        ask: AskId,
    },
    /// Progress of request `id`, which asked for it
    /// ([`Request::with_progress`](crate::Request::with_progress)). Comes in order, and only
    /// before its answer.
    Progress {
        /// The request.
        id: RequestId,
        /// How far it got.
        progress: Progress,
    },
    /// A log message from the server (`notifications/message`).
    Log(LogMessage),
    /// A resource the client subscribed to changed (`notifications/resources/updated`).
    ResourceUpdated {
        /// Its URI.
        uri: String,
    },
    /// The server acknowledged `subscriptions/listen` request `id`
    /// (`notifications/subscriptions/acknowledged`, 2026-07-28): its stream is open
    /// ([`subscriptions::Listener::handle_acknowledged`](crate::subscriptions::Listener::handle_acknowledged)).
    ListenAcknowledged {
        /// The listen request.
        id: RequestId,
        /// The filter the server agreed to honor (its `notifications`), as it sent it; `None`
        /// when it sent none.
        notifications: Option<Value>,
    },
    /// A URL-mode elicitation finished (`notifications/elicitation/complete`).
    ElicitationComplete {
        /// The `elicitationId` it named.
        elicitation_id: String,
    },
    /// A task's state, as a status notification told it (`notifications/tasks/status`,
    /// 2025-11-25; `notifications/tasks`, 2026-07-28): a hint to poll it now, never a reason to
    /// stop polling (see [`tasks::status_notification`](crate::tasks::status_notification)).
    TaskStatus(Box<crate::tasks::Task>),
    /// The server misbehaved in a way the session tolerated.
    Warning(Warning),
    /// The connection ended or [`Session::close`] was called; the session is closed.
    Closed,
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
    /// Input-required rounds answered (modern era): requests sent again with the server's state.
    pub input_rounds: u64,
    /// Requests sent again with another protocol version after -32022 (modern era).
    pub version_retries: u64,
    /// Tools left out of tool lists for invalid `x-mcp-header` annotations (modern era, HTTP).
    pub tools_rejected: u64,
    /// Server requests handed to the application (legacy requests and modern input requests).
    pub server_requests: u64,
    /// Progress notifications handed to their requests.
    pub progress_notifications: u64,
    /// The server's `roots/list` requests answered (legacy era; see
    /// [`Session::roots_unasked`]).
    pub roots_answered: u64,
    /// Messages read after their text was mended: invalid UTF-8 or lone surrogate escapes
    /// replaced with U+FFFD (see [`text`](crate::text)); each is also a [`Warning::Repaired`].
    pub repaired: u64,
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
/// **After every input or command, drain [`poll_transmit`](Self::poll_transmit) and
/// [`poll_event`](Self::poll_event) until they return `None`, then re-arm the one timer from
/// [`poll_timeout`](Self::poll_timeout), before the next input.** Every mutating call takes
/// `now`: the session has no clock, and keeps no time of its own between calls.
///
/// # Method kinds
/// Every public method, by kind (quinn's four):
/// - getters (no effect): [`state`](Self::state), [`is_ready`](Self::is_ready),
///   [`era`](Self::era), [`initialize_result`](Self::initialize_result),
///   [`discover_result`](Self::discover_result), [`server_info`](Self::server_info),
///   [`server_capabilities`](Self::server_capabilities),
///   [`instructions`](Self::instructions), [`protocol_version`](Self::protocol_version),
///   [`pending_requests`](Self::pending_requests), [`is_pending`](Self::is_pending),
///   [`deadline`](Self::deadline), [`wake_at`](Self::wake_at),
///   [`buffered_len`](Self::buffered_len), [`open_asks`](Self::open_asks),
///   [`ask_is_open`](Self::ask_is_open), [`roots_unasked`](Self::roots_unasked),
///   [`stats`](Self::stats), [`config`](Self::config),
///   [`retries_on_header_mismatch`](Self::retries_on_header_mismatch),
///   [`needs_listing_for`](Self::needs_listing_for)
/// - inputs, what the transport saw: [`handle_bytes`](Self::handle_bytes) (a newline-delimited
///   stream, as over stdio), [`handle_message`](Self::handle_message) and
///   [`handle_message_for`](Self::handle_message_for) (one whole message, as an HTTP body or an
///   SSE event's data), [`handle_oversized`](Self::handle_oversized) (a message the transport
///   discarded), [`handle_eof`](Self::handle_eof), [`handle_timeout`](Self::handle_timeout),
///   [`handle_authorizing`](Self::handle_authorizing) and
///   [`handle_authorized`](Self::handle_authorized) (the transport's authorization suspends a
///   request's timers), [`handle_undeliverable`](Self::handle_undeliverable),
///   [`handle_unreachable`](Self::handle_unreachable) and
///   [`handle_expired`](Self::handle_expired) (a request the transport could not deliver, a
///   server it cannot reach, a transport session that expired)
/// - commands, what the application wants: [`initialize`](Self::initialize),
///   [`send`](Self::send) (with [`list_tools`](Self::list_tools) and
///   [`call_tool`](Self::call_tool) as shorthands), [`respond`](Self::respond) (the answer to a
///   server request), [`cancel`](Self::cancel), [`abort`](Self::abort),
///   [`restart`](Self::restart), [`notify_roots_changed`](Self::notify_roots_changed),
///   [`close`](Self::close); each returns at once, a request's id identifies its later
///   [`Event::Response`]
/// - outputs, drained in this order: [`poll_transmit`](Self::poll_transmit),
///   [`poll_event`](Self::poll_event), then [`poll_timeout`](Self::poll_timeout) (or
///   [`poll_timer`](Self::poll_timer), which also says what the timer is for)
///
/// `respond`, `notify_roots_changed`, `open_asks` and `ask_is_open` are written in `asks.rs`
/// beside the server requests they are about; the opening's transitions behind `initialize`,
/// `restart` and the inputs are in `opening.rs`.
#[derive(Debug)]
pub struct Session {
    framer: LineFramer,
    core: Core,
}

/// Everything but the framer, so that frames can be handled while the framer is borrowed.
#[derive(Debug)]
struct Core {
    config: Config,
    /// Where the opening is, with the era and what the server said of itself (see `opening.rs`).
    opening: opening::Opening,
    next_id: u64,
    /// The legacy version `initialize` offers, once a -32022 named one (else the latest).
    legacy_offer: Option<&'static str>,
    modern: modern::Modern,
    asks: asks::Asks,
    pending: PendingTable,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
    /// Stdout lines that are not JSON-RPC, during the opening (see `opening.rs`).
    junk: opening::Junk,
}

impl Session {
    /// A new session; nothing is sent until [`initialize`](Self::initialize).
    pub fn new(config: Config) -> Self {
        Session {
            framer: LineFramer::new(config.frame_limit),
            core: Core {
                modern: modern::Modern::new(&config.client_info, &config.capabilities),
                asks: asks::Asks::default(),
                config,
                opening: opening::Opening::New,
                next_id: 0,
                legacy_offer: None,
                pending: PendingTable::default(),
                transmits: VecDeque::new(),
                events: VecDeque::new(),
                stats: Stats::default(),
                junk: opening::Junk::default(),
            },
        }
    }

    // ---- getters -------------------------------------------------------------------------------

    /// Where the session is in its life.
    pub fn state(&self) -> State {
        self.core.opening.state()
    }

    /// Whether the handshake completed and the session is open.
    pub fn is_ready(&self) -> bool {
        self.state() == State::Ready
    }

    /// The protocol era, once known: from the start when [`Config::era`] forces one, else once
    /// the probe settled it.
    pub fn era(&self) -> Option<Era> {
        self.core.era()
    }

    /// Whether a failed `request` with [`RequestError::HeaderMismatch`] (-32020) is to be
    /// answered by listing the tools again (their mirrored headers renew) and sending it once
    /// more: a `tools/call` over HTTP in the modern era, the only place the headers exist.
    ///
    /// > "If the server rejects a request with a HeaderMismatch error because required
    /// > Mcp-Param-* headers are missing or do not match the body, the client SHOULD call
    /// > tools/list to check for changes to the tool's inputSchema, then retry the original
    /// > request with the appropriate headers." — MCP 2026-07-28, Streamable HTTP
    pub fn retries_on_header_mismatch(&self, request: &Request) -> bool {
        self.core.era() == Some(Era::Modern)
            && self.core.config.transport == TransportKind::Http
            && request.method() == crate::CallTool::NAME
    }

    /// Whether a `tools/call` of `tool` would go out without knowing the tool's mirrored
    /// headers: in the modern era over HTTP, when no `tools/list` this session read showed
    /// `tool` (see [`MAX_REMEMBERED_TOOLS`]). A driver that makes a first call of a tool it never
    /// listed (a command line's one call) lists first, page by page until the tool shows or the
    /// pages end, so that the call carries its `Mcp-Param-*` headers; otherwise the call goes
    /// out as it is, and a -32020 leads to the re-list and retry
    /// ([`retries_on_header_mismatch`](Self::retries_on_header_mismatch)). Always `false` in
    /// the legacy era and over a stream, where there are no such headers.
    ///
    /// > "When a server's tool definition includes `x-mcp-header` annotations, conforming
    /// > clients MUST mirror the designated parameter values into HTTP headers." — MCP
    /// > 2026-07-28, Streamable HTTP § Custom Headers from Tool Parameters
    pub fn needs_listing_for(&self, tool: &str) -> bool {
        self.core.era() == Some(Era::Modern)
            && self.core.config.transport == TransportKind::Http
            && !self.core.knows_tool(tool)
    }

    /// How a call of `tool` goes when the caller asks for a task (`want_task`) or not: as a task
    /// with a server that takes task calls ([`takes_task_calls`](Self::takes_task_calls)), when
    /// the tool requires it or allows it and the caller asks ([`tasks::call_mode`]); plainly
    /// otherwise (also before the opening completed).
    ///
    /// [`tasks::call_mode`]: crate::tasks::call_mode
    pub fn task_call_mode(&self, tool: &crate::Tool, want_task: bool) -> crate::tasks::CallMode {
        if !self.takes_task_calls() {
            // No tool's object read: a server without tasks costs a call nothing more.
            return crate::tasks::CallMode::Plain;
        }
        let support = crate::tasks::TaskSupport::of(tool);
        crate::tasks::call_mode(true, support, want_task)
    }

    /// Whether a tool of this server may go as a task at all: in the 2025-11-25 era the server
    /// declared `tasks.requests.tools.call` ([`tasks::server_takes_task_calls`]); in 2026-07-28
    /// it declared the tasks extension ([`tasks::server_declares_extension`]). Without it no
    /// tool needs a look at its `execution.taskSupport`.
    ///
    /// [`tasks::server_takes_task_calls`]: crate::tasks::server_takes_task_calls
    /// [`tasks::server_declares_extension`]: crate::tasks::server_declares_extension
    pub fn takes_task_calls(&self) -> bool {
        let capabilities = self.core.opening.server().map(|i| &i.capabilities);
        match self.core.era() {
            Some(Era::Legacy) => crate::tasks::server_takes_task_calls(capabilities),
            Some(Era::Modern) => crate::tasks::server_declares_extension(capabilities),
            None => false,
        }
    }

    /// What a poll's answer `seen` means for a caller waiting on task `id`, last seen in state
    /// `before` ([`tasks::poll_step_in`]): in 2026-07-28 a finished task carries its outcome and
    /// input is answered with `tasks/update`; in 2025-11-25 both go through `tasks/result`.
    ///
    /// [`tasks::poll_step_in`]: crate::tasks::poll_step_in
    pub fn task_poll_step(
        &self,
        id: &str,
        before: &crate::tasks::TaskStatus,
        seen: &crate::tasks::Task,
    ) -> crate::tasks::PollStep {
        let inline = self.core.era() == Some(Era::Modern);
        crate::tasks::poll_step_in(inline, id, before, seen)
    }

    /// What the server said of itself at the opening, once it completed: its `initialize` answer
    /// (legacy era), or the same fields from its `server/discover` answer with the version chosen
    /// (modern era).
    pub fn initialize_result(&self) -> Option<&InitializeResult> {
        self.core.opening.server()
    }

    /// The server's `server/discover` answer (modern era), once the opening completed.
    pub fn discover_result(&self) -> Option<&crate::types::DiscoverResult> {
        self.core.modern.discover.as_ref()
    }

    /// The server's identity (`serverInfo`), once the handshake completed.
    pub fn server_info(&self) -> Option<&Implementation> {
        self.core.opening.server().map(|i| &i.server_info)
    }

    /// The server's capabilities, once the handshake completed.
    pub fn server_capabilities(&self) -> Option<&Value> {
        self.core.opening.server().map(|i| &i.capabilities)
    }

    /// The server's instructions for the model, when it gave any.
    pub fn instructions(&self) -> Option<&str> {
        self.core.opening.server()?.instructions.as_deref()
    }

    /// The negotiated protocol revision, once the handshake completed.
    pub fn protocol_version(&self) -> Option<&str> {
        self.core
            .opening
            .server()
            .map(|i| i.protocol_version.as_str())
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

    /// When the session must next be woken for request `id`: its deadline, or an earlier
    /// wake-up (its next input-required round, the probe's fallback). A driver whose callers each
    /// wait for their own request arms this and calls [`handle_timeout`](Self::handle_timeout)
    /// when it comes.
    pub fn wake_at(&self, id: RequestId) -> Option<Instant> {
        self.core.pending.get(&id)?.wake_at()
    }

    /// Bytes buffered for an incomplete line (at most the frame limit).
    pub fn buffered_len(&self) -> usize {
        self.framer.buffered_len()
    }

    /// What the program printed on its stdout during the opening, when nothing it printed was
    /// JSON-RPC: its first line that was not (quoted as [`SessionError::NotAnMcpServer`] quotes
    /// it) and how many more such lines came. `None` once it wrote anything that is JSON-RPC, or
    /// while it wrote nothing. A program that ends with this said ended as a program that is not
    /// an MCP server does (a usage message, a greeting, a web server's banner): the driver says
    /// so beside how it ended.
    ///
    /// > "The server **MUST NOT** write anything to its stdout that is not a valid MCP
    /// > message." — MCP 2025-11-25, Transports § stdio
    pub fn printed_only_junk(&self) -> Option<(&str, u64)> {
        self.core.printed_only_junk()
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
        self.core.arm_junk_verdict();
    }

    /// Feeds one whole message (an HTTP response body, or the data of one SSE event). A message
    /// over the frame limit is discarded like an oversized line.
    pub fn handle_message(&mut self, message: &[u8], now: Instant) {
        self.read_whole(message, None, now);
    }

    /// Feeds one whole message read from the response to the request that went out with wire id
    /// `wire` ([`TransmitKind::Request::wire`]): its HTTP body, or the data of an event of its
    /// stream. As [`handle_message`](Self::handle_message), and what answers no request by its
    /// own id is known to be about that one: a JSON-RPC error without an id (the server could not
    /// read the request) is that request's answer, and a message over the frame limit fails it.
    pub fn handle_message_for(&mut self, wire: RequestId, message: &[u8], now: Instant) {
        self.read_whole(message, Some(wire.0), now);
    }

    fn read_whole(&mut self, message: &[u8], exchange: Option<u64>, now: Instant) {
        if message.len() > self.framer.limit() {
            let len = message.len() as u64;
            let target = match exchange {
                Some(wire) => self.core.pending.by_wire(wire),
                None => self.core.only_pending(),
            };
            return self
                .core
                .oversized(len, self.config().frame_limit, target, now);
        }
        self.core.handle_message(message, exchange, now);
    }

    /// A transport discarded a message over its own limit (an HTTP body, an SSE event), found on
    /// the response to `request` when it knows which: the same rule as for an oversized line
    /// applies (a warning; that request, or else the only pending one, fails with
    /// [`RequestError::TooLarge`] at once). `len` is the message's length, `None` when the
    /// transport did not read it to its end: it is then reported as `limit + 1`, the least it
    /// can be.
    pub fn handle_oversized(
        &mut self,
        len: Option<u64>,
        limit: usize,
        request: Option<RequestId>,
        now: Instant,
    ) {
        let target = match request {
            Some(id) => Some(id).filter(|id| self.core.pending.contains_key(id)),
            None => self.core.only_pending(),
        };
        let len = len.unwrap_or_else(|| (limit as u64).saturating_add(1));
        self.core.oversized(len, limit, target, now);
    }

    /// Request `id` waits while its transport authorizes (over HTTP, the OAuth flow that its
    /// `401` started, or that another request's started, with a person perhaps asked to log in):
    /// the server has not taken it, so nothing of it is due meanwhile — neither its deadline nor
    /// an earlier wake-up (the era probe's fallback to `initialize`) — until
    /// [`handle_authorized`](Self::handle_authorized). The authorization is bounded on its own
    /// (each of the flow's requests, and the person's time). Does nothing when `id` is not pending
    /// or already waits.
    ///
    /// > "Implementations SHOULD establish timeouts for all sent requests, to prevent hung
    /// > connections and resource exhaustion." — MCP 2025-11-25, Lifecycle § Timeouts
    ///
    /// A person logging in is no hung connection: the timeout is the server's, and it starts
    /// again when the request can go out.
    pub fn handle_authorizing(&mut self, id: RequestId, now: Instant) {
        let _ = now; // The suspension is undone at the time given to `handle_authorized`.
        self.core.pending.suspend(id);
    }

    /// Request `id`'s transport is done authorizing it (whatever the outcome): it counts as sent
    /// again at `now`, so its deadline is `now` plus its whole timeout, and a wake-up it had comes
    /// again from `now` (the probe's fallback after [`Config::probe_timeout`]). Does nothing when
    /// it was not waiting ([`handle_authorizing`](Self::handle_authorizing)).
    pub fn handle_authorized(&mut self, id: RequestId, now: Instant) {
        let Some(wake) = self.core.pending.resume(id, now) else {
            return;
        };
        let at = match wake {
            Some(pending::Wake::Fallback) => now.checked_add(self.core.config.probe_timeout),
            Some(pending::Wake::Resend) => Some(now),
            Some(pending::Wake::JunkVerdict) | None => None,
        };
        if let (Some(at), Some(why)) = (at, wake) {
            self.core.pending.set_wake(id, Some((at, why)));
        }
    }

    /// The stream ended: a final message without its newline is still delivered, then every pending
    /// request fails with [`RequestError::Closed`] and the session closes.
    pub fn handle_eof(&mut self, now: Instant) {
        let core = &mut self.core;
        self.framer.finish(|frame| core.handle_frame(frame, now));
        self.core.shut(Some(SessionError::Closed));
    }

    /// Fails every request whose deadline is at or before `now`
    /// ([`RequestError::Timeout`]), and queues `notifications/cancelled` for each; then does what
    /// is due before a deadline (the probe's fallback, the next input-required round).
    pub fn handle_timeout(&mut self, now: Instant) {
        for id in self.core.pending.due(now) {
            let Some(p) = self.core.pending.get(&id) else {
                continue;
            };
            let (reason, error) = match pending::total_reached(p) {
                Some(max) => (
                    format!("exceeded its maximum total time of {}", fmt_duration(max)),
                    RequestError::TotalTimeout(max),
                ),
                None => {
                    let after = p.timeout.unwrap_or_default();
                    let reason = format!("timed out after {}", fmt_duration(after));
                    (reason, RequestError::Timeout(after))
                }
            };
            self.core.abandon(id, reason, error, now);
        }
        for (id, why) in self.core.pending.due_wakes(now) {
            self.core.pending.set_wake(id, None);
            match why {
                pending::Wake::Fallback => self.core.probe_fallback(id, now),
                pending::Wake::Resend => self.core.resend(id),
                pending::Wake::JunkVerdict => self.core.junk_verdict(id),
            }
        }
        self.core.arm_junk_verdict();
    }

    // ---- commands ------------------------------------------------------------------------------

    /// Starts the handshake: queues `initialize` offering the latest legacy revision.
    ///
    /// > "The initialization phase MUST be the first interaction between client and server."
    /// > — MCP 2025-11-25, Lifecycle § Initialization
    ///
    /// This is the opening in every era ([`Config::era`]): the legacy
    /// handshake, `server/discover` in the modern era, or the probe that finds out. The returned
    /// id is the opening's first request; its outcome is [`Event::Ready`] or
    /// [`Event::Failed`], not a response.
    pub fn initialize(&mut self, now: Instant) -> Result<RequestId, UsageError> {
        let id = self.core.open(now)?;
        // The program may have printed before it was sent anything.
        self.core.arm_junk_verdict();
        Ok(id)
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
        self.core.renew(expired, now)
    }

    /// Sends a request. Fails with [`UsageError::NotReady`] before the handshake completed.
    ///
    /// While the session is being renewed ([`restart`](Self::restart)), the request is accepted
    /// and waits, pending but not transmitted (its timeout runs), until the new session is ready.
    pub fn send(&mut self, request: Request, now: Instant) -> Result<RequestId, UsageError> {
        match self.state() {
            State::Ready => {
                let mut request = request;
                let checked = self
                    .core
                    .fit_task_request(&mut request)
                    .and_then(|()| self.core.check_offered(&request))
                    .and_then(|()| self.core.check_modern_call(&request));
                if let Err(e) = checked {
                    // Refused before anything is sent: its outcome is its only event.
                    let id = RequestId(self.core.fresh_id());
                    self.core
                        .events
                        .push_back(Event::Response { id, result: Err(e) });
                    return Ok(id);
                }
                if request.method == tasks::UPDATE {
                    return Ok(self.core.enqueue_update(request, now));
                }
                Ok(self.core.enqueue(request, now, true))
            }
            // Renewing: the request waits for the new session.
            State::Initializing if self.core.opening.server().is_some() => {
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
    pub fn cancel(&mut self, id: RequestId, reason: &str, now: Instant) -> Result<(), UsageError> {
        if self.core.opening.init_request() == Some(id) {
            return Err(UsageError::CannotCancelInitialize);
        }
        if !self.core.pending.contains_key(&id) {
            return Err(UsageError::UnknownRequest(id));
        }
        self.core.abandon(
            id,
            reason.to_owned(),
            RequestError::Cancelled(reason.to_owned()),
            now,
        );
        Ok(())
    }

    /// The transport could not deliver request `id` (an HTTP error status, a refused connection):
    /// stop waiting for it without telling the server, which never saw it. It ends with
    /// [`RequestError::Closed`] (for `initialize`, the session fails). Returns whether it was pending.
    pub fn abort(&mut self, id: RequestId, now: Instant) -> bool {
        if !self.core.pending.contains_key(&id) {
            return false;
        }
        self.core.complete(id, Err(RequestError::Closed), now);
        true
    }

    /// The transport could not deliver request `id` (an HTTP error status, a refused connection,
    /// a full queue): the session stops waiting for it without telling the server, which never
    /// saw it, and says who the failure hits. No event comes for `id` itself: the driver gives
    /// its waiter the transport's own error. When `id` is the `initialize` of a handshake (first
    /// or renewal), the session fails ([`Event::Failed`]) and what is pending ends with
    /// [`RequestError::Closed`] events, which the driver reports with the same error.
    pub fn handle_undeliverable(&mut self, id: RequestId, now: Instant) -> Casualties {
        if self.core.pending.remove(&id).is_none() {
            return Casualties::default();
        }
        self.core.undeliverable(id, now)
    }

    /// Like [`handle_undeliverable`](Self::handle_undeliverable), for a failure that no other
    /// request would escape (the server's authorization was refused or could not be obtained; no
    /// connection to it could be made): a probe that meets it is no sign of a legacy server, so
    /// the opening fails instead of sending `initialize` into the same refusal. The fallback is
    /// for what a server says, which such a probe never reached:
    ///
    /// > "The server returns any other error, or does not respond within a reasonable timeout:
    /// > the server is legacy." — MCP 2026-07-28, stdio § Backward Compatibility
    pub fn handle_unreachable(&mut self, id: RequestId, now: Instant) -> Casualties {
        match self.core.probe_unreachable(id) {
            Some(hit) => hit,
            None => self.handle_undeliverable(id, now),
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
                self.close(now);
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
    pub fn close(&mut self, now: Instant) {
        let _ = now; // Nothing of closing depends on the time (yet): the session has no linger.
        self.core.shut(None);
    }

    // ---- outputs -------------------------------------------------------------------------------

    /// The next message to send, in order.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.core.transmits.pop_front()
    }

    /// The next event, in order.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.core.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called: the earliest deadline of a
    /// pending request.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.poll_timer().map(|(at, _)| at)
    }

    /// The next timer and what it is for (see [`poll_timeout`](Self::poll_timeout)).
    #[must_use]
    pub fn poll_timer(&self) -> Option<(Instant, TimerFor)> {
        self.core.pending.next_timer()
    }
}

impl Core {
    /// A new handle (and first wire id): handles and wire ids come from one counter, so that an
    /// answer to an old wire id is told late by its number alone.
    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Whether requests go out in the modern era's form: once it is chosen, and for the
    /// `server/discover` of the opening.
    fn modern_for(&self, id: RequestId) -> bool {
        self.era() == Some(Era::Modern) || self.opening.probe_request() == Some(id)
    }

    /// Adds a pending request; `transmit`: queue it for sending now (else it waits, unsent, for
    /// the renewed session).
    fn enqueue(&mut self, request: Request, now: Instant, transmit: bool) -> RequestId {
        let id = RequestId(self.fresh_id());
        let modern = self.era() == Some(Era::Modern);
        self.enqueue_as(id, request, now, transmit, modern)
    }

    fn enqueue_as(
        &mut self,
        id: RequestId,
        mut request: Request,
        now: Instant,
        transmit: bool,
        modern: bool,
    ) -> RequestId {
        if request.progress.is_some() {
            Core::with_progress_token(request.params.json_mut(), id);
        }
        let timeout = match request.timeout {
            Timeout::Default => self.config.default_timeout,
            Timeout::After(d) => Some(d),
            Timeout::Never => None,
        };
        if transmit {
            let (payload, headers) = self.encode(id, &request.method, &request.params, modern);
            self.transmits.push_back(Transmit {
                payload,
                kind: TransmitKind::Request {
                    id,
                    wire: id,
                    method: request.method.clone(),
                },
                headers,
                modern,
            });
        }
        // The params are kept, not the message: a request sent again (a renewed session, a
        // modern retry) is written anew from them, and a call does not pay for a copy of each
        // message it sends.
        let mut pending = Pending::new(
            request.method,
            request.params,
            request.decoder,
            timeout,
            id.0,
            pending::first_deadline(now, timeout, request.progress),
        );
        pending.unsent = !transmit;
        pending.progress = request.progress;
        pending.started = Some(now);
        self.pending.insert(id, pending);
        id
    }

    /// Request `id` in the form of its era (`modern` or legacy), with the HTTP headers that
    /// mirror it (modern era over HTTP; none otherwise).
    fn encode(
        &self,
        id: RequestId,
        method: &str,
        params: &Params,
        modern: bool,
    ) -> (
        Vec<u8>,
        Vec<(crate::http::HeaderText, crate::http::HeaderText)>,
    ) {
        if modern {
            self.modern
                .encode(id.0, method, params, self.config.transport)
        } else {
            let mut payload = Vec::with_capacity(128);
            jsonrpc::request_head(&mut payload, id.0, method);
            if params.is_some() {
                payload.extend_from_slice(b",\"params\":");
                params.write(&mut payload);
            }
            payload.push(b'}');
            (payload, Vec::new())
        }
    }

    fn notify(&mut self, method: &'static str, params: Option<Value>) {
        self.transmits.push_back(Transmit {
            payload: jsonrpc::encode_notification(method, params.as_ref()),
            kind: TransmitKind::Notification {
                method: method.into(),
            },
            headers: Vec::new(),
            modern: self.era() == Some(Era::Modern),
        });
    }

    /// Stops waiting for `id`: fails it with `error` and, unless it is `initialize`, tells the server.
    fn abandon(&mut self, id: RequestId, reason: String, error: RequestError, now: Instant) {
        let Some(error) = self.opening_gave_up(id, error, now) else {
            return;
        };
        let Some(pending) = self.pending.remove(&id) else {
            return;
        };
        self.drop_asks_of(id);
        // A request the server has not seen (waiting for a renewed session, or between two
        // input-required rounds) needs no cancelling.
        if let (false, false, Some(wire)) = (
            self.state() == State::Closed,
            pending.unsent,
            pending.wire(),
        ) {
            if self.era() == Some(Era::Modern) && self.config.transport == TransportKind::Http {
                // Closing the request's response stream is the cancellation (2026-07-28).
                self.transmits.push_back(Transmit {
                    payload: Vec::new(),
                    kind: TransmitKind::Abort { id },
                    headers: Vec::new(),
                    modern: true,
                });
            } else {
                // The server knows the request by the id it went out with.
                let params = json!({ "requestId": wire, "reason": reason });
                self.transmits.push_back(Transmit {
                    payload: jsonrpc::encode_notification("notifications/cancelled", Some(&params)),
                    kind: TransmitKind::Cancellation { id },
                    headers: Vec::new(),
                    modern: self.era() == Some(Era::Modern),
                });
            }
        }
        self.events.push_back(Event::Response {
            id,
            result: Err(error),
        });
    }

    /// Where the session is in its life.
    fn state(&self) -> State {
        self.opening.state()
    }

    /// Request `id` got its outcome.
    fn complete(&mut self, id: RequestId, mut outcome: Result<Reply, RequestError>, now: Instant) {
        if !self.pending.contains_key(&id) {
            return;
        }
        self.report_ignored_hints(id, &outcome);
        if let (Some(Era::Modern), TransportKind::Http, Ok(Reply::Tools(page))) =
            (self.era(), self.config.transport, &mut outcome)
        {
            let first = self.is_first_tools_page(id);
            self.screen_tools(first, page);
        }
        self.pending.remove(&id);
        self.drop_asks_of(id);
        if self.opening.init_request() == Some(id) {
            return self.initialize_answered(outcome, now);
        }
        if self.opening.probe_request() == Some(id) {
            return self.discover_answered(outcome, now);
        }
        self.events.push_back(Event::Response {
            id,
            result: outcome,
        });
    }
}

impl Core {
    /// Reports the cache hints of a result that were ignored ([`Warning::CacheHintIgnored`]),
    /// before its outcome.
    fn report_ignored_hints(&mut self, id: RequestId, outcome: &Result<Reply, RequestError>) {
        let ignored = match outcome {
            Ok(Reply::Tools(page)) => page.ignored_hints(),
            Ok(Reply::Discover(d)) => d.ignored_hints(),
            Ok(Reply::Resources(page)) => page.ignored_hints(),
            Ok(Reply::ResourceTemplates(page)) => page.ignored_hints(),
            Ok(Reply::Prompts(page)) => page.ignored_hints(),
            _ => return,
        };
        if ignored.is_empty() {
            return;
        }
        let method = self
            .pending
            .get(&id)
            .map(|p| p.method.to_string())
            .unwrap_or_default();
        for hint in ignored {
            self.events
                .push_back(Event::Warning(Warning::CacheHintIgnored {
                    method: method.clone(),
                    field: hint.field,
                    reason: hint.reason.clone(),
                }));
        }
    }
}

fn fmt_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
