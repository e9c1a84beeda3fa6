//! What the session hands its transport: one outbound message and what it is. A leaf (it depends
//! on the JSON-RPC ids only), so that the HTTP rules read it without depending on the session.

use crate::jsonrpc::RequestId;

/// What one outbound message is, so that a transport can treat it right (HTTP expects an answer
/// to a request, and 202 to anything else).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransmitKind {
    /// A request; its answer comes back as an [`Event::Response`](super::Event::Response) (or [`Event::Ready`](super::Event::Ready)).
    Request {
        /// Its handle: the id its command returned. A request sent again (an input-required
        /// round, a version retry, a renewed session) keeps it.
        id: RequestId,
        /// The JSON-RPC id it carries on the wire this time (equal to `id` the first time).
        wire: RequestId,
        /// Its method (borrowed for the typed requests: their names are constants).
        method: std::borrow::Cow<'static, str>,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: std::borrow::Cow<'static, str>,
    },
    /// `notifications/cancelled` for request `id`: a transport may also abort that request's
    /// exchange (over HTTP, its response stream).
    Cancellation {
        /// The request given up on.
        id: RequestId,
    },
    /// An answer to a server request (a ping reply, a -32601 rejection).
    Response,
    /// Give up on request `id` by ending its exchange, with nothing to send (the payload is
    /// empty): over HTTP in the modern era, closing the response stream is the cancellation.
    ///
    /// > "on Streamable HTTP, closing the SSE response stream is itself the cancellation signal
    /// > and no `notifications/cancelled` message is expected" — MCP 2026-07-28, Streamable HTTP
    Abort {
        /// The request given up on.
        id: RequestId,
    },
}

/// One outbound message: compact JSON, without a line end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The serialized JSON-RPC message. It contains no newline; over stdio, write it and then `\n`.
    pub payload: Vec<u8>,
    /// What it is.
    pub kind: TransmitKind,
    /// HTTP headers that mirror the message (modern era over HTTP: `MCP-Protocol-Version`,
    /// `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`); empty otherwise.
    pub headers: Vec<(crate::http::HeaderText, crate::http::HeaderText)>,
    /// Whether it is a modern-era message (2026-07-28): over HTTP its response stream cannot
    /// be resumed, and no session id goes with it.
    pub modern: bool,
}
