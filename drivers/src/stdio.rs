//! The stdio transport: an MCP server as a child process, messages as lines on its stdin/stdout.
//!
//! > "The client launches the MCP server as a subprocess. The server reads JSON-RPC messages from
//! > its standard input (stdin) and sends messages to its standard output (stdout)." … "The server
//! > MAY write UTF-8 strings to its standard error (stderr) for logging purposes."
//! > — MCP 2025-11-25, Transports § stdio
//!
//! Three small tasks move bytes: a writer (queued messages to stdin), a reader (stdout chunks to the
//! client) and a stderr drain (into a bounded tail of lines, optionally forwarded). The child runs in
//! a process group of its own, so that ending it ends whatever it started (`npx` launchers and the
//! like).

use crate::transport::{BoxFuture, Inbound, Transport};
use crate::Error;
use async_process::{Child, Stdio};
use mcp_proto::Transmit;
use smol::channel::{self, Receiver, Sender};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What happens to the lines the server writes to stderr. They are always kept in a bounded tail
/// (see [`StdioConfig::stderr_lines`]) for error reports.
#[derive(Clone, Default)]
pub enum StderrMode {
    /// Only keep the tail.
    #[default]
    Tail,
    /// Also copy each line to this process's stderr.
    Forward,
    /// Also hand each line to a callback.
    Callback(Arc<dyn Fn(&str) + Send + Sync>),
}

impl fmt::Debug for StderrMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StderrMode::Tail => "Tail",
            StderrMode::Forward => "Forward",
            StderrMode::Callback(_) => "Callback",
        })
    }
}

/// How to start a stdio server.
#[derive(Debug, Clone)]
pub struct StdioConfig {
    /// The program, started directly (no shell), looked up in `PATH` like `execvp`.
    pub command: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its working directory (default: ours).
    pub dir: Option<PathBuf>,
    /// Environment entries applied on top of the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// What to do with stderr lines.
    pub stderr: StderrMode,
    /// How many stderr lines to keep for error reports (default 40; each cut at 2 KiB).
    pub stderr_lines: usize,
    /// On close: how long to wait after closing stdin before SIGTERM (default 2 s).
    pub close_grace: Duration,
    /// On close: how long to wait after SIGTERM before SIGKILL (default 2 s).
    pub term_grace: Duration,
}

impl StdioConfig {
    /// A config for `command` with no arguments.
    pub fn new(command: impl Into<OsString>) -> Self {
        StdioConfig {
            command: command.into(),
            args: Vec::new(),
            dir: None,
            env: Vec::new(),
            stderr: StderrMode::Tail,
            stderr_lines: 40,
            close_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
        }
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the working directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Adds an environment entry.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets the stderr mode.
    pub fn stderr(mut self, mode: StderrMode) -> Self {
        self.stderr = mode;
        self
    }
}

/// The longest stderr line kept; the rest of a longer line is dropped.
const STDERR_LINE_MAX: usize = 2048;
/// How many stdout chunks may wait for the client before the reader stops reading.
const INBOUND_QUEUE: usize = 16;

/// A child process speaking MCP over its stdin and stdout. See the [module docs](self).
///
/// [`close`](Transport::close) ends it properly: close stdin, wait [`StdioConfig::close_grace`],
/// SIGTERM the process group, wait [`StdioConfig::term_grace`], SIGKILL the group, reap. Dropping
/// the transport without closing runs the same sequence on a background thread.
pub struct StdioTransport {
    outbound: Mutex<Option<Sender<Vec<u8>>>>,
    inbound: Receiver<Inbound>,
    writer: Mutex<Option<smol::Task<()>>>,
    process: Arc<Process>,
    stderr: Arc<StderrTail>,
    closed: std::sync::atomic::AtomicBool,
    _tasks: [smol::Task<()>; 2],
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("pid", &self.process.pid)
            .finish()
    }
}

/// The child, shared by the reader (for its exit status) and the shutdown sequence.
struct Process {
    child: Mutex<Child>,
    pid: u32,
    close_grace: Duration,
    term_grace: Duration,
}

impl StdioTransport {
    /// Starts the server.
    pub fn spawn(config: StdioConfig) -> Result<Self, Error> {
        let mut std_cmd = std::process::Command::new(&config.command);
        std_cmd.args(&config.args);
        std_cmd.envs(config.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &config.dir {
            std_cmd.current_dir(dir);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // A group of its own: close/drop signal the whole group, grandchildren included.
            std_cmd.process_group(0);
        }
        let mut cmd = async_process::Command::from(std_cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("cannot start {:?}", config.command), e))?;
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => unreachable!("all three pipes were requested"),
            };
        let process = Arc::new(Process {
            pid: child.id(),
            child: Mutex::new(child),
            close_grace: config.close_grace,
            term_grace: config.term_grace,
        });
        let tail = Arc::new(StderrTail::new(config.stderr_lines));

        let (out_tx, out_rx) = channel::unbounded::<Vec<u8>>();
        let writer = smol::spawn(write_loop(stdin, out_rx));
        let (in_tx, in_rx) = channel::bounded(INBOUND_QUEUE);
        let (stderr_done_tx, stderr_done_rx) = channel::bounded::<()>(1);
        let drain = smol::spawn(drain_stderr(
            stderr,
            tail.clone(),
            config.stderr,
            stderr_done_tx,
        ));
        let reader = smol::spawn(read_loop(
            stdout,
            in_tx,
            process.clone(),
            tail.clone(),
            stderr_done_rx,
        ));
        Ok(StdioTransport {
            outbound: Mutex::new(Some(out_tx)),
            inbound: in_rx,
            writer: Mutex::new(Some(writer)),
            process,
            stderr: tail,
            closed: false.into(),
            _tasks: [reader, drain],
        })
    }

    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.process.pid
    }

    /// The last lines the server wrote to stderr, oldest first.
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }
}

impl Transport for StdioTransport {
    fn send(&self, message: Transmit) -> Result<(), Error> {
        match &*lock(&self.outbound) {
            Some(tx) if tx.try_send(message.payload).is_ok() => Ok(()),
            _ => Err(Error::Closed),
        }
    }

    fn recv(&self) -> BoxFuture<'_, Inbound> {
        Box::pin(async move { self.inbound.recv().await.unwrap_or(Inbound::Closed(None)) })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            if self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
                return Ok(());
            }
            // Closing the queue lets the writer flush what is queued, then drop stdin: EOF.
            lock(&self.outbound).take();
            let writer = lock(&self.writer).take();
            if let Some(writer) = writer {
                let grace = self.process.close_grace;
                smol::future::or(writer, async move {
                    smol::Timer::after(grace).await;
                })
                .await;
            }
            let process = self.process.clone();
            smol::unblock(move || process.shutdown()).await;
            Ok(())
        })
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        lock(&self.outbound).take();
        // The writer task drops stdin once its queue is drained; give it the grace period on a
        // thread of its own rather than blocking whoever dropped us.
        let process = self.process.clone();
        let writer = lock(&self.writer).take();
        std::thread::spawn(move || {
            if let Some(writer) = writer {
                let grace = process.close_grace;
                smol::block_on(smol::future::or(writer, async move {
                    smol::Timer::after(grace).await;
                }));
            }
            process.shutdown();
        });
    }
}

impl Process {
    /// Blocking: waits for the child to exit after stdin closed, then SIGTERM, then SIGKILL, to the
    /// whole process group, and reaps the child.
    ///
    /// > "the client SHOULD initiate shutdown by: 1. First, closing the input stream to the child
    /// > process (the server) 2. Waiting for the server to exit, or sending SIGTERM if the server
    /// > does not exit within a reasonable time 3. Sending SIGKILL if the server does not exit within
    /// > a reasonable time after SIGTERM" — MCP 2025-11-25, Lifecycle § Shutdown § stdio
    fn shutdown(&self) {
        let exited = self.wait_exit(self.close_grace).is_some();
        if !exited || self.group_alive() {
            self.signal_group(rustix::process::Signal::TERM);
            let deadline = Instant::now() + self.term_grace;
            while (self.try_status().is_none() || self.group_alive()) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if self.try_status().is_none() || self.group_alive() {
            self.signal_group(rustix::process::Signal::KILL);
            let _ = lock(&self.child).kill();
            // SIGKILL cannot be ignored: the child is reaped as soon as the kernel lets it go.
            self.wait_exit(Duration::from_secs(5));
        }
    }

    fn try_status(&self) -> Option<ExitStatus> {
        lock(&self.child).try_status().ok().flatten()
    }

    /// Polls for the child's exit for up to `limit` (reaping it when it exits).
    fn wait_exit(&self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        let mut pause = Duration::from_millis(1);
        loop {
            if let Some(status) = self.try_status() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    fn pgid(&self) -> Option<rustix::process::Pid> {
        rustix::process::Pid::from_raw(self.pid as i32)
    }

    /// Whether any process of the child's group is left (the reaped child itself no longer counts).
    fn group_alive(&self) -> bool {
        self.pgid()
            .is_some_and(|pgid| rustix::process::test_kill_process_group(pgid).is_ok())
    }

    fn signal_group(&self, signal: rustix::process::Signal) {
        if let Some(pgid) = self.pgid() {
            // ESRCH (nobody left) is the good outcome; nothing else can usefully be done on error.
            let _ = rustix::process::kill_process_group(pgid, signal);
        }
    }
}

async fn write_loop(mut stdin: async_process::ChildStdin, queue: Receiver<Vec<u8>>) {
    let mut buf = Vec::new();
    while let Ok(first) = queue.recv().await {
        buf.clear();
        buf.extend_from_slice(&first);
        buf.push(b'\n');
        // Coalesce whatever else is queued into the same write.
        while let Ok(more) = queue.try_recv() {
            buf.extend_from_slice(&more);
            buf.push(b'\n');
        }
        if stdin.write_all(&buf).await.is_err() || stdin.flush().await.is_err() {
            // The server closed its stdin (it is exiting): the reader reports why.
            break;
        }
    }
    // Dropping stdin here closes the pipe: the server sees end of input.
}

async fn read_loop(
    mut stdout: async_process::ChildStdout,
    inbound: Sender<Inbound>,
    process: Arc<Process>,
    tail: Arc<StderrTail>,
    stderr_done: Receiver<()>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let error = loop {
        match stdout.read(&mut buf).await {
            Ok(0) => break None,
            Ok(n) => {
                if inbound
                    .send(Inbound::Bytes(buf[..n].to_vec()))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Some(Error::io("reading the server's stdout", e)),
        }
    };
    // stdout ended: the server is exiting. Give it a moment to finish, and its stderr to drain,
    // so that the error carries its exit status and last words.
    let status = {
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            if let Some(s) = process.try_status() {
                break Some(s);
            }
            if Instant::now() >= deadline {
                break None;
            }
            smol::Timer::after(Duration::from_millis(5)).await;
        }
    };
    smol::future::or(
        async { stderr_done.recv().await.ok().unwrap_or(()) },
        async {
            smol::Timer::after(Duration::from_millis(200)).await;
        },
    )
    .await;
    let error = error.unwrap_or(Error::ServerExited {
        status,
        stderr: tail.text(),
    });
    let _ = inbound.send(Inbound::Closed(Some(error))).await;
}

/// The last lines of the server's stderr.
struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    max: usize,
}

impl StderrTail {
    fn new(max: usize) -> Self {
        StderrTail {
            lines: Mutex::new(VecDeque::new()),
            max,
        }
    }

    fn push(&self, line: String) {
        if self.max == 0 {
            return;
        }
        let mut lines = lock(&self.lines);
        if lines.len() == self.max {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn text(&self) -> String {
        let lines = lock(&self.lines);
        lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

async fn drain_stderr(
    mut stderr: async_process::ChildStderr,
    tail: Arc<StderrTail>,
    mode: StderrMode,
    _done: Sender<()>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let emit = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line)).into_owned();
        line.clear();
        match &mode {
            StderrMode::Tail => {}
            StderrMode::Forward => eprintln!("{text}"),
            StderrMode::Callback(f) => f(&text),
        }
        tail.push(text);
    };
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for piece in buf[..n].split_inclusive(|&b| b == b'\n') {
            let (body, complete) = match piece.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            // Bounded: the part of a line past STDERR_LINE_MAX is dropped.
            let room = STDERR_LINE_MAX.saturating_sub(line.len());
            line.extend_from_slice(&body[..body.len().min(room)]);
            if complete {
                emit(&mut line);
            }
        }
    }
    if !line.is_empty() {
        emit(&mut line);
    }
}

/// Locks a mutex, ignoring poisoning: every critical section here leaves the data consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
