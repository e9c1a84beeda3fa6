//! One agent, many servers: a supervised tool set over several MCP servers, stdio and HTTP.
//!
//! [`ServerSet::connect`] starts every server at once, each within its start-up timeout; a
//! server that fails to start or to open its session is reported ([`ServerSet::failures`]: its
//! name, the cause, its stderr's tail) and the others work. Its tools are offered under the names
//! the core's [`toolset`](mcp_proto::toolset) gives them (`server__tool` by default), filtered by
//! each server's allow and deny lists; every call goes to its server, under that server's tool
//! timeout, with the tool's own name (a prefix never reaches the server).
//!
//! Supervision: a stdio server that exited is started again on the next call to it (after the
//! backoff of [`RestartPolicy`], at most its cap a minute); calls in flight when it died fail at
//! once with its exit status and stderr's tail. An HTTP server's expired session is renewed by
//! its client, as for one client. A server's `notifications/tools/list_changed` makes the next
//! [`tools`](ServerSet::tools) list that server again, and the application is told
//! ([`ServerSetConfig::on_tools_changed`]). [`close`](ServerSet::close) ends every server at
//! once and reaps every process.

use crate::client::ListChangedCallback;
use crate::connect::{connect_http, connect_stdio};
use crate::http::{HttpTransport, HttpTransportConfig};
use crate::stdio::{StdioConfig, StdioTransport};
use crate::tools::{AgentTool, ToolError};
use crate::transport::BoxFuture;
use crate::{Client, ClientConfig, Error};
use mcp_proto::toolset::{
    plan, NameRules, Plan, RestartPolicy, RestartVerdict, Restarts, ServerTools, Skipped,
    ToolFilter,
};
use mcp_proto::{tool_output, CallToolResult, ListKind, Request, Tool, ToolDefinition, ToolOutput};
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How to reach one server.
#[derive(Debug, Clone)]
pub enum Launch {
    /// A child process over stdio.
    Stdio(StdioConfig),
    /// A Streamable HTTP endpoint.
    Http(Box<HttpTransportConfig>),
}

/// One server of a set.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Its name: the prefix of its tools' names, and how failures name it.
    pub name: String,
    /// How to reach it.
    pub launch: Launch,
    /// How long starting it and opening its session may take (default 30 s).
    pub startup_timeout: Duration,
    /// Each tool call's timeout (default: the client's request timeout).
    pub tool_timeout: Option<Duration>,
    /// Which of its tools are offered.
    pub filter: ToolFilter,
    /// Its client's settings.
    pub client: ClientConfig,
}

impl ServerSpec {
    /// A server with the defaults.
    pub fn new(name: impl Into<String>, launch: Launch) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            launch,
            startup_timeout: Duration::from_secs(30),
            tool_timeout: None,
            filter: ToolFilter::default(),
            client: ClientConfig::default(),
        }
    }
}

impl ServerSpec {
    /// The spec of a configured server ([`crate::config`]): its transport, timeouts and tool
    /// lists, with `client` as its client's settings (its [`label`](ClientConfig::label) set to
    /// the server's name). `None` for a server the file disables.
    pub fn from_entry(
        entry: &crate::config::ServerEntry,
        client: ClientConfig,
    ) -> Option<ServerSpec> {
        if !entry.enabled {
            return None;
        }
        let launch = match (entry.stdio_config(), entry.http_config()) {
            (Some(stdio), _) => Launch::Stdio(stdio),
            (None, Some(http)) => Launch::Http(Box::new(http)),
            (None, None) => return None,
        };
        let mut spec = ServerSpec::new(entry.name.clone(), launch);
        if let Some(t) = entry.startup_timeout {
            spec.startup_timeout = t;
        }
        spec.tool_timeout = entry.tool_timeout;
        spec.filter = ToolFilter {
            allow: entry.enabled_tools.clone(),
            deny: entry.disabled_tools.clone(),
        };
        spec.client = ClientConfig {
            label: Some(entry.name.clone()),
            ..client
        };
        Some(spec)
    }
}

/// Told the name of a server whose tool list changed.
pub type ToolsChanged = Arc<dyn Fn(&str) + Send + Sync>;

/// Told, as each server's start-up ends during [`ServerSet::connect`], its name and how many
/// tools it lists (or why it failed).
pub type ServerStarted = Arc<dyn Fn(&str, Result<usize, &Error>) + Send + Sync>;

/// The set's settings.
#[derive(Clone, Default)]
pub struct ServerSetConfig {
    /// How tools are named.
    pub names: NameRules,
    /// When a stdio server that exited may be started again.
    pub restart: RestartPolicy,
    /// Told when a server says its tool list changed.
    pub on_tools_changed: Option<ToolsChanged>,
    /// Told as each server's start-up ends (for progress shown while the others start).
    pub on_started: Option<ServerStarted>,
}

impl std::fmt::Debug for ServerSetConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSetConfig")
            .field("names", &self.names)
            .field("restart", &self.restart)
            .finish()
    }
}

/// Why a call to the set failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SetError {
    /// No tool has this name.
    #[error("no tool named {0:?}")]
    UnknownTool(String),
    /// The server is down and cannot be started now.
    #[error("server {server:?} is not running: {cause}")]
    Down {
        /// The server.
        server: String,
        /// Why (its last failure).
        cause: Error,
    },
    /// The server failed the call.
    #[error("server {server:?}: {cause}")]
    Server {
        /// The server.
        server: String,
        /// The error.
        cause: Error,
    },
}

/// A client of either transport.
#[derive(Clone)]
enum AnyClient {
    Stdio(Arc<Client<StdioTransport>>),
    Http(Arc<Client<HttpTransport>>),
}

impl AnyClient {
    async fn call(&self, request: Request) -> Result<CallToolResult, Error> {
        match self {
            AnyClient::Stdio(c) => c.call(request).await,
            AnyClient::Http(c) => c.call(request).await,
        }
    }

    async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        match self {
            AnyClient::Stdio(c) => c.list_tools().await,
            AnyClient::Http(c) => c.list_tools().await,
        }
    }

    fn tool_changes(&self) -> u64 {
        match self {
            AnyClient::Stdio(c) => c.lists_changed(ListKind::Tools),
            AnyClient::Http(c) => c.lists_changed(ListKind::Tools),
        }
    }

    /// Whether the server is gone for good: a stdio child that exited, or a closed session.
    fn dead(&self) -> Option<Error> {
        match self {
            AnyClient::Stdio(c) => c.closed().or_else(|| {
                c.transport()
                    .exit_status()
                    .map(|status| Error::ServerExited {
                        status: Some(status),
                        stderr: c.transport().stderr_tail(),
                    })
            }),
            AnyClient::Http(c) => c.closed(),
        }
    }

    async fn close(&self) {
        let _ = match self {
            AnyClient::Stdio(c) => c.close().await,
            AnyClient::Http(c) => c.close().await,
        };
    }
}

/// One server's state.
struct Slot {
    spec: ServerSpec,
    /// Held while (re)starting or listing, never during a call.
    state: smol::lock::Mutex<SlotState>,
    restarts: Mutex<Restarts>,
}

#[derive(Default)]
struct SlotState {
    client: Option<AnyClient>,
    /// The last failure to start, or the exit that ended the last client.
    failure: Option<Error>,
    /// Its tools, and its client's count of tool-list changes when they were listed.
    tools: Option<(Arc<Vec<Tool>>, u64)>,
    /// Clients started, counting the first.
    generation: u64,
}

struct Inner {
    slots: Vec<Slot>,
    config: ServerSetConfig,
    /// Set by [`ServerSet::close`]: no server is started again after it.
    closed: std::sync::atomic::AtomicBool,
    /// The current routing, with each route's definition as the model sees it.
    routing: Mutex<Arc<Routing>>,
}

#[derive(Default)]
struct Routing {
    plan: Plan,
    definitions: Vec<ToolDefinition>,
}

/// A supervised tool set over several servers. See the [module docs](self).
#[derive(Clone)]
pub struct ServerSet {
    inner: Arc<Inner>,
}

async fn start(spec: &ServerSpec) -> Result<AnyClient, Error> {
    let mut config = spec.client.clone();
    config.label.get_or_insert_with(|| spec.name.clone());
    let connect = async {
        match &spec.launch {
            Launch::Stdio(stdio) => connect_stdio(stdio.clone(), config.clone())
                .await
                .map(|c| AnyClient::Stdio(Arc::new(c))),
            Launch::Http(http) => connect_http((**http).clone(), config.clone())
                .await
                .map(|c| AnyClient::Http(Arc::new(c))),
        }
    };
    let timeout = spec.startup_timeout;
    smol::future::or(connect, async {
        smol::Timer::after(timeout).await;
        Err(Error::Timeout(timeout))
    })
    .await
}

impl ServerSet {
    /// Starts every server at once and lists their tools; a server that fails is reported by
    /// [`failures`](Self::failures), the others are offered.
    pub async fn connect(specs: Vec<ServerSpec>, config: ServerSetConfig) -> ServerSet {
        let slots = specs
            .into_iter()
            .map(|mut spec| {
                if let Some(told) = config.on_tools_changed.clone() {
                    let previous = spec.client.on_list_changed.take();
                    let name = spec.name.clone();
                    spec.client.on_list_changed =
                        Some(ListChangedCallback(Arc::new(move |kind| {
                            if let Some(p) = &previous {
                                (p.0)(kind);
                            }
                            if kind == ListKind::Tools {
                                told(&name);
                            }
                        })));
                }
                Slot {
                    spec,
                    state: smol::lock::Mutex::new(SlotState::default()),
                    restarts: Mutex::new(Restarts::default()),
                }
            })
            .collect();
        let set = ServerSet {
            inner: Arc::new(Inner {
                slots,
                config,
                closed: std::sync::atomic::AtomicBool::new(false),
                routing: Mutex::new(Arc::new(Routing::default())),
            }),
        };
        // Every server at once: a task each, so a slow one holds nobody up.
        let tasks: Vec<_> = (0..set.inner.slots.len())
            .map(|i| {
                let inner = set.inner.clone();
                smol::spawn(async move {
                    let slot = &inner.slots[i];
                    let mut state = slot.state.lock().await;
                    match start(&slot.spec).await {
                        Ok(client) => {
                            state.generation += 1;
                            state.client = Some(client.clone());
                            list(&mut state, &client).await;
                        }
                        Err(e) => state.failure = Some(e),
                    }
                    if let Some(told) = &inner.config.on_started {
                        let outcome = match (&state.tools, &state.failure) {
                            (Some((tools, _)), _) => Ok(tools.len()),
                            (None, Some(e)) => Err(e),
                            (None, None) => Ok(0),
                        };
                        told(&slot.spec.name, outcome);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await;
        }
        set.inner.replan().await;
        set
    }

    /// The servers that are not running now, with why (the start-up failure, with its stderr's
    /// tail for a stdio server, or the exit that ended it).
    pub async fn failures(&self) -> Vec<(String, Error)> {
        let mut out = Vec::new();
        for slot in &self.inner.slots {
            let state = slot.state.lock().await;
            let dead = state.client.as_ref().and_then(AnyClient::dead);
            if let Some(e) = dead.or_else(|| {
                state
                    .client
                    .is_none()
                    .then(|| state.failure.clone())
                    .flatten()
            }) {
                out.push((slot.spec.name.clone(), e));
            }
        }
        out
    }

    /// The process id of a stdio server's child while it runs.
    pub async fn server_pid(&self, name: &str) -> Option<u32> {
        let slot = self.inner.slots.iter().find(|s| s.spec.name == name)?;
        match &slot.state.lock().await.client {
            Some(AnyClient::Stdio(c)) => Some(c.transport().pid()),
            _ => None,
        }
    }

    /// The servers' names, in order.
    pub fn server_names(&self) -> Vec<&str> {
        self.inner
            .slots
            .iter()
            .map(|s| s.spec.name.as_str())
            .collect()
    }

    /// The tools offered now, as the model sees them: each server listed again if it said its
    /// list changed since. Left-out tools (filtered, name collisions) are in
    /// [`skipped`](Self::skipped).
    pub async fn tools(&self) -> Vec<SetTool> {
        self.inner.refresh().await;
        let routing = self.inner.routing();
        routing
            .plan
            .routes
            .iter()
            .zip(&routing.definitions)
            .map(|(route, definition)| SetTool {
                inner: self.inner.clone(),
                index: route.server,
                server: self.inner.slots[route.server].spec.name.clone(),
                tool: route.tool.clone(),
                definition: definition.clone(),
            })
            .collect()
    }

    /// What the last listing left out: `(server, tool, why)`.
    pub fn skipped(&self) -> Vec<(String, String, String)> {
        let routing = self.inner.routing();
        routing
            .plan
            .skipped
            .iter()
            .map(|s| match s {
                Skipped::Filtered { server, tool } => (
                    self.inner.slots[*server].spec.name.clone(),
                    tool.clone(),
                    "not offered by the server's allow/deny lists".to_owned(),
                ),
                Skipped::Collision {
                    server,
                    tool,
                    exposed,
                } => (
                    self.inner.slots[*server].spec.name.clone(),
                    tool.clone(),
                    format!("the name {exposed:?} is taken"),
                ),
            })
            .collect()
    }

    /// Calls a tool by the name the model sees.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<CallToolResult, SetError> {
        let route = {
            let routing = self.inner.routing();
            routing.plan.route(name).map(|r| (r.server, r.tool.clone()))
        };
        let Some((server, tool)) = route else {
            return Err(SetError::UnknownTool(name.to_owned()));
        };
        self.inner.call(server, &tool, arguments).await
    }

    /// Ends every server at once (every child process is ended and reaped). A call after it
    /// fails ([`SetError::Down`] with [`Error::Closed`]): no server is started again.
    pub async fn close(&self) {
        // Before taking the clients: a call that takes a slot's lock after this sees it.
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mut closing = Vec::new();
        for slot in &self.inner.slots {
            let client = slot.state.lock().await.client.take();
            if let Some(client) = client {
                closing.push(smol::spawn(async move { client.close().await }));
            }
        }
        for c in closing {
            c.await;
        }
    }
}

/// Lists a server's tools into its state (a failure keeps the previous list).
async fn list(state: &mut SlotState, client: &AnyClient) {
    let changes = client.tool_changes();
    match client.list_tools().await {
        Ok(tools) => state.tools = Some((Arc::new(tools), changes)),
        Err(e) => {
            if state.tools.is_none() {
                state.failure = Some(e);
            }
        }
    }
}

impl Inner {
    fn routing(&self) -> Arc<Routing> {
        self.routing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Lists again, all at once, every running server that said its tools changed, then
    /// re-plans.
    async fn refresh(self: &Arc<Self>) {
        let tasks: Vec<_> = (0..self.slots.len())
            .map(|i| {
                let inner = self.clone();
                smol::spawn(async move { inner.refresh_one(i).await })
            })
            .collect();
        let mut changed = false;
        for task in tasks {
            changed |= task.await;
        }
        if changed || self.routing().plan.routes.is_empty() {
            self.replan().await;
        }
    }

    /// Lists server `i` again if it said its tools changed; whether it did.
    async fn refresh_one(&self, i: usize) -> bool {
        let mut state = self.slots[i].state.lock().await;
        let Some(client) = state.client.clone() else {
            return false;
        };
        let stale = state
            .tools
            .as_ref()
            .is_none_or(|(_, seen)| *seen != client.tool_changes());
        if stale && client.dead().is_none() {
            list(&mut state, &client).await;
            return true;
        }
        false
    }

    async fn replan(&self) {
        let mut lists: Vec<Arc<Vec<Tool>>> = Vec::new();
        for slot in &self.slots {
            let state = slot.state.lock().await;
            lists.push(
                state
                    .tools
                    .as_ref()
                    .map(|(t, _)| t.clone())
                    .unwrap_or_default(),
            );
        }
        let names: Vec<Vec<String>> = lists
            .iter()
            .map(|l| l.iter().map(|t| t.name.clone()).collect())
            .collect();
        let servers: Vec<ServerTools<'_>> = self
            .slots
            .iter()
            .zip(&names)
            .map(|(slot, tools)| ServerTools {
                name: &slot.spec.name,
                filter: &slot.spec.filter,
                tools,
            })
            .collect();
        let plan = plan(&servers, &self.config.names);
        let definitions = plan
            .routes
            .iter()
            .map(|r| {
                let tool = lists[r.server]
                    .iter()
                    .find(|t| t.name == r.tool)
                    .expect("a routed tool is listed");
                let mut d = ToolDefinition::from(tool);
                d.name = r.exposed.clone();
                d
            })
            .collect();
        *self.routing.lock().unwrap_or_else(|e| e.into_inner()) =
            Arc::new(Routing { plan, definitions });
    }

    /// The running client of server `i`, started (again) when it is not running and the
    /// restart policy allows.
    async fn client(&self, i: usize) -> Result<AnyClient, SetError> {
        let slot = &self.slots[i];
        let mut state = slot.state.lock().await;
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(SetError::Down {
                server: slot.spec.name.clone(),
                cause: Error::Closed,
            });
        }
        if let Some(client) = &state.client {
            match client.dead() {
                None => return Ok(client.clone()),
                Some(e) => {
                    // Reap it before starting another.
                    let old = state.client.take();
                    state.failure = Some(e);
                    if let Some(old) = old {
                        old.close().await;
                    }
                }
            }
        }
        // HTTP servers are not restarted: their client renews sessions itself; one that failed
        // to start is tried again under the same policy.
        let verdict = lock(&slot.restarts).verdict(&self.config.restart, Instant::now());
        let cause = || state.failure.clone().unwrap_or(Error::Closed);
        match verdict {
            RestartVerdict::Exhausted { .. } => Err(SetError::Down {
                server: slot.spec.name.clone(),
                cause: cause(),
            }),
            RestartVerdict::After(wait) => {
                if !wait.is_zero() {
                    smol::Timer::after(wait).await;
                }
                lock(&slot.restarts).record(Instant::now());
                match start(&slot.spec).await {
                    Ok(client) => {
                        state.generation += 1;
                        state.client = Some(client.clone());
                        state.failure = None;
                        list(&mut state, &client).await;
                        drop(state);
                        // Its tools may have changed across the restart.
                        self.replan().await;
                        Ok(client)
                    }
                    Err(e) => {
                        state.failure = Some(e.clone());
                        Err(SetError::Down {
                            server: slot.spec.name.clone(),
                            cause: e,
                        })
                    }
                }
            }
        }
    }

    async fn call(
        &self,
        i: usize,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, SetError> {
        let slot = &self.slots[i];
        let client = self.client(i).await?;
        let mut request = Request::call_tool(tool, arguments);
        if let Some(t) = slot.spec.tool_timeout {
            request = request.timeout(t);
        }
        client
            .call(request)
            .await
            .map_err(|cause| SetError::Server {
                server: slot.spec.name.clone(),
                cause,
            })
    }
}

/// One tool of a [`ServerSet`], as an agent registers it: the name the model sees, the
/// server's description and schema; a call goes to its server with the tool's own name.
#[derive(Clone)]
pub struct SetTool {
    inner: Arc<Inner>,
    /// Its server's place in the set, and its name.
    index: usize,
    server: String,
    tool: String,
    definition: ToolDefinition,
}

impl SetTool {
    /// The definition as the model sees it (its name is the set's).
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The server it goes to.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool's own name, sent to the server.
    pub fn server_tool_name(&self) -> &str {
        &self.tool
    }

    /// Calls it and bridges the result (text, or a correctable failure).
    pub async fn call_output(&self, arguments: Value) -> Result<ToolOutput, SetError> {
        let name = &self.definition.name;
        match self.inner.call(self.index, &self.tool, arguments).await {
            Ok(result) => Ok(tool_output(name, &result)),
            Err(SetError::Server { server, cause }) => crate::tools::bridged(name, Err(cause))
                .map_err(|cause| SetError::Server { server, cause }),
            Err(e) => Err(e),
        }
    }
}

impl AgentTool for SetTool {
    fn name(&self) -> &str {
        &self.definition.name
    }

    fn description(&self) -> &str {
        &self.definition.description
    }

    fn input_schema(&self) -> &RawValue {
        &self.definition.input_schema
    }

    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            match self.call_output(arguments).await {
                Ok(ToolOutput::Text(text)) => Ok(text),
                Ok(ToolOutput::Retry(message)) => Err(ToolError::Retry(message)),
                Err(SetError::Server { cause, .. } | SetError::Down { cause, .. }) => {
                    Err(ToolError::Fatal(cause))
                }
                Err(SetError::UnknownTool(name)) => {
                    Err(ToolError::Retry(format!("no tool named {name:?}")))
                }
            }
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
