//! Full compaction: older messages are replaced by a summary, a recent tail kept
//! verbatim. [`FullCompaction`] runs it on a [`ContextMemory`];
//! [`SummarizingCompactor`] offers it as a [`ContextCompaction`] hook.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use parking_lot::Mutex;

use crate::clearing::{self, TokenMemo};
use crate::compaction::{BoxFuture, CompactionKind, CompactionOutcome, ContextCompaction};
use crate::error::Error;
use crate::memory::ContextMemory;
use crate::message::{Message, Role};
use crate::session::SessionId;
use crate::tokens::{CharEstimator, TokenEstimator};

/// Writes the summary of a run of messages, typically by asking a model.
/// Dyn-compatible: `Box<dyn Summarizer>` works, and no async runtime is needed to
/// implement it.
pub trait Summarizer: Send + Sync {
    /// Summarizes `messages` (oldest first; from [`FullCompaction::compact_memory`]
    /// with old tool results already cleared) into a text, or fails.
    fn summarize<'a>(
        &'a self,
        messages: &'a [Message],
    ) -> Pin<Box<dyn Future<Output = Result<String, Error>> + Send + 'a>>;
}

/// When a full compaction starts: once the history's estimate reaches a threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CompactionTrigger {
    /// At this many estimated tokens.
    Tokens(u64),
    /// At this fraction (in `(0, 1]`) of a context window of `context_window` tokens.
    Fraction {
        /// The share of the window, such as `0.8`.
        fraction: f64,
        /// The model's context window in tokens.
        context_window: u64,
    },
}

impl CompactionTrigger {
    /// The token count at which compaction starts (a fraction rounds up).
    pub fn threshold(self) -> u64 {
        match self {
            CompactionTrigger::Tokens(tokens) => tokens,
            CompactionTrigger::Fraction {
                fraction,
                context_window,
            } => (fraction * context_window as f64).ceil() as u64,
        }
    }

    fn validate(self) -> Result<Self, Error> {
        match self {
            CompactionTrigger::Fraction {
                context_window: 0, ..
            } => Err(Error::Config("the context window must not be zero".into())),
            CompactionTrigger::Fraction { fraction, .. }
                if !(fraction > 0.0 && fraction <= 1.0) =>
            {
                Err(Error::Config(format!(
                    "the trigger fraction must be in (0, 1], not {fraction}"
                )))
            }
            _ => Ok(self),
        }
    }
}

/// The text a summary message starts with by default.
pub const DEFAULT_SUMMARY_PREFIX: &str = "Summary of the earlier conversation:\n\n";

/// The summarization flow: once the history reaches the trigger, everything before the
/// kept tail goes to a [`Summarizer`], and `[summary message] + kept tail` replaces the
/// history.
///
/// - The tail is the last `keep_recent` messages (default 10), moved earlier when
///   needed so that no assistant tool call is separated from its results.
/// - The summary message is a user message: the summary prefix, then the summary.
/// - It aborts (`Ok(None)`) when the result would not be smaller than the history.
/// - If the summarizer fails, nothing is changed and its error is returned.
///
/// ```
/// use ctxmem::*;
///
/// struct FirstWords;
/// impl Summarizer for FirstWords {
///     fn summarize<'a>(&'a self, messages: &'a [Message]) -> BoxFuture<'a, Result<String>> {
///         let words: Vec<String> = messages.iter().map(|m| m.text().chars().take(5).collect()).collect();
///         Box::pin(async move { Ok(words.join(" ")) })
///     }
/// }
///
/// let memory = ContextMemory::new(MicroCompactionConfig::default());
/// for i in 0..6 {
///     memory.push(Message::user(format!("Question {i}: {}", "why? ".repeat(50))))?;
///     memory.push(Message::assistant(format!("Answer {i}: {}", "because. ".repeat(50))))?;
/// }
/// let full = FullCompaction::new(CompactionTrigger::Tokens(500))?.with_keep_recent(2);
/// let outcome = block_on(full.compact_memory(&memory, &FirstWords))?.expect("over the trigger");
/// assert_eq!(outcome.kind, CompactionKind::FullCompaction);
/// assert_eq!(memory.len(), 3); // the summary and the last two messages
/// assert!(memory.history()[0].text().starts_with(DEFAULT_SUMMARY_PREFIX));
/// # // Any executor works; this future is ready at once.
/// # fn block_on<F: std::future::Future>(future: F) -> F::Output {
/// #     struct Noop;
/// #     impl std::task::Wake for Noop { fn wake(self: std::sync::Arc<Self>) {} }
/// #     let waker = std::sync::Arc::new(Noop).into();
/// #     let mut cx = std::task::Context::from_waker(&waker);
/// #     let mut future = std::pin::pin!(future);
/// #     loop {
/// #         if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
/// #             return output;
/// #         }
/// #     }
/// # }
/// # Ok::<(), ctxmem::Error>(())
/// ```
pub struct FullCompaction {
    trigger: CompactionTrigger,
    keep_recent: usize,
    summary_prefix: String,
    estimator: Box<dyn TokenEstimator>,
}

impl FullCompaction {
    /// A full compaction that starts at `trigger`, keeps the last 10 messages and uses
    /// [`DEFAULT_SUMMARY_PREFIX`]. Fails on a zero context window or a fraction
    /// outside `(0, 1]`.
    pub fn new(trigger: CompactionTrigger) -> Result<Self, Error> {
        Ok(FullCompaction {
            trigger: trigger.validate()?,
            keep_recent: 10,
            summary_prefix: DEFAULT_SUMMARY_PREFIX.to_owned(),
            estimator: Box::new(CharEstimator),
        })
    }

    /// How many recent messages stay verbatim (at least; see [`cut_point`](Self::cut_point)).
    pub fn with_keep_recent(mut self, keep_recent: usize) -> Self {
        self.keep_recent = keep_recent;
        self
    }

    /// The text the summary message starts with.
    pub fn with_summary_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.summary_prefix = prefix.into();
        self
    }

    /// How tokens are estimated (default: [`CharEstimator`]).
    pub fn with_token_estimator(mut self, estimator: impl TokenEstimator + 'static) -> Self {
        self.estimator = Box::new(estimator);
        self
    }

    /// When compaction starts.
    pub fn trigger(&self) -> CompactionTrigger {
        self.trigger
    }

    /// How many recent messages stay verbatim.
    pub fn keep_recent(&self) -> usize {
        self.keep_recent
    }

    /// The text the summary message starts with.
    pub fn summary_prefix(&self) -> &str {
        &self.summary_prefix
    }

    /// The index of the first message kept verbatim, or `None` when nothing would be
    /// summarized. It is `len - keep_recent`, moved earlier until no assistant message
    /// before it has a tool call whose result is at or after it.
    ///
    /// ```
    /// use ctxmem::*;
    /// let call = ToolCall::new("c1", "ls", serde_json::json!({}));
    /// let messages = vec![
    ///     Message::user("list it"),
    ///     Message::assistant_with_tool_calls("", vec![call]),
    ///     Message::tool_result("c1", "a b c"),
    ///     Message::assistant("three files"),
    /// ];
    /// let full = FullCompaction::new(CompactionTrigger::Tokens(0))?.with_keep_recent(2);
    /// assert_eq!(full.cut_point(&messages), Some(1)); // not 2: that would split c1
    /// # Ok::<(), ctxmem::Error>(())
    /// ```
    pub fn cut_point(&self, messages: &[Message]) -> Option<usize> {
        let mut cut = messages.len().checked_sub(self.keep_recent)?;
        let pairs = tool_pairs(messages);
        while let Some(call) = pairs
            .iter()
            .filter(|&&(call, result)| call < cut && cut <= result)
            .map(|&(call, _)| call)
            .min()
        {
            cut = call;
        }
        (cut > 0).then_some(cut)
    }

    /// Runs the flow on `memory`: reads
    /// [`summarization_input`](ContextMemory::summarization_input) (old tool results
    /// cleared), summarizes all but the kept tail, and installs `[summary] + tail`
    /// (the tail as stored, uncleared) with
    /// [`apply_full_compaction`](ContextMemory::apply_full_compaction), which resets
    /// the cutoff. Messages pushed while the summarizer ran are kept after the tail.
    ///
    /// Returns `Ok(None)` when it skipped: below the trigger, nothing before the tail,
    /// not smaller, or the history was cleared or replaced meanwhile. A summarizer
    /// error is returned with the history untouched.
    pub fn compact_memory<'a>(
        &'a self,
        memory: &'a ContextMemory,
        summarizer: &'a dyn Summarizer,
    ) -> BoxFuture<'a, Result<Option<CompactionOutcome>, Error>> {
        Box::pin(async move {
            // The memory keeps its estimate current: below the trigger, no body is
            // read or re-estimated.
            if memory.projected_tokens() < self.trigger.threshold() {
                return Ok(None);
            }
            let sent = memory.summarization_input();
            let stored = memory.history();
            if !same_ids(&sent, &stored) {
                return Ok(None); // changed between the two reads
            }
            let before = self.tokens(&sent);
            let Some(replacement) = self.replacement(&sent, before, &stored, summarizer).await?
            else {
                return Ok(None);
            };
            // Messages pushed while the summarizer ran are kept after the tail.
            if !memory.apply_full_compaction_of(&stored, replacement)? {
                return Ok(None);
            }
            Ok(Some(CompactionOutcome {
                kind: CompactionKind::FullCompaction,
                messages: memory.history(),
            }))
        })
    }

    /// `[summary] + tail` for a history the model sees as `sent` (`before` tokens), whose stored
    /// messages are `stored` (the same messages, possibly with bodies), or `None`
    /// when the flow skips.
    async fn replacement(
        &self,
        sent: &[Message],
        before: u64,
        stored: &[Message],
        summarizer: &dyn Summarizer,
    ) -> Result<Option<Vec<Message>>, Error> {
        if before < self.trigger.threshold() {
            return Ok(None);
        }
        let Some(cut) = self.cut_point(sent) else {
            return Ok(None);
        };
        let tail = &stored[cut..];
        // Even an empty summary would not make it smaller: do not ask for one.
        if self.tokens(tail) + self.tokens(&[self.summary_message("")]) >= before {
            return Ok(None);
        }
        let summary = summarizer.summarize(&sent[..cut]).await?;
        let mut replacement = vec![self.summary_message(&summary)];
        replacement.extend_from_slice(tail);
        if self.tokens(&replacement) >= before {
            return Ok(None);
        }
        Ok(Some(replacement))
    }

    fn summary_message(&self, summary: &str) -> Message {
        Message::user(format!("{}{summary}", self.summary_prefix))
    }

    fn tokens(&self, messages: &[Message]) -> u64 {
        clearing::total_tokens(&*self.estimator, messages)
    }
}

impl fmt::Debug for FullCompaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FullCompaction")
            .field("trigger", &self.trigger)
            .field("keep_recent", &self.keep_recent)
            .field("summary_prefix", &self.summary_prefix)
            .finish_non_exhaustive()
    }
}

/// `(assistant index, result index)` of every tool result whose call is in `messages`
/// (the latest assistant with that call id before the result).
fn tool_pairs(messages: &[Message]) -> Vec<(usize, usize)> {
    let mut calls: HashMap<&str, usize> = HashMap::new();
    let mut pairs = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        match message.role() {
            Role::Assistant => {
                for call in message.tool_calls() {
                    calls.insert(&call.id, index);
                }
            }
            Role::Tool => {
                if let Some(&call) = message.tool_call_id().and_then(|id| calls.get(id)) {
                    pairs.push((call, index));
                }
            }
            Role::System | Role::User => {}
        }
    }
    pairs
}

/// Whether `later` starts with the messages of `earlier`, by id.
fn same_ids(earlier: &[Message], later: &[Message]) -> bool {
    later.len() >= earlier.len() && earlier.iter().zip(later).all(|(a, b)| a.id() == b.id())
}

type ErrorHandler = Box<dyn Fn(&SessionId, &Error) + Send + Sync>;

/// [`FullCompaction`] behind the [`ContextCompaction`] hook, for harnesses that keep
/// their own history: `compact` returns `[summary] + tail` with
/// [`CompactionKind::FullCompaction`], or `None` when it skipped or the summarizer
/// failed (the harness keeps its history; the error goes to
/// [`on_error`](Self::on_error)).
pub struct SummarizingCompactor {
    full: FullCompaction,
    summarizer: Box<dyn Summarizer>,
    tokens: Mutex<HashMap<SessionId, SessionTokens>>,
    on_error: Option<ErrorHandler>,
}

/// What a [`SummarizingCompactor`] keeps of one session: estimates to reuse, and the
/// total of what it last returned (the hint).
#[derive(Debug, Default)]
struct SessionTokens {
    memo: TokenMemo,
    last: u64,
}

impl SummarizingCompactor {
    /// Compacts as `full` says, with `summarizer`.
    pub fn new(full: FullCompaction, summarizer: impl Summarizer + 'static) -> Self {
        SummarizingCompactor {
            full,
            summarizer: Box::new(summarizer),
            tokens: Mutex::new(HashMap::new()),
            on_error: None,
        }
    }

    /// Calls `handler` with each summarizer error (`compact` itself can only return
    /// `None`). Without one, errors are dropped.
    pub fn on_error(
        mut self,
        handler: impl Fn(&SessionId, &Error) + Send + Sync + 'static,
    ) -> Self {
        self.on_error = Some(Box::new(handler));
        self
    }

    /// The full compaction settings.
    pub fn full_compaction(&self) -> &FullCompaction {
        &self.full
    }
}

impl ContextCompaction for SummarizingCompactor {
    fn compact<'a>(
        &'a self,
        session_id: &'a SessionId,
        messages: &'a [Message],
    ) -> BoxFuture<'a, Option<CompactionOutcome>> {
        Box::pin(async move {
            let before = {
                let mut sessions = self.tokens.lock();
                let session = sessions.entry(session_id.clone()).or_default();
                session.last = session.memo.total(&*self.full.estimator, messages);
                session.last
            };
            let replacement = match self
                .full
                .replacement(messages, before, messages, &*self.summarizer)
                .await
            {
                Ok(replacement) => replacement,
                Err(error) => {
                    if let Some(handler) = &self.on_error {
                        handler(session_id, &error);
                    }
                    None
                }
            };
            let outcome = replacement.map(|messages| CompactionOutcome {
                kind: CompactionKind::FullCompaction,
                messages,
            });
            if let Some(outcome) = &outcome {
                let tokens = self.full.tokens(&outcome.messages);
                self.tokens
                    .lock()
                    .entry(session_id.clone())
                    .or_default()
                    .last = tokens;
            }
            outcome
        })
    }

    fn token_count_hint(&self, session_id: &SessionId) -> Option<usize> {
        let tokens = self.tokens.lock().get(session_id)?.last;
        usize::try_from(tokens).ok()
    }
}

impl fmt::Debug for SummarizingCompactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummarizingCompactor")
            .field("full", &self.full)
            .finish_non_exhaustive()
    }
}
