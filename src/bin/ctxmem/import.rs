//! `ctxmem import`: read agent logs, report what they hold and, with `--store`, keep
//! each as a session of a FileStore.

use std::path::{Path, PathBuf};

use clap::Args;
use ctxmem::report::session_files;
use ctxmem::session::MAX_SESSION_ID_LEN;
use ctxmem::{
    replay_into, ContextMemory, Durability, FileStore, Format, ImportReport, SessionId, Transcript,
};
use serde::Serialize;

use crate::output::{self, outln};

/// Import agent logs (Claude Code, Codex, Gemini CLI, OpenHands, SWE-agent, OpenAI,
/// Anthropic, ctxmem) into a FileStore, or without --store only report what was read,
/// skipped and flagged.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Log files, or folders to walk for them.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    read: output::ReadArgs,
    /// Each file becomes a session of this store (created when missing), named after
    /// the file or --session. The session is replayed as it happened: cutoff advances
    /// at idle gaps, full compactions where the log has them.
    #[command(flatten)]
    store: output::StoreArgs,
}

/// One file's import, as `--json` prints it.
#[derive(Serialize)]
struct Imported<'a> {
    file: String,
    /// The session it was stored as, with --store.
    session: Option<String>,
    format: Format,
    messages: usize,
    tool_calls: usize,
    tool_results: usize,
    compactions: &'a [usize],
    report: &'a ImportReport,
}

impl<'a> Imported<'a> {
    fn new(file: &Path, transcript: &'a Transcript) -> Self {
        Imported {
            file: file.display().to_string(),
            session: None,
            format: transcript.format,
            messages: transcript.messages.len(),
            tool_calls: transcript.tool_call_count(),
            tool_results: transcript.tool_result_count(),
            compactions: &transcript.compactions,
            report: &transcript.report,
        }
    }
}

pub fn run(args: ImportArgs, json: bool) -> anyhow::Result<()> {
    let files = session_files(&args.files)?;
    let transcripts = output::import_all(&files, &args.read)?;
    let mut imported: Vec<Imported> = files
        .iter()
        .zip(&transcripts)
        .map(|(file, transcript)| Imported::new(file, transcript))
        .collect();
    if let Some(dir) = &args.store.store {
        store_all(
            dir,
            args.store.session.as_deref(),
            &files,
            &transcripts,
            &mut imported,
        )?;
    }
    if json {
        return output::print_json(&imported);
    }
    let headers = [
        "file",
        "format",
        "msgs",
        "calls",
        "results",
        "compactions",
        "skipped",
        "malformed",
        "orphans",
    ];
    let rows: Vec<Vec<String>> = imported
        .iter()
        .map(|i| {
            vec![
                i.file.clone(),
                i.format.to_string(),
                i.messages.to_string(),
                i.tool_calls.to_string(),
                i.tool_results.to_string(),
                i.compactions.len().to_string(),
                i.report.skipped_lines.to_string(),
                i.report.malformed_lines.to_string(),
                i.report.orphan_tool_results.to_string(),
            ]
        })
        .collect();
    output::print_table(&headers, &rows)?;
    for i in &imported {
        if let (Some(session), Some(dir)) = (&i.session, &args.store.store) {
            outln!(
                "{}: stored as session {session} in {}",
                i.file,
                dir.display()
            )?;
        }
        for note in &i.report.notes {
            outln!("{}: {note}", i.file)?;
        }
    }
    Ok(())
}

/// Replays each transcript into a new session of the store at `dir`.
fn store_all(
    dir: &Path,
    session: Option<&str>,
    files: &[PathBuf],
    transcripts: &[Transcript],
    imported: &mut [Imported],
) -> anyhow::Result<()> {
    anyhow::ensure!(
        session.is_none() || files.len() == 1,
        "--session names one session: import one file with it"
    );
    let ids = files
        .iter()
        .map(|file| match session {
            Some(id) => Ok(SessionId::new(id)?),
            None => session_id_for(file),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let store = FileStore::open(dir)?.with_durability(Durability::Flush);
    let existing = store.sessions()?;
    for (index, (file, id)) in files.iter().zip(&ids).enumerate() {
        anyhow::ensure!(
            !existing.contains(id),
            "{}: session {id} already exists; name another with --session",
            dir.display()
        );
        anyhow::ensure!(
            !ids[..index].contains(id),
            "{}: another file also makes session {id}; import it on its own with --session",
            file.display()
        );
    }
    for ((id, transcript), imported) in ids.into_iter().zip(transcripts).zip(imported) {
        let builder = ContextMemory::builder()
            .store(store.clone())
            .session(id.clone());
        replay_into(transcript, builder, None)?;
        imported.session = Some(id.to_string());
    }
    Ok(())
}

/// A session id from a file name: its stem, with characters a session id cannot hold
/// replaced by `-`.
fn session_id_for(file: &Path) -> anyhow::Result<SessionId> {
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let stem = [".jsonl", ".json", ".traj"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(&name);
    let id: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(MAX_SESSION_ID_LEN)
        .collect();
    SessionId::new(id)
        .map_err(|error| anyhow::anyhow!("{}: {error}; name one with --session", file.display()))
}
