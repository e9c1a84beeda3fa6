//! What the transcript runners (`transcript.rs` for stdio, `http_transcript.rs` for Streamable
//! HTTP) share: the JSON matcher, byte escapes and the names of warnings.

use mcp_proto::Warning;
use serde_json::Value;

/// In an expected message, a string that matches any value.
const ANY: &str = "<any>";

/// JSON equality, but for `"<any>"` in `want`, which matches any value.
pub fn json_matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::String(s), _) if s == ANY => true,
        (Value::Object(w), Value::Object(g)) => {
            w.len() == g.len()
                && w.iter()
                    .all(|(k, v)| g.get(k).is_some_and(|g| json_matches(v, g)))
        }
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(w, g)| json_matches(w, g))
        }
        _ => want == got,
    }
}

/// Bytes written with escapes: `\n`, `\r`, `\t`, `\0`, `\\`, `\xHH`.
pub fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('\\') => out.push(b'\\'),
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('t') => out.push(b'\t'),
            Some('0') => out.push(0),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                let b = u8::from_str_radix(&hex, 16).map_err(|_| format!("bad \\x{hex}"))?;
                out.push(b);
            }
            other => return Err(format!("unknown escape \\{}", other.unwrap_or(' '))),
        }
    }
    Ok(out)
}

/// A warning's name in a transcript.
pub fn warning_kind(w: &Warning) -> &'static str {
    match w {
        Warning::NotJson { .. } => "not_json",
        Warning::NotJsonRpc(_) => "not_json_rpc",
        Warning::UnknownId(_) => "unknown_id",
        Warning::ErrorWithoutId(_) => "error_without_id",
        Warning::RequestIdTooLong { .. } => "request_id_too_long",
        Warning::Oversized { .. } => "oversized",
        Warning::ToolRejected { .. } => "tool_rejected",
        _ => "other",
    }
}
