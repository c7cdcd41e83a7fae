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

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::event::Event;
use crate::message::{Message, MessageId};
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
        /// The last assistant time, which a full compaction keeps (replay sets it to
        /// exactly this).
        last_assistant_at: Option<DateTime<Utc>>,
    },
}

/// The write side of one session's log, held exclusively while a memory uses it.
pub trait SessionLog: Send {
    /// Appends one record durably (as the store's durability setting says) before
    /// returning. An error means the record may not be stored.
    fn append(&mut self, record: &Record) -> Result<(), Error>;

    /// Finishes recovery once the records replayed cleanly, before the first append: a
    /// [`FileStore`] cuts a torn tail off here, so that a log that does not replay is
    /// left exactly as it was. The default does nothing.
    fn recover(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

/// What [`Store::open`] returns: the writer, the records to replay, and anything
/// recovery wants to report.
pub struct OpenedSession {
    /// The exclusive writer.
    pub log: Box<dyn SessionLog>,
    /// The session's records, oldest first.
    pub records: Vec<Record>,
    /// The file the records were read from, one per line (so that a record that does
    /// not replay is reported by file and line), or `None` for another kind of store.
    pub path: Option<PathBuf>,
    /// Events from recovery (a truncated torn tail, say), true once
    /// [`SessionLog::recover`] succeeded.
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
/// message ids below a snapshot's `next_id`, and sets the last assistant time to
/// exactly its value (which the messages' own times may exceed after a full
/// compaction). Fails, as a replay would, on records out of id order.
pub fn live_records(records: impl IntoIterator<Item = Record>) -> Result<Vec<Record>, Error> {
    crate::memory::replay_live(records)
}
