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
use std::collections::HashSet;
use std::path::PathBuf;

use crate::core::summary::Summary;
use crate::engine::pool::EnginePool;
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::stages::mine::{self, MineConfig, MineUnit, Source};
use crate::stages::selfplay::{self, Mode, SelfplayConfig};

/// `puzzleforge bench mine`.
#[derive(clap::Args, Debug)]
pub struct BenchMineArgs {
    /// Self-play games to generate (ignored with --pgn).
    #[arg(long, default_value_t = 40)]
    pub games: u64,
    /// Seed of the generated games.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Opening mode of the generated games.
    #[arg(long, value_enum, default_value_t = Mode::Chaos)]
    pub mode: Mode,
    /// Mine these games instead of generating them.
    #[arg(long)]
    pub pgn: Option<PathBuf>,
    /// Full-search depth for both runs.
    #[arg(long, default_value_t = 12)]
    pub depth: u32,
    /// Shallow-pass depth of the funnel (default: the mine default).
    #[arg(long)]
    pub shallow_depth: Option<u32>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub fn run_bench_mine(args: &BenchMineArgs) -> Result<Summary> {
    let (spec, pool_config) = args.engine.resolve(&EngineConfig::default())?;
    let pool = EnginePool::new(spec, pool_config)?;
    let units = match &args.pgn {
        Some(path) => mine::load_input(path)?.units,
        None => {
            let config = SelfplayConfig {
                games: args.games,
                seed: args.seed,
                mode: args.mode,
                ..SelfplayConfig::default()
            };
            config.validate()?;
            selfplay::play_games(&config, &pool)?
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
                    start_fen: selfplay::START_FEN.to_string(),
                    moves: game.ucis,
                    targets: Vec::new(),
                })
                .collect()
        }
    };
    let mut funnel = MineConfig {
        depth: args.depth,
        ..MineConfig::default()
    };
    if let Some(depth) = args.shallow_depth {
        funnel.shallow_depth = depth;
    }
    funnel.validate()?;
    let exhaustive = MineConfig {
        exhaustive: true,
        ..funnel.clone()
    };
    let cpu = |pool: &EnginePool| pool.stats().iter().map(|s| s.cpu_seconds).sum::<f64>();
    let cpu0 = cpu(&pool);
    let reference = mine::mine_units(&units, &exhaustive, &pool)?;
    let cpu1 = cpu(&pool);
    let cheap = mine::mine_units(&units, &funnel, &pool)?;
    let cpu2 = cpu(&pool);
    let keys = |run: &mine::MineRun| -> HashSet<(usize, usize, String)> {
        run.results
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                r.found
                    .iter()
                    .map(move |f| (i, f.after, f.best_move.clone()))
            })
            .collect()
    };
    let (reference_keys, cheap_keys) = (keys(&reference), keys(&cheap));
    let found = reference_keys.intersection(&cheap_keys).count();
    let recall = if reference_keys.is_empty() {
        1.0
    } else {
        found as f64 / reference_keys.len() as f64
    };
    let (rs, cs) = (reference.stats(), cheap.stats());
    let ratio = if cs.nodes == 0 {
        f64::INFINITY
    } else {
        rs.nodes as f64 / cs.nodes as f64
    };
    let human = format!(
        "bench mine: {} games, full search depth {} (shallow depth {})\n\
         {:<12} {:>10} {:>13} {:>11} {:>14} {:>10}\n\
         {:<12} {:>10} {:>13} {:>11} {:>14} {:>10.1}\n\
         {:<12} {:>10} {:>13} {:>11} {:>14} {:>10.1}\n\
         recall of the funnel: {found}/{} = {:.1}% (floor 95%); nodes ratio {ratio:.1}x (floor 5x)",
        units.len(),
        args.depth,
        funnel.shallow_depth,
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
        cpu1 - cpu0,
        "funnel",
        cs.positions,
        cs.full_searches,
        cs.candidates,
        cs.nodes,
        cpu2 - cpu1,
        reference_keys.len(),
        recall * 100.0,
    );
    let json = json!({
        "command": "bench mine",
        "games": units.len(),
        "depth": args.depth,
        "shallow_depth": funnel.shallow_depth,
        "exhaustive": {"positions": rs.positions, "full_searches": rs.full_searches,
                        "candidates": rs.candidates, "nodes": rs.nodes, "cpu_seconds": cpu1 - cpu0},
        "funnel": {"positions": cs.positions, "full_searches": cs.full_searches,
                    "candidates": cs.candidates, "nodes": cs.nodes, "cpu_seconds": cpu2 - cpu1},
        "recall": recall,
        "nodes_ratio": ratio,
        "recall_floor_met": recall >= 0.95,
        "nodes_ratio_floor_met": ratio >= 5.0,
    });
    Ok(Summary::new(human, json))
}
