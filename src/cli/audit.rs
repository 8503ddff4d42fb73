//! `puzzleforge audit`'s flags, laid into `tools::novelty`'s arguments.

use std::path::PathBuf;

/// `puzzleforge audit`.
#[derive(clap::Args, Debug, Clone)]
pub struct AuditFlags {
    /// Release folders (their train.csv and test.csv) or puzzle files.
    #[arg(required = true)]
    pub release: Vec<PathBuf>,
    /// Index files (`puzzleforge index`), or puzzle or game files indexed
    /// on the fly, to look for exact and near copies in.
    #[arg(long, value_name = "INDEX")]
    pub against: Vec<PathBuf>,
    /// Where to write the JSON report (`--json` prints it too).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Look every near copy of the rule up in the indexes (about a quarter
    /// of the speed); by default, those whose near positions play the same
    /// move (99% of them on Lichess's puzzles, docs/novelty.md).
    #[arg(long)]
    pub exact: bool,
}

impl AuditFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::tools::novelty::AuditArgs {
        let Self {
            release,
            against,
            output,
            exact,
        } = self.clone();
        crate::tools::novelty::AuditArgs {
            release,
            against,
            output,
            exact,
        }
    }
}
