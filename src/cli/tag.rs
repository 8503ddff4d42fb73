//! `puzzleforge tag`'s flags, laid into `tools::tag`'s arguments.

use super::groups::EngineFlags;
use std::path::PathBuf;

/// `puzzleforge tag`.
#[derive(clap::Args, Debug, Clone)]
pub struct TagFlags {
    /// Puzzle file: CSV with a header or JSON Lines, plain or .zst.
    pub puzzles: PathBuf,
    /// Output puzzle file; its extension picks CSV or JSON Lines (.zst
    /// compresses). Every column is kept; only `Themes` changes.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Where the rows that could not be tagged go (line, id, reason,
    /// detail). Default: the output's name plus `.rejects.csv`.
    #[arg(long)]
    pub rejects: Option<PathBuf>,
    /// Compare the board themes with the themes the input carried, per
    /// theme (precision, recall), over the rows whose input is tagged.
    #[arg(long)]
    pub agreement: bool,
    /// Also give each line that does not mate its score theme
    /// (`crushing` / `advantage` / `equality`) from an engine search of
    /// this many nodes where the solver plays its last move, replacing the
    /// row's own. Without it no engine runs.
    #[arg(long, value_name = "N")]
    pub nodes: Option<u64>,
    #[command(flatten)]
    pub engine: EngineFlags,
}

impl TagFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::tag::TagArgs {
        let Self {
            puzzles,
            output,
            rejects,
            agreement,
            nodes,
            engine,
        } = self.clone();
        crate::tools::tag::TagArgs {
            puzzles,
            output,
            rejects,
            agreement,
            nodes,
            engine: engine.args(),
        }
    }
}
