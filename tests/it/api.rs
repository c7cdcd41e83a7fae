//! The public API as issues 2 to 5 name it, written the way an outside user who read
//! only the issues would: `use ctxmem::*;` and nothing else from the crate. Compiling
//! this file checks the names, signatures and derives; running it checks the
//! behaviour the issues describe for them. Futures run on `pollster`, the executor
//! issue 3 suggests for tests.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, TimeZone, Utc};
use ctxmem::*;

fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 8, 0, 0).unwrap()
}

/// A tool-result body well above the default `min_tokens` (20).
fn long(text: &str) -> String {
    format!("{text} {}", "x".repeat(400))
}

fn assert_send_sync_static<T: Send + Sync + 'static>() {}

// ------------------------------------------------------------------ issue 2: messages

#[test]
// The contract is that `.into()` from a `String` compiles for block fields.
#[allow(clippy::useless_conversion)]
fn message_constructors_builders_and_accessors() {
    let at = Utc::now();
    let call = ToolCall::new("id", "name", serde_json::json!({}));
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("id", "name"),
        "public fields"
    );
    assert_eq!(call.arguments, serde_json::json!({}));

    let owned = String::from("owned text");
    assert_eq!(Message::system("rules").role(), Role::System);
    assert_eq!(Message::user(owned.clone()).text(), "owned text");
    assert_eq!(Message::assistant("hi").role(), Role::Assistant);
    let asks = Message::assistant_with_tool_calls("checking", vec![call.clone()]);
    assert_eq!(asks.tool_calls(), &[call][..]);

    let result = Message::tool_result("id", "text")
        .with_error(true)
        .with_tool_name("name")
        .with_time(at);
    assert_eq!(result.role(), Role::Tool);
    assert_eq!(result.tool_call_id(), Some("id"));
    assert_eq!(result.tool_name(), Some("name"));
    assert!(result.is_error());
    assert_eq!(result.at(), Some(at));
    assert_eq!(result.id(), None, "only a memory assigns ids");
    assert_eq!(
        result.content(),
        &[ContentBlock::Text {
            text: "text".into()
        }]
    );

    let rich = Message::user("replaced").with_content(vec![
        ContentBlock::Text { text: "a".into() },
        ContentBlock::Json {
            value: serde_json::json!({ "k": 1 }),
        },
        ContentBlock::Image {
            media_type: "image/png".into(),
            data: String::from("https://example.com/a.png").into(),
        },
        ContentBlock::Thinking {
            text: owned.into(),
            signature: Some("sig".into()),
        },
        ContentBlock::Text { text: "b".into() },
    ]);
    assert_eq!(rich.content().len(), 5, "with_content replaces the blocks");
    assert_eq!(rich.text(), "ab", "the Text blocks, concatenated");

    // Clone + Debug + PartialEq + Serialize + Deserialize.
    let json = serde_json::to_string(&rich).unwrap();
    let back: Message = serde_json::from_str(&json).unwrap();
    assert_eq!(back, rich.clone());
    assert!(!format!("{back:?}").is_empty());
    let blocks: Vec<ContentBlock> =
        serde_json::from_value(serde_json::to_value(rich.content()).unwrap()).unwrap();
    assert_eq!(blocks, rich.content());
    let calls: Vec<ToolCall> =
        serde_json::from_value(serde_json::to_value(asks.tool_calls()).unwrap()).unwrap();
    assert_eq!(calls, asks.tool_calls());

    // Role is Copy.
    let role = result.role();
    let copy = role;
    assert_eq!(format!("{role:?}"), format!("{copy:?}"));
}

#[test]
fn message_ids_are_copy_ord_and_never_reused() {
    let memory = ContextMemory::new(MicroCompactionConfig::default());
    let a: MessageId = memory.push(Message::user("a")).unwrap();
    let b = memory.push(Message::assistant("b")).unwrap();
    let a_again = a; // Copy
    assert!(a_again < b);
    assert_eq!(a, MessageId(1), "a newtype over u64, counting from 1");
    assert_eq!(b.0, 2);
    assert_eq!(a.max(b), b, "Ord");
    assert_eq!(memory.history()[0].id(), Some(a));
    assert_eq!(format!("{a:?}"), format!("{a_again:?}"));

    memory.clear().unwrap();
    let c = memory.push(Message::user("c")).unwrap();
    assert!(c > b, "not even after clear()");
}

// ------------------------------------------------------------------ issue 2: time and config

#[test]
fn clocks_share_one_instant() {
    let clock = ManualClock::new(start());
    let handle = clock.clone();
    handle.advance(chrono::Duration::hours(2));
    assert_eq!(clock.now(), start() + Duration::hours(2));
    clock.set(start());
    assert_eq!(handle.now(), start());

    let real: &dyn Clock = &SystemClock;
    assert!(real.now() > start() - Duration::days(3650));

    struct Fixed;
    impl Clock for Fixed {
        fn now(&self) -> DateTime<Utc> {
            start()
        }
    }
    let memory = ContextMemory::builder().clock(Fixed).build().unwrap();
    memory.push(Message::user("stamped")).unwrap();
    assert_eq!(memory.history()[0].at(), Some(start()));
}

#[test]
fn config_defaults_and_struct_update() {
    let config = MicroCompactionConfig::default();
    let enabled: bool = config.enabled;
    let min_tokens: u64 = config.min_tokens;
    let idle_threshold: chrono::Duration = config.idle_threshold;
    let placeholder: String = config.placeholder.clone();
    let exclude_tools: Vec<String> = config.exclude_tools.clone();
    let keep_errors: bool = config.keep_errors;
    assert!(enabled && !keep_errors);
    assert_eq!(config.keep_recent, Keep::Messages(10));
    assert_eq!(min_tokens, 20);
    assert_eq!(idle_threshold, Duration::hours(1));
    assert_eq!(placeholder, "[Old tool result content cleared]");
    assert!(exclude_tools.is_empty());

    let custom = MicroCompactionConfig {
        keep_recent: Keep::Messages(4),
        ..Default::default()
    };
    assert_eq!(custom.keep_recent, Keep::Messages(4));
    let keep = Keep::ToolResults(2);
    let copied = keep;
    assert_ne!(keep, Keep::Messages(2));
    assert_eq!(format!("{copied:?}"), "ToolResults(2)");
}

// ------------------------------------------------------------------ issue 2: ContextMemory

#[test]
fn memory_and_error_are_send_sync_static() {
    assert_send_sync_static::<ContextMemory>();
    assert_send_sync_static::<Error>();
    assert_send_sync_static::<Message>();
    let error: Box<dyn std::error::Error + Send + Sync + 'static> =
        Box::new(SessionId::new("").unwrap_err());
    assert!(!error.to_string().is_empty());
}

/// The walk-through: clear after the gap, keep the cutoff while warm, reset.
#[test]
fn memory_advances_only_after_the_idle_gap_and_resets() {
    let clock = ManualClock::new(start());
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let memory = ContextMemory::builder()
        .micro_compaction(MicroCompactionConfig {
            keep_recent: Keep::Messages(4),
            ..Default::default()
        })
        .clock(clock.clone())
        .on_event(move |event| sink.lock().unwrap().push(event.clone()))
        .build()
        .unwrap();
    assert!(memory.is_empty());

    memory.push(Message::system("You are terse.")).unwrap();
    for i in 0..3 {
        let id = format!("call_{i}");
        memory.push(Message::user(format!("step {i}"))).unwrap();
        let call = ToolCall::new(id.clone(), "read_file", serde_json::json!({ "i": i }));
        memory
            .push(Message::assistant_with_tool_calls("", vec![call]))
            .unwrap();
        memory
            .push(Message::tool_result(id, long("contents")))
            .unwrap();
    }
    memory.push(Message::assistant("done")).unwrap();
    assert_eq!(memory.len(), 11);
    assert_eq!(memory.last_assistant_at(), Some(start()));

    // Warm: nothing changes.
    clock.advance(Duration::minutes(59));
    assert_eq!(memory.messages(), memory.history());
    assert_eq!(memory.cutoff(), None);

    // Cold: the cutoff is the id of the message at len - 4.
    clock.advance(Duration::minutes(1));
    let sent = memory.messages();
    let history = memory.history();
    assert_eq!(memory.cutoff(), history[7].id());
    let placeholder = "[Old tool result content cleared]";
    let cleared: Vec<&str> = sent
        .iter()
        .filter(|m| m.text() == placeholder)
        .map(|m| m.tool_call_id().unwrap())
        .collect();
    assert_eq!(cleared, ["call_0", "call_1"]);
    assert_eq!(sent[9], history[9], "call_2 is recent and verbatim");
    assert_eq!(sent[3].id(), history[3].id());
    assert_eq!(memory.project(&history[6..]), sent[6..].to_vec());
    assert_eq!(memory.summarization_input(), sent);
    assert_eq!(memory.original("call_0"), Some(history[3].clone()));
    assert_eq!(memory.history(), history, "history is never altered");

    {
        let events = events.lock().unwrap();
        let [Event::MicroCompacted {
            previous_cutoff,
            cutoff,
            cleared,
            from_tokens,
            to_tokens,
            idle,
        }] = &events[..]
        else {
            panic!("one MicroCompacted event, got {events:?}");
        };
        assert_eq!(*previous_cutoff, None::<MessageId>);
        assert_eq!(Some(*cutoff), memory.cutoff());
        assert_eq!(*cleared, 2usize);
        assert!(from_tokens > to_tokens, "{from_tokens} > {to_tokens}");
        assert_eq!(*idle, Duration::hours(1));
    }

    // Full compaction and clear reset the cutoff.
    let summary = vec![
        Message::user("Summary: read three files."),
        Message::assistant("ok"),
    ];
    memory.apply_full_compaction(summary).unwrap();
    assert_eq!(memory.cutoff(), None);
    assert_eq!(memory.len(), 2);
    assert!(memory.history()[0].id() > history[10].id(), "fresh ids");
    assert!(memory.last_assistant_at().is_some());
    memory.clear().unwrap();
    assert!(memory.is_empty());
    assert_eq!(memory.last_assistant_at(), None);

    let events = events.lock().unwrap();
    let resets: Vec<ResetReason> = events
        .iter()
        .filter_map(|event| match event {
            Event::CutoffReset { reason } => Some(*reason),
            _ => None,
        })
        .collect();
    assert_eq!(resets, [ResetReason::FullCompaction, ResetReason::Clear]);
}

// ------------------------------------------------------------------ issue 3: middleware

/// [system, user, tool t1, assistant, tool t2, tool t3], as in seed test 1.
fn seed() -> Vec<Message> {
    vec![
        Message::system("sys"),
        Message::user("hi"),
        Message::tool_result("t1", "first result"),
        Message::assistant("looking"),
        Message::tool_result("t2", "second result"),
        Message::tool_result("t3", "third result"),
    ]
}

#[test]
fn microcompact_middleware_seed_contract() {
    let placeholder = "[Old tool result content cleared]";
    let mut stack = MiddlewareStack::new();
    stack.push(MicrocompactMiddleware::new(1, placeholder));
    let mut msgs = seed();
    let events: Vec<Event> = stack.run_before_model(&mut msgs);
    assert!(events.is_empty(), "no event by default");
    let original = seed();
    assert_eq!(msgs.len(), original.len(), "no turn dropped");
    assert_eq!(msgs[2].text(), placeholder);
    assert_eq!(msgs[2].tool_call_id(), Some("t1"));
    assert_eq!(msgs[4].text(), placeholder);
    assert_eq!(msgs[5], original[5]);
    for i in [0, 1, 3] {
        assert_eq!(msgs[i], original[i]);
    }

    let once = msgs.clone();
    stack.run_before_model(&mut msgs);
    assert_eq!(msgs, once, "idempotent");

    let mut within = vec![
        Message::tool_result("t1", "A"),
        Message::tool_result("t2", "B"),
    ];
    let untouched = within.clone();
    MicrocompactMiddleware::new(5, placeholder).before_model(&mut within, &mut Vec::new());
    assert_eq!(within, untouched, "no-op within keep_recent");

    let noisy = Arc::new(MicrocompactMiddleware::new(1, String::from("[gone]")).with_events(true));
    assert_eq!(noisy.name(), "microcompact");
    assert_eq!((noisy.keep_recent(), noisy.placeholder()), (1, "[gone]"));
    let mut stack = MiddlewareStack::new();
    stack.push(noisy.clone()); // a shared handle is a middleware too
    let mut msgs = vec![
        Message::tool_result("t1", "x".repeat(400)),
        Message::tool_result("t2", "y".repeat(400)),
    ];
    let events = stack.run_before_model(&mut msgs);
    match &events[..] {
        [Event::Compressed {
            from_tokens,
            to_tokens,
        }] => assert!(from_tokens > to_tokens),
        other => panic!("one Compressed event, got {other:?}"),
    }
}

#[test]
fn a_user_middleware_runs_in_stack_order() {
    struct Tag(&'static str);
    impl Middleware for Tag {
        fn name(&self) -> &str {
            self.0
        }
        fn before_model(&self, messages: &mut Vec<Message>, events: &mut Vec<Event>) {
            messages.push(Message::user(self.0));
            events.push(Event::Compressed {
                from_tokens: 1,
                to_tokens: 0,
            });
        }
    }
    let mut stack = MiddlewareStack::new();
    stack.push(Tag("first"));
    stack.push(Tag("second"));
    let mut msgs = Vec::new();
    let events = stack.run_before_model(&mut msgs);
    let texts: Vec<String> = msgs.iter().map(Message::text).collect();
    assert_eq!(texts, ["first", "second"]);
    assert_eq!(events.len(), 2);
    let _boxed: Box<dyn Middleware> = Box::new(Tag("boxed"));
}

// ------------------------------------------------------------------ issue 3: compaction hooks

#[test]
fn session_id_rules() {
    let id = SessionId::new("chat-2026.03_a").unwrap();
    assert_eq!(id.as_str(), "chat-2026.03_a");
    assert_eq!(id.to_string(), "chat-2026.03_a");
    assert_eq!(SessionId::new(String::from("chat-2026.03_a")).unwrap(), id);
    assert!(SessionId::new("x".repeat(128)).is_ok());
    for bad in [
        "",
        ".",
        "..",
        "a/b",
        "a\\b",
        "a\0b",
        "a b",
        "é",
        &"x".repeat(129),
    ] {
        assert!(SessionId::new(bad).is_err(), "{bad:?}");
    }
    // Clone + Debug + Display + Eq + Hash + Ord.
    let set: HashSet<SessionId> = [id.clone(), id.clone()].into_iter().collect();
    assert_eq!(set.len(), 1);
    assert!(SessionId::new("a").unwrap() < SessionId::new("b").unwrap());
    assert!(format!("{id:?}").contains("chat"));
}

/// A user's own hook, written against the exact trait signature.
struct KeepLast(usize);

impl ContextCompaction for KeepLast {
    fn compact<'a>(
        &'a self,
        _session_id: &'a SessionId,
        messages: &'a [Message],
    ) -> Pin<Box<dyn Future<Output = Option<CompactionOutcome>> + Send + 'a>> {
        Box::pin(async move {
            let start = messages.len().checked_sub(self.0).filter(|&s| s > 0)?;
            Some(CompactionOutcome {
                kind: CompactionKind::FullCompaction,
                messages: messages[start..].to_vec(),
            })
        })
    }

    fn token_count_hint(&self, _session_id: &SessionId) -> Option<usize> {
        None
    }
}

#[test]
fn context_compaction_hooks_are_boxable() {
    let session = SessionId::new("s1").unwrap();
    let clock = ManualClock::new(start());
    let config = MicroCompactionConfig {
        keep_recent: Keep::ToolResults(1),
        ..Default::default()
    };
    let hooks: Vec<Box<dyn ContextCompaction>> = vec![
        Box::new(KeepLast(1)),
        Box::new(MicroCompactor::new(config).with_clock(clock.clone())),
    ];
    let messages = vec![
        Message::user("go"),
        Message::assistant_with_tool_calls(
            "",
            vec![ToolCall::new("a", "ls", serde_json::json!({}))],
        )
        .with_time(start()),
        Message::tool_result("a", long("listing")),
        Message::assistant_with_tool_calls(
            "",
            vec![ToolCall::new("b", "ls", serde_json::json!({}))],
        )
        .with_time(start()),
        Message::tool_result("b", long("listing")),
    ];

    let outcome = pollster::block_on(hooks[0].compact(&session, &messages)).unwrap();
    assert_eq!(outcome.kind, CompactionKind::FullCompaction);
    assert_eq!(outcome.messages, messages[4..]);

    let micro = &hooks[1];
    assert_eq!(micro.token_count_hint(&session), None);
    assert_eq!(
        pollster::block_on(micro.compact(&session, &messages)),
        None,
        "warm"
    );
    let warm_tokens = micro.token_count_hint(&session).unwrap();
    clock.advance(Duration::hours(2));
    let outcome = pollster::block_on(micro.compact(&session, &messages)).expect("after the gap");
    assert_eq!(outcome.kind, CompactionKind::MicroCompaction);
    assert_eq!(
        outcome.messages[2].text(),
        "[Old tool result content cleared]"
    );
    assert_eq!(outcome.messages[4], messages[4]);
    assert!(micro.token_count_hint(&session).unwrap() < warm_tokens);
    let again = pollster::block_on(micro.compact(&session, &messages)).unwrap();
    assert_eq!(again, outcome, "stable across calls");
}

/// A summarizer that records what it was given (clones share the record).
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Vec<Vec<Message>>>>);

impl Summarizer for Recording {
    fn summarize<'a>(
        &'a self,
        messages: &'a [Message],
    ) -> Pin<Box<dyn Future<Output = Result<String, Error>> + Send + 'a>> {
        self.0.lock().unwrap().push(messages.to_vec());
        Box::pin(async move { Ok(format!("{} earlier messages", messages.len())) })
    }
}

#[test]
fn summarizing_compactor_installs_a_summary_and_keeps_pairs() {
    let session = SessionId::new("s2").unwrap();
    let mut messages = vec![Message::user("start")];
    for i in 0..6 {
        let id = format!("c{i}");
        let call = ToolCall::new(id.clone(), "run", serde_json::json!({ "i": i }));
        messages.push(Message::assistant_with_tool_calls("", vec![call]));
        messages.push(Message::tool_result(id, long("output")));
    }
    let full = FullCompaction::new(CompactionTrigger::Tokens(100))
        .unwrap()
        .with_keep_recent(1);
    let recording = Recording::default();
    let compactor = SummarizingCompactor::new(full, recording.clone());
    let hook: &dyn ContextCompaction = &compactor;
    let outcome = pollster::block_on(hook.compact(&session, &messages)).unwrap();
    let received = recording.0.lock().unwrap();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0], messages[..messages.len() - 2]);
    assert_eq!(outcome.kind, CompactionKind::FullCompaction);
    let tail = &outcome.messages[1..];
    assert_eq!(
        tail,
        &messages[messages.len() - 2..],
        "the call stays with its result"
    );
    assert!(outcome.messages[0].text().contains("11 earlier messages"));
}

// ------------------------------------------------------------------ issue 4: the store

#[test]
fn file_store_sessions_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let store = FileStore::open(&root)
        .unwrap()
        .with_durability(Durability::Sync);
    assert!(root.is_dir(), "created when missing");
    assert_eq!(Durability::default(), Durability::Sync);
    let _ = [Durability::Buffered, Durability::Flush];
    let session = SessionId::new("chat").unwrap();
    let clock = ManualClock::new(start());
    let open = |store: &FileStore| {
        ContextMemory::builder()
            .micro_compaction(MicroCompactionConfig {
                keep_recent: Keep::Messages(1),
                ..Default::default()
            })
            .clock(clock.clone())
            .store(store.clone())
            .session(session.clone())
            .build()
    };

    let (history, cutoff) = {
        let memory = open(&store).unwrap();
        memory.push(Message::user("hello")).unwrap();
        let call = ToolCall::new("c1", "cat", serde_json::json!({}));
        memory
            .push(Message::assistant_with_tool_calls("", vec![call]))
            .unwrap();
        memory
            .push(Message::tool_result("c1", long("file")))
            .unwrap();
        memory.push(Message::assistant("read it")).unwrap();
        assert!(matches!(open(&store), Err(Error::Locked { .. })));
        clock.advance(Duration::hours(2));
        memory.messages();
        (memory.history(), memory.cutoff())
    };
    assert!(root.join("chat.jsonl").is_file());
    assert!(cutoff.is_some());

    let memory = open(&store).unwrap();
    assert_eq!(memory.history(), history, "ids, times and bodies");
    assert_eq!(memory.cutoff(), cutoff);
    assert_eq!(memory.last_assistant_at(), Some(start()));
    let next = memory.push(Message::user("again")).unwrap();
    assert!(
        Some(next) > history.last().unwrap().id(),
        "ids are never reused"
    );
    drop(memory);

    assert_eq!(store.sessions().unwrap(), vec![session.clone()]);
    store.vacuum(&session).unwrap();
    store.delete(&session).unwrap();
    assert!(store.sessions().unwrap().is_empty());
    let _: Box<dyn Store> = Box::new(store);
}

// ------------------------------------------------------------------ issue 5: import, export

#[test]
fn provider_requests_import_and_export() {
    let memory = ContextMemory::new(MicroCompactionConfig::default());
    memory.push(Message::user("list")).unwrap();
    let call = ToolCall::new("c1", "ls", serde_json::json!({ "dir": "." }));
    memory
        .push(Message::assistant_with_tool_calls("", vec![call]))
        .unwrap();
    memory.push(Message::tool_result("c1", "a.rs")).unwrap();
    let sent = memory.messages();

    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [
        ("openai.json", to_openai(&sent)),
        ("anthropic.json", to_anthropic(&sent)),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, body.to_string()).unwrap();
        let transcript = import_file(&path, &ImportOptions::default()).unwrap();
        assert_eq!(transcript.messages.len(), 3, "{name}");
        assert_eq!(transcript.tool_call_count(), 1, "{name}");
        assert_eq!(transcript.tool_result_count(), 1, "{name}");
        assert_eq!(transcript.messages[2].tool_call_id(), Some("c1"), "{name}");
        assert_eq!(transcript.report.orphan_tool_results, 0, "{name}");
    }
}
