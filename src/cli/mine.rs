//! `puzzleforge mine`'s flags, laid into `stages::mine`'s arguments.

use std::path::PathBuf;

use super::groups::EngineFlags;
use crate::engine::criterion::Criterion;

/// `puzzleforge mine`.
#[derive(clap::Args, Debug, Clone)]
pub struct MineFlags {
    /// Self-play PGN, any PGN, or candidate records from `ingest games`.
    pub input: PathBuf,
    /// Output puzzle file (.csv, .jsonl, optionally .zst).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Uniqueness criterion.
    #[arg(long, value_enum)]
    pub criterion: Option<Criterion>,
    /// Depth of the full search (default 18).
    #[arg(long, conflicts_with = "nodes")]
    pub depth: Option<u32>,
    /// Nodes of the full search, instead of a depth.
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Full search on every position (the reference; slow).
    #[arg(long)]
    pub exhaustive: bool,
    /// Depth of the shallow first pass.
    #[arg(long)]
    pub shallow_depth: Option<u32>,
    /// Puzzles kept per game.
    #[arg(long)]
    pub max_per_game: Option<usize>,
    /// Judge forced mates within the line's length by the mate rule and run
    /// their lines to the mate (`[mine] mates`).
    #[arg(long)]
    pub mates: bool,
    /// Keep puzzles whose first move is a trivial capture
    /// (`[mine] trivial_captures`; easy puzzles).
    #[arg(long)]
    pub trivial_captures: bool,
    /// Keep positions where the game's player found the move too
    /// (`[mine] missed_only = false`; easy puzzles).
    #[arg(long)]
    pub keep_found: bool,
    /// Shortest line kept, in solver moves (`[mine] min_solver_moves`).
    #[arg(long)]
    pub min_solver_moves: Option<usize>,
    /// Screen positions by their line played out at the shallow depth
    /// (`[mine] line_screen`; with --min-solver-moves above 1).
    #[arg(long)]
    pub line_screen: bool,
    /// Skip positions whose played move the next position's shallow search
    /// already rules out (`[mine] played_bound`).
    #[arg(long)]
    pub played_bound: bool,
    /// Branch the games where a long line shows, with up to N other moves
    /// of the side that blundered (`[mine] branch_moves`).
    #[arg(long, value_name = "N")]
    pub branch_moves: Option<u32>,
    #[command(flatten)]
    pub engine: EngineFlags,
}

impl MineFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::stages::mine::MineArgs {
        let Self {
            input,
            output,
            criterion,
            depth,
            nodes,
            exhaustive,
            shallow_depth,
            max_per_game,
            mates,
            trivial_captures,
            keep_found,
            min_solver_moves,
            line_screen,
            played_bound,
            branch_moves,
            engine,
        } = self.clone();
        crate::stages::mine::MineArgs {
            input,
            output,
            overrides: crate::stages::mine::MineOverrides {
                criterion,
                depth,
                nodes,
                exhaustive,
                shallow_depth,
                max_per_game,
                mates,
                trivial_captures,
                keep_found,
                min_solver_moves,
                line_screen,
                played_bound,
                branch_moves,
            },
            engine: engine.args(),
        }
    }
}
