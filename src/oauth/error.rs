//! Why a flow failed: [`AuthError`].

use super::metadata::DocumentError;
use super::FetchRefusal;
#[cfg(doc)]
use super::Grant;

/// Why a flow failed. Messages carry URLs without their query, error codes and descriptions of
/// the authorization server, never a token or a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No protected resource metadata, and the fallbacks were off.
    #[error("no protected resource metadata for {resource} (tried {})", tried.join(", "))]
    NoResourceMetadata {
        /// The MCP endpoint.
        resource: String,
        /// The URLs tried.
        tried: Vec<String>,
    },
    /// The protected resource metadata names another resource.
    ///
    /// > "If the resource value … is not identical to the protected resource's resource
    /// > identifier value … the client MUST NOT use the metadata" — RFC 9728 § 3.3
    #[error("the protected resource metadata at {url} is for {advertised}, not {expected}: nothing was authorized")]
    ResourceMismatch {
        /// Where the document was.
        url: String,
        /// The MCP endpoint.
        expected: String,
        /// The document's `resource`.
        advertised: String,
    },
    /// No authorization server metadata could be used.
    #[error("no usable authorization server metadata for {issuer} (tried {}){}", tried.join(", "), reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
    NoServerMetadata {
        /// The issuer.
        issuer: String,
        /// The URLs tried.
        tried: Vec<String>,
        /// Why the last found document was not used, if one was found.
        reason: Option<String>,
    },
    /// The authorization server does not support PKCE with S256.
    ///
    /// > "If `code_challenge_methods_supported` is absent, the authorization server does not
    /// > support PKCE and MCP clients **MUST** refuse to proceed." — MCP 2026-07-28, Security
    /// > Considerations
    #[error("the authorization server {issuer} does not advertise PKCE with S256: refused")]
    PkceUnsupported {
        /// The issuer.
        issuer: String,
    },
    /// An endpoint of the authorization server (or its issuer URL) is plain HTTP to another
    /// host than this machine.
    ///
    /// > "All authorization server endpoints **MUST** be served over HTTPS." — MCP 2026-07-28,
    /// > Security Considerations
    #[error("{issuer}'s endpoint {url} is neither HTTPS nor on this machine: refused")]
    InsecureEndpoint {
        /// The issuer.
        issuer: String,
        /// The endpoint.
        url: String,
    },
    /// A server named a URL the flow does not fetch: an address of a private network,
    /// link-local, cloud metadata, or this machine named by a server elsewhere
    /// ([`allowed_fetch`](super::allowed_fetch)). Nothing was sent there.
    #[error("{url} is {reason}: not fetched for {resource}")]
    RefusedUrl {
        /// The URL (without its query).
        url: String,
        /// Why.
        reason: FetchRefusal,
        /// The MCP endpoint.
        resource: String,
    },
    /// A pre-registered client has a secret or a private key but no issuer to bind it to: it
    /// would go to whichever authorization server the MCP server names.
    #[error("the pre-registered client {client_id} has a secret or a private key but no issuer: give the URL of the authorization server that issued it (mcp-client: --client-issuer); nothing was sent")]
    UnboundSecret {
        /// The client id.
        client_id: String,
    },
    /// No way to identify the client.
    #[error("no client identity for {issuer}: no pre-registered credentials, no client metadata document support, no registration endpoint")]
    NoClientIdentity {
        /// The issuer.
        issuer: String,
    },
    /// The pre-registered credentials are for another authorization server.
    #[error("the pre-registered client is for {registered}, but {resource} is guarded by {issuer}: not sent there")]
    WrongIssuer {
        /// The issuer they are for.
        registered: String,
        /// The issuer found.
        issuer: String,
        /// The MCP endpoint.
        resource: String,
    },
    /// None of the protected resource's authorization servers could be used: the metadata of
    /// each one tried, in order, was not found or not usable (each entry says why).
    #[error("none of the authorization servers of {resource} could be used: {}", tried.join("; "))]
    NoUsableServer {
        /// The MCP endpoint.
        resource: String,
        /// Why each one tried was passed over, in the order tried.
        tried: Vec<String>,
    },
    /// The grant needs what the application did not give (a secret for client credentials).
    #[error("{0}")]
    Unsupported(String),
    /// Dynamic registration was refused.
    #[error(
        "registration with {issuer} refused (HTTP {status}){}",
        describe(error, description)
    )]
    Registration {
        /// The issuer.
        issuer: String,
        /// The status.
        status: u16,
        /// `error`.
        error: Option<String>,
        /// `error_description`.
        description: Option<String>,
    },
    /// The authorization response's `state` is not the request's.
    #[error("the authorization response's state does not match the request's: ignored")]
    StateMismatch,
    /// The authorization response's `iss` is not the authorization server's (RFC 9207).
    #[error("the authorization response comes from {found}, not {expected} (RFC 9207): ignored")]
    IssuerResponseMismatch {
        /// The recorded issuer.
        expected: String,
        /// The response's `iss`.
        found: String,
    },
    /// The authorization response lacks the `iss` its server promised (RFC 9207 § 2.4).
    #[error(
        "the authorization response carries no iss, which {issuer} advertises (RFC 9207): ignored"
    )]
    IssuerMissing {
        /// The issuer.
        issuer: String,
    },
    /// The person or the authorization server refused.
    #[error("authorization by {issuer} refused: {error}{}", describe(&None, description))]
    Denied {
        /// The issuer.
        issuer: String,
        /// `error`.
        error: String,
        /// `error_description`.
        description: Option<String>,
    },
    /// The redirect back is not where the client listens, or carries no code.
    #[error("the redirect back {0}")]
    BadRedirect(String),
    /// The token endpoint refused.
    #[error(
        "the token endpoint {url} refused (HTTP {status}){}",
        describe(error, description)
    )]
    Token {
        /// The endpoint.
        url: String,
        /// The status.
        status: u16,
        /// `error`.
        error: Option<String>,
        /// `error_description`.
        description: Option<String>,
    },
    /// A document or answer could not be used.
    #[error("{url}: {reason}")]
    InvalidDocument {
        /// Where it came from.
        url: String,
        /// Why.
        reason: DocumentError,
    },
    /// A request of the flow failed.
    #[error("{url}: {message}")]
    Transport {
        /// The URL.
        url: String,
        /// What happened.
        message: String,
    },
    /// The server refused the token it was just given.
    #[error("{url} refused the new token too (HTTP 401)")]
    Rejected {
        /// The MCP endpoint.
        url: String,
    },
    /// The server still wants more scope after the step-ups allowed.
    #[error("{url} still asks for more scope ({scope}) after {attempts} authorizations")]
    InsufficientScope {
        /// The MCP endpoint.
        url: String,
        /// The scope it asks for.
        scope: String,
        /// The authorizations made for the request (the first and the step-ups).
        attempts: u8,
    },
    /// Authorization is needed and the application refused it (or offers no way to do it).
    #[error("{resource} needs authorization by {issuer}: {reason}")]
    NotAuthorized {
        /// The issuer (or the MCP endpoint, before discovery).
        issuer: String,
        /// The MCP endpoint.
        resource: String,
        /// Why.
        reason: String,
    },
    /// An input the flow did not wait for.
    #[error("the OAuth flow was driven out of order: {0}")]
    Misuse(&'static str),
}

fn describe(error: &Option<String>, description: &Option<String>) -> String {
    match (error, description) {
        (Some(e), Some(d)) => format!(": {e}: {d}"),
        (Some(e), None) => format!(": {e}"),
        (None, Some(d)) => format!(": {d}"),
        (None, None) => String::new(),
    }
}
