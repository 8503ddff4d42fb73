//! `puzzleforge bench human-games`: reading a human games file (the master
//! collection, a Lichess dump) into the pool that `[selfplay.human]` draws
//! its prefixes from, beside pgn-reader alone on the same file.
//!
//! Both readers decompress the same file in the same process, one after the
//! other, on one core:
//!
//! - `peer`: pgn-reader with a visitor that keeps nothing, the floor any
//!   reader built on it pays;
//! - `pool`: [`HumanGames::load`], which also replays every move with
//!   shakmaty and keeps each usable game's moves and source tags.
//!
//! Reported: games per CPU-second of each, their ratio, the pool's games,
//! and the process's peak resident memory after the pool is read (the
//! kernel's `VmHWM`: what streaming the whole file cost, the pool kept).

use anyhow::Result;
use pgn_reader::Reader;
use serde_json::json;
use std::path::PathBuf;

use super::pgn::ParseOnly;
use crate::chess::human_games::{HumanGames, PoolLimits};
use crate::core::fileio::open_input;
use crate::core::summary::Summary;
use crate::engine::process::thread_cpu_seconds;

/// `puzzleforge bench human-games`'s flags (their help: `cli::bench`).
#[derive(Debug, Clone)]
pub struct BenchHumanGamesArgs {
    pub games: PathBuf,
    pub min_plies: usize,
    pub pool_games: u64,
}

pub fn run_bench_human_games(args: &BenchHumanGamesArgs) -> Result<Summary> {
    let start = thread_cpu_seconds();
    let mut reader = Reader::new(open_input(&args.games)?);
    let mut peer_games = 0u64;
    while reader.read_game(&mut ParseOnly)?.is_some() {
        peer_games += 1;
    }
    let peer_seconds = thread_cpu_seconds() - start;
    let before_kib = peak_resident_kib();
    let start = thread_cpu_seconds();
    let limits = PoolLimits {
        min_plies: args.min_plies,
        max_games: args.pool_games,
    };
    let pool = HumanGames::load(&args.games, limits)?;
    let pool_seconds = thread_cpu_seconds() - start;
    let peak_kib = peak_resident_kib();
    let moves: usize = pool.games.iter().map(|g| g.moves.len()).sum();
    let rate = |games: u64, seconds: f64| games as f64 / seconds.max(1e-9);
    let json = json!({
        "command": "bench human-games",
        "file": args.games.display().to_string(),
        "peer_games": peer_games,
        "peer_cpu_seconds": peer_seconds,
        "peer_games_per_cpu_second": rate(peer_games, peer_seconds),
        "games_read": pool.read,
        "pool_games": pool.games.len(),
        "pool_moves": moves,
        "skipped": pool.skipped,
        "pool_cpu_seconds": pool_seconds,
        "pool_games_per_cpu_second": rate(pool.read, pool_seconds),
        "pool_over_peer": rate(pool.read, pool_seconds) / rate(peer_games, peer_seconds),
        "peak_resident_mib_before_pool": before_kib.map(|k| k as f64 / 1024.0),
        "peak_resident_mib": peak_kib.map(|k| k as f64 / 1024.0),
    });
    let human = format!(
        "bench human-games: {} games read in {:.1} CPU s ({:.0}/s; pgn-reader alone {:.0}/s, \
         {:.2}x), {} kept ({} moves); peak resident {} MiB",
        pool.read,
        pool_seconds,
        rate(pool.read, pool_seconds),
        rate(peer_games, peer_seconds),
        rate(pool.read, pool_seconds) / rate(peer_games, peer_seconds),
        pool.games.len(),
        moves,
        peak_kib.map_or("?".to_string(), |k| format!("{:.0}", k as f64 / 1024.0)),
    );
    Ok(Summary::new(human, json))
}

/// The process's peak resident memory so far (`VmHWM` of
/// `/proc/self/status`), where the kernel tells it.
fn peak_resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
