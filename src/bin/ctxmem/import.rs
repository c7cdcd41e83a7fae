//! `ctxmem import`: read agent logs and report what they hold.

use std::path::{Path, PathBuf};

use clap::Args;
use ctxmem::{Format, ImportReport, Transcript};
use serde::Serialize;

use crate::output;

/// Import agent logs (Claude Code, Codex, Gemini CLI, OpenHands, SWE-agent, OpenAI,
/// Anthropic) and report what was read, skipped and flagged.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Log files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    read: output::ReadArgs,
}

/// One file's import, as `--json` prints it.
#[derive(Serialize)]
struct Imported<'a> {
    file: String,
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
    let transcripts = output::import_all(&args.files, &args.read)?;
    let imported: Vec<Imported> = args
        .files
        .iter()
        .zip(&transcripts)
        .map(|(file, transcript)| Imported::new(file, transcript))
        .collect();
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
    output::print_table(&headers, &rows);
    for i in &imported {
        for note in &i.report.notes {
            println!("{}: {note}", i.file);
        }
    }
    Ok(())
}
