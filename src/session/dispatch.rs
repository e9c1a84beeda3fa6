//! What the server sent: each message classified once and handed on — answers to their pending
//! requests, server requests answered (ping) or refused (-32601), notifications noted or counted,
//! and everything unusable counted and reported as a [`Warning`].

use super::{Core, Event, Transmit, TransmitKind};
use crate::error::{RequestError, Warning};
use crate::framing::Frame;
use crate::jsonrpc::{self, RawMessage, RequestId, RpcError};
use crate::methods::{ServerMessage, ServerRequestId, ServerRequestMethod};
use crate::session::State;
use crate::text;
use serde_json::json;
use serde_json::value::RawValue;
use std::time::Instant;

/// The longest server request id (as JSON text, in bytes) the session answers; a request with a
/// longer one is left unanswered, so that a server cannot make the client echo huge ids.
pub const MAX_ECHOED_ID: usize = 256;

/// The longest method name quoted back in a -32601 "Method not found" answer.
pub const MAX_ECHOED_METHOD: usize = 128;

impl Core {
    pub(super) fn handle_frame(&mut self, frame: Frame<'_>, now: Instant) {
        match frame {
            Frame::Line(line) => {
                let ignored = self.junk.ignored;
                self.handle_message(line, None, now);
                self.after_line(line, ignored, now);
            }
            Frame::Oversized { len, id_hint } => {
                self.handle_oversized(len, id_hint.as_deref(), now)
            }
        }
    }

    /// A line over the limit was discarded. Fail the request it answers when that can be told:
    /// its id was readable, or only one request is pending.
    pub(super) fn handle_oversized(&mut self, len: u64, id_hint: Option<&str>, now: Instant) {
        let target = match id_hint {
            // An id that is not one of ours: a server request, or a stray answer.
            Some(id) => id
                .parse::<u64>()
                .ok()
                .and_then(|wire| self.pending.by_wire(wire)),
            None => self.only_pending(),
        };
        self.oversized(len, self.config.frame_limit, target, now);
    }

    /// The rule for every message over a limit, wherever it was found (a stdio line, an HTTP body,
    /// an SSE event): it is counted and reported, and `target`, the request it answers when that
    /// is known, fails with [`RequestError::TooLarge`] at once rather than at its timeout.
    pub(super) fn oversized(
        &mut self,
        len: u64,
        limit: usize,
        target: Option<RequestId>,
        now: Instant,
    ) {
        self.stats.messages_ignored += 1;
        self.events
            .push_back(Event::Warning(Warning::Oversized { len, limit }));
        if let Some(id) = target {
            self.complete(id, Err(RequestError::TooLarge { len, limit }), now);
        }
    }

    /// The one pending request, when there is exactly one.
    pub(super) fn only_pending(&self) -> Option<RequestId> {
        match self.pending.len() {
            1 => self.pending.keys().next().copied(),
            _ => None,
        }
    }

    /// One whole message; `exchange`: the wire id of the request whose response carried it (an
    /// HTTP body or event), when a transport knows it.
    pub(super) fn handle_message(&mut self, message: &[u8], exchange: Option<u64>, now: Instant) {
        // A BOM or surrounding whitespace around a whole message is tolerated.
        let message = message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message);
        self.mending(message, exchange, now, Self::read_message);
        // A message on a request's own response that says at its ends it is that request's result
        // was taken for its answer by the transport, which reads no further
        // ([`result_id`](crate::jsonrpc::result_id)): when it was not one after all (not JSON,
        // not JSON-RPC), the request fails now rather than at its deadline.
        let Some(wire) = exchange else { return };
        if crate::jsonrpc::result_id(message) != Some(wire) {
            return;
        }
        if let Some(id) = self.pending.by_wire(wire) {
            let method = self.pending.get(&id).map(|p| p.method.to_string());
            let failure = RequestError::InvalidResult {
                method: method.unwrap_or_default(),
                reason: "its answer could not be read as a JSON-RPC result".into(),
            };
            self.complete(id, Err(failure), now);
        }
    }

    /// Reads `message` with `read`; when it is not JSON, mends its text (invalid UTF-8, lone
    /// surrogate escapes: see [`text`]) and reads it again. `read` does nothing but return the
    /// parse error when the message is not JSON, so the mended copy is read as if it had come so.
    ///
    /// > "JSON-RPC messages **MUST** be UTF-8 encoded." — MCP 2025-11-25, Transports; a server
    /// > that breaks this still gets its answer read, with U+FFFD where the bad text was.
    fn mending(
        &mut self,
        message: &[u8],
        exchange: Option<u64>,
        now: Instant,
        read: impl Fn(&mut Self, &[u8], Option<u64>, Instant) -> serde_json::Result<()>,
    ) {
        let Err(error) = read(self, message, exchange, now) else {
            return;
        };
        let Some((mended, what)) = text::repair(message) else {
            return self.not_json(message, &error);
        };
        // The warning goes before what reading the message caused (its request's answer).
        let at = self.events.len();
        match read(self, mended.as_bytes(), exchange, now) {
            Ok(()) => {
                self.stats.repaired += 1;
                let warning = Warning::Repaired {
                    what,
                    len: message.len(),
                };
                self.events.insert(at, Event::Warning(warning));
            }
            Err(_) => self.not_json(message, &error),
        }
    }

    /// Reads one message or batch; returns the parse error, having done nothing, when it is not
    /// JSON.
    fn read_message(
        &mut self,
        message: &[u8],
        exchange: Option<u64>,
        now: Instant,
    ) -> serde_json::Result<()> {
        let trimmed = message.trim_ascii_start();
        if trimmed.first() != Some(&b'[') {
            return self.handle_one(message, exchange, now);
        }
        // > "MCP implementations MAY support sending JSON-RPC batches, but MUST support
        // > receiving JSON-RPC batches." — MCP 2025-03-26, Transports
        let items = serde_json::from_slice::<Vec<&RawValue>>(trimmed)?;
        if items.is_empty() {
            self.ignore(Warning::NotJsonRpc("an empty batch".into()));
        }
        for item in items {
            // Each is valid UTF-8 JSON, but may hold a lone surrogate escape.
            self.mending(item.get().as_bytes(), exchange, now, Self::handle_one);
        }
        Ok(())
    }

    /// Reads one message; returns the parse error, having done nothing, when it is not JSON.
    pub(super) fn handle_one(
        &mut self,
        message: &[u8],
        exchange: Option<u64>,
        now: Instant,
    ) -> serde_json::Result<()> {
        if self.fast_response(message, now) {
            return Ok(());
        }
        let raw = match serde_json::from_slice::<RawMessage<'_>>(message) {
            Ok(raw) => raw,
            Err(e) if e.is_data() => {
                self.ignore(Warning::NotJsonRpc(e.to_string()));
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        match ServerMessage::classify(raw) {
            ServerMessage::Request { id, method, params } => {
                self.handle_server_request(id, method, params)
            }
            ServerMessage::Notification { method, params } => {
                self.server_notification(method, params, now)
            }
            ServerMessage::Result { id, result } => {
                let Some(own) = self.own_pending(id) else {
                    return Ok(());
                };
                // The era seam: a modern result says what it is before it is decoded.
                let outcome = if self.modern_for(own) {
                    match self.modern_result(own, result, now) {
                        Some(outcome) => outcome,
                        None => return Ok(()),
                    }
                } else {
                    self.decode(own, result)
                };
                self.complete(own, outcome, now);
            }
            ServerMessage::Error {
                id: Some(id),
                error,
            } => {
                if let Some(own) = self.own_pending(id) {
                    self.error_answer(own, error, now);
                }
            }
            ServerMessage::Error { id: None, error } => self.error_without_id(error, exchange, now),
            ServerMessage::Invalid(reason) => self.ignore(Warning::NotJsonRpc(reason.into())),
        }
        Ok(())
    }

    /// Request `own` was answered with a JSON-RPC error.
    fn error_answer(&mut self, own: RequestId, error: RpcError, now: Instant) {
        // The opening's probe reads the error itself (a modern error or the legacy era).
        let error = if self.modern_for(own) && self.opening.probe_request() != Some(own) {
            match self.modern_error_outcome(own, error) {
                Some(error) => error,
                None => return,
            }
        } else {
            RequestError::Rpc(error)
        };
        self.complete(own, Err(error), now);
    }

    /// An error without an id: the server could not read a request of ours well enough to find
    /// its id.
    ///
    /// > "If there was an error in detecting the id in the Request object (e.g. Parse
    /// > error/Invalid Request), it MUST be Null." — JSON-RPC 2.0 § 5; "Error responses **MUST**
    /// > include the same ID as the request they correspond to (except in error cases where the
    /// > ID could not be read due a malformed request)." — MCP 2025-11-25, Basic § Error
    /// > Responses
    ///
    /// It answers a request when the session can tell which: the one whose HTTP exchange
    /// carried it (`exchange`: the response to a POST is about that POST), else the one request
    /// out at the server (this client's own notifications are well-formed JSON-RPC, which a
    /// server does not answer). That request fails at once with the server's code and message,
    /// by the same rules as an error with its id (the opening's included: the era probe's error
    /// means the legacy era). With none or several out it cannot be told: it is reported
    /// ([`Warning::ErrorWithoutId`]) and they keep waiting.
    fn error_without_id(&mut self, error: RpcError, exchange: Option<u64>, now: Instant) {
        let target = match exchange {
            Some(wire) => match self.pending.by_wire(wire) {
                Some(own) => Some(own),
                None => {
                    // The request that exchange carried has ended (or gone out again since).
                    self.stats.late_responses += 1;
                    return;
                }
            },
            None => self.pending.only_outstanding(),
        };
        match target {
            Some(own) => self.error_answer(own, error, now),
            None => self.ignore(Warning::ErrorWithoutId(error)),
        }
    }

    /// Resolves a response id to a pending request of ours. Answers to requests no longer pending
    /// are counted and dropped silently; ids we never sent are reported.
    pub(super) fn own_pending(&mut self, id: &RawValue) -> Option<RequestId> {
        let wire = jsonrpc::parse_own_id(id);
        match wire.and_then(|wire| self.pending.by_wire(wire.0)) {
            Some(own) => Some(own),
            // > "The sender of the cancellation notification **SHOULD** ignore any response to
            // > the request that arrives afterward" — MCP 2025-11-25, Utilities § Cancellation
            None if wire.is_some_and(|wire| wire.0 < self.next_id) => {
                self.stats.late_responses += 1;
                None
            }
            _ => {
                let id: String = id.get().chars().take(MAX_ECHOED_ID).collect();
                self.ignore(Warning::UnknownId(id));
                None
            }
        }
    }

    /// > "The receiver MUST promptly respond with an empty response" to `ping`
    /// > — MCP 2025-11-25, Utilities § Ping.
    ///
    /// A request whose capability is declared goes to the application (see `asks.rs`); any
    /// other gets -32601.
    ///
    /// What goes back is bounded whatever the server sends: a request whose id is longer than
    /// [`MAX_ECHOED_ID`] bytes is left unanswered (with a warning), and a method name is quoted in
    /// the -32601 message only up to [`MAX_ECHOED_METHOD`] bytes.
    pub(super) fn handle_server_request(
        &mut self,
        id: ServerRequestId,
        method: ServerRequestMethod,
        params: Option<&RawValue>,
    ) {
        if id.as_json().len() > MAX_ECHOED_ID {
            return self.ignore(Warning::RequestIdTooLong {
                len: id.as_json().len(),
                limit: MAX_ECHOED_ID,
            });
        }
        let (id, method) = match method {
            ServerRequestMethod::Ping => {
                self.stats.pings_answered += 1;
                return self.answer(&id, Ok(json!({})));
            }
            // A request the application answers, when its capability is declared.
            method => match self.server_request(id, method, params) {
                Ok(()) => return,
                Err(refused) => refused,
            },
        };
        self.stats.requests_rejected += 1;
        let name = method.name();
        let outcome = Err(RpcError {
            code: jsonrpc::METHOD_NOT_FOUND,
            message: if name.len() <= MAX_ECHOED_METHOD {
                format!("Method not found: {name}")
            } else {
                "Method not found".to_owned()
            },
            data: None,
        });
        self.answer(&id, outcome);
    }

    /// Answers server request `id` (now or later: the id is owned), unless the session is closed.
    pub(super) fn answer(
        &mut self,
        id: &ServerRequestId,
        outcome: Result<serde_json::Value, RpcError>,
    ) {
        if self.state() == State::Closed {
            return;
        }
        self.transmits.push_back(Transmit {
            payload: jsonrpc::encode_response(id.raw(), outcome),
            kind: TransmitKind::Response,
            headers: Vec::new(),
            modern: self.era() == Some(super::Era::Modern),
        });
    }

    pub(super) fn not_json(&mut self, message: &[u8], error: &serde_json::Error) {
        let excerpt = String::from_utf8_lossy(&message[..message.len().min(80)]).into_owned();
        self.ignore(Warning::NotJson {
            len: message.len(),
            error: error.to_string(),
            excerpt,
        });
    }

    pub(super) fn ignore(&mut self, warning: Warning) {
        if matches!(warning, Warning::NotJson { .. } | Warning::NotJsonRpc(_)) {
            self.junk.ignored += 1;
        }
        self.stats.messages_ignored += 1;
        self.events.push_back(Event::Warning(warning));
    }
}
