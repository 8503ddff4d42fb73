//! `puzzleforge bench pool`: how much of the CPU the engine pool spends goes
//! to engine searches, and how well it keeps N engines busy.
//!
//! Pushes positions (puzzle FENs after the opponent's first move) through a
//! pool at fixed nodes and reports two ratios:
//! * engine search CPU / process-tree CPU (puzzleforge + all engines, from
//!   getrusage after the engines are reaped): the supervision overhead
//!   (also given with the engines' whole-process CPU, which adds their
//!   start-up and the per-unit `ucinewgame` clearing);
//! * (engine search CPU / N) / wall time: how busy the N engines were.

use crate::core::summary::Summary;
use crate::engine::pool::EnginePool;
use crate::engine::process::{Limit, SearchRequest, process_tree_cpu_seconds};
use crate::engine::settings::{EngineArgs, EngineConfig};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `puzzleforge bench pool`.
#[derive(clap::Args, Debug)]
pub struct BenchPoolArgs {
    /// Puzzle file (Lichess CSV or JSONL) the positions come from.
    #[arg(long, default_value = "tests/data/lichess_db_puzzle_subset_1499.csv")]
    pub puzzles: PathBuf,
    /// Positions to search (repeats the file's positions if it has fewer).
    #[arg(long, default_value_t = 200)]
    pub positions: usize,
    /// Nodes per search.
    #[arg(long, default_value_t = 100_000)]
    pub nodes: u64,
    /// MultiPV per search.
    #[arg(long, default_value_t = 2)]
    pub multipv: u32,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Runs the pool benchmark.
pub fn run_bench_pool(args: &BenchPoolArgs) -> anyhow::Result<Summary> {
    let puzzles = crate::chess::record::read_puzzles(&args.puzzles)?;
    let sources: Vec<SearchRequest> = puzzles
        .iter()
        .filter(|puzzle| !puzzle.moves.is_empty())
        .map(|puzzle| SearchRequest {
            fen: puzzle.fen.clone(),
            moves: puzzle.moves[..1].to_vec(),
            limit: Limit::Nodes(args.nodes),
            multipv: args.multipv,
        })
        .collect();
    if sources.is_empty() {
        crate::bail_input!("{} has no puzzles with moves", args.puzzles.display());
    }
    let requests: Vec<&SearchRequest> = sources.iter().cycle().take(args.positions).collect();
    let (spec, mut config) = args.engine.resolve(&EngineConfig::default())?;
    config.progress = Some("bench".to_string());

    let cpu_before = process_tree_cpu_seconds();
    let wall_start = Instant::now();
    let pool = EnginePool::new(spec, config)?;
    let workers = pool.workers();
    let search_start = Instant::now();
    pool.map(&requests, |session, _, request| session.search(request))?;
    let search_wall = search_start.elapsed().as_secs_f64();
    let stats = pool.stats();
    let engine_id = pool.engine_id().to_string();
    // Dropping the pool reaps the engines, so getrusage counts them.
    drop(pool);
    let total_wall = wall_start.elapsed().as_secs_f64();
    let tree_cpu = process_tree_cpu_seconds() - cpu_before;

    let engine_cpu: f64 = stats.iter().map(|s| s.cpu_seconds).sum();
    let engine_process_cpu: f64 = stats.iter().map(|s| s.process_cpu_seconds).sum();
    let process_share = if tree_cpu > 0.0 {
        engine_process_cpu / tree_cpu
    } else {
        0.0
    };
    let nodes: u64 = stats.iter().map(|s| s.nodes).sum();
    let cpu_share = if tree_cpu > 0.0 {
        engine_cpu / tree_cpu
    } else {
        0.0
    };
    let busy = if search_wall > 0.0 {
        engine_cpu / workers as f64 / search_wall
    } else {
        0.0
    };
    // The same ratio over the whole run: every second the engine processes
    // spent (start-up and `ucinewgame` included) against the wall time
    // from starting the pool to reaping it.
    let busy_process = if total_wall > 0.0 {
        engine_process_cpu / workers as f64 / total_wall
    } else {
        0.0
    };
    let human = format!(
        "bench pool: {} positions x {} nodes on {workers} x {engine_id}\n\
         engine search CPU {engine_cpu:.2} s / process-tree CPU {tree_cpu:.2} s = {cpu_share:.3} (goal >= 0.97)\n\
         engine process CPU (start-up, ucinewgame included) {engine_process_cpu:.2} s / process-tree CPU = {process_share:.3}\n\
         (engine CPU / {workers}) / search wall {search_wall:.2} s = {busy:.3} (goal >= 0.95); wall incl. start-up {total_wall:.2} s; {:.0} nodes/s\n\
         (engine process CPU / {workers}) / wall incl. start-up = {busy_process:.3}",
        requests.len(),
        args.nodes,
        nodes as f64 / search_wall.max(1e-9)
    );
    let json = json!({
        "command": "bench pool",
        "positions": requests.len(),
        "nodes_per_search": args.nodes,
        "workers": workers,
        "engine": engine_id,
        "engine_cpu_seconds": engine_cpu,
        "process_tree_cpu_seconds": tree_cpu,
        "engine_cpu_share": cpu_share,
        "engine_process_cpu_seconds": engine_process_cpu,
        "engine_process_cpu_share": process_share,
        "search_wall_seconds": search_wall,
        "total_wall_seconds": total_wall,
        "engine_busy_ratio": busy,
        "engine_process_busy_ratio": busy_process,
        "nodes": nodes,
        "engines": stats,
    });
    Ok(Summary::new(human, json))
}
