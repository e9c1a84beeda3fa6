//! `mcp-testkit-serve [--era E] [--behave B[,B…]]`: the test kit's stdio MCP server
//! ([`mcp_testkit::stdio_server`]), for the tests and benchmarks.
//!
//! `mcp-testkit-serve --http [--json] [--modern]`: its Streamable HTTP server instead
//! ([`mcp_testkit::http_server`], 127.0.0.1, a free port; SSE answers, or JSON with `--json`; the
//! 2026-07-28 era with `--modern`): prints `LISTENING <url>`, serves until its stdin closes.

use std::io::Write;

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "--http") {
        let has = |flag: &str| args.iter().any(|a| a == flag);
        let server = mcp_testkit::http_server::start(mcp_testkit::http_server::Behaviour {
            json: has("--json"),
            modern: has("--modern"),
            ..Default::default()
        })
        .expect("listen on 127.0.0.1");
        println!("LISTENING {}", server.url);
        let _ = std::io::stdout().flush();
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        return std::process::ExitCode::SUCCESS;
    }
    mcp_testkit::stdio_server::main(args)
}
