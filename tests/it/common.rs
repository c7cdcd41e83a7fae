//! Helpers shared by the test modules.
#![allow(dead_code)]

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use ctxmem::*;
use parking_lot::Mutex;

pub const PLACEHOLDER: &str = "[Old tool result content cleared]";

pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap()
}

/// A memory on a manual clock standing at `t0()`, with its event log.
pub fn memory_with(
    config: MicroCompactionConfig,
) -> (ContextMemory, ManualClock, Arc<Mutex<Vec<Event>>>) {
    let clock = ManualClock::new(t0());
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let memory = ContextMemory::builder()
        .micro_compaction(config)
        .clock(clock.clone())
        .on_event(move |event| sink.lock().push(event.clone()))
        .build()
        .unwrap();
    (memory, clock, events)
}

pub fn keep_messages(n: usize) -> MicroCompactionConfig {
    MicroCompactionConfig {
        keep_recent: Keep::Messages(n),
        ..Default::default()
    }
}

/// A body of `tokens` estimated tokens (4 ASCII characters each).
pub fn body(tokens: usize) -> String {
    "abcd".repeat(tokens)
}

/// Pushes one exchange: user, assistant with a call `call_{i}`, a 100-token result.
pub fn push_exchange(memory: &ContextMemory, i: usize) {
    memory.push(Message::user(format!("question {i}"))).unwrap();
    let call = ToolCall::new(
        format!("call_{i}"),
        "read_file",
        serde_json::json!({ "i": i }),
    );
    memory
        .push(Message::assistant_with_tool_calls("", vec![call]))
        .unwrap();
    memory
        .push(Message::tool_result(format!("call_{i}"), body(100)))
        .unwrap();
}

pub fn cleared_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role() == Role::Tool && m.text() == PLACEHOLDER)
        .map(|m| m.tool_call_id().unwrap().to_owned())
        .collect()
}

pub fn hours(h: i64) -> Duration {
    Duration::hours(h)
}

/// A file under `fixtures/import/`.
pub fn import_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/import")
        .join(name)
}

/// Imports a file under `fixtures/import/`, detecting its format.
pub fn import_fixture_file(name: &str) -> Transcript {
    import_file(&import_fixture(name), &ImportOptions::default()).unwrap()
}
