//! The cache and cost model: the cache on hand-made sequences, the strategies'
//! cache breaks, the budget trigger, and the validation against recorded usage.

use chrono::{DateTime, Duration};
use ctxmem::cost::{
    replay, unlogged_prefix_tokens, validate, PriceProfile, Prompt, PromptCache, ReplayOptions,
    Session, StrategyKind, StrategySettings, TokenTrigger, Ttl,
};
use ctxmem::*;
use proptest::prelude::*;

use crate::common::*;

fn at(minutes: i64) -> DateTime<chrono::Utc> {
    t0() + Duration::minutes(minutes)
}

fn cache_5m() -> PromptCache {
    PromptCache::new(Duration::minutes(5), 1024)
}

#[test]
fn a_request_within_the_ttl_reads_the_cached_prefix() {
    let mut cache = cache_5m();
    let first = Prompt::new([(1, 2000), (2, 500)]);
    let outcome = cache.request(&first, at(0));
    assert_eq!((outcome.read_tokens, outcome.write_tokens), (0, 2500));
    let second = Prompt::new([(1, 2000), (2, 500), (3, 100)]);
    let outcome = cache.request(&second, at(4));
    assert_eq!((outcome.read_tokens, outcome.write_tokens), (2500, 100));
    assert_eq!(outcome.read_messages, 2);
}

#[test]
fn a_request_after_the_ttl_misses() {
    let mut cache = cache_5m();
    let prompt = Prompt::new([(1, 2000), (2, 500)]);
    cache.request(&prompt, at(0));
    let outcome = cache.request(&prompt, at(5));
    assert_eq!((outcome.read_tokens, outcome.write_tokens), (0, 2500));
}

#[test]
fn reading_refreshes_the_ttl() {
    let mut cache = cache_5m();
    let prompt = Prompt::new([(1, 2000)]);
    cache.request(&prompt, at(0));
    assert_eq!(cache.request(&prompt, at(4)).read_tokens, 2000);
    // 8 minutes after the write, but 4 after the read.
    assert_eq!(cache.request(&prompt, at(8)).read_tokens, 2000);
    assert_eq!(cache.request(&prompt, at(14)).read_tokens, 0);
}

#[test]
fn prefixes_below_the_minimum_length_are_not_cached() {
    let mut cache = cache_5m();
    let short = Prompt::new([(1, 600)]);
    let outcome = cache.request(&short, at(0));
    assert_eq!(
        (
            outcome.read_tokens,
            outcome.write_tokens,
            outcome.uncached_tokens
        ),
        (0, 0, 600)
    );
    let longer = Prompt::new([(1, 600), (2, 600)]);
    let outcome = cache.request(&longer, at(1));
    assert_eq!((outcome.read_tokens, outcome.write_tokens), (0, 1200));
    // A live but too short common prefix is not read.
    let other = Prompt::new([(1, 600), (3, 600)]);
    assert_eq!(cache.live_len(&other, at(2)), 0);
    assert_eq!(cache.request(&other, at(2)).read_tokens, 0);
}

#[test]
fn a_changed_message_invalidates_only_the_suffix_after_it() {
    let mut cache = cache_5m();
    cache.request(
        &Prompt::new([(1, 1000), (2, 1000), (3, 1000), (4, 1000)]),
        at(0),
    );
    let changed = Prompt::new([(1, 1000), (2, 1000), (30, 10), (4, 1000)]);
    let outcome = cache.request(&changed, at(1));
    assert_eq!(outcome.read_messages, 2);
    assert_eq!((outcome.read_tokens, outcome.write_tokens), (2000, 1010));
}

/// A tool-heavy session: `steps` exchanges of a call and a `result_tokens` result,
/// `gaps[i]` minutes before exchange `i` (0 when missing), 20 seconds apart otherwise.
fn session(steps: usize, result_tokens: usize, gaps: &[i64]) -> Session {
    let mut now = t0();
    let mut messages = vec![
        Message::system("You are a coding agent.").with_time(now),
        Message::user("Fix the failing test.").with_time(now),
    ];
    for step in 0..steps {
        now += Duration::minutes(gaps.get(step).copied().unwrap_or(0)) + Duration::seconds(20);
        let id = format!("call_{step}");
        let call = ToolCall::new(id.clone(), "read_file", serde_json::json!({ "step": step }));
        messages.push(Message::assistant_with_tool_calls("Reading.", vec![call]).with_time(now));
        messages.push(Message::tool_result(id, body(result_tokens)).with_time(now));
    }
    now += Duration::seconds(20);
    messages.push(Message::assistant("Done.").with_time(now));
    Session {
        file: "test".into(),
        format: "ctxmem".into(),
        messages,
        ..Session::default()
    }
}

fn breaks(session: &Session, kind: StrategyKind, options: &ReplayOptions) -> usize {
    replay(session, kind, options)
        .unwrap()
        .iter()
        .filter(|r| r.self_caused_break)
        .count()
}

#[test]
fn keep_last_n_breaks_the_cache_on_a_tool_heavy_session_and_ctxmem_does_not() {
    let session = session(30, 400, &[]);
    let options = ReplayOptions::default();
    let keep_last = breaks(&session, StrategyKind::KeepLastN, &options);
    // Every request after the sixth result moves its boundary by one.
    assert!(keep_last >= 20, "keep-last-n caused {keep_last} breaks");
    assert_eq!(breaks(&session, StrategyKind::Ctxmem, &options), 0);
    assert_eq!(breaks(&session, StrategyKind::None, &options), 0);
}

#[test]
fn ctxmem_clears_after_a_gap_longer_than_the_ttl() {
    // Twenty quick exchanges, then ten minutes idle, then ten more.
    let mut gaps = vec![0; 20];
    gaps.push(10);
    let session = session(30, 400, &gaps);
    let options = ReplayOptions::default();
    let none = replay(&session, StrategyKind::None, &options).unwrap();
    let ctxmem = replay(&session, StrategyKind::Ctxmem, &options).unwrap();
    let after_gap = 20; // request i is exchange i's call
    assert_eq!(
        ctxmem[after_gap - 1].input_tokens,
        none[after_gap - 1].input_tokens
    );
    assert!(ctxmem[after_gap].input_tokens < none[after_gap].input_tokens / 2);
    assert_eq!(
        ctxmem[after_gap].cache_read_tokens, 0,
        "the cache had expired"
    );
    // With the 1-hour TTL the cache is still warm after ten minutes: nothing changes.
    let hour = ReplayOptions {
        ttl: Ttl::OneHour,
        ..ReplayOptions::default()
    };
    let ctxmem = replay(&session, StrategyKind::Ctxmem, &hour).unwrap();
    assert_eq!(ctxmem[after_gap].input_tokens, none[after_gap].input_tokens);
}

#[test]
fn token_trigger_clears_only_above_its_threshold_and_keeps_the_last_uses() {
    let session = session(10, 1000, &[]);
    let options = |trigger_tokens, clear_at_least| ReplayOptions {
        settings: StrategySettings {
            token_trigger: TokenTrigger {
                trigger_tokens,
                keep_tool_uses: 3,
                clear_at_least,
            },
            ..StrategySettings::default()
        },
        ..ReplayOptions::default()
    };
    let none = replay(&session, StrategyKind::None, &ReplayOptions::default()).unwrap();
    let high = replay(&session, StrategyKind::TokenTrigger, &options(1_000_000, 0)).unwrap();
    assert_eq!(high, none);
    let low = replay(&session, StrategyKind::TokenTrigger, &options(5_000, 0)).unwrap();
    let last = low.last().unwrap();
    // Ten results of ~1000 tokens, three kept: about 3000 tokens of results remain.
    assert!(last.input_tokens < 4_000, "{}", last.input_tokens);
    assert!(breaks(&session, StrategyKind::TokenTrigger, &options(5_000, 0)) > 0);
    let picky = replay(
        &session,
        StrategyKind::TokenTrigger,
        &options(5_000, 100_000),
    )
    .unwrap();
    assert_eq!(picky, none);
}

#[test]
fn replay_prices_reads_writes_and_output() {
    let session = session(3, 400, &[]);
    let options = ReplayOptions::default();
    let profile = &options.profile;
    for request in replay(&session, StrategyKind::None, &options).unwrap() {
        let uncached =
            request.input_tokens - request.cache_read_tokens - request.cache_write_tokens;
        let expected = (uncached as f64 * profile.input
            + request.cache_read_tokens as f64 * profile.cache_read
            + request.cache_write_tokens as f64 * profile.cache_write_5m
            + request.output_tokens as f64 * profile.output)
            / 1e6;
        assert!((request.cost_usd - expected).abs() < 1e-12);
    }
}

#[test]
fn a_full_compaction_restarts_the_context_at_its_summary() {
    let mut session = session(6, 400, &[]);
    let summary_at = 8;
    session.messages[summary_at] = Message::user("Summary of the work so far.")
        .with_time(session.messages[summary_at].at().unwrap());
    session.compactions = vec![summary_at];
    let requests = replay(&session, StrategyKind::Ctxmem, &ReplayOptions::default()).unwrap();
    let after = requests.iter().find(|r| r.index > summary_at).unwrap();
    let estimator = CharEstimator;
    let expected: u64 = session.messages[summary_at..after.index]
        .iter()
        .map(|m| estimator.message_tokens(m))
        .sum();
    assert_eq!(after.input_tokens, expected);
    assert!(!after.self_caused_break);
}

fn with_usage(mut session: Session, mut usage: impl FnMut(u64) -> Usage) -> Session {
    let requests = replay(&session, StrategyKind::None, &ReplayOptions::default()).unwrap();
    for request in requests {
        let message = session.messages[request.index].clone();
        session.messages[request.index] = message.with_usage(usage(request.input_tokens));
    }
    session
}

#[test]
fn validation_matches_usage_that_agrees_with_the_model() {
    // Requests of ~10, ~2000, ~4000, ... tokens: the model misses the first two
    // (too short, then the first write) and reads the rest. So did the provider.
    let session = session(8, 2000, &[]);
    let mut requests = 0;
    let agreeing = with_usage(session.clone(), |input| {
        requests += 1;
        let (read, write) = if requests <= 2 {
            (0, input)
        } else {
            (input - 2010, 2010)
        };
        Usage {
            cache_read_tokens: read,
            cache_write_tokens: write,
            cache_write_1h_tokens: write,
            ..Usage::default()
        }
    });
    let agreement = validate(&agreeing).unwrap().unwrap();
    assert_eq!(agreement.requests, 9);
    assert_eq!(agreement.matched, 9, "{agreement:?}");
    assert!(agreement.token_weighted_error < 0.05, "{agreement:?}");

    let never_cached = with_usage(session.clone(), |input| Usage {
        cache_write_tokens: input,
        cache_write_5m_tokens: input,
        ..Usage::default()
    });
    let agreement = validate(&never_cached).unwrap().unwrap();
    assert_eq!(
        agreement.matched, 2,
        "only the first two are misses in the model"
    );
    assert!(
        validate(&session).unwrap().is_none(),
        "no usage, no verdict"
    );
}

#[test]
fn the_unlogged_prefix_is_the_smallest_gap_to_recorded_input() {
    let session = with_usage(session(4, 400, &[]), |input| Usage {
        input_tokens: input + 18_000,
        ..Usage::default()
    });
    assert_eq!(unlogged_prefix_tokens(&session).unwrap(), 18_000);
}

#[test]
fn a_budget_clears_in_one_batch_while_warm_when_it_pays() {
    let budget = TokenBudget {
        max_tokens: 2_000,
        min_clear_tokens: 500,
        ..TokenBudget::new(2_000)
    };
    let config = MicroCompactionConfig {
        keep_recent: Keep::ToolResults(2),
        budget: Some(budget),
        ..Default::default()
    };
    let (memory, clock, events) = memory_with(config);
    for i in 0..6 {
        push_exchange(&memory, i);
        clock.advance(Duration::seconds(10));
        memory.messages();
    }
    // Six 100-token results and their turns: under 2,000 tokens, nothing cleared.
    assert!(memory.cutoff().is_none());
    for i in 6..30 {
        push_exchange(&memory, i);
        clock.advance(Duration::seconds(10));
        memory.messages();
    }
    let advances: Vec<_> = events
        .lock()
        .iter()
        .filter_map(|e| match e {
            Event::MicroCompacted { cleared, idle, .. } => Some((*cleared, *idle)),
            _ => None,
        })
        .collect();
    assert!(!advances.is_empty(), "the budget never fired");
    assert!(
        advances.len() <= 3,
        "batches, not a move per request: {advances:?}"
    );
    for (cleared, idle) in &advances {
        assert!(*cleared >= 5, "a batch clears at least min_clear_tokens");
        assert!(*idle < Duration::hours(1), "it fired while warm");
    }
}

#[test]
fn a_budget_does_not_fire_when_the_rewrite_costs_more() {
    // One request so far: the saving over one more cannot pay for the rewrite.
    let config = MicroCompactionConfig {
        keep_recent: Keep::ToolResults(1),
        budget: Some(TokenBudget {
            max_tokens: 100,
            min_clear_tokens: 1,
            ..TokenBudget::new(100)
        }),
        ..Default::default()
    };
    let (memory, clock, _) = memory_with(config);
    memory.push(Message::user("go")).unwrap();
    let calls = (0..5)
        .map(|i| ToolCall::new(format!("c{i}"), "read_file", serde_json::json!({})))
        .collect();
    memory
        .push(Message::assistant_with_tool_calls("", calls))
        .unwrap();
    for i in 0..5 {
        memory
            .push(Message::tool_result(format!("c{i}"), body(100)))
            .unwrap();
    }
    clock.advance(Duration::seconds(10));
    assert_eq!(memory.messages(), memory.history());
    assert!(memory.cutoff().is_none());
}

fn random_gaps() -> impl Strategy<Value = Vec<i64>> {
    // Mostly back to back, some minutes apart, some over an hour.
    prop::collection::vec(
        prop_oneof![6 => Just(0i64), 3 => 1i64..50, 1 => 55i64..180],
        5..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// ctxmem only advances once the cache has expired, so it never cuts a live
    /// cached prefix short: zero self-caused breaks, whatever the gaps and TTL.
    #[test]
    fn ctxmem_never_breaks_a_live_cache(
        gaps in random_gaps(),
        result_tokens in 10usize..2_000,
        hour in any::<bool>(),
        compaction in prop::option::of(0usize..20),
        prefix_tokens in prop_oneof![Just(0u64), 1u64..30_000],
    ) {
        let mut session = session(gaps.len(), result_tokens, &gaps);
        session.prefix_tokens = prefix_tokens;
        if let Some(step) = compaction {
            let index = 2 + 2 * step.min(gaps.len() - 1) + 1;
            session.messages[index] = Message::user("Summary.").with_time(session.messages[index].at().unwrap());
            session.compactions = vec![index];
        }
        let ttl = if hour { Ttl::OneHour } else { Ttl::FiveMinutes };
        let options = ReplayOptions { ttl, ..ReplayOptions::default() };
        prop_assert_eq!(breaks(&session, StrategyKind::Ctxmem, &options), 0);
    }
}

#[test]
fn a_price_profile_loads_from_json_and_bad_files_name_their_line() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("prices.json");
    let mut profile = PriceProfile::anthropic();
    profile.model = "claude-opus-4-5".into();
    profile.input = 5.0;
    std::fs::write(&path, serde_json::to_string_pretty(&profile).unwrap()).unwrap();
    assert_eq!(PriceProfile::from_json_file(&path).unwrap(), profile);
    std::fs::write(&path, "{\n  \"provider\": 3\n}").unwrap();
    let error = PriceProfile::from_json_file(&path).unwrap_err();
    assert!(matches!(error, Error::Corrupt { line: 2, .. }), "{error}");
    assert!(PriceProfile::builtin("mistral").is_err());
}

#[test]
fn a_price_profile_that_cannot_price_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("prices.json");
    let broken: [fn(&mut PriceProfile); 4] = [
        |p| p.input = 0.0,
        |p| p.output = -1.0,
        |p| p.cache_write_1h = f64::NAN,
        |p| p.ttls.clear(),
    ];
    for (case, breakage) in broken.iter().enumerate() {
        let mut profile = PriceProfile::anthropic();
        breakage(&mut profile);
        // NaN is written as null, which does not parse as a price either.
        std::fs::write(&path, serde_json::to_string(&profile).unwrap()).unwrap();
        let error = PriceProfile::from_json_file(&path).unwrap_err();
        assert!(
            error.to_string().starts_with(&path.display().to_string()),
            "case {case}: {error}"
        );
    }
}

#[test]
fn ttls_and_strategies_parse_from_their_report_names() {
    for ttl in [Ttl::FiveMinutes, Ttl::OneHour, Ttl::OneDay] {
        assert_eq!(ttl.as_str().parse::<Ttl>().unwrap(), ttl);
    }
    assert!("7m".parse::<Ttl>().is_err());
    for kind in StrategyKind::ALL {
        assert_eq!(kind.as_str().parse::<StrategyKind>().unwrap(), kind);
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
    }
    assert!("keep-last".parse::<StrategyKind>().is_err());
}
