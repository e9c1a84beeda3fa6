//! The client against real MCP servers over Streamable HTTP: the reference TypeScript
//! server-everything (`streamableHttp`: SSE with a priming event, stateful) and the official Python
//! SDK (drivers/tests/peers/fastmcp_server.py: SSE, JSON responses, stateless), plus the `mcp-client`
//! example's `--url` mode end to end.
//!
//! The peers come from `.ci/install-peers` (see drivers/tests/peers/PEERS.md). Each test prints
//! `skipped: …` and passes when its peer is missing, and fails instead under `CI=true`. The
//! servers listen on 127.0.0.1 only; each runs in its own process group, killed and reaped at the
//! end of the test (also on panic), and the test checks that the group is gone.

use mcp_connect::proto::{Era, EraChoice};
use mcp_connect::{Client, ClientConfig, HttpTransport, HttpTransportConfig};
use mcp_testkit::{cli_bin, peer_bin, run_within, HttpPeer};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::Command;
use std::time::{Duration, Instant};

async fn connect(peer: &HttpPeer) -> Client {
    connect_in(peer, EraChoice::Auto).await
}

async fn connect_in(peer: &HttpPeer, era: EraChoice) -> Client {
    let mut config = ClientConfig::default();
    config.session.era = era;
    let c = Client::with_config(
        HttpTransport::new(HttpTransportConfig::new(peer.url.as_str())).unwrap(),
        config,
    );
    let started = Instant::now();
    if let Err(e) = c.initialize().await {
        panic!(
            "initialize with {} failed after {:?}: {e}\nserver output:\n{}",
            peer.url,
            started.elapsed(),
            peer.output()
        );
    }
    c
}

fn names(tools: &[mcp_connect::Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// The status of a one-off `POST` of `tools/list` carrying `session`: how the server treats a
/// session id once the client closed it.
fn status_with_session(url: &str, session: &str) -> u16 {
    let rest = url.strip_prefix("http://").expect("http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let body = r#"{"jsonrpc":"2.0","id":99,"method":"tools/list","params":{}}"#;
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut status_line = String::new();
    BufReader::new(stream)
        .read_line(&mut status_line)
        .expect("status line");
    status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"))
}

/// The image placeholder the client puts in place of base64 data.
fn assert_image_placeholder(text: &str) {
    assert!(
        text.lines().any(|l| l.starts_with("[image: image/png, ")),
        "no image placeholder in {text:?}"
    );
    assert!(!text.contains("iVBOR"), "base64 leaked into {text:?}");
}

#[test]
fn server_everything_streamable_http() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    let peer = HttpPeer::everything(&bin);
    let session = smol::block_on(async {
        let c = connect(&peer).await;
        let info = c.server_info().expect("server info");
        assert!(
            info.name.contains("everything"),
            "server name {:?}",
            info.name
        );
        let session = c
            .transport()
            .session_id()
            .expect("server-everything assigns a session id");
        assert!(!session.is_empty());

        let tools = c.list_tools().await.unwrap();
        let listed = names(&tools);
        for expected in ["echo", "get-sum", "get-tiny-image"] {
            assert!(listed.contains(&expected), "{expected} missing: {listed:?}");
        }
        assert!(listed.len() >= 10, "{listed:?}");

        let r = c
            .call_tool("echo", json!({"message": "hello over http"}))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert_eq!(r.text(), "Echo: hello over http");

        let r = c
            .call_tool("get-sum", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert!(r.text().contains('5'), "{}", r.text());

        let r = c.call_tool("get-tiny-image", json!({})).await.unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert_image_placeholder(&r.text());

        // Still the session it started with: nothing was renewed along the way.
        assert_eq!(
            c.transport().session_id().as_deref(),
            Some(session.as_str())
        );
        c.close().await.expect("close (DELETE)");
        session
    });
    // The DELETE ended the session: this server answers a deleted session's id with 400.
    assert_eq!(
        status_with_session(&peer.url, &session),
        400,
        "session {session} still usable after close; server output:\n{}",
        peer.output()
    );
    peer.stop();
}

/// The Python SDK server in one mode and era: tools listed and called; the era as asked (`Auto`
/// must find the modern one: mcp 2.3.0 speaks 2026-07-28), the session as the mode says.
fn python_sdk(options: &[&str], era: EraChoice, stateful: bool) {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let peer = HttpPeer::python(&python, options);
    let session = smol::block_on(async {
        let c = connect_in(&peer, era).await;
        assert_eq!(
            c.server_info().expect("server info").name,
            "fastmcp-test-server"
        );
        let init = c.initialize_result().expect("opened");
        if era == EraChoice::Legacy {
            assert_eq!(c.era(), Some(Era::Legacy));
            assert_eq!(init.protocol_version, "2025-11-25");
        } else {
            assert_eq!(
                c.era(),
                Some(Era::Modern),
                "the SDK server speaks 2026-07-28"
            );
            assert_eq!(init.protocol_version, "2026-07-28");
            let discover = c.discover_result().expect("a discover result");
            assert!(discover
                .supported_versions
                .iter()
                .any(|v| v == "2026-07-28"));
        }
        let session = c.transport().session_id();
        // The modern era has no sessions.
        let stateful = stateful && era == EraChoice::Legacy;
        if stateful {
            let id = session.as_deref().expect("a session id");
            assert!(
                id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
                "{id:?}"
            );
        } else {
            assert_eq!(session, None, "a stateless server assigns no session");
        }

        let tools = c.list_tools().await.unwrap();
        let mut listed = names(&tools);
        listed.sort_unstable();
        assert_eq!(listed, ["add", "confirm", "count", "echo", "fail", "image"]);

        let r = c.call_tool("add", json!({"a": 2, "b": 3})).await.unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert_eq!(r.text(), "5");
        assert_eq!(r.structured_content, Some(json!({"result": 5})));

        let r = c
            .call_tool("echo", json!({"text": "héllo, wörld"}))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert_eq!(r.text(), "héllo, wörld");

        let r = c
            .call_tool("fail", json!({"message": "boom, on purpose"}))
            .await
            .unwrap();
        assert!(r.is_error, "{}", r.text());
        assert!(r.text().contains("boom, on purpose"), "{}", r.text());

        // DELETE for a session; a stateless server has none (and would answer 405).
        c.close().await.expect("close");
        session
    });
    if let Some(session) = session {
        // The SDK answers an unknown (here: deleted) session with 404.
        assert_eq!(
            status_with_session(&peer.url, &session),
            404,
            "session {session} still usable after close; server output:\n{}",
            peer.output()
        );
    }
    peer.stop();
}

#[test]
fn python_sdk_sse() {
    python_sdk(&[], EraChoice::Auto, true);
}

#[test]
fn python_sdk_json_response() {
    python_sdk(&["--json-response"], EraChoice::Auto, true);
}

#[test]
fn python_sdk_sse_forced_legacy() {
    python_sdk(&[], EraChoice::Legacy, true);
}

#[test]
fn python_sdk_json_response_forced_legacy() {
    python_sdk(&["--json-response"], EraChoice::Legacy, true);
}

#[test]
fn python_sdk_stateless() {
    python_sdk(&["--stateless"], EraChoice::Auto, false);
}

#[test]
fn python_sdk_stateless_forced_legacy() {
    python_sdk(&["--stateless"], EraChoice::Legacy, false);
}

/// `mcp-client --url`: the CLI over Streamable HTTP against the Python SDK server.
#[test]
fn mcp_client_cli_url_mode() {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let cli = cli_bin();
    let peer = HttpPeer::python(&python, &[]);
    let run = |args: &[&str]| {
        run_within(
            Command::new(&cli)
                .args(["--url", peer.url.as_str()])
                .args(args),
            Duration::from_secs(60),
        )
    };

    let done = run(&["--call", "add", "--args", r#"{"a":2,"b":3}"#, "--json"]);
    assert_eq!(done.status.code(), Some(0), "{done:?}");
    let out: Value = serde_json::from_str(done.stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {done:?}"));
    assert_eq!(
        out,
        json!({"text": "5", "isError": false, "structuredContent": {"result": 5}}),
        "{done:?}"
    );

    let done = run(&["--call", "fail", "--args", r#"{"message":"cli boom"}"#]);
    assert_eq!(done.status.code(), Some(2), "isError exits 2: {done:?}");

    // --info: the probe found the modern era; forced legacy speaks 2025-11-25.
    for (era, version) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let done = run(&["--info", "--json", "--era", era]);
        assert_eq!(done.status.code(), Some(0), "{done:?}");
        let info: Value = serde_json::from_str(done.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {done:?}"));
        assert_eq!(info["protocolVersion"], version, "{info}");
        assert_eq!(
            info["era"],
            if era == "auto" { "modern" } else { "legacy" },
            "{info}"
        );
        assert_eq!(info["serverInfo"]["name"], "fastmcp-test-server", "{info}");
    }
    assert!(done.stdout.contains("cli boom"), "{done:?}");

    let done = run(&["--json"]);
    assert_eq!(done.status.code(), Some(0), "{done:?}");
    let tools: Value = serde_json::from_str(done.stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not a JSON array ({e}): {done:?}"));
    let mut listed: Vec<&str> = tools
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    listed.sort_unstable();
    assert_eq!(
        listed,
        ["add", "confirm", "count", "echo", "fail", "image"],
        "{done:?}"
    );

    peer.stop();
}
