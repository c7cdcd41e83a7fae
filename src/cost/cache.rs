//! The prompt-cache model: which prefix of a request is read from the cache, which
//! part is written to it, and when a cached prefix expires.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use chrono::{DateTime, Duration, Utc};

/// A request's input as the cache sees it: one key and one token count per message.
///
/// Key `i` identifies the whole prefix `0..=i` (a hash chain), so two prompts share a
/// cached prefix exactly as far as their messages are equal, compared message by message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prompt {
    keys: Vec<u64>,
    /// Cumulative tokens: `cumulative[i]` is the size of the prefix `0..=i`.
    cumulative: Vec<u64>,
}

impl Prompt {
    /// A prompt from each message's identity (equal identities mean equal content)
    /// and token count.
    ///
    /// ```
    /// use ctxmem::cost::Prompt;
    /// let a = Prompt::new([(1, 100), (2, 50)]);
    /// let b = Prompt::new([(1, 100), (3, 50)]);
    /// assert_eq!(a.common_len(&b), 1);
    /// assert_eq!(a.tokens(), 150);
    /// ```
    pub fn new(messages: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let mut prompt = Prompt::default();
        let (mut key, mut total) = (0u64, 0u64);
        for (identity, tokens) in messages {
            let mut hasher = DefaultHasher::new();
            (key, identity).hash(&mut hasher);
            key = hasher.finish();
            total += tokens;
            prompt.keys.push(key);
            prompt.cumulative.push(total);
        }
        prompt
    }

    /// How many messages.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the prompt has no message.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// All its tokens.
    pub fn tokens(&self) -> u64 {
        self.prefix_tokens(self.len())
    }

    /// Tokens of its first `len` messages.
    pub fn prefix_tokens(&self, len: usize) -> u64 {
        len.checked_sub(1).map_or(0, |last| self.cumulative[last])
    }

    /// How many leading messages it shares with `other`.
    pub fn common_len(&self, other: &Prompt) -> usize {
        self.keys
            .iter()
            .zip(&other.keys)
            .take_while(|(a, b)| a == b)
            .count()
    }
}

/// What one request did with the cache. The three parts add up to the input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheOutcome {
    /// Messages of the prefix read from the cache.
    pub read_messages: usize,
    /// Input tokens read from the cache.
    pub read_tokens: u64,
    /// Input tokens written to the cache.
    pub write_tokens: u64,
    /// Input tokens neither read nor written (a prompt below the minimum length).
    pub uncached_tokens: u64,
}

/// Cached prefixes with their expiry times.
///
/// A request reads the longest live cached prefix of its input and writes the rest;
/// both refresh the whole input's lifetime to `now + ttl`. A prefix shorter than
/// `min_tokens` is never cached.
///
/// ```
/// use chrono::{Duration, TimeZone, Utc};
/// use ctxmem::cost::{PromptCache, Prompt};
/// let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap();
/// let mut cache = PromptCache::new(Duration::minutes(5), 1024);
/// let first = Prompt::new([(1, 2000)]);
/// let second = Prompt::new([(1, 2000), (2, 300)]);
/// assert_eq!(cache.request(&first, t0).write_tokens, 2000);
/// let outcome = cache.request(&second, t0 + Duration::minutes(4));
/// assert_eq!((outcome.read_tokens, outcome.write_tokens), (2000, 300));
/// ```
#[derive(Clone, Debug)]
pub struct PromptCache {
    ttl: Duration,
    min_tokens: u64,
    expiry: HashMap<u64, DateTime<Utc>>,
}

/// Past this many entries, expired ones are dropped.
const PRUNE_AT: usize = 100_000;

impl PromptCache {
    /// An empty cache whose entries live `ttl` and need at least `min_tokens` tokens.
    pub fn new(ttl: Duration, min_tokens: u64) -> Self {
        PromptCache {
            ttl,
            min_tokens,
            expiry: HashMap::new(),
        }
    }

    /// The longest prefix of `prompt` (in messages) that the cache could serve at
    /// `now`: live, and at least the minimum length. Changes nothing.
    pub fn live_len(&self, prompt: &Prompt, now: DateTime<Utc>) -> usize {
        let live = prompt
            .keys
            .iter()
            .take_while(|key| self.expiry.get(key).is_some_and(|&until| now < until))
            .count();
        if prompt.prefix_tokens(live) < self.min_tokens {
            0
        } else {
            live
        }
    }

    /// Sends `prompt` at `now`: reads the live prefix, writes the rest (when the
    /// prompt is long enough to cache) and refreshes its lifetime.
    pub fn request(&mut self, prompt: &Prompt, now: DateTime<Utc>) -> CacheOutcome {
        let read_messages = self.live_len(prompt, now);
        let total = prompt.tokens();
        let read_tokens = prompt.prefix_tokens(read_messages);
        if total < self.min_tokens {
            return CacheOutcome {
                uncached_tokens: total,
                ..CacheOutcome::default()
            };
        }
        if self.expiry.len() > PRUNE_AT {
            self.expiry.retain(|_, until| now < *until);
        }
        let until = now + self.ttl;
        for key in &prompt.keys {
            let entry = self.expiry.entry(*key).or_insert(until);
            *entry = (*entry).max(until);
        }
        CacheOutcome {
            read_messages,
            read_tokens,
            write_tokens: total - read_tokens,
            uncached_tokens: 0,
        }
    }
}
