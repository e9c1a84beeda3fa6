//! The skills extension (SEP-2640) in the session: its requests are refused without a round trip
//! unless the server declared the extension (and `directoryRead` for directory reads), go out
//! as the extension's schema says, and their answers decode into entries in both eras. Fake
//! time, no I/O. The integrity rules themselves are src/skills.rs's unit tests.

use mcp_proto::skills::{SkillFiles, SKILLS_EXTENSION};
use mcp_proto::{EraChoice, Event, Reply, Request, RequestError, RequestId, Session};
use serde_json::{json, Value};

mod opened;
use opened::{events, line, opened, sent};

fn outcome(s: &mut Session, id: RequestId) -> Option<Result<Reply, RequestError>> {
    events(s).into_iter().find_map(|e| match e {
        Event::Response { id: got, result } if got == id => Some(result),
        _ => None,
    })
}

fn requests() -> Vec<(Request, &'static str)> {
    let ext = "extensions.io.modelcontextprotocol/skills";
    vec![
        (Request::list_skills(None), ext),
        (Request::list_skills(Some("c")), ext),
        (Request::get_skill("skill://a/SKILL.md"), ext),
        (
            Request::read_directory("skill://a", None),
            "extensions.io.modelcontextprotocol/skills.directoryRead",
        ),
    ]
}

#[test]
fn nothing_goes_out_unless_the_server_declared_the_extension() {
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        for (caps, lacking) in [
            (json!({"resources": {}}), 4),
            (json!({"resources": {}, "extensions": {"other/ext": {}}}), 4),
            (
                json!({"resources": {}, "extensions": {SKILLS_EXTENSION: {}}}),
                1,
            ),
            (
                json!({"resources": {}, "extensions": {SKILLS_EXTENSION: {"directoryRead": "yes"}}}),
                1,
            ),
            (
                json!({"resources": {}, "extensions": {SKILLS_EXTENSION: {"directoryRead": true}}}),
                0,
            ),
        ] {
            let (mut s, now) = opened(era, &caps);
            let mut refused = 0;
            for (request, capability) in requests() {
                let method = request.method().to_owned();
                let id = s.send(request, now).unwrap();
                let out = sent(&mut s);
                match outcome(&mut s, id) {
                    None => {
                        assert_eq!(out.len(), 1, "{method} with {caps} in {era:?}");
                        assert_eq!(out[0]["method"], method.as_str());
                    }
                    Some(Err(RequestError::NotOffered {
                        method: m,
                        capability: c,
                    })) => {
                        assert!(out.is_empty(), "{method} went out with {caps}");
                        assert_eq!((m.as_str(), c.as_str()), (method.as_str(), capability));
                        refused += 1;
                    }
                    other => panic!("{method} with {caps} in {era:?}: {other:?}"),
                }
            }
            assert_eq!(refused, lacking, "{caps} in {era:?}");
        }
    }
}

#[test]
fn requests_go_out_as_the_extension_says() {
    let caps = json!({"resources": {}, "extensions": {SKILLS_EXTENSION: {"directoryRead": true}}});
    let (mut s, now) = opened(EraChoice::Legacy, &caps);
    for (request, _) in requests() {
        s.send(request, now).unwrap();
    }
    s.send(Request::read_directory("skill://a", Some("n")), now)
        .unwrap();
    let params: Vec<(String, Value)> = sent(&mut s)
        .iter()
        .map(|m| {
            (
                m["method"].as_str().unwrap().to_owned(),
                m["params"].clone(),
            )
        })
        .collect();
    assert_eq!(
        params,
        [
            ("skills/list".into(), json!({})),
            ("skills/list".into(), json!({"cursor": "c"})),
            ("skills/get".into(), json!({"uri": "skill://a/SKILL.md"})),
            (
                "resources/directory/read".into(),
                json!({"uri": "skill://a"})
            ),
            (
                "resources/directory/read".into(),
                json!({"uri": "skill://a", "cursor": "n"})
            ),
        ]
    );
}

#[test]
fn answers_decode_into_entries_in_both_eras() {
    let caps = json!({"resources": {}, "extensions": {SKILLS_EXTENSION: {"directoryRead": true}}});
    let entry = json!({"uri": "skill://a/SKILL.md",
                       "frontmatter": {"name": "a", "description": "d", "license": "MIT"},
                       "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:00", "size": 3}]});
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let (mut s, now) = opened(era, &caps);
        let answer = |s: &mut Session, request: Request, result: Value| {
            let id = s.send(request, now).unwrap();
            sent(s);
            line(
                s,
                &json!({"jsonrpc": "2.0", "id": id.0, "result": result}).to_string(),
                now,
            );
            outcome(s, id).expect("answered")
        };
        let listed = answer(
            &mut s,
            Request::list_skills(None),
            json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                   "nextCursor": "p2",
                   // The second entry is lenient-read: its resources are judged when loaded.
                   "skills": [entry, {"uri": "skill://b/SKILL.md", "resources": "dynamic"}]}),
        );
        let Ok(Reply::Skills(page)) = listed else {
            panic!("{listed:?}")
        };
        assert_eq!(page.next_cursor.as_deref(), Some("p2"));
        assert_eq!(page.skills[0].name(), "a");
        assert_eq!(page.skills[0].frontmatter["license"], "MIT");
        assert!(matches!(&page.skills[0].resources, SkillFiles::Listed(f) if f[0].size == 3));
        assert_eq!(
            page.skills[1].resources,
            SkillFiles::Other(json!("dynamic"))
        );
        let got = answer(
            &mut s,
            Request::get_skill("skill://a/SKILL.md"),
            json!({"skill": entry, "ttlMs": 1000, "cacheScope": "public"}),
        );
        let Ok(Reply::Skill(got)) = got else {
            panic!("{got:?}")
        };
        assert_eq!(got.skill, page.skills[0]);
        let dir = answer(
            &mut s,
            Request::read_directory("skill://a", None),
            json!({"resources": [{"uri": "skill://a/t", "name": "t", "mimeType": "inode/directory"}]}),
        );
        let Ok(Reply::Directory(dir)) = dir else {
            panic!("{dir:?}")
        };
        assert_eq!(
            dir.resources[0].mime_type.as_deref(),
            Some("inode/directory")
        );
        // A listing that is not one fails the request, not the session.
        let bad = answer(
            &mut s,
            Request::list_skills(None),
            json!({"skills": "none"}),
        );
        assert!(bad.is_err(), "{bad:?}");
    }
}
