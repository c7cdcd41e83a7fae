//! Micro compaction: the configuration, the cutoff rule and the pure projection.
//!
//! Nothing here holds state or does I/O. [`ContextMemory`](crate::ContextMemory) and
//! the harness adapters keep the state and call these rules.

use chrono::{DateTime, Duration, Utc};

use crate::message::{ContentBlock, Message, Role};

/// The text that replaces a cleared tool result by default.
pub const DEFAULT_PLACEHOLDER: &str = "[Old tool result content cleared]";

/// How much recent history stays verbatim when the cutoff advances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Keep {
    /// Keep the last `n` messages of any role.
    Messages(usize),
    /// Keep the last `n` tool results (and everything after the oldest of them).
    ToolResults(usize),
}

/// Settings of micro compaction. Build with struct-update syntax:
///
/// ```
/// use ctxmem::*;
/// let config = MicroCompactionConfig { keep_recent: Keep::Messages(4), ..Default::default() };
/// assert_eq!(config.min_tokens, 20);
/// assert_eq!(config.idle_threshold, chrono::Duration::hours(1));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MicroCompactionConfig {
    /// Off means the history is always sent verbatim. Default `true`.
    pub enabled: bool,
    /// What stays verbatim when the cutoff advances. Default `Keep::Messages(10)`.
    pub keep_recent: Keep,
    /// Results whose content estimate is below this stay verbatim. Default 20.
    pub min_tokens: u64,
    /// How long after the last assistant message the prompt cache is taken to have
    /// expired, so that the cutoff may advance. Default 1 hour.
    pub idle_threshold: Duration,
    /// The text a cleared result's content becomes. Default [`DEFAULT_PLACEHOLDER`].
    pub placeholder: String,
    /// Tools whose results are never cleared. Default empty.
    pub exclude_tools: Vec<String>,
    /// Keep results flagged as errors verbatim. Default `false`.
    pub keep_errors: bool,
}

impl Default for MicroCompactionConfig {
    fn default() -> Self {
        MicroCompactionConfig {
            enabled: true,
            keep_recent: Keep::Messages(10),
            min_tokens: 20,
            idle_threshold: Duration::hours(1),
            placeholder: DEFAULT_PLACEHOLDER.to_owned(),
            exclude_tools: Vec::new(),
            keep_errors: false,
        }
    }
}

impl MicroCompactionConfig {
    /// Whether the cache is taken to have expired at `now`: the last assistant message
    /// is at least `idle_threshold` old. A last-assistant time in the future (clock
    /// skew) is not idle; no assistant message at all is not idle either.
    pub fn is_idle(&self, now: DateTime<Utc>, last_assistant_at: Option<DateTime<Utc>>) -> bool {
        match last_assistant_at {
            Some(last) if last <= now => now - last >= self.idle_threshold,
            _ => false,
        }
    }

    /// Whether a tool result with this content estimate and (resolved) tool name is
    /// cleared when it lies before the cutoff.
    pub fn clears(&self, message: &Message, content_tokens: u64, tool_name: Option<&str>) -> bool {
        message.role() == Role::Tool
            && content_tokens >= self.min_tokens
            && !(self.keep_errors && message.is_error())
            && !tool_name.is_some_and(|name| self.exclude_tools.iter().any(|t| t == name))
    }
}

/// Where the cutoff would go if the cache were cold now: the index (into the
/// history) of the first message to keep, or `None` when nothing is old enough.
///
/// `tool_result_positions` lists the indices of the tool results in the history, in
/// order. An index equal to `len` means "keep nothing" (`Keep::…(0)`).
///
/// ```
/// use ctxmem::{candidate_index, Keep};
/// assert_eq!(candidate_index(Keep::Messages(2), 5, &[1, 3]), Some(3));
/// assert_eq!(candidate_index(Keep::Messages(5), 5, &[1, 3]), None);
/// assert_eq!(candidate_index(Keep::ToolResults(1), 5, &[1, 3]), Some(3));
/// assert_eq!(candidate_index(Keep::ToolResults(2), 5, &[1, 3]), None);
/// ```
pub fn candidate_index(keep: Keep, len: usize, tool_result_positions: &[usize]) -> Option<usize> {
    match keep {
        Keep::Messages(n) => (len > n).then(|| len - n),
        Keep::ToolResults(0) => (!tool_result_positions.is_empty()).then_some(len),
        Keep::ToolResults(n) => {
            let results = tool_result_positions.len();
            (results > n).then(|| tool_result_positions[results - n])
        }
    }
}

/// The cleared form of a tool result: same id, role, `tool_call_id`, tool name, error
/// flag and time; the content is exactly one text block holding `placeholder`.
pub fn cleared(message: &Message, placeholder: &str) -> Message {
    if is_placeholder(message, placeholder) {
        return message.clone();
    }
    message
        .clone()
        .with_content(vec![ContentBlock::text(placeholder)])
}

/// Whether a message's content already is exactly the placeholder.
pub fn is_placeholder(message: &Message, placeholder: &str) -> bool {
    matches!(message.content(), [ContentBlock::Text { text }] if text == placeholder)
}
