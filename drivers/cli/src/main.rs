//! `mcp-client`: the command-line MCP client (`mcp-client --help` says how to use it; the
//! library target's docs show the same text).

fn main() -> std::process::ExitCode {
    mcp_client_cli::main_with(std::env::args_os().skip(1))
}
