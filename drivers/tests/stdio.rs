//! The stdio driver and the async client against real child processes: the test kit's stdio server,
//! made to misbehave on purpose, and shell wrappers around it. Every test checks that no process
//! is left behind.

use mcp_connect::proto::Config;
use mcp_connect::{
    as_tools, AgentTool, Client, ClientConfig, Error, Request, StderrMode, StdioConfig,
    StdioTransport, ToolError,
};
use mcp_testkit::{close_and_check, group_alive, pid_alive, serve, serve_bin, wait_until};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
async fn cancelled_and_still_usable(client: Client, stderr: &Mutex<Vec<String>>) {
    assert!(
        wait_until(Duration::from_secs(30), || stderr
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
            era: mcp_connect::proto::EraChoice::Legacy,
            ..Config::default()
        },
        ..ClientConfig::default()
    }
}

/// A client in the legacy era: these tests are about the transport, and many of their servers
/// are shell scripts that answer the handshake line by line (the era probe has its own tests, in
/// tests/eras.rs).
async fn connect(config: StdioConfig) -> Client {
    connect_kept(config).await.0
}

/// [`connect`], keeping a handle on the transport for what only it tells (its backlog).
async fn connect_kept(config: StdioConfig) -> (Client, Arc<StdioTransport>) {
    let settings = ClientConfig {
        session: mcp_connect::proto::Config {
            era: mcp_connect::proto::EraChoice::Legacy,
            ..ClientConfig::default().session
        },
        ..ClientConfig::default()
    };
    let transport = Arc::new(StdioTransport::spawn(config).expect("spawn"));
    let client = Client::with_config(transport.clone(), settings);
    client.initialize().await.expect("initialize");
    (client, transport)
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
        let client = connect(serve(&[])).await;
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
        let pid = client.transport().pid().expect("a child process");
        let started = Instant::now();
        let err = client
            .call_tool("echo", json!({"text": "x"}))
            .await
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(15),
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
        let tail = client.transport().stderr_tail().unwrap_or_default();
        assert!(tail.lines().count() <= 40, "the tail is bounded");
        assert!(
            wait_until(Duration::from_secs(30), || client
                .transport()
                .stderr_tail()
                .unwrap_or_default()
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
                Error::Request(mcp_connect::proto::RequestError::TooLarge { limit: 1048576, .. })
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
            "trap '' TERM; exec '{}' --behave ignore-eof",
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
        let script = format!("sleep 300 & exec '{}'", serve_bin().display());
        let client = connect(StdioConfig::new("sh").args(["-c", &script])).await;
        let pid = client.transport().pid().expect("a child process");
        assert!(group_alive(pid));
        close_and_check(client).await;
    })
}

#[test]
fn dropping_the_client_without_close_ends_the_server() {
    let pid = smol::block_on(async {
        let script = format!("sleep 300 & exec '{}'", serve_bin().display());
        let client = connect(StdioConfig::new("sh").args(["-c", &script])).await;
        client.transport().pid().expect("a child process")
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
            "echo \"FOO=$FOO HOME_SET=${{HOME:+yes}} PWD=$(pwd)\" >&2; exec '{}'",
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
            wait_until(Duration::from_secs(30), || client
                .transport()
                .stderr_tail()
                .unwrap_or_default()
                .contains(&expected)),
            "{}",
            client.transport().stderr_tail().unwrap_or_default()
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
            matches!(err, Error::Usage(mcp_connect::proto::UsageError::NotReady)),
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
            wait_until(Duration::from_secs(30), ponged),
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
                wait_until(Duration::from_secs(30), || {
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

/// The `initialize` answer a shell-script server prints (the client's first request has id 0).
const INIT_ANSWER: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}"#;

/// A server in `sh`: answers `initialize`, then runs `then`.
fn sh_server(then: &str) -> StdioConfig {
    StdioConfig::new("sh").args(["-c", &format!("read line; echo '{INIT_ANSWER}'; {then}")])
}

fn proc_state(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().next().map(str::to_owned)
}

#[test]
fn a_server_that_stops_reading_cannot_grow_the_backlog_and_then_fails_it_clearly() {
    smol::block_on(async {
        // After the handshake the server never reads again (its stdin stays open).
        let mut config = sh_server("sleep 30");
        config.max_backlog = 1024 * 1024;
        let (client, transport) = connect_kept(config).await;
        let big = "x".repeat(256 * 1024);
        // Requests that time out before any of their bytes were written leave the queue.
        for _ in 0..200 {
            let r = client
                .request(
                    Request::call_tool("echo", json!({ "text": big }))
                        .timeout(Duration::from_millis(1)),
                )
                .await;
            assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
        }
        let backlog = transport.backlog_len();
        assert!(
            backlog < 512 * 1024,
            "200 timed-out 256 KiB calls left {backlog} bytes queued"
        );
        // Calls that do not give up fill the queue to its cap: then every call fails at once,
        // saying why.
        let started = Instant::now();
        let ex = smol::LocalExecutor::new();
        let calls: Vec<_> = (0..8)
            .map(|_| ex.spawn(client.call_tool("echo", json!({ "text": big }))))
            .collect();
        let results = ex
            .run(async {
                let mut all = Vec::new();
                for call in calls {
                    all.push(call.await);
                }
                all
            })
            .await;
        drop(ex);
        for r in results {
            let err = r.unwrap_err();
            assert!(
                err.to_string()
                    .contains("the server stopped reading its input"),
                "{err}"
            );
        }
        assert!(started.elapsed() < Duration::from_secs(15));
        assert_eq!(transport.backlog_len(), 0, "the backlog is dropped");
        let err = client.call_tool("echo", json!({})).await.unwrap_err();
        assert!(err.to_string().contains("stopped reading"), "{err}");
        close_and_check(client).await;
    });
}

#[test]
fn a_server_that_closes_its_stdin_fails_later_calls_at_once() {
    smol::block_on(async {
        // It closes its stdin right after reading `initialize` and before answering it, so
        // nothing the client sends later can be sitting in the pipe when it closes.
        let script = format!("read line; exec 0<&-; echo '{INIT_ANSWER}'; sleep 30");
        let client = connect(StdioConfig::new("sh").args(["-c", &script])).await;
        for _ in 0..2 {
            let started = Instant::now();
            let err = client
                .call_tool("echo", json!({"text": "anyone?"}))
                .await
                .unwrap_err();
            assert!(
                err.to_string()
                    .contains("the server stopped reading its input"),
                "{err}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "failed after {:?}, not at once",
                started.elapsed()
            );
        }
        close_and_check(client).await;
    });
}

#[test]
fn the_crashed_servers_pid_stays_reserved_so_close_signals_no_one_else() {
    smol::block_on(async {
        let client = connect(serve(&["crash-on-call"])).await;
        let pid = client.transport().pid().expect("a child process");
        let err = client.call_tool("echo", json!({})).await.unwrap_err();
        assert!(matches!(err, Error::ServerExited { .. }), "{err:?}");
        // Its exit was seen without reaping it: the zombie keeps the pid (and the group id).
        assert_eq!(proc_state(pid).as_deref(), Some("Z"));
        // Try to have an unrelated process group leader get that very pid.
        let wrote = std::fs::write("/proc/sys/kernel/ns_last_pid", format!("{}", pid - 1)).is_ok();
        let mut other = {
            use std::os::unix::process::CommandExt;
            std::process::Command::new("sleep")
                .arg("30")
                .process_group(0)
                .spawn()
                .unwrap()
        };
        if wrote {
            assert_ne!(other.id(), pid, "the dead server's pid was given away");
        } else {
            eprintln!(
                "note: /proc/sys/kernel/ns_last_pid is not writable here; pid reuse not forced"
            );
        }
        client.close().await.unwrap();
        assert_eq!(proc_state(pid), None, "close reaps the server");
        assert!(
            other.try_wait().unwrap().is_none(),
            "close signalled an unrelated process"
        );
        other.kill().unwrap();
        other.wait().unwrap();
    });
}

#[test]
fn a_close_future_dropped_early_still_ends_the_server() {
    smol::block_on(async {
        // A server that stops reading and does not exit on EOF: close() first waits for the
        // backlog to drain, and the application gives up on close() meanwhile.
        let mut config = sh_server("sleep 30");
        config.close_grace = Duration::from_millis(500);
        config.term_grace = Duration::from_millis(500);
        let (client, transport) = connect_kept(config).await;
        let pid = client.transport().pid().expect("a child process");
        let big = "x".repeat(1024 * 1024);
        let r = client
            .request(
                Request::call_tool("echo", json!({ "text": big }))
                    .timeout(Duration::from_millis(1)),
            )
            .await;
        assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
        assert!(transport.backlog_len() > 0, "part of the call waits");
        let closed = smol::future::or(async { Some(client.close().await) }, async {
            smol::Timer::after(Duration::from_millis(100)).await;
            None
        })
        .await;
        assert!(closed.is_none(), "close finished within 100 ms");
        drop(client);
        assert!(
            wait_until(Duration::from_secs(30), || !pid_alive(pid)
                && !group_alive(pid)),
            "the server outlived its dropped client"
        );
    });
}

/// Run by [`dropped_servers_can_be_waited_for_before_exit`] in a process of its own (the wait
/// counts every server of the process, so no other test may run beside it).
#[test]
#[ignore = "a helper: run as a child process by dropped_servers_can_be_waited_for_before_exit"]
fn wait_for_shutdowns_child() {
    let pid = smol::block_on(async {
        let mut config = serve(&["ignore-eof"]);
        config.close_grace = Duration::from_millis(200);
        config.term_grace = Duration::from_millis(200);
        let client = connect(config).await;
        client.transport().pid().expect("a child process")
    });
    // The client was dropped without close(): its shutdown runs on a thread.
    assert!(mcp_connect::stdio::wait_for_shutdowns(Duration::from_secs(
        5
    )));
    assert!(!pid_alive(pid) && !group_alive(pid));
    assert_eq!(proc_state(pid), None, "reaped");
    println!("WAITED FOR {pid}");
}

#[test]
fn dropped_servers_can_be_waited_for_before_exit() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "wait_for_shutdowns_child",
            "--nocapture",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("WAITED FOR "),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "a helper: run as a child process by a_server_dropped_right_before_exit_dies_with_us"]
fn drop_then_exit_child() {
    let client = smol::block_on(connect(serve(&["ignore-eof"])));
    println!(
        "SERVER PID {}",
        client.transport().pid().expect("a child process")
    );
    drop(client);
    // Returning ends the test process at once, with the shutdown thread barely started.
}

#[test]
fn a_server_dropped_right_before_exit_dies_with_us() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "drop_then_exit_child",
            "--nocapture",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let pid: u32 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("SERVER PID "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {stdout}"));
    assert!(
        wait_until(Duration::from_secs(30), || !pid_alive(pid)),
        "the server (ignoring EOF) outlived the process that dropped it"
    );
}

#[test]
fn configuration_extremes_neither_panic_nor_overflow() {
    smol::block_on(async {
        let mut config = serve(&[]);
        config.close_grace = Duration::MAX;
        config.term_grace = Duration::MAX;
        config.max_backlog = usize::MAX;
        let client = Client::with_config(
            StdioTransport::spawn(config).unwrap(),
            ClientConfig {
                session: Config {
                    frame_limit: usize::MAX,
                    default_timeout: Some(Duration::MAX),
                    ..Config::default()
                },
                max_tool_pages: usize::MAX,
                max_tool_bytes: usize::MAX,
                ..ClientConfig::default()
            },
        );
        client.initialize().await.unwrap();
        let text = "y".repeat(200_000);
        let r = client
            .call_tool("echo", json!({ "text": text }))
            .await
            .unwrap();
        assert_eq!(r.text(), text, "a long answer read in many pieces");
        assert_eq!(client.list_tools().await.unwrap().len(), 6);
        let started = Instant::now();
        close_and_check(client).await;
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the server exits on EOF"
        );
    });
}

#[test]
fn call_refuses_a_request_that_is_not_a_tool_call() {
    smol::block_on(async {
        let client = connect(serve(&[])).await;
        let err = client.call(Request::new("ping", None)).await.unwrap_err();
        assert!(
            matches!(&err, Error::Usage(mcp_connect::proto::UsageError::NotAToolCall(m)) if m == "ping"),
            "{err:?}"
        );
        // A tools/call built by hand is decoded as one.
        let r = client
            .call(Request::new(
                "tools/call",
                Some(json!({"name": "echo", "arguments": {"text": "by hand"}})),
            ))
            .await
            .unwrap();
        assert_eq!(r.text(), "by hand");
        close_and_check(client).await;
    });
}

#[test]
fn debug_output_shows_environment_names_not_values() {
    let config = serve(&[]).env("GITHUB_TOKEN", "ghp_SECRET123");
    let shown = format!("{config:?}");
    assert!(shown.contains("GITHUB_TOKEN"), "{shown}");
    assert!(!shown.contains("ghp_SECRET123"), "{shown}");
}

#[test]
fn warnings_reach_the_application_and_a_panicking_callback_changes_nothing() {
    use mcp_connect::proto::Warning;
    use mcp_connect::WarningCallback;
    smol::block_on(async {
        let seen = Arc::new(Mutex::new(Vec::<Warning>::new()));
        let sink = seen.clone();
        let config = ClientConfig {
            on_warning: Some(WarningCallback(Arc::new(move |w: &Warning| {
                sink.lock().unwrap().push(w.clone());
                panic!("a careless callback");
            }))),
            ..ClientConfig::default()
        };
        let client = Client::with_config(StdioTransport::spawn(serve(&["junk"])).unwrap(), config);
        client.initialize().await.unwrap();
        for _ in 0..2 {
            let r = client
                .call_tool("echo", json!({"text": "clean"}))
                .await
                .unwrap();
            assert_eq!(r.text(), "clean");
        }
        let recent = client.recent_warnings();
        assert_eq!(recent.len(), 8, "four per call: {recent:?}");
        assert!(
            matches!(&recent[0], Warning::NotJson { excerpt, .. } if excerpt == "this is not JSON"),
            "{recent:?}"
        );
        assert!(matches!(&recent[3], Warning::NotJsonRpc(_)), "{recent:?}");
        assert_eq!(*seen.lock().unwrap(), recent, "the callback saw each one");
        close_and_check(client).await;
    })
}

/// A client in the legacy era whose requests time out after 20 s (a regression fails instead of
/// waiting a minute), with a shell-script server that answers the handshake, then runs `then`.
async fn connect_sh(then: &str) -> Client {
    connect_sh_kept(then).await.0
}

/// [`connect_sh`], keeping a handle on the transport for what only it tells (its backlog).
async fn connect_sh_kept(then: &str) -> (Client, Arc<StdioTransport>) {
    connect_sh_with(then, mcp_connect::Handlers::default()).await
}

/// [`connect_sh_kept`] with these handlers.
async fn connect_sh_with(
    then: &str,
    handlers: mcp_connect::Handlers,
) -> (Client, Arc<StdioTransport>) {
    let settings = ClientConfig {
        session: Config {
            default_timeout: Some(Duration::from_secs(20)),
            era: mcp_connect::proto::EraChoice::Legacy,
            ..Config::default()
        },
        handlers,
        ..ClientConfig::default()
    };
    let transport = Arc::new(StdioTransport::spawn(sh_server(then)).expect("spawn"));
    let client = Client::with_config(transport.clone(), settings);
    client.initialize().await.expect("initialize");
    (client, transport)
}

#[test]
fn latin1_bytes_and_lone_surrogates_reach_the_model_as_replacement_characters() {
    use mcp_connect::proto::text::Damage;
    use mcp_connect::proto::Warning;
    smol::block_on(async {
        // After `notifications/initialized`, two calls (ids 1 and 2): the first answered with
        // Latin-1 bytes (\351 is é) and lone surrogate escapes, the second with a lone low
        // surrogate only, and a correctly paired emoji.
        let client = connect_sh(
            r#"read line; read line; printf '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"caf\351 \\ud83d and \\udfff"}]}}\n'; read line; printf '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"\\udc00 \\ud83d\\ude00"}]}}\n'; sleep 30"#,
        )
        .await;
        let started = Instant::now();
        let r = client.call_tool("read", json!({})).await.unwrap();
        assert_eq!(r.text(), "caf\u{FFFD} \u{FFFD} and \u{FFFD}");
        let r = client.call_tool("read", json!({})).await.unwrap();
        assert_eq!(r.text(), "\u{FFFD} \u{1F600}");
        assert!(started.elapsed() < Duration::from_secs(10), "no timeout");
        assert_eq!(client.stats().repaired, 2);
        assert_eq!(client.stats().messages_ignored, 0);
        let warnings = client.recent_warnings();
        assert!(
            matches!(
                &warnings[..],
                [
                    Warning::Repaired {
                        what: Damage {
                            invalid_utf8: 1,
                            lone_surrogates: 2
                        },
                        ..
                    },
                    Warning::Repaired {
                        what: Damage {
                            invalid_utf8: 0,
                            lone_surrogates: 1
                        },
                        ..
                    }
                ]
            ),
            "{warnings:?}"
        );
        close_and_check(client).await;
    })
}

#[test]
fn a_null_id_error_fails_the_one_pending_call_at_once_and_with_two_is_only_reported() {
    use mcp_connect::proto::Warning;
    smol::block_on(async {
        let client = connect_sh(
            r#"read line; read line; printf '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'; read line; read line; printf '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}\n{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"two"}]}}\n{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"three"}]}}\n'; sleep 30"#,
        )
        .await;
        let started = Instant::now();
        let err = client.call_tool("t", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, Error::Protocol(e) if e.code == -32700 && e.message == "Parse error"),
            "{err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(10), "no timeout");
        assert_eq!(client.stats().messages_ignored, 0);
        // Two pending: the error cannot be told apart; both wait for their answers.
        let (two, three) = smol::future::zip(
            client.call_tool("t", json!({})),
            client.call_tool("t", json!({})),
        )
        .await;
        assert_eq!(two.unwrap().text(), "two");
        assert_eq!(three.unwrap().text(), "three");
        assert_eq!(client.stats().messages_ignored, 1);
        assert!(
            matches!(&client.recent_warnings()[..], [Warning::ErrorWithoutId(e)] if e.code == -32600),
            "{:?}",
            client.recent_warnings()
        );
        close_and_check(client).await;
    })
}

/// A `tools/call` request with id `id`, as the session would hand it to the transport.
fn transmit_request(id: u64, text: &str) -> mcp_connect::proto::Transmit {
    use mcp_connect::proto::{RequestId, Transmit, TransmitKind};
    Transmit {
        payload: json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}}})
        .to_string()
        .into_bytes(),
        kind: TransmitKind::Request {
            id: RequestId(id),
            wire: RequestId(id),
            method: "tools/call".into(),
        },
        headers: Vec::new(),
        modern: false,
    }
}

/// `notifications/cancelled` for request `id`.
fn transmit_cancellation(id: u64) -> mcp_connect::proto::Transmit {
    use mcp_connect::proto::{RequestId, Transmit, TransmitKind};
    Transmit {
        payload: json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id}})
        .to_string()
        .into_bytes(),
        kind: TransmitKind::Cancellation { id: RequestId(id) },
        headers: Vec::new(),
        modern: false,
    }
}

/// A server that copies its stdin to a file (`cat`), and the file: what reached it, in order.
fn recording(name: &str) -> (StdioConfig, std::path::PathBuf) {
    let out = std::env::temp_dir().join(format!("mcp-connect-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let config =
        StdioConfig::new("sh").args(["-c".as_ref(), "exec cat > \"$0\"".as_ref(), out.as_os_str()]);
    (config, out)
}

/// The ids of the requests (and of the cancellations) a recording server received, in order.
fn received(out: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(out).expect("the recording");
    let _ = std::fs::remove_file(out);
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("whole lines");
            match v["id"].as_u64() {
                Some(id) => format!(
                    "{id}:{}",
                    v["params"]["arguments"]["text"].as_str().unwrap()
                ),
                None => format!("cancel {}", v["params"]["requestId"]),
            }
        })
        .collect()
}

#[test]
fn messages_kept_back_for_a_batch_go_out_with_the_next_send_in_order_and_a_withdrawn_one_never() {
    use mcp_connect::Transport;
    smol::block_on(async {
        let (config, out) = recording("batch");
        let t = StdioTransport::spawn(config).expect("spawn");
        assert!(
            t.send_batched(transmit_request(1, "a")).unwrap(),
            "kept back"
        );
        assert!(t.send_batched(transmit_request(2, "b")).unwrap());
        assert!(t.send_batched(transmit_request(3, "c")).unwrap());
        let kept = t.backlog_len();
        let two = transmit_request(2, "b").payload.len() + 1;
        assert_eq!(
            kept,
            3 * two,
            "nothing written yet (the three lines have one length)"
        );
        // Request 2 given up on before any of it was written: it leaves the queue, and the
        // server is not told of it.
        t.send(transmit_cancellation(2)).unwrap();
        assert_eq!(t.backlog_len(), kept - two);
        // A plain send writes what was kept back first, then itself.
        t.send(transmit_request(4, "d")).unwrap();
        assert_eq!(t.backlog_len(), 0);
        // `flush` writes what was kept back, with no send after it.
        assert!(t.send_batched(transmit_request(5, "e")).unwrap());
        t.flush();
        assert_eq!(t.backlog_len(), 0);
        t.close().await.unwrap();
        assert_eq!(received(&out), ["1:a", "3:c", "4:d", "5:e"]);
    })
}

#[test]
fn the_pipes_readiness_wakes_one_waiter_the_one_polled_last_and_a_dropped_one_passes_it_on() {
    use mcp_connect::Transport;
    use std::task::{Context, Waker};
    // A server that prints a line for each line it reads.
    let t = StdioTransport::spawn(
        StdioConfig::new("sh").args(["-c", "while read line; do echo '{}'; done"]),
    )
    .expect("spawn");
    let (woke, wakes) = std::sync::mpsc::channel();
    let told: Vec<_> = (0..4)
        .map(|_| mcp_testkit::CountingWaker::new(woke.clone()))
        .collect();
    let counts = || -> Vec<usize> { told.iter().map(|t| t.count()).collect() };
    let mut waits: Vec<_> = (0..4).map(|_| t.ready()).collect();
    let poll = |wait: &mut mcp_connect::transport::BoxFuture<'_, ()>, i: usize| {
        let waker = Waker::from(told[i].clone());
        wait.as_mut().poll(&mut Context::from_waker(&waker))
    };
    for (i, wait) in waits.iter_mut().enumerate() {
        assert!(poll(wait, i).is_pending(), "nothing to read yet");
    }
    let next_wake = || {
        wakes
            .recv_timeout(Duration::from_secs(20))
            .expect("a waiter woken")
    };
    // Polled until ready: a first poll may say "not yet" (async-io does not trust an event of
    // the reactor's turn that registered the wait: it registers again, and the pipe, still
    // readable, is reported at once), waking the same waiter again, the one polled last.
    let ready = |wait: &mut mcp_connect::transport::BoxFuture<'_, ()>, i: usize| {
        while poll(wait, i).is_pending() {
            next_wake();
        }
    };
    // The server's first line wakes one waiter, the one polled last, and no other.
    t.send(transmit_request(1, "a")).unwrap();
    next_wake();
    assert_eq!(counts(), [0, 0, 0, 1]);
    // Dropped without looking, it passes the wake-up on to the one polled before it.
    drop(waits.pop());
    assert_eq!(counts(), [0, 0, 1, 1]);
    next_wake();
    let mut two = waits.pop().unwrap();
    ready(&mut two, 2);
    assert_eq!(counts()[..2], [0, 0]);
    let Some(mcp_connect::transport::Inbound::Bytes(line)) = t.try_recv() else {
        panic!("the line")
    };
    assert_eq!(&line[..], b"{}\n");
    drop(line);
    // The read watched the pipe again for the two still asleep: the next line wakes one of
    // them (the one polled last), though the waiter that took the last event is gone.
    drop(two);
    t.send(transmit_request(2, "b")).unwrap();
    next_wake();
    assert_eq!(counts()[..2], [0, 1]);
    ready(&mut waits[1], 1);
    assert!(matches!(
        t.try_recv(),
        Some(mcp_connect::transport::Inbound::Bytes(_))
    ));
    assert!(poll(&mut waits[0], 0).is_pending());
    assert_eq!(counts()[0], 0);
    drop(waits);
    smol::block_on(t.close()).unwrap();
}

#[test]
fn a_batch_is_written_once_it_holds_sixty_four_messages_or_256_kib() {
    use mcp_connect::Transport;
    smol::block_on(async {
        let (config, out) = recording("bounds");
        let t = StdioTransport::spawn(config).expect("spawn");
        for id in 1..64 {
            assert!(t.send_batched(transmit_request(id, "s")).unwrap(), "{id}");
        }
        // The 64th goes out with the 63 before it.
        assert!(!t.send_batched(transmit_request(64, "s")).unwrap());
        assert_eq!(t.backlog_len(), 0);
        // Bytes: two 100 KiB messages are kept, the third fills the batch past 256 KiB.
        let big = "b".repeat(100 * 1024);
        assert!(t.send_batched(transmit_request(65, &big)).unwrap());
        assert!(t.send_batched(transmit_request(66, &big)).unwrap());
        assert!(!t.send_batched(transmit_request(67, &big)).unwrap());
        // More than the pipe holds: what it did not take is written as the server reads it,
        // the partly written message's remainder first.
        assert!(wait_until(Duration::from_secs(30), || t.backlog_len() == 0));
        t.close().await.unwrap();
        let lines = received(&out);
        let mut expected: Vec<String> = (1..=64).map(|id| format!("{id}:s")).collect();
        expected.extend((65..=67).map(|id| format!("{id}:{big}")));
        assert!(
            lines == expected,
            "{} lines, not in order or not whole",
            lines.len()
        );
    })
}

#[test]
fn a_closed_pipe_fails_every_message_kept_back_at_once() {
    use mcp_connect::transport::Inbound;
    use mcp_connect::Transport;
    smol::block_on(async {
        let t = StdioTransport::spawn(
            StdioConfig::new("sh").args(["-c", "exec 0<&-; echo closed >&2; sleep 30"]),
        )
        .expect("spawn");
        assert!(wait_until(Duration::from_secs(30), || t
            .stderr_tail()
            .contains("closed")));
        for id in 1..=3 {
            assert!(t.send_batched(transmit_request(id, "x")).unwrap());
        }
        t.flush();
        assert_eq!(t.backlog_len(), 0, "every kept message is dropped");
        let err = t.send(transmit_request(4, "x")).unwrap_err();
        assert!(err.to_string().contains("stopped reading"), "{err}");
        let err = t.send_batched(transmit_request(5, "x")).unwrap_err();
        assert!(err.to_string().contains("stopped reading"), "{err}");
        // And the connection says why it ended.
        let closed = loop {
            match t.try_recv() {
                Some(Inbound::Closed(reason)) => break reason,
                Some(_) => {}
                None => t.ready().await,
            }
        };
        let reason = closed.expect("a reason");
        assert!(reason.to_string().contains("stopped reading"), "{reason}");
        t.close().await.unwrap();
    })
}

#[test]
fn a_call_kept_back_for_a_batch_goes_out_though_the_caller_it_waited_for_is_parked() {
    smol::block_on(async {
        // Requests 1 and 2 are answered together, once the client said its roots changed (sent
        // after both were polled once: neither first poll can be answered); then 3 and 4 one
        // by one.
        let roots = mcp_connect::Handlers::new().roots(true, || async { Ok(Vec::new()) });
        let (client, transport) = connect_sh_with(
            r#"read line; read line; read line; read line; printf '%s\n%s\n' '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"one"}]}}' '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"two"}]}}'; while read line; do case "$line" in *'"id":3'*) echo '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"three"}]}}';; *'"id":4'*) echo '{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"four"}]}}';; esac; done"#,
            roots,
        )
        .await;
        let mut x = Box::pin(client.call_tool("t", json!({})));
        let mut y = Box::pin(client.call_tool("t", json!({})));
        assert!(smol::future::poll_once(&mut x).await.is_none());
        assert!(smol::future::poll_once(&mut y).await.is_none());
        assert!(client.roots_changed(), "the roots change was not sent");
        // x reads both answers: y's waits in its slot, and y is not polled.
        assert_eq!(x.await.unwrap().text(), "one");
        // So a call now waits a turn for y's next request, kept back…
        let mut z = Box::pin(client.call_tool("t", json!({})));
        assert!(smol::future::poll_once(&mut z).await.is_none());
        assert!(transport.backlog_len() > 0, "kept back for a batch");
        // …and its caller giving up leaves nothing behind: withdrawn, or written.
        drop(z);
        assert_eq!(transport.backlog_len(), 0);
        // A call whose batch never fills (y stays parked) goes out after one turn.
        let started = Instant::now();
        let four = client.call_tool("t", json!({})).await.unwrap();
        assert_eq!(four.text(), "four");
        assert!(started.elapsed() < Duration::from_secs(10), "no timeout");
        // y's answer waited for it.
        assert_eq!(y.await.unwrap().text(), "two");
        close_and_check(client).await;
    })
}

// ---- start-up diagnostics ------------------------------------------------------------------------

#[test]
fn a_program_that_prints_only_lines_that_are_not_json_rpc_is_named_not_an_mcp_server() {
    smol::block_on(async {
        let program = StdioConfig::new("sh").args(["-c", "echo hello; echo world; exec sleep 100"]);
        let started = Instant::now();
        let err = mcp_connect::connect_stdio(program, ClientConfig::default())
            .await
            .unwrap_err();
        let took = started.elapsed();
        let Error::Session(mcp_connect::proto::SessionError::NotAnMcpServer {
            printed,
            more,
            unanswered,
        }) = &err
        else {
            panic!("{err:?}")
        };
        assert_eq!((printed.as_str(), *more), ("hello", 1));
        assert_eq!(unanswered, "initialize");
        assert_eq!(
            err.to_string(),
            "not an MCP server: it printed \"hello\" (and 1 more line) and did not answer initialize"
        );
        // The probe's 2 s, then 3 s for initialize, then the close (2 s for the program to leave
        // after its stdin closed): well under the request's 60 s timeout.
        assert!(took < Duration::from_secs(30), "{took:?}");
    })
}

/// A program that prints lines that are not JSON-RPC and exits: its exit, with what it printed.
#[test]
fn a_program_that_prints_and_exits_is_quoted_with_its_exit_status() {
    smol::block_on(async {
        let program = StdioConfig::new("sh").args([
            "-c",
            "echo 'Usage: foo [OPTIONS]'; echo '  -h'; echo '  -v'; echo 'bad option' >&2; exit 2",
        ]);
        let err = mcp_connect::connect_stdio(program, ClientConfig::default())
            .await
            .unwrap_err();
        let Error::ExitedAfterPrinting {
            status,
            printed,
            more,
            stderr,
        } = &err
        else {
            panic!("{err:?}")
        };
        assert_eq!(status.and_then(|s| s.code()), Some(2));
        assert_eq!((printed.as_str(), *more), ("Usage: foo [OPTIONS]", 2));
        assert_eq!(stderr.trim(), "bad option");
        assert_eq!(
            err.to_string(),
            "server exited (exit status: 2) after printing \"Usage: foo [OPTIONS]\" (and 2 more \
             lines) on stdout — not an MCP server?; stderr: bad option"
        );
        // A program that printed nothing keeps the plain exit.
        let program = StdioConfig::new("sh").args(["-c", "echo 'bad option' >&2; exit 2"]);
        let err = mcp_connect::connect_stdio(program, ClientConfig::default())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::ServerExited { .. }), "{err:?}");
    })
}

/// A server that never asks for the roots: the wait for them ends with the answer to a ping
/// sent after the handshake, not at its bound; the roots are then not answered.
#[test]
fn a_server_that_never_asks_for_roots_ends_the_wait_on_a_ping() {
    smol::block_on(async {
        let config = ClientConfig {
            handlers: mcp_connect::Handlers::new()
                .fixed_roots(vec![mcp_connect::Root::directory("/tmp")]),
            ..ClientConfig::default()
        };
        let client = Client::with_config(StdioTransport::spawn(serve(&[])).unwrap(), config);
        client.initialize().await.unwrap();
        let started = Instant::now();
        // A bound no test run reaches: only the ping's answer can end the wait in time.
        assert!(!client.roots_listed(Duration::from_secs(600)).await);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(client.stats().roots_answered, 0);
        let r = client
            .call_tool("echo", json!({"text": "on"}))
            .await
            .unwrap();
        assert_eq!(r.text(), "on");
        close_and_check(client).await;
    })
}

/// What the program printed before the opening began (the idle reader read it) counts too.
#[test]
fn lines_read_before_the_opening_count_too() {
    smol::block_on(async {
        let program = StdioConfig::new("sh").args(["-c", "echo hello; echo world; exec sleep 100"]);
        let client = Client::with_config(
            StdioTransport::spawn(program).unwrap(),
            ClientConfig::default(),
        );
        assert!(
            wait_until(Duration::from_secs(30), || client.stats().messages_ignored
                == 2),
            "{:?}",
            client.stats()
        );
        let err = client.initialize().await.unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Session(mcp_connect::proto::SessionError::NotAnMcpServer { more: 1, .. })
            ),
            "{err:?}"
        );
        close_and_check(client).await;
    })
}

#[test]
fn a_server_that_greets_on_stdout_then_answers_still_works() {
    smol::block_on(async {
        let client = mcp_connect::connect_stdio(serve(&["banner"]), ClientConfig::default())
            .await
            .expect("a banner is skipped");
        let echo = client.call_tool("echo", json!({"text": "hi"})).await;
        assert_eq!(echo.unwrap().text(), "hi");
        assert!(client.stats().messages_ignored >= 1);
        close_and_check(client).await;
    })
}

/// A server that ends whatever it is sent (it reads nothing): started once, not again for the
/// legacy era, and its exit status and stderr are the error. Linux: elsewhere the pipe does not
/// say what was read, and the server is given the benefit of the doubt.
#[cfg(target_os = "linux")]
#[test]
fn a_server_that_dies_at_start_up_is_started_once() {
    smol::block_on(async {
        let dir = mcp_testkit::TempDir::new("dies-at-start");
        let starts = dir.path().join("starts");
        let script = format!(
            "echo start >> '{}'; echo 'boom: no configuration' >&2; exit 1",
            starts.display()
        );
        let (config, lines) = collecting(StdioConfig::new("sh").args(["-c", &script]));
        let err = mcp_connect::connect_stdio(config, ClientConfig::default())
            .await
            .unwrap_err();
        let Error::ServerExited { status, stderr } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(status.and_then(|s| s.code()), Some(1));
        assert_eq!(stderr, "boom: no configuration");
        let started = std::fs::read_to_string(&starts).unwrap();
        assert_eq!(started.lines().count(), 1, "{started:?}");
        assert_eq!(
            lines.lock().unwrap().len(),
            1,
            "{:?}",
            lines.lock().unwrap()
        );
    })
}
