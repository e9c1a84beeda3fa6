//! `subscriptions/listen` against the official Python SDK's server (mcp 2.3.0,
//! drivers/tests/peers/fastmcp_server.py `--changes`) in the 2026-07-28 era, over stdio and
//! Streamable HTTP: after a subscription to `test://counter`, the `bump` tool's resource update
//! and tool list change reach the same callbacks as in the legacy era.
//!
//!
//! List changes of resources and prompts from real processes: the Python SDK's `announce` tool
//! in the 2025-11-25 era (plain notifications) and in the 2026-07-28 era (through the listen),
//! and the test kit's server (`--behave lists-change`, 2025-11-25) after each call.
//!
//! The peers come from `.ci/install-peers` (see drivers/tests/peers/PEERS.md). Each test prints
//! `skipped: …` and passes when its peer is missing, and fails instead under `CI=true`.

use mcp_connect::proto::{Era, EraChoice, ListKind};
use mcp_connect::{
    Client, ClientConfig, HttpTransport, HttpTransportConfig, ListChangedCallback,
    ResourceUpdatedCallback, StdioConfig, StdioTransport,
};
use mcp_testkit::{close_and_check, peer_bin, peer_script, serve, HttpPeer};
use serde_json::json;
use smol::channel::{unbounded, Receiver};
use std::sync::Arc;
use std::time::Duration;

/// How long a test waits for a notification the server sends at once before it fails.
const EVENT_LIMIT: Duration = Duration::from_secs(30);

/// Callbacks that send what they hear to the returned channels.
fn settings() -> (ClientConfig, Receiver<ListKind>, Receiver<String>) {
    let (lists_tx, lists) = unbounded();
    let (updates_tx, updates) = unbounded();
    let settings = ClientConfig {
        on_list_changed: Some(ListChangedCallback(Arc::new(move |kind| {
            let _ = lists_tx.try_send(kind);
        }))),
        on_resource_updated: Some(ResourceUpdatedCallback(Arc::new(move |uri: &str| {
            let _ = updates_tx.try_send(uri.to_owned());
        }))),
        ..ClientConfig::default()
    };
    (settings, lists, updates)
}

async fn within<T>(what: &str, rx: &Receiver<T>) -> T {
    let got = async { rx.recv().await.ok() };
    let bound = async {
        smol::Timer::after(EVENT_LIMIT).await;
        None
    };
    smol::future::or(got, bound)
        .await
        .unwrap_or_else(|| panic!("no {what} within {EVENT_LIMIT:?}"))
}

/// Subscribes, bumps, and waits for both events; twice, so the second bump is heard on the same
/// stream.
async fn checks(client: &Client, lists: &Receiver<ListKind>, updates: &Receiver<String>) {
    assert_eq!(client.era(), Some(Era::Modern));
    client.subscribe_resource("test://counter").await.unwrap();
    for n in 1..=2 {
        let out = client.call_tool("bump", json!({})).await.unwrap();
        assert!(!out.is_error, "{out:?}");
        assert_eq!(within("resource update", updates).await, "test://counter");
        assert_eq!(within("list change", lists).await, ListKind::Tools);
        let read = client.read_resource("test://counter").await.unwrap();
        assert_eq!(
            read.contents[0].text.as_deref(),
            Some(n.to_string().as_str())
        );
    }
    assert_eq!(client.resources_updated(), 2);
    // The list listen, then the one with the URI.
    assert_eq!(client.listens_sent(), 2);
}

#[test]
fn python_sdk_listen_over_stdio() {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let script = peer_script("fastmcp_server.py");
    let (settings, lists, updates) = settings();
    smol::block_on(async {
        let config = StdioConfig::new(python).args([script.as_os_str()]).args([
            "--transport",
            "stdio",
            "--changes",
        ]);
        let client = Client::with_config(StdioTransport::spawn(config).unwrap(), settings);
        if let Err(e) = client.initialize().await {
            panic!(
                "initialize failed: {e}\nserver stderr:\n{}",
                client.transport().stderr_tail().unwrap_or_default()
            );
        }
        checks(&client, &lists, &updates).await;
        close_and_check(client).await;
    })
}

#[test]
fn python_sdk_listen_over_http() {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let peer = HttpPeer::python(&python, &["--changes"]);
    let (settings, lists, updates) = settings();
    smol::block_on(async {
        let client = Client::with_config(
            HttpTransport::new(HttpTransportConfig::new(peer.url.as_str())).unwrap(),
            settings,
        );
        if let Err(e) = client.initialize().await {
            panic!("initialize failed: {e}\nserver output:\n{}", peer.output());
        }
        checks(&client, &lists, &updates).await;
        client.close().await.unwrap();
    });
    peer.stop();
}

/// The Python SDK's `announce` in `era`: the resource and prompt list changes reach
/// `on_list_changed`.
fn python_sdk_announces_in(era: EraChoice) {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let script = peer_script("fastmcp_server.py");
    let (mut settings, lists, _updates) = settings();
    settings.session.era = era;
    smol::block_on(async {
        let config = StdioConfig::new(python).args([script.as_os_str()]).args([
            "--transport",
            "stdio",
            "--changes",
        ]);
        let client = Client::with_config(StdioTransport::spawn(config).unwrap(), settings);
        if let Err(e) = client.initialize().await {
            panic!(
                "initialize failed: {e}\nserver stderr:\n{}",
                client.transport().stderr_tail().unwrap_or_default()
            );
        }
        let modern = era == EraChoice::Auto;
        assert_eq!(
            client.era(),
            Some(if modern { Era::Modern } else { Era::Legacy })
        );
        if modern {
            // The listen for list changes is open (acknowledged) before the server is asked.
            client.subscribe_resource("test://counter").await.unwrap();
        }
        let out = client.call_tool("announce", json!({})).await.unwrap();
        assert!(!out.is_error, "{out:?}");
        let mut heard = vec![
            within("list change", &lists).await,
            within("list change", &lists).await,
        ];
        heard.sort_by_key(|k| format!("{k:?}"));
        assert_eq!(heard, [ListKind::Prompts, ListKind::Resources]);
        assert_eq!(client.listens_sent(), if modern { 2 } else { 0 });
        close_and_check(client).await;
    })
}

#[test]
fn python_sdk_list_changes_in_the_legacy_era() {
    python_sdk_announces_in(EraChoice::Legacy);
}

#[test]
fn python_sdk_list_changes_through_the_listen() {
    python_sdk_announces_in(EraChoice::Auto);
}

#[test]
fn testkit_server_list_changes_in_the_legacy_era() {
    let (settings, lists, _updates) = settings();
    smol::block_on(async {
        let client = Client::with_config(
            StdioTransport::spawn(serve(&["lists-change"])).unwrap(),
            settings,
        );
        client.initialize().await.unwrap();
        assert_eq!(client.era(), Some(Era::Legacy));
        for _ in 0..2 {
            client
                .call_tool("echo", json!({"text": "hi"}))
                .await
                .unwrap();
            for kind in [ListKind::Tools, ListKind::Resources, ListKind::Prompts] {
                assert_eq!(within("list change", &lists).await, kind);
            }
        }
        assert_eq!(client.listens_sent(), 0);
        close_and_check(client).await;
    })
}
