//! Every session file of the real corpus (`$CTXMEM_CORPUS`) imports, with exact counts.
//!
//! The expected counts were worked out from the files with a separate script reading
//! the raw JSON (user lines, distinct `message.id`s, `tool_use`/`tool_result` blocks;
//! Codex response items grouped per response, plus the base instructions; OpenHands
//! actions and caused observations), not with the importer.

use std::io::Write;
use std::path::{Path, PathBuf};

use ctxmem::*;

/// (file under the corpus, messages, tool calls, tool results)
const EXPECTED: &[(&str, usize, usize, usize)] = &[
    ("claude_code/codemie/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", 16, 6, 6),
    ("claude_code/codemie/incremental-subagents-turn-2-agent-a485154.jsonl", 27, 20, 20),
    ("claude_code/codemie/incremental-subagents-turn-2.jsonl", 26, 14, 14),
    ("claude_code/fasthooks/sample_agent_sidechain.jsonl", 2, 0, 0),
    ("claude_code/fasthooks/sample_main_transcript.jsonl", 31, 10, 10),
    ("claude_code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl", 344, 186, 186),
    ("claude_code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 323, 177, 177),
    ("claude_code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", 466, 242, 242),
    ("claude_code/spotter/short.jsonl", 5, 2, 2),
    ("claude_code/spotter/subagent.jsonl", 32, 16, 16),
    ("claude_code/spotter/tool_heavy.jsonl", 17, 6, 6),
    ("codex/codemie/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", 173, 102, 102),
    ("codex/codemie/turn-2.jsonl", 9, 0, 0),
    ("codex/localpush_redacted/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl", 206, 104, 104),
    ("codex/localpush_redacted/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl", 255, 144, 143),
    ("gemini/codemie/logs.json", 3, 0, 0),
    ("gemini/codemie/session-2025-12-01T21-45-5b959dae.json", 24, 10, 10),
    ("mini_swe_agent/github_issue.traj.json", 22, 0, 0),
    ("openhands/basic.json", 4, 2, 1),
    ("openhands/basic_gui_mode.json", 10, 4, 4),
    ("openhands/basic_interactions.json", 6, 1, 0),
    ("swe_agent/gpt4__pydicom__pydicom-1458.traj", 26, 0, 0),
];

/// Files in the corpus that are not agent sessions.
fn is_not_a_session(relative: &str) -> bool {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    name.starts_with("LICENSE") || name.ends_with(".md") || name == "manifest.upstream.json"
}

/// The corpus folder, or `None` (with a notice) when `CTXMEM_CORPUS` is unset.
pub(crate) fn corpus() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("CTXMEM_CORPUS") else {
        // Straight to stderr, past the test harness's capture, so the skip is seen.
        let _ = writeln!(
            std::io::stderr(),
            "notice: CTXMEM_CORPUS is not set: skipping a real-corpus test"
        );
        return None;
    };
    let dir = PathBuf::from(dir);
    assert!(
        dir.is_dir(),
        "CTXMEM_CORPUS={} is not a folder",
        dir.display()
    );
    Some(dir)
}

fn files_under(dir: &Path, root: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, root, out);
        } else {
            out.push(
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
            );
        }
    }
}

#[test]
fn every_session_file_has_expected_counts() {
    let Some(root) = corpus() else { return };
    let mut files = Vec::new();
    files_under(&root, &root, &mut files);
    for file in files.iter().filter(|f| !is_not_a_session(f)) {
        assert!(
            EXPECTED.iter().any(|(name, ..)| name == file),
            "{file} is in the corpus but has no expected counts here"
        );
    }
    for &(name, messages, calls, results) in EXPECTED {
        let transcript = import_file(&root.join(name), &ImportOptions::default())
            .unwrap_or_else(|error| panic!("{error}"));
        let counts = (
            transcript.messages.len(),
            transcript.tool_call_count(),
            transcript.tool_result_count(),
        );
        assert_eq!(counts, (messages, calls, results), "{name}");
        assert_eq!(transcript.report.malformed_lines, 0, "{name}");
        assert_eq!(transcript.report.orphan_tool_results, 0, "{name}");
        for message in &transcript.messages {
            message.validate().unwrap();
        }
    }
}

#[test]
fn claude_code_compactions_start_at_their_summary() {
    let Some(root) = corpus() else { return };
    for name in EXPECTED
        .iter()
        .map(|e| e.0)
        .filter(|n| n.starts_with("claude_code/"))
    {
        let transcript = import_file(&root.join(name), &ImportOptions::default()).unwrap();
        let boundaries = std::fs::read_to_string(root.join(name))
            .unwrap()
            .lines()
            .filter(|line| line.contains("\"compact_boundary\""))
            .count();
        assert_eq!(transcript.compactions.len(), boundaries, "{name}");
        for &index in &transcript.compactions {
            let summary = &transcript.messages[index];
            assert_eq!(summary.role(), Role::User);
            assert!(
                summary
                    .text()
                    .starts_with("This session is being continued"),
                "{name}"
            );
        }
    }
}

#[test]
fn claude_code_usage_keeps_the_cache_write_split() {
    let Some(root) = corpus() else { return };
    let name = "claude_code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl";
    let transcript = import_file(&root.join(name), &ImportOptions::default()).unwrap();
    let assistants: Vec<_> = transcript
        .messages
        .iter()
        .filter(|m| m.role() == Role::Assistant)
        .collect();
    assert!(assistants.iter().all(|m| m.usage().is_some()));
    for usage in assistants.iter().filter_map(|m| m.usage()) {
        assert_eq!(
            usage.cache_write_5m_tokens + usage.cache_write_1h_tokens,
            usage.cache_write_tokens
        );
    }
    // The first response of the file, read by hand: 1h cache write of 8037 tokens.
    let first = assistants
        .iter()
        .filter_map(|m| m.usage())
        .find(|u| u.cache_write_tokens == 8037)
        .unwrap();
    assert_eq!(
        (
            first.cache_read_tokens,
            first.cache_write_1h_tokens,
            first.output_tokens
        ),
        (17842, 8037, 441)
    );
}

#[test]
fn codex_token_counts_are_not_doubled() {
    let Some(root) = corpus() else { return };
    let name = "codex/localpush_redacted/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl";
    let transcript = import_file(&root.join(name), &ImportOptions::default()).unwrap();
    let text = std::fs::read_to_string(root.join(name)).unwrap();
    // The last token_count's running total equals the sum of the per-response usage.
    let last_total = text
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|line| {
            line["payload"]["info"]["total_token_usage"]
                .as_object()
                .cloned()
        })
        .unwrap();
    let usages: Vec<_> = transcript
        .messages
        .iter()
        .filter_map(|m| m.usage())
        .collect();
    let output: u64 = usages.iter().map(|u| u.output_tokens).sum();
    let input: u64 = usages
        .iter()
        .map(|u| u.input_tokens + u.cache_read_tokens)
        .sum();
    assert_eq!(output, last_total["output_tokens"].as_u64().unwrap());
    assert_eq!(input, last_total["input_tokens"].as_u64().unwrap());
}

#[test]
fn claude_code_tool_results_keep_is_error_and_their_call_names() {
    let Some(root) = corpus() else { return };
    for name in EXPECTED
        .iter()
        .map(|e| e.0)
        .filter(|n| n.starts_with("claude_code/"))
    {
        let text = std::fs::read_to_string(root.join(name)).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let only_sidechains = lines
            .iter()
            .filter(|l| matches!(l["type"].as_str(), Some("user" | "assistant")))
            .all(|l| l["isSidechain"] == true);
        let kept = lines
            .iter()
            .filter(|l| only_sidechains || l["isSidechain"] != true);
        let mut errors = 0;
        let mut names = std::collections::HashMap::new();
        for line in kept {
            for block in line["message"]["content"].as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("tool_result") if block["is_error"] == true => errors += 1,
                    Some("tool_use") => {
                        names.insert(
                            block["id"].as_str().unwrap(),
                            block["name"].as_str().unwrap(),
                        );
                    }
                    _ => {}
                }
            }
        }
        let transcript = import_file(&root.join(name), &ImportOptions::default()).unwrap();
        let results: Vec<_> = transcript
            .messages
            .iter()
            .filter(|m| m.role() == Role::Tool)
            .collect();
        let imported_errors = results.iter().filter(|m| m.is_error()).count();
        assert_eq!(imported_errors, errors, "{name}");
        for result in results {
            let id = result.tool_call_id().unwrap();
            assert_eq!(result.tool_name(), names.get(id).copied(), "{name}: {id}");
        }
    }
}
