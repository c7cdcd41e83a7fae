//! OpenAI Chat Completions request JSON, both directions.
//!
//! Import takes `{"messages": [...]}` or a bare array: `system`/`developer`, `user`,
//! `assistant` (with `tool_calls`) and `tool` (with `tool_call_id`) messages. Export
//! gives `{"messages": [...]}`; content that is one text block is a string, other
//! content an array of parts, and no content `null` on an assistant message and `""`
//! on the others (which the API requires to have content). Thinking blocks have no Chat Completions field and are
//! left out of the export.

use serde_json::{json, Value};

use super::anthropic::is_url;
use super::builder::TranscriptBuilder;
use super::json::{self, Handled};
use crate::error::Error;
use crate::message::{ContentBlock, Message, Role, ToolCall};

pub(crate) fn import(text: &str, builder: &mut TranscriptBuilder) -> Result<(), Error> {
    let document = json::document(text, builder)?;
    let messages = json::items(&document, "messages", builder)?;
    json::each_item(messages, "messages", builder, push_message)
}

/// Imports one Chat Completions message.
pub(crate) fn push_message(message: &Value, builder: &mut TranscriptBuilder) -> Handled {
    let message = parse_message(message, builder)?;
    builder.push(message);
    Ok(())
}

/// Parses one Chat Completions message.
pub(crate) fn parse_message(
    message: &Value,
    builder: &mut TranscriptBuilder,
) -> Result<Message, String> {
    let content = content_blocks(message.get("content").unwrap_or(&Value::Null), builder)?;
    let role = json::str_at(message, "role").ok_or("missing \"role\"")?;
    Ok(match role {
        "system" | "developer" => Message::system("").with_content(content),
        "user" => Message::user("").with_content(content),
        "assistant" => {
            let calls = match message.get("tool_calls") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(calls)) => {
                    calls.iter().map(tool_call).collect::<Result<_, _>>()?
                }
                Some(_) => return Err("\"tool_calls\" is not an array".into()),
            };
            Message::assistant_with_tool_calls("", calls).with_content(content)
        }
        "tool" => {
            let id = json::required_str(message, "tool_call_id")?;
            Message::tool_result(id, "").with_content(content)
        }
        other => return Err(format!("unknown role {other:?}")),
    })
}

fn tool_call(call: &Value) -> Result<ToolCall, String> {
    let id = json::required_str(call, "id")?;
    let function = call
        .get("function")
        .ok_or("a tool call without \"function\"")?;
    let name = json::str_at(function, "name").unwrap_or_default();
    let arguments = match function.get("arguments") {
        Some(Value::String(text)) => json::arguments(text),
        Some(value) => value.clone(),
        None => Value::Null,
    };
    Ok(ToolCall::new(id, name, arguments))
}

/// Content as blocks: a string is one text block, null none, an array its parts.
pub(crate) fn content_blocks(
    content: &Value,
    builder: &mut TranscriptBuilder,
) -> Result<Vec<ContentBlock>, String> {
    let parts = match content {
        Value::Null => return Ok(Vec::new()),
        Value::String(text) => return Ok(vec![ContentBlock::text(text.as_str())]),
        Value::Array(parts) => parts,
        other => return Err(format!("content is neither text nor parts: {other}")),
    };
    let mut blocks = Vec::new();
    for part in parts {
        match json::str_at(part, "type") {
            Some("text" | "input_text" | "output_text") => {
                blocks.push(ContentBlock::text(
                    json::str_at(part, "text").unwrap_or_default(),
                ));
            }
            Some("image_url") => {
                let url = part
                    .get("image_url")
                    .and_then(|image| json::str_at(image, "url").or_else(|| image.as_str()))
                    .unwrap_or_default();
                blocks.push(image_from_url(url));
            }
            Some(other) => builder.skip_block(other),
            None => return Err("a content part without \"type\"".into()),
        }
    }
    Ok(blocks)
}

/// A `data:` URL becomes its media type and base64 data; any other URL stays a URL.
fn image_from_url(url: &str) -> ContentBlock {
    let parsed = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"));
    match parsed {
        Some((media_type, data)) => ContentBlock::Image {
            media_type: media_type.to_owned(),
            data: data.to_owned(),
        },
        None => ContentBlock::Image {
            media_type: String::new(),
            data: url.to_owned(),
        },
    }
}

/// Messages as an OpenAI Chat Completions request body: `{"messages": [...]}`.
///
/// ```
/// use ctxmem::*;
/// let call = ToolCall::new("c1", "ls", serde_json::json!({"path": "."}));
/// let body = to_openai(&[
///     Message::assistant_with_tool_calls("", vec![call]),
///     Message::tool_result("c1", "a.rs"),
/// ]);
/// assert_eq!(body["messages"][0]["tool_calls"][0]["function"]["arguments"], r#"{"path":"."}"#);
/// assert_eq!(body["messages"][1]["role"], "tool");
/// assert_eq!(body["messages"][1]["tool_call_id"], "c1");
/// ```
pub fn to_openai(messages: &[Message]) -> Value {
    let messages: Vec<Value> = messages.iter().map(message_json).collect();
    json!({ "messages": messages })
}

fn message_json(message: &Message) -> Value {
    let content = match content_json(message.content()) {
        // Only an assistant message may go without content; the others need text.
        Value::Null if message.role() != Role::Assistant => Value::String(String::new()),
        content => content,
    };
    let mut out = json!({
        "role": message.role().as_str(),
        "content": content,
    });
    match message.role() {
        Role::Assistant if !message.tool_calls().is_empty() => {
            let calls: Vec<Value> = message
                .tool_calls()
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments.to_string()},
                    })
                })
                .collect();
            out["tool_calls"] = Value::Array(calls);
        }
        Role::Tool => {
            out["tool_call_id"] = Value::String(message.tool_call_id().unwrap_or_default().into());
        }
        _ => {}
    }
    out
}

/// One text block as a string, nothing as null, anything else as parts.
fn content_json(content: &[ContentBlock]) -> Value {
    let parts: Vec<Value> = content.iter().filter_map(part_json).collect();
    match (content, parts.as_slice()) {
        ([ContentBlock::Text { text }], _) => Value::String(text.clone()),
        (_, []) => Value::Null,
        _ => Value::Array(parts),
    }
}

fn part_json(block: &ContentBlock) -> Option<Value> {
    Some(match block {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Json { value } => json!({"type": "text", "text": value.to_string()}),
        ContentBlock::Image { media_type, data } => {
            let url = if is_url(data) || media_type.is_empty() {
                data.clone()
            } else {
                format!("data:{media_type};base64,{data}")
            };
            json!({"type": "image_url", "image_url": {"url": url}})
        }
        ContentBlock::Thinking { .. } => return None,
    })
}
