//! Calibration of the rating model: the Lichess rows and their single-move
//! proxies, folds by source game, the features (cached in `--features-out`),
//! held-out figures of the model beside the format-2 reference model on the
//! same folds, and the final fit.
//!
//! Every held-out figure is honest end to end: for each outer fold, the
//! whole model (trees, recalibration, deviation table, each fitted on the
//! other folds' rows only, the last two on out-of-fold predictions of inner
//! folds) rates the fold's rows.

use anyhow::{Context, Result};
use rand::seq::SliceRandom;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::config::*;
use super::features::FORMAT_2_FEATURES;
use super::features::{Features, feature_names};
use super::fit::*;
use super::model::{BAND_WIDTH, Estimator, FitRows, band_weights, pick};
use super::store::{FeatureSettings, FeatureStore, ROWS_PER_PART, row_key, stored};
use crate::chess::columns::Column;
use crate::chess::record::Puzzle;
use crate::core::error::bad_input;
use crate::core::seed::{self, Domain, Key};
use crate::core::shard::Shard;
use crate::engine::pool::EnginePool;
use crate::maia::{DEFAULT_MODELS_DIR, MaiaNets};

/// Held-out figures of one group of calibration rows.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HeldOut {
    pub group: String,
    pub rows: usize,
    /// Spearman of the model's held-out estimates with the Lichess rating.
    pub spearman: Option<f64>,
    /// Root mean square of the held-out misses.
    pub rmse: f64,
    /// Mean of (estimate - rating).
    pub bias: f64,
    /// Share of the rows whose rating lies within one written deviation of
    /// the estimate.
    pub within_deviation: f64,
    /// The same for the reference: rating-model format 2 (ridge per group
    /// on the engine and board features, proxies in the fit, the group's
    /// held-out RMSE as its deviation), fitted on the same folds.
    pub reference_spearman: Option<f64>,
    pub reference_rmse: f64,
    pub reference_bias: f64,
    pub reference_within_deviation: f64,
    /// Spearman of the plain ladder's solve rate (negated) with the rating,
    /// when measured (`--baseline`).
    pub baseline_spearman: Option<f64>,
    /// Spearman of solver length alone with the rating.
    pub length_spearman: Option<f64>,
}

/// The rows whose estimate falls in one 400-point band, read as a release
/// reads them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BandFigures {
    /// Lower edge of the band of the estimate.
    pub band: i32,
    pub rows: usize,
    pub mean_estimate: f64,
    pub mean_rating: f64,
    /// Mean rating minus mean estimate.
    pub miss: f64,
    /// Standard deviation of the ratings in the band.
    pub rating_std: f64,
}

/// Band figures of one group of rows, for the model and the reference.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BandTable {
    pub group: String,
    pub model: Vec<BandFigures>,
    pub reference: Vec<BandFigures>,
}

/// What a calibration measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CalibrationReport {
    pub files: Vec<String>,
    /// Lichess puzzles read (proxies not counted).
    pub rows: usize,
    /// Single-move proxies added for the fit.
    pub proxy_rows: usize,
    /// Distinct source games: the held-out folds never split one.
    pub games: usize,
    pub skipped: usize,
    /// Rows whose features came from the `--features-out` cache.
    pub cached_rows: usize,
    pub folds: u32,
    pub seed: u64,
    pub held_out: Vec<HeldOut>,
    pub bands: Vec<BandTable>,
    pub reach: ReachFigures,
}

/// Held-out figures of one group of whole puzzles whose true rating lies
/// in 400-2800 (the range releases draw from).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InRangeFigures {
    pub group: String,
    pub rows: usize,
    pub spearman: Option<f64>,
    pub rmse: f64,
}

/// The rows whose held-out estimate falls in one 200-point band.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReachBand {
    /// Lower edge of the band of the estimate.
    pub band: i32,
    pub rows: usize,
    pub mean_estimate: f64,
    /// Mean true rating minus mean estimate.
    pub miss: f64,
}

/// The estimates at one end of the scale.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EndFigures {
    /// "above 2600" or "at or below 700".
    pub end: String,
    pub rows: usize,
    /// Share of the group's estimates at this end.
    pub share: f64,
    /// Share of the group's true ratings at this end.
    pub true_share: f64,
    /// Mean true rating minus mean estimate of these rows.
    pub miss: f64,
}

/// How far the held-out estimates reach and how well they hold there, for
/// one group of whole puzzles.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupReach {
    pub group: String,
    pub rows: usize,
    pub lowest_estimate: f64,
    pub highest_estimate: f64,
    /// By 200-point band of the estimate.
    pub bands: Vec<ReachBand>,
    pub ends: Vec<EndFigures>,
}

/// The figures the model is held to: in-range ranking by solver length,
/// and calibration by 200-point band out to both ends.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReachFigures {
    /// Per length group (1, 2, 3-5, 6+ solver moves) and all.
    pub in_range: Vec<InRangeFigures>,
    /// Every whole puzzle, and the generated puzzles' shape (single-move
    /// non-mates).
    pub groups: Vec<GroupReach>,
}

fn fmt_option(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

impl CalibrationReport {
    pub fn human(&self) -> String {
        let mut out = format!(
            "calibration: {} rows + {} single-move proxies from {} ({} skipped, {} rows' \
             features cached), {}-fold held-out grouped by source game ({} games), seed {}\n",
            self.rows,
            self.proxy_rows,
            self.files.join(", "),
            self.skipped,
            self.cached_rows,
            self.folds,
            self.games,
            self.seed
        );
        out.push_str(
            "  group          rows  spearman  rmse  bias  in-dev | format 2: spearman  rmse  \
             bias  in-dev | length\n",
        );
        for h in &self.held_out {
            out.push_str(&format!(
                "  {:<13} {:>5}  {:>8}  {:>4.0}  {:>+4.0}  {:>5.1}% | {:>17}  {:>4.0}  {:>+4.0}  \
                 {:>5.1}% | {:>6}\n",
                h.group,
                h.rows,
                fmt_option(h.spearman),
                h.rmse,
                h.bias,
                100.0 * h.within_deviation,
                fmt_option(h.reference_spearman),
                h.reference_rmse,
                h.reference_bias,
                100.0 * h.reference_within_deviation,
                fmt_option(h.length_spearman)
            ));
        }
        out.push_str("  true rating 400-2800: group  rows  spearman  rmse\n");
        for f in &self.reach.in_range {
            out.push_str(&format!(
                "    {:<12} {:>5}  {:>8}  {:>4.0}\n",
                f.group,
                f.rows,
                fmt_option(f.spearman),
                f.rmse
            ));
        }
        for g in &self.reach.groups {
            out.push_str(&format!(
                "  reach ({}, {} rows): estimates {:.0}-{:.0}; by 200-point band of the \
                 estimate: band rows miss\n",
                g.group, g.rows, g.lowest_estimate, g.highest_estimate
            ));
            for b in &g.bands {
                out.push_str(&format!(
                    "    {:>4}-{:<4} {:>5}  {:>+4.0}\n",
                    b.band,
                    b.band + REACH_BAND as i32,
                    b.rows,
                    b.miss
                ));
            }
            for e in &g.ends {
                out.push_str(&format!(
                    "    estimates {}: {} rows, {:.1}% (true ratings there: {:.1}%), mean miss {:+.0}\n",
                    e.end,
                    e.rows,
                    100.0 * e.share,
                    100.0 * e.true_share,
                    e.miss
                ));
            }
        }
        for table in &self.bands {
            out.push_str(&format!(
                "  by band of the estimate ({}): band  rows  estimate  rating  miss  std | \
                 format 2: rows  miss  std\n",
                table.group
            ));
            for (i, b) in table.model.iter().enumerate() {
                let r = table.reference.get(i);
                out.push_str(&format!(
                    "    {:>4}-{:<4} {:>5}  {:>8.0}  {:>6.0}  {:>+4.0}  {:>3.0} | {:>5}  {:>+4.0}  \
                     {:>3.0}\n",
                    b.band,
                    b.band + BAND_WIDTH as i32,
                    b.rows,
                    b.mean_estimate,
                    b.mean_rating,
                    b.miss,
                    b.rating_std,
                    r.map_or(0, |r| r.rows),
                    r.map_or(0.0, |r| r.miss),
                    r.map_or(0.0, |r| r.rating_std),
                ));
            }
        }
        out
    }
}

/// A calibration row: a puzzle rated by Lichess players. Rows of the dump
/// say how many played it; rows that carry a rating without play counts
/// count too, unless the rating is puzzleforge's own estimate.
fn rated_by_players(puzzle: &Puzzle) -> bool {
    puzzle.rating.is_some()
        && puzzle.nb_plays.is_none_or(|n| n > 0)
        && puzzle.get(Column::RatingSource.name()) != Some("estimated")
}

/// Reads the calibration rows: Lichess puzzles with a rating from plays.
fn read_calibration(files: &[PathBuf], config: &RateConfig) -> Result<(Vec<Puzzle>, usize)> {
    let mut rows = Vec::new();
    let mut skipped = 0;
    for file in files {
        let (puzzles, rejected) = read_rateable(file)?;
        skipped += rejected.len();
        for puzzle in puzzles {
            if rated_by_players(&puzzle) {
                rows.push(puzzle);
            } else {
                skipped += 1;
            }
        }
    }
    if config.calibrate_max_rows > 0 && rows.len() > config.calibrate_max_rows {
        let mut rng = seed::rng(config.seed, Domain::RateCalibrationSample, Key::Run);
        rows.shuffle(&mut rng);
        rows.truncate(config.calibrate_max_rows);
    }
    if rows.len() < 2 * config.folds as usize {
        return Err(bad_input(format!(
            "calibration needs at least {} rated Lichess puzzles, {} has {}",
            2 * config.folds,
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            rows.len()
        )));
    }
    Ok((rows, skipped))
}

/// Suffix of a proxy row's id: `<PuzzleId>~first`.
const PROXY_SUFFIX: &str = "~first";

/// The single-move version of a multi-move puzzle: its position and its
/// first solver move, keeping the whole puzzle's rating as the target.
/// `None` for a single-move puzzle.
fn single_move_proxy(puzzle: &Puzzle) -> Option<Puzzle> {
    if puzzle.solver_moves() < 2 {
        return None;
    }
    let mut proxy = puzzle.clone();
    proxy.moves.truncate(2);
    proxy.id = format!("{}{PROXY_SUFFIX}", puzzle.id);
    Some(proxy)
}

/// The calibration rows of rated puzzles: each puzzle, and after it the
/// single-move proxy of a longer one when proxies are on and the proxy is
/// among the `proxy_share` picked by its content hash (the same puzzles
/// at every run, whatever the seed). Returns the rows and which are
/// proxies.
fn candidate_rows(lichess: Vec<Puzzle>, config: &RateConfig) -> (Vec<Puzzle>, Vec<bool>) {
    let mut puzzles = Vec::new();
    let mut proxy = Vec::new();
    for puzzle in lichess {
        let cut = config
            .proxies
            .then(|| single_move_proxy(&puzzle))
            .flatten()
            .filter(|cut| picked(cut, config.proxy_share));
        puzzles.push(puzzle);
        proxy.push(false);
        if let Some(cut) = cut {
            puzzles.push(cut);
            proxy.push(true);
        }
    }
    (puzzles, proxy)
}

/// Whether a row is among the `share` of rows picked by content hash.
fn picked(puzzle: &Puzzle, share: f64) -> bool {
    let (_, content) = row_key(puzzle);
    let draw = u32::from_str_radix(&content[..8], 16).unwrap_or(0);
    f64::from(draw) / 4_294_967_296.0 < share
}

/// The game a calibration row was cut from (its Lichess game id, else its
/// puzzle id): puzzles of one game, and a puzzle and its proxy, look alike,
/// so they must never sit on both sides of a fold.
fn source_game(puzzle: &Puzzle) -> String {
    match puzzle.game_id_and_ply() {
        Some((game, _)) => game,
        None => puzzle
            .id
            .strip_suffix(PROXY_SUFFIX)
            .unwrap_or(&puzzle.id)
            .to_string(),
    }
}

/// The rows a calibration fits and measures on, with their folds.
struct CalibrationRows {
    puzzles: Vec<Puzzle>,
    /// Per row: the single-move proxy of a longer puzzle.
    proxy: Vec<bool>,
    /// Per row: its source game's place in the seeded game order. The
    /// outer fold is `place % folds`; the inner folds (inside a fold's
    /// training rows) split `place / folds`.
    place: Vec<usize>,
    folds: usize,
    games: usize,
}

impl CalibrationRows {
    fn new(puzzles: Vec<Puzzle>, proxy: Vec<bool>, config: &RateConfig) -> Self {
        let keys: Vec<String> = puzzles.iter().map(source_game).collect();
        let mut games: Vec<&String> = keys.iter().collect();
        games.sort();
        games.dedup();
        games.shuffle(&mut seed::rng(
            config.seed,
            Domain::RateCalibrationFolds,
            Key::Run,
        ));
        let place_of_game: HashMap<&String, usize> = games
            .iter()
            .enumerate()
            .map(|(place, game)| (*game, place))
            .collect();
        let place = keys.iter().map(|k| place_of_game[k]).collect();
        Self {
            games: games.len(),
            puzzles,
            proxy,
            place,
            folds: config.folds.max(2) as usize,
        }
    }

    fn fold(&self, row: usize) -> usize {
        self.place[row] % self.folds
    }

    fn inner_key(&self, row: usize) -> usize {
        self.place[row] / self.folds
    }
}

/// Writes the calibration rows' features as CSV (`--features-out`): id,
/// solver moves, rating, whether the row is a proxy, its fold, the
/// plain-ladder solve rate (empty unless measured), then the features.
/// A table to read, not a cache: the store keeps rows for refits.
fn write_features(
    path: &Path,
    rows: &CalibrationRows,
    features: &[Features],
    names: &[String],
) -> Result<()> {
    let mut text = String::from("PuzzleId,SolverMoves,Rating,proxy,fold,baseline_solve_rate");
    for name in names {
        text.push(',');
        text.push_str(name);
    }
    text.push('\n');
    for (i, (puzzle, f)) in rows.puzzles.iter().zip(features).enumerate() {
        text.push_str(&format!(
            "{},{},{},{},{},{}",
            puzzle.id,
            puzzle.solver_moves(),
            puzzle.rating.unwrap_or_default(),
            rows.proxy[i],
            rows.fold(i),
            f.baseline_solve_rate
                .map(|r| r.to_string())
                .unwrap_or_default()
        ));
        for v in &f.values {
            text.push_str(&format!(",{v}"));
        }
        text.push('\n');
    }
    crate::core::fileio::write_atomic(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// Where a calibration's features come from and go.
#[derive(Clone, Debug, Default)]
pub struct FeatureJob<'a> {
    /// The feature store (`--features DIR`): rows found there are not
    /// computed again, rows computed are added in parts as they finish.
    pub store: Option<&'a Path>,
    /// Compute only this slice of the rows (in the store's order), and
    /// fit nothing: shards on several machines fill one store.
    pub shard: Option<Shard>,
    /// Compute the missing features, fit nothing (`--features-only`).
    pub features_only: bool,
    /// Fit on the rows the store holds, computing none (`--stored-only`).
    pub stored_only: bool,
    /// Write the rows' features with their folds as a table here.
    pub table: Option<&'a Path>,
}

/// What a feature extraction did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExtractionReport {
    /// The store's folder of this feature version.
    pub store: String,
    /// Calibration rows (whole puzzles and proxies) the files give.
    pub rows: usize,
    /// Of them, held by the store before this run.
    pub stored_before: usize,
    /// Computed by this run (this shard's missing rows).
    pub computed: usize,
    /// Still missing after this run (every shard's).
    pub missing: usize,
    /// Engine CPU-seconds per computed row, when any was computed.
    pub engine_cpu_seconds_per_row: Option<f64>,
    /// CPU-seconds per computed row, the engines' and this process's (the
    /// nets, the board facts) together.
    pub cpu_seconds_per_row: Option<f64>,
}

impl ExtractionReport {
    pub fn human(&self) -> String {
        format!(
            "features: {} calibration rows, {} stored before, {} computed now{}, {} still missing \
             (store {})\n",
            self.rows,
            self.stored_before,
            self.computed,
            self.cpu_seconds_per_row
                .zip(self.engine_cpu_seconds_per_row)
                .map(|(all, engine)| format!(
                    " ({all:.2} CPU-s a row, {engine:.2} of it the engine's)"
                ))
                .unwrap_or_default(),
            self.missing,
            self.store
        )
    }
}

/// CPU seconds so far: the engines' (every process of the pool) and this
/// process's own (the nets, the board facts).
fn cpu_seconds(pool: &EnginePool) -> (f64, f64) {
    let engines = pool.stats().iter().map(|s| s.process_cpu_seconds).sum();
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let own = if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0 {
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        seconds(usage.ru_utime) + seconds(usage.ru_stime)
    } else {
        0.0
    };
    (engines, own)
}

/// The features of every calibration row, from the store where it holds
/// them and computed otherwise (batch by batch into the store, when there
/// is one), as the store keeps them. Rows neither stored nor computed
/// (`--stored-only`, or another shard's) are `None`.
fn calibration_features(
    pool: &EnginePool,
    nets: &MaiaNets,
    candidates: &[Puzzle],
    config: &RateConfig,
    settings: &FeatureSettings,
    job: &FeatureJob,
) -> Result<(Vec<Option<Features>>, ExtractionReport)> {
    let mut store = job
        .store
        .map(|root| FeatureStore::open(root, settings))
        .transpose()?;
    let mut features: Vec<Option<Features>> = candidates
        .iter()
        .map(|p| store.as_ref().and_then(|s| s.get(p)).cloned())
        .collect();
    let stored_before = features.iter().filter(|f| f.is_some()).count();
    // The store's order: by content hash, so that a store filled part of
    // the way holds a sample of every file, band and length.
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by_cached_key(|&i| {
        let (id, content) = row_key(&candidates[i]);
        (content, id)
    });
    let slice = match job.shard {
        Some(shard) => {
            let range = shard.range(order.len() as u64);
            order[range.start as usize..range.end as usize].to_vec()
        }
        None => order,
    };
    let todo: Vec<usize> = if job.stored_only {
        Vec::new()
    } else {
        slice
            .into_iter()
            .filter(|&i| features[i].is_none())
            .collect()
    };
    let bar = crate::core::progress::items(todo.len() as u64, "features");
    let cpu_before = cpu_seconds(pool);
    let batch = if store.is_some() {
        ROWS_PER_PART
    } else {
        todo.len().max(1)
    };
    for chunk in todo.chunks(batch) {
        let targets: Vec<&Puzzle> = chunk.iter().map(|&i| &candidates[i]).collect();
        let computed = compute_features_with(
            pool,
            nets,
            &targets,
            &config.signals,
            config.seed,
            config.baseline,
            &bar,
        )?;
        let computed: Vec<Features> = computed.into_iter().map(stored).collect();
        if let Some(store) = store.as_mut() {
            let rows: Vec<(&Puzzle, Features)> = targets
                .iter()
                .copied()
                .zip(computed.iter().cloned())
                .collect();
            store.add_part(&rows)?;
        }
        for (&i, f) in chunk.iter().zip(computed) {
            features[i] = Some(f);
        }
    }
    bar.finish_and_clear();
    let cpu_after = cpu_seconds(pool);
    let engine_cpu = cpu_after.0 - cpu_before.0;
    let all_cpu = engine_cpu + cpu_after.1 - cpu_before.1;
    let per_row = |cpu: f64| (!todo.is_empty()).then(|| cpu / todo.len() as f64);
    let report = ExtractionReport {
        store: store
            .as_ref()
            .map(|s| s.folder().display().to_string())
            .unwrap_or_default(),
        rows: candidates.len(),
        stored_before,
        computed: todo.len(),
        missing: features.iter().filter(|f| f.is_none()).count(),
        engine_cpu_seconds_per_row: per_row(engine_cpu),
        cpu_seconds_per_row: per_row(all_cpu),
    };
    Ok((features, report))
}

/// Everything the figures are computed from.
struct Calibration<'a> {
    rows: &'a CalibrationRows,
    features: &'a [Features],
    lengths: Vec<usize>,
    /// Each row's model group ([`MODEL_GROUPS`]).
    groups: Vec<usize>,
    ratings: Vec<f64>,
    /// Each row's weight for how certain its rating is.
    certainty: Vec<f64>,
    config: &'a RateConfig,
}

impl Calibration<'_> {
    /// The rows to fit on among `index`, with weights.
    fn fit_rows(&self, index: &[usize]) -> FitRows<'_> {
        let y: Vec<f64> = index.iter().map(|&i| self.ratings[i]).collect();
        let proxy: Vec<bool> = index.iter().map(|&i| self.rows.proxy[i]).collect();
        let weight = band_weights(&y, &proxy, &self.config.trees)
            .into_iter()
            .zip(index)
            .map(|(w, &i)| w * self.certainty[i])
            .collect();
        FitRows {
            x: index
                .iter()
                .map(|&i| self.features[i].values.as_slice())
                .collect(),
            weight,
            y,
            group: index.iter().map(|&i| self.groups[i]).collect(),
            fold: index.iter().map(|&i| self.rows.inner_key(i)).collect(),
            proxy,
        }
    }

    fn fold_rows(&self, fold: usize) -> (Vec<usize>, Vec<usize>) {
        (0..self.ratings.len()).partition(|&i| self.rows.fold(i) != fold)
    }

    /// Held-out estimates and deviations of the model: each fold rated by
    /// the model fitted on the other folds.
    fn model_out_of_fold(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        let fits: Vec<Result<FoldRated>> = (0..self.rows.folds)
            .into_par_iter()
            .map(|fold| {
                let (train, held) = self.fold_rows(fold);
                let estimator = Estimator::fit(
                    &self.fit_rows(&train),
                    MODEL_GROUPS.len(),
                    &self.config.trees,
                )?;
                let rated = held
                    .iter()
                    .map(|&i| {
                        let estimate = estimator
                            .estimate(&self.features[i].values, self.groups[i])
                            .clamp(RATING_FLOOR, RATING_CEILING);
                        let deviation = estimator.deviations.deviation(self.groups[i], estimate);
                        (estimate, deviation)
                    })
                    .collect();
                Ok((held, rated))
            })
            .collect();
        self.scatter(fits)
    }

    /// Held-out estimates and deviations of the format-2 reference.
    fn reference_out_of_fold(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        let fits: Vec<Result<FoldRated>> = (0..self.rows.folds)
            .into_par_iter()
            .map(|fold| {
                let (train, held) = self.fold_rows(fold);
                let reference = self.fit_reference(&train);
                let rated = held
                    .iter()
                    .map(|&i| {
                        let estimate = reference
                            .predict(self.groups[i], self.reference_x(i))
                            .clamp(RATING_FLOOR, RATING_CEILING);
                        (estimate, reference.deviation[self.groups[i]])
                    })
                    .collect();
                Ok((held, rated))
            })
            .collect();
        self.scatter(fits)
    }

    fn scatter(&self, fits: Vec<Result<FoldRated>>) -> Result<(Vec<f64>, Vec<f64>)> {
        let n = self.ratings.len();
        let (mut estimate, mut deviation) = (vec![0.0; n], vec![0.0; n]);
        for fit in fits {
            let (held, rated) = fit?;
            for (i, (e, d)) in held.into_iter().zip(rated) {
                estimate[i] = e;
                deviation[i] = d;
            }
        }
        Ok((estimate, deviation))
    }

    fn reference_x(&self, row: usize) -> &[f64] {
        &self.features[row].values[..FORMAT_2_FEATURES]
    }

    /// The format-2 model on `train`: a ridge fit per model group, and as
    /// each group's deviation the RMSE of its inner out-of-fold misses.
    fn fit_reference(&self, train: &[usize]) -> ReferenceFit {
        let inner_folds = self.config.trees.inner_folds.max(2);
        let mut misses: Vec<Vec<f64>> = vec![Vec::new(); MODEL_GROUPS.len()];
        for inner in 0..inner_folds {
            let (fit_on, held): (Vec<usize>, Vec<usize>) = train
                .iter()
                .partition(|&&i| self.rows.inner_key(i) % inner_folds != inner);
            let fit = self.ridge_groups(&fit_on, 0.0);
            for &i in &held {
                let g = self.groups[i];
                misses[g].push(fit.predict(g, self.reference_x(i)) - self.ratings[i]);
            }
        }
        let deviation = misses
            .iter()
            .map(|m| {
                if m.is_empty() {
                    500.0
                } else {
                    (m.iter().map(|d| d * d).sum::<f64>() / m.len() as f64).sqrt()
                }
            })
            .collect();
        ReferenceFit {
            deviation,
            ..self.ridge_groups(train, 0.0)
        }
    }

    fn ridge_groups(&self, rows: &[usize], fallback: f64) -> ReferenceFit {
        let mean = if rows.is_empty() {
            fallback
        } else {
            rows.iter().map(|&i| self.ratings[i]).sum::<f64>() / rows.len() as f64
        };
        let fits = (0..MODEL_GROUPS.len())
            .map(|g| {
                let members: Vec<usize> = rows
                    .iter()
                    .copied()
                    .filter(|&i| self.groups[i] == g)
                    .collect();
                let xs: Vec<Vec<f64>> = members
                    .iter()
                    .map(|&i| self.reference_x(i).to_vec())
                    .collect();
                let ys: Vec<f64> = members.iter().map(|&i| self.ratings[i]).collect();
                if xs.len() < 2 {
                    None
                } else {
                    RidgeFit::fit(&xs, &ys, self.config.ridge)
                }
            })
            .collect();
        ReferenceFit {
            fits,
            mean,
            deviation: vec![500.0; MODEL_GROUPS.len()],
        }
    }
}

/// A fold's held-out rows and their (estimate, deviation).
type FoldRated = (Vec<usize>, Vec<(f64, f64)>);

/// A fitted format-2 reference model.
struct ReferenceFit {
    fits: Vec<Option<RidgeFit>>,
    /// The training rows' mean rating, for a group without a fit.
    mean: f64,
    deviation: Vec<f64>,
}

impl ReferenceFit {
    fn predict(&self, group: usize, x: &[f64]) -> f64 {
        self.fits[group]
            .as_ref()
            .map_or(self.mean, |fit| fit.predict(x))
    }
}

/// What a calibration made: the model with its held-out figures, or only
/// features (`--features-only`, `--shard`).
pub struct Calibrated {
    pub model: Option<RatingModel>,
    pub report: Option<CalibrationReport>,
    pub extraction: ExtractionReport,
}

/// Computes (or reads from the store) the features of the calibration
/// rows, measures held-out figures, and fits the final model on every row.
pub fn calibrate(
    pool: &EnginePool,
    nets: &MaiaNets,
    files: &[PathBuf],
    config: &RateConfig,
    job: &FeatureJob,
) -> Result<Calibrated> {
    let (lichess, skipped) = read_calibration(files, config)?;
    let maia = MaiaSpec::of_dir_of(nets, config)?;
    let settings = FeatureSettings {
        engine: pool.engine_id().to_string(),
        seed: config.seed,
        signals: config.signals.clone(),
        maia: maia.clone(),
        features: feature_names().iter().map(|s| s.to_string()).collect(),
    };
    let (candidates, candidate_proxy) = candidate_rows(lichess, config);
    let (features, extraction) =
        calibration_features(pool, nets, &candidates, config, &settings, job)?;
    if job.features_only || job.shard.is_some() {
        return Ok(Calibrated {
            model: None,
            report: None,
            extraction,
        });
    }
    // The rows with features (all of them, unless `--stored-only`).
    let mut puzzles = Vec::new();
    let mut proxy = Vec::new();
    let mut kept = Vec::new();
    for ((puzzle, is_proxy), f) in candidates.into_iter().zip(candidate_proxy).zip(features) {
        if let Some(f) = f {
            puzzles.push(puzzle);
            proxy.push(is_proxy);
            kept.push(f);
        }
    }
    let features = kept;
    let lichess_rows = proxy.iter().filter(|p| !**p).count();
    if lichess_rows < 2 * config.folds as usize {
        return Err(bad_input(format!(
            "calibration needs at least {} rated puzzles with features, {} have them \
             ({} missing from the store)",
            2 * config.folds,
            lichess_rows,
            extraction.missing
        )));
    }
    let rows = CalibrationRows::new(puzzles, proxy, config);
    if let Some(path) = job.table {
        write_features(path, &rows, &features, &settings.features)?;
    }
    let lengths: Vec<usize> = rows.puzzles.iter().map(Puzzle::solver_moves).collect();
    let calibration = Calibration {
        rows: &rows,
        features: &features,
        groups: lengths
            .iter()
            .zip(&features)
            .map(|(&length, f)| model_group(length, mates(f)))
            .collect(),
        lengths,
        ratings: rows
            .puzzles
            .iter()
            .map(|p| f64::from(p.rating.unwrap_or_default()))
            .collect(),
        certainty: rows
            .puzzles
            .iter()
            .map(|p| certainty_weight(p.rating_deviation))
            .collect(),
        config,
    };
    let model_rated = calibration.model_out_of_fold()?;
    let reference_rated = calibration.reference_out_of_fold()?;
    let held_out = held_out_figures(&calibration, &model_rated, &reference_rated);
    let bands = band_tables(&calibration, &model_rated.0, &reference_rated.0);
    let reach = reach_figures(&calibration, &model_rated.0);
    let everything: Vec<usize> = (0..rows.puzzles.len()).collect();
    let estimator = Estimator::fit(
        &calibration.fit_rows(&everything),
        MODEL_GROUPS.len(),
        &config.trees,
    )?;
    let model = RatingModel {
        format: MODEL_FORMAT,
        engine: pool.engine_id().to_string(),
        seed: config.seed,
        signals: config.signals.clone(),
        maia,
        trees_config: config.trees.clone(),
        rows: rows.puzzles.len(),
        features: settings.features.clone(),
        groups: MODEL_GROUPS.iter().map(|s| s.to_string()).collect(),
        estimator,
    };
    let report = CalibrationReport {
        files: files.iter().map(|f| f.display().to_string()).collect(),
        rows: lichess_rows,
        proxy_rows: rows.proxy.iter().filter(|p| **p).count(),
        games: rows.games,
        skipped,
        cached_rows: extraction.stored_before,
        folds: config.folds,
        seed: config.seed,
        held_out,
        bands,
        reach,
    };
    Ok(Calibrated {
        model: Some(model),
        report: Some(report),
        extraction,
    })
}

/// The weight of a calibration row for how certain its rating is: a
/// Lichess rating is the truth plus noise of its rating deviation (RD), so
/// a row's miss has the model's own error and that noise in it, and the
/// least-squares weight is the inverse of their summed variances, relative
/// to a row of typical RD. Rows without an RD (snapshots that dropped the
/// column kept only puzzles of RD at most 90) count as typical.
pub(crate) fn certainty_weight(rating_deviation: Option<i32>) -> f64 {
    let rd = rating_deviation.map_or(TYPICAL_RATING_DEVIATION, f64::from);
    let model = MODEL_ERROR * MODEL_ERROR;
    (model + TYPICAL_RATING_DEVIATION * TYPICAL_RATING_DEVIATION) / (model + rd * rd)
}

/// The model's typical miss (rating points) the certainty weight adds the
/// rating's own noise to: about the held-out RMSE.
const MODEL_ERROR: f64 = 250.0;
/// The median rating deviation of rated Lichess puzzles.
const TYPICAL_RATING_DEVIATION: f64 = 90.0;

impl MaiaSpec {
    /// The spec of the nets a calibration loaded (from `[rate] maia`, else
    /// `models/maia`).
    fn of_dir_of(nets: &MaiaNets, config: &RateConfig) -> Result<Self> {
        let dir = config
            .maia
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_MODELS_DIR));
        let spec = MaiaSpec::of_dir(&dir)?;
        if spec.ratings != nets.ratings() {
            return Err(bad_input(
                "rate: the nets loaded are not the nine Maia-1 nets",
            ));
        }
        Ok(spec)
    }
}

/// A group of calibration rows the figures are given for.
struct ReportGroup {
    name: String,
    members: Vec<usize>,
}

/// The report's groups in order: every Lichess puzzle as it is, each length
/// group, mates and the rest, the single-move non-mate puzzles (most
/// generated puzzles' shape), and the single-move proxies.
fn report_groups(calibration: &Calibration) -> Vec<ReportGroup> {
    let rows = calibration.rows;
    let lengths = &calibration.lengths;
    let mate = |i: usize| mates(&calibration.features[i]);
    let select = |name: &str, keep: &dyn Fn(usize) -> bool| ReportGroup {
        name: name.to_string(),
        members: (0..lengths.len()).filter(|&i| keep(i)).collect(),
    };
    let mut groups = vec![select("all", &|i| !rows.proxy[i])];
    for (g, (name, _, _)) in LENGTH_GROUPS.iter().enumerate() {
        groups.push(select(name, &|i| {
            !rows.proxy[i] && group_of(lengths[i]) == g
        }));
    }
    groups.push(select("mates", &|i| !rows.proxy[i] && mate(i)));
    groups.push(select("non-mates", &|i| !rows.proxy[i] && !mate(i)));
    groups.push(select("1 non-mate", &|i| {
        !rows.proxy[i] && lengths[i] == 1 && !mate(i)
    }));
    groups.push(select("1 proxy", &|i| rows.proxy[i]));
    groups.retain(|g| !g.members.is_empty());
    groups
}

fn rmse(predicted: &[f64], truth: &[f64]) -> f64 {
    (predicted
        .iter()
        .zip(truth)
        .map(|(p, t)| (p - t).powi(2))
        .sum::<f64>()
        / truth.len().max(1) as f64)
        .sqrt()
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

fn within(estimate: &[f64], deviation: &[f64], truth: &[f64]) -> f64 {
    let hits = estimate
        .iter()
        .zip(deviation)
        .zip(truth)
        .filter(|((e, d), t)| (*e - *t).abs() <= **d)
        .count();
    hits as f64 / truth.len().max(1) as f64
}

/// Held-out figures per group, for the model and the reference on the
/// same folds, with the plain-ladder and length-only baselines beside them.
fn held_out_figures(
    calibration: &Calibration,
    (estimate, deviation): &(Vec<f64>, Vec<f64>),
    (reference, reference_deviation): &(Vec<f64>, Vec<f64>),
) -> Vec<HeldOut> {
    let baseline: Option<Vec<f64>> = calibration
        .features
        .iter()
        .map(|f| f.baseline_solve_rate.map(|r| -r))
        .collect();
    let length_values: Vec<f64> = calibration.lengths.iter().map(|&l| l as f64).collect();
    let ratings = &calibration.ratings;
    report_groups(calibration)
        .into_iter()
        .map(|group| {
            let members = &group.members;
            let truth = pick(ratings, members);
            let (e, d) = (pick(estimate, members), pick(deviation, members));
            let (r, rd) = (pick(reference, members), pick(reference_deviation, members));
            HeldOut {
                group: group.name,
                rows: members.len(),
                spearman: spearman(&e, &truth),
                rmse: rmse(&e, &truth),
                bias: mean(&e) - mean(&truth),
                within_deviation: within(&e, &d, &truth),
                reference_spearman: spearman(&r, &truth),
                reference_rmse: rmse(&r, &truth),
                reference_bias: mean(&r) - mean(&truth),
                reference_within_deviation: within(&r, &rd, &truth),
                baseline_spearman: baseline
                    .as_ref()
                    .and_then(|b| spearman(&pick(b, members), &truth)),
                length_spearman: spearman(&pick(&length_values, members), &truth),
            }
        })
        .collect()
}

/// The figures by 400-point band of the estimate of `members`.
fn band_figures(estimate: &[f64], ratings: &[f64], members: &[usize]) -> Vec<BandFigures> {
    let mut by_band: std::collections::BTreeMap<i32, Vec<usize>> = Default::default();
    for &i in members {
        let band = ((estimate[i] / BAND_WIDTH).floor() * BAND_WIDTH) as i32;
        by_band.entry(band).or_default().push(i);
    }
    by_band
        .into_iter()
        .map(|(band, rows)| {
            let e = pick(estimate, &rows);
            let t = pick(ratings, &rows);
            let mean_rating = mean(&t);
            BandFigures {
                band,
                rows: rows.len(),
                mean_estimate: mean(&e),
                mean_rating,
                miss: mean_rating - mean(&e),
                rating_std: (t.iter().map(|r| (r - mean_rating).powi(2)).sum::<f64>()
                    / t.len().max(1) as f64)
                    .sqrt(),
            }
        })
        .collect()
}

/// Band tables of every Lichess puzzle and of the proxies.
fn band_tables(calibration: &Calibration, estimate: &[f64], reference: &[f64]) -> Vec<BandTable> {
    report_groups(calibration)
        .into_iter()
        .filter(|g| g.name == "all" || g.name == "1 proxy")
        .map(|g| BandTable {
            model: band_figures(estimate, &calibration.ratings, &g.members),
            reference: band_figures(reference, &calibration.ratings, &g.members),
            group: g.name,
        })
        .collect()
}

/// Width of the bands of the reach figures.
const REACH_BAND: f64 = 200.0;
/// The rating range releases draw from, where ranking is measured.
const RELEASE_RANGE: (f64, f64) = (400.0, 2800.0);

/// The figures the model is held to ([`ReachFigures`]).
fn reach_figures(calibration: &Calibration, estimate: &[f64]) -> ReachFigures {
    let rows = calibration.rows;
    let ratings = &calibration.ratings;
    let lengths = &calibration.lengths;
    let whole: Vec<usize> = (0..ratings.len()).filter(|&i| !rows.proxy[i]).collect();
    let in_range = |i: &usize| (RELEASE_RANGE.0..=RELEASE_RANGE.1).contains(&ratings[*i]);
    let length_groups: [(&str, usize, usize); 5] = [
        ("all", 1, usize::MAX),
        ("1", 1, 1),
        ("2", 2, 2),
        ("3-5", 3, 5),
        ("6+", 6, usize::MAX),
    ];
    let in_range = length_groups
        .iter()
        .map(|(name, lo, hi)| {
            let members: Vec<usize> = whole
                .iter()
                .copied()
                .filter(|i| in_range(i) && (*lo..=*hi).contains(&lengths[*i]))
                .collect();
            let (e, t) = (pick(estimate, &members), pick(ratings, &members));
            InRangeFigures {
                group: name.to_string(),
                rows: members.len(),
                spearman: spearman(&e, &t),
                rmse: rmse(&e, &t),
            }
        })
        .collect();
    let generated_shape: Vec<usize> = whole
        .iter()
        .copied()
        .filter(|&i| lengths[i] == 1 && !mates(&calibration.features[i]))
        .collect();
    let groups = [("all", whole), ("1 non-mate", generated_shape)]
        .into_iter()
        .filter(|(_, members)| !members.is_empty())
        .map(|(name, members)| group_reach(name, &members, estimate, ratings))
        .collect();
    ReachFigures { in_range, groups }
}

fn group_reach(name: &str, members: &[usize], estimate: &[f64], ratings: &[f64]) -> GroupReach {
    let mut by_band: std::collections::BTreeMap<i32, Vec<usize>> = Default::default();
    for &i in members {
        let band = ((estimate[i] / REACH_BAND).floor() * REACH_BAND) as i32;
        by_band.entry(band).or_default().push(i);
    }
    let bands = by_band
        .into_iter()
        .map(|(band, rows)| {
            let e = mean(&pick(estimate, &rows));
            ReachBand {
                band,
                rows: rows.len(),
                mean_estimate: e,
                miss: mean(&pick(ratings, &rows)) - e,
            }
        })
        .collect();
    let ends = [
        ("above 2600", (|r: f64| r > 2600.0) as fn(f64) -> bool),
        ("at or below 700", |r: f64| r <= 700.0),
    ]
    .into_iter()
    .map(|(end, at)| {
        let rows: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| at(estimate[i]))
            .collect();
        let true_rows = members.iter().filter(|&&i| at(ratings[i])).count();
        EndFigures {
            end: end.to_string(),
            rows: rows.len(),
            share: rows.len() as f64 / members.len().max(1) as f64,
            true_share: true_rows as f64 / members.len().max(1) as f64,
            miss: mean(&pick(ratings, &rows)) - mean(&pick(estimate, &rows)),
        }
    })
    .collect();
    let values = pick(estimate, members);
    GroupReach {
        group: name.to_string(),
        rows: members.len(),
        lowest_estimate: values.iter().copied().fold(f64::INFINITY, f64::min),
        highest_estimate: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        bands,
        ends,
    }
}
