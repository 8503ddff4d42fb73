//! `puzzleforge rate`: estimates a Lichess-like rating for puzzles that have
//! none (mined puzzles), from what human players would play and what the
//! board shows.
//!
//! A puzzle's difficulty for humans is read from two kinds of signal, one
//! table of features in the end ([`features::FEATURES`]):
//! - human-move nets ([`crate::maia`], [`human`]): for every solver move,
//!   the probability that players of the lowest and highest Maia-1 rating
//!   (1100, 1900) play it, its rank among their choices, how spread their
//!   choices are, and how likely the best wrong move is; and each net's
//!   residual tower averaged over the squares at the first solver move;
//! - board features ([`signals`]): legal moves, available checks, captures
//!   and mates, whether the solution captures, checks, sacrifices,
//!   recaptures or retreats, material, piece count, solver length, mate.
//!
//! No engine searches: a puzzle costs a few milliseconds of one core, so a
//! calibration reads hundreds of thousands of rated puzzles and a generated
//! pool is rated at the pace it is mined. The features are mapped to a
//! rating by gradient-boosted trees, recalibrated so that the mean true
//! rating of the puzzles given an estimate matches it over the whole range,
//! with a deviation per solver-length group and band of the estimate
//! ([`model`]). The model is fitted on real Lichess puzzles
//! (`--calibrate`), which carry ratings from many human attempts, and saved
//! as a JSON file (`--save-model`, reused with `--model`) that also records
//! the nets, so a release rates the same way later. Calibration reports
//! held-out figures ([`figures`]); `--evaluate` gives the same figures for a
//! rated file the model has never seen. The measured figures are in
//! docs/rating.md.

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::chess::columns::Column;
use crate::chess::derive::RatingSource;
use crate::chess::record::{Puzzle, PuzzleWriter, extra_columns_of};
use crate::core::error::bad_input;
use crate::core::settings::{flags_over, load_section_or_bare};
use crate::core::summary::{Report, Summary};
use crate::engine::process::own_cpu_seconds;
use crate::maia::{DEFAULT_MODELS_DIR, MaiaNets};
use crate::stages::ingest_puzzles::rejects::{RejectsFile, default_rejects_path};

mod calibrate;
mod config;
mod features;
mod figures;
mod fit;
mod human;
mod model;
mod signals;
mod store;
pub use calibrate::{
    Calibrated, CalibrationReport, CurvePoint, ExtractionReport, FeatureJob, calibrate,
};
pub use config::*;
pub use features::{Features, feature_names};
pub use figures::{
    BandFigures, BandTable, EndFigures, Figures, GroupReach, HeldOut, InRangeFigures, ReachFigures,
};
pub use fit::*;
pub use model::{DeviationTable, Estimator, Recalibration, TreeConfig, TreeNode, Trees};

/// The version of what this stage computes, recorded in its `stage.json`:
/// bumped whenever its output for the same input changes, so that a rerun
/// redoes the stage's stored output rather than reuse one made by other
/// rules (`tests/algorithms.rs` holds its output's sha256 on a fixed input,
/// and fails when that changes without this).
pub const ALGORITHM: &str = "rate-1";

/// `puzzleforge rate`'s flags (their help: `cli::rate`).
#[derive(Debug, Clone)]
pub struct RateArgs {
    pub input: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub calibrate: Vec<PathBuf>,
    /// The flags laid over `[rate]` by [`crate::core::settings::flags_over`].
    pub overrides: RateOverrides,
    pub rejects: Option<PathBuf>,
    pub save_model: Option<PathBuf>,
    pub learning_curve: Vec<usize>,
    pub evaluate: Vec<PathBuf>,
    pub features: Option<PathBuf>,
    pub features_only: bool,
    pub shard: Option<crate::core::shard::Shard>,
    pub stored_only: bool,
    pub features_out: Option<PathBuf>,
    pub config: Option<PathBuf>,
}

/// `rate`'s flags (their help: `cli::rate`) over the `[rate]` key of the
/// same name.
#[derive(Default, Debug, Clone, Serialize)]
pub struct RateOverrides {
    pub model: Option<PathBuf>,
    pub seed: Option<u64>,
    pub folds: Option<u32>,
    pub calibrate_max_rows: Option<usize>,
    pub maia: Option<PathBuf>,
}

/// Runs `puzzleforge rate` from its flags: the `[rate]` section of
/// `--config` (a pipeline.toml, or a file of the section's keys alone) with
/// the flags over it.
pub fn run_rate(args: &RateArgs) -> Result<Summary> {
    let section: RateConfig = load_section_or_bare(args.config.as_deref(), "rate")?;
    let config = flags_over(&section, &args.overrides)?;
    if !args.evaluate.is_empty() {
        return evaluate_files(&config, &args.evaluate);
    }
    let features = FeatureJob {
        store: args.features.as_deref(),
        shard: args.shard,
        features_only: args.features_only,
        stored_only: args.stored_only,
        table: args.features_out.as_deref(),
    };
    // Without puzzles to rate (clap requires `-o` with them), `rate` only
    // calibrates or computes features; the job's paths are then unused.
    let output = args.output.as_deref().unwrap_or(Path::new(""));
    let rejects = args
        .rejects
        .clone()
        .unwrap_or_else(|| default_rejects_path(output));
    let job = RateJob {
        input: args.input.as_deref().unwrap_or(Path::new("")),
        output,
        rejects: Some(&rejects),
        calibrate: &args.calibrate,
        save_model: args.save_model.as_deref(),
        features,
        learning_curve: &args.learning_curve,
        config: &config,
    };
    if args.input.is_some() {
        run_rate_with(&job)?.into_summary()
    } else {
        calibrate_only(&job)
    }
}

/// `rate --calibrate ...` without puzzles to rate: computes the features
/// (into the store) and, unless only features were asked for, fits and
/// saves the model.
fn calibrate_only(job: &RateJob) -> Result<Summary> {
    check_settings(job.config)?;
    let mut human = String::new();
    let (calibrated, _) = calibrate_now(job, &mut human)?;
    Ok(Summary::new(
        human,
        json!({
            "command": "rate",
            "features": calibrated.extraction,
            "calibration": calibrated.report,
            "model": job.save_model.map(|p| p.display().to_string()),
        }),
    ))
}

fn check_settings(config: &RateConfig) -> Result<()> {
    if config.folds < 2 {
        return Err(bad_input(format!(
            "rate: folds must be at least 2, not {}",
            config.folds
        )));
    }
    if !(0.0..=1.0).contains(&config.proxy_share) {
        return Err(bad_input(format!(
            "rate: proxy_share must be within 0-1, not {}",
            config.proxy_share
        )));
    }
    config.trees.check()
}

/// Calibrates on `job.calibrate` (features from and into the store), saves
/// the model when asked, and says what it did. Also gives the nets the
/// model reads, loaded once for the fit and the rating after it.
fn calibrate_now(job: &RateJob, human: &mut String) -> Result<(Calibrated, MaiaNets)> {
    let config = job.config;
    let nets_dir = config
        .maia
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_MODELS_DIR));
    let nets = load_nets(&nets_dir, None)?;
    let calibrated = calibrate(
        &nets,
        job.calibrate,
        config,
        &job.features,
        job.learning_curve,
    )?;
    human.push_str(&calibrated.extraction.human());
    if let Some(report) = &calibrated.report {
        human.push_str(&report.human());
    }
    if let (Some(path), Some(model)) = (job.save_model, &calibrated.model) {
        let text = serde_json::to_string_pretty(model)?;
        crate::core::fileio::write_atomic(path, format!("{text}\n").as_bytes())
            .with_context(|| format!("writing the model {}", path.display()))?;
        human.push_str(&format!("rate: model written to {}\n", path.display()));
    }
    Ok((calibrated, nets))
}

/// Everything one rating run needs; the pipeline runner builds it from
/// pipeline.toml.
pub(crate) struct RateJob<'a> {
    pub input: &'a Path,
    pub output: &'a Path,
    /// Where every row not rated is named (line, PuzzleId, reason,
    /// detail). `None` writes no such file and counts them only: the
    /// pipeline's stage and generation's batches, whose input is the
    /// miner's own output and whose folders list their files.
    pub rejects: Option<&'a Path>,
    /// Lichess puzzle files to fit a model on; empty = use `config.model`.
    pub calibrate: &'a [PathBuf],
    /// Where to write the fitted model.
    pub save_model: Option<&'a Path>,
    /// Where the calibration rows' features come from and go.
    pub features: FeatureJob<'a>,
    /// Sizes of the calibration's learning curve (none: no curve).
    pub learning_curve: &'a [usize],
    pub config: &'a RateConfig,
}

/// Rates `job.input` into `job.output`, calibrating first when asked.
pub(crate) fn run_rate_with(job: &RateJob) -> Result<Report<RateSummary>> {
    check_settings(job.config)?;
    if job.features.features_only || job.features.shard.is_some() {
        return Err(bad_input(
            "rate: --features-only and --shard compute features and rate nothing; \
             leave out the puzzles to rate",
        ));
    }
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
        estimate_ratings(model, &mut rated, &needs_estimate)?;
    }
    let longest_line = model.as_ref().map(|(model, _)| model.longest_fitted_line());
    let beyond_model_lengths = mark_rating_sources(&mut rated, &needs_estimate, longest_line);
    let columns = extra_columns_of(&rated);
    let mut writer = PuzzleWriter::create(job.output, &columns)?;
    for puzzle in &rated {
        writer.write(puzzle)?;
    }
    let written = writer.finish()?;
    let mut rejected_by_reason: BTreeMap<String, usize> = BTreeMap::new();
    for reject in &rejected {
        *rejected_by_reason
            .entry(reject.error.reason.to_string())
            .or_default() += 1;
    }
    // Written once the rating is done, so a run refused before it (a bad
    // model, no model) leaves no file behind, as it leaves no output.
    if let Some(path) = job.rejects {
        let mut file = RejectsFile::create(path)?;
        for reject in &rejected {
            file.write(reject.line, reject.id.as_bytes(), &reject.error)?;
        }
        file.commit()?;
    }
    human.push_str(&format!(
        "rate: {written} puzzles written to {} ({} estimated, {} kept their Lichess rating, {} rejected)\n",
        job.output.display(),
        needs_estimate.len(),
        rated.len() - needs_estimate.len(),
        rejected.len()
    ));
    for (reason, n) in &rejected_by_reason {
        human.push_str(&format!("  rejected {reason}: {n}\n"));
    }
    if let Some(path) = job.rejects.filter(|_| !rejected.is_empty()) {
        human.push_str(&format!("rejects: {}\n", path.display()));
    }
    if let (Some(longest), 1..) = (longest_line, beyond_model_lengths) {
        human.push_str(&format!(
            "rate: {beyond_model_lengths} puzzles rated beyond the model's lengths (lines longer \
             than its {longest} solver moves), flagged {RATING_FLAG} {BEYOND_MODEL_LENGTHS}\n"
        ));
    }
    let record = RateSummary {
        command: "rate",
        input: job.input.display().to_string(),
        output: job.output.display().to_string(),
        written,
        estimated: needs_estimate.len(),
        kept_lichess_rating: rated.len() - needs_estimate.len(),
        rejected: rejected.len(),
        rejected_by_reason,
        rejects: job.rejects.map(|p| p.display().to_string()),
        beyond_model_lengths,
        longest_fitted_line: longest_line,
        calibration: calibration_json,
    };
    Ok(Report::new(human, record))
}

/// Each row's rating source (its Lichess rating, or `needs_estimate`'s
/// estimated) and, past the model's `longest_line`, the flag of a rating
/// beyond the model's lengths: how many were flagged.
fn mark_rating_sources(
    rated: &mut [Puzzle],
    needs_estimate: &[usize],
    longest_line: Option<usize>,
) -> usize {
    for puzzle in rated.iter_mut() {
        puzzle.set(Column::RatingSource, RatingSource::Lichess.as_str());
        // A flag is this run's word on its own rating: an input's flag,
        // from an earlier run or another model, goes.
        puzzle.extra.retain(|(name, _)| name != RATING_FLAG);
    }
    for &index in needs_estimate {
        rated[index].set(Column::RatingSource, RatingSource::Estimated.as_str());
    }
    // Set after RatingSource, so the flag's column (there only when a row
    // is flagged: files of the lengths the model knows keep their bytes)
    // comes after it whatever row is flagged first.
    let mut beyond_model_lengths = 0;
    if let Some(longest) = longest_line {
        for &index in needs_estimate {
            if rated[index].solver_moves() > longest {
                rated[index].set(RATING_FLAG, BEYOND_MODEL_LENGTHS);
                beyond_model_lengths += 1;
            }
        }
    }
    beyond_model_lengths
}

/// The column that flags a rating the model gave by extrapolating, and
/// its one value: a line longer than any the model was fitted on
/// ([`RatingModel::longest_fitted_line`]). Not a declared column
/// ([`crate::chess::columns`]): a declared one is in every release, and
/// this one is only in the files that hold a flagged row.
const RATING_FLAG: &str = "RatingFlag";
const BEYOND_MODEL_LENGTHS: &str = "beyond_model_lengths";

/// The stage's JSON summary.
#[derive(Serialize, Debug, Clone)]
pub(crate) struct RateSummary {
    command: &'static str,
    input: String,
    /// The rated puzzles file (where the pipeline commits it).
    pub(crate) output: String,
    written: u64,
    /// Puzzles rated by the model (they had no Lichess rating).
    estimated: usize,
    kept_lichess_rating: usize,
    /// Rows not rated (not written): unreadable, a line that does not
    /// replay, a PuzzleId already seen.
    rejected: usize,
    rejected_by_reason: BTreeMap<String, usize>,
    /// The file naming every rejected row; null where none is written
    /// ([`RateJob::rejects`]).
    rejects: Option<String>,
    /// Puzzles rated though their line is longer than any the model was
    /// fitted on, flagged `RatingFlag` `beyond_model_lengths`.
    beyond_model_lengths: usize,
    /// That length, in solver moves; null when no model rated.
    longest_fitted_line: Option<usize>,
    /// The calibration's report, or null when none ran.
    calibration: serde_json::Value,
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
        let (calibrated, nets) = calibrate_now(job, human)?;
        let report = serde_json::to_value(&calibrated.report)?;
        return Ok((calibrated.model.map(|m| (m, nets)), report));
    }
    if let Some(path) = &config.model {
        return Ok((Some(load_model(path, config)?), serde_json::Value::Null));
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

/// The model at `path` and the nets it reads: `[rate] maia` when set,
/// else `maia/` beside the model when there, else `models/maia`.
fn load_model(path: &Path, config: &RateConfig) -> Result<(RatingModel, MaiaNets)> {
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
    Ok((model, nets))
}

/// A puzzle's estimated (rating, deviation).
type Estimate = (i32, i32);

/// The features of `targets` and the model's estimate of each, every
/// puzzle rated as whole.
fn rate_puzzles(
    model: &RatingModel,
    nets: &MaiaNets,
    targets: &[&Puzzle],
) -> Result<(Vec<Features>, Vec<Estimate>)> {
    let features = compute_features(nets, targets)?;
    let estimates = targets
        .iter()
        .zip(&features)
        .map(|(puzzle, features)| model.rate(puzzle.solver_moves(), features))
        .collect();
    Ok((features, estimates))
}

/// Computes the features of the puzzles at `needs_estimate` and sets their
/// rating and deviation from the model.
fn estimate_ratings(
    (model, nets): &(RatingModel, MaiaNets),
    rated: &mut [Puzzle],
    needs_estimate: &[usize],
) -> Result<()> {
    let targets: Vec<&Puzzle> = needs_estimate.iter().map(|&i| &rated[i]).collect();
    let (_, estimates) = rate_puzzles(model, nets, &targets)?;
    for (&index, (rating, deviation)) in needs_estimate.iter().zip(estimates) {
        rated[index].rating = Some(rating);
        rated[index].rating_deviation = Some(deviation);
    }
    Ok(())
}

/// The figures of one rated file the model rated as if unrated.
#[derive(Serialize, Debug, Clone)]
struct Evaluation {
    file: String,
    /// Rows with a Lichess rating from plays, rated by the model.
    rows: usize,
    skipped: usize,
    /// This process's CPU-seconds per puzzle rated (features and trees).
    cpu_seconds_per_puzzle: f64,
    figures: Figures,
}

/// `rate --evaluate FILE...`: rates every rated puzzle of each file with
/// the model as if it had no rating, and reports the figures a calibration
/// reports held out ([`figures`]).
fn evaluate_files(config: &RateConfig, files: &[PathBuf]) -> Result<Summary> {
    check_settings(config)?;
    let path = config.model.as_deref().ok_or_else(|| {
        bad_input("rate --evaluate: give the model to evaluate (--model, or [rate] model)")
    })?;
    let (model, nets) = load_model(path, config)?;
    let mut human = String::new();
    let mut evaluations = Vec::new();
    for file in files {
        let (puzzles, rejected) = read_rateable(file)?;
        let rated: Vec<&Puzzle> = puzzles
            .iter()
            .filter(|p| calibrate::rated_by_players(p))
            .collect();
        if rated.is_empty() {
            return Err(bad_input(format!(
                "rate --evaluate: {} has no puzzle with a Lichess rating",
                file.display()
            )));
        }
        let cpu_before = own_cpu_seconds();
        let (features, scores) = rate_puzzles(&model, &nets, &rated)?;
        let cpu = own_cpu_seconds() - cpu_before;
        let figures = Figures::of(&figures::Scored {
            estimate: scores.iter().map(|s| f64::from(s.0)).collect(),
            deviation: scores.iter().map(|s| f64::from(s.1)).collect(),
            rating: rated
                .iter()
                .map(|p| f64::from(p.rating.unwrap_or_default()))
                .collect(),
            length: rated.iter().map(|p| p.solver_moves()).collect(),
            mate: features.iter().map(mates).collect(),
            proxy: vec![false; rated.len()],
        });
        let evaluation = Evaluation {
            file: file.display().to_string(),
            rows: rated.len(),
            skipped: rejected.len() + puzzles.len() - rated.len(),
            cpu_seconds_per_puzzle: cpu / rated.len() as f64,
            figures,
        };
        human.push_str(&format!(
            "rate --evaluate {}: {} rated puzzles ({} skipped), {:.0} puzzles per CPU-second\n{}",
            evaluation.file,
            evaluation.rows,
            evaluation.skipped,
            1.0 / evaluation.cpu_seconds_per_puzzle.max(1e-9),
            evaluation.figures.human()
        ));
        evaluations.push(evaluation);
    }
    Ok(Summary::new(
        human,
        json!({
            "command": "rate",
            "model": path.display().to_string(),
            "evaluations": evaluations,
        }),
    ))
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

    /// The longest line a model was fitted on: the one it records (a
    /// calibration writes it; the committed model's sample holds one of 14
    /// solver moves), else the Lichess database's (a model from before the
    /// record); a record of 0 is a damaged file.
    #[test]
    fn a_model_knows_the_longest_line_it_was_fitted_on() {
        let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/rate_model.json");
        let model = RatingModel::load(&committed).expect("the committed model loads");
        assert_eq!(model.longest_line, Some(14));
        assert_eq!(model.longest_fitted_line(), 14);
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&committed).expect("read the model"))
                .expect("JSON");
        let dir = tempfile::tempdir().expect("tempdir");
        let edited = dir.path().join("model.json");
        for (longest, fitted) in [(9, Some(9)), (0, None)] {
            json["longest_line"] = json!(longest);
            std::fs::write(&edited, json.to_string()).expect("write the model");
            match (RatingModel::load(&edited), fitted) {
                (Ok(model), Some(fitted)) => assert_eq!(model.longest_fitted_line(), fitted),
                (Err(e), None) => assert!(e.to_string().contains("longest_line is 0"), "{e}"),
                (loaded, _) => panic!("longest_line {longest}: {:?}", loaded.map(|m| m.rows)),
            }
        }
        // Without the record: the Lichess database's longest line.
        json.as_object_mut()
            .expect("an object")
            .remove("longest_line");
        std::fs::write(&edited, json.to_string()).expect("write the model");
        let unrecorded = RatingModel::load(&edited).expect("loads without the record");
        assert_eq!(unrecorded.longest_fitted_line(), LICHESS_LONGEST_LINE);
    }

    /// The committed model's calibrated reach. Calibrated for the natural
    /// mix, its map runs from the mean true rating of the easiest-looking
    /// puzzles (about 545) to that of the hardest-looking (about 2700): the
    /// APO shape's bottom bin for 1-2 move puzzles and its top bin for 3-5
    /// moves are beyond it, and generation names those
    /// cells (docs/rating.md, "Reach"). The test reads the file generation
    /// rates with, so a model that reached further or less far fails it,
    /// and the docs' statement with it.
    #[test]
    fn the_committed_model_reaches_the_apo_shape_but_its_outer_bins() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/rate_model.json");
        let model = RatingModel::load(&path).expect("the committed model loads");
        let reach = ModelReach::of(&model).expect("a map with points");
        let (low, high) = reach.range(4, false);
        assert!((2600..2700).contains(&high), "3+ moves top out at {high}");
        assert!((500..600).contains(&low), "3+ moves start at {low}");
        // The APO shape's hard band, 2000-2800 with 3-5 moves, mate or not:
        // every bin but the top one is reached without extrapolating.
        for moves in 3..=5 {
            for mate in [true, false] {
                assert!(reach.reaches(moves, mate, 2000, 2100));
                assert!(reach.reaches(moves, mate, 2600, 2700), "{moves} {mate}");
                assert!(!reach.reaches(moves, mate, 2700, 2800), "{moves} {mate}");
            }
        }
        // A bin is reached when any rating in (lo, hi] is: the top itself.
        assert!(reach.reaches(3, false, high - 1, high + 99));
        assert!(!reach.reaches(3, false, high, high + 100));
        // The single-move non-mates (the generated puzzles' shape) reach
        // from the 500s to the 2600s: the trees tell them from the proxies,
        // so their group shift is small (format 4's took them back by about
        // 480 points).
        let (one_low, one_high) = reach.range(1, false);
        assert!(one_high >= 2600 && one_low <= 600, "{one_low}-{one_high}");
        let one_shift = model.estimator.shifts.shift(model_group(1, false));
        assert!(one_shift.abs() < 150.0, "shift {one_shift}");
        // The 1-2 move band, 400-2000: every bin is reached but the bottom
        // one.
        for (moves, mate) in [(1, true), (1, false), (2, true), (2, false)] {
            assert!(reach.reaches(moves, mate, 500, 600) && reach.reaches(moves, mate, 1900, 2000));
            assert!(!reach.reaches(moves, mate, 400, 500), "{moves} {mate}");
        }
    }
}
