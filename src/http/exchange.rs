//! One message's HTTP exchange: its POST, the verdict on its response, the messages it reads,
//! its end (done, failed, or resumed with a `GET`), and what holds the messages after it back.

use super::error::{status_error, Body, HttpError};
use super::wire::{header, is_header_value, HttpRequest, SESSION_ID_HEADER};
use super::{HttpRules, MAX_ASKED};
use crate::jsonrpc::RequestId;
use crate::session::transmit::{Transmit, TransmitKind};
use crate::sse::{SseDecoder, SseEvent};
use crate::types::SUPPORTED_PROTOCOL_VERSIONS;
use std::time::Duration;

/// The longest the messages after an ordered one wait for its POST's status
/// ([`HttpRules::order_wait`]): 1 s.
pub const ORDER_WAIT: Duration = Duration::from_secs(1);

/// One message's HTTP exchange, as the rules track it from its POST through its response (and,
/// for a request's event stream, its resumptions): the session id it carried, whether its answer
/// came, how often its stream was resumed. The driver holds one per POST and hands it back to
/// the rules with everything it reads; it keeps no protocol state of its own.
#[derive(Debug)]
pub struct Exchange {
    pub(super) kind: TransmitKind,
    carried: Option<std::sync::Arc<str>>,
    answered: bool,
    resumes: u32,
    /// A modern-era message: its stream cannot be resumed.
    modern: bool,
    /// An `initialize` request declaring at least one client capability.
    declares: bool,
    /// The URL its latest HTTP request went to (shared with the rules' until a redirect or a
    /// resumption moves it).
    pub(super) url: std::sync::Arc<str>,
    /// The URLs its redirects were followed from (normalized), oldest first.
    pub(super) redirected_from: Vec<String>,
    /// Where the machine is ([`HttpRules::step`]).
    pub(super) phase: super::step::Phase,
    /// The event stream's decoder, once the response is one.
    pub(super) decoder: Option<SseDecoder>,
    /// A JSON body read, to deliver (or, after a refusal that is no answer, for the message).
    pub(super) body: Option<Vec<u8>>,
    /// The most bytes of one message.
    pub(super) limit: usize,
    /// Whether the driver runs the OAuth flow.
    pub(super) oauth: bool,
    /// POSTs made (a resend starts the exchange afresh).
    pub(super) posts: u32,
}

impl Exchange {
    /// What the exchange carries.
    pub fn kind(&self) -> &TransmitKind {
        &self.kind
    }

    /// Whether the request's answer came (reading its stream can stop).
    pub fn answered(&self) -> bool {
        self.answered
    }

    /// How often its stream was resumed.
    pub fn resumes(&self) -> u32 {
        self.resumes
    }

    /// How many redirects it followed.
    pub fn redirects(&self) -> usize {
        self.redirected_from.len()
    }

    /// The wire id of the request it carries ([`TransmitKind::Request::wire`]), if it carries
    /// one: hand what its response brings to
    /// [`Session::handle_message_for`](crate::Session::handle_message_for) with it.
    pub fn wire(&self) -> Option<RequestId> {
        match &self.kind {
            TransmitKind::Request { wire, .. } => Some(*wire),
            _ => None,
        }
    }

    /// The body of a refusal that failed the exchange ([`Step::Failed`](super::Step::Failed)
    /// with a status), for the error message.
    pub fn error_body(&self) -> Option<&[u8]> {
        match self.phase {
            super::step::Phase::Failed(_) => self.body.as_deref(),
            _ => None,
        }
    }

    /// The same exchange afresh for another POST of its message (`fresh`: as
    /// `HttpRules::begin` makes it now), keeping the machine's settings.
    pub(super) fn restart(&mut self, fresh: Exchange) {
        *self = Exchange {
            phase: std::mem::take(&mut self.phase),
            limit: self.limit,
            oauth: self.oauth,
            posts: self.posts,
            ..fresh
        };
    }
}

/// What giving up on a request takes ([`HttpRules::on_cancel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancel {
    /// The request whose exchange (its response stream) is aborted.
    pub abort: RequestId,
    /// Whether the `notifications/cancelled` message is POSTed too.
    pub notify: bool,
}

/// What to do when a response stream ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// Nothing: the request was answered (or the stream was not for a request).
    Done,
    /// Wait `after`, then make `request` (a `GET` with `Last-Event-ID`) and read its stream.
    Resume {
        /// How long to wait first: the server's `retry`, or the default.
        after: Duration,
        /// The request to make.
        request: HttpRequest,
    },
    /// The stream ended before the answer and cannot be resumed: the request fails with this
    /// ([`HttpError::Unanswered`]).
    Failed(HttpError),
}

impl HttpRules {
    /// Reads a response's status and headers for the message `kind` it answers.
    ///
    /// `carried_session` is the session id the request carried (as [`session_id`](Self::session_id)
    /// was when it was built). For the `initialize` request, the session id is captured from a
    /// successful response.
    ///
    /// A 404 to any message that carried the current session id (a request, and also a
    /// notification or a response) means the session is gone: with renewal on, the session is
    /// forgotten and [`HttpError::SessionExpired`] says to restart it (a request is renewed once;
    /// its second 404 is a plain status error). With renewal off the session id is kept, so that
    /// every later request meets the 404 too and fails with it, rather than going out without an
    /// id. A 404 for a session that was already replaced is [`HttpError::Resend`].
    pub(super) fn on_response<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        kind: &TransmitKind,
        carried_session: Option<&str>,
        status: u16,
        headers: &[(K, V)],
    ) -> Result<Body, HttpError> {
        let url = || self.redacted_url.clone();
        if status == 404 && carried_session.is_some() && carried_session != self.session_id() {
            // The 404 is late: the session it reports has been renewed (or is being renewed)
            // since. It says nothing about the current session.
            let again = match kind {
                TransmitKind::Request { id, .. } => self.resent.insert(*id),
                _ => true,
            };
            if again && self.config.renew_expired_session {
                return Err(HttpError::Resend { url: url() });
            }
            return Err(HttpError::Status { status, url: url() });
        }
        if status == 404 && carried_session.is_some() {
            // > "The server MAY terminate the session at any time, after which it MUST respond to
            // > requests containing that session ID with HTTP 404 Not Found." / "When a client
            // > receives HTTP 404 in response to a request containing an Mcp-Session-Id, it MUST
            // > start a new session by sending a new InitializeRequest without a session ID
            // > attached." — MCP 2025-11-25, Transports § Streamable HTTP § Session Management
            let renew = self.config.renew_expired_session
                && match kind {
                    TransmitKind::Request { id, .. } => self.renewed.insert(*id),
                    _ => true,
                };
            if renew {
                self.session_id = None;
                self.protocol_version = None;
                self.renewing = true;
                return Err(HttpError::SessionExpired { url: url() });
            }
            return Err(HttpError::Status { status, url: url() });
        }
        if !(200..300).contains(&status) {
            let json = header(headers, "content-type").is_some_and(|t| {
                t.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case("application/json")
            });
            if json
                && status != 401
                && status != 403
                && matches!(kind, TransmitKind::Request { .. })
            {
                return Ok(Body::Refused { status });
            }
            return Err(status_error(status, headers, url()));
        }
        let TransmitKind::Request { method, .. } = kind else {
            // > "If the input is a JSON-RPC response or notification: If the server accepts the
            // > input, the server MUST return HTTP status code 202 Accepted with no body."
            return Ok(Body::None);
        };
        if method == "initialize" {
            self.renewing = false;
            // > "A server using the Streamable HTTP transport MAY assign a session ID at
            // > initialization time, by including it in an Mcp-Session-Id header on the HTTP
            // > response containing the InitializeResult." — MCP 2025-11-25, Transports § Streamable
            // > HTTP § Session Management
            self.session_id = header(headers, SESSION_ID_HEADER)
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| (0x21..=0x7e).contains(&b)))
                .map(std::sync::Arc::from);
        }
        let content_type = header(headers, "content-type").unwrap_or("");
        // The media type's essence, compared without regard to case (RFC 9110 § 8.3.1), in place.
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case("application/json") {
            Ok(Body::Json)
        } else if essence.eq_ignore_ascii_case("text/event-stream") {
            Ok(Body::EventStream)
        } else {
            Err(HttpError::ContentType {
                content_type: content_type.to_owned(),
                url: url(),
            })
        }
    }

    /// The POST that carries `transmit`, and the exchange that follows its answer.
    #[cfg(test)]
    pub(super) fn begin(&self, transmit: &Transmit) -> (HttpRequest, Exchange) {
        (self.post(transmit), self.exchange_for(transmit))
    }

    /// The exchange that follows `transmit`'s POST, made now.
    pub(super) fn exchange_for(&self, transmit: &Transmit) -> Exchange {
        Exchange {
            kind: transmit.kind.clone(),
            carried: self.session_id.clone().filter(|_| !transmit.modern),
            answered: false,
            resumes: 0,
            modern: transmit.modern,
            declares: matches!(&transmit.kind, TransmitKind::Request { method, .. } if method == "initialize")
                && declares_capabilities(&transmit.payload),
            url: self.url.clone(),
            redirected_from: Vec::new(),
            phase: super::step::Phase::default(),
            decoder: None,
            body: None,
            limit: usize::MAX,
            oauth: false,
            posts: 0,
        }
    }

    /// The POST that carries `transmit` again, to where its exchange's redirects led (after
    /// `on_redirect` said to follow one): the same method, headers and body.
    pub(super) fn post_again(&self, exchange: &Exchange, transmit: &Transmit) -> HttpRequest {
        HttpRequest {
            url: String::from(&*exchange.url),
            ..self.post(transmit)
        }
    }

    /// Reads the answer to the exchange's POST: its status and headers. For the `initialize`
    /// request, the session id is captured from a successful response.
    ///
    /// A 404 to any message that carried the current session id (a request, and also a
    /// notification or a response) means the session is gone: with renewal on, the session is
    /// forgotten and [`HttpError::SessionExpired`] says to restart it (a request is renewed once;
    /// its second 404 is a plain status error). With renewal off the session id is kept, so that
    /// every later request meets the 404 too and fails with it, rather than going out without an
    /// id. A 404 for a session that was already replaced (the exchange's POST carried an older
    /// id) is [`HttpError::Resend`].
    pub(super) fn on_exchange_response<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        exchange: &Exchange,
        status: u16,
        headers: &[(K, V)],
    ) -> Result<Body, HttpError> {
        self.on_response(&exchange.kind, exchange.carried.as_deref(), status, headers)
    }

    /// Notes a message read from the exchange's response (a JSON body, or an event's data);
    /// returns whether the request's answer is in, so that reading can stop: a server that keeps
    /// the stream open after the answer is not waited for.
    pub(super) fn on_exchange_message(&mut self, exchange: &mut Exchange, message: &[u8]) -> bool {
        let answers = self.observe_message(&exchange.kind, message);
        if answers
            && matches!(&exchange.kind, TransmitKind::Request { method, .. } if method == "initialize")
        {
            self.answering = exchange.declares;
        }
        exchange.answered |= answers;
        exchange.answered
    }

    /// Reads the JSON body of a refused request ([`Body::Refused`]): a JSON-RPC error answering
    /// the request is its answer (`Ok`: hand the body to the session with
    /// [`Session::handle_message_for`](crate::Session::handle_message_for), which reads the
    /// error); anything else (an error with another id, another shape, junk) leaves the status
    /// as the verdict.
    ///
    /// > "On `400 Bad Request`, the client **SHOULD** inspect the response body before falling
    /// > back: modern servers also use `400` for `UnsupportedProtocolVersionError`,
    /// > `MissingRequiredClientCapabilityError`, and header-validation failures." — MCP
    /// > 2026-07-28, Streamable HTTP § Backward Compatibility
    ///
    /// An error without an id (`null` or absent) answers it too: the server could not read the
    /// request, and this response is to this request's POST, so the request fails with the
    /// server's code and message rather than an HTTP status. (A legacy server refusing the era
    /// probe so — the TypeScript SDK's `400 {"error":{"code":-32000,"message":"Bad Request: No
    /// valid session ID provided"},"id":null}` — still means the legacy era: -32000 is no modern
    /// error.)
    ///
    /// > "If there was an error in detecting the id in the Request object (e.g. Parse
    /// > error/Invalid Request), it MUST be Null." — JSON-RPC 2.0 § 5
    pub(super) fn on_error_body(
        &mut self,
        exchange: &mut Exchange,
        status: u16,
        body: &[u8],
    ) -> Result<(), HttpError> {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(default)]
            id: Option<serde_json::Value>,
            #[serde(default)]
            method: Option<serde::de::IgnoredAny>,
            // The shape the session reads (`{code, message?, data?}`), so that what is taken for
            // the answer is one.
            #[serde(default)]
            error: Option<crate::jsonrpc::RpcError>,
            #[serde(default)]
            result: Option<serde::de::IgnoredAny>,
        }
        let TransmitKind::Request { wire, .. } = &exchange.kind else {
            return Err(HttpError::Status {
                status,
                url: self.redacted_url.clone(),
            });
        };
        let answers = serde_json::from_slice::<Head>(body).is_ok_and(|h| {
            h.error.is_some()
                && h.result.is_none()
                && h.method.is_none()
                && h.id.as_ref().is_none_or(|id| id.as_u64() == Some(wire.0))
        });
        if answers {
            exchange.answered = true;
            return Ok(());
        }
        Err(HttpError::Status {
            status,
            url: self.redacted_url.clone(),
        })
    }

    /// The exchange's body ended (`decoder`: its event stream's; `None` for a JSON body): done,
    /// failed, or resumed (counted). A JSON body cannot be resumed, so an unanswered one fails;
    /// an event stream resumes from its last event id after the server's `retry` (or the default),
    /// at most [`HttpConfig::max_resume_attempts`](crate::http::HttpConfig::max_resume_attempts)
    /// times, and a modern-era one never.
    ///
    /// > "If the client … the SSE stream is disconnected … the client MAY resume by issuing a GET
    /// > with the Last-Event-ID header" / "the client MUST respect the retry field, waiting the
    /// > given number of milliseconds before attempting to reconnect" — MCP 2025-11-25,
    /// > Transports § Streamable HTTP § Resumability and Redelivery
    pub(super) fn on_exchange_end(
        &self,
        exchange: &mut Exchange,
        decoder: Option<&SseDecoder>,
    ) -> StreamEnd {
        if exchange.modern && !exchange.answered && decoder.is_some() {
            // > "Resumable SSE streams via `Last-Event-ID` are not supported." — MCP 2026-07-28,
            // > Transports § Streamable HTTP
            return StreamEnd::Failed(HttpError::Unanswered {
                reason: "the response stream ended before the response (a modern server's streams cannot be resumed)".into(),
                url: self.redacted_url.clone(),
            });
        }
        let plan = self.on_stream_end(&exchange.kind, exchange.answered, exchange.resumes, decoder);
        if let StreamEnd::Resume { request, .. } = &plan {
            exchange.resumes += 1;
            exchange.url = request.url.as_str().into();
        }
        plan
    }

    /// Notes a message read from the response to `kind`; returns whether it is that request's
    /// answer: a result or error with its id, or an error without an id. The `initialize` answer
    /// sets the protocol revision sent in later headers.
    pub(super) fn observe_message(&mut self, kind: &TransmitKind, message: &[u8]) -> bool {
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
        let TransmitKind::Request { wire, method, .. } = kind else {
            return false;
        };
        // The common answer, a result that says so at its ends, is taken for the answer without
        // being read here: the session reads it (once), and fails the request should it not be
        // one after all (~2,600 instructions a call: serde_json read it twice). The
        // `initialize` answer is read here whole, for its revision.
        if method != "initialize" && crate::jsonrpc::result_id(message) == Some(wire.0) {
            return true;
        }
        let Ok(head) = serde_json::from_slice::<Head>(message) else {
            return false;
        };
        if let (Some(_), Some(asked)) = (&head.method, &head.id) {
            // A server request on this request's stream: this request waits on its answer.
            if self.asked.len() == MAX_ASKED {
                self.asked.pop_front();
            }
            let handle = match kind {
                TransmitKind::Request { id, .. } => *id,
                _ => *wire,
            };
            self.asked.push_back((asked.to_string(), handle));
            return false;
        }
        // An error without an id (`null` or absent) on this request's response is about this
        // request (see `on_error_body`): the session takes it for its answer.
        let answers = head.method.is_none()
            && match (&head.result, &head.error, &head.id) {
                (Some(_), None, Some(id)) | (None, Some(_), Some(id)) => {
                    id.as_u64() == Some(wire.0)
                }
                (None, Some(_), None) => true,
                _ => false,
            };
        if answers && method == "initialize" {
            // Only a revision this client speaks goes into a header: the session refuses any
            // other (and disconnects), and a server's arbitrary string must not reach an HTTP
            // library unchecked.
            self.protocol_version = head.result.and_then(|r| r.protocol_version).and_then(|v| {
                SUPPORTED_PROTOCOL_VERSIONS
                    .iter()
                    .copied()
                    .find(|known| *known == v)
            });
        }
        answers
    }

    /// How long the messages after `kind` wait, at most, for its POST's status before they go
    /// out: `None` when they do not wait (a ping answer, a progress or roots notification: one
    /// stalled POST then holds nothing back).
    ///
    /// `notifications/initialized` is waited for, so that the server sees it before the requests
    /// that follow it; but only up to [`ORDER_WAIT`]: the rule is about what is sent first, not
    /// about the server's `202`, and a server that holds its answer must not hold the first
    /// request for a whole POST deadline.
    ///
    /// > "After successful initialization, the client **MUST** send an `initialized`
    /// > notification to indicate it is ready to begin normal operations" — MCP 2025-11-25,
    /// > Lifecycle § Initialization
    ///
    /// A cancellation is waited for in the same way, so that the server hears that a request was
    /// given up on before the requests that follow it (which may well repeat it) and before the
    /// `DELETE` that ends the session (after which the cancellation would only meet a 404).
    ///
    /// > "When a party wants to cancel an in-progress request, it sends a
    /// > `notifications/cancelled` notification" — MCP 2025-11-25, Utilities § Cancellation;
    /// > "Clients that no longer need a particular session … **SHOULD** send an HTTP DELETE to
    /// > the MCP endpoint with the `Mcp-Session-Id` header, to explicitly terminate the session"
    /// > — Transports § Session Management
    ///
    /// Each POST waited for is on a connection of its own, so only its status proves that the
    /// server read it; past [`ORDER_WAIT`] it has had ample time to, and the POST itself goes on
    /// until its own deadline.
    pub fn order_wait(kind: &TransmitKind) -> Option<Duration> {
        let ordered = match kind {
            TransmitKind::Notification { method } => method == "notifications/initialized",
            TransmitKind::Cancellation { .. } => true,
            _ => false,
        };
        ordered.then_some(ORDER_WAIT)
    }

    /// What giving up on a request means over HTTP: which exchange to abort (its response stream
    /// is closed, so the server may stop work on it) and whether the cancellation notification
    /// is POSTed too. In the legacy era (this transport's revisions) both happen.
    ///
    /// > "When a party wants to cancel an in-progress request, it sends a
    /// > `notifications/cancelled` notification" — MCP 2025-11-25, Utilities § Cancellation; and
    /// > "Disconnection SHOULD NOT be interpreted as the client cancelling its request" — Transports,
    /// > which is why closing the stream alone is not enough here.
    ///
    /// In the modern era the session sends [`TransmitKind::Abort`] instead: the stream is closed,
    /// and nothing is POSTed.
    ///
    /// > "Closing the SSE response stream **MUST** be treated by the server as cancellation of
    /// > that request." — MCP 2026-07-28, Streamable HTTP § Cancellation
    pub fn on_cancel(&self, kind: &TransmitKind) -> Option<Cancel> {
        match kind {
            TransmitKind::Cancellation { id } => Some(Cancel {
                abort: *id,
                notify: true,
            }),
            TransmitKind::Abort { id } => Some(Cancel {
                abort: *id,
                notify: false,
            }),
            _ => None,
        }
    }

    /// Whether the message `kind` may be POSTed now. While the session is being renewed (it
    /// expired, and the new `initialize` is not answered yet), anything but `initialize` would go
    /// without a session id and be refused: a request gets [`HttpError::SessionExpired`] without
    /// being sent (restart with its id, and it is sent in the new session), and a notification or
    /// response is dropped (it belonged to the old session).
    pub(super) fn check_post(&self, kind: &TransmitKind) -> Result<(), HttpError> {
        // > "If an Mcp-Session-Id is returned by the server during initialization, clients using
        // > the Streamable HTTP transport MUST include it in the Mcp-Session-Id header on all of
        // > their subsequent HTTP requests." — MCP 2025-11-25, Transports § Streamable HTTP §
        // > Session Management
        let initialize =
            matches!(kind, TransmitKind::Request { method, .. } if method == "initialize");
        if self.renewing && !initialize {
            return Err(HttpError::SessionExpired {
                url: self.redacted_url.clone(),
            });
        }
        Ok(())
    }

    /// The JSON-RPC message an SSE event carries, if any: events named `message` (or unnamed) with
    /// data. A priming event (empty data) carries none.
    ///
    /// > "The server SHOULD immediately send an SSE event consisting of an event ID and an empty
    /// > data field in order to prime the client to reconnect" — MCP 2025-11-25, Transports §
    /// > Streamable HTTP § Sending Messages to the Server
    pub fn event_message(event: &SseEvent) -> Option<&[u8]> {
        (event.event == "message" && !event.data.trim().is_empty()).then_some(event.data.as_bytes())
    }

    /// What to do when the body for `kind` ended (`answered`: its answer arrived) after
    /// `attempts` resumptions. For an event stream, `decoder` holds the last event id and the
    /// server's `retry`; a JSON body (`None`) cannot be resumed, so an unanswered one fails.
    ///
    /// > "If the client … the SSE stream is disconnected … the client MAY resume by issuing a GET
    /// > with the Last-Event-ID header" / "the client MUST respect the retry field, waiting the
    /// > given number of milliseconds before attempting to reconnect" — MCP 2025-11-25,
    /// > Transports § Streamable HTTP § Resumability and Redelivery
    pub(super) fn on_stream_end(
        &self,
        kind: &TransmitKind,
        answered: bool,
        attempts: u32,
        decoder: Option<&SseDecoder>,
    ) -> StreamEnd {
        if answered || !matches!(kind, TransmitKind::Request { .. }) {
            return StreamEnd::Done;
        }
        let failed = |reason: String| {
            StreamEnd::Failed(HttpError::Unanswered {
                reason,
                url: self.redacted_url().to_owned(),
            })
        };
        let Some(decoder) = decoder else {
            return failed("the JSON response did not answer the request".into());
        };
        let Some(last_id) = decoder.last_event_id() else {
            return failed(
                "the response stream ended before the response, and no event id allows resuming it"
                    .into(),
            );
        };
        // The id goes back in the Last-Event-ID header: one that cannot be sent as a header
        // value (the SSE format allows any text) makes the stream not resumable.
        if !is_header_value(last_id) {
            return failed(
                "the response stream ended before the response, and its last event id is not visible ASCII, so it cannot be resumed"
                    .into(),
            );
        }
        if attempts >= self.config.max_resume_attempts {
            return failed(format!(
                "the response stream ended before the response {} times; giving up",
                attempts + 1
            ));
        }
        StreamEnd::Resume {
            after: decoder.retry().unwrap_or(self.config.default_retry),
            request: self.event_stream_get(Some(last_id)),
        }
    }

    /// Reads the answer to a resumption `GET`: it must be a 2xx event stream.
    pub(super) fn on_resume_response<K: AsRef<str>, V: AsRef<str>>(
        &self,
        status: u16,
        headers: &[(K, V)],
    ) -> Result<(), HttpError> {
        let url = self.redacted_url.clone();
        if !(200..300).contains(&status) {
            return Err(status_error(status, headers, url));
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
}

/// Whether an `initialize` request's `params.capabilities` declares anything.
fn declares_capabilities(payload: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Request {
        #[serde(default)]
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(default)]
        capabilities: Option<serde_json::Map<String, serde_json::Value>>,
    }
    serde_json::from_slice::<Request>(payload)
        .ok()
        .and_then(|r| r.params?.capabilities)
        .is_some_and(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::fixtures::*;
    use crate::http::{HttpConfig, Method};

    #[test]
    fn content_types_and_statuses() {
        let mut r = rules();
        let call = request(3, "tools/call");
        let ct = |v: &str| h(&[("Content-Type", v)]);
        assert_eq!(
            r.on_response(&call, None, 200, &ct("application/json; charset=utf-8")),
            Ok(Body::Json)
        );
        assert_eq!(
            r.on_response(&call, None, 200, &ct("Text/Event-Stream")),
            Ok(Body::EventStream)
        );
        assert!(matches!(
            r.on_response(&call, None, 200, &ct("text/html")),
            Err(HttpError::ContentType { .. })
        ));
        let note = TransmitKind::Notification {
            method: "notifications/initialized".into(),
        };
        assert_eq!(r.on_response(&note, None, 202, NO_HEADERS), Ok(Body::None));
        assert_eq!(
            r.on_response(&TransmitKind::Response, None, 202, NO_HEADERS),
            Ok(Body::None)
        );
        assert_eq!(
            r.on_response(&call, None, 500, &ct("text/html")),
            Err(HttpError::Status {
                status: 500,
                url: "http://127.0.0.1:1/mcp".into()
            })
        );
        assert_eq!(
            r.on_response(
                &call,
                None,
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
            r.on_response(&call, None, 404, NO_HEADERS),
            Err(HttpError::Status { status: 404, .. })
        ));
    }

    #[test]
    fn expired_session_is_renewed_once_per_request() {
        let mut r = rules();
        let init = request(0, "initialize");
        r.on_response(
            &init,
            None,
            200,
            &h(&[
                ("content-type", "application/json"),
                ("mcp-session-id", "s1"),
            ]),
        )
        .unwrap();
        let call = request(5, "tools/call");
        assert!(matches!(
            r.on_response(&call, Some("s1"), 404, NO_HEADERS),
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
        open_session(&mut r, 6, "s2");
        // The same request expiring again, in the new session, fails with the status.
        assert!(matches!(
            r.on_response(&call, Some("s2"), 404, NO_HEADERS),
            Err(HttpError::Status { status: 404, .. })
        ));
        assert_eq!(r.session_id(), Some("s2"), "kept: nothing renews it");
        let mut off = HttpRules::new(HttpConfig {
            renew_expired_session: false,
            ..HttpConfig::new("u")
        });
        off.session_id = Some("s".into());
        assert!(matches!(
            off.on_response(&call, Some("s"), 404, NO_HEADERS),
            Err(HttpError::Status { status: 404, .. })
        ));
    }

    #[test]
    fn a_late_404_from_a_replaced_session_resends_without_renewing_again() {
        let mut r = rules();
        r.session_id = Some("s2".into());
        let call = request(7, "tools/call");
        assert!(matches!(
            r.on_response(&call, Some("s1"), 404, NO_HEADERS),
            Err(HttpError::Resend { .. })
        ));
        assert_eq!(r.session_id(), Some("s2"), "the current session is kept");
        assert_eq!(r.check_post(&call), Ok(()));
        assert!(
            matches!(
                r.on_response(&call, Some("s1"), 404, NO_HEADERS),
                Err(HttpError::Status { status: 404, .. })
            ),
            "once per request"
        );
        assert!(matches!(
            r.on_response(&TransmitKind::Response, Some("s1"), 404, NO_HEADERS),
            Err(HttpError::Resend { .. })
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
            hr(&[
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
        assert!(r.on_resume_response(405, NO_HEADERS).is_err());
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

    #[test]
    fn a_404_to_a_notification_or_response_renews_the_session() {
        let mut r = rules();
        open_session(&mut r, 0, "s1");
        let cancel = TransmitKind::Cancellation { id: RequestId(3) };
        assert!(matches!(
            r.on_response(&cancel, Some("s1"), 404, NO_HEADERS),
            Err(HttpError::SessionExpired { .. })
        ));
        assert_eq!(r.session_id(), None);
        // Until the new initialize is answered, nothing else goes out without the id.
        assert!(matches!(
            r.check_post(&request(4, "tools/call")),
            Err(HttpError::SessionExpired { .. })
        ));
        assert!(r.check_post(&TransmitKind::Response).is_err());
        assert_eq!(r.check_post(&request(5, "initialize")), Ok(()));
        open_session(&mut r, 5, "s2");
        assert_eq!(r.check_post(&request(4, "tools/call")), Ok(()));
        assert_eq!(r.session_id(), Some("s2"));
        // With renewal off the id is kept: later requests meet the 404 themselves.
        let mut off = HttpRules::new(HttpConfig {
            renew_expired_session: false,
            ..HttpConfig::new("http://h/")
        });
        off.session_id = Some("s".into());
        assert!(matches!(
            off.on_response(&TransmitKind::Response, Some("s"), 404, NO_HEADERS),
            Err(HttpError::Status { status: 404, .. })
        ));
        assert_eq!(off.session_id(), Some("s"));
    }

    #[test]
    fn an_event_id_that_is_not_visible_ascii_is_not_resumed_from() {
        let r = rules();
        let mut d = SseDecoder::new();
        d.feed("id: caf\u{e9}\ndata: \n\n".as_bytes());
        assert!(matches!(
            r.on_stream_end(&request(2, "tools/call"), false, 0, Some(&d)),
            StreamEnd::Failed(e) if e.to_string().contains("visible ASCII")
        ));
    }

    #[test]
    fn a_401_or_403_is_a_typed_verdict_with_its_challenge() {
        let mut r = rules();
        let call = request(3, "tools/call");
        let challenge =
            r#"Bearer resource_metadata="https://x.example/.well-known/oauth-protected-resource""#;
        assert_eq!(
            r.on_response(&call, None, 401, &h(&[("WWW-Authenticate", challenge)])),
            Err(HttpError::Unauthorized {
                challenge: Some(challenge.into()),
                url: "http://127.0.0.1:1/mcp".into()
            })
        );
        let scope = r#"Bearer error="insufficient_scope", scope="files:write""#;
        assert_eq!(
            r.on_response(&call, None, 403, &h(&[("www-authenticate", scope)])),
            Err(HttpError::Forbidden {
                challenge: Some(scope.into()),
                url: "http://127.0.0.1:1/mcp".into()
            })
        );
        assert!(matches!(
            r.on_response(&call, None, 401, NO_HEADERS),
            Err(HttpError::Unauthorized {
                challenge: None,
                ..
            })
        ));
        let huge = "a".repeat(100_000);
        let Err(HttpError::Unauthorized {
            challenge: Some(c), ..
        }) = r.on_response(&call, None, 401, &h(&[("WWW-Authenticate", &huge)]))
        else {
            panic!()
        };
        assert_eq!(c.len(), 4096, "bounded");
    }

    #[test]
    fn an_exchange_tracks_its_session_answer_and_resumptions() {
        let mut r = rules();
        let init = request(0, "initialize");
        let (_, ex) = r.begin(&transmit(init.clone()));
        r.on_exchange_response(
            &ex,
            200,
            &h(&[
                ("content-type", "text/event-stream"),
                ("mcp-session-id", "s1"),
            ]),
        )
        .unwrap();
        let call = request(1, "tools/call");
        let (post, mut ex) = r.begin(&transmit(call.clone()));
        assert!(post
            .headers
            .contains(&("Mcp-Session-Id".into(), "s1".into())));
        let mut d = SseDecoder::new();
        d.feed(b"id: e1\ndata: \n\n");
        assert!(!r.on_exchange_message(
            &mut ex,
            br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#
        ));
        assert!(matches!(
            r.on_exchange_end(&mut ex, Some(&d)),
            StreamEnd::Resume { .. }
        ));
        assert_eq!(ex.resumes(), 1, "counted by the exchange");
        assert!(r.on_exchange_message(&mut ex, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(ex.answered());
        assert_eq!(r.on_exchange_end(&mut ex, Some(&d)), StreamEnd::Done);
        // The session it carried decides what a 404 means, even after the rules moved on.
        assert!(matches!(
            r.on_exchange_response(&ex, 404, NO_HEADERS),
            Err(HttpError::SessionExpired { .. })
        ));
    }

    #[test]
    fn a_cancellation_aborts_its_exchange_and_is_posted() {
        let r = rules();
        let id = RequestId(9);
        assert_eq!(
            r.on_cancel(&TransmitKind::Cancellation { id }),
            Some(Cancel {
                abort: id,
                notify: true
            })
        );
        assert_eq!(r.on_cancel(&TransmitKind::Response), None);
    }

    #[test]
    fn only_the_initialized_notification_and_cancellations_hold_back_what_follows() {
        let note = |method: &str| TransmitKind::Notification {
            method: method.to_owned().into(),
        };
        let wait = HttpRules::order_wait;
        assert_eq!(wait(&note("notifications/initialized")), Some(ORDER_WAIT));
        assert_eq!(
            wait(&TransmitKind::Cancellation { id: RequestId(3) }),
            Some(ORDER_WAIT)
        );
        assert_eq!(wait(&note("notifications/progress")), None);
        assert_eq!(wait(&note("notifications/roots/list_changed")), None);
        assert_eq!(wait(&TransmitKind::Response), None);
        assert_eq!(wait(&TransmitKind::Abort { id: RequestId(3) }), None);
        assert_eq!(wait(&request(4, "tools/call")), None);
        assert!(ORDER_WAIT <= Duration::from_secs(1));
    }
}
