//! What a server may send a client, by method name, in one table: its requests and its
//! notifications (MCP 2025-11-25, with the names the earlier legacy revisions share). The session
//! classifies every incoming message once into a [`ServerMessage`]; what each one means is decided
//! where it is handled.

use crate::jsonrpc::{RawMessage, RpcError};
use serde_json::value::RawValue;

/// The id of a request the server sent, owned, exactly as it came (its JSON text: a string or a
/// number), so that an answer given later echoes it byte for byte.
///
/// > "Responses MUST include the same ID as the request they correspond to." — MCP 2025-11-25,
/// > Basic § Responses
#[derive(Debug, Clone)]
pub struct ServerRequestId(Box<RawValue>);

impl ServerRequestId {
    /// The id as JSON text (`"abc"` with its quotes, or `7`).
    pub fn as_json(&self) -> &str {
        self.0.get()
    }

    pub(crate) fn from_raw(raw: &RawValue) -> Self {
        ServerRequestId(raw.to_owned())
    }

    pub(crate) fn raw(&self) -> &RawValue {
        &self.0
    }
}

impl PartialEq for ServerRequestId {
    fn eq(&self, other: &Self) -> bool {
        self.as_json() == other.as_json()
    }
}

impl Eq for ServerRequestId {}

impl std::hash::Hash for ServerRequestId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_json().hash(state);
    }
}

/// Declares the server-to-client method table: one line per method, its enum variant and name.
macro_rules! table {
    ($(#[$m:meta])* $enum:ident { $( $(#[$doc:meta])* $variant:ident = $name:literal, )* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum $enum {
            $( $(#[$doc])* $variant, )*
            /// A method this table does not know, by name.
            Other(String),
        }

        impl $enum {
            /// The method for a name.
            pub fn from_name(name: &str) -> Self {
                match name {
                    $( $name => $enum::$variant, )*
                    other => $enum::Other(other.to_owned()),
                }
            }

            /// The method's name on the wire.
            pub fn name(&self) -> &str {
                match self {
                    $( $enum::$variant => $name, )*
                    $enum::Other(name) => name,
                }
            }
        }
    };
}

table! {
    /// A request a server may send a client.
    ServerRequestMethod {
        /// `ping`: answered at once with `{}`.
        Ping = "ping",
        /// `sampling/createMessage`: the server asks the client's model for a completion.
        CreateMessage = "sampling/createMessage",
        /// `elicitation/create`: the server asks the user for input.
        Elicit = "elicitation/create",
        /// `roots/list`: the server asks which roots the client exposes.
        ListRoots = "roots/list",
    }
}

table! {
    /// A notification a server may send a client.
    ServerNotificationMethod {
        /// `notifications/tools/list_changed`.
        ToolsListChanged = "notifications/tools/list_changed",
        /// `notifications/resources/list_changed`.
        ResourcesListChanged = "notifications/resources/list_changed",
        /// `notifications/resources/updated`.
        ResourceUpdated = "notifications/resources/updated",
        /// `notifications/prompts/list_changed`.
        PromptsListChanged = "notifications/prompts/list_changed",
        /// `notifications/progress`.
        Progress = "notifications/progress",
        /// `notifications/message`: a log message.
        Message = "notifications/message",
        /// `notifications/cancelled`: the server gave up on one of its requests.
        Cancelled = "notifications/cancelled",
        /// `notifications/elicitation/complete`: a URL-mode elicitation finished.
        ElicitationComplete = "notifications/elicitation/complete",
        /// `notifications/subscriptions/acknowledged`: a `subscriptions/listen` stream is open
        /// (2026-07-28).
        SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged",
        /// `notifications/tasks/status`: a task's state changed (2025-11-25).
        TaskStatus = "notifications/tasks/status",
        /// `notifications/tasks`: a task's state changed (2026-07-28, tasks extension).
        Tasks = "notifications/tasks",
    }
}

/// One incoming message, classified once. Borrowed parts point into the message being handled.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerMessage<'a> {
    /// A request from the server: it must be answered, with its id echoed exactly.
    Request {
        /// Its id, owned so that the answer may come later.
        id: ServerRequestId,
        /// Its method.
        method: ServerRequestMethod,
        /// Its params, as sent.
        params: Option<&'a RawValue>,
    },
    /// A notification from the server.
    Notification {
        /// Its method.
        method: ServerNotificationMethod,
        /// Its params, as sent.
        params: Option<&'a RawValue>,
    },
    /// A successful response to one of our requests (or to an id we never sent).
    Result {
        /// Its id, as sent.
        id: &'a RawValue,
        /// Its result, as sent.
        result: &'a RawValue,
    },
    /// An error response (without an id when the server could not read something we sent).
    Error {
        /// Its id, as sent.
        id: Option<&'a RawValue>,
        /// The error.
        error: RpcError,
    },
    /// Well-formed JSON that is no JSON-RPC message, and why.
    Invalid(&'static str),
}

impl<'a> ServerMessage<'a> {
    /// What the message is: the one place where a server message is told apart.
    pub(crate) fn classify(raw: RawMessage<'a>) -> ServerMessage<'a> {
        let id = raw.id.filter(|id| id.get() != "null");
        match (raw.method, id, raw.result, raw.error) {
            (Some(method), Some(id), None, None) => ServerMessage::Request {
                id: ServerRequestId::from_raw(id),
                method: ServerRequestMethod::from_name(&method),
                params: raw.params,
            },
            (Some(method), None, None, None) => ServerMessage::Notification {
                method: ServerNotificationMethod::from_name(&method),
                params: raw.params,
            },
            (None, Some(id), Some(result), None) => ServerMessage::Result { id, result },
            (None, id, None, Some(error)) => match serde_json::from_value::<RpcError>(error) {
                Ok(error) => ServerMessage::Error { id, error },
                Err(_) => {
                    ServerMessage::Invalid("error response whose error is not {code, message}")
                }
            },
            (None, None, Some(_), None) => ServerMessage::Invalid("response without an id"),
            (None, _, None, None) => ServerMessage::Invalid("neither method, result nor error"),
            _ => ServerMessage::Invalid("both method and result/error, or both result and error"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_maps_back_to_itself() {
        for name in [
            "ping",
            "sampling/createMessage",
            "elicitation/create",
            "roots/list",
            "x/y",
        ] {
            assert_eq!(ServerRequestMethod::from_name(name).name(), name);
        }
        assert_eq!(
            ServerRequestMethod::from_name("ping"),
            ServerRequestMethod::Ping
        );
        assert_eq!(
            ServerNotificationMethod::from_name("notifications/tools/list_changed"),
            ServerNotificationMethod::ToolsListChanged
        );
        assert_eq!(
            ServerNotificationMethod::from_name("notifications/x"),
            ServerNotificationMethod::Other("notifications/x".into())
        );
    }

    #[test]
    fn an_owned_id_echoes_exactly() {
        let raw: &RawValue = serde_json::from_str(r#""a\u00e9b""#).unwrap();
        let id = ServerRequestId::from_raw(raw);
        assert_eq!(id.as_json(), r#""a\u00e9b""#);
        assert_eq!(id.raw().get(), r#""a\u00e9b""#);
    }
}
