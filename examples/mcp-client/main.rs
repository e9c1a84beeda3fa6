//! `mcp-client`: the offline demo, and the `mcp-client` command (the workspace's `drivers/cli/`,
//! package `mcp-client-cli`) for everything else.
//!
//! ```text
//! mcp-client                                  offline demo: spawns itself as a minimal stdio MCP server, lists and calls its tools
//! mcp-client --serve [--era E]                act as that minimal stdio MCP server (E: legacy, modern, dual)
//! mcp-client [OPTIONS] ...                    the mcp-client command: see `cargo run --example mcp-client -- --help`
//! ```
//!
//! `--era` picks the serve mode's protocol era: `legacy` (the `initialize` handshake, the
//! default), `modern` (2026-07-28 only) or `dual` (both, per request). The server is the test
//! kit's (`mcp_testkit::stdio_server`, a dev-dependency), well behaved; the misbehaving variants
//! the tests use are its own binary's, `mcp-testkit-serve --behave …`. The installed command
//! (`cargo install --path drivers/cli`) has neither the demo nor `--serve`.

use mcp_connect::proto::terminal;
use mcp_connect::{Client, StdioConfig, StdioTransport};
use std::ffi::OsString;
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

/// The forms this example adds to the command's: its usage line and `--help` name them too.
const DEMO: mcp_client_cli::Extra = mcp_client_cli::Extra {
    usage: "[--serve] ",
    help: "\
mcp-client                                  offline demo: spawns itself as a minimal stdio MCP server, lists and calls its tools
mcp-client --serve [--era E]                act as that minimal stdio MCP server (E: legacy, modern, dual)
",
};

fn main() -> ExitCode {
    let mut argv = std::env::args_os().skip(1).peekable();
    match argv.peek().and_then(|a| a.to_str()) {
        Some("--serve") => serve(argv.skip(1).collect()),
        None => demo(),
        _ => mcp_client_cli::main_with_extra(argv, &DEMO),
    }
}

/// `--serve [--era E]`: the demo's stdio server, in era E (default legacy).
fn serve(args: Vec<OsString>) -> ExitCode {
    use mcp_testkit::stdio_server::{self, Era};
    let args: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    let era = match args.as_slice() {
        [] => Some(Era::Legacy),
        ["--era", name] => Era::from_name(name),
        _ => None,
    };
    match era {
        Some(era) => stdio_server::serve(era),
        None => {
            eprintln!("mcp-client: usage: mcp-client --serve [--era legacy|modern|dual]");
            ExitCode::from(1)
        }
    }
}

/// An error and its causes, on one line (as the command says them).
fn describe(e: impl std::error::Error) -> String {
    mcp_connect::chain(&e)
}

/// The offline demo: this very binary, started with `--serve`, as the server.
fn demo() -> ExitCode {
    let result = smol::block_on(async {
        let me = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
        let transport =
            StdioTransport::spawn(StdioConfig::new(me).args(["--serve"])).map_err(describe)?;
        let client = Client::new(transport);
        let init = client.initialize().await.map_err(describe)?;
        say!(
            "connected to {} {} (protocol {})",
            init.server_info.name,
            init.server_info.version,
            init.protocol_version
        );
        let tools = mcp_connect::as_tools(&client).await.map_err(describe)?;
        say!("{} tools:", tools.len());
        for tool in &tools {
            use mcp_connect::AgentTool;
            // A description of several lines goes on under its first (control characters
            // escaped, as everything a server sends that is printed).
            let name = terminal::line(tool.name());
            let indent = format!("  {}\t", " ".repeat(name.chars().count()));
            say!(
                "  {name}\t{}\n    schema: {}",
                terminal::block(tool.description(), &indent),
                terminal::shown(&tool.input_schema().to_string(), terminal::Layout::Text)
            );
        }
        for (name, args) in [
            ("echo", serde_json::json!({"text": "hello from the demo"})),
            ("add", serde_json::json!({"a": 2, "b": 40})),
            (
                "fail",
                serde_json::json!({"message": "this tool always fails"}),
            ),
            ("image", serde_json::json!({})),
        ] {
            let tool = tools
                .iter()
                .find(|t| t.definition().name == name)
                .expect("the demo server has it");
            match mcp_connect::AgentTool::call(tool, args.clone()).await {
                Ok(text) => say!("call {name} {args} -> {text}"),
                Err(mcp_connect::ToolError::Retry(msg)) => {
                    say!("call {name} {args} -> correctable error: {msg}")
                }
                Err(e) => return Err(describe(e)),
            }
        }
        client.close().await.map_err(describe)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-client: {}", terminal::line(&e));
            ExitCode::from(1)
        }
    }
}
