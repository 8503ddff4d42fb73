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

use crate::core::summary::{Report, Summary};
use crate::engine::pool::{EnginePool, EngineStats, PoolConfig};
use crate::engine::process::{EngineSpec, Limit, SearchRequest, process_tree_cpu_seconds};
use crate::engine::settings::{EngineArgs, EngineConfig};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// `puzzleforge bench pool`'s flags (their help: `cli::bench`).
#[derive(Debug, Clone)]
pub struct BenchPoolArgs {
    pub puzzles: PathBuf,
    pub positions: usize,
    pub nodes: u64,
    pub multipv: u32,
    /// Laid over `[engine]` by [`EngineArgs::resolve`].
    pub engine: EngineArgs,
}

/// Runs the pool benchmark.
pub fn run_bench_pool(args: &BenchPoolArgs) -> anyhow::Result<Summary> {
    let sources = search_requests(args)?;
    let requests: Vec<&SearchRequest> = sources.iter().cycle().take(args.positions).collect();
    let (spec, mut config) = args.engine.resolve(&EngineConfig::default())?;
    config.progress = Some("bench".to_string());
    let record = measure(spec, config, &requests, args.nodes)?;
    let human = format!(
        "bench pool: {} positions x {} nodes on {} x {}\n\
         engine search CPU {:.2} s / process-tree CPU {:.2} s = {:.3} (goal >= 0.97)\n\
         engine process CPU (start-up, ucinewgame included) {:.2} s / process-tree CPU = {:.3}\n\
         (engine CPU / {}) / search wall {:.2} s = {:.3} (goal >= 0.95); wall incl. start-up {:.2} s; {:.0} nodes/s\n\
         (engine process CPU / {}) / wall incl. start-up = {:.3}",
        record.positions,
        record.nodes_per_search,
        record.workers,
        record.engine,
        record.engine_cpu_seconds,
        record.process_tree_cpu_seconds,
        record.engine_cpu_share,
        record.engine_process_cpu_seconds,
        record.engine_process_cpu_share,
        record.workers,
        record.search_wall_seconds,
        record.engine_busy_ratio,
        record.total_wall_seconds,
        record.nodes as f64 / record.search_wall_seconds.max(1e-9),
        record.workers,
        record.engine_process_busy_ratio,
    );
    Report::new(human, record).into_summary()
}

/// The searches to time: each puzzle's position after the opponent's
/// first move, at the given nodes and MultiPV.
fn search_requests(args: &BenchPoolArgs) -> anyhow::Result<Vec<SearchRequest>> {
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
    Ok(sources)
}

/// The `bench pool` summary (`--json`): what the searches cost the engines
/// and the whole process tree, and how busy the engines were.
#[derive(Serialize)]
struct BenchPoolRecord {
    command: &'static str,
    positions: usize,
    nodes_per_search: u64,
    workers: usize,
    engine: String,
    engine_cpu_seconds: f64,
    process_tree_cpu_seconds: f64,
    engine_cpu_share: f64,
    engine_process_cpu_seconds: f64,
    engine_process_cpu_share: f64,
    search_wall_seconds: f64,
    total_wall_seconds: f64,
    engine_busy_ratio: f64,
    engine_process_busy_ratio: f64,
    nodes: u64,
    engines: Vec<EngineStats>,
}

/// Starts a pool, runs `requests` through it, reaps its engines and
/// measures (the process tree's CPU and the wall time from before the
/// engines start).
fn measure(
    spec: EngineSpec,
    config: PoolConfig,
    requests: &[&SearchRequest],
    nodes_per_search: u64,
) -> anyhow::Result<BenchPoolRecord> {
    let cpu_before = process_tree_cpu_seconds();
    let wall_start = Instant::now();
    let pool = EnginePool::new(spec, config)?;
    let workers = pool.workers();
    let search_start = Instant::now();
    pool.map(requests, |session, _, request| session.search(request))?;
    let search_wall = search_start.elapsed().as_secs_f64();
    let stats = pool.stats();
    let engine_id = pool.engine_id().to_string();
    // Dropping the pool reaps the engines, so getrusage counts them.
    drop(pool);
    let total_wall = wall_start.elapsed().as_secs_f64();
    let tree_cpu = process_tree_cpu_seconds() - cpu_before;

    let engine_cpu: f64 = stats.iter().map(|s| s.cpu_seconds).sum();
    let engine_process_cpu: f64 = stats.iter().map(|s| s.process_cpu_seconds).sum();
    Ok(BenchPoolRecord {
        command: "bench pool",
        positions: requests.len(),
        nodes_per_search,
        workers,
        engine: engine_id,
        engine_cpu_seconds: engine_cpu,
        process_tree_cpu_seconds: tree_cpu,
        engine_cpu_share: share(engine_cpu, tree_cpu),
        engine_process_cpu_seconds: engine_process_cpu,
        engine_process_cpu_share: share(engine_process_cpu, tree_cpu),
        search_wall_seconds: search_wall,
        total_wall_seconds: total_wall,
        engine_busy_ratio: share(engine_cpu / workers as f64, search_wall),
        // The same ratio over the whole run: every second the engine
        // processes spent (start-up and `ucinewgame` included) against the
        // wall time from starting the pool to reaping it.
        engine_process_busy_ratio: share(engine_process_cpu / workers as f64, total_wall),
        nodes: stats.iter().map(|s| s.nodes).sum(),
        engines: stats,
    })
}

/// `part / whole`, 0 when nothing was measured.
fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { part / whole } else { 0.0 }
}
