//! `FileStore`: reopening, torn tails, corruption, locking, security, concurrency,
//! vacuum, a crash test with a real child process, and a model-based property test.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use ctxmem::*;
use parking_lot::{Mutex, RwLock};
use proptest::prelude::*;

use crate::common::*;

fn session(name: &str) -> SessionId {
    SessionId::new(name).unwrap()
}

type Events = Arc<Mutex<Vec<Event>>>;

/// A memory on `store`'s `session`, keeping 2 messages, with its events.
fn reopen(
    store: &FileStore,
    session: &SessionId,
    clock: &ManualClock,
) -> Result<(ContextMemory, Events), Error> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let memory = ContextMemory::builder()
        .micro_compaction(keep_messages(2))
        .clock(clock.clone())
        .store(store.clone())
        .session(session.clone())
        .on_event(move |event| sink.lock().push(event.clone()))
        .build()?;
    Ok((memory, events))
}

fn open(store: &FileStore, session: &SessionId, clock: &ManualClock) -> ContextMemory {
    reopen(store, session, clock).unwrap().0
}

/// A spawned child holds copies of this process's open files, and so their session
/// locks, until it execs. Tests that spawn hold this exclusively, so that no other
/// test has a session open at that instant (and none sees a stray `Locked`).
static SPAWNING: RwLock<()> = RwLock::new(());

/// A temporary directory, and this test's share of [`SPAWNING`].
struct TestDir {
    dir: tempfile::TempDir,
    _guard: Box<dyn std::any::Any>,
}

impl TestDir {
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn store_in(guard: Box<dyn std::any::Any>) -> (TestDir, FileStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path().join("sessions")).unwrap();
    (TestDir { dir, _guard: guard }, store)
}

/// A store in a fresh directory (`<tmp>/sessions`).
fn temp_store() -> (TestDir, FileStore) {
    store_in(Box::new(SPAWNING.read()))
}

/// [`temp_store`] for a test that spawns child processes.
fn spawning_store() -> (TestDir, FileStore) {
    store_in(Box::new(SPAWNING.write()))
}

/// The log's lines as JSON values.
fn log_lines(path: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Everything a reopen must restore.
fn snapshot(memory: &ContextMemory) -> (Vec<Message>, Option<MessageId>, Option<DateTime<Utc>>) {
    (
        memory.history(),
        memory.cutoff(),
        memory.last_assistant_at(),
    )
}

#[test]
fn reopen_restores_history_ids_times_cutoff_and_counter() {
    let (_dir, store) = temp_store();
    let id = session("round-trip");
    let clock = ManualClock::new(t0());
    let (before, request) = {
        let memory = open(&store, &id, &clock);
        for i in 0..4 {
            push_exchange(&memory, i);
            memory
                .push(Message::assistant(format!("answer {i}")))
                .unwrap();
        }
        clock.advance(hours(2));
        let request = memory.messages();
        assert!(memory.cutoff().is_some());
        (snapshot(&memory), request)
    };
    let memory = open(&store, &id, &clock);
    assert_eq!(snapshot(&memory), before);
    assert!(memory.history().iter().all(|m| m.at().is_some()));
    assert_eq!(memory.messages(), request);
    let next = memory.push(Message::user("again")).unwrap();
    assert_eq!(next.get(), before.0.last().unwrap().id().unwrap().get() + 1);
}

#[test]
fn ids_are_not_reused_after_clear_and_reopen() {
    let (_dir, store) = temp_store();
    let id = session("counter");
    let clock = ManualClock::new(t0());
    {
        let memory = open(&store, &id, &clock);
        for i in 0..3 {
            memory.push(Message::user(format!("{i}"))).unwrap();
        }
        memory.clear().unwrap();
    }
    let memory = open(&store, &id, &clock);
    assert!(memory.is_empty());
    assert_eq!(memory.last_assistant_at(), None);
    assert_eq!(
        memory.push(Message::user("next")).unwrap(),
        MessageId::new(4)
    );
}

#[test]
fn a_full_compaction_survives_a_reopen() {
    let (_dir, store) = temp_store();
    let id = session("compacted");
    let clock = ManualClock::new(t0());
    let before = {
        let memory = open(&store, &id, &clock);
        push_exchange(&memory, 0);
        memory.push(Message::assistant("done")).unwrap();
        clock.advance(hours(3));
        memory.messages();
        memory
            .apply_full_compaction(vec![Message::user("summary"), Message::assistant("ok")])
            .unwrap();
        snapshot(&memory)
    };
    let memory = open(&store, &id, &clock);
    assert_eq!(snapshot(&memory), before);
    assert_eq!(memory.cutoff(), None);
    assert_eq!(memory.history()[0].id(), Some(MessageId::new(5)));
}

/// A session whose cutoff advanced after one gap, then a warm stretch followed.
fn warm_session(store: &FileStore, id: &SessionId, clock: &ManualClock) -> Vec<Message> {
    let memory = open(store, id, clock);
    for i in 0..3 {
        push_exchange(&memory, i);
    }
    memory.push(Message::assistant("first answer")).unwrap();
    clock.advance(hours(2));
    memory.messages();
    push_exchange(&memory, 3);
    push_exchange(&memory, 4);
    memory.push(Message::assistant("second answer")).unwrap();
    memory.messages()
}

#[test]
fn resuming_before_the_gap_sends_the_same_bytes() {
    let (_dir, store) = temp_store();
    let id = session("warm");
    let clock = ManualClock::new(t0());
    let last_request = warm_session(&store, &id, &clock);
    let cutoff = open(&store, &id, &clock).cutoff();
    clock.advance(Duration::minutes(10));
    let memory = open(&store, &id, &clock);
    let resumed = memory.messages();
    assert_eq!(memory.cutoff(), cutoff);
    assert_eq!(
        serde_json::to_string(&resumed).unwrap(),
        serde_json::to_string(&last_request).unwrap()
    );
}

#[test]
fn resuming_after_the_gap_advances_the_cutoff() {
    let (_dir, store) = temp_store();
    let id = session("cold");
    let clock = ManualClock::new(t0());
    let last_request = warm_session(&store, &id, &clock);
    clock.advance(hours(2));
    let (memory, events) = reopen(&store, &id, &clock).unwrap();
    let cutoff = memory.cutoff();
    let resumed = memory.messages();
    assert!(memory.cutoff() > cutoff);
    assert_ne!(resumed, last_request);
    assert!(matches!(
        events.lock().as_slice(),
        [Event::MicroCompacted { .. }]
    ));
    // The advance is persisted too.
    drop(memory);
    assert_eq!(open(&store, &id, &clock).messages(), resumed);
}

#[test]
fn every_line_is_a_versioned_record() {
    let (_dir, store) = temp_store();
    let id = session("format");
    let clock = ManualClock::new(t0());
    {
        let memory = open(&store, &id, &clock);
        push_exchange(&memory, 0);
        memory.push(Message::assistant("a")).unwrap();
        clock.advance(hours(2));
        memory.messages();
        memory.clear().unwrap();
        memory
            .apply_full_compaction(vec![Message::user("summary")])
            .unwrap();
    }
    let kinds: Vec<String> = log_lines(&store.log_path(&id))
        .iter()
        .map(|line| {
            assert_eq!(line["v"], 1);
            line["kind"].as_str().unwrap().to_owned()
        })
        .collect();
    let expected = [
        "message",
        "message",
        "message",
        "message",
        "cutoff",
        "clear",
        "full_compaction",
    ];
    assert_eq!(kinds, expected);
    assert_eq!(store.log_path(&id), store.dir().join("format.jsonl"));
}

/// Writes a log of a few messages; returns its bytes and where its last line starts.
fn small_log(store: &FileStore, id: &SessionId) -> (Vec<u8>, usize) {
    let clock = ManualClock::new(t0());
    {
        let memory = open(store, id, &clock);
        memory.push(Message::user("first")).unwrap();
        memory.push(Message::assistant("second")).unwrap();
        memory.push(Message::user("last \"one\" é")).unwrap();
    }
    let bytes = fs::read(store.log_path(id)).unwrap();
    let last_start = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    (bytes, last_start)
}

#[test]
fn a_torn_tail_is_cut_at_every_byte_offset() {
    let (_dir, store) = temp_store();
    let store = store.with_durability(Durability::Flush);
    let id = session("torn");
    let (bytes, last_start) = small_log(&store, &id);
    let clock = ManualClock::new(t0());
    for offset in last_start..bytes.len() {
        fs::write(store.log_path(&id), &bytes[..offset]).unwrap();
        let (memory, events) =
            reopen(&store, &id, &clock).unwrap_or_else(|error| panic!("offset {offset}: {error}"));
        let texts: Vec<String> = memory.history().iter().map(Message::text).collect();
        assert_eq!(texts, ["first", "second"], "offset {offset}");
        let dropped = (offset - last_start) as u64;
        let expected: Vec<Event> = if dropped == 0 {
            vec![]
        } else {
            vec![Event::TailTruncated {
                path: store.log_path(&id),
                dropped_bytes: dropped,
            }]
        };
        assert_eq!(*events.lock(), expected, "offset {offset}");
        assert_eq!(fs::read(store.log_path(&id)).unwrap(), &bytes[..last_start]);
        // Appending after the cut gives a clean log again.
        assert_eq!(
            memory.push(Message::user("new")).unwrap(),
            MessageId::new(3)
        );
    }
}

#[test]
fn an_unparseable_last_line_is_a_torn_tail() {
    let (_dir, store) = temp_store();
    let id = session("garbage-tail");
    let (mut bytes, _) = small_log(&store, &id);
    let good = bytes.len();
    bytes.extend_from_slice(b"\0\0\0\0{\"v\":1,\"ki\n");
    fs::write(store.log_path(&id), &bytes).unwrap();
    let (memory, events) = reopen(&store, &id, &ManualClock::new(t0())).unwrap();
    assert_eq!(memory.len(), 3);
    assert!(matches!(
        events.lock().as_slice(),
        [Event::TailTruncated { dropped_bytes, .. }] if *dropped_bytes == (bytes.len() - good) as u64
    ));
}

#[test]
fn garbage_mid_file_is_a_typed_error_and_the_file_is_untouched() {
    let (_dir, store) = temp_store();
    let id = session("corrupt");
    let (bytes, _) = small_log(&store, &id);
    let first_line_end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut corrupted = bytes[..first_line_end].to_vec();
    corrupted
        .extend_from_slice(b"{\"v\":1,\"kind\":\"message\",\"message\":{\"role\":\"wizard\"}}\n");
    corrupted.extend_from_slice(&bytes[first_line_end..]);
    fs::write(store.log_path(&id), &corrupted).unwrap();

    let error = reopen(&store, &id, &ManualClock::new(t0())).unwrap_err();
    match &error {
        Error::Corrupt { path, line, .. } => {
            assert_eq!(path, &store.log_path(&id));
            assert_eq!(*line, 2);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains("corrupt.jsonl"), "{message}");
    assert!(message.contains("line 2"), "{message}");
    assert_eq!(fs::read(store.log_path(&id)).unwrap(), corrupted);
    // Still untouched on a second try, and the lock was released.
    assert!(reopen(&store, &id, &ManualClock::new(t0())).is_err());
    assert_eq!(fs::read(store.log_path(&id)).unwrap(), corrupted);
}

#[test]
fn an_unknown_version_is_named() {
    let (_dir, store) = temp_store();
    let id = session("future");
    let (mut bytes, _) = small_log(&store, &id);
    bytes.extend_from_slice(b"{\"v\":7,\"kind\":\"hologram\"}\n");
    fs::write(store.log_path(&id), &bytes).unwrap();
    let error = reopen(&store, &id, &ManualClock::new(t0())).unwrap_err();
    assert!(
        matches!(
            error,
            Error::UnsupportedVersion {
                version: 7,
                line: 4,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("v=7"), "{error}");
    assert_eq!(fs::read(store.log_path(&id)).unwrap(), bytes);
}

#[test]
fn a_second_open_of_a_session_is_locked() {
    let (_dir, store) = temp_store();
    let id = session("busy");
    let clock = ManualClock::new(t0());
    let memory = open(&store, &id, &clock);
    memory.push(Message::user("mine")).unwrap();
    for attempt in [store.clone(), FileStore::open(store.dir()).unwrap()] {
        let error = reopen(&attempt, &id, &clock).unwrap_err();
        assert!(matches!(&error, Error::Locked(session) if session == "busy"));
        assert!(error.to_string().contains("busy"), "{error}");
    }
    assert!(matches!(store.delete(&id), Err(Error::Locked { .. })));
    assert!(matches!(store.vacuum(&id), Err(Error::Locked { .. })));
    // Another session is not affected; the first one still writes.
    open(&store, &session("other"), &clock);
    memory.push(Message::user("still mine")).unwrap();
    drop(memory);
    assert_eq!(open(&store, &id, &clock).len(), 2);
}

#[test]
fn another_process_gets_the_lock_error() {
    let (_dir, store) = spawning_store();
    let id = session("shared");
    let memory = open(&store, &id, &ManualClock::new(t0()));
    let output = child(Task::LockProbe, store.dir())
        .wait_with_output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("PROBE Locked: session shared is locked"),
        "{stdout}"
    );
    drop(memory);
    let output = child(Task::LockProbe, store.dir())
        .wait_with_output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("PROBE opened"));
}

#[test]
fn concurrent_pushes_are_all_logged_in_id_order() {
    let (_dir, store) = temp_store();
    let store = store.with_durability(Durability::Flush);
    let id = session("threads");
    let memory = Arc::new(open(&store, &id, &ManualClock::new(t0())));
    let threads: Vec<_> = (0..8)
        .map(|thread| {
            let memory = memory.clone();
            std::thread::spawn(move || {
                (0..1000)
                    .map(|i| {
                        let text = format!("thread {thread} message {i}");
                        (memory.push(Message::user(text.clone())).unwrap(), text)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let acknowledged: Vec<(MessageId, String)> = threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    drop(memory);

    let logged: Vec<u64> = log_lines(&store.log_path(&id))
        .iter()
        .map(|line| line["message"]["id"].as_u64().unwrap())
        .collect();
    assert_eq!(logged.len(), 8000);
    assert!(logged.windows(2).all(|pair| pair[0] < pair[1]));
    let history = open(&store, &id, &ManualClock::new(t0())).history();
    for (id, text) in acknowledged {
        let index = history
            .binary_search_by_key(&Some(id), Message::id)
            .unwrap();
        assert_eq!(history[index].text(), text);
    }
}

#[test]
fn hostile_session_ids_are_rejected() {
    let long = "a".repeat(200);
    for hostile in [
        "..",
        ".",
        "a/b",
        "../etc",
        "",
        "a\0b",
        "a\\b",
        long.as_str(),
    ] {
        assert!(
            matches!(SessionId::new(hostile), Err(Error::InvalidSessionId { .. })),
            "{hostile:?}"
        );
        let json = serde_json::to_string(hostile).unwrap();
        assert!(
            serde_json::from_str::<SessionId>(&json).is_err(),
            "{hostile:?}"
        );
    }
}

#[cfg(unix)]
#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, store) = temp_store();
    let id = session("private");
    open(&store, &id, &ManualClock::new(t0()))
        .push(Message::user("secret"))
        .unwrap();
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(store.dir()), 0o700);
    assert_eq!(mode(&store.log_path(&id)), 0o600);
    store.vacuum(&id).unwrap();
    assert_eq!(mode(&store.log_path(&id)), 0o600);
}

#[cfg(unix)]
#[test]
fn symlinks_are_never_followed() {
    let (dir, store) = temp_store();
    let outside = dir.path().join("outside.txt");
    fs::write(&outside, "precious\n").unwrap();
    let dangling = dir.path().join("nowhere.txt");
    std::os::unix::fs::symlink(&outside, store.dir().join("link.jsonl")).unwrap();
    std::os::unix::fs::symlink(&dangling, store.dir().join("dangling.jsonl")).unwrap();
    let clock = ManualClock::new(t0());
    for name in ["link", "dangling"] {
        let error = reopen(&store, &session(name), &clock).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(store.vacuum(&session(name)).is_err());
    }
    assert_eq!(fs::read_to_string(&outside).unwrap(), "precious\n");
    assert!(!dangling.exists());
    assert!(store.sessions().unwrap().is_empty());
}

#[test]
fn sessions_are_listed_and_deleted() {
    let (_dir, store) = temp_store();
    let clock = ManualClock::new(t0());
    for name in ["b-session", "a.session"] {
        open(&store, &session(name), &clock)
            .push(Message::user(name))
            .unwrap();
    }
    fs::write(store.dir().join("notes.txt"), "not a session").unwrap();
    fs::write(store.dir().join("bad name.jsonl"), "").unwrap();
    fs::create_dir(store.dir().join("dir.jsonl")).unwrap();
    assert_eq!(
        store.sessions().unwrap(),
        [session("a.session"), session("b-session")]
    );
    store.delete(&session("a.session")).unwrap();
    store.delete(&session("never-existed")).unwrap();
    assert_eq!(store.sessions().unwrap(), [session("b-session")]);
    assert!(open(&store, &session("a.session"), &clock).is_empty());
    // Through the trait, as other backends will be used.
    let dynamic: &dyn Store = &store;
    assert_eq!(dynamic.sessions().unwrap().len(), 2);
}

#[test]
fn the_store_directory_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a").join("b");
    let store = FileStore::open(&nested).unwrap();
    assert!(nested.is_dir());
    assert_eq!(store.durability(), Durability::Sync);
    assert!(store.sessions().unwrap().is_empty());
    fs::write(dir.path().join("file"), "").unwrap();
    assert!(matches!(
        FileStore::open(dir.path().join("file")),
        Err(Error::Io { .. })
    ));
}

#[test]
fn vacuum_keeps_the_live_state_only() {
    let (_dir, store) = temp_store();
    let id = session("vacuum");
    let clock = ManualClock::new(t0());
    let before = {
        let memory = open(&store, &id, &clock);
        for i in 0..5 {
            push_exchange(&memory, i);
        }
        memory.clear().unwrap();
        for i in 5..10 {
            push_exchange(&memory, i);
        }
        memory.push(Message::assistant("answer")).unwrap();
        memory
            .apply_full_compaction(vec![Message::user("summary"), Message::assistant("ok")])
            .unwrap();
        for i in 10..14 {
            push_exchange(&memory, i);
        }
        clock.advance(hours(2));
        memory.messages();
        snapshot(&memory)
    };
    let path = store.log_path(&id);
    let size = fs::metadata(&path).unwrap().len();
    store.vacuum(&id).unwrap();
    assert!(fs::metadata(&path).unwrap().len() < size / 2);
    let kinds: Vec<_> = log_lines(&path)
        .iter()
        .map(|line| line["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds.len(), before.0.len() + 2);
    assert_eq!(&kinds[kinds.len() - 2..], ["cutoff", "snapshot"]);
    let memory = open(&store, &id, &clock);
    assert_eq!(snapshot(&memory), before);
    assert!(memory.push(Message::user("next")).unwrap() > before.0.last().unwrap().id().unwrap());
    drop(memory);
    assert!(!store.dir().join("vacuum.jsonl.tmp").exists());
    assert_eq!(store.sessions().unwrap(), [id]);
}

#[test]
fn vacuum_after_clear_keeps_the_counter() {
    let (_dir, store) = temp_store();
    let id = session("vacuum-clear");
    let clock = ManualClock::new(t0());
    {
        let memory = open(&store, &id, &clock);
        memory.push(Message::assistant("a")).unwrap();
        memory.push(Message::user("b")).unwrap();
        memory.clear().unwrap();
    }
    store.vacuum(&id).unwrap();
    assert_eq!(log_lines(&store.log_path(&id)).len(), 1);
    let memory = open(&store, &id, &clock);
    assert_eq!(memory.last_assistant_at(), None);
    assert_eq!(memory.push(Message::user("c")).unwrap(), MessageId::new(3));
    assert!(matches!(
        store.vacuum(&session("missing")),
        Err(Error::Io { .. })
    ));
}

// ---- A real child process: the crash test and the cross-process lock ----

/// Set in a child process to the task it runs.
const CHILD_TASK: &str = "CTXMEM_TEST_CHILD_TASK";
/// Set in a child process to the store directory.
const CHILD_DIR: &str = "CTXMEM_TEST_CHILD_DIR";

#[derive(Clone, Copy)]
enum Task {
    /// Pushes messages forever, printing `ACK <id> <text>` after each.
    Crash,
    /// Tries to open the session `shared` and prints the outcome.
    LockProbe,
}

fn child(task: Task, dir: &Path) -> Child {
    let task = match task {
        Task::Crash => "crash",
        Task::LockProbe => "lock-probe",
    };
    Command::new(std::env::current_exe().unwrap())
        .args(["store::child_process", "--exact", "--nocapture", "--quiet"])
        .env(CHILD_TASK, task)
        .env(CHILD_DIR, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Runs only as a child of the tests above (it does nothing in a normal test run).
#[test]
fn child_process() {
    let (Ok(task), Ok(dir)) = (std::env::var(CHILD_TASK), std::env::var(CHILD_DIR)) else {
        return;
    };
    let store = FileStore::open(PathBuf::from(dir)).unwrap();
    match task.as_str() {
        "crash" => crash_child(&store),
        "lock-probe" => match reopen(&store, &session("shared"), &ManualClock::new(t0())) {
            Ok(_) => println!("PROBE opened"),
            Err(error @ Error::Locked { .. }) => println!("PROBE Locked: {error}"),
            Err(error) => println!("PROBE failed: {error}"),
        },
        other => panic!("unknown child task {other}"),
    }
}

/// The text of the `n`th message a crash child with process id `pid` pushes.
fn crash_text(pid: u32, n: usize) -> String {
    format!("{pid}-{n}-{}", "x".repeat(n * 97 % 3000))
}

fn crash_child(store: &FileStore) -> ! {
    let clock = ManualClock::new(t0());
    let memory = open(store, &session("crash"), &clock);
    let pid = std::process::id();
    for n in 0.. {
        let message = match n % 4 {
            0 => Message::user(crash_text(pid, n)),
            1 => Message::assistant_with_tool_calls(
                crash_text(pid, n),
                vec![ToolCall::new(
                    format!("c{pid}-{n}"),
                    "read",
                    serde_json::json!({}),
                )],
            ),
            2 => Message::tool_result(format!("c{pid}-{}", n - 1), crash_text(pid, n)),
            _ => {
                clock.advance(hours(2));
                memory.messages();
                Message::assistant(crash_text(pid, n))
            }
        };
        let id = memory.push(message).unwrap();
        println!("ACK {id} {pid} {n}");
    }
    unreachable!()
}

/// A small deterministic generator, so the test needs no `rand`.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn acknowledged_messages_survive_sigkill() {
    let iterations: usize = std::env::var("CTXMEM_CRASH_ITERATIONS")
        .map(|n| n.parse().expect("CTXMEM_CRASH_ITERATIONS is a number"))
        .unwrap_or(100);
    let (_dir, store) = spawning_store();
    let id = session("crash");
    let clock = ManualClock::new(t0());
    let mut random = XorShift(0x5eed_1234_abcd_0001);
    let mut acknowledged: Vec<(MessageId, u32, usize)> = Vec::new();
    for _ in 0..iterations {
        let mut process = child(Task::Crash, store.dir());
        let mut lines = BufReader::new(process.stdout.take().unwrap()).lines();
        let kill_after = random.below(24);
        let mut seen = 0;
        while seen < kill_after {
            let Some(Ok(line)) = lines.next() else { break };
            seen += u64::from(line.starts_with("ACK "));
            acknowledged.extend(parse_ack(&line));
        }
        process.kill().unwrap(); // SIGKILL
        process.wait().unwrap();
        acknowledged.extend(lines.map_while(Result::ok).filter_map(|l| parse_ack(&l)));

        let memory = open(&store, &id, &clock);
        let history = memory.history();
        assert!(history.windows(2).all(|w| w[0].id() < w[1].id()));
        for &(id, pid, n) in &acknowledged {
            let index = history
                .binary_search_by_key(&Some(id), Message::id)
                .unwrap_or_else(|_| panic!("acknowledged message {id} is lost"));
            assert_eq!(history[index].text(), crash_text(pid, n));
        }
        assert!(
            memory.cutoff()
                <= history
                    .last()
                    .and_then(Message::id)
                    .map(|id| MessageId::new(id.get() + 1))
        );
        let max_acknowledged = acknowledged.iter().map(|a| a.0).max();
        assert!(Some(memory.push(Message::user("parent")).unwrap()) > max_acknowledged);
    }
    assert!(
        acknowledged.len() >= iterations,
        "children acknowledged too little to test anything: {}",
        acknowledged.len()
    );
}

fn parse_ack(line: &str) -> Option<(MessageId, u32, usize)> {
    let mut words = line.strip_prefix("ACK #")?.split(' ');
    let id = words.next()?.parse().ok()?;
    Some((
        MessageId::new(id),
        words.next()?.parse().ok()?,
        words.next()?.parse().ok()?,
    ))
}

// ---- Model test: the durable memory behaves like an in-memory one ----

#[derive(Clone, Debug)]
enum Op {
    User(usize),
    /// An assistant turn calling tools whose results of these sizes follow.
    Turn(Vec<usize>),
    /// The clock moves, then a request is sent.
    Send(i64),
    Clear,
    Compact,
    Reopen {
        vacuum: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..120).prop_map(Op::User),
        5 => prop::collection::vec(0usize..120, 0..3).prop_map(Op::Turn),
        4 => (0i64..150).prop_map(Op::Send),
        1 => Just(Op::Clear),
        1 => Just(Op::Compact),
        2 => any::<bool>().prop_map(|vacuum| Op::Reopen { vacuum }),
    ]
}

fn apply(memory: &ContextMemory, op: &Op, calls: &mut usize) -> Option<Vec<Message>> {
    match op {
        Op::User(size) => {
            memory.push(Message::user(body(*size))).unwrap();
        }
        Op::Turn(sizes) => {
            let first = *calls;
            *calls += sizes.len();
            let ids: Vec<String> = (first..*calls).map(|n| format!("call_{n}")).collect();
            let tool_calls = ids
                .iter()
                .map(|id| ToolCall::new(id.clone(), "tool", serde_json::json!({})))
                .collect();
            memory
                .push(Message::assistant_with_tool_calls("", tool_calls))
                .unwrap();
            for (id, size) in ids.into_iter().zip(sizes) {
                memory.push(Message::tool_result(id, body(*size))).unwrap();
            }
        }
        Op::Send(_) => return Some(memory.messages()),
        Op::Clear => memory.clear().unwrap(),
        Op::Compact => memory
            .apply_full_compaction(vec![Message::user("summary"), Message::assistant("ok")])
            .unwrap(),
        Op::Reopen { .. } => {}
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_durable_memory_matches_an_in_memory_model(
        ops in prop::collection::vec(op(), 1..50),
        buffered in any::<bool>(),
    ) {
        let (_dir, store) = temp_store();
        let store = store.with_durability(if buffered { Durability::Buffered } else { Durability::Flush });
        let id = session("model");
        let clock = ManualClock::new(t0());
        let model = ContextMemory::builder().micro_compaction(keep_messages(2)).clock(clock.clone()).build().unwrap();
        let mut durable = Some(open(&store, &id, &clock));
        let (mut model_calls, mut durable_calls) = (0, 0);
        for op in &ops {
            if let Op::Send(minutes) = op {
                clock.advance(Duration::minutes(*minutes));
            }
            if let Op::Reopen { vacuum } = op {
                drop(durable.take());
                if *vacuum {
                    store.vacuum(&id).unwrap();
                }
                durable = Some(open(&store, &id, &clock));
            }
            let memory = durable.as_ref().unwrap();
            let expected = apply(&model, op, &mut model_calls);
            prop_assert_eq!(apply(memory, op, &mut durable_calls), expected);
            prop_assert_eq!(snapshot(memory), snapshot(&model));
            prop_assert_eq!(memory.summarization_input(), model.summarization_input());
            prop_assert_eq!(memory.projected_tokens(), model.projected_tokens());
        }
        // Ids keep counting after a last reopen.
        drop(durable);
        let memory = open(&store, &id, &clock);
        prop_assert_eq!(memory.push(Message::user("end")).unwrap(), model.push(Message::user("end")).unwrap());
    }
}

// ---- Hostile counters: ids at the end of the u64 range are errors, never panics ----

/// Writes `lines` as the log of `id` and opens it.
fn open_raw(store: &FileStore, id: &SessionId, lines: &[&str]) -> Result<ContextMemory, Error> {
    fs::write(store.log_path(id), lines.concat()).unwrap();
    reopen(store, id, &ManualClock::new(t0())).map(|(memory, _)| memory)
}

#[test]
fn a_message_id_at_the_end_of_the_range_is_an_error() {
    let (_dir, store) = temp_store();
    let id = session("max-id");
    let line = "{\"v\":1,\"kind\":\"message\",\"message\":{\"id\":18446744073709551615,\"role\":\"user\",\"content\":[]}}\n";
    let error = open_raw(&store, &id, &[line]).unwrap_err();
    assert!(matches!(error, Error::Corrupt { line: 1, .. }), "{error:?}");
}

#[test]
fn an_exhausted_id_counter_refuses_writes_without_logging_them() {
    let (_dir, store) = temp_store();
    for (name, line) in [
        (
            "max-cutoff",
            "{\"v\":1,\"kind\":\"cutoff\",\"cutoff\":18446744073709551615}\n",
        ),
        (
            "max-snapshot",
            "{\"v\":1,\"kind\":\"snapshot\",\"next_id\":18446744073709551615}\n",
        ),
    ] {
        let id = session(name);
        let memory = open_raw(&store, &id, &[line]).unwrap();
        assert!(matches!(
            memory.push(Message::user("x")),
            Err(Error::Invalid(_))
        ));
        assert!(matches!(
            memory.apply_full_compaction(vec![Message::user("a"), Message::user("b")]),
            Err(Error::Invalid(_))
        ));
        assert!(memory.is_empty());
        drop(memory);
        // Nothing was logged: the session reopens as it was.
        assert_eq!(fs::read_to_string(store.log_path(&id)).unwrap(), line);
        assert!(open_raw(&store, &id, &[line]).is_ok());
    }
}

#[test]
fn a_full_compaction_keeps_the_last_assistant_time_across_reopen_and_vacuum() {
    let (_dir, store) = temp_store();
    let id = session("compaction-time");
    let clock = ManualClock::new(t0());
    let reopened = |vacuum: bool| {
        if vacuum {
            store.vacuum(&id).unwrap();
        }
        open(&store, &id, &clock).last_assistant_at()
    };
    {
        let memory = open(&store, &id, &clock);
        memory.push(Message::assistant("a")).unwrap();
        clock.advance(hours(2));
        memory
            .apply_full_compaction(vec![Message::assistant("summary")])
            .unwrap();
        assert_eq!(memory.last_assistant_at(), Some(t0()));
    }
    assert_eq!(reopened(false), Some(t0()));
    assert_eq!(reopened(true), Some(t0()));
    {
        let memory = open(&store, &id, &clock);
        memory.clear().unwrap();
        memory
            .apply_full_compaction(vec![Message::assistant("summary")])
            .unwrap();
    }
    assert_eq!(reopened(false), None);
    assert_eq!(reopened(true), None);
}

#[test]
fn a_well_formed_line_that_breaks_the_log_names_the_file_and_line() {
    let (_dir, store) = temp_store();
    let id = session("out-of-order");
    let (bytes, _) = small_log(&store, &id);
    // The first line again, as line 4: its id goes backwards.
    let first_line_end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut corrupted = bytes.clone();
    corrupted.extend_from_slice(&bytes[..first_line_end]);
    fs::write(store.log_path(&id), &corrupted).unwrap();
    let error = reopen(&store, &id, &ManualClock::new(t0())).unwrap_err();
    match &error {
        Error::Corrupt { path, line, .. } => {
            assert_eq!(path, &store.log_path(&id));
            assert_eq!(*line, 4);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(error.to_string().contains("line 4"), "{error}");
    assert_eq!(fs::read(store.log_path(&id)).unwrap(), corrupted);

    // With a torn tail after it, the file is still left exactly as it was.
    corrupted.extend_from_slice(b"{\"v\":1,\"ki");
    fs::write(store.log_path(&id), &corrupted).unwrap();
    let error = reopen(&store, &id, &ManualClock::new(t0())).unwrap_err();
    assert!(matches!(error, Error::Corrupt { line: 4, .. }), "{error:?}");
    assert_eq!(fs::read(store.log_path(&id)).unwrap(), corrupted);
}

#[test]
fn a_store_and_a_session_come_together() {
    let (_dir, store) = temp_store();
    let without_session = ContextMemory::builder().store(store).build();
    assert!(matches!(without_session, Err(Error::Config(_))));
    // A session without a store would silently keep nothing.
    let without_store = ContextMemory::builder().session(session("s")).build();
    assert!(matches!(without_store, Err(Error::Config(_))));
}

#[test]
fn read_takes_no_lock_and_leaves_a_torn_tail_in_place() {
    let (_dir, store) = temp_store();
    let chat = session("chat");
    let clock = ManualClock::new(t0());
    let memory = open(&store, &chat, &clock);
    push_exchange(&memory, 0);
    clock.advance(hours(2));
    let sent = memory.messages(); // advances and logs the cutoff (keep 2)
                                  // A torn record at the end, as a crash mid-write leaves it.
    let path = store.log_path(&chat);
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"v":1,"kind":"mess"#);
    fs::write(&path, &bytes).unwrap();

    // While the writer holds the session, a reader gets what it sends.
    let records = store.read(&chat).unwrap();
    let copy = ContextMemory::builder()
        .clock(clock.clone())
        .records(records)
        .build()
        .unwrap();
    assert_eq!(copy.cutoff(), memory.cutoff());
    assert_eq!(copy.messages(), sent);
    assert_eq!(
        fs::read(&path).unwrap(),
        bytes,
        "the reader changed nothing"
    );
    assert!(matches!(
        store.read(&session("missing")),
        Err(Error::Io { .. })
    ));
}

#[test]
fn a_store_path_that_is_a_file_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    fs::write(&file, "x").unwrap();
    let error = FileStore::open(&file).unwrap_err();
    assert!(error.to_string().contains("not a directory"), "{error}");
    assert_eq!(fs::read(&file).unwrap(), b"x");
}
