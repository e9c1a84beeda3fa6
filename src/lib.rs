//! # mcp-proto: a sans-IO Model Context Protocol client
//!
//! The protocol logic of an MCP client with no I/O, no threads and no clock of its own: bytes and
//! time go in, frames to send and events come out. Drivers (the `mcp-client` crate) move the bytes
//! over a child process's pipes or HTTP; this crate decides everything else, so all of it can be
//! tested and fuzzed without processes or sockets.
//!
//! The modules read like the protocol's chapters:
//! - [`framing`]: newline-delimited messages (stdio), bounded and linear
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope
//! - [`text`]: text that is not what JSON text must be (invalid UTF-8, lone surrogate escapes),
//!   mended so that its message can still be read
//! - [`types`]: the MCP schema types a tool client uses
//! - [`session`]: the [`Session`] state machine: handshake, requests, timeouts, cancellation
//! - [`sse`]: the server-sent events decoder (Streamable HTTP responses)
//! - [`http`]: the Streamable HTTP transport's rules: requests, responses, sessions, resumption
//! - [`headers`]: the request-metadata headers of Streamable HTTP (2026-07-28): `Mcp-Method`,
//!   `Mcp-Name`, `x-mcp-header` parameters, the Base64 value encoding
//! - [`bridge`]: tools as an agent registers them, results as a model reads them
//!
//! See [`Session`] for the driving loop.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bridge;
pub mod error;
pub mod framing;
pub mod headers;
pub mod http;
pub mod jsonrpc;
pub mod methods;
pub mod pagination;
pub mod session;
pub mod sse;
pub mod text;
pub mod types;

pub use bridge::{tool_output, ToolDefinition, ToolOutput};
pub use error::{RequestError, SessionError, UsageError, Warning};
pub use jsonrpc::{RequestId, RpcError};
pub use pagination::{Pagination, PaginationError};
pub use session::{
    CallTool, Casualties, Config, Discover, Era, EraChoice, Event, ListTools, Method, Reply,
    Request, Session, State, Stats, TimerFor, Transmit, TransmitKind, TransportKind,
};
pub use types::{
    CallToolResult, ContentBlock, DiscoverResult, Implementation, InitializeResult,
    ListToolsResult, ResultType, Tool,
};
