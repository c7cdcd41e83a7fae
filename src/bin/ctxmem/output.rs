//! What the subcommands share: reading log files (with a progress bar on a terminal),
//! the `--format` choice, and printing JSON or a table.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::Args;
use ctxmem::{
    import_file, ContextMemory, FileStore, Format, ImportOptions, ManualClock, Record, SessionId,
    Transcript,
};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

/// `println!` that returns the write error (a closed pipe, as in `ctxmem ... | head`)
/// instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}
pub(crate) use outln;

/// Files larger than this together get a progress bar (on a terminal).
const PROGRESS_FROM_BYTES: u64 = 4 << 20;

/// `--format` for input: `auto` or a format name.
#[derive(Clone, Copy, Debug, Default)]
pub struct InputFormat(pub Option<Format>);

impl FromStr for InputFormat {
    type Err = ctxmem::Error;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "auto" => Ok(InputFormat(None)),
            name => name.parse().map(|format| InputFormat(Some(format))),
        }
    }
}

/// How to read log files: `--format` and `--lenient`.
#[derive(Args, Debug)]
pub struct ReadArgs {
    /// The files' format.
    #[arg(
        long,
        default_value = "auto",
        value_name = "auto|claude-code|codex|gemini|openhands|swe-agent|openai|anthropic|ctxmem"
    )]
    pub format: InputFormat,
    /// Skip malformed lines (and count them) instead of failing.
    #[arg(long)]
    pub lenient: bool,
}

/// Imports every file, in order; a progress bar shows when the files are large and
/// stderr is a terminal.
pub fn import_all(files: &[PathBuf], read: &ReadArgs) -> anyhow::Result<Vec<Transcript>> {
    let options = ImportOptions {
        format: read.format.0,
        lenient: read.lenient,
    };
    let sizes: Vec<u64> = files
        .iter()
        .map(|file| std::fs::metadata(file).map(|m| m.len()).unwrap_or(0))
        .collect();
    let total: u64 = sizes.iter().sum();
    let progress = if std::io::stderr().is_terminal() && total >= PROGRESS_FROM_BYTES {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(bar)
    } else {
        None
    };
    let mut transcripts = Vec::with_capacity(files.len());
    for (file, size) in files.iter().zip(sizes) {
        if let Some(bar) = &progress {
            bar.set_message(file.display().to_string());
        }
        transcripts.push(import_file(file, &options)?);
        if let Some(bar) = &progress {
            bar.inc(size);
        }
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    Ok(transcripts)
}

/// Prints one value as pretty JSON, or several as a JSON array.
pub fn print_json<T: Serialize>(items: &[T]) -> anyhow::Result<()> {
    let text = match items {
        [one] => serde_json::to_string_pretty(one),
        many => serde_json::to_string_pretty(many),
    }
    .context("serialising the output")?;
    outln!("{text}")?;
    Ok(())
}

/// Prints rows as a table with left-aligned, padded columns.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        outln!("{}", padded.join("  ").trim_end())
    };
    line(headers.to_vec())?;
    for row in rows {
        line(row.iter().map(String::as_str).collect())?;
    }
    Ok(())
}

/// A session store: `--store DIR`, and `--session ID` in it.
#[derive(Args, Debug)]
pub struct StoreArgs {
    /// A FileStore directory.
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// A session in the store.
    #[arg(long, value_name = "ID", requires = "store")]
    pub session: Option<String>,
}

/// Opens an existing store directory (never creates one).
pub fn open_store(dir: &Path) -> anyhow::Result<FileStore> {
    anyhow::ensure!(dir.is_dir(), "{}: no such store directory", dir.display());
    Ok(FileStore::open(dir)?)
}

/// A stored session, read without taking its lock or changing its log.
pub struct StoredSession {
    /// The session's log file.
    pub log: PathBuf,
    /// Its records, to replay into a detached memory (see [`StoredSession::memory`]).
    pub records: Vec<Record>,
    /// Its history as it stands (after its last full compaction), as a transcript.
    pub transcript: Transcript,
}

impl StoredSession {
    /// The session as its writer left it (history, cutoff, last assistant time), on a
    /// clock standing at `at`, with default settings; it persists nothing.
    pub fn memory(&self, at: DateTime<Utc>) -> anyhow::Result<ContextMemory> {
        Ok(ContextMemory::builder()
            .clock(ManualClock::new(at))
            .records(self.records.clone())
            .build()?)
    }
}

/// Reads session `id` of `store`.
pub fn load_session(store: &FileStore, id: &str) -> anyhow::Result<StoredSession> {
    let session = SessionId::new(id)?;
    anyhow::ensure!(
        store.sessions()?.contains(&session),
        "{}: no session {id:?}",
        store.dir().display()
    );
    let log = store.log_path(&session);
    let records = store.read(&session)?;
    let history = ContextMemory::builder()
        .records(records.clone())
        .build()?
        .history();
    let options = ImportOptions {
        format: Some(Format::Ctxmem),
        lenient: false,
    };
    let transcript = ctxmem::import_str(&serde_json::to_string(&history)?, &log, &options)?;
    Ok(StoredSession {
        log,
        records,
        transcript,
    })
}
