//! The request-metadata headers of the Streamable HTTP transport (MCP 2026-07-28): `Mcp-Method` on
//! every POST, `Mcp-Name` on those naming a tool, prompt or resource, `Mcp-Param-{Name}` for the
//! tool arguments a server marks with `x-mcp-header`, and the Base64 sentinel that carries a value
//! no header can hold as it is.
//!
//! > "The Streamable HTTP transport mirrors selected JSON-RPC body fields into HTTP headers so that
//! > intermediaries (load balancers, gateways, observability tooling) can route and inspect
//! > requests without parsing the body." — MCP 2026-07-28, Transports § Streamable HTTP § Request
//! > Metadata
//!
//! Every rule here is a pure function of the request body or the tool definition: nothing is
//! sent, stored or timed. (`MCP-Protocol-Version` is not here: the HTTP rules set it on every
//! request, see [`PROTOCOL_VERSION_HEADER`](crate::http::PROTOCOL_VERSION_HEADER).)
//!
//! # How a driver uses it
//! - **`tools/list`**: for each tool, [`ParamHeaders::from_input_schema`] on its `inputSchema`
//!   (a tool without one gets [`ParamHeaders::default`], which adds nothing). A tool whose schema
//!   is refused ([`InvalidParamHeader`]) is left out of the tool list, and the tool's name and the
//!   error are reported as a warning; the other tools are kept. Keep each tool's `ParamHeaders`
//!   with the tool until the next `tools/list`.
//! - **each `tools/call`** (and every other POST of a request or notification):
//!   [`standard_headers`] for the method and its `params`, then, for a tool call,
//!   [`ParamHeaders::headers_for`] on the call's `arguments`; all of them go on the POST next to
//!   `MCP-Protocol-Version`. A
//!   [`ParamValueError`] means the model's arguments do not fit the schema: nothing is sent, and
//!   the error goes back to the model as a tool execution error (`isError: true`) so it can
//!   correct its call.
//!
//! Over stdio none of this applies:
//!
//! > "Clients using other transports (e.g., stdio) MAY ignore `x-mcp-header` annotations
//! > entirely." — MCP 2026-07-28, Transports § Streamable HTTP § Schema Extension

use super::wire::{
    is_header_name, is_header_value, METHOD_HEADER, NAME_HEADER, PARAM_HEADER_PREFIX,
};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// The JSON Schema extension keyword marking a tool parameter as mirrored into a header.
pub const ANNOTATION: &str = "x-mcp-header";
/// How deep (in nested JSON objects and arrays from the root) [`ParamHeaders::from_input_schema`]
/// walks a schema. Past it the walk only looks for the key `x-mcp-header`: a schema that has one
/// deeper than this is refused ([`InvalidParamHeader::TooDeep`]); one that has none is accepted.
/// A chain of `properties` takes two levels per property, so annotated parameters may be nested
/// 32 objects deep.
pub const MAX_SCHEMA_DEPTH: usize = 64;
/// The largest integer a mirrored parameter may carry, 2^53 − 1 (its negation is the smallest).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

// ---------------------------------------------------------------------------------------------
// Value encoding
// ---------------------------------------------------------------------------------------------

/// `value` as a header value: as it is when a header carries it unchanged, else in the Base64
/// sentinel form `=?base64?{standard Base64, padded, of its UTF-8}?=`.
///
/// > "Per RFC 9110, HTTP header field values must consist of visible ASCII characters
/// > (0x21-0x7E), space (0x20), and horizontal tab (0x09). When a value cannot be safely
/// > represented as a plain ASCII header value (e.g., it contains non-ASCII characters, control
/// > characters, or has leading/trailing whitespace), clients MUST use Base64 encoding of the
/// > UTF-8 representation with the following format: `=?base64?{Base64EncodedValue}?=`"
/// >
/// > "To avoid ambiguity, clients MUST also Base64-encode any plain-ASCII value that matches the
/// > sentinel pattern (i.e., starts with `=?base64?` and ends with `?=`)."
/// > — MCP 2026-07-28, Transports § Streamable HTTP § Value Encoding
///
/// So a value is sent as it is when it is not empty, holds only visible ASCII, spaces and tabs,
/// neither starts nor ends with a space or tab (HTTP parsers strip that whitespace), and does not
/// both start with `=?base64?` and end with `?=` (the two may overlap: `=?base64?=` is encoded).
/// The markers are case-sensitive, so `=?BASE64?x?=` is plain.
///
/// **The empty string is encoded** (as `=?base64??=`), a choice of this crate: an empty field is
/// legal HTTP but not safely represented, since HTTP stacks and intermediaries drop empty fields or
/// read them as absent (libcurl deletes a header given as `Name:`), and the spec makes absent and
/// present differ ("Parameter not in arguments: Client MUST omit the header"; "Parameter value
/// provided: Client MUST include the header"). The sentinel form decodes to exactly `""`.
pub fn encode_value(value: &str) -> Cow<'_, str> {
    if is_sendable_plain(value) && !looks_encoded(value) {
        Cow::Borrowed(value)
    } else {
        let mut out = String::with_capacity(
            SENTINEL_PREFIX.len() + value.len().div_ceil(3) * 4 + SENTINEL_SUFFIX.len(),
        );
        out.push_str(SENTINEL_PREFIX);
        BASE64.encode_string(value, &mut out);
        out.push_str(SENTINEL_SUFFIX);
        Cow::Owned(out)
    }
}

/// The value [`encode_value`] made `header` from: the sentinel form decoded, any other value as
/// it is. What a server does before comparing a header with the body; here for tests and test
/// servers.
///
/// > "Servers and intermediaries that need to inspect these values MUST decode them accordingly."
/// > — MCP 2026-07-28, Transports § Streamable HTTP § Value Encoding
///
/// Refused: a value holding a byte other than visible ASCII, space or tab; a value that starts
/// with `=?base64?` and ends with `?=` but whose middle is not canonical padded standard Base64 of
/// UTF-8 text (or is missing, as in `=?base64?=`).
pub fn decode_value(header: &str) -> Result<Cow<'_, str>, MalformedValue> {
    if !is_header_value(header) {
        return Err(MalformedValue::Characters);
    }
    if !looks_encoded(header) {
        return Ok(Cow::Borrowed(header));
    }
    let inner = header
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|rest| rest.strip_suffix(SENTINEL_SUFFIX))
        .ok_or(MalformedValue::Base64)?;
    let bytes = BASE64.decode(inner).map_err(|_| MalformedValue::Base64)?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|_| MalformedValue::Utf8)
}

/// Why [`decode_value`] refused a header value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MalformedValue {
    /// A byte other than visible ASCII, space or tab.
    #[error("the header value holds a byte other than visible ASCII, space or tab")]
    Characters,
    /// The sentinel's middle is not canonical padded standard Base64.
    #[error("the header value has the =?base64?…?= form but is not valid padded Base64")]
    Base64,
    /// The decoded bytes are not UTF-8.
    #[error("the header value's Base64 does not decode to UTF-8 text")]
    Utf8,
}

/// Whether a header carries `value` unchanged: not empty, visible ASCII, spaces and tabs only, no
/// space or tab at either end.
fn is_sendable_plain(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            !matches!(first, b' ' | b'\t')
                && !matches!(last, b' ' | b'\t')
                && bytes
                    .iter()
                    .all(|&b| b == b'\t' || (0x20..=0x7e).contains(&b))
        }
        _ => false,
    }
}

/// Whether `value` matches the sentinel pattern (the two markers may overlap).
fn looks_encoded(value: &str) -> bool {
    value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX)
}

// ---------------------------------------------------------------------------------------------
// Standard request headers
// ---------------------------------------------------------------------------------------------

/// The standard headers of a POST carrying `method` with `params`: `Mcp-Method` always, and
/// `Mcp-Name` for `tools/call` and `prompts/get` (from `params.name`) and `resources/read` (from
/// `params.uri`), value-encoded.
///
/// > "| `Mcp-Method` | `method` | All requests |
/// > | `Mcp-Name` | `params.name` or `params.uri` | `tools/call`, `resources/read`, `prompts/get`
/// > requests |
/// > These headers are REQUIRED for compliance.
/// > If the `Mcp-Name` source value cannot be safely represented as a plain ASCII header value,
/// > clients MUST encode it using the Base64 sentinel format described in Value Encoding."
/// > — MCP 2026-07-28, Transports § Streamable HTTP § Standard Request Headers
///
/// The headers mirror the message's `method`, so they fit a notification as well as a request; a
/// JSON-RPC response has no method and gets none.
///
/// Refused, since the server would answer `400` with `HeaderMismatch` (-32020) anyway:
/// - a method that cannot be sent as a plain header value (empty, a byte other than visible
///   ASCII, space or tab, or a space or tab at either end). The sentinel is not used for it: the
///   spec allows it only for `Mcp-Name` and `Mcp-Param-{Name}` ("For headers that permit the
///   Base64 sentinel encoding (`Mcp-Name` and `Mcp-Param-{Name}`), servers MUST decode encoded
///   values"), so a server compares `Mcp-Method` as sent. MCP's own methods are all plain ASCII.
/// - `tools/call`, `prompts/get` or `resources/read` without a string `params.name` (or
///   `params.uri`): the required `Mcp-Name` has no source.
pub fn standard_headers(
    method: &str,
    params: Option<&Value>,
) -> Result<Vec<(&'static str, String)>, StandardHeaderError> {
    if !is_sendable_plain(method) {
        return Err(StandardHeaderError::Method {
            method: method.to_owned(),
        });
    }
    let Some(field) = name_field(method) else {
        return Ok(vec![(METHOD_HEADER, method.to_owned())]);
    };
    let source = params.and_then(|p| p.get(field)).and_then(Value::as_str);
    named_headers(method, field, source)
}

/// [`standard_headers`] for a message whose `Mcp-Name` source (`params.name`, or `params.uri`)
/// is at hand without its params as one JSON value (a `tools/call` built by
/// `Request::call_tool`): `name` is that member, when it is a string.
pub(crate) fn standard_headers_named(
    method: &str,
    name: Option<&str>,
) -> Result<Vec<(&'static str, String)>, StandardHeaderError> {
    if !is_sendable_plain(method) {
        return Err(StandardHeaderError::Method {
            method: method.to_owned(),
        });
    }
    match name_field(method) {
        None => Ok(vec![(METHOD_HEADER, method.to_owned())]),
        Some(field) => named_headers(method, field, name),
    }
}

/// The member of a request's params that `Mcp-Name` mirrors, for the methods that have one.
///
/// > "When `tasks/get`, `tasks/update`, or `tasks/cancel` is sent over the Streamable HTTP
/// > transport, the client **MUST** set the `Mcp-Name` header to the value of `params.taskId`."
/// > — Tasks extension (`io.modelcontextprotocol/tasks`), 2026-07-28 § Streamable HTTP: Routing
/// > Headers
fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// `Mcp-Method` and `Mcp-Name` (from `source`, the params' `field`: refused when missing).
fn named_headers(
    method: &str,
    field: &'static str,
    source: Option<&str>,
) -> Result<Vec<(&'static str, String)>, StandardHeaderError> {
    let source = source.ok_or_else(|| StandardHeaderError::MissingName {
        method: method.to_owned(),
        field,
    })?;
    Ok(vec![
        (METHOD_HEADER, method.to_owned()),
        (NAME_HEADER, encode_value(source).into_owned()),
    ])
}

/// Why [`standard_headers`] could not make the headers of a message (the caller built a message
/// the transport cannot carry; nothing was sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StandardHeaderError {
    /// The method cannot be sent as a plain header value.
    #[error("method {method:?} cannot be sent in the Mcp-Method header: it must be non-empty visible ASCII")]
    Method {
        /// The method.
        method: String,
    },
    /// The field `Mcp-Name` mirrors is missing or not a string.
    #[error("{method} needs a string params.{field} for the Mcp-Name header")]
    MissingName {
        /// The method.
        method: String,
        /// `name` or `uri`.
        field: &'static str,
    },
}

// ---------------------------------------------------------------------------------------------
// Custom headers from tool parameters (x-mcp-header)
// ---------------------------------------------------------------------------------------------

/// The JSON type a mirrored parameter declares, which fixes how its value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamType {
    /// `"type": "string"`: the value as it is, then value-encoded.
    String,
    /// `"type": "integer"`: decimal, within ±(2^53 − 1).
    Integer,
    /// `"type": "boolean"`: `true` or `false`.
    Boolean,
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Boolean => "boolean",
        })
    }
}

/// One parameter a tool mirrors into a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    name: String,
    header: String,
    path: Vec<String>,
    kind: ParamType,
}

impl ParamHeader {
    /// The `x-mcp-header` value, as the server gave it (`Region`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header's name, `Mcp-Param-` + [`name`](Self::name) (`Mcp-Param-Region`).
    pub fn header_name(&self) -> &str {
        &self.header
    }

    /// The property path from the schema root: the `properties` keys, outermost first. A key
    /// may hold any character, `.` and `/` included; nothing is split.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// The declared type.
    pub fn kind(&self) -> ParamType {
        self.kind
    }
}

/// The parameters one tool mirrors into `Mcp-Param-{Name}` headers, read from its `inputSchema`
/// once per `tools/list` (see the [module docs](self) for the driver's part).
///
/// > "MCP servers MAY designate specific tool parameters to be mirrored into HTTP headers using an
/// > `x-mcp-header` extension property in the parameter's schema within the tool's
/// > `inputSchema`. […] When a server's tool definition includes `x-mcp-header` annotations,
/// > conforming clients MUST mirror the designated parameter values into HTTP headers."
/// > — MCP 2026-07-28, Transports § Streamable HTTP § Custom Headers from Tool Parameters
///
/// The default has no parameters and makes no headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamHeaders {
    headers: Vec<ParamHeader>,
}

impl ParamHeaders {
    /// Collects every `x-mcp-header` of a tool's `inputSchema`, or refuses the tool.
    ///
    /// > "Clients using the Streamable HTTP transport MUST reject tool definitions where any
    /// > `x-mcp-header` value violates these constraints. Rejection means the client MUST exclude
    /// > the invalid tool from the result of `tools/list`. Clients SHOULD log a warning when
    /// > rejecting a tool definition, including the tool name and the reason for rejection."
    /// > — MCP 2026-07-28, Transports § Streamable HTTP § Schema Extension
    ///
    /// The whole schema is searched for the key `x-mcp-header`, not only the properties, so that
    /// an annotation the walk would not mirror is refused rather than silently ignored. A key
    /// inside a `properties` object is a property name, never an annotation: a parameter may be
    /// called `x-mcp-header`. The constraints, each quoted where it is checked:
    /// - the value is a non-empty string of HTTP token characters (so no control characters),
    ///   unique among the schema's annotations ignoring ASCII case;
    /// - the annotated property declares `"type"` `"string"`, `"integer"` or `"boolean"`, or an
    ///   array of exactly one of them and `"null"` (why, and why a property without `type` is
    ///   refused: [`InvalidParamHeader::Type`], [`InvalidParamHeader::Untyped`]);
    /// - the annotation sits on a property reached from the root through `properties` alone.
    ///
    /// A key named `x-mcp-header` that lies deeper than [`MAX_SCHEMA_DEPTH`] refuses the tool
    /// ([`InvalidParamHeader::TooDeep`]); the walk is bounded, so no schema overflows the stack.
    /// Errors name the place with a JSON Pointer (RFC 6901) into the schema. When a schema has
    /// several faults, which one is named depends on key order.
    pub fn from_input_schema(schema: &Value) -> Result<ParamHeaders, InvalidParamHeader> {
        let mut walk = Walk {
            pointer: Vec::new(),
            found: Vec::new(),
        };
        walk.node(schema, true)?;
        let mut headers = walk.found;
        // The order of headers_for's output does not hang on serde_json's map order.
        headers.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(ParamHeaders { headers })
    }

    /// Whether the tool mirrors no parameter.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }

    /// The mirrored parameters, ordered by property path.
    pub fn iter(&self) -> impl Iterator<Item = &ParamHeader> + '_ {
        self.headers.iter()
    }

    /// The `Mcp-Param-{Name}` headers of one `tools/call` whose `params.arguments` is `arguments`.
    ///
    /// > "Header extraction is defined as reading the instance value at the exact property path of
    /// > the annotated property (the chain of `properties` keys leading to it). If no value is
    /// > present at that path in the call arguments, the header is omitted."
    /// > — MCP 2026-07-28, Transports § Streamable HTTP § Schema Extension
    /// >
    /// > "| Parameter value is `null` | Client MUST omit the header | Server MUST NOT expect the
    /// > header |" — § Server Behavior for Custom Headers
    ///
    /// No value is present when `arguments` is absent or not an object, or when some step of the
    /// path is missing or not an object. Each present value is written by its declared type:
    ///
    /// > "`string`: Use the value as-is; `integer`: Convert to decimal string representation
    /// > (e.g., `42`, `-7`); `boolean`: Convert to lowercase `"true"` or `"false"`"
    /// > — § Value Encoding
    ///
    /// then value-encoded ([`encode_value`]; only a string can need it). An `integer` value may be
    /// written with a fraction of zero (`42.0`, `1e3`): JSON Schema 2020-12 counts it an integer,
    /// and "servers SHOULD compare the header value and the body value numerically rather than as
    /// strings (e.g., `42.0` and `42` are considered equal)" (§ Server Validation); it is written
    /// `42`.
    ///
    /// A present value that does not fit its declared type (an object for a string, `"5"` or
    /// `4.5` for an integer), or an integer outside ±(2^53 − 1), is an error rather than an
    /// omitted header: omitting it would make the server refuse the whole request ("Client omits
    /// header but value is in body: Non-conforming client / Server MUST reject the request"),
    /// while the model that wrote the arguments can correct them. Surface the error as a tool
    /// execution error: "Input validation errors" are "Tool Execution Errors" that "contain
    /// actionable feedback that language models can use to self-correct" (MCP 2026-07-28, Tools §
    /// Error Handling).
    pub fn headers_for(
        &self,
        arguments: Option<&Value>,
    ) -> Result<Vec<(String, String)>, ParamValueError> {
        let mut out = Vec::new();
        for param in &self.headers {
            let Some(value) = lookup(arguments, &param.path) else {
                continue;
            };
            out.push((param.header.clone(), param.write(value)?));
        }
        Ok(out)
    }
}

impl<'a> IntoIterator for &'a ParamHeaders {
    type Item = &'a ParamHeader;
    type IntoIter = std::slice::Iter<'a, ParamHeader>;

    fn into_iter(self) -> Self::IntoIter {
        self.headers.iter()
    }
}

/// The value at `path` in `arguments`, if one is present and not `null`.
fn lookup<'v>(arguments: Option<&'v Value>, path: &[String]) -> Option<&'v Value> {
    let mut value = arguments?;
    for key in path {
        value = value.as_object()?.get(key)?;
    }
    (!value.is_null()).then_some(value)
}

impl ParamHeader {
    /// `value` as this header's value.
    fn write(&self, value: &Value) -> Result<String, ParamValueError> {
        let wrong_type = || ParamValueError::WrongType {
            argument: pointer(&self.path),
            header: self.header.clone(),
            expected: self.kind,
            found: json_type(value),
        };
        match (self.kind, value) {
            (ParamType::String, Value::String(s)) => Ok(encode_value(s).into_owned()),
            (ParamType::Boolean, Value::Bool(b)) => Ok(b.to_string()),
            (ParamType::Integer, Value::Number(n)) => {
                // > "Integer values MUST be within the safe range for JavaScript (−2^53+1 to
                // > 2^53−1)" — MCP 2026-07-28, Transports § Streamable HTTP § Schema Extension
                let out_of_range = || ParamValueError::UnsafeInteger {
                    argument: pointer(&self.path),
                    header: self.header.clone(),
                    value: n.to_string(),
                };
                if let Some(i) = n.as_i64() {
                    if i.unsigned_abs() <= MAX_SAFE_INTEGER.unsigned_abs() {
                        Ok(i.to_string())
                    } else {
                        Err(out_of_range())
                    }
                } else if n.is_u64() {
                    Err(out_of_range())
                } else {
                    match n.as_f64() {
                        Some(f) if f.fract() == 0.0 => {
                            if f.abs() <= MAX_SAFE_INTEGER as f64 {
                                // Exact: |f| ≤ 2^53 − 1 is an integer an i64 holds; `-0.0`
                                // becomes `0`.
                                Ok((f as i64).to_string())
                            } else {
                                Err(out_of_range())
                            }
                        }
                        _ => Err(wrong_type()),
                    }
                }
            }
            _ => Err(wrong_type()),
        }
    }
}

/// The JSON type of `value`, for messages: `number` for a number with a fraction.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Why a tool's arguments cannot be mirrored into its headers: the arguments do not fit the
/// tool's schema. Report it to the model as a tool execution error; nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamValueError {
    /// The value's JSON type is not the declared one.
    #[error(
        "argument {argument} must be {expected} (it is sent in the {header} header), not {found}"
    )]
    WrongType {
        /// Where the value is in the arguments, as a JSON Pointer (`/region`).
        argument: String,
        /// The header's name (`Mcp-Param-Region`).
        header: String,
        /// The declared type.
        expected: ParamType,
        /// The JSON type found (`number` for a number with a fraction).
        found: &'static str,
    },
    /// An integer outside ±(2^53 − 1).
    #[error("argument {argument} is {value}, outside the integers the {header} header can carry (-9007199254740991 to 9007199254740991)")]
    UnsafeInteger {
        /// Where the value is in the arguments, as a JSON Pointer.
        argument: String,
        /// The header's name.
        header: String,
        /// The value, as JSON.
        value: String,
    },
}

/// Why a tool definition is refused: one of its `x-mcp-header` annotations breaks a rule of MCP
/// 2026-07-28 (Transports § Streamable HTTP § Schema Extension). Each names the schema object
/// carrying the annotation with a JSON Pointer (RFC 6901, `/properties/region`; the root is `""`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidParamHeader {
    /// The annotation's value is not a string.
    #[error("x-mcp-header at {} is not a string", at_display(.at))]
    NotAString {
        /// Where the annotation is.
        at: String,
    },
    /// > "MUST NOT be empty"
    #[error("x-mcp-header at {} is empty", at_display(.at))]
    Empty {
        /// Where the annotation is.
        at: String,
    },
    /// > "MUST match HTTP field-name token syntax (`1*tchar`, RFC 9110 Section 5.1)" and "MUST
    /// > NOT contain control characters, including carriage return (CR, `\r`) or line feed (LF,
    /// > `\n`)"
    #[error("x-mcp-header {name:?} at {} is not an HTTP token", at_display(.at))]
    NotAToken {
        /// Where the annotation is.
        at: String,
        /// The annotation's value.
        name: String,
    },
    /// > "MUST be case-insensitively unique among all `x-mcp-header` values in the `inputSchema`"
    #[error("x-mcp-header {name:?} at {} repeats the one at {} (names compare ignoring case)", at_display(.at), at_display(.first))]
    Duplicate {
        /// Where the second annotation is.
        at: String,
        /// Its value.
        name: String,
        /// Where the first one is.
        first: String,
    },
    /// > "MUST only be applied to parameters with primitive types (integer, string, boolean).
    /// > Parameters with type `number` are not permitted."
    ///
    /// `found` is the `type` keyword as JSON. Accepted: `"string"`, `"integer"`, `"boolean"`, or
    /// an array of one of them and `"null"` (`["string", "null"]`): a nullable parameter is
    /// foreseen by the spec, which says a `null` value omits the header. Refused: `"number"`,
    /// `"object"`, `"array"`, `"null"` alone, and arrays of two primitive types
    /// (`["string", "integer"]`), whose header would not say which of the two the body holds
    /// (`"42"` and `42` both give `42`).
    #[error("x-mcp-header {name:?} at {} is on a property of type {found}; only integer, string or boolean (optionally with null) can be mirrored", at_display(.at))]
    Type {
        /// Where the annotation is.
        at: String,
        /// The annotation's value.
        name: String,
        /// The `type` keyword, as JSON.
        found: String,
    },
    /// The annotated property has no `type` keyword.
    ///
    /// Refused because the rule restricts annotations to "parameters with primitive types", and
    /// a schema without `type` admits any JSON value, `number`, objects and arrays included;
    /// whether `enum`, `const` or a `$ref` narrow it is not checked statically (the rule does not
    /// let a `$ref` count, either).
    #[error("x-mcp-header {name:?} at {} is on a property without a type; only integer, string or boolean can be mirrored", at_display(.at))]
    Untyped {
        /// Where the annotation is.
        at: String,
        /// The annotation's value.
        name: String,
    },
    /// > "MUST only be applied to properties that are statically reachable from the schema root:
    /// > reachable via a chain consisting solely of `properties` keys. The chain MUST NOT pass
    /// > through `items` (or any other array keyword), composition keywords (`oneOf`, `anyOf`,
    /// > `allOf`, `not`), conditional keywords (`if`/`then`/`else`), or `$ref`. […] An
    /// > `x-mcp-header` annotation anywhere else makes the annotation — and thus the tool
    /// > definition — invalid."
    ///
    /// The schema root itself is not a property, so an annotation there is refused too.
    #[error("x-mcp-header at {} is not on a property reached through properties alone", at_display(.at))]
    NotStaticallyReachable {
        /// Where the annotation is.
        at: String,
    },
    /// A key `x-mcp-header` lies deeper than [`MAX_SCHEMA_DEPTH`] levels.
    #[error("the schema nests deeper than {MAX_SCHEMA_DEPTH} levels at {} and has an x-mcp-header below", at_display(.at))]
    TooDeep {
        /// The first node past the limit that holds the key.
        at: String,
    },
}

fn at_display(at: &str) -> &str {
    if at.is_empty() {
        "the schema root"
    } else {
        at
    }
}

/// A JSON Pointer (RFC 6901) from reference tokens.
fn pointer<S: AsRef<str>>(tokens: &[S]) -> String {
    let mut out = String::new();
    for token in tokens {
        out.push('/');
        out.push_str(&token.as_ref().replace('~', "~0").replace('/', "~1"));
    }
    out
}

/// One walk over a schema.
struct Walk {
    /// The reference tokens from the root to the node being visited.
    pointer: Vec<String>,
    /// The annotations accepted so far.
    found: Vec<ParamHeader>,
}

impl Walk {
    /// Visits `node`. `reachable`: the node is the root or a property schema reached through
    /// `properties` alone, so that [`Walk::pointer`] alternates `properties` and property names.
    fn node(&mut self, node: &Value, reachable: bool) -> Result<(), InvalidParamHeader> {
        if self.pointer.len() > MAX_SCHEMA_DEPTH {
            return if contains_annotation_key(node) {
                Err(InvalidParamHeader::TooDeep { at: self.at() })
            } else {
                Ok(())
            };
        }
        match node {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.pointer.push(i.to_string());
                    self.node(item, false)?;
                    self.pointer.pop();
                }
            }
            Value::Object(map) => {
                if let Some(annotation) = map.get(ANNOTATION) {
                    if !reachable || self.pointer.is_empty() {
                        return Err(InvalidParamHeader::NotStaticallyReachable { at: self.at() });
                    }
                    self.annotation(annotation, map)?;
                }
                for (key, child) in map {
                    if key == ANNOTATION {
                        continue;
                    }
                    self.pointer.push(key.clone());
                    match (key.as_str(), child) {
                        // The keys of `properties` name properties: each value is a property's
                        // schema, reachable when this node is. Anything else in a schema (or in
                        // a value that only looks like one: `default`, `const`, `enum`) is
                        // searched, but nothing below it is reachable.
                        ("properties", Value::Object(properties)) => {
                            for (name, schema) in properties {
                                self.pointer.push(name.clone());
                                self.node(schema, reachable)?;
                                self.pointer.pop();
                            }
                        }
                        _ => self.node(child, false)?,
                    }
                    self.pointer.pop();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks the annotation of the reachable property schema `schema` and records it.
    fn annotation(
        &mut self,
        annotation: &Value,
        schema: &Map<String, Value>,
    ) -> Result<(), InvalidParamHeader> {
        let at = self.at();
        let Value::String(name) = annotation else {
            return Err(InvalidParamHeader::NotAString { at });
        };
        // > "MUST NOT be empty"
        if name.is_empty() {
            return Err(InvalidParamHeader::Empty { at });
        }
        // > "MUST match HTTP field-name token syntax (`1*tchar`, RFC 9110 Section 5.1)"; "MUST NOT
        // > contain control characters" (a tchar never is one).
        if !is_header_name(name) {
            return Err(InvalidParamHeader::NotAToken {
                at,
                name: name.clone(),
            });
        }
        // > "MUST be case-insensitively unique among all `x-mcp-header` values in the
        // > `inputSchema`"
        if let Some(first) = self
            .found
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
        {
            return Err(InvalidParamHeader::Duplicate {
                at,
                name: name.clone(),
                first: property_pointer(&first.path),
            });
        }
        // > "MUST only be applied to parameters with primitive types (integer, string, boolean).
        // > Parameters with type `number` are not permitted."
        let kind = match schema.get("type") {
            None => {
                return Err(InvalidParamHeader::Untyped {
                    at,
                    name: name.clone(),
                })
            }
            Some(ty) => declared_type(ty).ok_or_else(|| InvalidParamHeader::Type {
                at,
                name: name.clone(),
                found: ty.to_string(),
            })?,
        };
        // A reachable pointer is `properties`, name, `properties`, name, …: the names are the
        // path.
        let path = self.pointer.iter().skip(1).step_by(2).cloned().collect();
        self.found.push(ParamHeader {
            name: name.clone(),
            header: format!("{PARAM_HEADER_PREFIX}{name}"),
            path,
            kind,
        });
        Ok(())
    }

    fn at(&self) -> String {
        pointer(&self.pointer)
    }
}

/// The pointer of the property schema at `path`.
fn property_pointer(path: &[String]) -> String {
    let tokens: Vec<&str> = path.iter().flat_map(|k| ["properties", k]).collect();
    pointer(&tokens)
}

/// The mirrored type a `type` keyword declares: one primitive, alone or with `"null"`.
fn declared_type(ty: &Value) -> Option<ParamType> {
    fn primitive(name: &str) -> Option<ParamType> {
        match name {
            "string" => Some(ParamType::String),
            "integer" => Some(ParamType::Integer),
            "boolean" => Some(ParamType::Boolean),
            _ => None,
        }
    }
    match ty {
        Value::String(name) => primitive(name),
        Value::Array(names) => {
            let mut kind = None;
            for name in names {
                match name.as_str()? {
                    "null" => {}
                    other if kind.is_none() => kind = Some(primitive(other)?),
                    _ => return None,
                }
            }
            kind
        }
        _ => None,
    }
}

/// Whether the key `x-mcp-header` appears anywhere in `value` (a loop, not recursion, so any depth
/// is safe).
fn contains_annotation_key(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if map.contains_key(ANNOTATION) {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// `schema` nested in `levels` objects `{"a": …}` (not `properties`).
    fn nest(levels: usize, mut schema: Value) -> Value {
        for _ in 0..levels {
            schema = json!({ "a": schema });
        }
        schema
    }

    /// A schema whose property chain `p0`/`p1`/… is `levels` properties deep, with `leaf` last.
    fn property_chain(levels: usize, leaf: Value) -> Value {
        let mut schema = leaf;
        for i in (0..levels).rev() {
            schema = json!({ "type": "object", "properties": { format!("p{i}"): schema } });
        }
        schema
    }

    #[test]
    fn value_encoding() {
        for (value, want) in [
            // The spec's encoding examples, row by row.
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
            // Whitespace inside is plain; at either end it is not.
            ("a b", "a b"),
            ("a\tb", "a\tb"),
            ("\tlead", "=?base64?CWxlYWQ=?="),
            ("trail\t", "=?base64?dHJhaWwJ?="),
            (" ", "=?base64?IA==?="),
            // Control characters and DEL.
            ("a\rb", "=?base64?YQ1i?="),
            ("a\0b", "=?base64?YQBi?="),
            ("a\x7fb", "=?base64?YX9i?="),
            (
                "tools/call\r\nX-Injected: 1",
                "=?base64?dG9vbHMvY2FsbA0KWC1JbmplY3RlZDogMQ==?=",
            ),
            ("é", "=?base64?w6k=?="),
            // The empty string: encoded, so that it cannot read as absent.
            ("", "=?base64??="),
            // The sentinel pattern, with overlapping markers; the markers are case-sensitive and
            // both are needed.
            ("=?base64?=", "=?base64?PT9iYXNlNjQ/PQ==?="),
            ("=?base64?x?=", "=?base64?PT9iYXNlNjQ/eD89?="),
            ("=?BASE64?x?=", "=?BASE64?x?="),
            ("=?base64?x", "=?base64?x"),
            ("x?=", "x?="),
            ("~!#$%&'*+-.^_`|{}\"", "~!#$%&'*+-.^_`|{}\""),
            (
                "file:///projects/myapp/config.json",
                "file:///projects/myapp/config.json",
            ),
        ] {
            let got = encode_value(value);
            assert_eq!(got, want, "{value:?}");
            assert_eq!(
                matches!(got, Cow::Borrowed(_)),
                value == want,
                "{value:?}: borrowed exactly when plain"
            );
            assert_eq!(decode_value(&got).as_deref(), Ok(value), "{value:?}");
        }
    }

    #[test]
    fn value_decoding() {
        for (header, want) in [
            ("us-west1", Ok("us-west1")),
            ("=?BASE64?SGk=?=", Ok("=?BASE64?SGk=?=")),
            ("=?base64??=", Ok("")),
            ("=?base64?SGk=?=", Ok("Hi")),
            ("=?base64?=", Err(MalformedValue::Base64)),
            ("=?base64?SGk?=", Err(MalformedValue::Base64)),
            ("=?base64?S Gk=?=", Err(MalformedValue::Base64)),
            ("=?base64?SGk_?=", Err(MalformedValue::Base64)),
            ("=?base64?/w==?=", Err(MalformedValue::Utf8)),
            ("a\nb", Err(MalformedValue::Characters)),
            ("é", Err(MalformedValue::Characters)),
        ] {
            assert_eq!(
                decode_value(header).map(Cow::into_owned),
                want.map(str::to_owned),
                "{header:?}"
            );
        }
    }

    #[test]
    fn standard_request_headers() {
        type Want = Result<Vec<(&'static str, &'static str)>, StandardHeaderError>;
        let missing = |method: &str, field| {
            Err(StandardHeaderError::MissingName {
                method: method.into(),
                field,
            })
        };
        let bad_method = |method: &str| {
            Err(StandardHeaderError::Method {
                method: method.into(),
            })
        };
        let rows: Vec<(&str, Option<Value>, Want)> = vec![
            // The spec's two examples.
            (
                "tools/call",
                Some(json!({"name": "get_weather", "arguments": {"location": "Seattle, WA"}})),
                Ok(vec![
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "get_weather"),
                ]),
            ),
            (
                "resources/read",
                Some(json!({"uri": "file:///projects/myapp/config.json"})),
                Ok(vec![
                    ("Mcp-Method", "resources/read"),
                    ("Mcp-Name", "file:///projects/myapp/config.json"),
                ]),
            ),
            (
                "prompts/get",
                Some(json!({"name": "code_review"})),
                Ok(vec![
                    ("Mcp-Method", "prompts/get"),
                    ("Mcp-Name", "code_review"),
                ]),
            ),
            // A name outside the safe set is encoded.
            (
                "tools/call",
                Some(json!({"name": "Hello, 世界"})),
                Ok(vec![
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "=?base64?SGVsbG8sIOS4lueVjA==?="),
                ]),
            ),
            // Only those three methods carry Mcp-Name, whatever their params.
            (
                "tools/list",
                Some(json!({"name": "x"})),
                Ok(vec![("Mcp-Method", "tools/list")]),
            ),
            ("tools/list", None, Ok(vec![("Mcp-Method", "tools/list")])),
            (
                "notifications/cancelled",
                Some(json!({"requestId": 1})),
                Ok(vec![("Mcp-Method", "notifications/cancelled")]),
            ),
            // resources/read names its uri, not its name.
            (
                "resources/read",
                Some(json!({"name": "config"})),
                missing("resources/read", "uri"),
            ),
            ("tools/call", None, missing("tools/call", "name")),
            (
                "tools/call",
                Some(json!({"name": 7})),
                missing("tools/call", "name"),
            ),
            (
                "prompts/get",
                Some(json!({})),
                missing("prompts/get", "name"),
            ),
            // Methods are compared as sent: never encoded, refused when they cannot be sent.
            ("", None, bad_method("")),
            (" tools/list", None, bad_method(" tools/list")),
            ("tools/list\t", None, bad_method("tools/list\t")),
            ("tools/li\r\nst", None, bad_method("tools/li\r\nst")),
            ("tööls/list", None, bad_method("tööls/list")),
        ];
        for (method, params, want) in rows {
            let want = want.map(|v| {
                v.into_iter()
                    .map(|(k, v)| (k, v.to_owned()))
                    .collect::<Vec<_>>()
            });
            assert_eq!(
                standard_headers(method, params.as_ref()),
                want,
                "{method:?} {params:?}"
            );
        }
    }

    /// The spec's execute_sql example, exactly: the tool definition and the resulting request.
    #[test]
    fn spec_example_execute_sql() {
        let tool = json!({
            "name": "execute_sql",
            "description": "Execute SQL on Google Cloud Spanner",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {
                        "type": "string",
                        "description": "The region to execute the query in",
                        "x-mcp-header": "Region"
                    },
                    "query": {
                        "type": "string",
                        "description": "The SQL query to execute"
                    }
                },
                "required": ["region", "query"]
            }
        });
        let params = json!({
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {
                    "name": "ExampleClient",
                    "version": "1.0.0"
                },
                "io.modelcontextprotocol/clientCapabilities": {}
            },
            "name": "execute_sql",
            "arguments": { "region": "us-west1", "query": "SELECT * FROM users" }
        });
        let headers = ParamHeaders::from_input_schema(&tool["inputSchema"]).unwrap();
        let param = headers.iter().next().unwrap();
        assert_eq!(
            (
                param.name(),
                param.header_name(),
                param.path(),
                param.kind()
            ),
            (
                "Region",
                "Mcp-Param-Region",
                &["region".to_owned()][..],
                ParamType::String
            )
        );
        let mut all: Vec<(String, String)> = standard_headers("tools/call", Some(&params))
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        all.extend(headers.headers_for(params.get("arguments")).unwrap());
        assert_eq!(
            all,
            pairs(&[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "execute_sql"),
                ("Mcp-Param-Region", "us-west1"),
            ])
        );
    }

    #[test]
    fn valid_schemas() {
        let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        type Found<'a> = Vec<(&'a str, Vec<String>, ParamType)>;
        let rows: Vec<(&str, Value, Found)> = vec![
            ("no properties", json!({"type": "object"}), vec![]),
            ("not an object", json!(true), vec![]),
            (
                "each primitive type",
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "A"},
                    "b": {"type": "integer", "x-mcp-header": "B"},
                    "c": {"type": "boolean", "x-mcp-header": "C"},
                }}),
                vec![
                    ("A", path(&["a"]), ParamType::String),
                    ("B", path(&["b"]), ParamType::Integer),
                    ("C", path(&["c"]), ParamType::Boolean),
                ],
            ),
            (
                "nullable, either order",
                json!({"type": "object", "properties": {
                    "a": {"type": ["string", "null"], "x-mcp-header": "A"},
                    "b": {"type": ["null", "integer"], "x-mcp-header": "B"},
                }}),
                vec![
                    ("A", path(&["a"]), ParamType::String),
                    ("B", path(&["b"]), ParamType::Integer),
                ],
            ),
            (
                "nested properties",
                json!({"type": "object", "properties": {
                    "options": {"type": "object", "properties": {
                        "limit": {"type": "integer", "x-mcp-header": "Limit"},
                        "deep": {"type": "object", "properties": {
                            "flag": {"type": "boolean", "x-mcp-header": "Flag"}
                        }}
                    }}
                }}),
                vec![
                    (
                        "Flag",
                        path(&["options", "deep", "flag"]),
                        ParamType::Boolean,
                    ),
                    ("Limit", path(&["options", "limit"]), ParamType::Integer),
                ],
            ),
            (
                "a property named x-mcp-header is a name, not an annotation",
                json!({"type": "object", "properties": {
                    "x-mcp-header": {"type": "object"}
                }}),
                vec![],
            ),
            (
                "a property named x-mcp-header may itself be mirrored",
                json!({"type": "object", "properties": {
                    "x-mcp-header": {"type": "string", "x-mcp-header": "Odd"}
                }}),
                vec![("Odd", path(&["x-mcp-header"]), ParamType::String)],
            ),
            (
                "property names named x-mcp-header elsewhere are names too",
                json!({"type": "object", "properties": {
                    "list": {"type": "array", "items": {"properties": {
                        "x-mcp-header": {"type": "string"}
                    }}}
                }, "$defs": {"d": {"properties": {"x-mcp-header": true}}}}),
                vec![],
            ),
            (
                "property names holding dots, slashes and tildes are not split",
                json!({"type": "object", "properties": {
                    "a.b": {"type": "string", "x-mcp-header": "Dotted"},
                    "properties": {"type": "object", "properties": {
                        "c/d~": {"type": "string", "x-mcp-header": "Slashed"}
                    }}
                }}),
                vec![
                    ("Dotted", path(&["a.b"]), ParamType::String),
                    ("Slashed", path(&["properties", "c/d~"]), ParamType::String),
                ],
            ),
            (
                "every tchar",
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "!#$%&'*+-.^_`|~09AZaz"}
                }}),
                vec![("!#$%&'*+-.^_`|~09AZaz", path(&["a"]), ParamType::String)],
            ),
            (
                "other keywords beside annotated properties",
                json!({"type": "object", "properties": {
                    "r": {"type": "string", "enum": ["a", "b"], "x-mcp-header": "R"}
                }, "oneOf": [{"required": ["r"]}], "additionalProperties": false}),
                vec![("R", path(&["r"]), ParamType::String)],
            ),
            (
                "32 properties deep, the deepest the walk reaches",
                property_chain(32, json!({"type": "string", "x-mcp-header": "Deep"})),
                vec![(
                    "Deep",
                    (0..32).map(|i| format!("p{i}")).collect(),
                    ParamType::String,
                )],
            ),
            (
                "a deep schema without annotations",
                json!({"type": "object", "$defs": nest(200, json!({"type": "string"}))}),
                vec![],
            ),
        ];
        for (case, schema, want) in rows {
            let got =
                ParamHeaders::from_input_schema(&schema).unwrap_or_else(|e| panic!("{case}: {e}"));
            let got: Vec<_> = got
                .iter()
                .map(|p| (p.name(), p.path().to_vec(), p.kind()))
                .collect();
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn invalid_schemas() {
        use InvalidParamHeader as E;
        const A: &str = "/properties/a";
        let on_a = |annotation: Value, ty: Value| {
            let a = json!({"type": ty, "x-mcp-header": annotation});
            json!({"type": "object", "properties": {"a": a}})
        };
        let named = |annotation: Value| on_a(annotation, json!("string"));
        let typed = |ty: Value| on_a(json!("A"), ty);
        let not_string = || E::NotAString { at: A.into() };
        let not_token = |name: &str| E::NotAToken {
            at: A.into(),
            name: name.into(),
        };
        let ty = |found: &str| E::Type {
            at: A.into(),
            name: "A".into(),
            found: found.into(),
        };
        let untyped = || E::Untyped {
            at: A.into(),
            name: "A".into(),
        };
        let unreachable = |p: &str| E::NotStaticallyReachable { at: p.into() };
        let annotated = json!({"type": "string", "x-mcp-header": "A"});
        let object = |properties: Value| json!({"type": "object", "properties": properties});
        let rows: Vec<(&str, Value, InvalidParamHeader)> = vec![
            ("a number", named(json!(1)), not_string()),
            ("null", named(Value::Null), not_string()),
            ("an object", named(json!({})), not_string()),
            ("empty", named(json!("")), E::Empty { at: A.into() }),
            ("a space", named(json!("Re gion")), not_token("Re gion")),
            ("a colon", named(json!("a:b")), not_token("a:b")),
            (
                "CR LF",
                named(json!("A\r\nX-Evil: 1")),
                not_token("A\r\nX-Evil: 1"),
            ),
            ("LF", named(json!("A\n")), not_token("A\n")),
            ("NUL", named(json!("A\0")), not_token("A\0")),
            ("a tab", named(json!("A\t")), not_token("A\t")),
            ("non-ASCII", named(json!("Région")), not_token("Région")),
            ("a delimiter", named(json!("(A)")), not_token("(A)")),
            ("type number", typed(json!("number")), ty(r#""number""#)),
            ("type object", typed(json!("object")), ty(r#""object""#)),
            ("type array", typed(json!("array")), ty(r#""array""#)),
            ("type null", typed(json!("null")), ty(r#""null""#)),
            ("type [null]", typed(json!(["null"])), ty(r#"["null"]"#)),
            (
                "nullable number",
                typed(json!(["number", "null"])),
                ty(r#"["number","null"]"#),
            ),
            (
                "two primitives",
                typed(json!(["string", "integer"])),
                ty(r#"["string","integer"]"#),
            ),
            ("a type not a name", typed(json!(3)), ty("3")),
            (
                "no type",
                object(json!({"a": {"enum": ["x"], "x-mcp-header": "A"}})),
                untyped(),
            ),
            (
                "a $ref beside the annotation gives no type",
                json!({
                    "type": "object",
                    "properties": {"a": {"$ref": "#/$defs/s", "x-mcp-header": "A"}},
                    "$defs": {"s": {"type": "string"}}
                }),
                untyped(),
            ),
            (
                "duplicates differing only in case",
                object(json!({
                    "a": {"type": "string", "x-mcp-header": "Region"},
                    "b": object(json!({"c": {"type": "string", "x-mcp-header": "rEGION"}}))
                })),
                E::Duplicate {
                    at: "/properties/b/properties/c".into(),
                    name: "rEGION".into(),
                    first: A.into(),
                },
            ),
            (
                "at the root",
                json!({"type": "object", "x-mcp-header": "A"}),
                unreachable(""),
            ),
            (
                "in items",
                object(json!({"l": {"type": "array", "items": annotated}})),
                unreachable("/properties/l/items"),
            ),
            (
                "in properties under items",
                object(json!({"l": {"type": "array", "items": object(json!({"a": annotated}))}})),
                unreachable("/properties/l/items/properties/a"),
            ),
            (
                "in prefixItems",
                json!({"type": "object", "properties": {"l": {"prefixItems": [annotated]}}}),
                unreachable("/properties/l/prefixItems/0"),
            ),
            (
                "in contains",
                json!({"type": "object", "properties": {"l": {"contains": annotated}}}),
                unreachable("/properties/l/contains"),
            ),
            (
                "in additionalProperties",
                json!({"type": "object", "additionalProperties": annotated}),
                unreachable("/additionalProperties"),
            ),
            (
                "in unevaluatedProperties",
                json!({"type": "object", "unevaluatedProperties": annotated}),
                unreachable("/unevaluatedProperties"),
            ),
            (
                "in patternProperties",
                json!({"type": "object", "patternProperties": {"^a": annotated}}),
                unreachable("/patternProperties/^a"),
            ),
            (
                "in propertyNames",
                json!({"type": "object", "propertyNames": annotated}),
                unreachable("/propertyNames"),
            ),
            (
                "in dependentSchemas",
                json!({"type": "object", "dependentSchemas": {"a": annotated}}),
                unreachable("/dependentSchemas/a"),
            ),
            (
                "in oneOf",
                json!({"type": "object", "oneOf": [{"properties": {"a": annotated}}]}),
                unreachable("/oneOf/0/properties/a"),
            ),
            (
                "in anyOf",
                json!({"type": "object", "anyOf": [annotated]}),
                unreachable("/anyOf/0"),
            ),
            (
                "in allOf",
                json!({"type": "object", "allOf": [{"properties": {"a": annotated}}]}),
                unreachable("/allOf/0/properties/a"),
            ),
            (
                "in not",
                json!({"type": "object", "not": annotated}),
                unreachable("/not"),
            ),
            (
                "in if",
                json!({"type": "object", "if": {"properties": {"a": annotated}}}),
                unreachable("/if/properties/a"),
            ),
            (
                "in then",
                json!({"type": "object", "then": {"properties": {"a": annotated}}}),
                unreachable("/then/properties/a"),
            ),
            (
                "in else",
                json!({"type": "object", "else": {"properties": {"a": annotated}}}),
                unreachable("/else/properties/a"),
            ),
            (
                "in $defs",
                json!({
                    "type": "object",
                    "$defs": {"r": annotated},
                    "properties": {"a": {"$ref": "#/$defs/r"}}
                }),
                unreachable("/$defs/r"),
            ),
            (
                "in definitions",
                json!({"type": "object", "definitions": {"r": annotated}}),
                unreachable("/definitions/r"),
            ),
            (
                "in an unknown keyword",
                json!({"type": "object", "x-vendor": {"properties": {"a": annotated}}}),
                unreachable("/x-vendor/properties/a"),
            ),
            (
                "in a default value",
                object(json!({"a": {"type": "object", "default": {"x-mcp-header": "A"}}})),
                unreachable("/properties/a/default"),
            ),
            (
                "properties given as an array",
                json!({"type": "object", "properties": [annotated]}),
                unreachable("/properties/0"),
            ),
            (
                "an annotated property 33 deep",
                property_chain(33, json!({"type": "string", "x-mcp-header": "Deep"})),
                E::TooDeep {
                    // The property schema `p32` is the first node past the limit.
                    at: property_pointer(&(0..33).map(|i| format!("p{i}")).collect::<Vec<_>>()),
                },
            ),
            (
                "a depth bomb with an annotation at the bottom",
                json!({"type": "object", "$defs": nest(1_000, annotated.clone())}),
                E::TooDeep {
                    at: pointer(
                        &std::iter::once("$defs")
                            .chain(std::iter::repeat_n("a", MAX_SCHEMA_DEPTH))
                            .collect::<Vec<_>>(),
                    ),
                },
            ),
        ];
        for (case, schema, want) in rows {
            assert_eq!(
                ParamHeaders::from_input_schema(&schema),
                Err(want),
                "{case}"
            );
        }
    }

    #[test]
    fn error_messages_name_the_place() {
        let a_b = json!({"type": "number", "x-mcp-header": "N"});
        let schema = json!({"type": "object", "properties": {"a.b": a_b}});
        assert_eq!(
            ParamHeaders::from_input_schema(&schema)
                .unwrap_err()
                .to_string(),
            "x-mcp-header \"N\" at /properties/a.b is on a property of type \"number\"; \
             only integer, string or boolean (optionally with null) can be mirrored"
        );
        let root = json!({"x-mcp-header": "A"});
        assert_eq!(
            ParamHeaders::from_input_schema(&root)
                .unwrap_err()
                .to_string(),
            "x-mcp-header at the schema root is not on a property reached through properties alone"
        );
    }

    #[test]
    fn param_values() {
        use ParamValueError as E;
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string", "x-mcp-header": "S"},
            "i": {"type": "integer", "x-mcp-header": "I"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
            "n": {"type": ["string", "null"], "x-mcp-header": "N"},
            "o": {"type": "object", "properties": {"k.j": {"type": "string", "x-mcp-header": "K"}}}
        }});
        let headers = ParamHeaders::from_input_schema(&schema).unwrap();
        let wrong = |argument: &str, header: &str, expected, found| E::WrongType {
            argument: argument.into(),
            header: header.into(),
            expected,
            found,
        };
        let unsafe_int = |value: &str| E::UnsafeInteger {
            argument: "/i".into(),
            header: "Mcp-Param-I".into(),
            value: value.into(),
        };
        type Headers<'a> = Result<Vec<(&'a str, &'a str)>, ParamValueError>;
        let rows: Vec<(Option<Value>, Headers)> = vec![
            (None, Ok(vec![])),
            (Some(json!([1, 2])), Ok(vec![])),
            (Some(json!({})), Ok(vec![])),
            (
                Some(json!({"s": "us-west1", "i": -7, "b": true, "n": "x", "o": {"k.j": "v"}})),
                Ok(vec![
                    ("Mcp-Param-B", "true"),
                    ("Mcp-Param-I", "-7"),
                    ("Mcp-Param-N", "x"),
                    ("Mcp-Param-K", "v"),
                    ("Mcp-Param-S", "us-west1"),
                ]),
            ),
            // Null and absent values omit the header; so does a path that is not there.
            (
                Some(json!({"s": null, "n": null, "b": false})),
                Ok(vec![("Mcp-Param-B", "false")]),
            ),
            (Some(json!({"o": "not an object"})), Ok(vec![])),
            (Some(json!({"o": {"k": {"j": "v"}}})), Ok(vec![])),
            (Some(json!({"o": null})), Ok(vec![])),
            // Strings are value-encoded.
            (
                Some(json!({"s": "Hello, 世界"})),
                Ok(vec![("Mcp-Param-S", "=?base64?SGVsbG8sIOS4lueVjA==?=")]),
            ),
            (
                Some(json!({"s": ""})),
                Ok(vec![("Mcp-Param-S", "=?base64??=")]),
            ),
            // Integers: the safe range's edges, and numbers with a zero fraction.
            (
                Some(json!({"i": 9007199254740991_i64})),
                Ok(vec![("Mcp-Param-I", "9007199254740991")]),
            ),
            (
                Some(json!({"i": -9007199254740991_i64})),
                Ok(vec![("Mcp-Param-I", "-9007199254740991")]),
            ),
            (Some(json!({"i": 0})), Ok(vec![("Mcp-Param-I", "0")])),
            (Some(json!({"i": 42.0})), Ok(vec![("Mcp-Param-I", "42")])),
            (Some(json!({"i": -0.0})), Ok(vec![("Mcp-Param-I", "0")])),
            (
                Some(serde_json::from_str(r#"{"i": 1e3}"#).unwrap()),
                Ok(vec![("Mcp-Param-I", "1000")]),
            ),
            (
                Some(json!({"i": 9007199254740991.0})),
                Ok(vec![("Mcp-Param-I", "9007199254740991")]),
            ),
            (
                Some(json!({"i": 9007199254740992_i64})),
                Err(unsafe_int("9007199254740992")),
            ),
            (
                Some(json!({"i": -9007199254740992_i64})),
                Err(unsafe_int("-9007199254740992")),
            ),
            (
                Some(json!({"i": u64::MAX})),
                Err(unsafe_int("18446744073709551615")),
            ),
            (
                Some(json!({"i": i64::MIN})),
                Err(unsafe_int("-9223372036854775808")),
            ),
            (
                Some(json!({"i": 9007199254740992.0})),
                Err(unsafe_int("9007199254740992.0")),
            ),
            (Some(json!({"i": 1e300})), Err(unsafe_int("1e+300"))),
            // Values of another type than the schema's.
            (
                Some(json!({"i": 4.5})),
                Err(wrong("/i", "Mcp-Param-I", ParamType::Integer, "number")),
            ),
            (
                Some(json!({"i": "42"})),
                Err(wrong("/i", "Mcp-Param-I", ParamType::Integer, "string")),
            ),
            (
                Some(json!({"i": true})),
                Err(wrong("/i", "Mcp-Param-I", ParamType::Integer, "boolean")),
            ),
            (
                Some(json!({"s": {"a": 1}})),
                Err(wrong("/s", "Mcp-Param-S", ParamType::String, "object")),
            ),
            (
                Some(json!({"s": 5})),
                Err(wrong("/s", "Mcp-Param-S", ParamType::String, "integer")),
            ),
            (
                Some(json!({"b": "true"})),
                Err(wrong("/b", "Mcp-Param-B", ParamType::Boolean, "string")),
            ),
            (
                Some(json!({"b": [true]})),
                Err(wrong("/b", "Mcp-Param-B", ParamType::Boolean, "array")),
            ),
            (
                Some(json!({"o": {"k.j": 1}})),
                Err(wrong("/o/k.j", "Mcp-Param-K", ParamType::String, "integer")),
            ),
        ];
        for (arguments, want) in rows {
            assert_eq!(
                headers.headers_for(arguments.as_ref()),
                want.map(|v| pairs(&v)),
                "{arguments:?}"
            );
        }
        assert_eq!(
            headers
                .headers_for(Some(&json!({"i": 4.5})))
                .unwrap_err()
                .to_string(),
            "argument /i must be integer (it is sent in the Mcp-Param-I header), not number"
        );
        assert_eq!(
            ParamHeaders::default().headers_for(Some(&json!({"s": "x"}))),
            Ok(vec![])
        );
    }
}
