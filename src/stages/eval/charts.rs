//! The pictures of an eval run (`report.md` shows them): accuracy by
//! rating, the regret histogram, the illegal rate by template, the puzzle
//! rating's fit and the human ladder's; and the bar chart `compare` draws
//! too. The figures they show are [`super::metrics`]'s; the files that hold
//! those figures are [`super::report`]'s.

use anyhow::{Context, Result};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

use super::ladder::Ladder;
use super::metrics::{self, Breakdowns, CellMetrics, PositionRecord};
use super::puzzle_rating::PuzzleRatingReport;
use crate::core::fileio::write_atomic;
use crate::core::stats::chart_error;

/// Regret histogram bins (upper bounds, cp) and labels.
const REGRET_BINS: [(f64, &str); 8] = [
    (0.0, "0"),
    (50.0, "1-50"),
    (100.0, "51-100"),
    (300.0, "101-300"),
    (1000.0, "301-1000"),
    (99_999.0, ">1000"),
    (metrics::MATE_PENALTY_CP, "mate"),
    (f64::INFINITY, "invalid"),
];

/// What the pictures need to know of the run beside its figures.
pub(super) struct PicturedRun<'a> {
    /// The player, as the ladder's picture names it.
    pub model: &'a str,
    /// The prompt templates asked (the illegal rate by template is drawn
    /// for two or more).
    pub templates: &'a [String],
    pub rating_bin_width: i32,
}

/// Draws the pictures that mean something for this run and returns their
/// (title, file name), in the order the report shows them: accuracy by
/// rating when some puzzle is rated, the regret histogram when regret was
/// computed, the illegal rate by template when the run compared two or
/// more prompt templates (a baseline player has none: its one template,
/// `none`, would make a bar chart of nothing).
pub(super) fn draw_pictures(
    dir: &Path,
    run: &PicturedRun<'_>,
    b: &Breakdowns,
    records: &[PositionRecord],
    human_ladder: Option<&Ladder>,
    output_rating: Option<&PuzzleRatingReport>,
) -> Result<Vec<(&'static str, &'static str)>> {
    let mut drawn = Vec::new();
    let rating_cells = b.by.get("rating_bin").cloned().unwrap_or_default();
    let rating: Vec<(&String, &CellMetrics)> = metrics::ordered_cells("rating_bin", &rating_cells)
        .into_iter()
        .filter(|(cell, _)| cell.as_str() != "unrated")
        .collect();
    if !rating.is_empty() {
        let labels: Vec<String> = rating.iter().map(|(cell, _)| (*cell).clone()).collect();
        let values: Vec<f64> = rating.iter().map(|(_, m)| m.puzzle_accuracy).collect();
        let errors: Vec<f64> = rating.iter().map(|(_, m)| m.puzzle_accuracy_se).collect();
        let (title, file) = ("Puzzle accuracy by rating", "accuracy_by_rating.svg");
        bar_chart(
            &dir.join(file),
            "Puzzle accuracy by rating (± 1 se)",
            &labels,
            &values,
            Some(&errors),
            1.0,
            "puzzle accuracy",
        )?;
        drawn.push((title, file));
    }

    if let Some(shares) = regret_shares(records) {
        let labels: Vec<String> = REGRET_BINS.iter().map(|(_, l)| l.to_string()).collect();
        let (title, file) = ("Regret per position", "regret_distribution.svg");
        bar_chart(
            &dir.join(file),
            "Regret per position (cp; mate: a missed or allowed mate; invalid: illegal or unparseable)",
            &labels,
            &shares,
            None,
            1.0,
            "share of positions",
        )?;
        drawn.push((title, file));
    }

    if run.templates.len() >= 2 {
        let templates = b.by.get("template").cloned().unwrap_or_default();
        let labels: Vec<String> = templates.keys().cloned().collect();
        let values: Vec<f64> = templates.values().map(|m| m.illegal_rate).collect();
        let top = values.iter().cloned().fold(0.0, f64::max).max(0.05) * 1.15;
        let (title, file) = (
            "Illegal-move rate by template",
            "illegal_rate_by_template.svg",
        );
        bar_chart(
            &dir.join(file),
            title,
            &labels,
            &values,
            None,
            top.min(1.0),
            "illegal rate",
        )?;
        drawn.push((title, file));
    }
    if let Some(r) = &output_rating
        && puzzle_rating_chart(&dir.join(RATING_PICTURE), r, run.rating_bin_width)?
    {
        drawn.push(("Puzzle rating", RATING_PICTURE));
    }
    if let Some(l) = human_ladder
        && super::ladder_chart::draw_ladder(&dir.join(LADDER_PICTURE), l, run.model, b)?
    {
        drawn.push(("Human ladder", LADDER_PICTURE));
    }
    remove_undrawn(dir, &drawn)?;
    Ok(drawn)
}

/// Removes the pictures of [`PICTURES`] not in `drawn`: a picture an
/// earlier run into this folder drew, and this one does not, would be read
/// as this run's.
fn remove_undrawn(dir: &Path, drawn: &[(&'static str, &'static str)]) -> Result<()> {
    for file in PICTURES {
        if !drawn.iter().any(|(_, f)| *f == file) {
            let path = dir.join(file);
            if path.exists() {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// The share of the positions with a regret in each of [`REGRET_BINS`];
/// none when no position has one.
fn regret_shares(records: &[PositionRecord]) -> Option<Vec<f64>> {
    let mut counts = [0f64; REGRET_BINS.len()];
    let mut total = 0f64;
    for r in records {
        if let Some(regret) = r.regret_cp {
            let bin = REGRET_BINS
                .iter()
                .position(|(upper, _)| regret <= *upper)
                .unwrap_or(REGRET_BINS.len() - 1);
            counts[bin] += 1.0;
            total += 1.0;
        }
    }
    (total > 0.0).then(|| counts.iter().map(|c| c / total).collect())
}

/// The human ladder's picture (accuracy by rating bin of the nine Maia
/// nets and the player; the human-equivalent rating).
pub(super) const LADDER_PICTURE: &str = "human_ladder.svg";

/// The puzzle rating's picture: the solve rate by rating bin beside the
/// fitted Glicko-2 curve.
const RATING_PICTURE: &str = "puzzle_rating.svg";

/// Every picture a report may hold.
const PICTURES: [&str; 5] = [
    "accuracy_by_rating.svg",
    RATING_PICTURE,
    "regret_distribution.svg",
    "illegal_rate_by_template.svg",
    LADDER_PICTURE,
];

/// A bar chart with optional ± error bars, as an SVG file.
pub(crate) fn bar_chart(
    path: &Path,
    title: &str,
    labels: &[String],
    values: &[f64],
    errors: Option<&[f64]>,
    y_max: f64,
    y_label: &str,
) -> Result<()> {
    const WIDTH: u32 = 900;
    const FONT: f64 = 11.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let n = labels.len().max(1);
        // Labels wider than their bar's slot (24 rating bins'
        // `(2700, 2800]`) would overlap: every `every`-th bar is labelled,
        // the first included, so that each label sits under its own bar.
        let slot = f64::from(WIDTH - 2 * 15 - 60) / n as f64;
        let every = label_step(labels, FONT, slot);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(70)
            .y_label_area_size(60)
            .build_cartesian_2d((0..n).into_segmented(), 0f64..y_max)
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_style(("sans-serif", FONT))
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) if i % every == 0 => {
                    labels.get(*i).cloned().unwrap_or_default()
                }
                _ => String::new(),
            })
            .y_desc(y_label)
            .draw()
            .map_err(chart_error)?;
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), *v),
                    ],
                    BLUE.mix(0.5).filled(),
                )
            }))
            .map_err(chart_error)?;
        if let Some(errors) = errors {
            chart
                .draw_series(values.iter().zip(errors).enumerate().map(|(i, (v, e))| {
                    ErrorBar::new_vertical(
                        SegmentValue::CenterOf(i),
                        (v - e).max(0.0),
                        *v,
                        (v + e).min(y_max),
                        BLACK.filled(),
                        8,
                    )
                }))
                .map_err(chart_error)?;
        }
        root.present().map_err(chart_error)?;
    }
    write_atomic(path, svg.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

/// Per rating bin of `width` with attempts, in rating order: the bin's
/// mean puzzle rating, its solve rate and the rate's standard error.
fn solve_rate_points(report: &PuzzleRatingReport, width: f64) -> Vec<(f64, f64, f64)> {
    let mut bins: BTreeMap<i64, (f64, f64, f64)> = BTreeMap::new();
    for a in &report.attempts {
        let bin = bins.entry((a.rating / width).floor() as i64).or_default();
        bin.0 += 1.0;
        bin.1 += a.score;
        bin.2 += a.rating;
    }
    bins.values()
        .map(|(n, solved, sum)| {
            let rate = solved / n;
            (sum / n, rate, (rate * (1.0 - rate) / n).sqrt())
        })
        .collect()
}

/// The solve rate of the attempts in each rating bin (± 1 se), at the
/// bin's mean puzzle rating, beside the fitted rating's Glicko-2 curve (at
/// the attempts' median puzzle deviation). False when there is nothing to
/// draw.
fn puzzle_rating_chart(path: &Path, report: &PuzzleRatingReport, bin_width: i32) -> Result<bool> {
    let width = f64::from(bin_width.max(1));
    let points = solve_rate_points(report, width);
    if points.is_empty() {
        return Ok(false);
    }
    let mut deviations: Vec<f64> = report.attempts.iter().map(|a| a.deviation).collect();
    deviations.sort_by(f64::total_cmp);
    let deviation = deviations[deviations.len() / 2];
    let lowest = points.first().map_or(0.0, |p| p.0) - width;
    let highest = points.last().map_or(0.0, |p| p.0) + width;
    let rating = report.overall.rating;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "Solve rate by puzzle rating (± 1 se) and the fitted rating {}",
                    report.overall.label()
                ),
                ("sans-serif", 18),
            )
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d(lowest..highest, 0f64..1.0)
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .x_desc("puzzle rating")
            .y_desc("solve rate")
            .x_labels(10)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(chart_error)?;
        let steps = 200;
        chart
            .draw_series(LineSeries::new(
                (0..=steps).map(|i| {
                    let x = lowest + (highest - lowest) * f64::from(i) / f64::from(steps);
                    (
                        x,
                        super::puzzle_rating::glicko_solve_chance(rating, x, deviation),
                    )
                }),
                RED.stroke_width(2),
            ))
            .map_err(chart_error)?;
        chart
            .draw_series(points.iter().map(|(x, rate, se)| {
                ErrorBar::new_vertical(
                    *x,
                    (rate - se).max(0.0),
                    *rate,
                    (rate + se).min(1.0),
                    BLUE.filled(),
                    8,
                )
            }))
            .map_err(chart_error)?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(|(x, rate, _)| Circle::new((*x, *rate), 4, BLUE.filled())),
            )
            .map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    write_atomic(path, svg.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

/// Every how many bars a label fits: labels about 0.6 em wide a
/// character, with a little room between them, in `slot` pixels a bar.
fn label_step(labels: &[String], font: f64, slot: f64) -> usize {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let width = longest as f64 * font * 0.6 + 8.0;
    ((width / slot.max(1.0)).ceil() as usize).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 24 rating bins on the report's chart: every third is labelled, so
    /// no two labels overlap; a few short labels are all shown.
    #[test]
    fn crowded_axis_labels_are_thinned_so_none_overlap() {
        let bins: Vec<String> = (4..28)
            .map(|h| format!("({}, {}]", h * 100, h * 100 + 100))
            .collect();
        let slot = 810.0 / 24.0;
        let every = label_step(&bins, 11.0, slot);
        assert_eq!(every, 3);
        // Label centres `every` slots apart leave room for the longest.
        assert!(every as f64 * slot >= 12.0 * 11.0 * 0.6);
        let few: Vec<String> = ["easy", "human", "hard"].map(String::from).to_vec();
        assert_eq!(label_step(&few, 11.0, 810.0 / 3.0), 1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        let values = vec![0.5; bins.len()];
        bar_chart(&path, "t", &bins, &values, None, 1.0, "y").unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("(400, 500]") && svg.contains("(700, 800]"));
        assert!(!svg.contains("(500, 600]") && !svg.contains("(600, 700]"));
    }
}
