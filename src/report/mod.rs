//! `ctxmem report`: every strategy replayed over sessions, side by side, with the
//! cache model's agreement with recorded usage. [`Report::to_table`] renders it for
//! people, serde serialises it for scripts (`--json`), and `plot` (feature `plot`)
//! draws it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cost::{
    replay, unlogged_prefix_tokens, validate, Agreement, ReplayOptions, RequestCost, Session,
    StrategyKind, Ttl,
};
use crate::error::Error;

mod load;
#[cfg(feature = "plot")]
mod plot;
mod table;

pub use load::{load_session, session_files};
#[cfg(feature = "plot")]
pub use plot::write_svg;

/// What a report compares and under which prices.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// Prices, TTL and strategy knobs.
    pub replay: ReplayOptions,
    /// The strategies, in report order. Savings need `none` among them.
    pub strategies: Vec<StrategyKind>,
}

impl Default for ReportOptions {
    /// Anthropic, 5-minute TTL, all strategies.
    fn default() -> Self {
        ReportOptions {
            replay: ReplayOptions::default(),
            strategies: StrategyKind::ALL.to_vec(),
        }
    }
}

/// One strategy's figures over a session or a set of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StrategyTotals {
    /// Model requests (assistant messages).
    pub requests: u64,
    /// Input tokens sent (estimated).
    pub input_tokens: u64,
    /// Of those, read from the cache.
    pub cache_read_tokens: u64,
    /// Of those, written to the cache.
    pub cache_write_tokens: u64,
    /// Output tokens (recorded, else estimated).
    pub output_tokens: u64,
    /// Modelled cost in US dollars.
    pub cost_usd: f64,
    /// The largest input of one request.
    pub peak_context_tokens: u64,
    /// Requests whose cached prefix the strategy itself cut short.
    pub self_caused_breaks: u64,
    /// `none`'s cost minus this one (`None` when `none` was not run).
    pub savings_usd: Option<f64>,
    /// The saving as a percentage of `none`'s cost.
    pub savings_percent: Option<f64>,
}

impl StrategyTotals {
    /// The totals of a replay's requests.
    pub fn of(requests: &[RequestCost]) -> Self {
        let mut totals = StrategyTotals::default();
        for request in requests {
            totals.requests += 1;
            totals.input_tokens += request.input_tokens;
            totals.cache_read_tokens += request.cache_read_tokens;
            totals.cache_write_tokens += request.cache_write_tokens;
            totals.output_tokens += request.output_tokens;
            totals.cost_usd += request.cost_usd;
            totals.peak_context_tokens = totals.peak_context_tokens.max(request.input_tokens);
            totals.self_caused_breaks += u64::from(request.self_caused_break);
        }
        totals
    }

    fn add(&mut self, other: &StrategyTotals) {
        self.requests += other.requests;
        self.input_tokens += other.input_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
        self.peak_context_tokens = self.peak_context_tokens.max(other.peak_context_tokens);
        self.self_caused_breaks += other.self_caused_breaks;
    }
}

/// Strategy figures keyed by strategy name.
pub type ByStrategy = BTreeMap<StrategyKind, StrategyTotals>;

/// Fills every entry's savings against `none`'s cost.
fn fill_savings(by_strategy: &mut ByStrategy) {
    let Some(baseline) = by_strategy.get(&StrategyKind::None).map(|t| t.cost_usd) else {
        return;
    };
    for totals in by_strategy.values_mut() {
        let saved = baseline - totals.cost_usd;
        totals.savings_usd = Some(saved);
        totals.savings_percent = Some(if baseline > 0.0 {
            100.0 * saved / baseline
        } else {
            0.0
        });
    }
}

/// One session's report.
#[derive(Clone, Debug, Serialize)]
pub struct SessionReport {
    /// The file it was read from.
    pub file: String,
    /// Its log format.
    pub format: String,
    /// Its messages.
    pub messages: usize,
    /// Its full compactions.
    pub compactions: usize,
    /// Tokens charged per request for what the log leaves out (system prompt, tools).
    pub unlogged_prefix_tokens: u64,
    /// Whether its messages carry times (without, the whole session is one warm stretch).
    pub timed: bool,
    /// Per strategy.
    pub strategies: ByStrategy,
    /// The cache model against the session's recorded usage, when it has some.
    pub cache_model_agreement: Option<Agreement>,
    /// Per strategy, every request (for plots; left out of JSON).
    #[serde(skip)]
    pub timelines: BTreeMap<StrategyKind, Vec<RequestCost>>,
}

/// Replays `session` through each of `options.strategies` and validates the model
/// against its recorded usage. When the session's `prefix_tokens` is 0 and it has
/// recorded usage, the unlogged prefix is estimated from it first, so that every
/// request is charged for the system prompt and tools the log left out.
pub fn report_session(session: &Session, options: &ReportOptions) -> Result<SessionReport, Error> {
    let mut session = session.clone();
    if session.prefix_tokens == 0 {
        session.prefix_tokens = unlogged_prefix_tokens(&session)?;
    }
    let session = &session;
    let mut timelines = BTreeMap::new();
    for &kind in &options.strategies {
        timelines.insert(kind, replay(session, kind, &options.replay)?);
    }
    let mut strategies: ByStrategy = timelines
        .iter()
        .map(|(kind, requests)| (*kind, StrategyTotals::of(requests)))
        .collect();
    fill_savings(&mut strategies);
    Ok(SessionReport {
        file: session.file.clone(),
        format: session.format.clone(),
        messages: session.messages.len(),
        compactions: session.compactions.len(),
        unlogged_prefix_tokens: session.prefix_tokens,
        timed: session.messages.iter().any(|m| m.at().is_some()),
        strategies,
        cache_model_agreement: validate(session)?,
        timelines,
    })
}

/// A file that could not be reported on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileError {
    /// The file.
    pub file: String,
    /// Why, in one line.
    pub error: String,
}

impl std::fmt::Display for FileError {
    /// The error, led by the file unless its text already names it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.error.contains(&self.file) {
            f.write_str(&self.error)
        } else {
            write!(f, "{}: {}", self.file, self.error)
        }
    }
}

/// The whole report: `{"sessions", "totals", "cache_model_agreement", ...}` in JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The price profile's provider.
    pub provider: String,
    /// Its model.
    pub model: String,
    /// When its prices were taken.
    pub prices_taken: String,
    /// The cache TTL in force.
    pub ttl: Ttl,
    /// Per session, in input order.
    pub sessions: Vec<SessionReport>,
    /// Over all sessions, per strategy.
    pub totals: ByStrategy,
    /// The cache model against all recorded usage.
    pub cache_model_agreement: Agreement,
    /// Files skipped with an error.
    pub errors: Vec<FileError>,
}

impl Report {
    /// Sums `sessions` up under `options`.
    pub fn new(
        options: &ReportOptions,
        sessions: Vec<SessionReport>,
        errors: Vec<FileError>,
    ) -> Self {
        let mut totals = ByStrategy::new();
        let mut agreement = Agreement::default();
        for session in &sessions {
            for (kind, figures) in &session.strategies {
                totals.entry(*kind).or_default().add(figures);
            }
            if let Some(session_agreement) = session.cache_model_agreement {
                agreement = agreement.merge(session_agreement);
            }
        }
        fill_savings(&mut totals);
        let profile = &options.replay.profile;
        Report {
            provider: profile.provider.clone(),
            model: profile.model.clone(),
            prices_taken: profile.taken.clone(),
            ttl: options.replay.ttl,
            sessions,
            totals,
            cache_model_agreement: agreement,
            errors,
        }
    }

    /// Loads and reports on every session file of `paths` (folders are walked),
    /// calling `progress(done, total)` after each. A file that fails to load or
    /// replay is listed in [`errors`](Self::errors); listing the folders may fail.
    pub fn build(
        paths: &[std::path::PathBuf],
        options: &ReportOptions,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<Self, Error> {
        let files = session_files(paths)?;
        let mut sessions = Vec::new();
        let mut errors = Vec::new();
        for (done, file) in files.iter().enumerate() {
            match load_session(file).and_then(|session| report_session(&session, options)) {
                Ok(report) => sessions.push(report),
                Err(error) => errors.push(FileError {
                    file: file.display().to_string(),
                    error: error.to_string(),
                }),
            }
            progress(done + 1, files.len());
        }
        Ok(Report::new(options, sessions, errors))
    }
}
