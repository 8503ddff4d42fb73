//! The stage's run: plays the games across the engine pool, writes them to
//! the PGN file and reports the summary; also the seed of a release's games.
//!
//! One game is one unit of [`EnginePool::map`], so the PGN is the same
//! whatever the number of workers.

use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Write;
use std::path::Path;

use super::config::{SelfplayArgs, SelfplayConfig};
use super::game::{Game, MaiaBench, play_game};
use crate::chess::human_games::HumanPool;
use crate::core::fileio::AtomicFile;
use crate::core::seed::{self, Domain, Key};
use crate::core::settings::flags_over;
use crate::core::summary::{Report, Summary};
use crate::engine::pool::EnginePool;
use crate::engine::settings::EngineConfig;

pub fn run_selfplay(args: &SelfplayArgs) -> Result<Summary> {
    let config = flags_over(&SelfplayConfig::default(), &args.overrides)?;
    config.validate()?;
    let (spec, mut pool_config) = args.engine.resolve(&EngineConfig::default())?;
    pool_config.progress = Some("games".to_string());
    let pool = EnginePool::new(spec, pool_config)?;
    run_selfplay_with(&config, &pool, &args.output)
}

/// Plays `config.games` games on `pool` and writes them to `output`.
pub fn run_selfplay_with(
    config: &SelfplayConfig,
    pool: &EnginePool,
    output: &Path,
) -> Result<Summary> {
    run_selfplay_range(config, pool, output, 1..=config.games)?.into_summary()
}

/// Plays the games numbered `indices` (a slice of `1..=config.games`, for
/// `run --shard`) and writes them to `output`. A game's bytes depend only
/// on the seed and its number, so the slices' files concatenated in order
/// are the file of the whole run.
pub(crate) fn run_selfplay_range(
    config: &SelfplayConfig,
    pool: &EnginePool,
    output: &Path,
    indices: std::ops::RangeInclusive<u64>,
) -> Result<Report<SelfplaySummary>> {
    config.validate()?;
    let indices: Vec<u64> = indices.collect();
    let games = play_indices(config, pool, &indices)?;
    let mut file = AtomicFile::create(output)?;
    let engine_name = pool.engine_id().to_string();
    for game in &games {
        file.write_all(game.to_pgn(config, &engine_name).as_bytes())
            .with_context(|| format!("writing {}", output.display()))?;
    }
    file.commit()?;
    let plies: usize = games.iter().map(|g| g.sans.len()).sum();
    let decisive = games
        .iter()
        .filter(|g| g.result == "1-0" || g.result == "0-1")
        .count();
    let human = format!(
        "selfplay: {} games ({} mode, {}, seed {}), {} plies, {} decisive -> {}{}",
        games.len(),
        config.mode.name(),
        players_of(config),
        config.seed,
        plies,
        decisive,
        output.display(),
        if config.engine_limit {
            " (engine limit: NOT reproducible)"
        } else {
            ""
        }
    );
    let record = SelfplaySummary {
        command: "selfplay",
        games: games.len(),
        plies,
        decisive,
        mode: config.mode.name(),
        players: players_of(config),
        seed: config.seed,
        reproducible: !config.engine_limit,
        output: output.display().to_string(),
    };
    Ok(Report::new(human, record))
}

/// The stage's JSON summary.
#[derive(Serialize, Debug, Clone)]
pub(crate) struct SelfplaySummary {
    command: &'static str,
    games: usize,
    plies: usize,
    decisive: usize,
    mode: &'static str,
    players: String,
    seed: u64,
    /// False with an engine limit: the games then depend on the machine.
    reproducible: bool,
    /// The games file (where the pipeline commits it).
    pub(crate) output: String,
}

/// Who plays after the opening, in words.
fn players_of(config: &SelfplayConfig) -> String {
    match &config.maia {
        Some(maia) => format!(
            "Maia-1 players, White {}-{}, Black {}-{}",
            maia.white[0], maia.white[1], maia.black[0], maia.black[1]
        ),
        None => "weakened Stockfish players".to_string(),
    }
}

/// The self-play seed of release `release` of a config whose run seed is
/// `run_seed`, for a release other than the config's `pipeline.release`
/// (which plays with the run seed itself, so the default run's games are
/// the ones it always played). Without `[generate]` a release plays a
/// fixed `selfplay.games` games: a later release of the same config would
/// replay the first one's games, and every puzzle they hold is one an
/// earlier release has (and excludes). A seed from the release's name
/// gives each release games of its own, and depends on nothing but the
/// config and the name: a rerun, a shard or a merge of the release plays
/// the same games, whatever other releases the output folder holds or in
/// which order they were made.
pub(crate) fn release_seed(run_seed: u64, release: &str) -> u64 {
    seed::selfplay_seed(run_seed, Domain::SelfplayRelease, Key::Name(release))
}

/// Plays the games (indices 1..=games) across the pool, in index order.
pub(crate) fn play_games(config: &SelfplayConfig, pool: &EnginePool) -> Result<Vec<Game>> {
    let indices: Vec<u64> = (1..=config.games).collect();
    play_indices(config, pool, &indices)
}

/// Plays the games numbered `indices` across the pool, in that order; the
/// Maia nets, when humans play, are loaded once for all of them.
fn play_indices(config: &SelfplayConfig, pool: &EnginePool, indices: &[u64]) -> Result<Vec<Game>> {
    let maia = config.maia.as_ref().map(MaiaBench::load).transpose()?;
    // The pool is read once per process and file.
    let human = (config.human.as_ref())
        .map(|start| HumanPool::shared(&start.games, start.limits()))
        .transpose()?;
    pool.map(indices, |session, _, &index| {
        play_game(session, config, maia.as_ref(), human.as_deref(), index)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A release's seed lands in the `Seed` column, an int64: every name
    /// gets one that fits, `maia-30` of the committed seed among them (its
    /// 64-bit draw, 10156276233110103937, did not fit and stopped the
    /// release at its JSON Lines file).
    #[test]
    fn release_seeds_fit_the_int64_seed_column() {
        assert_eq!(
            release_seed(20261130, "maia-30"),
            10156276233110103937 & (i64::MAX as u64)
        );
        for i in 0..1000 {
            let seed = release_seed(20261130, &format!("2026-{i:02}"));
            assert!(i64::try_from(seed).is_ok(), "{i}: {seed}");
        }
        assert_ne!(release_seed(20261130, "a"), release_seed(20261130, "b"));
    }
}
