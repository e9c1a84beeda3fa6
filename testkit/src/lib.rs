//! The test kit: what the end-to-end tests, the benchmarks and the offline demos share, in one
//! copy. Dev-only (`publish = false`); the root package and the `mcp-client` command's
//! (drivers/cli/) have it as a dev-dependency.
//!
//! - [`stdio_server`]: a minimal MCP server over stdio (binary `mcp-testkit-serve`), in either era
//!   or both, with misbehaviours on demand (`--behave`); [`serve_bin`], [`serve`] and [`serve_in`]
//!   find (and build) it.
//! - [`http_server`]: a small Streamable HTTP MCP server, in-process, with misbehaviours on demand
//!   ([`http_server::Behaviour`]) and a log of every request it received.
//! - [`tools`]: the demo tools both servers offer (`echo`, `add`, `fail`, `image`, `big`, `slow`).
//! - Processes: [`GroupGuard`], [`Watched`], [`run_within`], [`pid_alive`], [`group_alive`], [`wait_until`],
//!   [`close_and_check`]; [`TempDir`], [`free_port`]; [`cli_bin`] for the `mcp-client` command
//!   (drivers/cli/), [`example_bin`] for the root package's examples.
//! - Real peers (`.ci/install-peers`): [`peer_bin`], [`peer_script`], [`required`], [`HttpPeer`].
//! - Futures polled by hand: [`join_all`], [`CountingWaker`], [`kept_beside`].
//! - Benchmarks: [`per_s`], [`median`], [`cpu::process_cpu`]; the floor the CLI is held against,
//!   binary `mcp-testkit-floor` ([`floor_bin`]).

mod bins;
pub mod cpu;
pub mod floor;
pub mod http_floor;
pub mod http_server;
mod peers;
mod process;
pub mod skills;
pub mod stdio_server;
pub mod tools;

pub use bins::{cli_bin, example_bin, floor_bin, serve, serve_bin, serve_in};
pub use peers::{peer_bin, peer_script, required, HttpPeer, HTTP_START_LIMIT};
pub use process::{
    close_and_check, free_port, group_alive, pid_alive, run_within, wait_until, Finished,
    GroupGuard, Listening, TempDir, Watched,
};

use std::path::PathBuf;
use std::time::Duration;

/// The repository's root (the workspace root, where `.peers/`, `.ci/` and `tests/` are).
pub fn repo_root() -> PathBuf {
    let kit = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    kit.parent()
        .expect("testkit/ is in the repository")
        .to_owned()
}

/// Calls per second: `calls` made in `t`.
pub fn per_s(calls: usize, t: Duration) -> f64 {
    calls as f64 / t.as_secs_f64()
}

/// A waker that counts its wake-ups and sends `()` to `woke` for each: for tests that poll
/// futures by hand and wait for a wake-up (the event), not for a time.
pub struct CountingWaker {
    count: std::sync::atomic::AtomicUsize,
    woke: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
}

impl CountingWaker {
    /// A waker that tells `woke` of each wake-up.
    pub fn new(woke: std::sync::mpsc::Sender<()>) -> std::sync::Arc<CountingWaker> {
        std::sync::Arc::new(CountingWaker {
            count: 0.into(),
            woke: std::sync::Mutex::new(woke),
        })
    }

    /// Its wake-ups so far.
    pub fn count(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl std::task::Wake for CountingWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = self.woke.lock().unwrap_or_else(|e| e.into_inner()).send(());
    }
}

/// What [`kept_beside`] saw: `a`'s output, when it came (from `a`'s first poll), and whether the
/// kept future was woken meanwhile.
pub struct KeptBeside<T> {
    /// `a`'s output.
    pub output: T,
    /// From `a`'s first poll to its output.
    pub took: std::time::Duration,
    /// The kept future `p` was woken (and not polled) while `a` waited.
    pub kept_was_woken: bool,
}

/// Two calls' futures polled by hand on one connection: `a` polled once, then `p` polled until
/// it waits (three times: a first poll may keep its request back for a batch, and yield) and
/// kept, so that `p` is the waiter polled last; then `a` is polled each time it is woken, until
/// it is done (a wake-up each within 10 s, or this panics). For the tests of what a future kept
/// without being polled holds up.
pub fn kept_beside<A, P>(
    mut a: std::pin::Pin<&mut A>,
    mut p: std::pin::Pin<&mut P>,
) -> KeptBeside<A::Output>
where
    A: std::future::Future + ?Sized,
    P: std::future::Future + ?Sized,
{
    use std::task::{Context, Poll, Waker};
    let (a_woke, a_wakes) = std::sync::mpsc::channel();
    let (p_woke, _p_wakes) = std::sync::mpsc::channel();
    let (a_told, p_told) = (CountingWaker::new(a_woke), CountingWaker::new(p_woke));
    let a_waker = Waker::from(a_told);
    let p_waker = Waker::from(p_told.clone());
    let started = std::time::Instant::now();
    assert!(a
        .as_mut()
        .poll(&mut Context::from_waker(&a_waker))
        .is_pending());
    for _ in 0..3 {
        assert!(p
            .as_mut()
            .poll(&mut Context::from_waker(&p_waker))
            .is_pending());
    }
    let before = p_told.count();
    loop {
        a_wakes
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("woken by its answer");
        if let Poll::Ready(output) = a.as_mut().poll(&mut Context::from_waker(&a_waker)) {
            return KeptBeside {
                output,
                took: started.elapsed(),
                kept_was_woken: p_told.count() > before,
            };
        }
    }
}

/// Runs the futures concurrently on the current task; their outputs in order.
pub async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *output = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("ready")).collect()
}

/// Makes `tools/call echo {"text": "c<i>"}` for every `i` below `n` and checks each answer's
/// text: one call at a time when `width` is 1, else by `width` callers at once (tasks of one
/// `LocalExecutor` on this thread, each making every `width`-th call). Blocks until all are
/// answered. For the benchmarks.
pub fn echo_calls(client: &mcp_connect::Client, n: usize, width: usize) {
    let caller = |w: usize| async move {
        for i in (w..n).step_by(width.max(1)) {
            let text = format!("c{i}");
            let r = client
                .call_tool("echo", serde_json::json!({ "text": text }))
                .await
                .expect("call");
            assert_eq!(r.text(), text);
        }
    };
    if width <= 1 {
        return smol::block_on(caller(0));
    }
    let ex = smol::LocalExecutor::new();
    let tasks: Vec<_> = (0..width).map(|w| ex.spawn(caller(w))).collect();
    smol::block_on(ex.run(async {
        for t in tasks {
            t.await;
        }
    }));
}

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}
