//! Tasks: a `tools/call` the server runs in the background, answered at once with a task the
//! client polls (`tasks/get`) and may cancel (`tasks/cancel`), in both protocol eras.
//!
//! - MCP 2025-11-25 (SEP-1686, experimental): the client asks for a task with a `task` member in
//!   the call's params, on a server that declared `tasks.requests.tools.call`; the result comes
//!   from `tasks/result`, tasks are listed with `tasks/list`.
//!
//!   > "Task-augmented requests: The server accepts the request and immediately returns a
//!   > `CreateTaskResult` containing task data. The actual operation result becomes available
//!   > later through `tasks/result` after the task completes." — MCP 2025-11-25, Utilities § Tasks
//!
//! - MCP 2026-07-28: the extension `io.modelcontextprotocol/tasks` (SEP-2663). The client
//!   declares it in a request's own capabilities (`_meta`), the server decides whether to answer
//!   with a task (`resultType: "task"`, the task's members flat in the result); `tasks/get`
//!   carries the result (or the error, or the input the task waits for, answered with
//!   `tasks/update`); there is no `tasks/result` nor `tasks/list`.
//!
//!   > "Task creation is server-directed: the client signals support by including the extension
//!   > in its per-request capabilities, and the server decides on a per-request basis whether to
//!   > materialize a task." — Tasks extension (`io.modelcontextprotocol/tasks`), 2026-07-28
//!
//! This module holds the pure part: the task object and its states (read in either era's
//! names), the result of a task-augmented call (a task, or a plain result), the `tools/call`
//! params of the old era, whether a call goes as a task ([`call_mode`]), when to poll next
//! ([`next_poll`], time as an input), what a poll's answer means ([`poll_step_in`]), a finished
//! task's outcome ([`outcome`]), the input a task still waits for ([`unanswered_inputs`]) and the
//! status notifications ([`status_notification`]). The typed requests are
//! [`Request::call_tool_as_task`](crate::Request::call_tool_as_task),
//! [`Request::get_task`](crate::Request::get_task) and the others; the session puts each in its
//! era's form, and refuses it before anything is sent when the server did not declare what it
//! needs, or the era has no such request
//! ([`RequestError::NotInEra`]: `tasks/result` and `tasks/list` in
//! 2026-07-28, `tasks/update` in 2025-11-25).

use crate::error::RequestError;
use crate::jsonrpc::RpcError;
use crate::types::{CallToolResult, Outcome, ResultType};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The extension's identifier (2026-07-28), a key of `capabilities.extensions`.
///
/// > "This extension is identified as: `io.modelcontextprotocol/tasks`." — Tasks extension,
/// > 2026-07-28 § Extension Identifier
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `resultType` of a result that is a task (2026-07-28).
///
/// > "Servers **MUST** set `resultType` to `"task"` when returning a `CreateTaskResult` so that
/// > clients can distinguish it from a standard result." — Tasks extension, 2026-07-28 §
/// > Polymorphic Results
pub const RESULT_TYPE_TASK: &str = "task";

/// The longest status message kept, in bytes: a longer one is cut (at a character boundary).
pub const MAX_STATUS_MESSAGE: usize = 4096;

/// The most input-request keys a waiting caller remembers as answered for one task; past it the
/// oldest are not forgotten but no new key is remembered (a server that keeps minting keys is
/// answered again, never without bound in memory).
pub const MAX_ANSWERED_INPUTS: usize = 1024;

/// The `_meta` key that ties a message to its task.
///
/// > "All requests, notifications, and responses related to a task **MUST** include the
/// > `io.modelcontextprotocol/related-task` key in their `_meta` field, with the value set to an
/// > object with a `taskId` matching the associated task ID." — MCP 2025-11-25, Tasks §
/// > Associating Task-Related Messages
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The `_meta` key of a `CreateTaskResult` whose string a host may hand the model at once.
pub const MODEL_IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";

/// The longest task id kept, in bytes: a longer one is refused as an invalid result.
pub const MAX_TASK_ID_LEN: usize = 1024;

/// The shortest wait between two polls, whatever `pollInterval` says.
pub const MIN_POLL: Duration = Duration::from_millis(50);

/// The longest wait between two polls, whatever `pollInterval` says.
pub const MAX_POLL: Duration = Duration::from_secs(30);

/// The wait between polls when the server suggests none.
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// A task's state.
///
/// > "`working`: The request is currently being processed. / `input_required`: The receiver needs
/// > input from the requestor. … / `completed` / `failed` / `cancelled`" — MCP 2025-11-25, Tasks §
/// > Task Status
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Being processed.
    Working,
    /// The server needs input (an elicitation, a sampling request) delivered through
    /// `tasks/result`.
    InputRequired,
    /// Done: its result is available.
    Completed,
    /// Done, unsuccessfully (for a tool call this includes a result with `isError`).
    Failed,
    /// Cancelled before it completed.
    Cancelled,
}

impl TaskStatus {
    /// Whether it is terminal (`completed`, `failed` or `cancelled`).
    ///
    /// > "Tasks with a `completed`, `failed`, or `cancelled` status are in a terminal state and
    /// > **MUST NOT** transition to any other status" — MCP 2025-11-25, Tasks § Task Status
    /// > Lifecycle
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// Whether a task may move from `self` to `next` (staying put is allowed: two polls may see
    /// the same state).
    ///
    /// > "From `working`: may move to `input_required`, `completed`, `failed`, or `cancelled` /
    /// > From `input_required`: may move to `working`, `completed`, `failed`, or `cancelled`" —
    /// > MCP 2025-11-25, Tasks § Task Status Lifecycle
    pub fn may_become(&self, next: &TaskStatus) -> bool {
        self == next || !self.is_terminal()
    }

    /// The state as sent.
    pub fn as_str(&self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// A number of milliseconds read leniently: a non-negative number (whole or not), else `None`
/// (a `ttl` of `null` is unlimited; an odd one is a hint ignored).
fn lenient_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        _ => None,
    })
}

/// A status message, cut at [`MAX_STATUS_MESSAGE`] bytes (a longer one is a server's mistake,
/// not a reason to refuse the task).
fn capped_message<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.map(|mut m| {
        if m.len() > MAX_STATUS_MESSAGE {
            let mut cut = MAX_STATUS_MESSAGE;
            while !m.is_char_boundary(cut) {
                cut -= 1;
            }
            m.truncate(cut);
        }
        m
    }))
}

/// A task id: a string no longer than [`MAX_TASK_ID_LEN`].
///
/// > "Task IDs **MUST** be a string value." — MCP 2025-11-25, Tasks § Task ID Requirements
fn task_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let id = String::deserialize(d)?;
    if id.len() > MAX_TASK_ID_LEN {
        return Err(serde::de::Error::custom(format!(
            "a task id of {} bytes, over the limit of {MAX_TASK_ID_LEN}",
            id.len()
        )));
    }
    Ok(id)
}

/// A task, as `tasks/get`, `tasks/cancel`, `tasks/list` and a task-augmented call return it.
///
/// > "`taskId` / `status` / `statusMessage` / `createdAt` / `ttl` / `pollInterval` /
/// > `lastUpdatedAt`" — MCP 2025-11-25, Tasks § Data Types
///
/// Its timestamps are kept as sent (the client never reads the server's clock); `ttl` and
/// `pollInterval` are read leniently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The id the server gave it.
    #[serde(deserialize_with = "task_id")]
    pub task_id: String,
    /// Its state.
    pub status: TaskStatus,
    /// A human-readable message about its state (error details for a failed task), cut at
    /// [`MAX_STATUS_MESSAGE`] bytes.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "capped_message"
    )]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When its state last changed (ISO 8601), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    /// How long the server keeps it after its creation, in milliseconds (`None`: unlimited or
    /// not said); `ttl` in 2025-11-25, `ttlMs` in 2026-07-28.
    #[serde(default, alias = "ttlMs", deserialize_with = "lenient_ms")]
    pub ttl: Option<u64>,
    /// The server's suggested wait between polls, in milliseconds; `pollInterval` in 2025-11-25,
    /// `pollIntervalMs` in 2026-07-28.
    #[serde(default, alias = "pollIntervalMs", deserialize_with = "lenient_ms")]
    pub poll_interval: Option<u64>,
    /// A completed task's result, inlined (2026-07-28 `tasks/get` and status notifications).
    ///
    /// > "`completed`: The request completed successfully and results are available in the
    /// > `result` field." — Tasks extension, 2026-07-28 § Task Status
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// A failed task's JSON-RPC error, inlined (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// What an `input_required` task waits for (2026-07-28): server-to-client requests by key,
    /// answered with `tasks/update`.
    #[serde(
        default,
        rename = "inputRequests",
        skip_serializing_if = "Option::is_none"
    )]
    pub input_requests: Option<Map<String, Value>>,
}

impl Outcome for Task {
    fn result_type(&self) -> Option<&ResultType> {
        None
    }
}

/// The answer to a task-augmented `tools/call`: the task created, or — from a server that
/// processed the call normally — the tool's result itself.
///
/// > "Receivers that do not declare the task capability for a request type **MUST** process
/// > requests of that type normally, ignoring any task-augmentation metadata if present." — MCP
/// > 2025-11-25, Tasks § Task Support and Handling
///
/// > "A client that has negotiated this extension **MUST** be prepared to handle either
/// > `CallToolResult` or `CreateTaskResult` in response to any supported request it issues." —
/// > Tasks extension, 2026-07-28 § Capability Negotiation
///
/// A result whose `resultType` is `"task"` is a task whose members are the result's own
/// (2026-07-28: `type CreateTaskResult = Result & Task`); one with a `task` object is a task
/// (2025-11-25); any other is read as a `CallToolResult`.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskCall {
    /// The server created a task (`CreateTaskResult`).
    Created(CreateTaskResult),
    /// The server answered at once, with the tool's result.
    Done(CallToolResult),
}

impl Outcome for TaskCall {
    fn result_type(&self) -> Option<&ResultType> {
        match self {
            TaskCall::Created(_) => None,
            TaskCall::Done(r) => r.result_type(),
        }
    }
}

impl<'de> Deserialize<'de> for TaskCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        #[derive(Deserialize)]
        struct Probe {
            #[serde(default)]
            task: Option<serde::de::IgnoredAny>,
            #[serde(default, rename = "resultType")]
            result_type: Option<Value>,
        }
        let probe: Probe = serde_json::from_str(raw.get()).map_err(serde::de::Error::custom)?;
        let err = serde::de::Error::custom;
        if probe.result_type.as_ref().and_then(Value::as_str) == Some(RESULT_TYPE_TASK) {
            #[derive(Deserialize)]
            struct Flat {
                #[serde(flatten)]
                task: Task,
                #[serde(default, rename = "_meta")]
                meta: Option<Value>,
            }
            let flat: Flat = serde_json::from_str(raw.get()).map_err(err)?;
            return Ok(TaskCall::Created(CreateTaskResult {
                task: flat.task,
                meta: flat.meta,
            }));
        }
        if probe.task.is_some() {
            serde_json::from_str(raw.get())
                .map(TaskCall::Created)
                .map_err(err)
        } else {
            serde_json::from_str(raw.get())
                .map(TaskCall::Done)
                .map_err(err)
        }
    }
}

/// `CreateTaskResult`: the task a task-augmented request created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// The task.
    pub task: Task,
    /// The `_meta` member, as sent (it may hold [`MODEL_IMMEDIATE_RESPONSE`]).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl CreateTaskResult {
    /// The string the server suggests handing the model while the task runs, when it gave one.
    pub fn model_immediate_response(&self) -> Option<&str> {
        self.meta.as_ref()?.get(MODEL_IMMEDIATE_RESPONSE)?.as_str()
    }
}

/// The `tasks/list` result: a page of tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// The tasks on this page.
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// The next page's cursor (opaque), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Outcome for ListTasksResult {
    fn result_type(&self) -> Option<&ResultType> {
        None
    }
}

/// What a tool says of being called as a task (`execution.taskSupport`).
///
/// > "If `execution.taskSupport` is not present or `"forbidden"`, clients **MUST NOT** attempt to
/// > invoke the tool as a task. … If `"optional"`, clients **MAY** invoke the tool as a task or as
/// > a normal request. … If `"required"`, clients **MUST** invoke the tool as a task." — MCP
/// > 2025-11-25, Tasks § Tool-Level Negotiation
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Never as a task (also when absent, or any other value).
    #[default]
    Forbidden,
    /// Either way.
    Optional,
    /// Only as a task.
    Required,
}

impl TaskSupport {
    /// A tool's, read from its object as listed.
    pub fn of(tool: &crate::Tool) -> TaskSupport {
        #[derive(Deserialize)]
        struct Execution {
            #[serde(default, rename = "taskSupport")]
            task_support: Option<Value>,
        }
        #[derive(Deserialize)]
        struct Fields {
            #[serde(default)]
            execution: Option<Execution>,
        }
        let fields: Option<Fields> = serde_json::from_str(tool.raw().get()).ok();
        match fields
            .and_then(|f| f.execution)
            .and_then(|e| e.task_support)
            .as_ref()
            .and_then(Value::as_str)
        {
            Some("required") => TaskSupport::Required,
            Some("optional") => TaskSupport::Optional,
            _ => TaskSupport::Forbidden,
        }
    }
}

/// Whether a server's capabilities (as declared at the opening) take task-augmented
/// `tools/call`s: `tasks.requests.tools.call` present.
///
/// > "If a server's capabilities do not include `tasks.requests.tools.call`, then clients **MUST
/// > NOT** attempt to use task augmentation on that server's tools, regardless of the
/// > `execution.taskSupport` value." — MCP 2025-11-25, Tasks § Tool-Level Negotiation
pub fn server_takes_task_calls(capabilities: Option<&Value>) -> bool {
    // The same reading as every request's check of what the server offered.
    let (capability, flag) = crate::session::offered::TASK_CALL;
    crate::session::offered::declared(capabilities, capability, flag)
}

/// How a call goes: plainly, or as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallMode {
    /// A normal `tools/call`.
    Plain,
    /// A task-augmented `tools/call`, polled to its end.
    Task,
}

/// How to call a tool whose `execution.taskSupport` is `support` on a server that does (or not)
/// take task calls, when the caller asks for a task (`want_task`) or not: as a task when the
/// tool requires it, or when the caller asks and the tool allows it — and never when the server
/// did not declare `tasks.requests.tools.call` or the tool forbids it.
pub fn call_mode(server_takes_tasks: bool, support: TaskSupport, want_task: bool) -> CallMode {
    match (server_takes_tasks, support) {
        (true, TaskSupport::Required) => CallMode::Task,
        (true, TaskSupport::Optional) if want_task => CallMode::Task,
        _ => CallMode::Plain,
    }
}

/// The wait before the next `tasks/get` for `task`: its `pollInterval`, within [`MIN_POLL`] and
/// [`MAX_POLL`], or [`DEFAULT_POLL`] when it gives none.
///
/// > "Requestors **SHOULD** respect the `pollInterval` provided in responses when determining
/// > polling frequency." — MCP 2025-11-25, Tasks § Getting Tasks
pub fn poll_delay(task: &Task) -> Duration {
    task.poll_interval
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_POLL)
        .clamp(MIN_POLL, MAX_POLL)
}

/// When to poll `task` next, seen at `now`, but no later than `deadline` (the call's timeout):
/// `None` when the deadline comes first (the caller then gives up and cancels the task).
pub fn next_poll(task: &Task, now: Instant, deadline: Option<Instant>) -> Option<Instant> {
    let at = now.checked_add(poll_delay(task)).unwrap_or(now);
    match deadline {
        Some(d) if d <= now => None,
        Some(d) => Some(at.min(d)),
        None => Some(at),
    }
}

/// What a poll's answer means for a caller waiting on a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollStep {
    /// Still running: poll again (a changed `statusMessage` is worth showing as progress).
    Wait,
    /// Ask `tasks/result` now (2025-11-25): the task ended, or it needs input (which comes
    /// through `tasks/result`).
    ///
    /// > "When the requestor encounters the `input_required` status, it **SHOULD** preemptively
    /// > call `tasks/result`." — MCP 2025-11-25, Tasks § Input Required Status
    FetchResult,
    /// Answer the task's `inputRequests` with `tasks/update` (2026-07-28), then poll again.
    ///
    /// > "When a client observes a `tasks/get` response (or `notifications/tasks` notification)
    /// > with `status: "input_required"`, the client **SHOULD** fulfill the outstanding requests
    /// > in `inputRequests` by sending one or more `tasks/update` requests with corresponding
    /// > `inputResponses`." — Tasks extension, 2026-07-28 § Task Update Requests
    Answer,
    /// The task ended and its answer carries the outcome (2026-07-28): read it with
    /// [`outcome`].
    Ended,
    /// The server broke the lifecycle: a terminal task came back to life, or a poll answered for
    /// another task.
    Invalid(String),
}

/// Reads a poll's answer `seen` for the task `id` last seen in state `before` (2025-11-25).
pub fn poll_step(id: &str, before: &TaskStatus, seen: &Task) -> PollStep {
    poll_step_in(false, id, before, seen)
}

/// Reads a poll's answer `seen` for the task `id` last seen in state `before`: in 2026-07-28
/// (`inline`) a finished task carries its outcome and a task waiting for input carries the
/// requests to answer; in 2025-11-25 both come through `tasks/result`.
pub fn poll_step_in(inline: bool, id: &str, before: &TaskStatus, seen: &Task) -> PollStep {
    if seen.task_id != id {
        return PollStep::Invalid(format!(
            "tasks/get for task {id:?} answered with task {:?}",
            excerpt(&seen.task_id)
        ));
    }
    if !before.may_become(&seen.status) {
        return PollStep::Invalid(format!(
            "task {id:?} went from {} to {}, out of a terminal state",
            before.as_str(),
            seen.status.as_str()
        ));
    }
    match (&seen.status, inline) {
        (TaskStatus::Working, _) => PollStep::Wait,
        (_, false) => PollStep::FetchResult,
        // No request published yet (or all answered): the server is still on it.
        (TaskStatus::InputRequired, true)
            if seen.input_requests.as_ref().is_none_or(Map::is_empty) =>
        {
            PollStep::Wait
        }
        (TaskStatus::InputRequired, true) => PollStep::Answer,
        (_, true) => PollStep::Ended,
    }
}

/// The outcome of a task that ended, as its 2026-07-28 answer carries it: a completed task's
/// `result` (a tool's result, `isError` included), a failed task's JSON-RPC `error` (as
/// [`RequestError::Rpc`]), or — cancelled — [`RequestError::Cancelled`].
///
/// > "`failed`: The request failed due to a JSON-RPC error during execution. The task will
/// > include the `error` field with the JSON-RPC error details." / "Errors within the context of
/// > a protocol method result **MUST** use the `completed` status with the error details in the
/// > `result` field." — Tasks extension, 2026-07-28 § Task Status, § Task Execution Errors
pub fn outcome(task: &Task) -> Result<CallToolResult, RequestError> {
    let invalid = |reason: String| RequestError::InvalidResult {
        method: "tasks/get".into(),
        reason,
    };
    match task.status {
        TaskStatus::Completed => {
            let result = task.result.as_ref().ok_or_else(|| {
                invalid(format!(
                    "task {:?} completed without a result",
                    excerpt(&task.task_id)
                ))
            })?;
            CallToolResult::deserialize(result).map_err(|e| invalid(e.to_string()))
        }
        TaskStatus::Failed => {
            let error = task
                .error
                .as_ref()
                .and_then(|e| RpcError::deserialize(e).ok())
                .unwrap_or_else(|| RpcError {
                    code: -32603,
                    message: task
                        .status_message
                        .clone()
                        .unwrap_or_else(|| "the task failed, without an error".into()),
                    data: None,
                });
            Err(RequestError::Rpc(error))
        }
        TaskStatus::Cancelled => Err(RequestError::Cancelled(format!(
            "task {:?} was cancelled{}",
            excerpt(&task.task_id),
            task.status_message
                .as_deref()
                .map(|m| format!(": {}", excerpt(m)))
                .unwrap_or_default()
        ))),
        TaskStatus::Working | TaskStatus::InputRequired => Err(invalid(format!(
            "task {:?} has not ended",
            excerpt(&task.task_id)
        ))),
    }
}

/// The input requests of `task` not answered yet (`answered` holds the keys already answered):
/// what the next `tasks/update` answers.
///
/// > "Clients **SHOULD** deduplicate `inputRequests` keys across consecutive polls to avoid
/// > presenting the same request to the user or model more than once." — Tasks extension,
/// > 2026-07-28 § Task Update Requests
pub fn unanswered_inputs(task: &Task, answered: &HashSet<String>) -> Map<String, Value> {
    task.input_requests
        .iter()
        .flatten()
        .filter(|(k, _)| !answered.contains(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Remembers `keys` as answered, within [`MAX_ANSWERED_INPUTS`].
pub fn remember_answered(answered: &mut HashSet<String>, keys: impl IntoIterator<Item = String>) {
    for key in keys {
        if answered.len() >= MAX_ANSWERED_INPUTS {
            return;
        }
        answered.insert(key);
    }
}

/// The task a status notification tells of: `notifications/tasks/status` (2025-11-25, the task's
/// members as params) or `notifications/tasks` (2026-07-28, a whole `DetailedTask`); `None` for
/// any other notification, or params that are not a task.
///
/// > "When a task status changes, receivers **MAY** send a `notifications/tasks/status`
/// > notification to inform the requestor of the change." — MCP 2025-11-25, Tasks § Task Status
/// > Notification
///
/// > "Each notification carries a complete `DetailedTask` for the current status, identical to
/// > what `tasks/get` would have returned at that moment." — Tasks extension, 2026-07-28 § Task
/// > Status Notifications
///
/// A notification is a hint: a caller may poll at once on one, never stops polling for want of
/// one.
pub fn status_notification(method: &str, params: Option<&Value>) -> Option<Task> {
    if !is_status_notification(method) {
        return None;
    }
    Task::deserialize(params?).ok()
}

/// Whether `method` is a task status notification of either era.
pub fn is_status_notification(method: &str) -> bool {
    method == "notifications/tasks/status" || method == "notifications/tasks"
}

/// Whether `error` is a server's refusal of a call made without the tasks extension, naming it:
/// the call can only be made as a task (2026-07-28).
///
/// > "If a server is unable to service a request to a client that does not declare this
/// > extension capability without returning `CreateTaskResult`, the server **MUST** return an
/// > error with the code `-32021` (Missing Required Client Capability), indicating the required
/// > extension in the error response" — Tasks extension, 2026-07-28 § Capability Negotiation
pub fn requires_tasks_extension(error: &RequestError) -> bool {
    match error {
        RequestError::MissingCapability { required, .. } => required
            .get("extensions")
            .and_then(|e| e.get(TASKS_EXTENSION))
            .is_some(),
        _ => false,
    }
}

/// The answer to `tasks/cancel`: the task as cancelled (2025-11-25), or an empty
/// acknowledgement (2026-07-28: the state is observed with the next `tasks/get`).
///
/// > "On success, the server **MUST** acknowledge the request with an empty result." — Tasks
/// > extension, 2026-07-28 § Task Cancellation
#[derive(Debug, Clone, PartialEq)]
pub struct CancelAck {
    /// The task, when the answer carries one.
    pub task: Option<Task>,
}

impl Outcome for CancelAck {
    fn result_type(&self) -> Option<&ResultType> {
        None
    }
}

impl<'de> Deserialize<'de> for CancelAck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        if value.get("taskId").is_none() {
            return Ok(CancelAck { task: None });
        }
        Task::deserialize(&value)
            .map(|t| CancelAck { task: Some(t) })
            .map_err(serde::de::Error::custom)
    }
}

/// The answer to `tasks/update` (2026-07-28): an empty acknowledgement.
///
/// > "On success, the server **MUST** acknowledge the request with an empty result. The
/// > acknowledgement is _eventually consistent_" — Tasks extension, 2026-07-28 § Task Update
/// > Requests
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UpdateAck {}

impl Outcome for UpdateAck {
    fn result_type(&self) -> Option<&ResultType> {
        None
    }
}

/// Whether a server's capabilities (its `server/discover` answer) declare the tasks extension
/// (2026-07-28).
///
/// > "No extension-specific settings are currently defined; an empty object indicates support."
/// > — Tasks extension, 2026-07-28 § Capability Negotiation
pub fn server_declares_extension(capabilities: Option<&Value>) -> bool {
    capabilities
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some_and(|v| v.is_object() || v.as_bool() == Some(true))
}

fn excerpt(s: &str) -> String {
    s.chars().take(64).collect()
}

/// The params of a task-augmented `tools/call`: `name`, `arguments` (`null` becomes `{}`) and
/// `task`, with `ttl` (milliseconds) when asked.
///
/// > "To create a task, requestors send a request with the `task` field included in the request
/// > params. Requestors **MAY** include a `ttl` value" — MCP 2025-11-25, Tasks § Creating Tasks
pub fn task_call_params(name: &str, arguments: Value, ttl: Option<Duration>) -> Value {
    let arguments = if arguments.is_null() {
        json!({})
    } else {
        arguments
    };
    let mut task = Map::new();
    if let Some(ttl) = ttl {
        task.insert(
            "ttl".into(),
            json!(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
        );
    }
    json!({ "name": name, "arguments": arguments, "task": task })
}

/// The task id in a message's `_meta` ([`RELATED_TASK`]), when it names one.
pub fn related_task(meta: &Value) -> Option<&str> {
    meta.get(RELATED_TASK)?.get("taskId")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(status: &str, poll: Option<u64>) -> Task {
        serde_json::from_value(json!({
            "taskId": "t1", "status": status, "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": 60000, "pollInterval": poll,
        }))
        .unwrap()
    }

    #[test]
    fn the_states_and_their_transitions() {
        use TaskStatus::*;
        let all = [Working, InputRequired, Completed, Failed, Cancelled];
        for from in &all {
            for to in &all {
                let allowed = from == to || matches!(from, Working | InputRequired);
                assert_eq!(from.may_become(to), allowed, "{from:?} -> {to:?}");
            }
            let back: TaskStatus = serde_json::from_value(json!(from.as_str())).unwrap();
            assert_eq!(&back, from);
        }
        assert!(serde_json::from_value::<TaskStatus>(json!("done")).is_err());
    }

    #[test]
    fn a_task_is_read_leniently_and_its_id_is_capped() {
        let t: Task = serde_json::from_value(json!({
            "taskId": "x", "status": "working", "ttl": null, "pollInterval": "soon",
        }))
        .unwrap();
        assert_eq!((t.ttl, t.poll_interval), (None, None));
        let t: Task = serde_json::from_value(
            json!({"taskId": "x", "status": "working", "pollInterval": 2.5}),
        )
        .unwrap();
        assert_eq!(t.poll_interval, Some(2));
        let long = "a".repeat(MAX_TASK_ID_LEN + 1);
        assert!(
            serde_json::from_value::<Task>(json!({"taskId": long, "status": "working"})).is_err()
        );
        assert!(serde_json::from_value::<Task>(json!({"taskId": 7, "status": "working"})).is_err());
    }

    #[test]
    fn a_task_call_is_answered_with_a_task_or_a_plain_result() {
        let created: TaskCall = serde_json::from_value(json!({
            "task": {"taskId": "t1", "status": "working", "pollInterval": 5000},
            "_meta": {MODEL_IMMEDIATE_RESPONSE: "started"},
        }))
        .unwrap();
        let TaskCall::Created(c) = created else {
            panic!("not a task: {created:?}")
        };
        assert_eq!(c.task.task_id, "t1");
        assert_eq!(c.model_immediate_response(), Some("started"));
        let done: TaskCall =
            serde_json::from_value(json!({"content": [{"type": "text", "text": "hi"}]})).unwrap();
        assert!(matches!(done, TaskCall::Done(ref r) if r.content.len() == 1));
        // A `task` that is no task is an invalid result, not a plain one.
        assert!(serde_json::from_value::<TaskCall>(json!({"task": 3})).is_err());
    }

    #[test]
    fn the_call_mode_follows_the_capability_and_the_tool() {
        use TaskSupport::*;
        for (server, support, want, mode) in [
            (false, Required, false, CallMode::Plain),
            (false, Optional, true, CallMode::Plain),
            (true, Required, false, CallMode::Task),
            (true, Optional, true, CallMode::Task),
            (true, Optional, false, CallMode::Plain),
            (true, Forbidden, true, CallMode::Plain),
        ] {
            assert_eq!(
                call_mode(server, support, want),
                mode,
                "{server} {support:?} {want}"
            );
        }
        let caps = json!({"tasks": {"list": {}, "requests": {"tools": {"call": {}}}}});
        assert!(server_takes_task_calls(Some(&caps)));
        assert!(!server_takes_task_calls(Some(
            &json!({"tasks": {"list": {}}})
        )));
        assert!(!server_takes_task_calls(Some(
            &json!({"tasks": {"requests": {"tools": {"call": "yes"}}}})
        )));
        assert!(!server_takes_task_calls(None));
    }

    #[test]
    fn a_tools_task_support_is_read_from_its_object() {
        let tool = |execution: Value| {
            crate::Tool::from_json(
                &json!({"name": "t", "inputSchema": {}, "execution": execution}).to_string(),
            )
            .unwrap()
        };
        assert_eq!(
            TaskSupport::of(&tool(json!({"taskSupport": "required"}))),
            TaskSupport::Required
        );
        assert_eq!(
            TaskSupport::of(&tool(json!({"taskSupport": "optional"}))),
            TaskSupport::Optional
        );
        for other in [
            json!({"taskSupport": "forbidden"}),
            json!({}),
            json!(3),
            json!(null),
        ] {
            assert_eq!(TaskSupport::of(&tool(other)), TaskSupport::Forbidden);
        }
    }

    #[test]
    fn polls_follow_the_interval_within_bounds_and_the_deadline() {
        let now = Instant::now();
        assert_eq!(
            poll_delay(&task("working", Some(1000))),
            Duration::from_secs(1)
        );
        assert_eq!(poll_delay(&task("working", Some(0))), MIN_POLL);
        assert_eq!(poll_delay(&task("working", Some(u64::MAX))), MAX_POLL);
        assert_eq!(poll_delay(&task("working", None)), DEFAULT_POLL);
        let t = task("working", Some(1000));
        assert_eq!(next_poll(&t, now, None), Some(now + Duration::from_secs(1)));
        let soon = now + Duration::from_millis(300);
        assert_eq!(next_poll(&t, now, Some(soon)), Some(soon));
        assert_eq!(next_poll(&t, now, Some(now)), None);
    }

    #[test]
    fn each_poll_says_what_to_do_next() {
        use TaskStatus::*;
        assert_eq!(
            poll_step("t1", &Working, &task("working", None)),
            PollStep::Wait
        );
        for s in ["input_required", "completed", "failed", "cancelled"] {
            assert_eq!(
                poll_step("t1", &Working, &task(s, None)),
                PollStep::FetchResult
            );
        }
        assert!(matches!(
            poll_step("t1", &Completed, &task("working", None)),
            PollStep::Invalid(_)
        ));
        assert!(matches!(
            poll_step("other", &Working, &task("working", None)),
            PollStep::Invalid(_)
        ));
    }

    #[test]
    fn task_params_and_related_task_meta() {
        assert_eq!(
            task_call_params("t", Value::Null, Some(Duration::from_secs(60))),
            json!({"name": "t", "arguments": {}, "task": {"ttl": 60000}})
        );
        assert_eq!(
            task_call_params("t", json!({"a": 1}), None),
            json!({"name": "t", "arguments": {"a": 1}, "task": {}})
        );
        let meta = json!({RELATED_TASK: {"taskId": "t1"}});
        assert_eq!(related_task(&meta), Some("t1"));
        assert_eq!(related_task(&json!({RELATED_TASK: {"taskId": 1}})), None);
    }
}
