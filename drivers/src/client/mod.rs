//! The async client: a [`Session`] driven over any [`Transport`]. Who drives the connection is
//! in the [crate docs](crate#who-drives-the-connection); the loop holds no protocol decision.
//!
//! # Calls
//!
//! Several tools share one client; calls may run concurrently, each with its own timeout
//! (`client.request(Request::call_tool(name, args).timeout(d))`, see [`Request::timeout`]).
//! Dropping a call's future cancels it (`notifications/cancelled` goes to the server) and leaves
//! the client usable. Typed requests decode their answers as declared
//! (`client.request_as::<ListTools>(Request::list_tools(None))`, [`Client::request_as`]); any
//! other method goes through `client.request(Request::new(method, params))`
//! ([`Client::request`]), answered as raw JSON.
//!
//! # What the server did wrong
//!
//! What the server sent that the session tolerated (junk on stdout, unknown ids, oversized
//! messages) is kept: [`Client::recent_warnings`] (the newest [`RECENT_WARNINGS`];
//! [`Client::stats`] counts all), and [`ClientConfig::on_warning`] hands each to a callback. Text
//! that is not valid JSON text — bytes that are not UTF-8 (a tool returning Latin-1), a lone
//! surrogate escape such as `\ud800` (JavaScript and Python servers emit them) — is read with
//! U+FFFD in place of the bad part rather than dropped ([`Warning::Repaired`], `stats().repaired`;
//! see [`mcp_proto::text`]). A JSON-RPC error with `"id": null` (the server could not read a
//! request) fails the request it is about at once with the server's code and message — over HTTP
//! the one whose response carried it, over stdio the one pending request — and with several
//! pending on stdio it is only reported ([`Warning::ErrorWithoutId`]).

mod deliver;
mod drive;
mod features;
mod skills;
mod tasks;

pub use tasks::{TaskHandle, TaskStart};

use drive::{idle_reader, CancelOnDrop, Slot, Timers};

use crate::handlers::Handlers;
use crate::sync::lock;
use crate::transport::{Inbound, Transport};
use crate::Error;
use mcp_proto::subscriptions::{End, Listener};
use mcp_proto::{
    AskId, CallTool, CallToolResult, Casualties, Config, Event, Implementation, InitializeResult,
    ListKind, ListTools, ListToolsResult, LogMessage, Method, Pagination, Progress, Reply, Request,
    RequestError, RequestId, RpcError, ServerRequest, Session, Stats, Tool, TraceContext,
    UsageError, Warning,
};
use serde_json::Value;
use smol::channel::{self, Receiver, Sender};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How long a lone waiting caller looks for its answer before it sleeps, by default
/// ([`ClientConfig::busy_poll`]): the 50 µs Linux suggests for its own busy polling of sockets
/// (`net.core.busy_poll`), longer than a server on another CPU takes to answer a quick request
/// on most machines, short enough to be spent on one poll of a future.
pub const BUSY_POLL: Duration = Duration::from_micros(50);

/// The longest [`ClientConfig::busy_poll`] taken: 1 ms.
pub const MAX_BUSY_POLL: Duration = Duration::from_millis(1);

/// How often the idle reader looks at the connection while a caller waits (or callers waited
/// recently): it then takes what arrived and fires overdue timeouts, so that a caller whose future
/// is kept but not polled delays nobody by more than this.
pub const WATCHDOG_PERIOD: Duration = Duration::from_millis(100);

/// How often the idle reader looks while more than one caller waits. The transport's readiness
/// wakes one waiter, the one polled last, to read for all (waking each made a crowd of callers
/// rebuild their waits about once a call): if that is a future kept without being polled, the
/// others' answers wait for the next look (the HTTP transport's own watchdog looks as often
/// while more than one task waits on it, and every 100 ms while one or none does: a second
/// waiter cuts that wait short). The period is chosen as each look's wait begins: one begun while a single caller
/// waited runs its [`WATCHDOG_PERIOD`] first.
pub const CROWD_WATCHDOG_PERIOD: Duration = Duration::from_millis(10);

/// The most [`Transport::try_recv`] items one reader handles before it lets others at the lock.
const RECV_BATCH: usize = 32;

/// How many of the server's tolerated misbehaviours [`Client::recent_warnings`] keeps (the newest).
pub const RECENT_WARNINGS: usize = 32;

/// A function told of every [`Warning`] (what the server sent that the session tolerated: junk on
/// stdout, unknown ids, oversized messages, …). It is called outside the client's lock, on the
/// task that read the message; a panic in it is caught and ignored.
#[derive(Clone)]
pub struct WarningCallback(pub Arc<dyn Fn(&Warning) + Send + Sync>);

impl std::fmt::Debug for WarningCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WarningCallback")
    }
}

/// Gives the W3C trace context of the caller's current span (see
/// [`ClientConfig::trace_context`]).
#[derive(Clone)]
pub struct TraceContextProvider(pub Arc<dyn Fn() -> Option<TraceContext> + Send + Sync>);

impl std::fmt::Debug for TraceContextProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceContextProvider")
    }
}

/// A function told of every log message the server sends (`notifications/message`), outside the
/// client's lock; a panic in it is caught and ignored.
#[derive(Clone)]
pub struct LogCallback(pub Arc<dyn Fn(&LogMessage) + Send + Sync>);

impl std::fmt::Debug for LogCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogCallback")
    }
}

/// A function told when the server says one of its lists changed, outside the client's lock.
#[derive(Clone)]
pub struct ListChangedCallback(pub Arc<dyn Fn(ListKind) + Send + Sync>);

impl std::fmt::Debug for ListChangedCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListChangedCallback")
    }
}

/// A function told when a resource the client subscribed to changed
/// (`notifications/resources/updated`, with its URI), outside the client's lock; a panic in it is
/// caught and ignored.
#[derive(Clone)]
pub struct ResourceUpdatedCallback(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for ResourceUpdatedCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResourceUpdatedCallback")
    }
}

/// A function told of each progress notification of one request, in order, until its answer.
type ProgressSink = Arc<dyn Fn(&Progress) + Send + Sync>;

/// The most progress notifications of one request that wait for its caller to take them (its
/// callback runs in the caller); past it newer ones are dropped until the caller catches up.
pub const MAX_QUEUED_PROGRESS: usize = 4096;

/// The most callback deliveries waiting to be made outside the lock; past it newer log and
/// list-change deliveries are dropped (warnings are bounded on their own).
const MAX_DEFERRED: usize = 4096;

/// What a request's waiter is handed, in order: the request's progress (when its caller asked
/// to be told), then its answer.
enum ToWaiter {
    Progress(Progress),
    Answer(Result<Reply, Error>),
}

/// Who waits for a request, and what waits for them: the entry is the answer's slot. Whoever
/// reads the answer puts it here and wakes the caller, who takes it (and the entry) out; a
/// caller that finds no entry was closed out. No channel per request: a channel cost each call
/// its allocations and its listener's.
struct Waiter {
    /// The answer, once read.
    answer: Option<Result<Reply, Error>>,
    /// The request's progress not yet taken by its caller (at most [`MAX_QUEUED_PROGRESS`]),
    /// when its caller asked to be told (`None`: it did not).
    progress: Option<VecDeque<Progress>>,
    /// The caller's task, while it waits in the reactor.
    waker: Option<std::task::Waker>,
}

impl Waiter {
    fn new(progress: bool) -> Waiter {
        Waiter {
            answer: None,
            progress: progress.then(VecDeque::new),
            waker: None,
        }
    }

    /// Puts the answer in the slot (the first one stays) and wakes the caller. Returns whether
    /// the slot was empty (the caller has one more answer to take: [`ConnState::ready`]).
    fn answer(&mut self, result: Result<Reply, Error>) -> bool {
        let first = self.answer.is_none();
        self.answer.get_or_insert(result);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
        first
    }
}

/// What the client does once it has let go of its lock: the application's code never runs
/// under it.
enum Deferred {
    Warning(Warning),
    Log(LogMessage),
    ListChanged(ListKind),
    ResourceUpdated(String),
    /// Start the handler for a server request.
    Ask(AskId, ServerRequest),
}

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The session's settings: client identity, message size limit, default request timeout.
    pub session: Config,
    /// The most `tools/list` pages [`Client::list_tools`] follows before failing (default 1000);
    /// the same cap holds for the other listings (resources, resource templates, prompts).
    pub max_tool_pages: usize,
    /// The most bytes of tool definitions (as JSON) [`Client::list_tools`] keeps across all pages
    /// before failing (default 64 MiB); the same cap holds for the other listings.
    pub max_tool_bytes: usize,
    /// Whether a background task reads while no caller waits (default true): the server's pings
    /// and requests are then answered, its notifications noted and its exit noticed between calls.
    /// It runs on smol's global executor, and also keeps the session's timers (one timer for
    /// all requests, re-armed only when it fired or an earlier one came). Without it, what the
    /// server sends between calls is handled at the next call, and each waiting caller arms a
    /// timer of its own (a call whose future is not polled then times out when it is polled).
    pub idle_reader: bool,
    /// How long a caller that waits alone (and whose connection's calls of late came one at a
    /// time: no wait among the last 64 began with company) may look for its answer again and
    /// again before it
    /// sleeps in the reactor (default [`BUSY_POLL`]; zero: never), when the transport says such
    /// looks are cheap ([`Transport::busy_poll`]: stdio) and this process may run on more than
    /// one CPU. A server on another CPU that answers within it saves the caller a sleep and a
    /// wake-up from another CPU, which cost more than the looks (on a virtual machine, many
    /// times more). Answers that keep not coming within it make the client look less often
    /// (after n misses in a row, only every 2^(n-1)-th wait looks, up to every 64th): a slow server
    /// costs at most this much CPU every 64 calls. Taken as at most [`MAX_BUSY_POLL`] (a poll of
    /// a future should not hold its thread longer), and never past the request's deadline.
    pub busy_poll: Duration,
    /// Told of every warning as it happens (besides [`Client::recent_warnings`]).
    pub on_warning: Option<WarningCallback>,
    /// What the application answers for the server: elicitation, sampling, roots. The client
    /// declares exactly these capabilities (overriding `session.capabilities`).
    pub handlers: Handlers,
    /// Told of every log message the server sends.
    pub on_log: Option<LogCallback>,
    /// Told when the server says a list changed (tools, resources, prompts). In the 2026-07-28
    /// era, setting it makes the client keep a `subscriptions/listen` open for the lists the
    /// server declared `listChanged` for (without it, none is opened).
    pub on_list_changed: Option<ListChangedCallback>,
    /// Told when a subscribed resource changed ([`Client::subscribe_resource`]).
    pub on_resource_updated: Option<ResourceUpdatedCallback>,
    /// The most bytes of contents (text, and blobs as base64) [`Client::read_resource`] takes
    /// from one read before failing with [`Error::Resource`] (default 32 MiB; the message
    /// itself is capped first by `session.frame_limit`).
    pub max_read_bytes: usize,
    /// The server's name in this application (its key in a configuration): the `mcp.server`
    /// field of the `tracing` feature's spans and events.
    pub label: Option<String>,
    /// The eras servers spoke, for [`connect_stdio`](crate::connect::connect_stdio) and
    /// [`connect_http`](crate::connect::connect_http) to open them in next time (see
    /// [`EraMemory`](mcp_proto::server_set::EraMemory)). Shared by the clones of this
    /// configuration; a new configuration starts with an empty memory.
    pub era_memory: Arc<Mutex<mcp_proto::server_set::EraMemory>>,
    /// Asked, as each request is sent, for the W3C trace context of the caller's span: its
    /// `traceparent` and `tracestate` then go in the request's `params._meta`
    /// ([`Request::with_trace`], which says when a caller's own keys win), so that the server's
    /// spans join the caller's trace. It runs in the calling task, inside the request's span
    /// when the `tracing` feature makes one. `None` (the default without the `opentelemetry`
    /// feature): nothing is asked, and a request costs nothing more. With that feature the
    /// default is `otel::provider()`, which reads the current span's OpenTelemetry context.
    ///
    /// The requests the client makes itself (the opening, `subscriptions/listen`, `ping`) and
    /// its notifications go without.
    pub trace_context: Option<TraceContextProvider>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            session: Config {
                client_info: Implementation::new("mcp-client", env!("CARGO_PKG_VERSION")),
                ..Config::default()
            },
            max_tool_pages: 1000,
            max_tool_bytes: 64 * 1024 * 1024,
            idle_reader: true,
            busy_poll: BUSY_POLL,
            on_warning: None,
            handlers: Handlers::default(),
            on_log: None,
            on_list_changed: None,
            on_resource_updated: None,
            max_read_bytes: 32 * 1024 * 1024,
            label: None,
            era_memory: Arc::default(),
            #[cfg(feature = "opentelemetry")]
            trace_context: Some(crate::otel::provider()),
            #[cfg(not(feature = "opentelemetry"))]
            trace_context: None,
        }
    }
}

/// An MCP client over any [`Transport`] (stdio, HTTP, or one of the application's own), held as
/// a `dyn Transport`: one type whichever carries the messages. A `Client` is a handle: its
/// clones share one connection, cheaply (a reference count), so give one to each task and tool
/// ([`as_tools`] takes `&Client`) with no `Arc` around it. Requests may be in flight
/// concurrently, and each has its own timeout, which fires on time whoever else waits. The
/// connection ends with [`close`](Self::close), or once the last clone is dropped.
///
/// Dropping a request's future gives up on it: the server is sent `notifications/cancelled` and
/// the client stays usable.
///
/// [`as_tools`]: crate::as_tools
pub struct Client {
    shared: Arc<Connection>,
    max_tool_pages: usize,
    max_tool_bytes: usize,
    max_read_bytes: usize,
    /// [`ClientConfig::trace_context`].
    trace_context: Option<TraceContextProvider>,
}

/// What the clones of a [`Client`] share. The transport is its last field, unsized: a client
/// made over a concrete transport is coerced to this one type with its transport in the same
/// allocation (no box, no pointer more to follow than a generic client had); the calls to it go
/// through its vtable.
struct Connection<T: ?Sized = dyn Transport> {
    state: Mutex<ConnState>,
    /// Callers waiting for an answer now.
    callers: AtomicUsize,
    /// Counts every wait that began, so the idle reader can tell recent activity.
    waits_begun: AtomicU64,
    /// Set while the idle reader waits on the transport itself; a caller that comes then wakes it
    /// so that it steps back.
    idle_listening: AtomicBool,
    /// Wakes the idle reader: a caller came, the client was dropped, or a timer earlier than
    /// the one it keeps armed was set ([`ConnState::timer_armed`]).
    idle_wake: Arc<event_listener::Event>,
    /// An idle reader runs ([`ClientConfig::idle_reader`]): it keeps the session's next timer
    /// armed, so callers arm none of their own.
    idle_reader: bool,
    /// The client was dropped: the idle reader ends.
    dropped: AtomicBool,
    /// Whether, and how long, a lone waiting caller looks for its answer before it sleeps.
    busy: drive::BusyPoll,
    /// Itself, for the handler tasks, which answer through it when they finish.
    me: Weak<Connection>,
    /// The [`Client`]s over it: the last one dropped ends the idle reader.
    handles: AtomicUsize,
    transport: T,
}

struct ConnState {
    session: Session,
    /// Hashed, not a B-tree: with many callers waiting, a B-tree moved a node's other waiters
    /// on every insert and removal.
    waiters: HashMap<RequestId, Waiter, mcp_proto::jsonrpc::IdHash>,
    /// The `initialize` request, while the first handshake is under way.
    init_id: Option<RequestId>,
    /// Everyone waiting for the server's first `roots/list` to be answered
    /// ([`Client::roots_listed`]); dropped when the session closes.
    roots_waiters: Vec<Sender<()>>,
    /// Everyone waiting for the first handshake.
    init_waiters: Vec<Sender<Result<(), Error>>>,
    /// Why the connection ended, when the transport said.
    close_reason: Option<Error>,
    /// The server ended while the era probe waited for its answer.
    ended_on_probe: bool,
    /// The newest warnings, at most [`RECENT_WARNINGS`].
    recent_warnings: VecDeque<Warning>,
    /// What to do once the lock is let go (callbacks, handler starts), in order.
    deferred: VecDeque<Deferred>,
    /// Warnings in `deferred` (bounded like the recent list).
    deferred_warnings: usize,
    on_warning: Option<WarningCallback>,
    on_log: Option<LogCallback>,
    on_list_changed: Option<ListChangedCallback>,
    on_resource_updated: Option<ResourceUpdatedCallback>,
    /// How many `notifications/resources/updated` came.
    resources_updated: u64,
    handlers: Handlers,
    /// The handlers running, by the server request they answer; dropping one cancels it.
    running: HashMap<AskId, smol::Task<()>>,
    /// How many times each list was announced changed: tools, resources, prompts.
    lists_changed: [u64; 3],
    /// [`ClientConfig::label`].
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    label: Option<String>,
    /// With an idle reader, the instant its timer is armed for (`None`: none armed), and its
    /// wake-up: a flush that leaves the session's next timer earlier than that wakes it to
    /// re-arm. A later timer needs nothing (the armed one fires first, and the idle reader then
    /// arms the next): back-to-back calls, each with a deadline a little later than the last,
    /// arm no timer at all.
    timer_armed: Option<Instant>,
    timer_wake: Option<Arc<event_listener::Event>>,
    /// The tasks a caller waits on ([`TaskHandle::wait`]), each with its waiters and the
    /// wake-up a status notification naming it sends (see `tasks.rs`).
    task_waits: tasks::TaskWaits,
    /// Answers in their slots that their callers have not taken yet: that many callers are about
    /// to run (woken, or already due to run), and a request sent meanwhile may wait for theirs,
    /// to go out in one write with them ([`Transport::send_batched`]).
    ready: usize,
    /// The transport may hold messages kept back for a batch: the caller that sent them writes
    /// them ([`Connection::release`]) unless a later send did.
    held: bool,
    /// The modern era's `subscriptions/listen`: what the application wants to hear of, and the
    /// listen that carries it (nothing is sent while nothing is wanted).
    listener: Listener,
    /// Something may change the listen: [`ConnState::flush`] polls the listener.
    listen_dirty: bool,
    /// The timer of the next re-listen after a drop, and its instant.
    listen_timer: Option<(Instant, smol::Task<()>)>,
    /// Those waiting for a listen to be acknowledged (a modern-era subscription).
    listen_waiters: Vec<(RequestId, Sender<Result<(), Error>>)>,
    /// The connection, for the re-listen timer.
    me: Weak<Connection>,
}

impl Client {
    /// A client over `transport` with default settings. Call [`initialize`](Self::initialize)
    /// first. [`connect_stdio`](crate::connect_stdio) and [`connect_http`](crate::connect_http)
    /// do both, and more.
    pub fn new(transport: impl Transport) -> Self {
        Self::with_config(transport, ClientConfig::default())
    }

    /// A client with these settings. To keep a handle on the concrete transport (for what only
    /// it tells), pass an `Arc` of it and keep a clone.
    pub fn with_config<T: Transport>(transport: T, mut config: ClientConfig) -> Self {
        config.session.transport = transport.kind();
        transport.set_frame_limit(config.session.frame_limit);
        config.session.capabilities = config.handlers.capabilities();
        let idle_wake = Arc::new(event_listener::Event::new());
        let has_list_callback = config.on_list_changed.is_some();
        let transport_busy_poll = transport.busy_poll();
        let shared: Arc<Connection<T>> = Arc::new_cyclic(|me: &Weak<Connection<T>>| Connection {
            me: me.clone(),
            handles: AtomicUsize::new(1),
            transport,
            state: Mutex::new(ConnState {
                session: Session::new(config.session),
                waiters: HashMap::default(),
                init_id: None,
                roots_waiters: Vec::new(),
                init_waiters: Vec::new(),
                close_reason: None,
                ended_on_probe: false,
                recent_warnings: VecDeque::new(),
                deferred: VecDeque::new(),
                deferred_warnings: 0,
                on_warning: config.on_warning,
                on_log: config.on_log,
                on_list_changed: config.on_list_changed,
                on_resource_updated: config.on_resource_updated,
                resources_updated: 0,
                handlers: config.handlers,
                running: HashMap::new(),
                lists_changed: [0; 3],
                label: config.label,
                timer_armed: None,
                timer_wake: config.idle_reader.then(|| idle_wake.clone()),
                task_waits: tasks::TaskWaits::default(),
                ready: 0,
                held: false,
                listener: {
                    let mut listener = Listener::new();
                    for kind in [ListKind::Tools, ListKind::Resources, ListKind::Prompts] {
                        listener.want_list(kind, has_list_callback);
                    }
                    listener
                },
                listen_dirty: false,
                listen_timer: None,
                listen_waiters: Vec::new(),
                me: me.clone(),
            }),
            callers: AtomicUsize::new(0),
            waits_begun: AtomicU64::new(0),
            idle_listening: AtomicBool::new(false),
            idle_wake,
            idle_reader: config.idle_reader,
            dropped: AtomicBool::new(false),
            busy: drive::BusyPoll::new(if transport_busy_poll {
                config.busy_poll
            } else {
                Duration::ZERO
            }),
        });
        let shared: Arc<Connection> = shared;
        if config.idle_reader {
            smol::spawn(idle_reader(shared.clone())).detach();
        }
        Client {
            shared,
            max_tool_pages: config.max_tool_pages,
            max_tool_bytes: config.max_tool_bytes,
            max_read_bytes: config.max_read_bytes,
            trace_context: config.trace_context,
        }
    }

    /// The transport: what every transport tells ([`Transport::pid`],
    /// [`Transport::stderr_tail`], [`Transport::session_id`], …).
    pub fn transport(&self) -> &dyn Transport {
        &self.shared.transport
    }

    /// Performs the handshake. Must come before any other request. Calling it again while the
    /// handshake is under way waits for it (so a dropped `initialize()` future loses nothing);
    /// once it completed, it returns the server's answer again.
    pub async fn initialize(&self) -> Result<InitializeResult, Error> {
        #[cfg(feature = "tracing")]
        if crate::trace::enabled() {
            // Opened already (`connect_*` did it): no second span for the same opening.
            if let Some(init) = self.initialize_result() {
                return Ok(init);
            }
            let label = self.lock().label.clone();
            let span = crate::trace::opening_span(label.as_deref(), self.shared.transport.kind());
            let started = Instant::now();
            let result =
                tracing::Instrument::instrument(self.initialize_untraced(), span.clone()).await;
            crate::trace::opened(&span, &result, self.era(), started);
            return result;
        }
        self.initialize_untraced().await
    }

    async fn initialize_untraced(&self) -> Result<InitializeResult, Error> {
        let (rx, deadline) = {
            let mut st = self.lock();
            if let Some(init) = st.session.initialize_result() {
                return Ok(init.clone());
            }
            if st.init_id.is_none() {
                match st.session.initialize(Instant::now()) {
                    Ok(id) => st.init_id = Some(id),
                    Err(UsageError::Closed) => return Err(st.closed_error()),
                    Err(e) => return Err(e.into()),
                }
            }
            let (tx, rx) = channel::bounded(1);
            st.init_waiters.push(tx);
            st.flush(&self.shared.transport);
            (rx, st.session.poll_timeout())
        };
        // The opening has timers of its own (the probe's fallback, then `initialize`'s deadline):
        // the waiter follows the session's next one.
        self.shared
            .wait(Box::pin(rx), deadline, Timers::Session, false, Some)
            .await?;
        self.initialize_result().ok_or(Error::Closed)
    }

    /// The server's `initialize` answer, once the handshake completed.
    pub fn initialize_result(&self) -> Option<InitializeResult> {
        self.lock().session.initialize_result().cloned()
    }

    /// The server's identity, once the handshake completed.
    pub fn server_info(&self) -> Option<Implementation> {
        self.lock().session.server_info().cloned()
    }

    /// Counters of what the session handled on its own (pings answered, messages ignored, …).
    pub fn stats(&self) -> Stats {
        self.lock().session.stats()
    }

    /// Whether the server ended while the era probe (`server/discover`) waited for its answer: a
    /// legacy server that exits on an unknown request (or one that failed to start). Start it
    /// again with [`EraChoice::Legacy`](mcp_proto::EraChoice::Legacy) when it read the probe
    /// ([`Transport::input_read`] is not `Some(0)`: see
    /// [`EraMemory::relaunch`](mcp_proto::server_set::EraMemory::relaunch));
    /// [`connect_stdio`](crate::connect_stdio) does so by itself.
    pub fn ended_on_probe(&self) -> bool {
        self.lock().ended_on_probe
    }

    /// The protocol era, once the opening settled it.
    pub fn era(&self) -> Option<mcp_proto::Era> {
        self.lock().session.era()
    }

    /// The server's `server/discover` answer (modern era).
    pub fn discover_result(&self) -> Option<mcp_proto::DiscoverResult> {
        self.lock().session.discover_result().cloned()
    }

    /// How many times the server announced that this list changed.
    pub fn lists_changed(&self, kind: ListKind) -> u64 {
        self.lock().lists_changed[list_slot(kind)]
    }

    /// Tells the server the roots changed (`notifications/roots/list_changed`), when the roots
    /// handler was registered with `list_changed` (legacy era). Returns whether it was sent.
    pub fn roots_changed(&self) -> bool {
        let mut st = self.lock();
        let sent = st.session.notify_roots_changed(Instant::now());
        st.flush(&self.shared.transport);
        sent
    }

    /// Waits, for at most `within`, until the server has asked for the client's roots
    /// (`roots/list`) and their answer has been sent; returns whether it has. It returns at once
    /// when there is nothing to wait for ([`Session::roots_unasked`]): no roots handler
    /// ([`Handlers::roots`](crate::Handlers::roots)), a session not open in the legacy era (a
    /// modern server asks within a call), or the roots answered already; and when the session
    /// closes.
    ///
    /// For a caller whose first call depends on the roots: a server that works from them
    /// (server-filesystem started without directories) asks right after the handshake, and a
    /// call sent at once reaches it before it has them. Call it after
    /// [`initialize`](Self::initialize); `within` bounds what a server that never asks costs.
    /// Over stdio the answer is written before any later request, so the server reads it
    /// first; over HTTP it is a POST of its own, which a later request's POST may overtake.
    /// When the server has applied the roots is its own affair (server-filesystem does it
    /// asynchronously, a few milliseconds after reading them). Nothing of this touches a
    /// call's path.
    ///
    /// Over a stream it also sends a `ping`: a server that asks as it is initialized writes its
    /// `roots/list` before its answer, so an answer with none before it ends the wait at once
    /// (`false`) instead of after `within`
    /// ([`Session::roots_unasked_after_ping`](mcp_proto::Session::roots_unasked_after_ping)).
    pub async fn roots_listed(&self, within: Duration) -> bool {
        let (rx, ping) = {
            let mut st = self.lock();
            if !st.session.roots_unasked() {
                return st.session.stats().roots_answered > 0;
            }
            let (tx, rx) = channel::bounded(1);
            st.roots_waiters.retain(|w| !w.is_closed());
            st.roots_waiters.push(tx);
            (rx, st.session.roots_unasked_after_ping())
        };
        let answered = self
            .shared
            .wait(Box::pin(rx), None, Timers::Session, false, |()| {
                Some(Ok(()))
            });
        let pinged = async {
            if ping
                && self.request(Request::new("ping", None)).await.is_ok()
                && self.lock().session.roots_unasked_after_ping()
            {
                return Ok(());
            }
            // Asked (its answer is awaited), or the ping failed: the bound decides.
            std::future::pending().await
        };
        let bound = async {
            smol::Timer::after(within).await;
            Err(Error::Timeout(within))
        };
        let _ = smol::future::or(answered, smol::future::or(pinged, bound)).await;
        self.lock().session.stats().roots_answered > 0
    }

    /// Sends a request that asks for progress ([`Request::with_progress`] is applied) and waits
    /// for its answer; `on_progress` is told of each progress notification, in order, until then:
    /// it runs in this caller (outside the client's lock), whoever read the notification, and
    /// every notification that came before the answer has been told when this returns. At most
    /// [`MAX_QUEUED_PROGRESS`] wait for it (a slow callback); past that newer ones are dropped.
    pub async fn request_with_progress(
        &self,
        request: Request,
        on_progress: impl Fn(&Progress) + Send + Sync + 'static,
    ) -> Result<Reply, Error> {
        self.request_inner(request.with_progress(), Some(Arc::new(on_progress)))
            .await
    }

    /// How many times the server announced that its tool list changed.
    pub fn tools_changed(&self) -> u64 {
        self.lock().lists_changed[list_slot(ListKind::Tools)]
    }

    /// The newest warnings (at most [`RECENT_WARNINGS`], oldest first): what the server sent that
    /// the session tolerated. [`stats`](Self::stats) counts all of them.
    pub fn recent_warnings(&self) -> Vec<Warning> {
        self.lock().recent_warnings.iter().cloned().collect()
    }

    /// Sends any request and waits for its answer (or its timeout, set on the [`Request`]).
    pub async fn request(&self, request: Request) -> Result<Reply, Error> {
        self.request_inner(request, None).await
    }

    async fn request_inner(
        &self,
        request: Request,
        progress: Option<ProgressSink>,
    ) -> Result<Reply, Error> {
        #[cfg(feature = "tracing")]
        if crate::trace::enabled() {
            let label = self.lock().label.clone();
            let span = crate::trace::request_span(
                &request,
                label.as_deref(),
                self.shared.transport.kind(),
            );
            let started = Instant::now();
            let result = tracing::Instrument::instrument(
                self.request_untraced(request, progress),
                span.clone(),
            )
            .await;
            crate::trace::finish(&span, &result, started);
            return result;
        }
        self.request_untraced(request, progress).await
    }

    async fn request_untraced(
        &self,
        request: Request,
        progress: Option<ProgressSink>,
    ) -> Result<Reply, Error> {
        // Asked here, in the caller's task and inside the request's span (when there is one).
        let request = match self.trace_context.as_ref().and_then(|p| (p.0)()) {
            Some(trace) => request.with_trace(trace),
            None => request,
        };
        let (id, rx, deadline, held) = {
            let mut st = self.lock();
            let id = match st.session.send(request, Instant::now()) {
                Ok(id) => id,
                // Once the peer is gone, say why rather than "closed".
                Err(UsageError::Closed) => return Err(st.closed_error()),
                Err(e) => return Err(e.into()),
            };
            // Progress before the answer waits in the slot too (bounded by
            // `MAX_QUEUED_PROGRESS`).
            st.waiters.insert(id, Waiter::new(progress.is_some()));
            st.flush_with(&self.shared.transport, true);
            (id, Slot(id), st.session.wake_at(id), st.held)
        };
        #[cfg(feature = "tracing")]
        if crate::trace::enabled() {
            tracing::Span::current().record("jsonrpc.request.id", id.0);
        }
        let mut guard = CancelOnDrop {
            shared: &self.shared,
            id,
            armed: true,
        };
        // The caller runs its own progress callbacks, as they come and all before the answer.
        let take = |item: ToWaiter| match item {
            ToWaiter::Progress(p) => {
                if let Some(sink) = &progress {
                    quietly(&|| sink(&p));
                }
                None
            }
            ToWaiter::Answer(result) => Some(result),
        };
        let result = self
            .shared
            .wait(rx, deadline, Timers::Request(id), held, take)
            .await;
        guard.armed = false;
        result
    }

    /// Sends a typed request (built with [`Request::of::<M>`](Request::of) or one of its
    /// shorthands) and waits for its result, decoded as `M` says.
    pub async fn request_as<M: Method>(&self, request: Request) -> Result<M::Result, Error> {
        M::from_reply(self.request(request).await?).map_err(|reply| {
            Error::Request(RequestError::InvalidResult {
                method: M::NAME.into(),
                reason: format!("the request was not built as {}: {reply:?}", M::NAME),
            })
        })
    }

    /// One page of tools.
    pub async fn list_tools_page(&self, cursor: Option<&str>) -> Result<ListToolsResult, Error> {
        self.request_as::<ListTools>(Request::list_tools(cursor))
            .await
    }

    /// All tools, following `nextCursor` across pages.
    ///
    /// > "Cursors are opaque" — a server that repeats a cursor, sends more than
    /// > [`ClientConfig::max_tool_pages`] pages or more than [`ClientConfig::max_tool_bytes`] of
    /// > tools ends the listing with [`Error::Pagination`].
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let mut tools = Vec::new();
        let mut guard = Pagination::new(self.max_tool_pages).max_bytes(self.max_tool_bytes);
        let mut cursor: Option<String> = None;
        loop {
            guard.admit().map_err(pagination)?;
            let page = self.list_tools_page(cursor.as_deref()).await?;
            let bytes = page.tools.iter().map(|t| t.raw().get().len()).sum();
            let next = guard.follow(page.next_cursor, bytes).map_err(pagination)?;
            tools.extend(page.tools);
            match next {
                None => return Ok(tools),
                next => cursor = next,
            }
        }
    }

    /// Makes sure the first call of tool `name` carries its mirrored headers: when the session
    /// does not know them ([`Session::needs_listing_for`]: modern era over HTTP, and no listing
    /// showed the tool), lists the tools page by page until it shows or the pages end — one
    /// round trip for a tool on the first page. Does nothing otherwise. For a caller about to
    /// call a tool it never listed (a command line's one call); a caller that lists first needs
    /// it not.
    pub async fn learn_tool(&self, name: &str) -> Result<(), Error> {
        let mut guard = Pagination::new(self.max_tool_pages).max_bytes(self.max_tool_bytes);
        let mut cursor: Option<String> = None;
        while self.lock().session.needs_listing_for(name) {
            guard.admit().map_err(pagination)?;
            let page = self.list_tools_page(cursor.as_deref()).await?;
            let bytes = page.tools.iter().map(|t| t.raw().get().len()).sum();
            match guard.follow(page.next_cursor, bytes).map_err(pagination)? {
                None => break,
                next => cursor = next,
            }
        }
        Ok(())
    }

    /// Calls a tool with the model's raw arguments (`null` becomes `{}`). A result with
    /// `isError: true` is still `Ok`: see [`CallToolResult::is_error`] and [`CallToolResult::text`].
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call(Request::call_tool(name, arguments)).await
    }

    /// Calls a tool with a request built by [`Request::call_tool`], for its own timeout. Any other
    /// request is refused with [`UsageError::NotAToolCall`] before anything is sent.
    pub async fn call(&self, request: Request) -> Result<CallToolResult, Error> {
        self.call_inner(request, None).await
    }

    /// [`call`](Self::call), asking for progress: `on_progress` is told of each progress
    /// notification, in order, until the result, as
    /// [`request_with_progress`](Self::request_with_progress) says: in this caller, and all
    /// before this returns.
    pub async fn call_with_progress(
        &self,
        request: Request,
        on_progress: impl Fn(&Progress) + Send + Sync + 'static,
    ) -> Result<CallToolResult, Error> {
        self.call_inner(request.with_progress(), Some(Arc::new(on_progress)))
            .await
    }

    async fn call_inner(
        &self,
        request: Request,
        progress: Option<ProgressSink>,
    ) -> Result<CallToolResult, Error> {
        if request.method() != CallTool::NAME {
            return Err(UsageError::NotAToolCall(request.method().to_owned()).into());
        }
        let invalid = |reason: String| {
            Error::Request(RequestError::InvalidResult {
                method: CallTool::NAME.into(),
                reason,
            })
        };
        // The session says whether a -32020 is retried (`Session::retries_on_header_mismatch`):
        // only then is a copy kept for that one retry.
        let again = self
            .lock()
            .session
            .retries_on_header_mismatch(&request)
            .then(|| request.clone());
        let reply = match (self.request_inner(request, progress.clone()).await, again) {
            (Err(Error::Request(RequestError::HeaderMismatch(_))), Some(again)) => {
                // The listing renews the tools' mirrored headers in the session.
                self.list_tools().await?;
                self.request_inner(again, progress).await?
            }
            (reply, _) => reply?,
        };
        match CallTool::from_reply(reply) {
            Ok(result) => Ok(result),
            // A `tools/call` built by hand (`Request::new`) is answered as raw JSON.
            Err(Reply::Raw(value)) => {
                serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
            }
            Err(other) => Err(invalid(format!("decoded as {other:?}"))),
        }
    }

    /// Why the session ended, once it has (the server exited — with its status and stderr's
    /// tail —, the connection closed, [`close`](Self::close) was called); `None` while it is open
    /// or opening.
    pub fn closed(&self) -> Option<Error> {
        let st = self.lock();
        (st.session.state() == mcp_proto::State::Closed)
            .then(|| st.close_reason.clone().unwrap_or(Error::Closed))
    }

    /// Closes the session and the transport (for a child process: ends it and reaps it). Pending
    /// requests fail with [`Error::Closed`].
    pub async fn close(&self) -> Result<(), Error> {
        {
            let mut st = self.lock();
            let now = Instant::now();
            let st = &mut *st;
            st.listener.close(&mut st.session, now);
            st.listen_timer = None;
            st.session.close(now);
            st.flush(&self.shared.transport);
        }
        self.shared.idle_wake.notify(usize::MAX);
        self.shared.transport.close().await
    }

    fn lock(&self) -> MutexGuard<'_, ConnState> {
        lock(&self.shared.state)
    }
}

impl Clone for Client {
    /// Another handle on the same connection.
    fn clone(&self) -> Self {
        self.shared.handles.fetch_add(1, Ordering::Relaxed);
        Client {
            shared: self.shared.clone(),
            max_tool_pages: self.max_tool_pages,
            max_tool_bytes: self.max_tool_bytes,
            max_read_bytes: self.max_read_bytes,
            trace_context: self.trace_context.clone(),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // The last handle: nobody can call any more, the idle reader ends.
        if self.shared.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.dropped.store(true, Ordering::SeqCst);
            self.shared.idle_wake.notify(usize::MAX);
        }
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("transport", &self.shared.transport.kind())
            .finish_non_exhaustive()
    }
}

fn pagination(e: mcp_proto::PaginationError) -> Error {
    Error::Pagination(e)
}

/// Where a list's change count is kept in `ConnState::lists_changed`.
fn list_slot(kind: ListKind) -> usize {
    match kind {
        ListKind::Tools => 0,
        ListKind::Resources => 1,
        _ => 2,
    }
}

fn internal(message: String) -> RpcError {
    RpcError {
        code: mcp_proto::jsonrpc::INTERNAL_ERROR,
        message,
        data: None,
    }
}

/// Runs the application's code, catching a panic in it.
fn quietly(f: &dyn Fn()) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
}
