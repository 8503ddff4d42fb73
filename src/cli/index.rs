//! `puzzleforge index`'s flags, laid into `tools::novelty`'s arguments.

use std::path::PathBuf;

/// `puzzleforge index`.
#[derive(clap::Args, Debug, Clone)]
pub struct IndexFlags {
    /// Puzzle files (the Lichess dump `lichess_db_puzzle.csv.zst`, CSV or
    /// JSON Lines, plain or .zst) or PGN files of games.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The index file to write (zstd-compressed; `[generate] exclude` and
    /// `audit --against` take it).
    #[arg(short, long)]
    pub output: PathBuf,
}

impl IndexFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::novelty::IndexArgs {
        let Self { inputs, output } = self.clone();
        crate::tools::novelty::IndexArgs { inputs, output }
    }
}
