//! What the application tells every flow: the grant, its pre-registered credentials, and how
//! the client identifies and authenticates itself.

use super::dpop::{DpopKey, DpopUse};
#[cfg(doc)]
use super::{AuthError, Credentials};
use super::{IdentityProvider, Secret};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How the client gets its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Grant {
    /// A person authorizes in a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// The client authorizes itself with its secret (RFC 6749 § 4.4; machine to machine).
    ClientCredentials,
    /// A JWT the application holds is the grant (RFC 7523 § 2.1): workload identity
    /// federation, where the platform a workload runs on issues it (a Kubernetes service
    /// account token, a CI job's OIDC token), in [`AuthOptions::jwt_assertion`]. No person.
    ///
    /// > "MCP clients running as workloads … present a JWT issued by their platform to the
    /// > authorization server using the JWT Bearer grant type (RFC 7523)" — MCP workload identity
    /// > federation (SEP-1933, `io.modelcontextprotocol/auth/wif`)
    JwtBearer,
    /// Enterprise-managed authorization (SEP-990): the person's ID token from the enterprise's
    /// identity provider ([`AuthOptions::identity_provider`]) is exchanged there for an ID-JAG
    /// (RFC 8693), which is then the JWT-bearer grant at the MCP server's authorization server.
    /// No browser: the person signed in to the identity provider already.
    EnterpriseManaged,
}

/// The `application_type` sent in a dynamic registration.
///
/// > "MCP clients **MUST** specify an appropriate `application_type` during Dynamic Client
/// > Registration. … Native applications (desktop applications, mobile apps, CLI tools, and
/// > locally-hosted web applications accessed via `localhost`) **SHOULD** use
/// > `application_type: "native"`" — MCP 2026-07-28, Client Registration
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ApplicationType {
    /// A program on the user's machine (the default).
    #[default]
    Native,
    /// A web application served from another host.
    Web,
}

impl ApplicationType {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            ApplicationType::Native => "native",
            ApplicationType::Web => "web",
        }
    }
}

/// How the client authenticates at the token endpoint (RFC 7591 § 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuthMethod {
    /// A public client: `client_id` in the body, no secret.
    None,
    /// HTTP Basic with the client id and secret (RFC 6749 § 2.3.1).
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the body.
    ClientSecretPost,
    /// A JWT signed with the client's private key (ES256 for a P-256 key, RS256 for an RSA one)
    /// as `client_assertion` (RFC 7523 § 2.2; the private key is the application's, in
    /// [`PreRegistered::private_key`]).
    PrivateKeyJwt,
}

impl AuthMethod {
    /// The registered name.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method of a registered name, if it is one of these.
    pub fn from_name(name: &str) -> Option<AuthMethod> {
        match name {
            "none" => Some(AuthMethod::None),
            "client_secret_basic" => Some(AuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(AuthMethod::ClientSecretPost),
            "private_key_jwt" => Some(AuthMethod::PrivateKeyJwt),
            _ => None,
        }
    }
}

/// Client credentials the application has for an authorization server (pre-registration).
///
/// A secret or a private key is sent to the authorization server it was issued by and to no
/// other: with either, [`issuer`](Self::issuer) is required (a flow without it fails at once,
/// [`AuthError::UnboundSecret`], before any request). A public client (a client id alone) may
/// leave it out and is then used with whichever authorization server the MCP server names: a
/// client id is no secret (RFC 6749 § 2.2) and the person sees which server they sign in to.
/// The secret and the key are never part of the [`Credentials`] a flow ends with (so never in
/// a token store): each flow takes them from here.
///
/// > "Clients that use pre-registered credentials … **MUST** associate those credentials with
/// > the specific authorization server that issued them, keyed by the authorization server's
/// > `issuer` identifier. … Pre-registered credentials are inherently specific to a particular
/// > authorization server." — MCP 2026-07-28, Client Registration § Authorization Server
/// > Binding
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreRegistered {
    /// The client id.
    pub client_id: String,
    /// The secret of a confidential client.
    pub client_secret: Option<Secret>,
    /// A private key for `private_key_jwt`, in PEM: P-256 (PKCS#8 or SEC1), signing ES256, or
    /// RSA of [`MIN_RSA_BITS`](super::MIN_RSA_BITS) to [`MAX_RSA_BITS`](super::MAX_RSA_BITS)
    /// bits (PKCS#8 or PKCS#1), signing RS256. The token endpoint gets the signed assertion
    /// instead of a secret. Never stored with the tokens.
    pub private_key: Option<Secret>,
    /// How to authenticate; when `None`, `private_key_jwt` with a private key,
    /// `client_secret_basic` with a secret (or `client_secret_post` when the server lists only
    /// that), `none` without either.
    pub auth_method: Option<AuthMethod>,
    /// The issuer they were registered with, exactly as its metadata states it. A resource
    /// guarded by another authorization server is refused ([`AuthError::WrongIssuer`]) instead
    /// of sending them there. Required with a secret or a private key.
    pub issuer: Option<String>,
}

impl PreRegistered {
    /// Whether the client has a secret or a private key (a confidential client).
    pub fn is_confidential(&self) -> bool {
        self.client_secret.is_some() || self.private_key.is_some()
    }
}

/// What the application tells every flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthOptions {
    /// The grant.
    pub grant: Grant,
    /// Where the authorization server sends the person back (the authorization code grant):
    /// for a native client, `http://127.0.0.1:PORT/callback`.
    pub redirect_uri: String,
    /// `client_name` of a registration or metadata document.
    pub client_name: String,
    /// Pre-registered credentials, used first.
    pub pre_registered: Option<PreRegistered>,
    /// The HTTPS URL of this client's metadata document, used as its `client_id` where the
    /// authorization server supports Client ID Metadata Documents.
    pub client_metadata_url: Option<String>,
    /// The `application_type` of a dynamic registration.
    pub application_type: ApplicationType,
    /// Ask for `offline_access` (a refresh token) when the authorization server lists it in
    /// `scopes_supported` (default on).
    pub offline_access: bool,
    /// The 2025-03-26 fallbacks when the MCP server has no protected resource metadata but
    /// asked for a Bearer token: the authorization server's metadata at the MCP server's
    /// origin, else its default endpoints `/authorize`, `/token`, `/register` (default on).
    pub legacy_fallbacks: bool,
    /// A person can be asked to authorize (default on). Off, a flow of the authorization code
    /// grant still uses stored credentials (a fresh token as it is, an expired one refreshed
    /// when it has a refresh token) but starts nothing that needs a person: where it would
    /// register a client or send someone to the authorization endpoint, it fails with
    /// [`AuthError::NotAuthorized`], naming the authorization server. For an application with
    /// nobody to ask (a headless service that was given no way to show the URL). The client
    /// credentials and JWT-bearer grants need no person and are not affected.
    pub interactive: bool,
    /// The JWT presented as the grant ([`Grant::JwtBearer`]). Checked before it is sent (its
    /// `aud` must name the authorization server or its token endpoint, its `exp` must be ahead)
    /// and sent to that token endpoint only; never stored with the tokens.
    pub jwt_assertion: Option<Secret>,
    /// The identity provider of [`Grant::EnterpriseManaged`].
    pub identity_provider: Option<IdentityProvider>,
    /// When to ask for DPoP-bound tokens (RFC 9449; by default when the resource asks).
    pub dpop: DpopUse,
    /// The DPoP key: the application's (a key kept with the tokens' store makes stored
    /// DPoP-bound tokens usable in a later run), or one a driver makes for the connection. None:
    /// no DPoP, whatever [`dpop`](Self::dpop) says. Never stored: a token store keeps the
    /// key's thumbprint with the tokens it is bound to.
    pub dpop_key: Option<Arc<DpopKey>>,
}

impl AuthOptions {
    /// Options for the authorization code grant with this redirect URI.
    pub fn new(redirect_uri: impl Into<String>) -> AuthOptions {
        AuthOptions {
            grant: Grant::AuthorizationCode,
            redirect_uri: redirect_uri.into(),
            client_name: "mcp-client (Rust)".to_owned(),
            pre_registered: None,
            client_metadata_url: None,
            application_type: ApplicationType::Native,
            offline_access: true,
            legacy_fallbacks: true,
            interactive: true,
            jwt_assertion: None,
            identity_provider: None,
            dpop: DpopUse::WhenAsked,
            dpop_key: None,
        }
    }

    /// Whether a flow with these options may send a person to the authorization endpoint, and
    /// so needs a redirect URI to come back to: the authorization code grant, with a person to
    /// ask ([`interactive`](Self::interactive)). A driver that listens for the redirect itself
    /// sets [`redirect_uri`](Self::redirect_uri) to its listener then, and only then.
    pub fn asks_person(&self) -> bool {
        self.grant == Grant::AuthorizationCode && self.interactive
    }
}
