//! A server's skills (the `io.modelcontextprotocol/skills` extension, SEP-2640) for an agent:
//! their names and descriptions as an index for its prompt, and one bridged tool, `load_skill`,
//! through which the model loads a skill (its `SKILL.md`, verified) and then reads its files
//! (each verified). Listing reads no file; nothing is read before the model asks.
//!
//! The client's own methods ([`Client::list_skills`], [`Client::load_skill`],
//! [`Client::read_skill_file`]) are the same steps for a program.

use crate::tools::{AgentTool, ToolError};
use crate::transport::BoxFuture;
use crate::{Client, Error};
use mcp_proto::skills::{LoadedSkill, Skill};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;

/// The bridged tool's name.
pub const LOAD_SKILL_TOOL: &str = "load_skill";

/// The bridged tool's input schema: the skill (its name, or its `SKILL.md` URI) and, once it is
/// loaded, one of its files.
const SCHEMA: &str = r#"{"type":"object","properties":{"skill":{"type":"string","description":"The skill's name as listed, or the URI of its SKILL.md"},"file":{"type":"string","description":"Optional: a file of the skill, relative to its root (for instance references/FORMS.md), once the skill is loaded"}},"required":["skill"],"additionalProperties":false}"#;

/// The most skills a [`LoadSkillTool`] keeps loaded at once; loading one more forgets them all
/// (the model loads again what it needs). Each holds its verified `SKILL.md`, up to 16 MiB.
pub const MAX_LOADED_SKILLS: usize = 16;

/// One server's skills as a tool an agent registers: `load_skill {skill, file?}`. Its
/// description carries the index (each skill's name and description, and the server's label),
/// so the model knows what it may load; a call loads the skill (its `SKILL.md`, verified against
/// the listed entry) or reads one of a loaded skill's files (verified). What the model reads is
/// tagged with the server it came from.
///
/// A refusal (a file whose size, digest or frontmatter is not its entry's, a file outside the
/// skill or not listed, an unknown or ambiguous name) comes back as [`ToolError::Retry`]: the
/// model reads why, and nothing of the refused content.
pub struct LoadSkillTool {
    client: Client,
    origin: String,
    skills: Vec<Skill>,
    description: String,
    schema: Box<RawValue>,
    /// The skills loaded, by URI: the entries held for the reads of their files.
    loaded: smol::lock::Mutex<HashMap<String, LoadedSkill>>,
}

impl LoadSkillTool {
    /// Lists the server's skills (`skills/list`, every page; no file is read) and makes the
    /// tool. `origin` is the label the host gives the server (not its self-reported name): it
    /// tags the index and every text the tool returns.
    ///
    /// > "Hosts **MUST** identify servers by a host-assigned label, not the server's
    /// > self-reported `serverInfo.name`." — SEP-2640 § Security Considerations
    pub async fn new(client: &Client, origin: &str) -> Result<LoadSkillTool, Error> {
        let skills = client.list_skills().await?;
        Ok(LoadSkillTool::with_skills(client, origin, skills))
    }

    /// The tool over entries already listed.
    pub fn with_skills(client: &Client, origin: &str, skills: Vec<Skill>) -> LoadSkillTool {
        let index = mcp_proto::skills::index(origin, &skills);
        let description = format!(
            "Loads a skill (instructions for a task) from MCP server {origin:?}, or, once loaded, \
             one of its files. Load a skill only when the task needs it.\n{index}"
        );
        LoadSkillTool {
            client: client.clone(),
            origin: origin.to_owned(),
            skills,
            description,
            // A constant that parses (tested).
            schema: RawValue::from_string(SCHEMA.to_owned())
                .unwrap_or_else(|_| RawValue::from_string("{}".to_owned()).expect("`{}` is JSON")),
            loaded: smol::lock::Mutex::new(HashMap::new()),
        }
    }

    /// The skills' names and descriptions as text for an agent's prompt
    /// ([`mcp_proto::skills::index`]).
    pub fn index(&self) -> String {
        mcp_proto::skills::index(&self.origin, &self.skills)
    }

    /// The entries listed.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The listed entry `skill` names: its URI, or its name when one entry has it.
    fn find(&self, skill: &str) -> Result<Option<&Skill>, String> {
        if let Some(s) = self.skills.iter().find(|s| s.uri == skill) {
            return Ok(Some(s));
        }
        let named: Vec<&Skill> = self.skills.iter().filter(|s| s.name() == skill).collect();
        match named.as_slice() {
            [one] => Ok(Some(one)),
            [] if skill.ends_with("/SKILL.md") => Ok(None),
            [] => Err(format!(
                "no skill named {skill:?}; the skills are: {}",
                self.skills
                    .iter()
                    .map(Skill::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            // > "When two entries in one listing collide on `name`, hosts **MUST** disambiguate
            // > them … rather than silently discarding or preferring one." — SEP-2640 § Names
            many => Err(format!(
                "several skills are named {skill:?}: give one's URI: {}",
                many.iter()
                    .map(|s| s.uri.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Runs one call: loads the skill, or reads one of its files. The text the model reads.
    pub async fn load(&self, skill: &str, file: Option<&str>) -> Result<String, ToolError> {
        let refused = |e: Error| match e {
            Error::Skill(e) => ToolError::Retry(format!("refused: {e}")),
            other => ToolError::Fatal(other),
        };
        let entry = self.find(skill).map_err(ToolError::Retry)?;
        let uri = entry.map_or(skill, |e| e.uri.as_str()).to_owned();
        if let Some(file) = file {
            let loaded = self.loaded.lock().await.get(&uri).cloned();
            let Some(loaded) = loaded else {
                return Err(ToolError::Retry(format!(
                    "load the skill {skill:?} first, then read its files"
                )));
            };
            let bytes = self
                .client
                .read_skill_file(&loaded, file)
                .await
                .map_err(refused)?;
            let text = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => format!("(a binary file of {} bytes)", e.into_bytes().len()),
            };
            return Ok(format!(
                "File {file} of skill {} from MCP server {:?} (untrusted content):\n\n{text}",
                loaded.entry.name(),
                self.origin
            ));
        }
        let loaded = match entry {
            Some(entry) => self.client.load_skill(entry).await,
            None => self.client.load_skill_uri(&uri).await,
        }
        .map_err(refused)?;
        let files = loaded.files().join(", ");
        let text = format!(
            "Skill {} from MCP server {:?} ({}), untrusted instructions:\n\n{}\n\nIts files (read one with load_skill {{\"skill\": {:?}, \"file\": …}}): {}",
            loaded.entry.name(),
            self.origin,
            loaded.entry.uri,
            loaded.text,
            loaded.entry.name(),
            if files.is_empty() { "none" } else { &files }
        );
        let mut held = self.loaded.lock().await;
        if held.len() >= MAX_LOADED_SKILLS && !held.contains_key(&uri) {
            held.clear();
        }
        held.insert(uri, loaded);
        Ok(text)
    }
}

impl AgentTool for LoadSkillTool {
    fn name(&self) -> &str {
        LOAD_SKILL_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &RawValue {
        &self.schema
    }

    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let skill = arguments.get("skill").and_then(Value::as_str);
            let file = arguments.get("file").and_then(Value::as_str);
            match skill {
                Some(skill) => self.load(skill, file).await,
                None => Err(ToolError::Retry(
                    "load_skill needs {\"skill\": <a skill's name>}".into(),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_is_json() {
        let schema: serde_json::Value = serde_json::from_str(super::SCHEMA).unwrap();
        assert_eq!(schema["required"][0], "skill");
    }
}
