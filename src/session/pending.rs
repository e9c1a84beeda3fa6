//! The pending-request table: the requests awaiting an answer, by the caller's handle.
//!
//! A request keeps its handle (the [`RequestId`] its command returned, which its
//! [`Event::Response`](super::Event::Response) carries) for its whole life, while the JSON-RPC id
//! it goes out with on the wire — its *wire id* — may change: a request sent again (an
//! input-required retry, a retry after a version mismatch) gets a new one, and an answer to an
//! old one is then late. The table finds a request by either, and keeps the deadlines in order,
//! so that the next timer, and whose it is, is found at once.

use super::request::{Decoder, Params};
use crate::jsonrpc::{IdHash, RequestId};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// One request awaiting its answer.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) method: Cow<'static, str>,
    /// To be transmitted once the renewed session is ready: it met the expired session, or it
    /// was sent while the session was being renewed. The server has not seen it.
    pub(super) unsent: bool,
    pub(super) decoder: Decoder,
    pub(super) timeout: Option<Duration>,
    /// The request's params as sent (with the progress token asked for): a request sent again
    /// (after [`Session::restart`](super::Session::restart), a modern retry with a new version
    /// or the server's `requestState`) is written anew from them.
    pub(super) params: Params,
    /// Input-required rounds answered so far (modern era).
    pub(super) rounds: u32,
    /// The `requestState` to echo in the next round, exactly as the server sent it.
    pub(super) request_state: Option<String>,
    /// The version mismatch retry was spent.
    pub(super) version_retried: bool,
    /// The answers of the round's input requests, by the server's keys (`None`: not yet).
    pub(super) inputs: std::collections::BTreeMap<String, Option<serde_json::Value>>,
    /// Progress asked for (its token is the handle); `Some(Some(max))`: each notification
    /// pushes the deadline out by the timeout again, up to `max` after the start.
    pub(super) progress: Option<Option<Duration>>,
    /// When it was sent first (or, after its transport authorized, sent again).
    pub(super) started: Option<Instant>,
    /// Kept by the table (read them through it): the wire id (`None` between two rounds, when
    /// no copy of the request is out), the deadline and the wake-up.
    wire: Option<u64>,
    deadline: Option<Instant>,
    wake: Option<(Instant, Wake)>,
    /// While its transport authorizes: its timers are suspended (`deadline` and `wake` are
    /// `None`), and this is the wake-up it had, to set again when the authorization ends.
    authorizing: Option<Option<Wake>>,
}

/// Why a pending request wants to be woken before its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Wake {
    /// The era probe had no answer in time: fall back to `initialize` too.
    Fallback,
    /// Send the request again (the next input-required round, after its backoff).
    Resend,
    /// The opening's request went unanswered while the program wrote only lines that are not
    /// JSON-RPC: it is not an MCP server.
    JunkVerdict,
}

impl Pending {
    /// A request going out with wire id `wire`, due by `deadline`.
    pub(super) fn new(
        method: Cow<'static, str>,
        params: Params,
        decoder: Decoder,
        timeout: Option<Duration>,
        wire: u64,
        deadline: Option<Instant>,
    ) -> Self {
        Pending {
            method,
            unsent: false,
            decoder,
            timeout,
            params,
            rounds: 0,
            request_state: None,
            version_retried: false,
            inputs: std::collections::BTreeMap::new(),
            progress: None,
            started: None,
            wire: Some(wire),
            deadline,
            wake: None,
            authorizing: None,
        }
    }

    /// The JSON-RPC id it went out with last, while a copy of it is out.
    pub(super) fn wire(&self) -> Option<u64> {
        self.wire
    }

    /// When it times out.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Its next timer: the deadline, or an earlier wake-up.
    pub(super) fn wake_at(&self) -> Option<Instant> {
        match (self.deadline, self.wake) {
            (Some(d), Some((w, _))) => Some(d.min(w)),
            (d, w) => d.or(w.map(|(at, _)| at)),
        }
    }
}

/// The deadline of a request sent at `now` with `timeout`, and `progress` as asked
/// ([`Pending::progress`]): `now` plus the timeout, but never past `now` plus the maximum total
/// when progress restarts the timeout (also when there is no timeout: the maximum still applies).
///
/// > "Implementations MAY choose to reset the timeout clock when receiving a progress
/// > notification corresponding to the request, as this implies that work is actually
/// > happening. However, implementations SHOULD always enforce a maximum timeout, regardless of
/// > progress notifications, to limit the impact of a misbehaving client or server."
/// > — MCP 2025-11-25, Lifecycle § Timeouts
pub(super) fn first_deadline(
    now: Instant,
    timeout: Option<Duration>,
    progress: Option<Option<Duration>>,
) -> Option<Instant> {
    let after = timeout.and_then(|t| now.checked_add(t));
    // Most requests: no maximum, the timeout alone (as cheap as before there was one).
    let Some(Some(max)) = progress else {
        return after;
    };
    match (after, now.checked_add(max)) {
        (Some(a), Some(cap)) => Some(a.min(cap)),
        (a, cap) => a.or(cap),
    }
}

/// Whether request `p`, due now, reached its maximum total time (its deadline is its start plus
/// the maximum) rather than its timeout: that maximum, or `None`.
pub(super) fn total_reached(p: &Pending) -> Option<Duration> {
    let max = p.progress.flatten()?;
    let cap = p.started?.checked_add(max)?;
    p.deadline.is_some_and(|d| d >= cap).then_some(max)
}

/// What a timer is for ([`Session::poll_timer`](super::Session::poll_timer)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimerFor {
    /// The deadline of the request with this handle.
    Request(RequestId),
    /// The era probe (`server/discover`, this handle) has waited long enough: fall back to the
    /// legacy handshake as well.
    Probe(RequestId),
    /// The next round of an input-required request (this handle), after its backoff.
    Retry(RequestId),
    /// The opening's request (this handle) has waited long enough while the program wrote only
    /// lines that are not JSON-RPC ([`Config::junk_timeout`](super::Config::junk_timeout)).
    NotAnswering(RequestId),
}

/// The table. See the [module docs](self).
#[derive(Debug, Default)]
pub(super) struct PendingTable {
    /// Hashed, not a B-tree: with many requests out, a B-tree moved a node's other entries (a
    /// `Pending` is some 300 bytes) on every insert and removal — the largest cost of 32
    /// concurrent callers in `perf`. What needs the handles' order sorts them.
    by_handle: HashMap<RequestId, Pending, IdHash>,
    by_wire: HashMap<u64, RequestId, IdHash>,
    deadlines: BTreeSet<(Instant, RequestId)>,
    wakes: BTreeSet<(Instant, RequestId, Wake)>,
}

impl PendingTable {
    pub(super) fn insert(&mut self, id: RequestId, pending: Pending) {
        if let Some(old) = self.remove(&id) {
            // Handles are never reused; should one be, the old entry's indexes go with it.
            drop(old);
        }
        if let Some(wire) = pending.wire {
            self.by_wire.insert(wire, id);
        }
        if let Some(at) = pending.deadline {
            self.deadlines.insert((at, id));
        }
        if let Some((at, why)) = pending.wake {
            self.wakes.insert((at, id, why));
        }
        self.by_handle.insert(id, pending);
    }

    pub(super) fn remove(&mut self, id: &RequestId) -> Option<Pending> {
        let pending = self.by_handle.remove(id)?;
        if let Some(wire) = pending.wire {
            self.by_wire.remove(&wire);
        }
        if let Some(at) = pending.deadline {
            self.deadlines.remove(&(at, *id));
        }
        if let Some((at, why)) = pending.wake {
            self.wakes.remove(&(at, *id, why));
        }
        Some(pending)
    }

    /// Request `id` goes out again as `wire` (or, with `None`, has no copy out for now): answers
    /// to its old wire id are late from now on.
    pub(super) fn set_wire(&mut self, id: RequestId, wire: Option<u64>) {
        let Some(p) = self.by_handle.get_mut(&id) else {
            return;
        };
        if let Some(old) = p.wire.take() {
            self.by_wire.remove(&old);
        }
        p.wire = wire;
        if let Some(wire) = wire {
            self.by_wire.insert(wire, id);
        }
    }

    /// A progress notification for request `id` came at `now`: when it asked for that, its
    /// deadline moves to `now` plus its timeout, but never past its start plus the maximum.
    pub(super) fn extend_deadline(&mut self, id: RequestId, now: Instant) {
        let Some(p) = self.by_handle.get_mut(&id) else {
            return;
        };
        let (Some(Some(max)), Some(timeout), Some(started), None) =
            (p.progress, p.timeout, p.started, p.authorizing)
        else {
            return;
        };
        let Some(at) = now.checked_add(timeout) else {
            return;
        };
        let at = match started.checked_add(max) {
            Some(cap) => at.min(cap),
            None => at,
        };
        if let Some(old) = p.deadline.replace(at) {
            self.deadlines.remove(&(old, id));
        }
        self.deadlines.insert((at, id));
    }

    /// Request `id` waits for its transport to authorize: its deadline and its wake-up are
    /// suspended (no timer of it is due) until [`resume`](Self::resume). Returns whether it
    /// was pending and not yet suspended.
    pub(super) fn suspend(&mut self, id: RequestId) -> bool {
        let Some(p) = self.by_handle.get_mut(&id) else {
            return false;
        };
        if p.authorizing.is_some() {
            return false;
        }
        if let Some(at) = p.deadline.take() {
            self.deadlines.remove(&(at, id));
        }
        let wake = p.wake.take().map(|(at, why)| {
            self.wakes.remove(&(at, id, why));
            why
        });
        p.authorizing = Some(wake);
        true
    }

    /// Ends request `id`'s suspension at `now`: it counts as sent again then, so its deadline
    /// is `now` plus its whole timeout. Gives back the wake-up it had (for the session to set
    /// again), or `None` when it was not suspended.
    pub(super) fn resume(&mut self, id: RequestId, now: Instant) -> Option<Option<Wake>> {
        let p = self.by_handle.get_mut(&id)?;
        let wake = p.authorizing.take()?;
        p.started = Some(now);
        if let Some(at) = first_deadline(now, p.timeout, p.progress) {
            p.deadline = Some(at);
            self.deadlines.insert((at, id));
        }
        Some(wake)
    }

    /// Request `id` wants to be woken at `at` for `why` (replacing any earlier wake-up), or, with
    /// `None`, no more. While it is suspended, only what the wake-up is for is kept, for
    /// [`resume`](Self::resume).
    pub(super) fn set_wake(&mut self, id: RequestId, wake: Option<(Instant, Wake)>) {
        let Some(p) = self.by_handle.get_mut(&id) else {
            return;
        };
        if let Some(held) = &mut p.authorizing {
            *held = wake.map(|(_, why)| why);
            return;
        }
        if let Some((at, why)) = p.wake.take() {
            self.wakes.remove(&(at, id, why));
        }
        p.wake = wake;
        if let Some((at, why)) = wake {
            self.wakes.insert((at, id, why));
        }
    }

    /// What request `id`'s wake-up is for, if it has one.
    pub(super) fn wake_of(&self, id: RequestId) -> Option<Wake> {
        self.by_handle.get(&id)?.wake.map(|(_, why)| why)
    }

    pub(super) fn get(&self, id: &RequestId) -> Option<&Pending> {
        self.by_handle.get(id)
    }

    /// For the fields the table does not index (`unsent`).
    pub(super) fn get_mut(&mut self, id: &RequestId) -> Option<&mut Pending> {
        self.by_handle.get_mut(id)
    }

    pub(super) fn contains_key(&self, id: &RequestId) -> bool {
        self.by_handle.contains_key(id)
    }

    pub(super) fn len(&self) -> usize {
        self.by_handle.len()
    }

    /// The handles, in no particular order.
    pub(super) fn keys(&self) -> impl Iterator<Item = &RequestId> {
        self.by_handle.keys()
    }

    /// Every request, in handle order (the order they were made).
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = (&RequestId, &mut Pending)> {
        let mut all: Vec<_> = self.by_handle.iter_mut().collect();
        all.sort_unstable_by_key(|(id, _)| **id);
        all.into_iter()
    }

    /// The one request a copy of which is out at the server (sent, and not waiting to be sent
    /// again), when there is exactly one.
    pub(super) fn only_outstanding(&self) -> Option<RequestId> {
        let mut out = self
            .by_handle
            .iter()
            .filter(|(_, p)| p.wire.is_some() && !p.unsent)
            .map(|(id, _)| *id);
        match (out.next(), out.next()) {
            (Some(id), None) => Some(id),
            _ => None,
        }
    }

    /// The request whose current wire id is `wire`.
    pub(super) fn by_wire(&self, wire: u64) -> Option<RequestId> {
        self.by_wire.get(&wire).copied()
    }

    /// The earliest timer, and what it is for: a deadline, or a wake-up before one.
    pub(super) fn next_timer(&self) -> Option<(Instant, TimerFor)> {
        let deadline = self
            .deadlines
            .first()
            .map(|&(at, id)| (at, TimerFor::Request(id)));
        let wake = self.wakes.first().map(|&(at, id, why)| {
            let what = match why {
                Wake::Fallback => TimerFor::Probe(id),
                Wake::Resend => TimerFor::Retry(id),
                Wake::JunkVerdict => TimerFor::NotAnswering(id),
            };
            (at, what)
        });
        match (deadline, wake) {
            (Some(d), Some(w)) => Some(if w.0 < d.0 { w } else { d }),
            (d, w) => d.or(w),
        }
    }

    /// The wake-ups due at or before `now`, earliest first.
    pub(super) fn due_wakes(&self, now: Instant) -> Vec<(RequestId, Wake)> {
        self.wakes
            .iter()
            .take_while(|(at, _, _)| *at <= now)
            .map(|&(_, id, why)| (id, why))
            .collect()
    }

    /// The requests whose deadline is at or before `now`, earliest first.
    pub(super) fn due(&self, now: Instant) -> Vec<RequestId> {
        self.deadlines
            .iter()
            .take_while(|(at, _)| *at <= now)
            .map(|(_, id)| *id)
            .collect()
    }

    /// Empties the table, handing back every request in handle order.
    pub(super) fn take_all(&mut self) -> Vec<(RequestId, Pending)> {
        self.by_wire.clear();
        self.deadlines.clear();
        self.wakes.clear();
        let mut all: Vec<_> = std::mem::take(&mut self.by_handle).into_iter().collect();
        all.sort_unstable_by_key(|(id, _)| *id);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(wire: u64) -> Pending {
        Pending::new(
            Cow::Borrowed("tools/list"),
            Params::Json(None),
            Decoder::handshake(),
            None,
            wire,
            None,
        )
    }

    /// The table is hashed; what resends held requests (after a session renewal) and what
    /// fails every request at the end take them in the order they were made.
    #[test]
    fn requests_come_back_in_handle_order_whatever_the_hash() {
        let mut table = PendingTable::default();
        // 0..200 inserted in a scrambled order (7919 is prime: a permutation).
        for id in (0..200u64).map(|i| (i * 7919) % 200) {
            table.insert(RequestId(id), pending(id + 1000));
        }
        let order: Vec<u64> = table.iter_mut().map(|(id, _)| id.0).collect();
        assert_eq!(order, (0..200).collect::<Vec<_>>());

        assert!(table.remove(&RequestId(50)).is_some());
        assert_eq!(table.by_wire(1050), None);
        assert_eq!(table.by_wire(1051), Some(RequestId(51)));
        let taken: Vec<u64> = table.take_all().into_iter().map(|(id, _)| id.0).collect();
        assert_eq!(taken, (0..200).filter(|&i| i != 50).collect::<Vec<_>>());
        assert_eq!(table.len(), 0);
        assert_eq!(table.by_wire(1051), None);
    }
}
