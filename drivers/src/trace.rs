//! Tracing (the `tracing` feature): one span per request, events for what the server says.
//!
//! Field names follow the OpenTelemetry semantic conventions for MCP where they exist
//! (`mcp.method.name`, `jsonrpc.request.id`, `gen_ai.tool.name`, `gen_ai.operation.name`,
//! `network.transport`, `error.type`, `rpc.response.status_code`; the span's `otel.name` is
//! `{mcp.method.name} {tool}`); `mcp.server` is the configured server name
//! ([`ClientConfig::label`](crate::ClientConfig::label)), `outcome` is `ok`, `tool_error` or
//! `error`, `duration_ms` the time to the answer.
//!
//! Levels: the request span at INFO; a failed request's event at WARN; the server's
//! `notifications/message` at the level it names (debug → DEBUG, info and notice → INFO, warning
//! → WARN, error and above → ERROR); its stderr lines at DEBUG (target `mcp_connect::stderr`);
//! the session's warnings (what the server did wrong) at WARN. No header, token, argument or
//! result value is ever a field.

use crate::Error;
use mcp_proto::{LogMessage, Reply, Request, TransportKind, Warning};
use std::time::Instant;
use tracing::field::Empty;

/// Whether a subscriber wants this module's spans: when none does, a request costs nothing more
/// than without the feature (no span, no name formatted, no lock taken).
pub(crate) fn enabled() -> bool {
    tracing::enabled!(tracing::Level::INFO)
}

/// `network.transport`: `pipe` for stdio, `tcp` for HTTP.
fn transport_name(kind: TransportKind) -> &'static str {
    match kind {
        TransportKind::Stream => "pipe",
        TransportKind::Http => "tcp",
        _ => "other",
    }
}

/// The span of one request.
pub(crate) fn request_span(
    request: &Request,
    server: Option<&str>,
    transport: TransportKind,
) -> tracing::Span {
    let method = request.method();
    let tool = (method == "tools/call")
        .then(|| {
            request
                .params()
                .and_then(|p| p.get("name"))
                .and_then(|n| n.as_str())
        })
        .flatten();
    let name = match tool {
        Some(t) => format!("{method} {t}"),
        None => method.to_owned(),
    };
    let transport = transport_name(transport);
    tracing::info_span!(
        "mcp.request",
        otel.name = %name,
        otel.kind = "client",
        mcp.method.name = method,
        mcp.server = server.unwrap_or(""),
        gen_ai.tool.name = tool,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        network.transport = transport,
        jsonrpc.request.id = Empty,
        outcome = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
        duration_ms = Empty,
    )
}

/// The span of the opening (`server/discover` or `initialize`, whichever the era needs).
pub(crate) fn opening_span(server: Option<&str>, transport: TransportKind) -> tracing::Span {
    let transport = transport_name(transport);
    tracing::info_span!(
        "mcp.request",
        otel.name = "initialize",
        otel.kind = "client",
        mcp.method.name = "initialize",
        mcp.server = server.unwrap_or(""),
        network.transport = transport,
        mcp.protocol.version = Empty,
        mcp.era = Empty,
        outcome = Empty,
        error.type = Empty,
        duration_ms = Empty,
    )
}

/// Records the outcome of the opening on its span.
pub(crate) fn opened(
    span: &tracing::Span,
    result: &Result<mcp_proto::InitializeResult, Error>,
    era: Option<mcp_proto::Era>,
    started: Instant,
) {
    span.record("duration_ms", started.elapsed().as_secs_f64() * 1000.0);
    match result {
        Ok(init) => {
            span.record("outcome", "ok");
            span.record("mcp.protocol.version", init.protocol_version.as_str());
            if let Some(era) = era {
                span.record("mcp.era", tracing::field::debug(era));
            }
        }
        Err(e) => {
            span.record("outcome", "error");
            span.record("error.type", error_type(e));
            span.in_scope(|| tracing::warn!(error = %e, "opening failed"));
        }
    }
}

/// Records the outcome of a request on its span.
pub(crate) fn finish(span: &tracing::Span, result: &Result<Reply, Error>, started: Instant) {
    span.record("duration_ms", started.elapsed().as_secs_f64() * 1000.0);
    match result {
        Ok(Reply::ToolCall(r)) if r.is_error => {
            span.record("outcome", "tool_error");
        }
        Ok(_) => {
            span.record("outcome", "ok");
        }
        Err(e) => {
            span.record("outcome", "error");
            span.record("error.type", error_type(e));
            if let Error::Protocol(rpc) = e {
                span.record("rpc.response.status_code", rpc.code);
            }
            span.in_scope(|| tracing::warn!(error = %e, "request failed"));
        }
    }
}

/// A short, low-cardinality name of an error, for `error.type`.
fn error_type(e: &Error) -> &'static str {
    match e {
        Error::Protocol(_) => "jsonrpc_error",
        Error::Timeout(_) => "timeout",
        Error::Cancelled(_) => "cancelled",
        Error::ServerExited { .. } => "server_exited",
        Error::ExitedAfterPrinting { .. } => "not_an_mcp_server",
        Error::Closed => "closed",
        Error::Io { .. } => "io",
        Error::QueueFull { .. } => "queue_full",
        Error::Http { .. } => "http_status",
        Error::HttpProtocol(_) => "http_protocol",
        Error::Session(_) => "session",
        Error::Request(_) => "request",
        Error::Usage(_) => "usage",
        Error::Config(_) => "config",
        Error::Auth(_) => "authorization",
        Error::Pagination(_) | Error::Listing { .. } => "pagination",
        Error::Resource(_) => "resource",
        Error::Skill(_) => "skill",
        Error::Replay(_) => "replay",
        Error::TransportUnavailable { .. } => "transport_unavailable",
        Error::OAuthUnavailable { .. } => "oauth_unavailable",
    }
}

/// A `notifications/message`, at the level it names.
pub(crate) fn log_message(server: Option<&str>, m: &LogMessage) {
    let server = server.unwrap_or("");
    let logger = m.logger.as_deref().unwrap_or("");
    let data = match &m.data {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match m.level.as_str() {
        "debug" => tracing::debug!(mcp.server = server, logger, "{data}"),
        "info" | "notice" => tracing::info!(mcp.server = server, logger, "{data}"),
        "warning" => tracing::warn!(mcp.server = server, logger, "{data}"),
        _ => tracing::error!(mcp.server = server, logger, level = %m.level, "{data}"),
    }
}

/// Something the server did wrong that the session tolerated.
pub(crate) fn warning(server: Option<&str>, w: &Warning) {
    tracing::warn!(mcp.server = server.unwrap_or(""), "server misbehaved: {w}");
}

/// A line the server wrote to stderr.
#[cfg(feature = "stdio")]
pub(crate) fn stderr_line(pid: u32, line: &str) {
    tracing::debug!(target: "mcp_connect::stderr", pid, "{line}");
}
