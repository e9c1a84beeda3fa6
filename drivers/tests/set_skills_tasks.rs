//! A `ServerSet`'s skills and task tools against the test kit's stdio server: every server's
//! skills listed with their server (a server without the extension offers none, a failed listing
//! is reported), a skill loaded from the one server that lists it (two that list it: the caller
//! names one), liars refused, the set-level `load_skill` tool and its index; and a set tool whose
//! server answers with a task (`--behave tasks-…`: `research` requires one) waited for to its
//! result, as a single client's bridged tool is — cancelled when the tool's timeout passes.

use mcp_connect::servers::skills::SetLoadSkillTool;
use mcp_connect::{AgentTool, Error, Launch, ServerSet, ServerSetConfig, ServerSpec, SetError};
use mcp_testkit::serve;
use serde_json::json;
use std::future::Future;
use std::time::Duration;

/// `what`'s outcome, or a panic if it is not done within `limit` (a backstop, not a wait).
async fn within<T>(limit: Duration, what: &str, f: impl Future<Output = T>) -> T {
    let done = smol::future::or(async { Some(f.await) }, async {
        smol::Timer::after(limit).await;
        None
    })
    .await;
    done.unwrap_or_else(|| panic!("{what}: not done after {limit:?}"))
}

const LIMIT: Duration = Duration::from_secs(60);

fn spec(name: &str, behave: &[&str]) -> ServerSpec {
    ServerSpec::new(name, Launch::Stdio(serve(behave)))
}

async fn set_of(specs: Vec<ServerSpec>) -> ServerSet {
    let set = ServerSet::connect(specs, ServerSetConfig::default()).await;
    assert!(
        set.failures().await.is_empty(),
        "{:?}",
        set.failures().await
    );
    set
}

#[test]
fn skills_are_listed_with_their_server_and_loaded_from_it() {
    smol::block_on(within(LIMIT, "skills across the set", async {
        let set = set_of(vec![
            spec("a", &["skills"]),
            spec("b", &["skills"]),
            spec("plain", &[]),
        ])
        .await;
        let listed = set.list_skills().await;
        assert!(listed.failed.is_empty(), "{:?}", listed.failed);
        let of = |server: &str| {
            listed
                .items
                .iter()
                .filter(|s| s.server == server)
                .map(|s| s.item.name().to_owned())
                .collect::<Vec<_>>()
        };
        assert!(
            of("a").contains(&"pdf-processing".to_owned()),
            "{:?}",
            of("a")
        );
        assert_eq!(of("a"), of("b"));
        // No extension declared: no skills, and no failure.
        assert!(of("plain").is_empty());

        // Two servers list it: the caller must name one.
        match set.load_skill(None, "pdf-processing").await {
            Err(SetError::UnknownSkill { skill, servers }) => {
                assert_eq!(skill, "pdf-processing");
                assert_eq!(servers, ["a", "b"]);
            }
            other => panic!("{:?}", other.map(|l| l.server)),
        }
        let loaded = set.load_skill(Some("b"), "pdf-processing").await.unwrap();
        assert_eq!(loaded.server, "b");
        assert!(loaded.item.text.starts_with("---\nname: pdf-processing\n"));
        let forms = set
            .read_skill_file("b", &loaded.item, "references/FORMS.md")
            .await
            .unwrap();
        assert_eq!(forms, b"Supporting content.\n");
        // A liar is refused by its server's client.
        match set.load_skill(Some("a"), "digest-lie").await {
            Err(SetError::Server {
                server,
                cause: Error::Skill(_),
            }) => assert_eq!(server, "a"),
            other => panic!("{:?}", other.map(|l| l.server)),
        }
        match set.load_skill(None, "nope").await {
            Err(SetError::UnknownSkill { servers, .. }) => assert!(servers.is_empty()),
            other => panic!("{:?}", other.map(|l| l.server)),
        }
        // A server without skills, named: its refusal.
        assert!(set
            .load_skill(Some("plain"), "pdf-processing")
            .await
            .is_err());
        set.close().await;
    }));
}

#[test]
fn one_server_with_skills_is_routed_to_without_being_named() {
    smol::block_on(within(LIMIT, "a set with one skills server", async {
        let set = set_of(vec![spec("a", &["skills"]), spec("plain", &[])]).await;
        let loaded = set.load_skill(None, "pdf-processing").await.unwrap();
        assert_eq!(loaded.server, "a");

        // The set-level tool: its index names each skill under its server; a call loads it.
        let (tool, failed) = SetLoadSkillTool::new(&set).await;
        assert!(failed.is_empty());
        assert_eq!(tool.name(), "load_skill");
        assert!(tool.index().contains("\"a\""), "{}", tool.index());
        assert!(tool.description().contains("- pdf-processing: "));
        assert!(tool.skills().iter().all(|s| s.server == "a"));
        let text = tool.call(json!({"skill": "pdf-processing"})).await.unwrap();
        assert!(text.contains("# pdf-processing"), "{text}");
        let file = tool
            .call(json!({"skill": "pdf-processing", "file": "references/FORMS.md"}))
            .await
            .unwrap();
        assert!(file.contains("Supporting content."), "{file}");
        // Refusals are the model's to read: a liar, an unknown name, a server with none.
        for args in [
            json!({"skill": "size-lie"}),
            json!({"skill": "nope"}),
            json!({"skill": "pdf-processing", "server": "plain"}),
            json!({}),
        ] {
            match tool.call(args.clone()).await {
                Err(mcp_connect::ToolError::Retry(why)) => assert!(!why.is_empty()),
                other => panic!("{args}: {:?}", other.map(|_| ())),
            }
        }
        set.close().await;
    }));
}

#[test]
fn the_set_tool_of_two_servers_asks_for_the_server() {
    smol::block_on(within(LIMIT, "two skills servers", async {
        let set = set_of(vec![spec("a", &["skills"]), spec("b", &["skills"])]).await;
        let (tool, _) = SetLoadSkillTool::new(&set).await;
        match tool.call(json!({"skill": "pdf-processing"})).await {
            Err(mcp_connect::ToolError::Retry(why)) => {
                assert!(why.contains("a, b"), "{why}")
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        let text = tool
            .call(json!({"skill": "pdf-processing", "server": "b"}))
            .await
            .unwrap();
        assert!(text.contains("from MCP server \"b\""), "{text}");
        set.close().await;
    }));
}

#[test]
fn a_set_tool_that_requires_a_task_is_waited_for() {
    smol::block_on(within(LIMIT, "a task through the set", async {
        let set = set_of(vec![spec("t", &["tasks-ok"]), spec("plain", &[])]).await;
        // Through the set's call and through its bridged tool, as a single client's tool.
        let result = set.call("t__research", json!({})).await.unwrap();
        assert_eq!(result.text(), "researched");
        let tools = set.tools().await;
        let research = tools
            .iter()
            .find(|t| t.definition().name == "t__research")
            .expect("t__research");
        assert_eq!(research.call(json!({})).await.unwrap(), "researched");
        // A tool that allows a task is called plainly.
        let result = set.call("t__survey", json!({})).await.unwrap();
        assert_eq!(result.text(), "surveyed without a task");
        set.close().await;
    }));
}

#[test]
fn a_set_task_that_never_ends_times_out_with_the_tools_timeout() {
    smol::block_on(within(LIMIT, "a task that never ends", async {
        let mut t = spec("t", &["tasks-forever"]);
        t.tool_timeout = Some(Duration::from_millis(300));
        let set = set_of(vec![t]).await;
        match set.call("t__research", json!({})).await {
            Err(SetError::Server {
                server,
                cause: Error::Timeout(_),
            }) => assert_eq!(server, "t"),
            other => panic!("{other:?}"),
        }
        set.close().await;
    }));
}
