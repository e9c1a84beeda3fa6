//! One connection to a [`MockServer`](super::MockServer), as a [`Transport`]: what the client
//! sends is answered at once into a queue the client reads; a call whose handler waits is kept
//! as a future and polled again, in the client's next read, once it is woken.

use super::{serve, Shared, ToolReply, MAX_QUEUED};
use crate::transport::{BoxFuture, Inbound, Transmit, TransmitKind, Transport};
use crate::Error;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

/// A connection to a [`MockServer`](super::MockServer): a [`Transport`] for
/// [`Client::new`](crate::Client::new) or [`Client::with_config`](crate::Client::with_config),
/// made by [`MockServer::transport`](super::MockServer::transport).
pub struct MockTransport {
    conn: Arc<Conn>,
}

/// The connection's state, shared with the server's handle (for its notifications).
pub(super) struct Conn {
    /// Its number, from 1, in the server's record.
    pub(super) number: u64,
    pub(super) shared: Arc<Shared>,
    state: Mutex<ConnState>,
    /// Rung whenever the client may have something to read: what `ready` waits for.
    arrived: Arc<event_listener::Event>,
}

#[derive(Default)]
pub(super) struct ConnState {
    /// What the client has not read yet.
    outbox: VecDeque<Inbound>,
    /// Closed, and why (`Some(None)`: closed by the client).
    closed: Option<Option<Error>>,
    /// The calls whose handlers have not finished.
    running: Vec<Running>,
    /// The era this connection speaks, once it opened.
    pub(super) era: Option<mcp_proto::Era>,
    /// Legacy: `notifications/initialized` came, so notifications may be sent.
    pub(super) initialized: bool,
    /// Modern: the open `subscriptions/listen` requests: wire id, filter.
    pub(super) listens: Vec<(Value, Value)>,
}

/// A call in flight.
struct Running {
    /// Its JSON-RPC id.
    id: Value,
    /// Answered in the modern era.
    modern: bool,
    /// Its handler; `None` while it is being polled.
    future: Option<BoxFuture<'static, ToolReply>>,
    wake: Arc<Woken>,
}

/// A call's waker: marks it for polling and wakes whoever waits on the transport.
struct Woken {
    woken: AtomicBool,
    arrived: Arc<event_listener::Event>,
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.arrived.notify(usize::MAX);
    }
}

impl MockTransport {
    pub(super) fn new(shared: Arc<Shared>) -> MockTransport {
        let number = {
            let mut server = crate::sync::lock(&shared.server);
            let n = server.next_connection;
            server.next_connection += 1;
            n
        };
        let conn = Arc::new(Conn {
            number,
            shared: shared.clone(),
            state: Mutex::new(ConnState::default()),
            arrived: Arc::new(event_listener::Event::new()),
        });
        crate::sync::lock(&shared.server)
            .connections
            .push(Arc::downgrade(&conn));
        MockTransport { conn }
    }

    /// This connection's number in the server's record ([`Received::connection`](super::Received)).
    pub fn connection(&self) -> u64 {
        self.conn.number
    }

    /// Drops the connection now, as a server that goes away: what the client waits for fails
    /// with [`Error::Io`] (connection reset), and so does what it sends later.
    pub fn drop_connection(&self) {
        self.conn.drop_connection();
    }
}

impl Conn {
    pub(super) fn lock(&self) -> MutexGuard<'_, ConnState> {
        crate::sync::lock(&self.state)
    }

    /// Queues a message for the client. A notification past [`MAX_QUEUED`] is dropped; returns
    /// whether it was queued.
    pub(super) fn push(&self, message: Value, notification: bool) -> bool {
        {
            let mut st = self.lock();
            if st.closed.is_some() || (notification && st.outbox.len() >= MAX_QUEUED) {
                return false;
            }
            st.outbox
                .push_back(Inbound::Message(message.to_string().into_bytes()));
        }
        self.arrived.notify(usize::MAX);
        true
    }

    /// Starts a call: its future is polled now, and again whenever it is woken.
    pub(super) fn start(&self, id: Value, modern: bool, future: BoxFuture<'static, ToolReply>) {
        let wake = Arc::new(Woken {
            woken: AtomicBool::new(true),
            arrived: self.arrived.clone(),
        });
        self.lock().running.push(Running {
            id,
            modern,
            future: Some(future),
            wake,
        });
        self.poll_woken();
    }

    /// Drops the call with JSON-RPC id `id` (its handler stops) and the listen it may be.
    pub(super) fn cancel(&self, id: &Value) {
        let mut st = self.lock();
        st.running.retain(|r| r.id != *id);
        st.listens.retain(|(wire, _)| wire != id);
    }

    /// Polls the calls that were woken, outside the connection's lock (a handler may use the
    /// server's handle), and queues the answers of those that finished.
    fn poll_woken(&self) {
        let woken: Vec<(Value, BoxFuture<'static, ToolReply>, Arc<Woken>)> = {
            let mut st = self.lock();
            st.running
                .iter_mut()
                .filter(|r| r.wake.woken.swap(false, Ordering::SeqCst))
                .filter_map(|r| Some((r.id.clone(), r.future.take()?, r.wake.clone())))
                .collect()
        };
        for (id, mut future, wake) in woken {
            let waker = Waker::from(wake);
            let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                future.as_mut().poll(&mut Context::from_waker(&waker))
            }));
            let mut st = self.lock();
            // Cancelled (or the connection closed) while it ran: it is dropped.
            let Some(at) = st.running.iter().position(|r| r.id == id) else {
                continue;
            };
            let reply = match polled {
                Ok(Poll::Pending) => {
                    st.running[at].future = Some(future);
                    continue;
                }
                Ok(Poll::Ready(reply)) => reply,
                Err(_) => ToolReply::protocol_error(
                    mcp_proto::jsonrpc::INTERNAL_ERROR,
                    "the mock tool's handler panicked",
                ),
            };
            let running = st.running.remove(at);
            drop(st);
            let answer = serve::tool_answer(&self.shared, &running.id, running.modern, reply);
            self.push(answer, false);
        }
    }

    /// Whether the client has something to read, or a call to poll.
    fn has_something(&self) -> bool {
        let st = self.lock();
        !st.outbox.is_empty()
            || st.closed.is_some()
            || st
                .running
                .iter()
                .any(|r| r.wake.woken.load(Ordering::SeqCst))
    }

    /// Ends the connection: the calls in flight are dropped, and the client reads `reason` after
    /// what it has not read yet.
    fn close(&self, reason: Option<Error>) {
        let running = {
            let mut st = self.lock();
            if st.closed.is_some() {
                return;
            }
            st.closed = Some(reason);
            st.listens.clear();
            std::mem::take(&mut st.running)
        };
        // The handlers are dropped outside the lock.
        drop(running);
        self.arrived.notify(usize::MAX);
    }

    pub(super) fn drop_connection(&self) {
        self.close(Some(Error::Io {
            context: "the mock server dropped the connection".into(),
            source: Arc::new(std::io::ErrorKind::ConnectionReset.into()),
        }));
    }

    /// Tells the client that list `kind` (`tools`, `resources`, `prompts`) changed, in its era;
    /// returns whether it was sent.
    pub(super) fn notify_list_changed(&self, kind: &str) -> bool {
        let method = format!("notifications/{kind}/list_changed");
        let filter_key = format!("{kind}ListChanged");
        let (era, initialized, listens) = {
            let st = self.lock();
            (st.era, st.initialized, st.listens.clone())
        };
        match era {
            Some(mcp_proto::Era::Legacy) if initialized => self.push(
                serde_json::json!({"jsonrpc": "2.0", "method": method}),
                true,
            ),
            Some(mcp_proto::Era::Modern) => {
                let mut sent = false;
                for (wire, filter) in listens {
                    if filter[&filter_key] == true {
                        sent |= self.push(serve::on_listen(&method, &wire), true);
                    }
                }
                sent
            }
            _ => false,
        }
    }
}

impl Transport for MockTransport {
    fn send(&self, message: Transmit) -> Result<(), Error> {
        if let Some(reason) = &self.conn.lock().closed {
            return Err(reason.clone().unwrap_or(Error::Closed));
        }
        match message.kind {
            // Nothing to send: an HTTP exchange's end, which this transport does not have.
            TransmitKind::Abort { .. } => Ok(()),
            _ => {
                serve::receive(&self.conn, &message.payload);
                Ok(())
            }
        }
    }

    fn try_recv(&self) -> Option<Inbound> {
        self.conn.poll_woken();
        let mut st = self.conn.lock();
        match st.outbox.pop_front() {
            Some(item) => Some(item),
            None => st.closed.clone().map(Inbound::Closed),
        }
    }

    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let arrived = self.conn.arrived.listen();
            if !self.conn.has_something() {
                arrived.await;
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        self.conn.close(None);
        Box::pin(std::future::ready(Ok(())))
    }
}

impl std::fmt::Debug for MockTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockTransport")
            .field("connection", &self.conn.number)
            .finish_non_exhaustive()
    }
}
