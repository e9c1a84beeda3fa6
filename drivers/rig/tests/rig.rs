//! MCP servers' tools in rig's own tool server (rig-agent 0.44's `ToolServer`), called through
//! rig's API with no model, real server processes behind them: the test kit's stdio server
//! (`mcp-testkit-serve`, whose `swap` behaviour adds a tool and removes one after the first call,
//! and says so) and the reference server-everything (`.peers/bin/everything`; skipped when
//! missing, a failure under `CI=true`).
//!
//! Most run in a tokio runtime, as rig's applications do; the set's runs on smol.

use mcp_connect::{
    as_tools, connect_stdio, AgentTool, ClientConfig, Launch, ServerSet, ServerSetConfig,
    ServerSpec, StdioConfig, ToolError,
};
use mcp_connect_rig::{is_fatal, ToolSync};
use mcp_testkit::{close_and_check, peer_bin, serve};
use rig_agent::tool::server::{ToolServer, ToolServerHandle};
use rig_agent::tool::{DynamicTool, ToolContext, ToolErrorKind, ToolOutput, ToolResult};
use rig_core::message::ToolName;
use serde_json::{json, Value};
use std::time::Duration;

/// A bound for what is awaited as an event, so that a broken sync fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(60);

/// A tool of the application's own, which no sync may touch.
fn own_tool() -> DynamicTool {
    DynamicTool::new(
        ToolName::new("mine").unwrap(),
        "The application's own tool.",
        json!({"type": "object"}),
        |_| Box::pin(async { Ok(ToolOutput::text("my own")) }),
    )
}

fn names(tools: &ToolServerHandle) -> Vec<String> {
    let mut names: Vec<String> = tools
        .static_tool_defs()
        .into_iter()
        .map(|d| d.name.to_string())
        .collect();
    names.sort();
    names
}

async fn execute(tools: &ToolServerHandle, name: &str, args: &str) -> ToolResult {
    tools.execute(name, args, &mut ToolContext::new()).await
}

fn text(result: &ToolResult) -> &str {
    result
        .output()
        .as_text()
        .unwrap_or_else(|| panic!("not one text block: {:?}", result.output()))
}

/// A client configuration that tells `sync` of the server's list changes.
fn told(sync: &ToolSync) -> ClientConfig {
    ClientConfig {
        on_list_changed: Some(sync.on_list_changed()),
        ..ClientConfig::default()
    }
}

/// Whether `wait` ended within [`LIMIT`].
async fn within(wait: impl std::future::Future<Output = ()>) -> bool {
    smol::future::or(
        async {
            wait.await;
            true
        },
        async {
            smol::Timer::after(LIMIT).await;
            false
        },
    )
    .await
}

/// Waits (at most [`LIMIT`]) until the sync put one more listing in place than `seen`.
async fn relisted(sync: &ToolSync, seen: u64) {
    let relisted = within(async {
        sync.refreshed_since(seen).await;
    })
    .await;
    assert!(relisted, "no re-listing within {LIMIT:?}");
    assert!(sync.last_error().is_none(), "{:?}", sync.last_error());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_tools_registered_called_and_kept_in_sync() {
    let tools = ToolServer::new().dynamic_tool(own_tool()).run();
    let sync = ToolSync::new(tools.clone());
    let config = told(&sync);
    let client = connect_stdio(serve(&["swap"]), config).await.unwrap();

    assert_eq!(sync.register_client(&client).await.unwrap(), 6);
    assert_eq!(
        sync.names(),
        ["add", "big", "echo", "fail", "image", "slow"]
    );
    assert_eq!(
        names(&tools),
        ["add", "big", "echo", "fail", "image", "mine", "slow"]
    );

    // Name, description and schema as the server listed them.
    let listed = client.list_tools().await.unwrap();
    let echo = listed.iter().find(|t| t.name == "echo").unwrap();
    let def = tools
        .static_tool_defs()
        .into_iter()
        .find(|d| d.name == "echo")
        .unwrap();
    assert_eq!(def.description, echo.description.clone().unwrap());
    let schema: Value = serde_json::from_str(echo.input_schema.as_ref().unwrap().get()).unwrap();
    assert_eq!(def.parameters, schema);

    // A call: the first one, after which the server's list changes.
    let seen = sync.refreshes();
    let result = execute(&tools, "echo", r#"{"text": "héllo"}"#).await;
    assert!(
        result.is_success(),
        "{:?}",
        result.error().map(|e| e.message())
    );
    assert_eq!(text(&result), "héllo");

    // The change picked up: `grown` added, `slow` gone, the application's tool kept.
    relisted(&sync, seen).await;
    assert_eq!(
        sync.names(),
        ["add", "big", "echo", "fail", "grown", "image"]
    );
    assert_eq!(
        names(&tools),
        ["add", "big", "echo", "fail", "grown", "image", "mine"]
    );
    let gone = execute(&tools, "slow", r#"{"ms": 0}"#).await;
    assert!(gone.is_error_kind(ToolErrorKind::NotFound), "{gone:?}");
    assert_eq!(text(&execute(&tools, "mine", "{}").await), "my own");

    // isError: a failed result whose text is exactly the bridge's, for the model to retry.
    let result = execute(&tools, "fail", r#"{"message": "bad input, try 3"}"#).await;
    assert!(result.is_error());
    let error = result.error().unwrap();
    assert_eq!(error.kind(), ToolErrorKind::Other);
    assert!(!is_fatal(error));
    let bridge = as_tools(&client).await.unwrap();
    let fail = bridge.iter().find(|t| t.name() == "fail").unwrap();
    let Err(ToolError::Retry(bridged)) = fail.call(json!({"message": "bad input, try 3"})).await
    else {
        panic!("the bridge did not answer Retry");
    };
    assert_eq!(text(&result), bridged);
    assert_eq!(bridged, "bad input, try 3");

    // The model's arguments reach the server as it wrote them (integers stay integers).
    let result = execute(&tools, "add", r#"{"a": 20, "b": 22}"#).await;
    assert_eq!(text(&result), "42");
    let result = execute(&tools, "add", r#"{"a": "20", "b": 22}"#).await;
    assert_eq!(text(&result), "a and b must be integers");

    drop(sync);
    close_and_check(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_is_rigs_fatal_tool_error_and_the_dead_servers_tools_retire() {
    let tools = ToolServer::new().dynamic_tool(own_tool()).run();
    let sync = ToolSync::new(tools.clone());
    let config = told(&sync);
    let client = connect_stdio(serve(&["crash-on-call"]), config)
        .await
        .unwrap();
    sync.register_client(&client).await.unwrap();

    let result = execute(&tools, "echo", r#"{"text": "hi"}"#).await;
    let error = result.error().expect("a failed call");
    assert!(is_fatal(error), "{}", error.message());
    assert_eq!(error.kind(), ToolErrorKind::Provider);
    let cause = error.downcast_ref::<mcp_connect::Error>().unwrap();
    assert!(
        matches!(cause, mcp_connect::Error::ServerExited { .. }),
        "{cause:?}"
    );
    assert!(
        text(&result).starts_with("echo: "),
        "the model reads {:?}",
        text(&result)
    );

    // The server is gone: rig retires its tools (their liveness), not the application's.
    assert_eq!(names(&tools), ["mine"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_is_rigs_timeout() {
    let tools = ToolServer::new().run();
    let sync = ToolSync::new(tools.clone());
    let mut config = told(&sync);
    config.session.default_timeout = Some(Duration::from_millis(300));
    let client = connect_stdio(serve(&["hang"]), config).await.unwrap();
    sync.register_client(&client).await.unwrap();

    let result = execute(&tools, "echo", r#"{"text": "hi"}"#).await;
    let error = result.error().expect("a failed call");
    assert_eq!(error.kind(), ToolErrorKind::Timeout, "{}", error.message());
    assert!(is_fatal(error));
    close_and_check(client).await;
}

#[test]
fn a_sets_tools_under_their_prefixed_names_on_smol() {
    smol::block_on(async {
        let tools = ToolServer::new().dynamic_tool(own_tool()).run();
        let sync = ToolSync::new(tools.clone());
        let config = ServerSetConfig {
            on_tools_changed: Some(sync.on_tools_changed()),
            ..ServerSetConfig::default()
        };
        let specs = vec![
            ServerSpec::new("a", Launch::Stdio(serve(&["swap"]))),
            ServerSpec::new("b", Launch::Stdio(serve(&[]))),
        ];
        let set = ServerSet::connect(specs, config).await;
        assert_eq!(sync.register_set(&set).await, 12);
        assert!(sync.names().contains(&"a__slow".to_owned()));

        let seen = sync.refreshes();
        let result = execute(&tools, "a__echo", r#"{"text": "through the set"}"#).await;
        assert_eq!(text(&result), "through the set");
        relisted(&sync, seen).await;
        let now = names(&tools);
        assert!(now.contains(&"a__grown".to_owned()), "{now:?}");
        assert!(!now.contains(&"a__slow".to_owned()), "{now:?}");
        assert!(now.contains(&"b__slow".to_owned()), "{now:?}");
        assert!(now.contains(&"mine".to_owned()), "{now:?}");
        assert_eq!(now.len(), 13, "{now:?}");

        let result = execute(&tools, "b__fail", r#"{"message": "no"}"#).await;
        assert_eq!(text(&result), "no");
        assert!(!is_fatal(result.error().unwrap()));
        set.close().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_in_rig() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    let tools = ToolServer::new().run();
    let sync = ToolSync::new(tools.clone());
    let config = told(&sync);
    let client = connect_stdio(StdioConfig::new(bin).args(["stdio"]), config)
        .await
        .unwrap();
    sync.register_client(&client).await.unwrap();
    // Registered: what the server lists now (it adds tools once initialized and says so; the
    // sync follows, so the registry ends as the server's last list).
    let listed: Vec<String> = {
        let mut names: Vec<String> = client
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        names.sort();
        names
    };
    let wait = async {
        loop {
            let seen = sync.refreshes();
            if sync.names() == listed {
                break;
            }
            sync.refreshed_since(seen).await;
        }
    };
    assert!(within(wait).await, "{:?} != {listed:?}", sync.names());
    assert_eq!(names(&tools), listed);

    let result = execute(&tools, "echo", r#"{"message": "hello"}"#).await;
    assert_eq!(text(&result), "Echo: hello");
    let result = execute(&tools, "get-sum", r#"{"a": 20, "b": 22}"#).await;
    assert!(text(&result).contains("42"), "{}", text(&result));
    // Bad arguments are an isError result from this server: back to the model.
    let result = execute(&tools, "get-sum", r#"{"a": "x"}"#).await;
    let error = result.error().expect("isError");
    assert!(!is_fatal(error));
    assert!(!text(&result).is_empty());
    // An image is the bridge's placeholder.
    let result = execute(&tools, "get-tiny-image", "{}").await;
    assert!(
        text(&result).contains("[image: image/png, "),
        "{}",
        text(&result)
    );

    drop(sync);
    close_and_check(client).await;
}
