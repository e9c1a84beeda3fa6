//! The client in the modern era over an HTTP-kind transport, against a scripted in-memory server
//! that sees every message's mirrored headers: the -32020 re-list and retry, arguments a header
//! cannot carry (a correctable tool error, nothing sent), and cancellation by abort.

use mcp_connect::proto::{Era, TransmitKind, TransportKind};
use mcp_connect::transport::{BoxFuture, Inbound, Transmit, Transport};
use mcp_connect::{as_tools, AgentTool, Client, Error, ToolError};
use serde_json::{json, Value};
use smol::channel::{unbounded, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One message as the server saw it: its method, params and mirrored headers.
#[derive(Debug, Clone)]
struct Seen {
    kind: TransmitKind,
    method: Option<String>,
    #[allow(dead_code)]
    params: Value,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The scripted server: `Ok(result)`, `Err(error)`, or no answer (`None`).
type Script = dyn Fn(&Seen, usize) -> Option<Result<Value, Value>> + Send + Sync;

struct HttpMemory {
    to_client: Sender<Inbound>,
    from_server: Receiver<Inbound>,
    script: Arc<Script>,
    seen: Arc<Mutex<Vec<Seen>>>,
    arrived: Arc<event_listener::Event>,
}

impl HttpMemory {
    fn new(
        script: impl Fn(&Seen, usize) -> Option<Result<Value, Value>> + Send + Sync + 'static,
    ) -> Self {
        let (tx, rx) = unbounded();
        HttpMemory {
            to_client: tx,
            from_server: rx,
            script: Arc::new(script),
            seen: Arc::new(Mutex::new(Vec::new())),
            arrived: Arc::new(event_listener::Event::new()),
        }
    }
}

impl Transport for HttpMemory {
    fn kind(&self) -> TransportKind {
        TransportKind::Http
    }

    fn send(&self, message: Transmit) -> Result<(), Error> {
        let body: Value = if message.payload.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&message.payload).unwrap()
        };
        let seen = Seen {
            kind: message.kind.clone(),
            method: body["method"].as_str().map(str::to_owned),
            params: body["params"].clone(),
            headers: message
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let n = {
            let mut all = self.seen.lock().unwrap();
            all.push(seen.clone());
            all.iter()
                .filter(|s| s.method == seen.method && s.method.is_some())
                .count()
        };
        if !matches!(message.kind, TransmitKind::Request { .. }) {
            return Ok(());
        }
        if let Some(answer) = (self.script)(&seen, n) {
            let answer = match answer {
                Ok(result) => json!({"jsonrpc": "2.0", "id": body["id"], "result": result}),
                Err(error) => json!({"jsonrpc": "2.0", "id": body["id"], "error": error}),
            };
            let _ = self
                .to_client
                .try_send(Inbound::Message(answer.to_string().into_bytes()));
            self.arrived.notify(usize::MAX);
        }
        Ok(())
    }

    fn try_recv(&self) -> Option<Inbound> {
        self.from_server.try_recv().ok()
    }

    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let arrived = self.arrived.listen();
            if self.from_server.is_empty() {
                arrived.await;
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }
}

fn discover() -> Value {
    json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
}

fn tool(annotated: bool) -> Value {
    let mut region = json!({"type": "string"});
    if annotated {
        region["x-mcp-header"] = json!("Region");
    }
    json!({"name": "query", "inputSchema": {"type": "object", "properties": {
        "region": region, "limit": {"type": "integer", "x-mcp-header": "Limit"}}}})
}

#[test]
fn a_header_mismatch_relists_the_tools_and_retries_once_with_the_new_headers() {
    // The server added an annotation after the client listed: the first call lacks the header.
    let transport = HttpMemory::new(|seen, n| {
        Some(match seen.method.as_deref()? {
            "server/discover" => Ok(discover()),
            "tools/list" => Ok(json!({"resultType": "complete", "tools": [tool(n > 1)]})),
            "tools/call" => match seen.header("Mcp-Param-Region") {
                Some("eu") => Ok(json!({"content": [{"type": "text", "text": "rows from eu"}]})),
                _ => Err(
                    json!({"code": -32020, "message": "Header mismatch: Mcp-Param-Region missing"}),
                ),
            },
            _ => Err(json!({"code": -32601, "message": "no"})),
        })
    });
    let seen = transport.seen.clone();
    smol::block_on(async {
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        assert_eq!(client.era(), Some(Era::Modern));
        client.list_tools().await.unwrap();
        let result = client
            .call_tool("query", json!({"region": "eu", "limit": 5}))
            .await
            .unwrap();
        assert_eq!(result.text(), "rows from eu");
    });
    let seen = seen.lock().unwrap();
    let methods: Vec<&str> = seen.iter().filter_map(|s| s.method.as_deref()).collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "tools/list",
            "tools/call",
            "tools/list",
            "tools/call"
        ]
    );
    let calls: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.method.as_deref() == Some("tools/call"))
        .collect();
    assert_eq!(calls[0].header("Mcp-Param-Region"), None);
    assert_eq!(calls[0].header("Mcp-Param-Limit"), Some("5"));
    assert_eq!(calls[1].header("Mcp-Param-Region"), Some("eu"));
    assert_eq!(calls[1].header("Mcp-Name"), Some("query"));
    assert_eq!(calls[1].header("MCP-Protocol-Version"), Some("2026-07-28"));
}

#[test]
fn a_second_header_mismatch_is_the_callers_error() {
    let transport = HttpMemory::new(|seen, _| {
        Some(match seen.method.as_deref()? {
            "server/discover" => Ok(discover()),
            "tools/list" => Ok(json!({"resultType": "complete", "tools": [tool(true)]})),
            _ => Err(json!({"code": -32020, "message": "Header mismatch, always"})),
        })
    });
    let seen = transport.seen.clone();
    smol::block_on(async {
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        let err = client
            .call_tool("query", json!({"region": "eu"}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Request(mcp_connect::proto::RequestError::HeaderMismatch(e)) if e.message.contains("always")),
            "{err:?}"
        );
    });
    let calls = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.method.as_deref() == Some("tools/call"))
        .count();
    assert_eq!(calls, 2, "retried once, not more");
}

#[test]
fn arguments_a_header_cannot_carry_are_a_correctable_error_and_nothing_is_sent() {
    let transport = HttpMemory::new(|seen, _| {
        Some(match seen.method.as_deref()? {
            "server/discover" => Ok(discover()),
            "tools/list" => Ok(json!({"resultType": "complete", "tools": [tool(true)]})),
            other => panic!("nothing else is sent: {other}"),
        })
    });
    let seen = transport.seen.clone();
    smol::block_on(async {
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        let tools = as_tools(&client).await.unwrap();
        let err = tools[0]
            .call(json!({"region": "eu", "limit": "five"}))
            .await
            .unwrap_err();
        match err {
            ToolError::Retry(message) => {
                assert!(message.starts_with("query: invalid arguments"), "{message}");
                assert!(
                    message.contains("limit") || message.contains("Limit"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    });
    assert!(!seen
        .lock()
        .unwrap()
        .iter()
        .any(|s| s.method.as_deref() == Some("tools/call")));
}

#[test]
fn a_dropped_call_aborts_its_exchange_and_posts_nothing() {
    let transport = HttpMemory::new(|seen, _| match seen.method.as_deref()? {
        "server/discover" => Some(Ok(discover())),
        _ => None, // never answers the call
    });
    let seen = transport.seen.clone();
    smol::block_on(async {
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        let call = client.call_tool("query", json!({}));
        let timer = async {
            smol::Timer::after(Duration::from_millis(50)).await;
            Err(Error::Closed)
        };
        assert!(smol::future::or(call, timer).await.is_err());
    });
    let seen = seen.lock().unwrap();
    let last = seen.last().unwrap();
    assert!(
        matches!(last.kind, TransmitKind::Abort { .. }),
        "{:?}",
        last.kind
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.method.as_deref() == Some("notifications/cancelled")),
        "no notification over HTTP in the modern era"
    );
}

#[test]
fn a_tool_never_listed_is_learned_before_its_first_call_which_carries_its_headers() {
    let transport = HttpMemory::new(|seen, _| {
        Some(match seen.method.as_deref()? {
            "server/discover" => Ok(discover()),
            "tools/list" => Ok(
                json!({"resultType": "complete", "tools": [tool(true)], "ttlMs": -1, "cacheScope": 3}),
            ),
            "tools/call" => match seen.header("Mcp-Param-Region") {
                Some("eu") => Ok(json!({"content": [{"type": "text", "text": "rows from eu"}]})),
                _ => Err(json!({"code": -32020, "message": "Header mismatch"})),
            },
            _ => Err(json!({"code": -32601, "message": "no"})),
        })
    });
    let seen = transport.seen.clone();
    smol::block_on(async {
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        client.learn_tool("query").await.unwrap();
        client.learn_tool("query").await.unwrap();
        let result = client
            .call_tool("query", json!({"region": "eu", "limit": 5}))
            .await
            .unwrap();
        assert_eq!(result.text(), "rows from eu");
    });
    let seen = seen.lock().unwrap();
    let methods: Vec<&str> = seen.iter().filter_map(|s| s.method.as_deref()).collect();
    assert_eq!(
        methods,
        ["server/discover", "tools/list", "tools/call"],
        "one listing, odd cache hints and all; the call's first POST carries its headers"
    );
    assert_eq!(seen[2].header("Mcp-Param-Region"), Some("eu"));
    assert_eq!(seen[2].header("Mcp-Param-Limit"), Some("5"));
}
