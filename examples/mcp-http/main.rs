//! `mcp-http`: the Streamable HTTP transport end to end, offline.
//!
//! ```text
//! mcp-http            start a small MCP server on 127.0.0.1 (in this process), connect to it over
//!                     Streamable HTTP, list its tools and call some of them
//! mcp-http --serve    only run that server; prints "LISTENING <url>" and serves until killed
//!          [--json]   answer with application/json instead of event streams
//!          [--modern] speak only the modern era (2026-07-28)
//! ```
//!
//! The server is the test kit's (`mcp_testkit::http_server`, a dev-dependency), well behaved.

use mcp_connect::proto::terminal;
use mcp_connect::{Client, HttpTransport, HttpTransportConfig};
use mcp_testkit::http_server as server;
use serde_json::json;
use std::process::ExitCode;

/// `println!` that goes on quietly when stdout is gone (piped into `head`, which stops
/// reading): what is not read is not wanted, and a broken pipe is no failure; the CLI's output
/// does the same. (`println!` panics: "failed printing to stdout: Broken pipe".)
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let behaviour = server::Behaviour {
        json: args.iter().any(|a| a == "--json"),
        modern: args.iter().any(|a| a == "--modern"),
        ..server::Behaviour::default()
    };
    let server = match server::start(behaviour) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mcp-http: cannot listen on 127.0.0.1: {e}");
            return ExitCode::from(1);
        }
    };
    if args.iter().any(|a| a == "--serve") {
        say!("LISTENING {}", server.url);
        loop {
            std::thread::park();
        }
    }
    match smol::block_on(demo(&server.url)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-http: {e}");
            ExitCode::from(1)
        }
    }
}

async fn demo(url: &str) -> Result<(), mcp_connect::Error> {
    let client = Client::new(HttpTransport::new(HttpTransportConfig::new(url))?);
    let init = client.initialize().await?;
    let session = client.transport().session_id().unwrap_or_default();
    say!(
        "connected to {} over Streamable HTTP at {url} (session {session})",
        init.server_info.name
    );
    for tool in client.list_tools().await? {
        // A description of several lines goes on under its first; no control character a
        // server sends is printed.
        let name = terminal::line(&tool.name);
        let indent = format!("  {}\t", " ".repeat(name.chars().count()));
        let description = tool.description.as_deref().unwrap_or("");
        say!("  {name}\t{}", terminal::block(description, &indent));
    }
    let sum = client.call_tool("add", json!({"a": 2, "b": 40})).await?;
    say!(
        "add 2 40 -> {} (structured: {})",
        sum.text(),
        sum.structured_content.unwrap_or_default()
    );
    let echo = client
        .call_tool("echo", json!({"text": "over HTTP"}))
        .await?;
    say!("echo -> {}", echo.text());
    client.close().await
}
