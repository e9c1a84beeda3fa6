//! Codex's `config.toml`, its `[mcp_servers.NAME]` tables:
//!
//! ```toml
//! [mcp_servers.everything]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! env = { LOG = "1" }
//! cwd = "/tmp"
//! startup_timeout_sec = 20      # or startup_timeout_ms = 20000
//! tool_timeout_sec = 60.5
//! enabled_tools = ["echo", "add"]
//! disabled_tools = ["add"]
//!
//! [mcp_servers.remote]
//! url = "https://example.com/mcp"
//! bearer_token_env_var = "REMOTE_TOKEN"          # Authorization: Bearer $REMOTE_TOKEN
//! http_headers = { "X-Team" = "core" }
//! env_http_headers = { "X-Api-Key" = "REMOTE_KEY" }  # header name = environment variable
//! enabled = false
//! ```
//!
//! The rest of the file is not looked at; a file without `mcp_servers` has no servers. The
//! variables named by `bearer_token_env_var` and `env_http_headers` must be set (unset fails the entry only, as a variable) and not empty. The
//! headers are sent in the order `http_headers`, `env_http_headers`, then `Authorization`.

use super::tree::{Key, Node};
use super::{field, ConfigError, Kind, Reader, ServerEntry};

pub(super) fn read(r: &mut Reader<'_>, root: &Node) -> Result<Vec<ServerEntry>, ConfigError> {
    let top = r.top(root)?;
    match field(top, "mcp_servers") {
        Some((_, servers)) => r.servers("mcp_servers", servers, server),
        None => Ok(Vec::new()),
    }
}

fn server(r: &mut Reader<'_>, name: &Key, node: &Node) -> Result<Option<ServerEntry>, ConfigError> {
    let entries = r.entry(node)?;
    let transport = match r.kind(name.span.start, entries, None)? {
        Kind::Stdio => {
            let env = r.env(entries)?;
            r.stdio(entries, env)?
        }
        Kind::Http => {
            let mut headers = r.string_map_field(entries, "http_headers")?;
            if let Some((_, from_env)) = field(entries, "env_http_headers") {
                for (header, var, at) in r.string_map(from_env, "env_http_headers", false)? {
                    let (_, value) = from_env
                        .as_object()
                        .and_then(|e| field(e, &header))
                        .expect("string_map read it");
                    let value = r.env_var(&var, value, "env_http_headers")?;
                    headers.push((header, value, at));
                }
            }
            if let Some((_, var)) = field(entries, "bearer_token_env_var") {
                let name = r.string(var, "bearer_token_env_var")?;
                if let Some((_, _, at)) = headers
                    .iter()
                    .find(|(h, _, _)| h.eq_ignore_ascii_case("authorization"))
                {
                    return Err(r.error(
                        *at,
                        "an \"Authorization\" header and \"bearer_token_env_var\": give one",
                    ));
                }
                let token = r.env_var(&name, var, "bearer_token_env_var")?;
                headers.push((
                    "Authorization".to_owned(),
                    format!("Bearer {token}"),
                    var.span.start,
                ));
            }
            r.http(entries, headers)?
        }
    };
    let mut entry = ServerEntry::new(&name.name, transport);
    if let Some((_, enabled)) = field(entries, "enabled") {
        entry.enabled = r.bool(enabled, "enabled")?;
    }
    match (
        field(entries, "startup_timeout_sec"),
        field(entries, "startup_timeout_ms"),
    ) {
        (Some(_), Some((key, _))) => {
            return Err(r.error(
                key.span.start,
                "both \"startup_timeout_sec\" and \"startup_timeout_ms\": give one",
            ))
        }
        (Some((_, secs)), None) => {
            entry.startup_timeout = Some(r.duration(secs, "startup_timeout_sec", 1.0)?)
        }
        (None, Some((_, ms))) => {
            entry.startup_timeout = Some(r.duration(ms, "startup_timeout_ms", 1000.0)?)
        }
        (None, None) => {}
    }
    if let Some((_, secs)) = field(entries, "tool_timeout_sec") {
        entry.tool_timeout = Some(r.duration(secs, "tool_timeout_sec", 1.0)?);
    }
    if let Some((_, tools)) = field(entries, "enabled_tools") {
        entry.enabled_tools = Some(r.strings(tools, "enabled_tools", false)?);
    }
    if let Some((_, tools)) = field(entries, "disabled_tools") {
        entry.disabled_tools = r.strings(tools, "disabled_tools", false)?;
    }
    Ok(Some(entry))
}
