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
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::config::PipelineConfig;
use crate::engine::{EngineArgs, EngineSpec};
use crate::error::bad_input;
use crate::fileio::{sha256_file, write_atomic};
use crate::pool::{EnginePool, PoolConfig};
use crate::shard::{SHARDED_STAGES, Shard};
use crate::summary::Summary;

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
        crate::config::relative_to(self.config_path, path)
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

/// The stages `run` knows, by name.
pub fn stage_by_name(name: &str) -> Option<Box<dyn Stage>> {
    crate::stages::all()
        .into_iter()
        .find(|stage| stage.name() == name)
}

/// Arguments of `puzzleforge run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Pipeline config file.
    #[arg(long, default_value = crate::config::DEFAULT_CONFIG)]
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

/// The runner's record of a stage, beside the stage's outputs (a stage may
/// write a `manifest.json` of its own, as the release does).
pub(crate) const MANIFEST: &str = "stage.json";

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
    let output_dir = crate::config::relative_to(&args.config, &config.pipeline.output_dir);
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
                let known: Vec<&str> = crate::stages::all().iter().map(|s| s.name()).collect();
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
        .map(|p| crate::config::relative_to(config_path, &p));
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

/// What decides a stage's outputs. Inputs inside the release folder are
/// named relative to it, so the same release written elsewhere (a `merge`
/// of shards) has the same fingerprints.
pub(crate) fn fingerprint(stage: &dyn Stage, ctx: &RunContext) -> Result<Value> {
    let mut inputs = BTreeMap::new();
    for input in stage.inputs(ctx)? {
        let sha = sha256_file(&input).map_err(|e| {
            bad_input(format!(
                "input {} of stage {}: {e:#}",
                input.display(),
                stage.name()
            ))
        })?;
        let name = input
            .strip_prefix(&ctx.release_dir)
            .unwrap_or(&input)
            .display()
            .to_string();
        inputs.insert(name, sha);
    }
    let engine = match (&ctx.engine, stage.uses_engine()) {
        (Some(engine), true) => json!({
            "path": engine.spec.path,
            "sha256": engine.sha256,
            "options": engine.spec.options,
        }),
        _ => Value::Null,
    };
    let mut print = json!({
        "tool_version": env!("CARGO_PKG_VERSION"),
        "inputs": inputs,
        "config": stage.config_section(ctx),
        "engine": engine,
    });
    if let Some(shard) = &ctx.shard {
        print["shard"] = shard.to_json();
    }
    Ok(print)
}

pub(crate) fn outputs_intact(dir: &Path, manifest: &Value) -> bool {
    let Some(outputs) = manifest.get("outputs").and_then(Value::as_object) else {
        return false;
    };
    outputs.iter().all(|(name, sha)| {
        sha.as_str()
            .is_some_and(|sha| sha256_file(&dir.join(name)).is_ok_and(|actual| actual == sha))
    })
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

/// An empty scratch folder for a stage, `<release>/.<stage>.partial`: what a
/// stage writes is renamed into place only once it is complete.
pub(crate) fn fresh_scratch(release_dir: &Path, stage: &str) -> Result<PathBuf> {
    let scratch = release_dir.join(format!(".{stage}.partial"));
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("removing {}", scratch.display()))?;
    }
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    Ok(scratch)
}

/// The sha256 of every output in a stage's folder, by path relative to it.
pub(crate) fn output_hashes(dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut outputs = BTreeMap::new();
    for entry in walk_files(dir)? {
        let relative = entry
            .strip_prefix(dir)
            .unwrap_or(&entry)
            .to_string_lossy()
            .into_owned();
        outputs.insert(relative, sha256_file(&entry)?);
    }
    Ok(outputs)
}

/// Records `outputs` (see [`output_hashes`]) in `manifest`, writes it as
/// the stage's `stage.json` and renames the scratch folder into place as
/// `dir`.
pub(crate) fn commit_stage_dir(
    scratch: &Path,
    dir: &Path,
    mut manifest: Value,
    outputs: BTreeMap<String, String>,
) -> Result<()> {
    manifest["outputs"] = json!(outputs);
    write_atomic(
        &scratch.join(MANIFEST),
        format!("{}\n", serde_json::to_string_pretty(&manifest)?).as_bytes(),
    )?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("replacing {}", dir.display()))?;
    }
    std::fs::rename(scratch, dir)
        .with_context(|| format!("renaming {} to {}", scratch.display(), dir.display()))?;
    Ok(())
}

/// Every regular file under `dir`, sorted, skipping hidden scratch files.
pub(crate) fn walk_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in
            std::fs::read_dir(&folder).with_context(|| format!("listing {}", folder.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .file_name()
                .is_some_and(|n| !n.to_string_lossy().starts_with('.') && n != MANIFEST)
            {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
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

/// Stops two runs writing one release. The lock file holds the owner's
/// pid; a lock whose process is gone is stale and taken over.
pub struct ReleaseLock {
    path: PathBuf,
}

impl ReleaseLock {
    pub fn acquire(release_dir: &Path) -> Result<Self> {
        let path = release_dir.join(".lock");
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut file) => {
                    use std::io::Write;
                    writeln!(file, "{}", std::process::id())?;
                    return Ok(Self { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let owner = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|text| text.trim().parse::<u32>().ok());
                    match owner {
                        Some(pid) if process_alive(pid) => {
                            return Err(bad_input(format!(
                                "{} is being written by process {pid} (lock {})",
                                release_dir.display(),
                                path.display()
                            )));
                        }
                        _ => {
                            // The owner died without cleaning up: stale.
                            std::fs::remove_file(&path).with_context(|| {
                                format!("removing stale lock {}", path.display())
                            })?;
                        }
                    }
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("creating lock {}", path.display()));
                }
            }
        }
        Err(bad_input(format!(
            "could not take the lock {}",
            path.display()
        )))
    }
}

impl Drop for ReleaseLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}
