//! `puzzleforge verify`: do mined puzzles survive a deeper look, and a
//! second engine's?
//!
//! Two checks per puzzle, each with its own verdict:
//!
//! * **Deeper** (same engine): the position after the first move is searched
//!   again with MultiPV 2 at K times the nodes of its `Nodes` column (or of
//!   `--nodes`); the engine's best move must still be the solution's first
//!   move and the puzzle's criterion must still hold (Epoch's thresholds, or
//!   Lichess's rule, from the `Criterion` column unless `--criterion` says
//!   otherwise).
//! * **Second engine** (`[verify.second_engine]`, e.g. Ethereal): on every
//!   solver move of the line, a MultiPV 2 search to a fixed depth must find
//!   the solution's move, at least `min_gap_cp` of the engine's own
//!   centipawns ahead of its second move (a solver move with one legal move
//!   passes). Engines score on different scales, so the second engine is
//!   not held to the criterion's absolute thresholds, only to agreement and
//!   a gap (see [`SecondEngineConfig::min_gap_cp`] for why 180).
//!
//! **Margins.** Each puzzle also gets how far it sits from its criterion's
//! thresholds (Epoch: the smallest of best - (-100), 80 - second and
//! gap - 180, in cp; Lichess: win-chance gap - 0.7), the minimum over the
//! mining search (`BestScore`/`SecondScore`) and the deeper search. With
//! `min_margin_cp` (Epoch) or `min_margin_win_chance` (Lichess) above 0 a
//! puzzle must keep that much room to pass.

mod check;
mod config;
mod run;
mod summary;

pub use check::{SecondMove, Verdict};
pub use config::{
    Policy, SecondEngineConfig, VerifyArgs, VerifyConfig, VerifyOverrides, load_verify_section,
};
pub(crate) use run::default_report_path;
pub use run::{VerifyFiles, run_verify, run_verify_with, verify_puzzles};
pub use summary::{MarginRow, VerifyCounts};
pub(crate) use summary::{VerifyFileSummary, VerifyTotals, summarize};

/// The version of what this stage computes, recorded in its `stage.json`:
/// bumped whenever its output for the same input changes, so that a rerun
/// redoes the stage's stored output rather than reuse one made by other
/// rules (`tests/algorithms.rs` holds its output's sha256 on a fixed input,
/// and fails when that changes without this).
pub const ALGORITHM: &str = "verify-1";
