//! Checks the cache model against what a provider recorded: replays a session with
//! no compaction and compares, request by request, the modelled cache verdict with
//! the recorded usage (Claude Code's cache reads and writes, Codex's cached input).

use serde::Serialize;

use crate::cost::price::{PriceProfile, Ttl};
use crate::cost::replay::{replay, ReplayOptions, Session};
use crate::cost::strategy::StrategyKind;
use crate::error::Error;
use crate::message::Usage;

/// How well the cache model matched recorded usage.
///
/// A request is a *hit* when at least half of its input was read from the cache;
/// `matched` counts the requests where the model's verdict equals the provider's.
/// `token_weighted_error` is the mean absolute difference between the modelled and
/// the recorded cached fraction of the input, weighted by recorded input tokens
/// (0 is perfect, 1 is always wrong). Fractions, not token counts, are compared,
/// because the model's token estimate is not the provider's tokenizer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Agreement {
    /// Requests with recorded usage.
    pub requests: u64,
    /// Of those, the requests whose hit/miss verdict the model got right.
    pub matched: u64,
    /// `matched / requests` (0 without requests).
    pub ratio: f64,
    /// The token-weighted error of the cached fraction.
    pub token_weighted_error: f64,
    /// Recorded input tokens of those requests (the error's weight).
    pub recorded_input_tokens: u64,
}

impl Agreement {
    /// The agreement over both sets of requests.
    pub fn merge(self, other: Agreement) -> Agreement {
        let requests = self.requests + other.requests;
        let matched = self.matched + other.matched;
        let weight = self
            .recorded_input_tokens
            .saturating_add(other.recorded_input_tokens);
        let weighted = self.token_weighted_error * self.recorded_input_tokens as f64
            + other.token_weighted_error * other.recorded_input_tokens as f64;
        Agreement {
            requests,
            matched,
            ratio: ratio(matched as f64, requests as f64),
            token_weighted_error: ratio(weighted, weight as f64),
            recorded_input_tokens: weight,
        }
    }
}

fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

/// The cache the recorded usage implies: Anthropic's when it reports cache writes
/// (with the 1-hour TTL when any write used it), else OpenAI's automatic cache.
/// `None` when no request carries usage.
pub fn recorded_cache(session: &Session) -> Option<(PriceProfile, Ttl)> {
    let usages: Vec<&Usage> = session.messages.iter().filter_map(|m| m.usage()).collect();
    if usages.is_empty() {
        return None;
    }
    if usages.iter().any(|u| u.cache_write_tokens > 0) {
        let ttl = if usages.iter().any(|u| u.cache_write_1h_tokens > 0) {
            Ttl::OneHour
        } else {
            Ttl::FiveMinutes
        };
        Some((PriceProfile::anthropic(), ttl))
    } else {
        Some((PriceProfile::openai(), Ttl::FiveMinutes))
    }
}

/// Estimates the tokens every request sends that the log leaves out (the harness's
/// system prompt and tool definitions): the smallest difference, over the requests
/// with recorded usage, between the recorded input and the modelled input of the
/// logged messages. 0 without usage.
pub fn unlogged_prefix_tokens(session: &Session) -> Result<u64, Error> {
    let logged_only = Session {
        prefix_tokens: 0,
        ..session.clone()
    };
    let requests = replay(&logged_only, StrategyKind::None, &ReplayOptions::default())?;
    Ok(requests
        .iter()
        .filter_map(|request| {
            let usage = session.messages[request.index].usage()?;
            Some(
                usage
                    .total_input_tokens()
                    .saturating_sub(request.input_tokens),
            )
        })
        .min()
        .unwrap_or(0))
}

/// Replays `session` with no compaction under the cache its usage implies and
/// compares each request that carries usage. `None` without recorded usage.
///
/// The session's [`prefix_tokens`](Session::prefix_tokens) are sent as they are;
/// [`report_session`](crate::report_session) estimates them first.
pub fn validate(session: &Session) -> Result<Option<Agreement>, Error> {
    let Some((profile, ttl)) = recorded_cache(session) else {
        return Ok(None);
    };
    let options = ReplayOptions {
        profile,
        ttl,
        ..ReplayOptions::default()
    };
    let mut agreement = Agreement::default();
    let mut weighted_error = 0.0;
    for request in replay(session, StrategyKind::None, &options)? {
        let Some(usage) = session.messages[request.index].usage() else {
            continue;
        };
        let recorded_input = usage.total_input_tokens();
        if recorded_input == 0 || request.input_tokens == 0 {
            continue;
        }
        let recorded = usage.cache_read_tokens as f64 / recorded_input as f64;
        let modelled = request.cache_read_tokens as f64 / request.input_tokens as f64;
        agreement.requests += 1;
        agreement.matched += u64::from((recorded >= 0.5) == (modelled >= 0.5));
        agreement.recorded_input_tokens = agreement
            .recorded_input_tokens
            .saturating_add(recorded_input);
        weighted_error += (recorded - modelled).abs() * recorded_input as f64;
    }
    agreement.ratio = ratio(agreement.matched as f64, agreement.requests as f64);
    agreement.token_weighted_error = ratio(weighted_error, agreement.recorded_input_tokens as f64);
    Ok(Some(agreement))
}
