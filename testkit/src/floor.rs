//! The floor the benchmarks hold our client against: a minimal hand-written blocking MCP client
//! over stdio, with no library — `std::process` pipes, one `write_all` + flush per request,
//! `BufRead::read_line` per answer, each answer parsed as a `serde_json::Value`. What a careful
//! hand-written loop costs. In the legacy era by default; [`Floor::start_modern`] speaks the
//! 2026-07-28 era (no handshake, each request's `_meta` carrying the protocol version, the
//! client's info and capabilities), so that the modern era's own cost (larger messages, the
//! server's work on them) is in its floor too. The binary `mcp-testkit-floor` ([`crate::floor_bin`]) runs it
//! as the CLI runs ours; `benches/stdio.rs` runs it in-process. [`Floor::busy_poll`] makes it
//! look for each answer with non-blocking reads for a moment before it blocks, as our client
//! does on more than one CPU: the floor of that way of waiting.

use serde_json::{json, Value};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A server and the blocking client's pipes to it.
pub struct Floor {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<Stdout>,
    line: String,
    next_id: u64,
    /// In the 2026-07-28 era: each request's `params._meta`.
    modern: Option<Value>,
}

/// The floor's `initialize` params in the legacy era (2025-11-25).
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "mcp-testkit-floor", "version": "0"}
    })
}

/// The `_meta` a 2026-07-28 request carries: the protocol version, the client's info and
/// capabilities (MCP 2026-07-28, Lifecycle: no handshake; every request says them).
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-testkit-floor", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// `params` with `meta` as its `_meta`.
pub fn with_meta(mut params: Value, meta: &Value) -> Value {
    if let Some(map) = params.as_object_mut() {
        map.insert("_meta".into(), meta.clone());
    }
    params
}

impl Floor {
    /// Starts `command args…` (its stderr as `stderr` says) and makes the handshake:
    /// `initialize` (2025-11-25), then `notifications/initialized`.
    pub fn start(command: impl AsRef<OsStr>, args: &[impl AsRef<OsStr>], stderr: Stdio) -> Floor {
        let mut floor = Floor::spawn(command, args, stderr);
        let init = floor.request("initialize", initialize_params());
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        floor.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        floor
    }

    /// Starts `command args…` in the 2026-07-28 era: no handshake, and every request carries
    /// [`modern_meta`].
    pub fn start_modern(
        command: impl AsRef<OsStr>,
        args: &[impl AsRef<OsStr>],
        stderr: Stdio,
    ) -> Floor {
        let mut floor = Floor::spawn(command, args, stderr);
        floor.modern = Some(modern_meta());
        floor
    }

    fn spawn(command: impl AsRef<OsStr>, args: &[impl AsRef<OsStr>], stderr: Stdio) -> Floor {
        let mut child = Command::new(command)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start the server");
        let stdin = child.stdin.take();
        let stdout = Stdout {
            pipe: child.stdout.take().expect("stdout"),
            busy: None,
        };
        let stdout = BufReader::with_capacity(64 * 1024, stdout);
        Floor {
            child,
            stdin,
            stdout,
            line: String::new(),
            next_id: 0,
            modern: None,
        }
    }

    /// From now on, each read of the server's stdout first reads without blocking, again and
    /// again (a spin-loop hint between reads), for up to `limit`, and only then blocks (in
    /// `poll`) until the pipe is readable.
    pub fn busy_poll(&mut self, limit: Duration) {
        let pipe = &self.stdout.get_ref().pipe;
        let flags = rustix::fs::fcntl_getfl(pipe).expect("F_GETFL");
        rustix::fs::fcntl_setfl(pipe, flags | rustix::fs::OFlags::NONBLOCK).expect("F_SETFL");
        self.stdout.get_mut().busy = Some(limit);
    }

    /// Writes one message and its newline, and flushes.
    pub fn send(&mut self, message: &Value) {
        let mut bytes = serde_json::to_vec(message).expect("JSON");
        bytes.push(b'\n');
        let stdin = self.stdin.as_mut().expect("open");
        stdin.write_all(&bytes).expect("write");
        stdin.flush().expect("flush");
    }

    /// Sends a request and reads lines until its answer (others are skipped).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let params = match &self.modern {
            Some(meta) => with_meta(params, meta),
            None => params,
        };
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

    /// `tools/call name arguments`: the whole answer.
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Closes the server's stdin and waits for it to exit.
    pub fn close(mut self) {
        drop(self.stdin.take());
        self.child.wait().expect("wait");
    }
}

/// The server's stdout, read blocking, or busy-polling first ([`Floor::busy_poll`]).
struct Stdout {
    pipe: ChildStdout,
    /// How long a read looks without blocking before it blocks (`None`: it blocks at once).
    busy: Option<Duration>,
}

impl Read for Stdout {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(limit) = self.busy else {
            return self.pipe.read(buf);
        };
        let start = Instant::now();
        loop {
            match self.pipe.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if start.elapsed() < limit {
                        std::hint::spin_loop();
                    } else {
                        let mut fds = [rustix::event::PollFd::new(
                            &self.pipe,
                            rustix::event::PollFlags::IN,
                        )];
                        rustix::event::poll(&mut fds, None)?;
                    }
                }
                other => return other,
            }
        }
    }
}
