//! Replays a recorded session request by request through one strategy, against the
//! cache model and a price profile.

use std::hash::{DefaultHasher, Hash, Hasher};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::cost::cache::{Prompt, PromptCache};
use crate::cost::price::{PriceProfile, Ttl};
use crate::cost::strategy::{build_strategy, RequestView, StrategyKind, StrategySettings};
use crate::error::Error;
use crate::message::{Message, Role};
use crate::tokens::{CharEstimator, TokenEstimator};

/// A recorded session: its messages and where full compactions restarted the context.
#[derive(Clone, Debug, Default)]
pub struct Session {
    /// Where it came from, for reports.
    pub file: String,
    /// The log format it was read from (`ctxmem`, `claude-code`, ...).
    pub format: String,
    /// The messages, in order.
    pub messages: Vec<Message>,
    /// Indices into `messages` where a full compaction restarted the context at a
    /// summary message: from there on, requests send `messages[index..]`.
    pub compactions: Vec<usize>,
    /// Tokens every request sends before the messages that logs leave out: the
    /// harness's system prompt and tool definitions. 0 when unknown; the report
    /// estimates it from recorded usage (see [`unlogged_prefix_tokens`](crate::cost::unlogged_prefix_tokens)).
    pub prefix_tokens: u64,
}

/// The price profile and cache TTL a replay assumes, and the strategies' knobs.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayOptions {
    /// Prices and the minimum cacheable length.
    pub profile: PriceProfile,
    /// The cache lifetime in force (also `ctxmem`'s idle threshold).
    pub ttl: Ttl,
    /// The strategies' knobs.
    pub settings: StrategySettings,
}

impl Default for ReplayOptions {
    /// Anthropic, 5-minute TTL, default strategy settings.
    fn default() -> Self {
        ReplayOptions {
            profile: PriceProfile::anthropic(),
            ttl: Ttl::FiveMinutes,
            settings: StrategySettings::default(),
        }
    }
}

/// One modelled request.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RequestCost {
    /// Index in the session of the assistant message the request produced.
    pub index: usize,
    /// When it was made.
    pub at: DateTime<Utc>,
    /// Input tokens sent (uncached + cache read + cache write).
    pub input_tokens: u64,
    /// Of those, read from the cache.
    pub cache_read_tokens: u64,
    /// Of those, written to the cache.
    pub cache_write_tokens: u64,
    /// Output tokens: recorded usage when present, else estimated.
    pub output_tokens: u64,
    /// Modelled price in US dollars.
    pub cost_usd: f64,
    /// The strategy changed already-sent content while the cache still held it, so
    /// the read was cut short.
    pub self_caused_break: bool,
}

/// The identity of the unlogged prefix in a [`Prompt`].
const UNLOGGED_PREFIX: u64 = u64::MAX;

/// A session's messages prepared once for every strategy: times and token counts.
struct Prepared<'a> {
    session: &'a Session,
    times: Vec<DateTime<Utc>>,
    message_tokens: Vec<u64>,
    content_tokens: Vec<u64>,
    placeholder_tokens: u64,
}

impl<'a> Prepared<'a> {
    fn new(session: &'a Session, placeholder: &str) -> Self {
        let estimator = CharEstimator;
        let mut last = session
            .messages
            .iter()
            .find_map(Message::at)
            .unwrap_or(DateTime::UNIX_EPOCH);
        let times = session
            .messages
            .iter()
            .map(|message| {
                last = message.at().unwrap_or(last);
                last
            })
            .collect();
        // Each body is estimated once; a message is its content plus its calls, so a
        // cleared one (calls + placeholder) never underflows.
        let content_tokens: Vec<u64> = session
            .messages
            .iter()
            .map(|m| estimator.content_tokens(m))
            .collect();
        let message_tokens = session
            .messages
            .iter()
            .zip(&content_tokens)
            .map(|(m, content)| content + estimator.tool_call_tokens(m))
            .collect();
        Prepared {
            session,
            times,
            content_tokens,
            message_tokens,
            placeholder_tokens: estimator.text_tokens(placeholder),
        }
    }

    /// The request producing assistant message `index`, in the context from `start`.
    fn view(&self, start: usize, index: usize) -> RequestView<'_> {
        RequestView {
            start,
            messages: &self.session.messages[start..index],
            times: &self.times[start..index],
            content_tokens: &self.content_tokens[start..index],
            message_tokens: &self.message_tokens[start..index],
            placeholder_tokens: self.placeholder_tokens,
            prefix_tokens: self.session.prefix_tokens,
            at: self.times[index],
        }
    }

    /// The prompt as the cache sees it: message `i` is identified by its position in
    /// the session, whether it is cleared, and where its context starts.
    /// The unlogged prefix comes first, the same in every context.
    fn prompt(&self, start: usize, cleared: &[bool]) -> Prompt {
        let prefix = self.session.prefix_tokens;
        let prefix = (prefix > 0).then_some((UNLOGGED_PREFIX, prefix));
        Prompt::new(prefix.into_iter().chain(cleared.iter().enumerate().map(
            |(offset, &cleared)| {
                let index = start + offset;
                let mut hasher = DefaultHasher::new();
                (start, index, cleared).hash(&mut hasher);
                let tokens = if cleared {
                    self.message_tokens[index] - self.content_tokens[index]
                        + self.placeholder_tokens
                } else {
                    self.message_tokens[index]
                };
                (hasher.finish(), tokens)
            },
        )))
    }

    /// The requests: each assistant message with a non-empty context before it,
    /// with the start of that context.
    fn requests(&self) -> Vec<(usize, usize)> {
        let mut start = 0;
        let mut requests = Vec::new();
        for (index, message) in self.session.messages.iter().enumerate() {
            if self.session.compactions.contains(&index) {
                start = index;
            }
            if message.role() == Role::Assistant && index > start {
                requests.push((start, index));
            }
        }
        requests
    }
}

/// Replays `session` through the strategy `kind`: one [`RequestCost`] per request.
///
/// Each assistant message is one request, made at its time, whose input is the
/// context before it as the strategy projects it. The cache model decides what is
/// read and written; `options.profile` prices it.
pub fn replay(
    session: &Session,
    kind: StrategyKind,
    options: &ReplayOptions,
) -> Result<Vec<RequestCost>, Error> {
    let settings = &options.settings;
    let prepared = Prepared::new(session, &settings.micro.placeholder);
    // The budget counts the history; the unlogged prefix comes on top of it.
    let history_budget = settings.budget_tokens.saturating_sub(session.prefix_tokens);
    let budget = options.profile.budget(options.ttl, history_budget);
    let mut strategy = build_strategy(kind, settings, options.ttl.duration(), budget)?;
    let mut cache = PromptCache::new(options.ttl.duration(), options.profile.min_cacheable_tokens);
    let mut previous: Option<(usize, Prompt)> = None;
    let mut costs = Vec::new();
    for (start, index) in prepared.requests() {
        let view = prepared.view(start, index);
        let cleared = strategy.cleared(&view)?;
        let prompt = prepared.prompt(start, &cleared);
        let self_caused_break = match &previous {
            Some((previous_start, sent)) if *previous_start == start => {
                let unchanged = sent.common_len(&prompt);
                unchanged < sent.len() && cache.live_len(sent, view.at) > unchanged
            }
            _ => false,
        };
        let outcome = cache.request(&prompt, view.at);
        let assistant = &session.messages[index];
        let output_tokens = assistant
            .usage()
            .map_or(prepared.message_tokens[index], |usage| usage.output_tokens);
        let profile = &options.profile;
        let cost_usd = (outcome.uncached_tokens as f64 * profile.input
            + outcome.read_tokens as f64 * profile.cache_read
            + outcome.write_tokens as f64 * profile.write_price(options.ttl)
            + output_tokens as f64 * profile.output)
            / 1e6;
        costs.push(RequestCost {
            index,
            at: view.at,
            input_tokens: prompt.tokens(),
            cache_read_tokens: outcome.read_tokens,
            cache_write_tokens: outcome.write_tokens,
            output_tokens,
            cost_usd,
            self_caused_break,
        });
        previous = Some((start, prompt));
    }
    Ok(costs)
}
