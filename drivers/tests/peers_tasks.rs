//! Tasks (MCP 2025-11-25, SEP-1686) against server-everything over stdio: its
//! `simulate-research-query` requires tasks (`execution.taskSupport: "required"`) and runs four
//! one-second stages, reporting each as the task's status message. Called through a bridged tool
//! (the task waited for transparently) and through an explicit task handle (get, result, list,
//! cancel). Skipped when the peer is missing (required under `CI=true`).

use mcp_connect::proto::tasks::{CallMode, TaskStatus, TaskSupport};
use mcp_connect::proto::{Era, Progress};
use mcp_connect::{as_tools, AgentTool, Client, Error, StdioConfig, StdioTransport, TaskStart};
use mcp_testkit::{close_and_check, peer_bin};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TOOL: &str = "simulate-research-query";

async fn connect(bin: std::path::PathBuf) -> Client {
    let client = Client::new(StdioTransport::spawn(StdioConfig::new(bin).args(["stdio"])).unwrap());
    client.initialize().await.expect("initialize");
    assert_eq!(client.era(), Some(Era::Legacy));
    client
}

/// The research tool, as listed (it is registered once the session opened).
async fn research_tool(client: &Client) -> mcp_connect::Tool {
    let tools = client.list_tools().await.unwrap();
    let tool = tools
        .into_iter()
        .find(|t| t.name == TOOL)
        .expect("server-everything lists simulate-research-query");
    assert_eq!(TaskSupport::of(&tool), TaskSupport::Required);
    tool
}

#[test]
fn a_bridged_tool_that_requires_tasks_waits_for_its_result() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    smol::block_on(async {
        let client = connect(bin).await;
        let tool = research_tool(&client).await;
        // The core's decision: a required tool on a server that declared task calls.
        let tools = as_tools(&client).await.unwrap();
        let bridged = tools.iter().find(|t| t.name() == TOOL).unwrap();
        let text = bridged
            .call(json!({"topic": "rust"}))
            .await
            .expect("the research result");
        assert!(text.contains("# Research Report: rust"), "{text}");

        // The same through call_tool_waiting, with the status messages as progress.
        let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
        let sink = seen.clone();
        let result = client
            .call_tool_waiting(
                &tool,
                json!({"topic": "tasks"}),
                false,
                Some(Duration::from_secs(60)),
                move |p| sink.lock().unwrap().push(p.clone()),
            )
            .await
            .unwrap();
        assert!(!result.is_error && result.text().contains("Research Report: tasks"));
        let messages: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .filter_map(|p| p.message.clone())
            .collect();
        // Polled every second across four one-second stages: at least one stage was seen.
        assert!(
            messages.iter().any(|m| m.ends_with("...")),
            "status messages {messages:?}"
        );
        close_and_check(client).await;
    });
}

#[test]
fn an_explicit_task_handle_follows_lists_and_cancels() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    smol::block_on(async {
        let client = connect(bin).await;
        let tool = research_tool(&client).await;
        assert_eq!(client.task_call_mode_of(&tool), CallMode::Task);
        let TaskStart::Task(mut handle) = client
            .call_as_task(
                TOOL,
                json!({"topic": "handles"}),
                Some(Duration::from_secs(120)),
            )
            .await
            .unwrap()
        else {
            panic!("server-everything answered a task call without a task")
        };
        assert_eq!(handle.task().status, TaskStatus::Working);
        let id = handle.id().to_owned();
        let now = handle.get().await.unwrap();
        assert_eq!(now.task_id, id);
        let listed = client.list_tasks().await.unwrap();
        assert!(listed.iter().any(|t| t.task_id == id), "{listed:?}");
        // tasks/result blocks until the task ended: the report comes back.
        let result = handle.result(Some(Duration::from_secs(60))).await.unwrap();
        assert!(result.text().contains("Research Report: handles"));
        assert_eq!(handle.get().await.unwrap().status, TaskStatus::Completed);

        // A second task, cancelled while it works; a bogus id is the server's -32602.
        let TaskStart::Task(second) = client
            .call_as_task(TOOL, json!({"topic": "cancel me"}), None)
            .await
            .unwrap()
        else {
            panic!("no task")
        };
        let cancelled = second.cancel().await.unwrap();
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        match client.get_task("no-such-task").await {
            Err(Error::Protocol(e)) => assert_eq!(e.code, -32602, "{e:?}"),
            other => panic!("a bogus task id: {other:?}"),
        }
        close_and_check(client).await;
    });
}

/// `ambiguous: true` with a client that declares elicitation: at its third stage the task goes
/// `input_required` and the server asks (`elicitation/create` with the related-task `_meta`)
/// through the `tasks/result` the waiting call sent; the handler's answer shapes the report.
///
/// > "When the requestor encounters the `input_required` status, it **SHOULD** preemptively call
/// > `tasks/result`." — MCP 2025-11-25, Tasks § Input Required Status
#[test]
fn input_required_is_answered_through_tasks_result() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    use mcp_connect::{ClientConfig, ElicitAnswer, Elicitation, HandlerError, Handlers};
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = asked.clone();
    let config = ClientConfig {
        handlers: Handlers::new().elicitation(move |e: Elicitation| {
            let sink = sink.clone();
            async move {
                let Elicitation::Form { message, .. } = e else {
                    return Err(HandlerError("form mode only".into()));
                };
                sink.lock().unwrap().push(message);
                let mut content = serde_json::Map::new();
                content.insert("interpretation".into(), json!("historical"));
                Ok(ElicitAnswer::Accept(content))
            }
        }),
        ..ClientConfig::default()
    };
    smol::block_on(async {
        let client = Client::with_config(
            StdioTransport::spawn(StdioConfig::new(bin).args(["stdio"])).unwrap(),
            config,
        );
        client.initialize().await.expect("initialize");
        let tool = research_tool(&client).await;
        let result = client
            .call_tool_waiting(
                &tool,
                json!({"topic": "ambiguity", "ambiguous": true}),
                false,
                Some(Duration::from_secs(60)),
                |_| {},
            )
            .await
            .unwrap();
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert!(asked[0].contains("ambiguity"), "{asked:?}");
        assert!(
            result
                .text()
                .contains("Research Report: ambiguity (historical)"),
            "{}",
            result.text()
        );
        close_and_check(client).await;
    });
}
