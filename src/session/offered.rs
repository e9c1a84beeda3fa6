//! What the server offers: a request for a feature it did not declare is refused here, before
//! anything is sent, with a typed error ([`RequestError::NotOffered`]); and what an era has no
//! such request for ([`RequestError::NotInEra`]).
//!
//! > "During the operation phase, the client and server exchange messages according to the
//! > negotiated protocol version. Both parties **MUST**: … Only use capabilities that were
//! > successfully negotiated" — MCP 2025-11-25, Lifecycle § Operation
//!
//! > "Servers that support resources **MUST** declare the `resources` capability" / "Servers that
//! > support prompts **MUST** declare the `prompts` capability" / "Servers that support
//! > completions **MUST** declare the `completions` capability" — MCP 2025-11-25, Resources,
//! > Prompts, Utilities § Completion (the same in 2026-07-28, where `server/discover` declares
//! > them)
//!
//! Only the typed requests of these three features are checked (their constructors note what
//! they need: [`Request::list_resources`] and the others): a `tools/call` goes by without a look,
//! and a request built by hand ([`Request::new`]) is the application's to judge.

use super::request::{SUBSCRIBE, UNSUBSCRIBE};
use super::{Core, Era, Request};
use crate::error::RequestError;
use serde_json::Value;

/// A capability a request needs: a member of the server's `capabilities`, and within it a flag
/// that must be `true`.
pub(super) type Needs = (&'static str, Option<&'static str>);

/// The capability a method needs, when it is one of the features checked here. (A reference to
/// a constant: a [`Request`] carries one pointer more, not the pair.)
pub(super) fn needs(method: &str) -> Option<&'static Needs> {
    const RESOURCES: Needs = ("resources", None);
    // > "`subscribe`: whether the client can subscribe to be notified of changes to individual
    // > resources." — MCP 2025-11-25, Resources § Capabilities
    const SUBSCRIPTIONS: Needs = ("resources", Some("subscribe"));
    const PROMPTS: Needs = ("prompts", None);
    const COMPLETIONS: Needs = ("completions", None);
    // > "A server that declares this extension **MUST** implement `skills/list` and
    // > `skills/get`." / "A server that additionally declares `directoryRead: true` **MUST**
    // > implement `resources/directory/read`." — SEP-2640 § Capability Negotiation
    const SKILLS: Needs = (EXTENSION_SKILLS, None);
    const DIRECTORIES: Needs = (EXTENSION_SKILLS, Some("directoryRead"));
    // > "`tasks.list`: Server supports the `tasks/list` operation / `tasks.cancel`: Server
    // > supports the `tasks/cancel` operation" — MCP 2025-11-25, Tasks § Server Capabilities
    const TASKS: Needs = ("tasks", None);
    const TASK_LIST: Needs = ("tasks", Some("list"));
    const TASK_CANCEL: Needs = ("tasks", Some("cancel"));
    Some(match method {
        "resources/list" | "resources/templates/list" | "resources/read" => &RESOURCES,
        SUBSCRIBE | UNSUBSCRIBE => &SUBSCRIPTIONS,
        "prompts/list" | "prompts/get" => &PROMPTS,
        "completion/complete" => &COMPLETIONS,
        "skills/list" | "skills/get" => &SKILLS,
        "resources/directory/read" => &DIRECTORIES,
        "tasks/get" | "tasks/result" => &TASKS,
        "tasks/list" => &TASK_LIST,
        "tasks/cancel" => &TASK_CANCEL,
        // Of 2026-07-28 only (see `tasks.rs`, which puts task requests in that era's form).
        "tasks/update" => &TASKS,
        _ => return None,
    })
}

/// The skills extension, as a capability: declared under `capabilities.extensions` (SEP-2133),
/// which [`declared`] looks in for a name starting `extensions.`.
const EXTENSION_SKILLS: &str = "extensions.io.modelcontextprotocol/skills";

/// What a task-augmented `tools/call` needs.
///
/// > "`tasks.requests.tools.call`: Server supports task-augmented `tools/call` requests" — MCP
/// > 2025-11-25, Tasks § Server Capabilities
pub(crate) const TASK_CALL: Needs = ("tasks", Some("requests.tools.call"));

/// Whether `capabilities` declares `capability` (present, an object or `true`), and within it
/// `flag` as `true` — or, for the `tasks` capability, whose members are objects, `flag` (a
/// dotted path) present as an object or `true`. A capability named `extensions.<id>` is
/// extension `<id>` of `capabilities.extensions`.
pub(crate) fn declared(capabilities: Option<&Value>, capability: &str, flag: Option<&str>) -> bool {
    let found = match capability.strip_prefix("extensions.") {
        Some(id) => capabilities
            .and_then(|c| c.get("extensions"))
            .and_then(|e| e.get(id)),
        None => capabilities.and_then(|c| c.get(capability)),
    };
    let Some(c) = found else {
        return false;
    };
    let present = |v: &Value| v.is_object() || v.as_bool() == Some(true);
    match flag {
        None => present(c),
        Some(path) if capability == "tasks" => path
            .split('.')
            .try_fold(c, |v, key| v.get(key))
            .is_some_and(present),
        Some(flag) => c.get(flag).and_then(Value::as_bool) == Some(true),
    }
}

impl Core {
    /// Refuses a request for a feature the server did not declare, or one the era has not.
    pub(super) fn check_offered(&self, request: &Request) -> Result<(), RequestError> {
        let Some(&(capability, flag)) = request.needs else {
            return Ok(());
        };
        // The modern era has no `resources/subscribe`: updates come through
        // `subscriptions/listen`, where `resources.subscribe` gates its `resourceSubscriptions`
        // (see `crate::subscriptions::Listener`, which a driver uses instead).
        if capability == "resources" && flag.is_some() && self.era() == Some(Era::Modern) {
            return Err(RequestError::NotInEra {
                method: request.method.to_string(),
                instead: "subscriptions/listen",
            });
        }
        let capabilities = self.opening.server().map(|i| &i.capabilities);
        if declared(capabilities, capability, flag) {
            return Ok(());
        }
        Err(RequestError::NotOffered {
            method: request.method.to_string(),
            capability: match flag {
                None => capability.to_owned(),
                Some(flag) => format!("{capability}.{flag}"),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_counts_as_declared() {
        let caps = json!({"resources": {"subscribe": true}, "prompts": {}, "completions": true,
                          "weird": "yes", "off": {"subscribe": "true"}});
        assert!(declared(Some(&caps), "resources", None));
        assert!(declared(Some(&caps), "resources", Some("subscribe")));
        assert!(!declared(Some(&caps), "resources", Some("listChanged")));
        assert!(declared(Some(&caps), "prompts", None));
        assert!(declared(Some(&caps), "completions", None));
        assert!(!declared(Some(&caps), "weird", None));
        assert!(!declared(Some(&caps), "off", Some("subscribe")));
        assert!(!declared(Some(&caps), "tools", None));
        assert!(!declared(None, "resources", None));
        let skills = json!({"extensions": {"io.modelcontextprotocol/skills": {}}});
        assert!(declared(Some(&skills), EXTENSION_SKILLS, None));
        assert!(!declared(
            Some(&skills),
            EXTENSION_SKILLS,
            Some("directoryRead")
        ));
        let dirs =
            json!({"extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}});
        assert!(declared(
            Some(&dirs),
            EXTENSION_SKILLS,
            Some("directoryRead")
        ));
        assert!(!declared(Some(&caps), EXTENSION_SKILLS, None));
        assert_eq!(
            EXTENSION_SKILLS.strip_prefix("extensions."),
            Some(crate::skills::SKILLS_EXTENSION)
        );
        assert_eq!(needs("tools/call"), None);
        let tasks = json!({"tasks": {"list": {}, "requests": {"tools": {"call": {}}}}});
        assert!(declared(Some(&tasks), "tasks", None));
        assert!(declared(Some(&tasks), "tasks", Some("list")));
        assert!(!declared(Some(&tasks), "tasks", Some("cancel")));
        assert!(declared(Some(&tasks), TASK_CALL.0, TASK_CALL.1));
        assert!(!declared(
            Some(&json!({"tasks": {"requests": {}}})),
            TASK_CALL.0,
            TASK_CALL.1
        ));
        assert_eq!(
            needs("resources/subscribe"),
            Some(&("resources", Some("subscribe")))
        );
    }
}
