//! `ctxmem project`: the history micro compaction would send, as request JSON.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::{Args, ValueEnum};
use ctxmem::{replay, to_anthropic, to_openai, MicroCompactionConfig};

use crate::output::{self, InputFormat, ReadArgs, StoreArgs};

/// Print the projected history as JSON, ready to send.
#[derive(Args, Debug)]
pub struct ProjectArgs {
    /// The log file (or --store DIR --session ID).
    #[arg(required_unless_present = "store")]
    file: Option<PathBuf>,
    #[command(flatten)]
    store: output::StoreArgs,
    /// When the request is made (RFC 3339); default the current time.
    #[arg(long, value_name = "RFC3339")]
    at: Option<DateTime<Utc>>,
    /// The output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Ctxmem)]
    format: OutputFormat,
    /// The file's format.
    #[arg(
        long,
        default_value = "auto",
        value_name = "auto|claude-code|codex|gemini|openhands|swe-agent|openai|anthropic|ctxmem"
    )]
    input_format: InputFormat,
    /// Skip malformed lines (and count them) instead of failing.
    #[arg(long)]
    lenient: bool,
}

/// How the projected history is printed.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum OutputFormat {
    /// OpenAI Chat Completions `{"messages": [...]}`.
    Openai,
    /// Anthropic Messages `{"system": ..., "messages": [...]}`.
    Anthropic,
    /// ctxmem's own message JSON, an array.
    Ctxmem,
}

/// For a file: replays the messages recorded up to `--at` with default settings on a
/// manual clock (full compactions replace the history with their summary), makes one
/// request at `--at`, and prints what it sends. For a stored session: takes the
/// session as its writer left it (its cutoff included) and makes one request at
/// `--at`, which advances the cutoff only if the session is idle by then (default
/// settings). The output is JSON with or without `--json`. A stored session is only
/// read, never locked or changed.
pub fn run(args: ProjectArgs) -> anyhow::Result<()> {
    let at = args.at.unwrap_or_else(Utc::now);
    let messages = match (args.file, &args.store) {
        (Some(file), StoreArgs { store: None, .. }) => {
            let read = ReadArgs {
                format: args.input_format,
                lenient: args.lenient,
            };
            let transcript = output::import_all(&[file], &read)?.remove(0);
            let recorded = transcript.until(at);
            if recorded.messages.is_empty() && !transcript.messages.is_empty() {
                eprintln!("note: no message was recorded by {at}; the log starts later");
            }
            replay(&recorded, MicroCompactionConfig::default(), Some(at))?
                .memory
                .messages()
        }
        (
            None,
            StoreArgs {
                store: Some(dir),
                session: Some(id),
            },
        ) => output::load_session(&output::open_store(dir)?, id)?
            .memory(at)?
            .messages(),
        _ => anyhow::bail!("name a file, or --store DIR --session ID"),
    };
    let body = match args.format {
        OutputFormat::Openai => to_openai(&messages),
        OutputFormat::Anthropic => to_anthropic(&messages),
        OutputFormat::Ctxmem => serde_json::to_value(&messages)?,
    };
    output::print_json(&[body])
}
