//! `ctxmem inspect`: what a session holds and what micro compaction would do to it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use clap::Args;
use ctxmem::report::session_files;
use ctxmem::{
    replay, Advance, CharEstimator, ContentBlock, Format, Message, MicroCompactionConfig, Role,
    TokenEstimator, Transcript,
};
use serde::Serialize;

use crate::output::{self, outln, StoredSession};

/// How many of the largest idle gaps are listed.
const GAPS_LISTED: usize = 5;

/// Where agent tools keep their sessions, under the home directory.
const DEFAULT_DIRS: [&str; 2] = [".claude/projects", ".codex/sessions"];

/// Report messages, tool traffic, idle gaps and what micro compaction would clear.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// Log files or folders of them; none (and no --store) means every session in
    /// ~/.claude/projects and ~/.codex/sessions. With --store and no --session: every
    /// stored session.
    files: Vec<PathBuf>,
    #[command(flatten)]
    read: output::ReadArgs,
    #[command(flatten)]
    store: output::StoreArgs,
    /// The time "now" is for the projection (RFC 3339); default the current time.
    #[arg(long, value_name = "RFC3339")]
    at: Option<DateTime<Utc>>,
}

/// One file's inspection, as `--json` prints it.
#[derive(Serialize)]
struct Inspection {
    file: String,
    format: Format,
    messages: usize,
    by_role: BTreeMap<&'static str, usize>,
    tool_calls: usize,
    tool_results: usize,
    tool_result_bytes: usize,
    body_bytes: usize,
    estimated_tokens: u64,
    max_idle_gap_seconds: Option<i64>,
    largest_idle_gaps: Vec<Gap>,
    compactions: usize,
    skipped_lines: usize,
    malformed_lines: usize,
    orphan_tool_results: usize,
    micro_compaction: Projection,
    notes: Vec<String>,
}

/// Time between two consecutive timed messages.
#[derive(Serialize)]
struct Gap {
    /// Index of the message the gap follows.
    after_message: usize,
    from: DateTime<Utc>,
    seconds: i64,
}

/// What micro compaction (default settings) clears at each idle gap of the replay, and
/// at a request made now.
#[derive(Serialize)]
struct Projection {
    at_gaps: Vec<Advance>,
    now: Now,
}

#[derive(Serialize)]
struct Now {
    at: DateTime<Utc>,
    cleared: usize,
    tokens_before: u64,
    tokens_after: u64,
}

pub fn run(args: InspectArgs, json: bool) -> anyhow::Result<()> {
    let sources = match &args.store.store {
        Some(dir) => {
            anyhow::ensure!(args.files.is_empty(), "name files or --store, not both");
            stored_sessions(dir, args.store.session.as_deref())?
        }
        None => files(args.files, &args.read)?,
    };
    if sources.is_empty() {
        if json {
            outln!("[]")?;
        }
        return Ok(());
    }
    let now = args.at.unwrap_or_else(Utc::now);
    let inspections = sources
        .iter()
        .map(|source| inspect(source, now))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if json {
        output::print_json(&inspections)
    } else {
        print_human(&inspections)
    }
}

/// The named files (folders walked for the sessions in them), or the sessions in the
/// default folders (saying so when there are none).
fn files(files: Vec<PathBuf>, read: &output::ReadArgs) -> anyhow::Result<Vec<Source>> {
    let files = if files.is_empty() {
        default_files()?
    } else {
        session_files(&files)?
    };
    if files.is_empty() {
        eprintln!(
            "no sessions found in ~/{} or ~/{}; name a file",
            DEFAULT_DIRS[0], DEFAULT_DIRS[1]
        );
    }
    let transcripts = output::import_all(&files, read)?;
    Ok(files
        .into_iter()
        .zip(transcripts)
        .map(|(file, transcript)| Source::File(file, transcript))
        .collect())
}

/// One stored session, or all of them.
fn stored_sessions(dir: &Path, session: Option<&str>) -> anyhow::Result<Vec<Source>> {
    let store = output::open_store(dir)?;
    let ids: Vec<String> = match session {
        Some(id) => vec![id.to_owned()],
        None => store.sessions()?.iter().map(|id| id.to_string()).collect(),
    };
    if ids.is_empty() {
        eprintln!("no sessions in {}", dir.display());
    }
    ids.iter()
        .map(|id| output::load_session(&store, id).map(Source::Stored))
        .collect()
}

/// Every session file under the default session folders that exist.
fn default_files() -> anyhow::Result<Vec<PathBuf>> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        anyhow::bail!("HOME is not set; name a file");
    };
    let dirs: Vec<PathBuf> = DEFAULT_DIRS
        .iter()
        .map(|dir| home.join(dir))
        .filter(|dir| dir.is_dir())
        .collect();
    Ok(session_files(&dirs)?)
}

/// What is inspected: a log file, or a stored session.
enum Source {
    File(PathBuf, Transcript),
    Stored(StoredSession),
}

impl Source {
    fn file(&self) -> &Path {
        match self {
            Source::File(file, _) => file,
            Source::Stored(stored) => &stored.log,
        }
    }

    fn transcript(&self) -> &Transcript {
        match self {
            Source::File(_, transcript) => transcript,
            Source::Stored(stored) => &stored.transcript,
        }
    }
}

/// A request at `now` to a stored session as its writer left it (its cutoff kept).
fn stored_now(stored: &StoredSession, now: DateTime<Utc>) -> anyhow::Result<Now> {
    let memory = stored.memory(now)?;
    let before = memory.summarization_input();
    let tokens_before = memory.projected_tokens();
    let sent = memory.messages();
    Ok(Now {
        at: now,
        cleared: sent
            .iter()
            .zip(&before)
            .filter(|(a, b)| !a.ptr_eq(b))
            .count(),
        tokens_before,
        tokens_after: memory.projected_tokens(),
    })
}

fn inspect(source: &Source, now: DateTime<Utc>) -> anyhow::Result<Inspection> {
    let (file, transcript) = (source.file(), source.transcript());
    let messages = &transcript.messages;
    let by_role = [Role::System, Role::User, Role::Assistant, Role::Tool]
        .into_iter()
        .map(|role| (role.as_str(), transcript.count_role(role)))
        .collect();
    let mut gaps = idle_gaps(messages);
    let max_idle_gap_seconds = gaps.iter().map(|gap| gap.seconds).max();
    gaps.sort_by_key(|gap| std::cmp::Reverse(gap.seconds));
    gaps.truncate(GAPS_LISTED);
    let replayed = replay(transcript, MicroCompactionConfig::default(), Some(now))?;
    let (final_advances, at_gaps): (Vec<_>, Vec<_>) = replayed
        .advances
        .into_iter()
        .partition(|advance| advance.before_message == messages.len());
    let tokens_after = replayed.memory.projected_tokens();
    let now = match (source, final_advances.first()) {
        (Source::Stored(stored), _) => stored_now(stored, now)?,
        (Source::File(..), Some(advance)) => Now {
            at: now,
            cleared: advance.cleared,
            tokens_before: advance.from_tokens,
            tokens_after,
        },
        (Source::File(..), None) => Now {
            at: now,
            cleared: 0,
            tokens_before: tokens_after,
            tokens_after,
        },
    };
    Ok(Inspection {
        file: file.display().to_string(),
        format: transcript.format,
        messages: messages.len(),
        by_role,
        tool_calls: transcript.tool_call_count(),
        tool_results: transcript.tool_result_count(),
        tool_result_bytes: messages
            .iter()
            .filter(|m| m.is_tool_result())
            .map(body_bytes)
            .sum(),
        body_bytes: messages.iter().map(body_bytes).sum(),
        estimated_tokens: messages
            .iter()
            .map(|m| CharEstimator.message_tokens(m))
            .sum(),
        max_idle_gap_seconds,
        largest_idle_gaps: gaps,
        compactions: transcript.compactions.len(),
        skipped_lines: transcript.report.skipped_lines,
        malformed_lines: transcript.report.malformed_lines,
        orphan_tool_results: transcript.report.orphan_tool_results,
        micro_compaction: Projection { at_gaps, now },
        notes: transcript.report.notes.clone(),
    })
}

/// Gaps between consecutive timed messages, in file order (untimed ones are passed over).
fn idle_gaps(messages: &[Message]) -> Vec<Gap> {
    let timed: Vec<(usize, DateTime<Utc>)> = messages
        .iter()
        .enumerate()
        .filter_map(|(index, m)| Some((index, m.at()?)))
        .collect();
    timed
        .windows(2)
        .map(|pair| Gap {
            after_message: pair[0].0,
            from: pair[0].1,
            seconds: (pair[1].1 - pair[0].1).num_seconds().max(0),
        })
        .collect()
}

/// Bytes of a message's bodies: its content blocks and its tool calls' arguments.
fn body_bytes(message: &Message) -> usize {
    let content: usize = message
        .content()
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } | ContentBlock::Thinking { text, .. } => text.len(),
            ContentBlock::Json { value } => value.to_string().len(),
            ContentBlock::Image { data, .. } => data.len(),
        })
        .sum();
    let calls: usize = message
        .tool_calls()
        .iter()
        .map(|call| call.arguments.to_string().len())
        .sum();
    content + calls
}

fn print_human(inspections: &[Inspection]) -> anyhow::Result<()> {
    let headers = [
        "file",
        "format",
        "msgs",
        "user",
        "asst",
        "calls",
        "results",
        "result KiB",
        "~tokens",
        "max gap",
        "skipped",
        "orphans",
    ];
    let rows: Vec<Vec<String>> = inspections
        .iter()
        .map(|i| {
            vec![
                i.file.clone(),
                i.format.to_string(),
                i.messages.to_string(),
                i.by_role["user"].to_string(),
                i.by_role["assistant"].to_string(),
                i.tool_calls.to_string(),
                i.tool_results.to_string(),
                (i.tool_result_bytes / 1024).to_string(),
                i.estimated_tokens.to_string(),
                i.max_idle_gap_seconds.map_or("-".into(), duration),
                i.skipped_lines.to_string(),
                i.orphan_tool_results.to_string(),
            ]
        })
        .collect();
    output::print_table(&headers, &rows)?;
    for inspection in inspections {
        outln!("\n{}", inspection.file)?;
        for gap in &inspection.largest_idle_gaps {
            outln!(
                "  idle {} after message {} ({})",
                duration(gap.seconds),
                gap.after_message,
                gap.from.format(TIME)
            )?;
        }
        for advance in &inspection.micro_compaction.at_gaps {
            outln!(
                "  at {} (before message {}): clears {} more results, ~{} -> ~{} tokens",
                advance.at.format(TIME),
                advance.before_message,
                advance.cleared,
                advance.from_tokens,
                advance.to_tokens
            )?;
        }
        let now = &inspection.micro_compaction.now;
        outln!(
            "  now ({}): clears {} more results, ~{} -> ~{} tokens",
            now.at.format(TIME),
            now.cleared,
            now.tokens_before,
            now.tokens_after
        )?;
        for note in &inspection.notes {
            outln!("  note: {note}")?;
        }
    }
    Ok(())
}

/// How times are printed in the human output.
const TIME: &str = "%Y-%m-%d %H:%M:%S UTC";

/// Seconds as `1h02m`, `5m10s` or `12s`.
fn duration(seconds: i64) -> String {
    match seconds {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}
