//! Resources, prompts and completion in the session: what the server did not declare is refused
//! without a round trip, answers decode into their types in both eras, and hostile answers (huge,
//! malformed, text that is not JSON text) fail or are mended as a tool call's are. Fake time, no
//! I/O.

use mcp_proto::error::Warning;
use mcp_proto::prompts::CompletionRef;
use mcp_proto::resources::ResourceError;
use mcp_proto::{
    Config, ContentBlock, EraChoice, Event, Reply, Request, RequestError, RequestId, Session,
};
use serde_json::{json, Map, Value};
use std::time::Instant;

mod opened;
use opened::{events, line, opened, sent};

const ALL: &str =
    r#"{"resources":{"subscribe":true,"listChanged":true},"prompts":{},"completions":{}}"#;

/// A legacy session whose server declared `capabilities`.
fn legacy(capabilities: &str) -> (Session, Instant) {
    opened(
        EraChoice::Legacy,
        &serde_json::from_str(capabilities).unwrap(),
    )
}

/// A modern session whose server declared `capabilities` in `server/discover`.
fn modern(capabilities: &str) -> (Session, Instant) {
    opened(
        EraChoice::Modern,
        &serde_json::from_str(capabilities).unwrap(),
    )
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
    let mut outcome = None;
    for e in events(s) {
        if let Event::Response { id: got, result } = e {
            assert_eq!(got, id);
            outcome = Some(result);
        }
    }
    outcome.expect("the request's outcome")
}

fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

/// Every typed request of the three features, with the capability it needs.
fn requests() -> Vec<(Request, &'static str)> {
    let prompt = CompletionRef::Prompt { name: "p".into() };
    vec![
        (Request::list_resources(None), "resources"),
        (Request::list_resource_templates(Some("c")), "resources"),
        (Request::read_resource("a://b"), "resources"),
        (Request::subscribe_resource("a://b"), "resources.subscribe"),
        (
            Request::unsubscribe_resource("a://b"),
            "resources.subscribe",
        ),
        (Request::list_prompts(None), "prompts"),
        (Request::get_prompt("p", &Map::new()), "prompts"),
        (
            Request::complete(&prompt, "a", "x", &Map::new()),
            "completions",
        ),
    ]
}

/// > "Both parties **MUST**: … Only use capabilities that were successfully negotiated" — MCP
/// > 2025-11-25, Lifecycle § Operation
#[test]
fn what_the_server_did_not_declare_is_refused_without_a_round_trip() {
    // With each server's capabilities, the capabilities it lacks: `null` and `false` declare
    // nothing, and `subscribe` must be `true`.
    for (caps, lacking) in [
        (
            r#"{"tools":{}}"#,
            &["resources", "resources.subscribe", "prompts", "completions"][..],
        ),
        (
            r#"{"resources":{"subscribe":false},"prompts":null,"completions":false}"#,
            &["resources.subscribe", "prompts", "completions"][..],
        ),
    ] {
        let (mut s, now) = legacy(caps);
        for (request, capability) in requests() {
            let method = request.method().to_owned();
            let id = s.send(request, now).unwrap();
            let out = sent(&mut s);
            let outcome = events(&mut s);
            if !lacking.contains(&capability) {
                assert_eq!(out.len(), 1, "{method} with {caps}");
                assert!(outcome.is_empty() && s.is_pending(id));
                continue;
            }
            assert!(out.is_empty(), "{method} went out with {caps}");
            let [Event::Response {
                id: got,
                result:
                    Err(RequestError::NotOffered {
                        method: m,
                        capability: c,
                    }),
            }] = outcome.as_slice()
            else {
                panic!("{method} with {caps}: {outcome:?}");
            };
            assert_eq!(
                (*got, m.as_str(), c.as_str()),
                (id, method.as_str(), capability)
            );
            assert!(!s.is_pending(id));
        }
    }
}

#[test]
fn what_the_server_declared_goes_out_as_the_schema_says() {
    let (mut s, now) = legacy(ALL);
    for (request, _) in requests() {
        s.send(request, now).unwrap();
    }
    let out = sent(&mut s);
    let params: Vec<(&str, &Value)> = out
        .iter()
        .map(|m| (m["method"].as_str().unwrap(), &m["params"]))
        .collect();
    assert_eq!(
        params,
        [
            ("resources/list", &Value::Null),
            ("resources/templates/list", &json!({"cursor": "c"})),
            ("resources/read", &json!({"uri": "a://b"})),
            ("resources/subscribe", &json!({"uri": "a://b"})),
            ("resources/unsubscribe", &json!({"uri": "a://b"})),
            ("prompts/list", &Value::Null),
            ("prompts/get", &json!({"name": "p"})),
            (
                "completion/complete",
                &json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "x"}})
            ),
        ]
    );
    // A request built by hand is the application's to judge: it goes out whatever was declared.
    let (mut s, now) = legacy("{}");
    s.send(Request::new("resources/list", None), now).unwrap();
    assert_eq!(sent(&mut s).len(), 1);
}

/// The modern era has no `resources/subscribe`: updates come through `subscriptions/listen`.
#[test]
fn the_modern_era_sends_the_same_requests_with_their_meta_but_no_subscribe() {
    let (mut s, now) = modern(ALL);
    let id = s.send(Request::subscribe_resource("a://b"), now).unwrap();
    assert!(sent(&mut s).is_empty());
    assert!(matches!(
        events(&mut s).as_slice(),
        [Event::Response { id: got, result: Err(RequestError::NotInEra { instead: "subscriptions/listen", .. }) }] if *got == id
    ));
    let id = s
        .send(Request::get_prompt("p", &map(json!({"a": "1"}))), now)
        .unwrap();
    let out = sent(&mut s);
    assert_eq!(out[0]["params"]["arguments"], json!({"a": "1"}));
    assert_eq!(
        out[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let got = answer(
        &mut s,
        id,
        r#"{"resultType":"complete","messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}"#,
        now,
    );
    let Ok(Reply::Prompt(p)) = got else {
        panic!("{got:?}")
    };
    assert_eq!(
        p.messages[0].content,
        ContentBlock::Text { text: "hi".into() }
    );
    // A modern listing's odd cache hint is ignored with a warning, never losing the page.
    let id = s.send(Request::list_resources(None), now).unwrap();
    sent(&mut s);
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete","resources":[],"ttlMs":-5,"cacheScope":"world"}}}}"#,
            id.0
        ),
        now,
    );
    let ev = events(&mut s);
    let warnings = ev
        .iter()
        .filter(|e| matches!(e, Event::Warning(Warning::CacheHintIgnored { .. })))
        .count();
    assert_eq!(warnings, 2, "{ev:?}");
    assert!(ev.iter().any(
        |e| matches!(e, Event::Response { result: Ok(Reply::Resources(p)), .. } if p.ttl_ms == Some(0))
    ));
}

#[test]
fn answers_decode_into_their_types() {
    let (mut s, now) = legacy(ALL);
    let id = s.send(Request::read_resource("a://b"), now).unwrap();
    let got = answer(
        &mut s,
        id,
        r#"{"contents":[{"uri":"a://b","text":"t"},{"uri":"a://b/1","blob":"aGk=","mimeType":"x/y"}]}"#,
        now,
    );
    let Ok(Reply::ResourceRead(read)) = got else {
        panic!("{got:?}")
    };
    assert_eq!(read.contents[1].blob_bytes(), Some(Ok(b"hi".to_vec())));
    let id = s
        .send(
            Request::complete(
                &CompletionRef::ResourceTemplate {
                    uri: "t://{a}".into(),
                },
                "a",
                "",
                &map(json!({"b": "x"})),
            ),
            now,
        )
        .unwrap();
    let out = sent(&mut s);
    assert_eq!(
        out[1]["params"]["context"],
        json!({"arguments": {"b": "x"}})
    );
    let got = answer(
        &mut s,
        id,
        r#"{"completion":{"values":["x","y"],"hasMore":true}}"#,
        now,
    );
    let Ok(Reply::Completion(c)) = got else {
        panic!("{got:?}")
    };
    assert_eq!(c.completion.values, ["x", "y"]);
    assert!(c.completion.has_more);
    // `resources/subscribe`'s empty result.
    let id = s.send(Request::subscribe_resource("a://b"), now).unwrap();
    assert_eq!(answer(&mut s, id, "{}", now), Ok(Reply::Raw(json!({}))));
}

/// Hostile answers: text that is not JSON text is mended (as a tool's is); a malformed read or
/// prompt fails that request with a clear error; a blob that is not base64 fails only when it is
/// decoded; an answer over the message limit fails its request without being buffered.
#[test]
fn hostile_answers() {
    let (mut s, now) = legacy(ALL);
    // A lone surrogate escape (JavaScript and Python servers emit them).
    let id = s.send(Request::read_resource("a://b"), now).unwrap();
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"contents":[{{"uri":"a://b","text":"bad \ud800 text"}}]}}}}"#,
            id.0
        ),
        now,
    );
    let ev = events(&mut s);
    assert!(ev
        .iter()
        .any(|e| matches!(e, Event::Warning(Warning::Repaired { .. }))));
    assert!(ev.iter().any(|e| matches!(e,
        Event::Response { result: Ok(Reply::ResourceRead(r)), .. }
            if r.contents[0].text.as_deref() == Some("bad \u{fffd} text"))));
    // Bytes that are not UTF-8 (a Latin-1 server).
    let id = s.send(Request::get_prompt("p", &Map::new()), now).unwrap();
    let mut bytes = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"messages":[{{"role":"user","content":{{"type":"text","text":"caf"#,
        id.0
    )
    .into_bytes();
    bytes.push(0xe9);
    bytes.extend_from_slice(b"\"}}]}}\n");
    s.handle_bytes(&bytes, now);
    let ev = events(&mut s);
    assert!(
        ev.iter().any(|e| matches!(e,
        Event::Response { result: Ok(Reply::Prompt(p)), .. }
            if p.messages[0].content == ContentBlock::Text { text: "caf\u{fffd}".into() })),
        "{ev:?}"
    );
    // Malformed: contents not a list, a message without its role, text that is a number.
    for (request, result) in [
        (
            Request::read_resource("a://b"),
            r#"{"contents":"all of it"}"#,
        ),
        (
            Request::read_resource("a://b"),
            r#"{"contents":[{"uri":"a://b","text":12}]}"#,
        ),
        (
            Request::get_prompt("p", &Map::new()),
            r#"{"messages":[{"content":{"type":"text","text":"x"}}]}"#,
        ),
        (
            Request::list_resources(None),
            r#"{"resources":[{"name":"no uri"}]}"#,
        ),
        (Request::list_prompts(None), r#"{"prompts":{"p":1}}"#),
        (
            Request::complete(
                &CompletionRef::Prompt { name: "p".into() },
                "a",
                "",
                &Map::new(),
            ),
            r#"{"completion":{"values":"x"}}"#,
        ),
    ] {
        let method = request.method().to_owned();
        let id = s.send(request, now).unwrap();
        sent(&mut s);
        let got = answer(&mut s, id, result, now);
        assert!(
            matches!(&got, Err(RequestError::InvalidResult { method: m, .. }) if *m == method),
            "{method} {result}: {got:?}"
        );
    }
    // A blob that is not base64: the read succeeds; decoding it fails, clearly.
    let id = s.send(Request::read_resource("a://b"), now).unwrap();
    let got = answer(
        &mut s,
        id,
        r#"{"contents":[{"uri":"a://b","blob":"%%% not base64 %%%"}]}"#,
        now,
    );
    let Ok(Reply::ResourceRead(read)) = got else {
        panic!("{got:?}")
    };
    assert!(matches!(
        read.contents[0].blob_bytes(),
        Some(Err(ResourceError::NotBase64 { .. }))
    ));

    // Over the message limit: discarded unread; the read fails with TooLarge.
    let now = Instant::now();
    let mut s = Session::new(Config {
        era: EraChoice::Legacy,
        frame_limit: 4096,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":"2025-11-25","capabilities":{ALL},"serverInfo":{{"name":"srv","version":"1"}}}}}}"#
        ),
        now,
    );
    events(&mut s);
    sent(&mut s);
    let id = s.send(Request::read_resource("a://huge"), now).unwrap();
    let huge = "x".repeat(100_000);
    let got = answer(
        &mut s,
        id,
        &format!(r#"{{"contents":[{{"uri":"a://huge","text":"{huge}"}}]}}"#),
        now,
    );
    assert!(matches!(got, Err(RequestError::TooLarge { .. })), "{got:?}");
}
