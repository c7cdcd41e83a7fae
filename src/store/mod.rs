//! Durable backends. A [`Store`] hands out one exclusive [`SessionLog`] per session;
//! a memory rebuilds its state by replaying the log's [`Record`]s.
//!
//! [`FileStore`] is the embedded backend: a directory of append-only JSONL logs.

#[cfg(test)]
mod faults;
pub mod file;
mod jsonl;
mod log_file;

pub use file::{Durability, FileStore};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::event::Event;
use crate::message::{Message, MessageId, Role};
use crate::session::SessionId;

/// One state change of a session, as logged. Replaying a session's records in order
/// rebuilds its state exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Record {
    /// A message was stored (with its id and time).
    Message {
        /// The message.
        message: Message,
    },
    /// The cutoff advanced.
    Cutoff {
        /// The new cutoff.
        cutoff: MessageId,
    },
    /// The history was cleared.
    Clear,
    /// A full compaction replaced the history with these messages (ids assigned).
    FullCompaction {
        /// The new history.
        messages: Vec<Message>,
    },
    /// Counters that must survive a log rewrite (`vacuum`) dropping the records they
    /// came from. A rewrite writes the live messages, then their cutoff, then this.
    Snapshot {
        /// The next id to assign (ids are never reused).
        next_id: u64,
        /// The latest assistant time, which a full compaction keeps.
        last_assistant_at: Option<DateTime<Utc>>,
    },
}

/// The write side of one session's log, held exclusively while a memory uses it.
pub trait SessionLog: Send {
    /// Appends one record durably (as the store's durability setting says) before
    /// returning. An error means the record may not be stored.
    fn append(&mut self, record: &Record) -> Result<(), Error>;
}

/// What [`Store::open`] returns: the writer, the records to replay, and anything
/// recovery wants to report.
pub struct OpenedSession {
    /// The exclusive writer.
    pub log: Box<dyn SessionLog>,
    /// The session's records, oldest first.
    pub records: Vec<Record>,
    /// Events from recovery (a truncated torn tail, say).
    pub events: Vec<Event>,
}

/// A place where sessions live.
pub trait Store: Send + Sync {
    /// Opens `session` for exclusive writing, creating it when missing, and reads its
    /// records.
    fn open(&self, session: &SessionId) -> Result<OpenedSession, Error>;

    /// The stored sessions, sorted.
    fn sessions(&self) -> Result<Vec<SessionId>, Error>;

    /// Removes `session` and its log. Removing a missing session is not an error;
    /// removing one that is open fails with [`Error::Locked`].
    fn delete(&self, session: &SessionId) -> Result<(), Error>;

    /// Rewrites the log of `session` down to its live state (see [`live_records`]),
    /// dropping what `clear` and full compactions left behind. Fails with
    /// [`Error::Locked`] while the session is open.
    fn vacuum(&self, session: &SessionId) -> Result<(), Error>;
}

/// The shortest record sequence that replays to the same state as `records`: the live
/// messages, then the cutoff (if any), then a [`Record::Snapshot`] of the id counter
/// and the last assistant time. The snapshot comes last because replay refuses
/// message ids below a snapshot's `next_id`.
pub fn live_records(records: impl IntoIterator<Item = Record>) -> Vec<Record> {
    let mut live = Live::default();
    for record in records {
        live.apply(record);
    }
    live.into_records()
}

/// The state a log replays to, without the projection: what `vacuum` keeps.
#[derive(Default)]
struct Live {
    messages: Vec<Message>,
    cutoff: Option<MessageId>,
    /// The largest id seen plus one (0 when none was: replay starts ids at 1 anyway).
    next_id: u64,
    last_assistant_at: Option<DateTime<Utc>>,
}

impl Live {
    fn apply(&mut self, record: Record) {
        match record {
            Record::Message { message } => self.push(message),
            Record::Cutoff { cutoff } => {
                if self.cutoff < Some(cutoff) {
                    self.cutoff = Some(cutoff);
                    self.next_id = self.next_id.max(cutoff.get());
                }
            }
            Record::Clear => {
                self.messages.clear();
                self.cutoff = None;
                self.last_assistant_at = None;
            }
            Record::FullCompaction { messages } => {
                self.messages.clear();
                self.cutoff = None;
                messages.into_iter().for_each(|message| self.push(message));
            }
            Record::Snapshot {
                next_id,
                last_assistant_at,
            } => {
                self.next_id = self.next_id.max(next_id);
                self.last_assistant_at = self.last_assistant_at.max(last_assistant_at);
            }
        }
    }

    fn push(&mut self, message: Message) {
        if let Some(id) = message.id() {
            self.next_id = self.next_id.max(id.get() + 1);
        }
        if message.role() == Role::Assistant {
            self.last_assistant_at = self.last_assistant_at.max(message.at());
        }
        self.messages.push(message);
    }

    fn into_records(self) -> Vec<Record> {
        let mut records: Vec<Record> = self
            .messages
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
}
