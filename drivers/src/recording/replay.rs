//! Playing a recording back: the [`ReplayTransport`] answers the client from a `.mcplog` file.

use super::{unescape, verbatim, MAGIC, VERSION};
use crate::transport::{BoxFuture, Inbound, Transmit, Transport};
use crate::Error;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The most a recording may hold, in bytes: a longer one is refused when read.
pub const MAX_RECORDING: usize = 256 * 1024 * 1024;

/// The most one line of a recording may hold, in bytes: the client's default limit on one
/// message ([`mcp_proto::framing::DEFAULT_FRAME_LIMIT`], 64 MiB) and room for the line's kind and
/// time. A longer line is refused when the recording is read.
pub const MAX_LINE: usize = mcp_proto::framing::DEFAULT_FRAME_LIMIT + 64;

/// How much of a message a [`ReplayError`] shows, in bytes: the rest is cut, its length said.
pub const SHOWN_MAX: usize = 240;

/// Why a replay failed: the recording cannot be read, or the client did not do what it records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// Line `line` of the recording breaks the [format](super#the-format-version-1) (a corrupt
    /// or truncated file, a newer version, a line over [`MAX_LINE`]).
    #[error("recording line {line}: {what}")]
    Format {
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// The client sent `sent` where line `line` of the recording has it send `expected`.
    #[error("replay: line {line} of the recording expects the client to send {expected}, but it sent {sent}")]
    Mismatch {
        /// The recording's line, from 1.
        line: usize,
        /// The recorded message, cut at [`SHOWN_MAX`] bytes.
        expected: String,
        /// The client's message, cut at [`SHOWN_MAX`] bytes.
        sent: String,
    },
    /// The client sent `sent` after the last message the recording has it send (line `line`,
    /// `0` when it has none).
    #[error(
        "replay: the client sent {sent} after the recording's last client message (line {line})"
    )]
    Ended {
        /// The recording's last line of a client message.
        line: usize,
        /// The client's message, cut at [`SHOWN_MAX`] bytes.
        sent: String,
    },
}

/// What one line of a recording holds.
#[derive(Debug)]
enum Item {
    /// A message the client sent: its JSON, in the recording's text.
    Client(Range<usize>),
    /// A line the server printed, as it is in the recording's text (`\n` to be added).
    Line(Range<usize>),
    /// The server's bytes, unescaped.
    Bytes(Vec<u8>),
    /// The server's output ended.
    End,
}

#[derive(Debug)]
struct Line {
    number: usize,
    ms: u64,
    item: Item,
}

/// A [`Transport`] that plays a recording back: each message the client sends is checked
/// against the next one recorded, and what the server printed after it is delivered. See
/// [replaying](super#replaying) for what is compared and what a mismatch does.
pub struct ReplayTransport {
    text: String,
    lines: Vec<Line>,
    /// The line numbers of the `>` lines, for [`ReplayError::Ended`].
    last_client_line: usize,
    timed: bool,
    /// What carried the recorded session (the header's `transport`): the client replaying it
    /// behaves as over that transport (over HTTP, a modern call learns its tool's mirrored
    /// headers first, as it did when recorded).
    kind: mcp_proto::TransportKind,
    state: Mutex<State>,
    /// Rung when something was queued for the client, or the replay failed or closed.
    arrived: event_listener::Event,
}

#[derive(Debug)]
struct State {
    /// The index in `lines` of the first line not yet released.
    next: usize,
    /// Released lines (indices in `lines`), each with the time it is due (with timing).
    queue: VecDeque<(Instant, usize)>,
    /// When the last client message matched, and its recorded time: what the server's timing is
    /// counted from.
    anchor: (Instant, u64),
    failed: Option<ReplayError>,
    /// The `.` line was delivered, or the client closed.
    closed: bool,
    /// The `.` line was released: the server is gone, and what the client sends is dropped.
    gone: bool,
}

impl std::fmt::Debug for ReplayTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayTransport")
            .field("lines", &self.lines.len())
            .field("timed", &self.timed)
            .finish_non_exhaustive()
    }
}

/// `bytes` as shown in an error: as text, cut at [`SHOWN_MAX`] bytes (on a character boundary),
/// the whole length said when cut.
fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= SHOWN_MAX {
        return text.into_owned();
    }
    let mut end = SHOWN_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], bytes.len())
}

/// A client message with what may change between clients removed: its identity.
fn comparable(mut message: Value) -> Value {
    if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
        // `initialize`'s clientInfo (<= 2025-11-25).
        params.remove("clientInfo");
        // > "io.modelcontextprotocol/clientInfo" in every request's `_meta` (2026-07-28).
        if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.remove("io.modelcontextprotocol/clientInfo");
        }
    }
    message
}

fn same_message(recorded: &[u8], sent: &[u8]) -> bool {
    if recorded == sent {
        return true;
    }
    match (
        serde_json::from_slice::<Value>(recorded),
        serde_json::from_slice::<Value>(sent),
    ) {
        (Ok(a), Ok(b)) => comparable(a) == comparable(b),
        _ => false,
    }
}

impl ReplayTransport {
    /// The recording in the file at `path`, read and checked whole
    /// ([`Error::Io`] when it cannot be read, [`Error::Replay`] when it breaks the format or
    /// holds more than [`MAX_RECORDING`] bytes).
    pub fn from_file(path: impl AsRef<Path>) -> Result<ReplayTransport, Error> {
        let path = path.as_ref();
        let context = || format!("reading the recording {}", path.display());
        let file = std::fs::File::open(path).map_err(|e| Error::io(context(), e))?;
        let mut bytes = Vec::new();
        file.take(MAX_RECORDING as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(context(), e))?;
        if bytes.len() > MAX_RECORDING {
            return Err(Error::Replay(ReplayError::Format {
                line: 0,
                what: format!("the recording is over the limit of {MAX_RECORDING} bytes"),
            }));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            Error::Replay(ReplayError::Format {
                line,
                what: "not UTF-8".into(),
            })
        })?;
        ReplayTransport::from_string(text)
    }

    /// The recording `text`, checked whole ([`Error::Replay`] when it breaks the format or
    /// holds more than [`MAX_RECORDING`] bytes).
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str) -> Result<ReplayTransport, Error> {
        ReplayTransport::from_string(text.to_owned())
    }

    /// As [`from_str`](Self::from_str), keeping `text`.
    pub fn from_string(text: String) -> Result<ReplayTransport, Error> {
        let lines = parse(&text).map_err(Error::Replay)?;
        let last_client_line = lines
            .iter()
            .rev()
            .find(|l| matches!(l.item, Item::Client(_)))
            .map(|l| l.number)
            .unwrap_or(0);
        let now = Instant::now();
        let kind = recorded_kind(&text);
        let replay = ReplayTransport {
            text,
            lines,
            last_client_line,
            timed: false,
            kind,
            state: Mutex::new(State {
                next: 0,
                queue: VecDeque::new(),
                anchor: (now, 0),
                failed: None,
                closed: false,
                gone: false,
            }),
            arrived: event_listener::Event::new(),
        };
        replay.release(&mut replay.lock());
        Ok(replay)
    }

    /// With `timed`, the server's lines are delivered with their recorded timing: each as long
    /// after the client message before it matched as it came after it in the recording. Without
    /// (the default), as fast as the client takes them.
    pub fn timed(mut self, timed: bool) -> Self {
        self.timed = timed;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues the server's lines from `next` up to the next client message.
    fn release(&self, st: &mut State) {
        let (at, from_ms) = st.anchor;
        while let Some(line) = self.lines.get(st.next) {
            if matches!(line.item, Item::Client(_)) {
                break;
            }
            st.gone |= matches!(line.item, Item::End);
            let due = at + Duration::from_millis(line.ms.saturating_sub(from_ms));
            st.queue.push_back((due, st.next));
            st.next += 1;
        }
    }

    fn fail(&self, st: &mut State, error: ReplayError) -> Error {
        st.failed = Some(error.clone());
        self.arrived.notify(usize::MAX);
        Error::Replay(error)
    }
}

/// A recording's lines, checked.
fn parse(text: &str) -> Result<Vec<Line>, ReplayError> {
    let format = |line: usize, what: String| ReplayError::Format { line, what };
    if text.len() > MAX_RECORDING {
        return Err(format(
            0,
            format!("the recording is over the limit of {MAX_RECORDING} bytes"),
        ));
    }
    let mut rest = text;
    let mut offset = 0;
    let mut number = 0;
    let mut lines = Vec::new();
    while !rest.is_empty() {
        number += 1;
        let Some(end) = rest.find('\n') else {
            return Err(format(
                number,
                "cut short: no line end (a truncated recording?)".into(),
            ));
        };
        let line = &rest[..end];
        let start = offset;
        rest = &rest[end + 1..];
        offset += end + 1;
        if line.len() > MAX_LINE {
            return Err(format(
                number,
                format!("{} bytes, over the limit of {MAX_LINE}", line.len()),
            ));
        }
        if number == 1 {
            header(line).map_err(|what| format(1, what))?;
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.splitn(3, ' ');
        let (kind, ms, payload) = match (fields.next(), fields.next(), fields.next()) {
            (Some(kind), Some(ms), Some(payload)) => (kind, ms, payload),
            _ => return Err(format(number, "not KIND MS PAYLOAD".into())),
        };
        let ms: u64 = ms
            .parse()
            .map_err(|_| format(number, format!("{ms:?} is no time in milliseconds")))?;
        let payload_at = start + line.len() - payload.len();
        let range = payload_at..payload_at + payload.len();
        let item = match kind {
            ">" => {
                if serde_json::from_str::<&serde_json::value::RawValue>(payload).is_err() {
                    return Err(format(number, "a client message that is not JSON".into()));
                }
                Item::Client(range)
            }
            "<" => {
                if !verbatim(payload.as_bytes()) {
                    return Err(format(
                        number,
                        "a server line that is not one JSON value (other bytes are written as <~)"
                            .into(),
                    ));
                }
                Item::Line(range)
            }
            "<~" => Item::Bytes(
                unescape(payload).ok_or_else(|| format(number, "a bad escape in <~".into()))?,
            ),
            "=" => {
                if !matches!(serde_json::from_str::<Value>(payload), Ok(Value::Object(_))) {
                    return Err(format(number, "a fact that is not a JSON object".into()));
                }
                continue;
            }
            "." if payload == "end" => Item::End,
            other => {
                let other = shown(other.as_bytes());
                return Err(format(number, format!("unknown kind {other:?}")));
            }
        };
        lines.push(Line { number, ms, item });
    }
    if number == 0 {
        return Err(format(1, "empty: no header".into()));
    }
    Ok(lines)
}

/// The transport the header names: HTTP for `"http"`, else a stream (stdio).
fn recorded_kind(text: &str) -> mcp_proto::TransportKind {
    let fields = text
        .lines()
        .next()
        .and_then(|l| l.splitn(3, ' ').nth(2))
        .and_then(|f| serde_json::from_str::<Value>(f).ok());
    match fields.as_ref().and_then(|f| f.get("transport")?.as_str()) {
        Some("http") => mcp_proto::TransportKind::Http,
        _ => mcp_proto::TransportKind::Stream,
    }
}

/// Checks the header line: `mcplog 1 {...}`.
fn header(line: &str) -> Result<(), String> {
    let mut fields = line.splitn(3, ' ');
    if fields.next() != Some(MAGIC) {
        return Err(format!("not a recording: the header starts with {MAGIC:?}"));
    }
    let version = fields.next().unwrap_or_default();
    match version.parse::<u32>() {
        Ok(VERSION) => {}
        Ok(v) => {
            return Err(format!(
                "format version {v}, and this crate reads version {VERSION}"
            ))
        }
        Err(_) => {
            return Err(format!(
                "{:?} is no format version",
                shown(version.as_bytes())
            ))
        }
    }
    match serde_json::from_str::<Value>(fields.next().unwrap_or_default()) {
        Ok(Value::Object(_)) => Ok(()),
        _ => Err("the header's fields are not a JSON object".into()),
    }
}

impl Transport for ReplayTransport {
    fn kind(&self) -> mcp_proto::TransportKind {
        self.kind
    }
    fn send(&self, message: Transmit) -> Result<(), Error> {
        let mut st = self.lock();
        if let Some(failed) = &st.failed {
            return Err(Error::Replay(failed.clone()));
        }
        if st.closed {
            return Err(Error::Closed);
        }
        let Some(line) = self.lines.get(st.next) else {
            if st.gone {
                // The server has exited: a pipe to it would take this (or break), and the
                // client learns of the end from what it reads.
                return Ok(());
            }
            let error = ReplayError::Ended {
                line: self.last_client_line,
                sent: shown(&message.payload),
            };
            return Err(self.fail(&mut st, error));
        };
        let Item::Client(range) = &line.item else {
            unreachable!("release stops at a client line or at the end");
        };
        let recorded = &self.text.as_bytes()[range.clone()];
        if !same_message(recorded, &message.payload) {
            let error = ReplayError::Mismatch {
                line: line.number,
                expected: shown(recorded),
                sent: shown(&message.payload),
            };
            return Err(self.fail(&mut st, error));
        }
        st.anchor = (Instant::now(), line.ms);
        st.next += 1;
        let before = st.queue.len();
        self.release(&mut st);
        if st.queue.len() > before {
            self.arrived.notify(usize::MAX);
        }
        Ok(())
    }

    fn try_recv(&self) -> Option<Inbound> {
        let mut st = self.lock();
        if let Some(failed) = &st.failed {
            return Some(Inbound::Closed(Some(Error::Replay(failed.clone()))));
        }
        if st.closed {
            return Some(Inbound::Closed(None));
        }
        let &(due, index) = st.queue.front()?;
        if self.timed && due > Instant::now() {
            return None;
        }
        st.queue.pop_front();
        let inbound = match &self.lines[index].item {
            Item::Line(range) => {
                let mut bytes = Vec::with_capacity(range.len() + 1);
                bytes.extend_from_slice(&self.text.as_bytes()[range.clone()]);
                bytes.push(b'\n');
                Inbound::Bytes(bytes.into())
            }
            Item::Bytes(bytes) => Inbound::Bytes(bytes.clone().into()),
            Item::End => {
                st.closed = true;
                // As the stdio transport says of a server that closed its output; why it
                // ended is not recorded.
                Inbound::Closed(Some(Error::ServerExited {
                    status: None,
                    stderr: String::new(),
                }))
            }
            Item::Client(_) => unreachable!("client lines are never queued"),
        };
        Some(inbound)
    }

    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let listener = self.arrived.listen();
            let due = {
                let st = self.lock();
                if st.failed.is_some() || st.closed {
                    return;
                }
                match st.queue.front() {
                    Some(&(due, _)) if !self.timed || due <= Instant::now() => return,
                    Some(&(due, _)) => Some(due),
                    None => None,
                }
            };
            match due {
                Some(due) => {
                    smol::future::or(listener, async {
                        smol::Timer::at(due).await;
                    })
                    .await
                }
                None => listener.await,
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        self.lock().closed = true;
        self.arrived.notify(usize::MAX);
        Box::pin(async { Ok(()) })
    }
}
