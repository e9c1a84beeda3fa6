//! Tasks in the session, in both eras: what the server did not declare is refused without a
//! round trip; in 2025-11-25 a task-augmented call goes out with its `task` member and decodes
//! into a task or a plain result, and the other task requests decode as the schema says; in
//! 2026-07-28 (the `io.modelcontextprotocol/tasks` extension) the same typed requests go out in
//! that extension's form, declaring it on themselves, and its answers (a flat task, a task
//! carrying its result, its error or the input it waits for, an empty acknowledgement) are read.
//! Fake time, no I/O.

use mcp_proto::capabilities::{ClientCapabilities, Elicitation};
use mcp_proto::tasks::{PollStep, TaskCall, TaskStatus, TASKS_EXTENSION};
use mcp_proto::{Config, EraChoice, Event, Reply, Request, RequestError, RequestId, Session};
use serde_json::{json, Map, Value};
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

/// > "The extension introduces three methods: `tasks/get`, `tasks/update`, and `tasks/cancel`"
/// > — Tasks extension (`io.modelcontextprotocol/tasks`), 2026-07-28
///
/// In 2026-07-28 `tasks/result` and `tasks/list` are of no era's wire; the others need the
/// extension declared by the server (the old `tasks` capability does not count); `tasks/update`
/// is not of 2025-11-25.
#[test]
fn each_era_refuses_what_it_has_not_without_a_round_trip() {
    let v1 = r#"{"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}"#;
    let (mut s, now) = session(EraChoice::Modern, v1);
    for (request, _) in requests() {
        let method = request.method().to_owned();
        let id = s.send(request, now).unwrap();
        assert!(sent(&mut s).is_empty(), "{method}");
        match outcome(&mut s, id) {
            Err(RequestError::NotInEra { .. }) => {
                assert!(method == "tasks/result" || method == "tasks/list")
            }
            Err(RequestError::NotOffered { capability, .. }) => {
                assert_eq!(
                    capability,
                    format!("extensions.{TASKS_EXTENSION}"),
                    "{method}"
                )
            }
            other => panic!("{method}: {other:?}"),
        }
    }
    let (mut s, now) = session(EraChoice::Legacy, v1);
    let id = s.send(Request::update_task("t1", Map::new()), now).unwrap();
    assert!(sent(&mut s).is_empty());
    assert!(matches!(
        outcome(&mut s, id),
        Err(RequestError::NotInEra { .. })
    ));
}

/// The modern capabilities of a server with the tasks extension.
const V2: &str = r#"{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}"#;

/// The client's capabilities a modern request carries.
fn declared(message: &Value) -> &Value {
    &message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
}

/// > "A server **MUST NOT** return `CreateTaskResult` to a client that did not include the
/// > extension capability on its request, regardless of prior declarations." / "Servers **MUST**
/// > set `resultType` to `"task"` when returning a `CreateTaskResult`" — Tasks extension,
/// > 2026-07-28 § Capability Negotiation, § Polymorphic Results
#[test]
fn a_modern_task_call_declares_the_extension_on_itself_and_reads_a_flat_task() {
    let (mut s, now) = session(EraChoice::Modern, V2);
    let call = s
        .send(
            Request::call_tool_as_task("research", json!({"q": 1}), Some(Duration::from_secs(9))),
            now,
        )
        .unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    let params = &out[0]["params"];
    assert_eq!(params["name"], "research");
    assert_eq!(params["arguments"], json!({"q": 1}));
    assert!(
        params.get("task").is_none(),
        "the client signals no preference: {params}"
    );
    assert_eq!(declared(&out[0])["extensions"][TASKS_EXTENSION], json!({}));
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let got = answer(
        &mut s,
        call,
        r#"{"resultType":"task","taskId":"t9","status":"working","createdAt":"2026-07-28T10:30:00Z","lastUpdatedAt":"2026-07-28T10:30:00Z","ttlMs":60000,"pollIntervalMs":250}"#,
        now,
    );
    let Ok(Reply::TaskCall(created)) = got else {
        panic!("{got:?}")
    };
    let TaskCall::Created(created) = *created else {
        panic!("{created:?}")
    };
    assert_eq!(created.task.task_id, "t9");
    assert_eq!(
        (created.task.ttl, created.task.poll_interval),
        (Some(60000), Some(250))
    );

    // The server may answer at once: a plain result.
    let call = s
        .send(Request::call_tool_as_task("research", json!({}), None), now)
        .unwrap();
    sent(&mut s);
    let got = answer(
        &mut s,
        call,
        r#"{"resultType":"complete","content":[{"type":"text","text":"now"}]}"#,
        now,
    );
    assert!(
        matches!(got, Ok(Reply::TaskCall(ref c)) if matches!(**c, TaskCall::Done(_))),
        "{got:?}"
    );

    // A plain call declares nothing of tasks, and a task in answer to it is invalid.
    let call = s
        .send(Request::call_tool("research", json!({})), now)
        .unwrap();
    let out = sent(&mut s);
    assert!(declared(&out[0]).get("extensions").is_none(), "{}", out[0]);
    let got = answer(
        &mut s,
        call,
        r#"{"resultType":"task","taskId":"t9","status":"working"}"#,
        now,
    );
    assert!(
        matches!(got, Err(RequestError::InvalidResult { .. })),
        "{got:?}"
    );
}

/// > "If the status is `completed`, the server **MUST** return a `Task` object with status
/// > `completed` and a `result` field containing the final result of the task." / "If the status
/// > is `failed`, the server **MUST** return a `Task` object with status `failed` and the error
/// > that occurred during execution." — Tasks extension, 2026-07-28 § Task Polling
#[test]
fn a_modern_poll_carries_the_outcome_and_cancel_is_an_acknowledgement() {
    let (mut s, now) = session(EraChoice::Modern, V2);
    let base = r#""taskId":"t1","createdAt":"2026-07-28T10:30:00Z","lastUpdatedAt":"2026-07-28T10:30:00Z","ttlMs":null"#;
    let poll = |s: &mut Session, body: &str| {
        let get = s.send(Request::get_task("t1"), now).unwrap();
        let out = sent(s);
        assert_eq!(out[0]["params"]["taskId"], "t1");
        assert_eq!(declared(&out[0])["extensions"][TASKS_EXTENSION], json!({}));
        match answer(
            s,
            get,
            &format!(r#"{{"resultType":"complete",{base},{body}}}"#),
            now,
        ) {
            Ok(Reply::Task(t)) => *t,
            other => panic!("{other:?}"),
        }
    };
    let working = poll(&mut s, r#""status":"working","statusMessage":"half way""#);
    assert_eq!(
        s.task_poll_step("t1", &TaskStatus::Working, &working),
        PollStep::Wait
    );
    let done = poll(
        &mut s,
        r#""status":"completed","result":{"content":[{"type":"text","text":"researched"}],"isError":false}"#,
    );
    assert_eq!(
        s.task_poll_step("t1", &TaskStatus::Working, &done),
        PollStep::Ended
    );
    assert_eq!(
        mcp_proto::tasks::outcome(&done).unwrap().text(),
        "researched"
    );
    let failed = poll(
        &mut s,
        r#""status":"failed","error":{"code":-32603,"message":"rate limited"}"#,
    );
    assert!(
        matches!(mcp_proto::tasks::outcome(&failed), Err(RequestError::Rpc(ref e)) if e.code == -32603)
    );
    let cancelled = poll(&mut s, r#""status":"cancelled""#);
    assert!(matches!(
        mcp_proto::tasks::outcome(&cancelled),
        Err(RequestError::Cancelled(_))
    ));
    // Completed without a result: invalid, not a success.
    let empty = poll(&mut s, r#""status":"completed""#);
    assert!(matches!(
        mcp_proto::tasks::outcome(&empty),
        Err(RequestError::InvalidResult { .. })
    ));
    // Out of a terminal state: the lifecycle broken.
    assert!(matches!(
        s.task_poll_step("t1", &TaskStatus::Completed, &working),
        PollStep::Invalid(_)
    ));
    // Another task's answer.
    assert!(matches!(
        s.task_poll_step("t2", &TaskStatus::Working, &working),
        PollStep::Invalid(_)
    ));
    // A huge status message is cut.
    let huge = "é".repeat(10_000);
    let big = poll(
        &mut s,
        &format!(r#""status":"working","statusMessage":"{huge}""#),
    );
    let kept = big.status_message.unwrap();
    assert!(kept.len() <= mcp_proto::tasks::MAX_STATUS_MESSAGE && !kept.is_empty());

    let cancel = s.send(Request::cancel_task("t1"), now).unwrap();
    let out = sent(&mut s);
    assert_eq!(out[0]["method"], "tasks/cancel");
    assert_eq!(declared(&out[0])["extensions"][TASKS_EXTENSION], json!({}));
    let got = answer(&mut s, cancel, r#"{"resultType":"complete"}"#, now);
    assert!(
        matches!(got, Ok(Reply::TaskCancelled(ref a)) if a.task.is_none()),
        "{got:?}"
    );
}

/// > "The client provides responses via the `inputResponses` field in one or more subsequent
/// > `tasks/update` requests." / "Clients **MUST** treat each entry in `inputRequests` as they
/// > would the equivalent standalone server-to-client request" — Tasks extension, 2026-07-28
/// > § Task Update Requests
#[test]
fn a_modern_tasks_input_goes_to_the_application_then_out_with_tasks_update() {
    let now = Instant::now();
    let mut s = elicit_session();
    let task: mcp_proto::tasks::Task = serde_json::from_value(json!({
        "taskId": "t1", "status": "input_required",
        "inputRequests": {"name": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}
    }))
    .unwrap();
    assert_eq!(
        s.task_poll_step("t1", &TaskStatus::Working, &task),
        PollStep::Answer
    );
    let asks = mcp_proto::tasks::unanswered_inputs(&task, &Default::default());
    let update = s.send(Request::update_task("t1", asks), now).unwrap();
    // Nothing goes out before the application answered.
    assert!(sent(&mut s).is_empty());
    let ask = events(&mut s)
        .into_iter()
        .find_map(|e| match e {
            Event::ServerRequest { ask, .. } => Some(ask),
            _ => None,
        })
        .expect("the elicitation, for the application");
    s.respond(
        ask,
        Ok(json!({"action": "accept", "content": {"name": "Luca"}})),
        now,
    )
    .unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["method"], "tasks/update");
    assert_eq!(out[0]["params"]["taskId"], "t1");
    assert_eq!(
        out[0]["params"]["inputResponses"]["name"]["content"]["name"],
        "Luca"
    );
    assert!(out[0]["params"].get("inputRequests").is_none());
    assert_eq!(declared(&out[0])["extensions"][TASKS_EXTENSION], json!({}));
    assert_eq!(declared(&out[0])["elicitation"], json!({"form": {}}));
    // Sent as a round of its own: a wire id of its own.
    line(
        &mut s,
        &json!({"jsonrpc": "2.0", "id": out[0]["id"], "result": {"resultType": "complete"}})
            .to_string(),
        now,
    );
    let got = outcome(&mut s, update);
    assert!(matches!(got, Ok(Reply::TaskUpdated(_))), "{got:?}");
    // Answered keys are not asked twice.
    let answered = std::iter::once("name".to_owned()).collect();
    assert!(mcp_proto::tasks::unanswered_inputs(&task, &answered).is_empty());
}

/// > "Server implementations that use multi round-trip requests in conjunction with task
/// > creation (for example, a tool that requires elicitation over `InputRequiredResult` before
/// > creating a task) **SHOULD** resolve all MRTR exchanges _synchronously_ before responding
/// > with a `CreateTaskResult`." — Tasks extension, 2026-07-28 § Task Creation
///
/// An input-required round of a task call goes out again declaring the extension (with the
/// session's own capabilities), and its last round may be the task.
#[test]
fn a_modern_task_call_goes_through_input_rounds_to_its_task() {
    let mut s = elicit_session();
    let now = Instant::now();
    let call = s
        .send(
            Request::call_tool_as_task("test_tool_with_task", json!({}), None),
            now,
        )
        .unwrap();
    let out = sent(&mut s);
    line(
        &mut s,
        &json!({"jsonrpc": "2.0", "id": out[0]["id"], "result": {"resultType": "input_required",
            "requestState": "s1",
            "inputRequests": {"user_name": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}})
        .to_string(),
        now,
    );
    let ask = events(&mut s)
        .into_iter()
        .find_map(|e| match e {
            Event::ServerRequest { ask, .. } => Some(ask),
            _ => None,
        })
        .expect("the elicitation");
    s.respond(
        ask,
        Ok(json!({"action": "accept", "content": {"name": "Alice"}})),
        now,
    )
    .unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    let params = &out[0]["params"];
    assert_eq!(params["requestState"], "s1");
    assert_eq!(
        params["inputResponses"]["user_name"]["content"]["name"],
        "Alice"
    );
    assert_eq!(declared(&out[0])["extensions"][TASKS_EXTENSION], json!({}));
    assert_eq!(declared(&out[0])["elicitation"], json!({"form": {}}));
    line(
        &mut s,
        &json!({"jsonrpc": "2.0", "id": out[0]["id"], "result": {"resultType": "task",
            "taskId": "t7", "status": "working", "createdAt": "x", "lastUpdatedAt": "x",
            "ttlMs": null}})
        .to_string(),
        now,
    );
    let got = outcome(&mut s, call);
    assert!(
        matches!(got, Ok(Reply::TaskCall(ref c)) if matches!(**c, TaskCall::Created(ref t) if t.task.task_id == "t7")),
        "{got:?}"
    );
}

/// A modern session whose client declares form elicitation, open against a server with the
/// tasks extension.
fn elicit_session() -> Session {
    let now = Instant::now();
    let mut s = Session::new(Config {
        era: EraChoice::Modern,
        capabilities: ClientCapabilities {
            elicitation: Some(Elicitation {
                form: true,
                url: false,
            }),
            ..ClientCapabilities::default()
        },
        ..Config::default()
    });
    s.initialize(now).unwrap();
    let out = sent(&mut s);
    line(
        &mut s,
        &json!({"jsonrpc": "2.0", "id": out[0]["id"], "result": {"resultType": "complete",
            "supportedVersions": ["2026-07-28"], "capabilities": serde_json::from_str::<Value>(V2).unwrap()}})
        .to_string(),
        now,
    );
    sent(&mut s);
    events(&mut s);
    s
}

/// > "When a task status changes, receivers **MAY** send a `notifications/tasks/status`
/// > notification" — MCP 2025-11-25, Tasks; "Servers **MAY** push status updates via
/// > `notifications/tasks` notifications in addition to servicing client polls" — Tasks
/// > extension, 2026-07-28 § Task Status Notifications
#[test]
fn status_notifications_of_both_eras_become_events_and_junk_is_dropped() {
    for (era, method) in [
        (EraChoice::Legacy, "notifications/tasks/status"),
        (EraChoice::Modern, "notifications/tasks"),
    ] {
        let (mut s, now) = session(era, V2);
        line(
            &mut s,
            &format!(
                r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"taskId":"t1","status":"completed","createdAt":"x","lastUpdatedAt":"x","ttl":null}}}}"#
            ),
            now,
        );
        line(
            &mut s,
            &format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"taskId":7}}}}"#),
            now,
        );
        let got: Vec<_> = events(&mut s)
            .into_iter()
            .filter_map(|e| match e {
                Event::TaskStatus(t) => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(got.len(), 1, "{method}");
        assert_eq!(
            (got[0].task_id.as_str(), &got[0].status),
            ("t1", &TaskStatus::Completed)
        );
        assert_eq!(s.stats().notifications_dropped, 1);
    }
}

/// > "When `tasks/get`, `tasks/update`, or `tasks/cancel` is sent over the Streamable HTTP
/// > transport, the client **MUST** set the `Mcp-Name` header to the value of `params.taskId`."
/// > — Tasks extension, 2026-07-28 § Streamable HTTP: Routing Headers
#[test]
fn task_requests_name_their_task_in_mcp_name() {
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let headers =
            mcp_proto::http::metadata::standard_headers(method, Some(&json!({"taskId": "t-1"})))
                .unwrap();
        assert!(
            headers.contains(&("Mcp-Name", "t-1".to_owned())),
            "{headers:?}"
        );
        assert!(headers.contains(&("Mcp-Method", method.to_owned())));
        assert!(mcp_proto::http::metadata::standard_headers(method, Some(&json!({}))).is_err());
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
    assert!(
        matches!(got, Ok(Reply::TaskCancelled(ref t)) if t.task.as_ref().is_some_and(|t| t.status == TaskStatus::Cancelled))
    );

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
