//! The mock's protocol answering: what each message the client sends gets back, in the era the
//! request was made in.

use super::transport::Conn;
use super::{CompletionAsk, Eras, Fault, Received, Server, Shared, ToolReply, When, MODERN};
use crate::transport::BoxFuture;
use mcp_proto::Era;
use serde_json::{json, Map, Value};
use std::sync::MutexGuard;

const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_META: &str = "io.modelcontextprotocol/subscriptionId";

/// The legacy versions it speaks, oldest first.
const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

const METHOD_NOT_FOUND: i64 = mcp_proto::jsonrpc::METHOD_NOT_FOUND;
const INVALID_PARAMS: i64 = mcp_proto::jsonrpc::INVALID_PARAMS;
const INVALID_REQUEST: i64 = mcp_proto::jsonrpc::INVALID_REQUEST;
const UNSUPPORTED_VERSION: i64 = -32022;

/// A request's answer: a result, an error, or nothing now (a call in flight, a listen kept open).
enum Answer {
    Result(Value),
    Error(i64, String, Option<Value>),
    Later,
}

fn error(code: i64, message: impl Into<String>) -> Answer {
    Answer::Error(code, message.into(), None)
}

/// Takes one message from the client: records it, and answers it.
pub(super) fn receive(conn: &Conn, payload: &[u8]) {
    let Ok(message) = serde_json::from_slice::<Value>(payload) else {
        return;
    };
    // An answer to a server request: the mock sends none.
    let Some(method) = message["method"].as_str() else {
        return;
    };
    let id = message.get("id").cloned();
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    {
        let mut server = lock(&conn.shared);
        server.record(Received {
            connection: conn.number,
            method: method.to_owned(),
            id: id.clone(),
            params: params.clone(),
        });
    }
    conn.shared.recorded.notify(usize::MAX);
    match id {
        None => notification(conn, method, &params),
        Some(id) => {
            let modern = is_modern(conn, method, &params);
            let answer = if modern {
                modern_request(conn, method, &id, &params)
            } else {
                legacy_request(conn, method, &id, &params)
            };
            let server = lock(&conn.shared);
            let answer = match answer {
                Answer::Later => return,
                Answer::Result(result) => result_message(&server, &id, modern, result),
                Answer::Error(code, message, data) => error_message(&id, code, message, data),
            };
            drop(server);
            conn.push(answer, false);
        }
    }
}

fn notification(conn: &Conn, method: &str, params: &Value) {
    match method {
        "notifications/initialized" => conn.lock().initialized = true,
        // > "Receivers of cancellation notifications SHOULD: Stop processing the cancelled
        // > request" — MCP 2025-11-25, Utilities § Cancellation; and a listen's cancellation ends
        // > it — MCP 2026-07-28, Basic § Subscriptions § Cancellation
        "notifications/cancelled" => conn.cancel(&params["requestId"]),
        _ => {}
    }
}

/// Whether a request is answered in the modern era: as the server's eras say, and for a server
/// of both, when it carries the modern `_meta` (a dual-era server tells the eras apart so).
fn is_modern(conn: &Conn, method: &str, params: &Value) -> bool {
    match lock(&conn.shared).eras {
        Eras::Legacy => false,
        Eras::Modern => true,
        Eras::Both => {
            method != "initialize"
                && params["_meta"]
                    .as_object()
                    .is_some_and(|m| m.contains_key(PROTOCOL_VERSION_META))
        }
    }
}

fn legacy_request(conn: &Conn, method: &str, id: &Value, params: &Value) -> Answer {
    match method {
        "initialize" => {
            // > "If the server supports the requested protocol version, it MUST respond with the
            // > same version. Otherwise, the server MUST respond with another protocol version it
            // > supports. This SHOULD be the latest version supported by the server." — MCP
            // > 2025-11-25, Basic § Lifecycle § Version Negotiation
            let asked = params["protocolVersion"].as_str().unwrap_or_default();
            let version = LEGACY
                .iter()
                .find(|v| **v == asked)
                .unwrap_or(&LEGACY[LEGACY.len() - 1]);
            conn.lock().era = Some(Era::Legacy);
            let mut server = lock(&conn.shared);
            server.negotiated = Some((Era::Legacy, (*version).to_owned()));
            let mut result = json!({
                "protocolVersion": version,
                "capabilities": capabilities(&server),
                "serverInfo": server_info(&server),
            });
            if let Some(text) = &server.instructions {
                result["instructions"] = text.clone().into();
            }
            Answer::Result(result)
        }
        "ping" => Answer::Result(json!({})),
        _ if conn.lock().era.is_none() => error(
            INVALID_REQUEST,
            format!("{method} before initialize: the session is not initialized"),
        ),
        _ => common(conn, method, id, params, false),
    }
}

fn modern_request(conn: &Conn, method: &str, id: &Value, params: &Value) -> Answer {
    if method == "initialize" {
        // > "A server that supports only modern versions SHOULD name the protocol versions it
        // > supports in any error it returns to an `initialize` request" — MCP 2026-07-28
        return Answer::Error(
            UNSUPPORTED_VERSION,
            format!(
                "this server speaks only protocol version {MODERN}: initialize is not accepted"
            ),
            Some(json!({"supported": [MODERN], "requested": params["protocolVersion"]})),
        );
    }
    // > "Every request's `params._meta` carries `io.modelcontextprotocol/protocolVersion` and
    // > `io.modelcontextprotocol/clientCapabilities`" — MCP 2026-07-28 (the team's digest)
    let meta = params["_meta"].as_object();
    let missing: Vec<&str> = [PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META]
        .into_iter()
        .filter(|k| !meta.is_some_and(|m| m.contains_key(*k)))
        .collect();
    if !missing.is_empty() {
        return error(
            INVALID_PARAMS,
            format!("params._meta is missing {}", missing.join(", ")),
        );
    }
    let version = &params["_meta"][PROTOCOL_VERSION_META];
    if version != MODERN {
        return Answer::Error(
            UNSUPPORTED_VERSION,
            "Unsupported protocol version".into(),
            Some(json!({"supported": [MODERN], "requested": version})),
        );
    }
    match method {
        "server/discover" => {
            conn.lock().era = Some(Era::Modern);
            let mut server = lock(&conn.shared);
            server.negotiated = Some((Era::Modern, MODERN.to_owned()));
            let mut result = json!({
                "supportedVersions": [MODERN],
                "capabilities": capabilities(&server),
            });
            if let Some(text) = &server.instructions {
                result["instructions"] = text.clone().into();
            }
            Answer::Result(result)
        }
        "subscriptions/listen" => {
            // > "`subscriptions/listen` opens a long-lived notification stream from the server to
            // > the client. Unlike one-off requests, the stream stays open and delivers
            // > notifications until the client cancels it." — MCP 2026-07-28, Basic §
            // > Subscriptions
            let filter = params["notifications"].clone();
            let mut ack = on_listen("notifications/subscriptions/acknowledged", id);
            ack["params"]["notifications"] = filter.clone();
            {
                let mut st = conn.lock();
                st.era.get_or_insert(Era::Modern);
                st.listens.push((id.clone(), filter));
            }
            conn.push(ack, false);
            Answer::Later
        }
        // > "No handshake, no ping, no session." (the modern era)
        "ping" => error(METHOD_NOT_FOUND, "Method not found: ping"),
        _ => {
            conn.lock().era.get_or_insert(Era::Modern);
            common(conn, method, id, params, true)
        }
    }
}

/// The methods both eras answer alike.
fn common(conn: &Conn, method: &str, id: &Value, params: &Value, modern: bool) -> Answer {
    let server = lock(&conn.shared);
    let cursor = params.get("cursor");
    let size = server.page_size;
    match method {
        "tools/list" => {
            let tools = server.tools.iter().map(|t| t.definition.clone()).collect();
            page("tools", tools, cursor, size)
        }
        "tools/call" => {
            drop(server);
            call_tool(conn, id, params, modern)
        }
        "resources/list" => {
            let resources = server
                .resources
                .iter()
                .map(|r| {
                    let mut o = json!({"uri": r.uri, "name": r.name});
                    if let Some(m) = &r.contents.mime_type {
                        o["mimeType"] = m.clone().into();
                    }
                    o
                })
                .collect();
            page("resources", resources, cursor, size)
        }
        "resources/templates/list" => {
            let templates = server
                .templates
                .iter()
                .map(|t| json!({"uriTemplate": t.template, "name": t.name}))
                .collect();
            page("resourceTemplates", templates, cursor, size)
        }
        "resources/read" => {
            drop(server);
            read_resource(conn, params, modern)
        }
        "prompts/list" => {
            let prompts = server
                .prompts
                .iter()
                .map(|p| {
                    let arguments: Vec<Value> = p
                        .arguments
                        .iter()
                        .map(|(name, required)| json!({"name": name, "required": required}))
                        .collect();
                    json!({"name": p.name, "arguments": arguments})
                })
                .collect();
            page("prompts", prompts, cursor, size)
        }
        "prompts/get" => {
            drop(server);
            get_prompt(conn, params)
        }
        "completion/complete" => {
            drop(server);
            complete(conn, params)
        }
        other => error(METHOD_NOT_FOUND, format!("Method not found: {other}")),
    }
}

/// A `tools/call`: the handler's future (or the fault scripted for this call) started.
fn call_tool(conn: &Conn, id: &Value, params: &Value, modern: bool) -> Answer {
    let mut server = lock(&conn.shared);
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let arguments = match &params["arguments"] {
        Value::Null => json!({}),
        args => args.clone(),
    };
    let count = server.calls.entry(name.clone()).or_insert(0);
    *count += 1;
    let n = *count;
    // > "Unknown tools" are among the protocol errors — MCP 2025-11-25, Server § Tools §
    // > Error Handling
    let Some(handler) = server
        .tools
        .iter()
        .find(|t| t.name == name)
        .map(|t| t.handler.clone())
    else {
        return error(INVALID_PARAMS, format!("Unknown tool: {name}"));
    };
    let fault = take_fault(&mut server, &name, n);
    drop(server);
    // The handler runs when the future is polled, where a panic in it is caught.
    let future: BoxFuture<'static, ToolReply> = match fault {
        None => Box::pin(async move { handler(arguments).await }),
        Some(Fault::IsError(text)) => Box::pin(std::future::ready(ToolReply::error(text))),
        Some(Fault::ProtocolError(code, message)) => {
            Box::pin(std::future::ready(ToolReply::protocol_error(code, message)))
        }
        Some(Fault::Delay(delay)) => Box::pin(async move {
            async_io::Timer::after(delay).await;
            handler(arguments).await
        }),
        Some(Fault::NeverAnswer) => Box::pin(std::future::pending()),
        Some(Fault::DropConnection) => {
            conn.drop_connection();
            return Answer::Later;
        }
    };
    conn.start(id.clone(), modern, future);
    Answer::Later
}

/// A `resources/read`: a resource of that URI, else the first template whose reader has it.
fn read_resource(conn: &Conn, params: &Value, modern: bool) -> Answer {
    let server = lock(&conn.shared);
    let uri = params["uri"].as_str().unwrap_or_default().to_owned();
    if let Some(r) = server.resources.iter().find(|r| r.uri == uri) {
        return Answer::Result(json!({"contents": [r.contents.to_json(&uri)]}));
    }
    let reads: Vec<_> = server.templates.iter().map(|t| t.read.clone()).collect();
    drop(server);
    if let Some(contents) = reads.iter().find_map(|read| read(&uri)) {
        return Answer::Result(json!({"contents": [contents.to_json(&uri)]}));
    }
    // > "Resource not found: -32002" — MCP 2025-11-25, Server § Resources § Error
    // > Handling; SEP-2164 (final) makes it -32602 (Invalid Params) for the modern era.
    let code = if modern { INVALID_PARAMS } else { -32002 };
    Answer::Error(code, "Resource not found".into(), Some(json!({"uri": uri})))
}

/// A `prompts/get`: the prompt's messages for the arguments given, once the required are there.
fn get_prompt(conn: &Conn, params: &Value) -> Answer {
    let server = lock(&conn.shared);
    let name = params["name"].as_str().unwrap_or_default();
    let Some(prompt) = server.prompts.iter().find(|p| p.name == name) else {
        return error(INVALID_PARAMS, format!("Unknown prompt: {name}"));
    };
    let given = params["arguments"].as_object().cloned().unwrap_or_default();
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .filter(|(n, required)| *required && !given.contains_key(n))
        .map(|(n, _)| n.as_str())
        .collect();
    if !missing.is_empty() {
        return error(
            INVALID_PARAMS,
            format!("missing required arguments: {}", missing.join(", ")),
        );
    }
    let messages = prompt.messages.clone();
    drop(server);
    let messages: Vec<Value> = messages(&given)
        .into_iter()
        .map(|m| json!({"role": m.role, "content": {"type": "text", "text": m.text}}))
        .collect();
    Answer::Result(json!({"messages": messages}))
}

/// A `completion/complete`: the values the application's function gives, at most 100.
fn complete(conn: &Conn, params: &Value) -> Answer {
    let server = lock(&conn.shared);
    let Some(values_for) = server.completion.clone() else {
        return error(METHOD_NOT_FOUND, "Method not found: completion/complete");
    };
    drop(server);
    let ask = CompletionAsk {
        reference: params["ref"].clone(),
        argument: params["argument"]["name"]
            .as_str()
            .unwrap_or_default()
            .into(),
        value: params["argument"]["value"]
            .as_str()
            .unwrap_or_default()
            .into(),
        context: params["context"]["arguments"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
    };
    let mut values = values_for(&ask);
    let total = values.len();
    // > "`values`: Array of completion values (maximum 100 items)" — MCP 2025-11-25, Utilities
    // > § Completion
    values.truncate(100);
    Answer::Result(json!({"completion": {
        "values": values, "total": total, "hasMore": total > 100
    }}))
}

/// The fault scripted for the `n`-th call of `tool`, if any: a one-time fault is used up.
fn take_fault(server: &mut Server, tool: &str, n: u64) -> Option<Fault> {
    let at = server
        .faults
        .iter()
        .position(|(t, when, _)| t == tool && (*when == When::Call(n) || *when == When::Always))?;
    match server.faults[at].1 {
        When::Always => Some(server.faults[at].2.clone()),
        When::Call(_) => Some(server.faults.remove(at).2),
    }
}

/// One page of a listing. The cursor is the position of the page's first item, as text.
///
/// > "The cursor is an opaque string token, representing a position in the result set" / "If
/// > the cursor is invalid, the server SHOULD return an error with code -32602 (Invalid
/// > params)" — MCP 2025-11-25, Utilities § Pagination
fn page(key: &str, items: Vec<Value>, cursor: Option<&Value>, size: usize) -> Answer {
    let start = match cursor {
        None | Some(Value::Null) => 0,
        Some(c) => match c.as_str().and_then(|c| c.parse::<usize>().ok()) {
            Some(n) if n <= items.len() => n,
            _ => return error(INVALID_PARAMS, format!("invalid cursor {c}")),
        },
    };
    let end = start.saturating_add(size).min(items.len());
    let mut result = Map::new();
    result.insert(key.into(), Value::Array(items[start..end].to_vec()));
    if end < items.len() {
        result.insert("nextCursor".into(), end.to_string().into());
    }
    Answer::Result(Value::Object(result))
}

/// What the server declares, from what it has.
fn capabilities(server: &Server) -> Value {
    let mut caps = json!({"tools": {"listChanged": true}});
    if !server.resources.is_empty() || !server.templates.is_empty() {
        caps["resources"] = json!({});
    }
    if !server.prompts.is_empty() {
        caps["prompts"] = json!({});
    }
    if server.completion.is_some() {
        caps["completions"] = json!({});
    }
    caps
}

fn server_info(server: &Server) -> Value {
    json!({"name": server.name, "version": server.version})
}

/// A tool call's answer.
pub(super) fn tool_answer(shared: &Shared, id: &Value, modern: bool, reply: ToolReply) -> Value {
    match reply.0 {
        Ok(result) => result_message(&lock(shared), id, modern, result),
        Err((code, message)) => error_message(id, code, message, None),
    }
}

/// A result message; in the modern era stamped with its `resultType` and the server's identity.
///
/// > "Every result has `resultType`: `complete` or `input_required`" — MCP 2026-07-28 (the
/// > team's digest)
fn result_message(server: &Server, id: &Value, modern: bool, mut result: Value) -> Value {
    if modern {
        if let Some(o) = result.as_object_mut() {
            o.insert("resultType".into(), "complete".into());
            let meta = o.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(SERVER_INFO_META.into(), server_info(server));
            }
        }
    }
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error_message(id: &Value, code: i64, message: String, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// A notification on the listen stream of request `wire`.
pub(super) fn on_listen(method: &str, wire: &Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": {SUBSCRIPTION_META: wire}}})
}

fn lock(shared: &Shared) -> MutexGuard<'_, Server> {
    crate::sync::lock(&shared.server)
}
