//! OpenHands event lists (trajectories, `events` exports): a JSON array of events,
//! each an `action` or an `observation`.
//!
//! - An action with `tool_call_metadata` is a tool call of the assistant message for
//!   its model response (actions of one response merge); its text and usage come from
//!   the recorded model response.
//! - An observation becomes the tool result of the action its `cause` points at.
//! - `message` actions become user or assistant messages, a `system` action the
//!   system message. Everything else (state changes, `null` observations, recalls) is
//!   skipped and counted.
//! - Times are local, without a zone; they are read as UTC.

use std::collections::HashMap;

use chrono::DateTime;
use serde_json::Value;

use super::builder::{AssistantPart, TranscriptBuilder};
use super::json::{self, Handled};
use crate::error::Error;
use crate::message::{ContentBlock, Message, ToolCall, Usage};

pub(crate) fn import(text: &str, builder: &mut TranscriptBuilder) -> Result<(), Error> {
    let document = json::document(text, builder)?;
    let events = json::items(&document, "events", builder)?;
    let mut calls_by_event: HashMap<i64, String> = HashMap::new();
    json::each_item(events, "events", builder, |event, builder| {
        if let Some(stamp) = json::str_at(event, "timestamp") {
            if DateTime::parse_from_rfc3339(stamp).is_err() {
                builder.note("OpenHands times carry no zone; they were read as UTC");
            }
        }
        if let Some(action) = json::str_at(event, "action") {
            action_event(event, action, &mut calls_by_event, builder)
        } else if let Some(observation) = json::str_at(event, "observation") {
            observation_event(event, observation, &calls_by_event, builder)
        } else {
            Err("an event that is neither an action nor an observation".into())
        }
    })
}

fn action_event(
    event: &Value,
    action: &str,
    calls_by_event: &mut HashMap<i64, String>,
    builder: &mut TranscriptBuilder,
) -> Handled {
    let at = json::time_at(event, "timestamp");
    let args = event.get("args").unwrap_or(&Value::Null);
    if let Some(metadata) = event.get("tool_call_metadata").filter(|m| m.is_object()) {
        let call_id = json::required_str(metadata, "tool_call_id")?;
        let name = json::str_at(metadata, "function_name").unwrap_or(action);
        let response = metadata.get("model_response").unwrap_or(&Value::Null);
        let key = json::str_at(response, "id")
            .map(str::to_owned)
            .unwrap_or_else(|| format!("call:{call_id}"));
        let mut part = AssistantPart {
            at,
            ..AssistantPart::default()
        };
        if !builder.has_response(&key) {
            let text = response_message(response)
                .and_then(|m| json::str_at(m, "content"))
                .or_else(|| json::str_at(args, "thought"))
                .filter(|text| !text.is_empty());
            part.content.extend(text.map(ContentBlock::text));
            part.usage = response.get("usage").map(usage);
        }
        part.calls.push(ToolCall::new(
            call_id,
            name,
            arguments(response, call_id, args),
        ));
        if let Some(id) = event.get("id").and_then(Value::as_i64) {
            calls_by_event.insert(id, call_id.to_owned());
        }
        builder.assistant(Some(&key), part);
        return Ok(());
    }
    let text = json::str_at(args, "content")
        .or_else(|| json::str_at(event, "message"))
        .unwrap_or_default();
    let mut content = vec![ContentBlock::text(text)];
    content.extend(
        args.get("image_urls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|url| ContentBlock::Image {
                media_type: String::new(),
                data: url.to_owned(),
            }),
    );
    let message = match (action, json::str_at(event, "source")) {
        ("message", Some("user")) => Message::user(""),
        ("message", Some("agent")) => {
            builder.assistant(
                None,
                AssistantPart {
                    content,
                    at,
                    ..AssistantPart::default()
                },
            );
            return Ok(());
        }
        ("system", _) => Message::system(""),
        _ => {
            builder.skip(format!("action:{action}"));
            return Ok(());
        }
    };
    builder.push(json::timed(message.with_content(content), at));
    Ok(())
}

fn observation_event(
    event: &Value,
    observation: &str,
    calls_by_event: &HashMap<i64, String>,
    builder: &mut TranscriptBuilder,
) -> Handled {
    let caused_call = event
        .get("cause")
        .and_then(Value::as_i64)
        .and_then(|cause| calls_by_event.get(&cause))
        .map(String::as_str);
    let recorded_call = event
        .get("tool_call_metadata")
        .and_then(|m| json::str_at(m, "tool_call_id"));
    let Some(call_id) = caused_call.or(recorded_call).filter(|id| !id.is_empty()) else {
        builder.skip(format!("observation:{observation}"));
        return Ok(());
    };
    let content = json::str_at(event, "content").unwrap_or_default();
    let result = Message::tool_result(call_id, content).with_error(observation == "error");
    builder.push(json::timed(result, json::time_at(event, "timestamp")));
    Ok(())
}

fn response_message(response: &Value) -> Option<&Value> {
    response.get("choices")?.get(0)?.get("message")
}

/// The arguments the model wrote for `call_id`, from the recorded response; the
/// action's own `args` when the response does not have them.
fn arguments(response: &Value, call_id: &str, args: &Value) -> Value {
    let recorded = response_message(response)
        .and_then(|m| m.get("tool_calls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|call| json::str_at(call, "id") == Some(call_id))
        .and_then(|call| call.get("function"))
        .and_then(|function| json::str_at(function, "arguments"));
    match recorded {
        Some(text) => json::arguments(text),
        None => args.clone(),
    }
}

/// LiteLLM's usage: `prompt_tokens` includes cache reads and writes.
fn usage(usage: &Value) -> Usage {
    let cache_read = usage
        .get("prompt_tokens_details")
        .map(|details| json::u64_at(details, "cached_tokens"))
        .unwrap_or(0)
        .max(json::u64_at(usage, "cache_read_input_tokens"));
    let cache_write = json::u64_at(usage, "cache_creation_input_tokens");
    Usage {
        input_tokens: json::u64_at(usage, "prompt_tokens").saturating_sub(cache_read + cache_write),
        output_tokens: json::u64_at(usage, "completion_tokens"),
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        ..Usage::default()
    }
}
