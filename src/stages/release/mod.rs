//! `puzzleforge release`: stratified, game-grouped, contamination-guarded
//! train/test releases.
//!
//! A pool of puzzles is sorted into cells (rating bin x solver length x
//! mate or not). Each cell has a quota from [`ReleaseConfig`]; puzzles are
//! drawn per cell with a ChaCha8 RNG seeded from the run seed and the sha256
//! of the cell key, so the draw of one cell never depends on another cell's
//! contents or on thread timing.
//!
//! Grouping by source game uses one greedy pass over the cells, scarcest
//! first (fewest available puzzles per wanted puzzle). A game's side is
//! fixed the first time one of its puzzles is selected; later cells take
//! puzzles of already-fixed games only for that side, and assign a free game
//! to whichever side of the cell still needs more puzzles. Processing the
//! scarcest cells first lets them choose freely before plentiful cells have
//! fixed many games, so with one puzzle per game (the Lichess dump's usual
//! case) every cell the pool can fill is filled exactly.
//!
//! [`ReleaseConfig`]: cells::ReleaseConfig

mod args;
pub(crate) mod card;
pub mod cells;
pub(crate) mod draw;
pub mod folder;
pub(crate) mod funnel;
pub(crate) mod manifest;
pub mod plots;
mod pool;
pub(crate) mod provenance;
mod record;
mod run;
pub(crate) mod theme_mix;

pub use args::{ReleaseArgs, ReleaseOverrides};
pub use run::run_release;

/// The version of what this stage computes, recorded in its `stage.json`:
/// bumped whenever its output for the same input changes, so that a rerun
/// redoes the stage's stored output rather than reuse one made by other
/// rules (`tests/algorithms.rs` holds its output's sha256 on a fixed input,
/// and fails when that changes without this).
pub const ALGORITHM: &str = "release-2";
pub(crate) use run::{ReleaseSummary, run_release_with};
