//! Generates the sample sessions that `ctxmem report` runs on by default:
//! `fixtures/sessions/*.jsonl`, ctxmem's own JSONL (one `Message` per line).
//!
//! Each is a tool-heavy coding session spanning hours: bursts of tool calls a few
//! seconds apart, the user's think time between tasks, and idle gaps of 5 to 50
//! minutes (reviews, meetings) and over an hour (lunch, the evening). Deterministic:
//! the same bytes on every run.
//!
//! Run: `cargo run --example gen_fixtures`

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use chrono::{DateTime, Duration, TimeZone, Utc};
use ctxmem::{Message, ToolCall};

/// A small deterministic generator (xorshift64*), so no dependency is needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `low..=high`.
    fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() as usize % items.len()]
    }
}

const FILES: [&str; 8] = [
    "src/parser.rs",
    "src/lexer.rs",
    "src/eval.rs",
    "src/main.rs",
    "src/error.rs",
    "src/value.rs",
    "tests/parse.rs",
    "Cargo.toml",
];
const IDENTS: [&str; 10] = [
    "token", "span", "expr", "scope", "value", "frame", "cursor", "node", "depth", "arity",
];

/// A plausible Rust source file of `lines` lines.
fn source(rng: &mut Rng, path: &str, lines: u64) -> String {
    let mut out = format!("// {path}\nuse crate::error::{{Error, Result}};\n\n");
    for line in 0..lines {
        let a = rng.pick(&IDENTS);
        let b = rng.pick(&IDENTS);
        let text = match line % 7 {
            0 => format!("pub fn {a}_{line}(&mut self, {b}: usize) -> Result<usize> {{"),
            1 => format!("    let {a} = self.{b}.get({line}).ok_or(Error::Eof)?;"),
            2 => format!("    if {a} > self.{b} {{ return Err(Error::Depth({a})); }}"),
            3 => format!("    self.{b} += {a}.len(); // keep {b} in step with {a}"),
            4 => format!("    tracing::debug!(?{a}, {b} = self.{b}, \"step {line}\");"),
            5 => format!("    Ok(self.{a}_{b}({line})?)"),
            _ => "}\n".to_owned(),
        };
        let _ = writeln!(out, "{text}");
    }
    out
}

/// The output of `cargo test` with `tests` tests, `failed` of them failing.
fn test_run(rng: &mut Rng, tests: u64, failed: u64) -> String {
    let mut out = String::from("   Compiling interp v0.3.1 (/home/dev/interp)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 4.21s\n     Running unittests src/lib.rs\n\n");
    let _ = writeln!(out, "running {tests} tests");
    for test in 0..tests {
        let verdict = if test < failed { "FAILED" } else { "ok" };
        let _ = writeln!(
            out,
            "test {}::{}_{} ... {verdict}",
            rng.pick(&["parser", "lexer", "eval"]),
            rng.pick(&IDENTS),
            test
        );
    }
    for test in 0..failed {
        let _ = writeln!(
            out,
            "\n---- parser::{}_{test} stdout ----\nthread 'parser::{}_{test}' panicked at src/parser.rs:{}:9:\nassertion `left == right` failed\n  left: Some(Expr::Call {{ arity: 2 }})\n right: Some(Expr::Call {{ arity: 3 }})",
            rng.pick(&IDENTS),
            rng.pick(&IDENTS),
            rng.range(10, 400)
        );
    }
    let _ = writeln!(
        out,
        "\ntest result: {}. {} passed; {failed} failed; 0 ignored",
        if failed > 0 { "FAILED" } else { "ok" },
        tests - failed
    );
    out
}

/// `grep -n` output with `hits` matches.
fn grep(rng: &mut Rng, pattern: &str, hits: u64) -> String {
    (0..hits)
        .map(|_| {
            format!(
                "{}:{}:    let {pattern} = self.{}.clone();\n",
                rng.pick(&FILES),
                rng.range(1, 600),
                rng.pick(&IDENTS)
            )
        })
        .collect()
}

/// Writes one session as it goes.
struct Session {
    rng: Rng,
    now: DateTime<Utc>,
    messages: Vec<Message>,
    calls: u64,
}

impl Session {
    fn new(seed: u64, start: DateTime<Utc>) -> Self {
        let mut session = Session {
            rng: Rng(seed),
            now: start,
            messages: Vec::new(),
            calls: 0,
        };
        session.push(Message::system(
            "You are a coding agent working in a Rust repository. Use the tools read_file, run, grep and edit_file; keep answers short.",
        ));
        session
    }

    fn push(&mut self, message: Message) {
        self.messages.push(message.with_time(self.now));
    }

    fn wait_seconds(&mut self, low: u64, high: u64) {
        self.now += Duration::seconds(self.rng.range(low, high) as i64);
    }

    fn idle_minutes(&mut self, low: u64, high: u64) {
        self.now += Duration::minutes(self.rng.range(low, high) as i64);
    }

    /// One model turn calling one tool, then the tool's result.
    fn tool_step(&mut self) {
        self.calls += 1;
        let id = format!("toolu_{:04}", self.calls);
        let file = self.rng.pick(&FILES);
        let (name, arguments, output) = match self.rng.range(0, 9) {
            0..=3 => {
                let lines = self.rng.range(40, 260);
                let body = source(&mut self.rng, file, lines);
                ("read_file", serde_json::json!({ "path": file }), body)
            }
            4..=5 => {
                let tests = self.rng.range(15, 90);
                let failed = self.rng.range(0, 3);
                let body = test_run(&mut self.rng, tests, failed);
                ("run", serde_json::json!({ "command": "cargo test" }), body)
            }
            6..=7 => {
                let pattern = self.rng.pick(&IDENTS);
                let hits = self.rng.range(3, 40);
                let body = grep(&mut self.rng, pattern, hits);
                ("grep", serde_json::json!({ "pattern": pattern }), body)
            }
            _ => {
                let line = self.rng.range(1, 400);
                (
                    "edit_file",
                    serde_json::json!({ "path": file, "line": line, "new": "    self.depth -= 1;" }),
                    format!("Edited {file}: 1 line changed at line {line}."),
                )
            }
        };
        let thought = format!("Next I will {name} {file}.");
        self.wait_seconds(3, 25);
        self.push(Message::assistant_with_tool_calls(
            thought,
            vec![ToolCall::new(id.clone(), name, arguments)],
        ));
        self.wait_seconds(1, 20);
        self.push(Message::tool_result(id, output).with_tool_name(name));
    }

    /// A user request worked through in `steps` tool calls, then an answer.
    fn task(&mut self, request: &str, steps: u64) {
        self.push(Message::user(request));
        for _ in 0..steps {
            self.tool_step();
        }
        self.wait_seconds(5, 30);
        let places = self.rng.range(1, 6);
        self.push(Message::assistant(format!(
            "Done: {request} The tests pass; I changed {places} places."
        )));
        self.wait_seconds(40, 240);
    }

    fn write(&self, path: &Path) -> anyhow::Result<()> {
        let mut out = String::new();
        for message in &self.messages {
            out.push_str(&serde_json::to_string(message)?);
            out.push('\n');
        }
        std::fs::write(path, out).with_context(|| path.display().to_string())
    }
}

fn at(day: u32, hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, day, hour, minute, 0).unwrap()
}

/// A working day on one refactor: long bursts, short breaks, lunch, a late return.
fn refactor_day() -> Session {
    let mut s = Session::new(0x5eed_0001, at(2, 9, 12));
    s.task(
        "Split the parser's expression handling into its own module.",
        14,
    );
    s.task("Now make the tests in tests/parse.rs compile again.", 10);
    s.idle_minutes(12, 18);
    s.task("Rename Frame::depth to Frame::nesting everywhere.", 12);
    s.task("The overflow test still fails; find out why.", 11);
    s.idle_minutes(35, 50);
    s.task("Add error spans to every Error::Depth.", 13);
    s.idle_minutes(70, 95);
    s.task("After lunch: run the whole suite and fix what broke.", 12);
    s.task("Document the new module in src/parser.rs.", 6);
    s.idle_minutes(6, 9);
    s.task(
        "Profile eval on the big fixture and remove the clone in the hot loop.",
        12,
    );
    s.idle_minutes(120, 150);
    s.task(
        "Last pass: clippy clean, then summarise the day's changes.",
        8,
    );
    s
}

/// An evening bug hunt with two longer pauses.
fn bugfix_evening() -> Session {
    let mut s = Session::new(0x5eed_0002, at(3, 19, 40));
    s.task("Users report a panic on empty input; reproduce it.", 9);
    s.idle_minutes(20, 30);
    s.task("Fix the panic and add a regression test.", 8);
    s.idle_minutes(40, 48);
    s.task("Check the lexer for the same pattern.", 7);
    s
}

/// A morning review: short tasks, a stand-up, and a meeting over an hour.
fn review_morning() -> Session {
    let mut s = Session::new(0x5eed_0003, at(4, 8, 30));
    s.task("Review the diff of yesterday's fix and list risks.", 6);
    s.idle_minutes(5, 8);
    s.task("Apply the two review comments about naming.", 5);
    s.idle_minutes(65, 80);
    s.task("Rebase on main and rerun the tests.", 7);
    s.task("Write the release note for the fix.", 3);
    s
}

fn main() -> anyhow::Result<()> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sessions");
    std::fs::create_dir_all(&folder).with_context(|| folder.display().to_string())?;
    let sessions = [
        ("refactor-day.jsonl", refactor_day()),
        ("bugfix-evening.jsonl", bugfix_evening()),
        ("review-morning.jsonl", review_morning()),
    ];
    for (name, session) in sessions {
        let path = folder.join(name);
        session.write(&path)?;
        println!("{}: {} messages", path.display(), session.messages.len());
    }
    Ok(())
}
