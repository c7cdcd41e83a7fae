//! Harness integrations: the middleware, the `ContextCompaction` hook and full compaction.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use chrono::Duration;
use ctxmem::*;
use parking_lot::Mutex;
use proptest::prelude::*;

use crate::common::*;

/// A minimal executor: polls on this thread, parking until woken.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => thread::park(),
        }
    }
}

fn session(id: &str) -> SessionId {
    SessionId::new(id).unwrap()
}

// ---------------------------------------------------------------- middleware

/// [system, user, tool t1, assistant, tool t2, tool t3]
fn seed_messages() -> Vec<Message> {
    vec![
        Message::system("You are a helpful agent."),
        Message::user("Look around."),
        Message::tool_result("t1", body(100)),
        Message::assistant("Let me look further."),
        Message::tool_result("t2", body(100)),
        Message::tool_result("t3", body(100)),
    ]
}

fn run(middleware: &MicrocompactMiddleware, messages: &mut Vec<Message>) -> Vec<Event> {
    let mut events = Vec::new();
    middleware.before_model(messages, &mut events);
    events
}

#[test]
fn middleware_clears_older_bodies_and_keeps_the_recent_ones() {
    let original = seed_messages();
    let mut messages = original.clone();
    run(&MicrocompactMiddleware::new(1, "[cleared]"), &mut messages);
    assert_eq!(messages.len(), original.len());
    assert_eq!(messages[2].text(), "[cleared]");
    assert_eq!(messages[2].tool_call_id(), Some("t1"));
    assert_eq!(messages[4].text(), "[cleared]");
    assert_eq!(messages[4].tool_call_id(), Some("t2"));
    assert_eq!(messages[5], original[5]);
    for index in [0, 1, 3] {
        assert_eq!(messages[index], original[index]);
    }
}

#[test]
fn middleware_is_a_no_op_within_keep_recent() {
    let original = seed_messages();
    for keep in [3, 4] {
        let mut messages = original.clone();
        let events = run(
            &MicrocompactMiddleware::new(keep, "[cleared]").with_events(true),
            &mut messages,
        );
        assert_eq!(messages, original);
        assert!(events.is_empty());
    }
}

#[test]
fn middleware_is_idempotent() {
    let middleware = MicrocompactMiddleware::new(1, "[cleared]").with_events(true);
    let mut once = seed_messages();
    run(&middleware, &mut once);
    let mut twice = once.clone();
    let events = run(&middleware, &mut twice);
    assert_eq!(twice, once);
    assert!(
        events.is_empty(),
        "a pass that changes nothing reports nothing"
    );
}

#[test]
fn middleware_emits_no_event_by_default() {
    let mut messages = seed_messages();
    let events = run(&MicrocompactMiddleware::new(1, "[cleared]"), &mut messages);
    assert_eq!(messages[2].text(), "[cleared]");
    assert!(events.is_empty());
}

#[test]
fn middleware_emits_one_compressed_event_when_enabled() {
    let mut messages = seed_messages();
    let middleware = MicrocompactMiddleware::new(1, "[cleared]").with_events(true);
    let events = run(&middleware, &mut messages);
    match events.as_slice() {
        [Event::Compressed {
            from_tokens,
            to_tokens,
        }] => assert!(from_tokens > to_tokens, "{from_tokens} -> {to_tokens}"),
        other => panic!("expected one Compressed event, got {other:?}"),
    }
}

#[test]
fn middleware_surface() {
    let middleware = MicrocompactMiddleware::new(2, "[gone]");
    assert_eq!(middleware.name(), "microcompact");
    assert_eq!(middleware.keep_recent(), 2);
    assert_eq!(middleware.placeholder(), "[gone]");
    assert_eq!(middleware.batching(), None);
    let batched = middleware.with_batching(Batch::Results(5));
    assert_eq!(batched.batching(), Some(Batch::Results(5)));
}

#[test]
fn middleware_keep_zero_clears_every_result() {
    let mut messages = seed_messages();
    run(&MicrocompactMiddleware::new(0, "[cleared]"), &mut messages);
    assert_eq!(
        messages.iter().filter(|m| m.text() == "[cleared]").count(),
        3
    );
}

/// Appends a middleware's name to a shared log, to see the running order.
struct Recorder(&'static str, Arc<Mutex<Vec<String>>>);

impl Middleware for Recorder {
    fn name(&self) -> &str {
        self.0
    }
    fn before_model(&self, messages: &mut Vec<Message>, _events: &mut Vec<Event>) {
        let cleared = messages.iter().filter(|m| m.text() == "[cleared]").count();
        self.1
            .lock()
            .push(format!("{} saw {cleared} cleared", self.0));
    }
}

#[test]
fn stack_runs_middlewares_in_order_and_collects_their_events() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut stack = MiddlewareStack::new();
    assert!(stack.is_empty());
    let boxed: Box<dyn Middleware> = Box::new(Recorder("first", log.clone()));
    stack.push(boxed);
    stack.push(MicrocompactMiddleware::new(1, "[cleared]").with_events(true));
    stack.push(Recorder("last", log.clone()));
    assert_eq!(
        stack.names().collect::<Vec<_>>(),
        ["first", "microcompact", "last"]
    );
    let mut messages = seed_messages();
    let events = stack.run_before_model(&mut messages);
    assert_eq!(*log.lock(), ["first saw 0 cleared", "last saw 2 cleared"]);
    assert!(matches!(events.as_slice(), [Event::Compressed { .. }]));
}

/// Simulates `calls` model requests of a tool-heavy loop: each adds an assistant tool
/// call and its result, then the harness sends its history through `middleware`.
/// Returns how many requests broke the previous request's prefix (a prompt-cache
/// miss past the new messages) and the most verbatim results any request carried.
fn simulate(middleware: &MicrocompactMiddleware, calls: usize) -> (usize, usize) {
    let mut history = vec![Message::system("agent"), Message::user("go")];
    let mut previous: Vec<Message> = Vec::new();
    let (mut breaks, mut most_verbatim) = (0, 0);
    for i in 0..calls {
        let id = format!("call_{i}");
        let call = ToolCall::new(id.clone(), "read_file", serde_json::json!({ "i": i }));
        history.push(Message::assistant_with_tool_calls("", vec![call]));
        history.push(Message::tool_result(id, body(100)));
        let mut request = history.clone();
        middleware.before_model(&mut request, &mut Vec::new());
        if request[..previous.len()] != previous[..] {
            breaks += 1;
        }
        let verbatim = request
            .iter()
            .filter(|m| m.is_tool_result() && m.text() != "[cleared]")
            .count();
        most_verbatim = most_verbatim.max(verbatim);
        previous = request;
    }
    (breaks, most_verbatim)
}

#[test]
fn seed_middleware_breaks_the_prefix_on_every_call_past_keep_recent() {
    let (breaks, most_verbatim) = simulate(&MicrocompactMiddleware::new(3, "[cleared]"), 50);
    assert_eq!(breaks, 47);
    assert_eq!(most_verbatim, 3);
}

#[test]
fn batching_middleware_sends_far_fewer_distinct_prefixes() {
    let batched = MicrocompactMiddleware::new(3, "[cleared]").with_batching(Batch::Results(10));
    let (breaks, most_verbatim) = simulate(&batched, 50);
    // The boundary moves after 13, 23, 33 and 43 results: 4 breaks, 5 distinct prefixes.
    assert_eq!(breaks, 4);
    assert_eq!(most_verbatim, 3 + 10 - 1);
}

#[test]
fn batching_by_tokens_moves_once_enough_tokens_are_clearable() {
    // Each result is 100 tokens: 500 tokens is a batch of five.
    let batched = MicrocompactMiddleware::new(2, "[cleared]").with_batching(Batch::Tokens(500));
    let (breaks, most_verbatim) = simulate(&batched, 50);
    assert_eq!(breaks, 9);
    assert_eq!(most_verbatim, 2 + 5 - 1);
}

#[test]
fn batching_keeps_cleared_results_cleared_on_later_calls() {
    let batched = MicrocompactMiddleware::new(1, "[cleared]").with_batching(Batch::Results(2));
    // Up to t2 only t1 is clearable: below the batch, nothing moves.
    let mut short = seed_messages()[..5].to_vec();
    run(&batched, &mut short);
    assert_eq!(short, seed_messages()[..5]);
    let mut first = seed_messages();
    run(&batched, &mut first);
    assert_eq!(cleared_ids_of(&first), ["t1", "t2"]);
    // The harness sends its uncleared history again: the same bodies are cleared.
    let mut again = seed_messages();
    run(&batched, &mut again);
    assert_eq!(again, first);
}

fn cleared_ids_of(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m.text() == "[cleared]")
        .filter_map(Message::tool_call_id)
        .collect()
}

// ---------------------------------------------------------------- MicroCompactor

/// `n` exchanges (user, assistant calling `call_{i}`, its 100-token result), then an
/// assistant answer; no times, no ids.
fn untimed_history(n: usize) -> Vec<Message> {
    let mut messages = Vec::new();
    for i in 0..n {
        let id = format!("call_{i}");
        let call = ToolCall::new(id.clone(), "read_file", serde_json::json!({ "i": i }));
        messages.push(Message::user(format!("question {i}")));
        messages.push(Message::assistant_with_tool_calls("", vec![call]));
        messages.push(Message::tool_result(id, body(100)));
    }
    messages.push(Message::assistant("All read."));
    messages
}

/// [`untimed_history`] with every message at `t0()`.
fn timed_history(n: usize) -> Vec<Message> {
    untimed_history(n)
        .into_iter()
        .map(|m| m.with_time(t0()))
        .collect()
}

fn keep_results(n: usize) -> MicroCompactionConfig {
    MicroCompactionConfig {
        keep_recent: Keep::ToolResults(n),
        ..Default::default()
    }
}

#[test]
fn micro_compactor_compacts_after_the_gap_and_not_while_warm() {
    let clock = ManualClock::new(t0());
    let compactor = MicroCompactor::new(keep_results(1)).with_clock(clock.clone());
    let messages = timed_history(3);
    let chat = session("chat");

    clock.advance(Duration::minutes(59));
    assert_eq!(block_on(compactor.compact(&chat, &messages)), None);

    clock.advance(Duration::minutes(1));
    let outcome = block_on(compactor.compact(&chat, &messages)).expect("idle: compacts");
    assert_eq!(outcome.kind, CompactionKind::MicroCompaction);
    assert_eq!(cleared_ids(&outcome.messages), ["call_0", "call_1"]);
    assert_eq!(outcome.messages.len(), messages.len());
    assert_eq!(outcome.messages[8], messages[8]);
}

#[test]
fn micro_compactor_output_is_stable_and_what_was_cleared_stays_cleared() {
    let clock = ManualClock::new(t0());
    let compactor = MicroCompactor::new(keep_results(1)).with_clock(clock.clone());
    let chat = session("chat");
    let mut history = timed_history(3);
    clock.advance(hours(2));

    let first = block_on(compactor.compact(&chat, &history)).unwrap();
    let second = block_on(compactor.compact(&chat, &history)).unwrap();
    assert_eq!(first, second, "the same input gives the same output");
    // Installed, nothing more would change.
    history = first.messages;
    assert_eq!(block_on(compactor.compact(&chat, &history)), None);

    // A warm stretch: new results stay verbatim, the installed prefix is untouched.
    for i in 3..6 {
        clock.advance(Duration::minutes(1));
        let call = ToolCall::new(format!("call_{i}"), "read_file", serde_json::json!({}));
        history.push(Message::assistant_with_tool_calls("", vec![call]).with_time(clock.now()));
        history.push(Message::tool_result(format!("call_{i}"), body(100)).with_time(clock.now()));
        assert_eq!(block_on(compactor.compact(&chat, &history)), None);
    }

    // The harness forgot to install: the cleared bodies are cleared again.
    let mut uncleared = timed_history(3);
    uncleared.extend_from_slice(&history[uncleared.len()..]);
    let reapplied = block_on(compactor.compact(&chat, &uncleared)).unwrap();
    assert_eq!(reapplied.messages, history);

    // The next gap advances again.
    clock.advance(hours(2));
    let later = block_on(compactor.compact(&chat, &history)).unwrap();
    assert_eq!(
        cleared_ids(&later.messages),
        ["call_0", "call_1", "call_2", "call_3", "call_4"]
    );
}

#[test]
fn micro_compactor_works_through_a_boxed_trait_object() {
    let clock = ManualClock::new(t0());
    let compactor: Box<dyn ContextCompaction> =
        Box::new(MicroCompactor::new(keep_results(1)).with_clock(clock.clone()));
    let chat = session("chat");
    let messages = timed_history(3);
    assert_eq!(compactor.token_count_hint(&chat), None);

    assert_eq!(block_on(compactor.compact(&chat, &messages)), None);
    let warm_tokens = compactor.token_count_hint(&chat).unwrap();
    clock.advance(hours(2));
    assert!(block_on(compactor.compact(&chat, &messages)).is_some());
    let cold_tokens = compactor.token_count_hint(&chat).unwrap();
    assert!(cold_tokens < warm_tokens, "{cold_tokens} < {warm_tokens}");
    assert_eq!(compactor.token_count_hint(&session("other")), None);
}

#[test]
fn micro_compactor_keeps_sessions_apart() {
    let clock = ManualClock::new(t0());
    let compactor = MicroCompactor::new(keep_results(1)).with_clock(clock.clone());
    let messages = timed_history(3);
    clock.advance(hours(2));
    assert!(block_on(compactor.compact(&session("a"), &messages)).is_some());
    compactor.forget(&session("a"));
    assert_eq!(compactor.token_count_hint(&session("a")), None);
    assert!(block_on(compactor.compact(&session("b"), &messages)).is_some());
}

#[test]
fn micro_compactor_counts_untimed_assistant_messages_from_first_sight() {
    let clock = ManualClock::new(t0());
    let compactor = MicroCompactor::new(keep_results(1)).with_clock(clock.clone());
    let chat = session("chat");
    let untimed = untimed_history(3);

    // Seen for the first time now: the cache is taken to be warm.
    assert_eq!(block_on(compactor.compact(&chat, &untimed)), None);
    clock.advance(hours(2));
    assert!(block_on(compactor.compact(&chat, &untimed)).is_some());

    // A new untimed assistant message is as fresh as the moment it is seen.
    let mut longer = untimed.clone();
    let call = ToolCall::new("call_9", "read_file", serde_json::json!({}));
    longer.push(Message::assistant_with_tool_calls("", vec![call]));
    longer.push(Message::tool_result("call_9", body(100)));
    let before = block_on(compactor.compact(&chat, &longer)).unwrap();
    clock.advance(Duration::minutes(30));
    let warm = block_on(compactor.compact(&chat, &longer)).unwrap();
    assert_eq!(warm, before, "no new clearing while warm");
    assert_eq!(cleared_ids(&warm.messages), ["call_0", "call_1"]);
    clock.advance(hours(1));
    let cold = block_on(compactor.compact(&chat, &longer)).unwrap();
    assert_eq!(cleared_ids(&cold.messages), ["call_0", "call_1", "call_2"]);
}

#[test]
fn micro_compactor_knows_untimed_assistant_messages_after_the_head_is_dropped() {
    let clock = ManualClock::new(t0());
    let compactor = MicroCompactor::new(keep_results(1)).with_clock(clock.clone());
    let chat = session("chat");
    let untimed = untimed_history(4);
    assert_eq!(block_on(compactor.compact(&chat, &untimed)), None);

    // The harness trims its oldest exchange (or summarized it): the assistant messages
    // left are the ones seen at t0, so two hours later the cache is cold.
    clock.advance(hours(2));
    let trimmed = &untimed[3..];
    let outcome = block_on(compactor.compact(&chat, trimmed)).expect("idle since t0");
    assert_eq!(cleared_ids(&outcome.messages), ["call_1", "call_2"]);
}

#[test]
fn micro_compactor_takes_equal_untimed_assistant_messages_that_survive_a_trim_as_the_latest() {
    let clock = ManualClock::new(t0());
    let compactor = MicroCompactor::new(keep_results(1)).with_clock(clock.clone());
    let chat = session("chat");
    let call = |id: &str| ToolCall::new(id, "read_file", serde_json::json!({}));
    let mut messages = vec![
        Message::assistant("OK"),
        Message::assistant_with_tool_calls("", vec![call("c0")]),
        Message::tool_result("c0", body(100)),
        Message::assistant_with_tool_calls("", vec![call("c1")]),
        Message::tool_result("c1", body(100)),
    ];
    assert_eq!(block_on(compactor.compact(&chat, &messages)), None);
    clock.advance(Duration::minutes(50));
    messages.push(Message::assistant("OK"));
    assert_eq!(block_on(compactor.compact(&chat, &messages)), None);

    // The first "OK" is trimmed: the one left is the one seen 20 minutes ago.
    clock.advance(Duration::minutes(20));
    assert_eq!(block_on(compactor.compact(&chat, &messages[1..])), None);
}

#[test]
fn micro_compactor_follows_the_same_rules_as_context_memory() {
    let config = MicroCompactionConfig {
        keep_recent: Keep::Messages(4),
        exclude_tools: vec!["grep".into()],
        ..Default::default()
    };
    let (memory, clock, _) = memory_with(config.clone());
    for i in 0..4 {
        push_exchange(&memory, i);
    }
    let grep = ToolCall::new("g", "grep", serde_json::json!({}));
    memory
        .push(Message::assistant_with_tool_calls("", vec![grep]))
        .unwrap();
    memory.push(Message::tool_result("g", body(100))).unwrap();
    memory
        .push(Message::tool_result("tiny", "ok").with_tool_name("ls"))
        .unwrap();
    memory.push(Message::assistant("done")).unwrap();
    for i in 4..6 {
        push_exchange(&memory, i);
    }
    clock.advance(hours(2));
    let compactor = MicroCompactor::new(config).with_clock(clock.clone());
    let outcome = block_on(compactor.compact(&session("same"), &memory.history())).unwrap();
    assert_eq!(outcome.messages, memory.messages());
}

#[test]
fn disabled_micro_compactor_never_compacts() {
    let clock = ManualClock::new(t0());
    let config = MicroCompactionConfig {
        enabled: false,
        ..keep_results(0)
    };
    let compactor = MicroCompactor::new(config).with_clock(clock.clone());
    clock.advance(hours(5));
    assert_eq!(
        block_on(compactor.compact(&session("c"), &timed_history(3))),
        None
    );
}

// ---------------------------------------------------------------- full compaction

/// A summarizer that records what it received and answers with `reply`.
#[derive(Clone, Default)]
struct Recording {
    received: Arc<Mutex<Vec<Vec<Message>>>>,
    reply: Option<String>,
    /// A message it pushes into this memory while summarizing.
    push_into: Option<Arc<ContextMemory>>,
}

impl Recording {
    fn replying(reply: &str) -> Self {
        Recording {
            reply: Some(reply.to_owned()),
            ..Default::default()
        }
    }

    fn calls(&self) -> Vec<Vec<Message>> {
        self.received.lock().clone()
    }
}

impl Summarizer for Recording {
    fn summarize<'a>(&'a self, messages: &'a [Message]) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move {
            self.received.lock().push(messages.to_vec());
            if let Some(memory) = &self.push_into {
                memory.push(Message::user("typed while summarizing"))?;
            }
            self.reply
                .clone()
                .ok_or_else(|| Error::External("the model is down".into()))
        })
    }
}

/// A memory of five exchanges, micro-compacted once after an idle gap.
fn compacted_memory() -> (ContextMemory, Arc<Mutex<Vec<Event>>>) {
    let (memory, clock, events) = memory_with(keep_messages(4));
    for i in 0..5 {
        push_exchange(&memory, i);
    }
    memory.push(Message::assistant("All five read.")).unwrap();
    clock.advance(hours(2));
    memory.messages();
    assert!(memory.cutoff().is_some());
    (memory, events)
}

fn full(keep_recent: usize) -> FullCompaction {
    FullCompaction::new(CompactionTrigger::Tokens(100))
        .unwrap()
        .with_keep_recent(keep_recent)
}

#[test]
fn summarizer_receives_the_cleared_head_and_the_tail_is_kept_verbatim() {
    let (memory, events) = compacted_memory();
    let input = memory.summarization_input();
    let stored = memory.history();
    let summarizer = Recording::replying("They read five files.");

    let outcome = block_on(full(2).compact_memory(&memory, &summarizer))
        .unwrap()
        .expect("over the trigger and smaller");

    let calls = summarizer.calls();
    assert_eq!(calls.len(), 1);
    // 16 messages, keep 2: a cut at 14 would split call_4 (13) from its result (14).
    assert_eq!(calls[0], input[..13]);
    assert_eq!(
        cleared_ids(&calls[0]),
        ["call_0", "call_1", "call_2", "call_3"]
    );

    let installed = memory.history();
    assert_eq!(outcome.kind, CompactionKind::FullCompaction);
    assert_eq!(outcome.messages, installed);
    assert_eq!(
        installed[0].text(),
        format!("{DEFAULT_SUMMARY_PREFIX}They read five files.")
    );
    assert_eq!(installed[0].role(), Role::User);
    let texts = |messages: &[Message]| messages.iter().map(Message::text).collect::<Vec<_>>();
    assert_eq!(texts(&installed[1..]), texts(&stored[13..]));
    // The cutoff is reset, and said so.
    assert_eq!(memory.cutoff(), None);
    assert_eq!(
        events.lock().last(),
        Some(&Event::CutoffReset {
            reason: ResetReason::FullCompaction
        })
    );
}

#[test]
fn the_cut_never_splits_an_assistant_call_from_its_results() {
    let call = |id: &str| ToolCall::new(id, "read_file", serde_json::json!({}));
    let messages = vec![
        Message::user("read both"),
        Message::assistant_with_tool_calls("", vec![call("a"), call("b")]),
        Message::tool_result("a", body(10)),
        Message::tool_result("b", body(10)),
        Message::assistant("both read"),
    ];
    for keep in 0..=5 {
        let cut = full(keep).cut_point(&messages);
        let expected = match keep {
            0 | 1 => Some(5 - keep),
            2..=4 => Some(1),
            _ => None,
        };
        assert_eq!(cut, expected, "keep {keep}");
    }
}

#[test]
fn a_failing_summarizer_leaves_the_history_intact() {
    let (memory, events) = compacted_memory();
    let (history, cutoff, seen) = (memory.history(), memory.cutoff(), events.lock().len());
    let failing = Recording::default();
    let result = block_on(full(3).compact_memory(&memory, &failing));
    assert!(matches!(result, Err(Error::External(_))), "{result:?}");
    assert_eq!(failing.calls().len(), 1);
    assert_eq!(memory.history(), history);
    assert_eq!(memory.cutoff(), cutoff);
    assert_eq!(events.lock().len(), seen);
}

#[test]
fn aborts_when_the_result_would_not_be_smaller() {
    let (memory, _) = compacted_memory();
    let history = memory.history();
    let verbose = Recording::replying(&body(10_000));
    assert!(block_on(full(3).compact_memory(&memory, &verbose))
        .unwrap()
        .is_none());
    assert_eq!(verbose.calls().len(), 1);
    assert_eq!(memory.history(), history);
}

#[test]
fn skips_below_the_trigger_without_calling_the_summarizer() {
    let (memory, _) = compacted_memory();
    let tokens = memory.projected_tokens();
    let summarizer = Recording::replying("short");
    let high = FullCompaction::new(CompactionTrigger::Tokens(tokens + 1)).unwrap();
    assert!(block_on(high.compact_memory(&memory, &summarizer))
        .unwrap()
        .is_none());
    let all_kept = full(100);
    assert!(block_on(all_kept.compact_memory(&memory, &summarizer))
        .unwrap()
        .is_none());
    assert!(summarizer.calls().is_empty());
}

#[test]
fn messages_pushed_while_summarizing_are_kept() {
    let (memory, _) = compacted_memory();
    let memory = Arc::new(memory);
    let summarizer = Recording {
        push_into: Some(memory.clone()),
        ..Recording::replying("summary")
    };
    block_on(full(3).compact_memory(&memory, &summarizer))
        .unwrap()
        .unwrap();
    let history = memory.history();
    assert_eq!(history.len(), 1 + 3 + 1);
    assert_eq!(history.last().unwrap().text(), "typed while summarizing");
}

#[test]
fn trigger_fraction_of_a_context_window() {
    let trigger = CompactionTrigger::Fraction {
        fraction: 0.8,
        context_window: 1000,
    };
    assert_eq!(trigger.threshold(), 800);
    assert_eq!(CompactionTrigger::Tokens(42).threshold(), 42);
    for bad in [(0.0, 1000), (1.5, 1000), (f64::NAN, 1000), (0.5, 0)] {
        let trigger = CompactionTrigger::Fraction {
            fraction: bad.0,
            context_window: bad.1,
        };
        assert!(matches!(
            FullCompaction::new(trigger),
            Err(Error::Config(_))
        ));
    }
}

#[test]
fn summarizing_compactor_implements_the_hook() {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let sink = errors.clone();
    let summarizer = Recording::replying("summary");
    let compactor: Box<dyn ContextCompaction> = Box::new(
        SummarizingCompactor::new(full(3).with_summary_prefix("Earlier: "), summarizer)
            .on_error(move |session, error| sink.lock().push(format!("{session}: {error}"))),
    );
    let chat = session("chat");
    let messages = timed_history(5);
    let outcome = block_on(compactor.compact(&chat, &messages)).unwrap();
    assert_eq!(outcome.kind, CompactionKind::FullCompaction);
    assert_eq!(outcome.messages[0].text(), "Earlier: summary");
    assert_eq!(outcome.messages[1..], messages[messages.len() - 3..]);
    let before: u64 = messages
        .iter()
        .map(|m| CharEstimator.message_tokens(m))
        .sum();
    let hint = compactor.token_count_hint(&chat).unwrap() as u64;
    assert!(hint < before, "{hint} < {before}");
    assert!(errors.lock().is_empty());

    let failing: Box<dyn ContextCompaction> = Box::new(
        SummarizingCompactor::new(full(3), Recording::default()).on_error({
            let sink = errors.clone();
            move |session, error| sink.lock().push(format!("{session}: {error}"))
        }),
    );
    assert_eq!(block_on(failing.compact(&chat, &messages)), None);
    assert_eq!(*errors.lock(), ["chat: the model is down"]);
}

// ---------------------------------------------------------------- properties

fn turns() -> impl Strategy<Value = Vec<usize>> {
    // Each entry is one turn: 0 is a plain user/assistant exchange, n > 0 an assistant
    // calling n tools whose results follow.
    prop::collection::vec(0usize..4, 0..20)
}

fn history_of(turns: &[usize]) -> Vec<Message> {
    let mut messages = vec![Message::user("start")];
    for (t, &calls) in turns.iter().enumerate() {
        if calls == 0 {
            messages.push(Message::user(format!("turn {t}")));
            messages.push(Message::assistant("ok"));
            continue;
        }
        let ids: Vec<String> = (0..calls).map(|c| format!("c{t}_{c}")).collect();
        let tool_calls = ids
            .iter()
            .map(|id| ToolCall::new(id.clone(), "tool", serde_json::json!({})))
            .collect();
        messages.push(Message::assistant_with_tool_calls("", tool_calls));
        messages.extend(ids.iter().map(|id| Message::tool_result(id.clone(), "out")));
    }
    messages
}

/// Whether cutting before `cut` separates a call from one of its results.
fn splits_a_pair(messages: &[Message], cut: usize) -> bool {
    let head_calls: Vec<&str> = messages[..cut]
        .iter()
        .flat_map(Message::tool_calls)
        .map(|c| c.id.as_str())
        .collect();
    messages[cut..]
        .iter()
        .filter_map(Message::tool_call_id)
        .any(|id| head_calls.contains(&id))
}

proptest! {
    #[test]
    fn the_cut_point_is_the_latest_that_splits_no_pair(turns in turns(), keep in 0usize..12) {
        let messages = history_of(&turns);
        let desired = messages.len().checked_sub(keep);
        match full(keep).cut_point(&messages) {
            Some(cut) => {
                prop_assert!(cut > 0 && Some(cut) <= desired);
                prop_assert!(!splits_a_pair(&messages, cut));
                for later in cut + 1..=desired.unwrap() {
                    prop_assert!(splits_a_pair(&messages, later), "{later} was a valid cut");
                }
            }
            None => {
                if let Some(desired) = desired {
                    for cut in 1..=desired {
                        prop_assert!(splits_a_pair(&messages, cut), "{cut} was a valid cut");
                    }
                }
            }
        }
    }
}

#[test]
fn micro_compactor_hint_follows_appended_and_replaced_messages() {
    let clock = ManualClock::new(t0());
    let compactor = MicroCompactor::new(keep_results(1)).with_clock(clock.clone());
    let chat = session("chat");
    let estimate = |messages: &[Message]| -> usize {
        messages
            .iter()
            .map(|m| CharEstimator.message_tokens(m) as usize)
            .sum()
    };
    let mut messages = timed_history(3);
    block_on(compactor.compact(&chat, &messages));
    assert_eq!(compactor.token_count_hint(&chat), Some(estimate(&messages)));

    // Appended: the hint grows by the new message.
    messages.push(Message::user(body(300)).with_time(t0()));
    block_on(compactor.compact(&chat, &messages));
    assert_eq!(compactor.token_count_hint(&chat), Some(estimate(&messages)));

    // A different message at a known position is estimated afresh.
    messages[0] = Message::user("short").with_time(t0());
    block_on(compactor.compact(&chat, &messages));
    assert_eq!(compactor.token_count_hint(&chat), Some(estimate(&messages)));

    // A shorter list drops what it no longer holds.
    messages.truncate(2);
    block_on(compactor.compact(&chat, &messages));
    assert_eq!(compactor.token_count_hint(&chat), Some(estimate(&messages)));
}
