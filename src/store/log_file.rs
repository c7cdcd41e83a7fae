//! The write side of a JSONL log: [`FileLog`] appends records through the small
//! [`LogFile`] trait, so that tests can put simulated I/O faults behind it.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use crate::error::Error;
use crate::store::file::Durability;
use crate::store::{jsonl, Record, SessionLog};

/// What a log needs from its file. [`File`] is the real one.
pub(crate) trait LogFile: Send {
    /// Writes all of `bytes` at the end of the file.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable (fdatasync).
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the file to `len` bytes, durably.
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

impl LogFile for File {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)?;
        self.sync_all()
    }
}

/// In `Buffered` mode, records are written once this many bytes are waiting.
const BUFFER_LIMIT: usize = 64 * 1024;

/// One session's open log (opened in append mode, holding its lock).
pub(crate) struct FileLog<F: LogFile> {
    file: F,
    path: PathBuf,
    durability: Durability,
    /// Encoded records not yet handed to the file.
    pending: Vec<u8>,
    /// Where a torn tail found on open starts, until [`SessionLog::recover`] cuts it.
    torn_tail_at: Option<u64>,
    /// Set by a failed write: the file may end in a partial line, so nothing more is
    /// written to it (not even `pending` on drop).
    failed: bool,
}

impl<F: LogFile> FileLog<F> {
    /// A log writing to `file`, whose bytes from `torn_tail_at` on are a torn tail.
    pub(crate) fn new(
        file: F,
        path: PathBuf,
        durability: Durability,
        torn_tail_at: Option<u64>,
    ) -> Self {
        FileLog {
            file,
            path,
            durability,
            pending: Vec::new(),
            torn_tail_at,
            failed: false,
        }
    }

    fn write_pending(&mut self) -> io::Result<()> {
        let result = self.file.append(&self.pending);
        self.pending.clear();
        result
    }
}

impl<F: LogFile> SessionLog for FileLog<F> {
    fn append(&mut self, record: &Record) -> Result<(), Error> {
        if self.failed {
            return Err(Error::io(
                &self.path,
                io::Error::other("an earlier write to this log failed"),
            ));
        }
        self.recover()?; // never append after a torn tail
        jsonl::encode(record, &mut self.pending)?;
        let result = match self.durability {
            Durability::Buffered if self.pending.len() < BUFFER_LIMIT => Ok(()),
            Durability::Buffered | Durability::Flush => self.write_pending(),
            Durability::Sync => self.write_pending().and_then(|()| self.file.sync()),
        };
        result.map_err(|error| {
            self.failed = true;
            Error::io(&self.path, error)
        })
    }

    fn recover(&mut self) -> Result<(), Error> {
        if let Some(len) = self.torn_tail_at {
            self.file
                .truncate(len)
                .map_err(|error| Error::io(&self.path, error))?;
            self.torn_tail_at = None;
        }
        Ok(())
    }
}

impl<F: LogFile> Drop for FileLog<F> {
    fn drop(&mut self) {
        if !self.failed && !self.pending.is_empty() {
            // Best effort: `Buffered` promised nothing more.
            let _ = self.write_pending();
        }
    }
}
