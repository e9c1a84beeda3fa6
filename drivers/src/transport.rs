//! The boundary between the client and a way of moving bytes.

use crate::Error;
use mcp_proto::Transmit;
use std::future::Future;
use std::pin::Pin;

/// A boxed future, as the [`Transport`] methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a transport received.
#[derive(Debug)]
#[non_exhaustive]
pub enum Inbound {
    /// A piece of a newline-delimited byte stream (stdio), cut anywhere.
    Bytes(Vec<u8>),
    /// One whole JSON-RPC message (an HTTP body, an SSE event's data).
    Message(Vec<u8>),
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
    /// Sending a request failed at the transport level (an HTTP status, a refused connection):
    /// that request fails with `error`.
    Failed {
        /// The request that failed.
        id: mcp_proto::RequestId,
        /// Why.
        error: Error,
    },
}

/// A way to reach an MCP server: send one message, read what arrives, close.
///
/// The client shares a transport between the task that reads and the callers that write, so the
/// methods take `&self`. `send` must not wait for the peer: it queues the message (a transport
/// typically runs its own writer task). `recv` must be cancel-safe: when its future is dropped
/// before it completes, nothing received may be lost.
pub trait Transport: Send + Sync + 'static {
    /// Queues one outbound message.
    fn send(&self, message: Transmit) -> Result<(), Error>;
    /// The next thing received. After [`Inbound::Closed`] it keeps returning `Closed`.
    fn recv(&self) -> BoxFuture<'_, Inbound>;
    /// Ends the connection properly (for a child process: close its stdin, wait, signal, reap).
    /// Messages already queued are sent first.
    fn close(&self) -> BoxFuture<'_, Result<(), Error>>;
}
