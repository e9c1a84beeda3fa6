//! A small Streamable HTTP MCP server, std only, on 127.0.0.1: the offline endpoint of the
//! `mcp-http` example (the default [`Behaviour`]), and — with [`Behaviour`] switches — the
//! misbehaving servers of the HTTP tests and the server of the HTTP benchmark, which run it
//! in-process to inspect every request it received ([`Server::log`]).

use crate::tools;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How the server behaves. The default is a well-behaved stateful server answering in SSE.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// Answer requests with `application/json` instead of an event stream.
    pub json: bool,
    /// With `json`: say `application/json; charset=utf-8`.
    pub json_charset: bool,
    /// Event streams use CRLF line ends, comments, and split each message over several `data:` lines.
    pub crlf: bool,
    /// Event streams are written one byte per chunk.
    pub byte_at_a_time: bool,
    /// A `tools/call` stream first sends the client a `ping`, waits for its answer (a separate
    /// POST), and reports it in the result.
    pub ping_in_stream: bool,
    /// After this many `tools/call`s, the session is forgotten once (404 for its id).
    pub expire_after: Option<usize>,
    /// After this many `tools/call`s, every `tools/call` gets 404.
    pub always_404_after: Option<usize>,
    /// `tools/call` answers 500 with an HTML page.
    pub html_500: bool,
    /// Every request must carry this `Authorization` value (else 401).
    pub auth: Option<String>,
    /// Every request is redirected (307) to this URL.
    pub redirect: Option<String>,
    /// A `tools/call` stream sends only a priming event (`retry: 300`) and ends; the answer comes
    /// on the `GET` that resumes it with `Last-Event-ID`.
    pub cut_stream: bool,
    /// No sessions at all.
    pub stateless: bool,
    /// `tools/call` is answered in JSON with the wrong id.
    pub wrong_id: bool,
    /// `initialize` is answered with this `protocolVersion` instead of the one asked for.
    pub protocol_version: Option<String>,
    /// With `cut_stream`: the priming event's id (default `e1`).
    pub event_id: Option<String>,
    /// A `notifications/cancelled` makes the server forget every session first, so it is answered
    /// 404.
    pub expire_on_cancel: bool,
    /// Notifications are never answered (the server holds the POST for 30 s).
    pub stall_notifications: bool,
    /// `notifications/cancelled` is never answered (held for 30 s).
    pub stall_cancellations: bool,
    /// `DELETE` is never answered (held for 30 s).
    pub stall_delete: bool,
    /// `tools/call` opens an event stream and keeps it open for 30 s with a comment every 100 ms,
    /// never answering; the server counts the streams it saw closed ([`Server::streams_closed`]).
    pub keep_stream_open: bool,
    /// A `tools/call` stream carries its answer, then stays open (a comment every 100 ms, for
    /// 30 s) until the client closes it; counted with `keep_stream_open`'s
    /// ([`Server::streams_closed`]).
    pub linger_after_answer: bool,
    /// Every `initialize` but the first is answered only after this delay.
    pub renewal_delay: Option<Duration>,
    /// The server speaks only the modern era (2026-07-28): no sessions; `server/discover`
    /// answers; every request must carry the per-request `_meta` (-32602) with a version it speaks
    /// (-32022) and an `MCP-Protocol-Version` header that matches it (-32020), each refusal a
    /// `400` with the JSON-RPC error as its body; `initialize` is refused the same way, naming the
    /// versions it supports; every result says `resultType: "complete"` and carries the server's
    /// identity in its `_meta`. `json` picks JSON or SSE answers as for the legacy era.
    pub modern: bool,
    /// With `modern`: `tools/list` also offers `region`, whose `region` argument is mirrored into
    /// an `Mcp-Param-Region` header (`x-mcp-header`); a `tools/call` of it whose header is missing
    /// or differs from the argument is refused with -32020 (a `400`), as the spec says.
    pub param_header: bool,
    /// With `modern`: these members (cache hints, odd ones included) go into every
    /// `server/discover` and `tools/list` result.
    pub cache_hints: Option<Value>,
    /// `notifications/initialized` is never answered (held for 30 s); other notifications are.
    pub stall_initialized: bool,
    /// The standalone `GET` stream opens (in a known session) and sends this many
    /// `notifications/message` log events, then stays open for 30 s.
    pub flood_listen: Option<usize>,
    /// The standalone `GET` is answered only after this long (as a server that is slow to open
    /// it: a request the client sends meanwhile would meet no stream to carry the server's own
    /// requests).
    pub slow_listen: Option<Duration>,
    /// The client's answers to the server's requests are refused (`500`), and never seen: with
    /// `ping_in_stream`, the `tools/call` waits its 5 s for the ping's answer in vain.
    pub refuse_answers: bool,
    /// With `modern`: `server/discover` declares `tools.listChanged`, `resources.listChanged` and
    /// `resources.subscribe`, and each `subscriptions/listen` stream is acknowledged, sends one
    /// `notifications/resources/updated` per URI it asked for, and then ends without an answer
    /// (a dropped stream).
    pub listen_drops: bool,
    /// In the legacy era: the skills extension (SEP-2640) with [`crate::skills`]' true and
    /// hostile skills, as the stdio server's `--behave skills`.
    pub skills: bool,
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Logged {
    /// `POST`, `GET`, `DELETE`.
    pub method: String,
    /// Request headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: String,
    /// The peer's port: requests on one keep-alive connection share it.
    pub peer_port: u16,
    /// When the server had read it whole.
    pub at: std::time::Instant,
}

impl Logged {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC method of the body, if any.
    pub fn rpc_method(&self) -> Option<String> {
        serde_json::from_str::<Value>(&self.body)
            .ok()?
            .get("method")?
            .as_str()
            .map(str::to_owned)
    }
}

#[derive(Default)]
struct State {
    log: Vec<Logged>,
    sessions: HashSet<String>,
    next_session: u64,
    calls: usize,
    expired_once: bool,
    /// Answers the client POSTed to our requests, by id.
    answers: HashMap<String, Value>,
    /// Results held back for a resumed stream, by the last event id the client will send.
    held: HashMap<String, Value>,
    /// `keep_stream_open` and `linger_after_answer` streams whose writes started failing.
    streams_closed: usize,
    initializes: usize,
}

/// A running server.
pub struct Server {
    /// The endpoint URL (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl Server {
    /// Every request received so far.
    pub fn log(&self) -> Vec<Logged> {
        self.shared.0.lock().unwrap().log.clone()
    }

    /// How many `keep_stream_open` and `linger_after_answer` streams the client closed.
    pub fn streams_closed(&self) -> usize {
        self.shared.0.lock().unwrap().streams_closed
    }
}

/// The start of the name of every thread the server runs (`mcp-http-accept`, `mcp-http-conn`).
pub const SERVER_THREADS: &str = "mcp-http-";

/// Starts a server on 127.0.0.1 with a free port; it runs until the process ends.
pub fn start(behaviour: Behaviour) -> std::io::Result<Server> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
    let shared2 = shared.clone();
    // Named (`mcp-http-…`), so that a benchmark running the server in its own process can leave
    // the server's threads out of the client's CPU time (`cpu::threads_cpu`).
    std::thread::Builder::new()
        .name(format!("{SERVER_THREADS}accept"))
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = shared2.clone();
                let behaviour = behaviour.clone();
                std::thread::Builder::new()
                    .name(format!("{SERVER_THREADS}conn"))
                    .spawn(move || {
                        let _ = serve_connection(stream, &behaviour, &shared);
                    })
                    .expect("spawn a connection thread");
            }
        })?;
    Ok(Server { url, shared })
}

type Shared = (Mutex<State>, Condvar);

/// One HTTP/1.1 request as read off a connection (for the fake servers here and in the tests).
#[derive(Debug, Clone)]
pub struct RawRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path with its query.
    pub target: String,
    /// Header names lowercased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

impl RawRequest {
    /// A header's value, by lowercase name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// Reads the next request of a keep-alive connection; `None` at its end.
pub fn read_request(reader: &mut impl BufRead) -> std::io::Result<Option<RawRequest>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    Ok(Some(RawRequest {
        method,
        target,
        headers,
        body,
    }))
}

fn respond(
    out: &mut TcpStream,
    status: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

/// An event stream in chunked encoding.
struct Sse<'a> {
    out: &'a mut TcpStream,
    behaviour: &'a Behaviour,
}

impl<'a> Sse<'a> {
    fn open(
        out: &'a mut TcpStream,
        behaviour: &'a Behaviour,
        session: Option<&str>,
    ) -> std::io::Result<Self> {
        let mut head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n".to_owned();
        if let Some(s) = session {
            head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        head.push_str("\r\n");
        out.write_all(head.as_bytes())?;
        out.flush()?;
        Ok(Sse { out, behaviour })
    }

    fn raw(&mut self, text: &str) -> std::io::Result<()> {
        let mut write_chunk = |bytes: &[u8]| -> std::io::Result<()> {
            self.out
                .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
            self.out.write_all(bytes)?;
            self.out.write_all(b"\r\n")?;
            self.out.flush()
        };
        if self.behaviour.byte_at_a_time {
            for b in text.as_bytes() {
                write_chunk(std::slice::from_ref(b))?;
            }
            Ok(())
        } else {
            write_chunk(text.as_bytes())
        }
    }

    fn message(&mut self, message: &Value, id: Option<&str>) -> std::io::Result<()> {
        let text = if self.behaviour.crlf {
            let mut t = ": a comment the client must ignore\r\nevent: message\r\n".to_owned();
            if let Some(id) = id {
                t.push_str(&format!("id: {id}\r\n"));
            }
            let pretty = serde_json::to_string_pretty(message).expect("JSON");
            for line in pretty.lines() {
                t.push_str(&format!("data: {line}\r\n"));
            }
            t.push_str("\r\n");
            t
        } else {
            let id = id.map(|id| format!("id: {id}\n")).unwrap_or_default();
            format!("event: message\n{id}data: {message}\n\n")
        };
        self.raw(&text)
    }

    fn end(self) -> std::io::Result<()> {
        self.out.write_all(b"0\r\n\r\n")?;
        self.out.flush()
    }
}

fn serve_connection(stream: TcpStream, b: &Behaviour, shared: &Shared) -> std::io::Result<()> {
    // Responses go out in several writes (head, chunks): without this, Nagle's algorithm and the
    // peer's delayed ACK hold each exchange back by tens of milliseconds.
    stream.set_nodelay(true)?;
    let peer_port = stream.peer_addr()?.port();
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(req) = read_request(&mut reader)? {
        {
            let mut st = shared.0.lock().unwrap();
            st.log.push(Logged {
                method: req.method.clone(),
                headers: req.headers.clone(),
                body: String::from_utf8_lossy(&req.body).into_owned(),
                peer_port,
                at: std::time::Instant::now(),
            });
        }
        if let Some(to) = &b.redirect {
            respond(&mut out, "307 Temporary Redirect", &[("Location", to)], b"")?;
            continue;
        }
        if let Some(auth) = &b.auth {
            if req.header("authorization") != Some(auth.as_str()) {
                respond(
                    &mut out,
                    "401 Unauthorized",
                    &[("WWW-Authenticate", "Bearer")],
                    b"",
                )?;
                continue;
            }
        }
        match req.method.as_str() {
            "POST" => handle_post(&mut out, &req, b, shared)?,
            "GET" => handle_get(&mut out, &req, b, shared)?,
            "DELETE" => {
                if b.stall_delete {
                    std::thread::sleep(Duration::from_secs(30));
                }
                if let Some(id) = req.header("mcp-session-id") {
                    shared.0.lock().unwrap().sessions.remove(id);
                }
                respond(&mut out, "200 OK", &[], b"")?;
            }
            _ => respond(&mut out, "405 Method Not Allowed", &[], b"")?,
        }
    }
    Ok(())
}

fn handle_get(
    out: &mut TcpStream,
    req: &RawRequest,
    b: &Behaviour,
    shared: &Shared,
) -> std::io::Result<()> {
    if let Some(delay) = b.slow_listen {
        std::thread::sleep(delay);
    }
    let known = req
        .header("mcp-session-id")
        .is_some_and(|s| shared.0.lock().unwrap().sessions.contains(s));
    if let (Some(n), true) = (b.flood_listen, known) {
        let mut sse = Sse::open(out, b, None)?;
        for i in 0..n {
            let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "data": format!("line {i}")}});
            sse.message(&log, None)?;
        }
        for _ in 0..300 {
            sse.raw(": keep-alive\n\n")?;
            std::thread::sleep(Duration::from_millis(100));
        }
        return sse.end();
    }
    let held = req
        .header("last-event-id")
        .and_then(|id| shared.0.lock().unwrap().held.remove(id));
    match held {
        Some(result) => {
            let mut sse = Sse::open(out, b, None)?;
            sse.message(&result, Some("e2"))?;
            sse.end()
        }
        None => respond(out, "405 Method Not Allowed", &[], b""),
    }
}

fn handle_post(
    out: &mut TcpStream,
    req: &RawRequest,
    b: &Behaviour,
    shared: &Shared,
) -> std::io::Result<()> {
    let Ok(msg) = serde_json::from_slice::<Value>(&req.body) else {
        let err = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
        return respond(
            out,
            "400 Bad Request",
            &[("Content-Type", "application/json")],
            err.to_string().as_bytes(),
        );
    };
    if b.modern {
        return handle_modern(out, req, &msg, b);
    }
    let method = msg["method"].as_str().unwrap_or("").to_owned();
    let session = req.header("mcp-session-id").map(str::to_owned);
    let mut new_session = None;
    if method == "notifications/cancelled" && b.expire_on_cancel {
        shared.0.lock().unwrap().sessions.clear();
    }
    if method == "initialize" {
        let renewal = {
            let mut st = shared.0.lock().unwrap();
            st.initializes += 1;
            st.initializes > 1
        };
        if let Some(delay) = b.renewal_delay.filter(|_| renewal) {
            std::thread::sleep(delay);
        }
        if !b.stateless {
            let mut st = shared.0.lock().unwrap();
            st.next_session += 1;
            let id = format!("session-{}", st.next_session);
            st.sessions.insert(id.clone());
            new_session = Some(id);
        }
    } else if !b.stateless {
        let known = session
            .as_ref()
            .is_some_and(|s| shared.0.lock().unwrap().sessions.contains(s));
        if !known {
            let status = if session.is_some() {
                "404 Not Found"
            } else {
                "400 Bad Request"
            };
            return respond(out, status, &[], b"");
        }
    }
    let Some(id) = msg.get("id").cloned() else {
        if b.stall_notifications
            || (b.stall_cancellations && method == "notifications/cancelled")
            || (b.stall_initialized && method == "notifications/initialized")
        {
            std::thread::sleep(Duration::from_secs(30));
        }
        return respond(out, "202 Accepted", &[], b"");
    };
    if method.is_empty() && b.refuse_answers {
        return respond(out, "500 Internal Server Error", &[], b"");
    }
    if method.is_empty() {
        // An answer to one of our requests.
        let key = id.to_string();
        let (lock, cvar) = shared;
        lock.lock().unwrap().answers.insert(key, msg.clone());
        cvar.notify_all();
        return respond(out, "202 Accepted", &[], b"");
    }
    let skill = match b.skills {
        true => crate::skills::answer(&method, &msg["params"]),
        false => None,
    };
    let result = match method.as_str() {
        _ if skill.is_some() => skill.unwrap_or(Ok(Value::Null)),
        "initialize" => Ok(json!({
            "protocolVersion": b.protocol_version.as_deref().unwrap_or(msg["params"]["protocolVersion"].as_str().unwrap_or("2025-11-25")),
            "capabilities": if b.skills { crate::skills::capabilities() } else { json!({"tools": {}}) },
            "serverInfo": {"name": "mcp-http-demo", "version": "1.0.0"}
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools::list()})),
        "tools/call" => {
            let calls = {
                let mut st = shared.0.lock().unwrap();
                st.calls += 1;
                st.calls
            };
            if b.always_404_after.is_some_and(|n| calls > n) {
                return respond(out, "404 Not Found", &[], b"");
            }
            if b.expire_after.is_some_and(|n| calls > n) {
                let mut st = shared.0.lock().unwrap();
                if !st.expired_once {
                    st.expired_once = true;
                    st.sessions.clear();
                    drop(st);
                    return respond(out, "404 Not Found", &[("Content-Type", "application/json")], b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Session not found\"}}");
                }
            }
            if b.wrong_id {
                let answer = json!({"jsonrpc": "2.0", "id": 9999, "result": {"content": []}});
                return respond(
                    out,
                    "200 OK",
                    &[("Content-Type", "application/json")],
                    answer.to_string().as_bytes(),
                );
            }
            if b.html_500 {
                return respond(
                    out,
                    "500 Internal Server Error",
                    &[("Content-Type", "text/html")],
                    b"<html>\n<body><h1>Internal Server Error</h1>\n<p>upstream exploded</p></body></html>\n",
                );
            }
            if b.cut_stream {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": tools::call(&msg["params"], "").unwrap_or_else(|e| json!({"error": e}))});
                let event_id = b.event_id.clone().unwrap_or_else(|| "e1".into());
                shared
                    .0
                    .lock()
                    .unwrap()
                    .held
                    .insert(event_id.clone(), answer);
                let mut sse = Sse::open(out, b, None)?;
                sse.raw(&format!("id: {event_id}\nretry: 300\ndata: \n\n"))?;
                return sse.end();
            }
            if b.linger_after_answer || b.keep_stream_open {
                let mut sse = Sse::open(out, b, None)?;
                if b.linger_after_answer {
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result": tools::call(&msg["params"], "").unwrap_or_else(|e| json!({"error": e}))});
                    sse.message(&answer, None)?;
                }
                for _ in 0..300 {
                    if sse.raw(": keep-alive\n\n").is_err() {
                        shared.0.lock().unwrap().streams_closed += 1;
                        return Ok(());
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                return sse.end();
            }
            if b.ping_in_stream {
                let mut sse = Sse::open(out, b, None)?;
                sse.message(
                    &json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}),
                    None,
                )?;
                let (lock, cvar) = shared;
                let st = lock.lock().unwrap();
                let (mut st, _) = cvar
                    .wait_timeout_while(st, Duration::from_secs(5), |st| {
                        !st.answers.contains_key("\"p1\"")
                    })
                    .unwrap();
                let pong = st
                    .answers
                    .remove("\"p1\"")
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "none".into());
                drop(st);
                let result = tools::call(&msg["params"], &format!("pong: {pong}"));
                let answer = match result {
                    Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
                    Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
                };
                sse.message(&answer, None)?;
                return sse.end();
            }
            tools::call(&msg["params"], "")
        }
        other => Err(json!({"code": -32601, "message": format!("Method not found: {other}")})),
    };
    let answer = match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
    };
    if b.json {
        let ct = if b.json_charset {
            "application/json; charset=utf-8"
        } else {
            "application/json"
        };
        let mut headers = vec![("Content-Type", ct)];
        if let Some(s) = &new_session {
            headers.push(("Mcp-Session-Id", s.as_str()));
        }
        respond(out, "200 OK", &headers, answer.to_string().as_bytes())
    } else {
        let mut sse = Sse::open(out, b, new_session.as_deref())?;
        sse.message(&answer, None)?;
        sse.end()
    }
}

/// The only version of the modern era the server speaks.
const MODERN: &str = "2026-07-28";

/// A POST to a modern-only server ([`Behaviour::modern`]).
fn handle_modern(
    out: &mut TcpStream,
    req: &RawRequest,
    msg: &Value,
    b: &Behaviour,
) -> std::io::Result<()> {
    let refuse = |out: &mut TcpStream, id: &Value, status: &str, error: Value| {
        let body = json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string();
        respond(
            out,
            status,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    };
    let Some(id) = msg.get("id") else {
        return respond(out, "202 Accepted", &[], b"");
    };
    let method = msg["method"].as_str().unwrap_or("");
    if method == "initialize" {
        return refuse(
            out,
            id,
            "400 Bad Request",
            json!({"code": -32022,
                   "message": format!("this server speaks only protocol version {MODERN}: initialize is not accepted"),
                   "data": {"supported": [MODERN], "requested": msg["params"]["protocolVersion"]}}),
        );
    }
    let meta = &msg["params"]["_meta"];
    let keys = [
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/clientCapabilities",
    ];
    if !keys.iter().all(|k| meta.get(k).is_some()) {
        return refuse(
            out,
            id,
            "400 Bad Request",
            json!({"code": -32602, "message": format!("params._meta must carry {}", keys.join(", "))}),
        );
    }
    let version = meta[keys[0]].as_str().unwrap_or("");
    if req.header("mcp-protocol-version") != Some(version) {
        return refuse(
            out,
            id,
            "400 Bad Request",
            json!({"code": -32020, "message": "mcp-protocol-version header does not match the request envelope's protocol version"}),
        );
    }
    if version != MODERN {
        return refuse(
            out,
            id,
            "400 Bad Request",
            json!({"code": -32022, "message": "Unsupported protocol version",
                   "data": {"supported": [MODERN], "requested": version}}),
        );
    }
    let hinted = |mut result: Value| {
        let hints = b.cache_hints.as_ref().and_then(Value::as_object);
        for (k, v) in hints.into_iter().flatten() {
            result[k] = v.clone();
        }
        result
    };
    let params = &msg["params"];
    if b.param_header && method == "tools/call" && params["name"] == "region" {
        // > "The server MUST reject requests where … a header value does not match the
        // > corresponding value in the request body" — MCP 2026-07-28, Streamable HTTP
        let want = params["arguments"]["region"].as_str();
        if want.is_none() || req.header("mcp-param-region") != want {
            return refuse(
                out,
                id,
                "400 Bad Request",
                json!({"code": -32020, "message": "Header mismatch: Mcp-Param-Region is missing or does not match arguments.region"}),
            );
        }
    }
    if b.listen_drops && method == "subscriptions/listen" {
        let stamp = json!({"io.modelcontextprotocol/subscriptionId": id});
        let notifications = &params["notifications"];
        let mut sse = Sse::open(out, b, None)?;
        sse.message(
            &json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": notifications, "_meta": stamp}}),
            None,
        )?;
        let uris = notifications["resourceSubscriptions"].as_array();
        for uri in uris.into_iter().flatten() {
            sse.message(
                &json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": uri, "_meta": stamp}}),
                None,
            )?;
        }
        return sse.end();
    }
    let capabilities = if b.listen_drops {
        json!({"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}})
    } else {
        json!({"tools": {}})
    };
    let result = match method {
        "server/discover" => Ok(hinted(
            json!({"supportedVersions": [MODERN], "capabilities": capabilities}),
        )),
        "tools/list" => {
            let mut list = tools::list();
            if let (true, Some(list)) = (b.param_header, list.as_array_mut()) {
                list.push(json!({"name": "region", "description": "Says the region it was given.",
                    "inputSchema": {"type": "object", "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]}}));
            }
            Ok(hinted(json!({"tools": list})))
        }
        "tools/call" if b.param_header && params["name"] == "region" => Ok(
            json!({"content": [{"type": "text", "text": format!("region {}", params["arguments"]["region"].as_str().unwrap_or(""))}]}),
        ),
        "tools/call" => tools::call(params, ""),
        other => {
            return refuse(
                out,
                id,
                "404 Not Found",
                json!({"code": -32601, "message": format!("Method not found: {other}")}),
            )
        }
    };
    let answer = match result {
        Ok(mut r) => {
            r["resultType"] = json!("complete");
            r["_meta"] = json!({"io.modelcontextprotocol/serverInfo": {"name": "mcp-http-demo", "version": "1.0.0"}});
            json!({"jsonrpc": "2.0", "id": id, "result": r})
        }
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
    };
    if b.json {
        respond(
            out,
            "200 OK",
            &[("Content-Type", "application/json")],
            answer.to_string().as_bytes(),
        )
    } else {
        let mut sse = Sse::open(out, b, None)?;
        sse.message(&answer, None)?;
        sse.end()
    }
}
