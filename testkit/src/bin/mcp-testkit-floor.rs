//! `mcp-testkit-floor --call NAME [--args JSON] [--repeat N] [--busy-poll MICROS] [--era
//! legacy|modern] (-- COMMAND [ARG...] | --url URL)`:
//! the floor the benchmarks hold the `mcp-client` CLI against — over stdio
//! [`mcp_testkit::floor::Floor`], a minimal hand-written blocking MCP client with no library; over
//! Streamable HTTP [`mcp_testkit::http_floor::HttpFloor`], the same exchanges through bare isahc's
//! blocking API. `--busy-poll MICROS` (stdio): each read looks without blocking for up to that
//! long before it blocks ([`Floor::busy_poll`]). Each answer's first text is checked to be there. It prints what the CLI prints with `--repeat`: the last result's text,
//! then `calls/s: R (client CPU C µs/call)` on stderr ([`mcp_testkit::cpu`]).

use mcp_testkit::floor::Floor;
use mcp_testkit::http_floor::HttpFloor;
use serde_json::{json, Value};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut name, mut arguments, mut repeat) = (None, json!({}), 1u64);
    let mut command = Vec::new();
    let mut url = None;
    let mut busy = None;
    let mut modern = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--call" => name = args.next(),
            "--args" => {
                arguments =
                    serde_json::from_str(&args.next().unwrap_or_default()).expect("--args is JSON")
            }
            "--repeat" => {
                repeat = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--repeat N")
            }
            "--url" => url = args.next(),
            "--era" => match args.next().as_deref() {
                Some("modern") => modern = true,
                Some("legacy") => modern = false,
                other => panic!("--era legacy|modern, not {other:?}"),
            },
            "--busy-poll" => {
                busy = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .map(Duration::from_micros);
                assert!(busy.is_some(), "--busy-poll MICROS");
            }
            "--" => {
                command.extend(args.by_ref());
            }
            other => panic!("unknown argument {other:?}"),
        }
    }
    let name = name.expect("--call NAME");
    let mut peer = match url {
        Some(url) if modern => Peer::Http(HttpFloor::start_modern(&url)),
        Some(url) => Peer::Http(HttpFloor::start(&url)),
        None => {
            assert!(!command.is_empty(), "-- COMMAND [ARG...] or --url URL");
            let mut floor = if modern {
                Floor::start_modern(&command[0], &command[1..], Stdio::inherit())
            } else {
                Floor::start(&command[0], &command[1..], Stdio::inherit())
            };
            if let Some(limit) = busy {
                floor.busy_poll(limit);
            }
            Peer::Stdio(floor)
        }
    };
    let mut calls = |n: u64| -> Value {
        let mut last = Value::Null;
        for _ in 0..n {
            let params = json!({"name": name, "arguments": arguments});
            last = match &mut peer {
                Peer::Stdio(p) => p.request("tools/call", params),
                Peer::Http(p) => p.request("tools/call", params),
            };
            assert!(
                last["result"]["content"][0]["text"].is_string(),
                "no text in {last}"
            );
        }
        last
    };
    let cpu0 = mcp_testkit::cpu::process_cpu();
    let started = Instant::now();
    let last = calls(repeat);
    let elapsed = started.elapsed();
    let cpu = mcp_testkit::cpu::process_cpu().saturating_sub(cpu0);
    println!(
        "{}",
        last["result"]["content"][0]["text"].as_str().unwrap_or("")
    );
    if repeat > 1 {
        eprintln!(
            "calls/s: {:.1} (client CPU {:.2} µs/call)",
            repeat as f64 / elapsed.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / repeat as f64
        );
    }
    if let Peer::Stdio(p) = peer {
        p.close();
    }
    ExitCode::SUCCESS
}

/// The server the floor talks to.
enum Peer {
    Stdio(Floor),
    Http(HttpFloor),
}
