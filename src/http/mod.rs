//! The Streamable HTTP transport's rules (2025-03-26 … 2025-11-25), as a pure piece a driver
//! consults: which HTTP request to make for each outbound message, what each response means, when
//! and how to resume a broken event stream, and how to end the session.
//!
//! > "Every JSON-RPC message sent from the client MUST be a new HTTP POST request to the MCP
//! > endpoint." — MCP 2025-11-25, Transports § Streamable HTTP § Sending Messages to the Server
//!
//! The driver owns sockets and timers; [`HttpRules`] owns every decision about MCP over HTTP,
//! redirects included (same-origin 307 and 308 only, [`redirect_target`]; RFC 9110 § 15.4).
//!
//! # Call order
//!
//! A driver calls [`HttpRules`] in this order; the dependencies between the calls are the reason
//! for it, and are named with each step.
//!
//! 1. **Once**: [`HttpConfig::validate`], then [`HttpRules::new`].
//!    [`has_configured_authorization`](HttpRules::has_configured_authorization) says whether the
//!    OAuth flow is the driver's to run; its token goes in with
//!    [`set_authorization`](HttpRules::set_authorization) (every request built afterwards
//!    carries it).
//! 2. **For each outbound message** (a [`Transmit`] from the session), in the session's order:
//!    [`start`](HttpRules::start) makes its [`Exchange`], and the driver runs one loop over
//!    [`step`](HttpRules::step) until [`Step::Done`] or [`Step::Failed`], doing what each
//!    [`Step`] says and feeding back what came of it: a response's status and headers
//!    ([`on_head`](HttpRules::on_head)), the OAuth flow's verdict
//!    ([`on_authorized`](HttpRules::on_authorized)), a JSON body
//!    ([`on_body`](HttpRules::on_body), [`on_oversized`](HttpRules::on_oversized),
//!    [`on_unreadable`](HttpRules::on_unreadable)), an event stream's bytes and end
//!    ([`on_data`](HttpRules::on_data), [`on_end`](HttpRules::on_end)). The machine holds the
//!    order: the session check before each POST (nothing but the new `initialize` goes out while
//!    the session is renewed), the token before the POST that carries it, redirects before the
//!    verdict, the verdict before the body, each message to the session as it is read (the
//!    `initialize` answer's headers set the session id and its body the protocol version that
//!    later requests carry, so the next message waits for them), the stop once the answer is
//!    in, and the resumption `GET` after the server's `retry`.
//!
//!    The next message waits for this one's status at most
//!    [`order_wait`](HttpRules::order_wait) (only `notifications/initialized` and cancellations
//!    hold the next back). [`on_cancel`](HttpRules::on_cancel) says which exchange a cancellation
//!    aborts; a notification or response that could not be delivered goes to
//!    [`on_undelivered`](HttpRules::on_undelivered), which names the request that fails with it
//!    (that request's stream carried the server request it answered).
//! 3. **The standalone stream**, once a message of which
//!    [`listens_after`](HttpRules::listens_after) says so went out (the handshake is over, so
//!    the session id and version are known): [`start_listening`](HttpRules::start_listening),
//!    then the same loop over [`listen_step`](HttpRules::listen_step), fed by
//!    [`listen_head`](HttpRules::listen_head), [`listen_authorized`](HttpRules::listen_authorized),
//!    [`listen_data`](HttpRules::listen_data) and [`listen_end`](HttpRules::listen_end), until
//!    it says [`Step::Done`].
//! 4. **At the end**: [`delete`](HttpRules::delete), when a session id was assigned.
//!
//! The only state shared between exchanges is the connection's: the endpoint URL, the session
//! id and protocol version, the renewal in progress, the token, and the server requests each
//! request's stream carried. Everything about one message lives in its [`Exchange`], so
//! exchanges may run concurrently in any order.
//!
//! # Files
//!
//! - [`HttpRules`] (here): the connection's state, the headers every request carries, `DELETE`
//! - `wire.rs`: [`Method`], [`HttpRequest`], [`header`], every header name, [`redact_url`]
//! - `config.rs`: [`HttpConfig`], [`StandaloneStream`], [`ConfigError`]
//! - `error.rs`: `Body` (what a successful response carries), [`HttpError`], the verdict on a
//!   status
//! - `exchange.rs`: one message's [`Exchange`]: its response, messages, end (`StreamEnd`),
//!   cancellation, ordering
//! - `step.rs`: the exchange as one machine: [`Step`], [`HttpRules::step`]
//! - `listen.rs`: the standalone stream ([`Listening`]), the same machine
//! - `redirect.rs`: [`redirect_target`], [`RedirectRefused`], [`MAX_REDIRECTS`]
//! - [`metadata`]: the request-metadata headers of 2026-07-28 (`Mcp-Method`, `Mcp-Name`,
//!   `Mcp-Param-*`)

mod config;
mod error;
mod exchange;
mod listen;
pub mod metadata;
mod redirect;
mod step;
mod wire;

pub use config::{ConfigError, HttpConfig, StandaloneStream};
pub use error::{HttpError, MAX_ERROR_BODY};
pub use exchange::{Cancel, Exchange, ORDER_WAIT};
pub use listen::Listening;
pub use redirect::{redirect_target, RedirectRefused, MAX_REDIRECTS};
pub use step::Step;
pub(crate) use wire::is_tchar;
pub use wire::{
    header, is_header_name, is_header_value, redact_url, rules_read_header, HeaderText,
    HttpRequest, Method, METHOD_HEADER, NAME_HEADER, PARAM_HEADER_PREFIX, PROTOCOL_VERSION_HEADER,
    RESPONSE_HEADERS_READ, SESSION_ID_HEADER,
};

use crate::jsonrpc::RequestId;
use crate::session::transmit::{Transmit, TransmitKind};
use std::collections::{HashSet, VecDeque};
use std::fmt;

/// The Streamable HTTP rules for one connection. See the [module docs](self). `Debug` hides the
/// session id and header values.
#[derive(Clone)]
pub struct HttpRules {
    config: HttpConfig,
    /// The endpoint: the configured URL, or where a followed redirect moved it (shared by the
    /// exchanges that go there).
    url: std::sync::Arc<str>,
    /// The URL for error messages.
    redacted_url: String,
    session_id: Option<std::sync::Arc<str>>,
    /// One of [`SUPPORTED_PROTOCOL_VERSIONS`]: a server's string never reaches a header.
    protocol_version: Option<&'static str>,
    /// Requests already resent once in a new session after a 404.
    renewed: HashSet<RequestId>,
    /// Requests already resent once after a late 404 from a replaced session.
    resent: HashSet<RequestId>,
    /// The session expired and the new `initialize` has not been answered yet.
    renewing: bool,
    /// The last `initialize` answered declared a client capability.
    answering: bool,
    /// The OAuth access token's header value (`Bearer …`, or `DPoP …` for a DPoP-bound token),
    /// sent on every request to the endpoint (and to nowhere else: a redirect is followed only
    /// within its origin).
    authorization: Option<crate::secret::Secret>,
    /// The server requests read on a request's response (their ids as JSON text), with that
    /// request: the newest [`MAX_ASKED`], so that an answer that cannot be delivered fails the
    /// request that waits on it ([`HttpRules::on_undelivered`]).
    asked: VecDeque<(String, RequestId)>,
}

/// How many server requests read on response streams [`HttpRules`] remembers (the oldest goes
/// first): as many as the session lets wait for the application
/// ([`MAX_ASKS`](crate::session::MAX_ASKS)).
pub const MAX_ASKED: usize = 64;

/// A message for the server that could not be delivered, as [`HttpRules::on_undelivered`] sees
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undelivered {
    /// What it was, for a warning (`the cancellation of request 3`, `the answer to the server's
    /// request "e1"`).
    pub what: String,
    /// The request that fails with it: the one whose response stream carried the server request
    /// this was the answer to (the server would otherwise keep it waiting).
    pub request: Option<RequestId>,
}

impl fmt::Debug for HttpRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRules")
            .field("config", &self.config)
            .field(
                "session_id",
                &self.session_id.as_ref().map(|_| "<redacted>"),
            )
            .field("protocol_version", &self.protocol_version)
            .field("renewed", &self.renewed)
            .field("renewing", &self.renewing)
            .finish()
    }
}

impl HttpRules {
    /// Rules for this endpoint. (Check the settings first with [`HttpConfig::validate`].)
    pub fn new(config: HttpConfig) -> Self {
        HttpRules {
            redacted_url: redact_url(&config.url),
            url: config.url.as_str().into(),
            config,
            session_id: None,
            protocol_version: None,
            renewed: HashSet::new(),
            resent: HashSet::new(),
            renewing: false,
            answering: false,
            authorization: None,
            asked: VecDeque::new(),
        }
    }

    /// Sets (or, with `None`, removes) the `Authorization` header value the OAuth flow got
    /// (`Bearer …` or `DPoP …`); every request built afterwards carries it. A configured
    /// `Authorization` header ([`HttpConfig::headers`]) wins: then this one is not sent.
    ///
    /// > "authorization **MUST** be included in every HTTP request from client to server, even
    /// > if they are part of the same logical session." — MCP 2025-11-25, Authorization § Access
    /// > Token Usage § Token Requirements
    pub fn set_authorization(&mut self, value: Option<crate::secret::Secret>) {
        self.authorization = value;
    }

    /// Whether the settings carry an `Authorization` header of their own (the OAuth flow is
    /// then not the driver's to run).
    pub fn has_configured_authorization(&self) -> bool {
        self.config
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    }

    /// Puts the current OAuth `Authorization` value (see
    /// [`set_authorization`](Self::set_authorization)) in a request built earlier — a standalone
    /// stream's reconnection, built before the token was refreshed — replacing the one it has.
    /// A configured `Authorization` header is left as it is.
    pub fn refresh_authorization(&self, request: &mut HttpRequest) {
        if self.has_configured_authorization() {
            return;
        }
        request
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        self.push_authorization(&mut request.headers);
    }

    fn push_authorization(&self, headers: &mut Vec<(HeaderText, HeaderText)>) {
        if let Some(value) = &self.authorization {
            if !self.has_configured_authorization() {
                headers.push(("Authorization".into(), value.expose().to_owned().into()));
            }
        }
    }

    /// The endpoint's URL as errors show it ([`redact_url`]).
    pub fn redacted_url(&self) -> &str {
        &self.redacted_url
    }

    /// The endpoint's URL: the configured one, or where a followed redirect moved it (see
    /// `on_redirect`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The settings.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The negotiated protocol revision, once the `initialize` answer was seen.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version
    }

    fn headers(&self, accept: &'static str) -> Vec<(HeaderText, HeaderText)> {
        let mut headers = Vec::with_capacity(5 + self.config.headers.len());
        self.push_headers(&mut headers, accept);
        headers
    }

    /// The headers every request of the session carries, after `headers`' own (see
    /// [`headers`](Self::headers)).
    fn push_headers(&self, headers: &mut Vec<(HeaderText, HeaderText)>, accept: &'static str) {
        headers.push(("Accept".into(), accept.into()));
        if let Some(id) = &self.session_id {
            // > "the client MUST include it in the Mcp-Session-Id header on all of its subsequent
            // > HTTP requests" — MCP 2025-11-25, Transports § Streamable HTTP § Session Management
            headers.push((SESSION_ID_HEADER.into(), id.to_string().into()));
        }
        if let Some(v) = self.protocol_version {
            // > "the client MUST include the MCP-Protocol-Version: <protocol-version> HTTP header
            // > on all subsequent requests" — MCP 2025-06-18 and later, Transports § Streamable HTTP §
            // > Protocol Version Header
            headers.push((PROTOCOL_VERSION_HEADER.into(), v.into()));
        }
        self.push_configured(headers);
    }

    /// The configured headers ([`HttpConfig::headers`]) and the OAuth `Authorization`.
    fn push_configured(&self, headers: &mut Vec<(HeaderText, HeaderText)>) {
        headers.extend(
            self.config
                .headers
                .iter()
                .map(|(k, v)| (k.clone().into(), v.clone().into())),
        );
        self.push_authorization(headers);
    }

    /// The POST that carries one outbound message.
    ///
    /// > "The client MUST include an Accept header, listing both application/json and
    /// > text/event-stream as supported content types." — MCP 2025-11-25, Transports § Streamable
    /// > HTTP § Sending Messages to the Server
    ///
    /// A modern message carries its own headers ([`Transmit::headers`]: its version, method, name
    /// and mirrored parameters) and no session id.
    ///
    /// > "The client **MUST** include the request metadata headers on each POST request." — MCP
    /// > 2026-07-28, Streamable HTTP § Sending Messages
    fn post(&self, transmit: &Transmit) -> HttpRequest {
        let accept = "application/json, text/event-stream";
        let mut headers =
            Vec::with_capacity(6 + transmit.headers.len() + self.config.headers.len());
        headers.push(("Content-Type".into(), "application/json".into()));
        if transmit.modern {
            headers.push(("Accept".into(), accept.into()));
            headers.extend(transmit.headers.iter().cloned());
            self.push_configured(&mut headers);
        } else {
            self.push_headers(&mut headers, accept);
        }
        HttpRequest {
            method: Method::Post,
            url: String::from(&*self.url),
            headers,
            body: Some(transmit.payload.clone()),
        }
    }

    /// A notification or response could not be delivered (no answer within its deadline, a
    /// failure status, no authorization): what to tell the application, and which request fails
    /// because of it. A cancellation or an answer to a server request is never lost silently:
    /// the server would keep working on a request given up on, or keep a request of its own
    /// waiting, and with it the client's request whose response stream carried it. Other
    /// notifications concern no request (`None`: nothing to report).
    ///
    /// > "Receivers of cancellation notifications **SHOULD**: Stop processing the cancelled
    /// > request" — MCP 2025-11-25, Utilities § Cancellation
    ///
    /// The newest server request with the answer's id is the one answered (a server may reuse
    /// an id once its request was answered).
    pub fn on_undelivered(&mut self, transmit: &Transmit) -> Option<Undelivered> {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(default)]
            id: Option<serde_json::Value>,
        }
        match &transmit.kind {
            TransmitKind::Cancellation { id } => Some(Undelivered {
                what: format!("the cancellation of request {}", id.0),
                request: None,
            }),
            TransmitKind::Response => {
                let id = serde_json::from_slice::<Head>(&transmit.payload)
                    .ok()
                    .and_then(|h| h.id)
                    .map(|id| id.to_string())
                    .unwrap_or_else(|| "null".into());
                let request = self
                    .asked
                    .iter()
                    .rposition(|(asked, _)| *asked == id)
                    .and_then(|at| self.asked.remove(at))
                    .map(|(_, request)| request);
                // The id is the server's: cut, and only its visible ASCII shown.
                let shown: String = id
                    .chars()
                    .take(64)
                    .map(|c| if c.is_ascii_graphic() { c } else { '?' })
                    .collect();
                Some(Undelivered {
                    what: format!("the answer to the server's request {shown}"),
                    request,
                })
            }
            _ => None,
        }
    }

    /// The `GET` of an event stream (a resumption, or the standalone stream), resuming after
    /// `last_event_id` when given.
    fn event_stream_get(&self, last_event_id: Option<&str>) -> HttpRequest {
        let mut headers = self.headers("text/event-stream");
        if let Some(id) = last_event_id {
            headers.push(("Last-Event-ID".into(), id.to_owned().into()));
        }
        HttpRequest {
            method: Method::Get,
            url: String::from(&*self.url),
            headers,
            body: None,
        }
    }

    /// The request that ends the session, when there is one to end.
    ///
    /// > "Clients that no longer need a particular session … SHOULD send an HTTP DELETE to the MCP
    /// > endpoint with the Mcp-Session-Id header, to explicitly terminate the session." The server
    /// > MAY answer 405: that is fine. — MCP 2025-11-25, Transports § Streamable HTTP § Session
    /// > Management
    pub fn delete(&self) -> Option<HttpRequest> {
        self.session_id.as_ref()?;
        Some(HttpRequest {
            method: Method::Delete,
            url: String::from(&*self.url),
            headers: self.headers("application/json, text/event-stream"),
            body: None,
        })
    }
}

/// What the unit tests of the HTTP rules share.
#[cfg(test)]
mod fixtures {
    use super::*;

    pub(super) fn request(id: u64, method: &str) -> TransmitKind {
        TransmitKind::Request {
            id: RequestId(id),
            wire: RequestId(id),
            method: method.to_owned().into(),
        }
    }

    /// A request's headers, as the rules write them.
    pub(super) fn hr(pairs: &[(&'static str, &'static str)]) -> Vec<(HeaderText, HeaderText)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    /// No headers, for a head that has none (a response's headers are read as name and value
    /// pairs, owned or borrowed, so an empty list needs a type).
    pub(super) const NO_HEADERS: &[(&str, &str)] = &[];

    pub(super) fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    pub(super) fn transmit(kind: TransmitKind) -> Transmit {
        Transmit {
            payload: b"{}".to_vec(),
            kind,
            headers: Vec::new(),
            modern: false,
        }
    }

    /// The answer to `initialize` (request `id`) opens session `sid`.
    pub(super) fn open_session(r: &mut HttpRules, id: u64, sid: &str) {
        r.on_response(
            &request(id, "initialize"),
            None,
            200,
            &h(&[
                ("content-type", "application/json"),
                ("mcp-session-id", sid),
            ]),
        )
        .unwrap();
    }

    pub(super) fn rules() -> HttpRules {
        let mut config = HttpConfig::new("http://127.0.0.1:1/mcp");
        config
            .headers
            .push(("Authorization".into(), "Bearer t".into()));
        HttpRules::new(config)
    }
}

#[cfg(test)]
mod tests {
    use super::error::Body;
    use super::fixtures::*;
    use super::*;

    #[test]
    fn post_headers_before_and_after_the_handshake() {
        let mut r = rules();
        let init = request(0, "initialize");
        let first = r.post(&transmit(init.clone()));
        assert_eq!(first.method, Method::Post);
        assert_eq!(
            first.headers,
            hr(&[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Authorization", "Bearer t")
            ])
        );
        assert_eq!(
            r.on_response(
                &init,
                None,
                200,
                &h(&[
                    ("content-type", "application/json"),
                    ("MCP-SESSION-ID", "abc")
                ])
            ),
            Ok(Body::Json)
        );
        assert!(r.observe_message(
            &init,
            br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}"#
        ));
        let next = r.post(&transmit(request(1, "tools/list")));
        assert_eq!(
            next.headers,
            hr(&[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", "abc"),
                ("MCP-Protocol-Version", "2025-06-18"),
                ("Authorization", "Bearer t")
            ])
        );
    }

    #[test]
    fn the_oauth_token_goes_on_every_request_and_a_configured_header_wins() {
        let mut r = HttpRules::new(HttpConfig::new("http://127.0.0.1:1/mcp"));
        r.set_authorization(Some(crate::secret::Secret::new("Bearer one")));
        let auth = |req: &HttpRequest| -> Vec<String> {
            req.headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                .map(|(_, v)| v.to_string())
                .collect()
        };
        let post = r.post(&transmit(request(1, "initialize")));
        assert_eq!(auth(&post), ["Bearer one"]);
        open_session(&mut r, 1, "s");
        assert_eq!(auth(&r.delete().unwrap()), ["Bearer one"]);
        // A request built before a refresh gets the new token, once.
        let mut old = r.post(&transmit(request(2, "tools/list")));
        r.set_authorization(Some(crate::secret::Secret::new("Bearer two")));
        r.refresh_authorization(&mut old);
        assert_eq!(auth(&old), ["Bearer two"]);
        // The application's own header is never replaced or doubled.
        let mut config = HttpConfig::new("https://mcp.example.com/mcp");
        config
            .headers
            .push(("Authorization".into(), "Bearer mine".into()));
        let mut r = HttpRules::new(config);
        r.set_authorization(Some(crate::secret::Secret::new("Bearer flow")));
        let mut post = r.post(&transmit(request(1, "initialize")));
        assert_eq!(auth(&post), ["Bearer mine"]);
        r.refresh_authorization(&mut post);
        assert_eq!(auth(&post), ["Bearer mine"]);
        // The value never shows in Debug.
        assert!(!format!("{post:?}").contains("mine"));
    }

    #[test]
    fn delete_only_with_a_session() {
        let mut r = rules();
        assert_eq!(r.delete(), None);
        open_session(&mut r, 0, "s");
        let d = r.delete().unwrap();
        assert_eq!(d.method, Method::Delete);
        assert!(d.headers.contains(&("Mcp-Session-Id".into(), "s".into())));
    }

    #[test]
    fn an_unsupported_protocol_version_never_reaches_a_header() {
        let mut r = rules();
        let init = request(0, "initialize");
        assert!(r.observe_message(
            &init,
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-06-18\u{e9}\"}}"
                .as_bytes()
        ));
        assert_eq!(r.protocol_version(), None);
        assert!(!r
            .post(&transmit(request(1, "ping")))
            .headers
            .iter()
            .any(|(k, _)| k == PROTOCOL_VERSION_HEADER));
    }

    #[test]
    fn debug_output_hides_header_values_and_url_secrets() {
        let mut config = HttpConfig::new("http://bob:pw@127.0.0.1/mcp?key=SECRET");
        config
            .headers
            .push(("Authorization".into(), "Bearer TOKEN".into()));
        let mut r = HttpRules::new(config.clone());
        r.session_id = Some("SESSION".into());
        let request = r.post(&transmit(request(1, "ping")));
        for text in [
            format!("{config:?}"),
            format!("{r:?}"),
            format!("{request:?}"),
        ] {
            assert!(text.contains("Authorization"), "{text}");
            for secret in ["TOKEN", "SECRET", "pw", "SESSION"] {
                assert!(!text.contains(secret), "{secret} in {text}");
            }
        }
    }

    #[test]
    fn an_undelivered_answer_names_the_request_whose_stream_asked() {
        let mut r = rules();
        let call = transmit(request(5, "tools/call"));
        let (_, mut ex) = r.begin(&call);
        // A server request on the call's stream (twice the same id: the newest counts).
        assert!(!r.on_exchange_message(&mut ex, br#"{"jsonrpc":"2.0","id":"p1","method":"ping"}"#));
        let answer = |id: &str| Transmit {
            payload: format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#).into_bytes(),
            ..transmit(TransmitKind::Response)
        };
        let lost = r.on_undelivered(&answer(r#""p1""#)).unwrap();
        assert_eq!(lost.request, Some(RequestId(5)));
        assert_eq!(lost.what, r#"the answer to the server's request "p1""#);
        // Once only; an answer to a request never seen on a stream hurts no request.
        assert_eq!(r.on_undelivered(&answer(r#""p1""#)).unwrap().request, None);
        assert_eq!(r.on_undelivered(&answer("7")).unwrap().request, None);
        // A cancellation is reported, hurting no request; other notifications are not.
        let cancel = r
            .on_undelivered(&transmit(TransmitKind::Cancellation { id: RequestId(5) }))
            .unwrap();
        assert_eq!(
            (cancel.what.as_str(), cancel.request),
            ("the cancellation of request 5", None)
        );
        let note = TransmitKind::Notification {
            method: "notifications/progress".into(),
        };
        assert_eq!(r.on_undelivered(&transmit(note)), None);
        // The memory is bounded.
        for i in 0..(MAX_ASKED + 10) {
            let ask = format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#);
            r.on_exchange_message(&mut ex, ask.as_bytes());
        }
        assert_eq!(r.asked.len(), MAX_ASKED);
        assert_eq!(r.on_undelivered(&answer("0")).unwrap().request, None);
        let last = (MAX_ASKED + 9).to_string();
        assert_eq!(
            r.on_undelivered(&answer(&last)).unwrap().request,
            Some(RequestId(5))
        );
    }
}
