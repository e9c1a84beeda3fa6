//! Who reads, and when: a waiting caller reads for everyone ([`Connection::wait`]: it first looks
//! without waiting, alone it may look again for a moment ([`BusyPoll`]), then waits on its answer,
//! the transport and its timer), what it sent may wait
//! a turn for a batch ([`Held`]), a dropped call cancels its request ([`CancelOnDrop`]), and the
//! idle reader reads while nobody waits and keeps the session's timers ([`idle_reader`],
//! [`LazyTimer`]).

use super::*;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Counts a caller in [`Connection::wait`] for as long as it waits.
pub(super) struct CallerPresent<'a>(&'a Connection);

impl Drop for CallerPresent<'_> {
    fn drop(&mut self) {
        self.0.callers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A caller's messages kept back for a batch ([`ConnState::held`]): written when the caller is
/// done waiting for others to add theirs ([`release`](Self::release)), or when it stops waiting
/// at all (its future dropped), whichever comes first — unless another caller's write took them
/// first, which the caller knows when its answer is in ([`Mailbox::heard`]): then it leaves
/// what is kept back now to the callers that sent it.
pub(super) struct Held<'a> {
    shared: &'a Connection,
    armed: bool,
}

impl Held<'_> {
    pub(super) fn release(&mut self) {
        self.armed = false;
        self.shared.release();
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.release();
        }
    }
}

/// Cancels request `id` if the future waiting for it is dropped before its answer.
pub(super) struct CancelOnDrop<'a> {
    pub(super) shared: &'a Connection,
    pub(super) id: RequestId,
    pub(super) armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut st = lock(&self.shared.state);
        if st
            .waiters
            .remove(&self.id)
            .is_some_and(|w| w.answer.is_some())
        {
            debug_assert!(st.ready > 0);
            st.ready = st.ready.saturating_sub(1);
        }
        if st.session.is_pending(self.id) {
            let _ = st
                .session
                .cancel(self.id, "the client stopped waiting", Instant::now());
            st.flush(&self.shared.transport);
        }
    }
}

/// Which timers a waiting caller follows.
#[derive(Clone, Copy)]
pub(super) enum Timers {
    /// Its own request's: the deadline, or an earlier wake-up (the next input-required round).
    Request(RequestId),
    /// The session's next timer, whatever it is for (the opening's).
    Session,
}

impl Timers {
    fn next(self, session: &Session) -> Option<Instant> {
        match self {
            Timers::Request(id) => session.wake_at(id),
            Timers::Session => session.poll_timeout(),
        }
    }
}

/// Where a waiting caller's answer comes: its request's slot in the waiters table ([`Slot`]), or
/// a channel (the handshake's, which any number of callers wait for).
pub(super) trait Mailbox {
    /// What comes: the answer, or something to handle on the way (a request's progress).
    type Item;
    /// Takes what came (`Ready(None)`: the caller was closed out, nothing will come). With a
    /// context, a caller that finds nothing is woken when something comes.
    fn poll_take(
        &mut self,
        state: &Mutex<ConnState>,
        cx: Option<&mut Context<'_>>,
    ) -> Poll<Option<Self::Item>>;

    /// The request whose slot this is (`None`: not a slot).
    fn slot(&self) -> Option<RequestId> {
        None
    }

    /// Whether the server was heard on this caller's request already (its answer or its
    /// progress is in), so that the request is surely written. `false` when that cannot be told.
    fn heard(&self, _state: &Mutex<ConnState>) -> bool {
        false
    }
}

/// A request's answer slot: its entry in [`ConnState::waiters`].
pub(super) struct Slot(pub(super) RequestId);

impl Mailbox for Slot {
    type Item = ToWaiter;

    fn slot(&self) -> Option<RequestId> {
        Some(self.0)
    }

    /// An answer in the slot may also be the client's own (a timeout, the end of the
    /// connection): then the request may be unwritten, but it is given up on, and a request
    /// given up on before it was written leaves the transport's backlog.
    fn heard(&self, state: &Mutex<ConnState>) -> bool {
        lock(state).waiters.get(&self.0).is_some_and(|w| {
            w.answer.is_some() || w.progress.as_ref().is_some_and(|p| !p.is_empty())
        })
    }

    fn poll_take(
        &mut self,
        state: &Mutex<ConnState>,
        cx: Option<&mut Context<'_>>,
    ) -> Poll<Option<ToWaiter>> {
        let mut st = lock(state);
        let Some(w) = st.waiters.get_mut(&self.0) else {
            return Poll::Ready(None);
        };
        // Progress first: it came before the answer.
        if let Some(p) = w.progress.as_mut().and_then(VecDeque::pop_front) {
            return Poll::Ready(Some(ToWaiter::Progress(p)));
        }
        if w.answer.is_some() {
            debug_assert!(st.ready > 0);
            st.ready = st.ready.saturating_sub(1);
            let answer = st.waiters.remove(&self.0).and_then(|w| w.answer);
            return Poll::Ready(answer.map(ToWaiter::Answer));
        }
        if let Some(cx) = cx {
            if !w
                .waker
                .as_ref()
                .is_some_and(|old| old.will_wake(cx.waker()))
            {
                w.waker = Some(cx.waker().clone());
            }
        }
        Poll::Pending
    }
}

/// The handshake's channel (pinned: its receiver keeps its listener inside).
impl<M> Mailbox for std::pin::Pin<Box<Receiver<M>>> {
    type Item = M;

    fn poll_take(&mut self, _: &Mutex<ConnState>, cx: Option<&mut Context<'_>>) -> Poll<Option<M>> {
        match cx {
            Some(cx) => smol::stream::Stream::poll_next(self.as_mut(), cx),
            None => match self.try_recv() {
                Ok(item) => Poll::Ready(Some(item)),
                Err(channel::TryRecvError::Closed) => Poll::Ready(None),
                Err(channel::TryRecvError::Empty) => Poll::Pending,
            },
        }
    }
}

/// What woke a waiting caller.
enum Wake<M> {
    /// What came for it (`None`: it was closed out).
    Answer(Option<M>),
    Readable,
    Deadline,
}

impl Connection {
    /// Waits for the answer `rx` will carry, reading for everyone meanwhile. `take` opens what
    /// `rx` carries: the answer, or something for this caller to handle on the way (`None`: its
    /// request's progress, whose callback it ran).
    ///
    /// It first looks at the transport without waiting: a server that answers at once (on one
    /// core the server runs as soon as the request is written, and has answered when the writer
    /// runs again) costs no wait in the reactor at all; a caller alone may then look again and
    /// again for a moment ([`busy_look`](Self::busy_look)). Then it waits on its answer, the
    /// transport's readiness and — only without an idle reader, which keeps the session's timers
    /// for everyone — on its own timer (`deadline`, then following the session's next timer as
    /// `timers` names, re-armed only when that comes earlier or the armed one passed).
    pub(super) async fn wait<B: Mailbox, R>(
        &self,
        mut mailbox: B,
        deadline: Option<Instant>,
        timers: Timers,
        held: bool,
        mut take: impl FnMut(B::Item) -> Option<Result<R, Error>>,
    ) -> Result<R, Error> {
        let company = self.callers.fetch_add(1, Ordering::SeqCst) > 0;
        let begun = self.waits_begun.fetch_add(1, Ordering::Relaxed);
        if company {
            self.busy.crowded(begun);
        }
        let _present = CallerPresent(self);
        // What this caller's send kept back for a batch: written by whoever sends next, else by
        // this caller after one turn of its executor, or when it stops waiting.
        let mut held = Held {
            shared: self,
            armed: held,
        };
        if self.idle_listening.load(Ordering::SeqCst) {
            // The idle reader waits on the transport too: make it step back, so that this
            // caller's answer does not cost a hand-off between threads.
            self.idle_wake.notify(usize::MAX);
        }
        let mut next = deadline;
        // This caller's own timer (without an idle reader), armed when it first has to wait.
        let mut timer = LazyTimer::new();
        let mut looked = false;
        let mut yielded = false;
        let mut spun = false;
        loop {
            while let Poll::Ready(item) = mailbox.poll_take(&self.state, None) {
                let Some(item) = item else {
                    return Err(Error::Closed);
                };
                if let Some(result) = take(item) {
                    return result;
                }
            }
            if held.armed {
                // The callers woken with their answers run first, and send theirs.
                smol::future::yield_now().await;
                if mailbox.heard(&self.state) {
                    // Its answer is in, so its request went out, written by another caller.
                    // What is kept back now is other callers' requests, each written at the
                    // latest when its own caller comes back from its turn (or stops waiting):
                    // writing them now would make one `writev` a request of what is a batch.
                    // With callers that keep coming back to find their answers in (a server
                    // that answers as fast as it is asked), that was each call's own write.
                    held.armed = false;
                } else {
                    held.release();
                }
                continue;
            }
            if !looked {
                looked = true;
                next = self.pump(timers, None);
                continue;
            }
            if !yielded && one_cpu() {
                // Nothing yet, and the server shares this one CPU: let it run (it was woken by
                // the request) and look again, rather than pay a wait in the reactor.
                yielded = true;
                std::thread::yield_now();
                next = self.pump(timers, None);
                continue;
            }
            if !spun && self.callers.load(Ordering::Relaxed) == 1 && self.busy.looks(begun) {
                // Alone, and the connection's calls of late came one at a time, on a transport
                // whose looks are cheap, with a server that has answered quickly of late: look
                // again and again for a moment rather than sleep.
                spun = true;
                if let Some(result) = self.busy_look(&mut mailbox, timers, &mut take, &mut next) {
                    return result;
                }
                continue;
            }
            if !self.idle_reader {
                timer.follow(next, Instant::now());
            }
            let answer = async {
                Wake::Answer(
                    std::future::poll_fn(|cx| mailbox.poll_take(&self.state, Some(cx))).await,
                )
            };
            let readable = async {
                self.transport.ready().await;
                Wake::Readable
            };
            let fired = async {
                timer.fired().await;
                Wake::Deadline
            };
            match smol::future::or(answer, smol::future::or(readable, fired)).await {
                Wake::Answer(None) => return Err(Error::Closed),
                Wake::Answer(Some(item)) => {
                    if let Some(result) = take(item) {
                        return result;
                    }
                }
                Wake::Readable => {
                    // Woken to read, this caller reads, even after another caller's pump: the
                    // transport woke it alone (stdio, HTTP), and whoever is woken for readiness
                    // takes what came for everyone. It looks at its slot next: an answer put
                    // there by this pump must not wake it (a wake-up of the running task costs
                    // its executor a needless turn of the reactor before the next wait).
                    next = self.pump(timers, mailbox.slot());
                }
                Wake::Deadline => {
                    // A timeout's answer is in `rx` now; a wake-up's work is done.
                    next = self.expire(timers);
                }
            }
        }
    }

    /// Looks for the answer again and again for up to [`BusyPoll::limit`] (the first time
    /// right after yielding the CPU, then after 1, 2, 2... µs), taking what arrives as
    /// [`wait`](Self::wait) does; returns what ends the wait, `None` when the time is up (a
    /// miss) or the caller's next timer (`next`, which it follows) has come: that timer is
    /// fired by the wait, on time.
    fn busy_look<B: Mailbox, R>(
        &self,
        mailbox: &mut B,
        timers: Timers,
        take: &mut impl FnMut(B::Item) -> Option<Result<R, Error>>,
        next: &mut Option<Instant>,
    ) -> Option<Result<R, Error>> {
        // A server woken onto this CPU (a pipe's reader may be woken on its writer's CPU, as
        // for a writer that is about to sleep) runs now, rather than after the looks.
        std::thread::yield_now();
        let start = Instant::now();
        let (until, mut look, mut every) = (start + self.busy.limit, start, BUSY_FIRST_LOOK);
        loop {
            let mut now = Instant::now();
            while now < look {
                std::hint::spin_loop();
                now = Instant::now();
            }
            *next = self.pump(timers, mailbox.slot());
            while let Poll::Ready(item) = mailbox.poll_take(&self.state, None) {
                self.busy.hit();
                let Some(item) = item else {
                    return Some(Err(Error::Closed));
                };
                if let Some(result) = take(item) {
                    return Some(result);
                }
            }
            if now >= until || next.is_some_and(|at| now >= at) {
                self.busy.missed();
                return None;
            }
            look += every;
            every = (every * 2).min(BUSY_LOOK_EVERY);
        }
    }

    /// Writes what the transport kept back for a batch, unless a later send already did.
    pub(super) fn release(&self) {
        let mut st = lock(&self.state);
        if st.held {
            st.held = false;
            self.transport.flush();
        }
    }

    /// Takes what the transport received, feeds it to the session, sends what the session queued
    /// and hands out the answers. Never waits. Returns the next timer `timers` names. `running`
    /// is the slot of the caller that pumps, which looks at it next: what this puts there does
    /// not wake it.
    pub(super) fn pump(&self, timers: Timers, running: Option<RequestId>) -> Option<Instant> {
        let mut st = lock(&self.state);
        if let Some(w) = running.and_then(|id| st.waiters.get_mut(&id)) {
            w.waker = None;
        }
        let now = Instant::now();
        for _ in 0..RECV_BATCH {
            let Some(inbound) = self.transport.try_recv() else {
                break;
            };
            let closed = matches!(inbound, Inbound::Closed(_));
            st.handle(inbound, now);
            if closed {
                break;
            }
        }
        st.flush(&self.transport);
        let next = timers.next(&st.session);
        // What was read may call for the application's code: run it outside the lock.
        if !st.deferred.is_empty() {
            self.deliver(st);
        }
        next
    }

    /// Fires every timer that has passed. Returns the next timer `timers` names.
    pub(super) fn expire(&self, timers: Timers) -> Option<Instant> {
        let mut st = lock(&self.state);
        st.session.handle_timeout(Instant::now());
        st.flush(&self.transport);
        timers.next(&st.session)
    }

    pub(super) fn finished(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
            || lock(&self.state).session.state() == mcp_proto::State::Closed
    }
}

/// The idle reader: while no caller waits, it reads for the client (pings answered, the server's
/// end noticed). While callers wait, or waited within the last [`WATCHDOG_PERIOD`], it only
/// looks every period ([`CROWD_WATCHDOG_PERIOD`] while more than one waits), which covers
/// callers whose futures are kept but not polled, so that back-to-back calls cost it nothing.
///
/// It also keeps the session's next timer armed for everyone (callers arm none of their own),
/// and fires it on time: it re-arms only when that timer has fired, or when a flush set an
/// earlier one ([`ConnState::flush`] wakes it then). A timer set later than the armed one (each
/// back-to-back call's deadline) waits for the armed one to fire first, which then finds
/// nothing due and arms the next: a re-arm per timeout period, not per call.
pub(super) async fn idle_reader(shared: Arc<Connection>) {
    let mut seen = shared.waits_begun.load(Ordering::Relaxed);
    let mut timer = LazyTimer::new();
    while !shared.finished() {
        let woken = shared.idle_wake.listen();
        if shared.finished() {
            // Dropped or closed after the check above, before this listened.
            return;
        }
        {
            let mut st = lock(&shared.state);
            timer.follow(st.session.poll_timeout(), Instant::now());
            st.timer_armed = timer.armed;
        }
        let woken = async {
            woken.await;
            IdleWake::Woken
        };
        let fired = async {
            timer.fired().await;
            IdleWake::Timer
        };
        let begun = shared.waits_begun.load(Ordering::Relaxed);
        let callers = shared.callers.load(Ordering::SeqCst);
        let wake = if callers > 0 || begun != seen {
            seen = begun;
            let period = if callers > 1 {
                CROWD_WATCHDOG_PERIOD
            } else {
                WATCHDOG_PERIOD
            };
            let watchdog = async {
                smol::Timer::after(period).await;
                IdleWake::Look
            };
            smol::future::or(woken, smol::future::or(watchdog, fired)).await
        } else {
            shared.idle_listening.store(true, Ordering::SeqCst);
            let readable = async {
                shared.transport.ready().await;
                IdleWake::Look
            };
            let wake = if shared.callers.load(Ordering::SeqCst) == 0 && !shared.finished() {
                smol::future::or(woken, smol::future::or(readable, fired)).await
            } else {
                IdleWake::Woken
            };
            shared.idle_listening.store(false, Ordering::SeqCst);
            wake
        };
        if shared.dropped.load(Ordering::SeqCst) {
            return;
        }
        match wake {
            // A caller came (it reads for itself now), an earlier timer was set, or the client
            // is ending: the loop looks again, re-arming first.
            IdleWake::Woken => {}
            IdleWake::Look => {
                shared.pump(Timers::Session, None);
                shared.expire(Timers::Session);
            }
            IdleWake::Timer => {
                shared.expire(Timers::Session);
            }
        }
    }
}

/// A timer kept armed at the earliest instant it is told to follow, re-armed only when told an
/// earlier one or when the armed one has passed. A later instant waits for the armed one to
/// fire first (whoever then looks finds nothing due, and the timer follows the later one): each
/// re-arm costs the reactor a wake-up and system calls, and a timer per call cost that per call.
pub(super) struct LazyTimer {
    timer: smol::Timer,
    /// The instant `timer` is armed for.
    armed: Option<Instant>,
}

impl LazyTimer {
    fn new() -> LazyTimer {
        LazyTimer {
            timer: smol::Timer::never(),
            armed: None,
        }
    }

    /// Follows the session's next timer, `next`, at `now`.
    fn follow(&mut self, next: Option<Instant>, now: Instant) {
        let spent = self.armed.is_some_and(|at| at <= now);
        match next {
            Some(at) if spent || earlier(at, self.armed) => {
                self.armed = Some(at);
                self.timer.set_at(at);
            }
            None if spent => {
                self.armed = None;
                self.timer = smol::Timer::never();
            }
            _ => {}
        }
    }

    /// Completes when the armed instant comes (never, when none is armed).
    async fn fired(&mut self) {
        (&mut self.timer).await;
    }
}

/// Whether a timer at `at` must re-arm one armed for `armed`: nothing is armed, or `at` comes
/// first.
pub(super) fn earlier(at: Instant, armed: Option<Instant>) -> bool {
    armed.is_none_or(|armed| at < armed)
}

/// What woke the idle reader.
enum IdleWake {
    /// [`Connection::idle_wake`].
    Woken,
    /// The watchdog's period passed, or (nobody waiting) the transport is ready: take what came.
    Look,
    /// The timer it keeps fired.
    Timer,
}

/// Whether this process may run on one CPU only (its affinity mask, as the system said the
/// first time this was asked): a server on the same machine then shares that CPU, so a caller
/// whose first look found nothing yields it once, and looks again, before it waits.
fn one_cpu() -> bool {
    static ONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ONE.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() == 1))
}

/// How long after its first look a busy-polling caller ([`BusyPoll`]) looks again: the time
/// between its looks then doubles up to [`BUSY_LOOK_EVERY`].
const BUSY_FIRST_LOOK: Duration = Duration::from_micros(1);

/// How often a busy-polling caller looks at most. Each look is a system call (a `read` that
/// says `EAGAIN`), but a look every 8 µs made the caller find its answer 4 µs late on average:
/// against a server on another CPU that answers in ~25 µs, 38k calls a second at 8 µs and 44k
/// at 2 µs (as many as a hand-written client reading in a tight loop), at ~10 looks a call.
const BUSY_LOOK_EVERY: Duration = Duration::from_micros(2);

/// How many waits after one that began while other callers waited do not busy-poll. A caller
/// that finds itself alone among callers that come and go (32 tasks making calls on one
/// thread) would hold up, while it looks, the others that are ready to send their next
/// request: they run on its thread. Calls that come one at a time look.
const BUSY_CROWD_MEMORY: u64 = 64;

/// The most waits a run of misses makes skip busy polling before one looks again (2^6 - 1).
const BUSY_MAX_BACKOFF: u32 = 6;

/// Busy polling of one connection ([`ClientConfig::busy_poll`](crate::ClientConfig::busy_poll)):
/// whether a lone waiting caller looks for its answer again and again, for how long, and how
/// its recent looks went. Looks that found the answer within the limit are a hit; the `n`-th
/// miss in a row makes the next `2^(n-1) - 1` waits (at most 63) go straight to the reactor: an
/// answer now and then late costs nothing more, a server that answers slowly at most one
/// limit's worth of CPU every 64 waits, and a server that speeds up is found again.
pub(super) struct BusyPoll {
    /// Zero: never (turned off, a transport whose looks are not cheap, or one CPU).
    pub(super) limit: Duration,
    /// Misses in a row.
    misses: AtomicU32,
    /// Waits left to skip.
    skip: AtomicU32,
    /// The first wait (by [`Connection::waits_begun`]) that may look: one that began with
    /// company pushes it [`BUSY_CROWD_MEMORY`] waits on.
    quiet_from: AtomicU64,
}

impl BusyPoll {
    /// Busy polling for up to `limit` (at most [`MAX_BUSY_POLL`]), unless this process may run
    /// on one CPU only: then the server cannot answer while it looks.
    pub(super) fn new(limit: Duration) -> BusyPoll {
        BusyPoll::with_limit(if one_cpu() {
            Duration::ZERO
        } else {
            limit.min(MAX_BUSY_POLL)
        })
    }

    fn with_limit(limit: Duration) -> BusyPoll {
        BusyPoll {
            limit,
            misses: AtomicU32::new(0),
            skip: AtomicU32::new(0),
            quiet_from: AtomicU64::new(0),
        }
    }

    /// Wait number `begun` began while other callers waited: the next [`BUSY_CROWD_MEMORY`]
    /// waits do not look.
    fn crowded(&self, begun: u64) {
        if !self.limit.is_zero() {
            self.quiet_from
                .fetch_max(begun + BUSY_CROWD_MEMORY, Ordering::Relaxed);
        }
    }

    /// Whether wait number `begun` looks (counting off a skipped wait when it does not).
    fn looks(&self, begun: u64) -> bool {
        if self.limit.is_zero() || begun < self.quiet_from.load(Ordering::Relaxed) {
            return false;
        }
        self.skip
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_err()
    }

    fn hit(&self) {
        self.misses.store(0, Ordering::Relaxed);
    }

    fn missed(&self) {
        let misses = (self.misses.load(Ordering::Relaxed) + 1).min(BUSY_MAX_BACKOFF + 1);
        self.misses.store(misses, Ordering::Relaxed);
        self.skip.store((1 << (misses - 1)) - 1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many of the next `n` waits look.
    fn looking(busy: &BusyPoll, n: usize) -> Vec<bool> {
        (0..n).map(|_| busy.looks(1000)).collect()
    }

    #[test]
    fn misses_in_a_row_back_off_doubling_and_a_hit_ends_it() {
        let busy = BusyPoll::with_limit(Duration::from_micros(50));
        assert!(busy.looks(1000));
        // The first miss skips nothing: one late answer is not a slow server.
        busy.missed();
        assert_eq!(looking(&busy, 1), [true]);
        // The second in a row skips one wait, the third three.
        busy.missed();
        assert_eq!(looking(&busy, 2), [false, true]);
        busy.missed();
        assert_eq!(looking(&busy, 4), [false, false, false, true]);
        // The backoff stops doubling at 63 waits skipped.
        for _ in 0..10 {
            busy.missed();
        }
        let next = looking(&busy, 64);
        assert_eq!(next.iter().filter(|&&l| l).count(), 1);
        assert!(next[63]);
        // A hit: the next miss skips nothing again.
        busy.hit();
        busy.missed();
        assert!(busy.looks(1000));
    }

    #[test]
    fn a_wait_with_company_keeps_the_next_64_from_looking() {
        let busy = BusyPoll::with_limit(Duration::from_micros(50));
        assert!(busy.looks(10));
        busy.crowded(10);
        assert!(!busy.looks(11) && !busy.looks(73));
        assert!(busy.looks(74));
        busy.crowded(20);
        assert!(!busy.looks(83) && busy.looks(84));
        // A wait with company that began earlier (told late) keeps the later bound.
        busy.crowded(15);
        assert!(busy.looks(84));
    }

    #[test]
    fn a_zero_limit_never_looks() {
        let busy = BusyPoll::with_limit(Duration::ZERO);
        assert!(looking(&busy, 100).iter().all(|&l| !l));
    }
}
