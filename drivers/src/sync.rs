//! The driver's one way to take a lock, and the list of tasks waiting on a transport
//! ([`Waiters`]), which the stdio and HTTP transports wake one at a time.

#[cfg(any(feature = "stdio", feature = "http"))]
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
#[cfg(any(feature = "stdio", feature = "http"))]
use std::task::Waker;

/// Locks `m`, taking the data of a lock a panicking thread left poisoned: every critical section
/// in this crate leaves its data whole at each point it could panic (it only moves values in and
/// out), so the data is as good as before and one panic does not turn into one on every later
/// call.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The tasks waiting on a transport ([`Transport::ready`](crate::transport::Transport::ready)),
/// each with the waker of its last poll, the one polled last at the end.
///
/// Something for the waiters to do (bytes in the stdio pipe, an HTTP exchange to poll) wakes
/// one of them ([`wake_one`](Self::wake_one)): the one polled last, which is the likeliest to
/// be polled again soon. Whoever is woken takes what came for everyone, and the answers' owners
/// are woken by their own slots; waking every waiter instead made each of 32 callers on one
/// thread rebuild its wait to find the bytes already read by another (a herd of wake-ups about
/// once a call, a quarter of a call's CPU). A waiter woken that goes without looking (its future
/// dropped) passes the wake-up on. One woken but neither polled nor dropped (a future kept and
/// left alone) keeps the wake-up it took, once: until the next wake-up, or the client's idle
/// reader's next look ([`WATCHDOG_PERIOD`](crate::client::WATCHDOG_PERIOD); the HTTP
/// transport's own watchdog for its exchanges), the others wait for what it was woken for.
///
/// Cheaper than an `event_listener::Event` on the path each answer takes: a waiter registers
/// once per wait, with no allocation, and a wake-up with nobody waiting costs one atomic load,
/// no lock.
#[cfg(any(feature = "stdio", feature = "http"))]
#[derive(Default)]
pub(crate) struct Waiters {
    /// How many entries of `wakers` hold a waker.
    armed: AtomicUsize,
    /// By waiter key, the one polled last at the end; `None` once woken (until the waiter
    /// registers again).
    wakers: Mutex<Vec<(u64, Option<Waker>)>>,
    next: AtomicU64,
}

#[cfg(any(feature = "stdio", feature = "http"))]
impl Waiters {
    /// Whether any waiter waits for a wake-up (registered, and not woken since).
    #[cfg(any(feature = "stdio", test))]
    pub(crate) fn armed(&self) -> bool {
        std::sync::atomic::fence(Ordering::SeqCst);
        self.armed.load(Ordering::SeqCst) > 0
    }

    /// How many wait: registered once at least, and not dropped (woken or not).
    #[cfg(feature = "http")]
    pub(crate) fn waiting(&self) -> usize {
        lock(&self.wakers).len()
    }

    /// Wakes one more waiter: the one polled last of those not woken since.
    pub(crate) fn wake_one(&self) {
        // Pairs with the fence in `Waiting::register`: either the waiter sees what was done
        // before this call (it looks again after registering), or this sees its waker.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.armed.load(Ordering::SeqCst) == 0 {
            return;
        }
        let waker = {
            let mut wakers = lock(&self.wakers);
            let waker = wakers.iter_mut().rev().find_map(|(_, w)| w.take());
            if waker.is_some() {
                self.armed.fetch_sub(1, Ordering::SeqCst);
            }
            waker
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Wakes every waiter.
    pub(crate) fn wake_all(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.armed.load(Ordering::SeqCst) == 0 {
            return;
        }
        let woken: Vec<Waker> = {
            let mut wakers = lock(&self.wakers);
            let woken: Vec<Waker> = wakers.iter_mut().filter_map(|(_, w)| w.take()).collect();
            self.armed.fetch_sub(woken.len(), Ordering::SeqCst);
            woken
        };
        for waker in woken {
            waker.wake();
        }
    }
}

/// One wait on a [`Waiters`] list; its entry goes when it is dropped.
#[cfg(any(feature = "stdio", feature = "http"))]
pub(crate) struct Waiting<'w> {
    waiters: &'w Waiters,
    key: Option<u64>,
    /// Registered and not polled since: a wake-up taken then is passed on when it is dropped.
    waiting: bool,
}

#[cfg(any(feature = "stdio", feature = "http"))]
impl<'w> Waiting<'w> {
    pub(crate) fn new(waiters: &'w Waiters) -> Waiting<'w> {
        Waiting {
            waiters,
            key: None,
            waiting: false,
        }
    }

    /// The waiter is polled: it looks for itself, whatever woke it.
    pub(crate) fn looking(&mut self) {
        self.waiting = false;
    }

    /// Registers (or renews) this waiter's waker, as the one polled last; whatever the caller
    /// looks at after this cannot change unseen. Returns how many wait now ([`Waiters::waiting`],
    /// read under the lock this takes anyway).
    pub(crate) fn register(&mut self, waker: &Waker) -> usize {
        let waiters = self.waiters;
        let waiting = {
            let mut wakers = lock(&waiters.wakers);
            let key = *self
                .key
                .get_or_insert_with(|| waiters.next.fetch_add(1, Ordering::Relaxed));
            let last = wakers.len().wrapping_sub(1);
            match wakers.iter().rposition(|(k, _)| *k == key) {
                Some(i) if i != last => {
                    // Polled last now: moved to the end (few waiters; most renew at the end).
                    let entry = wakers.remove(i);
                    wakers.push(entry);
                }
                Some(_) => {}
                None => wakers.push((key, None)),
            }
            let entry = &mut wakers.last_mut().expect("just placed").1;
            match entry {
                Some(w) => w.clone_from(waker),
                None => {
                    *entry = Some(waker.clone());
                    waiters.armed.fetch_add(1, Ordering::SeqCst);
                }
            }
            wakers.len()
        };
        self.waiting = true;
        std::sync::atomic::fence(Ordering::SeqCst);
        waiting
    }
}

#[cfg(any(feature = "stdio", feature = "http"))]
impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(key) = self.key else {
            return;
        };
        let mut wakers = lock(&self.waiters.wakers);
        if let Some(i) = wakers.iter().rposition(|(k, _)| *k == key) {
            let (_, waker) = wakers.remove(i);
            if waker.is_some() {
                self.waiters.armed.fetch_sub(1, Ordering::SeqCst);
            } else if self.waiting {
                // Woken but gone without looking: the wake-up it took goes to another waiter.
                drop(wakers);
                self.waiters.wake_one();
            }
        }
    }
}

#[cfg(all(test, any(feature = "stdio", feature = "http")))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counted() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count::default());
        (count.clone(), Waker::from(count))
    }

    /// Three waiters registered in turn, with their counts and wakers.
    fn three_waiting(waiters: &Waiters) -> (Vec<Arc<Count>>, Vec<Waker>, Vec<Waiting<'_>>) {
        let (counts, wakers): (Vec<_>, Vec<_>) = (0..3).map(|_| counted()).unzip();
        let mut waits: Vec<Waiting> = (0..3).map(|_| Waiting::new(waiters)).collect();
        for (wait, waker) in waits.iter_mut().zip(&wakers) {
            wait.looking();
            wait.register(waker);
        }
        (counts, wakers, waits)
    }

    fn woken(counts: &[Arc<Count>]) -> Vec<usize> {
        counts.iter().map(|c| c.0.load(Ordering::SeqCst)).collect()
    }

    #[test]
    fn one_wake_up_goes_to_the_waiter_polled_last_and_a_kept_one_takes_it_once() {
        let waiters = Waiters::default();
        let (counts, wakers, mut waits) = three_waiting(&waiters);
        // Waiter 0 is polled again: it is the one polled last now.
        waits[0].looking();
        waits[0].register(&wakers[0]);
        waiters.wake_one();
        assert_eq!(woken(&counts), [1, 0, 0]);
        // Waiter 0 is kept, not polled: the next wake-up goes to the one polled before it.
        waiters.wake_one();
        assert_eq!(woken(&counts), [1, 0, 1]);
        assert!(waiters.armed());
        waiters.wake_one();
        assert_eq!(woken(&counts), [1, 1, 1]);
        // Nobody waits for a wake-up: none is given.
        assert!(!waiters.armed());
        waiters.wake_one();
        assert_eq!(woken(&counts), [1, 1, 1]);
    }

    #[test]
    fn a_waiter_dropped_without_looking_passes_its_wake_up_on() {
        let waiters = Waiters::default();
        let (counts, _, mut waits) = three_waiting(&waiters);
        waiters.wake_one();
        assert_eq!(woken(&counts), [0, 0, 1]);
        // Woken and gone unlooking: waiter 1 gets it.
        drop(waits.pop());
        assert_eq!(woken(&counts), [0, 1, 1]);
        // Woken, looked, then gone: nothing passed on.
        waits[1].looking();
        drop(waits.pop());
        assert_eq!(woken(&counts), [0, 1, 1]);
        // Gone while armed: nothing to pass on, and it is no longer counted.
        drop(waits.pop());
        assert_eq!(woken(&counts), [0, 1, 1]);
        assert!(!waiters.armed());
        assert!(lock(&waiters.wakers).is_empty());
    }

    #[cfg(feature = "http")]
    #[test]
    fn waiting_counts_each_waiter_from_its_first_registration_until_it_is_dropped() {
        let waiters = Waiters::default();
        let (_, waker) = counted();
        let mut first = Waiting::new(&waiters);
        // Not registered yet: not counted.
        assert_eq!(waiters.waiting(), 0);
        first.looking();
        assert_eq!(first.register(&waker), 1);
        // Renewed: still one.
        assert_eq!(first.register(&waker), 1);
        assert_eq!(waiters.waiting(), 1);
        {
            let (_counts, _wakers, _waits) = three_waiting(&waiters);
            assert_eq!(waiters.waiting(), 4);
            // Woken (their wakers taken), they are still waiters.
            waiters.wake_all();
            assert_eq!(waiters.waiting(), 4);
        }
        // The three dropped.
        assert_eq!(waiters.waiting(), 1);
        drop(first);
        assert_eq!(waiters.waiting(), 0);
    }

    #[test]
    fn wake_all_wakes_each_waiter_once() {
        let waiters = Waiters::default();
        // Kept waiting until the end.
        let (counts, _, _waits) = three_waiting(&waiters);
        waiters.wake_all();
        waiters.wake_all();
        assert_eq!(woken(&counts), [1, 1, 1]);
        assert!(!waiters.armed());
    }
}
