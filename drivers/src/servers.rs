//! One agent, many servers: a supervised tool set over several MCP servers, stdio and HTTP.
//!
//! [`ServerSet::connect`] starts every server at once, each within its start-up timeout, which
//! covers the connection, the session and the first `tools/list`; a server that fails any of
//! them is reported ([`ServerSet::failures`]: its name, the cause, its stderr's tail) and ended,
//! and the others work. Its tools are offered under the names the core's
//! [`server_set`](mcp_proto::server_set) gives them: `server__tool` by default (the separator is
//! configurable; or a prefix only where two servers offer the same name, or none), kept to 1–128
//! characters of `[A-Za-z0-9_.-]` (a long or odd name is shortened with a digest, predictably),
//! filtered by each server's allow and deny lists. Every call goes to its server, under that
//! server's tool timeout, with the tool's own name (a prefix never reaches the server). A
//! [`SetTool`] is an [`AgentTool`], as [`as_tools`](crate::as_tools) gives for one
//! client. The servers come from [`ServerSpec`]s, which the [`config`](crate::config) files give
//! ([`ServerSpec::from_entry`]).
//!
//! Supervision: a stdio server that exited is started again on the next call to it (after the
//! backoff of [`RestartPolicy`]: from 250 ms doubling to 8 s, at most 5 restarts a minute by
//! default); calls in flight when it died fail at
//! once with its exit status and stderr's tail. An HTTP server's expired session is renewed by
//! its client, as for one client. A server's `notifications/tools/list_changed` makes the next
//! [`tools`](ServerSet::tools) list that server again, and the application is told
//! ([`ServerSetConfig::on_tools_changed`]); a listing that fails keeps the server's last list
//! and is tried again only after a later change, and after the restart policy's backoff, so a
//! server that cannot list costs at most one request timeout per change it announces.
//! [`close`](ServerSet::close) ends every server at once and reaps every process.
//!
//! Resources, resource templates and prompts are listed across the set too, each with its
//! server, and a read, a prompt or a completion goes to its server ([`features`]).
//!
//! Nobody waits behind anybody: a server's state is behind a lock that is only taken to read or
//! swap it, never while a server is awaited. A restart runs as a task of its own that the
//! callers of that server wait on, so a call future polled once and then parked holds up
//! neither [`close`](ServerSet::close), [`failures`](ServerSet::failures) nor other calls; the
//! routing is planned from each server's last tool list, so one server's restart never waits
//! for another's listing or start-up.

use crate::client::ListChangedCallback;
#[cfg(feature = "http")]
use crate::connect::connect_http;
#[cfg(feature = "stdio")]
use crate::connect::connect_stdio;
#[cfg(feature = "http")]
use crate::http::HttpTransportConfig;
#[cfg(feature = "stdio")]
use crate::stdio::StdioConfig;
use crate::sync::lock;
use crate::tools::{AgentTool, ToolError};
use crate::transport::BoxFuture;
use crate::{Client, ClientConfig, Error};
use mcp_proto::server_set::{
    plan, refused_listing_means_no_tools, NameRules, Plan, RestartPolicy, RestartVerdict, Restarts,
    ServerTools, Skipped, ToolFilter,
};
use mcp_proto::{tool_output, CallToolResult, ListKind, Request, Tool, ToolDefinition, ToolOutput};
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub mod features;
pub mod skills;
pub use features::{FromServer, SetListing, SetPrompt};

/// How to reach one server.
#[derive(Debug, Clone)]
pub enum Launch {
    /// A child process over stdio.
    #[cfg(feature = "stdio")]
    Stdio(StdioConfig),
    /// A Streamable HTTP endpoint.
    #[cfg(feature = "http")]
    Http(Box<HttpTransportConfig>),
    /// A server whose transport this build leaves out (its cargo feature is off): starting it
    /// fails with [`Error::TransportUnavailable`], naming the feature.
    Unavailable {
        /// The transport the server needs: `"stdio"` or `"http"`.
        transport: &'static str,
    },
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

/// How to reach a configured server: `None` for neither a command nor a URL.
fn launch(entry: &crate::config::ServerEntry) -> Option<Launch> {
    use crate::config::ServerTransport;
    Some(match &entry.transport {
        #[cfg(feature = "stdio")]
        ServerTransport::Stdio { .. } => Launch::Stdio(entry.stdio_config()?),
        #[cfg(not(feature = "stdio"))]
        ServerTransport::Stdio { .. } => Launch::Unavailable { transport: "stdio" },
        #[cfg(feature = "http")]
        ServerTransport::Http { .. } => Launch::Http(Box::new(entry.http_config()?)),
        #[cfg(not(feature = "http"))]
        ServerTransport::Http { .. } => Launch::Unavailable { transport: "http" },
    })
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
        let launch = launch(entry)?;
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
    /// When a stdio server that exited may be started again (and, by the same backoff, when a
    /// re-listing that failed may be tried again).
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
        #[source]
        cause: Error,
    },
    /// No server of the set has this name.
    #[error("no server named {0:?}")]
    UnknownServer(String),
    /// No prompt has this name (its name in the set, `server__prompt`).
    #[error("no prompt named {0:?}")]
    UnknownPrompt(String),
    /// No server was named for a resource, and not exactly one server lists it.
    #[error("{}", unknown_resource(uri, servers))]
    UnknownResource {
        /// The resource's URI.
        uri: String,
        /// The servers that list it (none, or several).
        servers: Vec<String>,
    },
    /// No server was named for a skill, and not exactly one server lists it.
    #[error("{}", unknown_skill(skill, servers))]
    UnknownSkill {
        /// The skill's name or URI.
        skill: String,
        /// The servers that list it (none, or several).
        servers: Vec<String>,
    },
    /// The server failed the call.
    #[error("server {server:?}: {cause}")]
    Server {
        /// The server.
        server: String,
        /// The error.
        #[source]
        cause: Error,
    },
}

fn unknown_resource(uri: &str, servers: &[String]) -> String {
    if servers.is_empty() {
        format!("no server lists the resource {uri:?}: name its server")
    } else {
        format!("the resource {uri:?} is listed by servers {servers:?}: name one")
    }
}

fn unknown_skill(skill: &str, servers: &[String]) -> String {
    if servers.is_empty() {
        format!("no server lists a skill {skill:?}")
    } else {
        format!("a skill {skill:?} is listed by servers {servers:?}: name one")
    }
}

/// What the set asks of a server's client besides its calls.
trait Supervised {
    /// The client's count of tool-list changes.
    fn tool_changes(&self) -> u64;
    /// Whether the server is gone for good: a stdio child that exited, or a closed session.
    fn dead(&self) -> Option<Error>;
}

impl Supervised for Client {
    fn tool_changes(&self) -> u64 {
        self.lists_changed(ListKind::Tools)
    }

    fn dead(&self) -> Option<Error> {
        self.closed().or_else(|| self.transport().ended())
    }
}

/// One server's state.
struct Slot {
    spec: ServerSpec,
    /// Taken only to read or swap what it holds, never across an `.await`: a caller that is
    /// suspended, or parked, holds nobody up.
    state: Mutex<SlotState>,
    /// Told when a task of this server's ends ([`restart`]).
    settled: event_listener::Event,
}

#[derive(Default)]
struct SlotState {
    client: Option<Client>,
    /// The last failure to start, or the exit that ended the last client.
    failure: Option<Error>,
    /// Its last tool list, what the routing is planned from (kept across a failed restart, so
    /// that a call can still try again), and its client's count of tool-list changes when it
    /// was listed.
    tools: Option<(Arc<Vec<Tool>>, u64)>,
    /// Clients started, counting the first.
    generation: u64,
    /// A task of its own ([`restart`]) is starting the server again, or reaping its exited
    /// client.
    busy: bool,
    /// How many such tasks ended: a caller waits for the first to end after it asked.
    settled: u64,
    restarts: Restarts,
    relist: Relist,
}

/// The failed re-listings of a running server (after its `notifications/tools/list_changed`).
#[derive(Default)]
struct Relist {
    /// When they failed, for the backoff of [`RestartPolicy`].
    history: Restarts,
    /// No listing is tried before this.
    not_before: Option<Instant>,
    /// The client's count of changes a listing failed for: only a later change is listed again.
    failed_at: Option<u64>,
}

struct Inner {
    slots: Vec<Slot>,
    config: ServerSetConfig,
    /// Set by [`ServerSet::close`]: no server is started again after it.
    closed: std::sync::atomic::AtomicBool,
    /// Told by [`ServerSet::close`]: a restart under way stops.
    closing: event_listener::Event,
    /// The current routing, with each route's definition as the model sees it.
    routing: Mutex<Arc<Routing>>,
    /// Held while a plan is made from the servers' last lists and put in place, so that an
    /// older plan never replaces a newer one (never across an `.await`).
    planning: Mutex<()>,
    /// The prompts' names and routes, from the last listing of them ([`features`]).
    prompts: Mutex<Arc<Plan>>,
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

/// A server started: its client and its first tool list.
struct Started {
    client: Client,
    tools: Vec<Tool>,
    /// The client's count of tool-list changes before the listing.
    changes: u64,
}

/// Starts a server: the connection, the session and the first `tools/list`, all within its
/// start-up timeout. A server whose tools cannot be listed offers nothing: it failed to start,
/// and is ended.
async fn start(spec: &ServerSpec) -> Result<Started, Error> {
    let mut config = spec.client.clone();
    config.label.get_or_insert_with(|| spec.name.clone());
    let connect = async {
        let client = match &spec.launch {
            #[cfg(feature = "stdio")]
            Launch::Stdio(stdio) => connect_stdio(stdio.clone(), config.clone()).await,
            #[cfg(feature = "http")]
            Launch::Http(http) => connect_http((**http).clone(), config.clone()).await,
            Launch::Unavailable { transport } => Err(Error::TransportUnavailable { transport }),
        }?;
        let changes = client.tool_changes();
        // A server that offers only resources or prompts joins the set with no tools.
        let capabilities = client.initialize_result().map(|init| init.capabilities);
        let listed = match client.list_tools().await {
            Err(Error::Protocol(_)) if refused_listing_means_no_tools(capabilities.as_ref()) => {
                Ok(Vec::new())
            }
            listed => listed,
        };
        match listed {
            Ok(tools) => Ok(Started {
                client,
                tools,
                changes,
            }),
            Err(e) => {
                let _ = client.close().await;
                Err(e)
            }
        }
    };
    let timeout = spec.startup_timeout;
    // On timeout the half-started client is dropped: its transport ends the server.
    smol::future::or(connect, async {
        smol::Timer::after(timeout).await;
        Err(Error::Timeout(timeout))
    })
    .await
}

impl ServerSet {
    /// Starts every server at once and lists their tools; a server that fails (to start, to
    /// open its session or to list its tools, within its start-up timeout) is reported by
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
                    state: Mutex::new(SlotState::default()),
                    settled: event_listener::Event::new(),
                }
            })
            .collect();
        let set = ServerSet {
            inner: Arc::new(Inner {
                slots,
                config,
                closed: std::sync::atomic::AtomicBool::new(false),
                closing: event_listener::Event::new(),
                routing: Mutex::new(Arc::new(Routing::default())),
                planning: Mutex::new(()),
                prompts: Mutex::default(),
            }),
        };
        // Every server at once: a task each, so a slow one holds nobody up.
        let tasks: Vec<_> = (0..set.inner.slots.len())
            .map(|i| {
                let inner = set.inner.clone();
                smol::spawn(async move {
                    let slot = &inner.slots[i];
                    let outcome = match start(&slot.spec).await {
                        Ok(started) => {
                            let n = started.tools.len();
                            let mut state = lock(&slot.state);
                            state.generation += 1;
                            state.client = Some(started.client);
                            state.tools = Some((Arc::new(started.tools), started.changes));
                            Ok(n)
                        }
                        Err(e) => {
                            lock(&slot.state).failure = Some(e.clone());
                            Err(e)
                        }
                    };
                    if let Some(told) = &inner.config.on_started {
                        told(&slot.spec.name, outcome.as_ref().map(|n| *n));
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await;
        }
        set.inner.replan();
        set
    }

    /// The servers that are not running now, with why: the start-up failure (with its stderr's
    /// tail for a stdio server; a server whose first `tools/list` failed is one), or the exit
    /// that ended it. Never waits for a server.
    pub async fn failures(&self) -> Vec<(String, Error)> {
        self.inner
            .slots
            .iter()
            .filter_map(|slot| {
                let (client, failure) = {
                    let state = lock(&slot.state);
                    (state.client.clone(), state.failure.clone())
                };
                let why = match client {
                    Some(client) => client.dead(),
                    None => failure,
                };
                why.map(|e| (slot.spec.name.clone(), e))
            })
            .collect()
    }

    /// The process id of a stdio server's child while it runs.
    pub async fn server_pid(&self, name: &str) -> Option<u32> {
        let slot = self.inner.slots.iter().find(|s| s.spec.name == name)?;
        lock(&slot.state).client.as_ref()?.transport().pid()
    }

    /// The servers' names, in order.
    pub fn server_names(&self) -> Vec<&str> {
        self.inner
            .slots
            .iter()
            .map(|s| s.spec.name.as_str())
            .collect()
    }

    /// The tools offered now, as the model sees them: each running server listed again if it
    /// said its list changed since (a listing that failed keeps the server's last list, and is
    /// tried again only for a later change, after the backoff of [`RestartPolicy`]). Left-out
    /// tools (filtered, name collisions) are in [`skipped`](Self::skipped).
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

    /// Waits, for at most `within`, until every running server that may still ask for the
    /// roots has asked and been answered ([`Client::roots_listed`], all at once): for a first
    /// call that depends on a server's roots. Servers that need not be waited for cost nothing.
    /// Returns whether any server's roots were answered.
    pub async fn roots_listed(&self, within: Duration) -> bool {
        let waits: Vec<_> = self
            .inner
            .slots
            .iter()
            .filter_map(|slot| lock(&slot.state).client.clone())
            .map(|client| smol::spawn(async move { client.roots_listed(within).await }))
            .collect();
        let mut any = false;
        for wait in waits {
            any |= wait.await;
        }
        any
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
    /// fails ([`SetError::Down`] with [`Error::Closed`]): no server is started again. A restart
    /// under way stops: a server it had half started is ended as a dropped transport ends it, on
    /// a thread of its own ([`wait_for_shutdowns`](crate::stdio::wait_for_shutdowns) waits for
    /// it).
    pub async fn close(&self) {
        // Before taking the clients: a restart that puts its client in place after this sees
        // it, and closes that client itself.
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.closing.notify(usize::MAX);
        let mut closing = Vec::new();
        for slot in &self.inner.slots {
            let client = lock(&slot.state).client.take();
            if let Some(client) = client {
                closing.push(smol::spawn(async move {
                    let _ = client.close().await;
                }));
            }
        }
        for c in closing {
            c.await;
        }
        for slot in &self.inner.slots {
            settle(slot, |state| !state.busy).await;
        }
    }
}

/// Waits until `done` holds of the slot's state, woken as its tasks end.
async fn settle(slot: &Slot, done: impl Fn(&SlotState) -> bool) {
    loop {
        let settled = {
            let state = lock(&slot.state);
            if done(&state) {
                return;
            }
            // Listening before the lock is let go: a task that ends after it is heard.
            slot.settled.listen()
        };
        settled.await;
    }
}

/// Marks the end of a slot's task, also when it panics.
struct Settles<'a>(&'a Slot);

impl Drop for Settles<'_> {
    fn drop(&mut self) {
        {
            let mut state = lock(&self.0.state);
            state.busy = false;
            state.settled += 1;
        }
        self.0.settled.notify(usize::MAX);
    }
}

/// Server `i`'s task: reaps its exited client `old`, then, when `wait` is given, starts it
/// again after that backoff, puts the new client in place (unless the set was closed
/// meanwhile) and re-plans the routing. A task of its own, on smol's executor: no caller's
/// polling drives it, and no lock is held while it waits.
async fn restart(inner: Arc<Inner>, i: usize, old: Option<Client>, wait: Option<Duration>) {
    let slot = &inner.slots[i];
    let _settles = Settles(slot);
    // Reap it before starting another.
    if let Some(old) = old {
        let _ = old.close().await;
    }
    let Some(wait) = wait else {
        return;
    };
    let attempt = async {
        if !wait.is_zero() {
            smol::Timer::after(wait).await;
        }
        lock(&slot.state).restarts.record(Instant::now());
        Some(start(&slot.spec).await)
    };
    let closed = async {
        inner.until_closed().await;
        None
    };
    let late = match smol::future::or(attempt, closed).await {
        Some(Ok(started)) => {
            let mut state = lock(&slot.state);
            if inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
                Some(started.client)
            } else {
                state.generation += 1;
                state.client = Some(started.client);
                state.tools = Some((Arc::new(started.tools), started.changes));
                state.failure = None;
                state.relist = Relist::default();
                None
            }
        }
        Some(Err(e)) => {
            lock(&slot.state).failure = Some(e);
            return;
        }
        None => return,
    };
    match late {
        Some(client) => {
            let _ = client.close().await;
        }
        // Its tools may have changed across the restart.
        None => inner.replan(),
    }
}

impl Inner {
    fn routing(&self) -> Arc<Routing> {
        lock(&self.routing).clone()
    }

    /// Returns once [`ServerSet::close`] was called.
    async fn until_closed(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        loop {
            if self.closed.load(SeqCst) {
                return;
            }
            let closing = self.closing.listen();
            if self.closed.load(SeqCst) {
                return;
            }
            closing.await;
        }
    }

    /// Lists again, all at once, every running server that said its tools changed, then
    /// re-plans.
    async fn refresh(self: &Arc<Self>) {
        let now = Instant::now();
        let tasks: Vec<_> = (0..self.slots.len())
            .filter_map(|i| {
                let (client, generation) = self.stale(i, now)?;
                let inner = self.clone();
                Some(smol::spawn(async move {
                    inner.relist(i, client, generation).await
                }))
            })
            .collect();
        let mut changed = false;
        for task in tasks {
            changed |= task.await;
        }
        if changed || self.routing().plan.routes.is_empty() {
            self.replan();
        }
    }

    /// Server `i`'s running client and its generation, when the server said its tools changed
    /// since they were listed and a listing may be tried now: not twice for one change, and
    /// after a failed one not before the backoff of the restart policy.
    fn stale(&self, i: usize, now: Instant) -> Option<(Client, u64)> {
        let (client, seen, generation, relist_at) = {
            let state = lock(&self.slots[i].state);
            let relist_at = match state.relist.not_before {
                Some(t) if now < t => return None,
                _ => state.relist.failed_at,
            };
            (
                state.client.clone()?,
                state.tools.as_ref().map(|(_, seen)| *seen),
                state.generation,
                relist_at,
            )
        };
        let changes = client.tool_changes();
        let stale = seen != Some(changes) && relist_at != Some(changes);
        (stale && client.dead().is_none()).then_some((client, generation))
    }

    /// Lists server `i` again, with no lock held while it answers; whether its list changed.
    /// A failure keeps the last list.
    async fn relist(&self, i: usize, client: Client, generation: u64) -> bool {
        let changes = client.tool_changes();
        let listed = client.list_tools().await;
        let mut state = lock(&self.slots[i].state);
        if state.generation != generation {
            // Started again meanwhile: its start listed it.
            return false;
        }
        match listed {
            Ok(tools) => {
                state.tools = Some((Arc::new(tools), changes));
                state.relist = Relist::default();
                true
            }
            Err(_) => {
                let now = Instant::now();
                let relist = &mut state.relist;
                relist.history.record(now);
                relist.failed_at = Some(changes);
                relist.not_before = Some(match relist.history.verdict(&self.config.restart, now) {
                    RestartVerdict::After(wait) => now + wait,
                    RestartVerdict::Exhausted { until } => until,
                });
                false
            }
        }
    }

    /// Plans the routing from each server's last list (a snapshot: nothing here waits for a
    /// server) and puts it in place.
    fn replan(&self) {
        let _planning = lock(&self.planning);
        let lists: Vec<Arc<Vec<Tool>>> = self
            .slots
            .iter()
            .map(|slot| {
                lock(&slot.state)
                    .tools
                    .as_ref()
                    .map(|(t, _)| t.clone())
                    .unwrap_or_default()
            })
            .collect();
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
        *lock(&self.routing) = Arc::new(Routing { plan, definitions });
    }

    /// The running client of server `i`, started again when it is not running and the restart
    /// policy allows: by a task of its own ([`restart`]) that every caller of this server waits
    /// on, so that a caller whose future is parked holds nobody up.
    async fn client(self: &Arc<Self>, i: usize) -> Result<Client, SetError> {
        use std::sync::atomic::Ordering::SeqCst;
        let slot = &self.slots[i];
        let down = |cause| SetError::Down {
            server: slot.spec.name.clone(),
            cause,
        };
        // The plain case: one lock, taken and let go, and an `Arc` cloned.
        let running = {
            let state = lock(&slot.state);
            if self.closed.load(SeqCst) {
                return Err(down(Error::Closed));
            }
            state.client.clone()
        };
        if let Some(client) = running.filter(|c| c.dead().is_none()) {
            return Ok(client);
        }
        let asked = {
            let mut state = lock(&slot.state);
            if self.closed.load(SeqCst) {
                return Err(down(Error::Closed));
            }
            if let Some(client) = state.client.as_ref().filter(|c| c.dead().is_none()) {
                // Started again meanwhile.
                return Ok(client.clone());
            }
            let asked = state.settled;
            if !state.busy {
                let old = state.client.take();
                if let Some(e) = old.as_ref().and_then(Supervised::dead) {
                    state.failure = Some(e);
                }
                // HTTP servers are not restarted: their client renews sessions itself; one that
                // failed to start is tried again under the same policy.
                let wait = match state.restarts.verdict(&self.config.restart, Instant::now()) {
                    RestartVerdict::After(wait) => Some(wait),
                    RestartVerdict::Exhausted { .. } => None,
                };
                if wait.is_some() || old.is_some() {
                    state.busy = true;
                    smol::spawn(restart(self.clone(), i, old, wait)).detach();
                }
                if wait.is_none() {
                    return Err(down(state.failure.clone().unwrap_or(Error::Closed)));
                }
            }
            asked
        };
        settle(slot, |state| state.settled > asked).await;
        let state = lock(&slot.state);
        if self.closed.load(SeqCst) {
            return Err(down(Error::Closed));
        }
        match state.client.as_ref().filter(|c| c.dead().is_none()) {
            Some(client) => Ok(client.clone()),
            None => Err(down(state.failure.clone().unwrap_or(Error::Closed))),
        }
    }

    async fn call(
        self: &Arc<Self>,
        i: usize,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, SetError> {
        let slot = &self.slots[i];
        let client = self.client(i).await?;
        let failed = |cause| SetError::Server {
            server: slot.spec.name.clone(),
            cause,
        };
        // A tool that requires a task (the core decides, from its last listing) is called as
        // one and waited for, as a single client's bridged tool is (`McpTool`).
        let as_task = client.takes_task_calls() && {
            let state = lock(&slot.state);
            let listed = state.tools.as_ref().map(|(tools, _)| tools.clone());
            drop(state);
            listed.and_then(|tools| {
                let tool = tools.iter().find(|t| t.name == tool)?;
                Some(client.task_call_mode(tool, false) == mcp_proto::tasks::CallMode::Task)
            }) == Some(true)
        };
        if as_task {
            let timeout = slot.spec.tool_timeout.or(client.default_timeout());
            return client
                .wait_task_call(tool, arguments, timeout, |_| {})
                .await
                .map_err(failed);
        }
        let mut request = Request::call_tool(tool, arguments);
        if let Some(t) = slot.spec.tool_timeout {
            request = request.timeout(t);
        }
        client.call(request).await.map_err(failed)
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
                // A call reaches no other.
                Err(other) => Err(ToolError::Retry(other.to_string())),
            }
        })
    }
}
