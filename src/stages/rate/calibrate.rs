//! Calibration of the rating model: the Lichess rows and their single-move
//! proxies, folds by source game, held-out figures beside the reference
//! model and the ladder alone, and the final per-group fits.

use anyhow::{Context, Result};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use super::*;
use crate::chess::record::Puzzle;
use crate::core::error::bad_input;
use crate::core::seed::{self, Domain, Key};
use crate::engine::pool::EnginePool;

/// Held-out figures of one group of calibration rows.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HeldOut {
    pub group: String,
    pub rows: usize,
    /// Spearman of the model's held-out predictions with the Lichess rating.
    pub spearman: Option<f64>,
    /// Root mean square of the held-out residuals.
    pub rmse: f64,
    /// The same two for the reference model on the same folds: the signals
    /// of rating-model format 1 (the first move's signals and the whole-line
    /// summaries before the line signals), fitted on Lichess puzzles as they
    /// are, without proxies.
    pub reference_spearman: Option<f64>,
    pub reference_rmse: f64,
    /// The same two for a fit on the weakened-player ladder's solve rate
    /// alone, on the same folds.
    pub ladder_spearman: Option<f64>,
    pub ladder_rmse: f64,
    /// Spearman of the plain ladder's solve rate (negated) with the rating,
    /// when measured (`--baseline`).
    pub baseline_spearman: Option<f64>,
    /// Spearman of solver length alone with the rating.
    pub length_spearman: Option<f64>,
}

/// Is the single-move proxy a sound stand-in for a single-move puzzle? A
/// model fitted on genuine single-move Lichess puzzles alone rates the
/// proxies (held out by game), and one fitted on proxies alone rates the
/// genuine puzzles: if the first move carried the whole puzzle's difficulty,
/// both would rank as well as in their own domain and show no bias.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProxyCheck {
    /// Genuine single-move puzzles' model, on the proxies.
    pub genuine_on_proxies_spearman: Option<f64>,
    /// Mean of (estimate - rating): how many points the rest of the line
    /// adds to the first move's difficulty.
    pub genuine_on_proxies_bias: f64,
    /// Proxies' model, on the genuine single-move puzzles.
    pub proxies_on_genuine_spearman: Option<f64>,
    pub proxies_on_genuine_bias: f64,
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
    pub folds: u32,
    pub seed: u64,
    pub held_out: Vec<HeldOut>,
    pub proxy_check: Option<ProxyCheck>,
    /// Held-out Spearman of each single feature's fit, within each group:
    /// which signals carry weight.
    pub single_feature: Vec<(String, Vec<Option<f64>>)>,
}

impl CalibrationReport {
    pub fn human(&self) -> String {
        let fmt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
        let mut out = format!(
            "calibration: {} rows + {} single-move proxies from {} ({} skipped), {}-fold \
             held-out grouped by source game ({} games), seed {}\n",
            self.rows,
            self.proxy_rows,
            self.files.join(", "),
            self.skipped,
            self.folds,
            self.games,
            self.seed
        );
        out.push_str(
            "  group          rows  spearman  rmse | reference  rmse | ladder  rmse | plain  length\n",
        );
        for h in &self.held_out {
            out.push_str(&format!(
                "  {:<13} {:>5}  {:>8}  {:>4.0} | {:>9}  {:>4.0} | {:>6}  {:>4.0} | {:>5}  {:>6}\n",
                h.group,
                h.rows,
                fmt(h.spearman),
                h.rmse,
                fmt(h.reference_spearman),
                h.reference_rmse,
                fmt(h.ladder_spearman),
                h.ladder_rmse,
                fmt(h.baseline_spearman),
                fmt(h.length_spearman)
            ));
        }
        if let Some(check) = &self.proxy_check {
            out.push_str(&format!(
                "  proxy check: single-move model on proxies spearman {} bias {:+.0}; \
                 proxies' model on single-move puzzles spearman {} bias {:+.0}\n",
                fmt(check.genuine_on_proxies_spearman),
                check.genuine_on_proxies_bias,
                fmt(check.proxies_on_genuine_spearman),
                check.proxies_on_genuine_bias
            ));
        }
        out
    }
}

/// Reads the calibration rows: Lichess puzzles with a rating from plays.
fn read_calibration(files: &[PathBuf], config: &RateConfig) -> Result<(Vec<Puzzle>, usize)> {
    let mut rows = Vec::new();
    let mut skipped = 0;
    for file in files {
        let (puzzles, rejected) = read_rateable(file)?;
        skipped += rejected.len();
        for puzzle in puzzles {
            if has_lichess_rating(&puzzle) {
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
    /// Per row: its held-out fold, shared by every row of its source game.
    fold: Vec<usize>,
    games: usize,
}

impl CalibrationRows {
    fn new(lichess: Vec<Puzzle>, config: &RateConfig) -> Self {
        let mut puzzles = Vec::new();
        let mut proxy = Vec::new();
        for puzzle in lichess {
            let cut = config.proxies.then(|| single_move_proxy(&puzzle)).flatten();
            puzzles.push(puzzle);
            proxy.push(false);
            if let Some(cut) = cut {
                puzzles.push(cut);
                proxy.push(true);
            }
        }
        let keys: Vec<String> = puzzles.iter().map(source_game).collect();
        let mut games: Vec<&String> = keys.iter().collect();
        games.sort();
        games.dedup();
        games.shuffle(&mut seed::rng(
            config.seed,
            Domain::RateCalibrationFolds,
            Key::Run,
        ));
        let folds = config.folds.max(1) as usize;
        let fold_of_game: std::collections::HashMap<&String, usize> = games
            .iter()
            .enumerate()
            .map(|(position, game)| (*game, position % folds))
            .collect();
        let fold = keys.iter().map(|k| fold_of_game[k]).collect();
        Self {
            games: games.len(),
            puzzles,
            proxy,
            fold,
        }
    }

    fn genuine(&self) -> Vec<bool> {
        self.proxy.iter().map(|p| !p).collect()
    }
}

/// Which rows and columns a fit uses.
struct FitSpec<'a> {
    /// Rows the fit may learn from (before the fold's hold-out).
    train: &'a [bool],
    /// Feature columns; `None`: all.
    columns: Option<&'a [usize]>,
    /// Each row's fit group: the model groups, or the length groups alone.
    groups: &'a [usize],
    ridge: f64,
}

/// Fits one model per model group on `rows`; `groups` holds each row's
/// model group.
fn fit_groups(
    features: &[Features],
    groups: &[usize],
    ratings: &[f64],
    rows: &[usize],
    ridge: f64,
) -> Vec<Option<RidgeFit>> {
    (0..MODEL_GROUPS.len())
        .map(|g| {
            let members: Vec<usize> = rows.iter().copied().filter(|&i| groups[i] == g).collect();
            let xs: Vec<Vec<f64>> = members
                .iter()
                .map(|&i| features[i].values.clone())
                .collect();
            let ys: Vec<f64> = members.iter().map(|&i| ratings[i]).collect();
            if xs.len() < 2 {
                None
            } else {
                RidgeFit::fit(&xs, &ys, ridge)
            }
        })
        .collect()
}

/// Held-out predictions of every row: each fold's rows are predicted by a
/// fit on the other folds' training rows.
fn out_of_fold(
    features: &[Features],
    ratings: &[f64],
    fold_of: &[usize],
    spec: &FitSpec,
) -> Vec<f64> {
    let groups = spec.groups;
    let n = features.len();
    let folds = fold_of.iter().max().map_or(1, |f| f + 1);
    let view: Vec<Features> = match spec.columns {
        None => features.to_vec(),
        Some(columns) => features
            .iter()
            .map(|f| Features {
                values: columns.iter().map(|&j| f.values[j]).collect(),
                baseline_solve_rate: None,
            })
            .collect(),
    };
    let mut predictions = vec![0.0; n];
    let trainable: Vec<usize> = (0..n).filter(|&i| spec.train[i]).collect();
    let global_mean =
        trainable.iter().map(|&i| ratings[i]).sum::<f64>() / trainable.len().max(1) as f64;
    for fold in 0..folds {
        let train: Vec<usize> = trainable
            .iter()
            .copied()
            .filter(|&i| fold_of[i] != fold)
            .collect();
        let fits = fit_groups(&view, groups, ratings, &train, spec.ridge);
        for i in (0..n).filter(|&i| fold_of[i] == fold) {
            predictions[i] = fits[groups[i]]
                .as_ref()
                .map(|fit| fit.predict(&view[i].values))
                .unwrap_or(global_mean);
        }
    }
    predictions
}

/// Writes the calibration rows' signals as CSV: id, solver moves, rating,
/// whether the row is a proxy, its fold, the plain-ladder solve rate (empty
/// unless measured), then the features.
fn write_features(path: &Path, rows: &CalibrationRows, features: &[Features]) -> Result<()> {
    let mut text = String::from("PuzzleId,SolverMoves,Rating,proxy,fold,baseline_solve_rate");
    for name in FEATURE_NAMES {
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
            rows.fold[i],
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

/// Everything the figures are computed from.
struct Calibration<'a> {
    rows: &'a CalibrationRows,
    features: &'a [Features],
    lengths: Vec<usize>,
    /// Each row's model group.
    groups: Vec<usize>,
    /// Each row's length group (the reference model's groups).
    length_groups: Vec<usize>,
    ratings: Vec<f64>,
    config: &'a RateConfig,
}

impl Calibration<'_> {
    fn out_of_fold(&self, spec: &FitSpec) -> Vec<f64> {
        out_of_fold(self.features, &self.ratings, &self.rows.fold, spec)
    }
}

/// Computes the signals of the calibration rows, measures held-out
/// figures, and fits the final model on every row.
pub fn calibrate(
    pool: &EnginePool,
    files: &[PathBuf],
    config: &RateConfig,
    features_out: Option<&Path>,
) -> Result<(RatingModel, CalibrationReport)> {
    let (lichess, skipped) = read_calibration(files, config)?;
    let lichess_rows = lichess.len();
    let rows = CalibrationRows::new(lichess, config);
    let targets: Vec<&Puzzle> = rows.puzzles.iter().collect();
    let features = compute_features_with(
        pool,
        &targets,
        &config.signals,
        config.seed,
        config.baseline,
    )?;
    if let Some(path) = features_out {
        write_features(path, &rows, &features)?;
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
        length_groups: lengths.iter().map(|&l| group_of(l)).collect(),
        lengths,
        ratings: rows
            .puzzles
            .iter()
            .map(|p| f64::from(p.rating.unwrap_or_default()))
            .collect(),
        config,
    };
    let everything = vec![true; rows.puzzles.len()];
    let model_spec = FitSpec {
        train: &everything,
        columns: None,
        groups: &calibration.groups,
        ridge: config.ridge,
    };
    let predictions = calibration.out_of_fold(&model_spec);
    let held_out = held_out_figures(&calibration, &predictions);
    let group_models = fit_group_models(&calibration, &predictions)?;
    let model = RatingModel {
        format: MODEL_FORMAT,
        engine: pool.engine_id().to_string(),
        seed: config.seed,
        signals: config.signals.clone(),
        features: FEATURE_NAMES.iter().map(|s| s.to_string()).collect(),
        groups: group_models,
    };
    let report = CalibrationReport {
        files: files.iter().map(|f| f.display().to_string()).collect(),
        rows: lichess_rows,
        proxy_rows: rows.proxy.iter().filter(|p| **p).count(),
        games: rows.games,
        skipped,
        folds: config.folds,
        seed: config.seed,
        held_out,
        proxy_check: proxy_check(&calibration),
        single_feature: single_feature_figures(&calibration),
    };
    Ok((model, report))
}

/// A group of calibration rows the figures are given for.
struct ReportGroup {
    name: String,
    members: Vec<usize>,
}

/// The report's groups in order: every Lichess puzzle as it is, each length
/// group, the single-move non-mate puzzles (most generated puzzles' shape),
/// and the single-move proxies.
fn report_groups(calibration: &Calibration) -> Vec<ReportGroup> {
    let rows = calibration.rows;
    let lengths = &calibration.lengths;
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
    groups.push(select("1 non-mate", &|i| {
        !rows.proxy[i] && lengths[i] == 1 && !mates(&calibration.features[i])
    }));
    groups.push(select("1 proxy", &|i| rows.proxy[i]));
    groups.retain(|g| !g.members.is_empty());
    groups
}

fn pick(values: &[f64], members: &[usize]) -> Vec<f64> {
    members.iter().map(|&i| values[i]).collect()
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

fn bias(predicted: &[f64], truth: &[f64]) -> f64 {
    predicted.iter().zip(truth).map(|(p, t)| p - t).sum::<f64>() / truth.len().max(1) as f64
}

/// The signals of rating-model format 1: the reference the held-out
/// figures are compared with.
const REFERENCE_FEATURES: usize = 45;
/// The ridge penalty that model was fitted with.
const REFERENCE_RIDGE: f64 = 80.0;

/// Held-out Spearman and RMSE per group, for the model, the reference model
/// and the ladder alone on the same folds, with the plain-ladder and
/// length-only baselines beside them.
fn held_out_figures(calibration: &Calibration, predictions: &[f64]) -> Vec<HeldOut> {
    let genuine = calibration.rows.genuine();
    let reference_columns: Vec<usize> = (0..REFERENCE_FEATURES).collect();
    let reference = calibration.out_of_fold(&FitSpec {
        train: &genuine,
        columns: Some(&reference_columns),
        groups: &calibration.length_groups,
        ridge: REFERENCE_RIDGE,
    });
    let ladder = calibration.out_of_fold(&FitSpec {
        train: &genuine,
        columns: Some(&[0]),
        groups: &calibration.length_groups,
        ridge: calibration.config.ridge,
    });
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
            let figures = |values: &[f64]| {
                let predicted = pick(values, members);
                (spearman(&predicted, &truth), rmse(&predicted, &truth))
            };
            let (spearman_model, rmse_model) = figures(predictions);
            let (reference_spearman, reference_rmse) = figures(&reference);
            let (ladder_spearman, ladder_rmse) = figures(&ladder);
            HeldOut {
                group: group.name,
                rows: members.len(),
                spearman: spearman_model,
                rmse: rmse_model,
                reference_spearman,
                reference_rmse,
                ladder_spearman,
                ladder_rmse,
                baseline_spearman: baseline
                    .as_ref()
                    .and_then(|b| spearman(&pick(b, members), &truth)),
                length_spearman: spearman(&pick(&length_values, members), &truth),
            }
        })
        .collect()
}

/// Cross-applies the genuine single-move puzzles' model and the proxies'
/// model, held out by game. `None` without proxies.
fn proxy_check(calibration: &Calibration) -> Option<ProxyCheck> {
    let rows = calibration.rows;
    let single: Vec<bool> = (0..rows.puzzles.len())
        .map(|i| !rows.proxy[i] && calibration.lengths[i] == 1)
        .collect();
    let proxies: Vec<usize> = (0..rows.puzzles.len()).filter(|&i| rows.proxy[i]).collect();
    let genuine: Vec<usize> = (0..rows.puzzles.len()).filter(|&i| single[i]).collect();
    if proxies.is_empty() || genuine.is_empty() {
        return None;
    }
    let ridge = calibration.config.ridge;
    let from_genuine = calibration.out_of_fold(&FitSpec {
        train: &single,
        columns: None,
        groups: &calibration.length_groups,
        ridge,
    });
    let from_proxies = calibration.out_of_fold(&FitSpec {
        train: &rows.proxy,
        columns: None,
        groups: &calibration.length_groups,
        ridge,
    });
    let ratings = &calibration.ratings;
    let on = |predictions: &[f64], members: &[usize]| {
        let predicted = pick(predictions, members);
        let truth = pick(ratings, members);
        (spearman(&predicted, &truth), bias(&predicted, &truth))
    };
    let (genuine_on_proxies_spearman, genuine_on_proxies_bias) = on(&from_genuine, &proxies);
    let (proxies_on_genuine_spearman, proxies_on_genuine_bias) = on(&from_proxies, &genuine);
    Some(ProxyCheck {
        genuine_on_proxies_spearman,
        genuine_on_proxies_bias,
        proxies_on_genuine_spearman,
        proxies_on_genuine_bias,
    })
}

/// Held-out Spearman per length group of a model fitted on one signal alone,
/// for every signal: which signals carry difficulty where.
fn single_feature_figures(calibration: &Calibration) -> Vec<(String, Vec<Option<f64>>)> {
    let genuine = calibration.rows.genuine();
    let groups = report_groups(calibration);
    FEATURE_NAMES
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let columns = [j];
            let predicted = calibration.out_of_fold(&FitSpec {
                train: &genuine,
                columns: Some(&columns),
                groups: &calibration.length_groups,
                ridge: calibration.config.ridge,
            });
            let figures = groups
                .iter()
                .skip(1)
                .map(|group| {
                    spearman(
                        &pick(&predicted, &group.members),
                        &pick(&calibration.ratings, &group.members),
                    )
                })
                .collect();
            (name.to_string(), figures)
        })
        .collect()
}

/// The final per-group fits on every row; each group's deviation is the
/// held-out RMSE over the rows it was fitted on (proxies included).
fn fit_group_models(calibration: &Calibration, predictions: &[f64]) -> Result<Vec<GroupModel>> {
    let groups = &calibration.groups;
    let all: Vec<usize> = (0..groups.len()).collect();
    let fits = fit_groups(
        calibration.features,
        groups,
        &calibration.ratings,
        &all,
        calibration.config.ridge,
    );
    let mut group_models = Vec::new();
    for (g, fit) in fits.into_iter().enumerate() {
        let name = MODEL_GROUPS[g];
        let fit = fit.ok_or_else(|| {
            bad_input(format!(
                "calibration has fewer than 2 puzzles of group {name} (solver moves, mate); \
                 every group needs rows"
            ))
        })?;
        let members: Vec<usize> = all.iter().copied().filter(|&i| groups[i] == g).collect();
        group_models.push(GroupModel {
            group: name.to_string(),
            rows: members.len(),
            fit,
            deviation: rmse(
                &pick(predictions, &members),
                &pick(&calibration.ratings, &members),
            ),
        });
    }
    Ok(group_models)
}
