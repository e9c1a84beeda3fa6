//! `mcp-client --serve`: a minimal MCP server over stdio, std only, for the offline demo, the
//! benchmarks and the driver's tests. `--behave B[,B…]` makes it misbehave on purpose.

use crate::tools;
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::process::ExitCode;

#[derive(Default)]
struct Behaviour {
    crash_on_call: bool,
    hang: bool,
    stderr_flood: usize,
    junk: bool,
    ping_first: bool,
    ignore_eof: bool,
    ping_idle: bool,
    threaded: bool,
}

/// Collects what is written and hands it to the writer thread at each flush (`threaded` mode, in
/// which call threads answer on their own, out of order).
struct ChannelWriter {
    buf: Vec<u8>,
    tx: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Write for ChannelWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            self.tx
                .send(std::mem::take(&mut self.buf))
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        }
        Ok(())
    }
}

pub fn main(args: Vec<std::ffi::OsString>) -> ExitCode {
    let mut b = Behaviour::default();
    let mut args = args.into_iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--behave" => {
                for name in args.next().unwrap_or_default().split(',') {
                    match name {
                        "crash-on-call" => b.crash_on_call = true,
                        "hang" => b.hang = true,
                        "stderr-flood" => b.stderr_flood = 20 * 1024 * 1024,
                        "junk" => b.junk = true,
                        "ping-first" => b.ping_first = true,
                        "ignore-eof" => b.ignore_eof = true,
                        "ping-idle" => b.ping_idle = true,
                        "threaded" => b.threaded = true,
                        "exit-before-handshake" => {
                            eprintln!("serve: exiting before the handshake, on purpose");
                            return ExitCode::from(4);
                        }
                        other => {
                            eprintln!("serve: unknown behaviour {other:?}");
                            return ExitCode::from(1);
                        }
                    }
                }
            }
            other => {
                eprintln!("serve: unexpected argument {other:?}");
                return ExitCode::from(1);
            }
        }
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let mut out: Box<dyn Write> = if b.threaded {
        std::thread::spawn(move || {
            let mut stdout = std::io::stdout().lock();
            for bytes in rx {
                if stdout
                    .write_all(&bytes)
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    return;
                }
            }
        });
        Box::new(ChannelWriter {
            buf: Vec::new(),
            tx: tx.clone(),
        })
    } else {
        drop(rx);
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    };
    let mut line = String::new();
    // A line read ahead (by `ping-idle`) that still has to be handled.
    let mut pending: Option<String> = None;
    loop {
        line.clear();
        if let Some(ahead) = pending.take() {
            line = ahead;
        } else {
            match input.read_line(&mut line) {
                Ok(0) | Err(_) if b.ignore_eof => loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                },
                Ok(0) | Err(_) => return ExitCode::SUCCESS,
                Ok(_) => {}
            }
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            eprintln!("serve: ignoring a line that is not JSON");
            continue;
        };
        let method = msg["method"].as_str().unwrap_or_default();
        let id = msg.get("id").cloned();
        let Some(id) = id else {
            if method == "notifications/cancelled" {
                eprintln!("serve: cancelled {}", msg["params"]["requestId"]);
            }
            continue;
        };
        if method.is_empty() {
            // An answer to one of our requests.
            if id == "idle-ping" {
                eprintln!("serve: idle pong {}", line.trim_end());
            }
            continue;
        }
        let reply = match method {
            "initialize" => {
                let asked = msg["params"]["protocolVersion"]
                    .as_str()
                    .unwrap_or("2025-11-25");
                let version =
                    if ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"].contains(&asked) {
                        asked
                    } else {
                        "2025-11-25"
                    };
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "mcp-client-serve", "version": env!("CARGO_PKG_VERSION")}
                }))
            }
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools::list()})),
            "tools/call" if b.threaded => {
                // Each call on a thread of its own: slow calls answer after faster later ones.
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let response = match tools::call(&msg["params"], "") {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
                    };
                    let _ = tx.send(format!("{response}\n").into_bytes());
                });
                continue;
            }
            "tools/call" => {
                if b.crash_on_call {
                    eprintln!("serve: crashing mid-call, on purpose");
                    std::process::exit(3);
                }
                if b.hang {
                    eprintln!("serve: not answering call {id}, on purpose");
                    continue;
                }
                if b.stderr_flood > 0 {
                    let chunk = "flood flood flood flood flood flood flood flood flood flood\n"
                        .repeat(1024);
                    let mut err = std::io::stderr().lock();
                    let mut written = 0;
                    while written < b.stderr_flood {
                        if err.write_all(chunk.as_bytes()).is_err() {
                            break;
                        }
                        written += chunk.len();
                    }
                    let _ = writeln!(err, "serve: flooded {written} bytes");
                }
                if b.junk {
                    let _ = out.write_all(
                        b"this is not JSON\n\x1b[31mnor this\x1b[0m\n[1,2\n{\"hello\":\"world\"}\n",
                    );
                }
                let mut extra = String::new();
                if b.ping_first {
                    extra = ask_client(&mut input, &mut out);
                }
                tools::call(&msg["params"], &extra)
            }
            other => Err(json!({"code": -32601, "message": format!("Method not found: {other}")})),
        };
        let response = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        if serde_json::to_writer(&mut out, &response).is_err()
            || out.write_all(b"\n").is_err()
            || out.flush().is_err()
        {
            return ExitCode::SUCCESS;
        }
        if b.ping_idle && method == "tools/call" {
            // Between calls: ping the client and report when (and whether) it answers.
            std::thread::sleep(std::time::Duration::from_millis(100));
            let _ =
                out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"idle-ping\",\"method\":\"ping\"}\n");
            let _ = out.flush();
            let mut next = String::new();
            if input.read_line(&mut next).unwrap_or(0) > 0 {
                let answered = serde_json::from_str::<Value>(&next)
                    .is_ok_and(|v| v["id"] == "idle-ping" && v.get("method").is_none());
                if answered {
                    eprintln!("serve: idle pong {}", next.trim_end());
                } else {
                    eprintln!("serve: no idle pong before the next message");
                    pending = Some(next);
                }
            }
        }
    }
}

/// Sends the client a ping and a request it does not implement; returns what it answered.
fn ask_client(input: &mut impl BufRead, out: &mut impl Write) -> String {
    let _ = out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"srv-ping\",\"method\":\"ping\"}\n");
    let _ = out.write_all(
        b"{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"sampling/createMessage\",\"params\":{}}\n",
    );
    let _ = out.flush();
    let mut answers = Vec::new();
    let mut line = String::new();
    while answers.len() < 2 {
        line.clear();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            if v.get("method").is_none() {
                answers.push(v.to_string());
            }
        }
    }
    answers.join("\n")
}
