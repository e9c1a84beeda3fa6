//! The Streamable HTTP transport, on [isahc](https://docs.rs/isahc). It only moves bytes: every
//! decision (headers, statuses, session ids, resumption) comes from [`HttpRules`] in the core.
//!
//! Each outbound message is one POST, each run on its own: a request's exchange, so a response
//! stream can stay open while the answers to the server's pings go out on their own POSTs, and
//! every notification or response (a task each), each within its deadline
//! ([`HttpTransportConfig::post_timeout`]), so one stalled POST holds nothing back. Only what
//! follows `notifications/initialized` or a cancellation waits for its status, and at most
//! [`ORDER_WAIT`](mcp_proto::http::ORDER_WAIT) ([`HttpRules::order_wait`]), so the server sees
//! them before the requests that follow. A 401 or 403 to a notification or response runs the
//! OAuth flow and sends it again, as for a request; a cancellation or an answer to a server
//! request that cannot be delivered is reported to the client (a warning, and the request that
//! waits on the answer fails). Events are handed to the client as they arrive. A cancelled
//! request's exchange is aborted, and so is every exchange when the transport is closed or
//! dropped; [`close`](Transport::close) sends its `DELETE` after the POSTs still under way.
//!
//! A request's exchange is run by whoever waits on the transport ([`Transport::ready`]: the
//! caller waiting for an answer, else the idle reader), on its own thread, so that a call costs
//! what a bare isahc request does: no hand-off to an executor thread and back. A watchdog task
//! runs what nobody waiting ran within 10 ms while more than one task waits (a caller's future
//! kept but not polled may have taken the wake-up), within 100 ms while one or none does.
//!
//! After a legacy handshake the rules may say to listen on the standalone event stream (a `GET`,
//! by default when the client declared capabilities: see [`HttpConfig::standalone_stream`]); one
//! task reads it, hands its messages (the server's requests and notifications) to the client,
//! and reconnects when it ends, as the rules say. A new handshake's listener replaces the old.
//!
//! # What is sent, and where
//!
//! [`HttpTransport::new`] refuses credentials in the URL (`http://user:pass@…`: pass an
//! `Authorization` header instead) and header values that are not visible ASCII; errors and
//! `Debug` output show URLs without user info or query, and no header values. A same-origin
//! `307`/`308` (a framework adding a trailing slash to `/mcp`) is followed with the method, body
//! and headers kept, and its URL is used from then on; a redirect to another origin is not
//! (nothing is sent there; the error names its origin), `301`/`302`/`303` to a POST are errors
//! (they would turn it into a GET), and one request follows at most
//! [`MAX_REDIRECTS`](mcp_proto::http::MAX_REDIRECTS), never in a loop
//! ([`HttpRules::on_redirect`]). A refused request's JSON-RPC error is read from its body (at
//! most [`MAX_ERROR_BODY`](mcp_proto::http::MAX_ERROR_BODY)); a JSON-RPC error with `"id": null`
//! fails the request whose response carried it. Authorization is the [`oauth`](crate::oauth)
//! module's (the `oauth` feature).
//!
//! # The modern era over HTTP
//!
//! In the 2026-07-28 era every POST mirrors its method, name and the arguments a tool's schema
//! marks with `x-mcp-header` into `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers
//! (Base64-encoded where not plain ASCII; the rules are [`mcp_proto::http::metadata`]); tools whose
//! annotations are invalid are left out of the list (with a warning); a -32020 header mismatch
//! re-lists the tools and retries the call once; cancelling closes the request's stream and
//! posts nothing. There is no session and no standalone stream.

use crate::oauth::OAuth;
#[cfg(feature = "oauth")]
use crate::oauth::OAuthConfig;
use crate::sync::{lock, Waiters, Waiting};
use crate::transport::{BoxFuture, Inbound, Transport};
use crate::Error;
use isahc::config::{Configurable, RedirectPolicy};
use isahc::{AsyncBody, HttpClient, Response};
use mcp_proto::http::{
    redact_url, Exchange, HttpConfig, HttpError, HttpRequest, HttpRules, Listening, Step,
};
use mcp_proto::oauth::{Attempt, AuthError, Verdict};
use mcp_proto::{RequestError, RequestId, Transmit, TransmitKind};
use smol::channel::{self, Receiver, Sender};
use smol::io::AsyncReadExt;
use std::collections::HashMap;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// How many received messages may wait for the client before reading the response pauses.
const INBOUND_QUEUE: usize = 64;

/// The largest read from an event stream.
const READ_BUF: usize = 16 * 1024;

/// The first read from a request's event stream (doubled up to [`READ_BUF`] while reads fill it).
const FIRST_READ: usize = 512;

/// How soon the watchdog polls a request's exchange that was woken and that nobody waiting on
/// the transport polled, while more than one task waits on it (see [`Runner`]): one of them
/// may be a future kept and left alone that took the wake-up, holding up the others. The
/// client's idle reader looks as often then ([`CROWD_WATCHDOG_PERIOD`](crate::client::CROWD_WATCHDOG_PERIOD)).
const WATCHDOG: Duration = crate::client::CROWD_WATCHDOG_PERIOD;

/// The watchdog's period while at most one task waits on the transport: nobody else to hold
/// up (the one that waits polls its own exchanges whenever it is polled), so it looks seldom.
/// A second waiter cuts a long wait short ([`Runner::crowd`]). Looking every [`WATCHDOG`] with a
/// single caller made a timer fire, a thread wake on smol's executor and the reactor's wait be
/// re-armed a hundred times a second; one caller's calls ran 5–8% slower for it, and an async
/// isahc client sharing the process 15% slower (`cargo bench -p mcp-connect --bench http`).
/// The client's idle reader's period otherwise ([`WATCHDOG_PERIOD`](crate::client::WATCHDOG_PERIOD)).
const LONE_WATCHDOG: Duration = crate::client::WATCHDOG_PERIOD;

/// How to reach a Streamable HTTP server. `Debug` hides header values and the URL's credentials
/// and query.
#[derive(Clone)]
pub struct HttpTransportConfig {
    /// The endpoint and the rules' settings (extra headers such as `Authorization`, session renewal,
    /// resumption). [`HttpTransport::new`] refuses settings that fail [`HttpConfig::validate`]: a
    /// URL with credentials, a header with a bad name or a value that is not visible ASCII.
    pub rules: HttpConfig,
    /// The isahc client to use. The default one keeps connections alive and has no wall-clock
    /// timeout: a response stream lasts as long as the caller's request timeout allows. Whatever
    /// the client's own redirect policy, isahc follows no redirect: the core's rules decide
    /// ([`redirect_target`](mcp_proto::http::redirect_target): same-origin 307 and 308 only, so
    /// credentials never travel to another origin), and the transport only sends the request
    /// again.
    pub client: Option<HttpClient>,
    /// The largest JSON body or SSE event accepted, in bytes (default 64 MiB). A client lowers
    /// it to its session's limit on one message (`Config::frame_limit`) when that is smaller:
    /// the session would refuse a longer message anyway, and the transport holds no more.
    pub max_message: usize,
    /// The time limit of each notification or response POST (a cancellation, a ping answer):
    /// past it the POST is abandoned (default 10 s). The OAuth flow a `401` to it leads to is not
    /// counted (it has limits of its own); the POST sent again after it has this limit too.
    /// [`close`](Transport::close) waits at most this long for the POSTs still under way.
    pub post_timeout: Duration,
    /// How long [`close`](Transport::close) waits for the answer to its `DELETE`, a courtesy to
    /// the server; past it the `DELETE` is abandoned and `close` returns `Ok` (default 2 s).
    pub close_timeout: Duration,
    /// How many messages may wait to be sent, counting the notification and response POSTs still
    /// in flight (default 1024). Past it, [`send`](Transport::send) refuses the message with an
    /// error ("outbound queue is full"), and the client fails a refused request at once with it.
    pub max_queued: usize,
    /// OAuth: when set, a `401` (or a `403 insufficient_scope`) runs the authorization flow and
    /// the request is sent again with its token (see [`crate::oauth`]). Not used when
    /// [`rules`](Self::rules) carry an `Authorization` header of their own.
    #[cfg(feature = "oauth")]
    pub oauth: Option<OAuthConfig>,
}

impl HttpTransportConfig {
    /// Defaults for an endpoint.
    pub fn new(url: impl Into<String>) -> Self {
        HttpTransportConfig {
            rules: HttpConfig::new(url),
            client: None,
            max_message: mcp_proto::framing::DEFAULT_FRAME_LIMIT,
            post_timeout: Duration::from_secs(10),
            close_timeout: Duration::from_secs(2),
            max_queued: 1024,
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }

    /// Authorizes with OAuth when the server asks (see [`oauth`](Self::oauth)).
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: OAuthConfig) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Adds a header sent on every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.rules.headers.push((name.into(), value.into()));
        self
    }
}

impl std::fmt::Debug for HttpTransportConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("HttpTransportConfig");
        d.field("rules", &self.rules)
            .field("client", &self.client.as_ref().map(|_| "HttpClient"))
            .field("max_message", &self.max_message)
            .field("post_timeout", &self.post_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("max_queued", &self.max_queued);
        #[cfg(feature = "oauth")]
        d.field("oauth", &self.oauth);
        d.finish()
    }
}

/// A Streamable HTTP connection to one MCP endpoint. See the [module docs](self).
///
/// Dropping it without [`close`](Transport::close) aborts every exchange (their response streams
/// close) and ends no session; messages already queued (cancellations) are still sent, each
/// within `post_timeout`.
pub struct HttpTransport {
    outbound: Sender<Transmit>,
    inbound: Receiver<Inbound>,
    shared: Arc<Shared>,
    /// The only strong reference: when the transport goes, the abort senders go with it and
    /// every exchange ends.
    exchanges: Arc<Mutex<Exchanges>>,
    /// Messages queued, and notification or response POSTs not yet ended.
    queued: Arc<AtomicUsize>,
    max_queued: usize,
    close_timeout: Duration,
}

struct Shared {
    client: HttpClient,
    /// `client` is the transport's own (built with [`RedirectPolicy::None`]), not the
    /// application's ([`HttpTransportConfig::client`]).
    own_client: bool,
    /// The endpoint's URL, parsed once ([`UriCache`]).
    uris: UriCache,
    rules: Mutex<HttpRules>,
    inbound: Sender<Inbound>,
    /// Notified each time a message leaves the count of queued ones (its POST ended, or its
    /// exchange started), for `close`, which sends its `DELETE` after them.
    left: event_listener::Event,
    /// The largest body or event accepted: [`HttpTransportConfig::max_message`], lowered to
    /// the session's limit on one message when the client tells it
    /// ([`Transport::set_frame_limit`]).
    max_message: AtomicUsize,
    post_timeout: Duration,
    closed: AtomicBool,
    /// The OAuth flow's state, when the transport authorizes.
    oauth: Option<OAuth>,
    /// The request exchanges' futures, and who polls them.
    runner: Runner,
    /// Messages handed to the send loop that it has not finished with (an ordered one until its
    /// status came or its wait ended): while there are any, a request queues behind them.
    backlog: AtomicUsize,
}

/// Who runs the request exchanges. An exchange is a future polled by whoever waits on the
/// transport ([`Transport::ready`]: the caller waiting for an answer, or the idle reader), on
/// that caller's own thread: the request goes out and its answer comes in with no hand-off to
/// an executor thread and back, as with a bare HTTP client. Its waker queues it in `woken` and
/// wakes one waiter (`waiters`). So that no exchange waits on a caller that is not polled (a
/// caller's future kept but left alone, the only caller), a watchdog task on smol's executor
/// polls what is still queued every [`WATCHDOG`] while exchanges run (or ran in the last
/// period) and more than one task waits, every [`LONE_WATCHDOG`] while one or none does; it
/// sleeps when no exchange ran.
struct Runner {
    /// Woken exchanges, each once, in the order they were woken.
    woken: Mutex<VecDeque<Arc<Slot>>>,
    /// The tasks waiting on the transport: one more of them woken when an exchange is woken,
    /// all of them after each item handed to `inbound`.
    waiters: Waiters,
    /// Exchanges whose future has not ended (nor been dropped).
    live: AtomicUsize,
    /// Counts the exchanges started, for the watchdog to tell recent ones.
    begun: AtomicU64,
    /// Set while the watchdog sleeps until an exchange starts (`started`).
    asleep: AtomicBool,
    started: event_listener::Event,
    /// Set while the watchdog waits its [`LONE_WATCHDOG`] period (one waiter or none): a second
    /// waiter notifies `crowd`, and the watchdog looks every [`WATCHDOG`] from then on.
    lone: AtomicBool,
    crowd: event_listener::Event,
    /// The responses of exchanges that ended, not dropped yet: dropping one (its body's pipe,
    /// its headers, isahc's handle of it) is a few thousand instructions, which would otherwise
    /// stand between the answer and the caller who waits for it. They are dropped when a waiter
    /// is about to sleep (the next call's request is already out by then), by the watchdog,
    /// or once [`MAX_SPENT`] wait.
    spent: Mutex<Vec<Response<AsyncBody>>>,
}

/// The most ended exchanges' responses [`Runner::spent`] holds before it drops them at once.
const MAX_SPENT: usize = 16;

/// One exchange's future, polled by one thread at a time; `None` once it ended or was dropped
/// (the request was cancelled, the transport closed).
struct Slot {
    /// In `Runner::woken` (set by its waker, cleared before it is polled).
    woken: AtomicBool,
    future: Mutex<Option<Pin<Box<dyn Future<Output = ()> + Send>>>>,
    runner: Weak<Shared>,
}

impl Wake for Slot {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.woken.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(shared) = self.runner.upgrade() {
            lock(&shared.runner.woken).push_back(self.clone());
            // One more waiter: a caller already told (perhaps one whose future is not polled)
            // does not take every wake-up.
            shared.runner.waiters.wake_one();
        }
    }
}

impl Slot {
    /// Drops the exchange's future (it ends its HTTP exchange): waits for a poll under way on
    /// another thread.
    fn abort(&self) {
        let future = lock(&self.future).take();
        if future.is_some() {
            if let Some(shared) = self.runner.upgrade() {
                shared.runner.live.fetch_sub(1, Ordering::SeqCst);
            }
        }
        drop(future);
    }
}

impl Runner {
    fn new() -> Runner {
        Runner {
            woken: Mutex::new(VecDeque::new()),
            waiters: Waiters::default(),
            live: AtomicUsize::new(0),
            begun: AtomicU64::new(0),
            asleep: AtomicBool::new(false),
            started: event_listener::Event::new(),
            lone: AtomicBool::new(false),
            crowd: event_listener::Event::new(),
            spent: Mutex::new(Vec::new()),
        }
    }

    /// Keeps an ended exchange's response, to drop later ([`Runner::spent`]).
    fn set_aside(&self, response: Response<AsyncBody>) {
        let mut spent = lock(&self.spent);
        spent.push(response);
        if spent.len() >= MAX_SPENT {
            let all = std::mem::take(&mut *spent);
            drop(spent);
            drop(all);
        }
    }

    /// A waiter registered, and `waiting` wait now: if that is more than one while the watchdog
    /// waits its lone period, it is told to look every [`WATCHDOG`] instead. One load when
    /// nothing changed.
    fn registered(&self, waiting: usize) {
        // The watchdog sets `lone`, then counts the waiters under the list's lock; a waiter
        // registers under that lock, then reads `lone`: the watchdog sees this waiter, or this
        // sees its flag.
        if waiting > 1
            && self.lone.load(Ordering::SeqCst)
            && self.lone.swap(false, Ordering::SeqCst)
        {
            self.crowd.notify(1);
        }
    }

    /// The watchdog's side of [`registered`](Self::registered), before each wait: with at most
    /// one waiter, sets `lone` and returns what a second waiter's registration notifies (the
    /// watchdog waits [`LONE_WATCHDOG`] or until then); with more, `None` (it waits [`WATCHDOG`]).
    fn lone_wait(&self) -> Option<event_listener::EventListener> {
        if self.waiters.waiting() > 1 {
            return None;
        }
        let crowd = self.crowd.listen();
        self.lone.store(true, Ordering::SeqCst);
        // Again, now that a second waiter cannot come unnoticed (`registered`).
        if self.waiters.waiting() > 1 {
            self.lone.store(false, Ordering::SeqCst);
            return None;
        }
        Some(crowd)
    }

    /// Drops the responses set aside.
    fn drop_spent(&self) {
        let all = std::mem::take(&mut *lock(&self.spent));
        drop(all);
    }

    /// Polls every woken exchange, on this thread, until none is woken.
    fn drive(&self) {
        loop {
            let Some(slot) = lock(&self.woken).pop_front() else {
                return;
            };
            slot.woken.store(false, Ordering::Release);
            let mut future = lock(&slot.future);
            let Some(running) = future.as_mut() else {
                continue;
            };
            let waker = Waker::from(slot.clone());
            if running
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_ready()
            {
                *future = None;
                self.live.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// The running request exchanges, by request id, each with its generation: [`Slot::abort`]
/// ends an exchange, and an exchange's cleanup removes only its own entry (a request resent in a
/// new session gets a new one under the same id).
#[derive(Default)]
struct Exchanges {
    next: u64,
    running: HashMap<RequestId, (u64, Arc<Slot>), mcp_proto::jsonrpc::IdHash>,
    /// The standalone stream's listener, when one runs: dropping it ends the listener (a new
    /// handshake's listener replaces the old one).
    listening: Option<Sender<()>>,
}

impl Exchanges {
    fn remove(&mut self, id: RequestId, generation: u64) {
        if self.running.get(&id).is_some_and(|(g, _)| *g == generation) {
            self.running.remove(&id);
        }
    }

    /// Aborts request `id`'s exchange, if it runs. Call it without the lock held (an exchange's
    /// future is dropped).
    fn abort(running: &Mutex<Exchanges>, id: RequestId) {
        let slot = lock(running).running.remove(&id);
        if let Some((_, slot)) = slot {
            slot.abort();
        }
    }

    /// Aborts every exchange and the listener.
    fn abort_all(running: &Mutex<Exchanges>) {
        let (all, listening) = {
            let mut exchanges = lock(running);
            (
                std::mem::take(&mut exchanges.running),
                exchanges.listening.take(),
            )
        };
        drop(listening);
        for (_, (_, slot)) in all {
            slot.abort();
        }
    }
}

impl HttpTransport {
    /// A transport for this endpoint. Nothing is sent until the client sends `initialize`.
    ///
    /// Fails with [`Error::Config`] when the settings fail [`HttpConfig::validate`]; credentials
    /// in the URL are refused (pass an `Authorization` header instead).
    pub fn new(config: HttpTransportConfig) -> Result<Self, Error> {
        config.rules.validate()?;
        let own_client = config.client.is_none();
        let client = match config.client {
            Some(c) => c,
            None => HttpClient::builder()
                .redirect_policy(RedirectPolicy::None)
                .build()
                .map_err(|e| Error::io("building the HTTP client", std::io::Error::other(e)))?,
        };
        // Bounded by `queued`, counted in `send`.
        let (out_tx, out_rx) = channel::unbounded();
        // Bounded: a server streaming faster than the client reads is slowed down, not buffered.
        let (in_tx, in_rx) = channel::bounded(INBOUND_QUEUE);
        let rules = HttpRules::new(config.rules);
        #[cfg(feature = "oauth")]
        let oauth = match config.oauth {
            Some(oauth) if !rules.has_configured_authorization() => {
                Some(OAuth::new(rules.url(), oauth, client.clone()))
            }
            _ => None,
        };
        #[cfg(not(feature = "oauth"))]
        let oauth: Option<OAuth> = None;
        let shared = Arc::new(Shared {
            oauth,
            client,
            own_client,
            uris: UriCache::default(),
            rules: Mutex::new(rules),
            inbound: in_tx,
            left: event_listener::Event::new(),
            max_message: AtomicUsize::new(config.max_message),
            post_timeout: config.post_timeout,
            closed: false.into(),
            runner: Runner::new(),
            backlog: AtomicUsize::new(0),
        });
        let exchanges = Arc::new(Mutex::new(Exchanges::default()));
        let queued = Arc::new(AtomicUsize::new(0));
        smol::spawn(watchdog(Arc::downgrade(&shared))).detach();
        // Detached, so that what was queued before a drop still goes out; it ends when the
        // queue is closed and empty.
        smol::spawn(send_loop(
            shared.clone(),
            Arc::downgrade(&exchanges),
            queued.clone(),
            out_rx,
        ))
        .detach();
        Ok(HttpTransport {
            outbound: out_tx,
            inbound: in_rx,
            shared,
            exchanges,
            queued,
            max_queued: config.max_queued,
            close_timeout: config.close_timeout,
        })
    }

    /// How many received messages wait for the client to take them: at most 64, past which
    /// reading the responses pauses until it does.
    pub fn received_waiting(&self) -> usize {
        self.inbound.len()
    }

    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<String> {
        lock(&self.shared.rules).session_id().map(str::to_owned)
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        // No new exchange starts; dropping the abort senders ends the running ones. The send
        // loop still posts what is queued (cancellations), then ends.
        self.shared.closed.store(true, Ordering::SeqCst);
        Exchanges::abort_all(&self.exchanges);
        self.shared.runner.drop_spent();
        self.outbound.close();
        // The watchdog ends once no exchange runs.
        self.shared.runner.started.notify(usize::MAX);
    }
}

impl Transport for HttpTransport {
    fn set_frame_limit(&self, limit: usize) {
        self.shared.max_message.fetch_min(limit, Ordering::Relaxed);
    }
    fn send(&self, message: Transmit) -> Result<(), Error> {
        if self.queued.fetch_add(1, Ordering::SeqCst) >= self.max_queued {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            let error = Error::QueueFull {
                context: format!(
                    "the HTTP transport's outbound queue is full ({} messages wait to be sent)",
                    self.max_queued
                ),
            };
            // A refused request fails at once: the client hands this error to its caller (not
            // through the inbound queue, which may be full too).
            return Err(error);
        }
        // A request with nothing queued before it starts its exchange at once, for the caller
        // that waits for it to run (see `Runner`); else it goes behind the others.
        if let TransmitKind::Request { id, .. } = message.kind {
            if self.shared.backlog.load(Ordering::SeqCst) == 0 {
                self.shared.done(&self.queued);
                if self.shared.closed.load(Ordering::SeqCst) {
                    return Err(Error::Closed);
                }
                start_exchange(&self.shared, &self.exchanges, id, message);
                return Ok(());
            }
        }
        self.shared.backlog.fetch_add(1, Ordering::SeqCst);
        self.outbound.try_send(message).map_err(|_| {
            self.shared.backlog.fetch_sub(1, Ordering::SeqCst);
            self.shared.done(&self.queued);
            Error::Closed
        })
    }

    fn kind(&self) -> mcp_proto::TransportKind {
        mcp_proto::TransportKind::Http
    }

    fn try_recv(&self) -> Option<Inbound> {
        match self.inbound.try_recv() {
            Ok(item) => Some(item),
            Err(channel::TryRecvError::Empty) => None,
            Err(channel::TryRecvError::Closed) => Some(Inbound::Closed(None)),
        }
    }

    /// Runs the request exchanges that were woken (see `Runner`) while it waits.
    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let received = || !self.inbound.is_empty() || self.inbound.is_closed();
            let runner = &self.shared.runner;
            let mut waiting = Waiting::new(&runner.waiters);
            std::future::poll_fn(|cx| {
                waiting.looking();
                // What was woken first, and a waker registered only if that brought nothing:
                // the caller woken for its answer's exchange takes it without registering.
                runner.drive();
                if received() {
                    return Poll::Ready(());
                }
                let count = waiting.register(cx.waker());
                runner.registered(count);
                // Again, now that nothing woken or arriving can pass unnoticed.
                runner.drive();
                if received() {
                    return Poll::Ready(());
                }
                // About to sleep: what ended exchanges left is dropped now, while the server
                // works (the next call's request, if any, went out in `drive`).
                runner.drop_spent();
                Poll::Pending
            })
            .await
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            if self.shared.closed.swap(true, Ordering::SeqCst) {
                return Ok(());
            }
            self.outbound.close();
            Exchanges::abort_all(&self.exchanges);
            self.shared.runner.drop_spent();
            // What was queued before (a cancellation, an answer) reaches the server before the
            // `DELETE` ends its session: each such POST ends within `post_timeout`, and so does
            // this wait.
            let drained = async {
                loop {
                    let left = self.shared.left.listen();
                    if self.queued.load(Ordering::SeqCst) == 0 {
                        break;
                    }
                    left.await;
                }
            };
            smol::future::or(drained, async {
                smol::Timer::after(self.shared.post_timeout).await;
            })
            .await;
            let delete = lock(&self.shared.rules).delete();
            let result = match delete {
                // A 405 (the server does not let clients end sessions) is fine; so is any answer.
                // Ending the session is a courtesy: a server that does not answer in time is
                // left to expire it.
                Some(request) => {
                    let delete = async { Some(self.shared.send(request).await.map(drop)) };
                    let give_up = async {
                        smol::Timer::after(self.close_timeout).await;
                        None
                    };
                    smol::future::or(delete, give_up).await.unwrap_or(Ok(()))
                }
                None => Ok(()),
            };
            let _ = self.shared.inbound.try_send(Inbound::Closed(None));
            self.shared.runner.waiters.wake_all();
            result
        })
    }

    fn session_id(&self) -> Option<String> {
        HttpTransport::session_id(self)
    }
}

impl Shared {
    /// The largest body or event accepted now.
    fn max_message(&self) -> usize {
        self.max_message.load(Ordering::Relaxed)
    }

    /// Sends `request`: signed (DPoP), checked and handed to isahc at once; the future returned
    /// only awaits the response. (Kept small: an exchange's future holds it, and a large one
    /// made every exchange's allocation a large one.)
    fn send(
        &self,
        mut request: HttpRequest,
    ) -> impl Future<Output = Result<Response<AsyncBody>, Error>> + '_ {
        // A DPoP-bound token goes with a fresh proof, whatever sent the request (a first
        // attempt, a retry, a reconnection, the session's DELETE).
        if let Some(oauth) = &self.oauth {
            oauth.sign(&mut request);
        }
        // isahc panics on a header value that is not visible ASCII; such a request is not made.
        let started = request.check().map_err(http_error).and_then(|()| {
            let method = request.method;
            let http_request =
                isahc_request(request, !self.own_client, Some(&self.uris)).map_err(|e| {
                    Error::io(
                        format!("building a request to {}", lock(&self.rules).redacted_url()),
                        std::io::Error::other(e),
                    )
                })?;
            // The URL for an error message, written out only then: most requests never need
            // it (a clone of the parsed one shares its text).
            let uri = http_request.uri().clone();
            Ok((method, uri, self.client.send_async(http_request)))
        });
        async move {
            let (method, uri, response) = started?;
            match response.await {
                Ok(response) => {
                    if let Some(oauth) = &self.oauth {
                        let nonce = response
                            .headers()
                            .get(mcp_proto::oauth::dpop::DPOP_NONCE_HEADER);
                        oauth.on_head(nonce.and_then(|v| v.to_str().ok()));
                    }
                    Ok(response)
                }
                // Rare, and its future large: boxed.
                Err(e) => Err(Box::pin(send_error(e, method, uri)).await),
            }
        }
    }

    /// One message leaves the count of those queued: `close` may be waiting for the last.
    fn done(&self, queued: &AtomicUsize) {
        queued.fetch_sub(1, Ordering::SeqCst);
        self.left.notify(usize::MAX);
    }

    /// Hands one item to the client, waiting while its queue is full.
    async fn deliver(&self, item: Inbound) {
        // Room at once, most times: the wait for it (a larger future) is boxed.
        if let Err(channel::TrySendError::Full(item)) = self.inbound.try_send(item) {
            let _ = Box::pin(self.inbound.send(item)).await;
        }
        self.runner.waiters.wake_all();
    }
}

/// Sends queued messages in order. Requests get an exchange task each; a notification or
/// response is POSTed by a task of its own, and after an ordered one (see
/// [`HttpRules::order_wait`]) the next message waits until its status arrived, it was given up
/// on, or the rules' bound passed.
async fn send_loop(
    shared: Arc<Shared>,
    exchanges: Weak<Mutex<Exchanges>>,
    queued: Arc<AtomicUsize>,
    queue: Receiver<Transmit>,
) {
    while let Ok(transmit) = queue.recv().await {
        send_one(&shared, &exchanges, &queued, transmit).await;
        shared.backlog.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One message of the send loop's.
async fn send_one(
    shared: &Arc<Shared>,
    exchanges: &Weak<Mutex<Exchanges>>,
    queued: &Arc<AtomicUsize>,
    transmit: Transmit,
) {
    {
        match transmit.kind.clone() {
            TransmitKind::Request { id, .. } => {
                // A request leaves the count here: its exchange belongs to a waiting caller.
                shared.done(queued);
                // After close or drop, no new exchange starts.
                let Some(running) = exchanges.upgrade() else {
                    return;
                };
                if shared.closed.load(Ordering::SeqCst) {
                    return;
                }
                start_exchange(shared, &running, id, transmit);
            }
            kind => {
                let cancel = lock(&shared.rules).on_cancel(&kind);
                if let Some(cancel) = cancel {
                    // Giving up on a request ends its HTTP exchange…
                    if let Some(running) = exchanges.upgrade() {
                        Exchanges::abort(&running, cancel.abort);
                    }
                    // …and, when the rules say so, only that.
                    if !cancel.notify {
                        shared.done(queued);
                        return;
                    }
                }
                let order = HttpRules::order_wait(&kind);
                let (accepted_tx, accepted_rx) = channel::bounded::<()>(1);
                let (posting, running, queued) =
                    (shared.clone(), exchanges.clone(), queued.clone());
                smol::spawn(async move {
                    post_message(&posting, &running, transmit, accepted_tx).await;
                    posting.done(&queued);
                })
                .detach();
                let Some(order) = order else {
                    return;
                };
                // Later messages wait until this one's status is in, or it was abandoned, or
                // for as long as the rules say at most (the POST itself goes on).
                smol::future::or(
                    async {
                        let _ = accepted_rx.recv().await;
                    },
                    async {
                        smol::Timer::after(order).await;
                    },
                )
                .await;
                if !HttpRules::listens_after(&kind) {
                    return;
                }
                // The handshake is done: listen on the standalone stream if the rules say so.
                let listen = lock(&shared.rules)
                    .start_listening(shared.max_message(), shared.oauth.is_some());
                if let (Some(listening), Some(running)) = (listen, exchanges.upgrade()) {
                    if !shared.closed.load(Ordering::SeqCst) {
                        let (stop_tx, stop_rx) = channel::bounded::<()>(1);
                        let (open_tx, open_rx) = channel::bounded::<()>(1);
                        lock(&running).listening = Some(stop_tx);
                        let listener = shared.clone();
                        smol::spawn(async move {
                            smol::future::or(listen_loop(&listener, listening, open_tx), async {
                                let _ = stop_rx.recv().await;
                            })
                            .await;
                        })
                        .detach();
                        // The next messages wait for the stream to be open (or refused), at
                        // most as long as the rules say: what the server sends on it at once
                        // is not lost.
                        smol::future::or(
                            async {
                                let _ = open_rx.recv().await;
                            },
                            async {
                                smol::Timer::after(HttpRules::listen_wait()).await;
                            },
                        )
                        .await;
                    }
                }
            }
        }
    }
}

/// Starts request `id`'s exchange (see [`Runner`]): one of the waiters on the transport polls it
/// first, soon.
fn start_exchange(
    shared: &Arc<Shared>,
    exchanges: &Arc<Mutex<Exchanges>>,
    id: RequestId,
    transmit: Transmit,
) {
    let generation = {
        let mut running = lock(exchanges);
        running.next += 1;
        running.next
    };
    let future = {
        let (shared, exchanges) = (shared.clone(), Arc::downgrade(exchanges));
        async move {
            exchange(&shared, id, &transmit).await;
            if let Some(running) = exchanges.upgrade() {
                lock(&running).remove(id, generation);
            }
        }
    };
    let slot = Arc::new(Slot {
        woken: AtomicBool::new(false),
        future: Mutex::new(Some(Box::pin(future))),
        runner: Arc::downgrade(shared),
    });
    let runner = &shared.runner;
    runner.live.fetch_add(1, Ordering::SeqCst);
    runner.begun.fetch_add(1, Ordering::SeqCst);
    // Entered before its first poll, so that its cleanup finds it.
    let replaced = lock(exchanges)
        .running
        .insert(id, (generation, slot.clone()));
    if let Some((_, old)) = replaced {
        old.abort();
    }
    slot.wake_by_ref();
    if runner.asleep.load(Ordering::SeqCst) {
        runner.started.notify(usize::MAX);
    }
}

/// Polls the exchanges that were woken and that nobody waiting on the transport polled, every
/// [`WATCHDOG`] while exchanges run or ran in the last period and more than one task waits on
/// the transport, every [`LONE_WATCHDOG`] while one or none does; sleeps when no exchange ran.
/// Ends once the transport is gone and no exchange runs.
async fn watchdog(shared: Weak<Shared>) {
    let mut seen = 0;
    loop {
        let crowd = match shared.upgrade() {
            Some(strong) => strong.runner.lone_wait(),
            None => return,
        };
        match crowd {
            Some(crowd) => {
                let period = async {
                    smol::Timer::after(LONE_WATCHDOG).await;
                };
                smol::future::or(period, crowd).await;
            }
            None => {
                smol::Timer::after(WATCHDOG).await;
            }
        }
        let Some(strong) = shared.upgrade() else {
            return;
        };
        let runner = &strong.runner;
        runner.lone.store(false, Ordering::SeqCst);
        runner.drive();
        runner.drop_spent();
        let begun = runner.begun.load(Ordering::SeqCst);
        if runner.live.load(Ordering::SeqCst) == 0 && begun == seen {
            if strong.closed.load(Ordering::SeqCst) {
                return;
            }
            let started = runner.started.listen();
            runner.asleep.store(true, Ordering::SeqCst);
            let idle = runner.live.load(Ordering::SeqCst) == 0
                && runner.begun.load(Ordering::SeqCst) == begun
                && !strong.closed.load(Ordering::SeqCst);
            drop(strong);
            if idle {
                started.await;
            }
            let Some(strong) = shared.upgrade() else {
                return;
            };
            strong.runner.asleep.store(false, Ordering::SeqCst);
        }
        seen = begun;
    }
}

/// How a notification or response POST ended.
enum Posted {
    /// The server's status came (a 2xx, or a 404 the client was told of).
    Answered,
    /// Dropped on purpose: it belonged to a session that has since been replaced.
    Dropped,
    /// Not delivered: no answer within the deadline, a failure status, or no authorization.
    Failed(Error),
}

/// POSTs a notification or response, each attempt within the deadline, authorizing again (and
/// resending it) when the server answers 401 or 403, as for a request; `accepted` is dropped
/// once its status arrived or it was given up on. The deadline does not cover the OAuth flow a
/// 401 leads to, which has limits of its own (a person may be authorizing: cutting the flow
/// short would make them start again). The answer (202) carries nothing to read. A 404 that means the
/// session expired is reported to the client (it renews the session). A cancellation or an
/// answer to a server request that could not be delivered is reported too
/// ([`Inbound::Undelivered`]): the client warns, and the request whose response stream carried
/// the server's request fails (its exchange is ended) instead of waiting for its timeout.
async fn post_message(
    shared: &Shared,
    exchanges: &Weak<Mutex<Exchanges>>,
    transmit: Transmit,
    accepted: Sender<()>,
) {
    let posted = async {
        let mut exchange =
            lock(&shared.rules).start(&transmit, shared.max_message(), shared.oauth.is_some());
        let mut attempt = mcp_proto::oauth::Attempt::default();
        let mut generation = 0;
        let mut response = None;
        loop {
            let step = lock(&shared.rules).step(&mut exchange, &transmit);
            match step {
                // A token past its expiry is refreshed first; the message carries the current one.
                Step::Prepare => {
                    if let Some(oauth) = &shared.oauth {
                        generation = oauth.prepare(&shared.rules).await.map_err(Error::Auth)?;
                    }
                }
                Step::Send(request) => {
                    // Each attempt within the deadline; a flow it leads to has limits of its own.
                    let sent = smol::future::or(shared.send(request), async {
                        smol::Timer::after(shared.post_timeout).await;
                        Err(Error::io(
                            format!("POST {}", lock(&shared.rules).redacted_url()),
                            std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                format!("no answer within {} s", shared.post_timeout.as_secs_f64()),
                            ),
                        ))
                    })
                    .await?;
                    let head = rules_head(&sent);
                    lock(&shared.rules).on_head(&mut exchange, sent.status().as_u16(), &head);
                    response = Some(sent);
                }
                // A 401 or 403: the OAuth flow decides whether to authorize (again) and send it
                // again.
                Step::Authorize { status, challenge } => {
                    let again =
                        authorize(shared, None, &mut attempt, generation, status, challenge)
                            .await
                            .map_err(Error::Auth)?;
                    lock(&shared.rules).on_authorized(&mut exchange, again);
                }
                Step::Failed(e) => return Ok((response, Some(e))),
                // Its status is all a notification or response gets (the rules read no body
                // for it): done, or dropped (it belonged to a session since replaced).
                Step::Done
                | Step::Dropped(_)
                | Step::ReadBody { .. }
                | Step::ReadStream
                | Step::Deliver(_)
                | Step::Wait(_) => return Ok((response, None)),
            }
        }
    };
    let answered: Result<_, Error> = posted.await;
    drop(accepted);
    let outcome = match answered {
        Ok((Some(mut response), None)) => {
            drain(shared, &mut response).await;
            Posted::Answered
        }
        Ok((None, None)) => Posted::Dropped,
        Ok((_, Some(HttpError::SessionExpired { url }))) => {
            shared
                .deliver(Inbound::SessionExpired {
                    id: None,
                    error: Error::Http {
                        status: 404,
                        url,
                        body: String::new(),
                    },
                })
                .await;
            Posted::Answered
        }
        Ok((Some(mut response), Some(e))) => {
            Posted::Failed(http_failure(e, response.body_mut()).await)
        }
        Ok((None, Some(e))) => Posted::Failed(http_error(e)),
        Err(error) => Posted::Failed(error),
    };
    let Posted::Failed(error) = outcome else {
        return;
    };
    // Which request is hurt, if any: the one whose response stream carried the server request
    // this was the answer to. Its exchange ends; the client fails it with this error.
    let Some(lost) = lock(&shared.rules).on_undelivered(&transmit) else {
        return;
    };
    if let (Some(id), Some(running)) = (lost.request, exchanges.upgrade()) {
        Exchanges::abort(&running, id);
    }
    shared
        .deliver(Inbound::Undelivered {
            what: lost.what,
            request: lost.request,
            error,
        })
        .await;
}

/// Drains a small body so the connection can be reused, within another `post_timeout`.
async fn drain(shared: &Shared, response: &mut Response<AsyncBody>) {
    let mut sink = Vec::new();
    let drain = async {
        let _ = response
            .body_mut()
            .take(64 * 1024)
            .read_to_end(&mut sink)
            .await;
    };
    smol::future::or(drain, async {
        smol::Timer::after(shared.post_timeout).await;
    })
    .await;
}

/// One request's exchange: the steps the rules give ([`HttpRules::step`]: the POST and its
/// redirects, authorization, the body or the event stream and its resumptions), executed one by
/// one, every message handed to the client.
async fn exchange(shared: &Shared, id: RequestId, transmit: &Transmit) {
    if let Err(error) = run_exchange(shared, id, transmit).await {
        shared.deliver(error).await;
    }
}

async fn run_exchange(shared: &Shared, id: RequestId, transmit: &Transmit) -> Result<(), Inbound> {
    let failed = |error: Error| Inbound::Failed { id, error };
    let unauthorized = |e| Inbound::Unreachable {
        id,
        error: Error::Auth(e),
    };
    let mut exchange =
        lock(&shared.rules).start(transmit, shared.max_message(), shared.oauth.is_some());
    let mut attempt = mcp_proto::oauth::Attempt::default();
    let mut generation = 0;
    let mut response: Option<Response<AsyncBody>> = None;
    // Small at first (most streams carry one small answer: a 16 KiB buffer zeroed for each
    // request cost more than the rest of the read); doubled, up to `READ_BUF`, each time a read
    // fills it. None for a JSON body. 512 bytes, not 1024: glibc serves a block of 1 KiB or
    // more from its large bins, consolidating every small freed block first, on each call.
    let mut buf = Vec::new();
    loop {
        let step = lock(&shared.rules).step(&mut exchange, transmit);
        match step {
            Step::Prepare => {
                let Some(oauth) = &shared.oauth else {
                    continue;
                };
                // A token past its expiry is refreshed first; the request carries the current
                // one.
                generation = match oauth.ready(&shared.rules) {
                    Some(generation) => generation,
                    // A flow first (a refresh, the authorization up front): the request's
                    // timeout waits for it.
                    None => Box::pin(authorizing(shared, id, oauth.prepare(&shared.rules)))
                        .await
                        .map_err(unauthorized)?,
                };
            }
            Step::Send(request) => {
                let sent = shared.send(request).await.map_err(|error| {
                    // No request gets through where no connection can be made: the session is
                    // told so, and an era probe that meets it is no sign of a legacy server.
                    if could_not_connect(&error) {
                        Inbound::Unreachable { id, error }
                    } else {
                        failed(error)
                    }
                })?;
                let head = rules_head(&sent);
                lock(&shared.rules).on_head(&mut exchange, sent.status().as_u16(), &head);
                response = Some(sent);
            }
            Step::Authorize { status, challenge } => {
                let again = authorize(
                    shared,
                    Some(id),
                    &mut attempt,
                    generation,
                    status,
                    challenge,
                )
                .await
                .map_err(unauthorized)?;
                lock(&shared.rules).on_authorized(&mut exchange, again);
            }
            Step::ReadBody { limit } => {
                let Some(body) = response.as_mut().map(Response::body_mut) else {
                    continue;
                };
                match read_limited(body, limit).await {
                    Ok(body) => lock(&shared.rules).on_body(&mut exchange, body),
                    Err(Error::Request(RequestError::TooLarge { len, .. })) => {
                        lock(&shared.rules).on_oversized(&mut exchange, len)
                    }
                    Err(e) => {
                        if !lock(&shared.rules).on_unreadable(&mut exchange) {
                            return Err(failed(e));
                        }
                    }
                }
            }
            Step::ReadStream => {
                if buf.is_empty() {
                    buf = vec![0u8; FIRST_READ];
                }
                // A broken stream is resumed like an ended one.
                let n = match response.as_mut() {
                    Some(response) => response.body_mut().read(&mut buf).await.unwrap_or_default(),
                    None => 0,
                };
                let mut rules = lock(&shared.rules);
                if n == 0 {
                    rules.on_end(&mut exchange);
                } else {
                    rules.on_data(&mut exchange, &buf[..n]);
                    drop(rules);
                    if n == buf.len() && buf.len() < READ_BUF {
                        buf.resize(buf.len() * 2, 0);
                    }
                }
            }
            Step::Deliver(message) => shared.deliver(reply(&exchange, message)).await,
            // A request's stream fails with an event over the limit instead.
            Step::Dropped(_) => {}
            Step::Wait(after) => {
                smol::Timer::after(after).await;
            }
            Step::Done => {
                // Dropped later, not between the answer and its caller.
                if let Some(response) = response.take() {
                    shared.runner.set_aside(response);
                }
                return Ok(());
            }
            Step::Failed(HttpError::SessionExpired { url }) => {
                return Err(Inbound::SessionExpired {
                    id: Some(id),
                    error: Error::Http {
                        status: 404,
                        url,
                        body: String::new(),
                    },
                })
            }
            Step::Failed(HttpError::TooLarge { len, limit }) => {
                return Err(Inbound::Oversized {
                    // An event is not buffered, so its length past the limit may be unknown.
                    len,
                    limit,
                    id: Some(id),
                });
            }
            Step::Failed(e) => {
                let error = match (exchange.error_body(), e) {
                    (Some(body), HttpError::Status { status, url }) => Error::Http {
                        status,
                        url,
                        body: excerpt(body),
                    },
                    (_, e) => match response.as_mut() {
                        Some(response) => Box::pin(http_failure(e, response.body_mut())).await,
                        None => http_error(e),
                    },
                };
                return Err(failed(error));
            }
        }
    }
}

/// Runs `flow` (an OAuth flow for request `id`, or the wait for one) with the request's timeout
/// suspended: the client is told before ([`Inbound::Authorizing`]) and after
/// ([`Inbound::Authorized`], whatever the outcome), so that the timeout starts again whole when
/// the request can go out. The flow bounds its own time.
async fn authorizing<T>(shared: &Shared, id: RequestId, flow: impl Future<Output = T>) -> T {
    shared.deliver(Inbound::Authorizing { id }).await;
    let outcome = flow.await;
    shared.deliver(Inbound::Authorized { id }).await;
    outcome
}

/// A `401` or `403` ([`Step::Authorize`]) to a message sent with the token of `generation`:
/// what the core's [`Authorizer`](mcp_proto::oauth::Authorizer) decides, carried out. `Ok(true)`:
/// send it again (after a flow when one was needed: this message's own, or the one it waited
/// for). While request `id` waits for a flow (which may wait for a person), its timeout waits
/// too ([`authorizing`]). Without OAuth, `Ok(false)`: the status is the error. Boxed: the flow
/// is large, and rare, and no exchange's future carries its size.
fn authorize<'a>(
    shared: &'a Shared,
    id: Option<RequestId>,
    attempt: &'a mut Attempt,
    generation: u64,
    status: u16,
    challenge: Option<String>,
) -> BoxFuture<'a, Result<bool, AuthError>> {
    Box::pin(async move {
        let Some(oauth) = &shared.oauth else {
            return Ok(false);
        };
        let (verdict, ticket) = oauth.verdict(attempt, generation, status, challenge.as_deref());
        match verdict {
            Verdict::Proceed => Ok(false),
            Verdict::Retry => Ok(true),
            Verdict::Fail(e) => Err(e),
            Verdict::Authorize(start) => {
                let flow = oauth.authorize_for(*start, ticket, &shared.rules);
                match id {
                    Some(id) => authorizing(shared, id, flow).await,
                    None => flow.await,
                }
            }
        }
    })
}

/// The standalone event stream: the steps the rules give ([`HttpRules::listen_step`]), executed
/// one by one: every message handed to the client, reconnections as the rules say; stops
/// quietly when the server offers none (405, any other answer) or cannot be reached.
/// `opened` is dropped when the first `GET`'s status came (whatever it is) or the loop ended.
async fn listen_loop(shared: &Shared, mut listening: Listening, opened: Sender<()>) {
    let mut opened = Some(opened);
    let mut buf = vec![0u8; READ_BUF];
    let mut attempt = mcp_proto::oauth::Attempt::default();
    let mut generation = 0;
    let mut response = None;
    loop {
        let step = lock(&shared.rules).listen_step(&mut listening);
        match step {
            // A token that expired while the stream was open is refreshed before reconnecting.
            Step::Prepare => {
                if let Some(oauth) = &shared.oauth {
                    match oauth.prepare(&shared.rules).await {
                        Ok(current) => generation = current,
                        Err(_) => return,
                    }
                }
            }
            Step::Send(request) => {
                let Ok(sent) = shared.send(request).await else {
                    return;
                };
                let head = rules_head(&sent);
                lock(&shared.rules).listen_head(&mut listening, sent.status().as_u16(), &head);
                response = Some(sent);
                drop(opened.take());
            }
            Step::Authorize { status, challenge } => {
                let again = authorize(shared, None, &mut attempt, generation, status, challenge);
                let again = matches!(again.await, Ok(true));
                lock(&shared.rules).listen_authorized(&mut listening, again);
            }
            Step::ReadStream => {
                // Connected: the next reconnection may authorize again.
                attempt = mcp_proto::oauth::Attempt::default();
                let n = match response.as_mut() {
                    Some(response) => response.body_mut().read(&mut buf).await.unwrap_or_default(),
                    None => 0,
                };
                let mut rules = lock(&shared.rules);
                if n == 0 {
                    rules.listen_end(&mut listening);
                } else {
                    rules.listen_data(&mut listening, &buf[..n]);
                }
            }
            Step::Deliver(message) => shared.deliver(Inbound::Message(message)).await,
            Step::Dropped(HttpError::TooLarge { len, limit }) => {
                shared
                    .deliver(Inbound::Oversized {
                        len,
                        limit,
                        id: None,
                    })
                    .await;
            }
            Step::Wait(after) => {
                smol::Timer::after(after).await;
                if shared.closed.load(Ordering::SeqCst) {
                    return;
                }
            }
            Step::Dropped(_) | Step::ReadBody { .. } | Step::Done | Step::Failed(_) => return,
        }
    }
}

/// A message read from `exchange`'s response, for the session with the request it answers.
fn reply(exchange: &Exchange, message: Vec<u8>) -> Inbound {
    match exchange.wire() {
        Some(wire) => Inbound::MessageFor { wire, message },
        None => Inbound::Message(message),
    }
}

/// How long [`sending_failed`] tries to connect, to learn why curl could not.
const CONNECT_PROBE: Duration = Duration::from_secs(1);

/// Why isahc could not send a request to `url`, in words — never curl's codes (`[7] Could not
/// connect to server`) nor isahc's names (`ConnectionFailed`): `could not connect to
/// 127.0.0.1:9: connection refused`, `could not resolve the host name nonexistent.invalid`,
/// `timed out`, `TLS: …`. The isahc error (and curl's under it) is the `source()`.
///
/// isahc keeps neither curl's text nor the system's error for a failed connection, so for one
/// the system is asked directly: one TCP connection to the URL's host and port (not when a proxy
/// is configured in the environment, which curl would have used), for at most [`CONNECT_PROBE`],
/// whose error (refused, unreachable, timed out) is the reason given; the I/O error's kind is
/// that error's kind.
pub(crate) async fn sending_failed(e: isahc::Error, url: &str) -> std::io::Error {
    let parsed = url::Url::parse(url).ok();
    let host = parsed
        .as_ref()
        .and_then(|u| u.host_str())
        .map(str::to_owned);
    let port = parsed.as_ref().and_then(|u| u.port_or_known_default());
    let why = match (&host, port) {
        (Some(host), Some(port))
            if e.kind() == isahc::error::ErrorKind::ConnectionFailed && !proxy_in_environment() =>
        {
            connect_error(host, port).await
        }
        _ => None,
    };
    in_words(e, host.as_deref(), port, why)
}

/// A request that isahc could not make, said in words ([`sending_failed`]) with its method and URL
/// (redacted).
async fn send_error(
    e: isahc::Error,
    method: mcp_proto::http::Method,
    uri: isahc::http::Uri,
) -> Error {
    let url = uri.to_string();
    Error::io(
        format!("{} {}", method.as_str(), redact_url(&url)),
        sending_failed(e, &url).await,
    )
}

/// A failed read of a response body: when isahc's error is under it, said in words as
/// [`sending_failed`] does (the I/O error is kept otherwise).
fn reading_failed(e: std::io::Error) -> std::io::Error {
    if !e.get_ref().is_some_and(|inner| inner.is::<isahc::Error>()) {
        return e;
    }
    let kind = e.kind();
    match e.into_inner().map(|inner| inner.downcast::<isahc::Error>()) {
        Some(Ok(isahc)) => in_words(*isahc, None, None, None),
        Some(Err(other)) => std::io::Error::new(kind, other),
        None => std::io::Error::from(kind),
    }
}

/// An isahc error in words (see [`sending_failed`]), for `host` and `port` when known; `why`:
/// why the connection failed, as the system said.
fn in_words(
    e: isahc::Error,
    host: Option<&str>,
    port: Option<u16>,
    why: Option<std::io::ErrorKind>,
) -> std::io::Error {
    use isahc::error::ErrorKind as K;
    use std::io::ErrorKind as Io;
    let server = host.unwrap_or("the server");
    let (kind, words) = match e.kind() {
        K::ConnectionFailed => {
            let at = match (host, port) {
                (Some(host), Some(port)) => format!(" to {host}:{port}"),
                (Some(host), None) => format!(" to {host}"),
                _ => String::new(),
            };
            match why {
                Some(why) => (why, format!("could not connect{at}: {why}")),
                None => (Io::Other, format!("could not connect{at}")),
            }
        }
        K::NameResolution => (
            Io::Other,
            match host {
                Some(host) => format!("could not resolve the host name {host}"),
                None => "could not resolve the host name".to_owned(),
            },
        ),
        K::Timeout => (Io::TimedOut, "timed out".to_owned()),
        K::BadServerCertificate => (
            Io::Other,
            format!("TLS: the certificate of {server} could not be verified"),
        ),
        K::BadClientCertificate => (
            Io::Other,
            "TLS: the client certificate could not be used".to_owned(),
        ),
        K::InvalidTlsConfiguration => (
            Io::Other,
            "TLS: the TLS settings (certificate authorities) could not be used".to_owned(),
        ),
        K::TlsEngine => (Io::Other, "TLS: the TLS engine failed".to_owned()),
        K::ProtocolViolation => (
            Io::InvalidData,
            format!(
                "{server} broke the HTTP protocol (or closed the connection without an answer)"
            ),
        ),
        K::Io => (
            Io::ConnectionAborted,
            format!("the connection to {server} failed while sending or receiving"),
        ),
        K::InvalidContentEncoding => (
            Io::InvalidData,
            "the answer's content encoding is unknown or malformed".to_owned(),
        ),
        K::TooManyRedirects => (Io::Other, "too many redirects".to_owned()),
        K::InvalidRequest => (Io::InvalidInput, "the request could not be made".to_owned()),
        K::ClientInitialization => (Io::Other, "the HTTP client could not start".to_owned()),
        _ => (Io::Other, "the request failed".to_owned()),
    };
    std::io::Error::new(
        kind,
        crate::error::Said {
            words,
            cause: Box::new(e),
        },
    )
}

/// Whether a request failed before any byte of it could reach the server: no connection (refused,
/// unreachable, timed out connecting), no such host, or a TLS handshake that cannot succeed. Any
/// other request to the same URL fails the same way, whatever it carries.
fn could_not_connect(e: &Error) -> bool {
    use isahc::error::ErrorKind as K;
    let Error::Io { source, .. } = e else {
        return false;
    };
    let isahc = source
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<crate::error::Said>())
        .and_then(|said| said.cause.downcast_ref::<isahc::Error>());
    isahc.is_some_and(|e| {
        matches!(
            e.kind(),
            K::ConnectionFailed
                | K::NameResolution
                | K::BadServerCertificate
                | K::BadClientCertificate
                | K::InvalidTlsConfiguration
        )
    })
}

/// Whether curl would use a proxy from the environment (`http_proxy`, `HTTPS_PROXY`,
/// `ALL_PROXY`…), so that a failed connection may be the proxy's.
fn proxy_in_environment() -> bool {
    ["http_proxy", "https_proxy", "all_proxy"]
        .iter()
        .any(|name| {
            [name.to_string(), name.to_ascii_uppercase()]
                .iter()
                .any(|n| std::env::var_os(n).is_some_and(|v| !v.is_empty()))
        })
}

/// Why a TCP connection to `host:port` fails, as the system says (`connection refused`, `host
/// unreachable`, `timed out` after [`CONNECT_PROBE`]); `None` when it connects now, or the
/// system gives no reason.
async fn connect_error(host: &str, port: u16) -> Option<std::io::ErrorKind> {
    let connect = async {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match smol::net::TcpStream::connect((host, port)).await {
            Ok(_) => None,
            Err(e) => Some(e.kind()),
        }
    };
    let kind = smol::future::or(connect, async {
        smol::Timer::after(CONNECT_PROBE).await;
        Some(std::io::ErrorKind::TimedOut)
    })
    .await?;
    (kind != std::io::ErrorKind::Other).then_some(kind)
}

/// The isahc request for one the core built (checked first with [`HttpRequest::check`]: isahc
/// panics on a header value that is not visible ASCII).
///
/// Redirects are the rules' to follow ([`Step::Send`] again), never the HTTP library's, even
/// with a client of the application's that would follow them: `own_policy` puts
/// [`RedirectPolicy::None`] on the request itself, whose policy wins over the client's. The
/// transport's own client follows none already, and a request without a policy of its own
/// costs isahc no per-request configuration. The OAuth flow always sets it.
pub(crate) fn isahc_request(
    request: HttpRequest,
    own_policy: bool,
    uris: Option<&UriCache>,
) -> Result<isahc::Request<AsyncBody>, isahc::http::Error> {
    use isahc::http::header::{HeaderName, HeaderValue};
    use std::borrow::Cow;
    let uri = match uris {
        Some(uris) => uris.uri(request.url)?,
        None => isahc::http::Uri::try_from(request.url)?,
    };
    let mut builder = isahc::Request::builder()
        .method(request.method.as_str())
        .uri(uri);
    if own_policy {
        builder = builder.redirect_policy(RedirectPolicy::None);
    }
    let mut built = builder.body(AsyncBody::from(request.body.unwrap_or_default()))?;
    // Into the built request's map, not through the builder: each `Builder::header` moves the
    // whole builder (a third of the request's cost in callgrind).
    let headers = built.headers_mut();
    headers.reserve(request.headers.len());
    for (name, value) in request.headers {
        let name = match known_header(&name) {
            Some(known) => known,
            None => HeaderName::from_bytes(name.as_bytes())?,
        };
        // The protocol's constants are taken as they are, the others without a copy; both
        // were checked (`HttpRequest::check`).
        let value = match value {
            Cow::Borrowed(v) => HeaderValue::from_static(v),
            Cow::Owned(v) => HeaderValue::try_from(v)?,
        };
        headers.append(name, value);
    }
    Ok(built)
}

/// The last URL a request went to, parsed: a session's requests all go to one (~900
/// instructions a request to parse it again; a clone of the parsed one shares its text).
#[derive(Default)]
pub(crate) struct UriCache(Mutex<Option<(String, isahc::http::Uri)>>);

impl UriCache {
    /// `url`, parsed (or the parsed copy of the last one, when it is the same).
    fn uri(&self, url: String) -> Result<isahc::http::Uri, isahc::http::uri::InvalidUri> {
        let mut last = lock(&self.0);
        if let Some((text, uri)) = last.as_ref() {
            if *text == url {
                return Ok(uri.clone());
            }
        }
        let uri = isahc::http::Uri::try_from(url.as_str())?;
        *last = Some((url, uri.clone()));
        Ok(uri)
    }
}

/// The header names the rules write, made once: the http crate copies (and lower-cases) any
/// other name it is given, for each request.
fn known_header(name: &str) -> Option<isahc::http::header::HeaderName> {
    use isahc::http::header::{self, HeaderName};
    use mcp_proto::http::{METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, SESSION_ID_HEADER};
    static KNOWN: [(&str, HeaderName); 9] = [
        ("Content-Type", header::CONTENT_TYPE),
        ("Accept", header::ACCEPT),
        (SESSION_ID_HEADER, HeaderName::from_static("mcp-session-id")),
        (
            PROTOCOL_VERSION_HEADER,
            HeaderName::from_static("mcp-protocol-version"),
        ),
        (METHOD_HEADER, HeaderName::from_static("mcp-method")),
        (NAME_HEADER, HeaderName::from_static("mcp-name")),
        ("Authorization", header::AUTHORIZATION),
        ("Last-Event-ID", HeaderName::from_static("last-event-id")),
        ("DPoP", HeaderName::from_static("dpop")),
    ];
    KNOWN
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, header)| header.clone())
}

/// The response headers the rules read ([`RESPONSE_HEADERS_READ`](mcp_proto::http::RESPONSE_HEADERS_READ)):
/// the others (a date, the transfer encoding, a server's own) are not copied for each response.
fn rules_head(response: &Response<AsyncBody>) -> Vec<(&str, &str)> {
    // Lent, not copied: the rules read them before the response moves on (two strings a header
    // a response saved).
    response
        .headers()
        .iter()
        .filter(|(k, _)| mcp_proto::http::rules_read_header(k.as_str()))
        .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
        .collect()
}

/// The response's headers as pairs, every one (the OAuth flow's requests; values that are not
/// visible ASCII are skipped).
#[cfg(feature = "oauth")]
pub(crate) fn head(response: &Response<AsyncBody>) -> Vec<(String, String)> {
    response
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

/// Reads a whole body of at most `limit` bytes.
///
/// A body whose length is known (`Content-Length`) and within the limit is read to that length
/// and no further: its end is not waited for (isahc's agent thread ends the body only after the
/// transfer, one more hand-off between threads), and a small one is read into a buffer sized
/// once (a large one grows as it arrives, not at the length the server claims).
async fn read_limited(body: &mut AsyncBody, limit: usize) -> Result<Vec<u8>, Error> {
    let known = body
        .len()
        .and_then(|len| usize::try_from(len).ok())
        .filter(|len| *len <= limit);
    let mut out = Vec::with_capacity(known.map_or(0, |len| len.min(64 * 1024)));
    // One byte past the limit tells an oversized body; at `usize::MAX` nothing is past it.
    let take = match known {
        Some(len) => len as u64,
        None => (limit as u64).saturating_add(1),
    };
    let read = body.take(take).read_to_end(&mut out).await;
    read.map_err(|e| Error::io("reading a response body", reading_failed(e)))?;
    if known.is_some_and(|len| out.len() < len) {
        return Err(Error::io(
            "reading a response body",
            std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
        ));
    }
    if out.len() > limit {
        return Err(Error::Request(RequestError::TooLarge {
            len: out.len() as u64,
            limit,
        }));
    }
    Ok(out)
}

/// The start of an error response's body, on one line, for the error message.
async fn error_excerpt(body: &mut AsyncBody) -> String {
    let mut out = Vec::new();
    let _ = body.take(512).read_to_end(&mut out).await;
    excerpt(&out)
}

/// The start of a body, on one line, for an error message.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(512)]);
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(200).collect()
}

/// A failed response as the driver's error, with the start of its body for a bad status.
async fn http_failure(e: HttpError, body: &mut AsyncBody) -> Error {
    let (status, url) = match e {
        HttpError::Status { status, url } => (status, url),
        // Until the OAuth flow answers them, 401 and 403 reach the caller as their status.
        #[cfg(feature = "oauth")]
        HttpError::Unauthorized { url, .. } => (401, url),
        HttpError::Forbidden { url, .. } => (403, url),
        other => return http_error(other),
    };
    Error::Http {
        status,
        url,
        body: error_excerpt(body).await,
    }
}

fn http_error(e: HttpError) -> Error {
    match e {
        HttpError::Status { status, url } => Error::Http {
            status,
            url,
            body: String::new(),
        },
        HttpError::SessionExpired { url } => Error::Http {
            status: 404,
            url,
            body: String::new(),
        },
        #[cfg(feature = "oauth")]
        HttpError::Unauthorized { url, .. } => Error::Http {
            status: 401,
            url,
            body: String::new(),
        },
        #[cfg(not(feature = "oauth"))]
        HttpError::Unauthorized { url, .. } => Error::OAuthUnavailable { url },
        HttpError::Forbidden { url, .. } => Error::Http {
            status: 403,
            url,
            body: String::new(),
        },
        other => Error::HttpProtocol(other),
    }
}
