//! The compaction hook a react loop calls after tool execution (agent-base's
//! `ContextCompaction` contract), and [`MicroCompactor`], its time-aware micro
//! compaction.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use crate::clearing::{self, ClearedCalls, TokenMemo};
use crate::clock::{Clock, SystemClock};
use crate::message::{Message, Role};
use crate::micro::MicroCompactionConfig;
use crate::session::SessionId;
use crate::tokens::{CharEstimator, TokenEstimator};

/// A boxed, `Send` future: what the dyn-compatible async traits of ctxmem return, so
/// that the library needs no async runtime.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What kind of compaction produced an outcome (for logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompactionKind {
    /// Old tool-result bodies were cleared; every message is still there.
    MicroCompaction,
    /// Older messages were replaced by a summary.
    FullCompaction,
}

impl CompactionKind {
    /// A snake_case name for logs: `"micro_compaction"` or `"full_compaction"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CompactionKind::MicroCompaction => "micro_compaction",
            CompactionKind::FullCompaction => "full_compaction",
        }
    }
}

impl fmt::Display for CompactionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The result of a compaction that did something: the messages to install in place of
/// those passed in.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionOutcome {
    /// What happened, for logging.
    pub kind: CompactionKind,
    /// The new message list.
    pub messages: Vec<Message>,
}

/// A compaction hook, called by the agent loop after tool execution. Dyn-compatible:
/// `Box<dyn ContextCompaction>` works, and no async runtime is needed to implement it.
pub trait ContextCompaction: Send + Sync {
    /// Compacts `messages` of `session`, or returns `None` when it skipped (below the
    /// threshold, too few messages, disabled, or nothing would change).
    fn compact<'a>(
        &'a self,
        session_id: &'a SessionId,
        messages: &'a [Message],
    ) -> Pin<Box<dyn Future<Output = Option<CompactionOutcome>> + Send + 'a>>;

    /// The estimated tokens of the history after the last `compact` of this session,
    /// or `None` when it cannot tell (no call yet).
    fn token_count_hint(&self, session_id: &SessionId) -> Option<usize>;
}

/// Time-aware micro compaction behind the [`ContextCompaction`] hook, with the rules of
/// [`ContextMemory`](crate::ContextMemory): the boundary only advances after an idle
/// gap since the last assistant message, when the provider's prompt cache has expired
/// anyway, and what was cleared stays cleared.
///
/// The messages a harness passes need not carry ctxmem ids: per session, the
/// compactor remembers the `tool_call_id`s it cleared. The last assistant time is the
/// latest `at` of the assistant messages passed in; an assistant message without a
/// time counts from when the compactor first saw it, by its clock.
///
/// The gap shows at the first request after a pause, before the model answers: right
/// after tool execution the latest assistant message is fresh. So call `compact` before
/// that request too (as [`ContextMemory::messages`](crate::ContextMemory::messages)
/// advances before each request), not only after tools ran.
///
/// ```
/// use chrono::{Duration, TimeZone, Utc};
/// use ctxmem::*;
///
/// let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap();
/// let clock = ManualClock::new(t0);
/// let config = MicroCompactionConfig { keep_recent: Keep::ToolResults(1), min_tokens: 0, ..Default::default() };
/// let compactor = MicroCompactor::new(config).with_clock(clock.clone());
/// let session = SessionId::new("chat-1")?;
/// let messages = vec![
///     Message::tool_result("t1", "old output").with_time(t0),
///     Message::tool_result("t2", "new output").with_time(t0),
///     Message::assistant("done").with_time(t0),
/// ];
/// let compact = |messages| block_on(compactor.compact(&session, messages));
/// assert_eq!(compact(&messages), None); // the cache is warm
/// clock.advance(Duration::hours(2));
/// let outcome = compact(&messages).unwrap();
/// assert_eq!(outcome.kind, CompactionKind::MicroCompaction);
/// assert_eq!(outcome.messages[0].text(), "[Old tool result content cleared]");
/// assert_eq!(outcome.messages[1].text(), "new output");
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
pub struct MicroCompactor {
    config: MicroCompactionConfig,
    clock: Box<dyn Clock>,
    estimator: Box<dyn TokenEstimator>,
    sessions: Mutex<HashMap<SessionId, SessionState>>,
}

/// What the compactor remembers of one session.
#[derive(Debug, Default)]
struct SessionState {
    cleared: ClearedCalls,
    /// When the assistant messages without a time were first seen, by a hash of their
    /// text and tool calls (equal messages share one list, oldest first).
    first_seen: HashMap<u64, Vec<DateTime<Utc>>>,
    tokens: Option<u64>,
    /// Token estimates, reused while the harness passes the same messages again.
    estimates: TokenMemo,
}

impl SessionState {
    /// The latest assistant time in `messages`, untimed ones counting from when they
    /// were first seen (`now` for new ones). Forgets messages no longer passed in.
    ///
    /// Messages are known by content, not position, so a harness may trim or
    /// summarize the head. Of equal messages, those passed in again are taken to be
    /// the latest ones seen (harnesses append at the end and drop from the start),
    /// and any beyond them are new.
    fn last_assistant_at(
        &mut self,
        messages: &[Message],
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let mut latest = None;
        let mut untimed: HashMap<u64, usize> = HashMap::new();
        for message in messages.iter().filter(|m| m.role() == Role::Assistant) {
            match message.at() {
                Some(at) => latest = latest.max(Some(at)),
                None => *untimed.entry(fingerprint(message)).or_default() += 1,
            }
        }
        let mut seen = HashMap::new();
        for (fingerprint, count) in untimed {
            let mut times = self.first_seen.remove(&fingerprint).unwrap_or_default();
            if count <= times.len() {
                times.drain(..times.len() - count);
            } else {
                times.resize(count, now);
            }
            latest = latest.max(times.iter().max().copied());
            seen.insert(fingerprint, times);
        }
        self.first_seen = seen;
        latest
    }
}

/// A hash of an assistant message's text and tool call ids.
fn fingerprint(message: &Message) -> u64 {
    let mut hasher = DefaultHasher::new();
    message.text().hash(&mut hasher);
    for call in message.tool_calls() {
        call.id.hash(&mut hasher);
    }
    hasher.finish()
}

impl MicroCompactor {
    /// A compactor with these settings, on the system clock.
    pub fn new(config: MicroCompactionConfig) -> Self {
        MicroCompactor {
            config,
            clock: Box::new(SystemClock),
            estimator: Box::new(CharEstimator),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Where "now" comes from (default: [`SystemClock`]).
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// How tokens are estimated (default: [`CharEstimator`]).
    pub fn with_token_estimator(mut self, estimator: impl TokenEstimator + 'static) -> Self {
        self.estimator = Box::new(estimator);
        self
    }

    /// The micro compaction settings.
    pub fn config(&self) -> &MicroCompactionConfig {
        &self.config
    }

    /// Drops what the compactor remembers of `session` (a finished conversation).
    pub fn forget(&self, session: &SessionId) {
        self.sessions.lock().remove(session);
    }

    fn compact_now(&self, session: &SessionId, messages: &[Message]) -> Option<CompactionOutcome> {
        let now = self.clock.now();
        let config = &self.config;
        let mut sessions = self.sessions.lock();
        let state = sessions.entry(session.clone()).or_default();
        let last_assistant_at = state.last_assistant_at(messages, now);
        let mut outcome = None;
        if config.enabled {
            if config.is_idle(now, last_assistant_at) {
                let newly = clearing::clearable(config, &*self.estimator, messages);
                state
                    .cleared
                    .remember(messages, newly.iter().map(|c| c.index));
            }
            let stale = state.cleared.stale(messages, &config.placeholder);
            if !stale.is_empty() {
                let mut compacted = messages.to_vec();
                clearing::clear_at(&mut compacted, stale, &config.placeholder);
                outcome = Some(CompactionOutcome {
                    kind: CompactionKind::MicroCompaction,
                    messages: compacted,
                });
            }
        }
        let sent = outcome.as_ref().map_or(messages, |o| &o.messages);
        state.tokens = Some(state.estimates.total(&*self.estimator, sent));
        outcome
    }
}

impl ContextCompaction for MicroCompactor {
    fn compact<'a>(
        &'a self,
        session_id: &'a SessionId,
        messages: &'a [Message],
    ) -> BoxFuture<'a, Option<CompactionOutcome>> {
        Box::pin(async move { self.compact_now(session_id, messages) })
    }

    fn token_count_hint(&self, session_id: &SessionId) -> Option<usize> {
        let tokens = self.sessions.lock().get(session_id)?.tokens?;
        usize::try_from(tokens).ok()
    }
}

impl fmt::Debug for MicroCompactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MicroCompactor")
            .field("config", &self.config)
            .field("sessions", &self.sessions.lock().len())
            .finish_non_exhaustive()
    }
}
