//! What every importer shares: collecting messages, pairing tool results with their
//! calls, merging the pieces of one assistant response, and keeping the report.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::{Format, ImportReport, Transcript};
use crate::error::Error;
use crate::message::{ContentBlock, Message, Role, ToolCall, Usage};

/// How many orphan call ids a report note lists.
const ORPHANS_LISTED: usize = 5;

/// One piece of an assistant response: a Claude Code line, a Codex response item.
#[derive(Debug, Default)]
pub(crate) struct AssistantPart {
    pub content: Vec<ContentBlock>,
    pub calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub at: Option<DateTime<Utc>>,
}

impl AssistantPart {
    fn is_empty(&self) -> bool {
        self.content.is_empty() && self.calls.is_empty()
    }

    fn into_message(self) -> Message {
        let mut message =
            Message::assistant_with_tool_calls("", self.calls).with_content(self.content);
        if let Some(at) = self.at {
            message = message.with_time(at);
        }
        if let Some(usage) = self.usage {
            message = message.with_usage(usage);
        }
        message
    }
}

/// Collects one transcript.
pub(crate) struct TranscriptBuilder {
    origin: PathBuf,
    lenient: bool,
    messages: Vec<Message>,
    compactions: Vec<usize>,
    report: ImportReport,
    /// Tool name of every call seen so far, by call id.
    call_names: HashMap<String, String>,
    /// Index of the assistant message each merge key (a response id) went to.
    merge_keys: HashMap<String, usize>,
    compact_next: bool,
    orphan_ids: Vec<String>,
}

impl TranscriptBuilder {
    pub fn new(origin: &Path, lenient: bool) -> Self {
        TranscriptBuilder {
            origin: origin.to_owned(),
            lenient,
            messages: Vec::new(),
            compactions: Vec::new(),
            report: ImportReport::default(),
            call_names: HashMap::new(),
            merge_keys: HashMap::new(),
            compact_next: false,
            orphan_ids: Vec::new(),
        }
    }

    /// The file being imported, for error messages.
    pub fn origin(&self) -> &Path {
        &self.origin
    }

    /// Counts one line (or item) read.
    pub fn count_line(&mut self) {
        self.report.lines += 1;
    }

    /// Skips a whole line (or item) of kind `kind`.
    pub fn skip(&mut self, kind: impl Into<String>) {
        self.report.skipped_lines += 1;
        *self.report.skipped.entry(kind.into()).or_default() += 1;
    }

    /// Skips one content block of type `kind` inside a line that is kept.
    pub fn skip_block(&mut self, kind: &str) {
        *self
            .report
            .skipped
            .entry(format!("block:{kind}"))
            .or_default() += 1;
    }

    /// Adds a note to the report, once.
    pub fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        if !self.report.notes.contains(&note) {
            self.report.notes.push(note);
        }
    }

    /// A malformed line or item: an error, or under `lenient` a count.
    pub fn malformed(&mut self, error: Error) -> Result<(), Error> {
        if self.lenient {
            self.report.malformed_lines += 1;
            Ok(())
        } else {
            Err(error)
        }
    }

    /// The next message pushed starts a new context (a full compaction's summary).
    pub fn compact_next(&mut self) {
        self.compact_next = true;
    }

    /// Appends a message. A tool result gets its tool name from its call, or is counted
    /// as an orphan when no call with its id came before it.
    pub fn push(&mut self, message: Message) {
        let message = match message.role() {
            Role::Tool => self.pair(message),
            Role::Assistant => {
                self.register_calls(message.tool_calls());
                message
            }
            Role::System | Role::User => message,
        };
        if std::mem::take(&mut self.compact_next) {
            self.compactions.push(self.messages.len());
        }
        self.messages.push(message);
    }

    fn pair(&mut self, result: Message) -> Message {
        let call_id = result.tool_call_id().unwrap_or_default();
        match self.call_names.get(call_id) {
            Some(name) if result.tool_name().is_none() => result.with_tool_name(name.clone()),
            Some(_) => result,
            None => {
                self.report.orphan_tool_results += 1;
                self.orphan_ids.push(call_id.to_owned());
                result
            }
        }
    }

    fn register_calls(&mut self, calls: &[ToolCall]) {
        for call in calls {
            self.call_names.insert(call.id.clone(), call.name.clone());
        }
    }

    /// Adds a piece of an assistant response. Pieces with the same `key` (a response
    /// id) merge into the message the first one made, whatever came between; a piece
    /// without a key makes its own message. An empty first piece makes none.
    pub fn assistant(&mut self, key: Option<&str>, part: AssistantPart) {
        match key.and_then(|key| self.merge_keys.get(key).copied()) {
            Some(index) => self.merge_into(index, part),
            None if part.is_empty() => {}
            None => {
                if let Some(key) = key {
                    self.merge_keys.insert(key.to_owned(), self.messages.len());
                }
                self.push(part.into_message());
            }
        }
    }

    /// Whether an assistant message was already made for `key`.
    pub fn has_response(&self, key: &str) -> bool {
        self.merge_keys.contains_key(key)
    }

    fn merge_into(&mut self, index: usize, part: AssistantPart) {
        self.register_calls(&part.calls);
        let old = &self.messages[index];
        let mut content = old.content().to_vec();
        content.extend(part.content);
        let mut calls = old.tool_calls().to_vec();
        calls.extend(part.calls);
        let usage = match (old.usage().copied(), part.usage) {
            (Some(a), Some(b)) => Some(max_usage(a, b)),
            (a, b) => a.or(b),
        };
        let merged = AssistantPart {
            content,
            calls,
            usage,
            at: old.at().or(part.at),
        };
        self.messages[index] = merged.into_message();
    }

    /// Puts `usage` on the last assistant message, unless it already has some.
    /// Returns whether it did.
    pub fn usage_on_last_assistant(&mut self, usage: Usage) -> bool {
        let last = self
            .messages
            .iter_mut()
            .rev()
            .find(|m| m.role() == Role::Assistant);
        match last {
            Some(message) if message.usage().is_none() => {
                *message = message.clone().with_usage(usage);
                true
            }
            _ => false,
        }
    }

    pub fn finish(mut self, format: Format) -> Transcript {
        self.report.has_timestamps = self.messages.iter().any(|m| m.at().is_some());
        if !self.report.has_timestamps && !self.messages.is_empty() {
            self.note("the log records no wall-clock times; messages have none");
        }
        let has_tool_results = self.messages.iter().any(Message::is_tool_result);
        if !has_tool_results && self.messages.len() > 2 {
            self.note("no tool results (tool output, if any, is in user messages): micro compaction has nothing to clear");
        }
        let backwards = self
            .messages
            .windows(2)
            .filter(|pair| matches!((pair[0].at(), pair[1].at()), (Some(a), Some(b)) if b < a))
            .count();
        if backwards > 0 {
            self.note(format!(
                "{backwards} message(s) timed earlier than the one before (file order kept)"
            ));
        }
        if !self.orphan_ids.is_empty() {
            let listed: Vec<_> = self
                .orphan_ids
                .iter()
                .take(ORPHANS_LISTED)
                .cloned()
                .collect();
            self.note(format!(
                "{} tool results answer no earlier call: {}",
                self.orphan_ids.len(),
                listed.join(", ")
            ));
        }
        Transcript {
            format,
            messages: self.messages,
            compactions: self.compactions,
            report: self.report,
        }
    }
}

/// Field-wise maximum: the pieces of one streamed response repeat its usage, the later
/// ones with the final output count.
fn max_usage(a: Usage, b: Usage) -> Usage {
    Usage {
        input_tokens: a.input_tokens.max(b.input_tokens),
        output_tokens: a.output_tokens.max(b.output_tokens),
        cache_read_tokens: a.cache_read_tokens.max(b.cache_read_tokens),
        cache_write_tokens: a.cache_write_tokens.max(b.cache_write_tokens),
        cache_write_5m_tokens: a.cache_write_5m_tokens.max(b.cache_write_5m_tokens),
        cache_write_1h_tokens: a.cache_write_1h_tokens.max(b.cache_write_1h_tokens),
    }
}
