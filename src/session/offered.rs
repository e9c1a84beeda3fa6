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
    Some(match method {
        "resources/list" | "resources/templates/list" | "resources/read" => &RESOURCES,
        SUBSCRIBE | UNSUBSCRIBE => &SUBSCRIPTIONS,
        "prompts/list" | "prompts/get" => &PROMPTS,
        "completion/complete" => &COMPLETIONS,
        _ => return None,
    })
}

/// Whether `capabilities` declares `capability` (present, an object or `true`), and within it
/// `flag` as `true`.
fn declared(capabilities: Option<&Value>, capability: &str, flag: Option<&str>) -> bool {
    let Some(c) = capabilities.and_then(|c| c.get(capability)) else {
        return false;
    };
    let present = c.is_object() || c.as_bool() == Some(true);
    match flag {
        None => present,
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
        if flag.is_some() && self.era() == Some(Era::Modern) {
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
        assert_eq!(needs("tools/call"), None);
        assert_eq!(
            needs("resources/subscribe"),
            Some(&("resources", Some("subscribe")))
        );
    }
}
