//! The stage contract: what a stage sees while it runs ([`RunContext`],
//! [`StageFolder`]) and what it tells the runner ([`Stage`]): its config
//! section, its input files, whether it uses the engine, the work itself,
//! and its own steps around the runner's (a hold before the work, a step
//! after the commit). The stages' names are [`crate::stages::name`].

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::core::lock::FileLock;
use crate::core::shard::Shard;
use crate::engine::pool::{EnginePool, PoolConfig};
use crate::engine::process::EngineSpec;
use crate::pipeline::summary::StageSummary;
use crate::stages::StageName;
use crate::stages::mine::CheckpointAt;
use crate::stages::release::manifest::KeptWork;

/// What every stage sees while it runs; a stage's settings are its own
/// (see [`crate::pipeline::adapters`]).
pub struct RunContext {
    /// `output/<release>/`.
    pub release_dir: PathBuf,
    /// The engine of the run (the `[engine]` section resolved), when a
    /// stage needs one.
    pub engine: Option<RunEngine>,
    /// `--tier`: the named tier of `[release.tiers]` to produce.
    pub tier: Option<String>,
    /// `--shard I/N`: the slice of the expensive stages this run does.
    pub shard: Option<Shard>,
    /// The config file's folder: fingerprints name the files under it
    /// relative to it, so that running one config from another working
    /// directory finds its stages unchanged.
    pub config_dir: PathBuf,
    /// How the run was asked for (config file, release name, flags), as
    /// the release records it for `reproduce`; `None` outside `run`.
    pub invocation: Option<Invocation>,
    /// `run --keep-stored-work`: a stage whose stored outputs differ from
    /// this build's only in the algorithm version is kept, not redone.
    pub keep_stored_work: bool,
    /// The stored work kept so far under `keep_stored_work`, which the
    /// release records.
    pub kept_work: Vec<KeptWork>,
}

/// How a `run` (or `merge`) was asked for: what its release records so
/// that `reproduce` can ask again.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub config_path: PathBuf,
    /// The config's text, as the run read it.
    pub config_text: String,
    pub release: String,
    pub tier_flag: Option<String>,
    pub engine_flag: bool,
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
    pub(crate) fn generate_engine(&self) -> Result<crate::generate::Engine<'_>> {
        let engine = self.engine()?;
        Ok(crate::generate::Engine {
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
    /// `<release>/.<stage>.checkpoint`: where a long stage records its
    /// finished work as it goes. A run killed mid-stage leaves it (unlike
    /// the scratch folder), so the next run's stage resumes; it goes when
    /// the stage commits.
    pub checkpoints: PathBuf,
    /// What the stage's outputs depend on
    /// ([`crate::pipeline::manifest::Fingerprint::work_key`]): a checkpoint
    /// of other work is set aside, never resumed.
    pub work_key: String,
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

    /// The checkpoint of the work that writes the output `name`.
    pub(crate) fn checkpoint(&self, name: &str) -> CheckpointAt {
        CheckpointAt {
            path: self.checkpoints.join(format!("{name}.checkpoint.jsonl")),
            fingerprint: self.work_key.clone(),
        }
    }

    /// The final folder, as the stage's summary names it.
    pub(crate) fn committed_folder(&self) -> String {
        self.committed.display().to_string()
    }
}

/// What a stage holds through its turn, from [`Stage::before_work`] until
/// after [`Stage::after_commit`]; let go when dropped.
#[derive(Default)]
pub struct Hold {
    /// A lock the turn holds (the release stage's, on its output folder).
    _lock: Option<FileLock>,
}

impl Hold {
    /// Holds `lock` through the turn.
    pub(crate) fn lock(lock: FileLock) -> Hold {
        Hold { _lock: Some(lock) }
    }
}

/// What the runner does after a stage's [`Stage::before_work`].
pub enum BeforeWork {
    /// Weighs the stage's stored outputs, and does its work when they do
    /// not stand, holding this until the turn ends.
    Weigh(Hold),
    /// The stage found its stored outputs stand as they are (these are
    /// their recorded counts): nothing is weighed or done.
    Stands(Value),
}

/// Stages in run order.
pub(crate) type Stages = Vec<Box<dyn Stage>>;

/// One pipeline stage, holding its own settings.
pub trait Stage {
    /// The stage's name in `pipeline.stages` and its folder name.
    fn name(&self) -> StageName;
    /// The config the stage depends on (its section, plus the seed when it
    /// draws random numbers), as its fingerprint records it.
    fn config_section(&self, ctx: &RunContext) -> Result<Value>;
    /// Files the stage reads; their sha256 go into the fingerprint.
    fn inputs(&self, ctx: &RunContext) -> Result<Vec<PathBuf>>;
    /// Whether results depend on the engine binary: the stage's row of
    /// [`StageName::properties`], which no stage overrides (none's answer
    /// depends on its settings).
    fn uses_engine(&self) -> bool {
        self.name().properties().uses_engine
    }
    /// Wall seconds of the stage's work done before the stages ran (a
    /// generated stage's share of playing the batches): the run's table
    /// counts them as the stage's own.
    fn seconds_spent_before(&self) -> f64 {
        0.0
    }
    /// First in the stage's turn, before the runner weighs its stored
    /// outputs (`force`: `--force`, which redoes every stage): takes what
    /// the stage holds through its turn and works out what it needs for
    /// it, or finds its stored outputs stand as they are.
    fn before_work(&self, _ctx: &RunContext, _force: bool) -> Result<BeforeWork> {
        Ok(BeforeWork::Weigh(Hold::default()))
    }
    /// Once the stage's outputs are committed into `committed`, still
    /// holding what [`Stage::before_work`] took.
    fn after_commit(&self, _ctx: &RunContext, _committed: &Path) -> Result<()> {
        Ok(())
    }
    /// Whether the stage's `stage.json` records how the run was asked for
    /// ([`RunContext::invocation`]): what `reproduce` asks again.
    fn records_invocation(&self) -> bool {
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
