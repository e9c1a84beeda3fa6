//! Skills (the `io.modelcontextprotocol/skills` extension, SEP-2640): the entries a server lists
//! (`skills/list`) and gets (`skills/get`), and the host's side of their integrity rules — a
//! skill's `SKILL.md` and supporting files checked against the entry's size and digest, its
//! frontmatter compared field by field, every file kept inside the skill's directory, and the
//! extension's per-skill limits. The driver reads the files (`resources/read`); the rules are
//! here, so they are tested without a server.
//!
//! The text quoted is the extension's final specification (SEP-2640, `ext-skills`
//! `specification/stable/skills.mdx`, against base revision 2026-07-28).
//!
//! > "Hosts **MUST NOT** retrieve a skill's files ahead of need, whether on connection, on
//! > listing, or at approval. A `SKILL.md` is fetched when the skill is loaded, and a supporting
//! > file when it is read." — SEP-2640 § Lazy Retrieval
//!
//! Nothing here reads: [`Skill::check`] judges an entry from itself alone, [`verify_file`] judges
//! bytes the driver read, and [`LoadedSkill::new`] judges a `SKILL.md` against its entry. A
//! driver reads a `SKILL.md` only when asked to load its skill, and a supporting file only when
//! asked to read it ([`LoadedSkill::file`] says which URI, or refuses).

use crate::types::{list_result, Outcome, ResultType};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The extension's identifier, a key of the server's `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// The most files a skill may list; a skill that lists more is refused before anything is read.
///
/// > "Resources per skill | 512 entries" … "Hosts **MUST** support skills up to and including
/// > these limits, and **MAY** support larger ones." — SEP-2640 § Limits
pub const MAX_SKILL_FILES: usize = 512;

/// The most bytes a skill's files may add up to (the sum of their `size`); a skill over it is
/// refused before anything is read.
///
/// > "Total file size per skill | 16 MiB (16,777,216 bytes) | The sum of `size` over the skill's
/// > `resources`" — SEP-2640 § Limits
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// The longest frontmatter block read from a `SKILL.md`, in bytes; a longer one is refused
/// ([`SkillError::Frontmatter`]). The YAML is also held to [`MAX_YAML_DEPTH`] levels and refuses
/// aliases.
pub const MAX_FRONTMATTER_LEN: usize = 256 * 1024;

/// The deepest nesting of YAML sequences and mappings read in a frontmatter block.
pub const MAX_YAML_DEPTH: usize = 64;

/// The longest description [`index`] shows for a skill, in characters (the Agent Skills
/// specification's own limit for `description`); a longer one is cut with `…`.
pub const MAX_INDEX_DESCRIPTION: usize = 1024;

/// Why a skill, or one of its files, was refused. Every variant is a verification failure the
/// extension tells a host to treat as a digest mismatch: the content is not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The entry breaks the extension's rules (no `SKILL.md` URI, a name that is not the URI's
    /// last segment, no `resources` array, …).
    #[error("skill {uri}: invalid entry: {reason}")]
    InvalidEntry {
        /// The entry's `uri` (its start).
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// The entry's `resources` is `"dynamic"`: it offers no digests to verify against, and this
    /// client declines such skills (the extension allows it).
    #[error("skill {uri} is dynamic (no digests to verify its files against): declined")]
    Dynamic {
        /// The entry's `uri`.
        uri: String,
    },
    /// The entry lists more files, or more bytes, than the extension's limits.
    #[error("skill {uri} lists {files} files of {bytes} bytes, over the limits of {MAX_SKILL_FILES} files and {MAX_SKILL_BYTES} bytes")]
    TooLarge {
        /// The entry's `uri`.
        uri: String,
        /// How many files it lists.
        files: usize,
        /// Their sizes added up (saturating).
        bytes: u64,
    },
    /// A file's URI is not inside the skill's directory (`..`, `.`, an empty or encoded
    /// segment, another skill's path).
    #[error("skill {uri}: {file} is not a file of the skill's directory")]
    Escapes {
        /// The skill's `uri`.
        uri: String,
        /// The file (its start).
        file: String,
    },
    /// A file the held entry does not list.
    #[error("skill {uri}: {file} is not listed in the skill's entry")]
    Unlisted {
        /// The skill's `uri`.
        uri: String,
        /// The file asked for.
        file: String,
    },
    /// A file's bytes are not as many as its entry says.
    #[error("{file}: {got} bytes where the skill's entry says {expected}: not used")]
    SizeMismatch {
        /// The file.
        file: String,
        /// The entry's `size`.
        expected: u64,
        /// The bytes read.
        got: u64,
    },
    /// A file's SHA-256 digest is not its entry's.
    #[error("{file}: digest {got} where the skill's entry says {expected}: not used")]
    DigestMismatch {
        /// The file.
        file: String,
        /// The entry's `digest` (its start).
        expected: String,
        /// The digest of the bytes read.
        got: String,
    },
    /// The read returned nothing usable for the file (no content with its URI, a blob that is
    /// not base64).
    #[error("{file}: {reason}")]
    Contents {
        /// The file.
        file: String,
        /// What was wrong.
        reason: String,
    },
    /// The `SKILL.md` has no frontmatter this client can read.
    #[error("{file}: frontmatter: {reason}")]
    Frontmatter {
        /// The file.
        file: String,
        /// What was wrong.
        reason: String,
    },
    /// The `SKILL.md`'s frontmatter differs from the entry's.
    #[error("{file}: frontmatter field {field:?} differs from the skill's entry: not loaded")]
    FrontmatterMismatch {
        /// The file.
        file: String,
        /// The first field that differs.
        field: String,
    },
}

/// The start of a server's string, for an error message.
fn excerpt(s: &str) -> String {
    s.chars().take(200).collect()
}

/// One file of a skill, as its entry lists it.
///
/// > "`digest`: SHA-256 digest of the file's raw bytes, formatted as `sha256:{hex}` … `size`:
/// > Length in bytes of the file's raw content (the same bytes that `digest` covers)." —
/// > SEP-2640 § Skill Entries (`SkillResource`)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// A skill's `resources`: its files, or anything else the server sent (`"dynamic"`, or what is
/// invalid), judged by [`Skill::check`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillFiles {
    /// The complete list of its files, `SKILL.md` included.
    Listed(Vec<SkillResource>),
    /// Anything else, as sent (absent is `null`).
    Other(Value),
}

impl Default for SkillFiles {
    fn default() -> Self {
        SkillFiles::Other(Value::Null)
    }
}

/// A skill's entry (`skills/list`, `skills/get`): its `SKILL.md` URI, its frontmatter and its
/// files. Read leniently (a missing member is empty), so that one bad entry does not hide the
/// others of a listing; [`Skill::check`] then refuses it when it is loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The resource URI of its `SKILL.md`.
    #[serde(default)]
    pub uri: String,
    /// Its `SKILL.md` frontmatter, rendered as JSON (`name` and `description` at least).
    #[serde(default)]
    pub frontmatter: Map<String, Value>,
    /// Its files.
    #[serde(default)]
    pub resources: SkillFiles,
}

list_result!(
    /// A page of `skills/list`.
    ListSkillsResult, ListSkillsWire = "ListSkillsWire", skills: Skill, "skills"
);

list_result!(
    /// A page of `resources/directory/read`: the directory's direct children (a subdirectory's
    /// `mimeType` is `inode/directory`).
    DirectoryReadResult, DirectoryReadWire = "DirectoryReadWire", resources: crate::resources::Resource, "resources"
);

/// `skills/get`'s answer: one entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The skill's entry.
    pub skill: Skill,
    /// `resultType` as sent (modern servers); absent means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
}

impl Outcome for GetSkillResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

impl Skill {
    /// The skill's name (`frontmatter.name`), or `""`.
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The skill's description (`frontmatter.description`), or `""`.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The skill's root directory: its `uri` without `/SKILL.md`; `None` when it does not end so.
    ///
    /// > "The skill's root directory is `skill://<skill-path>`, that is, the `SKILL.md` URI with
    /// > the `/SKILL.md` suffix removed and no trailing slash" — SEP-2640 § Resource Mapping
    pub fn root(&self) -> Option<&str> {
        self.uri.strip_suffix("/SKILL.md")
    }

    /// The listed file at `uri`, if the entry lists it.
    pub fn listed(&self, uri: &str) -> Option<&SkillResource> {
        match &self.resources {
            SkillFiles::Listed(files) => files.iter().find(|f| f.uri == uri),
            SkillFiles::Other(_) => None,
        }
    }

    /// Judges the entry on its own, before anything is read: its URI names a `SKILL.md` under a
    /// path whose last segment is the frontmatter's `name` (a valid Agent Skills name), with a
    /// non-empty `description`; its `resources` is a complete list that includes the `SKILL.md`
    /// itself, names each file once, keeps every file inside the skill's directory, and stays
    /// within [`MAX_SKILL_FILES`] and [`MAX_SKILL_BYTES`]. Returns the `SKILL.md`'s own listing.
    ///
    /// > "An entry with no `resources` at all, or with any value other than an array or
    /// > `"dynamic"`, is invalid, and hosts **MUST NOT** load it." … "Each `uri` **MUST** be the
    /// > skill's `SKILL.md` or a file within the skill's directory." — SEP-2640 § Resources
    pub fn check(&self) -> Result<&SkillResource, SkillError> {
        let invalid = |reason: &str| SkillError::InvalidEntry {
            uri: excerpt(&self.uri),
            reason: reason.to_owned(),
        };
        let root = self
            .root()
            .ok_or_else(|| invalid("its uri does not name a SKILL.md"))?;
        let path = root
            .split_once("://")
            .map(|(_, path)| path)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| invalid("its uri has no scheme://<skill-path>"))?;
        if !path.split('/').all(safe_segment) {
            return Err(invalid(
                "its skill path has an empty, dot or encoded segment",
            ));
        }
        // > "The final segment of `<skill-path>` **MUST** equal the skill's `name` as declared in
        // > its `SKILL.md` frontmatter." — SEP-2640 § Resource Mapping
        let last = path.rsplit('/').next().unwrap_or(path);
        let name = match self.frontmatter.get("name") {
            Some(Value::String(name)) => name,
            _ => return Err(invalid("its frontmatter has no name")),
        };
        if name != last {
            return Err(invalid(&format!(
                "its name {:?} is not the last segment of its path {:?}",
                excerpt(name),
                excerpt(last)
            )));
        }
        if !valid_name(name) {
            return Err(invalid(&format!(
                "its name {:?} breaks the Agent Skills naming rules",
                excerpt(name)
            )));
        }
        if !matches!(self.frontmatter.get("description"), Some(Value::String(d)) if !d.is_empty()) {
            return Err(invalid("its frontmatter has no description"));
        }
        let files =
            match &self.resources {
                SkillFiles::Listed(files) => files,
                SkillFiles::Other(Value::String(s)) if s == "dynamic" => {
                    return Err(SkillError::Dynamic {
                        uri: excerpt(&self.uri),
                    })
                }
                SkillFiles::Other(_) => return Err(invalid(
                    "its resources is neither a list of files (uri, digest, size) nor \"dynamic\"",
                )),
            };
        let bytes = files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size));
        if files.len() > MAX_SKILL_FILES || bytes > MAX_SKILL_BYTES {
            return Err(SkillError::TooLarge {
                uri: excerpt(&self.uri),
                files: files.len(),
                bytes,
            });
        }
        for (i, file) in files.iter().enumerate() {
            if inside(root, &file.uri).is_none() {
                return Err(SkillError::Escapes {
                    uri: excerpt(&self.uri),
                    file: excerpt(&file.uri),
                });
            }
            if !valid_digest(&file.digest) {
                return Err(invalid(&format!(
                    "the digest of {} is not sha256: and 64 lowercase hex digits",
                    excerpt(&file.uri)
                )));
            }
            if files[..i].iter().any(|f| f.uri == file.uri) {
                return Err(invalid(&format!("{} is listed twice", excerpt(&file.uri))));
            }
        }
        // > "When `resources` is an array, it **MUST** be complete. It lists every file of the
        // > skill, each exactly once, including an entry whose `uri` equals the skill's
        // > top-level `uri`." — SEP-2640 § Resources
        self.listed(&self.uri)
            .ok_or_else(|| invalid("its resources do not list its SKILL.md"))
    }

    /// The URI of the skill's file `reference`: a path relative to the skill's root
    /// (`references/FORMS.md`), or a full URI inside it. Refused when it leaves the directory.
    ///
    /// > "A client resolves a relative reference against the skill's root, as a filesystem path
    /// > would resolve." — SEP-2640 § Relative References
    pub fn file_uri(&self, reference: &str) -> Result<String, SkillError> {
        let escapes = || SkillError::Escapes {
            uri: excerpt(&self.uri),
            file: excerpt(reference),
        };
        let root = self.root().ok_or_else(escapes)?;
        let uri = if reference.contains("://") {
            reference.to_owned()
        } else {
            format!("{root}/{reference}")
        };
        inside(root, &uri).ok_or_else(escapes)?;
        Ok(uri)
    }
}

/// A path segment that names a file or directory, not a way out: not empty, not `.` or `..`,
/// no percent-encoded dot, slash or backslash, no backslash, `?` or `#`.
fn safe_segment(segment: &str) -> bool {
    if segment.is_empty() || segment == "." || segment == ".." {
        return false;
    }
    if segment.contains(['\\', '?', '#']) {
        return false;
    }
    let lower = segment.to_ascii_lowercase();
    !(lower.contains("%2e") || lower.contains("%2f") || lower.contains("%5c"))
}

/// The path of `uri` below `root` when `uri` is inside the skill's directory, each segment safe.
fn inside<'u>(root: &str, uri: &'u str) -> Option<&'u str> {
    let rest = uri.strip_prefix(root)?.strip_prefix('/')?;
    rest.split('/').all(safe_segment).then_some(rest)
}

/// The Agent Skills naming rules: 1 to 64 characters, lowercase letters, digits and hyphens, no
/// hyphen first, last or twice in a row.
///
/// > "The final segment, being the skill `name`, **MUST** satisfy the Agent Skills
/// > specification's naming rules." — SEP-2640 § Resource Mapping
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// `sha256:` and 64 lowercase hex digits.
fn valid_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The digest of `bytes` as an entry writes one: `sha256:` and 64 lowercase hex digits.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    use std::fmt::Write as _;
    let hash = sha2::Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Checks a file's bytes against its entry: the length first (a read of the wrong length fails
/// without hashing), then the SHA-256 digest.
///
/// > "When a host retrieves a file listed in a skill's `resources`, it **MUST** verify the
/// > content against that entry's `digest` and `size`." … "hosts **MUST NOT** use the unverified
/// > content." — SEP-2640 § Verification on Read
/// >
/// > "A read whose byte length differs from the entry's `size` is a verification failure
/// > equivalent to a digest mismatch … whether or not the host goes on to compute the digest."
/// > — SEP-2640 § Resources
pub fn verify_file(entry: &SkillResource, bytes: &[u8]) -> Result<(), SkillError> {
    let got = bytes.len() as u64;
    if got != entry.size {
        return Err(SkillError::SizeMismatch {
            file: excerpt(&entry.uri),
            expected: entry.size,
            got,
        });
    }
    let got = digest(bytes);
    if got != entry.digest {
        return Err(SkillError::DigestMismatch {
            file: excerpt(&entry.uri),
            expected: excerpt(&entry.digest),
            got,
        });
    }
    Ok(())
}

/// The raw bytes of file `uri` in a `resources/read` answer: the one content with that URI, its
/// text as UTF-8 or its blob decoded.
pub fn file_bytes(
    uri: &str,
    read: &crate::resources::ReadResourceResult,
) -> Result<Vec<u8>, SkillError> {
    let contents = |reason: &str| SkillError::Contents {
        file: excerpt(uri),
        reason: reason.to_owned(),
    };
    let mut found = read.contents.iter().filter(|c| c.uri == uri);
    let content = found
        .next()
        .ok_or_else(|| contents("the read returned no content with this URI"))?;
    if found.next().is_some() {
        return Err(contents("the read returned this URI twice"));
    }
    if let Some(blob) = content.blob_bytes() {
        return blob.map_err(|e| contents(&e.to_string()));
    }
    match &content.text {
        Some(text) => Ok(text.as_bytes().to_vec()),
        None => Err(contents("the content has neither text nor blob")),
    }
}

/// The YAML frontmatter of a `SKILL.md`, as JSON: the block between a first line `---` and the
/// next line `---` (a UTF-8 BOM before it is skipped), read as YAML 1.2 by the core schema
/// (plain `true`/`false`, numbers, `null`/`~`/nothing typed; quoted and block scalars strings).
/// Aliases, a block over [`MAX_FRONTMATTER_LEN`] or deeper than [`MAX_YAML_DEPTH`] are refused,
/// as is a block that is not a mapping.
///
/// > "`SKILL.md` **MUST** begin with YAML frontmatter containing at minimum the `name` and
/// > `description` fields" — SEP-2640 § Skill Format
pub fn frontmatter(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("the file does not begin with a --- line")?;
    let mut end = None;
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        if at > MAX_FRONTMATTER_LEN {
            break;
        }
        if line
            .trim_end_matches(['\n', '\r'])
            .trim_end_matches([' ', '\t'])
            == "---"
        {
            end = Some(at);
            break;
        }
        at += line.len();
    }
    let end = end.ok_or_else(|| {
        format!("no closing --- line within the first {MAX_FRONTMATTER_LEN} bytes")
    })?;
    match yaml(&body[..end])? {
        Value::Object(map) => Ok(map),
        _ => Err("the frontmatter is not a YAML mapping".into()),
    }
}

/// One YAML document as JSON (see [`frontmatter`]). Built without recursion.
fn yaml(text: &str) -> Result<Value, String> {
    use saphyr_parser::{Event, Parser, ScalarStyle};
    enum Open {
        Seq(Vec<Value>),
        Map(Map<String, Value>, Option<String>),
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut root = None;
    let mut documents = 0;
    for event in Parser::new_from_str(text) {
        let (event, _) = event.map_err(|e| format!("YAML: {}", e.info()))?;
        let wants_key = matches!(stack.last(), Some(Open::Map(_, None)));
        let value = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err("a second YAML document".into());
                }
                continue;
            }
            Event::Alias(_) => return Err("YAML aliases (*name) are not read".into()),
            Event::Scalar(text, style, _, tag) => {
                if wants_key {
                    if let Some(Open::Map(_, key)) = stack.last_mut() {
                        *key = Some(text.into_owned());
                    }
                    continue;
                }
                let string_tag = tag.is_some_and(|t| t.is_yaml_core_schema() && t.suffix == "str");
                match style {
                    ScalarStyle::Plain if !string_tag => plain_scalar(&text),
                    _ => Value::String(text.into_owned()),
                }
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                if wants_key {
                    return Err("a YAML mapping key that is not a scalar".into());
                }
                if stack.len() >= MAX_YAML_DEPTH {
                    return Err("YAML nested too deeply".into());
                }
                stack.push(match event {
                    Event::SequenceStart(..) => Open::Seq(Vec::new()),
                    _ => Open::Map(Map::new(), None),
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(items)) => Value::Array(items),
                Some(Open::Map(map, _)) => Value::Object(map),
                None => continue,
            },
            _ => continue,
        };
        match stack.last_mut() {
            None => root = Some(value),
            Some(Open::Seq(items)) => items.push(value),
            Some(Open::Map(map, key)) => match key.take() {
                Some(key) => {
                    if map.insert(key, value).is_some() {
                        return Err("a YAML mapping repeats a key".into());
                    }
                }
                None => return Err("a YAML mapping key that is not a scalar".into()),
            },
        }
    }
    Ok(root.unwrap_or(Value::Null))
}

/// A plain YAML scalar by the core schema (YAML 1.2.2 § 10.3.2).
fn plain_scalar(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => {
            if let Ok(i) = text.parse::<i64>() {
                return Value::from(i);
            }
            let unsigned = text.trim_start_matches(['-', '+']);
            let numeric = unsigned
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_digit() || b == b'.')
                && unsigned.bytes().any(|b| b.is_ascii_digit())
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
            match text.parse::<f64>() {
                Ok(n) if numeric => serde_json::Number::from_f64(n)
                    .map_or_else(|| Value::String(text.to_owned()), Value::Number),
                _ => Value::String(text.to_owned()),
            }
        }
    }
}

/// Whether two JSON values say the same: numbers by value (`2` and `2.0` are one), objects by
/// their members whatever their order.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The first field where a `SKILL.md`'s frontmatter and its entry's differ (a field absent on
/// one side counts as `null`, as the conformance suite compares them), or `None`.
///
/// > "After fetching a `SKILL.md` for which the host holds an entry …, hosts **MUST** parse its
/// > YAML frontmatter and compare it field-by-field against the entry's `frontmatter`. Any
/// > discrepancy **MUST** be treated as a verification failure equivalent to a digest
/// > mismatch, and the skill **MUST NOT** be loaded." — SEP-2640 § Frontmatter Verification
pub fn frontmatter_differs(
    file: &Map<String, Value>,
    entry: &Map<String, Value>,
) -> Option<String> {
    let null = Value::Null;
    file.keys()
        .chain(entry.keys())
        .find(|k| {
            !same(
                file.get(*k).unwrap_or(&null),
                entry.get(*k).unwrap_or(&null),
            )
        })
        .map(|k| excerpt(k))
}

/// A skill loaded: its `SKILL.md`, verified against the entry it was loaded from, which it holds
/// for the reads of its supporting files.
///
/// > "A host is _acting on_ a skill from the moment it loads the skill's `SKILL.md` into the
/// > model's context … Throughout that window the host holds the entry from which it loaded the
/// > skill." — SEP-2640 § The Acting Window and the Held Entry
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// The entry it was loaded from (its files are the only ones it may read).
    pub entry: Skill,
    /// The `SKILL.md`, whole (frontmatter included), as verified.
    pub text: String,
}

impl LoadedSkill {
    /// Judges a `SKILL.md` read for `entry`: the entry itself ([`Skill::check`]), the file's
    /// size and digest ([`verify_file`]), that it is UTF-8 text, and its frontmatter against the
    /// entry's, field by field.
    pub fn new(entry: Skill, bytes: Vec<u8>) -> Result<LoadedSkill, SkillError> {
        let listed = entry.check()?;
        verify_file(listed, &bytes)?;
        let file = excerpt(&entry.uri);
        let text = String::from_utf8(bytes).map_err(|_| SkillError::Frontmatter {
            file: file.clone(),
            reason: "the file is not UTF-8 text".into(),
        })?;
        let found = frontmatter(&text).map_err(|reason| SkillError::Frontmatter {
            file: file.clone(),
            reason,
        })?;
        if let Some(field) = frontmatter_differs(&found, &entry.frontmatter) {
            return Err(SkillError::FrontmatterMismatch { file, field });
        }
        Ok(LoadedSkill { entry, text })
    }

    /// The skill's file `reference` (relative to the skill's root, or a full URI) as its held
    /// entry lists it: the URI to read and what to verify it against. A file the entry does not
    /// list is refused, before anything is read.
    ///
    /// > "While acting on a skill, a host **MUST** resolve reads of the skill's files only to
    /// > URIs listed in the held entry's `resources`." — SEP-2640 § The Acting Window and the
    /// > Held Entry
    pub fn file(&self, reference: &str) -> Result<&SkillResource, SkillError> {
        let uri = self.entry.file_uri(reference)?;
        self.entry.listed(&uri).ok_or_else(|| SkillError::Unlisted {
            uri: excerpt(&self.entry.uri),
            file: excerpt(&uri),
        })
    }

    /// The skill's supporting files (every listed file but the `SKILL.md`), paths relative to
    /// its root: what the model may ask for.
    pub fn files(&self) -> Vec<&str> {
        let root = self.entry.root().unwrap_or("");
        match &self.entry.resources {
            SkillFiles::Listed(files) => files
                .iter()
                .filter(|f| f.uri != self.entry.uri)
                .filter_map(|f| inside(root, &f.uri))
                .collect(),
            SkillFiles::Other(_) => Vec::new(),
        }
    }
}

/// One line of text from a server's string: control characters and line breaks become spaces,
/// cut at `max` characters with `…`.
fn one_line(s: &str, max: usize) -> String {
    let mut out: String = s
        .chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// The skills' names and descriptions as text an agent can put in its prompt: a heading naming
/// the server they come from (`origin`, the label the host gave it), then one line each,
/// `- name: description (uri)`, each description on one line and cut at
/// [`MAX_INDEX_DESCRIPTION`] characters. Nothing is read to make it.
///
/// > "Hosts **MUST** tag MCP-served skill content with its originating server identity at the
/// > point it enters model context." — SEP-2640 § Security Considerations
pub fn index(origin: &str, skills: &[Skill]) -> String {
    let mut out = format!(
        "Skills served by MCP server {:?} (untrusted instructions; load one by name to read it):\n",
        one_line(origin, 128)
    );
    for skill in skills {
        out.push_str(&format!(
            "- {}: {} ({})\n",
            one_line(skill.name(), 64),
            one_line(skill.description(), MAX_INDEX_DESCRIPTION),
            one_line(&skill.uri, 512)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BODY: &str =
        "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
    const FORMS: &str = "Supporting content.\n";

    fn entry() -> Skill {
        serde_json::from_value(json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing",
                            "description": "Extract, fill, and assemble PDF documents"},
            "resources": [
                {"uri": "skill://pdf-processing/SKILL.md", "digest": digest(BODY.as_bytes()),
                 "size": BODY.len()},
                {"uri": "skill://pdf-processing/references/FORMS.md",
                 "digest": digest(FORMS.as_bytes()), "size": FORMS.len()},
            ]
        }))
        .unwrap()
    }

    #[test]
    fn digest_is_sha256_in_lowercase_hex() {
        // FIPS 180-2's "abc".
        assert_eq!(
            digest(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_true_skill_loads_and_its_files_verify() {
        let loaded = LoadedSkill::new(entry(), BODY.as_bytes().to_vec()).unwrap();
        assert_eq!(loaded.text, BODY);
        assert_eq!(loaded.files(), ["references/FORMS.md"]);
        let forms = loaded.file("references/FORMS.md").unwrap();
        assert_eq!(forms.uri, "skill://pdf-processing/references/FORMS.md");
        assert_eq!(verify_file(forms, FORMS.as_bytes()), Ok(()));
        assert_eq!(
            loaded.file("skill://pdf-processing/references/FORMS.md"),
            Ok(forms)
        );
    }

    #[test]
    fn a_size_lie_fails_before_the_digest() {
        let more = format!("{BODY}extra bytes the entry did not account for\n");
        let err = LoadedSkill::new(entry(), more.into_bytes()).unwrap_err();
        assert!(
            matches!(err, SkillError::SizeMismatch { expected, .. } if expected == BODY.len() as u64)
        );
    }

    #[test]
    fn a_digest_lie_is_refused() {
        let evil = BODY.replace("Skill body.", "Evil body!!");
        assert_eq!(evil.len(), BODY.len());
        let err = LoadedSkill::new(entry(), evil.into_bytes()).unwrap_err();
        assert!(matches!(err, SkillError::DigestMismatch { .. }), "{err}");
    }

    #[test]
    fn frontmatter_that_differs_from_the_entry_is_refused() {
        // The file's digest and size are the entry's: only the frontmatter lies.
        let evil = BODY.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        let mut e = entry();
        if let SkillFiles::Listed(files) = &mut e.resources {
            files[0].digest = digest(evil.as_bytes());
            files[0].size = evil.len() as u64;
        }
        let err = LoadedSkill::new(e, evil.into_bytes()).unwrap_err();
        assert_eq!(
            err,
            SkillError::FrontmatterMismatch {
                file: "skill://pdf-processing/SKILL.md".into(),
                field: "description".into()
            }
        );
    }

    #[test]
    fn frontmatter_reads_yaml_by_the_core_schema() {
        let text = "\u{feff}---\r\nname: x\r\nversion: 2\r\nratio: 2.5\r\nflag: true\r\nempty:\r\nquoted: \"2\"\r\nlist: [a, 1]\r\nmetadata:\r\n  k: v\r\n--- \r\nbody";
        let fm = frontmatter(text).unwrap();
        assert_eq!(
            Value::Object(fm.clone()),
            json!({"name": "x", "version": 2, "ratio": 2.5, "flag": true, "empty": null,
                   "quoted": "2", "list": ["a", 1], "metadata": {"k": "v"}})
        );
        // Numbers compare by value; an absent field is null.
        let entry = json!({"name": "x", "version": 2.0, "ratio": 2.5, "flag": true,
                           "quoted": "2", "list": ["a", 1], "metadata": {"k": "v"}});
        assert_eq!(frontmatter_differs(&fm, entry.as_object().unwrap()), None);
        let mut entry = entry;
        entry["version"] = json!("2");
        assert_eq!(
            frontmatter_differs(&fm, entry.as_object().unwrap()).as_deref(),
            Some("version")
        );
    }

    #[test]
    fn bad_frontmatter_is_refused() {
        for text in [
            "no frontmatter",
            "---\nname: x\n",               // never closed
            "---\n- a\n- b\n---\n",         // not a mapping
            "---\na: &x [1]\nb: *x\n---\n", // an alias
            "---\na: 1\na: 2\n---\n",       // a repeated key
            "---\na: [\n---\n",             // not YAML
            "---\n? [a]\n: 1\n---\n",       // a key that is not a scalar
        ] {
            assert!(frontmatter(text).is_err(), "{text:?}");
        }
        let deep = format!("---\na: {}{}\n---\n", "[".repeat(100), "]".repeat(100));
        assert!(frontmatter(&deep).is_err());
        let long = format!("---\na: {}\n---\n", "x".repeat(MAX_FRONTMATTER_LEN + 10));
        assert!(frontmatter(&long).is_err());
        // A SKILL.md whose frontmatter cannot be read does not load, even with a true digest.
        let text = "# no frontmatter\n";
        let mut e = entry();
        if let SkillFiles::Listed(files) = &mut e.resources {
            files[0].digest = digest(text.as_bytes());
            files[0].size = text.len() as u64;
        }
        assert!(matches!(
            LoadedSkill::new(e, text.as_bytes().to_vec()),
            Err(SkillError::Frontmatter { .. })
        ));
    }

    #[test]
    fn files_outside_the_skill_are_refused() {
        let loaded = LoadedSkill::new(entry(), BODY.as_bytes().to_vec()).unwrap();
        for reference in [
            "../other/SKILL.md",
            "references/../../other/SKILL.md",
            "./references/FORMS.md",
            "references//FORMS.md",
            "%2e%2e/other/SKILL.md",
            "references%2FFORMS.md",
            "references\\FORMS.md",
            "skill://other/SKILL.md",
            "skill://pdf-processing-evil/SKILL.md",
            "",
        ] {
            assert!(
                matches!(loaded.file(reference), Err(SkillError::Escapes { .. })),
                "{reference:?}"
            );
        }
        // Inside, but not listed: refused before any read.
        assert!(matches!(
            loaded.file("references/NEW.md"),
            Err(SkillError::Unlisted { .. })
        ));
        // An entry that lists a file outside its directory is refused whole.
        let mut e = entry();
        if let SkillFiles::Listed(files) = &mut e.resources {
            files[1].uri = "skill://pdf-processing/../secrets/KEY".into();
        }
        assert!(matches!(e.check(), Err(SkillError::Escapes { .. })));
    }

    #[test]
    fn entries_that_break_the_rules_are_refused() {
        let check = |change: &dyn Fn(&mut Value)| {
            let mut v = serde_json::to_value(entry()).unwrap();
            change(&mut v);
            serde_json::from_value::<Skill>(v)
                .unwrap()
                .check()
                .map(drop)
        };
        assert_eq!(check(&|_| {}), Ok(()));
        let invalid = |r: Result<(), SkillError>| matches!(r, Err(SkillError::InvalidEntry { .. }));
        assert!(invalid(check(
            &|v| v["uri"] = json!("skill://pdf-processing/README.md")
        )));
        assert!(invalid(check(
            &|v| v["frontmatter"]["name"] = json!("other")
        )));
        assert!(invalid(check(
            &|v| v["frontmatter"]["description"] = json!("")
        )));
        assert!(invalid(check(&|v| {
            v.as_object_mut().unwrap().remove("resources");
        })));
        assert!(invalid(check(
            &|v| v["resources"][0]["digest"] = json!("sha256:ABC")
        )));
        assert!(invalid(check(&|v| {
            v["resources"].as_array_mut().unwrap().remove(0);
        })));
        assert!(invalid(check(&|v| {
            v["resources"][1] = v["resources"][0].clone();
        })));
        assert!(invalid(check(&|v| {
            v["resources"][1].as_object_mut().unwrap().remove("size");
        })));
        assert!(matches!(
            check(&|v| v["resources"] = json!("dynamic")),
            Err(SkillError::Dynamic { .. })
        ));
        assert!(matches!(
            check(&|v| v["resources"][1]["size"] = json!(MAX_SKILL_BYTES)),
            Err(SkillError::TooLarge { .. })
        ));
        assert!(matches!(
            check(&|v| v["resources"][1]["size"] = json!(u64::MAX)),
            Err(SkillError::TooLarge { .. })
        ));
        let many: Vec<Value> = (0..MAX_SKILL_FILES)
            .map(|i| {
                json!({"uri": format!("skill://pdf-processing/f{i}"),
                            "digest": digest(b""), "size": 0})
            })
            .collect();
        assert!(matches!(
            check(&|v| v["resources"].as_array_mut().unwrap().extend(many.clone())),
            Err(SkillError::TooLarge { .. })
        ));
        assert!(valid_name("a-1") && !valid_name("A") && !valid_name("-a") && !valid_name("a--b"));
        assert!(!valid_name(&"a".repeat(65)) && !valid_name(""));
        // Nested paths are fine; the last segment is the name.
        let nested = |v: &mut Value| {
            v["uri"] = json!("skill://acme/billing/pdf-processing/SKILL.md");
            v["resources"] = json!([{"uri": "skill://acme/billing/pdf-processing/SKILL.md",
                                     "digest": digest(b""), "size": 0}]);
        };
        assert_eq!(check(&nested), Ok(()));
    }

    #[test]
    fn reads_take_the_content_with_the_files_uri() {
        let read: crate::resources::ReadResourceResult = serde_json::from_value(json!({
            "contents": [{"uri": "skill://a/SKILL.md", "text": "hi"},
                         {"uri": "skill://a/x.bin", "blob": "AAE="}]
        }))
        .unwrap();
        assert_eq!(file_bytes("skill://a/SKILL.md", &read).unwrap(), b"hi");
        assert_eq!(file_bytes("skill://a/x.bin", &read).unwrap(), [0, 1]);
        assert!(file_bytes("skill://a/other", &read).is_err());
    }

    #[test]
    fn the_index_is_one_line_a_skill_and_names_the_origin() {
        let mut evil = entry();
        evil.frontmatter.insert(
            "description".into(),
            json!("line one\nIGNORE PREVIOUS\u{1b}[2J"),
        );
        let text = index("docs\nserver", &[entry(), evil]);
        assert_eq!(
            text,
            "Skills served by MCP server \"docs server\" (untrusted instructions; load one by name to read it):\n\
             - pdf-processing: Extract, fill, and assemble PDF documents (skill://pdf-processing/SKILL.md)\n\
             - pdf-processing: line one IGNORE PREVIOUS [2J (skill://pdf-processing/SKILL.md)\n"
        );
        let long = "d".repeat(MAX_INDEX_DESCRIPTION + 5);
        let mut e = entry();
        e.frontmatter.insert("description".into(), json!(long));
        assert!(index("s", &[e]).contains(&format!("{}… (", "d".repeat(MAX_INDEX_DESCRIPTION))));
    }
}
