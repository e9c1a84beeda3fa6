//! The `mcpServers` JSON of Claude Desktop, Cursor, Claude Code, Windsurf, Cline, Gemini CLI and
//! most others:
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "everything": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
//!                     "env": { "LOG": "1" }, "cwd": "/tmp" },
//!     "remote": { "type": "http", "url": "https://example.com/mcp",
//!                 "headers": { "Authorization": "Bearer ${env:TOKEN}" } },
//!     "windsurf-remote": { "serverUrl": "https://example.com/mcp" },
//!     "gemini-remote": { "httpUrl": "https://example.com/mcp", "timeout": 30000 },
//!     "old": { "command": "old-server", "disabled": true }
//!   }
//! }
//! ```
//!
//! One permissive reader serves every host that writes this shape, rather than one per host told
//! apart by sniffing: the hosts' extra keys do not contradict one another (a key one host uses,
//! no other uses with another meaning), and a file is often shared between hosts. The one clash,
//! `timeout` (Gemini CLI's is in milliseconds, Cline's in seconds), is read only in Gemini CLI's
//! files ([`ConfigFormat::Gemini`], told by [`load`](super::load)
//! from the file's folder, `.gemini`, or an `httpUrl` in it).
//!
//! - `type` is optional: without it, `command` means stdio and a URL Streamable HTTP. Given, it
//!   is `stdio`, or `http`, `streamable-http`, `streamable_http` or `streamableHttp` (all
//!   Streamable HTTP); `sse` (the 2024-11-05 HTTP+SSE transport) is refused.
//! - The URL is `url`, or Windsurf's `serverUrl`, or Gemini CLI's `httpUrl` (one of them).
//!   Windsurf: "for remote HTTP MCPs, the configuration is slightly different and requires a
//!   `serverUrl` or `url` field" (<https://docs.windsurf.com/windsurf/cascade/mcp>).
//! - `disabled: true` (Cline, Roo, Windsurf and others) keeps the server listed with
//!   [`ServerEntry::enabled`](super::ServerEntry::enabled) false.
//!
//! Gemini CLI's `settings.json` (the rest of the file — `theme`, `mcp`, … — is not looked at).
//! Its keys, from `MCPServerConfig` in google-gemini/gemini-cli
//! `packages/core/src/config/config.ts` and `docs/tools/mcp-server.md`:
//!
//! - `httpUrl`: Streamable HTTP ("`httpUrl` → `StreamableHTTPClientTransport`"; deprecated there
//!   in favour of `url` with `"type": "http"`, both read).
//! - `url`: with `"type": "sse"` the HTTP+SSE transport, refused as above. Without `type`, Gemini
//!   CLI's older documentation says SSE, its current source "auto-detects" (Streamable HTTP first,
//!   falling back to SSE); it is read as Streamable HTTP, so an SSE-only server fails when
//!   connected to, not here.
//! - `timeout`: "request timeout in milliseconds" → [`ServerEntry::tool_timeout`](super::ServerEntry::tool_timeout).
//! - `includeTools` → [`enabled_tools`](super::ServerEntry::enabled_tools), `excludeTools` →
//!   [`disabled_tools`](super::ServerEntry::disabled_tools) (which wins, as in Gemini CLI); read
//!   in any `mcpServers` file, since no other host uses them otherwise.
//! - `$VAR` is a variable too, as `${VAR}` ("values can reference environment variables using
//!   `$VAR_NAME` or `${VAR_NAME}` syntax"); unset is an error, as everywhere here.
//! - `tcp` (a WebSocket transport) is refused; `trust`, `description`, `oauth`,
//!   `authProviderType` … are ignored.

use super::tree::{Key, Node};
use super::ConfigError;
use super::{field, ConfigFormat, Entries, Kind, Reader, ServerEntry};

/// The `type` names this format uses.
const TYPES: &[(&str, Kind)] = &[
    ("stdio", Kind::Stdio),
    ("http", Kind::Http),
    ("streamable-http", Kind::Http),
    ("streamable_http", Kind::Http),
    ("streamableHttp", Kind::Http),
];

/// The keys a server's URL may be under.
const URL_KEYS: &[&str] = &["url", "serverUrl", "httpUrl"];

pub(super) fn read(r: &mut Reader<'_>, root: &Node) -> Result<Vec<ServerEntry>, ConfigError> {
    let top = r.top(root)?;
    let Some((_, servers)) = field(top, "mcpServers") else {
        return Err(r.error(root.span.start, "no \"mcpServers\" at the top level"));
    };
    r.servers("mcpServers", servers, server)
}

/// The entry's URL key and value: at most one of [`URL_KEYS`].
fn url<'n>(
    r: &Reader<'_>,
    entries: &'n Entries,
) -> Result<Option<(&'n Key, &'n Node)>, ConfigError> {
    let mut found = URL_KEYS.iter().filter_map(|k| field(entries, k));
    let first = found.next();
    if let (Some((a, _)), Some((b, _))) = (first, found.next()) {
        return Err(r.error(
            b.span.start,
            format!("has both \"{}\" and \"{}\": give one", a.name, b.name),
        ));
    }
    Ok(first)
}

fn server(r: &mut Reader<'_>, name: &Key, node: &Node) -> Result<Option<ServerEntry>, ConfigError> {
    let entries = r.entry(node)?;
    let declared = r.transport_type(entries, TYPES)?;
    let url = url(r, entries)?;
    if let (None, None, Some((key, _))) = (field(entries, "command"), url, field(entries, "tcp")) {
        return Err(r.error(
            key.span.start,
            "\"tcp\" (Gemini CLI's WebSocket transport) is not an MCP transport this client \
             speaks: give \"command\" (stdio) or \"url\" (Streamable HTTP)",
        ));
    }
    let transport = match r.kind_of(
        name.span.start,
        ("command", field(entries, "command")),
        ("url", url),
        declared,
    )? {
        Kind::Stdio => {
            let env = r.env(entries)?;
            r.stdio(entries, env)?
        }
        Kind::Http => {
            let headers = r.string_map_field(entries, "headers")?;
            let (key, node) = url.expect("kind_of() saw a URL");
            r.http_from(node, &key.name, headers)?
        }
    };
    let mut entry = ServerEntry::new(&name.name, transport);
    if let Some((_, disabled)) = field(entries, "disabled") {
        entry.enabled = !r.bool(disabled, "disabled")?;
    }
    if r.format == ConfigFormat::Gemini {
        if let Some((_, ms)) = field(entries, "timeout") {
            entry.tool_timeout = Some(r.duration(ms, "timeout", 1000.0)?);
        }
    }
    // Gemini CLI's, read in every file of this shape: no other host gives them another meaning.
    if let Some((_, tools)) = field(entries, "includeTools") {
        entry.enabled_tools = Some(r.strings(tools, "includeTools", false)?);
    }
    if let Some((_, tools)) = field(entries, "excludeTools") {
        entry.disabled_tools = r.strings(tools, "excludeTools", false)?;
    }
    Ok(Some(entry))
}
