//! The pending-request table: the requests awaiting an answer, by the caller's handle.
//!
//! A request keeps its handle (the [`RequestId`] its command returned, which its
//! [`Event::Response`](super::Event::Response) carries) for its whole life, while the JSON-RPC id
//! it goes out with on the wire — its *wire id* — may change: a request sent again (an
//! input-required retry, a retry after a version mismatch) gets a new one, and an answer to an
//! old one is then late. The table finds a request by either, and keeps the deadlines in order,
//! so that the next timer, and whose it is, is found at once.

use super::request::Decoder;
use crate::jsonrpc::RequestId;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// One request awaiting its answer.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) method: String,
    /// The request as sent, kept to send it again (after [`Session::restart`](super::Session::restart)).
    pub(super) payload: Vec<u8>,
    /// To be transmitted once the renewed session is ready: it met the expired session, or it
    /// was sent while the session was being renewed. The server has not seen it.
    pub(super) unsent: bool,
    pub(super) decoder: Decoder,
    pub(super) timeout: Option<Duration>,
    /// Kept by the table (read them through it): the wire id and the deadline.
    wire: u64,
    deadline: Option<Instant>,
}

impl Pending {
    /// A request going out with wire id `wire`, due by `deadline`.
    pub(super) fn new(
        method: String,
        payload: Vec<u8>,
        decoder: Decoder,
        timeout: Option<Duration>,
        wire: u64,
        deadline: Option<Instant>,
    ) -> Self {
        Pending {
            method,
            payload,
            unsent: false,
            decoder,
            timeout,
            wire,
            deadline,
        }
    }

    /// The JSON-RPC id it went out with last.
    pub(super) fn wire(&self) -> u64 {
        self.wire
    }

    /// When it times out.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}

/// What a timer is for ([`Session::poll_timer`](super::Session::poll_timer)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimerFor {
    /// The deadline of the request with this handle.
    Request(RequestId),
}

/// The table. See the [module docs](self).
#[derive(Debug, Default)]
pub(super) struct PendingTable {
    by_handle: BTreeMap<RequestId, Pending>,
    by_wire: HashMap<u64, RequestId>,
    deadlines: BTreeSet<(Instant, RequestId)>,
}

impl PendingTable {
    pub(super) fn insert(&mut self, id: RequestId, pending: Pending) {
        if let Some(old) = self.remove(&id) {
            // Handles are never reused; should one be, the old entry's indexes go with it.
            drop(old);
        }
        self.by_wire.insert(pending.wire, id);
        if let Some(at) = pending.deadline {
            self.deadlines.insert((at, id));
        }
        self.by_handle.insert(id, pending);
    }

    pub(super) fn remove(&mut self, id: &RequestId) -> Option<Pending> {
        let pending = self.by_handle.remove(id)?;
        self.by_wire.remove(&pending.wire);
        if let Some(at) = pending.deadline {
            self.deadlines.remove(&(at, *id));
        }
        Some(pending)
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

    pub(super) fn keys(&self) -> impl Iterator<Item = &RequestId> {
        self.by_handle.keys()
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = (&RequestId, &mut Pending)> {
        self.by_handle.iter_mut()
    }

    /// The request whose current wire id is `wire`.
    pub(super) fn by_wire(&self, wire: u64) -> Option<RequestId> {
        self.by_wire.get(&wire).copied()
    }

    /// The earliest deadline, and whose it is.
    pub(super) fn next_deadline(&self) -> Option<(Instant, RequestId)> {
        self.deadlines.first().copied()
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
        std::mem::take(&mut self.by_handle).into_iter().collect()
    }
}
