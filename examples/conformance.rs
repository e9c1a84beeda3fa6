//! The client the official MCP conformance suite (`@modelcontextprotocol/conformance`) drives: it is
//! run as `conformance URL` with `MCP_CONFORMANCE_SCENARIO` set, performs that scenario over
//! Streamable HTTP, and exits 0 when everything it did succeeded.
//!
//! Scenarios: `initialize` (handshake, list tools), `tools_call` (call `add_numbers` with two
//! numbers), `sse-retry` (call a tool whose response stream is cut after a priming event: the
//! transport resumes it after the server's `retry` with `Last-Event-ID`). Any other scenario runs
//! the generic flow: initialize, list tools, call the first tool with `{}`.

use mcp_client::{Client, HttpTransport, HttpTransportConfig};
use serde_json::json;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance URL   (with MCP_CONFORMANCE_SCENARIO set)");
        return ExitCode::from(1);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match smol::block_on(run(&url, &scenario)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance client ({scenario}): {e}");
            ExitCode::from(1)
        }
    }
}

async fn run(url: &str, scenario: &str) -> Result<(), String> {
    run_flow(url, scenario).await.map_err(|e| e.to_string())?
}

/// `Ok(Err(..))`: the flow ran but a tool reported an error.
async fn run_flow(url: &str, scenario: &str) -> Result<Result<(), String>, mcp_client::Error> {
    let client = Client::new(HttpTransport::new(HttpTransportConfig::new(url))?);
    let init = client.initialize().await?;
    eprintln!(
        "initialized: {} (protocol {})",
        init.server_info.name, init.protocol_version
    );
    let tools = client.list_tools().await?;
    eprintln!(
        "tools: {:?}",
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()
    );
    let call = match scenario {
        "initialize" => None,
        "tools_call" => Some(("add_numbers".to_owned(), json!({"a": 2, "b": 3}))),
        _ => tools.first().map(|t| (t.name.clone(), json!({}))),
    };
    if let Some((name, args)) = call {
        let result = client.call_tool(&name, args).await?;
        eprintln!("{name} -> {}", result.text());
        if result.is_error {
            client.close().await?;
            return Ok(Err(format!(
                "tool {name} reported an error: {}",
                result.text()
            )));
        }
    }
    client.close().await?;
    Ok(Ok(()))
}
