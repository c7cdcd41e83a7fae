//! Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-*.json`), in the legacy
//! single-object form: `{sessionId, messages: [...]}`. Also its prompt log
//! `logs.json`, a list of the user's prompts.
//!
//! - `user` messages become user messages.
//! - `gemini` messages become assistant messages: thoughts (as thinking), text, and
//!   `toolCalls`; each call's `result` becomes a tool result right after it
//!   (an `error` status marks it as an error). `tokens` becomes usage.
//! - Other message types (`info`, `error`, `warning`) are skipped and counted.

use serde_json::Value;

use super::builder::{AssistantPart, TranscriptBuilder};
use super::json::{self, Handled};
use crate::error::Error;
use crate::message::{ContentBlock, Message, ToolCall, Usage};

pub(crate) fn import(text: &str, builder: &mut TranscriptBuilder) -> Result<(), Error> {
    let document = json::document(text, builder)?;
    match &document {
        Value::Array(prompts) => json::each_item(prompts, "prompts", builder, prompt),
        _ => {
            let messages = json::required_array(&document, "messages")
                .map_err(|reason| json::shape_error(builder, reason))?;
            json::each_item(messages, "messages", builder, message)
        }
    }
}

/// One entry of `logs.json`.
fn prompt(entry: &Value, builder: &mut TranscriptBuilder) -> Handled {
    match json::str_at(entry, "type") {
        Some("user") => {
            let text = json::str_at(entry, "message").ok_or("a prompt without \"message\"")?;
            builder.push(json::timed(
                Message::user(text),
                json::time_at(entry, "timestamp"),
            ));
        }
        Some(other) => builder.skip(other),
        None => return Err("a prompt without \"type\"".into()),
    }
    Ok(())
}

fn message(entry: &Value, builder: &mut TranscriptBuilder) -> Handled {
    let at = json::time_at(entry, "timestamp");
    match json::str_at(entry, "type") {
        Some("user") => {
            let content = text_content(entry.get("content").unwrap_or(&Value::Null))?;
            builder.push(json::timed(Message::user("").with_content(content), at));
        }
        Some("gemini") => gemini(entry, at, builder)?,
        Some(other) => builder.skip(other),
        None => return Err("a message without \"type\"".into()),
    }
    Ok(())
}

fn gemini(
    entry: &Value,
    at: Option<chrono::DateTime<chrono::Utc>>,
    builder: &mut TranscriptBuilder,
) -> Handled {
    let mut content: Vec<ContentBlock> = entry
        .get("thoughts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(thought)
        .collect();
    content.extend(text_content(entry.get("content").unwrap_or(&Value::Null))?);
    let calls = entry
        .get("toolCalls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut results = Vec::new();
    let mut tool_calls = Vec::new();
    for call in calls {
        let id = json::required_str(call, "id")?;
        let name = json::str_at(call, "name").unwrap_or_default();
        tool_calls.push(ToolCall::new(
            id,
            name,
            call.get("args").cloned().unwrap_or(Value::Null),
        ));
        if let Some(parts) = call
            .get("result")
            .and_then(Value::as_array)
            .filter(|p| !p.is_empty())
        {
            let is_error = json::str_at(call, "status") == Some("error");
            let body = parts.iter().map(result_text).collect::<Vec<_>>().join("\n");
            let result = Message::tool_result(id, body).with_error(is_error);
            results.push(json::timed(
                result,
                json::time_at(call, "timestamp").max(at),
            ));
        }
    }
    let usage = entry.get("tokens").map(usage);
    builder.assistant(
        None,
        AssistantPart {
            content,
            calls: tool_calls,
            usage,
            at,
        },
    );
    for result in results {
        builder.push(result);
    }
    Ok(())
}

fn thought(thought: &Value) -> ContentBlock {
    let subject = json::str_at(thought, "subject").unwrap_or_default();
    let description = json::str_at(thought, "description").unwrap_or_default();
    ContentBlock::Thinking {
        text: format!("{subject}\n{description}").trim().to_owned(),
        signature: None,
    }
}

/// Text content: a string (none when empty), or a list of `{text}` parts.
fn text_content(content: &Value) -> Result<Vec<ContentBlock>, String> {
    match content {
        Value::Null => Ok(Vec::new()),
        Value::String(text) if text.is_empty() => Ok(Vec::new()),
        Value::String(text) => Ok(vec![ContentBlock::text(text.as_str())]),
        Value::Array(parts) => Ok(parts
            .iter()
            .filter_map(|part| json::str_at(part, "text"))
            .map(ContentBlock::text)
            .collect()),
        other => Err(format!("content is neither text nor parts: {other}")),
    }
}

/// One part of a tool call's result: the function response's output or error, a text
/// part's text, or the part as JSON.
fn result_text(part: &Value) -> String {
    let response = part.get("functionResponse").and_then(|f| f.get("response"));
    let text = response
        .and_then(|r| json::str_at(r, "output").or_else(|| json::str_at(r, "error")))
        .or_else(|| json::str_at(part, "text"));
    match (text, response) {
        (Some(text), _) => text.to_owned(),
        (None, Some(response)) => response.to_string(),
        (None, None) => part.to_string(),
    }
}

/// Gemini `tokens`: `input` includes the `cached` part; thoughts are billed as output.
fn usage(tokens: &Value) -> Usage {
    let cached = json::u64_at(tokens, "cached");
    Usage {
        input_tokens: json::u64_at(tokens, "input").saturating_sub(cached),
        output_tokens: json::u64_at(tokens, "output") + json::u64_at(tokens, "thoughts"),
        cache_read_tokens: cached,
        ..Usage::default()
    }
}
