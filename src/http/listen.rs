//! The standalone event stream: the `GET` a client listens on for what the server sends outside
//! any request, followed across its reconnections.

use super::error::HttpError;
use super::exchange::ORDER_WAIT;
use super::wire::{is_header_value, HttpRequest};
use super::Step;
use super::{HttpRules, StandaloneStream};
use crate::session::transmit::TransmitKind;
use crate::sse::{SseDecoder, SseEvent, SseItem};
use std::time::Duration;

/// The standalone event stream (`HttpRules::listen`), as the rules follow it across its
/// reconnections: the session it belongs to, the last event id and `retry` seen, how many
/// streams in a row carried no message.
#[derive(Debug)]
pub struct Listening {
    carried: Option<std::sync::Arc<str>>,
    last_event_id: Option<String>,
    retry: Option<Duration>,
    /// Messages on the current stream.
    messages: u64,
    /// Streams in a row that ended without a message.
    idle_streams: u32,
    /// Where the machine is ([`HttpRules::listen_step`]).
    phase: Phase,
    /// The `GET` of the next connection.
    request: Option<HttpRequest>,
    /// The current stream's decoder.
    decoder: Option<SseDecoder>,
    /// The most bytes of one event.
    limit: usize,
    /// Whether the driver runs the OAuth flow.
    oauth: bool,
}

/// Where the standalone stream's machine is.
#[derive(Debug, Clone, Default)]
enum Phase {
    /// Before a connection: the token (with OAuth), then the `GET`.
    #[default]
    Connect,
    /// The token is current: the `GET` goes next.
    Prepared,
    /// The `GET` went out; its status and headers are awaited.
    Head,
    /// A `401` or `403` waits for the OAuth flow's verdict.
    Authorizing {
        status: u16,
        challenge: Option<String>,
    },
    /// The stream is being read.
    Stream,
    /// The stream ended: wait, then reconnect.
    Waiting(Duration),
    /// No more listening.
    Stopped,
}

impl Listening {
    /// How many streams in a row ended without carrying a message.
    pub fn idle_streams(&self) -> u32 {
        self.idle_streams
    }
}

impl HttpRules {
    /// Whether a driver asks `listen` once the message `kind` went out (was
    /// accepted, or waited for as long as [`order_wait`](Self::order_wait) says): after
    /// `notifications/initialized`, which ends the handshake.
    pub fn listens_after(kind: &TransmitKind) -> bool {
        matches!(kind, TransmitKind::Notification { method } if method == "notifications/initialized")
    }

    /// How long the messages after the handshake wait for the standalone stream to be open —
    /// its `GET`'s status, whatever it is — before they go: [`ORDER_WAIT`], once a session.
    ///
    /// > "The server MAY send JSON-RPC requests and notifications on the stream." — MCP
    /// > 2025-11-25, Transports § Streamable HTTP § Listening for Messages from the Server
    ///
    /// A server may do so as soon as the first request after the handshake comes (a tool that
    /// asks the client for elicitation while it runs), and one that has no stream open yet drops
    /// the message (the TypeScript SDK's server does: "it's ok to discard if no stream"), leaving
    /// the request waiting for an answer to a question nobody heard. So the stream opens first:
    /// one round trip, once a session.
    pub fn listen_wait() -> Duration {
        ORDER_WAIT
    }

    fn listen_now(&self) -> Option<(HttpRequest, Listening)> {
        let listening = Listening {
            carried: self.session_id.clone(),
            last_event_id: None,
            retry: None,
            messages: 0,
            idle_streams: 0,
            phase: Phase::Connect,
            request: None,
            decoder: None,
            limit: usize::MAX,
            oauth: false,
        };
        Some((self.listen_request(&listening)?, listening))
    }

    fn listen_request(&self, listening: &Listening) -> Option<HttpRequest> {
        let wanted = match self.config.standalone_stream {
            StandaloneStream::Always => true,
            StandaloneStream::WhenAnswering => self.answering,
            StandaloneStream::Never => false,
        };
        if !wanted || self.renewing || self.protocol_version.is_none() {
            return None;
        }
        // A stream of a session that has since been replaced is not reopened: the new
        // handshake opens its own.
        if listening.carried != self.session_id {
            return None;
        }
        Some(self.event_stream_get(listening.last_event_id.as_deref()))
    }

    /// Reads the answer to the standalone stream's `GET`: a 2xx event stream is read; anything
    /// else (405: the server offers none; 404, another status, another content type) means no
    /// stream, and the client stops listening. Nothing of it reaches a request.
    pub(super) fn on_listen_response<K: AsRef<str>, V: AsRef<str>>(
        &self,
        status: u16,
        headers: &[(K, V)],
    ) -> Result<(), HttpError> {
        self.on_resume_response(status, headers)
    }

    /// Notes an event read from the standalone stream; returns the JSON-RPC message it carries,
    /// if any (see [`event_message`](Self::event_message)).
    pub(super) fn on_listen_event<'e>(
        &self,
        listening: &mut Listening,
        event: &'e SseEvent,
    ) -> Option<&'e [u8]> {
        let message = Self::event_message(event)?;
        listening.messages += 1;
        Some(message)
    }

    /// The standalone stream ended (`decoder` holds its last event id and `retry`): the `GET`
    /// that reconnects (with `Last-Event-ID` when the server gave event ids), after the server's
    /// `retry` or the default wait; `None` to stop listening: the session was replaced or is being
    /// renewed, or [`HttpConfig::max_resume_attempts`] streams in a row ended without a message
    /// (a server that closes every stream at once is not reconnected to for ever).
    ///
    /// > "If the client … the SSE stream is disconnected … the client MAY resume by issuing a GET
    /// > with the Last-Event-ID header" / "the client MUST respect the retry field" — MCP 2025-11-25,
    /// > Transports § Streamable HTTP § Resumability and Redelivery
    ///
    /// [`HttpConfig::max_resume_attempts`]: crate::http::HttpConfig::max_resume_attempts
    pub(super) fn on_listen_end(
        &self,
        listening: &mut Listening,
        decoder: &SseDecoder,
    ) -> Option<(Duration, HttpRequest)> {
        if std::mem::take(&mut listening.messages) > 0 {
            listening.idle_streams = 0;
        } else {
            listening.idle_streams += 1;
        }
        if let Some(id) = decoder.last_event_id() {
            // One that cannot be sent as a header value is not resumed from.
            listening.last_event_id = is_header_value(id).then(|| id.to_owned());
        }
        if let Some(retry) = decoder.retry() {
            listening.retry = Some(retry);
        }
        if listening.idle_streams > self.config.max_resume_attempts {
            return None;
        }
        let request = self.listen_request(listening)?;
        Some((
            listening.retry.unwrap_or(self.config.default_retry),
            request,
        ))
    }
}

/// The standalone stream as one machine, like a request's exchange ([`HttpRules::step`]).
impl HttpRules {
    /// The standalone event stream, when the client is to listen on one
    /// ([`HttpConfig::standalone_stream`]): after a legacy handshake (the `initialize` answer was
    /// read; a driver asks once `notifications/initialized` went out, see
    /// [`listens_after`](Self::listens_after)), never while the session is being renewed, never
    /// in the modern era. A machine: drive it with [`listen_step`](Self::listen_step). `limit`
    /// caps each event; `oauth` says whether the driver runs the OAuth flow.
    ///
    /// [`HttpConfig::standalone_stream`]: crate::http::HttpConfig::standalone_stream
    pub fn start_listening(&self, limit: usize, oauth: bool) -> Option<Listening> {
        let (request, mut listening) = self.listen_now()?;
        listening.request = Some(request);
        listening.limit = limit;
        listening.oauth = oauth;
        Some(listening)
    }

    /// What to do next for the standalone stream: [`Step::Prepare`], [`Step::Send`] (its status
    /// and headers to [`listen_head`](Self::listen_head)), [`Step::Authorize`] (the verdict to
    /// [`listen_authorized`](Self::listen_authorized)), [`Step::ReadStream`] (each part to
    /// [`listen_data`](Self::listen_data), the end to [`listen_end`](Self::listen_end)),
    /// [`Step::Deliver`] (a message for the session; it answers none of the client's requests),
    /// [`Step::Dropped`], [`Step::Wait`] before reconnecting, and [`Step::Done`] when the client
    /// stops listening: the server offers no stream, or it cannot be reached, or the session was
    /// replaced, or too many streams in a row carried nothing.
    pub fn listen_step(&mut self, listening: &mut Listening) -> Step {
        loop {
            match std::mem::take(&mut listening.phase) {
                Phase::Connect => {
                    listening.phase = Phase::Prepared;
                    if listening.oauth {
                        return Step::Prepare;
                    }
                }
                Phase::Prepared => {
                    let Some(request) = listening.request.as_mut() else {
                        listening.phase = Phase::Stopped;
                        return Step::Done;
                    };
                    // A token that expired while the stream was open was refreshed: the
                    // reconnection carries the current one.
                    if listening.oauth {
                        self.refresh_authorization(request);
                    }
                    listening.phase = Phase::Head;
                    return Step::Send(request.clone());
                }
                Phase::Head | Phase::Stopped => {
                    listening.phase = Phase::Stopped;
                    return Step::Done;
                }
                Phase::Authorizing { status, challenge } => {
                    listening.phase = Phase::Authorizing {
                        status,
                        challenge: challenge.clone(),
                    };
                    return Step::Authorize { status, challenge };
                }
                Phase::Stream => {
                    listening.phase = Phase::Stream;
                    let Some(decoder) = listening.decoder.as_mut() else {
                        return Step::ReadStream;
                    };
                    match decoder.poll_event() {
                        Some(SseItem::Event(event)) => {
                            if self.on_listen_event(listening, &event).is_some() {
                                return Step::Deliver(event.data.into_bytes());
                            }
                        }
                        // Not buffered, so its length past the limit is unknown.
                        Some(SseItem::Overflow) => {
                            return Step::Dropped(HttpError::TooLarge {
                                len: None,
                                limit: listening.limit,
                            })
                        }
                        None => return Step::ReadStream,
                    }
                }
                Phase::Waiting(after) => {
                    listening.phase = Phase::Connect;
                    return Step::Wait(after);
                }
            }
        }
    }

    /// The status and headers of the response to the standalone stream's `GET`: a 2xx event
    /// stream is read; a `401` or `403` goes to the OAuth flow (when the driver runs it); any
    /// other answer (405: the server offers none) stops the listening.
    pub fn listen_head<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        listening: &mut Listening,
        status: u16,
        headers: &[(K, V)],
    ) {
        if !matches!(listening.phase, Phase::Head) {
            return;
        }
        listening.phase = match self.on_listen_response(status, headers) {
            Ok(()) => {
                listening.decoder = Some(SseDecoder::with_limit(listening.limit));
                Phase::Stream
            }
            Err(
                HttpError::Unauthorized { challenge, .. } | HttpError::Forbidden { challenge, .. },
            ) if listening.oauth => Phase::Authorizing { status, challenge },
            Err(_) => Phase::Stopped,
        };
    }

    /// The OAuth flow's verdict on [`Step::Authorize`]: `true` connects again (the token first),
    /// `false` stops listening.
    pub fn listen_authorized(&mut self, listening: &mut Listening, again: bool) {
        if matches!(listening.phase, Phase::Authorizing { .. }) {
            listening.phase = if again {
                Phase::Connect
            } else {
                Phase::Stopped
            };
        }
    }

    /// A part of the stream [`Step::ReadStream`] asked for.
    pub fn listen_data(&mut self, listening: &mut Listening, data: &[u8]) {
        if let Some(decoder) = listening.decoder.as_mut() {
            decoder.feed(data);
        }
    }

    /// The stream ended (or a read failed): reconnect after a wait, or stop, as
    /// `on_listen_end` says.
    pub fn listen_end(&mut self, listening: &mut Listening) {
        let Some(mut decoder) = listening.decoder.take() else {
            return;
        };
        decoder.finish();
        listening.phase = match self.on_listen_end(listening, &decoder) {
            Some((after, request)) => {
                listening.request = Some(request);
                Phase::Waiting(after)
            }
            None => Phase::Stopped,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::error::Body;
    use crate::http::fixtures::*;
    use crate::http::{HttpConfig, Method};
    use crate::session::transmit::Transmit;

    /// A legacy handshake whose `initialize` declared `capabilities`, answered with session `sid`.
    fn handshake(r: &mut HttpRules, capabilities: &str, sid: &str) {
        let init = Transmit {
            payload: format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{capabilities},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
            )
            .into_bytes(),
            ..transmit(request(0, "initialize"))
        };
        let (_, mut ex) = r.begin(&init);
        assert_eq!(
            r.on_exchange_response(
                &ex,
                200,
                &h(&[
                    ("content-type", "application/json"),
                    ("mcp-session-id", sid),
                ]),
            ),
            Ok(Body::Json)
        );
        assert!(r.on_exchange_message(
            &mut ex,
            br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#
        ));
    }

    fn event(data: &str) -> SseEvent {
        let mut d = SseDecoder::new();
        d.feed(format!("data: {data}\n\n").as_bytes());
        match d.poll_event() {
            Some(crate::sse::SseItem::Event(e)) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_standalone_stream_opens_after_a_handshake_that_declared_capabilities() {
        let mut r = rules();
        assert!(r.listen_now().is_none(), "not before the handshake");
        handshake(&mut r, "{}", "s1");
        assert!(
            r.listen_now().is_none(),
            "a client that answers nothing does not listen by default"
        );
        handshake(&mut r, r#"{"elicitation":{"form":{}}}"#, "s1");
        let (get, _) = r.listen_now().expect("listens");
        assert_eq!(get.method, Method::Get);
        assert_eq!(get.body, None);
        assert_eq!(
            get.headers,
            hr(&[
                ("Accept", "text/event-stream"),
                ("Mcp-Session-Id", "s1"),
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Authorization", "Bearer t"),
            ])
        );
        // Its answer: an event stream, or nothing (405: the server offers none; any other).
        let sse = h(&[("content-type", "text/event-stream")]);
        assert_eq!(r.on_listen_response(200, &sse), Ok(()));
        assert!(r.on_listen_response(405, NO_HEADERS).is_err());
        assert!(r.on_listen_response(404, &sse).is_err());
        assert!(r
            .on_listen_response(200, &h(&[("content-type", "application/json")]))
            .is_err());

        // The setting decides.
        for (setting, declared, listens) in [
            (StandaloneStream::Always, "{}", true),
            (StandaloneStream::Never, r#"{"roots":{}}"#, false),
            (StandaloneStream::WhenAnswering, r#"{"roots":{}}"#, true),
        ] {
            let mut config = HttpConfig::new("http://127.0.0.1:1/mcp");
            config.standalone_stream = setting;
            let mut r = HttpRules::new(config);
            handshake(&mut r, declared, "s");
            assert_eq!(r.listen_now().is_some(), listens, "{setting:?} {declared}");
        }

        // Never while the session is being renewed, and never in the modern era (no handshake).
        assert!(matches!(
            r.on_response(&request(5, "tools/list"), Some("s1"), 404, NO_HEADERS),
            Err(HttpError::SessionExpired { .. })
        ));
        assert!(r.listen_now().is_none());
    }

    #[test]
    fn the_standalone_stream_reconnects_with_its_last_event_id_and_stops_when_idle() {
        let mut r = rules();
        handshake(&mut r, r#"{"sampling":{}}"#, "s1");
        let (_, mut listening) = r.listen_now().unwrap();
        // A stream with events and a `retry`: reconnect after it, from the last id.
        let mut d = SseDecoder::new();
        d.feed(b"id: 7\nretry: 300\ndata: \n\n");
        assert_eq!(
            r.on_listen_event(&mut listening, &event("")),
            None,
            "priming"
        );
        let message = event(r#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#);
        assert!(r.on_listen_event(&mut listening, &message).is_some());
        let (after, get) = r.on_listen_end(&mut listening, &d).expect("reconnects");
        assert_eq!(after, Duration::from_millis(300));
        assert!(get.headers.contains(&("Last-Event-ID".into(), "7".into())));
        assert_eq!(listening.idle_streams(), 0);
        // Streams that carry nothing: reconnected to `max_resume_attempts` times, then not.
        let empty = SseDecoder::new();
        for n in 1..=r.config().max_resume_attempts {
            let (after, get) = r.on_listen_end(&mut listening, &empty).expect("again");
            assert_eq!(after, Duration::from_millis(300), "the retry is kept");
            assert!(get.headers.contains(&("Last-Event-ID".into(), "7".into())));
            assert_eq!(listening.idle_streams(), n);
        }
        assert!(r.on_listen_end(&mut listening, &empty).is_none());

        // A stream of a session since replaced is not reopened.
        let (_, mut old) = r.listen_now().unwrap();
        handshake(&mut r, r#"{"sampling":{}}"#, "s2");
        assert!(r.on_listen_end(&mut old, &empty).is_none());
        assert!(r.listen_now().is_some(), "the new session listens anew");
    }

    #[test]
    fn the_standalone_stream_as_a_machine_reads_reconnects_and_stops() {
        let sse = h(&[("content-type", "text/event-stream")]);
        let mut r = rules();
        handshake(&mut r, r#"{"sampling":{}}"#, "s1");
        let mut l = r.start_listening(64, false).expect("listens");
        let Step::Send(get) = r.listen_step(&mut l) else {
            panic!("a GET first")
        };
        assert_eq!(get.method, Method::Get);
        r.listen_head(&mut l, 200, &sse);
        assert!(matches!(r.listen_step(&mut l), Step::ReadStream));
        r.listen_data(
            &mut l,
            b"id: 4\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n",
        );
        assert!(matches!(r.listen_step(&mut l), Step::Deliver(m) if m.starts_with(b"{")));
        // An event over the limit is reported, and the stream read on.
        r.listen_data(&mut l, &[b'x'; 100]);
        r.listen_data(&mut l, b"\n\n");
        assert!(matches!(
            r.listen_step(&mut l),
            Step::Dropped(HttpError::TooLarge {
                len: None,
                limit: 64
            })
        ));
        assert!(matches!(r.listen_step(&mut l), Step::ReadStream));
        r.listen_end(&mut l);
        assert!(matches!(r.listen_step(&mut l), Step::Wait(_)));
        let Step::Send(again) = r.listen_step(&mut l) else {
            panic!("the reconnection")
        };
        assert!(again
            .headers
            .iter()
            .any(|(k, v)| k == "Last-Event-ID" && v == "4"));
        // 405: the server offers no stream; the client stops listening.
        r.listen_head(&mut l, 405, NO_HEADERS);
        assert!(matches!(r.listen_step(&mut l), Step::Done));
    }

    #[test]
    fn the_standalone_stream_asks_the_oauth_flow_about_a_401() {
        let mut r = rules();
        handshake(&mut r, r#"{"sampling":{}}"#, "s1");
        let mut l = r.start_listening(64, true).expect("listens");
        assert!(matches!(r.listen_step(&mut l), Step::Prepare));
        assert!(matches!(r.listen_step(&mut l), Step::Send(_)));
        r.listen_head(&mut l, 401, &h(&[("www-authenticate", "Bearer")]));
        assert!(matches!(
            r.listen_step(&mut l),
            Step::Authorize { status: 401, challenge: Some(c) } if c == "Bearer"
        ));
        r.listen_authorized(&mut l, true);
        assert!(matches!(r.listen_step(&mut l), Step::Prepare));
        assert!(matches!(r.listen_step(&mut l), Step::Send(_)));
        r.listen_head(&mut l, 403, NO_HEADERS);
        r.listen_authorized(&mut l, false);
        assert!(matches!(r.listen_step(&mut l), Step::Done));
    }
}
