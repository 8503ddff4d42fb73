//! Argument groups more than one command flattens into its flags, each
//! defined once here so that a flag keeps one name, default and meaning
//! wherever it appears.

use std::path::PathBuf;

use crate::engine::criterion::Criterion;
use crate::engine::settings::EngineArgs;
use crate::stages::verify::{Policy, VerifyOverrides};

/// The pipeline config a release is made with, the engine over it and the
/// tier to produce: `run` and `merge` (a merge must be given what its
/// shards ran with).
#[derive(clap::Args, Debug, Clone)]
pub struct PipelineFlags {
    /// Pipeline config file.
    #[arg(long, default_value = crate::pipeline::config::DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Engine binary, overriding the config.
    #[arg(long)]
    pub engine: Option<PathBuf>,
    /// Produce this named tier of `[release.tiers]` instead of the default
    /// quotas.
    #[arg(long)]
    pub tier: Option<String>,
}

/// The prompt a model is asked with and the run folder: `eval` and
/// `rollout` (which words `--output` for its own folder).
#[derive(clap::Args, Debug, Clone)]
pub struct ModelRunFlags {
    /// JSON file with an instruction and few-shot demos.
    #[arg(long)]
    pub prompt: Option<PathBuf>,
    /// Run folder for the report, logs and cache.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
}

/// The engine beside a model's answers (`eval`'s regret and engine
/// baseline, `rollout`'s opponent), over the `[eval.engine]` section.
#[derive(clap::Args, Debug, Clone)]
pub struct EvalEngineFlags {
    /// Engine executable or definition file (default: config, /usr/games/stockfish, PATH).
    #[arg(long, value_name = "PATH")]
    pub engine: Option<PathBuf>,
    /// Engine processes for regret and the engine baseline.
    #[arg(long, value_name = "N")]
    pub engine_workers: Option<usize>,
}

/// The engine a command searches with, over its engine section: every
/// command that runs Stockfish (or another UCI engine) itself.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct EngineFlags {
    /// Engine executable, or an engine definition file (.toml, see
    /// engines/stockfish.toml). Default: config, /usr/games/stockfish, PATH.
    #[arg(long, value_name = "PATH")]
    pub engine: Option<PathBuf>,
    /// Engine processes run in parallel (default: number of CPUs).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Seconds one search may take before the engine is restarted.
    #[arg(long, value_name = "SECS", value_parser = crate::core::settings::finite_number)]
    pub deadline: Option<f64>,
    /// Seconds the engine may take to start and answer `uciok` (and its
    /// first `readyok`) before the program counts as not an engine
    /// (default: the engine section's handshake_secs).
    #[arg(long, value_name = "SECS", value_parser = crate::core::settings::finite_number)]
    pub handshake_deadline: Option<f64>,
}

impl EngineFlags {
    /// The engine flags as `engine::settings` lays them over a section.
    pub fn args(&self) -> EngineArgs {
        let Self {
            engine,
            workers,
            deadline,
            handshake_deadline,
        } = self.clone();
        EngineArgs {
            engine,
            workers,
            deadline,
            handshake_deadline,
        }
    }
}

/// The search flags of a verification, each over its key of `[verify]`:
/// `verify` and `recheck`.
#[derive(clap::Args, Debug, Clone)]
pub struct VerifySearchFlags {
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
}

impl VerifySearchFlags {
    /// The flags as `flags_over` lays them over `[verify]`.
    pub fn overrides(&self) -> VerifyOverrides {
        let Self {
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
        } = self.clone();
        VerifyOverrides {
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
        }
    }
}
