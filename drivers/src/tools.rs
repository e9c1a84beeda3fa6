//! Bridged tools: each server tool as an ordinary tool value an agent registers.

use crate::transport::BoxFuture;
use crate::{Client, Error};
use mcp_proto::{tool_output, ToolDefinition, ToolOutput};
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::Arc;

/// How a tool call can fail, as an agent framework sees it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool reported an error (`isError: true`): show the message to the model, which may
    /// correct its arguments and retry.
    #[error("{0}")]
    Retry(String),
    /// The call itself failed (protocol error, transport failure, timeout, cancellation, server
    /// exit): not something the model can fix.
    #[error(transparent)]
    Fatal(#[from] Error),
}

/// The small tool interface an agent framework adapts to: a name, a description, an input JSON
/// Schema, and an async call taking the model's raw arguments and returning the text it reads.
pub trait AgentTool: Send + Sync {
    /// The tool's name.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// The JSON Schema of its arguments, verbatim.
    fn input_schema(&self) -> &RawValue;
    /// Runs it.
    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<String, ToolError>>;
}

/// One server tool, bridged. Several share one client (each holds a handle on it); their calls
/// may run concurrently.
///
/// A tool that must be called as a task (`execution.taskSupport: "required"`, on a server that
/// declared task calls: the core decides when the tool is bridged,
/// [`Session::task_call_mode`](mcp_proto::Session::task_call_mode)) is called as one and its
/// result waited for transparently ([`Client::call_tool_waiting`]): within the session's default
/// timeout, the task cancelled on timeout or when the call is dropped. Any other tool is a plain
/// call, with no extra work.
pub struct McpTool {
    client: Client,
    definition: ToolDefinition,
    /// Called as a task (decided once, when bridged).
    as_task: bool,
}

impl McpTool {
    /// The tool's definition: name, description, schema.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Calls the tool and returns the bridged output (text, or a correctable failure).
    ///
    /// Arguments the transport cannot carry (a value mirrored into an HTTP header that does not
    /// fit its declared type, in the modern era) are the model's to correct, like a tool's own
    /// input validation error: they come back as [`ToolOutput::Retry`].
    pub async fn call_output(&self, arguments: Value) -> Result<ToolOutput, Error> {
        let name = &self.definition.name;
        if self.as_task {
            let timeout = self.client.default_timeout();
            let outcome = self
                .client
                .wait_task_call(name, arguments, timeout, |_| {})
                .await;
            return bridged(name, outcome);
        }
        bridged(name, self.client.call_tool(name, arguments).await)
    }
}

/// A call's outcome as the model reads it: the result bridged, and arguments the transport
/// cannot carry (a value mirrored into an HTTP header that does not fit its declared type) as a
/// correctable failure, like a tool's own input validation error.
pub(crate) fn bridged(
    name: &str,
    outcome: Result<mcp_proto::CallToolResult, Error>,
) -> Result<ToolOutput, Error> {
    match outcome {
        Ok(result) => Ok(tool_output(name, &result)),
        Err(Error::Request(mcp_proto::RequestError::InvalidArguments(why))) => Ok(
            ToolOutput::Retry(format!("{name}: invalid arguments: {why}")),
        ),
        Err(e) => Err(e),
    }
}

impl AgentTool for McpTool {
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
            match self.call_output(arguments).await? {
                ToolOutput::Text(text) => Ok(text),
                ToolOutput::Retry(message) => Err(ToolError::Retry(message)),
            }
        })
    }
}

/// Snapshots the server's tool list (all pages) and returns each tool, bridged: each holds a
/// clone of `client`.
pub async fn as_tools(client: &Client) -> Result<Vec<McpTool>, Error> {
    Ok(client
        .list_tools()
        .await?
        .iter()
        .map(|tool| McpTool {
            client: client.clone(),
            definition: ToolDefinition::from(tool),
            as_task: client.task_call_mode(tool, false) == mcp_proto::tasks::CallMode::Task,
        })
        .collect())
}

/// The server's tools, kept current: re-listed when the server said its tool list changed
/// (`notifications/tools/list_changed`) since the last listing. [`as_tools`] stays the snapshot.
///
/// > "When the list of available tools changes, servers that declared the `listChanged`
/// > capability SHOULD send a notification" — MCP 2025-11-25, Server § Tools
pub struct LiveTools {
    client: Client,
    /// The tools, once listed.
    current: smol::lock::Mutex<Option<Arc<Vec<McpTool>>>>,
    /// The client's count of tool-list changes when they were listed.
    seen: std::sync::atomic::AtomicU64,
}

impl LiveTools {
    /// A tool set over `client` (nothing is listed until [`tools`](Self::tools)).
    pub fn new(client: Client) -> Self {
        LiveTools {
            client,
            current: smol::lock::Mutex::new(None),
            seen: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether the server announced a change since the last listing (the next
    /// [`tools`](Self::tools) re-lists).
    pub fn changed(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.client.lists_changed(mcp_proto::ListKind::Tools) != self.seen.load(Ordering::SeqCst)
    }

    /// The current tools: listed the first time, and again whenever the server announced a
    /// change since. Concurrent callers share one listing. A failed listing leaves the previous
    /// tools in place for the next attempt.
    pub async fn tools(&self) -> Result<Arc<Vec<McpTool>>, Error> {
        use std::sync::atomic::Ordering;
        let mut current = self.current.lock().await;
        let changes = self.client.lists_changed(mcp_proto::ListKind::Tools);
        if let Some(tools) = current.as_ref() {
            if self.seen.load(Ordering::SeqCst) == changes {
                return Ok(tools.clone());
            }
        }
        // Counted before listing: a change announced during the listing lists again next time.
        let tools = Arc::new(as_tools(&self.client).await?);
        *current = Some(tools.clone());
        self.seen.store(changes, Ordering::SeqCst);
        Ok(tools)
    }
}
