//! The stage contract: what a stage sees while it runs ([`RunContext`]) and
//! what it tells the runner ([`Stage`]): its config section, its input
//! files, whether it uses the engine, and the work itself.

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::core::shard::Shard;
use crate::engine::pool::{EnginePool, PoolConfig};
use crate::engine::process::EngineSpec;
use crate::pipeline::config::PipelineConfig;

/// The stages `run --shard` runs, in pipeline order; the others are left
/// for `merge`.
pub const SHARDED_STAGES: [&str; 5] =
    ["ingest_puzzles", "ingest_games", "selfplay", "mine", "rate"];

/// What a stage sees while it runs.
pub struct RunContext<'a> {
    pub config: &'a PipelineConfig,
    pub config_path: &'a Path,
    /// `output/<release>/`.
    pub release_dir: PathBuf,
    /// The engine the run uses, when a stage needs one.
    pub engine: Option<RunEngine>,
    /// `--tier`: the named tier of `[split.tiers]` to produce.
    pub tier: Option<String>,
    /// `--shard I/N`: the slice of the expensive stages this run does.
    pub shard: Option<Shard>,
}

impl RunContext<'_> {
    /// The folder of a stage's (committed) outputs.
    pub fn stage_dir(&self, stage: &str) -> PathBuf {
        self.release_dir.join(stage)
    }

    /// A path from the config, resolved against the config file's folder.
    pub fn config_relative(&self, path: &Path) -> PathBuf {
        crate::pipeline::config::relative_to(self.config_path, path)
    }
}

/// The engine of a run: how to start it, and its identity for manifests.
#[derive(Clone, Debug)]
pub struct RunEngine {
    pub spec: EngineSpec,
    pub pool: PoolConfig,
    /// sha256 of the engine binary: results depend on the exact build.
    pub sha256: String,
}

impl RunContext<'_> {
    /// Starts the engine pool for a stage that needs one.
    pub fn engine_pool(&self) -> Result<EnginePool> {
        let engine = self
            .engine
            .as_ref()
            .context("a stage that uses the engine must say so (Stage::uses_engine)")?;
        EnginePool::new(engine.spec.clone(), engine.pool.clone())
    }
}

/// One pipeline stage.
pub trait Stage {
    /// The stage's name in `pipeline.stages` and its folder name.
    fn name(&self) -> &'static str;
    /// The config the stage depends on (its section, plus the seed when it
    /// draws random numbers).
    fn config_section(&self, ctx: &RunContext) -> Value;
    /// Files the stage reads; their sha256 go into the fingerprint.
    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>>;
    /// Whether results depend on the engine binary.
    fn uses_engine(&self) -> bool {
        false
    }
    /// Does the work, writing outputs into `out_dir`; returns counts for
    /// the manifest.
    fn execute(&self, ctx: &RunContext, out_dir: &Path) -> Result<Value>;
}
