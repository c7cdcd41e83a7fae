//! Telling a log's format from its name and first lines.

use std::path::Path;

use serde_json::Value;

use super::json;
use super::Format;

/// How many JSONL lines detection looks at before giving up.
const LINES_LOOKED_AT: usize = 50;

/// The format of a log, from its file name (`.traj` is SWE-agent's) and content, or
/// `None` when it is none of them.
///
/// ```
/// use ctxmem::import::{detect, Format};
/// let line = r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{}}"#;
/// assert_eq!(detect(line, "rollout.jsonl".as_ref()), Some(Format::Codex));
/// assert_eq!(detect("hello", "notes.txt".as_ref()), None);
/// ```
pub fn detect(text: &str, path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_string_lossy();
    if name.ends_with(".traj") || name.ends_with(".traj.json") {
        return Some(Format::SweAgent);
    }
    if let Ok(document) = serde_json::from_str::<Value>(text) {
        if let Some(format) = document_format(&document) {
            return Some(format);
        }
    }
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .take(LINES_LOOKED_AT)
        .find_map(|line| line_format(&line))
}

/// The format a JSONL line belongs to.
fn line_format(line: &Value) -> Option<Format> {
    if super::ctxmem::is_message(line) {
        return Some(Format::Ctxmem);
    }
    let gemini_header = line.get("projectHash").is_some() && line.get("startTime").is_some();
    if gemini_header || line.get("$set").is_some() || line.get("$rewindTo").is_some() {
        return Some(Format::Gemini);
    }
    let kind = json::str_at(line, "type")?;
    let codex = [
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
    ];
    let claude = [
        "user",
        "assistant",
        "system",
        "summary",
        "progress",
        "file-history-snapshot",
        "queue-operation",
    ];
    if line.get("payload").is_some() && codex.contains(&kind) {
        Some(Format::Codex)
    } else if kind == "gemini" {
        Some(Format::Gemini)
    } else if claude.contains(&kind)
        && (line.get("sessionId").is_some() || line.get("uuid").is_some())
    {
        Some(Format::ClaudeCode)
    } else {
        None
    }
}

/// The format of a whole-JSON document.
fn document_format(document: &Value) -> Option<Format> {
    match document {
        Value::Array(items) => {
            let first = items.first()?;
            if first.get("source").is_some()
                && (first.get("action").is_some() || first.get("observation").is_some())
            {
                Some(Format::OpenHands)
            } else if first.get("sessionId").is_some() && first.get("messageId").is_some() {
                Some(Format::Gemini)
            } else if first.get("role").is_some() {
                Some(provider_format(items, false))
            } else {
                None
            }
        }
        Value::Object(object) => {
            let has = |key: &str| object.contains_key(key);
            if has("messages") && (has("sessionId") || has("projectHash")) {
                Some(Format::Gemini)
            } else if has("history") || has("trajectory") || has("trajectory_format") {
                Some(Format::SweAgent)
            } else if object.get("events").is_some_and(Value::is_array) {
                Some(Format::OpenHands)
            } else {
                let messages = object.get("messages")?.as_array()?;
                Some(provider_format(messages, has("system")))
            }
        }
        _ => None,
    }
}

/// ctxmem when a message has a recorded time or a ctxmem-only block or tool-call
/// shape; Anthropic when there is a top-level `system` or an Anthropic-only content
/// block; OpenAI otherwise.
fn provider_format(messages: &[Value], top_level_system: bool) -> Format {
    let ctxmem_block = |block: &Value| match json::str_at(block, "type") {
        Some("json") => true,
        Some("thinking") => block.get("text").is_some(),
        Some("image") => block.get("data").is_some(),
        _ => false,
    };
    let ctxmem_call = |call: &Value| call.get("name").is_some() && call.get("function").is_none();
    let ctxmem = messages.iter().any(|message| {
        message.get("at").is_some()
            || array_any(message, "content", ctxmem_block)
            || array_any(message, "tool_calls", ctxmem_call)
    });
    if ctxmem {
        return Format::Ctxmem;
    }
    let anthropic_block = |block: &Value| {
        matches!(
            json::str_at(block, "type"),
            Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking")
        ) || (json::str_at(block, "type") == Some("image") && block.get("source").is_some())
    };
    let anthropic = messages
        .iter()
        .any(|message| array_any(message, "content", anthropic_block));
    if top_level_system || anthropic {
        Format::Anthropic
    } else {
        Format::OpenAi
    }
}

/// Whether the array at `key` has an item for which `test` holds.
fn array_any(value: &Value, key: &str, test: impl Fn(&Value) -> bool) -> bool {
    value
        .get(key)
        .and_then(Value::as_array)
        .is_some_and(|items| items.iter().any(test))
}
