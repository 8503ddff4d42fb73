//! `puzzleforge merge`'s flags (the pipeline group shared with `run`, its
//! help worded for the shards), laid into `pipeline::merge`'s arguments.

use std::path::PathBuf;

use crate::pipeline::merge::MergeArgs;

use super::groups::PipelineFlags;

/// `puzzleforge merge`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    mut_arg("config", |arg| arg.help("Pipeline config file: the one the shards ran with")),
    mut_arg("engine", |arg| {
        arg.help("Engine binary, overriding the config (as given to the shards)")
    }),
    mut_arg("tier", |arg| arg.help("Produce this named tier of `[release.tiers]`"))
)]
pub struct MergeFlags {
    /// Shard folders written by `run --shard I/N`, all N of them.
    #[arg(required = true, value_name = "SHARD_DIR")]
    pub shards: Vec<PathBuf>,
    /// The release folder to write (what `run` writes as
    /// `<output_dir>/<release>/`).
    #[arg(short, long, value_name = "RELEASE_DIR")]
    pub output: PathBuf,
    #[command(flatten)]
    pub pipeline: PipelineFlags,
    /// Replace merged stages the release folder already holds with other
    /// bytes, and redo the remaining stages even when unchanged.
    #[arg(long)]
    pub force: bool,
}

impl MergeFlags {
    /// The merge's arguments, as its flags give them.
    pub fn args(&self) -> MergeArgs {
        let Self {
            shards,
            output,
            pipeline:
                PipelineFlags {
                    config,
                    engine,
                    tier,
                },
            force,
        } = self.clone();
        MergeArgs {
            shards,
            output,
            config,
            engine,
            tier,
            force,
        }
    }
}
