//! `puzzleforge bench generate`: generated puzzles per engine CPU-hour,
//! overall and for a tier (the `hard` tier by default), side by side in one
//! run with Epoch's procedure on the same games.
//!
//! It plays `--games` self-play games with the config's generation settings
//! (`[generate.selfplay]`, `[generate.mine]`, and with `--tier` that tier's
//! profile), then mines, rates and verifies them exactly as a target run's
//! batch does, recording the engine CPU of each step.
//!
//! Epoch's procedure is the full search (depth 18 by default) on every
//! position from fullmove 10, keeping every position that passes. Running it
//! on every game would cost most of the benchmark, so it runs on a sample:
//! every `--exhaustive-every`-th game (1: all of them). From the sample come
//! its engine CPU and nodes per analysed position, which times the positions
//! of all the games give its mining cost; and its kept puzzles per game. The
//! funnel is mined again on the same sample, so the recall of the funnel
//! against the exhaustive search is measured on the same positions. Epoch's
//! hard puzzles are estimated as the mined puzzles' hard share (rated by the
//! model, unverified: Epoch verifies nothing) times its kept puzzles.

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::chess::columns::Column;
use crate::chess::record::{Puzzle, read_puzzles};
use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;
use crate::core::summary::Summary;
use crate::engine::pool::EnginePool;
use crate::engine::settings::EngineArgs;
use crate::engine::settings::EngineConfig;
use crate::generate::{Sections, StepSeconds};
use crate::stages::mine::{self, FunnelCheck, MineConfig, StepUsage};
use crate::stages::release::cells::Tier;

/// `puzzleforge bench generate`'s flags (their help: `cli::bench`).
#[derive(Debug, Clone)]
pub struct BenchGenerateArgs {
    pub config: PathBuf,
    pub games: u64,
    pub seed: Option<u64>,
    pub tier: Option<String>,
    pub count_tier: Option<String>,
    pub depth: Option<u32>,
    pub exhaustive_every: usize,
    pub dir: Option<PathBuf>,
    pub cache: Option<PathBuf>,
    /// Laid over `[engine]` by [`EngineArgs::resolve`].
    pub engine: EngineArgs,
}

/// Runs the benchmark on the sections of `args.config` (which the caller
/// loaded) and its `[engine]` section.
pub(crate) fn run_bench_generate(
    args: &BenchGenerateArgs,
    sections: &Sections<'_>,
    engine_config: &EngineConfig,
) -> Result<Summary> {
    if args.games == 0 || args.exhaustive_every == 0 {
        crate::bail_input!("bench generate: --games and --exhaustive-every must be at least 1");
    }
    let mut mine = sections.mine.clone();
    if let Some(depth) = args.depth {
        mine.depth = depth;
        mine.nodes = None;
    }
    let config = Sections {
        seed: args.seed.unwrap_or(sections.seed),
        mine: &mine,
        verify: sections.verify.clone(),
        ..*sections
    };
    let count_tier_name = args
        .count_tier
        .clone()
        .or_else(|| args.tier.clone())
        .or_else(|| {
            config
                .release
                .tiers
                .contains_key("hard")
                .then(|| "hard".to_string())
        });
    let count_tier = match &count_tier_name {
        Some(name) => Some(config.release.tiers.get(name).cloned().ok_or_else(|| {
            bad_input(format!(
                "--count-tier {name:?} is not a tier of [release.tiers]"
            ))
        })?),
        None => None,
    };
    let (spec, pool_config) = args.engine.resolve(engine_config)?;
    let sha256 = sha256_file(&spec.path)?;
    let engine = crate::generate::Engine {
        spec: &spec,
        pool: &pool_config,
        sha256: &sha256,
    };
    let (dir, temporary) = match &args.dir {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("puzzleforge-bench-generate-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let measured = measure(args, &config, engine, &dir, count_tier.as_ref());
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let measured = measured?;
    let report = BenchReport::new(args, config.seed, count_tier_name.as_deref(), &measured);
    let json = serde_json::to_value(&report.record).context("serializing the bench report")?;
    Ok(Summary::new(report.human(), json))
}

/// What one run measures.
struct Measured {
    /// The mine settings the games were mined with (the profile's).
    mine: MineConfig,
    /// The self-play and mine settings, as JSON.
    settings: Value,
    games: u64,
    positions: u64,
    /// Engine CPU seconds by step of the funnel's batch.
    steps: StepSeconds,
    mined: Vec<Puzzle>,
    verified: Vec<Puzzle>,
    mined_in_tier: usize,
    verified_in_tier: usize,
    /// Mined puzzles of the sampled games.
    mined_in_sample: usize,
    sample: Sample,
}

/// Epoch's exhaustive search and the funnel on the sampled games.
struct Sample {
    games: usize,
    /// The exhaustive search's candidates the funnel missed, as
    /// "GAME PLY MOVE".
    missed: Vec<String>,
    /// The sampled games' ids, to count the funnel's puzzles among them.
    game_ids: std::collections::HashSet<String>,
    check: FunnelCheck,
}

fn measure(
    args: &BenchGenerateArgs,
    sections: &Sections<'_>,
    engine: crate::generate::Engine,
    dir: &Path,
    tier: Option<&Tier>,
) -> Result<Measured> {
    let (batch, mine_config, settings) =
        crate::generate::play_one_batch(sections, engine, args.tier.as_deref(), args.games, dir)?;
    let record = crate::generate::read_batch_record(&batch)?;
    let steps = record.engine_cpu_seconds_by_step;
    let mined = read_puzzles(&batch.join("rated.csv"))?;
    let verified: Vec<Puzzle> = read_puzzles(&batch.join("verified.csv"))?
        .into_iter()
        .filter(|p| p.check(Column::Verified) == Some(true))
        .collect();
    let in_tier =
        |puzzles: &[Puzzle]| tier.map_or(0, |t| puzzles.iter().filter(|p| t.admits(p)).count());
    let sample = sample(args, engine, &batch.join("games.pgn"), &mine_config)?;
    let mined_in_sample = (mined.iter())
        .filter(|p| (p.get(Column::GameId.name())).is_some_and(|id| sample.game_ids.contains(id)))
        .count();
    Ok(Measured {
        mined_in_sample,
        mine: mine_config,
        settings,
        games: record.games,
        positions: record.positions,
        steps,
        mined_in_tier: in_tier(&mined),
        verified_in_tier: in_tier(&verified),
        mined,
        verified,
        sample,
    })
}

/// Mines every `--exhaustive-every`-th game exhaustively and with the
/// funnel (`FunnelCheck`, as `bench mine` does), on one fresh pool.
fn sample(
    args: &BenchGenerateArgs,
    engine: crate::generate::Engine,
    games: &Path,
    funnel: &MineConfig,
) -> Result<Sample> {
    let units: Vec<mine::MineUnit> = mine::load_input(games)?
        .units
        .into_iter()
        .step_by(args.exhaustive_every)
        .collect();
    let pool = EnginePool::new(engine.spec.clone(), engine.pool.clone())?;
    let reference = match &args.cache {
        None => None,
        Some(folder) => Some(exhaustive_cache_file(
            folder,
            games,
            args.exhaustive_every,
            funnel,
            engine.sha256,
        )?),
    };
    let check = match reference.as_deref().map(read_exhaustive).transpose()? {
        Some(Some(exhaustive)) => FunnelCheck::run_against(&units, funnel, &pool, exhaustive)?,
        _ => {
            let check = FunnelCheck::run(&units, funnel, &pool)?;
            if let Some(file) = &reference {
                write_exhaustive(file, &check)?;
            }
            check
        }
    };
    let found = check.funnel.candidate_keys();
    let mut missed: Vec<(usize, usize, String)> = (check.exhaustive.candidate_keys())
        .difference(&found)
        .map(|(unit, ply, best)| (*unit, *ply, best.to_string()))
        .collect();
    missed.sort();
    let missed = (missed.into_iter())
        .map(|(unit, ply, best)| format!("{} {ply} {best}", units[unit].game_id))
        .collect();
    Ok(Sample {
        missed,
        games: units.len(),
        game_ids: units.iter().map(|unit| unit.game_id.clone()).collect(),
        check,
    })
}

/// Epoch's exhaustive results on a sample, as the cache keeps them.
#[derive(Serialize, serde::Deserialize)]
struct CachedExhaustive {
    cpu_seconds: f64,
    results: Vec<mine::UnitResult>,
}

/// The cache file of the exhaustive results on `games`' sample under
/// `funnel`'s settings made exhaustive, on the engine of `engine_sha256`.
fn exhaustive_cache_file(
    folder: &Path,
    games: &Path,
    every: usize,
    funnel: &MineConfig,
    engine_sha256: &str,
) -> Result<PathBuf> {
    // The screens' settings do not change what the exhaustive search
    // finds, so funnels that differ only in them share one reference.
    let screens = MineConfig::default();
    let settings = serde_json::to_string(&MineConfig {
        exhaustive: true,
        shallow_depth: screens.shallow_depth,
        shallow_margin_cp: screens.shallow_margin_cp,
        shallow_margin_win: screens.shallow_margin_win,
        shallow_margin_loss_cp: screens.shallow_margin_loss_cp,
        swing_depth: screens.swing_depth,
        swing_margin_cp: screens.swing_margin_cp,
        played_bound: screens.played_bound,
        line_screen: screens.line_screen,
        ..funnel.clone()
    })
    .context("serializing the mine settings")?;
    let key = crate::core::fileio::sha256_bytes(
        format!(
            "{}\n{every}\n{settings}\n{engine_sha256}",
            sha256_file(games)?
        )
        .as_bytes(),
    );
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    Ok(folder.join(format!("exhaustive-{}.json", &key[..16])))
}

/// The cached exhaustive results, when the file is there.
fn read_exhaustive(file: &Path) -> Result<Option<(mine::MineRun, f64)>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let cached: CachedExhaustive = serde_json::from_str(&text).map_err(|e| {
        bad_input(format!(
            "{}: not an exhaustive cache file: {e}",
            file.display()
        ))
    })?;
    Ok(Some((
        mine::MineRun {
            results: cached.results,
        },
        cached.cpu_seconds,
    )))
}

fn write_exhaustive(file: &Path, check: &FunnelCheck) -> Result<()> {
    let cached = CachedExhaustive {
        cpu_seconds: check.exhaustive_cpu_seconds,
        results: check.exhaustive.results.clone(),
    };
    let text = serde_json::to_string(&cached).context("serializing the exhaustive results")?;
    crate::core::fileio::write_atomic(file, text.as_bytes())
}

/// `x` per analysed position of the exhaustive search (0 without any).
fn per_position(x: f64, positions: u64) -> f64 {
    if positions > 0 {
        x / positions as f64
    } else {
        0.0
    }
}

/// Per engine CPU-hour: `count` over `seconds`.
fn per_hour(count: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count * 3600.0 / seconds
    } else {
        0.0
    }
}

/// `a / b`, none when `b` is 0 (nothing to compare with).
fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

fn show(ratio: Option<f64>) -> String {
    ratio.map_or("n/a".to_string(), |r| format!("{r:.2}x"))
}

/// The verified puzzles by (solver moves, mate), as "1", "2 mate", ...
fn mix(puzzles: &[Puzzle]) -> BTreeMap<String, usize> {
    let mut mix = BTreeMap::new();
    for puzzle in puzzles {
        let mate = if puzzle.is_mate() { " mate" } else { "" };
        *mix.entry(format!("{}{mate}", puzzle.solver_moves()))
            .or_default() += 1;
    }
    mix
}

/// What `bench generate` reports: the JSON summary, and the figures its
/// text shows besides.
struct BenchReport<'a> {
    record: Report<'a>,
    text_only: TextFigures,
}

/// The JSON summary of `bench generate`.
#[derive(Serialize)]
struct Report<'a> {
    command: &'static str,
    games: u64,
    seed: u64,
    profile_tier: Option<&'a str>,
    count_tier: Option<&'a str>,
    settings: &'a Value,
    positions: u64,
    puzzleforge: OursFigures,
    epoch_modelled: EpochFigures,
    sample: SampleFigures<'a>,
    ratio_per_cpu_hour: Option<f64>,
    /// The same ratio with Epoch's `kept_sampled`.
    ratio_per_cpu_hour_sampled: Option<f64>,
    ratio_in_tier_per_cpu_hour: Option<f64>,
}

/// The figures the text shows beside the JSON summary's.
struct TextFigures {
    /// The first fullmove mined.
    min_fullmove: u32,
    /// The full search's limit, as "N nodes" or "depth D".
    search_limit: String,
    /// Self-play and mine CPU seconds: the cost of the mined puzzles.
    mined_cpu_seconds: f64,
    mined_in_tier_per_cpu_hour: f64,
    /// Epoch's exhaustive search on the sample, per analysed position.
    epoch_cpu_seconds_per_position: f64,
    epoch_nodes_per_position: f64,
    /// The funnel's nodes on the sample, per position the exhaustive
    /// search analysed.
    funnel_nodes_per_position: f64,
    mined_in_sample: usize,
}

/// puzzleforge's funnel on every game.
#[derive(Serialize)]
struct OursFigures {
    cpu_seconds: f64,
    /// Engine CPU seconds by step, in step order.
    #[serde(serialize_with = "ordered_map")]
    cpu_seconds_by_step: Vec<(String, f64)>,
    mined: usize,
    verified: usize,
    mined_in_tier: usize,
    verified_in_tier: usize,
    verified_per_cpu_hour: f64,
    verified_in_tier_per_cpu_hour: f64,
    mined_per_cpu_hour_without_rate_verify: f64,
    mined_per_game: f64,
    verified_per_game: f64,
    verified_mix: BTreeMap<String, usize>,
    verified_ratings: Vec<i32>,
}

/// Epoch's exhaustive procedure, modelled from the sample.
#[derive(Serialize)]
struct EpochFigures {
    sample_games: usize,
    sample_positions: u64,
    exhaustive_cpu_seconds_sample: f64,
    exhaustive_nodes_sample: u64,
    mine_cpu_seconds: f64,
    mine_nodes: f64,
    cpu_seconds: f64,
    /// Epoch's puzzles on every game, estimated as its puzzles on the
    /// sample scaled by the funnel's mined puzzles on every game over
    /// those on the sample (a ratio estimator: how rich the sampled games
    /// happen to be cancels out); `kept_sampled` where the sample has
    /// none of the funnel's.
    kept: f64,
    /// Epoch's puzzles on the sample times the games over the sampled
    /// games (the estimate before 2026-12-07: its error is the sample's
    /// richness).
    kept_sampled: f64,
    kept_in_tier: f64,
    kept_per_game: f64,
    kept_per_cpu_hour: f64,
    kept_in_tier_per_cpu_hour: f64,
}

/// The exhaustive search and the funnel on the sampled games.
#[derive(Serialize)]
struct SampleFigures<'a> {
    exhaustive_candidates: usize,
    exhaustive_puzzles: usize,
    funnel_candidates: usize,
    found: usize,
    recall: f64,
    /// The exhaustive search's candidates the funnel missed.
    missed: &'a [String],
    funnel_cpu_seconds: f64,
    funnel_nodes: u64,
    nodes_ratio: Option<f64>,
    /// The funnel's and the exhaustive search's engine work on the sample,
    /// by step (searches, nodes, CPU seconds).
    funnel_steps: StepUsage,
    exhaustive_steps: StepUsage,
}

/// `(key, value)` pairs as a map, in their order.
fn ordered_map<S: serde::Serializer>(pairs: &[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(key, value)| (key, value)))
}

impl<'a> BenchReport<'a> {
    fn new(args: &'a BenchGenerateArgs, seed: u64, tier: Option<&'a str>, m: &'a Measured) -> Self {
        Self {
            record: Report::new(args, seed, tier, m),
            text_only: TextFigures::new(m),
        }
    }

    /// The text: a table of the procedures, then the sample's figures.
    fn human(&self) -> String {
        let (record, text) = (&self.record, &self.text_only);
        let (ours, epoch, sample) = (&record.puzzleforge, &record.epoch_modelled, &record.sample);
        let tier_name = record.count_tier.unwrap_or("-");
        let profile = (record.profile_tier)
            .map(|t| format!(", tier {t}'s profile"))
            .unwrap_or_default();
        let steps = (ours.cpu_seconds_by_step.iter())
            .map(|(k, v)| format!("{k} {v:.0}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "bench generate: {} games (seed {}{profile}), {} positions from fullmove {}, full search {}\n\
             {:<34} {:>9} {:>9} {:>10} {:>12} {:>12}\n\
             {:<34} {:>9} {:>9} {:>10.0} {:>12.1} {:>12.1}\n\
             {:<34} {:>9} {:>9} {:>10.0} {:>12.1} {:>12.1}\n\
             {:<34} {:>9.1} {:>9.1} {:>10.0} {:>12.1} {:>12.1}\n\
             puzzleforge, engine CPU s by step: {steps}\n\
             Epoch's mining modelled from {} sampled games ({} positions): {:.3} CPU s and {:.0} nodes per position (funnel: {:.0}); nodes ratio {}\n\
             on the sample, engine CPU s (searches) by step: funnel {}; exhaustive {}\n\
             recall of the funnel on the sample: {}/{} = {:.1}%\n\
             Epoch's puzzles on every game: {:.1} (its {} on the sample scaled by the funnel's {} mined on every game over its {} on the sample; {:.1} scaled by games)\n\
             puzzles per CPU-hour, puzzleforge (verified) / Epoch (kept): {}; {tier_name}: {} (scaled by games: {})\n\
             verified mix (solver moves): {:?}",
            record.games,
            record.seed,
            record.positions,
            text.min_fullmove,
            text.search_limit,
            "procedure",
            "puzzles",
            tier_name,
            "CPU s",
            "puzzles/CPU-h",
            "tier/CPU-h",
            "puzzleforge, verified",
            ours.verified,
            ours.verified_in_tier,
            ours.cpu_seconds,
            ours.verified_per_cpu_hour,
            ours.verified_in_tier_per_cpu_hour,
            "puzzleforge, mined (no rate/verify)",
            ours.mined,
            ours.mined_in_tier,
            text.mined_cpu_seconds,
            ours.mined_per_cpu_hour_without_rate_verify,
            text.mined_in_tier_per_cpu_hour,
            "Epoch exhaustive (modelled)",
            epoch.kept,
            epoch.kept_in_tier,
            epoch.cpu_seconds,
            epoch.kept_per_cpu_hour,
            epoch.kept_in_tier_per_cpu_hour,
            epoch.sample_games,
            epoch.sample_positions,
            text.epoch_cpu_seconds_per_position,
            text.epoch_nodes_per_position,
            text.funnel_nodes_per_position,
            show(sample.nodes_ratio),
            sample.funnel_steps.text(0),
            sample.exhaustive_steps.text(0),
            sample.found,
            sample.exhaustive_candidates,
            sample.recall * 100.0,
            epoch.kept,
            sample.exhaustive_puzzles,
            ours.mined,
            text.mined_in_sample,
            epoch.kept_sampled,
            show(record.ratio_per_cpu_hour),
            show(record.ratio_in_tier_per_cpu_hour),
            show(record.ratio_per_cpu_hour_sampled),
            ours.verified_mix,
        )
    }
}

impl TextFigures {
    fn new(m: &Measured) -> Self {
        let check = &m.sample.check;
        let exhaustive = check.exhaustive.stats();
        let mined_cpu_seconds = m.steps.selfplay + m.steps.mine;
        Self {
            min_fullmove: m.mine.min_fullmove,
            search_limit: match m.mine.nodes {
                Some(nodes) => format!("{nodes} nodes"),
                None => format!("depth {}", m.mine.depth),
            },
            mined_cpu_seconds,
            mined_in_sample: m.mined_in_sample,
            mined_in_tier_per_cpu_hour: per_hour(m.mined_in_tier as f64, mined_cpu_seconds),
            epoch_cpu_seconds_per_position: per_position(
                check.exhaustive_cpu_seconds,
                exhaustive.positions,
            ),
            epoch_nodes_per_position: per_position(exhaustive.nodes as f64, exhaustive.positions),
            funnel_nodes_per_position: per_position(
                check.funnel.stats().nodes as f64,
                exhaustive.positions,
            ),
        }
    }
}

impl<'a> Report<'a> {
    fn new(args: &'a BenchGenerateArgs, seed: u64, tier: Option<&'a str>, m: &'a Measured) -> Self {
        let games = m.games as f64;
        let ours = OursFigures::new(m, games);
        let epoch = EpochFigures::new(m, games);
        let funnel = m.sample.check.funnel.stats();
        let check = &m.sample.check;
        let sample = SampleFigures {
            exhaustive_candidates: check.exhaustive_candidates,
            exhaustive_puzzles: check.exhaustive_puzzles,
            funnel_candidates: check.funnel_candidates,
            found: check.found,
            recall: check.recall(),
            missed: &m.sample.missed,
            funnel_cpu_seconds: check.funnel_cpu_seconds,
            funnel_nodes: funnel.nodes,
            nodes_ratio: check.nodes_ratio(),
            funnel_steps: funnel.steps.clone(),
            exhaustive_steps: check.exhaustive.stats().steps,
        };
        Self {
            command: "bench generate",
            games: m.games,
            seed,
            profile_tier: args.tier.as_deref(),
            count_tier: tier,
            settings: &m.settings,
            positions: m.positions,
            ratio_per_cpu_hour: ratio(ours.verified_per_cpu_hour, epoch.kept_per_cpu_hour),
            ratio_per_cpu_hour_sampled: ratio(
                ours.verified_per_cpu_hour,
                per_hour(epoch.kept_sampled, epoch.cpu_seconds),
            ),
            ratio_in_tier_per_cpu_hour: ratio(
                ours.verified_in_tier_per_cpu_hour,
                epoch.kept_in_tier_per_cpu_hour,
            ),
            puzzleforge: ours,
            epoch_modelled: epoch,
            sample,
        }
    }
}

impl OursFigures {
    fn new(m: &Measured, games: f64) -> Self {
        let mined_cpu_seconds = m.steps.selfplay + m.steps.mine;
        let total: f64 = m.steps.named().iter().map(|(_, v)| v).sum();
        let (mined, verified) = (m.mined.len() as f64, m.verified.len() as f64);
        Self {
            cpu_seconds: total,
            cpu_seconds_by_step: (m.steps.named().iter())
                .map(|(step, seconds)| (step.to_string(), *seconds))
                .collect(),
            mined: m.mined.len(),
            verified: m.verified.len(),
            mined_in_tier: m.mined_in_tier,
            verified_in_tier: m.verified_in_tier,
            verified_per_cpu_hour: per_hour(verified, total),
            verified_in_tier_per_cpu_hour: per_hour(m.verified_in_tier as f64, total),
            mined_per_cpu_hour_without_rate_verify: per_hour(mined, mined_cpu_seconds),
            mined_per_game: mined / games,
            verified_per_game: verified / games,
            verified_mix: mix(&m.verified),
            verified_ratings: m.verified.iter().filter_map(|p| p.rating).collect(),
        }
    }
}

impl EpochFigures {
    /// Epoch's mining, modelled: the sample's cost per analysed position
    /// times the positions of every game; its tier puzzles, the mined
    /// puzzles' tier share of its kept ones.
    fn new(m: &Measured, games: f64) -> Self {
        let check = &m.sample.check;
        let exhaustive = check.exhaustive.stats();
        let cpu_seconds_per_position =
            per_position(check.exhaustive_cpu_seconds, exhaustive.positions);
        let nodes_per_position = per_position(exhaustive.nodes as f64, exhaustive.positions);
        let mine_cpu_seconds = cpu_seconds_per_position * m.positions as f64;
        let cpu_seconds = m.steps.selfplay + mine_cpu_seconds;
        let kept_sampled = check.exhaustive_puzzles as f64 / m.sample.games.max(1) as f64 * games;
        let kept = if m.mined_in_sample > 0 {
            check.exhaustive_puzzles as f64 * m.mined.len() as f64 / m.mined_in_sample as f64
        } else {
            kept_sampled
        };
        let tier_share = if m.mined.is_empty() {
            0.0
        } else {
            m.mined_in_tier as f64 / m.mined.len() as f64
        };
        let kept_in_tier = kept * tier_share;
        Self {
            sample_games: m.sample.games,
            sample_positions: exhaustive.positions,
            exhaustive_cpu_seconds_sample: check.exhaustive_cpu_seconds,
            exhaustive_nodes_sample: exhaustive.nodes,
            mine_cpu_seconds,
            mine_nodes: nodes_per_position * m.positions as f64,
            cpu_seconds,
            kept,
            kept_sampled,
            kept_in_tier,
            kept_per_game: kept / games,
            kept_per_cpu_hour: per_hour(kept, cpu_seconds),
            kept_in_tier_per_cpu_hour: per_hour(kept_in_tier, cpu_seconds),
        }
    }
}
