//! The `ctxmem` binary, run for real, judged by its `--json` output.

use std::path::Path;
use std::process::{Command, Output};

use ctxmem::{import_str, FileStore, Format, ImportOptions};
use serde_json::Value;

use crate::common::import_fixture;

pub(crate) fn ctxmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctxmem"))
        .args(args)
        .env("HOME", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap()
}

pub(crate) fn json_of(args: &[&str]) -> Value {
    let output = ctxmem(args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn fixture(name: &str) -> String {
    import_fixture(name).display().to_string()
}

#[test]
fn inspect_json_has_the_documented_fields() {
    let file = fixture("claude_code.jsonl");
    let report = json_of(&["inspect", &file, "--json", "--at", "2026-01-05T12:00:00Z"]);
    assert_eq!(report["file"], file.as_str());
    assert_eq!(report["format"], "claude-code");
    assert_eq!(report["messages"], 8);
    assert_eq!(
        report["by_role"],
        serde_json::json!({"system": 0, "user": 2, "assistant": 3, "tool": 3})
    );
    assert_eq!(report["tool_calls"], 2);
    assert_eq!(report["tool_results"], 3);
    let result_bytes = "pub fn add(a: i32, b: i32) -> i32 { a - b }".len()
        + "test add ... FAILED".len()
        + "an answer to a call that is not in this file".len();
    assert_eq!(report["tool_result_bytes"], result_bytes);
    // 09:00:12 (last message before the compaction) to 11:00:00.001.
    assert_eq!(report["max_idle_gap_seconds"], 7188);
    assert_eq!(report["skipped_lines"], 3);
    assert_eq!(report["orphan_tool_results"], 1);
}

#[test]
fn inspect_of_several_files_is_an_array_and_untimed_gaps_are_null() {
    let report = json_of(&[
        "inspect",
        "--json",
        &fixture("swe_agent.traj"),
        &fixture("codex.jsonl"),
    ]);
    let files = report.as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["format"], "swe-agent");
    assert_eq!(files[0]["max_idle_gap_seconds"], Value::Null);
    assert_eq!(files[1]["format"], "codex");
    assert_eq!(files[1]["tool_results"], 3);
}

#[test]
fn inspect_reports_what_the_projection_clears_at_the_gap() {
    let report = json_of(&[
        "inspect",
        "--json",
        &fixture("idle_gap.jsonl"),
        "--at",
        "2026-01-06T11:10:00Z",
    ]);
    assert_eq!(report["max_idle_gap_seconds"], 2 * 3600 + 30);
    let at_gaps = report["micro_compaction"]["at_gaps"].as_array().unwrap();
    assert_eq!(at_gaps.len(), 1);
    // 34 messages, keep the last 10 before the last assistant: results 0..=5 of 8 cleared.
    assert_eq!(at_gaps[0]["before_message"], 33);
    assert_eq!(at_gaps[0]["cleared"], 6);
    assert_eq!(report["micro_compaction"]["now"]["cleared"], 0);
}

#[test]
fn project_prints_the_request_with_old_results_cleared() {
    let file = fixture("idle_gap.jsonl");
    let body = json_of(&[
        "project",
        &file,
        "--format",
        "openai",
        "--at",
        "2026-01-06T11:10:00Z",
    ]);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 34);
    let cleared: Vec<_> = messages
        .iter()
        .filter(|m| m["role"] == "tool" && m["content"] == "[Old tool result content cleared]")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        cleared,
        ["toolu_0", "toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5"]
    );

    // Before the gap was over: the 32 messages recorded by then, nothing cleared.
    let early = json_of(&[
        "project",
        &file,
        "--format",
        "openai",
        "--at",
        "2026-01-06T09:08:00Z",
    ]);
    assert_eq!(early["messages"].as_array().unwrap().len(), 32);
    assert!(!early
        .to_string()
        .contains("[Old tool result content cleared]"));
}

#[test]
fn project_starts_from_the_last_compaction() {
    let body = json_of(&[
        "project",
        &fixture("claude_code.jsonl"),
        "--format",
        "ctxmem",
        "--at",
        "2026-01-05T11:00:06Z",
    ]);
    let messages = body.as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert!(messages[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("This session is being continued"));
}

#[test]
fn import_json_reports_counts_and_skips() {
    let report = json_of(&["import", "--json", &fixture("codex.jsonl")]);
    assert_eq!(report["format"], "codex");
    assert_eq!(report["messages"], 9);
    assert_eq!(report["compactions"], serde_json::json!([6]));
    assert_eq!(report["report"]["orphan_tool_results"], 1);
    assert_eq!(
        report["report"]["skipped"]["event_msg:token_count(repeat)"],
        1
    );
}

#[test]
fn errors_are_one_line_with_a_failing_exit_code() {
    let output = ctxmem(&["inspect", "/no/such/session.jsonl"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("ctxmem: error: /no/such/session.jsonl"),
        "{stderr}"
    );

    let file = fixture("codex.jsonl");
    let output = ctxmem(&["import", "--format", "openhands", &file]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("ctxmem: error: {file}: line ")),
        "{stderr}"
    );
}

#[test]
fn inspect_without_files_says_the_default_folders_are_empty() {
    let output = ctxmem(&["inspect", "--json"]);
    assert!(output.status.success());
    assert_eq!(
        serde_json::from_slice::<Value>(&output.stdout).unwrap(),
        serde_json::json!([])
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("no sessions found"));
}

#[test]
fn the_ctxmem_projection_imports_back() {
    let file = fixture("idle_gap.jsonl");
    let output = ctxmem(&["project", &file, "--at", "2026-01-06T11:10:00Z"]);
    assert!(output.status.success());
    let projected = String::from_utf8(output.stdout).unwrap();
    let transcript = import_str(
        &projected,
        Path::new("projected.json"),
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(transcript.format, Format::Ctxmem);
    assert_eq!(transcript.messages.len(), 34);
    assert_eq!(
        transcript.messages[2].text(),
        "[Old tool result content cleared]"
    );
    assert_eq!(transcript.messages[2].tool_name(), Some("Read"));
    let original = crate::common::import_fixture_file("idle_gap.jsonl");
    assert_eq!(transcript.messages[33], original.messages[33]);
}

#[test]
fn import_into_a_store_then_inspect_and_project_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("sessions");
    let store = store.to_str().unwrap();
    let file = fixture("idle_gap.jsonl");
    let imported = json_of(&[
        "import",
        &file,
        "--store",
        store,
        "--session",
        "lunch",
        "--json",
    ]);
    assert_eq!(imported["session"], "lunch");
    assert_eq!(imported["messages"], 34);

    let stored = json_of(&[
        "inspect",
        "--store",
        store,
        "--session",
        "lunch",
        "--json",
        "--at",
        "2026-01-06T11:10:00Z",
    ]);
    assert_eq!(stored["format"], "ctxmem");
    assert_eq!(stored["messages"], 34);
    assert_eq!(stored["tool_results"], 8);
    assert_eq!(stored["max_idle_gap_seconds"], 2 * 3600 + 30);

    let from_store = json_of(&[
        "project",
        "--store",
        store,
        "--session",
        "lunch",
        "--format",
        "openai",
        "--at",
        "2026-01-06T11:10:00Z",
    ]);
    let from_file = json_of(&[
        "project",
        &file,
        "--format",
        "openai",
        "--at",
        "2026-01-06T11:10:00Z",
    ]);
    assert_eq!(from_store, from_file);

    // A session is never imported over.
    let again = ctxmem(&["import", &file, "--store", store, "--session", "lunch"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    // Without --session each file is named after itself.
    let named = json_of(&[
        "import",
        &file,
        &fixture("codex.jsonl"),
        "--store",
        store,
        "--json",
    ]);
    assert_eq!(named[0]["session"], "idle_gap");
    assert_eq!(named[1]["session"], "codex");
    let all = json_of(&["inspect", "--store", store, "--json"]);
    assert_eq!(all.as_array().unwrap().len(), 3);
}

#[test]
fn a_missing_store_or_session_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none");
    let output = ctxmem(&["inspect", "--store", missing.to_str().unwrap(), "--json"]);
    assert!(!output.status.success());
    assert!(!missing.exists(), "inspect must not create a store");
    let store = dir.path().to_str().unwrap();
    let output = ctxmem(&["project", "--store", store, "--session", "nope"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no session \"nope\""));
}

#[test]
fn two_files_named_alike_never_share_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for (folder, source) in [(&a, "claude_code.jsonl"), (&b, "codex.jsonl")] {
        std::fs::create_dir(folder).unwrap();
        std::fs::copy(import_fixture(source), folder.join("x.jsonl")).unwrap();
    }
    let store = dir.path().join("store");
    let output = ctxmem(&[
        "import",
        a.join("x.jsonl").to_str().unwrap(),
        b.join("x.jsonl").to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("session x"), "{stderr}");
    // Nothing is stored: the clash is found before any session is written.
    assert!(!store.join("x.jsonl").exists());
}

#[test]
fn a_reader_that_stops_early_gets_no_panic_trace() {
    // The reader closes the pipe before ctxmem writes (as `ctxmem ... | head` does).
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxmem"))
        .args(["inspect", "--json", &fixture("idle_gap.jsonl")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.status.success(), "{stderr}");
}

#[test]
fn inspect_passes_over_files_in_folders_that_hold_no_session() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/demo");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(import_fixture("claude_code.jsonl"), project.join("a.jsonl")).unwrap();
    // Claude Code leaves empty and summary-only files next to real sessions.
    std::fs::write(project.join("empty.jsonl"), "").unwrap();
    std::fs::write(
        project.join("summary.jsonl"),
        "{\"type\":\"summary\",\"summary\":\"Demo\",\"leafUuid\":\"u1\"}\n",
    )
    .unwrap();
    let inspect = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_ctxmem"))
            .args(args)
            .env("HOME", home.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    let at = "2026-01-06T00:00:00Z";
    let by_default = inspect(&["inspect", "--json", "--at", at]);
    assert_eq!(
        by_default["file"],
        project.join("a.jsonl").to_str().unwrap()
    );
    assert_eq!(by_default["messages"], 8);
    // A folder named on the command line is walked the same way.
    let named = inspect(&["inspect", "--json", "--at", at, project.to_str().unwrap()]);
    assert_eq!(named, by_default);
}

#[test]
fn import_walks_a_folder_into_one_session_per_log() {
    let logs = tempfile::tempdir().unwrap();
    std::fs::copy(
        import_fixture("claude_code.jsonl"),
        logs.path().join("a.jsonl"),
    )
    .unwrap();
    std::fs::copy(import_fixture("codex.jsonl"), logs.path().join("b.jsonl")).unwrap();
    std::fs::write(logs.path().join("notes.txt"), "not a session").unwrap();
    let store = tempfile::tempdir().unwrap();
    let store_dir = store.path().join("store");
    let imported = json_of(&[
        "import",
        "--json",
        logs.path().to_str().unwrap(),
        "--store",
        store_dir.to_str().unwrap(),
    ]);
    let sessions: Vec<&str> = imported
        .as_array()
        .expect("two files give an array")
        .iter()
        .map(|file| file["session"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, ["a", "b"]);
    let stored = FileStore::open(&store_dir).unwrap().sessions().unwrap();
    assert_eq!(stored.len(), 2);
}

#[test]
fn a_stored_session_is_projected_as_its_writer_left_it_without_its_lock() {
    use chrono::{Duration, TimeZone, Utc};
    use ctxmem::{
        ContextMemory, Keep, ManualClock, Message, MicroCompactionConfig, SessionId, ToolCall,
    };
    let dir = tempfile::tempdir().unwrap();
    let t0 = Utc.with_ymd_and_hms(2026, 1, 6, 9, 0, 0).unwrap();
    let clock = ManualClock::new(t0);
    // The writer's own settings (keep 1 message) are not the CLI's defaults (keep 10).
    let memory = ContextMemory::builder()
        .micro_compaction(MicroCompactionConfig {
            keep_recent: Keep::Messages(1),
            ..Default::default()
        })
        .clock(clock.clone())
        .store(FileStore::open(dir.path()).unwrap())
        .session(SessionId::new("app").unwrap())
        .build()
        .unwrap();
    let call = ToolCall::new("c1", "read_file", serde_json::json!({}));
    memory
        .push(Message::assistant_with_tool_calls("", vec![call]))
        .unwrap();
    memory
        .push(Message::tool_result("c1", "x".repeat(400)))
        .unwrap();
    memory.push(Message::user("and now?")).unwrap();
    clock.advance(Duration::hours(2));
    let sent = memory.messages();
    assert_eq!(sent[1].text(), "[Old tool result content cleared]");

    // The writer still holds the session: the CLI reads it without the lock, and sends
    // what the writer sends, its saved cutoff included.
    let store = dir.path().to_str().unwrap();
    let at = (t0 + Duration::hours(2)).to_rfc3339();
    let projected = json_of(&["project", "--store", store, "--session", "app", "--at", &at]);
    let texts: Vec<&str> = projected
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts[1], "[Old tool result content cleared]");
    let inspected = json_of(&[
        "inspect",
        "--json",
        "--store",
        store,
        "--session",
        "app",
        "--at",
        &at,
    ]);
    assert_eq!(inspected["micro_compaction"]["now"]["cleared"], 0);
    assert!(
        inspected["micro_compaction"]["now"]["tokens_after"]
            .as_u64()
            .unwrap()
            < 100,
        "{inspected}"
    );
    drop(memory);
}
