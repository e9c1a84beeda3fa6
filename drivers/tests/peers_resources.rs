//! Resources, prompts and completion against real servers over stdio: the reference TypeScript
//! server-everything (legacy era: resources, templates, subscriptions, prompts with arguments and
//! completions) and the official Python SDK's server (drivers/tests/peers/fastmcp_server.py, in
//! both eras).
//!
//! The peers come from `.ci/install-peers` (see drivers/tests/peers/PEERS.md). Each test prints
//! `skipped: …` and passes when its peer is missing, and fails instead under `CI=true`.

use mcp_connect::proto::prompts::CompletionRef;
use mcp_connect::proto::{ContentBlock, Era, EraChoice, RequestError};
use mcp_connect::{
    Client, ClientConfig, Error, HttpTransport, HttpTransportConfig, ResourceUpdatedCallback,
    StdioConfig, StdioTransport,
};
use mcp_testkit::{close_and_check, peer_bin, peer_script, HttpPeer};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// How long a test waits for a notification the server sends at once before it fails.
const EVENT_LIMIT: Duration = Duration::from_secs(30);

fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object: {v}"),
    }
}

async fn connect(config: StdioConfig, settings: ClientConfig) -> Client {
    let client = Client::with_config(
        StdioTransport::spawn(config).expect("spawn the peer"),
        settings,
    );
    if let Err(e) = client.initialize().await {
        panic!(
            "initialize failed: {e}\nserver stderr:\n{}",
            client.transport().stderr_tail().unwrap_or_default()
        );
    }
    client
}

fn text_of(content: &ContentBlock) -> &str {
    match content {
        ContentBlock::Text { text } => text,
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn everything_resources_prompts_completions_and_subscriptions() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    smol::block_on(async {
        let (tx, rx) = smol::channel::unbounded::<String>();
        let settings = ClientConfig {
            on_resource_updated: Some(ResourceUpdatedCallback(Arc::new(move |uri: &str| {
                let _ = tx.try_send(uri.to_owned());
            }))),
            ..ClientConfig::default()
        };
        let client = connect(StdioConfig::new(bin).args(["stdio"]), settings).await;
        assert_eq!(client.era(), Some(Era::Legacy));

        // Resources: listed, then one read as text.
        let resources = client.list_resources().await.unwrap();
        assert!(resources.len() >= 3, "{resources:?}");
        let doc = resources
            .iter()
            .find(|r| r.uri.ends_with("/features.md"))
            .expect("features.md is listed");
        assert_eq!(doc.mime_type.as_deref(), Some("text/markdown"));
        let read = client.read_resource(&doc.uri).await.unwrap();
        assert_eq!(read.contents.len(), 1);
        assert_eq!(read.contents[0].uri, doc.uri);
        assert!(
            read.contents[0]
                .text
                .as_deref()
                .is_some_and(|t| t.len() > 100),
            "{read:?}"
        );

        // Templates: expanded per RFC 6570 and read, as text and as a blob.
        let templates = client.list_resource_templates().await.unwrap();
        let text = templates
            .iter()
            .find(|t| t.uri_template.contains("/dynamic/text/"))
            .expect("the dynamic text template");
        let blob = templates
            .iter()
            .find(|t| t.uri_template.contains("/dynamic/blob/"))
            .expect("the dynamic blob template");
        let vars = map(json!({"resourceId": 7}));
        let read = client.read_template(text, &vars).await.unwrap();
        assert_eq!(read.contents[0].uri, "demo://resource/dynamic/text/7");
        assert!(
            read.contents[0]
                .text
                .as_deref()
                .is_some_and(|t| t.contains('7')),
            "{read:?}"
        );
        let read = client.read_template(blob, &vars).await.unwrap();
        let bytes = read.contents[0]
            .blob_bytes()
            .expect("a blob")
            .expect("valid base64");
        assert!(!bytes.is_empty());
        // A resource it does not have: the server's error, typed.
        let missing = client.read_resource("demo://resource/nope").await;
        assert!(matches!(missing, Err(Error::Protocol(_))), "{missing:?}");

        // Prompts: with arguments, and with an embedded resource.
        let prompts = client.list_prompts().await.unwrap();
        let args = prompts
            .iter()
            .find(|p| p.name == "args-prompt")
            .expect("args-prompt");
        assert_eq!(args.arguments.len(), 2);
        assert!(args.arguments[0].required && !args.arguments[1].required);
        let got = client
            .get_prompt(
                "args-prompt",
                &map(json!({"city": "Paris", "state": "IDF"})),
            )
            .await
            .unwrap();
        assert!(
            text_of(&got.messages[0].content).contains("Paris"),
            "{got:?}"
        );
        assert_eq!(got.messages[0].role, "user");
        let got = client
            .get_prompt(
                "resource-prompt",
                &map(json!({"resourceType": "Text", "resourceId": "3"})),
            )
            .await
            .unwrap();
        assert!(
            got.messages
                .iter()
                .any(|m| matches!(&m.content, ContentBlock::Resource { resource }
                    if resource.uri == "demo://resource/dynamic/text/3")),
            "{got:?}"
        );
        let simple = client
            .get_prompt("simple-prompt", &Map::new())
            .await
            .unwrap();
        assert!(!simple.messages.is_empty());

        // Completion: the second argument narrowed by the first, given as context.
        let prompt = CompletionRef::Prompt {
            name: "completable-prompt".into(),
        };
        let c = client
            .complete(&prompt, "department", "E", &Map::new())
            .await
            .unwrap();
        assert_eq!(c.values, ["Engineering"]);
        let c = client
            .complete(&prompt, "name", "", &map(json!({"department": "Sales"})))
            .await
            .unwrap();
        assert_eq!(c.values, ["David", "Eve", "Frank"]);

        // Subscriptions: the server sends an update at once when its updates are switched on.
        client.subscribe_resource(&doc.uri).await.unwrap();
        let r = client
            .call_tool("toggle-subscriber-updates", json!({}))
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        let uri = smol::future::or(async { rx.recv().await.ok() }, async {
            smol::Timer::after(EVENT_LIMIT).await;
            None
        })
        .await
        .expect("an update within the limit");
        assert_eq!(uri, doc.uri);
        assert!(client.resources_updated() >= 1);
        client.unsubscribe_resource(&doc.uri).await.unwrap();

        close_and_check(client).await;
    })
}

#[test]
fn python_sdk_resources_prompts_completions_modern() {
    python_sdk_in(EraChoice::Auto);
}

#[test]
fn python_sdk_resources_prompts_completions_legacy() {
    python_sdk_in(EraChoice::Legacy);
}

/// The Python SDK server (mcp 2.3.0, dual-era) in an era: the same answers in both.
fn python_sdk_in(era: EraChoice) {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let script = peer_script("fastmcp_server.py");
    smol::block_on(async {
        let config = StdioConfig::new(python)
            .args([script.as_os_str()])
            .args(["--transport", "stdio"]);
        let mut settings = ClientConfig::default();
        settings.session.era = era;
        let client = connect(config, settings).await;
        python_checks(&client, era).await;
        close_and_check(client).await;
    })
}

#[test]
fn python_sdk_resources_prompts_completions_over_http_modern() {
    python_sdk_over_http(EraChoice::Auto);
}

#[test]
fn python_sdk_resources_prompts_completions_over_http_legacy() {
    python_sdk_over_http(EraChoice::Legacy);
}

/// The same over Streamable HTTP (the modern era's `Mcp-Name` header carries the URI or the
/// prompt's name).
fn python_sdk_over_http(era: EraChoice) {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let peer = HttpPeer::python(&python, &[]);
    smol::block_on(async {
        let mut settings = ClientConfig::default();
        settings.session.era = era;
        let client = Client::with_config(
            HttpTransport::new(HttpTransportConfig::new(peer.url.as_str())).unwrap(),
            settings,
        );
        if let Err(e) = client.initialize().await {
            panic!("initialize failed: {e}\nserver output:\n{}", peer.output());
        }
        python_checks(&client, era).await;
        client.close().await.unwrap();
    });
    peer.stop();
}

/// What the Python SDK server answers, the same in either era and over either transport.
async fn python_checks(client: &Client, era: EraChoice) {
    {
        let want = if era == EraChoice::Legacy {
            Era::Legacy
        } else {
            Era::Modern
        };
        assert_eq!(client.era(), Some(want));

        let resources = client.list_resources().await.unwrap();
        let mut uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        uris.sort_unstable();
        assert_eq!(uris, ["test://greeting", "test://pixel"]);
        let read = client.read_resource("test://greeting").await.unwrap();
        assert_eq!(
            read.contents[0].text.as_deref(),
            Some("Hello from the Python SDK")
        );
        let read = client.read_resource("test://pixel").await.unwrap();
        let png = read.contents[0].blob_bytes().unwrap().unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{png:?}");

        let templates = client.list_resource_templates().await.unwrap();
        assert_eq!(templates.len(), 1);
        assert_eq!(templates[0].uri_template, "test://users/{id}/profile");
        // A value with a space and a slash stays inside its segment (percent-encoded).
        let read = client
            .read_template(&templates[0], &map(json!({"id": "ada"})))
            .await
            .unwrap();
        assert_eq!(
            read.contents[0].text.as_deref(),
            Some("profile of user ada")
        );
        assert_eq!(read.contents[0].uri, "test://users/ada/profile");

        let prompts = client.list_prompts().await.unwrap();
        let mut names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["plain", "review"]);
        let review = prompts.iter().find(|p| p.name == "review").unwrap();
        let required: Vec<(&str, bool)> = review
            .arguments
            .iter()
            .map(|a| (a.name.as_str(), a.required))
            .collect();
        assert_eq!(required, [("code", true), ("language", false)]);
        let got = client
            .get_prompt("review", &map(json!({"code": "x = 1", "language": "rust"})))
            .await
            .unwrap();
        assert_eq!(got.messages.len(), 2);
        assert_eq!(
            text_of(&got.messages[0].content),
            "Review this rust code:\nx = 1"
        );
        assert_eq!(got.messages[1].role, "assistant");
        assert!(
            matches!(&got.messages[1].content, ContentBlock::Resource { resource }
                if resource.text.as_deref() == Some("Hello from the Python SDK")),
            "{got:?}"
        );
        let plain = client.get_prompt("plain", &Map::new()).await.unwrap();
        assert_eq!(text_of(&plain.messages[0].content), "plain prompt");
        // A missing required argument: the server's error.
        assert!(client.get_prompt("review", &Map::new()).await.is_err());

        let c = client
            .complete(
                &CompletionRef::Prompt {
                    name: "review".into(),
                },
                "language",
                "p",
                &Map::new(),
            )
            .await
            .unwrap();
        assert_eq!(c.values, ["python", "perl", "php"]);
        assert_eq!(c.total, Some(3));
        let template = CompletionRef::ResourceTemplate {
            uri: "test://users/{id}/profile".into(),
        };
        let c = client
            .complete(&template, "id", "a", &Map::new())
            .await
            .unwrap();
        assert_eq!(c.values, ["ada", "alan"]);
        let c = client
            .complete(&template, "id", "", &map(json!({"team": "ops"})))
            .await
            .unwrap();
        assert_eq!(c.values, ["otto", "olga"]);

        // In the legacy era the server declares `resources.subscribe: false`: refused before
        // anything is sent. In the modern era it serves `subscriptions/listen` (and so declares
        // `subscribe: true`): the URI joins the listen, acknowledged (peers_listen.rs has the
        // updates).
        let sent = client.stats();
        let subscribed = client.subscribe_resource("test://greeting").await;
        match era {
            EraChoice::Legacy => {
                assert!(
                    matches!(&subscribed, Err(Error::Request(RequestError::NotOffered { capability, .. }))
                        if capability == "resources.subscribe"),
                    "{subscribed:?}"
                );
                assert_eq!(client.stats(), sent);
            }
            _ => {
                assert!(subscribed.is_ok(), "{subscribed:?}");
                assert_eq!(client.listens_sent(), 1);
                client
                    .unsubscribe_resource("test://greeting")
                    .await
                    .unwrap();
            }
        }
    }
}
