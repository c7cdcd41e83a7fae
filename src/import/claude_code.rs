//! Claude Code session JSONL (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! - `user` lines: each `tool_result` block becomes one tool result (with `is_error`);
//!   other content becomes a user message. The top-level `toolUseResult` copy is
//!   ignored: the model never saw it.
//! - `assistant` lines sharing `message.id` (one streamed response) merge into one
//!   assistant message, which keeps the response's `usage`, including the 5m/1h split
//!   of cache writes.
//! - `system` `compact_boundary`, then its `isCompactSummary` user line, is a full
//!   compaction: the summary starts the new context.
//! - Sidechain (subagent) lines are left out of a main session; a file that holds only
//!   sidechain lines (a subagent's own log) is imported whole.
//! - Every other line type (`progress`, `file-history-snapshot`, ...) is skipped and counted.

use serde_json::Value;

use super::anthropic;
use super::builder::TranscriptBuilder;
use super::json::{self, Handled};
use crate::error::Error;
use crate::message::Usage;

pub(crate) fn import(text: &str, builder: &mut TranscriptBuilder) -> Result<(), Error> {
    let keep_sidechains = only_sidechains(text);
    if keep_sidechains {
        builder.note("every line is a sidechain: imported as a subagent's own session");
    }
    json::each_line(text, builder, |line, builder| {
        if is_sidechain(line) && !keep_sidechains {
            builder.skip("sidechain");
            return Ok(());
        }
        match json::str_at(line, "type") {
            Some("user") => user(line, builder),
            Some("assistant") => assistant(line, builder),
            Some("system") if json::str_at(line, "subtype") == Some("compact_boundary") => {
                builder.compact_next();
                Ok(())
            }
            Some("system") => {
                let subtype = json::str_at(line, "subtype").unwrap_or("other");
                builder.skip(format!("system:{subtype}"));
                Ok(())
            }
            Some(other) => {
                builder.skip(other);
                Ok(())
            }
            None if line.is_object() => {
                builder.skip("untyped");
                Ok(())
            }
            None => Err("not a JSON object".into()),
        }
    })
}

fn is_sidechain(line: &Value) -> bool {
    line.get("isSidechain").and_then(Value::as_bool) == Some(true)
}

/// Whether every user or assistant line is a sidechain one (and there is one).
fn only_sidechains(text: &str) -> bool {
    if !text.contains("\"isSidechain\"") {
        return false;
    }
    let mut any = false;
    for line in text.lines() {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if matches!(json::str_at(&line, "type"), Some("user" | "assistant")) {
            if !is_sidechain(&line) {
                return false;
            }
            any = true;
        }
    }
    any
}

fn message_of(line: &Value) -> Result<&Value, String> {
    line.get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| "a user or assistant line without \"message\"".into())
}

fn user(line: &Value, builder: &mut TranscriptBuilder) -> Handled {
    let content = message_of(line)?.get("content").unwrap_or(&Value::Null);
    let messages = anthropic::user_turn(content, json::time_at(line, "timestamp"), builder)?;
    if line.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
        builder.compact_next();
    }
    for message in messages {
        builder.push(message);
    }
    Ok(())
}

fn assistant(line: &Value, builder: &mut TranscriptBuilder) -> Handled {
    let message = message_of(line)?;
    let content = message.get("content").unwrap_or(&Value::Null);
    let mut part = anthropic::assistant_part(content, json::time_at(line, "timestamp"), builder)?;
    part.usage = message.get("usage").map(usage);
    builder.assistant(json::str_at(message, "id"), part);
    Ok(())
}

/// Anthropic `usage`: uncached input, output, cache reads, cache writes and their
/// 5m/1h split (when `cache_creation` gives it).
pub(crate) fn usage(usage: &Value) -> Usage {
    let split = usage.get("cache_creation").unwrap_or(&Value::Null);
    Usage {
        input_tokens: json::u64_at(usage, "input_tokens"),
        output_tokens: json::u64_at(usage, "output_tokens"),
        cache_read_tokens: json::u64_at(usage, "cache_read_input_tokens"),
        cache_write_tokens: json::u64_at(usage, "cache_creation_input_tokens"),
        cache_write_5m_tokens: json::u64_at(split, "ephemeral_5m_input_tokens"),
        cache_write_1h_tokens: json::u64_at(split, "ephemeral_1h_input_tokens"),
    }
}
