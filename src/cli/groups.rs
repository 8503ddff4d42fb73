//! Argument groups more than one command flattens into its flags, each
//! defined once here so that a flag keeps one name, default and meaning
//! wherever it appears.

use std::path::PathBuf;

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
    /// Produce this named tier of `[split.tiers]` instead of the default
    /// quotas.
    #[arg(long)]
    pub tier: Option<String>,
}
