//! Sequential `tools/call` round trips over Streamable HTTP: our `Client<HttpTransport>` against a
//! minimal hand-written blocking HTTP/1.1 client. std only: `Instant` and medians.
//!
//! `cargo bench --bench http`. Run without `--bench` (as `cargo test --benches` does) it only
//! smoke-tests itself with a few calls.
//!
//! The server is the test kit's (`mcp_testkit::http_server`, also the `mcp-http` example's: std, a
//! thread per connection, 127.0.0.1), started in this process twice: default behaviour (each answer is a
//! chunked `text/event-stream`) and `json: true` (`application/json` with `Content-Length`).
//!
//! (a) Our `Client` (`smol::block_on`, `client.call_tool("echo", {"text":"hi"})`, result decoded and
//!     its text checked), one call at a time.
//! (b) A blocking client over ONE keep-alive `std::net::TcpStream` (`set_nodelay(true)`): the same
//!     handshake (`initialize`, `notifications/initialized`), then each call is one `write_all` of
//!     the POST (Content-Length, `Mcp-Session-Id`, `MCP-Protocol-Version`) and a read of the
//!     response head and body (Content-Length, or chunked for SSE: only what that server sends),
//!     `serde_json::Value` parsed and its text checked.
//! (c) calls/s of both: the median of several rounds (alternating a and b) after a warm-up, and
//!     the ratio.
//! (x, y) The floor under (a): bare isahc making the same POSTs with no MCP layer, async and
//!     blocking. Each request crosses to isahc's agent thread (curl) and back.
//! (f) Our `Client` as in (a), with the era found by the probe (`EraChoice::Auto`, the default),
//!     against the same server in the modern era (`Behaviour::modern`: no session, the
//!     per-request `_meta` and its mirrored headers, `resultType` on every result), and the ratio
//!     to (a): what the modern era costs a call. The two clients take turns in chunks of a
//!     twentieth of a round, so that both meet the same load; each round's ratio is of its own
//!     turns, and the median of the rounds' ratios is the result.

use mcp_client::{Client, HttpTransport, HttpTransportConfig};
use mcp_testkit::http_server as server;
use mcp_testkit::{median, per_s};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

struct Params {
    /// Warm-up time per client; also measures the rates that size the rounds.
    warmup: Duration,
    /// A round makes as many calls as the faster client makes in this time (at least 20)...
    round: Duration,
    rounds: usize,
    /// ...and at most this many.
    max_calls: usize,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let p = if full {
        Params {
            warmup: Duration::from_secs(1),
            round: Duration::from_secs(1),
            rounds: 5,
            max_calls: 20_000,
        }
    } else {
        Params {
            warmup: Duration::from_millis(50),
            round: Duration::from_millis(50),
            rounds: 1,
            max_calls: 50,
        }
    };
    if !full {
        println!("(smoke run: pass --bench, as `cargo bench` does, for real numbers)");
    }
    println!(
        "sequential tools/call echo {{\"text\":\"hi\"}} over Streamable HTTP (in-process std server, 127.0.0.1): {} rounds after {:?} of warm-up per client; a round = the calls the faster client makes in {:?}",
        p.rounds, p.warmup, p.round
    );
    for (label, json) in [
        ("SSE (chunked text/event-stream)", false),
        ("JSON (Content-Length)", true),
    ] {
        let srv = server::start(server::Behaviour {
            json,
            ..server::Behaviour::default()
        })
        .expect("listen on 127.0.0.1");
        let modern = server::start(server::Behaviour {
            json,
            modern: true,
            ..server::Behaviour::default()
        })
        .expect("listen on 127.0.0.1");
        println!(
            "server answering with {label}: {} (modern era: {})",
            srv.url, modern.url
        );
        run(&srv.url, &modern.url, &p);
    }
}

fn run(url: &str, modern_url: &str, p: &Params) {
    let mut ours = Ours::start(url);
    let mut base = Baseline::start(url);
    let mut modern = Ours::start(modern_url);
    assert_eq!(modern.client.era(), Some(mcp_client::proto::Era::Modern));
    let rate = |calls: &mut dyn FnMut(usize) -> Duration| {
        let (mut n, mut spent) = (0, Duration::ZERO);
        while spent < p.warmup {
            spent += calls(5);
            n += 5;
        }
        per_s(n, spent)
    };
    let warm = rate(&mut |n| ours.calls(n)).max(rate(&mut |n| base.calls(n)));
    let calls = ((warm * p.round.as_secs_f64()) as usize).clamp(20, p.max_calls);
    println!("  {calls} calls per round");
    let (mut ours_t, mut base_t) = (Vec::new(), Vec::new());
    for round in 0..p.rounds {
        // Alternate the order so that drift (other load on the machine) hits both alike.
        let (o, b) = if round % 2 == 0 {
            let o = ours.calls(calls);
            (o, base.calls(calls))
        } else {
            let b = base.calls(calls);
            (ours.calls(calls), b)
        };
        println!(
            "  round {round}: ours {:>7.0} calls/s   baseline {:>7.0} calls/s",
            per_s(calls, o),
            per_s(calls, b)
        );
        ours_t.push(o);
        base_t.push(b);
    }
    // (f) The modern era, taking turns with (a).
    rate(&mut |n| modern.calls(n));
    let turns = 20;
    let chunk = (calls / turns).max(1);
    let mut paired = Vec::new();
    for round in 0..p.rounds {
        let (mut l, mut m) = (Duration::ZERO, Duration::ZERO);
        for turn in 0..turns {
            if (turn + round) % 2 == 0 {
                l += ours.calls(chunk);
                m += modern.calls(chunk);
            } else {
                m += modern.calls(chunk);
                l += ours.calls(chunk);
            }
        }
        println!(
            "  (f) round {round}: ours {:>7.0} calls/s   ours, modern era {:>7.0} calls/s",
            per_s(chunk * turns, l),
            per_s(chunk * turns, m)
        );
        paired.push((l, m));
    }
    modern.close();
    ours.close();
    let mut raw = RawIsahc::start(url);
    raw.calls(200, false);
    raw.calls(200, true);
    let mut ra = Vec::new();
    let mut rb = Vec::new();
    for _ in 0..p.rounds {
        ra.push(raw.calls(calls, false));
        rb.push(raw.calls(calls, true));
    }
    let x = per_s(calls, median(ra));
    println!("  (x) raw isahc send_async in smol::block_on: {x:>7.0} calls/s");
    println!(
        "  (y) raw isahc blocking send:               {:>7.0} calls/s",
        per_s(calls, median(rb))
    );
    let o = per_s(calls, median(ours_t));
    let b = per_s(calls, median(base_t));
    println!(
        "  (a) ours (Client<HttpTransport>, smol): {o:>7.0} calls/s ({:.1} µs/call)",
        1e6 / o
    );
    println!(
        "  (b) baseline (blocking std, 1 socket):  {b:>7.0} calls/s ({:.1} µs/call)",
        1e6 / b
    );
    println!(
        "  (c) ratio ours/baseline: {:.2}x (medians of calls/s)",
        o / b
    );
    println!(
        "  (d) ratio ours/raw isahc (x): {:.2}x: the rest of the gap is isahc's own cost",
        o / x
    );
    let m = per_s(
        chunk * turns,
        median(paired.iter().map(|(_, m)| *m).collect()),
    );
    let l = per_s(
        chunk * turns,
        median(paired.iter().map(|(l, _)| *l).collect()),
    );
    let mut ratios: Vec<f64> = paired
        .iter()
        .map(|(l, m)| l.as_secs_f64() / m.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    let r = ratios[ratios.len() / 2];
    println!(
        "  (f) ours, modern era:                   {m:>7.0} calls/s ({:.1} µs/call); (a) in turn with it: {l:>7.0} calls/s\n      ratio modern/legacy (f)/(a): {r:.2}x (median of the rounds' ratios; they ranged {:.2}x..{:.2}x): the modern era costs {:.1}% of calls/s",
        1e6 / m,
        ratios[0],
        ratios[ratios.len() - 1],
        (1.0 - r) * 100.0
    );
}

/// Our client.
struct Ours {
    client: Client<HttpTransport>,
}

impl Ours {
    fn start(url: &str) -> Ours {
        let transport = HttpTransport::new(HttpTransportConfig::new(url)).expect("transport");
        let client = Client::new(transport);
        smol::block_on(client.initialize()).expect("initialize");
        Ours { client }
    }

    fn calls(&mut self, n: usize) -> Duration {
        smol::block_on(async {
            let started = Instant::now();
            for _ in 0..n {
                let r = self
                    .client
                    .call_tool("echo", json!({"text": "hi"}))
                    .await
                    .expect("call");
                assert_eq!(r.text(), "hi");
            }
            started.elapsed()
        })
    }

    fn close(self) {
        smol::block_on(self.client.close()).expect("close");
    }
}

/// The minimal blocking client: what a careful hand-written loop over one socket costs.
struct Baseline {
    out: TcpStream,
    reader: BufReader<TcpStream>,
    authority: String,
    path: String,
    session: Option<String>,
    next_id: u64,
    request: Vec<u8>,
    line: String,
    body: Vec<u8>,
}

/// What one response brought.
struct Answer {
    status: u16,
    session: Option<String>,
    content_type: String,
}

impl Baseline {
    fn start(url: &str) -> Baseline {
        let rest = url.strip_prefix("http://").expect("http URL");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let stream = TcpStream::connect(authority).expect("connect");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        let mut b = Baseline {
            out: stream.try_clone().expect("clone the socket"),
            reader: BufReader::with_capacity(64 * 1024, stream),
            authority: authority.to_owned(),
            path: path.to_owned(),
            session: None,
            next_id: 0,
            request: Vec::with_capacity(1024),
            line: String::new(),
            body: Vec::with_capacity(4096),
        };
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "baseline", "version": "0"}
            }
        });
        let answer = b.post(&init.to_string());
        assert_eq!(answer.status, 200);
        b.session = answer.session;
        let message = b.message(&answer.content_type);
        assert!(
            message["result"]["protocolVersion"].is_string(),
            "{message}"
        );
        let answer = b.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(answer.status, 202);
        b
    }

    fn calls(&mut self, n: usize) -> Duration {
        let started = Instant::now();
        for _ in 0..n {
            self.next_id += 1;
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}}}}}}"#,
                self.next_id
            );
            let answer = self.post(&body);
            assert_eq!(answer.status, 200);
            let v = self.message(&answer.content_type);
            assert_eq!(v["id"], self.next_id);
            assert_eq!(v["result"]["content"][0]["text"], "hi", "{v}");
        }
        started.elapsed()
    }

    /// Writes one POST and reads the response; its body is left in `self.body`.
    fn post(&mut self, body: &str) -> Answer {
        self.request.clear();
        let r = &mut self.request;
        write!(
            r,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.authority,
            body.len()
        )
        .unwrap();
        if let Some(s) = &self.session {
            write!(
                r,
                "Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            )
            .unwrap();
        }
        r.extend_from_slice(b"\r\n");
        r.extend_from_slice(body.as_bytes());
        self.out.write_all(&self.request).expect("write");
        self.read_response()
    }

    fn read_line(&mut self) -> &str {
        self.line.clear();
        let n = self.reader.read_line(&mut self.line).expect("read");
        assert!(n > 0, "the server closed the connection");
        self.line.trim_end()
    }

    fn read_response(&mut self) -> Answer {
        let status: u16 = self
            .read_line()
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("status line");
        let (mut length, mut chunked, mut session, mut content_type) =
            (0usize, false, None, String::new());
        loop {
            let line = self.read_line();
            if line.is_empty() {
                break;
            }
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().expect("Content-Length"),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "mcp-session-id" => session = Some(value.to_owned()),
                "content-type" => content_type = value.to_owned(),
                _ => {}
            }
        }
        self.body.clear();
        if chunked {
            loop {
                let size = usize::from_str_radix(self.read_line(), 16).expect("chunk size");
                if size == 0 {
                    self.read_line(); // the empty line after the last chunk (no trailers)
                    break;
                }
                let start = self.body.len();
                self.body.resize(start + size, 0);
                self.reader
                    .read_exact(&mut self.body[start..])
                    .expect("chunk");
                self.read_line(); // CRLF after the chunk
            }
        } else {
            self.body.resize(length, 0);
            self.reader.read_exact(&mut self.body).expect("body");
        }
        Answer {
            status,
            session,
            content_type,
        }
    }

    /// The JSON-RPC message in `self.body`: the body itself, or the `data:` of its one SSE event.
    fn message(&self, content_type: &str) -> Value {
        if content_type.starts_with("text/event-stream") {
            let text = std::str::from_utf8(&self.body).expect("UTF-8");
            let data = text
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .expect("a data line");
            serde_json::from_str(data.trim_start()).expect("JSON")
        } else {
            serde_json::from_slice(&self.body).expect("JSON")
        }
    }
}

struct RawIsahc {
    client: isahc::HttpClient,
    url: String,
    session: Option<String>,
}

impl RawIsahc {
    fn start(url: &str) -> RawIsahc {
        use isahc::config::{Configurable, RedirectPolicy};
        let client = isahc::HttpClient::builder()
            .redirect_policy(RedirectPolicy::None)
            .build()
            .unwrap();
        let mut r = RawIsahc {
            client,
            url: url.to_owned(),
            session: None,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
        let (_, session) = r.post(init.to_string(), true);
        r.session = session;
        r.post(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
            true,
        );
        r
    }
    fn request(&self, body: String) -> isahc::Request<String> {
        let mut b = isahc::Request::builder()
            .method("POST")
            .uri(self.url.as_str())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(s) = &self.session {
            b = b
                .header("Mcp-Session-Id", s.as_str())
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        b.body(body).unwrap()
    }
    fn post(&self, body: String, blocking: bool) -> (String, Option<String>) {
        use isahc::ReadResponseExt;
        let req = self.request(body);
        if blocking {
            let mut resp = self.client.send(req).unwrap();
            let s = resp
                .headers()
                .get("mcp-session-id")
                .map(|v| v.to_str().unwrap().to_owned());
            (resp.text().unwrap(), s)
        } else {
            smol::block_on(async {
                use isahc::AsyncReadResponseExt;
                let mut resp = self.client.send_async(req).await.unwrap();
                let s = resp
                    .headers()
                    .get("mcp-session-id")
                    .map(|v| v.to_str().unwrap().to_owned());
                (resp.text().await.unwrap(), s)
            })
        }
    }
    fn calls(&mut self, n: usize, blocking: bool) -> Duration {
        let started = Instant::now();
        for i in 0..n {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}}}}}}"#,
                i + 1
            );
            let (text, _) = self.post(body, blocking);
            assert!(text.contains("\"hi\""), "{text}");
        }
        started.elapsed()
    }
}
