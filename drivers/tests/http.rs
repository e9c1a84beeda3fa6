//! The Streamable HTTP driver against real local HTTP servers (the test kit's server,
//! `mcp_testkit::http_server`, run in-process so the tests can read every request it received),
//! well-behaved and hostile.

use mcp_connect::proto::http::{HttpError, RedirectRefused};
use mcp_connect::proto::{Config, RequestError};
use mcp_connect::{Client, ClientConfig, Error, HttpTransport, HttpTransportConfig, Request};
use mcp_testkit::http_server::{self as server, Behaviour};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn start(b: Behaviour) -> server::Server {
    server::start(b).expect("listen on 127.0.0.1")
}

fn client(url: &str) -> Client {
    Client::new(HttpTransport::new(HttpTransportConfig::new(url)).unwrap())
}

async fn connect(url: &str) -> Client {
    let c = client(url);
    c.initialize().await.expect("initialize");
    c
}

#[test]
fn sse_with_crlf_comments_and_multiline_data() {
    let srv = start(Behaviour {
        crlf: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        assert_eq!(c.list_tools().await.unwrap().len(), 6);
        let r = c.call_tool("add", json!({"a": 1, "b": 2})).await.unwrap();
        assert_eq!(r.text(), "3");
        assert_eq!(r.structured_content, Some(json!({"sum": 3})));
        c.close().await.unwrap();
    });
}

#[test]
fn sse_written_one_byte_at_a_time() {
    let srv = start(Behaviour {
        crlf: true,
        byte_at_a_time: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        let r = c
            .call_tool("echo", json!({"text": "slowly, byte by byte"}))
            .await
            .unwrap();
        assert_eq!(r.text(), "slowly, byte by byte");
        c.close().await.unwrap();
    });
}

#[test]
fn json_answers_with_a_charset() {
    let srv = start(Behaviour {
        json: true,
        json_charset: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        let r = c.call_tool("echo", json!({"text": "json"})).await.unwrap();
        assert_eq!(r.text(), "json");
        c.close().await.unwrap();
    });
}

#[test]
fn a_ping_inside_the_stream_is_answered_by_its_own_post() {
    let srv = start(Behaviour {
        ping_in_stream: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        let r = c.call_tool("echo", json!({"text": "x"})).await.unwrap();
        assert_eq!(
            r.text(),
            "x\npong: {\"id\":\"p1\",\"jsonrpc\":\"2.0\",\"result\":{}}"
        );
        c.close().await.unwrap();
    });
}

/// A server may send requests of its own on the standalone stream as soon as the first request
/// after the handshake comes, and drops them when no stream is open yet (the TypeScript SDK's
/// server does; the conformance suite's elicitation scenario lost its question that way now and
/// then): so nothing goes after the handshake before the `GET` has its status. This server gives
/// it after 300 ms; the call reaches it only after that.
#[test]
fn requests_after_the_handshake_wait_for_the_standalone_stream() {
    let srv = start(Behaviour {
        slow_listen: Some(Duration::from_millis(300)),
        ..Behaviour::default()
    });
    let mut config = HttpTransportConfig::new(srv.url.as_str());
    config.rules.standalone_stream = mcp_connect::proto::http::StandaloneStream::Always;
    smol::block_on(async {
        let c = Client::new(HttpTransport::new(config).unwrap());
        c.initialize().await.expect("initialize");
        c.call_tool("echo", json!({"text": "x"})).await.unwrap();
        c.close().await.unwrap();
    });
    let log = srv.log();
    let get = log.iter().find(|l| l.method == "GET").expect("a GET");
    let call = log
        .iter()
        .find(|l| l.rpc_method().as_deref() == Some("tools/call"))
        .expect("the call");
    let after = call.at.saturating_duration_since(get.at);
    assert!(
        after >= Duration::from_millis(300),
        "the call came {after:?} after the GET, before the stream's status"
    );
}

#[test]
fn request_headers_session_and_delete() {
    let srv = start(Behaviour::default());
    smol::block_on(async {
        let c = connect(&srv.url).await;
        assert_eq!(c.transport().session_id().as_deref(), Some("session-1"));
        c.call_tool("echo", json!({"text": "x"})).await.unwrap();
        c.close().await.unwrap();
    });
    let log = srv.log();
    let methods: Vec<(String, Option<String>)> = log
        .iter()
        .map(|l| (l.method.clone(), l.rpc_method()))
        .collect();
    assert_eq!(
        methods,
        [
            // The era probe: this legacy server refuses it (400, no JSON-RPC answer).
            ("POST".into(), Some("server/discover".into())),
            ("POST".into(), Some("initialize".into())),
            ("POST".into(), Some("notifications/initialized".into())),
            ("POST".into(), Some("tools/call".into())),
            ("DELETE".into(), None),
        ]
    );
    let probe = &log[0];
    assert_eq!(probe.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(probe.header("mcp-method"), Some("server/discover"));
    assert_eq!(probe.header("mcp-session-id"), None);
    let log = &log[1..];
    let init = &log[0];
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    for later in &log[1..] {
        assert_eq!(
            later.header("mcp-session-id"),
            Some("session-1"),
            "{later:?}"
        );
        assert_eq!(
            later.header("mcp-protocol-version"),
            Some("2025-11-25"),
            "{later:?}"
        );
    }
    // One keep-alive connection carries the exchanges, not one connection per request.
    let ports: std::collections::HashSet<u16> = log.iter().map(|l| l.peer_port).collect();
    assert!(ports.len() < log.len(), "connections are reused: {ports:?}");
}

#[test]
fn an_expired_session_is_renewed_once_transparently() {
    let srv = start(Behaviour {
        expire_after: Some(2),
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        for i in 0..4 {
            let text = format!("call {i}");
            assert_eq!(
                c.call_tool("echo", json!({ "text": text }))
                    .await
                    .unwrap()
                    .text(),
                text
            );
        }
        assert_eq!(c.transport().session_id().as_deref(), Some("session-2"));
        c.close().await.unwrap();
    });
    let log = srv.log();
    let inits: Vec<_> = log
        .iter()
        .filter(|l| l.rpc_method().as_deref() == Some("initialize"))
        .collect();
    assert_eq!(inits.len(), 2);
    assert_eq!(
        inits[1].header("mcp-session-id"),
        None,
        "a new session starts without the old id"
    );
    let calls: Vec<_> = log
        .iter()
        .filter(|l| l.rpc_method().as_deref() == Some("tools/call"))
        .collect();
    assert_eq!(calls.len(), 5, "the third call was sent twice");
    assert_eq!(calls[2].body, calls[3].body, "resent as it was");
    assert_eq!(calls[3].header("mcp-session-id"), Some("session-2"));
}

#[test]
fn a_session_that_keeps_expiring_surfaces_the_404() {
    let srv = start(Behaviour {
        always_404_after: Some(1),
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        c.call_tool("echo", json!({"text": "ok"})).await.unwrap();
        let err = c
            .call_tool("echo", json!({"text": "gone"}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Http { status: 404, url, .. } if *url == srv.url),
            "{err:?}"
        );
        c.close().await.unwrap();
    });
    let inits = srv
        .log()
        .iter()
        .filter(|l| l.rpc_method().as_deref() == Some("initialize"))
        .count();
    assert_eq!(inits, 2, "renewed exactly once");
}

#[test]
fn an_html_500_is_a_typed_error_and_the_client_goes_on() {
    let srv = start(Behaviour {
        html_500: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        let err = c.call_tool("echo", json!({"text": "x"})).await.unwrap_err();
        let Error::Http { status, url, body } = &err else {
            panic!("{err:?}")
        };
        assert_eq!((*status, url.as_str()), (500, srv.url.as_str()));
        assert!(body.contains("Internal Server Error"), "{body}");
        assert!(
            err.to_string()
                .starts_with(&format!("HTTP 500 from {}", srv.url)),
            "{err}"
        );
        assert_eq!(c.list_tools().await.unwrap().len(), 6);
        c.close().await.unwrap();
    });
}

#[test]
fn a_required_authorization_header_goes_on_every_request() {
    let srv = start(Behaviour {
        auth: Some("Bearer s3cret".into()),
        ..Behaviour::default()
    });
    smol::block_on(async {
        let refused = client(&srv.url).initialize().await.unwrap_err();
        assert!(
            matches!(refused, Error::Http { status: 401, .. }),
            "{refused:?}"
        );
        let config =
            HttpTransportConfig::new(srv.url.as_str()).header("Authorization", "Bearer s3cret");
        let c = Client::new(HttpTransport::new(config).unwrap());
        c.initialize().await.unwrap();
        assert_eq!(
            c.call_tool("echo", json!({"text": "authorized"}))
                .await
                .unwrap()
                .text(),
            "authorized"
        );
        c.close().await.unwrap();
    });
    let log = srv.log();
    assert!(log.len() >= 6);
    assert!(
        // The unauthorized client's probe and `initialize` carry no token; all later ones do.
        log[2..]
            .iter()
            .all(|l| l.header("authorization") == Some("Bearer s3cret")),
        "{log:?}"
    );
}

#[test]
fn a_redirect_to_another_origin_is_not_followed() {
    let elsewhere = start(Behaviour::default());
    let srv = start(Behaviour {
        redirect: Some(elsewhere.url.clone()),
        ..Behaviour::default()
    });
    smol::block_on(async {
        let config =
            HttpTransportConfig::new(srv.url.as_str()).header("Authorization", "Bearer s3cret");
        let c = Client::new(HttpTransport::new(config).unwrap());
        let err = c.initialize().await.unwrap_err();
        assert!(
            matches!(&err, Error::HttpProtocol(HttpError::Redirect { status: 307, url, reason: RedirectRefused::CrossOrigin { origin } }) if *url == srv.url && elsewhere.url.starts_with(origin.as_str())),
            "{err:?}"
        );
    });
    assert!(
        elsewhere.log().is_empty(),
        "credentials never reached the other origin"
    );
}

#[test]
fn a_stream_cut_before_the_response_is_resumed_after_retry() {
    let srv = start(Behaviour {
        cut_stream: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        let started = Instant::now();
        let r = c
            .call_tool("echo", json!({"text": "resumed"}))
            .await
            .unwrap();
        assert_eq!(r.text(), "resumed");
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "waited the server's retry"
        );
        c.close().await.unwrap();
    });
    let log = srv.log();
    let get = log
        .iter()
        .find(|l| l.method == "GET")
        .expect("a resumption GET");
    assert_eq!(get.header("last-event-id"), Some("e1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("session-1"));
}

#[test]
fn a_timeout_cancels_and_aborts_the_exchange() {
    let srv = start(Behaviour::default());
    smol::block_on(async {
        let c = connect(&srv.url).await;
        let started = Instant::now();
        // The tool would answer after 30 s: the 200 ms timeout wins by far, however busy the
        // machine.
        times_out(&c, 30_000, 200).await;
        assert!(started.elapsed() < Duration::from_secs(15));
        assert_eq!(
            c.call_tool("echo", json!({"text": "after"}))
                .await
                .unwrap()
                .text(),
            "after"
        );
        c.close().await.unwrap();
    });
    // The cancellation reached the server before the next call, and both before the DELETE
    // that ended the session (the server logs each request when it has read it).
    let log = srv.log();
    let at = |pred: &dyn Fn(&server::Logged) -> bool| {
        let hits: Vec<usize> = (0..log.len()).filter(|&i| pred(&log[i])).collect();
        assert_eq!(hits.len(), 1, "{log:#?}");
        hits[0]
    };
    let cancelled = at(&|l| l.rpc_method().as_deref() == Some("notifications/cancelled"));
    let next = at(&|l| l.body.contains("\"after\""));
    let delete = at(&|l| l.method == "DELETE");
    assert!(cancelled < next && next < delete, "{log:#?}");
}

#[test]
fn a_refused_connection_is_a_transport_error() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    smol::block_on(async {
        let config = ClientConfig {
            session: Config {
                default_timeout: Some(Duration::from_secs(10)),
                ..Config::default()
            },
            ..ClientConfig::default()
        };
        let c = Client::with_config(
            HttpTransport::new(HttpTransportConfig::new(url.as_str())).unwrap(),
            config,
        );
        let err = c.initialize().await.unwrap_err();
        assert!(matches!(&err, Error::Io { .. }), "{err:?}");
        assert!(std::error::Error::source(&err).is_some());
    });
}

#[test]
fn stateless_server_without_session_ids() {
    let srv = start(Behaviour {
        stateless: true,
        json: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        assert_eq!(c.transport().session_id(), None);
        assert_eq!(
            c.call_tool("add", json!({"a": 5, "b": 6}))
                .await
                .unwrap()
                .text(),
            "11"
        );
        c.close().await.unwrap();
    });
    assert!(
        srv.log().iter().all(|l| l.method == "POST"),
        "no DELETE without a session"
    );
}

#[test]
fn a_json_answer_with_the_wrong_id_fails_the_call_at_once() {
    let srv = start(Behaviour {
        wrong_id: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = connect(&srv.url).await;
        let started = Instant::now();
        let err = c.call_tool("echo", json!({"text": "x"})).await.unwrap_err();
        assert!(
            matches!(&err, Error::HttpProtocol(HttpError::Unanswered { reason, .. }) if reason.contains("did not answer")),
            "{err:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no wait for the 60 s timeout"
        );
        assert_eq!(
            c.stats().messages_ignored,
            1,
            "the stray answer was reported"
        );
        c.close().await.unwrap();
    });
}

/// A client whose requests time out after `timeout` (so that a regression fails, not hangs).
/// Calls the `slow` tool (answering after `slow_ms`) with a `timeout_ms` timeout, which must win.
async fn times_out(c: &Client, slow_ms: u64, timeout_ms: u64) {
    let err = c
        .request(
            Request::call_tool("slow", json!({ "ms": slow_ms }))
                .timeout(Duration::from_millis(timeout_ms)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
}

fn client_with(config: HttpTransportConfig, timeout: Duration) -> Client {
    let config_c = ClientConfig {
        session: Config {
            default_timeout: Some(timeout),
            ..Config::default()
        },
        ..ClientConfig::default()
    };
    Client::with_config(HttpTransport::new(config).unwrap(), config_c)
}

/// Waits up to `within` for `cond`.
fn eventually(within: Duration, cond: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Waits, without blocking the executor, for `cond` (failing the test past 30 s).
async fn until(cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "waited 30 s in vain");
        smol::Timer::after(Duration::from_millis(10)).await;
    }
}

fn count(srv: &server::Server, rpc_method: &str) -> usize {
    srv.log()
        .iter()
        .filter(|l| l.rpc_method().as_deref() == Some(rpc_method))
        .count()
}

// ---- H4: nothing unchecked reaches an isahc header ---------------------------------------------

#[test]
fn a_non_ascii_protocol_version_never_reaches_a_header() {
    let srv = start(Behaviour {
        protocol_version: Some("2025-06-18\u{e9}".into()),
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = client_with(
            HttpTransportConfig::new(srv.url.as_str()),
            Duration::from_secs(5),
        );
        let err = c.initialize().await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Session(mcp_connect::proto::SessionError::UnsupportedVersion { .. })
            ),
            "{err:?}"
        );
        // Used to panic inside isahc ("request header value is not valid UTF-8").
        c.close().await.unwrap();
    });
    let log = srv.log();
    let delete = log.iter().find(|l| l.method == "DELETE").expect("a DELETE");
    assert_eq!(delete.header("mcp-protocol-version"), None);
}

#[test]
fn a_non_ascii_event_id_fails_the_call_instead_of_resuming() {
    let srv = start(Behaviour {
        cut_stream: true,
        event_id: Some("caf\u{e9}".into()),
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = client_with(
            HttpTransportConfig::new(srv.url.as_str()),
            Duration::from_secs(30),
        );
        c.initialize().await.unwrap();
        let started = Instant::now();
        let err = c.call_tool("echo", json!({"text": "x"})).await.unwrap_err();
        assert!(
            matches!(&err, Error::HttpProtocol(HttpError::Unanswered { reason, .. }) if reason.contains("visible ASCII")),
            "{err:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no wait for the 30 s timeout"
        );
        c.close().await.unwrap();
    });
    assert!(srv.log().iter().all(|l| l.method != "GET"), "no resumption");
}

#[test]
fn a_bad_user_header_is_refused_by_new() {
    for (name, value) in [
        ("X-User", "Jos\u{e9}"),
        ("X-A", "a\r\nX-B: 1"),
        ("Bad Name", "value-9"),
    ] {
        let config = HttpTransportConfig::new("http://127.0.0.1:9/mcp").header(name, value);
        let err = HttpTransport::new(config).err().expect("refused");
        assert!(matches!(err, Error::Config(_)), "{err:?}");
        assert!(err.to_string().contains(name), "{err}");
        assert!(
            !err.to_string().contains(value),
            "the value is not shown: {err}"
        );
    }
}

// ---- L6: no secrets in errors or Debug ---------------------------------------------------------

#[test]
fn errors_show_no_url_query_or_credentials() {
    smol::block_on(async {
        let c = client_with(
            HttpTransportConfig::new("http://127.0.0.1:9/mcp?key=SECRET"),
            Duration::from_secs(10),
        );
        let err = c.initialize().await.unwrap_err();
        assert!(matches!(&err, Error::Io { .. }), "{err:?}");
        let mut texts = vec![err.to_string(), format!("{err:?}")];
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            texts.push(s.to_string());
            source = s.source();
        }
        for text in texts {
            assert!(!text.contains("SECRET"), "{text}");
        }
        assert!(err.to_string().contains("http://127.0.0.1:9/mcp"), "{err}");
    });
    let err = HttpTransport::new(HttpTransportConfig::new(
        "http://bob:hunter2@127.0.0.1:9/mcp",
    ))
    .err()
    .expect("URL credentials are refused");
    assert!(err.to_string().contains("Authorization"), "{err}");
    assert!(!format!("{err} {err:?}").contains("hunter2"), "{err:?}");
}

#[test]
fn debug_of_the_config_hides_the_authorization_token() {
    let config = HttpTransportConfig::new("http://127.0.0.1:9/mcp?key=SECRET")
        .header("Authorization", "Bearer SECRET456");
    let text = format!("{config:?}");
    assert!(text.contains("Authorization"), "{text}");
    assert!(!text.contains("SECRET"), "{text}");
}

// ---- L4: configuration extremes ----------------------------------------------------------------

#[test]
fn max_message_at_usize_max_still_completes_a_call() {
    for json in [false, true] {
        let srv = start(Behaviour {
            json,
            ..Behaviour::default()
        });
        smol::block_on(async {
            let config = HttpTransportConfig {
                max_message: usize::MAX,
                ..HttpTransportConfig::new(srv.url.as_str())
            };
            let c = client_with(config, Duration::from_secs(5));
            c.initialize().await.unwrap();
            let r = c.call_tool("echo", json!({"text": "max"})).await.unwrap();
            assert_eq!(r.text(), "max");
            c.close().await.unwrap();
        });
    }
}

// ---- M2: a 404 to a notification renews the session --------------------------------------------

#[test]
fn a_404_to_a_cancellation_renews_the_session() {
    let srv = start(Behaviour {
        expire_on_cancel: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = client_with(
            HttpTransportConfig::new(srv.url.as_str()),
            Duration::from_secs(5),
        );
        c.initialize().await.unwrap();
        times_out(&c, 2000, 300).await;
        for i in 0..3 {
            let text = format!("call {i}");
            let r = c.call_tool("echo", json!({ "text": text })).await.unwrap();
            assert_eq!(r.text(), text);
        }
        assert_eq!(c.transport().session_id().as_deref(), Some("session-2"));
        c.close().await.unwrap();
    });
    assert_eq!(count(&srv, "initialize"), 2);
    assert_eq!(count(&srv, "notifications/cancelled"), 1);
}

#[test]
fn dropping_the_transport_aborts_its_exchanges() {
    use mcp_connect::proto::{RequestId, TransmitKind};
    use mcp_connect::transport::{Transmit, Transport};
    let srv = start(Behaviour {
        stateless: true,
        keep_stream_open: true,
        ..Behaviour::default()
    });
    let t = HttpTransport::new(HttpTransportConfig::new(srv.url.as_str())).unwrap();
    // A request with no session and no cancellation: only the drop can end its stream.
    t.send(Transmit {
        payload: br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#
            .to_vec(),
        kind: TransmitKind::Request {
            id: RequestId(1),
            wire: RequestId(1),
            method: "tools/call".into(),
        },
        headers: Vec::new(),
        modern: false,
    })
    .unwrap();
    assert!(eventually(Duration::from_secs(20), || count(
        &srv,
        "tools/call"
    ) == 1));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(srv.streams_closed(), 0, "the stream is open");
    drop(t);
    assert!(
        eventually(Duration::from_secs(20), || srv.streams_closed() == 1),
        "the response stream stayed open"
    );
}

// ---- H3: a renewal leaves requests on other streams alone ----------------------------------------

#[test]
fn a_renewal_resends_only_the_request_that_met_the_404() {
    let srv = start(Behaviour {
        expire_after: Some(1),
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = client_with(
            HttpTransportConfig::new(srv.url.as_str()),
            Duration::from_secs(8),
        );
        c.initialize().await.unwrap();
        let a = c.call_tool("slow", json!({"ms": 1500}));
        let b = async {
            // B goes once A has reached the server (A is the call before the expiry).
            until(|| count(&srv, "tools/call") == 1).await;
            c.call_tool("echo", json!({"text": "b"})).await
        };
        let (a, b) = smol::future::zip(a, b).await;
        assert_eq!(b.unwrap().text(), "b", "B renewed and answered");
        assert_eq!(a.unwrap().text(), "done", "A answered on its own stream");
        assert_eq!(c.transport().session_id().as_deref(), Some("session-2"));
        c.close().await.unwrap();
    });
    let log = srv.log();
    let slow = log.iter().filter(|l| l.body.contains("\"slow\"")).count();
    assert_eq!(slow, 1, "A ran once");
    let echo: Vec<_> = log.iter().filter(|l| l.body.contains("\"echo\"")).collect();
    assert_eq!(echo.len(), 2, "B was sent twice");
    assert_eq!(echo[1].header("mcp-session-id"), Some("session-2"));
}

// ---- M8: requests during a renewal wait for it ---------------------------------------------------

#[test]
fn a_request_made_during_a_renewal_waits_for_the_new_session() {
    let srv = start(Behaviour {
        expire_after: Some(0),
        renewal_delay: Some(Duration::from_millis(600)),
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = client_with(
            HttpTransportConfig::new(srv.url.as_str()),
            Duration::from_secs(8),
        );
        c.initialize().await.unwrap();
        let b = c.call_tool("echo", json!({"text": "b"}));
        let d = async {
            // D goes while the renewal's initialize is held by the server.
            until(|| count(&srv, "initialize") == 2).await;
            c.call_tool("echo", json!({"text": "d"})).await
        };
        let (b, d) = smol::future::zip(b, d).await;
        assert_eq!(b.unwrap().text(), "b");
        assert_eq!(d.unwrap().text(), "d", "not Usage(NotReady)");
        c.close().await.unwrap();
    });
    assert_eq!(count(&srv, "initialize"), 2);
}
// ---- M3: a stalled notification POST does not stall the transport -------------------------------

#[test]
fn a_stalled_notification_post_does_not_block_later_requests() {
    let srv = start(Behaviour {
        stall_notifications: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let config = HttpTransportConfig {
            post_timeout: Duration::from_millis(300),
            ..HttpTransportConfig::new(srv.url.as_str())
        };
        let c = client_with(config, Duration::from_secs(2));
        c.initialize().await.unwrap();
        for text in ["one", "two"] {
            let r = c.call_tool("echo", json!({ "text": text })).await.unwrap();
            assert_eq!(r.text(), text);
        }
    });
    assert_eq!(count(&srv, "tools/call"), 2);
}

#[test]
fn a_stalled_cancellation_does_not_delay_the_next_call() {
    let srv = start(Behaviour {
        stall_cancellations: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        // The default 10 s POST deadline: the next call must not wait for it.
        let c = client_with(
            HttpTransportConfig::new(srv.url.as_str()),
            Duration::from_secs(3),
        );
        c.initialize().await.unwrap();
        times_out(&c, 1000, 200).await;
        let started = Instant::now();
        let r = c.call_tool("echo", json!({"text": "next"})).await.unwrap();
        assert_eq!(r.text(), "next");
        // The next call waits for the cancellation's status at most `ORDER_WAIT` (1 s), not
        // the POST's 10 s deadline: a generous bound between the two.
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{:?}",
            started.elapsed()
        );
    });
}

#[test]
fn the_outbound_queue_is_bounded() {
    use mcp_connect::proto::{RequestId, TransmitKind};
    use mcp_connect::transport::{Inbound, Transmit, Transport};
    let srv = start(Behaviour {
        stateless: true,
        stall_notifications: true,
        ..Behaviour::default()
    });
    let config = HttpTransportConfig {
        max_queued: 2,
        post_timeout: Duration::from_secs(5),
        ..HttpTransportConfig::new(srv.url.as_str())
    };
    let t = HttpTransport::new(config).unwrap();
    let note = || Transmit {
        payload: br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#.to_vec(),
        kind: TransmitKind::Notification {
            method: "notifications/progress".into(),
        },
        headers: Vec::new(),
        modern: false,
    };
    // Two stalled POSTs in flight fill the queue.
    let refused = (0..10).filter(|_| t.send(note()).is_err()).count();
    assert!(refused >= 7, "{refused} refused");
    let request = Transmit {
        payload: br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.to_vec(),
        kind: TransmitKind::Request {
            id: RequestId(7),
            wire: RequestId(7),
            method: "ping".into(),
        },
        headers: Vec::new(),
        modern: false,
    };
    let err = t.send(request).unwrap_err();
    assert!(matches!(err, Error::QueueFull { .. }), "{err:?}");
    assert!(err.to_string().contains("queue is full"), "{err}");
    // The refusal is `send`'s answer only (the client fails the request with it): nothing is
    // queued for the client, whose inbound queue may be full.
    assert!(matches!(t.try_recv(), None | Some(Inbound::Closed(_))));
}

#[test]
fn a_request_refused_by_a_full_queue_fails_at_once_even_with_the_inbound_queue_full() {
    // The `initialized` POST is never answered and fills the one-message queue; the server's
    // standalone stream fills the client's inbound queue, which nobody reads.
    let srv = start(Behaviour {
        stall_initialized: true,
        flood_listen: Some(200),
        ..Behaviour::default()
    });
    let mut config = HttpTransportConfig {
        max_queued: 1,
        post_timeout: Duration::from_secs(60),
        ..HttpTransportConfig::new(srv.url.as_str())
    };
    config.rules.standalone_stream = mcp_connect::proto::http::StandaloneStream::Always;
    let transport = Arc::new(HttpTransport::new(config).unwrap());
    let c = Client::with_config(
        transport.clone(),
        ClientConfig {
            idle_reader: false,
            ..ClientConfig::default()
        },
    );
    smol::block_on(async {
        c.initialize().await.unwrap();
        assert!(
            eventually(Duration::from_secs(30), || transport.received_waiting()
                == 64),
            "the inbound queue did not fill: {}",
            transport.received_waiting()
        );
        let started = Instant::now();
        let call = c.request(Request::call_tool("echo", json!({"text": "x"})).no_timeout());
        let outcome = smol::future::or(async { Some(call.await) }, async {
            smol::Timer::after(Duration::from_secs(20)).await;
            None
        })
        .await;
        let err = outcome
            .expect("the refused request never failed")
            .unwrap_err();
        assert!(matches!(err, Error::QueueFull { .. }), "{err:?}");
        assert!(err.to_string().contains("queue is full"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
    });
}

#[test]
fn an_answer_that_cannot_be_delivered_fails_its_call_at_once_with_a_warning() {
    // The server pings inside the call's stream and refuses the answer's POST: it would wait 5 s
    // and then answer the call "pong: none".
    let srv = start(Behaviour {
        ping_in_stream: true,
        refuse_answers: true,
        ..Behaviour::default()
    });
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let sink = warnings.clone();
    let c = Client::with_config(
        HttpTransport::new(HttpTransportConfig::new(srv.url.as_str())).unwrap(),
        ClientConfig {
            on_warning: Some(mcp_connect::WarningCallback(Arc::new(move |w| {
                sink.lock().unwrap().push(w.to_string())
            }))),
            ..ClientConfig::default()
        },
    );
    smol::block_on(async {
        c.initialize().await.unwrap();
        let call = c.request(Request::call_tool("echo", json!({"text": "x"})).no_timeout());
        let outcome = smol::future::or(async { Some(call.await) }, async {
            smol::Timer::after(Duration::from_secs(30)).await;
            None
        })
        .await;
        let err = outcome.expect("the call never ended").unwrap_err();
        assert!(
            matches!(&err, Error::Http { status: 500, .. }),
            "failed with the answer's refusal, not the server's late result: {err:?}"
        );
        // The warning is told as the error is handed over; give its callback time to run.
        assert!(
            eventually(Duration::from_secs(20), || !warnings
                .lock()
                .unwrap()
                .is_empty()),
            "no warning"
        );
        let shown = warnings.lock().unwrap()[0].clone();
        assert!(
            shown.contains("could not deliver the answer to the server's request \"p1\""),
            "{shown}"
        );
        assert!(c
            .recent_warnings()
            .iter()
            .any(|w| matches!(w, mcp_connect::proto::Warning::Undelivered { .. })));
        c.close().await.unwrap();
    });
}

#[test]
fn a_cancellation_that_cannot_be_delivered_is_a_warning() {
    let srv = start(Behaviour {
        stall_cancellations: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let config = HttpTransportConfig {
            post_timeout: Duration::from_millis(300),
            ..HttpTransportConfig::new(srv.url.as_str())
        };
        let c = client_with(config, Duration::from_secs(30));
        c.initialize().await.unwrap();
        times_out(&c, 30_000, 200).await;
        until(|| {
            c.recent_warnings()
                .iter()
                .any(|w| matches!(w, mcp_connect::proto::Warning::Undelivered { .. }))
        })
        .await;
        let shown: Vec<String> = c.recent_warnings().iter().map(|w| w.to_string()).collect();
        assert!(
            shown
                .iter()
                .any(|w| w.starts_with("could not deliver the cancellation of request")),
            "{shown:?}"
        );
        // Why, with the deadline in seconds as the rest of the messages say it.
        assert!(
            shown.iter().any(|w| w.contains("no answer within 0.3 s")),
            "{shown:?}"
        );
        // The client goes on.
        let r = c.call_tool("echo", json!({"text": "on"})).await.unwrap();
        assert_eq!(r.text(), "on");
    });
}

#[test]
fn a_stalled_initialized_post_holds_the_first_call_for_a_second_at_most() {
    let srv = start(Behaviour {
        stall_initialized: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        // A POST deadline far past the bound, so that waiting for it would show.
        let config = HttpTransportConfig {
            post_timeout: Duration::from_secs(25),
            ..HttpTransportConfig::new(srv.url.as_str())
        };
        let c = client_with(config, Duration::from_secs(60));
        c.initialize().await.unwrap();
        let r = c.call_tool("echo", json!({"text": "first"})).await.unwrap();
        assert_eq!(r.text(), "first");
    });
    let log = srv.log();
    let initialized = log
        .iter()
        .find(|l| l.rpc_method().as_deref() == Some("notifications/initialized"))
        .expect("initialized was sent");
    let call = log
        .iter()
        .find(|l| l.rpc_method().as_deref() == Some("tools/call"))
        .expect("the call was sent");
    // After it, as the lifecycle says, but about 1 s later, not 25 s (generous: a busy machine).
    let gap = call.at.duration_since(initialized.at);
    assert!(call.at > initialized.at);
    assert!(gap < Duration::from_secs(8), "{gap:?}");
}

// ---- M4: close() bounds its DELETE ---------------------------------------------------------------

#[test]
fn close_gives_up_on_a_delete_that_is_not_answered() {
    let srv = start(Behaviour {
        stall_delete: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let config = HttpTransportConfig {
            close_timeout: Duration::from_millis(300),
            ..HttpTransportConfig::new(srv.url.as_str())
        };
        let c = client_with(config, Duration::from_secs(5));
        c.initialize().await.unwrap();
        let started = Instant::now();
        c.close().await.unwrap();
        // The server holds the DELETE for 30 s.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    });
    assert!(eventually(Duration::from_secs(20), || srv
        .log()
        .iter()
        .any(|l| l.method == "DELETE")));
    // The default is short too.
    assert!(HttpTransportConfig::new("http://h/").close_timeout <= Duration::from_secs(2));
}

// ---- M5: dropping the transport aborts its exchanges --------------------------------------------

#[test]
fn dropping_the_client_without_close_closes_its_streams() {
    let srv = start(Behaviour {
        keep_stream_open: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = client_with(
            HttpTransportConfig::new(srv.url.as_str()),
            Duration::from_secs(30),
        );
        c.initialize().await.unwrap();
        let call = c.call_tool("echo", json!({"text": "never answered"}));
        let gave_up = smol::future::or(async { Some(call.await) }, async {
            smol::Timer::after(Duration::from_millis(500)).await;
            None
        })
        .await;
        assert!(gave_up.is_none(), "the server never answers");
        drop(c);
    });
    assert!(
        eventually(Duration::from_secs(20), || srv.streams_closed() == 1),
        "the response stream stayed open"
    );
    assert!(
        eventually(Duration::from_secs(20), || count(
            &srv,
            "notifications/cancelled"
        ) == 1),
        "the queued cancellation was sent"
    );
}

/// A server that keeps a response stream open after its answer is not waited for: the call
/// returns with the answer, and the stream is closed soon after (its response is dropped when
/// the caller next waits, or by the transport's watchdog when nobody does), not held while
/// the client idles, nor piled up over many calls.
#[test]
fn a_stream_kept_open_after_its_answer_is_closed_soon_after_the_call() {
    let srv = start(Behaviour {
        linger_after_answer: true,
        ..Behaviour::default()
    });
    smol::block_on(async {
        let c = client_with(
            HttpTransportConfig::new(srv.url.as_str()),
            Duration::from_secs(30),
        );
        c.initialize().await.unwrap();
        let r = c.call_tool("echo", json!({"text": "one"})).await.unwrap();
        assert_eq!(r.text(), "one");
        // The client idles, alive: the stream is closed anyway.
        until(|| srv.streams_closed() == 1).await;
        for i in 0..40 {
            let text = format!("call {i}");
            let r = c.call_tool("echo", json!({ "text": text })).await.unwrap();
            assert_eq!(r.text(), text);
        }
        until(|| srv.streams_closed() == 41).await;
        c.close().await.unwrap();
    });
}

/// A call's future polled until it waits and then kept is the waiter polled last, so it takes
/// the wake-up of another call's exchange when that call's answer comes. The other caller is held
/// only until the transport's watchdog looks: every 10 ms once two wait (the second waiter cut
/// short the watchdog's 100 ms period for one), not until the kept future is polled again.
#[test]
fn a_kept_future_that_took_an_exchanges_wake_up_holds_the_other_caller_only_until_the_watchdog_looks(
) {
    let srv = start(Behaviour::default());
    let client = smol::block_on(connect(&srv.url));
    let mut a = Box::pin(
        client
            .call(Request::call_tool("slow", json!({"ms": 300})).timeout(Duration::from_secs(30))),
    );
    let mut p =
        Box::pin(client.call(
            Request::call_tool("slow", json!({"ms": 30_000})).timeout(Duration::from_secs(60)),
        ));
    // `a`'s answer comes after 300 ms; its exchange's wake-up goes to `p`, which is not polled;
    // the watchdog runs the exchange, and the answer handed over wakes `a`.
    let seen = mcp_testkit::kept_beside(a.as_mut(), p.as_mut());
    assert_eq!(seen.output.unwrap().text(), "done");
    assert!(
        seen.kept_was_woken,
        "the kept future took the exchange's wake-up"
    );
    // The answer's 300 ms and the watchdog's look after it; generous against a busy machine,
    // far from the kept future's 30 s.
    assert!(seen.took >= Duration::from_millis(300), "{:?}", seen.took);
    assert!(seen.took < Duration::from_secs(5), "{:?}", seen.took);
    drop((a, p));
    smol::block_on(client.close()).unwrap();
}

// ---- one rule for oversized messages -------------------------------------------------------------

#[test]
fn an_oversized_event_or_body_fails_its_call_at_once_and_is_reported() {
    use mcp_connect::proto::{RequestError, Warning};
    for json in [false, true] {
        let srv = start(Behaviour {
            json,
            ..Behaviour::default()
        });
        smol::block_on(async {
            let config = HttpTransportConfig {
                max_message: 4096,
                ..HttpTransportConfig::new(srv.url.as_str())
            };
            let c = client_with(config, Duration::from_secs(30));
            c.initialize().await.unwrap();
            let started = Instant::now();
            let err = c
                .call_tool("echo", json!({"text": "x".repeat(10_000)}))
                .await
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Request(RequestError::TooLarge { limit: 4096, .. })
                ),
                "json {json}: {err:?}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "not at its 30 s timeout"
            );
            assert!(
                matches!(
                    c.recent_warnings().last(),
                    Some(Warning::Oversized { limit: 4096, .. })
                ),
                "json {json}: {:?}",
                c.recent_warnings()
            );
            // The client goes on.
            let r = c.call_tool("echo", json!({"text": "small"})).await.unwrap();
            assert_eq!(r.text(), "small");
            c.close().await.unwrap();
        });
    }
}

// ---- what servers send wrong: hostile responders of the tests' own ------------------------------

/// A tiny HTTP/1.1 responder on 127.0.0.1 for the hostile tests below: each request is read
/// whole (head and `Content-Length` body), logged, and answered by the test's handler on a
/// connection that then closes.
mod tiny {
    use serde_json::Value;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};

    /// One request as received.
    #[derive(Debug, Clone)]
    pub struct Req {
        pub method: String,
        /// The request target: the path and query.
        pub target: String,
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
    }

    impl Req {
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }

        pub fn json(&self) -> Value {
            serde_json::from_slice(&self.body).unwrap_or(Value::Null)
        }

        /// The JSON-RPC method of the body, if any.
        pub fn rpc(&self) -> String {
            self.json()["method"].as_str().unwrap_or("").to_owned()
        }

        /// The JSON-RPC id of the body, as JSON text.
        pub fn id(&self) -> String {
            self.json()["id"].to_string()
        }
    }

    /// One response.
    pub struct Resp {
        pub status: u16,
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
        /// The connection is held open after the body (which then has no length) until the
        /// client closes it.
        pub hold: bool,
    }

    impl Resp {
        pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Resp {
            let mut headers = Vec::new();
            if !content_type.is_empty() {
                headers.push(("Content-Type".into(), content_type.into()));
            }
            Resp {
                status,
                headers,
                body: body.into(),
                hold: false,
            }
        }

        /// This response, its connection held open after the body.
        pub fn held(self) -> Resp {
            Resp { hold: true, ..self }
        }

        pub fn json(body: impl Into<Vec<u8>>) -> Resp {
            Resp::new(200, "application/json", body)
        }

        pub fn sse(body: impl Into<Vec<u8>>) -> Resp {
            Resp::new(200, "text/event-stream", body)
        }

        pub fn accepted() -> Resp {
            Resp::new(202, "", Vec::new())
        }

        pub fn redirect(status: u16, location: &str) -> Resp {
            Resp {
                status,
                headers: vec![("Location".into(), location.into())],
                body: Vec::new(),
                hold: false,
            }
        }
    }

    type Handler = dyn Fn(&Req) -> Resp + Send + Sync;

    pub struct Responder {
        /// `http://127.0.0.1:PORT`.
        pub origin: String,
        log: Arc<Mutex<Vec<Req>>>,
    }

    impl Responder {
        pub fn start(handler: impl Fn(&Req) -> Resp + Send + Sync + 'static) -> Responder {
            let listener = TcpListener::bind("127.0.0.1:0").expect("listen on 127.0.0.1");
            let origin = format!("http://{}", listener.local_addr().unwrap());
            let log = Arc::new(Mutex::new(Vec::new()));
            let handler: Arc<Handler> = Arc::new(handler);
            let shared = log.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let (log, handler) = (shared.clone(), handler.clone());
                    std::thread::spawn(move || serve(stream, &log, &*handler));
                }
            });
            Responder { origin, log }
        }

        /// The URL of `path` here.
        pub fn url(&self, path: &str) -> String {
            format!("{}{path}", self.origin)
        }

        pub fn log(&self) -> Vec<Req> {
            self.log.lock().unwrap().clone()
        }
    }

    fn serve(stream: TcpStream, log: &Mutex<Vec<Req>>, handler: &Handler) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (
            parts.next().unwrap_or("").to_owned(),
            parts.next().unwrap_or("").to_owned(),
        );
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let mut stream = stream;
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        if header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
            let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        let len = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let req = Req {
            method,
            target,
            headers,
            body,
        };
        log.lock().unwrap().push(req.clone());
        let resp = handler(&req);
        let mut out = format!("HTTP/1.1 {} X\r\n", resp.status).into_bytes();
        for (k, v) in &resp.headers {
            out.extend(format!("{k}: {v}\r\n").into_bytes());
        }
        if !resp.hold {
            out.extend(format!("Content-Length: {}\r\n", resp.body.len()).into_bytes());
        }
        out.extend(b"Connection: close\r\n\r\n");
        out.extend(&resp.body);
        let _ = stream.write_all(&out);
        if resp.hold {
            // Until the client closes (a read of 0) or gives up; a minute at most.
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(60)));
            let _ = reader.read(&mut [0; 1]);
        }
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }

    /// The `initialize` answer of a legacy server without sessions.
    pub fn init_answer(id: &str) -> Resp {
        Resp::json(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"tiny","version":"0"}}}}}}"#
        ))
    }

    /// A legacy server: the handshake, 202 to notifications, `call` for everything else.
    pub fn legacy(call: impl Fn(&Req) -> Resp + Send + Sync + 'static) -> Responder {
        Responder::start(move |r| match r.rpc().as_str() {
            "initialize" => init_answer(&r.id()),
            m if m.starts_with("notifications/") => Resp::accepted(),
            _ => call(r),
        })
    }

    /// A `tools/call` answer to `id` whose one text block is `text`, as raw bytes.
    pub fn call_answer(id: &str, text: &[u8]) -> Vec<u8> {
        let mut m = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
        )
        .into_bytes();
        m.extend_from_slice(text);
        m.extend_from_slice(br#""}]}}"#);
        m
    }
}

#[test]
fn an_event_that_opens_as_the_result_but_is_none_fails_its_call_at_once_on_a_held_stream() {
    // The client takes an event that says at its ends it is the call's result for the answer,
    // and reads no further (the session reads it once): should it be no answer after all, the
    // call fails at once, not at its deadline with the stream held open.
    use tiny::Resp;
    let srv = tiny::legacy(|r| {
        let id = r.id();
        let event =
            |message: String| Resp::sse(format!("event: message\ndata: {message}\n\n")).held();
        match r.json()["params"]["arguments"]["how"]
            .as_str()
            .unwrap_or("")
        {
            "cut" => event(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":["#
            )),
            "unbalanced" => event(format!(
                r#"{{"result":{{"content":[}},"jsonrpc":"2.0","id":{id}}}"#
            )),
            // A JSON body ends with the response: cut short, it fails the call the same way.
            "json-cut" => Resp::json(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"#)),
            _ => event(format!(
                r#"{{"result":{{"content":[{{"type":"text","text":"fine"}}]}},"jsonrpc":"2.0","id":{id}}}"#
            )),
        }
    });
    smol::block_on(async {
        let c = legacy_client(HttpTransportConfig::new(srv.url("/mcp")));
        c.initialize().await.unwrap();
        for how in ["cut", "unbalanced", "json-cut"] {
            let err = c.call_tool("t", json!({ "how": how })).await.unwrap_err();
            assert!(
                matches!(&err, Error::Request(RequestError::InvalidResult { method, .. }) if method == "tools/call"),
                "{how}: {err:?}"
            );
        }
        // A result in the TypeScript SDK's order, on a held stream, is the answer as ever.
        let r = c.call_tool("t", json!({ "how": "fine" })).await.unwrap();
        assert_eq!(r.text(), "fine");
        assert_eq!(c.stats().messages_ignored, 3, "each was reported");
        c.close().await.unwrap();
    });
}

/// A client of `url` in the legacy era (these responders answer `initialize` only), whose
/// requests time out after 20 s (a regression fails instead of waiting a minute).
fn legacy_client(config: HttpTransportConfig) -> Client {
    let settings = ClientConfig {
        session: Config {
            default_timeout: Some(Duration::from_secs(20)),
            era: mcp_connect::proto::EraChoice::Legacy,
            ..Config::default()
        },
        ..ClientConfig::default()
    };
    Client::with_config(HttpTransport::new(config).unwrap(), settings)
}

#[test]
fn json_bodies_and_sse_events_with_bad_text_reach_the_model_with_replacement_characters() {
    use tiny::{call_answer, Resp};
    let srv = tiny::legacy(|r| {
        let id = r.id();
        let how = r.json()["params"]["arguments"]["how"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let event = |message: Vec<u8>| {
            let mut body = b"event: message\ndata: ".to_vec();
            body.extend(message);
            body.extend_from_slice(b"\n\n");
            body
        };
        match how.as_str() {
            "json-latin1" => Resp::json(call_answer(&id, b"caf\xe9")),
            "json-surrogate" => Resp::json(call_answer(&id, br"\ud83d!")),
            "sse-latin1" => Resp::sse(event(call_answer(&id, b"cr\xe8me"))),
            "sse-surrogate" => Resp::sse(event(call_answer(&id, br"\udfff\ud83d\ude00"))),
            _ => Resp::new(500, "text/plain", "?"),
        }
    });
    smol::block_on(async {
        let c = legacy_client(HttpTransportConfig::new(srv.url("/mcp")));
        c.initialize().await.unwrap();
        let started = Instant::now();
        for (how, reads) in [
            ("json-latin1", "caf\u{FFFD}"),
            ("json-surrogate", "\u{FFFD}!"),
            ("sse-latin1", "cr\u{FFFD}me"),
            ("sse-surrogate", "\u{FFFD}\u{1F600}"),
        ] {
            let r = c.call_tool("read", json!({ "how": how })).await;
            assert_eq!(r.unwrap().text(), reads, "{how}");
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no timeout");
        // The SSE decoder replaces invalid UTF-8 itself, as the event-stream format says; the
        // session mends the other three.
        assert_eq!(c.stats().repaired, 3);
        assert_eq!(c.stats().messages_ignored, 0);
        c.close().await.unwrap();
    });
    assert!(srv
        .log()
        .iter()
        .all(|r| r.method == "POST" && r.target == "/mcp" && r.header("accept").is_some()));
}

#[test]
fn a_null_id_error_in_a_body_or_event_fails_its_own_request_with_the_servers_code() {
    use tiny::Resp;
    let srv = tiny::legacy(|r| {
        let args = &r.json()["params"]["arguments"];
        let how = args["how"].as_str().unwrap_or("").to_owned();
        let error = format!(
            r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32602,"message":"cannot read {}"}}}}"#,
            args["name"].as_str().unwrap_or("?")
        );
        match how.as_str() {
            "400" => Resp::new(400, "application/json", error),
            "200" => Resp::json(error),
            _ => Resp::sse(format!("event: message\ndata: {error}\n\n")),
        }
    });
    smol::block_on(async {
        let c = legacy_client(HttpTransportConfig::new(srv.url("/mcp")));
        c.initialize().await.unwrap();
        let started = Instant::now();
        for how in ["400", "200", "sse"] {
            let err = c
                .call_tool("t", json!({ "how": how, "name": how }))
                .await
                .unwrap_err();
            assert!(
                matches!(&err, Error::Protocol(e) if e.code == -32602 && e.message == format!("cannot read {how}")),
                "{how}: {err:?}"
            );
        }
        // Several at once: each exchange tells whose error it is.
        let (a, b) = smol::future::zip(
            c.call_tool("t", json!({"how": "400", "name": "a"})),
            c.call_tool("t", json!({"how": "sse", "name": "b"})),
        )
        .await;
        assert!(
            matches!(&a, Err(Error::Protocol(e)) if e.message == "cannot read a"),
            "{a:?}"
        );
        assert!(
            matches!(&b, Err(Error::Protocol(e)) if e.message == "cannot read b"),
            "{b:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(10), "no timeout");
        assert_eq!(c.stats().messages_ignored, 0, "{:?}", c.recent_warnings());
        c.close().await.unwrap();
    });
}

#[test]
fn a_legacy_servers_null_id_refusal_of_the_probe_still_leads_to_the_legacy_era() {
    use tiny::Resp;
    // What the TypeScript SDK's stateful server answers a POST without a session id.
    let srv = tiny::legacy(|r| match r.rpc().as_str() {
        "server/discover" => Resp::new(
            400,
            "application/json",
            r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
        ),
        _ => Resp::json(tiny::call_answer(&r.id(), b"legacy")),
    });
    smol::block_on(async {
        let c = Client::new(HttpTransport::new(HttpTransportConfig::new(srv.url("/mcp"))).unwrap());
        c.initialize().await.unwrap();
        assert_eq!(c.era(), Some(mcp_connect::proto::Era::Legacy));
        assert_eq!(c.call_tool("t", json!({})).await.unwrap().text(), "legacy");
        c.close().await.unwrap();
    });
    let methods: Vec<String> = srv.log().iter().map(|r| r.rpc()).collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
}

// ---- redirects -------------------------------------------------------------------------------

/// A legacy server at `path` whose `tools/call` answers with the text "at PATH"; a call with
/// `{"cut": true}` gets only a priming event (id `e1`) first, and its answer on the resumption
/// `GET`.
fn legacy_at(
    path: &'static str,
    then: impl Fn(&tiny::Req) -> Option<tiny::Resp> + Send + Sync + 'static,
) -> tiny::Responder {
    use std::sync::{Arc, Mutex};
    use tiny::Resp;
    let cut: Arc<Mutex<Option<String>>> = Arc::default();
    tiny::Responder::start(move |r| {
        if let Some(resp) = then(r) {
            return resp;
        }
        if r.target != path {
            return Resp::new(404, "text/plain", "not here");
        }
        if r.method == "GET" {
            let id = cut.lock().unwrap().take().unwrap_or_default();
            let answer = tiny::call_answer(&id, format!("at {path}, resumed").as_bytes());
            let mut body = b"id: e2\ndata: ".to_vec();
            body.extend(answer);
            body.extend_from_slice(b"\n\n");
            return Resp::sse(body);
        }
        match r.rpc().as_str() {
            "initialize" => tiny::init_answer(&r.id()),
            m if m.starts_with("notifications/") => Resp::accepted(),
            _ if r.json()["params"]["arguments"]["cut"] == true => {
                *cut.lock().unwrap() = Some(r.id());
                Resp::sse("id: e1\nretry: 10\ndata: \n\n")
            }
            _ => Resp::json(tiny::call_answer(&r.id(), format!("at {path}").as_bytes())),
        }
    })
}

#[test]
fn a_same_origin_307_is_followed_with_everything_kept_and_the_new_url_used_from_then_on() {
    // A framework adding a trailing slash to /mcp.
    let srv = legacy_at("/mcp/", |r| {
        (r.target == "/mcp").then(|| tiny::Resp::redirect(307, "/mcp/"))
    });
    smol::block_on(async {
        let config =
            HttpTransportConfig::new(srv.url("/mcp")).header("Authorization", "Bearer s3cret");
        let c = legacy_client(config);
        c.initialize().await.unwrap();
        assert_eq!(
            c.call_tool("t", json!({})).await.unwrap().text(),
            "at /mcp/"
        );
        let r = c.call_tool("t", json!({"cut": true})).await.unwrap();
        assert_eq!(r.text(), "at /mcp/, resumed");
        c.close().await.unwrap();
    });
    let log = srv.log();
    let seen: Vec<(&str, &str, String)> = log
        .iter()
        .map(|r| (r.method.as_str(), r.target.as_str(), r.rpc()))
        .collect();
    assert_eq!(
        seen,
        [
            ("POST", "/mcp", "initialize".to_owned()),
            ("POST", "/mcp/", "initialize".to_owned()),
            ("POST", "/mcp/", "notifications/initialized".to_owned()),
            ("POST", "/mcp/", "tools/call".to_owned()),
            ("POST", "/mcp/", "tools/call".to_owned()),
            ("GET", "/mcp/", String::new()),
        ]
    );
    // Method, body and headers kept.
    assert_eq!(log[0].body, log[1].body);
    let headers = |r: &tiny::Req| {
        ["content-type", "accept", "authorization"].map(|h| r.header(h).map(str::to_owned))
    };
    assert_eq!(headers(&log[0]), headers(&log[1]));
    assert_eq!(log[1].header("authorization"), Some("Bearer s3cret"));
    assert_eq!(log[5].header("last-event-id"), Some("e1"));
}

#[test]
fn a_308_with_a_relative_location_is_followed() {
    let srv = legacy_at("/api/v2/mcp", |r| {
        (r.target == "/api/mcp").then(|| tiny::Resp::redirect(308, "v2/mcp"))
    });
    smol::block_on(async {
        let c = legacy_client(HttpTransportConfig::new(srv.url("/api/mcp")));
        c.initialize().await.unwrap();
        assert_eq!(
            c.call_tool("t", json!({})).await.unwrap().text(),
            "at /api/v2/mcp"
        );
        c.close().await.unwrap();
    });
    let targets: Vec<String> = srv.log().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        targets,
        ["/api/mcp", "/api/v2/mcp", "/api/v2/mcp", "/api/v2/mcp"]
    );
}

#[test]
fn a_redirect_to_another_port_is_another_origin_and_nothing_is_sent_there() {
    use isahc::config::{Configurable, RedirectPolicy};
    // With the transport's own HTTP client, and with one of the application's that would
    // follow redirects itself: the rules decide, not the HTTP library.
    for follows in [false, true] {
        let elsewhere = legacy_at("/mcp", |_| None);
        let to = format!("{}/mcp?token=SECRET", elsewhere.origin);
        let srv = tiny::Responder::start(move |_| tiny::Resp::redirect(307, &to));
        smol::block_on(async {
            let mut config =
                HttpTransportConfig::new(srv.url("/mcp")).header("Authorization", "Bearer s3cret");
            if follows {
                let client = isahc::HttpClient::builder()
                    .redirect_policy(RedirectPolicy::Follow)
                    .build()
                    .unwrap();
                config.client = Some(client);
            }
            // In the Auto era: the probe is refused by the redirect, and so is initialize.
            let c = Client::new(HttpTransport::new(config).unwrap());
            let err = c.initialize().await.unwrap_err();
            assert!(
                matches!(&err, Error::HttpProtocol(HttpError::Redirect { status: 307, url, reason: RedirectRefused::CrossOrigin { origin } }) if *url == srv.url("/mcp") && *origin == elsewhere.origin),
                "{err:?}"
            );
            let text = err.to_string();
            assert!(
                text.contains(&elsewhere.origin) && !text.contains("SECRET"),
                "{text}"
            );
        });
        assert_eq!(srv.log().len(), 2, "the probe and initialize, each once");
        assert!(
            elsewhere.log().is_empty(),
            "nothing reached the other origin (follows: {follows})"
        );
    }
}

#[test]
fn a_301_302_or_303_to_a_post_is_an_error_saying_why() {
    for status in [301, 302, 303] {
        let srv = legacy_at("/mcp/", move |r| {
            (r.target == "/mcp").then(|| tiny::Resp::redirect(status, "/mcp/"))
        });
        smol::block_on(async {
            let c = legacy_client(HttpTransportConfig::new(srv.url("/mcp")));
            let err = c.initialize().await.unwrap_err();
            assert!(
                matches!(&err, Error::HttpProtocol(HttpError::Redirect { status: s, reason: RedirectRefused::ChangesMethod { method: "POST", .. }, .. }) if *s == status),
                "{status}: {err:?}"
            );
            assert!(
                err.to_string().contains("would turn the POST into a GET"),
                "{err}"
            );
        });
        let targets: Vec<String> = srv.log().iter().map(|r| r.target.clone()).collect();
        assert_eq!(targets, ["/mcp"], "{status}: not followed");
    }
}

#[test]
fn a_redirect_loop_and_too_many_hops_are_errors() {
    // /a -> /b -> /a.
    let srv = tiny::Responder::start(|r| {
        let next = if r.target == "/a" { "/b" } else { "/a" };
        tiny::Resp::redirect(307, next)
    });
    smol::block_on(async {
        let c = legacy_client(HttpTransportConfig::new(srv.url("/a")));
        let err = c.initialize().await.unwrap_err();
        assert!(
            matches!(&err, Error::HttpProtocol(HttpError::Redirect { reason: RedirectRefused::Loop { url }, .. }) if url.ends_with("/a")),
            "{err:?}"
        );
    });
    assert_eq!(srv.log().len(), 2, "/a and /b, once each");
    // /hop0 -> /hop1 -> … without end: five are followed.
    let srv = tiny::Responder::start(|r| {
        let n: u32 = r.target.trim_start_matches("/hop").parse().unwrap_or(0);
        tiny::Resp::redirect(308, &format!("/hop{}", n + 1))
    });
    smol::block_on(async {
        let c = legacy_client(HttpTransportConfig::new(srv.url("/hop0")));
        let err = c.initialize().await.unwrap_err();
        assert!(
            matches!(
                &err,
                Error::HttpProtocol(HttpError::Redirect {
                    reason: RedirectRefused::TooMany { limit: 5 },
                    ..
                })
            ),
            "{err:?}"
        );
    });
    let targets: Vec<String> = srv.log().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        targets,
        ["/hop0", "/hop1", "/hop2", "/hop3", "/hop4", "/hop5"]
    );
}

/// A refused connection is said in words, once — no curl code (`[7]`), no isahc type name — and
/// isahc's error (curl's under it) is still the cause, for programs.
#[test]
fn a_refused_connection_is_said_in_words_and_keeps_its_cause() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    smol::block_on(async {
        let e = match mcp_connect::connect_http(
            HttpTransportConfig::new(&url),
            ClientConfig::default(),
        )
        .await
        {
            Err(e) => e,
            Ok(_) => panic!("connected to a closed port"),
        };
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert_eq!(
            e.chain(),
            format!(
                "transport error: POST {url}: could not connect to 127.0.0.1:{port}: connection refused"
            )
        );
        let io = std::error::Error::source(&e).unwrap();
        let mut causes = Vec::new();
        let mut cause = Some(io);
        while let Some(c) = cause {
            causes.push(c);
            cause = c.source();
        }
        assert!(causes.iter().any(|c| c.is::<isahc::Error>()), "{causes:?}");
        assert_eq!(
            e.chain().matches("connection refused").count(),
            1,
            "{}",
            e.chain()
        );
    });
}

/// A server no connection can be made to is no era question: the era probe's failure ends the
/// opening, and no `initialize` follows it into the same failure. The listener accepts each
/// connection and closes it at once, so every TLS handshake fails (a connection that cannot be
/// made, as curl says it): it counts the attempts.
#[test]
fn a_connection_that_cannot_be_made_is_tried_once() {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen on 127.0.0.1");
    let port = listener.local_addr().unwrap().port();
    let counter = std::thread::spawn(move || {
        let mut accepted = 0;
        // Until the test's own last connection, told by the byte it sends (`!`; curl's
        // connections send a TLS ClientHello, the transport's "why" connection nothing). Told
        // by what it says, not by when it comes: a connection may wait in the backlog.
        for stream in listener.incoming() {
            let mut stream = stream.expect("accepted");
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let mut first = [0u8; 1];
            if matches!(stream.read(&mut first), Ok(1)) && first[0] == b'!' {
                break;
            }
            accepted += 1;
        }
        accepted
    });
    let url = format!("https://127.0.0.1:{port}/mcp");
    let connected = smol::block_on(mcp_connect::connect_http(
        HttpTransportConfig::new(&url),
        ClientConfig::default(),
    ));
    let Err(e) = connected else {
        panic!("no TLS server listens there")
    };
    TcpStream::connect(("127.0.0.1", port))
        .and_then(|mut last| last.write_all(b"!"))
        .expect("the listener is there");
    let accepted = counter.join().unwrap();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    assert_eq!(
        e.chain(),
        format!("transport error: POST {url}: could not connect to 127.0.0.1:{port}")
    );
    // The probe's POST, and the transport's own connection that asks the system why curl could
    // not connect (`sending_failed`); an `initialize` after it would make two more.
    assert_eq!(accepted, 2, "{e}");
}

/// A client's limit on one message is the transport's too: over HTTP, a JSON body or an SSE
/// event longer than the session's `frame_limit` is refused by the transport at that limit (it
/// holds no more), not at the transport's own 64 MiB; a result within it still arrives.
#[test]
fn the_sessions_frame_limit_bounds_what_the_transport_holds() {
    for json in [true, false] {
        let srv = start(Behaviour {
            json,
            ..Behaviour::default()
        });
        let transport = HttpTransport::new(HttpTransportConfig::new(&srv.url)).unwrap();
        let mut config = ClientConfig::default();
        config.session.frame_limit = 64 * 1024;
        let c = Client::with_config(transport, config);
        smol::block_on(async {
            c.initialize().await.unwrap();
            let small = c.call_tool("big", json!({"bytes": 1000})).await.unwrap();
            assert_eq!(small.text().len(), 1000);
            let e = c
                .call_tool("big", json!({"bytes": 1_000_000}))
                .await
                .unwrap_err();
            // Read up to one byte past the limit, then refused: not the million bytes sent.
            match e {
                Error::Request(mcp_connect::proto::RequestError::TooLarge { len, limit }) => {
                    assert_eq!(limit, 64 * 1024, "json {json}");
                    assert!(len <= limit as u64 + 1, "json {json}: {len} bytes read");
                }
                other => panic!("json {json}: {other:?}"),
            }
            // The client goes on.
            let again = c.call_tool("big", json!({"bytes": 10})).await.unwrap();
            assert_eq!(again.text().len(), 10);
            c.close().await.unwrap();
        });
    }
}
