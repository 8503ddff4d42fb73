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
use crate::engine::settings::EngineArgs;
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::lock::ReleaseLock;
use crate::pipeline::manifest::{
    MANIFEST, commit_stage_dir, fingerprint, fresh_scratch, output_hashes, outputs_intact,
};
use crate::pipeline::stage::{RunContext, RunEngine, SHARDED_STAGES, Stage};

/// The stages `run` knows, by name.
pub fn stage_by_name(name: &str) -> Option<Box<dyn Stage>> {
    crate::pipeline::adapters::all()
        .into_iter()
        .find(|stage| stage.name() == name)
}

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
    let release = args
        .release
        .clone()
        .unwrap_or_else(|| config.pipeline.release.clone());
    if release.is_empty() || release.contains(['/', '\\']) || release.starts_with('.') {
        return Err(bad_input(format!(
            "release name {release:?} must be a plain folder name"
        )));
    }
    let mut stages = configured_stages(&config, &args.config)?;
    let mut left_for_merge = Vec::new();
    if args.shard.is_some() {
        let (sharded, rest) = split_sharded(stages, &args.config)?;
        stages = sharded;
        left_for_merge = rest.iter().map(|s| s.name()).collect();
    }
    let output_dir =
        crate::pipeline::config::relative_to(&args.config, &config.pipeline.output_dir);
    let release_dir = match &args.shard {
        Some(shard) => output_dir.join(shard.folder_name(&release)),
        None => output_dir.join(&release),
    };
    std::fs::create_dir_all(&release_dir)
        .with_context(|| format!("creating {}", release_dir.display()))?;
    let _lock = ReleaseLock::acquire(&release_dir)?;

    let engine = resolve_engine(&config, &args.config, args.engine.clone(), &stages)?;
    let ctx = RunContext {
        config: &config,
        config_path: &args.config,
        release_dir: release_dir.clone(),
        engine,
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
                left_for_merge.join(", ")
            }
        ));
        json["shard"] = shard.to_json();
        json["left_for_merge"] = json!(left_for_merge);
    }
    Ok(Summary::new(human, json))
}

/// The stages of `pipeline.stages`, checked against the stages `run` knows.
pub(crate) fn configured_stages(
    config: &PipelineConfig,
    config_path: &Path,
) -> Result<Vec<Box<dyn Stage>>> {
    let mut stages = Vec::new();
    for name in &config.pipeline.stages {
        match stage_by_name(name) {
            Some(stage) => stages.push(stage),
            None => {
                let known: Vec<&str> = crate::pipeline::adapters::all()
                    .iter()
                    .map(|s| s.name())
                    .collect();
                return Err(bad_input(format!(
                    "{}: pipeline.stages names unknown stage {name:?}; known stages: {}",
                    config_path.display(),
                    known.join(", ")
                )));
            }
        }
    }
    Ok(stages)
}

/// Stages in run order.
pub(crate) type Stages = Vec<Box<dyn Stage>>;

/// Splits the configured stages into those a shard runs (ingest, selfplay,
/// mine, rate) and those left for `merge`; a sliced stage after one left
/// for merge cannot be sliced.
pub(crate) fn split_sharded(stages: Stages, config_path: &Path) -> Result<(Stages, Stages)> {
    let mut sharded = Vec::new();
    let mut rest: Vec<Box<dyn Stage>> = Vec::new();
    for stage in stages {
        if SHARDED_STAGES.contains(&stage.name()) {
            if let Some(before) = rest.first() {
                return Err(bad_input(format!(
                    "{}: pipeline.stages puts {} after {}; sharded runs need {} first",
                    config_path.display(),
                    stage.name(),
                    before.name(),
                    SHARDED_STAGES.join(", ")
                )));
            }
            sharded.push(stage);
        } else {
            rest.push(stage);
        }
    }
    Ok((sharded, rest))
}

/// The engine of a run, when one of `stages` uses it.
pub(crate) fn resolve_engine(
    config: &PipelineConfig,
    config_path: &Path,
    engine_flag: Option<PathBuf>,
    stages: &[Box<dyn Stage>],
) -> Result<Option<RunEngine>> {
    if !stages.iter().any(|s| s.uses_engine()) {
        return Ok(None);
    }
    let mut engine_config = config.engine.clone();
    engine_config.path = engine_config
        .path
        .map(|p| crate::pipeline::config::relative_to(config_path, &p));
    let flags = EngineArgs {
        engine: engine_flag,
        ..EngineArgs::default()
    };
    let (spec, pool) = flags.resolve(&engine_config)?;
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
    let previous = std::fs::read(dir.join(MANIFEST))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    if let Some(previous) = previous.filter(|_| !force)
        && previous.get("fingerprint") == Some(&print)
        && outputs_intact(&dir, &previous)
    {
        return Ok(StageOutcome {
            skipped: true,
            seconds: 0.0,
            counts: previous.get("counts").cloned().unwrap_or(Value::Null),
        });
    }
    let scratch = fresh_scratch(&ctx.release_dir, stage.name())?;
    let started = Instant::now();
    let counts = stage.execute(ctx, &scratch)?;
    let seconds = started.elapsed().as_secs_f64();
    // Stage summaries name the files they wrote; name them where they will
    // be once the scratch folder is renamed into place.
    let counts: Value = serde_json::from_str(
        &serde_json::to_string(&counts)?
            .replace(&scratch.display().to_string(), &dir.display().to_string()),
    )?;

    let mut manifest = json!({
        "stage": stage.name(),
        "fingerprint": print,
        "counts": counts,
        "seconds": (seconds * 1000.0).round() / 1000.0,
    });
    if let Some(shard) = &ctx.shard {
        manifest["shard"] = shard.to_json();
    }
    let outputs = output_hashes(&scratch)?;
    commit_stage_dir(&scratch, &dir, manifest, outputs)?;
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
