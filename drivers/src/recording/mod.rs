//! Recording what goes over the wire, and replaying it in a test: the `.mcplog` format, the
//! [`Recording`] wrapper around any [`Transport`](crate::Transport) (what `mcp-client --record
//! FILE` uses) and the [`ReplayTransport`] that plays a recording back to a [`Client`](crate::Client)
//! with no server at all.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_connect::Error> {
//! use mcp_connect::recording::ReplayTransport;
//! let client = mcp_connect::Client::new(ReplayTransport::from_file("tests/everything.mcplog")?);
//! client.initialize().await?;
//! let tools = client.list_tools().await?; // answered from the recording
//! # Ok(()) }
//! ```
//!
//! # The format (version 1)
//!
//! UTF-8 text, one item a line, lines ending in `\n`. The first line is the header:
//!
//! ```text
//! mcplog 1 {"transport":"stdio","server":["npx","-y","@modelcontextprotocol/server-everything"],"era":null}
//! ```
//!
//! `mcplog`, the format's version, and a JSON object: `transport` (`"stdio"` or `"http"`),
//! `server` (the command line, or the Streamable HTTP endpoint's URL, with what looks like a
//! secret replaced by `<redacted>`: see below), `era` (the
//! era the session spoke when it was known at the start, else `null`; the `=` line below says it
//! once known). Every other line is `KIND MS PAYLOAD`, where `MS` is the time in milliseconds
//! since the recording started (the header) and `KIND` one of:
//!
//! | kind | payload |
//! |---|---|
//! | `>` | a message the client sent, the JSON-RPC message exactly as it went over the wire (compact JSON) |
//! | `<` | a line the server printed, exactly as printed (its bytes, without the line end): a JSON value with no control character but tab |
//! | `<~` | the bytes the server printed that are no such line (not JSON, not UTF-8, a `\r` before the line end, an unterminated last line), escaped: `\\`, `\n`, `\r`, `\t`, and `\xHH` for any byte outside printable ASCII; the line end is in the payload (`\n`) when there was one |
//! | `=` | a fact learnt on the way, a JSON object: `{"era":"legacy","protocolVersion":"2025-11-25"}` once the session opened |
//! | `.` | `end`: the server's output ended (it exited, or closed its stdout). Why (its exit status, its stderr) is not recorded |
//!
//! Lines starting with `#` are comments, and empty lines are ignored. Items appear in the order
//! the client saw them: a message the client sent when it sent it, what the server printed when
//! the client read it. So whatever the client reacted to comes before its reaction.
//!
//! # What is never recorded
//!
//! The server's environment (its `env` values are never read by the recorder), its stderr, the
//! HTTP `Authorization` header and every other header (the session id included), OAuth tokens
//! and client secrets: over Streamable HTTP, [`Recording`] writes the JSON-RPC messages each
//! way (a `<` line per message the server sent, in a response or on a stream), never the HTTP
//! exchanges that carried them, and an authorization that ran is a `#` comment. In the command line,
//! an argument is replaced by `<redacted>` when it follows a flag whose name says token, secret,
//! password, key, auth, credential or cookie (`--api-key X`), its value when it is such a
//! `NAME=VALUE`, a URL's user, password and such query values, and arguments that look like
//! well-known token formats (`sk-…`, `ghp_…`, `xox…`, …). This is a heuristic: read a recording
//! before you publish it. The JSON-RPC messages are recorded whole — tool arguments and results
//! included — as they are what a replay needs.
//!
//! # Replaying
//!
//! [`ReplayTransport`] matches each message the client sends against the next `>` line, as JSON
//! (the order of an object's keys and the spacing do not matter), ignoring what legitimately
//! changes between the recording client and the replaying one: the client's identity
//! (`params.clientInfo` of `initialize`, and `params._meta["io.modelcontextprotocol/clientInfo"]`
//! in the 2026-07-28 era). Everything else must be equal — request ids and progress tokens too,
//! which the client numbers deterministically (the server's answers carry them). Once a client
//! message matched, the server's lines up to the next `>` line are delivered, in order, at once
//! (or with their recorded timing: [`ReplayTransport::timed`]); the lines before the first `>`
//! line are delivered from the start. A `.` line ends the stream, as the server's exit would (as
//! [`Error::ServerExited`](crate::Error::ServerExited) without a status); what the client sends
//! after it is dropped, as a pipe to an exited server would take it.
//!
//! A client message that is not the expected one, or one sent after the last `>` line, fails
//! the connection with a [`ReplayError`] (as [`Error::Replay`](crate::Error::Replay)) naming the
//! recording's line, what it expected and what was sent, each cut at
//! [`SHOWN_MAX`] bytes: every waiting call fails with it.
//!
//! A recording is read whole when the transport is made and checked line by line (a corrupt line
//! is refused with its line number); it may hold at most [`MAX_RECORDING`] bytes, and one line
//! at most [`MAX_LINE`] (the client's default limit on one message, plus the line's prefix).
//!
//! Timing matters to a replay only where the client has its own timers: a legacy server that
//! ignored the era probe shows the client's 2 s probe timeout in the recording, and the replay
//! waits for it too (the client sends `initialize` after it, as it did then).

mod record;
mod replay;

pub use record::{Header, Recorder, Recording};
pub use replay::{ReplayError, ReplayTransport, MAX_LINE, MAX_RECORDING, SHOWN_MAX};

/// The first word of a recording's header line.
pub const MAGIC: &str = "mcplog";

/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;

/// `bytes` escaped for a `<~` line: printable ASCII but `\` as is, `\\`, `\n`, `\r`, `\t`, and
/// `\xHH` for every other byte.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// The bytes a `<~` payload stands for; `None` when it is not a valid escape.
pub(crate) fn unescape(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            if !(0x20..=0x7e).contains(&b) {
                return None;
            }
            out.push(b);
            continue;
        }
        match bytes.next()? {
            b'\\' => out.push(b'\\'),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'x' => {
                let hex = [bytes.next()?, bytes.next()?];
                let hex = std::str::from_utf8(&hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Whether a line the server printed (without its `\n`) is written as it is (`<`): a JSON value
/// with no control character but tab, so that the recording's own lines stay intact.
pub(crate) fn verbatim(line: &[u8]) -> bool {
    line.iter().all(|&b| b >= 0x20 || b == b'\t')
        && !line.is_empty()
        && serde_json::from_slice::<&serde_json::value::RawValue>(line).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_round_trip_every_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        let text = escape(&all);
        assert!(text.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{text}");
        assert_eq!(unescape(&text).unwrap(), all);
        assert_eq!(escape(b"a\\b\r\n"), "a\\\\b\\r\\n");
        for bad in ["\\", "\\x4", "\\xzz", "\\q", "caf\u{e9}"] {
            assert_eq!(unescape(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_clean_json_lines_are_verbatim() {
        assert!(verbatim(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(verbatim(b"{\"a\":\t1}"));
        assert!(!verbatim(b"{\"a\":1}\r"));
        assert!(!verbatim(b"hello"));
        assert!(!verbatim(b""));
        assert!(!verbatim(b"{\"a\":\"\xff\"}"));
    }
}
