//! The prompt-cache and cost model behind `ctxmem report`.
//!
//! - [`price`]: provider price profiles and cache TTLs;
//! - [`cache`]: the prompt-cache model (live prefixes, TTL refresh on read, minimum length);
//! - [`strategy`]: the compaction strategies compared;
//! - [`replay`](mod@replay): a session replayed request by request through one strategy;
//! - [`validate`](mod@validate): the cache model checked against recorded provider usage.

pub mod cache;
pub mod price;
pub mod replay;
pub mod strategy;
pub mod validate;

pub use cache::{CacheOutcome, Prompt, PromptCache};
pub use price::{PriceProfile, Ttl};
pub use replay::{replay, ReplayOptions, RequestCost, Session};
pub use strategy::{
    build_strategy, RequestView, Strategy, StrategyKind, StrategySettings, TokenTrigger,
};
pub use validate::{recorded_cache, unlogged_prefix_tokens, validate, Agreement};
