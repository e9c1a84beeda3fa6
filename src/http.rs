//! The Streamable HTTP transport's rules (2025-03-26 … 2025-11-25), as a pure piece a driver
//! consults: which HTTP request to make for each outbound message, what each response means, when
//! and how to resume a broken event stream, and how to end the session.
//!
//! > "Every JSON-RPC message sent from the client MUST be a new HTTP POST request to the MCP
//! > endpoint." — MCP 2025-11-25, Transports § Streamable HTTP § Sending Messages to the Server
//!
//! The driver owns sockets and timers; [`HttpRules`] owns every decision about MCP over HTTP.

use crate::jsonrpc::RequestId;
use crate::session::{Transmit, TransmitKind};
use crate::sse::{SseDecoder, SseEvent};
use std::collections::HashSet;
use std::time::Duration;

/// The header carrying the session id (header names compare case-insensitively).
pub const SESSION_ID_HEADER: &str = "Mcp-Session-Id";
/// The header carrying the negotiated protocol revision after the handshake.
pub const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";

/// Settings of the HTTP rules.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The MCP endpoint.
    pub url: String,
    /// Extra headers sent on every request (`Authorization`, say).
    pub headers: Vec<(String, String)>,
    /// Whether a 404 to a request carrying a session id starts a new session transparently, once
    /// per request, and resends it (default true). When false, or when the resent request gets a
    /// 404 again, the request fails with the HTTP status.
    pub renew_expired_session: bool,
    /// How many times one response stream is resumed with `GET` + `Last-Event-ID` (default 5).
    pub max_resume_attempts: u32,
    /// The wait before resuming when the server gave no `retry` (default 1 s).
    pub default_retry: Duration,
}

impl HttpConfig {
    /// Defaults for an endpoint.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            renew_expired_session: true,
            max_resume_attempts: 5,
            default_retry: Duration::from_secs(1),
        }
    }
}

/// An HTTP method this transport uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Every client message.
    Post,
    /// Resuming a response stream.
    Get,
    /// Ending the session.
    Delete,
}

impl Method {
    /// The method's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Post => "POST",
            Method::Get => "GET",
            Method::Delete => "DELETE",
        }
    }
}

/// One HTTP request to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The method.
    pub method: Method,
    /// The URL.
    pub url: String,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body, for a POST.
    pub body: Option<Vec<u8>>,
}

/// What a successful response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// Nothing to read: a notification or response was accepted (202).
    None,
    /// One JSON-RPC message: read the whole body and hand it to [`Session::handle_message`].
    ///
    /// [`Session::handle_message`]: crate::Session::handle_message
    Json,
    /// An event stream: feed it to an [`SseDecoder`] as it arrives, and hand each event's
    /// message (see [`HttpRules::event_message`]) to the session.
    EventStream,
}

/// Why a response is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The server forgot the session (404 to a request that carried its id): restart the session
    /// ([`Session::restart`](crate::Session::restart)) and the request will be sent again.
    #[error("HTTP session expired at {url}")]
    SessionExpired {
        /// The URL.
        url: String,
    },
    /// Any other unexpected status (including redirects, which are never followed).
    #[error("HTTP {status} from {url}")]
    Status {
        /// The status code.
        status: u16,
        /// The URL.
        url: String,
    },
    /// A 2xx answer to a request with neither JSON nor an event stream.
    #[error("unexpected content type {content_type:?} from {url}")]
    ContentType {
        /// What the server said.
        content_type: String,
        /// The URL.
        url: String,
    },
}

/// What to do when a response stream ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// Nothing: the request was answered (or the stream was not for a request).
    Done,
    /// Wait `after`, then make `request` (a `GET` with `Last-Event-ID`) and read its stream.
    Resume {
        /// How long to wait first: the server's `retry`, or the default.
        after: Duration,
        /// The request to make.
        request: HttpRequest,
    },
    /// The stream ended before the answer and cannot be resumed: the request fails.
    Failed(String),
}

/// The Streamable HTTP rules for one connection. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct HttpRules {
    config: HttpConfig,
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// Requests already resent once in a new session after a 404.
    renewed: HashSet<RequestId>,
}

impl HttpRules {
    /// Rules for this endpoint.
    pub fn new(config: HttpConfig) -> Self {
        HttpRules {
            config,
            session_id: None,
            protocol_version: None,
            renewed: HashSet::new(),
        }
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
        self.protocol_version.as_deref()
    }

    fn headers(&self, accept: &str) -> Vec<(String, String)> {
        let mut headers = vec![("Accept".to_owned(), accept.to_owned())];
        if let Some(id) = &self.session_id {
            // > "the client MUST include it in the Mcp-Session-Id header on all of its subsequent
            // > HTTP requests" — 2025-11-25, Session Management
            headers.push((SESSION_ID_HEADER.to_owned(), id.clone()));
        }
        if let Some(v) = &self.protocol_version {
            // > "the client MUST include the MCP-Protocol-Version: <protocol-version> HTTP header
            // > on all subsequent requests" — 2025-06-18 and later, Protocol Version Header
            headers.push((PROTOCOL_VERSION_HEADER.to_owned(), v.clone()));
        }
        headers.extend(self.config.headers.iter().cloned());
        headers
    }

    /// The POST that carries one outbound message.
    ///
    /// > "The client MUST include an Accept header, listing both application/json and
    /// > text/event-stream as supported content types." — 2025-11-25
    pub fn post(&self, transmit: &Transmit) -> HttpRequest {
        let mut headers = self.headers("application/json, text/event-stream");
        headers.insert(
            0,
            ("Content-Type".to_owned(), "application/json".to_owned()),
        );
        HttpRequest {
            method: Method::Post,
            url: self.config.url.clone(),
            headers,
            body: Some(transmit.payload.clone()),
        }
    }

    /// Reads a response's status and headers for the message `kind` it answers.
    ///
    /// For the `initialize` request, the session id is captured from a successful response. A 404
    /// to a request that carried a session id forgets that session.
    pub fn on_response(
        &mut self,
        kind: &TransmitKind,
        carried_session: bool,
        status: u16,
        headers: &[(String, String)],
    ) -> Result<Body, HttpError> {
        let url = || self.config.url.clone();
        if status == 404 && carried_session {
            // > "The server MAY terminate the session at any time, after which it MUST respond to
            // > requests containing that session ID with HTTP 404 Not Found." — 2025-11-25
            self.session_id = None;
            self.protocol_version = None;
            if let TransmitKind::Request { id, .. } = kind {
                if self.config.renew_expired_session && self.renewed.insert(*id) {
                    return Err(HttpError::SessionExpired { url: url() });
                }
            }
            return Err(HttpError::Status { status, url: url() });
        }
        if !(200..300).contains(&status) {
            return Err(HttpError::Status { status, url: url() });
        }
        let TransmitKind::Request { method, .. } = kind else {
            // > "If the input is a JSON-RPC response or notification: If the server accepts the
            // > input, the server MUST return HTTP status code 202 Accepted with no body."
            return Ok(Body::None);
        };
        if method == "initialize" {
            // > "A server using the Streamable HTTP transport MAY assign a session ID at
            // > initialization time, by including it in an Mcp-Session-Id header on the HTTP
            // > response containing the InitializeResult." — 2025-11-25
            self.session_id = header(headers, SESSION_ID_HEADER)
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| (0x21..=0x7e).contains(&b)))
                .map(str::to_owned);
        }
        let content_type = header(headers, "content-type").unwrap_or("");
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json" => Ok(Body::Json),
            "text/event-stream" => Ok(Body::EventStream),
            _ => Err(HttpError::ContentType {
                content_type: content_type.to_owned(),
                url: url(),
            }),
        }
    }

    /// Notes a message read from the response to `kind`; returns whether it is that request's
    /// answer. The `initialize` answer sets the protocol revision sent in later headers.
    pub fn observe_message(&mut self, kind: &TransmitKind, message: &[u8]) -> bool {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(default)]
            id: Option<serde_json::Value>,
            #[serde(default)]
            method: Option<serde::de::IgnoredAny>,
            #[serde(default)]
            result: Option<ResultHead>,
            #[serde(default)]
            error: Option<serde::de::IgnoredAny>,
        }
        #[derive(serde::Deserialize)]
        struct ResultHead {
            #[serde(default, rename = "protocolVersion")]
            protocol_version: Option<String>,
        }
        let TransmitKind::Request { id, method } = kind else {
            return false;
        };
        let Ok(head) = serde_json::from_slice::<Head>(message) else {
            return false;
        };
        let answers = head.method.is_none()
            && (head.result.is_some() || head.error.is_some())
            && head.id.as_ref().and_then(serde_json::Value::as_u64) == Some(id.0);
        if answers && method == "initialize" {
            self.protocol_version = head.result.and_then(|r| r.protocol_version);
        }
        answers
    }

    /// The JSON-RPC message an SSE event carries, if any: events named `message` (or unnamed) with
    /// data. A priming event (empty data) carries none.
    ///
    /// > "The server SHOULD immediately send an SSE event consisting of an event ID and an empty
    /// > data field in order to prime the client to reconnect" — 2025-11-25
    pub fn event_message(event: &SseEvent) -> Option<&[u8]> {
        (event.event == "message" && !event.data.trim().is_empty()).then_some(event.data.as_bytes())
    }

    /// What to do when the body for `kind` ended (`answered`: its answer arrived) after
    /// `attempts` resumptions. For an event stream, `decoder` holds the last event id and the
    /// server's `retry`; a JSON body (`None`) cannot be resumed, so an unanswered one fails.
    ///
    /// > "If the client … the SSE stream is disconnected … the client MAY resume by issuing a GET
    /// > with the Last-Event-ID header" / "the client MUST respect the retry field, waiting the
    /// > given number of milliseconds before attempting to reconnect" — 2025-11-25
    pub fn on_stream_end(
        &self,
        kind: &TransmitKind,
        answered: bool,
        attempts: u32,
        decoder: Option<&SseDecoder>,
    ) -> StreamEnd {
        if answered || !matches!(kind, TransmitKind::Request { .. }) {
            return StreamEnd::Done;
        }
        let Some(decoder) = decoder else {
            return StreamEnd::Failed("the JSON response did not answer the request".into());
        };
        let Some(last_id) = decoder.last_event_id() else {
            return StreamEnd::Failed(
                "the response stream ended before the response, and no event id allows resuming it"
                    .into(),
            );
        };
        if attempts >= self.config.max_resume_attempts {
            return StreamEnd::Failed(format!(
                "the response stream ended before the response {} times; giving up",
                attempts + 1
            ));
        }
        let mut headers = self.headers("text/event-stream");
        headers.push(("Last-Event-ID".to_owned(), last_id.to_owned()));
        StreamEnd::Resume {
            after: decoder.retry().unwrap_or(self.config.default_retry),
            request: HttpRequest {
                method: Method::Get,
                url: self.config.url.clone(),
                headers,
                body: None,
            },
        }
    }

    /// Reads the answer to a resumption `GET`: it must be a 2xx event stream.
    pub fn on_resume_response(
        &self,
        status: u16,
        headers: &[(String, String)],
    ) -> Result<(), HttpError> {
        let url = self.config.url.clone();
        if !(200..300).contains(&status) {
            return Err(HttpError::Status { status, url });
        }
        let content_type = header(headers, "content-type").unwrap_or("");
        if content_type
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
        {
            Ok(())
        } else {
            Err(HttpError::ContentType {
                content_type: content_type.to_owned(),
                url,
            })
        }
    }

    /// The request that ends the session, when there is one to end.
    ///
    /// > "Clients that no longer need a particular session … SHOULD send an HTTP DELETE to the MCP
    /// > endpoint with the Mcp-Session-Id header, to explicitly terminate the session." The server
    /// > MAY answer 405: that is fine. — 2025-11-25
    pub fn delete(&self) -> Option<HttpRequest> {
        self.session_id.as_ref()?;
        Some(HttpRequest {
            method: Method::Delete,
            url: self.config.url.clone(),
            headers: self.headers("application/json, text/event-stream"),
            body: None,
        })
    }
}

/// A header's value, by case-insensitive name.
pub fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: u64, method: &str) -> TransmitKind {
        TransmitKind::Request {
            id: RequestId(id),
            method: method.into(),
        }
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn transmit(kind: TransmitKind) -> Transmit {
        Transmit {
            payload: b"{}".to_vec(),
            kind,
        }
    }

    fn rules() -> HttpRules {
        let mut config = HttpConfig::new("http://127.0.0.1:1/mcp");
        config
            .headers
            .push(("Authorization".into(), "Bearer t".into()));
        HttpRules::new(config)
    }

    #[test]
    fn post_headers_before_and_after_the_handshake() {
        let mut r = rules();
        let init = request(0, "initialize");
        let first = r.post(&transmit(init.clone()));
        assert_eq!(first.method, Method::Post);
        assert_eq!(
            first.headers,
            h(&[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Authorization", "Bearer t")
            ])
        );
        assert_eq!(
            r.on_response(
                &init,
                false,
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
            h(&[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", "abc"),
                ("MCP-Protocol-Version", "2025-06-18"),
                ("Authorization", "Bearer t")
            ])
        );
    }

    #[test]
    fn content_types_and_statuses() {
        let mut r = rules();
        let call = request(3, "tools/call");
        let ct = |v: &str| h(&[("Content-Type", v)]);
        assert_eq!(
            r.on_response(&call, false, 200, &ct("application/json; charset=utf-8")),
            Ok(Body::Json)
        );
        assert_eq!(
            r.on_response(&call, false, 200, &ct("Text/Event-Stream")),
            Ok(Body::EventStream)
        );
        assert!(matches!(
            r.on_response(&call, false, 200, &ct("text/html")),
            Err(HttpError::ContentType { .. })
        ));
        let note = TransmitKind::Notification {
            method: "notifications/initialized".into(),
        };
        assert_eq!(r.on_response(&note, false, 202, &[]), Ok(Body::None));
        assert_eq!(
            r.on_response(&TransmitKind::Response, false, 202, &[]),
            Ok(Body::None)
        );
        assert_eq!(
            r.on_response(&call, false, 500, &ct("text/html")),
            Err(HttpError::Status {
                status: 500,
                url: "http://127.0.0.1:1/mcp".into()
            })
        );
        assert_eq!(
            r.on_response(
                &call,
                false,
                307,
                &h(&[("Location", "http://evil.example/")])
            ),
            Err(HttpError::Status {
                status: 307,
                url: "http://127.0.0.1:1/mcp".into()
            })
        );
        // A 404 without a session id is just a 404.
        assert!(matches!(
            r.on_response(&call, false, 404, &[]),
            Err(HttpError::Status { status: 404, .. })
        ));
    }

    #[test]
    fn expired_session_is_renewed_once_per_request() {
        let mut r = rules();
        let init = request(0, "initialize");
        r.on_response(
            &init,
            false,
            200,
            &h(&[
                ("content-type", "application/json"),
                ("mcp-session-id", "s1"),
            ]),
        )
        .unwrap();
        let call = request(5, "tools/call");
        assert!(matches!(
            r.on_response(&call, true, 404, &[]),
            Err(HttpError::SessionExpired { .. })
        ));
        assert_eq!(
            r.session_id(),
            None,
            "the next initialize goes without the old id"
        );
        assert!(!r
            .post(&transmit(request(6, "initialize")))
            .headers
            .iter()
            .any(|(k, _)| k == SESSION_ID_HEADER));
        // The same request expiring again fails with the status.
        assert!(matches!(
            r.on_response(&call, true, 404, &[]),
            Err(HttpError::Status { status: 404, .. })
        ));
        let mut off = HttpRules::new(HttpConfig {
            renew_expired_session: false,
            ..HttpConfig::new("u")
        });
        assert!(matches!(
            off.on_response(&call, true, 404, &[]),
            Err(HttpError::Status { status: 404, .. })
        ));
    }

    #[test]
    fn priming_events_carry_no_message() {
        let mut d = SseDecoder::new();
        d.feed(b"id: e1\nretry: 500\ndata: \n\nevent: message\ndata: {\"a\":1}\n\nevent: other\ndata: x\n\n");
        let mut messages = Vec::new();
        while let Some(crate::sse::SseItem::Event(e)) = d.poll_event() {
            if let Some(m) = HttpRules::event_message(&e) {
                messages.push(m.to_vec());
            }
        }
        assert_eq!(messages, vec![b"{\"a\":1}".to_vec()]);
    }

    #[test]
    fn stream_end_resumes_with_last_event_id_after_retry() {
        let r = rules();
        let call = request(2, "tools/call");
        let mut d = SseDecoder::new();
        assert!(
            matches!(
                r.on_stream_end(&call, false, 0, Some(&d)),
                StreamEnd::Failed(_)
            ),
            "no id: cannot resume"
        );
        d.feed(b"id: event-1\nretry: 500\ndata: \n\n");
        let StreamEnd::Resume { after, request } = r.on_stream_end(&call, false, 0, Some(&d))
        else {
            panic!()
        };
        assert_eq!(after, Duration::from_millis(500));
        assert_eq!(request.method, Method::Get);
        assert_eq!(
            request.headers,
            h(&[
                ("Accept", "text/event-stream"),
                ("Authorization", "Bearer t"),
                ("Last-Event-ID", "event-1")
            ])
        );
        assert_eq!(r.on_stream_end(&call, true, 0, Some(&d)), StreamEnd::Done);
        assert!(
            matches!(
                r.on_stream_end(&call, false, 5, Some(&d)),
                StreamEnd::Failed(_)
            ),
            "bounded attempts"
        );
        assert_eq!(
            r.on_resume_response(200, &h(&[("content-type", "text/event-stream")])),
            Ok(())
        );
        assert!(r.on_resume_response(405, &[]).is_err());
    }

    #[test]
    fn delete_only_with_a_session() {
        let mut r = rules();
        assert_eq!(r.delete(), None);
        r.on_response(
            &request(0, "initialize"),
            false,
            200,
            &h(&[
                ("content-type", "application/json"),
                ("Mcp-Session-Id", "s"),
            ]),
        )
        .unwrap();
        let d = r.delete().unwrap();
        assert_eq!(d.method, Method::Delete);
        assert!(d.headers.contains(&("Mcp-Session-Id".into(), "s".into())));
    }

    #[test]
    fn only_the_answer_to_the_request_counts() {
        let mut r = rules();
        let call = request(4, "tools/call");
        assert!(!r.observe_message(&call, br#"{"jsonrpc":"2.0","id":"srv","method":"ping"}"#));
        assert!(!r.observe_message(
            &call,
            br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#
        ));
        assert!(!r.observe_message(&call, br#"{"jsonrpc":"2.0","id":3,"result":{}}"#));
        assert!(r.observe_message(
            &call,
            br#"{"jsonrpc":"2.0","id":4,"error":{"code":1,"message":"x"}}"#
        ));
        assert!(r.observe_message(
            &call,
            br#"{"result":{"content":[]},"jsonrpc":"2.0","id":4}"#
        ));
    }
}
