//! What the CLI prints: the list, the call's result and `--info` (plain, or one JSON object with
//! `--json`), a call's progress, the cost of `--repeat`, failures on one line, and the tracing
//! of `--verbose`. A server's text always goes through [`term`].

use crate::args::Options;
use crate::run::Rate;
use crate::term;
use mcp_connect::proto::oauth::AuthError;
use mcp_connect::proto::{Era, InitializeResult, Progress};
use mcp_connect::{AgentTool, CallToolResult, Error, SetTool, Tool};
use std::io::Write;

/// With `RUST_LOG` (its filter) or `--verbose` (`mcp_connect=info`): the driver's spans and
/// events on stderr, each request's span when it closes (method, tool, server, outcome,
/// duration). None of them holds a header, token or argument value (see the driver's `trace`).
pub(crate) fn install_tracing(verbose: bool) {
    use tracing_subscriber::field::MakeExt;
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => {
            EnvFilter::builder().parse_lossy(directives)
        }
        _ if verbose => EnvFilter::new("mcp_connect=info"),
        _ => return,
    };
    // --verbose prints the server's log messages itself ("server log [...]"), and every failure
    // on its last line (or, with --config, a server's on its own line): not twice. The request's
    // span still says its outcome and `error.type`.
    let not_log_messages = tracing_subscriber::filter::filter_fn(move |meta| {
        let fields = meta.fields();
        !(verbose
            && meta.is_event()
            && meta.target() == "mcp_connect::trace"
            && (fields.field("logger").is_some() || fields.field("error").is_some()))
    });
    // Field values (a server's error message, a tool's name…) shown as `term` shows them; the
    // colours are the formatter's own.
    let fields = tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        let value = term::line(&format!("{value:?}"));
        match field.name() {
            "message" => write!(w, "{value}"),
            name => write!(w, "{name}={value}"),
        }
    })
    .delimited(" ");
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .fmt_fields(fields)
        .with_span_events(FmtSpan::CLOSE)
        .with_filter(not_log_messages);
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .try_init();
}

/// An error and its causes, on one line.
pub(crate) fn describe(e: impl std::error::Error) -> String {
    mcp_connect::chain(&e)
}

/// A client error on one line; a refusal under `--no-auth` says that it was this flag.
pub(crate) fn failure(e: Error, options: &Options) -> String {
    let refused = options.auth.off && matches!(e, Error::Auth(AuthError::NotAuthorized { .. }));
    let text = describe(e);
    if refused {
        format!("{text} (--no-auth)")
    } else {
        text
    }
}

/// A tool in the list: its name, a tab and its description; a description of several lines
/// goes on under its first, each further line indented as far as the first (as many spaces as
/// the name has characters, then a tab), paragraphs kept apart by one empty line
/// ([`term::block`]). A line that starts with white space, or is empty, is a description's.
pub(crate) fn listed(name: &str, description: &str) -> String {
    let name = term::line(name);
    let indent = format!("{}\t", " ".repeat(name.chars().count()));
    format!("{name}\t{}", term::block(description, &indent))
}

/// A call's result on stdout: its bridged text, or with `--json` one object.
pub(crate) fn print_result(out: &mut impl Write, result: &CallToolResult, json: bool) {
    if json {
        let object = serde_json::json!({
            "text": result.text(),
            "isError": result.is_error,
            "structuredContent": result.structured_content,
        });
        let _ = writeln!(out, "{}", term::json(&object.to_string()));
        return;
    }
    // Escaped as it is written, not into a copy; one text block (the usual answer) is written
    // from the result itself, without the bridged copy: a 16 MiB text takes no more memory here.
    let bridged;
    let text = match &result.content[..] {
        [mcp_connect::proto::ContentBlock::Text { text }] => text,
        _ => {
            bridged = result.text();
            &bridged
        }
    };
    let _ = writeln!(out, "{}", term::display(text, term::Layout::Text));
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let per_s = self.calls as f64 / self.elapsed.as_secs_f64();
        write!(f, "calls/s: {per_s:.1}")?;
        if let Some(cpu) = self.cpu {
            let us = cpu.as_secs_f64() * 1e6 / self.calls as f64;
            write!(f, " (client CPU {us:.2} µs/call)")?;
        }
        Ok(())
    }
}

/// `--info`: the server's identity, the era and protocol version spoken, the versions it
/// supports (modern era) and its capabilities; with `--json`, one object.
pub(crate) fn print_info(
    out: &mut impl Write,
    init: &InitializeResult,
    era: Option<Era>,
    supported: Option<Vec<String>>,
    json: bool,
) {
    let era = match era {
        Some(Era::Modern) => "modern",
        _ => "legacy",
    };
    if json {
        let object = serde_json::json!({
            "era": era,
            "protocolVersion": init.protocol_version,
            "serverInfo": init.server_info,
            "capabilities": init.capabilities,
            "instructions": init.instructions,
            "supportedVersions": supported,
        });
        let _ = writeln!(out, "{}", term::json(&object.to_string()));
        return;
    }
    let info = &init.server_info;
    let line = |text: String| term::line(&text);
    let _ = writeln!(
        out,
        "{}",
        line(format!("server: {} {}", info.name, info.version))
    );
    let _ = writeln!(out, "era: {era}");
    let version = line(format!("protocol version: {}", init.protocol_version));
    let _ = writeln!(out, "{version}");
    if let Some(supported) = supported {
        let supported = line(format!("supported versions: {}", supported.join(", ")));
        let _ = writeln!(out, "{supported}");
    }
    // Pretty JSON keeps its lines; its strings are escaped.
    let capabilities = serde_json::to_string_pretty(&init.capabilities)
        .unwrap_or_else(|_| init.capabilities.to_string());
    let capabilities = term::shown(&capabilities, term::Layout::Text);
    let _ = writeln!(out, "capabilities: {capabilities}");
    if let Some(instructions) = &init.instructions {
        let instructions = term::shown(instructions, term::Layout::Text);
        let _ = writeln!(out, "instructions: {instructions}");
    }
}

/// One server's tools: a [`listed`] line each, or with `--json` an array of the tool objects
/// exactly as the server sent them.
pub(crate) fn print_tools(out: &mut impl Write, tools: &[Tool], json: bool) {
    if json {
        let raw: Vec<&serde_json::value::RawValue> = tools.iter().map(|t| t.raw()).collect();
        let text = serde_json::to_string(&raw).expect("raw JSON serializes");
        let _ = writeln!(out, "{}", term::json(&text));
    } else {
        for tool in tools {
            let description = tool.description.as_deref().unwrap_or("");
            let _ = writeln!(out, "{}", listed(&tool.name, description));
        }
    }
}

/// A config's tools (`--config`): a [`listed`] line each under its prefixed name, or with
/// `--json` an array of `{"name", "server", "tool", "description", "inputSchema"}`.
pub(crate) fn print_set_tools(out: &mut impl Write, tools: &[SetTool], json: bool) {
    if json {
        let objects: Vec<serde_json::Value> = tools
            .iter()
            .map(|t| {
                let d = t.definition();
                serde_json::json!({
                    "name": d.name,
                    "server": t.server(),
                    "tool": t.server_tool_name(),
                    "description": d.description,
                    "inputSchema": d.input_schema,
                })
            })
            .collect();
        let text = serde_json::Value::Array(objects).to_string();
        let _ = writeln!(out, "{}", term::json(&text));
    } else {
        for tool in tools {
            let _ = writeln!(out, "{}", listed(tool.name(), tool.description()));
        }
    }
}

/// A call's progress on stderr, as it comes: `progress: P[/TOTAL][ MESSAGE]`.
pub(crate) fn show_progress(p: &Progress) {
    let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
    let message = p
        .message
        .as_deref()
        .map(|m| format!(" {m}"))
        .unwrap_or_default();
    let line = format!("progress: {}{total}{message}", p.progress);
    eprintln!("{}", term::line(&line));
}
