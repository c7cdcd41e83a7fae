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
    /// An optional token budget that may also advance the cutoff while the cache is
    /// warm, in one batch, when that pays for the cache rewrite. Default `None`: the
    /// cutoff only advances after an idle gap.
    pub budget: Option<TokenBudget>,
}

/// A token budget for the projected history: when it is exceeded, the cutoff may
/// advance even while the prompt cache is warm, but only as one batch that pays off.
///
/// The batch (everything [`MicroCompactionConfig::keep_recent`] lets go) fires only
/// when all three hold:
/// - the projected history is above `max_tokens`;
/// - it saves at least `min_clear_tokens` (the hysteresis: a fired batch leaves the
///   history far enough under the limit that the next one waits for real growth);
/// - over the expected remaining requests, the cache reads it saves cost more than
///   rewriting the suffix that follows the first cleared result:
///   `remaining × saved × read > suffix_after × write − suffix_before × read`,
///   prices relative to an uncached input token.
///
/// The remaining requests are estimated as the requests so far since the last reset
/// (a session that ran `n` requests is taken to run about `n` more), at least one.
///
/// ```
/// use ctxmem::*;
/// let config = MicroCompactionConfig { budget: Some(TokenBudget::new(100_000)), ..Default::default() };
/// assert_eq!(config.budget.unwrap().min_clear_tokens, 25_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBudget {
    /// Projected-history tokens above which a batch is considered.
    pub max_tokens: u64,
    /// The least a batch must save, in tokens, to fire.
    pub min_clear_tokens: u64,
    /// The price of a cache-read token relative to an uncached one (Anthropic: 0.1).
    pub cache_read_ratio: f64,
    /// The price of a cache-write token relative to an uncached one (Anthropic:
    /// 1.25 with the 5-minute TTL, 2.0 with the 1-hour one).
    pub cache_write_ratio: f64,
}

impl TokenBudget {
    /// A budget of `max_tokens`, a batch of at least a quarter of it, and Anthropic's
    /// 5-minute cache ratios (read 0.1, write 1.25).
    pub fn new(max_tokens: u64) -> Self {
        TokenBudget {
            max_tokens,
            min_clear_tokens: max_tokens / 4,
            cache_read_ratio: 0.1,
            cache_write_ratio: 1.25,
        }
    }

    /// Whether a batch saving `saved` tokens, which turns the `suffix_before` tokens
    /// from the first cleared result on into `suffix_before - saved`, fires on a
    /// history of `projected` tokens with `remaining` requests expected.
    ///
    /// ```
    /// use ctxmem::TokenBudget;
    /// let budget = TokenBudget::new(1000);
    /// // Saves 600 of a 1200-token suffix, read 20 more times: 1200 > 750 - 120.
    /// assert!(budget.fires(1500, 600, 1200, 20));
    /// // Read only once more, the rewrite costs more than it saves.
    /// assert!(!budget.fires(1500, 600, 1200, 1));
    /// ```
    pub fn fires(&self, projected: u64, saved: u64, suffix_before: u64, remaining: u64) -> bool {
        if projected <= self.max_tokens || saved < self.min_clear_tokens.max(1) {
            return false;
        }
        let suffix_after = suffix_before.saturating_sub(saved) as f64;
        let saving = remaining.max(1) as f64 * saved as f64 * self.cache_read_ratio;
        let rewrite =
            suffix_after * self.cache_write_ratio - suffix_before as f64 * self.cache_read_ratio;
        saving > rewrite
    }
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
            budget: None,
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
