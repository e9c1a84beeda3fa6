//! Goose's `config.yaml`, its `extensions`:
//!
//! ```yaml
//! GOOSE_PROVIDER: anthropic
//! extensions:
//!   developer:
//!     enabled: true
//!     type: builtin
//!     name: developer
//!     timeout: 300
//!   everything:
//!     enabled: true
//!     type: stdio
//!     name: everything
//!     cmd: npx
//!     args: [-y, "@modelcontextprotocol/server-everything"]
//!     envs: { LOG_LEVEL: debug }
//!     env_keys: [GITHUB_TOKEN]
//!     timeout: 300
//!   remote:
//!     enabled: false
//!     type: streamable_http
//!     name: remote
//!     uri: https://example.com/mcp
//!     headers: { Authorization: "Bearer ${TOKEN}" }
//! ```
//!
//! The keys, from block/goose `crates/goose/src/agents/extension.rs` (`ExtensionConfig`, tagged
//! by `type`) and `crates/goose/src/config/extensions.rs` (`ExtensionEntry`: `enabled` beside it):
//!
//! - `type: stdio`: `cmd`, `args`, `envs` (a map), `env_keys` (names of variables whose values
//!   Goose takes from its secrets or the environment; here, from the environment
//!   ([`ExpandOptions::env`](super::ExpandOptions::env)): unset or empty is an error; they win
//!   over `envs`).
//! - `type: streamable_http`: `uri`, `headers`.
//! - `type: sse`: refused ("SSE transport is no longer supported" in Goose itself, too).
//! - `type: builtin`, `platform`, `frontend`, `inline_python`: run inside Goose, not MCP servers
//!   this client can start: [skipped](super::SkippedEntry), with a note, not an error.
//! - `timeout` (seconds) → [`ServerEntry::tool_timeout`](super::ServerEntry::tool_timeout);
//!   `available_tools` (when not empty) → [`enabled_tools`](super::ServerEntry::enabled_tools);
//!   `enabled` (default `true`).
//!
//! The server's name is the key it is listed under (Goose's `name` is its display name).
//! `${VAR}` is expanded as in the other formats. YAML is read by `saphyr-parser` (YAML 1.2; see
//! [`load`](super::load)); aliases are refused.

use super::tree::{Key, Node};
use super::{field, ConfigError, Reader, ServerEntry};

pub(super) fn read(r: &mut Reader<'_>, root: &Node) -> Result<Vec<ServerEntry>, ConfigError> {
    let top = r.top(root)?;
    let Some((_, extensions)) = field(top, "extensions") else {
        return Err(r.error(root.span.start, "no \"extensions\" at the top level"));
    };
    r.servers("extensions", extensions, server)
}

fn server(r: &mut Reader<'_>, name: &Key, node: &Node) -> Result<Option<ServerEntry>, ConfigError> {
    let entries = r.entry(node)?;
    let Some((_, kind)) = field(entries, "type") else {
        return Err(r.error(
            name.span.start,
            "has no \"type\": expected \"stdio\" or \"streamable_http\"",
        ));
    };
    let transport =
        match r.string(kind, "type")?.as_str() {
            "stdio" => {
                let Some((_, cmd)) = field(entries, "cmd") else {
                    return Err(r.error(
                        kind.span.start,
                        "\"type\" is \"stdio\" but \"cmd\" is missing",
                    ));
                };
                let mut env: std::collections::BTreeMap<String, String> = r
                    .string_map_field(entries, "envs")?
                    .into_iter()
                    .map(|(k, v, _)| (k, v))
                    .collect();
                if let Some((_, keys)) = field(entries, "env_keys") {
                    let names = r.strings(keys, "env_keys", false)?;
                    let super::tree::Value::Array(items) = &keys.value else {
                        unreachable!("strings() read an array");
                    };
                    for (name, item) in names.into_iter().zip(items) {
                        let value = r.env_var(&name, item, "env_keys")?;
                        env.insert(name, value);
                    }
                }
                r.stdio_from(cmd, "cmd", entries, env)?
            }
            "streamable_http" => {
                let Some((_, uri)) = field(entries, "uri") else {
                    return Err(r.error(
                        kind.span.start,
                        "\"type\" is \"streamable_http\" but \"uri\" is missing",
                    ));
                };
                let headers = r.string_map_field(entries, "headers")?;
                r.http_from(uri, "uri", headers)?
            }
            "sse" => return Err(r.error(
                kind.span.start,
                "\"type\" \"sse\" is the HTTP+SSE transport of MCP 2024-11-05, deprecated since \
                 2025-03-26 and not supported: use \"streamable_http\" if the server offers it",
            )),
            "builtin" | "platform" | "frontend" | "inline_python" => {
                let kind = r.string(kind, "type")?;
                return Ok(r.skip(
                    name,
                    format!("a Goose \"{kind}\" extension runs inside Goose, not as an MCP server"),
                ));
            }
            other => {
                return Err(r.error(
                    kind.span.start,
                    format!(
                        "unknown \"type\" {other:?}: expected \"stdio\", \"streamable_http\", \
                     \"builtin\", \"platform\", \"frontend\" or \"inline_python\""
                    ),
                ))
            }
        };
    let mut entry = ServerEntry::new(&name.name, transport);
    if let Some((_, enabled)) = field(entries, "enabled") {
        entry.enabled = r.bool(enabled, "enabled")?;
    }
    if let Some((_, secs)) = field(entries, "timeout") {
        entry.tool_timeout = Some(r.duration(secs, "timeout", 1.0)?);
    }
    if let Some((_, tools)) = field(entries, "available_tools") {
        let tools = r.strings(tools, "available_tools", false)?;
        if !tools.is_empty() {
            entry.enabled_tools = Some(tools);
        }
    }
    Ok(Some(entry))
}
