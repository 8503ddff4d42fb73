//! `puzzleforge export`'s flags, laid into `stages::export`'s arguments.

use std::path::PathBuf;

use crate::stages::export::{ExportFormat, SplitChoice};

/// `puzzleforge export`.
#[derive(clap::Args, Debug, Clone)]
pub struct ExportFlags {
    /// A release folder, as `run` or `release` writes it.
    pub release: PathBuf,
    /// The format to write: Inspect samples, DSPy examples, OpenAI evals
    /// samples, or Lichess-format CSV (see each value below).
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output folder; gets `train.jsonl`/`test.jsonl` (`.csv` for lichess).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Both splits by default, as `run`'s `[export]` does.
    #[arg(long, value_enum, default_value = "both")]
    pub split: SplitChoice,
}

impl ExportFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::stages::export::ExportArgs {
        let Self {
            release,
            format,
            output,
            split,
        } = self.clone();
        crate::stages::export::ExportArgs {
            release,
            format,
            output,
            split,
        }
    }
}
