//! The mock server (feature `mock`) against the real `Client`: its protocol answers in both eras
//! and through the bridged tools, its scripted failures, its record, and any executor.

use mcp_connect::mock::{Contents, Eras, Fault, Message, MockServer, ToolReply};
use mcp_connect::proto::prompts::CompletionRef;
use mcp_connect::proto::{Era, EraChoice, ListKind};
use mcp_connect::{
    as_tools, AgentTool, Client, ClientConfig, Error, ListChangedCallback, LiveTools, Request,
    ToolError,
};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// A server with five tools (listed two a page), a resource, a template, a prompt and completion.
fn server(eras: Eras) -> MockServer {
    let mut builder = MockServer::builder()
        .eras(eras)
        .server_info("test-mock", "1.2.3")
        .instructions("be kind")
        .page_size(2)
        .tool("echo", json!({"type": "object"}), |args: Value| {
            args["text"].as_str().unwrap_or_default().to_owned()
        })
        .tool("two_blocks", json!({"type": "object"}), |_| {
            ToolReply::content(vec![
                json!({"type": "text", "text": "first"}),
                json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
                json!({"type": "text", "text": "last"}),
            ])
        })
        .tool("divide", json!({"type": "object"}), |args: Value| {
            let (a, b) = (
                args["a"].as_f64().unwrap_or(0.0),
                args["b"].as_f64().unwrap_or(0.0),
            );
            if b == 0.0 {
                Err("division by zero")
            } else {
                Ok(json!({"quotient": a / b}))
            }
        })
        .tool("broken", json!({"type": "object"}), |_| {
            ToolReply::protocol_error(-32603, "the database is gone")
        })
        .resource("file:///readme.md", "# Hello")
        .resource_template("file:///notes/{name}", "notes", |uri: &str| {
            uri.strip_prefix("file:///notes/")
                .map(|n| Contents::text(format!("note {n}")).mime_type("text/plain"))
        })
        .prompt("greet", &[("name", true), ("tone", false)], |args| {
            vec![Message::user(format!(
                "Say hello to {}",
                args["name"].as_str().unwrap_or_default()
            ))]
        })
        .completion(|ask| {
            (0..150)
                .map(|i| format!("{}{i}", ask.value))
                .collect::<Vec<_>>()
        });
    builder = builder.tool_def(
        json!({"name": "panics", "description": "A handler that panics.",
               "inputSchema": {"type": "object"}}),
        |_| -> String { panic!("on purpose") },
    );
    builder.build()
}

fn names(tools: &[impl AgentTool]) -> Vec<String> {
    tools.iter().map(|t| t.name().to_owned()).collect()
}

/// Everything the mock answers, through the real client, in the era given.
async fn every_answer(mock: &MockServer, era: Era, version: &str) {
    let client = mock.connect(ClientConfig::default()).await.unwrap();
    assert_eq!(client.era(), Some(era));
    assert_eq!(mock.negotiated(), Some((era, version.to_owned())));
    assert_eq!(client.server_info().unwrap().name, "test-mock");

    // Tools, over three pages, bridged.
    let tools = as_tools(&client).await.unwrap();
    assert_eq!(
        names(&tools),
        ["echo", "two_blocks", "divide", "broken", "panics"]
    );
    let tool = |name: &str| tools.iter().find(|t| t.name() == name).unwrap();
    assert_eq!(tool("panics").description(), "A handler that panics.");
    assert_eq!(
        tool("echo").call(json!({"text": "hi"})).await.unwrap(),
        "hi"
    );
    // Text joined, other blocks as placeholders.
    assert_eq!(
        tool("two_blocks").call(json!({})).await.unwrap(),
        "first\n[image: image/png, 3 bytes]\nlast"
    );
    assert_eq!(
        tool("divide").call(json!({"a": 1, "b": 4})).await.unwrap(),
        r#"{"quotient":0.25}"#
    );
    // `isError` is the model's to correct; a protocol error is fatal.
    match tool("divide").call(json!({"a": 1, "b": 0})).await {
        Err(ToolError::Retry(m)) => assert_eq!(m, "division by zero"),
        other => panic!("{other:?}"),
    }
    match tool("broken").call(json!({})).await {
        Err(ToolError::Fatal(Error::Protocol(e))) => {
            assert_eq!(
                (e.code, e.message.as_str()),
                (-32603, "the database is gone")
            )
        }
        other => panic!("{other:?}"),
    }
    match tool("panics").call(json!({})).await {
        Err(ToolError::Fatal(Error::Protocol(e))) => assert_eq!(e.code, -32603),
        other => panic!("{other:?}"),
    }
    // An unknown tool is a protocol error.
    let err = client.call_tool("nope", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, Error::Protocol(e) if e.code == -32602),
        "{err:?}"
    );

    // Resources, templates, reads.
    let resources = client.list_resources().await.unwrap();
    assert_eq!(resources.len(), 1);
    assert_eq!(resources[0].uri, "file:///readme.md");
    let read = client.read_resource("file:///readme.md").await.unwrap();
    assert_eq!(
        serde_json::to_value(&read).unwrap()["contents"][0]["text"],
        "# Hello"
    );
    let templates = client.list_resource_templates().await.unwrap();
    let vars = json!({"name": "a b"}).as_object().unwrap().clone();
    let read = client.read_template(&templates[0], &vars).await.unwrap();
    let read = serde_json::to_value(&read).unwrap();
    assert_eq!(read["contents"][0]["text"], "note a%20b");
    assert_eq!(read["contents"][0]["mimeType"], "text/plain");
    let err = client.read_resource("file:///missing").await.unwrap_err();
    // -32002 in 2025-11-25; SEP-2164 makes it -32602 in the modern era.
    let code = if era == Era::Legacy { -32002 } else { -32602 };
    assert!(
        matches!(&err, Error::Protocol(e) if e.code == code),
        "{err:?}"
    );

    // Prompts and completion.
    let prompts = client.list_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "greet");
    let args = json!({"name": "Ada"}).as_object().unwrap().clone();
    let got = client.get_prompt("greet", &args).await.unwrap();
    let got = serde_json::to_value(&got).unwrap();
    assert_eq!(got["messages"][0]["content"]["text"], "Say hello to Ada");
    let err = client.get_prompt("greet", &Map::new()).await.unwrap_err();
    assert!(
        matches!(&err, Error::Protocol(e) if e.code == -32602),
        "{err:?}"
    );
    let done = client
        .complete(
            &CompletionRef::Prompt {
                name: "greet".into(),
            },
            "name",
            "A",
            &Map::new(),
        )
        .await
        .unwrap();
    assert_eq!(done.values.len(), 100);
    assert_eq!(done.values[0], "A0");
    assert!(done.has_more);

    // Ping: the legacy era's only.
    let ping = client.request(Request::new("ping", None)).await;
    assert_eq!(ping.is_ok(), era == Era::Legacy, "{ping:?}");

    // The record: the calls, with their arguments, in order.
    let calls: Vec<(String, Value)> = mock
        .calls()
        .into_iter()
        .map(|c| (c.tool, c.arguments))
        .collect();
    assert_eq!(calls[0], ("echo".into(), json!({"text": "hi"})));
    assert_eq!(calls.len(), 7);
    client.close().await.unwrap();
    assert!(client.call_tool("echo", json!({})).await.is_err());
}

#[test]
fn legacy_era() {
    let mock = server(Eras::Legacy);
    smol::block_on(every_answer(&mock, Era::Legacy, "2025-11-25"));
    // The probe went first, and was refused as a legacy server does.
    let methods: Vec<String> = mock.received().into_iter().map(|r| r.method).collect();
    assert_eq!(
        methods[..3],
        ["server/discover", "initialize", "notifications/initialized"]
    );
}

#[test]
fn modern_era() {
    let mock = server(Eras::Modern);
    smol::block_on(every_answer(&mock, Era::Modern, "2026-07-28"));
    let received = mock.received();
    assert_eq!(received[0].method, "server/discover");
    assert!(received.iter().all(|r| r.method != "initialize"));
    // Every request carried the modern envelope.
    assert!(received
        .iter()
        .filter(|r| r.id.is_some())
        .all(|r| r.params["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"));
}

#[test]
fn a_server_of_both_eras_opens_in_the_clients_choice() {
    let mock = server(Eras::Both);
    smol::block_on(async {
        // A probing client: modern.
        let client = mock.connect(ClientConfig::default()).await.unwrap();
        assert_eq!(client.era(), Some(Era::Modern));
        // A client held to the legacy era: initialize, on a connection of its own.
        let mut config = ClientConfig::default();
        config.session.era = EraChoice::Legacy;
        let legacy = mock.connect(config).await.unwrap();
        assert_eq!(legacy.era(), Some(Era::Legacy));
        assert_eq!(
            mock.negotiated(),
            Some((Era::Legacy, "2025-11-25".to_owned()))
        );
        assert_eq!(
            legacy
                .call_tool("echo", json!({"text": "x"}))
                .await
                .unwrap()
                .text(),
            "x"
        );
        assert_eq!(mock.calls()[0].connection, 2);
    });
}

#[test]
fn a_modern_only_server_refuses_a_legacy_client() {
    let mock = server(Eras::Modern);
    smol::block_on(async {
        let mut config = ClientConfig::default();
        config.session.era = EraChoice::Legacy;
        let err = mock.connect(config).await.unwrap_err();
        assert!(err.to_string().contains("2026-07-28"), "{err}");
    });
}

#[test]
fn a_dropped_connection_fails_the_call_and_the_next_without_a_hang() {
    let mock = server(Eras::Both);
    mock.on_call("echo", 2, Fault::drop_connection());
    smol::block_on(async {
        let client = mock.connect(ClientConfig::default()).await.unwrap();
        let tools = as_tools(&client).await.unwrap();
        let echo = tools.iter().find(|t| t.name() == "echo").unwrap();
        assert_eq!(echo.call(json!({"text": "1"})).await.unwrap(), "1");
        match echo.call(json!({"text": "2"})).await {
            Err(ToolError::Fatal(Error::Io { context, source })) => {
                assert!(context.contains("dropped"), "{context}");
                assert_eq!(source.kind(), std::io::ErrorKind::ConnectionReset);
            }
            other => panic!("{other:?}"),
        }
        let later = client.call_tool("echo", json!({"text": "3"})).await;
        assert!(matches!(later, Err(Error::Io { .. })), "{later:?}");
        assert!(client.closed().is_some());
        // A new connection to the same server works; the count of calls goes on.
        let again = mock.connect(ClientConfig::default()).await.unwrap();
        let out = again.call_tool("echo", json!({"text": "4"})).await.unwrap();
        assert_eq!(out.text(), "4");
        assert_eq!(mock.calls().len(), 3, "the third never reached the server");
    });
}

#[test]
fn a_delay_past_the_timeout_is_a_timeout_and_the_call_is_cancelled() {
    let mock = server(Eras::Legacy);
    mock.on_next_call("echo", Fault::delay(Duration::from_secs(30)));
    smol::block_on(async {
        let client = mock.connect(ClientConfig::default()).await.unwrap();
        let request =
            Request::call_tool("echo", json!({"text": "slow"})).timeout(Duration::from_millis(50));
        let err = client.call(request).await.unwrap_err();
        assert!(
            matches!(err, Error::Timeout(d) if d == Duration::from_millis(50)),
            "{err:?}"
        );
        let call = mock
            .received()
            .into_iter()
            .rfind(|r| r.method == "tools/call");
        // The client cancels what timed out; the mock records it and drops the handler.
        mock.wait_until(|r| r.iter().any(|r| r.method == "notifications/cancelled"))
            .await;
        assert_eq!(mock.cancelled(), [call.unwrap().id.unwrap()]);
        // A delay within the timeout is just slower.
        mock.on_next_call("echo", Fault::delay(Duration::from_millis(20)));
        let out = client.call_tool("echo", json!({"text": "late"})).await;
        assert_eq!(out.unwrap().text(), "late");
    });
}

#[test]
fn a_call_never_answered_and_dropped_is_cancelled() {
    let mock = server(Eras::Modern);
    mock.on_every_call("echo", Fault::never_answer());
    smol::block_on(async {
        let client = mock.connect(ClientConfig::default()).await.unwrap();
        let call = client.call_tool("echo", json!({"text": "lost"}));
        // Sent, then given up on.
        let mut call = Box::pin(call);
        assert!(smol::future::poll_once(&mut call).await.is_none());
        let id = mock.received().last().unwrap().id.clone().unwrap();
        drop(call);
        assert_eq!(mock.cancelled(), [id]);
        // The client stays usable.
        mock.clear_faults();
        let out = client.call_tool("echo", json!({"text": "ok"})).await;
        assert_eq!(out.unwrap().text(), "ok");
    });
}

#[test]
fn scripted_errors_by_call_number() {
    let mock = server(Eras::Legacy);
    mock.on_call("echo", 1, Fault::is_error("try again"));
    mock.on_call("echo", 3, Fault::protocol_error(-32000, "overloaded"));
    smol::block_on(async {
        let client = mock.connect(ClientConfig::default()).await.unwrap();
        let tools = as_tools(&client).await.unwrap();
        let echo = &tools[0];
        let first = echo.call(json!({"text": "a"})).await;
        assert!(
            matches!(first, Err(ToolError::Retry(ref m)) if m == "try again"),
            "{first:?}"
        );
        assert_eq!(echo.call(json!({"text": "b"})).await.unwrap(), "b");
        let third = echo.call(json!({"text": "c"})).await;
        assert!(
            matches!(third, Err(ToolError::Fatal(Error::Protocol(ref e))) if e.code == -32000),
            "{third:?}"
        );
        assert_eq!(echo.call(json!({"text": "d"})).await.unwrap(), "d");
    });
}

/// Tool-list changes reach the client's callback and its live tool set, in either era (in the
/// modern one through `subscriptions/listen`).
#[test]
fn tool_list_changes_reach_the_client() {
    for eras in [Eras::Legacy, Eras::Modern] {
        let mock = server(eras);
        let (tx, changes) = smol::channel::unbounded();
        let config = ClientConfig {
            on_list_changed: Some(ListChangedCallback(Arc::new(move |kind| {
                let _ = tx.try_send(kind);
            }))),
            ..ClientConfig::default()
        };
        smol::block_on(async {
            let client = mock.connect(config).await.unwrap();
            let live = LiveTools::new(client.clone());
            assert_eq!(live.tools().await.unwrap().len(), 5);
            if eras == Eras::Modern {
                // The listen is open (acknowledged) before the server has anything to say.
                mock.wait_until(|r| r.iter().any(|r| r.method == "subscriptions/listen"))
                    .await;
            }
            mock.add_tool(
                json!({"name": "new", "inputSchema": {"type": "object"}}),
                |_| "fresh",
            );
            assert_eq!(changes.recv().await.unwrap(), ListKind::Tools, "{eras:?}");
            assert!(live.changed());
            let tools = live.tools().await.unwrap();
            assert_eq!(tools.len(), 6);
            assert_eq!(tools[5].call(json!({})).await.unwrap(), "fresh");
            assert!(mock.remove_tool("new"));
            assert_eq!(changes.recv().await.unwrap(), ListKind::Tools);
            assert_eq!(live.tools().await.unwrap().len(), 5);
            client.close().await.unwrap();
        });
    }
}

/// An async handler waits on something outside the server (here a channel the test feeds),
/// and calls in flight are answered as they finish, out of order.
#[test]
fn async_handlers_answer_when_they_are_ready() {
    let (release, released) = smol::channel::unbounded::<String>();
    let mock = MockServer::builder()
        .tool_async("wait", json!({"type": "object"}), move |_| {
            let released = released.clone();
            async move { released.recv().await.unwrap_or_default() }
        })
        .tool_async(
            "sleep",
            json!({"type": "object"}),
            |args: Value| async move {
                let ms = args["ms"].as_u64().unwrap_or(0);
                async_io::Timer::after(Duration::from_millis(ms)).await;
                format!("slept {ms}")
            },
        )
        .build();
    smol::block_on(async {
        let client = mock.connect(ClientConfig::default()).await.unwrap();
        let waiting = smol::spawn({
            let client = client.clone();
            async move { client.call_tool("wait", json!({})).await }
        });
        let slept = client.call_tool("sleep", json!({"ms": 10})).await.unwrap();
        assert_eq!(slept.text(), "slept 10");
        assert!(!waiting.is_finished());
        release.send("released".into()).await.unwrap();
        assert_eq!(waiting.await.unwrap().text(), "released");
    });
}

/// The client and the mock from inside tokio: no smol executor in the test's own code.
#[tokio::test(flavor = "current_thread")]
async fn under_tokio() {
    let mock = server(Eras::Both);
    mock.on_next_call("echo", Fault::delay(Duration::from_millis(20)));
    let client = mock.connect(ClientConfig::default()).await.unwrap();
    let tools = as_tools(&client).await.unwrap();
    assert_eq!(
        tools[0].call(json!({"text": "tokio"})).await.unwrap(),
        "tokio"
    );
    // The delay was used up: the next call is answered at once, well within a short timeout.
    let fast = client
        .call(Request::call_tool("echo", json!({"text": "fast"})).timeout(Duration::from_secs(5)))
        .await;
    assert_eq!(fast.unwrap().text(), "fast");
    client.close().await.unwrap();
}

/// And from a plain `block_on` with no executor at all (futures-lite's), the idle reader off:
/// the callers drive everything.
#[test]
fn under_a_plain_block_on_without_an_idle_reader() {
    let mock = server(Eras::Legacy);
    mock.on_next_call("echo", Fault::delay(Duration::from_millis(20)));
    smol::future::block_on(async {
        let config = ClientConfig {
            idle_reader: false,
            ..ClientConfig::default()
        };
        let client = Client::with_config(mock.transport(), config);
        client.initialize().await.unwrap();
        let out = client.call_tool("echo", json!({"text": "plain"})).await;
        assert_eq!(out.unwrap().text(), "plain");
        client.close().await.unwrap();
    });
}

#[test]
fn an_invalid_cursor_is_invalid_params() {
    let mock = server(Eras::Legacy);
    smol::block_on(async {
        let client = mock.connect(ClientConfig::default()).await.unwrap();
        for cursor in ["x", "99"] {
            let err = client.list_tools_page(Some(cursor)).await.unwrap_err();
            assert!(
                matches!(&err, Error::Protocol(e) if e.code == -32602),
                "{err:?}"
            );
        }
        let page = client.list_tools_page(Some("4")).await.unwrap();
        assert_eq!(page.tools.len(), 1);
        assert_eq!(page.next_cursor, None);
    });
}

#[test]
fn the_record_is_capped() {
    let mock = MockServer::builder().eras(Eras::Legacy).build();
    smol::block_on(async {
        let client = mock.connect(ClientConfig::default()).await.unwrap();
        for _ in 0..mcp_connect::mock::MAX_RECORDED {
            client.request(Request::new("ping", None)).await.unwrap();
        }
    });
    assert_eq!(mock.received().len(), mcp_connect::mock::MAX_RECORDED);
    // The probe, initialize and initialized went first, and are the ones dropped.
    assert_eq!(mock.dropped_records(), 3);
    assert!(mock.received().iter().all(|r| r.method == "ping"));
}
