//! The compaction strategies a cost replay compares. Each one decides, before every
//! request, which of the messages sent so far go out cleared.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::clock::ManualClock;
use crate::error::Error;
use crate::memory::ContextMemory;
use crate::message::Message;
use crate::micro::{self, MicroCompactionConfig, TokenBudget};
use crate::middleware::{MicrocompactMiddleware, Middleware};

/// The strategies, by the names reports use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyKind {
    /// `none`: the raw history.
    None,
    /// `ctxmem`: [`ContextMemory`] with its defaults, the idle threshold set to the TTL.
    Ctxmem,
    /// `keep-last-n`: every request clears all tool results but the last N, with the
    /// stateless [`MicrocompactMiddleware`] default.
    KeepLastN,
    /// `token-trigger`: Anthropic `clear_tool_uses` (trigger, keep, clear_at_least).
    TokenTrigger,
    /// `ctxmem-budget`: `ctxmem` plus a [`TokenBudget`] that may clear while warm.
    CtxmemBudget,
}

impl StrategyKind {
    /// Every strategy, in report order.
    pub const ALL: [StrategyKind; 5] = [
        StrategyKind::None,
        StrategyKind::Ctxmem,
        StrategyKind::KeepLastN,
        StrategyKind::TokenTrigger,
        StrategyKind::CtxmemBudget,
    ];

    /// The report name: `none`, `ctxmem`, `keep-last-n`, `token-trigger`, `ctxmem-budget`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StrategyKind::None => "none",
            StrategyKind::Ctxmem => "ctxmem",
            StrategyKind::KeepLastN => "keep-last-n",
            StrategyKind::TokenTrigger => "token-trigger",
            StrategyKind::CtxmemBudget => "ctxmem-budget",
        }
    }
}

impl fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for StrategyKind {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        StrategyKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown strategy {text:?} (expected none, ctxmem, keep-last-n, token-trigger or ctxmem-budget)"
                ))
            })
    }
}

/// Anthropic's `clear_tool_uses` context edit, applied by the server to every request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenTrigger {
    /// Clear once the (uncleared) input reaches this many tokens. Anthropic's default: 100,000.
    pub trigger_tokens: u64,
    /// Tool uses kept verbatim. Anthropic's default: 3.
    pub keep_tool_uses: usize,
    /// Clear nothing unless at least this many tokens go. Anthropic's default: 0.
    pub clear_at_least: u64,
}

impl Default for TokenTrigger {
    fn default() -> Self {
        TokenTrigger {
            trigger_tokens: 100_000,
            keep_tool_uses: 3,
            clear_at_least: 0,
        }
    }
}

/// The knobs of the strategies that have some.
#[derive(Clone, Debug, PartialEq)]
pub struct StrategySettings {
    /// `keep-last-n`: tool results kept verbatim. Default 5.
    pub keep_last_n: usize,
    /// `token-trigger`'s edit.
    pub token_trigger: TokenTrigger,
    /// `ctxmem` and `ctxmem-budget`: the base configuration. Its idle threshold is
    /// replaced by the cache TTL in force.
    pub micro: MicroCompactionConfig,
    /// `ctxmem-budget`: the input tokens (unlogged prefix included) above which the
    /// [`TokenBudget`] may fire; the replay fills in the profile's cache ratios.
    /// Default: the token trigger's threshold, 100,000.
    pub budget_tokens: u64,
}

impl Default for StrategySettings {
    fn default() -> Self {
        StrategySettings {
            keep_last_n: 5,
            token_trigger: TokenTrigger::default(),
            micro: MicroCompactionConfig::default(),
            budget_tokens: TokenTrigger::default().trigger_tokens,
        }
    }
}

/// One request as a strategy sees it: the messages of the current context (since the
/// last full compaction) that precede the request, with their times and tokens.
#[derive(Clone, Copy, Debug)]
pub struct RequestView<'a> {
    /// Index in the session of `messages[0]`; it changes at a full compaction.
    pub start: usize,
    /// The context as recorded.
    pub messages: &'a [Message],
    /// When each message was written (missing times carried forward).
    pub times: &'a [DateTime<Utc>],
    /// Each message's content tokens (what clearing it saves, before the placeholder).
    pub content_tokens: &'a [u64],
    /// Each message's whole tokens.
    pub message_tokens: &'a [u64],
    /// The placeholder's tokens.
    pub placeholder_tokens: u64,
    /// Tokens sent before the messages (system prompt, tools) that logs leave out.
    pub prefix_tokens: u64,
    /// When the request is made.
    pub at: DateTime<Utc>,
}

/// A compaction policy under replay.
pub trait Strategy {
    /// For each message of `request.messages`, whether it is sent cleared.
    fn cleared(&mut self, request: &RequestView<'_>) -> Result<Vec<bool>, Error>;
}

/// Builds the strategy `kind` with `settings`; the ctxmem ones use `ttl` as their
/// idle threshold and `budget` (cache ratios of the price profile) for the budget.
pub fn build_strategy(
    kind: StrategyKind,
    settings: &StrategySettings,
    ttl: chrono::Duration,
    budget: TokenBudget,
) -> Result<Box<dyn Strategy>, Error> {
    let micro = MicroCompactionConfig {
        idle_threshold: ttl,
        ..settings.micro.clone()
    };
    Ok(match kind {
        StrategyKind::None => Box::new(Raw),
        StrategyKind::Ctxmem => Box::new(MemoryStrategy::new(micro)?),
        StrategyKind::CtxmemBudget => Box::new(MemoryStrategy::new(MicroCompactionConfig {
            budget: Some(budget),
            ..micro
        })?),
        StrategyKind::KeepLastN => Box::new(KeepLastN(MicrocompactMiddleware::new(
            settings.keep_last_n,
            settings.micro.placeholder.clone(),
        ))),
        StrategyKind::TokenTrigger => Box::new(Triggered {
            trigger: settings.token_trigger,
            middleware: MicrocompactMiddleware::new(
                settings.token_trigger.keep_tool_uses,
                settings.micro.placeholder.clone(),
            ),
        }),
    })
}

/// `none`.
struct Raw;

impl Strategy for Raw {
    fn cleared(&mut self, request: &RequestView<'_>) -> Result<Vec<bool>, Error> {
        Ok(vec![false; request.messages.len()])
    }
}

/// For each recorded message, whether `sent` has it cleared (and it was not a
/// placeholder already).
fn cleared_flags(sent: &[Message], recorded: &[Message], placeholder: &str) -> Vec<bool> {
    sent.iter()
        .zip(recorded)
        .map(|(sent, recorded)| {
            micro::is_placeholder(sent, placeholder)
                && !micro::is_placeholder(recorded, placeholder)
        })
        .collect()
}

/// What the stateless [`MicrocompactMiddleware`] sends for `messages`.
fn middleware_pass(middleware: &MicrocompactMiddleware, messages: &[Message]) -> Vec<bool> {
    let mut sent = messages.to_vec();
    middleware.before_model(&mut sent, &mut Vec::new());
    cleared_flags(&sent, messages, middleware.placeholder())
}

/// `keep-last-n`: the stateless [`MicrocompactMiddleware`] default.
struct KeepLastN(MicrocompactMiddleware);

impl Strategy for KeepLastN {
    fn cleared(&mut self, request: &RequestView<'_>) -> Result<Vec<bool>, Error> {
        Ok(middleware_pass(&self.0, request.messages))
    }
}

/// `token-trigger`: the edit, as the server applies it to each request.
struct Triggered {
    trigger: TokenTrigger,
    /// Clears all tool results but the kept ones.
    middleware: MicrocompactMiddleware,
}

impl Strategy for Triggered {
    fn cleared(&mut self, request: &RequestView<'_>) -> Result<Vec<bool>, Error> {
        let untouched = vec![false; request.messages.len()];
        let input = request.prefix_tokens + request.message_tokens.iter().sum::<u64>();
        if input < self.trigger.trigger_tokens {
            return Ok(untouched);
        }
        let cleared = middleware_pass(&self.middleware, request.messages);
        let saved: u64 = cleared
            .iter()
            .zip(request.content_tokens)
            .filter(|(cleared, _)| **cleared)
            .map(|(_, tokens)| tokens.saturating_sub(request.placeholder_tokens))
            .sum();
        Ok(if saved < self.trigger.clear_at_least {
            untouched
        } else {
            cleared
        })
    }
}

/// `ctxmem` and `ctxmem-budget`: a real [`ContextMemory`] on a replay clock.
struct MemoryStrategy {
    placeholder: String,
    clock: ManualClock,
    memory: ContextMemory,
    /// The start of the context the memory holds, once it holds one.
    start: Option<usize>,
    /// How many messages of that context it holds.
    pushed: usize,
}

impl MemoryStrategy {
    fn new(config: MicroCompactionConfig) -> Result<Self, Error> {
        let clock = ManualClock::new(DateTime::UNIX_EPOCH);
        let placeholder = config.placeholder.clone();
        let memory = ContextMemory::builder()
            .micro_compaction(config)
            .clock(clock.clone())
            .build()?;
        Ok(MemoryStrategy {
            placeholder,
            clock,
            memory,
            start: None,
            pushed: 0,
        })
    }
}

impl Strategy for MemoryStrategy {
    fn cleared(&mut self, request: &RequestView<'_>) -> Result<Vec<bool>, Error> {
        match self.start {
            Some(start) if start == request.start => {}
            Some(_) => {
                // A full compaction: the context restarts at its summary.
                let summary = request.messages[0].clone().with_time(request.times[0]);
                self.memory.apply_full_compaction(vec![summary])?;
                self.pushed = 1;
            }
            None => self.pushed = 0,
        }
        self.start = Some(request.start);
        for (message, at) in request.messages.iter().zip(request.times).skip(self.pushed) {
            self.memory.push(message.clone().with_time(*at))?;
        }
        self.pushed = request.messages.len();
        self.clock.set(request.at);
        let sent = self.memory.messages();
        Ok(cleared_flags(&sent, request.messages, &self.placeholder))
    }
}
