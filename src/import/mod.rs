//! Importers for real agent logs, and exporters to provider request formats.
//!
//! [`import_file`] reads one log, detects its [`Format`] unless told, and maps it to
//! ctxmem [`Message`]s with their recorded times and provider usage. What it skipped or
//! could not pair is counted in the [`ImportReport`].
//!
//! ```
//! use ctxmem::import::{import_str, ImportOptions, Format};
//! let log = r#"{"messages": [
//!     {"role": "user", "content": "List the files"},
//!     {"role": "assistant", "content": null, "tool_calls": [
//!         {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
//!     {"role": "tool", "tool_call_id": "c1", "content": "a.rs b.rs"}
//! ]}"#;
//! let transcript = import_str(log, "request.json".as_ref(), &ImportOptions::default())?;
//! assert_eq!(transcript.format, Format::OpenAi);
//! assert_eq!(transcript.messages.len(), 3);
//! assert_eq!(transcript.messages[2].tool_name(), Some("ls"));
//! # Ok::<(), ctxmem::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::Error;
use crate::message::{Message, Role};

pub mod anthropic;
mod builder;
pub mod claude_code;
pub mod codex;
mod ctxmem;
mod detect;
pub mod gemini;
mod json;
pub mod openai;
pub mod openhands;
mod replay;
pub mod swe_agent;

pub use anthropic::to_anthropic;
pub use detect::detect;
pub use openai::to_openai;
pub use replay::{replay, replay_into, Advance, Replay};

/// A log format ctxmem can import.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "&'static str")]
pub enum Format {
    /// Claude Code session JSONL (`~/.claude/projects/*/*.jsonl`).
    ClaudeCode,
    /// Codex CLI rollout JSONL (`~/.codex/sessions/**/rollout-*.jsonl`).
    Codex,
    /// Gemini CLI session JSON (the single-object form) or its `logs.json` prompt log.
    Gemini,
    /// An OpenHands event list.
    OpenHands,
    /// A SWE-agent `.traj` or mini-swe-agent trajectory.
    SweAgent,
    /// OpenAI Chat Completions request JSON (`messages`).
    OpenAi,
    /// Anthropic Messages request JSON (`system`, `messages`).
    Anthropic,
    /// ctxmem's own message JSON (what `ctxmem project --format ctxmem` prints, and
    /// what a stored session holds), as an array or one message per line.
    Ctxmem,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 8] = [
        Format::ClaudeCode,
        Format::Codex,
        Format::Gemini,
        Format::OpenHands,
        Format::SweAgent,
        Format::OpenAi,
        Format::Anthropic,
        Format::Ctxmem,
    ];

    /// The name the CLI uses: `claude-code`, `codex`, `gemini`, `openhands`,
    /// `swe-agent`, `openai`, `anthropic`, `ctxmem`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::Gemini => "gemini",
            Format::OpenHands => "openhands",
            Format::SweAgent => "swe-agent",
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Ctxmem => "ctxmem",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl From<Format> for &'static str {
    fn from(format: Format) -> Self {
        format.name()
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self, Error> {
        Format::ALL
            .into_iter()
            .find(|format| format.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
                Error::Invalid(format!(
                    "unknown format {name:?} (expected one of: {})",
                    names.join(", ")
                ))
            })
    }
}

/// How to import.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// The format, or `None` to detect it from the file's name and content.
    pub format: Option<Format>,
    /// Skip and count malformed lines (or items) instead of failing on the first.
    pub lenient: bool,
}

/// What an import read, skipped and could not pair.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Lines read (JSONL) or items read (JSON: messages, events, trajectory entries).
    pub lines: usize,
    /// Lines or items skipped on purpose: types the model never saw, or unknown ones.
    pub skipped_lines: usize,
    /// What was skipped, by kind: line types (`progress`, `event_msg:exec_command_end`)
    /// and content blocks (`block:redacted_thinking`, counted here but not in `skipped_lines`).
    pub skipped: BTreeMap<String, usize>,
    /// Malformed lines or items skipped under [`ImportOptions::lenient`].
    pub malformed_lines: usize,
    /// Tool results whose call was not seen before them. They are imported as they are.
    pub orphan_tool_results: usize,
    /// Whether any message has a recorded time.
    pub has_timestamps: bool,
    /// Anything else worth knowing, one sentence each.
    pub notes: Vec<String>,
}

/// One imported log.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Transcript {
    /// The format it was read as.
    pub format: Format,
    /// The messages the model saw, in file order, with recorded times and, on assistant
    /// messages, the provider's usage when the log kept it.
    pub messages: Vec<Message>,
    /// Indices into `messages` where a full compaction happened: from each one on, the
    /// context started afresh with that message (the summary).
    pub compactions: Vec<usize>,
    /// What was skipped and flagged.
    pub report: ImportReport,
}

impl Transcript {
    /// How many tool calls the assistant messages make.
    pub fn tool_call_count(&self) -> usize {
        self.messages.iter().map(|m| m.tool_calls().len()).sum()
    }

    /// How many tool results there are.
    pub fn tool_result_count(&self) -> usize {
        self.count_role(Role::Tool)
    }

    /// How many messages have `role`.
    pub fn count_role(&self, role: Role) -> usize {
        self.messages.iter().filter(|m| m.role() == role).count()
    }

    /// The transcript as it stood at `at`: the messages up to the first one recorded
    /// after `at` (untimed messages count as before), with the compactions among them.
    pub fn until(&self, at: DateTime<Utc>) -> Transcript {
        let end = self
            .messages
            .iter()
            .position(|m| m.at().is_some_and(|t| t > at))
            .unwrap_or(self.messages.len());
        Transcript {
            format: self.format,
            messages: self.messages[..end].to_vec(),
            compactions: self
                .compactions
                .iter()
                .copied()
                .filter(|&i| i < end)
                .collect(),
            report: self.report.clone(),
        }
    }

    /// The messages of the context after the last full compaction.
    pub fn current_context(&self) -> &[Message] {
        let start = self.compactions.last().copied().unwrap_or(0);
        &self.messages[start..]
    }
}

/// Reads and imports one log file. See [`import_str`].
pub fn import_file(path: &Path, options: &ImportOptions) -> Result<Transcript, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::io(path, source))?;
    let text = String::from_utf8(bytes).map_err(|error| Error::Format {
        path: path.to_owned(),
        message: format!("not UTF-8 text ({error})"),
    })?;
    import_str(&text, path, options)
}

/// Imports one log from its text. `origin` names it in errors and helps detection
/// (`.traj` files are SWE-agent's).
///
/// Errors: [`Error::Corrupt`] names the line of a malformed JSONL line;
/// [`Error::Format`] names the item of a wrongly shaped JSON log, or says the format
/// could not be detected.
pub fn import_str(text: &str, origin: &Path, options: &ImportOptions) -> Result<Transcript, Error> {
    let format = match options.format {
        Some(format) => format,
        None => detect(text, origin).ok_or_else(|| Error::Format {
            path: origin.to_owned(),
            message: "cannot tell the log format; name it (--format)".into(),
        })?,
    };
    let mut builder = builder::TranscriptBuilder::new(origin, options.lenient);
    match format {
        Format::ClaudeCode => claude_code::import(text, &mut builder)?,
        Format::Codex => codex::import(text, &mut builder)?,
        Format::Gemini => gemini::import(text, &mut builder)?,
        Format::OpenHands => openhands::import(text, &mut builder)?,
        Format::SweAgent => swe_agent::import(text, &mut builder)?,
        Format::OpenAi => openai::import(text, &mut builder)?,
        Format::Anthropic => anthropic::import(text, &mut builder)?,
        Format::Ctxmem => ctxmem::import(text, &mut builder)?,
    }
    let mut transcript = builder.finish(format);
    if transcript.messages.is_empty() && options.format.is_some() {
        if let Some(detected) = detect(text, origin).filter(|&detected| detected != format) {
            transcript.report.notes.push(format!(
                "no {format} records found; the file looks like {detected} (try --format auto)"
            ));
        }
    }
    Ok(transcript)
}
