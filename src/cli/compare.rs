//! `puzzleforge compare`'s flags, laid into `stages::eval::compare`'s
//! arguments.

use std::path::PathBuf;

/// `puzzleforge compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareFlags {
    /// The baseline run folder.
    pub run_a: PathBuf,
    /// The run compared against it.
    pub run_b: PathBuf,
    /// Folder for compare.json and compare.md.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

impl CompareFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::stages::eval::compare::CompareArgs {
        let Self {
            run_a,
            run_b,
            output,
        } = self.clone();
        crate::stages::eval::compare::CompareArgs {
            run_a,
            run_b,
            output,
        }
    }
}
