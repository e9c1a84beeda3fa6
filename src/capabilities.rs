//! What this client declares it can do for a server: answer elicitations (form and URL mode),
//! sampling requests, and `roots/list`. The application's handlers decide the answers; the core
//! declares exactly the capabilities whose handlers exist, and refuses everything else.
//!
//! > "Clients that support elicitation **MUST** declare the `elicitation` capability" / "For
//! > backwards compatibility, an empty capabilities object is equivalent to declaring support for
//! > `form` mode only" — MCP 2025-11-25, Client § Elicitation

use serde_json::{json, Map, Value};

/// The capabilities this client declares (`initialize` params in the legacy era, `_meta`
/// `io.modelcontextprotocol/clientCapabilities` in the modern one). The default declares none:
/// every server request but `ping` is then refused with -32601, as an MCP client with no handlers
/// must.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    /// `elicitation`: the application asks its user.
    pub elicitation: Option<Elicitation>,
    /// `sampling`: the application's model answers `sampling/createMessage`.
    pub sampling: bool,
    /// `roots`: the application lists its roots; `Some(true)` also promises
    /// `notifications/roots/list_changed`.
    pub roots: Option<bool>,
}

/// Which elicitation modes the application supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elicitation {
    /// Form mode: a message and a flat JSON Schema of fields to fill.
    pub form: bool,
    /// URL mode: a URL the user visits out of band.
    pub url: bool,
}

impl ClientCapabilities {
    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        *self == ClientCapabilities::default()
    }

    /// The capabilities object, as both eras send it.
    pub fn to_json(&self) -> Value {
        let mut caps = Map::new();
        if let Some(e) = self.elicitation {
            let mut modes = Map::new();
            if e.form {
                modes.insert("form".into(), json!({}));
            }
            if e.url {
                modes.insert("url".into(), json!({}));
            }
            caps.insert("elicitation".into(), Value::Object(modes));
        }
        if self.sampling {
            caps.insert("sampling".into(), json!({}));
        }
        if let Some(list_changed) = self.roots {
            caps.insert("roots".into(), json!({ "listChanged": list_changed }));
        }
        Value::Object(caps)
    }

    /// Whether a server request of this method may be answered (its capability is declared).
    pub fn allows(&self, method: &str) -> bool {
        match method {
            "elicitation/create" => self.elicitation.is_some(),
            "sampling/createMessage" => self.sampling,
            "roots/list" => self.roots.is_some(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_the_declared_capabilities_are_sent() {
        assert_eq!(ClientCapabilities::default().to_json(), json!({}));
        let all = ClientCapabilities {
            elicitation: Some(Elicitation {
                form: true,
                url: true,
            }),
            sampling: true,
            roots: Some(true),
        };
        assert_eq!(
            all.to_json(),
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": true}})
        );
        let form_only = ClientCapabilities {
            elicitation: Some(Elicitation {
                form: true,
                url: false,
            }),
            ..ClientCapabilities::default()
        };
        assert_eq!(form_only.to_json(), json!({"elicitation": {"form": {}}}));
        assert!(form_only.allows("elicitation/create"));
        assert!(!form_only.allows("sampling/createMessage"));
        assert!(!form_only.allows("roots/list"));
        assert!(
            !all.allows("ping"),
            "ping needs no capability and is answered by the core"
        );
    }
}
