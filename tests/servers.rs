//! The multi-server tool set (`mcp_client::ServerSet`) against the test kit's stdio server:
//! concurrent start-up with a broken server among them, prefixed names routed to their server
//! with the tool's own name, filters, a server killed between calls and started again, a call in
//! flight when its server dies, the restart cap, the start-up timeout, and `close` reaping
//! every process.

use mcp_client::proto::toolset::{NameRules, Prefix, RestartPolicy, ToolFilter};
use mcp_client::{
    AgentTool, Error, Launch, ServerSet, ServerSetConfig, ServerSpec, SetError, StdioConfig,
};
use mcp_testkit::{pid_alive, serve, serve_in, wait_until, TempDir};
use serde_json::json;
use std::time::{Duration, Instant};

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

fn text(result: &mcp_client::CallToolResult) -> String {
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
            Err(mcp_client::ToolError::Retry(m)) if m.contains("nope")
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
