//! `ctxmem report`: what each compaction strategy would have cost on real sessions,
//! replayed against a prompt-cache model. A thin layer over [`ctxmem::Report`].

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use ctxmem::{PriceProfile, ReplayOptions, Report, ReportOptions, StrategyKind, Ttl};
use indicatif::{ProgressBar, ProgressStyle};

use crate::output::outln;

/// Replay sessions under each compaction strategy and compare cache use and cost.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Session files or folders, any importable format (default: the sample
    /// sessions in fixtures/sessions).
    paths: Vec<PathBuf>,
    /// Whose prices and cache rules.
    #[arg(long, value_enum, default_value_t = Provider::Anthropic)]
    provider: Provider,
    /// A price profile JSON file (the fields of `ctxmem::PriceProfile`) instead of
    /// the built-in one.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// The cache TTL in force, which is also ctxmem's idle threshold.
    #[arg(long, default_value = "5m", value_name = "5m|1h|24h")]
    ttl: Ttl,
    /// The strategies to compare, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,ctxmem,keep-last-n,token-trigger,ctxmem-budget",
        value_name = "none,ctxmem,keep-last-n,token-trigger,ctxmem-budget"
    )]
    strategies: Vec<StrategyKind>,
    /// Also draw the context size and cumulative cost per strategy into this SVG.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

/// The built-in price profiles.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Provider {
    Anthropic,
    Openai,
    Gemini,
}

/// The sample sessions: `fixtures/sessions` here, else in the source tree.
fn sample_sessions() -> PathBuf {
    let here = Path::new("fixtures/sessions");
    if here.is_dir() {
        here.to_owned()
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sessions")
    }
}

fn profile(args: &ReportArgs) -> anyhow::Result<PriceProfile> {
    let profile = match &args.prices {
        Some(file) => PriceProfile::from_json_file(file)?,
        None => PriceProfile::builtin(match args.provider {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
            Provider::Gemini => "gemini",
        })?,
    };
    if !profile.ttls.contains(&args.ttl) {
        let offered: Vec<&str> = profile.ttls.iter().map(|t| t.as_str()).collect();
        bail!(
            "{} has no {} cache TTL (it offers {})",
            profile.provider,
            args.ttl,
            offered.join(", ")
        );
    }
    Ok(profile)
}

/// Runs the report and prints it; fails (after printing) when a file could not be read.
pub fn run(args: ReportArgs, json: bool) -> anyhow::Result<()> {
    if let Some(plot) = &args.plot {
        let folder = plot.parent().filter(|p| !p.as_os_str().is_empty());
        if folder.is_some_and(|folder| !folder.is_dir()) {
            bail!("{}: the folder for the plot does not exist", plot.display());
        }
    }
    let options = ReportOptions {
        replay: ReplayOptions {
            profile: profile(&args)?,
            ttl: args.ttl,
            ..ReplayOptions::default()
        },
        strategies: args.strategies.clone(),
    };
    let paths = if args.paths.is_empty() {
        vec![sample_sessions()]
    } else {
        args.paths
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        ProgressBar::new(0).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} sessions")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        )
    });
    let report = Report::build(&paths, &options, |done, total| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        outln!("{}", report.to_table().trim_end_matches('\n'))?;
    }
    if let Some(plot) = &args.plot {
        ctxmem::report::write_svg(&report, plot).context("could not write the plot")?;
    }
    if let Some(first) = report.errors.first() {
        bail!(
            "{} file(s) could not be reported on, first {first}",
            report.errors.len()
        );
    }
    Ok(())
}
