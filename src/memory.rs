//! [`ContextMemory`]: the stored history, its persisted cutoff, and the projection
//! that goes to the model.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::event::{Event, ResetReason};
use crate::message::{Message, MessageId, Role};
use crate::micro::{self, MicroCompactionConfig};
use crate::session::SessionId;
use crate::store::{Record, SessionLog, Store};
use crate::tokens::{CharEstimator, TokenEstimator};

type Listener = Box<dyn Fn(&Event) + Send + Sync>;

/// A conversation's history with time-aware micro compaction.
///
/// Push every message as it happens; before each model request, send
/// [`messages()`](Self::messages). Old tool results come back as a placeholder, but
/// the boundary (the *cutoff*) only advances after an idle gap, when the provider's
/// prompt cache has expired anyway, so requests in a warm stretch share their prefix
/// byte for byte.
///
/// ```
/// use chrono::{Duration, TimeZone, Utc};
/// use ctxmem::*;
///
/// let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap());
/// let memory = ContextMemory::builder()
///     .micro_compaction(MicroCompactionConfig { keep_recent: Keep::Messages(2), ..Default::default() })
///     .clock(clock.clone())
///     .build()?;
/// memory.push(Message::user("What is in main.rs?"))?;
/// let call = ToolCall::new("c1", "read_file", serde_json::json!({"path": "main.rs"}));
/// memory.push(Message::assistant_with_tool_calls("", vec![call]))?;
/// memory.push(Message::tool_result("c1", "fn main() { /* ... */ }".repeat(20)))?;
/// memory.push(Message::assistant("It prints nothing."))?;
/// memory.push(Message::user("Thanks!"))?;
///
/// // While the cache is warm, nothing changes.
/// assert_eq!(memory.messages(), memory.history());
///
/// // After an idle hour, the old result is cleared; the stored one is not.
/// clock.advance(Duration::hours(2));
/// let sent = memory.messages();
/// assert_eq!(sent[2].text(), "[Old tool result content cleared]");
/// assert_eq!(sent[2].tool_call_id(), Some("c1"));
/// assert!(memory.original("c1").unwrap().text().starts_with("fn main()"));
/// # Ok::<(), ctxmem::Error>(())
/// ```
pub struct ContextMemory {
    rules: Arc<Rules>,
    clock: Box<dyn Clock>,
    listeners: Vec<Listener>,
    session: Option<SessionId>,
    state: Mutex<State>,
}

/// The fixed rules a memory projects by.
struct Rules {
    config: MicroCompactionConfig,
    estimator: Box<dyn TokenEstimator>,
    placeholder_tokens: u64,
}

impl Rules {
    fn new(config: MicroCompactionConfig, estimator: Box<dyn TokenEstimator>) -> Arc<Self> {
        let placeholder_tokens = estimator.text_tokens(&config.placeholder);
        Arc::new(Rules {
            config,
            estimator,
            placeholder_tokens,
        })
    }
}

/// Token counts of one stored message, computed once at push.
#[derive(Clone, Copy, Debug)]
struct Tokens {
    /// The whole message (never less than `content`).
    message: u64,
    /// Its content blocks only (what clearing saves).
    content: u64,
}

/// Everything behind the lock. `history`, `projected` and `tokens` run in parallel.
struct State {
    rules: Arc<Rules>,
    history: Vec<Message>,
    /// The history under the current cutoff, kept up to date, so that a request
    /// costs one `Arc` clone per message.
    projected: Vec<Message>,
    tokens: Vec<Tokens>,
    /// Indices of the tool results in `history`.
    tool_results: Vec<usize>,
    /// Tool name of each call id seen in assistant messages.
    call_names: HashMap<String, String>,
    /// Index of the first message not yet covered by the cutoff.
    covered: usize,
    cutoff: Option<MessageId>,
    next_id: u64,
    last_assistant_at: Option<DateTime<Utc>>,
    /// Assistant messages (model requests) in `history`: the budget's estimate of
    /// the requests still to come.
    requests: u64,
    projected_tokens: u64,
    log: Option<Box<dyn SessionLog>>,
    poisoned: Option<String>,
}

impl ContextMemory {
    /// An in-memory memory on the system clock.
    pub fn new(config: MicroCompactionConfig) -> Self {
        let rules = Rules::new(config, Box::new(CharEstimator));
        ContextMemory {
            rules: rules.clone(),
            clock: Box::new(SystemClock),
            listeners: Vec::new(),
            session: None,
            state: Mutex::new(State::new(rules)),
        }
    }

    /// A builder for a memory with a clock, listeners or a store.
    pub fn builder() -> ContextMemoryBuilder {
        ContextMemoryBuilder::default()
    }

    /// The micro compaction settings.
    pub fn config(&self) -> &MicroCompactionConfig {
        &self.rules.config
    }

    /// The session this memory persists to, if any.
    pub fn session(&self) -> Option<&SessionId> {
        self.session.as_ref()
    }

    /// The current time by this memory's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Stores a message and returns its new id. A message without a time gets the
    /// clock's now. Fails on a malformed message (a tool result without a
    /// `tool_call_id`, say), on a failed write, or once an earlier write failed.
    pub fn push(&self, message: Message) -> Result<MessageId, Error> {
        message.validate()?;
        let message = match message.at() {
            Some(_) => message,
            None => message.with_time(self.clock.now()),
        };
        let mut state = self.state.lock();
        state.check_writable()?;
        state.check_ids(1)?;
        let id = MessageId::new(state.next_id);
        let record = Record::Message {
            message: message.with_id(Some(id)),
        };
        state.write(&record)?;
        state.apply(record)?;
        Ok(id)
    }

    /// The history to send to the model: first the cutoff advances if the cache has
    /// gone cold (see [`MicroCompactionConfig::is_idle`]) or a configured
    /// [`TokenBudget`](crate::TokenBudget) fires, then the whole history is projected.
    /// Cost is one pointer copy per message, whatever the bodies' size.
    ///
    /// If persisting an advance fails, the old cutoff is kept, the memory is
    /// poisoned and the next write reports it; use [`try_messages`](Self::try_messages)
    /// to see the error here.
    pub fn messages(&self) -> Vec<Message> {
        match self.try_messages() {
            Ok(messages) => messages,
            Err(_) => self.state.lock().projected.clone(),
        }
    }

    /// [`messages`](Self::messages), reporting a failure to persist the advance.
    pub fn try_messages(&self) -> Result<Vec<Message>, Error> {
        let now = self.clock.now();
        let (result, event) = {
            let mut state = self.state.lock();
            match self.advance(&mut state, now) {
                Ok(event) => (Ok(state.projected.clone()), event),
                Err(error) => (Err(error), None),
            }
        };
        if let Some(event) = event {
            self.emit(&event);
        }
        result
    }

    fn advance(&self, state: &mut State, now: DateTime<Utc>) -> Result<Option<Event>, Error> {
        let config = &self.rules.config;
        if !config.enabled {
            return Ok(None);
        }
        let Some(index) =
            micro::candidate_index(config.keep_recent, state.history.len(), &state.tool_results)
        else {
            return Ok(None);
        };
        let candidate = state.id_at(index);
        if state.cutoff.is_some_and(|old| old >= candidate) {
            return Ok(None);
        }
        if !config.is_idle(now, state.last_assistant_at) && !state.budget_fires(index) {
            return Ok(None);
        }
        state.check_writable()?;
        let previous_cutoff = state.cutoff;
        let from_tokens = state.projected_tokens;
        let record = Record::Cutoff { cutoff: candidate };
        state.write(&record)?;
        let cleared = state.set_cutoff(candidate);
        let idle = now - state.last_assistant_at.unwrap_or(now);
        Ok(Some(Event::MicroCompacted {
            previous_cutoff,
            cutoff: candidate,
            cleared,
            from_tokens,
            to_tokens: state.projected_tokens,
            idle,
        }))
    }

    /// Applies the current cutoff to any slice of messages, by id, without advancing
    /// it. Pure: nothing stored changes, and projecting twice gives the same result.
    /// Messages without an id, or at or after the cutoff, pass through unchanged.
    pub fn project(&self, messages: &[Message]) -> Vec<Message> {
        let state = self.state.lock();
        let Some(cutoff) = state.cutoff else {
            return messages.to_vec();
        };
        messages
            .iter()
            .map(|message| match message.id() {
                Some(id) if id < cutoff && message.role() == Role::Tool => {
                    state.project_one(message)
                }
                _ => message.clone(),
            })
            .collect()
    }

    /// The stored messages, never altered by projection.
    pub fn history(&self) -> Vec<Message> {
        self.state.lock().history.clone()
    }

    /// How many messages are stored.
    pub fn len(&self) -> usize {
        self.state.lock().history.len()
    }

    /// Whether no message is stored.
    pub fn is_empty(&self) -> bool {
        self.state.lock().history.is_empty()
    }

    /// The latest time of any assistant message (the maximum, not the last pushed).
    pub fn last_assistant_at(&self) -> Option<DateTime<Utc>> {
        self.state.lock().last_assistant_at
    }

    /// Tool results with ids below the cutoff are cleared; `None` means none are.
    pub fn cutoff(&self) -> Option<MessageId> {
        self.state.lock().cutoff
    }

    /// Estimated tokens of the history as [`messages`](Self::messages) would send it
    /// now, without advancing.
    pub fn projected_tokens(&self) -> u64 {
        self.state.lock().projected_tokens
    }

    /// Empties the history and resets the cutoff and the last assistant time. Ids keep
    /// counting up. Emits [`Event::CutoffReset`] with [`ResetReason::Clear`].
    pub fn clear(&self) -> Result<(), Error> {
        {
            let mut state = self.state.lock();
            state.check_writable()?;
            state.write(&Record::Clear)?;
            state.apply(Record::Clear)?;
        }
        self.emit(&Event::CutoffReset {
            reason: ResetReason::Clear,
        });
        Ok(())
    }

    /// What a summarizer should read: the whole history under the current cutoff,
    /// without advancing it (so it gets the cleared bodies).
    pub fn summarization_input(&self) -> Vec<Message> {
        self.state.lock().projected.clone()
    }

    /// Replaces the history with `replacement` (typically a summary plus a kept tail),
    /// with fresh ids, and resets the cutoff. The last assistant time keeps its value.
    /// Emits [`Event::CutoffReset`] with [`ResetReason::FullCompaction`].
    pub fn apply_full_compaction(&self, replacement: Vec<Message>) -> Result<(), Error> {
        self.install_compaction(replacement, |_| Some(Vec::new()))
            .map(|_| ())
    }

    /// Like [`apply_full_compaction`](Self::apply_full_compaction), for a summary made
    /// while the memory stayed live: `replacement` stands in for `replaced`, which must
    /// still be the first stored messages (same ids), and messages stored after them
    /// are kept after it, all in one step. Returns `false`, changing nothing, when the
    /// history no longer starts with `replaced` (it was cleared or compacted meanwhile).
    pub fn apply_full_compaction_of(
        &self,
        replaced: &[Message],
        replacement: Vec<Message>,
    ) -> Result<bool, Error> {
        self.install_compaction(replacement, |history| {
            let unchanged = history.len() >= replaced.len()
                && replaced.iter().zip(history).all(|(a, b)| a.id() == b.id());
            unchanged.then(|| history[replaced.len()..].to_vec())
        })
    }

    /// Installs `replacement` followed by what `newer` returns for the current history,
    /// unless it returns `None`. Returns whether it installed.
    fn install_compaction(
        &self,
        replacement: Vec<Message>,
        newer: impl FnOnce(&[Message]) -> Option<Vec<Message>>,
    ) -> Result<bool, Error> {
        for message in &replacement {
            message.validate()?;
        }
        let now = self.clock.now();
        {
            let mut state = self.state.lock();
            state.check_writable()?;
            let Some(newer) = newer(&state.history) else {
                return Ok(false);
            };
            state.check_ids(replacement.len() + newer.len())?;
            let messages = replacement
                .into_iter()
                .chain(newer)
                .zip(state.next_id..)
                .map(|(message, id)| {
                    let at = message.at().unwrap_or(now);
                    message.with_id(Some(MessageId::new(id))).with_time(at)
                })
                .collect();
            let record = Record::FullCompaction { messages };
            state.write(&record)?;
            state.apply(record)?;
        }
        self.emit(&Event::CutoffReset {
            reason: ResetReason::FullCompaction,
        });
        Ok(true)
    }

    /// The stored, uncleared result of the tool call `tool_call_id` (the latest, if an
    /// id repeats).
    pub fn original(&self, tool_call_id: &str) -> Option<Message> {
        let state = self.state.lock();
        state
            .tool_results
            .iter()
            .rev()
            .map(|&index| &state.history[index])
            .find(|message| message.tool_call_id() == Some(tool_call_id))
            .cloned()
    }

    fn emit(&self, event: &Event) {
        for listener in &self.listeners {
            listener(event);
        }
    }
}

impl fmt::Debug for ContextMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("ContextMemory")
            .field("session", &self.session)
            .field("messages", &state.history.len())
            .field("cutoff", &state.cutoff)
            .field("last_assistant_at", &state.last_assistant_at)
            .field("config", &self.rules.config)
            .finish_non_exhaustive()
    }
}

impl State {
    fn new(rules: Arc<Rules>) -> Self {
        State {
            rules,
            history: Vec::new(),
            projected: Vec::new(),
            tokens: Vec::new(),
            tool_results: Vec::new(),
            call_names: HashMap::new(),
            covered: 0,
            cutoff: None,
            next_id: 1,
            last_assistant_at: None,
            requests: 0,
            projected_tokens: 0,
            log: None,
            poisoned: None,
        }
    }

    fn check_writable(&self) -> Result<(), Error> {
        match &self.poisoned {
            Some(reason) => Err(Error::Poisoned(reason.clone())),
            None => Ok(()),
        }
    }

    /// Fails when `count` more ids would not fit in a `u64` (a hostile log can set the
    /// counter near the end), so that nothing is logged that replay would refuse.
    fn check_ids(&self, count: usize) -> Result<(), Error> {
        u64::try_from(count)
            .ok()
            .and_then(|count| self.next_id.checked_add(count))
            .map(|_| ())
            .ok_or_else(|| Error::Invalid("the message id counter is exhausted".into()))
    }

    /// Persists a record; a failure poisons the memory.
    fn write(&mut self, record: &Record) -> Result<(), Error> {
        let Some(log) = self.log.as_mut() else {
            return Ok(());
        };
        log.append(record).inspect_err(|error| {
            self.poisoned = Some(error.to_string());
        })
    }

    /// The id of the message at `index`, or the next id when `index == len`.
    fn id_at(&self, index: usize) -> MessageId {
        self.history
            .get(index)
            .and_then(Message::id)
            .unwrap_or(MessageId::new(self.next_id))
    }

    /// Applies one record to the in-memory state (after it was persisted, or while
    /// replaying a log).
    fn apply(&mut self, record: Record) -> Result<(), Error> {
        match record {
            Record::Message { message } => self.append(message)?,
            Record::Cutoff { cutoff } => {
                self.set_cutoff(cutoff);
            }
            Record::Clear => {
                self.reset();
                self.last_assistant_at = None;
            }
            Record::FullCompaction { messages } => {
                // The last assistant time keeps its value, whatever the replacement holds.
                let last_assistant_at = self.last_assistant_at;
                self.reset();
                for message in messages {
                    self.append(message)?;
                }
                self.last_assistant_at = last_assistant_at;
            }
            Record::Snapshot {
                next_id,
                last_assistant_at,
            } => {
                self.next_id = self.next_id.max(next_id);
                // Exact, not the maximum: it follows the live messages, whose own times
                // a full compaction did not count.
                self.last_assistant_at = last_assistant_at;
            }
        }
        Ok(())
    }

    /// The records that rebuild this state and nothing more (see
    /// [`live_records`](crate::live_records)).
    fn into_live_records(self) -> Vec<Record> {
        let mut records: Vec<Record> = self
            .history
            .into_iter()
            .map(|message| Record::Message { message })
            .collect();
        records.extend(self.cutoff.map(|cutoff| Record::Cutoff { cutoff }));
        records.push(Record::Snapshot {
            next_id: self.next_id,
            last_assistant_at: self.last_assistant_at,
        });
        records
    }

    /// Drops the history and the cutoff; keeps the id counter and the last assistant time.
    fn reset(&mut self) {
        self.history.clear();
        self.projected.clear();
        self.tokens.clear();
        self.tool_results.clear();
        self.call_names.clear();
        self.covered = 0;
        self.cutoff = None;
        self.requests = 0;
        self.projected_tokens = 0;
    }

    fn append(&mut self, message: Message) -> Result<(), Error> {
        let id = message
            .id()
            .ok_or_else(|| Error::Invalid("a stored message has no id".into()))?;
        if id.get() < self.next_id {
            return Err(Error::Invalid(format!(
                "message id {id} is not above the last one stored"
            )));
        }
        let next_id = id.get().checked_add(1).ok_or_else(|| {
            Error::Invalid(format!("message id {id} leaves no id for the next one"))
        })?;
        // Each body is estimated once; the whole message is its content plus its calls,
        // so clearing the content never takes the projected total below zero.
        let content = self.rules.estimator.content_tokens(&message);
        let tokens = Tokens {
            message: content + self.rules.estimator.tool_call_tokens(&message),
            content,
        };
        match message.role() {
            Role::Assistant => {
                self.requests += 1;
                self.last_assistant_at = self.last_assistant_at.max(message.at());
                for call in message.tool_calls() {
                    self.call_names.insert(call.id.clone(), call.name.clone());
                }
            }
            Role::Tool => self.tool_results.push(self.history.len()),
            Role::System | Role::User => {}
        }
        self.next_id = next_id;
        self.projected_tokens += tokens.message;
        self.tokens.push(tokens);
        self.projected.push(message.clone());
        self.history.push(message);
        Ok(())
    }

    /// Moves the cutoff to `cutoff` (if it is higher) and clears the newly covered
    /// tool results. Returns how many it cleared.
    fn set_cutoff(&mut self, cutoff: MessageId) -> usize {
        if self.cutoff.is_some_and(|old| old >= cutoff) {
            return 0;
        }
        self.cutoff = Some(cutoff);
        self.next_id = self.next_id.max(cutoff.get());
        let end = self
            .history
            .partition_point(|m| m.id().is_some_and(|id| id < cutoff));
        self.cover(end)
    }

    /// Indices in `covered..end` of the tool results that moving the cutoff to `end`
    /// would clear.
    fn clearable(&self, end: usize) -> Vec<usize> {
        (self.covered..end)
            .filter(|&index| {
                let message = &self.history[index];
                let content = self.tokens[index].content;
                self.rules
                    .config
                    .clears(message, content, self.tool_name(message))
            })
            .collect()
    }

    /// Clears the clearable tool results in `covered..end` and marks them covered.
    fn cover(&mut self, end: usize) -> usize {
        let placeholder_tokens = self.rules.placeholder_tokens;
        let clearable = self.clearable(end);
        for &index in &clearable {
            let message = &self.history[index];
            self.projected[index] = micro::cleared(message, &self.rules.config.placeholder);
            self.projected_tokens =
                self.projected_tokens - self.tokens[index].content + placeholder_tokens;
        }
        self.covered = self.covered.max(end);
        clearable.len()
    }

    /// Whether the configured [`TokenBudget`](crate::TokenBudget) fires a warm batch
    /// that moves the cutoff to history index `end`; `false` without a budget.
    fn budget_fires(&self, end: usize) -> bool {
        let Some(budget) = self.rules.config.budget else {
            return false;
        };
        if self.projected_tokens <= budget.max_tokens {
            return false;
        }
        let clearable = self.clearable(end);
        let Some(&first) = clearable.first() else {
            return false;
        };
        let placeholder_tokens = self.rules.placeholder_tokens;
        let saved = clearable
            .iter()
            .map(|&index| {
                self.tokens[index]
                    .content
                    .saturating_sub(placeholder_tokens)
            })
            .sum();
        // Nothing from `covered` on is cleared yet, so these are the projected tokens.
        let suffix_before = self.tokens[first..].iter().map(|t| t.message).sum();
        budget.fires(self.projected_tokens, saved, suffix_before, self.requests)
    }

    fn tool_name<'a>(&'a self, message: &'a Message) -> Option<&'a str> {
        message.tool_name().or_else(|| {
            let call_id = message.tool_call_id()?;
            self.call_names.get(call_id).map(String::as_str)
        })
    }

    /// The projection of one tool result below the cutoff.
    fn project_one(&self, message: &Message) -> Message {
        let Rules {
            config, estimator, ..
        } = &*self.rules;
        let stored = message.id().and_then(|id| {
            self.history
                .binary_search_by_key(&Some(id), Message::id)
                .ok()
        });
        if let Some(index) = stored {
            if self.history[index].ptr_eq(message) || self.projected[index].ptr_eq(message) {
                return self.projected[index].clone();
            }
        }
        let content = match stored {
            Some(index) if self.history[index] == *message => self.tokens[index].content,
            _ => estimator.content_tokens(message),
        };
        if config.clears(message, content, self.tool_name(message)) {
            micro::cleared(message, &config.placeholder)
        } else {
            message.clone()
        }
    }
}

/// Replays `records` and returns the records of the resulting live state: the
/// implementation of [`live_records`](crate::live_records), replaying exactly as a
/// memory does.
pub(crate) fn replay_live(records: impl IntoIterator<Item = Record>) -> Result<Vec<Record>, Error> {
    let rules = Rules::new(MicroCompactionConfig::default(), Box::new(CharEstimator));
    let mut state = State::new(rules);
    for record in records {
        state.apply(record)?;
    }
    Ok(state.into_live_records())
}

/// A record that does not replay, as [`Error::Corrupt`] naming the file and line when
/// the store read the records from one (a record per line), else naming the session.
fn replay_error(error: Error, session: &SessionId, path: Option<&Path>, number: usize) -> Error {
    let message = match error {
        Error::Invalid(message) => message,
        other => other.to_string(),
    };
    match path {
        Some(path) => Error::Corrupt {
            path: path.to_owned(),
            line: number,
            message,
        },
        None => Error::Invalid(format!("session {session}: record {number}: {message}")),
    }
}

/// Builds a [`ContextMemory`]: see [`ContextMemory::builder`].
#[derive(Default)]
pub struct ContextMemoryBuilder {
    config: Option<MicroCompactionConfig>,
    clock: Option<Box<dyn Clock>>,
    estimator: Option<Box<dyn TokenEstimator>>,
    listeners: Vec<Listener>,
    store: Option<Arc<dyn Store>>,
    session: Option<SessionId>,
    records: Option<Vec<Record>>,
}

impl ContextMemoryBuilder {
    /// The micro compaction settings (default: [`MicroCompactionConfig::default`]).
    pub fn micro_compaction(mut self, config: MicroCompactionConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Where "now" comes from (default: [`SystemClock`]).
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Some(Box::new(clock));
        self
    }

    /// How tokens are estimated (default: [`CharEstimator`]).
    pub fn token_estimator(mut self, estimator: impl TokenEstimator + 'static) -> Self {
        self.estimator = Some(Box::new(estimator));
        self
    }

    /// Calls `listener` on every [`Event`]. May be given several times.
    pub fn on_event(mut self, listener: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.listeners.push(Box::new(listener));
        self
    }

    /// Persists to `store` (needs [`session`](Self::session)).
    pub fn store(mut self, store: impl Store + 'static) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The session to persist to and restore from (needs [`store`](Self::store)).
    pub fn session(mut self, session: SessionId) -> Self {
        self.session = Some(session);
        self
    }

    /// Starts from these records (a snapshot read with
    /// [`FileStore::read`](crate::FileStore::read), say) instead of an opened store:
    /// the memory replays them, then lives in memory only, persisting nothing. For
    /// inspecting a session without taking its lock.
    pub fn records(mut self, records: Vec<Record>) -> Self {
        self.records = Some(records);
        self
    }

    /// Builds the memory. With a store, opens the session (taking its lock) and
    /// replays its log.
    pub fn build(self) -> Result<ContextMemory, Error> {
        let config = self.config.unwrap_or_default();
        if config.idle_threshold < chrono::Duration::zero() {
            return Err(Error::Config("idle_threshold must not be negative".into()));
        }
        let estimator = self.estimator.unwrap_or_else(|| Box::new(CharEstimator));
        let rules = Rules::new(config, estimator);
        let mut state = State::new(rules.clone());
        let mut recovery_events = Vec::new();
        match (&self.store, &self.session) {
            (Some(store), Some(session)) => {
                let opened = store.open(session)?;
                for (index, record) in opened.records.into_iter().enumerate() {
                    state.apply(record).map_err(|error| {
                        replay_error(error, session, opened.path.as_deref(), index + 1)
                    })?;
                }
                let mut log = opened.log;
                log.recover()?;
                state.log = Some(log);
                recovery_events = opened.events;
            }
            (Some(_), None) => {
                return Err(Error::Config("a store needs a session id".into()));
            }
            (None, Some(session)) => {
                return Err(Error::Config(format!(
                    "session {session} needs a store to persist to"
                )));
            }
            (None, None) => {}
        }
        if let Some(records) = self.records {
            if state.log.is_some() {
                return Err(Error::Config(
                    "give a store and session, or records, not both".into(),
                ));
            }
            for (index, record) in records.into_iter().enumerate() {
                state
                    .apply(record)
                    .map_err(|error| Error::Invalid(format!("record {}: {error}", index + 1)))?;
            }
        }
        let memory = ContextMemory {
            rules,
            clock: self.clock.unwrap_or_else(|| Box::new(SystemClock)),
            listeners: self.listeners,
            session: self.session,
            state: Mutex::new(state),
        };
        for event in &recovery_events {
            memory.emit(event);
        }
        Ok(memory)
    }
}
