//! Per-request middlewares that rewrite the outgoing message list (the tinyagents
//! contract), and [`MicrocompactMiddleware`], which clears old tool-result bodies.

use std::fmt;

use parking_lot::Mutex;

use crate::clearing::{self, Clearable, ClearedCalls};
use crate::event::Event;
use crate::message::Message;
use crate::micro::{Keep, MicroCompactionConfig};
use crate::tokens::CharEstimator;

/// A step that rewrites the message list before each model request.
pub trait Middleware: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &str;

    /// Rewrites `messages` in place before they go to the model; may report what it
    /// did in `events`.
    fn before_model(&self, messages: &mut Vec<Message>, events: &mut Vec<Event>);
}

impl<M: Middleware + ?Sized> Middleware for Box<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn before_model(&self, messages: &mut Vec<Message>, events: &mut Vec<Event>) {
        (**self).before_model(messages, events)
    }
}

impl<M: Middleware + ?Sized> Middleware for std::sync::Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn before_model(&self, messages: &mut Vec<Message>, events: &mut Vec<Event>) {
        (**self).before_model(messages, events)
    }
}

/// Middlewares run in the order they were pushed.
///
/// ```
/// use ctxmem::*;
/// let mut stack = MiddlewareStack::new();
/// stack.push(MicrocompactMiddleware::new(1, "[cleared]").with_events(true));
/// let mut messages = vec![
///     Message::tool_result("t1", "a long listing ".repeat(50)),
///     Message::tool_result("t2", "another listing ".repeat(50)),
/// ];
/// let events = stack.run_before_model(&mut messages);
/// assert_eq!(messages[0].text(), "[cleared]");
/// assert!(matches!(events[..], [Event::Compressed { .. }]));
/// ```
#[derive(Default)]
pub struct MiddlewareStack {
    middlewares: Vec<Box<dyn Middleware>>,
}

impl MiddlewareStack {
    /// An empty stack.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a middleware; it runs after those pushed before it.
    pub fn push(&mut self, middleware: impl Middleware + 'static) {
        self.middlewares.push(Box::new(middleware));
    }

    /// Runs every middleware's [`before_model`](Middleware::before_model) in order and
    /// returns the events they reported, in order.
    pub fn run_before_model(&self, messages: &mut Vec<Message>) -> Vec<Event> {
        let mut events = Vec::new();
        for middleware in &self.middlewares {
            middleware.before_model(messages, &mut events);
        }
        events
    }

    /// The middlewares' names, in running order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.middlewares.iter().map(|m| m.name())
    }

    /// How many middlewares are stacked.
    pub fn len(&self) -> usize {
        self.middlewares.len()
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        self.middlewares.is_empty()
    }
}

impl fmt::Debug for MiddlewareStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// How many newly clearable tool results must pile up before a batching
/// [`MicrocompactMiddleware`] moves its boundary. See
/// [`with_batching`](MicrocompactMiddleware::with_batching).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batch {
    /// At least this many results (0 counts as 1).
    Results(usize),
    /// Results whose bodies add up to at least this many estimated tokens (0 counts as 1).
    Tokens(u64),
}

impl Batch {
    fn reached(self, pending: &[Clearable]) -> bool {
        match self {
            Batch::Results(n) => pending.len() >= n.max(1),
            Batch::Tokens(n) => {
                !pending.is_empty() && pending.iter().map(|c| c.tokens).sum::<u64>() >= n.max(1)
            }
        }
    }
}

/// The state of a batching middleware: its batch size and the calls it cleared.
#[derive(Debug)]
struct Batching {
    batch: Batch,
    cleared: Mutex<ClearedCalls>,
}

/// Clears the bodies of all tool results but the `keep_recent` most recent ones, before
/// each model request (tinyagents' `MicrocompactMiddleware`).
///
/// Each result keeps its `tool_call_id`, no message is dropped, and a body that already
/// is the placeholder is left alone, so repeated passes converge. With at most
/// `keep_recent` tool results it does nothing. The cleared form is the one
/// [`ContextMemory`](crate::ContextMemory) sends.
///
/// By default it is stateless and its boundary moves on every call once past
/// `keep_recent`; [`with_batching`](Self::with_batching) trades a little context for
/// prompt-cache hits.
///
/// ```
/// use ctxmem::*;
/// let middleware = MicrocompactMiddleware::new(1, "[cleared]");
/// let mut messages = vec![
///     Message::user("list both folders"),
///     Message::tool_result("t1", "src/ lib.rs main.rs"),
///     Message::tool_result("t2", "tests/ main.rs"),
/// ];
/// let mut events = Vec::new();
/// middleware.before_model(&mut messages, &mut events);
/// assert_eq!(messages[1].text(), "[cleared]");
/// assert_eq!(messages[1].tool_call_id(), Some("t1"));
/// assert_eq!(messages[2].text(), "tests/ main.rs");
/// assert!(events.is_empty()); // events are off by default
/// ```
#[derive(Debug)]
pub struct MicrocompactMiddleware {
    keep_recent: usize,
    /// The shared clearing rule, set to clear every tool result before the boundary.
    rules: MicroCompactionConfig,
    events: bool,
    batching: Option<Batching>,
}

impl MicrocompactMiddleware {
    /// Keeps the `keep_recent` most recent tool results verbatim (counted in tool
    /// results, not messages) and clears the bodies of the others to `placeholder`.
    pub fn new(keep_recent: usize, placeholder: impl Into<String>) -> Self {
        MicrocompactMiddleware {
            keep_recent,
            rules: MicroCompactionConfig {
                keep_recent: Keep::ToolResults(keep_recent),
                min_tokens: 0,
                placeholder: placeholder.into(),
                ..MicroCompactionConfig::default()
            },
            events: false,
            batching: None,
        }
    }

    /// Whether a pass that cleared something reports one [`Event::Compressed`] with the
    /// estimated tokens of the whole list before and after. Off by default: a silent
    /// rewrite.
    pub fn with_events(mut self, events: bool) -> Self {
        self.events = events;
        self
    }

    /// Moves the boundary only in batches: results past `keep_recent` stay verbatim
    /// until `batch` of them are clearable, then all of those are cleared at once, and
    /// what was cleared stays cleared on later calls (the middleware remembers their
    /// `tool_call_id`s, so use one middleware per conversation).
    ///
    /// The trade-off: the default keeps exactly `keep_recent` results, but once past
    /// it every request clears one more body, which changes the prompt prefix at that
    /// body and turns the provider's cache hits after it into cache writes, on every
    /// request. With batching, up to `keep_recent + n - 1` results (for
    /// `Batch::Results(n)`) are sent verbatim, so requests are somewhat larger, but the
    /// prefix only changes once per batch and the requests in between re-read it
    /// from the cache. For a boundary that moves only when the cache has expired
    /// anyway (an idle gap), use [`MicroCompactor`](crate::MicroCompactor) or
    /// [`ContextMemory`](crate::ContextMemory) instead.
    pub fn with_batching(mut self, batch: Batch) -> Self {
        self.batching = Some(Batching {
            batch,
            cleared: Mutex::new(ClearedCalls::default()),
        });
        self
    }

    /// How many recent tool results stay verbatim.
    pub fn keep_recent(&self) -> usize {
        self.keep_recent
    }

    /// The text cleared bodies become.
    pub fn placeholder(&self) -> &str {
        &self.rules.placeholder
    }

    /// The batch size, when batching is on.
    pub fn batching(&self) -> Option<Batch> {
        self.batching.as_ref().map(|b| b.batch)
    }

    /// The indices of the results to clear in this pass.
    fn to_clear(&self, messages: &[Message]) -> Vec<usize> {
        let pending = clearing::clearable(&self.rules, &CharEstimator, messages);
        let Some(batching) = &self.batching else {
            return pending.iter().map(|c| c.index).collect();
        };
        let mut cleared = batching.cleared.lock();
        let pending: Vec<Clearable> = pending
            .into_iter()
            .filter(|c| !cleared.contains(&messages[c.index]))
            .collect();
        if batching.batch.reached(&pending) {
            cleared.remember(messages, pending.iter().map(|c| c.index));
        }
        cleared.stale(messages, self.placeholder())
    }
}

impl Middleware for MicrocompactMiddleware {
    fn name(&self) -> &str {
        "microcompact"
    }

    fn before_model(&self, messages: &mut Vec<Message>, events: &mut Vec<Event>) {
        let indices = self.to_clear(messages);
        if indices.is_empty() {
            return;
        }
        let from_tokens = self
            .events
            .then(|| clearing::total_tokens(&CharEstimator, messages));
        let changed = clearing::clear_at(messages, indices, &self.rules.placeholder);
        if let (Some(from_tokens), true) = (from_tokens, changed > 0) {
            events.push(Event::Compressed {
                from_tokens,
                to_tokens: clearing::total_tokens(&CharEstimator, messages),
            });
        }
    }
}
