//! `puzzleforge mine`: Epoch-style puzzles from games.
//!
//! A position P (the side to move is the solver) becomes a puzzle when a
//! MultiPV 2 search (depth 18 by default) finds a best move that is unique
//! under the chosen criterion (Epoch by default: best >= -100 cp,
//! second <= 80 cp, best - second >= 180 cp, mate in n = 10000 - n; or
//! Lichess's `is_valid_attack`), the move played in the game differs from
//! it, and it is not a trivial capture ([`crate::chess::capture`]). As in Epoch's
//! generator, only positions from fullmove 10 on where a move was played
//! are analysed, and a position needs two legal moves under the Epoch rule.
//!
//! **The funnel.** Exhaustive analysis (`--exhaustive`) runs the full search
//! on every position. By default a shallow MultiPV 2 search runs first and
//! the full search only where the shallow scores are within a margin of the
//! thresholds, and where the move played lost (at the shallow depth) at
//! least the criterion's gap minus a margin against the best move (it must:
//! the played move is at best the second move). Each game is one unit of
//! engine work, analysed last position first so the engine's hash carries
//! useful entries to earlier positions in the shallow pass; the hash is
//! cleared before each full search (`fresh_hash`), so a position's verdict
//! is the same in the funnel and in `--exhaustive`.
//!
//! **Lines.** From the best move the line is extended while the opponent's
//! reply (the engine's best move) leaves the solver a winning (>= 200 cp or
//! mate) and unique best move (Epoch: a gap >= 180 cp to the second move,
//! the absolute thresholds being for the first move only; Lichess: its
//! rule), up to 5 solver moves; it ends at mate and always on a solver move.
//!
//! **Output** follows [`crate::chess::record`]: FEN is the position before the game
//! move that led to P, Moves starts with that move. Selection, in input
//! order: each game first keeps its earliest `max_per_game` puzzles, then a
//! puzzle whose position (Zobrist hash of P) an earlier kept puzzle already
//! has is dropped (the first occurrence wins). Capping before deduplicating
//! makes the rule compose: mining slices of the input (`run --shard`) and
//! deduplicating the concatenated outputs again gives the same rows as
//! mining the whole input ([`dedup_puzzles`]).
//!
//! **The files.** [`config`]: the `[mine]` settings and a standalone run's arguments.
//! [`input`]: the units read from PGN or candidate records. [`results`]:
//! what a unit and a run found. [`line`]: the line extension. [`verdict`]:
//! the full search and what passes. [`funnel`]: the passes over a unit's
//! targets. [`output`]: the selection and the puzzle rows. [`check`]: the
//! funnel against the exhaustive search. [`human`]: `[human_games]`, the
//! human games a pipeline's `mine` draws and mines. [`run`]: the stage's entry points
//! and its summary.

mod config;
mod input;
mod results;
mod line;
mod verdict;
mod funnel;
mod branch;
mod unit;
mod output;
mod check;
mod checkpoint;
mod human;
mod run;

pub(crate) use check::FunnelCheck;
pub(crate) use checkpoint::{CheckpointAt, checkpoint_path};
pub use config::{ALGORITHM, CheckedMineConfig, MineArgs, MineConfig, MineOverrides};
pub use human::HumanGamesSection;
pub(crate) use human::{HumanGamesDraw, HumanGamesInput};
pub use input::{Loaded, MineUnit, Source, Target, load_input};
pub(crate) use output::dedup_puzzles;
pub(crate) use results::{MineRun, StepUsage, UnitResult};
pub(crate) use run::{MINE_COLUMNS, MineSummary, MinedUnits, mine_loaded_per_unit};
pub use run::{UnitFunnel, run_mine, run_mine_with};
