//! Tasks (MCP 2025-11-25) in the session: what the server did not declare is refused without a
//! round trip, a task-augmented call goes out with its `task` member and decodes into a task or
//! a plain result, and the other task requests decode as the schema says. Fake time, no I/O.

use mcp_proto::tasks::{TaskCall, TaskStatus};
use mcp_proto::{EraChoice, Event, Reply, Request, RequestError, RequestId, Session};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

mod opened;
use opened::{events, line, opened, sent};

/// A session of `era` whose server declared `capabilities` (JSON text).
fn session(era: EraChoice, capabilities: &str) -> (Session, Instant) {
    opened(era, &serde_json::from_str(capabilities).unwrap())
}

fn outcome(s: &mut Session, id: RequestId) -> Result<Reply, RequestError> {
    let mut outcome = None;
    for e in events(s) {
        if let Event::Response { id: got, result } = e {
            assert_eq!(got, id);
            outcome = Some(result);
        }
    }
    outcome.expect("the request's outcome")
}

fn answer(
    s: &mut Session,
    id: RequestId,
    result: &str,
    now: Instant,
) -> Result<Reply, RequestError> {
    line(
        s,
        &format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id.0),
        now,
    );
    outcome(s, id)
}

fn requests() -> Vec<(Request, &'static str)> {
    vec![
        (
            Request::call_tool_as_task("t", json!({}), None),
            "tasks.requests.tools.call",
        ),
        (Request::get_task("t1"), "tasks"),
        (Request::task_result("t1"), "tasks"),
        (Request::cancel_task("t1"), "tasks.cancel"),
        (Request::list_tasks(None), "tasks.list"),
    ]
}

/// > "If a server's capabilities do not include `tasks.requests.tools.call`, then clients **MUST
/// > NOT** attempt to use task augmentation on that server's tools" / "`capabilities.tasks.list`
/// > controls if the `tasks/list` operation is supported by the party." — MCP 2025-11-25, Tasks
/// > § Capabilities
#[test]
fn what_the_server_did_not_declare_is_refused_without_a_round_trip() {
    for (caps, lacking) in [
        (
            r#"{"tools":{}}"#,
            &[
                "tasks.requests.tools.call",
                "tasks",
                "tasks.cancel",
                "tasks.list",
            ][..],
        ),
        (
            r#"{"tasks":{"list":{},"requests":{"sampling":{}}}}"#,
            &["tasks.requests.tools.call", "tasks.cancel"][..],
        ),
        (
            r#"{"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}"#,
            &[][..],
        ),
    ] {
        let (mut s, now) = session(EraChoice::Legacy, caps);
        for (request, capability) in requests() {
            let method = request.method().to_owned();
            let id = s.send(request, now).unwrap();
            let out = sent(&mut s);
            if !lacking.contains(&capability) {
                assert_eq!(out.len(), 1, "{method} with {caps}");
                assert!(s.is_pending(id));
                continue;
            }
            assert!(out.is_empty(), "{method} went out with {caps}");
            match outcome(&mut s, id) {
                Err(RequestError::NotOffered { capability: c, .. }) => assert_eq!(c, capability),
                other => panic!("{method} with {caps}: {other:?}"),
            }
        }
    }
    // A plain call is never checked.
    let (mut s, now) = session(EraChoice::Legacy, "{}");
    s.send(Request::call_tool("t", Value::Null), now).unwrap();
    assert_eq!(sent(&mut s).len(), 1);
}

/// In 2026-07-28 tasks are an extension (`io.modelcontextprotocol/tasks`), not built: the typed
/// requests fail at once whatever the server declared.
#[test]
fn the_modern_era_refuses_the_task_requests() {
    let (mut s, now) = session(
        EraChoice::Modern,
        r#"{"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}"#,
    );
    for (request, _) in requests() {
        let id = s.send(request, now).unwrap();
        assert!(sent(&mut s).is_empty());
        assert!(matches!(
            outcome(&mut s, id),
            Err(RequestError::NotInEra { .. })
        ));
    }
}

#[test]
fn task_requests_go_out_and_decode_as_the_schema_says() {
    let (mut s, now) = session(
        EraChoice::Legacy,
        r#"{"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}"#,
    );
    let call = s
        .send(
            Request::call_tool_as_task(
                "research",
                json!({"topic": "x"}),
                Some(Duration::from_secs(60)),
            ),
            now,
        )
        .unwrap();
    let out = sent(&mut s);
    assert_eq!(out[0]["method"], "tools/call");
    assert_eq!(
        out[0]["params"],
        json!({"name": "research", "arguments": {"topic": "x"}, "task": {"ttl": 60000}})
    );
    let task = r#"{"taskId":"t1","status":"working","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":60000,"pollInterval":5000}"#;
    let got = answer(&mut s, call, &format!(r#"{{"task":{task}}}"#), now);
    let Ok(Reply::TaskCall(created)) = got else {
        panic!("{got:?}")
    };
    let TaskCall::Created(created) = *created else {
        panic!("{created:?}")
    };
    assert_eq!(created.task.poll_interval, Some(5000));

    // A server that ignored the augmentation answers with the tool's result.
    let call = s
        .send(Request::call_tool_as_task("t", json!({}), None), now)
        .unwrap();
    sent(&mut s);
    let got = answer(
        &mut s,
        call,
        r#"{"content":[{"type":"text","text":"now"}]}"#,
        now,
    );
    assert!(
        matches!(got, Ok(Reply::TaskCall(ref c)) if matches!(**c, TaskCall::Done(_))),
        "{got:?}"
    );

    let get = s.send(Request::get_task("t1"), now).unwrap();
    assert_eq!(sent(&mut s)[0]["params"], json!({"taskId": "t1"}));
    let got = answer(&mut s, get, task, now);
    assert!(matches!(got, Ok(Reply::Task(ref t)) if t.status == TaskStatus::Working));

    let result = s.send(Request::task_result("t1"), now).unwrap();
    sent(&mut s);
    let got = answer(
        &mut s,
        result,
        r#"{"content":[{"type":"text","text":"done"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}"#,
        now,
    );
    assert!(
        matches!(got, Ok(Reply::TaskResult(ref r)) if r.text() == "done"),
        "{got:?}"
    );

    let cancel = s.send(Request::cancel_task("t1"), now).unwrap();
    sent(&mut s);
    let got = answer(
        &mut s,
        cancel,
        r#"{"taskId":"t1","status":"cancelled"}"#,
        now,
    );
    assert!(matches!(got, Ok(Reply::TaskCancelled(ref t)) if t.status == TaskStatus::Cancelled));

    let list = s.send(Request::list_tasks(Some("c")), now).unwrap();
    assert_eq!(sent(&mut s)[0]["params"], json!({"cursor": "c"}));
    let got = answer(
        &mut s,
        list,
        &format!(r#"{{"tasks":[{task}],"nextCursor":"n"}}"#),
        now,
    );
    assert!(
        matches!(got, Ok(Reply::Tasks(ref l)) if l.tasks.len() == 1 && l.next_cursor.as_deref() == Some("n"))
    );

    // A task whose status is no status is an invalid result, not a task.
    let get = s.send(Request::get_task("t1"), now).unwrap();
    sent(&mut s);
    let got = answer(&mut s, get, r#"{"taskId":"t1","status":"sleeping"}"#, now);
    assert!(
        matches!(got, Err(RequestError::InvalidResult { .. })),
        "{got:?}"
    );
}
