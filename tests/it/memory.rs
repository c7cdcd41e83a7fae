//! `ContextMemory`: the advance rule, the projection and the resets.

use chrono::Duration;
use ctxmem::*;

use crate::common::*;

#[test]
fn clears_old_tool_results_after_the_idle_gap_keeping_recent_ones() {
    let (memory, clock, _) = memory_with(keep_messages(4));
    for i in 0..5 {
        push_exchange(&memory, i);
    }
    clock.advance(hours(2));
    let sent = memory.messages();
    assert_eq!(sent.len(), 15);
    // keep_recent 4 keeps messages 11..15: exchange 3's result (index 11) and all of exchange 4.
    assert_eq!(cleared_ids(&sent), ["call_0", "call_1", "call_2"]);
    assert_eq!(sent[11].text(), body(100));
    assert_eq!(sent[14].text(), body(100));
    assert_eq!(memory.cutoff(), sent[11].id());
}

#[test]
fn does_nothing_before_the_gap() {
    let (memory, clock, events) = memory_with(keep_messages(2));
    for i in 0..5 {
        push_exchange(&memory, i);
    }
    clock.advance(Duration::minutes(59));
    assert_eq!(memory.messages(), memory.history());
    assert_eq!(memory.cutoff(), None);
    assert!(events.lock().is_empty());
}

#[test]
fn the_gap_is_inclusive() {
    let (memory, clock, _) = memory_with(keep_messages(2));
    push_exchange(&memory, 0);
    push_exchange(&memory, 1);
    clock.advance(hours(1));
    assert_eq!(cleared_ids(&memory.messages()), ["call_0"]);
}

#[test]
fn keeps_the_cutoff_while_warm_then_advances_on_the_next_gap() {
    let (memory, clock, events) = memory_with(keep_messages(2));
    for i in 0..3 {
        push_exchange(&memory, i);
    }
    clock.advance(hours(2));
    let first = memory.messages();
    let cutoff = memory.cutoff().unwrap();
    assert_eq!(cleared_ids(&first), ["call_0", "call_1"]);

    // A warm stretch: new results stay verbatim and the prefix is byte-identical.
    for i in 3..6 {
        clock.advance(Duration::minutes(1));
        push_exchange(&memory, i);
        let sent = memory.messages();
        assert_eq!(memory.cutoff(), Some(cutoff));
        assert_eq!(&sent[..first.len()], &first[..]);
        assert_eq!(cleared_ids(&sent), ["call_0", "call_1"]);
    }
    assert_eq!(events.lock().len(), 1);

    clock.advance(hours(1));
    let later = memory.messages();
    assert!(memory.cutoff().unwrap() > cutoff);
    assert_eq!(
        cleared_ids(&later),
        ["call_0", "call_1", "call_2", "call_3", "call_4"]
    );
    assert_eq!(events.lock().len(), 2);
}

#[test]
fn clear_resets_the_cutoff_and_ids_keep_counting() {
    let (memory, clock, events) = memory_with(keep_messages(2));
    for i in 0..3 {
        push_exchange(&memory, i);
    }
    clock.advance(hours(2));
    memory.messages();
    let last_id = memory.history().last().unwrap().id().unwrap();
    memory.clear().unwrap();
    assert!(memory.is_empty());
    assert_eq!(memory.cutoff(), None);
    assert_eq!(memory.last_assistant_at(), None);
    assert!(matches!(
        events.lock().last(),
        Some(Event::CutoffReset {
            reason: ResetReason::Clear
        })
    ));
    let id = memory.push(Message::user("again")).unwrap();
    assert!(id > last_id);
}

#[test]
fn full_compaction_resets_the_cutoff_and_keeps_the_last_assistant_time() {
    let (memory, clock, events) = memory_with(keep_messages(2));
    for i in 0..3 {
        push_exchange(&memory, i);
    }
    clock.advance(hours(2));
    memory.messages();
    let last_assistant = memory.last_assistant_at();
    let old_max = memory.history().last().unwrap().id().unwrap();
    memory
        .apply_full_compaction(vec![
            Message::user("Summary: read three files."),
            Message::user("question 2"),
        ])
        .unwrap();
    assert_eq!(memory.cutoff(), None);
    assert_eq!(memory.last_assistant_at(), last_assistant);
    let history = memory.history();
    assert_eq!(history.len(), 2);
    assert!(history.iter().all(|m| m.id().unwrap() > old_max));
    assert!(history.iter().all(|m| m.at().is_some()));
    assert!(matches!(
        events.lock().last(),
        Some(Event::CutoffReset {
            reason: ResetReason::FullCompaction
        })
    ));
}

#[test]
fn min_tokens_boundary_clears_at_equal() {
    let config = MicroCompactionConfig {
        keep_recent: Keep::Messages(1),
        min_tokens: 20,
        ..Default::default()
    };
    let (memory, clock, _) = memory_with(config);
    memory.push(Message::assistant("calling")).unwrap();
    memory.push(Message::tool_result("at", body(20))).unwrap();
    memory
        .push(Message::tool_result("below", format!("{}abc", body(18))))
        .unwrap(); // 19 tokens
    memory
        .push(Message::tool_result("above", body(21)))
        .unwrap();
    memory.push(Message::user("next")).unwrap();
    clock.advance(hours(2));
    assert_eq!(cleared_ids(&memory.messages()), ["at", "above"]);
}

#[test]
fn non_tool_messages_are_never_touched() {
    let config = MicroCompactionConfig {
        keep_recent: Keep::Messages(0),
        min_tokens: 0,
        ..Default::default()
    };
    let (memory, clock, _) = memory_with(config);
    memory.push(Message::system(body(500))).unwrap();
    memory.push(Message::user(body(500))).unwrap();
    memory.push(Message::assistant(body(500))).unwrap();
    clock.advance(hours(2));
    assert_eq!(memory.messages(), memory.history());
    assert!(memory.cutoff().is_some());
}

#[test]
fn fewer_messages_than_keep_recent_is_a_no_op() {
    let (memory, clock, events) = memory_with(keep_messages(10));
    for i in 0..3 {
        push_exchange(&memory, i);
    }
    clock.advance(hours(5));
    assert_eq!(memory.messages(), memory.history());
    assert_eq!(memory.cutoff(), None);
    assert!(events.lock().is_empty());
}

#[test]
fn keep_tool_results_counts_results_not_messages() {
    let config = MicroCompactionConfig {
        keep_recent: Keep::ToolResults(2),
        ..Default::default()
    };
    let (memory, clock, _) = memory_with(config);
    for i in 0..4 {
        push_exchange(&memory, i);
    }
    memory.push(Message::assistant("done")).unwrap();
    clock.advance(hours(2));
    assert_eq!(cleared_ids(&memory.messages()), ["call_0", "call_1"]);
}

#[test]
fn rich_error_content_becomes_one_placeholder_block_with_metadata_kept() {
    let (memory, clock, _) = memory_with(keep_messages(1));
    let call = ToolCall::new("c1", "screenshot", serde_json::json!({}));
    memory
        .push(Message::assistant_with_tool_calls("looking", vec![call]))
        .unwrap();
    let rich = Message::tool_result("c1", "")
        .with_content(vec![
            ContentBlock::Text {
                text: "failed".into(),
            },
            ContentBlock::Json {
                value: serde_json::json!({"code": 500, "trace": body(50)}),
            },
            ContentBlock::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            },
        ])
        .with_error(true)
        .with_tool_name("screenshot");
    let id = memory.push(rich).unwrap();
    memory.push(Message::user("and?")).unwrap();
    clock.advance(hours(2));
    let sent = memory.messages();
    let cleared = &sent[1];
    assert_eq!(
        cleared.content(),
        &[ContentBlock::Text {
            text: PLACEHOLDER.into()
        }]
    );
    assert_eq!(cleared.id(), Some(id));
    assert_eq!(cleared.role(), Role::Tool);
    assert_eq!(cleared.tool_call_id(), Some("c1"));
    assert_eq!(cleared.tool_name(), Some("screenshot"));
    assert!(cleared.is_error());
    assert_eq!(cleared.at(), memory.history()[1].at());
}

#[test]
fn exclude_tools_uses_the_result_name_or_the_matching_call() {
    let config = MicroCompactionConfig {
        keep_recent: Keep::Messages(1),
        exclude_tools: vec!["memory_read".into()],
        ..Default::default()
    };
    let (memory, clock, _) = memory_with(config);
    let calls = vec![
        ToolCall::new("a", "memory_read", serde_json::json!({})),
        ToolCall::new("b", "read_file", serde_json::json!({})),
    ];
    memory
        .push(Message::assistant_with_tool_calls("", calls))
        .unwrap();
    memory.push(Message::tool_result("a", body(50))).unwrap(); // name from the call
    memory.push(Message::tool_result("b", body(50))).unwrap();
    memory
        .push(Message::tool_result("c", body(50)).with_tool_name("memory_read"))
        .unwrap();
    memory.push(Message::user("next")).unwrap();
    clock.advance(hours(2));
    assert_eq!(cleared_ids(&memory.messages()), ["b"]);
}

#[test]
fn keep_errors_keeps_error_results_verbatim() {
    for keep_errors in [false, true] {
        let config = MicroCompactionConfig {
            keep_recent: Keep::Messages(1),
            keep_errors,
            ..Default::default()
        };
        let (memory, clock, _) = memory_with(config);
        memory.push(Message::assistant("calling")).unwrap();
        memory
            .push(Message::tool_result("bad", body(50)).with_error(true))
            .unwrap();
        memory.push(Message::tool_result("good", body(50))).unwrap();
        memory.push(Message::user("next")).unwrap();
        clock.advance(hours(2));
        let expected: &[&str] = if keep_errors {
            &["good"]
        } else {
            &["bad", "good"]
        };
        assert_eq!(cleared_ids(&memory.messages()), expected);
    }
}

#[test]
fn a_suffix_slice_keeps_its_recent_results() {
    let (memory, clock, _) = memory_with(keep_messages(4));
    for i in 0..5 {
        push_exchange(&memory, i);
    }
    clock.advance(hours(2));
    let full = memory.messages();
    let history = memory.history();
    // The last 6 stored messages: exchange 3 (result cleared? no: index 11 is kept) and 4.
    let suffix = memory.project(&history[9..]);
    assert_eq!(suffix, &full[9..]);
    assert_eq!(suffix[2].text(), body(100)); // index 11: recent, verbatim
    assert_eq!(suffix[5].text(), body(100));
    // An older suffix projects its old results as cleared, by id.
    let older = memory.project(&history[6..9]);
    assert_eq!(cleared_ids(&older), ["call_2"]);
}

#[test]
fn projection_is_idempotent_and_never_mutates_history() {
    let (memory, clock, _) = memory_with(keep_messages(2));
    for i in 0..4 {
        push_exchange(&memory, i);
    }
    let before = memory.history();
    clock.advance(hours(2));
    let once = memory.messages();
    assert_ne!(once, before);
    assert_eq!(memory.project(&once), once);
    assert_eq!(memory.project(&memory.history()), once);
    assert_eq!(memory.messages(), once);
    assert_eq!(memory.history(), before);
    assert!(memory.history().iter().all(|m| m.text() != PLACEHOLDER));
}

#[test]
fn a_last_assistant_time_in_the_future_does_not_advance() {
    let (memory, clock, _) = memory_with(keep_messages(1));
    push_exchange(&memory, 0);
    memory
        .push(Message::assistant("from a skewed clock").with_time(t0() + hours(10)))
        .unwrap();
    push_exchange(&memory, 1);
    clock.advance(hours(2));
    assert_eq!(memory.messages(), memory.history());
    assert_eq!(memory.cutoff(), None);
}

#[test]
fn out_of_order_timestamps_use_the_maximum() {
    let (memory, clock, _) = memory_with(keep_messages(1));
    memory
        .push(Message::assistant("late").with_time(t0() + Duration::minutes(30)))
        .unwrap();
    memory
        .push(Message::assistant("early").with_time(t0()))
        .unwrap();
    assert_eq!(
        memory.last_assistant_at(),
        Some(t0() + Duration::minutes(30))
    );
    memory.push(Message::tool_result("c", body(50))).unwrap();
    memory.push(Message::user("next")).unwrap();
    clock.set(t0() + Duration::minutes(80)); // 80 min after the earliest, 50 after the max
    assert_eq!(memory.cutoff(), None);
    assert_eq!(memory.messages(), memory.history());
    clock.set(t0() + Duration::minutes(90));
    assert_eq!(cleared_ids(&memory.messages()), ["c"]);
}

#[test]
fn events_exactly_one_per_advance_with_savings() {
    let (memory, clock, events) = memory_with(keep_messages(2));
    for i in 0..4 {
        push_exchange(&memory, i);
    }
    clock.advance(hours(2));
    memory.messages();
    memory.messages();
    memory.messages();
    let events = events.lock();
    assert_eq!(events.len(), 1);
    match &events[0] {
        Event::MicroCompacted {
            previous_cutoff,
            cutoff,
            cleared,
            from_tokens,
            to_tokens,
            idle,
        } => {
            assert_eq!(*previous_cutoff, None);
            assert_eq!(Some(*cutoff), memory.cutoff());
            assert_eq!(*cleared, 3);
            assert!(from_tokens > to_tokens, "{from_tokens} > {to_tokens}");
            assert_eq!(from_tokens - to_tokens, 3 * (100 - 9));
            assert_eq!(*to_tokens, memory.projected_tokens());
            assert_eq!(*idle, hours(2));
        }
        other => panic!("unexpected event {other:?}"),
    }
}

#[test]
fn summarization_input_is_cleared_without_advancing() {
    let (memory, clock, _) = memory_with(keep_messages(2));
    for i in 0..3 {
        push_exchange(&memory, i);
    }
    clock.advance(hours(2));
    assert_eq!(memory.summarization_input(), memory.history());
    assert_eq!(memory.cutoff(), None);
    let sent = memory.messages();
    assert_eq!(memory.summarization_input(), sent);
    assert_eq!(
        cleared_ids(&memory.summarization_input()),
        ["call_0", "call_1"]
    );
}

#[test]
fn original_recovers_a_cleared_body() {
    let (memory, clock, _) = memory_with(keep_messages(1));
    push_exchange(&memory, 0);
    push_exchange(&memory, 1);
    clock.advance(hours(2));
    let sent = memory.messages();
    assert_eq!(cleared_ids(&sent), ["call_0"]);
    let original = memory.original("call_0").unwrap();
    assert_eq!(original.text(), body(100));
    assert_eq!(original.id(), sent[2].id());
    assert!(memory.original("missing").is_none());
}

#[test]
fn disabled_never_clears() {
    let config = MicroCompactionConfig {
        enabled: false,
        keep_recent: Keep::Messages(0),
        ..Default::default()
    };
    let (memory, clock, _) = memory_with(config);
    push_exchange(&memory, 0);
    clock.advance(hours(24));
    assert_eq!(memory.messages(), memory.history());
}

#[test]
fn keep_zero_clears_everything_old_and_keeps_later_pushes_verbatim() {
    let config = MicroCompactionConfig {
        keep_recent: Keep::ToolResults(0),
        ..Default::default()
    };
    let (memory, clock, _) = memory_with(config);
    push_exchange(&memory, 0);
    clock.advance(hours(2));
    assert_eq!(cleared_ids(&memory.messages()), ["call_0"]);
    push_exchange(&memory, 1);
    assert_eq!(cleared_ids(&memory.messages()), ["call_0"]);
}

#[test]
fn push_stamps_time_and_assigns_increasing_ids() {
    let (memory, clock, _) = memory_with(keep_messages(1));
    let a = memory.push(Message::user("a")).unwrap();
    clock.advance(Duration::seconds(5));
    let b = memory.push(Message::user("b")).unwrap();
    assert!(a < b);
    let history = memory.history();
    assert_eq!(history[0].at(), Some(t0()));
    assert_eq!(history[1].at(), Some(t0() + Duration::seconds(5)));
    assert_eq!(history[1].id(), Some(b));
}

#[test]
fn malformed_messages_are_refused() {
    let (memory, _, _) = memory_with(keep_messages(1));
    assert!(matches!(
        memory.push(Message::tool_result("", "x")),
        Err(Error::Invalid(_))
    ));
    let bad: Result<Message, _> = serde_json::from_str(r#"{"role":"tool","content":[]}"#);
    assert!(bad.is_err());
    let bad: Result<Message, _> =
        serde_json::from_str(r#"{"role":"assistant","tool_calls":[{"id":"","name":"x"}]}"#);
    assert!(bad.is_err());
    assert!(memory.is_empty());
}

#[test]
fn messages_round_trip_through_json() {
    let message = Message::tool_result("c1", "out")
        .with_tool_name("bash")
        .with_error(true)
        .with_time(t0())
        .with_content(vec![
            ContentBlock::Thinking {
                text: "hmm".into(),
                signature: Some("sig".into()),
            },
            ContentBlock::Text { text: "out".into() },
        ]);
    let json = serde_json::to_string(&message).unwrap();
    let back: Message = serde_json::from_str(&json).unwrap();
    assert_eq!(back, message);
    let call = Message::assistant_with_tool_calls(
        "x",
        vec![ToolCall::new(
            "c1",
            "bash",
            serde_json::json!({"cmd": "ls"}),
        )],
    );
    let back: Message = serde_json::from_str(&serde_json::to_string(&call).unwrap()).unwrap();
    assert_eq!(back, call);
}

#[test]
fn memory_is_shared_across_threads() {
    let (memory, _, _) = memory_with(keep_messages(1));
    let memory = std::sync::Arc::new(memory);
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let memory = memory.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    memory.push(Message::user(format!("{t}-{i}"))).unwrap();
                    memory.messages();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let ids: Vec<_> = memory.history().iter().map(|m| m.id().unwrap()).collect();
    assert_eq!(ids.len(), 400);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn compaction_of_a_prefix_keeps_newer_messages_and_refuses_a_changed_history() {
    let (memory, _, _) = memory_with(keep_messages(2));
    push_exchange(&memory, 0);
    let seen = memory.history();
    push_exchange(&memory, 1); // arrives while a summary of `seen` is being made
    let installed = memory
        .apply_full_compaction_of(&seen, vec![Message::user("summary of exchange 0")])
        .unwrap();
    assert!(installed);
    let history = memory.history();
    assert_eq!(history.len(), 4);
    assert_eq!(history[0].text(), "summary of exchange 0");
    assert_eq!(history[1].text(), "question 1");
    assert_eq!(history[3].tool_call_id(), Some("call_1"));

    // `seen` is no longer the start of the history: nothing changes.
    let before = memory.history();
    let installed = memory
        .apply_full_compaction_of(&seen, vec![Message::user("stale")])
        .unwrap();
    assert!(!installed);
    assert_eq!(memory.history(), before);
}

#[test]
fn full_compaction_keeps_the_last_assistant_time_even_with_an_assistant_summary() {
    let (memory, clock, _) = memory_with(keep_messages(2));
    push_exchange(&memory, 0);
    clock.advance(hours(2));
    memory
        .apply_full_compaction(vec![Message::assistant("Summary: read a file.")])
        .unwrap();
    assert_eq!(memory.last_assistant_at(), Some(t0()));
    memory.clear().unwrap();
    memory
        .apply_full_compaction(vec![Message::assistant("Summary: nothing.")])
        .unwrap();
    assert_eq!(memory.last_assistant_at(), None);
}

#[test]
fn an_estimator_counting_a_message_below_its_content_does_not_underflow() {
    /// Counts a whole message as one token, whatever its content.
    struct Flat;
    impl TokenEstimator for Flat {
        fn text_tokens(&self, text: &str) -> u64 {
            CharEstimator.text_tokens(text)
        }
        fn message_tokens(&self, _: &Message) -> u64 {
            1
        }
    }
    let clock = ManualClock::new(t0());
    let memory = ContextMemory::builder()
        .micro_compaction(keep_messages(1))
        .clock(clock.clone())
        .token_estimator(Flat)
        .build()
        .unwrap();
    push_exchange(&memory, 0);
    memory.push(Message::assistant("done")).unwrap();
    clock.advance(hours(2));
    assert_eq!(cleared_ids(&memory.messages()), ["call_0"]);
}

#[test]
fn recorded_usage_totals_saturate_instead_of_overflowing() {
    // Usage comes from imported logs: a hostile one must not panic the cost model.
    let usage: Usage = serde_json::from_str(
        r#"{"input_tokens": 18446744073709551615, "cache_read_tokens": 1, "cache_write_tokens": 1}"#,
    )
    .unwrap();
    assert_eq!(usage.total_input_tokens(), u64::MAX);
}

#[test]
fn debug_shows_a_message_by_its_public_name_and_set_fields() {
    let message = Message::tool_result("c1", "out").with_tool_name("bash");
    let debug = format!("{message:?}");
    assert!(debug.starts_with("Message { role: Tool"), "{debug}");
    assert!(debug.contains("tool_call_id: \"c1\""), "{debug}");
    assert!(!debug.contains("is_error"), "{debug}");
    assert!(!debug.contains("usage"), "{debug}");
}
