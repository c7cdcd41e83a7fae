//! `ctxmem`: import real agent sessions, inspect them, print what micro compaction
//! would send, and report what each compaction strategy would cost. A thin layer over the library; one module per subcommand.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod import;
mod inspect;
mod output;
mod project;
mod report;

/// Time-aware context memory for LLM agents: import, inspect, project and cost real sessions.
#[derive(Parser, Debug)]
#[command(name = "ctxmem", version, about)]
struct Cli {
    /// Machine-readable JSON output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Import(import::ImportArgs),
    Inspect(inspect::InspectArgs),
    Project(project::ProjectArgs),
    Report(report::ReportArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Import(args) => import::run(args, cli.json),
        Command::Inspect(args) => inspect::run(args, cli.json),
        Command::Project(args) => project::run(args),
        Command::Report(args) => report::run(args, cli.json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`ctxmem ... | head`): nothing left to say.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("ctxmem: error: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, skipping a cause whose text the message
/// already shows (ctxmem's errors include their I/O cause in their own text).
fn one_line(error: &anyhow::Error) -> String {
    let mut line = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line
}

/// Whether `error` is a write to a closed pipe.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
