//! Simulated I/O faults, in the spirit of redb's `crash_consistency` test: the log
//! writes to a simulated disk that fails on command (a short write with ENOSPC, a
//! failed fsync with EIO) and forgets what was never synced when the power goes. The
//! image that is left is then opened with the real [`FileStore`]: whatever a push
//! acknowledged must be there, and a failed write must poison the memory.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use parking_lot::Mutex;
use proptest::prelude::*;

use crate::store::log_file::{FileLog, LogFile};
use crate::*;

/// The simulated disk under one log.
#[derive(Default)]
struct Disk {
    /// Bytes that survive a power loss.
    durable: Vec<u8>,
    /// Bytes written but not yet synced (the page cache).
    cached: Vec<u8>,
    /// The append or sync (counted from 0) that fails.
    fail_at: Option<usize>,
    operations: usize,
    /// How many bytes of a failing append still land.
    short_write: usize,
}

impl Disk {
    /// Counts an operation; `true` if it is the one to fail.
    fn fails(&mut self) -> bool {
        self.operations += 1;
        self.fail_at == Some(self.operations - 1)
    }

    /// What a power loss leaves: the synced bytes, and the first `fraction` of the
    /// unsynced ones (the kernel may have written some back).
    fn after_power_loss(&self, fraction: f64) -> Vec<u8> {
        let kept = (self.cached.len() as f64 * fraction) as usize;
        [&self.durable[..], &self.cached[..kept]].concat()
    }

    /// What a crash of the process leaves: everything written.
    fn after_process_crash(&self) -> Vec<u8> {
        [&self.durable[..], &self.cached[..]].concat()
    }
}

#[derive(Clone, Default)]
struct FaultyFile(Arc<Mutex<Disk>>);

impl LogFile for FaultyFile {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut disk = self.0.lock();
        if disk.fails() {
            let landed = disk.short_write.min(bytes.len());
            disk.cached.extend_from_slice(&bytes[..landed]);
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "simulated ENOSPC",
            ));
        }
        disk.cached.extend_from_slice(bytes);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut disk = self.0.lock();
        if disk.fails() {
            // As Linux does after a failed fsync: the dirty pages are gone.
            disk.cached.clear();
            return Err(io::Error::other("simulated EIO"));
        }
        let cached = std::mem::take(&mut disk.cached);
        disk.durable.extend_from_slice(&cached);
        Ok(())
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        let mut disk = self.0.lock();
        let mut bytes = disk.after_process_crash();
        bytes.truncate(len as usize);
        disk.durable = bytes;
        disk.cached.clear();
        Ok(())
    }
}

/// A store of one empty session that logs to a [`FaultyFile`].
struct FaultyStore {
    file: FaultyFile,
    durability: Durability,
}

impl Store for FaultyStore {
    fn open(&self, _: &SessionId) -> Result<OpenedSession, Error> {
        let log = FileLog::new(
            self.file.clone(),
            PathBuf::from("faulty.jsonl"),
            self.durability,
            None,
        );
        Ok(OpenedSession {
            log: Box::new(log),
            records: Vec::new(),
            path: None,
            events: Vec::new(),
        })
    }

    fn sessions(&self) -> Result<Vec<SessionId>, Error> {
        Ok(Vec::new())
    }

    fn delete(&self, _: &SessionId) -> Result<(), Error> {
        Ok(())
    }

    fn vacuum(&self, _: &SessionId) -> Result<(), Error> {
        Ok(())
    }
}

fn clock() -> ManualClock {
    ManualClock::new(Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap())
}

fn session() -> SessionId {
    SessionId::new("faulty").unwrap()
}

fn memory(store: impl Store + 'static, clock: &ManualClock) -> Result<ContextMemory, Error> {
    ContextMemory::builder()
        .micro_compaction(MicroCompactionConfig {
            keep_recent: Keep::Messages(1),
            min_tokens: 1,
            ..Default::default()
        })
        .clock(clock.clone())
        .store(store)
        .session(session())
        .build()
}

/// Opens a disk image with the real [`FileStore`].
fn reopen(image: &[u8]) -> ContextMemory {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    std::fs::write(store.log_path(&session()), image).unwrap();
    memory(store, &clock()).unwrap()
}

/// The `n`th message of a run: a user, an assistant call, or its result.
fn nth_message(n: usize, size: usize) -> Message {
    let body = "z".repeat(size);
    match n % 3 {
        0 => Message::user(body),
        1 => Message::assistant_with_tool_calls(
            body,
            vec![ToolCall::new(format!("c{n}"), "t", serde_json::json!({}))],
        ),
        _ => Message::tool_result(format!("c{}", n - 1), body),
    }
}

/// Pushes `sizes.len()` messages, with a clock jump and request after every fourth;
/// returns the acknowledged ones and the first error.
fn run(
    memory: &ContextMemory,
    clock: &ManualClock,
    sizes: &[usize],
) -> (Vec<Message>, Option<Error>) {
    let mut acknowledged = Vec::new();
    for (n, &size) in sizes.iter().enumerate() {
        if n % 4 == 3 {
            clock.advance(Duration::hours(2));
            if let Err(error) = memory.try_messages() {
                return (acknowledged, Some(error));
            }
        }
        match memory.push(nth_message(n, size)) {
            Ok(id) => acknowledged.push(
                memory
                    .history()
                    .into_iter()
                    .find(|m| m.id() == Some(id))
                    .unwrap(),
            ),
            Err(error) => return (acknowledged, Some(error)),
        }
    }
    (acknowledged, None)
}

/// Every acknowledged message is in `history`, in order; at most the one whose write
/// failed comes on top.
fn assert_survived(acknowledged: &[Message], history: &[Message]) -> Result<(), TestCaseError> {
    prop_assert!(history.len() <= acknowledged.len() + 1);
    prop_assert_eq!(&history[..acknowledged.len()], acknowledged);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn synced_pushes_survive_faults_and_power_loss(
        fail_at in 0usize..80,
        short_write in 0usize..400,
        kept in 0.0f64..=1.0,
        sizes in prop::collection::vec(0usize..300, 1..40),
    ) {
        let file = FaultyFile::default();
        {
            let mut disk = file.0.lock();
            disk.fail_at = Some(fail_at);
            disk.short_write = short_write;
        }
        let clock = clock();
        let memory = memory(FaultyStore { file: file.clone(), durability: Durability::Sync }, &clock).unwrap();
        let (acknowledged, error) = run(&memory, &clock, &sizes);
        if let Some(error) = error {
            prop_assert!(matches!(error, Error::Io { .. }), "{error}");
            // Poisoned: no write is even tried any more.
            let operations = file.0.lock().operations;
            prop_assert!(matches!(memory.push(Message::user("more")), Err(Error::Poisoned(_))));
            prop_assert!(matches!(memory.clear(), Err(Error::Poisoned(_))));
            prop_assert_eq!(file.0.lock().operations, operations);
        }
        let image = file.0.lock().after_power_loss(kept);
        let reopened = reopen(&image);
        assert_survived(&acknowledged, &reopened.history())?;
        // Reopening recovers: the session takes writes again.
        prop_assert!(reopened.push(Message::user("after")).is_ok());
    }

    #[test]
    fn flushed_pushes_survive_a_process_crash(
        fail_at in 0usize..80,
        short_write in 0usize..400,
        sizes in prop::collection::vec(0usize..300, 1..40),
    ) {
        let file = FaultyFile::default();
        file.0.lock().fail_at = Some(fail_at);
        file.0.lock().short_write = short_write;
        let clock = clock();
        let memory = memory(FaultyStore { file: file.clone(), durability: Durability::Flush }, &clock).unwrap();
        let (acknowledged, _) = run(&memory, &clock, &sizes);
        let image = file.0.lock().after_process_crash();
        prop_assert!(file.0.lock().durable.is_empty());
        assert_survived(&acknowledged, &reopen(&image).history())?;
    }
}

#[test]
fn a_failed_cutoff_write_keeps_the_old_projection_and_poisons() {
    let file = FaultyFile::default();
    let clock = clock();
    let store = FaultyStore {
        file: file.clone(),
        durability: Durability::Sync,
    };
    let memory = memory(store, &clock).unwrap();
    for n in 0..4 {
        memory.push(nth_message(n, 100)).unwrap();
    }
    let before = memory.summarization_input();
    let operations = file.0.lock().operations;
    file.0.lock().fail_at = Some(operations); // the cutoff's append
    clock.advance(Duration::hours(2));
    assert!(matches!(memory.try_messages(), Err(Error::Io { .. })));
    assert_eq!(memory.messages(), before);
    assert_eq!(memory.cutoff(), None);
    assert!(matches!(
        memory.push(Message::user("x")),
        Err(Error::Poisoned(_))
    ));
    let reopened = reopen(&file.0.lock().after_power_loss(0.0));
    assert_eq!(reopened.history(), memory.history());
}

#[test]
fn buffered_records_reach_the_file_when_the_memory_closes() {
    let file = FaultyFile::default();
    let clock = clock();
    let store = FaultyStore {
        file: file.clone(),
        durability: Durability::Buffered,
    };
    let memory = memory(store, &clock).unwrap();
    let (acknowledged, error) = run(&memory, &clock, &[10, 20, 30, 40, 50]);
    assert!(error.is_none());
    assert!(file.0.lock().after_process_crash().is_empty());
    drop(memory);
    assert_eq!(
        reopen(&file.0.lock().after_process_crash()).history(),
        acknowledged
    );
}
