//! The human ladder's picture: puzzle accuracy by rating bin of the nine
//! Maia nets and the player, beside each net's overall accuracy against its
//! rating with the player's human-equivalent rating read on the fitted
//! curve. The figures it draws are [`super::ladder`]'s.

use anyhow::{Context, Result};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

use super::ladder::{HumanEquivalent, Ladder, human_equivalent};
use super::metrics::{self, Breakdowns, CellMetrics};
use crate::core::fileio::write_atomic;
use crate::core::stats::chart_error;

/// The ladder's picture: puzzle accuracy by rating bin for the nine nets
/// and the player (left), and each net's overall puzzle accuracy against
/// its rating with the player's accuracy and human-equivalent rating
/// (right). `None` when no puzzle is rated.
pub(crate) fn draw_ladder(
    path: &Path,
    ladder: &Ladder,
    model: &str,
    b: &Breakdowns,
) -> Result<bool> {
    let first = &ladder.players[0];
    let bins: Vec<&String> = metrics::ordered_cells("rating_bin", &first.by_rating_bin)
        .into_iter()
        .map(|(cell, _)| cell)
        .filter(|cell| cell.as_str() != "unrated")
        .collect();
    if bins.is_empty() {
        return Ok(false);
    }
    let empty = BTreeMap::new();
    let model_bins = b.by.get("rating_bin").unwrap_or(&empty);
    let equivalent = human_equivalent(ladder, &b.overall);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let (left, right) = root.split_horizontally(820);
        draw_bins_panel(&left, ladder, &bins, model, model_bins)?;
        draw_overall_panel(&right, ladder, &equivalent, b.overall.puzzle_accuracy)?;
        root.present().map_err(chart_error)?;
    }
    write_atomic(path, svg.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

/// An area of the ladder's picture.
type Panel<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The colour of the `i`-th net of the ladder: light blue (the weakest) to
/// dark blue (the strongest).
fn ladder_color(ladder: &Ladder, i: usize) -> RGBColor {
    let t = i as f64 / (ladder.players.len().max(2) - 1) as f64;
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(mix(158.0, 8.0), mix(202.0, 48.0), mix(225.0, 107.0))
}

/// The label of the tick at `x`: the bin there by its lower bound (24
/// labels of `(1400, 1500]` would overlap); none between bins.
fn bin_label(bins: &[&String], x: f64) -> String {
    let i = x.round();
    match (i >= 0.0 && (x - i).abs() < 1e-9).then(|| bins.get(i as usize)) {
        Some(Some(cell)) => cell
            .trim_start_matches('(')
            .split(',')
            .next()
            .unwrap_or(cell)
            .to_string(),
        _ => String::new(),
    }
}

/// The puzzle accuracy of each of `bins` that `by_bin` has, at the bin's
/// index.
fn accuracy_points(bins: &[&String], by_bin: &BTreeMap<String, CellMetrics>) -> Vec<(f64, f64)> {
    bins.iter()
        .enumerate()
        .filter_map(|(x, cell)| by_bin.get(*cell).map(|m| (x as f64, m.puzzle_accuracy)))
        .collect()
}

/// The left panel: puzzle accuracy by rating bin, one line per net and
/// the player's in red.
fn draw_bins_panel(
    area: &Panel,
    ladder: &Ladder,
    bins: &[&String],
    model: &str,
    model_bins: &BTreeMap<String, CellMetrics>,
) -> Result<()> {
    let n = bins.len();
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Puzzle accuracy by rating bin: the Maia ladder and the player",
            ("sans-serif", 18),
        )
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..1.0)
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_style(("sans-serif", 11))
        .x_label_formatter(&|x| bin_label(bins, *x))
        .x_desc("puzzle rating bin (its lower bound)")
        .y_desc("puzzle accuracy")
        .draw()
        .map_err(chart_error)?;
    for (i, player) in ladder.players.iter().enumerate() {
        let color = ladder_color(ladder, i);
        let points = accuracy_points(bins, &player.by_rating_bin);
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(chart_error)?
            .label(player.name())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    let own = accuracy_points(bins, model_bins);
    chart
        .draw_series(LineSeries::new(own.clone(), RED.stroke_width(3)))
        .map_err(chart_error)?
        .label(model.to_string())
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(3)));
    chart
        .draw_series(own.into_iter().map(|p| Circle::new(p, 4, RED.filled())))
        .map_err(chart_error)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 11))
        .draw()
        .map_err(chart_error)?;
    Ok(())
}

/// The right panel: each net's overall puzzle accuracy against its rating,
/// the fitted curve, and the player's `accuracy` with its human-equivalent
/// rating.
fn draw_overall_panel(
    area: &Panel,
    ladder: &Ladder,
    equivalent: &HumanEquivalent,
    accuracy: f64,
) -> Result<()> {
    let lowest = f64::from(ladder.players[0].rating);
    let highest = f64::from(ladder.players[ladder.players.len() - 1].rating);
    let mut side = ChartBuilder::on(area)
        .caption(
            format!("Overall: human-equivalent {}", equivalent.label),
            ("sans-serif", 16),
        )
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(60)
        .build_cartesian_2d((lowest - 100.0)..(highest + 100.0), 0f64..1.0)
        .map_err(chart_error)?;
    side.configure_mesh()
        .x_desc("Maia net rating")
        .y_desc("puzzle accuracy, all puzzles")
        .x_labels(5)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()
        .map_err(chart_error)?;
    let ladder_points: Vec<(f64, f64)> = ladder
        .players
        .iter()
        .map(|p| (f64::from(p.rating), p.overall.puzzle_accuracy))
        .collect();
    let fitted_points: Vec<(f64, f64)> = ladder
        .players
        .iter()
        .zip(&equivalent.fitted_ladder)
        .map(|(p, f)| (f64::from(p.rating), *f))
        .collect();
    side.draw_series(LineSeries::new(
        fitted_points,
        ladder_color(ladder, ladder.players.len() - 1),
    ))
    .map_err(chart_error)?;
    side.draw_series(
        ladder_points
            .iter()
            .enumerate()
            .map(|(i, p)| Circle::new(*p, 4, ladder_color(ladder, i).filled())),
    )
    .map_err(chart_error)?;
    side.draw_series(LineSeries::new(
        [(lowest - 100.0, accuracy), (highest + 100.0, accuracy)],
        RED.stroke_width(2),
    ))
    .map_err(chart_error)?;
    if let Some(rating) = equivalent.rating {
        side.draw_series(std::iter::once(Circle::new(
            (rating, accuracy),
            6,
            RED.filled(),
        )))
        .map_err(chart_error)?;
    }
    Ok(())
}
