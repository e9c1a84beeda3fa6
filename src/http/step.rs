//! A request's exchange as one machine ([`HttpRules::step`]), shaped like the OAuth flow's
//! [`Flow::step`](crate::oauth::Flow::step): the driver asks what to do next, does it (sends,
//! reads, waits, delivers, authorizes) and feeds back what came of it; the sequence itself —
//! the token before each POST, redirects, authorization and the resend after it, the late-404
//! resend, the body to read, the answer that ends the reading, resumption and its wait, the
//! size cap — is decided here.
//!
//! The loop a driver runs, per request:
//!
//! ```text
//! let mut exchange = rules.start(&transmit, limit, oauth);
//! loop {
//!     match rules.step(&mut exchange, &transmit) {
//!         Step::Prepare => { /* refresh the OAuth token if it must be */ }
//!         Step::Send(request) => { /* send; */ rules.on_head(&mut exchange, status, &headers) }
//!         Step::Authorize { status, challenge } => {
//!             /* the OAuth verdict */ rules.on_authorized(&mut exchange, again)
//!         }
//!         Step::ReadBody { limit } => { /* read it whole */ rules.on_body(&mut exchange, body) }
//!         Step::ReadStream => { /* read a chunk */ rules.on_data(&mut exchange, &chunk) }
//!         Step::Deliver(message) => { /* to the session, for exchange.wire() */ }
//!         Step::Wait(after) => { /* a timer */ }
//!         Step::Done => break,
//!         Step::Failed(error) => { /* the request fails with it */ break }
//!     }
//! }
//! ```
//!
//! A stream's end (or a broken read, which is resumed like an end) goes to
//! [`HttpRules::on_end`]; a JSON body over its limit to [`HttpRules::on_oversized`].

use super::error::{Body, HttpError, MAX_ERROR_BODY};
use super::exchange::{Exchange, StreamEnd};
use super::wire::{HttpRequest, Method};
use super::HttpRules;
use crate::session::transmit::{Transmit, TransmitKind};
use crate::sse::{SseDecoder, SseItem};
use std::time::Duration;

/// What the driver does next for a request's exchange ([`HttpRules::step`]).
#[derive(Debug)]
pub enum Step {
    /// Make the OAuth token current (refresh one past its expiry, or run the flow up front) when
    /// the driver runs OAuth: the request built next carries it. Then step again.
    Prepare,
    /// Make this request, and hand its response's status and headers to [`HttpRules::on_head`].
    Send(HttpRequest),
    /// The server wants (other) authorization: ask the OAuth flow about this `401` or `403`, then
    /// tell [`HttpRules::on_authorized`] whether to send the request again.
    Authorize {
        /// The status.
        status: u16,
        /// Its `WWW-Authenticate` challenge, when sent (cut at 4 KiB).
        challenge: Option<String>,
    },
    /// Read the whole body, at most `limit` bytes, and hand it to [`HttpRules::on_body`] (over
    /// the limit: [`HttpRules::on_oversized`]).
    ReadBody {
        /// The most bytes to read.
        limit: usize,
    },
    /// Read the next part of the event stream and hand it to [`HttpRules::on_data`]; its end, or
    /// a read that fails, to [`HttpRules::on_end`].
    ReadStream,
    /// Hand this message to the session, for the exchange's request ([`Exchange::wire`]).
    Deliver(Vec<u8>),
    /// A message was dropped (an event over the limit, on the standalone stream): tell the
    /// client, then step again. (On a request's stream the request fails with it instead.)
    Dropped(HttpError),
    /// Wait this long (a resumption's `retry`), then step again.
    Wait(Duration),
    /// The exchange is over: the request was answered (or is answered by what was delivered).
    Done,
    /// The exchange failed: the request fails with this ([`HttpError::SessionExpired`]: restart
    /// the session with it). For a status error, the start of the body read
    /// ([`Exchange::error_body`]), or of the response's, goes in the message.
    Failed(HttpError),
}

/// Where the machine is.
#[derive(Debug, Clone, Default)]
pub(super) enum Phase {
    /// Before a POST: the session check, then (with OAuth) the token.
    #[default]
    Post,
    /// The token is current: the POST goes next.
    Prepared,
    /// A request went out; its status and headers are awaited.
    Head(Method),
    /// A redirect was followed: the same request goes again, to the exchange's URL.
    Redirected(Method),
    /// A `401` or `403` waits for the OAuth flow's verdict.
    Authorizing {
        status: u16,
        challenge: Option<String>,
        error: HttpError,
    },
    /// A JSON body is to be read (`refused`: a refusal's, with its status).
    Json { refused: Option<u16> },
    /// A JSON body was read: its message goes to the session, then the end.
    Delivering,
    /// An event stream is being read.
    Stream,
    /// The stream ended before the answer: wait, then the resumption `GET`.
    Waiting(Duration, HttpRequest),
    /// The resumption `GET` goes next.
    Resuming(HttpRequest),
    /// Over.
    Done,
    /// Failed with this.
    Failed(HttpError),
}

impl HttpRules {
    /// The exchange that carries `transmit` (a request, or a notification or response, whose
    /// exchange ends with its status: [`Step::Done`], or [`Step::Failed`]) as one machine: drive it with
    /// [`step`](Self::step). `limit` caps each message (a JSON body, an event); `oauth` says
    /// whether the driver runs the OAuth flow ([`Step::Prepare`] and [`Step::Authorize`] come
    /// only then: without it a `401` or `403` fails the request).
    pub fn start(&self, transmit: &Transmit, limit: usize, oauth: bool) -> Exchange {
        let mut exchange = self.exchange_for(transmit);
        exchange.limit = limit;
        exchange.oauth = oauth;
        exchange
    }

    /// What to do next for `exchange` (which carries `transmit`).
    pub fn step(&mut self, exchange: &mut Exchange, transmit: &Transmit) -> Step {
        loop {
            match std::mem::take(&mut exchange.phase) {
                Phase::Post => {
                    // While the session is being renewed, the request waits for the new one
                    // without being sent (see `check_post`).
                    if let Err(e) = self.check_post(&exchange.kind) {
                        // A notification or response for the old session is dropped.
                        if !matches!(exchange.kind, TransmitKind::Request { .. }) {
                            return self.done(exchange);
                        }
                        return self.fail(exchange, e);
                    }
                    exchange.phase = Phase::Prepared;
                    if exchange.oauth {
                        return Step::Prepare;
                    }
                }
                Phase::Prepared => {
                    // Each POST afresh (after authorizing, or a late 404): the session id and the
                    // endpoint as they are now.
                    if exchange.posts > 0 {
                        exchange.restart(self.exchange_for(transmit));
                    }
                    let request = self.post(transmit);
                    exchange.posts += 1;
                    exchange.phase = Phase::Head(Method::Post);
                    return Step::Send(request);
                }
                Phase::Redirected(Method::Post) => {
                    exchange.phase = Phase::Head(Method::Post);
                    return Step::Send(self.post_again(exchange, transmit));
                }
                Phase::Redirected(method) => {
                    // A resumption's redirect: the same GET again, at the new URL.
                    let last = exchange.decoder.as_ref().and_then(|d| d.last_event_id());
                    let request = HttpRequest {
                        url: String::from(&*exchange.url),
                        ..self.event_stream_get(last)
                    };
                    exchange.phase = Phase::Head(method);
                    return Step::Send(request);
                }
                Phase::Head(method) => {
                    // Asked again before the response came: nothing new to do.
                    exchange.phase = Phase::Head(method);
                    return self.fail(
                        exchange,
                        HttpError::Unanswered {
                            reason: "the exchange was stepped before its response came".into(),
                            url: self.redacted_url.clone(),
                        },
                    );
                }
                Phase::Authorizing {
                    status,
                    challenge,
                    error,
                } => {
                    exchange.phase = Phase::Authorizing {
                        status,
                        challenge: challenge.clone(),
                        error,
                    };
                    return Step::Authorize { status, challenge };
                }
                Phase::Json { refused } => {
                    exchange.phase = Phase::Json { refused };
                    let limit = match refused {
                        Some(_) => exchange.limit.min(MAX_ERROR_BODY),
                        None => exchange.limit,
                    };
                    return Step::ReadBody { limit };
                }
                Phase::Delivering => {
                    if let Some(body) = exchange.body.take() {
                        exchange.phase = Phase::Delivering;
                        return Step::Deliver(body);
                    }
                    // Nothing else comes for this request. (Should the body have answered it
                    // after all, as a batch would, the client has already completed it.)
                    return match self.on_exchange_end(exchange, None) {
                        StreamEnd::Failed(e) => self.fail(exchange, e),
                        _ => self.done(exchange),
                    };
                }
                Phase::Stream => {
                    exchange.phase = Phase::Stream;
                    let Some(decoder) = exchange.decoder.as_mut() else {
                        return Step::ReadStream;
                    };
                    match decoder.poll_event() {
                        Some(SseItem::Event(event)) => {
                            if Self::event_message(&event).is_some() {
                                self.on_exchange_message(exchange, event.data.as_bytes());
                                return Step::Deliver(event.data.into_bytes());
                            }
                        }
                        Some(SseItem::Overflow) => {
                            // Not buffered, so its length past the limit is unknown.
                            let limit = exchange.limit;
                            return self.fail(exchange, HttpError::TooLarge { len: None, limit });
                        }
                        // The answer is in; a server that keeps the stream open is not waited
                        // for.
                        None if exchange.answered() => return self.done(exchange),
                        None => return Step::ReadStream,
                    }
                }
                Phase::Waiting(after, request) => {
                    exchange.phase = Phase::Resuming(request);
                    return Step::Wait(after);
                }
                Phase::Resuming(request) => {
                    exchange.phase = Phase::Head(Method::Get);
                    return Step::Send(request);
                }
                Phase::Done => return self.done(exchange),
                Phase::Failed(e) => {
                    exchange.phase = Phase::Failed(e.clone());
                    return Step::Failed(e);
                }
            }
        }
    }

    /// The status and headers of the response to the request [`Step::Send`] gave.
    pub fn on_head<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        exchange: &mut Exchange,
        status: u16,
        headers: &[(K, V)],
    ) {
        let method = match exchange.phase {
            Phase::Head(method) => method,
            _ => return,
        };
        match self.on_redirect(exchange, method, status, headers) {
            Ok(Some(_)) => {
                exchange.phase = Phase::Redirected(method);
                return;
            }
            Ok(None) => {}
            Err(e) => {
                exchange.phase = Phase::Failed(e);
                return;
            }
        }
        if method == Method::Get {
            exchange.phase = match self.on_resume_response(status, headers) {
                Ok(()) => Phase::Stream,
                Err(e) => Phase::Failed(e),
            };
            return;
        }
        exchange.phase = match self.on_exchange_response(exchange, status, headers) {
            Ok(Body::None) => Phase::Done,
            Ok(Body::Json) => Phase::Json { refused: None },
            Ok(Body::Refused { status }) => Phase::Json {
                refused: Some(status),
            },
            Ok(Body::EventStream) => {
                exchange.decoder = Some(SseDecoder::with_limit(exchange.limit));
                Phase::Stream
            }
            // A late 404 from a replaced session: a request is POSTed again, in the current
            // one; a notification or response is dropped (it belonged to that session).
            Err(HttpError::Resend { .. }) => match exchange.kind {
                TransmitKind::Request { .. } => Phase::Post,
                _ => Phase::Done,
            },
            Err(error @ (HttpError::Unauthorized { .. } | HttpError::Forbidden { .. }))
                if exchange.oauth =>
            {
                let challenge = match &error {
                    HttpError::Unauthorized { challenge, .. }
                    | HttpError::Forbidden { challenge, .. } => challenge.clone(),
                    _ => None,
                };
                Phase::Authorizing {
                    status,
                    challenge,
                    error,
                }
            }
            Err(e) => Phase::Failed(e),
        };
    }

    /// The OAuth flow's verdict on [`Step::Authorize`]: `true` sends the request again (with the
    /// new token: [`Step::Prepare`] comes first), `false` fails it with its status.
    pub fn on_authorized(&mut self, exchange: &mut Exchange, again: bool) {
        if let Phase::Authorizing { error, .. } = std::mem::take(&mut exchange.phase) {
            exchange.phase = if again {
                Phase::Post
            } else {
                Phase::Failed(error)
            };
        }
    }

    /// The whole body [`Step::ReadBody`] asked for.
    pub fn on_body(&mut self, exchange: &mut Exchange, body: Vec<u8>) {
        let Phase::Json { refused } = exchange.phase else {
            return;
        };
        match refused {
            None => {
                self.on_exchange_message(exchange, &body);
                exchange.body = Some(body);
                exchange.phase = Phase::Delivering;
            }
            // The refusal may be the request's JSON-RPC answer (a modern server's error).
            Some(status) => match self.on_error_body(exchange, status, &body) {
                Ok(()) => {
                    exchange.body = Some(body);
                    exchange.phase = Phase::Delivering;
                }
                Err(e) => {
                    exchange.body = Some(body);
                    exchange.phase = Phase::Failed(e);
                }
            },
        }
    }

    /// The body [`Step::ReadBody`] asked for is longer than its limit (`len`: as far as it was
    /// read, past the limit): the request fails with [`HttpError::TooLarge`].
    pub fn on_oversized(&mut self, exchange: &mut Exchange, len: u64) {
        if !self.on_unreadable(exchange) {
            exchange.phase = Phase::Failed(HttpError::TooLarge {
                len: Some(len),
                limit: exchange.limit,
            });
        }
    }

    /// The body [`Step::ReadBody`] asked for could not be read (too long, or the connection
    /// failed): whether the exchange goes on without it. A refusal's body only might have been
    /// the answer, so the status is the verdict (`true`); a JSON answer that cannot be read
    /// fails the request with what went wrong (`false`: the driver's error).
    pub fn on_unreadable(&mut self, exchange: &mut Exchange) -> bool {
        if matches!(exchange.phase, Phase::Json { refused: Some(_) }) {
            self.on_body(exchange, Vec::new());
            return true;
        }
        false
    }

    /// A part of the event stream [`Step::ReadStream`] asked for.
    pub fn on_data(&mut self, exchange: &mut Exchange, data: &[u8]) {
        if let Some(decoder) = exchange.decoder.as_mut() {
            decoder.feed(data);
        }
    }

    /// The event stream ended (or a read failed, which is resumed in the same way): done,
    /// failed, or resumed after a wait, as `on_exchange_end` says.
    pub fn on_end(&mut self, exchange: &mut Exchange) {
        let Some(mut decoder) = exchange.decoder.take() else {
            return;
        };
        decoder.finish();
        let plan = self.on_exchange_end(exchange, Some(&decoder));
        exchange.decoder = Some(decoder);
        exchange.phase = match plan {
            StreamEnd::Done => Phase::Done,
            StreamEnd::Failed(e) => Phase::Failed(e),
            StreamEnd::Resume { after, request } => Phase::Waiting(after, request),
        };
    }

    fn fail(&self, exchange: &mut Exchange, e: HttpError) -> Step {
        exchange.phase = Phase::Failed(e.clone());
        Step::Failed(e)
    }

    fn done(&self, exchange: &mut Exchange) -> Step {
        exchange.phase = Phase::Done;
        Step::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::fixtures::*;
    use crate::http::HttpConfig;

    const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

    fn call() -> Transmit {
        transmit(request(1, "tools/call"))
    }

    fn sent(step: Step) -> HttpRequest {
        match step {
            Step::Send(request) => request,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    fn json() -> Vec<(String, String)> {
        h(&[("content-type", "application/json")])
    }

    fn sse() -> Vec<(String, String)> {
        h(&[("content-type", "text/event-stream")])
    }

    #[test]
    fn a_json_answer_is_sent_read_delivered_and_done() {
        let mut r = rules();
        let t = call();
        let mut ex = r.start(&t, 1024, false);
        let post = sent(r.step(&mut ex, &t));
        assert_eq!(post.method, Method::Post);
        r.on_head(&mut ex, 200, &json());
        assert!(matches!(
            r.step(&mut ex, &t),
            Step::ReadBody { limit: 1024 }
        ));
        r.on_body(&mut ex, ANSWER.to_vec());
        assert!(matches!(r.step(&mut ex, &t), Step::Deliver(m) if m == ANSWER));
        assert!(matches!(r.step(&mut ex, &t), Step::Done));
        assert!(ex.answered());
    }

    #[test]
    fn a_redirect_is_followed_then_the_stream_is_read_until_the_answer() {
        let mut r = rules();
        let t = call();
        let mut ex = r.start(&t, 1024, false);
        sent(r.step(&mut ex, &t));
        r.on_head(&mut ex, 307, &h(&[("location", "/mcp/")]));
        let again = sent(r.step(&mut ex, &t));
        assert_eq!(again.url, "http://127.0.0.1:1/mcp/");
        assert_eq!(again.method, Method::Post);
        r.on_head(&mut ex, 200, &sse());
        assert!(matches!(r.step(&mut ex, &t), Step::ReadStream));
        let mut data = b"id: 1\ndata:\n\n".to_vec();
        data.extend_from_slice(b"data: ");
        data.extend_from_slice(ANSWER);
        data.extend_from_slice(b"\n\n");
        r.on_data(&mut ex, &data);
        assert!(matches!(r.step(&mut ex, &t), Step::Deliver(m) if m == ANSWER));
        // Answered: the stream is not read further, though the server keeps it open.
        assert!(matches!(r.step(&mut ex, &t), Step::Done));
        assert_eq!(ex.redirects(), 1);
    }

    #[test]
    fn a_stream_that_ends_early_is_resumed_after_its_retry() {
        let mut r = rules();
        let t = call();
        let mut ex = r.start(&t, 1024, false);
        sent(r.step(&mut ex, &t));
        r.on_head(&mut ex, 200, &sse());
        assert!(matches!(r.step(&mut ex, &t), Step::ReadStream));
        r.on_data(&mut ex, b"id: e7\nretry: 250\ndata:\n\n");
        assert!(matches!(r.step(&mut ex, &t), Step::ReadStream));
        r.on_end(&mut ex);
        assert!(matches!(r.step(&mut ex, &t), Step::Wait(d) if d == Duration::from_millis(250)));
        let get = sent(r.step(&mut ex, &t));
        assert_eq!(get.method, Method::Get);
        assert!(get
            .headers
            .iter()
            .any(|(k, v)| k == "Last-Event-ID" && v == "e7"));
        r.on_head(&mut ex, 200, &sse());
        let mut data = b"data: ".to_vec();
        data.extend_from_slice(ANSWER);
        data.extend_from_slice(b"\n\n");
        assert!(matches!(r.step(&mut ex, &t), Step::ReadStream));
        r.on_data(&mut ex, &data);
        assert!(matches!(r.step(&mut ex, &t), Step::Deliver(_)));
        assert!(matches!(r.step(&mut ex, &t), Step::Done));
        assert_eq!(ex.resumes(), 1);
    }

    #[test]
    fn a_401_asks_the_oauth_flow_and_sends_again_or_fails() {
        let challenge = h(&[("www-authenticate", "Bearer")]);
        let mut r = rules();
        let t = call();
        // Without OAuth, the status is the verdict.
        let mut ex = r.start(&t, 1024, false);
        sent(r.step(&mut ex, &t));
        r.on_head(&mut ex, 401, &challenge);
        assert!(matches!(
            r.step(&mut ex, &t),
            Step::Failed(HttpError::Unauthorized { .. })
        ));
        // With it: the token first, then the verdict, then the POST again.
        let mut ex = r.start(&t, 1024, true);
        assert!(matches!(r.step(&mut ex, &t), Step::Prepare));
        sent(r.step(&mut ex, &t));
        r.on_head(&mut ex, 401, &challenge);
        assert!(matches!(
            r.step(&mut ex, &t),
            Step::Authorize { status: 401, challenge: Some(c) } if c == "Bearer"
        ));
        r.on_authorized(&mut ex, true);
        assert!(matches!(r.step(&mut ex, &t), Step::Prepare));
        sent(r.step(&mut ex, &t));
        r.on_head(&mut ex, 403, &challenge);
        assert!(matches!(
            r.step(&mut ex, &t),
            Step::Authorize { status: 403, .. }
        ));
        r.on_authorized(&mut ex, false);
        assert!(matches!(
            r.step(&mut ex, &t),
            Step::Failed(HttpError::Forbidden { .. })
        ));
    }

    #[test]
    fn an_event_over_the_limit_fails_the_request() {
        let mut r = rules();
        let t = call();
        let mut ex = r.start(&t, 16, false);
        sent(r.step(&mut ex, &t));
        r.on_head(&mut ex, 200, &sse());
        assert!(matches!(r.step(&mut ex, &t), Step::ReadStream));
        r.on_data(
            &mut ex,
            b"data: 0123456789012345678901234567890123456789\n\n",
        );
        assert!(matches!(
            r.step(&mut ex, &t),
            Step::Failed(HttpError::TooLarge {
                len: None,
                limit: 16
            })
        ));
        let mut ex = r.start(&t, 16, false);
        sent(r.step(&mut ex, &t));
        r.on_head(&mut ex, 200, &json());
        r.on_oversized(&mut ex, 17);
        assert!(matches!(
            r.step(&mut ex, &t),
            Step::Failed(HttpError::TooLarge {
                len: Some(17),
                limit: 16
            })
        ));
    }

    #[test]
    fn a_late_404_from_a_replaced_session_posts_again_in_the_current_one() {
        let mut r = HttpRules::new(HttpConfig::new("http://127.0.0.1:1/mcp"));
        open_session(&mut r, 0, "s1");
        let t = call();
        let mut ex = r.start(&t, 1024, false);
        let first = sent(r.step(&mut ex, &t));
        assert!(first.headers.iter().any(|(_, v)| v == "s1"));
        // Meanwhile the session was renewed.
        open_session(&mut r, 9, "s2");
        r.on_head(&mut ex, 404, NO_HEADERS);
        let again = sent(r.step(&mut ex, &t));
        assert!(again.headers.iter().any(|(_, v)| v == "s2"));
    }

    #[test]
    fn a_refusal_is_the_answer_when_its_body_is_the_requests_error() {
        let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#;
        let mut r = rules();
        let t = call();
        let mut ex = r.start(&t, 1 << 20, false);
        sent(r.step(&mut ex, &t));
        r.on_head(&mut ex, 400, &json());
        assert!(matches!(
            r.step(&mut ex, &t),
            Step::ReadBody { limit } if limit == MAX_ERROR_BODY
        ));
        r.on_body(&mut ex, error.to_vec());
        assert!(matches!(r.step(&mut ex, &t), Step::Deliver(m) if m == error));
        assert!(matches!(r.step(&mut ex, &t), Step::Done));
        // Junk: the status is the verdict, and the body goes in the message.
        let mut ex = r.start(&t, 1 << 20, false);
        sent(r.step(&mut ex, &t));
        r.on_head(&mut ex, 400, &json());
        r.step(&mut ex, &t);
        r.on_body(&mut ex, b"<html>".to_vec());
        assert!(matches!(
            r.step(&mut ex, &t),
            Step::Failed(HttpError::Status { status: 400, .. })
        ));
        assert_eq!(ex.error_body(), Some(&b"<html>"[..]));
    }
}
