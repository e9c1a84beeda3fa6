//! Prompts (`prompts/list`, `prompts/get`) and argument completion (`completion/complete`).
//!
//! > "Prompts allow servers to provide structured messages and instructions for interacting with
//! > language models. Clients can discover available prompts, retrieve their contents, and
//! > provide arguments to customize them." — MCP 2025-11-25, Server § Prompts
//!
//! Listed prompts are kept whole, as the server sent them (like [`Tool`](crate::Tool)s). A
//! prompt's messages carry [`ContentBlock`]s of every kind (text, image, audio, resource links,
//! embedded resources); a kind this client does not know is kept as
//! [`ContentBlock::Unknown`], never an error.

use crate::resources::kept_whole;
use crate::types::{list_result, ContentBlock, Outcome, ResultType};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The most completion values one answer may carry; more are dropped (the answer is then marked
/// [`Completion::truncated`]).
///
/// > "`values`: Array of completion values (maximum 100 items)" — MCP 2025-11-25, Utilities
/// > § Completion
pub const MAX_COMPLETION_VALUES: usize = 100;

/// One prompt a server lists (`prompts/list`).
#[derive(Debug, Clone)]
pub struct Prompt {
    /// Its name: what `prompts/get` takes.
    pub name: String,
    /// Human-readable name, when given.
    pub title: Option<String>,
    /// What it is for, when given.
    pub description: Option<String>,
    /// The arguments it takes (those the server described readably).
    pub arguments: Vec<PromptArgument>,
    /// The `_meta` member, as sent.
    pub meta: Option<Value>,
    raw: Box<RawValue>,
}

/// One argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// Human-readable name, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it means, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given (`required`; absent or `null`: no).
    #[serde(default, deserialize_with = "null_as_false")]
    pub required: bool,
}

fn null_as_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(matches!(
        Option::<Value>::deserialize(d)?,
        Some(Value::Bool(true))
    ))
}

impl<'de> Deserialize<'de> for Prompt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Fields {
            name: String,
            #[serde(default)]
            title: Option<Value>,
            #[serde(default)]
            description: Option<Value>,
            #[serde(default)]
            arguments: Option<Value>,
            #[serde(default, rename = "_meta")]
            meta: Option<Value>,
        }
        let raw = Box::<RawValue>::deserialize(d)?;
        let f: Fields = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
        let text = |v: Option<Value>| match v {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        // An argument the server described unreadably (no name) is left out, not the prompt.
        let arguments = match f.arguments {
            Some(Value::Array(items)) => items
                .into_iter()
                .filter_map(|a| serde_json::from_value(a).ok())
                .collect(),
            _ => Vec::new(),
        };
        Ok(Prompt {
            name: f.name,
            title: text(f.title),
            description: text(f.description),
            arguments,
            meta: f.meta,
            raw,
        })
    }
}

kept_whole!(Prompt);

list_result! {
    /// The `prompts/list` result: one page of prompts.
    ListPromptsResult, ListPromptsWire = "ListPromptsWire", prompts: Prompt, "prompts"
}

/// One message of a prompt.
///
/// > "`role`: `"user"` | `"assistant"`; `content`: `ContentBlock`" — MCP 2025-11-25, schema
/// > `PromptMessage`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// `user` or `assistant`, as sent (another value is kept, for the application to judge).
    pub role: String,
    /// What it says: a block of any kind.
    pub content: ContentBlock,
}

/// The `prompts/get` result: the prompt's messages, filled in with the arguments.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// What the prompt is for, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
    /// The `_meta` member, verbatim.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<RawValue>>,
    /// `resultType` as sent (modern servers); absent means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
}

impl PartialEq for GetPromptResult {
    fn eq(&self, other: &Self) -> bool {
        self.description == other.description
            && self.messages == other.messages
            && self.meta.as_deref().map(RawValue::get) == other.meta.as_deref().map(RawValue::get)
            && self.result_type == other.result_type
    }
}

impl Outcome for GetPromptResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

/// What a completion is for: a prompt's argument, or a resource template's variable.
///
/// > "`ref`: `PromptReference | ResourceTemplateReference`" — MCP 2025-11-25, schema
/// > `CompleteRequestParams`
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionRef {
    /// `{"type": "ref/prompt", "name": …}`.
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// `{"type": "ref/resource", "uri": …}`: `uri` is the template (`uriTemplate`) as listed.
    ResourceTemplate {
        /// The URI template.
        uri: String,
    },
}

impl CompletionRef {
    /// As JSON, for the request.
    pub fn to_json(&self) -> Value {
        match self {
            CompletionRef::Prompt { name } => {
                serde_json::json!({"type": "ref/prompt", "name": name})
            }
            CompletionRef::ResourceTemplate { uri } => {
                serde_json::json!({"type": "ref/resource", "uri": uri})
            }
        }
    }
}

/// The `completion/complete` params, from their parts: what is completed, the argument's name
/// and what was typed so far, and the arguments already given (`context.arguments`, sent only
/// when there are some).
///
/// > "`context`: Additional, optional context for completions / `arguments`: Previously-resolved
/// > variables in a URI template or prompt." — MCP 2025-11-25, schema `CompleteRequestParams`
pub fn complete_params(
    reference: &CompletionRef,
    argument: &str,
    value: &str,
    context: &Map<String, Value>,
) -> Value {
    let mut params = serde_json::json!({
        "ref": reference.to_json(),
        "argument": {"name": argument, "value": value},
    });
    if !context.is_empty() {
        params["context"] = serde_json::json!({ "arguments": context });
    }
    params
}

/// The `completion/complete` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
    /// `resultType` as sent (modern servers); absent means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
}

impl Outcome for CompleteResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

/// Completion suggestions, read leniently: at most [`MAX_COMPLETION_VALUES`] values (more are
/// dropped, and [`truncated`](Self::truncated) says so), values that are not strings left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The suggested values, in the server's order.
    pub values: Vec<String>,
    /// How many there are in all, when the server says (it may be more than sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than sent.
    pub has_more: bool,
    /// Whether this client dropped values past [`MAX_COMPLETION_VALUES`], or values that were
    /// not strings.
    #[serde(skip)]
    pub truncated: bool,
}

impl<'de> Deserialize<'de> for Completion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            values: Vec<Value>,
            #[serde(default)]
            total: Option<Value>,
            #[serde(default)]
            has_more: Option<Value>,
        }
        let w = Wire::deserialize(d)?;
        let sent = w.values.len();
        let values: Vec<String> = w
            .values
            .into_iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s),
                _ => None,
            })
            .take(MAX_COMPLETION_VALUES)
            .collect();
        Ok(Completion {
            truncated: values.len() < sent,
            values,
            total: w.total.and_then(|t| t.as_u64()),
            has_more: matches!(w.has_more, Some(Value::Bool(true))) || sent > MAX_COMPLETION_VALUES,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prompts_are_kept_whole_and_their_arguments_read_leniently() {
        let page: ListPromptsResult = serde_json::from_str(
            r#"{"prompts":[{"name":"p","arguments":[{"name":"a","required":true},{"nope":1},
                {"name":"b","required":null}],"icons":[]},{"name":"q","arguments":"x","title":3}]}"#,
        )
        .unwrap();
        let p = &page.prompts[0];
        assert_eq!(p.arguments.len(), 2);
        assert!(p.arguments[0].required);
        assert!(!p.arguments[1].required);
        assert!(p.raw().get().contains("icons"));
        assert!(page.prompts[1].arguments.is_empty());
        assert_eq!(page.prompts[1].title, None);
        assert!(serde_json::from_str::<ListPromptsResult>(r#"{"prompts":[{}]}"#).is_err());
    }

    #[test]
    fn a_prompts_messages_carry_every_content_kind() {
        let got: GetPromptResult = serde_json::from_str(
            r#"{"description":"d","messages":[
                {"role":"user","content":{"type":"text","text":"hi"}},
                {"role":"assistant","content":{"type":"image","data":"AA==","mimeType":"image/png"}},
                {"role":"user","content":{"type":"audio","data":"AA==","mimeType":"audio/wav"}},
                {"role":"user","content":{"type":"resource_link","uri":"a://1","name":"one"}},
                {"role":"user","content":{"type":"resource","resource":{"uri":"a://2","text":"t"}}},
                {"role":"user","content":{"type":"hologram","depth":3}}]}"#,
        )
        .unwrap();
        assert_eq!(got.messages.len(), 6);
        assert!(matches!(
            got.messages[1].content,
            ContentBlock::Image { .. }
        ));
        assert!(matches!(
            got.messages[2].content,
            ContentBlock::Audio { .. }
        ));
        assert!(matches!(
            got.messages[3].content,
            ContentBlock::ResourceLink { .. }
        ));
        assert!(matches!(
            got.messages[4].content,
            ContentBlock::Resource { .. }
        ));
        assert!(matches!(got.messages[5].content, ContentBlock::Unknown(_)));
    }

    #[test]
    fn completions_are_capped_and_read_leniently() {
        let many: Vec<Value> = (0..150).map(|i| json!(format!("v{i}"))).collect();
        let r: CompleteResult =
            serde_json::from_value(json!({"completion": {"values": many, "total": 150}})).unwrap();
        assert_eq!(r.completion.values.len(), MAX_COMPLETION_VALUES);
        assert!(r.completion.truncated && r.completion.has_more);
        assert_eq!(r.completion.total, Some(150));
        let r: CompleteResult = serde_json::from_value(
            json!({"completion": {"values": ["a", 1, null], "total": -1, "hasMore": "yes"}}),
        )
        .unwrap();
        assert_eq!(r.completion.values, ["a"]);
        assert!(r.completion.truncated && !r.completion.has_more);
        assert_eq!(r.completion.total, None);
        let params = complete_params(
            &CompletionRef::Prompt { name: "p".into() },
            "a",
            "x",
            &Map::new(),
        );
        assert_eq!(
            params,
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "x"}})
        );
        let Value::Object(ctx) = json!({"b": "1"}) else {
            unreachable!()
        };
        let params = complete_params(
            &CompletionRef::ResourceTemplate {
                uri: "t://{b}/{a}".into(),
            },
            "a",
            "",
            &ctx,
        );
        assert_eq!(params["context"], json!({"arguments": {"b": "1"}}));
        assert_eq!(params["ref"]["type"], "ref/resource");
    }
}
