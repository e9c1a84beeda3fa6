//! # mcp-connect-rig: MCP servers' tools in rig
//!
//! Turns the bridged tools of [`mcp_connect`] — one [`Client`]'s ([`as_tools`](mcp_connect::as_tools))
//! or a whole [`ServerSet`]'s, under their prefixed names — into rig's
//! [`DynamicTool`]s, and keeps a rig tool registry (any [`ManagedToolSink`]: rig-agent's
//! `ToolServerHandle`) in sync with the servers' tool lists, as rig's own `rig-rmcp` does.
//!
//! - [`dynamic_tool`]: one [`AgentTool`] as a rig tool: the server's name, description and input
//!   schema; a call hands the model's arguments, as rig parsed them, to the bridge.
//! - [`ToolSync`]: registers a client's or a set's tools in a registry and, told of a change
//!   (`notifications/tools/list_changed`), lists them again and adds, replaces and removes what
//!   changed — only its own registrations, never the application's tools.
//!
//! What the model reads is the bridge's: text joined, placeholders for what is not text. A
//! tool's own failure (`isError: true`, [`ToolError::Retry`]) is a failed tool result whose text
//! is exactly the bridge's, which rig hands back to the model so that it may correct its
//! arguments and retry. A failure of the call itself ([`ToolError::Fatal`]: transport, timeout,
//! server exit) is a [`ToolExecutionError`] of kind timeout, cancelled or provider whose source
//! is the [`mcp_connect::Error`] ([`is_fatal`] tells which): a hook may end the run on it.
//!
//! # Any executor
//!
//! The tools' futures are the driver's, which need no runtime (smol's reactor runs on a thread
//! of its own): rig calls them from tokio, smol or any other executor. A re-listing after a
//! change runs on smol's global executor, as the driver's idle reader does, so neither a tokio
//! nor a smol application spawns anything.
//!
//! The README's example, compiled:
#![doc = include_str!("../README.md")]

use mcp_connect::client::ListChangedCallback;
use mcp_connect::proto::ListKind;
#[cfg(any(feature = "stdio", feature = "http"))]
use mcp_connect::servers::ToolsChanged;
#[cfg(any(feature = "stdio", feature = "http"))]
use mcp_connect::ServerSet;
use mcp_connect::{AgentTool, Client, Error, ToolError};
use rig_core::message::{EmptyToolName, ToolName};
use rig_core::tool::{
    DynamicTool, ManagedToolSink, ManagedToolToken, ToolExecutionError, ToolOutput,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

/// One bridged tool as a rig [`DynamicTool`]: its name, description and input schema as the
/// server gave them (a [`ServerSet`]'s tool under its name in the set).
///
/// A call hands the arguments rig parsed from the model's JSON to [`AgentTool::call`] as they
/// are (no re-serialising; `null` becomes `{}` in the core). Its text is the tool's output; a
/// [`ToolError`] becomes a [`ToolExecutionError`] ([`tool_error`]).
///
/// Fails with [`EmptyToolName`] for a tool without a name (rig refuses one).
pub fn dynamic_tool<T: AgentTool + 'static>(tool: T) -> Result<DynamicTool, EmptyToolName> {
    let name = ToolName::new(tool.name())?;
    let description = tool.description().to_owned();
    let parameters = schema(&tool);
    let tool = Arc::new(tool);
    Ok(DynamicTool::new(
        name,
        description,
        parameters,
        move |arguments: Value| {
            let tool = Arc::clone(&tool);
            Box::pin(async move {
                match tool.call(arguments).await {
                    Ok(text) => Ok(ToolOutput::text(text)),
                    Err(error) => Err(tool_error(tool.name(), error)),
                }
            })
        },
    ))
}

/// The tool's input schema as a JSON value. The schema came as JSON text; a schema nested past
/// serde_json's depth limit (128) cannot be a value, and is offered as `{"type": "object"}`.
fn schema(tool: &dyn AgentTool) -> Value {
    serde_json::from_str(tool.input_schema().get())
        .unwrap_or_else(|_| serde_json::json!({"type": "object"}))
}

/// A bridged tool's failure as rig's tool error.
///
/// - [`ToolError::Retry`] (`isError: true`, or arguments the transport cannot carry): kind
///   `other`, and the model reads exactly the bridge's text, to correct its arguments and retry.
/// - [`ToolError::Fatal`]: kind `timeout` ([`Error::Timeout`]), `cancelled`
///   ([`Error::Cancelled`]) or `provider` (anything else: the server failed or went away),
///   reading `NAME: ERROR`, with the [`Error`] as its source ([`is_fatal`]).
pub fn tool_error(name: &str, error: ToolError) -> ToolExecutionError {
    match error {
        ToolError::Retry(text) => ToolExecutionError::other(text),
        ToolError::Fatal(error) => {
            let message = format!("{name}: {error}");
            let mapped = match &error {
                Error::Timeout(_) => ToolExecutionError::timeout(message),
                Error::Cancelled(_) => ToolExecutionError::cancelled(message),
                _ => ToolExecutionError::provider(message),
            };
            mapped.with_source(error)
        }
        // A kind added later: shown as it reads.
        other => ToolExecutionError::other(other.to_string()),
    }
}

/// Whether rig's tool error is a call that failed ([`ToolError::Fatal`]: its source is the
/// driver's [`Error`]), rather than the tool's own failure that the model may correct.
pub fn is_fatal(error: &ToolExecutionError) -> bool {
    error.downcast_ref::<Error>().is_some()
}

/// A client's tools now, as rig tools (a snapshot: [`ToolSync`] keeps a registry current). A
/// tool is live ([`DynamicTool::is_live`]) while its client's session is open and its transport
/// has not ended, so that a registry retires the tools of a server that went away.
pub async fn client_tools(client: &Client) -> Result<Vec<DynamicTool>, Error> {
    let tools = mcp_connect::as_tools(client).await?;
    Ok(tools
        .into_iter()
        .filter_map(|tool| {
            let client = client.clone();
            dynamic_tool(tool).ok().map(|tool| {
                tool.with_liveness(move || {
                    client.closed().is_none() && client.transport().ended().is_none()
                })
            })
        })
        .collect())
}

#[cfg(any(feature = "stdio", feature = "http"))]
/// A set's tools now, under their names in the set, as rig tools (a snapshot). A server that
/// exited is started again on its next call, so they stay live.
pub async fn set_tools(set: &ServerSet) -> Vec<DynamicTool> {
    set.tools()
        .await
        .into_iter()
        .filter_map(|tool| dynamic_tool(tool).ok())
        .collect()
}

/// Where a [`ToolSync`] lists its tools.
#[derive(Clone)]
enum Source {
    Client(Client),
    #[cfg(any(feature = "stdio", feature = "http"))]
    Set(ServerSet),
}

impl Source {
    async fn tools(&self) -> Result<Vec<DynamicTool>, Error> {
        match self {
            Source::Client(client) => client_tools(client).await,
            #[cfg(any(feature = "stdio", feature = "http"))]
            Source::Set(set) => Ok(set_tools(set).await),
        }
    }
}

#[derive(Default)]
struct State {
    source: Option<Source>,
    /// The registry's token for each name this sync registered (rig's ownership: a name
    /// registered since by anyone else is left alone).
    registrations: HashMap<String, ManagedToolToken>,
    /// The newest listing begun, and the newest put in the registry: an older listing that ends
    /// last never replaces a newer one.
    begun: u64,
    committed: u64,
    /// Whether anything was put in the registry yet (the first listing adds, the next reconcile).
    registered: bool,
    /// A re-listing is running, and another was asked for while it ran.
    running: bool,
    again: bool,
    /// Listings put in place (counting the first), listings that failed, and why the last
    /// listing failed (if it did).
    refreshes: u64,
    failures: u64,
    last_error: Option<Error>,
}

struct Shared {
    sink: Box<dyn ManagedToolSink + Send + Sync>,
    state: Mutex<State>,
    /// Told after each listing ends, put in place or failed.
    settled: Condvarish,
}

/// Waiters for the next listing's end: an async wait, with no runtime of its own.
#[derive(Default)]
struct Condvarish {
    wakers: Mutex<Vec<smol::channel::Sender<()>>>,
}

impl Condvarish {
    fn listen(&self) -> smol::channel::Receiver<()> {
        let (tx, rx) = smol::channel::bounded(1);
        let mut wakers = lock(&self.wakers);
        // A waiter that gave up (its future dropped) is let go: the list holds only live ones.
        wakers.retain(|tx| !tx.is_closed());
        wakers.push(tx);
        rx
    }

    fn notify(&self) {
        for tx in lock(&self.wakers).drain(..) {
            let _ = tx.try_send(());
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps a rig tool registry in sync with one client's or one [`ServerSet`]'s tool list.
///
/// Made with the registry, handed to the client's or the set's configuration as its
/// list-change callback ([`on_list_changed`](Self::on_list_changed),
/// [`on_tools_changed`](Self::on_tools_changed)), then given the connected client or set
/// ([`register_client`](Self::register_client), [`register_set`](Self::register_set)), which
/// lists the tools and registers them. From then on each change the server announces is listed
/// again on smol's global executor and reconciled with the registry: new tools added, changed
/// ones replaced, gone ones removed. Only the names this sync registered are touched, and only
/// while the registry still holds its registration: a tool the application registered under the
/// same name since is left alone (rig's [`ManagedToolSink`] contract). Announcements that come
/// while a listing runs are coalesced into one listing after it.
///
/// A failed re-listing leaves the registry as it was ([`last_error`](Self::last_error)); the
/// next change lists again. Dropping the `ToolSync` stops the syncing (the callbacks hold it
/// weakly); the tools stay registered.
///
/// One `ToolSync` serves one client or one set.
pub struct ToolSync {
    shared: Arc<Shared>,
}

impl ToolSync {
    /// A sync into `sink`: rig-agent's `ToolServerHandle` (a clone of the agent's), or any
    /// other [`ManagedToolSink`].
    pub fn new(sink: impl ManagedToolSink + Send + Sync + 'static) -> Self {
        ToolSync {
            shared: Arc::new(Shared {
                sink: Box::new(sink),
                state: Mutex::new(State::default()),
                settled: Condvarish::default(),
            }),
        }
    }

    /// The callback for [`ClientConfig::on_list_changed`](mcp_connect::ClientConfig): a
    /// change to the tool list lists again (other lists are not this sync's).
    ///
    /// > "When the list of available tools changes, servers that declared the `listChanged`
    /// > capability SHOULD send a notification" — MCP 2025-11-25, Server § Tools
    pub fn on_list_changed(&self) -> ListChangedCallback {
        let shared = Arc::downgrade(&self.shared);
        ListChangedCallback(Arc::new(move |kind| {
            if kind == ListKind::Tools {
                relist(&shared);
            }
        }))
    }

    #[cfg(any(feature = "stdio", feature = "http"))]
    /// The callback for [`ServerSetConfig::on_tools_changed`](mcp_connect::ServerSetConfig):
    /// a change on any server lists the set again (only that server is listed again).
    pub fn on_tools_changed(&self) -> ToolsChanged {
        let shared = Arc::downgrade(&self.shared);
        Arc::new(move |_server: &str| relist(&shared))
    }

    /// Lists the client's tools and registers them (replacing same-name tools, as a
    /// registration does). Returns how many this sync holds.
    pub async fn register_client(&self, client: &Client) -> Result<usize, Error> {
        self.register(Source::Client(client.clone())).await
    }

    #[cfg(any(feature = "stdio", feature = "http"))]
    /// Lists the set's tools, under their names in the set, and registers them. Returns how many
    /// this sync holds.
    pub async fn register_set(&self, set: &ServerSet) -> usize {
        self.register(Source::Set(set.clone()))
            .await
            .unwrap_or_default()
    }

    async fn register(&self, source: Source) -> Result<usize, Error> {
        lock(&self.shared.state).source = Some(source);
        list_once(&self.shared).await?;
        Ok(self.names().len())
    }

    /// Lists the tools again now and reconciles the registry (what a change does). Returns how
    /// many this sync holds.
    pub async fn refresh(&self) -> Result<usize, Error> {
        list_once(&self.shared).await?;
        Ok(self.names().len())
    }

    /// The names this sync registered and the registry still holds as its own.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = lock(&self.shared.state)
            .registrations
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// How many listings were put in the registry so far (the first one counts).
    pub fn refreshes(&self) -> u64 {
        lock(&self.shared.state).refreshes
    }

    /// Waits until more than `seen` listings were put in the registry ([`refreshes`]), or a
    /// listing failed after this was called: for an application (or a test) that waits for a
    /// change to be picked up. Returns the count.
    ///
    /// [`refreshes`]: Self::refreshes
    pub async fn refreshed_since(&self, seen: u64) -> u64 {
        let failures = lock(&self.shared.state).failures;
        loop {
            // Listening before looking: a listing that ends in between is not missed.
            let told = self.shared.settled.listen();
            let (now, failed) = {
                let state = lock(&self.shared.state);
                (state.refreshes, state.failures)
            };
            if now > seen || failed > failures || told.recv().await.is_err() {
                return now;
            }
        }
    }

    /// Why the last listing failed, if the last one did.
    pub fn last_error(&self) -> Option<Error> {
        lock(&self.shared.state).last_error.clone()
    }
}

/// A change was announced: list again on smol's global executor, or after the listing that
/// runs now.
fn relist(shared: &Weak<Shared>) {
    let Some(shared) = shared.upgrade() else {
        return;
    };
    {
        let mut state = lock(&shared.state);
        if state.source.is_none() {
            // Not registered yet: the first listing, still to come, sees this change.
            return;
        }
        if state.running {
            state.again = true;
            return;
        }
        state.running = true;
    }
    smol::spawn(async move {
        loop {
            // Its failure is kept in `last_error`; the next change lists again.
            let _ = list_once(&shared).await;
            let mut state = lock(&shared.state);
            if !std::mem::take(&mut state.again) {
                state.running = false;
                break;
            }
        }
    })
    .detach();
}

/// Lists the source's tools and puts them in the registry, unless a newer listing already did.
async fn list_once(shared: &Shared) -> Result<(), Error> {
    let (source, listing) = {
        let mut state = lock(&shared.state);
        let Some(source) = state.source.clone() else {
            return Ok(());
        };
        state.begun += 1;
        (source, state.begun)
    };
    let outcome = source.tools().await;
    let result = {
        let mut state = lock(&shared.state);
        match outcome {
            Ok(_) if listing <= state.committed => Ok(()),
            Ok(tools) => {
                state.registrations = if state.registered {
                    let expected = std::mem::take(&mut state.registrations);
                    shared.sink.reconcile_managed_tools(expected, tools)
                } else {
                    shared.sink.add_managed_tools(tools)
                };
                state.registered = true;
                state.committed = listing;
                state.refreshes += 1;
                state.last_error = None;
                Ok(())
            }
            Err(e) => {
                state.failures += 1;
                state.last_error = Some(e.clone());
                Err(e)
            }
        }
    };
    shared.settled.notify();
    result
}
