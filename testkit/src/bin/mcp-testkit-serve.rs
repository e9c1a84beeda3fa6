//! `mcp-testkit-serve [--era E] [--behave B[,B…]]`: the test kit's stdio MCP server
//! ([`mcp_testkit::stdio_server`]), for the tests and benchmarks.

fn main() -> std::process::ExitCode {
    mcp_testkit::stdio_server::main(std::env::args_os().skip(1).collect())
}
