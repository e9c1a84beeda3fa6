//! OAuth 2.1 for hosted MCP servers, as a sans-IO flow: the client reads a `401`'s
//! `WWW-Authenticate` challenge, discovers the authorization server (protected resource
//! metadata, then authorization server metadata), identifies itself (pre-registered, a client ID
//! metadata document, or dynamic registration), has a person authorize (PKCE S256, `state`,
//! `resource`, RFC 9207 `iss`), and exchanges the code for tokens; or, with no person, uses
//! the client credentials grant or a JWT-bearer grant (a workload's platform JWT, or an
//! enterprise identity provider's ID-JAG got by token exchange: `grants.rs`).
//!
//! - [`Flow`] makes every decision of one authorization: it says which HTTP request to make
//!   next ([`Step::Send`]), which stored credentials it wants ([`Step::Load`]), when a person
//!   must visit a URL ([`Step::Authorize`]), and ends with [`Step::Done`] (credentials) or
//!   [`Step::Failed`]. Time and randomness are inputs.
//! - [`Authorizer`] keeps one connection's credentials and decides, before each request and on
//!   each `401`/`403`, whether to retry, to run a flow (one refresh or re-authorization per
//!   request, at most [`MAX_STEP_UPS`] step-ups) or to fail — and, since a connection runs one
//!   flow at a time, what each request that waited for one does with its outcome ([`Turn`]).
//! - [`metadata`] reads the documents; the rest of this module is the vocabulary, one concept
//!   a file: the challenge (`challenge.rs`), the discovery URLs and the fetch rule
//!   (`discovery.rs`), the PKCE pair (`pkce.rs`), the options (`options.rs`), the credentials
//!   (`credentials.rs`), the errors (`error.rs`) and the client's authentication at the token
//!   endpoint (`assertion.rs`).
//! - [`dpop`] holds the pieces of RFC 9449 sender-constrained tokens: the key, the proof, the
//!   nonce.
//!
//! > "MCP clients **MUST** be able to parse `WWW-Authenticate` headers and respond appropriately
//! > to `HTTP 401 Unauthorized` responses from the MCP server." — MCP 2025-11-25, Authorization

mod assertion;
mod authorizer;
mod challenge;
mod credentials;
mod discovery;
pub mod dpop;
mod error;
mod flow;
mod grants;
pub mod metadata;
mod options;
mod pkce;

/// The secret type the flow's tokens and client secrets are kept in (it lives in
/// [`crate::secret`], a leaf the HTTP rules use too).
pub use crate::secret::Secret;
pub use assertion::{MAX_RSA_BITS, MIN_RSA_BITS};
pub use authorizer::{Attempt, Authorizer, Ticket, Turn, Verdict, MAX_STEP_UPS};
pub use challenge::{parse_challenges, BearerChallenge, Challenge, MAX_CHALLENGE_PARTS};
pub use credentials::{
    AuthorizationRequest, Client, ClientKind, Credentials, FlowStart, Randomness, Reason, Tokens,
};
pub use discovery::{
    allowed_fetch, authorization_server_metadata_urls, resource_metadata_urls, FetchRefusal,
};
pub use error::AuthError;
pub use flow::{Flow, Redirect, Step, MAX_AUTHORIZATION_SERVERS, MAX_METADATA_REDIRECTS};
pub use grants::{
    IdentityProvider, ID_JAG_TOKEN_TYPE, JWT_BEARER_GRANT, MAX_ASSERTION, TOKEN_EXCHANGE_GRANT,
};
pub use options::{ApplicationType, AuthMethod, AuthOptions, Grant, PreRegistered};
pub use pkce::{Pkce, PKCE_METHOD};
