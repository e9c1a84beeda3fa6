//! One value tree with byte spans for the three syntaxes, so that each format's reader works on the same
//! shapes and every error can point at the value it is about. JSONC is read by `jsonc-parser`'s
//! AST, TOML by `toml`'s span-keeping `DeTable`, YAML by `saphyr-parser`'s spanned events; this
//! file only translates their trees.

use std::ops::Range;

/// A value and the bytes of the file it was read from.
#[derive(Debug)]
pub(crate) struct Node {
    pub span: Range<usize>,
    pub value: Value,
}

/// The shapes the formats use; everything else is [`Value::Other`], named for messages.
#[derive(Debug)]
pub(crate) enum Value {
    Str(String),
    Num(f64),
    Bool(bool),
    Array(Vec<Node>),
    /// The entries in file order; JSON may repeat a key, and the readers refuse that.
    Object(Vec<(Key, Node)>),
    Other,
}

/// An object key and its span.
#[derive(Debug)]
pub(crate) struct Key {
    pub name: String,
    pub span: Range<usize>,
}

impl Node {
    pub fn as_object(&self) -> Option<&[(Key, Node)]> {
        match &self.value {
            Value::Object(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// A syntax error: where, and the parser's message (first letter lowered, no trailing period).
pub(crate) struct SyntaxError {
    pub at: usize,
    pub message: String,
}

/// JSON with comments and trailing commas (VS Code's JSONC); nothing looser (no single quotes,
/// unquoted keys, hexadecimal numbers or missing commas).
pub(crate) fn parse_json(text: &str) -> Result<Option<Node>, SyntaxError> {
    use jsonc_parser::{CollectOptions, ParseOptions};
    let options = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let parsed =
        jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options).map_err(|e| {
            SyntaxError {
                at: e.range().start,
                message: lower_first(&e.kind().to_string()),
            }
        })?;
    Ok(parsed.value.map(json_node))
}

fn json_node(value: jsonc_parser::ast::Value<'_>) -> Node {
    use jsonc_parser::ast::{ObjectPropName, Value as J};
    let span = |r: jsonc_parser::common::Range| r.start..r.end;
    match value {
        J::StringLit(s) => Node {
            span: span(s.range),
            value: Value::Str(s.value.into_owned()),
        },
        J::NumberLit(n) => Node {
            span: span(n.range),
            value: n.value.parse().map_or(Value::Other, Value::Num),
        },
        J::BooleanLit(b) => Node {
            span: span(b.range),
            value: Value::Bool(b.value),
        },
        J::NullKeyword(n) => Node {
            span: span(n.range),
            value: Value::Other,
        },
        J::Array(a) => Node {
            span: span(a.range),
            value: Value::Array(a.elements.into_iter().map(json_node).collect()),
        },
        J::Object(o) => Node {
            span: span(o.range),
            value: Value::Object(
                o.properties
                    .into_iter()
                    .map(|p| {
                        let key = match p.name {
                            ObjectPropName::String(s) => Key {
                                span: span(s.range),
                                name: s.value.into_owned(),
                            },
                            ObjectPropName::Word(w) => Key {
                                span: span(w.range),
                                name: w.value.to_owned(),
                            },
                        };
                        (key, json_node(p.value))
                    })
                    .collect(),
            ),
        },
    }
}

/// A TOML document (TOML itself refuses repeated keys).
pub(crate) fn parse_toml(text: &str) -> Result<Node, SyntaxError> {
    let table = toml::de::DeTable::parse(text).map_err(|e| SyntaxError {
        at: e.span().map_or(0, |s| s.start),
        message: lower_first(e.message()),
    })?;
    let span = table.span();
    Ok(toml_table(span, table.into_inner()))
}

fn toml_table(span: Range<usize>, table: toml::de::DeTable<'_>) -> Node {
    Node {
        span,
        value: Value::Object(
            table
                .into_iter()
                .map(|(k, v)| {
                    let key = Key {
                        span: k.span(),
                        name: k.into_inner().into_owned(),
                    };
                    (key, toml_node(v))
                })
                .collect(),
        ),
    }
}

fn toml_node(value: toml::Spanned<toml::de::DeValue<'_>>) -> Node {
    use toml::de::DeValue as T;
    let span = value.span();
    let value = match value.into_inner() {
        T::String(s) => Value::Str(s.into_owned()),
        T::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
            .map_or(Value::Other, |i| Value::Num(i as f64)),
        T::Float(f) => f
            .as_str()
            .replace('_', "")
            .parse()
            .map_or(Value::Other, Value::Num),
        T::Boolean(b) => Value::Bool(b),
        T::Datetime(_) => Value::Other,
        T::Array(a) => Value::Array(a.into_iter().map(toml_node).collect()),
        T::Table(t) => return toml_table(span, t),
    };
    Node { span, value }
}

/// The deepest nesting of YAML sequences and mappings accepted (a config needs a handful; the
/// tree is built without recursion, but dropping it recurses).
const MAX_YAML_DEPTH: usize = 128;

/// A YAML 1.2 document. Plain scalars are typed by the core schema (`true`/`false`, numbers,
/// `null`/`~`/nothing) unless tagged `!!str`; quoted and block scalars are strings. Aliases (`*name`) are refused: a
/// config has no need of them, and expanding them can multiply a small file without end ("billion
/// laughs"). A second document in the stream is refused too. `None`: the file holds no document.
pub(crate) fn parse_yaml(text: &str) -> Result<Option<Node>, SyntaxError> {
    use saphyr_parser::{Event, Parser, ScalarStyle};
    /// A collection being read: where it starts and what it holds so far (a mapping also holds
    /// the key whose value comes next).
    enum Open {
        Seq(usize, Vec<Node>),
        Map(usize, Vec<(Key, Node)>, Option<Key>),
    }
    let offsets = Offsets::new(text);
    let error = |at: usize, message: &str| SyntaxError {
        at,
        message: message.to_owned(),
    };
    let mut stack: Vec<Open> = Vec::new();
    let mut root = None;
    let mut documents = 0;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| SyntaxError {
            at: offsets.byte(e.marker().index()),
            message: lower_first(e.info()),
        })?;
        let start = offsets.byte(span.start.index());
        let end = offsets.byte(span.end.index()).max(start);
        let wants_key = matches!(stack.last(), Some(Open::Map(_, _, None)));
        let node = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(error(
                        start,
                        "a second YAML document: a config file holds one",
                    ));
                }
                continue;
            }
            Event::Alias(_) => return Err(error(start, "aliases (*name) are not supported")),
            Event::Scalar(value, style, _, tag) => {
                if wants_key {
                    if let Some(Open::Map(_, _, key)) = stack.last_mut() {
                        *key = Some(Key {
                            name: value.into_owned(),
                            span: start..end,
                        });
                    }
                    continue;
                }
                let string_tag = tag.is_some_and(|t| t.is_yaml_core_schema() && t.suffix == "str");
                let value = match style {
                    ScalarStyle::Plain if !string_tag => plain_scalar(&value),
                    _ => Value::Str(value.into_owned()),
                };
                Node {
                    span: start..end,
                    value,
                }
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                if wants_key {
                    return Err(error(start, "a mapping key must be a plain value"));
                }
                if stack.len() >= MAX_YAML_DEPTH {
                    return Err(error(start, "nested too deeply"));
                }
                stack.push(match event {
                    Event::SequenceStart(..) => Open::Seq(start, Vec::new()),
                    _ => Open::Map(start, Vec::new(), None),
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(from, items)) => Node {
                    span: from..end.max(from),
                    value: Value::Array(items),
                },
                Some(Open::Map(from, entries, _)) => Node {
                    span: from..end.max(from),
                    value: Value::Object(entries),
                },
                None => continue,
            },
            _ => continue,
        };
        match stack.last_mut() {
            None => root = Some(node),
            Some(Open::Seq(_, items)) => items.push(node),
            Some(Open::Map(_, entries, key)) => match key.take() {
                Some(key) => entries.push((key, node)),
                None => {
                    return Err(error(
                        node.span.start,
                        "a mapping key must be a plain value",
                    ))
                }
            },
        }
    }
    Ok(root)
}

/// A plain YAML scalar by the core schema (YAML 1.2.2 § 10.3.2).
fn plain_scalar(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Other,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => {
            let unsigned = text.trim_start_matches(['-', '+']);
            if let Some(digits) = text.strip_prefix("0x") {
                return i64::from_str_radix(digits, 16)
                    .map_or_else(|_| Value::Str(text.to_owned()), |i| Value::Num(i as f64));
            }
            if let Some(digits) = text.strip_prefix("0o") {
                return i64::from_str_radix(digits, 8)
                    .map_or_else(|_| Value::Str(text.to_owned()), |i| Value::Num(i as f64));
            }
            if matches!(
                unsigned,
                ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN"
            ) {
                return Value::Other;
            }
            let numeric = unsigned.bytes().any(|b| b.is_ascii_digit())
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
            match text.parse::<f64>() {
                Ok(n) if numeric => Value::Num(n),
                _ => Value::Str(text.to_owned()),
            }
        }
    }
}

/// Byte offsets from the character indices `saphyr-parser` gives: the same for ASCII text,
/// otherwise from a checkpoint every [`Offsets::STEP`] characters.
struct Offsets<'a> {
    text: &'a str,
    /// The byte offset of every `STEP`th character; empty for ASCII text.
    checkpoints: Vec<usize>,
}

impl<'a> Offsets<'a> {
    const STEP: usize = 1024;

    fn new(text: &'a str) -> Self {
        let checkpoints = if text.is_ascii() {
            Vec::new()
        } else {
            text.char_indices()
                .step_by(Self::STEP)
                .map(|(i, _)| i)
                .collect()
        };
        Offsets { text, checkpoints }
    }

    fn byte(&self, index: usize) -> usize {
        if self.checkpoints.is_empty() {
            return index.min(self.text.len());
        }
        let Some(&base) = self.checkpoints.get(index / Self::STEP) else {
            return self.text.len();
        };
        self.text[base..]
            .char_indices()
            .nth(index % Self::STEP)
            .map_or(self.text.len(), |(i, _)| base + i)
    }
}

fn lower_first(message: &str) -> String {
    let message = message.trim_end_matches('.');
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
