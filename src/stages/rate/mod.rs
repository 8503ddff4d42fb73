//! `puzzleforge rate`: estimates a Lichess-like rating for puzzles that have
//! none (mined puzzles), from what human players of each rating would play
//! and from engine and board signals.
//!
//! A puzzle's difficulty for humans is read from four kinds of signal, one
//! table of features in the end ([`features::FEATURES`]):
//! - human-move nets ([`crate::maia`], [`human`]): for every solver move
//!   and every opponent reply of the line, the probability that players of
//!   each of the nine Maia ratings (1100-1900) play it, its rank among their
//!   choices, the lowest rating whose most likely move it is, how spread
//!   their choices are, and how tempting the best wrong move is (and
//!   whether the engine's wide scan calls that move a blunder);
//! - an engine ladder: Stockfish's weakened player (its `Skill::pick_best`
//!   rule driven by our seeded RNG) at several strengths, several attempts
//!   each; an attempt solves the puzzle only when it finds every solver move;
//! - engine probes: the search depth at which the engine first finds the
//!   solver move and keeps it, the score gap to the second move, and a wide
//!   shallow scan of every legal move;
//! - board features: legal moves, available checks and captures, whether the
//!   solution captures, checks, sacrifices or recaptures, piece count, mate.
//!
//! The features are mapped to a rating by gradient-boosted trees, recalibrated
//! so that the mean true rating of the puzzles given an estimate matches it
//! over the whole range, with a deviation per solver-length group and band
//! of the estimate ([`model`]). The model is fitted on real Lichess puzzles
//! (`--calibrate`), which carry ratings from many human attempts, and saved
//! as a JSON file (`--save-model`, reused with `--model`) that also records
//! the signal settings and the nets, so a release rates the same way later.
//! Calibration reports held-out figures ([`calibrate`]) beside the model of
//! format 2 (ridge regressions on the engine and board features) on the
//! same folds. The measured figures are in docs/results.md.

use anyhow::{Context, Result};
use clap::Args;
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};

use crate::chess::columns::Column;
use crate::chess::line::PuzzleLine;
use crate::chess::record::{Puzzle, PuzzleWriter, extra_columns_of, for_each_row};
use crate::core::error::bad_input;
use crate::core::seed::{self, Domain, Key};
use crate::core::settings::{flags_over, load_section_or_bare, switch_on};
use crate::core::summary::Summary;
use crate::engine::pool::{EnginePool, PoolConfig};
use crate::engine::process::EngineSpec;
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::engine::weaken;
use crate::maia::{DEFAULT_MODELS_DIR, MAIA_RATINGS, MaiaNets, weight_file_name};

mod calibrate;
mod features;
mod human;
mod model;
mod signals;
pub use calibrate::{BandFigures, CalibrationReport, HeldOut, calibrate};
pub use features::{Features, feature_names};
pub use model::{DeviationTable, Estimator, Recalibration, TreeConfig, TreeNode, Trees};

/// Lowest and highest rating the model may give (Lichess's puzzle range).
const RATING_FLOOR: f64 = 400.0;
const RATING_CEILING: f64 = 3300.0;
/// Version of the model file format.
const MODEL_FORMAT: u32 = 3;

/// Settings of the `[rate]` section of pipeline.toml; CLI flags override.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RateConfig {
    /// Seed for the ladder's random picks and the calibration folds.
    pub seed: u64,
    /// A fitted model to rate with (written by `--save-model`).
    pub model: Option<PathBuf>,
    /// Folds for the held-out figures of a calibration.
    pub folds: u32,
    /// Ridge penalty of the format-2 reference model the calibration
    /// compares with (standardized features).
    pub ridge: f64,
    /// Use at most this many calibration rows (a seeded sample); 0 = all.
    pub calibrate_max_rows: usize,
    /// Also measure the plain ladder baseline (skill levels 0-14) when
    /// calibrating. Costly: deep MultiPV searches.
    pub baseline: bool,
    /// Calibrate also on the single-move version of every multi-move
    /// puzzle (its position and first solver move, the whole puzzle's
    /// rating as the target). Generated puzzles are mostly single-move and
    /// not mates, a shape the Lichess file holds few of.
    pub proxies: bool,
    /// What the engine computes per puzzle.
    pub signals: SignalConfig,
    /// The folder of the human-move nets (`maia-1100.pb.gz` ...). Unset:
    /// `maia/` beside the model file when rating with one and it is there,
    /// else `models/maia`. A model checks they are the nets it was fitted
    /// with (sha256).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maia: Option<PathBuf>,
    /// The trees a calibration fits.
    pub trees: TreeConfig,
}

impl Default for RateConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            model: None,
            folds: 5,
            ridge: 20.0,
            calibrate_max_rows: 0,
            baseline: false,
            proxies: true,
            signals: SignalConfig::default(),
            maia: None,
            trees: TreeConfig::default(),
        }
    }
}

/// Engine budgets of the signals. Stored in the model: a model is only
/// valid with the signals it was fitted on.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SignalConfig {
    /// Strengths of the weakened player (UCI_Elo scale, 1350-2850).
    pub ladder_elos: Vec<i32>,
    /// Attempts per strength.
    pub ladder_attempts: u32,
    /// Node budget of the probe search (found-and-kept depth, score gap).
    pub probe_nodes: u64,
    /// Depth of the wide scan that scores every legal move.
    pub wide_depth: u32,
}

impl Default for SignalConfig {
    fn default() -> Self {
        Self {
            ladder_elos: vec![1350, 1500, 1650, 1800, 2000, 2200],
            ladder_attempts: 5,
            probe_nodes: 8_000,
            wide_depth: 1,
        }
    }
}

/// `puzzleforge rate` flags. `--model`, `--seed`, `--folds`,
/// `--calibrate-max-rows` and `--baseline` override the `[rate]` keys of
/// their names ([`crate::core::settings::flags_over`]).
#[derive(Args, Debug, Serialize)]
pub struct RateArgs {
    /// Puzzles to rate (CSV or JSON Lines, optionally .zst).
    #[serde(skip)]
    pub input: PathBuf,
    /// Rated puzzles (.csv/.jsonl[.zst]): every row gets Rating and RatingDeviation.
    #[arg(short, long)]
    #[serde(skip)]
    pub output: PathBuf,
    /// Fit the rating model on these Lichess puzzles (repeatable).
    #[arg(long)]
    #[serde(skip)]
    pub calibrate: Vec<PathBuf>,
    /// Rate with this fitted model (JSON written by --save-model).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Write the model fitted by --calibrate here.
    #[arg(long)]
    #[serde(skip)]
    pub save_model: Option<PathBuf>,
    /// Seed for the ladder and the calibration folds.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Folds for the held-out calibration figures.
    #[arg(long)]
    pub folds: Option<u32>,
    /// Use at most this many calibration rows (a seeded sample).
    #[arg(long)]
    pub calibrate_max_rows: Option<usize>,
    /// Also measure the plain-ladder baseline when calibrating (slow).
    #[arg(long)]
    #[serde(serialize_with = "switch_on")]
    pub baseline: bool,
    /// Write the calibration rows' features here (CSV, with a FILE.json
    /// of the settings beside it). When FILE already holds features
    /// computed with the same settings, engine and nets, its rows are
    /// reused, not computed again: a cache for refitting.
    #[arg(long)]
    #[serde(skip)]
    pub features_out: Option<PathBuf>,
    /// The folder of the human-move nets (default: `maia/` beside the
    /// model when there, else `models/maia`).
    #[arg(long)]
    pub maia: Option<PathBuf>,
    /// A pipeline.toml whose [rate] section is read (or a TOML file of the
    /// [rate] section's fields alone).
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    #[serde(skip)]
    pub engine: EngineArgs,
}

/// Runs `puzzleforge rate` from its flags: the `[rate]` section of
/// `--config` (a pipeline.toml, or a file of the section's keys alone) with
/// the flags over it.
pub fn run_rate(args: &RateArgs) -> Result<Summary> {
    let section: RateConfig = load_section_or_bare(args.config.as_deref(), "rate")?;
    let config = flags_over(&section, args)?;
    let (engine, pool) = args.engine.resolve(&EngineConfig::default())?;
    run_rate_with(&RateJob {
        input: &args.input,
        output: &args.output,
        calibrate: &args.calibrate,
        save_model: args.save_model.as_deref(),
        features_out: args.features_out.as_deref(),
        config: &config,
        engine,
        pool,
    })
}

/// Everything one rating run needs; the pipeline runner builds it from
/// pipeline.toml.
pub(crate) struct RateJob<'a> {
    pub input: &'a Path,
    pub output: &'a Path,
    /// Lichess puzzle files to fit a model on; empty = use `config.model`.
    pub calibrate: &'a [PathBuf],
    /// Where to write the fitted model.
    pub save_model: Option<&'a Path>,
    /// Where to write (and whence to reuse) the calibration rows' features
    /// (CSV).
    pub features_out: Option<&'a Path>,
    pub config: &'a RateConfig,
    pub engine: EngineSpec,
    pub pool: PoolConfig,
}

/// Rates `job.input` into `job.output`, calibrating first when asked.
pub(crate) fn run_rate_with(job: &RateJob) -> Result<Summary> {
    let config = job.config;
    if config.folds < 2 {
        return Err(bad_input(format!(
            "rate: folds must be at least 2, not {}",
            config.folds
        )));
    }
    validate_signals(&config.signals)?;
    let (puzzles, rejected) = read_rateable(job.input)?;
    let needs_estimate: Vec<usize> = (0..puzzles.len())
        .filter(|&i| !has_lichess_rating(&puzzles[i]))
        .collect();

    let mut human = String::new();
    let (model, calibration_json) = rating_model(job, puzzles.len(), &needs_estimate, &mut human)?;
    let mut rated = puzzles;
    if let Some(model) = &model
        && !needs_estimate.is_empty()
    {
        estimate_ratings(job, model, &mut rated, &needs_estimate, &mut human)?;
    }
    for puzzle in &mut rated {
        puzzle.set(Column::RatingSource, "lichess");
    }
    for &index in &needs_estimate {
        rated[index].set(Column::RatingSource, "estimated");
    }
    let columns = extra_columns_of(&rated);
    let mut writer = PuzzleWriter::create(job.output, &columns)?;
    for puzzle in &rated {
        writer.write(puzzle)?;
    }
    let written = writer.finish()?;
    human.push_str(&format!(
        "rate: {written} puzzles written to {} ({} estimated, {} kept their Lichess rating, {} rejected)\n",
        job.output.display(),
        needs_estimate.len(),
        rated.len() - needs_estimate.len(),
        rejected.len()
    ));
    for line in rejected.iter().take(5) {
        human.push_str(&format!("  rejected: {line}\n"));
    }
    Ok(Summary::new(
        human,
        json!({
            "command": "rate",
            "input": job.input.display().to_string(),
            "output": job.output.display().to_string(),
            "written": written,
            "estimated": needs_estimate.len(),
            "kept_lichess_rating": rated.len() - needs_estimate.len(),
            "rejected": rejected.len(),
            "rejected_examples": rejected.iter().take(5).collect::<Vec<_>>(),
            "calibration": calibration_json,
        }),
    ))
}

fn engine_pool(job: &RateJob, what: &str) -> Result<EnginePool> {
    EnginePool::new(job.engine.clone(), job.pool.clone())
        .with_context(|| format!("starting the engine for {what}"))
}

/// The model that rates the puzzles without a Lichess rating: calibrated now
/// (and saved when asked), loaded from the configured file, or none when every
/// puzzle has its Lichess rating. Also returns the calibration report's JSON
/// and the nets the model reads.
fn rating_model(
    job: &RateJob,
    puzzle_count: usize,
    needs_estimate: &[usize],
    human: &mut String,
) -> Result<(Option<(RatingModel, MaiaNets)>, serde_json::Value)> {
    let config = job.config;
    if !job.calibrate.is_empty() {
        let nets_dir = config
            .maia
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_MODELS_DIR));
        let nets = load_nets(&nets_dir, None)?;
        let pool = engine_pool(job, "calibration")?;
        let (model, report) = calibrate(&pool, &nets, job.calibrate, config, job.features_out)?;
        if let Some(path) = job.save_model {
            let text = serde_json::to_string_pretty(&model)?;
            crate::core::fileio::write_atomic(path, format!("{text}\n").as_bytes())
                .with_context(|| format!("writing the model {}", path.display()))?;
        }
        human.push_str(&report.human());
        return Ok((Some((model, nets)), serde_json::to_value(&report)?));
    }
    if let Some(path) = &config.model {
        let model = RatingModel::load(path)?;
        let beside = path
            .parent()
            .unwrap_or(Path::new("."))
            .join(NETS_BESIDE_THE_MODEL);
        let nets_dir = config.maia.clone().unwrap_or_else(|| {
            if beside.is_dir() {
                beside
            } else {
                PathBuf::from(DEFAULT_MODELS_DIR)
            }
        });
        let nets = load_nets(&nets_dir, Some(&model.maia))?;
        return Ok((Some((model, nets)), serde_json::Value::Null));
    }
    if needs_estimate.is_empty() {
        return Ok((None, serde_json::Value::Null));
    }
    Err(bad_input(format!(
        "rate: {} of {} puzzles in {} have no Lichess rating; give a model (--model) or \
         calibrate one (--calibrate lichess.csv)",
        needs_estimate.len(),
        puzzle_count,
        job.input.display()
    )))
}

/// The folder of the nets, beside a model file.
const NETS_BESIDE_THE_MODEL: &str = "maia";

/// The human-move nets a model was fitted with: their ratings and the
/// sha256 of each weight file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MaiaSpec {
    pub ratings: Vec<u32>,
    pub sha256: Vec<String>,
}

impl MaiaSpec {
    /// The nine nets' files in `dir`.
    fn of_dir(dir: &Path) -> Result<Self> {
        let sha256 = MAIA_RATINGS
            .iter()
            .map(|&rating| {
                let path = dir.join(weight_file_name(rating));
                crate::core::fileio::sha256_file(&path).map_err(|e| {
                    bad_input(format!(
                        "rate: the human-move net {} cannot be read ({e:#}); the nets are \
                         in models/maia (--maia DIR, or [rate] maia)",
                        path.display()
                    ))
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            ratings: MAIA_RATINGS.to_vec(),
            sha256,
        })
    }
}

/// Loads the nine nets from `dir`; with `expected`, checks they are the
/// files the model was fitted with.
fn load_nets(dir: &Path, expected: Option<&MaiaSpec>) -> Result<MaiaNets> {
    let found = MaiaSpec::of_dir(dir)?;
    if let Some(expected) = expected
        && *expected != found
    {
        return Err(bad_input(format!(
            "rate: the human-move nets in {} are not those the model was fitted with \
             (sha256 differ); give the model's nets (--maia DIR) or calibrate again",
            dir.display()
        )));
    }
    MaiaNets::load(dir).with_context(|| format!("loading the human-move nets in {}", dir.display()))
}

/// Computes the signals of the puzzles at `needs_estimate` and sets their
/// rating and deviation from the model.
fn estimate_ratings(
    job: &RateJob,
    (model, nets): &(RatingModel, MaiaNets),
    rated: &mut [Puzzle],
    needs_estimate: &[usize],
    human: &mut String,
) -> Result<()> {
    let pool = engine_pool(job, "rating")?;
    if pool.engine_id() != model.engine {
        // Signals depend on the engine; a different one shifts them.
        human.push_str(&format!(
            "rate: warning: the model was fitted with {:?}, rating with {:?}\n",
            model.engine,
            pool.engine_id()
        ));
    }
    let targets: Vec<&Puzzle> = needs_estimate.iter().map(|&i| &rated[i]).collect();
    let features = compute_features(&pool, nets, &targets, &model.signals, model.seed, false)?;
    let estimates: Vec<(i32, i32)> = targets
        .iter()
        .zip(&features)
        .map(|(puzzle, features)| model.rate(puzzle.solver_moves(), features))
        .collect();
    for (&index, (rating, deviation)) in needs_estimate.iter().zip(estimates) {
        rated[index].rating = Some(rating);
        rated[index].rating_deviation = Some(deviation);
    }
    Ok(())
}

fn validate_signals(signals: &SignalConfig) -> Result<()> {
    for &elo in &signals.ladder_elos {
        weaken::check_elo(elo, "rate.signals.ladder_elos: the")?;
    }
    if signals.ladder_attempts == 0 || signals.probe_nodes == 0 || signals.wide_depth == 0 {
        return Err(bad_input(
            "rate.signals: ladder_attempts, probe_nodes and wide_depth must be positive",
        ));
    }
    Ok(())
}

/// A puzzle that already carries a rating from human plays on Lichess.
pub fn has_lichess_rating(puzzle: &Puzzle) -> bool {
    puzzle.rating.is_some() && puzzle.nb_plays.is_some_and(|n| n > 0)
}

/// Reads a puzzle file, keeping the puzzles whose moves replay legally from
/// their FEN; every other row is reported (file, line, reason) and skipped.
fn read_rateable(path: &Path) -> Result<(Vec<Puzzle>, Vec<String>)> {
    let mut puzzles = Vec::new();
    let mut rejected = Vec::new();
    for_each_row(path, |(line, row)| {
        match row {
            Ok(puzzle) => match PuzzleLine::of_puzzle(&puzzle) {
                Ok(_) => puzzles.push(puzzle),
                Err(e) => rejected.push(
                    e.at(format_args!(
                        "{} line {line}: puzzle {}",
                        path.display(),
                        puzzle.id
                    ))
                    .to_string(),
                ),
            },
            Err(e) => rejected.push(format!("{} line {line}: {e}", path.display())),
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

fn pearson(xs: &[f64], ys: &[f64]) -> Option<f64> {
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

/// A ridge regression on standardized features.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RidgeFit {
    pub means: Vec<f64>,
    pub scales: Vec<f64>,
    pub weights: Vec<f64>,
    pub intercept: f64,
}

impl RidgeFit {
    /// Fits `ys ~ xs`; features constant over the rows get weight 0.
    pub fn fit(xs: &[Vec<f64>], ys: &[f64], ridge: f64) -> Option<Self> {
        let rows = xs.len();
        let width = xs.first()?.len();
        let mut means = vec![0.0; width];
        let mut scales = vec![1.0; width];
        for j in 0..width {
            let mean = xs.iter().map(|x| x[j]).sum::<f64>() / rows as f64;
            let var = xs.iter().map(|x| (x[j] - mean).powi(2)).sum::<f64>() / rows as f64;
            means[j] = mean;
            scales[j] = if var > 1e-12 { var.sqrt() } else { 0.0 };
        }
        let intercept = ys.iter().sum::<f64>() / rows as f64;
        let design = DMatrix::from_fn(rows, width, |i, j| {
            if scales[j] > 0.0 {
                (xs[i][j] - means[j]) / scales[j]
            } else {
                0.0
            }
        });
        let target = DVector::from_iterator(rows, ys.iter().map(|y| y - intercept));
        let gram = design.transpose() * &design + DMatrix::identity(width, width) * ridge.max(1e-9);
        let weights = gram.cholesky()?.solve(&(design.transpose() * target));
        Some(Self {
            means,
            scales,
            weights: weights.iter().copied().collect(),
            intercept,
        })
    }

    pub(crate) fn predict(&self, x: &[f64]) -> f64 {
        self.intercept
            + x.iter()
                .zip(&self.means)
                .zip(&self.scales)
                .zip(&self.weights)
                .map(|(((x, m), s), w)| if *s > 0.0 { (x - m) / s * w } else { 0.0 })
                .sum::<f64>()
    }
}

/// The features of the given puzzles, in order: the nets' signals of
/// every position at once (batched over all puzzles), then the engine's
/// puzzle by puzzle over the pool.
pub(crate) fn compute_features(
    pool: &EnginePool,
    nets: &MaiaNets,
    targets: &[&Puzzle],
    signals: &SignalConfig,
    seed: u64,
    baseline: bool,
) -> Result<Vec<Features>> {
    let human = human::human_signals(nets, targets)?;
    let bar = crate::core::progress::items(targets.len() as u64, "rate");
    let engine = pool.map(targets, |session, _, puzzle| {
        // Keyed by the puzzle's id, not its row: a puzzle's draws (and so its
        // rating) must not depend on which worker served it, nor on which
        // file or row it sits in, so that `run --shard` slices rate to the
        // same bytes as a whole run. The baseline draws from its own domain
        // so that measuring it does not change the model's signals.
        let key = Key::Name(&puzzle.id);
        let mut rng = seed::rng(seed, Domain::RatePuzzle, key);
        let baseline_rng = baseline.then(|| seed::rng(seed, Domain::RateBaseline, key));
        let result = signals::engine_signals(session, puzzle, signals, &mut rng, baseline_rng);
        bar.inc(1);
        result
    });
    bar.finish_and_clear();
    let engine = engine?;
    Ok(targets
        .iter()
        .zip(engine.iter().zip(&human))
        .map(|(puzzle, (engine, human))| {
            // The line was checked when the file was read.
            let line = PuzzleLine::of_puzzle(puzzle).unwrap_or_default();
            Features {
                values: features::feature_values(&features::Signals {
                    line: &line,
                    engine,
                    human,
                }),
                baseline_solve_rate: engine.baseline_solve_rate,
            }
        })
        .collect())
}

/// Solver-length groups of the figures.
pub(crate) const LENGTH_GROUPS: [(&str, usize, usize); 3] =
    [("1", 1, 1), ("2", 2, 2), ("3+", 3, usize::MAX)];

fn group_of(solver_moves: usize) -> usize {
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

fn model_group(solver_moves: usize, mates: bool) -> usize {
    if solver_moves == 1 && mates {
        0
    } else {
        1 + group_of(solver_moves)
    }
}

fn mates(features: &Features) -> bool {
    features.get("ends_in_mate").is_some_and(|v| v > 0.0)
}

/// The fitted rating model, as stored in a release.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RatingModel {
    pub format: u32,
    pub engine: String,
    pub seed: u64,
    pub signals: SignalConfig,
    /// The human-move nets the features were computed with.
    pub maia: MaiaSpec,
    pub trees_config: TreeConfig,
    /// Calibration rows (puzzles and proxies) the model was fitted on.
    pub rows: usize,
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
        Ok(model)
    }

    /// Rating and deviation for a puzzle of `solver_moves` with `features`.
    pub fn rate(&self, solver_moves: usize, features: &Features) -> (i32, i32) {
        let estimate = self
            .estimator
            .estimate(&features.values)
            .clamp(RATING_FLOOR, RATING_CEILING);
        let group = model_group(solver_moves, mates(features));
        let deviation = self.estimator.deviations.deviation(group, estimate);
        (estimate.round() as i32, deviation.round() as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_share_ties() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 10.0, 30.0]),
            vec![1.5, 3.0, 1.5, 4.0]
        );
    }

    #[test]
    fn ridge_recovers_a_linear_map_and_ignores_constant_features() {
        let xs: Vec<Vec<f64>> = (0..20)
            .map(|i| vec![f64::from(i), 5.0, f64::from(i % 3)])
            .collect();
        let ys: Vec<f64> = xs
            .iter()
            .map(|x| 1000.0 + 30.0 * x[0] - 50.0 * x[2])
            .collect();
        let fit = RidgeFit::fit(&xs, &ys, 1e-6).expect("fits");
        assert_eq!(fit.weights[1], 0.0);
        for (x, y) in xs.iter().zip(&ys) {
            assert!((fit.predict(x) - y).abs() < 1e-3);
        }
        // A strong penalty shrinks towards the mean rating.
        let shrunk = RidgeFit::fit(&xs, &ys, 1e9).expect("fits");
        assert!((shrunk.predict(&xs[0]) - shrunk.intercept).abs() < 1.0);
    }

    #[test]
    fn length_groups_cover_every_length() {
        assert_eq!(group_of(1), 0);
        assert_eq!(group_of(2), 1);
        assert_eq!(group_of(3), 2);
        assert_eq!(group_of(7), 2);
        assert_eq!(model_group(1, true), 0);
        assert_eq!(model_group(1, false), 1);
        assert_eq!(model_group(2, true), 2);
        assert_eq!(model_group(5, false), 3);
    }
}
