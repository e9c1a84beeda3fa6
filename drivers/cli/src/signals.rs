//! Ctrl-C and `kill`: SIGINT, SIGTERM and SIGHUP end the command in any phase (servers starting,
//! the session opening, a listing, a call, `--repeat`, the wait for a browser) and every server
//! it started, with its whole process group, then the command exits 128 + the signal's number
//! (130, 143, 129). A second signal while they close kills them at once.
//!
//! Each stdio server runs in a process group of its own (a launcher's helpers with it), which
//! the terminal's Ctrl-C does not reach: only the command can end them. On the first signal
//! what the command was doing is dropped — a server still starting is then ended by its dropped
//! transport, on a thread of its own — and every client and set it had connected is closed, all
//! at once, with `close()`'s graceful sequence:
//!
//! > "the client SHOULD initiate shutdown by: 1. First, closing the input stream to the child
//! > process (the server) 2. Waiting for the server to exit, or sending SIGTERM if the server
//! > does not exit within a reasonable time 3. Sending SIGKILL if the server does not exit within
//! > a reasonable time after SIGTERM" — MCP 2025-11-25, Lifecycle § Shutdown § stdio
//!
//! (an HTTP session is ended with its `DELETE`). That is bounded by the graces (2 s + 2 s, then
//! SIGKILL); past [`CLOSE_LIMIT`], or on a second signal, every server's group is SIGKILLed
//! ([`mcp_connect::stdio::kill_all`]) and the command exits at once.
//!
//! The signals are caught with `async-signal` (smol-rs): a stream of them on smol's reactor, so
//! the command waits on them beside its own work, with no thread of its own and no code in the
//! signal handler beyond what `signal-hook-registry` does (a write to a pipe).

use async_signal::{Signal, Signals};
use mcp_connect::{Client, ServerSet};
use smol::stream::StreamExt;
use std::future::Future;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

/// How long the graceful close may take in all before every server is killed: the stdio
/// graces (2 s, then 2 s after SIGTERM) and SIGKILL's reaping, with room to spare.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// The clients and sets the command connected: what the first signal closes. (Servers still
/// starting are not here: dropping their start-up ends them.)
#[derive(Default)]
pub(crate) struct Started {
    clients: Mutex<Vec<Client>>,
    sets: Mutex<Vec<ServerSet>>,
    /// The tasks under way (`--task`), cancelled before their clients are closed.
    tasks: Mutex<Vec<(Client, String)>>,
}

/// How long a task's `tasks/cancel` may take on a signal before its server is closed anyway.
const CANCEL_LIMIT: Duration = Duration::from_secs(2);

impl Started {
    /// `client` is closed on a signal.
    pub(crate) fn client(&self, client: &Client) {
        lock(&self.clients).push(client.clone());
    }

    /// Task `id` of `client` is cancelled (`tasks/cancel`) on a signal, before the client is
    /// closed.
    pub(crate) fn task(&self, client: &Client, id: &str) {
        lock(&self.tasks).push((client.clone(), id.to_owned()));
    }

    /// `set`'s servers are closed on a signal.
    pub(crate) fn set(&self, set: &ServerSet) {
        lock(&self.sets).push(set.clone());
    }

    /// Closes every client and set at once, then waits for the servers whose start-up was
    /// dropped (their transports end them on threads of their own).
    async fn close_all(&self) {
        // A task is the server's work, not the connection's: closing the client does not end it
        // (MCP 2025-11-25, Tasks: a task is ended by `tasks/cancel`, not by
        // `notifications/cancelled`); left running it would go on working for nobody.
        let tasks = std::mem::take(&mut *lock(&self.tasks));
        let cancels: Vec<smol::Task<()>> = tasks
            .into_iter()
            .map(|(client, id)| {
                smol::spawn(async move {
                    let cancel = mcp_connect::Request::cancel_task(&id).timeout(CANCEL_LIMIT);
                    if client.request(cancel).await.is_ok() {
                        eprintln!("mcp-client: task {} cancelled", crate::term::line(&id));
                    }
                })
            })
            .collect();
        for cancel in cancels {
            cancel.await;
        }
        let clients = std::mem::take(&mut *lock(&self.clients));
        let sets = std::mem::take(&mut *lock(&self.sets));
        let mut closing: Vec<smol::Task<()>> = Vec::new();
        for client in clients {
            closing.push(smol::spawn(async move {
                let _ = client.close().await;
            }));
        }
        for set in sets {
            closing.push(smol::spawn(async move { set.close().await }));
        }
        for task in closing {
            task.await;
        }
        smol::unblock(|| mcp_connect::stdio::wait_for_shutdowns(CLOSE_LIMIT)).await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// SIGINT, SIGTERM and SIGHUP, caught from now on; `None` (and the signals' default actions:
/// the command dies, its servers are left to notice their stdin closing) where they cannot be.
/// A signal the command was started with ignored stays ignored, as shells and `nohup` mean it
/// (`nohup mcp-client …` outlives the terminal; `mcp-client … &` in a script is not ended by
/// Ctrl-C).
pub(crate) fn catch() -> Option<Signals> {
    let wanted = [Signal::Int, Signal::Term, Signal::Hup];
    Signals::new(wanted.into_iter().filter(|&s| !ignored(s))).ok()
}

/// Whether `signal` is ignored now (`SIG_IGN`), as it was inherited.
#[cfg(unix)]
fn ignored(signal: Signal) -> bool {
    let mut current = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with a null new action, sigaction only writes the current one into `current`,
    // which is valid for writes of a `sigaction` (and all zeroes is a valid one if it fails).
    #[allow(unsafe_code)]
    let current = unsafe {
        libc::sigaction(
            signal as libc::c_int,
            std::ptr::null(),
            current.as_mut_ptr(),
        );
        current.assume_init()
    };
    current.sa_sigaction == libc::SIG_IGN
}

#[cfg(not(unix))]
fn ignored(_signal: Signal) -> bool {
    false
}

/// The signal's name and number.
fn name(signal: Signal) -> (&'static str, u8) {
    match signal {
        Signal::Int => ("SIGINT", 2),
        Signal::Term => ("SIGTERM", 15),
        Signal::Hup => ("SIGHUP", 1),
        // Only the three above are caught.
        _ => ("a signal", 15),
    }
}

/// The next signal caught (never, without `signals`).
async fn next(signals: &mut Option<Signals>) -> Signal {
    if let Some(signals) = signals {
        // The stream ends only with the reactor; an error is a failed read of its pipe.
        while let Some(caught) = signals.next().await {
            if let Ok(signal) = caught {
                return signal;
            }
        }
    }
    std::future::pending().await
}

/// Runs `command` until it ends or a signal comes; on a signal, closes what `started` holds
/// (see the [module docs](self)) and gives 128 + the signal's number. `command` borrows
/// `started`, and is dropped before the close begins.
pub(crate) async fn or_signal(
    command: impl Future<Output = ExitCode>,
    started: &Started,
    signals: Option<Signals>,
) -> ExitCode {
    enum First {
        Done(ExitCode),
        Caught((Signal, Option<Signals>)),
    }
    // The signals are awaited in a task of their own: polled only when one comes, not each time
    // the command's future is (a look at their pipe is a system call, and a call through a
    // server wakes the command at least once).
    let mut caught = smol::spawn(async move {
        let mut signals = signals;
        let signal = next(&mut signals).await;
        (signal, signals)
    });
    let first = smol::future::or(async { First::Done(command.await) }, async {
        First::Caught((&mut caught).await)
    })
    .await;
    let (signal, mut signals) = match first {
        First::Done(code) => return code,
        First::Caught(caught) => caught,
    };
    let (what, number) = name(signal);
    // A second signal kills server processes: said only when there is one.
    let again = if mcp_connect::stdio::unreaped() > 0 {
        " (again to kill them at once)"
    } else {
        ""
    };
    eprintln!("mcp-client: {what}: closing the servers{again}");
    enum Then {
        Closed,
        Again(Signal),
        TooLong,
    }
    let then = smol::future::or(
        async {
            started.close_all().await;
            Then::Closed
        },
        smol::future::or(async { Then::Again(next(&mut signals).await) }, async {
            smol::Timer::after(CLOSE_LIMIT).await;
            Then::TooLong
        }),
    )
    .await;
    let (why, number) = match then {
        Then::Closed => return ExitCode::from(128 + number),
        Then::Again(again) => name(again),
        Then::TooLong => ("closing took too long", number),
    };
    let killed = mcp_connect::stdio::kill_all();
    eprintln!(
        "mcp-client: {why}: killed {killed} server group{}",
        if killed == 1 { "" } else { "s" }
    );
    ExitCode::from(128 + number)
}
