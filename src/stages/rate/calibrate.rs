//! Calibration of the rating model: the Lichess rows and their single-move
//! proxies, folds by source game, the features (from and into the feature
//! store, [`super::store`]), held-out figures ([`super::figures`]), the
//! learning curve, and the final fit.
//!
//! Every held-out figure is honest end to end: each row's trees' output
//! comes from trees fitted on the other folds, and the recalibration,
//! shifts and deviations that turn it into the row's estimate are fitted
//! on the other folds' outputs only. The final model's trees are fitted on
//! every row, its recalibration on every row's out-of-fold output: one
//! fit per fold and one more, which is what lets a calibration read
//! hundreds of thousands of rows on two cores.

use anyhow::{Context, Result};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::config::*;
use super::features::{Features, feature_names};
use super::figures::{Figures, Scored, rmse};
use super::fit::*;
use super::model::{Estimator, FitRows, Trees, band_weights, fit_trees, out_of_fold, pick};
use super::store::{FeatureSettings, FeatureStore, ROWS_PER_PART, row_key, stored};
use crate::chess::columns::Column;
use crate::chess::derive::{RatingSource, TYPICAL_RATING_DEVIATION};
use crate::chess::record::Puzzle;
use crate::core::error::bad_input;
use crate::core::seed::{self, Domain, Key};
use crate::core::shard::Shard;
use crate::engine::process::own_cpu_seconds;
use crate::maia::{DEFAULT_MODELS_DIR, MaiaNets};

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
    /// Rows whose features came from the feature store.
    pub cached_rows: usize,
    pub folds: u32,
    pub seed: u64,
    /// Held out, fold by fold.
    pub figures: Figures,
    /// Held-out RMSE of fold 0 against the rows the trees were fitted on.
    pub learning_curve: Vec<CurvePoint>,
}

/// One point of the learning curve: trees fitted on the first `rows`
/// whole puzzles (with their proxies) of folds 1 and up, in the seeded
/// game order, scored on fold 0's whole puzzles.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Whole puzzles fitted on.
    pub rows: usize,
    /// Held-out RMSE of the trees' raw output (before the recalibration,
    /// which would cost a fit per fold at every point), over every whole
    /// puzzle of fold 0 and over those rated 400-2800.
    pub rmse: f64,
    pub rmse_in_range: f64,
    pub spearman: Option<f64>,
}

impl CalibrationReport {
    pub fn human(&self) -> String {
        let mut out = format!(
            "calibration: {} rows + {} single-move proxies from {} ({} skipped, {} rows' \
             features stored before), {}-fold held-out grouped by source game ({} games), seed {}\n",
            self.rows,
            self.proxy_rows,
            self.files.join(", "),
            self.skipped,
            self.cached_rows,
            self.folds,
            self.games,
            self.seed
        );
        out.push_str(&self.figures.human());
        if !self.learning_curve.is_empty() {
            out.push_str("  learning curve (fold 0 held out; the trees' raw output): rows  rmse  rmse 400-2800  spearman\n");
            for p in &self.learning_curve {
                out.push_str(&format!(
                    "    {:>8}  {:>4.0}  {:>4.0}  {}\n",
                    p.rows,
                    p.rmse,
                    p.rmse_in_range,
                    p.spearman
                        .map(|s| format!("{s:.3}"))
                        .unwrap_or_else(|| "-".into())
                ));
            }
        }
        out
    }
}

/// A calibration row: a puzzle rated by Lichess players. Rows of the dump
/// say how many played it; rows that carry a rating without play counts
/// count too, unless the rating is puzzleforge's own estimate.
pub(crate) fn rated_by_players(puzzle: &Puzzle) -> bool {
    puzzle.rating.is_some()
        && puzzle.nb_plays.is_none_or(|n| n > 0)
        && puzzle.get(Column::RatingSource.name()) != Some(RatingSource::Estimated.as_str())
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
    /// Per row: its source game's place in the seeded game order. Its
    /// fold is `place % folds`.
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
}

/// Writes the calibration rows' features as CSV (`--features-out`): id,
/// solver moves, rating, whether the row is a proxy, its fold, then the
/// features. A table to read, not a cache: the store keeps rows for refits.
fn write_features(
    path: &Path,
    rows: &CalibrationRows,
    features: &[Features],
    names: &[String],
) -> Result<()> {
    let mut text = String::from("PuzzleId,SolverMoves,Rating,proxy,fold");
    for name in names {
        text.push(',');
        text.push_str(name);
    }
    text.push('\n');
    for (i, (puzzle, f)) in rows.puzzles.iter().zip(features).enumerate() {
        text.push_str(&format!(
            "{},{},{},{},{}",
            puzzle.id,
            puzzle.solver_moves(),
            puzzle.rating.unwrap_or_default(),
            rows.proxy[i],
            rows.fold(i),
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
    /// CPU-seconds of this process per computed row (the nets, the board
    /// facts, reading and writing the store), when any was computed.
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
                .map(|cpu| format!(" ({cpu:.4} CPU-s a row)"))
                .unwrap_or_default(),
            self.missing,
            self.store
        )
    }
}

/// The features of every calibration row, from the store where it holds
/// them and computed otherwise (batch by batch into the store, when there
/// is one), as the store keeps them. Rows neither stored nor computed
/// (`--stored-only`, or another shard's) are `None`.
fn calibration_features(
    nets: &MaiaNets,
    candidates: &[Puzzle],
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
    let cpu_before = own_cpu_seconds();
    let batch = if store.is_some() {
        ROWS_PER_PART
    } else {
        todo.len().max(1)
    };
    for chunk in todo.chunks(batch) {
        let targets: Vec<&Puzzle> = chunk.iter().map(|&i| &candidates[i]).collect();
        let computed = compute_features_with(nets, &targets, &bar)?;
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
    crate::core::progress::finish(&bar);
    let cpu = own_cpu_seconds() - cpu_before;
    let report = ExtractionReport {
        store: store
            .as_ref()
            .map(|s| s.folder().display().to_string())
            .unwrap_or_default(),
        rows: candidates.len(),
        stored_before,
        computed: todo.len(),
        missing: features.iter().filter(|f| f.is_none()).count(),
        cpu_seconds_per_row: (!todo.is_empty()).then(|| cpu / todo.len() as f64),
    };
    Ok((features, report))
}

/// Everything the figures are computed from.
struct Calibration<'a> {
    rows: &'a CalibrationRows,
    features: &'a [Features],
    lengths: Vec<usize>,
    mates: Vec<bool>,
    /// Each row's model group ([`MODEL_GROUPS`]).
    groups: Vec<usize>,
    ratings: Vec<f64>,
    /// Each row's weight for how certain its rating is.
    certainty: Vec<f64>,
    config: &'a RateConfig,
}

impl Calibration<'_> {
    /// The held-out figures of the out-of-fold `output` of `all`.
    fn figures(&self, all: &FitRows, output: &[f64]) -> Result<Figures> {
        let (estimate, deviation) = self.held_out(all, output)?;
        Ok(Figures::of(&Scored {
            estimate,
            deviation,
            rating: self.ratings.clone(),
            length: self.lengths.clone(),
            mate: self.mates.clone(),
            proxy: self.rows.proxy.clone(),
        }))
    }

    /// The final trees on `all` and the learning curve at `curve`'s sizes
    /// (none when empty). The fits are independent: one core each (a tree
    /// fit is single-threaded, for its bits).
    fn final_fits(
        &self,
        all: &FitRows,
        output: &[f64],
        curve: &[usize],
    ) -> Result<(Trees, Vec<CurvePoint>)> {
        let (trees, learning_curve) = rayon::join(
            || fit_trees(all, &self.config.trees),
            || {
                if curve.is_empty() {
                    Ok(Vec::new())
                } else {
                    self.learning_curve(curve, all, output)
                }
            },
        );
        Ok((trees?, learning_curve?))
    }

    /// The rows to fit on among `index`, with weights. A row's `fold` key
    /// is its game's place: `place % folds` is its outer fold.
    fn fit_rows(&self, index: &[usize]) -> FitRows<'_> {
        let y: Vec<f64> = index.iter().map(|&i| self.ratings[i]).collect();
        let proxy: Vec<bool> = index.iter().map(|&i| self.rows.proxy[i]).collect();
        let trees = &self.config.trees;
        let weighed = |balance: f64| -> Vec<f64> {
            band_weights(&y, &proxy, balance, trees)
                .into_iter()
                .zip(index)
                .map(|(w, &i)| w * self.certainty[i])
                .collect()
        };
        let (weight, map_weight) = (weighed(trees.band_balance), weighed(trees.map_band_balance));
        FitRows {
            x: index
                .iter()
                .map(|&i| self.features[i].values.as_slice())
                .collect(),
            weight,
            map_weight,
            y,
            group: index.iter().map(|&i| self.groups[i]).collect(),
            fold: index.iter().map(|&i| self.rows.place[i]).collect(),
            proxy,
        }
    }

    /// Held-out estimates and deviations of every row from the rows'
    /// out-of-fold `output`: fold `k`'s map (recalibration, shifts,
    /// deviations) is fitted on the other folds' outputs.
    fn held_out(&self, all: &FitRows, output: &[f64]) -> Result<(Vec<f64>, Vec<f64>)> {
        let n = self.ratings.len();
        let (mut estimate, mut deviation) = (vec![0.0; n], vec![0.0; n]);
        for fold in 0..self.rows.folds {
            let (train, held): (Vec<usize>, Vec<usize>) =
                (0..n).partition(|&i| self.rows.fold(i) != fold);
            let map = Estimator::from_outputs(
                Default::default(),
                &all.subset(&train),
                &pick(output, &train),
                MODEL_GROUPS.len(),
            )?;
            for i in held {
                let group = self.groups[i];
                let e = (map.recalibration.apply(output[i]) + map.shifts.shift(group))
                    .clamp(RATING_FLOOR, RATING_CEILING);
                estimate[i] = e;
                deviation[i] = map.deviations.deviation(group, e);
            }
        }
        Ok((estimate, deviation))
    }

    /// The learning curve ([`CurvePoint`]): trees fitted on growing
    /// prefixes of folds 1 and up, scored on fold 0; the last point, every
    /// row of folds 1 and up, is the out-of-fold `output` itself.
    fn learning_curve(
        &self,
        sizes: &[usize],
        all: &FitRows,
        output: &[f64],
    ) -> Result<Vec<CurvePoint>> {
        let n = self.ratings.len();
        let held: Vec<usize> = (0..n)
            .filter(|&i| self.rows.fold(i) == 0 && !self.rows.proxy[i])
            .collect();
        let mut train: Vec<usize> = (0..n).filter(|&i| self.rows.fold(i) != 0).collect();
        // By game place: a prefix holds whole games, puzzles with proxies.
        train.sort_by_key(|&i| (self.rows.place[i], i));
        let whole_in_train = train.iter().filter(|&&i| !self.rows.proxy[i]).count();
        let score = |predicted: &[f64]| {
            let truth = pick(&self.ratings, &held);
            let in_range: Vec<usize> = (0..held.len())
                .filter(|&k| (400.0..=2800.0).contains(&truth[k]))
                .collect();
            (
                rmse(predicted, &truth),
                rmse(&pick(predicted, &in_range), &pick(&truth, &in_range)),
                spearman(predicted, &truth),
            )
        };
        let mut points = Vec::new();
        for &size in sizes.iter().filter(|&&s| s < whole_in_train) {
            let mut taken = 0;
            let prefix: Vec<usize> = train
                .iter()
                .copied()
                .take_while(|&i| {
                    if !self.rows.proxy[i] {
                        taken += 1;
                    }
                    taken <= size
                })
                .collect();
            let trees = fit_trees(&all.subset(&prefix), &self.config.trees)?;
            let predicted: Vec<f64> = held
                .iter()
                .map(|&i| trees.predict_whole(&self.features[i].values))
                .collect();
            let (rmse, rmse_in_range, spearman) = score(&predicted);
            points.push(CurvePoint {
                rows: size,
                rmse,
                rmse_in_range,
                spearman,
            });
        }
        let (rmse, rmse_in_range, spearman) = score(&pick(output, &held));
        points.push(CurvePoint {
            rows: whole_in_train,
            rmse,
            rmse_in_range,
            spearman,
        });
        Ok(points)
    }
}

/// The calibration rows that have features (all of them, unless
/// `--stored-only`): the puzzles, which are proxies, and their features;
/// an error when fewer than two rated puzzles per fold have them.
fn rows_with_features(
    candidates: Vec<Puzzle>,
    candidate_proxy: Vec<bool>,
    features: Vec<Option<Features>>,
    config: &RateConfig,
    missing: usize,
) -> Result<(Vec<Puzzle>, Vec<bool>, Vec<Features>)> {
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
    let lichess_rows = proxy.iter().filter(|p| !**p).count();
    if lichess_rows < 2 * config.folds as usize {
        return Err(bad_input(format!(
            "calibration needs at least {} rated puzzles with features, {} have them \
             ({missing} missing from the store)",
            2 * config.folds,
            lichess_rows,
        )));
    }
    Ok((puzzles, proxy, kept))
}

impl<'a> Calibration<'a> {
    /// The fit's view of `rows`: each row's length, mate, model group,
    /// true rating and certainty weight.
    fn of(rows: &'a CalibrationRows, features: &'a [Features], config: &'a RateConfig) -> Self {
        let lengths: Vec<usize> = rows.puzzles.iter().map(Puzzle::solver_moves).collect();
        let mates: Vec<bool> = features.iter().map(mates).collect();
        Self {
            rows,
            features,
            groups: lengths
                .iter()
                .zip(&mates)
                .map(|(&length, &mate)| model_group(length, mate))
                .collect(),
            lengths,
            mates,
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
        }
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
/// rows, measures held-out figures (and the learning curve at `curve`'s
/// sizes), and fits the final model on every row.
pub fn calibrate(
    nets: &MaiaNets,
    files: &[PathBuf],
    config: &RateConfig,
    job: &FeatureJob,
    curve: &[usize],
) -> Result<Calibrated> {
    let (lichess, skipped) = read_calibration(files, config)?;
    let maia = MaiaSpec::of_dir_of(nets, config)?;
    let settings = FeatureSettings {
        maia: maia.clone(),
        features: feature_names(),
    };
    let (candidates, candidate_proxy) = candidate_rows(lichess, config);
    let (features, extraction) = calibration_features(nets, &candidates, &settings, job)?;
    if job.features_only || job.shard.is_some() {
        return Ok(Calibrated {
            model: None,
            report: None,
            extraction,
        });
    }
    let (puzzles, proxy, features) = rows_with_features(
        candidates,
        candidate_proxy,
        features,
        config,
        extraction.missing,
    )?;
    let lichess_rows = proxy.iter().filter(|p| !**p).count();
    let rows = CalibrationRows::new(puzzles, proxy, config);
    if let Some(path) = job.table {
        write_features(path, &rows, &features, &settings.features)?;
    }
    let calibration = Calibration::of(&rows, &features, config);
    let everything: Vec<usize> = (0..rows.puzzles.len()).collect();
    let all = calibration.fit_rows(&everything);
    let output = out_of_fold(&all, rows.folds, &config.trees)?;
    let figures = calibration.figures(&all, &output)?;
    let (trees, learning_curve) = calibration.final_fits(&all, &output, curve)?;
    let estimator = Estimator::from_outputs(trees, &all, &output, MODEL_GROUPS.len())?;
    let model = RatingModel {
        format: MODEL_FORMAT,
        maia,
        trees_config: config.trees.clone(),
        rows: rows.puzzles.len(),
        // Proxies are single moves: the longest line is a whole puzzle's.
        longest_line: calibration.lengths.iter().max().copied(),
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
        figures,
        learning_curve,
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
            return Err(bad_input("rate: the nets loaded are not the rating nets"));
        }
        Ok(spec)
    }
}
