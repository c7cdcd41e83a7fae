//! Export to provider request formats: round trips and the shapes providers require.

use std::path::Path;

use ctxmem::*;
use serde_json::json;

use crate::common::import_fixture_file;

fn reimport(body: &serde_json::Value, format: Format) -> Transcript {
    let options = ImportOptions {
        format: Some(format),
        lenient: false,
    };
    import_str(&body.to_string(), Path::new("exported.json"), &options).unwrap()
}

#[test]
fn openai_round_trip_gives_equal_messages() {
    let imported = import_fixture_file("openai.json");
    let again = reimport(&to_openai(&imported.messages), Format::OpenAi);
    assert_eq!(again.messages, imported.messages);
}

#[test]
fn anthropic_round_trip_gives_equal_messages() {
    let imported = import_fixture_file("anthropic.json");
    let again = reimport(&to_anthropic(&imported.messages), Format::Anthropic);
    assert_eq!(again.messages, imported.messages);
}

#[test]
fn anthropic_export_groups_consecutive_tool_results_in_one_user_message() {
    let imported = import_fixture_file("anthropic.json");
    let body = to_anthropic(&imported.messages);
    assert_eq!(body["system"], "You are a coding agent.");
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<_> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "user", "assistant"]);
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a.rs\nb.rs"}]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "permission denied"}], "is_error": true},
        ])
    );
}

#[test]
fn openai_export_writes_tool_calls_and_tool_messages() {
    let imported = import_fixture_file("anthropic.json");
    let body = to_openai(&imported.messages);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "You are a coding agent."})
    );
    assert_eq!(
        messages[2]["tool_calls"][1]["function"],
        json!({"name": "read", "arguments": "{\"path\":\"a.rs\"}"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "tool", "tool_call_id": "toolu_2", "content": "permission denied"})
    );
    assert_eq!(
        messages[5]["content"][1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
}

#[test]
fn a_projected_memory_exports_with_its_placeholders() {
    let (memory, clock, _) = crate::common::memory_with(crate::common::keep_messages(1));
    crate::common::push_exchange(&memory, 1);
    memory.push(Message::assistant("done")).unwrap();
    clock.advance(crate::common::hours(2));
    let body = to_anthropic(&memory.messages());
    assert_eq!(
        body["messages"][2]["content"][0]["content"][0]["text"],
        crate::common::PLACEHOLDER
    );
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "call_1");
}

/// Everything but the time, usage and id, which provider requests do not carry.
/// Chat Completions has no thinking blocks and no error flag either.
fn request_view(message: &Message, format: Format) -> serde_json::Value {
    let openai = format == Format::OpenAi;
    let content: Vec<_> = message
        .content()
        .iter()
        .filter(|block| !openai || !matches!(block, ContentBlock::Thinking { .. }))
        .collect();
    json!({
        "role": message.role(),
        "content": content,
        "tool_calls": message.tool_calls(),
        "tool_call_id": message.tool_call_id(),
        "tool_name": message.tool_name(),
        "is_error": message.is_error() && !openai,
    })
}

fn assert_same(got: &[serde_json::Value], expected: &[serde_json::Value]) {
    assert_eq!(got.len(), expected.len());
    for (index, (got, expected)) in got.iter().zip(expected).enumerate() {
        assert_eq!(got, expected, "message {index}");
    }
}

#[test]
fn real_sessions_survive_both_exports() {
    let Some(root) = std::env::var_os("CTXMEM_CORPUS") else {
        eprintln!("CTXMEM_CORPUS is not set: skipping the real-corpus export test");
        return;
    };
    let root = Path::new(&root);
    assert!(root.is_dir(), "CTXMEM_CORPUS is not a folder");
    let name = "claude_code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl";
    let imported = import_file(&root.join(name), &ImportOptions::default()).unwrap();
    let context = imported.current_context();
    let anthropic = reimport(&to_anthropic(context), Format::Anthropic);
    let expected: Vec<_> = context
        .iter()
        .map(|m| request_view(m, Format::Anthropic))
        .collect();
    let got: Vec<_> = anthropic
        .messages
        .iter()
        .map(|m| request_view(m, Format::Anthropic))
        .collect();
    assert_same(&got, &expected);
    let openai = reimport(&to_openai(context), Format::OpenAi);
    let expected: Vec<_> = context
        .iter()
        .map(|m| request_view(m, Format::OpenAi))
        .collect();
    let got: Vec<_> = openai
        .messages
        .iter()
        .map(|m| request_view(m, Format::OpenAi))
        .collect();
    assert_same(&got, &expected);
}

#[test]
fn openai_export_gives_an_empty_tool_result_text_not_null() {
    // Chat Completions refuses a tool (or user) message whose content is null; only an
    // assistant message that calls tools may go without.
    let call = ToolCall::new("c1", "touch", json!({}));
    let body = to_openai(&[
        Message::assistant_with_tool_calls("", vec![call]),
        // A Claude Code tool_result without content imports with no blocks.
        Message::tool_result("c1", "").with_content(Vec::new()),
    ]);
    assert_eq!(body["messages"][0]["content"], serde_json::Value::Null);
    assert_eq!(body["messages"][1]["content"], "");
}
