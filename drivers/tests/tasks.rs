//! Tasks (MCP 2025-11-25) against the test kit's hostile task servers
//! (`mcp-testkit-serve --behave tasks-…`, tool `research` requires tasks): a task that completes
//! after polls, one that stays `working` forever (the call's timeout cancels it), one whose
//! result never comes, a failed one, a bogus task id, and a server that declares tasks but
//! answers the task call with a plain result.

use mcp_connect::proto::tasks::{CallMode, TaskStatus};
use mcp_connect::proto::{Era, Progress};
use mcp_connect::{as_tools, AgentTool, Client, Error, StdioTransport, TaskStart, ToolError};
use mcp_testkit::{close_and_check, serve, wait_until};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn connect(mode: &str) -> (Client, mcp_connect::Tool) {
    let client = Client::new(StdioTransport::spawn(serve(&[mode])).unwrap());
    client.initialize().await.expect("initialize");
    assert_eq!(client.era(), Some(Era::Legacy));
    let tool = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "research")
        .expect("tool research");
    assert_eq!(client.task_call_mode_of(&tool), CallMode::Task);
    (client, tool)
}

fn stderr(client: &Client) -> String {
    client.transport().stderr_tail().unwrap_or_default()
}

/// Waits (bounded) for the server to log `line` on stderr.
fn logged(client: &Client, line: &str) -> bool {
    wait_until(Duration::from_secs(10), || stderr(client).contains(line))
}

#[test]
fn a_task_is_polled_to_its_result_and_its_status_messages_are_progress() {
    smol::block_on(async {
        let (client, tool) = connect("tasks-ok").await;
        let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
        let sink = seen.clone();
        let result = client
            .call_tool_waiting(
                &tool,
                json!({}),
                false,
                Some(Duration::from_secs(30)),
                move |p| sink.lock().unwrap().push(p.clone()),
            )
            .await
            .unwrap();
        assert_eq!(result.text(), "researched");
        let messages: Vec<_> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|p| p.message.clone())
            .collect();
        assert_eq!(
            messages,
            [
                Some("working (1)".into()),
                Some("working (2)".into()),
                Some("completed (3)".into())
            ]
        );
        // The bridged tool waits the same way.
        let tools = as_tools(&client).await.unwrap();
        let research = tools.iter().find(|t| t.name() == "research").unwrap();
        // (The server's poll count goes on: the task completes at once now.)
        assert_eq!(research.call(json!({})).await.unwrap(), "researched");
        close_and_check(client).await;
    });
}

#[test]
fn a_task_that_stays_working_times_out_and_is_cancelled() {
    smol::block_on(async {
        let (client, tool) = connect("tasks-forever").await;
        let outcome = client
            .call_tool_waiting(
                &tool,
                json!({}),
                false,
                Some(Duration::from_millis(400)),
                |_| {},
            )
            .await;
        assert!(
            matches!(outcome, Err(Error::Timeout(t)) if t == Duration::from_millis(400)),
            "{outcome:?}"
        );
        assert!(
            logged(&client, "serve: tasks/cancel t1"),
            "{}",
            stderr(&client)
        );
        assert!(stderr(&client).contains("serve: tasks/get t1"));
        close_and_check(client).await;
    });
}

#[test]
fn a_dropped_wait_cancels_its_task() {
    smol::block_on(async {
        let (client, tool) = connect("tasks-forever").await;
        let call = client.call_tool_waiting(&tool, json!({}), false, None, |_| {});
        // Dropped once it has polled at least once.
        let polled = async {
            while !stderr(&client).contains("serve: tasks/get t1") {
                smol::Timer::after(Duration::from_millis(10)).await;
            }
        };
        let raced = smol::future::or(async { Some(call.await) }, async {
            polled.await;
            None
        })
        .await;
        assert!(
            raced.is_none(),
            "a task that stays working ended: {raced:?}"
        );
        assert!(
            logged(&client, "serve: tasks/cancel t1"),
            "{}",
            stderr(&client)
        );
        close_and_check(client).await;
    });
}

#[test]
fn a_result_that_never_comes_times_out_and_cancels() {
    smol::block_on(async {
        let (client, tool) = connect("tasks-no-result").await;
        let outcome = client
            .call_tool_waiting(
                &tool,
                json!({}),
                false,
                Some(Duration::from_millis(500)),
                |_| {},
            )
            .await;
        assert!(matches!(outcome, Err(Error::Timeout(_))), "{outcome:?}");
        assert!(stderr(&client).contains("serve: tasks/result t1"));
        assert!(
            logged(&client, "serve: tasks/cancel t1"),
            "{}",
            stderr(&client)
        );
        close_and_check(client).await;
    });
}

#[test]
fn a_failed_task_is_the_servers_error_and_a_bridged_tool_says_so() {
    smol::block_on(async {
        let (client, tool) = connect("tasks-failed").await;
        let outcome = client
            .call_tool_waiting(
                &tool,
                json!({}),
                false,
                Some(Duration::from_secs(30)),
                |_| {},
            )
            .await;
        assert!(
            matches!(&outcome, Err(Error::Protocol(e)) if e.code == -32603 && e.message == "the task failed"),
            "{outcome:?}"
        );
        let tools = as_tools(&client).await.unwrap();
        let research = tools.iter().find(|t| t.name() == "research").unwrap();
        assert!(matches!(
            research.call(json!({})).await,
            Err(ToolError::Fatal(Error::Protocol(_)))
        ));
        // Answered: nothing was cancelled.
        assert!(!stderr(&client).contains("tasks/cancel"));
        close_and_check(client).await;
    });
}

#[test]
fn a_bogus_task_id_is_the_servers_invalid_params() {
    smol::block_on(async {
        let (client, _) = connect("tasks-ok").await;
        for outcome in [
            client.get_task("bogus").await.err(),
            client.cancel_task("bogus").await.err(),
        ] {
            assert!(
                matches!(&outcome, Some(Error::Protocol(e)) if e.code == -32602),
                "{outcome:?}"
            );
        }
        let listed = client.list_tasks().await.unwrap();
        assert_eq!(listed[0].status, TaskStatus::Working);
        close_and_check(client).await;
    });
}

#[test]
fn a_server_that_answers_a_task_call_plainly_is_read_as_the_result() {
    smol::block_on(async {
        let (client, tool) = connect("tasks-plain").await;
        let start = client
            .call_as_task("research", json!({}), None)
            .await
            .unwrap();
        assert!(
            matches!(start, TaskStart::Done(ref r) if r.text() == "plain"),
            "{start:?}"
        );
        let result = client
            .call_tool_waiting(
                &tool,
                json!({}),
                false,
                Some(Duration::from_secs(30)),
                |_| {},
            )
            .await
            .unwrap();
        assert_eq!(result.text(), "plain");
        assert!(!stderr(&client).contains("serve: tasks/"));
        close_and_check(client).await;
    });
}

/// A server without the tasks capability: a task call is refused without a round trip, and a
/// tool is called plainly whatever it says.
#[test]
fn no_task_capability_no_task() {
    smol::block_on(async {
        let client = Client::new(StdioTransport::spawn(serve(&[])).unwrap());
        client.initialize().await.unwrap();
        let outcome = client.call_as_task("echo", json!({}), None).await;
        assert!(
            matches!(&outcome, Err(Error::Request(mcp_connect::proto::RequestError::NotOffered { capability, .. })) if capability == "tasks.requests.tools.call"),
            "{outcome:?}"
        );
        let tool = mcp_connect::Tool::from_json(
            r#"{"name":"echo","inputSchema":{},"execution":{"taskSupport":"required"}}"#,
        )
        .unwrap();
        assert_eq!(client.task_call_mode_of(&tool), CallMode::Plain);
        close_and_check(client).await;
    });
}
