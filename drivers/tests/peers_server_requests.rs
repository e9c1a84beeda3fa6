//! What real servers ask of the application, answered by its handlers: server-everything's
//! elicitation, sampling and roots requests (legacy era, JSON-RPC requests), its progress and
//! logs; server-filesystem started with no directory, which takes its allowed directories from
//! the client's roots (`roots/list`). (The Python SDK's elicitation and progress, in both eras:
//! drivers/tests/peers_python_requests.rs.) The peers come from `.ci/install-peers`; a missing peer skips
//! (and fails under `CI=true`).

use mcp_connect::proto::{Era, ListKind};
use mcp_connect::{
    Client, ClientConfig, ElicitAnswer, Elicitation, HandlerError, Handlers, LogCallback, Request,
    Root, StdioConfig, StdioTransport,
};
use mcp_testkit::{close_and_check, peer_bin, TempDir};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Handlers that answer as a scripted user and model would, recording what they were asked.
fn handlers(asked: Arc<Mutex<Vec<String>>>) -> Handlers {
    let (a, b, c) = (asked.clone(), asked.clone(), asked);
    Handlers::new()
        .elicitation(move |e: Elicitation| {
            let a = a.clone();
            async move {
                let Elicitation::Form { message, schema } = e else {
                    return Err(HandlerError("form mode only".into()));
                };
                a.lock().unwrap().push(format!("elicit: {message}"));
                // Fill every string field; leave the rest to the schema's defaults.
                let mut content = Map::new();
                for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
                    if prop["type"] == "string" && prop.get("enum").is_none() {
                        content.insert(name.clone(), json!("Ada"));
                    }
                }
                Ok(ElicitAnswer::Accept(content))
            }
        })
        .sampling(move |params: Value| {
            let b = b.clone();
            async move {
                b.lock().unwrap().push(format!("sample: {}", params["maxTokens"]));
                Ok(json!({"role": "assistant", "content": {"type": "text", "text": "sampled reply"}, "model": "test-model", "stopReason": "endTurn"}))
            }
        })
        .roots(false, move || {
            let c = c.clone();
            async move {
                c.lock().unwrap().push("roots".into());
                Ok(vec![Root::directory("/tmp")])
            }
        })
}

#[test]
fn server_everything_asks_and_the_handlers_answer() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    let asked = Arc::new(Mutex::new(Vec::new()));
    let logs = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = logs.clone();
    let config = ClientConfig {
        handlers: handlers(asked.clone()),
        on_log: Some(LogCallback(Arc::new(move |m| {
            sink.lock()
                .unwrap()
                .push(format!("{}: {}", m.level, m.data))
        }))),
        ..ClientConfig::default()
    };
    smol::block_on(async {
        let client = Client::with_config(
            StdioTransport::spawn(StdioConfig::new(bin).args(["stdio"])).unwrap(),
            config,
        );
        client.initialize().await.unwrap();
        assert_eq!(client.era(), Some(Era::Legacy));
        let tools = client.list_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        // It offers these only to a client that declared the capabilities.
        for expected in ["trigger-elicitation-request", "trigger-sampling-request"] {
            assert!(names.contains(&expected), "{expected} missing: {names:?}");
        }

        let r = client
            .call_tool(
                "trigger-sampling-request",
                json!({"prompt": "hi", "maxTokens": 50}),
            )
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert!(r.text().contains("sampled reply"), "{}", r.text());

        let r = client
            .call_tool("trigger-elicitation-request", json!({}))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert!(
            r.text().contains("Ada"),
            "the model reads the user's answer: {}",
            r.text()
        );

        // Progress, in order, before the answer.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let reply = client
            .request_with_progress(
                Request::call_tool(
                    "trigger-long-running-operation",
                    json!({"duration": 1, "steps": 3}),
                ),
                move |p| sink.lock().unwrap().push(p.progress),
            )
            .await
            .unwrap();
        let progress = seen.lock().unwrap().clone();
        assert_eq!(progress.len(), 3, "{progress:?} {reply:?}");
        assert!(
            progress.windows(2).all(|w| w[0] < w[1]),
            "in order: {progress:?}"
        );

        // Simulated logs arrive through the callback while nothing else happens.
        client
            .call_tool("toggle-simulated-logging", json!({}))
            .await
            .unwrap();
        let started = Instant::now();
        while logs.lock().unwrap().is_empty() && started.elapsed() < Duration::from_secs(20) {
            smol::Timer::after(Duration::from_millis(100)).await;
        }
        assert!(
            !logs.lock().unwrap().is_empty(),
            "no log message reached the callback"
        );
        let _ = client.lists_changed(ListKind::Tools);
        close_and_check(client).await;
    });
    let asked = asked.lock().unwrap();
    assert!(asked.iter().any(|a| a.starts_with("elicit: ")), "{asked:?}");
    assert!(asked.iter().any(|a| a == "sample: 50"), "{asked:?}");
}

/// The text of `list_allowed_directories`, polled until `wanted` says it is right (the server
/// asks for the roots right after the handshake and applies the answer on its own time), or 20 s.
async fn allowed_directories(client: &Client, wanted: impl Fn(&str) -> bool) -> String {
    let started = Instant::now();
    loop {
        let r = client
            .call_tool("list_allowed_directories", json!({}))
            .await
            .unwrap();
        let text = r.text();
        if wanted(&text) || started.elapsed() > Duration::from_secs(20) {
            return text;
        }
        smol::Timer::after(Duration::from_millis(50)).await;
    }
}

/// server-filesystem with no directory argument: it asks the client for its roots (`roots/list`,
/// right after `notifications/initialized`) and serves exactly those. A file inside the root is
/// read; one beside it, directly or through `..`, and a system file are refused. Without roots
/// declared the same server allows nothing.
#[test]
fn server_filesystem_serves_the_clients_roots() {
    let Some(bin) = peer_bin("filesystem") else {
        return;
    };
    let root = TempDir::new("mcp-peers-roots");
    let allowed = root.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let file = allowed.join("hello.txt");
    std::fs::write(&file, "hello root\n").unwrap();
    let outside = root.path().join("outside.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    let allowed_text = allowed.to_str().expect("a UTF-8 temp path").to_owned();

    smol::block_on(async {
        let config = ClientConfig {
            handlers: Handlers::new().fixed_roots(vec![Root::directory(&allowed)]),
            ..ClientConfig::default()
        };
        let client = Client::with_config(
            StdioTransport::spawn(StdioConfig::new(&bin)).expect("spawn server-filesystem"),
            config,
        );
        if let Err(e) = client.initialize().await {
            panic!(
                "initialize: {e}\n{}",
                client.transport().stderr_tail().unwrap_or_default()
            );
        }
        assert_eq!(client.era(), Some(Era::Legacy));
        // It asks right after the handshake: the wait for it ends with the answer written.
        assert!(
            client.roots_listed(Duration::from_secs(20)).await,
            "{:?}",
            client.stats()
        );
        assert_eq!(client.stats().roots_answered, 1);
        let listed = allowed_directories(&client, |t| t.contains(&allowed_text)).await;
        assert!(
            listed.contains(&allowed_text),
            "the root did not become an allowed directory: {listed:?}\n{}",
            client.transport().stderr_tail().unwrap_or_default()
        );
        assert!(client.stats().server_requests >= 1, "{:?}", client.stats());

        let r = client
            .call_tool("read_text_file", json!({ "path": file }))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        assert_eq!(r.text(), "hello root\n");

        for path in [
            outside.clone(),
            allowed.join("../outside.txt"),
            "/etc/hostname".into(),
        ] {
            let r = client
                .call_tool("read_text_file", json!({ "path": path }))
                .await
                .unwrap();
            let text = r.text();
            assert!(r.is_error, "{path:?} was readable: {text}");
            assert!(
                text.to_lowercase().contains("access denied"),
                "{path:?}: {text}"
            );
            assert!(!text.contains("secret"), "{text}");
        }
        close_and_check(client).await;

        // The same server, no roots declared: it never asks, and allows nothing.
        let client = Client::new(StdioTransport::spawn(StdioConfig::new(&bin)).unwrap());
        client.initialize().await.unwrap();
        // No roots declared: nothing to wait for (a wait would take the whole minute).
        let started = Instant::now();
        assert!(!client.roots_listed(Duration::from_secs(60)).await);
        assert!(started.elapsed() < Duration::from_secs(30));
        let listed = allowed_directories(&client, |_| true).await;
        assert!(!listed.contains(&allowed_text), "{listed:?}");
        let r = client
            .call_tool("read_text_file", json!({ "path": file }))
            .await
            .unwrap();
        assert!(r.is_error, "readable without roots: {}", r.text());
        assert_eq!(client.stats().server_requests, 0);
        close_and_check(client).await;
    });
    drop(root);
}

/// `mcp-client` as a person pokes server-everything: a call's progress on stderr, `--roots`
/// answered, no elicitation declared without a terminal, `--verbose` server logs.
#[test]
fn the_cli_shows_progress_declares_roots_declines_without_a_terminal_and_prints_logs() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    let cli = mcp_testkit::cli_bin();
    let run = |args: &[&str]| {
        mcp_testkit::run_within(
            std::process::Command::new(&cli).args(args).args([
                "--",
                bin.to_str().unwrap(),
                "stdio",
            ]),
            Duration::from_secs(60),
        )
    };
    let out = run(&[
        "--call",
        "trigger-long-running-operation",
        "--args",
        r#"{"duration":1,"steps":3}"#,
    ]);
    assert!(out.status.success(), "{out:?}");
    let progress: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert_eq!(
        progress,
        ["progress: 1/3", "progress: 2/3", "progress: 3/3"],
        "{out:?}"
    );

    let dir = TempDir::new("mcp-cli-roots");
    let out = run(&[
        "--roots",
        dir.path().to_str().unwrap(),
        "--call",
        "get-roots-list",
    ]);
    assert!(out.status.success(), "{out:?}");
    let uri = mcp_connect::Root::directory(dir.path()).uri;
    assert!(out.stdout.contains(&uri), "{uri} not in {}", out.stdout);

    // stdin is not a terminal here: elicitation is not declared, so the server (which offers
    // its elicitation tool only to clients that declare it) does not list the tool.
    let out = run(&[]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.contains("echo\t"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("trigger-elicitation-request"),
        "{}",
        out.stdout
    );

    // Its simulated logging sends an error-level message at once, shown with the server's name.
    let out = run(&["--verbose", "--call", "toggle-simulated-logging"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.contains("server log everything ["),
        "{}",
        out.stderr
    );
}
