//! `puzzleforge bench mine`: the funnel against exhaustive analysis.
//!
//! On a fixed set of self-play games (generated from `--seed`, or read from
//! `--pgn`), mines once with `--exhaustive` and once with the default funnel,
//! both at the same full-search depth (`--depth`, 12 by default to keep the
//! reference affordable on small machines; Epoch's depth is 18), and reports
//! side by side the recall of the funnel's candidates against the
//! exhaustive ones and the ratio of engine nodes.
//!
//! Measured (debug build, 2 workers on a shared 2-core machine): 40
//! standard-mode games (`selfplay --games 40 --mode standard --white-elo 1600
//! --black-elo 1400 --seed 1`), `bench mine --depth 12`: 3046 positions;
//! exhaustive 3046 full searches, 25 candidates, 251.2 M nodes; funnel
//! (shallow depth 8) 319 full searches, 25 candidates, 41.9 M nodes:
//! recall 25/25 = 100 %, nodes ratio 6.0x.

use anyhow::Result;
use serde_json::json;
use std::path::PathBuf;

use crate::core::summary::Summary;
use crate::engine::pool::EnginePool;
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::stages::mine::{self, FunnelCheck, MineConfig, MineUnit, Source};
use crate::stages::selfplay::{self, Mode, SelfplayConfig};

/// `puzzleforge bench mine`'s flags (their help: `cli::bench`).
#[derive(Debug, Clone)]
pub struct BenchMineArgs {
    pub games: u64,
    pub seed: u64,
    pub mode: Mode,
    pub pgn: Option<PathBuf>,
    pub depth: u32,
    pub shallow_depth: Option<u32>,
    /// Laid over `[engine]` by [`EngineArgs::resolve`].
    pub engine: EngineArgs,
}

pub fn run_bench_mine(args: &BenchMineArgs) -> Result<Summary> {
    let (spec, pool_config) = args.engine.resolve(&EngineConfig::default())?;
    let pool = EnginePool::new(spec, pool_config)?;
    let units = bench_units(args, &pool)?;
    let mut funnel = MineConfig {
        depth: args.depth,
        ..MineConfig::default()
    };
    if let Some(depth) = args.shallow_depth {
        funnel.shallow_depth = depth;
    }
    funnel.validate()?;
    let check = FunnelCheck::run(&units, &funnel, &pool)?;
    Ok(bench_summary(
        args,
        units.len(),
        funnel.shallow_depth,
        &check,
    ))
}

/// The games both runs mine: read from `--pgn`, or played now from
/// `--seed`.
fn bench_units(args: &BenchMineArgs, pool: &EnginePool) -> Result<Vec<MineUnit>> {
    if let Some(path) = &args.pgn {
        return Ok(mine::load_input(path)?.units);
    }
    let config = SelfplayConfig {
        games: args.games,
        seed: args.seed,
        mode: args.mode,
        ..SelfplayConfig::default()
    };
    config.validate()?;
    let units = selfplay::play_games(&config, pool)?
        .into_iter()
        .map(|game| MineUnit {
            source: Source::Selfplay,
            game_id: format!("selfplay-{}-{}", args.seed, game.index),
            game_url: String::new(),
            seed: args.seed.to_string(),
            white_elo: game.white_elo.to_string(),
            black_elo: game.black_elo.to_string(),
            first_ply: 1,
            keep_id: None,
            start_fen: shakmaty::fen::Fen::default(),
            moves: game.ucis,
            targets: Vec::new(),
            public_positions: Vec::new(),
            source_idea: None,
        })
        .collect();
    Ok(units)
}

/// The side-by-side table and JSON: recall of the funnel's candidates
/// against the exhaustive ones, and the ratio of engine nodes.
fn bench_summary(
    args: &BenchMineArgs,
    games: usize,
    shallow_depth: u32,
    check: &FunnelCheck,
) -> Summary {
    let (found, recall, ratio) = (check.found, check.recall(), check.nodes_ratio());
    let (rs, cs) = (check.exhaustive.stats(), check.funnel.stats());
    let human = format!(
        "bench mine: {} games, full search depth {} (shallow depth {})\n\
         {:<12} {:>10} {:>13} {:>11} {:>14} {:>10}\n\
         {:<12} {:>10} {:>13} {:>11} {:>14} {:>10.1}\n\
         {:<12} {:>10} {:>13} {:>11} {:>14} {:>10.1}\n\
         recall of the funnel: {found}/{} = {:.1}% (floor 95%); nodes ratio {} (floor 5x)\n\
         funnel engine CPU s (searches) by step: {}",
        games,
        args.depth,
        shallow_depth,
        "run",
        "positions",
        "full searches",
        "candidates",
        "nodes",
        "cpu s",
        "exhaustive",
        rs.positions,
        rs.full_searches,
        rs.candidates,
        rs.nodes,
        check.exhaustive_cpu_seconds,
        "funnel",
        cs.positions,
        cs.full_searches,
        cs.candidates,
        cs.nodes,
        check.funnel_cpu_seconds,
        check.exhaustive_candidates,
        recall * 100.0,
        ratio.map_or("n/a".to_string(), |r| format!("{r:.1}x")),
        cs.steps.text(1),
    );
    let json = json!({
        "command": "bench mine",
        "games": games,
        "depth": args.depth,
        "shallow_depth": shallow_depth,
        "exhaustive": {"positions": rs.positions, "full_searches": rs.full_searches,
                        "candidates": rs.candidates, "nodes": rs.nodes, "cpu_seconds": check.exhaustive_cpu_seconds},
        "funnel": {"positions": cs.positions, "full_searches": cs.full_searches,
                    "candidates": cs.candidates, "nodes": cs.nodes, "cpu_seconds": check.funnel_cpu_seconds},
        "recall": recall,
        "nodes_ratio": ratio,
        "funnel_steps": cs.steps,
        "exhaustive_steps": rs.steps,
        "recall_floor_met": recall >= 0.95,
        "nodes_ratio_floor_met": ratio.is_some_and(|r| r >= 5.0),
    });
    Summary::new(human, json)
}
