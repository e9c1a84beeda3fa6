//! The stdio driver and the async client against real child processes: the example's serve mode,
//! made to misbehave on purpose, and shell wrappers around it. Every test checks that no process
//! is left behind.

mod common;

use common::{close_and_check, group_alive, pid_alive, serve_bin, wait_until};
use mcp_client::proto::Config;
use mcp_client::{
    as_tools, AgentTool, Client, ClientConfig, Error, Request, StderrMode, StdioConfig,
    StdioTransport, ToolError,
};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn serve(behave: &[&str]) -> StdioConfig {
    let mut config = StdioConfig::new(serve_bin()).args(["--serve"]);
    if !behave.is_empty() {
        config = config.args(["--behave", &behave.join(",")]);
    }
    config
}

/// A config whose stderr lines are collected for the test to inspect.
fn collecting(config: StdioConfig) -> (StdioConfig, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let config = config.stderr(StderrMode::Callback(Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_owned())
    })));
    (config, lines)
}

/// The hanging server logged `notifications/cancelled` for request 1, and the client still works.
async fn cancelled_and_still_usable(client: Client<StdioTransport>, stderr: &Mutex<Vec<String>>) {
    assert!(
        wait_until(Duration::from_secs(5), || stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l == "serve: cancelled 1")),
        "the server never received notifications/cancelled: {:?}",
        stderr.lock().unwrap()
    );
    // Still usable: the server answers pings.
    client.request(Request::new("ping", None)).await.unwrap();
    close_and_check(client).await;
}

fn with_timeout(timeout: Duration) -> ClientConfig {
    ClientConfig {
        session: Config {
            default_timeout: Some(timeout),
            ..Config::default()
        },
        ..ClientConfig::default()
    }
}

async fn connect(config: StdioConfig) -> Client<StdioTransport> {
    let client = Client::new(StdioTransport::spawn(config).expect("spawn"));
    client.initialize().await.expect("initialize");
    client
}

#[test]
fn lists_and_calls_tools() {
    smol::block_on(async {
        let client = connect(serve(&[])).await;
        let info = client.server_info().unwrap();
        assert_eq!(info.name, "mcp-client-serve");
        let tools = client.list_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["echo", "add", "fail", "image", "big", "slow"]);
        let r = client
            .call_tool("add", json!({"a": 20, "b": 22}))
            .await
            .unwrap();
        assert_eq!(r.text(), "42");
        assert_eq!(r.structured_content, Some(json!({"sum": 42})));
        assert!(!r.is_error);
        let r = client
            .call_tool("fail", json!({"message": "bad input"}))
            .await
            .unwrap();
        assert!(r.is_error);
        assert_eq!(r.text(), "bad input");
        let err = client.call_tool("nope", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, Error::Protocol(e) if e.code == -32602 && e.message == "Unknown tool: nope"),
            "{err:?}"
        );
        close_and_check(client).await;
    })
}

#[test]
fn bridged_tools_share_one_client_and_run_concurrently() {
    smol::block_on(async {
        let client = Arc::new(connect(serve(&[])).await);
        let tools = as_tools(&client).await.unwrap();
        let tool = |name: &str| tools.iter().find(|t| t.name() == name).unwrap();
        assert_eq!(
            tool("echo").description(),
            "Echoes its text back.\nSecond line of the description."
        );
        assert_eq!(
            tool("echo").input_schema().get(),
            r#"{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}"#
        );
        assert_eq!(tool("image").input_schema().get(), r#"{"type":"object"}"#);
        let (a, b, c) = futures_lite_zip3(
            tool("slow").call(json!({"ms": 200})),
            tool("echo").call(json!({"text": "hi"})),
            tool("fail").call(json!({"message": "try again with b"})),
        )
        .await;
        assert_eq!(a.unwrap(), "done");
        assert_eq!(b.unwrap(), "hi");
        assert!(matches!(c, Err(ToolError::Retry(m)) if m == "try again with b"));
        let image = tool("image").call(json!({})).await.unwrap();
        assert_eq!(image, "[image: image/png, 70 bytes]");
        // An empty isError result still says which tool failed.
        let err = tool("fail").call(json!({})).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::Retry(m) if m == "tool fail failed"),
            "{err:?}"
        );
        drop(tools);
        let client = Arc::try_unwrap(client).ok().expect("tools dropped");
        close_and_check(client).await;
    })
}

async fn futures_lite_zip3<
    A: std::future::Future,
    B: std::future::Future,
    C: std::future::Future,
>(
    a: A,
    b: B,
    c: C,
) -> (A::Output, B::Output, C::Output) {
    let (ab, c) = smol::future::zip(smol::future::zip(a, b), c).await;
    (ab.0, ab.1, c)
}

#[test]
fn server_crash_mid_call_fails_at_once_with_status_and_stderr() {
    smol::block_on(async {
        let client = connect(serve(&["crash-on-call"])).await;
        let pid = client.transport().pid();
        let started = Instant::now();
        let err = client
            .call_tool("echo", json!({"text": "x"}))
            .await
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
        let Error::ServerExited { status, stderr } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(status.and_then(|s| s.code()), Some(3));
        assert!(
            stderr.contains("crashing mid-call, on purpose"),
            "{stderr:?}"
        );
        let shown = err.to_string();
        assert!(
            shown.contains("exit status: 3") && shown.contains("crashing mid-call"),
            "{shown}"
        );
        // Later calls fail the same way, at once.
        let again = client.call_tool("echo", json!({})).await.unwrap_err();
        assert!(matches!(again, Error::ServerExited { .. }), "{again:?}");
        client.close().await.unwrap();
        assert!(!pid_alive(pid));
    })
}

#[test]
fn exit_before_handshake_is_a_clear_error() {
    smol::block_on(async {
        let client = Client::new(StdioTransport::spawn(serve(&["exit-before-handshake"])).unwrap());
        let err = client.initialize().await.unwrap_err();
        let Error::ServerExited { status, stderr } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(status.and_then(|s| s.code()), Some(4));
        assert!(
            stderr.contains("exiting before the handshake"),
            "{stderr:?}"
        );
        close_and_check(client).await;
    })
}

#[test]
fn timeout_cancels_on_the_server_and_leaves_the_client_usable() {
    smol::block_on(async {
        let (config, stderr) = collecting(serve(&["hang"]));
        let client = Client::with_config(
            StdioTransport::spawn(config).unwrap(),
            with_timeout(Duration::from_millis(300)),
        );
        client.initialize().await.unwrap();
        let started = Instant::now();
        let err = client
            .call_tool("echo", json!({"text": "x"}))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::Timeout(d) if d == Duration::from_millis(300)),
            "{err:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(300));
        cancelled_and_still_usable(client, &stderr).await;
    })
}

#[test]
fn dropping_a_call_future_sends_cancelled() {
    smol::block_on(async {
        let (config, stderr) = collecting(serve(&["hang"]));
        let client = connect(config).await;
        let call = client.call_tool("echo", json!({"text": "x"}));
        let gave_up = smol::future::or(async { Some(call.await) }, async {
            smol::Timer::after(Duration::from_millis(100)).await;
            None
        })
        .await;
        assert!(gave_up.is_none());
        cancelled_and_still_usable(client, &stderr).await;
    })
}

#[test]
fn twenty_megabytes_of_stderr_do_not_block_the_server() {
    smol::block_on(async {
        let client = connect(serve(&["stderr-flood"])).await;
        let r = client
            .call_tool("echo", json!({"text": "after the flood"}))
            .await
            .unwrap();
        assert_eq!(r.text(), "after the flood");
        let tail = client.transport().stderr_tail();
        assert!(tail.lines().count() <= 40, "the tail is bounded");
        assert!(
            wait_until(Duration::from_secs(5), || client
                .transport()
                .stderr_tail()
                .contains("serve: flooded")),
            "{tail}"
        );
        close_and_check(client).await;
    })
}

#[test]
fn junk_lines_on_stdout_are_skipped() {
    smol::block_on(async {
        let client = connect(serve(&["junk"])).await;
        let r = client
            .call_tool("echo", json!({"text": "clean"}))
            .await
            .unwrap();
        assert_eq!(r.text(), "clean");
        assert_eq!(
            client.stats().messages_ignored,
            4,
            "three junk lines and one non-JSON-RPC object"
        );
        close_and_check(client).await;
    })
}

#[test]
fn ping_and_unknown_request_mid_call_are_answered() {
    smol::block_on(async {
        let client = connect(serve(&["ping-first"])).await;
        let r = client
            .call_tool("echo", json!({"text": "x"}))
            .await
            .unwrap();
        let text = r.text();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("x"));
        let ping: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(
            ping,
            json!({"jsonrpc": "2.0", "id": "srv-ping", "result": {}})
        );
        let rejected: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(rejected["id"], 77);
        assert_eq!(rejected["error"]["code"], -32601);
        close_and_check(client).await;
    })
}

#[test]
fn fifty_megabyte_result_arrives_whole() {
    smol::block_on(async {
        let client = connect(serve(&[])).await;
        let r = client
            .call_tool("big", json!({"bytes": 50_000_000}))
            .await
            .unwrap();
        let text = r.text();
        assert_eq!(text.len(), 50_000_000);
        assert!(text.bytes().all(|b| b == b'x'));
        close_and_check(client).await;
    })
}

#[test]
fn result_over_the_limit_fails_at_once_and_the_client_goes_on() {
    smol::block_on(async {
        let config = ClientConfig {
            session: Config {
                frame_limit: 1024 * 1024,
                ..Config::default()
            },
            ..ClientConfig::default()
        };
        let client = Client::with_config(StdioTransport::spawn(serve(&[])).unwrap(), config);
        client.initialize().await.unwrap();
        let started = Instant::now();
        let err = client
            .call_tool("big", json!({"bytes": 5_000_000}))
            .await
            .unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Request(mcp_client::proto::RequestError::TooLarge { limit: 1048576, .. })
            ),
            "{err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(
            client
                .call_tool("echo", json!({"text": "still here"}))
                .await
                .unwrap()
                .text(),
            "still here"
        );
        close_and_check(client).await;
    })
}

#[test]
fn a_server_ignoring_sigterm_is_killed() {
    smol::block_on(async {
        let script = format!(
            "trap '' TERM; exec '{}' --serve --behave ignore-eof",
            serve_bin().display()
        );
        let mut config = StdioConfig::new("sh").args(["-c", &script]);
        config.close_grace = Duration::from_millis(200);
        config.term_grace = Duration::from_millis(200);
        let client = connect(config).await;
        let started = Instant::now();
        close_and_check(client).await;
        assert!(
            started.elapsed() >= Duration::from_millis(400),
            "SIGKILL came only after both graces"
        );
    })
}

#[test]
fn a_grandchild_is_ended_with_its_group() {
    smol::block_on(async {
        let script = format!("sleep 300 & exec '{}' --serve", serve_bin().display());
        let client = connect(StdioConfig::new("sh").args(["-c", &script])).await;
        let pid = client.transport().pid();
        assert!(group_alive(pid));
        close_and_check(client).await;
    })
}

#[test]
fn dropping_the_client_without_close_ends_the_server() {
    let pid = smol::block_on(async {
        let script = format!("sleep 300 & exec '{}' --serve", serve_bin().display());
        let client = connect(StdioConfig::new("sh").args(["-c", &script])).await;
        client.transport().pid()
    });
    assert!(
        wait_until(Duration::from_secs(10), || !pid_alive(pid)
            && !group_alive(pid)),
        "server {pid} left behind"
    );
}

#[test]
fn environment_and_directory_are_applied() {
    smol::block_on(async {
        let dir = std::env::temp_dir();
        let script = format!(
            "echo \"FOO=$FOO HOME_SET=${{HOME:+yes}} PWD=$(pwd)\" >&2; exec '{}' --serve",
            serve_bin().display()
        );
        let config = StdioConfig::new("sh")
            .args(["-c", &script])
            .env("FOO", "bar baz")
            .dir(&dir);
        let client = connect(config).await;
        let expected = format!(
            "FOO=bar baz HOME_SET=yes PWD={}",
            dir.canonicalize().unwrap().display()
        );
        assert!(
            wait_until(Duration::from_secs(5), || client
                .transport()
                .stderr_tail()
                .contains(&expected)),
            "{}",
            client.transport().stderr_tail()
        );
        close_and_check(client).await;
    })
}

#[test]
fn a_missing_command_is_a_typed_spawn_error() {
    let err = StdioTransport::spawn(StdioConfig::new("/nonexistent/mcp-server")).unwrap_err();
    let Error::Io { context, source } = &err else {
        panic!("{err:?}")
    };
    assert!(context.contains("/nonexistent/mcp-server"));
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    assert!(
        std::error::Error::source(&err).is_some(),
        "the cause is reachable"
    );
}

#[test]
fn calls_before_initialize_are_usage_errors() {
    smol::block_on(async {
        let client = Client::new(StdioTransport::spawn(serve(&[])).unwrap());
        let err = client.call_tool("echo", json!({})).await.unwrap_err();
        assert!(
            matches!(err, Error::Usage(mcp_client::proto::UsageError::NotReady)),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "initialize first: the session is not ready"
        );
        close_and_check(client).await;
    })
}

#[tokio::test]
async fn works_from_inside_tokio() {
    let client = Client::new(StdioTransport::spawn(serve(&[])).unwrap());
    client.initialize().await.unwrap();
    let r = client
        .call_tool("echo", json!({"text": "from tokio"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "from tokio");
    close_and_check(client).await;
}

#[test]
fn with_the_idle_reader_off_nothing_reads_between_calls() {
    smol::block_on(async {
        let (config, stderr) = collecting(serve(&["ping-idle"]));
        let client = Client::with_config(
            StdioTransport::spawn(config).unwrap(),
            ClientConfig {
                idle_reader: false,
                ..ClientConfig::default()
            },
        );
        client.initialize().await.unwrap();
        client
            .call_tool("echo", json!({"text": "1"}))
            .await
            .unwrap();
        let ponged = || {
            stderr
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.starts_with("serve: idle pong"))
        };
        // Without the idle reader, the server's ping waits for the next call…
        smol::Timer::after(Duration::from_millis(500)).await;
        assert!(!ponged(), "nothing reads between calls");
        client
            .call_tool("echo", json!({"text": "2"}))
            .await
            .unwrap();
        assert!(
            wait_until(Duration::from_secs(5), ponged),
            "answered at the next call"
        );
        close_and_check(client).await;
    });
}

#[test]
fn by_default_the_server_is_answered_between_calls() {
    smol::block_on(async {
        let (config, stderr) = collecting(serve(&["ping-idle"]));
        let client = connect(config).await;
        for i in 0..3 {
            let text = format!("call {i}");
            let started = Instant::now();
            assert_eq!(
                client
                    .call_tool("echo", json!({ "text": text }))
                    .await
                    .unwrap()
                    .text(),
                text
            );
            let pongs = i + 1;
            // The server pings 100 ms after each answer; nobody calls meanwhile.
            assert!(
                wait_until(Duration::from_secs(2), || {
                    stderr
                        .lock()
                        .unwrap()
                        .iter()
                        .filter(|l| l.starts_with("serve: idle pong"))
                        .count()
                        == pongs
                }),
                "the idle reader answered ping {pongs} ({:?} after the call): {:?}",
                started.elapsed(),
                stderr.lock().unwrap()
            );
        }
        let pong = stderr
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.starts_with("serve: idle pong"))
            .cloned()
            .unwrap();
        assert_eq!(
            pong,
            r#"serve: idle pong {"jsonrpc":"2.0","id":"idle-ping","result":{}}"#
        );
        assert!(
            !stderr
                .lock()
                .unwrap()
                .iter()
                .any(|l| l == "serve: no idle pong before the next message"),
            "every ping was answered before the next call"
        );
        close_and_check(client).await;
    });
}
