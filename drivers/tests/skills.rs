//! The skills extension (SEP-2640) against a real child process: the test kit's stdio server
//! with `--behave skills` (testkit/src/skills.rs), in both eras, serves one true skill and hostile
//! ones whose files lie about their size or digest, whose frontmatter lies, whose entry is over
//! the limits or lists a file outside the skill, and one whose read is over the client's cap.
//! Each test asks the server which files it was asked to read (`testkit/reads`): nothing is read
//! before a skill is loaded, and nothing of a refused skill past its `SKILL.md`.

use mcp_connect::proto::{Reply, SkillError};
use mcp_connect::{AgentTool, Client, ClientConfig, Error, LoadSkillTool, Request, ToolError};
use mcp_testkit::{close_and_check, serve_in};
use serde_json::{json, Value};

async fn open(era: &str, config: ClientConfig) -> Client {
    let transport = mcp_connect::StdioTransport::spawn(serve_in(era, &["skills"])).expect("spawn");
    let client = Client::with_config(transport, config);
    if let Err(e) = client.initialize().await {
        panic!(
            "opening failed: {e}\nserver stderr:\n{}",
            client.transport().stderr_tail().unwrap_or_default()
        );
    }
    client
}

/// The skill files the server was asked to read, in order.
async fn reads(client: &Client) -> Vec<String> {
    let reply = client
        .request(Request::new("testkit/reads", Some(json!({}))))
        .await
        .expect("testkit/reads");
    let Reply::Raw(v) = reply else {
        panic!("{reply:?}")
    };
    serde_json::from_value(v["reads"].clone()).expect("a list of URIs")
}

fn skill_err(e: Error) -> SkillError {
    match e {
        Error::Skill(e) => e,
        other => panic!("not a skill refusal: {other:?}"),
    }
}

#[test]
fn a_true_skill_loads_and_its_files_read_verified_in_both_eras() {
    smol::block_on(async {
        for era in ["legacy", "modern"] {
            let client = open(era, ClientConfig::default()).await;
            let skills = client.list_skills().await.unwrap();
            let names: Vec<&str> = skills.iter().map(|s| s.name()).collect();
            assert_eq!(
                names,
                [
                    "pdf-processing",
                    "size-lie",
                    "digest-lie",
                    "frontmatter-lie",
                    "file-lie",
                    "huge",
                    "escape",
                    "big-read"
                ],
                "{era}"
            );
            // Listing read nothing.
            assert!(reads(&client).await.is_empty(), "{era}");
            let skill = client.load_skill(&skills[0]).await.unwrap();
            assert!(skill.text.starts_with("---\nname: pdf-processing\n"));
            assert_eq!(
                skill.files(),
                ["references/FORMS.md", "references/data.bin"]
            );
            // Only the SKILL.md was read to load it.
            assert_eq!(reads(&client).await, ["skill://pdf-processing/SKILL.md"]);
            let forms = client
                .read_skill_file(&skill, "references/FORMS.md")
                .await
                .unwrap();
            assert_eq!(forms, b"Supporting content.\n");
            let blob = client
                .read_skill_file(&skill, "skill://pdf-processing/references/data.bin")
                .await
                .unwrap();
            assert_eq!(blob, [0, 159, 146, 150]);
            // A file outside the skill, or not listed, is refused without a read.
            for (reference, escapes) in [
                ("../size-lie/SKILL.md", true),
                ("references/%2e%2e/x", true),
                ("references/NEW.md", false),
            ] {
                let e = skill_err(client.read_skill_file(&skill, reference).await.unwrap_err());
                assert_eq!(matches!(e, SkillError::Escapes { .. }), escapes, "{e}");
                assert_eq!(matches!(e, SkillError::Unlisted { .. }), !escapes, "{e}");
            }
            assert_eq!(reads(&client).await.len(), 3, "{era}");
            // The directory's children (directoryRead declared).
            let children = client
                .read_directory("skill://pdf-processing")
                .await
                .unwrap();
            assert_eq!(children[1].mime_type.as_deref(), Some("inode/directory"));
            // A skill no listing mentions loads by its URI (skills/get, then verified).
            let hidden = client
                .load_skill_uri("skill://hidden/SKILL.md")
                .await
                .unwrap();
            assert_eq!(hidden.entry.name(), "hidden");
            close_and_check(client).await;
        }
    })
}

#[test]
fn skills_whose_files_lie_are_refused_and_nothing_more_is_read() {
    smol::block_on(async {
        let client = open(
            "legacy",
            ClientConfig {
                max_read_bytes: 1024 * 1024,
                ..ClientConfig::default()
            },
        )
        .await;
        let skills = client.list_skills().await.unwrap();
        let by_name = |name: &str| skills.iter().find(|s| s.name() == name).unwrap();
        let refusal = |name: &'static str| {
            let client = &client;
            let entry = by_name(name);
            async move { client.load_skill(entry).await.map(drop).unwrap_err() }
        };

        let e = skill_err(refusal("size-lie").await);
        assert!(
            matches!(e, SkillError::SizeMismatch { got, expected, .. } if got > expected),
            "{e}"
        );
        let e = skill_err(refusal("digest-lie").await);
        assert!(matches!(e, SkillError::DigestMismatch { .. }), "{e}");
        let e = skill_err(refusal("frontmatter-lie").await);
        assert_eq!(
            e,
            SkillError::FrontmatterMismatch {
                file: "skill://frontmatter-lie/SKILL.md".into(),
                field: "description".into()
            }
        );
        // Refused from the entry alone: nothing read.
        let e = skill_err(refusal("huge").await);
        assert!(matches!(e, SkillError::TooLarge { .. }), "{e}");
        let e = skill_err(refusal("escape").await);
        assert!(matches!(e, SkillError::Escapes { .. }), "{e}");
        // Over the client's read cap: the read fails before any check.
        let e = refusal("big-read").await;
        assert!(matches!(e, Error::Resource(_)), "{e:?}");
        // A true SKILL.md, a lying supporting file.
        let skill = client.load_skill(by_name("file-lie")).await.unwrap();
        let e = skill_err(
            client
                .read_skill_file(&skill, "references/DATA.md")
                .await
                .unwrap_err(),
        );
        assert!(matches!(e, SkillError::DigestMismatch { .. }), "{e}");
        assert_eq!(
            reads(&client).await,
            [
                "skill://size-lie/SKILL.md",
                "skill://digest-lie/SKILL.md",
                "skill://frontmatter-lie/SKILL.md",
                "skill://big-read/SKILL.md",
                "skill://file-lie/SKILL.md",
                "skill://file-lie/references/DATA.md",
            ]
        );
        close_and_check(client).await;
    })
}

#[test]
fn the_bridged_tool_loads_skills_by_name_and_refuses_lies() {
    smol::block_on(async {
        let client = open("modern", ClientConfig::default()).await;
        let tool = LoadSkillTool::new(&client, "docs").await.unwrap();
        assert_eq!(tool.name(), "load_skill");
        assert!(tool.description().contains("MCP server \"docs\""));
        assert!(tool.description().contains(
            "- pdf-processing: The pdf-processing skill (skill://pdf-processing/SKILL.md)"
        ));
        let schema: Value = serde_json::from_str(tool.input_schema().get()).unwrap();
        assert_eq!(schema["required"], json!(["skill"]));
        assert!(reads(&client).await.is_empty());

        // A file before its skill is loaded: the model is told to load it first.
        let early = tool
            .call(json!({"skill": "pdf-processing", "file": "references/FORMS.md"}))
            .await;
        assert!(
            matches!(&early, Err(ToolError::Retry(m)) if m.contains("first")),
            "{early:?}"
        );
        let text = tool.call(json!({"skill": "pdf-processing"})).await.unwrap();
        assert!(
            text.starts_with("Skill pdf-processing from MCP server \"docs\""),
            "{text}"
        );
        assert!(text.contains("# pdf-processing"));
        assert!(text.contains("references/FORMS.md, references/data.bin"));
        let forms = tool
            .call(json!({"skill": "pdf-processing", "file": "references/FORMS.md"}))
            .await
            .unwrap();
        assert!(forms.ends_with("Supporting content.\n"), "{forms}");
        let blob = tool
            .call(json!({"skill": "pdf-processing", "file": "references/data.bin"}))
            .await
            .unwrap();
        assert!(blob.ends_with("(a binary file of 4 bytes)"), "{blob}");
        for (arguments, says) in [
            (json!({"skill": "digest-lie"}), "refused: skill://digest-lie/SKILL.md: digest"),
            (json!({"skill": "nope"}), "no skill named \"nope\""),
            (json!({"file": "x"}), "needs {\"skill\""),
            (
                json!({"skill": "pdf-processing", "file": "../digest-lie/SKILL.md"}),
                "refused: skill skill://pdf-processing/SKILL.md: ../digest-lie/SKILL.md is not a file",
            ),
        ] {
            let outcome = tool.call(arguments.clone()).await;
            assert!(
                matches!(&outcome, Err(ToolError::Retry(m)) if m.contains(says)),
                "{arguments}: {outcome:?}"
            );
        }
        // An unlisted skill by its URI.
        let hidden = tool
            .call(json!({"skill": "skill://hidden/SKILL.md"}))
            .await
            .unwrap();
        assert!(
            hidden.starts_with("Skill hidden from MCP server"),
            "{hidden}"
        );
        assert_eq!(
            reads(&client).await,
            [
                "skill://pdf-processing/SKILL.md",
                "skill://pdf-processing/references/FORMS.md",
                "skill://pdf-processing/references/data.bin",
                "skill://digest-lie/SKILL.md",
                "skill://hidden/SKILL.md",
            ]
        );
        close_and_check(client).await;
    })
}

#[test]
fn a_server_without_the_extension_is_not_asked() {
    smol::block_on(async {
        let transport = mcp_connect::StdioTransport::spawn(serve_in("legacy", &[])).expect("spawn");
        let client = Client::new(transport);
        client.initialize().await.unwrap();
        let e = client.list_skills().await.unwrap_err();
        assert!(
            matches!(
                &e,
                Error::Request(mcp_connect::proto::RequestError::NotOffered { .. })
            ),
            "{e:?}"
        );
        close_and_check(client).await;
    })
}
