//! One value tree with byte spans for both syntaxes, so that each format's reader works on the same
//! shapes and every error can point at the value it is about. JSONC is read by `jsonc-parser`'s
//! AST, TOML by `toml`'s span-keeping `DeTable`; this file only translates their trees.

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

fn lower_first(message: &str) -> String {
    let message = message.trim_end_matches('.');
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
