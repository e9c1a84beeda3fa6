//! HTTP transcript tests: one runner for every `tests/transcripts/http/*.transcript` file.
//!
//! A transcript here is a conversation over Streamable HTTP, as data, played through the core
//! alone: a `Session` makes the messages, [`HttpRules`] turns each into its exchange (the
//! machine of `src/http/step.rs`), and the runner does what a driver does with each
//! [`Step`](mcp_proto::http::Step) — the requests it says to make are checked against the file, the
//! responses, bodies and stream bytes come from the file, messages go to the session, waits move
//! a fake clock. No socket, no thread. Exchanges run one after the other, in the session's order.
//!
//! Each file is replayed whole and again with every event-stream chunk fed one byte at a time;
//! both replays must give the same outputs, and the whole one must match the file exactly (an
//! output the file does not list fails it too). The format (tests/transcripts/http/README.md is
//! the reference):
//!
//! ```text
//! config era legacy|modern|auto      settings, before the first command (also: limit N,
//!                                    default_timeout DUR)
//! initialize                         client commands: initialize, list_tools, call_tool NAME JSON,
//!                                    advance DUR, timeout (the session's timers), delete
//! -> POST /mcp                       the next request the client makes (the path or whole URL),
//!      Accept: application/json, …     with header checks (`Name: value` exactly, `!Name`: absent)
//!      body {"jsonrpc":"2.0",…}        and its body (JSON; "<any>" matches anything)
//! <- 200                             the response's status, then its headers, indented
//!      content-type: text/event-stream
//! <-body {"jsonrpc":…}               a JSON body, verbatim; `<-oversized N`: one of N bytes
//! <-data id: 1\ndata: {…}\n\n        event-stream bytes (escapes \n \r \t \\ \xHH); `<-end`
//! => response 1 ok ["TEXT"]          an output: ready, response ID ok ["TEXT" in its text] |
//!                                    error CODE | too_large | failed (the transport failed it),
//!                                    warning KIND, log LEVEL, closed, session_failed, wait DUR (a
//!                                    resumption's), exchange_failed KIND (what the machine said)
//! ```

use mcp_proto::http::{Exchange, HttpConfig, HttpError, HttpRequest, HttpRules, Step};
use mcp_proto::{
    Config, EraChoice, Event, Reply, Request, RequestError, RequestId, Session, Transmit,
    TransmitKind, TransportKind,
};
mod common;

use common::{json_matches, unescape, warning_kind};
use serde_json::Value;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The endpoint every transcript talks to.
const URL: &str = "http://127.0.0.1:1/mcp";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts/http")
}

// ---- the file ----------------------------------------------------------------------------------

/// A parsed transcript: its settings, and its lines in order.
struct Script {
    name: String,
    config: Config,
    limit: usize,
    lines: Vec<(usize, Line)>,
}

enum Line {
    Initialize,
    Send(Request),
    Advance(Duration),
    Timeout,
    Delete,
    /// A response's head.
    Head(u16, Vec<(String, String)>),
    Body(Vec<u8>),
    Oversized(u64),
    Data(Vec<u8>),
    End,
    /// An output the replay must give next.
    Expect(Want),
}

enum Want {
    Sent {
        method: String,
        url: String,
        headers: Vec<(String, Option<String>)>,
        body: Option<Value>,
    },
    Ready,
    Response(u64, Outcome),
    Warning(String),
    Log(String),
    Closed,
    SessionFailed,
    Wait(Duration),
    ExchangeFailed(String),
}

enum Outcome {
    Ok(Option<String>),
    Error(i64),
    TooLarge,
    Failed,
}

fn parse(name: &str, text: &str) -> Result<Script, String> {
    let mut script = Script {
        name: name.to_owned(),
        config: Config {
            transport: TransportKind::Http,
            era: EraChoice::Legacy,
            ..Config::default()
        },
        limit: 1 << 20,
        lines: Vec::new(),
    };
    for (n, raw) in text.lines().enumerate() {
        let n = n + 1;
        parse_line(&mut script, n, raw).map_err(|e| format!("{name}:{n}: {e}: {raw:?}"))?;
    }
    Ok(script)
}

fn parse_line(s: &mut Script, n: usize, raw: &str) -> Result<(), String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(());
    }
    // An indented line adds to the directive above it: a header or a body.
    if raw.starts_with(' ') {
        return match s.lines.last_mut() {
            Some((_, Line::Head(_, headers))) => {
                let (k, v) = trimmed.split_once(':').ok_or("a header is `name: value`")?;
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
                Ok(())
            }
            Some((_, Line::Expect(Want::Sent { headers, body, .. }))) => {
                if let Some(json) = trimmed.strip_prefix("body ") {
                    *body = Some(serde_json::from_str(json).map_err(|e| e.to_string())?);
                } else if let Some(absent) = trimmed.strip_prefix('!') {
                    headers.push((absent.to_owned(), None));
                } else {
                    let (k, v) = trimmed.split_once(':').ok_or("a check is `Name: value`")?;
                    headers.push((k.trim().to_owned(), Some(v.trim().to_owned())));
                }
                Ok(())
            }
            _ => Err("an indented line belongs under `<- STATUS` or `-> METHOD URL`".into()),
        };
    }
    let (word, rest) = trimmed.split_once(' ').unwrap_or((trimmed, ""));
    let rest = rest.trim();
    let line = match word {
        "config" => {
            if !s.lines.is_empty() {
                return Err("settings come before the first command".into());
            }
            let (key, value) = rest.split_once(' ').ok_or("config KEY VALUE")?;
            match key {
                "era" => {
                    s.config.era = match value {
                        "legacy" => EraChoice::Legacy,
                        "modern" => EraChoice::Modern,
                        "auto" => EraChoice::Auto,
                        _ => return Err("era legacy|modern|auto".into()),
                    }
                }
                "limit" => s.limit = number(value)?,
                "default_timeout" => s.config.default_timeout = Some(duration(value)?),
                _ => return Err(format!("unknown setting {key:?}")),
            }
            return Ok(());
        }
        "initialize" => Line::Initialize,
        "list_tools" => Line::Send(Request::list_tools(None)),
        "call_tool" => {
            let (tool, args) = rest.split_once(' ').ok_or("call_tool NAME JSON")?;
            let args = serde_json::from_str(args).map_err(|e| e.to_string())?;
            Line::Send(Request::call_tool(tool, args))
        }
        "advance" => Line::Advance(duration(rest)?),
        "timeout" => Line::Timeout,
        "delete" => Line::Delete,
        "<-" => Line::Head(number(rest)?, Vec::new()),
        "<-body" => Line::Body(rest.as_bytes().to_vec()),
        "<-oversized" => Line::Oversized(number(rest)?),
        "<-data" => Line::Data(unescape(rest)?),
        "<-end" => Line::End,
        "->" => {
            let (method, url) = rest.split_once(' ').ok_or("-> METHOD URL")?;
            let url = match url.strip_prefix('/') {
                Some(path) => format!("http://127.0.0.1:1/{path}"),
                None => url.to_owned(),
            };
            Line::Expect(Want::Sent {
                method: method.to_owned(),
                url,
                headers: Vec::new(),
                body: None,
            })
        }
        "=>" => Line::Expect(parse_want(rest)?),
        _ => return Err(format!("unknown directive {word:?}")),
    };
    s.lines.push((n, line));
    Ok(())
}

fn parse_want(rest: &str) -> Result<Want, String> {
    let mut words = rest.splitn(4, ' ');
    let want = match words.next().unwrap_or("") {
        "ready" => Want::Ready,
        "closed" => Want::Closed,
        "session_failed" => Want::SessionFailed,
        "warning" => Want::Warning(words.next().ok_or("warning KIND")?.to_owned()),
        "log" => Want::Log(words.next().ok_or("log LEVEL")?.to_owned()),
        "wait" => Want::Wait(duration(words.next().unwrap_or(""))?),
        "exchange_failed" => Want::ExchangeFailed(rest["exchange_failed".len()..].trim().into()),
        "response" => {
            let id = number(words.next().unwrap_or(""))?;
            let outcome = match words.next().unwrap_or("") {
                "ok" => Outcome::Ok(match words.collect::<Vec<_>>().join(" ") {
                    t if t.is_empty() => None,
                    t => Some(serde_json::from_str(&t).map_err(|_| "ok \"TEXT\"")?),
                }),
                "error" => Outcome::Error(number(words.next().unwrap_or(""))?),
                "too_large" => Outcome::TooLarge,
                "failed" => Outcome::Failed,
                other => return Err(format!("unknown outcome {other:?}")),
            };
            Want::Response(id, outcome)
        }
        other => return Err(format!("unknown output {other:?}")),
    };
    Ok(want)
}

fn number<T: std::str::FromStr>(w: &str) -> Result<T, String> {
    w.parse().map_err(|_| format!("not a number: {w:?}"))
}

fn duration(w: &str) -> Result<Duration, String> {
    if let Some(ms) = w.strip_suffix("ms") {
        return Ok(Duration::from_millis(number(ms)?));
    }
    match w.strip_suffix('s') {
        Some(s) => Ok(Duration::from_secs(number(s)?)),
        None => Err(format!("a duration is Nms or Ns: {w:?}")),
    }
}

// ---- the replay --------------------------------------------------------------------------------

/// What the replay gave, in order.
#[derive(Debug)]
enum Out {
    Sent(HttpRequest),
    Event(Event),
    /// The machine failed an exchange (its error, as `Display` says it).
    ExchangeFailed(HttpError),
    /// The transport failed this request (what a driver tells its caller).
    RequestFailed(RequestId),
    Wait(Duration),
}

/// What the exchange under way waits for from the file.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Awaits {
    Nothing,
    Head,
    Body(usize),
    Stream,
}

/// The driver's half, as a test runs it: exchanges one at a time.
struct Driver {
    now: Instant,
    session: Session,
    rules: HttpRules,
    limit: usize,
    queue: VecDeque<Transmit>,
    current: Option<(Exchange, Transmit)>,
    awaits: Awaits,
    out: Vec<(usize, Out)>,
    line: usize,
}

impl Driver {
    fn new(script: &Script) -> Driver {
        Driver {
            now: Instant::now(),
            session: Session::new(script.config.clone()),
            rules: HttpRules::new(HttpConfig::new(URL)),
            limit: script.limit,
            queue: VecDeque::new(),
            current: None,
            awaits: Awaits::Nothing,
            out: Vec::new(),
            line: 0,
        }
    }

    fn push(&mut self, out: Out) {
        self.out.push((self.line, out));
    }

    /// Takes what the session has for the wire and for the application.
    fn drain(&mut self) {
        while let Some(t) = self.session.poll_transmit() {
            self.queue.push_back(t);
        }
        while let Some(e) = self.session.poll_event() {
            self.push(Out::Event(e));
        }
    }

    /// Steps the exchanges until one needs something from the file (or none is left).
    fn run(&mut self) {
        loop {
            self.drain();
            if self.awaits != Awaits::Nothing {
                return;
            }
            let (mut exchange, transmit) = match self.current.take() {
                Some(current) => current,
                None => match self.queue.pop_front() {
                    // Over HTTP, giving up on a request is ending its exchange.
                    Some(t) if matches!(t.kind, TransmitKind::Abort { .. }) => continue,
                    Some(t) => (self.rules.start(&t, self.limit, false), t),
                    None => return,
                },
            };
            let step = self.rules.step(&mut exchange, &transmit);
            let request = match transmit.kind {
                TransmitKind::Request { id, .. } => Some(id),
                _ => None,
            };
            match step {
                Step::Send(request) => {
                    self.push(Out::Sent(request));
                    self.awaits = Awaits::Head;
                }
                Step::ReadBody { limit } => self.awaits = Awaits::Body(limit),
                Step::ReadStream => self.awaits = Awaits::Stream,
                Step::Deliver(message) => match exchange.wire() {
                    Some(wire) => self.session.handle_message_for(wire, &message, self.now),
                    None => self.session.handle_message(&message, self.now),
                },
                Step::Wait(after) => {
                    self.push(Out::Wait(after));
                    self.now += after;
                }
                Step::Done => continue,
                Step::Failed(error) => {
                    self.push(Out::ExchangeFailed(error.clone()));
                    self.failed(request, error);
                    continue;
                }
                other => panic!("{other:?}: this runner does not run OAuth"),
            }
            self.current = Some((exchange, transmit));
        }
    }

    /// What a driver tells the session when an exchange failed.
    fn failed(&mut self, request: Option<RequestId>, error: HttpError) {
        let hit = match (error, request) {
            (HttpError::SessionExpired { .. }, request) => {
                self.session.handle_expired(request, self.now)
            }
            (HttpError::TooLarge { len, limit }, request) => {
                self.session.handle_oversized(len, limit, request, self.now);
                return;
            }
            (_, Some(id)) => self.session.handle_undeliverable(id, self.now),
            (_, None) => return,
        };
        if let Some(id) = hit.request {
            self.push(Out::RequestFailed(id));
        }
    }

    /// Feeds the file's next line; `bytewise` feeds a stream's bytes one at a time.
    fn feed(&mut self, line: &Line, bytewise: bool) -> Result<(), String> {
        match line {
            Line::Initialize => {
                self.session
                    .initialize(self.now)
                    .map_err(|e| e.to_string())?;
            }
            Line::Send(request) => {
                self.session
                    .send(request.clone(), self.now)
                    .map_err(|e| e.to_string())?;
            }
            Line::Advance(d) => self.now += *d,
            Line::Timeout => self.session.handle_timeout(self.now),
            Line::Delete => {
                if let Some(request) = self.rules.delete() {
                    self.push(Out::Sent(request));
                }
            }
            Line::Head(status, headers) => {
                self.waiting(Awaits::Head)?;
                let (exchange, _) = self.current.as_mut().expect("an exchange");
                self.rules.on_head(exchange, *status, headers);
                self.awaits = Awaits::Nothing;
            }
            Line::Body(body) => {
                let Awaits::Body(limit) = self.awaits else {
                    return Err(format!("no body is read now ({:?})", self.awaits));
                };
                let (exchange, _) = self.current.as_mut().expect("an exchange");
                if body.len() > limit {
                    self.rules.on_oversized(exchange, body.len() as u64);
                } else {
                    self.rules.on_body(exchange, body.clone());
                }
                self.awaits = Awaits::Nothing;
            }
            Line::Oversized(len) => {
                if !matches!(self.awaits, Awaits::Body(_)) {
                    return Err(format!("no body is read now ({:?})", self.awaits));
                }
                let (exchange, _) = self.current.as_mut().expect("an exchange");
                self.rules.on_oversized(exchange, *len);
                self.awaits = Awaits::Nothing;
            }
            Line::Data(bytes) => {
                let chunks: Vec<&[u8]> = match bytewise {
                    true => bytes.chunks(1).collect(),
                    false => vec![bytes],
                };
                self.waiting(Awaits::Stream)?;
                for chunk in chunks {
                    if self.awaits != Awaits::Stream {
                        // Answered (or failed) within these bytes: a driver reads no further.
                        break;
                    }
                    let (exchange, _) = self.current.as_mut().expect("an exchange");
                    self.rules.on_data(exchange, chunk);
                    self.awaits = Awaits::Nothing;
                    self.run();
                }
            }
            Line::End => {
                self.waiting(Awaits::Stream)?;
                let (exchange, _) = self.current.as_mut().expect("an exchange");
                self.rules.on_end(exchange);
                self.awaits = Awaits::Nothing;
            }
            Line::Expect(_) => return Ok(()),
        }
        self.run();
        Ok(())
    }

    fn waiting(&self, what: Awaits) -> Result<(), String> {
        match self.awaits == what {
            true => Ok(()),
            false => Err(format!(
                "the client waits for {:?}, not {what:?}",
                self.awaits
            )),
        }
    }
}

fn replay(script: &Script, bytewise: bool) -> Result<Vec<(usize, Out)>, String> {
    let mut driver = Driver::new(script);
    for (n, line) in &script.lines {
        driver.line = *n;
        driver
            .feed(line, bytewise)
            .map_err(|e| format!("{}:{n}: {e}", script.name))?;
    }
    Ok(driver.out)
}

// ---- the checks --------------------------------------------------------------------------------

fn verify(script: &Script) -> Result<usize, String> {
    let got = replay(script, false)?;
    let bytewise = replay(script, true)?;
    let show = |outs: &[(usize, Out)]| -> Vec<String> {
        outs.iter().map(|(_, o)| format!("{o:?}")).collect()
    };
    if show(&got) != show(&bytewise) {
        return Err(format!(
            "{}: fed one byte at a time, the streams gave other outputs:\n  whole: {:#?}\n  bytewise: {:#?}",
            script.name,
            show(&got),
            show(&bytewise)
        ));
    }
    let wants: Vec<(usize, &Want)> = script
        .lines
        .iter()
        .filter_map(|(n, l)| match l {
            Line::Expect(w) => Some((*n, w)),
            _ => None,
        })
        .collect();
    for (i, (at, out)) in got.iter().enumerate() {
        let Some((n, want)) = wants.get(i) else {
            return Err(format!(
                "{}: after line {at}, an output the transcript does not list: {out:?}",
                script.name
            ));
        };
        matches(want, out).map_err(|why| {
            format!(
                "{}:{n}: expected otherwise, got {why}: {out:?}",
                script.name
            )
        })?;
    }
    if let Some((n, _)) = wants.get(got.len()) {
        return Err(format!("{}:{n}: this output never came", script.name));
    }
    Ok(got.len())
}

fn matches(want: &Want, got: &Out) -> Result<(), String> {
    match (want, got) {
        (
            Want::Sent {
                method,
                url,
                headers,
                body,
            },
            Out::Sent(request),
        ) => {
            if request.method.as_str() != method || request.url != *url {
                return Err(format!("{} {}", request.method.as_str(), request.url));
            }
            for (name, value) in headers {
                let sent = request
                    .headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.as_ref());
                if sent != value.as_deref() {
                    return Err(format!("header {name}: {sent:?}"));
                }
            }
            if let Some(want) = body {
                let sent: Value = request
                    .body
                    .as_deref()
                    .and_then(|b| serde_json::from_slice(b).ok())
                    .ok_or("a request without a JSON body")?;
                if !json_matches(want, &sent) {
                    return Err(format!("body {sent}"));
                }
            }
            Ok(())
        }
        (Want::Ready, Out::Event(Event::Ready))
        | (Want::Closed, Out::Event(Event::Closed))
        | (Want::SessionFailed, Out::Event(Event::Failed(_))) => Ok(()),
        (Want::Warning(kind), Out::Event(Event::Warning(w))) => match warning_kind(w) {
            k if k == kind => Ok(()),
            k => Err(format!("a {k} warning")),
        },
        (Want::Log(level), Out::Event(Event::Log(m))) if m.level == *level => Ok(()),
        (Want::Wait(d), Out::Wait(after)) if d == after => Ok(()),
        (Want::ExchangeFailed(kind), Out::ExchangeFailed(e)) => match error_kind(e) {
            k if k == *kind => Ok(()),
            k => Err(format!("exchange_failed {k}")),
        },
        (Want::Response(id, Outcome::Failed), Out::RequestFailed(got)) if *id == got.0 => Ok(()),
        (Want::Response(id, outcome), Out::Event(Event::Response { id: got, result }))
            if *id == got.0 =>
        {
            match (outcome, result) {
                (Outcome::Ok(None), Ok(_)) => Ok(()),
                (Outcome::Ok(Some(text)), Ok(Reply::ToolCall(r))) if r.text().contains(text) => {
                    Ok(())
                }
                (Outcome::Error(code), Err(RequestError::Rpc(e))) if e.code == *code => Ok(()),
                (Outcome::TooLarge, Err(RequestError::TooLarge { .. })) => Ok(()),
                (_, result) => Err(format!("{result:?}")),
            }
        }
        _ => Err("a different output".into()),
    }
}

/// An exchange's failure as transcripts name it: `expired`, `too_large`, `status N`, ….
fn error_kind(e: &HttpError) -> String {
    match e {
        HttpError::SessionExpired { .. } => "expired".into(),
        HttpError::TooLarge { .. } => "too_large".into(),
        HttpError::Status { status, .. } => format!("status {status}"),
        HttpError::Redirect { .. } => "redirect".into(),
        HttpError::ContentType { .. } => "content_type".into(),
        HttpError::Unauthorized { .. } => "unauthorized".into(),
        HttpError::Forbidden { .. } => "forbidden".into(),
        HttpError::Unanswered { .. } => "unanswered".into(),
        _ => "other".into(),
    }
}

/// The transcripts that must be there (a file more is replayed too).
const KNOWN: [&str; 6] = [
    "legacy-json-and-sse.transcript",
    "modern.transcript",
    "sse-resumption.transcript",
    "redirects.transcript",
    "session-expired.transcript",
    "limits-and-errors.transcript",
];

fn scripts() -> Vec<Script> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/transcripts/http")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "transcript"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(p).expect("readable");
            parse(&name, &text).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

#[test]
fn every_http_transcript_gives_what_it_expects_whole_and_byte_by_byte() {
    let scripts = scripts();
    for known in KNOWN {
        assert!(
            scripts.iter().any(|s| s.name == known),
            "{known} is missing"
        );
    }
    let mut failures = Vec::new();
    for script in &scripts {
        match verify(script) {
            Ok(0) => failures.push(format!("{}: no outputs checked", script.name)),
            Ok(_) => {}
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_wrong_expectation_fails_the_runner() {
    // The same exchange, each time with one expectation wrong: every one must be caught.
    let good = "initialize\n\
        -> POST /mcp\n  !Mcp-Session-Id\n\
        <- 200\n  content-type: application/json\n  mcp-session-id: s1\n\
        <-body {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\n\
        => ready\n\
        -> POST /mcp\n  Mcp-Session-Id: s1\n\
        <- 202\n";
    let script = parse("good", good).unwrap();
    assert_eq!(verify(&script), Ok(3), "the good one passes");
    for (wrong, why) in [
        (
            good.replace("!Mcp-Session-Id", "Mcp-Session-Id: s1"),
            "a header",
        ),
        (
            good.replace("Mcp-Session-Id: s1\n<- 202", "Mcp-Session-Id: s2\n<- 202"),
            "a value",
        ),
        (
            good.replace("-> POST /mcp\n  Mcp", "-> GET /mcp\n  Mcp"),
            "a method",
        ),
        (good.replace("=> ready\n", ""), "an output left out"),
        (format!("{good}=> ready\n"), "an output that never comes"),
        (good.replace("=> ready", "=> closed"), "another output"),
    ] {
        let script = parse("wrong", &wrong).unwrap();
        assert!(verify(&script).is_err(), "{why} was not caught");
    }
    // Input the client does not wait for is refused.
    let early = parse("early", "<-body {}\n").unwrap();
    assert!(verify(&early).is_err());
}
