//! The `mcpServers` JSON of Claude Desktop, Cursor, Windsurf, Cline and most others:
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "everything": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
//!                     "env": { "LOG": "1" }, "cwd": "/tmp" },
//!     "remote": { "type": "http", "url": "https://example.com/mcp",
//!                 "headers": { "Authorization": "Bearer ${env:TOKEN}" } },
//!     "old": { "command": "old-server", "disabled": true }
//!   }
//! }
//! ```
//!
//! - `type` is optional: without it, `command` means stdio and `url` Streamable HTTP. Given, it
//!   is `stdio`, or `http`, `streamable-http`, `streamable_http` or `streamableHttp` (all
//!   Streamable HTTP); `sse` (the 2024-11-05 HTTP+SSE transport) is refused.
//! - `disabled: true` (Cline, Roo and others) keeps the server listed with
//!   [`ServerEntry::enabled`](super::ServerEntry::enabled) false.

use super::tree::{Key, Node};
use super::ConfigError;
use super::{field, Kind, Reader, ServerEntry};

/// The `type` names this format uses.
const TYPES: &[(&str, Kind)] = &[
    ("stdio", Kind::Stdio),
    ("http", Kind::Http),
    ("streamable-http", Kind::Http),
    ("streamable_http", Kind::Http),
    ("streamableHttp", Kind::Http),
];

pub(super) fn read(r: &mut Reader<'_>, root: &Node) -> Result<Vec<ServerEntry>, ConfigError> {
    let top = r.top(root)?;
    let Some((_, servers)) = field(top, "mcpServers") else {
        return Err(r.error(root.span.start, "no \"mcpServers\" at the top level"));
    };
    r.servers("mcpServers", servers, server)
}

fn server(r: &mut Reader<'_>, name: &Key, node: &Node) -> Result<ServerEntry, ConfigError> {
    let entries = r.entry(node)?;
    let declared = r.transport_type(entries, TYPES)?;
    let transport = match r.kind(name.span.start, entries, declared)? {
        Kind::Stdio => {
            let env = r.env(entries)?;
            r.stdio(entries, env)?
        }
        Kind::Http => {
            let headers = r.string_map_field(entries, "headers")?;
            r.http(entries, headers)?
        }
    };
    let mut entry = ServerEntry::new(&name.name, transport);
    if let Some((_, disabled)) = field(entries, "disabled") {
        entry.enabled = !r.bool(disabled, "disabled")?;
    }
    Ok(entry)
}
