//! The MCP schema types a tool client reads and writes (schema revision 2025-11-25, read leniently).
//!
//! Unknown fields never fail a parse. JSON Schemas stay raw JSON text ([`RawValue`]): a tool's
//! `inputSchema` goes back out exactly as it came in, `$schema`, `$defs`, `$ref`, `allOf` and
//! `if`/`then`/`else` included, and is never dereferenced.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A protocol revision string, such as `2025-11-25`.
pub type ProtocolVersion = String;

/// The newest legacy revision this client speaks; it is what `initialize` offers.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// The legacy revisions a server may answer `initialize` with, newest first.
///
/// > "If the server supports the requested protocol version, it MUST respond with the same version.
/// > Otherwise, the server MUST respond with another protocol version it supports."
/// > — MCP 2025-11-25, Lifecycle § Version Negotiation
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The modern revisions this client speaks, newest (preferred) first: they carry the protocol
/// version, identity and capabilities in every request's `_meta`, with no handshake.
///
/// > "**Modern**: protocol versions that convey version, identity, and capabilities as
/// > per-request metadata (revision `2026-07-28` and later)." — MCP 2026-07-28, Versioning
pub const MODERN_PROTOCOL_VERSIONS: &[&str] = &["2026-07-28"];

/// What a result is, by its `resultType` (2026-07-28).
///
/// > "A `resultType` of any value unrecognized by the client **MUST** be considered invalid." /
/// > "clients **MUST** treat an absent `resultType` as `"complete"`." — MCP 2026-07-28, Basic §
/// > ResultType
///
/// Any JSON value reads as one of these (a value that is not a string is [`Other`](Self::Other),
/// described), so that the decision is the session's, not the parser's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ResultType {
    /// `"complete"` (or absent): the result is final.
    #[default]
    Complete,
    /// `"input_required"`: the server needs input before it can complete the request.
    InputRequired,
    /// Anything else: invalid for this client.
    Other(String),
}

impl ResultType {
    /// The wire value.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Other(s) => s,
        }
    }

    /// The result type of an optional `resultType` member: absent means complete.
    pub fn of(field: Option<&ResultType>) -> &ResultType {
        const COMPLETE: &ResultType = &ResultType::Complete;
        field.unwrap_or(COMPLETE)
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ResultType;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a resultType")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ResultType, E> {
                Ok(match s {
                    "complete" => ResultType::Complete,
                    "input_required" => ResultType::InputRequired,
                    other => ResultType::Other(other.to_owned()),
                })
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ResultType, E> {
                Ok(ResultType::Other(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ResultType, E> {
                Ok(ResultType::Other(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ResultType, E> {
                Ok(ResultType::Other(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ResultType, E> {
                Ok(ResultType::Other(v.to_string()))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<ResultType, E> {
                Ok(ResultType::Other("null".into()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<ResultType, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(ResultType::Other("an array".into()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<ResultType, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(ResultType::Other("an object".into()))
            }
        }
        // No allocation for the values the protocol defines; any other value is kept as text.
        d.deserialize_any(Visitor)
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// What a decoded result says about its own kind: its `resultType` member, when it has one.
pub trait Outcome {
    /// The `resultType` member as sent; `None` when absent.
    fn result_type(&self) -> Option<&ResultType>;
}

impl<T: Outcome> Outcome for Box<T> {
    fn result_type(&self) -> Option<&ResultType> {
        (**self).result_type()
    }
}

impl Outcome for Value {
    fn result_type(&self) -> Option<&ResultType> {
        // Raw results are checked by the session from their text; see `session::modern`.
        None
    }
}

/// How a list result may be cached (`cacheScope`, 2026-07-28): `"public"` or `"private"`, the
/// only values read (any other is ignored, see [`IgnoredHint`]).
///
/// > "`"public"`: The response does not contain user-specific data. … `"private"`: The response
/// > MAY be cached and reused only within the same authorization context." — MCP 2026-07-28,
/// > schema `CacheableResult`
pub type CacheScope = String;

/// A cache hint (`ttlMs`, `cacheScope`) a result carried that could not be used, and was ignored:
/// hints are hints, so an odd one never fails its result. The session reports each as a
/// [`Warning::CacheHintIgnored`](crate::Warning::CacheHintIgnored).
///
/// > "`ttlMs: number` … `@minimum 0`" / "`cacheScope: "public" | "private"`" — MCP 2026-07-28,
/// > schema `CacheableResult`; "The `ttlMs` field is a hint from the server" / "If `ttlMs` is
/// > negative, clients **SHOULD** ignore it and treat it as `0`." — MCP 2026-07-28, Caching
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredHint {
    /// The member: `ttlMs` or `cacheScope`.
    pub field: &'static str,
    /// Why it was ignored, with the value (a string quoted and cut to 64 characters).
    pub reason: String,
}

/// The hints of one result that were ignored, behind one thin pointer (rare; the result stays
/// small).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ignored(pub(crate) Vec<IgnoredHint>);

/// The longest part of a server's string quoted in an [`IgnoredHint`].
const HINT_EXCERPT: usize = 64;

/// A `ttlMs` as read: a whole number of milliseconds in range, else why not.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum TtlWire {
    #[default]
    Absent,
    Valid(u64),
    /// Negative: read as 0, as the spec says.
    Negative(String),
    Invalid(String),
}

impl<'de> Deserialize<'de> for TtlWire {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match HintValue::deserialize(d)?.0 {
            Value::Null => TtlWire::Absent,
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(v), _, _) => TtlWire::Valid(v),
                (None, Some(_), _) => TtlWire::Negative(format!("{n} is negative: read as 0")),
                (_, _, Some(f)) if f < 0.0 => {
                    TtlWire::Negative(format!("{n} is negative: read as 0"))
                }
                (_, _, Some(f)) if f.fract() == 0.0 && f < 18_446_744_073_709_551_616.0 => {
                    // A whole number written with a fraction or an exponent (`1000.0`, `1e3`).
                    TtlWire::Valid(f as u64)
                }
                (_, _, Some(f)) if f.fract() == 0.0 => {
                    TtlWire::Invalid(format!("{n} is past the largest number of milliseconds"))
                }
                _ => TtlWire::Invalid(format!("{n} is not a whole number of milliseconds")),
            },
            other => TtlWire::Invalid(format!("{} where a number belongs", describe(&other))),
        })
    }
}

/// A `cacheScope` as read.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum ScopeWire {
    #[default]
    Absent,
    Valid(CacheScope),
    Invalid(String),
}

impl<'de> Deserialize<'de> for ScopeWire {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match HintValue::deserialize(d)?.0 {
            Value::Null => ScopeWire::Absent,
            Value::String(s) if s == "public" || s == "private" => ScopeWire::Valid(s),
            Value::String(s) => ScopeWire::Invalid(format!(
                "{:?} is no cache scope (public or private)",
                excerpt(&s)
            )),
            other => ScopeWire::Invalid(format!("{} where a string belongs", describe(&other))),
        })
    }
}

/// Any JSON value, read without failing, and without keeping more of it than a warning needs
/// (a string is cut to [`HINT_EXCERPT`] characters; arrays and objects are skipped). An integer
/// past `u64` comes as a float from serde_json, so it is a number too big, not a parse error.
struct HintValue(Value);

impl<'de> Deserialize<'de> for HintValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = HintValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<HintValue, E> {
                Ok(HintValue(Value::Bool(v)))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<HintValue, E> {
                Ok(HintValue(Value::from(v)))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<HintValue, E> {
                Ok(HintValue(Value::from(v)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<HintValue, E> {
                // Not finite only from a parser that allows it; a string then describes it.
                Ok(HintValue(
                    serde_json::Number::from_f64(v)
                        .map(Value::Number)
                        .unwrap_or_else(|| Value::String(v.to_string())),
                ))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HintValue, E> {
                Ok(HintValue(Value::String(excerpt(v))))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<HintValue, E> {
                Ok(HintValue(Value::Null))
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<HintValue, E> {
                Ok(HintValue(Value::Null))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<HintValue, D::Error> {
                HintValue::deserialize(d)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<HintValue, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(HintValue(Value::Array(Vec::new())))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<HintValue, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(HintValue(Value::Object(Map::new())))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// At most [`HINT_EXCERPT`] characters of a server's string.
fn excerpt(s: &str) -> String {
    s.chars().take(HINT_EXCERPT).collect()
}

/// What kind of value a hint was, for its warning.
fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {:?}", excerpt(s)),
        Value::Bool(b) => format!("{b}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
        Value::Number(n) => n.to_string(),
        Value::Null => "null".into(),
    }
}

/// The hints of a cacheable result, read leniently: what could be used, and what was ignored.
pub(crate) fn read_hints(
    ttl: TtlWire,
    scope: ScopeWire,
) -> (Option<u64>, Option<CacheScope>, Option<Box<Ignored>>) {
    let mut ignored = Vec::new();
    let ttl_ms = match ttl {
        TtlWire::Absent => None,
        TtlWire::Valid(v) => Some(v),
        TtlWire::Negative(reason) => {
            ignored.push(IgnoredHint {
                field: "ttlMs",
                reason,
            });
            Some(0)
        }
        TtlWire::Invalid(reason) => {
            ignored.push(IgnoredHint {
                field: "ttlMs",
                reason,
            });
            None
        }
    };
    let cache_scope = match scope {
        ScopeWire::Absent => None,
        ScopeWire::Valid(s) => Some(s),
        ScopeWire::Invalid(reason) => {
            ignored.push(IgnoredHint {
                field: "cacheScope",
                reason,
            });
            None
        }
    };
    let ignored = (!ignored.is_empty()).then(|| Box::new(Ignored(ignored)));
    (ttl_ms, cache_scope, ignored)
}

/// The name and version of an MCP implementation (`clientInfo` / `serverInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// Programmatic name.
    #[serde(default)]
    pub name: String,
    /// Version string.
    #[serde(default)]
    pub version: String,
    /// Human-readable name, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Any other members, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// An implementation with this name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            extra: Map::new(),
        }
    }
}

/// The `initialize` request's params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The revision the client offers: its latest.
    pub protocol_version: ProtocolVersion,
    /// Client capabilities; this client declares none (`{}`).
    pub capabilities: Value,
    /// Who the client is.
    pub client_info: Implementation,
}

/// The `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: ProtocolVersion,
    /// What the server offers (`tools`, `resources`, …), as sent.
    #[serde(default)]
    pub capabilities: Value,
    /// Who the server is.
    #[serde(default = "unknown_server")]
    pub server_info: Implementation,
    /// Usage hints for the model, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

fn unknown_server() -> Implementation {
    Implementation::new("", "")
}

/// One tool a server offers, as listed by `tools/list`.
///
/// The whole object is kept as the server sent it ([`raw`](Self::raw)), and serializing a `Tool`
/// writes exactly that text back out.
#[derive(Debug, Clone)]
pub struct Tool {
    /// Unique name of the tool; what `tools/call` takes.
    pub name: String,
    /// Human-readable name, when given.
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: Option<String>,
    /// The JSON Schema of the arguments, verbatim (`None` if the server left it out).
    pub input_schema: Option<Box<RawValue>>,
    /// The JSON Schema of `structuredContent`, verbatim, when given.
    pub output_schema: Option<Box<RawValue>>,
    /// Behaviour hints (`readOnlyHint`, …): untrusted, as sent.
    pub annotations: Option<Value>,
    /// The `_meta` member, as sent.
    pub meta: Option<Value>,
    raw: Box<RawValue>,
}

impl Tool {
    /// The tool object exactly as the server sent it.
    pub fn raw(&self) -> &RawValue {
        &self.raw
    }

    /// Parses one tool object from JSON text.
    pub fn from_json(json: &str) -> Result<Tool, serde_json::Error> {
        serde_json::from_str(json)
    }
}

impl PartialEq for Tool {
    fn eq(&self, other: &Self) -> bool {
        self.raw.get() == other.raw.get()
    }
}

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Fields {
            name: String,
            #[serde(default)]
            title: Option<String>,
            #[serde(default)]
            description: Option<String>,
            #[serde(default)]
            input_schema: Option<Box<RawValue>>,
            #[serde(default)]
            output_schema: Option<Box<RawValue>>,
            #[serde(default)]
            annotations: Option<Value>,
            #[serde(default, rename = "_meta")]
            meta: Option<Value>,
        }
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        let f: Fields = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
        Ok(Tool {
            name: f.name,
            title: f.title,
            description: f.description,
            input_schema: f.input_schema.filter(|s| s.get() != "null"),
            output_schema: f.output_schema.filter(|s| s.get() != "null"),
            annotations: f.annotations,
            meta: f.meta,
            raw,
        })
    }
}

impl Serialize for Tool {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(serializer)
    }
}

/// The `tools/list` result: one page of tools.
///
/// Its cache hints are read leniently ([`IgnoredHint`]): an odd `ttlMs` or `cacheScope` is
/// ignored, and never loses the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "ListToolsWire")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// The cursor for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long this page may be cached, in milliseconds (`ttlMs`, modern servers; `0`: stale at
    /// once). `None` when absent or ignored ([`ignored_hints`](Self::ignored_hints)); a negative
    /// value reads as `0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache it (`cacheScope`: `"public"` or `"private"`, modern servers); `None` when
    /// absent or ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `resultType` as sent (modern servers); absent means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The cache hints that were sent but ignored.
    #[serde(skip)]
    ignored: Option<Box<Ignored>>,
}

impl ListToolsResult {
    /// The cache hints the server sent that could not be used, and were ignored (empty
    /// normally).
    pub fn ignored_hints(&self) -> &[IgnoredHint] {
        self.ignored.as_deref().map_or(&[], |i| &i.0)
    }
}

/// [`ListToolsResult`] as sent, its hints not yet judged.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListToolsWire {
    tools: Vec<Tool>,
    #[serde(default)]
    next_cursor: Option<String>,
    #[serde(default)]
    ttl_ms: TtlWire,
    #[serde(default)]
    cache_scope: ScopeWire,
    #[serde(default)]
    result_type: Option<ResultType>,
}

impl From<ListToolsWire> for ListToolsResult {
    fn from(w: ListToolsWire) -> Self {
        let (ttl_ms, cache_scope, ignored) = read_hints(w.ttl_ms, w.cache_scope);
        ListToolsResult {
            tools: w.tools,
            next_cursor: w.next_cursor,
            ttl_ms,
            cache_scope,
            result_type: w.result_type,
            ignored,
        }
    }
}

impl Outcome for ListToolsResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

/// The `tools/call` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured content, in order.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured content, when the tool returns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed; its content then describes the failure for the model.
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "null_as_false"
    )]
    pub is_error: bool,
    /// The `_meta` member, verbatim: JSON text, parsed only by whoever reads it
    /// (`serde_json::from_str(meta.get())`). A modern server puts its identity in every result's
    /// `_meta`; kept as text, it costs a call one copy instead of a tree of maps built and freed.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<RawValue>>,
    /// `resultType` as sent (modern servers); absent means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
}

/// Equal when every member is; `_meta` by its text, as [`Tool`]s are compared.
impl PartialEq for CallToolResult {
    fn eq(&self, other: &Self) -> bool {
        self.content == other.content
            && self.structured_content == other.structured_content
            && self.is_error == other.is_error
            && self.meta.as_deref().map(RawValue::get) == other.meta.as_deref().map(RawValue::get)
            && self.result_type == other.result_type
    }
}

impl Outcome for CallToolResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

/// The `server/discover` result (2026-07-28): the server's versions, capabilities and identity.
///
/// > "The server replies with its supported protocol versions, capabilities, and identity." —
/// > MCP 2026-07-28, Discovery
///
/// `supportedVersions` is required: a result without it (a legacy server answering every
/// unknown method with `{}`) is no discover result.
///
/// Its cache hints are read leniently ([`IgnoredHint`]): an odd `ttlMs` or `cacheScope` is
/// ignored, and never makes a modern server look legacy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "DiscoverWire")]
pub struct DiscoverResult {
    /// The protocol versions the server supports.
    pub supported_versions: Vec<String>,
    /// What the server offers, as sent.
    #[serde(default)]
    pub capabilities: Value,
    /// Usage hints for the model, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long this answer may be cached, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// The `_meta` member, as sent (the server's identity is in it).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// A `serverInfo` member in the result itself, where some servers put their identity instead
    /// of `_meta` (read leniently; `_meta` wins).
    #[serde(
        default,
        rename = "serverInfo",
        skip_serializing_if = "Option::is_none"
    )]
    pub body_server_info: Option<Value>,
    /// `resultType` as sent; absent means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The cache hints that were sent but ignored.
    #[serde(skip)]
    ignored: Option<Box<Ignored>>,
}

/// [`DiscoverResult`] as sent, its hints not yet judged.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiscoverWire {
    supported_versions: Vec<String>,
    #[serde(default)]
    capabilities: Value,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    ttl_ms: TtlWire,
    #[serde(default)]
    cache_scope: ScopeWire,
    #[serde(default, rename = "_meta")]
    meta: Option<Value>,
    #[serde(default, rename = "serverInfo")]
    body_server_info: Option<Value>,
    #[serde(default)]
    result_type: Option<ResultType>,
}

impl From<DiscoverWire> for DiscoverResult {
    fn from(w: DiscoverWire) -> Self {
        let (ttl_ms, cache_scope, ignored) = read_hints(w.ttl_ms, w.cache_scope);
        DiscoverResult {
            supported_versions: w.supported_versions,
            capabilities: w.capabilities,
            instructions: w.instructions,
            ttl_ms,
            cache_scope,
            meta: w.meta,
            body_server_info: w.body_server_info,
            result_type: w.result_type,
            ignored,
        }
    }
}

/// The `_meta` key under which a modern server names itself in every result.
///
/// > "Servers **SHOULD** include the following `io.modelcontextprotocol/*` field in every
/// > result's `_meta` … `io.modelcontextprotocol/serverInfo`" — MCP 2026-07-28, Basic § `_meta`
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

impl DiscoverResult {
    /// The cache hints the server sent that could not be used, and were ignored (empty
    /// normally).
    pub fn ignored_hints(&self) -> &[IgnoredHint] {
        self.ignored.as_deref().map_or(&[], |i| &i.0)
    }

    /// The server's identity (`_meta["io.modelcontextprotocol/serverInfo"]`, else a `serverInfo`
    /// member of the result), when it gave a readable one.
    pub fn server_info(&self) -> Option<Implementation> {
        let read = |v: &Value| serde_json::from_value::<Implementation>(v.clone()).ok();
        let meta = self.meta.as_ref().and_then(|m| m.get(SERVER_INFO_META));
        meta.and_then(read)
            .or_else(|| self.body_server_info.as_ref().and_then(read))
    }
}

impl Outcome for DiscoverResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

/// An `input_required` result (2026-07-28): what the server needs before it can complete the
/// request.
///
/// > "`inputRequests` _(optional)_: An `InputRequests` map of server-initiated requests that the
/// > client must fulfill. `requestState` _(optional)_: An opaque string meaningful only to the
/// > server." — MCP 2026-07-28, Multi Round-Trip Requests
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// The requests the client must answer, by the server's keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Map<String, Value>>,
    /// Echoed exactly in the retry; never inspected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

fn null_as_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

/// The contents of an embedded resource: text or a base64 blob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The resource's URI.
    #[serde(default)]
    pub uri: String,
    /// Its MIME type, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its base64 bytes, for a binary resource ([`blob_bytes`](Self::blob_bytes) decodes them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// The `_meta` member, as sent.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// One block of a tool result's `content`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `{"type":"text","text":…}`.
    Text {
        /// The text.
        text: String,
    },
    /// `{"type":"image","data":<base64>,"mimeType":…}`.
    Image {
        /// Base64-encoded bytes.
        data: String,
        /// MIME type, such as `image/png`.
        mime_type: String,
    },
    /// `{"type":"audio","data":<base64>,"mimeType":…}`.
    Audio {
        /// Base64-encoded bytes.
        data: String,
        /// MIME type, such as `audio/wav`.
        mime_type: String,
    },
    /// `{"type":"resource_link","uri":…,"name":…}`: a pointer to a resource, not its contents.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its MIME type, when given.
        mime_type: Option<String>,
        /// Its description, when given.
        description: Option<String>,
    },
    /// `{"type":"resource","resource":{uri, mimeType?, text | blob}}`: an embedded resource.
    Resource {
        /// The resource's contents.
        resource: ResourceContents,
    },
    /// A block of a type this client does not know, or a known type with missing members:
    /// the raw JSON, kept.
    Unknown(Value),
}

/// Read as [`ContentBlock::from_value`] reads the block's JSON, without building that JSON as a
/// [`Value`] first when it is a text block (a map, its keys and values, then moved out of it): a
/// tool call's answer is mostly one, and building the map cost each call several allocations.
/// Anything else is read as a [`Value`] and goes through [`ContentBlock::from_value`], as sent.
impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(BlockVisitor)
    }
}

/// A content block's member name: the two a text block needs, or any other (kept for
/// [`ContentBlock::Unknown`] and the other kinds).
enum BlockKey {
    Type,
    Text,
    Other(String),
}

impl<'de> Deserialize<'de> for BlockKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = BlockKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<BlockKey, E> {
                Ok(match key {
                    "type" => BlockKey::Type,
                    "text" => BlockKey::Text,
                    other => BlockKey::Other(other.to_owned()),
                })
            }
            fn visit_string<E: serde::de::Error>(self, key: String) -> Result<BlockKey, E> {
                Ok(match key.as_str() {
                    "type" => BlockKey::Type,
                    "text" => BlockKey::Text,
                    _ => BlockKey::Other(key),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// The visits of a visitor that reads what is not a map (nor, for some, a string) as [`Value`]
/// reads it, wrapped by `$wrap`: a block or a member that is a scalar or a list.
macro_rules! visit_as_value {
    ($de:lifetime, $t:ty, $wrap:expr) => {
        fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<$t, E> {
            Ok($wrap(Value::Bool(v)))
        }

        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$t, E> {
            Ok($wrap(Value::from(v)))
        }

        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$t, E> {
            Ok($wrap(Value::from(v)))
        }

        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<$t, E> {
            Ok($wrap(
                serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
            ))
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<$t, E> {
            Ok($wrap(Value::Null))
        }

        fn visit_none<E: serde::de::Error>(self) -> Result<$t, E> {
            Ok($wrap(Value::Null))
        }

        fn visit_some<D: Deserializer<$de>>(self, d: D) -> Result<$t, D::Error> {
            d.deserialize_any(self)
        }

        fn visit_seq<A: serde::de::SeqAccess<$de>>(self, seq: A) -> Result<$t, A::Error> {
            Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map($wrap)
        }
    };
}

/// A content block member's value, as [`Value`] reads it, except that the string `"text"` (a
/// text block's type) is not copied.
enum Member {
    TextKind,
    Value(Value),
}

impl Member {
    fn is_string(&self) -> bool {
        matches!(self, Member::TextKind | Member::Value(Value::String(_)))
    }

    fn into_value(self) -> Value {
        match self {
            Member::TextKind => Value::String("text".to_owned()),
            Member::Value(value) => value,
        }
    }
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MemberVisitor)
    }
}

/// Reads a [`Member`]: a string as itself, anything else as [`Value`] reads it.
struct MemberVisitor;

impl<'de> serde::de::Visitor<'de> for MemberVisitor {
    type Value = Member;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Member, E> {
        Ok(match v {
            "text" => Member::TextKind,
            _ => Member::Value(Value::String(v.to_owned())),
        })
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Member, E> {
        Ok(match v.as_str() {
            "text" => Member::TextKind,
            _ => Member::Value(Value::String(v)),
        })
    }

    visit_as_value!('de, Member, Member::Value);

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Member, A::Error> {
        Value::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Member::Value)
    }
}

/// Reads a content block: a map member by member (a text block is made from its two members;
/// any other map is rebuilt, in its order, and read by [`ContentBlock::from_value`]); anything
/// else is [`ContentBlock::Unknown`], as [`Value`] reads it.
struct BlockVisitor;

impl<'de> serde::de::Visitor<'de> for BlockVisitor {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        // Most blocks are `{"type":"text","text":…}`: their two members are kept in place rather
        // than in a list, and the type is not copied (two allocations fewer a block); a block
        // with more members keeps the rest in a list, in order.
        const HEAD: usize = 2;
        let mut head: [Option<(BlockKey, Member)>; HEAD] = [None, None];
        let mut rest: Vec<(BlockKey, Member)> = Vec::new();
        // Where the last `type` and `text` are (a repeated member: the last one counts, as in a
        // map).
        let (mut kind, mut text, mut n) = (None, None, 0);
        while let Some(key) = map.next_key::<BlockKey>()? {
            match key {
                BlockKey::Type => kind = Some(n),
                BlockKey::Text => text = Some(n),
                BlockKey::Other(_) => {}
            }
            let member = (key, map.next_value::<Member>()?);
            match head.get_mut(n) {
                Some(slot) => *slot = Some(member),
                None => rest.push(member),
            }
            n += 1;
        }
        let at = |i: usize| match head.get(i) {
            Some(slot) => slot.as_ref().map(|(_, m)| m),
            None => rest.get(i - HEAD).map(|(_, m)| m),
        };
        if let (Some(kind), Some(text)) = (kind, text) {
            if matches!(at(kind), Some(Member::TextKind)) && at(text).is_some_and(Member::is_string)
            {
                let member = match head.get_mut(text) {
                    Some(slot) => slot.take().map(|(_, m)| m),
                    None => Some(rest.swap_remove(text - HEAD).1),
                };
                let Some(Value::String(text)) = member.map(Member::into_value) else {
                    unreachable!("checked to be a string just above")
                };
                return Ok(ContentBlock::Text { text });
            }
        }
        let mut m = Map::new();
        for (key, value) in head.into_iter().flatten().chain(rest) {
            let key = match key {
                BlockKey::Type => "type".to_owned(),
                BlockKey::Text => "text".to_owned(),
                BlockKey::Other(key) => key,
            };
            m.insert(key, value.into_value());
        }
        Ok(ContentBlock::from_value(Value::Object(m)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ContentBlock, E> {
        Ok(ContentBlock::Unknown(Value::String(v.to_owned())))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<ContentBlock, E> {
        Ok(ContentBlock::Unknown(Value::String(v)))
    }

    visit_as_value!('de, ContentBlock, ContentBlock::Unknown);
}

impl ContentBlock {
    /// Reads a content block from JSON; anything that is not a well-formed known block becomes
    /// [`ContentBlock::Unknown`]. Payloads are moved, never copied.
    pub fn from_value(value: Value) -> ContentBlock {
        let Value::Object(mut m) = value else {
            return ContentBlock::Unknown(value);
        };
        let ok = |m: &Map<String, Value>, required: &[&str], optional: &[&str]| {
            required
                .iter()
                .all(|k| m.get(*k).is_some_and(Value::is_string))
                && optional
                    .iter()
                    .all(|k| m.get(*k).is_none_or(|v| v.is_string() || v.is_null()))
        };
        let kind = m
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match kind.as_str() {
            "text" if ok(&m, &["text"], &[]) => ContentBlock::Text {
                text: take(&mut m, "text").unwrap_or_default(),
            },
            "image" | "audio" if ok(&m, &["data"], &["mimeType"]) => {
                let data = take(&mut m, "data").unwrap_or_default();
                let mime_type = take(&mut m, "mimeType").unwrap_or_default();
                if kind == "image" {
                    ContentBlock::Image { data, mime_type }
                } else {
                    ContentBlock::Audio { data, mime_type }
                }
            }
            "resource_link" if ok(&m, &["uri"], &["name", "mimeType", "description"]) => {
                ContentBlock::ResourceLink {
                    uri: take(&mut m, "uri").unwrap_or_default(),
                    name: take(&mut m, "name").unwrap_or_default(),
                    mime_type: take(&mut m, "mimeType"),
                    description: take(&mut m, "description"),
                }
            }
            "resource"
                if m.get("resource")
                    .and_then(Value::as_object)
                    .is_some_and(|r| ok(r, &[], &["uri", "mimeType", "text", "blob"])) =>
            {
                let Some(Value::Object(mut r)) = m.remove("resource") else {
                    unreachable!("checked to be an object just above")
                };
                ContentBlock::Resource {
                    resource: ResourceContents {
                        uri: take(&mut r, "uri").unwrap_or_default(),
                        mime_type: take(&mut r, "mimeType"),
                        text: take(&mut r, "text"),
                        blob: take(&mut r, "blob"),
                        meta: r.remove("_meta").filter(|m| !m.is_null()),
                    },
                }
            }
            _ => ContentBlock::Unknown(Value::Object(m)),
        }
    }
}

/// Moves a string member out of an object.
fn take(m: &mut Map<String, Value>, key: &str) -> Option<String> {
    match m.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            ContentBlock::Text { text } => serde_json::json!({"type": "text", "text": text}),
            ContentBlock::Image { data, mime_type } => {
                serde_json::json!({"type": "image", "data": data, "mimeType": mime_type})
            }
            ContentBlock::Audio { data, mime_type } => {
                serde_json::json!({"type": "audio", "data": data, "mimeType": mime_type})
            }
            ContentBlock::ResourceLink {
                uri,
                name,
                mime_type,
                description,
            } => {
                let mut v = serde_json::json!({"type": "resource_link", "uri": uri, "name": name});
                if let Some(m) = mime_type {
                    v["mimeType"] = Value::from(m.as_str());
                }
                if let Some(d) = description {
                    v["description"] = Value::from(d.as_str());
                }
                v
            }
            ContentBlock::Resource { resource } => {
                serde_json::json!({"type": "resource", "resource": resource})
            }
            ContentBlock::Unknown(v) => v.clone(),
        };
        value.serialize(serializer)
    }
}

/// A paginated list result other than `tools/list`'s (resources, resource templates, prompts):
/// one page of `$item`s under the member `$field` (`$wire` on the wire), `nextCursor`, the modern
/// era's cache hints read leniently as [`ListToolsResult`] reads them, and `resultType`.
macro_rules! list_result {
    ($(#[$doc:meta])* $name:ident, $wirename:ident = $wirelit:literal, $field:ident: $item:ty, $wire:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase", from = $wirelit)]
        pub struct $name {
            /// The items on this page.
            #[serde(rename = $wire)]
            pub $field: Vec<$item>,
            /// The cursor for the next page; absent on the last page.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub next_cursor: Option<String>,
            /// How long this page may be cached, in milliseconds (`ttlMs`, modern servers).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub ttl_ms: Option<u64>,
            /// Who may cache it (`cacheScope`, modern servers).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub cache_scope: Option<$crate::types::CacheScope>,
            /// `resultType` as sent (modern servers); absent means complete.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub result_type: Option<$crate::types::ResultType>,
            #[serde(skip)]
            ignored: Option<Box<$crate::types::Ignored>>,
        }

        impl $name {
            /// The cache hints the server sent that could not be used, and were ignored.
            pub fn ignored_hints(&self) -> &[$crate::types::IgnoredHint] {
                self.ignored.as_deref().map_or(&[], |i| &i.0)
            }
        }

        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct $wirename {
            #[serde(rename = $wire)]
            $field: Vec<$item>,
            #[serde(default)]
            next_cursor: Option<String>,
            #[serde(default)]
            ttl_ms: $crate::types::TtlWire,
            #[serde(default)]
            cache_scope: $crate::types::ScopeWire,
            #[serde(default)]
            result_type: Option<$crate::types::ResultType>,
        }

        impl From<$wirename> for $name {
            fn from(w: $wirename) -> Self {
                let (ttl_ms, cache_scope, ignored) =
                    $crate::types::read_hints(w.ttl_ms, w.cache_scope);
                $name {
                    $field: w.$field,
                    next_cursor: w.next_cursor,
                    ttl_ms,
                    cache_scope,
                    result_type: w.result_type,
                    ignored,
                }
            }
        }

        impl $crate::types::Outcome for $name {
            fn result_type(&self) -> Option<&$crate::types::ResultType> {
                self.result_type.as_ref()
            }
        }
    };
}
pub(crate) use list_result;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A content block read from text (member by member, the text block's fast way) is the block
    /// [`ContentBlock::from_value`] makes of the same JSON, whatever its shape: known kinds,
    /// extra and repeated members, wrong types, not a map at all; and so is one read from a
    /// parsed [`Value`].
    #[test]
    fn a_content_block_reads_as_from_value_reads_its_json() {
        let cases = [
            r#"{"type":"text","text":"hi"}"#,
            r#"{"text":"hi","type":"text"}"#,
            r#"{"type":"text","text":"hi","annotations":{"audience":["user"]},"_meta":{}}"#,
            r#"{"type":"text","text":"a","text":"b"}"#,
            r#"{"type":"image","type":"text","text":"b"}"#,
            r#"{"type":"text","type":"image","data":"AA==","text":"b"}"#,
            r#"{"type":"text","text":7}"#,
            r#"{"type":"text","text":null}"#,
            r#"{"type":"text"}"#,
            r#"{"text":"no type"}"#,
            r#"{"type":"Text","text":"case"}"#,
            r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#,
            r#"{"type":"audio","data":"AA=="}"#,
            r#"{"type":"resource_link","uri":"file:///a","name":"a","description":null}"#,
            r#"{"type":"resource","resource":{"uri":"file:///a","text":"x"}}"#,
            r#"{"type":"resource","resource":{"uri":1}}"#,
            r#"{"z":1,"a":[1,{"b":null}],"type":"widget","text":"t"}"#,
            r#"{"type":"text","text":"text"}"#,
            r#"{"type":"te\u0078t","text":"escaped \"type\" and \u00e9"}"#,
            r#"{"type":"text","text":"hi","a":1,"b":2}"#,
            r#"{"a":1,"b":2,"type":"text","text":"x"}"#,
            r#"{"a":{"type":"text"},"type":"text","text":"x","type":"image"}"#,
            r#"{"type":{"x":[1,2.5,null,-4]},"text":"x"}"#,
            r#"{"type":"text","text":["a"]}"#,
            r#"{"type":true,"text":"x"}"#,
            r#"{"type":"text","text":{"text":"text"}}"#,
            r#"{"text":"text","type":"text","text":"last"}"#,
            r#"{}"#,
            r#"[1,"two",{"type":"text","text":"x"}]"#,
            r#""text""#,
            r#"12"#,
            r#"-3"#,
            r#"1.5"#,
            r#"true"#,
            r#"null"#,
        ];
        for case in cases {
            let value: Value = serde_json::from_str(case).unwrap();
            let expected = ContentBlock::from_value(value.clone());
            let read: ContentBlock = serde_json::from_str(case).unwrap();
            assert_eq!(read, expected, "{case}");
            let from_value: ContentBlock = serde_json::from_value(value).unwrap();
            assert_eq!(from_value, expected, "{case} (from a Value)");
        }
        let result: CallToolResult =
            serde_json::from_str(r#"{"content":[{"type":"text","text":"c1"},{"type":"x"}]}"#)
                .unwrap();
        assert_eq!(
            result.content,
            [
                ContentBlock::Text { text: "c1".into() },
                ContentBlock::Unknown(json!({"type": "x"}))
            ]
        );
    }

    /// A result's `_meta` is kept as the server wrote it, whether the result is read from its
    /// text (the session) or from a parsed value (a driver's raw `tools/call`), and compares and
    /// serializes by that text.
    #[test]
    fn a_call_results_meta_is_kept_verbatim() {
        let text = r#"{"content":[],"_meta":{"z":1,"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"resultType":"complete"}"#;
        let read: CallToolResult = serde_json::from_str(text).unwrap();
        let meta = read.meta.as_deref().map(RawValue::get);
        assert_eq!(
            meta,
            Some(r#"{"z":1,"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}"#)
        );
        assert_eq!(read.result_type, Some(ResultType::Complete));
        let back = serde_json::to_string(&read).unwrap();
        assert!(back.contains(r#""_meta":{"z":1,"io"#), "{back}");

        let value = json!({"content": [], "_meta": {"a": [1, 2]}});
        let from_value: CallToolResult = serde_json::from_value(value).unwrap();
        assert_eq!(
            from_value.meta.as_deref().map(RawValue::get),
            Some(r#"{"a":[1,2]}"#)
        );
        assert_ne!(read, from_value);
        let same: CallToolResult = serde_json::from_str(text).unwrap();
        assert_eq!(read, same);

        let none: CallToolResult = serde_json::from_str(r#"{"content":[],"_meta":null}"#).unwrap();
        assert!(none.meta.is_none());
    }
}
