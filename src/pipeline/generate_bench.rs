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
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::chess::columns::Column;
use crate::chess::record::{Puzzle, read_puzzles};
use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;
use crate::core::summary::Summary;
use crate::engine::pool::EnginePool;
use crate::engine::settings::EngineArgs;
use crate::pipeline::config::PipelineConfig;
use crate::stages::mine::{self, FunnelCheck, MineConfig};
use crate::stages::release::cells::{Tier, is_mate};

/// `puzzleforge bench generate`.
#[derive(clap::Args, Debug)]
pub struct BenchGenerateArgs {
    /// Pipeline config: its [selfplay], [mine], [rate], [verify] and
    /// [generate] profiles are what is measured.
    #[arg(long, default_value = crate::pipeline::config::DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Self-play games to play.
    #[arg(long, default_value_t = 40)]
    pub games: u64,
    /// Seed of the games (default: pipeline.seed). Measure on a seed the
    /// settings were not tuned on.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Play with this tier's generation profile ([generate.tiers.NAME]).
    #[arg(long)]
    pub tier: Option<String>,
    /// The tier whose puzzles are counted beside the total (default: --tier,
    /// else "hard" when [split.tiers] has it).
    #[arg(long)]
    pub count_tier: Option<String>,
    /// Full search at this depth (replaces mine.nodes and mine.depth, for
    /// both procedures; Epoch's is 18).
    #[arg(long)]
    pub depth: Option<u32>,
    /// Epoch's exhaustive search runs on every N-th game (1: every game).
    #[arg(long, default_value_t = 4)]
    pub exhaustive_every: usize,
    /// Keep the games and the stages' files in this folder (default: a
    /// temporary folder, removed at the end).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Runs the benchmark.
pub fn run_bench_generate(args: &BenchGenerateArgs) -> Result<Summary> {
    if args.games == 0 || args.exhaustive_every == 0 {
        crate::bail_input!("bench generate: --games and --exhaustive-every must be at least 1");
    }
    let mut config = PipelineConfig::load(&args.config)?;
    if let Some(seed) = args.seed {
        config.pipeline.seed = seed;
    }
    if let Some(depth) = args.depth {
        config.mine.depth = depth;
        config.mine.nodes = None;
    }
    let count_tier_name = args
        .count_tier
        .clone()
        .or_else(|| args.tier.clone())
        .or_else(|| {
            config
                .split
                .tiers
                .contains_key("hard")
                .then(|| "hard".to_string())
        });
    let count_tier = match &count_tier_name {
        Some(name) => Some(config.split.tiers.get(name).cloned().ok_or_else(|| {
            bad_input(format!(
                "--count-tier {name:?} is not a tier of [split.tiers]"
            ))
        })?),
        None => None,
    };
    let (spec, pool_config) = args.engine.resolve(&config.engine)?;
    let sha256 = sha256_file(&spec.path)?;
    let engine = crate::pipeline::generate::Engine {
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
    Ok(summary(
        args,
        &config,
        count_tier_name.as_deref(),
        &measured,
    ))
}

/// What one run measures.
struct Measured {
    /// The mine settings the games were mined with (the profile's).
    mine: MineConfig,
    /// The self-play and mine settings, as JSON.
    settings: Value,
    games: u64,
    positions: u64,
    /// Engine CPU seconds by step of the funnel's batch, in step order.
    steps: Vec<(String, f64)>,
    mined: Vec<Puzzle>,
    verified: Vec<Puzzle>,
    mined_in_tier: usize,
    verified_in_tier: usize,
    sample: Sample,
}

/// Epoch's exhaustive search and the funnel on the sampled games.
struct Sample {
    games: usize,
    check: FunnelCheck,
}

fn measure(
    args: &BenchGenerateArgs,
    config: &PipelineConfig,
    engine: crate::pipeline::generate::Engine,
    dir: &Path,
    tier: Option<&Tier>,
) -> Result<Measured> {
    let sections = config.generate_sections();
    let (batch, mine_config, settings) = crate::pipeline::generate::play_one_batch(
        &sections,
        engine,
        args.tier.as_deref(),
        args.games,
        dir,
    )?;
    let batch_summary = crate::pipeline::generate::read_batch_summary(&batch)?;
    let steps = batch_summary["engine_cpu_seconds_by_step"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(0.0)))
        .collect();
    let mined = read_puzzles(&batch.join("rated.csv"))?;
    let verified: Vec<Puzzle> = read_puzzles(&batch.join("verified.csv"))?
        .into_iter()
        .filter(|p| p.check(Column::Verified) == Some(true))
        .collect();
    let in_tier =
        |puzzles: &[Puzzle]| tier.map_or(0, |t| puzzles.iter().filter(|p| t.admits(p)).count());
    let sample = sample(args, engine, &batch.join("games.pgn"), &mine_config)?;
    Ok(Measured {
        mine: mine_config,
        settings,
        games: batch_summary["games"].as_u64().unwrap_or(args.games),
        positions: batch_summary["positions"].as_u64().unwrap_or(0),
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
    engine: crate::pipeline::generate::Engine,
    games: &Path,
    funnel: &MineConfig,
) -> Result<Sample> {
    let units: Vec<mine::MineUnit> = mine::load_input(games)?
        .units
        .into_iter()
        .step_by(args.exhaustive_every)
        .collect();
    let pool = EnginePool::new(engine.spec.clone(), engine.pool.clone())?;
    Ok(Sample {
        games: units.len(),
        check: FunnelCheck::run(&units, funnel, &pool)?,
    })
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
        let mate = if is_mate(puzzle) { " mate" } else { "" };
        *mix.entry(format!("{}{mate}", puzzle.solver_moves()))
            .or_default() += 1;
    }
    mix
}

fn summary(
    args: &BenchGenerateArgs,
    config: &PipelineConfig,
    tier: Option<&str>,
    m: &Measured,
) -> Summary {
    let step = |name: &str| {
        m.steps
            .iter()
            .find(|(k, _)| k == name)
            .map_or(0.0, |(_, v)| *v)
    };
    let (selfplay, mine_cpu) = (step("selfplay"), step("mine"));
    let total: f64 = m.steps.iter().map(|(_, v)| v).sum();
    let s = &m.sample;
    let check = &s.check;
    let (exhaustive, funnel) = (check.exhaustive.stats(), check.funnel.stats());
    let games = m.games as f64;
    let sample_games = s.games.max(1) as f64;
    // Epoch's mining, modelled: the sample's cost per analysed position
    // times the positions of every game.
    let per_position = |x: f64| {
        if exhaustive.positions > 0 {
            x / exhaustive.positions as f64
        } else {
            0.0
        }
    };
    let epoch_mine_cpu = per_position(check.exhaustive_cpu_seconds) * m.positions as f64;
    let epoch_nodes = per_position(exhaustive.nodes as f64) * m.positions as f64;
    let funnel_nodes_per_position = per_position(funnel.nodes as f64);
    let epoch_cpu = selfplay + epoch_mine_cpu;
    let epoch_kept = check.exhaustive_puzzles as f64 / sample_games * games;
    let mined = m.mined.len() as f64;
    let hard_share = if m.mined.is_empty() {
        0.0
    } else {
        m.mined_in_tier as f64 / mined
    };
    let epoch_tier = epoch_kept * hard_share;
    let recall = check.recall();
    let verified = m.verified.len() as f64;
    let ours_rate = per_hour(verified, total);
    let ours_tier_rate = per_hour(m.verified_in_tier as f64, total);
    let ours_mined_rate = per_hour(mined, selfplay + mine_cpu);
    let epoch_rate = per_hour(epoch_kept, epoch_cpu);
    let epoch_tier_rate = per_hour(epoch_tier, epoch_cpu);
    let tier_name = tier.unwrap_or("-");
    let human = format!(
        "bench generate: {games} games (seed {seed}{profile}), {positions} positions from fullmove {fullmove}, full search {limit}\n\
         {:<34} {:>9} {:>9} {:>10} {:>12} {:>12}\n\
         {:<34} {:>9} {:>9} {:>10.0} {:>12.1} {:>12.1}\n\
         {:<34} {:>9} {:>9} {:>10.0} {:>12.1} {:>12.1}\n\
         {:<34} {:>9.1} {:>9.1} {:>10.0} {:>12.1} {:>12.1}\n\
         puzzleforge, engine CPU s by step: {steps}\n\
         Epoch's mining modelled from {sg} sampled games ({sp} positions): {cpp:.3} CPU s and {npp:.0} nodes per position (funnel: {fnpp:.0}); nodes ratio {nr}\n\
         recall of the funnel on the sample: {found}/{ec} = {rc:.1}%\n\
         puzzles per CPU-hour, puzzleforge (verified) / Epoch (kept): {r1}; {tier_name}: {r2}\n\
         verified mix (solver moves): {mix:?}",
        "procedure",
        "puzzles",
        tier_name,
        "CPU s",
        "puzzles/CPU-h",
        "tier/CPU-h",
        "puzzleforge, verified",
        m.verified.len(),
        m.verified_in_tier,
        total,
        ours_rate,
        ours_tier_rate,
        "puzzleforge, mined (no rate/verify)",
        m.mined.len(),
        m.mined_in_tier,
        selfplay + mine_cpu,
        ours_mined_rate,
        per_hour(m.mined_in_tier as f64, selfplay + mine_cpu),
        "Epoch exhaustive (modelled)",
        epoch_kept,
        epoch_tier,
        epoch_cpu,
        epoch_rate,
        epoch_tier_rate,
        seed = config.pipeline.seed,
        profile = args
            .tier
            .as_deref()
            .map(|t| format!(", tier {t}'s profile"))
            .unwrap_or_default(),
        positions = m.positions,
        fullmove = m.mine.min_fullmove,
        limit = match m.mine.nodes {
            Some(nodes) => format!("{nodes} nodes"),
            None => format!("depth {}", m.mine.depth),
        },
        steps = m
            .steps
            .iter()
            .map(|(k, v)| format!("{k} {v:.0}"))
            .collect::<Vec<_>>()
            .join(", "),
        sg = s.games,
        sp = exhaustive.positions,
        cpp = per_position(check.exhaustive_cpu_seconds),
        npp = per_position(exhaustive.nodes as f64),
        fnpp = funnel_nodes_per_position,
        nr = show(check.nodes_ratio()),
        found = check.found,
        ec = check.exhaustive_candidates,
        rc = recall * 100.0,
        r1 = show(ratio(ours_rate, epoch_rate)),
        r2 = show(ratio(ours_tier_rate, epoch_tier_rate)),
        mix = mix(&m.verified),
    );
    let json = json!({
        "command": "bench generate",
        "games": m.games,
        "seed": config.pipeline.seed,
        "profile_tier": args.tier,
        "count_tier": tier,
        "settings": m.settings,
        "positions": m.positions,
        "puzzleforge": {
            "cpu_seconds": total,
            "cpu_seconds_by_step": m.steps.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "mined": m.mined.len(),
            "verified": m.verified.len(),
            "mined_in_tier": m.mined_in_tier,
            "verified_in_tier": m.verified_in_tier,
            "verified_per_cpu_hour": ours_rate,
            "verified_in_tier_per_cpu_hour": ours_tier_rate,
            "mined_per_cpu_hour_without_rate_verify": ours_mined_rate,
            "mined_per_game": mined / games,
            "verified_per_game": verified / games,
            "verified_mix": mix(&m.verified),
            "verified_ratings": m.verified.iter().filter_map(|p| p.rating).collect::<Vec<_>>(),
        },
        "epoch_modelled": {
            "sample_games": s.games,
            "sample_positions": exhaustive.positions,
            "exhaustive_cpu_seconds_sample": check.exhaustive_cpu_seconds,
            "exhaustive_nodes_sample": exhaustive.nodes,
            "mine_cpu_seconds": epoch_mine_cpu,
            "mine_nodes": epoch_nodes,
            "cpu_seconds": epoch_cpu,
            "kept": epoch_kept,
            "kept_in_tier": epoch_tier,
            "kept_per_game": epoch_kept / games,
            "kept_per_cpu_hour": epoch_rate,
            "kept_in_tier_per_cpu_hour": epoch_tier_rate,
        },
        "sample": {
            "exhaustive_candidates": check.exhaustive_candidates,
            "exhaustive_puzzles": check.exhaustive_puzzles,
            "funnel_candidates": check.funnel_candidates,
            "found": check.found,
            "recall": recall,
            "funnel_cpu_seconds": check.funnel_cpu_seconds,
            "funnel_nodes": funnel.nodes,
            "nodes_ratio": check.nodes_ratio(),
        },
        "ratio_per_cpu_hour": ratio(ours_rate, epoch_rate),
        "ratio_in_tier_per_cpu_hour": ratio(ours_tier_rate, epoch_tier_rate),
    });
    Summary::new(human, json)
}
