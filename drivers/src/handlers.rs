//! The application's answers to what a server asks: elicitation (the user fills a form or visits
//! a URL), sampling (the application's model completes a prompt), roots (the directories it
//! exposes). Register the ones the application supports in [`ClientConfig::handlers`]; the client
//! declares exactly those capabilities, and the core refuses every other request but `ping`
//! (-32601).
//!
//! ```no_run
//! use mcp_connect::{ClientConfig, ElicitAnswer, Elicitation, Handlers, Root};
//! let config = ClientConfig {
//!     handlers: Handlers::new()
//!         .elicitation(|asked: Elicitation| async move {
//!             // Ask the user; fields left out get the schema's defaults.
//!             Ok(ElicitAnswer::Decline)
//!         })
//!         .fixed_roots(vec![Root::directory("/srv/project")]),
//!     ..ClientConfig::default()
//! };
//! ```
//!
//! The same handlers answer both eras: a legacy server's JSON-RPC requests, and a modern server's
//! input requests (an `input_required` round of a tool call: the call is sent again with the
//! answers, and the caller sees one call), so an application writes each handler once. A handler
//! runs as a task on smol's global executor; one that fails or panics answers the server with an
//! error and never takes the connection down; one still running when its request is cancelled
//! (by the server, or because the call it belongs to ended) is dropped.
//!
//! # Progress, logs, list changes
//!
//! What the server tells rather than asks goes to callbacks and counters, not handlers:
//! [`Client::request_with_progress`] reports a request's progress in order until the answer
//! ([`Request::reset_timeout_on_progress`] lets each report restart the timeout, up to a
//! maximum); [`ClientConfig::on_log`] gets the server's log messages, [`ClientConfig::on_list_changed`]
//! its list changes. [`LiveTools::tools`](crate::LiveTools::tools) keeps the bridged tools current: it
//! lists again once the server announced a tool-list change ([`as_tools`](crate::as_tools) is the
//! one-time snapshot).
//!
//! [`ClientConfig::handlers`]: crate::ClientConfig::handlers
//! [`ClientConfig::on_log`]: crate::ClientConfig::on_log
//! [`ClientConfig::on_list_changed`]: crate::ClientConfig::on_list_changed
//! [`Client::request_with_progress`]: crate::Client::request_with_progress
//! [`Request::reset_timeout_on_progress`]: mcp_proto::Request::reset_timeout_on_progress

use crate::transport::BoxFuture;
use mcp_proto::capabilities::{ClientCapabilities, Elicitation as Modes};
use mcp_proto::{RpcError, ServerRequest};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::sync::Arc;

/// What an elicitation asks of the user.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Elicitation {
    /// Form mode: fill the fields of `schema` (a flat JSON Schema object: strings, numbers,
    /// booleans, enums; each may carry a `default`).
    Form {
        /// What to tell the user.
        message: String,
        /// The fields, as sent (`requestedSchema`).
        schema: Value,
    },
    /// URL mode: the user visits `url` out of band (nothing passes through the client).
    Url {
        /// What to tell the user.
        message: String,
        /// Where to send them.
        url: String,
        /// The server's id for this elicitation (`notifications/elicitation/complete` names it).
        elicitation_id: String,
    },
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// The user submitted the form (its values; fields left out get the schema's defaults) or
    /// agreed to visit the URL (the values are ignored).
    Accept(Map<String, Value>),
    /// The user said no.
    Decline,
    /// The user dismissed it without choosing.
    Cancel,
}

/// One root the application exposes.
#[derive(Debug, Clone, PartialEq)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name for people, when wanted.
    pub name: Option<String>,
}

impl Root {
    /// A root for a directory path (made absolute; `file://` + the path, percent-encoding the
    /// bytes a URI cannot carry).
    pub fn directory(path: impl AsRef<std::path::Path>) -> Root {
        let path = path.as_ref();
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut uri = String::from("file://");
        for b in absolute.to_string_lossy().bytes() {
            if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
                uri.push(b as char);
            } else {
                uri.push_str(&format!("%{b:02X}"));
            }
        }
        let name = absolute
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        Root { uri, name }
    }
}

/// Why a handler could not answer: the message goes to the server (and, in the modern era, fails
/// the call with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HandlerError(pub String);

type Answer = BoxFuture<'static, Result<Value, RpcError>>;
type ElicitFn =
    dyn Fn(Elicitation) -> BoxFuture<'static, Result<ElicitAnswer, HandlerError>> + Send + Sync;
type SampleFn = dyn Fn(Value) -> BoxFuture<'static, Result<Value, HandlerError>> + Send + Sync;
type RootsFn = dyn Fn() -> BoxFuture<'static, Result<Vec<Root>, HandlerError>> + Send + Sync;

/// The application's handlers (none by default: the client then declares no capability).
#[derive(Clone, Default)]
pub struct Handlers {
    elicit: Option<(Arc<ElicitFn>, Modes)>,
    sample: Option<Arc<SampleFn>>,
    roots: Option<(Arc<RootsFn>, bool)>,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("capabilities", &self.capabilities())
            .finish()
    }
}

impl Handlers {
    /// No handlers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers form-mode elicitations (declares `elicitation: {form: {}}`).
    pub fn elicitation<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(Elicitation) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitAnswer, HandlerError>> + Send + 'static,
    {
        self.elicitation_modes(true, false, handler)
    }

    /// Answers elicitations in the modes given (declares those modes).
    pub fn elicitation_modes<F, Fut>(mut self, form: bool, url: bool, handler: F) -> Self
    where
        F: Fn(Elicitation) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitAnswer, HandlerError>> + Send + 'static,
    {
        let f: Arc<ElicitFn> = Arc::new(move |e| Box::pin(handler(e)));
        self.elicit = Some((f, Modes { form, url }));
        self
    }

    /// Answers `sampling/createMessage` with the application's model: the handler gets the
    /// request's params as sent and returns `{role, content, model, stopReason?}`.
    pub fn sampling<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        self.sample = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Answers `roots/list`; with `list_changed`, the application promises
    /// [`Client::roots_changed`](crate::Client::roots_changed) when they change.
    pub fn roots<F, Fut>(mut self, list_changed: bool, handler: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Root>, HandlerError>> + Send + 'static,
    {
        self.roots = Some((Arc::new(move || Box::pin(handler())), list_changed));
        self
    }

    /// Fixed roots (and no change notifications).
    pub fn fixed_roots(self, roots: Vec<Root>) -> Self {
        self.roots(false, move || {
            let roots = roots.clone();
            async move { Ok(roots) }
        })
    }

    /// The capabilities these handlers declare.
    pub fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: self.elicit.as_ref().map(|(_, m)| *m),
            sampling: self.sample.is_some(),
            roots: self.roots.as_ref().map(|(_, changed)| *changed),
        }
    }

    /// The future that answers `request`, or `None` when no handler takes it.
    pub(crate) fn answer(&self, request: ServerRequest) -> Option<Answer> {
        let failed = |e: HandlerError| RpcError {
            code: mcp_proto::jsonrpc::INTERNAL_ERROR,
            message: e.0,
            data: None,
        };
        match request {
            ServerRequest::Elicit(params) => {
                let (f, _) = self.elicit.as_ref()?;
                let text = |k: &str| {
                    params
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let asked = if params.get("mode").and_then(Value::as_str) == Some("url") {
                    Elicitation::Url {
                        message: text("message"),
                        url: text("url"),
                        elicitation_id: text("elicitationId"),
                    }
                } else {
                    Elicitation::Form {
                        message: text("message"),
                        schema: params.get("requestedSchema").cloned().unwrap_or(json!({})),
                    }
                };
                let future = f(asked);
                Some(Box::pin(async move {
                    Ok(match future.await.map_err(failed)? {
                        ElicitAnswer::Accept(content) => {
                            json!({"action": "accept", "content": content})
                        }
                        ElicitAnswer::Decline => json!({"action": "decline"}),
                        ElicitAnswer::Cancel => json!({"action": "cancel"}),
                    })
                }))
            }
            ServerRequest::CreateMessage(params) => {
                let future = self.sample.as_ref()?(params);
                Some(Box::pin(async move { future.await.map_err(failed) }))
            }
            ServerRequest::ListRoots => {
                let (f, _) = self.roots.as_ref()?;
                let future = f();
                Some(Box::pin(async move {
                    let roots: Vec<Value> = future
                        .await
                        .map_err(failed)?
                        .into_iter()
                        .map(|r| match r.name {
                            Some(name) => json!({"uri": r.uri, "name": name}),
                            None => json!({"uri": r.uri}),
                        })
                        .collect();
                    Ok(json!({ "roots": roots }))
                }))
            }
            _ => None,
        }
    }
}
