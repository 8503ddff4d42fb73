//! `puzzleforge ingest games`: puzzle candidates from a Lichess game dump.
//!
//! Lichess publishes every rated game each month
//! (`lichess_db_standard_rated_YYYY-MM.pgn.zst`); the few percent that were
//! analysed carry a server evaluation after every move (`[%eval 0.24]`,
//! `[%eval #-6]`). Without running an engine, those evaluations already show
//! where a player threw the game away: when a move hands the opponent a
//! winning position it did not have before, the position after it is a
//! puzzle for the opponent. This stage finds those moves the way
//! lichess-puzzler's generator screens positions (the side to move stands at
//! +200 cp or better, or mates, and its winning chances rose by more than
//! 0.6 with the move) and writes them as puzzle records for the miner, which
//! completes the solution with an engine.

mod candidates;
mod config;
mod run;

pub use config::{GamesArgs, GamesOverrides, IngestGamesConfig, TimeClass};
pub(crate) use run::games_report;
pub use run::{GamesSummary, run_games, run_games_with};

/// The version of what this stage computes, recorded in its `stage.json`:
/// bumped whenever its output for the same input changes, so that a rerun
/// redoes the stage's stored output rather than reuse one made by other
/// rules (`tests/algorithms.rs` holds its output's sha256 on a fixed input,
/// and fails when that changes without this).
pub const ALGORITHM: &str = "ingest_games-1";
