//! `ctxmem report`, run for real: its `--json` output, options, plot and errors.

use crate::cli::{ctxmem, json_of};
use crate::report::{assert_report_shape, assert_well_formed_svg, sample_sessions};

#[test]
fn report_without_paths_covers_the_sample_sessions() {
    let json = json_of(&["report", "--json"]);
    assert_report_shape(&json, 3);
    assert_eq!(json["provider"], "anthropic");
    assert_eq!(json["ttl"], "5m");
    assert_eq!(json["totals"]["ctxmem"]["self_caused_breaks"], 0);
    let none = json["totals"]["none"]["cost_usd"].as_f64().unwrap();
    let ctxmem = json["totals"]["ctxmem"]["cost_usd"].as_f64().unwrap();
    assert!(ctxmem < none, "{ctxmem} vs {none}");
}

#[test]
fn report_takes_provider_ttl_and_strategies() {
    let folder = sample_sessions().display().to_string();
    let json = json_of(&[
        "report",
        &folder,
        "--provider",
        "openai",
        "--ttl",
        "1h",
        "--strategies",
        "none,ctxmem",
        "--json",
    ]);
    assert_eq!(json["provider"], "openai");
    assert_eq!(json["ttl"], "1h");
    let names: Vec<&String> = json["totals"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["ctxmem", "none"]); // serde_json sorts object keys
                                           // A 1-hour cache outlives more gaps: ctxmem clears less than with 5 minutes.
    let five = json_of(&[
        "report",
        &folder,
        "--provider",
        "openai",
        "--strategies",
        "none,ctxmem",
        "--json",
    ]);
    let input =
        |json: &serde_json::Value| json["totals"]["ctxmem"]["input_tokens"].as_u64().unwrap();
    assert!(input(&json) > input(&five));
}

#[test]
fn report_plot_is_a_well_formed_svg_and_the_table_has_totals() {
    let folder = tempfile::tempdir().unwrap();
    let plot = folder.path().join("report.svg");
    let output = ctxmem(&["report", "--plot", plot.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.contains("total over 3 sessions"), "{table}");
    assert!(table.contains("cache model agreement"));
    assert_well_formed_svg(&std::fs::read_to_string(&plot).unwrap());
}

#[test]
fn report_errors_are_one_line_with_a_failing_exit_code() {
    for args in [
        &["report", "--provider", "anthropic", "--ttl", "24h"][..],
        &["report", "/no/such/folder"],
    ] {
        let output = ctxmem(args);
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("ctxmem: error: "), "{stderr}");
    }
}

#[test]
fn a_file_that_cannot_be_reported_on_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.json");
    std::fs::write(&file, "{}").unwrap();
    let file = file.to_str().unwrap();
    let output = ctxmem(&["report", file]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches(file).count(), 1, "{stderr}");
    assert!(stderr.contains("cannot tell the log format"), "{stderr}");
}
