//! Transcript tests: one runner for every `tests/transcripts/*.transcript` file.
//!
//! A transcript is a conversation with a server, as data: client commands, the frames the client
//! must send, the server's bytes, the events the session must report, clock steps. The runner
//! replays each file into a fresh `Session` (fake time, no I/O) whole, one byte at a time, split at
//! every offset of every run of server bytes, and with CRLF line ends (whole and with every CRLF
//! split between two reads). Every replay must give identical frames and events, and the whole one
//! must match the file's expectations exactly: an output the file does not list fails it too.
//!
//! The format in brief (the reference is tests/transcripts/README.md); one directive a line, `#`
//! starts a comment line:
//!
//! ```text
//! config default_timeout 5s          settings, before the first step (also: frame_limit N)
//! initialize                         client commands: initialize, list_tools ["CURSOR"],
//! call_tool echo {"message":"hi"}      call_tool NAME JSON, send METHOD [JSON], cancel ID ["WHY"],
//!                                      close; requests take `timeout DUR` or `no_timeout`
//! -> {"jsonrpc":"2.0","id":1,...}    the next frame the client sends (JSON; "<any>" matches anything)
//! <- {"jsonrpc":"2.0","id":1,...}    a server line: the text verbatim, then "\n"
//! <-x Banner\r\n\xff                 server bytes with escapes, nothing appended
//! <-file everything-stdio.out 2-7    lines of a recording, byte for byte
//! => response 1 ok                   the next event: ready, tools_list_changed, closed,
//!      text = "Echo: hi"               failed [KIND], warning KIND ["TEXT"], response ID ok (with
//!                                      indented checks) | error CODE | timeout [DUR] | cancelled
//!                                      ["WHY"] | closed | too_large | invalid_result
//! advance 500ms                      the fake clock; `timeout` calls handle_timeout, `eof` handle_eof
//! poll_timeout 60s                   checks: poll_timeout DUR|none (from the start), stats NAME N
//! ```
//!
//! A transcript's expectations belong to the step before them (a command, a clock step, or a run of
//! server lines with the expectations among them); each step's frames and events are checked in
//! order and in number.

use mcp_proto::{
    bridge, CallToolResult, Config, ContentBlock, Event, Reply, Request, RequestError, RequestId,
    Session, SessionError, Stats, UsageError, Warning,
};
mod common;

use common::{json_matches, unescape, warning_kind};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn transcripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts")
}

// ---- the format, parsed ------------------------------------------------------------------------

struct Transcript {
    name: String,
    config: Config,
    steps: Vec<Step>,
    /// The server bytes of each run of server lines, in order.
    segments: Vec<Vec<u8>>,
}

impl Transcript {
    fn server_bytes(&self) -> Vec<u8> {
        self.segments.concat()
    }
}

/// One input or check, and what it must produce.
struct Step {
    line: usize,
    action: Action,
    sent: Vec<Expected<Value>>,
    events: Vec<Expected<Expect>>,
}

/// An expectation and where it is written.
struct Expected<T> {
    line: usize,
    text: String,
    what: T,
}

enum Action {
    Initialize,
    Send(Request),
    Cancel(RequestId, String),
    Close,
    /// A run of server lines; its bytes are `Transcript::segments[n]`.
    Server,
    Advance(Duration),
    Timeout,
    Eof,
    PollTimeout(Option<Duration>),
    Stats(&'static str, u64),
}

enum Expect {
    Ready,
    Failed(Option<String>),
    ToolsListChanged,
    /// A log message of this level, saying this (in its data, as JSON text).
    Log(String, Option<String>),
    Closed,
    Warning(String, Option<String>),
    Response(u64, Outcome),
}

enum Outcome {
    Ok(Vec<Expected<Check>>),
    Rpc(i64, Option<String>),
    Timeout(Option<Duration>),
    Cancelled(Option<String>),
    Closed,
    TooLarge,
    InvalidResult,
}

enum Check {
    Text(StrOp, String),
    Content(usize, String, Option<String>),
    ContentCount(usize),
    IsError(bool),
    StructuredHas(String),
    StructuredEq(Value),
    ToolsInclude(Vec<String>),
    ToolsCount(usize),
    ToolsVerbatim,
    ToolSchemaContains(String, String),
    NextCursor(Option<String>),
    Raw(Value),
}

#[derive(Clone, Copy)]
enum StrOp {
    Eq,
    StartsWith,
    Contains,
    Lacks,
}

const STATS: [&str; 8] = [
    "notifications_dropped",
    "pings_answered",
    "requests_rejected",
    "late_responses",
    "messages_ignored",
    "input_rounds",
    "version_retries",
    "tools_rejected",
];

fn stat(s: &Stats, name: &str) -> u64 {
    match name {
        "notifications_dropped" => s.notifications_dropped,
        "pings_answered" => s.pings_answered,
        "requests_rejected" => s.requests_rejected,
        "late_responses" => s.late_responses,
        "messages_ignored" => s.messages_ignored,
        "input_rounds" => s.input_rounds,
        "version_retries" => s.version_retries,
        "tools_rejected" => s.tools_rejected,
        _ => unreachable!("checked by the parser"),
    }
}

/// The arguments of one directive, read left to right.
struct Args<'a> {
    rest: &'a str,
}

impl<'a> Args<'a> {
    fn new(rest: &'a str) -> Self {
        Args {
            rest: rest.trim_start(),
        }
    }

    fn is_empty(&self) -> bool {
        self.rest.trim().is_empty()
    }

    fn peek(&self) -> Option<char> {
        self.rest.chars().next()
    }

    fn word(&mut self) -> Result<&'a str, String> {
        let rest = self.rest.trim_start();
        if rest.is_empty() {
            return Err("missing argument".into());
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        self.rest = rest[end..].trim_start();
        Ok(&rest[..end])
    }

    fn number<T: std::str::FromStr>(&mut self) -> Result<T, String> {
        let w = self.word()?;
        w.parse().map_err(|_| format!("not a number: {w:?}"))
    }

    fn json(&mut self) -> Result<Value, String> {
        let mut values = serde_json::Deserializer::from_str(self.rest).into_iter::<Value>();
        let value = match values.next() {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(format!("bad JSON: {e}")),
            None => return Err("missing JSON".into()),
        };
        self.rest = self.rest[values.byte_offset()..].trim_start();
        Ok(value)
    }

    fn string(&mut self) -> Result<String, String> {
        match self.json()? {
            Value::String(s) => Ok(s),
            other => Err(format!("expected a JSON string, got {other}")),
        }
    }

    fn opt_string(&mut self) -> Result<Option<String>, String> {
        if self.is_empty() {
            Ok(None)
        } else {
            self.string().map(Some)
        }
    }

    fn duration(&mut self) -> Result<Duration, String> {
        let w = self.word()?;
        let (n, unit) = w.split_at(w.find(|c: char| !c.is_ascii_digit()).unwrap_or(w.len()));
        let n: u64 = n.parse().map_err(|_| format!("not a duration: {w:?}"))?;
        match unit {
            "ms" => Ok(Duration::from_millis(n)),
            "s" => Ok(Duration::from_secs(n)),
            _ => Err(format!("not a duration (ms or s): {w:?}")),
        }
    }

    fn end(&self) -> Result<(), String> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(format!("unexpected {:?}", self.rest.trim()))
        }
    }
}

fn parse(name: &str, text: &str) -> Result<Transcript, String> {
    let mut t = Transcript {
        name: name.to_owned(),
        config: Config::default(),
        steps: Vec::new(),
        segments: Vec::new(),
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        parse_line(&mut t, line, raw).map_err(|e| format!("{name}:{line}: {e}: {raw}"))?;
    }
    Ok(t)
}

fn parse_line(t: &mut Transcript, line: usize, raw: &str) -> Result<(), String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(());
    }
    fn expected<T>(line: usize, text: &str, what: T) -> Expected<T> {
        Expected {
            line,
            text: text.to_owned(),
            what,
        }
    }
    if raw.starts_with(char::is_whitespace) {
        let check = parse_check(&mut Args::new(trimmed))?;
        let last = t.steps.last_mut().and_then(|s| s.events.last_mut());
        return match last {
            Some(Expected {
                what: Expect::Response(_, Outcome::Ok(checks)),
                ..
            }) => {
                checks.push(expected(line, trimmed, check));
                Ok(())
            }
            _ => Err("an indented check belongs under `=> response ID ok`".into()),
        };
    }
    let (word, rest) = raw.split_once(' ').unwrap_or((raw, ""));
    let mut args = Args::new(rest);
    let server_run = matches!(
        t.steps.last(),
        Some(Step {
            action: Action::Server,
            ..
        })
    );
    let bytes = match word {
        "->" | "=>" => {
            let Some(step) = t.steps.last_mut() else {
                return Err("an expectation before any step".into());
            };
            if word == "->" {
                let frame = args.json()?;
                args.end()?;
                step.sent.push(expected(line, trimmed, frame));
            } else {
                let event = parse_event(&mut args)?;
                step.events.push(expected(line, trimmed, event));
            }
            return Ok(());
        }
        "<-" => Some(format!("{rest}\n").into_bytes()),
        "<-x" => Some(unescape(rest)?),
        "<-file" => Some(read_lines(&mut args)?),
        _ => None,
    };
    if let Some(bytes) = bytes {
        if server_run {
            t.segments.last_mut().expect("a run").extend(bytes);
        } else {
            t.segments.push(bytes);
            t.steps.push(Step {
                line,
                action: Action::Server,
                sent: Vec::new(),
                events: Vec::new(),
            });
        }
        return Ok(());
    }
    if word == "config" {
        if !t.steps.is_empty() {
            return Err("config comes before the first step".into());
        }
        match args.word()? {
            "default_timeout" if args.rest.trim() == "none" => t.config.default_timeout = None,
            "default_timeout" => t.config.default_timeout = Some(args.duration()?),
            "frame_limit" => t.config.frame_limit = args.number()?,
            "era" => {
                t.config.era = match args.rest.trim() {
                    "auto" => mcp_proto::EraChoice::Auto,
                    "legacy" => mcp_proto::EraChoice::Legacy,
                    "modern" => mcp_proto::EraChoice::Modern,
                    other => return Err(format!("unknown era {other:?}")),
                }
            }
            other => return Err(format!("unknown setting {other:?}")),
        }
        return Ok(());
    }
    let action = match word {
        "initialize" => Action::Initialize,
        "list_tools" => {
            let cursor = if args.peek() == Some('"') {
                Some(args.string()?)
            } else {
                None
            };
            Action::Send(modifiers(
                Request::list_tools(cursor.as_deref()),
                &mut args,
            )?)
        }
        "call_tool" => {
            let name = args.word()?.to_owned();
            let arguments = args.json()?;
            Action::Send(modifiers(Request::call_tool(&name, arguments), &mut args)?)
        }
        "send" => {
            let method = args.word()?.to_owned();
            let params = match args.peek() {
                Some('{' | '[') => Some(args.json()?),
                _ => None,
            };
            Action::Send(modifiers(Request::new(method, params), &mut args)?)
        }
        "cancel" => {
            let id = RequestId(args.number()?);
            let reason = args.opt_string()?.unwrap_or_else(|| "cancelled".into());
            Action::Cancel(id, reason)
        }
        "close" => Action::Close,
        "advance" => Action::Advance(args.duration()?),
        "timeout" => Action::Timeout,
        "eof" => Action::Eof,
        "poll_timeout" if args.rest.trim() == "none" => {
            args.word()?;
            Action::PollTimeout(None)
        }
        "poll_timeout" => Action::PollTimeout(Some(args.duration()?)),
        "stats" => {
            let field = args.word()?;
            let Some(field) = STATS.iter().find(|s| **s == field) else {
                return Err(format!("unknown counter {field:?} (one of {STATS:?})"));
            };
            Action::Stats(field, args.number()?)
        }
        other => return Err(format!("unknown directive {other:?}")),
    };
    args.end()?;
    t.steps.push(Step {
        line,
        action,
        sent: Vec::new(),
        events: Vec::new(),
    });
    Ok(())
}

fn modifiers(mut request: Request, args: &mut Args<'_>) -> Result<Request, String> {
    while !args.is_empty() {
        request = match args.word()? {
            "timeout" => request.timeout(args.duration()?),
            "no_timeout" => request.no_timeout(),
            other => return Err(format!("unknown request modifier {other:?}")),
        };
    }
    Ok(request)
}

fn parse_event(args: &mut Args<'_>) -> Result<Expect, String> {
    let event = match args.word()? {
        "ready" => Expect::Ready,
        "tools_list_changed" => Expect::ToolsListChanged,
        "log" => Expect::Log(args.word()?.to_owned(), args.opt_string()?),
        "closed" => Expect::Closed,
        "failed" if args.is_empty() => Expect::Failed(None),
        "failed" => Expect::Failed(Some(args.word()?.to_owned())),
        "warning" => Expect::Warning(args.word()?.to_owned(), args.opt_string()?),
        "response" => {
            let id = args.number()?;
            let outcome = match args.word()? {
                "ok" => Outcome::Ok(Vec::new()),
                "error" => Outcome::Rpc(args.number()?, args.opt_string()?),
                "timeout" if args.is_empty() => Outcome::Timeout(None),
                "timeout" => Outcome::Timeout(Some(args.duration()?)),
                "cancelled" => Outcome::Cancelled(args.opt_string()?),
                "closed" => Outcome::Closed,
                "too_large" => Outcome::TooLarge,
                "invalid_result" => Outcome::InvalidResult,
                other => return Err(format!("unknown outcome {other:?}")),
            };
            Expect::Response(id, outcome)
        }
        other => return Err(format!("unknown event {other:?}")),
    };
    args.end()?;
    Ok(event)
}

fn parse_check(args: &mut Args<'_>) -> Result<Check, String> {
    let check = match args.word()? {
        "text" => {
            let op = match args.word()? {
                "=" => StrOp::Eq,
                "starts_with" => StrOp::StartsWith,
                "contains" => StrOp::Contains,
                "lacks" => StrOp::Lacks,
                other => return Err(format!("unknown text test {other:?}")),
            };
            Check::Text(op, args.string()?)
        }
        "content" if args.rest.starts_with("count") => {
            args.word()?;
            Check::ContentCount(args.number()?)
        }
        "content" => {
            let n = args.number()?;
            let kind = args.word()?.to_owned();
            let mime = if args.is_empty() {
                None
            } else {
                Some(args.word()?.to_owned())
            };
            Check::Content(n, kind, mime)
        }
        "is_error" => match args.word()? {
            "true" => Check::IsError(true),
            "false" => Check::IsError(false),
            other => return Err(format!("is_error takes true or false, not {other:?}")),
        },
        "structured" => match args.word()? {
            "has" => Check::StructuredHas(args.word()?.to_owned()),
            "=" => Check::StructuredEq(args.json()?),
            other => return Err(format!("unknown structured test {other:?}")),
        },
        "tools" => match args.word()? {
            "include" => {
                let mut names = Vec::new();
                while !args.is_empty() {
                    names.push(args.word()?.to_owned());
                }
                Check::ToolsInclude(names)
            }
            "count" => Check::ToolsCount(args.number()?),
            "verbatim" => Check::ToolsVerbatim,
            other => return Err(format!("unknown tools test {other:?}")),
        },
        "tool" => {
            let name = args.word()?.to_owned();
            match (args.word()?, args.word()?) {
                ("schema", "contains") => Check::ToolSchemaContains(name, args.string()?),
                other => return Err(format!("unknown tool test {other:?}")),
            }
        }
        "next_cursor" if args.rest.trim() == "none" => {
            args.word()?;
            Check::NextCursor(None)
        }
        "next_cursor" => Check::NextCursor(Some(args.string()?)),
        "raw" => match args.word()? {
            "=" => Check::Raw(args.json()?),
            other => return Err(format!("unknown raw test {other:?}")),
        },
        other => return Err(format!("unknown check {other:?}")),
    };
    args.end()?;
    Ok(check)
}

/// `<-x` text: `\\`, `\n`, `\r`, `\t`, `\0` and `\xHH` escapes, any other character as itself.
/// `<-file FILE [N | N-M]`: those lines (1-based, inclusive; all without a range) of a file beside
/// the transcripts, each with its line end exactly as in the file.
fn read_lines(args: &mut Args<'_>) -> Result<Vec<u8>, String> {
    let file = args.word()?;
    let bytes = std::fs::read(transcripts_dir().join(file)).map_err(|e| format!("{file}: {e}"))?;
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let (first, last) = if args.is_empty() {
        (1, lines.len())
    } else {
        let range = args.word()?;
        let (a, b) = range.split_once('-').unwrap_or((range, range));
        let n = |s: &str| {
            s.parse::<usize>()
                .map_err(|_| format!("bad range {range:?}"))
        };
        (n(a)?, n(b)?)
    };
    args.end()?;
    if first == 0 || first > last || last > lines.len() {
        return Err(format!(
            "{file} has lines 1-{}, not {first}-{last}",
            lines.len()
        ));
    }
    Ok(lines[first - 1..last].concat())
}

// ---- replaying ---------------------------------------------------------------------------------

/// What one step produced.
#[derive(Debug, PartialEq)]
struct Out {
    sent: Vec<Vec<u8>>,
    events: Vec<Event>,
    observed: Observed,
}

#[derive(Debug, PartialEq)]
enum Observed {
    Nothing,
    Command(Result<Option<RequestId>, UsageError>),
    PollTimeout(Option<Duration>),
    Stats(Stats),
}

/// How a run of server bytes is cut into reads: `(run index, its bytes) -> reads`.
type Chunker<'c> = &'c dyn for<'b> Fn(usize, &'b [u8]) -> Vec<&'b [u8]>;

/// Replays `t`, its server runs replaced by `segments`, each cut into reads by `chunks`.
fn replay(t: &Transcript, segments: &[Vec<u8>], chunks: Chunker<'_>) -> Vec<Out> {
    let start = Instant::now();
    let mut now = start;
    let mut s = Session::new(t.config.clone());
    let mut run = 0;
    let mut trace = Vec::with_capacity(t.steps.len());
    for step in &t.steps {
        let mut out = Out {
            sent: Vec::new(),
            events: Vec::new(),
            observed: Observed::Nothing,
        };
        let drain = |s: &mut Session, out: &mut Out| {
            out.sent
                .extend(std::iter::from_fn(|| s.poll_transmit()).map(|t| t.payload));
            out.events.extend(std::iter::from_fn(|| s.poll_event()));
        };
        out.observed = match &step.action {
            Action::Initialize => Observed::Command(s.initialize(now).map(Some)),
            Action::Send(request) => Observed::Command(s.send(request.clone(), now).map(Some)),
            Action::Cancel(id, reason) => {
                Observed::Command(s.cancel(*id, reason, now).map(|()| None))
            }
            Action::Close => {
                s.close(now);
                Observed::Nothing
            }
            Action::Server => {
                for chunk in chunks(run, &segments[run]) {
                    s.handle_bytes(chunk, now);
                    drain(&mut s, &mut out);
                }
                run += 1;
                Observed::Nothing
            }
            Action::Advance(d) => {
                now += *d;
                Observed::Nothing
            }
            Action::Timeout => {
                s.handle_timeout(now);
                Observed::Nothing
            }
            Action::Eof => {
                s.handle_eof(now);
                Observed::Nothing
            }
            Action::PollTimeout(_) => Observed::PollTimeout(s.poll_timeout().map(|w| w - start)),
            Action::Stats(..) => Observed::Stats(s.stats()),
        };
        drain(&mut s, &mut out);
        trace.push(out);
    }
    trace
}

/// Gives a closure the type of a [`Chunker`] (a closure's own inference would not).
fn chunker<F: for<'b> Fn(usize, &'b [u8]) -> Vec<&'b [u8]>>(f: F) -> F {
    f
}

fn whole(_: usize, b: &[u8]) -> Vec<&[u8]> {
    vec![b]
}

/// Every bare `\n` of the server stream becomes `\r\n` (an existing `\r\n` stays as it is).
fn crlf(segments: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut prev = 0;
    segments
        .iter()
        .map(|seg| {
            let mut out = Vec::with_capacity(seg.len() * 11 / 10);
            for &c in seg {
                if c == b'\n' && prev != b'\r' {
                    out.push(b'\r');
                }
                out.push(c);
                prev = c;
            }
            out
        })
        .collect()
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    Whole,
    ByteByByte,
    EveryOffset,
    Crlf,
}

/// Replays `t` whole and checks it against its expectations, then replays it the `mode` way and
/// requires identical outputs. Returns the number of replays.
fn verify(t: &Transcript, mode: Mode) -> Result<usize, String> {
    let expected = replay(t, &t.segments, &whole);
    check(t, &expected)?;
    let mut replays = 1;
    let mut same = |how: &dyn Fn() -> String, segments: &[Vec<u8>], chunks: Chunker<'_>| {
        replays += 1;
        compare(t, &expected, &replay(t, segments, chunks))
            .map_err(|e| format!("{e}\n  (replayed {})", how()))
    };
    match mode {
        Mode::Whole => {}
        Mode::ByteByByte => same(&|| "byte by byte".into(), &t.segments, &|_, b| {
            b.chunks(1).collect()
        })?,
        Mode::EveryOffset => {
            for (run, seg) in t.segments.iter().enumerate() {
                for at in 0..=seg.len() {
                    let split = chunker(move |i, b| {
                        if i == run {
                            let (x, y) = b.split_at(at);
                            vec![x, y]
                        } else {
                            vec![b]
                        }
                    });
                    same(
                        &|| format!("with server run {run} split at byte {at}"),
                        &t.segments,
                        &split,
                    )?;
                }
            }
        }
        Mode::Crlf => {
            let crlf = crlf(&t.segments);
            same(&|| "with CRLF line ends".into(), &crlf, &whole)?;
            same(
                &|| "with CRLF line ends, every CR and LF in different reads".into(),
                &crlf,
                &|_, b| b.split_inclusive(|&c| c == b'\r').collect(),
            )?;
        }
    }
    Ok(replays)
}

/// Requires `got` to be the same, step by step, as `expected`; else names the first step and
/// output that differ.
fn compare(t: &Transcript, expected: &[Out], got: &[Out]) -> Result<(), String> {
    assert_eq!(expected.len(), got.len(), "one output per step");
    let Some((step, (a, b))) = t
        .steps
        .iter()
        .zip(expected.iter().zip(got))
        .find(|(_, (a, b))| a != b)
    else {
        return Ok(());
    };
    let first = |x: &[Vec<u8>], y: &[Vec<u8>]| x.iter().zip(y).position(|(x, y)| x != y);
    let (whole, now) = if a.sent != b.sent {
        let i = first(&a.sent, &b.sent).unwrap_or(a.sent.len().min(b.sent.len()));
        let frame = |o: &Out| o.sent.get(i).map(|f| short(&String::from_utf8_lossy(f)));
        (
            format!("frame {i}: {:?}", frame(a)),
            format!("frame {i}: {:?}", frame(b)),
        )
    } else if a.events != b.events {
        let i = a
            .events
            .iter()
            .zip(&b.events)
            .position(|(x, y)| x != y)
            .unwrap_or(a.events.len().min(b.events.len()));
        let event = |o: &Out| o.events.get(i).map(short);
        (
            format!("event {i}: {:?}", event(a)),
            format!("event {i}: {:?}", event(b)),
        )
    } else {
        (short(&a.observed), short(&b.observed))
    };
    Err(format!(
        "{}:{}: mismatch between replays: this step's outputs differ from the whole replay's\n  \
         whole: {whole}\n  this:  {now}",
        t.name, step.line
    ))
}

// ---- checking ----------------------------------------------------------------------------------

/// A value's debug form, cut short (a tool list or an image runs to kilobytes).
fn short(v: &impl std::fmt::Debug) -> String {
    let s = format!("{v:?}");
    if s.chars().count() > 400 {
        format!("{}…", s.chars().take(400).collect::<String>())
    } else {
        s
    }
}

fn check(t: &Transcript, trace: &[Out]) -> Result<(), String> {
    let server = t.server_bytes();
    for (step, out) in t.steps.iter().zip(trace) {
        let at = |line: usize| format!("{}:{line}", t.name);
        match (&step.action, &out.observed) {
            (_, Observed::Command(Err(e))) => {
                return Err(format!("{}: the command failed: {e:?}", at(step.line)))
            }
            (Action::PollTimeout(want), Observed::PollTimeout(got)) if want != got => {
                return Err(format!(
                    "{}: mismatch: poll_timeout is {got:?} after the start, expected {want:?}",
                    at(step.line)
                ))
            }
            (Action::Stats(name, want), Observed::Stats(stats)) if stat(stats, name) != *want => {
                return Err(format!(
                    "{}: mismatch: stats {name} is {}, expected {want}",
                    at(step.line),
                    stat(stats, name)
                ))
            }
            _ => {}
        }
        for (i, want) in step.sent.iter().enumerate() {
            let Some(payload) = out.sent.get(i) else {
                return Err(format!(
                    "{}: mismatch: expected `{}`, but the step sent only {} frame(s)",
                    at(want.line),
                    want.text,
                    out.sent.len()
                ));
            };
            let got: Value = serde_json::from_slice(payload)
                .map_err(|e| format!("{}: the client sent no JSON: {e}", at(want.line)))?;
            if !json_matches(&want.what, &got) {
                return Err(format!(
                    "{}: mismatch: the client sent a different frame\n  expected {}\n  got      {got}",
                    at(want.line),
                    want.what
                ));
            }
        }
        if let Some(extra) = out.sent.get(step.sent.len()) {
            return Err(format!(
                "{}: mismatch: an unexpected frame (after {} expected): {}",
                at(step.line),
                step.sent.len(),
                String::from_utf8_lossy(extra)
            ));
        }
        for (i, want) in step.events.iter().enumerate() {
            let Some(got) = out.events.get(i) else {
                return Err(format!(
                    "{}: mismatch: expected `{}`, but the step gave only {} event(s)",
                    at(want.line),
                    want.text,
                    out.events.len()
                ));
            };
            event_matches(&want.what, got, &server).map_err(|why| {
                format!(
                    "{}: mismatch: `{}`: {why}\n  got {}",
                    at(want.line),
                    want.text,
                    short(got)
                )
            })?;
        }
        if let Some(extra) = out.events.get(step.events.len()) {
            return Err(format!(
                "{}: mismatch: an unexpected event (after {} expected): {}",
                at(step.line),
                step.events.len(),
                short(extra)
            ));
        }
    }
    Ok(())
}

fn failed_kind(e: &SessionError) -> &'static str {
    match e {
        SessionError::UnsupportedVersion { .. } => "unsupported_version",
        SessionError::Initialize(_) => "initialize",
        SessionError::Closed => "closed",
        SessionError::EndedOnProbe => "ended_on_probe",
        SessionError::NoCommonVersion { .. } => "no_common_version",
        SessionError::Discover(_) => "discover",
        _ => "other",
    }
}

fn event_matches(want: &Expect, got: &Event, server: &[u8]) -> Result<(), String> {
    match (want, got) {
        (Expect::Ready, Event::Ready)
        | (Expect::ToolsListChanged, Event::ListChanged(mcp_proto::ListKind::Tools))
        | (Expect::Closed, Event::Closed) => Ok(()),
        (Expect::Failed(kind), Event::Failed(e)) => match kind {
            Some(k) if k != failed_kind(e) => Err(format!("failed {}", failed_kind(e))),
            _ => Ok(()),
        },
        (Expect::Log(level, text), Event::Log(m)) => {
            if *level != m.level {
                return Err(format!("a log message of level {}", m.level));
            }
            match text {
                Some(text) if !m.data.to_string().contains(text.as_str()) => {
                    Err(format!("the log message does not say {text:?}"))
                }
                _ => Ok(()),
            }
        }
        (Expect::Warning(kind, text), Event::Warning(w)) => {
            if kind != warning_kind(w) {
                return Err(format!("a {} warning", warning_kind(w)));
            }
            let mut said = w.to_string();
            if let Warning::NotJson { excerpt, .. } = w {
                said.push_str(excerpt);
            }
            match text {
                Some(text) if !said.contains(text.as_str()) => {
                    Err(format!("the warning does not say {text:?}"))
                }
                _ => Ok(()),
            }
        }
        (Expect::Response(id, outcome), Event::Response { id: got, result }) if *id == got.0 => {
            outcome_matches(outcome, result, server)
        }
        _ => Err("a different event".into()),
    }
}

fn outcome_matches(
    want: &Outcome,
    got: &Result<Reply, RequestError>,
    server: &[u8],
) -> Result<(), String> {
    match (want, got) {
        (Outcome::Ok(checks), Ok(reply)) => {
            for c in checks {
                check_matches(&c.what, reply, server)
                    .map_err(|why| format!("check `{}` (line {}): {why}", c.text, c.line))?;
            }
            Ok(())
        }
        (Outcome::Rpc(code, text), Err(RequestError::Rpc(e))) => {
            if e.code != *code {
                return Err(format!("error code {}", e.code));
            }
            match text {
                Some(t) if !e.message.contains(t.as_str()) => {
                    Err(format!("the message does not say {t:?}"))
                }
                _ => Ok(()),
            }
        }
        (Outcome::Timeout(after), Err(RequestError::Timeout(d))) => match after {
            Some(a) if a != d => Err(format!("timed out after {d:?}")),
            _ => Ok(()),
        },
        (Outcome::Cancelled(why), Err(RequestError::Cancelled(r))) => match why {
            Some(w) if w != r => Err(format!("cancelled for {r:?}")),
            _ => Ok(()),
        },
        (Outcome::Closed, Err(RequestError::Closed))
        | (Outcome::TooLarge, Err(RequestError::TooLarge { .. }))
        | (Outcome::InvalidResult, Err(RequestError::InvalidResult { .. })) => Ok(()),
        _ => Err("a different outcome".into()),
    }
}

fn tool_call(reply: &Reply) -> Result<&CallToolResult, String> {
    match reply {
        Reply::ToolCall(r) => Ok(r),
        other => Err(format!("not a tool result: {}", short(other))),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn check_matches(check: &Check, reply: &Reply, server: &[u8]) -> Result<(), String> {
    let ok = |cond: bool, why: &dyn Fn() -> String| if cond { Ok(()) } else { Err(why()) };
    match check {
        Check::Text(op, s) => {
            let text = bridge::render_text(tool_call(reply)?);
            let cond = match op {
                StrOp::Eq => text == *s,
                StrOp::StartsWith => text.starts_with(s.as_str()),
                StrOp::Contains => text.contains(s.as_str()),
                StrOp::Lacks => !text.contains(s.as_str()),
            };
            ok(cond, &|| format!("the text is {}", short(&text)))
        }
        Check::Content(n, kind, mime) => {
            let r = tool_call(reply)?;
            let Some(block) = r.content.get(*n) else {
                return Err(format!("only {} content block(s)", r.content.len()));
            };
            let (k, m) = match block {
                ContentBlock::Text { .. } => ("text", None),
                ContentBlock::Image { mime_type, .. } => ("image", Some(mime_type.as_str())),
                ContentBlock::Audio { mime_type, .. } => ("audio", Some(mime_type.as_str())),
                ContentBlock::ResourceLink { mime_type, .. } => {
                    ("resource_link", mime_type.as_deref())
                }
                ContentBlock::Resource { resource } => ("resource", resource.mime_type.as_deref()),
                _ => ("unknown", None),
            };
            ok(
                k == kind && (mime.is_none() || mime.as_deref() == m),
                &|| format!("block {n} is {k} {m:?}"),
            )
        }
        Check::ContentCount(n) => {
            let len = tool_call(reply)?.content.len();
            ok(len == *n, &|| format!("{len} content block(s)"))
        }
        Check::IsError(e) => {
            let got = tool_call(reply)?.is_error;
            ok(got == *e, &|| format!("is_error is {got}"))
        }
        Check::StructuredHas(key) => {
            let s = tool_call(reply)?.structured_content.as_ref();
            ok(s.and_then(|s| s.get(key)).is_some(), &|| {
                format!("structured content is {s:?}")
            })
        }
        Check::StructuredEq(v) => {
            let s = tool_call(reply)?.structured_content.as_ref();
            ok(s == Some(v), &|| format!("structured content is {s:?}"))
        }
        Check::Raw(v) => match reply {
            Reply::Raw(r) => ok(r == v, &|| format!("the result is {r}")),
            other => Err(format!("not a raw result: {}", short(other))),
        },
        Check::ToolsInclude(_)
        | Check::ToolsCount(_)
        | Check::ToolsVerbatim
        | Check::ToolSchemaContains(..)
        | Check::NextCursor(_) => {
            let Reply::Tools(page) = reply else {
                return Err(format!("not a tool list: {}", short(reply)));
            };
            let names: Vec<&str> = page.tools.iter().map(|t| t.name.as_str()).collect();
            match check {
                Check::ToolsInclude(want) => {
                    ok(want.iter().all(|w| names.contains(&w.as_str())), &|| {
                        format!("the tools are {names:?}")
                    })
                }
                Check::ToolsCount(n) => ok(names.len() == *n, &|| {
                    format!("{} tools: {names:?}", names.len())
                }),
                Check::ToolsVerbatim => {
                    for tool in &page.tools {
                        let texts = [
                            Some(tool.raw()),
                            tool.input_schema.as_deref(),
                            tool.output_schema.as_deref(),
                        ];
                        for text in texts.into_iter().flatten() {
                            ok(contains(server, text.get().as_bytes()), &|| {
                                format!("tool {} is not as the server sent it", tool.name)
                            })?;
                        }
                    }
                    Ok(())
                }
                Check::ToolSchemaContains(name, s) => {
                    let Some(tool) = page.tools.iter().find(|t| t.name == *name) else {
                        return Err(format!("no tool {name:?} in {names:?}"));
                    };
                    let schema = tool.input_schema.as_ref().map(|s| s.get()).unwrap_or("");
                    ok(schema.contains(s.as_str()), &|| {
                        format!("the schema is {schema}")
                    })
                }
                Check::NextCursor(c) => ok(page.next_cursor == *c, &|| {
                    format!("next_cursor is {:?}", page.next_cursor)
                }),
                _ => unreachable!(),
            }
        }
    }
}

// ---- the tests ---------------------------------------------------------------------------------

/// Every `*.transcript` file, parsed, in name order.
fn transcripts() -> Vec<Transcript> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(transcripts_dir())
        .expect("tests/transcripts")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "transcript"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            let text = std::fs::read_to_string(p).expect("a transcript");
            parse(&name, &text).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

fn transcript(name: &str) -> (Transcript, String) {
    let text = std::fs::read_to_string(transcripts_dir().join(name)).expect("a transcript");
    (parse(name, &text).unwrap_or_else(|e| panic!("{e}")), text)
}

/// Verifies every transcript the `mode` way; returns the number of replays of each.
fn verify_all(mode: Mode) -> Vec<(String, usize)> {
    let mut failures = Vec::new();
    let mut replays = Vec::new();
    for t in transcripts() {
        match verify(&t, mode) {
            Ok(n) => replays.push((t.name.clone(), n)),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    replays
}

/// The transcripts that must be there (any other `*.transcript` file is replayed too).
const KNOWN: &[&str] = &[
    "everything-stdio.transcript",
    "server-requests-mid-call.transcript",
    "request-timeout.transcript",
    "cancel-batch-eof.transcript",
    "modern-stdio.transcript",
    "probe-legacy-fallback.transcript",
];

#[test]
fn the_transcripts_are_all_there() {
    let names: Vec<String> = transcripts().into_iter().map(|t| t.name).collect();
    for expected in KNOWN {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
}

#[test]
fn every_transcript_replayed_whole_gives_what_it_expects() {
    verify_all(Mode::Whole);
}

#[test]
fn byte_by_byte_gives_identical_frames_and_events() {
    for (name, n) in verify_all(Mode::ByteByByte) {
        assert_eq!(n, 2, "{name}");
    }
}

#[test]
fn every_split_offset_gives_identical_frames_and_events() {
    let replays = verify_all(Mode::EveryOffset);
    for t in transcripts() {
        let n = replays.iter().find(|(name, _)| *name == t.name).unwrap().1;
        let offsets: usize = t.segments.iter().map(|s| s.len() + 1).sum();
        assert_eq!(n, 1 + offsets, "{}: one replay per offset", t.name);
    }
}

#[test]
fn crlf_line_ends_give_identical_frames_and_events() {
    for (name, n) in verify_all(Mode::Crlf) {
        assert_eq!(n, 3, "{name}");
    }
}

/// The recorder's own frames (everything-stdio.in) and this client's (the transcript's `->`
/// lines) are the same requests: same methods and ids, same tool calls. They differ in
/// `clientInfo` and in `tools/list`'s empty params.
#[test]
fn the_everything_transcript_sends_what_the_recording_sent() {
    let (t, _) = transcript("everything-stdio.transcript");
    let ours: Vec<&Value> = t
        .steps
        .iter()
        .flat_map(|s| s.sent.iter().map(|e| &e.what))
        .collect();
    let recorded: Vec<Value> = include_str!("transcripts/everything-stdio.in")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ours.len(), recorded.len());
    for (ours, theirs) in ours.iter().zip(&recorded) {
        assert_eq!(ours["method"], theirs["method"]);
        assert_eq!(ours["id"], theirs["id"]);
        if theirs["method"] == "tools/call" {
            assert_eq!(ours["params"], theirs["params"]);
        }
    }
    assert_eq!(ours[0]["params"]["protocolVersion"], "2025-11-25");
    // And the server's bytes are the recording's, all of them, unchanged.
    assert_eq!(
        t.server_bytes(),
        include_bytes!("transcripts/everything-stdio.out")
    );
}

/// The runner cannot pass vacuously: each real transcript with one expectation made wrong (or
/// dropped, or added) fails, naming the line.
#[test]
fn a_wrong_expectation_fails_the_runner() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "everything-stdio.transcript",
            r#"text = "Echo: hello""#,
            r#"text = "Echo: goodbye""#,
            r#"the text is "Echo: hello""#,
        ),
        (
            "everything-stdio.transcript",
            "tools include echo",
            "tools include echo no-such-tool",
            "the tools are",
        ),
        (
            "everything-stdio.transcript",
            "content 1 image image/png",
            "content 1 image image/jpeg",
            "block 1 is image",
        ),
        (
            "everything-stdio.transcript",
            r#""id":2,"method":"tools/call""#,
            r#""id":3,"method":"tools/call""#,
            "sent a different frame",
        ),
        (
            "everything-stdio.transcript",
            "=> tools_list_changed\n",
            "",
            "`=> response 1 ok`: a different event",
        ),
        (
            "everything-stdio.transcript",
            "=> closed\n",
            "",
            "an unexpected event",
        ),
        (
            "everything-stdio.transcript",
            "=> closed\n",
            "=> closed\n=> closed\n",
            "but the step gave only 1 event(s)",
        ),
        (
            "server-requests-mid-call.transcript",
            "\n-> {\"jsonrpc\":\"2.0\",\"id\":42,\"error\"",
            "\n# -> {\"jsonrpc\":\"2.0\",\"id\":42,\"error\"",
            "an unexpected frame (after 2 expected)",
        ),
        (
            "server-requests-mid-call.transcript",
            "error\":{\"code\":-32601",
            "error\":{\"code\":-32600",
            "sent a different frame",
        ),
        (
            "server-requests-mid-call.transcript",
            "stats pings_answered 2",
            "stats pings_answered 3",
            "stats pings_answered is 2",
        ),
        (
            "request-timeout.transcript",
            "=> response 1 timeout 60s",
            "=> response 1 timeout 61s",
            "timed out after 60s",
        ),
        (
            "request-timeout.transcript",
            "# Not yet.\npoll_timeout 60s",
            "# Not yet.\npoll_timeout 59s",
            "poll_timeout is Some(60s)",
        ),
        (
            "cancel-batch-eof.transcript",
            "=> response 2 error -32602",
            "=> response 2 error -32601",
            "error code -32602",
        ),
    ];
    for (file, from, to, says) in cases {
        let (good, text) = transcript(file);
        verify(&good, Mode::Whole).unwrap();
        assert_eq!(text.matches(from).count(), 1, "{file}: {from:?} once");
        let bad = parse(file, &text.replacen(from, to, 1)).unwrap();
        let err = verify(&bad, Mode::Whole).expect_err(&format!("{file}: {from:?} -> {to:?}"));
        assert!(
            err.contains("mismatch") && err.contains(says),
            "{file}: {from:?} -> {to:?}: {err}"
        );
    }
}

#[test]
fn an_in_memory_transcript_with_a_wrong_text_fails() {
    let good = r#"config era legacy
initialize
-> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":"<any>"}}
<- {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}
-> {"jsonrpc":"2.0","method":"notifications/initialized"}
=> ready
call_tool echo {"message":"hi"}
-> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}
<- {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: hi"}]}}
=> response 1 ok
     text = "Echo: hi"
"#;
    for mode in [Mode::Whole, Mode::ByteByByte, Mode::EveryOffset, Mode::Crlf] {
        verify(&parse("good", good).unwrap(), mode).unwrap();
    }
    let bad = parse("bad", &good.replace(r#"= "Echo: hi""#, r#"= "Echo: ho""#)).unwrap();
    let err = verify(&bad, Mode::Whole).unwrap_err();
    assert!(err.starts_with("bad:10: mismatch"), "{err}");
    assert!(err.contains(r#"the text is "Echo: hi""#), "{err}");
}

#[test]
fn a_malformed_transcript_is_refused() {
    for (text, says) in [
        ("frobnicate", "unknown directive"),
        ("=> ready", "an expectation before any step"),
        ("initialize\n-> {not json", "bad JSON"),
        ("initialize\n=> response 1 maybe", "unknown outcome"),
        ("initialize\n     text = \"x\"", "belongs under"),
        ("initialize\nconfig frame_limit 10", "before the first step"),
        ("advance 5 minutes", "not a duration"),
        ("stats pings 1", "unknown counter"),
        ("<-x \\q", "unknown escape"),
        ("<-file everything-stdio.out 7-9", "has lines 1-7"),
        ("close now", "unexpected"),
        (
            "initialize\n=> response 1 ok\n  is_error maybe",
            "true or false",
        ),
    ] {
        let err = parse("t", text).err().unwrap_or_else(|| panic!("{text:?}"));
        assert!(err.contains(says), "{text:?}: {err}");
    }
}

/// The replays are compared for real: the everything transcript replayed with one server byte
/// changed (an "h" of "Echo: hello") differs from the whole replay, at the step of that run.
#[test]
fn a_replay_that_differs_is_reported() {
    let (t, _) = transcript("everything-stdio.transcript");
    let expected = replay(&t, &t.segments, &whole);
    compare(&t, &expected, &replay(&t, &t.segments, &whole)).unwrap();
    let mut changed = t.segments.clone();
    let run = &mut changed[1];
    let at = run
        .windows(11)
        .position(|w| w == b"Echo: hello")
        .expect("the echo answer");
    run[at + 6] = b'j';
    let err = compare(&t, &expected, &replay(&t, &changed, &whole)).unwrap_err();
    let runs: Vec<usize> = t
        .steps
        .iter()
        .filter(|s| matches!(s.action, Action::Server))
        .map(|s| s.line)
        .collect();
    let at_line = format!(
        "everything-stdio.transcript:{}: mismatch between replays",
        runs[1]
    );
    assert!(err.starts_with(&at_line), "{err}");
    assert!(err.contains("Echo: jello"), "{err}");
}
