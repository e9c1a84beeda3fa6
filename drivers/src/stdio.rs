//! The stdio transport: an MCP server as a child process, messages as lines on its stdin/stdout.
//!
//! > "The client launches the MCP server as a subprocess. The server reads JSON-RPC messages from
//! > its standard input (stdin) and sends messages to its standard output (stdout)." … "The server
//! > MAY write UTF-8 strings to its standard error (stderr) for logging purposes."
//! > — MCP 2025-11-25, Transports § stdio
//!
//! Messages are written straight to the child's stdin from [`send`](Transport::send) while the pipe
//! takes them; what it does not take waits in a bounded backlog that a writer task drains, in
//! order. [`try_recv`](Transport::try_recv) reads stdout directly, without waiting. A stderr task drains stderr continuously into a
//! bounded tail of lines (optionally forwarded). The child runs in a process group of its own, so
//! that ending it ends whatever it started (`npx` launchers and the like).
//!
//! Reading: stdout is read into one buffer, which is handed on through its last line end
//! ([`Chunk::lent`]: the session parses the bytes where they landed) and comes back for the next
//! read. A line not yet ended is held, and read on into the same buffer, growing it, until its
//! line end: a large message reaches the session in one piece, read once into one allocation
//! that the next large message reuses. Capped: at most the session's frame limit
//! ([`mcp_proto::Config::frame_limit`], which the client tells the transport:
//! [`Transport::set_frame_limit`]) of one line is held; the rest of a longer line is handed on as
//! it comes, and the session's framer applies the limit (the line is refused, its request fails
//! with `TooLarge`, the connection goes on). The buffer's allocation is kept while the lines
//! handed on fill at least a quarter of it: the first short line after a large one releases it.
//!
//! # Closing, and what outlives the program
//!
//! [`close`](Transport::close) closes stdin, waits, sends SIGTERM, waits, sends SIGKILL (2 s each
//! by default: [`StdioConfig::close_grace`], [`StdioConfig::term_grace`]) to the server's whole
//! process group — a launcher (`npx`, `uvx`, `sh -c`) and the real server it started alike — and
//! reaps it; a dropped transport does the same in the background. A program that drops clients without `close().await` and exits
//! right after can call [`wait_for_shutdowns`] first; one that must stop at once (a second
//! Ctrl-C) can SIGKILL every server's group with [`kill_all`]. If the program exits before that, or
//! crashes, only the process started is killed (on Linux, `PR_SET_PDEATHSIG`, from one long-lived
//! spawner thread): a launcher's own children outlive it, since nothing alive is left to signal
//! them; covering that would take a supervisor process per server or making the application a
//! subreaper, neither a library's to impose. The process group is only signalled while its leader
//! is unreaped, so a reused pid is never hit. Process groups and signals are Unix-only.

use crate::sync::{lock, Waiters, Waiting};
use crate::transport::{BoxFuture, Chunk, Home, Inbound, Transport};
use crate::Error;
use async_io::Async;
use async_process::{Child, Stdio};
use mcp_proto::{RequestId, Transmit, TransmitKind};
use smol::channel::{self, Receiver, Sender};
use smol::io::AsyncReadExt;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io::IoSlice;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// What happens to the lines the server writes to stderr. They are always kept in a bounded tail
/// (see [`StdioConfig::stderr_lines`]) for error reports.
#[derive(Clone, Default)]
pub enum StderrMode {
    /// Only keep the tail.
    #[default]
    Tail,
    /// Also copy each line to this process's stderr, its control characters escaped
    /// ([`mcp_proto::terminal::line`]): a server never writes escape sequences to the terminal.
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

/// How to start a stdio server. Its `Debug` shows environment variable names, not their values.
#[derive(Clone)]
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
    /// On close: how long to wait after SIGTERM before SIGKILL (default 2 s). Both graces are
    /// clamped to a day.
    pub term_grace: Duration,
    /// The most bytes queued for a server that does not read its stdin fast enough (default
    /// 64 MiB). Past it the connection fails: every waiting call ends with an error saying the
    /// server stopped reading. One message larger than the cap still goes out when nothing waits
    /// before it.
    pub max_backlog: usize,
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, _)| format!("{}=…", k.to_string_lossy()))
            .collect();
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("dir", &self.dir)
            .field("env", &env)
            .field("stderr", &self.stderr)
            .field("stderr_lines", &self.stderr_lines)
            .field("close_grace", &self.close_grace)
            .field("term_grace", &self.term_grace)
            .field("max_backlog", &self.max_backlog)
            .finish()
    }
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
            max_backlog: 64 * 1024 * 1024,
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
/// The read buffer's size between large lines (a pipe's default capacity).
const READ_CHUNK: usize = 64 * 1024;
/// The most bytes of one line the transport holds while waiting for its end, until the client
/// tells it the session's frame limit ([`Transport::set_frame_limit`]), which it then follows:
/// the default frame limit. A longer line is handed on as it comes, for the session's framer to
/// refuse.
pub const HOLD_MAX: usize = mcp_proto::framing::DEFAULT_FRAME_LIMIT;
/// After stdout ends: how long to wait for the exit status, then for stderr to drain.
const EXIT_WAIT: Duration = Duration::from_millis(500);
const STDERR_WAIT: Duration = Duration::from_millis(200);
/// After writing to stdin failed: how long the server has to turn out to have exited (then its
/// exit is the reason) before the failure is.
const WRITE_FAILURE_WAIT: Duration = Duration::from_millis(100);
/// Grace periods are clamped to this (a day), so that `Instant + grace` cannot overflow.
const MAX_GRACE: Duration = Duration::from_secs(24 * 3600);

/// A child process speaking MCP over its stdin and stdout. See the [module docs](self).
///
/// [`close`](Transport::close) ends it properly: close stdin, wait [`StdioConfig::close_grace`],
/// SIGTERM the process group, wait [`StdioConfig::term_grace`], SIGKILL the group, reap. Dropping
/// the transport without closing (or dropping a `close()` future before it finished) runs the
/// same sequence on a thread of its own; [`wait_for_shutdowns`] lets a program that is about to
/// exit wait for those threads. On Linux the child is also killed if this process dies first
/// (`PR_SET_PDEATHSIG`), however it dies.
///
/// What ends with it, exactly. The child is the process started, and everything it starts stays
/// in its process group. `close()`, and drop followed by the end of its thread (which
/// [`wait_for_shutdowns`] waits for), end the whole group: a launcher (`npx`, `uvx`, `sh -c`)
/// and the real server it runs as its own child alike. When this process exits before those
/// finished (`std::process::exit`, returning from `main` with the transport still alive or its
/// shutdown still running) or is killed (a crash, SIGKILL), only the child itself is killed
/// (`PR_SET_PDEATHSIG`, Linux only): a launcher's children survive it, re-parented to init. No
/// signal can reach them then, since only a process still alive could send it; covering that would
/// take a supervisor process per server, or making this process a subreaper
/// (`PR_SET_CHILD_SUBREAPER`), which changes how every orphan of the whole application is
/// handled, and neither is a library's to impose. A server started directly (not through a
/// launcher) has no such children. The group is only ever signalled while its
/// leader is unreaped, so the process group id cannot belong to anyone else: a server that exits on
/// its own stays a zombie until `close()` or drop, which is what keeps its pid reserved.
pub struct StdioTransport {
    writer: Arc<Writer>,
    stdout: Async<OwnedFd>,
    /// The one waker the reactor holds for `stdout`'s readiness, whoever waits: it wakes one
    /// waiter ([`PipeWake`]).
    pipe_waker: Waker,
    /// What was read and not handed on yet, and where the next read goes.
    read: Arc<Mutex<ReadState>>,
    /// Gives a lent read buffer back to `read` ([`ReadState::give_back`]).
    home: Home,
    /// The last read took less than the buffer holds: the pipe was empty then, so the next
    /// `try_recv` (the one that would only find that out again, `EAGAIN`) says so without a
    /// system call, once. Whoever then waits on `ready` learns of anything that came since
    /// (the readiness registration checks the pipe as it is).
    drained: AtomicBool,
    /// How the connection ended, once known; kept so that every later `try_recv` says it.
    end: Arc<End>,
    stderr_done: Receiver<()>,
    process: Arc<Process>,
    stderr: Arc<StderrTail>,
    _tasks: [smol::Task<()>; 2],
}

/// The end of the connection, shared with the tasks that learn it, and who waits for it or for
/// the server's next bytes.
struct End {
    state: Mutex<EndState>,
    /// The tasks in `ready()`: one is woken when the pipe is readable ([`PipeWake`]), all when
    /// the end becomes known (or the writer fails).
    waiters: Waiters,
}

/// The waker the reactor holds for the pipe's readiness: it wakes the waiter polled last, who
/// reads for everyone ([`Waiters`]). Every `ready()` registers this same waker, so no waiter's
/// registration displaces another's.
struct PipeWake(Arc<End>);

impl Wake for PipeWake {
    fn wake(self: Arc<Self>) {
        self.0.waiters.wake_one();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.waiters.wake_one();
    }
}

/// What `ready()` finds of the connection's end.
enum EndSeen {
    /// Something for `try_recv` to say (the reason, or a write failure not looked into yet).
    Report,
    /// stdout ended: the exit watcher is finding out why; wait for it.
    Eof,
    /// Open: wait for the pipe.
    Open,
}

#[derive(Default)]
struct EndState {
    /// stdout reached its end.
    eof: bool,
    /// Writing failed for good (set by the writer).
    write_failure: Option<Error>,
    /// The exit watcher runs: it is finding out why the connection ends.
    watching: bool,
    /// Why the connection ended, once known.
    reason: Option<Option<Error>>,
}

impl End {
    fn reason(&self) -> Option<Option<Error>> {
        lock(&self.state).reason.clone()
    }

    fn set(&self, reason: Option<Error>) {
        lock(&self.state).reason.get_or_insert(reason);
        self.waiters.wake_all();
    }

    fn seen(&self) -> EndSeen {
        let end = lock(&self.state);
        // A write failure not yet looked into: `try_recv` starts the watcher.
        if end.reason.is_some() || (end.write_failure.is_some() && !end.watching) {
            EndSeen::Report
        } else if end.eof {
            EndSeen::Eof
        } else {
            EndSeen::Open
        }
    }
}

/// The child's stdin and what it has not taken yet.
struct Writer {
    state: Mutex<WriteState>,
    /// Wakes the writer task when the pipe is full and the backlog waits for it.
    wake: Sender<()>,
    end: Arc<End>,
}

struct WriteState {
    /// `None` once closed (dropping the last handle closes the pipe: the server sees EOF).
    stdin: Option<Arc<Async<OwnedFd>>>,
    /// Messages not written yet, in order (the first may be partly written already): kept back
    /// for a batch ([`Transport::send_batched`]), or waiting for a full pipe.
    backlog: VecDeque<Queued>,
    /// Bytes in `backlog` not written yet.
    queued: usize,
    /// The most bytes `backlog` may hold.
    max: usize,
    /// The pipe did not take all that was offered: the writer task writes the backlog as the
    /// pipe takes it, and sends only queue behind it.
    stalled: bool,
    /// Bytes the pipe took, in all.
    written: u64,
}

/// One message waiting to be written: its payload, then a newline.
struct Queued {
    payload: Vec<u8>,
    /// How much of the payload and its newline is written already.
    done: usize,
    /// The request it is, while none of it has been written: it can still be withdrawn.
    request: Option<RequestId>,
}

impl Queued {
    /// Bytes left to write.
    fn left(&self) -> usize {
        self.payload.len() + 1 - self.done
    }
}

/// The most messages one `writev` takes from the backlog (two slices each, well under
/// `IOV_MAX`, 1024 on Linux).
const BATCH_MESSAGES: usize = 64;
/// The most bytes one `writev` takes from the backlog (beyond its first message, which goes
/// whole whatever its size).
const BATCH_BYTES: usize = 256 * 1024;

/// Writes the front of the backlog in one `writev` (at most [`BATCH_MESSAGES`] messages and
/// [`BATCH_BYTES`] bytes); drops what was written, a partly written message keeps its remainder
/// first. Returns whether the pipe took all that was offered.
fn write_batch(fd: std::os::fd::BorrowedFd<'_>, st: &mut WriteState) -> rustix::io::Result<bool> {
    // The slices live on the stack, as many as the backlog needs: most batches hold one message
    // (2 KiB of empty slices cleared for each would cost more than the message's copy).
    let (written, offered) = match st.backlog.len() {
        0..=1 => offer::<2>(fd, st)?,
        2..=8 => offer::<16>(fd, st)?,
        _ => offer::<{ 2 * BATCH_MESSAGES }>(fd, st)?,
    };
    st.queued -= written;
    st.written += written as u64;
    let mut rest = written;
    while let Some(q) = st.backlog.front_mut() {
        if rest < q.left() {
            if rest > 0 {
                q.done += rest;
                q.request = None;
            }
            break;
        }
        rest -= q.left();
        st.backlog.pop_front();
    }
    Ok(written == offered)
}

/// Offers the front of the backlog to one `writev` with room for `SLICES / 2` messages (two
/// slices each: the payload's rest and its newline): how much was written, of how much offered.
fn offer<const SLICES: usize>(
    fd: std::os::fd::BorrowedFd<'_>,
    st: &WriteState,
) -> rustix::io::Result<(usize, usize)> {
    let mut slices = [IoSlice::new(&[]); SLICES];
    let (mut n, mut offered) = (0, 0);
    for q in st.backlog.iter().take(SLICES / 2) {
        if offered > 0 && offered + q.left() > BATCH_BYTES {
            break;
        }
        if q.done < q.payload.len() {
            slices[n] = IoSlice::new(&q.payload[q.done..]);
            n += 1;
        }
        slices[n] = IoSlice::new(b"\n");
        n += 1;
        offered += q.left();
    }
    Ok((rustix::io::writev(fd, &slices[..n])?, offered))
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("pid", &self.process.pid)
            .finish()
    }
}

/// The child, shared by the exit watcher and the shutdown sequence. It is reaped only by
/// [`Process::shutdown`], after its group was emptied: until then its exit is observed without
/// reaping (`waitid(WNOWAIT)`), so its pid, which is also the group's id, stays reserved.
struct Process {
    child: Mutex<Child>,
    pid: u32,
    close_grace: Duration,
    term_grace: Duration,
    /// The shutdown was handed to a thread (by `close()` or drop); it runs to its end.
    shutdown: Mutex<Option<Receiver<()>>>,
    /// Counts this server in [`wait_for_shutdowns`] until its shutdown thread is done.
    running: Mutex<Option<shutdowns::Running>>,
    /// The child has been reaped (by `shutdown`, under the `child` lock): its pid, the group's
    /// id, may belong to someone else now, so the group is never signalled again.
    reaped: AtomicBool,
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
        spawn::die_with_parent(&mut std_cmd);
        let mut cmd = async_process::Command::from(std_cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .reap_on_drop(false);
        let mut child = spawn::spawn(cmd)
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
            close_grace: config.close_grace.min(MAX_GRACE),
            term_grace: config.term_grace.min(MAX_GRACE),
            shutdown: Mutex::new(None),
            running: Mutex::new(Some(shutdowns::begin())),
            reaped: AtomicBool::new(false),
        });
        shutdowns::started(&process);
        let tail = Arc::new(StderrTail::new(config.stderr_lines));
        let end = Arc::new(End {
            state: Mutex::new(EndState::default()),
            waiters: Waiters::default(),
        });
        let pipe_waker = Waker::from(Arc::new(PipeWake(end.clone())));
        let (wake, woken) = channel::bounded(1);
        let writer = Arc::new(Writer {
            state: Mutex::new(WriteState {
                stdin: Some(Arc::new(stdin)),
                backlog: VecDeque::new(),
                queued: 0,
                max: config.max_backlog,
                stalled: false,
                written: 0,
            }),
            wake,
            end: end.clone(),
        });
        let write_task = smol::spawn(drain_backlog(writer.clone(), woken));
        let (stderr_done_tx, stderr_done) = channel::bounded::<()>(1);
        let drain = smol::spawn(drain_stderr(
            stderr,
            tail.clone(),
            config.stderr,
            stderr_done_tx,
            process.pid,
        ));
        let read = Arc::new(Mutex::new(ReadState::default()));
        let home: Home = {
            let read = read.clone();
            Arc::new(move |bytes| ReadState::give_back(&read, bytes))
        };
        Ok(StdioTransport {
            writer,
            stdout,
            pipe_waker,
            read,
            home,
            drained: AtomicBool::new(false),
            end,
            stderr_done,
            process,
            stderr: tail,
            _tasks: [write_task, drain],
        })
    }

    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.process.pid
    }

    /// The child's exit status once it has exited (observed without reaping it: the transport
    /// still reaps it when closed).
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.process.exit_status()
    }

    /// The last lines the server wrote to stderr, oldest first.
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// Bytes sent but not yet taken by the server (at most [`StdioConfig::max_backlog`]).
    pub fn backlog_len(&self) -> usize {
        lock(&self.writer.state).queued
    }

    /// stdout ended, or writing to stdin failed: find out, on a task of its own and once, why —
    /// the exit status (without reaping) and stderr's last words — and keep it for `try_recv`, so
    /// no caller's cancellation can lose it. After a write failure (`fallback`) the server gets
    /// [`WRITE_FAILURE_WAIT`] to turn out to have exited (a server that exits also closes its
    /// stdin), else the failure is the reason; meanwhile what it wrote is still read.
    fn watch_exit(&self, fallback: Option<Error>) {
        {
            let mut end = lock(&self.end.state);
            if end.watching {
                return;
            }
            end.watching = true;
        }
        let wait = if fallback.is_some() {
            WRITE_FAILURE_WAIT
        } else {
            EXIT_WAIT
        };
        let (process, end, tail, done) = (
            self.process.clone(),
            self.end.clone(),
            self.stderr.clone(),
            self.stderr_done.clone(),
        );
        smol::spawn(async move {
            let deadline = Instant::now() + wait;
            let status = loop {
                if let Some(s) = process.exit_status() {
                    break Some(s);
                }
                if Instant::now() >= deadline {
                    break None;
                }
                smol::Timer::after(Duration::from_millis(5)).await;
            };
            if let (None, Some(failure)) = (status, fallback) {
                // Still running, and not reading: that is the reason.
                end.set(Some(failure));
                return;
            }
            smol::future::or(async { done.recv().await.unwrap_or(()) }, async {
                smol::Timer::after(STDERR_WAIT).await;
            })
            .await;
            end.set(Some(Error::ServerExited {
                status,
                stderr: tail.text(),
            }));
        })
        .detach();
    }

    /// Hands the shutdown to a thread of its own, once; returns what tells when it is done.
    fn start_shutdown(&self) -> Receiver<()> {
        let mut started = lock(&self.process.shutdown);
        if let Some(done) = &*started {
            return done.clone();
        }
        self.writer.close();
        let (tx, rx) = channel::bounded::<()>(1);
        let process = self.process.clone();
        std::thread::spawn(move || {
            process.shutdown();
            drop(tx);
            drop(lock(&process.running).take());
        });
        *started = Some(rx.clone());
        rx
    }
}

impl Transport for StdioTransport {
    fn send(&self, message: Transmit) -> Result<(), Error> {
        self.writer.send(message, false).map(|_| ())
    }

    fn send_batched(&self, message: Transmit) -> Result<bool, Error> {
        self.writer.send(message, true)
    }

    fn flush(&self) {
        self.writer.flush();
    }

    fn try_recv(&self) -> Option<Inbound> {
        if let Some(reason) = self.end.reason() {
            return Some(Inbound::Closed(reason));
        }
        let (eof, failure) = {
            let end = lock(&self.end.state);
            (end.eof, end.write_failure.clone())
        };
        if let Some(failure) = failure {
            self.watch_exit(Some(failure));
        }
        if eof {
            // The exit watcher is finding out why; `ready` completes when it knows.
            return None;
        }
        if self.drained.swap(false, Ordering::Relaxed) {
            return None;
        }
        let mut st = lock(&self.read);
        loop {
            st.make_room();
            let start = st.buf.len();
            let room = st.buf.capacity() - start;
            let read = rustix::io::read(
                self.stdout.get_ref(),
                rustix::buffer::spare_capacity(&mut st.buf),
            );
            match read {
                Ok(0) => {
                    lock(&self.end.state).eof = true;
                    self.watch_exit(None);
                    // A last line without its line end still goes to the session, before the end.
                    let len = st.buf.len();
                    return (len > 0).then(|| Inbound::Bytes(st.lend(len, &self.home)));
                }
                Ok(n) => {
                    let through = match memchr::memrchr(b'\n', &st.buf[start..]) {
                        Some(at) => {
                            st.passing = false;
                            start + at + 1
                        }
                        // Past the cap: hand on what is held, and the rest of the line as it comes.
                        None if st.passing || st.buf.len() >= st.hold => {
                            st.passing = true;
                            st.buf.len()
                        }
                        // The line goes on: read on (an empty pipe says `EAGAIN`).
                        None => continue,
                    };
                    if n < room {
                        self.drained.store(true, Ordering::Relaxed);
                    }
                    let chunk = st.lend(through, &self.home);
                    drop(st);
                    self.rearm();
                    return Some(Inbound::Bytes(chunk));
                }
                Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {
                    drop(st);
                    self.rearm();
                    return None;
                }
                Err(e) => {
                    let error = Error::io("reading the server's stdout", e.into());
                    self.end.set(Some(error.clone()));
                    return Some(Inbound::Closed(Some(error)));
                }
            }
        }
    }

    /// Waits among the transport's waiters: the pipe's readiness wakes the one polled last, which
    /// reads for everyone; the connection's end wakes them all.
    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut waiting = Waiting::new(&self.end.waiters);
            std::future::poll_fn(|cx| {
                waiting.looking();
                if let EndSeen::Report = self.end.seen() {
                    return Poll::Ready(());
                }
                waiting.register(cx.waker());
                // Again, now that the end becoming known cannot pass unnoticed.
                match self.end.seen() {
                    EndSeen::Report => Poll::Ready(()),
                    EndSeen::Eof => Poll::Pending,
                    EndSeen::Open => {
                        let pipe = self.poll_pipe();
                        if pipe.is_ready() {
                            // Bytes came since the last read found the pipe empty, or may have:
                            // the next `try_recv` reads.
                            self.drained.store(false, Ordering::Relaxed);
                        }
                        pipe
                    }
                }
            })
            .await
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            // What is queued goes out first (bounded by the grace period), then stdin closes: EOF.
            // Dropping this future before the hand-off leaves the shutdown to drop.
            if lock(&self.process.shutdown).is_none() {
                self.writer.flush();
                let deadline = Instant::now() + self.process.close_grace;
                while !self.writer.flushed() && Instant::now() < deadline {
                    smol::Timer::after(Duration::from_millis(2)).await;
                }
            }
            let done = self.start_shutdown();
            let _ = done.recv().await;
            // The server's last stderr lines are copied (and kept in the tail) before `close`
            // returns: a program that exits right after would lose what the drain had not read
            // yet. Its group has ended, so the pipe reaches its end at once; bounded all the same
            // (a process that left the group may still hold it).
            smol::future::or(
                async {
                    let _ = self.stderr_done.recv().await;
                },
                async {
                    smol::Timer::after(STDERR_WAIT).await;
                },
            )
            .await;
            Ok(())
        })
    }

    /// A look is one `read` of the child's stdout, which fills whatever this process does.
    fn busy_poll(&self) -> bool {
        true
    }

    fn set_frame_limit(&self, limit: usize) {
        lock(&self.read).hold = limit;
    }

    fn pid(&self) -> Option<u32> {
        Some(StdioTransport::pid(self))
    }

    fn stderr_tail(&self) -> Option<String> {
        Some(StdioTransport::stderr_tail(self))
    }

    fn ended(&self) -> Option<Error> {
        self.exit_status().map(|status| Error::ServerExited {
            status: Some(status),
            stderr: StdioTransport::stderr_tail(self),
        })
    }

    /// The bytes the pipe took, less those still in it (`FIONREAD`, which Linux answers for
    /// either end of a pipe, and after the reader is gone); `None` once stdin is closed, and
    /// elsewhere than Linux.
    fn input_read(&self) -> Option<u64> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        let st = lock(&self.writer.state);
        let stdin = st.stdin.as_ref()?;
        let unread = rustix::io::ioctl_fionread(stdin.get_ref()).ok()?;
        Some(st.written.saturating_sub(unread))
    }
}

impl StdioTransport {
    /// Whether the pipe was readable since its readiness was last watched; if not, it is
    /// watched now (with [`PipeWake`]), for the waiters registered before this.
    fn poll_pipe(&self) -> Poll<()> {
        let mut cx = Context::from_waker(&self.pipe_waker);
        self.stdout.poll_readable(&mut cx).map(|_| ())
    }

    /// After a read, for the waiters sleeping on the pipe: its readiness is watched again. The
    /// waiter the last readiness woke took that event, and may read and go without waiting
    /// again; nobody else would watch for the next bytes. An event that came meanwhile is
    /// taken here (what it announced was read, or is read by whoever the watch now wakes: with
    /// bytes left in the pipe, the watch fires at once).
    fn rearm(&self) {
        if !self.end.waiters.armed() {
            return;
        }
        for _ in 0..2 {
            if self.poll_pipe().is_pending() {
                return;
            }
        }
        // The reactor refused the watch: a waiter looks for itself.
        self.end.waiters.wake_one();
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // Close stdin now, and end the server on a thread of its own rather than blocking whoever
        // dropped us (nothing, if `close()` already handed it off).
        self.start_shutdown();
    }
}

impl Writer {
    /// Writes one message and its newline straight to the pipe when nothing waits before it;
    /// queues what the pipe does not take, up to the cap. With `hold`, a message may instead
    /// wait in the backlog for the next send or [`flush`](Self::flush), to go out with it in
    /// one `writev` (at most [`BATCH_MESSAGES`] and [`BATCH_BYTES`]: past them the batch is
    /// written now). Returns whether it was kept back so.
    fn send(&self, message: Transmit, hold: bool) -> Result<bool, Error> {
        let mut st = lock(&self.state);
        let Some(stdin) = st.stdin.clone() else {
            return Err(Error::Closed);
        };
        if let Some(failure) = self.failure() {
            return Err(failure);
        }
        let request = match &message.kind {
            TransmitKind::Request { id, .. } => Some(*id),
            TransmitKind::Cancellation { id } | TransmitKind::Abort { id } => {
                // A request given up on before any of it was written leaves the queue, and the
                // server, which never saw it, is not told about it.
                if let Some(at) = st.backlog.iter().position(|q| q.request == Some(*id)) {
                    if let Some(q) = st.backlog.remove(at) {
                        st.queued -= q.left();
                    }
                    return Ok(false);
                }
                if matches!(message.kind, TransmitKind::Abort { .. }) {
                    // Nothing to write: an abort ends an exchange, and a stream has none.
                    return Ok(false);
                }
                None
            }
            _ => None,
        };
        let payload = message.payload;
        let mut done = 0;
        if st.backlog.is_empty() && !st.stalled && !hold {
            // Alone: straight to the pipe, one system call.
            let slices = [IoSlice::new(&payload), IoSlice::new(b"\n")];
            match rustix::io::writev(stdin.get_ref(), &slices) {
                Ok(n) => {
                    done = n;
                    st.written += n as u64;
                }
                Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(self.fail(&mut st, stopped_reading(e))),
            }
            if done == payload.len() + 1 {
                return Ok(false);
            }
            // The pipe is full: the rest waits for the writer task.
            st.stalled = true;
        }
        let queued = Queued {
            done,
            request: request.filter(|_| done == 0),
            payload,
        };
        // One message may exceed the cap on its own (it is the application's), but nothing may
        // pile up behind it past the cap: that is a server that stopped reading.
        if !st.backlog.is_empty() && st.queued.saturating_add(queued.left()) > st.max {
            let error = Error::QueueFull {
                context: format!(
                    "the server stopped reading its input: {} bytes queued, more than the {}-byte cap",
                    st.queued + queued.left(),
                    st.max
                ),
            };
            return Err(self.fail(&mut st, error));
        }
        st.queued += queued.left();
        st.backlog.push_back(queued);
        if st.stalled {
            let _ = self.wake.try_send(());
            return Ok(false);
        }
        if hold && st.backlog.len() < BATCH_MESSAGES && st.queued < BATCH_BYTES {
            return Ok(true);
        }
        self.pour(&mut st, &stdin)?;
        Ok(false)
    }

    /// Writes what [`send`](Self::send) kept back, unless the pipe is full (then the writer task
    /// has it).
    fn flush(&self) {
        let mut st = lock(&self.state);
        if st.backlog.is_empty() || st.stalled || self.failure().is_some() {
            return;
        }
        if let Some(stdin) = st.stdin.clone() {
            let _ = self.pour(&mut st, &stdin);
        }
    }

    /// Writes the backlog in batches while the pipe takes it; what it does not take is left to
    /// the writer task.
    fn pour(&self, st: &mut WriteState, stdin: &Async<OwnedFd>) -> Result<(), Error> {
        while !st.backlog.is_empty() {
            match write_batch(stdin.get_ref().as_fd(), st) {
                Ok(true) | Err(rustix::io::Errno::INTR) => {}
                Ok(false) | Err(rustix::io::Errno::AGAIN) => {
                    st.stalled = true;
                    let _ = self.wake.try_send(());
                    return Ok(());
                }
                Err(e) => return Err(self.fail(st, stopped_reading(e))),
            }
        }
        Ok(())
    }

    /// Writing failed for good: later sends fail, the backlog goes, and `try_recv` reports it.
    fn fail(&self, st: &mut WriteState, error: Error) -> Error {
        st.backlog.clear();
        st.queued = 0;
        lock(&self.end.state)
            .write_failure
            .get_or_insert(error.clone());
        self.end.waiters.wake_all();
        error
    }

    /// Why writing failed for good (the server closed its stdin, or stopped reading past the
    /// cap), once it did. Kept with the connection's end, which it may become.
    fn failure(&self) -> Option<Error> {
        lock(&self.end.state).write_failure.clone()
    }

    /// Whether everything sent has been written to the pipe.
    fn flushed(&self) -> bool {
        lock(&self.state).backlog.is_empty() || self.failure().is_some()
    }

    /// Drops our handle on stdin; the pipe closes once the writer task lets go of it too. What
    /// was kept back for a batch is written first, as far as the pipe takes it.
    fn close(&self) {
        self.flush();
        let mut st = lock(&self.state);
        st.stdin = None;
        st.backlog.clear();
        st.queued = 0;
        let _ = self.wake.try_send(());
    }
}

fn stopped_reading(e: rustix::io::Errno) -> Error {
    Error::io(
        "the server stopped reading its input (its stdin is closed)",
        e.into(),
    )
}

/// Writes the backlog, in batches as the pipe takes them, whenever the pipe could not take it at
/// once; then sends write straight to the pipe again.
async fn drain_backlog(writer: Arc<Writer>, woken: Receiver<()>) {
    while woken.recv().await.is_ok() {
        loop {
            let stdin = {
                let mut st = lock(&writer.state);
                match st.stdin.clone() {
                    Some(stdin) if writer.failure().is_none() => {
                        if st.backlog.is_empty() {
                            st.stalled = false;
                            break;
                        }
                        stdin
                    }
                    _ => break,
                }
            };
            // Under the lock, so that a message withdrawn meanwhile is not written; `EAGAIN`
            // waits for the pipe to take more.
            let wrote = stdin
                .write_with(|fd| {
                    let mut st = lock(&writer.state);
                    if st.backlog.is_empty() || st.stdin.is_none() {
                        return Ok(());
                    }
                    match write_batch(fd.as_fd(), &mut st) {
                        Ok(_) => Ok(()),
                        Err(e) => Err(std::io::Error::from(e)),
                    }
                })
                .await;
            drop(stdin);
            if let Err(e) = wrote {
                let errno = rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::PIPE);
                let mut st = lock(&writer.state);
                writer.fail(&mut st, stopped_reading(errno));
                break;
            }
        }
        if lock(&writer.state).stdin.is_none() {
            return;
        }
    }
}

impl Process {
    /// Blocking: waits for the child to exit after stdin closed, then SIGTERM, then SIGKILL, to the
    /// whole process group, and reaps the child once the group is empty.
    ///
    /// > "the client SHOULD initiate shutdown by: 1. First, closing the input stream to the child
    /// > process (the server) 2. Waiting for the server to exit, or sending SIGTERM if the server
    /// > does not exit within a reasonable time 3. Sending SIGKILL if the server does not exit within
    /// > a reasonable time after SIGTERM" — MCP 2025-11-25, Lifecycle § Shutdown § stdio
    ///
    /// The leader stays unreaped (a zombie once it exits) until the end, which keeps its pid — the
    /// group's id — from being given to another process: every signal here reaches our group.
    fn shutdown(&self) {
        let done = || self.exit_status().is_some() && !self.group_has_others();
        if !self.wait(self.close_grace, done) {
            self.signal_group(rustix::process::Signal::TERM);
            if !self.wait(self.term_grace, done) {
                self.signal_group(rustix::process::Signal::KILL);
                // SIGKILL cannot be ignored: the group empties as soon as the kernel lets it go.
                self.wait(Duration::from_secs(5), done);
            }
        }
        // Only now is the child reaped.
        let mut child = lock(&self.child);
        if child.try_status().ok().flatten().is_none() {
            let _ = child.kill();
            let _ = smol::block_on(child.status());
        }
        self.reaped.store(true, Ordering::SeqCst);
    }

    /// SIGKILLs the whole group now, unless the child was reaped already ([`kill_all`]). Under
    /// the `child` lock, which `shutdown` reaps under: the pid cannot be reaped, and reused,
    /// between the check and the signal.
    fn kill_now(&self) -> bool {
        let _child = lock(&self.child);
        if self.reaped.load(Ordering::SeqCst) {
            return false;
        }
        self.signal_group(rustix::process::Signal::KILL);
        true
    }

    /// The child's exit status once it exited, observed without reaping it.
    fn exit_status(&self) -> Option<ExitStatus> {
        use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
        let pid = Pid::from_raw(self.pid as i32)?;
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        match waitid(WaitId::Pid(pid), options) {
            Ok(Some(status)) => {
                use std::os::unix::process::ExitStatusExt;
                let raw = match (status.exit_status(), status.terminating_signal()) {
                    (Some(code), _) => (code & 0xff) << 8,
                    (None, Some(signal)) => signal | if status.dumped() { 0x80 } else { 0 },
                    (None, None) => return None,
                };
                Some(ExitStatus::from_raw(raw))
            }
            // ECHILD: already reaped (only `shutdown` does that).
            Ok(None) | Err(_) => None,
        }
    }

    /// Polls `done` for up to `limit`; returns whether it held.
    fn wait(&self, limit: Duration, done: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + limit;
        let mut pause = Duration::from_millis(1);
        loop {
            if done() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    fn pgid(&self) -> Option<rustix::process::Pid> {
        rustix::process::Pid::from_raw(self.pid as i32)
    }

    /// Whether a live process other than the leader is left in the group (grandchildren that
    /// outlived it). On Linux this is read from /proc (zombies do not count); elsewhere, any member
    /// that can be signalled counts, which errs towards signalling.
    fn group_has_others(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            live_members(self.pid).next().is_some()
        }
        #[cfg(not(target_os = "linux"))]
        {
            self.exit_status().is_none()
                || self
                    .pgid()
                    .is_some_and(|pgid| rustix::process::test_kill_process_group(pgid).is_ok())
        }
    }

    fn signal_group(&self, signal: rustix::process::Signal) {
        if let Some(pgid) = self.pgid() {
            // ESRCH (nobody left) is the good outcome; nothing else can usefully be done on error.
            let _ = rustix::process::kill_process_group(pgid, signal);
        }
    }
}

/// Live processes of group `pgid` other than its leader, from /proc.
#[cfg(target_os = "linux")]
fn live_members(pgid: u32) -> impl Iterator<Item = u32> {
    let dir = std::fs::read_dir("/proc").into_iter().flatten();
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(move |&pid| pid != pgid)
        .filter(move |&pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // Fields after the command name: state, ppid, pgrp, …
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                return false;
            };
            let mut fields = after.split_whitespace();
            let state = fields.next();
            let pgrp = fields.nth(1).and_then(|p| p.parse::<u32>().ok());
            state != Some("Z") && pgrp == Some(pgid)
        })
}

/// Servers not yet shut down and reaped, so that a program can wait for them before it exits (a
/// shutdown thread dies with the process).
mod shutdowns {
    use super::Process;
    use std::sync::{Arc, Condvar, Mutex, Weak};
    use std::time::{Duration, Instant};

    static RUNNING: Mutex<usize> = Mutex::new(0);
    static DONE: Condvar = Condvar::new();
    /// Every server started whose process is still referenced (by its transport or its
    /// shutdown thread), for [`kill_all`](super::kill_all). Bounded by the servers alive: the
    /// entries of those gone are dropped as each new one is added.
    static STARTED: Mutex<Vec<Weak<Process>>> = Mutex::new(Vec::new());

    pub(super) fn started(process: &Arc<Process>) {
        let mut started = super::lock(&STARTED);
        started.retain(|p| p.strong_count() > 0);
        started.push(Arc::downgrade(process));
    }

    /// The servers whose process is still referenced.
    pub(super) fn live() -> Vec<Arc<Process>> {
        super::lock(&STARTED)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    pub(super) struct Running(());

    pub(super) fn begin() -> Running {
        *super::lock(&RUNNING) += 1;
        Running(())
    }

    impl Drop for Running {
        fn drop(&mut self) {
            *super::lock(&RUNNING) -= 1;
            DONE.notify_all();
        }
    }

    pub(super) fn wait(limit: Duration) -> bool {
        let deadline = Instant::now().checked_add(limit);
        let mut running = super::lock(&RUNNING);
        while *running > 0 {
            let left = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return false,
                },
                None => Duration::from_secs(3600),
            };
            running = DONE
                .wait_timeout(running, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

/// Blocks until every stdio server this process started has been shut down and reaped, or `limit`
/// passes; returns whether all were. Call it before the program exits when it drops clients
/// without awaiting [`close`](Transport::close): their shutdowns run on threads, which die with
/// the process, and a launcher's children (the real server under `npx`, `uvx` or `sh -c`) are
/// only ended by them, not by this process's death (see [`StdioTransport`]). (A transport still
/// alive somewhere counts as not shut down.)
pub fn wait_for_shutdowns(limit: Duration) -> bool {
    shutdowns::wait(limit)
}

/// How many stdio servers this process started and has not reaped yet (in use, closing, or
/// still starting): the groups [`kill_all`] would signal now.
pub fn unreaped() -> usize {
    shutdowns::live()
        .iter()
        .filter(|p| !p.reaped.load(Ordering::SeqCst))
        .count()
}

/// SIGKILLs, at once, the whole process group of every stdio server this process started and
/// has not reaped yet: in use, closing ([`close`](Transport::close) under way, or dropped and
/// ending on a thread of its own) or still starting ([`connect_stdio`](crate::connect_stdio), a
/// [`ServerSet`](crate::ServerSet)'s start-up). For a program that must stop now — a second
/// Ctrl-C while its servers are being closed — when the graceful sequence (stdin closed, then
/// SIGTERM, then SIGKILL, each after a grace) would take too long. The closes and shutdown
/// threads under way then end as soon as the groups are empty, and still reap every child
/// ([`wait_for_shutdowns`] waits for them); a transport still in use sees its server's exit.
/// Returns how many groups were signalled. A reaped child's group is never signalled (its id may
/// belong to someone else by then). Process groups and signals are Unix-only.
pub fn kill_all() -> usize {
    shutdowns::live().iter().filter(|p| p.kill_now()).count()
}

/// Spawning, so that the server dies with this process (Linux).
mod spawn {
    /// Asks the kernel to SIGKILL the child when this process dies (Linux; elsewhere nothing).
    #[cfg(target_os = "linux")]
    pub(super) fn die_with_parent(cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let parent = rustix::process::getpid();
        // SAFETY: the closure runs in the forked child before exec and only makes two
        // async-signal-safe system calls (prctl, getppid); it allocates only on its error path,
        // which the child takes only if the parent is already gone.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))?;
                // The parent may have died before the prctl: then nobody would signal us.
                if rustix::process::getppid() != Some(parent) {
                    return Err(std::io::Error::other("the parent process exited"));
                }
                Ok(())
            });
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn die_with_parent(_cmd: &mut std::process::Command) {}

    /// Spawns `cmd` from one thread that lives as long as the process.
    ///
    /// > PR_SET_PDEATHSIG: "the parent-death signal is sent upon subsequent termination of the
    /// > parent thread" — prctl(2)
    ///
    /// So children are not forked from whichever (possibly short-lived) thread asked.
    pub(super) fn spawn(mut cmd: async_process::Command) -> std::io::Result<async_process::Child> {
        use std::sync::mpsc;
        use std::sync::{Mutex, OnceLock};
        type Reply = mpsc::Sender<std::io::Result<async_process::Child>>;
        type Job = (async_process::Command, Reply);
        static SPAWNER: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
        if !cfg!(target_os = "linux") {
            return cmd.spawn();
        }
        let spawner = SPAWNER.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("mcp-stdio-spawner".into())
                .spawn(move || {
                    for (mut cmd, reply) in rx {
                        let _ = reply.send(cmd.spawn());
                    }
                })
                .ok()
                .map(|_| Mutex::new(tx))
        });
        let Some(spawner) = spawner else {
            return cmd.spawn();
        };
        let (reply, answer) = mpsc::channel();
        let sent = super::lock(spawner).send((cmd, reply));
        match sent {
            Ok(()) => answer
                .recv()
                .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone"))),
            Err(mpsc::SendError((mut cmd, _))) => cmd.spawn(),
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
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))] pid: u32,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let emit = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line)).into_owned();
        line.clear();
        match &mode {
            StderrMode::Tail => {}
            // The server's own line, on our stderr: its control characters escaped.
            StderrMode::Forward => eprintln!("{}", mcp_proto::terminal::line(&text)),
            StderrMode::Callback(f) => f(&text),
        }
        #[cfg(feature = "tracing")]
        crate::trace::stderr_line(pid, &text);
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

/// The read side of stdout: see the [module docs](self).
struct ReadState {
    /// The start of a line whose end has not arrived (no line end in it), read first; its spare
    /// capacity is where the next read goes. At most `hold` bytes plus one read.
    buf: Vec<u8>,
    /// A line longer than `hold` is being handed on as it comes, until its line end.
    passing: bool,
    /// The most bytes of one line held: the session's frame limit ([`HOLD_MAX`] until the client
    /// says it).
    hold: usize,
}

impl Default for ReadState {
    fn default() -> Self {
        ReadState {
            buf: Vec::new(),
            passing: false,
            hold: HOLD_MAX,
        }
    }
}

impl ReadState {
    /// Room for the next read: at least a quarter of [`READ_CHUNK`] spare, growing by doubling
    /// while a line is held, to at most `hold` plus [`READ_CHUNK`].
    fn make_room(&mut self) {
        let (len, capacity) = (self.buf.len(), self.buf.capacity());
        if capacity - len >= READ_CHUNK / 4 {
            return;
        }
        let want = capacity
            .saturating_mul(2)
            .max(len + READ_CHUNK)
            .min(self.hold.saturating_add(READ_CHUNK));
        self.buf.reserve_exact(want - len);
    }

    /// Lends `buf`'s first `through` bytes (whole lines, unless the stream ended or a line is
    /// over the cap); the rest, the start of the next line, stays.
    fn lend(&mut self, through: usize, home: &Home) -> Chunk {
        let mut bytes = std::mem::take(&mut self.buf);
        if through < bytes.len() {
            self.buf = bytes[through..].to_vec();
            bytes.truncate(through);
        }
        Chunk::lent(bytes, home.clone())
    }

    /// A lent buffer comes back: it becomes the read buffer again (what was read meanwhile moved
    /// into it) when it is the larger, unless it is over [`READ_CHUNK`] and what it carried was
    /// under a quarter of it: a short line after a large one releases the large allocation.
    fn give_back(read: &Mutex<ReadState>, mut bytes: Vec<u8>) {
        let capacity = bytes.capacity();
        if capacity > READ_CHUNK && bytes.len() < capacity / 4 {
            return;
        }
        let mut st = lock(read);
        if capacity <= st.buf.capacity() {
            return;
        }
        bytes.clear();
        bytes.extend_from_slice(&st.buf);
        st.buf = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the backlog's length (one message, a few, more than a batch) and however little
    /// the pipe takes at a time, the batches write every message and its newline once, in order.
    #[test]
    fn batches_of_every_size_write_the_backlog_in_order() {
        use std::io::Read;
        for (count, size) in [(1, 10), (5, 10), (8, 3), (9, 100), (200, 40), (3, 200_000)] {
            let (mut reader, writer) = std::io::pipe().unwrap();
            let writer = OwnedFd::from(writer);
            // Non-blocking, as the transport's: a full pipe takes part of a batch, or nothing.
            rustix::fs::fcntl_setfl(&writer, rustix::fs::OFlags::NONBLOCK).unwrap();
            let expected: Vec<u8> = (0..count)
                .flat_map(|i| {
                    let mut line = vec![b'a' + (i % 26) as u8; size];
                    line.push(b'\n');
                    line
                })
                .collect();
            let mut st = WriteState {
                stdin: None,
                backlog: (0..count)
                    .map(|i| Queued {
                        payload: vec![b'a' + (i % 26) as u8; size],
                        done: 0,
                        request: None,
                    })
                    .collect(),
                queued: expected.len(),
                max: usize::MAX,
                stalled: false,
                written: 0,
            };
            // The pipe is drained by another thread, so that a large backlog takes several
            // writes, some of them partial.
            let want = expected.len();
            let drain = std::thread::spawn(move || {
                let mut got = vec![0; want];
                reader.read_exact(&mut got).unwrap();
                got
            });
            while !st.backlog.is_empty() {
                match write_batch(writer.as_fd(), &mut st) {
                    Ok(_) => {}
                    Err(rustix::io::Errno::AGAIN) => std::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(st.queued, 0);
            assert_eq!(st.written, want as u64);
            assert!(drain.join().unwrap() == expected, "{count} x {size}");
        }
    }

    fn home(read: &Arc<Mutex<ReadState>>) -> Home {
        let read = read.clone();
        Arc::new(move |bytes| ReadState::give_back(&read, bytes))
    }

    #[test]
    fn a_large_line_buffer_comes_back_for_the_next_and_a_short_line_releases_it() {
        let read = Arc::new(Mutex::new(ReadState::default()));
        let home = home(&read);
        // A 1 MiB line held as it arrives, then its end and the start of the next line.
        {
            let mut st = lock(&read);
            while st.buf.len() < 1024 * 1024 {
                st.make_room();
                let room = st.buf.capacity() - st.buf.len();
                let n = room.min(1024 * 1024 - st.buf.len());
                st.buf.extend(std::iter::repeat_n(b'x', n));
            }
            st.buf.extend_from_slice(b"\n{\"id\"");
        }
        let through = 1024 * 1024 + 1;
        let chunk = lock(&read).lend(through, &home);
        assert_eq!(chunk.len(), through);
        let lent_at = chunk.as_ptr();
        assert_eq!(lock(&read).buf, b"{\"id\"", "the next line's start stays");
        drop(chunk);
        {
            let st = lock(&read);
            assert_eq!(st.buf.as_ptr(), lent_at, "the large buffer is back");
            assert_eq!(st.buf, b"{\"id\"", "with what was read meanwhile");
            assert!(st.buf.capacity() <= HOLD_MAX + READ_CHUNK);
        }
        // A short line read into it: the large allocation goes.
        lock(&read).buf.extend_from_slice(b":1}\n");
        let chunk = lock(&read).lend(9, &home);
        assert_eq!(&*chunk, b"{\"id\":1}\n");
        drop(chunk);
        assert_eq!(lock(&read).buf.capacity(), 0, "released");
        lock(&read).make_room();
        assert_eq!(lock(&read).buf.capacity(), READ_CHUNK);
    }

    #[test]
    fn the_read_buffer_never_grows_past_the_cap() {
        let mut st = ReadState {
            buf: Vec::with_capacity(HOLD_MAX - 10),
            ..ReadState::default()
        };
        st.buf.resize(HOLD_MAX - 10, b'x');
        st.make_room();
        assert!(st.buf.capacity() >= HOLD_MAX - 10 + READ_CHUNK / 4);
        assert!(st.buf.capacity() <= HOLD_MAX + READ_CHUNK);
    }

    #[test]
    fn a_lower_frame_limit_caps_what_is_held_of_one_line() {
        // A 3 MB line, then a short one, with the session's limit at 1 MiB: no piece handed on,
        // and no read buffer, is much over the limit; the short line still comes whole.
        let limit = 1024 * 1024;
        let t = StdioTransport::spawn(StdioConfig::new("sh").args([
            "-c",
            "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo short; exec cat",
        ]))
        .unwrap();
        t.set_frame_limit(limit);
        let mut read = Vec::new();
        smol::block_on(async {
            while !read.ends_with(b"short\n") {
                match t.try_recv() {
                    Some(Inbound::Bytes(chunk)) => {
                        assert!(chunk.len() <= limit + READ_CHUNK, "{}", chunk.len());
                        read.extend_from_slice(&chunk);
                    }
                    Some(other) => panic!("{other:?}"),
                    None => t.ready().await,
                }
                assert!(lock(&t.read).buf.capacity() <= limit + READ_CHUNK);
            }
            t.close().await.unwrap();
        });
        assert_eq!(read.len(), 3_000_000 + 1 + 6);
    }
}
