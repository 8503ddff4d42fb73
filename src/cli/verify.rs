//! `puzzleforge verify`'s flags, laid into `stages::verify`'s arguments.

use std::path::PathBuf;

use super::groups::EngineFlags;
use crate::engine::criterion::Criterion;
use crate::stages::verify::Policy;

/// `puzzleforge verify`.
#[derive(clap::Args, Debug, Clone)]
pub struct VerifyFlags {
    /// Puzzle file written by `mine` (or `rate`); or a release folder, or
    /// any puzzle file with `--puzzle`/`--recheck`, to re-check what it
    /// recorded (one JSON line per puzzle on stdout; see docs/recheck.md).
    pub input: PathBuf,
    /// Search K times the puzzle's nodes [default: 4, or the release's].
    #[arg(long)]
    pub factor: Option<u64>,
    /// Base nodes for puzzles without a Nodes column (or for all, with
    /// --nodes-override).
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Use --nodes for every puzzle, ignoring the Nodes column.
    #[arg(long, requires = "nodes")]
    pub nodes_override: bool,
    /// Criterion to check (default: each puzzle's Criterion column, else epoch).
    #[arg(long, value_enum)]
    pub criterion: Option<Criterion>,
    /// What the release does with a puzzle that fails a check.
    #[arg(long, value_enum)]
    pub policy: Option<Policy>,
    /// Epoch puzzles must clear every threshold by this many cp (0: no margin).
    #[arg(long)]
    pub min_margin_cp: Option<i32>,
    /// Lichess puzzles must clear the win-chance gap by this much (0: none).
    #[arg(long, value_parser = crate::core::settings::finite_number)]
    pub min_margin_win_chance: Option<f64>,
    /// Second engine executable (e.g. /usr/games/ethereal-chess): checks
    /// every solver move at --second-depth.
    #[arg(long, value_name = "PATH")]
    pub second_engine: Option<PathBuf>,
    /// Depth of the second engine's searches.
    #[arg(long, requires = "second_engine")]
    pub second_depth: Option<u32>,
    /// The second engine's best move must lead its second by this many of
    /// its own cp.
    #[arg(long, requires = "second_engine")]
    pub second_min_gap_cp: Option<i32>,
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
            factor,
            nodes,
            nodes_override,
            criterion,
            policy,
            min_margin_cp,
            min_margin_win_chance,
            second_engine,
            second_depth,
            second_min_gap_cp,
            output,
            puzzles_out,
            puzzles,
            recheck,
            config,
            engine,
        } = self.clone();
        crate::stages::verify::VerifyArgs {
            input,
            overrides: crate::stages::verify::VerifyOverrides {
                factor,
                nodes,
                nodes_override,
                criterion,
                policy,
                min_margin_cp,
                min_margin_win_chance,
                second_engine,
                second_depth,
                second_min_gap_cp,
            },
            output,
            puzzles_out,
            puzzles,
            recheck,
            config,
            engine: engine.args(),
        }
    }
}
