//! Resources, templates, prompts and completion across a `ServerSet`: two server-everything
//! processes (the same URIs and prompts from both), the test kit's server (tools only: it offers
//! none of them, which is no failure) and a server that cannot start (reported, not fatal).
//! Prompts are named `server__prompt` and routed; a resource is read from the server named, or
//! from the only one that lists it; a URI that two servers list must name one.
//!
//! Needs the real peer (see drivers/tests/peers/PEERS.md): each test prints `skipped: …` and
//! passes when it is missing, and fails instead under `CI=true`.

use mcp_connect::proto::prompts::CompletionRef;
use mcp_connect::proto::ContentBlock;
use mcp_connect::{Error, Launch, ServerSet, ServerSetConfig, ServerSpec, SetError, StdioConfig};
use mcp_testkit::{peer_bin, serve};
use serde_json::{json, Map, Value};
use std::time::Duration;

fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object: {v}"),
    }
}

fn everything(name: &str, bin: &std::path::Path) -> ServerSpec {
    ServerSpec::new(name, Launch::Stdio(StdioConfig::new(bin).args(["stdio"])))
}

#[test]
fn a_set_lists_reads_and_routes_resources_prompts_and_completions() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    smol::block_on(async {
        let mut broken = ServerSpec::new(
            "broken",
            Launch::Stdio(StdioConfig::new("/nonexistent/mcp-server")),
        );
        broken.startup_timeout = Duration::from_secs(10);
        let specs = vec![
            everything("a", &bin),
            ServerSpec::new("kit", Launch::Stdio(serve(&[]))),
            broken,
            everything("b", &bin),
        ];
        let set = ServerSet::connect(specs, ServerSetConfig::default()).await;

        // Resources: both everything servers' own, each named by its server; the test kit's
        // server offers none (not a failure); the broken one is reported, once.
        let listed = set.list_resources().await;
        let servers = |items: &[String]| {
            let mut s = items.to_vec();
            s.dedup();
            s
        };
        let from: Vec<String> = listed.items.iter().map(|r| r.server.clone()).collect();
        assert_eq!(servers(&from), ["a", "b"], "{from:?}");
        let of = |server: &str| {
            listed
                .items
                .iter()
                .filter(|r| r.server == server)
                .map(|r| r.item.uri.clone())
                .collect::<Vec<_>>()
        };
        assert!(of("a").len() >= 3);
        assert_eq!(of("a"), of("b"));
        assert_eq!(listed.failed.len(), 1, "{:?}", listed.failed);
        assert!(
            matches!(&listed.failed[0], SetError::Down { server, .. } if server == "broken"),
            "{:?}",
            listed.failed
        );

        // Read: by server; unnamed, a URI both list must name one.
        let uri = of("a")
            .into_iter()
            .find(|u| u.ends_with("/features.md"))
            .expect("features.md is listed");
        let read = set.read_resource(Some("b"), &uri).await.unwrap();
        assert_eq!(read.server, "b");
        assert_eq!(read.item.contents[0].uri, uri);
        match set.read_resource(None, &uri).await {
            Err(SetError::UnknownResource { servers, .. }) => assert_eq!(servers, ["a", "b"]),
            other => panic!("{other:?}"),
        }
        match set
            .read_resource(None, "demo://resource/dynamic/text/1")
            .await
        {
            Err(SetError::UnknownResource { servers, .. }) => assert!(servers.is_empty()),
            other => panic!("{other:?}"),
        }
        // A resource the server does not have: the server's error, and which server.
        let missing = set.read_resource(Some("a"), "demo://resource/nope").await;
        assert!(
            matches!(&missing, Err(SetError::Server { server, cause: Error::Protocol(_) }) if server == "a"),
            "{missing:?}"
        );
        let nobody = set.read_resource(Some("zz"), &uri).await;
        assert!(
            matches!(&nobody, Err(SetError::UnknownServer(s)) if s == "zz"),
            "{nobody:?}"
        );

        // Templates, each with its server.
        let templates = set.list_resource_templates().await;
        assert!(templates
            .items
            .iter()
            .any(|t| t.server == "b" && t.item.uri_template.contains("/dynamic/text/")));
        assert_eq!(templates.failed.len(), 1);

        // Prompts: named like tools, got through their server with their own name.
        let prompts = set.list_prompts().await;
        let names: Vec<&str> = prompts.items.iter().map(|p| p.name.as_str()).collect();
        assert!(names.contains(&"a__args-prompt"), "{names:?}");
        assert!(names.contains(&"b__args-prompt"), "{names:?}");
        let p = prompts
            .items
            .iter()
            .find(|p| p.name == "b__args-prompt")
            .unwrap();
        assert_eq!(
            (p.server.as_str(), p.prompt.name.as_str()),
            ("b", "args-prompt")
        );
        let got = set
            .get_prompt("b__args-prompt", &map(json!({"city": "Paris"})))
            .await
            .unwrap();
        assert!(
            matches!(&got.messages[0].content, ContentBlock::Text { text } if text.contains("Paris")),
            "{got:?}"
        );
        let unknown = set.get_prompt("args-prompt", &Map::new()).await;
        assert!(
            matches!(&unknown, Err(SetError::UnknownPrompt(n)) if n == "args-prompt"),
            "{unknown:?}"
        );
        assert_eq!(
            set.prompt_route("a__completable-prompt").await.unwrap(),
            ("a".to_owned(), "completable-prompt".to_owned())
        );

        // Completion, on the server named.
        let reference = CompletionRef::Prompt {
            name: "completable-prompt".into(),
        };
        let c = set
            .complete("a", &reference, "department", "E", &Map::new())
            .await
            .unwrap();
        assert_eq!(c.values, ["Engineering"]);
        // The test kit's server does not offer completion: refused before anything is sent.
        let refused = set
            .complete("kit", &reference, "department", "E", &Map::new())
            .await;
        assert!(
            matches!(&refused, Err(SetError::Server { server, cause: Error::Request(_) }) if server == "kit"),
            "{refused:?}"
        );

        set.close().await;
    })
}

#[test]
fn a_set_of_one_reads_what_it_does_not_list() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    smol::block_on(async {
        let set = ServerSet::connect(vec![everything("a", &bin)], ServerSetConfig::default()).await;
        // A template's expansion, which no listing has: the only server reads it.
        let read = set
            .read_resource(None, "demo://resource/dynamic/text/7")
            .await
            .unwrap();
        assert_eq!(read.server, "a");
        assert_eq!(read.item.contents[0].uri, "demo://resource/dynamic/text/7");
        set.close().await;
    })
}
