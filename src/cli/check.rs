//! `puzzleforge check`'s flags, laid into `tools::check`'s arguments.

use super::groups::EngineFlags;
use std::path::PathBuf;

/// `puzzleforge check`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    group(clap::ArgGroup::new("limit").required(true).args(["depth", "nodes"])),
    after_help = "Output: one JSON object per position on stdout, in input order: fen, best_move, \
best_score, second_move, second_score ({\"cp\": n} or {\"mate\": n} from the side to move; null \
when there is no second legal move), unique, why (the verdict's reason: unique, only_legal_move, \
no_legal_move, no_mate, best_too_low, second_too_good, gap_too_small; a position is judged as a \
puzzle's first move, so one with a single legal move is not unique), criterion, plus move and move_is_best when the line \
gave a move. The human summary goes to stderr; with --json the summary object is printed on \
stdout after the positions, as the last line."
)]
pub struct CheckFlags {
    /// Positions, one `FEN` or `FEN,move` (UCI) per line; `-` = stdin.
    /// Blank lines and lines starting with # are skipped. Or a puzzle file
    /// (CSV with a PuzzleId header, JSON Lines) or a release folder, as it
    /// is: each puzzle's solver position (after the first move of `Moves`)
    /// with the solver's first move.
    #[arg(default_value = "-")]
    pub input: PathBuf,
    /// With a puzzle file or release: only this puzzle (repeatable).
    #[arg(long = "puzzle", value_name = "ID")]
    pub puzzles: Vec<String>,
    /// Search each position to this depth.
    #[arg(long)]
    pub depth: Option<u32>,
    /// Search each position for this many nodes.
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Uniqueness rule.
    #[arg(long, value_enum, default_value_t = crate::engine::criterion::Criterion::Epoch)]
    pub criterion: crate::engine::criterion::Criterion,
    #[command(flatten)]
    pub engine: EngineFlags,
}

impl CheckFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::check::CheckArgs {
        let Self {
            input,
            puzzles,
            depth,
            nodes,
            criterion,
            engine,
        } = self.clone();
        crate::tools::check::CheckArgs {
            input,
            puzzles,
            depth,
            nodes,
            criterion,
            engine: engine.args(),
        }
    }
}
