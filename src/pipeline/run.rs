//! `puzzleforge run`: the configured stages, in order, into
//! `output/<release>/<stage>/`.
//!
//! Each stage writes into a scratch folder that is renamed into place when
//! the stage succeeds, with a `stage.json` recording its inputs' sha256,
//! its config section, the engine, counts, seconds and its outputs' sha256.
//! A rerun skips a stage whose fingerprint (inputs, config, engine, tool
//! version, the stage's algorithm version) is unchanged and whose outputs
//! are intact, and redoes the rest; a stage redone because this build's
//! algorithm differs from the recorded one says so. The build that wrote
//! a stage is recorded but decides nothing.

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use crate::core::error::bad_input;
use crate::core::fileio::{left_by_dead_process, sha256_file};
use crate::core::shard::Shard;
use crate::core::summary::Summary;
use crate::engine::pool::PoolConfig;
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::generate::{Generated, Mode, prepare};
use crate::pipeline::closing::{self, FinishedRun, HintFlags, StageReport};
use crate::pipeline::config::PipelineConfig;
use crate::pipeline::generated_adapters::on_generated_route;
use crate::pipeline::lock::ReleaseLock;
use crate::pipeline::manifest::{
    EnginePath, Fingerprint, StageManifest, Standing, commit_stage_dir, fingerprint, fresh_scratch,
    manifest_seconds, output_hashes,
};
use crate::pipeline::seeds::RunSeeds;
use crate::pipeline::stage::{BeforeWork, RunContext, RunEngine, Stage, StageFolder};
use crate::stages::StageName;

/// `puzzleforge run`'s flags (their help: `cli::run`); `reproduce` fills them
/// from what a release records.
#[derive(Debug, Clone)]
pub struct RunArgs {
    pub config: PathBuf,
    pub release: Option<String>,
    pub engine: Option<PathBuf>,
    pub tier: Option<String>,
    pub force: bool,
    pub rewrite_release: bool,
    pub shard: Option<Shard>,
    pub strict: bool,
    pub keep_stored_work: bool,
    pub plan: crate::generate::plan::PlanArgs,
    pub aim: crate::pipeline::aim::AimArgs,
}

/// Runs the pipeline.
pub fn run_pipeline(args: &RunArgs) -> Result<Summary> {
    let text = PipelineConfig::read_text(&args.config)?;
    run_pipeline_from(args, &text, None)
}

/// Runs the pipeline of the config text `text` (as the file `args.config`
/// holds it, which need not exist), writing under `output_dir` instead of
/// the config's `pipeline.output_dir` when given (`reproduce`'s scratch
/// folder).
pub(crate) fn run_pipeline_from(
    args: &RunArgs,
    text: &str,
    output_dir: Option<&Path>,
) -> Result<Summary> {
    let mut config = PipelineConfig::from_text(text, &args.config)?;
    if let Some(output_dir) = output_dir {
        config.pipeline.output_dir = output_dir.to_path_buf();
    }
    // A plan only prices generation: it samples with [generate] on whether
    // or not the config runs it, so `run --plan` works on a config that
    // has not turned generation on yet.
    let planned_off = args.plan.plan && !config.generate.enabled;
    config.generate.enabled |= planned_off;
    // `--aim` adds its tier to [release.tiers]; from here on it is the tier
    // the run produces, as a `--tier` would be.
    let tier = crate::pipeline::aim::add_aimed_tier(&args.aim, &mut config, &args.config)?
        .or_else(|| args.tier.clone());
    let tier = tier.as_deref();
    config.validate(&args.config, tier)?;
    let release = release_name(args, &config)?;
    let seeds = RunSeeds::of(&config.pipeline, &release);
    let mut stages = crate::pipeline::adapters::configured(&config, &seeds, &args.config)?;
    let mut left_for_merge = Vec::new();
    if args.shard.is_some() {
        let (sharded, rest) = split_sharded(stages, &args.config)?;
        stages = sharded;
        left_for_merge = rest.iter().map(|s| s.name()).collect();
    }
    let engine = resolve_engine(&config.engine, args.engine.clone(), &stages)?;
    check_engines(
        &config,
        &args.config,
        args.engine.is_some(),
        engine.as_ref(),
        &stages,
    )?;
    let release_dir = match &args.shard {
        Some(shard) => config.pipeline.output_dir.join(shard.folder_name(&release)),
        None => config.pipeline.output_dir.join(&release),
    };
    if args.plan.plan {
        let mut summary = run_plan(args, &config, &stages, release_dir, tier)?;
        if planned_off {
            summary.human.push_str(&format!(
                "  [generate] is off in {}: planned as if on; set `[generate] enabled = true` \
                 there to generate\n",
                args.config.display()
            ));
        }
        return Ok(summary);
    }
    refuse_linked_release(&release_dir)?;
    std::fs::create_dir_all(&release_dir)
        .with_context(|| format!("creating {}", release_dir.display()))?;
    let _lock = ReleaseLock::acquire(&release_dir)?;
    remove_leftovers(&release_dir)?;

    let mut ctx = RunContext {
        release_dir: release_dir.clone(),
        engine,
        tier: config.generate.release_tier(tier),
        shard: args.shard,
        config_dir: config_dir(&args.config),
        invocation: Some(crate::pipeline::stage::Invocation {
            config_path: args.config.clone(),
            config_text: text.to_string(),
            release: release.clone(),
            tier_flag: args.tier.clone(),
            engine_flag: args.engine.is_some(),
        }),
        keep_stored_work: args.keep_stored_work,
        kept_work: Vec::new(),
    };
    // Under `[generate]` the games are played in batches first, and the
    // self-play chain's stages are those of the generated route, holding
    // them.
    let generated = if config.generate.enabled {
        let generated = Rc::new(prepare_generation(args, &config, &ctx, &stages, tier)?);
        if args.keep_stored_work {
            let mut sections = config.generate_sections();
            sections.keep_stored_work = true;
            ctx.kept_work.extend(crate::generate::kept_stores(
                &sections,
                ctx.generate_engine()?,
                tier,
            )?);
        }
        stages = on_generated_route(stages, &config, &seeds, &generated)?;
        Some(generated)
    } else {
        None
    };
    let generated = generated.as_deref();
    if args.strict && generated.is_none() && !stages.iter().any(|s| s.name() == StageName::Release)
    {
        return Err(bad_input(format!(
            "run --strict checks the release's cells, but {} has no release stage in pipeline.stages (and [generate] is off)",
            args.config.display()
        )));
    }
    let redo = Redo {
        force: args.force,
        rewrite_release: args.rewrite_release,
    };
    let (human, report) = match run_stages(&mut ctx, &stages, redo) {
        Ok(done) => done,
        Err(error) => return closing::generation_fell_short(&ctx, generated, &release, error),
    };
    closing::run_summary(
        FinishedRun {
            ctx: &ctx,
            release: &release,
            generated,
            shard: args.shard.map(|shard| (shard, left_for_merge)),
            hint_flags: hint_flags(args),
            strict: args.strict,
        },
        human,
        report,
    )
}

/// The flags of `args` a closing hint's command repeats.
fn hint_flags(args: &RunArgs) -> HintFlags<'_> {
    HintFlags {
        config: &args.config,
        tier: args.tier.as_deref(),
        aim: &args.aim,
    }
}

/// Generation's walk, set up before any stage runs: a finished release
/// is checked against the store its games came from before any game is
/// played.
fn prepare_generation(
    args: &RunArgs,
    config: &PipelineConfig,
    ctx: &RunContext,
    stages: &[Box<dyn Stage>],
    tier: Option<&str>,
) -> Result<Generated> {
    let kept = !args.rewrite_release && release_is_finished(&ctx.release_dir);
    let mode = match args.shard {
        Some(shard) => Mode::Shard(shard),
        // A finished release is walked from the store alone: a game to
        // play is refused before any batch is played.
        None if kept => Mode::Check,
        None => Mode::Run,
    };
    let mut sections = config.generate_sections();
    sections.keep_stored_work = args.keep_stored_work;
    if kept {
        // Refused before any game is played: the ingest stages, and
        // the store the kept release's games came from.
        let ingest = stages.iter().filter(|s| s.name().properties().ingest);
        check_kept(ctx, ingest)?;
        let key = crate::generate::store_key(&sections, ctx.generate_engine()?, tier)?;
        check_kept_store(ctx, &key)?;
    }
    let earlier = crate::pipeline::adapters::earlier_releases(ctx)?;
    let generated = prepare(&sections, ctx.generate_engine()?, mode, tier, &earlier);
    match mode {
        Mode::Check => {
            generated.with_context(|| ctx.stage_dir(StageName::Release).display().to_string())
        }
        _ => generated,
    }
}

/// `run --plan`: samples and projects instead of running the stages (no
/// release folder is written).
fn run_plan(
    args: &RunArgs,
    config: &PipelineConfig,
    stages: &[Box<dyn Stage>],
    release_dir: PathBuf,
    tier: Option<&str>,
) -> Result<Summary> {
    let ctx = RunContext {
        release_dir,
        engine: resolve_engine(&config.engine, args.engine.clone(), stages)?,
        tier: config.generate.release_tier(tier),
        shard: None,
        config_dir: config_dir(&args.config),
        invocation: None,
        keep_stored_work: false,
        kept_work: Vec::new(),
    };
    let command = format!("puzzleforge run{}", hint_flags(args).text());
    let earlier = crate::pipeline::adapters::earlier_releases(&ctx)?;
    crate::generate::plan::run_plan(
        &args.plan,
        &config.generate_sections(),
        ctx.generate_engine()?,
        &earlier,
        &ctx.release_dir,
        tier,
        &command,
    )
}

/// Removes what killed or failed runs left in a release folder: stage
/// scratch folders (`.NAME.partial`) and temporary files (`.NAME.tmp-PID`)
/// of processes that are gone. Called with the lock held, so no live run
/// of this release owns a scratch folder; a live process's temporary file
/// is left alone.
pub(crate) fn remove_leftovers(release_dir: &Path) -> Result<()> {
    let mut pending = vec![release_dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && name.starts_with('.') && name.ends_with(".partial") {
                std::fs::remove_dir_all(&path)
                    .with_context(|| format!("removing leftover {}", path.display()))?;
            } else if is_dir {
                pending.push(path);
            } else if name.starts_with('.') && left_by_dead_process(&name, ".tmp-") {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing leftover {}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// Refuses a release folder that is a symbolic link (a run would write
/// through it, and later releases, which read no release through a link,
/// would refuse it) or that holds a `release`'s release (no run writes into
/// a finished release).
pub(crate) fn refuse_linked_release(release_dir: &Path) -> Result<()> {
    if std::fs::symlink_metadata(release_dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(bad_input(format!(
            "{} is a symbolic link: a release folder must be a folder of the output folder \
             (later releases read no release through a link). Remove the link, or move the \
             folder it points at there in its place",
            release_dir.display()
        )));
    }
    if crate::stages::release::folder::ReleaseFolder::at(release_dir).looks_like_release() {
        return Err(bad_input(format!(
            "{} holds a finished release written by `release`; a finished release never changes. \
             Make a new release with `puzzleforge run --release NEW`",
            release_dir.display()
        )));
    }
    Ok(())
}

/// The folder of the config file `path` (empty for one in the working
/// directory).
pub(crate) fn config_dir(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The release `run` writes: `--release`, else `pipeline.release`.
fn release_name(args: &RunArgs, config: &PipelineConfig) -> Result<String> {
    let release = args
        .release
        .clone()
        .unwrap_or_else(|| config.pipeline.release.clone());
    check_release_name(&release)?;
    crate::stages::release::folder::check_registry(&config.pipeline.output_dir)?;
    Ok(release)
}

/// A release's folder name as `run` and `merge` accept it: a plain folder
/// name that later releases find and exclude (they skip hidden folders,
/// shard folders and `target`), and none of the names the output folder
/// uses for itself (its registry `releases.sha256`; `.releases.lock`,
/// `.generate` and `.eval-cache` are hidden, so refused already).
pub(crate) fn check_release_name(release: &str) -> Result<()> {
    if release.is_empty() || release.contains(['/', '\\']) || release.starts_with('.') {
        return Err(bad_input(format!(
            "release name {release:?} must be a plain folder name"
        )));
    }
    // A line break, a tab or a bidirectional override would make the name
    // read as another in a listing, a log line or a manifest.
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    if let Some(c) = release.chars().find(|c| hidden(*c)) {
        return Err(bad_input(format!(
            "release name {release:?} holds the character {:?} (U+{:04X}), which would make it \
             read as another name in listings and logs; use letters, digits, `-` and `_`",
            c,
            u32::from(c)
        )));
    }
    if release == crate::stages::release::folder::RELEASES_REGISTRY {
        return Err(bad_input(format!(
            "release name {release:?} is refused: it is the name of the output folder's own \
             registry of releases (the file beside the releases that records their manifests), \
             so the release folder and the registry would collide; choose another name"
        )));
    }
    if crate::core::shard::is_shard_folder_name(release) || release == "target" {
        return Err(bad_input(format!(
            "release name {release:?} is refused: later releases would not exclude its puzzles \
             (they skip folders named like a shard folder, NAME.shard-I-of-N, and `target`)"
        )));
    }
    Ok(())
}

/// Whether `release_dir` holds a finished release (its release stage
/// committed).
pub(crate) fn release_is_finished(release_dir: &Path) -> bool {
    crate::stages::release::folder::run_release_is_finished(release_dir)
}

/// Starts every engine the run uses once (the `uci` handshake), before the
/// first stage: a path that is no engine is an error (exit 2) naming its
/// config key, not a failure hours later when its stage comes.
pub(crate) fn check_engines<'a>(
    config: &PipelineConfig,
    config_path: &Path,
    engine_flag: bool,
    engine: Option<&RunEngine>,
    stages: impl IntoIterator<Item = &'a Box<dyn Stage>>,
) -> Result<()> {
    use crate::engine::process::Engine;
    let handshake = |spec: &crate::engine::process::EngineSpec, pool: &PoolConfig| {
        Engine::start_with_handshake(spec, pool.handshake_deadline, pool.deadline)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let mut pool = PoolConfig::default();
    if let Some(engine) = engine {
        pool = engine.pool.clone();
        if let Err(why) = handshake(&engine.spec, &pool) {
            return Err(if engine_flag {
                bad_input(format!("--engine: {why}"))
            } else {
                crate::pipeline::config::key_error(config_path, "engine", "path", &why)
            });
        }
    }
    let verifies =
        config.generate.enabled || stages.into_iter().any(|s| s.name() == StageName::Verify);
    if let Some(second) = config.verify.second_engine.as_ref().filter(|_| verifies) {
        let checked = second
            .spec()
            .map_err(|e| format!("{e:#}"))
            .and_then(|spec| handshake(&spec, &pool));
        if let Err(why) = checked {
            return Err(crate::pipeline::config::key_error(
                config_path,
                "verify.second_engine",
                "path",
                &why,
            ));
        }
    }
    Ok(())
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

/// What a run redoes beyond the stages whose fingerprint changed.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Redo {
    /// `--force`: every stage but a finished release.
    pub force: bool,
    /// `--rewrite-release`: a finished release too, when it would differ.
    pub rewrite_release: bool,
}

/// Runs `stages` in order (skipping unchanged ones unless `redo` says
/// otherwise); returns the human lines and the JSON report of each stage.
///
/// A finished release is immutable as a whole: unless `redo` rewrites it,
/// every stage up to and including the release is checked first and kept
/// as it is, and when one would now come out differently (or its files
/// were damaged) the run stops (exit 2) before writing anything; the
/// stages after the release (export, eval) run as usual.
pub(crate) fn run_stages(
    ctx: &mut RunContext,
    stages: &[Box<dyn Stage>],
    redo: Redo,
) -> Result<(String, Vec<StageReport>)> {
    let mut human = format!("release {}\n", ctx.release_dir.display());
    let mut report = Vec::new();
    let kept = !redo.rewrite_release && release_is_finished(&ctx.release_dir);
    let is_kept = |stage: StageName| kept && stage <= StageName::Release;
    if kept {
        check_kept(ctx, stages.iter().filter(|s| is_kept(s.name())))?;
    }
    for stage in stages {
        let outcome = if is_kept(stage.name()) {
            let previous = StageManifest::previous(&ctx.stage_dir(stage.name()));
            StageOutcome::kept(previous.map(|p| p.counts).unwrap_or_default(), None)
        } else {
            run_stage(stage.as_ref(), ctx, redo)
                .with_context(|| format!("stage {}", stage.name()))?
        };
        // Under `[generate]` the stages' work was done when the batches
        // were played, before the stages ran: their time is theirs.
        let outcome = StageOutcome {
            seconds: outcome.seconds + stage.seconds_spent_before(),
            ..outcome
        };
        let ended = StageReport {
            stage: stage.name(),
            skipped: outcome.skipped,
            seconds: outcome.seconds,
            counts: outcome.counts,
            why: outcome.why,
        };
        human.push_str(&ended.ended_row());
        report.push(ended);
    }
    Ok((human, report))
}

/// How one stage's turn ended: done, or its stored outputs kept.
struct StageOutcome {
    skipped: bool,
    seconds: f64,
    counts: Value,
    why: Option<String>,
}

impl StageOutcome {
    /// Stored outputs kept (`counts`: those they recorded), with the line
    /// saying why when a choice of the run decided it.
    fn kept(counts: Value, why: Option<String>) -> StageOutcome {
        StageOutcome {
            skipped: true,
            seconds: 0.0,
            counts,
            why,
        }
    }
}

/// One stage's turn: its own step before the work, its stored outputs
/// weighed, and when they do not stand its work done and committed.
fn run_stage(stage: &dyn Stage, ctx: &mut RunContext, redo: Redo) -> Result<StageOutcome> {
    // Held until the turn ends, after the stage's step after the commit.
    let _hold = match stage.before_work(ctx, redo.force)? {
        BeforeWork::Stands(counts) => return Ok(StageOutcome::kept(counts, None)),
        BeforeWork::Weigh(hold) => hold,
    };
    match weigh_stored(stage, ctx, redo.force)? {
        Weighed::Stands(outcome) => Ok(outcome),
        Weighed::Redo { print, why } => work_and_commit(stage, ctx, print, why),
    }
}

/// What weighing a stage's stored outputs decided.
enum Weighed {
    /// They stand: kept as they are, or under `--keep-stored-work`.
    Stands(StageOutcome),
    /// The stage is redone under the fingerprint `print`; `why`: the line
    /// saying so when its algorithm version decided it.
    Redo {
        print: Fingerprint,
        why: Option<String>,
    },
}

/// Weighs the stage's stored outputs (none under `force`) against this
/// run's fingerprint of it.
fn weigh_stored(stage: &dyn Stage, ctx: &mut RunContext, force: bool) -> Result<Weighed> {
    let dir = ctx.stage_dir(stage.name());
    let Some(previous) = StageManifest::previous(&dir).filter(|_| !force) else {
        let print = fingerprint(stage, ctx)?;
        return Ok(Weighed::Redo { print, why: None });
    };
    let standing = previous.standing(&dir, || fingerprint(stage, ctx), EnginePath::Compared)?;
    Ok(match standing {
        Standing::Current => Weighed::Stands(StageOutcome::kept(previous.counts, None)),
        Standing::OtherAlgorithm(print) if ctx.keep_stored_work => {
            Weighed::Stands(keep_stored_work(stage, ctx, previous, &print))
        }
        Standing::OtherAlgorithm(print) | Standing::Changed(print) => {
            let why = previous.fingerprint.algorithm_change(&print, stage.name());
            if let Some(line) = &why {
                crate::core::progress::note(line);
            }
            Weighed::Redo { print, why }
        }
        // Outputs changed or gone since they were recorded: redone.
        Standing::Damaged(_) => Weighed::Redo {
            print: fingerprint(stage, ctx)?,
            why: None,
        },
    })
}

/// `--keep-stored-work`: keeps a stage whose stored outputs differ from
/// this build's (`print`) only in the algorithm version, says so, and
/// adds it to the stored work the release records.
fn keep_stored_work(
    stage: &dyn Stage,
    ctx: &mut RunContext,
    previous: StageManifest,
    print: &Fingerprint,
) -> StageOutcome {
    let line = format!(
        "{}: kept (--keep-stored-work), recorded algorithm {}, this build {}",
        stage.name(),
        previous.fingerprint.algorithm,
        print.algorithm
    );
    crate::core::progress::note(&line);
    ctx.kept_work
        .push(crate::stages::release::manifest::KeptWork {
            what: format!("stage {}", stage.name()),
            recorded: previous.fingerprint.algorithm.clone(),
            this_build: print.algorithm.clone(),
        });
    StageOutcome::kept(previous.counts, Some(line))
}

/// Does the stage's work into a scratch folder, commits it with its
/// `stage.json` (`print`; `why`: why it was redone, for the summary), and
/// takes the stage's step after the commit.
fn work_and_commit(
    stage: &dyn Stage,
    ctx: &RunContext,
    print: Fingerprint,
    why: Option<String>,
) -> Result<StageOutcome> {
    // A line per stage as it starts its work (timestamped; on a terminal
    // as well as in a cron log), so that a long stage is never silent from
    // its start; a stage skipped above starts nothing and says nothing.
    crate::core::progress::note(&format!("stage {}: started", stage.name()));
    let folder = StageFolder {
        scratch: fresh_scratch(&ctx.release_dir, stage.name())?,
        committed: ctx.stage_dir(stage.name()),
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
        run: stage
            .records_invocation()
            .then(|| {
                ctx.invocation
                    .as_ref()
                    .map(crate::pipeline::manifest::RunAsked::of)
            })
            .flatten(),
        outputs: output_hashes(&folder.scratch)?,
    };
    commit_stage_dir(&folder.scratch, &folder.committed, &manifest)?;
    stage.after_commit(ctx, &folder.committed)?;
    Ok(StageOutcome {
        skipped: false,
        seconds,
        counts,
        why,
    })
}

/// Checks that every stage of a finished release in `stages` would be
/// kept as it is: committed, its outputs intact, its fingerprint unchanged
/// (the engine's path may differ between machines, its build and options
/// may not); else the run stops (exit 2) naming `--rewrite-release`.
pub(crate) fn check_kept<'a>(
    ctx: &RunContext,
    stages: impl IntoIterator<Item = &'a Box<dyn Stage>>,
) -> Result<()> {
    for stage in stages {
        let name = stage.name();
        let dir = ctx.stage_dir(name);
        let Some(previous) = StageManifest::previous(&dir) else {
            return Err(kept_error(
                ctx,
                &format!("it would now come out differently (it has no {name} stage)"),
            ));
        };
        let now = || fingerprint(stage.as_ref(), ctx).with_context(|| format!("stage {name}"));
        // The engine may lie elsewhere on this machine; its build and
        // options decide.
        let why = match previous.standing(&dir, now, EnginePath::Ignored)? {
            Standing::Damaged(files) => {
                let damaged: Vec<String> = files
                    .iter()
                    .map(|file| dir.join(file).display().to_string())
                    .collect();
                Some(format!(
                    "its files no longer match its manifest: {}",
                    damaged.join(", ")
                ))
            }
            Standing::Current => None,
            Standing::OtherAlgorithm(_) if ctx.keep_stored_work => None,
            Standing::OtherAlgorithm(print) | Standing::Changed(print) => Some(format!(
                "it would now come out differently ({name}: {})",
                fingerprint_changes(&previous.fingerprint, &print)
            )),
        };
        if let Some(why) = why {
            return Err(kept_error(ctx, &why));
        }
    }
    Ok(())
}

/// Under `[generate]`: the finished release's games came from the store
/// `key` names (checked before anything is played into another). A
/// finished release whose puzzles were not generated at all would come out
/// differently too: refused here, before the first game, not after a
/// minute of play when its release stage is checked.
fn check_kept_store(ctx: &RunContext, key: &str) -> Result<()> {
    let dir = ctx.stage_dir(StageName::Selfplay);
    let recorded = StageManifest::previous(&dir)
        .and_then(|previous| crate::generate::recorded_store(&previous.fingerprint.config));
    let Some(recorded) = recorded else {
        return Err(kept_error(
            ctx,
            &format!(
                "it would now come out differently (its puzzles were not generated, and \
                 [generate] is on: these settings generate into {key}); make a new release \
                 with `--release NEW`"
            ),
        ));
    };
    if recorded != key {
        // As JSON (quoted), as the message always named it.
        let recorded = Value::String(recorded);
        return Err(kept_error(
            ctx,
            &format!(
                "it would now come out differently (its games came from the store {recorded}, these settings generate into {key})"
            ),
        ));
    }
    Ok(())
}

fn kept_error(ctx: &RunContext, why: &str) -> anyhow::Error {
    bad_input(format!(
        "{} is a finished release and never changes, but {why}; nothing was written. Rerun with --rewrite-release to replace its puzzles",
        ctx.stage_dir(StageName::Release).display()
    ))
}

/// What differs between two fingerprints, for messages.
fn fingerprint_changes(before: &Fingerprint, now: &Fingerprint) -> String {
    let mut changes = Vec::new();
    let names: std::collections::BTreeSet<&String> =
        before.inputs.keys().chain(now.inputs.keys()).collect();
    for name in names {
        match (before.inputs.get(name), now.inputs.get(name)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(_), Some(_)) => changes.push(format!("input {name} changed")),
            (None, _) => changes.push(format!("new input {name}")),
            (_, None) => changes.push(format!("input {name} is gone")),
        }
    }
    if before.config != now.config {
        changes.push("its settings changed".to_string());
    }
    let build = |print: &Fingerprint| {
        print
            .engine
            .as_ref()
            .map(|e| (e.sha256.clone(), e.options.clone()))
    };
    if build(before) != build(now) {
        changes.push("its engine changed".to_string());
    }
    if before.algorithm != now.algorithm {
        changes.push(format!(
            "recorded algorithm {}, this build {}",
            match before.algorithm.as_str() {
                "" => "none",
                other => other,
            },
            now.algorithm
        ));
    }
    if before.tool_version != now.tool_version {
        changes.push(format!(
            "puzzleforge {} wrote it, this is {}",
            before.tool_version, now.tool_version
        ));
    }
    if changes.is_empty() {
        changes.push("its fingerprint changed".to_string());
    }
    changes.join("; ")
}
