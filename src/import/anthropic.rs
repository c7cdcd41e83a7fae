//! Anthropic Messages request JSON, both directions. Claude Code logs use the same
//! content blocks, so its importer reads them with the functions here.
//!
//! Import takes `{"system": ..., "messages": [...]}` or a bare `messages` array. Export
//! gives the same object: leading system messages become `system`, later ones user
//! text; consecutive tool results go into one user message as `tool_result` blocks.

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::builder::{AssistantPart, TranscriptBuilder};
use super::json::{self, Handled};
use crate::error::Error;
use crate::message::{ContentBlock, Message, Role, ToolCall};

pub(crate) fn import(text: &str, builder: &mut TranscriptBuilder) -> Result<(), Error> {
    let document = json::document(text, builder)?;
    if let Some(system) = document.get("system") {
        let content = content_blocks(system, builder)
            .map_err(|reason| json::shape_error(builder, format!("system: {reason}")))?;
        builder.push(Message::system("").with_content(content));
    }
    let messages = json::items(&document, "messages", builder)?;
    json::each_item(messages, "messages", builder, |message, builder| {
        turn(message, None, builder)
    })
}

/// Imports one turn (`role` and `content`) with its time.
fn turn(message: &Value, at: Option<DateTime<Utc>>, builder: &mut TranscriptBuilder) -> Handled {
    let content = message.get("content").unwrap_or(&Value::Null);
    match json::str_at(message, "role") {
        Some("user") => {
            for message in user_turn(content, at, builder)? {
                builder.push(message);
            }
            Ok(())
        }
        Some("assistant") => {
            let part = assistant_part(content, at, builder)?;
            builder.assistant(None, part);
            Ok(())
        }
        other => Err(format!("unknown role {other:?}")),
    }
}

/// A user turn's content as messages: one tool result per `tool_result` block (in
/// order), then one user message with the other blocks, if any.
pub(crate) fn user_turn(
    content: &Value,
    at: Option<DateTime<Utc>>,
    builder: &mut TranscriptBuilder,
) -> Result<Vec<Message>, String> {
    let timed = |message: Message| json::timed(message, at);
    let Value::Array(blocks) = content else {
        let content = content_blocks(content, builder)?;
        return Ok(vec![timed(Message::user("").with_content(content))]);
    };
    let mut messages = Vec::new();
    let mut rest = Vec::new();
    for block in blocks {
        if block.get("type").and_then(Value::as_str) == Some("tool_result") {
            let id = json::required_str(block, "tool_use_id")?;
            let body = content_blocks(block.get("content").unwrap_or(&Value::Null), builder)?;
            let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
            let result = Message::tool_result(id, "")
                .with_content(body)
                .with_error(is_error);
            messages.push(timed(result));
        } else if let Some(block) = content_block(block, builder)? {
            rest.push(block);
        }
    }
    if !rest.is_empty() || messages.is_empty() {
        messages.push(timed(Message::user("").with_content(rest)));
    }
    Ok(messages)
}

/// An assistant turn's content: text, thinking and `tool_use` blocks.
pub(crate) fn assistant_part(
    content: &Value,
    at: Option<DateTime<Utc>>,
    builder: &mut TranscriptBuilder,
) -> Result<AssistantPart, String> {
    let mut part = AssistantPart {
        at,
        ..AssistantPart::default()
    };
    let Value::Array(blocks) = content else {
        part.content = content_blocks(content, builder)?;
        return Ok(part);
    };
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                let id = json::required_str(block, "id")?;
                let name = json::str_at(block, "name").unwrap_or_default();
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                part.calls.push(ToolCall::new(id, name, input));
            }
            Some("thinking") => part.content.push(ContentBlock::Thinking {
                text: json::str_at(block, "thinking")
                    .unwrap_or_default()
                    .to_owned(),
                signature: json::str_at(block, "signature").map(str::to_owned),
            }),
            _ => part.content.extend(content_block(block, builder)?),
        }
    }
    Ok(part)
}

/// Content as blocks: a string is one text block, null none, an array its blocks.
fn content_blocks(
    content: &Value,
    builder: &mut TranscriptBuilder,
) -> Result<Vec<ContentBlock>, String> {
    match content {
        Value::Null => Ok(Vec::new()),
        Value::String(text) => Ok(vec![ContentBlock::text(text.as_str())]),
        Value::Array(blocks) => {
            let mut out = Vec::new();
            for block in blocks {
                out.extend(content_block(block, builder)?);
            }
            Ok(out)
        }
        other => Err(format!("content is neither text nor blocks: {other}")),
    }
}

/// One text or image block; other types are skipped and counted.
fn content_block(
    block: &Value,
    builder: &mut TranscriptBuilder,
) -> Result<Option<ContentBlock>, String> {
    let kind = json::str_at(block, "type").ok_or("a content block without \"type\"")?;
    Ok(match kind {
        "text" => Some(ContentBlock::text(
            json::str_at(block, "text").unwrap_or_default(),
        )),
        "image" => {
            let source = block.get("source").unwrap_or(&Value::Null);
            let data = json::str_at(source, "data").or_else(|| json::str_at(source, "url"));
            Some(ContentBlock::Image {
                media_type: json::str_at(source, "media_type")
                    .unwrap_or_default()
                    .to_owned(),
                data: data.unwrap_or_default().to_owned(),
            })
        }
        other => {
            builder.skip_block(other);
            None
        }
    })
}

/// Messages as an Anthropic Messages request body: `{"system": ..., "messages": [...]}`
/// (`system` only when there are leading system messages). Consecutive tool results
/// become one user message; tool-call arguments that are not an object are wrapped as
/// `{"input": value}`, as `tool_use` needs an object.
///
/// ```
/// use ctxmem::*;
/// let call = ToolCall::new("c1", "ls", serde_json::json!({}));
/// let history = [
///     Message::system("Be brief."),
///     Message::assistant_with_tool_calls("", vec![call.clone(), ToolCall { id: "c2".into(), ..call }]),
///     Message::tool_result("c1", "a.rs"),
///     Message::tool_result("c2", "b.rs"),
/// ];
/// let body = to_anthropic(&history);
/// assert_eq!(body["system"], "Be brief.");
/// assert_eq!(body["messages"].as_array().unwrap().len(), 2);
/// assert_eq!(body["messages"][1]["content"][1]["tool_use_id"], "c2");
/// ```
pub fn to_anthropic(messages: &[Message]) -> Value {
    let leading = messages
        .iter()
        .take_while(|m| m.role() == Role::System)
        .count();
    let mut out: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    for message in &messages[leading..] {
        if message.role() == Role::Tool {
            results.push(tool_result_block(message));
            continue;
        }
        if !results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
        }
        out.push(match message.role() {
            Role::Assistant => json!({"role": "assistant", "content": assistant_blocks(message)}),
            _ => json!({"role": "user", "content": blocks_json(message.content())}),
        });
    }
    if !results.is_empty() {
        out.push(json!({"role": "user", "content": results}));
    }
    let mut body = Map::new();
    if leading > 0 {
        let system: Vec<String> = messages[..leading].iter().map(Message::text).collect();
        body.insert("system".into(), Value::String(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(out));
    Value::Object(body)
}

fn tool_result_block(message: &Message) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": message.tool_call_id().unwrap_or_default(),
        "content": blocks_json(message.content()),
    });
    if message.is_error() {
        block["is_error"] = Value::Bool(true);
    }
    block
}

fn assistant_blocks(message: &Message) -> Vec<Value> {
    let mut blocks = blocks_json(message.content());
    blocks.extend(message.tool_calls().iter().map(|call| {
        let input = match &call.arguments {
            Value::Object(_) => call.arguments.clone(),
            Value::Null => json!({}),
            other => json!({ "input": other }),
        };
        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
    }));
    blocks
}

fn blocks_json(content: &[ContentBlock]) -> Vec<Value> {
    content.iter().map(block_json).collect()
}

fn block_json(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Json { value } => json!({"type": "text", "text": value.to_string()}),
        ContentBlock::Image { data, .. } if is_url(data) => {
            json!({"type": "image", "source": {"type": "url", "url": data}})
        }
        ContentBlock::Image { media_type, data } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        ContentBlock::Thinking { text, signature } => {
            let mut block = json!({"type": "thinking", "thinking": text});
            if let Some(signature) = signature {
                block["signature"] = Value::String(signature.clone());
            }
            block
        }
    }
}

/// Whether image data is a URL rather than base64.
pub(crate) fn is_url(data: &str) -> bool {
    data.starts_with("http://") || data.starts_with("https://") || data.starts_with("data:")
}
