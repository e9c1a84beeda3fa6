//! The multi-server tool set (`mcp_connect::ServerSet`) against the test kit's stdio server:
//! concurrent start-up with a broken server among them, prefixed names routed to their server
//! with the tool's own name, filters, a server killed between calls and started again, a call in
//! flight when its server dies, the restart cap, the start-up timeout, and `close` reaping
//! every process; a server whose first listing fails or hangs is a start-up failure, a failed
//! re-listing is not repeated on every `tools()`, nobody waits behind another server or behind a
//! parked call future, a non-ASCII separator, and a launcher's children ended with it.

use mcp_connect::proto::server_set::{NameRules, Prefix, RestartPolicy, ToolFilter};
use mcp_connect::{
    AgentTool, Error, Launch, ServerSet, ServerSetConfig, ServerSpec, SetError, StdioConfig,
};
use mcp_testkit::{pid_alive, serve, serve_bin, serve_in, wait_until, TempDir};
use serde_json::json;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `what`'s outcome, or a panic if it is not done within `limit` (a backstop, not a wait).
async fn within<T>(limit: Duration, what: &str, f: impl Future<Output = T>) -> T {
    let done = smol::future::or(async { Some(f.await) }, async {
        smol::Timer::after(limit).await;
        None
    })
    .await;
    done.unwrap_or_else(|| panic!("{what}: not done after {limit:?}"))
}

/// A stdio config whose server's stderr lines are also collected in `lines`.
fn heard(config: StdioConfig, lines: &Arc<Mutex<Vec<String>>>) -> StdioConfig {
    let lines = lines.clone();
    config.stderr(mcp_connect::StderrMode::Callback(Arc::new(
        move |line: &str| lines.lock().unwrap().push(line.to_owned()),
    )))
}

fn count(lines: &Arc<Mutex<Vec<String>>>, needle: &str) -> usize {
    lines
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(needle))
        .count()
}

fn read_pid(path: &std::path::Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn tagged(name: &str, config: StdioConfig) -> ServerSpec {
    ServerSpec::new(name, Launch::Stdio(config.env("MCP_TESTKIT_TAG", name)))
}

fn kill9(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}

/// Whether `pid` is gone or a zombie (killed, not yet reaped).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

fn text(result: &mcp_connect::CallToolResult) -> String {
    result.text()
}

#[test]
fn all_start_at_once_a_broken_one_is_reported_and_names_route() {
    smol::block_on(async {
        let broken = ServerSpec::new(
            "broken",
            Launch::Stdio(StdioConfig::new("/nonexistent/mcp-server-binary")),
        );
        let set = ServerSet::connect(
            vec![
                tagged("alpha", serve(&[])),
                broken,
                tagged("beta", serve_in("modern", &[])),
            ],
            ServerSetConfig::default(),
        )
        .await;
        let failures = set.failures().await;
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0].0, "broken");
        assert!(
            failures[0].1.to_string().contains("nonexistent"),
            "{}",
            failures[0].1
        );
        let tools = set.tools().await;
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert!(
            names.contains(&"alpha__echo") && names.contains(&"beta__echo"),
            "{names:?}"
        );
        assert!(names
            .iter()
            .all(|n| n.starts_with("alpha__") || n.starts_with("beta__")));
        // Each prefixed name goes to its own server, with the tool's own name.
        let a = set
            .call("alpha__echo", json!({"text": "hi"}))
            .await
            .unwrap();
        let b = set.call("beta__echo", json!({"text": "hi"})).await.unwrap();
        assert_eq!(text(&a), "hi\n[alpha]");
        assert_eq!(text(&b), "hi\n[beta]");
        let tool = tools.iter().find(|t| t.name() == "beta__add").unwrap();
        assert_eq!(tool.server(), "beta");
        assert_eq!(tool.server_tool_name(), "add");
        assert_eq!(
            tool.call(json!({"a": 2, "b": 3})).await.unwrap(),
            "5\n[beta]"
        );
        // A tool error stays correctable; an unknown name is a clear error.
        let fail = tools.iter().find(|t| t.name() == "alpha__fail").unwrap();
        assert!(matches!(
            fail.call(json!({"message": "nope"})).await,
            Err(mcp_connect::ToolError::Retry(m)) if m.contains("nope")
        ));
        assert!(matches!(
            set.call("gamma__echo", json!({})).await,
            Err(SetError::UnknownTool(_))
        ));
        set.close().await;
    });
}

#[test]
fn filters_and_naming_rules_apply() {
    smol::block_on(async {
        let mut a = tagged("a", serve(&[]));
        a.filter = ToolFilter {
            allow: Some(vec!["echo".into(), "add".into()]),
            deny: vec![],
        };
        let mut b = tagged("b", serve(&[]));
        b.filter = ToolFilter {
            allow: None,
            deny: vec!["echo".into()],
        };
        let config = ServerSetConfig {
            names: NameRules {
                separator: ".".into(),
                prefix: Prefix::OnCollision,
            },
            ..ServerSetConfig::default()
        };
        let set = ServerSet::connect(vec![a, b], config).await;
        let tools = set.tools().await;
        let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        names.sort();
        // echo is a's alone (b denies it): unprefixed; add is both servers': prefixed.
        assert_eq!(
            names,
            ["a.add", "b.add", "big", "echo", "fail", "image", "slow"]
        );
        assert_eq!(
            text(&set.call("echo", json!({"text": "x"})).await.unwrap()),
            "x\n[a]"
        );
        assert!(set
            .skipped()
            .iter()
            .any(|(s, t, _)| s == "b" && t == "echo"));
        set.close().await;
    });
}

#[test]
fn a_killed_server_is_started_again_on_the_next_call() {
    smol::block_on(async {
        let set =
            ServerSet::connect(vec![tagged("s", serve(&[]))], ServerSetConfig::default()).await;
        set.tools().await;
        assert_eq!(
            text(&set.call("s__echo", json!({"text": "1"})).await.unwrap()),
            "1\n[s]"
        );
        let pid = set.server_pid("s").await.unwrap();
        kill9(pid);
        assert!(wait_until(Duration::from_secs(5), || dead(pid)));
        let second = set.call("s__echo", json!({"text": "2"})).await.unwrap();
        assert_eq!(text(&second), "2\n[s]");
        let new_pid = set.server_pid("s").await.unwrap();
        assert_ne!(new_pid, pid);
        // The old process was reaped, not left a zombie.
        assert!(wait_until(Duration::from_secs(5), || !pid_alive(pid)));
        set.close().await;
        assert!(wait_until(Duration::from_secs(5), || !pid_alive(new_pid)));
    });
}

#[test]
fn a_call_in_flight_fails_at_once_with_the_exit_and_the_cap_holds() {
    smol::block_on(async {
        let config = ServerSetConfig {
            restart: RestartPolicy {
                per_minute: 1,
                ..RestartPolicy::default()
            },
            ..ServerSetConfig::default()
        };
        let set = ServerSet::connect(vec![tagged("s", serve(&[]))], config).await;
        let pid = set.server_pid("s").await.unwrap();
        let started = Instant::now();
        let slow = set.call("s__slow", json!({"ms": 20_000}));
        let killer = async {
            smol::Timer::after(Duration::from_millis(300)).await;
            kill9(pid);
        };
        let (result, ()) = smol::future::zip(slow, killer).await;
        let elapsed = started.elapsed();
        match result {
            Err(SetError::Server {
                server,
                cause: Error::ServerExited { status, .. },
            }) => {
                assert_eq!(server, "s");
                assert!(
                    status.is_some_and(|s| !s.success()),
                    "the exit status is reported: {status:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(elapsed < Duration::from_secs(5), "failed after {elapsed:?}");
        // One restart a minute: the first succeeds, the second is refused.
        assert!(set.call("s__echo", json!({"text": "a"})).await.is_ok());
        let pid = set.server_pid("s").await.unwrap();
        kill9(pid);
        assert!(wait_until(Duration::from_secs(5), || dead(pid)));
        match set.call("s__echo", json!({"text": "b"})).await {
            Err(SetError::Down { server, cause }) => {
                assert_eq!(server, "s");
                assert!(matches!(cause, Error::ServerExited { .. }), "{cause}");
            }
            other => panic!("{other:?}"),
        }
        set.close().await;
    });
}

#[test]
fn a_server_that_never_opens_times_out_and_is_reaped() {
    smol::block_on(async {
        let dir = TempDir::new("mcp-servers-timeout");
        let pid_file = dir.path().join("pid");
        let script = format!("echo $$ > {}; exec sleep 60", pid_file.display());
        let mut spec = ServerSpec::new(
            "mute",
            Launch::Stdio(StdioConfig::new("sh").args(["-c", &script])),
        );
        spec.startup_timeout = Duration::from_millis(700);
        let started = Instant::now();
        let set = ServerSet::connect(
            vec![spec, tagged("ok", serve(&[]))],
            ServerSetConfig::default(),
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(5));
        let failures = set.failures().await;
        assert_eq!(failures.len(), 1);
        assert!(
            matches!(failures[0].1, Error::Timeout(_)),
            "{}",
            failures[0].1
        );
        assert!(set.call("ok__echo", json!({"text": "fine"})).await.is_ok());
        let pid: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            wait_until(Duration::from_secs(5), || !pid_alive(pid)),
            "the silent server {pid} was left running"
        );
        set.close().await;
    });
}

#[test]
fn close_ends_every_server() {
    smol::block_on(async {
        let specs = (0..4)
            .map(|i| tagged(&format!("s{i}"), serve(&[])))
            .collect();
        let set = ServerSet::connect(specs, ServerSetConfig::default()).await;
        let mut pids = Vec::new();
        for name in ["s0", "s1", "s2", "s3"] {
            pids.push(set.server_pid(name).await.unwrap());
        }
        assert!(pids.iter().all(|&p| pid_alive(p)));
        set.close().await;
        assert!(wait_until(Duration::from_secs(5), || pids
            .iter()
            .all(|&p| !pid_alive(p))));
    });
}

#[test]
fn a_server_s_list_change_re_lists_it_and_the_application_is_told() {
    smol::block_on(async {
        let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let seen = told.clone();
        let config = ServerSetConfig {
            on_tools_changed: Some(std::sync::Arc::new(move |server: &str| {
                seen.lock().unwrap().push(server.to_owned())
            })),
            ..ServerSetConfig::default()
        };
        let set = ServerSet::connect(
            vec![tagged("g", serve(&["grow"])), tagged("h", serve(&[]))],
            config,
        )
        .await;
        let before = set.tools().await;
        assert!(before.iter().all(|t| t.name() != "g__grown"));
        set.call("g__echo", json!({"text": "x"})).await.unwrap();
        // The notification follows the answer; the idle reader takes it.
        assert!(wait_until(Duration::from_secs(5), || !told
            .lock()
            .unwrap()
            .is_empty()));
        assert_eq!(*told.lock().unwrap(), ["g"]);
        let after = set.tools().await;
        assert!(
            after.iter().any(|t| t.name() == "g__grown"),
            "not re-listed"
        );
        assert_eq!(after.len(), before.len() + 1);
        // Routed to its server by its own name (which the test kit lists but does not run).
        match set.call("g__grown", json!({})).await {
            Err(SetError::Server {
                server,
                cause: Error::Protocol(e),
            }) => {
                assert_eq!(server, "g");
                assert!(e.message.contains("grown"), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
        set.close().await;
    });
}

#[test]
fn a_call_after_close_starts_no_server_again() {
    smol::block_on(async {
        let set =
            ServerSet::connect(vec![tagged("s", serve(&[]))], ServerSetConfig::default()).await;
        let tools = set.tools().await;
        let echo = tools
            .iter()
            .find(|t| t.name() == "s__echo")
            .unwrap()
            .clone();
        let pid = set.server_pid("s").await.unwrap();
        set.close().await;
        assert!(wait_until(Duration::from_secs(5), || !pid_alive(pid)));
        // Through the set and through a tool an agent still holds: refused, nothing started.
        match set.call("s__echo", json!({"text": "late"})).await {
            Err(SetError::Down {
                server,
                cause: Error::Closed,
            }) => assert_eq!(server, "s"),
            other => panic!("a call after close: {other:?}"),
        }
        assert!(echo.call(json!({"text": "late"})).await.is_err());
        assert_eq!(
            set.server_pid("s").await,
            None,
            "a server was started after close"
        );
    });
}

#[test]
fn each_start_up_is_told_as_it_ends() {
    smol::block_on(async {
        let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
        let seen = told.clone();
        let config = ServerSetConfig {
            on_started: Some(std::sync::Arc::new(move |name: &str, outcome| {
                let what = match outcome {
                    Ok(n) => format!("{n} tools"),
                    Err(e) => format!("failed: {e}"),
                };
                seen.lock().unwrap().push((name.to_owned(), what));
            })),
            ..ServerSetConfig::default()
        };
        let broken = ServerSpec::new("broken", Launch::Stdio(StdioConfig::new("/nonexistent/x")));
        let set = ServerSet::connect(vec![tagged("ok", serve(&[])), broken], config).await;
        let mut told = told.lock().unwrap().clone();
        told.sort();
        assert_eq!(told.len(), 2, "{told:?}");
        assert_eq!(told[0].0, "broken");
        assert!(told[0].1.starts_with("failed: "), "{told:?}");
        assert_eq!(told[1], ("ok".to_owned(), "6 tools".to_owned()));
        set.close().await;
    });
}

#[test]
fn a_server_without_tools_joins_the_set_with_none() {
    // A server of resources or prompts only: no `tools` capability, and `tools/list` refused as
    // an unknown method. It started; it offers no tool. One that declares tools and refuses the
    // listing still failed (the next test).
    smol::block_on(async {
        let specs = vec![
            tagged("ok", serve(&[])),
            tagged("bare", serve(&["no-tools"])),
        ];
        let set = within(
            Duration::from_secs(60),
            "connect",
            ServerSet::connect(specs, ServerSetConfig::default()),
        )
        .await;
        assert!(
            set.failures().await.is_empty(),
            "{:?}",
            set.failures().await
        );
        assert!(
            set.server_pid("bare").await.is_some(),
            "the tool-less server was ended"
        );
        let tools = set.tools().await;
        assert!(!tools.is_empty());
        assert!(
            tools.iter().all(|t| t.server() == "ok"),
            "{:?}",
            tools.iter().map(|t| t.name()).collect::<Vec<_>>()
        );
        set.close().await;
    });
}

#[test]
fn a_server_whose_first_listing_fails_or_hangs_failed_to_start() {
    smol::block_on(async {
        let dir = TempDir::new("mcp-servers-listing");
        let pid_file = dir.path().join("pid");
        // Answers `initialize`, never `tools/list`; its requests would wait 10 minutes.
        let script = format!(
            "echo $$ > {}; exec {} --behave hang-list",
            pid_file.display(),
            serve_bin().display()
        );
        let mut hang = tagged(
            "hanglist",
            StdioConfig::new("sh").args(["-c", script.as_str()]),
        );
        hang.startup_timeout = Duration::from_secs(2);
        hang.client.session.default_timeout = Some(Duration::from_secs(600));
        let told = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
        let seen = told.clone();
        let config = ServerSetConfig {
            on_started: Some(Arc::new(move |name: &str, outcome| {
                seen.lock()
                    .unwrap()
                    .push((name.to_owned(), outcome.is_ok()))
            })),
            ..ServerSetConfig::default()
        };
        let specs = vec![
            tagged("ok", serve(&[])),
            hang,
            tagged("listerr", serve(&["list-error"])),
        ];
        // The listing is part of the start-up: under its 2 s, not the request's 10 minutes.
        let set = within(
            Duration::from_secs(60),
            "connect",
            ServerSet::connect(specs, config),
        )
        .await;
        let mut failures = set.failures().await;
        failures.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<&str> = failures.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["hanglist", "listerr"], "{failures:?}");
        assert!(
            matches!(failures[0].1, Error::Timeout(t) if t == Duration::from_secs(2)),
            "{}",
            failures[0].1
        );
        assert!(
            matches!(&failures[1].1, Error::Protocol(e) if e.message.contains("listing failed")),
            "{}",
            failures[1].1
        );
        let mut told = told.lock().unwrap().clone();
        told.sort();
        assert_eq!(
            told,
            [
                ("hanglist".to_owned(), false),
                ("listerr".to_owned(), false),
                ("ok".to_owned(), true)
            ]
        );
        // Both were ended, not left running beside the set.
        assert_eq!(set.server_pid("hanglist").await, None);
        assert_eq!(set.server_pid("listerr").await, None);
        let pid = read_pid(&pid_file).expect("the hanging server wrote its pid");
        assert!(
            wait_until(Duration::from_secs(10), || !pid_alive(pid)),
            "the server whose listing hung ({pid}) was left running"
        );
        // A failed server is not listed again by `tools()`: none of them waits for it.
        for _ in 0..3 {
            let tools = within(Duration::from_secs(30), "tools", set.tools()).await;
            assert!(!tools.is_empty());
            assert!(tools.iter().all(|t| t.server() == "ok"));
        }
        set.close().await;
    });
}

#[test]
fn a_failed_re_listing_is_not_repeated_on_every_tools_call() {
    smol::block_on(async {
        let lines = Arc::new(Mutex::new(Vec::new()));
        // Its first listing is answered; after its first call it says its list changed, and no
        // later listing is answered (a request times out after 3 s).
        let mut g = tagged("g", heard(serve(&["grow", "hang-relist"]), &lines));
        g.client.session.default_timeout = Some(Duration::from_secs(3));
        let changed = Arc::new(Mutex::new(0usize));
        let seen = changed.clone();
        let config = ServerSetConfig {
            on_tools_changed: Some(Arc::new(move |_: &str| *seen.lock().unwrap() += 1)),
            ..ServerSetConfig::default()
        };
        let set = ServerSet::connect(vec![g, tagged("h", serve(&[]))], config).await;
        let before = set.tools().await;
        set.call("g__echo", json!({"text": "x"})).await.unwrap();
        assert!(wait_until(Duration::from_secs(10), || *changed
            .lock()
            .unwrap()
            == 1));
        // The re-listing fails (timed out): the last list stays.
        let after = set.tools().await;
        assert_eq!(count(&lines, "not answering tools/list"), 1);
        assert_eq!(after.len(), before.len());
        assert!(set.failures().await.is_empty());
        // Not tried again for the same change: no more `tools/list` reaches the server.
        for _ in 0..3 {
            assert_eq!(set.tools().await.len(), before.len());
        }
        assert_eq!(
            count(&lines, "not answering tools/list"),
            1,
            "re-listed on every tools()"
        );
        // Its tools still go to it.
        assert_eq!(
            text(&set.call("g__echo", json!({"text": "y"})).await.unwrap()),
            "y\n[g]"
        );
        set.close().await;
    });
}

/// (Review T6.) Server B's re-listing hangs; server A is restarted meanwhile, and a call to A
/// does not wait for B's listing.
#[test]
fn serverset_restart_of_one_server_waits_for_another_servers_listing() {
    smol::block_on(async {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut b = tagged("b", heard(serve(&["grow", "hang-relist"]), &lines));
        b.client.session.default_timeout = Some(Duration::from_secs(600));
        let changed = Arc::new(Mutex::new(0usize));
        let seen = changed.clone();
        let config = ServerSetConfig {
            on_tools_changed: Some(Arc::new(move |_: &str| *seen.lock().unwrap() += 1)),
            ..ServerSetConfig::default()
        };
        let set = ServerSet::connect(vec![tagged("a", serve(&[])), b], config).await;
        set.call("b__echo", json!({"text": "x"})).await.unwrap();
        assert!(wait_until(Duration::from_secs(10), || *changed
            .lock()
            .unwrap()
            == 1));
        // A `tools()` re-lists B, which never answers.
        let listing = {
            let set = set.clone();
            smol::spawn(async move { set.tools().await.len() })
        };
        assert!(
            wait_until(Duration::from_secs(20), || count(
                &lines,
                "not answering tools/list"
            ) == 1),
            "B's re-listing never reached B"
        );
        let pid = set.server_pid("a").await.unwrap();
        kill9(pid);
        assert!(wait_until(Duration::from_secs(5), || dead(pid)));
        let echo = within(
            Duration::from_secs(20),
            "a call to A while B's listing hangs",
            set.call("a__echo", json!({"text": "again"})),
        )
        .await;
        assert_eq!(text(&echo.unwrap()), "again\n[a]");
        assert_ne!(set.server_pid("a").await, Some(pid));
        assert!(!listing.is_finished(), "B's listing was expected to hang");
        within(Duration::from_secs(20), "close", set.close()).await;
        // Its client closed, B's listing ends (failed: B's last list is kept).
        within(Duration::from_secs(20), "the hanging tools()", listing).await;
    });
}

/// (Review T7.) A call future that starts its server again, polled once and then parked,
/// holds up neither `close()` nor `failures()`, `server_pid()`, `tools()` or other calls; it
/// used to hold the server's slot, and `close()` waited for as long as it stayed parked.
#[test]
fn serverset_parked_call_during_restart_blocks_close() {
    smol::block_on(async {
        let config = ServerSetConfig {
            // The restart waits an hour: it is still under way when the set closes.
            restart: RestartPolicy {
                initial: Duration::from_secs(3600),
                max: Duration::from_secs(3600),
                ..RestartPolicy::default()
            },
            ..ServerSetConfig::default()
        };
        let set = ServerSet::connect(
            vec![tagged("a", serve(&[])), tagged("b", serve(&[]))],
            config,
        )
        .await;
        let pid = set.server_pid("a").await.unwrap();
        kill9(pid);
        assert!(wait_until(Duration::from_secs(5), || dead(pid)));
        let mut parked = Box::pin(set.call("a__echo", json!({"text": "parked"})));
        assert!(smol::future::poll_once(&mut parked).await.is_none());
        let limit = Duration::from_secs(20);
        let failures = within(limit, "failures", set.failures()).await;
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(matches!(failures[0].1, Error::ServerExited { .. }));
        assert_eq!(within(limit, "server_pid", set.server_pid("a")).await, None);
        assert!(within(limit, "server_pid", set.server_pid("b"))
            .await
            .is_some());
        assert!(!within(limit, "tools", set.tools()).await.is_empty());
        let b = within(
            limit,
            "a call to b",
            set.call("b__echo", json!({"text": "b"})),
        )
        .await;
        assert_eq!(text(&b.unwrap()), "b\n[b]");
        within(limit, "close", set.close()).await;
        // The restart was stopped: the parked call fails, nothing was started.
        match within(limit, "the parked call", parked).await {
            Err(SetError::Down {
                cause: Error::Closed,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(set.server_pid("a").await, None);
    });
}

/// `ServerSet`'s twin of `a_call_future_polled_once_and_kept_holds_nobody_up` (tests/
/// concurrency.rs): parked call futures — one in flight, one that started its server again —
/// hold nobody up, and each gets its outcome when it is polled again.
#[test]
fn a_set_call_future_polled_once_and_parked_holds_nobody_up() {
    smol::block_on(async {
        let set =
            ServerSet::connect(vec![tagged("s", serve(&[]))], ServerSetConfig::default()).await;
        let limit = Duration::from_secs(20);
        let mut in_flight = Box::pin(set.call("s__slow", json!({"ms": 600_000})));
        assert!(smol::future::poll_once(&mut in_flight).await.is_none());
        let pid = set.server_pid("s").await.unwrap();
        kill9(pid);
        assert!(wait_until(Duration::from_secs(5), || dead(pid)));
        let mut restarting = Box::pin(set.call("s__echo", json!({"text": "parked"})));
        assert!(smol::future::poll_once(&mut restarting).await.is_none());
        // Another call waits for the same restart, which goes on while both futures are parked.
        let r = within(
            limit,
            "a call",
            set.call("s__echo", json!({"text": "meanwhile"})),
        )
        .await;
        assert_eq!(text(&r.unwrap()), "meanwhile\n[s]");
        let new_pid = within(limit, "server_pid", set.server_pid("s"))
            .await
            .unwrap();
        assert_ne!(new_pid, pid);
        assert!(within(limit, "failures", set.failures()).await.is_empty());
        assert!(wait_until(Duration::from_secs(10), || !pid_alive(pid)));
        let r = within(limit, "the parked restart", restarting).await;
        assert_eq!(text(&r.unwrap()), "parked\n[s]");
        // Its server died (the restart closed that client before this future was polled again,
        // and the client tells a request it closed under it `Closed`).
        match within(limit, "the parked call", in_flight).await {
            Err(SetError::Server {
                cause: Error::ServerExited { .. } | Error::Closed,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        within(limit, "close", set.close()).await;
        assert!(wait_until(Duration::from_secs(10), || !pid_alive(new_pid)));
    });
}

#[test]
fn a_non_ascii_separator_neither_panics_nor_leaves_the_allowed_characters() {
    smol::block_on(async {
        let config = ServerSetConfig {
            names: NameRules {
                separator: "→→→".into(),
                prefix: Prefix::Always,
            },
            ..ServerSetConfig::default()
        };
        // `s…s→→→echo` is 130 bytes: it used to be cut at byte 119, inside the first `→`.
        let long = "s".repeat(117);
        let set = ServerSet::connect(
            vec![tagged(&long, serve(&[])), tagged("t", serve(&[]))],
            config,
        )
        .await;
        let tools = set.tools().await;
        assert_eq!(tools.len(), 12);
        for tool in &tools {
            let name = tool.name();
            assert!(name.len() <= 128, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')),
                "{name}"
            );
        }
        assert_eq!(
            text(&set.call("t___echo", json!({"text": "t"})).await.unwrap()),
            "t\n[t]"
        );
        let echo = tools
            .iter()
            .find(|t| t.server() == long && t.server_tool_name() == "echo")
            .unwrap();
        assert_eq!(
            echo.call(json!({"text": "x"})).await.unwrap(),
            format!("x\n[{long}]")
        );
        set.close().await;
    });
}

/// A launcher's child (here `sh -c 'sleep … & exec SERVER'`: the real server under `npx` or
/// `uvx` is such a child) is in the server's process group, and ended with it by `close()` and
/// by dropping the client (see `StdioTransport`'s docs for the paths that do not).
#[test]
fn close_and_drop_end_a_launcher_s_children() {
    let dir = TempDir::new("mcp-servers-grandchild");
    let launch = |name: &str| {
        let pid_file = dir.path().join(name);
        let script = format!(
            "sleep 1000 & echo $! > {}; exec {}",
            pid_file.display(),
            serve_bin().display()
        );
        (
            StdioConfig::new("sh").args(["-c", script.as_str()]),
            pid_file,
        )
    };
    smol::block_on(async {
        // Through the set's close().
        let (config, pid_file) = launch("closed");
        let set = ServerSet::connect(vec![tagged("s", config)], ServerSetConfig::default()).await;
        assert!(set.failures().await.is_empty());
        let child = read_pid(&pid_file).expect("the launcher wrote its child's pid");
        assert!(pid_alive(child));
        set.close().await;
        assert!(
            wait_until(Duration::from_secs(10), || !pid_alive(child)),
            "close() left the launcher's child {child} running"
        );
        // Through dropping a client (its shutdown runs on a thread of its own).
        let (config, pid_file) = launch("dropped");
        let client = mcp_connect::connect_stdio(config, mcp_connect::ClientConfig::default())
            .await
            .unwrap();
        client.list_tools().await.unwrap();
        let child = read_pid(&pid_file).expect("the launcher wrote its child's pid");
        assert!(pid_alive(child));
        drop(client);
        assert!(
            wait_until(Duration::from_secs(20), || !pid_alive(child)),
            "dropping the client left the launcher's child {child} running"
        );
    });
}
