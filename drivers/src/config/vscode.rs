//! VS Code's `.vscode/mcp.json` (JSONC):
//!
//! ```jsonc
//! {
//!   "inputs": [
//!     { "type": "promptString", "id": "github-token", "description": "GitHub token", "password": true }
//!   ],
//!   "servers": {
//!     "github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/",
//!                 "headers": { "Authorization": "Bearer ${input:github-token}" } },
//!     "fs": { "type": "stdio", "command": "npx",
//!             "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"],
//!             "envFile": "${workspaceFolder}/.env" }
//!   }
//! }
//! ```
//!
//! - `type` is `stdio` or `http` (optional: `command` means stdio, `url` HTTP); `sse` is refused.
//! - `inputs` are never prompted for: each `${input:ID}` used must be supplied in
//!   [`ExpandOptions::inputs`](super::ExpandOptions::inputs), or the entry using it fails saying
//!   so (with the input's `description`), listed in
//!   [`ServersConfig::failed`](super::ServersConfig::failed).
//! - `envFile` (a path, expanded, relative to the workspace folder) is read as `KEY=VALUE` lines:
//!   blank lines and lines starting with `#` are skipped, an `export ` prefix is allowed, a value
//!   may be in `"…"` (where `\n`, `\"` and `\\` are escapes) or `'…'` (taken as written), and an
//!   unquoted value ends at ` #`. Values are not expanded. `env` entries override the file's.
//!   It must be a regular file of at most [`MAX_ENV_FILE`](super::MAX_ENV_FILE) bytes (4 MiB;
//!   see [Files read](super#files-read)).

use super::tree::{Key, Node, Value};
use super::{field, ConfigError, ConfigErrorKind, Kind, Reader, ServerEntry};
use std::collections::BTreeMap;
use std::path::Path;

/// The `type` names VS Code uses.
const TYPES: &[(&str, Kind)] = &[("stdio", Kind::Stdio), ("http", Kind::Http)];

pub(super) fn read(r: &mut Reader<'_>, root: &Node) -> Result<Vec<ServerEntry>, ConfigError> {
    let top = r.top(root)?;
    if let Some((_, inputs)) = field(top, "inputs") {
        declare_inputs(r, inputs)?;
    }
    let Some((_, servers)) = field(top, "servers") else {
        return Err(r.error(root.span.start, "no \"servers\" at the top level"));
    };
    r.servers("servers", servers, server)
}

/// Notes each declared input's `description`, for the message when one is not supplied.
fn declare_inputs(r: &mut Reader<'_>, inputs: &Node) -> Result<(), ConfigError> {
    let message = "\"inputs\" must be an array of objects with a string \"id\"";
    let Value::Array(items) = &inputs.value else {
        return Err(r.error(inputs.span.start, message));
    };
    for item in items {
        let id = item
            .as_object()
            .and_then(|entries| field(entries, "id"))
            .and_then(|(_, id)| id.as_str())
            .ok_or_else(|| r.error(item.span.start, message))?;
        let description = item
            .as_object()
            .and_then(|entries| field(entries, "description"))
            .and_then(|(_, d)| d.as_str())
            .map(str::to_owned);
        r.declared_inputs.insert(id.to_owned(), description);
    }
    Ok(())
}

fn server(r: &mut Reader<'_>, name: &Key, node: &Node) -> Result<Option<ServerEntry>, ConfigError> {
    let entries = r.entry(node)?;
    let declared = r.transport_type(entries, TYPES)?;
    let transport = match r.kind(name.span.start, entries, declared)? {
        Kind::Stdio => {
            let mut env = BTreeMap::new();
            if let Some((_, file)) = field(entries, "envFile") {
                let path = r.path_value(file, "envFile")?;
                env.extend(env_file(r, &path, file)?);
            }
            // `env` wins over `envFile`.
            env.extend(r.env(entries)?);
            r.stdio(entries, env)?
        }
        Kind::Http => {
            let headers = r.string_map_field(entries, "headers")?;
            r.http(entries, headers)?
        }
    };
    Ok(Some(ServerEntry::new(&name.name, transport)))
}

/// Reads an `envFile` (see the [module docs](self)); its errors point into it.
fn env_file(
    r: &Reader<'_>,
    path: &Path,
    node: &Node,
) -> Result<Vec<(String, String)>, ConfigError> {
    let what = format!("\"envFile\" {}", path.display());
    let text = super::read_text(path, super::MAX_ENV_FILE, &what)
        .map_err(|kind| r.error_kind(node.span.start, kind))?;
    let error = |line: usize, raw: &str, message: &str| ConfigError {
        path: path.to_owned(),
        position: Some((line, raw.len() - raw.trim_start().len() + 1)),
        server: r.server.clone(),
        kind: ConfigErrorKind::Invalid(message.to_owned()),
    };
    let mut vars = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((key, value)) = line.split_once('=') else {
            return Err(error(i + 1, raw, "expected KEY=VALUE"));
        };
        let key = key.trim_end();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            return Err(error(
                i + 1,
                raw,
                "expected KEY=VALUE, KEY made of letters, digits, '_', '.' and '-'",
            ));
        }
        let value = value.trim_start();
        let (value, after) = match value.chars().next() {
            Some(quote @ ('"' | '\'')) => {
                let Some((value, after)) = quoted(&value[1..], quote) else {
                    return Err(error(
                        i + 1,
                        raw,
                        "a quoted value without its closing quote",
                    ));
                };
                (value, after.trim_start())
            }
            _ => (
                value
                    .split(" #")
                    .next()
                    .unwrap_or_default()
                    .trim_end()
                    .to_owned(),
                "",
            ),
        };
        if !(after.is_empty() || after.starts_with('#')) {
            return Err(error(i + 1, raw, "text after a quoted value"));
        }
        vars.push((key.to_owned(), value));
    }
    Ok(vars)
}

/// A value after its opening `quote`: the value and what follows its closing quote.
fn quoted(text: &str, quote: char) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c == quote => return Some((value, &text[i + 1..])),
            '\\' if quote == '"' => match chars.next()?.1 {
                'n' => value.push('\n'),
                other @ ('"' | '\\') => value.push(other),
                other => {
                    value.push('\\');
                    value.push(other);
                }
            },
            c => value.push(c),
        }
    }
    None
}
