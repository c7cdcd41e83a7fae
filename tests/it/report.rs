//! `ctxmem report` as a library: the bundled sample sessions, the JSON shape, the
//! table, and (feature `plot`) the SVG.

use std::path::PathBuf;

use ctxmem::*;

pub fn sample_sessions() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/sessions")
}

fn sample_report(options: &ReportOptions) -> Report {
    Report::build(&[sample_sessions()], options, |_, _| {}).unwrap()
}

/// Checks what the issue promises of `ctxmem report --json`.
pub fn assert_report_shape(json: &serde_json::Value, sessions: usize) {
    const FIELDS: [&str; 7] = [
        "requests",
        "input_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "peak_context_tokens",
        "self_caused_breaks",
    ];
    let strategies = [
        "none",
        "ctxmem",
        "keep-last-n",
        "token-trigger",
        "ctxmem-budget",
    ];
    let check = |by_strategy: &serde_json::Value| {
        let keys: Vec<&str> = by_strategy
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), strategies.len(), "{keys:?}");
        for name in strategies {
            for field in FIELDS {
                assert!(
                    by_strategy[name][field].is_number(),
                    "{name}.{field} in {by_strategy}"
                );
            }
        }
    };
    check(&json["totals"]);
    let listed = json["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), sessions);
    for session in listed {
        assert!(session["file"].is_string());
        check(&session["strategies"]);
    }
    let agreement = &json["cache_model_agreement"];
    for field in ["requests", "matched", "ratio"] {
        assert!(agreement[field].is_number(), "{agreement}");
    }
}

#[test]
fn the_sample_sessions_report_has_the_promised_shape() {
    let report = sample_report(&ReportOptions::default());
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let json = serde_json::to_value(&report).unwrap();
    assert_report_shape(&json, 3);
    // Totals are the sums of the sessions.
    let sum: u64 = report
        .sessions
        .iter()
        .map(|s| s.strategies[&StrategyKind::None].requests)
        .sum();
    assert_eq!(report.totals[&StrategyKind::None].requests, sum);
}

#[test]
fn on_the_sample_sessions_ctxmem_saves_without_breaking_the_cache() {
    for ttl in [Ttl::FiveMinutes, Ttl::OneHour] {
        let options = ReportOptions {
            replay: ReplayOptions {
                ttl,
                ..ReplayOptions::default()
            },
            ..ReportOptions::default()
        };
        let totals = sample_report(&options).totals;
        let (none, ctxmem) = (totals[&StrategyKind::None], totals[&StrategyKind::Ctxmem]);
        assert_eq!(ctxmem.self_caused_breaks, 0);
        assert!(
            ctxmem.cost_usd < none.cost_usd,
            "{ttl}: {ctxmem:?} vs {none:?}"
        );
        assert!(ctxmem.peak_context_tokens < none.peak_context_tokens);
        assert!(totals[&StrategyKind::KeepLastN].self_caused_breaks > 0);
        assert!(ctxmem.savings_percent.unwrap() > 0.0);
    }
}

#[test]
fn a_report_on_chosen_strategies_leaves_savings_out_without_none() {
    let options = ReportOptions {
        strategies: vec![StrategyKind::Ctxmem, StrategyKind::KeepLastN],
        ..ReportOptions::default()
    };
    let report = sample_report(&options);
    assert_eq!(report.totals.len(), 2);
    assert!(report.totals[&StrategyKind::Ctxmem].savings_usd.is_none());
}

#[test]
fn the_table_lists_every_session_strategy_and_the_agreement() {
    let report = sample_report(&ReportOptions::default());
    let table = report.to_table();
    for session in &report.sessions {
        assert!(table.contains(&session.file));
    }
    for kind in StrategyKind::ALL {
        assert_eq!(
            table.matches(&format!("\n  {kind} ")).count(),
            4,
            "{kind} in\n{table}"
        );
    }
    assert!(table.contains("cache model agreement"));
}

#[test]
fn a_missing_path_is_an_error_and_a_bad_file_is_listed() {
    let missing = Report::build(
        &[PathBuf::from("/no/such/folder")],
        &ReportOptions::default(),
        |_, _| {},
    );
    assert!(matches!(missing, Err(Error::Io { .. })));
    let folder = tempfile::tempdir().unwrap();
    let bad = folder.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"role\": \"user\"}\nnot json\n").unwrap();
    let report = Report::build(
        &[folder.path().to_owned()],
        &ReportOptions::default(),
        |_, _| {},
    )
    .unwrap();
    assert_eq!(report.errors.len(), 1);
    assert!(
        report.errors[0].error.contains("line 2"),
        "{}",
        report.errors[0].error
    );
}

/// Whether `svg` is well-formed XML as far as tags go: every element closed in order.
#[cfg(feature = "plot")]
pub fn assert_well_formed_svg(svg: &str) {
    assert!(svg.trim_start().starts_with("<svg"), "not an SVG");
    let mut open = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let end = start + rest[start..].find('>').expect("unclosed tag");
        let tag = &rest[start + 1..end];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                open.pop(),
                Some(name.trim().to_owned()),
                "mismatched </{name}>"
            );
        } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
            open.push(tag.split_whitespace().next().unwrap_or_default().to_owned());
        }
        rest = &rest[end + 1..];
    }
    assert!(open.is_empty(), "unclosed elements {open:?}");
}

#[cfg(feature = "plot")]
#[test]
fn the_plot_is_a_well_formed_svg_with_every_strategy() {
    let report = sample_report(&ReportOptions::default());
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("plot.svg");
    ctxmem::report::write_svg(&report, &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert_well_formed_svg(&svg);
    for kind in StrategyKind::ALL {
        assert!(
            svg.contains(kind.as_str()),
            "{kind} missing from the legend"
        );
    }
}
