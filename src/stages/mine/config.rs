//! The stage's settings: `[mine]` in pipeline.toml ([`MineConfig`]) and
//! a standalone `puzzleforge mine`'s arguments ([`MineArgs`]: its files,
//! and the values of the flags that override the section). Apart
//! because the release pipeline, generation and the benches build a
//! `MineConfig` without running the stage.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

use crate::core::bounds::{Bound, Bounded};
use crate::core::settings::{switch_off, switch_on};
use crate::engine::criterion::Criterion;
use crate::engine::process::Limit;
use crate::engine::settings::EngineArgs;

/// The version of what mining computes (see `ALGORITHM` of the other stages).
pub const ALGORITHM: &str = "mine-1";

/// `[mine]` in pipeline.toml; CLI flags override it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MineConfig {
    pub criterion: Criterion,
    /// Depth of the full search (Epoch: 18).
    pub depth: u32,
    /// Nodes of the full search; replaces `depth` when set.
    pub nodes: Option<u64>,
    /// Run the full search on every position (the reference).
    pub exhaustive: bool,
    /// Depth of the shallow first pass.
    pub shallow_depth: u32,
    /// The swing pass (with `missed_only`; 0 = off): a MultiPV 1 search at
    /// this depth of every position first, and the shallow pass only where
    /// the move played lost, by those scores, the rule's gap within
    /// `swing_margin_cp`. Written out only when on.
    #[serde(skip_serializing_if = "is_zero")]
    pub swing_depth: u32,
    /// How far (cp) the played move's loss at the swing depth may miss
    /// the rule's gap (Epoch: 180) and still earn the shallow pass.
    #[serde(skip_serializing_if = "is_default_swing_margin")]
    pub swing_margin_cp: i32,
    /// Epoch: how far (cp) shallow scores may miss a threshold and still
    /// earn a full search.
    pub shallow_margin_cp: i32,
    /// Lichess: how far (win chance) the shallow gap may miss 0.7.
    pub shallow_margin_win: f64,
    /// Epoch: how far (cp) the played move's shallow loss may miss 180.
    pub shallow_margin_loss_cp: i32,
    /// Clear the engine's hash before each full search, so its verdict
    /// does not depend on the positions searched before.
    pub fresh_hash: bool,
    /// First fullmove number analysed (Epoch: 10).
    pub min_fullmove: u32,
    /// Puzzles kept per game (Lichess: 1).
    pub max_per_game: usize,
    /// Longest line, in solver moves.
    pub max_solver_moves: usize,
    /// Shortest line kept, in solver moves: a target that wants only long
    /// puzzles (the `hard` tier) spends no rating or verification on the
    /// others. Written out only when above 1, so that the default section
    /// (and every fingerprint made from it) reads as before.
    #[serde(skip_serializing_if = "is_one")]
    pub min_solver_moves: usize,
    /// A continuation needs at least this score (cp) for the solver.
    pub winning_cp: i32,
    /// Drop a puzzle whose position an earlier kept puzzle has (the first
    /// occurrence wins). Written out only when off, so that the default
    /// section (and every fingerprint made from it) reads as before.
    #[serde(skip_serializing_if = "is_true")]
    pub dedup_positions: bool,
    /// Judge a position whose best move starts a forced mate within
    /// `max_solver_moves` by the mate rule ([`crate::engine::criterion`]),
    /// and run its line to the mate. Written out only when on.
    #[serde(skip_serializing_if = "is_false")]
    pub mates: bool,
    /// Keep only positions where the game's player missed the move
    /// (Epoch's rule). Off for easy puzzles, which a player may well have
    /// found. Written out only when off.
    #[serde(skip_serializing_if = "is_true")]
    pub missed_only: bool,
    /// Keep puzzles whose first move is a trivial capture (Epoch drops
    /// them): the simple wins of material easy puzzles are made of.
    /// Written out only when on.
    #[serde(skip_serializing_if = "is_false")]
    pub trivial_captures: bool,
    /// With `min_solver_moves` above 1: play the line out at the shallow
    /// depth first and give a full search only to positions whose shallow
    /// line reaches that length. Written out only when on.
    #[serde(skip_serializing_if = "is_false")]
    pub line_screen: bool,
    /// Skip a position, without searching it, when the shallow search of
    /// the position after the move played puts that move above what the
    /// rule lets a second-best move be worth. Written out only when on.
    #[serde(skip_serializing_if = "is_false")]
    pub played_bound: bool,
    /// Branches (`[mine] branch_moves`, 0 = off): at a position whose
    /// shallow screen passed on a non-mate score (the sign of a long
    /// line), the game is branched at the earlier moves of the side that
    /// blundered into it, with up to this many of its other moves (those
    /// that lose against its best move at `branch_depth`, the least
    /// losing first), and each position a branch reaches is mined as a
    /// position of the game. A branch's puzzles keep the game's id.
    /// Written out only when on.
    #[serde(skip_serializing_if = "is_zero")]
    pub branch_moves: u32,
    /// How many of that side's moves before the position are branched at
    /// (1: the move that led to it; 2: that one and the one before).
    #[serde(skip_serializing_if = "is_default_branch_points")]
    pub branch_points: u32,
    /// Depth of the search over every move at a branch point that ranks
    /// the other moves.
    #[serde(skip_serializing_if = "is_default_branch_depth")]
    pub branch_depth: u32,
}

impl Bounded for MineConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within("depth", 1.0, 60.0, "plies of the full search"),
        Bound::within("nodes", 1.0, 10000000000.0, "nodes of the full search"),
        Bound::within("shallow_depth", 1.0, 60.0, "plies of the shallow pass"),
        Bound::within("swing_depth", 0.0, 60.0, "plies of the swing pass"),
        Bound::within(
            "swing_margin_cp",
            0.0,
            20000.0,
            "centipawns; a mate counts 10000 less its moves",
        ),
        Bound::within(
            "shallow_margin_cp",
            0.0,
            20000.0,
            "centipawns; a mate counts 10000 less its moves",
        ),
        Bound::within(
            "shallow_margin_win",
            0.0,
            2.0,
            "winning chances run from -1 to 1",
        ),
        Bound::within(
            "shallow_margin_loss_cp",
            0.0,
            20000.0,
            "centipawns; a mate counts 10000 less its moves",
        ),
        Bound::within("min_fullmove", 1.0, 1000.0, "a move number"),
        Bound::within("max_per_game", 1.0, 10000.0, "puzzles kept per game"),
        Bound::within(
            "max_solver_moves",
            1.0,
            10.0,
            "solver moves, as a release has them",
        ),
        Bound::within(
            "min_solver_moves",
            1.0,
            10.0,
            "solver moves, as a release has them",
        ),
        Bound::within(
            "winning_cp",
            0.0,
            20000.0,
            "centipawns; a mate counts 10000 less its moves",
        ),
        Bound::within("branch_moves", 0.0, 100.0, "moves per branch point"),
        Bound::within("branch_points", 0.0, 100.0, "branch points per game"),
        Bound::within("branch_depth", 0.0, 100.0, "plies of a branch"),
    ];
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// `swing_margin_cp` unless set.
const SWING_MARGIN_CP: i32 = 100;

fn is_default_swing_margin(value: &i32) -> bool {
    *value == SWING_MARGIN_CP
}

/// `branch_points` unless set.
const BRANCH_POINTS: u32 = 2;
/// `branch_depth` unless set.
const BRANCH_DEPTH: u32 = 6;

fn is_default_branch_points(value: &u32) -> bool {
    *value == BRANCH_POINTS
}

fn is_default_branch_depth(value: &u32) -> bool {
    *value == BRANCH_DEPTH
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_true(value: &bool) -> bool {
    *value
}

fn is_one(value: &usize) -> bool {
    *value == 1
}

impl Default for MineConfig {
    fn default() -> Self {
        Self {
            criterion: Criterion::Epoch,
            depth: 18,
            nodes: None,
            exhaustive: false,
            shallow_depth: 8,
            swing_depth: 0,
            swing_margin_cp: SWING_MARGIN_CP,
            shallow_margin_cp: 150,
            shallow_margin_win: 0.35,
            shallow_margin_loss_cp: 100,
            fresh_hash: true,
            min_fullmove: 10,
            max_per_game: 1,
            max_solver_moves: 5,
            min_solver_moves: 1,
            winning_cp: 200,
            dedup_positions: true,
            mates: false,
            missed_only: true,
            trivial_captures: false,
            line_screen: false,
            played_bound: false,
            branch_moves: 0,
            branch_points: BRANCH_POINTS,
            branch_depth: BRANCH_DEPTH,
        }
    }
}

/// A `[mine]` section that passed its one check ([`MineConfig::checked`]):
/// what the runners take, so that a standalone `mine` checks its section
/// once, where its flags were laid over it, and not again on each way in.
#[derive(Debug, Clone)]
pub struct CheckedMineConfig(MineConfig);

impl std::ops::Deref for CheckedMineConfig {
    type Target = MineConfig;

    fn deref(&self) -> &MineConfig {
        &self.0
    }
}

impl MineConfig {
    /// The section, checked ([`MineConfig::validate`]) into the type the
    /// runners take.
    pub fn checked(self) -> Result<CheckedMineConfig> {
        self.validate()?;
        Ok(CheckedMineConfig(self))
    }

    /// Every number within its bound, then the keys that bound each other.
    pub fn validate(&self) -> Result<()> {
        // Every number within its bound, then the keys that bound each other.
        crate::core::bounds::check_section(self)
            .map_err(|e| crate::core::error::bad_input(format!("mine.{e}")))?;
        if self.min_solver_moves > self.max_solver_moves {
            crate::bail_input!(
                "mine.min_solver_moves = {} is above max_solver_moves = {}: no line would be kept",
                self.min_solver_moves,
                self.max_solver_moves
            );
        }
        if self.branch_moves > 0 && (self.branch_points == 0 || self.branch_depth == 0) {
            crate::bail_input!(
                "mine: with branch_moves set, branch_points and branch_depth must be at least 1"
            );
        }
        Ok(())
    }

    /// The limit of the full search.
    pub fn limit(&self) -> Limit {
        match self.nodes {
            Some(nodes) => Limit::Nodes(nodes),
            None => Limit::Depth(self.depth),
        }
    }
}

/// `puzzleforge mine`'s flags (their help: `cli::mine`).
#[derive(Debug, Clone)]
pub struct MineArgs {
    pub input: PathBuf,
    pub output: PathBuf,
    /// The flags laid over `[mine]` by [`crate::core::settings::flags_over`].
    pub overrides: MineOverrides,
    /// Laid over `[engine]` by [`EngineArgs::resolve`].
    pub engine: EngineArgs,
}

/// `mine`'s search flags (their help: `cli::mine`), each over the `[mine]`
/// key its serde name gives.
#[derive(Default, Debug, Clone, Serialize)]
pub struct MineOverrides {
    pub criterion: Option<Criterion>,
    pub depth: Option<u32>,
    pub nodes: Option<u64>,
    #[serde(serialize_with = "switch_on")]
    pub exhaustive: bool,
    pub shallow_depth: Option<u32>,
    pub max_per_game: Option<usize>,
    #[serde(serialize_with = "switch_on")]
    pub mates: bool,
    #[serde(serialize_with = "switch_on")]
    pub trivial_captures: bool,
    #[serde(rename = "missed_only", serialize_with = "switch_off")]
    pub keep_found: bool,
    pub min_solver_moves: Option<usize>,
    #[serde(serialize_with = "switch_on")]
    pub line_screen: bool,
    #[serde(serialize_with = "switch_on")]
    pub played_bound: bool,
    pub branch_moves: Option<u32>,
}
