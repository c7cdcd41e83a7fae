//! `ContextMemory::messages()` on the core issue's workload (also peerbench's): N
//! exchanges of user + assistant with one tool call + a 4,000-character tool result,
//! clock past the idle gap, `Keep::Messages(20)`, `min_tokens` 1.

use chrono::{Duration, TimeZone, Utc};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ctxmem::*;

fn memory(exchanges: usize, body_chars: usize) -> ContextMemory {
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let clock = ManualClock::new(t0);
    let memory = ContextMemory::builder()
        .clock(clock.clone())
        .micro_compaction(MicroCompactionConfig {
            keep_recent: Keep::Messages(20),
            min_tokens: 1,
            ..Default::default()
        })
        .build()
        .expect("in-memory build cannot fail");
    let body = "x".repeat(body_chars);
    for i in 0..exchanges {
        let id = format!("call_{i}");
        memory.push(Message::user(format!("question {i}"))).unwrap();
        let call = ToolCall::new(id.clone(), "read", serde_json::json!({ "i": i }));
        memory
            .push(Message::assistant_with_tool_calls("", vec![call]))
            .unwrap();
        memory.push(Message::tool_result(id, body.clone())).unwrap();
    }
    clock.set(t0 + Duration::hours(2));
    memory.messages(); // the advance happens once; later calls reuse it
    memory
}

fn projection(c: &mut Criterion) {
    let mut group = c.benchmark_group("messages");
    for exchanges in [500, 5_000] {
        let memory = memory(exchanges, 4_000);
        group.bench_with_input(
            BenchmarkId::from_parameter(exchanges * 3),
            &memory,
            |b, memory| b.iter(|| memory.messages()),
        );
    }
    group.finish();

    // Cost should follow the message count, not the body size.
    let mut group = c.benchmark_group("messages_body_size");
    for body_chars in [400, 16_000] {
        let memory = memory(5_000, body_chars);
        group.bench_with_input(
            BenchmarkId::from_parameter(body_chars),
            &memory,
            |b, memory| b.iter(|| memory.messages()),
        );
    }
    group.finish();
}

criterion_group!(benches, projection);
criterion_main!(benches);
