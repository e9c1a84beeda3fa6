//! Skills (the `io.modelcontextprotocol/skills` extension, SEP-2640) as methods of the
//! [`Client`]: the entries listed (`skills/list`) or got (`skills/get`), a skill loaded (its
//! `SKILL.md` read and verified) and its supporting files read on demand (each verified), and a
//! directory's children (`resources/directory/read`). The core decides every rule
//! ([`mcp_proto::skills`]); these methods only read what it names and hand it the bytes.
//!
//! Nothing is read before a skill is loaded: listing reads no file, loading reads the `SKILL.md`
//! alone, and a supporting file is read when asked for.

use super::{Client, Error};
use mcp_proto::skills::{self, LoadedSkill, Skill};
use mcp_proto::{GetSkill, ListSkills, ReadDirectory, Request, Resource};

impl Client {
    /// One page of skill entries (`skills/list`). The server must declare the extension
    /// (else [`RequestError::NotOffered`](mcp_proto::RequestError::NotOffered), nothing sent).
    pub async fn list_skills_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<mcp_proto::skills::ListSkillsResult, Error> {
        self.request_as::<ListSkills>(Request::list_skills(cursor))
            .await
    }

    /// Every skill entry, following `nextCursor` across pages (guarded as
    /// [`list_tools`](Self::list_tools) is). No skill file is read.
    ///
    /// > "Hosts **MUST NOT** treat an empty or partial listing as proof that a server has no
    /// > skills" — SEP-2640 § Listing Skills: a skill given by URI loads with
    /// > [`load_skill_uri`](Self::load_skill_uri).
    pub async fn list_skills(&self) -> Result<Vec<Skill>, Error> {
        self.list_all::<ListSkills, _>(
            Request::list_skills,
            |p| (p.skills, p.next_cursor),
            |s| serde_json::to_string(s).map_or(0, |t| t.len()),
        )
        .await
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`skills/get`).
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, Error> {
        let got = self.request_as::<GetSkill>(Request::get_skill(uri)).await?;
        Ok(got.skill)
    }

    /// Loads a skill from its entry: checks the entry ([`Skill::check`]: its URI, name, a
    /// complete file list inside the skill's directory, the limits), reads its `SKILL.md`
    /// (`resources/read`), and refuses it unless its size, digest and frontmatter are the
    /// entry's ([`Error::Skill`]). The loaded skill holds the entry for the reads of its files.
    pub async fn load_skill(&self, entry: &Skill) -> Result<LoadedSkill, Error> {
        let listed = entry.check().map_err(Error::Skill)?;
        let bytes = self.read_skill_bytes(&listed.uri).await?;
        LoadedSkill::new(entry.clone(), bytes).map_err(Error::Skill)
    }

    /// Loads the skill whose `SKILL.md` is at `uri`, listed or not: its entry from `skills/get`,
    /// then as [`load_skill`](Self::load_skill).
    ///
    /// > "hosts **MUST** support loading a skill given only its URI" — SEP-2640 § Listing Skills
    pub async fn load_skill_uri(&self, uri: &str) -> Result<LoadedSkill, Error> {
        let entry = self.get_skill(uri).await?;
        if entry.uri != uri {
            return Err(Error::Skill(mcp_proto::SkillError::InvalidEntry {
                uri: uri.chars().take(200).collect(),
                reason: "skills/get answered with another skill's entry".into(),
            }));
        }
        self.load_skill(&entry).await
    }

    /// Reads a loaded skill's supporting file `reference` (a path relative to the skill's root,
    /// such as `references/FORMS.md`, or its full URI): only a file the held entry lists, inside
    /// the skill's directory, is read, and its bytes are returned only when their size and
    /// digest are the entry's ([`Error::Skill`] otherwise).
    pub async fn read_skill_file(
        &self,
        skill: &LoadedSkill,
        reference: &str,
    ) -> Result<Vec<u8>, Error> {
        let listed = skill.file(reference).map_err(Error::Skill)?;
        let bytes = self.read_skill_bytes(&listed.uri).await?;
        skills::verify_file(listed, &bytes).map_err(Error::Skill)?;
        Ok(bytes)
    }

    /// A file's raw bytes, read with `resources/read` (under
    /// [`ClientConfig::max_read_bytes`](super::ClientConfig::max_read_bytes)).
    async fn read_skill_bytes(&self, uri: &str) -> Result<Vec<u8>, Error> {
        let read = self.read_resource(uri).await?;
        skills::file_bytes(uri, &read).map_err(Error::Skill)
    }

    /// The children of directory resource `uri` (`resources/directory/read`), following
    /// `nextCursor`; the server must declare the extension with `directoryRead: true` (else
    /// [`RequestError::NotOffered`](mcp_proto::RequestError::NotOffered), nothing sent). A
    /// subdirectory's `mimeType` is `inode/directory`.
    ///
    /// What a directory lists does not extend a loaded skill's files: only its held entry's are
    /// read by [`read_skill_file`](Self::read_skill_file) (SEP-2640 § Directory Reads and the
    /// Held Entry).
    pub async fn read_directory(&self, uri: &str) -> Result<Vec<Resource>, Error> {
        let uri = uri.to_owned();
        let mut all = Vec::new();
        let mut guard =
            mcp_proto::Pagination::new(self.max_tool_pages).max_bytes(self.max_tool_bytes);
        let mut cursor: Option<String> = None;
        let listing = |error| Error::Listing {
            method: "resources/directory/read",
            error,
        };
        loop {
            guard.admit().map_err(listing)?;
            let page = self
                .request_as::<ReadDirectory>(Request::read_directory(&uri, cursor.as_deref()))
                .await?;
            let size = page.resources.iter().map(|r| r.raw().get().len()).sum();
            let next = guard.follow(page.next_cursor, size).map_err(listing)?;
            all.extend(page.resources);
            match next {
                None => return Ok(all),
                next => cursor = next,
            }
        }
    }
}
