//! The stdio transport: an MCP server as a child process, messages as lines on its stdin/stdout.
//!
//! > "The client launches the MCP server as a subprocess. The server reads JSON-RPC messages from
//! > its standard input (stdin) and sends messages to its standard output (stdout)." … "The server
//! > MAY write UTF-8 strings to its standard error (stderr) for logging purposes."
//! > — MCP 2025-11-25, Transports § stdio
//!
//! Messages are written straight to the child's stdin from [`send`](Transport::send) while the pipe
//! takes them; what it does not take waits in a backlog that a writer task drains, in order.
//! [`recv`](Transport::recv) reads stdout directly. A stderr task drains stderr continuously into a
//! bounded tail of lines (optionally forwarded). The child runs in a process group of its own, so
//! that ending it ends whatever it started (`npx` launchers and the like).

use crate::transport::{BoxFuture, Inbound, Transport};
use crate::Error;
use async_io::Async;
use async_process::{Child, Stdio};
use mcp_proto::Transmit;
use smol::channel::{self, Receiver, Sender};
use smol::io::AsyncReadExt;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io::IoSlice;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
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
/// The most bytes one read of stdout takes.
const READ_CHUNK: usize = 64 * 1024;

/// A child process speaking MCP over its stdin and stdout. See the [module docs](self).
///
/// [`close`](Transport::close) ends it properly: close stdin, wait [`StdioConfig::close_grace`],
/// SIGTERM the process group, wait [`StdioConfig::term_grace`], SIGKILL the group, reap. Dropping
/// the transport without closing runs the same sequence on a background thread.
pub struct StdioTransport {
    writer: Arc<Writer>,
    stdout: Async<OwnedFd>,
    read_buf: smol::lock::Mutex<Vec<u8>>,
    eof: AtomicBool,
    stderr_done: Receiver<()>,
    process: Arc<Process>,
    stderr: Arc<StderrTail>,
    closed: AtomicBool,
    _tasks: [smol::Task<()>; 2],
}

/// The child's stdin and what it has not taken yet.
struct Writer {
    state: Mutex<WriteState>,
    /// Wakes the writer task when the backlog fills.
    wake: Sender<()>,
}

struct WriteState {
    /// `None` once closed (dropping the last handle closes the pipe: the server sees EOF).
    stdin: Option<Arc<Async<OwnedFd>>>,
    /// Bytes the pipe did not take yet, in order.
    backlog: Vec<u8>,
    /// The writer task holds a part of the backlog it is writing.
    busy: bool,
    /// Writing failed (the server closed its stdin): later messages are dropped.
    broken: bool,
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
        let pipe = |fd: Result<OwnedFd, std::io::Error>| {
            fd.and_then(Async::new)
                .map_err(|e| Error::io("setting up the server's pipes", e))
        };
        let stdin = pipe(OwnedFd::try_from(stdin))?;
        let stdout = pipe(OwnedFd::try_from(stdout))?;
        let process = Arc::new(Process {
            pid: child.id(),
            child: Mutex::new(child),
            close_grace: config.close_grace,
            term_grace: config.term_grace,
        });
        let tail = Arc::new(StderrTail::new(config.stderr_lines));
        let (wake, woken) = channel::bounded(1);
        let writer = Arc::new(Writer {
            state: Mutex::new(WriteState {
                stdin: Some(Arc::new(stdin)),
                backlog: Vec::new(),
                busy: false,
                broken: false,
            }),
            wake,
        });
        let write_task = smol::spawn(drain_backlog(writer.clone(), woken));
        let (stderr_done_tx, stderr_done) = channel::bounded::<()>(1);
        let drain = smol::spawn(drain_stderr(
            stderr,
            tail.clone(),
            config.stderr,
            stderr_done_tx,
        ));
        Ok(StdioTransport {
            writer,
            stdout,
            read_buf: smol::lock::Mutex::new(vec![0; READ_CHUNK]),
            eof: AtomicBool::new(false),
            stderr_done,
            process,
            stderr: tail,
            closed: AtomicBool::new(false),
            _tasks: [write_task, drain],
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
        self.writer.send(&message.payload)
    }

    fn recv(&self) -> BoxFuture<'_, Inbound> {
        Box::pin(async move {
            if self.eof.load(Ordering::SeqCst) {
                return Inbound::Closed(None);
            }
            let mut buf = self.read_buf.lock().await;
            let read = self
                .stdout
                .read_with(|fd| rustix::io::read(fd, &mut buf[..]).map_err(std::io::Error::from))
                .await;
            match read {
                Ok(0) => {}
                Ok(n) => return Inbound::Bytes(buf[..n].to_vec()),
                Err(e) => {
                    self.eof.store(true, Ordering::SeqCst);
                    return Inbound::Closed(Some(Error::io("reading the server's stdout", e)));
                }
            }
            // stdout ended: the server is exiting. Give it a moment to finish, and its stderr to
            // drain, so that the error carries its exit status and last words.
            self.eof.store(true, Ordering::SeqCst);
            let status = {
                let deadline = Instant::now() + Duration::from_millis(500);
                loop {
                    if let Some(s) = self.process.try_status() {
                        break Some(s);
                    }
                    if Instant::now() >= deadline {
                        break None;
                    }
                    smol::Timer::after(Duration::from_millis(5)).await;
                }
            };
            smol::future::or(
                async { self.stderr_done.recv().await.unwrap_or(()) },
                async {
                    smol::Timer::after(Duration::from_millis(200)).await;
                },
            )
            .await;
            Inbound::Closed(Some(Error::ServerExited {
                status,
                stderr: self.stderr.text(),
            }))
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            if self.closed.swap(true, Ordering::SeqCst) {
                return Ok(());
            }
            // What is queued goes out first (bounded by the grace period), then stdin closes: EOF.
            let deadline = Instant::now() + self.process.close_grace;
            while !self.writer.flushed() && Instant::now() < deadline {
                smol::Timer::after(Duration::from_millis(2)).await;
            }
            self.writer.close();
            let process = self.process.clone();
            smol::unblock(move || process.shutdown()).await;
            Ok(())
        })
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        // Close stdin now, and end the server on a thread of its own rather than blocking whoever
        // dropped us.
        self.writer.close();
        let process = self.process.clone();
        std::thread::spawn(move || process.shutdown());
    }
}

impl Writer {
    /// Writes one message and its newline straight to the pipe when nothing waits before it;
    /// queues what the pipe does not take.
    fn send(&self, payload: &[u8]) -> Result<(), Error> {
        let mut st = lock(&self.state);
        let Some(stdin) = st.stdin.clone() else {
            return Err(Error::Closed);
        };
        if st.broken {
            // The server stopped reading; the reading side reports why.
            return Ok(());
        }
        let mut written = 0;
        if st.backlog.is_empty() && !st.busy {
            let slices = [IoSlice::new(payload), IoSlice::new(b"\n")];
            match rustix::io::writev(stdin.get_ref(), &slices) {
                Ok(n) => written = n,
                Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => {
                    st.broken = true;
                    return Ok(());
                }
            }
        }
        let total = payload.len() + 1;
        if written < total {
            if written < payload.len() {
                st.backlog.extend_from_slice(&payload[written..]);
            }
            st.backlog.push(b'\n');
            let _ = self.wake.try_send(());
        }
        Ok(())
    }

    /// Whether everything sent has been written to the pipe.
    fn flushed(&self) -> bool {
        let st = lock(&self.state);
        st.broken || (st.backlog.is_empty() && !st.busy)
    }

    /// Drops our handle on stdin; the pipe closes once the writer task lets go of it too.
    fn close(&self) {
        let mut st = lock(&self.state);
        st.stdin = None;
        st.backlog.clear();
        let _ = self.wake.try_send(());
    }
}

/// Writes the backlog whenever the pipe could not take a message at once.
async fn drain_backlog(writer: Arc<Writer>, woken: Receiver<()>) {
    while woken.recv().await.is_ok() {
        loop {
            let (stdin, chunk) = {
                let mut st = lock(&writer.state);
                match st.stdin.clone() {
                    Some(stdin) if !st.backlog.is_empty() && !st.broken => {
                        st.busy = true;
                        (stdin, std::mem::take(&mut st.backlog))
                    }
                    _ => {
                        st.busy = false;
                        break;
                    }
                }
            };
            let mut off = 0;
            while off < chunk.len() {
                let n = stdin
                    .write_with(|fd| {
                        rustix::io::write(fd, &chunk[off..]).map_err(std::io::Error::from)
                    })
                    .await;
                match n {
                    Ok(n) => off += n,
                    Err(_) => {
                        lock(&writer.state).broken = true;
                        break;
                    }
                }
            }
            drop(stdin);
            lock(&writer.state).busy = false;
        }
        if lock(&writer.state).stdin.is_none() {
            return;
        }
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
