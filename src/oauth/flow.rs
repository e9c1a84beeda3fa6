//! One authorization, as a state machine: discovery, client identity, the person's consent (or
//! the client credentials grant), the token request, and refresh.
//!
//! This file is the machine and nothing else: [`Step`] (what the flow wants next), `State` (where
//! it is), and [`Flow`], whose inputs move it from one to the next. Its vocabulary is next door:
//! [options](super::AuthOptions), [credentials](super::Credentials), [errors](super::AuthError)
//! and the token endpoint's client authentication (`assertion.rs`).

use super::assertion::{client_assertion, jti, token_request};
use super::dpop::{
    accept_nonce, server_takes_es256, DpopKey, DpopUse, DPOP_NONCE_HEADER, USE_DPOP_NONCE,
};
use super::grants::{check_assertion, exchanged_grant, JWT_BEARER_GRANT};
use super::metadata::{
    error_answer, RegistrationResponse, ResourceMetadata, ServerMetadata, TokenResponse,
};
use super::{
    allowed_fetch, authorization_server_metadata_urls, resource_metadata_urls, AuthError,
    AuthMethod, AuthOptions, AuthorizationRequest, Client, ClientKind, Credentials, FetchRefusal,
    FlowStart, Grant, Pkce, PreRegistered, Randomness, Reason, Secret, Tokens, PKCE_METHOD,
};
use crate::http::{header, redact_url, redirect_target, HttpRequest, Method, RedirectRefused};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The most redirects one metadata document's fetch follows (each to the same origin). Past it
/// the fetch counts as one that found nothing, and discovery goes on to the next place to look.
pub const MAX_METADATA_REDIRECTS: usize = 3;

/// The most of a protected resource's `authorization_servers` a flow tries; the others are
/// passed over (each one tried costs up to three metadata fetches).
pub const MAX_AUTHORIZATION_SERVERS: usize = 5;

/// What a flow wants next. [`Flow::step`] returns it until the input it waits for arrives.
///
/// Exhaustive on purpose: each variant is an action of the driver (see the crate docs, "Which
/// enums are `#[non_exhaustive]`").
// One `Step` lives at a time, in a flow that runs a few times a session: its size costs nothing,
// and a boxed `Done` would cost every caller a deref.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Make this request and hand its answer to [`Flow::on_response`] (or its failure to
    /// [`Flow::on_failure`]). Never follow a redirect: a `3xx` is an answer (the flow follows
    /// those it may itself, with its headers).
    Send(HttpRequest),
    /// Hand the stored credentials for this issuer and resource, if any, to
    /// [`Flow::on_loaded`].
    Load {
        /// The authorization server's issuer.
        issuer: String,
        /// The resource.
        resource: String,
    },
    /// A person must authorize: see [`AuthorizationRequest`].
    Authorize(AuthorizationRequest),
    /// Done: use these credentials (and store them under their issuer and resource).
    Done(Credentials),
    /// Failed.
    Failed(AuthError),
}

/// Where a flow is: each variant waits for one input ([`Step`] says which).
#[derive(Debug, Clone)]
enum State {
    /// A refresh request is out; on failure, `then`.
    Refreshing { then: AfterRefresh },
    /// Protected resource metadata requests.
    ResourceMetadata { urls: Vec<String>, at: usize },
    /// Authorization server metadata requests.
    ServerMetadata {
        issuer: String,
        urls: Vec<String>,
        at: usize,
        resource_scopes: Option<Vec<String>>,
        legacy: bool,
        reason: Option<String>,
    },
    /// Waiting for stored credentials.
    Loading,
    /// A registration request is out, asking for this authentication method.
    Registering { method: AuthMethod },
    /// Waiting for the redirect back.
    Authorizing {
        pkce: Pkce,
        state: String,
        scope: Option<String>,
    },
    /// A token request is out.
    Exchanging { scope: Option<String> },
    /// A token exchange at the enterprise's identity provider is out (an ID-JAG for the
    /// authorization server found).
    ExchangingIdentity { scope: Option<String> },
    /// Over.
    Over,
}

#[derive(Debug, Clone, Copy)]
enum AfterRefresh {
    Discover,
    Identify,
}

/// The discovery the flow has done.
#[derive(Debug, Clone)]
struct Found {
    issuer: String,
    server: ServerMetadata,
    /// The PRM's `scopes_supported`.
    resource_scopes: Option<Vec<String>>,
    /// Found by the 2025-03-26 fallback, at the MCP server's origin.
    legacy: bool,
}

/// Whose redirect a request to the redirect URI is ([`Flow::check_redirect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirect {
    /// This flow's: its `state` is the one sent. Hand it to [`Flow::on_redirect`].
    Ours,
    /// Not to the redirect URI (another path: a browser's favicon request, say).
    Elsewhere,
    /// To the redirect URI, but not this flow's authorization response: no `state`, or another
    /// one. A listener answers it with an error and keeps waiting for this flow's.
    NotOurs,
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The MCP endpoint as a `resource` (RFC 8707 § 2: no fragment; the spec prefers no trailing
/// slash on a bare origin). Used when there is no protected resource metadata.
fn canonical_resource(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_fragment(None);
            let s: String = u.into();
            match s.strip_suffix('/') {
                Some(t) if url::Url::parse(&s).is_ok_and(|u| u.path() == "/") => t.to_owned(),
                _ => s,
            }
        }
        Err(_) => url.to_owned(),
    }
}

/// Whether the metadata's `resource` covers the MCP endpoint: the same origin, and a path that
/// is the endpoint's or a segment-wise prefix of it (a server at `/mcp` whose metadata names its
/// origin, as most do).
fn resource_covers(resource: &str, mcp_url: &str) -> bool {
    let (Ok(r), Ok(m)) = (url::Url::parse(resource), url::Url::parse(mcp_url)) else {
        return false;
    };
    if r.origin() != m.origin() || r.query().is_some() || r.fragment().is_some() {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let mp = m.path().trim_end_matches('/');
    rp.is_empty() || mp == rp || mp.starts_with(&format!("{rp}/"))
}

fn origin(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    let o = u.origin();
    o.is_tuple().then(|| o.ascii_serialization())
}

/// Space-separated scopes, each once, in order.
fn scope_union<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for part in parts {
        for s in part.split(' ').filter(|s| !s.is_empty()) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

fn get(url: &str) -> HttpRequest {
    HttpRequest {
        method: Method::Get,
        url: url.to_owned(),
        headers: vec![("Accept".into(), "application/json".into())],
        body: None,
    }
}

/// One authorization. See the [module docs](super).
#[derive(Debug)]
pub struct Flow {
    options: AuthOptions,
    start: FlowStart,
    random: Randomness,
    state: State,
    step: Step,
    /// The resource parameter: the PRM's `resource`, else the endpoint's canonical URI.
    resource: String,
    found: Option<Found>,
    client: Option<Client>,
    /// The credentials being refreshed.
    refreshing: Option<Credentials>,
    /// Every URL the current discovery stage tried.
    tried: Vec<String>,
    /// The protected resource's authorization servers still to try, in order, when the current
    /// one cannot be used.
    servers: Vec<String>,
    /// The protected resource's `scopes_supported`, for each authorization server tried.
    resource_scopes: Option<Vec<String>>,
    /// Why each authorization server tried so far was passed over.
    passed: Vec<String>,
    /// The URLs the current metadata fetch was redirected from, in order (at most
    /// [`MAX_METADATA_REDIRECTS`]).
    redirected: Vec<String>,
    /// The time of the latest input (seconds since the epoch), for signed assertions.
    now: u64,
    /// Assertions and DPoP proofs signed so far (each gets its own `jti`).
    assertions: u32,
    /// The DPoP key the token requests are signed with, when this flow asks for DPoP-bound
    /// tokens (decided with the authorization server found, or by the credentials refreshed).
    dpop: Option<Arc<DpopKey>>,
    /// The protected resource metadata said `dpop_bound_access_tokens_required`.
    dpop_required: bool,
    /// The authorization server's latest `DPoP-Nonce`.
    as_nonce: Option<String>,
    /// The token request out was already sent again with the server's nonce (once only).
    nonce_retried: bool,
    /// What `dpop` was before a refresh's own key took its place (restored when it fails).
    dpop_decided: Option<Arc<DpopKey>>,
}

impl Flow {
    /// A flow for `start`, at `now`.
    pub fn new(
        start: FlowStart,
        options: AuthOptions,
        random: Randomness,
        now: SystemTime,
    ) -> Flow {
        let resource = canonical_resource(&start.resource_url);
        let mut flow = Flow {
            options,
            random,
            state: State::Over,
            step: Step::Failed(AuthError::Misuse("not started")),
            resource,
            found: None,
            client: None,
            refreshing: None,
            tried: Vec::new(),
            redirected: Vec::new(),
            servers: Vec::new(),
            resource_scopes: None,
            passed: Vec::new(),
            now: unix(now),
            assertions: 0,
            dpop: None,
            dpop_required: false,
            as_nonce: None,
            nonce_retried: false,
            dpop_decided: None,
            start,
        };
        if let Some(pre) = flow
            .options
            .pre_registered
            .as_ref()
            .filter(|p| p.is_confidential() && p.issuer.is_none())
        {
            let client_id = pre.client_id.clone();
            flow.fail(AuthError::UnboundSecret { client_id });
            return flow;
        }
        let refresh = (flow.start.reason == Reason::Expired)
            .then(|| flow.start.previous.clone())
            .flatten()
            .filter(|p| p.tokens.refresh_token.is_some());
        match refresh {
            Some(previous) => flow.refresh(previous, AfterRefresh::Discover),
            None => flow.discover(),
        }
        flow
    }

    /// Starts the flow with an authorization server's `DPoP-Nonce` kept from an earlier flow
    /// ([`dpop_nonce`](Self::dpop_nonce)), so that its token requests need not be refused for
    /// it first (RFC 9449 § 8.2: the client uses the latest nonce it was given). One the server
    /// no longer takes costs the one retry its `use_dpop_nonce` answer allows.
    pub fn with_dpop_nonce(mut self, nonce: Option<&str>) -> Flow {
        self.as_nonce = nonce.and_then(accept_nonce).map(str::to_owned);
        // A refresh is out already (made by `new`): signed again, with the nonce.
        if let Step::Send(mut request) = self.step.clone() {
            if request
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("dpop"))
            {
                self.sign_token_request(&mut request);
                self.step = Step::Send(request);
            }
        }
        self
    }

    /// The latest `DPoP-Nonce` an authorization server gave this flow, to start the next flow
    /// with ([`with_dpop_nonce`](Self::with_dpop_nonce)).
    pub fn dpop_nonce(&self) -> Option<&str> {
        self.as_nonce.as_deref()
    }

    /// What the flow wants now.
    pub fn step(&self) -> &Step {
        &self.step
    }

    /// Whether the flow is over ([`Step::Done`] or [`Step::Failed`]).
    pub fn is_over(&self) -> bool {
        matches!(self.state, State::Over)
    }

    fn fail(&mut self, e: AuthError) {
        self.state = State::Over;
        self.step = Step::Failed(e);
    }

    /// Every request of the flow goes out through here, and only to a URL
    /// [`allowed_fetch`](super::allowed_fetch) allows (each stage checked its URLs already:
    /// this is the last word, for one that came from elsewhere, such as a stored token
    /// endpoint).
    fn send(&mut self, state: State, request: HttpRequest) {
        if let Err(reason) = allowed_fetch(&self.start.resource_url, &request.url) {
            return self.fail(AuthError::RefusedUrl {
                url: redact_url(&request.url),
                reason,
                resource: redact_url(&self.start.resource_url),
            });
        }
        self.state = state;
        self.step = Step::Send(request);
    }

    /// A token request goes out through here: with a DPoP proof when this flow asks for
    /// DPoP-bound tokens (with the authorization server's nonce, when it gave one).
    ///
    /// > "To request an access token that is bound to a public key using DPoP, the client MUST
    /// > provide a valid DPoP proof JWT in a DPoP header when making an access token request to
    /// > the authorization server's token endpoint. This is applicable for all access token
    /// > requests regardless of grant type" — RFC 9449 § 5
    fn send_token(&mut self, state: State, mut request: HttpRequest) {
        self.nonce_retried = false;
        self.sign_token_request(&mut request);
        self.send(state, request);
    }

    fn sign_token_request(&mut self, request: &mut HttpRequest) {
        request
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("dpop"));
        let Some(key) = self.dpop.clone() else {
            return;
        };
        let jti = self.jti();
        let proof = key.proof(
            request.method.as_str(),
            &request.url,
            self.now,
            &jti,
            None,
            self.as_nonce.as_deref(),
        );
        request.headers.push(("DPoP".into(), proof.into()));
    }

    /// A token endpoint's answer that asks for a proof with its nonce: the request goes out
    /// again, once, signed with it (`true`). Any answer's `DPoP-Nonce` is kept for the flow's
    /// next proof.
    ///
    /// > "the authorization server responds with an HTTP 400 (Bad Request) … error response
    /// > parameter value of use_dpop_nonce … and a DPoP-Nonce HTTP header … The client … is
    /// > expected to retry the token request using the server-provided nonce" — RFC 9449 § 8
    fn dpop_nonce_retry(&mut self, status: u16, headers: &[(String, String)], body: &[u8]) -> bool {
        if self.dpop.is_none() {
            return false;
        }
        let fresh = header(headers, DPOP_NONCE_HEADER).and_then(accept_nonce);
        if let Some(nonce) = fresh {
            self.as_nonce = Some(nonce.to_owned());
        }
        if status != 400 || fresh.is_none() || self.nonce_retried {
            return false;
        }
        if error_answer(body).0.as_deref() != Some(USE_DPOP_NONCE) {
            return false;
        }
        let Step::Send(mut request) = self.step.clone() else {
            return false;
        };
        self.nonce_retried = true;
        self.sign_token_request(&mut request);
        self.step = Step::Send(request);
        true
    }

    /// A fresh `jti` (an assertion's, a proof's): the flow's randomness, the time, a count.
    fn jti(&mut self) -> String {
        self.assertions += 1;
        jti(&[
            &self.random.state,
            &self.now.to_be_bytes(),
            &self.assertions.to_be_bytes(),
        ])
    }

    /// The key `tokens` are bound to, when they are DPoP-bound and it is this flow's key: such
    /// tokens are usable (and refreshable) only with it. `Err`: bound to another key (or no key
    /// is at hand).
    fn bound_key(&self, tokens: &Tokens) -> Result<Option<Arc<DpopKey>>, ()> {
        let Some(jkt) = &tokens.dpop_jkt else {
            return Ok(None);
        };
        self.options
            .dpop_key
            .clone()
            .filter(|k| &k.thumbprint() == jkt)
            .map(Some)
            .ok_or(())
    }

    /// The refusal of a URL a server named: [`AuthError::InsecureEndpoint`] for plain HTTP,
    /// [`AuthError::RefusedUrl`] for an address the flow does not fetch.
    fn refused(&self, issuer: &str, url: &str, reason: FetchRefusal) -> AuthError {
        match reason {
            FetchRefusal::NotHttps => AuthError::InsecureEndpoint {
                issuer: issuer.to_owned(),
                url: redact_url(url),
            },
            reason => AuthError::RefusedUrl {
                url: redact_url(url),
                reason,
                resource: redact_url(&self.start.resource_url),
            },
        }
    }

    fn discover(&mut self) {
        let urls = resource_metadata_urls(&self.start.resource_url, self.start.challenge.as_ref());
        if urls.is_empty() {
            let url = redact_url(&self.start.resource_url);
            return self.fail(AuthError::NoResourceMetadata {
                resource: url,
                tried: Vec::new(),
            });
        }
        self.tried.clear();
        // A challenge's URL that is not fetched is named first, so that a failure says why the
        // well-known URIs were tried instead.
        let named = self
            .start
            .challenge
            .as_ref()
            .and_then(|c| c.resource_metadata.as_deref());
        if let Some(named) = named {
            if let Err(why) = allowed_fetch(&self.start.resource_url, named) {
                self.tried
                    .push(format!("{} (not fetched: {why})", redact_url(named)));
            }
        }
        self.tried.push(redact_url(&urls[0]));
        let request = get(&urls[0]);
        self.send(State::ResourceMetadata { urls, at: 0 }, request);
    }

    /// The answer to the last [`Step::Send`]: its status, headers and body (at most
    /// [`MAX_DOCUMENT`](super::metadata::MAX_DOCUMENT) bytes are needed; a longer body may be
    /// cut there), at `now`.
    pub fn on_response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
        now: SystemTime,
    ) {
        self.now = unix(now);
        if matches!(
            self.state,
            State::ResourceMetadata { .. } | State::ServerMetadata { .. }
        ) && self.redirect(status, headers)
        {
            return;
        }
        if matches!(
            self.state,
            State::Exchanging { .. } | State::Refreshing { .. }
        ) && self.dpop_nonce_retry(status, headers, body)
        {
            return;
        }
        let state = std::mem::replace(&mut self.state, State::Over);
        match state {
            State::ResourceMetadata { urls, at } => {
                self.on_resource_metadata(urls, at, status, body)
            }
            State::ServerMetadata {
                issuer,
                urls,
                at,
                resource_scopes,
                legacy,
                reason,
            } => self.on_server_metadata(
                issuer,
                urls,
                at,
                resource_scopes,
                legacy,
                reason,
                status,
                body,
            ),
            State::Registering { method } => self.on_registered(status, body, method),
            State::Exchanging { scope } => self.on_tokens(status, body, now, scope),
            State::ExchangingIdentity { scope } => self.on_identity(status, body, scope),
            State::Refreshing { then } => self.on_refreshed(status, body, now, then),
            other => {
                self.state = other;
                self.step = Step::Failed(AuthError::Misuse("a response came with none asked"));
                self.state = State::Over;
            }
        }
    }

    /// Follows a metadata fetch's redirect: `true` when the same request went out again to
    /// where it points. A redirect not followed is told in the failure's list of URLs tried, and
    /// its answer is read as one without the document (discovery goes on to the next URL).
    ///
    /// The documents are fetched by `GET` at well-known URLs (RFC 8414 § 3.1, RFC 9728 § 3.1), and
    /// a server may move them behind a redirect; a user agent "MAY" follow one automatically (RFC
    /// 9110 § 15.4). Followed only to the same origin (scheme, host and port: never from HTTPS to
    /// HTTP, never to another host, which the server named nowhere), at most
    /// [`MAX_METADATA_REDIRECTS`] times, never back to a URL already visited. What the document
    /// must say does not change: the `issuer` must still be the one the well-known URL was made
    /// from, the `resource` still the MCP server's.
    fn redirect(&mut self, status: u16, headers: &[(String, String)]) -> bool {
        let Step::Send(request) = &self.step else {
            return false;
        };
        let current = request.url.clone();
        let refused =
            match redirect_target(Method::Get, status, header(headers, "location"), &current) {
                Ok(None) => {
                    self.redirected.clear();
                    return false;
                }
                Ok(Some(_)) if self.redirected.len() >= MAX_METADATA_REDIRECTS => {
                    RedirectRefused::TooMany {
                        limit: MAX_METADATA_REDIRECTS,
                    }
                }
                Ok(Some(next)) if next == current || self.redirected.contains(&next) => {
                    RedirectRefused::Loop {
                        url: redact_url(&next),
                    }
                }
                Ok(Some(next)) => {
                    self.redirected.push(current);
                    self.tried
                        .push(format!("{} (redirected there)", redact_url(&next)));
                    let state = self.state.clone();
                    self.send(state, get(&next));
                    return true;
                }
                Err(reason) => reason,
            };
        self.redirected.clear();
        if let Some(last) = self.tried.last_mut() {
            last.push_str(&format!(" (a {status} not followed: {refused})"));
        }
        false
    }

    /// The last [`Step::Send`] could not be made or answered (`message`: what happened, with no
    /// secret in it).
    pub fn on_failure(&mut self, message: &str, now: SystemTime) {
        match &self.state {
            // Discovery goes on to the next place to look; a refresh falls back to
            // authorizing again.
            State::ResourceMetadata { .. }
            | State::ServerMetadata { .. }
            | State::Refreshing { .. } => self.on_response(0, &[], b"", now),
            State::Registering { .. } | State::Exchanging { .. } => {
                let url = match &self.step {
                    Step::Send(r) => redact_url(&r.url),
                    _ => String::new(),
                };
                self.fail(AuthError::Transport {
                    url,
                    message: message.to_owned(),
                })
            }
            _ => self.fail(AuthError::Misuse("a failure came with no request out")),
        }
    }

    fn on_resource_metadata(&mut self, urls: Vec<String>, at: usize, status: u16, body: &[u8]) {
        if status == 200 {
            if let Ok(md) = ResourceMetadata::parse(body) {
                let url = redact_url(&urls[at]);
                if let Some(advertised) = &md.resource {
                    // > "MCP clients MUST … validate the resource" (RFC 9728 § 3.3, § 7.3): a
                    // > server cannot send the client's token request to another resource.
                    if !resource_covers(advertised, &self.start.resource_url) {
                        return self.fail(AuthError::ResourceMismatch {
                            url,
                            expected: redact_url(&self.start.resource_url),
                            advertised: advertised.clone(),
                        });
                    }
                    self.resource = advertised.clone();
                }
                // > "The responsibility for selecting which authorization server to use lies
                // > with the MCP client" — MCP 2025-11-25, Authorization § Authorization Server
                // > Location. This client tries them in the order listed (the pre-registered
                // > client's own first, when it is listed), and the next one when one's metadata
                // > is not found or not usable (`Flow::unusable`); each binding rule holds for
                // > each one.
                let mut servers: Vec<String> = Vec::new();
                for s in &md.authorization_servers {
                    if !servers.contains(s) && servers.len() < MAX_AUTHORIZATION_SERVERS {
                        servers.push(s.clone());
                    }
                }
                let own = self.options.pre_registered.as_ref().and_then(|p| {
                    let issuer = p.issuer.as_ref()?;
                    servers.iter().position(|s| s == issuer)
                });
                if let Some(at) = own {
                    let mine = servers.remove(at);
                    servers.insert(0, mine);
                }
                let Some(issuer) = (!servers.is_empty()).then(|| servers.remove(0)) else {
                    return self.fail(AuthError::Misuse("no authorization server listed"));
                };
                self.servers = servers;
                self.resource_scopes = md.scopes_supported.clone();
                self.dpop_required = md.dpop_bound_access_tokens_required;
                return self.server_metadata(issuer, md.scopes_supported, false);
            }
        }
        let next = at + 1;
        if next < urls.len() {
            self.tried.push(redact_url(&urls[next]));
            let request = get(&urls[next]);
            return self.send(State::ResourceMetadata { urls, at: next }, request);
        }
        // Only for a server that asked for a Bearer token: a 401 without such a challenge (an
        // API key, another scheme) is not an invitation to guess its authorization server.
        if self.options.legacy_fallbacks && self.start.challenge.is_some() {
            // > "For servers that do not implement [protected resource metadata] … the
            // > authorization base URL MUST be determined from the MCP server URL by discarding
            // > any existing path component" — MCP 2025-03-26, Authorization § 2.3.2
            if let Some(origin) = origin(&self.start.resource_url) {
                return self.server_metadata(origin, None, true);
            }
        }
        let tried = std::mem::take(&mut self.tried);
        self.fail(AuthError::NoResourceMetadata {
            resource: redact_url(&self.start.resource_url),
            tried,
        })
    }

    fn server_metadata(&mut self, issuer: String, scopes: Option<Vec<String>>, legacy: bool) {
        // Its metadata would come over plain HTTP from another host, where anyone on the way
        // could name their own endpoints.
        // > "The authorization server's issuer identifier, which is a URL that uses the "https"
        // > scheme and has no query or fragment components." — RFC 8414 § 2 (or this machine).
        let plain =
            url::Url::parse(&issuer).is_ok_and(|u| u.query().is_none() && u.fragment().is_none());
        let reason = match allowed_fetch(&self.start.resource_url, &issuer) {
            Ok(()) if plain || legacy => None,
            Ok(()) => Some(FetchRefusal::NotHttp),
            Err(reason) => Some(reason),
        };
        if let Some(reason) = reason {
            let error = self.refused(&issuer, &issuer, reason);
            return self.unusable(error);
        }
        let urls = if legacy {
            // The 2025-03-26 revision looks only at RFC 8414's URL at the origin.
            vec![format!("{issuer}/.well-known/oauth-authorization-server")]
        } else {
            authorization_server_metadata_urls(&issuer)
        };
        if urls.is_empty() {
            return self.unusable(AuthError::NoServerMetadata {
                issuer,
                tried: Vec::new(),
                reason: Some("not a URL".into()),
            });
        }
        self.tried.clear();
        self.tried.push(redact_url(&urls[0]));
        let request = get(&urls[0]);
        self.send(
            State::ServerMetadata {
                issuer,
                urls,
                at: 0,
                resource_scopes: scopes,
                legacy,
                reason: None,
            },
            request,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn on_server_metadata(
        &mut self,
        issuer: String,
        urls: Vec<String>,
        at: usize,
        resource_scopes: Option<Vec<String>>,
        legacy: bool,
        mut reason: Option<String>,
        status: u16,
        body: &[u8],
    ) {
        if status == 200 {
            match ServerMetadata::parse(body) {
                // > "the `issuer` value in the document **MUST** be identical to the issuer
                // > identifier used to construct the well-known URL. If they differ, the client
                // > **MUST NOT** use the metadata." — MCP 2026-07-28, Authorization Server
                // > Discovery (RFC 8414 § 3.3). Compared as strings, as sent.
                Ok(md) if !legacy && md.issuer != issuer => {
                    reason = Some(format!(
                        "{} names the issuer {}, not {issuer}",
                        redact_url(&urls[at]),
                        md.issuer
                    ));
                }
                Ok(md) => {
                    return self.with_server(Found {
                        issuer: if legacy { md.issuer.clone() } else { issuer },
                        server: md,
                        resource_scopes,
                        legacy,
                    });
                }
                Err(e) => reason = Some(format!("{}: {e}", redact_url(&urls[at]))),
            }
        }
        let next = at + 1;
        if next < urls.len() {
            self.tried.push(redact_url(&urls[next]));
            let request = get(&urls[next]);
            return self.send(
                State::ServerMetadata {
                    issuer,
                    urls,
                    at: next,
                    resource_scopes,
                    legacy,
                    reason,
                },
                request,
            );
        }
        if legacy {
            // > "clients MUST use the following default endpoint paths relative to the
            // > authorization base URL: /authorize, /token, /register" — MCP 2025-03-26,
            // > Authorization § 2.3.3
            let server = ServerMetadata {
                issuer: issuer.clone(),
                authorization_endpoint: Some(format!("{issuer}/authorize")),
                token_endpoint: format!("{issuer}/token"),
                registration_endpoint: Some(format!("{issuer}/register")),
                scopes_supported: None,
                token_endpoint_auth_methods_supported: None,
                code_challenge_methods_supported: Some(vec![PKCE_METHOD.to_owned()]),
                grant_types_supported: None,
                client_id_metadata_document_supported: false,
                authorization_response_iss_parameter_supported: false,
                dpop_signing_alg_values_supported: None,
            };
            return self.with_server(Found {
                issuer,
                server,
                resource_scopes,
                legacy,
            });
        }
        let tried = std::mem::take(&mut self.tried);
        self.unusable(AuthError::NoServerMetadata {
            issuer,
            tried,
            reason,
        })
    }

    /// The authorization server being tried cannot be used (`error` says why: its metadata was
    /// not found or not usable, or the pre-registered client is bound to another one): the
    /// next one the protected resource lists is tried, or the flow fails — with `error` when it
    /// was the only one, else with every one's reason. Nothing but metadata was fetched from
    /// it: no secret, registration or person went there.
    fn unusable(&mut self, error: AuthError) {
        if self.servers.is_empty() && self.passed.is_empty() {
            return self.fail(error);
        }
        self.passed.push(error.to_string());
        if self.servers.is_empty() {
            let tried = std::mem::take(&mut self.passed);
            return self.fail(AuthError::NoUsableServer {
                resource: redact_url(&self.start.resource_url),
                tried,
            });
        }
        let next = self.servers.remove(0);
        let scopes = self.resource_scopes.clone();
        self.server_metadata(next, scopes, false);
    }

    fn with_server(&mut self, mut found: Found) {
        // Each endpoint as the URL parser reads it (what is sent is what was checked: a lenient
        // parse of `https:/host/x` must not pass the check and go out as something else).
        let issuer = found.issuer.clone();
        let md = &mut found.server;
        let mut endpoints = vec![&mut md.token_endpoint];
        endpoints.extend(md.authorization_endpoint.as_mut());
        endpoints.extend(md.registration_endpoint.as_mut());
        // > "The `token_endpoint`, `authorization_endpoint`, and other URLs from Authorization
        // > Server Metadata" are among the URLs "that could be controlled by a malicious MCP
        // > server" — MCP 2025-11-25, Security Best Practices § Server-Side Request Forgery
        let resource_url = self.start.resource_url.clone();
        for endpoint in endpoints {
            let checked = url::Url::parse(endpoint)
                .map_err(|_| FetchRefusal::NotHttp)
                .and_then(|u| allowed_fetch(&resource_url, u.as_str()).map(|()| u));
            match checked {
                Ok(u) => *endpoint = u.into(),
                Err(reason) => {
                    let error = self.refused(&issuer, endpoint, reason);
                    return self.unusable(error);
                }
            }
        }
        let md = &found.server;
        if self.options.grant == Grant::AuthorizationCode
            && !md
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|m| m.iter().any(|m| m == PKCE_METHOD))
        {
            return self.unusable(AuthError::PkceUnsupported {
                issuer: found.issuer.clone(),
            });
        }
        let wrong = self.options.pre_registered.as_ref().and_then(|pre| {
            pre.issuer
                .as_ref()
                .filter(|i| !self.bound_to(i, &found))
                .cloned()
        });
        if let Some(registered) = wrong {
            return self.unusable(AuthError::WrongIssuer {
                registered,
                issuer: found.issuer.clone(),
                resource: redact_url(&self.start.resource_url),
            });
        }
        // DPoP-bound tokens: when the application asks, or the resource does (its challenge's
        // scheme, its metadata, or the tokens it refused were bound), and the authorization
        // server does not refuse ES256 proofs.
        let required = self.start.challenge.as_ref().is_some_and(|c| c.dpop) || self.dpop_required;
        let asked = required
            || self
                .start
                .previous
                .as_ref()
                .is_some_and(|p| p.tokens.dpop_jkt.is_some());
        let wanted = match self.options.dpop {
            DpopUse::Never => false,
            DpopUse::Always => true,
            _ => asked,
        };
        self.dpop = self
            .options
            .dpop_key
            .clone()
            .filter(|_| wanted)
            .filter(|_| server_takes_es256(md.dpop_signing_alg_values_supported.as_deref()));
        // A resource that takes DPoP-bound tokens only would refuse the Bearer token this
        // flow would get: said now, with the reason, rather than after a person authorized
        // (and another authorization server of the resource may do).
        if required && self.dpop.is_none() {
            let why = match (self.options.dpop, &self.options.dpop_key) {
                (DpopUse::Never, _) => "DPoP is turned off".to_owned(),
                (_, None) => "there is no DPoP key".to_owned(),
                _ => format!(
                    "its authorization server {} takes no ES256 DPoP proofs",
                    found.issuer
                ),
            };
            return self.unusable(AuthError::Unsupported(format!(
                "{} takes DPoP-bound tokens only (RFC 9449), and {why}",
                redact_url(&self.start.resource_url)
            )));
        }
        let load = Step::Load {
            issuer: found.issuer.clone(),
            resource: self.resource.clone(),
        };
        self.found = Some(found);
        self.state = State::Loading;
        self.step = load;
    }

    /// Whether the authorization server found is the one `registered` names. The issuer of
    /// the metadata found from protected resource metadata was checked against the URL it was
    /// fetched from. Without such metadata (the 2025-03-26 fallback), the document at the MCP
    /// server's origin names its own issuer: it is that issuer only when that is also where it
    /// was found, or a server could claim another's issuer and receive its client's secret at
    /// an endpoint of its own.
    fn bound_to(&self, registered: &str, found: &Found) -> bool {
        registered == found.issuer
            && (!found.legacy || origin(registered) == origin(&self.start.resource_url))
    }

    /// The stored credentials for the [`Step::Load`]'s issuer and resource, if any, at `now`
    /// ([`on_loaded_with`](Self::on_loaded_with) without a shared registration).
    pub fn on_loaded(&mut self, stored: Option<Credentials>, now: SystemTime) {
        self.on_loaded_with(stored, None, now)
    }

    /// The stored credentials for the [`Step::Load`]'s issuer and resource, if any, and
    /// `registration`: stored credentials of the same issuer for another resource, whose
    /// dynamic registration the flow reuses instead of registering again, when it needs a
    /// client and that one may be used here (only its client is taken, never its tokens).
    ///
    /// A registration is the client's at an authorization server, not at a resource:
    /// > "Clients that use pre-registered credentials, or persist client credentials obtained
    /// > via Dynamic Client Registration, **MUST** associate those credentials with the
    /// > specific authorization server that issued them, keyed by the authorization server's
    /// > `issuer` identifier." — MCP 2026-07-28, Authorization Server Binding
    ///
    /// It is reused only when it is a dynamic registration (`ClientKind::Registered`) of
    /// exactly this issuer, with a secret that has not expired (RFC 7591 § 3.2.1,
    /// `client_secret_expires_at`), when no pre-registered client is configured, and — for an
    /// authorization server found by the 2025-03-26 fallback, which names its own issuer —
    /// only when that issuer is at the MCP server's origin, as for a pre-registered secret.
    pub fn on_loaded_with(
        &mut self,
        stored: Option<Credentials>,
        registration: Option<Credentials>,
        now: SystemTime,
    ) {
        self.now = unix(now);
        if !matches!(self.state, State::Loading) {
            return self.fail(AuthError::Misuse("stored credentials came unasked"));
        }
        let Some(found) = self.found.clone() else {
            return self.fail(AuthError::Misuse("stored credentials came unasked"));
        };
        let now = unix(now);
        // The connection's own credentials count as stored ones when they are from the same
        // authorization server for the same resource; credentials from another one are never
        // used (MCP 2026-07-28, Authorization Server Binding: re-register there).
        let failed = self
            .start
            .previous
            .as_ref()
            .map(|p| p.tokens.access_token.clone());
        let candidate = stored
            .filter(|c| c.issuer == found.issuer && c.resource == self.resource)
            .or_else(|| {
                self.start
                    .previous
                    .clone()
                    .filter(|c| c.issuer == found.issuer && c.resource == self.resource)
            });
        if let Some(c) = candidate {
            let step_up = self.start.reason == Reason::InsufficientScope;
            // Tokens bound to another DPoP key (a key made for an earlier run) are of no use:
            // neither the access token nor, for a public client, the refresh token (RFC 9449
            // § 5). Its client is still this client's.
            let bound = self.bound_key(&c.tokens);
            if bound.is_err() {
                if self.options.pre_registered.is_none()
                    && c.client.secret_expires_at.is_none_or(|t| t > now)
                {
                    self.client = Some(c.client.clone());
                }
                return self.identify();
            }
            if !step_up && Some(&c.tokens.access_token) != failed.as_ref() && c.tokens.is_fresh(now)
            {
                self.state = State::Over;
                self.step = Step::Done(scrubbed(c));
                return;
            }
            let usable_client = self.options.pre_registered.is_none()
                && c.client.secret_expires_at.is_none_or(|t| t > now);
            if usable_client {
                self.client = Some(c.client.clone());
            }
            // A refresh cannot widen the scope: a step-up authorizes again.
            if !step_up && c.tokens.refresh_token.is_some() {
                return self.refresh(c, AfterRefresh::Identify);
            }
        }
        let registration_issuer = registration.as_ref().map(|r| r.issuer.clone());
        let shared = registration
            .map(|r| r.client)
            .filter(|_| self.client.is_none() && self.options.pre_registered.is_none())
            .filter(|_| self.options.grant == Grant::AuthorizationCode)
            .filter(|c| c.kind == ClientKind::Registered)
            .filter(|c| c.secret_expires_at.is_none_or(|t| t > now));
        if let Some(client) = shared {
            let same_server = self.bound_to(&found.issuer, &found);
            // Checked here too, whatever the store keyed it by.
            if same_server && registration_issuer.as_deref() == Some(found.issuer.as_str()) {
                self.client = Some(client);
            }
        }
        self.identify();
    }

    fn refresh(&mut self, c: Credentials, then: AfterRefresh) {
        let c = scrubbed(c);
        let Some(refresh) = c.tokens.refresh_token.clone() else {
            return self.after_refresh(then);
        };
        // A DPoP-bound token is refreshed with a proof by its key (and not at all without it);
        // a Bearer one as it was got.
        let Ok(key) = self.bound_key(&c.tokens) else {
            return self.after_refresh(then);
        };
        self.dpop_decided = std::mem::replace(&mut self.dpop, key);
        // > "grant_type REQUIRED. Value MUST be set to "refresh_token"." — OAuth 2.1 § 4.3.1;
        // > the resource again, as RFC 8707 § 2.2 allows.
        let assertion = match self.assertion(&c.client, &c.issuer) {
            Ok(a) => a,
            Err(e) => return self.fail(e),
        };
        let secret = self.secret(&c.client, &c.issuer);
        let request = token_request(
            &c.token_endpoint,
            &c.client,
            secret.as_ref(),
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh.expose()),
                ("resource", &c.resource),
            ],
            assertion.as_deref(),
        );
        self.refreshing = Some(c);
        self.send_token(State::Refreshing { then }, request);
    }

    fn after_refresh(&mut self, then: AfterRefresh) {
        self.dpop = self.dpop_decided.take();
        match then {
            AfterRefresh::Discover => self.discover(),
            AfterRefresh::Identify => self.identify(),
        }
    }

    fn on_refreshed(&mut self, status: u16, body: &[u8], now: SystemTime, then: AfterRefresh) {
        let Some(old) = self.refreshing.take() else {
            return self.fail(AuthError::Misuse("no refresh was out"));
        };
        match (status, TokenResponse::parse(body)) {
            (200, Ok(t)) if t.is_dpop() && self.dpop.is_none() => {
                let e = self.unasked_dpop_token(&old.token_endpoint);
                self.fail(e);
            }
            (200, Ok(t)) => {
                let dpop_jkt = self
                    .dpop
                    .as_ref()
                    .filter(|_| t.is_dpop())
                    .map(|k| k.thumbprint());
                let tokens = Tokens {
                    access_token: t.access_token,
                    issued_at: unix(now),
                    expires_at: t.expires_in.map(|s| unix(now).saturating_add(s)),
                    // > "The authorization server MAY issue a new refresh token" — OAuth 2.1
                    // > (draft-ietf-oauth-v2-1) § 4.3.3. The old one is kept when none came.
                    refresh_token: t.refresh_token.or(old.tokens.refresh_token.clone()),
                    scope: t.scope.or(old.tokens.scope.clone()),
                    requested_scope: old.tokens.requested_scope.clone(),
                    dpop_jkt,
                };
                self.state = State::Over;
                self.step = Step::Done(Credentials { tokens, ..old });
            }
            // A refused refresh (expired, revoked) means authorizing again.
            _ => self.after_refresh(then),
        }
    }

    fn identify(&mut self) {
        let Some(found) = self.found.clone() else {
            return self.fail(AuthError::Misuse("no authorization server"));
        };
        // Nobody to ask (the application said so): stored tokens were used, and refreshed
        // where they could be without a person; what is left needs one, so the flow ends here,
        // naming the authorization server, before it registers a client or asks anyone.
        if self.options.grant == Grant::AuthorizationCode && !self.options.interactive {
            return self.fail(AuthError::NotAuthorized {
                issuer: found.issuer,
                resource: redact_url(&self.start.resource_url),
                reason: "authorizing is turned off".into(),
            });
        }
        let md = &found.server;
        if let Some(pre) = &self.options.pre_registered {
            let auth_method = pre.auth_method.unwrap_or(match &pre.client_secret {
                _ if pre.private_key.is_some() => AuthMethod::PrivateKeyJwt,
                None => AuthMethod::None,
                Some(_)
                    if !md.supports_auth_method("client_secret_basic")
                        && md.supports_auth_method("client_secret_post") =>
                {
                    AuthMethod::ClientSecretPost
                }
                Some(_) => AuthMethod::ClientSecretBasic,
            });
            self.client = Some(Client {
                client_id: pre.client_id.clone(),
                // Added to each token request from `pre` (`Flow::secret`), never kept here.
                client_secret: None,
                auth_method,
                kind: ClientKind::PreRegistered,
                secret_expires_at: None,
            });
        }
        if self.client.is_none() && self.options.grant == Grant::AuthorizationCode {
            // > "Use Client ID Metadata Documents if the Authorization Server indicates if the
            // > server supports it" — MCP 2025-11-25, Client Registration Approaches
            if let Some(url) = self
                .options
                .client_metadata_url
                .clone()
                .filter(|_| md.client_id_metadata_document_supported)
            {
                self.client = Some(Client {
                    client_id: url,
                    client_secret: None,
                    auth_method: AuthMethod::None,
                    kind: ClientKind::MetadataDocument,
                    secret_expires_at: None,
                });
            }
        }
        if self.client.is_some() {
            return self.proceed();
        }
        let Some(endpoint) = md.registration_endpoint.clone() else {
            return self.fail(AuthError::NoClientIdentity {
                issuer: found.issuer,
            });
        };
        if self.options.grant != Grant::AuthorizationCode {
            let grant = match self.options.grant {
                Grant::ClientCredentials => "the client credentials grant",
                _ => "a JWT-bearer grant",
            };
            return self.fail(AuthError::Unsupported(format!(
                "{grant} needs a client pre-registered with {}",
                found.issuer
            )));
        }
        // A public native client: `none` where the server takes it; otherwise whatever it
        // lists first of the methods this client knows (the registration's answer decides).
        let method = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|m| md.supports_auth_method(m))
            .unwrap_or("client_secret_basic");
        let body = serde_json::json!({
            "client_name": self.options.client_name,
            "redirect_uris": [self.options.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": self.options.application_type.as_str(),
        });
        let request = HttpRequest {
            method: Method::Post,
            url: endpoint,
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("Accept".into(), "application/json".into()),
            ],
            body: Some(body.to_string().into_bytes()),
        };
        let method = AuthMethod::from_name(method).unwrap_or(AuthMethod::ClientSecretBasic);
        self.send(State::Registering { method }, request);
    }

    fn on_registered(&mut self, status: u16, body: &[u8], requested: AuthMethod) {
        let issuer = self
            .found
            .as_ref()
            .map(|f| f.issuer.clone())
            .unwrap_or_default();
        if !(200..300).contains(&status) {
            let (error, description) = error_answer(body);
            return self.fail(AuthError::Registration {
                issuer,
                status,
                error,
                description,
            });
        }
        let url = match &self.step {
            Step::Send(r) => redact_url(&r.url),
            _ => String::new(),
        };
        match RegistrationResponse::parse(body) {
            Ok(r) => {
                // "The authorization server MUST return all registered metadata about the
                // client" (RFC 7591 § 3.2.1): an answer without the method registered what was
                // asked for — unless that was `none` and a secret came, which only a method
                // with a secret can use (RFC 7591 § 2's default, `client_secret_basic`).
                let auth_method = r
                    .token_endpoint_auth_method
                    .as_deref()
                    .and_then(AuthMethod::from_name)
                    .unwrap_or(match (requested, &r.client_secret) {
                        (AuthMethod::None, Some(_)) => AuthMethod::ClientSecretBasic,
                        (AuthMethod::None, None) => AuthMethod::None,
                        (m, Some(_)) => m,
                        (_, None) => AuthMethod::None,
                    });
                self.client = Some(Client {
                    client_id: r.client_id,
                    client_secret: r.client_secret,
                    auth_method,
                    kind: ClientKind::Registered,
                    secret_expires_at: r.client_secret_expires_at,
                });
                self.proceed();
            }
            Err(reason) => self.fail(AuthError::InvalidDocument { url, reason }),
        }
    }

    /// The scope to ask for.
    ///
    /// > "1. Use `scope` parameter from the initial `WWW-Authenticate` header in the 401
    /// > response, if provided 2. If `scope` is not available, use all scopes defined in
    /// > `scopes_supported` from the Protected Resource Metadata document, omitting the `scope`
    /// > parameter if `scopes_supported` is undefined." — MCP 2025-11-25, Scope Selection
    /// > Strategy; on a step-up, "the union of the client's previously requested scope set and
    /// > the scopes from the current challenge" — MCP 2026-07-28, Step-Up Authorization Flow
    fn scope(&self, found: &Found) -> Option<String> {
        let challenged = self
            .start
            .challenge
            .as_ref()
            .and_then(|c| c.scope.as_deref());
        let previous = self
            .start
            .previous
            .as_ref()
            .and_then(|p| p.tokens.requested_scope.as_deref());
        let supported = found.resource_scopes.as_ref().map(|s| s.join(" "));
        let base = match (self.start.reason, challenged) {
            (Reason::InsufficientScope, c) => scope_union(previous.into_iter().chain(c)),
            (_, Some(c)) => scope_union([c]),
            (_, None) => previous
                .and_then(|p| scope_union([p]))
                .or_else(|| supported.as_deref().and_then(|s| scope_union([s]))),
        };
        // > "MAY add `offline_access` to the `scope` parameter … when the Authorization Server
        // > metadata contains it in `scopes_supported`" — MCP 2026-07-28, Refresh Tokens
        let offline = self.options.offline_access
            && self.options.grant == Grant::AuthorizationCode
            && found
                .server
                .scopes_supported
                .as_ref()
                .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        if offline {
            scope_union(base.as_deref().into_iter().chain(["offline_access"]))
        } else {
            base
        }
    }

    fn proceed(&mut self) {
        let (Some(found), Some(client)) = (self.found.clone(), self.client.clone()) else {
            return self.fail(AuthError::Misuse("no client"));
        };
        let scope = self.scope(&found);
        match self.options.grant {
            Grant::JwtBearer => {
                let Some(assertion) = self.options.jwt_assertion.clone() else {
                    return self.fail(AuthError::Unsupported(
                        "the JWT-bearer grant needs the workload's JWT (none was given)".into(),
                    ));
                };
                return self.jwt_bearer(&found, &client, scope, &assertion);
            }
            Grant::EnterpriseManaged => {
                let Some(idp) = self.options.identity_provider.clone() else {
                    return self.fail(AuthError::Unsupported(
                        "enterprise-managed authorization needs the identity provider's settings"
                            .into(),
                    ));
                };
                let request = idp.exchange_request(&found.issuer, &self.resource, scope.as_deref());
                return self.send(State::ExchangingIdentity { scope }, request);
            }
            _ => {}
        }
        if self.options.grant == Grant::ClientCredentials {
            let secret = self.secret(&client, &found.issuer);
            if secret.is_none() && client.auth_method != AuthMethod::PrivateKeyJwt {
                return self.fail(AuthError::Unsupported(
                    "the client credentials grant needs a client secret or a private key".into(),
                ));
            }
            let assertion = match self.assertion(&client, &found.issuer) {
                Ok(a) => a,
                Err(e) => return self.fail(e),
            };
            let mut params = vec![
                ("grant_type", "client_credentials"),
                ("resource", self.resource.as_str()),
            ];
            if let Some(s) = &scope {
                params.push(("scope", s));
            }
            let request = token_request(
                &found.server.token_endpoint,
                &client,
                secret.as_ref(),
                &params,
                assertion.as_deref(),
            );
            return self.send_token(State::Exchanging { scope }, request);
        }
        let Some(endpoint) = found.server.authorization_endpoint.as_deref() else {
            return self.fail(AuthError::NoServerMetadata {
                issuer: found.issuer,
                tried: Vec::new(),
                reason: Some("no authorization_endpoint".into()),
            });
        };
        let Ok(mut url) = url::Url::parse(endpoint) else {
            return self.fail(AuthError::InsecureEndpoint {
                issuer: found.issuer,
                url: redact_url(endpoint),
            });
        };
        use base64::Engine;
        let pkce = Pkce::from_random(self.random.verifier);
        let state = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(self.random.state);
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &self.options.redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", PKCE_METHOD)
                .append_pair("state", &state)
                // > "The `resource` parameter … MUST be included in both authorization
                // > requests and token requests." — MCP 2025-11-25, Resource Parameter
                .append_pair("resource", &self.resource);
            if let Some(s) = &scope {
                q.append_pair("scope", s);
            }
        }
        self.state = State::Authorizing { pkce, state, scope };
        self.step = Step::Authorize(AuthorizationRequest {
            url: url.into(),
            redirect_uri: self.options.redirect_uri.clone(),
            issuer: found.issuer,
        });
    }

    /// Whose redirect `redirect` is (a request a listener at the redirect URI received, as a
    /// URL), before anything is decided with it: a listener hands [`Redirect::Ours`] to
    /// [`Flow::on_redirect`], answers the others with an error and keeps waiting. Any process
    /// on this machine can reach a loopback listener; a request without this flow's `state`
    /// ends nothing, so such a process cannot abort the person's login. The flow does not
    /// change.
    ///
    /// > "Reject any callback requests where the `state` parameter is missing or does not
    /// > match" — MCP 2025-11-25, Security Best Practices § OAuth State Parameter Validation
    pub fn check_redirect(&self, redirect: &str) -> Redirect {
        let (Ok(back), Ok(expected)) = (
            url::Url::parse(redirect),
            url::Url::parse(&self.options.redirect_uri),
        ) else {
            return Redirect::Elsewhere;
        };
        if back.origin() != expected.origin() || back.path() != expected.path() {
            return Redirect::Elsewhere;
        }
        let State::Authorizing { state, .. } = &self.state else {
            return Redirect::NotOurs;
        };
        let sent = back.query_pairs().find(|(k, _)| k == "state");
        match sent {
            Some((_, v)) if v == state.as_str() => Redirect::Ours,
            _ => Redirect::NotOurs,
        }
    }

    /// The URL the person was sent back to (the redirect URI with the authorization
    /// response's query). One without this flow's `state` fails the flow
    /// ([`AuthError::StateMismatch`]): a listener that can wait for another asks
    /// [`Flow::check_redirect`] first.
    pub fn on_redirect(&mut self, redirect: &str) {
        let State::Authorizing { pkce, state, scope } =
            std::mem::replace(&mut self.state, State::Over)
        else {
            return self.fail(AuthError::Misuse(
                "a redirect came with no authorization asked",
            ));
        };
        let (Some(found), Some(client)) = (self.found.clone(), self.client.clone()) else {
            return self.fail(AuthError::Misuse("no client"));
        };
        let (Ok(back), Ok(expected)) = (
            url::Url::parse(redirect),
            url::Url::parse(&self.options.redirect_uri),
        ) else {
            return self.fail(AuthError::BadRedirect("is not a URL".into()));
        };
        if back.origin() != expected.origin() || back.path() != expected.path() {
            return self.fail(AuthError::BadRedirect(format!(
                "is not to {}",
                redact_url(&self.options.redirect_uri)
            )));
        }
        let param = |name: &str| {
            back.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        // > "MCP clients **MUST** apply the validation in RFC9207 Section 2.4 before
        // > transmitting the authorization code to any token endpoint … This validation applies
        // > equally to error responses" — MCP 2026-07-28, Authorization Response Validation.
        // Simple string comparison, no normalisation.
        match param("iss") {
            Some(iss) if iss != found.issuer => {
                return self.fail(AuthError::IssuerResponseMismatch {
                    expected: found.issuer,
                    found: iss,
                })
            }
            None if found.server.authorization_response_iss_parameter_supported => {
                return self.fail(AuthError::IssuerMissing {
                    issuer: found.issuer,
                })
            }
            _ => {}
        }
        if param("state").as_deref() != Some(state.as_str()) {
            return self.fail(AuthError::StateMismatch);
        }
        if let Some(error) = param("error") {
            let clean = |s: String| s.chars().filter(|c| !c.is_control()).take(200).collect();
            return self.fail(AuthError::Denied {
                issuer: found.issuer,
                error: clean(error),
                description: param("error_description").map(clean),
            });
        }
        let Some(code) = param("code").filter(|c| !c.is_empty()) else {
            return self.fail(AuthError::BadRedirect("carries no code".into()));
        };
        let assertion = match self.assertion(&client, &found.issuer) {
            Ok(a) => a,
            Err(e) => return self.fail(e),
        };
        let secret = self.secret(&client, &found.issuer);
        let request = token_request(
            &found.server.token_endpoint,
            &client,
            secret.as_ref(),
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", &self.options.redirect_uri),
                ("code_verifier", &pkce.verifier),
                ("resource", &self.resource),
            ],
            assertion.as_deref(),
        );
        self.send_token(State::Exchanging { scope }, request);
    }

    /// The JWT-bearer grant with `assertion` at the authorization server found, the client
    /// authenticating as it is registered there; refused before sending when the assertion is
    /// not for that server or has expired.
    ///
    /// > "`grant_type` … MUST be "urn:ietf:params:oauth:grant-type:jwt-bearer". The value of the
    /// > "assertion" parameter MUST contain a single JWT." — RFC 7523 § 2.1; "The `resource`
    /// > parameter … MUST be included in both authorization requests and token requests." — MCP
    /// > 2025-11-25, Resource Parameter
    fn jwt_bearer(
        &mut self,
        found: &Found,
        client: &Client,
        scope: Option<String>,
        assertion: &Secret,
    ) {
        if let Err(why) = check_assertion(
            assertion.expose(),
            &found.issuer,
            &found.server.token_endpoint,
            self.now,
        ) {
            return self.fail(AuthError::Unsupported(format!(
                "the JWT-bearer assertion was not sent to {}: {why}",
                found.issuer
            )));
        }
        let secret = self.secret(client, &found.issuer);
        let client_assertion = match self.assertion(client, &found.issuer) {
            Ok(a) => a,
            Err(e) => return self.fail(e),
        };
        let mut params = vec![
            ("grant_type", JWT_BEARER_GRANT),
            ("assertion", assertion.expose()),
            ("resource", self.resource.as_str()),
        ];
        if let Some(s) = &scope {
            params.push(("scope", s));
        }
        let request = token_request(
            &found.server.token_endpoint,
            client,
            secret.as_ref(),
            &params,
            client_assertion.as_deref(),
        );
        self.send_token(State::Exchanging { scope }, request);
    }

    /// The identity provider's answer to the token exchange: its ID-JAG is the JWT-bearer grant
    /// at the authorization server found. Its refusal ends the flow (no other grant is tried).
    fn on_identity(&mut self, status: u16, body: &[u8], scope: Option<String>) {
        let Some((url, found, client)) = self.token_answer(status, body) else {
            return;
        };
        match exchanged_grant(body) {
            Ok(grant) => self.jwt_bearer(&found, &client, scope, &grant),
            Err(why) => self.fail(AuthError::Unsupported(format!("{url}: {why}"))),
        }
    }

    /// The application's pre-registered client `client` is, when it is bound to `issuer`: its
    /// secret and key go nowhere else.
    fn bound_pre_registered(&self, client: &Client, issuer: &str) -> Option<&PreRegistered> {
        self.options.pre_registered.as_ref().filter(|p| {
            client.kind == ClientKind::PreRegistered
                && p.client_id == client.client_id
                && p.issuer.as_deref() == Some(issuer)
        })
    }

    /// The secret `client` authenticates with at `issuer`'s token endpoint: a dynamic
    /// registration's own, or the pre-registered one (only at the issuer it is bound to).
    fn secret(&self, client: &Client, issuer: &str) -> Option<Secret> {
        match client.kind {
            ClientKind::PreRegistered => self
                .bound_pre_registered(client, issuer)
                .and_then(|p| p.client_secret.clone()),
            _ => client.client_secret.clone(),
        }
    }

    /// The signed client assertion for `client` at the authorization server `audience`, when it
    /// authenticates with `private_key_jwt` (the key is the application's pre-registered one).
    fn assertion(&mut self, client: &Client, audience: &str) -> Result<Option<String>, AuthError> {
        if client.auth_method != AuthMethod::PrivateKeyJwt {
            return Ok(None);
        }
        let key = self
            .bound_pre_registered(client, audience)
            .and_then(|p| p.private_key.clone())
            .ok_or_else(|| {
                AuthError::Unsupported("private_key_jwt needs the client's private key".into())
            })?;
        let jti = self.jti();
        client_assertion(&client.client_id, audience, key.expose(), self.now, &jti)
            .map(Some)
            .map_err(AuthError::Unsupported)
    }

    /// The answer of a token endpoint (the authorization server's, or the identity provider's
    /// token exchange): the endpoint (redacted), the server found and the client, when it is a
    /// `200`; else the flow has failed with the endpoint's refusal and this is `None`.
    fn token_answer(&mut self, status: u16, body: &[u8]) -> Option<(String, Found, Client)> {
        let url = match &self.step {
            Step::Send(r) => redact_url(&r.url),
            _ => String::new(),
        };
        let (Some(found), Some(client)) = (self.found.clone(), self.client.clone()) else {
            self.fail(AuthError::Misuse("no client"));
            return None;
        };
        if status != 200 {
            let (error, description) = error_answer(body);
            self.fail(AuthError::Token {
                url,
                status,
                error,
                description,
            });
            return None;
        }
        Some((url, found, client))
    }

    fn on_tokens(&mut self, status: u16, body: &[u8], now: SystemTime, scope: Option<String>) {
        let Some((url, found, client)) = self.token_answer(status, body) else {
            return;
        };
        match TokenResponse::parse(body) {
            Ok(t) if t.is_dpop() && self.dpop.is_none() => {
                let e = self.unasked_dpop_token(&found.server.token_endpoint);
                self.fail(e);
            }
            Ok(t) => {
                let now = unix(now);
                let dpop_jkt = self
                    .dpop
                    .as_ref()
                    .filter(|_| t.is_dpop())
                    .map(|k| k.thumbprint());
                let credentials = Credentials {
                    issuer: found.issuer,
                    resource: self.resource.clone(),
                    token_endpoint: found.server.token_endpoint,
                    client,
                    tokens: Tokens {
                        access_token: t.access_token,
                        issued_at: now,
                        expires_at: t.expires_in.map(|s| now.saturating_add(s)),
                        refresh_token: t.refresh_token,
                        scope: t.scope,
                        requested_scope: scope,
                        dpop_jkt,
                    },
                };
                self.state = State::Over;
                self.step = Step::Done(credentials);
            }
            Err(reason) => self.fail(AuthError::InvalidDocument { url, reason }),
        }
    }
}

impl Flow {
    /// A `token_type: DPoP` answer to a request without a proof: no key is bound to it, so it
    /// cannot be used (RFC 9449 § 5: such a token needs a proof by its key on every request).
    fn unasked_dpop_token(&self, endpoint: &str) -> AuthError {
        AuthError::Unsupported(format!(
            "{} issued a DPoP-bound token to a request without a DPoP proof",
            redact_url(endpoint)
        ))
    }
}

/// Credentials without a pre-registered client's secret (one an older version kept, say): that
/// secret is the application's, added to each request, never carried or stored with tokens.
fn scrubbed(mut c: Credentials) -> Credentials {
    if c.client.kind == ClientKind::PreRegistered {
        c.client.client_secret = None;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_cover_their_paths_only() {
        let cases = [
            (
                "https://mcp.example.com",
                "https://mcp.example.com/mcp",
                true,
            ),
            (
                "https://mcp.example.com/",
                "https://mcp.example.com/mcp",
                true,
            ),
            (
                "https://mcp.example.com/mcp",
                "https://mcp.example.com/mcp",
                true,
            ),
            (
                "https://mcp.example.com/mcp",
                "https://mcp.example.com/mcp/",
                true,
            ),
            (
                "https://MCP.example.com/mcp",
                "https://mcp.example.com/mcp",
                true,
            ),
            (
                "https://mcp.example.com/mc",
                "https://mcp.example.com/mcp",
                false,
            ),
            (
                "https://mcp.example.com/other",
                "https://mcp.example.com/mcp",
                false,
            ),
            (
                "https://evil.example.com",
                "https://mcp.example.com/mcp",
                false,
            ),
            (
                "http://mcp.example.com",
                "https://mcp.example.com/mcp",
                false,
            ),
            (
                "https://mcp.example.com:8443",
                "https://mcp.example.com/mcp",
                false,
            ),
            ("not a url", "https://mcp.example.com/mcp", false),
        ];
        for (resource, mcp, covers) in cases {
            assert_eq!(resource_covers(resource, mcp), covers, "{resource} {mcp}");
        }
    }

    #[test]
    fn canonical_resources_drop_fragments_and_a_bare_slash() {
        assert_eq!(
            canonical_resource("https://a.example/"),
            "https://a.example"
        );
        assert_eq!(
            canonical_resource("https://a.example/mcp#x"),
            "https://a.example/mcp"
        );
        assert_eq!(
            canonical_resource("https://a.example/mcp/"),
            "https://a.example/mcp/"
        );
    }

    #[test]
    fn scopes_unite_in_order_once_each() {
        assert_eq!(scope_union(["a b", "b c", ""]).as_deref(), Some("a b c"));
        assert_eq!(scope_union(["  "]), None);
    }
}
