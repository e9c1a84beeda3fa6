//! The JSON-RPC 2.0 envelope: ids, error objects, and one incoming message as read off the wire
//! (what it is, by method, is [`crate::methods`]'s to say).
//!
//! > "Requests MUST include a string or integer ID. Unlike base JSON-RPC, the ID MUST NOT be null."
//! > — MCP 2025-11-25, Basic § Requests
//!
//! Incoming messages are read with borrowed [`RawValue`]s, so a tool result is parsed once, straight
//! into its typed form, and a server's request id is echoed back byte for byte.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// JSON-RPC error code: invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC error code: the JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC error code: the method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC error code: invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC error code: internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;

/// The id of a request this client sent. Ids are integers, unique within a session, never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub u64);

/// Hashes a client's own ids — [`RequestId`]s and the wire ids its requests go out with — for
/// the maps that find a request by them. The ids are counters this client made, never the
/// peer's choice, so SipHash's defence against chosen keys buys nothing, and it cost a call ~400
/// instructions (an insert, a lookup, a removal); a multiply spreads the counter's values. Not
/// for keys a peer chooses.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the keys are `u64`s); any other input is still hashed.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The [`BuildHasher`](std::hash::BuildHasher) of [`IdHasher`]: `HashMap<RequestId, V, IdHash>`.
pub type IdHash = std::hash::BuildHasherDefault<IdHasher>;

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A JSON-RPC error object: `{code, message, data?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code (see the constants in this module).
    pub code: i64,
    /// A short description.
    #[serde(default)]
    pub message: String,
    /// Additional information, as the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)?;
        if let Some(data) = &self.data {
            write!(f, ": {data}")?;
        }
        Ok(())
    }
}

/// One message as read off the wire, before it is classified. Unknown members are ignored.
#[derive(Debug, Deserialize)]
pub(crate) struct RawMessage<'a> {
    #[serde(default, borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default, borrow)]
    pub params: Option<&'a RawValue>,
    /// Present even when `null`: `"result": null` is a JSON-RPC success answer like any other.
    #[serde(default, borrow, deserialize_with = "present")]
    pub result: Option<&'a RawValue>,
    #[serde(default)]
    pub error: Option<Value>,
}

/// A member that is present, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Reads one of our own ids back from a response: an integer we could have sent.
pub(crate) fn parse_own_id(raw: &RawValue) -> Option<RequestId> {
    raw.get().parse::<u64>().ok().map(RequestId)
}

/// The id of an answer written the way most servers write one: opening with
/// `{"jsonrpc":"2.0","id":<digits>` or `{"id":<digits>`, or ending with `,"id":<digits>}`. Read
/// in place, without the copy and the check as JSON that [`peek_id`] makes (~550 instructions a
/// call). `None` for any other message, which [`peek_id`] then reads. Which id is found only
/// chooses the pending request to try: the message is then parsed whole, and its `id` must be
/// that one.
///
/// [`peek_id`]: crate::framing::peek_id
pub(crate) fn plain_id(message: &[u8]) -> Option<u64> {
    const HEADS: [&[u8]; 2] = [b"{\"jsonrpc\":\"2.0\",\"id\":", b"{\"id\":"];
    if let Some((digits, after)) = HEADS.iter().find_map(|head| id_after(message, head)) {
        return matches!(after.first(), Some(b',' | b'}'))
            .then(|| number(digits))
            .flatten();
    }
    id_at_end(message, b",\"id\":")
}

/// The digits that follow `head` at the message's start, and what follows them.
fn id_after<'m>(message: &'m [u8], head: &[u8]) -> Option<(&'m [u8], &'m [u8])> {
    let rest = message.strip_prefix(head)?;
    Some(rest.split_at(rest.iter().take_while(|b| b.is_ascii_digit()).count()))
}

/// The id of a message that ends with `before`, digits and its closing `}`.
fn id_at_end(message: &[u8], before: &[u8]) -> Option<u64> {
    let body = message.strip_suffix(b"}")?;
    let n = body.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let (rest, digits) = body.split_at(body.len() - n);
    rest.ends_with(before).then(|| number(digits)).flatten()
}

/// A JSON number made of `digits` (no leading zero) that fits a `u64`.
fn number(digits: &[u8]) -> Option<u64> {
    match digits {
        [] => None,
        [b'0', _, ..] => None,
        _ => digits.iter().try_fold(0u64, |n, d| {
            n.checked_mul(10)?
                .checked_add(u64::from(d.checked_sub(b'0').filter(|d| *d < 10)?))
        }),
    }
}

/// The id of a message that, written in one of the forms most servers write, says it is a
/// *result*: `{"jsonrpc":"2.0","id":<digits>,"result":…` (the schema's field order: the Python
/// SDK, rmcp), `{"id":<digits>,"jsonrpc":"2.0","result":…` (in sorted order, as a
/// `serde_json::Value` map writes it: this crate's test servers) or
/// `{"result":…,"jsonrpc":"2.0","id":<digits>}` (the TypeScript SDK's). Read from the ends
/// alone: the message is not checked as JSON here. A
/// transport that takes such a message for its request's answer without reading it whole
/// relies on the session to fail that request when the message turns out not to be one
/// (`Core::handle_message`), so that the request does not wait for an answer nobody reads.
pub(crate) fn result_id(message: &[u8]) -> Option<u64> {
    const HEADS: [(&[u8], &[u8]); 2] = [
        (b"{\"jsonrpc\":\"2.0\",\"id\":", b",\"result\":"),
        (b"{\"id\":", b",\"jsonrpc\":\"2.0\",\"result\":"),
    ];
    let head = HEADS
        .iter()
        .find_map(|(head, then)| Some((id_after(message, head)?, *then)));
    if let Some(((digits, after), then)) = head {
        return after.starts_with(then).then(|| number(digits)).flatten();
    }
    id_at_end(
        message.strip_prefix(b"{\"result\":")?,
        b",\"jsonrpc\":\"2.0\",\"id\":",
    )
}

/// Serializes a request `{jsonrpc, id, method, params?}` compactly.
pub(crate) fn encode_request<P: Serialize + ?Sized>(
    id: RequestId,
    method: &str,
    params: Option<&P>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    request_head(&mut out, id.0, method);
    if let Some(params) = params {
        out.extend_from_slice(b",\"params\":");
        write_json(&mut out, params);
    }
    out.push(b'}');
    out
}

/// Writes the start of a request, `{"jsonrpc":"2.0","id":<id>,"method":<method>`, as
/// serde_json writes it: its constant parts are copied rather than escaped one by one (~450
/// instructions a request); the caller writes `,"params":…` and the closing `}`.
pub(crate) fn request_head(out: &mut Vec<u8>, id: u64, method: &str) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, &id);
    out.extend_from_slice(b",\"method\":");
    write_str(out, method);
}

/// Appends `text` as a JSON string, as serde_json writes it: a string with nothing to escape
/// (no `"`, `\\` or control character: a method, most tool names) is copied between its quotes
/// (~70 instructions fewer than serde_json's byte-by-byte escaping for a short one).
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    // What serde_json escapes: control characters, `"` and `\\`.
    const PLAIN: [bool; 256] = {
        let mut plain = [true; 256];
        let mut b = 0;
        while b < 0x20 {
            plain[b] = false;
            b += 1;
        }
        plain[b'"' as usize] = false;
        plain[b'\\' as usize] = false;
        plain
    };
    if text.bytes().all(|b| PLAIN[usize::from(b)]) {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        write_json(out, text);
    }
}

/// Appends `value`, compactly.
pub(crate) fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing to a `Vec` cannot fail, nor can serializing the strings, integers and JSON values
    // this is given: serde_json only errors on non-string map keys and failing `Serialize` impls.
    serde_json::to_writer(out, value).expect("serializing a JSON-RPC message cannot fail");
}

/// Serializes a notification `{jsonrpc, method, params?}` compactly.
pub(crate) fn encode_notification(method: &str, params: Option<&Value>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Notification<'a> {
        jsonrpc: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a Value>,
    }
    to_vec(&Notification {
        jsonrpc: "2.0",
        method,
        params,
    })
}

/// Serializes a response to a server request, echoing its raw id.
pub(crate) fn encode_response(id: &RawValue, outcome: Result<Value, RpcError>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<RpcError>,
    }
    let (result, error) = match outcome {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    to_vec(&Response {
        jsonrpc: "2.0",
        id,
        result,
        error,
    })
}

fn to_vec(value: &impl Serialize) -> Vec<u8> {
    // Serializing these derive-generated structs of strings, integers and `Value`s cannot fail:
    // serde_json only errors on non-string map keys and on failing `Serialize` impls, and neither occurs.
    serde_json::to_vec(value).expect("serializing a JSON-RPC envelope cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_str_writes_what_serde_json_writes() {
        let every_byte: String = (0u8..=0x7f).map(char::from).collect();
        for text in [
            "",
            "tools/call",
            "echo",
            "héllo wörld \u{1F600}",
            "quote \" and backslash \\",
            "tab\tnewline\n",
            "\u{7f}\u{80}\u{2028}",
            every_byte.as_str(),
        ] {
            let mut out = b"x".to_vec();
            write_str(&mut out, text);
            let want = [&b"x"[..], serde_json::to_string(text).unwrap().as_bytes()].concat();
            assert_eq!(out, want, "{text:?}");
        }
    }

    #[test]
    fn result_id_reads_a_result_from_its_ends_in_the_two_common_forms() {
        let cases: &[(&str, Option<u64>)] = &[
            (r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, Some(7)),
            (r#"{"result":{"a":1},"jsonrpc":"2.0","id":9}"#, Some(9)),
            (r#"{"id":42,"jsonrpc":"2.0","result":[]}"#, Some(42)),
            (r#"{"result":null,"jsonrpc":"2.0","id":0}"#, Some(0)),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":1}"#,
                Some(u64::MAX),
            ),
            // Read from the ends alone: what lies between is the session's to read.
            (r#"{"jsonrpc":"2.0","id":7,"result":"#, Some(7)),
            // Not a result: an error, a server request, a notification.
            (
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":""}}"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, None),
            (r#"{"error":{},"jsonrpc":"2.0","id":7}"#, None),
            (r#"{"id":7,"jsonrpc":"2.0","method":"ping"}"#, None),
            (r#"{"id":7,"result":{},"jsonrpc":"2.0"}"#, None),
            (r#"{"jsonrpc":"2.0","method":"x","params":{"id":7}}"#, None),
            // Not a plain id: the general path's.
            (r#"{"jsonrpc":"2.0","id":07,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":"7","result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":,"result":{}}"#, None),
            (r#"{"result":{},"jsonrpc":"2.0","id":"7"}"#, None),
            (r#"{"result":{},"jsonrpc":"2.0","id":7 }"#, None),
            (r#"{"result":{},"id":7}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":1}"#,
                None,
            ),
            ("", None),
            ("{", None),
        ];
        for (message, want) in cases {
            assert_eq!(result_id(message.as_bytes()), *want, "{message}");
        }
    }
}
