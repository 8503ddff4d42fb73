//! `puzzleforge verify`'s flags, laid into `stages::verify`'s arguments.

use std::path::PathBuf;

use super::groups::{EngineFlags, VerifySearchFlags};

/// `puzzleforge verify`.
#[derive(clap::Args, Debug, Clone)]
pub struct VerifyFlags {
    /// Puzzle file written by `mine` (or `rate`); or a release folder, or
    /// any puzzle file with `--puzzle`/`--recheck`, to re-check what it
    /// recorded, as `puzzleforge recheck` does (see docs/recheck.md).
    pub input: PathBuf,
    #[command(flatten)]
    pub search: VerifySearchFlags,
    /// Per-puzzle report (JSON Lines). Default: INPUT with `.verify.jsonl`.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Also write the puzzles with the verdict columns to this file.
    #[arg(long, value_name = "FILE")]
    pub puzzles_out: Option<PathBuf>,
    /// Re-check only this puzzle (repeatable); implies `--recheck`.
    #[arg(long = "puzzle", value_name = "ID")]
    pub puzzles: Vec<String>,
    /// Re-check the puzzles' recorded verdicts instead of writing a report
    /// (implied by a release folder or `--puzzle`).
    #[arg(long)]
    pub recheck: bool,
    /// Verify with this pipeline config's `[verify]` (its second engine
    /// included; the flags over it); a re-check uses it instead of the
    /// settings the release records.
    #[arg(long, value_name = "PIPELINE_TOML")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineFlags,
}

impl VerifyFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::stages::verify::VerifyArgs {
        let Self {
            input,
            search,
            output,
            puzzles_out,
            puzzles,
            recheck,
            config,
            engine,
        } = self.clone();
        crate::stages::verify::VerifyArgs {
            input,
            overrides: search.overrides(),
            output,
            puzzles_out,
            puzzles,
            recheck,
            config,
            engine: engine.args(),
        }
    }
}
