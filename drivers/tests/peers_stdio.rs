//! The client against real MCP servers over stdio: the reference TypeScript servers
//! (server-everything, server-filesystem) and the official Python SDK (drivers/tests/peers/fastmcp_server.py).
//!
//! The peers come from `.ci/install-peers` (see drivers/tests/peers/PEERS.md). Each test prints
//! `skipped: …` and passes when its peer is missing, and fails instead under `CI=true`. Every test
//! closes the client and checks that the server's whole process group is gone.

use mcp_connect::proto::{Era, EraChoice};
use mcp_connect::{
    as_tools, AgentTool, Client, ClientConfig, StdioConfig, StdioTransport, ToolError,
};
use mcp_testkit::{close_and_check, peer_bin, peer_script, TempDir};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The Node servers answer `initialize` after ≈0.5 s, the Python one after ≈1.7 s; on a loaded
/// machine several times that. Well under the session's default 60 s request timeout.
const START_LIMIT: Duration = Duration::from_secs(30);

async fn connect(config: StdioConfig) -> Client {
    connect_in(config, EraChoice::Auto).await
}

async fn connect_in(config: StdioConfig, era: EraChoice) -> Client {
    let mut settings = ClientConfig::default();
    settings.session.era = era;
    let client = Client::with_config(
        StdioTransport::spawn(config).expect("spawn the peer"),
        settings,
    );
    let started = Instant::now();
    if let Err(e) = client.initialize().await {
        panic!(
            "initialize failed after {:?}: {e}\nserver stderr:\n{}",
            started.elapsed(),
            client.transport().stderr_tail().unwrap_or_default()
        );
    }
    assert!(
        started.elapsed() < START_LIMIT,
        "the handshake took {:?}",
        started.elapsed()
    );
    client
}

/// Checks that every tool has an `inputSchema` that is a JSON object of `"type": "object"`.
fn check_schemas(tools: &[mcp_connect::Tool]) {
    for tool in tools {
        let schema = tool
            .input_schema
            .as_ref()
            .unwrap_or_else(|| panic!("tool {} has no inputSchema", tool.name));
        let schema: Value = serde_json::from_str(schema.get()).expect("schema is JSON");
        assert!(
            schema.is_object(),
            "tool {}: inputSchema is not an object: {schema}",
            tool.name
        );
        assert_eq!(schema["type"], "object", "tool {}: {schema}", tool.name);
    }
}

fn names(tools: &[mcp_connect::Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// The image placeholder line the bridge puts in place of base64 data.
fn assert_image_placeholder(text: &str) {
    let line = text
        .lines()
        .find(|l| l.starts_with("[image: "))
        .unwrap_or_else(|| panic!("no image placeholder in {text:?}"));
    // The decoded size: "N bytes" below 1 KiB, then "X.Y KiB" / "X.Y MiB".
    let size = line
        .strip_prefix("[image: image/png, ")
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or_else(|| panic!("unexpected placeholder {line:?}"));
    let (number, unit) = size
        .split_once(' ')
        .unwrap_or_else(|| panic!("placeholder size {line:?}"));
    let number: f64 = number
        .parse()
        .unwrap_or_else(|_| panic!("placeholder size {line:?}"));
    assert!(number > 0.0, "{line:?}");
    assert!(["bytes", "KiB", "MiB"].contains(&unit), "{line:?}");
    // No payload: a PNG in base64 starts with "iVBOR".
    assert!(!text.contains("iVBOR"), "base64 leaked into {text:?}");
}

#[test]
fn server_everything() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    smol::block_on(async {
        let client = connect(StdioConfig::new(bin).args(["stdio"])).await;
        // A legacy server: the probe found the legacy era.
        assert_eq!(client.era(), Some(Era::Legacy));
        let info = client.server_info().expect("server info");
        assert!(
            info.name.contains("everything"),
            "server name {:?}",
            info.name
        );

        let tools = client.list_tools().await.unwrap();
        let listed = names(&tools);
        for expected in [
            "echo",
            "get-sum",
            "get-tiny-image",
            "get-structured-content",
        ] {
            assert!(listed.contains(&expected), "{expected} missing: {listed:?}");
        }
        assert!(listed.len() >= 10, "{listed:?}");
        check_schemas(&tools);
        // It registers more tools once initialized and says so before answering our first
        // tools/list (PEERS.md): the notification was read before the answer.
        assert!(
            client.tools_changed() >= 1,
            "notifications/tools/list_changed was not counted"
        );

        let r = client
            .call_tool("echo", json!({"message": "hello"}))
            .await
            .unwrap();
        assert!(!r.is_error);
        assert_eq!(r.text(), "Echo: hello");

        let r = client
            .call_tool("get-sum", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert!(r.text().contains('5'), "{}", r.text());

        let r = client.call_tool("get-tiny-image", json!({})).await.unwrap();
        assert!(!r.is_error);
        assert_image_placeholder(&r.text());

        let r = client
            .call_tool("get-structured-content", json!({"location": "New York"}))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        let structured = r.structured_content.as_ref().expect("structuredContent");
        assert!(structured.is_object(), "{structured}");
        for key in ["temperature", "conditions", "humidity"] {
            assert!(structured.get(key).is_some(), "{key} missing: {structured}");
        }

        // 32 callers on this one thread at once: the pipe's readiness wakes one of those
        // waiting, which reads for all; each gets its own answer.
        let calls = (0..32)
            .map(|i| client.call_tool("echo", json!({ "message": format!("crowd {i}") })))
            .collect();
        for (i, r) in mcp_testkit::join_all(calls).await.into_iter().enumerate() {
            assert_eq!(r.unwrap().text(), format!("Echo: crowd {i}"));
        }

        // Bad arguments and unknown tools are isError results from this server.
        let r = client
            .call_tool("get-sum", json!({"a": "x"}))
            .await
            .unwrap();
        assert!(r.is_error, "{}", r.text());

        // The same server through the bridge.
        let bridged = as_tools(&client).await.unwrap();
        let sum = bridged.iter().find(|t| t.name() == "get-sum").unwrap();
        assert!(!sum.description().is_empty());
        let schema: Value = serde_json::from_str(sum.input_schema().get()).unwrap();
        assert!(schema["properties"]["a"].is_object(), "{schema}");
        let text = sum.call(json!({"a": 20, "b": 22})).await.unwrap();
        assert!(text.contains("42"), "{text}");
        let image = bridged
            .iter()
            .find(|t| t.name() == "get-tiny-image")
            .unwrap();
        assert_image_placeholder(&image.call(json!({})).await.unwrap());
        let err = sum.call(json!({"a": "x"})).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::Retry(m) if !m.is_empty()),
            "{err:?}"
        );
        drop(bridged);

        close_and_check(client).await;
    })
}

#[test]
fn server_filesystem() {
    let Some(bin) = peer_bin("filesystem") else {
        return;
    };
    let root = TempDir::new("mcp-peers-fs");
    let allowed = root.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    std::fs::write(allowed.join("hello.txt"), "hello file\nsecond line\n").unwrap();
    let outside = root.path().join("outside.txt");
    std::fs::write(&outside, "secret\n").unwrap();

    smol::block_on(async {
        let client = connect(StdioConfig::new(bin).arg_path(&allowed)).await;
        assert_eq!(client.era(), Some(Era::Legacy));
        let tools = client.list_tools().await.unwrap();
        check_schemas(&tools);
        let listed = names(&tools);
        let read = ["read_text_file", "read_file"]
            .into_iter()
            .find(|n| listed.contains(n))
            .unwrap_or_else(|| panic!("no read tool in {listed:?}"));
        // The path argument's name, from the schema's required list.
        let tool = tools.iter().find(|t| t.name == read).unwrap();
        let schema: Value =
            serde_json::from_str(tool.input_schema.as_ref().unwrap().get()).unwrap();
        let arg = schema["required"]
            .as_array()
            .and_then(|r| r.first())
            .and_then(Value::as_str)
            .unwrap_or("path")
            .to_owned();
        assert!(schema["properties"][&arg].is_object(), "{schema}");

        let file = allowed.join("hello.txt");
        let r = client
            .call_tool(read, json!({ arg.as_str(): file }))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert_eq!(r.text(), "hello file\nsecond line\n");

        // Outside the allowed directory, directly and through `..`: an isError result.
        for path in [
            outside.clone(),
            allowed.join("../outside.txt"),
            "/etc/hostname".into(),
        ] {
            let r = client
                .call_tool(read, json!({ arg.as_str(): path }))
                .await
                .unwrap();
            let text = r.text();
            assert!(r.is_error, "{path:?} was readable: {text}");
            assert!(
                text.to_lowercase().contains("access denied"),
                "{path:?}: {text}"
            );
            assert!(!text.contains("secret"), "{text}");
        }

        close_and_check(client).await;
    });
    drop(root);
}

#[test]
fn python_sdk_server() {
    python_sdk_server_in(EraChoice::Auto);
}

#[test]
fn python_sdk_server_forced_legacy() {
    python_sdk_server_in(EraChoice::Legacy);
}

/// The Python SDK server (mcp 2.3.0, dual-era) in an era: `Auto` must find the modern one.
fn python_sdk_server_in(era: EraChoice) {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let script = peer_script("fastmcp_server.py");
    smol::block_on(async {
        let config = StdioConfig::new(python)
            .arg_path(&script)
            .args(["--transport", "stdio"]);
        let client = connect_in(config, era).await;
        let info = client.server_info().expect("server info");
        assert_eq!(info.name, "fastmcp-test-server");
        let version = client.initialize_result().expect("opened").protocol_version;
        if era == EraChoice::Legacy {
            assert_eq!(client.era(), Some(Era::Legacy));
            assert_eq!(version, "2025-11-25");
        } else {
            assert_eq!(
                client.era(),
                Some(Era::Modern),
                "mcp 2.3.0 speaks 2026-07-28"
            );
            assert_eq!(version, "2026-07-28");
        }

        let tools = client.list_tools().await.unwrap();
        check_schemas(&tools);
        let mut listed = names(&tools);
        listed.sort_unstable();
        assert_eq!(listed, ["add", "confirm", "count", "echo", "fail", "image"]);

        let r = client
            .call_tool("add", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert_eq!(r.text(), "5");
        assert_eq!(r.structured_content, Some(json!({"result": 5})));

        let r = client
            .call_tool("echo", json!({"text": "héllo, wörld"}))
            .await
            .unwrap();
        assert!(!r.is_error);
        assert_eq!(r.text(), "héllo, wörld");

        let r = client
            .call_tool("fail", json!({"message": "boom, on purpose"}))
            .await
            .unwrap();
        assert!(r.is_error);
        assert!(r.text().contains("boom, on purpose"), "{}", r.text());

        let r = client.call_tool("image", json!({})).await.unwrap();
        assert!(!r.is_error);
        assert_image_placeholder(&r.text());

        // Requests are handled concurrently on this server: answers may come out of order.
        let calls = (0..8)
            .map(|i| client.call_tool("add", json!({"a": i, "b": 100})))
            .collect();
        for (i, r) in mcp_testkit::join_all(calls).await.into_iter().enumerate() {
            assert_eq!(r.unwrap().text(), (i + 100).to_string());
        }

        close_and_check(client).await;
    })
}

/// Small conveniences local to these tests.
trait ConfigExt {
    fn arg_path(self, path: &std::path::Path) -> Self;
}

impl ConfigExt for StdioConfig {
    fn arg_path(self, path: &std::path::Path) -> Self {
        self.args([path.as_os_str()])
    }
}

/// The skip rule itself: a missing peer skips locally and fails under CI.
#[test]
fn a_missing_peer_skips_locally_and_fails_in_ci() {
    let found = std::panic::catch_unwind(|| peer_bin("no-such-peer"));
    if mcp_testkit::required() {
        assert!(found.is_err(), "CI=true must fail on a missing peer");
    } else {
        assert!(matches!(found, Ok(None)), "{found:?}");
    }
}
