//! Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-*.json[l]`):
//! - the legacy single-object form `{sessionId, projectHash, messages: [...]}`;
//! - the newer JSON Lines form: a header line (`sessionId`, `projectHash`, ...), then
//!   message records appended as they are written (a record repeating an `id` replaces
//!   the earlier one), `{"$set": {...}}` updates (a `messages` array there replaces all
//!   messages so far) and `{"$rewindTo": id}` (drops that message and all after it);
//! - the prompt log `logs.json`, a list of the user's prompts.
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
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(prompts)) => json::each_item(&prompts, "prompts", builder, prompt),
        Ok(document) if document.get("messages").is_some() => {
            let messages = json::items(&document, "messages", builder)?;
            json::each_item(messages, "messages", builder, message)
        }
        _ => {
            let messages = replay_lines(text, builder)?;
            json::each_record(&messages, "messages", builder, message)
        }
    }
}

/// The messages a JSON Lines session holds once its updates are applied, in order.
fn replay_lines(text: &str, builder: &mut TranscriptBuilder) -> Result<Vec<Value>, Error> {
    let mut messages: Vec<Value> = Vec::new();
    json::each_line(text, builder, |record, builder| {
        let position = |id: &str, messages: &[Value]| {
            messages
                .iter()
                .position(|m| json::str_at(m, "id") == Some(id))
        };
        if let Some(update) = record.get("$set") {
            if let Some(replacement) = update.get("messages").and_then(Value::as_array) {
                messages.clone_from(replacement);
            }
        } else if let Some(id) = record.get("$rewindTo") {
            let id = id.as_str().ok_or("\"$rewindTo\" is not a message id")?;
            if let Some(index) = position(id, &messages) {
                messages.truncate(index);
            }
        } else if record.get("type").is_some() {
            match json::str_at(record, "id").and_then(|id| position(id, &messages)) {
                Some(index) => messages[index] = record.clone(),
                None => messages.push(record.clone()),
            }
        } else if record.get("sessionId").is_some() {
            builder.skip("session header");
        } else {
            return Err("neither a message, an update nor the session header".into());
        }
        Ok(())
    })?;
    Ok(messages)
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
