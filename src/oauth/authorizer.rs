//! One connection's credentials, and what to do when the server refuses them.

use super::assertion::jti;
use super::dpop::{accept_nonce, DpopKey, USE_DPOP_NONCE};
use super::{AuthError, Credentials, FlowStart, Reason};
use super::{BearerChallenge, Secret};
use crate::http::{header, redact_url, HttpRequest};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The most authorizations for one request, the first (after its `401`) included: the rest are
/// step-ups (`403 insufficient_scope`, each asking for the union of the scopes so far and the
/// challenge's). The conformance suite's `auth/scope-retry-limit` counts them so.
///
/// > "Retry the original request with the new authorization no more than a few times and treat
/// > this as a permanent authorization failure" — MCP 2026-07-28, Step-Up Authorization Flow
pub const MAX_STEP_UPS: u8 = 3;

/// What one request has been through (a driver keeps one per request, across its retries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attempt {
    /// Flows run after a `401`.
    pub reauthorized: u8,
    /// Flows run after a `403 insufficient_scope`.
    pub step_ups: u8,
    /// Retries because another request had already renewed the credentials.
    pub raced: u8,
    /// Retries with the resource server's new DPoP nonce (`use_dpop_nonce`, at most one).
    pub nonce_retries: u8,
}

/// A request's place in the queue for the connection's one flow, taken with the verdict that
/// sent it there ([`Authorizer::ticket`]) and shown when its turn comes
/// ([`Authorizer::on_turn`]): what the credentials and the flows were when it started waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    generation: u64,
    flows: u64,
}

/// What a request whose verdict was [`Verdict::Authorize`] does when its turn comes
/// ([`Authorizer::on_turn`]). Exhaustive on purpose: each variant is an action of the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// A flow that ran while it waited changed the credentials: send the request again with
    /// them, without a flow of its own.
    Retry,
    /// A flow that ran while it waited failed: the request fails with the same error, rather
    /// than ask the person again once per waiting request.
    Fail(AuthError),
    /// Run this flow (the request's own), hand its outcome to [`Authorizer::flow_ended`], then
    /// send the request again.
    Run(Box<FlowStart>),
}

/// What to do with a response. Exhaustive on purpose: each variant is an action of the driver
/// (see the crate docs, "Which enums are `#[non_exhaustive]`").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not an authorization matter: go on with the response.
    Proceed,
    /// The credentials changed since the request was sent: send it again as it is.
    Retry,
    /// Run a flow from this start, then send the request again.
    Authorize(Box<FlowStart>),
    /// Give up: the request fails with this.
    Fail(AuthError),
}

/// One connection's credentials and the rules of its retries: a `401` leads to one refresh or
/// re-authorization and one retry; a `403 insufficient_scope` to at most [`MAX_STEP_UPS`]
/// step-ups; an expired token (by the clock) to a refresh before the request is sent.
///
/// One flow at a time, for every request that needs one: a driver runs each flow while holding
/// the connection's one flow lock, and the authorizer says what each request does when it gets
/// the lock. In this order:
///
/// 1. Before sending: [`before_send`](Self::before_send). `None`: send with
///    [`authorization`](Self::authorization) and remember [`generation`](Self::generation). `Some`: take the
///    flow lock, ask `before_send` again (another request may have run it meanwhile), run the
///    flow it still gives, and hand its outcome to [`flow_ended`](Self::flow_ended).
/// 2. After a response: [`on_response`](Self::on_response). On [`Verdict::Authorize`], take a
///    [`ticket`](Self::ticket) at once, then the flow lock, then ask
///    [`on_turn`](Self::on_turn): [`Turn::Run`] runs the flow and hands its outcome to
///    [`flow_ended`](Self::flow_ended); [`Turn::Retry`] and [`Turn::Fail`] carry the outcome of
///    the flow that ran while the request waited.
///
/// So several requests that meet a `401` together share one authorization, and a person is
/// asked once, not once per waiting request.
///
/// > "Invalid or expired tokens **MUST** receive a HTTP 401 response." — MCP 2025-11-25,
/// > Authorization § Token Handling
#[derive(Debug, Clone)]
pub struct Authorizer {
    resource_url: String,
    current: Option<Credentials>,
    generation: u64,
    /// Authorize before the first request.
    upfront: bool,
    /// A flow ended (so the up-front one is no longer due).
    flowed: bool,
    /// Flows ended that ran after a `401` or `403` ([`Turn::Run`]).
    flows: u64,
    /// How the last of them failed, if it did.
    failed: Option<AuthError>,
    /// The DPoP key requests with a DPoP-bound token are signed with.
    dpop_key: Option<Arc<DpopKey>>,
    /// The resource server's latest `DPoP-Nonce`.
    dpop_nonce: Option<String>,
    /// The seed of the proofs' `jti`s, and how many were made.
    dpop_seed: [u8; 16],
    proofs: u64,
}

impl Authorizer {
    /// An authorizer for the MCP endpoint at `resource_url`, with no credentials yet.
    pub fn new(resource_url: impl Into<String>) -> Authorizer {
        Authorizer {
            resource_url: resource_url.into(),
            current: None,
            generation: 0,
            upfront: false,
            flowed: false,
            flows: 0,
            failed: None,
            dpop_key: None,
            dpop_nonce: None,
            dpop_seed: [0; 16],
            proofs: 0,
        }
    }

    /// Signs each request that carries a DPoP-bound token with `key` (the key the flows use:
    /// [`AuthOptions::dpop_key`](super::AuthOptions::dpop_key)); `seed` is 16 random bytes, the
    /// root of every proof's `jti`.
    pub fn with_dpop(mut self, key: Option<Arc<DpopKey>>, seed: [u8; 16]) -> Authorizer {
        self.dpop_key = key;
        self.dpop_seed = seed;
        self
    }

    /// The DPoP proof for a request to the resource, at `now`: `method`, `url` and the
    /// `Authorization` value it carries. `None` unless that value is a DPoP-bound token's
    /// (`DPoP …`, [`authorization`](Self::authorization)) and the key is at hand. A fresh one for
    /// every request and every retry: its own `jti`, the token's hash (`ath`), and the resource
    /// server's latest nonce.
    ///
    /// > "the client MUST send … a DPoP proof … in the DPoP header … A DPoP proof … for each
    /// > request … ath … MUST be included" — RFC 9449 § 7.1, § 4.2
    pub fn dpop_proof(
        &mut self,
        method: &str,
        url: &str,
        authorization: &str,
        now: SystemTime,
    ) -> Option<String> {
        let token = authorization
            .strip_prefix("DPoP ")
            .or_else(|| authorization.strip_prefix("dpop "))?;
        let key = self.dpop_key.as_ref()?;
        self.proofs += 1;
        let jti = jti(&[&self.dpop_seed, &self.proofs.to_be_bytes()]);
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Some(key.proof(
            method,
            url,
            now,
            &jti,
            Some(token),
            self.dpop_nonce.as_deref(),
        ))
    }

    /// Signs `request` (to the resource, at `now`) when it carries a DPoP-bound token: its
    /// `DPoP` header becomes a fresh [`dpop_proof`](Self::dpop_proof) for its method, URL and
    /// token. A request with a Bearer token, or none, is left as it is. A driver calls this on
    /// every request it sends, resends and reconnections included.
    pub fn sign(&mut self, request: &mut HttpRequest, now: SystemTime) {
        if self.dpop_key.is_none() {
            return;
        }
        let Some(authorization) = header(&request.headers, "authorization") else {
            return;
        };
        let Some(proof) =
            self.dpop_proof(request.method.as_str(), &request.url, authorization, now)
        else {
            return;
        };
        request
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("dpop"));
        request.headers.push(("DPoP".into(), proof.into()));
    }

    /// A response's `DPoP-Nonce` header: the resource server's nonce for the next proofs (one
    /// that is empty, too long or of other characters is ignored).
    ///
    /// > "the resource server … MAY … provide a new nonce … in the DPoP-Nonce HTTP header" —
    /// > RFC 9449 § 9
    pub fn on_dpop_nonce(&mut self, value: &str) {
        if self.dpop_key.is_some() {
            if let Some(nonce) = accept_nonce(value) {
                self.dpop_nonce = Some(nonce.to_owned());
            }
        }
    }

    /// Whether requests are signed: a DPoP key is at hand (check before
    /// [`dpop_proof`](Self::dpop_proof), which a Bearer connection never needs).
    pub fn signs(&self) -> bool {
        self.dpop_key.is_some()
    }

    /// Authorizes before the first request (the application asked to), instead of waiting for
    /// the server's `401`: [`before_send`](Self::before_send) gives [`upfront`](Self::upfront)'s
    /// start until a flow has ended.
    pub fn with_upfront(mut self, upfront: bool) -> Authorizer {
        self.upfront = upfront;
        self
    }

    /// The credentials in use.
    pub fn current(&self) -> Option<&Credentials> {
        self.current.as_ref()
    }

    /// Counts the changes of credentials: a request remembers the generation it was sent with.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The `Authorization` value to send (`Bearer …`, or `DPoP …` for a DPoP-bound token,
    /// which goes with a proof: [`dpop_proof`](Self::dpop_proof)), if any.
    ///
    /// > "MCP client **MUST** use the Authorization request header field … `Authorization:
    /// > Bearer <access-token>` … Access tokens **MUST NOT** be included in the URI query
    /// > string" — MCP 2025-11-25, Access Token Usage; "a DPoP-bound access token is sent using
    /// > the Authorization request header field … using an authentication scheme of DPoP" — RFC
    /// > 9449 § 7.1
    pub fn authorization(&self) -> Option<Secret> {
        self.current.as_ref().map(|c| {
            let scheme = if c.tokens.dpop_jkt.is_some() {
                "DPoP"
            } else {
                "Bearer"
            };
            Secret::new(format!("{scheme} {}", c.tokens.access_token.expose()))
        })
    }

    /// Takes credentials a flow ended with.
    pub fn install(&mut self, credentials: Credentials) {
        self.current = Some(credentials);
        self.generation += 1;
    }

    /// Drops the credentials.
    pub fn clear(&mut self) {
        if self.current.take().is_some() {
            self.generation += 1;
        }
    }

    /// A flow started for `reason` failed with `error`: what the request does next. A refresh
    /// before sending ([`Reason::Expired`]) that failed drops the expired credentials and lets
    /// the request go without them (`Ok`): the server's `401` then decides, through
    /// [`on_response`](Self::on_response). Any other failure is the request's (`Err`).
    pub fn flow_failed(&mut self, reason: Reason, error: AuthError) -> Result<(), AuthError> {
        if reason == Reason::Expired {
            self.clear();
            return Ok(());
        }
        Err(error)
    }

    /// Before sending at `now`: a flow to run first — a refresh when the access token is past
    /// its expiry and there is a refresh token (without one, nothing: the server's `401`
    /// decides), or the authorization up front ([`with_upfront`](Self::with_upfront)) when no
    /// flow has ended yet and there are no credentials.
    pub fn before_send(&self, now: SystemTime) -> Option<FlowStart> {
        if self.upfront && !self.flowed && self.current.is_none() {
            return Some(self.upfront());
        }
        let c = self.current.as_ref()?;
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        (!c.tokens.is_fresh(now) && c.tokens.refresh_token.is_some()).then(|| FlowStart {
            resource_url: self.resource_url.clone(),
            challenge: None,
            reason: Reason::Expired,
            previous: Some(c.clone()),
        })
    }

    /// The first flow, before any request (when the application asks to authorize up front).
    pub fn upfront(&self) -> FlowStart {
        FlowStart {
            resource_url: self.resource_url.clone(),
            challenge: None,
            reason: Reason::Upfront,
            previous: self.current.clone(),
        }
    }

    /// The place in the queue for the flow of a request sent with credentials of
    /// `sent_generation` whose verdict was [`Verdict::Authorize`]: taken with the verdict,
    /// before waiting for the flow lock.
    pub fn ticket(&self, sent_generation: u64) -> Ticket {
        Ticket {
            generation: sent_generation,
            flows: self.flows,
        }
    }

    /// What the request holding `ticket` does now that the flow lock is its: the flow `start`
    /// its verdict gave, unless one that ran while it waited decided for it — changed
    /// credentials are used as they are ([`Turn::Retry`]), a failure is shared
    /// ([`Turn::Fail`]).
    pub fn on_turn(&self, ticket: Ticket, start: FlowStart) -> Turn {
        if self.generation != ticket.generation {
            return Turn::Retry;
        }
        if self.flows != ticket.flows {
            if let Some(e) = &self.failed {
                return Turn::Fail(e.clone());
            }
        }
        Turn::Run(Box::new(start))
    }

    /// A flow started for `reason` (from [`before_send`](Self::before_send) or
    /// [`Turn::Run`]) ended with `outcome`: its credentials are installed, or its failure is
    /// handled as [`flow_failed`](Self::flow_failed) says; what the request that ran it does
    /// next (`Ok`: send it). A flow run after a `401` or `403` is remembered for the requests
    /// that waited for it ([`on_turn`](Self::on_turn)).
    pub fn flow_ended(
        &mut self,
        reason: Reason,
        outcome: Result<Credentials, AuthError>,
    ) -> Result<(), AuthError> {
        self.flowed = true;
        let next = match outcome {
            Ok(credentials) => {
                self.install(credentials);
                Ok(())
            }
            Err(e) => self.flow_failed(reason, e),
        };
        if matches!(reason, Reason::Unauthorized | Reason::InsufficientScope) {
            self.flows += 1;
            self.failed = next.as_ref().err().cloned();
        }
        next
    }

    /// The verdict on a response to a request sent with credentials of `sent_generation`:
    /// its status and `WWW-Authenticate` header.
    pub fn on_response(
        &self,
        attempt: &mut Attempt,
        sent_generation: u64,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Verdict {
        let challenge = www_authenticate.and_then(BearerChallenge::from_header);
        let url = redact_url(&self.resource_url);
        let stale = sent_generation != self.generation;
        match status {
            // > "the resource server … responds with an HTTP 401 … WWW-Authenticate …
            // > error="use_dpop_nonce" … and a DPoP-Nonce HTTP header … the client … retries
            // > the request using the server-provided nonce" — RFC 9449 § 9. Once per request,
            // > and only with a nonce at hand (the response's, kept by `on_dpop_nonce`).
            401 if challenge
                .as_ref()
                .is_some_and(|c| c.dpop && c.error.as_deref() == Some(USE_DPOP_NONCE))
                && self.dpop_nonce.is_some()
                && attempt.nonce_retries < 1 =>
            {
                attempt.nonce_retries += 1;
                Verdict::Retry
            }
            401 => {
                if stale && attempt.raced < 4 {
                    attempt.raced += 1;
                    return Verdict::Retry;
                }
                if attempt.reauthorized >= 1 {
                    return Verdict::Fail(AuthError::Rejected { url });
                }
                attempt.reauthorized += 1;
                Verdict::Authorize(Box::new(FlowStart {
                    resource_url: self.resource_url.clone(),
                    challenge,
                    reason: Reason::Unauthorized,
                    previous: self.current.clone(),
                }))
            }
            403 => {
                let Some(challenge) =
                    challenge.filter(|c| c.error.as_deref() == Some("insufficient_scope"))
                else {
                    return Verdict::Proceed;
                };
                if stale && attempt.raced < 4 {
                    attempt.raced += 1;
                    return Verdict::Retry;
                }
                if attempt.step_ups + attempt.reauthorized >= MAX_STEP_UPS {
                    return Verdict::Fail(AuthError::InsufficientScope {
                        url,
                        scope: challenge.scope.unwrap_or_default(),
                        attempts: attempt.step_ups + attempt.reauthorized,
                    });
                }
                attempt.step_ups += 1;
                Verdict::Authorize(Box::new(FlowStart {
                    resource_url: self.resource_url.clone(),
                    challenge: Some(challenge),
                    reason: Reason::InsufficientScope,
                    previous: self.current.clone(),
                }))
            }
            _ => Verdict::Proceed,
        }
    }
}
