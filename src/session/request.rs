//! Requests: what the application asks for, how each is put on the wire, and how its answer is
//! decoded into a [`Reply`].

use super::Core;
use crate::error::RequestError;
use crate::jsonrpc::RequestId;
use crate::types::{CallToolResult, ListToolsResult};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::time::Duration;

/// A request to send: a method, its params, and its own timeout.
#[derive(Debug, Clone)]
pub struct Request {
    pub(super) method: String,
    pub(super) params: Option<Value>,
    pub(super) expect: Expect,
    pub(super) timeout: Timeout,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Timeout {
    Default,
    After(Duration),
    Never,
}

/// How a response's `result` is decoded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Expect {
    Initialize,
    ListTools,
    CallTool,
    Raw,
}

impl Request {
    /// Any request, by method name; its result is handed back as raw JSON ([`Reply::Raw`]).
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Request {
            method: method.into(),
            params,
            expect: Expect::Raw,
            timeout: Timeout::Default,
        }
    }

    /// `tools/list` for one page: the first page with `None`, else the previous page's `nextCursor`.
    /// Its reply is [`Reply::Tools`].
    pub fn list_tools(cursor: Option<&str>) -> Self {
        let params = cursor.map(|c| json!({ "cursor": c }));
        Request {
            expect: Expect::ListTools,
            ..Request::new("tools/list", params)
        }
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
        Request {
            expect: Expect::CallTool,
            ..Request::new(
                "tools/call",
                Some(json!({ "name": name, "arguments": arguments })),
            )
        }
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

    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }
}

/// A decoded successful answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reply {
    /// A `tools/list` page.
    Tools(ListToolsResult),
    /// A `tools/call` result (which may still report `isError`).
    ToolCall(CallToolResult),
    /// The result of any other request, as sent.
    Raw(Value),
}

impl Core {
    /// The fast path for the common case: an answer to a pending request whose id shows at the
    /// message's start or end is parsed once, straight into its result type, instead of once as an
    /// envelope and again as a result. Anything else (and any doubt) takes the general path, which
    /// gives the same outcome for what the fast path accepts.
    pub(super) fn fast_response(&mut self, message: &[u8]) -> bool {
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
        fn parse<T: serde::de::DeserializeOwned>(message: &[u8], id: RequestId) -> Option<T> {
            let a: Answer<T> = serde_json::from_slice(message).ok()?;
            if a.id != id.0 || a.method.is_some() || a.error.is_some() {
                return None;
            }
            a.result
        }
        let Some(id) = crate::framing::peek_id(message)
            .and_then(|id| id.parse::<u64>().ok())
            .map(RequestId)
        else {
            return false;
        };
        let reply = match self.pending.get(&id).map(|p| p.expect) {
            Some(Expect::CallTool) => parse(message, id).map(Reply::ToolCall),
            Some(Expect::ListTools) => parse(message, id).map(Reply::Tools),
            Some(Expect::Raw) => parse::<Value>(message, id)
                .filter(|v| !v.is_null())
                .map(Reply::Raw),
            Some(Expect::Initialize) | None => None,
        };
        match reply {
            Some(reply) => {
                self.complete(id, Ok(reply));
                true
            }
            None => false,
        }
    }

    pub(super) fn decode(&self, id: RequestId, result: &RawValue) -> Result<Reply, RequestError> {
        let Some(p) = self.pending.get(&id) else {
            return Err(RequestError::Closed);
        };
        let invalid = |e: serde_json::Error| RequestError::InvalidResult {
            method: p.method.clone(),
            reason: e.to_string(),
        };
        let json = result.get();
        match p.expect {
            // Decoded again in `complete`; here only its shape is checked.
            Expect::Initialize => serde_json::from_str(json).map(Reply::Raw).map_err(invalid),
            Expect::ListTools => serde_json::from_str(json)
                .map(Reply::Tools)
                .map_err(invalid),
            Expect::CallTool => serde_json::from_str(json)
                .map(Reply::ToolCall)
                .map_err(invalid),
            Expect::Raw => serde_json::from_str(json).map(Reply::Raw).map_err(invalid),
        }
    }
}
