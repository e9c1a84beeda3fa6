//! Bridged tools: each server tool as an ordinary tool value an agent registers.

use crate::transport::{BoxFuture, Transport};
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

/// One server tool, bridged. Several share one client; their calls may run concurrently.
pub struct McpTool<T: Transport> {
    client: Arc<Client<T>>,
    definition: ToolDefinition,
}

impl<T: Transport> McpTool<T> {
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
        match self.client.call_tool(name, arguments).await {
            Ok(result) => Ok(tool_output(name, &result)),
            Err(Error::Request(mcp_proto::RequestError::InvalidArguments(why))) => Ok(
                ToolOutput::Retry(format!("{name}: invalid arguments: {why}")),
            ),
            Err(e) => Err(e),
        }
    }
}

impl<T: Transport> AgentTool for McpTool<T> {
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

/// Snapshots the server's tool list (all pages) and returns each tool, bridged.
pub async fn as_tools<T: Transport>(client: &Arc<Client<T>>) -> Result<Vec<McpTool<T>>, Error> {
    Ok(client
        .list_tools()
        .await?
        .iter()
        .map(|tool| McpTool {
            client: client.clone(),
            definition: ToolDefinition::from(tool),
        })
        .collect())
}
