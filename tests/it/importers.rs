//! The importers on small hand-written fixtures (`fixtures/import/`), their errors, and
//! a property: no input makes them panic.

use std::path::Path;

use chrono::{TimeZone, Utc};
use ctxmem::*;
use proptest::prelude::*;
use serde_json::json;

use crate::common::{import_fixture, import_fixture_file};

fn roles(transcript: &Transcript) -> Vec<Role> {
    transcript.messages.iter().map(Message::role).collect()
}

fn import_text(
    text: &str,
    name: &str,
    format: Option<Format>,
    lenient: bool,
) -> Result<Transcript> {
    import_str(text, Path::new(name), &ImportOptions { format, lenient })
}

#[test]
fn claude_code_merges_responses_pairs_results_and_marks_the_compaction() {
    let t = import_fixture_file("claude_code.jsonl");
    assert_eq!(t.format, Format::ClaudeCode);
    use Role::*;
    assert_eq!(
        roles(&t),
        [User, Assistant, Tool, Tool, Assistant, User, Tool, Assistant]
    );
    // Three lines of response msg_1 (thinking, Read, Bash) are one message, results after it.
    let merged = &t.messages[1];
    assert!(
        matches!(&merged.content()[0], ContentBlock::Thinking { text, signature }
        if text == "Read it first." && signature.as_deref() == Some("sig1"))
    );
    let calls: Vec<_> = merged
        .tool_calls()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(calls, ["Read", "Bash"]);
    assert_eq!(
        merged.at(),
        Some(Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 2).unwrap())
    );
    let usage = merged.usage().unwrap();
    assert_eq!(
        *usage,
        Usage {
            input_tokens: 10,
            output_tokens: 50,
            cache_read_tokens: 1000,
            cache_write_tokens: 100,
            cache_write_5m_tokens: 40,
            cache_write_1h_tokens: 60,
        }
    );
    // The model saw the tool_result block, not the toolUseResult copy.
    assert_eq!(
        t.messages[2].text(),
        "pub fn add(a: i32, b: i32) -> i32 { a - b }"
    );
    assert_eq!(t.messages[2].tool_name(), Some("Read"));
    assert!(t.messages[3].is_error());
    assert_eq!(t.messages[3].tool_name(), Some("Bash"));
    assert_eq!(t.messages[3].text(), "test add ... FAILED");
    // compact_boundary + isCompactSummary: the summary starts the new context.
    assert_eq!(t.compactions, [5]);
    assert!(t.messages[5]
        .text()
        .starts_with("This session is being continued"));
    assert_eq!(t.current_context().len(), 3);
    // The result of a call that is not in the file is kept, unnamed, and flagged.
    assert_eq!(t.messages[6].tool_call_id(), Some("toolu_9"));
    assert_eq!(t.messages[6].tool_name(), None);
    assert_eq!(t.report.orphan_tool_results, 1);
    assert_eq!(t.report.skipped_lines, 3);
    assert_eq!(t.report.skipped["sidechain"], 1);
    assert_eq!(t.report.skipped["progress"], 1);
    assert!(t.report.has_timestamps);
}

#[test]
fn codex_groups_a_response_and_counts_each_token_count_once() {
    let t = import_fixture_file("codex.jsonl");
    assert_eq!(t.format, Format::Codex);
    use Role::*;
    assert_eq!(
        roles(&t),
        [System, System, User, Assistant, Tool, Tool, User, Assistant, Tool]
    );
    // The base instructions of session_meta, then the developer message.
    assert_eq!(t.messages[0].text(), "You are Codex, a coding agent.");
    let response = &t.messages[3];
    assert!(
        matches!(&response.content()[0], ContentBlock::Thinking { text, .. } if text == "List, then patch.")
    );
    assert_eq!(
        response.tool_calls()[0].arguments,
        json!({"command": ["ls"]})
    );
    assert_eq!(
        response.tool_calls()[1].arguments,
        json!("*** Begin Patch\n*** End Patch")
    );
    let usage = response.usage().unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.output_tokens
        ),
        (50, 30, 20)
    );
    assert_eq!(t.messages[4].tool_name(), Some("shell"));
    assert_eq!(t.messages[5].tool_name(), Some("apply_patch"));
    assert_eq!(t.compactions, [6]);
    assert_eq!(
        t.messages[6].text(),
        "Summary: files listed, main.rs patched."
    );
    let last = t.messages[7].usage().unwrap();
    assert_eq!(
        (
            last.input_tokens,
            last.cache_read_tokens,
            last.output_tokens
        ),
        (50, 150, 10)
    );
    let total_output: u64 = t
        .messages
        .iter()
        .filter_map(|m| m.usage())
        .map(|u| u.output_tokens)
        .sum();
    assert_eq!(
        total_output, 30,
        "the repeated token_count is not counted twice"
    );
    assert_eq!(t.report.skipped["event_msg:token_count(repeat)"], 1);
    assert_eq!(t.report.orphan_tool_results, 1);
}

#[test]
fn gemini_puts_each_result_after_its_call() {
    let t = import_fixture_file("gemini.json");
    assert_eq!(t.format, Format::Gemini);
    use Role::*;
    assert_eq!(roles(&t), [User, Assistant, Tool, Tool, Assistant]);
    assert_eq!(t.messages[1].tool_calls().len(), 2);
    assert!(
        matches!(&t.messages[1].content()[0], ContentBlock::Thinking { text, .. } if text.starts_with("Reading"))
    );
    assert_eq!(t.messages[2].text(), "buy milk");
    assert!(!t.messages[2].is_error());
    assert_eq!(t.messages[3].text(), "File not found");
    assert!(t.messages[3].is_error());
    let usage = t.messages[1].usage().unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.output_tokens
        ),
        (600, 400, 50)
    );
    assert_eq!(t.report.skipped["info"], 1);
}

#[test]
fn gemini_jsonl_applies_rewrites_and_rewinds() {
    let t = import_fixture_file("gemini.jsonl");
    assert_eq!(t.format, Format::Gemini);
    use Role::*;
    assert_eq!(roles(&t), [User, Assistant, Tool, User, Assistant]);
    // The second record of g1 (with its result) replaced the first.
    assert_eq!(t.messages[2].text(), "a.txt\nb.txt");
    assert_eq!(t.messages[2].tool_name(), Some("list_directory"));
    // $rewindTo u2 dropped u2 and g2.
    assert_eq!(t.messages[3].text(), "Just count them");
    assert!(!t.messages.iter().any(|m| m.text() == "Deleting."));
    assert_eq!((t.report.lines, t.report.skipped_lines), (10, 1));
}

#[test]
fn openhands_links_observations_by_cause() {
    let t = import_fixture_file("openhands.json");
    assert_eq!(t.format, Format::OpenHands);
    use Role::*;
    assert_eq!(roles(&t), [User, Assistant, Tool, Assistant, Tool]);
    assert_eq!(t.messages[1].text(), "Let me run them.");
    assert_eq!(
        t.messages[1].tool_calls()[0].arguments,
        json!({"command": "pytest"})
    );
    let usage = t.messages[1].usage().unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens
        ),
        (100, 600, 300)
    );
    assert_eq!(t.messages[2].tool_call_id(), Some("toolu_a"));
    assert_eq!(t.messages[2].text(), "3 passed");
    // An observation whose cause is not in the list keeps its own call id, flagged.
    assert_eq!(t.messages[4].tool_call_id(), Some("toolu_lost"));
    assert!(t.messages[4].is_error());
    assert_eq!(t.report.orphan_tool_results, 1);
    assert_eq!(
        t.messages[0].at(),
        Some(Utc.with_ymd_and_hms(2026, 4, 1, 12, 0, 0).unwrap())
    );
    assert!(t.report.notes.iter().any(|n| n.contains("UTC")));
}

#[test]
fn swe_agent_and_mini_swe_agent_have_no_times_and_say_so() {
    let t = import_fixture_file("swe_agent.traj");
    assert_eq!(t.format, Format::SweAgent);
    use Role::*;
    assert_eq!(roles(&t), [System, User, Assistant, Tool, Assistant]);
    assert_eq!(t.messages[3].tool_call_id(), Some("call_a"));
    assert_eq!(t.messages[3].tool_name(), Some("bash"));
    assert!(!t.report.has_timestamps);
    assert!(t.messages.iter().all(|m| m.at().is_none()));
    assert!(t
        .report
        .notes
        .iter()
        .any(|n| n.contains("no wall-clock times")));

    let mini = import_fixture_file("mini_swe_agent.traj.json");
    assert_eq!(mini.format, Format::SweAgent);
    assert_eq!(roles(&mini), [System, User, Assistant, User]);
    assert!(!mini.report.has_timestamps);
    // Tool output in user messages: nothing for micro compaction, and the report says so.
    let nothing_to_clear = |t: &Transcript| {
        t.report
            .notes
            .iter()
            .any(|n| n.contains("nothing to clear"))
    };
    assert!(nothing_to_clear(&mini));
    assert!(!nothing_to_clear(&t));
}

#[test]
fn provider_requests_import_with_tool_pairing() {
    let openai = import_fixture_file("openai.json");
    assert_eq!(openai.format, Format::OpenAi);
    use Role::*;
    assert_eq!(
        roles(&openai),
        [System, User, Assistant, Tool, Tool, Assistant, User]
    );
    assert_eq!(openai.messages[4].tool_name(), Some("read"));
    assert!(
        matches!(&openai.messages[6].content()[1], ContentBlock::Image { media_type, .. } if media_type == "image/png")
    );

    let anthropic = import_fixture_file("anthropic.json");
    assert_eq!(anthropic.format, Format::Anthropic);
    assert_eq!(
        roles(&anthropic),
        [System, User, Assistant, Tool, Tool, User, Assistant]
    );
    assert!(anthropic.messages[4].is_error());
    assert_eq!(anthropic.messages[4].tool_name(), Some("read"));
}

#[test]
fn a_malformed_line_names_file_and_line_or_is_counted_when_lenient() {
    let text = std::fs::read_to_string(import_fixture("claude_code.jsonl")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(2, "{\"type\": \"user\", \"message\": {\"content\": ");
    let broken = lines.join("\n");
    let error = import_text(&broken, "broken.jsonl", None, false).unwrap_err();
    assert!(matches!(&error, Error::Corrupt { line: 3, .. }), "{error}");
    assert!(
        error.to_string().starts_with("broken.jsonl: line 3: "),
        "{error}"
    );

    let lenient = import_text(&broken, "broken.jsonl", None, true).unwrap();
    assert_eq!(lenient.report.malformed_lines, 1);
    assert_eq!(
        lenient.messages,
        import_fixture_file("claude_code.jsonl").messages
    );
}

#[test]
fn a_wrongly_shaped_json_item_is_named() {
    let text = r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "no id"}]}"#;
    let error = import_text(text, "req.json", Some(Format::OpenAi), false).unwrap_err();
    assert!(matches!(&error, Error::Format { .. }), "{error}");
    assert!(error.to_string().contains("messages[1]"), "{error}");
    let lenient = import_text(text, "req.json", Some(Format::OpenAi), true).unwrap();
    assert_eq!(
        (lenient.messages.len(), lenient.report.malformed_lines),
        (1, 1)
    );
}

#[test]
fn an_unknown_format_is_a_clear_error() {
    let error = import_text("just some text", "notes.txt", None, false).unwrap_err();
    assert!(
        error.to_string().contains("cannot tell the log format"),
        "{error}"
    );
    let missing =
        import_file(Path::new("/no/such/file.jsonl"), &ImportOptions::default()).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }));
}

#[test]
fn detection_picks_every_fixture_format() {
    let cases = [
        ("claude_code.jsonl", Format::ClaudeCode),
        ("codex.jsonl", Format::Codex),
        ("gemini.json", Format::Gemini),
        ("gemini.jsonl", Format::Gemini),
        ("openhands.json", Format::OpenHands),
        ("swe_agent.traj", Format::SweAgent),
        ("mini_swe_agent.traj.json", Format::SweAgent),
        ("openai.json", Format::OpenAi),
        ("anthropic.json", Format::Anthropic),
    ];
    for (name, format) in cases {
        let path = import_fixture(name);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(detect(&text, &path), Some(format), "{name}");
    }
}

#[test]
fn format_names_parse_back() {
    for format in Format::ALL {
        assert_eq!(format.to_string().parse::<Format>().unwrap(), format);
    }
    assert!("claude".parse::<Format>().is_err());
    assert_eq!(
        serde_json::to_value(Format::SweAgent).unwrap(),
        json!("swe-agent")
    );
}

/// JSON values shaped like log lines: objects with the keys importers look at.
fn log_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        any::<i64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "user",
            "assistant",
            "system",
            "tool",
            "tool_use",
            "tool_result",
            "text",
            "message",
            "response_item",
            "function_call",
            "function_call_output",
            "token_count",
            "event_msg",
            "compacted",
            "compact_boundary",
            "gemini",
            "run",
            "2026-01-01T00:00:00Z",
            "c1",
            "",
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let keys = prop::sample::select(vec![
            "type",
            "role",
            "content",
            "message",
            "id",
            "tool_use_id",
            "tool_call_id",
            "call_id",
            "payload",
            "subtype",
            "isSidechain",
            "isCompactSummary",
            "timestamp",
            "usage",
            "info",
            "messages",
            "toolCalls",
            "result",
            "action",
            "observation",
            "cause",
            "tool_calls",
            "function",
            "arguments",
            "history",
            "tool_call_metadata",
            "source",
            "summary",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(keys, inner, 0..6).prop_map(|map| {
                serde_json::Value::Object(map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

fn import_everyhow(text: &str) {
    for format in Format::ALL.map(Some).into_iter().chain([None]) {
        for lenient in [false, true] {
            let Ok(transcript) = import_text(text, "fuzz.jsonl", format, lenient) else {
                continue;
            };
            for message in &transcript.messages {
                message.validate().unwrap();
            }
            replay(&transcript, MicroCompactionConfig::default(), None).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        import_everyhow(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_log_lines_never_panic(lines in prop::collection::vec(log_value(), 0..8)) {
        let jsonl: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
        import_everyhow(&jsonl.join("\n"));
        import_everyhow(&serde_json::Value::Array(lines.clone()).to_string());
        import_everyhow(&json!({"messages": lines, "history": []}).to_string());
    }
}

#[test]
fn replay_installs_compactions_and_advances_at_idle_gaps() {
    let t = import_fixture_file("claude_code.jsonl");
    let replayed = replay(&t, MicroCompactionConfig::default(), None).unwrap();
    // The compaction replaced the history with the summary; later messages follow it.
    let texts = |messages: &[Message]| messages.iter().map(Message::text).collect::<Vec<_>>();
    assert_eq!(
        texts(&replayed.memory.history()),
        texts(t.current_context())
    );
    assert_eq!(replayed.memory.history()[0].at(), t.messages[5].at());

    let gap = import_fixture_file("idle_gap.jsonl");
    let config = MicroCompactionConfig::default();
    let replayed = replay(&gap, config, None).unwrap();
    let [advance] = replayed.advances.as_slice() else {
        panic!("one advance expected: {:?}", replayed.advances)
    };
    assert_eq!((advance.before_message, advance.cleared), (33, 6));
    assert_eq!(advance.idle_seconds, 2 * 3600 + 30 + 15);
}

#[test]
fn until_cuts_the_transcript_at_a_time() {
    let t = import_fixture_file("claude_code.jsonl");
    let before_compaction = t.until(Utc.with_ymd_and_hms(2026, 1, 5, 10, 0, 0).unwrap());
    assert_eq!(before_compaction.messages.len(), 5);
    assert!(before_compaction.compactions.is_empty());
    let all = t.until(Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap());
    assert_eq!(all, t);
}

#[test]
fn codex_compaction_with_replacement_history_starts_the_context_there() {
    let lines = [
        json!({"timestamp": "2026-02-01T10:00:00Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "old question"}]}}),
        json!({"timestamp": "2026-02-01T11:00:00Z", "type": "compacted", "payload": {"message": "", "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "old question"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "summary of the work"}]}
        ]}}),
        json!({"timestamp": "2026-02-01T11:00:05Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "next"}]}}),
    ];
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let t = import_text(&text.join("\n"), "rollout.jsonl", None, false).unwrap();
    assert_eq!(t.format, Format::Codex);
    assert_eq!(t.compactions, [1]);
    let context: Vec<_> = t.current_context().iter().map(Message::text).collect();
    assert_eq!(context, ["old question", "summary of the work", "next"]);
}

#[test]
fn codex_compaction_right_after_a_response_does_not_merge_into_it() {
    // No token_count closes the response before the compaction: its replacement history
    // still starts a context of its own, and its assistant item is a message of its own.
    let lines = [
        json!({"timestamp": "2026-02-01T10:00:00Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "old question"}]}}),
        json!({"timestamp": "2026-02-01T10:00:05Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "old answer"}]}}),
        json!({"timestamp": "2026-02-01T11:00:00Z", "type": "compacted", "payload": {"message": "", "replacement_history": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "summary of the work"}]}
        ]}}),
        json!({"timestamp": "2026-02-01T11:00:05Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]}}),
    ];
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let t = import_text(&text.join("\n"), "rollout.jsonl", None, false).unwrap();
    let all: Vec<_> = t.messages.iter().map(Message::text).collect();
    assert_eq!(
        all,
        ["old question", "old answer", "summary of the work", "go on"]
    );
    assert_eq!(t.compactions, [2]);
}

#[test]
fn ctxmem_jsonl_sessions_import_like_any_log() {
    // The report's sample sessions: one ctxmem message per line.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sessions/bugfix-evening.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    let t = import_file(&path, &ImportOptions::default()).unwrap();
    assert_eq!(t.format, Format::Ctxmem);
    assert_eq!(t.messages.len(), lines);
    assert!(t.report.has_timestamps);
    // A bad line names its number.
    let broken = format!("{}\n{{\"role\": 7}}\n", text.lines().next().unwrap());
    let error = import_str(&broken, Path::new("s.jsonl"), &ImportOptions::default()).unwrap_err();
    assert!(matches!(error, Error::Corrupt { line: 2, .. }), "{error}");
}

#[test]
fn a_one_message_ctxmem_jsonl_file_imports() {
    let line = serde_json::to_string(&Message::user("hi")).unwrap();
    let t = import_str(&line, Path::new("one.jsonl"), &ImportOptions::default()).unwrap();
    assert_eq!((t.format, t.messages.len()), (Format::Ctxmem, 1));
}

#[test]
fn a_forced_wrong_format_says_what_the_file_looks_like() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/import/claude_code.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let forced = import_text(&text, "claude_code.jsonl", Some(Format::Codex), false).unwrap();
    assert!(forced.messages.is_empty());
    assert!(
        forced
            .report
            .notes
            .iter()
            .any(|note| note.contains("looks like claude-code")),
        "{:?}",
        forced.report.notes
    );
    let detected = import_text(&text, "claude_code.jsonl", None, false).unwrap();
    assert!(!detected.messages.is_empty());
    assert!(detected
        .report
        .notes
        .iter()
        .all(|n| !n.contains("looks like")));
}
