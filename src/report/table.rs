//! The human rendering of a [`Report`]: a table per session, a totals table and
//! the cache-model agreement line.

use std::fmt::Write;

use super::{ByStrategy, Report};

const HEADER: [&str; 9] = [
    "strategy",
    "requests",
    "input tok",
    "cache read",
    "cache write",
    "peak ctx",
    "self breaks",
    "cost USD",
    "saved",
];

/// `1234567` as `1,234,567`.
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn strategy_table(out: &mut String, by_strategy: &ByStrategy) {
    let rows: Vec<[String; 9]> = by_strategy
        .iter()
        .map(|(kind, t)| {
            [
                kind.to_string(),
                thousands(t.requests),
                thousands(t.input_tokens),
                thousands(t.cache_read_tokens),
                thousands(t.cache_write_tokens),
                thousands(t.peak_context_tokens),
                thousands(t.self_caused_breaks),
                format!("{:.4}", t.cost_usd),
                t.savings_percent
                    .map_or_else(|| "-".to_owned(), |p| format!("{p:.1}%")),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..HEADER.len())
        .map(|col| {
            rows.iter()
                .map(|row| row[col].len())
                .chain([HEADER[col].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let header = HEADER.map(str::to_owned);
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = format!("  {:<w$}", row[0], w = widths[0]);
        for (cell, width) in row.iter().zip(&widths).skip(1) {
            let _ = write!(line, "  {cell:>width$}");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

impl Report {
    /// The report as text tables for a terminal.
    pub fn to_table(&self) -> String {
        let mut out = format!(
            "ctxmem report: {} {} prices taken {}, cache TTL {}\n",
            self.provider, self.model, self.prices_taken, self.ttl
        );
        for session in &self.sessions {
            let _ = writeln!(
                out,
                "\n{} ({}, {} messages, {} full compactions{})",
                session.file,
                session.format,
                session.messages,
                session.compactions,
                if session.timed { "" } else { ", no times" }
            );
            strategy_table(&mut out, &session.strategies);
        }
        let _ = writeln!(out, "\ntotal over {} sessions", self.sessions.len());
        strategy_table(&mut out, &self.totals);
        let agreement = &self.cache_model_agreement;
        if agreement.requests == 0 {
            out.push_str("\ncache model agreement: no recorded usage to check against\n");
        } else {
            let _ = writeln!(
                out,
                "\ncache model agreement: {} of {} requests with recorded usage ({:.1}%) get the provider's hit/miss verdict; token-weighted error of the cached fraction {:.3}",
                agreement.matched,
                agreement.requests,
                100.0 * agreement.ratio,
                agreement.token_weighted_error
            );
        }
        for error in &self.errors {
            let _ = writeln!(out, "skipped {error}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
