//! Record and replay (issue 21): sessions recorded from real peers (server-everything over stdio,
//! the Python SDK 2.3.0 server in both eras) and checked in under tests/recordings/ replay
//! through a real `Client` with no process; the live peers are recorded again and must still
//! give what the recordings hold; hostile recordings fail clearly.
//!
//! `MCP_RECORD_UPDATE=1 cargo test -p mcp-connect --test replay live` writes the recordings
//! again from the peers.

use mcp_connect::proto::EraChoice;
use mcp_connect::recording::{Header, Recorder, Recording, ReplayError, ReplayTransport};
use mcp_connect::{Client, ClientConfig, Error, StdioConfig, StdioTransport};
use mcp_testkit::{peer_bin, peer_script, repo_root, TempDir};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

fn recording(name: &str) -> PathBuf {
    repo_root().join("drivers/tests/recordings").join(name)
}

fn config(era: EraChoice) -> ClientConfig {
    let mut config = ClientConfig::default();
    config.session.era = era;
    config
}

/// What the application sees of a session with server-everything: the tools' names, an echo,
/// a resource read.
async fn everything_session(client: &Client) -> Result<Vec<String>, Error> {
    client.initialize().await?;
    let mut seen = vec![format!("{:?}", client.era())];
    let mut names: Vec<String> = client
        .list_tools()
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort_unstable();
    seen.push(names.join(","));
    let r = client
        .call_tool("echo", json!({"message": "hello"}))
        .await?;
    seen.push(r.text());
    let read = client
        .read_resource("demo://resource/dynamic/text/7")
        .await?;
    // Its text says when it was made: the words before the time.
    let read = serde_json::to_value(&read).unwrap();
    let text = read["contents"][0]["text"].as_str().unwrap_or_default();
    let text = text.split(" created at ").next().unwrap_or_default();
    seen.push(format!("{} {text}", read["contents"][0]["uri"]));
    Ok(seen)
}

/// The same with the Python SDK's test server (drivers/tests/peers/fastmcp_server.py).
async fn python_session(client: &Client) -> Result<Vec<String>, Error> {
    client.initialize().await?;
    let mut seen = vec![format!("{:?}", client.era())];
    let mut names: Vec<String> = client
        .list_tools()
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort_unstable();
    seen.push(names.join(","));
    let r = client.call_tool("add", json!({"a": 2, "b": 3})).await?;
    seen.push(r.text());
    let read = client.read_resource("test://greeting").await?;
    seen.push(serde_json::to_string(&read).unwrap());
    Ok(seen)
}

/// A session in progress: what the application sees, or the error.
type Pending<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<String>, Error>> + 'a>>;

/// A scripted session on an opened client.
type Session = for<'a> fn(&'a Client) -> Pending<'a>;

fn everything(c: &Client) -> Pending<'_> {
    Box::pin(everything_session(c))
}

fn python(c: &Client) -> Pending<'_> {
    Box::pin(python_session(c))
}

/// Replays `file` through `session`: what the application sees, or the error.
fn replay(file: &str, era: EraChoice, session: Session) -> Result<Vec<String>, Error> {
    let transport = ReplayTransport::from_file(recording(file))?;
    smol::block_on(async {
        let client = Client::with_config(transport, config(era));
        let seen = session(&client).await;
        client.close().await.expect("a replay closes cleanly");
        seen
    })
}

/// The recordings' three sessions: file, era, session, the peer's command (as the header
/// names it, and as run).
struct Case {
    file: &'static str,
    era: EraChoice,
    session: Session,
}

const EVERYTHING: Case = Case {
    file: "everything.mcplog",
    era: EraChoice::Auto,
    session: everything,
};
const PYTHON_LEGACY: Case = Case {
    file: "python-legacy.mcplog",
    era: EraChoice::Legacy,
    session: python,
};
const PYTHON_MODERN: Case = Case {
    file: "python-modern.mcplog",
    era: EraChoice::Auto,
    session: python,
};

#[test]
fn everything_replays_with_no_process() {
    let seen = replay(EVERYTHING.file, EVERYTHING.era, EVERYTHING.session).unwrap();
    assert_eq!(seen[0], "Some(Legacy)");
    assert!(seen[1].split(',').any(|t| t == "echo"), "{}", seen[1]);
    assert_eq!(seen[2], "Echo: hello");
    assert!(
        seen[3].contains("demo://resource/dynamic/text/7"),
        "{}",
        seen[3]
    );
}

#[test]
fn python_legacy_replays_with_no_process() {
    let seen = replay(PYTHON_LEGACY.file, PYTHON_LEGACY.era, PYTHON_LEGACY.session).unwrap();
    assert_eq!(seen[0], "Some(Legacy)");
    assert!(seen[1].contains("add,"), "{}", seen[1]);
    assert_eq!(seen[2], "5");
    assert!(seen[3].contains("Hello from the Python SDK"), "{}", seen[3]);
}

#[test]
fn python_modern_replays_with_no_process() {
    let seen = replay(PYTHON_MODERN.file, PYTHON_MODERN.era, PYTHON_MODERN.session).unwrap();
    assert_eq!(seen[0], "Some(Modern)");
    assert_eq!(seen[2], "5");
    assert!(seen[3].contains("Hello from the Python SDK"), "{}", seen[3]);
}

/// Records `case` against the live peer into a temporary file, replays that, and checks the
/// live session, its replay and the checked-in recording's replay all show the same. With
/// `MCP_RECORD_UPDATE=1`, the checked-in recording is written instead of compared.
fn live(case: Case, peer: &str, args: &[PathBuf]) {
    let Some(bin) = peer_bin(peer) else {
        return;
    };
    let dir = TempDir::new("mcp-replay");
    let path = dir.path().join(case.file);
    let shown: Vec<String> = std::iter::once(format!(".peers/bin/{peer}"))
        .chain(args.iter().map(|a| {
            a.strip_prefix(repo_root())
                .unwrap_or(a)
                .to_string_lossy()
                .into_owned()
        }))
        .collect();
    let recorder =
        Arc::new(Recorder::create(&path, &Header::stdio(&shown[0], &shown[1..])).expect("create"));
    let live_seen = smol::block_on(async {
        let transport = StdioTransport::spawn(StdioConfig::new(&bin).args(args.iter().cloned()))
            .expect("spawn the peer");
        let client = Client::with_config(
            Recording::new(transport, recorder.clone()),
            config(case.era),
        );
        client.initialize().await.expect("the live session opens");
        recorder.opened(&client);
        let seen = (case.session)(&client).await.expect("the live session");
        client.close().await.expect("close");
        seen
    });
    recorder.finish().expect("the recording is written");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains(&*repo_root().to_string_lossy()),
        "no local path: {text}"
    );
    let transport = ReplayTransport::from_file(&path).expect("the fresh recording reads");
    let replayed = smol::block_on(async {
        let client = Client::with_config(transport, config(case.era));
        let seen = (case.session)(&client).await;
        client.close().await.unwrap();
        seen
    })
    .expect("the fresh recording replays");
    assert_eq!(replayed, live_seen);
    if std::env::var_os("MCP_RECORD_UPDATE").is_some() {
        std::fs::copy(&path, recording(case.file)).expect("update the recording");
        return;
    }
    let checked_in = replay(case.file, case.era, case.session)
        .expect("the checked-in recording replays with today's client");
    assert_eq!(
        checked_in, live_seen,
        "the peer no longer answers as {} records: MCP_RECORD_UPDATE=1 writes it again",
        case.file
    );
}

#[test]
fn live_everything_still_matches_its_recording() {
    live(EVERYTHING, "everything", &[PathBuf::from("stdio")]);
}

#[test]
fn live_python_legacy_still_matches_its_recording() {
    live(
        PYTHON_LEGACY,
        "python",
        &[
            peer_script("fastmcp_server.py"),
            "--transport".into(),
            "stdio".into(),
        ],
    );
}

#[test]
fn live_python_modern_still_matches_its_recording() {
    live(
        PYTHON_MODERN,
        "python",
        &[
            peer_script("fastmcp_server.py"),
            "--transport".into(),
            "stdio".into(),
        ],
    );
}

/// The Python session, with a call the recording does not have.
fn other_call(c: &Client) -> Pending<'_> {
    Box::pin(async move {
        c.initialize().await?;
        c.list_tools().await?;
        let r = c.call_tool("add", json!({"a": 7, "b": 3})).await?;
        Ok(vec![r.text()])
    })
}

/// The legacy recording's text.
fn legacy_text() -> String {
    std::fs::read_to_string(recording(PYTHON_LEGACY.file)).unwrap()
}

fn replay_text(text: String, era: EraChoice, session: Session) -> Result<Vec<String>, Error> {
    let transport = ReplayTransport::from_string(text)?;
    smol::block_on(async {
        let client = Client::with_config(transport, config(era));
        let seen = session(&client).await;
        let _ = client.close().await;
        seen
    })
}

#[test]
fn a_client_that_sends_something_else_fails_naming_the_line() {
    let text = legacy_text();
    // The recorded call's line.
    let line = text
        .lines()
        .position(|l| l.starts_with("> ") && l.contains("\"tools/call\""))
        .unwrap()
        + 1;
    let err = replay_text(text, EraChoice::Legacy, other_call).unwrap_err();
    let Error::Replay(ReplayError::Mismatch {
        line: at,
        expected,
        sent,
    }) = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(*at, line);
    assert!(expected.contains(r#""a":2"#), "{expected}");
    assert!(sent.contains(r#""a":7"#), "{sent}");
    let message = err.to_string();
    assert!(message.contains(&format!("line {line}")), "{message}");
}

#[test]
fn a_client_that_sends_more_than_recorded_fails_clearly() {
    let text = legacy_text();
    // Cut after the tools/list answer: the call is one message too many.
    let lines: Vec<&str> = text.lines().collect();
    let list = lines
        .iter()
        .position(|l| l.starts_with("> ") && l.contains("\"tools/list\""))
        .unwrap();
    let cut: String = lines[..=list + 1]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    let err = replay_text(cut, EraChoice::Legacy, python).unwrap_err();
    let Error::Replay(ReplayError::Ended { line, sent }) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*line, list + 1);
    assert!(sent.contains("tools/call"), "{sent}");
}

#[test]
fn a_truncated_recording_is_refused_with_its_line() {
    let text = legacy_text();
    let cut = &text[..text.len() - 10];
    let lines = cut.lines().count();
    let err = ReplayTransport::from_str(cut).unwrap_err();
    assert!(
        matches!(&err, Error::Replay(ReplayError::Format { line, what }) if *line == lines && what.contains("truncated")),
        "{err:?}"
    );
}

#[test]
fn a_corrupt_line_is_refused_with_its_line() {
    let text = legacy_text();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines.iter().position(|l| l.starts_with("< ")).unwrap();
    lines[at] = "< 3 {\"jsonrpc\":\"2.0\",\"id\":".into();
    let corrupt: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let err = ReplayTransport::from_str(&corrupt).unwrap_err();
    assert!(
        matches!(&err, Error::Replay(ReplayError::Format { line, .. }) if *line == at + 1),
        "{err:?}"
    );
    for (bad, what) in [
        ("mcplog 2 {}\n", "version 2"),
        ("hello\n", "not a recording"),
        ("mcplog 1 {}\n? 0 x\n", "unknown kind"),
        ("mcplog 1 {}\n< x {}\n", "no time"),
        ("mcplog 1 {}\n<~ 0 \\q\n", "escape"),
        ("mcplog 1 {}\n> 0 nope\n", "not JSON"),
    ] {
        let err = ReplayTransport::from_str(bad).unwrap_err().to_string();
        assert!(err.contains(what), "{bad:?}: {err}");
    }
}

#[test]
fn a_16_mib_message_replays_and_a_line_over_the_limit_is_refused() {
    let text = legacy_text();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let call = lines
        .iter()
        .position(|l| l.starts_with("> ") && l.contains("\"tools/call\""))
        .unwrap();
    let id: serde_json::Value = serde_json::from_str(lines[call].splitn(3, ' ').nth(2).unwrap())
        .map(|m: serde_json::Value| m["id"].clone())
        .unwrap();
    let answers_call = |l: &String| {
        l.starts_with("< ")
            && serde_json::from_str::<serde_json::Value>(l.splitn(3, ' ').nth(2).unwrap())
                .is_ok_and(|m| m["id"] == id && m.get("result").is_some())
    };
    let answer = lines[call + 1..].iter().position(answers_call).unwrap() + call + 1;
    let big = "x".repeat(16 << 20);
    let result =
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": big}]}});
    lines[answer] = format!("< 5 {result}");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let seen = replay_text(text, EraChoice::Legacy, python).unwrap();
    assert_eq!(seen[2].len(), 16 << 20);

    let over = format!(
        "mcplog 1 {{}}\n< 0 \"{}\"\n",
        "x".repeat(mcp_connect::recording::MAX_LINE)
    );
    let err = ReplayTransport::from_str(&over).unwrap_err();
    assert!(
        matches!(&err, Error::Replay(ReplayError::Format { line: 2, what }) if what.contains("over the limit")),
        "{err:?}"
    );
}

#[test]
fn the_servers_other_bytes_and_its_end_are_replayed() {
    // A legacy server that prints a banner (not JSON, not UTF-8) and exits after the handshake.
    let text = "mcplog 1 {\"transport\":\"stdio\",\"server\":[\"s\"],\"era\":null}\n\
        <~ 0 hello \\xff\\n\n\
        # a comment\n\
        \n\
        . 9 end\n";
    let err = replay_text(text.into(), EraChoice::Legacy, python).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("hello"), "the banner is quoted: {message}");
}

/// With `timed(true)` the server's lines come as long after the client's message as they did
/// when recorded: the tools/list answer, recorded 400 ms after its request, is not read sooner.
#[test]
fn a_timed_replay_keeps_the_recorded_delays() {
    let text = legacy_text();
    let mut list_ms = None;
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 || l.starts_with('#') || l.is_empty() {
                return l.to_owned();
            }
            let (kind, rest) = l.split_once(' ').unwrap();
            let payload = rest.split_once(' ').unwrap().1;
            // Every line at 0 ms, but the answer after tools/list at 400 ms.
            let ms = match (kind, list_ms) {
                (">", _) if payload.contains("\"tools/list\"") => {
                    list_ms = Some(0);
                    0
                }
                ("<", Some(0)) => {
                    list_ms = Some(1);
                    400
                }
                ("<", Some(_)) | (">", Some(_)) => 400,
                _ => 0,
            };
            format!("{kind} {ms} {payload}")
        })
        .collect();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let transport = ReplayTransport::from_string(text).unwrap().timed(true);
    smol::block_on(async {
        let client = Client::with_config(transport, config(EraChoice::Legacy));
        client.initialize().await.unwrap();
        let started = std::time::Instant::now();
        let tools = client.list_tools().await.unwrap();
        let waited = started.elapsed();
        assert!(tools.iter().any(|t| t.name == "add"));
        assert!(
            waited >= std::time::Duration::from_millis(400),
            "{waited:?}"
        );
        client.close().await.unwrap();
    });
}
