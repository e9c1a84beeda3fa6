//! One connection's credentials, and what to do when the server refuses them.

use super::{AuthError, Credentials, FlowStart, Reason};
use super::{BearerChallenge, Secret};
use crate::http::redact_url;
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
/// > "Invalid or expired tokens **MUST** receive a HTTP 401 response." — MCP 2025-11-25,
/// > Authorization § Token Handling
#[derive(Debug, Clone)]
pub struct Authorizer {
    resource_url: String,
    current: Option<Credentials>,
    generation: u64,
}

impl Authorizer {
    /// An authorizer for the MCP endpoint at `resource_url`, with no credentials yet.
    pub fn new(resource_url: impl Into<String>) -> Authorizer {
        Authorizer {
            resource_url: resource_url.into(),
            current: None,
            generation: 0,
        }
    }

    /// The credentials in use.
    pub fn current(&self) -> Option<&Credentials> {
        self.current.as_ref()
    }

    /// Counts the changes of credentials: a request remembers the generation it was sent with.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The access token to send (as `Authorization: Bearer …`), if any.
    ///
    /// > "MCP client **MUST** use the Authorization request header field … `Authorization:
    /// > Bearer <access-token>` … Access tokens **MUST NOT** be included in the URI query
    /// > string" — MCP 2025-11-25, Access Token Usage
    pub fn bearer(&self) -> Option<Secret> {
        self.current
            .as_ref()
            .map(|c| Secret::new(format!("Bearer {}", c.tokens.access_token.expose())))
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

    /// Before sending at `now`: a flow to run first when the access token is past its expiry (a
    /// refresh, when there is a refresh token; else nothing, and the server's `401` decides).
    pub fn before_send(&self, now: SystemTime) -> Option<FlowStart> {
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
