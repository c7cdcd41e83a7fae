//! Token estimates. ctxmem counts once per message, when it is stored.

use crate::message::{ContentBlock, Message};

/// Tokens counted for an image block, whatever its size.
pub const IMAGE_TOKENS: u64 = 2000;

/// Estimates how many tokens a text costs a model.
///
/// The default, [`CharEstimator`], is kimi-code's heuristic. A tokenizer-backed one
/// can be plugged in with [`ContextMemoryBuilder::token_estimator`](crate::ContextMemoryBuilder::token_estimator).
pub trait TokenEstimator: Send + Sync {
    /// Tokens in `text`.
    fn text_tokens(&self, text: &str) -> u64;

    /// Tokens in one content block: text and thinking by their text, JSON by its
    /// serialized text, images at [`IMAGE_TOKENS`].
    fn block_tokens(&self, block: &ContentBlock) -> u64 {
        match block {
            ContentBlock::Text { text } | ContentBlock::Thinking { text, .. } => {
                self.text_tokens(text)
            }
            ContentBlock::Json { value } => self.text_tokens(&value.to_string()),
            ContentBlock::Image { .. } => IMAGE_TOKENS,
        }
    }

    /// Tokens in a message's content blocks (what clearing a tool result saves).
    fn content_tokens(&self, message: &Message) -> u64 {
        message
            .content()
            .iter()
            .map(|block| self.block_tokens(block))
            .sum()
    }

    /// Tokens in a message's tool calls: their names and arguments.
    fn tool_call_tokens(&self, message: &Message) -> u64 {
        message
            .tool_calls()
            .iter()
            .map(|call| {
                self.text_tokens(&call.name) + self.text_tokens(&call.arguments.to_string())
            })
            .sum()
    }

    /// Tokens in the whole message: [`content_tokens`](Self::content_tokens) plus
    /// [`tool_call_tokens`](Self::tool_call_tokens). Override those two, not this.
    fn message_tokens(&self, message: &Message) -> u64 {
        self.content_tokens(message) + self.tool_call_tokens(message)
    }
}

/// kimi-code's estimate: `ceil(ascii_chars / 4) + non_ascii_chars`.
///
/// ```
/// use ctxmem::{CharEstimator, TokenEstimator};
/// assert_eq!(CharEstimator.text_tokens("abcde"), 2);
/// assert_eq!(CharEstimator.text_tokens("héllo"), 1 + 1); // "hllo" is 4 ASCII, "é" is 1
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct CharEstimator;

impl TokenEstimator for CharEstimator {
    fn text_tokens(&self, text: &str) -> u64 {
        let ascii = text.bytes().filter(u8::is_ascii).count() as u64;
        let non_ascii = text.chars().count() as u64 - ascii;
        ascii.div_ceil(4) + non_ascii
    }
}
