//! `subscriptions/listen`: how the 2026-07-28 era brings list changes and resource updates, the
//! pure half. A [`Listener`] keeps what the application wants to hear of (list changes, resource
//! URIs), builds the listen request's filter from it and from what the server declared, keeps
//! one listen request open in a [`Session`] that matches it, and decides when a listen that
//! ended is sent again (a bounded backoff, the time an input). The notifications a listen stream
//! carries are the legacy era's, and the session turns them into the same events
//! ([`Event::ListChanged`](crate::Event::ListChanged),
//! [`Event::ResourceUpdated`](crate::Event::ResourceUpdated)).
//!
//! > "`subscriptions/listen` opens a long-lived notification stream from the server to the
//! > client. Unlike one-off requests, the stream stays open and delivers notifications until
//! > the client cancels it. It replaces the former `resources/subscribe` RPC and the HTTP GET
//! > endpoint." — MCP 2026-07-28, Basic § Subscriptions
//!
//! A driver calls [`Listener::poll`] after whatever may change the listen (a subscription, the
//! session becoming ready, a retry time reached: [`Listener::poll_timeout`]), hands it how each
//! listen ended ([`Listener::handle_end`]) and its acknowledgement
//! ([`Listener::handle_acknowledged`]), and [`Listener::close`]s it with the client.

use crate::jsonrpc::RequestId;
use crate::session::{Era, ListKind, Request, Session, State};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The method.
pub const LISTEN: &str = "subscriptions/listen";

/// The most resource URIs one client subscribes to at once; past it [`Listener::subscribe`]
/// refuses ([`TooMany`]), so the listen request stays bounded.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 1024;

/// The longest resource URI subscribed to, in bytes.
pub const MAX_URI_LEN: usize = 8 * 1024;

/// The wait before the first re-listen after a listen stream dropped; each drop in a row doubles
/// it, up to [`RELISTEN_MAX`]. A listen that was acknowledged and stayed open for
/// [`RELISTEN_STABLE`] starts the count again (a server that acknowledges and drops at once is
/// still backed off).
pub const RELISTEN_FIRST: Duration = Duration::from_millis(250);

/// The longest wait before a re-listen.
pub const RELISTEN_MAX: Duration = Duration::from_secs(30);

/// How long an acknowledged listen must have stayed open for its drop to count as the first.
pub const RELISTEN_STABLE: Duration = Duration::from_secs(60);

/// A subscription refused: too many URIs, or one too long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooMany {
    /// What was over: [`MAX_RESOURCE_SUBSCRIPTIONS`] or [`MAX_URI_LEN`].
    pub limit: usize,
}

impl std::fmt::Display for TooMany {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a resource subscription over the limit ({})", self.limit)
    }
}

impl std::error::Error for TooMany {}

/// How a listen request ended, as the driver saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The server answered it: the subscription closed on purpose.
    Graceful,
    /// The server refused it with a JSON-RPC error (it does not serve the method, or not now).
    Refused,
    /// Its stream ended without an answer (a dropped connection, an HTTP error).
    Dropped,
}

/// The listen request open now, and the filter it carried.
#[derive(Debug, Clone)]
struct Open {
    id: RequestId,
    filter: Value,
    /// The server acknowledged it.
    acknowledged: bool,
    /// When it was sent.
    since: Instant,
}

/// What the application wants to hear of, and the listen request that carries it.
#[derive(Debug, Clone, Default)]
pub struct Listener {
    /// List changes wanted: tools, resources, prompts.
    lists: [bool; 3],
    uris: BTreeSet<String>,
    open: Option<Open>,
    /// Drops in a row since the last acknowledgement.
    drops: u32,
    /// No listen before this instant (a backoff after a drop).
    retry_at: Option<Instant>,
    /// The filter the server closed or refused: not sent again until what is wanted changes
    /// (or the application subscribes again).
    settled: Option<Value>,
    /// Listen requests sent, for the driver's counters and the tests.
    sent: u64,
    /// The resource URIs the server agreed to send updates for: in the legacy era those whose
    /// `resources/subscribe` it answered, in the modern era those the open listen's
    /// acknowledgement named (of those it asked for).
    heard: BTreeSet<String>,
    /// Resource updates dropped: for a URI not subscribed to, or not agreed to.
    dropped_updates: u64,
    /// The last listen sent and its filter, open or not: a transport reports a stream's drop
    /// before the session hands out what the stream carried, its acknowledgement included.
    latest: Option<(RequestId, Value)>,
}

/// Whether an update of `uri` is one of subscribed URI `subscribed`: the same URI, or a
/// sub-resource of it (a path below it: what follows it starts a path segment, a query or a
/// fragment).
fn covers(subscribed: &str, uri: &str) -> bool {
    let Some(rest) = uri.strip_prefix(subscribed) else {
        return false;
    };
    rest.is_empty()
        || subscribed.ends_with('/')
        || rest.starts_with('/')
        || rest.starts_with('?')
        || rest.starts_with('#')
}

fn slot(kind: ListKind) -> usize {
    match kind {
        ListKind::Tools => 0,
        ListKind::Resources => 1,
        ListKind::Prompts => 2,
    }
}

impl Listener {
    /// A listener that wants nothing: it sends nothing until told what to listen for.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wants (or not) to hear that list `kind` changed: a driver says so when the application
    /// has a callback for list changes.
    pub fn want_list(&mut self, kind: ListKind, wanted: bool) {
        self.lists[slot(kind)] = wanted;
    }

    /// Subscribes to resource `uri`'s updates; returns whether it is new. Refused past
    /// [`MAX_RESOURCE_SUBSCRIPTIONS`] URIs or for one longer than [`MAX_URI_LEN`].
    ///
    /// A subscription is the application asking anew: a filter the server closed or refused
    /// earlier is sent again on the next [`poll`](Self::poll), even when the URI was already
    /// there (each such listen follows one call of the application, so this is no loop).
    ///
    /// > "A client that receives this response knows the subscription closed cleanly" — MCP
    /// > 2026-07-28, Basic § Subscriptions § Graceful Closure
    pub fn subscribe(&mut self, uri: &str) -> Result<bool, TooMany> {
        if uri.len() > MAX_URI_LEN {
            return Err(TooMany { limit: MAX_URI_LEN });
        }
        self.settled = None;
        if self.uris.contains(uri) {
            return Ok(false);
        }
        if self.uris.len() >= MAX_RESOURCE_SUBSCRIPTIONS {
            return Err(TooMany {
                limit: MAX_RESOURCE_SUBSCRIPTIONS,
            });
        }
        Ok(self.uris.insert(uri.to_owned()))
    }

    /// Ends the subscription to `uri`; returns whether there was one. Its updates are dropped
    /// from now on.
    pub fn unsubscribe(&mut self, uri: &str) -> bool {
        self.heard.remove(uri);
        self.uris.remove(uri)
    }

    /// Legacy era: the server answered `resources/subscribe` for `uri` (which
    /// [`subscribe`](Self::subscribe) took first): its updates are heard.
    pub fn handle_subscribed(&mut self, uri: &str) {
        if self.uris.contains(uri) {
            self.heard.insert(uri.to_owned());
        }
    }

    /// Whether an update of resource `uri` (`notifications/resources/updated`) goes to the
    /// application: only for a URI it subscribed to and the server agreed to, or a
    /// sub-resource of one (a path below it). Any other is dropped and counted
    /// ([`dropped_updates`](Self::dropped_updates)), in either era.
    ///
    /// > "The server **MUST NOT** send notification types the client has not explicitly
    /// > requested." — MCP 2026-07-28, Basic § Subscriptions
    ///
    /// > "`uri`: The URI of the resource that has been updated. This might be a sub-resource of
    /// > the one that the client actually subscribed to." — MCP 2025-11-25 and 2026-07-28,
    /// > schema, `ResourceUpdatedNotificationParams`
    pub fn admit_update(&mut self, uri: &str) -> bool {
        // At most MAX_RESOURCE_SUBSCRIPTIONS prefix comparisons of at most MAX_URI_LEN bytes.
        let admitted = self.heard.contains(uri) || self.heard.iter().any(|s| covers(s, uri));
        if !admitted {
            self.dropped_updates += 1;
        }
        admitted
    }

    /// How many resource updates [`admit_update`](Self::admit_update) dropped.
    pub fn dropped_updates(&self) -> u64 {
        self.dropped_updates
    }

    /// Whether updates of `uri` are heard now: the server agreed to them.
    pub fn hears(&self, uri: &str) -> bool {
        self.heard.contains(uri)
    }

    /// The resource URIs subscribed to.
    pub fn subscriptions(&self) -> impl Iterator<Item = &str> {
        self.uris.iter().map(String::as_str)
    }

    /// The listen request open now.
    pub fn open(&self) -> Option<RequestId> {
        self.open.as_ref().map(|o| o.id)
    }

    /// How many listen requests were sent.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The listen's filter (its `notifications` param) for a server that declared
    /// `capabilities`, or `None` when there is nothing to listen for.
    ///
    /// > "The server **MUST NOT** send notification types the client has not explicitly
    /// > requested." … "All fields are optional. Omitting a field is equivalent to not
    /// > subscribing to that notification type." — MCP 2026-07-28, Basic § Subscriptions
    ///
    /// A list is asked for only when the server declared its `listChanged`, and resource URIs
    /// only when it declared `resources.subscribe` (the flags a modern server derives from
    /// serving `subscriptions/listen`).
    pub fn filter(&self, capabilities: Option<&Value>) -> Option<Value> {
        let declared = |capability: &str, flag: &str| {
            capabilities
                .and_then(|c| c.get(capability))
                .and_then(|c| c.get(flag))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let mut filter = Map::new();
        for (i, (capability, key)) in [
            ("tools", "toolsListChanged"),
            ("resources", "resourcesListChanged"),
            ("prompts", "promptsListChanged"),
        ]
        .into_iter()
        .enumerate()
        {
            if self.lists[i] && declared(capability, "listChanged") {
                filter.insert(key.to_owned(), Value::Bool(true));
            }
        }
        if !self.uris.is_empty() && declared("resources", "subscribe") {
            filter.insert("resourceSubscriptions".to_owned(), json!(self.uris));
        }
        (!filter.is_empty()).then_some(Value::Object(filter))
    }

    /// Brings the session's listen in line with what is wanted: in the modern era, once the
    /// session is ready, a listen is sent when none is open and there is something to listen
    /// for (not before a backoff's time, and not again for a filter the server closed or
    /// refused), or when what is wanted changed; the listen it replaces is cancelled after the
    /// new one went out (so nothing is missed in between; an update heard twice is only a
    /// second refetch). With nothing to listen for, the open one is cancelled. Returns the new
    /// listen request, when one was sent.
    ///
    /// > "A client **MAY** have multiple active subscriptions concurrently" — MCP 2026-07-28,
    /// > Basic § Subscriptions § Multiple Concurrent Subscriptions
    pub fn poll(&mut self, session: &mut Session, now: Instant) -> Option<RequestId> {
        if session.era() != Some(Era::Modern) || session.state() != State::Ready {
            return None;
        }
        let wanted = self.filter(session.server_capabilities());
        let Some(filter) = wanted else {
            self.settled = None;
            self.cancel_open(session, now);
            return None;
        };
        if self.open.as_ref().is_some_and(|o| o.filter == filter) {
            return None;
        }
        if self.settled.as_ref() == Some(&filter) {
            return None;
        }
        self.settled = None;
        if self.open.is_none() && self.retry_at.is_some_and(|at| now < at) {
            return None;
        }
        self.retry_at = None;
        let request = Request::new(LISTEN, Some(json!({ "notifications": filter }))).no_timeout();
        let id = session.send(request, now).ok()?;
        self.sent += 1;
        self.latest = Some((id, filter.clone()));
        let old = self.open.replace(Open {
            id,
            filter,
            acknowledged: false,
            since: now,
        });
        if let Some(old) = old {
            // > "The **client** cancels it — close the SSE stream (HTTP) or send
            // > `notifications/cancelled` referencing the `subscriptions/listen` request ID
            // > (stdio)." — MCP 2026-07-28, Basic § Subscriptions § Cancellation
            let _ = session.cancel(old.id, "subscription replaced", now);
        }
        Some(id)
    }

    fn cancel_open(&mut self, session: &mut Session, now: Instant) {
        if let Some(old) = self.open.take() {
            let _ = session.cancel(old.id, "no longer listening", now);
        }
    }

    /// The server acknowledged listen `id`: what it carries is listened to.
    ///
    /// > "The server **MUST** send `notifications/subscriptions/acknowledged` as the first
    /// > message carrying the subscription's ID" — MCP 2026-07-28, Basic § Subscriptions §
    /// > Acknowledgment
    ///
    /// Its `notifications` (the acknowledged filter) say which of the URIs asked for the server
    /// agreed to: only those are heard from now on ([`admit_update`](Self::admit_update)). It may
    /// narrow what was asked for, never widen it (a URI it names that was not asked for is not
    /// heard); a filter without `resourceSubscriptions` agrees to none. An acknowledgement
    /// without `notifications` at all (which the schema requires) is taken as agreeing to what
    /// was asked for.
    ///
    /// > "The `notifications` field in the acknowledgment reflects the subset the server agreed
    /// > to honor. Notification types the server does not support are omitted." … "The client
    /// > **SHOULD** check the acknowledged filter against what it requested and handle any
    /// > unsupported types gracefully." — MCP 2026-07-28, Basic § Subscriptions § Acknowledgment
    ///
    /// The last listen sent is taken even when it ended already (its drop was reported before
    /// its acknowledgement was handed out): what its stream carried is heard.
    pub fn handle_acknowledged(&mut self, id: RequestId, notifications: Option<&Value>) {
        if let Some(open) = self.open.as_mut().filter(|o| o.id == id) {
            open.acknowledged = true;
        }
        let Some((_, filter)) = self.latest.as_ref().filter(|(latest, _)| *latest == id) else {
            return;
        };
        let asked = filter.get("resourceSubscriptions");
        let agreed = match notifications {
            Some(n) => n.get("resourceSubscriptions"),
            None => asked,
        };
        let uris = |v: Option<&Value>| -> BTreeSet<String> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let asked = uris(asked);
        self.heard = uris(agreed).intersection(&asked).cloned().collect();
    }

    /// Whether the open listen was acknowledged: what it carries is being listened to.
    pub fn acknowledged(&self) -> bool {
        self.open.as_ref().is_some_and(|o| o.acknowledged)
    }

    /// Listen `id` ended (`how`): returns whether it was the open one. A dropped stream is sent
    /// again after a backoff ([`RELISTEN_FIRST`] doubling up to [`RELISTEN_MAX`]); one the server
    /// closed or refused is not sent again until what is wanted changes.
    ///
    /// > "A client that receives this response knows the subscription closed cleanly; a
    /// > transport that closes without it indicates an unexpected disconnect, which the client
    /// > **MAY** treat as a trigger to reconnect." — MCP 2026-07-28, Basic § Subscriptions §
    /// > Graceful Closure
    pub fn handle_end(&mut self, id: RequestId, how: End, now: Instant) -> bool {
        if self.open() != Some(id) {
            return false;
        }
        let Some(open) = self.open.take() else {
            return false;
        };
        match how {
            End::Graceful | End::Refused => {
                // Nothing more comes of it (an answer comes after what its stream carried).
                self.heard.clear();
                self.latest = None;
                self.settled = Some(open.filter)
            }
            End::Dropped => {
                if open.acknowledged && now.saturating_duration_since(open.since) >= RELISTEN_STABLE
                {
                    self.drops = 0;
                }
                let wait = RELISTEN_FIRST
                    .saturating_mul(1u32 << self.drops.min(16))
                    .min(RELISTEN_MAX);
                self.drops = self.drops.saturating_add(1);
                self.retry_at = Some(now + wait);
            }
        }
        true
    }

    /// When [`poll`](Self::poll) should be called again: a backoff's end, while no listen is
    /// open.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.retry_at.filter(|_| self.open.is_none())
    }

    /// Stops listening: the open listen is cancelled and nothing more is sent until what is
    /// wanted changes and [`poll`](Self::poll) is called.
    pub fn close(&mut self, session: &mut Session, now: Instant) {
        self.cancel_open(session, now);
        self.lists = [false; 3];
        self.uris.clear();
        self.heard.clear();
        self.latest = None;
        self.retry_at = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_asks_only_for_what_is_wanted_and_declared() {
        let mut l = Listener::new();
        let caps = json!({"tools": {"listChanged": true}, "prompts": {},
            "resources": {"subscribe": true, "listChanged": true}});
        assert_eq!(l.filter(Some(&caps)), None, "nothing wanted");
        l.want_list(ListKind::Tools, true);
        l.want_list(ListKind::Prompts, true);
        assert_eq!(
            l.filter(Some(&caps)),
            Some(json!({"toolsListChanged": true})),
            "prompts did not declare listChanged"
        );
        assert!(l.subscribe("file:///b").unwrap());
        assert!(!l.subscribe("file:///b").unwrap());
        l.subscribe("file:///a").unwrap();
        assert_eq!(
            l.filter(Some(&caps)),
            Some(json!({"toolsListChanged": true,
                "resourceSubscriptions": ["file:///a", "file:///b"]}))
        );
        let no_subscribe = json!({"resources": {"listChanged": true}});
        l.want_list(ListKind::Tools, false);
        assert_eq!(l.filter(Some(&no_subscribe)), None);
        assert!(l.unsubscribe("file:///a"));
        assert!(!l.unsubscribe("file:///a"));
    }

    #[test]
    fn subscriptions_are_capped() {
        let mut l = Listener::new();
        for i in 0..MAX_RESOURCE_SUBSCRIPTIONS {
            l.subscribe(&format!("file:///{i}")).unwrap();
        }
        assert_eq!(
            l.subscribe("file:///one-more"),
            Err(TooMany {
                limit: MAX_RESOURCE_SUBSCRIPTIONS
            })
        );
        assert!(
            l.subscribe("file:///0").is_ok(),
            "one already there is fine"
        );
        let long = "x".repeat(MAX_URI_LEN + 1);
        assert_eq!(l.subscribe(&long), Err(TooMany { limit: MAX_URI_LEN }));
    }

    #[test]
    fn a_drop_backs_off_doubling_to_a_bound_and_a_stable_listen_starts_again() {
        let mut l = Listener::new();
        let now = Instant::now();
        let mut waits = Vec::new();
        for n in 0..12 {
            l.open = Some(Open {
                id: RequestId(n),
                filter: json!({}),
                acknowledged: false,
                since: now,
            });
            assert!(
                !l.handle_end(RequestId(n + 100), End::Dropped, now),
                "not open"
            );
            assert!(l.handle_end(RequestId(n), End::Dropped, now));
            waits.push(l.poll_timeout().unwrap() - now);
        }
        assert_eq!(waits[0], RELISTEN_FIRST);
        assert_eq!(waits[1], RELISTEN_FIRST * 2);
        assert_eq!(waits[2], RELISTEN_FIRST * 4);
        assert_eq!(*waits.last().unwrap(), RELISTEN_MAX);
        assert!(waits.iter().all(|w| *w <= RELISTEN_MAX));
        l.open = Some(Open {
            id: RequestId(50),
            filter: json!({}),
            acknowledged: false,
            since: now,
        });
        assert_eq!(l.poll_timeout(), None, "a listen is open");
        l.handle_acknowledged(RequestId(50), None);
        // Acknowledged, but dropped at once: still backed off.
        assert!(l.handle_end(RequestId(50), End::Dropped, now));
        assert_eq!(l.poll_timeout(), Some(now + RELISTEN_MAX));
        // Acknowledged and open for a while: the count starts again.
        l.open = Some(Open {
            id: RequestId(51),
            filter: json!({}),
            acknowledged: false,
            since: now,
        });
        l.handle_acknowledged(RequestId(51), None);
        let later = now + RELISTEN_STABLE;
        assert!(l.handle_end(RequestId(51), End::Dropped, later));
        assert_eq!(l.poll_timeout(), Some(later + RELISTEN_FIRST));
    }

    #[test]
    fn a_graceful_end_is_not_sent_again_until_the_wants_change() {
        let mut l = Listener::new();
        let now = Instant::now();
        l.open = Some(Open {
            id: RequestId(1),
            filter: json!({"toolsListChanged": true}),
            acknowledged: false,
            since: now,
        });
        assert!(l.handle_end(RequestId(1), End::Graceful, now));
        assert_eq!(l.poll_timeout(), None, "no retry");
        assert_eq!(l.settled, Some(json!({"toolsListChanged": true})));
        l.open = Some(Open {
            id: RequestId(2),
            filter: json!({}),
            acknowledged: false,
            since: now,
        });
        assert!(l.handle_end(RequestId(2), End::Refused, now));
        assert_eq!(l.poll_timeout(), None);
    }

    fn acknowledged_listen(l: &mut Listener, id: u64, filter: Value, ack: Option<Value>) {
        l.latest = Some((RequestId(id), filter.clone()));
        l.open = Some(Open {
            id: RequestId(id),
            filter,
            acknowledged: false,
            since: Instant::now(),
        });
        l.handle_acknowledged(RequestId(id), ack.as_ref());
        assert!(l.acknowledged());
    }

    #[test]
    fn only_updates_of_what_was_subscribed_and_agreed_to_are_admitted() {
        let mut l = Listener::new();
        l.subscribe("file:///a").unwrap();
        l.subscribe("file:///b").unwrap();
        l.subscribe("file:///dir/").unwrap();
        assert!(!l.admit_update("file:///a"), "not acknowledged yet");
        let asked = json!({"resourceSubscriptions": ["file:///a", "file:///b", "file:///dir/"]});
        // The server narrows (no b) and tries to widen (c): only a and dir/ are heard.
        acknowledged_listen(
            &mut l,
            1,
            asked.clone(),
            Some(json!({"resourceSubscriptions": ["file:///a", "file:///c", "file:///dir/", 7]})),
        );
        assert!(l.hears("file:///a"));
        assert!(!l.hears("file:///b"));
        assert!(!l.hears("file:///c"));
        let verdicts: Vec<bool> = [
            "file:///a",
            "file:///a/part",
            "file:///a#frag",
            "file:///a?q",
            "file:///ab",
            "file:///b",
            "file:///c",
            "file:///dir/x/y",
            "file:///",
            "",
        ]
        .iter()
        .map(|u| l.admit_update(u))
        .collect();
        assert_eq!(
            verdicts,
            [true, true, true, true, false, false, false, true, false, false]
        );
        assert_eq!(
            l.dropped_updates(),
            5 + 1,
            "five above, one before the acknowledgement"
        );
        // Unsubscribed: dropped at once.
        l.unsubscribe("file:///a");
        assert!(!l.admit_update("file:///a"));
        // A filter without `resourceSubscriptions` agrees to none; none at all, to what was asked.
        acknowledged_listen(
            &mut l,
            2,
            asked.clone(),
            Some(json!({"toolsListChanged": true})),
        );
        assert!(!l.admit_update("file:///dir/x"));
        acknowledged_listen(&mut l, 3, asked.clone(), None);
        assert!(l.admit_update("file:///b"));
        // Its stream drops: what it carried (handed out after the drop) is still heard, its
        // acknowledgement too.
        assert!(l.handle_end(RequestId(3), End::Dropped, Instant::now()));
        assert!(l.admit_update("file:///b"));
        l.handle_acknowledged(RequestId(3), Some(&json!({})));
        assert!(!l.admit_update("file:///b"), "an acknowledgement of none");
        // An acknowledgement of an earlier listen says nothing.
        acknowledged_listen(&mut l, 4, asked, None);
        l.handle_acknowledged(RequestId(3), Some(&json!({})));
        assert!(l.admit_update("file:///b"));
        // The server closes it: nothing more is heard.
        assert!(l.handle_end(RequestId(4), End::Graceful, Instant::now()));
        assert!(!l.admit_update("file:///b"));
    }

    #[test]
    fn in_the_legacy_era_what_the_server_answered_is_heard() {
        let mut l = Listener::new();
        assert!(!l.admit_update("file:///a"));
        l.handle_subscribed("file:///a");
        assert!(
            !l.admit_update("file:///a"),
            "not subscribed by the application"
        );
        assert!(l.subscribe("file:///a").unwrap());
        assert!(!l.admit_update("file:///a"), "not answered yet");
        l.handle_subscribed("file:///a");
        assert!(l.admit_update("file:///a"));
        assert!(l.admit_update("file:///a/b"));
        assert!(l.unsubscribe("file:///a"));
        assert!(!l.admit_update("file:///a"));
        assert_eq!(l.dropped_updates(), 4);
    }

    #[test]
    fn a_subscription_after_a_graceful_end_asks_again() {
        let mut l = Listener::new();
        l.subscribe("file:///a").unwrap();
        let filter = json!({"resourceSubscriptions": ["file:///a"]});
        acknowledged_listen(&mut l, 1, filter.clone(), None);
        assert!(l.handle_end(RequestId(1), End::Graceful, Instant::now()));
        assert_eq!(l.settled, Some(filter));
        assert_eq!(l.subscribe("file:///a"), Ok(false), "not new");
        assert_eq!(l.settled, None, "but asked again");
    }
}
