//! Property tests of the projection's invariants over random operation sequences.

use std::collections::HashSet;

use chrono::Duration;
use ctxmem::*;
use proptest::prelude::*;

use crate::common::*;

#[derive(Clone, Debug)]
enum Op {
    User(usize),
    /// An assistant turn calling `calls` tools, whose results of the given sizes follow.
    Turn(Vec<usize>),
    Wait(i64),
    Send,
    Clear,
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..200).prop_map(Op::User),
        6 => prop::collection::vec(0usize..200, 0..4).prop_map(Op::Turn),
        3 => (0i64..150).prop_map(Op::Wait),
        4 => Just(Op::Send),
        1 => Just(Op::Clear),
        1 => Just(Op::Compact),
    ]
}

fn keep() -> impl Strategy<Value = Keep> {
    prop_oneof![
        (0usize..8).prop_map(Keep::Messages),
        (0usize..4).prop_map(Keep::ToolResults),
    ]
}

/// Every tool result is preceded by an assistant call with its id, and every call is
/// followed by its result: the same pairs as in the stored history.
fn pairs(messages: &[Message]) -> Vec<(String, usize)> {
    let mut seen_calls = HashSet::new();
    let mut out = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        for call in message.tool_calls() {
            seen_calls.insert(call.id.clone());
        }
        if let Some(id) = message.tool_call_id() {
            assert!(seen_calls.contains(id), "orphan result {id}");
            out.push((id.to_owned(), index));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn projection_invariants_hold(keep in keep(), min_tokens in 0u64..60, ops in prop::collection::vec(op(), 1..60)) {
        let config = MicroCompactionConfig { keep_recent: keep, min_tokens, ..Default::default() };
        let (memory, clock, _) = memory_with(config);
        let mut next_call = 0;
        let mut last_cutoff: Option<MessageId> = None;
        for op in ops {
            match op {
                Op::User(n) => { memory.push(Message::user(body(n))).unwrap(); }
                Op::Turn(sizes) => {
                    let ids: Vec<String> = sizes.iter().map(|_| { next_call += 1; format!("call_{next_call}") }).collect();
                    let calls = ids.iter().map(|id| ToolCall::new(id.clone(), "tool", serde_json::json!({}))).collect();
                    memory.push(Message::assistant_with_tool_calls("", calls)).unwrap();
                    for (id, size) in ids.iter().zip(sizes) {
                        memory.push(Message::tool_result(id.clone(), body(size))).unwrap();
                    }
                }
                Op::Wait(minutes) => clock.advance(Duration::minutes(minutes)),
                Op::Send => {
                    let history = memory.history();
                    let sent = memory.messages();
                    // Same shape as the history: nothing dropped, reordered or re-paired.
                    prop_assert_eq!(sent.len(), history.len());
                    for (s, h) in sent.iter().zip(&history) {
                        prop_assert_eq!(s.id(), h.id());
                        prop_assert_eq!(s.role(), h.role());
                        prop_assert_eq!(s.tool_calls(), h.tool_calls());
                        prop_assert_eq!(s.tool_call_id(), h.tool_call_id());
                        if s != h {
                            prop_assert_eq!(s.role(), Role::Tool);
                            prop_assert!(s.id() < memory.cutoff());
                        }
                    }
                    prop_assert_eq!(pairs(&sent), pairs(&history));
                    // Idempotent.
                    prop_assert_eq!(memory.project(&sent), sent.clone());
                    // Monotonic between resets.
                    prop_assert!(memory.cutoff() >= last_cutoff);
                    last_cutoff = memory.cutoff();
                    if memory.cutoff().is_none() {
                        prop_assert_eq!(&sent, &history);
                    }
                    // Never mutates what is stored.
                    prop_assert_eq!(memory.history(), history);
                }
                Op::Clear => {
                    memory.clear().unwrap();
                    last_cutoff = None;
                    prop_assert_eq!(memory.cutoff(), None);
                }
                Op::Compact => {
                    let tail: Vec<Message> = memory.history().into_iter().rev().take_while(|m| m.role() != Role::Tool).collect();
                    let mut replacement = vec![Message::user("summary")];
                    replacement.extend(tail.into_iter().rev().map(|m| m.with_id(None)));
                    memory.apply_full_compaction(replacement).unwrap();
                    last_cutoff = None;
                    prop_assert_eq!(memory.cutoff(), None);
                }
            }
            if memory.cutoff().is_none() {
                prop_assert_eq!(memory.project(&memory.history()), memory.history());
            }
        }
    }
}
