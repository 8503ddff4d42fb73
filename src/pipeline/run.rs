//! `puzzleforge run`: the configured stages, in order, into
//! `output/<release>/<stage>/`.
//!
//! Each stage writes into a scratch folder that is renamed into place when
//! the stage succeeds, with a `manifest.json` recording its inputs' sha256,
//! its config section, the engine, counts, seconds and its outputs' sha256.
//! A rerun skips a stage whose fingerprint (inputs, config, engine, tool
//! version) is unchanged and whose outputs are intact, and redoes the rest.

use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::core::error::bad_input;
use crate::core::fileio::sha256_file;
use crate::core::shard::Shard;
use crate::core::summary::Summary;
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::lock::ReleaseLock;
use crate::pipeline::manifest::{
    StageManifest, commit_stage_dir, fingerprint, fresh_scratch, manifest_seconds, output_hashes,
};
use crate::pipeline::stage::{RunContext, RunEngine, Stage, StageFolder, StageName};

/// Arguments of `puzzleforge run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Pipeline config file.
    #[arg(long, default_value = crate::pipeline::config::DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Release name: the run writes into `<output_dir>/<release>/`.
    #[arg(long)]
    pub release: Option<String>,
    /// Engine binary, overriding the config.
    #[arg(long)]
    pub engine: Option<PathBuf>,
    /// Produce this named tier of `[split.tiers]` instead of the default
    /// quotas.
    #[arg(long)]
    pub tier: Option<String>,
    /// Redo every stage even when its inputs and config are unchanged.
    #[arg(long)]
    pub force: bool,
    /// Do slice I of N (0 <= I < N) of the expensive stages (ingest,
    /// selfplay, mine, rate) into `<output_dir>/<release>.shard-I-of-N/`;
    /// `puzzleforge merge` then combines the N slices and runs the rest.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
}

/// Runs the pipeline.
pub fn run_pipeline(args: &RunArgs) -> Result<Summary> {
    let config = PipelineConfig::load(&args.config)?;
    let release = release_name(args, &config)?;
    let mut stages = crate::pipeline::adapters::configured(&config, &args.config)?;
    let mut left_for_merge = Vec::new();
    if args.shard.is_some() {
        let (sharded, rest) = split_sharded(stages, &args.config)?;
        stages = sharded;
        left_for_merge = rest.iter().map(|s| s.name()).collect();
    }
    let release_dir = match &args.shard {
        Some(shard) => config.pipeline.output_dir.join(shard.folder_name(&release)),
        None => config.pipeline.output_dir.join(&release),
    };
    std::fs::create_dir_all(&release_dir)
        .with_context(|| format!("creating {}", release_dir.display()))?;
    let _lock = ReleaseLock::acquire(&release_dir)?;

    let ctx = RunContext {
        release_dir: release_dir.clone(),
        engine: resolve_engine(&config.engine, args.engine.clone(), &stages)?,
        tier: args.tier.clone(),
        shard: args.shard,
    };
    let (mut human, report) = run_stages(&ctx, &stages, args.force)?;
    let mut json = json!({"release": release, "release_dir": release_dir, "stages": report});
    if let Some(shard) = &args.shard {
        human.push_str(&format!(
            "  shard {}/{}: {} left for `puzzleforge merge`\n",
            shard.index,
            shard.count,
            if left_for_merge.is_empty() {
                "no stage".to_string()
            } else {
                StageName::list(left_for_merge.iter().copied())
            }
        ));
        json["shard"] = json!(shard);
        json["left_for_merge"] = json!(left_for_merge);
    }
    Ok(Summary::new(human, json))
}

/// The release `run` writes: `--release`, else `pipeline.release`.
fn release_name(args: &RunArgs, config: &PipelineConfig) -> Result<String> {
    let release = args
        .release
        .clone()
        .unwrap_or_else(|| config.pipeline.release.clone());
    if release.is_empty() || release.contains(['/', '\\']) || release.starts_with('.') {
        return Err(bad_input(format!(
            "release name {release:?} must be a plain folder name"
        )));
    }
    Ok(release)
}

/// Stages in run order.
pub(crate) type Stages = Vec<Box<dyn Stage>>;

/// Splits the configured stages into those a shard runs (ingest, selfplay,
/// mine, rate) and those left for `merge`; a sliced stage after one left
/// for merge cannot be sliced.
pub(crate) fn split_sharded(stages: Stages, config_path: &Path) -> Result<(Stages, Stages)> {
    let mut sharded = Vec::new();
    let mut rest: Stages = Vec::new();
    for stage in stages {
        if stage.name().is_sharded() {
            if let Some(before) = rest.first() {
                return Err(bad_input(format!(
                    "{}: pipeline.stages puts {} after {}; sharded runs need {} first",
                    config_path.display(),
                    stage.name(),
                    before.name(),
                    StageName::list(StageName::ALL.into_iter().filter(|s| s.is_sharded()))
                )));
            }
            sharded.push(stage);
        } else {
            rest.push(stage);
        }
    }
    Ok((sharded, rest))
}

/// The engine of a run, when one of `stages` uses it: the `[engine]`
/// section (its path resolved when the config was loaded) under the
/// `--engine` flag.
pub(crate) fn resolve_engine<'a>(
    section: &EngineConfig,
    engine_flag: Option<PathBuf>,
    stages: impl IntoIterator<Item = &'a Box<dyn Stage>>,
) -> Result<Option<RunEngine>> {
    if !stages.into_iter().any(|s| s.uses_engine()) {
        return Ok(None);
    }
    let flags = EngineArgs {
        engine: engine_flag,
        ..EngineArgs::default()
    };
    let (spec, pool) = flags.resolve(section)?;
    let sha256 = sha256_file(&spec.path)?;
    Ok(Some(RunEngine { spec, pool, sha256 }))
}

/// Runs `stages` in order (skipping unchanged ones unless `force`); returns
/// the human lines and the JSON report of each stage.
pub(crate) fn run_stages(
    ctx: &RunContext,
    stages: &[Box<dyn Stage>],
    force: bool,
) -> Result<(String, Vec<Value>)> {
    let mut human = format!("release {}\n", ctx.release_dir.display());
    let mut report = Vec::new();
    for stage in stages {
        let outcome = run_stage(stage.as_ref(), ctx, force)
            .with_context(|| format!("stage {}", stage.name()))?;
        human.push_str(&format!(
            "  {:<16} {:<8} {:>8.1}s  {}\n",
            stage.name(),
            if outcome.skipped { "skipped" } else { "done" },
            outcome.seconds,
            compact_counts(&outcome.counts)
        ));
        report.push(json!({
            "stage": stage.name(),
            "skipped": outcome.skipped,
            "seconds": outcome.seconds,
            "counts": outcome.counts,
        }));
    }
    Ok((human, report))
}

struct StageOutcome {
    skipped: bool,
    seconds: f64,
    counts: Value,
}

fn run_stage(stage: &dyn Stage, ctx: &RunContext, force: bool) -> Result<StageOutcome> {
    let dir = ctx.stage_dir(stage.name());
    let print = fingerprint(stage, ctx)?;
    if let Some(previous) = StageManifest::previous(&dir).filter(|_| !force)
        && previous.fingerprint == print
        && previous.outputs_intact(&dir)
    {
        return Ok(StageOutcome {
            skipped: true,
            seconds: 0.0,
            counts: previous.counts,
        });
    }
    let folder = StageFolder {
        scratch: fresh_scratch(&ctx.release_dir, stage.name())?,
        committed: dir,
    };
    let started = Instant::now();
    let counts = stage.execute(ctx, &folder)?;
    let seconds = started.elapsed().as_secs_f64();
    let manifest = StageManifest {
        stage: stage.name(),
        fingerprint: print,
        counts: counts.clone(),
        seconds: manifest_seconds(seconds),
        shard: ctx.shard,
        merged_from: None,
        outputs: output_hashes(&folder.scratch)?,
    };
    commit_stage_dir(&folder.scratch, &folder.committed, &manifest)?;
    Ok(StageOutcome {
        skipped: false,
        seconds,
        counts,
    })
}

fn compact_counts(counts: &Value) -> String {
    match counts.as_object() {
        Some(map) => map
            .iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        None => String::new(),
    }
}
