//! # mcp-client: MCP servers' tools for Rust agents
//!
//! Connects to a Model Context Protocol server — a child process over stdio, or a Streamable HTTP
//! endpoint — discovers its tools and hands each back as an ordinary tool value.
//!
//! This crate only moves bytes, with [smol](https://docs.rs/smol): the protocol lives in the sans-IO
//! core, [`mcp_proto`], re-exported here as [`proto`].
//!
//! ```no_run
//! use mcp_client::{as_tools, AgentTool, Client, StdioConfig, StdioTransport};
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
//! # Ok::<(), mcp_client::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod error;
pub mod http;
pub mod stdio;
pub mod tools;
pub mod transport;

pub use client::{Client, ClientConfig};
pub use error::Error;
pub use http::{HttpTransport, HttpTransportConfig};
pub use mcp_proto as proto;
pub use mcp_proto::{CallToolResult, Request, Tool, ToolDefinition, ToolOutput, Transmit};
pub use stdio::{StderrMode, StdioConfig, StdioTransport};
pub use tools::{as_tools, AgentTool, McpTool, ToolError};
pub use transport::{BoxFuture, Inbound, Transport};

/// The README's examples, compiled as doctests so that they stay true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
