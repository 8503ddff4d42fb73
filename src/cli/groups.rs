//! Argument groups more than one command flattens into its flags, each
//! defined once here so that a flag keeps one name, default and meaning
//! wherever it appears.

use std::path::PathBuf;

use crate::engine::settings::EngineArgs;

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
