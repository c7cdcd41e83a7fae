//! `FileStore`: append throughput for each `Durability`, and replay of a ~100 MB
//! session log, next to `serde_json` parsing the same lines into `serde_json::Value`.

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use ctxmem::*;

fn clock() -> ManualClock {
    ManualClock::new(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap())
}

fn memory(store: &FileStore, session: &SessionId, clock: &ManualClock) -> ContextMemory {
    ContextMemory::builder()
        .clock(clock.clone())
        .store(store.clone())
        .session(session.clone())
        .build()
        .expect("the bench session opens")
}

/// One push of a 1,000-character tool result; each sample starts a fresh session.
fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::new("append").unwrap();
    let message = Message::tool_result("call_1", "fn main() {}\n".repeat(77));
    let mut group = c.benchmark_group("append");
    group.throughput(Throughput::Elements(1));
    for durability in [Durability::Buffered, Durability::Flush, Durability::Sync] {
        if durability == Durability::Sync {
            group.sample_size(20);
        }
        let store = FileStore::open(dir.path())
            .unwrap()
            .with_durability(durability);
        let id = BenchmarkId::from_parameter(format!("{durability:?}"));
        group.bench_function(id, |b| {
            b.iter_custom(|pushes| {
                let memory = memory(&store, &session, &clock());
                let start = Instant::now();
                for _ in 0..pushes {
                    memory.push(message.clone()).unwrap();
                }
                drop(memory); // `Buffered` writes what waits here
                let elapsed = start.elapsed();
                store.delete(&session).unwrap();
                elapsed
            })
        });
    }
    group.finish();
}

/// Writes a log of about `bytes`: exchanges of a question, a tool call and a
/// 4,000-character result with newlines and quotes; an idle gap and a cutoff after
/// every 50 exchanges.
fn big_log(store: &FileStore, session: &SessionId, bytes: u64) {
    let clock = clock();
    let memory = memory(store, session, &clock);
    let result: String = (0..100)
        .map(|line| format!("{line:>4}: let value = \"text\"; // some code\n"))
        .collect();
    let mut exchange = 0;
    while std::fs::metadata(store.log_path(session)).unwrap().len() < bytes {
        for _ in 0..50 {
            let call_id = format!("call_{exchange}");
            memory
                .push(Message::user(format!("Please read file {exchange}")))
                .unwrap();
            let call = ToolCall::new(
                call_id.clone(),
                "read_file",
                serde_json::json!({ "path": format!("src/{exchange}.rs") }),
            );
            memory
                .push(Message::assistant_with_tool_calls(
                    "Reading it.",
                    vec![call],
                ))
                .unwrap();
            memory.push(Message::tool_result(call_id, &result)).unwrap();
            exchange += 1;
        }
        memory.push(Message::assistant("Done.")).unwrap();
        clock.advance(chrono::Duration::hours(2));
        memory.messages();
    }
}

fn replay(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path())
        .unwrap()
        .with_durability(Durability::Buffered);
    let session = SessionId::new("replay").unwrap();
    big_log(&store, &session, 100_000_000);
    let path = store.log_path(&session);
    let size = std::fs::metadata(&path).unwrap().len();

    let mut group = c.benchmark_group("replay_100mb");
    group.throughput(Throughput::Bytes(size));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    group.bench_function("serde_json_value", |b| {
        b.iter(|| {
            let bytes = std::fs::read(&path).unwrap();
            bytes
                .split(|&b| b == b'\n')
                .filter(|line| !line.is_empty())
                .map(|line| serde_json::from_slice(line).unwrap())
                .collect::<Vec<serde_json::Value>>()
                .len()
        })
    });
    group.bench_function("file_store_open", |b| {
        b.iter(|| store.open(&session).unwrap().records.len())
    });
    group.bench_function("memory_build", |b| {
        b.iter(|| memory(&store, &session, &clock()).len())
    });
    group.finish();
}

criterion_group!(benches, append, replay);
criterion_main!(benches);
