//! Framing + dispatch throughput of a `Session`, against plain `serde_json` parsing of the same
//! messages, and the linear cost of one huge line. std only: `Instant` and medians.
//!
//! `cargo bench --bench framing`. Run without `--bench` (as `cargo test --benches` does) it only
//! smoke-tests itself on small inputs.
//!
//! (a) A `Session` with one pending `tools/call` per response is fed realistic server traffic
//!     (tool results of varied sizes modelled on tests/transcripts/everything-stdio.out, with log
//!     notifications and pings interleaved) in 4 KiB chunks; every response is decoded into a
//!     `CallToolResult`.
//! (b) `serde_json::from_slice::<Value>` of the same messages, one line at a time.
//! (c) One response whose text is 5 MiB and then 50 MiB, fed in 4 KiB chunks: time per byte should
//!     not grow with size.

use mcp_proto::{Config, Event, Reply, Session};
use mcp_testkit::median;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::{Duration, Instant};

const CHUNK: usize = 4096;
const MIB: usize = 1024 * 1024;

const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"bench","version":"0"}}}"#;

struct Params {
    traffic_bytes: usize,
    reps: usize,
    big_sizes: [usize; 2],
    big_reps: usize,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let p = if full {
        Params {
            traffic_bytes: 16 * MIB,
            reps: 9,
            big_sizes: [5 * MIB, 50 * MIB],
            big_reps: 5,
        }
    } else {
        Params {
            traffic_bytes: 256 * 1024,
            reps: 1,
            big_sizes: [64 * 1024, 640 * 1024],
            big_reps: 1,
        }
    };
    if !full {
        println!("(smoke run: pass --bench, as `cargo bench` does, for real numbers)");
    }

    let (traffic, lines, responses) = traffic(p.traffic_bytes);
    let traffic: &[u8] = traffic;
    let mib = traffic.len() as f64 / MIB as f64;
    println!(
        "traffic: {:.1} MiB, {} lines, {} tools/call responses, fed in {} B chunks; median of {} runs",
        mib,
        lines.len(),
        responses,
        CHUNK,
        p.reps
    );

    let mut ours = Vec::new();
    let mut serde = Vec::new();
    for _ in 0..p.reps {
        // Interleaved, so that both see the same machine load.
        ours.push(session_run(traffic, responses));
        serde.push(serde_run(&lines));
    }
    let ours = median(ours);
    let serde = median(serde);
    let ours_mbs = mb_per_s(traffic.len(), ours);
    let serde_mbs = mb_per_s(traffic.len(), serde);
    println!(
        "(a) session framing + dispatch: {:8.1} MB/s  ({:.1} ms)",
        ours_mbs,
        ms(ours)
    );
    println!(
        "(b) serde_json::from_slice::<Value> per line: {:8.1} MB/s  ({:.1} ms)",
        serde_mbs,
        ms(serde)
    );
    println!("    ratio ours/serde: {:.2}", ours_mbs / serde_mbs);

    println!(
        "(c) one tools/call response with a huge text, {} B chunks; median of {} runs",
        CHUNK, p.big_reps
    );
    for size in p.big_sizes {
        let line = big_response(size);
        let runs = (0..p.big_reps).map(|_| big_run(&line, size)).collect();
        let t = median(runs);
        println!(
            "    {:5.1} MiB text ({} B line): {:8.1} MB/s  ({:.1} ms, {:.3} ns/byte)",
            size as f64 / MIB as f64,
            line.len(),
            mb_per_s(line.len(), t),
            ms(t),
            t.as_nanos() as f64 / line.len() as f64
        );
    }
}

/// MB/s in units of 10^6 bytes.
fn mb_per_s(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / 1e6 / t.as_secs_f64()
}

fn ms(t: Duration) -> f64 {
    t.as_secs_f64() * 1e3
}

/// A session past its handshake with `calls` pending `tools/call` requests (ids 1..=calls).
fn ready_session(calls: usize) -> (Session, Instant) {
    let now = Instant::now();
    // The legacy era: the answer below is `initialize`'s (with `Auto`, the first request would be
    // the era probe, and this answer no discover result).
    let mut s = Session::new(Config {
        era: mcp_proto::EraChoice::Legacy,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    s.handle_bytes(format!("{INIT_RESULT}\n").as_bytes(), now);
    while s.poll_transmit().is_some() {}
    assert_eq!(s.poll_event(), Some(Event::Ready));
    for i in 0..calls {
        let id = s.call_tool("echo", json!({ "message": i }), now).unwrap();
        assert_eq!(id.0, i as u64 + 1);
    }
    while s.poll_transmit().is_some() {}
    (s, now)
}

/// Feeds `bytes` in 4 KiB chunks, draining after each; returns the number of successful replies.
fn feed(s: &mut Session, bytes: &[u8], now: Instant) -> usize {
    let mut ok = 0;
    for chunk in bytes.chunks(CHUNK) {
        s.handle_bytes(chunk, now);
        while let Some(t) = s.poll_transmit() {
            black_box(t);
        }
        while let Some(e) = s.poll_event() {
            if let Event::Response {
                result: Ok(reply), ..
            } = e
            {
                black_box(reply);
                ok += 1;
            }
        }
    }
    ok
}

fn session_run(traffic: &[u8], responses: usize) -> Duration {
    let (mut s, now) = ready_session(responses);
    let start = Instant::now();
    let ok = feed(&mut s, traffic, now);
    let t = start.elapsed();
    assert_eq!(ok, responses, "every response decoded");
    assert_eq!(s.pending_requests(), 0);
    t
}

fn serde_run(lines: &[&[u8]]) -> Duration {
    let start = Instant::now();
    for l in lines {
        black_box(serde_json::from_slice::<Value>(black_box(l)).unwrap());
    }
    start.elapsed()
}

/// A tiny deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "the",
    "tool",
    "returned",
    "result",
    "file",
    "src/main.rs",
    "line",
    "error:",
    "warning",
    "fn",
    "let",
    "struct",
    "é",
    "→",
    "\"quoted\"",
    "path\\to",
    "\t",
    "42",
    "ok",
    "données",
    "✓",
];

/// Prose-like text with escapes and non-ASCII, about `len` bytes.
fn text(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.below(12) == 0 { '\n' } else { ' ' });
    }
    s
}

/// Recorded tools/call results (everything-stdio transcript), re-used as templates.
fn recorded_results() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/transcripts/everything-stdio.out"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("result").cloned())
        .filter(|r| r.get("content").is_some())
        .collect()
}

/// Realistic stdio traffic of about `target` bytes: one response per pending call (ids from 1), in
/// order, with notifications and pings in between. Returns the buffer, its lines and the number of
/// responses.
fn traffic(target: usize) -> (&'static [u8], Vec<&'static [u8]>, usize) {
    let recorded = recorded_results();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut buf = Vec::with_capacity(target + 256 * 1024);
    let mut id = 0u64;
    while buf.len() < target {
        id += 1;
        let roll = rng.below(100);
        let result = if roll < 20 && !recorded.is_empty() {
            recorded[rng.below(recorded.len() as u64) as usize].clone()
        } else {
            // 55% small, 35% medium, 10% large text content.
            let size = match rng.below(100) {
                0..55 => 20 + rng.below(400) as usize,
                55..90 => 1024 + rng.below(8 * 1024) as usize,
                _ => 16 * 1024 + rng.below(112 * 1024) as usize,
            };
            let mut r = json!({ "content": [{ "type": "text", "text": text(&mut rng, size) }] });
            if rng.below(10) == 0 {
                r["structuredContent"] = json!({ "ok": true, "count": size, "tags": ["a", "b"] });
            }
            if rng.below(20) == 0 {
                r["isError"] = json!(true);
            }
            r
        };
        // Servers differ in member order; the recorded one puts "result" first.
        let msg = if id % 2 == 0 {
            json!({ "jsonrpc": "2.0", "id": id, "result": result })
        } else {
            json!({ "result": result, "jsonrpc": "2.0", "id": id })
        };
        serde_json::to_writer(&mut buf, &msg).unwrap();
        buf.push(b'\n');
        if rng.below(4) == 0 {
            let n = json!({"jsonrpc":"2.0","method":"notifications/message",
                "params":{"level":"info","logger":"server","data":text(&mut rng, 80)}});
            serde_json::to_writer(&mut buf, &n).unwrap();
            buf.push(b'\n');
        }
        if rng.below(20) == 0 {
            let p = json!({"jsonrpc":"2.0","id":format!("srv-{id}"),"method":"ping"});
            serde_json::to_writer(&mut buf, &p).unwrap();
            buf.push(b'\n');
        }
        if rng.below(50) == 0 {
            let p = json!({"jsonrpc":"2.0","method":"notifications/progress",
                "params":{"progressToken":id,"progress":50,"total":100}});
            serde_json::to_writer(&mut buf, &p).unwrap();
            buf.push(b'\n');
        }
    }
    let buf: &'static [u8] = Vec::leak(buf);
    let lines = buf
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    (buf, lines, id as usize)
}

/// One `tools/call` response (id 1) whose text is `size` bytes, with its newline.
fn big_response(size: usize) -> Vec<u8> {
    let mut line =
        br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#.to_vec();
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    line.extend((0..size).map(|i| alphabet[(i * 7 + i / 64) % 64]));
    line.extend_from_slice(br#""}]}}"#);
    line.push(b'\n');
    line
}

fn big_run(line: &[u8], size: usize) -> Duration {
    let (mut s, now) = ready_session(1);
    let start = Instant::now();
    let mut got = None;
    for chunk in line.chunks(CHUNK) {
        s.handle_bytes(chunk, now);
        while let Some(e) = s.poll_event() {
            got = Some(e);
        }
    }
    let t = start.elapsed();
    match got {
        Some(Event::Response {
            result: Ok(Reply::ToolCall(r)),
            ..
        }) => match &r.content[..] {
            [mcp_proto::ContentBlock::Text { text }] => assert_eq!(text.len(), size),
            other => panic!("unexpected content {other:?}"),
        },
        other => panic!("unexpected outcome {other:?}"),
    }
    t
}
