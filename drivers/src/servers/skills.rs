//! The servers' skills (the `io.modelcontextprotocol/skills` extension, SEP-2640) across the
//! set: every server's entries listed at once, each with its server (the host's label for it,
//! never the server's self-reported name); a skill loaded from the server that lists it
//! ([`skill_owner`]: one several list must be given with its server); and one bridged tool,
//! [`SetLoadSkillTool`], whose description indexes every server's skills for an agent.
//!
//! A server that does not declare the extension offers no skills and is no failure; one whose
//! listing fails is in [`SetListing::failed`], as for the other listings ([`ServerSet::across`]).
//! Every file is verified by the server's own client ([`Client::load_skill`],
//! [`Client::read_skill_file`]).

use super::features::{FromServer, SetListing};
use super::{ServerSet, SetError};
use crate::skills::LoadSkillTool;
use crate::tools::{AgentTool, ToolError};
use crate::transport::BoxFuture;
use crate::Client;
use mcp_proto::server_set::{skill_owner, ResourceOwner};
use mcp_proto::skills::{LoadedSkill, Skill};
use serde_json::value::RawValue;
use serde_json::Value;

impl ServerSet {
    /// Every server's skill entries (`skills/list`, each server's pages followed; no file is
    /// read), in server order.
    pub async fn list_skills(&self) -> SetListing<FromServer<Skill>> {
        self.across(|client: Client| async move { client.list_skills().await })
            .await
    }

    /// The server that loads `skill` (a name as listed, or a `SKILL.md` URI) and its entry
    /// there: `server` when given (its entry looked up in its own listing), else the one server
    /// that lists it ([`skill_owner`]); [`SetError::UnknownSkill`] otherwise, naming the servers
    /// that list it. The entry is `None` for a URI its server does not list (loaded by URI,
    /// through `skills/get`).
    pub async fn skill_route(
        &self,
        server: Option<&str>,
        skill: &str,
    ) -> Result<(String, Option<Skill>), SetError> {
        let listed = self.list_skills().await;
        let names: Vec<&str> = match server {
            Some(server) => {
                if let Some(e) = listed.failed.iter().find(|e| failed_server(e) == server) {
                    return Err(e.clone());
                }
                self.client(server).await?;
                vec![server]
            }
            None => self.server_names(),
        };
        let per: Vec<Vec<(&str, &str)>> = names
            .iter()
            .map(|n| {
                listed
                    .items
                    .iter()
                    .filter(|s| s.server == *n)
                    .map(|s| (s.item.name(), s.item.uri.as_str()))
                    .collect()
            })
            .collect();
        let per: Vec<&[(&str, &str)]> = per.iter().map(Vec::as_slice).collect();
        let unknown = |servers: Vec<String>| SetError::UnknownSkill {
            skill: skill.to_owned(),
            servers,
        };
        let i = match skill_owner(skill, &per) {
            ResourceOwner::Server(i) => i,
            ResourceOwner::Unlisted => return Err(unknown(Vec::new())),
            ResourceOwner::Several(several) => {
                return Err(unknown(
                    several.iter().map(|&i| names[i].to_owned()).collect(),
                ))
            }
        };
        let owner = names[i];
        let mine: Vec<&Skill> = listed
            .items
            .iter()
            .filter(|s| s.server == owner)
            .map(|s| &s.item)
            .filter(|s| s.uri == skill || s.name() == skill)
            .collect();
        let entry = match mine.iter().find(|s| s.uri == skill) {
            Some(by_uri) => Some((*by_uri).clone()),
            None => match mine.as_slice() {
                [] => None,
                [one] => Some((*one).clone()),
                // > "When two entries in one listing collide on `name`, hosts **MUST**
                // > disambiguate them … rather than silently discarding or preferring one."
                // > — SEP-2640 § Names
                many => {
                    return Err(SetError::Server {
                        server: owner.to_owned(),
                        cause: crate::Error::Skill(mcp_proto::SkillError::InvalidEntry {
                            uri: skill.chars().take(200).collect(),
                            reason: format!(
                                "several skills are named so: give one's URI: {}",
                                many.iter()
                                    .map(|s| s.uri.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        }),
                    })
                }
            },
        };
        Ok((owner.to_owned(), entry))
    }

    /// Loads `skill` (a name as listed, or a `SKILL.md` URI) from `server` when given, else from
    /// the one server that lists it ([`skill_route`](Self::skill_route)): its `SKILL.md` read and
    /// verified against the entry ([`Client::load_skill`]; a mismatch is the server's
    /// [`Error::Skill`](crate::Error::Skill)).
    pub async fn load_skill(
        &self,
        server: Option<&str>,
        skill: &str,
    ) -> Result<FromServer<LoadedSkill>, SetError> {
        let (server, entry) = self.skill_route(server, skill).await?;
        let client = self.client(&server).await?;
        let loaded = match entry {
            Some(entry) => client.load_skill(&entry).await,
            None => client.load_skill_uri(skill).await,
        };
        match loaded {
            Ok(item) => Ok(FromServer { server, item }),
            Err(cause) => Err(SetError::Server { server, cause }),
        }
    }

    /// Reads supporting file `reference` of a skill loaded from `server`
    /// ([`Client::read_skill_file`]: only a file its entry lists, verified).
    pub async fn read_skill_file(
        &self,
        server: &str,
        skill: &LoadedSkill,
        reference: &str,
    ) -> Result<Vec<u8>, SetError> {
        let client = self.client(server).await?;
        client
            .read_skill_file(skill, reference)
            .await
            .map_err(|cause| SetError::Server {
                server: server.to_owned(),
                cause,
            })
    }
}

/// The server a listing's failure names.
fn failed_server(e: &SetError) -> &str {
    match e {
        SetError::Down { server, .. } | SetError::Server { server, .. } => server,
        _ => "",
    }
}

/// The set's skills as one tool an agent registers: `load_skill {skill, server?, file?}`, over
/// a [`LoadSkillTool`] per server that offers skills. Its description indexes every server's
/// skills, each under its server's name in the set; a call goes to the server that lists the
/// skill, or the one `server` names (required when several list it: the refusal says which).
pub struct SetLoadSkillTool {
    tools: Vec<(String, LoadSkillTool)>,
    description: String,
    schema: Box<RawValue>,
}

/// The set tool's input schema.
const SET_SCHEMA: &str = r#"{"type":"object","properties":{"skill":{"type":"string","description":"The skill's name as listed, or the URI of its SKILL.md"},"server":{"type":"string","description":"The server the index lists it under (needed when several list it)"},"file":{"type":"string","description":"Optional: a file of the skill, relative to its root (for instance references/FORMS.md), once the skill is loaded"}},"required":["skill"],"additionalProperties":false}"#;

impl SetLoadSkillTool {
    /// Lists every server's skills at once and makes the tool; the servers whose listing
    /// failed are returned beside it (they offer no skills through it).
    pub async fn new(set: &ServerSet) -> (SetLoadSkillTool, Vec<SetError>) {
        let listed = set.list_skills().await;
        let mut tools = Vec::new();
        let mut failed = listed.failed;
        for server in set.server_names() {
            let skills: Vec<Skill> = listed
                .items
                .iter()
                .filter(|s| s.server == server)
                .map(|s| s.item.clone())
                .collect();
            if skills.is_empty() {
                continue;
            }
            match set.client(server).await {
                Ok(client) => tools.push((
                    server.to_owned(),
                    LoadSkillTool::with_skills(&client, server, skills),
                )),
                Err(e) => failed.push(e),
            }
        }
        let index: String = tools.iter().map(|(_, t)| t.index()).collect();
        let description = format!(
            "Loads a skill (instructions for a task) from one of the MCP servers below, or, once \
             loaded, one of its files. Load a skill only when the task needs it; give its server \
             when several servers list its name.\n{index}"
        );
        let tool = SetLoadSkillTool {
            tools,
            description,
            // A constant that parses (tested).
            schema: RawValue::from_string(SET_SCHEMA.to_owned())
                .unwrap_or_else(|_| RawValue::from_string("{}".to_owned()).expect("`{}` is JSON")),
        };
        (tool, failed)
    }

    /// Every server's skills as text for an agent's prompt: each server's index
    /// ([`mcp_proto::skills::index`]), in server order.
    pub fn index(&self) -> String {
        self.tools.iter().map(|(_, t)| t.index()).collect()
    }

    /// The entries listed, each with its server.
    pub fn skills(&self) -> Vec<FromServer<&Skill>> {
        self.tools
            .iter()
            .flat_map(|(server, t)| {
                t.skills().iter().map(move |item| FromServer {
                    server: server.clone(),
                    item,
                })
            })
            .collect()
    }

    /// Runs one call: the skill loaded from its server, or one of its files read.
    pub async fn load(
        &self,
        skill: &str,
        server: Option<&str>,
        file: Option<&str>,
    ) -> Result<String, ToolError> {
        let servers: Vec<&str> = self.tools.iter().map(|(s, _)| s.as_str()).collect();
        let i = match server {
            Some(server) => servers.iter().position(|s| *s == server).ok_or_else(|| {
                ToolError::Retry(format!(
                    "no server {server:?} offers skills; those that do: {}",
                    servers.join(", ")
                ))
            })?,
            None => {
                let per: Vec<Vec<(&str, &str)>> = self
                    .tools
                    .iter()
                    .map(|(_, t)| {
                        t.skills()
                            .iter()
                            .map(|s| (s.name(), s.uri.as_str()))
                            .collect()
                    })
                    .collect();
                let per: Vec<&[(&str, &str)]> = per.iter().map(Vec::as_slice).collect();
                match skill_owner(skill, &per) {
                    ResourceOwner::Server(i) => i,
                    ResourceOwner::Unlisted => {
                        return Err(ToolError::Retry(format!(
                            "no server lists a skill {skill:?}: the index names them"
                        )))
                    }
                    ResourceOwner::Several(several) => {
                        return Err(ToolError::Retry(format!(
                            "several servers list a skill {skill:?}: give \"server\", one of {}",
                            several
                                .iter()
                                .map(|&i| servers[i])
                                .collect::<Vec<_>>()
                                .join(", ")
                        )))
                    }
                }
            }
        };
        self.tools[i].1.load(skill, file).await
    }
}

impl AgentTool for SetLoadSkillTool {
    fn name(&self) -> &str {
        crate::skills::LOAD_SKILL_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &RawValue {
        &self.schema
    }

    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let text = |key: &str| arguments.get(key).and_then(Value::as_str);
            match text("skill") {
                Some(skill) => self.load(skill, text("server"), text("file")).await,
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
        let schema: serde_json::Value = serde_json::from_str(super::SET_SCHEMA).unwrap();
        assert_eq!(schema["required"][0], "skill");
    }
}
