//! `run --aim RUN --solve-rate P`'s tier, from an eval run: the model's
//! results in `RUN` (each rated puzzle attempt solved or not) give its own
//! solve curve by puzzle rating ([`SolveCurve`]); the rating where the
//! curve gives `P`, with its 95% interval, in whole bins, is the tier's
//! rating window, and the tier's [`Aim`] names the model, the run and the
//! curve. It reads only an eval run and gives the release stage's
//! [`Tier`], so it sits here, in the last stage, which may use release;
//! the pipeline adds the tier to a run's config (`pipeline::aim`).

use anyhow::Result;
use std::path::Path;

use super::compare::read_records;
use super::puzzle_rating::{PuzzleRating, attempts};
use super::solve_curve::SolveCurve;
use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;
use crate::stages::release::cells::{Aim, Tier};

/// The tier aimed at the model of eval run `run` for `solve_rate`: the
/// rating bins (of `bin_width`) that the 95% interval of the curve's
/// rating at that rate touches.
pub(crate) fn aimed_tier(run: &Path, solve_rate: f64, bin_width: i32) -> Result<Tier> {
    let records = read_records(run)?;
    let scored: Vec<_> = attempts(&records, &[])
        .into_iter()
        .map(|(_, attempt)| attempt)
        .collect();
    let curve = SolveCurve::fit(&scored).map_err(|why| {
        bad_input(format!(
            "run --aim {}: no solve curve: {why}",
            run.display()
        ))
    })?;
    let at = curve.rating_at(solve_rate);
    let bin = f64::from(bin_width.max(1));
    // The window: whole bins, at least one, inside the ratings a tier may
    // name. A bin is the tier's when its midpoint is inside the bounds.
    let (floor, ceiling) = (
        f64::from(*crate::stages::release::cells::RATING_RANGE.start()),
        f64::from(*crate::stages::release::cells::RATING_RANGE.end()),
    );
    let mut low = ((at.low / bin).floor() * bin).clamp(floor, ceiling - bin);
    let mut high = ((at.high / bin).ceil() * bin).clamp(floor + bin, ceiling);
    if high <= low {
        low = ((at.rating / bin).floor() * bin).clamp(floor, ceiling - bin);
        high = low + bin;
    }
    let report = read_report_head(run)?;
    let positions = run.join("positions.jsonl");
    Ok(Tier {
        min_rating: Some(low as i32),
        max_rating: Some(high as i32),
        aim: Some(Aim {
            model: report.model,
            run: run.display().to_string(),
            positions_sha256: sha256_file(&positions)?,
            puzzle_rating: report.puzzle_rating.map(|r| r.label()),
            solve_rate,
            curve_midpoint: curve.midpoint.round(),
            curve_spread: curve.spread.round(),
            attempts: curve.attempts,
            solved: curve.solved,
            rating: at.rating.round(),
            low: at.low.round(),
            high: at.high.round(),
        }),
        ..Tier::default()
    })
}

/// What an aimed tier names of an eval run's `report.json`: the model it
/// measured, and its puzzle rating (absent in runs written before it was
/// reported).
#[derive(serde::Deserialize)]
struct ReportHead {
    model: String,
    #[serde(default)]
    puzzle_rating: Option<PuzzleRating>,
}

fn read_report_head(run: &Path) -> Result<ReportHead> {
    let path = run.join("report.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| bad_input(format!("{}: not an eval run ({e})", path.display())))?;
    let head: ReportHead = serde_json::from_str(&text)
        .map_err(|e| bad_input(format!("{}: not an eval report: {e}", path.display())))?;
    Ok(head)
}
