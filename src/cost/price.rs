//! Provider price profiles and cache lifetimes.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use chrono::Duration;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// How long a cached prompt prefix lives after it was last written or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ttl {
    /// Five minutes: Anthropic's default, and about OpenAI's in-memory retention.
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour: Anthropic's extended TTL.
    #[serde(rename = "1h")]
    OneHour,
    /// Twenty-four hours: OpenAI's extended retention.
    #[serde(rename = "24h")]
    OneDay,
}

impl Ttl {
    /// The lifetime as a duration.
    pub fn duration(self) -> Duration {
        match self {
            Ttl::FiveMinutes => Duration::minutes(5),
            Ttl::OneHour => Duration::hours(1),
            Ttl::OneDay => Duration::hours(24),
        }
    }

    /// `"5m"`, `"1h"` or `"24h"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Ttl::FiveMinutes => "5m",
            Ttl::OneHour => "1h",
            Ttl::OneDay => "24h",
        }
    }
}

impl fmt::Display for Ttl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Ttl {
    type Err = Error;

    /// Parses `5m`, `1h` or `24h`.
    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "5m" => Ok(Ttl::FiveMinutes),
            "1h" => Ok(Ttl::OneHour),
            "24h" => Ok(Ttl::OneDay),
            other => Err(Error::Config(format!(
                "unknown cache TTL {other:?} (expected 5m, 1h or 24h)"
            ))),
        }
    }
}

/// One provider's prices (US dollars per million tokens) and cache rules.
///
/// The built-in profiles carry the date their numbers were taken from the
/// provider's price page; [`PriceProfile::from_json_file`] loads a newer one.
///
/// ```
/// use ctxmem::*;
/// let anthropic = PriceProfile::anthropic();
/// assert!((anthropic.cache_read - anthropic.input * 0.1).abs() < 1e-9);
/// assert_eq!(anthropic.write_price(Ttl::OneHour), anthropic.input * 2.0);
/// assert_eq!(PriceProfile::openai().write_price(Ttl::FiveMinutes), PriceProfile::openai().input);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriceProfile {
    /// The provider, in lowercase: `anthropic`, `openai`, `gemini` or your own.
    pub provider: String,
    /// The model the prices are for.
    pub model: String,
    /// When the prices were taken (`YYYY-MM-DD`).
    pub taken: String,
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input read from the cache.
    pub cache_read: f64,
    /// Input written to the cache with the 5-minute TTL (or the provider's only one).
    pub cache_write_5m: f64,
    /// Input written to the cache with a TTL of an hour or more.
    pub cache_write_1h: f64,
    /// Prefixes shorter than this many tokens are not cached.
    pub min_cacheable_tokens: u64,
    /// The TTLs the provider offers, the default first.
    pub ttls: Vec<Ttl>,
}

impl PriceProfile {
    /// Anthropic Claude Sonnet 4.5: reads 0.1x input, writes 1.25x (5m) or 2x (1h).
    pub fn anthropic() -> Self {
        PriceProfile {
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            taken: "2025-11-01".into(),
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write_5m: 3.75,
            cache_write_1h: 6.0,
            min_cacheable_tokens: 1024,
            ttls: vec![Ttl::FiveMinutes, Ttl::OneHour],
        }
    }

    /// OpenAI GPT-5: automatic caching, reads at 0.1x input, no write premium;
    /// in-memory retention (minutes, at most an hour) or extended 24 h.
    pub fn openai() -> Self {
        PriceProfile {
            provider: "openai".into(),
            model: "gpt-5".into(),
            taken: "2025-11-01".into(),
            input: 1.25,
            output: 10.0,
            cache_read: 0.125,
            cache_write_5m: 1.25,
            cache_write_1h: 1.25,
            min_cacheable_tokens: 1024,
            ttls: vec![Ttl::FiveMinutes, Ttl::OneHour, Ttl::OneDay],
        }
    }

    /// Google Gemini 2.5 Pro (prompts up to 200k tokens): implicit caching at a
    /// discount, no write premium, lifetime undocumented (modelled as 5 minutes).
    pub fn gemini() -> Self {
        PriceProfile {
            provider: "gemini".into(),
            model: "gemini-2.5-pro".into(),
            taken: "2025-11-01".into(),
            input: 1.25,
            output: 10.0,
            cache_read: 0.31,
            cache_write_5m: 1.25,
            cache_write_1h: 1.25,
            min_cacheable_tokens: 2048,
            ttls: vec![Ttl::FiveMinutes],
        }
    }

    /// The built-in profile of `provider` (`anthropic`, `openai` or `gemini`).
    pub fn builtin(provider: &str) -> Result<Self, Error> {
        match provider {
            "anthropic" => Ok(Self::anthropic()),
            "openai" => Ok(Self::openai()),
            "gemini" => Ok(Self::gemini()),
            other => Err(Error::Config(format!(
                "unknown provider {other:?} (expected anthropic, openai or gemini)"
            ))),
        }
    }

    /// Loads a profile from a JSON file with this struct's fields. Prices must be
    /// finite and not negative, the input price above zero (cache ratios divide by
    /// it), and at least one TTL offered.
    pub fn from_json_file(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::io(path, source))?;
        let profile: PriceProfile =
            serde_json::from_str(&text).map_err(|error| Error::Corrupt {
                path: path.to_owned(),
                line: error.line(),
                message: error.to_string(),
            })?;
        profile.check().map_err(|message| Error::Format {
            path: path.to_owned(),
            message,
        })?;
        Ok(profile)
    }

    /// Why the profile cannot price requests, if it cannot.
    fn check(&self) -> Result<(), String> {
        let prices = [
            ("input", self.input),
            ("output", self.output),
            ("cache_read", self.cache_read),
            ("cache_write_5m", self.cache_write_5m),
            ("cache_write_1h", self.cache_write_1h),
        ];
        if let Some((name, price)) = prices.iter().find(|(_, p)| !p.is_finite() || *p < 0.0) {
            return Err(format!("price {name} = {price} is not a price"));
        }
        if self.input == 0.0 {
            return Err("the input price must be above zero".into());
        }
        if self.ttls.is_empty() {
            return Err("no cache TTL offered (\"ttls\" is empty)".into());
        }
        Ok(())
    }

    /// The price of writing a token to the cache with `ttl`.
    pub fn write_price(&self, ttl: Ttl) -> f64 {
        match ttl {
            Ttl::FiveMinutes => self.cache_write_5m,
            Ttl::OneHour | Ttl::OneDay => self.cache_write_1h,
        }
    }

    /// The [`TokenBudget`](crate::TokenBudget) cache ratios of this profile with `ttl`.
    pub fn budget(&self, ttl: Ttl, max_tokens: u64) -> crate::TokenBudget {
        crate::TokenBudget {
            cache_read_ratio: self.cache_read / self.input,
            cache_write_ratio: self.write_price(ttl) / self.input,
            ..crate::TokenBudget::new(max_tokens)
        }
    }
}
