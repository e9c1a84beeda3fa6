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

use crate::handlers::Handlers;
use crate::sync::lock;
use crate::transport::{Inbound, Transport};
use crate::Error;
use mcp_proto::{
    AskId, CallTool, CallToolResult, Casualties, Config, Event, Implementation, InitializeResult,
    ListKind, ListTools, ListToolsResult, LogMessage, Method, Pagination, Progress, Reply, Request,
    RequestError, RequestId, RpcError, ServerRequest, Session, Stats, Tool, UsageError, Warning,
};
use serde_json::Value;
use smol::channel::{self, Receiver, Sender};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How often the idle reader looks at the connection while callers wait (or waited recently): it
/// then takes what arrived and fires overdue timeouts, so that a caller whose future is kept but not
/// polled delays nobody by more than this.
pub const WATCHDOG_PERIOD: Duration = Duration::from_millis(100);

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
    /// Start the handler for a server request.
    Ask(AskId, ServerRequest),
}

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The session's settings: client identity, message size limit, default request timeout.
    pub session: Config,
    /// The most `tools/list` pages [`Client::list_tools`] follows before failing (default 1000).
    pub max_tool_pages: usize,
    /// The most bytes of tool definitions (as JSON) [`Client::list_tools`] keeps across all pages
    /// before failing (default 64 MiB).
    pub max_tool_bytes: usize,
    /// Whether a background task reads while no caller waits (default true): the server's pings
    /// and requests are then answered, its notifications noted and its exit noticed between calls.
    /// It runs on smol's global executor, and also keeps the session's timers (one timer for
    /// all requests, re-armed only when it fired or an earlier one came). Without it, what the
    /// server sends between calls is handled at the next call, and each waiting caller arms a
    /// timer of its own (a call whose future is not polled then times out when it is polled).
    pub idle_reader: bool,
    /// Told of every warning as it happens (besides [`Client::recent_warnings`]).
    pub on_warning: Option<WarningCallback>,
    /// What the application answers for the server: elicitation, sampling, roots. The client
    /// declares exactly these capabilities (overriding `session.capabilities`).
    pub handlers: Handlers,
    /// Told of every log message the server sends.
    pub on_log: Option<LogCallback>,
    /// Told when the server says a list changed (tools, resources, prompts).
    pub on_list_changed: Option<ListChangedCallback>,
    /// The server's name in this application (its key in a configuration): the `mcp.server`
    /// field of the `tracing` feature's spans and events.
    pub label: Option<String>,
    /// The eras servers spoke, for [`connect_stdio`](crate::connect::connect_stdio) and
    /// [`connect_http`](crate::connect::connect_http) to open them in next time (see
    /// [`EraMemory`](mcp_proto::server_set::EraMemory)). Shared by the clones of this
    /// configuration; a new configuration starts with an empty memory.
    pub era_memory: Arc<Mutex<mcp_proto::server_set::EraMemory>>,
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
            on_warning: None,
            handlers: Handlers::default(),
            on_log: None,
            on_list_changed: None,
            label: None,
            era_memory: Arc::default(),
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
    /// Counts the times someone took what the transport received ([`Connection::pump`]): a caller
    /// woken by the transport's readiness after someone else took what came since it began to
    /// wait leaves the reading to them (the transport's readiness is registered anew when it
    /// waits again, and says so at once if more came), rather than every woken caller reading
    /// the drained transport again — with many callers waiting, each readiness wakes them all.
    pumps: AtomicU64,
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
    /// Itself, for the handler tasks, which answer through it when they finish.
    me: Weak<Connection>,
    /// The [`Client`]s over it: the last one dropped ends the idle reader.
    handles: AtomicUsize,
    transport: T,
}

struct ConnState {
    session: Session,
    waiters: BTreeMap<RequestId, Waiter>,
    /// The `initialize` request, while the first handshake is under way.
    init_id: Option<RequestId>,
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
    /// Answers in their slots that their callers have not taken yet: that many callers are about
    /// to run (woken, or already due to run), and a request sent meanwhile may wait for theirs,
    /// to go out in one write with them ([`Transport::send_batched`]).
    ready: usize,
    /// The transport may hold messages kept back for a batch: the caller that sent them writes
    /// them ([`Connection::release`]) unless a later send did.
    held: bool,
}

impl ConnState {
    fn closed_error(&self) -> Error {
        self.close_reason.clone().unwrap_or(Error::Closed)
    }

    fn finish_init(&mut self, outcome: Result<(), Error>) {
        self.init_id = None;
        for w in self.init_waiters.drain(..) {
            let _ = w.try_send(outcome.clone());
        }
    }

    /// Feeds one received item into the session.
    fn handle(&mut self, inbound: Inbound, now: Instant) {
        match inbound {
            Inbound::Bytes(bytes) => self.session.handle_bytes(&bytes, now),
            Inbound::Message(message) => self.session.handle_message(&message, now),
            Inbound::MessageFor { wire, message } => {
                self.session.handle_message_for(wire, &message, now)
            }
            Inbound::Oversized { len, limit, id } => {
                self.session.handle_oversized(len, limit, id, now)
            }
            Inbound::Failed { id, error } => {
                let hit = self.session.handle_undeliverable(id, now);
                self.report(hit, error);
            }
            Inbound::Unreachable { id, error } => {
                let hit = self.session.handle_unreachable(id, now);
                self.report(hit, error);
            }
            Inbound::Authorizing { id } => self.session.handle_authorizing(id, now),
            Inbound::Authorized { id } => self.session.handle_authorized(id, now),
            Inbound::Undelivered {
                what,
                request,
                error,
            } => {
                self.warn(Warning::Undelivered {
                    what,
                    reason: error.chain(),
                });
                if let Some(id) = request {
                    let hit = self.session.handle_undeliverable(id, now);
                    self.report(hit, error);
                }
            }
            Inbound::SessionExpired { id, error } => {
                let hit = self.session.handle_expired(id, now);
                self.report(hit, error);
            }
            Inbound::Closed(reason) => {
                if self.close_reason.is_none() {
                    self.close_reason = reason;
                }
                self.session.handle_eof(now);
            }
        }
    }

    /// Hands a transport's error to whom the session says it hits.
    fn report(&mut self, hit: Casualties, error: Error) {
        if hit.session {
            self.close_reason.get_or_insert(error.clone());
        }
        if let Some(id) = hit.request {
            if let Some(w) = self.waiters.get_mut(&id) {
                if w.answer(Err(error.clone())) {
                    self.ready += 1;
                }
            }
            if self.init_id == Some(id) {
                // The handshake cannot complete: say why the transport failed.
                self.finish_init(Err(error));
            }
        }
    }

    /// Keeps a warning among the recent ones and tells the application of it.
    fn warn(&mut self, w: Warning) {
        let told = self.on_warning.is_some() || cfg!(feature = "tracing");
        if told && self.deferred_warnings < RECENT_WARNINGS {
            self.deferred_warnings += 1;
            self.defer(Deferred::Warning(w.clone()));
        }
        if self.recent_warnings.len() == RECENT_WARNINGS {
            self.recent_warnings.pop_front();
        }
        self.recent_warnings.push_back(w);
    }

    /// Sends what the session queued and hands its events to whoever waits for them.
    fn flush(&mut self, transport: &dyn Transport) {
        self.flush_with(transport, false);
    }

    /// [`flush`](Self::flush); with `batch`, while other callers are about to run
    /// ([`ConnState::ready`]), what is sent may wait for what they send, to go out together (the
    /// caller then writes it itself if nobody did by its next turn: [`Connection::wait`]).
    fn flush_with(&mut self, transport: &dyn Transport, batch: bool) {
        while let Some(t) = self.session.poll_transmit() {
            let request = match &t.kind {
                mcp_proto::TransmitKind::Request { id, .. } => Some(*id),
                _ => None,
            };
            let sent = if batch && self.ready > 0 {
                transport.send_batched(t).map(|kept| self.held |= kept)
            } else {
                transport.send(t)
            };
            // A request refused because the transport's queue is full fails at once, with the
            // transport's reason (not through the inbound queue, which may be full too). Any
            // other failure means the transport is failing: `try_recv` says why (a server's exit
            // status and stderr say more than the broken pipe).
            match (sent, request) {
                (Err(error), Some(id)) if is_refusal(&error) => {
                    let hit = self.session.handle_undeliverable(id, Instant::now());
                    self.report(hit, error);
                }
                _ => {}
            }
        }
        while let Some(event) = self.session.poll_event() {
            match event {
                Event::Ready => self.finish_init(Ok(())),
                Event::Failed(e) => {
                    let error = match (e, &self.close_reason) {
                        (mcp_proto::SessionError::Closed, Some(reason)) => reason.clone(),
                        (
                            mcp_proto::SessionError::Initialize(RequestError::Closed),
                            Some(reason),
                        ) => reason.clone(),
                        // The server ended on the era probe: what the transport knows (its exit
                        // status and stderr) says more than the probe; `ended_on_probe` keeps
                        // the advice to start it again in the legacy era.
                        (mcp_proto::SessionError::EndedOnProbe, reason) => {
                            self.ended_on_probe = true;
                            reason
                                .clone()
                                .unwrap_or(Error::Session(mcp_proto::SessionError::EndedOnProbe))
                        }
                        (e, _) => Error::Session(e),
                    };
                    // Requests kept across a failed restart end with the same cause.
                    self.close_reason.get_or_insert(error.clone());
                    self.finish_init(Err(error));
                }
                Event::Response { id, result } if self.waiters.contains_key(&id) => {
                    let result = result.map_err(|e| match e {
                        RequestError::Closed => self.closed_error(),
                        e => Error::from(e),
                    });
                    // After the progress handed to it: its caller runs their callbacks before
                    // it returns.
                    if let Some(w) = self.waiters.get_mut(&id) {
                        if w.answer(result) {
                            self.ready += 1;
                        }
                    }
                }
                Event::ListChanged(kind) => {
                    self.lists_changed[list_slot(kind)] += 1;
                    if self.on_list_changed.is_some() {
                        self.defer(Deferred::ListChanged(kind));
                    }
                }
                Event::ServerRequest { ask, request } => self.defer(Deferred::Ask(ask, request)),
                // Dropping the task cancels the handler.
                Event::ServerRequestCancelled { ask } => drop(self.running.remove(&ask)),
                // To the request's own caller, in order and before its answer, whoever read it:
                // its callback runs there, in no other caller's wait.
                Event::Progress { id, progress } => {
                    if let Some(w) = self.waiters.get_mut(&id) {
                        if let Some(queue) = &mut w.progress {
                            if queue.len() < MAX_QUEUED_PROGRESS {
                                queue.push_back(progress);
                                if let Some(waker) = w.waker.take() {
                                    waker.wake();
                                }
                            }
                        }
                    }
                }
                Event::Log(message) if self.on_log.is_some() || cfg!(feature = "tracing") => {
                    self.defer(Deferred::Log(message))
                }
                Event::Closed => {
                    let error = self.closed_error();
                    for w in self.waiters.values_mut() {
                        if w.answer(Err(error.clone())) {
                            self.ready += 1;
                        }
                    }
                    self.finish_init(Err(error));
                }
                // Tolerated peer misbehaviour: counted in the session's stats, kept, reported.
                Event::Warning(w) => self.warn(w),
                // An answer nobody waits for any more (its caller stopped waiting), a log message
                // nobody is told of, and what this client does not act on: resource updates (it
                // subscribes to none) and the end of a URL-mode elicitation.
                Event::Response { .. }
                | Event::Log(_)
                | Event::ResourceUpdated { .. }
                | Event::ElicitationComplete { .. } => {}
                // An event a later core adds (the enum is non-exhaustive): nothing to do until
                // this driver learns of it.
                _ => {}
            }
        }
        if let Some(wake) = &self.timer_wake {
            let next = self.session.poll_timeout();
            if next.is_some_and(|at| earlier(at, self.timer_armed)) {
                self.timer_armed = next;
                wake.notify(1);
            }
        }
    }
}

/// Whether a transport refused a message because its outbound queue is full
/// ([`Error::QueueFull`], see [`Transport::send`]), rather than failing for good.
fn is_refusal(error: &Error) -> bool {
    matches!(error, Error::QueueFull { .. })
}

impl ConnState {
    /// Queues something for after the lock; server requests always get in, the rest only up to
    /// [`MAX_DEFERRED`].
    fn defer(&mut self, item: Deferred) {
        if self.deferred.len() >= MAX_DEFERRED && !matches!(item, Deferred::Ask(..)) {
            return;
        }
        self.deferred.push_back(item);
    }
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
        let shared: Arc<Connection<T>> = Arc::new_cyclic(|me: &Weak<Connection<T>>| Connection {
            me: me.clone(),
            handles: AtomicUsize::new(1),
            transport,
            state: Mutex::new(ConnState {
                session: Session::new(config.session),
                waiters: BTreeMap::new(),
                init_id: None,
                init_waiters: Vec::new(),
                close_reason: None,
                ended_on_probe: false,
                recent_warnings: VecDeque::new(),
                deferred: VecDeque::new(),
                deferred_warnings: 0,
                on_warning: config.on_warning,
                on_log: config.on_log,
                on_list_changed: config.on_list_changed,
                handlers: config.handlers,
                running: HashMap::new(),
                lists_changed: [0; 3],
                label: config.label,
                timer_armed: None,
                timer_wake: config.idle_reader.then(|| idle_wake.clone()),
                ready: 0,
                held: false,
            }),
            callers: AtomicUsize::new(0),
            waits_begun: AtomicU64::new(0),
            pumps: AtomicU64::new(0),
            idle_listening: AtomicBool::new(false),
            idle_wake,
            idle_reader: config.idle_reader,
            dropped: AtomicBool::new(false),
        });
        let shared: Arc<Connection> = shared;
        if config.idle_reader {
            smol::spawn(idle_reader(shared.clone())).detach();
        }
        Client {
            shared,
            max_tool_pages: config.max_tool_pages,
            max_tool_bytes: config.max_tool_bytes,
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
    /// again with [`EraChoice::Legacy`](mcp_proto::EraChoice::Legacy);
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
            st.session.close(Instant::now());
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

/// Counts a caller in [`Connection::wait`] for as long as it waits.
struct CallerPresent<'a>(&'a Connection);

impl Drop for CallerPresent<'_> {
    fn drop(&mut self) {
        self.0.callers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A caller's messages kept back for a batch ([`ConnState::held`]): written when the caller is
/// done waiting for others to add theirs ([`release`](Self::release)), or when it stops waiting
/// at all (its future dropped), whichever comes first.
struct Held<'a> {
    shared: &'a Connection,
    armed: bool,
}

impl Held<'_> {
    fn release(&mut self) {
        self.armed = false;
        self.shared.release();
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.release();
        }
    }
}

/// Cancels request `id` if the future waiting for it is dropped before its answer.
struct CancelOnDrop<'a> {
    shared: &'a Connection,
    id: RequestId,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut st = lock(&self.shared.state);
        if st
            .waiters
            .remove(&self.id)
            .is_some_and(|w| w.answer.is_some())
        {
            debug_assert!(st.ready > 0);
            st.ready = st.ready.saturating_sub(1);
        }
        if st.session.is_pending(self.id) {
            let _ = st
                .session
                .cancel(self.id, "the client stopped waiting", Instant::now());
            st.flush(&self.shared.transport);
        }
    }
}

/// Which timers a waiting caller follows.
#[derive(Clone, Copy)]
enum Timers {
    /// Its own request's: the deadline, or an earlier wake-up (the next input-required round).
    Request(RequestId),
    /// The session's next timer, whatever it is for (the opening's).
    Session,
}

impl Timers {
    fn next(self, session: &Session) -> Option<Instant> {
        match self {
            Timers::Request(id) => session.wake_at(id),
            Timers::Session => session.poll_timeout(),
        }
    }
}

/// Where a waiting caller's answer comes: its request's slot in the waiters table ([`Slot`]), or
/// a channel (the handshake's, which any number of callers wait for).
trait Mailbox {
    /// What comes: the answer, or something to handle on the way (a request's progress).
    type Item;
    /// Takes what came (`Ready(None)`: the caller was closed out, nothing will come). With a
    /// context, a caller that finds nothing is woken when something comes.
    fn poll_take(
        &mut self,
        state: &Mutex<ConnState>,
        cx: Option<&mut Context<'_>>,
    ) -> Poll<Option<Self::Item>>;

    /// The request whose slot this is (`None`: not a slot).
    fn slot(&self) -> Option<RequestId> {
        None
    }
}

/// A request's answer slot: its entry in [`ConnState::waiters`].
struct Slot(RequestId);

impl Mailbox for Slot {
    type Item = ToWaiter;

    fn slot(&self) -> Option<RequestId> {
        Some(self.0)
    }

    fn poll_take(
        &mut self,
        state: &Mutex<ConnState>,
        cx: Option<&mut Context<'_>>,
    ) -> Poll<Option<ToWaiter>> {
        let mut st = lock(state);
        let Some(w) = st.waiters.get_mut(&self.0) else {
            return Poll::Ready(None);
        };
        // Progress first: it came before the answer.
        if let Some(p) = w.progress.as_mut().and_then(VecDeque::pop_front) {
            return Poll::Ready(Some(ToWaiter::Progress(p)));
        }
        if w.answer.is_some() {
            debug_assert!(st.ready > 0);
            st.ready = st.ready.saturating_sub(1);
            let answer = st.waiters.remove(&self.0).and_then(|w| w.answer);
            return Poll::Ready(answer.map(ToWaiter::Answer));
        }
        if let Some(cx) = cx {
            if !w
                .waker
                .as_ref()
                .is_some_and(|old| old.will_wake(cx.waker()))
            {
                w.waker = Some(cx.waker().clone());
            }
        }
        Poll::Pending
    }
}

/// The handshake's channel (pinned: its receiver keeps its listener inside).
impl<M> Mailbox for std::pin::Pin<Box<Receiver<M>>> {
    type Item = M;

    fn poll_take(&mut self, _: &Mutex<ConnState>, cx: Option<&mut Context<'_>>) -> Poll<Option<M>> {
        match cx {
            Some(cx) => smol::stream::Stream::poll_next(self.as_mut(), cx),
            None => match self.try_recv() {
                Ok(item) => Poll::Ready(Some(item)),
                Err(channel::TryRecvError::Closed) => Poll::Ready(None),
                Err(channel::TryRecvError::Empty) => Poll::Pending,
            },
        }
    }
}

/// What woke a waiting caller.
enum Wake<M> {
    /// What came for it (`None`: it was closed out).
    Answer(Option<M>),
    Readable,
    Deadline,
}

impl Connection {
    /// Waits for the answer `rx` will carry, reading for everyone meanwhile. `take` opens what
    /// `rx` carries: the answer, or something for this caller to handle on the way (`None`: its
    /// request's progress, whose callback it ran).
    ///
    /// It first looks at the transport without waiting: a server that answers at once (on one
    /// core the server runs as soon as the request is written, and has answered when the writer
    /// runs again) costs no wait in the reactor at all. Then it waits on its answer, the
    /// transport's readiness and — only without an idle reader, which keeps the session's timers
    /// for everyone — on its own timer (`deadline`, then following the session's next timer as
    /// `timers` names, re-armed only when that comes earlier or the armed one passed).
    async fn wait<B: Mailbox, R>(
        &self,
        mut mailbox: B,
        deadline: Option<Instant>,
        timers: Timers,
        held: bool,
        mut take: impl FnMut(B::Item) -> Option<Result<R, Error>>,
    ) -> Result<R, Error> {
        self.callers.fetch_add(1, Ordering::SeqCst);
        self.waits_begun.fetch_add(1, Ordering::Relaxed);
        let _present = CallerPresent(self);
        // What this caller's send kept back for a batch: written by whoever sends next, else by
        // this caller after one turn of its executor, or when it stops waiting.
        let mut held = Held {
            shared: self,
            armed: held,
        };
        if self.idle_listening.load(Ordering::SeqCst) {
            // The idle reader waits on the transport too: make it step back, so that this
            // caller's answer does not cost a hand-off between threads.
            self.idle_wake.notify(usize::MAX);
        }
        let mut next = deadline;
        // This caller's own timer (without an idle reader), armed when it first has to wait.
        let mut timer = LazyTimer::new();
        let mut looked = false;
        let mut yielded = false;
        loop {
            while let Poll::Ready(item) = mailbox.poll_take(&self.state, None) {
                let Some(item) = item else {
                    return Err(Error::Closed);
                };
                if let Some(result) = take(item) {
                    return result;
                }
            }
            if held.armed {
                // The callers woken with their answers run first, and send theirs.
                smol::future::yield_now().await;
                held.release();
                continue;
            }
            if !looked {
                looked = true;
                next = self.pump(timers, None);
                continue;
            }
            if !yielded && one_cpu() {
                // Nothing yet, and the server shares this one CPU: let it run (it was woken by
                // the request) and look again, rather than pay a wait in the reactor.
                yielded = true;
                std::thread::yield_now();
                next = self.pump(timers, None);
                continue;
            }
            if !self.idle_reader {
                timer.follow(next, Instant::now());
            }
            let pumped = self.pumps.load(Ordering::Acquire);
            let answer = async {
                Wake::Answer(
                    std::future::poll_fn(|cx| mailbox.poll_take(&self.state, Some(cx))).await,
                )
            };
            let readable = async {
                self.transport.ready().await;
                Wake::Readable
            };
            let fired = async {
                timer.fired().await;
                Wake::Deadline
            };
            match smol::future::or(answer, smol::future::or(readable, fired)).await {
                Wake::Answer(None) => return Err(Error::Closed),
                Wake::Answer(Some(item)) => {
                    if let Some(result) = take(item) {
                        return result;
                    }
                }
                Wake::Readable => {
                    if self.pumps.load(Ordering::Acquire) == pumped {
                        // This caller looks at its slot next: an answer put there by this pump
                        // must not wake it (a wake-up of the running task costs its executor a
                        // needless turn of the reactor before the next wait).
                        next = self.pump(timers, mailbox.slot());
                    }
                }
                Wake::Deadline => {
                    // A timeout's answer is in `rx` now; a wake-up's work is done.
                    next = self.expire(timers);
                }
            }
        }
    }

    /// Writes what the transport kept back for a batch, unless a later send already did.
    fn release(&self) {
        let mut st = lock(&self.state);
        if st.held {
            st.held = false;
            self.transport.flush();
        }
    }

    /// Takes what the transport received, feeds it to the session, sends what the session queued
    /// and hands out the answers. Never waits. Returns the next timer `timers` names. `running`
    /// is the slot of the caller that pumps, which looks at it next: what this puts there does
    /// not wake it.
    fn pump(&self, timers: Timers, running: Option<RequestId>) -> Option<Instant> {
        let mut st = lock(&self.state);
        if let Some(w) = running.and_then(|id| st.waiters.get_mut(&id)) {
            w.waker = None;
        }
        self.pumps.fetch_add(1, Ordering::Release);
        let now = Instant::now();
        for _ in 0..RECV_BATCH {
            let Some(inbound) = self.transport.try_recv() else {
                break;
            };
            let closed = matches!(inbound, Inbound::Closed(_));
            st.handle(inbound, now);
            if closed {
                break;
            }
        }
        st.flush(&self.transport);
        let next = timers.next(&st.session);
        // What was read may call for the application's code: run it outside the lock.
        if !st.deferred.is_empty() {
            self.deliver(st);
        }
        next
    }

    /// Runs what the lock held back, in order: callbacks (a panic in one is caught) and the
    /// start of handlers for server requests.
    fn deliver(&self, mut st: MutexGuard<'_, ConnState>) {
        let items = std::mem::take(&mut st.deferred);
        st.deferred_warnings = 0;
        let on_warning = st.on_warning.clone();
        let on_log = st.on_log.clone();
        let on_list_changed = st.on_list_changed.clone();
        let handlers = st.handlers.clone();
        #[cfg(feature = "tracing")]
        let label = st.label.clone();
        drop(st);
        for item in items {
            match item {
                Deferred::Warning(w) => {
                    #[cfg(feature = "tracing")]
                    crate::trace::warning(label.as_deref(), &w);
                    if let Some(WarningCallback(cb)) = &on_warning {
                        quietly(&|| cb(&w));
                    }
                }
                Deferred::Log(m) => {
                    #[cfg(feature = "tracing")]
                    crate::trace::log_message(label.as_deref(), &m);
                    if let Some(LogCallback(cb)) = &on_log {
                        quietly(&|| cb(&m));
                    }
                }
                Deferred::ListChanged(kind) => {
                    if let Some(ListChangedCallback(cb)) = &on_list_changed {
                        quietly(&|| cb(kind));
                    }
                }
                Deferred::Ask(ask, request) => self.start_handler(&handlers, ask, request),
            }
        }
    }

    /// Starts the handler that answers server request `ask`, as a task; it answers through the
    /// session when it finishes (a panic answers -32603). The session already checked that a
    /// handler exists for it (the capabilities come from the handlers).
    fn start_handler(&self, handlers: &Handlers, ask: AskId, request: ServerRequest) {
        use smol::future::FutureExt;
        let method = request.method();
        let future =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handlers.answer(request)));
        let me = self.me.clone();
        let future = match future {
            Ok(Some(future)) => future,
            outcome => {
                let message = match outcome {
                    Ok(_) => format!("this client has no handler for {method}"),
                    Err(_) => format!("the client's {method} handler panicked"),
                };
                return self.respond(ask, Err(internal(message)));
            }
        };
        let task = smol::spawn(async move {
            let outcome = std::panic::AssertUnwindSafe(future)
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Err(internal(format!("the client's {method} handler panicked")))
                });
            if let Some(shared) = me.upgrade() {
                shared.respond(ask, outcome);
            }
        });
        let mut st = lock(&self.state);
        // Cancelled meanwhile (between the event and now): drop it at once.
        if st.session.ask_is_open(ask) {
            st.running.insert(ask, task);
        }
    }

    /// A handler finished: its answer goes to the session, which sends it where it belongs.
    fn respond(&self, ask: AskId, outcome: Result<Value, RpcError>) {
        let mut st = lock(&self.state);
        if let Some(task) = st.running.remove(&ask) {
            // This is the task running now: let it finish on its own.
            task.detach();
        }
        // An answer refused (not open any more, or invalid) was dealt with by the session.
        let _ = st.session.respond(ask, outcome, Instant::now());
        st.flush(&self.transport);
        if !st.deferred.is_empty() {
            self.deliver(st);
        }
    }

    /// Fires every timer that has passed. Returns the next timer `timers` names.
    fn expire(&self, timers: Timers) -> Option<Instant> {
        let mut st = lock(&self.state);
        st.session.handle_timeout(Instant::now());
        st.flush(&self.transport);
        timers.next(&st.session)
    }

    fn finished(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
            || lock(&self.state).session.state() == mcp_proto::State::Closed
    }
}

/// The idle reader: while no caller waits, it reads for the client (pings answered, the server's
/// end noticed). While callers wait, or waited within the last [`WATCHDOG_PERIOD`], it only
/// looks every period (which covers callers whose futures are kept but not polled), so that
/// back-to-back calls cost it nothing.
///
/// It also keeps the session's next timer armed for everyone (callers arm none of their own),
/// and fires it on time: it re-arms only when that timer has fired, or when a flush set an
/// earlier one ([`ConnState::flush`] wakes it then). A timer set later than the armed one (each
/// back-to-back call's deadline) waits for the armed one to fire first, which then finds
/// nothing due and arms the next: a re-arm per timeout period, not per call.
async fn idle_reader(shared: Arc<Connection>) {
    let mut seen = shared.waits_begun.load(Ordering::Relaxed);
    let mut timer = LazyTimer::new();
    while !shared.finished() {
        let woken = shared.idle_wake.listen();
        if shared.finished() {
            // Dropped or closed after the check above, before this listened.
            return;
        }
        {
            let mut st = lock(&shared.state);
            timer.follow(st.session.poll_timeout(), Instant::now());
            st.timer_armed = timer.armed;
        }
        let woken = async {
            woken.await;
            IdleWake::Woken
        };
        let fired = async {
            timer.fired().await;
            IdleWake::Timer
        };
        let begun = shared.waits_begun.load(Ordering::Relaxed);
        let wake = if shared.callers.load(Ordering::SeqCst) > 0 || begun != seen {
            seen = begun;
            let watchdog = async {
                smol::Timer::after(WATCHDOG_PERIOD).await;
                IdleWake::Look
            };
            smol::future::or(woken, smol::future::or(watchdog, fired)).await
        } else {
            shared.idle_listening.store(true, Ordering::SeqCst);
            let readable = async {
                shared.transport.ready().await;
                IdleWake::Look
            };
            let wake = if shared.callers.load(Ordering::SeqCst) == 0 && !shared.finished() {
                smol::future::or(woken, smol::future::or(readable, fired)).await
            } else {
                IdleWake::Woken
            };
            shared.idle_listening.store(false, Ordering::SeqCst);
            wake
        };
        if shared.dropped.load(Ordering::SeqCst) {
            return;
        }
        match wake {
            // A caller came (it reads for itself now), an earlier timer was set, or the client
            // is ending: the loop looks again, re-arming first.
            IdleWake::Woken => {}
            IdleWake::Look => {
                shared.pump(Timers::Session, None);
                shared.expire(Timers::Session);
            }
            IdleWake::Timer => {
                shared.expire(Timers::Session);
            }
        }
    }
}

/// A timer kept armed at the earliest instant it is told to follow, re-armed only when told an
/// earlier one or when the armed one has passed. A later instant waits for the armed one to
/// fire first (whoever then looks finds nothing due, and the timer follows the later one): each
/// re-arm costs the reactor a wake-up and system calls, and a timer per call cost that per call.
struct LazyTimer {
    timer: smol::Timer,
    /// The instant `timer` is armed for.
    armed: Option<Instant>,
}

impl LazyTimer {
    fn new() -> LazyTimer {
        LazyTimer {
            timer: smol::Timer::never(),
            armed: None,
        }
    }

    /// Follows the session's next timer, `next`, at `now`.
    fn follow(&mut self, next: Option<Instant>, now: Instant) {
        let spent = self.armed.is_some_and(|at| at <= now);
        match next {
            Some(at) if spent || earlier(at, self.armed) => {
                self.armed = Some(at);
                self.timer.set_at(at);
            }
            None if spent => {
                self.armed = None;
                self.timer = smol::Timer::never();
            }
            _ => {}
        }
    }

    /// Completes when the armed instant comes (never, when none is armed).
    async fn fired(&mut self) {
        (&mut self.timer).await;
    }
}

/// Whether a timer at `at` must re-arm one armed for `armed`: nothing is armed, or `at` comes
/// first.
fn earlier(at: Instant, armed: Option<Instant>) -> bool {
    armed.is_none_or(|armed| at < armed)
}

/// What woke the idle reader.
enum IdleWake {
    /// [`Connection::idle_wake`].
    Woken,
    /// The watchdog's period passed, or (nobody waiting) the transport is ready: take what came.
    Look,
    /// The timer it keeps fired.
    Timer,
}

/// Whether this process may run on one CPU only (its affinity mask, as the system said the
/// first time this was asked): a server on the same machine then shares that CPU, so a caller
/// whose first look found nothing yields it once, and looks again, before it waits.
fn one_cpu() -> bool {
    static ONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ONE.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() == 1))
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
