//! Resources: what a server lists (`resources/list`), the templates it fills in
//! (`resources/templates/list`, expanded here per RFC 6570), and what a read returns
//! (`resources/read`).
//!
//! > "Resources allow servers to share data that provides context to language models, such as
//! > files, database schemas, or application-specific information. Each resource is uniquely
//! > identified by a URI." — MCP 2025-11-25, Server § Resources (unchanged in 2026-07-28)
//!
//! Listed resources and templates are kept whole, as the server sent them (like
//! [`Tool`](crate::Tool)s): their typed fields are read out, and [`Resource::raw`] is the object
//! as sent, unknown members included. Contents are read leniently: text as sent (mended when it
//! is not valid JSON text, as a tool's is), a blob kept as its base64 text and decoded only when
//! asked ([`ResourceContents::blob_bytes`]), so a bad blob fails that one content, not the read.

use crate::types::{list_result, Outcome, ResourceContents, ResultType};
use base64::Engine as _;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The longest URI template [`expand_uri_template`] reads, in bytes; a longer one is refused
/// ([`ResourceError::Template`]).
pub const MAX_TEMPLATE_LEN: usize = 8 * 1024;

/// The longest URI [`expand_uri_template`] makes, in bytes; past it the expansion fails
/// ([`ResourceError::UriTooLong`]) rather than hand a server a URI no server keeps.
pub const MAX_URI_LEN: usize = 64 * 1024;

/// What went wrong with a resource, a read's contents or a template, on this side.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// A read's contents are larger than the cap (text and base64 blobs, in bytes).
    #[error("the contents of {uri} are {len} bytes, over the limit of {limit}")]
    TooLarge {
        /// The URI read.
        uri: String,
        /// Their size.
        len: usize,
        /// The cap.
        limit: usize,
    },
    /// A blob is not valid base64.
    #[error("the blob of {uri} is not base64: {reason}")]
    NotBase64 {
        /// The content's URI.
        uri: String,
        /// Where the decoding failed.
        reason: String,
    },
    /// A URI template could not be read or expanded.
    #[error("URI template {template:?}: {reason}")]
    Template {
        /// The template's start (at most 128 characters).
        template: String,
        /// Why.
        reason: String,
    },
    /// An expanded template is longer than [`MAX_URI_LEN`].
    #[error("the expanded URI is {len} bytes, over the limit of {limit}")]
    UriTooLong {
        /// Its length.
        len: usize,
        /// The cap.
        limit: usize,
    },
}

/// The start of a server's string, for an error message.
fn excerpt(s: &str) -> String {
    s.chars().take(128).collect()
}

/// A number read leniently: a whole, non-negative number, else `None` (a size is a hint).
fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    })
}

/// A string read leniently: anything else (a number, `null`) is `None`.
fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::String(s)) => Some(s),
        _ => None,
    })
}

/// Reads an object whole ([`RawValue`]) and its fields `F` out of it.
fn with_raw<'de, D: Deserializer<'de>, F: serde::de::DeserializeOwned>(
    d: D,
) -> Result<(Box<RawValue>, F), D::Error> {
    let raw = Box::<RawValue>::deserialize(d)?;
    let fields = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
    Ok((raw, fields))
}

/// One resource a server lists (`resources/list`).
///
/// > "`uri`: Unique identifier for the resource / `name`: The name of the resource. / `title`:
/// > Optional human-readable name … / `description` / `mimeType` / `size`: Optional size in
/// > bytes" — MCP 2025-11-25, Resources § Data Types
#[derive(Debug, Clone)]
pub struct Resource {
    /// Its URI: what `resources/read` takes.
    pub uri: String,
    /// Its name (empty when the server left it out).
    pub name: String,
    /// Human-readable name, when given.
    pub title: Option<String>,
    /// What it is, when given.
    pub description: Option<String>,
    /// Its MIME type, when given.
    pub mime_type: Option<String>,
    /// Its size in bytes, when given as a whole number (a hint, never checked).
    pub size: Option<u64>,
    /// `audience`, `priority`, `lastModified` hints: untrusted, as sent.
    pub annotations: Option<Value>,
    /// The `_meta` member, as sent.
    pub meta: Option<Value>,
    raw: Box<RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceFields {
    uri: String,
    #[serde(default, deserialize_with = "lenient_string")]
    name: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    title: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    description: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    mime_type: Option<String>,
    #[serde(default, deserialize_with = "lenient_u64")]
    size: Option<u64>,
    #[serde(default)]
    annotations: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<Value>,
}

impl<'de> Deserialize<'de> for Resource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (raw, f) = with_raw::<D, ResourceFields>(d)?;
        Ok(Resource {
            uri: f.uri,
            name: f.name.unwrap_or_default(),
            title: f.title,
            description: f.description,
            mime_type: f.mime_type,
            size: f.size,
            annotations: f.annotations,
            meta: f.meta,
            raw,
        })
    }
}

/// One resource template a server lists (`resources/templates/list`): a URI template (RFC 6570)
/// to fill in with [`expand`](Self::expand) and read.
///
/// > "Resource templates allow servers to expose parameterized resources using URI templates.
/// > Arguments may be auto-completed through the completion API." — MCP 2025-11-25, Resources
/// > § Resource Templates
#[derive(Debug, Clone)]
pub struct ResourceTemplate {
    /// The URI template (RFC 6570), as sent.
    pub uri_template: String,
    /// Its name (empty when the server left it out).
    pub name: String,
    /// Human-readable name, when given.
    pub title: Option<String>,
    /// What it is, when given.
    pub description: Option<String>,
    /// The MIME type of what it names, when all share one.
    pub mime_type: Option<String>,
    /// Hints, untrusted, as sent.
    pub annotations: Option<Value>,
    /// The `_meta` member, as sent.
    pub meta: Option<Value>,
    raw: Box<RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TemplateFields {
    uri_template: String,
    #[serde(default, deserialize_with = "lenient_string")]
    name: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    title: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    description: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    mime_type: Option<String>,
    #[serde(default)]
    annotations: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<Value>,
}

impl<'de> Deserialize<'de> for ResourceTemplate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (raw, f) = with_raw::<D, TemplateFields>(d)?;
        Ok(ResourceTemplate {
            uri_template: f.uri_template,
            name: f.name.unwrap_or_default(),
            title: f.title,
            description: f.description,
            mime_type: f.mime_type,
            annotations: f.annotations,
            meta: f.meta,
            raw,
        })
    }
}

impl ResourceTemplate {
    /// The URI this template names with `variables` (see [`expand_uri_template`]).
    pub fn expand(&self, variables: &Map<String, Value>) -> Result<String, ResourceError> {
        expand_uri_template(&self.uri_template, variables)
    }
}

/// The raw object and comparison by its text, for the items kept whole.
macro_rules! kept_whole {
    ($($t:ty),*) => {$(
        impl $t {
            /// The object exactly as the server sent it.
            pub fn raw(&self) -> &RawValue {
                &self.raw
            }
        }

        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.raw.get() == other.raw.get()
            }
        }

        impl serde::Serialize for $t {
            /// Writes the object exactly as the server sent it.
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.raw.serialize(s)
            }
        }
    )*};
}
pub(crate) use kept_whole;

kept_whole!(Resource, ResourceTemplate);

list_result! {
    /// The `resources/list` result: one page of resources.
    ListResourcesResult, ListResourcesWire = "ListResourcesWire", resources: Resource, "resources"
}

list_result! {
    /// The `resources/templates/list` result: one page of resource templates.
    ListResourceTemplatesResult, ListResourceTemplatesWire = "ListResourceTemplatesWire",
    resource_templates: ResourceTemplate, "resourceTemplates"
}

/// The `resources/read` result: the contents of the resource, and of what it holds (a directory
/// read may return several).
///
/// > "`contents: (TextResourceContents | BlobResourceContents)[]`" — MCP 2025-11-25, schema
/// > `ReadResourceResult`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents, in order.
    pub contents: Vec<ResourceContents>,
    /// The `_meta` member, verbatim (see [`CallToolResult::meta`](crate::CallToolResult::meta)).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<RawValue>>,
    /// `resultType` as sent (modern servers); absent means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
}

impl PartialEq for ReadResourceResult {
    fn eq(&self, other: &Self) -> bool {
        self.contents == other.contents
            && self.meta.as_deref().map(RawValue::get) == other.meta.as_deref().map(RawValue::get)
            && self.result_type == other.result_type
    }
}

impl Outcome for ReadResourceResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

impl ReadResourceResult {
    /// The size of the contents: their text and their blobs' base64 text, in bytes.
    pub fn size(&self) -> usize {
        self.contents
            .iter()
            .map(|c| c.text.as_deref().map_or(0, str::len) + c.blob.as_deref().map_or(0, str::len))
            .fold(0, usize::saturating_add)
    }

    /// Fails with [`ResourceError::TooLarge`] when the contents ([`size`](Self::size)) are over
    /// `limit` bytes. `uri` is the URI read, for the message.
    pub fn check_size(&self, uri: &str, limit: usize) -> Result<(), ResourceError> {
        let len = self.size();
        if len > limit {
            return Err(ResourceError::TooLarge {
                uri: excerpt(uri),
                len,
                limit,
            });
        }
        Ok(())
    }
}

impl ResourceContents {
    /// The blob's bytes, decoded from base64 (standard alphabet, padding optional; whitespace
    /// and line breaks, which some encoders insert every 76 characters, are skipped); `None` for
    /// text contents.
    ///
    /// > "Binary data **MUST** be properly encoded" — MCP 2025-11-25, Resources § Security
    /// > Considerations
    pub fn blob_bytes(&self) -> Option<Result<Vec<u8>, ResourceError>> {
        let blob = self.blob.as_deref()?;
        let engine = base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        let decoded = if blob.bytes().any(|b| b.is_ascii_whitespace()) {
            let compact: String = blob.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            engine.decode(compact)
        } else {
            engine.decode(blob)
        };
        Some(decoded.map_err(|e| ResourceError::NotBase64 {
            uri: excerpt(&self.uri),
            reason: e.to_string(),
        }))
    }
}

/// Expands an RFC 6570 URI template (levels 1 to 4) with `variables`: a string, number or
/// boolean is a value (numbers and booleans as JSON writes them), an array of those a list, an
/// object of those an associative array; `null` or a missing name is undefined (the expression
/// then expands to nothing, as the RFC says). Every character outside the operator's allowed
/// set is percent-encoded as UTF-8, so a value holding `/`, `?`, `#`, `..`, spaces or newlines
/// cannot leave its place in a simple expansion (`{var}`); reserved expansion (`{+var}`,
/// `{#var}`) keeps reserved characters, as the template asked.
///
/// > "A URI Template is a compact sequence of characters for describing a range of Uniform
/// > Resource Identifiers through variable expansion." — RFC 6570 § 1.1
///
/// Fails for a template that is not one ([`ResourceError::Template`]: unclosed braces, bad
/// variable names, an unknown operator; longer than [`MAX_TEMPLATE_LEN`]), a nested value in a
/// list or object, or a URI longer than [`MAX_URI_LEN`].
pub fn expand_uri_template(
    template: &str,
    variables: &Map<String, Value>,
) -> Result<String, ResourceError> {
    use iri_string::spec::UriSpec;
    use iri_string::template::simple_context::{SimpleContext, Value as TValue};
    use iri_string::template::UriTemplateStr;
    let fail = |reason: String| ResourceError::Template {
        template: excerpt(template),
        reason,
    };
    if template.len() > MAX_TEMPLATE_LEN {
        return Err(fail(format!(
            "{} bytes, over the limit of {MAX_TEMPLATE_LEN}",
            template.len()
        )));
    }
    let parsed = UriTemplateStr::new(template).map_err(|e| fail(e.to_string()))?;
    let scalar = |name: &str, v: &Value| -> Result<Option<String>, ResourceError> {
        Ok(match v {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Array(_) | Value::Object(_) => {
                return Err(fail(format!(
                    "variable {:?} nests a list or object in a list or object",
                    excerpt(name)
                )))
            }
        })
    };
    let mut context = SimpleContext::new();
    for (name, value) in variables {
        let value = match value {
            Value::Null => continue,
            Value::Array(items) => {
                let mut list = Vec::with_capacity(items.len());
                for item in items {
                    list.extend(scalar(name, item)?);
                }
                TValue::List(list)
            }
            Value::Object(members) => {
                let mut assoc = Vec::with_capacity(members.len());
                for (k, v) in members {
                    if let Some(v) = scalar(name, v)? {
                        assoc.push((k.clone(), v));
                    }
                }
                TValue::Assoc(assoc)
            }
            scalar_value => match scalar(name, scalar_value)? {
                Some(s) => TValue::String(s),
                None => continue,
            },
        };
        context.insert(name.as_str(), value);
    }
    let expanded = parsed
        .expand::<UriSpec, _>(&context)
        .map_err(|e| fail(e.to_string()))?;
    let mut uri = String::new();
    // Written through a cap: a template whose expansion runs past it stops being written there.
    let mut capped = Capped {
        out: &mut uri,
        over: 0,
    };
    use std::fmt::Write as _;
    // A write error here is only the cap's.
    let _ = write!(capped, "{expanded}");
    if capped.over > 0 {
        return Err(ResourceError::UriTooLong {
            len: MAX_URI_LEN + capped.over,
            limit: MAX_URI_LEN,
        });
    }
    Ok(uri)
}

/// A string that takes at most [`MAX_URI_LEN`] bytes and counts the rest.
struct Capped<'a> {
    out: &'a mut String,
    over: usize,
}

impl std::fmt::Write for Capped<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.over > 0 || self.out.len() + s.len() > MAX_URI_LEN {
            self.over += s.len();
            return Ok(());
        }
        self.out.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The variables of RFC 6570 § 3.2's examples.
    fn rfc_variables() -> Map<String, Value> {
        let Value::Object(m) = json!({
            "count": ["one", "two", "three"],
            "dom": ["example", "com"],
            "dub": "me/too",
            "hello": "Hello World!",
            "half": "50%",
            "var": "value",
            "who": "fred",
            "base": "http://example.com/home/",
            "path": "/foo/bar",
            "list": ["red", "green", "blue"],
            "keys": {"semi": ";", "dot": ".", "comma": ","},
            "v": "6",
            "x": "1024",
            "y": "768",
            "empty": "",
            "empty_keys": {},
            "undef": null
        }) else {
            unreachable!()
        };
        m
    }

    /// RFC 6570's own examples, level by level (§ 1.2 and § 3.2; the associative array's member
    /// order is the map's, which sorts keys: `comma`, `dot`, `semi`).
    #[test]
    fn the_rfcs_examples_expand_as_the_rfc_says() {
        let vars = rfc_variables();
        let cases = [
            // Level 1.
            ("{var}", "value"),
            ("{hello}", "Hello%20World%21"),
            ("{half}", "50%25"),
            ("O{empty}X", "OX"),
            ("O{undef}X", "OX"),
            // Level 2.
            ("{+var}", "value"),
            ("{+hello}", "Hello%20World!"),
            ("{+path}/here", "/foo/bar/here"),
            ("here?ref={+path}", "here?ref=/foo/bar"),
            ("{#var}", "#value"),
            ("{#hello}", "#Hello%20World!"),
            ("X{#var}", "X#value"),
            // Level 3.
            ("map?{x,y}", "map?1024,768"),
            ("{x,hello,y}", "1024,Hello%20World%21,768"),
            ("{+x,hello,y}", "1024,Hello%20World!,768"),
            ("{+path,x}/here", "/foo/bar,1024/here"),
            ("{#x,hello,y}", "#1024,Hello%20World!,768"),
            ("X{.var}", "X.value"),
            ("X{.x,y}", "X.1024.768"),
            ("{/var}", "/value"),
            ("{/var,x}/here", "/value/1024/here"),
            ("{;x,y}", ";x=1024;y=768"),
            ("{;x,y,empty}", ";x=1024;y=768;empty"),
            ("{?x,y}", "?x=1024&y=768"),
            ("{?x,y,empty}", "?x=1024&y=768&empty="),
            ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
            ("{&x,y,empty}", "&x=1024&y=768&empty="),
            // Level 4.
            ("{var:3}", "val"),
            ("{var:30}", "value"),
            ("{list}", "red,green,blue"),
            ("{list*}", "red,green,blue"),
            ("{keys}", "comma,%2C,dot,.,semi,%3B"),
            ("{keys*}", "comma=%2C,dot=.,semi=%3B"),
            ("{+path:6}/here", "/foo/b/here"),
            ("{+list}", "red,green,blue"),
            ("{+keys*}", "comma=,,dot=.,semi=;"),
            ("{#path:6}/here", "#/foo/b/here"),
            ("{#list*}", "#red,green,blue"),
            ("X{.list*}", "X.red.green.blue"),
            ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
            ("{/keys*}", "/comma=%2C/dot=./semi=%3B"),
            ("{;hello:5}", ";hello=Hello"),
            ("{;list*}", ";list=red;list=green;list=blue"),
            ("{;keys*}", ";comma=%2C;dot=.;semi=%3B"),
            ("{?var:3}", "?var=val"),
            ("{?list*}", "?list=red&list=green&list=blue"),
            ("{?keys*}", "?comma=%2C&dot=.&semi=%3B"),
            ("{&var:3}", "&var=val"),
            ("{&list*}", "&list=red&list=green&list=blue"),
            ("{?empty_keys*}", ""),
            ("{count}", "one,two,three"),
            ("{/count*}", "/one/two/three"),
            ("{?dom*}", "?dom=example&dom=com"),
            ("{+dub}", "me/too"),
            ("{dub}", "me%2Ftoo"),
        ];
        for (template, want) in cases {
            assert_eq!(
                expand_uri_template(template, &vars).as_deref(),
                Ok(want),
                "{template}"
            );
        }
    }

    /// Odd values stay inside their expression; odd templates fail clearly; nothing panics.
    #[test]
    fn odd_values_and_templates() {
        let Value::Object(vars) = json!({
            "path": "../../etc/passwd",
            "nl": "a\r\nb",
            "q": "a?b#c&d=e",
            "uni": "é😀",
            "n": 42,
            "t": true,
        }) else {
            unreachable!()
        };
        let ok = |t: &str| expand_uri_template(t, &vars).unwrap();
        assert_eq!(ok("file:///{path}"), "file:///..%2F..%2Fetc%2Fpasswd");
        assert_eq!(ok("x://{nl}"), "x://a%0D%0Ab");
        assert_eq!(ok("x://h/{q}"), "x://h/a%3Fb%23c%26d%3De");
        assert_eq!(ok("x://{uni}"), "x://%C3%A9%F0%9F%98%80");
        assert_eq!(ok("x://{uni:1}"), "x://%C3%A9");
        assert_eq!(ok("x://{n}/{t}"), "x://42/true");
        assert_eq!(ok("a://no-variables"), "a://no-variables");
        for bad in ["{unclosed", "x}", "{a b}", "{!x}", "{=x}", "{}", "a b"] {
            assert!(
                matches!(
                    expand_uri_template(bad, &vars),
                    Err(ResourceError::Template { .. })
                ),
                "{bad}: {:?}",
                expand_uri_template(bad, &vars)
            );
        }
        let Value::Object(nested) = json!({"nested": [[1]]}) else {
            unreachable!()
        };
        assert!(matches!(
            expand_uri_template("{nested}", &nested),
            Err(ResourceError::Template { .. })
        ));
        let long = "x".repeat(MAX_TEMPLATE_LEN + 1);
        assert!(matches!(
            expand_uri_template(&long, &vars),
            Err(ResourceError::Template { .. })
        ));
        let Value::Object(big) = json!({"v": "é".repeat(MAX_URI_LEN)}) else {
            unreachable!()
        };
        assert!(matches!(
            expand_uri_template("x://{v}", &big),
            Err(ResourceError::UriTooLong { .. })
        ));
    }

    #[test]
    fn resources_and_templates_are_kept_whole_and_read_leniently() {
        let page: ListResourcesResult = serde_json::from_str(
            r#"{"resources":[{"uri":"a://1","name":"one","size":12,"x-extra":[1]},
                {"uri":"a://2","size":-1,"title":7}],"nextCursor":"c","ttlMs":"soon"}"#,
        )
        .unwrap();
        assert_eq!(page.resources[0].size, Some(12));
        assert!(page.resources[0].raw().get().contains("x-extra"));
        assert_eq!(page.resources[1].name, "");
        assert_eq!(page.resources[1].size, None);
        assert_eq!(page.resources[1].title, None);
        assert_eq!(page.next_cursor.as_deref(), Some("c"));
        assert_eq!(page.ignored_hints().len(), 1);
        let back = serde_json::to_string(&page.resources[0]).unwrap();
        assert!(back.contains(r#""x-extra":[1]"#), "{back}");
        // A resource without its URI is no resource: the page fails, as a nameless tool's does.
        assert!(
            serde_json::from_str::<ListResourcesResult>(r#"{"resources":[{"name":"x"}]}"#).is_err()
        );
        let templates: ListResourceTemplatesResult = serde_json::from_str(
            r#"{"resourceTemplates":[{"uriTemplate":"t://{id}","name":"t"}]}"#,
        )
        .unwrap();
        let Value::Object(vars) = json!({"id": "a b"}) else {
            unreachable!()
        };
        assert_eq!(
            templates.resource_templates[0].expand(&vars).unwrap(),
            "t://a%20b"
        );
    }

    #[test]
    fn a_reads_blobs_decode_on_asking_and_its_size_is_capped() {
        let read: ReadResourceResult = serde_json::from_str(
            r#"{"contents":[{"uri":"a://t","text":"hello"},
                {"uri":"a://b","blob":"aGk=","mimeType":"x/y","_meta":{"k":1}},
                {"uri":"a://c","blob":"aG\nk"},
                {"uri":"a://bad","blob":"not base64!"}]}"#,
        )
        .unwrap();
        assert_eq!(read.contents[0].blob_bytes(), None);
        assert_eq!(read.contents[1].blob_bytes(), Some(Ok(b"hi".to_vec())));
        assert_eq!(read.contents[1].meta, Some(json!({"k": 1})));
        assert_eq!(read.contents[2].blob_bytes(), Some(Ok(b"hi".to_vec())));
        assert!(matches!(
            read.contents[3].blob_bytes(),
            Some(Err(ResourceError::NotBase64 { .. }))
        ));
        assert_eq!(read.size(), 5 + 4 + 4 + 11);
        assert_eq!(read.check_size("a://t", 24), Ok(()));
        assert!(matches!(
            read.check_size("a://t", 23),
            Err(ResourceError::TooLarge {
                len: 24,
                limit: 23,
                ..
            })
        ));
        // Text that is not a string fails the read.
        assert!(serde_json::from_str::<ReadResourceResult>(
            r#"{"contents":[{"uri":"a","text":1}]}"#
        )
        .is_err());
    }
}
