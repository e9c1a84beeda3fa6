//! Zed's `settings.json` (JSONC), its `context_servers`:
//!
//! ```jsonc
//! {
//!   "theme": "One Dark",
//!   "context_servers": {
//!     "everything": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
//!                     "env": { "LOG": "1" }, "timeout": 120 },
//!     "remote": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ${TOKEN}" } },
//!     "older": { "source": "custom", "enabled": false,
//!                "command": { "path": "old-server", "args": ["--stdio"], "env": {} } },
//!     "postgres-context-server": { "source": "extension", "settings": { "database_url": "…" } }
//!   }
//! }
//! ```
//!
//! The shapes, from zed-industries/zed `crates/settings/src/settings_content/project.rs`
//! (`ContextServerSettingsContent`, untagged) and its migrations:
//!
//! - a command: `command` (a string), `args`, `env`, and `timeout`, "timeout for tool calls in
//!   seconds" → [`ServerEntry::tool_timeout`](super::ServerEntry::tool_timeout);
//! - a remote server: `url`, `headers`, `timeout` (seconds) — read as Streamable HTTP;
//! - a server from a Zed extension: `settings` (and no `command`); its command comes from the
//!   extension's code, so it is [skipped](super::SkippedEntry), not read;
//! - `enabled` (default `true`) for each;
//! - the older forms Zed still migrates: `"source": "custom"` / `"source": "extension"`
//!   (migration `m_2025_06_16`), and the command as an object `"command": {"path", "args",
//!   "env"}` (flattened by `m_2025_06_27`).
//!
//! `remote`, `oauth` and the rest of the file are ignored.

use super::tree::Value;
use super::tree::{Key, Node};
use super::{field, ConfigError, Kind, Reader, ServerEntry};

pub(super) fn read(r: &mut Reader<'_>, root: &Node) -> Result<Vec<ServerEntry>, ConfigError> {
    let top = r.top(root)?;
    let Some((_, servers)) = field(top, "context_servers") else {
        return Err(r.error(root.span.start, "no \"context_servers\" at the top level"));
    };
    r.servers("context_servers", servers, server)
}

fn server(r: &mut Reader<'_>, name: &Key, node: &Node) -> Result<Option<ServerEntry>, ConfigError> {
    let entries = r.entry(node)?;
    let command = field(entries, "command");
    let url = field(entries, "url");
    let from_extension = match field(entries, "source") {
        Some((_, source)) => match r.string(source, "source")?.as_str() {
            "custom" => false,
            "extension" => true,
            other => {
                return Err(r.error(
                    source.span.start,
                    format!("unknown \"source\" {other:?}: expected \"custom\" or \"extension\""),
                ))
            }
        },
        None => command.is_none() && url.is_none() && field(entries, "settings").is_some(),
    };
    if from_extension {
        return Ok(r.skip(
            name,
            "a server of a Zed extension: its command comes from the extension",
        ));
    }
    let transport = match r.kind_of(name.span.start, ("command", command), ("url", url), None)? {
        Kind::Stdio => {
            let (_, command) = command.expect("kind_of() saw a command");
            match &command.value {
                // The older form: "command": {"path": …, "args": […], "env": {…}}.
                Value::Object(_) => {
                    let inner = r.entry(command)?;
                    let Some((_, path)) = field(inner, "path") else {
                        return Err(r.error(
                            command.span.start,
                            "\"command\" must be a string, or an object with a \"path\"",
                        ));
                    };
                    let env = r.env(inner)?;
                    r.stdio_from(path, "path", inner, env)?
                }
                _ => {
                    let env = r.env(entries)?;
                    r.stdio(entries, env)?
                }
            }
        }
        Kind::Http => {
            let headers = r.string_map_field(entries, "headers")?;
            r.http(entries, headers)?
        }
    };
    let mut entry = ServerEntry::new(&name.name, transport);
    if let Some((_, enabled)) = field(entries, "enabled") {
        entry.enabled = r.bool(enabled, "enabled")?;
    }
    if let Some((_, secs)) = field(entries, "timeout") {
        entry.tool_timeout = Some(r.duration(secs, "timeout", 1.0)?);
    }
    Ok(Some(entry))
}
