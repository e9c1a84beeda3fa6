//! # mcp-connect: MCP servers' tools for Rust agents
//!
//! Connects to a Model Context Protocol server — a child process over stdio, or a Streamable HTTP
//! endpoint — discovers its tools and hands each back as an ordinary tool value.
//!
//! This crate only moves bytes, with [smol](https://docs.rs/smol): the protocol lives in the sans-IO
//! core, [`mcp_proto`], re-exported here as [`proto`].
//!
//! # Start here
//!
//! Five names are all an agent needs:
//!
//! - [`connect_stdio`]: start a server as a child process and open its session in the era it
//!   speaks (remembered for next time; a legacy server that exits on the probe is started again).
//! - [`connect_http`]: the same for a Streamable HTTP endpoint, with OAuth 2.1 when
//!   [`HttpTransportConfig::oauth`] is set ([`oauth`]).
//! - [`as_tools`] and [`AgentTool`]: the server's tools as values an agent registers (name,
//!   description, input schema, a call taking the model's raw arguments).
//! - [`ServerSet`]: many servers, from the config files people already write ([`config`]), as one
//!   supervised tool set.
//! - [`Error`]: what went wrong, typed; a tool's own `isError` is [`ToolError::Retry`].
//!
//! Both `connect_*` give a [`Client`]: the rest of the protocol (any request, progress, what the
//! server asks through [`Handlers`], the server's logs and warnings) is on it and its
//! [`ClientConfig`].
//!
//! ```no_run
//! use mcp_connect::{as_tools, connect_stdio, AgentTool, ClientConfig, StdioConfig};
//!
//! smol::block_on(async {
//!     let server = StdioConfig::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]);
//!     let client = connect_stdio(server, ClientConfig::default()).await?;
//!     for tool in as_tools(&client).await? {
//!         println!("{}: {}", tool.name(), tool.description());
//!     }
//!     client.close().await
//! })?;
//! # Ok::<(), mcp_connect::Error>(())
//! ```
//!
//! # Features
//!
//! | feature | default | what it brings |
//! |---|---|---|
//! | `stdio` | yes | [`StdioTransport`], [`connect_stdio`]: a server run as a child process (`async-process`) |
//! | `http` | yes | [`HttpTransport`], [`connect_http`]: Streamable HTTP through `isahc`, and so libcurl (the only C code in the tree) |
//! | `oauth` | yes | OAuth 2.1 for the HTTP transport ([`oauth`]: [`OAuthConfig`], the token stores, the browser flow); turns `http` on. Without it a server that answers `401` fails with [`Error::OAuthUnavailable`] |
//! | `tracing` | no | a span per request and events for what the server says (the `trace` module) |
//! | `mock` | no | a mock MCP server for the application's tests, in memory (the `mock` module: `MockServer`) |
//! | `opentelemetry` | no | `tracing`, and each request's `params._meta` carries the calling span's W3C trace context from its OpenTelemetry span (the `otel` module; `tracing-opentelemetry` 0.34) |
//!
//! A stdio-only agent takes `default-features = false, features = ["stdio"]`: no C compiler, no
//! HTTP stack. A [`ServerSet`] built without one of the transports still reads every server of a
//! config file; a server that needs the missing one fails to start with
//! [`Error::TransportUnavailable`], naming the feature. With neither transport, the [`Client`]
//! runs over a [`Transport`] of the application's own. An agent whose HTTP servers need no
//! authorization (or get an `Authorization` header from it) may take `features = ["http"]`
//! without `oauth`.
//!
//! # Who drives the connection
//!
//! Nobody holds a role: every caller waiting for an answer first takes what already arrived (a
//! caller waiting alone on stdio, on more than one CPU, looks again for up to
//! [`ClientConfig::busy_poll`] before it sleeps), then waits on its answer and the transport's
//! readiness, and whoever wakes reads for everyone;
//! between calls the idle reader ([`ClientConfig::idle_reader`]) answers the server and keeps the
//! session's timers as one timer. So a future polled once and then kept holds nobody up, and a call
//! answered back to back costs no hand-off between threads. The design, with its diagram, is in
//! [ARCHITECTURE.md](https://github.com/mcp-proto/mcp-proto/blob/main/ARCHITECTURE.md#who-drives-the-connection).
//!
//! # Limits
//!
//! Every buffer and every wait has a bound; what happens past it:
//!
//! | limit | default | past it |
//! |---|---|---|
//! | one message (stdio line, HTTP body, SSE event) | 64 MiB ([`Config::frame_limit`], [`HttpTransportConfig::max_message`]) | discarded through its end without being buffered; the request it answers fails at once with "message larger than the limit" when it can be told which (its id is read from the line's first or last bytes, or it is the only one pending) |
//! | request timeout | 60 s ([`Config::default_timeout`]), per request settable or none | the request fails with [`Error::Timeout`]; `notifications/cancelled` is sent (never for `initialize`) |
//! | server stderr kept | last 40 lines, each cut at 2 KiB | older lines dropped; stderr is always drained, optionally forwarded ([`StderrMode`]) |
//! | `tools/list` pages | 1000 ([`ClientConfig::max_tool_pages`]), 64 MiB of tools in all ([`ClientConfig::max_tool_bytes`]) | [`Error::Pagination`]; a repeated cursor stops it at once (cursors are kept as 8-byte hashes) |
//! | `resources/list`, `resources/templates/list`, `prompts/list` pages | the same caps as `tools/list` | [`Error::Listing`] |
//! | one `resources/read`'s contents (text, blobs as base64) | 32 MiB ([`ClientConfig::max_read_bytes`]) | [`Error::Resource`] |
//! | a URI template, and the URI it expands to | 8 KiB ([`MAX_TEMPLATE_LEN`](mcp_proto::resources::MAX_TEMPLATE_LEN)), 64 KiB ([`MAX_URI_LEN`](mcp_proto::resources::MAX_URI_LEN)) | [`Error::Resource`], nothing sent |
//! | completion values | 100 ([`MAX_COMPLETION_VALUES`](mcp_proto::prompts::MAX_COMPLETION_VALUES)), as the spec caps them | the rest dropped, [`Completion::truncated`](mcp_proto::Completion::truncated) set |
//! | a skill's files (SEP-2640) | 512 files, 16 MiB in all ([`MAX_SKILL_FILES`](mcp_proto::skills::MAX_SKILL_FILES), [`MAX_SKILL_BYTES`](mcp_proto::skills::MAX_SKILL_BYTES)), each read as `resources/read` is | [`Error::Skill`], nothing read |
//! | a `SKILL.md`'s frontmatter | 256 KiB, 64 levels, no aliases ([`MAX_FRONTMATTER_LEN`](mcp_proto::skills::MAX_FRONTMATTER_LEN)) | [`Error::Skill`], not loaded |
//! | skills a [`LoadSkillTool`] holds loaded | 16 ([`MAX_LOADED_SKILLS`](skills::MAX_LOADED_SKILLS)) | all forgotten; the model loads again |
//! | stdio bytes the server has not read | 64 MiB ([`StdioConfig::max_backlog`]); a request cancelled or timed out before any of it was written leaves the queue | the connection fails: every call ends at once with "the server stopped reading its input" (also when the server closes its stdin) |
//! | server request ids answered | 256 bytes of JSON ([`MAX_ECHOED_ID`](mcp_proto::session::MAX_ECHOED_ID)); method names quoted in -32601 up to 128 bytes | the request is left unanswered (a warning) |
//! | a lone caller's busy polling (stdio, more than one CPU) | 50 µs ([`client::BUSY_POLL`], [`ClientConfig::busy_poll`]; zero: off; at most 1 ms, [`client::MAX_BUSY_POLL`], and never past the deadline) | it sleeps in the reactor until the answer comes; misses in a row make the next waits skip the looks (at most 63 waits in 64) |
//! | a call future kept but not polled | the idle reader looks every 100 ms ([`client::WATCHDOG_PERIOD`]), every 10 ms while more than one caller waits ([`client::CROWD_WATCHDOG_PERIOD`]), and keeps the timers; over HTTP the transport's watchdog runs the exchanges nobody ran as often (every 100 ms while one task or none waits on the transport) | what arrived is handled (the transport's readiness wakes one waiter: one kept unpolled holds the others' answers until the look), and due timeouts fire on time anyway |
//! | SSE resumptions per response | 5, waiting the server's `retry` (default 1 s) | the request fails |
//! | standalone GET stream (legacy HTTP; opened after the handshake when handlers are registered, [`HttpConfig::standalone_stream`](mcp_proto::http::HttpConfig::standalone_stream)) | reconnected after `retry` (with `Last-Event-ID`); 5 streams in a row without a message | no longer listened to; a 405 or any other answer: not listened to |
//! | expired HTTP session (404) | renewed once per request (a 404 to a notification or response renews too); only the request that met the 404 is resent, and requests made during the renewal wait for it | [`Error::Http`] with status 404 |
//! | redirects per HTTP request | 5 ([`MAX_REDIRECTS`](mcp_proto::http::MAX_REDIRECTS)), same-origin `307`/`308` only | the request fails |
//! | HTTP notification/response POST | 10 s each ([`HttpTransportConfig::post_timeout`]); later messages wait for its status at most that long | abandoned |
//! | HTTP messages waiting to be sent | 1024 ([`HttpTransportConfig::max_queued`]) | `send` fails with "outbound queue is full"; a refused request fails at once |
//! | HTTP `close()` DELETE | 2 s ([`HttpTransportConfig::close_timeout`]) | abandoned; `close()` returns `Ok` |
//! | close grace | 2 s after closing stdin, 2 s after SIGTERM (each clamped to a day) | SIGKILL to the process group, then reaped |
//! | era probe unanswered | 2 s ([`Config::probe_timeout`]) | `initialize` is sent too; the first answer that settles the era wins |
//! | input-required rounds per request (modern era) | 10 ([`Config::max_input_rounds`]), 50 ms doubling to 250 ms between rounds that only carry `requestState` | [`RequestError::TooManyRounds`] |
//! | -32022 version retries | once per request (and once for the opening) | [`RequestError::UnsupportedVersion`] / [`SessionError::NoCommonVersion`], naming both sides' versions |
//! | -32020 header mismatch (modern HTTP) | the tools are re-listed and the call retried once | [`RequestError::HeaderMismatch`] |
//! | eras remembered ([`connect_stdio`] / [`connect_http`], per [`ClientConfig::era_memory`]) | 256 servers ([`EraMemory::MAX`](mcp_proto::server_set::EraMemory::MAX)) | forgotten all at once, then probed again |
//! | refused HTTP request's JSON body read for its JSON-RPC error | 64 KiB ([`MAX_ERROR_BODY`](mcp_proto::http::MAX_ERROR_BODY)) | the HTTP status is the error |
//! | warnings kept | the newest 32 ([`client::RECENT_WARNINGS`]; [`Client::stats`] counts all) | older ones dropped |
//!
//! In the 2026-07-28 era, list changes and resource updates come through `subscriptions/listen`,
//! which the client keeps open only while the application wants them
//! ([`ClientConfig::on_list_changed`], [`Client::subscribe_resource`]), to the same callbacks as
//! in the legacy era; a listen stream that drops is listened again after a bounded backoff
//! ([`mcp_proto::subscriptions`]), at most
//! [`MAX_RESOURCE_SUBSCRIPTIONS`](mcp_proto::subscriptions::MAX_RESOURCE_SUBSCRIPTIONS) URIs.
//!
//! Not supported yet: the old 2024-11-05 HTTP+SSE transport. Process groups and signals are
//! Unix-only.
//!
//! [`Config::frame_limit`]: mcp_proto::Config::frame_limit
//! [`Config::default_timeout`]: mcp_proto::Config::default_timeout
//! [`Config::probe_timeout`]: mcp_proto::Config::probe_timeout
//! [`Config::max_input_rounds`]: mcp_proto::Config::max_input_rounds
//! [`RequestError::TooManyRounds`]: mcp_proto::RequestError::TooManyRounds
//! [`RequestError::UnsupportedVersion`]: mcp_proto::RequestError::UnsupportedVersion
//! [`RequestError::HeaderMismatch`]: mcp_proto::RequestError::HeaderMismatch
//! [`SessionError::NoCommonVersion`]: mcp_proto::SessionError::NoCommonVersion
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod config;
#[cfg(any(feature = "stdio", feature = "http"))]
pub mod connect;
pub mod error;
pub mod handlers;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "mock")]
pub mod mock;
#[cfg(feature = "oauth")]
pub mod oauth;
pub mod recording;
// Without the feature, what the HTTP transport asks of OAuth, answered by a type with no value.
#[cfg(all(feature = "http", not(feature = "oauth")))]
#[path = "oauth/off.rs"]
mod oauth;
/// The OAuth module's name until the driver's modules took the core's names: code written
/// against `mcp_connect::auth::…` still builds.
#[cfg(feature = "oauth")]
#[doc(hidden)]
pub use oauth as auth;
#[cfg(feature = "opentelemetry")]
pub mod otel;
#[cfg(any(feature = "stdio", feature = "http"))]
pub mod servers;
pub mod skills;
#[cfg(feature = "stdio")]
pub mod stdio;
mod sync;
pub mod tools;
#[cfg(feature = "tracing")]
pub mod trace;
pub mod transport;

pub use client::{
    Client, ClientConfig, ListChangedCallback, LogCallback, ResourceUpdatedCallback, TaskHandle,
    TaskStart, TraceContextProvider, WarningCallback,
};
#[cfg(feature = "http")]
pub use connect::connect_http;
#[cfg(feature = "stdio")]
pub use connect::connect_stdio;
pub use error::{chain, Error};
pub use handlers::{ElicitAnswer, Elicitation, HandlerError, Handlers, Root};
#[cfg(feature = "http")]
pub use http::{HttpTransport, HttpTransportConfig};
pub use mcp_proto as proto;
pub use mcp_proto::{CallToolResult, Request, Tool, ToolDefinition, ToolOutput};
#[cfg(feature = "mock")]
pub use mock::MockServer;
#[cfg(feature = "oauth")]
pub use oauth::{Authorize, FileStore, MemoryStore, OAuthConfig, TokenStore};
#[cfg(any(feature = "stdio", feature = "http"))]
pub use servers::skills::SetLoadSkillTool;
#[cfg(any(feature = "stdio", feature = "http"))]
pub use servers::{Launch, ServerSet, ServerSetConfig, ServerSpec, SetError, SetTool};
pub use skills::LoadSkillTool;
#[cfg(feature = "stdio")]
pub use stdio::{StderrMode, StdioConfig, StdioTransport};
pub use tools::{as_tools, AgentTool, LiveTools, McpTool, ToolError};
pub use transport::Transport;

/// The README's examples, compiled as doctests so that they stay true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
