//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in ctxmem.
///
/// The enum is `#[non_exhaustive]`: match on the variants you care about and keep a
/// wildcard arm. Every variant's message is one readable line that names the file,
/// line or session involved where there is one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A message or argument broke a documented rule (an empty `tool_call_id`, say).
    #[error("invalid input: {0}")]
    Invalid(String),

    /// A session id that is empty, too long, `.`/`..`, or has characters outside `[A-Za-z0-9._-]`.
    #[error("invalid session id {id:?}: {reason}")]
    InvalidSessionId {
        /// The rejected id, as given.
        id: String,
        /// Why it was rejected.
        reason: &'static str,
    },

    /// A configuration value that cannot work (a zero context window, say).
    #[error("invalid configuration: {0}")]
    Config(String),

    /// An I/O failure, with the path it happened on.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A line of a file that is not what it should be: bad JSON, a wrong shape, or a
    /// log record that does not replay (a message id going backwards, say).
    #[error("{path}: line {line}: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },

    /// A file that is not in the expected format, where no line can be named (a whole-JSON
    /// log with a wrong shape, say, or a file whose format cannot be detected).
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it, with the item it is in (`messages[3]: ...`).
        message: String,
    },

    /// A record written by a newer (or unknown) schema version.
    #[error("{path}: line {line}: unsupported schema version v={version}")]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The version found.
        version: u64,
    },

    /// Another writer holds the session (another process, or another open in this
    /// one). Holds the session id.
    #[error("session {0} is locked by another writer")]
    Locked(String),

    /// An earlier write failed, so this memory refuses further writes rather than
    /// diverge from what is on disk. Reopen the session to recover.
    #[error("memory is poisoned by an earlier failed write: {0}")]
    Poisoned(String),

    /// JSON (de)serialisation outside of a file (a value in memory).
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),

    /// A summarizer or other pluggable component failed.
    #[error("{0}")]
    External(String),
}

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// A `Result` with ctxmem's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
