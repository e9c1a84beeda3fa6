//! The modern era (2026-07-28): no handshake; every request carries the protocol version, the
//! client's identity and its capabilities in `params._meta`; every result says what it is
//! (`resultType`); a version mismatch is retried with a version both speak; an input-required
//! result is answered by sending the request again with the server's state.
//!
//! > "There is no negotiation handshake. Every request carries its protocol version, and the
//! > server accepts or rejects each request independently" — MCP 2026-07-28, Versioning

use super::pending::Wake;
use super::request::{CallTool, Method, Params};
use super::{Core, Era, Event, Reply, Request, Transmit, TransmitKind, TransportKind};
use crate::error::{RequestError, SessionError, Warning};
use crate::http::metadata::{self, ParamHeaders};
use crate::http::HeaderText;
use crate::jsonrpc::{RequestId, RpcError};
use crate::types::{
    DiscoverResult, Implementation, InputRequiredResult, ResultType, MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
};
use serde::ser::SerializeMap;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// `_meta` key: the request's protocol version (required).
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's identity (SHOULD).
pub const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the client's capabilities for this request (required).
pub const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";

/// -32020: the HTTP headers do not match the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// -32021: the request needs a client capability that was not declared.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// -32022: the server does not speak the request's protocol version.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The requests a server may answer with `input_required`.
///
/// > "Servers **MUST NOT** send `InputRequiredResult` responses on any other client requests." —
/// > MCP 2026-07-28, Multi Round-Trip Requests § Supported Requests
const INPUT_REQUIRED_METHODS: &[&str] = &["prompts/get", "resources/read", "tools/call"];

/// The backoff before a round that only echoes `requestState` (the server is not done yet):
/// 50 ms, doubling, at most 250 ms — what the Python SDK waits.
fn backoff(round: u32) -> Duration {
    let ms = 50u64.saturating_mul(1 << round.saturating_sub(1).min(8));
    Duration::from_millis(ms.min(250))
}

/// The modern era's state: the version requests carry and the `_meta` made for it, what
/// `server/discover` said, and the mirrored headers of each listed tool (HTTP).
#[derive(Debug)]
pub(super) struct Modern {
    pub(super) version: &'static str,
    client_info: Value,
    /// The declared capabilities, as sent in every request.
    capabilities: Value,
    /// The `_meta` object every request carries, as JSON text and as a map (to merge with a
    /// caller's own `_meta`).
    meta: Box<RawValue>,
    meta_map: Map<String, Value>,
    pub(super) discover: Option<DiscoverResult>,
    /// The opening's `server/discover` was already retried after -32022.
    pub(super) discover_retried: bool,
    /// `server/discover` was sent again after `initialize` met a -32022 naming a modern version.
    reprobed: bool,
    /// Per tool name, the `x-mcp-header` parameters to mirror (HTTP), from the listings read.
    tool_headers: ToolHeaders,
}

/// The most tools whose mirrored headers (`x-mcp-header`, modern era over HTTP) a session
/// remembers from the `tools/list` results it reads (4096). Past it, the tools of a listing that
/// do not fit are not remembered: a call of one goes out without its `Mcp-Param-*` headers, the
/// server's -32020 says so, and the driver re-lists and retries once
/// ([`Session::retries_on_header_mismatch`](super::Session::retries_on_header_mismatch)).
pub const MAX_REMEMBERED_TOOLS: usize = 4096;

/// The tools a session has seen listed, each with its mirrored headers (none for most), so that
/// the first call of a tool carries them. A listing replaces what an earlier one said when it
/// completes (its last page read); one that fails half way leaves the earlier tools in place, as
/// a driver's cached tool list does. At most [`MAX_REMEMBERED_TOOLS`] tools.
#[derive(Debug, Default)]
struct ToolHeaders {
    /// By name: the listing that last showed the tool, and its headers.
    by_name: HashMap<String, (u64, ParamHeaders)>,
    /// The listing being read (counts first pages).
    listing: u64,
    /// The tools of earlier listings were already dropped to make room during this one.
    swept: bool,
}

impl ToolHeaders {
    fn get(&self, tool: &str) -> Option<&ParamHeaders> {
        self.by_name.get(tool).map(|(_, spec)| spec)
    }

    /// A first page: a new listing starts.
    fn begin(&mut self) {
        self.listing += 1;
        self.swept = false;
    }

    /// `tool` is on a page of the current listing, with these headers.
    fn remember(&mut self, tool: &str, spec: ParamHeaders) {
        if let Some(entry) = self.by_name.get_mut(tool) {
            *entry = (self.listing, spec);
            return;
        }
        if self.by_name.len() >= MAX_REMEMBERED_TOOLS && !self.swept {
            // Room for this listing's tools first: drop those only earlier listings showed.
            self.swept = true;
            let current = self.listing;
            self.by_name.retain(|_, (seen, _)| *seen == current);
        }
        if self.by_name.len() < MAX_REMEMBERED_TOOLS {
            self.by_name.insert(tool.to_owned(), (self.listing, spec));
        }
    }

    fn forget(&mut self, tool: &str) {
        self.by_name.remove(tool);
    }

    /// The last page of the current listing was read: the tools it did not show are gone.
    fn end(&mut self) {
        let current = self.listing;
        self.by_name.retain(|_, (seen, _)| *seen == current);
    }
}

impl Modern {
    pub(super) fn new(
        client_info: &Implementation,
        capabilities: &crate::capabilities::ClientCapabilities,
    ) -> Self {
        let client_info = serde_json::to_value(client_info).unwrap_or(Value::Null);
        let mut m = Modern {
            version: MODERN_PROTOCOL_VERSIONS[0],
            client_info,
            capabilities: capabilities.to_json(),
            meta: RawValue::from_string("{}".into()).expect("{} is JSON"),
            meta_map: Map::new(),
            discover: None,
            discover_retried: false,
            reprobed: false,
            tool_headers: ToolHeaders::default(),
        };
        m.set_version(MODERN_PROTOCOL_VERSIONS[0]);
        m
    }

    /// Whether `server/discover` may be sent again after `initialize` met a -32022 naming a
    /// modern version (once per session): it may, and now it has been.
    pub(super) fn reprobe(&mut self) -> bool {
        !std::mem::replace(&mut self.reprobed, true)
    }

    /// The version requests carry from now on; the `_meta` is made once for it.
    ///
    /// > "Client requests carry the following `io.modelcontextprotocol/*` fields in `_meta`;
    /// > fields marked as required **MUST** be included on every request" / "Clients **SHOULD**
    /// > include `io.modelcontextprotocol/clientInfo` on every request" — MCP 2026-07-28, Basic §
    /// > `_meta`
    pub(super) fn set_version(&mut self, version: &'static str) {
        self.version = version;
        let mut map = Map::new();
        map.insert(PROTOCOL_VERSION_META.into(), Value::from(version));
        map.insert(CLIENT_INFO_META.into(), self.client_info.clone());
        // Exactly what the application's handlers answer (`{}`: nothing).
        map.insert(CLIENT_CAPABILITIES_META.into(), self.capabilities.clone());
        let text = serde_json::to_string(&map).expect("a map of JSON values serializes");
        self.meta = RawValue::from_string(text).expect("serde_json wrote JSON");
        self.meta_map = map;
    }

    /// A request with wire id `wire` in the modern form, and the headers that mirror it over
    /// HTTP (none over a stream).
    pub(super) fn encode(
        &self,
        wire: u64,
        method: &str,
        params: &Params,
        transport: TransportKind,
    ) -> (Vec<u8>, Vec<(HeaderText, HeaderText)>) {
        // Room for the envelope, the `_meta` and small params at once.
        let mut payload = Vec::with_capacity(128 + method.len() + self.meta.get().len());
        crate::jsonrpc::request_head(&mut payload, wire, method);
        payload.extend_from_slice(b",\"params\":");
        match params {
            // A call's two members, in the order its map would have them, then the era's
            // `_meta`: as the general case below writes them, with its constant parts copied.
            Params::Call {
                name,
                arguments,
                trace,
                ..
            } => {
                payload.extend_from_slice(b"{\"arguments\":");
                crate::jsonrpc::write_json(&mut payload, arguments);
                payload.extend_from_slice(b",\"name\":");
                crate::jsonrpc::write_str(&mut payload, name);
                payload.extend_from_slice(b",\"_meta\":");
                let meta = self.meta.get().as_bytes();
                match trace {
                    None => payload.extend_from_slice(meta),
                    // The era's keys, then the trace's (`io.…` sorts before `trace…`, as a
                    // merged map would write them).
                    Some(trace) => {
                        payload.extend_from_slice(&meta[..meta.len() - 1]);
                        let start = payload.len();
                        trace.write_members(&mut payload);
                        if meta.len() <= 2 {
                            // `{}`: no member before the trace's, so no comma.
                            payload.remove(start);
                        }
                        payload.push(b'}');
                    }
                }
                payload.push(b'}');
            }
            _ => crate::jsonrpc::write_json(
                &mut payload,
                &WithMeta {
                    params,
                    meta: &self.meta,
                    meta_map: &self.meta_map,
                },
            ),
        }
        payload.push(b'}');
        let headers = match transport {
            TransportKind::Http => self.headers(method, params),
            _ => Vec::new(),
        };
        (payload, headers)
    }

    /// The HTTP headers of a modern request: its version, method and name, and the tool's
    /// mirrored parameters. A message whose headers cannot be made goes without them; the server
    /// then refuses it with -32020, which names the problem.
    ///
    /// > "Every POST request to the MCP endpoint **MUST** include an `MCP-Protocol-Version`
    /// > header." / "The header value **MUST** match the `io.modelcontextprotocol/protocolVersion`
    /// > field carried in the request body's `_meta`." — MCP 2026-07-28, Streamable HTTP
    fn headers(&self, method: &str, params: &Params) -> Vec<(HeaderText, HeaderText)> {
        let mut out = Vec::with_capacity(3);
        out.push((
            crate::http::PROTOCOL_VERSION_HEADER.into(),
            self.version.into(),
        ));
        // A call's name and arguments are read where they are: making its params one JSON
        // value (a copy of the arguments) cost more than the rest of the headers.
        let standard = match params {
            // The common case written in place: the method is the protocol's constant, and only
            // the tool's name is copied (one allocation, not a list and two strings).
            Params::Call { name, .. } if method == CallTool::NAME => {
                let value = metadata::encode_value(name).into_owned();
                out.push((crate::http::METHOD_HEADER.into(), CallTool::NAME.into()));
                out.push((crate::http::NAME_HEADER.into(), value.into()));
                None
            }
            Params::Call { name, .. } => Some(metadata::standard_headers_named(method, Some(name))),
            Params::Json(json) => Some(metadata::standard_headers(method, json.as_ref())),
        };
        if let Some(Ok(standard)) = standard {
            out.extend(standard.into_iter().map(|(k, v)| (k.into(), v.into())));
        }
        if method == "tools/call" {
            let (tool, arguments) = call_parts(params);
            if let Some(spec) = tool.and_then(|t| self.tool_headers.get(t)) {
                if let Ok(mirrored) = spec.headers_for(arguments) {
                    out.extend(mirrored.into_iter().map(|(k, v)| (k.into(), v.into())));
                }
            }
        }
        out
    }

    /// Why a `tools/call` cannot go out over HTTP: an argument mirrored into a header does not
    /// fit its declared type. The model wrote the arguments and can correct them.
    pub(super) fn check_call(&self, params: &Params) -> Result<(), String> {
        let (tool, arguments) = call_parts(params);
        let Some(spec) = tool.and_then(|t| self.tool_headers.get(t)) else {
            return Ok(());
        };
        spec.headers_for(arguments)
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

/// A `tools/call`'s tool name (when a string) and arguments, read without making a call's params
/// one JSON value.
fn call_parts(params: &Params) -> (Option<&str>, Option<&Value>) {
    match params {
        Params::Call {
            name, arguments, ..
        } => (Some(name), Some(arguments)),
        Params::Json(json) => {
            let json = json.as_ref();
            (
                json.and_then(|p| p.get("name")).and_then(Value::as_str),
                json.and_then(|p| p.get("arguments")),
            )
        }
    }
}

/// A request's params with the era's `_meta` in them: the caller's members as given, and
/// `_meta` with the caller's own keys (a `progressToken`, say) and the protocol's.
struct WithMeta<'a> {
    params: &'a Params,
    meta: &'a RawValue,
    meta_map: &'a Map<String, Value>,
}

impl Serialize for WithMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let object = match self.params {
            Params::Json(None) => None,
            Params::Json(Some(Value::Object(o))) => Some(o),
            // Not an object: sent as given (the server will refuse it, and say why).
            Params::Json(Some(other)) => return other.serialize(s),
            // A call's two members, in the order its map would have them, then the era's `_meta`.
            Params::Call {
                name,
                arguments,
                trace,
                ..
            } => {
                let mut map = s.serialize_map(Some(3))?;
                map.serialize_entry("arguments", arguments)?;
                map.serialize_entry("name", name)?;
                match trace {
                    None => map.serialize_entry("_meta", self.meta)?,
                    Some(trace) => {
                        let mut merged = self.meta_map.clone();
                        trace.insert_into(&mut merged);
                        map.serialize_entry("_meta", &merged)?;
                    }
                }
                return map.end();
            }
        };
        let mut map = s.serialize_map(None)?;
        let mut own_meta = None;
        for (k, v) in object.into_iter().flatten() {
            if k == "_meta" {
                own_meta = Some(v);
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        match own_meta.and_then(Value::as_object) {
            None => map.serialize_entry("_meta", self.meta)?,
            Some(own) => {
                let mut merged = own.clone();
                for (k, v) in self.meta_map {
                    // A request's own capabilities (the tasks extension, declared per request)
                    // join the session's.
                    let v = match own.get(k) {
                        Some(mine) if k == CLIENT_CAPABILITIES_META => {
                            super::tasks::merge_capabilities(v, mine)
                        }
                        _ => v.clone(),
                    };
                    merged.insert(k.clone(), v);
                }
                map.serialize_entry("_meta", &merged)?;
            }
        }
        map.end()
    }
}

/// The `resultType` of a result, read from its text: only the top-level member counts.
pub(super) fn result_type(result: &RawValue) -> Result<ResultType, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Kind {
        #[serde(default, rename = "resultType")]
        result_type: Option<ResultType>,
    }
    let kind: Kind = serde_json::from_str(result.get())?;
    Ok(kind.result_type.unwrap_or_default())
}

/// What a -32022 error says the server supports (`data.supported`), when it says.
pub(super) fn supported_versions(error: &RpcError) -> Option<Vec<String>> {
    let supported = error.data.as_ref()?.get("supported")?.as_array()?;
    Some(
        supported
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

/// What a -32022 error says the server supports, when `error` is one that says.
pub(super) fn unsupported_version(error: &RequestError) -> Option<(Vec<String>, &RpcError)> {
    match error {
        RequestError::Rpc(e) if e.code == UNSUPPORTED_PROTOCOL_VERSION => {
            supported_versions(e).map(|theirs| (theirs, e))
        }
        _ => None,
    }
}

/// The first modern version of ours the server lists.
pub(super) fn common_modern(theirs: &[String]) -> Option<&'static str> {
    MODERN_PROTOCOL_VERSIONS
        .iter()
        .find(|v| theirs.iter().any(|t| t == *v))
        .copied()
}

/// The newest legacy version of ours the server lists.
pub(super) fn common_legacy_version(theirs: &[String]) -> Option<&'static str> {
    SUPPORTED_PROTOCOL_VERSIONS
        .iter()
        .find(|v| theirs.iter().any(|t| t == *v))
        .copied()
}

/// Whether the server lists a legacy version this client speaks.
pub(super) fn common_legacy(theirs: &[String]) -> bool {
    common_legacy_version(theirs).is_some()
}

impl Core {
    /// Every version this session may speak, modern first: both eras', or one era's when
    /// [`Config::era`](super::Config::era) forces it.
    pub(super) fn ours(&self) -> Vec<String> {
        let modern = self.config.era != super::EraChoice::Legacy;
        let legacy = self.config.era != super::EraChoice::Modern;
        let modern = MODERN_PROTOCOL_VERSIONS.iter().filter(|_| modern);
        let legacy = SUPPORTED_PROTOCOL_VERSIONS.iter().filter(|_| legacy);
        modern.chain(legacy).map(|v| v.to_string()).collect()
    }

    /// Why the opening ends after the server refused version `requested` (-32022) listing
    /// `theirs`, with no retry left: it refused a version it lists itself (`message` says what it
    /// said), or no version is in common (it may have named none).
    pub(super) fn version_failure(
        &self,
        theirs: Vec<String>,
        requested: &str,
        message: &str,
    ) -> SessionError {
        let ours = self.ours();
        if theirs.iter().any(|t| ours.contains(t)) {
            SessionError::VersionRefused {
                requested: requested.to_owned(),
                supported: theirs,
                message: message.chars().take(MAX_QUOTED_MESSAGE).collect(),
            }
        } else {
            SessionError::NoCommonVersion { theirs, ours }
        }
    }
}

/// The most of a server's error message quoted in a [`SessionError::VersionRefused`].
const MAX_QUOTED_MESSAGE: usize = 256;

/// Whether a JSON-RPC error is one only a modern server sends: it identifies a modern server.
///
/// > "a recognized modern JSON-RPC error (such as `UnsupportedProtocolVersionError`) identifies a
/// > modern server: the client retries with a supported version rather than falling back." — MCP
/// > 2026-07-28, Versioning
pub(super) fn is_modern_error(error: &RpcError) -> bool {
    match error.code {
        UNSUPPORTED_PROTOCOL_VERSION => supported_versions(error).is_some(),
        HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY => true,
        _ => false,
    }
}

impl Core {
    /// Sends the opening's `server/discover` (the modern era's, or the probe); where the opening
    /// goes with it is `opening.rs`'s.
    ///
    /// > "A client that supports both modern … and a legacy version … **SHOULD** probe with
    /// > `server/discover` before sending any other request, setting its preferred modern version
    /// > in `_meta`." — MCP 2026-07-28, stdio § Backward Compatibility
    pub(super) fn send_discover(&mut self, now: Instant) -> RequestId {
        let id = RequestId(self.fresh_id());
        let request = Request::of::<crate::session::request::Discover>(None);
        self.enqueue_as(id, request, now, true, true);
        id
    }

    /// A modern request's result arrived as text: its `resultType` decides. Returns the outcome
    /// to complete the request with, or `None` when the request goes on (another round).
    pub(super) fn modern_result(
        &mut self,
        id: RequestId,
        result: &RawValue,
        now: Instant,
    ) -> Option<Result<Reply, RequestError>> {
        let method = || {
            self.pending
                .get(&id)
                .map(|p| p.method.to_string())
                .unwrap_or_default()
        };
        match result_type(result) {
            Ok(ResultType::Complete) => Some(self.decode(id, result)),
            Ok(ResultType::InputRequired) => self.input_required(id, result, now),
            // A task, to a call that declared the tasks extension on itself (see `tasks.rs`).
            Ok(ResultType::Other(kind))
                if kind == crate::tasks::RESULT_TYPE_TASK && self.asked_for_task(id) =>
            {
                Some(self.decode(id, result))
            }
            Ok(ResultType::Other(kind)) => Some(Err(RequestError::InvalidResult {
                method: method(),
                reason: format!("unknown resultType {kind:?}"),
            })),
            Err(e) => Some(Err(RequestError::InvalidResult {
                method: method(),
                reason: e.to_string(),
            })),
        }
    }

    /// An `input_required` result: the next round, or why there is none.
    ///
    /// > "If an `InputRequiredResult` contains the `requestState` field, the client **MUST** echo
    /// > back the exact value of that field when retrying the original request. … If the
    /// > `InputRequiredResult` does not contain a `requestState` field, the client **MUST NOT**
    /// > include one in the retry." / "The JSON-RPC `id` **MUST** be different between the
    /// > initial request and the retry" — MCP 2026-07-28, Multi Round-Trip Requests
    fn input_required(
        &mut self,
        id: RequestId,
        result: &RawValue,
        now: Instant,
    ) -> Option<Result<Reply, RequestError>> {
        let limit = self.config.max_input_rounds;
        let p = self.pending.get(&id)?;
        let (method, rounds) = (p.method.to_string(), p.rounds);
        let invalid = |reason: String| {
            Some(Err(RequestError::InvalidResult {
                method: method.clone(),
                reason,
            }))
        };
        if !INPUT_REQUIRED_METHODS.contains(&method.as_str()) {
            return invalid(format!("input_required is not allowed for {method}"));
        }
        let asked = self.parse_mending(result.get(), |t| {
            serde_json::from_str::<InputRequiredResult>(t)
        });
        let asked = match asked {
            Ok(r) => r,
            Err(e) => return invalid(e.to_string()),
        };
        let requests = asked.input_requests.unwrap_or_default();
        if requests.is_empty() && asked.request_state.is_none() {
            // "Servers MUST include at least one of inputRequests or requestState"
            return invalid("input_required with neither inputRequests nor requestState".into());
        }
        if rounds >= limit {
            return Some(Err(RequestError::TooManyRounds { limit }));
        }
        if !requests.is_empty() {
            // The application answers them (its handlers, through `Session::respond`); the call
            // goes out again when all are in.
            let round = rounds + 1;
            let keys = match self.ask_inputs(id, requests) {
                Ok(keys) => keys,
                Err(e) => return Some(Err(e)),
            };
            self.pending.set_wire(id, None);
            if let Some(p) = self.pending.get_mut(&id) {
                p.rounds = round;
                p.request_state = asked.request_state;
                p.unsent = true;
                p.inputs = keys.into_iter().map(|k| (k, None)).collect();
            }
            return None;
        }
        // Only the server's state: it is not done yet. Send the request again after a backoff;
        // meanwhile no copy of it is out.
        let round = rounds + 1;
        self.pending.set_wire(id, None);
        if let Some(p) = self.pending.get_mut(&id) {
            p.rounds = round;
            p.request_state = asked.request_state;
            p.unsent = true;
        }
        let at = now.checked_add(backoff(round)).unwrap_or(now);
        self.pending.set_wake(id, Some((at, Wake::Resend)));
        None
    }

    /// Sends request `id` again with a new wire id: the next input-required round (with its
    /// `requestState`), or the retry after a version change.
    pub(super) fn resend(&mut self, id: RequestId) {
        if !matches!(
            self.opening,
            super::opening::Opening::Open {
                era: Era::Modern,
                ..
            }
        ) {
            return;
        }
        let wire = self.fresh_id();
        let Some(p) = self.pending.get_mut(&id) else {
            return;
        };
        let mut params = p.params.json().cloned();
        let inputs = std::mem::take(&mut p.inputs);
        if p.request_state.is_some() || !inputs.is_empty() {
            let object = params.get_or_insert_with(|| Value::Object(Map::new()));
            if let Some(o) = object.as_object_mut() {
                if let Some(state) = &p.request_state {
                    o.insert("requestState".into(), Value::String(state.clone()));
                }
                if !inputs.is_empty() {
                    // > "For each key in the response's inputRequests field, the same key must
                    // > appear here with the associated response." — 2026-07-28 schema
                    let responses: Map<String, Value> = inputs
                        .into_iter()
                        .map(|(k, v)| (k, v.unwrap_or(Value::Null)))
                        .collect();
                    o.insert("inputResponses".into(), Value::Object(responses));
                }
            }
        }
        let params = Params::Json(params);
        let (payload, headers) =
            self.modern
                .encode(wire, &p.method, &params, self.config.transport);
        p.unsent = false;
        let method = p.method.clone();
        self.stats.input_rounds += u64::from(p.rounds > 0);
        self.pending.set_wire(id, Some(wire));
        self.transmits.push_back(Transmit {
            payload,
            kind: TransmitKind::Request {
                id,
                wire: RequestId(wire),
                method,
            },
            headers,
            modern: true,
        });
    }

    /// A modern request's error: a version mismatch is retried once with a version both speak;
    /// the era's own codes become typed errors.
    pub(super) fn modern_error_outcome(
        &mut self,
        id: RequestId,
        error: RpcError,
    ) -> Option<RequestError> {
        if error.code == UNSUPPORTED_PROTOCOL_VERSION {
            if let Some(theirs) = supported_versions(&error) {
                // Once per request, even with the version just sent (see `discover_answered`).
                let retried = self.pending.get(&id).is_none_or(|p| p.version_retried);
                if let (false, Some(v)) = (retried, common_modern(&theirs)) {
                    // > "The client SHOULD select a mutually supported version from the
                    // > `supported` list and retry the request" — MCP 2026-07-28, Versioning
                    self.modern.set_version(v);
                    self.stats.version_retries += 1;
                    if let Some(p) = self.pending.get_mut(&id) {
                        p.version_retried = true;
                    }
                    self.resend(id);
                    return None;
                }
                return Some(RequestError::UnsupportedVersion {
                    requested: self.modern.version.to_owned(),
                    supported: theirs,
                    ours: self.ours(),
                });
            }
        }
        Some(modern_error(error))
    }

    /// Keeps the mirrored headers of the tools on a `tools/list` page (modern era over HTTP),
    /// and leaves out the tools whose annotations are invalid.
    ///
    /// > "Clients using the Streamable HTTP transport **MUST** reject tool definitions where any
    /// > `x-mcp-header` value violates these constraints. Rejection means the client **MUST**
    /// > exclude the invalid tool from the result of `tools/list`. Clients **SHOULD** log a
    /// > warning when rejecting a tool definition, including the tool name and the reason" — MCP
    /// > 2026-07-28, Streamable HTTP § Custom Headers from Tool Parameters
    pub(super) fn screen_tools(
        &mut self,
        first_page: bool,
        page: &mut crate::types::ListToolsResult,
    ) {
        let known = &mut self.modern.tool_headers;
        if first_page {
            known.begin();
        }
        let mut rejected = Vec::new();
        page.tools.retain(|tool| {
            let schema = tool
                .input_schema
                .as_ref()
                .and_then(|s| serde_json::from_str::<Value>(s.get()).ok());
            let Some(schema) = schema else {
                known.remember(&tool.name, ParamHeaders::default());
                return true;
            };
            match ParamHeaders::from_input_schema(&schema) {
                Ok(spec) => {
                    known.remember(&tool.name, spec);
                    true
                }
                Err(e) => {
                    rejected.push(Warning::ToolRejected {
                        tool: tool.name.chars().take(128).collect(),
                        reason: e.to_string(),
                    });
                    known.forget(&tool.name);
                    false
                }
            }
        });
        if page.next_cursor.is_none() {
            known.end();
        }
        self.stats.tools_rejected += rejected.len() as u64;
        self.events.extend(rejected.into_iter().map(Event::Warning));
    }

    /// Whether a `tools/list` read by this session showed `tool` (see `ToolHeaders`).
    pub(super) fn knows_tool(&self, tool: &str) -> bool {
        self.modern.tool_headers.get(tool).is_some()
    }

    /// Whether request `id` is a `tools/list` for the first page (no cursor).
    pub(super) fn is_first_tools_page(&self, id: RequestId) -> bool {
        self.pending.get(&id).is_some_and(|p| {
            p.method == "tools/list" && p.params.json().and_then(|v| v.get("cursor")).is_none()
        })
    }

    /// Refuses a `tools/call` whose mirrored arguments do not fit their declared types (modern
    /// era over HTTP), before anything is sent.
    pub(super) fn check_modern_call(&self, request: &Request) -> Result<(), RequestError> {
        if self.era() != Some(Era::Modern)
            || self.config.transport != TransportKind::Http
            || request.method != "tools/call"
        {
            return Ok(());
        }
        self.modern
            .check_call(&request.params)
            .map_err(RequestError::InvalidArguments)
    }
}

/// A modern error code as its typed error.
pub(super) fn modern_error(error: RpcError) -> RequestError {
    match error.code {
        HEADER_MISMATCH => RequestError::HeaderMismatch(error),
        MISSING_REQUIRED_CLIENT_CAPABILITY => RequestError::MissingCapability {
            required: error
                .data
                .as_ref()
                .and_then(|d| d.get("requiredCapabilities"))
                .cloned()
                .unwrap_or(Value::Null),
            error,
        },
        _ => RequestError::Rpc(error),
    }
}
