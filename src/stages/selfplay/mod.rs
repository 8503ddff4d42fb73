//! `puzzleforge selfplay`: Epoch's game generator, made reproducible.
//!
//! Defaults follow Epoch's published generator (`puzzle_generator.py`):
//! a `chaos` opening of 12 uniformly random plies then Elo drawn per game
//! (White 1500..=2500, Black 1400..=2000), or a `standard` opening of
//! 8 plies (e4 in odd games, d4 in even ones, then a uniform choice among
//! the MultiPV 4 moves within 20 cp of the best) at White 2000 / Black 1600.
//! Both sides then play at their Elo through [`crate::engine::weaken`], our seeded
//! copy of Stockfish 15.1's strength limit, until checkmate, stalemate,
//! insufficient material, threefold repetition, the 50-move rule or
//! 150 plies (opening included, as in Epoch's loop).
//!
//! Differences from Epoch, all for reproducibility: searches are limited by
//! depth, never time (Epoch's opening used 0.1 s, we use `opening_depth`);
//! every random choice comes from a ChaCha8 generator seeded with the run
//! seed on stream = game index; a draw by repetition or the 50-move rule is
//! declared when it has happened (python-chess's `claim_draw` also ends a
//! game one ply early when the side to move *could* reach it).

mod config;
mod game;
mod run;

pub(crate) use config::parse_maia_players;
pub use config::{HumanStart, MaiaPlayers, Mode, SelfplayArgs, SelfplayConfig, SelfplayOverrides};
pub use game::Game;
pub(crate) use game::split_games;
pub(crate) use run::{SelfplaySummary, play_games, release_seed, run_selfplay_range};
pub use run::{run_selfplay, run_selfplay_with};

/// The version of what this stage computes, recorded in its `stage.json`:
/// bumped whenever its output for the same input changes, so that a rerun
/// redoes the stage's stored output rather than reuse one made by other
/// rules (`tests/algorithms.rs` holds its output's sha256 on a fixed input,
/// and fails when that changes without this).
pub const ALGORITHM: &str = "selfplay-1";
