//! Tasks in both eras — MCP 2025-11-25 (SEP-1686) and 2026-07-28's extension
//! `io.modelcontextprotocol/tasks` — against the test kit's hostile task servers
//! (`mcp-testkit-serve --era E --behave tasks-…`, tool `research` requires tasks): a task that
//! completes after polls, one that stays `working` forever (the call's timeout cancels it), one
//! whose result never comes, a failed one, a bogus task id, a server that declares tasks but
//! answers the task call with a plain result, a status that moves back out of a terminal state,
//! polls answered for another task, a huge status message, status notifications (for unknown
//! tasks, and one that lies), input asked during a task (2026-07-28), and a plain call refused
//! for want of the extension (-32021).

use mcp_connect::proto::tasks::{CallMode, TaskStatus, MAX_STATUS_MESSAGE};
use mcp_connect::proto::{Era, Progress, Request, RequestError};
use mcp_connect::{
    as_tools, AgentTool, Client, ClientConfig, ElicitAnswer, Elicitation, Error, Handlers,
    StdioTransport, TaskStart, ToolError,
};
use mcp_testkit::{close_and_check, serve, serve_in, wait_until};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Both eras, as the fake server's `--era` names them.
const ERAS: [&str; 2] = ["legacy", "modern"];

async fn connect(era: &str, mode: &str) -> (Client, mcp_connect::Tool) {
    connect_with(era, mode, Handlers::new()).await
}

async fn connect_with(era: &str, mode: &str, handlers: Handlers) -> (Client, mcp_connect::Tool) {
    let config = ClientConfig {
        handlers,
        ..ClientConfig::default()
    };
    let client = Client::with_config(
        StdioTransport::spawn(serve_in(era, &[mode])).unwrap(),
        config,
    );
    client.initialize().await.expect("initialize");
    let expected = if era == "modern" {
        Era::Modern
    } else {
        Era::Legacy
    };
    assert_eq!(client.era(), Some(expected));
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
    for era in ERAS {
        smol::block_on(async {
            let (client, tool) = connect(era, "tasks-ok").await;
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
            assert_eq!(result.text(), "researched", "{era}");
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
                ],
                "{era}"
            );
            // The bridged tool waits the same way.
            let tools = as_tools(&client).await.unwrap();
            let research = tools.iter().find(|t| t.name() == "research").unwrap();
            // (The server's poll count goes on: the task completes at once now.)
            assert_eq!(research.call(json!({})).await.unwrap(), "researched");
            if era == "modern" {
                // No `tasks/result` in that era: the poll carried the result.
                assert!(
                    !stderr(&client).contains("tasks/result"),
                    "{}",
                    stderr(&client)
                );
            }
            close_and_check(client).await;
        });
    }
}

#[test]
fn a_task_that_stays_working_times_out_and_is_cancelled() {
    for era in ERAS {
        smol::block_on(async {
            let (client, tool) = connect(era, "tasks-forever").await;
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
                "{era}: {outcome:?}"
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
}

#[test]
fn a_dropped_wait_cancels_its_task() {
    for era in ERAS {
        smol::block_on(async {
            let (client, tool) = connect(era, "tasks-forever").await;
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
}

/// 2025-11-25: `tasks/result` never answered, the call's timeout ends it; 2026-07-28: a
/// `completed` task without its `result` is an invalid answer, not a success.
#[test]
fn a_result_that_never_comes_times_out_or_is_invalid_and_cancels() {
    for era in ERAS {
        smol::block_on(async {
            let (client, tool) = connect(era, "tasks-no-result").await;
            let outcome = client
                .call_tool_waiting(
                    &tool,
                    json!({}),
                    false,
                    Some(Duration::from_millis(500)),
                    |_| {},
                )
                .await;
            if era == "legacy" {
                assert!(matches!(outcome, Err(Error::Timeout(_))), "{outcome:?}");
                assert!(logged(&client, "serve: tasks/result t1"));
                assert!(
                    logged(&client, "serve: tasks/cancel t1"),
                    "{}",
                    stderr(&client)
                );
            } else {
                assert!(
                    matches!(
                        outcome,
                        Err(Error::Request(RequestError::InvalidResult { .. }))
                    ),
                    "{outcome:?}"
                );
            }
            close_and_check(client).await;
        });
    }
}

#[test]
fn a_failed_task_is_the_servers_error_and_a_bridged_tool_says_so() {
    for era in ERAS {
        smol::block_on(async {
            let (client, tool) = connect(era, "tasks-failed").await;
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
                "{era}: {outcome:?}"
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
}

#[test]
fn a_bogus_task_id_is_the_servers_invalid_params() {
    for era in ERAS {
        smol::block_on(async {
            let (client, _) = connect(era, "tasks-ok").await;
            for outcome in [
                client.get_task("bogus").await.err(),
                client.cancel_task("bogus").await.err(),
            ] {
                assert!(
                    matches!(&outcome, Some(Error::Protocol(e)) if e.code == -32602),
                    "{era}: {outcome:?}"
                );
            }
            let listed = client.list_tasks().await;
            if era == "legacy" {
                assert_eq!(listed.unwrap()[0].status, TaskStatus::Working);
            } else {
                // The extension lists no tasks: refused without a round trip.
                assert!(
                    matches!(listed, Err(Error::Request(RequestError::NotInEra { .. }))),
                    "{listed:?}"
                );
                assert!(!stderr(&client).contains("tasks/list"));
            }
            close_and_check(client).await;
        });
    }
}

#[test]
fn a_server_that_answers_a_task_call_plainly_is_read_as_the_result() {
    for era in ERAS {
        smol::block_on(async {
            let (client, tool) = connect(era, "tasks-plain").await;
            let start = client
                .call_as_task("research", json!({}), None)
                .await
                .unwrap();
            assert!(
                matches!(start, TaskStart::Done(ref r) if r.text() == "plain"),
                "{era}: {start:?}"
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
}

/// A server without tasks (2025-11-25: the `tasks` capability; 2026-07-28: the extension): a
/// task call is refused without a round trip, and a tool is called plainly whatever it says.
#[test]
fn no_task_capability_no_task() {
    for (era, capability) in [
        ("legacy", "tasks.requests.tools.call"),
        ("modern", "extensions.io.modelcontextprotocol/tasks"),
    ] {
        smol::block_on(async {
            let client = Client::new(StdioTransport::spawn(serve_in(era, &[])).unwrap());
            client.initialize().await.unwrap();
            let outcome = client.call_as_task("echo", json!({}), None).await;
            assert!(
                matches!(&outcome, Err(Error::Request(RequestError::NotOffered { capability: c, .. })) if c == capability),
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
    // The default server (no era given) is the legacy one.
    smol::block_on(async {
        let client = Client::new(StdioTransport::spawn(serve(&[])).unwrap());
        client.initialize().await.unwrap();
        assert!(!client.takes_task_calls());
        close_and_check(client).await;
    });
}

/// A task that completes, then says it is `working` again: the wait ends at the first terminal
/// state, and a later `get` refuses the move.
#[test]
fn a_status_moving_back_out_of_a_terminal_state_is_refused() {
    for era in ERAS {
        smol::block_on(async {
            let (client, _) = connect(era, "tasks-backwards").await;
            let TaskStart::Task(mut handle) = client
                .call_as_task("research", json!({}), None)
                .await
                .unwrap()
            else {
                panic!("no task")
            };
            let result = handle
                .wait(Some(Duration::from_secs(30)), |_| {})
                .await
                .unwrap();
            assert_eq!(result.text(), "researched", "{era}");
            assert_eq!(handle.task().status, TaskStatus::Completed);
            let again = handle.get().await;
            assert!(
                matches!(
                    again,
                    Err(Error::Request(RequestError::InvalidResult { .. }))
                ),
                "{era}: {again:?}"
            );
            assert_eq!(handle.task().status, TaskStatus::Completed);
            close_and_check(client).await;
        });
    }
}

#[test]
fn a_poll_answered_for_another_task_is_invalid_and_the_task_cancelled() {
    for era in ERAS {
        smol::block_on(async {
            let (client, tool) = connect(era, "tasks-wrong-id").await;
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
                matches!(&outcome, Err(Error::Request(RequestError::InvalidResult { reason, .. })) if reason.contains("\"t2\"")),
                "{era}: {outcome:?}"
            );
            assert!(
                logged(&client, "serve: tasks/cancel t1"),
                "{}",
                stderr(&client)
            );
            close_and_check(client).await;
        });
    }
}

#[test]
fn a_huge_status_message_is_cut() {
    for era in ERAS {
        smol::block_on(async {
            let (client, _) = connect(era, "tasks-huge-message").await;
            let TaskStart::Task(mut handle) = client
                .call_as_task("research", json!({}), None)
                .await
                .unwrap()
            else {
                panic!("no task")
            };
            let cut = |h: &mcp_connect::TaskHandle| {
                h.task().status_message.as_deref().unwrap_or_default().len()
            };
            assert_eq!(cut(&handle), MAX_STATUS_MESSAGE, "{era}");
            let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
            let sink = seen.clone();
            let result = handle
                .wait(Some(Duration::from_secs(30)), move |p| {
                    sink.lock().unwrap().push(p.clone())
                })
                .await
                .unwrap();
            assert_eq!(result.text(), "researched");
            assert_eq!(cut(&handle), MAX_STATUS_MESSAGE, "{era}");
            // Cut to the same text each poll: nothing new to show.
            assert!(seen.lock().unwrap().is_empty());
            close_and_check(client).await;
        });
    }
}

/// Status notifications are hints: those for tasks nobody waits on change nothing, and one that
/// says the task completed (with a result) does not end the wait — the polls decide.
#[test]
fn status_notifications_never_replace_the_polls() {
    for era in ERAS {
        smol::block_on(async {
            let (client, tool) = connect(era, "tasks-notify").await;
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
            assert_eq!(result.text(), "researched", "{era}");
            // The server logs each poll on stderr before it answers; that pipe is read apart from
            // stdout, so the last poll's line may come after the result: wait for it.
            let polls = || stderr(&client).matches("serve: tasks/get t1").count();
            wait_until(Duration::from_secs(10), || polls() >= 6);
            assert!(
                polls() >= 6,
                "{era}: {} polls\n{}",
                polls(),
                stderr(&client)
            );
            close_and_check(client).await;
        });
    }
}

/// > "When a client observes a `tasks/get` response … with `status: "input_required"`, the
/// > client **SHOULD** fulfill the outstanding requests in `inputRequests` by sending one or more
/// > `tasks/update` requests with corresponding `inputResponses`." — Tasks extension,
/// > 2026-07-28 § Task Update Requests
#[test]
fn a_modern_tasks_input_is_asked_of_the_handlers_and_sent_with_tasks_update() {
    let asked = Arc::new(Mutex::new(0));
    let count = asked.clone();
    let handlers = Handlers::new().elicitation(move |e: Elicitation| {
        *count.lock().unwrap() += 1;
        assert!(matches!(e, Elicitation::Form { ref message, .. } if message == "Your name?"));
        async move {
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Luca"));
            Ok(ElicitAnswer::Accept(content))
        }
    });
    smol::block_on(async {
        let (client, tool) = connect_with("modern", "tasks-input", handlers).await;
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
        assert_eq!(result.text(), "hello Luca");
        assert_eq!(
            *asked.lock().unwrap(),
            1,
            "asked once, however many polls saw it"
        );
        assert!(logged(&client, "serve: tasks/update t1 Luca"));
        close_and_check(client).await;
    });
}

/// > "If a server is unable to service a request to a client that does not declare this
/// > extension capability without returning `CreateTaskResult`, the server **MUST** return an
/// > error with the code `-32021`" — Tasks extension, 2026-07-28 § Capability Negotiation
///
/// A plain call gets the error; a waiting call of a tool that does not say it needs a task
/// makes the call again as a task.
#[test]
fn a_call_refused_for_want_of_the_extension_is_made_again_as_a_task() {
    smol::block_on(async {
        let (client, _) = connect("modern", "tasks-ok").await;
        let plain = client.call(Request::call_tool("research", json!({}))).await;
        assert!(
            matches!(
                &plain,
                Err(Error::Request(RequestError::MissingCapability { .. }))
            ),
            "{plain:?}"
        );
        let silent =
            mcp_connect::Tool::from_json(r#"{"name":"research","inputSchema":{}}"#).unwrap();
        assert_eq!(client.task_call_mode_of(&silent), CallMode::Plain);
        let result = client
            .call_tool_waiting(
                &silent,
                json!({}),
                false,
                Some(Duration::from_secs(30)),
                |_| {},
            )
            .await
            .unwrap();
        assert_eq!(result.text(), "researched");
        assert!(logged(&client, "serve: research as a task"));
        close_and_check(client).await;
    });
}
