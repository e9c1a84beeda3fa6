//! A mock MCP server for an application's tests (feature `mock`): tools with their schemas and
//! handlers, resources, resource templates, prompts and completion, scripted failures, in either
//! era — connected to a real [`Client`] in memory. No process, no network, no executor of its
//! own: it runs inside the client's reads, so a test may drive it from smol, tokio or a plain
//! `block_on`.
//!
//! ```
//! use mcp_connect::mock::{Fault, MockServer};
//! use mcp_connect::{as_tools, AgentTool, ClientConfig, ToolError};
//! use serde_json::json;
//!
//! smol::block_on(async {
//!     let mock = MockServer::builder()
//!         .tool("add", json!({"type": "object"}), |args| {
//!             let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
//!             sum.to_string()
//!         })
//!         // The second call of `add` reports an error the model may correct.
//!         .on_call("add", 2, Fault::is_error("a is too large"))
//!         .build();
//!     let client = mock.connect(ClientConfig::default()).await?;
//!     let tools = as_tools(&client).await?;
//!     assert_eq!(tools[0].call(json!({"a": 2, "b": 3})).await.unwrap(), "5");
//!     let second = tools[0].call(json!({"a": 1000, "b": 1})).await;
//!     assert!(matches!(second, Err(ToolError::Retry(m)) if m.contains("too large")));
//!     // What the client sent, in order.
//!     let calls = mock.calls();
//!     assert_eq!(calls.len(), 2);
//!     assert_eq!(calls[1].arguments, json!({"a": 1000, "b": 1}));
//!     client.close().await
//! })?;
//! # Ok::<(), mcp_connect::Error>(())
//! ```
//!
//! # What it answers
//!
//! The era is the server's choice ([`MockBuilder::eras`]): 2025-11-25 and earlier (the
//! `initialize` handshake; `server/discover` gets -32601, as a legacy server answers the era
//! probe), 2026-07-28 (`server/discover`, the per-request `_meta` checked, `initialize` refused
//! with -32022 naming the version it speaks, every result stamped with `resultType` and the
//! server's identity), or both (the default: a request carrying the modern `_meta` is answered
//! in the modern era, any other in the legacy one). [`MockServer::negotiated`] says what the
//! last connection opened in.
//!
//! It answers `ping` (legacy), `tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list` (each paginated, [`MockBuilder::page_size`]), `tools/call`,
//! `resources/read`, `prompts/get`, `completion/complete` and, in the modern era,
//! `subscriptions/listen` (acknowledged and kept open, for [`MockServer::notify_tools_changed`]);
//! any other method gets -32601. A `notifications/cancelled` drops the call it names (its handler
//! future is dropped, so it stops), and is recorded.
//!
//! # Where handlers run
//!
//! In the client's reads: a tool handler runs when its call is sent and, for one that waits
//! (an async handler, a [`Fault::Delay`]), again each time it is woken, when the client next
//! reads (its idle reader, or a caller waiting for an answer). So a handler must not call the
//! client it serves (the client's lock is held), and must not block; a delay is an
//! [`async_io::Timer`], which works on any executor. A handler that panics is answered with
//! -32603.
//!
//! # Limits
//!
//! | limit | value | past it |
//! |---|---|---|
//! | messages recorded ([`MockServer::received`]) | [`MAX_RECORDED`] | the oldest dropped ([`MockServer::dropped_records`] counts them) |
//! | notifications queued for a client that does not read | [`MAX_QUEUED`] | dropped ([`MockServer::notify_tools_changed`] says how many were delivered) |
//! | completion values | 100, as the spec caps them | the rest left out, `hasMore` set |

mod serve;
mod transport;

pub use transport::MockTransport;

use crate::transport::BoxFuture;
use crate::{Client, ClientConfig, Error};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

/// The most messages a [`MockServer`] records ([`MockServer::received`]); past it the oldest
/// are dropped.
pub const MAX_RECORDED: usize = 10_000;

/// The most messages waiting for a client to read them, per connection; past it a notification
/// is dropped (answers are never dropped: there is at most one per request the client sent).
pub const MAX_QUEUED: usize = 4096;

/// The protocol version of the modern era.
const MODERN: &str = "2026-07-28";

/// Which eras the mock speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Eras {
    /// 2024-11-05 … 2025-11-25: the `initialize` handshake; `server/discover` is an unknown
    /// method (-32601).
    Legacy,
    /// 2026-07-28 only: `server/discover` and the per-request `_meta`; `initialize` is refused.
    Modern,
    /// Both, chosen per request, as a dual-era server does (the default).
    #[default]
    Both,
}

/// What a tool call answers: a result (text, JSON, an `isError` result, any content) or a
/// JSON-RPC error. Made from a `String` or `&str` (text), a [`Value`] (structured content, with
/// its JSON as the text) or a `Result` of those (an `Err` is an `isError` result with the
/// error's message).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply(Result<Value, (i64, String)>);

impl ToolReply {
    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolReply(Ok(
            json!({"content": [{"type": "text", "text": text.into()}], "isError": false}),
        ))
    }

    /// A tool error the model may correct: `isError: true` with one text block.
    pub fn error(text: impl Into<String>) -> Self {
        ToolReply(Ok(
            json!({"content": [{"type": "text", "text": text.into()}], "isError": true}),
        ))
    }

    /// Structured content, with its JSON as the text block (as the spec asks of a tool that
    /// returns structured content, for clients that read only the text).
    pub fn json(value: Value) -> Self {
        ToolReply(Ok(json!({
            "content": [{"type": "text", "text": value.to_string()}],
            "structuredContent": value,
        })))
    }

    /// These content blocks (`text`, `image`, `audio`, `resource_link`, `resource`, or any).
    pub fn content(blocks: Vec<Value>) -> Self {
        ToolReply(Ok(json!({"content": blocks})))
    }

    /// This `CallToolResult`, verbatim.
    pub fn raw(result: Value) -> Self {
        ToolReply(Ok(result))
    }

    /// A JSON-RPC error instead of a result (a protocol error, fatal to the call).
    pub fn protocol_error(code: i64, message: impl Into<String>) -> Self {
        ToolReply(Err((code, message.into())))
    }
}

impl From<String> for ToolReply {
    fn from(text: String) -> Self {
        ToolReply::text(text)
    }
}

impl From<&str> for ToolReply {
    fn from(text: &str) -> Self {
        ToolReply::text(text)
    }
}

impl From<Value> for ToolReply {
    fn from(value: Value) -> Self {
        ToolReply::json(value)
    }
}

impl<T: Into<ToolReply>, E: fmt::Display> From<Result<T, E>> for ToolReply {
    fn from(result: Result<T, E>) -> Self {
        match result {
            Ok(reply) => reply.into(),
            Err(e) => ToolReply::error(e.to_string()),
        }
    }
}

/// A scripted misbehaviour of one tool call, in place of (or, for a delay, before) its handler.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Fault {
    /// A result with `isError: true` and this text.
    IsError(String),
    /// A JSON-RPC error with this code and message.
    ProtocolError(i64, String),
    /// The handler's answer, this much later.
    Delay(Duration),
    /// The connection drops when the call arrives: every waiting request fails, and the
    /// client's calls fail from then on.
    DropConnection,
    /// The call is never answered (until the client cancels it).
    NeverAnswer,
}

impl Fault {
    /// [`Fault::IsError`].
    pub fn is_error(text: impl Into<String>) -> Self {
        Fault::IsError(text.into())
    }
    /// [`Fault::ProtocolError`].
    pub fn protocol_error(code: i64, message: impl Into<String>) -> Self {
        Fault::ProtocolError(code, message.into())
    }
    /// [`Fault::Delay`].
    pub fn delay(delay: Duration) -> Self {
        Fault::Delay(delay)
    }
    /// [`Fault::DropConnection`].
    pub fn drop_connection() -> Self {
        Fault::DropConnection
    }
    /// [`Fault::NeverAnswer`].
    pub fn never_answer() -> Self {
        Fault::NeverAnswer
    }
}

/// A resource's contents: text or a blob (already base64), with a MIME type.
#[derive(Debug, Clone, PartialEq)]
pub struct Contents {
    text: Option<String>,
    blob: Option<String>,
    mime_type: Option<String>,
}

impl Contents {
    /// Text contents.
    pub fn text(text: impl Into<String>) -> Self {
        Contents {
            text: Some(text.into()),
            blob: None,
            mime_type: None,
        }
    }
    /// Binary contents, given as base64.
    pub fn blob(base64: impl Into<String>) -> Self {
        Contents {
            text: None,
            blob: Some(base64.into()),
            mime_type: None,
        }
    }
    /// With this MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    fn to_json(&self, uri: &str) -> Value {
        let mut o = Map::new();
        o.insert("uri".into(), uri.into());
        if let Some(m) = &self.mime_type {
            o.insert("mimeType".into(), m.clone().into());
        }
        if let Some(b) = &self.blob {
            o.insert("blob".into(), b.clone().into());
        } else {
            o.insert("text".into(), self.text.clone().unwrap_or_default().into());
        }
        Value::Object(o)
    }
}

impl From<&str> for Contents {
    fn from(text: &str) -> Self {
        Contents::text(text)
    }
}

impl From<String> for Contents {
    fn from(text: String) -> Self {
        Contents::text(text)
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    role: &'static str,
    text: String,
}

impl Message {
    /// A user message of one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: "user",
            text: text.into(),
        }
    }
    /// An assistant message of one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: "assistant",
            text: text.into(),
        }
    }
}

/// What a `completion/complete` asked, for a [`MockBuilder::completion`] handler.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompletionAsk {
    /// The reference as sent: `{"type": "ref/prompt", "name": …}` or
    /// `{"type": "ref/resource", "uri": …}`.
    pub reference: Value,
    /// The argument being completed.
    pub argument: String,
    /// What was typed so far.
    pub value: String,
    /// The arguments already given (`context.arguments`).
    pub context: Map<String, Value>,
}

/// One message the client sent, as the mock received it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Received {
    /// Which connection ([`MockServer::transport`] numbers them from 1).
    pub connection: u64,
    /// Its method.
    pub method: String,
    /// Its JSON-RPC id; `None` for a notification.
    pub id: Option<Value>,
    /// Its params (`Null` when it had none), `_meta` included.
    pub params: Value,
}

/// One `tools/call` the client sent.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Call {
    /// Which connection.
    pub connection: u64,
    /// The tool.
    pub tool: String,
    /// Its arguments (`{}` when none were sent).
    pub arguments: Value,
}

type ToolFn = dyn Fn(Value) -> BoxFuture<'static, ToolReply> + Send + Sync;
type ReadFn = dyn Fn(&str) -> Option<Contents> + Send + Sync;
type PromptFn = dyn Fn(&Map<String, Value>) -> Vec<Message> + Send + Sync;
type CompleteFn = dyn Fn(&CompletionAsk) -> Vec<String> + Send + Sync;

struct MockTool {
    definition: Value,
    name: String,
    handler: Arc<ToolFn>,
}

struct MockResource {
    uri: String,
    name: String,
    contents: Contents,
}

struct MockTemplate {
    template: String,
    name: String,
    read: Arc<ReadFn>,
}

struct MockPrompt {
    name: String,
    /// Its arguments: name, required.
    arguments: Vec<(String, bool)>,
    messages: Arc<PromptFn>,
}

/// When a scripted fault applies.
#[derive(Debug, Clone, Copy, PartialEq)]
enum When {
    /// The tool's n-th call (from 1, counted across connections); used once.
    Call(u64),
    /// Every call.
    Always,
}

/// The server's declarations, faults and record, shared by its connections.
struct Server {
    name: String,
    version: String,
    instructions: Option<String>,
    eras: Eras,
    page_size: usize,
    tools: Vec<MockTool>,
    resources: Vec<MockResource>,
    templates: Vec<MockTemplate>,
    prompts: Vec<MockPrompt>,
    completion: Option<Arc<CompleteFn>>,
    faults: Vec<(String, When, Fault)>,
    /// Calls per tool so far.
    calls: std::collections::HashMap<String, u64>,
    record: VecDeque<Received>,
    dropped_records: u64,
    connections: Vec<Weak<transport::Conn>>,
    next_connection: u64,
    negotiated: Option<(mcp_proto::Era, String)>,
}

/// Builds a [`MockServer`]: `MockServer::builder().tool(…).resource(…).build()`.
pub struct MockBuilder {
    server: Server,
}

impl MockBuilder {
    /// The server's name and version (`serverInfo`; default `mock`, the crate's version).
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.server.name = name.into();
        self.server.version = version.into();
        self
    }

    /// The server's instructions (in the `initialize` and `server/discover` results).
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.server.instructions = Some(instructions.into());
        self
    }

    /// Which eras it speaks (default [`Eras::Both`]).
    pub fn eras(mut self, eras: Eras) -> Self {
        self.server.eras = eras;
        self
    }

    /// The most items per page of each listing (default: all in one page). The cursor is the
    /// next item's position, as text.
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.server.page_size = page_size.max(1);
        self
    }

    /// A tool with its input schema and a handler of its arguments (`{}` when the client sent
    /// none). The handler returns anything that becomes a [`ToolReply`]: a `String` (text), a
    /// [`Value`] (structured), a `Result` of those (an `Err` is an `isError` result).
    pub fn tool<R: Into<ToolReply>>(
        self,
        name: impl Into<String>,
        input_schema: Value,
        handler: impl Fn(Value) -> R + Send + Sync + 'static,
    ) -> Self {
        let name = name.into();
        self.tool_def(json!({"name": name, "inputSchema": input_schema}), handler)
    }

    /// A tool with a full definition (`name`, `description`, `inputSchema`, `outputSchema`,
    /// `annotations`, … sent as given) and a handler, as for [`tool`](Self::tool).
    pub fn tool_def<R: Into<ToolReply>>(
        mut self,
        definition: Value,
        handler: impl Fn(Value) -> R + Send + Sync + 'static,
    ) -> Self {
        self.server.add_tool(definition, sync_handler(handler));
        self
    }

    /// A tool whose handler is async (it may wait on anything that works without an executor of
    /// its own: [`async_io::Timer`], channels, …).
    pub fn tool_async<R, F>(
        mut self,
        name: impl Into<String>,
        input_schema: Value,
        handler: impl Fn(Value) -> F + Send + Sync + 'static,
    ) -> Self
    where
        R: Into<ToolReply>,
        F: Future<Output = R> + Send + 'static,
    {
        let name = name.into();
        self.server.add_tool(
            json!({"name": name, "inputSchema": input_schema}),
            async_handler(handler),
        );
        self
    }

    /// A resource and its contents.
    pub fn resource(mut self, uri: impl Into<String>, contents: impl Into<Contents>) -> Self {
        let uri = uri.into();
        self.server.resources.push(MockResource {
            name: uri.rsplit('/').next().unwrap_or_default().to_owned(),
            uri,
            contents: contents.into(),
        });
        self
    }

    /// A resource template (RFC 6570, listed as given) and what reading a URI gives: `read` is
    /// asked about every URI no resource has, in the order the templates were declared, and
    /// `None` passes it on (a URI nobody has gets -32002, "Resource not found").
    pub fn resource_template(
        mut self,
        uri_template: impl Into<String>,
        name: impl Into<String>,
        read: impl Fn(&str) -> Option<Contents> + Send + Sync + 'static,
    ) -> Self {
        self.server.templates.push(MockTemplate {
            template: uri_template.into(),
            name: name.into(),
            read: Arc::new(read),
        });
        self
    }

    /// A prompt, its arguments (name, required) and its messages for the arguments given (a
    /// required one missing gets -32602 before `messages` is called).
    pub fn prompt(
        mut self,
        name: impl Into<String>,
        arguments: &[(&str, bool)],
        messages: impl Fn(&Map<String, Value>) -> Vec<Message> + Send + Sync + 'static,
    ) -> Self {
        self.server.prompts.push(MockPrompt {
            name: name.into(),
            arguments: arguments
                .iter()
                .map(|(n, r)| ((*n).to_owned(), *r))
                .collect(),
            messages: Arc::new(messages),
        });
        self
    }

    /// Completion (`completion/complete`, and the `completions` capability): the values for
    /// what was asked.
    pub fn completion(
        mut self,
        complete: impl Fn(&CompletionAsk) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.server.completion = Some(Arc::new(complete));
        self
    }

    /// The `call`-th call of `tool` (from 1, counted across connections) meets `fault`.
    pub fn on_call(mut self, tool: impl Into<String>, call: u64, fault: Fault) -> Self {
        self.server
            .faults
            .push((tool.into(), When::Call(call), fault));
        self
    }

    /// Every call of `tool` meets `fault`.
    pub fn on_every_call(mut self, tool: impl Into<String>, fault: Fault) -> Self {
        self.server.faults.push((tool.into(), When::Always, fault));
        self
    }

    /// The server.
    pub fn build(self) -> MockServer {
        MockServer {
            shared: Arc::new(Shared {
                server: Mutex::new(self.server),
                recorded: event_listener::Event::new(),
            }),
        }
    }
}

fn sync_handler<R: Into<ToolReply>>(
    handler: impl Fn(Value) -> R + Send + Sync + 'static,
) -> Arc<ToolFn> {
    Arc::new(move |args| {
        let reply = handler(args).into();
        Box::pin(std::future::ready(reply))
    })
}

fn async_handler<R, F>(handler: impl Fn(Value) -> F + Send + Sync + 'static) -> Arc<ToolFn>
where
    R: Into<ToolReply>,
    F: Future<Output = R> + Send + 'static,
{
    Arc::new(move |args| {
        let future = handler(args);
        Box::pin(async move { future.await.into() })
    })
}

impl Server {
    fn add_tool(&mut self, definition: Value, handler: Arc<ToolFn>) {
        let name = definition["name"].as_str().unwrap_or_default().to_owned();
        self.tools.retain(|t| t.name != name);
        self.tools.push(MockTool {
            definition,
            name,
            handler,
        });
    }

    fn record(&mut self, received: Received) {
        if self.record.len() == MAX_RECORDED {
            self.record.pop_front();
            self.dropped_records += 1;
        }
        self.record.push_back(received);
    }
}

struct Shared {
    server: Mutex<Server>,
    /// Rung after every message recorded.
    recorded: event_listener::Event,
}

/// A mock MCP server: its tools, resources and prompts, scripted failures, and a record of what
/// its clients sent. A handle: its clones share one server. Each [`transport`](Self::transport)
/// (or [`connect`](Self::connect)) is a connection of its own (its own era, handshake and
/// calls in flight) to the same server.
#[derive(Clone)]
pub struct MockServer {
    shared: Arc<Shared>,
}

impl MockServer {
    /// A builder.
    pub fn builder() -> MockBuilder {
        MockBuilder {
            server: Server {
                name: "mock".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                instructions: None,
                eras: Eras::Both,
                page_size: usize::MAX,
                tools: Vec::new(),
                resources: Vec::new(),
                templates: Vec::new(),
                prompts: Vec::new(),
                completion: None,
                faults: Vec::new(),
                calls: Default::default(),
                record: VecDeque::new(),
                dropped_records: 0,
                connections: Vec::new(),
                next_connection: 1,
                negotiated: None,
            },
        }
    }

    /// A new connection to the server, for [`Client::new`] or [`Client::with_config`].
    pub fn transport(&self) -> MockTransport {
        MockTransport::new(self.shared.clone())
    }

    /// A [`Client`] over a new connection, its session opened (in the era the client's
    /// configuration and the server's [`Eras`] agree on).
    pub async fn connect(&self, config: ClientConfig) -> Result<Client, Error> {
        let client = Client::with_config(self.transport(), config);
        client.initialize().await?;
        Ok(client)
    }

    /// The era and protocol version the last connection opened in, once one did.
    pub fn negotiated(&self) -> Option<(mcp_proto::Era, String)> {
        self.lock().negotiated.clone()
    }

    /// Every message the clients sent (the newest [`MAX_RECORDED`]), in order: requests and
    /// notifications, the opening's included.
    pub fn received(&self) -> Vec<Received> {
        self.lock().record.iter().cloned().collect()
    }

    /// How many of the oldest messages were dropped from the record.
    pub fn dropped_records(&self) -> u64 {
        self.lock().dropped_records
    }

    /// Every `tools/call` the clients sent, in order, with its arguments.
    pub fn calls(&self) -> Vec<Call> {
        self.lock()
            .record
            .iter()
            .filter(|r| r.method == "tools/call")
            .map(|r| Call {
                connection: r.connection,
                tool: r.params["name"].as_str().unwrap_or_default().to_owned(),
                arguments: match &r.params["arguments"] {
                    Value::Null => json!({}),
                    args => args.clone(),
                },
            })
            .collect()
    }

    /// The ids of the requests the clients cancelled (`notifications/cancelled`), in order.
    pub fn cancelled(&self) -> Vec<Value> {
        self.lock()
            .record
            .iter()
            .filter(|r| r.method == "notifications/cancelled")
            .map(|r| r.params["requestId"].clone())
            .collect()
    }

    /// Waits until `done` holds of the record ([`received`](Self::received)): for what a client
    /// sends on its own, without a sleep. Checked now and after each message recorded; it waits
    /// as long as that takes, so bound it (a test's timeout) where it may never hold.
    pub async fn wait_until(&self, done: impl Fn(&[Received]) -> bool) {
        loop {
            let listener = self.shared.recorded.listen();
            {
                let mut server = self.lock();
                if done(server.record.make_contiguous()) {
                    return;
                }
            }
            listener.await;
        }
    }

    /// Adds a tool (or replaces the one of that name) and tells the connected clients that the
    /// tool list changed.
    pub fn add_tool<R: Into<ToolReply>>(
        &self,
        definition: Value,
        handler: impl Fn(Value) -> R + Send + Sync + 'static,
    ) {
        self.lock().add_tool(definition, sync_handler(handler));
        self.notify_tools_changed();
    }

    /// Removes a tool and tells the connected clients that the tool list changed; returns
    /// whether there was one.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = {
            let mut server = self.lock();
            let before = server.tools.len();
            server.tools.retain(|t| t.name != name);
            server.tools.len() != before
        };
        if removed {
            self.notify_tools_changed();
        }
        removed
    }

    /// Tells every connected client that the tool list changed: in the legacy era once its
    /// session is initialized, in the modern era on each open `subscriptions/listen` that asked
    /// for tool-list changes. Returns to how many connections it went.
    ///
    /// > "When the list of available tools changes, servers that declared the `listChanged`
    /// > capability SHOULD send a notification" — MCP 2025-11-25, Server § Tools
    pub fn notify_tools_changed(&self) -> usize {
        let connections: Vec<_> = {
            let mut server = self.lock();
            server.connections.retain(|c| c.strong_count() > 0);
            server
                .connections
                .iter()
                .filter_map(Weak::upgrade)
                .collect()
        };
        connections
            .iter()
            .filter(|c| c.notify_list_changed("tools"))
            .count()
    }

    /// The `call`-th call of `tool` (from 1, counted across connections) meets `fault`.
    pub fn on_call(&self, tool: impl Into<String>, call: u64, fault: Fault) {
        self.lock()
            .faults
            .push((tool.into(), When::Call(call), fault));
    }

    /// The next call of `tool` meets `fault`.
    pub fn on_next_call(&self, tool: impl Into<String>, fault: Fault) {
        let tool = tool.into();
        let mut server = self.lock();
        let next = server.calls.get(&tool).copied().unwrap_or(0) + 1;
        server.faults.push((tool, When::Call(next), fault));
    }

    /// Every later call of `tool` meets `fault`.
    pub fn on_every_call(&self, tool: impl Into<String>, fault: Fault) {
        self.lock().faults.push((tool.into(), When::Always, fault));
    }

    /// Forgets the scripted faults (those still to come).
    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    fn lock(&self) -> MutexGuard<'_, Server> {
        crate::sync::lock(&self.shared.server)
    }
}

impl fmt::Debug for MockServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let server = self.lock();
        f.debug_struct("MockServer")
            .field("name", &server.name)
            .field("eras", &server.eras)
            .field("tools", &server.tools.len())
            .field("received", &server.record.len())
            .finish_non_exhaustive()
    }
}
