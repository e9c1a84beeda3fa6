//! What a flow starts from and ends with: why it runs, its randomness, the client's identity,
//! the tokens and the credentials a store keeps, and the authorization request a person is
//! shown.

use super::{AuthMethod, BearerChallenge, Secret};
#[cfg(doc)]
use super::{Flow, PreRegistered};
use serde::{Deserialize, Serialize};

/// How the client got its identity with an authorization server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClientKind {
    /// Given by the application.
    PreRegistered,
    /// Its `client_id` is the URL of its metadata document.
    MetadataDocument,
    /// Registered dynamically (RFC 7591).
    Registered,
}

/// The client's identity with one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`, for a confidential client that registered dynamically (the
    /// authorization server issued it to this client: part of the registration). Always `None`
    /// for a [`ClientKind::PreRegistered`] one: its secret stays with the application's
    /// [`PreRegistered`] and is added to each token request.
    pub client_secret: Option<Secret>,
    /// How it authenticates at the token endpoint.
    pub auth_method: AuthMethod,
    /// Where it came from.
    pub kind: ClientKind,
    /// When the secret expires (seconds since the epoch), if it does.
    #[serde(default)]
    pub secret_expires_at: Option<u64>,
}

/// Tokens for one resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// The access token.
    pub access_token: Secret,
    /// When it was issued (seconds since the epoch).
    pub issued_at: u64,
    /// When it expires (seconds since the epoch), when the server said.
    pub expires_at: Option<u64>,
    /// The refresh token, when one was issued.
    pub refresh_token: Option<Secret>,
    /// The scope granted, when the server said.
    pub scope: Option<String>,
    /// The scope asked for (the base of a step-up's union).
    pub requested_scope: Option<String>,
    /// For a DPoP-bound token (`token_type: DPoP`, RFC 9449 § 5): the thumbprint of the key it
    /// is bound to ([`DpopKey::thumbprint`](super::dpop::DpopKey::thumbprint)). It is sent as
    /// `Authorization: DPoP …` with a proof by that key, and only with it: a stored token bound
    /// to another key is not used. None: a Bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_jkt: Option<String>,
}

impl Tokens {
    /// Whether the access token is still good at `now` (seconds since the epoch): not past its
    /// expiry less a margin (a quarter of its lifetime, at most 30 s), so a request does not
    /// carry a token that expires on the way.
    pub fn is_fresh(&self, now: u64) -> bool {
        match self.expires_at {
            None => true,
            Some(expires) => {
                let lifetime = expires.saturating_sub(self.issued_at);
                let margin = (lifetime / 4).min(30);
                now.saturating_add(margin) < expires
            }
        }
    }
}

/// What a flow ends with: tokens for a resource, with the identity and the token endpoint that
/// refresh them. Keyed by `(issuer, resource)` in a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The authorization server's issuer identifier, as its metadata states it.
    pub issuer: String,
    /// The resource the tokens are for (the `resource` parameter sent).
    pub resource: String,
    /// The token endpoint (for refresh).
    pub token_endpoint: String,
    /// The client's identity there.
    pub client: Client,
    /// The tokens.
    pub tokens: Tokens,
}

/// Why a flow runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// Before the first request, when asked.
    Upfront,
    /// A `401`: no token, or one the server no longer takes.
    Unauthorized,
    /// A `403` with `error="insufficient_scope"`: step up.
    InsufficientScope,
    /// The access token expired (by the clock): refresh first.
    Expired,
}

/// What starts a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowStart {
    /// The MCP endpoint.
    pub resource_url: String,
    /// The `401`/`403`'s Bearer challenge, if any.
    pub challenge: Option<BearerChallenge>,
    /// Why.
    pub reason: Reason,
    /// The connection's credentials until now (the token that failed or expired).
    pub previous: Option<Credentials>,
}

/// The randomness of one flow: the PKCE verifier and `state`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Randomness {
    /// 32 random bytes for the PKCE verifier (RFC 7636 § 4.1).
    pub verifier: [u8; 32],
    /// 16 random bytes for `state`.
    pub state: [u8; 16],
}

impl std::fmt::Debug for Randomness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Randomness(<redacted>)")
    }
}

/// A person must visit `url` and be sent back to `redirect_uri`; the redirect back is the
/// flow's next input ([`Flow::on_redirect`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationRequest {
    /// The authorization URL (it carries no secret: PKCE's challenge, `state`, the client id).
    pub url: String,
    /// Where the person is sent back.
    pub redirect_uri: String,
    /// The authorization server's issuer, for the person to see.
    pub issuer: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshness_keeps_a_margin() {
        let t = |issued, expires| Tokens {
            access_token: Secret::new("t"),
            issued_at: issued,
            expires_at: expires,
            refresh_token: None,
            scope: None,
            requested_scope: None,
            dpop_jkt: None,
        };
        assert!(t(0, None).is_fresh(u64::MAX));
        // An hour's token: stale 30 s before the end.
        assert!(t(0, Some(3600)).is_fresh(3569));
        assert!(!t(0, Some(3600)).is_fresh(3570));
        // A 4 s token: stale after 3 s.
        assert!(t(100, Some(104)).is_fresh(102));
        assert!(!t(100, Some(104)).is_fresh(103));
    }
}
