//! `run --aim RUN --solve-rate P`: a tier aimed at a model. The model's
//! results in an eval run (each rated puzzle attempt solved or not) give
//! its own solve curve by puzzle rating ([`SolveCurve`]); the rating where
//! the curve gives `P`, with its 95% interval, is the tier's rating window.
//! The tier is the `[release]` cells inside that window, filled as any tier
//! is (from the puzzle sources, or by generation with its quotas, budgets,
//! plan and stopping rule), and its card names what it was aimed at.

use anyhow::Result;
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;
use crate::pipeline::config::PipelineConfig;
use crate::stages::eval::compare::read_records;
use crate::stages::eval::puzzle_rating::{PuzzleRating, attempts};
use crate::stages::eval::solve_curve::SolveCurve;
use crate::stages::release::cells::{Aim, Tier};

/// The name of the tier `run --aim` adds to `[release.tiers]`.
pub(crate) const AIMED_TIER: &str = "aimed";

/// `run --aim` and `--solve-rate` (their help: `cli::run::AimFlags`).
#[derive(Debug, Clone, Default)]
pub struct AimArgs {
    pub aim: Option<PathBuf>,
    pub solve_rate: Option<f64>,
}

/// Parses `--solve-rate`: a share strictly between 0 and 1.
pub(crate) fn parse_solve_rate(text: &str) -> std::result::Result<f64, String> {
    let rate: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if rate > 0.0 && rate < 1.0 {
        Ok(rate)
    } else {
        Err(format!(
            "{text} is not a solve rate strictly between 0 and 1 (0.3 asks for 30%)"
        ))
    }
}

/// The aimed tier of `run` (if `--aim` was given) added to the config's
/// `[release.tiers]`; returns the tier name `run` should produce.
pub(crate) fn add_aimed_tier(
    args: &AimArgs,
    config: &mut PipelineConfig,
    config_path: &Path,
) -> Result<Option<String>> {
    let (Some(run), Some(solve_rate)) = (&args.aim, args.solve_rate) else {
        return Ok(None);
    };
    if config.release.tiers.contains_key(AIMED_TIER) {
        return Err(bad_input(format!(
            "{}: [release.tiers] already has a tier named {AIMED_TIER:?}, the name `run --aim` gives \
             its tier: rename it",
            config_path.display()
        )));
    }
    let tier = aimed_tier(run, solve_rate, config.release.bin_width)?;
    config.release.tiers.insert(AIMED_TIER.to_string(), tier);
    Ok(Some(AIMED_TIER.to_string()))
}

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
