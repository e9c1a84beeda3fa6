//! Tasks (MCP 2025-11-25, SEP-1686) as the client's methods: a task-augmented tool call that
//! hands back a [`TaskHandle`] ([`Client::call_as_task`]), the task requests (`tasks/get`,
//! `tasks/result`, `tasks/cancel`, `tasks/list`), and a call that waits for its task's result
//! transparently ([`Client::call_tool_waiting`], what a bridged tool whose tool requires tasks
//! uses). Every decision — whether a call goes as a task, when to poll next, what a poll's answer
//! means — is the core's ([`mcp_proto::tasks`]); this file only waits and sends.

use super::{Client, Error};
use mcp_proto::tasks::{poll_step, CreateTaskResult, PollStep, Task, TaskCall};
use mcp_proto::{
    CallToolResult, CancelTask, GetTask, GetTaskResult, ListTasks, Progress, Request, RequestError,
};
use serde_json::Value;
use std::time::{Duration, Instant};

/// How long a cancellation sent because a waiting call gave up (its timeout, its future dropped)
/// waits for the server's answer.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// What a task-augmented call started: a task to follow, or the tool's result at once (a server
/// that processed the call normally).
#[derive(Debug)]
pub enum TaskStart {
    /// The server created a task.
    Task(TaskHandle),
    /// The server answered with the tool's result.
    Done(CallToolResult),
}

/// A task the server runs, as [`Client::call_as_task`] started it: its last seen state, and the
/// requests that follow it. Dropping the handle leaves the task running (use
/// [`cancel`](Self::cancel)).
#[derive(Clone)]
pub struct TaskHandle {
    client: Client,
    task: Task,
    created: Option<Value>,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle")
            .field("task", &self.task)
            .finish_non_exhaustive()
    }
}

impl TaskHandle {
    /// A handle on task `task_id` of `client`'s server (a task listed, or started elsewhere),
    /// in the state `task` last seen.
    pub fn new(client: &Client, task: Task) -> TaskHandle {
        TaskHandle {
            client: client.clone(),
            task,
            created: None,
        }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.task.task_id
    }

    /// Its state, as last seen (at its creation or the last [`get`](Self::get)).
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The `_meta` of the `CreateTaskResult`, when the handle comes from a call (it may hold the
    /// string to hand the model at once:
    /// [`MODEL_IMMEDIATE_RESPONSE`](mcp_proto::tasks::MODEL_IMMEDIATE_RESPONSE)).
    pub fn created_meta(&self) -> Option<&Value> {
        self.created.as_ref()
    }

    /// Its state now (`tasks/get`), also kept as [`task`](Self::task).
    pub async fn get(&mut self) -> Result<Task, Error> {
        let seen = self.client.get_task(self.id()).await?;
        self.task = seen.clone();
        Ok(seen)
    }

    /// Its result (`tasks/result`): the server answers once the task ended, so this waits as long
    /// as the task runs — no timeout, unless `timeout` — and fails as the call would have (a
    /// JSON-RPC error is [`Error::Protocol`]).
    pub async fn result(&self, timeout: Option<Duration>) -> Result<CallToolResult, Error> {
        let request = Request::task_result(self.id());
        let request = match timeout {
            Some(t) => request.timeout(t),
            None => request.no_timeout(),
        };
        self.client.request_as::<GetTaskResult>(request).await
    }

    /// Cancels it (`tasks/cancel`; the server must declare `tasks.cancel`).
    pub async fn cancel(&self) -> Result<Task, Error> {
        self.client.cancel_task(self.id()).await
    }

    /// Waits for its result: polls `tasks/get` at the server's `pollInterval` (within
    /// [`MIN_POLL`](mcp_proto::tasks::MIN_POLL) and [`MAX_POLL`](mcp_proto::tasks::MAX_POLL)),
    /// tells `on_status` of each new status message (as a [`Progress`] whose `progress` counts
    /// the polls), and once the task ended or needs input asks `tasks/result` (input comes
    /// through it: the server's elicitation or sampling requests go to the client's handlers).
    ///
    /// Within `timeout` when given: past it the task is cancelled (`tasks/cancel`, when the
    /// server declared it) and this fails with [`Error::Timeout`]. Dropping this future cancels
    /// the task too.
    ///
    /// > "Requestors **SHOULD** continue polling until the task reaches a terminal status
    /// > (`completed`, `failed`, or `cancelled`), or until encountering the `input_required`
    /// > status." — MCP 2025-11-25, Tasks § Getting Tasks
    pub async fn wait(
        &mut self,
        timeout: Option<Duration>,
        on_status: impl Fn(&Progress),
    ) -> Result<CallToolResult, Error> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut guard = CancelTaskOnDrop {
            client: &self.client,
            id: self.task.task_id.clone(),
            armed: true,
        };
        let timed_out = || Error::Timeout(timeout.unwrap_or_default());
        let mut polls = 0u64;
        let mut message = self.task.status_message.clone();
        let mut status = self.task.status.clone();
        // The task as created is the first poll's answer.
        let mut step = poll_step(&self.task.task_id, &status, &self.task);
        while step == PollStep::Wait {
            let Some(at) = mcp_proto::tasks::next_poll(&self.task, Instant::now(), deadline) else {
                return Err(timed_out());
            };
            smol::Timer::at(at).await;
            let left = remaining(deadline).ok_or_else(timed_out)?;
            let request = Request::get_task(&self.task.task_id);
            let request = match left {
                Some(left) => request.timeout(left),
                None => request,
            };
            let seen = match self.client.request_as::<GetTask>(request).await {
                Err(Error::Timeout(_)) if deadline.is_some() => return Err(timed_out()),
                other => *other?,
            };
            polls += 1;
            step = poll_step(&self.task.task_id, &status, &seen);
            if let PollStep::Invalid(reason) = step {
                return Err(invalid("tasks/get", reason));
            }
            if seen.status_message.is_some() && seen.status_message != message {
                message = seen.status_message.clone();
                on_status(&Progress {
                    progress: polls as f64,
                    total: None,
                    message: message.clone(),
                });
            }
            status = seen.status.clone();
            self.task = seen;
        }
        let left = remaining(deadline).ok_or_else(timed_out)?;
        let result = match self.result(left).await {
            Err(Error::Timeout(_)) if deadline.is_some() => return Err(timed_out()),
            other => other,
        };
        // Answered (a result or the server's error): nothing left to cancel.
        guard.armed = false;
        result
    }
}

/// What is left before `deadline`: `Some(None)` without one, `None` once it passed.
fn remaining(deadline: Option<Instant>) -> Option<Option<Duration>> {
    match deadline {
        None => Some(None),
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            (!left.is_zero()).then_some(Some(left))
        }
    }
}

fn invalid(method: &str, reason: String) -> Error {
    Error::Request(RequestError::InvalidResult {
        method: method.into(),
        reason,
    })
}

/// Cancels a task whose waiting caller gave up before its result (timeout, future dropped):
/// `tasks/cancel` sent from a task of its own on smol's global executor, so that a drop does not
/// wait. The core refuses it without a round trip when the server did not declare
/// `tasks.cancel`.
struct CancelTaskOnDrop<'a> {
    client: &'a Client,
    id: String,
    armed: bool,
}

impl Drop for CancelTaskOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let client = self.client.clone();
        let id = std::mem::take(&mut self.id);
        smol::spawn(async move {
            let _ = client
                .request(Request::cancel_task(&id).timeout(CANCEL_TIMEOUT))
                .await;
        })
        .detach();
    }
}

impl Client {
    /// Calls tool `name` as a task (a `tools/call` with a `task` member, `ttl` when given): the
    /// server answers at once with the task it created ([`TaskStart::Task`]), or — a server that
    /// processed the call normally — with the tool's result ([`TaskStart::Done`]). Refused before
    /// anything is sent, with
    /// [`RequestError::NotOffered`], when the server did not declare `tasks.requests.tools.call`
    /// (and in the 2026-07-28 era with [`RequestError::NotInEra`]). Whether the tool allows
    /// tasks (`execution.taskSupport`) is the caller's to check
    /// ([`Session::task_call_mode`](mcp_proto::Session::task_call_mode) decides it for
    /// [`call_tool_waiting`](Self::call_tool_waiting)).
    pub async fn call_as_task(
        &self,
        name: &str,
        arguments: Value,
        ttl: Option<Duration>,
    ) -> Result<TaskStart, Error> {
        let call = self
            .request_as::<mcp_proto::CallToolAsTask>(Request::call_tool_as_task(
                name, arguments, ttl,
            ))
            .await?;
        Ok(match *call {
            TaskCall::Created(CreateTaskResult { task, meta }) => TaskStart::Task(TaskHandle {
                client: self.clone(),
                task,
                created: meta,
            }),
            TaskCall::Done(result) => TaskStart::Done(result),
        })
    }

    /// Calls tool `tool` and waits for its result: as a task when the core says so
    /// ([`Session::task_call_mode`](mcp_proto::Session::task_call_mode): the tool requires it,
    /// or `want_task` and the tool allows it, on a server that declared task calls) — polled to
    /// its end by [`TaskHandle::wait`], within `timeout`, the task cancelled on timeout or when
    /// this future is dropped — and otherwise as a plain call with `timeout` as its own.
    pub async fn call_tool_waiting(
        &self,
        tool: &mcp_proto::Tool,
        arguments: Value,
        want_task: bool,
        timeout: Option<Duration>,
        on_status: impl Fn(&Progress),
    ) -> Result<CallToolResult, Error> {
        let mode = self.task_call_mode(tool, want_task);
        if mode == mcp_proto::tasks::CallMode::Plain {
            let request = Request::call_tool(&tool.name, arguments);
            return self
                .call(match timeout {
                    Some(t) => request.timeout(t),
                    None => request,
                })
                .await;
        }
        self.wait_task_call(&tool.name, arguments, timeout, on_status)
            .await
    }

    /// How a call of `tool` goes when the caller does not ask for a task: as a task when it
    /// requires one on a server that declared task calls (the core's decision,
    /// [`Session::task_call_mode`]). The seam for a command line's `--task`.
    ///
    /// [`Session::task_call_mode`]: mcp_proto::Session::task_call_mode
    pub fn task_call_mode_of(&self, tool: &mcp_proto::Tool) -> mcp_proto::tasks::CallMode {
        self.task_call_mode(tool, false)
    }

    /// Whether any tool of this server may go as a task
    /// ([`Session::takes_task_calls`](mcp_proto::Session::takes_task_calls)): when not, no tool
    /// needs listing to know how to call it.
    pub fn takes_task_calls(&self) -> bool {
        self.lock().session.takes_task_calls()
    }

    pub(crate) fn task_call_mode(
        &self,
        tool: &mcp_proto::Tool,
        want_task: bool,
    ) -> mcp_proto::tasks::CallMode {
        self.lock().session.task_call_mode(tool, want_task)
    }

    /// The session's default request timeout.
    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        self.lock().session.config().default_timeout
    }

    /// A task-augmented call of `name`, waited for to its result within `timeout`.
    pub(crate) async fn wait_task_call(
        &self,
        name: &str,
        arguments: Value,
        timeout: Option<Duration>,
        on_status: impl Fn(&Progress),
    ) -> Result<CallToolResult, Error> {
        let started = Instant::now();
        let call = Request::call_tool_as_task(name, arguments, None);
        let call = match timeout {
            Some(t) => call.timeout(t),
            None => call,
        };
        let created = self.request_as::<mcp_proto::CallToolAsTask>(call).await?;
        let (task, meta) = match *created {
            TaskCall::Done(result) => return Ok(result),
            TaskCall::Created(CreateTaskResult { task, meta }) => (task, meta),
        };
        let mut handle = TaskHandle {
            client: self.clone(),
            task,
            created: meta,
        };
        let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
        handle.wait(left, on_status).await.map_err(|e| match e {
            Error::Timeout(_) => Error::Timeout(timeout.unwrap_or_default()),
            e => e,
        })
    }

    /// A task's state (`tasks/get`; the server must declare `tasks`).
    pub async fn get_task(&self, task_id: &str) -> Result<Task, Error> {
        Ok(*self
            .request_as::<GetTask>(Request::get_task(task_id))
            .await?)
    }

    /// Cancels a task (`tasks/cancel`; the server must declare `tasks.cancel`): the task, as the
    /// server cancelled it. A task already ended is the server's to refuse (-32602).
    pub async fn cancel_task(&self, task_id: &str) -> Result<Task, Error> {
        Ok(*self
            .request_as::<CancelTask>(Request::cancel_task(task_id))
            .await?)
    }

    /// One page of the server's tasks (`tasks/list`; the server must declare `tasks.list`).
    pub async fn list_tasks_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<mcp_proto::tasks::ListTasksResult, Error> {
        self.request_as::<ListTasks>(Request::list_tasks(cursor))
            .await
    }

    /// All the server's tasks, following `nextCursor` across pages (guarded as
    /// [`list_tools`](Self::list_tools) is).
    pub async fn list_tasks(&self) -> Result<Vec<Task>, Error> {
        self.list_all::<ListTasks, _>(
            Request::list_tasks,
            |p| (p.tasks, p.next_cursor),
            |t| t.task_id.len() + t.status_message.as_ref().map_or(0, String::len) + 64,
        )
        .await
    }
}
