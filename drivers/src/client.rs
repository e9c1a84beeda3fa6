//! The async client: a [`Session`] driven over any [`Transport`].
//!
//! Whoever waits drives: a caller awaiting an answer takes the driver role (one at a time) and runs
//! the loop itself — feed what the transport receives into the session, send what the session
//! queues (ping answers, -32601 rejections, cancellations) at once, fire the session's timer, hand
//! answers to whoever waits for them — until its own answer is in; then another waiting caller
//! takes over. A call therefore costs no hand-off between threads, and the client needs no task of
//! its own. Between calls nothing reads: what the server sends then is handled at the next call.
//! The loop holds no protocol decision.

use crate::transport::{Inbound, Transport};
use crate::Error;
use mcp_proto::{
    CallToolResult, Config, Event, Implementation, InitializeResult, ListToolsResult, Pagination,
    Reply, Request, RequestError, RequestId, Session, Stats, Tool,
};
use serde_json::Value;
use smol::channel::{self, Receiver, Sender};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The session's settings: client identity, message size limit, default request timeout.
    pub session: Config,
    /// The most `tools/list` pages [`Client::list_tools`] follows before failing (default 1000).
    pub max_tool_pages: usize,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            session: Config {
                client_info: Implementation::new("mcp-client", env!("CARGO_PKG_VERSION")),
                ..Config::default()
            },
            max_tool_pages: 1000,
        }
    }
}

/// An MCP client over a transport. Share it (`Arc<Client<T>>`) between tasks and tools: requests
/// may be in flight concurrently, and each has its own timeout.
///
/// Dropping a request's future gives up on it: the server is sent `notifications/cancelled` and
/// the client stays usable.
pub struct Client<T: Transport> {
    shared: Arc<Shared<T>>,
    max_tool_pages: usize,
}

struct Shared<T> {
    transport: T,
    state: Mutex<State>,
    /// The driver role: held by the one caller that reads from the transport.
    driver: smol::lock::Mutex<()>,
    /// Callers waiting for an answer; while any does, [`Client::drive_idle`] keeps out of the way.
    callers: AtomicUsize,
    /// Tells the idle driver that a caller wants the role.
    caller_came: (Sender<()>, Receiver<()>),
    /// Tells the idle driver that no caller waits any more.
    callers_gone: (Sender<()>, Receiver<()>),
}

struct State {
    session: Session,
    waiters: BTreeMap<RequestId, Sender<Result<Reply, Error>>>,
    init_waiter: Option<Sender<Result<(), Error>>>,
    /// Why the connection ended, when the transport said.
    close_reason: Option<Error>,
    tools_changed: u64,
}

impl State {
    fn closed_error(&self) -> Error {
        self.close_reason.clone().unwrap_or(Error::Closed)
    }

    /// Sends what the session queued and hands its events to whoever waits for them.
    fn flush(&mut self, transport: &impl Transport) {
        while let Some(t) = self.session.poll_transmit() {
            // A failed send means the transport is closing; its reader reports why.
            let _ = transport.send(t);
        }
        while let Some(event) = self.session.poll_event() {
            match event {
                Event::Ready => {
                    if let Some(w) = self.init_waiter.take() {
                        let _ = w.try_send(Ok(()));
                    }
                }
                Event::Failed(e) => {
                    let error = match (e, &self.close_reason) {
                        (mcp_proto::SessionError::Closed, Some(reason)) => reason.clone(),
                        (e, _) => Error::Session(e),
                    };
                    // Requests kept across a failed restart end with the same cause.
                    self.close_reason.get_or_insert(error.clone());
                    if let Some(w) = self.init_waiter.take() {
                        let _ = w.try_send(Err(error));
                    }
                }
                Event::Response { id, result } => {
                    if let Some(w) = self.waiters.remove(&id) {
                        let result = result.map_err(|e| match e {
                            RequestError::Closed => self.closed_error(),
                            e => Error::from(e),
                        });
                        let _ = w.try_send(result);
                    }
                }
                Event::ToolsListChanged => self.tools_changed += 1,
                Event::Closed => {
                    let error = self.closed_error();
                    for (_, w) in std::mem::take(&mut self.waiters) {
                        let _ = w.try_send(Err(error.clone()));
                    }
                    if let Some(w) = self.init_waiter.take() {
                        let _ = w.try_send(Err(error));
                    }
                }
                // Tolerated peer misbehaviour; counted in the session's stats.
                Event::Warning(_) => {}
                _ => {}
            }
        }
    }
}

impl<T: Transport> Client<T> {
    /// A client over `transport` with default settings. Call [`initialize`](Self::initialize) first.
    pub fn new(transport: T) -> Self {
        Self::with_config(transport, ClientConfig::default())
    }

    /// A client with these settings.
    pub fn with_config(transport: T, config: ClientConfig) -> Self {
        let shared = Arc::new(Shared {
            transport,
            state: Mutex::new(State {
                session: Session::new(config.session),
                waiters: BTreeMap::new(),
                init_waiter: None,
                close_reason: None,
                tools_changed: 0,
            }),
            driver: smol::lock::Mutex::new(()),
            callers: AtomicUsize::new(0),
            caller_came: channel::bounded(1),
            callers_gone: channel::bounded(1),
        });
        Client {
            shared,
            max_tool_pages: config.max_tool_pages,
        }
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.shared.transport
    }

    /// Performs the handshake. Must come before any other request.
    pub async fn initialize(&self) -> Result<InitializeResult, Error> {
        let rx = {
            let mut st = self.lock();
            st.session.initialize(Instant::now())?;
            let (tx, rx) = channel::bounded(1);
            st.init_waiter = Some(tx);
            st.flush(&self.shared.transport);
            rx
        };
        self.shared.wait(&rx).await?;
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

    /// How many times the server announced that its tool list changed.
    pub fn tools_changed(&self) -> u64 {
        self.lock().tools_changed
    }

    /// Sends any request and waits for its answer (or its timeout, set on the [`Request`]).
    pub async fn request(&self, request: Request) -> Result<Reply, Error> {
        let (id, rx) = {
            let mut st = self.lock();
            let id = match st.session.send(request, Instant::now()) {
                Ok(id) => id,
                // Once the peer is gone, say why rather than "closed".
                Err(mcp_proto::UsageError::Closed) => return Err(st.closed_error()),
                Err(e) => return Err(e.into()),
            };
            let (tx, rx) = channel::bounded(1);
            st.waiters.insert(id, tx);
            st.flush(&self.shared.transport);
            (id, rx)
        };
        let mut guard = CancelOnDrop {
            shared: &self.shared,
            id,
            armed: true,
        };
        let result = self.shared.wait(&rx).await;
        guard.armed = false;
        result
    }

    /// One page of tools.
    pub async fn list_tools_page(&self, cursor: Option<&str>) -> Result<ListToolsResult, Error> {
        match self.request(Request::list_tools(cursor)).await? {
            Reply::Tools(page) => Ok(page),
            other => unreachable!("tools/list decodes as Reply::Tools, got {other:?}"),
        }
    }

    /// All tools, following `nextCursor` across pages.
    ///
    /// > "Cursors are opaque" — a server that repeats a cursor, or sends more than
    /// > [`ClientConfig::max_tool_pages`] pages, ends the listing with [`Error::Pagination`].
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let mut tools = Vec::new();
        let mut guard = Pagination::new(self.max_tool_pages);
        let mut cursor: Option<String> = None;
        loop {
            guard.admit().map_err(pagination)?;
            let page = self.list_tools_page(cursor.as_deref()).await?;
            tools.extend(page.tools);
            match guard.follow(page.next_cursor).map_err(pagination)? {
                None => return Ok(tools),
                next => cursor = next,
            }
        }
    }

    /// Calls a tool with the model's raw arguments (`null` becomes `{}`). A result with
    /// `isError: true` is still `Ok`: see [`CallToolResult::is_error`] and [`CallToolResult::text`].
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call(Request::call_tool(name, arguments)).await
    }

    /// Calls a tool with a request built by [`Request::call_tool`], for its own timeout.
    pub async fn call(&self, request: Request) -> Result<CallToolResult, Error> {
        match self.request(request).await? {
            Reply::ToolCall(result) => Ok(result),
            other => unreachable!("tools/call decodes as Reply::ToolCall, got {other:?}"),
        }
    }

    /// Drives the connection while no call waits: the server's pings and requests are answered at
    /// once, `tools/list_changed` is noted, the server's end is noticed. A call that comes takes the
    /// driver role over (it then costs one hand-off to this task). Returns when the connection is
    /// closed. Optional: without it, what a server sends between calls is handled at the next call.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # fn f(client: Arc<mcp_client::Client<mcp_client::StdioTransport>>) {
    /// let idle = client.clone();
    /// smol::spawn(async move { idle.drive_idle().await }).detach();
    /// # }
    /// ```
    pub async fn drive_idle(&self) {
        let shared = &*self.shared;
        let closed = || lock(&shared.state).session.state() == mcp_proto::State::Closed;
        let callers = || shared.callers.load(Ordering::SeqCst);
        loop {
            // Keep out of the way while any caller waits.
            while callers() > 0 {
                let _ = shared.callers_gone.1.recv().await;
            }
            if closed() {
                return;
            }
            let guard = shared.driver.lock().await;
            // A stale signal must not end the drive at once; a caller that came meanwhile is
            // seen by the count.
            while shared.caller_came.1.try_recv().is_ok() {}
            if callers() == 0 {
                shared
                    .drive(|| callers() > 0 || closed(), Some(&shared.caller_came.1))
                    .await;
            }
            drop(guard);
        }
    }

    /// Closes the session and the transport (for a child process: ends it and reaps it). Pending
    /// requests fail with [`Error::Closed`].
    pub async fn close(&self) -> Result<(), Error> {
        {
            let mut st = self.lock();
            st.session.close();
            st.flush(&self.shared.transport);
        }
        self.shared.transport.close().await
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }
}

fn pagination(e: mcp_proto::PaginationError) -> Error {
    Error::Pagination(e.to_string())
}

/// Counts a caller in [`Shared::wait`] for as long as it waits.
struct CallerPresent<'a, T>(&'a Shared<T>);

impl<T> Drop for CallerPresent<'_, T> {
    fn drop(&mut self) {
        if self.0.callers.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _ = self.0.callers_gone.0.try_send(());
        }
    }
}

/// Cancels request `id` if the future waiting for it is dropped before its answer.
struct CancelOnDrop<'a, T: Transport> {
    shared: &'a Shared<T>,
    id: RequestId,
    armed: bool,
}

impl<T: Transport> Drop for CancelOnDrop<'_, T> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut st = lock(&self.shared.state);
        st.waiters.remove(&self.id);
        if st.session.is_pending(self.id) {
            let _ = st.session.cancel(self.id, "the client stopped waiting");
            st.flush(&self.shared.transport);
        }
    }
}

impl<T: Transport> Shared<T> {
    /// Waits for the answer `rx` will carry, driving the connection while no one else does.
    async fn wait<R>(&self, rx: &Receiver<Result<R, Error>>) -> Result<R, Error> {
        self.callers.fetch_add(1, Ordering::SeqCst);
        let _present = CallerPresent(self);
        let _ = self.caller_came.0.try_send(());
        loop {
            if let Ok(result) = rx.try_recv() {
                return result;
            }
            // Either the answer arrives (someone else drives) or this caller becomes the driver.
            let answer = async { Some(rx.recv().await.unwrap_or(Err(Error::Closed))) };
            let role = async {
                let guard = self.driver.lock().await;
                self.drive_until(rx).await;
                drop(guard);
                None
            };
            if let Some(result) = smol::future::or(answer, role).await {
                return result;
            }
        }
    }

    /// The driver loop until `rx` holds an answer.
    async fn drive_until<R>(&self, rx: &Receiver<Result<R, Error>>) {
        self.drive(|| !rx.is_empty(), None).await;
    }

    /// The driver loop: feed inputs, drain outputs, arm one timer, wait for whichever comes first;
    /// until `done()` holds or (when given) `stop` is signalled.
    async fn drive(&self, done: impl Fn() -> bool, stop: Option<&Receiver<()>>) {
        let mut timer = smol::Timer::never();
        let mut armed: Option<Instant> = None;
        while !done() {
            let deadline = lock(&self.state).session.poll_timeout();
            if deadline != armed {
                match deadline {
                    Some(at) => timer.set_at(at),
                    None => timer = smol::Timer::never(),
                }
                armed = deadline;
            }
            let inbound = async { Some(Some(self.transport.recv().await)) };
            let fired = async {
                (&mut timer).await;
                Some(None)
            };
            let stopped = async {
                match stop {
                    Some(stop) => {
                        let _ = stop.recv().await;
                        None
                    }
                    None => std::future::pending().await,
                }
            };
            let Some(wake) = smol::future::or(inbound, smol::future::or(fired, stopped)).await
            else {
                return;
            };
            let now = Instant::now();
            let mut st = lock(&self.state);
            match wake {
                Some(Inbound::Bytes(bytes)) => st.session.handle_bytes(&bytes, now),
                Some(Inbound::Message(message)) => st.session.handle_message(&message, now),
                Some(Inbound::Failed { id, error }) => {
                    if let Some(w) = st.waiters.remove(&id) {
                        let _ = w.try_send(Err(error.clone()));
                    }
                    if !st.session.is_ready() {
                        if let Some(w) = st.init_waiter.take() {
                            let _ = w.try_send(Err(error));
                        }
                    }
                    st.session.abort(id);
                }
                Some(Inbound::SessionExpired { id, error }) => {
                    if st.session.restart(id, now).is_err() {
                        match id {
                            Some(id) => {
                                if let Some(w) = st.waiters.remove(&id) {
                                    let _ = w.try_send(Err(error));
                                }
                                st.session.abort(id);
                            }
                            // No request to fail: the connection is unusable, so it closes.
                            None => {
                                st.close_reason.get_or_insert(error);
                                st.session.close();
                            }
                        }
                    }
                }
                Some(Inbound::Closed(reason)) => {
                    if st.close_reason.is_none() {
                        st.close_reason = reason;
                    }
                    st.session.handle_eof(now);
                }
                None => {
                    armed = None;
                    st.session.handle_timeout(now);
                }
            }
            st.flush(&self.transport);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
