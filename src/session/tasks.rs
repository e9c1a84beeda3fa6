//! Tasks in each era's form: the typed task requests ([`Request::call_tool_as_task`],
//! [`Request::get_task`] and the others) are built once, the 2025-11-25 way; a session of the
//! 2026-07-28 era rewrites them here for the tasks extension (`io.modelcontextprotocol/tasks`)
//! before they are sent, refuses what that era has not, and sends `tasks/update` once the
//! application answered the input it carries.
//!
//! > "A server **MUST NOT** return `CreateTaskResult` to a client that did not include the
//! > extension capability on its request, regardless of prior declarations." / "Servers **MUST**
//! > return this error [-32021] for non-declaring clients issuing `tasks/get`, `tasks/update`,
//! > and `tasks/cancel` requests." — Tasks extension, 2026-07-28 § Capability Negotiation,
//! > § Protocol Errors
//!
//! So the client declares the extension on exactly the requests that take a task: a
//! task-augmented call and the task requests. A plain `tools/call` does not (it cannot be
//! answered with a task it would not know what to do with) and pays nothing for tasks.

use super::modern::CLIENT_CAPABILITIES_META;
use super::{Core, Era, Request};
use crate::error::RequestError;
use crate::jsonrpc::RequestId;
use crate::tasks::TASKS_EXTENSION;
use serde_json::{json, Map, Value};
use std::time::Instant;

/// `tasks/update`.
pub(super) const UPDATE: &str = "tasks/update";

/// Where [`Request::update_task`] keeps the input requests to answer until the session takes
/// them out (never sent).
pub(super) const INPUTS_TO_ASK: &str = "inputRequests";

impl Core {
    /// Puts a task request (one whose needs are the `tasks` capability) in the form of the
    /// session's era, or refuses it: in 2026-07-28 it declares the extension in its own
    /// `_meta`, a call loses its `task` member, and the server must have declared the
    /// extension; `tasks/result` and `tasks/list` are not of that era, `tasks/update` not of
    /// 2025-11-25. Any other request is left as it is.
    pub(super) fn fit_task_request(&self, request: &mut Request) -> Result<(), RequestError> {
        if request.needs.map(|n| n.0) != Some("tasks") {
            return Ok(());
        }
        let method = request.method.to_string();
        match self.era() {
            Some(Era::Modern) => {}
            _ if method == UPDATE => {
                return Err(RequestError::NotInEra {
                    method,
                    instead: "tasks/result, through which a 2025-11-25 task asks for input",
                })
            }
            _ => return Ok(()),
        }
        // > "The extension introduces three methods: `tasks/get`, `tasks/update`, and
        // > `tasks/cancel`" — Tasks extension, 2026-07-28
        let instead = match method.as_str() {
            "tasks/result" => Some("tasks/get, whose answer carries a finished task's result"),
            "tasks/list" => Some("nothing: the tasks extension lists no tasks"),
            _ => None,
        };
        if let Some(instead) = instead {
            return Err(RequestError::NotInEra { method, instead });
        }
        let capabilities = self.opening.server().map(|i| &i.capabilities);
        if !crate::tasks::server_declares_extension(capabilities) {
            return Err(RequestError::NotOffered {
                method,
                capability: format!("extensions.{TASKS_EXTENSION}"),
            });
        }
        let params = request
            .params
            .json_mut()
            .get_or_insert_with(|| Value::Object(Map::new()));
        if let Some(object) = params.as_object_mut() {
            // > "The server is the sole decider; clients do not signal task preference on the
            // > request itself." — Tasks extension, 2026-07-28 § Capability Negotiation
            object.remove("task");
            let meta = object
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(
                    CLIENT_CAPABILITIES_META.into(),
                    json!({ "extensions": { TASKS_EXTENSION: {} } }),
                );
            }
        }
        request.needs = None;
        Ok(())
    }

    /// Whether pending request `id` declared the tasks extension on itself (a task-augmented
    /// call of 2026-07-28): then, and only then, a result that is a task is its answer.
    ///
    /// > "A client that receives `CreateTaskResult` in response to an unsupported request type
    /// > **MUST** interpret this as an invalid response to the request." — Tasks extension,
    /// > 2026-07-28 § Capability Negotiation
    pub(super) fn asked_for_task(&self, id: RequestId) -> bool {
        self.pending.get(&id).is_some_and(|p| {
            p.method == "tools/call"
                && p.params
                    .json()
                    .and_then(|v| v.get("_meta"))
                    .and_then(|m| m.get(CLIENT_CAPABILITIES_META))
                    .and_then(|c| c.get("extensions"))
                    .and_then(|e| e.get(TASKS_EXTENSION))
                    .is_some()
        })
    }

    /// Sends a `tasks/update` once its input is answered: the input requests it carries go to
    /// the application (as an input-required round's do), and the request goes out with their
    /// answers as `inputResponses` when the last is in.
    pub(super) fn enqueue_update(&mut self, mut request: Request, now: Instant) -> RequestId {
        let asked = request
            .params
            .json_mut()
            .as_mut()
            .and_then(Value::as_object_mut)
            .and_then(|o| o.remove(INPUTS_TO_ASK));
        let asked = match asked {
            Some(Value::Object(asked)) => asked,
            _ => Map::new(),
        };
        let id = self.enqueue(request, now, false);
        match self.ask_inputs(id, asked) {
            Ok(keys) if keys.is_empty() => self.resend(id),
            Ok(keys) => {
                if let Some(p) = self.pending.get_mut(&id) {
                    p.inputs = keys.into_iter().map(|k| (k, None)).collect();
                }
            }
            Err(e) => self.complete(id, Err(e), now),
        }
        id
    }
}

/// The client's capabilities for one request: the session's (`protocol`), with the extensions
/// the request declares on itself (`own`) added.
pub(super) fn merge_capabilities(protocol: &Value, own: &Value) -> Value {
    let mut merged = protocol.clone();
    let (Some(m), Some(own)) = (merged.as_object_mut(), own.as_object()) else {
        return merged;
    };
    for (k, v) in own {
        match (m.get_mut(k), v) {
            (Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (k2, v2) in theirs {
                    mine.insert(k2.clone(), v2.clone());
                }
            }
            _ => {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    merged
}
