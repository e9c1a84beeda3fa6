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
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "completions": {}},
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

/// Hostile answers to the resource, prompt and completion requests: each ends in a clear error
/// (or a capped answer) and none loops, buffers without bound or sends what it should not.
#[test]
fn hostile_resources_prompts_and_completions() {
    use mcp_connect::proto::prompts::CompletionRef;
    use mcp_connect::proto::ResourceError;
    use std::sync::Mutex;
    let read_uris = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = read_uris.clone();
    let transport = MemoryTransport::new(move |method, params| {
        let cursor = params.get("cursor").and_then(Value::as_str);
        Some(match method {
            // A cursor that comes back: the guard stops it.
            "resources/list" => {
                json!({"resources": [{"uri": "a://1", "name": "1"}], "nextCursor": "again"})
            }
            // Pages without end.
            "prompts/list" => {
                let n: u64 = cursor.map_or(0, |c| c.parse().unwrap());
                json!({"prompts": [{"name": format!("p{n}")}], "nextCursor": (n + 1).to_string()})
            }
            "resources/templates/list" => {
                json!({"resourceTemplates": [{"uriTemplate": "file:///{path}", "name": "f"}]})
            }
            "resources/read" => {
                let uri = params["uri"].as_str().unwrap_or_default().to_owned();
                seen.lock().unwrap().push(uri.clone());
                json!({"contents": [{"uri": uri, "text": "x".repeat(2048)}]})
            }
            "completion/complete" => {
                let values: Vec<String> = (0..1000).map(|i| format!("v{i}")).collect();
                json!({"completion": {"values": values}})
            }
            _ => json!({}),
        })
    });
    let requests = transport.requests.clone();
    smol::block_on(async {
        let config = ClientConfig {
            max_tool_pages: 25,
            max_read_bytes: 1024,
            ..ClientConfig::default()
        };
        let client = Client::with_config(transport, config);
        client.initialize().await.unwrap();

        let err = client.list_resources().await.unwrap_err();
        assert!(
            matches!(&err, Error::Listing { method: "resources/list", error: PaginationError::RepeatedCursor(c) } if c == "again"),
            "{err:?}"
        );
        let err = client.list_prompts().await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "prompts/list pagination: more than 25 pages"
        );

        // Contents over the cap.
        let err = client.read_resource("a://big").await.unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Resource(ResourceError::TooLarge {
                    len: 2048,
                    limit: 1024,
                    ..
                })
            ),
            "{err:?}"
        );

        // Odd values stay in their place: percent-encoded, never a path of their own.
        let templates = client.list_resource_templates().await.unwrap();
        let vars = |v: Value| match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        for (value, uri) in [
            (
                json!({"path": "../../etc/passwd"}),
                "file:///..%2F..%2Fetc%2Fpasswd",
            ),
            (json!({"path": "a\r\nb?c#d"}), "file:///a%0D%0Ab%3Fc%23d"),
            (json!({}), "file:///"),
        ] {
            let _ = client.read_template(&templates[0], &vars(value)).await;
            assert_eq!(
                read_uris.lock().unwrap().last().map(String::as_str),
                Some(uri)
            );
        }
        // A template that does not expand: refused before anything is sent.
        let before = requests.load(Ordering::SeqCst);
        let bad: mcp_connect::proto::ResourceTemplate =
            serde_json::from_value(json!({"uriTemplate": "file:///{unclosed", "name": "bad"}))
                .unwrap();
        let err = client
            .read_template(&bad, &vars(json!({"unclosed": "x"})))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Resource(ResourceError::Template { .. })),
            "{err:?}"
        );
        assert_eq!(requests.load(Ordering::SeqCst), before);

        // A flood of completion values: the first 100, marked.
        let c = client
            .complete(
                &CompletionRef::Prompt { name: "p".into() },
                "a",
                "",
                &serde_json::Map::new(),
            )
            .await
            .unwrap();
        assert_eq!(c.values.len(), 100);
        assert!(c.truncated && c.has_more);
    });
}
