//! Invariant checks shared by the fuzz targets (`fuzz/fuzz_targets/*.rs`) and the seed replay tests
//! (`tests/fuzz_seeds.rs`). Both include this file with `#[path = ...] mod checks;`, so a seed and a
//! fuzz input are checked by exactly the same code. Every check panics on a violation.
//!
//! Input layouts (a fixed header, then the body that is fed to the code under test):
//! - framer: `[limit_lo, limit_hi, c0, c1, c2, c3, body..]`: limit = 64 + u16 % 4033 (64..=4096);
//!   chunk lengths cycle through `chunk_len(c0..c3)`.
//! - session: `[flags, c0, c1, c2, c3, t0, t1, t2, t3, body..]`: see [`flags`]; chunk lengths as
//!   above; before chunk `i` time advances by `advance(t[i % 4])`, and `handle_timeout` runs after
//!   that chunk when the byte's top bit is set. The legacy era, forced.
//! - eras: `[era, flags, c0, .., t3, body..]`: the session layout after one byte that sets the era
//!   and its settings (see [`Setup::from_byte`]): the probe, the modern era, HTTP headers.
//! - text: no header; the whole input is the text to repair ([`check_text`]).
//! - skills: no header; the whole input is a `SKILL.md`, and its first line a file reference
//!   ([`check_skills`]).
//! - sse: no header; the whole input is the SSE stream, whose first bytes also choose the memory
//!   limit and the chunk sizes, so that seeds stay plain SSE streams ([`check_sse`]).
//!
//! A missing header byte reads as 0.
#![allow(dead_code)]

use mcp_proto::framing::{Frame, LineFramer};
use mcp_proto::{Config, Event, RequestId, Session, State, Transmit, TransmitKind};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Length of the framer input header.
pub const FRAMER_HEADER: usize = 6;
/// Length of the session input header.
pub const SESSION_HEADER: usize = 9;
/// Length of the eras input header: the era byte, then the session header.
pub const ERAS_HEADER: usize = 10;
/// The session's frame limit in the session checks.
pub const SESSION_FRAME_LIMIT: usize = 4096;

/// Bits of the session header's first byte.
pub mod flags {
    /// Feed a valid `initialize` result (id 0) before the body.
    pub const INIT: u8 = 1 << 0;
    /// Issue `tools/list` (the first request after initialize: id 1).
    pub const LIST_TOOLS: u8 = 1 << 1;
    /// Issue `tools/call echo` with the default timeout (60 s).
    pub const CALL: u8 = 1 << 2;
    /// Issue `tools/call slow` with a 1 s timeout.
    pub const CALL_SHORT: u8 = 1 << 3;
    /// End with `handle_eof`.
    pub const EOF: u8 = 1 << 4;
    /// Cancel the first issued request (after the first chunk in the timed run; before the body in
    /// the chunk-invariance run).
    pub const CANCEL: u8 = 1 << 5;
    /// Timed run only: issue the commands when `Event::Ready` shows up mid-stream.
    pub const ON_READY: u8 = 1 << 6;
    /// Timed run only: after the second chunk the transport fails to deliver the last issued
    /// request (`handle_undeliverable`; `initialize` when it is the only one).
    pub const UNDELIVERABLE: u8 = 1 << 7;
}

/// A valid `server/discover` answer to request 0 (a modern server).
pub const DISCOVER_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fuzz","version":"0"}}}}"#;

/// How a session under test is set up: its settings, and the answer that opens it (`INIT`).
#[derive(Debug, Clone)]
pub struct Setup {
    /// The session's settings.
    pub config: Config,
    /// The answer to request 0 that makes it ready.
    pub open: &'static str,
}

impl Setup {
    /// The legacy era, forced (the `session` target).
    pub fn legacy() -> Setup {
        Setup {
            config: Config {
                frame_limit: SESSION_FRAME_LIMIT,
                era: mcp_proto::EraChoice::Legacy,
                ..Config::default()
            },
            open: INIT_RESULT,
        }
    }

    /// The `eras` target's first byte: bits 0-1 the era choice (auto, legacy, modern,
    /// legacy-first), bit 2 HTTP (headers, aborts), bits 3-4 the probe timeout (100 ms, 1 s, 2 s,
    /// 30 s), bit 5 a cap of 2 input rounds (else 10).
    pub fn from_byte(b: u8) -> Setup {
        use mcp_proto::EraChoice;
        let era = [
            EraChoice::Auto,
            EraChoice::Legacy,
            EraChoice::Modern,
            EraChoice::LegacyFirst,
        ][usize::from(b & 3)];
        let probe = [100, 1000, 2000, 30_000][usize::from((b >> 3) & 3)];
        Setup {
            config: Config {
                frame_limit: SESSION_FRAME_LIMIT,
                era,
                transport: if b & 4 != 0 {
                    mcp_proto::TransportKind::Http
                } else {
                    mcp_proto::TransportKind::Stream
                },
                probe_timeout: Duration::from_millis(probe),
                max_input_rounds: if b & 32 != 0 { 2 } else { 10 },
                ..Config::default()
            },
            open: match era {
                EraChoice::Auto | EraChoice::Modern => DISCOVER_RESULT,
                _ => INIT_RESULT,
            },
        }
    }
}

/// A valid `initialize` answer to request 0.
pub const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fuzz","version":"0"}}}"#;

/// Splits off a fixed-size header (missing bytes read as 0) from the body.
pub fn header<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let mut h = [0u8; N];
    let n = data.len().min(N);
    h[..n].copy_from_slice(&data[..n]);
    (h, &data[n..])
}

/// One chunk length from a spec byte: 0..=7, 1..=64, 1..=1072 or 1..=16192 by the top two bits.
pub fn chunk_len(b: u8) -> usize {
    let v = (b & 0x3f) as usize;
    match b >> 6 {
        0 => v % 8,
        1 => 1 + v,
        2 => 1 + v * 17,
        _ => 1 + v * 257,
    }
}

/// Splits `body` into chunks whose lengths cycle through `spec` (empty chunks included).
pub fn chunks<'a>(body: &'a [u8], spec: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    let mut i = 0;
    let mut zeros = 0;
    while !rest.is_empty() {
        let mut n = if spec.is_empty() {
            rest.len()
        } else {
            chunk_len(spec[i % spec.len()])
        };
        i += 1;
        if n == 0 {
            zeros += 1;
            if zeros > spec.len() {
                // An all-zero spec: take the rest at once.
                n = rest.len();
            }
        } else {
            zeros = 0;
        }
        let (a, b) = rest.split_at(n.min(rest.len()));
        out.push(a);
        rest = b;
    }
    out
}

/// How far time moves before a chunk: up to ~34 minutes, small values in milliseconds.
pub fn advance(b: u8) -> Duration {
    Duration::from_millis(u64::from(b & 0x7f).pow(3))
}

// ---- framer ------------------------------------------------------------------------------------

/// An owned copy of a [`Frame`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedFrame {
    /// A line.
    Line(Vec<u8>),
    /// An oversized line.
    Oversized {
        /// Its length.
        len: u64,
        /// Its id hint.
        id_hint: Option<String>,
    },
}

impl From<Frame<'_>> for OwnedFrame {
    fn from(f: Frame<'_>) -> Self {
        match f {
            Frame::Line(l) => OwnedFrame::Line(l.to_vec()),
            Frame::Oversized { len, id_hint } => OwnedFrame::Oversized { len, id_hint },
        }
    }
}

/// What the framer must yield, ignoring `id_hint`: split on `\n`, one leading BOM dropped, one
/// trailing `\r` per line dropped, blank lines skipped, lines over `limit` reported by length.
pub fn framer_model(body: &[u8], limit: usize) -> Vec<OwnedFrame> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    body.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(|l| {
            if l.len() <= limit {
                OwnedFrame::Line(l.to_vec())
            } else {
                OwnedFrame::Oversized {
                    len: l.len() as u64,
                    id_hint: None,
                }
            }
        })
        .collect()
}

fn without_hints(frames: &[OwnedFrame]) -> Vec<OwnedFrame> {
    frames
        .iter()
        .map(|f| match f {
            OwnedFrame::Oversized { len, .. } => OwnedFrame::Oversized {
                len: *len,
                id_hint: None,
            },
            line => line.clone(),
        })
        .collect()
}

fn check_frame(f: &OwnedFrame, limit: usize) {
    match f {
        OwnedFrame::Line(l) => {
            assert!(!l.is_empty(), "a Line is never empty");
            assert!(
                l.len() <= limit,
                "a Line of {} bytes over limit {limit}",
                l.len()
            );
            assert!(!l.contains(&b'\n'), "a Line contains a newline");
        }
        OwnedFrame::Oversized { len, id_hint } => {
            assert!(
                *len > limit as u64,
                "Oversized len {len} is not over limit {limit}"
            );
            if let Some(id) = id_hint {
                serde_json::from_str::<Value>(id).expect("an id_hint is valid JSON");
            }
        }
    }
}

/// Feeds `body` to a framer in `chunks` and returns the frames before and after `finish`, checking
/// the buffer bound after every call.
pub fn run_framer(limit: usize, chunks: &[&[u8]]) -> (Vec<OwnedFrame>, Vec<OwnedFrame>) {
    let mut f = LineFramer::new(limit);
    assert_eq!(f.limit(), limit);
    let mut out = Vec::new();
    for c in chunks {
        f.feed(c, |fr| out.push(OwnedFrame::from(fr)));
        assert!(
            f.buffered_len() <= f.limit(),
            "buffered {} > limit {}",
            f.buffered_len(),
            f.limit()
        );
    }
    let before_finish = out.clone();
    f.finish(|fr| out.push(OwnedFrame::from(fr)));
    assert_eq!(f.buffered_len(), 0, "finish leaves nothing buffered");
    assert!(!f.is_discarding(), "finish ends discarding");
    (before_finish, out)
}

/// The framer target: bounded buffer, chunk invariance (before and after `finish`), and agreement
/// with [`framer_model`].
pub fn check_framer(data: &[u8]) {
    let (h, body) = header::<FRAMER_HEADER>(data);
    let limit = 64 + usize::from(u16::from_le_bytes([h[0], h[1]])) % 4033;
    let (whole_before, whole) = run_framer(limit, &[body]);
    let split = chunks(body, &h[2..6]);
    let (chunked_before, chunked) = run_framer(limit, &split);
    for f in &whole {
        check_frame(f, limit);
    }
    assert_eq!(
        chunked_before,
        whole_before,
        "frames before finish depend on chunking (limit {limit}, chunk lengths {:?})",
        split.iter().map(|c| c.len()).collect::<Vec<_>>()
    );
    assert_eq!(
        chunked,
        whole,
        "frames depend on chunking (limit {limit}, chunk lengths {:?})",
        split.iter().map(|c| c.len()).collect::<Vec<_>>()
    );
    assert_eq!(
        without_hints(&whole),
        framer_model(body, limit),
        "frames differ from the model (limit {limit})"
    );
}

// ---- session -----------------------------------------------------------------------------------

/// Tracks what a session said and checks it as it is drained.
pub struct Checker {
    /// Ids returned by commands (initialize included).
    pub issued: BTreeSet<RequestId>,
    /// The initialize request's id.
    pub init_id: Option<RequestId>,
    /// Requests the session sent on its own for the opening (a fallback `initialize`, a
    /// `server/discover` retried after -32022): they end in Ready/Failed, never a response.
    pub opening: BTreeSet<RequestId>,
    /// Ids that got their `Event::Response`.
    pub answered: BTreeSet<RequestId>,
    /// The method each request went out with.
    pub methods: std::collections::BTreeMap<RequestId, String>,
    /// Whether a refused probe falls back to the legacy era (every era choice but `Modern`).
    pub may_fall_back: bool,
    /// Set once `Event::Closed` or `Event::Failed` was drained.
    pub ended: bool,
    ready: bool,
    /// Everything drained, in order.
    pub transmits: Vec<Transmit>,
    /// Everything drained, in order.
    pub events: Vec<Event>,
}

impl Checker {
    fn new() -> Self {
        Checker {
            issued: BTreeSet::new(),
            init_id: None,
            opening: BTreeSet::new(),
            answered: BTreeSet::new(),
            methods: std::collections::BTreeMap::new(),
            may_fall_back: true,
            ended: false,
            ready: false,
            transmits: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Drains the session's outputs, checks them, and returns how many events came out.
    pub fn drain(&mut self, s: &mut Session) -> usize {
        assert!(
            s.buffered_len() <= SESSION_FRAME_LIMIT,
            "buffered {} > frame limit",
            s.buffered_len()
        );
        let ended_before = self.ended;
        while let Some(t) = s.poll_transmit() {
            assert!(!ended_before, "a transmit after the session ended: {t:?}");
            if let TransmitKind::Abort { id } = &t.kind {
                assert!(t.payload.is_empty(), "an abort carries nothing");
                assert!(self.issued.contains(id), "an abort of {id}, never issued");
                self.transmits.push(t);
                continue;
            }
            assert!(!t.payload.contains(&b'\n'), "a payload contains a newline");
            let v: Value = serde_json::from_slice(&t.payload).expect("every payload is JSON");
            assert_eq!(v["jsonrpc"], "2.0");
            if t.modern && v.get("id").is_some() && v.get("method").is_some() {
                assert!(
                    v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string(),
                    "a modern request without its _meta: {v}"
                );
            }
            if !t.headers.is_empty() {
                assert!(t.modern, "headers only in the modern era");
                for (name, value) in &t.headers {
                    assert!(
                        mcp_proto::http::is_header_name(name),
                        "header name {name:?}"
                    );
                    assert!(
                        mcp_proto::http::is_header_value(value),
                        "header {name}: {value:?}"
                    );
                }
            }
            match &t.kind {
                TransmitKind::Request { id, wire, method } => {
                    if !self.issued.contains(id) {
                        assert!(
                            method == "initialize" || method == "server/discover",
                            "a request {id} ({method}) no command issued"
                        );
                        self.opening.insert(*id);
                    }
                    assert_eq!(v["id"], json!(wire.0));
                    assert_eq!(v["method"], json!(method));
                    self.methods.insert(*id, method.to_string());
                }
                TransmitKind::Notification { method } => {
                    assert_eq!(v["method"], json!(method));
                    assert!(v.get("id").is_none(), "a notification with an id");
                }
                TransmitKind::Response => {
                    assert!(v.get("id").is_some(), "a response without an id");
                    assert!(
                        v.get("result").is_some() != v.get("error").is_some(),
                        "a response needs exactly one of result and error"
                    );
                }
                _ => {}
            }
            self.transmits.push(t);
        }
        let mut n = 0;
        while let Some(e) = s.poll_event() {
            n += 1;
            match &e {
                Event::Response { id, .. } => {
                    assert!(!ended_before, "a response after the session ended: {e:?}");
                    assert!(self.issued.contains(id), "a response for unissued id {id}");
                    assert_ne!(Some(*id), self.init_id, "initialize ends in Ready/Failed");
                    assert!(
                        !self.opening.contains(id),
                        "the opening ends in Ready/Failed"
                    );
                    assert!(self.answered.insert(*id), "a second response for id {id}");
                }
                Event::Ready => {
                    assert!(!self.ready, "Ready twice");
                    assert!(!self.ended, "Ready after the end");
                    self.ready = true;
                }
                Event::Closed | Event::Failed(_) => {
                    assert!(!self.ended, "the session ended twice: {e:?}");
                    self.ended = true;
                }
                _ => {}
            }
            self.events.push(e);
        }
        n
    }

    fn issue(&mut self, id: Result<RequestId, mcp_proto::UsageError>) {
        if let Ok(id) = id {
            assert!(self.issued.insert(id), "id {id} reused");
        }
    }

    /// After `handle_eof`: closed, nothing pending, every request answered exactly once.
    fn check_after_eof(&mut self, s: &mut Session) {
        self.drain(s);
        assert_eq!(s.state(), State::Closed);
        assert_eq!(s.pending_requests(), 0);
        assert!(self.ended, "no Closed/Failed after EOF");
        for id in &self.issued {
            if Some(*id) != self.init_id {
                assert!(
                    self.answered.contains(id),
                    "request {id} never got its response"
                );
            }
        }
    }
}

fn new_session(setup: &Setup, flags: u8, now: Instant, c: &mut Checker) -> Session {
    c.may_fall_back = setup.config.era != mcp_proto::EraChoice::Modern;
    let mut s = Session::new(setup.config.clone());
    let id = s.initialize(now).expect("initialize on a new session");
    c.init_id = Some(id);
    c.issue(Ok(id));
    c.drain(&mut s);
    if flags & self::flags::INIT != 0 {
        s.handle_bytes(format!("{}\n", setup.open).as_bytes(), now);
        c.drain(&mut s);
        assert!(s.is_ready());
    }
    s
}

fn commands(s: &mut Session, flags: u8, now: Instant, c: &mut Checker) {
    if flags & self::flags::LIST_TOOLS != 0 {
        c.issue(s.list_tools(None, now));
    }
    if flags & self::flags::CALL != 0 {
        c.issue(s.call_tool("echo", json!({"message": "hi"}), now));
    }
    if flags & self::flags::CALL_SHORT != 0 {
        let r = mcp_proto::Request::call_tool("slow", Value::Null).timeout(Duration::from_secs(1));
        c.issue(s.send(r, now));
    }
    c.drain(s);
}

/// The transport could not deliver the last issued request: the session names it (when still
/// pending) as the one the driver reports, and it gets no event of its own.
fn undeliverable_last(s: &mut Session, c: &mut Checker, now: Instant) {
    let Some(id) = c.issued.iter().copied().next_back() else {
        return;
    };
    let pending = s.is_pending(id);
    let opening_request = Some(id) == c.init_id || c.opening.contains(&id);
    let opening = opening_request && s.state() == State::Initializing;
    let probe = c.methods.get(&id).map(String::as_str) == Some("server/discover");
    let hit = s.handle_undeliverable(id, now);
    if opening && probe && c.may_fall_back && pending {
        // A lost or refused probe is the legacy era's answer: initialize follows, nobody is hit.
        assert_eq!(
            hit,
            mcp_proto::Casualties::default(),
            "a lost probe hits nobody"
        );
        assert_ne!(
            s.state(),
            State::Closed,
            "a lost probe does not end the session"
        );
    } else {
        assert_eq!(
            hit.request,
            pending.then_some(id),
            "the casualty is the request"
        );
        if !opening || !pending {
            assert!(!hit.session, "only a handshake ends the session");
        }
        // A handshake request ends the session, unless the racing probe may still settle it.
        assert_eq!(
            hit.session,
            s.state() == State::Closed && opening && pending
        );
    }
    assert!(!s.is_pending(id));
    if hit.request.is_some() {
        // The driver answers it with the transport's error; a Response event for it would now
        // trip the checker's "second response" check.
        c.answered.insert(id);
    }
    c.drain(s);
}

fn cancel_first(s: &mut Session, c: &mut Checker, now: Instant) {
    let first = c.issued.iter().copied().find(|id| Some(*id) != c.init_id);
    if let Some(id) = first {
        let pending = s.is_pending(id);
        assert_eq!(s.cancel(id, "fuzz", now).is_ok(), pending);
        c.drain(s);
    }
}

/// The timed session run: chunks, advancing time, timeouts, a cancel, commands on Ready, EOF.
pub fn check_session_timed(data: &[u8]) {
    let (h, body) = header::<SESSION_HEADER>(data);
    session_timed(&Setup::legacy(), h, body)
}

fn session_timed(setup: &Setup, h: [u8; SESSION_HEADER], body: &[u8]) {
    let fl = h[0];
    let start = Instant::now();
    let mut now = start;
    let mut c = Checker::new();
    let mut s = new_session(setup, fl, now, &mut c);
    commands(&mut s, fl, now, &mut c);
    let mut commanded = s.is_ready();
    for (i, chunk) in chunks(body, &h[1..5]).into_iter().enumerate() {
        let t = h[5 + i % 4];
        now += advance(t);
        s.handle_bytes(chunk, now);
        c.drain(&mut s);
        if t & 0x80 != 0 {
            let due = s.poll_timeout().is_some_and(|d| d <= now);
            s.handle_timeout(now);
            c.drain(&mut s);
            if due {
                assert!(
                    s.poll_timeout().is_none_or(|d| d > now),
                    "a due deadline survived"
                );
            }
        }
        if !commanded && s.is_ready() && fl & flags::ON_READY != 0 {
            commanded = true;
            commands(&mut s, fl, now, &mut c);
        }
        if i == 0 && fl & flags::CANCEL != 0 {
            cancel_first(&mut s, &mut c, now);
        }
        if i == 1 && fl & flags::UNDELIVERABLE != 0 {
            undeliverable_last(&mut s, &mut c, now);
        }
    }
    s.handle_timeout(now);
    c.drain(&mut s);
    assert!(
        s.poll_timeout().is_none_or(|d| d > now),
        "a due deadline survived"
    );
    if fl & flags::EOF != 0 {
        s.handle_eof(now);
        c.check_after_eof(&mut s);
    }
}

/// The untimed run: the body fed in chunks and whole must give the same transmits, events, stats
/// and state, before and after EOF.
pub fn check_session_chunking(data: &[u8]) {
    let (h, body) = header::<SESSION_HEADER>(data);
    session_chunking(&Setup::legacy(), h, body)
}

fn session_chunking(setup: &Setup, h: [u8; SESSION_HEADER], body: &[u8]) {
    let fl = h[0];
    let now = Instant::now();
    let run = |split: &[&[u8]]| {
        let mut c = Checker::new();
        let mut s = new_session(setup, fl, now, &mut c);
        commands(&mut s, fl, now, &mut c);
        if fl & flags::CANCEL != 0 {
            cancel_first(&mut s, &mut c, now);
        }
        for chunk in split {
            s.handle_bytes(chunk, now);
            c.drain(&mut s);
        }
        let mid = (
            c.transmits.len(),
            c.events.len(),
            s.stats(),
            s.state(),
            s.pending_requests(),
            s.buffered_len(),
        );
        if fl & flags::EOF != 0 {
            s.handle_eof(now);
            c.check_after_eof(&mut s);
        }
        (c, mid, s.stats())
    };
    let (whole, whole_mid, whole_stats) = run(&[body]);
    let split = chunks(body, &h[1..5]);
    let (chunked, chunked_mid, chunked_stats) = run(&split);
    let lens: Vec<usize> = split.iter().map(|c| c.len()).collect();
    assert_eq!(chunked_mid, whole_mid, "state depends on chunking {lens:?}");
    assert_eq!(
        chunked.events, whole.events,
        "events depend on chunking {lens:?}"
    );
    assert_eq!(
        chunked.transmits, whole.transmits,
        "transmits depend on chunking {lens:?}"
    );
    assert_eq!(chunked_stats, whole_stats);
}

/// The session target: both runs.
pub fn check_session(data: &[u8]) {
    check_session_timed(data);
    check_session_chunking(data);
}

/// The eras target: both runs, in the era and settings the first byte names.
pub fn check_eras(data: &[u8]) {
    let (era, rest) = header::<1>(data);
    let setup = Setup::from_byte(era[0]);
    let (h, body) = header::<SESSION_HEADER>(rest);
    session_timed(&setup, h, body);
    session_chunking(&setup, h, body);
}

// ---- sse ---------------------------------------------------------------------------------------

/// Everything observable after decoding an SSE stream.
type SseOutcome = (
    Vec<mcp_proto::sse::SseItem>,
    Option<String>,
    Option<Duration>,
);

/// Decodes `chunks` with a decoder of memory limit `limit`, checking after every chunk that it
/// buffers at most `limit` bytes, and after the end that it buffers nothing.
fn sse_decode<'a>(limit: usize, chunks: impl IntoIterator<Item = &'a [u8]>) -> SseOutcome {
    let mut d = mcp_proto::sse::SseDecoder::with_limit(limit);
    let mut items = Vec::new();
    for chunk in chunks {
        d.feed(chunk);
        assert!(d.buffered_len() <= limit, "{} > {limit}", d.buffered_len());
        items.extend(std::iter::from_fn(|| d.poll_event()));
    }
    d.finish();
    assert_eq!(d.buffered_len(), 0);
    items.extend(std::iter::from_fn(|| d.poll_event()));
    (items, d.last_event_id().map(str::to_owned), d.retry())
}

/// The SSE target: the decoder never panics, never buffers past its limit, and gives the same
/// events, last event id and retry whether the stream comes whole, in the chunks the input
/// chooses, or byte by byte; with the default limit, a stream under a quarter of it never
/// overflows (decoded text is at most 3x the input: U+FFFD per invalid byte).
///
/// The first byte chooses the limit (odd: the default; even: `byte / 2`, tiny, to exercise
/// overflow); bytes 1..4 give a repeating cycle of chunk sizes 0..=31, 0 feeding an empty chunk,
/// then one byte.
pub fn check_sse(input: &[u8]) {
    use mcp_proto::sse::{SseItem, DEFAULT_LIMIT};
    let limit = match input.first() {
        Some(&b) if b % 2 == 0 => usize::from(b / 2),
        _ => DEFAULT_LIMIT,
    };
    let sizes: Vec<usize> = input
        .get(1..4)
        .unwrap_or_default()
        .iter()
        .map(|&b| usize::from(b % 32))
        .collect();
    let mut chunks = Vec::new();
    let mut rest = input;
    for &n in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        if n == 0 {
            chunks.push(&[][..]);
        }
        let (chunk, tail) = rest.split_at(n.clamp(1, rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    chunks.push(rest);

    let whole = sse_decode(limit, [input]);
    assert_eq!(
        sse_decode(limit, chunks),
        whole,
        "chunking changed the output"
    );
    assert_eq!(
        sse_decode(limit, input.chunks(1)),
        whole,
        "byte-by-byte changed the output"
    );
    if limit == DEFAULT_LIMIT && input.len() < DEFAULT_LIMIT / 4 {
        assert!(!whole.0.contains(&SseItem::Overflow));
    }
}

// ---- text --------------------------------------------------------------------------------------

/// The text target: what `mcp_proto::text::repair` gives is valid UTF-8 with nothing left to
/// mend, differs from the input only where it was bad, and leaves valid JSON text alone; and the
/// input put inside a JSON string (its quotes, backslashes and control bytes escaped, its `\uXXXX`
/// escapes kept) always parses once repaired.
pub fn check_text(data: &[u8]) {
    use mcp_proto::text::{mend_surrogates, repair};
    let repaired = repair(data);
    if serde_json::from_slice::<Value>(data).is_ok() {
        assert_eq!(repaired, None, "valid JSON text was changed");
    }
    match &repaired {
        None => {
            let text = std::str::from_utf8(data).expect("left alone, yet not UTF-8");
            assert_eq!(
                mend_surrogates(text),
                None,
                "left alone, yet a lone surrogate"
            );
        }
        Some((text, damage)) => {
            // A `String`: valid UTF-8 by construction. Nothing is left to mend.
            assert!(!damage.is_none(), "a repair that replaced nothing");
            assert_eq!(
                repair(text.as_bytes()),
                None,
                "a second repair changed more"
            );
            // Invalid UTF-8 is what `from_utf8_lossy` says; a lone escape keeps its length.
            let lossy = String::from_utf8_lossy(data);
            assert_eq!(
                damage.invalid_utf8 == 0,
                matches!(lossy, std::borrow::Cow::Borrowed(_)),
                "{damage:?}"
            );
            assert_eq!(text.len(), lossy.len(), "a mended escape changed length");
            let replacements = text.matches(char::REPLACEMENT_CHARACTER).count();
            assert!(replacements >= damage.invalid_utf8, "{damage:?}");
            assert!(text.matches("\\ufffd").count() >= damage.lone_surrogates);
        }
    }
    let doc = string_document(data);
    let text = match repair(&doc) {
        Some((text, _)) => text,
        None => String::from_utf8(doc).expect("left alone, so UTF-8"),
    };
    let parsed: Vec<String> = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("a repaired JSON string does not parse: {e}: {text:?}"));
    assert_eq!(parsed.len(), 1);
}

/// `data` as the one string of a JSON array: `"`, a backslash not starting a `\uXXXX` escape,
/// and control bytes are escaped; every other byte (invalid UTF-8 included) and every `\uXXXX`
/// escape (lone surrogates included) is kept as it is.
fn string_document(data: &[u8]) -> Vec<u8> {
    let mut out = b"[\"".to_vec();
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        let escape = b == b'\\'
            && data.get(i + 1) == Some(&b'u')
            && data
                .get(i + 2..i + 6)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        if escape {
            out.extend_from_slice(&data[i..i + 6]);
            i += 6;
            continue;
        }
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0..=0x1f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
        i += 1;
    }
    out.extend_from_slice(b"\"]");
    out
}

/// The separator of the oauth target's records.
pub const OAUTH_SEPARATOR: u8 = 0x1e;

/// The oauth target's header: one flags byte.
pub const OAUTH_HEADER: usize = 1;

/// The OAuth flow (`mcp_proto::oauth::Flow`) against answers from the input, and the document
/// parsers on each answer. Layout: `[flags, record (0x1E record)*]`. Flags: bit 0 a pre-registered
/// client with a secret; bit 1 the client credentials grant; bit 2 a client metadata document
/// URL; bit 3 the first record is the 401's `WWW-Authenticate`; bit 4 no `offline_access`; bit 5
/// no 2025-03-26 fallbacks; bit 6 the flow starts from an expired token with a refresh token;
/// bit 7 stored credentials are handed to `Load`. Each request of the flow takes the next record:
/// its first byte picks the status (or a transport failure), the rest is the body; the redirect
/// back takes one as its query (the first byte even: the request's `state` goes first). Past the
/// last record every answer is a 404.
///
/// Checks: the flow ends within 64 steps; every request can be sent (`HttpRequest::check`), is a
/// GET without credentials or body, or a POST, to an http(s) URL; the client secret and the PKCE
/// verifier go only in POSTs to HTTPS or loopback URLs; a code is exchanged only after a
/// redirect carrying the request's own `state`; credentials it ends with are for a resource of
/// the MCP server's origin; no error message or `Debug` output shows a secret. Returns how the
/// flow ended (`done: <access token>` or `failed: <error>`), for the seed tests.
pub fn check_oauth(data: &[u8]) -> String {
    use mcp_proto::http::Method;
    use mcp_proto::oauth::metadata::{
        error_answer, RegistrationResponse, ResourceMetadata, ServerMetadata, TokenResponse,
    };
    use mcp_proto::oauth::{
        parse_challenges, AuthMethod, AuthOptions, BearerChallenge, Client, ClientKind,
        Credentials, Flow, FlowStart, Grant, PreRegistered, Randomness, Reason, Secret, Step,
        Tokens,
    };
    use std::time::{Duration, UNIX_EPOCH};

    const MCP: &str = "https://mcp.example.com/mcp";
    const SECRET: &str = "FUZZ-CLIENT-SECRET";
    const REFRESH: &str = "FUZZ-REFRESH";
    let flags = data.first().copied().unwrap_or(0);
    let mut records = data
        .get(OAUTH_HEADER..)
        .unwrap_or_default()
        .split(|&b| b == OAUTH_SEPARATOR);
    // The parsers alone, on every record.
    for record in data.split(|&b| b == OAUTH_SEPARATOR) {
        let _ = ResourceMetadata::parse(record);
        let _ = ServerMetadata::parse(record);
        let _ = RegistrationResponse::parse(record);
        let _ = TokenResponse::parse(record);
        let _ = error_answer(record);
        let text = String::from_utf8_lossy(record);
        assert!(parse_challenges(&text).len() <= mcp_proto::oauth::MAX_CHALLENGE_PARTS);
        let _ = BearerChallenge::from_header(&text);
    }
    let now = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
    let mut options = AuthOptions::new("http://127.0.0.1:5555/callback");
    if flags & 1 != 0 {
        options.pre_registered = Some(PreRegistered {
            client_id: "fuzz-client".into(),
            client_secret: Some(Secret::new(SECRET)),
            private_key: None,
            auth_method: None,
            // Bound, as a secret must be (unbound, the flow stops before any request).
            issuer: Some("https://as.example.com".into()),
        });
    }
    if flags & 2 != 0 {
        options.grant = Grant::ClientCredentials;
    }
    if flags & 4 != 0 {
        options.client_metadata_url = Some("https://client.example.com/cimd.json".into());
    }
    options.offline_access = flags & 16 == 0;
    options.legacy_fallbacks = flags & 32 == 0;
    let challenge = if flags & 8 != 0 {
        records
            .next()
            .and_then(|r| BearerChallenge::from_header(&String::from_utf8_lossy(r)))
    } else {
        None
    };
    let stored = |access: &str, expires_at: Option<u64>| Credentials {
        issuer: "https://as.example.com".into(),
        resource: MCP.into(),
        token_endpoint: "https://as.example.com/token".into(),
        client: Client {
            client_id: "stored".into(),
            client_secret: Some(Secret::new(SECRET)),
            auth_method: AuthMethod::ClientSecretPost,
            kind: ClientKind::Registered,
            secret_expires_at: None,
        },
        tokens: Tokens {
            access_token: Secret::new(access),
            issued_at: 1_999_999_000,
            expires_at,
            refresh_token: Some(Secret::new(REFRESH)),
            scope: None,
            requested_scope: Some("a".into()),
            dpop_jkt: None,
        },
    };
    let (reason, previous) = if flags & 64 != 0 {
        (
            Reason::Expired,
            Some(stored("FUZZ-OLD-ACCESS", Some(1_999_999_999))),
        )
    } else {
        (Reason::Unauthorized, None)
    };
    let random = Randomness {
        verifier: [0x5a; 32],
        state: [0xa5; 16],
    };
    let verifier = mcp_proto::oauth::Pkce::from_random(random.verifier).verifier;
    let mut flow = Flow::new(
        FlowStart {
            resource_url: MCP.into(),
            challenge,
            reason,
            previous,
        },
        options,
        random,
        now,
    );
    let secure = |url: &str| {
        url.starts_with("https://")
            || [
                "http://127.0.0.1:",
                "http://127.0.0.1/",
                "http://localhost:",
                "http://localhost/",
                "http://[::1]:",
                "http://[::1]/",
            ]
            .iter()
            .any(|p| url.starts_with(p))
    };
    let mut state_returned = false;
    for _ in 0..64 {
        match flow.step().clone() {
            Step::Send(request) => {
                assert!(request.check().is_ok(), "{request:?}");
                // Nowhere a server may not send the client (MCP 2025-11-25, Security Best
                // Practices § Server-Side Request Forgery).
                assert_eq!(
                    mcp_proto::oauth::allowed_fetch(MCP, &request.url),
                    Ok(()),
                    "{}",
                    request.url
                );
                assert!(
                    request.url.starts_with("https://") || request.url.starts_with("http://"),
                    "{}",
                    request.url
                );
                let body = String::from_utf8_lossy(request.body.as_deref().unwrap_or_default())
                    .into_owned();
                let has_auth = request
                    .headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
                match request.method {
                    Method::Get => assert!(!has_auth && request.body.is_none(), "{request:?}"),
                    Method::Post => {}
                    Method::Delete => panic!("the flow deletes nothing"),
                }
                let carries_secret = body.contains(SECRET)
                    || body.contains(&verifier)
                    || body.contains(REFRESH)
                    || has_auth;
                if carries_secret {
                    assert!(secure(&request.url), "a secret to {}", request.url);
                    let in_input = |s: &str| data.windows(s.len()).any(|w| w == s.as_bytes());
                    assert!(in_input(SECRET) || !request.url.contains(SECRET));
                    assert!(in_input(&verifier) || !request.url.contains(&verifier));
                }
                if body.contains("grant_type=authorization_code") {
                    assert!(
                        state_returned,
                        "a code exchanged without the request's state"
                    );
                }
                let record = records.next();
                match record {
                    Some([first, rest @ ..]) if first % 8 == 7 => {
                        let _ = rest;
                        flow.on_failure("fuzzed failure", now);
                    }
                    Some([first, rest @ ..]) => {
                        let status = [200, 201, 400, 401, 404, 500, 302][(*first % 8) as usize];
                        flow.on_response(status, &[], rest, now);
                    }
                    _ => flow.on_response(404, &[], b"", now),
                }
            }
            Step::Load { .. } => {
                // Stored tokens that never expire.
                let s = (flags & 128 != 0).then(|| stored("FUZZ-STORED-ACCESS", None));
                flow.on_loaded(s, now);
            }
            Step::Authorize(request) => {
                assert!(request.url.starts_with("https://") || request.url.starts_with("http://"));
                // (Unless the input put it there: a challenge's scope echoing it.)
                let in_input = |s: &str| data.windows(s.len()).any(|w| w == s.as_bytes());
                assert!(in_input(SECRET) || !request.url.contains(SECRET));
                assert!(in_input(&verifier) || !request.url.contains(&verifier));
                let state = request
                    .url
                    .split(['?', '&'])
                    .find_map(|p| p.strip_prefix("state="))
                    .map(str::to_owned);
                let record = records.next().unwrap_or_default();
                let (lead, rest) = record.split_first().map_or((0, &[][..]), |(a, b)| (*a, b));
                let mut query = String::new();
                if lead % 2 == 0 {
                    if let Some(s) = &state {
                        query.push_str(&format!("state={s}&"));
                    }
                }
                query.push_str(&String::from_utf8_lossy(rest));
                // Whether the query's first `state` is the request's (what the flow must check).
                let first_state = query
                    .split('&')
                    .find_map(|p| p.strip_prefix("state="))
                    .map(str::to_owned);
                state_returned = first_state.is_some() && first_state == state;
                flow.on_redirect(&format!("{}?{query}", request.redirect_uri));
            }
            Step::Done(credentials) => {
                assert!(credentials.resource.starts_with("https://mcp.example.com"));
                let shown = format!("{credentials:?}");
                assert!(
                    !shown.contains(SECRET) && !shown.contains(REFRESH),
                    "{shown}"
                );
                return format!("done: {}", credentials.tokens.access_token.expose());
            }
            Step::Failed(error) => {
                let shown = format!("{error} {error:?}");
                for secret in [
                    SECRET,
                    REFRESH,
                    verifier.as_str(),
                    "FUZZ-STORED-ACCESS",
                    "FUZZ-OLD-ACCESS",
                ] {
                    // A secret the input itself carries (a server echoing it) is the server's
                    // text, not a leak.
                    let in_input = data.windows(secret.len()).any(|w| w == secret.as_bytes());
                    assert!(in_input || !shown.contains(secret), "{shown}");
                }
                return format!("failed: {error}");
            }
        }
    }
    panic!("the OAuth flow did not end in 64 steps");
}

/// `mcp_proto::skills`: a `SKILL.md` of any bytes never panics the frontmatter reader; when its
/// frontmatter reads, an entry made from it (the true digest and size) loads exactly when its
/// name and description are valid, and the same entry refuses the file with any byte changed;
/// the input as a file reference of a loaded skill never leaves the skill's directory.
pub fn check_skills(data: &[u8]) {
    use mcp_proto::skills::{digest, frontmatter, valid_name, LoadedSkill, Skill, SkillFiles};
    use mcp_proto::SkillResource;
    let text = String::from_utf8_lossy(data);
    let reference = text.lines().next().unwrap_or("");
    let Ok(found) = frontmatter(&text) else {
        return;
    };
    let name = found
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| valid_name(n))
        .unwrap_or("x")
        .to_owned();
    let uri = format!("skill://{name}/SKILL.md");
    let entry = |bytes: &[u8]| Skill {
        uri: uri.clone(),
        frontmatter: found.clone(),
        resources: SkillFiles::Listed(vec![
            SkillResource {
                uri: uri.clone(),
                digest: digest(bytes),
                size: bytes.len() as u64,
            },
            SkillResource {
                uri: format!("skill://{name}/references/a.md"),
                digest: digest(b""),
                size: 0,
            },
        ]),
    };
    let bytes = text.as_bytes();
    let valid = found.get("name").and_then(Value::as_str) == Some(name.as_str())
        && matches!(found.get("description"), Some(Value::String(d)) if !d.is_empty());
    let loaded = LoadedSkill::new(entry(bytes), bytes.to_vec());
    assert_eq!(loaded.is_ok(), valid, "{loaded:?}");
    if let Some(last) = bytes.len().checked_sub(1) {
        let mut changed = bytes.to_vec();
        changed[last] ^= 1;
        assert!(
            LoadedSkill::new(entry(bytes), changed).is_err(),
            "a changed byte loaded"
        );
    }
    if let Ok(loaded) = loaded {
        let root = format!("skill://{name}/");
        if let Ok(uri) = loaded.entry.file_uri(reference) {
            let rest = uri.strip_prefix(&root).expect("inside the skill's root");
            assert!(
                rest.split('/')
                    .all(|s| !s.is_empty() && s != "." && s != ".."),
                "{uri}"
            );
        }
    }
}
