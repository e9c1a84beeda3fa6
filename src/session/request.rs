//! Requests: what the application asks for, how each is put on the wire, and how its answer is
//! decoded into a [`Reply`].

use super::Core;
use crate::error::RequestError;
use crate::jsonrpc::RequestId;
use crate::prompts::{CompleteResult, CompletionRef, GetPromptResult, ListPromptsResult};
use crate::resources::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use crate::skills::{DirectoryReadResult, GetSkillResult, ListSkillsResult};
use crate::tasks::{CancelAck, ListTasksResult, Task, TaskCall, UpdateAck};
use crate::trace_context::TraceContext;
use crate::types::{CallToolResult, DiscoverResult, ListToolsResult, Outcome, ResultType};
use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A request to send: a method, its params, how its answer decodes, and its own timeout.
#[derive(Debug, Clone)]
pub struct Request {
    /// Borrowed for the typed requests (their names are constants): no copy per call.
    pub(super) method: Cow<'static, str>,
    pub(super) params: Params,
    pub(super) decoder: Decoder,
    pub(super) timeout: Timeout,
    /// Progress asked for; `Some(Some(max))`: each notification resets the timeout, up to `max`.
    pub(super) progress: Option<Option<Duration>>,
    /// The server capability the request needs, checked before it is sent (the typed requests
    /// of resources, prompts and completion; see `offered`). `None` for any other: a request
    /// built by hand ([`Request::new`]) is the application's to judge.
    pub(super) needs: Option<&'static super::offered::Needs>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Timeout {
    Default,
    After(Duration),
    Never,
}

/// A request whose answer decodes into a known type. Each is declared once, in the table below
/// (method name, result type, [`Reply`] variant); the session decodes its answers through the
/// decoder made from it, and a driver takes its result back out with [`Method::from_reply`].
pub trait Method {
    /// The method name on the wire.
    const NAME: &'static str;
    /// What its `result` decodes into.
    type Result: DeserializeOwned + Outcome;
    /// The decoded result as a [`Reply`].
    fn reply(result: Self::Result) -> Reply;
    /// The result back out of a [`Reply`] of this method, or the reply as it was.
    fn from_reply(reply: Reply) -> Result<Self::Result, Reply>;
}

/// How a pending request's answer is decoded: two functions made for its result type.
#[derive(Clone, Copy)]
pub(super) struct Decoder {
    /// Decodes the `result` member alone.
    pub(super) result: fn(&str) -> Result<Reply, serde_json::Error>,
    /// The fast path: decodes a whole answer (valid UTF-8) with wire id `wire` at once; `None`
    /// in any doubt (the general path then decides, with the same outcome for what the fast path
    /// accepts).
    pub(super) message: fn(&str, u64) -> Option<Reply>,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decoder")
    }
}

impl Decoder {
    /// For a typed request.
    pub(super) fn of<M: Method>() -> Decoder {
        Decoder {
            result: |json| serde_json::from_str::<M::Result>(json).map(M::reply),
            message: |message, id| answer::<M::Result>(message, id).map(M::reply),
        }
    }

    /// For any other request: the result as raw JSON.
    pub(super) fn raw() -> Decoder {
        Decoder {
            result: |json| serde_json::from_str(json).map(Reply::Raw),
            message: |message, id| {
                answer::<Value>(message, id)
                    .filter(|v| !v.is_null())
                    .map(Reply::Raw)
            },
        }
    }

    /// For `initialize`: the result's shape is checked as raw JSON; the handshake decodes it. No
    /// fast path.
    pub(super) fn handshake() -> Decoder {
        Decoder {
            message: |_, _| None,
            ..Decoder::raw()
        }
    }
}

/// The result of a whole message that answers wire id `wire`, parsed once straight into `T`.
fn answer<T: DeserializeOwned>(message: &str, wire: u64) -> Option<T> {
    #[derive(serde::Deserialize)]
    struct Answer<T> {
        id: u64,
        #[serde(default = "Option::default")]
        result: Option<T>,
        #[serde(default)]
        method: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        error: Option<serde::de::IgnoredAny>,
    }
    let a: Answer<T> = serde_json::from_str(message).ok()?;
    if a.id != wire || a.method.is_some() || a.error.is_some() {
        return None;
    }
    a.result
}

/// The table of typed requests: one line each makes the [`Reply`] variant, the [`Method`] marker
/// type and its decoder.
macro_rules! methods {
    ($( $(#[$doc:meta])* $name:ident = $method:literal => $result:ty, $variant:ident; )*) => {
        /// A decoded successful answer.
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum Reply {
            $( $(#[$doc])* $variant($result), )*
            /// The result of any other request, as sent.
            Raw(Value),
        }

        impl Reply {
            /// What the result says it is (`resultType`; absent means complete).
            pub fn result_type(&self) -> ResultType {
                match self {
                    $( Reply::$variant(r) => ResultType::of(r.result_type()).clone(), )*
                    Reply::Raw(v) => match v.get("resultType") {
                        None => ResultType::Complete,
                        Some(t) => serde_json::from_value(t.clone()).unwrap_or_default(),
                    },
                }
            }
        }

        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $name;

            impl Method for $name {
                const NAME: &'static str = $method;
                type Result = $result;
                fn reply(result: $result) -> Reply {
                    Reply::$variant(result)
                }
                fn from_reply(reply: Reply) -> Result<$result, Reply> {
                    match reply {
                        Reply::$variant(result) => Ok(result),
                        other => Err(other),
                    }
                }
            }
        )*
    };
}

methods! {
    /// `tools/list`: a page of tools.
    ListTools = "tools/list" => ListToolsResult, Tools;
    /// `tools/call`: a tool's result (which may still report `isError`).
    CallTool = "tools/call" => CallToolResult, ToolCall;
    /// `server/discover` (2026-07-28): the server's versions, capabilities and identity.
    /// (Boxed: it is the largest reply, and the rarest.)
    Discover = "server/discover" => Box<DiscoverResult>, Discover;
    /// `resources/list`: a page of resources.
    ListResources = "resources/list" => ListResourcesResult, Resources;
    /// `resources/templates/list`: a page of resource templates.
    ListResourceTemplates = "resources/templates/list" => ListResourceTemplatesResult, ResourceTemplates;
    /// `resources/read`: a resource's contents. (Boxed, as the rarer large replies are.)
    ReadResource = "resources/read" => Box<ReadResourceResult>, ResourceRead;
    /// `prompts/list`: a page of prompts.
    ListPrompts = "prompts/list" => ListPromptsResult, Prompts;
    /// `prompts/get`: a prompt's messages. (Boxed.)
    GetPrompt = "prompts/get" => Box<GetPromptResult>, Prompt;
    /// `completion/complete`: suggestions for an argument. (Boxed.)
    Complete = "completion/complete" => Box<CompleteResult>, Completion;
    /// `skills/list` (the skills extension, SEP-2640): a page of skill entries.
    ListSkills = "skills/list" => ListSkillsResult, Skills;
    /// `skills/get` (the skills extension): one skill's entry. (Boxed.)
    GetSkill = "skills/get" => Box<GetSkillResult>, Skill;
    /// `resources/directory/read` (the skills extension, with `directoryRead`): a page of a
    /// directory's children.
    ReadDirectory = "resources/directory/read" => DirectoryReadResult, Directory;
    /// `tools/call` with a `task` member (MCP 2025-11-25): the task created, or the tool's
    /// result from a server that ignored the augmentation. (Boxed.)
    CallToolAsTask = "tools/call" => Box<TaskCall>, TaskCall;
    /// `tasks/get`: a task's state. (Boxed.)
    GetTask = "tasks/get" => Box<Task>, Task;
    /// `tasks/result`: a tool-call task's result, once it ended (the server holds the answer
    /// until then).
    GetTaskResult = "tasks/result" => CallToolResult, TaskResult;
    /// `tasks/cancel`: the task, cancelled (2025-11-25), or an empty acknowledgement
    /// (2026-07-28).
    CancelTask = "tasks/cancel" => Box<CancelAck>, TaskCancelled;
    /// `tasks/update` (2026-07-28): an empty acknowledgement of the input delivered.
    UpdateTask = "tasks/update" => UpdateAck, TaskUpdated;
    /// `tasks/list`: a page of tasks.
    ListTasks = "tasks/list" => ListTasksResult, Tasks;
}

/// `resources/subscribe`.
pub(super) const SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe`.
pub(super) const UNSUBSCRIBE: &str = "resources/unsubscribe";

/// A request's params: any JSON, or a tool call's name and arguments kept apart until they are
/// written, straight into the message. Building `{"name", "arguments"}` as a map first, to write
/// it and free it, cost each call a map, two keys and its frees (~1,500 instructions of the
/// ~16,000 a stdio call costs the client).
#[derive(Debug, Clone)]
pub(super) enum Params {
    /// Any params (`None`: none are sent).
    Json(Option<Value>),
    /// `tools/call`'s. `json` is the same params as one JSON value, built only when asked for
    /// ([`Request::params`], the modern era's HTTP headers). `trace`: the W3C trace context its
    /// `_meta` carries ([`Request::with_trace`]), written in without a map.
    Call {
        name: String,
        arguments: Value,
        json: OnceLock<Value>,
        trace: Option<Box<TraceContext>>,
    },
}

impl Default for Params {
    fn default() -> Self {
        Params::Json(None)
    }
}

impl Params {
    /// Whether there are params to send.
    pub(super) fn is_some(&self) -> bool {
        !matches!(self, Params::Json(None))
    }

    /// The params as one JSON value (a call's is built once, on first asking).
    pub(super) fn json(&self) -> Option<&Value> {
        match self {
            Params::Json(v) => v.as_ref(),
            Params::Call {
                name,
                arguments,
                json,
                trace,
            } => Some(json.get_or_init(|| call_json(name, arguments.clone(), trace.as_deref()))),
        }
    }

    /// The params as JSON to change: a call's become one JSON value first.
    pub(super) fn json_mut(&mut self) -> &mut Option<Value> {
        if let Params::Call {
            name,
            arguments,
            trace,
            ..
        } = self
        {
            let value = call_json(name, std::mem::take(arguments), trace.as_deref());
            *self = Params::Json(Some(value));
        }
        match self {
            Params::Json(v) => v,
            Params::Call { .. } => unreachable!("made JSON just above"),
        }
    }
}

/// `tools/call`'s params as JSON (with the trace context in `_meta`, when there is one).
fn call_json(name: &str, arguments: Value, trace: Option<&TraceContext>) -> Value {
    let mut map = Map::new();
    map.insert("name".into(), Value::String(name.to_owned()));
    map.insert("arguments".into(), arguments);
    if let Some(trace) = trace {
        let mut meta = Map::new();
        trace.insert_into(&mut meta);
        map.insert("_meta".into(), Value::Object(meta));
    }
    Value::Object(map)
}

/// Writes `"_meta":{"traceparent":…,"tracestate":…},` (the member a call's map puts first).
fn write_trace_meta(out: &mut Vec<u8>, trace: &TraceContext) {
    out.extend_from_slice(b"\"_meta\":{");
    let start = out.len();
    trace.write_members(out);
    // The members come each after a comma: the first one's goes.
    out.remove(start);
    out.extend_from_slice(b"},");
}

impl Params {
    /// Appends the params as JSON, as [`Serialize`] writes them (a call's constant parts copied).
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        match self {
            Params::Call {
                name,
                arguments,
                trace,
                ..
            } => {
                out.push(b'{');
                if let Some(trace) = trace {
                    write_trace_meta(out, trace);
                }
                out.extend_from_slice(b"\"arguments\":");
                crate::jsonrpc::write_json(out, arguments);
                out.extend_from_slice(b",\"name\":");
                crate::jsonrpc::write_str(out, name);
                out.push(b'}');
            }
            Params::Json(v) => crate::jsonrpc::write_json(out, v),
        }
    }
}

/// Written as [`Params::json`] would be: a call's members in the order a map of them is written
/// (`serde_json`'s maps are sorted by key), so the bytes are the same either way.
impl Serialize for Params {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Params::Json(v) => v.serialize(s),
            Params::Call {
                name,
                arguments,
                trace,
                ..
            } => {
                let mut map = s.serialize_map(Some(2 + usize::from(trace.is_some())))?;
                if let Some(trace) = trace {
                    let mut meta = Map::new();
                    trace.insert_into(&mut meta);
                    map.serialize_entry("_meta", &meta)?;
                }
                map.serialize_entry("arguments", arguments)?;
                map.serialize_entry("name", name)?;
                map.end()
            }
        }
    }
}

impl Request {
    /// Any request, by method name; its result is handed back as raw JSON ([`Reply::Raw`]).
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Request::with(Cow::Owned(method.into()), Params::Json(params))
    }

    fn with(method: Cow<'static, str>, params: Params) -> Self {
        Request {
            method,
            params,
            decoder: Decoder::raw(),
            timeout: Timeout::Default,
            progress: None,
            needs: None,
        }
    }

    /// A typed request: its answer decodes into `M::Result` (see [`Method`]).
    pub fn of<M: Method>(params: Option<Value>) -> Self {
        Request {
            needs: super::offered::needs(M::NAME),
            ..Request::typed::<M>(Params::Json(params))
        }
    }

    fn typed<M: Method>(params: Params) -> Self {
        Request {
            decoder: Decoder::of::<M>(),
            ..Request::with(Cow::Borrowed(M::NAME), params)
        }
    }

    /// `tools/list` for one page: the first page with `None`, else the previous page's `nextCursor`.
    /// Its reply is [`Reply::Tools`].
    pub fn list_tools(cursor: Option<&str>) -> Self {
        Request::of::<ListTools>(cursor.map(|c| json!({ "cursor": c })))
    }

    /// `tools/call` with the model's raw arguments (`null` becomes `{}`). Its reply is
    /// [`Reply::ToolCall`].
    ///
    /// > "arguments: { [key: string]: unknown }" — MCP 2025-11-25 schema, `CallToolRequestParams`
    pub fn call_tool(name: &str, arguments: Value) -> Self {
        let arguments = if arguments.is_null() {
            json!({})
        } else {
            arguments
        };
        Request::typed::<CallTool>(Params::Call {
            name: name.to_owned(),
            arguments,
            json: OnceLock::new(),
            trace: None,
        })
    }

    /// A task-augmented `tools/call`: in 2025-11-25 `task` in the params, with `ttl` when given
    /// (see [`task_call_params`](crate::tasks::task_call_params)), refused before anything is
    /// sent when the server did not declare `tasks.requests.tools.call`; in 2026-07-28 a plain
    /// call that declares the tasks extension on itself (the server decides; `ttl` is not sent),
    /// refused when the server did not declare the extension. Its reply is
    /// [`Reply::TaskCall`].
    ///
    /// > "If a server's capabilities do not include `tasks.requests.tools.call`, then clients
    /// > **MUST NOT** attempt to use task augmentation on that server's tools" — MCP 2025-11-25,
    /// > Tasks § Tool-Level Negotiation
    pub fn call_tool_as_task(name: &str, arguments: Value, ttl: Option<Duration>) -> Self {
        Request {
            needs: Some(&super::offered::TASK_CALL),
            ..Request::typed::<CallToolAsTask>(Params::Json(Some(crate::tasks::task_call_params(
                name, arguments, ttl,
            ))))
        }
    }

    /// `tasks/get {taskId}` (the server must declare `tasks`). Its reply is [`Reply::Task`].
    pub fn get_task(task_id: &str) -> Self {
        Request::of::<GetTask>(Some(json!({ "taskId": task_id })))
    }

    /// `tasks/result {taskId}`: the server answers once the task ended, with what the call
    /// would have answered. Its reply is [`Reply::TaskResult`].
    ///
    /// > "When a receiver receives a `tasks/result` request for a task in any other non-terminal
    /// > status (`working` or `input_required`), it **MUST** block the response until the task
    /// > reaches a terminal status." — MCP 2025-11-25, Tasks § Result Retrieval
    pub fn task_result(task_id: &str) -> Self {
        Request::of::<GetTaskResult>(Some(json!({ "taskId": task_id })))
    }

    /// `tasks/cancel {taskId}` (the server must declare `tasks.cancel`). Its reply is
    /// [`Reply::TaskCancelled`].
    pub fn cancel_task(task_id: &str) -> Self {
        Request::of::<CancelTask>(Some(json!({ "taskId": task_id })))
    }

    /// `tasks/update {taskId, inputResponses}` (2026-07-28): answers `input_requests`, the
    /// requests an `input_required` task waits for ([`Task::input_requests`]). The session hands
    /// each to the application first (as it does an input-required round's), and sends the
    /// update with their answers once the last is in. Its reply is [`Reply::TaskUpdated`].
    ///
    /// > "Clients **MUST** treat each entry in `inputRequests` as they would the equivalent
    /// > standalone server-to-client request" — Tasks extension, 2026-07-28 § Task Update
    /// > Requests
    pub fn update_task(task_id: &str, input_requests: Map<String, Value>) -> Self {
        Request::of::<UpdateTask>(Some(json!({
            "taskId": task_id,
            super::tasks::INPUTS_TO_ASK: input_requests,
        })))
    }

    /// `tasks/list` for one page (the server must declare `tasks.list`). Its reply is
    /// [`Reply::Tasks`].
    pub fn list_tasks(cursor: Option<&str>) -> Self {
        Request::of::<ListTasks>(cursor.map(|c| json!({ "cursor": c })))
    }

    /// `resources/list` for one page (see [`list_tools`](Self::list_tools) for the cursor). Its
    /// reply is [`Reply::Resources`].
    pub fn list_resources(cursor: Option<&str>) -> Self {
        Request::of::<ListResources>(cursor.map(|c| json!({ "cursor": c })))
    }

    /// `resources/templates/list` for one page. Its reply is [`Reply::ResourceTemplates`].
    pub fn list_resource_templates(cursor: Option<&str>) -> Self {
        Request::of::<ListResourceTemplates>(cursor.map(|c| json!({ "cursor": c })))
    }

    /// `resources/read {uri}`. Its reply is [`Reply::ResourceRead`].
    ///
    /// > "To retrieve resource contents, clients send a `resources/read` request" — MCP
    /// > 2025-11-25, Resources § Reading Resources
    pub fn read_resource(uri: &str) -> Self {
        Request::of::<ReadResource>(Some(json!({ "uri": uri })))
    }

    /// `resources/subscribe {uri}` (legacy era; the server must declare `resources.subscribe`):
    /// the server then sends `notifications/resources/updated` when it changes. Its reply is
    /// [`Reply::Raw`] (an empty result).
    pub fn subscribe_resource(uri: &str) -> Self {
        Request {
            needs: super::offered::needs(SUBSCRIBE),
            ..Request::new(SUBSCRIBE, Some(json!({ "uri": uri })))
        }
    }

    /// `resources/unsubscribe {uri}`. Its reply is [`Reply::Raw`] (an empty result).
    pub fn unsubscribe_resource(uri: &str) -> Self {
        Request {
            needs: super::offered::needs(UNSUBSCRIBE),
            ..Request::new(UNSUBSCRIBE, Some(json!({ "uri": uri })))
        }
    }

    /// `prompts/list` for one page. Its reply is [`Reply::Prompts`].
    pub fn list_prompts(cursor: Option<&str>) -> Self {
        Request::of::<ListPrompts>(cursor.map(|c| json!({ "cursor": c })))
    }

    /// `prompts/get {name, arguments}` (`arguments` left out when empty). Its reply is
    /// [`Reply::Prompt`].
    ///
    /// > "`arguments?: { [key: string]: string }`" — MCP 2025-11-25, schema
    /// > `GetPromptRequestParams`
    pub fn get_prompt(name: &str, arguments: &Map<String, Value>) -> Self {
        let mut params = json!({ "name": name });
        if !arguments.is_empty() {
            params["arguments"] = Value::Object(arguments.clone());
        }
        Request::of::<GetPrompt>(Some(params))
    }

    /// `completion/complete`: suggestions for argument `argument` of a prompt or resource
    /// template, from what was typed so far (`value`) and the arguments already given
    /// (`context`; see [`complete_params`](crate::prompts::complete_params)). Its reply is
    /// [`Reply::Completion`].
    pub fn complete(
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &Map<String, Value>,
    ) -> Self {
        Request::of::<Complete>(Some(crate::prompts::complete_params(
            reference, argument, value, context,
        )))
    }

    /// `skills/list` for one page (the skills extension, SEP-2640; the server must declare it in
    /// `capabilities.extensions`). Its reply is [`Reply::Skills`].
    ///
    /// > "Clients issue `skills/list` and `skills/get` only after observing the server's
    /// > declaration." — SEP-2640 § Capability Negotiation
    pub fn list_skills(cursor: Option<&str>) -> Self {
        // An empty object rather than no params: the extension's own example sends `{}`.
        Request::of::<ListSkills>(Some(match cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        }))
    }

    /// `skills/get {uri}`: the entry of the skill whose `SKILL.md` is at `uri`. Its reply is
    /// [`Reply::Skill`].
    pub fn get_skill(uri: &str) -> Self {
        Request::of::<GetSkill>(Some(json!({ "uri": uri })))
    }

    /// `resources/directory/read {uri, cursor?}`: one page of a directory resource's children
    /// (the server must declare the skills extension with `directoryRead: true`). Its reply is
    /// [`Reply::Directory`].
    ///
    /// > "Clients **MUST NOT** call `resources/directory/read` against a server that has not
    /// > declared `directoryRead: true`." — SEP-2640 § Capability Negotiation
    pub fn read_directory(uri: &str, cursor: Option<&str>) -> Self {
        let mut params = json!({ "uri": uri });
        if let Some(c) = cursor {
            params["cursor"] = json!(c);
        }
        Request::of::<ReadDirectory>(Some(params))
    }

    /// Sets this request's timeout, replacing the session default.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Timeout::After(timeout);
        self
    }

    /// This request never times out.
    pub fn no_timeout(mut self) -> Self {
        self.timeout = Timeout::Never;
        self
    }

    /// Asks for progress: the session puts a `progressToken` (unique among active requests) in
    /// `params._meta`, and each `notifications/progress` for it is an
    /// [`Event::Progress`](super::Event::Progress) until the answer.
    pub fn with_progress(mut self) -> Self {
        self.progress.get_or_insert(None);
        self
    }

    /// Asks for progress, and lets each progress notification restart the request's timeout — a
    /// long tool that keeps reporting is not cut off — but never past `max_total` after it was
    /// sent: the request fails with [`RequestError::TotalTimeout`] then, and with
    /// [`RequestError::Timeout`] when a whole timeout passes without an answer or progress. The
    /// maximum applies also to a request with no timeout ([`no_timeout`](Self::no_timeout)),
    /// and a `max_total` too large to add to an instant is none.
    ///
    /// [`RequestError::TotalTimeout`]: crate::RequestError::TotalTimeout
    /// [`RequestError::Timeout`]: crate::RequestError::Timeout
    pub fn reset_timeout_on_progress(mut self, max_total: Duration) -> Self {
        self.progress = Some(Some(max_total));
        self
    }

    /// `logging/setLevel` (legacy era): the server sends log messages of `level` and above.
    pub fn set_log_level(level: &str) -> Self {
        Request::new("logging/setLevel", Some(json!({ "level": level })))
    }

    /// Carries `trace`, the W3C trace context of the caller's span, in `params._meta`
    /// (`traceparent`, `tracestate`), so that the server's spans join the caller's trace. Params
    /// that already have a `_meta.traceparent` or `_meta.tracestate` keep theirs and get neither
    /// key: the caller propagates a context of its own (a proxy forwarding one it received,
    /// say), and a `tracestate` belongs with the `traceparent` it came with. Params that are not
    /// a JSON object are sent as given. A tool call's arguments are not rewritten: the keys are
    /// written beside them.
    ///
    /// > "inject `traceparent` and `tracestate` to the MCP message `params._meta` when creating
    /// > request or notification" — OpenTelemetry semantic conventions for MCP, § Context
    /// > propagation (see [`trace_context`](crate::trace_context))
    pub fn with_trace(mut self, trace: TraceContext) -> Self {
        match &mut self.params {
            Params::Call {
                trace: slot, json, ..
            } => {
                *slot = Some(Box::new(trace));
                // Made before (`params()`), without the trace: made anew when asked.
                *json = OnceLock::new();
            }
            Params::Json(params) => {
                let object = params.get_or_insert_with(|| Value::Object(Map::new()));
                if let Some(o) = object.as_object_mut() {
                    let meta = o
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Some(meta) = meta.as_object_mut() {
                        trace.insert_into(meta);
                    }
                }
            }
        }
        self
    }

    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params, as they will be sent (before any `_meta` the era adds).
    pub fn params(&self) -> Option<&Value> {
        self.params.json()
    }
}

impl Core {
    /// The fast path for the common case: an answer to a pending request whose id shows at the
    /// message's start or end is parsed once, straight into its result type, instead of once as an
    /// envelope and again as a result. Anything else (and any doubt) takes the general path, which
    /// gives the same outcome for what the fast path accepts.
    pub(super) fn fast_response(&mut self, message: &[u8], now: Instant) -> bool {
        let Some(wire) = crate::jsonrpc::plain_id(message)
            .or_else(|| crate::framing::peek_id(message).and_then(|id| id.parse::<u64>().ok()))
        else {
            return false;
        };
        let Some(id) = self.pending.by_wire(wire) else {
            return false;
        };
        // The message's text is checked once, whole, rather than string by string as it is
        // parsed from bytes (~600 instructions less a call for a legacy echo answer, ~1,200 for a
        // modern one, whose `_meta` is longer). Not UTF-8: the general path mends it.
        let Ok(message) = std::str::from_utf8(message) else {
            return false;
        };
        let reply = self
            .pending
            .get(&id)
            .and_then(|p| (p.decoder.message)(message, wire));
        match reply {
            // A modern result that is not complete takes the general path, which reads it whole.
            Some(reply) if self.modern_for(id) && reply.result_type() != ResultType::Complete => {
                false
            }
            Some(reply) => {
                self.complete(id, Ok(reply), now);
                true
            }
            None => false,
        }
    }

    pub(super) fn decode(
        &mut self,
        id: RequestId,
        result: &RawValue,
    ) -> Result<Reply, RequestError> {
        let Some(decode) = self.pending.get(&id).map(|p| p.decoder.result) else {
            return Err(RequestError::Closed);
        };
        self.parse_mending(result.get(), decode)
            .map_err(|e| RequestError::InvalidResult {
                method: self
                    .pending
                    .get(&id)
                    .map(|p| p.method.to_string())
                    .unwrap_or_default(),
                reason: e.to_string(),
            })
    }

    /// Parses `text` (a result, borrowed from a message that was read) with `parse`. A lone
    /// surrogate escape passes through the reading of the message (a raw value is not decoded),
    /// and serde_json refuses it only when a string is: so when `parse` fails and `text` holds
    /// one, it is mended (see [`text`](crate::text)) and parsed once more, counted and reported
    /// like a mended message. Otherwise the first error stands.
    pub(super) fn parse_mending<T>(
        &mut self,
        text: &str,
        parse: impl Fn(&str) -> Result<T, serde_json::Error>,
    ) -> Result<T, serde_json::Error> {
        let error = match parse(text) {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        let Some((mended, n)) = crate::text::mend_surrogates(text) else {
            return Err(error);
        };
        let value = parse(&mended).map_err(|_| error)?;
        self.stats.repaired += 1;
        self.events
            .push_back(super::Event::Warning(crate::Warning::Repaired {
                what: crate::text::Damage {
                    invalid_utf8: 0,
                    lone_surrogates: n,
                },
                len: text.len(),
            }));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_id_reads_the_common_forms_and_leaves_the_rest_to_peek_id() {
        let cases: &[(&str, Option<u64>)] = &[
            (r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, Some(7)),
            (r#"{"id":42,"jsonrpc":"2.0","result":{}}"#, Some(42)),
            (r#"{"result":{},"jsonrpc":"2.0","id":9}"#, Some(9)),
            (r#"{"jsonrpc":"2.0","id":0}"#, Some(0)),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":1}"#,
                Some(u64::MAX),
            ),
            // Not a plain number: peek_id's to read.
            (r#"{"jsonrpc":"2.0","id":07,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":7.5,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":-7,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":"7","result":{}}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":1}"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0", "id":7,"result":{}}"#, None),
            // The id of a nested object, or none at the end.
            (r#"{"result":{"id":3}}"#, None),
            (r#"{"result":{},"id":"3"}"#, None),
            (r#"{"result":{},"id":3 }"#, None),
            ("", None),
        ];
        for (message, want) in cases {
            assert_eq!(
                crate::jsonrpc::plain_id(message.as_bytes()),
                *want,
                "{message}"
            );
        }
    }

    #[test]
    fn a_call_is_written_as_its_params_map_would_be() {
        for arguments in [
            json!({}),
            json!({"text": "hi", "n": [1, 2, {"z": null}]}),
            json!("not an object"),
            json!({"_meta": {"k": 1}}),
        ]
        .into_iter()
        .flat_map(|a| [(a.clone(), false), (a, true)])
        {
            let (arguments, traced) = arguments;
            let mut call = Request::call_tool("echo \"quoted\"", arguments.clone());
            let mut map = Request::of::<CallTool>(Some(json!({
                "name": "echo \"quoted\"",
                "arguments": arguments,
            })));
            if traced {
                let trace = TraceContext::new(
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                    Some("a=\"1\""),
                )
                .unwrap();
                call = call.with_trace(trace.clone());
                map = map.with_trace(trace);
            }
            let bytes = |r: &Request| serde_json::to_string(&r.params).unwrap();
            assert_eq!(bytes(&call), bytes(&map));
            assert_eq!(call.params(), map.params());
            let mut made = call.params.clone();
            assert_eq!(made.json_mut().as_ref(), map.params());
            // Both the session's ways of writing a request give serde_json's bytes.
            let mut written = Vec::new();
            call.params.write(&mut written);
            assert_eq!(String::from_utf8(written).unwrap(), bytes(&map));
            let legacy =
                crate::jsonrpc::encode_request(RequestId(7), "tools/call", Some(&call.params));
            let envelope = format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}}"#,
                bytes(&map)
            );
            assert_eq!(String::from_utf8(legacy).unwrap(), envelope);
            let modern = super::super::modern::Modern::new(
                &crate::types::Implementation {
                    name: "t".into(),
                    version: "1".into(),
                    title: None,
                    extra: Map::new(),
                },
                &crate::capabilities::ClientCapabilities::default(),
            );
            for transport in [
                super::super::TransportKind::Stream,
                super::super::TransportKind::Http,
            ] {
                let (call_bytes, call_headers) =
                    modern.encode(7, "tools/call", &call.params, transport);
                let (map_bytes, map_headers) =
                    modern.encode(7, "tools/call", &map.params, transport);
                assert_eq!(
                    String::from_utf8(call_bytes).unwrap(),
                    String::from_utf8(map_bytes).unwrap()
                );
                assert_eq!(call_headers, map_headers);
            }
        }
    }
}
