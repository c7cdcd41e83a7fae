//! The clearing rules the harness adapters share ([`MicrocompactMiddleware`] and
//! [`MicroCompactor`]): which tool results of a harness's message list lie before the
//! boundary and may be cleared, and the set of cleared call ids that keeps them cleared.
//!
//! The messages a harness passes in need not carry ctxmem ids, so everything here is
//! keyed on `tool_call_id`. The rule itself ([`MicroCompactionConfig::clears`]) and the
//! cleared form ([`micro::cleared`]) are the ones [`ContextMemory`] uses.
//!
//! [`MicrocompactMiddleware`]: crate::MicrocompactMiddleware
//! [`MicroCompactor`]: crate::MicroCompactor
//! [`ContextMemory`]: crate::ContextMemory

use std::collections::{HashMap, HashSet};

use crate::message::{Message, Role};
use crate::micro::{self, MicroCompactionConfig};
use crate::tokens::TokenEstimator;

/// A tool result that may be cleared now.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clearable {
    /// Its index in the message list.
    pub index: usize,
    /// Its content estimate: what clearing it saves, before the placeholder.
    pub tokens: u64,
}

/// The tool results of `messages` that lie before the boundary `config.keep_recent`
/// sets, that `config` clears, and that are not the placeholder already; oldest first.
pub(crate) fn clearable(
    config: &MicroCompactionConfig,
    estimator: &dyn TokenEstimator,
    messages: &[Message],
) -> Vec<Clearable> {
    let results: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, message)| message.role() == Role::Tool)
        .map(|(index, _)| index)
        .collect();
    let Some(boundary) = micro::candidate_index(config.keep_recent, messages.len(), &results)
    else {
        return Vec::new();
    };
    let names = tool_names(messages);
    results
        .into_iter()
        .take_while(|&index| index < boundary)
        .filter_map(|index| {
            let message = &messages[index];
            if micro::is_placeholder(message, &config.placeholder) {
                return None;
            }
            let tokens = estimator.content_tokens(message);
            let name = message
                .tool_name()
                .or_else(|| names.get(message.tool_call_id()?).copied());
            config
                .clears(message, tokens, name)
                .then_some(Clearable { index, tokens })
        })
        .collect()
}

/// Tool names by call id, from the assistant messages' tool calls.
fn tool_names(messages: &[Message]) -> HashMap<&str, &str> {
    messages
        .iter()
        .flat_map(Message::tool_calls)
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect()
}

/// Replaces the content of `messages[index]`, for every given index, with the
/// placeholder. Returns how many messages changed.
pub(crate) fn clear_at(
    messages: &mut [Message],
    indices: impl IntoIterator<Item = usize>,
    placeholder: &str,
) -> usize {
    let mut changed = 0;
    for index in indices {
        let message = &mut messages[index];
        if !micro::is_placeholder(message, placeholder) {
            *message = micro::cleared(message, placeholder);
            changed += 1;
        }
    }
    changed
}

/// Estimated tokens of a whole message list.
pub(crate) fn total_tokens(estimator: &dyn TokenEstimator, messages: &[Message]) -> u64 {
    messages.iter().map(|m| estimator.message_tokens(m)).sum()
}

/// The `tool_call_id`s cleared so far: the boundary of a stateful adapter. What was
/// cleared stays cleared, whatever the list the harness passes next.
#[derive(Debug, Default)]
pub(crate) struct ClearedCalls(HashSet<String>);

impl ClearedCalls {
    /// Remembers the call ids of `messages[index]` for the given indices.
    pub fn remember(&mut self, messages: &[Message], indices: impl IntoIterator<Item = usize>) {
        for index in indices {
            if let Some(id) = messages[index].tool_call_id() {
                self.0.insert(id.to_owned());
            }
        }
    }

    /// Whether `message` is a result of a call cleared before.
    pub fn contains(&self, message: &Message) -> bool {
        message.tool_call_id().is_some_and(|id| self.0.contains(id))
    }

    /// Indices of the tool results whose call was cleared before but which still carry
    /// a body.
    pub fn stale(&self, messages: &[Message], placeholder: &str) -> Vec<usize> {
        messages
            .iter()
            .enumerate()
            .filter(|(_, message)| {
                self.contains(message) && !micro::is_placeholder(message, placeholder)
            })
            .map(|(index, _)| index)
            .collect()
    }
}

/// The token estimate of each message last passed in, by position: reused while a
/// harness passes the same (shared) message again, so bodies are not re-scanned on
/// every call.
#[derive(Debug, Default)]
pub(crate) struct TokenMemo(Vec<(Message, u64)>);

impl TokenMemo {
    /// Estimated tokens of `messages`, estimating only the messages not passed in at
    /// the same position last time.
    pub fn total(&mut self, estimator: &dyn TokenEstimator, messages: &[Message]) -> u64 {
        self.0.truncate(messages.len());
        let mut total = 0;
        for (index, message) in messages.iter().enumerate() {
            let tokens = match self.0.get(index) {
                Some((known, tokens)) if known.ptr_eq(message) => *tokens,
                _ => {
                    let tokens = estimator.message_tokens(message);
                    let entry = (message.clone(), tokens);
                    match self.0.get_mut(index) {
                        Some(slot) => *slot = entry,
                        None => self.0.push(entry),
                    }
                    tokens
                }
            };
            total += tokens;
        }
        total
    }
}
