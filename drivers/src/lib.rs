//! # mcp-client: MCP servers' tools for Rust agents
//!
//! Connects to a Model Context Protocol server — a child process over stdio, or a Streamable HTTP
//! endpoint — discovers its tools and hands each back as an ordinary tool value.
//!
//! This crate only moves bytes, with [smol](https://docs.rs/smol): the protocol lives in the sans-IO
//! core, [`mcp_proto`], re-exported here as [`proto`].
//!
//! ```no_run
//! use mcp_connect::{as_tools, AgentTool, Client, StdioConfig, StdioTransport};
//! use std::sync::Arc;
//!
//! smol::block_on(async {
//!     let transport = StdioTransport::spawn(
//!         StdioConfig::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]),
//!     )?;
//!     let client = Arc::new(Client::new(transport));
//!     client.initialize().await?;
//!     for tool in as_tools(&client).await? {
//!         println!("{}: {}", tool.name(), tool.description());
//!     }
//!     client.close().await
//! })?;
//! # Ok::<(), mcp_connect::Error>(())
//! ```
//!
//! # Who drives the connection
//!
//! Nobody holds a role. A caller that sent a request first looks at the transport without
//! waiting ([`Transport::try_recv`]): a server that answers at once — on one core it runs as soon
//! as the request is written — costs no wait at all. Otherwise it waits on two things at once: its
//! answer and the transport's readiness. When the transport is ready, that caller takes the
//! client's lock, takes what arrived (never waiting), feeds it to the session, sends what the
//! session queued (ping answers, cancellations) and hands every answer to its waiter — its own or
//! another caller's. Nothing is held while a caller is suspended, so a future that is polled once
//! and then parked holds nobody up, and a dropped one loses nothing (what the transport learns
//! after the peer's end, such as a child's exit status, is kept by the transport).
//!
//! ```text
//!   caller A ──┐ try_recv, then waits on: answer A │ transport ready
//!   caller B ──┤ try_recv, then waits on: answer B │ transport ready          ┌─────────────┐
//!   idle reader┘ waits on: (nobody waits) transport ready │ the one timer      │ Mutex<State>│
//!                      │                                                     │  Session    │
//!        whoever wakes ├── lock ── try_recv* → session.handle_* ── flush ───▶│  waiters    │
//!                      │          (answers go to their waiters' channels)    └─────────────┘
//!        the timer     └── lock ── session.handle_timeout(now) ── flush
//! ```
//!
//! A call answered back to back costs no hand-off between threads: the caller reads its own
//! answer. Between calls the *idle reader* (a task on smol's global executor, on by default, see
//! [`ClientConfig::idle_reader`]) waits on the transport in the callers' place, so the server's
//! pings and requests are answered, and its exit is noticed, while nobody calls. While callers
//! wait it steps back and only looks every [`client::WATCHDOG_PERIOD`] (100 ms): it then takes
//! what arrived, which covers callers whose futures are not polled.
//!
//! The idle reader also keeps the session's timers — every request's deadline, the era probe's
//! fallback, the modern era's retry rounds — as one timer armed at the earliest, and fires them
//! on time whoever waits or is parked. It re-arms only when that timer fired or when something
//! earlier was set: back-to-back calls, each with a deadline a little later than the last, arm
//! no timer (a timer armed per call costs the reactor a wake-up and several system calls). With
//! the idle reader off, each waiting caller arms a timer of its own once it has to wait.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod client;
pub mod config;
pub mod connect;
pub mod error;
pub mod handlers;
pub mod http;
pub mod servers;
pub mod stdio;
pub mod tools;
#[cfg(feature = "tracing")]
pub mod trace;
pub mod transport;

pub use auth::{Authorize, FileStore, MemoryStore, OAuthConfig, TokenStore};
pub use client::{Client, ClientConfig, ListChangedCallback, LogCallback, WarningCallback};
pub use connect::{connect_http, connect_stdio};
pub use error::Error;
pub use handlers::{ElicitAnswer, Elicitation, HandlerError, Handlers, Root};
pub use http::{HttpTransport, HttpTransportConfig};
pub use mcp_proto as proto;
pub use mcp_proto::{CallToolResult, Request, Tool, ToolDefinition, ToolOutput, Transmit};
pub use servers::{Launch, ServerSet, ServerSetConfig, ServerSpec, SetError, SetTool};
pub use stdio::{StderrMode, StdioConfig, StdioTransport};
pub use tools::{as_tools, AgentTool, McpTool, ToolError, LiveTools};
pub use transport::{BoxFuture, Inbound, Transport};

/// The README's examples, compiled as doctests so that they stay true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
