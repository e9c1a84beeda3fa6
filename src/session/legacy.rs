//! The legacy era's handshake (2024-11-05 … 2025-11-25): `initialize`, version negotiation,
//! `notifications/initialized`, and the renewal of an expired HTTP session.

use super::request::Decoder;
use super::{Core, EraChoice, Event, Reply, Request, Session, State, Transmit, TransmitKind};
use crate::error::{RequestError, SessionError, UsageError};
use crate::jsonrpc::RequestId;
use crate::types::{
    InitializeParams, InitializeResult, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
use std::time::Instant;

impl Session {
    /// Starts the handshake: queues `initialize` offering the latest legacy revision.
    ///
    /// > "The initialization phase MUST be the first interaction between client and server."
    /// > — MCP 2025-11-25, Lifecycle § Initialization
    ///
    /// This is the opening in every era ([`Config::era`](super::Config::era)): the legacy
    /// handshake, `server/discover` in the modern era, or the probe that finds out. The returned
    /// id is the opening's first request; its outcome is [`Event::Ready`] or
    /// [`Event::Failed`], not a response.
    pub fn initialize(&mut self, now: Instant) -> Result<RequestId, UsageError> {
        self.core.now = Some(now);
        match self.core.state {
            State::New => {}
            State::Closed => return Err(UsageError::Closed),
            State::Initializing | State::Ready => return Err(UsageError::AlreadyInitialized),
        }
        Ok(match self.core.config.era {
            EraChoice::Legacy | EraChoice::LegacyFirst => self.core.initialize_inner(now),
            EraChoice::Modern => self.core.discover(now, None),
            EraChoice::Auto => {
                let at = now.checked_add(self.core.config.probe_timeout);
                self.core.discover(now, at)
            }
        })
    }
}

impl Core {
    /// Sends `initialize`, offering the latest legacy revision (or the one a -32022 named, see
    /// `initialize_refused`).
    pub(super) fn initialize_inner(&mut self, now: Instant) -> RequestId {
        let params = InitializeParams {
            protocol_version: self
                .legacy_offer
                .unwrap_or(LATEST_PROTOCOL_VERSION)
                .to_owned(),
            capabilities: self.config.capabilities.to_json(),
            client_info: self.config.client_info.clone(),
        };
        let params = serde_json::to_value(params).expect("InitializeParams serializes");
        let request = Request {
            decoder: Decoder::handshake(),
            ..Request::new("initialize", Some(params))
        };
        let id = RequestId(self.fresh_id());
        self.enqueue_as(id, request, now, true, false);
        self.init_id = Some(id);
        self.state = State::Initializing;
        id
    }
}

impl Session {
    /// The transport's session is gone (over HTTP: a 404 to a message that carried a session id),
    /// so start a new one: a fresh `initialize` is queued. `expired` is the request that met the
    /// expired session (`None` when a notification or response did): it is marked to be sent
    /// again, with its id, deadline and waiter unchanged, once the new session is ready. Other
    /// pending requests are not resent: they were accepted and are being answered on their own
    /// (over HTTP, on their own response streams), and sending them again would run them twice.
    /// Requests sent during the renewal wait for it (see [`send`](Self::send)).
    ///
    /// > "When a client receives HTTP 404 in response to a request containing an `Mcp-Session-Id`,
    /// > it MUST start a new session by sending a new `InitializeRequest` without a session ID
    /// > attached." — MCP 2025-11-25, Transports § Session Management
    ///
    /// Calling it while a restart is already under way starts nothing new, but still marks
    /// `expired` for resending.
    pub fn restart(&mut self, expired: Option<RequestId>, now: Instant) -> Result<(), UsageError> {
        if self.core.era == Some(super::Era::Modern) {
            return Err(UsageError::Stateless);
        }
        let renewing = match self.core.state {
            State::Ready => false,
            State::Initializing if self.core.init.is_some() => true,
            State::Initializing | State::New => return Err(UsageError::NotReady),
            State::Closed => return Err(UsageError::Closed),
        };
        if let Some(p) = expired.and_then(|id| self.core.pending.get_mut(&id)) {
            p.unsent = true;
        }
        if !renewing {
            self.core.initialize_inner(now);
        }
        Ok(())
    }
}

impl Core {
    pub(super) fn complete_initialize(&mut self, outcome: Result<Reply, RequestError>) {
        self.init_id = None;
        let result = outcome.and_then(|reply| match reply {
            Reply::Raw(v) => serde_json::from_value::<InitializeResult>(v).map_err(|e| {
                RequestError::InvalidResult {
                    method: "initialize".into(),
                    reason: e.to_string(),
                }
            }),
            other => Err(RequestError::InvalidResult {
                method: "initialize".into(),
                reason: format!("decoded as {other:?}"),
            }),
        });
        let init = match result {
            Ok(init) => init,
            Err(e) => return self.initialize_failed(e),
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
        let restarted = self.init.is_some();
        if let Some(probe) = self.probe_id.take() {
            // The legacy answer came first: the probe is out of the race (its answer is late).
            self.pending.remove(&probe);
        }
        self.era = Some(super::Era::Legacy);
        self.init = Some(init);
        self.state = State::Ready;
        // > "After successful initialization, the client MUST send an initialized notification"
        self.notify("notifications/initialized", None);
        if restarted {
            // A new session after the old one expired: the requests that met the expiry, and
            // those sent during the renewal, go out now; the others stay on their streams.
            for (id, p) in self.pending.iter_mut().filter(|(_, p)| p.unsent) {
                p.unsent = false;
                self.transmits.push_back(Transmit {
                    payload: p.payload.clone(),
                    kind: TransmitKind::Request {
                        id: *id,
                        wire: RequestId(p.wire().unwrap_or(id.0)),
                        method: p.method.clone(),
                    },
                    headers: Vec::new(),
                    modern: false,
                });
            }
        } else {
            self.events.push_back(Event::Ready);
        }
    }
}

impl Core {
    /// `initialize` failed (refused, unreadable): while the probe may still show a modern server
    /// the failure waits for it; else see [`initialize_refused`](Self::initialize_refused).
    fn initialize_failed(&mut self, error: RequestError) {
        if self.probe_id.is_some() {
            self.init_failed = Some(SessionError::Initialize(error));
            return;
        }
        self.initialize_refused(error, true)
    }

    /// `initialize` failed with no probe racing it. A -32022 that names a version both speak is
    /// answered by speaking it: a modern one by `server/discover` with it (unless `may_probe` is
    /// false: a probe just said the server is not modern), a legacy one by `initialize` offering
    /// it (once). With [`EraChoice::LegacyFirst`], any other JSON-RPC refusal sends the probe.
    /// Else the session fails, saying what happened.
    ///
    /// > "a recognized modern JSON-RPC error (such as `UnsupportedProtocolVersionError`)
    /// > identifies a modern server: the client retries with a supported version rather than
    /// > falling back." / "The client **SHOULD** select a mutually supported version from the
    /// > `supported` list and retry the request, or surface an error to the user if no
    /// > compatible version exists." — MCP 2026-07-28, Versioning
    pub(super) fn initialize_refused(&mut self, error: RequestError, may_probe: bool) {
        let (Some(now), None) = (self.now, self.init.as_ref()) else {
            return self.fail(SessionError::Initialize(error));
        };
        let modern_allowed = self.config.era != EraChoice::Legacy && may_probe;
        if let Some((theirs, rpc)) = super::modern::unsupported_version(&error) {
            let offered = self.legacy_offer.unwrap_or(LATEST_PROTOCOL_VERSION);
            let modern = super::modern::common_modern(&theirs).filter(|_| modern_allowed);
            if let Some(v) = modern.filter(|_| self.modern.reprobe()) {
                // A modern server that refuses `initialize`: speak its version.
                self.modern.set_version(v);
                self.init_failed = Some(SessionError::Initialize(error));
                self.discover(now, None);
                return;
            }
            let legacy = super::modern::common_legacy_version(&theirs);
            if let (None, Some(v)) = (self.legacy_offer, legacy.filter(|v| *v != offered)) {
                self.legacy_offer = Some(v);
                self.initialize_inner(now);
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
            self.init_failed = Some(SessionError::Initialize(error));
            self.discover(now, None);
            return;
        }
        self.fail(SessionError::Initialize(error))
    }
}
