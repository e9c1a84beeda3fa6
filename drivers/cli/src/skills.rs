//! The `skills` command (the `io.modelcontextprotocol/skills` extension, SEP-2640): `skills
//! [list]` prints each skill's name and description (with `--config`, after its server's name);
//! `skills load NAME` prints its `SKILL.md` once the server's client verified it against the
//! listed entry (size, digest, frontmatter), and `--file PATH` one of its supporting files,
//! verified the same way; `--out FILE` writes the bytes instead. A file that does not match its
//! entry is refused: nothing of it is printed, and the command exits 1 saying why.

use crate::args::Options;
use crate::term;
use mcp_connect::proto::skills::{LoadedSkill, Skill};
use mcp_connect::servers::FromServer;
use mcp_connect::{Client, Error, ServerSet, SetError};
use serde_json::{json, Value};
use std::io::Write;

/// One line on stdout; a closed stdout (`| head`) is no failure of the command.
fn say(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// The listing: NAME<TAB>DESCRIPTION (after `SERVER ` in a config's), or one JSON array of the
/// entries as sent (each `{"server", "skill"}` in a config's).
pub(crate) fn print_list(items: &[(Option<&str>, &Skill)], json: bool) {
    if json {
        let all: Vec<Value> = items
            .iter()
            .map(|(server, skill)| {
                let skill = serde_json::to_value(skill).unwrap_or(Value::Null);
                match server {
                    Some(s) => json!({"server": s, "skill": skill}),
                    None => skill,
                }
            })
            .collect();
        return say(&term::json(&Value::Array(all).to_string()));
    }
    for (server, skill) in items {
        let first = match server {
            Some(s) => format!("{s} {}", skill.name()),
            None => skill.name().to_owned(),
        };
        say(&crate::output::listed(&first, skill.description()));
    }
}

/// The entry `name` picks among one server's: its URI, else the one entry of that name; `None`
/// for a `SKILL.md` URI it does not list (loaded through `skills/get`).
///
/// > "When two entries in one listing collide on `name`, hosts **MUST** disambiguate them …
/// > rather than silently discarding or preferring one." — SEP-2640 § Names
fn pick<'a>(skills: &'a [Skill], name: &str) -> Result<Option<&'a Skill>, String> {
    if let Some(s) = skills.iter().find(|s| s.uri == name) {
        return Ok(Some(s));
    }
    let named: Vec<&Skill> = skills.iter().filter(|s| s.name() == name).collect();
    match named[..] {
        [one] => Ok(Some(one)),
        [] if name.ends_with("/SKILL.md") => Ok(None),
        [] => Err(format!("no skill named {name:?} (skills list shows them)")),
        _ => Err(format!(
            "several skills are named {name:?}: give one's URI: {}",
            named
                .iter()
                .map(|s| s.uri.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Why a load failed: a refusal of the files (size, digest, frontmatter, a file not listed)
/// says so.
fn refused(name: &str, e: Error, fail: &dyn Fn(Error) -> String) -> String {
    match e {
        Error::Skill(e) => term::line(&format!("skill {name:?} refused: {e}")),
        e => fail(e),
    }
}

/// `skills load NAME [--file PATH]` on one server.
pub(crate) async fn load_one(
    client: &Client,
    name: &str,
    options: &Options,
    fail: &dyn Fn(Error) -> String,
) -> Result<(), String> {
    let skills = client.list_skills().await.map_err(fail)?;
    let loaded = match pick(&skills, name).map_err(|e| term::line(&e))? {
        Some(entry) => client.load_skill(entry).await,
        None => client.load_skill_uri(name).await,
    }
    .map_err(|e| refused(name, e, fail))?;
    let file = match options.feature_flags.file() {
        Some(path) => Some((
            path,
            client
                .read_skill_file(&loaded, path)
                .await
                .map_err(|e| refused(name, e, fail))?,
        )),
        None => None,
    };
    show(&loaded, None, file, options)
}

/// `skills load NAME [--file PATH]` across a config's servers: from the server `--server`
/// names, else the one that lists it.
pub(crate) async fn load_across(
    set: &ServerSet,
    name: &str,
    server: Option<&str>,
    options: &Options,
    fail: &dyn Fn(SetError) -> String,
) -> Result<(), String> {
    let from_server = |e: SetError| match e {
        SetError::Server {
            server,
            cause: Error::Skill(e),
        } => term::line(&format!("skill {name:?} of server {server:?} refused: {e}")),
        SetError::UnknownSkill { servers, .. } if servers.is_empty() => term::line(&format!(
            "no server lists a skill {name:?}: name its server with --server"
        )),
        SetError::UnknownSkill { servers, .. } => term::line(&format!(
            "a skill {name:?} is listed by servers {servers:?}: name one with --server"
        )),
        e => fail(e),
    };
    let FromServer {
        server,
        item: loaded,
    } = set.load_skill(server, name).await.map_err(from_server)?;
    let file = match options.feature_flags.file() {
        Some(path) => Some((
            path,
            set.read_skill_file(&server, &loaded, path)
                .await
                .map_err(from_server)?,
        )),
        None => None,
    };
    show(&loaded, Some(&server), file, options)
}

/// The `SKILL.md`, or the file read: its text escaped, or its bytes in `--out FILE`; with
/// `--json` one object `{"server"?, "skill", "uri", "file", "text"}`.
fn show(
    loaded: &LoadedSkill,
    server: Option<&str>,
    file: Option<(&str, Vec<u8>)>,
    options: &Options,
) -> Result<(), String> {
    let (path, bytes) = match file {
        Some((path, bytes)) => (Some(path), bytes),
        None => (None, loaded.text.clone().into_bytes()),
    };
    if let Some(out) = options.feature_flags.out_path() {
        std::fs::write(out, &bytes).map_err(|e| format!("--out {}: {e}", out.display()))?;
        eprintln!("wrote {} bytes to {}", bytes.len(), out.display());
        return Ok(());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "{} is a binary file of {} bytes: write it with --out FILE",
            path.unwrap_or("SKILL.md"),
            e.into_bytes().len()
        )
    })?;
    if options.json {
        let mut object = json!({
            "skill": loaded.entry.name(),
            "uri": loaded.entry.uri,
            "file": path,
            "text": text,
        });
        if let Some(s) = server {
            object["server"] = json!(s);
        }
        say(&term::json(&object.to_string()));
        return Ok(());
    }
    let shown = term::display(&text, term::Layout::Text).to_string();
    let _ = write!(std::io::stdout().lock(), "{shown}");
    if !shown.ends_with('\n') {
        say("");
    }
    Ok(())
}
