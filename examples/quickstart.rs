//! Loads the small coding session in `fixtures/quickstart.jsonl` (one ctxmem message
//! per line), sends it while the prompt cache is warm, then again after an idle gap,
//! and prints what the model would receive each time.
//!
//! Run: `cargo run --example quickstart`

use std::path::Path;

use anyhow::Context;
use chrono::Duration;
use ctxmem::*;

fn main() -> anyhow::Result<()> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/quickstart.jsonl");
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    let mut session = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let message: Message = serde_json::from_str(line)
            .with_context(|| format!("{}: line {}", path.display(), index + 1))?;
        session.push(message);
    }
    let start = session
        .first()
        .and_then(Message::at)
        .context("the fixture's first message has no time")?;

    let clock = ManualClock::new(start);
    let memory = ContextMemory::builder()
        .micro_compaction(MicroCompactionConfig {
            keep_recent: Keep::Messages(4),
            ..Default::default()
        })
        .clock(clock.clone())
        .on_event(|event| println!("event: {event:?}"))
        .build()?;
    for message in session {
        clock.set(message.at().unwrap_or(start));
        memory.push(message)?;
    }

    clock.advance(Duration::minutes(5));
    let warm = memory.messages();
    println!("== 5 minutes after the last message (cache warm): sent verbatim");
    print_history(&warm);
    let before = memory.projected_tokens();

    clock.advance(Duration::hours(2));
    let cold = memory.messages();
    println!("\n== after a 2 hour idle gap (cache expired): old tool results cleared");
    print_history(&cold);
    let after = memory.projected_tokens();
    println!(
        "\nestimated tokens sent: {before} before, {after} after ({:.0}% saved); cutoff {:?}",
        100.0 * (before - after) as f64 / before as f64,
        memory.cutoff().map(MessageId::get),
    );
    let original = memory.original("toolu_01").context("toolu_01 is stored")?;
    println!(
        "stored history untouched: toolu_01 still has {} characters",
        original.text().len()
    );
    Ok(())
}

fn print_history(messages: &[Message]) {
    println!("{:>4}  {:<9}  {:>6}  text", "id", "role", "tokens");
    for message in messages {
        let text = message.text().replace('\n', " ");
        let preview: String = text.chars().take(60).collect();
        println!(
            "{:>4}  {:<9}  {:>6}  {}{}",
            message.id().map(MessageId::get).unwrap_or_default(),
            message.role(),
            CharEstimator.message_tokens(message),
            preview,
            if text.chars().count() > 60 { "…" } else { "" },
        );
    }
}
