//! `mcp-testkit-floor --call NAME [--args JSON] [--repeat N] -- COMMAND [ARG...]`: the floor the
//! benchmarks hold the `mcp-client` CLI against — a minimal hand-written blocking MCP client over
//! stdio (legacy era), with no library: `std::process` pipes, one `write_all` + flush per request,
//! `BufRead::read_line` per answer, each answer parsed as a `serde_json::Value` and its first text
//! checked to be there. It prints what the CLI prints with `--repeat`: the last result's text,
//! then `calls/s: R (client CPU C µs/call)` on stderr ([`mcp_testkit::cpu`]).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut name, mut arguments, mut repeat) = (None, json!({}), 1u64);
    let mut command = Vec::new();
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
            "--" => {
                command.extend(args.by_ref());
            }
            other => panic!("unknown argument {other:?}"),
        }
    }
    let name = name.expect("--call NAME");
    assert!(!command.is_empty(), "-- COMMAND [ARG...]");
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the server");
    let mut peer = Peer {
        stdin: child.stdin.take().expect("stdin"),
        stdout: BufReader::with_capacity(64 * 1024, child.stdout.take().expect("stdout")),
        line: String::new(),
        next_id: 0,
    };
    let init = peer.request(
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mcp-testkit-floor", "version": "0"}
        }),
    );
    assert!(init.get("result").is_some(), "initialize failed: {init}");
    peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut calls = |n: u64| -> Value {
        let mut last = Value::Null;
        for _ in 0..n {
            last = peer.request("tools/call", json!({"name": name, "arguments": arguments}));
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
    drop(peer);
    let _ = child.wait();
    ExitCode::SUCCESS
}

/// The server's pipes.
struct Peer {
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    line: String,
    next_id: u64,
}

impl Peer {
    fn send(&mut self, message: &Value) {
        let mut bytes = serde_json::to_vec(message).expect("JSON");
        bytes.push(b'\n');
        self.stdin.write_all(&bytes).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).expect("read");
            assert!(n > 0, "the server closed its stdout");
            let v: Value = serde_json::from_str(&self.line).expect("JSON");
            if v["id"] == id {
                return v;
            }
        }
    }
}
