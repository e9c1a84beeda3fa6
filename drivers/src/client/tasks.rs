//! Tasks as the client's methods, the same whichever era the session speaks (MCP 2025-11-25's
//! SEP-1686, or 2026-07-28's extension `io.modelcontextprotocol/tasks`): a task-augmented tool
//! call that hands back a [`TaskHandle`] ([`Client::call_as_task`]), the task requests
//! (`tasks/get`, `tasks/cancel`, and `tasks/result`, `tasks/list` where the era has them), and a
//! call that waits for its task's result transparently ([`Client::call_tool_waiting`], what a
//! bridged tool whose tool requires tasks uses). Every decision — the era's wire, whether a call
//! goes as a task, when to poll next, what a poll's answer means, a finished task's outcome — is
//! the core's ([`mcp_proto::tasks`], [`mcp_proto::Session::task_poll_step`]); this file only
//! waits and sends.

use super::{Client, Error};
use mcp_proto::tasks::{
    outcome, remember_answered, unanswered_inputs, CreateTaskResult, PollStep, Task, TaskCall,
    TaskStatus, MIN_POLL,
};
use mcp_proto::{
    CallToolResult, CancelTask, GetTask, GetTaskResult, ListTasks, Progress, Request, RequestError,
    UpdateTask,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most tasks one client waits on at once and wakes on a status notification; past it a
/// wait still polls, without the early wake-up.
const MAX_WATCHED_TASKS: usize = 1024;

/// The tasks callers wait on, by id: how many wait, and what wakes them when a status
/// notification names the task.
#[derive(Default)]
pub(super) struct TaskWaits {
    by_id: HashMap<String, (usize, Arc<event_listener::Event>)>,
}

impl TaskWaits {
    /// A status notification named task `id`: whoever waits on it polls now.
    pub(super) fn notify(&self, id: &str) {
        if let Some((_, wake)) = self.by_id.get(id) {
            wake.notify(usize::MAX);
        }
    }
}

/// One caller's wait on a task's status notifications, for as long as it lives.
struct Watch<'a> {
    client: &'a Client,
    id: String,
    wake: Option<Arc<event_listener::Event>>,
}

impl<'a> Watch<'a> {
    fn new(client: &'a Client, id: &str) -> Watch<'a> {
        let mut state = client.lock();
        let waits = &mut state.task_waits.by_id;
        let wake = if let Some((n, wake)) = waits.get_mut(id) {
            *n += 1;
            Some(wake.clone())
        } else if waits.len() < MAX_WATCHED_TASKS {
            let wake = Arc::new(event_listener::Event::new());
            waits.insert(id.to_owned(), (1, wake.clone()));
            Some(wake)
        } else {
            None
        };
        Watch {
            client,
            id: id.to_owned(),
            wake,
        }
    }

    /// Waits until `at`, or until a status notification names the task — but not before
    /// `earliest` (a server's notifications do not make the client poll faster than
    /// [`MIN_POLL`]).
    async fn until(&self, at: Instant, earliest: Instant) {
        let Some(wake) = &self.wake else {
            smol::Timer::at(at).await;
            return;
        };
        let listener = wake.listen();
        let woken = async {
            listener.await;
            smol::Timer::at(earliest.min(at)).await;
        };
        smol::future::or(
            async {
                smol::Timer::at(at).await;
            },
            woken,
        )
        .await;
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        if self.wake.is_none() {
            return;
        }
        let mut state = self.client.lock();
        let waits = &mut state.task_waits.by_id;
        if let Some((n, _)) = waits.get_mut(&self.id) {
            *n -= 1;
            if *n == 0 {
                waits.remove(&self.id);
            }
        }
    }
}

/// How long a cancellation sent because a waiting call gave up (its timeout, its future dropped)
/// waits for the server's answer.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// What a task-augmented call started: a task to follow, or the tool's result at once (a server
/// that processed the call normally).
// One value per task call, matched at once: a box would cost an allocation for nothing.
#[allow(clippy::large_enum_variant)]
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

    /// Its state now (`tasks/get`), also kept as [`task`](Self::task). An answer for another
    /// task, or one that moves the task out of a terminal state, is refused
    /// ([`RequestError::InvalidResult`]) and not kept.
    ///
    /// > "Tasks with a `completed`, `failed`, or `cancelled` status are in a terminal state and
    /// > **MUST NOT** transition to any other status" — MCP 2025-11-25, Tasks § Task Status
    /// > Lifecycle
    pub async fn get(&mut self) -> Result<Task, Error> {
        let seen = self.client.get_task(self.id()).await?;
        if let PollStep::Invalid(reason) =
            self.client
                .task_poll_step(&self.task.task_id, &self.task.status, &seen)
        {
            return Err(invalid("tasks/get", reason));
        }
        self.task = seen.clone();
        Ok(seen)
    }

    /// Its result: the server's answer once the task ended, so this waits as long as the task
    /// runs — no timeout, unless `timeout` — and fails as the call would have (a JSON-RPC error
    /// is [`Error::Protocol`]). `tasks/result` in 2025-11-25; in 2026-07-28, which has no such
    /// request, `tasks/get` polled until the task ends (its answer then carries the result).
    /// Unlike [`wait`](Self::wait), giving up does not cancel the task.
    pub async fn result(&self, timeout: Option<Duration>) -> Result<CallToolResult, Error> {
        let request = Request::task_result(self.id());
        let request = match timeout {
            Some(t) => request.timeout(t),
            None => request.no_timeout(),
        };
        match self.client.request_as::<GetTaskResult>(request).await {
            Err(Error::Request(RequestError::NotInEra { .. })) => {
                self.clone().follow(timeout, |_: &Progress| {}, false).await
            }
            other => other,
        }
    }

    /// Cancels it (`tasks/cancel`; in 2025-11-25 the server must declare `tasks.cancel`): the
    /// task as the server cancelled it. In 2026-07-28 the server only acknowledges, and the
    /// task's state comes from a `tasks/get` right after (it may still be `working`:
    /// cancellation is cooperative).
    pub async fn cancel(&self) -> Result<Task, Error> {
        self.client.cancel_task(self.id()).await
    }

    /// Waits for its result: polls `tasks/get` at the server's `pollInterval` (within
    /// [`MIN_POLL`](mcp_proto::tasks::MIN_POLL) and [`MAX_POLL`](mcp_proto::tasks::MAX_POLL)),
    /// sooner when a status notification names the task (never sooner than `MIN_POLL` after the
    /// last poll, and never instead of polling), tells `on_status` of each new status message
    /// (as a [`Progress`] whose `progress` counts the polls), and once the task ended or needs
    /// input: in 2025-11-25 asks `tasks/result` (input comes through it: the server's elicitation
    /// or sampling requests go to the client's handlers); in 2026-07-28 takes the outcome the
    /// last poll carries, and answers the input a task waits for with `tasks/update` (each
    /// request through the client's handlers, each key once).
    ///
    /// Within `timeout` when given: past it the task is cancelled (`tasks/cancel`, when the
    /// server declared it) and this fails with [`Error::Timeout`]. Dropping this future cancels
    /// the task too.
    ///
    /// > "Requestors **SHOULD** continue polling until the task reaches a terminal status
    /// > (`completed`, `failed`, or `cancelled`), or until encountering the `input_required`
    /// > status." — MCP 2025-11-25, Tasks § Getting Tasks
    ///
    /// > "Clients **SHOULD** continue polling until the task reaches a terminal status or until
    /// > invoking `tasks/cancel`." — Tasks extension, 2026-07-28 § Task Polling
    pub async fn wait(
        &mut self,
        timeout: Option<Duration>,
        on_status: impl Fn(&Progress),
    ) -> Result<CallToolResult, Error> {
        self.follow(timeout, on_status, true).await
    }

    /// As [`wait`](Self::wait), but past `timeout`, or when this future is dropped, the task is
    /// left as it is: for a caller that cancels it itself and waits for that (a command that
    /// must cancel before it closes the connection), so that the server gets one `tasks/cancel`,
    /// not this one's and the caller's.
    pub async fn wait_without_cancel(
        &mut self,
        timeout: Option<Duration>,
        on_status: impl Fn(&Progress),
    ) -> Result<CallToolResult, Error> {
        self.follow(timeout, on_status, false).await
    }

    /// [`wait`](Self::wait); `cancel_on_give_up`: cancel the task on timeout or drop.
    async fn follow(
        &mut self,
        timeout: Option<Duration>,
        on_status: impl Fn(&Progress),
        cancel_on_give_up: bool,
    ) -> Result<CallToolResult, Error> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut guard = CancelTaskOnDrop {
            client: &self.client,
            id: self.task.task_id.clone(),
            armed: cancel_on_give_up,
        };
        let watch = Watch::new(&self.client, &self.task.task_id);
        let timed_out = || Error::Timeout(timeout.unwrap_or_default());
        let mut polls = 0u64;
        let mut message = self.task.status_message.clone();
        let mut status = self.task.status.clone();
        let mut answered = HashSet::new();
        let mut last_poll = Instant::now();
        // The task as created is the first poll's answer.
        let mut step = self
            .client
            .task_poll_step(&self.task.task_id, &status, &self.task);
        loop {
            match step {
                PollStep::Wait => {}
                PollStep::FetchResult => break,
                PollStep::Invalid(reason) => return Err(invalid("tasks/get", reason)),
                PollStep::Ended => {
                    guard.armed = false;
                    return outcome(&self.task).map_err(Error::from);
                }
                PollStep::Answer => {
                    let asks = unanswered_inputs(&self.task, &answered);
                    if !asks.is_empty() {
                        remember_answered(&mut answered, asks.keys().cloned());
                        let left = remaining(deadline).ok_or_else(timed_out)?;
                        let request = Request::update_task(&self.task.task_id, asks);
                        let request = match left {
                            Some(left) => request.timeout(left),
                            None => request,
                        };
                        match self.client.request_as::<UpdateTask>(request).await {
                            Err(Error::Timeout(_)) if deadline.is_some() => return Err(timed_out()),
                            other => other?,
                        };
                    }
                }
            }
            let now = Instant::now();
            let Some(at) = mcp_proto::tasks::next_poll(&self.task, now, deadline) else {
                return Err(timed_out());
            };
            watch.until(at, last_poll + MIN_POLL).await;
            let left = remaining(deadline).ok_or_else(timed_out)?;
            let request = Request::get_task(&self.task.task_id);
            let request = match left {
                Some(left) => request.timeout(left),
                None => request,
            };
            last_poll = Instant::now();
            let seen = match self.client.request_as::<GetTask>(request).await {
                Err(Error::Timeout(_)) if deadline.is_some() => return Err(timed_out()),
                other => *other?,
            };
            polls += 1;
            step = self
                .client
                .task_poll_step(&self.task.task_id, &status, &seen);
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
        drop(watch);
        let left = remaining(deadline).ok_or_else(timed_out)?;
        let request = Request::task_result(&self.task.task_id);
        let request = match left {
            Some(t) => request.timeout(t),
            None => request.no_timeout(),
        };
        let result = match self.client.request_as::<GetTaskResult>(request).await {
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
    /// Calls tool `name` as a task (2025-11-25: a `tools/call` with a `task` member, `ttl` when
    /// given; 2026-07-28: a `tools/call` declaring the tasks extension on itself): the server
    /// answers at once with the task it created ([`TaskStart::Task`]), or — a server that
    /// processed the call normally — with the tool's result ([`TaskStart::Done`]). Refused before
    /// anything is sent, with [`RequestError::NotOffered`], when the server did not declare
    /// `tasks.requests.tools.call` (2025-11-25) or the extension (2026-07-28). Whether the tool allows
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
            // A server that takes task calls may still refuse this one without a task (-32021
            // naming the tasks extension, 2026-07-28): it is made again as a task. Only then are
            // the arguments kept for it.
            let again = self.takes_task_calls().then(|| arguments.clone());
            let started = Instant::now();
            let request = Request::call_tool(&tool.name, arguments);
            let result = self
                .call(match timeout {
                    Some(t) => request.timeout(t),
                    None => request,
                })
                .await;
            return match (result, again) {
                (Err(Error::Request(e)), Some(arguments))
                    if mcp_proto::tasks::requires_tasks_extension(&e) =>
                {
                    let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
                    self.wait_task_call(&tool.name, arguments, left, on_status)
                        .await
                }
                (result, _) => result,
            };
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

    /// Cancels a task (`tasks/cancel`; in 2025-11-25 the server must declare `tasks.cancel`):
    /// the task, as the server cancelled it — in 2026-07-28, whose answer is an empty
    /// acknowledgement, as a `tasks/get` right after sees it. A task already ended is the
    /// server's to refuse (-32602) in 2025-11-25.
    ///
    /// > "Cancellation processing is _eventually consistent_ — the task's observable status
    /// > **MAY** remain `working` (or some other non-terminal status) after the ack" — Tasks
    /// > extension, 2026-07-28 § Task Cancellation
    pub async fn cancel_task(&self, task_id: &str) -> Result<Task, Error> {
        let ack = self
            .request_as::<CancelTask>(Request::cancel_task(task_id))
            .await?;
        match ack.task {
            Some(task) => Ok(task),
            None => self.get_task(task_id).await,
        }
    }

    /// What a poll's answer means (the core's decision, by era).
    pub(crate) fn task_poll_step(&self, id: &str, before: &TaskStatus, seen: &Task) -> PollStep {
        self.lock().session.task_poll_step(id, before, seen)
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
