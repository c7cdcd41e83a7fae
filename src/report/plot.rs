//! The report's SVG plot: context tokens per request over time, and the cumulative
//! cost, one line per strategy. Text is plain SVG `<text>`: no font files needed.

use std::path::Path;

use plotters::prelude::*;

use super::Report;
use crate::cost::StrategyKind;
use crate::error::Error;

/// One strategy's series: (hours, context tokens) and (hours, cumulative USD).
struct Series {
    kind: StrategyKind,
    context: Vec<(f64, f64)>,
    cost: Vec<(f64, f64)>,
}

/// The series of every strategy, sessions laid end to end on one time axis (hours
/// since each session's first request; a session without times at a minute a request).
fn series(report: &Report) -> Vec<Series> {
    let mut all: Vec<Series> = report
        .totals
        .keys()
        .map(|&kind| Series {
            kind,
            context: Vec::new(),
            cost: Vec::new(),
        })
        .collect();
    let mut offset = 0.0;
    for session in &report.sessions {
        let mut span: f64 = 0.0;
        for series in &mut all {
            let Some(requests) = session.timelines.get(&series.kind) else {
                continue;
            };
            let first = requests.first().map(|r| r.at);
            let mut spent = series.cost.last().map_or(0.0, |&(_, usd)| usd);
            for (number, request) in requests.iter().enumerate() {
                let hours = match (session.timed, first) {
                    (true, Some(first)) => (request.at - first).num_seconds() as f64 / 3600.0,
                    _ => number as f64 / 60.0,
                };
                span = span.max(hours);
                spent += request.cost_usd;
                series
                    .context
                    .push((offset + hours, request.input_tokens as f64));
                series.cost.push((offset + hours, spent));
            }
        }
        offset += span;
    }
    all
}

/// The points of a step line through `points`: each value holds until the next.
fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(2 * points.len());
    for (number, &(x, y)) in points.iter().enumerate() {
        if number > 0 {
            out.push((x, points[number - 1].1));
        }
        out.push((x, y));
    }
    out
}

/// `123456.0` as `123k`, small values with two decimals.
fn short_number(value: &f64) -> String {
    if value.abs() >= 1000.0 {
        format!("{:.0}k", value / 1000.0)
    } else {
        format!("{value:.2}")
    }
}

fn draw_error(path: &Path, error: impl std::fmt::Display) -> Error {
    Error::io(path, std::io::Error::other(error.to_string()))
}

/// Writes the plot of `report` to `path` as SVG.
pub fn write_svg(report: &Report, path: &Path) -> Result<(), Error> {
    let all = series(report);
    let max_x = all
        .iter()
        .flat_map(|s| s.context.iter().map(|p| p.0))
        .fold(0.0_f64, f64::max)
        .max(1.0 / 60.0);
    let max_context = all
        .iter()
        .flat_map(|s| s.context.iter().map(|p| p.1))
        .fold(1.0_f64, f64::max);
    let max_cost = all
        .iter()
        .flat_map(|s| s.cost.iter().map(|p| p.1))
        .fold(0.01_f64, f64::max);
    let root = SVGBackend::new(path, (1000, 800)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_error(path, e))?;
    let (upper, lower) = root.split_vertically(400);
    let panels = [
        (upper, "context tokens per request", max_context, true),
        (lower, "cumulative cost (USD)", max_cost, false),
    ];
    for (area, title, max_y, context) in panels {
        let mut chart = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(32)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..max_x * 1.02, 0.0..max_y * 1.05)
            .map_err(|e| draw_error(path, e))?;
        chart
            .configure_mesh()
            .x_desc("hours (sessions end to end)")
            .y_label_formatter(&short_number)
            .draw()
            .map_err(|e| draw_error(path, e))?;
        for (number, series) in all.iter().enumerate() {
            let color = Palette99::pick(number).to_rgba();
            let points = steps(if context {
                &series.context
            } else {
                &series.cost
            });
            // Earlier series are drawn wider, so that equal lines stay visible.
            let width = (all.len() - number) as u32;
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(width)))
                .map_err(|e| draw_error(path, e))?
                .label(series.kind.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| draw_error(path, e))?;
    }
    root.present().map_err(|e| draw_error(path, e))
}
