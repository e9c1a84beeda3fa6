//! The two eras in the pure session: the probe that finds the era (`EraChoice::Auto`), the modern
//! era's requests and results (2026-07-28), and its HTTP headers. One named test per rule. Fake
//! time, no I/O.

use mcp_proto::error::Warning;
use mcp_proto::{
    Config, Era, EraChoice, Event, Reply, RequestError, RequestId, ResultType, Session,
    SessionError, State, TimerFor, Transmit, TransmitKind, TransportKind,
};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const DISCOVER: &str = r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"instructions":"be modern","ttlMs":60000,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern-srv","version":"2.0"}}}"#;
const INIT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"legacy-srv","version":"1"}}"#;

fn transmits(s: &mut Session) -> Vec<Transmit> {
    std::iter::from_fn(|| s.poll_transmit()).collect()
}

fn sent(s: &mut Session) -> Vec<Value> {
    transmits(s)
        .iter()
        .map(|t| serde_json::from_slice(&t.payload).expect("we send JSON"))
        .collect()
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn line(s: &mut Session, text: &str, now: Instant) {
    s.handle_bytes(format!("{text}\n").as_bytes(), now);
}

fn result(s: &mut Session, id: u64, result: &str, now: Instant) {
    line(
        s,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
        now,
    );
}

fn error(s: &mut Session, id: u64, error: &str, now: Instant) {
    line(
        s,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#),
        now,
    );
}

fn config(era: EraChoice) -> Config {
    Config {
        era,
        ..Config::default()
    }
}

/// The `_meta` every modern request carries.
fn assert_modern_meta(request: &Value, version: &str) {
    let meta = &request["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"], version,
        "{request}"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({}),
        "{request}"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"], "mcp-proto",
        "{request}"
    );
    assert!(meta["io.modelcontextprotocol/clientInfo"]["version"].is_string());
}

/// A session that found a modern server (Auto), outputs drained.
fn modern_with(config: Config) -> (Session, Instant) {
    let now = Instant::now();
    let mut s = Session::new(config);
    s.initialize(now).unwrap();
    let probe = sent(&mut s);
    assert_eq!(probe.len(), 1);
    assert_eq!(probe[0]["method"], "server/discover");
    result(&mut s, 0, DISCOVER, now);
    assert!(sent(&mut s).is_empty(), "nothing follows a discover result");
    assert_eq!(events(&mut s), vec![Event::Ready]);
    (s, now)
}

fn modern() -> (Session, Instant) {
    modern_with(config(EraChoice::Auto))
}

// ---- the probe ---------------------------------------------------------------------------------

#[test]
fn auto_probes_with_server_discover_carrying_the_modern_meta() {
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    assert_eq!(s.era(), None, "not known before the probe");
    s.initialize(now).unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "only the probe: {out:?}");
    assert_eq!(out[0]["method"], "server/discover");
    assert_modern_meta(&out[0], "2026-07-28");
    assert_eq!(s.state(), State::Initializing);
    assert_eq!(
        s.poll_timer(),
        Some((now + Duration::from_secs(2), TimerFor::Probe(RequestId(0)))),
        "the probe's fallback comes before its 60 s deadline"
    );
}

#[test]
fn a_discover_result_makes_the_session_modern_with_the_servers_identity() {
    let (s, _) = modern();
    assert_eq!(s.era(), Some(Era::Modern));
    assert!(s.is_ready());
    assert_eq!(s.protocol_version(), Some("2026-07-28"));
    let info = s.server_info().unwrap();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("modern-srv", "2.0")
    );
    assert_eq!(s.instructions(), Some("be modern"));
    assert_eq!(
        s.server_capabilities(),
        Some(&json!({"tools":{"listChanged":true}}))
    );
    let d = s.discover_result().unwrap();
    assert_eq!(d.ttl_ms, Some(60000));
    assert_eq!(d.cache_scope.as_deref(), Some("public"));
    assert_eq!(d.supported_versions, ["2026-07-28"]);
}

#[test]
fn a_server_info_in_the_discover_result_itself_is_read_too() {
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    result(
        &mut s,
        0,
        r#"{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"body","version":"3"}}"#,
        now,
    );
    assert_eq!(events(&mut s), vec![Event::Ready]);
    assert_eq!(s.server_info().unwrap().name, "body");
}

#[test]
fn any_other_error_to_the_probe_means_legacy_and_initialize_follows() {
    // "The fallback MUST NOT be keyed to one specific error code" — each of these is legacy.
    for code in ["-32601", "-32602", "-32600", "-32000", "-32603", "1"] {
        let now = Instant::now();
        let mut s = Session::new(Config::default());
        s.initialize(now).unwrap();
        sent(&mut s);
        error(
            &mut s,
            0,
            &format!(r#"{{"code":{code},"message":"no"}}"#),
            now,
        );
        let out = sent(&mut s);
        assert_eq!(out.len(), 1, "{code}: {out:?}");
        assert_eq!(out[0]["method"], "initialize", "{code}");
        assert_eq!(out[0]["id"], 1);
        assert!(
            out[0]["params"].get("_meta").is_none(),
            "legacy has no _meta"
        );
        result(&mut s, 1, INIT, now);
        let out = sent(&mut s);
        assert_eq!(out[0]["method"], "notifications/initialized");
        assert_eq!(events(&mut s), vec![Event::Ready], "{code}");
        assert_eq!(s.era(), Some(Era::Legacy));
        assert_eq!(s.server_info().unwrap().name, "legacy-srv");
    }
}

#[test]
fn a_result_that_is_no_discover_result_means_legacy() {
    // A legacy server answering every unknown method with `{}` (the conformance suite's
    // 2025 `initialize` scenario does), or with anything else.
    for answer in [
        r#"{}"#,
        r#"{"supportedVersions":"2026-07-28"}"#,
        r#"[]"#,
        "null",
    ] {
        let now = Instant::now();
        let mut s = Session::new(Config::default());
        s.initialize(now).unwrap();
        sent(&mut s);
        result(&mut s, 0, answer, now);
        let out = sent(&mut s);
        assert_eq!(out.len(), 1, "{answer}: {out:?}");
        assert_eq!(out[0]["method"], "initialize", "{answer}");
    }
}

#[test]
fn a_silent_probe_falls_back_at_the_probe_timeout_not_before() {
    let now = Instant::now();
    let mut s = Session::new(Config {
        probe_timeout: Duration::from_millis(500),
        ..Config::default()
    });
    s.initialize(now).unwrap();
    sent(&mut s);
    s.handle_timeout(now + Duration::from_millis(499));
    assert!(sent(&mut s).is_empty(), "not a millisecond early");
    s.handle_timeout(now + Duration::from_millis(500));
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["method"], "initialize");
    assert!(
        events(&mut s).is_empty(),
        "no cancellation, no event: the probe still counts"
    );
    // Legacy server: initialize answered; the probe is dropped, and its late answer is silent.
    result(&mut s, 1, INIT, now + Duration::from_millis(600));
    assert_eq!(sent(&mut s)[0]["method"], "notifications/initialized");
    assert_eq!(events(&mut s), vec![Event::Ready]);
    assert_eq!(s.era(), Some(Era::Legacy));
    error(
        &mut s,
        0,
        r#"{"code":-32601,"message":"late"}"#,
        now + Duration::from_secs(1),
    );
    assert!(
        events(&mut s).is_empty(),
        "a late probe answer is no warning"
    );
    assert_eq!(s.stats().late_responses, 1);
    assert_eq!(s.pending_requests(), 0);
}

#[test]
fn after_the_fallback_a_late_discover_result_still_wins() {
    // A slow modern server (a package runner still fetching it) got both requests.
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    s.handle_timeout(now + Duration::from_secs(2));
    assert_eq!(sent(&mut s)[0]["method"], "initialize");
    result(&mut s, 0, DISCOVER, now + Duration::from_secs(5));
    assert_eq!(events(&mut s), vec![Event::Ready]);
    assert_eq!(s.era(), Some(Era::Modern));
    assert!(
        sent(&mut s).is_empty(),
        "no notifications/initialized in the modern era"
    );
    // The modern server refuses initialize: that answer is late and changes nothing.
    error(
        &mut s,
        1,
        r#"{"code":-32601,"message":"initialize? 2026-07-28 only"}"#,
        now,
    );
    assert!(events(&mut s).is_empty());
    assert_eq!(s.stats().late_responses, 1);
    assert!(s.is_ready());
}

#[test]
fn a_refused_initialize_waits_for_the_racing_probe() {
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    s.handle_timeout(now + Duration::from_secs(2));
    sent(&mut s);
    error(
        &mut s,
        1,
        r#"{"code":-32600,"message":"initialize is legacy"}"#,
        now,
    );
    assert!(
        events(&mut s).is_empty(),
        "the probe may still show a modern server"
    );
    result(&mut s, 0, DISCOVER, now);
    assert_eq!(events(&mut s), vec![Event::Ready]);
    assert_eq!(s.era(), Some(Era::Modern));
}

#[test]
fn when_both_fail_the_session_fails_with_initializes_error() {
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    s.handle_timeout(now + Duration::from_secs(2));
    sent(&mut s);
    error(&mut s, 1, r#"{"code":-32000,"message":"broken"}"#, now);
    error(&mut s, 0, r#"{"code":-32601,"message":"no discover"}"#, now);
    match events(&mut s).as_slice() {
        [Event::Failed(SessionError::Initialize(RequestError::Rpc(e)))] => {
            assert_eq!(e.message, "broken")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.state(), State::Closed);
}

// ---- a program that is not an MCP server ---------------------------------------------------------

/// Drains the events, keeping what is not a warning (a line that is not JSON is one).
fn outcomes(s: &mut Session) -> Vec<Event> {
    events(s)
        .into_iter()
        .filter(|e| !matches!(e, Event::Warning(_)))
        .collect()
}

#[test]
fn a_program_that_prints_only_lines_that_are_not_json_rpc_is_not_an_mcp_server() {
    let now = Instant::now();
    let secs = Duration::from_secs;
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    line(&mut s, "hello", now);
    line(&mut s, "   ", now);
    line(&mut s, "\u{1b}[31mworld", now + secs(1));
    // The probe's fallback comes first: initialize at 2 s, then 3 s for it.
    assert_eq!(
        s.poll_timer(),
        Some((now + secs(2), TimerFor::Probe(RequestId(0))))
    );
    s.handle_timeout(now + secs(2));
    assert_eq!(sent(&mut s)[0]["method"], "initialize");
    assert_eq!(
        s.poll_timer(),
        Some((now + secs(5), TimerFor::NotAnswering(RequestId(1))))
    );
    s.handle_timeout(now + secs(5) - Duration::from_millis(1));
    assert!(outcomes(&mut s).is_empty());
    s.handle_timeout(now + secs(5));
    let failed = outcomes(&mut s);
    assert_eq!(
        failed,
        vec![Event::Failed(SessionError::NotAnMcpServer {
            printed: "hello".into(),
            more: 1,
            unanswered: "initialize".into(),
        })]
    );
    let Event::Failed(e) = &failed[0] else {
        unreachable!()
    };
    assert_eq!(
        e.to_string(),
        "not an MCP server: it printed \"hello\" (and 1 more line) and did not answer initialize"
    );
    assert_eq!(s.state(), State::Closed);
}

#[test]
fn what_a_program_printed_before_it_ended_is_kept_until_it_speaks_json_rpc() {
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Legacy));
    assert_eq!(s.printed_only_junk(), None);
    s.initialize(now).unwrap();
    sent(&mut s);
    line(&mut s, "Usage: foo [OPTIONS]", now);
    line(&mut s, "  -h  help", now);
    assert_eq!(s.printed_only_junk(), Some(("Usage: foo [OPTIONS]", 1)));
    // It ends: the session closes as for any end, and what it printed is still said.
    s.handle_eof(now);
    assert_eq!(outcomes(&mut s), vec![Event::Failed(SessionError::Closed)]);
    assert_eq!(s.printed_only_junk(), Some(("Usage: foo [OPTIONS]", 1)));

    // A program that wrote JSON-RPC speaks it: its other lines are no sign.
    let mut s = Session::new(config(EraChoice::Legacy));
    s.initialize(now).unwrap();
    sent(&mut s);
    line(&mut s, "starting…", now);
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}"#,
        now,
    );
    assert_eq!(s.printed_only_junk(), None);
}

#[test]
fn the_quoted_line_loses_its_control_characters_and_is_capped() {
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Legacy));
    s.initialize(now).unwrap();
    sent(&mut s);
    let long = format!("\u{1b}[1m{}\u{7}", "x".repeat(200));
    line(&mut s, &long, now);
    let at = now + Duration::from_secs(3);
    assert_eq!(
        s.poll_timer(),
        Some((at, TimerFor::NotAnswering(RequestId(0))))
    );
    s.handle_timeout(at);
    match outcomes(&mut s).as_slice() {
        [Event::Failed(SessionError::NotAnMcpServer {
            printed,
            more: 0,
            unanswered,
        })] => {
            assert_eq!(printed, &format!("[1m{}…", "x".repeat(77)));
            assert_eq!(unanswered, "initialize");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn lines_printed_before_the_opening_count_too() {
    // A driver may read what the program printed before it opens the session.
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Legacy));
    line(&mut s, "hello", now);
    let later = now + Duration::from_secs(1);
    s.initialize(later).unwrap();
    sent(&mut s);
    let at = later + Duration::from_secs(3);
    assert_eq!(
        s.poll_timer(),
        Some((at, TimerFor::NotAnswering(RequestId(0))))
    );
    s.handle_timeout(at);
    assert!(matches!(
        outcomes(&mut s).as_slice(),
        [Event::Failed(SessionError::NotAnMcpServer { more: 0, .. })]
    ));
}

#[test]
fn a_banner_then_an_answer_is_an_mcp_server() {
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Legacy));
    s.initialize(now).unwrap();
    sent(&mut s);
    line(&mut s, "Starting server v1.2 on stdio", now);
    assert!(matches!(
        s.poll_timer(),
        Some((_, TimerFor::NotAnswering(_)))
    ));
    result(&mut s, 0, INIT, now + Duration::from_secs(2));
    assert_eq!(outcomes(&mut s), vec![Event::Ready]);
    assert!(s.is_ready());
}

#[test]
fn a_program_that_spoke_json_rpc_or_printed_nothing_waits_for_the_request_timeout() {
    let now = Instant::now();
    let secs = Duration::from_secs;
    // Nothing printed: the request's own timeout.
    let mut s = Session::new(config(EraChoice::Legacy));
    s.initialize(now).unwrap();
    sent(&mut s);
    assert_eq!(
        s.poll_timer(),
        Some((now + secs(60), TimerFor::Request(RequestId(0))))
    );
    // A banner, then a log notification: it speaks JSON-RPC, the verdict's timer goes.
    let mut s = Session::new(config(EraChoice::Legacy));
    s.initialize(now).unwrap();
    sent(&mut s);
    line(&mut s, "loading…", now);
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"up"}}"#,
        now,
    );
    line(&mut s, "more junk", now);
    assert_eq!(
        s.poll_timer(),
        Some((now + secs(60), TimerFor::Request(RequestId(0))))
    );
    // Switched off: the same.
    let mut s = Session::new(Config {
        era: EraChoice::Legacy,
        junk_timeout: None,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    sent(&mut s);
    line(&mut s, "hello", now);
    assert_eq!(
        s.poll_timer(),
        Some((now + secs(60), TimerFor::Request(RequestId(0))))
    );
}

#[test]
fn a_server_that_ends_on_the_probe_is_ended_on_probe() {
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    s.handle_eof(now);
    assert_eq!(
        events(&mut s),
        vec![Event::Failed(SessionError::EndedOnProbe)]
    );
    // Forced modern: it is only closed.
    let mut s = Session::new(config(EraChoice::Modern));
    s.initialize(now).unwrap();
    sent(&mut s);
    s.handle_eof(now);
    assert_eq!(events(&mut s), vec![Event::Failed(SessionError::Closed)]);
}

#[test]
fn an_undeliverable_probe_means_legacy_but_not_when_modern_is_forced() {
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    let hit = s.handle_undeliverable(RequestId(0), now);
    assert_eq!(
        hit,
        mcp_proto::Casualties::default(),
        "nobody is hit: initialize follows"
    );
    assert_eq!(sent(&mut s)[0]["method"], "initialize");

    let mut s = Session::new(config(EraChoice::Modern));
    s.initialize(now).unwrap();
    sent(&mut s);
    let hit = s.handle_undeliverable(RequestId(0), now);
    assert!(hit.session);
    assert!(matches!(
        events(&mut s).as_slice(),
        [Event::Failed(SessionError::Discover(_))]
    ));
}

#[test]
fn a_version_mismatch_is_retried_once_with_the_servers_version_even_the_same_one() {
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    let mismatch = r#"{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}"#;
    error(&mut s, 0, mismatch, now);
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(
        out[0]["method"], "server/discover",
        "a modern server: no fallback"
    );
    assert_ne!(out[0]["id"], 0, "a new id");
    assert_modern_meta(&out[0], "2026-07-28");
    // A second mismatch is final, and says what happened: not "no version in common".
    let id = out[0]["id"].as_u64().unwrap();
    error(&mut s, id, mismatch, now);
    assert!(sent(&mut s).is_empty());
    match events(&mut s).as_slice() {
        [Event::Failed(
            e @ SessionError::VersionRefused {
                requested,
                supported,
                message,
            },
        )] => {
            assert_eq!(requested, "2026-07-28");
            assert_eq!(supported, &["2026-07-28"]);
            assert_eq!(message, "Unsupported protocol version");
            let text = e.to_string();
            assert!(!text.contains("no protocol version in common"), "{text}");
            assert!(text.contains("although it lists it"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_dual_era_server_with_only_legacy_versions_in_common_gets_initialize() {
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    error(
        &mut s,
        0,
        r#"{"code":-32022,"message":"no","data":{"supported":["2099-01-01","2025-06-18"],"requested":"2026-07-28"}}"#,
        now,
    );
    assert_eq!(sent(&mut s)[0]["method"], "initialize");
    // The same from a discover result listing no modern version of ours.
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    result(
        &mut s,
        0,
        r#"{"supportedVersions":["2025-11-25"],"capabilities":{}}"#,
        now,
    );
    assert_eq!(sent(&mut s)[0]["method"], "initialize");
}

#[test]
fn no_version_in_common_fails_naming_both_sides() {
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    result(
        &mut s,
        0,
        r#"{"supportedVersions":["2099-01-01"],"capabilities":{}}"#,
        now,
    );
    match events(&mut s).as_slice() {
        [Event::Failed(e @ SessionError::NoCommonVersion { .. })] => {
            let text = e.to_string();
            assert!(
                text.contains("2099-01-01") && text.contains("2026-07-28"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn forced_legacy_sends_initialize_first_and_forced_modern_never_does() {
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Legacy));
    assert_eq!(s.era(), Some(Era::Legacy));
    s.initialize(now).unwrap();
    assert_eq!(sent(&mut s)[0]["method"], "initialize");

    let mut s = Session::new(config(EraChoice::Modern));
    s.initialize(now).unwrap();
    assert_eq!(sent(&mut s)[0]["method"], "server/discover");
    assert_eq!(
        s.poll_timer().map(|(_, what)| what),
        Some(TimerFor::Request(RequestId(0))),
        "no probe fallback when modern is forced"
    );
    error(&mut s, 0, r#"{"code":-32601,"message":"what?"}"#, now);
    assert!(sent(&mut s).is_empty(), "no initialize");
    assert!(matches!(
        events(&mut s).as_slice(),
        [Event::Failed(SessionError::Discover(RequestError::Rpc(_)))]
    ));
}

#[test]
fn legacy_first_probes_only_when_initialize_is_refused() {
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::LegacyFirst));
    s.initialize(now).unwrap();
    assert_eq!(sent(&mut s)[0]["method"], "initialize");
    error(
        &mut s,
        0,
        r#"{"code":-32601,"message":"2026-07-28 only"}"#,
        now,
    );
    let out = sent(&mut s);
    assert_eq!(
        out[0]["method"], "server/discover",
        "the remembered era was wrong"
    );
    let id = out[0]["id"].as_u64().unwrap();
    result(&mut s, id, DISCOVER, now);
    assert_eq!(events(&mut s), vec![Event::Ready]);
    assert_eq!(s.era(), Some(Era::Modern));
}

// ---- modern requests and results ----------------------------------------------------------------

#[test]
fn every_modern_request_carries_the_meta_and_a_callers_own_meta_is_kept() {
    let (mut s, now) = modern();
    s.call_tool("echo", json!({"text": "hi"}), now).unwrap();
    let params = json!({"name": "p", "_meta": {"progressToken": 7, "io.modelcontextprotocol/protocolVersion": "1999"}});
    s.send(mcp_proto::Request::new("prompts/get", Some(params)), now)
        .unwrap();
    s.send(mcp_proto::Request::new("resources/list", None), now)
        .unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 3);
    for r in &out {
        assert_modern_meta(r, "2026-07-28");
    }
    assert_eq!(out[0]["params"]["arguments"], json!({"text": "hi"}));
    assert_eq!(out[0]["params"]["name"], "echo");
    assert_eq!(
        out[1]["params"]["_meta"]["progressToken"], 7,
        "the caller's key is kept"
    );
    assert_eq!(out[1]["params"]["name"], "p");
}

#[test]
fn an_absent_result_type_is_complete_and_an_unknown_one_is_an_error_at_once() {
    let (mut s, now) = modern();
    let a = s.call_tool("a", json!({}), now).unwrap();
    let b = s.call_tool("b", json!({}), now).unwrap();
    let c = s.call_tool("c", json!({}), now).unwrap();
    sent(&mut s);
    result(
        &mut s,
        a.0,
        r#"{"content":[{"type":"text","text":"A"}]}"#,
        now,
    );
    result(&mut s, b.0, r#"{"content":[],"resultType":"mystery"}"#, now);
    result(
        &mut s,
        c.0,
        r#"{"content":[{"type":"text","text":"C"}],"resultType":"complete"}"#,
        now,
    );
    let ev = events(&mut s);
    assert_eq!(ev.len(), 3, "{ev:?}");
    match &ev[0] {
        Event::Response {
            id,
            result: Ok(Reply::ToolCall(r)),
        } if *id == a => {
            assert_eq!(r.text(), "A")
        }
        other => panic!("{other:?}"),
    }
    match &ev[1] {
        Event::Response {
            id,
            result: Err(RequestError::InvalidResult { reason, .. }),
        } if *id == b => {
            assert!(reason.contains("mystery"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    match &ev[2] {
        Event::Response {
            id,
            result: Ok(Reply::ToolCall(r)),
        } if *id == c => {
            assert_eq!(r.text(), "C");
            assert_eq!(r.result_type, Some(ResultType::Complete));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_nested_result_type_does_not_count() {
    let (mut s, now) = modern();
    let a = s.call_tool("a", json!({}), now).unwrap();
    sent(&mut s);
    // Only the result's own member counts; structured content may say anything.
    result(
        &mut s,
        a.0,
        r#"{"structuredContent":{"resultType":"input_required"},"content":[{"type":"text","text":"ok"}]}"#,
        now,
    );
    match events(&mut s).as_slice() {
        [Event::Response {
            result: Ok(Reply::ToolCall(r)),
            ..
        }] => assert_eq!(r.text(), "ok"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn input_required_with_state_is_sent_again_with_a_new_id_and_the_exact_state() {
    let (mut s, now) = modern();
    let h = s.call_tool("slow", json!({"x": 1}), now).unwrap();
    let first = sent(&mut s);
    assert_eq!(first[0]["id"], h.0);
    // A state with characters a careless client would re-encode.
    let state = r#"{\"nonce\":\"é\\u00e9 \/ x\",\"n\":1}"#;
    let round = format!(r#"{{"resultType":"input_required","requestState":"{state}"}}"#);
    result(&mut s, h.0, &round, now);
    assert!(events(&mut s).is_empty(), "the caller sees one call");
    assert!(sent(&mut s).is_empty(), "after a backoff, not at once");
    assert_eq!(
        s.poll_timer(),
        Some((now + Duration::from_millis(50), TimerFor::Retry(h)))
    );
    s.handle_timeout(now + Duration::from_millis(50));
    let again = transmits(&mut s);
    assert_eq!(again.len(), 1);
    let TransmitKind::Request { id, wire, method } = &again[0].kind else {
        panic!("{:?}", again[0].kind)
    };
    assert_eq!((*id, method.as_ref()), (h, "tools/call"));
    assert_ne!(*wire, h, "a new wire id");
    let v: Value = serde_json::from_slice(&again[0].payload).unwrap();
    assert_eq!(v["id"], wire.0);
    let expected: Value = serde_json::from_str(&format!(r#""{state}""#)).unwrap();
    assert_eq!(v["params"]["requestState"], expected, "echoed exactly");
    assert_eq!(v["params"]["arguments"], json!({"x": 1}));
    assert_modern_meta(&v, "2026-07-28");
    // An answer to the old id is late now.
    result(&mut s, h.0, r#"{"content":[]}"#, now);
    assert!(events(&mut s).is_empty());
    // The second round waits 100 ms, then the answer comes on the new id.
    result(&mut s, wire.0, &round, now + Duration::from_millis(60));
    assert_eq!(
        s.poll_timer(),
        Some((now + Duration::from_millis(160), TimerFor::Retry(h))),
        "50 ms doubling"
    );
    s.handle_timeout(now + Duration::from_millis(160));
    let third: Value = serde_json::from_slice(&transmits(&mut s)[0].payload).unwrap();
    let wire3 = third["id"].as_u64().unwrap();
    assert!(wire3 != wire.0 && wire3 != h.0);
    result(
        &mut s,
        wire3,
        r#"{"resultType":"complete","content":[{"type":"text","text":"done"}]}"#,
        now,
    );
    match events(&mut s).as_slice() {
        [Event::Response {
            id,
            result: Ok(Reply::ToolCall(r)),
        }] if *id == h => {
            assert_eq!(r.text(), "done")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.stats().input_rounds, 2);
}

#[test]
fn a_round_without_state_sends_none() {
    let (mut s, now) = modern();
    let h = s.call_tool("t", json!({}), now).unwrap();
    sent(&mut s);
    // inputRequests empty and no requestState: invalid ("at least one").
    result(
        &mut s,
        h.0,
        r#"{"resultType":"input_required","inputRequests":{}}"#,
        now,
    );
    assert!(matches!(
        events(&mut s).as_slice(),
        [Event::Response {
            result: Err(RequestError::InvalidResult { .. }),
            ..
        }]
    ));
}

#[test]
fn the_rounds_are_capped() {
    let (mut s, now) = modern_with(Config {
        max_input_rounds: 3,
        ..Config::default()
    });
    let h = s.call_tool("forever", json!({}), now).unwrap();
    let mut wire = sent(&mut s)[0]["id"].as_u64().unwrap();
    let mut t = now;
    for round in 1..=3 {
        result(
            &mut s,
            wire,
            r#"{"resultType":"input_required","requestState":"s"}"#,
            t,
        );
        assert!(events(&mut s).is_empty(), "round {round}");
        t += Duration::from_secs(1);
        s.handle_timeout(t);
        wire = sent(&mut s)[0]["id"].as_u64().unwrap();
    }
    result(
        &mut s,
        wire,
        r#"{"resultType":"input_required","requestState":"s"}"#,
        t,
    );
    match events(&mut s).as_slice() {
        [Event::Response {
            id,
            result: Err(e @ RequestError::TooManyRounds { limit: 3 }),
        }] if *id == h => {
            assert!(e.to_string().contains('3'), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert!(sent(&mut s).is_empty());
}

#[test]
fn input_requests_fail_the_call_while_no_capability_is_declared() {
    let (mut s, now) = modern();
    let h = s.call_tool("ask", json!({}), now).unwrap();
    sent(&mut s);
    result(
        &mut s,
        h.0,
        r#"{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{}},"b":{"method":"sampling/createMessage","params":{}}},"requestState":"x"}"#,
        now,
    );
    match events(&mut s).as_slice() {
        [Event::Response {
            result: Err(RequestError::InputUnsupported { methods }),
            ..
        }] => {
            assert_eq!(methods, &["elicitation/create", "sampling/createMessage"])
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn input_required_is_refused_for_requests_that_cannot_have_it() {
    let (mut s, now) = modern();
    let h = s.list_tools(None, now).unwrap();
    sent(&mut s);
    result(
        &mut s,
        h.0,
        r#"{"resultType":"input_required","requestState":"x"}"#,
        now,
    );
    match events(&mut s).as_slice() {
        [Event::Response {
            result: Err(RequestError::InvalidResult { reason, .. }),
            ..
        }] => {
            assert!(reason.contains("tools/list"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_version_mismatch_on_a_request_is_retried_once_then_typed() {
    let (mut s, now) = modern();
    let h = s.call_tool("t", json!({}), now).unwrap();
    sent(&mut s);
    let mismatch = r#"{"code":-32022,"message":"Unsupported","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}"#;
    error(&mut s, h.0, mismatch, now);
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    let wire = out[0]["id"].as_u64().unwrap();
    assert_ne!(wire, h.0);
    error(&mut s, wire, mismatch, now);
    match events(&mut s).as_slice() {
        [Event::Response {
            result:
                Err(RequestError::UnsupportedVersion {
                    requested,
                    supported,
                    ..
                }),
            ..
        }] => {
            assert_eq!(requested, "2026-07-28");
            assert_eq!(supported, &["2026-07-28"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.stats().version_retries, 1);
}

#[test]
fn modern_error_codes_are_typed() {
    let (mut s, now) = modern();
    let a = s.call_tool("a", json!({}), now).unwrap();
    let b = s.call_tool("b", json!({}), now).unwrap();
    sent(&mut s);
    error(
        &mut s,
        a.0,
        r#"{"code":-32020,"message":"Mcp-Name mismatch"}"#,
        now,
    );
    error(
        &mut s,
        b.0,
        r#"{"code":-32021,"message":"needs elicitation","data":{"requiredCapabilities":{"elicitation":{}}}}"#,
        now,
    );
    let ev = events(&mut s);
    assert!(
        matches!(&ev[0], Event::Response { result: Err(RequestError::HeaderMismatch(e)), .. } if e.message == "Mcp-Name mismatch"),
        "{ev:?}"
    );
    assert!(
        matches!(&ev[1], Event::Response { result: Err(RequestError::MissingCapability { required, .. }), .. } if *required == json!({"elicitation":{}})),
        "{ev:?}"
    );
}

#[test]
fn cancelling_over_a_stream_sends_cancelled_with_the_current_wire_id() {
    let (mut s, now) = modern();
    let h = s.call_tool("slow", json!({}), now).unwrap();
    sent(&mut s);
    result(
        &mut s,
        h.0,
        r#"{"resultType":"input_required","requestState":"s"}"#,
        now,
    );
    // Between two rounds no copy is out: nothing to cancel on the server.
    s.cancel(h, "bored", now).unwrap();
    assert!(sent(&mut s).is_empty());
    let h2 = s.call_tool("slow", json!({}), now).unwrap();
    sent(&mut s);
    s.cancel(h2, "bored", now).unwrap();
    let out = sent(&mut s);
    assert_eq!(out[0]["method"], "notifications/cancelled");
    assert_eq!(out[0]["params"]["requestId"], h2.0);
    assert!(
        out[0]["params"].get("_meta").is_none(),
        "notifications carry no request _meta"
    );
}

#[test]
fn modern_sessions_are_not_renewed() {
    let (mut s, now) = modern();
    assert_eq!(s.restart(None, now), Err(mcp_proto::UsageError::Stateless));
}

// ---- over HTTP ------------------------------------------------------------------------------------

fn http() -> (Session, Instant) {
    modern_with(Config {
        transport: TransportKind::Http,
        ..Config::default()
    })
}

fn header<'t>(t: &'t Transmit, name: &str) -> Option<&'t str> {
    t.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref())
}

#[test]
fn over_http_modern_requests_carry_their_headers() {
    let now = Instant::now();
    let mut s = Session::new(Config {
        transport: TransportKind::Http,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    let probe = transmits(&mut s);
    assert!(probe[0].modern);
    assert_eq!(
        header(&probe[0], "MCP-Protocol-Version"),
        Some("2026-07-28")
    );
    assert_eq!(header(&probe[0], "Mcp-Method"), Some("server/discover"));
    assert_eq!(header(&probe[0], "Mcp-Name"), None);
    result(&mut s, 0, DISCOVER, now);
    events(&mut s);
    s.call_tool("héllo wörld", json!({}), now).unwrap();
    s.send(
        mcp_proto::Request::new("resources/read", Some(json!({"uri": "file:///a%20b"}))),
        now,
    )
    .unwrap();
    let out = transmits(&mut s);
    assert_eq!(header(&out[0], "Mcp-Method"), Some("tools/call"));
    assert_eq!(
        header(&out[0], "Mcp-Name"),
        Some("=?base64?aMOpbGxvIHfDtnJsZA==?="),
        "not plain ASCII: Base64"
    );
    assert_eq!(header(&out[1], "Mcp-Name"), Some("file:///a%20b"), "as is");
    // A call made by `call_tool` and the same call made as JSON carry the same headers.
    for name in ["echo", "héllo wörld", "=?base64?looks encoded?="] {
        s.call_tool(name, json!({"a": 1}), now).unwrap();
        let json = json!({"name": name, "arguments": {"a": 1}});
        s.send(mcp_proto::Request::new("tools/call", Some(json)), now)
            .unwrap();
        let out = transmits(&mut s);
        assert_eq!(out[0].headers, out[1].headers, "{name}");
        assert_eq!(header(&out[0], "Mcp-Method"), Some("tools/call"));
        assert!(header(&out[0], "Mcp-Name").is_some());
    }
}

#[test]
fn over_http_listed_tools_with_bad_annotations_are_left_out_and_the_rest_mirror_their_arguments() {
    let (mut s, now) = http();
    let h = s.list_tools(None, now).unwrap();
    transmits(&mut s);
    let page = json!({"resultType": "complete", "tools": [
        {"name": "good", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "q": {"type": "string"}}}},
        {"name": "bad", "inputSchema": {"type": "object", "properties": {
            "score": {"type": "number", "x-mcp-header": "Score"}}}},
        {"name": "plain", "inputSchema": {"type": "object"}}
    ], "ttlMs": 5000, "cacheScope": "private"});
    result(&mut s, h.0, &page.to_string(), now);
    let ev = events(&mut s);
    assert!(
        matches!(&ev[0], Event::Warning(Warning::ToolRejected { tool, .. }) if tool == "bad"),
        "{ev:?}"
    );
    match &ev[1] {
        Event::Response {
            result: Ok(Reply::Tools(page)),
            ..
        } => {
            let names: Vec<&str> = page.tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names, ["good", "plain"]);
            assert_eq!(page.ttl_ms, Some(5000));
            assert_eq!(page.cache_scope.as_deref(), Some("private"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.stats().tools_rejected, 1);
    s.call_tool(
        "good",
        json!({"region": " eu ", "n": 42, "q": "SELECT"}),
        now,
    )
    .unwrap();
    s.call_tool("good", json!({"region": null}), now).unwrap();
    let out = transmits(&mut s);
    assert_eq!(
        header(&out[0], "Mcp-Param-Region"),
        Some("=?base64?IGV1IA==?=")
    );
    assert_eq!(header(&out[0], "Mcp-Param-N"), Some("42"));
    assert_eq!(header(&out[0], "Mcp-Param-Q"), None, "not annotated");
    assert_eq!(header(&out[1], "Mcp-Param-Region"), None, "null: omitted");
    // A value that does not fit its declared type fails at once, with nothing sent.
    let bad = s.call_tool("good", json!({"n": "forty-two"}), now).unwrap();
    assert!(transmits(&mut s).is_empty());
    match events(&mut s).as_slice() {
        [Event::Response {
            id,
            result: Err(RequestError::InvalidArguments(why)),
        }] if *id == bad => {
            assert!(why.contains('n') || why.contains("N"), "{why}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn over_http_cancelling_closes_the_stream_and_posts_nothing() {
    let (mut s, now) = http();
    let h = s.call_tool("slow", json!({}), now).unwrap();
    transmits(&mut s);
    s.cancel(h, "bored", now).unwrap();
    let out = transmits(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].kind, TransmitKind::Abort { id: h });
    assert!(out[0].payload.is_empty());
}

// ---- cache hints are hints ----------------------------------------------------------------------

/// Odd `ttlMs` / `cacheScope` values, with what is read from each (`None`: ignored).
const ODD_HINTS: &[(&str, &str, Option<u64>, Option<&str>)] = &[
    ("-5", r#""public""#, Some(0), Some("public")),
    ("1.5", r#""private""#, None, Some("private")),
    ("18446744073709551616", r#""public""#, None, Some("public")),
    ("1e30", "7", None, None),
    (r#""60000""#, r#""shared""#, None, None),
    ("true", "null", None, None),
    ("{}", "[]", None, None),
    ("1000.0", r#""public""#, Some(1000), Some("public")),
    (
        "18446744073709551615",
        r#""private""#,
        Some(u64::MAX),
        Some("private"),
    ),
];

#[test]
fn an_odd_cache_hint_on_a_discover_result_is_ignored_and_the_server_stays_modern() {
    for (ttl, scope, want_ttl, want_scope) in ODD_HINTS {
        let now = Instant::now();
        let mut s = Session::new(Config::default());
        s.initialize(now).unwrap();
        sent(&mut s);
        let answer = format!(
            r#"{{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{{}},"ttlMs":{ttl},"cacheScope":{scope}}}"#
        );
        result(&mut s, 0, &answer, now);
        assert!(
            sent(&mut s).is_empty(),
            "{ttl} {scope}: no initialize, the server is modern"
        );
        let ev = events(&mut s);
        assert_eq!(ev.last(), Some(&Event::Ready), "{ttl} {scope}: {ev:?}");
        let odd = want_ttl.is_none() || *ttl == "-5";
        let warned = |field: &str| {
            ev.iter().any(|e| {
                matches!(e, Event::Warning(Warning::CacheHintIgnored { method, field: f, .. })
                    if method == "server/discover" && *f == field)
            })
        };
        assert_eq!(warned("ttlMs"), odd, "{ttl}: {ev:?}");
        assert_eq!(
            warned("cacheScope"),
            want_scope.is_none() && *scope != "null",
            "{scope}: {ev:?}"
        );
        assert_eq!(s.era(), Some(Era::Modern));
        let d = s.discover_result().unwrap();
        assert_eq!(d.ttl_ms, *want_ttl, "{ttl}");
        assert_eq!(d.cache_scope.as_deref(), *want_scope, "{scope}");
    }
}

#[test]
fn an_odd_cache_hint_on_a_tools_page_never_loses_the_tools() {
    for transport in [TransportKind::Stream, TransportKind::Http] {
        for (ttl, scope, want_ttl, want_scope) in ODD_HINTS {
            let (mut s, now) = modern_with(Config {
                transport,
                ..Config::default()
            });
            let h = s.list_tools(None, now).unwrap();
            transmits(&mut s);
            let page = format!(
                r#"{{"resultType":"complete","tools":[{{"name":"echo","inputSchema":{{"type":"object"}}}}],"ttlMs":{ttl},"cacheScope":{scope}}}"#
            );
            result(&mut s, h.0, &page, now);
            let ev = events(&mut s);
            let page = ev.iter().find_map(|e| match e {
                Event::Response {
                    id,
                    result: Ok(Reply::Tools(page)),
                } if *id == h => Some(page),
                _ => None,
            });
            let page = page.unwrap_or_else(|| panic!("{ttl} {scope}: {ev:?}"));
            assert_eq!(page.tools.len(), 1);
            assert_eq!(page.ttl_ms, *want_ttl);
            assert_eq!(page.cache_scope.as_deref(), *want_scope);
            // The warnings come before the answer, each naming the field.
            for hint in page.ignored_hints() {
                assert!(ev.iter().any(|e| matches!(e,
                    Event::Warning(w @ Warning::CacheHintIgnored { field, .. })
                        if *field == hint.field && w.to_string().contains("tools/list"))));
            }
        }
    }
    // A hostile string is quoted short in the warning, never whole.
    let (mut s, now) = modern();
    let h = s.list_tools(None, now).unwrap();
    sent(&mut s);
    let long = "x".repeat(100_000);
    let page = format!(r#"{{"tools":[],"ttlMs":"{long}","cacheScope":"{long}"}}"#);
    result(&mut s, h.0, &page, now);
    for e in events(&mut s) {
        if let Event::Warning(w) = e {
            assert!(w.to_string().len() < 300, "{}", w.to_string().len());
        }
    }
}

// ---- -32022 after a legacy fallback ---------------------------------------------------------------

const MODERN_ONLY_INIT_REFUSAL: &str = r#"{"code":-32022,"message":"this server speaks only 2026-07-28","data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}"#;

#[test]
fn after_a_fallback_a_32022_to_initialize_naming_a_modern_version_is_answered_in_it() {
    // The probe's answer could not be read (here: no discover result), so the client fell back;
    // the server's -32022 to `initialize` shows it is modern after all.
    let now = Instant::now();
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    result(&mut s, 0, r#"{"supportedVersions":"garbled"}"#, now);
    assert_eq!(sent(&mut s)[0]["method"], "initialize");
    error(&mut s, 1, MODERN_ONLY_INIT_REFUSAL, now);
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["method"], "server/discover", "speaks the version");
    assert_modern_meta(&out[0], "2026-07-28");
    assert!(events(&mut s).is_empty(), "not failed: {:?}", s.state());
    let id = out[0]["id"].as_u64().unwrap();
    result(&mut s, id, DISCOVER, now);
    assert_eq!(events(&mut s), vec![Event::Ready]);
    assert_eq!(s.era(), Some(Era::Modern));
    // Only once: a server that then says legacy again ends the opening with initialize's error.
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    error(&mut s, 0, r#"{"code":-32601,"message":"no"}"#, now);
    assert_eq!(sent(&mut s)[0]["method"], "initialize");
    error(&mut s, 1, MODERN_ONLY_INIT_REFUSAL, now);
    let again = sent(&mut s);
    assert_eq!(again[0]["method"], "server/discover");
    let id = again[0]["id"].as_u64().unwrap();
    error(&mut s, id, r#"{"code":-32601,"message":"no"}"#, now);
    assert!(sent(&mut s).is_empty(), "no third opening");
    match events(&mut s).as_slice() {
        [Event::Failed(SessionError::Initialize(RequestError::Rpc(e)))] => {
            assert_eq!(e.code, -32022)
        }
        other => panic!("{other:?}"),
    }
    // Forced legacy does not go modern: it fails with the server's own words.
    let mut s = Session::new(config(EraChoice::Legacy));
    s.initialize(now).unwrap();
    sent(&mut s);
    error(&mut s, 0, MODERN_ONLY_INIT_REFUSAL, now);
    assert!(sent(&mut s).is_empty());
    match events(&mut s).as_slice() {
        [Event::Failed(e @ SessionError::Initialize(RequestError::Rpc(_)))] => {
            assert!(e.to_string().contains("speaks only 2026-07-28"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_32022_to_initialize_naming_another_legacy_version_is_answered_in_it_once() {
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Legacy));
    s.initialize(now).unwrap();
    sent(&mut s);
    let older = r#"{"code":-32022,"message":"old server","data":{"supported":["2025-03-26","1999-01-01"],"requested":"2025-11-25"}}"#;
    error(&mut s, 0, older, now);
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["method"], "initialize");
    assert_eq!(out[0]["params"]["protocolVersion"], "2025-03-26");
    let id = out[0]["id"].as_u64().unwrap();
    result(
        &mut s,
        id,
        r#"{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"old","version":"1"}}"#,
        now,
    );
    assert_eq!(events(&mut s), vec![Event::Ready]);
    assert_eq!(s.protocol_version(), Some("2025-03-26"));
    // The same after an Auto fallback; and a server that refuses the version it named ends it,
    // saying so.
    let mut s = Session::new(Config::default());
    s.initialize(now).unwrap();
    sent(&mut s);
    error(&mut s, 0, r#"{"code":-32601,"message":"no"}"#, now);
    sent(&mut s);
    error(&mut s, 1, older, now);
    let out = sent(&mut s);
    assert_eq!(out[0]["params"]["protocolVersion"], "2025-03-26");
    let id = out[0]["id"].as_u64().unwrap();
    let again = r#"{"code":-32022,"message":"still no","data":{"supported":["2025-03-26"],"requested":"2025-03-26"}}"#;
    error(&mut s, id, again, now);
    assert!(sent(&mut s).is_empty());
    match events(&mut s).as_slice() {
        [Event::Failed(e @ SessionError::VersionRefused { requested, .. })] => {
            assert_eq!(requested, "2025-03-26");
            assert!(e.to_string().contains("still no"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

// ---- honest version errors ----------------------------------------------------------------------

#[test]
fn version_errors_never_list_one_version_on_both_sides_nor_an_empty_list() {
    let now = Instant::now();
    let texts = |answer: Result<&str, &str>, era: EraChoice| {
        let mut s = Session::new(config(era));
        s.initialize(now).unwrap();
        sent(&mut s);
        match answer {
            Ok(r) => result(&mut s, 0, r, now),
            Err(e) => error(&mut s, 0, e, now),
        }
        let failed: Vec<String> = events(&mut s)
            .iter()
            .filter_map(|e| match e {
                Event::Failed(e) => Some(e.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(failed.len(), 1, "{answer:?}");
        failed[0].clone()
    };
    let cases = [
        // An empty list, from a discover result and from a -32022.
        (
            Ok(r#"{"supportedVersions":[],"capabilities":{}}"#),
            EraChoice::Auto,
        ),
        (
            Err(
                r#"{"code":-32022,"message":"no","data":{"supported":[],"requested":"2026-07-28"}}"#,
            ),
            EraChoice::Auto,
        ),
        (
            Err(r#"{"code":-32022,"message":"no","data":{"supported":[7, null],"requested":"x"}}"#),
            EraChoice::Modern,
        ),
        // A legacy-only server when modern is forced: legacy versions are not "ours" then.
        (
            Ok(r#"{"supportedVersions":["2025-11-25"],"capabilities":{}}"#),
            EraChoice::Modern,
        ),
        (
            Err(
                r#"{"code":-32022,"message":"no","data":{"supported":["2025-06-18"],"requested":"2026-07-28"}}"#,
            ),
            EraChoice::Modern,
        ),
    ];
    for (answer, era) in cases {
        let text = texts(answer, era);
        if let Some((_, lists)) = text.split_once("no protocol version in common: ") {
            let (theirs, ours) = lists.split_once("; this client speaks ").expect(&text);
            assert!(!ours.trim().is_empty(), "{text}");
            if let Some(theirs) = theirs.strip_prefix("the server supports ") {
                assert!(!theirs.trim().is_empty(), "{text}");
                for v in theirs.split(", ") {
                    assert!(
                        !ours.split(", ").any(|o| o == v),
                        "both sides list {v}: {text}"
                    );
                }
            } else {
                assert!(theirs.contains("names no version"), "{text}");
            }
        }
        assert!(!text.contains("supports ;"), "{text}");
        assert!(!text.contains("supports: ;"), "{text}");
    }
}

#[test]
fn a_request_refused_in_a_version_the_server_lists_says_so() {
    let (mut s, now) = modern();
    let h = s.call_tool("echo", json!({}), now).unwrap();
    sent(&mut s);
    let mismatch = r#"{"code":-32022,"message":"no","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}"#;
    error(&mut s, h.0, mismatch, now);
    let retry = sent(&mut s);
    let id = retry[0]["id"].as_u64().unwrap();
    error(&mut s, id, mismatch, now);
    match events(&mut s).as_slice() {
        [Event::Response {
            result: Err(e @ RequestError::UnsupportedVersion { .. }),
            ..
        }] => {
            let text = e.to_string();
            assert!(!text.contains("does not support"), "{text}");
            assert!(text.contains("although it lists it"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    let (mut s, now) = modern();
    let h = s.call_tool("echo", json!({}), now).unwrap();
    error(
        &mut s,
        h.0,
        r#"{"code":-32022,"message":"no","data":{"supported":[],"requested":"2026-07-28"}}"#,
        now,
    );
    match events(&mut s).as_slice() {
        [Event::Response { result: Err(e), .. }] => {
            let text = e.to_string();
            assert!(text.contains("names no version"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

// ---- the tools' mirrored headers, remembered --------------------------------------------------------

fn annotated(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}})
}

/// Reads one `tools/list` page (cursor `cursor`) holding `tools`, with `next` as its cursor.
fn list_page(
    s: &mut Session,
    now: Instant,
    cursor: Option<&str>,
    tools: Vec<Value>,
    next: Option<&str>,
) {
    let h = s.list_tools(cursor, now).unwrap();
    transmits(s);
    let mut page = json!({"tools": tools});
    if let Some(next) = next {
        page["nextCursor"] = json!(next);
    }
    result(s, h.0, &page.to_string(), now);
    events(s);
}

fn region_header_of_call(s: &mut Session, tool: &str, now: Instant) -> Option<String> {
    s.call_tool(tool, json!({"region": "eu"}), now).unwrap();
    let out = transmits(s);
    header(&out[0], "Mcp-Param-Region").map(str::to_owned)
}

#[test]
fn a_tool_never_listed_needs_a_listing_and_one_listed_carries_its_headers_on_its_first_call() {
    let (mut s, now) = http();
    assert!(s.needs_listing_for("query"), "never listed");
    list_page(
        &mut s,
        now,
        None,
        vec![annotated("query"), json!({"name": "plain"})],
        None,
    );
    assert!(!s.needs_listing_for("query"));
    assert!(!s.needs_listing_for("plain"), "known, without headers");
    assert!(s.needs_listing_for("other"));
    assert_eq!(
        region_header_of_call(&mut s, "query", now).as_deref(),
        Some("eu")
    );
    assert_eq!(region_header_of_call(&mut s, "plain", now), None);
    // Over a stream, and in the legacy era, there are no such headers to know.
    let (s, _) = modern();
    assert!(!s.needs_listing_for("query"));
    let mut s = Session::new(Config {
        era: EraChoice::Legacy,
        transport: TransportKind::Http,
        ..Config::default()
    });
    s.initialize(Instant::now()).unwrap();
    sent(&mut s);
    result(&mut s, 0, INIT, Instant::now());
    assert!(!s.needs_listing_for("query"));
}

#[test]
fn a_listing_that_fails_half_way_keeps_the_earlier_tools_headers_and_a_complete_one_replaces_them()
{
    let (mut s, now) = http();
    list_page(&mut s, now, None, vec![annotated("a")], Some("p2"));
    list_page(&mut s, now, Some("p2"), vec![annotated("b")], None);
    // A new listing: its first page is read, its second fails.
    list_page(&mut s, now, None, vec![annotated("a")], Some("p2"));
    let h = s.list_tools(Some("p2"), now).unwrap();
    transmits(&mut s);
    error(&mut s, h.0, r#"{"code":-32603,"message":"oops"}"#, now);
    events(&mut s);
    assert_eq!(
        region_header_of_call(&mut s, "b", now).as_deref(),
        Some("eu"),
        "b's headers are still known, as the driver's cached list still has b"
    );
    // A complete listing without b: b is forgotten.
    list_page(&mut s, now, None, vec![annotated("a")], None);
    assert!(s.needs_listing_for("b"));
    assert_eq!(region_header_of_call(&mut s, "b", now), None);
    assert_eq!(
        region_header_of_call(&mut s, "a", now).as_deref(),
        Some("eu")
    );
}

#[test]
fn the_remembered_tools_are_capped() {
    use mcp_proto::session::MAX_REMEMBERED_TOOLS;
    let (mut s, now) = http();
    let many =
        |prefix: &str, n: usize| (0..n).map(|i| annotated(&format!("{prefix}{i}"))).collect();
    list_page(
        &mut s,
        now,
        None,
        many("t", MAX_REMEMBERED_TOOLS + 10),
        None,
    );
    assert!(!s.needs_listing_for("t0"));
    assert!(!s.needs_listing_for(&format!("t{}", MAX_REMEMBERED_TOOLS - 1)));
    assert!(
        s.needs_listing_for(&format!("t{MAX_REMEMBERED_TOOLS}")),
        "past the cap"
    );
    // A later listing of other tools makes room for its own, dropping the earlier ones.
    list_page(&mut s, now, None, many("u", 20), Some("more"));
    assert!(!s.needs_listing_for("u19"));
    assert_eq!(
        region_header_of_call(&mut s, "u3", now).as_deref(),
        Some("eu")
    );
}
