//! The rating model a file holds and what fitting and applying it share:
//! the rateable rows, the features of a puzzle, the length groups and rank
//! statistics.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::chess::record::{FirstLines, Puzzle, RowError, for_each_row};
use crate::core::error::bad_input;
use crate::maia::MaiaNets;
use rayon::prelude::*;

use super::config::*;
use super::features::{self, Features, feature_names};
use super::human;
use super::model::*;
use super::signals;

// The rule behind `RatingSource`, where `rate`'s users find it.
pub use crate::chess::derive::has_lichess_rating;

/// A row `rate` reads but does not rate: its line in the file, its
/// PuzzleId (empty when the row could not be read) and why, as a rejects
/// file holds it ([`crate::stages::ingest_puzzles::rejects::RejectsFile`]).
#[derive(Clone, Debug)]
pub(crate) struct RateReject {
    pub line: u64,
    pub id: String,
    pub error: RowError,
}

/// Reads a puzzle file, keeping the puzzles whose moves replay legally from
/// their FEN, each PuzzleId once; every other row is returned as a reject
/// (line, id, reason), in file order. A repeated PuzzleId is a reject
/// naming the line of the first, which is kept: as `ingest puzzles` does,
/// so a rated file keys one puzzle by one id (the release keys its
/// exclusions and its duplicates by id).
pub(crate) fn read_rateable(path: &Path) -> Result<(Vec<Puzzle>, Vec<RateReject>)> {
    let mut puzzles = Vec::new();
    let mut rejected = Vec::new();
    let mut first_lines = FirstLines::default();
    for_each_row(path, |(line, row)| {
        match row {
            Ok(puzzle) => {
                let outcome = match puzzle.line() {
                    Err(e) => Err(RowError::new(e.code(), e.to_string())),
                    Ok(_) => first_lines.admit(&puzzle.id, line),
                };
                match outcome {
                    Ok(()) => puzzles.push(puzzle),
                    Err(error) => rejected.push(RateReject {
                        line,
                        id: puzzle.id,
                        error,
                    }),
                }
            }
            Err(error) => rejected.push(RateReject {
                line,
                id: error.id.clone(),
                error,
            }),
        }
        Ok(())
    })?;
    Ok((puzzles, rejected))
}

// ---------------------------------------------------------------------------
// Statistics.

/// Ranks of `values` (1-based), ties sharing their average rank.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let rank = (start + end + 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Spearman's rank correlation (Pearson on average ranks). `None` when
/// fewer than two pairs or either side is constant.
pub fn spearman(xs: &[f64], ys: &[f64]) -> Option<f64> {
    if xs.len() != ys.len() || xs.len() < 2 {
        return None;
    }
    pearson(&average_ranks(xs), &average_ranks(ys))
}

pub(crate) fn pearson(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// Computes the features of `targets` with a progress bar of their own.
pub(crate) fn compute_features(nets: &MaiaNets, targets: &[&Puzzle]) -> Result<Vec<Features>> {
    let bar = crate::core::progress::items(targets.len() as u64, "rate");
    let features = compute_features_with(nets, targets, &bar);
    crate::core::progress::finish(&bar);
    features
}

/// Puzzles whose nets' signals are computed together: a progress step,
/// and a batch large enough to keep every core busy.
const PUZZLES_PER_STEP: usize = 512;

/// The features of the given puzzles, in order, step by step: the nets'
/// signals of every solver position of a step at once (batched, on the
/// rayon pool), then the board's, counted on `bar`. No engine runs: a
/// feature is a function of the puzzle and the nets alone, so the same
/// puzzle gets the same bits in any file, shard or batch.
pub(crate) fn compute_features_with(
    nets: &MaiaNets,
    targets: &[&Puzzle],
    bar: &indicatif::ProgressBar,
) -> Result<Vec<Features>> {
    let mut features = Vec::with_capacity(targets.len());
    for step in targets.chunks(PUZZLES_PER_STEP) {
        let human = human::human_signals(nets, step)?;
        features.par_extend(step.par_iter().zip(&human).map(|(puzzle, human)| {
            // The line was checked when the file was read.
            let line = puzzle.line().unwrap_or_default();
            let board = signals::board_signals(&line);
            let values = features::feature_values(&features::Signals {
                line: &line,
                board: &board,
                material: signals::material_facts(&line),
                human,
            });
            Features { values }
        }));
        bar.inc(step.len() as u64);
    }
    Ok(features)
}

/// Solver-length groups of the figures.
pub(crate) const LENGTH_GROUPS: [(&str, usize, usize); 3] =
    [("1", 1, 1), ("2", 2, 2), ("3+", 3, usize::MAX)];

pub(crate) fn group_of(solver_moves: usize) -> usize {
    LENGTH_GROUPS
        .iter()
        .position(|(_, lo, hi)| (*lo..=*hi).contains(&solver_moves))
        .unwrap_or(0)
}

/// The model's groups, each with its own deviations (and, in the format-2
/// reference, its own fit): the length groups, with the single-move mates
/// apart. Lichess's single-move puzzles are mostly mates in one, the
/// generator's mostly not.
pub(crate) const MODEL_GROUPS: [&str; 4] = ["1 mate", "1", "2", "3+"];

pub(crate) fn model_group(solver_moves: usize, mates: bool) -> usize {
    if solver_moves == 1 && mates {
        0
    } else {
        1 + group_of(solver_moves)
    }
}

pub(crate) fn mates(features: &Features) -> bool {
    features.get("ends_in_mate").is_some_and(|v| v > 0.0)
}

/// The ratings a model gives without extrapolating, per model group: its
/// recalibration map's ends moved by the group's shift, within the
/// rating range.
///
/// Why it matters: the map holds, for each output of the trees, the mean
/// true rating of the held-out puzzles that got it, so it tops out below
/// the hardest puzzles' ratings (a noisy estimate regresses to the mean).
/// A target cell above a group's top is not filled by puzzles rated as
/// calibrated, whatever the budget; generation names such cells instead
/// of counting them as merely not reached yet.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelReach {
    /// `[group]`: the lowest and highest rating, rounded as ratings are.
    ranges: Vec<(i32, i32)>,
}

impl ModelReach {
    pub fn of(model: &RatingModel) -> Option<Self> {
        let (low, high) = model.estimator.recalibration.ends()?;
        let ranges = (0..MODEL_GROUPS.len())
            .map(|group| {
                let shift = model.estimator.shifts.shift(group);
                let rating =
                    |r: f64| (r + shift).clamp(RATING_FLOOR, RATING_CEILING).round() as i32;
                (rating(low), rating(high))
            })
            .collect();
        Some(Self { ranges })
    }

    /// The lowest and highest calibrated rating of a puzzle of
    /// `solver_moves` (a mate or not).
    pub fn range(&self, solver_moves: usize, mate: bool) -> (i32, i32) {
        self.ranges
            .get(model_group(solver_moves, mate))
            .copied()
            .unwrap_or((RATING_FLOOR as i32, RATING_CEILING as i32))
    }

    /// Whether such a puzzle can be rated within the bin `(lo, hi]`.
    pub fn reaches(&self, solver_moves: usize, mate: bool, lo: i32, hi: i32) -> bool {
        let (low, high) = self.range(solver_moves, mate);
        high > lo && low <= hi
    }
}

/// The longest line of the Lichess puzzle database, in solver moves (the
/// 2025 copy's 2,789,509 rows: 3 of 15 moves, none longer; 32,425 of 6 and
/// more), which the models fitted before they recorded their own longest
/// line were fitted on, the committed one included. Past it a rating is
/// an extrapolation no held-out figure vouches for: the committed model
/// rates 100 solver moves of knights going out and back from the start
/// 2266, as it would a hard puzzle.
pub(crate) const LICHESS_LONGEST_LINE: usize = 15;

/// The fitted rating model, as stored in a release.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RatingModel {
    pub format: u32,
    /// The human-move nets the features were computed with.
    pub maia: MaiaSpec,
    pub trees_config: TreeConfig,
    /// Calibration rows (puzzles and proxies) the model was fitted on.
    pub rows: usize,
    /// The longest line, in solver moves, of the puzzles the model was
    /// fitted on: `rate` rates a longer one but flags it
    /// ([`RatingModel::longest_fitted_line`]). Absent from the models
    /// fitted before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_line: Option<usize>,
    pub features: Vec<String>,
    /// The deviation groups ([`MODEL_GROUPS`]).
    pub groups: Vec<String>,
    pub estimator: Estimator,
}

impl RatingModel {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the rating model {}", path.display()))?;
        let format = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("format").and_then(serde_json::Value::as_u64));
        if let Some(format) = format.filter(|f| *f != u64::from(MODEL_FORMAT)) {
            return Err(bad_input(format!(
                "{}: rating model format {format} (this puzzleforge reads {MODEL_FORMAT}); \
                 calibrate again",
                path.display()
            )));
        }
        let model: RatingModel = serde_json::from_str(&text)
            .map_err(|e| bad_input(format!("{}: not a rating model: {e}", path.display())))?;
        if model.features != feature_names() {
            return Err(bad_input(format!(
                "{}: the model's features differ from this puzzleforge's; calibrate again",
                path.display()
            )));
        }
        if model.groups != MODEL_GROUPS
            || model.estimator.deviations.deviations.len() != MODEL_GROUPS.len()
        {
            return Err(bad_input(format!(
                "{}: the model needs deviations for the groups {}",
                path.display(),
                MODEL_GROUPS.join(", ")
            )));
        }
        if model.longest_line == Some(0) {
            return Err(bad_input(format!(
                "{}: not a usable rating model: longest_line is 0: a model is fitted on \
                 lines of at least one solver move; restore it or calibrate again",
                path.display()
            )));
        }
        if let Err(why) = model.estimator.check(
            model.features.len(),
            MODEL_GROUPS.len(),
            RATING_CEILING - RATING_FLOOR,
        ) {
            return Err(bad_input(format!(
                "{}: not a usable rating model: {why}; restore it or calibrate again",
                path.display()
            )));
        }
        Ok(model)
    }

    /// The longest line, in solver moves, the model was fitted on: the one
    /// it records, else [`LICHESS_LONGEST_LINE`] (a model from before the
    /// record, fitted on the Lichess database).
    pub fn longest_fitted_line(&self) -> usize {
        self.longest_line.unwrap_or(LICHESS_LONGEST_LINE)
    }

    /// Rating and deviation for a puzzle of `solver_moves` with `features`.
    pub fn rate(&self, solver_moves: usize, features: &Features) -> (i32, i32) {
        let group = model_group(solver_moves, mates(features));
        let estimate = self
            .estimator
            .estimate(&features.values, group)
            .clamp(RATING_FLOOR, RATING_CEILING);
        let deviation = self.estimator.deviations.deviation(group, estimate);
        (estimate.round() as i32, deviation.round() as i32)
    }
}
