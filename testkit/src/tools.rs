//! The demo tools, offered by both fake servers ([`crate::stdio_server`], [`crate::http_server`]),
//! and so by the offline demos (`mcp-client`, `mcp-http`).

use serde_json::{json, Value};

const TINY_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// The tools, as `tools/list` lists them.
pub fn list() -> Value {
    let object = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required});
    json!([
        {"name": "echo", "description": "Echoes its text back.\nSecond line of the description.",
         "inputSchema": object(json!({"text": {"type": "string"}}), json!(["text"]))},
        {"name": "add", "title": "Add", "description": "Adds two integers; returns text and structured content.",
         "inputSchema": object(json!({"a": {"type": "integer"}, "b": {"type": "integer"}}), json!(["a", "b"])),
         "outputSchema": object(json!({"sum": {"type": "integer"}}), json!(["sum"]))},
        {"name": "fail", "description": "Always fails with isError: true.",
         "inputSchema": object(json!({"message": {"type": "string"}}), json!([]))},
        {"name": "image", "description": "Returns a 1x1 PNG image.", "inputSchema": {"type": "object"}},
        {"name": "big", "description": "Returns a text of the given size in bytes.",
         "inputSchema": object(json!({"bytes": {"type": "integer", "minimum": 0}}), json!(["bytes"]))},
        {"name": "slow", "description": "Answers after the given delay in milliseconds.",
         "inputSchema": object(json!({"ms": {"type": "integer", "minimum": 0}}), json!(["ms"]))}
    ])
}

fn text(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}]})
}

/// Runs `tools/call` with these params; `extra` is appended to echo and add texts. `Err` is a
/// JSON-RPC error object.
pub fn call(params: &Value, extra: &str) -> Result<Value, Value> {
    let args = &params["arguments"];
    let with_extra = |t: String| {
        if extra.is_empty() {
            t
        } else {
            format!("{t}\n{extra}")
        }
    };
    match params["name"].as_str().unwrap_or_default() {
        "echo" => Ok(text(with_extra(
            args["text"].as_str().unwrap_or_default().to_owned(),
        ))),
        "add" => match (args["a"].as_i64(), args["b"].as_i64()) {
            (Some(a), Some(b)) => {
                let sum = a.wrapping_add(b);
                Ok(
                    json!({"content": [{"type": "text", "text": with_extra(sum.to_string())}], "structuredContent": {"sum": sum}}),
                )
            }
            _ => Ok(
                json!({"content": [{"type": "text", "text": "a and b must be integers"}], "isError": true}),
            ),
        },
        "fail" => {
            let message = args["message"].as_str().unwrap_or("");
            Ok(json!({"content": [{"type": "text", "text": message}], "isError": true}))
        }
        "image" => {
            Ok(json!({"content": [{"type": "image", "data": TINY_PNG, "mimeType": "image/png"}]}))
        }
        "big" => Ok(text(
            "x".repeat(args["bytes"].as_u64().unwrap_or(0).min(1 << 30) as usize),
        )),
        "slow" => {
            std::thread::sleep(std::time::Duration::from_millis(
                args["ms"].as_u64().unwrap_or(0),
            ));
            Ok(text("done"))
        }
        other => Err(json!({"code": -32602, "message": format!("Unknown tool: {other}")})),
    }
}
