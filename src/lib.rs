//! # mcp-proto: a sans-IO Model Context Protocol client
//!
//! The protocol logic of an MCP client with no I/O, no threads and no clock of its own: bytes and
//! time go in, frames to send and events come out. Drivers (the `mcp-connect` crate) move the bytes
//! over a child process's pipes or HTTP; this crate decides everything else, so all of it can be
//! tested and fuzzed without processes or sockets.
//!
//! The modules read like the protocol's chapters:
//! - [`framing`]: newline-delimited messages (stdio), bounded and linear
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope
//! - [`text`]: text that is not what JSON text must be (invalid UTF-8, lone surrogate escapes),
//!   mended so that its message can still be read
//! - [`types`]: the MCP schema types a tool client uses
//! - [`session`]: the [`Session`] state machine: the opening in either era, requests, timeouts,
//!   cancellation, what the server asks of the application
//! - [`capabilities`]: what the client declares it answers (elicitation, sampling, roots)
//! - [`sse`]: the server-sent events decoder (Streamable HTTP responses)
//! - [`http`]: the Streamable HTTP transport's rules: requests, responses, sessions, resumption
//! - [`http::metadata`]: the request-metadata headers of Streamable HTTP (2026-07-28):
//!   `Mcp-Method`, `Mcp-Name`, `x-mcp-header` parameters, the Base64 value encoding
//! - [`oauth`]: OAuth 2.1 as a sans-IO flow: discovery, client identity, PKCE, tokens, step-up
//! - [`bridge`]: tools as an agent registers them, results as a model reads them
//! - [`server_set`]: the pure half of a set of servers: tool names, filters, routes,
//!   restart backoff
//!
//! See [`Session`] for the driving loop.
//!
//! # Panics and errors
//!
//! Nothing a peer sends can make this crate panic: every byte from a server goes through parsers
//! that return errors, every buffer has a cap ([`Config::frame_limit`], the SSE decoder's limit,
//! [`session::MAX_ASKS`], [`pagination::Pagination`]'s), and the fuzz targets in `fuzz/` check it.
//! The few `expect`s left serialize values this crate built itself (a JSON-RPC envelope, a
//! `serde_json::Value`), which cannot fail.
//!
//! The errors, by who gets them:
//! - [`UsageError`]: the caller used the session wrongly (a command before the opening, an answer
//!   to a server request that is not open); nothing was sent. Returned by the command.
//! - [`RequestError`]: one request's outcome (the server's JSON-RPC error, a timeout, a
//!   cancellation, an invalid result, the modern era's typed errors); the session goes on. In
//!   [`Event::Response`].
//! - [`SessionError`]: the opening failed (the handshake, the era probe, no version in common);
//!   the session is closed. In [`Event::Failed`].
//! - [`Warning`]: something the server did wrong that the session tolerated (junk on stdout, an
//!   unknown id, an oversized message, a tool with invalid header annotations); counted in
//!   [`Stats`]. In [`Event::Warning`].
//! - [`http::HttpError`]: the Streamable HTTP rules' verdict on a response (a status, a content
//!   type, an expired session); the driver turns it into its own error.
//!
//! # Which enums are `#[non_exhaustive]`
//! Two kinds of public enum, two rules:
//! - **What can be said grows**: errors and warnings ([`UsageError`], [`RequestError`],
//!   [`SessionError`], [`Warning`], [`oauth::AuthError`], [`http::HttpError`], …), the events
//!   ([`Event`]), and the vocabulary an application sets or reads for information ([`Era`],
//!   [`EraChoice`], [`State`], [`TransportKind`], [`TransmitKind`], [`oauth::Grant`],
//!   [`oauth::AuthMethod`], [`oauth::ApplicationType`], [`oauth::ClientKind`],
//!   [`oauth::Reason`], [`server_set::Prefix`]) are `#[non_exhaustive]`: a new revision of the
//!   protocol adds to them, and that must not break a build that passes them on or ignores what
//!   it does not know.
//! - **What to do is closed**: the outputs a driver acts on, one arm per action, are exhaustive
//!   on purpose: [`http::Step`], [`oauth::Step`], [`oauth::Verdict`], [`oauth::Turn`], [`oauth::Redirect`],
//!   [`server_set::RestartVerdict`] and [`server_set::Skipped`] (every tool
//!   left out is explained to the user). A new variant there is a new thing the driver must do; it
//!   should fail the driver's build, not fall into a `_` arm that does nothing.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bridge;
pub mod capabilities;
pub mod error;
pub mod framing;
pub mod http;
pub mod jsonrpc;
pub mod methods;
pub mod oauth;
pub mod pagination;
pub mod prompts;
pub mod resources;
pub mod secret;
pub mod server_set;
pub mod session;
pub mod skills;
pub mod sse;
pub mod subscriptions;
pub mod tasks;
pub mod terminal;
pub mod text;
pub mod trace_context;
pub mod types;

pub use bridge::{tool_output, ToolDefinition, ToolOutput};
pub use capabilities::ClientCapabilities;
pub use error::{RequestError, SessionError, UsageError, Warning};
pub use jsonrpc::{RequestId, RpcError};
pub use pagination::{Pagination, PaginationError};
pub use prompts::{
    CompleteResult, Completion, CompletionRef, GetPromptResult, ListPromptsResult, Prompt,
    PromptArgument, PromptMessage,
};
pub use resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource, ResourceError,
    ResourceTemplate,
};
pub use session::{
    AskId, CallTool, CallToolAsTask, CancelTask, Casualties, Complete, Config, Discover, Era,
    EraChoice, Event, GetPrompt, GetSkill, GetTask, GetTaskResult, ListKind, ListPrompts,
    ListResourceTemplates, ListResources, ListSkills, ListTasks, ListTools, LogMessage, Method,
    Progress, ReadDirectory, ReadResource, Reply, Request, ServerRequest, Session, State, Stats,
    TimerFor, Transmit, TransmitKind, TransportKind, UpdateTask,
};
pub use skills::{LoadedSkill, Skill, SkillError, SkillResource};
pub use trace_context::TraceContext;
pub use types::{
    CallToolResult, ContentBlock, DiscoverResult, IgnoredHint, Implementation, InitializeResult,
    ListToolsResult, ResourceContents, ResultType, Tool,
};

/// The crate README's examples, compiled as doctests so that they stay true.
#[doc = include_str!("README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
