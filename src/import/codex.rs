//! Codex CLI rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`):
//! `{timestamp, type, payload}` lines.
//!
//! - `response_item`s become messages. The items of one response (reasoning summary,
//!   text, `function_call`, `custom_tool_call`, `local_shell_call`, `web_search_call`)
//!   form one assistant message; it ends at the next input item or at the response's
//!   `token_count`. `developer` messages become system messages.
//! - `function_call_output` and `custom_tool_call_output` become tool results.
//! - `event_msg` `token_count` becomes the response's usage, once: Codex writes it
//!   twice per call, and a repeat shows the same running total.
//! - `compacted` is a full compaction: its summary (or its replacement history) starts
//!   the new context.
//! - `session_meta`'s base instructions (the `instructions` of every request) become
//!   the first, system, message.
//! - `turn_context` and other events are skipped and counted.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::builder::{AssistantPart, TranscriptBuilder};
use super::json::{self, Handled};
use crate::error::Error;
use crate::message::{ContentBlock, Message, ToolCall, Usage};

/// Where the reader is: which response the next assistant item belongs to, and the
/// last running token total seen.
#[derive(Default)]
struct State {
    response: usize,
    last_total: Option<Value>,
}

pub(crate) fn import(text: &str, builder: &mut TranscriptBuilder) -> Result<(), Error> {
    let mut state = State::default();
    json::each_line(text, builder, |line, builder| {
        let payload = line.get("payload").unwrap_or(&Value::Null);
        let at = json::time_at(line, "timestamp");
        match json::str_at(line, "type") {
            Some("response_item") => response_item(payload, at, &mut state, builder),
            Some("event_msg") if json::str_at(payload, "type") == Some("token_count") => {
                token_count(payload, &mut state, builder);
                Ok(())
            }
            Some("compacted") => compacted(payload, at, &mut state, builder),
            Some("session_meta") => {
                session_meta(payload, at, &mut state, builder);
                Ok(())
            }
            Some("event_msg") => {
                let kind = json::str_at(payload, "type").unwrap_or("other");
                builder.skip(format!("event_msg:{kind}"));
                Ok(())
            }
            Some(other) => {
                builder.skip(other);
                Ok(())
            }
            None => Err("a line without \"type\"".into()),
        }
    })
}

/// The session's base instructions (sent as `instructions` with every request) become
/// the leading system message.
fn session_meta(
    payload: &Value,
    at: Option<DateTime<Utc>>,
    state: &mut State,
    builder: &mut TranscriptBuilder,
) {
    let instructions = payload
        .get("base_instructions")
        .and_then(|base| json::str_at(base, "text"))
        .or_else(|| json::str_at(payload, "instructions"));
    match instructions {
        Some(text) => input(json::timed(Message::system(text), at), state, builder),
        None => builder.skip("session_meta"),
    }
}

fn response_item(
    item: &Value,
    at: Option<DateTime<Utc>>,
    state: &mut State,
    builder: &mut TranscriptBuilder,
) -> Handled {
    let kind = json::str_at(item, "type").ok_or("a response_item without \"type\"")?;
    let mut part = AssistantPart {
        at,
        ..AssistantPart::default()
    };
    match kind {
        "message" => {
            let content = message_content(item, builder)?;
            let message = match json::str_at(item, "role") {
                Some("assistant") => None,
                Some("user") => Some(Message::user("")),
                Some("developer" | "system") => Some(Message::system("")),
                other => return Err(format!("a message with unknown role {other:?}")),
            };
            match message {
                Some(message) => {
                    input(
                        json::timed(message.with_content(content), at),
                        state,
                        builder,
                    );
                    return Ok(());
                }
                None => part.content = content,
            }
        }
        "reasoning" => part.content.extend(reasoning(item)),
        "function_call" => {
            let arguments = json::str_at(item, "arguments").map(json::arguments);
            part.calls
                .push(call(item, arguments.unwrap_or(Value::Null))?);
        }
        "custom_tool_call" => {
            let input = json::str_at(item, "input").unwrap_or_default();
            part.calls
                .push(call(item, Value::String(input.to_owned()))?);
        }
        "local_shell_call" => {
            let action = item.get("action").cloned().unwrap_or(Value::Null);
            part.calls.push(call(item, action)?);
        }
        "web_search_call" => part.content.push(ContentBlock::Json {
            value: item.clone(),
        }),
        "function_call_output" | "custom_tool_call_output" => {
            let id = json::required_str(item, "call_id")?;
            let output = output_text(item.get("output").unwrap_or(&Value::Null));
            input(
                json::timed(Message::tool_result(id, output), at),
                state,
                builder,
            );
            return Ok(());
        }
        other => {
            builder.skip(format!("response_item:{other}"));
            return Ok(());
        }
    }
    builder.assistant(Some(&state.response.to_string()), part);
    Ok(())
}

/// An input item: it ends the current response.
fn input(message: Message, state: &mut State, builder: &mut TranscriptBuilder) {
    state.response += 1;
    builder.push(message);
}

fn call(item: &Value, arguments: Value) -> Result<ToolCall, String> {
    let id = json::required_str(item, "call_id")?;
    let name = json::str_at(item, "name").unwrap_or(match json::str_at(item, "type") {
        Some("local_shell_call") => "local_shell",
        _ => "",
    });
    Ok(ToolCall::new(id, name, arguments))
}

fn message_content(
    item: &Value,
    builder: &mut TranscriptBuilder,
) -> Result<Vec<ContentBlock>, String> {
    let mut blocks = Vec::new();
    for part in json::required_array(item, "content")? {
        match json::str_at(part, "type") {
            Some("input_text" | "output_text" | "text") => {
                blocks.push(ContentBlock::text(
                    json::str_at(part, "text").unwrap_or_default(),
                ));
            }
            Some("input_image") => blocks.push(ContentBlock::Image {
                media_type: String::new(),
                data: json::str_at(part, "image_url")
                    .unwrap_or_default()
                    .to_owned(),
            }),
            Some(other) => builder.skip_block(other),
            None => return Err("a content part without \"type\"".into()),
        }
    }
    Ok(blocks)
}

/// The reasoning summary as a thinking block (encrypted reasoning is left out).
fn reasoning(item: &Value) -> Option<ContentBlock> {
    let summary: Vec<&str> = item
        .get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| json::str_at(part, "text"))
        .collect();
    (!summary.is_empty()).then(|| ContentBlock::Thinking {
        text: summary.join("\n\n"),
        signature: None,
    })
}

/// A tool output: text as is, anything else (older structured outputs) as JSON text.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn token_count(payload: &Value, state: &mut State, builder: &mut TranscriptBuilder) {
    let Some(info) = payload.get("info").filter(|info| info.is_object()) else {
        builder.skip("event_msg:token_count(no info)");
        return;
    };
    let total = info.get("total_token_usage").cloned();
    if total.is_some() && total == state.last_total {
        builder.skip("event_msg:token_count(repeat)");
        return;
    }
    state.last_total = total;
    let last = info.get("last_token_usage").unwrap_or(&Value::Null);
    let cached = json::u64_at(last, "cached_input_tokens");
    let usage = Usage {
        input_tokens: json::u64_at(last, "input_tokens").saturating_sub(cached),
        output_tokens: json::u64_at(last, "output_tokens"),
        cache_read_tokens: cached,
        ..Usage::default()
    };
    if !builder.usage_on_last_assistant(usage) {
        builder.note("a token_count found no assistant message without usage; it was dropped");
    }
    state.response += 1;
}

fn compacted(
    payload: &Value,
    at: Option<DateTime<Utc>>,
    state: &mut State,
    builder: &mut TranscriptBuilder,
) -> Handled {
    builder.compact_next();
    // The compaction ends the current response: what follows is a new context.
    state.response += 1;
    match payload.get("replacement_history").and_then(Value::as_array) {
        Some(items) => {
            for item in items {
                response_item(item, at, state, builder)?;
            }
            state.response += 1;
        }
        None => {
            let summary = json::str_at(payload, "message").unwrap_or_default();
            input(json::timed(Message::user(summary), at), state, builder);
        }
    }
    Ok(())
}
