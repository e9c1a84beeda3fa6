//! What the server asks of the application, and what it tells it.
//!
//! Requests (`elicitation/create`, `sampling/createMessage`, `roots/list`) come two ways: as
//! JSON-RPC requests in the legacy era, and as the input requests of an `input_required` result in
//! the modern one (2026-07-28). Both reach the application the same way — an
//! [`Event::ServerRequest`] with an [`AskId`] — and its answer comes back the same way
//! ([`Session::respond`]); the session decides what is allowed (the declared capabilities), what
//! a valid answer looks like, and where the answer goes (a JSON-RPC response, or the request's
//! next round). A request whose capability is not declared never reaches the application: -32601
//! in the legacy era, as before; in the modern era the call fails clearly.
//!
//! Notifications: progress for the request that asked for it ([`Event::Progress`]), log messages
//! ([`Event::Log`]), list changes ([`Event::ListChanged`]), resource updates, and a server's
//! cancellation of its own request ([`Event::ServerRequestCancelled`]).

use super::{Core, Era, Event, Session, State};
use crate::error::{RequestError, UsageError};
use crate::jsonrpc::{self, RequestId, RpcError};
use crate::methods::{ServerNotificationMethod, ServerRequestId, ServerRequestMethod};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Instant;

/// The most server requests awaiting the application's answers at once; past it a new one is
/// refused (-32603 in the legacy era; the call fails in the modern one), so that a server cannot
/// make the client hold unbounded work.
pub const MAX_ASKS: usize = 64;

/// The most input requests one input-required round may carry.
pub const MAX_INPUT_REQUESTS: usize = 16;

/// The handle of one server request awaiting the application's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AskId(pub u64);

impl std::fmt::Display for AskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A request the server makes of the application, with its params as sent.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerRequest {
    /// `elicitation/create`: ask the user (form mode: `message` and `requestedSchema`; URL mode:
    /// `mode: "url"`, `message`, `url`, `elicitationId`). Answer `{action, content?}`.
    Elicit(Value),
    /// `sampling/createMessage`: ask the model (`messages`, `maxTokens`, …). Answer
    /// `{role, content, model, stopReason?}`.
    CreateMessage(Value),
    /// `roots/list`. Answer `{roots: [{uri: "file:///…", name?}]}`.
    ListRoots,
}

impl ServerRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            ServerRequest::Elicit(_) => "elicitation/create",
            ServerRequest::CreateMessage(_) => "sampling/createMessage",
            ServerRequest::ListRoots => "roots/list",
        }
    }

    /// The params as sent (`None` for `roots/list`).
    pub fn params(&self) -> Option<&Value> {
        match self {
            ServerRequest::Elicit(p) | ServerRequest::CreateMessage(p) => Some(p),
            ServerRequest::ListRoots => None,
        }
    }

    /// Whether an elicitation is in URL mode (`mode: "url"`); form mode otherwise.
    pub fn is_url_elicitation(&self) -> bool {
        matches!(self, ServerRequest::Elicit(p) if p.get("mode").and_then(Value::as_str) == Some("url"))
    }

    fn of(method: &str, params: Value) -> Option<ServerRequest> {
        Some(match method {
            "elicitation/create" => ServerRequest::Elicit(params),
            "sampling/createMessage" => ServerRequest::CreateMessage(params),
            "roots/list" => ServerRequest::ListRoots,
            _ => return None,
        })
    }
}

/// One `notifications/progress` for a request that asked for progress.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far along (it increases with each notification).
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A human-readable message, when given.
    pub message: Option<String>,
}

/// One `notifications/message`: a log message from the server.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    /// Its level (`debug`, `info`, `notice`, `warning`, `error`, `critical`, `alert`,
    /// `emergency`), as sent.
    pub level: String,
    /// The logger's name, when given.
    pub logger: Option<String>,
    /// The message: any JSON value.
    pub data: Value,
}

/// Which list the server said changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListKind {
    /// `notifications/tools/list_changed`.
    Tools,
    /// `notifications/resources/list_changed`.
    Resources,
    /// `notifications/prompts/list_changed`.
    Prompts,
}

/// Where a server request came from, and so where its answer goes.
#[derive(Debug)]
pub(super) enum Origin {
    /// A JSON-RPC request (legacy era): answered with a response echoing its id.
    Wire(ServerRequestId),
    /// An input request of call `call`'s input-required round, under the server's key.
    Input { call: RequestId, key: String },
}

#[derive(Debug)]
pub(super) struct Ask {
    origin: Origin,
    request: ServerRequest,
}

/// The server requests awaiting the application.
#[derive(Debug, Default)]
pub(super) struct Asks {
    next: u64,
    open: BTreeMap<AskId, Ask>,
    /// A `roots/list` came (answered or not).
    roots_asked: bool,
}

impl Session {
    /// Answers server request `ask` ([`Event::ServerRequest`]) with the application's result
    /// (`Ok`) or error (`Err`). The session checks the result's shape for its method (an
    /// elicitation's `action`, and its form `content` filled with the schema's defaults; a
    /// sampling result's `role`, `content`, `model`; roots with `file://` URIs) and sends it where
    /// it belongs: as the JSON-RPC response (legacy era), or into the call's next round (modern
    /// era). An invalid result is refused with [`UsageError::InvalidAnswer`]; the server is then
    /// told the client failed (-32603), or the call fails.
    ///
    /// An `ask` that is no longer open (the server cancelled it, its call ended) is
    /// [`UsageError::UnknownAsk`]; nothing is sent.
    pub fn respond(
        &mut self,
        ask: AskId,
        outcome: Result<Value, RpcError>,
        now: Instant,
    ) -> Result<(), UsageError> {
        let Some(open) = self.core.asks.open.remove(&ask) else {
            return Err(UsageError::UnknownAsk(ask.0));
        };
        let checked = outcome.map(|v| valid_answer(&open.request, v));
        let (outcome, refused) = match checked {
            Ok(Ok(v)) => (Ok(v), None),
            Ok(Err(reason)) => (
                Err(RpcError {
                    code: jsonrpc::INTERNAL_ERROR,
                    message: format!("the client's answer was invalid: {reason}"),
                    data: None,
                }),
                Some(UsageError::InvalidAnswer {
                    method: open.request.method().to_owned(),
                    reason,
                }),
            ),
            Err(e) => (Err(e), None),
        };
        match open.origin {
            Origin::Wire(id) => {
                if open.request == ServerRequest::ListRoots {
                    self.core.stats.roots_answered += 1;
                }
                self.core.answer(&id, outcome)
            }
            Origin::Input { call, key } => {
                self.core
                    .input_answered(call, key, &open.request, outcome, now)
            }
        }
        refused.map_or(Ok(()), Err)
    }

    /// Tells the server the application's roots changed (`notifications/roots/list_changed`),
    /// when roots were declared with `list_changed` (legacy era; a modern server asks again when it
    /// needs them). Returns whether it was sent.
    ///
    /// > "When roots change, clients that support `listChanged` **MUST** send a notification" —
    /// > MCP 2025-11-25, Client § Roots
    pub fn notify_roots_changed(&mut self, now: Instant) -> bool {
        let _ = now; // Nothing of it depends on the time.
        let declared = self.core.config.capabilities.roots == Some(true);
        if !declared || self.state() != State::Ready || self.era() != Some(Era::Legacy) {
            return false;
        }
        self.core.notify("notifications/roots/list_changed", None);
        true
    }

    /// Whether the server may still ask for the roots the client declared and has not asked yet:
    /// the session is open in the legacy era with the `roots` capability declared, and no
    /// `roots/list` has been answered ([`Stats::roots_answered`]). A server that works from the
    /// client's roots asks for them once it is initialized, and until it has the answer it has
    /// none:
    ///
    /// > "To retrieve roots, servers send a `roots/list` request" — MCP 2025-11-25, Client §
    /// > Roots (Listing Roots)
    ///
    /// > "The server **SHOULD NOT** send requests other than pings and logging before receiving
    /// > the `initialized` notification." — MCP 2025-11-25, Lifecycle § Initialization
    ///
    /// so a caller whose first request depends on them (a one-shot call) may wait for this to
    /// turn false first. In the modern era a server asks within a call (an input request), so
    /// there is nothing to wait for: `false`.
    ///
    /// [`Stats::roots_answered`]: super::Stats::roots_answered
    pub fn roots_unasked(&self) -> bool {
        self.core.config.capabilities.roots.is_some()
            && self.state() == State::Ready
            && self.era() == Some(Era::Legacy)
            && self.core.stats.roots_answered == 0
    }

    /// Whether a `ping` answered now tells that the server does not ask for the roots at start:
    /// [`roots_unasked`](Self::roots_unasked), over a stream, and no `roots/list` came at all
    /// (none is being answered either). Ask it after the answer to a `ping` sent once the
    /// session was open (after `notifications/initialized`): a server that asks for the roots
    /// as it is initialized — in its `initialized` handler, as the TypeScript SDK's servers do
    /// (server-filesystem) — writes its `roots/list` before it reads the `ping`, and over a
    /// stream the client reads in the order the server wrote. True then means the wait for
    /// the roots can end: the server did not ask when it was initialized. Over HTTP the answer
    /// and the server's request travel on different streams, so a ping tells nothing: `false`.
    ///
    /// Measured with server-filesystem 2026.8.31 (.peers/bin/filesystem), 20 runs: its
    /// `roots/list` came before the ping's answer 20 times in 20.
    pub fn roots_unasked_after_ping(&self) -> bool {
        self.core.config.transport == super::TransportKind::Stream
            && self.roots_unasked()
            && !self.core.asks.roots_asked
    }

    /// The server requests awaiting the application's answer.
    pub fn open_asks(&self) -> usize {
        self.core.asks.open.len()
    }

    /// Whether server request `ask` still awaits its answer.
    pub fn ask_is_open(&self, ask: AskId) -> bool {
        self.core.asks.open.contains_key(&ask)
    }
}

impl Core {
    /// A server request (legacy era): `ping` is answered at once; a request whose capability is
    /// declared goes to the application; any other gets -32601.
    pub(super) fn server_request(
        &mut self,
        id: ServerRequestId,
        method: ServerRequestMethod,
        params: Option<&RawValue>,
    ) -> Result<(), (ServerRequestId, ServerRequestMethod)> {
        if !self.config.capabilities.allows(method.name()) {
            return Err((id, method));
        }
        let params: Value = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Object(Map::new()));
        let Some(request) = ServerRequest::of(method.name(), params) else {
            return Err((id, method));
        };
        if matches!(request, ServerRequest::ListRoots) {
            self.asks.roots_asked = true;
        }
        // > "Server sends an `elicitation/create` request with a mode not declared in client
        // > capabilities: `-32602` (Invalid params)" — MCP 2025-11-25, Client § Elicitation
        if let Err(reason) = self.mode_declared(&request) {
            self.answer(
                &id,
                Err(RpcError {
                    code: jsonrpc::INVALID_PARAMS,
                    message: reason,
                    data: None,
                }),
            );
            return Ok(());
        }
        if self.asks.open.len() >= MAX_ASKS {
            self.answer(
                &id,
                Err(RpcError {
                    code: jsonrpc::INTERNAL_ERROR,
                    message: format!(
                        "the client already has {MAX_ASKS} requests of the server awaiting answers"
                    ),
                    data: None,
                }),
            );
            return Ok(());
        }
        self.stats.server_requests += 1;
        self.open_ask(Origin::Wire(id), request);
        Ok(())
    }

    /// Whether the elicitation's mode is one the client declared.
    fn mode_declared(&self, request: &ServerRequest) -> Result<(), String> {
        let ServerRequest::Elicit(params) = request else {
            return Ok(());
        };
        let Some(modes) = self.config.capabilities.elicitation else {
            return Err("this client does not support elicitation".into());
        };
        // > "Clients **MUST** treat requests without a `mode` field as form mode."
        match params.get("mode").and_then(Value::as_str) {
            None | Some("form") if modes.form => Ok(()),
            Some("url") if modes.url => Ok(()),
            None | Some("form") => Err("this client does not support form-mode elicitation".into()),
            Some("url") => Err("this client does not support URL-mode elicitation".into()),
            Some(_) => Err("unknown elicitation mode".into()),
        }
    }

    fn open_ask(&mut self, origin: Origin, request: ServerRequest) -> AskId {
        let ask = AskId(self.asks.next);
        self.asks.next += 1;
        self.events.push_back(Event::ServerRequest {
            ask,
            request: request.clone(),
        });
        self.asks.open.insert(ask, Ask { origin, request });
        ask
    }

    /// The server gave up on its request `request_id`: the application's handler is dropped.
    fn server_cancelled(&mut self, params: Option<&RawValue>, now: Instant) {
        let id = params
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
            .and_then(|v| v.get("requestId").cloned());
        let Some(id) = id else {
            self.stats.notifications_dropped += 1;
            return;
        };
        let text = id.to_string();
        let found = self
            .asks
            .open
            .iter()
            .find_map(|(ask, open)| match &open.origin {
                Origin::Wire(w) if w.as_json() == text => Some(*ask),
                _ => None,
            });
        match found {
            Some(ask) => {
                self.asks.open.remove(&ask);
                self.events.push_back(Event::ServerRequestCancelled { ask });
            }
            None => match self.open_listen(&id) {
                Some(own) => self.complete(
                    own,
                    Err(RequestError::Cancelled(
                        "the server ended the subscription".into(),
                    )),
                    now,
                ),
                None => self.stats.notifications_dropped += 1,
            },
        }
    }

    /// Whether a change notification names, in its `_meta`, a subscription that is no listen of
    /// ours still open (one replaced or ended: what it says is heard on the listen that replaced
    /// it). One that names none is taken.
    ///
    /// > "All notifications delivered on the stream carry `io.modelcontextprotocol/subscriptionId`
    /// > in `_meta`, identifying the `subscriptions/listen` request that opened the stream." …
    /// > "On stdio, where all messages share a single channel, clients **MUST** use this field to
    /// > correlate notifications with their originating subscription." — MCP 2026-07-28, Basic §
    /// > Subscriptions
    fn names_a_stale_listen(&self, params: Option<&RawValue>) -> bool {
        let Some(id) = params
            .and_then(|p| field::<Value>(p, "_meta"))
            .and_then(|meta| meta.get("io.modelcontextprotocol/subscriptionId").cloned())
        else {
            return false;
        };
        self.open_listen(&id).is_none()
    }

    /// The open `subscriptions/listen` request of ours that `id` (a wire id) names, if any.
    ///
    /// > "A server **MUST** send `notifications/cancelled` referencing a `subscriptions/listen`
    /// > request ID when it tears down that subscription stream" — MCP 2026-07-28, Basic §
    /// > Cancellation
    fn open_listen(&self, id: &Value) -> Option<RequestId> {
        let wire = match id {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }?;
        let own = self.pending.by_wire(wire)?;
        let pending = self.pending.get(&own)?;
        (pending.method == crate::subscriptions::LISTEN).then_some(own)
    }

    /// Closes the asks of call `call` (it ended): their handlers are dropped.
    pub(super) fn drop_asks_of(&mut self, call: RequestId) {
        if self.asks.open.is_empty() {
            return;
        }
        let gone: Vec<AskId> = self
            .asks
            .open
            .iter()
            .filter(|(_, a)| matches!(&a.origin, Origin::Input { call: c, .. } if *c == call))
            .map(|(ask, _)| *ask)
            .collect();
        for ask in gone {
            self.asks.open.remove(&ask);
            self.events.push_back(Event::ServerRequestCancelled { ask });
        }
    }

    /// The session ended: every open ask is dropped.
    pub(super) fn drop_all_asks(&mut self) {
        for ask in std::mem::take(&mut self.asks.open).into_keys() {
            self.events.push_back(Event::ServerRequestCancelled { ask });
        }
    }

    /// The input requests of call `call`'s input-required round (modern era): each goes to the
    /// application; `Err` with the methods when one cannot (its capability is not declared).
    pub(super) fn ask_inputs(
        &mut self,
        call: RequestId,
        requests: Map<String, Value>,
    ) -> Result<Vec<String>, RequestError> {
        if requests.len() > MAX_INPUT_REQUESTS || self.asks.open.len() + requests.len() > MAX_ASKS {
            return Err(RequestError::InvalidResult {
                method: self.pending.get(&call).map(|p| p.method.to_string()).unwrap_or_default(),
                reason: format!(
                    "{} input requests in one round (the most this client takes: {MAX_INPUT_REQUESTS}, with at most {MAX_ASKS} open)",
                    requests.len()
                ),
            });
        }
        let mut unsupported = Vec::new();
        let mut asks = Vec::new();
        for (key, r) in requests {
            let method: String = r
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("(no method)")
                .chars()
                .take(super::MAX_ECHOED_METHOD)
                .collect();
            let params = r
                .get("params")
                .cloned()
                .unwrap_or(Value::Object(Map::new()));
            let request = ServerRequest::of(&method, params)
                .filter(|req| self.config.capabilities.allows(req.method()))
                .filter(|req| self.mode_declared(req).is_ok());
            match request {
                Some(request) => asks.push((key, request)),
                None => unsupported.push(method),
            }
        }
        if !unsupported.is_empty() {
            // "Servers MUST NOT send an inputRequests that the client has not declared support
            // for in its capabilities."
            unsupported.sort();
            unsupported.dedup();
            return Err(RequestError::InputUnsupported {
                methods: unsupported,
            });
        }
        let keys = asks.iter().map(|(k, _)| k.clone()).collect();
        self.stats.server_requests += asks.len() as u64;
        for (key, request) in asks {
            self.open_ask(Origin::Input { call, key }, request);
        }
        Ok(keys)
    }

    /// The application answered input request `key` of call `call`: when the round's last
    /// answer is in, the call goes out again with them all.
    fn input_answered(
        &mut self,
        call: RequestId,
        key: String,
        request: &ServerRequest,
        outcome: Result<Value, RpcError>,
        now: Instant,
    ) {
        let value = match outcome {
            Ok(v) => v,
            Err(e) => {
                return self.complete(
                    call,
                    Err(RequestError::InputFailed {
                        method: request.method().to_owned(),
                        reason: e.message,
                    }),
                    now,
                )
            }
        };
        let Some(p) = self.pending.get_mut(&call) else {
            return;
        };
        if let Some(slot) = p.inputs.get_mut(&key) {
            *slot = Some(value);
        }
        if p.inputs.values().all(Option::is_some) {
            self.resend(call);
        }
    }

    /// A notification from the server.
    pub(super) fn server_notification(
        &mut self,
        method: ServerNotificationMethod,
        params: Option<&RawValue>,
        now: Instant,
    ) {
        let kind = match method {
            ServerNotificationMethod::ToolsListChanged => Some(ListKind::Tools),
            ServerNotificationMethod::ResourcesListChanged => Some(ListKind::Resources),
            ServerNotificationMethod::PromptsListChanged => Some(ListKind::Prompts),
            _ => None,
        };
        let stream_goods = kind.is_some() || method == ServerNotificationMethod::ResourceUpdated;
        if stream_goods && self.era() == Some(Era::Modern) && self.names_a_stale_listen(params) {
            self.stats.notifications_dropped += 1;
            return;
        }
        if let Some(kind) = kind {
            return self.events.push_back(Event::ListChanged(kind));
        }
        match method {
            ServerNotificationMethod::Progress => self.progress(params, now),
            ServerNotificationMethod::Message => self.log(params),
            ServerNotificationMethod::Cancelled => self.server_cancelled(params, now),
            ServerNotificationMethod::ResourceUpdated => {
                match params.and_then(|p| field::<String>(p, "uri")) {
                    Some(uri) => self.events.push_back(Event::ResourceUpdated { uri }),
                    None => self.stats.notifications_dropped += 1,
                }
            }
            // > "The server **MUST** send `notifications/subscriptions/acknowledged` as the first
            // > message carrying the subscription's ID in `_meta` under
            // > `io.modelcontextprotocol/subscriptionId`" … "The value is the JSON-RPC ID of the
            // > `subscriptions/listen` request." — MCP 2026-07-28, Basic § Subscriptions
            ServerNotificationMethod::SubscriptionsAcknowledged => {
                let notifications = params.and_then(|p| field::<Value>(p, "notifications"));
                let id = params
                    .and_then(|p| field::<Value>(p, "_meta"))
                    .and_then(|meta| meta.get("io.modelcontextprotocol/subscriptionId").cloned())
                    .and_then(|id| match id {
                        Value::Number(n) => n.as_u64(),
                        Value::String(s) => s.parse().ok(),
                        _ => None,
                    })
                    .and_then(|wire| self.pending.by_wire(wire));
                match id {
                    Some(id) => self
                        .events
                        .push_back(Event::ListenAcknowledged { id, notifications }),
                    None => self.stats.notifications_dropped += 1,
                }
            }
            ServerNotificationMethod::ElicitationComplete => {
                match params.and_then(|p| field::<String>(p, "elicitationId")) {
                    Some(id) => self
                        .events
                        .push_back(Event::ElicitationComplete { elicitation_id: id }),
                    None => self.stats.notifications_dropped += 1,
                }
            }
            ServerNotificationMethod::TaskStatus | ServerNotificationMethod::Tasks => {
                let params = params.and_then(|p| serde_json::from_str::<Value>(p.get()).ok());
                match crate::tasks::status_notification(method.name(), params.as_ref()) {
                    Some(task) => self.events.push_back(Event::TaskStatus(Box::new(task))),
                    None => self.stats.notifications_dropped += 1,
                }
            }
            _ => self.stats.notifications_dropped += 1,
        }
    }

    /// `notifications/progress` for a request that asked for it (its token is its handle),
    /// while it is pending; it may push the request's deadline out (see
    /// [`Request::reset_timeout_on_progress`](super::Request::reset_timeout_on_progress)).
    ///
    /// > "Progress notifications **MUST** only reference tokens that … are associated with an
    /// > in-progress operation." — MCP 2025-11-25, Utilities § Progress
    fn progress(&mut self, params: Option<&RawValue>, now: Instant) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct P {
            progress_token: Value,
            progress: f64,
            #[serde(default)]
            total: Option<f64>,
            #[serde(default)]
            message: Option<String>,
        }
        let parsed = params.and_then(|p| serde_json::from_str::<P>(p.get()).ok());
        let Some(p) = parsed else {
            self.stats.notifications_dropped += 1;
            return;
        };
        let token = match &p.progress_token {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        };
        let id = token.map(RequestId);
        let asked = id
            .and_then(|id| self.pending.get(&id))
            .is_some_and(|pending| pending.progress.is_some());
        let Some(id) = id.filter(|_| asked) else {
            self.stats.notifications_dropped += 1;
            return;
        };
        self.pending.extend_deadline(id, now);
        self.stats.progress_notifications += 1;
        self.events.push_back(Event::Progress {
            id,
            progress: Progress {
                progress: p.progress,
                total: p.total,
                message: p.message,
            },
        });
    }

    /// `notifications/message`: a log message, handed to the application.
    fn log(&mut self, params: Option<&RawValue>) {
        #[derive(serde::Deserialize)]
        struct P {
            level: String,
            #[serde(default)]
            logger: Option<String>,
            #[serde(default)]
            data: Value,
        }
        match params.and_then(|p| serde_json::from_str::<P>(p.get()).ok()) {
            Some(p) => self.events.push_back(Event::Log(LogMessage {
                level: p.level,
                logger: p.logger,
                data: p.data,
            })),
            None => self.stats.notifications_dropped += 1,
        }
    }

    /// Puts `params._meta.progressToken` (the request's handle) into a request that asked for
    /// progress.
    ///
    /// > "The progress token **MUST** be a string or integer value" and "**MUST** be unique across
    /// > all active requests." — MCP 2025-11-25, Utilities § Progress
    pub(super) fn with_progress_token(params: &mut Option<Value>, id: RequestId) {
        let object = params.get_or_insert_with(|| Value::Object(Map::new()));
        if let Some(o) = object.as_object_mut() {
            let meta = o
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("progressToken".into(), json!(id.0));
            }
        }
    }
}

/// A member of a notification's params.
fn field<T: serde::de::DeserializeOwned>(params: &RawValue, name: &str) -> Option<T> {
    let v: Value = serde_json::from_str(params.get()).ok()?;
    serde_json::from_value(v.get(name)?.clone()).ok()
}

/// Checks the application's answer to `request` and brings it into shape: what a valid answer
/// is, by method (MCP 2025-11-25 / 2026-07-28 schema).
pub(super) fn valid_answer(request: &ServerRequest, mut answer: Value) -> Result<Value, String> {
    let Some(object) = answer.as_object_mut() else {
        return Err("the result must be a JSON object".into());
    };
    match request {
        ServerRequest::Elicit(params) => {
            // `action: "accept" | "decline" | "cancel"`; `content` "only present when action is
            // "accept" and mode was "form"".
            let action = object
                .get("action")
                .and_then(Value::as_str)
                .map(str::to_owned);
            match action.as_deref() {
                Some("accept") if !request.is_url_elicitation() => {
                    let content = object
                        .entry("content")
                        .or_insert_with(|| Value::Object(Map::new()));
                    let Some(content) = content.as_object_mut() else {
                        return Err("an accepted elicitation's content must be an object".into());
                    };
                    fill_defaults(params, content);
                }
                Some("accept" | "decline" | "cancel") => {
                    object.remove("content");
                }
                Some(other) => {
                    return Err(format!(
                        "elicitation action {other:?} is none of accept, decline, cancel"
                    ))
                }
                None => return Err("an elicitation result needs an action".into()),
            }
        }
        ServerRequest::CreateMessage(_) => {
            for (name, ok) in [
                ("role", object.get("role").is_some_and(Value::is_string)),
                (
                    "content",
                    object
                        .get("content")
                        .is_some_and(|c| c.is_object() || c.is_array()),
                ),
                ("model", object.get("model").is_some_and(Value::is_string)),
            ] {
                if !ok {
                    return Err(format!("a sampling result needs {name}"));
                }
            }
        }
        ServerRequest::ListRoots => {
            let Some(roots) = object.get("roots").and_then(Value::as_array) else {
                return Err("a roots/list result needs roots (an array)".into());
            };
            // > "`uri`: Unique identifier for the root. This **MUST** be a `file://` URI in the
            // > current specification." — MCP 2025-11-25, Client § Roots
            for root in roots {
                let uri = root.get("uri").and_then(Value::as_str).unwrap_or("");
                if !uri.starts_with("file://") {
                    return Err(format!("a root's uri must be a file:// URI, not {uri:?}"));
                }
            }
        }
    }
    Ok(answer)
}

/// Fills the fields an accepted form left out with the defaults its schema gives.
///
/// > "All primitive types support optional default values to provide sensible starting points.
/// > Clients that support defaults SHOULD pre-populate form fields with these values." — MCP
/// > 2025-11-25, Client § Elicitation
fn fill_defaults(params: &Value, content: &mut Map<String, Value>) {
    let properties = params
        .get("requestedSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    for (name, schema) in properties.into_iter().flatten() {
        if let Some(default) = schema.get("default") {
            content
                .entry(name.clone())
                .or_insert_with(|| default.clone());
        }
    }
}
