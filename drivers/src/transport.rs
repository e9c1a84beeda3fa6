//! The boundary between the client and a way of moving bytes: everything a transport author needs
//! ([`Transport`], what it receives as [`Inbound`], what it sends as [`Transmit`], [`BoxFuture`]).
//! The stdio and HTTP transports are built on it; an in-memory one for tests is a page.

use crate::Error;
pub use mcp_proto::{Transmit, TransmitKind, TransportKind};
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, as the [`Transport`] methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a transport received.
#[derive(Debug)]
#[non_exhaustive]
pub enum Inbound {
    /// A piece of a newline-delimited byte stream (stdio), cut anywhere (the stdio transport cuts
    /// after a line end where it can: see [`crate::stdio`]).
    Bytes(Chunk),
    /// One whole JSON-RPC message (an HTTP body, an SSE event's data).
    Message(Vec<u8>),
    /// One whole JSON-RPC message read from the response to the request that went out with wire
    /// id `wire` (its HTTP body, an event of its stream): as [`Message`](Self::Message), but what
    /// answers no request by its own id is known to be about that one
    /// ([`mcp_proto::Session::handle_message_for`]): a JSON-RPC error without an id fails it.
    MessageFor {
        /// The JSON-RPC id the request carried ([`mcp_proto::TransmitKind::Request::wire`]).
        wire: mcp_proto::RequestId,
        /// The message.
        message: Vec<u8>,
    },
    /// The peer is gone; nothing more will arrive. The error says why, when known (for instance
    /// [`Error::ServerExited`] with the exit status and the stderr tail).
    Closed(Option<Error>),
    /// The transport's session ended (HTTP 404 to a message carrying its id): the client restarts
    /// the session ([`mcp_proto::Session::restart`]) and request `id` is sent again in the new
    /// one; if it cannot, request `id` fails with `error` (with no `id`, the client closes with
    /// `error`).
    SessionExpired {
        /// The request that met the expired session; `None` when it was a notification or a
        /// response.
        id: Option<mcp_proto::RequestId>,
        /// The error to report if the session cannot be restarted.
        error: Error,
    },
    /// A message over the transport's limit was discarded (an HTTP body, an SSE event), on the
    /// response to request `id` when known: the session applies its rule for oversized messages
    /// ([`mcp_proto::Session::handle_oversized`]).
    Oversized {
        /// Its length in bytes; `None` when it was not read to its end (an SSE event past the
        /// limit is not buffered).
        len: Option<u64>,
        /// The transport's limit.
        limit: usize,
        /// The request whose response carried it.
        id: Option<mcp_proto::RequestId>,
    },
    /// Request `id` waits while the transport authorizes (an OAuth flow runs, or another
    /// request's flow is waited for, before it is sent again): its timeout is suspended
    /// ([`mcp_proto::Session::handle_authorizing`]) until [`Authorized`](Self::Authorized) comes
    /// for it, which the transport sends whatever the flow's outcome (unless the request ended
    /// first). The flow is bounded on its own.
    Authorizing {
        /// The request.
        id: mcp_proto::RequestId,
    },
    /// The authorization request `id` waited for ended: its timeout starts again, whole
    /// ([`mcp_proto::Session::handle_authorized`]). A failed flow follows with
    /// [`Failed`](Self::Failed).
    Authorized {
        /// The request.
        id: mcp_proto::RequestId,
    },
    /// A cancellation, or an answer to a server request, could not be delivered (no answer
    /// within its deadline, a failure status, no authorization): the client warns
    /// ([`mcp_proto::Warning::Undelivered`]), and request `request`, whose response stream
    /// carried the server request that went unanswered, fails with `error` rather than wait for
    /// its timeout.
    Undelivered {
        /// What was not delivered, for the warning.
        what: String,
        /// The request that fails because of it, when one does.
        request: Option<mcp_proto::RequestId>,
        /// Why.
        error: Error,
    },
    /// Sending a request failed at the transport level (an HTTP status, a refused connection):
    /// that request fails with `error`.
    Failed {
        /// The request that failed.
        id: mcp_proto::RequestId,
        /// Why.
        error: Error,
    },
    /// Request `id` cannot reach the server, and no other request could: its authorization was
    /// refused or could not be obtained (the HTTP transport's OAuth flow failed), or no
    /// connection to the server could be made (refused, no such host, a failed TLS handshake). It fails with
    /// `error` as for [`Failed`](Self::Failed), except that the session applies its rule for
    /// such failures ([`mcp_proto::Session::handle_unreachable`]: a probe that meets one is no
    /// sign of a legacy server, so the opening fails rather than send `initialize` into the same
    /// refusal).
    Unreachable {
        /// The request that failed.
        id: mcp_proto::RequestId,
        /// Why.
        error: Error,
    },
}

/// Bytes a transport read from a stream, for [`Inbound::Bytes`]; derefs to `[u8]`.
///
/// Made from a `Vec<u8>` (`Chunk::from(vec)`), or [lent](Self::lent) out of a transport's own
/// read buffer: dropping the chunk then hands the allocation back to the transport, which reads
/// the next bytes into it. A transport that reads a 16 MiB line into one buffer hands that buffer
/// on whole, and gets it back for the next line, instead of allocating and freeing a buffer per
/// read (whose scattered small allocations fragment the heap between large results).
pub struct Chunk {
    bytes: Vec<u8>,
    home: Option<Home>,
}

/// Where a lent [`Chunk`]'s allocation goes when the chunk is dropped.
pub type Home = Arc<dyn Fn(Vec<u8>) + Send + Sync>;

impl Chunk {
    /// `bytes`, whose allocation is given to `home` when the chunk is dropped.
    pub fn lent(bytes: Vec<u8>, home: Home) -> Chunk {
        Chunk {
            bytes,
            home: Some(home),
        }
    }
}

impl From<Vec<u8>> for Chunk {
    fn from(bytes: Vec<u8>) -> Chunk {
        Chunk { bytes, home: None }
    }
}

impl Deref for Chunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            home(std::mem::take(&mut self.bytes));
        }
    }
}

impl fmt::Debug for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chunk")
            .field("len", &self.bytes.len())
            .field("lent", &self.home.is_some())
            .finish()
    }
}

/// A way to reach an MCP server: send one message, take what arrived, wait for more, close.
///
/// The client has no reader of its own: every caller waiting for an answer (and, between calls, the
/// client's idle reader) waits on [`ready`](Self::ready) and then takes what arrived with
/// [`try_recv`](Self::try_recv) under the client's lock, so the pieces of a byte stream are handled
/// in the order they were read, whoever reads them. Hence the contract:
///
/// - `send` must not wait for the peer: it writes what the peer takes at once and queues the rest
///   (with a cap; past it the transport fails, and `try_recv` says why). A message refused
///   because the queue is full is an [`Error::QueueFull`]: the client then fails that request
///   at once with it (nothing needs to go through `try_recv`). Any other error means the transport is
///   failing, and `try_recv` says why.
/// - `try_recv` never blocks. After it returned [`Inbound::Closed`], it keeps returning `Closed`.
/// - `ready` completes once `try_recv` may have something (a spurious completion is fine). Any
///   number of `ready` futures may be pending at once, each for its own caller, and dropping one
///   loses nothing. A transport may wake only one of them when something arrives (the stdio and
///   HTTP transports wake the one polled last): whoever `ready` completed for then calls
///   `try_recv` (the client always does), and a waiter dropped without being polled again
///   passes its wake-up on. One woken and kept without being polled holds that wake-up until
///   the next, or until the client's idle reader looks
///   ([`CROWD_WATCHDOG_PERIOD`](crate::client::CROWD_WATCHDOG_PERIOD)). Anything that takes
///   time after the peer's end (waiting for a child's exit status, say) runs on the transport's
///   side and its outcome is kept for `try_recv`, so that no caller's cancellation can lose it.
pub trait Transport: Send + Sync + 'static {
    /// Queues one outbound message.
    fn send(&self, message: Transmit) -> Result<(), Error>;
    /// Like [`send`](Self::send), but the transport may keep the message back for a moment, to
    /// write it together with the messages sent after it (several in one system call). Returns
    /// whether it kept it: then the next `send`, or [`flush`](Self::flush), writes it. By default
    /// it sends at once.
    fn send_batched(&self, message: Transmit) -> Result<bool, Error> {
        self.send(message).map(|()| false)
    }
    /// Writes what [`send_batched`](Self::send_batched) kept back (a failure is for `try_recv` to
    /// say). By default nothing is kept.
    fn flush(&self) {}
    /// What has arrived, without waiting; `None` when nothing has.
    fn try_recv(&self) -> Option<Inbound>;
    /// Completes when [`try_recv`](Self::try_recv) may have something.
    fn ready(&self) -> BoxFuture<'_, ()>;
    /// Ends the connection properly (for a child process: close its stdin, wait, signal, reap).
    /// Messages already queued are sent first.
    fn close(&self) -> BoxFuture<'_, Result<(), Error>>;
    /// Whether a waiting caller may call [`try_recv`](Self::try_recv) again and again for a
    /// moment before it waits on [`ready`](Self::ready) ([`ClientConfig::busy_poll`]): true
    /// where each such look is one non-blocking read of what another process writes, which
    /// that process's answer reaches without this one's help (stdio's pipe). Not where the
    /// answer needs work from a thread this one's looks would hold up, or a look costs more
    /// than a system call. By default false.
    ///
    /// [`ClientConfig::busy_poll`]: crate::ClientConfig::busy_poll
    fn busy_poll(&self) -> bool {
        false
    }
    /// What carries the messages: a byte stream (the default) or HTTP, whose modern-era requests
    /// mirror fields into headers ([`mcp_proto::Config::transport`]).
    fn kind(&self) -> mcp_proto::TransportKind {
        mcp_proto::TransportKind::Stream
    }
    /// The session's limit on one message ([`mcp_proto::Config::frame_limit`]), told by the
    /// client when it is made, before anything is sent: a transport that holds a message's bytes
    /// while it waits for the message's end holds no more than this (the session's framer
    /// refuses a longer message anyway). By default ignored.
    fn set_frame_limit(&self, limit: usize) {
        let _ = limit;
    }
    /// The process the server runs in, when the transport started it (stdio: the child's id,
    /// also its process group's). By default `None`.
    fn pid(&self) -> Option<u32> {
        None
    }
    /// The last lines the server wrote to its diagnostic output, when the transport keeps them
    /// (stdio: the child's stderr, bounded). By default `None`.
    fn stderr_tail(&self) -> Option<String> {
        None
    }
    /// Why the server is gone, when the transport knows it before the client has read its end
    /// (stdio: a child that exited, as [`Error::ServerExited`] with its status and stderr tail):
    /// a supervisor ([`ServerSet`](crate::ServerSet)) sees a dead server between calls. By
    /// default `None`.
    fn ended(&self) -> Option<Error> {
        None
    }
    /// How many bytes of what was sent the server has read, when the transport can tell (stdio
    /// on Linux: the bytes written to the child's stdin less those still in the pipe). What
    /// tells a server that ended on what it was sent from one that ended whatever it was sent
    /// (see [`connect_stdio`](crate::connect_stdio)). By default `None`.
    fn input_read(&self) -> Option<u64> {
        None
    }
    /// The transport's session with the server, when it has one (Streamable HTTP: the
    /// `MCP-Session-Id` the server assigned). By default `None`.
    fn session_id(&self) -> Option<String> {
        None
    }
}

/// `Transport` for a pointer to one: every method forwarded to the transport it points to.
macro_rules! forward_transport {
    ($(#[$doc:meta])* $pointer:ident) => {
        $(#[$doc])*
        impl<T: Transport + ?Sized> Transport for $pointer<T> {
            fn send(&self, message: Transmit) -> Result<(), Error> {
                (**self).send(message)
            }
            fn send_batched(&self, message: Transmit) -> Result<bool, Error> {
                (**self).send_batched(message)
            }
            fn flush(&self) {
                (**self).flush()
            }
            fn try_recv(&self) -> Option<Inbound> {
                (**self).try_recv()
            }
            fn ready(&self) -> BoxFuture<'_, ()> {
                (**self).ready()
            }
            fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
                (**self).close()
            }
            fn kind(&self) -> mcp_proto::TransportKind {
                (**self).kind()
            }
            fn busy_poll(&self) -> bool {
                (**self).busy_poll()
            }
            fn pid(&self) -> Option<u32> {
                (**self).pid()
            }
            fn stderr_tail(&self) -> Option<String> {
                (**self).stderr_tail()
            }
            fn ended(&self) -> Option<Error> {
                (**self).ended()
            }
            fn input_read(&self) -> Option<u64> {
                (**self).input_read()
            }
            fn session_id(&self) -> Option<String> {
                (**self).session_id()
            }
            fn set_frame_limit(&self, limit: usize) {
                (**self).set_frame_limit(limit)
            }
        }
    };
}

forward_transport!(
    /// A boxed transport is one (a [`Client`](crate::Client) holds any transport boxed already:
    /// this is for an application that picks one at run time before it makes the client).
    Box
);
forward_transport!(
    /// A shared transport is one: a client made over an `Arc` of a transport leaves its maker a
    /// handle on the concrete type (for what only it tells: a stdio transport's backlog, say).
    Arc
);
