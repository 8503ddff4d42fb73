//! The stage contract: the stages by name ([`StageName`]), what a stage
//! sees while it runs ([`RunContext`], [`StageFolder`]) and what it tells
//! the runner ([`Stage`]): its config section, its input files, whether it
//! uses the engine, and the work itself.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::core::shard::Shard;
use crate::engine::pool::{EnginePool, PoolConfig};
use crate::engine::process::EngineSpec;
use crate::pipeline::summary::StageSummary;

/// A stage `run` knows: its name in `pipeline.stages`, in `stage.json` and
/// as its folder's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageName {
    IngestPuzzles,
    IngestGames,
    Selfplay,
    Mine,
    Rate,
    Verify,
    Release,
    Export,
    Eval,
}

impl StageName {
    /// Every stage, in pipeline order.
    pub(crate) const ALL: [StageName; 9] = [
        StageName::IngestPuzzles,
        StageName::IngestGames,
        StageName::Selfplay,
        StageName::Mine,
        StageName::Rate,
        StageName::Verify,
        StageName::Release,
        StageName::Export,
        StageName::Eval,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StageName::IngestPuzzles => "ingest_puzzles",
            StageName::IngestGames => "ingest_games",
            StageName::Selfplay => "selfplay",
            StageName::Mine => "mine",
            StageName::Rate => "rate",
            StageName::Verify => "verify",
            StageName::Release => "release",
            StageName::Export => "export",
            StageName::Eval => "eval",
        }
    }

    /// The stage named `name`, if `run` knows one.
    pub(crate) fn from_name(name: &str) -> Option<StageName> {
        StageName::ALL
            .into_iter()
            .find(|stage| stage.as_str() == name)
    }

    /// Whether `run --shard` runs the stage (on its slice of the work); the
    /// others are left for `merge`.
    pub(crate) fn is_sharded(self) -> bool {
        matches!(
            self,
            StageName::IngestPuzzles
                | StageName::IngestGames
                | StageName::Selfplay
                | StageName::Mine
                | StageName::Rate
        )
    }

    /// The names of `stages`, comma-separated, for messages.
    pub(crate) fn list(stages: impl IntoIterator<Item = StageName>) -> String {
        stages
            .into_iter()
            .map(StageName::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for StageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// What every stage sees while it runs; a stage's settings are its own
/// (see [`crate::pipeline::adapters`]).
pub struct RunContext {
    /// `output/<release>/`.
    pub release_dir: PathBuf,
    /// The engine of the run (the `[engine]` section resolved), when a
    /// stage needs one.
    pub engine: Option<RunEngine>,
    /// `--tier`: the named tier of `[split.tiers]` to produce.
    pub tier: Option<String>,
    /// `--shard I/N`: the slice of the expensive stages this run does.
    pub shard: Option<Shard>,
    /// The config file's folder: fingerprints name the files under it
    /// relative to it, so that running one config from another working
    /// directory finds its stages unchanged.
    pub config_dir: PathBuf,
    /// Under `[generate]`: the generated games and puzzles the self-play,
    /// mine, rate and verify stages hold, assembled from the batch store.
    pub generated: Option<crate::pipeline::generate::Generated>,
    /// The finished releases the release stage excludes when it draws:
    /// every one under the output folder, found while it holds the output
    /// folder's lock. `None` before the draw (and for a release kept as
    /// it is, which excludes what its manifest records).
    pub excluded_releases: Option<Vec<PathBuf>>,
}

impl RunContext {
    /// The folder of a stage's (committed) outputs.
    pub(crate) fn stage_dir(&self, stage: StageName) -> PathBuf {
        self.release_dir.join(stage.as_str())
    }

    /// Starts the engine pool for a stage that needs one; its work shows
    /// progress under the stage's name.
    pub fn engine_pool(&self, stage: StageName) -> Result<EnginePool> {
        let engine = self.engine()?;
        let mut pool = EnginePool::new(engine.spec.clone(), engine.pool.clone())?;
        pool.set_progress(Some(stage.as_str()));
        Ok(pool)
    }

    /// The run's engine as `[generate]` uses it.
    pub(crate) fn generate_engine(&self) -> Result<crate::pipeline::generate::Engine<'_>> {
        let engine = self.engine()?;
        Ok(crate::pipeline::generate::Engine {
            spec: &engine.spec,
            pool: &engine.pool,
            sha256: &engine.sha256,
        })
    }

    /// The run's engine, for a stage that uses it.
    pub fn engine(&self) -> Result<&RunEngine> {
        self.engine
            .as_ref()
            .context("a stage that uses the engine must say so (Stage::uses_engine)")
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

/// Where a stage writes and where its outputs will live: the stage writes
/// into a scratch folder that is renamed into the final one once the stage
/// succeeds, and its summary names the files where they will be.
pub struct StageFolder {
    /// `<release>/.<stage>.partial`, empty when the stage starts.
    pub scratch: PathBuf,
    /// `<release>/<stage>`.
    pub committed: PathBuf,
}

impl StageFolder {
    /// Where the stage writes the output `name`.
    pub(crate) fn scratch_path(&self, name: impl AsRef<Path>) -> PathBuf {
        self.scratch.join(name)
    }

    /// Where the output `name` will live, as the stage's summary names it.
    pub(crate) fn committed_path(&self, name: impl AsRef<Path>) -> String {
        self.committed.join(name).display().to_string()
    }

    /// The final folder, as the stage's summary names it.
    pub(crate) fn committed_folder(&self) -> String {
        self.committed.display().to_string()
    }
}

/// One pipeline stage, holding its own settings.
pub trait Stage {
    /// The stage's name in `pipeline.stages` and its folder name.
    fn name(&self) -> StageName;
    /// The config the stage depends on (its section, plus the seed when it
    /// draws random numbers), as its fingerprint records it.
    fn config_section(&self, ctx: &RunContext) -> Result<Value>;
    /// Files the stage reads; their sha256 go into the fingerprint.
    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>>;
    /// Whether results depend on the engine binary.
    fn uses_engine(&self) -> bool {
        false
    }
    /// Does the work, writing outputs into `folder.scratch`; returns the
    /// stage's summary, naming files where they will live.
    fn work(&self, ctx: &RunContext, folder: &StageFolder) -> Result<StageSummary>;
    /// Does the work ([`Stage::work`]) and returns its summary as the
    /// stage's `stage.json` records it (under `counts`).
    fn execute(&self, ctx: &RunContext, folder: &StageFolder) -> Result<Value> {
        let summary = self.work(ctx, folder)?;
        serde_json::to_value(&summary)
            .with_context(|| format!("recording the summary of stage {}", self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_names_are_one_list_in_config_manifests_and_folders() {
        for stage in StageName::ALL {
            assert_eq!(serde_json::to_value(stage).unwrap(), stage.as_str());
            assert_eq!(StageName::from_name(stage.as_str()), Some(stage));
            assert_eq!(format!("{stage:<16}").trim_end(), stage.as_str());
        }
        assert_eq!(StageName::from_name("split"), None);
        let sharded: Vec<StageName> = StageName::ALL
            .into_iter()
            .filter(|s| s.is_sharded())
            .collect();
        assert_eq!(
            StageName::list(sharded),
            "ingest_puzzles, ingest_games, selfplay, mine, rate"
        );
    }
}
