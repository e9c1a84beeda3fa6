//! The `Transport` trait implemented by a test double: an in-memory pair whose far end is a
//! scripted server function. It shows what a user's own transport needs, and drives the client
//! through situations real servers rarely produce on demand (pagination loops, page floods).

use mcp_connect::proto::{PaginationError, TransmitKind};
use mcp_connect::transport::{BoxFuture, Inbound, Transmit, Transport};
use mcp_connect::{Client, ClientConfig, Error};
use serde_json::{json, Value};
use smol::channel::{unbounded, Receiver, Sender};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What the scripted server answers to one request: `Some(result)`, or `None` for no answer.
type Script = dyn Fn(&str, &Value) -> Option<Value> + Send + Sync;

struct MemoryTransport {
    to_client: Sender<Inbound>,
    from_server: Receiver<Inbound>,
    script: Arc<Script>,
    requests: Arc<AtomicUsize>,
    /// Rung after each item for the client: what `ready` waits for.
    arrived: Arc<event_listener::Event>,
}

impl MemoryTransport {
    fn new(script: impl Fn(&str, &Value) -> Option<Value> + Send + Sync + 'static) -> Self {
        let (tx, rx) = unbounded();
        MemoryTransport {
            to_client: tx,
            from_server: rx,
            script: Arc::new(script),
            requests: Arc::new(AtomicUsize::new(0)),
            arrived: Arc::new(event_listener::Event::new()),
        }
    }
}

impl Transport for MemoryTransport {
    fn send(&self, message: Transmit) -> Result<(), Error> {
        let TransmitKind::Request { .. } = message.kind else {
            return Ok(());
        };
        self.requests.fetch_add(1, Ordering::SeqCst);
        let request: Value = serde_json::from_slice(&message.payload).unwrap();
        let method = request["method"].as_str().unwrap_or_default();
        let result = match method {
            // A modern server (2026-07-28): the client's probe finds it, and the listings below
            // run in the modern era, `_meta` and all.
            "server/discover" => Some(json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "memory", "version": "0"}}
            })),
            "initialize" => panic!("a modern server gets no initialize"),
            _ => {
                let meta = &request["params"]["_meta"];
                assert_eq!(
                    meta["io.modelcontextprotocol/protocolVersion"],
                    "2026-07-28"
                );
                assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
                (self.script)(method, &request["params"])
            }
        };
        if let Some(result) = result {
            let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
            // Half the answers as stream bytes, half as whole messages: both paths are the client's.
            let bytes = format!("{answer}\n").into_bytes();
            let item = if request["id"].as_u64().unwrap_or(0) % 2 == 0 {
                Inbound::Bytes(bytes.into())
            } else {
                Inbound::Message(answer.to_string().into_bytes())
            };
            self.to_client.try_send(item).map_err(|_| Error::Closed)?;
            self.arrived.notify(usize::MAX);
        }
        Ok(())
    }

    fn try_recv(&self) -> Option<Inbound> {
        match self.from_server.try_recv() {
            Ok(item) => Some(item),
            Err(smol::channel::TryRecvError::Empty) => None,
            Err(smol::channel::TryRecvError::Closed) => Some(Inbound::Closed(None)),
        }
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
        Box::pin(async move {
            let _ = self.to_client.try_send(Inbound::Closed(None));
            self.arrived.notify(usize::MAX);
            Ok(())
        })
    }
}

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

#[test]
fn all_pages_are_followed() {
    let transport = MemoryTransport::new(|method, params| {
        assert_eq!(method, "tools/list");
        Some(match params.get("cursor").and_then(Value::as_str) {
            None => json!({"tools": [tool("a"), tool("b")], "nextCursor": "2"}),
            Some("2") => json!({"tools": [tool("c")], "nextCursor": ""}),
            // > "an empty string is a valid cursor, not the end"
            Some("") => json!({"tools": [tool("d")]}),
            Some(other) => panic!("unexpected cursor {other}"),
        })
    });
    smol::block_on(async {
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        let names: Vec<String> = client
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        client.close().await.unwrap();
    });
}

#[test]
fn a_repeated_cursor_stops_the_listing() {
    let transport = MemoryTransport::new(|_, params| {
        let cursor = params
            .get("cursor")
            .and_then(Value::as_str)
            .unwrap_or("start");
        let next = if cursor == "start" { "x" } else { "y" };
        let next = if cursor == "y" { "x" } else { next };
        Some(json!({"tools": [tool(cursor)], "nextCursor": next}))
    });
    let requests = transport.requests.clone();
    smol::block_on(async {
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        let err = client.list_tools().await.unwrap_err();
        assert!(
            matches!(&err, Error::Pagination(PaginationError::RepeatedCursor(c)) if c == "x"),
            "{err:?}"
        );
        assert_eq!(
            requests.load(Ordering::SeqCst),
            1 + 3,
            "the opening (server/discover) and three pages"
        );
    });
}

#[test]
fn a_page_flood_stops_at_the_cap() {
    let transport = MemoryTransport::new(|_, params| {
        let n: u64 = params
            .get("cursor")
            .and_then(Value::as_str)
            .map_or(0, |c| c.parse().unwrap());
        Some(json!({"tools": [], "nextCursor": (n + 1).to_string()}))
    });
    smol::block_on(async {
        let config = ClientConfig {
            max_tool_pages: 25,
            ..ClientConfig::default()
        };
        let client = Client::with_config(transport, config);
        client.initialize().await.unwrap();
        let err = client.list_tools().await.unwrap_err();
        assert!(
            matches!(&err, Error::Pagination(PaginationError::TooManyPages(25))),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "tools/list pagination: more than 25 pages");
    });
}

#[test]
fn closing_the_transport_fails_waiting_calls() {
    let transport = MemoryTransport::new(|_, _| None); // never answers
    smol::block_on(async {
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        let waiting = {
            let client = client.clone();
            smol::spawn(async move { client.call_tool("never", json!({})).await })
        };
        smol::Timer::after(std::time::Duration::from_millis(50)).await;
        client.close().await.unwrap();
        let err = waiting.await.unwrap_err();
        assert!(matches!(err, Error::Closed), "{err:?}");
    });
}

#[test]
fn tools_past_the_byte_cap_stop_the_listing() {
    // Every page is well within the message limit, but together they are not.
    let transport = MemoryTransport::new(|_, params| {
        let n: u64 = params
            .get("cursor")
            .and_then(Value::as_str)
            .map_or(0, |c| c.parse().unwrap());
        let big = json!({"name": format!("t{n}"), "description": "d".repeat(100_000),
                         "inputSchema": {"type": "object"}});
        Some(json!({"tools": [big], "nextCursor": (n + 1).to_string()}))
    });
    let requests = transport.requests.clone();
    smol::block_on(async {
        let config = ClientConfig {
            max_tool_bytes: 1_000_000,
            ..ClientConfig::default()
        };
        let client = Client::with_config(transport, config);
        client.initialize().await.unwrap();
        let err = client.list_tools().await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "tools/list pagination: the items listed exceed 1000000 bytes"
        );
        assert_eq!(
            requests.load(Ordering::SeqCst),
            1 + 10,
            "the opening (server/discover) and ten pages of 100 kB"
        );
    });
}

#[test]
fn a_tool_set_re_lists_after_the_server_says_its_tools_changed() {
    let listings = Arc::new(AtomicUsize::new(0));
    let counter = listings.clone();
    let transport = MemoryTransport::new(move |method, _| {
        assert_eq!(method, "tools/list");
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let names: Vec<Value> = (0..=n).map(|i| tool(&format!("t{i}"))).collect();
        Some(json!({"tools": names}))
    });
    let notify = transport.to_client.clone();
    let arrived = transport.arrived.clone();
    smol::block_on(async {
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        let set = mcp_connect::LiveTools::new(client.clone());
        let names = |tools: &[mcp_connect::McpTool]| -> Vec<String> {
            tools.iter().map(|t| t.definition().name.clone()).collect()
        };
        assert_eq!(names(&set.tools().await.unwrap()), ["t0"]);
        assert_eq!(
            names(&set.tools().await.unwrap()),
            ["t0"],
            "no change: no listing"
        );
        assert_eq!(listings.load(Ordering::SeqCst), 1);
        // The server announces a change; the idle reader takes it in.
        notify
            .try_send(Inbound::Message(
                br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_vec(),
            ))
            .unwrap();
        arrived.notify(usize::MAX);
        let started = std::time::Instant::now();
        while !set.changed() && started.elapsed() < std::time::Duration::from_secs(5) {
            smol::Timer::after(std::time::Duration::from_millis(10)).await;
        }
        assert!(set.changed());
        assert_eq!(names(&set.tools().await.unwrap()), ["t0", "t1"]);
        assert!(!set.changed());
        assert_eq!(listings.load(Ordering::SeqCst), 2);
        client.close().await.unwrap();
    });
}
