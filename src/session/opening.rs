//! The session's opening, as one value: [`Opening`], and every transition of it.
//!
//! Everything that decides where the opening is lives in this file (h11's rule: everything that
//! affects the state machine and its transitions lives in one file). The era modules supply the
//! pieces: `legacy` builds `initialize` and reads its answer, `modern` builds `server/discover`
//! and knows the era's error codes; which of them is sent, and what an answer means for the
//! opening, is decided here.
//!
//! # The opening, drawn
//!
//! | where | what happens | next |
//! |---|---|---|
//! | `New` | [`initialize`](super::Session::initialize), [`EraChoice::Legacy`] or [`EraChoice::LegacyFirst`] | `Initializing` (`initialize` out) |
//! | `New` | `initialize`, [`EraChoice::Modern`] | `Probing` (`server/discover` out) |
//! | `New` | `initialize`, [`EraChoice::Auto`] | `Probing`, its fallback due after [`Config::probe_timeout`](super::Config::probe_timeout) |
//! | `Probing` | the fallback is due (nothing failed yet) | `Racing` (`initialize` sent as well) |
//! | `Probing`, `Racing` | a discover result naming a modern version of ours | `Open(Modern)`; a racing `initialize`'s answer is late |
//! | `Probing`, `Racing` | -32022 naming a modern version of ours (once) | the same, with a new `server/discover` in that version |
//! | `Probing`, `Racing` | with `Auto`/`LegacyFirst`: any other answer, an error, a refusal, a timeout | the legacy fallback: `Racing` → `Initializing`; `Probing` → `Initializing` (`initialize` sent), or, when `initialize` already failed, its failure decides as below (without probing again) |
//! | `Probing` | with `Modern`: any other outcome | `Closed` ([`Event::Failed`]) |
//! | `Probing`, `Racing` | the probe is unreachable (the server's authorization refused) | `Closed` ([`SessionError::Discover`]) |
//! | `Racing` | `initialize` answered with a version of ours | `Open(Legacy)`; the probe's answer is late |
//! | `Racing` | `initialize` failed (refused, unreadable, undeliverable, timed out) | `Probing`, holding the failure: the probe still decides |
//! | `Initializing` | `initialize` answered with a version of ours | `Open(Legacy)` ([`Event::Ready`]) |
//! | `Initializing` | refused: -32022 naming a modern version of ours (once; not after a probe said "not modern") | `Probing`, holding the failure |
//! | `Initializing` | refused: -32022 naming another legacy version of ours (once) | `Initializing` again, offering it |
//! | `Initializing` | refused with any JSON-RPC error, with `LegacyFirst` (not after a probe) | `Probing`, holding the failure |
//! | `Initializing` | anything else | `Closed` ([`Event::Failed`]) |
//! | `Open(Legacy)` | [`restart`](super::Session::restart) (the HTTP session expired) | `Renewing` (a fresh `initialize` out) |
//! | `Renewing` | `initialize` answered | `Open(Legacy)`; the requests held meanwhile go out |
//! | `Renewing` | `initialize` failed | `Closed` ([`Event::Failed`]) |
//! | any | [`close`](super::Session::close), the end of the stream | `Closed` (a `Probing` opening whose probe ended with the stream, with `Auto`: [`SessionError::EndedOnProbe`]) |
//! | `Probing`, `Racing`, `Initializing` | over a stream, the program wrote only lines that are not JSON-RPC, and its last request went unanswered for [`Config::junk_timeout`](super::Config::junk_timeout) after the later of the first such line and that request | `Closed` ([`SessionError::NotAnMcpServer`]) |
//!
//! > "The server returns any other error, or does not respond within a reasonable timeout: the
//! > server is legacy. Fall back to the `initialize` handshake." / "The fallback **MUST NOT** be
//! > keyed to one specific error code" — MCP 2026-07-28, stdio § Backward Compatibility

use super::pending::Wake;
use super::{Casualties, Core, Era, EraChoice, Event, Reply, State, QUOTED_LINE_MAX};
use crate::error::{RequestError, SessionError};
use crate::jsonrpc::RequestId;
use crate::types::{
    DiscoverResult, Implementation, InitializeResult, LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
};
use std::time::Instant;

/// Where the session's opening is. Each variant holds what exists in it, and nothing else: the
/// ids of the opening's requests while they are out, and what the server said of itself once it
/// said it.
#[derive(Debug)]
pub(super) enum Opening {
    /// Created; nothing sent.
    New,
    /// The legacy handshake: `initialize` is out, alone.
    Initializing {
        /// The `initialize` request.
        init: RequestId,
    },
    /// The opening's `server/discover` is out, alone: the modern era's, or the probe that finds
    /// out which era the server speaks.
    Probing {
        /// The `server/discover` request.
        probe: RequestId,
        /// Why `initialize` failed, when it was sent first and failed: the probe still decides
        /// (a modern server), else this is the opening's outcome.
        failed: Option<SessionError>,
    },
    /// The probe and `initialize` are both out: the first answer that settles the era wins.
    Racing {
        /// The `server/discover` request.
        probe: RequestId,
        /// The `initialize` request.
        init: RequestId,
    },
    /// Open in `era`; requests may be sent.
    Open {
        /// The era.
        era: Era,
        /// What the server said of itself (in the modern era, assembled from its
        /// `server/discover` result).
        server: InitializeResult,
    },
    /// The legacy era's HTTP session expired: a fresh `initialize` is out, and requests sent
    /// meanwhile wait for it.
    Renewing {
        /// The renewal's `initialize` request.
        init: RequestId,
        /// What the server said at the last opening.
        server: InitializeResult,
    },
    /// Closed, ended by the peer, or failed. Nothing more is sent.
    Closed {
        /// The era, if it was known.
        era: Option<Era>,
        /// What the server said of itself, if the opening completed.
        server: Option<InitializeResult>,
    },
}

/// Stdout lines that are not JSON-RPC during the opening: what tells a program that is not an
/// MCP server (a shell script, a web server, a program that prints a greeting) from a slow one.
///
/// > "The server **MUST NOT** write anything to its stdout that is not a valid MCP message." —
/// > MCP 2025-11-25, Transports § stdio
///
/// The rule: once the program has written a line that is not JSON-RPC during the opening, and
/// nothing that is, the opening's last request gets [`Config::junk_timeout`] from the later of
/// that line and the request to be answered; then the opening fails with
/// [`SessionError::NotAnMcpServer`], quoting the line. With [`EraChoice::Auto`] the probe's
/// fallback comes first (the probe's timer is the fallback's until then), so a legacy server that
/// greets on stdout and ignores the probe still gets `initialize` and the whole bound to answer
/// it. A program that writes nothing is no concern of this rule (a slow start: the request's own
/// timeout applies), and one that writes anything that is JSON-RPC (an answer, a log
/// notification) is taken to speak it.
///
/// [`Config::junk_timeout`]: super::Config::junk_timeout
#[derive(Debug, Default)]
pub(super) struct Junk {
    /// Messages ignored as not JSON or not JSON-RPC, ever: a line that raised it was not
    /// JSON-RPC.
    pub(super) ignored: u64,
    /// The opening's first such line, quoted ([`quote_line`]), and when it came.
    first: Option<(String, Instant)>,
    /// How many such lines came during the opening.
    lines: u64,
    /// The program wrote something that is JSON-RPC: it speaks it, and the rule is off.
    spoke: bool,
}

/// A line the program wrote, for a message: lossily decoded, trimmed, its control characters
/// removed, at most [`QUOTED_LINE_MAX`] characters (then `…`). Bounded work whatever the line's
/// length.
pub(super) fn quote_line(line: &[u8]) -> String {
    let head = &line[..line.len().min(QUOTED_LINE_MAX * 16)];
    let text = String::from_utf8_lossy(head);
    let mut quoted = String::new();
    for (n, c) in text.trim().chars().filter(|c| !c.is_control()).enumerate() {
        if n == QUOTED_LINE_MAX {
            quoted.push('…');
            break;
        }
        quoted.push(c);
    }
    quoted
}

impl Opening {
    /// The public view of it.
    pub(super) fn state(&self) -> State {
        match self {
            Opening::New => State::New,
            Opening::Initializing { .. }
            | Opening::Probing { .. }
            | Opening::Racing { .. }
            | Opening::Renewing { .. } => State::Initializing,
            Opening::Open { .. } => State::Ready,
            Opening::Closed { .. } => State::Closed,
        }
    }

    /// What the server said of itself, once the opening completed.
    pub(super) fn server(&self) -> Option<&InitializeResult> {
        match self {
            Opening::Open { server, .. } | Opening::Renewing { server, .. } => Some(server),
            Opening::Closed { server, .. } => server.as_ref(),
            _ => None,
        }
    }

    /// The `initialize` request out, if one is.
    pub(super) fn init_request(&self) -> Option<RequestId> {
        match *self {
            Opening::Initializing { init }
            | Opening::Racing { init, .. }
            | Opening::Renewing { init, .. } => Some(init),
            _ => None,
        }
    }

    /// The opening's `server/discover` request out, if one is.
    pub(super) fn probe_request(&self) -> Option<RequestId> {
        match *self {
            Opening::Probing { probe, .. } | Opening::Racing { probe, .. } => Some(probe),
            _ => None,
        }
    }
}

impl Core {
    /// The protocol era: once the opening settled it, or from the start when [`Config::era`]
    /// forces one.
    ///
    /// [`Config::era`]: super::Config::era
    pub(super) fn era(&self) -> Option<Era> {
        match &self.opening {
            Opening::Open { era, .. } => Some(*era),
            Opening::Renewing { .. } => Some(Era::Legacy),
            Opening::Closed { era, .. } => *era,
            _ => match self.config.era {
                EraChoice::Legacy => Some(Era::Legacy),
                EraChoice::Modern => Some(Era::Modern),
                _ => None,
            },
        }
    }

    /// A whole line of the stream was read (`ignored`: [`Junk::ignored`] before it): during the
    /// opening, or before it (a program prints before it is sent anything), note whether it was
    /// JSON-RPC (see [`Junk`]).
    pub(super) fn after_line(&mut self, line: &[u8], ignored: u64, now: Instant) {
        let opening = matches!(
            self.opening,
            Opening::New
                | Opening::Probing { .. }
                | Opening::Racing { .. }
                | Opening::Initializing { .. }
        );
        if self.junk.spoke || !opening || line.trim_ascii().is_empty() {
            return;
        }
        if self.junk.ignored > ignored {
            self.junk.lines += 1;
            if self.junk.first.is_none() {
                self.junk.first = Some((quote_line(line), now));
            }
            return;
        }
        // JSON-RPC: the verdict's timer, if armed, goes.
        self.junk.spoke = true;
        for id in [self.opening.init_request(), self.opening.probe_request()]
            .into_iter()
            .flatten()
        {
            if self.pending.wake_of(id) == Some(Wake::JunkVerdict) {
                self.pending.set_wake(id, None);
            }
        }
    }

    /// See [`Session::printed_only_junk`](super::Session::printed_only_junk).
    pub(super) fn printed_only_junk(&self) -> Option<(&str, u64)> {
        let (printed, _) = self.junk.first.as_ref().filter(|_| !self.junk.spoke)?;
        Some((printed, self.junk.lines.saturating_sub(1)))
    }

    /// After every input: when the program wrote only lines that are not JSON-RPC during the
    /// opening, the opening's last request gets the verdict's timer (see [`Junk`]), unless the
    /// probe's fallback is still due (it sends `initialize`, which then gets it).
    pub(super) fn arm_junk_verdict(&mut self) {
        let (Some((_, since)), Some(bound), false) =
            (&self.junk.first, self.config.junk_timeout, self.junk.spoke)
        else {
            return;
        };
        let id = match self.opening {
            Opening::Initializing { init } | Opening::Racing { init, .. } => init,
            Opening::Probing { probe, .. } => probe,
            _ => return,
        };
        if self.pending.wake_of(id).is_some() {
            return;
        }
        let Some(sent) = self.pending.get(&id).and_then(|p| p.started) else {
            return;
        };
        if let Some(at) = (*since).max(sent).checked_add(bound) {
            self.pending.set_wake(id, Some((at, Wake::JunkVerdict)));
        }
    }

    /// The verdict's timer of the opening's request `id` fired: the program is not an MCP server.
    pub(super) fn junk_verdict(&mut self, id: RequestId) {
        let mine = [self.opening.init_request(), self.opening.probe_request()].contains(&Some(id));
        let (Some((printed, _)), false, true) = (&self.junk.first, self.junk.spoke, mine) else {
            return;
        };
        let Some(unanswered) = self.pending.get(&id).map(|p| p.method.to_string()) else {
            return;
        };
        let error = SessionError::NotAnMcpServer {
            printed: printed.clone(),
            more: self.junk.lines.saturating_sub(1),
            unanswered,
        };
        self.fail(error);
    }

    /// `New` → the first request of the opening, by [`Config::era`](super::Config::era).
    pub(super) fn open(&mut self, now: Instant) -> Result<RequestId, crate::UsageError> {
        match self.opening {
            Opening::New => {}
            Opening::Closed { .. } => return Err(crate::UsageError::Closed),
            _ => return Err(crate::UsageError::AlreadyInitialized),
        }
        Ok(match self.config.era {
            EraChoice::Legacy | EraChoice::LegacyFirst => {
                let init = self.send_initialize(now);
                self.opening = Opening::Initializing { init };
                init
            }
            EraChoice::Modern => self.probe(now, None, None),
            EraChoice::Auto => {
                let at = now.checked_add(self.config.probe_timeout);
                self.probe(now, at, None)
            }
        })
    }

    /// Sends `server/discover` (a first one, or again in another version): `Probing`, or
    /// `Racing` when `initialize` is out too. `fallback_at`: when `initialize` is sent as well
    /// if nothing answered by then; `failed`: why `initialize` failed, when it did.
    fn probe(
        &mut self,
        now: Instant,
        fallback_at: Option<Instant>,
        failed: Option<SessionError>,
    ) -> RequestId {
        let probe = self.send_discover(now);
        if let Some(at) = fallback_at {
            self.pending.set_wake(probe, Some((at, Wake::Fallback)));
        }
        self.opening = match std::mem::replace(&mut self.opening, Opening::New) {
            Opening::Racing { init, .. } => Opening::Racing { probe, init },
            Opening::Probing { failed: held, .. } => Opening::Probing {
                probe,
                failed: failed.or(held),
            },
            _ => Opening::Probing { probe, failed },
        };
        probe
    }

    /// `Open(Legacy)` → `Renewing`: the HTTP session expired (see
    /// [`Session::restart`](super::Session::restart)); `Renewing` stays (a restart under way
    /// starts nothing new). `expired` is marked to go out again once renewed.
    pub(super) fn renew(
        &mut self,
        expired: Option<RequestId>,
        now: Instant,
    ) -> Result<(), crate::UsageError> {
        if self.era() == Some(Era::Modern) {
            return Err(crate::UsageError::Stateless);
        }
        let renewing = match self.opening {
            Opening::Open { .. } => false,
            Opening::Renewing { .. } => true,
            Opening::Closed { .. } => return Err(crate::UsageError::Closed),
            _ => return Err(crate::UsageError::NotReady),
        };
        if let Some(p) = expired.and_then(|id| self.pending.get_mut(&id)) {
            p.unsent = true;
        }
        if !renewing {
            let init = self.send_initialize(now);
            if let Opening::Open { server, .. } = std::mem::replace(&mut self.opening, Opening::New)
            {
                self.opening = Opening::Renewing { init, server };
            }
        }
        Ok(())
    }

    /// The probe's fallback is due: `Probing` → `Racing`, `initialize` sent as well, and whichever
    /// answer settles the era first wins.
    pub(super) fn probe_fallback(&mut self, id: RequestId, now: Instant) {
        if let Opening::Probing {
            probe,
            failed: None,
        } = self.opening
        {
            if probe == id {
                let init = self.send_initialize(now);
                self.opening = Opening::Racing { probe, init };
            }
        }
    }

    /// Request `id`, already out of the pending table, could not be delivered (see
    /// [`Session::handle_undeliverable`](super::Session::handle_undeliverable)): what that does
    /// to the opening, and whom it hits.
    pub(super) fn undeliverable(&mut self, id: RequestId, now: Instant) -> Casualties {
        let hit = Casualties {
            request: Some(id),
            session: false,
        };
        match self.opening {
            // The probe was refused or lost: with `Auto`, that is the legacy era's answer (a
            // legacy HTTP server refuses a request outside a session); `initialize` follows,
            // and if the server cannot be reached at all, it fails with the same error.
            Opening::Probing { probe, .. } | Opening::Racing { probe, .. } if probe == id => {
                self.probe_refused(id, now)
            }
            Opening::Racing { probe, init } if init == id => {
                // Racing the probe: the probe may still show a modern server.
                self.opening = Opening::Probing {
                    probe,
                    failed: Some(SessionError::Initialize(RequestError::Closed)),
                };
                hit
            }
            Opening::Initializing { init } | Opening::Renewing { init, .. } if init == id => {
                self.fail(SessionError::Initialize(RequestError::Closed));
                Casualties {
                    request: Some(id),
                    session: true,
                }
            }
            _ => hit,
        }
    }

    /// Whether `id` is the opening's `server/discover`, and, if so, the opening fails (see
    /// [`Session::handle_unreachable`](super::Session::handle_unreachable)): a probe that meets
    /// a failure no request escapes is no sign of a legacy server.
    pub(super) fn probe_unreachable(&mut self, id: RequestId) -> Option<Casualties> {
        if self.opening.probe_request() != Some(id) || self.pending.remove(&id).is_none() {
            return None;
        }
        self.fail(SessionError::Discover(RequestError::Closed));
        Some(Casualties {
            request: Some(id),
            session: true,
        })
    }

    /// Request `id` timed out or was given up on. One of the opening's own requests is the
    /// opening's to settle (`None` comes back); any other request's `error` comes back.
    ///
    /// > "The `initialize` request **MUST NOT** be cancelled by clients" — MCP 2025-11-25,
    /// > Utilities § Cancellation
    pub(super) fn opening_gave_up(
        &mut self,
        id: RequestId,
        error: RequestError,
        now: Instant,
    ) -> Option<RequestError> {
        match self.opening {
            Opening::Racing { probe, init } if init == id => {
                // The probe may still show a modern server; `initialize` is out of the race.
                self.pending.remove(&id);
                self.opening = Opening::Probing {
                    probe,
                    failed: Some(SessionError::Initialize(error)),
                };
                None
            }
            Opening::Initializing { init } | Opening::Renewing { init, .. } if init == id => {
                self.pending.remove(&id);
                self.fail(SessionError::Initialize(error));
                None
            }
            Opening::Probing { probe, .. } | Opening::Racing { probe, .. } if probe == id => {
                // The opening's `server/discover` timed out: the probe's rules decide.
                self.complete(id, Err(error), now);
                None
            }
            _ => Some(error),
        }
    }

    /// Ends the session; `error` applies only if the opening had not completed.
    pub(super) fn shut(&mut self, error: Option<SessionError>) {
        let opening = match self.opening {
            Opening::Closed { .. } => return,
            Opening::New | Opening::Open { .. } => false,
            _ => true,
        };
        if let (true, Some(e)) = (opening, error) {
            // A server that ended with the era probe unanswered is a legacy server that exits on
            // unknown requests (or one that died at start): say so, so that the driver can start
            // it again in the legacy era.
            let probed = self.config.era == EraChoice::Auto
                && self
                    .opening
                    .probe_request()
                    .is_some_and(|id| self.pending.contains_key(&id));
            let e = match e {
                SessionError::Closed if probed => SessionError::EndedOnProbe,
                e => e,
            };
            return self.fail(e);
        }
        // The opening's own requests end with it, unless it had completed (a renewal's).
        let renewing = self.opening.server().is_some();
        let owned = self.close_opening();
        self.drop_all_asks();
        for (id, _) in self.pending.take_all() {
            if renewing || !owned.contains(&Some(id)) {
                self.events.push_back(Event::Response {
                    id,
                    result: Err(RequestError::Closed),
                });
            }
        }
        self.events.push_back(Event::Closed);
    }

    /// The opening failed (or a renewal did): the session closes with `error`.
    pub(super) fn fail(&mut self, error: SessionError) {
        let owned = self.close_opening();
        self.drop_all_asks();
        self.events.push_back(Event::Failed(error));
        // Requests kept across a restart end with the session.
        for (id, _) in self.pending.take_all() {
            if !owned.contains(&Some(id)) {
                self.events.push_back(Event::Response {
                    id,
                    result: Err(RequestError::Closed),
                });
            }
        }
    }

    /// → `Closed`, keeping the era and what the server said; returns the opening's own requests
    /// that were out (their outcome was the opening's).
    fn close_opening(&mut self) -> [Option<RequestId>; 2] {
        let era = self.era();
        let owned = [self.opening.init_request(), self.opening.probe_request()];
        let server = match std::mem::replace(&mut self.opening, Opening::New) {
            Opening::Open { server, .. } | Opening::Renewing { server, .. } => Some(server),
            Opening::Closed { server, .. } => server,
            _ => None,
        };
        self.opening = Opening::Closed { era, server };
        owned
    }

    /// The opening's `initialize` was answered (its entry is out of the pending table).
    pub(super) fn initialize_answered(
        &mut self,
        outcome: Result<Reply, RequestError>,
        now: Instant,
    ) {
        let init = match super::legacy::read_initialize(outcome) {
            Ok(init) => init,
            Err(e) => return self.initialize_failed(e, now),
        };
        // > "If the client does not support the version in the server's response, it SHOULD
        // > disconnect." — MCP 2025-11-25, Lifecycle § Version Negotiation
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
            return self.fail(SessionError::UnsupportedVersion {
                offered: init.protocol_version,
                supported: SUPPORTED_PROTOCOL_VERSIONS
                    .iter()
                    .map(|v| v.to_string())
                    .collect(),
            });
        }
        let before = std::mem::replace(
            &mut self.opening,
            Opening::Open {
                era: Era::Legacy,
                server: init,
            },
        );
        if let Opening::Racing { probe, .. } = before {
            // The legacy answer came first: the probe is out of the race (its answer is late).
            self.pending.remove(&probe);
        }
        // > "After successful initialization, the client MUST send an initialized notification"
        // > — MCP 2025-11-25, Lifecycle § Initialization
        self.notify("notifications/initialized", None);
        if let Opening::Renewing { .. } = before {
            self.send_held();
        } else {
            self.events.push_back(Event::Ready);
        }
    }

    /// `initialize` failed (refused, unreadable): while the probe races it, the failure waits for
    /// the probe (`Racing` → `Probing`); else see [`initialize_refused`](Self::initialize_refused).
    fn initialize_failed(&mut self, error: RequestError, now: Instant) {
        if let Opening::Racing { probe, .. } = self.opening {
            self.opening = Opening::Probing {
                probe,
                failed: Some(SessionError::Initialize(error)),
            };
            return;
        }
        self.initialize_refused(error, true, now)
    }

    /// `initialize` failed with no probe racing it. A -32022 that names a version both speak is
    /// answered by speaking it: a modern one by `server/discover` with it (unless `may_probe` is
    /// false: a probe just said the server is not modern), a legacy one by `initialize` offering
    /// it (once). With [`EraChoice::LegacyFirst`], any other JSON-RPC refusal sends the probe.
    /// Else (and always while renewing) the session fails, saying what happened.
    ///
    /// > "a recognized modern JSON-RPC error (such as `UnsupportedProtocolVersionError`)
    /// > identifies a modern server: the client retries with a supported version rather than
    /// > falling back." / "The client **SHOULD** select a mutually supported version from the
    /// > `supported` list and retry the request, or surface an error to the user if no
    /// > compatible version exists." — MCP 2026-07-28, Versioning
    fn initialize_refused(&mut self, error: RequestError, may_probe: bool, now: Instant) {
        if self.opening.server().is_some() {
            return self.fail(SessionError::Initialize(error));
        }
        let modern_allowed = self.config.era != EraChoice::Legacy && may_probe;
        if let Some((theirs, rpc)) = super::modern::unsupported_version(&error) {
            let offered = self.legacy_offer.unwrap_or(LATEST_PROTOCOL_VERSION);
            let modern = super::modern::common_modern(&theirs).filter(|_| modern_allowed);
            if let Some(v) = modern.filter(|_| self.modern.reprobe()) {
                // A modern server that refuses `initialize`: speak its version.
                self.modern.set_version(v);
                self.probe(now, None, Some(SessionError::Initialize(error)));
                return;
            }
            let legacy = super::modern::common_legacy_version(&theirs);
            if let (None, Some(v)) = (self.legacy_offer, legacy.filter(|v| *v != offered)) {
                self.legacy_offer = Some(v);
                let init = self.send_initialize(now);
                self.opening = Opening::Initializing { init };
                return;
            }
            if theirs.iter().any(|t| t == offered) {
                // It refused the very version it lists: say so, rather than quote a list that
                // has the version in it as if it did not.
                let failure = self.version_failure(theirs, offered, &rpc.message);
                return self.fail(failure);
            }
            // No version to retry with: the server's own words say why.
            return self.fail(SessionError::Initialize(error));
        }
        let legacy_first = self.config.era == EraChoice::LegacyFirst;
        if legacy_first && may_probe && matches!(error, RequestError::Rpc(_)) {
            // The remembered era was wrong: probe, as `Auto` would have.
            self.probe(now, None, Some(SessionError::Initialize(error)));
            return;
        }
        self.fail(SessionError::Initialize(error))
    }

    /// The probe got no usable answer (an HTTP refusal, a lost request): with `Auto`, the server
    /// is legacy; in the modern era only, the opening fails.
    fn probe_refused(&mut self, id: RequestId, now: Instant) -> Casualties {
        if self.config.era == EraChoice::Modern {
            self.fail(SessionError::Discover(RequestError::Closed));
            return Casualties {
                request: Some(id),
                session: true,
            };
        }
        self.legacy_fallback(now);
        Casualties::default()
    }

    /// The server is not modern (or speaks no modern version of ours): the legacy handshake, on
    /// the same connection — unless `initialize` is already out (`Racing` → `Initializing`), or
    /// already failed, in which case its failure decides.
    fn legacy_fallback(&mut self, now: Instant) {
        match std::mem::replace(&mut self.opening, Opening::New) {
            Opening::Racing { init, .. } => self.opening = Opening::Initializing { init },
            // `initialize` was refused already: what it said decides (a -32022 naming a legacy
            // version both speak is answered with it; the probe said the server is not modern).
            Opening::Probing {
                failed: Some(SessionError::Initialize(e)),
                ..
            } => self.initialize_refused(e, false, now),
            Opening::Probing {
                failed: Some(e), ..
            } => self.fail(e),
            Opening::Probing { failed: None, .. } => {
                let init = self.send_initialize(now);
                self.opening = Opening::Initializing { init };
            }
            other => self.opening = other,
        }
    }

    /// The opening's `server/discover` ended (its entry is out of the pending table).
    pub(super) fn discover_answered(&mut self, outcome: Result<Reply, RequestError>, now: Instant) {
        use super::modern::{common_legacy, common_modern, is_modern_error, supported_versions};
        let auto = self.config.era != EraChoice::Modern;
        match outcome {
            Ok(Reply::Discover(d)) => {
                if let Some(v) = common_modern(&d.supported_versions) {
                    return self.become_modern(v, *d);
                }
                if auto && common_legacy(&d.supported_versions) {
                    // A dual-era server whose modern versions are not ours.
                    return self.legacy_fallback(now);
                }
                // No modern version in common, and (forced modern) the legacy ones do not count.
                let theirs = d.supported_versions;
                let ours = self.ours();
                self.fail(SessionError::NoCommonVersion { theirs, ours })
            }
            Err(RequestError::Rpc(e)) if is_modern_error(&e) => {
                // A modern server. -32022 names the versions it speaks.
                if let Some(theirs) = supported_versions(&e) {
                    // Retried once, even with the version just sent: a server may refuse a
                    // request it could serve (the conformance suite's `request-metadata` does),
                    // and the list it sends is what counts.
                    let retry = !std::mem::replace(&mut self.modern.discover_retried, true);
                    if let Some(v) = common_modern(&theirs).filter(|_| retry) {
                        self.modern.set_version(v);
                        self.stats.version_retries += 1;
                        self.probe(now, None, None);
                        return;
                    }
                    if auto && common_legacy(&theirs) {
                        return self.legacy_fallback(now);
                    }
                    let failure = self.version_failure(theirs, self.modern.version, &e.message);
                    return self.fail(failure);
                }
                self.fail(SessionError::Discover(super::modern::modern_error(e)))
            }
            // Anything else from the probe: not a modern server.
            //
            // > "The server returns any other error, or does not respond within a reasonable
            // > timeout: the server is legacy." — MCP 2026-07-28, stdio § Backward Compatibility
            Err(_) | Ok(_) if auto => self.legacy_fallback(now),
            Err(e) => self.fail(SessionError::Discover(e)),
            Ok(other) => self.fail(SessionError::Discover(RequestError::InvalidResult {
                method: "server/discover".into(),
                reason: format!("decoded as {other:?}"),
            })),
        }
    }

    /// The server is modern and speaks `version`: `Open(Modern)`.
    fn become_modern(&mut self, version: &'static str, discover: DiscoverResult) {
        if let Opening::Racing { init, .. } = self.opening {
            // `initialize` raced the probe and lost: its answer is late now.
            self.pending.remove(&init);
        }
        self.modern.set_version(version);
        let server = InitializeResult {
            protocol_version: version.to_owned(),
            capabilities: discover.capabilities.clone(),
            server_info: discover
                .server_info()
                .unwrap_or_else(|| Implementation::new("", "")),
            instructions: discover.instructions.clone(),
        };
        self.modern.discover = Some(discover);
        self.opening = Opening::Open {
            era: Era::Modern,
            server,
        };
        self.events.push_back(Event::Ready);
    }
}
