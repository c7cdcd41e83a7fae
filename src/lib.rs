//! # ctxmem
//!
//! A time-aware context-memory store for LLM agents. It keeps a conversation's history
//! durably and, before each model request, *projects* it with **micro compaction**:
//! old tool-result bodies become a short placeholder, their `tool_call_id` and pairing
//! kept, recent ones verbatim, nothing stored ever changed.
//!
//! The clearing boundary (the *cutoff*) only advances after an idle gap, when the
//! provider's prompt cache has expired anyway, and is persisted; so every request in
//! a warm stretch re-sends the same bytes and keeps its cache hits.
//!
//! Start with [`ContextMemory`]; give it a [`FileStore`] and a [`SessionId`] to keep
//! the conversation across restarts and crashes.
#![warn(missing_docs)]

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod clearing;
pub mod clock;
pub mod compaction;
pub mod cost;
pub mod error;
pub mod event;
pub mod import;
pub mod memory;
pub mod message;
pub mod micro;
pub mod middleware;
pub mod report;
pub mod session;
pub mod store;
pub mod summarize;
pub mod tokens;

pub use clock::{Clock, ManualClock, SystemClock};
pub use compaction::{
    BoxFuture, CompactionKind, CompactionOutcome, ContextCompaction, MicroCompactor,
};
pub use cost::{
    Agreement, PriceProfile, ReplayOptions, RequestCost, StrategyKind, StrategySettings,
    TokenTrigger, Ttl,
};
pub use error::{Error, Result};
pub use event::{Event, ResetReason};
pub use import::{
    detect, import_file, import_str, replay, replay_into, to_anthropic, to_openai, Advance, Format,
    ImportOptions, ImportReport, Replay, Transcript,
};
pub use memory::{ContextMemory, ContextMemoryBuilder};
pub use message::{ContentBlock, Message, MessageId, Role, ToolCall, Usage};
pub use micro::{candidate_index, Keep, MicroCompactionConfig, TokenBudget, DEFAULT_PLACEHOLDER};
pub use middleware::{Batch, MicrocompactMiddleware, Middleware, MiddlewareStack};
pub use report::{report_session, FileError, Report, ReportOptions, SessionReport, StrategyTotals};
pub use session::SessionId;
pub use store::{live_records, Durability, FileStore, OpenedSession, Record, SessionLog, Store};
pub use summarize::{
    CompactionTrigger, FullCompaction, Summarizer, SummarizingCompactor, DEFAULT_SUMMARY_PREFIX,
};
pub use tokens::{CharEstimator, TokenEstimator};

#[cfg(test)]
mod assert_traits {
    use super::*;
    fn send_sync<T: Send + Sync + 'static>() {}
    #[test]
    fn public_types_are_thread_safe() {
        send_sync::<ContextMemory>();
        send_sync::<Error>();
        send_sync::<Message>();
        send_sync::<MicroCompactor>();
        send_sync::<SummarizingCompactor>();
        send_sync::<MiddlewareStack>();
    }

    // The harness traits are dyn-compatible.
    fn _boxed(_: Box<dyn ContextCompaction>, _: Box<dyn Summarizer>, _: Box<dyn Middleware>) {}
}
