//! The pure half of the tool bridge: listed tools become tool definitions an agent registers, and
//! call results become what the model reads.
//!
//! > "Tool errors should be reported within the result object, not as an MCP protocol-level error
//! > response. This allows the LLM to see that an error occurred and potentially self-correct."
//! > — MCP 2025-11-25, Server Features § Tools § Error Handling
//!
//! So a result with `isError: true` becomes a *correctable* [`ToolOutput::Retry`], whereas protocol
//! errors, transport failures and cancellation stay fatal errors of the caller's.

use crate::types::{CallToolResult, ContentBlock, Tool};
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt::Write as _;

/// What an agent registers for one server tool.
#[derive(Debug, Clone)]
pub struct ToolDefinition {
    /// The server's tool name; what `tools/call` takes.
    pub name: String,
    /// The description for the model (empty when the server gave none).
    pub description: String,
    /// The input JSON Schema, verbatim as the server sent it (`{"type":"object"}` when it sent none).
    pub input_schema: Box<RawValue>,
}

impl PartialEq for ToolDefinition {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.input_schema.get() == other.input_schema.get()
    }
}

impl ToolDefinition {
    /// The input schema parsed into a [`Value`], for frameworks that want one. Parsing loses no
    /// meaning, only the server's whitespace; under serde_json's default features, member order
    /// is sorted.
    pub fn input_schema_value(&self) -> Value {
        serde_json::from_str(self.input_schema.get()).unwrap_or_else(|_| default_schema_value())
    }
}

fn default_schema_value() -> Value {
    serde_json::json!({ "type": "object" })
}

/// The schema used when a tool lists none.
pub fn default_input_schema() -> Box<RawValue> {
    RawValue::from_string(r#"{"type":"object"}"#.to_owned()).expect("a valid JSON literal")
}

impl From<&Tool> for ToolDefinition {
    fn from(tool: &Tool) -> Self {
        ToolDefinition {
            name: tool.name.clone(),
            description: tool.description.clone().unwrap_or_default(),
            input_schema: tool
                .input_schema
                .clone()
                .unwrap_or_else(default_input_schema),
        }
    }
}

/// What one tool call gives the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutput {
    /// The tool succeeded: the text the model reads.
    Text(String),
    /// The tool reported `isError: true`: a correctable failure whose message the model may read
    /// and retry on.
    Retry(String),
}

impl ToolOutput {
    /// The text, success or failure.
    pub fn text(&self) -> &str {
        match self {
            ToolOutput::Text(t) | ToolOutput::Retry(t) => t,
        }
    }

    /// Whether the tool reported an error.
    pub fn is_error(&self) -> bool {
        matches!(self, ToolOutput::Retry(_))
    }
}

/// Turns a `tools/call` result for tool `name` into what the model reads.
pub fn tool_output(name: &str, result: &CallToolResult) -> ToolOutput {
    let text = render_text(result);
    if result.is_error {
        if text.trim().is_empty() {
            ToolOutput::Retry(format!("tool {name} failed"))
        } else {
            ToolOutput::Retry(text)
        }
    } else {
        ToolOutput::Text(text)
    }
}

/// The text a model reads from a result: text blocks joined by `\n`; an embedded text resource
/// contributes its text; any other block one placeholder line (type, MIME type, size or URI, never
/// the payload); with no content at all, the JSON of `structuredContent`.
pub fn render_text(result: &CallToolResult) -> String {
    if result.content.is_empty() {
        return match &result.structured_content {
            Some(v) => v.to_string(),
            None => String::new(),
        };
    }
    let mut out = String::new();
    for (i, block) in result.content.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        render_block(block, &mut out);
    }
    out
}

/// Appends one block's text or placeholder line.
pub fn render_block(block: &ContentBlock, out: &mut String) {
    // `write!` to a String cannot fail.
    let _ = match block {
        ContentBlock::Text { text } => {
            out.push_str(text);
            Ok(())
        }
        ContentBlock::Image { data, mime_type } => {
            write!(
                out,
                "[image: {}, {}]",
                or_unknown(mime_type),
                fmt_size(base64_len(data))
            )
        }
        ContentBlock::Audio { data, mime_type } => {
            write!(
                out,
                "[audio: {}, {}]",
                or_unknown(mime_type),
                fmt_size(base64_len(data))
            )
        }
        ContentBlock::ResourceLink {
            uri,
            name,
            mime_type,
            ..
        } => write!(out, "[resource link: {uri}")
            .and_then(|_| match name.as_str() {
                "" => Ok(()),
                n => write!(out, " ({n})"),
            })
            .and_then(|_| match mime_type {
                Some(m) => write!(out, ", {m}"),
                None => Ok(()),
            })
            .and_then(|_| write!(out, "]")),
        ContentBlock::Resource { resource } => match (&resource.text, &resource.blob) {
            (Some(text), _) => {
                out.push_str(text);
                Ok(())
            }
            (None, blob) => write!(
                out,
                "[resource: {}, {}, {}]",
                resource.uri,
                resource.mime_type.as_deref().unwrap_or("unknown type"),
                fmt_size(blob.as_deref().map_or(0, base64_len))
            ),
        },
        ContentBlock::Unknown(v) => {
            let kind = v.get("type").and_then(Value::as_str).unwrap_or("untyped");
            write!(out, "[{kind} content, not shown]")
        }
    };
}

fn or_unknown(mime: &str) -> &str {
    if mime.is_empty() {
        "unknown type"
    } else {
        mime
    }
}

/// Decoded size of a base64 payload, from its length alone.
fn base64_len(data: &str) -> u64 {
    let data = data.trim_end();
    let pad = data.bytes().rev().take_while(|&b| b == b'=').count() as u64;
    let n = data.bytes().filter(|b| !b.is_ascii_whitespace()).count() as u64;
    (n * 3 / 4).saturating_sub(pad)
}

fn fmt_size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} bytes"),
        b if b < 1024 * 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    }
}

impl CallToolResult {
    /// The text a model reads from this result; see [`render_text`].
    pub fn text(&self) -> String {
        render_text(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).expect("a call result")
    }

    #[test]
    fn text_blocks_join_with_newlines() {
        let r = result(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b\nc"}]}),
        );
        assert_eq!(tool_output("t", &r), ToolOutput::Text("a\nb\nc".into()));
    }

    #[test]
    fn every_other_block_is_one_placeholder_line_without_payload() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let r = result(json!({"content": [
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "file:///b.txt", "mimeType": "text/plain", "text": "inline text"}},
            {"type": "resource", "resource": {"uri": "file:///c.bin", "mimeType": "application/octet-stream", "blob": "AAECAw=="}},
            {"type": "hologram", "data": "xyz"},
            {"type": "text"}
        ]}));
        let text = render_text(&r);
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "[image: image/png, 70 bytes]",
                "[audio: audio/wav, 4 bytes]",
                "[resource link: file:///a.txt (a.txt), text/plain]",
                "inline text",
                "[resource: file:///c.bin, application/octet-stream, 4 bytes]",
                "[hologram content, not shown]",
                "[text content, not shown]",
            ]
        );
        assert!(!text.contains(png));
        // The malformed text block is kept whole as an unknown block.
        assert_eq!(r.content[6], ContentBlock::Unknown(json!({"type": "text"})));
    }

    #[test]
    fn structured_content_is_the_text_when_there_is_no_content() {
        let r = result(json!({"content": [], "structuredContent": {"temperature": 21}}));
        assert_eq!(r.text(), r#"{"temperature":21}"#);
        let r = result(
            json!({"content": [{"type": "text", "text": "t"}], "structuredContent": {"x": 1}}),
        );
        assert_eq!(r.text(), "t", "content wins when there is some");
    }

    #[test]
    fn is_error_is_a_correctable_retry_with_the_servers_text() {
        let r = result(
            json!({"content": [{"type": "text", "text": "b must be a number"}], "isError": true}),
        );
        assert_eq!(
            tool_output("add", &r),
            ToolOutput::Retry("b must be a number".into())
        );
        let r = result(json!({"content": [], "isError": true}));
        assert_eq!(
            tool_output("add", &r),
            ToolOutput::Retry("tool add failed".into())
        );
        let r = result(json!({"content": [{"type": "text", "text": "ok"}], "isError": null}));
        assert!(
            !tool_output("add", &r).is_error(),
            "null isError is no error"
        );
    }

    #[test]
    fn definitions_keep_the_schema_verbatim_and_default_it() {
        let schema = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"n":{"type":"number"}},"properties":{"a":{"$ref":"#/$defs/n"}},"if":{"required":["a"]},"then":{"required":["b"]},"else":{},"allOf":[{"type":"object"}]}"##;
        let tool = Tool::from_json(&format!(
            r#"{{"name":"t","description":"d","inputSchema":{schema},"extra":1}}"#
        ))
        .unwrap();
        let def = ToolDefinition::from(&tool);
        assert_eq!(def.input_schema.get(), schema);
        assert_eq!(def.description, "d");
        assert_eq!(
            serde_json::to_string(&tool).unwrap(),
            tool.raw().get(),
            "serialized exactly as sent"
        );
        let bare = ToolDefinition::from(&Tool::from_json(r#"{"name":"bare"}"#).unwrap());
        assert_eq!(bare.input_schema.get(), r#"{"type":"object"}"#);
        assert_eq!(bare.description, "");
    }

    #[test]
    fn sizes_are_read_from_the_base64_length() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("AA=="), 1);
        assert_eq!(base64_len("AAA="), 2);
        assert_eq!(base64_len("AAAA"), 3);
        assert_eq!(fmt_size(3 * 1024), "3.0 KiB");
        assert_eq!(fmt_size(5 * 1024 * 1024 + 1), "5.0 MiB");
    }
}
