//! OAuth for the HTTP transport: the MCP authorization flow (OAuth 2.1), run when the server
//! asks or up front, with the credentials kept in a [`TokenStore`] and a person authorizing the
//! way the application chose ([`Authorize`]).
//!
//! With [`HttpTransportConfig::oauth`](crate::HttpTransportConfig::oauth), a `401` runs the flow
//! and the request is sent again with the token: the challenge's `resource_metadata` (else the
//! well-known URLs) gives the protected resource metadata, that names the authorization server,
//! whose metadata is read (RFC 8414, then OpenID discovery; the 2025-03-26 fallbacks for servers
//! without resource metadata); the client identifies itself — pre-registered credentials, else a
//! client ID metadata document where the server supports it
//! ([`AuthOptions::client_metadata_url`]), else dynamic registration — a person authorizes, and
//! the code becomes tokens. The token's expiry is tracked, a refresh token is used before
//! authorizing again, a `401` with a token leads to one refresh or re-authorization and one retry,
//! and a `403 insufficient_scope` to a step-up with the union of the scopes (at most
//! [`MAX_STEP_UPS`](mcp_proto::oauth::MAX_STEP_UPS) authorizations a request). Single-flight:
//! concurrent requests that meet a `401` wait for one flow. The decisions are the core's
//! ([`Flow`], [`Authorizer`], sans-IO); this module only carries them over isahc.
//!
//! ```no_run
//! use mcp_connect::proto::oauth::{PreRegistered, Secret};
//! use mcp_connect::{connect_http, Authorize, ClientConfig, FileStore, HttpTransportConfig, OAuthConfig};
//! use std::sync::Arc;
//!
//! smol::block_on(async {
//!     // A person, in the system browser: a listener on 127.0.0.1 is the redirect URI (RFC 8252;
//!     // it takes only this flow's `state`), the URL is printed on stderr too, and they have 5
//!     // minutes.
//!     let mut oauth = OAuthConfig::new(Authorize::browser());
//!     // Kept between runs (in memory by default), in a file only its owner can read.
//!     if let Some(path) = FileStore::default_path() {
//!         oauth.store = Arc::new(FileStore::new(path));
//!     }
//!     let http = HttpTransportConfig::new("https://mcp.example.com/mcp").oauth(oauth);
//!     let client = connect_http(http, ClientConfig::default()).await?;
//!     println!("{} tools", client.list_tools().await?.len());
//!     client.close().await?;
//!
//!     // Headless: the application gets the authorization URL and returns the URL the person
//!     // was sent back to (the redirect URI is `config.options.redirect_uri`).
//!     let _headless = OAuthConfig::new(Authorize::callback(|request| async move {
//!         Err(format!("nobody here to open {}", request.url))
//!     }));
//!     // Machine to machine: the client credentials grant with a pre-registered client, bound
//!     // to its authorization server (required with a secret or key: a resource guarded by
//!     // another one is refused, and nothing is sent without it).
//!     let _service = OAuthConfig::client_credentials(PreRegistered {
//!         client_id: "my-service".into(),
//!         client_secret: Some(Secret::new(std::env::var("MCP_CLIENT_SECRET").unwrap_or_default())),
//!         private_key: None, // or a P-256 or RSA PEM key: private_key_jwt instead of the secret
//!         auth_method: None, // client_secret_basic (or _post when that is all the server takes)
//!         issuer: Some("https://auth.example.com".into()),
//!     });
//!     Ok::<(), mcp_connect::Error>(())
//! })?;
//! # Ok::<(), mcp_connect::Error>(())
//! ```
//!
//! # Choices
//!
//! [`Authorize::Callback`] (headless; what the tests use), [`Authorize::Browser`] (`open`, `show`,
//! `timeout`; [`Authorize::browser`] for the defaults), or [`Authorize::Refuse`] (stored tokens
//! are used and refreshed, but a server that needs a person fails with
//! [`AuthError::NotAuthorized`], naming its authorization server).
//! [`OAuthConfig::options`] ([`AuthOptions`]) holds the pre-registered client, the metadata
//! document URL, `offline_access` and the fallbacks; [`OAuthConfig::upfront`] authorizes before
//! the first request; [`OAuthConfig::request_timeout`] bounds each of the flow's requests (30 s).
//! A configured `Authorization` header turns the flow off. Failures are
//! [`Error::Auth`](crate::Error::Auth).
//!
//! With no person at all, besides the client credentials grant: [`OAuthConfig::jwt_bearer`]
//! (workload identity federation: the platform's JWT, given or read from
//! [`OAuthConfig::assertion_file`] at each flow, is the RFC 7523 grant) and
//! [`OAuthConfig::enterprise_managed`] (the person's ID token exchanged at the enterprise's
//! identity provider for an ID-JAG, RFC 8693, then presented as that grant). An assertion is
//! checked before it is sent (its audience is the authorization server, it has not expired),
//! and no assertion, ID token or ID-JAG is stored, logged or put in an error.
//!
//! A pre-registered client may authenticate with a private key instead of a secret
//! ([`PreRegistered::private_key`], a P-256 or RSA key in PEM): the token endpoint gets a
//! `client_assertion` signed ES256 or RS256, as the key's type says (`private_key_jwt`, RFC 7523),
//! for the client credentials grant, the code exchange and refreshes.
//!
//! # Stores
//!
//! Stores implement [`TokenStore`] (`load`/`save`/`remove`, keyed by the authorization server's
//! issuer and the resource; `registration` finds a dynamic registration by issuer alone, which a
//! flow at another resource of the same authorization server reuses instead of registering
//! again): [`MemoryStore`] (the default) or [`FileStore`] (JSON, mode 0600, its
//! directory created 0700; [`FileStore::default_path`] is
//! `$XDG_CONFIG_HOME/mcp-client/credentials.json`, else `~/.config/…`). Several stores on one file,
//! in one process or several, lose nothing of each other's: each change is made under a per-file
//! lock in the process and an advisory `flock` on `FILE.lock`, through a temporary file of a
//! random name created with `O_EXCL` and `O_NOFOLLOW`. A store keeps tokens and dynamic
//! registrations, never a pre-registered secret or key: those stay with the application and are
//! added to each token request.
//!
//! # DPoP
//!
//! Sender-constrained tokens (RFC 9449; MCP's DPoP extension, SEP-1932): the token requests and
//! every request that carries a DPoP-bound token (`Authorization: DPoP …`) get a fresh proof,
//! signed ES256, bound to the method, the URL and the token; a server's `DPoP-Nonce` is used in
//! the next proofs, and a `use_dpop_nonce` answer is retried once with it, at the authorization
//! server as at the MCP server. Used when the resource asks for it (a `DPoP` challenge, its
//! metadata's `dpop_bound_access_tokens_required`) by default, always with
//! [`DpopUse::Always`], never with [`DpopUse::Never`] ([`AuthOptions::dpop`]). The key is the
//! application's ([`AuthOptions::dpop_key`], [`OAuthConfig::dpop`]) or one made for the
//! connection; a store keeps the key's thumbprint with the tokens it is bound to, never the key.
//!
//! # Safe by construction
//!
//! - The access token goes only to the MCP endpoint, in the `Authorization` header, and the client
//!   secret, codes and refresh token only to the token endpoint — never in a URL;
//!   [`Secret`](mcp_proto::oauth::Secret) values show as `<redacted>` in `Debug`, and no token or
//!   secret is in an error message or a log line (the tests check all of these).
//! - The flow's requests follow no redirect (a `3xx` is an answer), and MCP requests follow only
//!   same-origin `307`/`308`: no redirect takes a token or a secret to another origin.
//! - A pre-registered secret or private key goes only to the authorization server it is bound to
//!   ([`PreRegistered::issuer`], required with either: a flow without it fails before any request);
//!   a public client id alone may be used with the authorization server the MCP server names.
//! - Server-side request forgery (MCP Security Best Practices): every URL a server names — the
//!   challenge's `resource_metadata`, the issuer, its endpoints — is fetched only when
//!   [`allowed_fetch`](mcp_proto::oauth::allowed_fetch) allows it: HTTPS to a host that is not a
//!   private, link-local, cloud metadata or reserved address (IPv4-mapped IPv6 judged as IPv4), or
//!   this machine when the MCP server is on it too, or the MCP server's own origin. A refused
//!   `resource_metadata` falls back to the well-known URIs at the server's origin. Host *names*
//!   are judged by name: one that resolves to a private address (DNS rebinding) is not caught; use
//!   an egress proxy where that matters.
//! - The loopback redirect listener serves connections concurrently (10 s and 16 KiB each for a
//!   request head, 16 at once: a new one takes the place of the oldest still sending, so a flood
//!   of idle connections does not keep the browser's waiting) and takes only the redirect with
//!   this flow's `state`: another process's request gets an error page, another path (a
//!   favicon) a 404, and the wait goes on.
//! - PKCE with S256 always (a server that does not advertise it is refused); `state` checked; RFC
//!   9207 `iss` compared as a plain string when present, and required when advertised; the
//!   metadata's `issuer` must equal the authorization server's URL exactly; a protected resource
//!   metadata document for another `resource` is refused before anything is authorized, and the
//!   same `resource` (RFC 8707) goes into the authorization and token requests; credentials are
//!   keyed by issuer, so a server that moves to another authorization server registers there
//!   afresh.
//!
//! The official conformance suite (tests/conformance.rs): with 0.1.16, 21 of its 22 auth scenarios
//! — all but the `cross-app-access-complete-flow` extension; with 0.2.0-alpha.12 at 2026-07-28,
//! all 25 of its requirement list, plus the `client-credentials-basic` and
//! `client-credentials-jwt` extensions and both 2025-03-26 ones — each with no failed check and no
//! warning.
//!
//! [`PreRegistered::private_key`]: mcp_proto::oauth::PreRegistered::private_key
//! [`PreRegistered::issuer`]: mcp_proto::oauth::PreRegistered::issuer

mod browser;
mod stores;

pub use stores::{FileStore, MemoryStore, TokenStore, MAX_STORE_FILE, STORE_LOCK_WAIT};

use crate::sync::lock;
use crate::transport::BoxFuture;
use browser::{open_browser, receive_redirect};
use isahc::{AsyncReadResponseExt, HttpClient};
use mcp_proto::http::{redact_url, HttpRequest, HttpRules};
use mcp_proto::oauth::dpop::{DpopKey, DpopUse};
use mcp_proto::oauth::{
    Attempt, AuthError, AuthOptions, AuthorizationRequest, Authorizer, Credentials, Flow,
    FlowStart, Randomness, Step, Ticket, Turn, Verdict,
};
use smol::io::AsyncReadExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The application's answer to an authorization URL: the URL the person was sent back to.
pub type AuthorizeCallback =
    Arc<dyn Fn(AuthorizationRequest) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// What the built-in browser flow shows the person (default: the URL on stderr).
pub type ShowUrl = Arc<dyn Fn(&AuthorizationRequest, bool) + Send + Sync>;

/// How a person authorizes.
#[derive(Clone)]
pub enum Authorize {
    /// The application's callback gets the authorization request and returns the redirect URL
    /// (headless programs and tests; the redirect URI is [`AuthOptions::redirect_uri`]). The
    /// requests waiting for it do not time out meanwhile (their timeouts start again when the
    /// flow ends): the callback bounds its own time.
    Callback(AuthorizeCallback),
    /// The native-app flow (RFC 8252): a listener on `127.0.0.1` and an ephemeral port is the
    /// redirect URI (it takes only this flow's redirect, by its `state`, and serves other
    /// connections meanwhile with an error page); the system browser is opened on the authorization URL (`open`:
    /// whether to try), `show` is told the URL (and whether a browser was started), and the
    /// person has `timeout` to finish (the requests waiting for the flow do not time out
    /// meanwhile; past it the flow fails with [`AuthError::NotAuthorized`]).
    Browser {
        /// Try to open the system browser.
        open: bool,
        /// Shows the URL.
        show: ShowUrl,
        /// How long the listener waits.
        timeout: Duration,
    },
    /// Nobody can authorize: stored tokens are used (and refreshed where they can be without
    /// a person), but a flow that needs a person fails with [`AuthError::NotAuthorized`]
    /// naming the authorization server: every flow runs with [`AuthOptions::interactive`] off.
    Refuse,
}

impl Authorize {
    /// The browser flow with its defaults: open the browser, print the URL on stderr, wait 5
    /// minutes.
    pub fn browser() -> Authorize {
        Authorize::Browser {
            open: true,
            show: Arc::new(|request, opened| {
                let how = if opened {
                    "A browser was opened to authorize"
                } else {
                    "Open this URL to authorize"
                };
                // The issuer and the URL come from the server's documents: no control character
                // of theirs reaches the terminal.
                let line = mcp_proto::terminal::line;
                eprintln!(
                    "{how} with {}:\n  {}",
                    line(&request.issuer),
                    line(&request.url)
                );
            }),
            timeout: Duration::from_secs(300),
        }
    }

    /// A callback from an async closure.
    pub fn callback<F, Fut>(f: F) -> Authorize
    where
        F: Fn(AuthorizationRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<String, String>> + Send + 'static,
    {
        Authorize::Callback(Arc::new(move |r| Box::pin(f(r))))
    }
}

impl std::fmt::Debug for Authorize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Authorize::Callback(_) => f.write_str("Callback"),
            Authorize::Browser { open, timeout, .. } => f
                .debug_struct("Browser")
                .field("open", open)
                .field("timeout", timeout)
                .finish(),
            Authorize::Refuse => f.write_str("Refuse"),
        }
    }
}

/// The JWT in `path` (an assertion file: a workload's platform token), trimmed; at most
/// [`MAX_ASSERTION`](mcp_proto::oauth::MAX_ASSERTION) bytes. An error names the file, never its
/// contents.
fn read_assertion(path: &std::path::Path) -> Result<mcp_proto::oauth::Secret, AuthError> {
    use std::io::Read;
    let max = mcp_proto::oauth::MAX_ASSERTION;
    let failed = |message: String| {
        AuthError::Unsupported(format!(
            "the JWT-bearer assertion file {}: {message}",
            path.display()
        ))
    };
    let file = std::fs::File::open(path).map_err(|e| failed(e.to_string()))?;
    let mut text = String::new();
    file.take(max as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| failed(e.to_string()))?;
    if text.len() > max {
        return Err(failed(format!("more than {max} bytes")));
    }
    Ok(mcp_proto::oauth::Secret::new(text.trim().to_owned()))
}

/// OAuth settings of an HTTP transport.
#[derive(Clone)]
pub struct OAuthConfig {
    /// What every flow is told (grant, client identity, redirect URI for a callback).
    pub options: AuthOptions,
    /// How a person authorizes.
    pub authorize: Authorize,
    /// Where credentials are kept (default: in memory).
    pub store: Arc<dyn TokenStore>,
    /// Authorize before the first request instead of waiting for a `401`.
    pub upfront: bool,
    /// The time limit of each of the flow's requests (default 30 s).
    pub request_timeout: Duration,
    /// A file holding the JWT of the JWT-bearer grant, read anew at the start of each flow
    /// (a workload's platform rotates it: a Kubernetes projected service account token, say),
    /// at most [`MAX_ASSERTION`](mcp_proto::oauth::MAX_ASSERTION) bytes, surrounding whitespace
    /// trimmed. When set, it takes the place of [`AuthOptions::jwt_assertion`].
    pub assertion_file: Option<std::path::PathBuf>,
}

impl OAuthConfig {
    /// Settings for the authorization code grant with this way to authorize. With a callback,
    /// the redirect URI is `http://127.0.0.1/callback` unless set in
    /// [`options`](Self::options); the browser flow sets its own.
    pub fn new(authorize: Authorize) -> OAuthConfig {
        OAuthConfig {
            options: AuthOptions::new("http://127.0.0.1/callback"),
            authorize,
            store: Arc::new(MemoryStore::new()),
            upfront: false,
            request_timeout: Duration::from_secs(30),
            assertion_file: None,
        }
    }

    /// Settings for the client credentials grant with a pre-registered client.
    pub fn client_credentials(pre: mcp_proto::oauth::PreRegistered) -> OAuthConfig {
        let mut config = OAuthConfig::new(Authorize::Refuse);
        config.options.grant = mcp_proto::oauth::Grant::ClientCredentials;
        config.options.pre_registered = Some(pre);
        config
    }

    /// Settings for the JWT-bearer grant (workload identity federation): `pre` is the client as
    /// registered with the authorization server (often a client id alone, `none`), and the
    /// workload's JWT is `assertion` (or [`assertion_file`](Self::assertion_file), read at each
    /// flow). No person is asked.
    pub fn jwt_bearer(
        pre: mcp_proto::oauth::PreRegistered,
        assertion: Option<mcp_proto::oauth::Secret>,
    ) -> OAuthConfig {
        let mut config = OAuthConfig::new(Authorize::Refuse);
        config.options.grant = mcp_proto::oauth::Grant::JwtBearer;
        config.options.pre_registered = Some(pre);
        config.options.jwt_assertion = assertion;
        config
    }

    /// Settings for enterprise-managed authorization: the person's ID token is exchanged at
    /// the identity provider `idp` for an ID-JAG, which `pre` (the client as registered with
    /// the MCP server's authorization server) presents there as a JWT-bearer grant. No browser.
    pub fn enterprise_managed(
        pre: mcp_proto::oauth::PreRegistered,
        idp: mcp_proto::oauth::IdentityProvider,
    ) -> OAuthConfig {
        let mut config = OAuthConfig::new(Authorize::Refuse);
        config.options.grant = mcp_proto::oauth::Grant::EnterpriseManaged;
        config.options.pre_registered = Some(pre);
        config.options.identity_provider = Some(idp);
        config
    }

    /// DPoP-bound tokens at every authorization server that takes ES256 proofs, signed with
    /// `key` (the application's: kept from run to run, it keeps stored DPoP-bound tokens
    /// usable), or with a key made for each connection when `None`.
    pub fn dpop(mut self, key: Option<DpopKey>) -> OAuthConfig {
        self.options.dpop = DpopUse::Always;
        self.options.dpop_key = key.map(Arc::new);
        self
    }
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("options", &self.options)
            .field("authorize", &self.authorize)
            .field("upfront", &self.upfront)
            .field("request_timeout", &self.request_timeout)
            .field("assertion_file", &self.assertion_file)
            .finish()
    }
}

/// One transport's OAuth state: the core's authorizer (behind a lock held only briefly), and
/// the connection's one flow lock, held while a flow runs. Who runs a flow, and what the
/// requests that waited for it do with its outcome, is the authorizer's to say
/// ([`Authorizer`]'s call order); this only carries it out.
pub(crate) struct OAuth {
    config: OAuthConfig,
    authorizer: Mutex<Authorizer>,
    flow: smol::lock::Mutex<()>,
    client: HttpClient,
    /// The authorization server's latest `DPoP-Nonce`, from one flow to the next.
    as_nonce: Mutex<Option<String>>,
}

impl OAuth {
    pub(crate) fn new(url: &str, mut config: OAuthConfig, client: HttpClient) -> OAuth {
        // DPoP, unless turned off: the application's key, else one made for this connection
        // (tokens bound to it live as long as it: a store keeps them, but a later run's key
        // is another, so they are not used then).
        if config.options.dpop != DpopUse::Never && config.options.dpop_key.is_none() {
            config.options.dpop_key = new_dpop_key().map(Arc::new);
        }
        // The proofs' jti seed: without the system's randomness, no DPoP at all (the flows
        // must not get tokens the requests could not be signed for).
        let mut seed = [0u8; 16];
        if getrandom::fill(&mut seed).is_err() {
            config.options.dpop_key = None;
        }
        let key = config.options.dpop_key.clone();
        OAuth {
            authorizer: Mutex::new(
                Authorizer::new(url)
                    .with_upfront(config.upfront)
                    .with_dpop(key, seed),
            ),
            flow: smol::lock::Mutex::new(()),
            config,
            client,
            as_nonce: Mutex::new(None),
        }
    }

    /// Adds a DPoP proof to a request that carries a DPoP-bound token (RFC 9449 § 7.1): fresh
    /// for every request sent, resends included. Nothing for a Bearer token.
    pub(crate) fn sign(&self, request: &mut HttpRequest) {
        lock(&self.authorizer).sign(request, SystemTime::now());
    }

    /// A response's `DPoP-Nonce` header, for the next proofs (RFC 9449 § 9).
    pub(crate) fn on_head(&self, nonce: Option<&str>) {
        if let Some(nonce) = nonce {
            lock(&self.authorizer).on_dpop_nonce(nonce);
        }
    }

    /// Before a request, when no flow is to run or be waited for first (no token to refresh, no
    /// authorization up front): puts the current token in the rules and gives the generation
    /// the request is sent with. `None`: call [`prepare`](Self::prepare), which may take a
    /// flow's time.
    pub(crate) fn ready(&self, rules: &Mutex<HttpRules>) -> Option<u64> {
        let a = lock(&self.authorizer);
        if a.before_send(SystemTime::now()).is_some() {
            return None;
        }
        lock(rules).set_authorization(a.authorization());
        Some(a.generation())
    }

    /// Before a request: runs the flow the authorizer wants first (a refresh, the authorization
    /// up front) under the flow lock, unless another request ran it meanwhile; puts the current
    /// token in the rules, and gives the generation the request is sent with.
    pub(crate) async fn prepare(&self, rules: &Mutex<HttpRules>) -> Result<u64, AuthError> {
        if lock(&self.authorizer)
            .before_send(SystemTime::now())
            .is_some()
        {
            let _flow = self.flow.lock().await;
            let start = lock(&self.authorizer).before_send(SystemTime::now());
            if let Some(start) = start {
                self.run_and_install(start, rules).await?;
            }
        }
        let a = lock(&self.authorizer);
        lock(rules).set_authorization(a.authorization());
        Ok(a.generation())
    }

    /// The authorizer's verdict on a response to a request sent with `generation`, and the
    /// request's place in the queue for the flow, taken at once ([`Authorizer::ticket`]): only
    /// [`Verdict::Authorize`] takes a flow's time ([`authorize_for`](Self::authorize_for)).
    pub(crate) fn verdict(
        &self,
        attempt: &mut Attempt,
        generation: u64,
        status: u16,
        challenge: Option<&str>,
    ) -> (Verdict, Ticket) {
        let a = lock(&self.authorizer);
        let verdict = a.on_response(attempt, generation, status, challenge);
        (verdict, a.ticket(generation))
    }

    /// Waits for the flow lock, then does what the authorizer says now that it is this
    /// request's turn ([`Authorizer::on_turn`]): runs the flow `start`, or takes the outcome of
    /// the one that ran meanwhile. `Ok(true)`: send the request again.
    pub(crate) async fn authorize_for(
        &self,
        start: FlowStart,
        ticket: Ticket,
        rules: &Mutex<HttpRules>,
    ) -> Result<bool, AuthError> {
        let _flow = self.flow.lock().await;
        let turn = lock(&self.authorizer).on_turn(ticket, start);
        match turn {
            Turn::Retry => Ok(true),
            Turn::Fail(e) => Err(e),
            Turn::Run(start) => self.run_and_install(*start, rules).await.map(|()| true),
        }
    }

    /// Runs the flow `start` (the flow lock held) and hands its outcome to the authorizer
    /// ([`Authorizer::flow_ended`]); the rules get the token it leaves.
    async fn run_and_install(
        &self,
        start: FlowStart,
        rules: &Mutex<HttpRules>,
    ) -> Result<(), AuthError> {
        let reason = start.reason;
        let outcome = self.run(start).await;
        let mut a = lock(&self.authorizer);
        let next = a.flow_ended(reason, outcome);
        lock(rules).set_authorization(a.authorization());
        next
    }

    /// Runs one flow to its end.
    async fn run(&self, start: FlowStart) -> Result<Credentials, AuthError> {
        let mut options = self.config.options.clone();
        // Refusing is having nobody to ask: the core's flow ends where a person would be needed.
        options.interactive &= !matches!(self.config.authorize, Authorize::Refuse);
        if let Some(path) = &self.config.assertion_file {
            options.jwt_assertion = Some(read_assertion(path)?);
        }
        let resource_url = start.resource_url.clone();
        let listener = match &self.config.authorize {
            Authorize::Browser { .. } if options.asks_person() => {
                let listener = smol::net::TcpListener::bind(("127.0.0.1", 0))
                    .await
                    .map_err(|e| AuthError::Transport {
                        url: "http://127.0.0.1".into(),
                        message: format!("listening for the redirect: {e}"),
                    })?;
                let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
                // > "loopback redirect URIs … http://127.0.0.1:{port}/{path}" — RFC 8252 § 7.3
                options.redirect_uri = format!("http://127.0.0.1:{port}/callback");
                Some(listener)
            }
            _ => None,
        };
        let nonce = lock(&self.as_nonce).clone();
        let mut flow = Flow::new(start, options, randomness()?, SystemTime::now())
            .with_dpop_nonce(nonce.as_deref());
        let outcome = self.steps(&mut flow, listener, &resource_url).await;
        if let Some(nonce) = flow.dpop_nonce() {
            *lock(&self.as_nonce) = Some(nonce.to_owned());
        }
        outcome
    }

    /// Carries out `flow`'s steps to its end.
    async fn steps(
        &self,
        flow: &mut Flow,
        listener: Option<smol::net::TcpListener>,
        resource_url: &str,
    ) -> Result<Credentials, AuthError> {
        loop {
            match flow.step().clone() {
                Step::Send(request) => match self.send(request).await {
                    Ok((status, headers, body)) => {
                        flow.on_response(status, &headers, &body, SystemTime::now())
                    }
                    Err(message) => flow.on_failure(&message, SystemTime::now()),
                },
                Step::Load { issuer, resource } => {
                    let stored = self.config.store.load(&issuer, &resource);
                    let registration = self.config.store.registration(&issuer);
                    flow.on_loaded_with(stored, registration, SystemTime::now());
                }
                Step::Authorize(request) => {
                    let redirect = self.authorize(&request, listener.as_ref(), flow).await;
                    match redirect {
                        Ok(url) => flow.on_redirect(&url),
                        Err(reason) => {
                            return Err(AuthError::NotAuthorized {
                                issuer: request.issuer,
                                resource: redact_url(resource_url),
                                reason,
                            })
                        }
                    }
                }
                Step::Done(credentials) => {
                    self.config.store.save(&credentials);
                    return Ok(credentials);
                }
                Step::Failed(e) => return Err(e),
            }
        }
    }

    async fn authorize(
        &self,
        request: &AuthorizationRequest,
        listener: Option<&smol::net::TcpListener>,
        flow: &Flow,
    ) -> Result<String, String> {
        match &self.config.authorize {
            Authorize::Refuse => Err("authorizing is turned off".into()),
            Authorize::Callback(callback) => callback(request.clone()).await,
            Authorize::Browser {
                open,
                show,
                timeout,
            } => {
                let Some(listener) = listener else {
                    return Err("no listener for the redirect".into());
                };
                let opened = *open && open_browser(&request.url);
                show(request, opened);
                let wait = receive_redirect(listener, &request.redirect_uri, flow);
                smol::future::or(wait, async {
                    smol::Timer::after(*timeout).await;
                    Err(format!("nobody came back within {} s", timeout.as_secs()))
                })
                .await
            }
        }
    }

    /// One request of the flow: its status, headers and body (at most
    /// [`MAX_DOCUMENT`](mcp_proto::oauth::metadata::MAX_DOCUMENT) bytes plus one, so an
    /// oversized one is told), within the time limit. Failures are described without the URL's
    /// query or any header value.
    async fn send(
        &self,
        request: HttpRequest,
    ) -> Result<(u16, Vec<(String, String)>, Vec<u8>), String> {
        request.check().map_err(|e| e.to_string())?;
        let url = request.url.clone();
        let http = crate::http::isahc_request(request, true, None)
            .map_err(|_| "not a valid request".to_owned())?;
        let exchange = async {
            let mut response = match self.client.send_async(http).await {
                Ok(response) => response,
                Err(e) => return Err(crate::http::sending_failed(e, &url).await.to_string()),
            };
            let status = response.status().as_u16();
            let headers = crate::http::head(&response);
            let mut body = Vec::new();
            let limit = mcp_proto::oauth::metadata::MAX_DOCUMENT as u64 + 1;
            response
                .body_mut()
                .take(limit)
                .read_to_end(&mut body)
                .await
                .map_err(|e| format!("reading the answer: {}", e.kind()))?;
            let _ = response.consume().await;
            Ok((status, headers, body))
        };
        smol::future::or(exchange, async {
            smol::Timer::after(self.config.request_timeout).await;
            Err(format!(
                "no answer within {} s",
                self.config.request_timeout.as_secs()
            ))
        })
        .await
    }
}

/// A DPoP key made from the system's randomness (`None` when it gives none: Bearer tokens
/// then). 32 bytes that are no P-256 scalar are drawn again (a chance of about 2^-32).
fn new_dpop_key() -> Option<DpopKey> {
    for _ in 0..4 {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).ok()?;
        if let Ok(key) = DpopKey::from_random(&bytes) {
            return Some(key);
        }
    }
    None
}

/// The flow's randomness, from the operating system.
fn randomness() -> Result<Randomness, AuthError> {
    let mut verifier = [0u8; 32];
    let mut state = [0u8; 16];
    getrandom::fill(&mut verifier)
        .and_then(|()| getrandom::fill(&mut state))
        .map_err(|e| AuthError::Unsupported(format!("no randomness from the system: {e}")))?;
    Ok(Randomness { verifier, state })
}

#[allow(dead_code)]
fn _assert_send() {
    fn is_send<T: Send + Sync>() {}
    is_send::<OAuth>();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assertion_file_is_read_trimmed_capped_and_never_quoted() {
        let dir = std::env::temp_dir().join(format!("mcp-assertion-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "  header.claims.sig\n").unwrap();
        assert_eq!(read_assertion(&file).unwrap().expose(), "header.claims.sig");
        // Rotated by the platform: the next read sees the new one.
        std::fs::write(&file, "h2.c2.s2").unwrap();
        assert_eq!(read_assertion(&file).unwrap().expose(), "h2.c2.s2");
        let max = mcp_proto::oauth::MAX_ASSERTION;
        std::fs::write(&file, "x".repeat(max + 1)).unwrap();
        let e = read_assertion(&file).unwrap_err().to_string();
        assert!(e.contains("more than") && !e.contains("xxx"), "{e}");
        let e = read_assertion(&dir.join("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("assertion file") && e.contains("missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
