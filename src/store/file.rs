//! [`FileStore`]: the embedded backend. A directory of append-only logs, one per
//! session (`<dir>/<session>.jsonl`), one JSON record per line, human-readable and
//! greppable.

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::event::Event;
use crate::session::SessionId;
use crate::store::log_file::FileLog;
use crate::store::{jsonl, live_records, OpenedSession, Record, Store};

/// When an acknowledged write has reached the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// Records wait in a 64 KiB buffer inside the process and are written when it
    /// fills or the session is closed. Fastest; a crash loses the waiting records.
    Buffered,
    /// Each record is handed to the operating system before the call returns: it
    /// survives a crash of the process, not a power loss.
    Flush,
    /// Each record is written and fsynced before the call returns: it survives a
    /// power loss too. The default.
    #[default]
    Sync,
}

/// A directory of session logs: the embedded, default [`Store`].
///
/// Each session is an append-only file `<dir>/<session>.jsonl`. Every line is one
/// record with a schema version, such as
/// `{"v":1,"kind":"message","message":{"id":1,"role":"user",...}}`, so a log can be
/// read with `grep` or `jq`. While a memory has a session open, it holds an exclusive
/// lock on its file: a second open, in this process or another, fails with
/// [`Error::Locked`] (after retrying for 100 ms). Files are created `0600` and the directory `0700`, and the store
/// never follows a symbolic link inside its directory.
///
/// Cloning is cheap: one store serves many sessions.
///
/// ```
/// use ctxmem::*;
/// let dir = tempfile::tempdir()?;
/// let store = FileStore::open(dir.path())?;
/// let session = SessionId::new("chat-1")?;
/// {
///     let memory = ContextMemory::builder().store(store.clone()).session(session.clone()).build()?;
///     memory.push(Message::user("Remember me"))?;
/// }
/// let memory = ContextMemory::builder().store(store.clone()).session(session.clone()).build()?;
/// assert_eq!(memory.history()[0].text(), "Remember me");
/// assert_eq!(store.sessions()?, vec![session]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct FileStore {
    dir: Arc<Path>,
    durability: Durability,
}

impl FileStore {
    /// A store in `dir`, created (with its parents) when missing.
    pub fn open(dir: impl AsRef<Path>) -> Result<FileStore, Error> {
        let dir = dir.as_ref();
        if dir.exists() && !dir.is_dir() {
            return Err(Error::io(dir, io::Error::other("not a directory")));
        }
        sys::create_private_dir(dir).map_err(|error| Error::io(dir, error))?;
        Ok(FileStore {
            dir: dir.into(),
            durability: Durability::default(),
        })
    }

    /// The same store, writing with `durability` (default [`Durability::Sync`]).
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The durability of writes.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The log file of `session`: `<dir>/<session>.jsonl`.
    pub fn log_path(&self, session: &SessionId) -> PathBuf {
        self.dir.join(format!("{session}.{EXTENSION}"))
    }

    /// The sessions that have a log, sorted. Other files, and symbolic links, are
    /// ignored.
    pub fn sessions(&self) -> Result<Vec<SessionId>, Error> {
        let io_error = |error| Error::io(&*self.dir, error);
        let mut sessions = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(io_error)? {
            let entry = entry.map_err(io_error)?;
            if !entry.file_type().map_err(io_error)?.is_file() {
                continue;
            }
            let name = entry.file_name();
            let id = name
                .to_str()
                .and_then(|name| name.strip_suffix(EXTENSION)?.strip_suffix('.'))
                .and_then(|stem| SessionId::new(stem).ok());
            sessions.extend(id);
        }
        sessions.sort();
        Ok(sessions)
    }

    /// The records of `session`, read without taking its lock or changing its file (a
    /// torn tail is left out, not cut off): a snapshot for inspection while a writer may
    /// be using the session. Replay it with
    /// [`ContextMemoryBuilder::records`](crate::ContextMemoryBuilder::records).
    pub fn read(&self, session: &SessionId) -> Result<Vec<Record>, Error> {
        let path = self.log_path(session);
        let mut file = sys::open_log(&path, false).map_err(|error| Error::io(&path, error))?;
        let bytes = read_all(&mut file, &path)?;
        Ok(jsonl::scan(&path, &bytes)?.records)
    }

    /// Removes the log of `session`. A missing session is not an error; an open one
    /// fails with [`Error::Locked`].
    pub fn delete(&self, session: &SessionId) -> Result<(), Error> {
        let path = self.log_path(session);
        let Some(_lock) = self.lock(session, &path, false)? else {
            return Ok(());
        };
        fs::remove_file(&path).map_err(|error| Error::io(&path, error))?;
        self.sync_dir()
    }

    /// Rewrites the log of `session` down to its live state: the current messages,
    /// the cutoff and the counters, dropping what `clear` and full compactions left
    /// behind (and a torn tail). It writes a temporary file, fsyncs it, renames it
    /// over the log and fsyncs the directory, so a crash leaves the old log or the new
    /// one. Fails with [`Error::Locked`] while the session is open.
    pub fn vacuum(&self, session: &SessionId) -> Result<(), Error> {
        let path = self.log_path(session);
        let Some(mut lock) = self.lock(session, &path, false)? else {
            return Err(Error::io(&path, ErrorKind::NotFound.into()));
        };
        let bytes = read_all(&mut lock, &path)?;
        let mut rewritten = Vec::with_capacity(bytes.len());
        for record in live_records(jsonl::scan(&path, &bytes)?.records)? {
            jsonl::encode(&record, &mut rewritten)?;
        }
        let temp = self.dir.join(format!("{session}.{EXTENSION}.tmp"));
        write_new_file(&temp, &rewritten).inspect_err(|_| {
            let _ = fs::remove_file(&temp);
        })?;
        fs::rename(&temp, &path).map_err(|error| Error::io(&path, error))?;
        self.sync_dir()
    }

    /// Opens and locks the log at `path`, creating it when `create` says so (`None`:
    /// it is missing). Retries when a `vacuum` or `delete` replaced the file between
    /// the open and the lock, so the lock is always on the file the path names.
    fn lock(&self, session: &SessionId, path: &Path, create: bool) -> Result<Option<File>, Error> {
        let io_error = |error| Error::io(path, error);
        loop {
            let file = match sys::open_log(path, create) {
                Ok(file) => file,
                Err(error) if !create && error.kind() == ErrorKind::NotFound => return Ok(None),
                Err(error) => return Err(io_error(error)),
            };
            if !try_lock(&file).map_err(io_error)? {
                return Err(Error::Locked(session.to_string()));
            }
            let locked = file.metadata().map_err(io_error)?;
            if !locked.is_file() {
                return Err(io_error(io::Error::other("not a regular file")));
            }
            match fs::symlink_metadata(path) {
                Ok(named) if sys::same_file(&locked, &named) => return Ok(Some(file)),
                Ok(_) => continue,
                Err(error) if error.kind() == ErrorKind::NotFound => continue,
                Err(error) => return Err(io_error(error)),
            }
        }
    }

    /// Makes renames, creations and removals in the directory durable.
    fn sync_dir(&self) -> Result<(), Error> {
        sys::sync_dir(&self.dir).map_err(|error| Error::io(&*self.dir, error))
    }
}

impl Store for FileStore {
    /// Locks the log (creating it) and reads it. A torn tail is reported as
    /// [`Event::TailTruncated`] and cut off (fsynced) by
    /// [`SessionLog::recover`](crate::SessionLog::recover), once the records replayed.
    fn open(&self, session: &SessionId) -> Result<OpenedSession, Error> {
        let path = self.log_path(session);
        let io_error = |error| Error::io(&path, error);
        let mut file = self
            .lock(session, &path, true)?
            .ok_or_else(|| io_error(ErrorKind::NotFound.into()))?;
        let bytes = read_all(&mut file, &path)?;
        let scan = jsonl::scan(&path, &bytes)?;
        let mut events = Vec::new();
        let torn_tail_at = (scan.valid_len < bytes.len()).then_some(scan.valid_len as u64);
        if torn_tail_at.is_some() {
            events.push(Event::TailTruncated {
                path: path.clone(),
                dropped_bytes: (bytes.len() - scan.valid_len) as u64,
            });
        }
        if self.durability == Durability::Sync {
            // The log may be new: make its directory entry durable too.
            self.sync_dir()?;
        }
        Ok(OpenedSession {
            log: Box::new(FileLog::new(
                file,
                path.clone(),
                self.durability,
                torn_tail_at,
            )),
            records: scan.records,
            path: Some(path),
            events,
        })
    }

    fn sessions(&self) -> Result<Vec<SessionId>, Error> {
        FileStore::sessions(self)
    }

    fn delete(&self, session: &SessionId) -> Result<(), Error> {
        FileStore::delete(self, session)
    }

    fn vacuum(&self, session: &SessionId) -> Result<(), Error> {
        FileStore::vacuum(self, session)
    }
}

/// How long a lock held by someone else is retried before [`Error::Locked`].
///
/// A child process that this process forks holds copies of its open files, and so
/// their locks, until it execs: a session closed and reopened while another thread
/// spawns a process can look locked for that instant.
const LOCK_PATIENCE: Duration = Duration::from_millis(100);

/// Takes the exclusive lock on `file`; `false` if another holder keeps it for
/// [`LOCK_PATIENCE`].
fn try_lock(file: &File) -> io::Result<bool> {
    let deadline = Instant::now() + LOCK_PATIENCE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(true),
            Err(fs::TryLockError::Error(error)) => return Err(error),
            Err(fs::TryLockError::WouldBlock) if Instant::now() >= deadline => return Ok(false),
            Err(fs::TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// The extension of log files.
const EXTENSION: &str = "jsonl";

fn read_all(file: &mut File, path: &Path) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|error| Error::io(path, error))?;
    Ok(bytes)
}

/// Creates `path` (refusing to replace anything, a link included), writes `bytes`
/// and fsyncs it. A stale file from an interrupted earlier attempt is removed first.
fn write_new_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let io_error = |error| Error::io(path, error);
    match fs::remove_file(path) {
        Err(error) if error.kind() != ErrorKind::NotFound => return Err(io_error(error)),
        _ => {}
    }
    let mut file = sys::create_new(path).map_err(io_error)?;
    file.write_all(bytes).map_err(io_error)?;
    file.sync_all().map_err(io_error)
}

/// The platform details: permissions, no symlink following, directory fsync.
#[cfg(unix)]
mod sys {
    use std::fs::{DirBuilder, File, Metadata, OpenOptions};
    use std::io;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    use std::path::Path;

    use super::options;

    pub fn create_private_dir(dir: &Path) -> io::Result<()> {
        DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }

    fn private(options: &mut OpenOptions) -> &mut OpenOptions {
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW)
    }

    pub fn open_log(path: &Path, create: bool) -> io::Result<File> {
        private(options().append(true).create(create))
            .open(path)
            .map_err(name_symlinks)
    }

    pub fn create_new(path: &Path) -> io::Result<File> {
        private(options().write(true).create_new(true)).open(path)
    }

    /// `O_NOFOLLOW` fails with `ELOOP` on a link: say so plainly.
    fn name_symlinks(error: io::Error) -> io::Error {
        if error.raw_os_error() == Some(libc::ELOOP) {
            io::Error::other("is a symbolic link, which the store never follows")
        } else {
            error
        }
    }

    pub fn same_file(a: &Metadata, b: &Metadata) -> bool {
        a.dev() == b.dev() && a.ino() == b.ino()
    }

    pub fn sync_dir(dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

#[cfg(not(unix))]
mod sys {
    use std::fs::{self, File, Metadata};
    use std::io;
    use std::path::Path;

    use super::options;

    pub fn create_private_dir(dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    pub fn open_log(path: &Path, create: bool) -> io::Result<File> {
        if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(io::Error::other(
                "is a symbolic link, which the store never follows",
            ));
        }
        options().append(true).create(create).open(path)
    }

    pub fn create_new(path: &Path) -> io::Result<File> {
        options().write(true).create_new(true).open(path)
    }

    pub fn same_file(_: &Metadata, _: &Metadata) -> bool {
        true
    }

    pub fn sync_dir(_: &Path) -> io::Result<()> {
        Ok(())
    }
}

fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    options
}
