//! `puzzleforge rate`: estimates a Lichess-like rating for puzzles that have
//! none (mined puzzles), from engine signals and cheap board features.
//!
//! A puzzle's difficulty for humans is read from three kinds of signal:
//! - an engine ladder: Stockfish's weakened player (its `Skill::pick_best`
//!   rule driven by our seeded RNG) at several strengths, several attempts
//!   each; an attempt solves the puzzle only when it finds every solver move;
//! - engine probes: the search depth at which the engine first finds the
//!   solver move and keeps it, the score gap to the second move, and a wide
//!   shallow scan of every legal move (how many moves look as good as the
//!   solution at depth 1, the solution's rank there);
//! - board features: legal moves, available checks and captures, whether the
//!   solution captures, checks, sacrifices or recaptures, its rank under a
//!   naive "captures, then checks" ordering, piece count, mate.
//!
//! The signals are mapped to a rating by a ridge regression per solver-length
//! group (1, 2, 3+ solver moves), fitted on real Lichess puzzles
//! (`--calibrate`), which carry ratings from many human attempts. The fitted
//! model is a small JSON file (`--save-model`, reused with `--model`) that
//! also records the signal settings, so a release rates the same way later.
//! Calibration reports Spearman correlations on rows held out from the fit
//! (seeded k-fold), overall and within each length group: length alone
//! explains much of the overall figure, so the within-group ones count.
//!
//! Measured (default settings, seed 1, 5-fold, Stockfish 15.1) on the
//! 1,499-row Lichess sample (tests/data): held-out Spearman 0.747 overall
//! (length alone 0.500), 0.630 within 1-move (525 rows), 0.670 within
//! 2-move (698), 0.565 within 3+ (276); 3.6 CPU-minutes for the whole
//! calibration. With the 559 APO rows added (2,058 rows): 0.803 overall,
//! 0.666 within 1-move (684), 0.677 within 2-move (858), 0.729 within 3+
//! (516), with each puzzle's draws keyed by its id. The model committed as
//! models/rate_model.json is that last fit. In the 1-move group (all mates in one there) the ladder and the
//! probes are constant; the signal comes from the board: how many checks
//! the solver has (alone 0.49), the solution's length and naive rank.

use anyhow::{Context, Result};
use clap::Args;
use nalgebra::{DMatrix, DVector};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;
use shakmaty::{Chess, Color, Move, Position, Role};
use std::path::{Path, PathBuf};

use crate::chess::columns::Column;
use crate::chess::line::{PuzzleLine, parse_move};
use crate::chess::record::{Puzzle, PuzzleWriter, extra_columns_of, for_each_row};
use crate::core::error::bad_input;
use crate::core::seed::{self, Domain, Key};
use crate::core::settings::{flags_over, load_section_or_bare, switch_on};
use crate::core::summary::Summary;
use crate::engine::pool::{EnginePool, PoolConfig, Session};
use crate::engine::process::{EngineError, EngineSpec, Limit, PvLine, SearchRequest};
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::engine::uci::Score;
use crate::engine::weaken;

mod calibrate;
pub use calibrate::{CalibrationReport, HeldOut, ProxyCheck, calibrate};

/// Lowest and highest rating the model may give (Lichess's puzzle range).
const RATING_FLOOR: f64 = 400.0;
const RATING_CEILING: f64 = 3300.0;
/// Version of the model file format.
const MODEL_FORMAT: u32 = 2;

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
    /// Ridge penalty on standardized features.
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
    /// Write the calibration rows' signals here (CSV), for analysis.
    #[arg(long)]
    #[serde(skip)]
    pub features_out: Option<PathBuf>,
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
    /// Where to write the calibration rows' signals (CSV).
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
/// puzzle has its Lichess rating. Also returns the calibration report's JSON.
fn rating_model(
    job: &RateJob,
    puzzle_count: usize,
    needs_estimate: &[usize],
    human: &mut String,
) -> Result<(Option<RatingModel>, serde_json::Value)> {
    let config = job.config;
    if !job.calibrate.is_empty() {
        let pool = engine_pool(job, "calibration")?;
        let (model, report) = calibrate(&pool, job.calibrate, config, job.features_out)?;
        if let Some(path) = job.save_model {
            let text = serde_json::to_string_pretty(&model)?;
            crate::core::fileio::write_atomic(path, format!("{text}\n").as_bytes())
                .with_context(|| format!("writing the model {}", path.display()))?;
        }
        human.push_str(&report.human());
        return Ok((Some(model), serde_json::to_value(&report)?));
    }
    if let Some(path) = &config.model {
        return Ok((Some(RatingModel::load(path)?), serde_json::Value::Null));
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

/// Computes the signals of the puzzles at `needs_estimate` and sets their
/// rating and deviation from the model.
fn estimate_ratings(
    job: &RateJob,
    model: &RatingModel,
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
    let features = compute_features(&pool, &targets, &model.signals, model.seed)?;
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
// The weakened player.

/// The weakened player's move from a MultiPV search
/// ([`weaken::SKILL_MULTIPV`] lines to depth [`weaken::pick_depth`]):
/// Stockfish 15.1's `Skill::pick_best` with our seeded RNG.
fn weakened_pick<'a>(lines: &'a [PvLine], level: f64, rng: &mut ChaCha8Rng) -> Option<&'a str> {
    let scores: Vec<i64> = lines
        .iter()
        .map(|line| match line.score {
            Score::Cp(cp) => weaken::internal_from_cp(cp),
            Score::Mate(moves) => weaken::internal_from_mate(moves),
        })
        .collect();
    let chosen = weaken::pick_best(&scores, level, rng)?;
    lines[chosen].pv.first().map(String::as_str)
}

// ---------------------------------------------------------------------------
// Signals.

/// Board facts of one solver move, from the position alone.
#[derive(Clone, Debug, Default)]
struct BoardFacts {
    legal_moves: f64,
    checks_available: f64,
    captures_available: f64,
    is_capture: f64,
    is_check: f64,
    is_quiet: f64,
    is_promotion: f64,
    moved_value: f64,
    captured_value: f64,
    /// The moved piece lands where the opponent attacks it and is worth
    /// more than what it took: it can be taken back at a loss.
    is_sacrifice: f64,
    /// The solution takes on the square the opponent just moved to.
    is_recapture: f64,
    /// The opponent's move before it was a capture.
    after_capture: f64,
    /// Rank of the solution among legal moves ordered captures (most
    /// valuable victim, least valuable attacker) first, then checks.
    naive_rank: f64,
    distance: f64,
    backward: f64,
    /// The solver starts in check (after a checking opponent move).
    in_check: f64,
    /// Captures other than the solution that win material at once: of an
    /// undefended piece or of a piece worth more than the capturer. Decoys.
    other_good_captures: f64,
    /// Moves that mate at once.
    mates_available: f64,
    is_knight: f64,
    is_king: f64,
}

fn role_value(role: Role) -> f64 {
    match role {
        Role::Pawn => 1.0,
        Role::Knight | Role::Bishop => 3.0,
        Role::Rook => 5.0,
        Role::Queen => 9.0,
        Role::King => 0.0,
    }
}

fn gives_check(position: &Chess, chess_move: Move) -> bool {
    let mut after = position.clone();
    after.play_unchecked(chess_move);
    after.is_check()
}

/// A move's place in a naive human ordering: captures by victim value then
/// cheapest attacker, then checks, then the rest.
fn naive_key(position: &Chess, chess_move: Move) -> (i32, i32) {
    if let Some(victim) = chess_move.capture() {
        (
            0,
            -(role_value(victim) * 10.0) as i32 + role_value(chess_move.role()) as i32,
        )
    } else if gives_check(position, chess_move) {
        (1, 0)
    } else {
        (2, 0)
    }
}

fn board_facts(position: &Chess, solution: Move, previous: Option<Move>) -> BoardFacts {
    let legal = position.legal_moves();
    let checks = legal.iter().filter(|m| gives_check(position, **m)).count();
    let mates = legal
        .iter()
        .filter(|m| {
            let mut after = position.clone();
            after.play_unchecked(**m);
            after.is_checkmate()
        })
        .count();
    let other_good_captures = legal
        .iter()
        .filter(|m| **m != solution)
        .filter(|m| match m.capture() {
            Some(victim) => {
                let defended = !position
                    .board()
                    .attacks_to(m.to(), !position.turn(), position.board().occupied())
                    .is_empty();
                !defended || role_value(victim) > role_value(m.role())
            }
            None => false,
        })
        .count();
    let captures = legal.iter().filter(|m| m.is_capture()).count();
    let is_check = gives_check(position, solution);
    let is_capture = solution.is_capture();
    let solution_key = naive_key(position, solution);
    let naive_rank = 1 + legal
        .iter()
        .filter(|m| naive_key(position, **m) < solution_key)
        .count();
    let mover = position.turn();
    let mut after = position.clone();
    after.play_unchecked(solution);
    let attacked = !after
        .board()
        .attacks_to(solution.to(), !mover, after.board().occupied())
        .is_empty();
    let moved_value = role_value(solution.promotion().unwrap_or(solution.role()));
    let captured_value = solution.capture().map(role_value).unwrap_or(0.0);
    let from = solution.from().unwrap_or(solution.to());
    let forward = i32::from(solution.to().rank()) - i32::from(from.rank());
    let forward = if mover == Color::White {
        forward
    } else {
        -forward
    };
    BoardFacts {
        legal_moves: legal.len() as f64,
        checks_available: checks as f64,
        captures_available: captures as f64,
        is_capture: f64::from(u8::from(is_capture)),
        is_check: f64::from(u8::from(is_check)),
        is_quiet: f64::from(u8::from(!is_capture && !is_check)),
        is_promotion: f64::from(u8::from(solution.promotion().is_some())),
        moved_value,
        captured_value,
        is_sacrifice: f64::from(u8::from(attacked && moved_value > captured_value)),
        is_recapture: f64::from(u8::from(
            is_capture && previous.is_some_and(|p| p.is_capture() && p.to() == solution.to()),
        )),
        after_capture: f64::from(u8::from(previous.is_some_and(|p| p.is_capture()))),
        naive_rank: naive_rank as f64,
        distance: f64::from(from.distance(solution.to())),
        backward: f64::from(u8::from(forward < 0)),
        in_check: f64::from(u8::from(position.is_check())),
        other_good_captures: other_good_captures as f64,
        mates_available: mates as f64,
        is_knight: f64::from(u8::from(solution.role() == Role::Knight)),
        is_king: f64::from(u8::from(solution.role() == Role::King)),
    }
}

/// Engine facts of one solver move.
#[derive(Clone, Debug, Default)]
struct EngineFacts {
    /// First depth of the probe from which the best move is the solution
    /// (or one more than the last depth when it never settles on it).
    found_depth: f64,
    /// Score gap between the best and second move (cp, capped).
    gap: f64,
    /// At the wide scan: the solution's rank, how many moves score within
    /// 50 cp of the best, and how far below the best the solution scores.
    wide_rank: f64,
    wide_close: f64,
    wide_deficit: f64,
    /// The probe's score of the best move (cp, capped; mates at the cap).
    best_score: f64,
    /// Moves to mate when the probe sees one for the solver, else 0: how
    /// much line is still to come after this move.
    mate_in: f64,
    /// Plies of the probe's principal variation.
    pv_plies: f64,
}

fn clear_hash(session: &mut Session) -> std::result::Result<(), EngineError> {
    session.set_option("Clear Hash", "true")
}

/// A solver move is correct when it is the solution, or when it mates on
/// the puzzle's last move (Lichess accepts any mate there).
fn is_correct(position: &Chess, candidate: &str, solution: &str, last: bool) -> bool {
    if candidate == solution {
        return true;
    }
    if !last {
        return false;
    }
    parse_move(position, candidate).is_ok_and(|m| {
        let mut after = position.clone();
        after.play_unchecked(m);
        after.is_checkmate()
    })
}

fn capped_cp(score: Score) -> f64 {
    f64::from(score.to_cp().clamp(-2000, 2000))
}

/// Names of the features, in the order of [`Features::values`].
pub(crate) const FEATURE_NAMES: [&str; 58] = [
    "ladder_solve_rate",
    "ladder_low_solve_rate",
    "found_depth_max",
    "found_depth_first",
    "found_depth_mean",
    "log_gap_min",
    "log_gap_first",
    "log_wide_rank",
    "wide_close",
    "log_wide_deficit",
    "legal_moves",
    "checks_available",
    "captures_available",
    "is_capture",
    "is_check",
    "is_quiet",
    "is_promotion",
    "moved_value",
    "captured_value",
    "sacrifices",
    "is_recapture",
    "after_capture",
    "log_naive_rank",
    "distance",
    "backward",
    "pieces",
    "ends_in_mate",
    "in_check",
    "other_good_captures",
    "mates_available",
    "is_knight",
    "is_king",
    "best_score",
    "checks_in_line",
    "captures_in_line",
    "quiet_in_line",
    "log_checks_available",
    "log_captures_available",
    "log_legal_moves",
    "log_other_good_captures",
    "log_mates_available",
    "log_wide_close",
    "log_pieces",
    "log_non_mating_checks",
    "ladder_times_found_depth",
    "ladder_first_move_rate",
    "ladder_hardest_move_rate",
    "ladder_later_min_rate",
    "only_moves",
    "only_move_share",
    "quiet_moves",
    "found_depth_later_max",
    "log_gap_later_min",
    "solver_moves",
    "all_checks",
    "first_is_sacrifice",
    "log_first_mate_in",
    "log_first_pv_plies",
];

/// The signals of one puzzle.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Features {
    pub values: Vec<f64>,
    /// Solve rate of the plain ladder (skill levels 0-14), when measured.
    pub baseline_solve_rate: Option<f64>,
}

/// What one puzzle's unit of engine work computes.
fn puzzle_features(
    session: &mut Session,
    puzzle: &Puzzle,
    signals: &SignalConfig,
    rng: &mut ChaCha8Rng,
    mut baseline_rng: Option<ChaCha8Rng>,
) -> std::result::Result<Features, EngineError> {
    // The line was checked when the file was read.
    let line = PuzzleLine::of_puzzle(puzzle).unwrap_or_default();
    // Elos were checked when the configuration was read.
    let levels: Vec<f64> = signals
        .ladder_elos
        .iter()
        .map(|&elo| weaken::skill_level(elo).unwrap_or(0.0))
        .collect();
    let mut ladder = Ladder::new(levels, signals.ladder_attempts.max(1) as usize);
    let mut baseline = baseline_rng
        .is_some()
        .then(|| Ladder::new((0..=14).map(f64::from).collect(), 5));
    let turns = line.solver_moves();
    let mut engine_facts = Vec::new();
    let mut board = Vec::new();
    for (turn, (ply, position, solution_move)) in line.solver_turns().enumerate() {
        let turn = SolverTurn {
            puzzle,
            ply,
            position,
            last: turn + 1 == turns,
        };
        board.push(board_facts(
            position,
            solution_move,
            Some(line.moves()[ply - 1]),
        ));
        engine_facts.push(probe_and_scan(session, &turn, signals)?);
        clear_hash(session)?;
        ladder.attempt(session, &turn, rng)?;
        if let (Some(baseline), Some(baseline_rng)) = (baseline.as_mut(), baseline_rng.as_mut()) {
            clear_hash(session)?;
            baseline.attempt(session, &turn, baseline_rng)?;
        }
    }
    Ok(Features {
        values: feature_values(&line, &ladder, &engine_facts, &board),
        baseline_solve_rate: baseline.map(|b| b.solve_rate()),
    })
}

/// One solver move of a puzzle, as the signals see it.
struct SolverTurn<'a> {
    puzzle: &'a Puzzle,
    /// Index of the solver's move in the puzzle's moves.
    ply: usize,
    /// The position the solver faces.
    position: &'a Chess,
    /// The puzzle's last move (any mate is correct there).
    last: bool,
}

impl SolverTurn<'_> {
    /// A search of the position, given as the puzzle's FEN and moves.
    fn request(&self, limit: Limit, multipv: u32) -> SearchRequest {
        SearchRequest {
            fen: self.puzzle.fen.clone(),
            moves: self.puzzle.moves[..self.ply].to_vec(),
            limit,
            multipv,
        }
    }

    /// Whether `candidate` (UCI) solves this turn.
    fn is_correct(&self, candidate: &str) -> bool {
        is_correct(
            self.position,
            candidate,
            &self.puzzle.moves[self.ply],
            self.last,
        )
    }
}

/// The engine probe and the wide scan at one solver turn, each from an
/// empty hash table: what an earlier search left there would make a
/// shallow search look deeper.
fn probe_and_scan(
    session: &mut Session,
    turn: &SolverTurn,
    signals: &SignalConfig,
) -> std::result::Result<EngineFacts, EngineError> {
    clear_hash(session)?;
    let probe = session.search(&turn.request(Limit::Nodes(signals.probe_nodes), 2))?;
    let last_depth = probe.best_by_depth.last().map(|(d, _, _)| *d).unwrap_or(0);
    let mut found_depth = f64::from(last_depth + 1);
    for (depth, best, _) in probe.best_by_depth.iter().rev() {
        if turn.is_correct(best) {
            found_depth = f64::from(*depth);
        } else {
            break;
        }
    }
    let gap = match (probe.lines.first(), probe.lines.get(1)) {
        (Some(a), Some(b)) => (capped_cp(a.score) - capped_cp(b.score)).clamp(0.0, 1000.0),
        _ => 1000.0,
    };
    clear_hash(session)?;
    let legal = turn.position.legal_moves().len() as u32;
    let wide = session.search(&turn.request(Limit::Depth(signals.wide_depth), legal.max(1)))?;
    let best_score = wide
        .lines
        .first()
        .map(|l| capped_cp(l.score))
        .unwrap_or(0.0);
    let solution_line = wide
        .lines
        .iter()
        .position(|l| l.pv.first().is_some_and(|m| turn.is_correct(m)));
    let (wide_rank, wide_deficit) = match solution_line {
        Some(i) => (
            (i + 1) as f64,
            (best_score - capped_cp(wide.lines[i].score)).max(0.0),
        ),
        None => (f64::from(legal), 1000.0),
    };
    let wide_close = wide
        .lines
        .iter()
        .filter(|l| best_score - capped_cp(l.score) <= 50.0)
        .count() as f64;
    Ok(EngineFacts {
        found_depth,
        gap,
        wide_rank,
        wide_close,
        wide_deficit,
        best_score: probe
            .lines
            .first()
            .map(|l| capped_cp(l.score))
            .unwrap_or(0.0),
        mate_in: match probe.lines.first().map(|l| l.score) {
            Some(Score::Mate(moves)) if moves > 0 => f64::from(moves),
            _ => 0.0,
        },
        pv_plies: probe
            .lines
            .first()
            .map(|l| l.pv.len() as f64)
            .unwrap_or(0.0),
    })
}

/// The weakened player's attempts at a puzzle: per strength, per attempt,
/// whether it has found every solver move so far.
struct Ladder {
    /// Skill levels, weakest first.
    levels: Vec<f64>,
    /// `solved[level][attempt]`.
    solved: Vec<Vec<bool>>,
    /// Per solver turn, the share of all picks (every strength, every
    /// attempt) that were correct at that turn, whatever happened before:
    /// which move of a line is the hard one.
    turn_rates: Vec<f64>,
}

impl Ladder {
    fn new(levels: Vec<f64>, attempts: usize) -> Self {
        let solved = vec![vec![true; attempts]; levels.len()];
        Self {
            levels,
            solved,
            turn_rates: Vec::new(),
        }
    }

    /// One solver turn: a search per strength, then each attempt's pick
    /// from it.
    fn attempt(
        &mut self,
        session: &mut Session,
        turn: &SolverTurn,
        rng: &mut ChaCha8Rng,
    ) -> std::result::Result<(), EngineError> {
        let (mut picks, mut correct) = (0usize, 0usize);
        for (level_index, &level) in self.levels.iter().enumerate() {
            let result = session.search(&turn.request(
                Limit::Depth(weaken::pick_depth(level)),
                weaken::SKILL_MULTIPV,
            ))?;
            for attempt in self.solved[level_index].iter_mut() {
                let pick = weakened_pick(&result.lines, level, rng);
                let hit = pick.is_some_and(|m| turn.is_correct(m));
                *attempt &= hit;
                picks += 1;
                correct += usize::from(hit);
            }
        }
        self.turn_rates.push(correct as f64 / picks.max(1) as f64);
        Ok(())
    }

    /// The share of attempts that solved the puzzle, over all strengths.
    fn solve_rate(&self) -> f64 {
        solve_rate(&self.solved)
    }

    /// The same over the weaker half of the strengths.
    fn low_solve_rate(&self) -> f64 {
        solve_rate(&self.solved[..self.levels.len().div_ceil(2)])
    }
}

fn solve_rate(rows: &[Vec<bool>]) -> f64 {
    let total: usize = rows.iter().map(Vec::len).sum();
    let hits: usize = rows.iter().flatten().filter(|s| **s).count();
    hits as f64 / total.max(1) as f64
}

/// The feature vector, in the order of [`FEATURE_NAMES`].
fn feature_values(
    line: &PuzzleLine,
    ladder: &Ladder,
    engine_facts: &[EngineFacts],
    board: &[BoardFacts],
) -> Vec<f64> {
    let first_engine = engine_facts.first().cloned().unwrap_or_default();
    let first_board = board.first().cloned().unwrap_or_default();
    let n = engine_facts.len().max(1) as f64;
    let pieces = line
        .position_after(1)
        .map(|p| p.board().occupied().count() as f64)
        .unwrap_or(0.0);
    let mut values = vec![
        ladder.solve_rate(),
        ladder.low_solve_rate(),
        engine_facts
            .iter()
            .map(|f| f.found_depth)
            .fold(0.0, f64::max),
        first_engine.found_depth,
        engine_facts.iter().map(|f| f.found_depth).sum::<f64>() / n,
        engine_facts
            .iter()
            .map(|f| f.gap.ln_1p())
            .fold(f64::INFINITY, f64::min)
            .min(1000f64.ln_1p()),
        first_engine.gap.ln_1p(),
        first_engine.wide_rank.ln(),
        first_engine.wide_close,
        first_engine.wide_deficit.ln_1p(),
        first_board.legal_moves,
        first_board.checks_available,
        first_board.captures_available,
        first_board.is_capture,
        first_board.is_check,
        first_board.is_quiet,
        board.iter().map(|b| b.is_promotion).fold(0.0, f64::max),
        first_board.moved_value,
        first_board.captured_value,
        board.iter().map(|b| b.is_sacrifice).sum::<f64>(),
        first_board.is_recapture,
        first_board.after_capture,
        first_board.naive_rank.ln(),
        first_board.distance,
        first_board.backward,
        pieces,
        f64::from(u8::from(line.ends_in_checkmate())),
        first_board.in_check,
        first_board.other_good_captures,
        first_board.mates_available,
        first_board.is_knight,
        first_board.is_king,
        first_engine.best_score,
        board.iter().map(|b| b.is_check).sum::<f64>() / n,
        board.iter().map(|b| b.is_capture).sum::<f64>() / n,
        board.iter().map(|b| b.is_quiet).sum::<f64>() / n,
    ];
    // Counts matter by ratio (the third check adds less than the second),
    // which a linear fit only sees on a log scale; measured on the Lichess
    // sample, these lift the 1-move group's held-out Spearman by ~0.04.
    for count in [
        first_board.checks_available,
        first_board.captures_available,
        first_board.legal_moves,
        first_board.other_good_captures,
        first_board.mates_available,
        first_engine.wide_close,
        pieces,
        (first_board.checks_available - first_board.mates_available).max(0.0),
    ] {
        values.push(count.ln_1p());
    }
    values.push(values[0] * values[4]);
    values.extend(line_values(ladder, engine_facts, board));
    debug_assert_eq!(values.len(), FEATURE_NAMES.len());
    values
}

/// A solver move whose probe puts the second move this far (cp) below the
/// best is an only move: Lichess's puzzle generator asks the same of every
/// solver move, so longer lines differ in how many moves clear it by far.
const ONLY_MOVE_GAP_CP: f64 = 200.0;

/// Signals of where a line's difficulty sits beyond its first move: the
/// ladder's hardest turn, how many moves are only moves or quiet, how deep
/// the later moves are found.
fn line_values(ladder: &Ladder, engine_facts: &[EngineFacts], board: &[BoardFacts]) -> Vec<f64> {
    let n = engine_facts.len().max(1) as f64;
    let rates = &ladder.turn_rates;
    let later_rates = rates.get(1..).unwrap_or_default();
    let later_engine = engine_facts.get(1..).unwrap_or_default();
    let only_moves = engine_facts
        .iter()
        .filter(|f| f.gap >= ONLY_MOVE_GAP_CP)
        .count() as f64;
    vec![
        rates.first().copied().unwrap_or(1.0),
        rates.iter().copied().fold(1.0, f64::min),
        later_rates.iter().copied().fold(1.0, f64::min),
        only_moves,
        only_moves / n,
        board.iter().map(|b| b.is_quiet).sum::<f64>(),
        later_engine
            .iter()
            .map(|f| f.found_depth)
            .fold(0.0, f64::max),
        later_engine
            .iter()
            .map(|f| f.gap.ln_1p())
            .fold(1000f64.ln_1p(), f64::min),
        engine_facts.len() as f64,
        f64::from(u8::from(
            !board.is_empty() && board.iter().all(|b| b.is_check > 0.0),
        )),
        board.first().map(|b| b.is_sacrifice).unwrap_or(0.0),
        engine_facts
            .first()
            .map(|f| f.mate_in.ln_1p())
            .unwrap_or(0.0),
        engine_facts
            .first()
            .map(|f| f.pv_plies.ln_1p())
            .unwrap_or(0.0),
    ]
}

fn compute_features_with(
    pool: &EnginePool,
    targets: &[&Puzzle],
    signals: &SignalConfig,
    seed: u64,
    baseline: bool,
) -> Result<Vec<Features>> {
    let bar = crate::core::progress::items(targets.len() as u64, "rate");
    let result = pool.map(targets, |session, _, puzzle| {
        // Keyed by the puzzle's id, not its row: a puzzle's draws (and so its
        // rating) must not depend on which worker served it, nor on which
        // file or row it sits in, so that `run --shard` slices rate to the
        // same bytes as a whole run. The baseline draws from its own domain
        // so that measuring it does not change the model's signals.
        let key = Key::Name(&puzzle.id);
        let mut rng = seed::rng(seed, Domain::RatePuzzle, key);
        let baseline_rng = baseline.then(|| seed::rng(seed, Domain::RateBaseline, key));
        let features = puzzle_features(session, puzzle, signals, &mut rng, baseline_rng);
        bar.inc(1);
        features
    });
    bar.finish_and_clear();
    result
}

/// Signals of the given puzzles, in order.
pub(crate) fn compute_features(
    pool: &EnginePool,
    targets: &[&Puzzle],
    signals: &SignalConfig,
    seed: u64,
) -> Result<Vec<Features>> {
    compute_features_with(pool, targets, signals, seed, false)
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

/// Solver-length groups: each has its own fit and deviation.
pub(crate) const LENGTH_GROUPS: [(&str, usize, usize); 3] =
    [("1", 1, 1), ("2", 2, 2), ("3+", 3, usize::MAX)];

fn group_of(solver_moves: usize) -> usize {
    LENGTH_GROUPS
        .iter()
        .position(|(_, lo, hi)| (*lo..=*hi).contains(&solver_moves))
        .unwrap_or(0)
}

/// The model's groups, each with its own fit: the length groups, with the
/// single-move mates apart. Lichess's single-move puzzles are mostly mates
/// in one, the generator's mostly not; the non-mates learn from the
/// single-move proxies, which would drag the mates' fit off.
pub(crate) const MODEL_GROUPS: [&str; 4] = ["1 mate", "1", "2", "3+"];

fn model_group(solver_moves: usize, mates: bool) -> usize {
    if solver_moves == 1 && mates {
        0
    } else {
        1 + group_of(solver_moves)
    }
}

/// Index of `ends_in_mate` in [`FEATURE_NAMES`].
const ENDS_IN_MATE: usize = 26;

fn mates(features: &Features) -> bool {
    features.values.get(ENDS_IN_MATE).is_some_and(|v| *v > 0.0)
}

/// One length group's model.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct GroupModel {
    pub group: String,
    pub rows: usize,
    pub fit: RidgeFit,
    /// Root mean square of the held-out residuals: the deviation given to
    /// every puzzle rated in this group.
    pub deviation: f64,
}

/// The fitted rating model, as stored in a release.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RatingModel {
    pub format: u32,
    pub engine: String,
    pub seed: u64,
    pub signals: SignalConfig,
    pub features: Vec<String>,
    pub groups: Vec<GroupModel>,
}

impl RatingModel {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the rating model {}", path.display()))?;
        let model: RatingModel = serde_json::from_str(&text)
            .map_err(|e| bad_input(format!("{}: not a rating model: {e}", path.display())))?;
        if model.format != MODEL_FORMAT {
            return Err(bad_input(format!(
                "{}: rating model format {} (this puzzleforge reads {MODEL_FORMAT})",
                path.display(),
                model.format
            )));
        }
        if model.features != FEATURE_NAMES {
            return Err(bad_input(format!(
                "{}: the model's features differ from this puzzleforge's; calibrate again",
                path.display()
            )));
        }
        if model.groups.len() != MODEL_GROUPS.len()
            || model
                .groups
                .iter()
                .any(|g| g.fit.weights.len() != FEATURE_NAMES.len())
        {
            return Err(bad_input(format!(
                "{}: the model needs one fit per group ({}) over {} features",
                path.display(),
                MODEL_GROUPS.join(", "),
                FEATURE_NAMES.len()
            )));
        }
        Ok(model)
    }

    /// Rating and deviation for a puzzle of `solver_moves` with `features`.
    pub fn rate(&self, solver_moves: usize, features: &Features) -> (i32, i32) {
        let group = &self.groups[model_group(solver_moves, mates(features))];
        let rating = group
            .fit
            .predict(&features.values)
            .clamp(RATING_FLOOR, RATING_CEILING);
        (rating.round() as i32, group.deviation.round() as i32)
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
        assert_eq!(FEATURE_NAMES[ENDS_IN_MATE], "ends_in_mate");
        assert_eq!(model_group(1, true), 0);
        assert_eq!(model_group(1, false), 1);
        assert_eq!(model_group(2, true), 2);
        assert_eq!(model_group(5, false), 3);
    }
}
