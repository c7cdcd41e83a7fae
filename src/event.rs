//! What a memory reports to its `on_event` callbacks.

use std::path::PathBuf;

use chrono::Duration;

use crate::message::MessageId;

/// Why the cutoff went back to `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetReason {
    /// [`ContextMemory::clear`](crate::ContextMemory::clear) emptied the history.
    Clear,
    /// [`ContextMemory::apply_full_compaction`](crate::ContextMemory::apply_full_compaction)
    /// installed a summary.
    FullCompaction,
}

/// Something worth logging happened.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// The cutoff advanced after an idle gap, or in a warm batch fired by a
    /// [`TokenBudget`](crate::TokenBudget) (then `idle` is below the threshold).
    MicroCompacted {
        /// The cutoff before (`None`: nothing was cleared yet).
        previous_cutoff: Option<MessageId>,
        /// The new cutoff: tool results with smaller ids may now be cleared.
        cutoff: MessageId,
        /// Tool results this advance cleared.
        cleared: usize,
        /// Estimated tokens of the projected history before the advance.
        from_tokens: u64,
        /// Estimated tokens of the projected history after it.
        to_tokens: u64,
        /// Time since the last assistant message.
        idle: Duration,
    },
    /// The cutoff went back to `None`.
    CutoffReset {
        /// Why.
        reason: ResetReason,
    },
    /// A stateless rewrite (the middleware) cleared bodies.
    Compressed {
        /// Estimated tokens before.
        from_tokens: u64,
        /// Estimated tokens after.
        to_tokens: u64,
    },
    /// A store found a torn last record (the trace of a crash mid-write) and cut it off.
    TailTruncated {
        /// The log file.
        path: PathBuf,
        /// Bytes dropped from its end.
        dropped_bytes: u64,
    },
}
